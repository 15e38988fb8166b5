/* sedp — the pruning DNN's training labels (see labels.h). */
#include "labels.h"

#include "../../plugins/shedder/shed-math.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  float score;
  guint index;
} Scored;

static int
scored_cmp (const void *a, const void *b)
{
  const Scored *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int
guint_cmp (const void *a, const void *b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;
  return x < y ? -1 : x > y;
}

void
sedp_shed_curve_init (SedpShedCurve *c, const float *escore, const float *score, guint n,
                      guint top_k)
{
  c->n = n;
  c->k = MIN (top_k, n);
  c->pos = g_new (guint, MAX (c->k, 1));
  g_autofree guint *order = g_new (guint, MAX (n, 1));
  g_autofree guint *rank_of = g_new (guint, MAX (n, 1));
  shed_order (escore, n, order);
  for (guint p = 0; p < n; p++)
    rank_of[order[p]] = p;
  g_autofree Scored *s = g_new (Scored, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    s[i] = (Scored) {isnan (score[i]) ? -INFINITY : score[i], i};
  qsort (s, n, sizeof *s, scored_cmp);
  for (guint j = 0; j < c->k; j++)
    c->pos[j] = rank_of[s[j].index];
  qsort (c->pos, c->k, sizeof (guint), guint_cmp);
}

void
sedp_shed_curve_clear (SedpShedCurve *c)
{
  g_clear_pointer (&c->pos, g_free);
}

double
sedp_shed_curve_recall (const SedpShedCurve *c, guint keep)
{
  if (c->k == 0)
    return 1.0;
  guint hits = 0;
  while (hits < c->k && c->pos[hits] < keep)
    hits++;
  return (double) hits / c->k;
}

guint
sedp_shed_curve_min_keep (const SedpShedCurve *c, double recall)
{
  guint need = (guint) ceil (CLAMP (recall, 0.0, 1.0) * c->k - 1e-9);
  return need == 0 ? 0 : c->pos[need - 1] + 1;
}

/* The count @c keeps at the price @lambda per candidate kept (in units of @n_ref candidates):
 * from the floor and the counts just past each top-K position, the one with the best recall
 * minus price (the smallest such count on a tie). */
static guint
priced_keep (const SedpShedCurve *c, double lambda, double n_ref, guint min_keep, double max_cutoff)
{
  guint floor = shed_keep_count (0.0, c->n, min_keep, max_cutoff);
  guint best_m = floor;
  double best = sedp_shed_curve_recall (c, floor) - lambda * floor / n_ref;
  for (guint j = 0; j < c->k; j++) {
    guint m = c->pos[j] + 1;
    double v = (double) (j + 1) / c->k - lambda * m / n_ref;
    if (m > floor && v > best + 1e-12) {
      best = v;
      best_m = m;
    }
  }
  return best_m;
}

static double
priced_share (const SedpShedCurve *c, double lambda, double n_ref, guint min_keep,
              double max_cutoff)
{
  return c->n ? (double) priced_keep (c, lambda, n_ref, min_keep, max_cutoff) / c->n : 1.0;
}

/* The share of all candidates kept at the price @lambda. */
static double
priced_mean (const SedpShedCurve *curves, guint n_curves, double lambda, double n_ref,
             guint min_keep, double max_cutoff)
{
  double kept = 0, all = 0;
  for (guint i = 0; i < n_curves; i++) {
    kept += curves[i].n ? priced_keep (&curves[i], lambda, n_ref, min_keep, max_cutoff) : 0;
    all += curves[i].n;
  }
  return all > 0 ? kept / all : 1.0;
}

/* Price high enough that every request keeps its floor. */
#define PRICE_MAX 1e9

void
sedp_shed_labels (const SedpShedCurve *curves, guint n_curves, double quota, guint min_keep,
                  double max_cutoff, double *labels)
{
  double n_ref = 0;
  for (guint i = 0; i < n_curves; i++)
    n_ref += (double) curves[i].n / n_curves;
  n_ref = MAX (n_ref, 1.0);
  /* The share kept falls as the price rises: bisect for the two prices around the quota
   * (price 0: the full recall of every request; above it "keep everything" mixes in). */
  double lo = 0, hi = PRICE_MAX;
  double s_lo = priced_mean (curves, n_curves, 0, n_ref, min_keep, max_cutoff);
  gboolean above = quota > s_lo;
  for (guint it = 0; it < 200 && !above && hi - lo > 1e-12; it++) {
    double mid = (lo + hi) / 2;
    if (priced_mean (curves, n_curves, mid, n_ref, min_keep, max_cutoff) >= quota)
      lo = mid;
    else
      hi = mid;
  }
  double m_lo = above ? 1.0 : priced_mean (curves, n_curves, lo, n_ref, min_keep, max_cutoff);
  double m_hi = above ? s_lo : priced_mean (curves, n_curves, hi, n_ref, min_keep, max_cutoff);
  double w = m_lo > m_hi ? CLAMP ((quota - m_hi) / (m_lo - m_hi), 0.0, 1.0) : 0.0;
  for (guint i = 0; i < n_curves; i++) {
    double a = above ? 1.0 : priced_share (&curves[i], lo, n_ref, min_keep, max_cutoff);
    double b = priced_share (&curves[i], above ? 0 : hi, n_ref, min_keep, max_cutoff);
    labels[i] = b + w * (a - b);
  }
}

void
sedp_shed_curve_pool (const SedpShedCurve *curves, const guint *members, guint n_members, guint n,
                      SedpShedCurve *out)
{
  out->n = n;
  out->k = 0;
  for (guint m = 0; m < n_members; m++)
    out->k += curves[members[m]].n ? curves[members[m]].k : 0;
  out->pos = g_new (guint, MAX (out->k, 1));
  guint k = 0;
  for (guint m = 0; m < n_members; m++) {
    const SedpShedCurve *c = &curves[members[m]];
    for (guint j = 0; c->n && j < c->k; j++) /* the same share of @n as of its own count */
      out->pos[k++] = (guint) MIN ((guint64) c->pos[j] * n / c->n, (guint64) MAX (n, 1) - 1);
  }
  qsort (out->pos, out->k, sizeof (guint), guint_cmp);
}
