/* sedp — the CMA-ES's front: creating the optimiser, the box and the integer coordinates, ask
 * and tell over the generation's candidates, the best so far. The two methods' sampling and
 * updates are in cmaes-population.c and cmaes-one.c. */
#include "cmaes-private.h"

#include <math.h>
#include <string.h>

/* The integer coordinates' floor on σ·√C_ii, in integer steps: with the mean on an integer, a
 * candidate rounds to a neighbour with probability 2·P(Z > 2) ≈ 4.6 %. */
#define INTEGER_MIN_STD 0.25

/* The box, the integer floors and the start, scaled by each coordinate's range. */
static void
init_space (SedpCmaes *es, const SedpCmaesOptions *opt)
{
  for (guint i = 0; i < opt->n; i++) {
    double lo = opt->lower[i], hi = opt->upper[i], range = hi - lo;
    double x0 = isnan (opt->x0[i]) ? lo + 0.5 * range : opt->x0[i];
    es->lower[i] = lo;
    es->upper[i] = hi;
    es->range[i] = range;
    es->lo[i] = lo / range;
    es->hi[i] = hi / range;
    es->integer[i] = opt->integer[i];
    es->min_std[i] = opt->integer[i] ? INTEGER_MIN_STD / range : 0;
    es->mean[i] = CLAMP (x0 / range, es->lo[i], es->hi[i]);
  }
}

/* @n_slots candidates, each with its draw and its real value. */
static void
init_slots (SedpCmaes *es, guint n_slots)
{
  es->n_slots = n_slots;
  es->slots = g_new0 (SedpCmaesCandidate, n_slots);
  es->slot_data = g_new0 (double, (gsize) n_slots * 2 * es->n);
  for (guint k = 0; k < n_slots; k++) {
    es->slots[k].x = es->slot_data + (gsize) k * 2 * es->n;
    es->slots[k].real = es->slots[k].x + es->n;
  }
}

