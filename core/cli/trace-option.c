/* sedp run / sedp serve — the --trace and --trace-sample options (docs/observability.md). */
#include "cli.h"

#include "../runtime/trace.h"

#include <errno.h>
#include <stdio.h>

SedpTrace *
sedp_cli_trace_open (const char *subcommand, const char *path, gint sample, gboolean *ok)
{
  *ok = TRUE;
  if (sample < 1) {
    g_autofree char *m = g_strdup_printf ("--trace-sample must be 1 or more (one request in N is "
                                          "traced), not %d", sample);
    sedp_cli_error (subcommand, m);
    *ok = FALSE;
    return NULL;
  }
  if (path == NULL)
    return NULL;
  FILE *f = fopen (path, "w"); /* fail now, not after the run */
  if (f == NULL) {
    g_autofree char *m = g_strdup_printf ("%s: cannot write the trace: %s", path, g_strerror (errno));
    sedp_cli_error (subcommand, m);
    *ok = FALSE;
    return NULL;
  }
  fclose (f);
  SedpTrace *trace = sedp_trace_new (path, (guint) sample, SEDP_TRACE_DEFAULT_MAX_EVENTS);
  sedp_trace_set_default (trace);
  return trace;
}

gboolean
sedp_cli_trace_close (const char *subcommand, SedpTrace *trace, gboolean quiet)
{
  if (trace == NULL)
    return TRUE;
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_trace_write (trace, &error);
  if (!ok)
    sedp_cli_error (subcommand, error->message);
  else if (!quiet || sedp_trace_get_dropped (trace) > 0) {
    g_autofree char *dropped =
        sedp_trace_get_dropped (trace) == 0
            ? g_strdup ("")
            : g_strdup_printf (" (%" G_GUINT64_FORMAT " more dropped beyond the bound of %u)",
                               sedp_trace_get_dropped (trace), SEDP_TRACE_DEFAULT_MAX_EVENTS);
    fprintf (stderr, "sedp %s: trace of %" G_GUINT64_FORMAT " sampled requests: %" G_GUINT64_FORMAT
                     " events written to %s%s\n",
             subcommand, sedp_trace_get_n_sampled (trace), sedp_trace_get_n_events (trace),
             sedp_trace_get_path (trace), dropped);
  }
  sedp_trace_free (trace);
  return ok;
}
