/* sedp — the HTTP front end: libsoup 3 in the main loop, pipelines on their own threads.
 *
 * A predict request is paused while its pipeline runs it; the completion callback (a runtime
 * thread) hands the request back to the main context, where the response is encoded and the
 * message unpaused: SoupServerMessage is only touched from the main context. */
#include "server-private.h"

#include "reload.h"

#include "../dsl/spec.h"
#include "admin.h"
#include "../io/peek.h"
#include "../io/protocol.h"
#include "model-api.h"
#include "screen.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sedp/query-cache.h>
#include <sodium.h>
#include <stddef.h>
#include <string.h>

/* One predict request in flight. */
typedef struct {
  SedpServer *server;
  Served *served;
  Instance *instance;      /* the version it runs on: a reference */
  SoupServerMessage *msg;  /* referenced */
  SedpRequest *request;    /* referenced */
  SedpProtocolFormat format;
  ModelApiCall *api;       /* (nullable) a model-API call (model-api.c), answered in its format */
} Pending;

static void
served_free (gpointer p)
{
  Served *s = p;
  reloader_free (s->reloader);
  if (s->current)
    instance_free_now (s->current);
  g_free (s->spec_text);
  g_strfreev (s->outputs);
  if (s->signature)
    sedp_model_api_signature_free (s->signature);
  g_free (s->model_path);
  if (s->warmup)
    g_ptr_array_unref (s->warmup);
  g_free (s->warmup_file);
  g_free (s->name);
  g_free (s->path);
  g_free (s);
}

static Served *
find_served (SedpServer *server, const char *name, gsize len)
{
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    if (strlen (s->name) == len && strncmp (s->name, name, len) == 0)
      return s;
  }
  return NULL;
}

Served *
server_find_served (SedpServer *server, const char *name)
{
  return find_served (server, name, strlen (name));
}

/* ---- responses ---- */

static void
respond_text (SoupServerMessage *msg, guint status, const char *text)
{
  soup_server_message_set_status (msg, status, NULL);
  g_autofree char *body = g_strdup_printf ("%s\n", text);
  soup_server_message_set_response (msg, "text/plain; charset=utf-8", SOUP_MEMORY_TAKE,
                                    g_steal_pointer (&body), strlen (text) + 1);
}

/* An error: {"error": {"code": STATUS, "message": TEXT}}. */
void
server_respond_error (SoupServerMessage *msg, guint status, const char *message)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "error");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "code");
  json_builder_add_int_value (b, status);
  json_builder_set_member_name (b, "message");
  json_builder_add_string_value (b, message);
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  char *text = json_to_string (root, FALSE);
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_TAKE, text, strlen (text));
}

void
server_respond_json (SoupServerMessage *msg, guint status, JsonBuilder *b)
{
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  char *text = json_to_string (root, TRUE);
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_TAKE, text, strlen (text));
}

void
server_method_not_allowed (SoupServerMessage *msg, const char *allow)
{
  soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Allow", allow);
  g_autofree char *m = g_strdup_printf ("method %s not allowed (allowed: %s)",
                                        soup_server_message_get_method (msg), allow);
  server_respond_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, m);
}

static void
unavailable (SoupServerMessage *msg, const char *why)
{
  soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Retry-After", "1");
  server_respond_error (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, why);
}

/* ---- predict ---- */

/* The HTTP status of a FAILED request, by its error's domain: the protocol's errors (a malformed
 * request, one past a limit of docs/limits.md) are the client's, 400; every other error is the
 * server's, 500. */
guint
server_status_of_error (const GError *error)
{
  return error && error->domain == SEDP_PROTOCOL_ERROR ? SOUP_STATUS_BAD_REQUEST
                                                       : SOUP_STATUS_INTERNAL_SERVER_ERROR;
}

static void
on_message_finished (SoupServerMessage *msg, gpointer user_data)
{
  SedpServer *server = user_data;
  g_signal_handlers_disconnect_by_func (msg, on_message_finished, user_data);
  server->n_open--;
}

/* In the main context: encodes the result and unpauses the message. */
static gboolean
deliver (gpointer data)
{
  Pending *p = data;
  const SedpResult *res = sedp_request_get_result (p->request);
  SedpStatus status = sedp_result_get_status (res);
  const char *message = sedp_result_get_message (res);
  gboolean failed = FALSE;
  if (p->api) {
    failed = model_api_deliver (p->msg, res, p->api);
  } else if (status == SEDP_STATUS_FAILED) {
    guint code = server_status_of_error (sedp_result_get_error (res));
    failed = code >= 500;
    server_respond_error (p->msg, code, message ? message : "request failed");
  } else {
    guint top_k = sedp_request_get_top_k (p->request);
    g_autoptr (GBytes) body = sedp_protocol_encode_response (
        p->request, (const char *const *) p->served->outputs, p->instance->model_version, top_k,
        p->format);
    /* A request a branch quota refused (docs/routing.md) is answered 503, as a full queue is,
     * with its PredictResponse (status OVERLOADED, the message naming stage and branch). */
    guint code = status == SEDP_STATUS_TIMEOUT      ? SOUP_STATUS_GATEWAY_TIMEOUT
                 : status == SEDP_STATUS_OVERLOADED ? SOUP_STATUS_SERVICE_UNAVAILABLE
                                                    : SOUP_STATUS_OK;
    soup_server_message_set_status (p->msg, code, NULL);
    gsize size;
    const char *data_ = g_bytes_get_data (body, &size);
    soup_server_message_set_response (p->msg,
                                      p->format == SEDP_PROTOCOL_JSON
                                          ? SEDP_PROTOCOL_CONTENT_TYPE_JSON
                                          : SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF,
                                      SOUP_MEMORY_COPY, data_, size);
  }
  soup_server_message_unpause (p->msg);
  instance_count (p->instance, failed || status == SEDP_STATUS_TIMEOUT,
                  sedp_result_get_latency_us (res));
  instance_unref (p->instance);
  g_object_unref (p->msg);
  sedp_request_unref (p->request);
  model_api_call_free (p->api);
  g_free (p);
  return G_SOURCE_REMOVE;
}