SedpCmaes *
sedp_cmaes_new (const SedpCmaesOptions *opt, GError **error)
{
  g_return_val_if_fail (opt != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (!sedp_cmaes_check_options (opt, error))
    return NULL;
  SedpCmaes *es = g_new0 (SedpCmaes, 1);
  es->method = opt->method;
  es->n = opt->n;
  es->m = opt->n_constraints;
  es->mean = g_new0 (double, opt->n);
  init_space (es, opt);
  const guint32 words[2] = {(guint32) opt->seed, (guint32) (opt->seed >> 32)};
  es->rand = g_rand_new_with_seed_array (words, 2);
  es->sigma = opt->sigma0;
  if (es->method == SEDP_CMAES_POPULATION) {
    guint lambda = opt->lambda ? opt->lambda : 4 + (guint) floor (3 * log ((double) opt->n));
    sedp_cmaes_population_init (es, lambda);
    init_slots (es, lambda);
  } else {
    if (es->method == SEDP_CMAES_ONE_PLUS_ONE)
      sedp_cmaes_one_init (es);
    init_slots (es, 1);
  }
  return es;
}

void
sedp_cmaes_free (SedpCmaes *es)
{
  if (es == NULL)
    return;
  sedp_cmaes_population_free (es->pop);
  sedp_cmaes_one_free (es->one);
  g_rand_free (es->rand);
  g_free (es->mean);
  g_free (es->slots);
  g_free (es->slot_data);
  g_free (es);
}

double
sedp_cmaes_normal (SedpCmaes *es)
{
  if (es->has_spare) {
    es->has_spare = FALSE;
    return es->spare;
  }
  double u1 = 1.0 - g_rand_double (es->rand); /* (0, 1]: log is finite */
  double u2 = g_rand_double (es->rand);
  double r = sqrt (-2.0 * log (u1));
  es->spare = r * sin (2 * G_PI * u2);
  es->has_spare = TRUE;
  return r * cos (2 * G_PI * u2);
}

void
sedp_cmaes_bound_sigma (SedpCmaes *es)
{
  es->sigma = CLAMP (es->sigma, 1e-300, 1e3);
}

gboolean
sedp_cmaes_in_box (const SedpCmaes *es, const double *x)
{
  for (guint i = 0; i < es->n; i++)
    if (!(x[i] >= es->lo[i] && x[i] <= es->hi[i]))
      return FALSE;
  return TRUE;
}

void
sedp_cmaes_clip (const SedpCmaes *es, double *x)
{
  for (guint i = 0; i < es->n; i++)
    x[i] = CLAMP (x[i], es->lo[i], es->hi[i]);
}

/* The scaled draw @x in real units, within the bounds, integer coordinates rounded. */
static void
to_real (const SedpCmaes *es, const double *x, double *real)
{
  for (guint i = 0; i < es->n; i++) {
    double v = CLAMP (x[i] * es->range[i], es->lower[i], es->upper[i]);
    if (es->integer[i])
      v = CLAMP (round (v), ceil (es->lower[i]), floor (es->upper[i]));
    real[i] = v;
  }
}

gboolean
sedp_cmaes_ask (SedpCmaes *es, double *x)
{
  g_return_val_if_fail (es != NULL && x != NULL, FALSE);
  if (es->n_asked == es->n_slots)
    return FALSE;
  SedpCmaesCandidate *c = &es->slots[es->n_asked++];
  if (es->method == SEDP_CMAES_POPULATION)
    sedp_cmaes_population_sample (es, c->x);
  else if (es->method == SEDP_CMAES_ONE_PLUS_ONE)
    sedp_cmaes_one_sample (es, c->x);
  else
    for (guint i = 0; i < es->n; i++)
      c->x[i] = g_rand_double_range (es->rand, es->lo[i], es->hi[i]);
  to_real (es, c->x, c->real);
  c->asked = TRUE;
  memcpy (x, c->real, es->n * sizeof (double));
  return TRUE;
}

/* The first candidate asked and not yet told whose real values are @x, or NULL. */
static SedpCmaesCandidate *
find_asked (SedpCmaes *es, const double *x)
{
  for (guint k = 0; k < es->n_slots; k++) {
    SedpCmaesCandidate *c = &es->slots[k];
    guint i = 0;
    while (c->asked && !c->told && i < es->n && c->real[i] == x[i])
      i++;
    if (c->asked && !c->told && i == es->n)
      return c;
  }
  return NULL;
}

/* The sum of the m @violations (NULL: none), each of which must be ≥ 0; FALSE on a bad one. */
static gboolean
sum_violations (const SedpCmaes *es, const double *violations, double *total)
{
  *total = 0;
  for (guint j = 0; violations && j < es->m; j++) {
    if (!(violations[j] >= 0)) {
      g_critical ("sedp_cmaes_tell: violation %u is %g; violations must be 0 (the constraint "
                  "holds) or positive (by how much it fails)", j, violations[j]);
      return FALSE;
    }
    *total += violations[j];
  }
  return TRUE;
}

static void
record_best (SedpCmaes *es, const SedpCmaesCandidate *c)
{
  if (c->violation > 0 || !isfinite (c->f) || (es->has_best && c->f >= es->best_f))
    return;
  es->has_best = TRUE;
  es->best_f = c->f;
  memcpy (es->best_x, c->real, es->n * sizeof (double));
}

/* All candidates told: the next generation's slots are free. */
static void
next_generation (SedpCmaes *es)
{
  for (guint k = 0; k < es->n_slots; k++)
    es->slots[k].asked = es->slots[k].told = FALSE;
  es->n_asked = es->n_told = 0;
}

gboolean
sedp_cmaes_tell (SedpCmaes *es, const double *x, double f, const double *violations)
{
  g_return_val_if_fail (es != NULL && x != NULL, FALSE);
  SedpCmaesCandidate *c = find_asked (es, x);
  if (c == NULL) {
    g_critical ("sedp_cmaes_tell: the point told is not a candidate asked and not yet told; "
                "tell every candidate of sedp_cmaes_ask() once, with the values it returned");
    return FALSE;
  }
  double total;
  if (!sum_violations (es, violations, &total))
    return FALSE;
  c->told = TRUE;
  c->f = isnan (f) ? INFINITY : f;
  c->violation = total;
  es->n_told++;
  es->evaluations++;
  record_best (es, c);
  if (es->method == SEDP_CMAES_ONE_PLUS_ONE)
    sedp_cmaes_one_update (es, c, violations);
  else if (es->method == SEDP_CMAES_POPULATION && es->n_told == es->n_slots)
    sedp_cmaes_population_update (es);
  if (es->n_told == es->n_slots)
    next_generation (es);
  return TRUE;
}

gboolean
sedp_cmaes_best (const SedpCmaes *es, double *x, double *f)
{
  g_return_val_if_fail (es != NULL, FALSE);
  if (!es->has_best)
    return FALSE;
  if (x)
    memcpy (x, es->best_x, es->n * sizeof (double));
  if (f)
    *f = es->best_f;
  return TRUE;
}

double
sedp_cmaes_sigma (const SedpCmaes *es)
{
  g_return_val_if_fail (es != NULL, 0);
  return es->sigma;
}

guint64
sedp_cmaes_evaluations (const SedpCmaes *es)
{
  g_return_val_if_fail (es != NULL, 0);
  return es->evaluations;
}

/* The factor that lifts σ·√@cii to @min_std (1: already there). */
static double
floor_factor (const SedpCmaes *es, double cii, double min_std)
{
  double std = es->sigma * sqrt (cii);
  return std < min_std ? min_std / std : 1;
}

void
sedp_cmaes_floor_covariance (const SedpCmaes *es, double *C)
{
  guint n = es->n;
  for (guint i = 0; i < n; i++) {
    if (es->min_std[i] == 0 || C[i * n + i] <= 0)
      continue;
    double s = floor_factor (es, C[i * n + i], es->min_std[i]);
    for (guint k = 0; k < n; k++) {
      C[i * n + k] *= s;
      C[k * n + i] *= s;
    }
  }
}

void
sedp_cmaes_floor_factor (const SedpCmaes *es, double *A)
{
  guint n = es->n;
  for (guint i = 0; i < n; i++) {
    double cii = 0;
    for (guint k = 0; k < n; k++)
      cii += A[i * n + k] * A[i * n + k];
    if (es->min_std[i] == 0 || cii <= 0)
      continue;
    double s = floor_factor (es, cii, es->min_std[i]);
    for (guint k = 0; k < n; k++)
      A[i * n + k] *= s;
  }
}
