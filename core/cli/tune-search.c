/* sedp tune — the search (the journal replayed, the baseline, then ask, apply, evaluate, tell
 * and journal until the budget is spent or a signal stops it) and the final choice among the
 * best feasible candidates, re-measured. */
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

/* Sets @e's violations, feasibility and reason from its result and the worker violation. */
static void
judge (const Tune *t, TuneEval *e, double workers_over)
{
  double *v = e->violations;
  double slo = t->o.slo_p99_ms;
  v[TUNE_C_WORKERS] = workers_over;
  v[TUNE_C_BUILD] = e->r.feasible ? 0 : 1;
  v[TUNE_C_P99] = e->r.feasible ? MAX (0, e->r.p99_ms - slo) / slo : 0;
  v[TUNE_C_ERRORS] = e->r.feasible ? e->r.error_share : 0;
  if (!e->r.feasible)
    e->reason = g_strdup (e->r.reason);
  else if (v[TUNE_C_WORKERS] > 0)
    e->reason = g_strdup_printf ("%.0f worker threads over max_workers %u", workers_over,
                                 sedp_tune_space_max_workers (t->space));
  else if (v[TUNE_C_P99] > 0)
    e->reason = g_strdup_printf ("p99 %.3g ms over the SLO of %g ms", e->r.p99_ms, slo);
  else if (v[TUNE_C_ERRORS] > 0)
    e->reason = g_strdup_printf ("%.3g %% of the requests not answered OK (first: %s)",
                                 100 * e->r.error_share, e->r.first_error ? e->r.first_error : "?");
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
  if (!sedp_tune_evaluate (&t->measure, e->text, t->path, &e->r, error))
    return FALSE;
  judge (t, e, workers_over);
  e->objective = e->r.feasible ? e->r.cpu_s_per_request : NAN;
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
  if (!sedp_tune_evaluate (&t->measure, b->text, t->path, &b->r, error))
    return FALSE;
  judge (t, b, 0);
  b->objective = b->r.feasible ? b->r.cpu_s_per_request : NAN;
  tune_progress_baseline (t);
  return tune_journal_append (t, b, error);
}

/* The baseline unless replayed, then candidates while the budget (counting the replayed ones
 * and their wall time) allows and no signal came. */
static gboolean
search_loop (Tune *t, SedpCmaes *es, GError **error)
{
  if (t->baseline.text == NULL && (tune_stopped (t) || !measure_baseline (t, error)))
    return t->signal != 0;
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

static int
by_cpu (gconstpointer a, gconstpointer b)
{
  const TuneEval *x = *(TuneEval *const *) a, *y = *(TuneEval *const *) b;
  return (x->r.cpu_s_per_request > y->r.cpu_s_per_request) -
         (x->r.cpu_s_per_request < y->r.cpu_s_per_request);
}

/* Up to TUNE_FINALISTS feasible candidates of distinct texts, the cheapest first. */
static void
pick_finalists (Tune *t)
{
  g_autoptr (GPtrArray) feasible = g_ptr_array_new ();
  for (guint i = 0; i < t->evals->len; i++) {
    TuneEval *e = g_ptr_array_index (t->evals, i);
    if (e->feasible && strcmp (e->text, t->text) != 0)
      g_ptr_array_add (feasible, e);
  }
  g_ptr_array_sort (feasible, by_cpu);
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

/* Whether re-measured @r keeps the SLO and has no more errors than the baseline's @base. */
static gboolean
holds (const Tune *t, const SedpTuneRepeated *r, const SedpTuneRepeated *base)
{
  return r->feasible && r->worst_p99_ms <= t->o.slo_p99_ms &&
         r->worst_error_share <= base->worst_error_share;
}

/* Whether finalist @r beats the re-measured baseline. */
static gboolean
beats_baseline (const Tune *t, const SedpTuneRepeated *r)
{
  if (!holds (t, r, &t->base_rep))
    return FALSE;
  return !holds (t, &t->base_rep, &t->base_rep) ||
         r->median_cpu_s_per_request < t->base_rep.median_cpu_s_per_request;
}

gboolean
tune_choose (Tune *t, GError **error)
{
  pick_finalists (t);
  if (t->finalists->len == 0 || tune_stopped (t))
    return TRUE;
  if (!t->o.quiet)
    fprintf (stderr, "sedp tune: re-measuring the baseline and %u best candidates %u times\n",
             t->finalists->len, TUNE_REPEATS);
  if (!sedp_tune_evaluate_repeat (&t->measure, t->text, t->path, TUNE_REPEATS, &t->base_rep, error))
    return FALSE;
  double best = INFINITY;
  for (guint i = 0; i < t->finalists->len; i++) {
    const TuneEval *e = g_ptr_array_index (t->finalists, i);
    SedpTuneRepeated *r = &t->fin_rep[i];
    if (tune_stopped (t))
      return TRUE;
    if (!sedp_tune_evaluate_repeat (&t->measure, e->text, t->path, TUNE_REPEATS, r, error))
      return FALSE;
    if (beats_baseline (t, r) && r->median_cpu_s_per_request < best) {
      best = r->median_cpu_s_per_request;
      t->chosen = (int) i;
    }
  }
  return TRUE;
}
