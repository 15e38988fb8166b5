/* sedp — the load generator's in-process transport: each request submitted to a running pipeline
 * with its body as payload; completions come on the runtime's threads, are stamped there and
 * handed to the run's main context through a queue (see loadgen-private.h). */
#include "loadgen-private.h"

/* A source dispatched while the queue of completions is not empty. */
typedef struct {
  GSource source;
  LoadRun *run;
} DoneSource;

static void
pipeline_completed (LoadSend *s)
{
  LoadRun *run = s->run;
  const SedpResult *res = sedp_request_get_result (s->request);
  SedpStatus st = sedp_result_get_status (res);
  if (st == SEDP_STATUS_OK) {
    guint n_items;
    sedp_workload_get_body (run->gen->workload, s->index, &n_items);
    sedp_loadgen_results_record_ok (run->results, s->done_us - s->scheduled_us, n_items,
                                    sedp_status_to_string (st));
  } else {
    const char *m = sedp_result_get_message (res);
    g_autofree char *why = g_strdup_printf ("%s: %s", sedp_status_to_string (st), m ? m : "");
    sedp_loadgen_results_record_failure (run->results, SEDP_LOADGEN_FAILURE_NOT_OK,
                                         sedp_status_to_string (st), why);
  }
  g_clear_pointer (&s->request, sedp_request_unref);
  sedp_loadgen_send_completed (s);
}

static gboolean
done_pending (GSource *source)
{
  return g_async_queue_length (((DoneSource *) source)->run->done) > 0;
}

static gboolean
done_prepare (GSource *source, gint *timeout)
{
  *timeout = -1;
  return done_pending (source);
}

static gboolean
done_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  LoadRun *run = ((DoneSource *) source)->run;
  LoadSend *s;
  (void) callback;
  (void) data;
  while ((s = g_async_queue_try_pop (run->done)))
    pipeline_completed (s);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs done_funcs = {
  .prepare = done_prepare,
  .check = done_pending,
  .dispatch = done_dispatch,
};

/* On a runtime thread: stamps the completion and hands @data (the LoadSend) to the run's
 * context. The context is referenced across the push: once pushed, the run may end at once. */
static void
on_done (SedpRequest *request, gpointer data)
{
  LoadSend *s = data;
  GMainContext *context = g_main_context_ref (s->run->context);
  GAsyncQueue *done = g_async_queue_ref (s->run->done);
  (void) request;
  s->done_us = g_get_monotonic_time ();
  g_async_queue_push (done, s);
  g_main_context_wakeup (context);
  g_async_queue_unref (done);
  g_main_context_unref (context);
}

static gboolean
pipeline_start (LoadRun *run, GError **error)
{
  (void) error;
  run->done = g_async_queue_new ();
  run->done_source = g_source_new (&done_funcs, sizeof (DoneSource));
  ((DoneSource *) run->done_source)->run = run;
  g_source_attach (run->done_source, run->context);
  return TRUE;
}

static void
pipeline_stop (LoadRun *run)
{
  if (run->done_source)
    g_source_destroy (run->done_source);
  g_clear_pointer (&run->done_source, g_source_unref);
  g_clear_pointer (&run->done, g_async_queue_unref);
}

static gboolean
pipeline_send (LoadSend *s)
{
  LoadRun *run = s->run;
  SedpWorkload *w = run->gen->workload;
  g_autofree char *id = g_strdup_printf ("load-%" G_GUINT64_FORMAT, run->serial++);
  s->request = sedp_request_new (id, 0);
  sedp_request_set_payload (s->request, sedp_workload_get_body (w, s->index, NULL),
                            sedp_workload_get_content_type (w));
  SedpStatus st = sedp_pipeline_submit (run->gen->pipeline, s->request, on_done, s);
  if (st == SEDP_STATUS_OK)
    return TRUE;
  g_autofree char *why = g_strdup_printf ("%s: refused at submission (the source stage's queue is "
                                          "full, or the pipeline is stopping)",
                                          sedp_status_to_string (st));
  sedp_loadgen_results_record_failure (run->results, SEDP_LOADGEN_FAILURE_REFUSED,
                                       sedp_status_to_string (st), why);
  g_clear_pointer (&s->request, sedp_request_unref);
  return FALSE;
}

const LoadTransport sedp_loadgen_pipeline_transport = {
  .start = pipeline_start,
  .send = pipeline_send,
  .stop = pipeline_stop,
};
