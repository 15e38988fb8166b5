/* sedp — the (1+1)-CMA-ES for constrained optimisation (Arnold and Hansen, "A (1+1)-CMA-ES for
 * Constrained Optimisation", GECCO 2012): y = x + σ·A·z; a violated constraint j fades the step
 * into its vector v_j ← (1 − c_c)·v_j + c_c·A·z, and A shrinks along the violated v_j; a
 * feasible y replaces the parent when no worse, the step size following the success rule; A
 * learns from successes (rank one, through the path s) and from failures worse than the fifth
 * order ancestor (active, Arnold and Hansen 2010).
 *
 * The paper starts from a feasible parent. Here the first candidate is x0 itself, and while the
 * parent is infeasible a candidate succeeds when its total violation is no larger (Deb's rules);
 * the constraint vectors learn only once the parent is feasible. */
#include "cmaes-private.h"

#include <math.h>
#include <string.h>

void
sedp_cmaes_one_init (SedpCmaes *es)
{
  guint n = es->n;
  double dn = n;
  SedpCmaesOne *o = es->one = g_new0 (SedpCmaesOne, 1);
  o->d = 1 + dn / 2;
  o->c = 2 / (dn + 2);
  o->cc = 1 / (dn + 2);
  o->ccov_plus = 2 / (dn * dn + 6);
  o->ccov_minus = 0.4 / (pow (dn, 1.6) + 1);
  o->beta = 0.1 / (dn + 2);
  o->p_target = 2.0 / 11;
  o->A = g_new0 (double, (gsize) n * n);
  for (guint i = 0; i < n; i++)
    o->A[i * n + i] = 1;
  o->s = g_new0 (double, n);
  o->v = g_new0 (double, (gsize) MAX (es->m, 1) * n);
  o->z = g_new0 (double, n);
  o->step = g_new0 (double, n);
  o->lu = g_new0 (double, (gsize) n * n);
  o->work = g_new0 (double, (gsize) n * n);
  o->w = g_new0 (double, n);
  o->piv = g_new0 (guint, n);
  sedp_cmaes_floor_factor (es, o->A);
}

void
sedp_cmaes_one_free (SedpCmaesOne *o)
{
  if (o == NULL)
    return;
  g_free (o->A);
  g_free (o->s);
  g_free (o->v);
  g_free (o->z);
  g_free (o->step);
  g_free (o->lu);
  g_free (o->work);
  g_free (o->w);
  g_free (o->piv);
  g_free (o);
}

/* @out = A⁻¹·@b; FALSE (and @out untouched) when A is singular. */
static gboolean
solve (SedpCmaes *es, const double *b, double *out)
{
  SedpCmaesOne *o = es->one;
  if (!sedp_cmaes_lu (o->A, es->n, o->lu, o->piv))
    return FALSE;
  sedp_cmaes_lu_solve (o->lu, o->piv, es->n, b, out);
  return TRUE;
}

/* One draw: z ~ N(0, I), step = A·z, x = parent + σ·step. */
static void
draw (SedpCmaes *es, double *x)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n;
  for (guint i = 0; i < n; i++)
    o->z[i] = sedp_cmaes_normal (es);
  for (guint i = 0; i < n; i++) {
    double s = 0;
    for (guint k = 0; k < n; k++)
      s += o->A[i * n + k] * o->z[k];
    o->step[i] = s;
    x[i] = es->mean[i] + es->sigma * s;
  }
}

void
sedp_cmaes_one_sample (SedpCmaes *es, double *x)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n;
  if (!o->has_parent) {
    memcpy (x, es->mean, n * sizeof (double));
    memset (o->z, 0, n * sizeof (double));
    memset (o->step, 0, n * sizeof (double));
    return;
  }
  for (guint tries = 0;; tries++) {
    draw (es, x);
    if (sedp_cmaes_in_box (es, x))
      return;
    if (tries == SEDP_CMAES_RESAMPLINGS)
      break;
  }
  sedp_cmaes_clip (es, x);
  for (guint i = 0; i < n; i++)
    o->step[i] = (x[i] - es->mean[i]) / es->sigma;
  solve (es, o->step, o->z);
}

/* The candidate violated the constraints with @violations > 0 (the parent being feasible):
 * v_j ← (1 − c_c)·v_j + c_c·A·z for each, then A ← A − β/k·Σ_j v_j·w_jᵀ/(w_jᵀ·w_j) with
 * w_j = A⁻¹·v_j over the k violated ones. */
static void
constrain (SedpCmaes *es, const double *violations)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n, k = 0;
  gboolean solvable = sedp_cmaes_lu (o->A, n, o->lu, o->piv);
  memset (o->work, 0, (gsize) n * n * sizeof (double));
  for (guint j = 0; j < es->m; j++) {
    if (!(violations[j] > 0))
      continue;
    double *v = o->v + (gsize) j * n, ww = 0;
    for (guint i = 0; i < n; i++)
      v[i] = (1 - o->cc) * v[i] + o->cc * o->step[i];
    k++;
    if (!solvable)
      continue;
    sedp_cmaes_lu_solve (o->lu, o->piv, n, v, o->w);
    for (guint i = 0; i < n; i++)
      ww += o->w[i] * o->w[i];
    for (guint i = 0; i < n && ww > 0; i++)
      for (guint l = 0; l < n; l++)
        o->work[i * n + l] += v[i] * o->w[l] / ww;
  }
  for (guint i = 0; i < (gsize) n * n && k > 0; i++)
    o->A[i] -= o->beta / k * o->work[i];
}

