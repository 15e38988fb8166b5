/* sedp — the protobuf wire format's primitives, read in place over a byte range: the one varint
 * reader of the request decoders (protocol.c) and of the server's peek (peek.c). */
#pragma once

#include <glib.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* A cursor over one message's bytes. */
typedef struct {
  const guint8 *p, *end;
} Wire;

static inline gboolean
wire_varint (Wire *w, guint64 *out)
{
  if (G_LIKELY (w->p < w->end && *w->p < 0x80)) { /* one byte: tags, lengths, small values */
    *out = *w->p++;
    return TRUE;
  }
  guint64 v = 0;
  for (guint shift = 0; shift < 64 && w->p < w->end; shift += 7) {
    guint8 byte = *w->p++;
    v |= (guint64) (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *out = v;
      return TRUE;
    }
  }
  return FALSE; /* truncated, or longer than 10 bytes */
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

