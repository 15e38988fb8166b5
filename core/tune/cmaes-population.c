/* sedp — the (μ/μ_w, λ)-CMA-ES with Hansen's default parameters (The CMA Evolution Strategy: A
 * Tutorial, 2016, negative weights included): sampling from N(m, σ²C) with C = B·diag(D)²·Bᵀ,
 * ranking by Deb's feasibility rules, recombination, the evolution paths, the step size and the
 * covariance update, then C's eigendecomposition. */
#include "cmaes-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The smallest eigenvalue kept, relative to the largest: C's condition number stays ≤ 1e20. */
#define MIN_EIGENVALUE 1e-20
/* The range of C's largest eigenvalue beyond which its scale is moved into σ. */
#define MAX_DRIFT 1e10

static void decompose (SedpCmaes *es);

/* The weights w_i (i = 1 … λ) from w'_i = ln((λ + 1)/2) − ln i: the first μ = ⌊λ/2⌋ sum to 1;
 * the negative ones sum to −min(α_μ⁻, α_μeff⁻, α_posdef⁻) (tutorial eq. 53). Needs c1, cmu. */
static void
set_weights (SedpCmaesPopulation *p, guint n, double mueff_minus)
{
  double pos = 0, neg = 0;
  for (guint i = 0; i < p->lambda; i++)
    if (p->w[i] >= 0)
      pos += p->w[i];
    else
      neg -= p->w[i];
  double alpha = 0;
  if (p->cmu > 0 && neg > 0)
    alpha = MIN (MIN (1 + p->c1 / p->cmu, 1 + 2 * mueff_minus / (p->mueff + 2)),
                 (1 - p->c1 - p->cmu) / (n * p->cmu));
  p->wsum = 0;
  for (guint i = 0; i < p->lambda; i++) {
    p->w[i] = p->w[i] >= 0 ? p->w[i] / pos : alpha * p->w[i] / neg;
    p->wsum += p->w[i];
  }
}

/* μ_eff of the w' over [@from, @to): (Σ w')² / Σ w'²; 0 for none. */
static double
variance_effective (const double *w, guint from, guint to)
{
  double s = 0, s2 = 0;
  for (guint i = from; i < to; i++) {
    s += w[i];
    s2 += w[i] * w[i];
  }
  return s2 > 0 ? s * s / s2 : 0;
}

/* Hansen's defaults for dimension @n and population λ (tutorial, eqs. 48–56). */
static void
set_constants (SedpCmaesPopulation *p, guint n)
{
  double dn = n;
  for (guint i = 0; i < p->lambda; i++)
    p->w[i] = log ((p->lambda + 1) / 2.0) - log (i + 1.0);
  p->mueff = variance_effective (p->w, 0, p->mu);
  double mueff_minus = variance_effective (p->w, p->mu, p->lambda);
  p->cs = (p->mueff + 2) / (dn + p->mueff + 5);
  p->ds = 1 + 2 * MAX (0, sqrt ((p->mueff - 1) / (dn + 1)) - 1) + p->cs;
  p->cc = (4 + p->mueff / dn) / (dn + 4 + 2 * p->mueff / dn);
  p->c1 = 2 / ((dn + 1.3) * (dn + 1.3) + p->mueff);
  p->cmu = MIN (1 - p->c1 - 1e-8,
                2 * (p->mueff - 2 + 1 / p->mueff) / ((dn + 2) * (dn + 2) + p->mueff));
  p->chi_n = sqrt (dn) * (1 - 1 / (4 * dn) + 1 / (21 * dn * dn));
  set_weights (p, n, mueff_minus);
}

void
sedp_cmaes_population_init (SedpCmaes *es, guint lambda)
{
  guint n = es->n;
  SedpCmaesPopulation *p = es->pop = g_new0 (SedpCmaesPopulation, 1);
  p->lambda = lambda;
  p->mu = lambda / 2;
  p->w = g_new0 (double, lambda);
  set_constants (p, n);
  p->C = g_new0 (double, (gsize) n * n);
  p->B = g_new0 (double, (gsize) n * n);
  p->work = g_new0 (double, (gsize) n * n);
  p->D = g_new0 (double, n);
  p->ps = g_new0 (double, n);
  p->pc = g_new0 (double, n);
  p->y = g_new0 (double, (gsize) lambda * n);
  p->t = g_new0 (double, n);
  p->u = g_new0 (double, n);
  for (guint i = 0; i < n; i++)
    p->C[i * n + i] = 1;
  decompose (es);
}

