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

/* The share @c keeps at the price @lambda (per share kept): the keep count, from the floor and
 * the counts just past each top-K position, with the best recall minus price (the smallest
 * such count on a tie). */
static double
priced_share (const SedpShedCurve *c, double lambda, guint min_keep, double max_cutoff)
{
  if (c->n == 0)
    return 1.0;
  guint floor = shed_keep_count (0.0, c->n, min_keep, max_cutoff);
  guint best_m = floor;
  double best = sedp_shed_curve_recall (c, floor) - lambda * floor / c->n;
  for (guint j = 0; j < c->k; j++) {
    guint m = c->pos[j] + 1;
    double v = (double) (j + 1) / c->k - lambda * m / c->n;
    if (m > floor && v > best + 1e-12) {
      best = v;
      best_m = m;
    }
  }
  return (double) best_m / c->n;
}

static double
priced_mean (const SedpShedCurve *curves, guint n_curves, double lambda, guint min_keep,
             double max_cutoff)
{
  double sum = 0;
  for (guint i = 0; i < n_curves; i++)
    sum += priced_share (&curves[i], lambda, min_keep, max_cutoff);
  return n_curves ? sum / n_curves : 1.0;
}

/* Price high enough that every request keeps its floor. */
#define PRICE_MAX 1e9

void
sedp_shed_labels (const SedpShedCurve *curves, guint n_curves, double quota, guint min_keep,
                  double max_cutoff, double *labels)
{
  /* The mean share falls as the price rises: bisect for the two prices around the quota
   * (price 0: the full recall of every request; above it "keep everything" mixes in). */
  double lo = 0, hi = PRICE_MAX, s_lo = priced_mean (curves, n_curves, 0, min_keep, max_cutoff);
  gboolean above = quota > s_lo;
  for (guint it = 0; it < 200 && !above && hi - lo > 1e-12; it++) {
    double mid = (lo + hi) / 2;
    if (priced_mean (curves, n_curves, mid, min_keep, max_cutoff) >= quota)
      lo = mid;
    else
      hi = mid;
  }
  double m_lo = above ? 1.0 : priced_mean (curves, n_curves, lo, min_keep, max_cutoff);
  double m_hi = above ? s_lo : priced_mean (curves, n_curves, hi, min_keep, max_cutoff);
  double w = m_lo > m_hi ? CLAMP ((quota - m_hi) / (m_lo - m_hi), 0.0, 1.0) : 0.0;
  for (guint i = 0; i < n_curves; i++) {
    double a = above ? 1.0 : priced_share (&curves[i], lo, min_keep, max_cutoff);
    double b = priced_share (&curves[i], above ? 0 : hi, min_keep, max_cutoff);
    labels[i] = b + w * (a - b);
  }
}
