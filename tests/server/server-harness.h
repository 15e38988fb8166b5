/* sedp tests — the `sedp serve` harness: the built binary spawned on a free loopback port, spoken
 * to over raw sockets with HTTP/1.1 (Connection: close). Static functions: include it once per
 * test program. */
#pragma once

/* Each test program uses the helpers it needs. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include "test-common.h"

#include "sedp.pb-c.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the server process ---- */

typedef struct {
  GSubprocess *proc;
  GDataInputStream *err;
  guint port;
  char *dir;
  gboolean signaled; /* SIGTERM sent already */
} Server;


/* Writes each pipeline text to a file (p0.conf, p1.conf, …) and the @files (NULL or NAME,
 * TEXT pairs, NULL-terminated) next to them, and starts sedp serve on the pipelines; extra
 * options after. */
/* When set (NULL-terminated), the server runs under this command (valgrind: test-reload). */
static const char *const *server_wrapper;

static gboolean
server_start_with (Server *s, const char *const *pipelines, const char *const *files,
                   const char *extra)
{
  memset (s, 0, sizeof *s);
  g_autoptr (GError) error = NULL;
  s->dir = g_dir_make_tmp ("sedp-server-XXXXXX", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s->dir);
  for (guint i = 0; files && files[i]; i += 2) {
    g_autofree char *path = g_build_filename (s->dir, files[i], NULL);
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, files[i + 1], -1, NULL));
  }
  g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; server_wrapper && server_wrapper[i]; i++)
    g_ptr_array_add (argv, g_strdup (server_wrapper[i]));
  g_ptr_array_add (argv, g_strdup (SEDP_BINARY));
  g_ptr_array_add (argv, g_strdup ("serve"));
  for (guint i = 0; pipelines[i]; i++) {
    char *path = g_strdup_printf ("%s/p%u.conf", s->dir, i);
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, pipelines[i], -1, NULL));
    g_ptr_array_add (argv, path);
  }
  g_ptr_array_add (argv, g_strdup ("--listen"));
  g_ptr_array_add (argv, g_strdup ("127.0.0.1:0"));
  if (extra)
    g_ptr_array_add (argv, g_strdup (extra));
  g_ptr_array_add (argv, NULL);
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_setenv (launcher, "SEDP_PLUGIN_PATH", SEDP_TEST_PLUGIN_DIR, TRUE);
  /* Every GObject from malloc, where LeakSanitizer and the RSS checks see it (GSlice's slabs
   * hide a leaked object as reachable). */
  g_subprocess_launcher_setenv (launcher, "G_SLICE", "always-malloc", TRUE);
  s->proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s->proc);
  s->err = g_data_input_stream_new (g_subprocess_get_stderr_pipe (s->proc));
  for (;;) {
    g_autofree char *line = g_data_input_stream_read_line (s->err, NULL, NULL, NULL);
    if (line == NULL)
      break;
    const char *p = strstr (line, "listening on http://127.0.0.1:");
    if (p) {
      s->port = (guint) atoi (p + strlen ("listening on http://127.0.0.1:"));
      break;
    }
    fprintf (stderr, "\n  server: %s\n", line);
  }
  CU_ASSERT_NOT_EQUAL (s->port, 0);
  return s->port != 0;
}

static gboolean
server_start (Server *s, const char *const *pipelines, const char *extra)
{
  return server_start_with (s, pipelines, NULL, extra);
}

/* The server's standard error from here to its end (it must be exiting). */
static char *
server_read_rest (Server *s)
{
  GString *out = g_string_new (NULL);
  for (;;) {
    g_autofree char *line = g_data_input_stream_read_line (s->err, NULL, NULL, NULL);
    if (line == NULL)
      break;
    g_string_append_printf (out, "%s\n", line);
  }
  return g_string_free (out, FALSE);
}

/* Sends SIGTERM, waits for the exit; returns the exit status (-1 when killed). */
static int
server_stop (Server *s)
{
  if (s->proc == NULL)
    return -1;
  if (!s->signaled)
    g_subprocess_send_signal (s->proc, SIGTERM);
  g_autoptr (GError) error = NULL;
  g_subprocess_wait (s->proc, NULL, &error);
  int status = g_subprocess_get_if_exited (s->proc) ? g_subprocess_get_exit_status (s->proc) : -1;
  g_clear_object (&s->err);
  g_clear_object (&s->proc);
  g_autoptr (GDir) d = g_dir_open (s->dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (s->dir, n, NULL);
    g_unlink (p);
  }
  g_rmdir (s->dir);
  g_free (s->dir);
  return status;
}

/* ---- a minimal HTTP client ---- */

typedef struct {
  int status;      /* 0: no answer */
  char *headers;   /* the head, lower-cased */
  char *body;      /* NUL-terminated */
  gsize body_len;
} Resp;

static void
resp_clear (Resp *r)
{
  g_free (r->headers);
  g_free (r->body);
  memset (r, 0, sizeof *r);
}

static void http_raw (guint port, const GString *req, Resp *out);

/* The bytes of an HTTP/1.1 request (Connection: close). */
static GString *
http_request (const char *method, const char *path, const char *ctype, const void *body, gsize len)
{
  GString *req = g_string_new (NULL);
  g_string_append_printf (req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method,
                          path);
  if (ctype)
    g_string_append_printf (req, "Content-Type: %s\r\n", ctype);
  if (body || strcmp (method, "POST") == 0)
    g_string_append_printf (req, "Content-Length: %" G_GSIZE_FORMAT "\r\n", len);
  g_string_append (req, "\r\n");
  g_string_append_len (req, body, (gssize) len);
  return req;
}

