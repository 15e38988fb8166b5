/* sedp — the capacity search (see capacity.h). */
#include "capacity.h"

#include <string.h>

/* The highest rate a probe may have (sedp_loadgen_config_check()'s bound). */
#define MAX_RATE 1e6

/* The state of a search: the best passing and lowest failing rates so far, the next to probe. */
typedef struct {
  double lo, hi; /* 0: none yet */
  double rate, floor;
  double hi_p99_ms, hi_error_share; /* of the probe at @hi */
  char *refused_why;   /* the accept hook's refusal of the lowest rate it refused, or NULL */
  double refused_rate; /* that rate */
} Bracket;

void
sedp_loadgen_search_init (SedpLoadgenSearch *s)
{
  memset (s, 0, sizeof *s);
  s->max_error_share = 0.01;
  s->tolerance = 0.05;
  s->max_probes = 30;
}

gboolean
sedp_loadgen_search_check (const SedpLoadgenSearch *s, GError **error)
{
  g_autofree char *m = NULL;
  if (!(s->slo_p99_ms > 0 && s->slo_p99_ms <= 86400000))
    m = g_strdup_printf ("slo_p99_ms %g: must be more than 0 milliseconds", s->slo_p99_ms);
  else if (!(s->max_error_share > 0 && s->max_error_share <= 1))
    m = g_strdup_printf ("max_error_share %g: must be more than 0 and at most 1", s->max_error_share);
  else if (!(s->tolerance >= 0.001 && s->tolerance <= 0.5))
    m = g_strdup_printf ("tolerance %g: must be from 0.001 to 0.5", s->tolerance);
  else if (!(s->start_rate >= 0 && s->start_rate <= MAX_RATE))
    m = g_strdup_printf ("start_rate %g: must be from 0 (estimate it) to %g requests per second",
                         s->start_rate, MAX_RATE);
  else if (s->max_probes < 1 || s->max_probes > 1000)
    m = g_strdup_printf ("max_probes %u: must be from 1 to 1000", s->max_probes);
  if (m)
    g_set_error_literal (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_CONFIG, m);
  return m == NULL;
}

void
sedp_loadgen_capacity_clear (SedpLoadgenCapacity *c)
{
  g_clear_pointer (&c->results, sedp_loadgen_results_free);
  memset (c, 0, sizeof *c);
}

/* The closed loop's requests per second at @config's concurrency, the search's first rate. */
static gboolean
estimate (SedpLoadgen *gen, const SedpLoadgenConfig *config, double *rate, GError **error)
{
  SedpLoadgenConfig c = *config;
  c.mode = SEDP_LOADGEN_CLOSED;
  g_autoptr (SedpLoadgenResults) r = sedp_loadgen_run (gen, &c, error);
  if (r == NULL)
    return FALSE;
  *rate = MIN (sedp_loadgen_results_get_requests_per_s (r), MAX_RATE);
  if (sedp_loadgen_results_get_counts (r)->ok > 0)
    return TRUE;
  const char *first = sedp_loadgen_results_get_first_error (r);
  g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_NO_CAPACITY,
               "the closed-loop estimate (%u clients, %g s) answered no request OK: %" G_GUINT64_FORMAT
               " errors, the first: %s; check that the target serves these requests",
               c.concurrency, c.duration_s, sedp_loadgen_results_get_errors (r), first ? first : "none");
  return FALSE;
}

static gboolean
passes (const SedpLoadgenResults *r, const SedpLoadgenSearch *s)
{
  return sedp_loadgen_results_get_counts (r)->ok > 0 &&
         sedp_loadgen_results_get_latency_ms (r, 0.99) <= s->slo_p99_ms &&
         sedp_loadgen_results_get_error_share (r) < s->max_error_share;
}

static gboolean
search_done (const Bracket *b, const SedpLoadgenSearch *s, guint probes)
{
  if (probes >= s->max_probes || b->lo >= MAX_RATE)
    return TRUE;
  if (b->lo > 0 && b->hi > 0)
    return b->hi - b->lo <= s->tolerance * b->hi;
  return b->rate < b->floor;
}

/* Keeps @r when its rate is the best passing one, or notes the lowest failing one; takes @why,
 * the accept hook's refusal (or NULL), kept when its rate is the lowest refused. */
