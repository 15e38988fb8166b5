/* sedp — the serving protocol: PredictRequest (protobuf or JSON) → frames, result →
 * PredictResponse. Both front ends type columns by the JSON Lines reader's rules: JSON requests
 * through sedp_frame_from_json_objects(), protobuf ones straight from the Feature oneofs with the
 * same rules (no JSON values built). */
#include "protocol.h"

#include "column-kind.h"
#include "request-file.h"
#include "../runtime/frame-private.h"
#include "sedp.pb-c.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (sedp-protocol-error-quark, sedp_protocol_error)

#define MAX_DEADLINE_MS 3600000u

static gboolean G_GNUC_PRINTF (2, 3)
invalid (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, SEDP_PROTOCOL_ERROR, SEDP_PROTOCOL_ERROR_INVALID, "invalid request: %s", msg);
  return FALSE;
}

void
sedp_protocol_request_clear (SedpProtocolRequest *req)
{
  g_clear_pointer (&req->request_id, g_free);
  g_clear_pointer (&req->items, sedp_frame_unref);
  req->deadline_ms = req->top_k = 0;
}

static gboolean
id_to_node (guint64 id, const char *path, JsonObject *row, const char *column, GError **error)
{
  if (id > (guint64) G_MAXINT64)
    return invalid (error, "%s: %" G_GUINT64_FORMAT " does not fit the int64 column %s (ids up to "
                    "2^63-1; send larger ids as an 'ids' feature, stored as uint64)", path, id, column);
  json_object_set_int_member (row, column, (gint64) id);
  return TRUE;
}

/* ---- protobuf → frames, directly ----
 * The same typing as sedp_frame_from_json_objects() (request-file.c) gives the JSON values that
 * the features stand for, without building them: int_value is an integer, float_value a number,
 * string_value a string, ids an array of integers, floats an array of numbers (an empty one counts
 * as an array of integers, as [] does in JSON). Columns appear in first-seen order; a feature that
 * comes twice in one row keeps its first place and its last value, like a JSON object member. */

typedef enum { SRC_NONE, SRC_INT, SRC_FLOAT, SRC_STRING, SRC_IDS, SRC_FLOATS } Source;

typedef struct {
  Source src;
  guint n; /* SRC_IDS / SRC_FLOATS */
  union {
    gint64 i;
    double d;
    const char *s;
    gsize at;          /* SRC_IDS: the first id in the decode's id arena */
    const guint8 *raw; /* SRC_FLOATS: n little-endian floats in the payload (maybe unaligned) */
  } v;
} PbValue;

typedef struct {
  ColumnKind k;    /* first: a PbColumn is typed as a ColumnKind */
  guint seen;      /* 1 + the last row that has it */
  gsize name_len;
  PbValue *vals;   /* one per row; SRC_NONE where missing */
} PbColumn;

/* The ids of every IdList of one request, decoded once; values refer to them by position. */
typedef struct {
  guint64 *v;
  gsize len, cap;
} IdArena;

static inline void
id_arena_push (IdArena *a, guint64 id)
{
  if (G_UNLIKELY (a->len == a->cap)) {
    a->cap = MAX (a->cap * 2, 1024);
    a->v = g_renew (guint64, a->v, a->cap);
  }
  a->v[a->len++] = id;
}

typedef struct {
  const char *what;   /* "items" or "user" */
  guint n_rows;
  GArray *columns;    /* PbColumn */
  GArray *row_order;  /* guint: the columns of the current row, in first-seen order */
  guint guess;        /* the column the next feature most likely names (features come in order) */
  const IdArena *ids; /* the ids of every IdList, shared by the decode's builders */
  GStringChunk *text; /* names and string values, NUL-terminated */
} PbBuilder;

static void
pb_builder_init (PbBuilder *b, const char *what, guint n_rows, const IdArena *ids, GStringChunk *text)
{
  b->what = what;
  b->n_rows = n_rows;
  b->columns = g_array_new (FALSE, TRUE, sizeof (PbColumn));
  b->row_order = g_array_new (FALSE, FALSE, sizeof (guint));
  b->guess = 0;
  b->ids = ids;
  b->text = text;
}

static void
pb_builder_clear (PbBuilder *b)
{
  for (guint i = 0; i < b->columns->len; i++)
    g_free (g_array_index (b->columns, PbColumn, i).vals);
  g_array_unref (b->columns);
  g_array_unref (b->row_order);
}

/* The column named by the @len bytes at @name (not NUL-terminated), created on first sight.
 * Requests name the same few features in the same order item after item, so the column after
 * the last one found is tried first, then all of them. */
static PbColumn *
pb_column (PbBuilder *b, const char *name, gsize len, guint *index)
{
  guint n = b->columns->len;
  for (guint t = 0; t < n; t++) {
    guint i = (b->guess + t) % n;
    PbColumn *c = &g_array_index (b->columns, PbColumn, i);
    if (c->name_len == len && memcmp (c->k.name, name, len) == 0) {
      b->guess = i + 1;
      *index = i;
      return c;
    }
  }
  PbColumn c = {.k.name = g_string_chunk_insert_len (b->text, name, (gssize) len),
                .name_len = len,
                .vals = g_new0 (PbValue, MAX (b->n_rows, 1))};
  g_array_append_val (b->columns, c);
  b->guess = n + 1;
  *index = n;
  return &g_array_index (b->columns, PbColumn, n);
}

static void
pb_set (PbBuilder *b, guint row, const char *name, gsize len, const PbValue *v)
{
  guint idx;
  PbColumn *c = pb_column (b, name, len, &idx);
  if (c->seen != row + 1) {
    c->seen = row + 1;
    g_array_append_val (b->row_order, idx);
  }
  c->vals[row] = *v;
}

