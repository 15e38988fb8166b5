/* sedp tests — the optimiser of `sedp tune` (core/tune/cmaes.h): both methods converge on the
 * sphere, the population method on Rosenbrock's function, both on a linearly constrained
 * problem and on an integer one; a run is determined by its seed and not by the order of the
 * tells; bad options are refused with their error code; the eigen solver is checked; and the
 * population method holds its own against Debian's python3-cmaes (cmaes-reference.py) on the
 * same problems, budgets and seeds. */
#include "test-common.h"
#include "tune/cmaes-private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SEDP_TEST_PYTHON
#error "SEDP_TEST_PYTHON must be defined by the build"
#endif
#ifndef SEDP_TEST_CMAES_SCRIPT
#error "SEDP_TEST_CMAES_SCRIPT must be defined by the build"
#endif

typedef double (*Objective) (const double *x, guint n);

/* Σ x_i², the minimum 0 at the origin. */
static double
sphere (const double *x, guint n)
{
  double f = 0;
  for (guint i = 0; i < n; i++)
    f += x[i] * x[i];
  return f;
}

/* Σ 100·(x_{i+1} − x_i²)² + (1 − x_i)², the minimum 0 at (1, …, 1). */
static double
rosenbrock (const double *x, guint n)
{
  double f = 0;
  for (guint i = 0; i + 1 < n; i++)
    f += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  return f;
}

/* Σ (x_i − 3.3)², over the integers the minimum 4·0.09 at (3, …, 3). */
static double
near_three (const double *x, guint n)
{
  double f = 0;
  for (guint i = 0; i < n; i++)
    f += (x[i] - 3.3) * (x[i] - 3.3);
  return f;
}

/* Options for @n real coordinates in [@lo, @hi]. */
static SedpCmaesOptions
box (SedpCmaesMethod method, guint n, double lo, double hi, guint64 seed)
{
  SedpCmaesOptions opt;
  sedp_cmaes_options_init (&opt);
  opt.method = method;
  opt.n = n;
  opt.seed = seed;
  for (guint i = 0; i < n; i++) {
    opt.lower[i] = lo;
    opt.upper[i] = hi;
  }
  return opt;
}

/* What a run did: the evaluations it used and the best feasible point it found. */
typedef struct {
  guint64 evaluations;
  gboolean found;
  double best_f;
  double best_x[SEDP_CMAES_MAX_DIM];
} Outcome;

#define MAX_LAMBDA 64

/* One generation of @es on @f: every candidate asked, then each evaluated and told, with the
 * single constraint x_0 ≥ 1 when @constrained (its violation max(0, 1 − x_0)); stops early
 * once the best is below @target. */
static void
generation (SedpCmaes *es, guint n, Objective f, gboolean constrained, double target)
{
  double x[MAX_LAMBDA][SEDP_CMAES_MAX_DIM], best;
  guint k = 0;
  while (k < MAX_LAMBDA && sedp_cmaes_ask (es, x[k]))
    k++;
  for (guint j = 0; j < k; j++) {
    double violation = constrained ? MAX (0, 1 - x[j][0]) : 0;
    CU_ASSERT_TRUE_FATAL (sedp_cmaes_tell (es, x[j], f (x[j], n), constrained ? &violation : NULL));
    if (sedp_cmaes_best (es, NULL, &best) && best < target)
      return;
  }
}

/* Runs @opt on @f until the best is below @target or @budget evaluations are spent. */
static Outcome
run (const SedpCmaesOptions *opt, Objective f, gboolean constrained, double target,
     guint64 budget)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (opt, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (es);
  Outcome out = {0};
  while (sedp_cmaes_evaluations (es) < budget) {
    generation (es, opt->n, f, constrained, target);
    if (sedp_cmaes_best (es, NULL, &out.best_f) && out.best_f < target)
      break;
  }
  out.evaluations = sedp_cmaes_evaluations (es);
  out.found = sedp_cmaes_best (es, out.best_x, &out.best_f);
  return out;
}

static const char *
method_name (SedpCmaesMethod method)
{
  return method == SEDP_CMAES_POPULATION     ? "population"
         : method == SEDP_CMAES_ONE_PLUS_ONE ? "one-plus-one"
                                             : "random";
}

