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

/* Level @j of @c as a keep share: recall target j / top_k (j > top_k: everything), with the
 * floors. */
static double
level_share (const SedpShedCurve *c, guint j, guint top_k, guint min_keep, double max_cutoff)
{
  if (c->n == 0 || j > top_k)
    return 1.0;
  guint keep = sedp_shed_curve_min_keep (c, (double) j / top_k);
  keep = MAX (keep, shed_keep_count (0.0, c->n, min_keep, max_cutoff));
  return (double) MIN (keep, c->n) / c->n;
}

static double
level_mean (const SedpShedCurve *curves, guint n_curves, guint j, guint top_k, guint min_keep,
            double max_cutoff)
{
  double sum = 0;
  for (guint i = 0; i < n_curves; i++)
    sum += level_share (&curves[i], j, top_k, min_keep, max_cutoff);
  return n_curves ? sum / n_curves : 1.0;
}

void
sedp_shed_labels (const SedpShedCurve *curves, guint n_curves, double quota, guint min_keep,
                  double max_cutoff, double *labels)
{
  guint top_k = 1;
  for (guint i = 0; i < n_curves; i++)
    top_k = MAX (top_k, curves[i].k);
  /* Levels 0 … top_k + 1 (the last keeps everything); find the two that bracket the quota. */
  guint j = 0;
  double lo = level_mean (curves, n_curves, 0, top_k, min_keep, max_cutoff), hi = lo;
  while (j <= top_k && (hi = level_mean (curves, n_curves, j + 1, top_k, min_keep, max_cutoff)) < quota) {
    j++;
    lo = hi;
  }
  double w = quota <= lo ? 0.0 : hi > lo ? MIN (1.0, (quota - lo) / (hi - lo)) : 1.0;
  for (guint i = 0; i < n_curves; i++) {
    double a = level_share (&curves[i], j, top_k, min_keep, max_cutoff);
    double b = level_share (&curves[i], j + 1, top_k, min_keep, max_cutoff);
    labels[i] = a + w * (b - a);
  }
}
