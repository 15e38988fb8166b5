/* sedp — the load generator's HTTP transport: each request POSTed with libsoup-3 from the run's
 * main context, its answer classified (200 with status OK, 503 refused, other codes, no answer);
 * see loadgen-private.h. */
#include "loadgen-private.h"
#include "predict-pb.h"

static gboolean
http_start (LoadRun *run, GError **error)
{
  (void) error;
  guint conns = run->config.mode == SEDP_LOADGEN_OPEN ? run->config.max_in_flight
                                                      : run->config.concurrency;
  /* More connections than requests in flight: libsoup never queues one behind another. */
  run->session = soup_session_new_with_options ("max-conns", conns + 8, "max-conns-per-host",
                                                conns + 8, "timeout", run->config.http_timeout_s,
                                                NULL);
  return TRUE;
}

static void
http_stop (LoadRun *run)
{
  g_clear_object (&run->session);
}

/* Whether the body of a 200 says OK: protobuf PredictResponse.status, or JSON "status": "OK". */
static gboolean
body_ok (LoadRun *run, const char *p, gsize n)
{
  if (sedp_workload_get_encoding (run->gen->workload) == SEDP_WORKLOAD_PROTOBUF)
    return sedp_predict_pb_response_status ((const guint8 *) p, n) == 0;
  gssize head = (gssize) MIN (n, 512);
  return g_strstr_len (p, head, "\"status\": \"OK\"") || g_strstr_len (p, head, "\"status\":\"OK\"");
}

/* Why an answer of @code with body @p is a failure, for the first error's message. */
static char *
answer_why (LoadRun *run, guint code, const char *p, gsize n)
{
  if (code == 200 && sedp_workload_get_encoding (run->gen->workload) == SEDP_WORKLOAD_PROTOBUF)
    return g_strdup_printf ("HTTP 200 with response status %d (not OK)",
                            sedp_predict_pb_response_status ((const guint8 *) p, n));
  return g_strdup_printf ("HTTP %u%s: %.*s", code, code == 200 ? " not OK" : "", (int) MIN (n, 200), p);
}

static void
http_answered (LoadSend *s, guint code, GBytes *body, gint64 latency_us)
{
  LoadRun *run = s->run;
  char status[16];
  gsize n;
  const char *p = g_bytes_get_data (body, &n);
  g_snprintf (status, sizeof status, "%u", code);
  if (code == 200 && body_ok (run, p ? p : "", n)) {
    guint n_items;
    sedp_workload_get_body (run->gen->workload, s->index, &n_items);
    sedp_loadgen_results_record_ok (run->results, latency_us, n_items, status);
    return;
  }
  SedpLoadgenFailure kind = code == 200   ? SEDP_LOADGEN_FAILURE_NOT_OK
                            : code == 503 ? SEDP_LOADGEN_FAILURE_REFUSED
                                          : SEDP_LOADGEN_FAILURE_HTTP;
  g_autofree char *why = answer_why (run, code, p ? p : "", n);
  sedp_loadgen_results_record_failure (run->results, kind, status, why);
}

static void
on_http_done (GObject *source, GAsyncResult *res, gpointer data)
{
  LoadSend *s = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);
  gint64 latency_us = g_get_monotonic_time () - s->scheduled_us;
  guint code = body ? soup_message_get_status (s->msg) : 0;
  if (body)
    http_answered (s, code, body, latency_us);
  else
    sedp_loadgen_results_record_failure (s->run->results, SEDP_LOADGEN_FAILURE_TRANSPORT, NULL,
                                         error->message);
  if (s->run->config.on_response)
    s->run->config.on_response (s->index, code, body, latency_us, s->run->config.response_data);
  g_clear_object (&s->msg);
  sedp_loadgen_send_completed (s);
}

static gboolean
http_send (LoadSend *s)
{
  LoadRun *run = s->run;
  SedpWorkload *w = run->gen->workload;
  s->msg = soup_message_new_from_uri ("POST", run->gen->uri);
  soup_message_set_request_body_from_bytes (s->msg, sedp_workload_get_content_type (w),
                                            sedp_workload_get_body (w, s->index, NULL));
  soup_session_send_and_read_async (run->session, s->msg, G_PRIORITY_DEFAULT, NULL, on_http_done, s);
  return TRUE;
}

const LoadTransport sedp_loadgen_http_transport = {
  .start = http_start,
  .send = http_send,
  .stop = http_stop,
};
