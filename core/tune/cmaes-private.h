/* sedp — the CMA-ES's insides, shared by its front (cmaes.c: options, ask, tell, the box), its
 * two methods (cmaes-population.c, cmaes-one.c), its linear algebra (cmaes-linalg.c) and the
 * tests (the eigen solver). Not installed. Every vector here is in scaled units: a real value
 * divided by its coordinate's range. Matrices are n × n, row-major. */
#pragma once

#include "cmaes.h"

G_BEGIN_DECLS

/* One candidate of the generation: the draw the optimiser learns from (clipped into the box,
 * not rounded) and what ask returned (real units, rounded where integer). */
typedef struct {
  double *x;
  double *real;
  double f;         /* +∞ for NaN */
  double violation; /* the sum of the violations */
  gboolean asked, told;
} SedpCmaesCandidate;

/* The state of SEDP_CMAES_POPULATION: Hansen's constants, the paths, C = B·diag(D)²·Bᵀ. */
typedef struct {
  guint lambda, mu;
  double *w; /* λ recombination weights, the last ones negative */
  double mueff, cs, ds, cc, c1, cmu, chi_n, wsum;
  double *C, *B, *D, *ps, *pc;
  guint64 generation;
  double *y, *t, *u, *work; /* scratch: λ steps, two n-vectors, an n × n matrix */
} SedpCmaesPopulation;

/* The state of SEDP_CMAES_ONE_PLUS_ONE: Arnold and Hansen's constants, the Cholesky factor A,
 * the success path s, the constraint vectors v_j (m × n), the parent (the mean) and the
 * objectives of it and its five last ancestors, the candidate out: its draw z and its step A·z
 * (the two agree when it was clipped: z is then solved from the step). */
typedef struct {
  double d, c, cc, ccov_plus, ccov_minus, beta, p_target;
  double *A, *s, *v, *z, *step;
  double *lu, *work, *w; /* scratch: A's LU factors, an n × n matrix, an n-vector */
  guint *piv;
  gboolean has_parent;
  double f_parent, violation_parent;
  double ancestors[6]; /* [0] the parent's objective, [k] its k-th order ancestor's */
  guint n_ancestors;
} SedpCmaesOne;

struct _SedpCmaes {
  SedpCmaesMethod method;
  guint n, m;
  double lower[SEDP_CMAES_MAX_DIM], upper[SEDP_CMAES_MAX_DIM]; /* real units */
  double range[SEDP_CMAES_MAX_DIM];                            /* upper − lower */
  double lo[SEDP_CMAES_MAX_DIM], hi[SEDP_CMAES_MAX_DIM];       /* the box, scaled */
  gboolean integer[SEDP_CMAES_MAX_DIM];
  double min_std[SEDP_CMAES_MAX_DIM]; /* the floor of σ·√C_ii: 0, or 1/4 step */
  GRand *rand;
  gboolean has_spare; /* Box–Muller's second draw */
  double spare;
  double sigma;
  double *mean; /* the mean, or the parent */
  guint n_slots, n_asked, n_told;
  SedpCmaesCandidate *slots;
  double *slot_data;
  guint64 evaluations;
  gboolean has_best;
  double best_f;
  double best_x[SEDP_CMAES_MAX_DIM];
  SedpCmaesPopulation *pop;
  SedpCmaesOne *one;
};

/* cmaes-options.c: every check of sedp_cmaes_new() on @opt, FALSE with @error set. */
gboolean sedp_cmaes_check_options (const SedpCmaesOptions *opt, GError **error);

/* cmaes.c: a standard normal draw; a scaled point inside the box?; clipped into it; σ kept
 * within [1e-300, 1e3] (a thousand ranges), so that no draw becomes infinite or NaN. */
double sedp_cmaes_normal (SedpCmaes *es);
void sedp_cmaes_bound_sigma (SedpCmaes *es);
gboolean sedp_cmaes_in_box (const SedpCmaes *es, const double *x);
void sedp_cmaes_clip (const SedpCmaes *es, double *x);

/* cmaes-population.c */
void sedp_cmaes_population_init (SedpCmaes *es, guint lambda);
void sedp_cmaes_population_free (SedpCmaesPopulation *pop);
void sedp_cmaes_population_sample (SedpCmaes *es, double *x);
void sedp_cmaes_population_update (SedpCmaes *es);

/* cmaes-one.c */
void sedp_cmaes_one_init (SedpCmaes *es);
void sedp_cmaes_one_free (SedpCmaesOne *one);
void sedp_cmaes_one_sample (SedpCmaes *es, double *x);
void sedp_cmaes_one_update (SedpCmaes *es, const SedpCmaesCandidate *c, const double *violations);

/**
 * sedp_cmaes_jacobi:
 * @a: (inout): a symmetric @n × @n matrix, destroyed (left nearly diagonal)
 * @eval: (out caller-allocates): its @n eigenvalues
 * @evec: (out caller-allocates): @n × @n, the eigenvectors as columns, orthonormal
 *
 * The eigendecomposition by cyclic Jacobi rotations, sweeping until the off-diagonal part is
 * negligible (at most 64 sweeps). Exported for the tests.
 */
SEDP_API void sedp_cmaes_jacobi (double *a, guint n, double *eval, double *evec);

/* The LU factors of the @n × @n matrix @a with partial pivoting, into @lu and @piv; FALSE when
 * @a is singular. Then the solution x of a·x = @b, into @x. */
gboolean sedp_cmaes_lu (const double *a, guint n, double *lu, guint *piv);
void sedp_cmaes_lu_solve (const double *lu, const guint *piv, guint n, const double *b, double *x);

/* The floor on the integer coordinates' standard deviations: scales row and column i of the
 * covariance @C (or row i of the Cholesky factor @A) so that σ·√C_ii ≥ min_std_i. */
void sedp_cmaes_floor_covariance (const SedpCmaes *es, double *C);
void sedp_cmaes_floor_factor (const SedpCmaes *es, double *A);

G_END_DECLS
