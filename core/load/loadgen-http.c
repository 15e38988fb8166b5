/* sedp — the load generator's HTTP transport: a lean HTTP/1.1 client on non-blocking sockets,
 * driven from the run's main context (see loadgen-private.h). The target is resolved once per run;
 * each request gets its own connection ("Connection: close"), a GSource watching its socket
 * through a small state machine (connecting → writing head and body with one sendmsg → reading
 * the answer, parsed as it comes by http-answer.c). The answer is
 * classified (200 with status OK, 503 refused, other codes) or the request fails as a transport
 * error (refused, reset, malformed answer, no answer within http_timeout_s); the send completes
 * at once, and the connection then only waits (at most 1 s) for the server to close first, so
 * that TIME_WAIT stays on the server's side, not on the generator's ephemeral ports. */
#include "http-answer.h"
#include "loadgen-private.h"
#include "../io/predict-pb.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CLOSE_WAIT_US G_USEC_PER_SEC       /* how long an answered connection waits for EOF */

typedef enum {
  CONN_CONNECTING,
  CONN_WRITING,
  CONN_READING,
  CONN_CLOSING, /* answered (its send completed): waiting for the server to close */
} ConnState;

/* One request's connection: a GSource (the run's context holds its only reference) watching
 * its socket. Closed by conn_close(); finalized (socket closed, memory freed) by GLib. */
typedef struct {
  GSource source;
  LoadRun *run;
  LoadSend *s;      /* until its completion, then NULL */
  GList link;       /* in run->http_conns while open (data NULL once unlinked) */
  int fd;           /* -1 when none */
  gpointer tag;     /* fd's tag in the source */
  ConnState state;
  gint64 deadline;  /* monotonic µs: the timeout, or (closing) the end of the wait for EOF */
  char *error;      /* a failure to report: set before the first dispatch */
  /* the request: run->http_head, then length, then body */
  const guint8 *body;
  gsize body_len;
  char length[32]; /* "N\r\n\r\n" */
  gsize length_len;
  gsize sent;      /* bytes of the three written */
  HttpAnswer answer;
} HttpConn;

/* ---- outcomes ---- */

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

/* Records the answer of @code and @body to @s: OK, or a failure by its kind. */
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

/* Ends @c's request: records the answer (@code, @body) or, when @why is set, a transport
 * failure; hands it to on_response; completes the send. @c keeps no pointer to it after. */
static void
conn_finish (HttpConn *c, guint code, GBytes *body, const char *why)
{
  LoadRun *run = c->run;
  LoadSend *s = g_steal_pointer (&c->s);
  gint64 latency_us = g_get_monotonic_time () - s->scheduled_us;
  if (why)
    sedp_loadgen_results_record_failure (run->results, SEDP_LOADGEN_FAILURE_TRANSPORT, NULL, why);
  else
    http_answered (s, code, body, latency_us);
  if (run->config.on_response)
    run->config.on_response (s->index, why ? 0 : code, why ? NULL : body, latency_us,
                             run->config.response_data);
  sedp_loadgen_send_completed (s);
}

/* ---- connections ---- */

/* Closes @c: out of the run's list, its source destroyed (its socket is closed when GLib
 * finalizes it). Idempotent. */
static void
conn_close (HttpConn *c)
{
  if (c->link.data) {
    g_queue_unlink (&c->run->http_conns, &c->link);
    c->link.data = NULL;
  }
  g_source_destroy (&c->source);
}

/* Fails @c's request with @why (a transport error) and closes it. Returns G_SOURCE_REMOVE. */
static gboolean
conn_fail (HttpConn *c, const char *why)
{
  conn_finish (c, 0, NULL, why);
  conn_close (c);
  return G_SOURCE_REMOVE;
}

/* conn_fail() with a message from @format. */
static G_GNUC_PRINTF (2, 3) gboolean
conn_failf (HttpConn *c, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_free (c->error);
  c->error = g_strdup_vprintf (format, ap);
  va_end (ap);
  return conn_fail (c, c->error);
}

/* Records the complete answer; the connection then waits for the server's EOF (closing). */
static gboolean
conn_answered (HttpConn *c, gboolean eof)
{
  g_autoptr (GBytes) body = http_answer_body (&c->answer);
  conn_finish (c, c->answer.code, body, NULL);
  http_answer_clear (&c->answer);
  if (eof) {
    conn_close (c);
    return G_SOURCE_REMOVE;
  }
  c->state = CONN_CLOSING;
  c->deadline = g_get_monotonic_time () + CLOSE_WAIT_US;
  g_source_set_ready_time (&c->source, c->deadline);
  return G_SOURCE_CONTINUE;
}