/* In a runtime thread: hands the request to the main context. */
static void
on_request_done (SedpRequest *request, gpointer user_data)
{
  Pending *p = user_data;
  g_main_context_invoke (p->server->context, deliver, p);
}

/* Before the body is read: refuses a body declared over the limit. libsoup 3.2 sends the 413 at
 * once only to a client that asked `Expect: 100-continue`; from any other it still reads the
 * whole body first, which is then discarded as it arrives instead of being kept (a client
 * declaring and sending gigabytes would otherwise have them held in memory). */
/* A body of unknown length (chunked) as it arrives: once past the limit, the rest is discarded
 * as it comes and the handler answers 413 (only the first max_body bytes were ever kept). */
static void
on_body_chunk (SoupServerMessage *msg, GBytes *chunk, gpointer user_data)
{
  SedpServer *server = user_data;
  gsize seen = GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT (msg), "sedp-body-seen"));
  seen += g_bytes_get_size (chunk);
  g_object_set_data (G_OBJECT (msg), "sedp-body-seen", GSIZE_TO_POINTER (seen));
  if (seen > server->max_body)
    soup_message_body_set_accumulate (soup_server_message_get_request_body (msg), FALSE);
}

/* TRUE when the body of @msg passed the limit while it was read (a chunked one). */
static gboolean
body_over_limit (SedpServer *server, SoupServerMessage *msg)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  gsize seen = GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT (msg), "sedp-body-seen"));
  return (guint64) body->length > server->max_body || seen > server->max_body;
}

static void
early_handler (SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
               gpointer user_data)
{
  SedpServer *server = user_data;
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  if (soup_message_headers_get_encoding (h) != SOUP_ENCODING_CONTENT_LENGTH)
    g_signal_connect (msg, "got-chunk", G_CALLBACK (on_body_chunk), server);
  if (soup_message_headers_get_encoding (h) == SOUP_ENCODING_CONTENT_LENGTH &&
      (guint64) soup_message_headers_get_content_length (h) > server->max_body) {
    soup_message_body_set_accumulate (soup_server_message_get_request_body (msg), FALSE);
    g_autofree char *m = g_strdup_printf ("the body (%" G_GINT64_FORMAT " bytes) is over the limit "
                                          "of %" G_GSIZE_FORMAT " bytes",
                                          soup_message_headers_get_content_length (h), server->max_body);
    soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Connection", "close");
    server_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, m);
  }
}

/* ---- the request's clock ----
 *
 * A request's deadline bounds what its client waits, so its clock starts when the server
 * accepted the connection, less the time it waited in the kernel's accept queue
 * (accept_queue_wait_us; docs/load-shedding.md#the-requests-clock): the time spent waiting for
 * the main loop, the screen and the body counts. The accept time is kept on the connection,
 * then on the remote address object libsoup keeps for it, and taken by the first request read
 * from it; later requests of a kept-alive connection start when they are submitted. */
#define ARRIVAL_KEY "sedp-arrival-us"

static void
stamp_arrival (GObject *object, gint64 t)
{
  if (t == 0)
    return;
  gint64 *stamp = g_new (gint64, 1);
  *stamp = t;
  g_object_set_data_full (object, ARRIVAL_KEY, stamp, g_free);
}

/* The arrival stamped on @object (0: none), removed. */
static gint64
take_arrival (GObject *object)
{
  gint64 *stamp = object ? g_object_steal_data (object, ARRIVAL_KEY) : NULL;
  gint64 t = stamp ? *stamp : 0;
  g_free (stamp);
  return t;
}

/* ---- predictions ---- */

/* libsoup before 3.3 (Debian 12 has 3.2) never closes a kept-alive connection that the client
 * closes while it is idle: each one leaks a socket in CLOSE_WAIT until the process runs out of
 * file descriptors and stops answering (upstream fix: libsoup 3.3.0, "Don't leak idle
 * connections closed by the client"). With those versions every response says
 * "Connection: close" and the server closes the connection itself once it is sent, so no
 * connection is ever left idle. Clients reconnect per request, which costs a loopback TCP
 * handshake (tens of microseconds) next to milliseconds of scoring. */
static void
close_after_response (SoupServer *soup, SoupServerMessage *msg, gpointer user_data)
{
  soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Connection", "close");
}

/* Whether @served takes a prediction now; else answered (405, 503). */
static gboolean
predict_admit (SedpServer *server, SoupServerMessage *msg, Served *served)
{
  if (strcmp (soup_server_message_get_method (msg), SOUP_METHOD_POST) != 0) {
    server_method_not_allowed (msg, "POST");
    return FALSE;
  }
  if (server->draining) {
    unavailable (msg, "the server is shutting down");
    return FALSE;
  }
  if (!served->ready) {
    g_autofree char *m = g_strdup_printf ("pipeline '%s' is warming up (%u of %u warm-up requests "
                                          "done)", served->name, served->warmup_completed,
                                          served->warmup_total);
    unavailable (msg, m);
    return FALSE;
  }
  return TRUE;
}

/* The native format of a content type; FALSE for any other. */
static gboolean
native_format_of (const char *ct, SedpProtocolFormat *format)
{
  if (ct && (g_ascii_strcasecmp (ct, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF) == 0 ||
             g_ascii_strcasecmp (ct, "application/protobuf") == 0 ||
             g_ascii_strcasecmp (ct, "application/octet-stream") == 0))
    *format = SEDP_PROTOCOL_PROTOBUF;
  else if (ct && g_ascii_strcasecmp (ct, SEDP_PROTOCOL_CONTENT_TYPE_JSON) == 0)
    *format = SEDP_PROTOCOL_JSON;
  else
    return FALSE;
  return TRUE;
}

