/* sedp tune — the search (the journal replayed, the baseline, then ask, apply, evaluate, tell
 * and journal until the budget is spent or a signal stops it) and the final choice among the
 * best feasible candidates, re-measured with the baseline in interleaved rounds. Each measure is
 * sedp_tune_evaluate() at --rate, or with --maximize throughput sedp_tune_find_capacity(). */
#include "cmd-tune.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void
tune_eval_clear (TuneEval *e)
{
  g_clear_pointer (&e->values, g_strfreev);
  g_clear_pointer (&e->text, g_free);
  g_clear_pointer (&e->reason, g_free);
  sedp_tune_result_clear (&e->r);
}

void
tune_eval_free (gpointer e)
{
  if (e == NULL) /* moved out of its array (tune_resume_replay()) */
    return;
  tune_eval_clear (e);
  g_free (e);
}

/* @r's degraded answers per request due (0 when none: any is a violation of TUNE_C_ERRORS). */
static double
degraded_share (const SedpTuneResult *r)
{
  return r->degraded ? (double) r->degraded / (double) MAX (r->arrivals, 1) : 0;
}

/* The p99 and error violations of built @e: measured at --rate, or with --maximize throughput
 * part of the capacity's definition, so only a capacity of 0 (no rate kept the SLO) violates. */
static void
judge_service (const Tune *t, TuneEval *e)
{
  double *v = e->violations, slo = t->o.slo_p99_ms;
  if (t->o.throughput) {
    v[TUNE_C_P99] = e->r.capacity_rps > 0 ? 0 : 1;
    v[TUNE_C_ERRORS] = 0;
  } else {
    v[TUNE_C_P99] = MAX (0, e->r.p99_ms - slo) / slo;
    v[TUNE_C_ERRORS] = e->r.error_share + degraded_share (&e->r);
  }
}

/* Why built @e, over no worker limit, breaks the SLO (NULL: it keeps it). Free it. */
static char *
service_reason (const Tune *t, const TuneEval *e)
{
  const double *v = e->violations;
  if (v[TUNE_C_P99] > 0 && t->o.throughput)
    return g_strdup_printf ("no rate kept the p99 within %g ms: %s", t->o.slo_p99_ms,
                            e->r.first_error ? e->r.first_error : "?");
  if (v[TUNE_C_P99] > 0)
    return g_strdup_printf ("p99 %.3g ms over the SLO of %g ms", e->r.p99_ms, t->o.slo_p99_ms);
  if (v[TUNE_C_ERRORS] > 0 && e->r.errors > 0)
    return g_strdup_printf ("%.3g %% of the requests not answered OK (first: %s)",
                            100 * e->r.error_share, e->r.first_error ? e->r.first_error : "?");
  if (v[TUNE_C_ERRORS] > 0) {
    g_autofree char *why = sedp_tune_degraded_reason (e->r.degraded);
    return g_strdup_printf ("answers degraded: %s", why);
  }
  return NULL;
}

/* Sets @e's violations, feasibility, reason and objective from its result and the worker
 * violation. */
static void
judge (const Tune *t, TuneEval *e, double workers_over)
{
  double *v = e->violations;
  memset (v, 0, sizeof e->violations);
  v[TUNE_C_WORKERS] = workers_over;
  v[TUNE_C_BUILD] = e->r.feasible ? 0 : 1;
  if (e->r.feasible)
    judge_service (t, e);
  e->objective = tune_told (t, &e->r);
  if (!e->r.feasible)
    e->reason = g_strdup (e->r.reason);
  else if (v[TUNE_C_WORKERS] > 0)
    e->reason = g_strdup_printf ("%.0f worker threads over max_workers %u", workers_over,
                                 sedp_tune_space_max_workers (t->space));
  else
    e->reason = service_reason (t, e);
  e->feasible = e->reason == NULL;
}

/* Whether the budget allows another candidate. */
static gboolean
budget_left (const Tune *t)
{
  if (t->o.budget_evals > 0)
    return t->evals->len < (guint) t->o.budget_evals;
  return (g_get_monotonic_time () - t->started_us) / 1e6 < t->o.budget_s;
}

void
tune_eval_derive (const Tune *t, TuneEval *e, double *workers_over)
{
  guint n = sedp_tune_space_n_params (t->space);
  e->values = g_new0 (char *, n + 1);
  for (guint i = 0; i < n; i++)
    e->values[i] = e->index == 0 ? tune_start_value (t->space, i)
                                 : sedp_tune_space_value (t->space, i, e->x[i]);
  if (e->index == 0)
    e->text = g_strdup (t->text);
  else
    e->text = sedp_tune_space_apply (t->space, e->x, t->text, workers_over);
}

/* Measures @text into @r: at --rate, or with --maximize throughput its capacity at the SLO
 * (searched from @t->measure.rate). */
static gboolean
measure_text (Tune *t, const char *text, SedpTuneResult *r, GError **error)
{
  if (t->o.throughput)
    return sedp_tune_find_capacity (&t->measure, text, t->path, t->o.slo_p99_ms, r, error);
  return sedp_tune_evaluate (&t->measure, text, t->path, r, error);
}

