/* sedp tune — what it writes: the tuned pipeline (-o), the table of the baseline against the
 * tuned point (stdout), and the JSON report (--report); each in the mode's objective
 * (tune-objective.c). */
#include "cmd-tune.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>

char *
tune_start_value (const SedpTuneSpace *space, guint i)
{
  const SedpTuneParam *p = sedp_tune_space_param (space, i);
  if (isnan (p->start))
    return g_strdup ("(default)");
  switch (p->type) {
  case SEDP_TUNE_INT:
    return g_strdup_printf ("%.0f", p->start);
  case SEDP_TUNE_BOOL:
    return g_strdup (p->start != 0 ? "true" : "false");
  case SEDP_TUNE_ENUM:
    return g_strdup (p->choices[(guint) p->start]);
  default:
    return g_strdup_printf ("%.17g", p->start);
  }
}

/* The chosen candidate, or NULL when the baseline is kept. */
static const TuneEval *
chosen (const Tune *t)
{
  return t->chosen < 0 ? NULL : g_ptr_array_index (t->finalists, t->chosen);
}

/* The baseline's value, shown (tune_value()): its re-measured median, else its one measure. */
static double
baseline_value (const Tune *t)
{
  return t->rep[0].n_repeats ? tune_rep_value (t, &t->rep[0]) : tune_value (t, &t->baseline.r);
}

/* The baseline's p99: its re-measured worst, else its one measure. */
static double
baseline_p99 (const Tune *t)
{
  return t->rep[0].n_repeats ? t->rep[0].worst_p99_ms : t->baseline.r.p99_ms;
}

/* The tuned point's value, shown: the chosen finalist's re-measured median, else the
 * baseline's. */
static double
tuned_value (const Tune *t)
{
  return t->chosen < 0 ? baseline_value (t) : tune_rep_value (t, &t->rep[1 + t->chosen]);
}

/* The tuned point's p99: the chosen finalist's re-measured worst, else the baseline's. */
static double
tuned_p99 (const Tune *t)
{
  return t->chosen < 0 ? baseline_p99 (t) : t->rep[1 + t->chosen].worst_p99_ms;
}

gboolean
tune_write_pipeline (const Tune *t, GError **error)
{
  const TuneEval *c = chosen (t);
  const TuneObjective *obj = tune_objective (t);
  g_autoptr (GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *date = g_date_time_format (now, "%Y-%m-%d %H:%M");
  g_autofree char *at = tune_conditions (t);
  g_autofree char *tuned = c ? g_strdup_printf ("%.4g %s", tuned_value (t), obj->long_unit)
                             : g_strdup ("no candidate beat the baseline, values unchanged");
  g_autofree char *body = g_strdup_printf (
    "# Tuned by sedp tune on %s %s: %s baseline %.4g %s, tuned %s\n%s", date, at, obj->title,
    baseline_value (t), obj->long_unit, tuned, c ? c->text : t->text);
  return g_file_set_contents (t->o.output, body, -1, error);
}

void
tune_print_table (const Tune *t)
{
  const TuneEval *c = chosen (t);
  if (c == NULL)
    printf ("No candidate beat the baseline within the SLO of %g ms: %s keeps the original "
            "values.\n", t->o.slo_p99_ms, t->o.output);
  printf ("%-40s %16s %16s\n", "", "baseline", "tuned");
  guint n = sedp_tune_space_n_params (t->space);
  for (guint i = 0; i < n; i++) {
    const char *old = t->baseline.values[i], *new = c ? c->values[i] : old;
    if (g_strcmp0 (old, new) != 0)
      printf ("%-40s %16s %16s\n", sedp_tune_space_param (t->space, i)->address, old, new);
  }
  printf ("%-40s %16.4g %16.4g\n", tune_objective (t)->row, baseline_value (t), tuned_value (t));
  printf ("%-40s %16.4g %16.4g\n", "p99 (ms, worst)", baseline_p99 (t), tuned_p99 (t));
}

/* ---- the report ---- */

/* A number, or null when it is not finite (JSON has no infinity). */
static void
add_number (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

/* "parameters": {address: value, …}. */
static void
add_values (JsonBuilder *b, const Tune *t, char **values)
{
  json_builder_set_member_name (b, "parameters");
  json_builder_begin_object (b);
  for (guint i = 0; values[i]; i++) {
    json_builder_set_member_name (b, sedp_tune_space_param (t->space, i)->address);
    json_builder_add_string_value (b, values[i]);
  }
  json_builder_end_object (b);
}

/* One evaluation's object. */
static void
add_eval (JsonBuilder *b, const Tune *t, const TuneEval *e)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, e->index);
  add_values (b, t, e->values);
  add_number (b, "cpu_s_per_request", e->r.feasible ? e->r.cpu_s_per_request : NAN);
  add_number (b, "capacity_rps", e->r.feasible && t->o.throughput ? e->r.capacity_rps : NAN);
  add_number (b, "p99_ms", e->r.feasible ? e->r.p99_ms : NAN);
  json_builder_set_member_name (b, "measures");
  json_builder_add_int_value (b, e->measures);
  json_builder_set_member_name (b, "errors");
  json_builder_add_int_value (b, (gint64) e->r.errors);
  add_number (b, "error_share", e->r.error_share);
  json_builder_set_member_name (b, "degraded");
  json_builder_add_int_value (b, (gint64) e->r.degraded);
  json_builder_set_member_name (b, "feasible");
  json_builder_add_boolean_value (b, e->feasible);
  json_builder_set_member_name (b, "reason");
  if (e->reason)
    json_builder_add_string_value (b, e->reason);
  else
    json_builder_add_null_value (b);
  json_builder_end_object (b);
}