/* The body, or NULL after answering 413 when it passed --max-body. */
static GBytes *
predict_body (SedpServer *server, SoupServerMessage *msg)
{
  if (body_over_limit (server, msg)) {
    g_autofree char *m = g_strdup_printf ("the body is over the limit of %" G_GSIZE_FORMAT
                                          " bytes (--max-body)", server->max_body);
    server_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, m);
    return NULL;
  }
  return soup_message_body_flatten (soup_server_message_get_request_body (msg));
}

/* A native request: its payload, the client's request_id (else http-N) and deadline_ms (else
 * the pipeline's), read by a peek; data_reader decodes it. */
static SedpRequest *
native_request (SedpServer *server, GBytes *payload, SedpProtocolFormat format)
{
  SedpProtocolPeek peek = {0, NULL};
  gsize size;
  const guint8 *bytes = g_bytes_get_data (payload, &size);
  sedp_protocol_peek (bytes, size, format, &peek);
  g_autofree char *id = peek.request_id ? peek.request_id
                                        : g_strdup_printf ("http-%" G_GUINT64_FORMAT, ++server->next_id);
  SedpRequest *request = sedp_request_new (id, 0);
  sedp_request_set_payload (request, payload,
                            format == SEDP_PROTOCOL_JSON ? SEDP_PROTOCOL_CONTENT_TYPE_JSON
                                                         : SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
  if (peek.deadline_ms)
    sedp_request_set_timeout (request, (gint64) peek.deadline_ms * 1000);
  return request;
}

/* Submits @request (taken) for @msg; answers 503 when the pipeline refuses it. */
static void
predict_submit (SedpServer *server, SoupServerMessage *msg, Served *served, SedpRequest *request,
                SedpProtocolFormat format, ModelApiCall *api)
{
  sedp_request_set_start (request, take_arrival (G_OBJECT (soup_server_message_get_remote_address (msg))));
  Pending *p = g_new0 (Pending, 1);
  p->server = server;
  p->served = served;
  p->instance = instance_ref (served->current);
  p->msg = g_object_ref (msg);
  p->request = request;
  p->format = format;
  p->api = api;
  /* Paused before submitting: the completion may be delivered before submit returns. */
  soup_server_message_pause (msg);
  SedpStatus s = sedp_pipeline_submit (p->instance->pipeline, request, on_request_done, p);
  if (s != SEDP_STATUS_OK) {
    soup_server_message_unpause (msg);
    instance_unref (p->instance);
    g_object_unref (p->msg);
    sedp_request_unref (request);
    model_api_call_free (api);
    g_free (p);
    unavailable (msg, s == SEDP_STATUS_OVERLOADED ? "overloaded: the pipeline's queue is full"
                                                  : "the pipeline is stopping");
    return;
  }
  server->n_open++;
  g_signal_connect (msg, "finished", G_CALLBACK (on_message_finished), server);
}

void
server_handle_predict (SedpServer *server, SoupServerMessage *msg, Served *served,
                       gboolean model_api)
{
  if (!predict_admit (server, msg, served))
    return;
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  const char *ct = soup_message_headers_get_content_type (h, NULL);
  SedpProtocolFormat format = SEDP_PROTOCOL_AUTO;
  SedpModelApiFormat api_format = SEDP_MODEL_API_TFS_JSON;
  if (model_api ? !model_api_format_of (ct, &api_format) : !native_format_of (ct, &format)) {
    g_autofree char *m = g_strdup_printf ("content type '%s' is not supported: use %s or %s",
                                          ct ? ct : "(none)", SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF,
                                          SEDP_PROTOCOL_CONTENT_TYPE_JSON);
    server_respond_error (msg, SOUP_STATUS_UNSUPPORTED_MEDIA_TYPE, m);
    return;
  }
  g_autoptr (GBytes) payload = predict_body (server, msg);
  if (payload == NULL)
    return;
  ModelApiCall *api = NULL;
  SedpRequest *request = model_api ? model_api_request (msg, served, api_format, payload,
                                                        ++server->next_id, &api)
                                   : native_request (server, payload, format);
  if (request)
    predict_submit (server, msg, served, request, format, api);
}

/* ---- warm-up ---- */

/* One warm-up request in flight. */
typedef struct {
  SedpServer *server;
  Served *served;
  SedpRequest *request;
  const SedpWarmupRecord *record;
} Warming;

static gboolean
warmup_call_done (gpointer data)
{
  SedpServer *server = data;
  g_source_unref (g_steal_pointer (&server->warmup_idle));
  SedpServerWarmupDone done = server->warmup_done;
  server->warmup_done = NULL;
  if (done)
    done (server, server->warmup_error, server->warmup_done_data);
  return G_SOURCE_REMOVE;
}

/* Calls the done callback from an idle source (never from within sedp_server_warm_up()). */
static void
warmup_finish (SedpServer *server, GError *error)
{
  if (server->warmup_idle || server->warmup_done == NULL) {
    g_clear_error (&error);
    return;
  }
  server->warmup_error = error;
  server->warmup_idle = g_idle_source_new ();
  g_source_set_callback (server->warmup_idle, warmup_call_done, server, NULL);
  g_source_attach (server->warmup_idle, server->context);
}

static void warmup_submit (SedpServer *server, Served *s);

/* In the main context: counts the completed request and sends the next one. */
static gboolean
warmup_deliver (gpointer data)
{
  Warming *w = data;
  SedpServer *server = w->server;
  Served *s = w->served;
  server->n_warming--;
  const SedpResult *res = sedp_request_get_result (w->request);
  SedpStatus status = sedp_result_get_status (res);
  GError *error = NULL;
  if (status == SEDP_STATUS_OK || status == SEDP_STATUS_PARTIAL || status == SEDP_STATUS_TIMEOUT) {
    s->warmup_completed++;
    if (status == SEDP_STATUS_TIMEOUT)
      s->warmup_timed_out++;
  } else {
    const char *message = sedp_result_get_message (res);
    error = g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                         "%s:%u: warm-up request of pipeline '%s' failed (%s): %s", s->warmup_file,
                         w->record->line, s->name, sedp_status_to_string (status),
                         message ? message : "no message");
  }
  sedp_request_unref (w->request);
  g_free (w);
  if (error) {
    server->warmup_failed = TRUE;
    warmup_finish (server, error);
    return G_SOURCE_REMOVE;
  }
  if (server->warmup_failed || server->draining)
    return G_SOURCE_REMOVE;
  if (s->warmup_completed < s->warmup_total) {
    warmup_submit (server, s);
    return G_SOURCE_REMOVE;
  }
  s->ready = TRUE;
  s->warmup_end = g_get_monotonic_time ();
  for (guint i = 0; i < server->served->len; i++)
    if (!((Served *) server->served->pdata[i])->ready)
      return G_SOURCE_REMOVE;
  warmup_finish (server, NULL);
  return G_SOURCE_REMOVE;
}

