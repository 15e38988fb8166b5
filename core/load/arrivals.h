/* sedp — Poisson arrivals for the open-loop load generator: exponential inter-arrival times drawn
 * from a seeded GRand, so that a seed gives the same schedule on every run. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpArrivals:
 * The arrival times of a Poisson process of @rate per second starting at @start_us: each gap is
 * -ln(1 - U) / rate with U uniform in [0, 1) from a GRand seeded with @seed (mean 1/rate,
 * standard deviation 1/rate). Times are kept in fractions of a microsecond, so rounding does not
 * drift the rate. Not thread-safe: one owner.
 */
typedef struct _SedpArrivals SedpArrivals;

/* @rate > 0 arrivals per second; @start_us on g_get_monotonic_time()'s clock. Returns: (transfer
 * full): free with sedp_arrivals_free(). */
SEDP_API SedpArrivals *sedp_arrivals_new (double rate, guint64 seed, gint64 start_us);
SEDP_API void sedp_arrivals_free (SedpArrivals *arrivals);

/* One exponential gap of mean 1/rate, in seconds (≥ 0), drawn from the arrivals' GRand; it does
 * not move the schedule. */
SEDP_API double sedp_arrivals_draw_gap (SedpArrivals *arrivals);

/* The time of the next arrival (the previous one plus a drawn gap), in microseconds on the
 * clock of @start_us; never earlier than the previous one. */
SEDP_API gint64 sedp_arrivals_next (SedpArrivals *arrivals);

G_END_DECLS
