/* sedp — a strict, one-pass JSON scanner (json-scan.h). */
#include "json-scan.h"

#include "row-builder.h"

#include <string.h>

/* What the next token may be. */
typedef enum {
  S_VALUE,          /* a value: at the top, after ':' or after ',' in an array */
  S_VALUE_OR_CLOSE, /* a value or ']': after '[' */
  S_KEY_OR_CLOSE,   /* a key or '}': after '{' */
  S_KEY,            /* a key: after ',' in an object */
  S_COLON,          /* ':' after a key */
  S_AFTER,          /* ',' or the container's end after a value; the end of the text at the top */
} State;

/* A step's outcome: go on, a callback stopped the scan, or the text is not JSON. */
enum { STEP_OK = 1, STEP_CANCELLED = 0, STEP_INVALID = -1 };

typedef struct {
  const guint8 *p, *end;
  const SedpJsonCallbacks *cb;
  void *ctx;
  guint8 *stack; /* '{' or '[' per open container */
  gsize depth, cap;
  GString *buf;  /* unescaped strings */
  const char *why;
} Scan;

static int
invalid (Scan *s, const guint8 *at, const char *why)
{
  s->p = at;
  s->why = why;
  return STEP_INVALID;
}

static inline gboolean
is_digit (guint8 c)
{
  return (guint) (c - '0') < 10;
}

/* ---- numbers ---- */

/* The end of the number at @p by JSON's grammar, or NULL. */
static const guint8 *
number_end (const guint8 *p, const guint8 *end)
{
  if (p < end && *p == '-')
    p++;
  if (p < end && *p == '0')
    p++;
  else if (p < end && *p >= '1' && *p <= '9')
    while (++p < end && is_digit (*p))
      ;
  else
    return NULL;
  if (p < end && *p == '.') {
    if (++p == end || !is_digit (*p))
      return NULL;
    while (++p < end && is_digit (*p))
      ;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    if (++p < end && (*p == '+' || *p == '-'))
      p++;
    if (p == end || !is_digit (*p))
      return NULL;
    while (++p < end && is_digit (*p))
      ;
  }
  return p;
}

static int
number (Scan *s)
{
  const guint8 *e = number_end (s->p, s->end);
  if (e == NULL)
    return invalid (s, s->p, "an invalid number");
  const char *text = (const char *) s->p;
  s->p = e;
  return s->cb->on_number == NULL || s->cb->on_number (s->ctx, text, (size_t) (e - (const guint8 *) text))
             ? STEP_OK : STEP_CANCELLED;
}

/* ---- strings ---- */

static inline gboolean
is_cont (guint8 c)
{
  return (c & 0xC0) == 0x80;
}

/* The end of the UTF-8 character at @q (its first byte ≥ 0x80), or NULL when it is not valid
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static const guint8 *
utf8_end (const guint8 *q, const guint8 *end)
{
  guint8 c = q[0];
  gsize n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || (gsize) (end - q) < n)
    return NULL;
  guint8 lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80; /* the second byte's range */
  guint8 hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (q[1] < lo || q[1] > hi)
    return NULL;
  for (gsize k = 2; k < n; k++)
    if (!is_cont (q[k]))
      return NULL;
  return q + n;
}

static int
emit_string (Scan *s, const guint8 *text, gsize len, gboolean key)
{
  if (key)
    return s->cb->on_map_key == NULL || s->cb->on_map_key (s->ctx, text, len) ? STEP_OK
                                                                                  : STEP_CANCELLED;
  return s->cb->on_string == NULL || s->cb->on_string (s->ctx, text, len) ? STEP_OK
                                                                             : STEP_CANCELLED;
}