static Kind
pb_kind (const PbValue *v, guint *width)
{
  switch (v->src) {
  case SRC_INT:
    return KIND_INT;
  case SRC_FLOAT:
    return KIND_FLOAT;
  case SRC_STRING:
    return KIND_STRING;
  case SRC_IDS:
    *width = v->n;
    return KIND_IDLIST;
  case SRC_FLOATS:
    *width = v->n;
    return v->n ? KIND_VECTOR : KIND_IDLIST; /* [] is all integers */
  default:
    return KIND_NONE;
  }
}

/* Types @f with one more value of @row (the rules of sedp_column_kind_merge()). */
static gboolean
pb_merge (PbColumn *f, const PbValue *v, guint row, const char *what, GError **error)
{
  guint width = 0;
  Kind k = pb_kind (v, &width);
  g_autofree char *conflict = NULL;
  if (!sedp_column_kind_merge (&f->k, k, width, row, what, &conflict))
    return invalid (error, "%s", conflict);
  return TRUE;
}

/* Types the columns of @row once all its values are set. */
static gboolean
pb_end_row (PbBuilder *b, guint row, GError **error)
{
  for (guint i = 0; i < b->row_order->len; i++) {
    PbColumn *c = &g_array_index (b->columns, PbColumn, g_array_index (b->row_order, guint, i));
    if (!pb_merge (c, &c->vals[row], row, b->what, error))
      return FALSE;
  }
  g_array_set_size (b->row_order, 0);
  return TRUE;
}

static SedpFrame *
pb_builder_frame (PbBuilder *b)
{
  guint n_rows = b->n_rows;
  const guint64 *ids = b->ids->v;
  SedpFrame *frame = sedp_frame_new (n_rows);
  for (guint i = 0; i < b->columns->len; i++) {
    PbColumn *f = &g_array_index (b->columns, PbColumn, i);
    if (f->k.kind == KIND_NONE)
      continue;
    if (f->k.kind == KIND_IDLIST) {
      guint32 *offsets;
      guint64 *values = sedp_column_idlist_data (sedp_frame_add_idlist (frame, f->k.name, f->k.n_values), &offsets);
      guint pos = 0;
      for (guint r = 0; r < n_rows; r++) {
        offsets[r] = pos;
        const PbValue *v = &f->vals[r];
        if (v->src == SRC_IDS && v->n) {
          memcpy (values + pos, ids + v->v.at, (gsize) v->n * sizeof (guint64));
          pos += v->n;
        }
      }
      offsets[n_rows] = pos;
      continue;
    }
    SedpColumnType type = f->k.kind == KIND_INT      ? SEDP_COLUMN_INT64
                          : f->k.kind == KIND_STRING ? SEDP_COLUMN_STRING
                                                   : SEDP_COLUMN_FLOAT32;
    guint width = f->k.kind == KIND_VECTOR ? MAX (f->k.width, 1) : 1;
    SedpColumn *col = sedp_frame_add_column (frame, f->k.name, type, width);
    if (type == SEDP_COLUMN_STRING) {
      for (guint r = 0; r < n_rows; r++)
        if (f->vals[r].src == SRC_STRING)
          sedp_column_set_string (col, r, f->vals[r].v.s);
    } else if (type == SEDP_COLUMN_INT64) {
      gint64 *dst = sedp_column_int64_data (col);
      for (guint r = 0; r < n_rows; r++)
        if (f->vals[r].src == SRC_INT)
          dst[r] = f->vals[r].v.i;
    } else if (f->k.kind == KIND_VECTOR) {
      float *data = sedp_column_float32_data (col);
      for (guint r = 0; r < n_rows; r++) {
        const PbValue *v = &f->vals[r];
        float *dst = data + (gsize) r * width;
        guint n = MIN (v->n, width);
        if (v->src == SRC_FLOATS) {
          memcpy (dst, v->v.raw, (gsize) n * sizeof (float)); /* little-endian, as the wire */
        } else if (v->src == SRC_IDS) {
          for (guint k = 0; k < n; k++) /* as the JSON integer the id stands for */
            dst[k] = (float) (double) (gint64) ids[v->v.at + k];
        }
      }
    } else {
      float *dst = sedp_column_float32_data (col);
      for (guint r = 0; r < n_rows; r++) {
        const PbValue *v = &f->vals[r];
        if (v->src == SRC_FLOAT)
          dst[r] = (float) v->v.d;
        else if (v->src == SRC_INT)
          dst[r] = (float) (double) v->v.i;
      }
    }
  }
  return frame;
}

static gboolean
check_id (guint64 id, const char *path, const char *column, GError **error)
{
  if (id > (guint64) G_MAXINT64)
    return invalid (error, "%s: %" G_GUINT64_FORMAT " does not fit the int64 column %s (ids up to "
                    "2^63-1; send larger ids as an 'ids' feature, stored as uint64)", path, id, column);
  return TRUE;
}

/* ---- the protobuf wire format, read in place ----
 * PredictRequest is walked field by field over the payload (no message tree is unpacked): ids
 * are decoded into one arena, floats are read where they lie, names and strings are copied once
 * per decode. Unknown fields are skipped, as protobuf parsers do; a later value of a singular
 * field or of a oneof replaces the earlier one; repeated ids and floats may come packed or not. */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* A cursor over one message's bytes. */
typedef struct {
  const guint8 *p, *end;
} Wire;

