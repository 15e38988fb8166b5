/* sedp fuzz target `http` — the HTTP front end (core/server/server.c over libsoup): the bytes
 * are what a client sends on one connection. A server made once serves a small pipeline
 * (data_reader, query_cache lookup and store around synthetic_work, as `sedp serve` runs it)
 * under the name "fuzz"; each input is written into one end of a socket pair whose other end
 * the server accepts (sedp_server_accept_iostream()), then the write side is shut, and the main
 * context is iterated until the server has answered and closed the connection: request line and
 * headers, the body limit, every endpoint (predict in protobuf and JSON through the pipeline,
 * feedback, the listing, metrics, health), the client's deadline and request id read from the
 * body. A connection the server keeps open for HANG_SECONDS is a finding. */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SEDP_FUZZ_PLUGIN_DIR
#error "SEDP_FUZZ_PLUGIN_DIR: the build's plugin folder"
#endif

/* The largest body the server takes (413 above): small, for inputs to reach the limit. */
#define MAX_BODY 2048
#define HANG_SECONDS 5
/* Under valgrind (tests/meson.build's setup sets SEDP_VALGRIND) everything is 50 times slower. */
#define HANG_SECONDS_VALGRIND 120

static const char pipeline[] =
    "[pipeline]\nname = fuzz\ndeadline_ms = 2000\noutputs = score\n"
    "[stage reader]\nplugin = data_reader\nmax_items = 256\n"
    "[stage lookup]\nplugin = query_cache\nafter = reader\nmode = lookup\ncache = fuzz\n"
    "capacity = 1000\n"
    "[stage score]\nplugin = synthetic_work\nafter = lookup\noutput = score\n"
    "[stage store]\nplugin = query_cache\nafter = score\nmode = store\ncache = fuzz\n"
    "capacity = 1000\n";

static SedpServer *server;
/* Kept for the process: the pipeline's plugins stay loaded while it lives. */
static SedpRegistry *registry;

/* The client's end of one connection. */
typedef struct {
  int fd;
  const guint8 *data;
  gsize size;
  gsize sent;
  gboolean closed; /* the server closed its end */
  guint64 received;
  char status[64]; /* the response's first line (its start) */
} Client;

static gboolean
client_write (gint fd, GIOCondition condition, gpointer data)
{
  Client *c = data;
  while (c->sent < c->size) {
    ssize_t w = send (fd, c->data + c->sent, c->size - c->sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return G_SOURCE_CONTINUE;
    if (w < 0) { /* the server closed the connection before reading everything */
      c->sent = c->size;
      break;
    }
    c->sent += (gsize) w;
  }
  shutdown (fd, SHUT_WR);
  return G_SOURCE_REMOVE;
}

static gboolean
client_read (gint fd, GIOCondition condition, gpointer data)
{
  Client *c = data;
  char buf[16384];
  for (;;) {
    ssize_t r = recv (fd, buf, sizeof buf, 0);
    if (r > 0) {
      if (c->received == 0) {
        gsize n = MIN ((gsize) r, sizeof c->status - 1);
        memcpy (c->status, buf, n);
        c->status[n] = '\0';
      }
      c->received += (guint64) r;
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return G_SOURCE_CONTINUE;
    c->closed = TRUE; /* end of stream, or reset */
    return G_SOURCE_REMOVE;
  }
}

static gboolean
wake_up (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

static GSource *
add_watch (GMainContext *context, int fd, GIOCondition condition, GUnixFDSourceFunc func,
           Client *c)
{
  GSource *source = g_unix_fd_source_new (fd, condition);
  g_source_set_callback (source, (GSourceFunc) (void (*) (void)) func, c, NULL);
  g_source_attach (source, context);
  return source;
}

/* Hands the server one end of a new socket pair; returns the other, non-blocking. */
static int
connect_client (void)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    g_error ("fuzz: socketpair: %s", g_strerror (errno));
  GError *error = NULL;
  GSocket *socket = g_socket_new_from_fd (sv[0], &error);
  if (socket == NULL)
    g_error ("fuzz: g_socket_new_from_fd: %s", error->message);
  GSocketConnection *connection = g_socket_connection_factory_create_connection (socket);
  if (!sedp_server_accept_iostream (server, G_IO_STREAM (connection), &error))
    g_error ("fuzz: sedp_server_accept_iostream: %s", error->message);
  g_object_unref (connection);
  g_object_unref (socket);
  fcntl (sv[1], F_SETFL, fcntl (sv[1], F_GETFL) | O_NONBLOCK);
  return sv[1];
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  g_autofree char *path = g_build_filename (fuzz_tmpdir (), "fuzz.pipeline", NULL);
  if (!g_file_set_contents (path, pipeline, -1, NULL))
    g_error ("fuzz: cannot write %s", path);
  const char *dirs[] = {SEDP_FUZZ_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  server = sedp_server_new (MAX_BODY);
  GError *error = NULL;
  if (!sedp_server_add_pipeline (server, path, registry, &error))
    g_error ("fuzz: %s", error->message);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GMainContext *context = g_main_context_default ();
  Client c = {.fd = connect_client (), .data = data, .size = size};
  GSource *out = add_watch (context, c.fd, G_IO_OUT, client_write, &c);
  GSource *in = add_watch (context, c.fd, G_IO_IN | G_IO_HUP | G_IO_ERR, client_read, &c);
  GSource *tick = g_timeout_source_new (100);
  g_source_set_callback (tick, wake_up, NULL, NULL);
  g_source_attach (tick, context);
  gint64 hang = g_getenv ("SEDP_VALGRIND") ? HANG_SECONDS_VALGRIND : HANG_SECONDS;
  gint64 deadline = g_get_monotonic_time () + hang * G_USEC_PER_SEC;
  while (!c.closed && g_get_monotonic_time () < deadline)
    g_main_context_iteration (context, TRUE);
  if (!c.closed) {
    fprintf (stderr, "fuzz: the server kept the connection open for %" G_GINT64_FORMAT
             " s (%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " bytes sent, %" G_GUINT64_FORMAT
             " received)\n", hang, c.sent, c.size, c.received);
    abort ();
  }
  g_source_destroy (out);
  g_source_unref (out);
  g_source_destroy (in);
  g_source_unref (in);
  g_source_destroy (tick);
  g_source_unref (tick);
  close (c.fd);
  char *eol = strpbrk (c.status, "\r\n");
  if (eol)
    *eol = '\0';
  fuzz_refused (c.status, NULL);
  /* What the server still had queued for the closed connection. */
  while (g_main_context_iteration (context, FALSE))
    ;
  return 0;
}
