/* sedp — a sliding window of latencies, for load signals read on the hot path. */
#pragma once

#include <glib.h>

/**
 * SedpLatencyWindow:
 * The latencies observed over the last @n_slices slices of @slice_us each (e.g. 20 × 100 ms),
 * each slice a histogram of log-linear buckets: 8 per power of two from 1 µs to 2^30 µs (about
 * 18 minutes; larger values count in the last bucket), so a quantile is exact to 1/8 of its
 * octave (12.5 %). Observing and reading take no lock: counts are atomic adds to the slice of
 * the moment; the first observer of a new slice empties it (observations that race with that
 * are dropped, a few at most). A reading is a sum over the live slices, not a consistent cut:
 * what a control signal needs. Thread-safe, all functions.
 */
typedef struct _SedpLatencyWindow SedpLatencyWindow;

/* @n_slices from 1 to 600, @slice_us at least 1000. Free with sedp_latency_window_free(). */
SedpLatencyWindow *sedp_latency_window_new (guint n_slices, gint64 slice_us);
void sedp_latency_window_free (SedpLatencyWindow *w);

/* Counts one latency of @value_us (negative counts as 0) at time @now_us
 * (g_get_monotonic_time()'s clock). */
void sedp_latency_window_observe (SedpLatencyWindow *w, gint64 value_us, gint64 now_us);

/* Counts @n observations of @value_us at once (e.g. the items of a request). */
void sedp_latency_window_observe_n (SedpLatencyWindow *w, gint64 value_us, guint n, gint64 now_us);

/* The value at quantile @q (0..1) of what was observed in the window ending at @now_us: the
 * upper bound of the bucket holding it. 0 when nothing was observed; *@count (optional) gets
 * the number of observations in the window. */
double sedp_latency_window_quantile (SedpLatencyWindow *w, double q, gint64 now_us, guint64 *count);

/* sedp_latency_window_quantile() over the last @span slices only (1 to the window's count): a
 * signal that forgets a spike sooner. */
double sedp_latency_window_quantile_span (SedpLatencyWindow *w, double q, gint64 now_us,
                                          guint span, guint64 *count);

/* The number of observations in the window ending at @now_us (a rate, over the window's span). */
guint64 sedp_latency_window_count (SedpLatencyWindow *w, gint64 now_us);