static inline gboolean
wire_varint (Wire *w, guint64 *out)
{
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
static gboolean
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

static float
float_from_bits (guint32 bits)
{
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

/* "not a valid protobuf PredictRequest: PATH: WHY (at byte N of M)" */
static gboolean G_GNUC_PRINTF (4, 5)
malformed (GError **error, const Wire *w, const Wire *whole, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *what = g_strdup_vprintf (format, args);
  va_end (args);
  return invalid (error, "not a valid protobuf PredictRequest (truncated or malformed): %s (at byte "
                  "%zu of %zu)", what, (gsize) (w->p - whole->p), (gsize) (whole->end - whole->p));
}

/* Decoding state of one request. */
typedef struct {
  Wire whole;
  IdArena ids;
  GStringChunk *text;
} WireDecode;

/* The ids of an IdList message (packed or not), appended to the arena. */
static gboolean
wire_ids (WireDecode *d, Wire *w, PbValue *v)
{
  v->src = SRC_IDS;
  v->v.at = d->ids.len;
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    guint64 id;
    if (field == 1 && type == WT_LEN) {
      Wire packed;
      if (!wire_len (w, &packed))
        return FALSE;
      while (packed.p < packed.end) {
        if (!wire_varint (&packed, &id))
          return FALSE;
        id_arena_push (&d->ids, id);
      }
    } else if (field == 1 && type == WT_VARINT) {
      if (!wire_varint (w, &id))
        return FALSE;
      id_arena_push (&d->ids, id);
    } else if (!wire_skip (w, type)) {
      return FALSE;
    }
  }
  v->n = (guint) (d->ids.len - v->v.at);
  return !bad;
}

/* The floats of a FloatList message: read in place when packed in one run (as every encoder
 * writes them); otherwise gathered into the text chunk. */
static gboolean
wire_floats (WireDecode *d, Wire *w, PbValue *v)
{
  v->src = SRC_FLOATS;
  v->n = 0;
  v->v.raw = NULL;
  GByteArray *scattered = NULL;
  guint32 field;
  guint type;
  gboolean bad, ok = TRUE;
  while (ok && wire_tag (w, &field, &type, &bad)) {
    if (field == 1 && (type == WT_LEN || type == WT_I32)) {
      Wire run;
      if (type == WT_LEN) {
        ok = wire_len (w, &run) && (run.end - run.p) % 4 == 0;
      } else if ((ok = w->end - w->p >= 4)) { /* one unpacked float */
        run.p = w->p;
        run.end = w->p += 4;
      }
      if (!ok)
        break;
      guint n = (guint) ((run.end - run.p) / 4);
      if (v->n == 0 && scattered == NULL) {
        v->v.raw = run.p;
      } else {
        if (scattered == NULL) {
          scattered = g_byte_array_new ();
          g_byte_array_append (scattered, v->v.raw, v->n * 4);
        }
        g_byte_array_append (scattered, run.p, n * 4);
      }
      v->n += n;
    } else {
      ok = wire_skip (w, type);
    }
  }
  if (scattered) {
    v->v.raw = (const guint8 *) g_string_chunk_insert_len (d->text, (const char *) scattered->data,
                                                           (gssize) scattered->len);
    g_byte_array_unref (scattered);
  }
  return ok && !bad;
}

/* A Feature message into @v (SRC_NONE when it sets no value). */
static gboolean
wire_feature (WireDecode *d, Wire *w, PbValue *v)
{
  v->src = SRC_NONE;
  guint32 field, bits;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    guint64 u;
    Wire inner;
    if (field == 1 && type == WT_VARINT) {
      if (!wire_varint (w, &u))
        return FALSE;
      v->src = SRC_INT;
      v->v.i = (gint64) u;
    } else if (field == 2 && type == WT_I32) {
      if (!wire_fixed32 (w, &bits))
        return FALSE;
      v->src = SRC_FLOAT;
      v->v.d = float_from_bits (bits);
    } else if (field == 3 && type == WT_LEN) {
      if (!wire_len (w, &inner))
        return FALSE;
      gsize len = (gsize) (inner.end - inner.p);
      if (!g_utf8_validate_len ((const char *) inner.p, len, NULL))
        return FALSE;
      v->src = SRC_STRING;
      v->v.s = g_string_chunk_insert_len (d->text, (const char *) inner.p, (gssize) len);
    } else if (field == 4 && type == WT_LEN) {
      if (!wire_len (w, &inner) || !wire_ids (d, &inner, v))
        return FALSE;
    } else if (field == 5 && type == WT_LEN) {
      if (!wire_len (w, &inner) || !wire_floats (d, &inner, v))
        return FALSE;
    } else if (!wire_skip (w, type)) {
      return FALSE;
    }
  }
  return !bad;
}

/* Where row @row of @b stands in the request, for messages: "user" or "items[ROW]". */
static const char *
row_path (const PbBuilder *b, guint row, char *buf, gsize size)
{
  if (strcmp (b->what, "items") != 0)
    return b->what;
  g_snprintf (buf, size, "items[%u]", row);
  return buf;
}

/* One entry of a `map<string, Feature> features` (key 1, value 2) into row @row of @b. An entry
 * without a value sets nothing. */
static gboolean
wire_feature_entry (WireDecode *d, Wire *w, PbBuilder *b, guint row, GError **error)
{
  char path[32]; /* for messages only */
#define PATH() row_path (b, row, path, sizeof path)
  const guint8 *key = (const guint8 *) "";
  gsize key_len = 0;
  PbValue v = {SRC_NONE};
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    Wire inner;
    if (field == 1 && type == WT_LEN) {
      if (!wire_len (w, &inner))
        return malformed (error, w, &d->whole, "%s.features: a truncated key", PATH ());
      key = inner.p;
      key_len = (gsize) (inner.end - inner.p);
    } else if (field == 2 && type == WT_LEN) {
      if (!wire_len (w, &inner) || !wire_feature (d, &inner, &v))
        return malformed (error, w, &d->whole, "%s.features[\"%.*s\"]: a malformed Feature", PATH (),
                          (int) MIN (key_len, 64), (const char *) key);
    } else if (!wire_skip (w, type)) {
      return malformed (error, w, &d->whole, "%s.features: a malformed entry", PATH ());
    }
  }
  if (bad)
    return malformed (error, w, &d->whole, "%s.features: a malformed entry", PATH ());
  if (memchr (key, '\0', key_len) || !g_utf8_validate_len ((const char *) key, key_len, NULL))
    return invalid (error, "%s.features: a feature name is not valid UTF-8 text", PATH ());
#undef PATH
  if (v.src != SRC_NONE)
    pb_set (b, row, (const char *) key, key_len, &v);
  return TRUE;
}

