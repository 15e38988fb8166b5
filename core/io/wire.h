/* sedp — the protobuf wire format's primitives: the one varint reader and writer of sedp. Reading
 * is in place over a byte range (the request decoders, the server's peek, the ONNX reader, the
 * request log, the model API); writing appends to a GByteArray (the load generator's encoder, the
 * request log, the model API's encoders). Header-only: every function is static inline and
 * reentrant. */
#pragma once

#include <glib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* A cursor over one message's bytes. */
typedef struct {
  const guint8 *p, *end;
} Wire;

/* Feeds the next byte of a varint into *@v (both *@v and *@shift start at 0): 1 when the byte ends
 * the varint, 0 when more follow, -1 when the varint is longer than 10 bytes, -2 when its value
 * passes 64 bits. For readers that take bytes one at a time (the request log's stream). */
static inline int
wire_varint_feed (guint64 *v, guint *shift, guint8 byte)
{
  if (*shift == 63 && (byte & 0x7e))
    return -2;
  *v |= (guint64) (byte & 0x7f) << *shift;
  if (!(byte & 0x80))
    return 1;
  *shift += 7;
  return *shift > 63 ? -1 : 0;
}

/* Reads a varint; FALSE when it is truncated, longer than 10 bytes or past 64 bits. */
static inline gboolean
wire_varint (Wire *w, guint64 *out)
{
  if (G_LIKELY (w->p < w->end && *w->p < 0x80)) { /* one byte: tags, lengths, small values */
    *out = *w->p++;
    return TRUE;
  }
  guint64 v = 0;
  guint shift = 0;
  while (w->p < w->end) {
    int r = wire_varint_feed (&v, &shift, *w->p++);
    if (r == 1) {
      *out = v;
      return TRUE;
    }
    if (r < 0)
      return FALSE;
  }
  return FALSE; /* truncated */
}

/* The next field's number and wire type; FALSE at the end or on a malformed tag (*@bad set). */
static inline gboolean
wire_tag (Wire *w, guint32 *field, guint *type, gboolean *bad)
{
  guint64 tag;
  *bad = FALSE;
  if (w->p >= w->end)
    return FALSE;
  if (!wire_varint (w, &tag) || (tag >> 3) == 0 || (tag >> 3) > G_MAXUINT32) {
    *bad = TRUE;
    return FALSE;
  }
  *field = (guint32) (tag >> 3);
  *type = (guint) (tag & 7);
  return TRUE;
}

/* A length-delimited field's bytes. */
static inline gboolean
wire_len (Wire *w, Wire *inner)
{
  guint64 len;
  if (!wire_varint (w, &len) || len > (guint64) (w->end - w->p))
    return FALSE;
  inner->p = w->p;
  inner->end = w->p + len;
  w->p += len;
  return TRUE;
}

static inline gboolean
wire_fixed32 (Wire *w, guint32 *out)
{
  if (w->end - w->p < 4)
    return FALSE;
  *out = (guint32) w->p[0] | (guint32) w->p[1] << 8 | (guint32) w->p[2] << 16 | (guint32) w->p[3] << 24;
  w->p += 4;
  return TRUE;
}

/* Eight little-endian bytes (fixed64, double). */
static inline gboolean
wire_fixed64 (Wire *w, guint64 *out)
{
  guint32 lo, hi;
  if (w->end - w->p < 8 || !wire_fixed32 (w, &lo) || !wire_fixed32 (w, &hi))
    return FALSE;
  *out = (guint64) hi << 32 | lo;
  return TRUE;
}

/* Skips a field of wire type @type (groups are refused: proto3 has none). */
static inline gboolean
wire_skip (Wire *w, guint type)
{
  guint64 v;
  Wire inner;
  switch (type) {
  case WT_VARINT:
    return wire_varint (w, &v);
  case WT_I64:
    if (w->end - w->p < 8)
      return FALSE;
    w->p += 8;
    return TRUE;
  case WT_LEN:
    return wire_len (w, &inner);
  case WT_I32:
    if (w->end - w->p < 4)
      return FALSE;
    w->p += 4;
    return TRUE;
  default:
    return FALSE;
  }
}


/* ---- writing ---- */

/* Appends @v as a varint (1 to 10 bytes). */
static inline void
wire_put_varint (GByteArray *b, guint64 v)
{
  guint8 buf[10];
  guint n = 0;
  do {
    buf[n++] = (guint8) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  g_byte_array_append (b, buf, n);
}

static inline void
wire_put_tag (GByteArray *b, guint field, guint type)
{
  wire_put_varint (b, ((guint64) field << 3) | type);
}

/* A length-delimited field: bytes, a string or an embedded message's bytes. */
static inline void
wire_put_bytes (GByteArray *b, guint field, const void *data, gsize len)
{
  wire_put_tag (b, field, WT_LEN);
  wire_put_varint (b, len);
  g_byte_array_append (b, data, (guint) len);
}

static inline void
wire_put_string (GByteArray *b, guint field, const char *s)
{
  wire_put_bytes (b, field, s ? s : "", s ? strlen (s) : 0);
}

/* Appends @sub as the embedded message @field of @b, and frees @sub. */
static inline void
wire_put_message (GByteArray *b, guint field, GByteArray *sub)
{
  wire_put_bytes (b, field, sub->data, sub->len);
  g_byte_array_unref (sub);
}

/* Four little-endian bytes of @f (no tag: packed values). */
static inline void
wire_put_float (GByteArray *b, float f)
{
  guint32 u;
  memcpy (&u, &f, 4);
  guint8 le[4] = {u & 0xff, (u >> 8) & 0xff, (u >> 16) & 0xff, (u >> 24) & 0xff};
  g_byte_array_append (b, le, 4);
}

static inline void
wire_put_uint_field (GByteArray *b, guint field, guint64 v)
{
  wire_put_tag (b, field, WT_VARINT);
  wire_put_varint (b, v);
}

static inline void
wire_put_float_field (GByteArray *b, guint field, float f)
{
  wire_put_tag (b, field, WT_I32);
  wire_put_float (b, f);
}