/* In a runtime thread. */
static void
on_warmup_done (SedpRequest *request, gpointer user_data)
{
  Warming *w = user_data;
  g_main_context_invoke (w->server->context, warmup_deliver, w);
}

SedpRequest *
server_warmup_request (const SedpWarmupRecord *r, guint n)
{
  gsize size;
  const char *bytes = g_bytes_get_data (r->payload, &size);
  SedpProtocolPeek peek = {0, NULL};
  sedp_protocol_peek ((const guint8 *) bytes, size, SEDP_PROTOCOL_JSON, &peek);
  g_autofree char *id = peek.request_id ? peek.request_id : g_strdup_printf ("warmup-%u", n);
  SedpRequest *request = sedp_request_new (id, 0);
  sedp_request_set_payload (request, r->payload, SEDP_PROTOCOL_CONTENT_TYPE_JSON);
  if (peek.deadline_ms)
    sedp_request_set_timeout (request, (gint64) peek.deadline_ms * 1000);
  return request;
}

/* Submits the next warm-up request of @s, as a client's: the record is the payload, its
 * request_id and deadline_ms read as the predict handler reads them. */
static void
warmup_submit (SedpServer *server, Served *s)
{
  const SedpWarmupRecord *r = s->warmup->pdata[s->warmup_sent % s->warmup->len];
  s->warmup_sent++;
  SedpRequest *request = server_warmup_request (r, s->warmup_sent);
  Warming *w = g_new0 (Warming, 1);
  w->server = server;
  w->served = s;
  w->request = request;
  w->record = r;
  server->n_warming++;
  SedpStatus st = sedp_pipeline_submit (s->current->pipeline, request, on_warmup_done, w);
  if (st != SEDP_STATUS_OK) {
    server->n_warming--;
    sedp_request_unref (request);
    g_free (w);
    server->warmup_failed = TRUE;
    warmup_finish (server, g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                                        "%s:%u: warm-up request of pipeline '%s' was refused (%s)",
                                        s->warmup_file, r->line, s->name,
                                        sedp_status_to_string (st)));
  }
}

void
sedp_server_warm_up (SedpServer *server, SedpServerWarmupDone done, gpointer user_data)
{
  server->warmup_done = done;
  server->warmup_done_data = user_data;
  gboolean all_ready = TRUE;
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    if (s->ready || s->warmup_start)
      continue;
    all_ready = FALSE;
    s->warmup_start = g_get_monotonic_time ();
    warmup_submit (server, s);
    if (server->warmup_failed)
      return;
  }
  if (all_ready)
    warmup_finish (server, NULL);
}

char *
sedp_server_describe_warmup (SedpServer *server)
{
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    if (s->warmup == NULL)
      continue;
    gint64 t1 = s->warmup_end ? s->warmup_end : g_get_monotonic_time ();
    g_string_append_printf (out, "%s: %u warm-up requests (%u records × %u) in %.3f s", s->name,
                            s->warmup_completed, s->warmup->len, s->warmup_repeat,
                            s->warmup_start ? (double) (t1 - s->warmup_start) / 1e6 : 0.0);
    if (s->warmup_timed_out)
      g_string_append_printf (out, ", %u timed out", s->warmup_timed_out);
    g_string_append_c (out, '\n');
  }
  return g_string_free (out, FALSE);
}

/* ---- other endpoints ---- */

static void
handle_feedback (SedpServer *server, SoupServerMessage *msg)
{
  if (strcmp (soup_server_message_get_method (msg), SOUP_METHOD_POST) != 0) {
    server_method_not_allowed (msg, "POST");
    return;
  }
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  if (body_over_limit (server, msg)) {
    server_respond_error (msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "the body is over the limit");
    return;
  }
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  const char *text = body->data ? body->data : "";
  if (!sedp_json_check_nesting (text, (gsize) body->length, SEDP_PROTOCOL_DEFAULT_MAX_DEPTH,
                                &error) ||
      !json_parser_load_from_data (parser, text, body->length, &error)) {
    g_autofree char *m = g_strdup_printf ("invalid feedback: %s%s",
                                          error->domain == JSON_PARSER_ERROR ? "invalid JSON: " : "",
                                          error->message);
    server_respond_error (msg, SOUP_STATUS_BAD_REQUEST, m);
    return;
  }
  JsonNode *root = json_parser_get_root (parser);
  JsonNode *uid = root && JSON_NODE_HOLDS_OBJECT (root)
                      ? json_object_get_member (json_node_get_object (root), "user_id")
                      : NULL;
  guint64 user = 0;
  gboolean ok = FALSE;
  if (uid && JSON_NODE_HOLDS_VALUE (uid)) {
    if (json_node_get_value_type (uid) == G_TYPE_INT64 && json_node_get_int (uid) >= 0) {
      user = (guint64) json_node_get_int (uid);
      ok = TRUE;
    } else if (json_node_get_value_type (uid) == G_TYPE_STRING) {
      ok = g_ascii_string_to_unsigned (json_node_get_string (uid), 10, 0, G_MAXUINT64, &user, NULL);
    }
  }
  if (!ok) {
    server_respond_error (msg, SOUP_STATUS_BAD_REQUEST,
                   "invalid feedback: user_id: expected a non-negative integer");
    return;
  }
  guint n = sedp_query_cache_invalidate_user_everywhere (user);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "user_id");
  json_builder_add_int_value (b, (gint64) user);
  json_builder_set_member_name (b, "invalidated");
  json_builder_add_int_value (b, n);
  json_builder_end_object (b);
  server_respond_json (msg, SOUP_STATUS_OK, b);
}

