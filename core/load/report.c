/* sedp — RESULT lines of a load generator run (see report.h). */
#include "report.h"

static void
format_latencies (const SedpLoadgenResults *r, const char *p, GString *out)
{
  g_string_append_printf (out, "RESULT %sp50_ms=%.3f %sp90_ms=%.3f %sp99_ms=%.3f %sp999_ms=%.3f\n",
                          p, sedp_loadgen_results_get_latency_ms (r, 0.5), p,
                          sedp_loadgen_results_get_latency_ms (r, 0.9), p,
                          sedp_loadgen_results_get_latency_ms (r, 0.99), p,
                          sedp_loadgen_results_get_latency_ms (r, 0.999));
}

static void
format_errors (const SedpLoadgenResults *r, const char *p, GString *out)
{
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (r);
  g_string_append_printf (out, "RESULT %serrors=%" G_GUINT64_FORMAT "\nRESULT", p,
                          sedp_loadgen_results_get_errors (r));
  for (guint k = 0; k < SEDP_LOADGEN_N_FAILURES; k++)
    g_string_append_printf (out, " %serrors_%s=%" G_GUINT64_FORMAT, p,
                            sedp_loadgen_failure_to_string (k), c->failures[k]);
  g_string_append_c (out, '\n');
}

static void
format_statuses (const SedpLoadgenResults *r, const char *p, GString *out)
{
  guint n = sedp_loadgen_results_get_n_statuses (r);
  if (n == 0)
    return;
  g_string_append (out, "RESULT");
  for (guint i = 0; i < n; i++) {
    guint64 count;
    const char *name = sedp_loadgen_results_get_status (r, i, &count);
    g_string_append_printf (out, " %sstatus_%s=%" G_GUINT64_FORMAT, p, name, count);
  }
  g_string_append_c (out, '\n');
}

void
sedp_loadgen_results_format (const SedpLoadgenResults *r, const char *p, GString *out)
{
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (r);
  gboolean open = c->mode == SEDP_LOADGEN_OPEN;
  if (open) {
    g_string_append_printf (out, "RESULT %srate=%.1f %sduration_s=%g\n", p, c->rate, p, c->duration_s);
    g_string_append_printf (out, "RESULT %soffered_rps=%.1f\n", p, sedp_loadgen_results_get_offered_rps (r));
  }
  g_string_append_printf (out, "RESULT %srequests_per_s=%.1f\n", p, sedp_loadgen_results_get_requests_per_s (r));
  g_string_append_printf (out, "RESULT %sitems_per_s=%.1f\n", p, sedp_loadgen_results_get_items_per_s (r));
  format_latencies (r, p, out);
  format_errors (r, p, out);
  if (open) {
    g_string_append_printf (out, "RESULT %sanswered_share=%.4f\n", p, sedp_loadgen_results_get_answered_share (r));
    g_string_append_printf (out, "RESULT %slate_sends=%" G_GUINT64_FORMAT "\n", p, c->late_sends);
  }
  format_statuses (r, p, out);
}