static void
report (const char *problem, const SedpCmaesOptions *opt, const Outcome *out)
{
  printf ("\nRESULT problem=%s method=%s evaluations=%" G_GUINT64_FORMAT " best=%.6e\n", problem,
          method_name (opt->method), out->evaluations, out->found ? out->best_f : NAN);
}

/* ---- convergence ---- */

/* The sphere, n = 5 in [−5, 5]⁵ from (2.5, …): below 1e-8 within 3000 evaluations. */
static void
test_sphere (void)
{
  for (int m = SEDP_CMAES_POPULATION; m <= SEDP_CMAES_ONE_PLUS_ONE; m++) {
    SedpCmaesOptions opt = box (m, 5, -5, 5, 1);
    for (guint i = 0; i < 5; i++)
      opt.x0[i] = 2.5;
    Outcome out = run (&opt, sphere, FALSE, 1e-8, 3000);
    report ("sphere", &opt, &out);
    CU_ASSERT (out.found && out.best_f < 1e-8 && out.evaluations <= 3000);
  }
}

/* Rosenbrock, n = 4 in [−5, 5]⁴ from the centre: below 1e-6 within 20000 evaluations, at
 * (1, …, 1) within 1e-2. */
static void
test_rosenbrock (void)
{
  SedpCmaesOptions opt = box (SEDP_CMAES_POPULATION, 4, -5, 5, 1);
  Outcome out = run (&opt, rosenbrock, FALSE, 1e-6, 20000);
  report ("rosenbrock", &opt, &out);
  CU_ASSERT_FATAL (out.found && out.best_f < 1e-6 && out.evaluations <= 20000);
  for (guint i = 0; i < 4; i++)
    CU_ASSERT_DOUBLE_EQUAL (out.best_x[i], 1.0, 1e-2);
}

/* Σ x_i² subject to x_0 ≥ 1, n = 5 in [−5, 5]⁵ from the infeasible centre: f = 1 at
 * (1, 0, 0, 0, 0), reached within 1e-4 by both methods. */
static void
test_constrained (void)
{
  for (int m = SEDP_CMAES_POPULATION; m <= SEDP_CMAES_ONE_PLUS_ONE; m++) {
    SedpCmaesOptions opt = box (m, 5, -5, 5, 1);
    opt.n_constraints = 1;
    Outcome out = run (&opt, sphere, TRUE, 1 + 1e-4, 5000);
    report ("constrained", &opt, &out);
    CU_ASSERT_FATAL (out.found && out.best_f < 1 + 1e-4);
    CU_ASSERT (out.best_x[0] >= 1 && out.best_x[0] < 1 + 1e-4);
    for (guint i = 1; i < 5; i++)
      CU_ASSERT_DOUBLE_EQUAL (out.best_x[i], 0.0, 1e-2);
  }
}

/* Σ (x_i − 3.3)² over the integers of [0, 10]⁴: (3, 3, 3, 3) and 0.36 by both methods, every
 * asked point an integer; the population's integer coordinates keep their floor. */
static void
test_integer (void)
{
  for (int m = SEDP_CMAES_POPULATION; m <= SEDP_CMAES_ONE_PLUS_ONE; m++) {
    SedpCmaesOptions opt = box (m, 4, 0, 10, 3);
    for (guint i = 0; i < 4; i++)
      opt.integer[i] = TRUE;
    g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, NULL);
    double x[4], f;
    gboolean integral = TRUE;
    while (sedp_cmaes_evaluations (es) < 1000 && sedp_cmaes_ask (es, x)) {
      for (guint i = 0; i < 4; i++)
        integral &= x[i] == round (x[i]) && x[i] >= 0 && x[i] <= 10;
      CU_ASSERT_TRUE_FATAL (sedp_cmaes_tell (es, x, near_three (x, 4), NULL));
    }
    CU_ASSERT_TRUE (integral);
    CU_ASSERT_TRUE_FATAL (sedp_cmaes_best (es, x, &f));
    printf ("\nRESULT problem=integer method=%s evaluations=1000 best=%.6e\n", method_name (m), f);
    CU_ASSERT_DOUBLE_EQUAL (f, 4 * 0.09, 1e-12);
    for (guint i = 0; i < 4; i++)
      CU_ASSERT_EQUAL (x[i], 3.0);
    for (guint i = 0; m == SEDP_CMAES_POPULATION && i < 4; i++)
      CU_ASSERT (es->sigma * sqrt (es->pop->C[i * 4 + i]) >= 0.25 / 10 * (1 - 1e-9));
  }
}