static const char *
scope_name (SedpScope s)
{
  return s == SEDP_SCOPE_REQUEST ? "request" : "item";
}

static void
handle_list (SedpServer *server, SoupServerMessage *msg)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_array (b);
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    const SedpGraph *g = sedp_pipeline_get_graph (s->current->pipeline);
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "name");
    json_builder_add_string_value (b, s->name);
    json_builder_set_member_name (b, "path");
    json_builder_add_string_value (b, s->path);
    json_builder_set_member_name (b, "state");
    json_builder_add_string_value (b, server->draining ? "draining"
                                      : s->ready       ? "running"
                                                       : "warming_up");
    json_builder_set_member_name (b, "ready");
    json_builder_add_boolean_value (b, s->ready && !server->draining);
    json_builder_set_member_name (b, "warmup");
    if (s->warmup == NULL)
      json_builder_add_null_value (b);
    else {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "file");
      json_builder_add_string_value (b, s->warmup_file);
      json_builder_set_member_name (b, "records");
      json_builder_add_int_value (b, s->warmup->len);
      json_builder_set_member_name (b, "repeat");
      json_builder_add_int_value (b, s->warmup_repeat);
      json_builder_set_member_name (b, "requests");
      json_builder_add_int_value (b, s->warmup_total);
      json_builder_set_member_name (b, "completed");
      json_builder_add_int_value (b, s->warmup_completed);
      json_builder_set_member_name (b, "timed_out");
      json_builder_add_int_value (b, s->warmup_timed_out);
      json_builder_set_member_name (b, "done");
      json_builder_add_boolean_value (b, s->ready);
      json_builder_set_member_name (b, "seconds");
      gint64 t0 = s->warmup_start, t1 = s->warmup_end ? s->warmup_end : g_get_monotonic_time ();
      json_builder_add_double_value (b, t0 ? round ((double) (t1 - t0) / 1e3) / 1e3 : 0.0);
      json_builder_end_object (b);
    }
    json_builder_set_member_name (b, "deadline_ms");
    json_builder_add_int_value (b, g->spec->deadline_ms);
    json_builder_set_member_name (b, "inflight");
    json_builder_add_int_value (b, sedp_pipeline_get_inflight (s->current->pipeline));
    json_builder_set_member_name (b, "plugins");
    json_builder_begin_array (b);
    g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
    for (guint k = 0; k < g->n_nodes; k++) {
      const char *plugin = g->nodes[g->topo[k]].spec->plugin;
      if (g_hash_table_add (seen, (gpointer) plugin))
        json_builder_add_string_value (b, plugin);
    }
    json_builder_end_array (b);
    json_builder_set_member_name (b, "stages");
    json_builder_begin_array (b);
    for (guint k = 0; k < g->n_nodes; k++) {
      const SedpGraphNode *n = &g->nodes[g->topo[k]];
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, n->spec->name);
      json_builder_set_member_name (b, "plugin");
      json_builder_add_string_value (b, n->spec->plugin);
      json_builder_set_member_name (b, "scope");
      json_builder_add_string_value (b, scope_name (n->scope));
      json_builder_set_member_name (b, "after");
      json_builder_begin_array (b);
      for (char **a = n->spec->after; a && *a; a++)
        json_builder_add_string_value (b, *a);
      json_builder_end_array (b);
      json_builder_set_member_name (b, "options");
      json_builder_begin_object (b);
      for (guint o = 0; n->spec->option_keys && n->spec->option_keys[o]; o++) {
        json_builder_set_member_name (b, n->spec->option_keys[o]);
        json_builder_add_string_value (b, n->spec->option_values[o]);
      }
      json_builder_end_object (b);
      json_builder_end_object (b);
    }
    json_builder_end_array (b);
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
  server_respond_json (msg, SOUP_STATUS_OK, b);
}

static void
free_gstring (gpointer s)
{
  g_string_free (s, TRUE);
}

/* Every pipeline's metrics with a pipeline="NAME" label, each family (HELP, TYPE, samples) once. */
static void
handle_metrics (SedpServer *server, SoupServerMessage *msg)
{
  g_autoptr (GPtrArray) order = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) families = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GPtrArray) texts = g_ptr_array_new_with_free_func (free_gstring);
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    g_autoptr (GString) text = g_string_new (NULL);
    sedp_metrics_write_prometheus (sedp_pipeline_get_metrics (s->current->pipeline), text);
    g_autoptr (GString) stats = g_string_new (NULL);
    sedp_pipeline_collect_stats (s->current->pipeline, stats);
    sedp_metrics_write_stats (stats->str, text); /* the stages' stats callbacks, as families */
    g_autofree char *label = g_strdup_printf ("{pipeline=\"%s\",", s->name);
    g_auto (GStrv) lines = g_strsplit (text->str, "\n", -1);
    GString *family = NULL;
    for (char **l = lines; *l; l++) {
      if (**l == '\0')
        continue;
      if (g_str_has_prefix (*l, "# HELP ") || g_str_has_prefix (*l, "# TYPE ")) {
        const char *name = *l + 7;
        const char *end = strchr (name, ' ');
        g_autofree char *key = g_strndup (name, end ? (gsize) (end - name) : strlen (name));
        family = g_hash_table_lookup (families, key);
        if (family == NULL) {
          family = g_string_new (NULL);
          g_ptr_array_add (order, g_strdup (key));
          g_ptr_array_add (texts, family);
          g_hash_table_insert (families, g_steal_pointer (&key), family);
        }
        if (strstr (family->str, *l) == NULL)
          g_string_append_printf (family, "%s\n", *l);
        continue;
      }
      if (family) {
        /* A sample: the pipeline label first (HELP texts are left as they are). */
        const char *brace = strchr (*l, '{');
        if (brace)
          g_string_append_printf (family, "%.*s%s%s\n", (int) (brace - *l), *l, label, brace + 1);
        else
          g_string_append_printf (family, "%s\n", *l);
      }
    }
  }
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < order->len; i++) {
    GString *f = g_hash_table_lookup (families, order->pdata[i]);
    g_string_append_len (out, f->str, (gssize) f->len);
  }
  admin_write_metrics (server, out);
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  gsize len = out->len;
  soup_server_message_set_response (msg, "text/plain; version=0.0.4; charset=utf-8",
                                    SOUP_MEMORY_TAKE, g_string_free (out, FALSE), len);
}