void
sedp_cmaes_population_free (SedpCmaesPopulation *p)
{
  if (p == NULL)
    return;
  g_free (p->w);
  g_free (p->C);
  g_free (p->B);
  g_free (p->work);
  g_free (p->D);
  g_free (p->ps);
  g_free (p->pc);
  g_free (p->y);
  g_free (p->t);
  g_free (p->u);
  g_free (p);
}

/* One draw of N(m, σ²C): x = m + σ·B·(D ∘ z). */
static void
draw (SedpCmaes *es, double *x)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  for (guint i = 0; i < n; i++)
    p->u[i] = p->D[i] * sedp_cmaes_normal (es);
  for (guint i = 0; i < n; i++) {
    double s = 0;
    for (guint k = 0; k < n; k++)
      s += p->B[i * n + k] * p->u[k];
    x[i] = es->mean[i] + es->sigma * s;
  }
}

void
sedp_cmaes_population_sample (SedpCmaes *es, double *x)
{
  for (guint tries = 0;; tries++) {
    draw (es, x);
    if (sedp_cmaes_in_box (es, x))
      return;
    if (tries == SEDP_CMAES_RESAMPLINGS) {
      sedp_cmaes_clip (es, x);
      return;
    }
  }
}

/* C^(−1/2)·@v = B·D⁻¹·Bᵀ·@v into @out (≠ @v). */
static void
inv_sqrt_times (const SedpCmaes *es, const double *v, double *out)
{
  const SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  for (guint k = 0; k < n; k++) {
    double s = 0;
    for (guint i = 0; i < n; i++)
      s += p->B[i * n + k] * v[i];
    p->u[k] = s / p->D[k];
  }
  for (guint i = 0; i < n; i++) {
    double s = 0;
    for (guint k = 0; k < n; k++)
      s += p->B[i * n + k] * p->u[k];
    out[i] = s;
  }
}

/* A candidate's place in the ranking: feasible ones first by f, then the others by their
 * violation; ties keep the order of asking. */
typedef struct {
  double f, violation;
  guint k;
} Rank;

static int
compare_ranks (const void *pa, const void *pb)
{
  const Rank *a = pa, *b = pb;
  gboolean fa = a->violation == 0, fb = b->violation == 0;
  if (fa != fb)
    return fa ? -1 : 1;
  double ka = fa ? a->f : a->violation, kb = fb ? b->f : b->violation;
  if (ka != kb)
    return ka < kb ? -1 : 1;
  return a->k < b->k ? -1 : (a->k > b->k);
}

/* The steps y_i = (x_i − m)/σ into p->y in rank order; their weighted sum y_w into p->t; the
 * mean moved by σ·y_w. */
static void
recombine (SedpCmaes *es)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n, lambda = p->lambda;
  Rank *rank = g_new (Rank, lambda);
  for (guint k = 0; k < lambda; k++)
    rank[k] = (Rank) {es->slots[k].f, es->slots[k].violation, k};
  qsort (rank, lambda, sizeof (Rank), compare_ranks);
  memset (p->t, 0, n * sizeof (double));
  for (guint r = 0; r < lambda; r++) {
    const double *x = es->slots[rank[r].k].x;
    double *y = p->y + (gsize) r * n;
    for (guint i = 0; i < n; i++) {
      y[i] = (x[i] - es->mean[i]) / es->sigma;
      if (r < p->mu)
        p->t[i] += p->w[r] * y[i];
    }
  }
  g_free (rank);
  for (guint i = 0; i < n; i++)
    es->mean[i] += es->sigma * p->t[i];
}

/* The conjugate path p_σ and the step size (eqs. 43–44); returns h_σ, whether p_σ is short
 * enough for p_c to take the step in full. */
static gboolean
adapt_step (SedpCmaes *es, double *scratch)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  inv_sqrt_times (es, p->t, scratch);
  double a = sqrt (p->cs * (2 - p->cs) * p->mueff), norm = 0;
  for (guint i = 0; i < n; i++) {
    p->ps[i] = (1 - p->cs) * p->ps[i] + a * scratch[i];
    norm += p->ps[i] * p->ps[i];
  }
  norm = sqrt (norm);
  es->sigma *= exp ((p->cs / p->ds) * (norm / p->chi_n - 1));
  double fade = 1 - pow (1 - p->cs, 2.0 * (double) (p->generation + 1));
  return norm / sqrt (fade) < (1.4 + 2 / (n + 1.0)) * p->chi_n;
}