/* An Item message into row @row of the items builder. */
static gboolean
wire_item (WireDecode *d, Wire *w, PbBuilder *b, guint row, GError **error)
{
  guint64 id = 0;
  gboolean has_escore = FALSE;
  guint32 field, escore = 0;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    Wire inner;
    if (field == 1 && type == WT_VARINT) {
      if (!wire_varint (w, &id))
        return malformed (error, w, &d->whole, "items[%u].id: a truncated varint", row);
    } else if (field == 2 && type == WT_LEN) {
      if (!wire_len (w, &inner))
        return malformed (error, w, &d->whole, "items[%u].features: truncated", row);
      if (!wire_feature_entry (d, &inner, b, row, error))
        return FALSE;
    } else if (field == 3 && type == WT_I32) {
      if (!wire_fixed32 (w, &escore))
        return malformed (error, w, &d->whole, "items[%u].escore: truncated", row);
      has_escore = TRUE;
    } else if (!wire_skip (w, type)) {
      return malformed (error, w, &d->whole, "items[%u]: a malformed field %u", row, field);
    }
  }
  if (bad)
    return malformed (error, w, &d->whole, "items[%u]: a malformed field tag", row);
  if (id > (guint64) G_MAXINT64) {
    char id_path[48];
    g_snprintf (id_path, sizeof id_path, "items[%u].id", row);
    return check_id (id, id_path, "item_id", error);
  }
  if (has_escore) {
    PbValue v = {.src = SRC_FLOAT, .v.d = float_from_bits (escore)};
    pb_set (b, row, "escore", 6, &v);
  }
  PbValue v = {.src = SRC_INT, .v.i = (gint64) id};
  pb_set (b, row, "item_id", 7, &v);
  return pb_end_row (b, row, error);
}

/* A User message into the one row of the user builder (a second `user` field merges into it, as
 * protobuf merges repeated singular messages). */
static gboolean
wire_user (WireDecode *d, Wire *w, PbBuilder *b, guint64 *id, GError **error)
{
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    Wire inner;
    if (field == 1 && type == WT_VARINT) {
      if (!wire_varint (w, id))
        return malformed (error, w, &d->whole, "user.id: a truncated varint");
    } else if (field == 2 && type == WT_LEN) {
      if (!wire_len (w, &inner))
        return malformed (error, w, &d->whole, "user.features: truncated");
      if (!wire_feature_entry (d, &inner, b, 0, error))
        return FALSE;
    } else if (!wire_skip (w, type)) {
      return malformed (error, w, &d->whole, "user: a malformed field %u", field);
    }
  }
  return bad ? malformed (error, w, &d->whole, "user: a malformed field tag") : TRUE;
}

/* A protobuf PredictRequest: the request's fields into @out, its items into out->items, the
 * user's columns merged into @request_frame (when given). */
static gboolean
decode_protobuf (const guint8 *data, gsize size, guint max_items, SedpFrame *request_frame,
                 SedpProtocolRequest *out, GError **error)
{
  WireDecode d = {.whole = {data, data + size}};
  /* 1. the top level: scalars, and where the items and the user are */
  Wire w = d.whole;
  g_autoptr (GArray) items = g_array_new (FALSE, FALSE, sizeof (Wire));
  g_autoptr (GArray) users = g_array_new (FALSE, FALSE, sizeof (Wire));
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    guint64 u;
    Wire inner;
    if (field == 1 && type == WT_LEN) {
      if (!wire_len (&w, &inner))
        return malformed (error, &w, &d.whole, "request_id: truncated");
      gsize len = (gsize) (inner.end - inner.p);
      if (memchr (inner.p, '\0', len) || !g_utf8_validate_len ((const char *) inner.p, len, NULL))
        return invalid (error, "request_id: not valid UTF-8 text");
      g_free (out->request_id);
      out->request_id = len ? g_strndup ((const char *) inner.p, len) : NULL;
    } else if ((field == 2 || field == 3) && type == WT_LEN) {
      if (!wire_len (&w, &inner))
        return malformed (error, &w, &d.whole, "%s: truncated", field == 2 ? "user" : "items");
      g_array_append_val (field == 2 ? users : items, inner);
    } else if ((field == 4 || field == 5) && type == WT_VARINT) {
      if (!wire_varint (&w, &u))
        return malformed (error, &w, &d.whole, "%s: a truncated varint",
                          field == 4 ? "deadline_ms" : "top_k");
      if (field == 4)
        out->deadline_ms = (guint32) u;
      else
        out->top_k = (guint32) u;
    } else if (!wire_skip (&w, type)) {
      return malformed (error, &w, &d.whole, "a malformed field %u", field);
    }
  }
  if (bad)
    return malformed (error, &w, &d.whole, "a malformed field tag");
  if (items->len == 0)
    return invalid (error, "items: a request needs at least one item");
  if (items->len > max_items)
    return invalid (error, "items: %u items, more than the limit of %u", items->len, max_items);
  if (out->deadline_ms > MAX_DEADLINE_MS)
    return invalid (error, "deadline_ms: %u is more than %u", out->deadline_ms, MAX_DEADLINE_MS);
  if (out->top_k > items->len)
    out->top_k = items->len;

  /* 2. the user, then the items */
  d.text = g_string_chunk_new (256);
  gboolean ok = TRUE;
  PbBuilder b;
  if (request_frame) {
    pb_builder_init (&b, "user", 1, &d.ids, d.text);
    guint64 user_id = 0;
    PbValue id = {.src = SRC_INT};
    if (users->len > 0)
      pb_set (&b, 0, "user_id", 7, &id); /* the first column, as in JSON */
    for (guint i = 0; ok && i < users->len; i++)
      ok = wire_user (&d, &g_array_index (users, Wire, i), &b, &user_id, error);
    if (ok && users->len > 0) {
      ok = check_id (user_id, "user.id", "user_id", error);
      id.v.i = (gint64) user_id;
      pb_set (&b, 0, "user_id", 7, &id);
    }
    ok = ok && pb_end_row (&b, 0, error);
    if (ok) {
      SedpFrame *uf = pb_builder_frame (&b);
      sedp_frame_merge_columns (request_frame, uf);
      sedp_frame_unref (uf);
    }
    pb_builder_clear (&b);
  }
  if (ok) {
    pb_builder_init (&b, "items", items->len, &d.ids, d.text);
    for (guint i = 0; ok && i < items->len; i++)
      ok = wire_item (&d, &g_array_index (items, Wire, i), &b, i, error);
    if (ok)
      out->items = pb_builder_frame (&b);
    pb_builder_clear (&b);
  }
  g_free (d.ids.v);
  g_string_chunk_free (d.text);
  return ok;
}

