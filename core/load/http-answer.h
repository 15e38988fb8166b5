/* sedp — an HTTP/1.1 answer read from a server, parsed as its bytes come (internal to core/load:
 * the load generator's HTTP client, loadgen-http.c, and the fuzz target `http-answer`).
 *
 * The caller reads into the room http_answer_room() gives and reports each read with
 * http_answer_add(), then http_answer_end() at the server's EOF. The parser takes the status line
 * (`HTTP/1.x NNN`), skips interim (1xx) answers and frames the body by Content-Length, chunked
 * transfer coding (decoded in place) or the connection's end. Bounds: a head of 64 KiB, a chunk
 * size line of 1 KiB, trailers of 64 KiB, a body of 256 MiB. Whatever the bytes, the outcome is
 * MORE, DONE or BAD with a message in @error. Not thread-safe: one answer, one thread. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  HTTP_ANSWER_MORE, /* not all in */
  HTTP_ANSWER_DONE, /* complete: code and body are known */
  HTTP_ANSWER_BAD,  /* malformed, or ended short: error says why */
} HttpAnswerParse;

typedef struct {
  const char *where;     /* "HOST:PORT", for messages (borrowed) */
  guint8 *in;            /* what came: the head, then the body (chunked: decoded in place) */
  gsize in_len, in_cap;
  gsize scanned;         /* bytes searched for the head's end */
  gsize head_len;        /* 0 until the head is in */
  guint code;
  gboolean chunked;
  gint64 content_length; /* -1: none */
  gsize chunk_in;        /* chunked: where the next chunk's size line starts */
  gsize chunk_out;       /* chunked: the end of the body decoded in place after the head */
  char *error;           /* after BAD: why (owned) */
} HttpAnswer;

/* An empty answer from the server @where (borrowed: it must outlive @a). */
void http_answer_init (HttpAnswer *a, const char *where);
/* Frees what @a holds; @a may be initialized again. */
void http_answer_clear (HttpAnswer *a);
/* Where the next read goes; *@room: its size (at least 16 KiB). */
guint8 *http_answer_room (HttpAnswer *a, gsize *room);
/* @n bytes were read into the room: whether the answer is complete now. */
HttpAnswerParse http_answer_add (HttpAnswer *a, gsize n);
/* The server closed its side: DONE when the body ran to the end (no framing), else BAD. */
HttpAnswerParse http_answer_end (HttpAnswer *a);
/* After DONE: the body (transfer full). */
GBytes *http_answer_body (const HttpAnswer *a);

G_END_DECLS