static void
http (guint port, const char *method, const char *path, const char *ctype, const void *body,
      gsize len, Resp *out)
{
  g_autoptr (GString) req = http_request (method, path, ctype, body, len);
  http_raw (port, req, out);
}

static void http_raw_paced (guint port, const GString *req, gsize split, guint pause_ms, Resp *out);

/* Sends the bytes of @req (a whole HTTP request) and reads the response until the server closes. */
static void
http_raw (guint port, const GString *req, Resp *out)
{
  http_raw_paced (port, req, 0, 0, out);
}

/* Connects to @port and sends @req, waiting @pause_ms after the first @split bytes (a slow
 * client); the socket, or -1. The kernel completes the connection and keeps the bytes even
 * while the server cannot run. */
static int
http_send (guint port, const GString *req, gsize split, guint pause_ms)
{
  int fd = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons ((guint16) port)};
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  int rc;
  while ((rc = connect (fd, (struct sockaddr *) &sa, sizeof sa)) != 0 && errno == EINTR)
    ;
  if (rc != 0) {
    fprintf (stderr, "\n  connect to port %u: %s\n", port, g_strerror (errno));
    close (fd);
    return -1;
  }
  gsize off = 0;
  while (off < req->len) {
    if (split && off == split)
      g_usleep (pause_ms * 1000);
    gsize end = split && off < split ? split : req->len;
    ssize_t n = send (fd, req->str + off, end - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; /* the server may answer (413) and close before reading everything */
    off += (gsize) n;
  }
  return fd;
}

/* Reads the response on @fd until the server closes, and closes @fd. */
static void
http_receive (int fd, guint port, Resp *out)
{
  memset (out, 0, sizeof *out);
  if (fd < 0)
    return;
  g_autoptr (GByteArray) in = g_byte_array_new ();
  guint8 buf[65536];
  for (;;) {
    ssize_t n = recv (fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n < 0)
        fprintf (stderr, "\n  recv from port %u: %s\n", port, g_strerror (errno));
      break;
    }
    g_byte_array_append (in, buf, (guint) n);
  }
  close (fd);
  guint8 nul = 0;
  g_byte_array_append (in, &nul, 1);
  const char *text = (const char *) in->data;
  const char *end = strstr (text, "\r\n\r\n");
  if (end == NULL || sscanf (text, "HTTP/1.%*d %d", &out->status) != 1)
    return;
  out->headers = g_ascii_strdown (text, end - text);
  out->body_len = in->len - 1 - (gsize) (end + 4 - text);
  out->body = g_malloc (out->body_len + 1);
  memcpy (out->body, end + 4, out->body_len + 1);
}

/* http_raw(), waiting @pause_ms after the first @split bytes (a slow client). */
static void
http_raw_paced (guint port, const GString *req, gsize split, guint pause_ms, Resp *out)
{
  http_receive (http_send (port, req, split, pause_ms), port, out);
}

static int
get (guint port, const char *path, Resp *r)
{
  http (port, "GET", path, NULL, NULL, 0, r);
  return r->status;
}

static void
assert_healthy (guint port)
{
  Resp r;
  CU_ASSERT_EQUAL (get (port, "/healthz", &r), 200);
  CU_ASSERT (r.body && strcmp (r.body, "ok\n") == 0);
  resp_clear (&r);
}

/* ---- requests ---- */

static GBytes *
make_protobuf (guint n, guint64 first_id, guint deadline_ms)
{
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  Sedp__Serving__User user = SEDP__SERVING__USER__INIT;
  m.request_id = (char *) "pb";
  m.deadline_ms = deadline_ms;
  m.top_k = 2;
  m.user = &user;
  user.id = 7;
  Sedp__Serving__Item *items = g_new0 (Sedp__Serving__Item, MAX (n, 1));
  Sedp__Serving__Item **itemp = g_new0 (Sedp__Serving__Item *, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    sedp__serving__item__init (&items[i]);
    items[i].id = first_id + i;
    itemp[i] = &items[i];
  }
  m.n_items = n;
  m.items = itemp;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  guint8 *buf = g_malloc (MAX (len, 1));
  sedp__serving__predict_request__pack (&m, buf);
  g_free (items);
  g_free (itemp);
  return g_bytes_new_take (buf, len);
}

static void
predict (guint port, const char *name, const char *ctype, GBytes *body, Resp *r)
{
  g_autofree char *path = g_strdup_printf ("/v1/pipelines/%s:predict", name);
  gsize len;
  const void *data = g_bytes_get_data (body, &len);
  http (port, "POST", path, ctype, data, len, r);
}

static void
predict_json (guint port, const char *name, const char *json, Resp *r)
{
  g_autoptr (GBytes) b = g_bytes_new_static (json, strlen (json));
  predict (port, name, "application/json", b, r);
}

/* ---- tests ---- */

/* The value of the Prometheus sample named @sample (with its labels) in @body; -1 when absent. */
static double
metric_value (const char *body, const char *sample)
{
  const char *p = body ? strstr (body, sample) : NULL;
  return p ? g_ascii_strtod (p + strlen (sample), NULL) : -1;
}

