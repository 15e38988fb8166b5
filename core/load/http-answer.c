/* sedp — an HTTP/1.1 answer parsed as its bytes come (see http-answer.h). */
#define _GNU_SOURCE /* memmem */
#include "http-answer.h"

#include <string.h>

#define HEAD_MAX (64 * 1024)                 /* the most bytes of an answer's head */
#define BODY_MAX ((gsize) 256 * 1024 * 1024) /* the largest answer body */
#define READ_MIN (16 * 1024)                 /* the least room offered to a read */

/* HTTP_ANSWER_BAD with a->error from @format. */
static G_GNUC_PRINTF (2, 3) HttpAnswerParse
ended (HttpAnswer *a, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_free (a->error);
  a->error = g_strdup_vprintf (format, ap);
  va_end (ap);
  return HTTP_ANSWER_BAD;
}

/* HTTP_ANSWER_BAD, with a->error "malformed HTTP answer from HOST:PORT: @what". */
static HttpAnswerParse
bad (HttpAnswer *a, const char *what)
{
  return ended (a, "malformed HTTP answer from %s: %s", a->where, what);
}

/* bad() quoting @n bytes at @p (escaped, at most 80) after @what. */
static HttpAnswerParse
bad_quoting (HttpAnswer *a, const char *what, const char *p, gsize n)
{
  g_autofree char *raw = g_strndup (p, MIN (n, 80));
  g_autofree char *quoted = g_strescape (raw, NULL);
  g_autofree char *m = g_strdup_printf ("%s '%s'", what, quoted);
  return bad (a, m);
}

/* ---- the answer: its head ---- */

/* Whether header @name of @n bytes is @want (lower case). */
static gboolean
name_is (const char *name, gsize n, const char *want)
{
  return n == strlen (want) && g_ascii_strncasecmp (name, want, n) == 0;
}

/* Reads the header line @p of @n bytes: Content-Length and Transfer-Encoding matter. */
static HttpAnswerParse
header_parse (HttpAnswer *a, const char *p, gsize n)
{
  const char *colon = memchr (p, ':', n);
  gboolean cl = colon && name_is (p, colon - p, "content-length");
  if (!cl && !(colon && name_is (p, colon - p, "transfer-encoding")))
    return HTTP_ANSWER_DONE;
  g_autofree char *value = g_strstrip (g_strndup (colon + 1, p + n - colon - 1));
  if (!cl) {
    g_autofree char *lower = g_ascii_strdown (value, -1);
    a->chunked = strstr (lower, "chunked") != NULL;
    return HTTP_ANSWER_DONE;
  }
  guint64 v;
  if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &v, NULL))
    return bad_quoting (a, "Content-Length", value, strlen (value));
  if (v > BODY_MAX)
    return bad (a, "a body over 256 MiB");
  a->content_length = (gint64) v;
  return HTTP_ANSWER_DONE;
}

/* Reads the status line @p of @n bytes: `HTTP/1.x NNN[ reason]`. */
static HttpAnswerParse
status_parse (HttpAnswer *a, const char *p, gsize n)
{
  if (n < 12 || memcmp (p, "HTTP/1.", 7) != 0 || !g_ascii_isdigit (p[7]) || p[8] != ' '
      || !g_ascii_isdigit (p[9]) || !g_ascii_isdigit (p[10]) || !g_ascii_isdigit (p[11])
      || (n > 12 && p[12] != ' ') || p[9] == '0')
    return bad_quoting (a, "status line", p, n);
  a->code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  return HTTP_ANSWER_DONE;
}

/* Reads the complete head (a->head_len bytes, ending with an empty line): the status and the
 * body's framing. */
static HttpAnswerParse
head_parse (HttpAnswer *a)
{
  const char *p = (const char *) a->in, *end = p + a->head_len - 2;
  const char *eol = memmem (p, end - p, "\r\n", 2);
  a->chunked = FALSE;
  a->content_length = -1;
  if (status_parse (a, p, eol - p) == HTTP_ANSWER_BAD)
    return HTTP_ANSWER_BAD;
  for (p = eol + 2; p < end; p = eol + 2) {
    eol = memmem (p, end + 2 - p, "\r\n", 2);
    if (header_parse (a, p, eol - p) == HTTP_ANSWER_BAD)
      return HTTP_ANSWER_BAD;
  }
  if (a->code == 204 || a->code == 304)
    a->content_length = 0, a->chunked = FALSE;
  a->chunk_in = a->chunk_out = a->head_len;
  return HTTP_ANSWER_DONE;
}

/* Looks for the head's end in what came; parses the head once it is in, skipping interim (1xx)
 * answers. */
static HttpAnswerParse
head_find (HttpAnswer *a)
{
  for (;;) {
    gsize from = a->scanned > 3 ? a->scanned - 3 : 0;
    const guint8 *end = memmem (a->in + from, a->in_len - from, "\r\n\r\n", 4);
    a->scanned = a->in_len;
    if (end == NULL)
      return a->in_len > HEAD_MAX ? bad (a, "a head over 64 KiB") : HTTP_ANSWER_MORE;
    a->head_len = end + 4 - a->in;
    if (a->head_len > HEAD_MAX)
      return bad (a, "a head over 64 KiB");
    if (head_parse (a) == HTTP_ANSWER_BAD)
      return HTTP_ANSWER_BAD;
    if (a->code >= 200)
      return HTTP_ANSWER_DONE;
    memmove (a->in, a->in + a->head_len, a->in_len - a->head_len);
    a->in_len -= a->head_len;
    a->head_len = a->scanned = 0;
  }
}

