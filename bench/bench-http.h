/* sedp benchmarks — a small HTTP/1.1 client for a server's admin API and /metrics (reload,
 * tenants): one request per connection, the answer read with the load generator's parser
 * (core/load/http-answer.c: chunked coding, interim answers). Link http_answer_sources. */
#pragma once

#include "bench-process.h"
#include "load/http-answer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/time.h>

/* Reads the answer on @fd into @a. */
static inline HttpAnswerParse
bench_http_read_answer (int fd, HttpAnswer *a)
{
  for (;;) {
    gsize room;
    guint8 *at = http_answer_room (a, &room);
    ssize_t r = recv (fd, at, room, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return HTTP_ANSWER_BAD;
    HttpAnswerParse st = r == 0 ? http_answer_end (a) : http_answer_add (a, (gsize) r);
    if (st != HTTP_ANSWER_MORE)
      return st;
  }
}

/* @method @path to the server at @addr (with "Authorization: Bearer @token" when given, no
 * body); returns the HTTP status (0: no answer) and the body in *@body (NUL-terminated; free
 * it). Waits at most 120 s. */
static inline guint
bench_http_call (const struct sockaddr_in *addr, const char *method, const char *path,
                 const char *token, char **body)
{
  *body = NULL;
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct timeval tv = {.tv_sec = 120};
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect (fd, (const struct sockaddr *) addr, sizeof *addr) != 0) {
    close (fd);
    return 0;
  }
  g_autofree char *head = bench_http_head (method, path, NULL, 0, FALSE, ntohs (addr->sin_port));
  g_autoptr (GString) h = g_string_new (head);
  g_autofree char *auth = token ? g_strdup_printf ("Authorization: Bearer %s\r\n", token) : NULL;
  if (auth) /* before the blank line that ends the head */
    g_string_insert (h, (gssize) h->len - 2, auth);
  HttpAnswer a;
  http_answer_init (&a, "sedp serve");
  guint status = 0;
  if (bench_send_all (fd, (const guint8 *) h->str, h->len) &&
      bench_http_read_answer (fd, &a) == HTTP_ANSWER_DONE) {
    g_autoptr (GBytes) b = http_answer_body (&a);
    gsize n;
    const char *data = g_bytes_get_data (b, &n);
    *body = g_strndup (data ? data : "", n);
    status = a.code;
  }
  http_answer_clear (&a);
  close (fd);
  return status;
}

/* The loopback address of the server whose URL is @url (http://HOST:PORT/…); FALSE when it has
 * no port. */
static inline gboolean
bench_http_addr (const char *url, struct sockaddr_in *addr)
{
  char host[256];
  guint port = 0;
  if (sscanf (url, "http://%255[^:]:%u", host, &port) != 2)
    return FALSE;
  memset (addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons ((guint16) port);
  return inet_pton (AF_INET, host, &addr->sin_addr) == 1;
}

/* The value of the first sample of /metrics text @text whose name and labels start with
 * @prefix; -1 when there is none. */
static inline double
bench_metric (const char *text, const char *prefix)
{
  for (const char *p = text; p && *p;) {
    if (g_str_has_prefix (p, prefix)) {
      const char *v = strchr (p, ' ');
      return v ? g_ascii_strtod (v + 1, NULL) : -1;
    }
    p = strchr (p, '\n');
    p = p ? p + 1 : NULL;
  }
  return -1;
}
