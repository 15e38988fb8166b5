/* sedp — the load generator's API: configurations, generators, and a run from its set-up to its
 * results (see loadgen.h; sending is in loadgen-drive.c). */
#include "loadgen-private.h"

#include <string.h>

void
sedp_loadgen_config_init (SedpLoadgenConfig *c)
{
  memset (c, 0, sizeof *c);
  c->mode = SEDP_LOADGEN_CLOSED;
  c->concurrency = 1;
  c->duration_s = 10;
  c->max_in_flight = SEDP_LOADGEN_DEFAULT_MAX_IN_FLIGHT;
  c->seed = 1;
  c->http_timeout_s = 60;
}

static gboolean
config_error (GError **error, const char *what)
{
  g_set_error_literal (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_CONFIG, what);
  return FALSE;
}

gboolean
sedp_loadgen_config_check (const SedpLoadgenConfig *c, GError **error)
{
  g_autofree char *m = NULL;
  if (!(c->duration_s > 0 && c->duration_s <= 86400))
    m = g_strdup_printf ("duration_s %g: must be more than 0 and at most 86400 seconds", c->duration_s);
  else if (c->mode == SEDP_LOADGEN_CLOSED && (c->concurrency < 1 || c->concurrency > 100000))
    m = g_strdup_printf ("concurrency %u: the closed loop's clients must be from 1 to 100000",
                         c->concurrency);
  else if (c->mode == SEDP_LOADGEN_OPEN && !(c->rate > 0 && c->rate <= 1e6))
    m = g_strdup_printf ("rate %g: the open loop's rate must be more than 0 and at most 1000000 "
                         "requests per second",
                         c->rate);
  else if (c->mode == SEDP_LOADGEN_OPEN && (c->max_in_flight < 1 || c->max_in_flight > 1000000))
    m = g_strdup_printf ("max_in_flight %u: must be from 1 to 1000000", c->max_in_flight);
  else if (c->http_timeout_s < 1 || c->http_timeout_s > 3600)
    m = g_strdup_printf ("http_timeout_s %u: must be from 1 to 3600 seconds", c->http_timeout_s);
  else if (c->mode != SEDP_LOADGEN_CLOSED && c->mode != SEDP_LOADGEN_OPEN)
    m = g_strdup_printf ("mode %d: must be SEDP_LOADGEN_CLOSED or SEDP_LOADGEN_OPEN", (int) c->mode);
  return m ? config_error (error, m) : TRUE;
}

/* Why @uri (parsed from @url, or NULL with @e) is not a target; NULL when it is one. */
static char *
target_why (const char *url, GUri *uri, GError *e)
{
  const char *scheme = uri ? g_uri_get_scheme (uri) : NULL;
  const char *host = uri ? g_uri_get_host (uri) : NULL;
  gboolean http = g_strcmp0 (scheme, "http") == 0;
  if (g_strcmp0 (scheme, "https") == 0)
    return g_strdup_printf ("bad URL '%s': https is not supported: the load generator speaks plain "
                            "HTTP/1.1 (sedp serve serves http)", url);
  if (http && host && *host)
    return NULL;
  return g_strdup_printf ("bad URL '%s': %s (give http://HOST:PORT/v1/pipelines/NAME:predict)", url,
                          e ? e->message : http ? "no host" : "not an http:// URL");
}

SedpLoadgen *
sedp_loadgen_new_http (const char *url, SedpWorkload *workload, GError **error)
{
  g_return_val_if_fail (url != NULL && workload != NULL, NULL);
  g_autoptr (GError) e = NULL;
  /* The path and query are sent percent-encoded, as given. */
  GUriFlags flags = G_URI_FLAGS_ENCODED_PATH | G_URI_FLAGS_ENCODED_QUERY
                    | G_URI_FLAGS_ENCODED_FRAGMENT | G_URI_FLAGS_SCHEME_NORMALIZE;
  GUri *uri = g_uri_parse (url, flags, &e);
  g_autofree char *why = target_why (url, uri, e);
  if (why) {
    g_set_error_literal (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_TARGET, why);
    g_clear_pointer (&uri, g_uri_unref);
    return NULL;
  }
  SedpLoadgen *gen = g_new0 (SedpLoadgen, 1);
  gen->workload = sedp_workload_ref (workload);
  gen->transport = &sedp_loadgen_http_transport;
  gen->uri = uri;
  return gen;
}