static void
handler (SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
         gpointer user_data)
{
  SedpServer *server = user_data;
  if (soup_server_message_get_status (msg) != 0)
    return; /* answered by the early handler */
  const char *method = soup_server_message_get_method (msg);
  if (model_api_handle (server, msg, path) || admin_handle (server, msg, path, query))
    return;
  if (g_str_has_prefix (path, "/v1/pipelines/")) {
    const char *name = path + strlen ("/v1/pipelines/");
    const char *colon = strrchr (name, ':');
    if (colon == NULL || strcmp (colon, ":predict") != 0) {
      g_autofree char *m = g_strdup_printf ("no such endpoint: %s (expected /v1/pipelines/NAME:predict)", path);
      server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
      return;
    }
    Served *s = find_served (server, name, (gsize) (colon - name));
    if (s == NULL) {
      g_autofree char *n = g_strndup (name, (gsize) (colon - name));
      g_autofree char *m = g_strdup_printf ("no pipeline named '%s'", n);
      server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
      return;
    }
    server_handle_predict (server, msg, s, FALSE);
  } else if (strcmp (path, "/v1/feedback") == 0) {
    handle_feedback (server, msg);
  } else if (strcmp (path, "/healthz") == 0 || strcmp (path, "/v1/pipelines") == 0 ||
             strcmp (path, "/metrics") == 0) {
    if (strcmp (method, SOUP_METHOD_GET) != 0 && strcmp (method, SOUP_METHOD_HEAD) != 0) {
      server_method_not_allowed (msg, "GET, HEAD");
      return;
    }
    if (path[1] == 'h') {
      g_autofree char *warming = NULL;
      for (guint i = 0; i < server->served->len && warming == NULL; i++) {
        Served *s = server->served->pdata[i];
        if (!s->ready)
          warming = g_strdup_printf ("warming up: pipeline '%s' (%u of %u warm-up requests done)",
                                     s->name, s->warmup_completed, s->warmup_total);
      }
      if (server->draining)
        unavailable (msg, "the server is shutting down");
      else if (warming)
        unavailable (msg, warming);
      else
        respond_text (msg, SOUP_STATUS_OK, "ok");
    } else if (path[1] == 'v')
      handle_list (server, msg);
    else
      handle_metrics (server, msg);
  } else {
    g_autofree char *m = g_strdup_printf ("no such endpoint: %s", path);
    server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
  }
}

/* ---- the server ---- */

SedpServer *
sedp_server_new (gsize max_body)
{
  SedpServer *server = g_new0 (SedpServer, 1);
  server->max_body = max_body ? max_body : SEDP_SERVER_DEFAULT_MAX_BODY;
  server->context = g_main_context_ref_thread_default ();
  server->served = g_ptr_array_new_with_free_func (served_free);
  g_mutex_init (&server->load_lock);
  server->soup = soup_server_new ("server-header", "sedp ", NULL);
  soup_server_add_early_handler (server->soup, NULL, early_handler, server, NULL);
  soup_server_add_handler (server->soup, NULL, handler, server, NULL);
  if (soup_get_major_version () == 3 && soup_get_minor_version () < 3)
    g_signal_connect (server->soup, "request-started", G_CALLBACK (close_after_response), NULL);
  return server;
}

/* The pipeline's name: its [pipeline] name, else the file's base name without extension. */
static char *
served_name (const SedpGraph *graph, const char *path)
{
  const char *name = graph->spec->name;
  if (name && *name)
    return g_strdup (name);
  char *base = g_path_get_basename (path);
  char *dot = strrchr (base, '.');
  if (dot)
    *dot = '\0';
  return base;
}

/* Loads @s's warm-up records when the pipeline has some (then it is not ready until sent). */
static gboolean
served_load_warmup (Served *s, const SedpPipelineSpec *spec, GError **error)
{
  s->ready = TRUE;
  if (spec->warmup == NULL)
    return TRUE;
  s->warmup = sedp_warmup_load (spec, error);
  if (s->warmup == NULL)
    return FALSE;
  s->warmup_file = g_strdup (spec->warmup);
  s->warmup_repeat = spec->warmup_repeat;
  s->warmup_total = s->warmup->len * s->warmup_repeat;
  s->ready = FALSE;
  return TRUE;
}

/* The model API's signature of @s: a bare model's from its ONNX file, a pipeline's from its
 * [signature] group or its outputs (docs/compat.md). */
static gboolean
served_load_signature (Served *s, const SedpGraph *graph, GError **error)
{
  s->signature = s->model_path ? sedp_model_api_signature_for_model (s->model_path, error)
                               : sedp_model_api_signature_for_pipeline (graph->spec, error);
  if (s->signature == NULL)
    return FALSE;
  if (s->signature->outputs->len > 0)
    return TRUE;
  /* A pipeline that names no outputs answers the columns its stages declare they write (a
   * model_inference stage's outputs). */
  g_auto (GStrv) writes = sedp_graph_declared_writes (graph);
  for (guint i = 0; writes[i]; i++) {
    SedpModelApiTensor t = {.name = writes[i], .column = writes[i]};
    sedp_model_api_signature_add_output (s->signature, &t);
  }
  return TRUE;
}

