/* sedp — the CMA-ES's options: their defaults and their checks, each refusal naming the option,
 * its value and what it must be. */
#include "cmaes-private.h"

#include <math.h>

G_DEFINE_QUARK (sedp-cmaes-error-quark, sedp_cmaes_error)

void
sedp_cmaes_options_init (SedpCmaesOptions *opt)
{
  g_return_if_fail (opt != NULL);
  *opt = (SedpCmaesOptions) {.method = SEDP_CMAES_POPULATION, .sigma0 = 0.3, .seed = 1};
  for (guint i = 0; i < SEDP_CMAES_MAX_DIM; i++) {
    opt->upper[i] = 1;
    opt->x0[i] = NAN;
  }
}

static gboolean
check_shape (const SedpCmaesOptions *opt, GError **error)
{
  if (opt->method != SEDP_CMAES_POPULATION && opt->method != SEDP_CMAES_ONE_PLUS_ONE &&
      opt->method != SEDP_CMAES_RANDOM) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_METHOD,
                 "cannot create the optimiser: method %d is unknown; use SEDP_CMAES_POPULATION "
                 "SEDP_CMAES_ONE_PLUS_ONE or SEDP_CMAES_RANDOM", (int) opt->method);
    return FALSE;
  }
  if (opt->n < 1 || opt->n > SEDP_CMAES_MAX_DIM) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_DIMENSION,
                 "cannot create the optimiser: n = %u coordinates; it must be 1 to %u (tune "
                 "fewer parameters at once)", opt->n, SEDP_CMAES_MAX_DIM);
    return FALSE;
  }
  if (opt->n_constraints > SEDP_CMAES_MAX_CONSTRAINTS) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_CONSTRAINTS,
                 "cannot create the optimiser: %u constraints; at most %u are supported (sum "
                 "related constraints into one violation)", opt->n_constraints,
                 SEDP_CMAES_MAX_CONSTRAINTS);
    return FALSE;
  }
  return TRUE;
}

/* Coordinate @i's bounds: finite, lower < upper, an integer between them if it is one. */
static gboolean
check_bounds (const SedpCmaesOptions *opt, guint i, GError **error)
{
  double lo = opt->lower[i], hi = opt->upper[i];
  if (!isfinite (lo) || !isfinite (hi) || !(lo < hi)) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_BOUNDS,
                 "cannot create the optimiser: coordinate %u has lower = %g and upper = %g; "
                 "both must be finite and lower below upper", i, lo, hi);
    return FALSE;
  }
  if (opt->integer[i] && ceil (lo) > floor (hi)) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_BOUNDS,
                 "cannot create the optimiser: coordinate %u is an integer but no integer lies "
                 "between lower = %g and upper = %g; widen the bounds or make it real", i, lo, hi);
    return FALSE;
  }
  return TRUE;
}

/* Coordinate @i's start: NaN (the centre) or a finite value within its bounds. */
static gboolean
check_start (const SedpCmaesOptions *opt, guint i, GError **error)
{
  double x = opt->x0[i];
  if (isnan (x) || (isfinite (x) && x >= opt->lower[i] && x <= opt->upper[i]))
    return TRUE;
  g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_START,
               "cannot create the optimiser: coordinate %u starts at x0 = %g, outside its bounds "
               "[%g, %g]; give a value within them, or NaN for the centre", i, x, opt->lower[i],
               opt->upper[i]);
  return FALSE;
}

static gboolean
check_step (const SedpCmaesOptions *opt, GError **error)
{
  if (!(opt->sigma0 > 0 && opt->sigma0 <= 1)) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_SIGMA,
                 "cannot create the optimiser: sigma0 = %g; it must lie in (0, 1], a fraction "
                 "of each coordinate's range (e.g. 0.3)", opt->sigma0);
    return FALSE;
  }
  gboolean one = opt->method != SEDP_CMAES_POPULATION;
  guint most = one ? 1 : SEDP_CMAES_MAX_LAMBDA;
  if ((one && opt->lambda > 1) || (!one && opt->lambda == 1) || opt->lambda > most) {
    g_set_error (error, SEDP_CMAES_ERROR, SEDP_CMAES_ERROR_LAMBDA,
                 "cannot create the optimiser: lambda = %u; the %s method takes 0 (the default) "
                 "or %s", opt->lambda,
                 opt->method == SEDP_CMAES_RANDOM ? "random" : one ? "(1+1)" : "population",
                 one ? "1" : "2 to " G_STRINGIFY (SEDP_CMAES_MAX_LAMBDA));
    return FALSE;
  }
  return TRUE;
}

/* All of @opt, in the order of the error codes' causes: shape, coordinates, step, population. */
gboolean
sedp_cmaes_check_options (const SedpCmaesOptions *opt, GError **error)
{
  if (!check_shape (opt, error))
    return FALSE;
  for (guint i = 0; i < opt->n; i++)
    if (!check_bounds (opt, i, error) || !check_start (opt, i, error))
      return FALSE;
  return check_step (opt, error);
}