/* Random search on [−5, 5]² × the integers of [0, 4]: 20000 draws fill the box evenly (each
 * real half holds 50 ± 2 %, each inner integer 25 ± 1.5 %, each end 12.5 ± 1.5 %); the best
 * point told is kept; on the sphere, n = 5, 3000 draws get nowhere near the
 * 1e-8 that both CMA-ES methods reach within that budget (test_sphere). */
static void
test_random (void)
{
  SedpCmaesOptions opt = box (SEDP_CMAES_RANDOM, 3, -5, 5, 4);
  opt.lower[2] = 0, opt.upper[2] = 4, opt.integer[2] = TRUE;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (es);
  guint low[2] = {0, 0}, count[5] = {0};
  double x[3], best_told = INFINITY, f;
  for (guint k = 0; k < 20000; k++) {
    CU_ASSERT_TRUE_FATAL (sedp_cmaes_ask (es, x));
    low[0] += x[0] < 0, low[1] += x[1] < 0;
    CU_ASSERT_FATAL (x[2] == round (x[2]) && x[2] >= 0 && x[2] <= 4);
    count[(guint) x[2]]++;
    f = sphere (x, 2) + x[2];
    best_told = MIN (best_told, f);
    CU_ASSERT_TRUE_FATAL (sedp_cmaes_tell (es, x, f, NULL));
  }
  for (guint i = 0; i < 2; i++)
    CU_ASSERT (fabs (low[i] / 20000.0 - 0.5) < 0.02);
  for (guint v = 0; v < 5; v++)
    CU_ASSERT (fabs (count[v] / 20000.0 - (v == 0 || v == 4 ? 0.125 : 0.25)) < 0.015);
  CU_ASSERT_TRUE (sedp_cmaes_best (es, x, &f) && f == best_told);
  SedpCmaesOptions sph = box (SEDP_CMAES_RANDOM, 5, -5, 5, 1);
  Outcome out = run (&sph, sphere, FALSE, 1e-8, 3000);
  report ("sphere", &sph, &out);
  CU_ASSERT (out.found && out.best_f > 1e-3);
}

/* ---- determinism and the ask/tell contract ---- */

/* The first @n_gen generations of the sphere in [−5, 5]³ asked by an optimiser of @method and
 * @seed, told in reverse order of asking when @reverse; every point asked, in a new array. */
static GArray *
asked_points (SedpCmaesMethod method, guint64 seed, guint n_gen, gboolean reverse)
{
  SedpCmaesOptions opt = box (method, 3, -5, 5, seed);
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, NULL);
  GArray *all = g_array_new (FALSE, FALSE, sizeof (double));
  double gen[MAX_LAMBDA * 3];
  for (guint g = 0; g < n_gen; g++) {
    guint k = 0;
    while (k < MAX_LAMBDA && sedp_cmaes_ask (es, gen + 3 * k))
      k++;
    g_array_append_vals (all, gen, 3 * k);
    for (guint j = 0; j < k; j++) {
      const double *x = gen + 3 * (reverse ? k - 1 - j : j);
      CU_ASSERT_TRUE (sedp_cmaes_tell (es, x, sphere (x, 3), NULL));
    }
  }
  return all;
}

static gboolean
same_points (GArray *a, GArray *b)
{
  return a->len == b->len && memcmp (a->data, b->data, a->len * sizeof (double)) == 0;
}