/* ---- JSON ---- */

static gboolean
check_members (JsonObject *o, const char *const *known, const char *path, GError **error)
{
  g_autoptr (GList) members = json_object_get_members (o);
  for (GList *l = members; l; l = l->next)
    if (!g_strv_contains (known, l->data)) {
      g_autofree char *list = g_strjoinv (", ", (char **) known);
      return invalid (error, "%s%s%s: unknown field (expected %s)", path, *path ? "." : "",
                      (const char *) l->data, list);
    }
  return TRUE;
}

static gboolean
json_uint64 (JsonNode *n, const char *path, guint64 *out, GError **error)
{
  if (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64) {
    gint64 v = json_node_get_int (n);
    if (v < 0)
      return invalid (error, "%s: %" G_GINT64_FORMAT " is negative", path, v);
    *out = (guint64) v;
    return TRUE;
  }
  if (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING) {
    /* proto3's JSON form writes 64-bit integers as strings */
    if (g_ascii_string_to_unsigned (json_node_get_string (n), 10, 0, G_MAXUINT64, out, NULL))
      return TRUE;
  }
  return invalid (error, "%s: expected an unsigned 64-bit integer (a number, or a string of digits)",
                  path);
}

/* One feature value: {"int_value": 1} (the oneof, as proto3 JSON writes it) or a bare value
 * (1, 0.5, "s", [1, 2], [0.5, 1]) typed like a JSON Lines request. */
static JsonNode *
json_feature (JsonNode *n, const char *path, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (n)) {
    if (JSON_NODE_HOLDS_ARRAY (n)) {
      JsonArray *a = json_node_get_array (n);
      for (guint k = 0; k < json_array_get_length (a); k++) {
        JsonNode *e = json_array_get_element (a, k);
        if (JSON_NODE_HOLDS_VALUE (e) && json_node_get_value_type (e) == G_TYPE_INT64 &&
            json_node_get_int (e) < 0) {
          invalid (error, "%s[%u]: %" G_GINT64_FORMAT " is negative (ids are unsigned)", path, k,
                   json_node_get_int (e));
          return NULL;
        }
      }
    }
    return json_node_copy (n);
  }
  JsonObject *o = json_node_get_object (n);
  static const char *const kinds[] = {"int_value", "float_value", "string_value", "ids", "floats", NULL};
  if (json_object_get_size (o) != 1) {
    invalid (error, "%s: expected one of int_value, float_value, string_value, ids, floats", path);
    return NULL;
  }
  if (!check_members (o, kinds, path, error))
    return NULL;
  g_autoptr (GList) members = json_object_get_members (o);
  const char *kind = members->data;
  JsonNode *v = json_object_get_member (o, kind);
  GType t = JSON_NODE_HOLDS_VALUE (v) ? json_node_get_value_type (v) : G_TYPE_INVALID;
  if (strcmp (kind, "int_value") == 0) {
    if (t == G_TYPE_INT64)
      return json_node_copy (v);
    gint64 x;
    if (t == G_TYPE_STRING && g_ascii_string_to_signed (json_node_get_string (v), 10, G_MININT64,
                                                         G_MAXINT64, &x, NULL))
      return json_node_init_int (json_node_alloc (), x);
    invalid (error, "%s.int_value: expected an integer", path);
    return NULL;
  }
  if (strcmp (kind, "float_value") == 0) {
    if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE)
      return json_node_init_double (json_node_alloc (), json_node_get_double (v));
    invalid (error, "%s.float_value: expected a number", path);
    return NULL;
  }
  if (strcmp (kind, "string_value") == 0) {
    if (t == G_TYPE_STRING)
      return json_node_copy (v);
    invalid (error, "%s.string_value: expected a string", path);
    return NULL;
  }
  /* ids / floats: an array, or {"ids": [...]} / {"values": [...]} as proto3 JSON writes them */
  gboolean ids = strcmp (kind, "ids") == 0;
  if (JSON_NODE_HOLDS_OBJECT (v)) {
    JsonObject *inner = json_node_get_object (v);
    const char *const inner_known[] = {ids ? "ids" : "values", NULL};
    if (!check_members (inner, inner_known, path, error))
      return NULL;
    v = json_object_get_member (inner, inner_known[0]);
  }
  if (v == NULL || !JSON_NODE_HOLDS_ARRAY (v)) {
    invalid (error, "%s.%s: expected an array of %s", path, kind, ids ? "ids" : "numbers");
    return NULL;
  }
  JsonArray *a = json_node_get_array (v);
  JsonArray *out = json_array_new ();
  for (guint k = 0; k < json_array_get_length (a); k++) {
    JsonNode *e = json_array_get_element (a, k);
    g_autofree char *epath = g_strdup_printf ("%s.%s[%u]", path, kind, k);
    if (ids) {
      guint64 id;
      if (!json_uint64 (e, epath, &id, error)) {
        json_array_unref (out);
        return NULL;
      }
      json_array_add_int_element (out, (gint64) id);
    } else {
      GType et = JSON_NODE_HOLDS_VALUE (e) ? json_node_get_value_type (e) : G_TYPE_INVALID;
      if (et != G_TYPE_INT64 && et != G_TYPE_DOUBLE) {
        json_array_unref (out);
        invalid (error, "%s: expected a number", epath);
        return NULL;
      }
      json_array_add_double_element (out, json_node_get_double (e));
    }
  }
  JsonNode *res = json_node_init_array (json_node_alloc (), out);
  json_array_unref (out);
  return res;
}

