/* sedp — the serving protocol: PredictRequest (protobuf here, JSON in json-request.c) → frames,
 * result → PredictResponse. Both decoders set values into a RowBuilder (row-builder.c), which types
 * columns by the JSON Lines reader's rules (column-kind.h), so that both encodings decode alike. */
#include "protocol.h"

#include "json-scan.h"

#include "json-request.h"
#include "wire.h"
#include "row-builder.h"
#include "../runtime/frame-ops.h"
#include "sedp.pb-c.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (sedp-protocol-error-quark, sedp_protocol_error)

/* ---- the protobuf wire format, read in place ----
 * PredictRequest is walked field by field over the payload (no message tree is unpacked): ids
 * are decoded into one arena, floats are read where they lie, names and strings are copied once
 * per decode. Unknown fields are skipped, as protobuf parsers do; a later value of a singular
 * field or of a oneof replaces the earlier one; repeated ids and floats may come packed or not. */

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
  return sedp_protocol_invalid (error, "not a valid protobuf PredictRequest (truncated or malformed): %s (at byte "
                  "%zu of %zu)", what, (gsize) (w->p - whole->p), (gsize) (whole->end - whole->p));
}

/* Decoding state of one request. A limit passed below the feature level is kept in @over (its
 * message without a path, or a GError of the store's) for the feature entry to report. */
typedef struct {
  Wire whole;
  RowStore *store;
  GError *over;
  gboolean over_bare; /* @over's message has no "invalid request: " nor path yet */
} WireDecode;

/* Records that a list or string passes a limit (the caller returns FALSE). */
static gboolean G_GNUC_PRINTF (2, 3)
wire_over (WireDecode *d, const char *format, ...)
{
  va_list args;
  g_clear_error (&d->over);
  va_start (args, format);
  g_propagate_error (&d->over, g_error_new_valist (SEDP_PROTOCOL_ERROR,
                                                  SEDP_PROTOCOL_ERROR_LIMIT, format, args));
  va_end (args);
  d->over_bare = TRUE;
  return FALSE;
}

static gboolean
wire_push_id (WireDecode *d, RowValue *v, guint64 id)
{
  if (G_UNLIKELY (d->store->n_ids - v->v.at >= d->store->limits.max_values))
    return wire_over (d, "more than the limit of %u values in one list (max_values)",
                      d->store->limits.max_values);
  return row_store_push_id (d->store, id, &d->over);
}

/* The ids of an IdList message (packed or not), appended to the store. */
static gboolean
wire_ids (WireDecode *d, Wire *w, RowValue *v)
{
  v->src = SRC_IDS;
  v->v.at = d->store->n_ids;
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (w, &field, &type, &bad)) {
    guint64 id;
    if (field == 1 && type == WT_LEN) {
      Wire packed;
      if (!wire_len (w, &packed))
        return FALSE;
      RowStore *s = d->store;
      while (packed.p < packed.end) {
        if (!wire_varint (&packed, &id))
          return FALSE;
        if (G_LIKELY (s->n_ids < s->cap_ids && s->n_ids - v->v.at < s->limits.max_values))
          s->ids[s->n_ids++] = id; /* wire_push_id's checks, inline */
        else if (!wire_push_id (d, v, id))
          return FALSE;
      }
    } else if (field == 1 && type == WT_VARINT) {
      if (!wire_varint (w, &id) || !wire_push_id (d, v, id))
        return FALSE;
    } else if (!wire_skip (w, type)) {
      return FALSE;
    }
  }
  v->n = (guint) (d->store->n_ids - v->v.at);
  return !bad;
}

/* The floats of a FloatList message: read in place when packed in one run (as every encoder
 * writes them); otherwise gathered into the store's text. */
static gboolean
wire_floats (WireDecode *d, Wire *w, RowValue *v)
{
  v->src = SRC_FLOATS;
  v->n = 0;
  v->v.raw = NULL;
  g_autoptr (GByteArray) scattered = NULL;
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
      gsize n = (gsize) ((run.end - run.p) / 4);
      if (n > d->store->limits.max_values - v->n)
        return wire_over (d, "more than the limit of %u values in one list (max_values)",
                          d->store->limits.max_values);
      if (v->n == 0 && scattered == NULL) {
        v->v.raw = run.p;
      } else {
        if (scattered == NULL) {
          scattered = g_byte_array_new ();
          g_byte_array_append (scattered, v->v.raw, v->n * 4);
        }
        g_byte_array_append (scattered, run.p, (guint) n * 4);
      }
      v->n += (guint) n;
    } else {
      ok = wire_skip (w, type);
    }
  }
  if (ok && !bad && scattered) {
    v->v.raw = (const guint8 *) row_store_text (d->store, (const char *) scattered->data,
                                                scattered->len, &d->over);
    ok = v->v.raw != NULL;
  }
  return ok && !bad;
}

