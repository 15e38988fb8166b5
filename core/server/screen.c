/* sedp — a connection's first request line screened before libsoup reads it.
 *
 * libsoup interns the method of every request it parses (SoupServerMessage's method is a
 * g_intern_string(), never freed), so a client that sends requests with methods of its own
 * making (each up to libsoup's 64 KiB header limit) grows the server without bound: 3000 such
 * requests of 1 KiB each kept 3 MB for good. The first bytes of each connection are peeked at
 * (MSG_PEEK: libsoup still reads all of them) and a method that HTTP does not define is
 * answered 501 here, before libsoup sees it. `sedp serve` closes every connection after its
 * response with libsoup < 3.3 (docs/serving.md#connections), so there the first request line
 * is every request line; with later versions a kept-alive connection's later requests are not
 * screened (docs/limits.md). */
#define _GNU_SOURCE /* POLLRDHUP */
#include "screen.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

/* Bytes peeked at: leading empty lines (libsoup skips them), the method and its separator. */
#define PEEK 64
/* Waiting for the rest of a method that arrived in part: from 2 ms, doubling, to 1 s. */
#define RETRY_MIN_MS 2
#define RETRY_MAX_MS 1000
/* The most bytes read and dropped before a refusal is sent (so that the close that follows
 * does not reset the connection before the client read the answer). */
#define DRAIN_MAX (64 * 1024)

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS",
                                      "PATCH", "TRACE", "CONNECT", NULL};

typedef struct {
  GSocketConnection *conn;
  GMainContext *context;
  SedpScreenPass pass;
  gpointer data;
  guint retry_ms;
} Screen;

static void screen_wait (Screen *sc);

static void
screen_free (Screen *sc)
{
  g_object_unref (sc->conn);
  g_main_context_unref (sc->context);
  g_free (sc);
}

static gboolean
known_method (const char *m, gsize len)
{
  for (guint i = 0; methods[i]; i++)
    if (strlen (methods[i]) == len && memcmp (methods[i], m, len) == 0)
      return TRUE;
  return FALSE;
}

/* Reads and drops what the client sent so far, answers 501 with @why and closes. */
static void
refuse (Screen *sc, const char *why)
{
  int fd = g_socket_get_fd (g_socket_connection_get_socket (sc->conn));
  char buf[4096];
  gssize n;
  for (gsize dropped = 0; dropped < DRAIN_MAX; dropped += (gsize) n)
    if ((n = recv (fd, buf, sizeof buf, MSG_DONTWAIT)) <= 0)
      break;
  g_autofree char *first = g_strjoinv (", ", (char **) methods);
  *strrchr (first, ',') = '\0'; /* "GET, …, TRACE" and the last one after "or" */
  const char *last = methods[G_N_ELEMENTS (methods) - 2];
  g_autofree char *body = g_strdup_printf (
    "sedp serve: %s; the request method must be one of %s or %s\n", why, first, last);
  g_autofree char *resp = g_strdup_printf ("HTTP/1.1 501 Not Implemented\r\nServer: sedp\r\n"
                                           "Content-Type: text/plain; charset=utf-8\r\n"
                                           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                           strlen (body), body);
  /* Small: an empty send buffer takes it whole (what it does not take is dropped). */
  G_GNUC_UNUSED gssize sent = send (fd, resp, strlen (resp), MSG_DONTWAIT | MSG_NOSIGNAL);
  shutdown (fd, SHUT_WR);
  g_io_stream_close (G_IO_STREAM (sc->conn), NULL, NULL);
}

/* Whether the client shut its side: no more bytes will come. */
static gboolean
peer_done (Screen *sc)
{
  struct pollfd p = {.fd = g_socket_get_fd (g_socket_connection_get_socket (sc->conn)),
                     .events = POLLRDHUP};
  return poll (&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The method of @buf (@n bytes peeked): TRUE with @sc done (passed, refused or closed), FALSE
 * when more bytes are needed. */
static gboolean
screen_bytes (Screen *sc, const char *buf, gsize n)
{
  gsize start = 0;
  while (start < n && (buf[start] == '\r' || buf[start] == '\n'))
    start++;
  gsize end = start;
  while (end < n && buf[end] != ' ' && buf[end] != '\t' && end - start <= SEDP_SCREEN_MAX_METHOD)
    end++;
  if (end - start > SEDP_SCREEN_MAX_METHOD) {
    refuse (sc, "request method longer than " G_STRINGIFY (SEDP_SCREEN_MAX_METHOD) " bytes");
    return TRUE;
  }
  if (end == n && n < PEEK && !peer_done (sc)) /* no separator yet: more bytes to come */
    return FALSE;
  if (end == n) { /* all there will be (libsoup answers it 400), or blank lines filled PEEK */
    sc->pass (sc->conn, sc->data);
    return TRUE;
  }
  if (known_method (buf + start, end - start)) {
    sc->pass (sc->conn, sc->data);
    return TRUE;
  }
  g_autofree char *shown = g_strndup (buf + start, end - start);
  g_strcanon (shown, G_CSET_A_2_Z G_CSET_a_2_z G_CSET_DIGITS "-_.", '?');
  g_autofree char *why = g_strdup_printf ("unknown request method '%s'", shown);
  refuse (sc, why);
  return TRUE;
}

/* Peeks at what arrived; TRUE when @sc is done. */
static gboolean
screen_peek (Screen *sc)
{
  int fd = g_socket_get_fd (g_socket_connection_get_socket (sc->conn));
  char buf[PEEK];
  gssize n;
  while ((n = recv (fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT)) < 0 && errno == EINTR)
    ;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return FALSE;
  if (n <= 0) { /* closed or reset before its method was known */
    g_io_stream_close (G_IO_STREAM (sc->conn), NULL, NULL);
    return TRUE;
  }
  return screen_bytes (sc, buf, (gsize) n);
}

static gboolean
on_retry (gpointer data)
{
  screen_wait (data);
  return G_SOURCE_REMOVE;
}

static gboolean
on_readable (GSocket *socket, GIOCondition condition, gpointer data)
{
  Screen *sc = data;
  if (screen_peek (sc)) {
    screen_free (sc);
    return G_SOURCE_REMOVE;
  }
  /* Part of a method: the bytes stay unread, so the socket stays readable; look again later. */
  GSource *t = g_timeout_source_new (sc->retry_ms);
  sc->retry_ms = MIN (sc->retry_ms * 2, RETRY_MAX_MS);
  g_source_set_callback (t, on_retry, sc, NULL);
  g_source_attach (t, sc->context);
  g_source_unref (t);
  return G_SOURCE_REMOVE;
}

static void
screen_wait (Screen *sc)
{
  GSocket *socket = g_socket_connection_get_socket (sc->conn);
  GSource *s = g_socket_create_source (socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback (s, (GSourceFunc) (void (*) (void)) on_readable, sc, NULL);
  g_source_attach (s, sc->context);
  g_source_unref (s);
}

void
sedp_screen_connection (GSocketConnection *conn, GMainContext *context, SedpScreenPass pass,
                        gpointer data)
{
  Screen *sc = g_new0 (Screen, 1);
  sc->conn = g_object_ref (conn);
  sc->context = g_main_context_ref (context);
  sc->pass = pass;
  sc->data = data;
  sc->retry_ms = RETRY_MIN_MS;
  screen_wait (sc);
}