/* Serves the pipeline of @text (taken), read from @path; @model_path for a bare model. */
static gboolean
add_served (SedpServer *server, const char *path, char *text, const char *model_path,
            SedpRegistry *registry, GError **error)
{
  g_autofree char *owned = text;
  g_autoptr (SedpPipelineSpec) spec = sedp_pipeline_spec_parse (text, strlen (text), path, error);
  g_autoptr (SedpGraph) graph = spec ? sedp_graph_compile (g_steal_pointer (&spec), registry, error)
                                     : NULL;
  if (graph == NULL)
    return FALSE;
  g_autofree char *name = served_name (graph, path);
  if (find_served (server, name, strlen (name))) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s: a pipeline named '%s' is served already",
                 path, name);
    return FALSE;
  }
  Served *s = g_new0 (Served, 1);
  s->name = g_steal_pointer (&name);
  s->path = g_strdup (path);
  s->spec_text = g_steal_pointer (&owned);
  s->model_path = g_strdup (model_path);
  s->registry = registry;
  s->outputs = g_strdupv (graph->spec->outputs);
  if (!served_load_signature (s, graph, error) ||
      !served_load_warmup (s, graph->spec, error) ||
      (s->current = instance_new (server, s, g_steal_pointer (&graph), error)) == NULL) {
    served_free (s);
    return FALSE;
  }
  reloader_new (server, s);
  g_ptr_array_add (server->served, s);
  return TRUE;
}

gboolean
sedp_server_add_pipeline (SedpServer *server, const char *path, SedpRegistry *registry,
                          GError **error)
{
  char *text = NULL;
  g_autoptr (GError) io = NULL;
  if (!g_file_get_contents (path, &text, NULL, &io)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_IO, "%s: %s", path, io->message);
    return FALSE;
  }
  return add_served (server, path, text, NULL, registry, error);
}

gboolean
sedp_server_add_model (SedpServer *server, const char *name, const char *model_path,
                       SedpRegistry *registry, GError **error)
{
  g_autofree char *absolute = g_canonicalize_filename (model_path, NULL);
  if (!g_file_test (absolute, G_FILE_TEST_IS_REGULAR)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                 "--model %s=%s: no such file (the ONNX model to serve as '%s')", name,
                 model_path, name);
    return FALSE;
  }
  char *text = sedp_pipeline_text_for_model (name, absolute, 0);
  if (add_served (server, absolute, text, absolute, registry, error))
    return TRUE;
  g_prefix_error (error, "--model %s=%s: ", name, model_path);
  return FALSE;
}

gboolean
sedp_server_set_admin_token_file (SedpServer *server, const char *path, GError **error)
{
  g_autofree char *token = admin_read_token (path, error);
  if (token == NULL)
    return FALSE;
  if (server->admin_token)
    sodium_memzero (server->admin_token, strlen (server->admin_token));
  g_free (server->admin_token);
  server->admin_token = g_steal_pointer (&token);
  return TRUE;
}

/* The two ends' addresses of a connection that has no IP ones (a socket pair: the tests,
 * tests/fuzz), which libsoup wants: those of a loopback connection to the server's port. */
static void
loopback_ends (SedpServer *server, GSocketAddress **local, GSocketAddress **remote)
{
  g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  *local = g_inet_socket_address_new (loopback, (guint16) server->port);
  *remote = g_inet_socket_address_new (loopback, 0);
}

/* Hands a screened connection to libsoup. */
static void
pass_to_soup (GSocketConnection *conn, gpointer data)
{
  SedpServer *server = data;
  g_autoptr (GSocketAddress) local = g_socket_connection_get_local_address (conn, NULL);
  g_autoptr (GSocketAddress) remote = g_socket_connection_get_remote_address (conn, NULL);
  if (!G_IS_INET_SOCKET_ADDRESS (local) || !G_IS_INET_SOCKET_ADDRESS (remote)) {
    g_clear_object (&local);
    g_clear_object (&remote);
    loopback_ends (server, &local, &remote);
  }
  /* libsoup keeps @remote as the connection's remote address: the arrival travels with it. */
  stamp_arrival (G_OBJECT (remote), take_arrival (G_OBJECT (conn)));
  g_autoptr (GError) error = NULL;
  if (!soup_server_accept_iostream (server->soup, G_IO_STREAM (conn), local, remote, &error)) {
    g_debug ("connection dropped before it was served: %s", error->message);
    g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
  }
}

/* How long @conn waited in the kernel's accept queue, at least: the time since its last
 * received data (TCP_INFO's last_data_recv, in milliseconds). The kernel sets that clock when
 * the handshake completes, which is when the connection joins the queue, and again as data
 * arrives, so it never exceeds the wait. 0 when it cannot be read. An overloaded main loop
 * leaves connections there, unseen by any clock of the server, so a request's clock starts
 * this much before its accept. */