/* A string field's text (UTF-8, no NUL, within max_string_bytes) copied into the store. */
static const char *
wire_text (WireDecode *d, const Wire *inner)
{
  gsize len = (gsize) (inner->end - inner->p);
  if (len > d->store->limits.max_string_bytes) {
    wire_over (d, "a string of %" G_GSIZE_FORMAT " bytes, more than the limit of %" G_GSIZE_FORMAT
               " (max_string_bytes)", len, d->store->limits.max_string_bytes);
    return NULL;
  }
  if (!g_utf8_validate_len ((const char *) inner->p, len, NULL))
    return NULL;
  return row_store_text (d->store, (const char *) inner->p, len, &d->over);
}

/* A Feature message into @v (SRC_NONE when it sets no value). */
static gboolean
wire_feature (WireDecode *d, Wire *w, RowValue *v)
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
      if (!wire_len (w, &inner) || (v->v.s = wire_text (d, &inner)) == NULL)
        return FALSE;
      v->src = SRC_STRING;
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
row_path (const RowBuilder *b, guint row, char *buf, gsize size)
{
  if (strcmp (b->what, "items") != 0)
    return b->what;
  g_snprintf (buf, size, "items[%u]", row);
  return buf;
}

/* A limit passed inside a feature entry, reported with where it is. */
static gboolean
entry_over (WireDecode *d, const char *path, GError **error)
{
  if (d->over_bare)
    sedp_protocol_over_limit (error, "%s.features: %s", path, d->over->message);
  else
    g_propagate_error (error, g_steal_pointer (&d->over)); /* the store's, whole already */
  g_clear_error (&d->over);
  return FALSE;
}

/* One entry of a `map<string, Feature> features` (key 1, value 2) into row @row of @b. An entry
 * without a value sets nothing. */
static gboolean
wire_feature_entry (WireDecode *d, Wire *w, RowBuilder *b, guint row, GError **error)
{
  char path[32]; /* for messages only */
#define PATH() row_path (b, row, path, sizeof path)
  const guint8 *key = (const guint8 *) "";
  gsize key_len = 0;
  RowValue v = {SRC_NONE};
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
      if (!wire_len (w, &inner) || !wire_feature (d, &inner, &v)) {
        if (d->over)
          return entry_over (d, PATH (), error);
        return malformed (error, w, &d->whole, "%s.features[\"%.*s\"]: a malformed Feature", PATH (),
                          (int) MIN (key_len, 64), (const char *) key);
      }
    } else if (!wire_skip (w, type)) {
      return malformed (error, w, &d->whole, "%s.features: a malformed entry", PATH ());
    }
  }
  if (bad)
    return malformed (error, w, &d->whole, "%s.features: a malformed entry", PATH ());
  /* A name already a column was checked when it became one (rows name the same features). */
  gint column = row_builder_lookup (b, (const char *) key, key_len);
  if (column >= 0) {
    if (v.src != SRC_NONE)
      row_builder_set (b, row, (guint) column, &v);
    return TRUE;
  }
  if (key_len > d->store->limits.max_string_bytes)
    return sedp_protocol_over_limit (error, "%s.features: a feature name of %" G_GSIZE_FORMAT
                                     " bytes, more than the limit of %" G_GSIZE_FORMAT
                                     " (max_string_bytes)", PATH (), key_len,
                                     d->store->limits.max_string_bytes);
  if (memchr (key, '\0', key_len) || !g_utf8_validate_len ((const char *) key, key_len, NULL))
    return sedp_protocol_invalid (error, "%s.features: a feature name is not valid UTF-8 text", PATH ());
#undef PATH
  if (v.src != SRC_NONE)
    return row_builder_set_named (b, row, (const char *) key, key_len, &v, error);
  return TRUE;
}