/* The four hex digits at @q, or -1. */
static int
hex4 (const guint8 *q, const guint8 *end)
{
  if (end - q < 4)
    return -1;
  int v = 0;
  for (int k = 0; k < 4; k++) {
    int d = g_ascii_xdigit_value ((char) q[k]);
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A \u escape at @q (its backslash) into s->buf; the bytes it took, or 0 when invalid. */
static gsize
unicode_escape (Scan *s, const guint8 *q)
{
  int hi = hex4 (q + 2, s->end);
  if (hi < 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
    return 0;
  gunichar cp = (gunichar) hi;
  gsize took = 6;
  if (hi >= 0xD800 && hi <= 0xDBFF) { /* a pair: \uD8xx\uDCxx */
    int lo = s->end - q >= 12 && q[6] == '\\' && q[7] == 'u' ? hex4 (q + 8, s->end) : -1;
    if (lo < 0xDC00 || lo > 0xDFFF)
      return 0;
    cp = 0x10000 + (((gunichar) hi - 0xD800) << 10) + ((gunichar) lo - 0xDC00);
    took = 12;
  }
  g_string_append_unichar (s->buf, cp);
  return took;
}

/* The rest of a string that has an escape, from @q (the first backslash), unescaped. */
static int
string_escaped (Scan *s, const guint8 *start, const guint8 *q, gboolean key)
{
  if (s->buf == NULL)
    s->buf = g_string_sized_new (64);
  g_string_truncate (s->buf, 0);
  g_string_append_len (s->buf, (const char *) start, q - start);
  while (q < s->end) {
    guint8 c = *q;
    if (c == '"') {
      s->p = q + 1;
      return emit_string (s, (const guint8 *) s->buf->str, s->buf->len, key);
    }
    if (c < 0x20)
      return invalid (s, q, "a control character in a string (escape it)");
    if (c >= 0x80) {
      const guint8 *n = utf8_end (q, s->end);
      if (n == NULL)
        return invalid (s, q, "invalid UTF-8 in a string");
      g_string_append_len (s->buf, (const char *) q, n - q);
      q = n;
      continue;
    }
    if (c != '\\') {
      g_string_append_c (s->buf, (char) c);
      q++;
      continue;
    }
    static const char plain[] = "\"\\/bfnrt", meant[] = "\"\\/\b\f\n\r\t";
    const char *k = q + 1 < s->end && q[1] ? strchr (plain, q[1]) : NULL;
    gsize took = k ? 2 : q + 1 < s->end && q[1] == 'u' ? unicode_escape (s, q) : 0;
    if (took == 0)
      return invalid (s, q, "an invalid escape in a string");
    if (k)
      g_string_append_c (s->buf, meant[k - plain]);
    q += took;
  }
  return invalid (s, q, "a string that does not end");
}

/* The string whose quote is at s->p: as a key (@key) or a value. */
static int
string (Scan *s, gboolean key)
{
  const guint8 *start = s->p + 1, *q = start, *end = s->end;
  for (;;) {
    while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
      q++;
    if (q == end)
      return invalid (s, q, "a string that does not end");
    if (*q == '"')
      break;
    if (*q == '\\')
      return string_escaped (s, start, q, key);
    if (*q < 0x20)
      return invalid (s, q, "a control character in a string (escape it)");
    const guint8 *n = utf8_end (q, end);
    if (n == NULL)
      return invalid (s, q, "invalid UTF-8 in a string");
    q = n;
  }
  s->p = q + 1;
  return emit_string (s, start, (gsize) (q - start), key);
}

/* ---- values and containers ---- */

static int
literal (Scan *s)
{
  static const char *const words[] = {"true", "false", "null"};
  for (int w = 0; w < 3; w++) {
    gsize n = strlen (words[w]);
    if ((gsize) (s->end - s->p) < n || memcmp (s->p, words[w], n) != 0)
      continue;
    s->p += n;
    const SedpJsonCallbacks *cb = s->cb;
    gboolean go = w == 2 ? cb->on_null == NULL || cb->on_null (s->ctx)
                         : cb->on_boolean == NULL || cb->on_boolean (s->ctx, w == 0);
    return go ? STEP_OK : STEP_CANCELLED;
  }
  return invalid (s, s->p, "an unexpected character");
}

static int
open_container (Scan *s, guint8 kind, State *st)
{
  if (s->depth == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->stack = g_realloc (s->stack, s->cap);
  }
  s->stack[s->depth++] = kind;
  s->p++;
  *st = kind == '{' ? S_KEY_OR_CLOSE : S_VALUE_OR_CLOSE;
  int (*start) (void *) = kind == '{' ? s->cb->on_start_map : s->cb->on_start_array;
  return start == NULL || start (s->ctx) ? STEP_OK : STEP_CANCELLED;
}

static int
close_container (Scan *s, State *st)
{
  guint8 kind = s->stack[--s->depth];
  s->p++;
  *st = S_AFTER;
  int (*end) (void *) = kind == '{' ? s->cb->on_end_map : s->cb->on_end_array;
  return end == NULL || end (s->ctx) ? STEP_OK : STEP_CANCELLED;
}

static int
value (Scan *s, State *st)
{
  guint8 c = *s->p;
  if (c == '{' || c == '[')
    return open_container (s, c, st);
  *st = S_AFTER;
  if (c == '"')
    return string (s, FALSE);
  if (c == '-' || is_digit (c))
    return number (s);
  return literal (s);
}

/* After a value: ',' or the end of the open container. */
static int
after (Scan *s, State *st)
{
  guint8 c = *s->p;
  if (s->depth == 0)
    return invalid (s, s->p, "text after the JSON value");
  guint8 kind = s->stack[s->depth - 1];
  if (c == ',') {
    s->p++;
    *st = kind == '{' ? S_KEY : S_VALUE;
    return STEP_OK;
  }
  if ((kind == '{' && c == '}') || (kind == '[' && c == ']'))
    return close_container (s, st);
  return invalid (s, s->p, kind == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
}

static int
step (Scan *s, State *st)
{
  guint8 c = *s->p;
  switch (*st) {
  case S_VALUE_OR_CLOSE:
    if (c == ']')
      return close_container (s, st);
    return value (s, st);
  case S_VALUE:
    return value (s, st);
  case S_KEY_OR_CLOSE:
    if (c == '}')
      return close_container (s, st);
    /* fall through */
  case S_KEY:
    if (c != '"')
      return invalid (s, s->p, "expected a key (a string)");
    *st = S_COLON;
    return string (s, TRUE);
  case S_COLON:
    if (c != ':')
      return invalid (s, s->p, "expected ':' after a key");
    s->p++;
    *st = S_VALUE;
    return STEP_OK;
  case S_AFTER:
  default:
    return after (s, st);
  }
}

SedpJsonScanStatus
sedp_json_scan (const guint8 *data, gsize size, const SedpJsonCallbacks *callbacks, void *ctx,
                const char **why, gsize *offset)
{
  Scan s = {data, data + size, callbacks, ctx, NULL, 0, 0, NULL, NULL};
  State st = S_VALUE;
  int r = STEP_OK;
  for (;;) {
    while (s.p < s.end && (*s.p == ' ' || *s.p == '\n' || *s.p == '\r' || *s.p == '\t'))
      s.p++;
    if (s.p == s.end)
      break;
    if ((r = step (&s, &st)) != STEP_OK)
      break;
  }
  if (r == STEP_OK && (st != S_AFTER || s.depth > 0))
    r = invalid (&s, s.p, "the text ends before the JSON value does");
  g_free (s.stack);
  if (s.buf)
    g_string_free (s.buf, TRUE);
  if (why)
    *why = s.why;
  if (offset)
    *offset = (gsize) (s.p - data);
  return r == STEP_OK ? SEDP_JSON_SCAN_OK
         : r == STEP_CANCELLED ? SEDP_JSON_SCAN_CANCELLED
                               : SEDP_JSON_SCAN_INVALID;
}

gboolean
sedp_json_scan_request (const guint8 *data, gsize size, const SedpJsonCallbacks *callbacks,
                        void *ctx, GError **error)
{
  const char *why = NULL;
  gsize at = 0;
  SedpJsonScanStatus st = sedp_json_scan (data, size, callbacks, ctx, &why, &at);
  if (st != SEDP_JSON_SCAN_OK && *error == NULL) /* a callback stops only with its error set */
    sedp_protocol_invalid (error, "invalid JSON: %s (at byte %" G_GSIZE_FORMAT " of %"
                           G_GSIZE_FORMAT ")", why ? why : "the decoder stopped", at, size);
  return *error == NULL;
}

/* ---- writing ---- */

void
sedp_json_append_string (GString *out, const char *s)
{
  g_autofree char *valid = g_utf8_validate (s, -1, NULL) ? NULL : g_utf8_make_valid (s, -1);
  const char *p = valid ? valid : s;
  g_string_append_c (out, '"');
  for (; *p; p++) {
    guchar c = (guchar) *p;
    if (c == '"' || c == '\\') {
      g_string_append_c (out, '\\');
      g_string_append_c (out, (char) c);
    } else if (c < 0x20) {
      g_string_append_printf (out, "\\u%04x", c);
    } else {
      g_string_append_c (out, (char) c);
    }
  }
  g_string_append_c (out, '"');
}