/* Whether feasible @e's one measure leaves close whether it is the best so far: it is the best,
 * or within TUNE_CLOSE of it. */
static gboolean
close_call (const Tune *t, const TuneEval *e)
{
  double v = tune_value (t, &e->r), best = tune_best (t);
  return e->feasible && isfinite (v) && isfinite (best) && fabs (v - best) <= TUNE_CLOSE * fabs (best);
}

/* @again folded into @r: the mean of the two CPU per request and capacity, the worse p99 and
 * error share (a constraint must hold in both), the wall times summed. */
static void
fold_repeat (SedpTuneResult *r, const SedpTuneResult *again)
{
  r->cpu_s_per_request = (r->cpu_s_per_request + again->cpu_s_per_request) / 2;
  r->capacity_rps = (r->capacity_rps + again->capacity_rps) / 2;
  r->p99_ms = MAX (r->p99_ms, again->p99_ms);
  r->error_share = MAX (r->error_share, again->error_share);
  r->errors = MAX (r->errors, again->errors);
  r->degraded = MAX (r->degraded, again->degraded);
  r->wall_s += again->wall_s;
}

/* A close call (close_call()) measured once more and judged on both measures; a repeat that
 * does not build (it built once) leaves the first measure. */
static gboolean
measure_again (Tune *t, TuneEval *e, double workers_over, GError **error)
{
  g_auto (SedpTuneResult) again = {0};
  if (!close_call (t, e) || tune_stopped (t))
    return TRUE;
  if (!measure_text (t, e->text, &again, error))
    return FALSE;
  if (!again.feasible)
    return TRUE;
  fold_repeat (&e->r, &again);
  e->measures = 2;
  g_clear_pointer (&e->reason, g_free);
  judge (t, e, workers_over);
  return TRUE;
}

/* Asks, applies, evaluates, tells and journals one candidate. */
static gboolean
one_candidate (Tune *t, SedpCmaes *es, GError **error)
{
  TuneEval *e = g_new0 (TuneEval, 1);
  g_ptr_array_add (t->evals, e);
  e->index = t->evals->len;
  if (!sedp_cmaes_ask (es, e->x))
    g_assert_not_reached (); /* every candidate is told before the next is asked */
  double workers_over = 0;
  tune_eval_derive (t, e, &workers_over);
  if (!measure_text (t, e->text, &e->r, error))
    return FALSE;
  e->measures = 1;
  judge (t, e, workers_over);
  if (!measure_again (t, e, workers_over, error))
    return FALSE;
  sedp_cmaes_tell (es, e->x, e->objective, e->violations);
  tune_progress_eval (t, e);
  return tune_journal_append (t, e, error);
}

/* The optimiser over @t's space. */
static SedpCmaes *
make_optimiser (const Tune *t, GError **error)
{
  SedpCmaesOptions opt;
  sedp_cmaes_options_init (&opt);
  sedp_tune_space_to_cmaes (t->space, &opt);
  opt.method = t->o.method;
  opt.seed = (guint64) t->o.seed;
  opt.n_constraints = TUNE_N_CONSTRAINTS;
  return sedp_cmaes_new (&opt, error);
}

/* The unmodified pipeline, measured once and journaled. */
static gboolean
measure_baseline (Tune *t, GError **error)
{
  TuneEval *b = &t->baseline;
  tune_eval_derive (t, b, NULL);
  if (!measure_text (t, b->text, &b->r, error))
    return FALSE;
  b->measures = 1;
  judge (t, b, 0);
  tune_progress_baseline (t);
  return tune_journal_append (t, b, error);
}

/* --maximize throughput without --rate: the candidates' capacity searches start from the
 * baseline's capacity (a good estimate), or TUNE_START_RPS when it kept the SLO at no rate. */
static void
set_start_rate (Tune *t)
{
  if (t->o.throughput && isnan (t->o.rate))
    t->measure.rate = t->baseline.r.capacity_rps > 0 ? t->baseline.r.capacity_rps : TUNE_START_RPS;
}

/* The baseline unless replayed, then candidates while the budget (counting the replayed ones
 * and their wall time) allows and no signal came. */
static gboolean
search_loop (Tune *t, SedpCmaes *es, GError **error)
{
  if (t->baseline.text == NULL && (tune_stopped (t) || !measure_baseline (t, error)))
    return t->signal != 0;
  set_start_rate (t);
  t->started_us = g_get_monotonic_time () - (gint64) (1e6 * t->replayed_wall_s);
  while (!tune_stopped (t) && budget_left (t))
    if (!one_candidate (t, es, error))
      return FALSE;
  return TRUE;
}

gboolean
tune_search (Tune *t, GError **error)
{
  g_autoptr (SedpCmaes) es = make_optimiser (t, error);
  if (es == NULL)
    return FALSE;
  t->evals = g_ptr_array_new_with_free_func (tune_eval_free);
  gboolean ok = tune_resume_replay (t, es, error) && search_loop (t, es, error);
  tune_progress_end (t);
  return ok;
}