/* Reads what came of the answer; records it once complete or failed. */
static gboolean
conn_read (HttpConn *c)
{
  for (;;) {
    gsize room;
    guint8 *to = http_answer_room (&c->answer, &room);
    gssize n = read (c->fd, to, room);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return G_SOURCE_CONTINUE;
    if (n < 0)
      return conn_failf (c, "reading the answer from %s: %s", c->run->http_where,
                         g_strerror (errno));
    HttpAnswerParse p = n == 0 ? http_answer_end (&c->answer) : http_answer_add (&c->answer, n);
    if (p == HTTP_ANSWER_DONE)
      return conn_answered (c, n == 0);
    if (p == HTTP_ANSWER_BAD)
      return conn_fail (c, c->answer.error);
  }
}

/* ---- the request ---- */

/* The request's bytes not yet written (head, length, body) as up to 3 iovecs; returns how many. */
static int
request_iov (HttpConn *c, struct iovec *iov)
{
  const void *part[3] = {c->run->http_head, c->length, c->body};
  gsize len[3] = {c->run->http_head_len, c->length_len, c->body_len};
  gsize skip = c->sent;
  int n = 0;
  for (int i = 0; i < 3; i++) {
    gsize k = MIN (skip, len[i]);
    skip -= k;
    if (len[i] > k)
      iov[n++] = (struct iovec) {(guint8 *) part[i] + k, len[i] - k};
  }
  return n;
}

/* Writes what it can of the request; once it is all written, waits for the answer. */
static gboolean
conn_write (HttpConn *c)
{
  gsize total = c->run->http_head_len + c->length_len + c->body_len;
  while (c->sent < total) {
    struct iovec iov[3];
    struct msghdr m = {.msg_iov = iov};
    m.msg_iovlen = request_iov (c, iov);
    gssize n = sendmsg (c->fd, &m, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return G_SOURCE_CONTINUE;
    if (n < 0)
      return conn_failf (c, "writing the request to %s: %s", c->run->http_where,
                         g_strerror (errno));
    c->sent += n;
  }
  c->state = CONN_READING;
  g_source_modify_unix_fd (&c->source, c->tag, G_IO_IN);
  return G_SOURCE_CONTINUE;
}

/* The connection attempt ended (the socket was reported ready): connected, or failed. */
static gboolean
conn_connected (HttpConn *c)
{
  int err = 0;
  socklen_t n = sizeof err;
  if (getsockopt (c->fd, SOL_SOCKET, SO_ERROR, &err, &n) < 0)
    err = errno;
  if (err)
    return conn_failf (c, "connecting to %s: %s", c->run->http_where, g_strerror (err));
  c->state = CONN_WRITING;
  return conn_write (c);
}

/* Answered: reads and drops what else comes until the server closes, the wait ends or an
 * error; then closes. */
static gboolean
conn_drain (HttpConn *c)
{
  char sink[4096];
  for (int i = 0; i < 16; i++) {
    gssize n = read (c->fd, sink, sizeof sink);
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    conn_close (c);
    return G_SOURCE_REMOVE;
  }
  if (g_get_monotonic_time () < c->deadline)
    return G_SOURCE_CONTINUE;
  conn_close (c);
  return G_SOURCE_REMOVE;
}

/* Called by GLib when the socket is ready or the deadline came: advances the connection. */
static gboolean
conn_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  HttpConn *c = (HttpConn *) source;
  GIOCondition ready = c->tag ? g_source_query_unix_fd (source, c->tag) : 0;
  if (c->error)
    return conn_fail (c, c->error);
  if (c->state == CONN_CLOSING)
    return conn_drain (c);
  if (ready) {
    gboolean go_on = c->state == CONN_CONNECTING ? conn_connected (c)
                     : c->state == CONN_WRITING  ? conn_write (c)
                                                 : conn_read (c);
    if (!go_on || c->state == CONN_CLOSING)
      return go_on;
  }
  if (g_get_monotonic_time () < c->deadline)
    return G_SOURCE_CONTINUE;
  return conn_failf (c, "no answer from %s within %u s (http_timeout_s)", c->run->http_where,
                     c->run->config.http_timeout_s);
}

/* Frees what @source's connection holds and closes its socket. */
static void
conn_finalize (GSource *source)
{
  HttpConn *c = (HttpConn *) source;
  if (c->fd >= 0)
    close (c->fd);
  http_answer_clear (&c->answer);
  g_free (c->error);
  g_free (c->s); /* only when the run is torn down with it in flight: not completed then */
}

static GSourceFuncs conn_funcs = {
  .dispatch = conn_dispatch,
  .finalize = conn_finalize,
};

/* Opens @c's non-blocking socket and starts connecting. Returns: NULL, or why it failed at once
 * (the socket then closed). */
