/* sedp serve — serve pipelines over HTTP (docs/serving.md). */
#include "cli.h"

#include "../runtime/trace.h"
#include "../server/server.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  SedpServer *server;
  GMainLoop *loop;
  guint drain_timeout_ms;
  gboolean stopping;
  gboolean warmup_failed;
} ServeState;

/* The warm-up ended: ready, or a warm-up request failed (then serve drains and exits 1). */
static void
on_warmup_done (SedpServer *server, const GError *error, gpointer data)
{
  ServeState *st = data;
  if (error) {
    sedp_cli_error ("serve", error->message);
    st->warmup_failed = TRUE;
    g_main_loop_quit (st->loop);
    return;
  }
  g_autofree char *summary = sedp_server_describe_warmup (server);
  g_auto (GStrv) lines = g_strsplit (summary, "\n", -1);
  for (char **l = lines; *l; l++)
    if (**l)
      fprintf (stderr, "sedp serve: %s\n", *l);
  fprintf (stderr, "sedp serve: ready\n");
}

static gboolean
on_signal (gpointer data)
{
  ServeState *st = data;
  if (st->stopping)
    return G_SOURCE_CONTINUE; /* a second signal while draining: keep draining */
  st->stopping = TRUE;
  fprintf (stderr, "sedp serve: draining in-flight requests\n");
  sedp_server_shutdown (st->server, st->drain_timeout_ms);
  g_main_loop_quit (st->loop);
  return G_SOURCE_CONTINUE;
}

/* Serves every `--model NAME=FILE` and every pipeline file; FALSE with @error at the first that
 * fails. */
static gboolean
add_served (SedpServer *server, char **models, int argc, char **argv, SedpRegistry *registry,
            GError **error)
{
  for (guint i = 0; models && models[i]; i++) {
    const char *eq = strchr (models[i], '=');
    if (eq == NULL || eq == models[i] || eq[1] == '\0') {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--model %s: expected NAME=FILE.onnx (e.g. --model ctr=dense.onnx)",
                   models[i]);
      return FALSE;
    }
    g_autofree char *name = g_strndup (models[i], (gsize) (eq - models[i]));
    if (!sedp_server_add_model (server, name, eq + 1, registry, error))
      return FALSE;
  }
  for (int i = 1; i < argc; i++)
    if (!sedp_server_add_pipeline (server, argv[i], registry, error))
      return FALSE;
  return TRUE;
}

