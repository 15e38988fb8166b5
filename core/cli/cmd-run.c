/* sedp run — score a file of requests offline through a pipeline. */
#include "cli.h"

#include "../runtime/trace.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

typedef struct {
  GAsyncQueue *done; /* completed requests (referenced) */
} RunState;

static void
on_done (SedpRequest *request, gpointer user_data)
{
  RunState *st = user_data;
  g_async_queue_push (st->done, sedp_request_ref (request));
}

int
sedp_cmd_run (int argc, char **argv)
{
  char *requests_path = NULL, *out_path = NULL, *metrics_path = NULL, *format_name = NULL;
  g_autofree char *trace_path = NULL;
  gint max_inflight = 256, trace_sample = 1;
  gboolean quiet = FALSE;
  const GOptionEntry entries[] = {
    {"requests", 'r', 0, G_OPTION_ARG_FILENAME, &requests_path,
     "File of requests ('-' for standard input): JSON Lines, PredictRequest JSON lines or a "
     "protobuf request log", "FILE"},
    {"requests-format", 0, 0, G_OPTION_ARG_STRING, &format_name,
     "auto (default: from the name and the first byte), jsonl, predict-jsonl or pb", "FORMAT"},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
     "Where to write one JSON result per request, in input order (default: standard output)", "FILE"},
    {"max-inflight", 0, 0, G_OPTION_ARG_INT, &max_inflight,
     "Requests in flight at once (default 256)", "N"},
    {"metrics", 0, 0, G_OPTION_ARG_FILENAME, &metrics_path,
     "After the run, write every stage's metrics (Prometheus text) and stats to FILE", "FILE"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress or summary on stderr", NULL},
    {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
     "Write a Chrome trace (JSON; Perfetto or chrome://tracing open it) of the sampled requests "
     "to FILE at the end: each stage's queue wait and process call (docs/observability.md)", "FILE"},
    {"trace-sample", 0, 0, G_OPTION_ARG_INT, &trace_sample,
     "Trace one request in N (default 1: every request)", "N"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("run", "PIPELINE --requests FILE",
                       "Scores every request of FILE through PIPELINE and writes the results. "
                       "Requests are submitted concurrently (up to --max-inflight) and results are "
                       "written in input order. A malformed request stops the run with a message "
                       "naming the line (or the record of a protobuf log); requests already "
                       "accepted are finished first. PredictRequests (protobuf logs, "
                       "predict-jsonl) are decoded by the pipeline's data_reader, as in serving.",
                       entries, &argc, &argv))
    return 2;
  g_autofree char *rp = requests_path, *op = out_path, *mp = metrics_path, *fn = format_name;
  if (argc != 2 || rp == NULL) {
    sedp_cli_error ("run", "expected PIPELINE and --requests FILE (see --help)");
    return 2;
  }
  SedpRequestFormat format = SEDP_REQUEST_FORMAT_AUTO;
  if (fn && !sedp_request_format_from_string (fn, &format)) {
    sedp_cli_error ("run", "--requests-format must be auto, jsonl, predict-jsonl or pb");
    return 2;
  }
  if (max_inflight < 1 || max_inflight > 1000000) {
    sedp_cli_error ("run", "--max-inflight must be from 1 to 1000000");
    return 2;
  }
  gboolean trace_ok;
  SedpTrace *trace = sedp_cli_trace_open ("run", trace_path, trace_sample, &trace_ok);
  if (!trace_ok)
    return 2;
  g_auto (GStrv) path = sedp_registry_default_path ();
  g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) path);
  g_autoptr (GError) error = NULL;
  SedpGraph *graph = sedp_graph_load (argv[1], registry, &error);
  if (graph == NULL) {
    sedp_cli_error ("run", error->message);
    sedp_trace_free (trace);
    return 1;
  }
  char **outputs = g_strdupv (graph->spec->outputs);
  /* PredictRequests travel as payloads: the source stage must decode them. */
  const SedpGraphNode *source = &graph->nodes[graph->source];
  gboolean source_decodes = strcmp (source->plugin->name, "data_reader") == 0;
  g_autofree char *no_decoder = g_strdup_printf (
      "%s: the requests of %s are PredictRequests, which the pipeline's source stage decodes, but "
      "its source stage '%s' is plugin '%s', not data_reader",
      argv[1], rp, source->spec->name, source->plugin->name);
  SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
  if (pipeline == NULL || !sedp_pipeline_start (pipeline, &error)) {
    sedp_cli_error ("run", error->message);
    sedp_pipeline_free (pipeline);
    g_strfreev (outputs);
    sedp_trace_free (trace);
    return 1;
  }
  SedpRequestReader *reader = sedp_request_reader_open_format (rp, format, &error);
  FILE *out = stdout;
  if (reader && op && !(out = fopen (op, "w"))) {
    g_set_error (&error, G_FILE_ERROR, g_file_error_from_errno (errno), "%s: cannot write: %s", op,
                 g_strerror (errno));
  }
  if (reader == NULL || out == NULL) {
    sedp_cli_error ("run", error->message);
    sedp_request_reader_close (reader);
    sedp_pipeline_free (pipeline);
    g_strfreev (outputs);
    sedp_trace_free (trace);
    return 1;
  }

  RunState st = {g_async_queue_new ()};
  GQueue order = G_QUEUE_INIT; /* submitted requests, in input order */
  guint inflight = 0, n_requests = 0, by_status[SEDP_STATUS_CANCELLED + 1] = {0};
  gint64 start = g_get_monotonic_time (), last_progress = start;
  /* Progress on a terminal: a line redrawn twice a second; elsewhere (logs): a line every 10 s. */
  gboolean tty = isatty (2), show_progress = !quiet;
  gint64 progress_every = tty ? 500000 : 10000000;
  int status = 0;
  g_autoptr (GString) line = g_string_new (NULL);

  /* Writes out every finished request at the head of the queue. */