/* ---- the answer: its body ---- */

/* Reads a chunk size line @p of @n bytes (hex digits, then maybe `;extensions`). */
static gboolean
chunk_size_parse (const char *p, gsize n, guint64 *size)
{
  gsize i = 0;
  guint64 v = 0;
  for (; i < n && g_ascii_isxdigit (p[i]); i++) {
    if (i == 15)
      return FALSE;
    v = v * 16 + (guint64) g_ascii_xdigit_value (p[i]);
  }
  gsize digits = i;
  while (i < n && (p[i] == ' ' || p[i] == '\t'))
    i++;
  *size = v;
  return digits > 0 && (i == n || p[i] == ';');
}

/* Moves the chunked data not yet decoded down to the end of the decoded body, so that the buffer
 * holds the body and one chunk at most. Returns HTTP_ANSWER_MORE. */
static HttpAnswerParse
chunks_compact (HttpAnswer *a)
{
  gsize rest = a->in_len - a->chunk_in;
  memmove (a->in + a->chunk_out, a->in + a->chunk_in, rest);
  a->in_len = a->chunk_out + rest;
  a->chunk_in = a->chunk_out;
  return HTTP_ANSWER_MORE;
}

/* After the last chunk's size line (its data would start at @data): done at the empty line that
 * ends the trailers. */
static HttpAnswerParse
chunks_end (HttpAnswer *a, gsize data)
{
  if (memmem (a->in + data - 2, a->in_len - data + 2, "\r\n\r\n", 4))
    return HTTP_ANSWER_DONE;
  return a->in_len - data > HEAD_MAX ? bad (a, "trailers over 64 KiB") : chunks_compact (a);
}

/* Decodes the complete chunks that came, in place after the head. */
static HttpAnswerParse
chunks_decode (HttpAnswer *a)
{
  for (;;) {
    const char *line = (const char *) a->in + a->chunk_in;
    gsize avail = a->in_len - a->chunk_in;
    const char *eol = memmem (line, avail, "\r\n", 2);
    if (eol == NULL)
      return avail > 1024 ? bad (a, "a chunk size line over 1 KiB") : chunks_compact (a);
    guint64 size;
    if (!chunk_size_parse (line, eol - line, &size))
      return bad_quoting (a, "chunk size", line, eol - line);
    gsize data = a->chunk_in + (eol - line) + 2;
    if (size == 0)
      return chunks_end (a, data);
    if (size > BODY_MAX - (a->chunk_out - a->head_len))
      return bad (a, "a body over 256 MiB");
    if (a->in_len - data < size + 2)
      return chunks_compact (a);
    if (memcmp (a->in + data + size, "\r\n", 2) != 0)
      return bad (a, "a chunk's data not followed by CRLF");
    memmove (a->in + a->chunk_out, a->in + data, size);
    a->chunk_out += size;
    a->chunk_in = data + size + 2;
  }
}

/* Whether the answer is all in, after more of it came. */
static HttpAnswerParse
answer_parse (HttpAnswer *a)
{
  HttpAnswerParse head = a->head_len ? HTTP_ANSWER_DONE : head_find (a);
  if (head != HTTP_ANSWER_DONE)
    return head;
  if (a->chunked)
    return chunks_decode (a);
  if (a->content_length >= 0)
    return a->in_len - a->head_len >= (gsize) a->content_length ? HTTP_ANSWER_DONE : HTTP_ANSWER_MORE;
  return a->in_len - a->head_len > BODY_MAX ? bad (a, "a body over 256 MiB") : HTTP_ANSWER_MORE;
}

/* ---- the API ---- */

void
http_answer_init (HttpAnswer *a, const char *where)
{
  *a = (HttpAnswer) {.where = where, .content_length = -1};
}

void
http_answer_clear (HttpAnswer *a)
{
  g_free (a->in);
  g_free (a->error);
  http_answer_init (a, a->where);
}

guint8 *
http_answer_room (HttpAnswer *a, gsize *room)
{
  if (a->in_cap - a->in_len < READ_MIN) {
    a->in_cap = MAX (a->in_cap * 2, a->in_len + READ_MIN);
    a->in = g_realloc (a->in, a->in_cap);
  }
  *room = a->in_cap - a->in_len;
  return a->in + a->in_len;
}

HttpAnswerParse
http_answer_add (HttpAnswer *a, gsize n)
{
  g_return_val_if_fail (n <= a->in_cap - a->in_len, HTTP_ANSWER_BAD);
  a->in_len += n;
  return answer_parse (a);
}

HttpAnswerParse
http_answer_end (HttpAnswer *a)
{
  if (a->head_len == 0 && a->in_len == 0)
    return ended (a, "reading the answer from %s: the connection was closed without an answer",
                  a->where);
  if (a->head_len == 0)
    return ended (a, "malformed HTTP answer from %s: the connection was closed within its head "
                     "(after %zu bytes)", a->where, a->in_len);
  if (a->chunked)
    return ended (a, "reading the answer from %s: the connection was closed within the chunked "
                     "body", a->where);
  if (a->content_length >= 0)
    return ended (a, "reading the answer from %s: the connection was closed after %zu of %"
                     G_GINT64_FORMAT " body bytes", a->where, a->in_len - a->head_len,
                  a->content_length);
  return HTTP_ANSWER_DONE;
}

GBytes *
http_answer_body (const HttpAnswer *a)
{
  gsize n = a->chunked                ? a->chunk_out - a->head_len
            : a->content_length >= 0 ? (gsize) a->content_length
                                     : a->in_len - a->head_len;
  return g_bytes_new (a->in + a->head_len, n);
}