/* ---- the choice ---- */

/* By the objective told, the best first (the lowest CPU, or the highest capacity). */
static int
by_objective (gconstpointer a, gconstpointer b)
{
  const TuneEval *x = *(TuneEval *const *) a, *y = *(TuneEval *const *) b;
  return (x->objective > y->objective) - (x->objective < y->objective);
}

/* Up to TUNE_FINALISTS feasible candidates of distinct texts, the best first. */
static void
pick_finalists (Tune *t)
{
  g_autoptr (GPtrArray) feasible = g_ptr_array_new ();
  for (guint i = 0; i < t->evals->len; i++) {
    TuneEval *e = g_ptr_array_index (t->evals, i);
    if (e->feasible && strcmp (e->text, t->text) != 0)
      g_ptr_array_add (feasible, e);
  }
  g_ptr_array_sort (feasible, by_objective);
  t->finalists = g_ptr_array_new ();
  for (guint i = 0; i < feasible->len && t->finalists->len < TUNE_FINALISTS; i++) {
    TuneEval *e = g_ptr_array_index (feasible, i);
    gboolean seen = FALSE;
    for (guint j = 0; j < t->finalists->len; j++)
      seen |= strcmp (((TuneEval *) g_ptr_array_index (t->finalists, j))->text, e->text) == 0;
    if (!seen)
      g_ptr_array_add (t->finalists, e);
  }
}

/* Whether re-measured @r holds: every repeat built and its median is a value (with --maximize
 * throughput, a capacity above 0: the SLO and the errors are the capacity's definition); at
 * --rate, its worst p99 also keeps the SLO and its worst error share is no higher than the
 * re-measured baseline's, and its answers were degraded no more than the baseline's. */
static gboolean
holds (const Tune *t, const SedpTuneRepeated *r)
{
  double v = tune_rep_value (t, r);
  if (!r->feasible || isnan (v) || (t->o.throughput && v <= 0))
    return FALSE;
  return t->o.throughput || (r->worst_p99_ms <= t->o.slo_p99_ms &&
                             r->worst_error_share <= t->rep[0].worst_error_share &&
                             r->worst_degraded <= t->rep[0].worst_degraded);
}

/* Whether finalist @r beats the re-measured baseline: it holds, and has the better median (or
 * the baseline does not hold). */
static gboolean
beats_baseline (const Tune *t, const SedpTuneRepeated *r)
{
  if (!holds (t, r))
    return FALSE;
  return !holds (t, &t->rep[0]) ||
         tune_better (t, tune_rep_value (t, r), tune_rep_value (t, &t->rep[0]));
}

/* Before each measure of the rounds: FALSE once a signal came; else notes the order. */
static gboolean
before_measure (guint candidate, guint round, gpointer data)
{
  Tune *t = data;
  (void) round;
  if (tune_stopped (t))
    return FALSE;
  g_array_append_val (t->order, candidate);
  return TRUE;
}

/* The baseline and the finalists, re-measured in TUNE_REPEATS interleaved rounds into
 * @t->rep, their order into @t->order, each measure TUNE_FINAL_LONGER times as long as the
 * search's; a signal ends the rounds before the next measure. */
static gboolean
remeasure (Tune *t, GError **error)
{
  const char *texts[1 + TUNE_FINALISTS] = {t->text};
  guint n = 1 + t->finalists->len;
  for (guint i = 1; i < n; i++)
    texts[i] = ((const TuneEval *) g_ptr_array_index (t->finalists, i - 1))->text;
  SedpTuneRounds rounds;
  sedp_tune_rounds_init (&rounds, TUNE_REPEATS);
  rounds.capacity_slo_p99_ms = t->o.throughput ? t->o.slo_p99_ms : 0;
  rounds.before = before_measure;
  rounds.user_data = t;
  t->order = g_array_new (FALSE, FALSE, sizeof (guint));
  if (!t->o.quiet)
    fprintf (stderr, "sedp tune: re-measuring the baseline and %u best candidate%s in %u "
             "interleaved rounds\n", n - 1, n == 2 ? "" : "s", TUNE_REPEATS);
  SedpTuneMeasure longer = t->measure;
  longer.duration_s *= TUNE_FINAL_LONGER;
  return sedp_tune_measure_rounds (&longer, texts, n, t->path, &rounds, t->rep, error);
}

gboolean
tune_choose (Tune *t, GError **error)
{
  pick_finalists (t);
  if (t->finalists->len == 0 || tune_stopped (t))
    return TRUE;
  if (!remeasure (t, error))
    return FALSE;
  if (tune_stopped (t))
    return TRUE;
  double best = NAN;
  for (guint i = 0; i < t->finalists->len; i++) {
    const SedpTuneRepeated *r = &t->rep[1 + i];
    if (beats_baseline (t, r) && tune_better (t, tune_rep_value (t, r), best)) {
      best = tune_rep_value (t, r);
      t->chosen = (int) i;
    }
  }
  return TRUE;
}