#define FLUSH_HEAD()                                                               \
  while (!g_queue_is_empty (&order) && sedp_request_get_result (g_queue_peek_head (&order))) { \
    SedpRequest *head = g_queue_pop_head (&order);                                 \
    g_string_truncate (line, 0);                                                   \
    sedp_result_write_json (head, (const char *const *) outputs, line);            \
    g_string_append_c (line, '\n');                                                \
    fwrite (line->str, 1, line->len, out);                                         \
    by_status[sedp_result_get_status (sedp_request_get_result (head))]++;         \
    sedp_request_unref (head);                                                     \
  }

  for (;;) {
    SedpRequest *req = sedp_request_reader_next (reader, &error);
    if (req == NULL)
      break;
    if (!source_decodes && sedp_request_get_payload (req, NULL, NULL)) {
      g_set_error_literal (&error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, no_decoder);
      sedp_request_unref (req);
      break;
    }
    for (;;) {
      while (inflight >= (guint) max_inflight) {
        sedp_request_unref (g_async_queue_pop (st.done));
        inflight--;
        FLUSH_HEAD ();
      }
      SedpStatus s = sedp_pipeline_submit (pipeline, req, on_done, &st);
      if (s == SEDP_STATUS_OK)
        break;
      /* Overloaded: wait for a completion (or a moment) and try again. */
      SedpRequest *d = g_async_queue_timeout_pop (st.done, 1000);
      if (d) {
        sedp_request_unref (d);
        inflight--;
        FLUSH_HEAD ();
      }
    }
    g_queue_push_tail (&order, req);
    inflight++;
    n_requests++;
    SedpRequest *d;
    while ((d = g_async_queue_try_pop (st.done))) {
      sedp_request_unref (d);
      inflight--;
    }
    FLUSH_HEAD ();
    gint64 now = g_get_monotonic_time ();
    if (show_progress && now - last_progress > progress_every) {
      last_progress = now;
      double pct = 100.0 * sedp_request_reader_progress (reader);
      fprintf (stderr, "%ssedp run: %u requests (%.0f%%), %.0f req/s%s", tty ? "\r" : "",
               n_requests, pct, n_requests / ((now - start) / 1e6), tty ? "   " : "\n");
    }
  }
  if (error) {
    sedp_cli_error ("run", error->message);
    status = 1;
  }
  while (inflight > 0) {
    sedp_request_unref (g_async_queue_pop (st.done));
    inflight--;
  }
  FLUSH_HEAD ();
#undef FLUSH_HEAD
  fflush (out);
  if (out != stdout)
    fclose (out);
  gint64 elapsed = g_get_monotonic_time () - start;
  if (!quiet) {
    if (tty && last_progress != start)
      fprintf (stderr, "\r\033[K");
    fprintf (stderr, "sedp run: %u requests in %.2f s (%.0f req/s): %u ok, %u partial, %u failed, "
                     "%u timeout\n",
             n_requests, elapsed / 1e6, n_requests / MAX (elapsed / 1e6, 1e-9),
             by_status[SEDP_STATUS_OK], by_status[SEDP_STATUS_PARTIAL],
             by_status[SEDP_STATUS_FAILED], by_status[SEDP_STATUS_TIMEOUT]);
  }
  if (mp) {
    g_autoptr (GString) text = g_string_new (NULL);
    sedp_metrics_write_prometheus (sedp_pipeline_get_metrics (pipeline), text);
    g_autoptr (GString) stats = g_string_new (NULL);
    sedp_pipeline_collect_stats (pipeline, stats);
    sedp_metrics_write_stats (stats->str, text);
    g_autoptr (GError) werr = NULL;
    if (!g_file_set_contents (mp, text->str, (gssize) text->len, &werr)) {
      sedp_cli_error ("run", werr->message);
      status = 1;
    }
  }
  sedp_request_reader_close (reader);
  sedp_pipeline_free (pipeline);
  if (!sedp_cli_trace_close ("run", trace, quiet))
    status = 1;
  g_async_queue_unref (st.done);
  g_strfreev (outputs);
  return status;
}