static gboolean
json_features (JsonObject *owner, const char *path, JsonObject *row, GError **error)
{
  JsonNode *fn = json_object_get_member (owner, "features");
  if (fn == NULL || JSON_NODE_HOLDS_NULL (fn))
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (fn))
    return invalid (error, "%s.features: expected an object of features", path);
  JsonObject *fo = json_node_get_object (fn);
  g_autoptr (GList) members = json_object_get_members (fo);
  for (GList *l = members; l; l = l->next) {
    g_autofree char *fpath = g_strdup_printf ("%s.features.%s", path, (const char *) l->data);
    JsonNode *v = json_feature (json_object_get_member (fo, l->data), fpath, error);
    if (v == NULL)
      return FALSE;
    json_object_set_member (row, l->data, v);
  }
  return TRUE;
}

static gboolean
json_id (JsonObject *owner, const char *path, JsonObject *row, const char *column, GError **error)
{
  JsonNode *n = json_object_get_member (owner, "id");
  if (n == NULL)
    return TRUE;
  g_autofree char *ipath = g_strdup_printf ("%s.id", path);
  guint64 id;
  return json_uint64 (n, ipath, &id, error) && id_to_node (id, ipath, row, column, error);
}

static gboolean
json_uint32 (JsonObject *o, const char *name, guint *out, GError **error)
{
  JsonNode *n = json_object_get_member (o, name);
  if (n == NULL || JSON_NODE_HOLDS_NULL (n))
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64)
    return invalid (error, "%s: expected an integer", name);
  gint64 v = json_node_get_int (n);
  if (v < 0 || v > G_MAXUINT32)
    return invalid (error, "%s: %" G_GINT64_FORMAT " is out of range", name, v);
  *out = (guint) v;
  return TRUE;
}

/* Parses the JSON text into @m-like pieces: id, deadline, top_k and the rows. */
static gboolean
decode_json (const guint8 *data, gsize size, guint max_items, SedpProtocolRequest *out,
             JsonObject *user, GPtrArray *rows, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new_immutable ();
  g_autoptr (GError) local = NULL;
  if (!json_parser_load_from_data (parser, (const char *) data, (gssize) size, &local))
    return invalid (error, "invalid JSON: %s", local->message);
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return invalid (error, "a request must be a JSON object");
  JsonObject *obj = json_node_get_object (root);
  static const char *const known[] = {"request_id", "user", "items", "deadline_ms", "top_k", NULL};
  if (!check_members (obj, known, "", error))
    return FALSE;
  JsonNode *idn = json_object_get_member (obj, "request_id");
  if (idn && !JSON_NODE_HOLDS_NULL (idn)) {
    if (!JSON_NODE_HOLDS_VALUE (idn) || json_node_get_value_type (idn) != G_TYPE_STRING)
      return invalid (error, "request_id: expected a string");
    out->request_id = g_strdup (json_node_get_string (idn));
  }
  JsonNode *dn = json_object_get_member (obj, "deadline_ms");
  if (dn && JSON_NODE_HOLDS_VALUE (dn) && json_node_get_value_type (dn) == G_TYPE_INT64 &&
      json_node_get_int (dn) < 0)
    return invalid (error, "deadline_ms: %" G_GINT64_FORMAT " is negative", json_node_get_int (dn));
  if (!json_uint32 (obj, "deadline_ms", &out->deadline_ms, error) ||
      !json_uint32 (obj, "top_k", &out->top_k, error))
    return FALSE;
  JsonNode *un = json_object_get_member (obj, "user");
  if (un && !JSON_NODE_HOLDS_NULL (un)) {
    if (!JSON_NODE_HOLDS_OBJECT (un))
      return invalid (error, "user: expected an object with id and features");
    JsonObject *uo = json_node_get_object (un);
    static const char *const uknown[] = {"id", "features", NULL};
    if (!check_members (uo, uknown, "user", error) || !json_id (uo, "user", user, "user_id", error) ||
        !json_features (uo, "user", user, error))
      return FALSE;
  }
  JsonNode *in = json_object_get_member (obj, "items");
  if (in == NULL || !JSON_NODE_HOLDS_ARRAY (in))
    return invalid (error, "items: expected an array of items");
  JsonArray *items = json_node_get_array (in);
  guint n = json_array_get_length (items);
  if (n == 0)
    return invalid (error, "items: a request needs at least one item");
  if (n > max_items)
    return invalid (error, "items: %u items, more than the limit of %u", n, max_items);
  for (guint i = 0; i < n; i++) {
    JsonNode *e = json_array_get_element (items, i);
    g_autofree char *path = g_strdup_printf ("items[%u]", i);
    if (!JSON_NODE_HOLDS_OBJECT (e))
      return invalid (error, "%s: expected an object with id, features and escore", path);
    JsonObject *io = json_node_get_object (e);
    JsonObject *row = json_object_new ();
    g_ptr_array_add (rows, row);
    static const char *const iknown[] = {"id", "features", "escore", NULL};
    if (!check_members (io, iknown, path, error) || !json_features (io, path, row, error))
      return FALSE;
    JsonNode *es = json_object_get_member (io, "escore");
    if (es && !JSON_NODE_HOLDS_NULL (es)) {
      GType t = JSON_NODE_HOLDS_VALUE (es) ? json_node_get_value_type (es) : G_TYPE_INVALID;
      if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
        return invalid (error, "%s.escore: expected a number", path);
      json_object_set_double_member (row, "escore", json_node_get_double (es));
    }
    if (!json_id (io, path, row, "item_id", error))
      return FALSE;
  }
  return TRUE;
}