int
sedp_cmd_serve (int argc, char **argv)
{
  char *listen = NULL;
  gint64 max_body = SEDP_SERVER_DEFAULT_MAX_BODY;
  g_autofree char *cpus = NULL;
  gint drain_timeout = 30;
  gint heap_release = 10;
  g_autofree char *admin_token_file = NULL;
  g_auto (GStrv) models = NULL;
  g_autofree char *trace_path = NULL;
  gint trace_sample = 100;
  const GOptionEntry entries[] = {
    {"model", 'm', 0, G_OPTION_ARG_FILENAME_ARRAY, &models,
     "Serve the ONNX model FILE as NAME without a pipeline file (repeatable; with or without PIPELINE files): POST /v1/models/NAME:predict in TF Serving's REST JSON or DeepRec's protobuf (docs/compat.md)", "NAME=FILE"},
    {"listen", 'l', 0, G_OPTION_ARG_STRING, &listen,
     "Address and port to listen on (default 127.0.0.1:8080; port 0 picks a free one)", "ADDR:PORT"},
    {"cpus", 0, 0, G_OPTION_ARG_STRING, &cpus,
     "Run on these CPUs only (e.g. 0 or 0,2-3), except stages with a cpus key of their own", "LIST"},
    {"max-body", 0, 0, G_OPTION_ARG_INT64, &max_body,
     "Largest request body, in bytes (default 16 MiB); larger ones get 413", "BYTES"},
    {"drain-timeout", 0, 0, G_OPTION_ARG_INT, &drain_timeout,
     "On SIGTERM/SIGINT, once the pipelines drained, the most seconds to wait for the last responses to be sent (default 30)", "SECONDS"},
    {"heap-release-interval", 0, 0, G_OPTION_ARG_INT, &heap_release,
     "Every SECONDS, give the heap's free pages back to the system, so that a burst's memory does not stay resident (default 10; 0: never)", "SECONDS"},
    {"admin-token-file", 0, 0, G_OPTION_ARG_FILENAME, &admin_token_file,
     "Enable the admin API (POST /v1/admin/models/NAME:reload and :rollback; docs/model-lifecycle.md): its calls carry 'Authorization: Bearer TOKEN', TOKEN the first line of FILE (mode 600, at least 16 characters). Without it the admin API answers 404", "FILE"},
    {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
     "Write a Chrome trace (JSON; Perfetto or chrome://tracing open it) of the sampled requests "
     "to FILE when serve stops (SIGTERM/SIGINT): each stage's queue wait and process call "
     "(docs/observability.md)", "FILE"},
    {"trace-sample", 0, 0, G_OPTION_ARG_INT, &trace_sample,
     "Trace one request in N (default 100)", "N"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("serve", "[PIPELINE…] [--model NAME=FILE.onnx…] [--listen ADDR:PORT]",
                       "Serves every PIPELINE (under its [pipeline] name) over HTTP: "
                       "POST /v1/pipelines/NAME:predict, POST /v1/feedback, GET /healthz, "
                       "GET /v1/pipelines, GET /v1/models/NAME and GET /metrics (see "
                       "docs/serving.md), and every PIPELINE and --model under the model API: "
                       "POST /v1/models/NAME:predict in TF Serving's REST JSON or DeepRec's "
                       "protobuf (docs/compat.md). A pipeline's [model NAME] groups are reloaded when a "
                       "new version appears in their repository (docs/model-lifecycle.md). SIGTERM or SIGINT "
                       "stops accepting requests, drains the ones in flight and exits 0.",
                       entries, &argc, &argv))
    return 2;
  g_autofree char *address = listen ? listen : g_strdup ("127.0.0.1:8080");
  if (argc < 2 && models == NULL) {
    sedp_cli_error ("serve", "expected at least one PIPELINE file or --model NAME=FILE.onnx (see --help)");
    return 2;
  }
  if (max_body < 1 || max_body > G_MAXINT32) {
    sedp_cli_error ("serve", "--max-body must be from 1 to 2147483647");
    return 2;
  }
  if (drain_timeout < 0 || drain_timeout > 86400) {
    sedp_cli_error ("serve", "--drain-timeout must be from 0 to 86400");
    return 2;
  }
  if (heap_release < 0 || heap_release > 86400) {
    sedp_cli_error ("serve", "--heap-release-interval must be from 0 to 86400");
    return 2;
  }
  if (!sedp_cli_apply_cpus ("serve", cpus)) /* before any thread starts: they inherit it */
    return 2;
  gboolean trace_ok;
  SedpTrace *trace = sedp_cli_trace_open ("serve", trace_path, trace_sample, &trace_ok);
  if (!trace_ok)
    return 2;
  sedp_serve_heap_tune ();
  g_auto (GStrv) path = sedp_registry_default_path ();
  g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) path);
  g_autoptr (GError) error = NULL;
  SedpServer *server = sedp_server_new ((gsize) max_body);
  if (admin_token_file)
    sedp_server_set_admin_token_file (server, admin_token_file, &error);
  if (error == NULL)
    add_served (server, models, argc, argv, registry, &error);
  if (error == NULL)
    sedp_server_listen (server, address, &error);
  if (error) {
    sedp_cli_error ("serve", error->message);
    sedp_server_free (server);
    sedp_trace_free (trace);
    return 1;
  }
  SedpServeHeapWatch *heap_watch = sedp_serve_heap_watch_start ((guint) heap_release);
  g_autofree char *host = g_strndup (address, (gsize) (strrchr (address, ':') - address));
  fprintf (stderr, "sedp serve: listening on http://%s:%u\n", host, sedp_server_get_port (server));
  ServeState st = {server, g_main_loop_new (NULL, FALSE), (guint) drain_timeout * 1000, FALSE, FALSE};
  guint s1 = g_unix_signal_add (SIGTERM, on_signal, &st);
  guint s2 = g_unix_signal_add (SIGINT, on_signal, &st);
  /* Listening already: /healthz says 503 (warming up) until every warm-up request went through. */
  sedp_server_warm_up (server, on_warmup_done, &st);
  g_main_loop_run (st.loop);
  if (st.warmup_failed && !st.stopping) {
    st.stopping = TRUE;
    sedp_server_shutdown (server, st.drain_timeout_ms);
  }
  g_source_remove (s1);
  g_source_remove (s2);
  g_main_loop_unref (st.loop);
  sedp_server_free (server);
  sedp_serve_heap_watch_stop (heap_watch);
  gboolean traced = sedp_cli_trace_close ("serve", trace, FALSE); /* the pipelines stopped */
  fprintf (stderr, "sedp serve: stopped\n");
  return st.warmup_failed || !traced ? 1 : 0;
}
