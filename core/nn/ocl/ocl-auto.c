/* sedp — the `streams = auto` controller (docs/opencl.md §5.3; ocl-auto.h). A window of
 * NN_AUTO_WINDOW_US measures the device's concurrency (runs in flight when a run starts, averaged);
 * a bucket other than the current one for two windows in a row is a shift, answered from the
 * table of counts chosen per bucket, or by exploring: each candidate in turn for a slot, rows per
 * second measured, the best kept for that bucket. */
#include "ocl-auto.h"

#include <math.h>

const guint nn_auto_candidates[NN_AUTO_N_CANDIDATES] = {1, 2, 3, 4, 6, 8};

typedef struct {
  guint streams;   /* 0: no entry */
  gint64 when_us;  /* when it was chosen */
} Entry;

struct _NnAuto {
  guint streams, bucket, changes;
  Entry table[NN_AUTO_N_BUCKETS];
  /* the concurrency window */
  gint64 window_start;
  guint64 conc_sum, window_runs;
  guint other_bucket, other_windows; /* a bucket seen instead of the current one, how often */
  /* exploration */
  gboolean exploring;
  guint explore_bucket, cand;
  gint64 slot_start;
  guint64 slot_rows, slot_runs;
  double rates[NN_AUTO_N_CANDIDATES];
};

guint
nn_auto_bucket (guint c)
{
  return c <= 1 ? 0 : c == 2 ? 1 : c <= 4 ? 2 : c <= 8 ? 3 : c <= 16 ? 4 : 5;
}

guint
nn_auto_choose (const double *rates)
{
  guint best = 0;
  for (guint k = 1; k < NN_AUTO_N_CANDIDATES; k++)
    if (rates[k] > rates[best])
      best = k;
  for (guint k = 0; k < best; k++) /* candidates are in increasing order */
    if (rates[k] >= 0 && rates[k] >= rates[best] * (1.0 - NN_AUTO_TIE))
      return k;
  return best;
}

NnAuto *
nn_auto_new (guint streams, guint concurrency)
{
  NnAuto *a = g_new0 (NnAuto, 1);
  a->streams = CLAMP (streams, 1, nn_auto_candidates[NN_AUTO_N_CANDIDATES - 1]);
  a->bucket = nn_auto_bucket (concurrency);
  a->window_start = -1;
  return a;
}

void
nn_auto_free (NnAuto *a)
{
  g_free (a);
}

static void
set_streams (NnAuto *a, guint streams)
{
  if (streams != a->streams)
    a->changes++;
  a->streams = streams;
}

guint
nn_auto_learn (NnAuto *a, guint concurrency, const double *rates, gint64 now_us)
{
  guint b = nn_auto_bucket (concurrency);
  a->table[b] = (Entry){nn_auto_candidates[nn_auto_choose (rates)], now_us};
  if (b == a->bucket && !a->exploring)
    set_streams (a, a->table[b].streams);
  return a->streams;
}

static void
start_slot (NnAuto *a, gint64 now_us)
{
  a->slot_start = now_us;
  a->slot_rows = a->slot_runs = 0;
  set_streams (a, nn_auto_candidates[a->cand]);
}

static void
explore (NnAuto *a, guint bucket, gint64 now_us)
{
  a->exploring = TRUE;
  a->explore_bucket = bucket;
  a->cand = 0;
  for (guint k = 0; k < NN_AUTO_N_CANDIDATES; k++)
    a->rates[k] = -1;
  start_slot (a, now_us);
}

/* A run finished during an exploration: ends the slot when it has lasted long enough. */
static void
explore_observe (NnAuto *a, gint64 now_us, guint64 rows)
{
  a->slot_rows += rows;
  a->slot_runs++;
  gint64 len = now_us - a->slot_start;
  if (!(len >= NN_AUTO_SLOT_US && a->slot_runs >= NN_AUTO_SLOT_RUNS) && len < NN_AUTO_SLOT_MAX_US)
    return;
  a->rates[a->cand] = (double) a->slot_rows * G_USEC_PER_SEC / (double) MAX (len, 1);
  if (++a->cand < NN_AUTO_N_CANDIDATES) {
    start_slot (a, now_us);
    return;
  }
  a->exploring = FALSE;
  a->bucket = a->explore_bucket;
  a->table[a->bucket] = (Entry){nn_auto_candidates[nn_auto_choose (a->rates)], now_us};
  set_streams (a, a->table[a->bucket].streams);
}

/* The bucket a closed window measured: a shift after two windows in a row away from the bucket
 * being served (one window away from the bucket being explored); an unknown or stale entry is
 * explored. */
static void
window_closed (NnAuto *a, guint seen, gint64 now_us)
{
  guint serving = a->exploring ? a->explore_bucket : a->bucket;
  if (seen == serving) {
    a->other_windows = 0;
    const Entry *e = &a->table[serving];
    if (!a->exploring && (e->streams == 0 || now_us - e->when_us > NN_AUTO_STALE_US))
      explore (a, serving, now_us); /* nothing known for this bucket yet, or stale */
    return;
  }
  a->other_windows = seen == a->other_bucket ? a->other_windows + 1 : 1;
  a->other_bucket = seen;
  if (a->other_windows < 2 && !a->exploring)
    return; /* an exploration's rates no longer hold after one window: no hysteresis */
  a->other_windows = 0;
  const Entry *e = &a->table[seen];
  if (e->streams && now_us - e->when_us <= NN_AUTO_STALE_US) {
    a->exploring = FALSE;
    a->bucket = seen;
    set_streams (a, e->streams);
  } else {
    explore (a, seen, now_us); /* restarts an exploration of another bucket */
  }
}

guint
nn_auto_observe (NnAuto *a, gint64 now_us, guint concurrency, guint64 rows)
{
  if (a->window_start < 0)
    a->window_start = now_us;
  a->conc_sum += concurrency;
  a->window_runs++;
  if (a->exploring)
    explore_observe (a, now_us, rows);
  if (now_us - a->window_start >= NN_AUTO_WINDOW_US) {
    double mean = (double) a->conc_sum / (double) MAX (a->window_runs, 1);
    a->window_start = now_us;
    a->conc_sum = a->window_runs = 0;
    window_closed (a, nn_auto_bucket ((guint) lround (mean)), now_us);
  }
  return a->streams;
}

guint
nn_auto_streams (const NnAuto *a)
{
  return a->streams;
}

guint
nn_auto_changes (const NnAuto *a)
{
  return a->changes;
}

guint
nn_auto_current_bucket (const NnAuto *a)
{
  return a->bucket;
}

gboolean
nn_auto_exploring (const NnAuto *a)
{
  return a->exploring;
}

guint
nn_auto_table (const NnAuto *a, guint bucket)
{
  return bucket < NN_AUTO_N_BUCKETS ? a->table[bucket].streams : 0;
}