/* An Item message into row @row of the items builder. */
static gboolean
wire_item (WireDecode *d, Wire *w, RowBuilder *b, guint row, GError **error)
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
  if (!sedp_protocol_check_id (id, row, error))
    return FALSE;
  RowValue es = {.src = SRC_FLOAT, .v.d = float_from_bits (escore)};
  RowValue v = {.src = SRC_INT, .v.i = (gint64) id};
  return (!has_escore || row_builder_set_named (b, row, "escore", 6, &es, error)) &&
         row_builder_set_named (b, row, "item_id", 7, &v, error) &&
         row_builder_end_row (b, row, error);
}

/* A User message into the one row of the user builder (a second `user` field merges into it, as
 * protobuf merges repeated singular messages). */
static gboolean
wire_user (WireDecode *d, Wire *w, RowBuilder *b, guint64 *id, GError **error)
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

/* The top level of a PredictRequest: its scalars into @out, where its users and items are. */
static gboolean
wire_request (WireDecode *d, GArray *users, GArray *items, SedpProtocolRequest *out,
              GError **error)
{
  Wire w = d->whole;
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    guint64 u;
    Wire inner;
    if (field == 1 && type == WT_LEN) {
      if (!wire_len (&w, &inner))
        return malformed (error, &w, &d->whole, "request_id: truncated");
      gsize len = (gsize) (inner.end - inner.p);
      if (len > d->store->limits.max_string_bytes)
        return sedp_protocol_over_limit (error, "request_id: %" G_GSIZE_FORMAT " bytes, more than "
                                         "the limit of %" G_GSIZE_FORMAT " (max_string_bytes)",
                                         len, d->store->limits.max_string_bytes);
      if (memchr (inner.p, '\0', len) || !g_utf8_validate_len ((const char *) inner.p, len, NULL))
        return sedp_protocol_invalid (error, "request_id: not valid UTF-8 text");
      g_free (out->request_id);
      out->request_id = len ? g_strndup ((const char *) inner.p, len) : NULL;
    } else if ((field == 2 || field == 3) && type == WT_LEN) {
      if (!wire_len (&w, &inner))
        return malformed (error, &w, &d->whole, "%s: truncated", field == 2 ? "user" : "items");
      g_array_append_val (field == 2 ? users : items, inner);
    } else if ((field == 4 || field == 5) && type == WT_VARINT) {
      if (!wire_varint (&w, &u))
        return malformed (error, &w, &d->whole, "%s: a truncated varint",
                          field == 4 ? "deadline_ms" : "top_k");
      if (field == 4)
        out->deadline_ms = (guint32) u;
      else
        out->top_k = (guint32) u;
    } else if (!wire_skip (&w, type)) {
      return malformed (error, &w, &d->whole, "a malformed field %u", field);
    }
  }
  return bad ? malformed (error, &w, &d->whole, "a malformed field tag") : TRUE;
}

/* The user's messages into one row, merged into @request_frame. */
static gboolean
wire_users (WireDecode *d, GArray *users, SedpFrame *request_frame, GError **error)
{
  RowBuilder b;
  row_builder_init (&b, "user", 1, d->store);
  guint64 user_id = 0;
  RowValue id = {.src = SRC_INT};
  gboolean ok = TRUE;
  if (users->len > 0) /* the first column, as in JSON */
    ok = row_builder_set_named (&b, 0, "user_id", 7, &id, error);
  for (guint i = 0; ok && i < users->len; i++)
    ok = wire_user (d, &g_array_index (users, Wire, i), &b, &user_id, error);
  if (ok && users->len > 0) {
    ok = sedp_protocol_check_id (user_id, -1, error);
    id.v.i = (gint64) user_id;
    ok = ok && row_builder_set_named (&b, 0, "user_id", 7, &id, error);
  }
  ok = ok && row_builder_end_row (&b, 0, error);
  if (ok) {
    SedpFrame *uf = row_builder_frame (&b);
    sedp_frame_merge_columns (request_frame, uf);
    sedp_frame_unref (uf);
  }
  row_builder_clear (&b);
  return ok;
}

/* A protobuf PredictRequest: the request's fields into @out, its items into out->items, the
 * user's columns merged into @request_frame (when given). */