SedpLoadgen *
sedp_loadgen_new_pipeline (SedpPipeline *pipeline, SedpWorkload *workload)
{
  g_return_val_if_fail (pipeline != NULL && workload != NULL, NULL);
  SedpLoadgen *gen = g_new0 (SedpLoadgen, 1);
  gen->workload = sedp_workload_ref (workload);
  gen->transport = &sedp_loadgen_pipeline_transport;
  gen->pipeline = pipeline;
  return gen;
}

void
sedp_loadgen_free (SedpLoadgen *gen)
{
  if (gen == NULL)
    return;
  sedp_workload_unref (gen->workload);
  g_clear_pointer (&gen->uri, g_uri_unref);
  g_free (gen);
}

SedpWorkload *
sedp_loadgen_get_workload (SedpLoadgen *gen)
{
  return gen->workload;
}

static gboolean
on_tick (gpointer data)
{
  LoadRun *run = data;
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (run->results);
  SedpLoadgenProgress p = {
    .elapsed_s = (double) (g_get_monotonic_time () - run->t0) / 1e6,
    .ok = c->ok,
    .errors = sedp_loadgen_results_get_errors (run->results),
    .items = c->items,
    .in_flight = run->in_flight,
  };
  run->config.progress (&p, run->config.progress_data);
  return G_SOURCE_CONTINUE;
}

static gboolean
run_setup (LoadRun *run, SedpLoadgen *gen, const SedpLoadgenConfig *config, GError **error)
{
  gboolean open = config->mode == SEDP_LOADGEN_OPEN;
  run->gen = gen;
  run->config = *config;
  run->timer_fd = -1;
  run->context = g_main_context_new ();
  g_main_context_push_thread_default (run->context);
  run->results = sedp_loadgen_results_new (config->mode, open ? config->rate : 0,
                                           open ? 0 : config->concurrency, config->duration_s);
  if (!gen->transport->start (run, error))
    return FALSE;
  if (config->progress) {
    run->tick = g_timeout_source_new (1000);
    g_source_set_callback (run->tick, on_tick, run, NULL);
    g_source_attach (run->tick, run->context);
  }
  run->t0 = g_get_monotonic_time ();
  run->end = run->t0 + (gint64) (config->duration_s * G_USEC_PER_SEC);
  return sedp_loadgen_drive_start (run, error);
}

static void
run_teardown (LoadRun *run)
{
  sedp_loadgen_drive_stop (run);
  if (run->tick)
    g_source_destroy (run->tick);
  g_clear_pointer (&run->tick, g_source_unref);
  run->gen->transport->stop (run);
  g_clear_pointer (&run->results, sedp_loadgen_results_free);
  g_main_context_pop_thread_default (run->context);
  g_main_context_unref (run->context);
}

SedpLoadgenResults *
sedp_loadgen_run (SedpLoadgen *gen, const SedpLoadgenConfig *config, GError **error)
{
  g_return_val_if_fail (gen != NULL && config != NULL, NULL);
  if (!sedp_loadgen_config_check (config, error))
    return NULL;
  LoadRun run = {0};
  SedpLoadgenResults *results = NULL;
  if (run_setup (&run, gen, config, error)) {
    while (!sedp_loadgen_drive_done (&run))
      g_main_context_iteration (run.context, TRUE);
    sedp_loadgen_results_finish (run.results, (double) (g_get_monotonic_time () - run.t0) / 1e6);
    results = g_steal_pointer (&run.results);
  }
  run_teardown (&run);
  return results;
}