static char *
conn_connect (HttpConn *c)
{
  LoadRun *run = c->run;
  if (run->http_addr_len == 0)
    return g_strdup_printf ("connecting to %s: %s", run->http_where, run->http_unresolved);
  c->fd = socket (run->http_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0)
    return g_strdup_printf ("connecting to %s: socket: %s", run->http_where, g_strerror (errno));
  int one = 1;
  setsockopt (c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect (c->fd, (struct sockaddr *) &run->http_addr, run->http_addr_len) == 0
      || errno == EINPROGRESS)
    return NULL;
  int e = errno;
  close (c->fd);
  c->fd = -1;
  return g_strdup_printf ("connecting to %s: %s", run->http_where, g_strerror (e));
}

/* Sends @s on a connection of its own. Always TRUE: a failure, even at once, is reported from
 * the run's main loop, so that the outcome is always recorded (and the send completed) there. */
static gboolean
http_send (LoadSend *s)
{
  LoadRun *run = s->run;
  HttpConn *c = (HttpConn *) g_source_new (&conn_funcs, sizeof (HttpConn));
  g_source_set_static_name (&c->source, "sedp loadgen connection");
  c->run = run;
  c->s = s;
  c->fd = -1;
  http_answer_init (&c->answer, run->http_where);
  GBytes *body = sedp_workload_get_body (run->gen->workload, s->index, NULL);
  c->body = g_bytes_get_data (body, &c->body_len);
  c->length_len = g_snprintf (c->length, sizeof c->length, "%zu\r\n\r\n", c->body_len);
  c->deadline = g_get_monotonic_time () + (gint64) run->config.http_timeout_s * G_USEC_PER_SEC;
  c->error = conn_connect (c);
  if (c->fd >= 0)
    c->tag = g_source_add_unix_fd (&c->source, c->fd, G_IO_OUT);
  g_source_set_ready_time (&c->source, c->error ? 0 : c->deadline);
  c->link.data = c;
  g_queue_push_tail_link (&run->http_conns, &c->link);
  g_source_attach (&c->source, run->context);
  g_source_unref (&c->source);
  return TRUE;
}

/* ---- the run ---- */

/* Resolves @host and @port into run->http_addr (an IPv4 address when there is one), or sets
 * run->http_unresolved. */
static void
target_resolve (LoadRun *run, const char *host, int port)
{
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
  char service[16];
  g_snprintf (service, sizeof service, "%d", port);
  int rc = getaddrinfo (host, service, &hints, &res);
  if (rc != 0) {
    const char *why = rc == EAI_SYSTEM ? g_strerror (errno) : gai_strerror (rc);
    run->http_unresolved = g_strdup_printf ("cannot resolve %s: %s", host, why);
    return;
  }
  const struct addrinfo *a = res;
  while (a->ai_next && a->ai_family != AF_INET)
    a = a->ai_next;
  if (a->ai_family != AF_INET)
    a = res;
  memcpy (&run->http_addr, a->ai_addr, MIN (a->ai_addrlen, sizeof run->http_addr));
  run->http_addr_len = MIN (a->ai_addrlen, sizeof run->http_addr);
  freeaddrinfo (res);
}

/* The request head, the same for every request of the run, up to the Content-Length value:
 * `POST path?query HTTP/1.1`, Host, Content-Type, Connection: close. */
static char *
head_new (LoadRun *run, const char *host, int port)
{
  GUri *uri = run->gen->uri;
  const char *path = g_uri_get_path (uri), *query = g_uri_get_query (uri);
  gboolean v6 = strchr (host, ':') != NULL;
  g_autofree char *host_field = port == 80 ? g_strdup_printf (v6 ? "[%s]" : "%s", host)
                                           : g_strdup (run->http_where);
  return g_strdup_printf ("POST %s%s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n"
                          "Connection: close\r\nContent-Length: ",
                          *path ? path : "/", query ? "?" : "", query ? query : "", host_field,
                          sedp_workload_get_content_type (run->gen->workload));
}

/* Resolves the target and builds the request head. Never fails: an unresolved host fails each
 * request instead, as a transport error. */
static gboolean
http_start (LoadRun *run, GError **error)
{
  (void) error;
  GUri *uri = run->gen->uri;
  const char *host = g_uri_get_host (uri);
  int port = g_uri_get_port (uri) > 0 ? g_uri_get_port (uri) : 80;
  run->http_where = g_strdup_printf (strchr (host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  run->http_head = head_new (run, host, port);
  run->http_head_len = strlen (run->http_head);
  target_resolve (run, host, port);
  return TRUE;
}

/* Closes every connection still open (answered ones waiting for EOF, normally). */
static void
http_stop (LoadRun *run)
{
  GList *l;
  while ((l = g_queue_peek_head_link (&run->http_conns)) != NULL)
    conn_close (l->data);
  g_clear_pointer (&run->http_unresolved, g_free);
  g_clear_pointer (&run->http_where, g_free);
  g_clear_pointer (&run->http_head, g_free);
}

const LoadTransport sedp_loadgen_http_transport = {
  .start = http_start,
  .send = http_send,
  .stop = http_stop,
};