static void
note_probe (Bracket *b, SedpLoadgenCapacity *out, SedpLoadgenResults *r, gboolean pass, char *why)
{
  if (why && (b->refused_why == NULL || b->rate < b->refused_rate)) {
    g_free (b->refused_why);
    b->refused_why = g_steal_pointer (&why);
    b->refused_rate = b->rate;
  }
  g_free (why);
  if (pass && b->rate > out->capacity_rps) {
    g_clear_pointer (&out->results, sedp_loadgen_results_free);
    out->results = r;
    out->capacity_rps = b->rate;
    return;
  }
  if (!pass && (out->lowest_failing_rps == 0 || b->rate < out->lowest_failing_rps)) {
    out->lowest_failing_rps = b->rate;
    b->hi_p99_ms = sedp_loadgen_results_get_latency_ms (r, 0.99);
    b->hi_error_share = sedp_loadgen_results_get_error_share (r);
  }
  sedp_loadgen_results_free (r);
}

/* Probes the bracket's rate, then moves it: doubling or halving, or bisecting once bracketed. */
static gboolean
probe (SedpLoadgen *gen, const SedpLoadgenConfig *config, const SedpLoadgenSearch *s, Bracket *b,
       SedpLoadgenCapacity *out, GError **error)
{
  SedpLoadgenConfig c = *config;
  c.mode = SEDP_LOADGEN_OPEN;
  c.rate = b->rate;
  SedpLoadgenResults *r = sedp_loadgen_run (gen, &c, error);
  if (r == NULL)
    return FALSE;
  gboolean pass = passes (r, s);
  char *why = pass && s->accept ? s->accept (r, s->accept_data) : NULL;
  pass = pass && why == NULL;
  out->probes++;
  if (s->probe)
    s->probe (out->probes, c.rate, r, pass, s->probe_data);
  note_probe (b, out, r, pass, why);
  *(pass ? &b->lo : &b->hi) = c.rate;
  if (b->lo > 0 && b->hi > 0)
    b->rate = (b->lo + b->hi) / 2;
  else
    b->rate = pass ? MIN (c.rate * 2, MAX_RATE) : c.rate / 2;
  return TRUE;
}

static gboolean
no_capacity (const Bracket *b, const SedpLoadgenSearch *s, const SedpLoadgenCapacity *out,
             GError **error)
{
  g_autofree char *refused =
    b->refused_why ? g_strdup_printf ("; %.3g requests/s kept the p99 and the errors but %s",
                                      b->refused_rate, b->refused_why)
                   : NULL;
  g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_NO_CAPACITY,
               "no rate met the SLO in %u probes: the lowest, %.3g requests/s, had p99 %.3f ms "
               "(the SLO: at most %.3f ms) and %.2f %% errors (the bound: under %.2f %%)%s; "
               "raise the SLO or relieve the target",
               out->probes, out->lowest_failing_rps, b->hi_p99_ms, s->slo_p99_ms,
               100 * b->hi_error_share, 100 * s->max_error_share, refused ? refused : "");
  return FALSE;
}

gboolean
sedp_loadgen_find_capacity (SedpLoadgen *gen, const SedpLoadgenConfig *config,
                            const SedpLoadgenSearch *s, SedpLoadgenCapacity *out, GError **error)
{
  g_return_val_if_fail (gen != NULL && config != NULL && s != NULL && out != NULL, FALSE);
  memset (out, 0, sizeof *out);
  Bracket b = {0};
  b.rate = s->start_rate;
  SedpLoadgenConfig probe_config = *config;
  probe_config.mode = SEDP_LOADGEN_OPEN;
  probe_config.rate = 1; /* set by each probe */
  if (!sedp_loadgen_search_check (s, error) || !sedp_loadgen_config_check (&probe_config, error))
    return FALSE;
  if (b.rate <= 0 && !estimate (gen, config, &b.rate, error))
    return FALSE;
  out->estimate_rps = b.rate;
  b.floor = b.rate / 1000;
  gboolean ok = TRUE;
  while (ok && !search_done (&b, s, out->probes))
    ok = probe (gen, config, s, &b, out, error);
  ok = ok && (out->capacity_rps > 0 || no_capacity (&b, s, out, error));
  g_free (b.refused_why);
  return ok;
}
