/* sedp tune — what it writes: the tuned pipeline (-o), the table of the baseline against the
 * tuned point (stdout), and the JSON report (--report). */
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

/* The baseline's CPU per request: its re-measured median, else its one measure. */
static double
baseline_cpu (const Tune *t)
{
  return t->base_rep.n_repeats ? t->base_rep.median_cpu_s_per_request
                               : t->baseline.r.cpu_s_per_request;
}

static double
baseline_p99 (const Tune *t)
{
  return t->base_rep.n_repeats ? t->base_rep.worst_p99_ms : t->baseline.r.p99_ms;
}

gboolean
tune_write_pipeline (const Tune *t, GError **error)
{
  const TuneEval *c = chosen (t);
  g_autoptr (GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *date = g_date_time_format (now, "%Y-%m-%d %H:%M");
  g_autofree char *tuned = c ? g_strdup_printf ("%.4g ms/request", 1e3 * t->fin_rep[t->chosen].median_cpu_s_per_request)
                             : g_strdup ("no candidate beat the baseline, values unchanged");
  g_autofree char *body = g_strdup_printf (
    "# Tuned by sedp tune on %s at %g requests/s, p99 SLO %g ms: CPU baseline %.4g ms/request, "
    "tuned %s\n%s", date, t->o.rate, t->o.slo_p99_ms, 1e3 * baseline_cpu (t), tuned,
    c ? c->text : t->text);
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
  double cpu = c ? t->fin_rep[t->chosen].median_cpu_s_per_request : baseline_cpu (t);
  double p99 = c ? t->fin_rep[t->chosen].worst_p99_ms : baseline_p99 (t);
  printf ("%-40s %16.4g %16.4g\n", "cpu per request (ms, median)", 1e3 * baseline_cpu (t), 1e3 * cpu);
  printf ("%-40s %16.4g %16.4g\n", "p99 (ms, worst)", baseline_p99 (t), p99);
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
  add_number (b, "p99_ms", e->r.feasible ? e->r.p99_ms : NAN);
  json_builder_set_member_name (b, "errors");
  json_builder_add_int_value (b, (gint64) e->r.errors);
  add_number (b, "error_share", e->r.error_share);
  json_builder_set_member_name (b, "feasible");
  json_builder_add_boolean_value (b, e->feasible);
  json_builder_set_member_name (b, "reason");
  if (e->reason)
    json_builder_add_string_value (b, e->reason);
  else
    json_builder_add_null_value (b);
  json_builder_end_object (b);
}

/* "chosen": the tuned point, re-measured; the baseline's values when it is kept. */
static void
add_chosen (JsonBuilder *b, const Tune *t)
{
  const TuneEval *c = chosen (t);
  json_builder_set_member_name (b, "chosen");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "improved");
  json_builder_add_boolean_value (b, c != NULL);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, c ? c->index : 0);
  add_values (b, t, c ? c->values : t->baseline.values);
  add_number (b, "median_cpu_s_per_request",
              c ? t->fin_rep[t->chosen].median_cpu_s_per_request : baseline_cpu (t));
  add_number (b, "worst_p99_ms", c ? t->fin_rep[t->chosen].worst_p99_ms : baseline_p99 (t));
  add_number (b, "baseline_median_cpu_s_per_request", baseline_cpu (t));
  json_builder_end_object (b);
}

/* The settings the tune ran with. */
static void
add_settings (JsonBuilder *b, const Tune *t)
{
  json_builder_set_member_name (b, "pipeline");
  json_builder_add_string_value (b, t->path);
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