static SedpProtocolFormat
resolve_format (const guint8 *data, gsize size, const char *content_type, GError **error)
{
  if (content_type == NULL || *content_type == '\0') {
    for (gsize i = 0; i < size; i++)
      if (!g_ascii_isspace (data[i]))
        return data[i] == '{' ? SEDP_PROTOCOL_JSON : SEDP_PROTOCOL_PROTOBUF;
    return SEDP_PROTOCOL_PROTOBUF;
  }
  g_autofree char *type = g_ascii_strdown (content_type, -1);
  char *semi = strchr (type, ';');
  if (semi)
    *semi = '\0';
  g_strstrip (type);
  if (strcmp (type, "application/x-protobuf") == 0 || strcmp (type, "application/protobuf") == 0 ||
      strcmp (type, "application/octet-stream") == 0)
    return SEDP_PROTOCOL_PROTOBUF;
  if (strcmp (type, "application/json") == 0)
    return SEDP_PROTOCOL_JSON;
  g_set_error (error, SEDP_PROTOCOL_ERROR, SEDP_PROTOCOL_ERROR_CONTENT_TYPE,
               "invalid request: content type '%s' is neither " SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF
               " nor " SEDP_PROTOCOL_CONTENT_TYPE_JSON, content_type);
  return SEDP_PROTOCOL_AUTO;
}

gboolean
sedp_protocol_decode_request (const guint8 *data, gsize size, const char *content_type,
                              SedpProtocolFormat format, guint max_items, SedpFrame *request_frame,
                              SedpProtocolRequest *out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  memset (out, 0, sizeof *out);
  if (max_items == 0)
    max_items = SEDP_PROTOCOL_DEFAULT_MAX_ITEMS;
  if (format == SEDP_PROTOCOL_AUTO)
    format = resolve_format (data, size, content_type, error);
  if (format == SEDP_PROTOCOL_AUTO)
    return FALSE;
  gboolean ok;
  if (format == SEDP_PROTOCOL_JSON) {
    g_autoptr (JsonObject) user = json_object_new ();
    g_autoptr (GPtrArray) rows = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    ok = decode_json (data, size, max_items, out, user, rows, error);
    if (ok && out->deadline_ms > MAX_DEADLINE_MS)
      ok = invalid (error, "deadline_ms: %u is more than %u", out->deadline_ms, MAX_DEADLINE_MS);
    if (ok && out->top_k > rows->len)
      out->top_k = rows->len;
    if (ok) {
      g_autoptr (GError) local = NULL;
      out->items = sedp_frame_from_json_objects ((JsonObject **) rows->pdata, rows->len, "request",
                                                 "items", &local);
      SedpFrame *uf = NULL;
      if (out->items && request_frame) {
        JsonObject *u = user;
        uf = sedp_frame_from_json_objects (&u, 1, "request", "user", &local);
        if (uf) {
          sedp_frame_merge_columns (request_frame, uf);
          sedp_frame_unref (uf);
        }
      }
      if (local) {
        /* "request: items[3].x: …" → "invalid request: items[3].x: …" */
        const char *msg = g_str_has_prefix (local->message, "request: ") ? local->message + 9 : local->message;
        ok = invalid (error, "%s", msg);
      }
    }
  } else {
    ok = decode_protobuf (data, size, max_items, request_frame, out, error);
  }
  if (!ok)
    sedp_protocol_request_clear (out);
  return ok;
}

/* ---- responses ---- */

static Sedp__Serving__PredictResponse__Status
response_status (SedpStatus s, const char *message)
{
  switch (s) {
  case SEDP_STATUS_OK:
    return SEDP__SERVING__PREDICT_RESPONSE__STATUS__OK;
  case SEDP_STATUS_PARTIAL:
    return SEDP__SERVING__PREDICT_RESPONSE__STATUS__PARTIAL;
  case SEDP_STATUS_TIMEOUT:
    return SEDP__SERVING__PREDICT_RESPONSE__STATUS__TIMEOUT;
  case SEDP_STATUS_OVERLOADED:
  case SEDP_STATUS_CANCELLED:
    return SEDP__SERVING__PREDICT_RESPONSE__STATUS__OVERLOADED;
  default:
    return message && strstr (message, "invalid request: ")
               ? SEDP__SERVING__PREDICT_RESPONSE__STATUS__INVALID
               : SEDP__SERVING__PREDICT_RESPONSE__STATUS__FAILED;
  }
}

static Sedp__Serving__ItemResult__Status
item_status (SedpItemStatus s)
{
  switch (s) {
  case SEDP_ITEM_SCORED:
    return SEDP__SERVING__ITEM_RESULT__STATUS__SCORED;
  case SEDP_ITEM_DROPPED:
    return SEDP__SERVING__ITEM_RESULT__STATUS__DROPPED;
  case SEDP_ITEM_CACHED:
    return SEDP__SERVING__ITEM_RESULT__STATUS__CACHED;
  case SEDP_ITEM_FAILED:
    return SEDP__SERVING__ITEM_RESULT__STATUS__FAILED;
  default:
    return SEDP__SERVING__ITEM_RESULT__STATUS__PENDING;
  }
}

typedef struct {
  guint index;
  float score;
} Ranked;