/* "chosen": the tuned point, re-measured; the baseline's values when it is kept. The medians
 * are named after the objective's field: median_cpu_s_per_request, or median_capacity_rps. */
static void
add_chosen (JsonBuilder *b, const Tune *t)
{
  const TuneEval *c = chosen (t);
  const TuneObjective *obj = tune_objective (t);
  g_autofree char *median = g_strconcat ("median_", obj->field, NULL);
  g_autofree char *base = g_strconcat ("baseline_median_", obj->field, NULL);
  json_builder_set_member_name (b, "chosen");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "improved");
  json_builder_add_boolean_value (b, c != NULL);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, c ? c->index : 0);
  add_values (b, t, c ? c->values : t->baseline.values);
  add_number (b, median, tuned_value (t) / obj->scale);
  add_number (b, "worst_p99_ms", tuned_p99 (t));
  add_number (b, base, baseline_value (t) / obj->scale);
  json_builder_end_object (b);
}

/* Re-measured @r of evaluation @index: its index, each repeat's value (in the field's unit) and
 * their median. */
static void
add_repeats (JsonBuilder *b, const Tune *t, guint index, const SedpTuneRepeated *r)
{
  const TuneObjective *obj = tune_objective (t);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, index);
  json_builder_set_member_name (b, obj->field);
  json_builder_begin_array (b);
  for (guint i = 0; i < r->n_repeats; i++) {
    double v = tune_value (t, &r->results[i]) / obj->scale;
    if (isfinite (v))
      json_builder_add_double_value (b, v);
    else
      json_builder_add_null_value (b);
  }
  json_builder_end_array (b);
  add_number (b, "median", tune_rep_value (t, r) / obj->scale);
  json_builder_end_object (b);
}

/* The evaluation index of re-measured candidate @i (0 the baseline, 1 + i finalist i). */
static guint
remeasured_index (const Tune *t, guint i)
{
  return i == 0 ? 0 : ((const TuneEval *) g_ptr_array_index (t->finalists, i - 1))->index;
}

/* "remeasured": the baseline and each finalist, re-measured in interleaved rounds; and
 * "remeasure_order": the evaluation indexes in the order measured. Empty when not run. */
static void
add_remeasure (JsonBuilder *b, const Tune *t)
{
  guint n = t->order ? 1 + t->finalists->len : 0;
  json_builder_set_member_name (b, "remeasured");
  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++)
    add_repeats (b, t, remeasured_index (t, i), &t->rep[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "remeasure_order");
  json_builder_begin_array (b);
  for (guint k = 0; t->order && k < t->order->len; k++)
    json_builder_add_int_value (b, remeasured_index (t, g_array_index (t->order, guint, k)));
  json_builder_end_array (b);
}

/* The settings the tune ran with. */
static void
add_settings (JsonBuilder *b, const Tune *t)
{
  json_builder_set_member_name (b, "pipeline");
  json_builder_add_string_value (b, t->path);
  json_builder_set_member_name (b, "maximize");
  if (t->o.throughput)
    json_builder_add_string_value (b, "throughput");
  else
    json_builder_add_null_value (b);
  add_number (b, "rate", t->o.rate);
  add_number (b, "slo_p99_ms", t->o.slo_p99_ms);
  json_builder_set_member_name (b, "seed");
  json_builder_add_int_value (b, t->o.seed);
  json_builder_set_member_name (b, "method");
  json_builder_add_string_value (b, tune_method_name (t->o.method));
}

/* How the tune went: whether a signal stopped it, its journal, what was replayed from it. */
static void
add_course (JsonBuilder *b, const Tune *t)
{
  json_builder_set_member_name (b, "interrupted");
  json_builder_add_boolean_value (b, t->signal != 0);
  json_builder_set_member_name (b, "journal");
  json_builder_add_string_value (b, t->journal_path);
  json_builder_set_member_name (b, "replayed");
  json_builder_add_int_value (b, t->replayed);
}

/* "baseline" (null when a signal came before it was measured) and "evaluations". */
static void
add_evals (JsonBuilder *b, const Tune *t)
{
  json_builder_set_member_name (b, "baseline");
  if (t->baseline.text)
    add_eval (b, t, &t->baseline);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "evaluations");
  json_builder_begin_array (b);
  for (guint i = 0; t->evals && i < t->evals->len; i++)
    add_eval (b, t, g_ptr_array_index (t->evals, i));
  json_builder_end_array (b);
}

gboolean
tune_write_report (const Tune *t, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_settings (b, t);
  add_course (b, t);
  add_evals (b, t);
  add_remeasure (b, t);
  if (t->signal == 0) {
    add_chosen (b, t);
  } else { /* no choice was made */
    json_builder_set_member_name (b, "chosen");
    json_builder_add_null_value (b);
  }
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autofree char *json = json_to_string (root, TRUE);
  return g_file_set_contents (t->o.report, json, -1, error);
}
