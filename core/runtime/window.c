/* sedp — a sliding window of latencies (window.h). */
#include "window.h"

#include <math.h>

#define SUB_BUCKETS 8 /* per power of two */
#define OCTAVES 30
#define N_BUCKETS (OCTAVES * SUB_BUCKETS + 1) /* + one for values below 1 µs */

typedef struct {
  gint64 epoch; /* the slice number (now / slice_us) its counts belong to; -1 while emptied */
  guint64 counts[N_BUCKETS];
} Slice;

struct _SedpLatencyWindow {
  guint n_slices;
  gint64 slice_us;
  Slice *slices;
};

SedpLatencyWindow *
sedp_latency_window_new (guint n_slices, gint64 slice_us)
{
  g_return_val_if_fail (n_slices >= 1 && n_slices <= 600 && slice_us >= 1000, NULL);
  SedpLatencyWindow *w = g_new0 (SedpLatencyWindow, 1);
  w->n_slices = n_slices;
  w->slice_us = slice_us;
  w->slices = g_new0 (Slice, n_slices);
  for (guint i = 0; i < n_slices; i++)
    w->slices[i].epoch = G_MININT64;
  return w;
}

void
sedp_latency_window_free (SedpLatencyWindow *w)
{
  if (w == NULL)
    return;
  g_free (w->slices);
  g_free (w);
}

/* Bucket 0: below 1 µs; then octave o (values in [2^o, 2^(o+1))) split into SUB_BUCKETS equal
 * parts. */
static guint
bucket_of (gint64 v)
{
  if (v < 1)
    return 0;
  int e;
  double m = frexp ((double) v, &e); /* v = m · 2^e, m in [0.5, 1) */
  int octave = e - 1;
  if (octave >= OCTAVES)
    return N_BUCKETS - 1;
  guint sub = (guint) ((2 * m - 1) * SUB_BUCKETS);
  return 1 + (guint) octave * SUB_BUCKETS + MIN (sub, SUB_BUCKETS - 1);
}

static double
bucket_upper (guint b)
{
  if (b == 0)
    return 1;
  guint octave = (b - 1) / SUB_BUCKETS, sub = (b - 1) % SUB_BUCKETS;
  return ldexp (1.0 + (double) (sub + 1) / SUB_BUCKETS, (int) octave);
}

/* The slice of @epoch, emptied first when it still holds an older one; NULL while another
 * thread empties it. */
static Slice *
slice_for (SedpLatencyWindow *w, gint64 epoch)
{
  Slice *s = &w->slices[epoch % w->n_slices];
  gint64 seen = __atomic_load_n (&s->epoch, __ATOMIC_ACQUIRE);
  if (seen == epoch)
    return s;
  if (seen > epoch || seen == -1 ||
      !__atomic_compare_exchange_n (&s->epoch, &seen, -1, FALSE, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return NULL;
  for (guint b = 0; b < N_BUCKETS; b++)
    __atomic_store_n (&s->counts[b], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&s->epoch, epoch, __ATOMIC_RELEASE);
  return s;
}

void
sedp_latency_window_observe (SedpLatencyWindow *w, gint64 value_us, gint64 now_us)
{
  sedp_latency_window_observe_n (w, value_us, 1, now_us);
}

void
sedp_latency_window_observe_n (SedpLatencyWindow *w, gint64 value_us, guint n, gint64 now_us)
{
  Slice *s = n ? slice_for (w, now_us / w->slice_us) : NULL;
  if (s)
    __atomic_fetch_add (&s->counts[bucket_of (value_us)], n, __ATOMIC_RELAXED);
}

/* Sums the live slices among the last @span of the window ending at @now_us into @sum
 * (N_BUCKETS); returns the total count. */
static guint64
window_sum (SedpLatencyWindow *w, gint64 now_us, guint span, guint64 *sum)
{
  gint64 epoch = now_us / w->slice_us;
  guint64 total = 0;
  span = CLAMP (span, 1, w->n_slices);
  for (guint i = 0; i < w->n_slices; i++) {
    Slice *s = &w->slices[i];
    gint64 e = __atomic_load_n (&s->epoch, __ATOMIC_ACQUIRE);
    if (e < 0 || e > epoch || e <= epoch - (gint64) span)
      continue;
    for (guint b = 0; b < N_BUCKETS; b++) {
      guint64 c = __atomic_load_n (&s->counts[b], __ATOMIC_RELAXED);
      sum[b] += c;
      total += c;
    }
  }
  return total;
}

guint64
sedp_latency_window_count (SedpLatencyWindow *w, gint64 now_us)
{
  guint64 sum[N_BUCKETS] = {0};
  return window_sum (w, now_us, w->n_slices, sum);
}

double
sedp_latency_window_quantile (SedpLatencyWindow *w, double q, gint64 now_us, guint64 *count)
{
  return sedp_latency_window_quantile_span (w, q, now_us, w->n_slices, count);
}

double
sedp_latency_window_quantile_span (SedpLatencyWindow *w, double q, gint64 now_us, guint span,
                                   guint64 *count)
{
  guint64 sum[N_BUCKETS] = {0};
  guint64 total = window_sum (w, now_us, span, sum);
  if (count)
    *count = total;
  if (total == 0)
    return 0;
  guint64 rank = (guint64) ceil (CLAMP (q, 0.0, 1.0) * (double) total);
  guint64 seen = 0;
  for (guint b = 0; b < N_BUCKETS; b++) {
    seen += sum[b];
    if (seen >= MAX (rank, 1))
      return bucket_upper (b);
  }
  return bucket_upper (N_BUCKETS - 1);
}