static int
ranked_cmp (const void *a, const void *b)
{
  const Ranked *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

GBytes *
sedp_protocol_encode_response (SedpRequest *request, const char *const *outputs,
                               const char *model_version, guint top_k, SedpProtocolFormat format)
{
  const SedpResult *res = sedp_request_get_result (request);
  g_return_val_if_fail (res != NULL, NULL);
  gboolean all_float = outputs == NULL || outputs[0] == NULL;
  guint n = sedp_result_get_n_items (res);
  Sedp__Serving__PredictResponse resp = SEDP__SERVING__PREDICT_RESPONSE__INIT;
  resp.request_id = (char *) sedp_request_get_id (request);
  resp.message = (char *) (sedp_result_get_message (res) ? sedp_result_get_message (res) : "");
  resp.status = response_status (sedp_result_get_status (res), sedp_result_get_message (res));
  resp.model_version = (char *) (model_version ? model_version : "");
  g_autofree Sedp__Serving__ItemResult *items = g_new0 (Sedp__Serving__ItemResult, MAX (n, 1));
  g_autofree Sedp__Serving__ItemResult **item_ptrs = g_new0 (Sedp__Serving__ItemResult *, MAX (n, 1));
  g_autoptr (GArray) scores = g_array_new (FALSE, FALSE, sizeof (float));
  g_autofree gsize *first = g_new0 (gsize, n + 1);
  g_autoptr (GArray) ranked = g_array_new (FALSE, FALSE, sizeof (Ranked));
  const SedpFrame *frame = NULL;
  const SedpColumn *idc = NULL;
  g_autoptr (GPtrArray) cols = g_ptr_array_new ();
  guint n_out = 0, n_outputs = all_float ? 0 : g_strv_length ((char **) outputs);
  for (guint i = 0; i < n; i++) {
    Sedp__Serving__ItemResult *ir = &items[i];
    sedp__serving__item_result__init (ir);
    item_ptrs[i] = ir;
    SedpItemStatus st = sedp_result_get_item_status (res, i);
    ir->status = item_status (st);
    const char *msg = sedp_result_get_item_message (res, i);
    ir->message = (char *) (msg ? msg : "");
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    first[i] = scores->len;
    if (f == NULL)
      continue;
    if (f != frame) { /* items come in runs of one frame: find its columns once per run */
      frame = f;
      idc = sedp_frame_get_column (f, "item_id");
      n_out = all_float ? sedp_frame_get_n_columns (f) : n_outputs;
      g_ptr_array_set_size (cols, 0);
      for (guint c = 0; c < n_out; c++)
        g_ptr_array_add (cols, (gpointer) (all_float ? sedp_frame_get_column_at (f, c)
                                                     : sedp_frame_get_column (f, outputs[c])));
    }
    if (idc && sedp_column_get_column_type (idc) == SEDP_COLUMN_INT64)
      ir->id = (guint64) sedp_column_get_int64 (idc)[sedp_column_is_broadcast (idc) ? 0 : row];
    if (st != SEDP_ITEM_SCORED && st != SEDP_ITEM_CACHED)
      continue;
    for (guint c = 0; c < n_out; c++) {
      const SedpColumn *col = g_ptr_array_index (cols, c);
      if (col == NULL || sedp_column_get_column_type (col) != SEDP_COLUMN_FLOAT32)
        continue;
      if (all_float && (sedp_column_is_broadcast (col) ||
                        strcmp (sedp_column_get_name (col), "escore") == 0))
        continue;
      guint w = sedp_column_get_width (col), r = sedp_column_is_broadcast (col) ? 0 : row;
      g_array_append_vals (scores, sedp_column_get_float32 (col) + (gsize) r * w, w);
    }
    if (scores->len > first[i]) {
      Ranked rk = {i, g_array_index (scores, float, first[i])};
      if (isnan (rk.score))
        rk.score = -INFINITY;
      g_array_append_val (ranked, rk);
    }
  }
  for (guint i = 0; i < n; i++) {
    gsize end = i + 1 < n ? first[i + 1] : scores->len;
    items[i].n_scores = end - first[i];
    items[i].scores = items[i].n_scores ? &g_array_index (scores, float, first[i]) : NULL;
  }
  resp.n_items = n;
  resp.items = item_ptrs;
  g_autofree guint32 *top = NULL;
  if (top_k > 0) {
    if (ranked->len > 1) /* an empty array has no data pointer to hand to qsort */
      qsort (ranked->data, ranked->len, sizeof (Ranked), ranked_cmp);
    resp.n_top_k = MIN (top_k, ranked->len);
    top = g_new0 (guint32, MAX (resp.n_top_k, 1));
    for (gsize k = 0; k < resp.n_top_k; k++)
      top[k] = g_array_index (ranked, Ranked, k).index;
    resp.top_k = top;
  }
  if (format != SEDP_PROTOCOL_JSON) {
    gsize len = sedp__serving__predict_response__get_packed_size (&resp);
    guint8 *buf = g_malloc (MAX (len, 1));
    sedp__serving__predict_response__pack (&resp, buf);
    return g_bytes_new_take (buf, len);
  }
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "request_id");
  json_builder_add_string_value (b, resp.request_id);
  json_builder_set_member_name (b, "status");
  json_builder_add_string_value (
      b, sedp__serving__predict_response__status__descriptor.values[resp.status].name);
  if (*resp.message) {
    json_builder_set_member_name (b, "message");
    json_builder_add_string_value (b, resp.message);
  }
  json_builder_set_member_name (b, "model_version");
  json_builder_add_string_value (b, resp.model_version);
  json_builder_set_member_name (b, "items");
  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++) {
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "id");
    json_builder_add_int_value (b, (gint64) items[i].id);
    json_builder_set_member_name (b, "scores");
    json_builder_begin_array (b);
    for (gsize k = 0; k < items[i].n_scores; k++)
      json_builder_add_double_value (b, isfinite (items[i].scores[k]) ? items[i].scores[k] : 0.0);
    json_builder_end_array (b);
    json_builder_set_member_name (b, "status");
    json_builder_add_string_value (
        b, sedp__serving__item_result__status__descriptor.values[items[i].status].name);
    if (*items[i].message) {
      json_builder_set_member_name (b, "message");
      json_builder_add_string_value (b, items[i].message);
    }
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
  if (resp.n_top_k) {
    json_builder_set_member_name (b, "top_k");
    json_builder_begin_array (b);
    for (gsize k = 0; k < resp.n_top_k; k++)
      json_builder_add_int_value (b, resp.top_k[k]);
    json_builder_end_array (b);
  }
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  gsize len = 0;
  char *text = json_generator_to_data (gen, &len);
  return g_bytes_new_take (text, len);
}
