/* sedp — the optimiser of `sedp tune` (docs/tuning.md, "The optimiser"): CMA-ES over a box of
 * real and integer parameters, with constraints, driven by ask and tell so that the caller
 * evaluates every candidate itself (and may measure it several times before telling). */
#pragma once

#include <glib.h>
#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_CMAES_MAX_DIM: the most coordinates a search space may have. */
#define SEDP_CMAES_MAX_DIM 64
/** SEDP_CMAES_MAX_LAMBDA: the largest population %SEDP_CMAES_POPULATION may be given. */
#define SEDP_CMAES_MAX_LAMBDA 4096
/** SEDP_CMAES_MAX_CONSTRAINTS: the most constraints a problem may have. */
#define SEDP_CMAES_MAX_CONSTRAINTS 64
/** SEDP_CMAES_RESAMPLINGS: how many times a candidate outside the box is drawn again before
 * it is clipped into the box. */
#define SEDP_CMAES_RESAMPLINGS 10

/** SEDP_CMAES_ERROR: errors of creating an optimiser from bad options. Codes are
 * #SedpCmaesError. */
#define SEDP_CMAES_ERROR (sedp_cmaes_error_quark ())
SEDP_API GQuark sedp_cmaes_error_quark (void);

typedef enum {
  SEDP_CMAES_ERROR_DIMENSION,   /* n outside 1 … SEDP_CMAES_MAX_DIM */
  SEDP_CMAES_ERROR_BOUNDS,      /* a coordinate's bounds not finite, lower ≥ upper, or no integer
                                 * between them for an integer coordinate */
  SEDP_CMAES_ERROR_START,       /* a coordinate of x0 not finite or outside its bounds */
  SEDP_CMAES_ERROR_SIGMA,       /* sigma0 not in (0, 1] */
  SEDP_CMAES_ERROR_LAMBDA,      /* a population size the method cannot use */
  SEDP_CMAES_ERROR_CONSTRAINTS, /* more than SEDP_CMAES_MAX_CONSTRAINTS constraints */
  SEDP_CMAES_ERROR_METHOD,      /* not a #SedpCmaesMethod */
} SedpCmaesError;

/**
 * SedpCmaesMethod:
 * @SEDP_CMAES_POPULATION: the (μ/μ_w, λ)-CMA-ES with Hansen's default parameters (The CMA
 *   Evolution Strategy: A Tutorial, 2016): weighted recombination of the best half, cumulative
 *   step-size adaptation, rank-one and rank-μ updates of a full covariance matrix with negative
 *   weights for the worst half (active CMA). Candidates are ranked by Deb's feasibility rules:
 *   every feasible one (total violation 0) by its objective, ahead of every infeasible one,
 *   those by their total violation.
 * @SEDP_CMAES_ONE_PLUS_ONE: the (1+1)-CMA-ES for constrained optimisation of Arnold and Hansen
 *   (GECCO 2012): one candidate at a time, a Cholesky factor A of the covariance updated on
 *   success (and actively on bad failures), the step size by the success rule (target 2/11),
 *   and for every constraint a fading record v_j of the steps that violated it, along which the
 *   distribution is shrunk whenever a candidate violates that constraint.
 * @SEDP_CMAES_RANDOM: random search, the baseline the others are measured against: every
 *   candidate drawn uniformly from the box, independently of what was told (integer coordinates
 *   rounded, so their two ends are drawn half as often as the values between); the best
 *   feasible point told is kept as by the others. @x0 and @sigma0 are checked but not used.
 */
typedef enum {
  SEDP_CMAES_POPULATION,
  SEDP_CMAES_ONE_PLUS_ONE,
  SEDP_CMAES_RANDOM,
} SedpCmaesMethod;

/**
 * SedpCmaesOptions:
 * @method: the algorithm
 * @n: the number of coordinates, 1 to %SEDP_CMAES_MAX_DIM
 * @lower: each coordinate's lower bound, finite
 * @upper: each coordinate's upper bound, finite, above @lower
 * @integer: whether a coordinate takes integer values only (at least one integer must lie in
 *   [@lower, @upper])
 * @x0: the start (the mean of the first generation, or the first parent), in real units; a NaN
 *   coordinate starts at the centre of its range
 * @sigma0: the initial step size as a fraction of each coordinate's range, in (0, 1]
 * @lambda: %SEDP_CMAES_POPULATION: the population size, 2 to %SEDP_CMAES_MAX_LAMBDA, or 0 for
 *   the default 4 + ⌊3 ln n⌋; %SEDP_CMAES_ONE_PLUS_ONE and %SEDP_CMAES_RANDOM: 0 or 1
 * @n_constraints: m, the length of the violations array given to sedp_cmaes_tell(), 0 to
 *   %SEDP_CMAES_MAX_CONSTRAINTS
 * @seed: the seed of the optimiser's random numbers
 *
 * Only the first @n entries of the arrays are read. Plain data: copy it freely.
 */
