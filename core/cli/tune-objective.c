/* sedp tune — what the tune's mode optimises (docs/tuning.md, "The command"): the CPU per
 * request at --rate (the default), or with --maximize throughput each candidate's capacity at
 * the SLO; named, shown, compared and told to the optimiser in one place, so that the progress,
 * the choice, the table, the report and the plot each have one code path for both modes. */
#include "cmd-tune.h"

#include <math.h>

static const TuneObjective cpu = {
  .name = "cpu", .title = "CPU", .unit = "ms/req", .long_unit = "ms/request",
  .axis = "CPU per request (ms)", .row = "cpu per request (ms, median)",
  .field = "cpu_s_per_request", .scale = 1e3,
};

static const TuneObjective capacity = {
  .name = "capacity", .title = "capacity", .unit = "req/s", .long_unit = "requests/s",
  .axis = "capacity (requests/s)", .row = "capacity (req/s, median)",
  .field = "capacity_rps", .scale = 1,
};

const TuneObjective *
tune_objective (const Tune *t)
{
  return t->o.throughput ? &capacity : &cpu;
}

double
tune_value (const Tune *t, const SedpTuneResult *r)
{
  double v = t->o.throughput ? r->capacity_rps : r->cpu_s_per_request;
  return r->feasible && isfinite (v) ? tune_objective (t)->scale * v : NAN;
}

double
tune_rep_value (const Tune *t, const SedpTuneRepeated *r)
{
  double v = t->o.throughput ? r->median_capacity_rps : r->median_cpu_s_per_request;
  return r->n_repeats && isfinite (v) ? tune_objective (t)->scale * v : NAN;
}

gboolean
tune_better (const Tune *t, double a, double b)
{
  if (isnan (a))
    return FALSE;
  if (isnan (b))
    return TRUE;
  return t->o.throughput ? a > b : a < b;
}

char *
tune_show (const Tune *t, double v)
{
  return g_strdup_printf (fabs (v) >= 1000 ? "%.0f %s" : "%.3g %s", v, tune_objective (t)->unit);
}

double
tune_told (const Tune *t, const SedpTuneResult *r)
{
  if (!r->feasible)
    return NAN;
  if (!t->o.throughput)
    return r->cpu_s_per_request;
  return r->capacity_rps > 0 ? 1 / r->capacity_rps : NAN;
}

char *
tune_conditions (const Tune *t)
{
  char rate[G_ASCII_DTOSTR_BUF_SIZE], slo[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (slo, sizeof slo, "%g", t->o.slo_p99_ms);
  if (t->o.throughput)
    return g_strdup_printf ("for capacity, p99 SLO %s ms", slo);
  g_ascii_formatd (rate, sizeof rate, "%g", t->o.rate);
  return g_strdup_printf ("at %s requests/s, p99 SLO %s ms", rate, slo);
}