static gboolean
decode_protobuf (const guint8 *data, gsize size, RowStore *store, SedpFrame *request_frame,
                 SedpProtocolRequest *out, GError **error)
{
  WireDecode d = {.whole = {data, data + size}, .store = store};
  g_autoptr (GArray) items = g_array_new (FALSE, FALSE, sizeof (Wire));
  g_autoptr (GArray) users = g_array_new (FALSE, FALSE, sizeof (Wire));
  if (!wire_request (&d, users, items, out, error))
    return FALSE;
  guint max_items = store->limits.max_items;
  if (items->len == 0)
    return sedp_protocol_invalid (error, "items: a request needs at least one item");
  if (items->len > max_items)
    return sedp_protocol_over_limit (error, "items: %u items, more than the limit of %u "
                                     "(max_items)", items->len, max_items);
  if (out->deadline_ms > SEDP_PROTOCOL_MAX_DEADLINE_MS)
    return sedp_protocol_invalid (error, "deadline_ms: %u is more than %u", out->deadline_ms,
                                  SEDP_PROTOCOL_MAX_DEADLINE_MS);
  if (out->top_k > items->len)
    out->top_k = items->len;
  if (request_frame && !wire_users (&d, users, request_frame, error))
    return FALSE;
  RowBuilder b;
  row_builder_init (&b, "items", items->len, store);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < items->len; i++)
    ok = wire_item (&d, &g_array_index (items, Wire, i), &b, i, error);
  if (ok)
    out->items = row_builder_frame (&b);
  row_builder_clear (&b);
  return ok;
}

/* The encoding of a payload from its content type (or, without one, its first byte). */
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
sedp_protocol_decode_request_limited (const guint8 *data, gsize size, const char *content_type,
                                      SedpProtocolFormat format, const SedpProtocolLimits *limits,
                                      SedpFrame *request_frame, SedpProtocolRequest *out,
                                      GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  memset (out, 0, sizeof *out);
  if (format == SEDP_PROTOCOL_AUTO)
    format = resolve_format (data, size, content_type, error);
  if (format == SEDP_PROTOCOL_AUTO)
    return FALSE;
  RowStore store;
  row_store_init (&store, limits);
  gboolean ok = format == SEDP_PROTOCOL_JSON
                    ? sedp_json_decode_request (data, size, &store, request_frame, out, error)
                    : decode_protobuf (data, size, &store, request_frame, out, error);
  row_store_clear (&store);
  if (!ok)
    sedp_protocol_request_clear (out);
  return ok;
}

gboolean
sedp_protocol_decode_request (const guint8 *data, gsize size, const char *content_type,
                              SedpProtocolFormat format, guint max_items, SedpFrame *request_frame,
                              SedpProtocolRequest *out, GError **error)
{
  SedpProtocolLimits limits = {.max_items = max_items};
  return sedp_protocol_decode_request_limited (data, size, content_type, format, &limits,
                                               request_frame, out, error);
}

void
sedp_protocol_request_clear (SedpProtocolRequest *req)
{
  g_clear_pointer (&req->request_id, g_free);
  g_clear_pointer (&req->items, sedp_frame_unref);
  req->deadline_ms = req->top_k = 0;
}

/* ---- JSON: json-request.c ---- */

/* ---- responses ---- */

static Sedp__Serving__PredictResponse__Status
response_status (SedpStatus s, const GError *error)
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
    return error && error->domain == SEDP_PROTOCOL_ERROR
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
  case SEDP_ITEM_SHED:
    return SEDP__SERVING__ITEM_RESULT__STATUS__SHED;
  default:
    return SEDP__SERVING__ITEM_RESULT__STATUS__PENDING;
  }
}

typedef struct {
  guint index;
  float score;
  gint64 rank; /* the responder's rank (0: best), -1 without one */
} Ranked;

