/* shedder — the arithmetic of load shedding (see shed-math.h). */
#include "shed-math.h"

#include <math.h>
#include <stdlib.h>

void
shed_escore_stats (const float *escore, guint n, ShedEscoreStats *out)
{
  *out = (ShedEscoreStats) {0};
  double sum = 0, sum2 = 0;
  for (guint i = 0; escore && i < n; i++) {
    double v = escore[i];
    if (!isfinite (v))
      continue;
    out->max = out->n_finite ? MAX (out->max, v) : v;
    out->min = out->n_finite ? MIN (out->min, v) : v;
    sum += v;
    sum2 += v * v;
    out->n_finite++;
  }
  if (out->n_finite == 0)
    return;
  out->mean = sum / out->n_finite;
  out->var = MAX (0.0, sum2 / out->n_finite - out->mean * out->mean);
}

void
shed_features (const ShedContext *ctx, const ShedEscoreStats *stats, guint n, float *out)
{
  out[SHED_F_QUOTA] = (float) CLAMP (ctx->quota, 0.0, 1.0);
  out[SHED_F_PREV_CUTOFF] = (float) CLAMP (ctx->prev_cutoff, 0.0, 1.0);
  out[SHED_F_QUEUE] = (float) ctx->queue;
  out[SHED_F_ESCORE_MEAN] = (float) stats->mean;
  out[SHED_F_ESCORE_VAR] = (float) stats->var;
  out[SHED_F_ESCORE_MAX] = (float) stats->max;
  out[SHED_F_ESCORE_MIN] = (float) stats->min;
  out[SHED_F_COUNT] = (float) (log2 ((double) n + 1) / 16);
  out[SHED_F_BUDGET] = (float) ctx->budget_s;
}

typedef struct {
  float key;  /* the escore; -inf for a non-finite one (ordered among themselves by index) */
  guint index;
} Keyed;

static int
keyed_cmp (const void *a, const void *b)
{
  const Keyed *x = a, *y = b;
  if (x->key != y->key)
    return x->key > y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

guint
shed_order (const float *escore, guint n, guint *order)
{
  if (escore == NULL) {
    for (guint i = 0; i < n; i++)
      order[i] = i;
    return 0;
  }
  Keyed *k = g_new (Keyed, MAX (n, 1));
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    gboolean finite = isfinite (escore[i]);
    bad += !finite;
    k[i] = (Keyed) {finite ? escore[i] : -INFINITY, i};
  }
  qsort (k, n, sizeof *k, keyed_cmp);
  for (guint i = 0; i < n; i++)
    order[i] = k[i].index;
  g_free (k);
  return bad;
}

guint
shed_keep_count (double keep, guint n, guint min_keep, double max_cutoff)
{
  keep = isnan (keep) ? 1.0 : CLAMP (keep, 0.0, 1.0);
  double floor_share = 1.0 - CLAMP (max_cutoff, 0.0, 1.0);
  /* A fraction from a float32 model is exact to about 1e-7: 0.3f × 10 is 3, not 4. */
  double slack = 1e-6 * n;
  guint k = (guint) ceil (keep * n - slack);
  k = MAX (k, (guint) ceil (floor_share * n - slack));
  k = MAX (k, min_keep);
  return MIN (k, n);
}

double
shed_fit_share (double in_flight, double rate, guint n, double elapsed_us, double target_us)
{
  if (!(rate > 0) || n == 0)
    return 1.0;
  double left_s = (target_us - elapsed_us) / 1e6;
  double ahead = MAX (0.0, in_flight - n);
  double share = (rate * left_s - ahead) / n;
  return isnan (share) ? 1.0 : CLAMP (share, 0.0, 1.0);
}

/* The backlog the control policy lets build, over the target. */
#define CONTROL_BACKLOG 0.5

double
shed_control_share (double drain_s, double target_s, double service_rate, double offered_rate)
{
  if (!(service_rate > 0 && offered_rate > 0 && target_s > 0))
    return 1.0;
  double share = service_rate / offered_rate * (1.0 - (drain_s - CONTROL_BACKLOG * target_s) / target_s);
  return isnan (share) ? 1.0 : CLAMP (share, 0.0, 1.0);
}

/* The candidates the requests of @b keep with their model keeps scaled by @r. */
static double
balance_kept (const ShedBalance *b, double r)
{
  double kept = 0;
  for (guint i = 0; i < b->count; i++)
    kept += b->request[i].n * CLAMP (b->request[i].model * r, b->request[i].floor, 1.0);
  return kept;
}

/* The scale of the model keeps of @b that keeps @allowed candidates (bisection: the kept
 * candidates grow with the scale, from every request at its floor to every one whole). */
static double
balance_scale (const ShedBalance *b, double allowed)
{
  double hi = 1.0;
  for (guint i = 0; i < b->count; i++)
    if (b->request[i].model > 0)
      hi = MAX (hi, 1.0 / b->request[i].model);
  double lo = 0;
  for (guint step = 0; step < 40; step++) {
    double mid = 0.5 * (lo + hi);
    if (balance_kept (b, mid) < allowed)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

double
shed_balance_keep (ShedBalance *b, double quota, double model_keep, guint n, double floor)
{
  if (quota >= 1.0)
    return 1.0;
  floor = CLAMP (floor, 0.0, 1.0);
  model_keep = isnan (model_keep) ? floor : CLAMP (model_keep, 0.0, 1.0);
  b->request[b->next].n = n;
  b->request[b->next].model = model_keep;
  b->request[b->next].floor = floor;
  b->request[b->next].allowed = MAX (CLAMP (quota, 0.0, 1.0), floor);
  b->next = (b->next + 1) % SHED_BALANCE_REQUESTS;
  b->count = MIN (b->count + 1, SHED_BALANCE_REQUESTS);
  double allowed = 0;
  for (guint i = 0; i < b->count; i++)
    allowed += b->request[i].n * b->request[i].allowed;
  return CLAMP (model_keep * balance_scale (b, allowed), floor, 1.0);
}

double
shed_floor_share (guint n, guint min_keep, double max_cutoff)
{
  return n ? (double) shed_keep_count (0.0, n, min_keep, max_cutoff) / n : 1.0;
}

double
shed_balance_level (const ShedBalance *b, double quota, guint n, double floor)
{
  double allowed = (double) n * MAX (CLAMP (quota, 0.0, 1.0), CLAMP (floor, 0.0, 1.0));
  double total = n;
  for (guint i = 0; i < b->count; i++) {
    if (b->count == SHED_BALANCE_REQUESTS && i == b->next)
      continue; /* the oldest: this request takes its place */
    allowed += b->request[i].n * b->request[i].allowed;
    total += b->request[i].n;
  }
  return total > 0 ? allowed / total : quota;
}

void
shed_window_add (ShedWindow *w, gint64 now_us, gint64 slice_us, double value)
{
  gint64 id = now_us / slice_us + 1;
  guint i = (guint) (id % SHED_WINDOW_SLICES);
  if (w->slice[i] != id) {
    w->slice[i] = id;
    w->sum[i] = 0;
  }
  w->sum[i] += value;
}

double
shed_window_sum (const ShedWindow *w, gint64 now_us, gint64 slice_us)
{
  gint64 id = now_us / slice_us + 1;
  double total = 0;
  for (guint i = 0; i < SHED_WINDOW_SLICES; i++)
    if (w->slice[i] > id - SHED_WINDOW_SLICES && w->slice[i] <= id)
      total += w->sum[i];
  return total;
}