typedef struct {
  SedpCmaesMethod method;
  guint n;
  double lower[SEDP_CMAES_MAX_DIM];
  double upper[SEDP_CMAES_MAX_DIM];
  gboolean integer[SEDP_CMAES_MAX_DIM];
  double x0[SEDP_CMAES_MAX_DIM];
  double sigma0;
  guint lambda;
  guint n_constraints;
  guint64 seed;
} SedpCmaesOptions;

/**
 * sedp_cmaes_options_init:
 * Fills @opt with the defaults: %SEDP_CMAES_POPULATION, n = 0 (to be set), every coordinate real
 * in [0, 1] starting at its centre (x0 NaN), sigma0 0.3, the default population, no
 * constraints, seed 1.
 */
SEDP_API void sedp_cmaes_options_init (SedpCmaesOptions *opt);

/**
 * SedpCmaes:
 * An optimiser's state. Internally every coordinate is divided by its range (upper − lower), so
 * that all ranges have width 1 and @sigma0 means the same for each; the coordinates are not
 * shifted, so that values near a real 0 keep their precision. Not thread-safe: one caller at a
 * time, which may be any thread.
 */
typedef struct _SedpCmaes SedpCmaes;

/**
 * sedp_cmaes_new:
 * @opt: the options (copied)
 *
 * A new optimiser, deterministic for given options: the same calls give the same candidates.
 * Its random numbers come from a GRand seeded with @opt->seed (normal draws by Box–Muller).
 * Errors (%SEDP_CMAES_ERROR): DIMENSION, BOUNDS and START (naming the coordinate and its
 * values), SIGMA, LAMBDA, CONSTRAINTS, METHOD.
 *
 * Returns: (transfer full) (nullable): the optimiser, or NULL with @error set; free it with
 * sedp_cmaes_free().
 */
SEDP_API SedpCmaes *sedp_cmaes_new (const SedpCmaesOptions *opt, GError **error);

/** sedp_cmaes_free: Frees @es; NULL is ignored. */
SEDP_API void sedp_cmaes_free (SedpCmaes *es);

/**
 * sedp_cmaes_ask:
 * @x: (out caller-allocates) (array): n values, the candidate in real units
 *
 * The next candidate to evaluate. %SEDP_CMAES_POPULATION hands out the generation's λ
 * candidates in turn; %SEDP_CMAES_ONE_PLUS_ONE one at a time, x0 itself first. A candidate is
 * drawn from the search distribution; one outside the box is drawn again up to
 * %SEDP_CMAES_RESAMPLINGS times, and then clipped into the box. Integer coordinates are rounded
 * to the nearest integer within the bounds; the optimiser learns from the unrounded draw, and
 * keeps each integer coordinate's standard deviation at least a quarter of one integer step,
 * so that a neighbouring integer is still tried (about 4.6 % of the candidates when the mean
 * sits on an integer) and such coordinates do not stall.
 *
 * Returns: %FALSE, @x untouched, when every candidate of the generation has been asked and
 * some are not yet told: tell them first.
 */
SEDP_API gboolean sedp_cmaes_ask (SedpCmaes *es, double *x);

/**
 * sedp_cmaes_tell:
 * @x: (array): a candidate returned by sedp_cmaes_ask() and not yet told, as returned
 * @f: its objective, to be minimised; NaN is taken as +∞ (a failed evaluation). Ignored when
 *   the candidate is infeasible, so the caller may pass NaN without evaluating it.
 * @violations: (array) (nullable): the n_constraints violations of @x, each ≥ 0 (0: that
 *   constraint holds); NULL when all hold
 *
 * Records the evaluation of @x. The candidates of a generation may be told in any order; the
 * distribution is updated when the last one is told (%SEDP_CMAES_ONE_PLUS_ONE: at every tell).
 * Telling a candidate that was not asked, or a negative or NaN violation, is a programming
 * error (a critical, %FALSE).
 *
 * Returns: %TRUE when recorded.
 */
SEDP_API gboolean sedp_cmaes_tell (SedpCmaes *es, const double *x, double f,
                                   const double *violations);

/**
 * sedp_cmaes_best:
 * @x: (out caller-allocates) (array) (optional): n values, the best feasible candidate told so
 *   far, in real units
 * @f: (out) (optional): its objective
 *
 * Returns: %FALSE, the outputs untouched, when no feasible candidate with a finite objective
 * has been told yet.
 */
SEDP_API gboolean sedp_cmaes_best (const SedpCmaes *es, double *x, double *f);

/** sedp_cmaes_sigma: Returns: the current step size, as a fraction of the coordinates' ranges
 * (sigma0 at the start; the standard deviation along a coordinate is this times the square root
 * of the covariance's diagonal entry). */
SEDP_API double sedp_cmaes_sigma (const SedpCmaes *es);

/** sedp_cmaes_evaluations: Returns: how many candidates have been told. */
SEDP_API guint64 sedp_cmaes_evaluations (const SedpCmaes *es);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpCmaes, sedp_cmaes_free)

G_END_DECLS