/* The same seed asks the same points (whatever the order of the tells); another seed others. */
static void
test_deterministic (void)
{
  for (int m = SEDP_CMAES_POPULATION; m <= SEDP_CMAES_ONE_PLUS_ONE; m++) {
    g_autoptr (GArray) a = asked_points (m, 7, 40, FALSE);
    g_autoptr (GArray) b = asked_points (m, 7, 40, FALSE);
    g_autoptr (GArray) r = asked_points (m, 7, 40, TRUE);
    g_autoptr (GArray) c = asked_points (m, 8, 40, FALSE);
    CU_ASSERT (a->len >= 40 * 3);
    CU_ASSERT_TRUE (same_points (a, b));
    CU_ASSERT_TRUE (same_points (a, r));
    CU_ASSERT_FALSE (same_points (a, c));
    /* (1+1) asks x0 first whatever the seed: compare the second points */
    guint i = m == SEDP_CMAES_POPULATION ? 0 : 3;
    CU_ASSERT_NOT_EQUAL (g_array_index (a, double, i), g_array_index (c, double, i));
  }
}

/* λ candidates per generation, then FALSE until they are told; no best before a feasible one. */
static void
test_generation (void)
{
  SedpCmaesOptions opt = box (SEDP_CMAES_POPULATION, 2, 0, 1, 1);
  opt.n_constraints = 2;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, NULL);
  double x[6][2], v[2] = {0.5, 0}, bx[2], bf;
  for (guint k = 0; k < 6; k++) /* λ = 4 + ⌊3 ln 2⌋ = 6 */
    CU_ASSERT_TRUE (sedp_cmaes_ask (es, x[k]));
  CU_ASSERT_FALSE (sedp_cmaes_ask (es, x[0]));
  CU_ASSERT_TRUE (sedp_cmaes_tell (es, x[3], 1.0, v));
  CU_ASSERT_FALSE (sedp_cmaes_best (es, bx, &bf));
  CU_ASSERT_TRUE (sedp_cmaes_tell (es, x[1], NAN, NULL));
  CU_ASSERT_FALSE (sedp_cmaes_best (es, bx, &bf));
  CU_ASSERT_TRUE (sedp_cmaes_tell (es, x[0], 2.0, NULL));
  CU_ASSERT_TRUE_FATAL (sedp_cmaes_best (es, bx, &bf));
  CU_ASSERT (bf == 2.0 && bx[0] == x[0][0] && bx[1] == x[0][1]);
  for (guint k = 2; k < 6; k++)
    if (k != 3)
      CU_ASSERT_TRUE (sedp_cmaes_tell (es, x[k], 3.0, NULL));
  CU_ASSERT_EQUAL (sedp_cmaes_evaluations (es), 6);
  CU_ASSERT_TRUE (sedp_cmaes_ask (es, x[0]));
  CU_ASSERT (sedp_cmaes_sigma (es) > 0 && sedp_cmaes_sigma (es) != 0.3);
}

/* ---- bad options ---- */

/* @opt is refused with @code. */
static void
refused (const SedpCmaesOptions *opt, SedpCmaesError code)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (opt, &error);
  CU_ASSERT_PTR_NULL (es);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_EQUAL (error->domain, SEDP_CMAES_ERROR);
  if (error->code != (int) code)
    fprintf (stderr, "\n  expected code %d, got %d: %s\n", code, error->code, error->message);
  CU_ASSERT_EQUAL (error->code, code);
  SedpCmaes *again = sedp_cmaes_new (opt, NULL); /* no error asked for: refused all the same */
  CU_ASSERT_PTR_NULL (again);
  sedp_cmaes_free (again);
}

/* @opt is refused for coordinate 2's bounds, named in the message. */
static void
refused_bounds (SedpCmaesOptions opt, double lo, double hi, gboolean integer)
{
  opt.lower[2] = lo;
  opt.upper[2] = hi;
  opt.integer[2] = integer;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_cmaes_new (&opt, &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT (error->domain == SEDP_CMAES_ERROR && error->code == SEDP_CMAES_ERROR_BOUNDS);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "coordinate 2"));
}