/* The weight of rank @r in the rank-μ update: w_r, or for a negative one w_r·n/‖C^(−1/2)·y_r‖². */
static double
rank_mu_weight (const SedpCmaes *es, guint r, double *scratch)
{
  const SedpCmaesPopulation *p = es->pop;
  if (p->w[r] >= 0)
    return p->w[r];
  inv_sqrt_times (es, p->y + (gsize) r * es->n, scratch);
  double norm2 = 0;
  for (guint i = 0; i < es->n; i++)
    norm2 += scratch[i] * scratch[i];
  return p->w[r] * es->n / MAX (norm2, 1e-300);
}

/* p_c and C (eqs. 45–47): C ← (1 + c1·δ(h_σ) − c1 − cμ·Σw)·C + c1·p_c·p_cᵀ + cμ·Σ w°_r·y_r·y_rᵀ. */
static void
adapt_covariance (SedpCmaes *es, gboolean hsig, double *scratch)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  double a = hsig ? sqrt (p->cc * (2 - p->cc) * p->mueff) : 0;
  for (guint i = 0; i < n; i++)
    p->pc[i] = (1 - p->cc) * p->pc[i] + a * p->t[i];
  double delta = hsig ? 0 : p->cc * (2 - p->cc);
  double keep = 1 + p->c1 * delta - p->c1 - p->cmu * p->wsum;
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < n; k++)
      p->C[i * n + k] = keep * p->C[i * n + k] + p->c1 * p->pc[i] * p->pc[k];
  for (guint r = 0; r < p->lambda; r++) {
    double w = p->cmu * rank_mu_weight (es, r, scratch);
    const double *y = p->y + (gsize) r * n;
    for (guint i = 0; i < n && w != 0; i++)
      for (guint k = 0; k < n; k++)
        p->C[i * n + k] += w * y[i] * y[k];
  }
}

/* Only σ²·C is sampled, and a flat or exhausted objective lets σ and C drift apart, one to 0
 * and the other to ∞: when C's largest eigenvalue @top leaves [1/MAX_DRIFT, MAX_DRIFT], its
 * scale moves into σ (C, D and p_c rescaled to match; the distribution is unchanged). */
static void
rebalance (SedpCmaes *es, double top)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  if (top >= 1 / MAX_DRIFT && top <= MAX_DRIFT)
    return;
  double s = sqrt (top);
  es->sigma *= s;
  for (guint i = 0; i < n; i++) {
    p->D[i] /= s;
    p->pc[i] /= s;
    for (guint k = 0; k < n; k++)
      p->C[i * n + k] /= top;
  }
}

/* D = √eigenvalues, the smallest raised to MIN_EIGENVALUE of the largest, and C rebuilt as
 * B·diag(D)²·Bᵀ when one was. Returns the largest eigenvalue. */
static double
bound_eigenvalues (SedpCmaesPopulation *p, guint n)
{
  double top = 0;
  for (guint i = 0; i < n; i++)
    top = MAX (top, p->D[i]);
  gboolean raised = FALSE;
  for (guint i = 0; i < n; i++) {
    raised |= !(p->D[i] >= MIN_EIGENVALUE * top);
    p->D[i] = sqrt (MAX (p->D[i], MIN_EIGENVALUE * top));
  }
  for (guint i = 0; i < n && raised; i++)
    for (guint k = 0; k < n; k++) {
      double s = 0;
      for (guint j = 0; j < n; j++)
        s += p->B[i * n + j] * p->D[j] * p->D[j] * p->B[k * n + j];
      p->C[i * n + k] = s;
    }
  return top;
}

/* C made exactly symmetric and floored, then B and D from its eigendecomposition, then C's
 * scale rebalanced with σ. */
static void
decompose (SedpCmaes *es)
{
  SedpCmaesPopulation *p = es->pop;
  guint n = es->n;
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < i; k++)
      p->C[i * n + k] = p->C[k * n + i] = 0.5 * (p->C[i * n + k] + p->C[k * n + i]);
  sedp_cmaes_floor_covariance (es, p->C);
  memcpy (p->work, p->C, (gsize) n * n * sizeof (double));
  sedp_cmaes_jacobi (p->work, n, p->D, p->B);
  rebalance (es, bound_eigenvalues (p, n));
}

void
sedp_cmaes_population_update (SedpCmaes *es)
{
  SedpCmaesPopulation *p = es->pop;
  g_autofree double *scratch = g_new (double, es->n);
  recombine (es);
  gboolean hsig = adapt_step (es, scratch);
  adapt_covariance (es, hsig, scratch);
  decompose (es);
  sedp_cmaes_bound_sigma (es);
  p->generation++;
}