/* The responder's order: its rank, which follows its own `order` and puts NaN last. */
static int
rank_cmp (const void *a, const void *b)
{
  const Ranked *x = a, *y = b;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int
ranked_cmp (const void *a, const void *b)
{
  const Ranked *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* A score: a float32 with the 9 significant digits that read back as the same float; not-a-number
 * and infinities, which JSON cannot hold, as 0. */
static void
json_float (GString *out, float f)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append (out, g_ascii_formatd (buf, sizeof buf, "%.9g", isfinite (f) ? f : 0.0));
}

/* The JSON form of a PredictResponse (proto3 JSON names; enums by name). */
static GBytes *
response_json (const Sedp__Serving__PredictResponse *resp)
{
  GString *out = g_string_sized_new (64 + resp->n_items * 48);
  g_string_append (out, "{\"request_id\":");
  sedp_json_append_string (out, resp->request_id);
  g_string_append_printf (out, ",\"status\":\"%s\"",
                          sedp__serving__predict_response__status__descriptor.values[resp->status].name);
  if (*resp->message) {
    g_string_append (out, ",\"message\":");
    sedp_json_append_string (out, resp->message);
  }
  g_string_append (out, ",\"model_version\":");
  sedp_json_append_string (out, resp->model_version);
  g_string_append (out, ",\"items\":[");
  for (gsize i = 0; i < resp->n_items; i++) {
    const Sedp__Serving__ItemResult *it = resp->items[i];
    g_string_append_printf (out, "%s{\"id\":%" G_GUINT64_FORMAT ",\"scores\":[", i ? "," : "",
                            (guint64) it->id);
    for (gsize k = 0; k < it->n_scores; k++) {
      if (k)
        g_string_append_c (out, ',');
      json_float (out, it->scores[k]);
    }
    g_string_append_printf (out, "],\"status\":\"%s\"",
                            sedp__serving__item_result__status__descriptor.values[it->status].name);
    if (*it->message) {
      g_string_append (out, ",\"message\":");
      sedp_json_append_string (out, it->message);
    }
    g_string_append_c (out, '}');
  }
  g_string_append_c (out, ']');
  if (resp->shed_items)
    g_string_append_printf (out, ",\"shed_items\":%u", resp->shed_items);
  if (resp->n_routes) {
    g_string_append (out, ",\"routes\":[");
    for (gsize k = 0; k < resp->n_routes; k++) {
      if (k)
        g_string_append_c (out, ',');
      sedp_json_append_string (out, resp->routes[k]);
    }
    g_string_append_c (out, ']');
  }
  if (resp->n_top_k) {
    g_string_append (out, ",\"top_k\":[");
    for (gsize k = 0; k < resp->n_top_k; k++)
      g_string_append_printf (out, "%s%u", k ? "," : "", resp->top_k[k]);
    g_string_append_c (out, ']');
  }
  g_string_append_c (out, '}');
  return g_string_free_to_bytes (out);
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
  resp.status = response_status (sedp_result_get_status (res), sedp_result_get_error (res));
  resp.model_version = (char *) (model_version ? model_version : "");
  const char *const *routes = sedp_result_get_routes (res);
  resp.n_routes = g_strv_length ((char **) routes);
  resp.routes = (char **) routes;
  g_autofree Sedp__Serving__ItemResult *items = g_new0 (Sedp__Serving__ItemResult, MAX (n, 1));
  g_autofree Sedp__Serving__ItemResult **item_ptrs = g_new0 (Sedp__Serving__ItemResult *, MAX (n, 1));
  g_autoptr (GArray) scores = g_array_new (FALSE, FALSE, sizeof (float));
  g_autofree gsize *first = g_new0 (gsize, n + 1);
  g_autoptr (GArray) ranked = g_array_new (FALSE, FALSE, sizeof (Ranked));
  gboolean by_rank = TRUE; /* every item ranked by the responder (its `rank` column) */
  const SedpFrame *frame = NULL;
  const SedpColumn *idc = NULL, *rankc = NULL;
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
      rankc = sedp_frame_get_column (f, "rank");
      if (rankc && sedp_column_get_column_type (rankc) != SEDP_COLUMN_INT64)
        rankc = NULL;
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
    if (scores->len > first[i] || rankc) {
      Ranked rk = {i, scores->len > first[i] ? g_array_index (scores, float, first[i]) : NAN,
                   rankc ? sedp_column_get_int64 (rankc)[sedp_column_is_broadcast (rankc) ? 0 : row]
                         : -1};
      if (isnan (rk.score))
        rk.score = -INFINITY;
      by_rank = by_rank && rk.rank >= 0;
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
  resp.shed_items = sedp_result_get_n_shed (res);
  g_autofree guint32 *top = NULL;
  if (top_k > 0) {
    if (ranked->len > 1) /* an empty array has no data pointer to hand to qsort */
      qsort (ranked->data, ranked->len, sizeof (Ranked), by_rank ? rank_cmp : ranked_cmp);
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
  return response_json (&resp);
}