/* A success: s ← (1 − c)·s + √(c(2 − c))·A·z, w = A⁻¹·s, and
 * A ← √(1 − c⁺)·A + √(1 − c⁺)/‖w‖²·(√(1 + c⁺‖w‖²/(1 − c⁺)) − 1)·s·wᵀ. */
static void
learn_success (SedpCmaes *es)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n;
  double cs = sqrt (o->c * (2 - o->c)), w2 = 0;
  for (guint i = 0; i < n; i++)
    o->s[i] = (1 - o->c) * o->s[i] + cs * o->step[i];
  if (!solve (es, o->s, o->w))
    return;
  for (guint i = 0; i < n; i++)
    w2 += o->w[i] * o->w[i];
  if (w2 == 0)
    return;
  double a = sqrt (1 - o->ccov_plus);
  double b = a / w2 * (sqrt (1 + o->ccov_plus * w2 / (1 - o->ccov_plus)) - 1);
  for (guint i = 0; i < n; i++)
    for (guint l = 0; l < n; l++)
      o->A[i * n + l] = a * o->A[i * n + l] + b * o->s[i] * o->w[l];
}

/* A bad failure: A ← √(1 + c⁻)·A + √(1 + c⁻)/‖z‖²·(√(1 − c⁻‖z‖²/(1 + c⁻)) − 1)·A·z·zᵀ, c⁻
 * lowered to 1/(2‖z‖² − 1) where it would exceed it (A stays non-singular). */
static void
learn_failure (SedpCmaes *es)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n;
  double z2 = 0;
  for (guint i = 0; i < n; i++)
    z2 += o->z[i] * o->z[i];
  if (z2 == 0)
    return;
  double cm = o->ccov_minus;
  if (cm * (2 * z2 - 1) > 1)
    cm = 1 / (2 * z2 - 1);
  double a = sqrt (1 + cm), b = a / z2 * (sqrt (1 - cm * z2 / (1 + cm)) - 1);
  for (guint i = 0; i < n; i++)
    for (guint l = 0; l < n; l++)
      o->A[i * n + l] = a * o->A[i * n + l] + b * o->step[i] * o->z[l];
}

/* The candidate @c becomes the parent; a feasible one's objective joins the ancestors. */
static void
accept (SedpCmaes *es, const SedpCmaesCandidate *c)
{
  SedpCmaesOne *o = es->one;
  memcpy (es->mean, c->x, es->n * sizeof (double));
  o->has_parent = TRUE;
  o->f_parent = c->f;
  o->violation_parent = c->violation;
  if (c->violation > 0)
    return;
  memmove (o->ancestors + 1, o->ancestors, 5 * sizeof (double));
  o->ancestors[0] = c->f;
  o->n_ancestors = MIN (o->n_ancestors + 1, 6);
}

/* Whether @c does at least as well as the parent: by f between feasible ones, by the total
 * violation while the parent is infeasible. */
static gboolean
succeeds (const SedpCmaesOne *o, const SedpCmaesCandidate *c)
{
  if (o->violation_parent > 0)
    return c->violation <= o->violation_parent;
  return c->violation == 0 && c->f <= o->f_parent;
}

/* As for the population's C (cmaes-population.c, rebalance()): when A·Aᵀ's mean diagonal
 * entry leaves [1e-10, 1e10], its scale moves into σ (A, s and the v_j rescaled to match). */
static void
rebalance (SedpCmaes *es)
{
  SedpCmaesOne *o = es->one;
  guint n = es->n;
  double mean = 0;
  for (guint i = 0; i < n * n; i++)
    mean += o->A[i] * o->A[i] / n;
  if (mean >= 1e-10 && mean <= 1e10)
    return;
  double s = sqrt (mean);
  es->sigma *= s;
  for (guint i = 0; i < n * n; i++)
    o->A[i] /= s;
  for (guint i = 0; i < n; i++)
    o->s[i] /= s;
  for (guint i = 0; i < es->m * n; i++)
    o->v[i] /= s;
}

void
sedp_cmaes_one_update (SedpCmaes *es, const SedpCmaesCandidate *c, const double *violations)
{
  SedpCmaesOne *o = es->one;
  if (!o->has_parent) {
    accept (es, c);
    return;
  }
  if (c->violation > 0 && o->violation_parent == 0) {
    constrain (es, violations);
  } else {
    gboolean success = succeeds (o, c);
    es->sigma *= exp ((success - o->p_target) / (o->d * (1 - o->p_target)));
    if (success) {
      learn_success (es);
      accept (es, c);
    } else if (o->n_ancestors == 6 && c->f > o->ancestors[5]) {
      learn_failure (es);
    }
  }
  rebalance (es);
  sedp_cmaes_bound_sigma (es);
  sedp_cmaes_floor_factor (es, o->A);
}
