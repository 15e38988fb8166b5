/* sedp — request_id and deadline_ms read before submission; JSON nesting checked before a parse
 * into a tree (peek.h). */
#include "peek.h"

#include "row-builder.h"
#include "wire.h"

#include <string.h>

#define MAX_REQUEST_ID 256

static void
peek_set_id (SedpProtocolPeek *peek, const char *s, gsize len)
{
  g_clear_pointer (&peek->request_id, g_free);
  if (len > 0 && len <= MAX_REQUEST_ID && g_utf8_validate_len (s, len, NULL) &&
      memchr (s, '\0', len) == NULL)
    peek->request_id = g_strndup (s, len);
}

/* PredictRequest.request_id (field 1) and deadline_ms (field 4) from the top level of a serialized
 * message; stops at anything malformed. The last of each wins, as in protobuf. */
static void
peek_protobuf (const guint8 *data, gsize size, SedpProtocolPeek *peek)
{
  Wire w = {data, data + size};
  guint64 deadline = 0;
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    Wire inner;
    if (field == 4 && type == WT_VARINT) {
      if (!wire_varint (&w, &deadline))
        break;
    } else if (field == 1 && type == WT_LEN) {
      if (!wire_len (&w, &inner))
        break;
      peek_set_id (peek, (const char *) inner.p, (gsize) (inner.end - inner.p));
    } else if (!wire_skip (&w, type)) {
      break;
    }
  }
  peek->deadline_ms = deadline <= SEDP_PROTOCOL_MAX_DEADLINE_MS ? (guint) deadline : 0;
}

/* Past the closing quote of the string whose opening quote is just before @p; NULL at the end.
 * *@escaped says whether it holds a backslash. */
static const char *
skip_string (const char *p, const char *end, gboolean *escaped)
{
  *escaped = FALSE;
  for (;;) {
    const char *q = memchr (p, '"', (gsize) (end - p));
    if (q == NULL)
      return NULL;
    const char *b = q; /* the quote ends the string unless an odd run of backslashes precedes it */
    while (b > p && b[-1] == '\\')
      b--;
    if (q > p && memchr (p, '\\', (gsize) (q - p)))
      *escaped = TRUE;
    if ((q - b) % 2 == 0)
      return q + 1;
    p = q + 1;
  }
}

/* After "request_id" or "deadline_ms" and its colon: the value, into @peek. */
static const char *
peek_member (const char *p, const char *end, gboolean is_id, SedpProtocolPeek *peek)
{
  while (p < end && (g_ascii_isspace (*p) || *p == ':'))
    p++;
  if (is_id) {
    if (p >= end || *p != '"')
      return p;
    gboolean escaped;
    const char *vs = p + 1, *after = skip_string (vs, end, &escaped);
    if (after && !escaped)
      peek_set_id (peek, vs, (gsize) (after - 1 - vs));
    return after ? after : end;
  }
  gboolean quoted = p < end && *p == '"';
  p += quoted;
  guint64 v = 0;
  gboolean digits = FALSE;
  while (p < end && g_ascii_isdigit (*p) && v <= SEDP_PROTOCOL_MAX_DEADLINE_MS) {
    v = v * 10 + (guint64) (*p++ - '0');
    digits = TRUE;
  }
  peek->deadline_ms = digits && v <= SEDP_PROTOCOL_MAX_DEADLINE_MS ? (guint) v : 0;
  return p + (quoted && p < end && *p == '"');
}

/* The top-level "request_id" and "deadline_ms" members of a JSON object. Best effort, and
 * bounded: it gives up on a body that is not an object, deeper than the default nesting limit
 * (the decoder refuses those anyway, and must not find the peek's scan of a deep body before
 * it), and stops at the end of the object or once both members are found. */
static void
peek_json (const char *p, gsize size, SedpProtocolPeek *peek)
{
  const char *end = p + size;
  while (p < end && g_ascii_isspace (*p))
    p++;
  if (p == end || *p != '{')
    return;
  int depth = 0;
  guint found = 0; /* 1: request_id, 2: deadline_ms */
  gboolean key_next = FALSE; /* at depth 1, the next string is a member name */
  while (p < end && found != 3) {
    char c = *p++;
    if (c == '"') {
      gboolean escaped;
      const char *start = p;
      if ((p = skip_string (p, end, &escaped)) == NULL)
        return;
      if (depth != 1 || !key_next)
        continue;
      key_next = FALSE;
      gsize len = (gsize) (p - 1 - start);
      gboolean is_deadline = len == 11 && memcmp (start, "deadline_ms", 11) == 0;
      gboolean is_id = len == 10 && memcmp (start, "request_id", 10) == 0;
      if (is_deadline || is_id) {
        p = peek_member (p, end, is_id, peek);
        found |= is_id ? 1 : 2;
      }
    } else if (c == '{' || c == '[') {
      if (++depth > SEDP_PROTOCOL_DEFAULT_MAX_DEPTH)
        return;
      key_next = depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        return;
    } else if (c == ',' && depth == 1) {
      key_next = TRUE;
    }
  }
}

void
sedp_protocol_peek (const guint8 *data, gsize size, SedpProtocolFormat format,
                    SedpProtocolPeek *peek)
{
  peek->deadline_ms = 0;
  peek->request_id = NULL;
  if (format == SEDP_PROTOCOL_JSON)
    peek_json ((const char *) data, size, peek);
  else
    peek_protobuf (data, size, peek);
}

gboolean
sedp_json_check_nesting (const char *p, gsize size, guint max_depth, GError **error)
{
  const char *start = p, *end = p + size;
  guint depth = 0;
  while (p < end) {
    char c = *p++;
    gboolean escaped;
    if (c == '"') {
      if ((p = skip_string (p, end, &escaped)) == NULL)
        return TRUE;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth)
        return sedp_protocol_over_limit (error, "JSON nested deeper than the limit of %u levels "
                                         "(max_depth) at byte %zu", max_depth,
                                         (gsize) (p - 1 - start));
    } else if ((c == '}' || c == ']') && depth > 0) {
      depth--;
    }
  }
  return TRUE;
}