/* n, bounds (naming the coordinate), x0, the number of constraints, the method. */
static void
test_bad_space (void)
{
  const SedpCmaesOptions good = box (SEDP_CMAES_POPULATION, 4, -1, 1, 1);
  SedpCmaesOptions o = good;
  o.n = 0;
  refused (&o, SEDP_CMAES_ERROR_DIMENSION);
  o.n = SEDP_CMAES_MAX_DIM + 1;
  refused (&o, SEDP_CMAES_ERROR_DIMENSION);
  refused_bounds (good, 1, 1, FALSE);
  refused_bounds (good, 2, 1, FALSE);
  refused_bounds (good, -INFINITY, 1, FALSE);
  refused_bounds (good, 0, NAN, FALSE);
  refused_bounds (good, 0.2, 0.8, TRUE);
  o = good;
  o.x0[1] = 1.5;
  refused (&o, SEDP_CMAES_ERROR_START);
  o.x0[1] = INFINITY;
  refused (&o, SEDP_CMAES_ERROR_START);
  o = good;
  o.n_constraints = SEDP_CMAES_MAX_CONSTRAINTS + 1;
  refused (&o, SEDP_CMAES_ERROR_CONSTRAINTS);
  o = good;
  o.method = (SedpCmaesMethod) 7;
  refused (&o, SEDP_CMAES_ERROR_METHOD);
}

/* sigma0 and lambda; then the edges that are fine. */
static void
test_bad_step (void)
{
  const SedpCmaesOptions good = box (SEDP_CMAES_POPULATION, 4, -1, 1, 1);
  const double sigmas[] = {0, -0.1, 1.5, NAN, INFINITY};
  SedpCmaesOptions o = good;
  for (guint k = 0; k < G_N_ELEMENTS (sigmas); k++) {
    o.sigma0 = sigmas[k];
    refused (&o, SEDP_CMAES_ERROR_SIGMA);
  }
  o = good;
  o.lambda = 1;
  refused (&o, SEDP_CMAES_ERROR_LAMBDA);
  o.lambda = SEDP_CMAES_MAX_LAMBDA + 1;
  refused (&o, SEDP_CMAES_ERROR_LAMBDA);
  o.method = SEDP_CMAES_ONE_PLUS_ONE;
  o.lambda = 2;
  refused (&o, SEDP_CMAES_ERROR_LAMBDA);
  o = good;
  o.sigma0 = 1;
  o.lambda = 2;
  o.x0[0] = -1;
  o.x0[3] = 1;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&o, NULL);
  CU_ASSERT_PTR_NOT_NULL (es);
}

/* ---- the eigen solver ---- */

/* A random symmetric 12 × 12 matrix: A·v_i = λ_i·v_i and VᵀV = I to 1e-12. */
static void
test_jacobi (void)
{
  enum { N = 12 };
  double a[N * N], work[N * N], eval[N], evec[N * N];
  GRand *r = g_rand_new_with_seed (5);
  for (guint i = 0; i < N; i++)
    for (guint k = 0; k <= i; k++)
      a[i * N + k] = a[k * N + i] = g_rand_double_range (r, -1, 1);
  g_rand_free (r);
  memcpy (work, a, sizeof a);
  sedp_cmaes_jacobi (work, N, eval, evec);
  double worst = 0;
  for (guint j = 0; j < N; j++)
    for (guint i = 0; i < N; i++) {
      double av = 0, dot = 0;
      for (guint k = 0; k < N; k++) {
        av += a[i * N + k] * evec[k * N + j];
        dot += evec[k * N + i] * evec[k * N + j];
      }
      worst = MAX (worst, fabs (av - eval[j] * evec[i * N + j]));
      worst = MAX (worst, fabs (dot - (i == j)));
    }
  CU_ASSERT (worst < 1e-12);
}

/* ---- against python3-cmaes ---- */

/* The evaluations (whole generations) of a population run on @f until its best is below
 * @target, or @budget + 1, as cmaes-reference.py counts cmaes.CMA's. */
static guint64
evaluations_to (Objective f, guint n, const double *x0, double target, guint64 budget, guint64 seed)
{
  SedpCmaesOptions opt = box (SEDP_CMAES_POPULATION, n, -5, 5, seed);
  for (guint i = 0; x0 && i < n; i++)
    opt.x0[i] = x0[i];
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, NULL);
  guint lambda = es->pop->lambda;
  while (sedp_cmaes_evaluations (es) + lambda <= budget) {
    generation (es, n, f, FALSE, -INFINITY);
    double best = INFINITY;
    if (sedp_cmaes_best (es, NULL, &best) && best < target)
      return sedp_cmaes_evaluations (es);
  }
  return budget + 1;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The median over seeds 1 … 9 of evaluations_to(). */
