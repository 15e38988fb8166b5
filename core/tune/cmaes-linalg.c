/* sedp — the CMA-ES's linear algebra, small and dense (n ≤ 64): the symmetric eigenproblem by
 * cyclic Jacobi rotations, and LU factors with partial pivoting to solve A·x = b. */
#include "cmaes-private.h"

#include <math.h>
#include <string.h>

#define JACOBI_MAX_SWEEPS 64

/* The sum of the squares of @a's entries above the diagonal, and of all of them. */
static void
off_diagonal (const double *a, guint n, double *off, double *all)
{
  *off = *all = 0;
  for (guint p = 0; p < n; p++)
    for (guint q = 0; q < n; q++) {
      double e = a[p * n + q] * a[p * n + q];
      *all += e;
      if (q > p)
        *off += e;
    }
}

/* a ← Jᵀ·a·J and v ← v·J for the rotation J in the plane (p, q) with J_pp = J_qq = c,
 * J_pq = s, J_qp = −s. */
static void
rotate (double *a, double *v, guint n, guint p, guint q, double c, double s)
{
  for (guint k = 0; k < n; k++) {
    double akp = a[k * n + p], akq = a[k * n + q];
    a[k * n + p] = c * akp - s * akq;
    a[k * n + q] = s * akp + c * akq;
    double vkp = v[k * n + p], vkq = v[k * n + q];
    v[k * n + p] = c * vkp - s * vkq;
    v[k * n + q] = s * vkp + c * vkq;
  }
  for (guint k = 0; k < n; k++) {
    double apk = a[p * n + k], aqk = a[q * n + k];
    a[p * n + k] = c * apk - s * aqk;
    a[q * n + k] = s * apk + c * aqk;
  }
}

/* Zeroes a_pq: tan φ = t, the smaller root of t² + 2θt − 1 = 0, θ = (a_qq − a_pp)/(2·a_pq). */
static void
annihilate (double *a, double *v, guint n, guint p, guint q)
{
  double apq = a[p * n + q];
  if (apq == 0)
    return;
  double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
  double t = 1.0 / (fabs (theta) + sqrt (theta * theta + 1));
  if (theta < 0)
    t = -t;
  double c = 1.0 / sqrt (t * t + 1);
  rotate (a, v, n, p, q, c, t * c);
  a[p * n + q] = a[q * n + p] = 0;
}

void
sedp_cmaes_jacobi (double *a, guint n, double *eval, double *evec)
{
  g_return_if_fail (a != NULL && eval != NULL && evec != NULL && n > 0);
  memset (evec, 0, (gsize) n * n * sizeof (double));
  for (guint i = 0; i < n; i++)
    evec[i * n + i] = 1;
  for (guint sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
    double off, all;
    off_diagonal (a, n, &off, &all);
    if (off <= 1e-30 * all || off == 0)
      break;
    for (guint p = 0; p + 1 < n; p++)
      for (guint q = p + 1; q < n; q++)
        annihilate (a, evec, n, p, q);
  }
  for (guint i = 0; i < n; i++)
    eval[i] = a[i * n + i];
}

/* Swaps rows @i and @j of the @n-wide @lu. */
static void
swap_rows (double *lu, guint n, guint i, guint j)
{
  for (guint k = 0; k < n; k++) {
    double t = lu[i * n + k];
    lu[i * n + k] = lu[j * n + k];
    lu[j * n + k] = t;
  }
}

gboolean
sedp_cmaes_lu (const double *a, guint n, double *lu, guint *piv)
{
  memcpy (lu, a, (gsize) n * n * sizeof (double));
  for (guint k = 0; k < n; k++) {
    guint best = k;
    for (guint i = k + 1; i < n; i++)
      if (fabs (lu[i * n + k]) > fabs (lu[best * n + k]))
        best = i;
    piv[k] = best;
    if (lu[best * n + k] == 0 || !isfinite (lu[best * n + k]))
      return FALSE;
    swap_rows (lu, n, k, best);
    for (guint i = k + 1; i < n; i++) {
      double l = lu[i * n + k] /= lu[k * n + k];
      for (guint j = k + 1; j < n; j++)
        lu[i * n + j] -= l * lu[k * n + j];
    }
  }
  return TRUE;
}

void
sedp_cmaes_lu_solve (const double *lu, const guint *piv, guint n, const double *b, double *x)
{
  memmove (x, b, n * sizeof (double));
  for (guint k = 0; k < n; k++) {
    double t = x[k];
    x[k] = x[piv[k]];
    x[piv[k]] = t;
  }
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < i; j++)
      x[i] -= lu[i * n + j] * x[j];
  for (guint i = n; i-- > 0;) {
    for (guint j = i + 1; j < n; j++)
      x[i] -= lu[i * n + j] * x[j];
    x[i] /= lu[i * n + i];
  }
}