static gint64
accept_queue_wait_us (GSocketConnection *conn)
{
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  int fd = g_socket_get_fd (g_socket_connection_get_socket (conn));
  if (getsockopt (fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof (struct tcp_info, tcpi_last_data_recv) + sizeof ti.tcpi_last_data_recv)
    return 0;
  return (gint64) ti.tcpi_last_data_recv * 1000;
}

/* libsoup 3.2 (Debian 12) leaks the GSocket of every connection its own listener accepts: its
 * listen_watch() hands the accepted socket to the new connection, which takes a reference of
 * its own, and never drops the first one. The descriptor is closed with the connection, the
 * object (about 500 bytes) stays: with a connection per request (close_after_response) that
 * was 2 GB a day at 50 requests/s (docs/serving.md#connections). So sedp accepts connections
 * itself, with a GSocketService in the main context, screens their first request line
 * (screen.c) and hands them to libsoup as streams (soup_server_accept_iostream), whose server
 * connections hold no GSocket of their own. */
static gboolean
on_incoming (GSocketService *service, GSocketConnection *conn, GObject *source, gpointer data)
{
  SedpServer *server = data;
  stamp_arrival (G_OBJECT (conn), g_get_monotonic_time () - accept_queue_wait_us (conn));
  /* Small writes are sent at once, as libsoup's own listener does. */
  g_socket_set_option (g_socket_connection_get_socket (conn), IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);
  sedp_screen_connection (conn, server->context, pass_to_soup, server);
  return TRUE; /* handled: the service drops its reference, the screen keeps its own */
}

/* Binds @sa and starts accepting in the main context. */
static gboolean
listen_on (SedpServer *server, const char *address, GSocketAddress *sa, GError **error)
{
  GSocketService *service = g_socket_service_new ();
  GSocketListener *listener = G_SOCKET_LISTENER (service);
  g_socket_listener_set_backlog (listener, SEDP_SERVER_BACKLOG);
  g_autoptr (GSocketAddress) bound = NULL;
  if (!g_socket_listener_add_address (listener, sa, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                                      NULL, &bound, error)) {
    g_prefix_error (error, "--listen '%s': ", address);
    g_object_unref (service);
    return FALSE;
  }
  server->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_signal_connect (service, "incoming", G_CALLBACK (on_incoming), server);
  g_socket_service_start (service);
  server->service = service;
  return TRUE;
}

gboolean
sedp_server_listen (SedpServer *server, const char *address, GError **error)
{
  const char *colon = strrchr (address, ':');
  guint64 port = 0;
  if (colon == NULL || colon == address ||
      !g_ascii_string_to_unsigned (colon + 1, 10, 0, 65535, &port, NULL)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                 "--listen '%s': expected ADDR:PORT (a port from 0 to 65535)", address);
    return FALSE;
  }
  g_autofree char *host = g_strndup (address, (gsize) (colon - address));
  if (host[0] == '[' && host[strlen (host) - 1] == ']') {
    memmove (host, host + 1, strlen (host));
    host[strlen (host) - 1] = '\0';
  }
  g_autoptr (GInetAddress) ia = g_inet_address_new_from_string (host);
  if (ia == NULL) {
    if (strcmp (host, "localhost") == 0)
      ia = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
    else {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "--listen '%s': '%s' is not an IP address", address, host);
      return FALSE;
    }
  }
  g_autoptr (GSocketAddress) sa = g_inet_socket_address_new (ia, (guint16) port);
  return listen_on (server, address, sa, error);
}

gboolean
sedp_server_accept_iostream (SedpServer *server, GIOStream *stream, GError **error)
{
  if (G_IS_SOCKET_CONNECTION (stream)) {
    sedp_screen_connection (G_SOCKET_CONNECTION (stream), server->context, pass_to_soup, server);
    return TRUE;
  }
  g_autoptr (GSocketAddress) local = NULL;
  g_autoptr (GSocketAddress) remote = NULL;
  loopback_ends (server, &local, &remote);
  return soup_server_accept_iostream (server->soup, stream, local, remote, error);
}

guint
sedp_server_get_port (SedpServer *server)
{
  return server->port;
}

static gboolean
shutdown_timeout (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* A thread: sedp_pipeline_stop() blocks until every accepted request completed. */
static gpointer
drain_thread (gpointer data)
{
  SedpServer *server = data;
  for (guint i = 0; i < server->served->len; i++)
    sedp_pipeline_stop (((Served *) server->served->pdata[i])->current->pipeline);
  g_atomic_int_set (&server->drained, 1);
  g_main_context_wakeup (server->context);
  return NULL;
}

void
sedp_server_shutdown (SedpServer *server, guint timeout_ms)
{
  if (server->draining)
    return;
  server->draining = TRUE;
  /* No reload starts from here; one in progress ends (swapping in its version or not), and
   * released versions finish draining, before the serving ones are stopped. */
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    if (s->reloader)
      reloader_stop (s->reloader);
  }
  reload_wait_idle (server);
  /* The main context keeps serving (503 for new requests) and delivering completions while the
   * pipelines drain. */
  GThread *t = g_thread_new ("sedp-drain", drain_thread, server);
  while (!g_atomic_int_get (&server->drained))
    g_main_context_iteration (server->context, TRUE);
  g_thread_join (t);
  /* Every request completed: the warm-up completions are queued on the main context. */
  while (server->n_warming > 0)
    g_main_context_iteration (server->context, TRUE);
  reload_wait_idle (server);
  gboolean expired = FALSE;
  GSource *timer = g_timeout_source_new (timeout_ms);
  g_source_set_callback (timer, shutdown_timeout, &expired, NULL);
  g_source_attach (timer, server->context);
  while (server->n_open > 0 && !expired)
    g_main_context_iteration (server->context, TRUE);
  /* Let the last responses be flushed. */
  while (g_main_context_iteration (server->context, FALSE))
    ;
  g_source_destroy (timer);
  g_source_unref (timer);
}

void
sedp_server_free (SedpServer *server)
{
  if (server == NULL)
    return;
  if (server->warmup_idle) {
    g_source_destroy (server->warmup_idle);
    g_source_unref (server->warmup_idle);
  }
  g_clear_error (&server->warmup_error);
  if (server->service) {
    g_socket_service_stop (server->service);
    g_socket_listener_close (G_SOCKET_LISTENER (server->service));
    g_object_unref (server->service);
  }
  soup_server_disconnect (server->soup);
  g_object_unref (server->soup);
  reload_wait_idle (server);
  g_ptr_array_unref (server->served);
  if (server->admin_token)
    sodium_memzero (server->admin_token, strlen (server->admin_token));
  g_free (server->admin_token);
  g_mutex_clear (&server->load_lock);
  g_main_context_unref (server->context);
  g_free (server);
}