static double
median_evaluations (Objective f, guint n, const double *x0, double target, guint64 budget)
{
  double used[9];
  for (guint s = 0; s < 9; s++)
    used[s] = (double) evaluations_to (f, n, x0, target, budget, s + 1);
  qsort (used, 9, sizeof (double), compare_doubles);
  return used[4];
}

/* The median_evaluations of @function in the script's output @out, or NaN. */
static double
python_median (const char *out, const char *function)
{
  g_autofree char *key = g_strdup_printf ("RESULT function=%s ", function);
  const char *line = strstr (out, key);
  const char *value = line ? strstr (line, "median_evaluations=") : NULL;
  return value ? g_ascii_strtod (value + strlen ("median_evaluations="), NULL) : NAN;
}

/* Runs cmaes-reference.py (a failure, not a skip, when python3 or its cmaes module is missing)
 * and compares the evaluations each needs to reach the target (the same algorithm, so about the
 * same): sedp's median within 1.5× python's, or fewer, on the sphere (1e-8) and on Rosenbrock
 * (1e-6, where the covariance must learn the valley), and both within the budgets. */
static void
test_against_python (void)
{
  const char *argv[] = {SEDP_TEST_PYTHON, SEDP_TEST_CMAES_SCRIPT, NULL};
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = -1;
  gboolean spawned = g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   &out, &err, &status, &error);
  if (!spawned || !g_spawn_check_wait_status (status, NULL))
    fprintf (stderr, "\n  %s %s failed: %s%s\n", argv[0], argv[1], error ? error->message : "",
             err ? err : "");
  CU_ASSERT_TRUE_FATAL (spawned && g_spawn_check_wait_status (status, NULL));
  double py_sphere = python_median (out, "sphere"), py_rosen = python_median (out, "rosenbrock");
  const double x0[5] = {2.5, 2.5, 2.5, 2.5, 2.5};
  double sphere_evals = median_evaluations (sphere, 5, x0, 1e-8, 3000);
  double rosen_evals = median_evaluations (rosenbrock, 4, NULL, 1e-6, 20000);
  printf ("\nRESULT problem=sphere target=1e-08 sedp_median_evaluations=%g "
          "python_median_evaluations=%g\n"
          "RESULT problem=rosenbrock target=1e-06 sedp_median_evaluations=%g "
          "python_median_evaluations=%g\n",
          sphere_evals, py_sphere, rosen_evals, py_rosen);
  CU_ASSERT_FATAL (!isnan (py_sphere) && !isnan (py_rosen));
  CU_ASSERT (sphere_evals <= 3000 && rosen_evals <= 20000);
  CU_ASSERT (py_sphere <= 3000 && py_rosen <= 20000);
  CU_ASSERT (sphere_evals <= 1.5 * py_sphere);
  CU_ASSERT (rosen_evals <= 1.5 * py_rosen);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("tune", NULL, NULL);
  CU_add_test (s, "both methods converge on the sphere", test_sphere);
  CU_add_test (s, "the population method converges on Rosenbrock", test_rosenbrock);
  CU_add_test (s, "both methods find a constrained optimum", test_constrained);
  CU_add_test (s, "both methods find an integer optimum", test_integer);
  CU_add_test (s, "random search draws the box evenly and keeps the best", test_random);
  CU_add_test (s, "a run is determined by its seed", test_deterministic);
  CU_add_test (s, "a generation is asked, then told in any order", test_generation);
  CU_add_test (s, "a bad space is refused", test_bad_space);
  CU_add_test (s, "a bad step or population is refused", test_bad_step);
  CU_add_test (s, "the Jacobi eigen solver", test_jacobi);
  CU_add_test (s, "against Debian's python3-cmaes", test_against_python);
  return sedp_test_run ();
}
