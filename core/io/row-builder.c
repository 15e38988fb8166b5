/* sedp — a request's rows, as its decoders read them, into one typed frame (row-builder.h). */
#include "row-builder.h"

#include "../runtime/frame-ops.h"

#include <string.h>

struct RowColumn {
  ColumnKind k;    /* first: a RowColumn is typed as a ColumnKind */
  guint seen;      /* 1 + the last row that has it */
  gsize name_len;
  guint32 hash;
  RowValue *vals;  /* cap_rows of them; SRC_NONE where missing */
};

gboolean
sedp_protocol_error_valist (GError **error, gint code, const char *format, va_list args)
{
  g_autofree char *msg = g_strdup_vprintf (format, args);
  g_set_error (error, SEDP_PROTOCOL_ERROR, code, "invalid request: %s", msg);
  return FALSE;
}

gboolean
sedp_protocol_invalid (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  sedp_protocol_error_valist (error, SEDP_PROTOCOL_ERROR_INVALID, format, args);
  va_end (args);
  return FALSE;
}

gboolean
sedp_protocol_over_limit (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  sedp_protocol_error_valist (error, SEDP_PROTOCOL_ERROR_LIMIT, format, args);
  va_end (args);
  return FALSE;
}

gboolean
sedp_protocol_check_id (guint64 id, gint64 row, GError **error)
{
  if (id <= (guint64) G_MAXINT64)
    return TRUE;
  g_autofree char *path =
    row < 0 ? g_strdup ("user.id") : g_strdup_printf ("items[%" G_GINT64_FORMAT "].id", row);
  return sedp_protocol_invalid (error, "%s: %" G_GUINT64_FORMAT " does not fit the int64 column "
                                "%s (ids up to 2^63-1; send larger ids as an 'ids' feature, "
                                "stored as uint64)", path, id, row < 0 ? "user_id" : "item_id");
}

/* ---- the store ---- */

void
row_store_init (RowStore *s, const SedpProtocolLimits *limits)
{
  memset (s, 0, sizeof *s);
  s->text = g_string_chunk_new (256);
  SedpProtocolLimits l = limits ? *limits : (SedpProtocolLimits) {0};
  s->limits.max_items = l.max_items ? l.max_items : SEDP_PROTOCOL_DEFAULT_MAX_ITEMS;
  s->limits.max_depth = l.max_depth ? l.max_depth : SEDP_PROTOCOL_DEFAULT_MAX_DEPTH;
  s->limits.max_features = l.max_features ? l.max_features : SEDP_PROTOCOL_DEFAULT_MAX_FEATURES;
  s->limits.max_values = l.max_values ? l.max_values : SEDP_PROTOCOL_DEFAULT_MAX_VALUES;
  s->limits.max_string_bytes = l.max_string_bytes ? l.max_string_bytes
                                                  : SEDP_PROTOCOL_DEFAULT_MAX_STRING_BYTES;
  s->limits.max_decoded_bytes = l.max_decoded_bytes ? l.max_decoded_bytes
                                                    : SEDP_PROTOCOL_DEFAULT_MAX_DECODED_BYTES;
}

void
row_store_clear (RowStore *s)
{
  g_free (s->ids);
  g_free (s->floats);
  g_string_chunk_free (s->text);
  memset (s, 0, sizeof *s);
}

gboolean
row_store_charge (RowStore *s, gsize bytes, GError **error)
{
  s->charged += bytes;
  if (G_LIKELY (s->charged <= s->limits.max_decoded_bytes))
    return TRUE;
  return sedp_protocol_over_limit (error, "the request needs more than %" G_GSIZE_FORMAT " bytes "
                                   "of memory to decode (max_decoded_bytes)",
                                   s->limits.max_decoded_bytes);
}

/* Room for one more element of @size bytes in an array of *@cap, charged as it grows. */
static gboolean
store_grow (RowStore *s, gpointer *v, gsize len, gsize *cap, gsize size, GError **error)
{
  if (G_LIKELY (len < *cap))
    return TRUE;
  gsize more = MAX (*cap, 1024);
  if (!row_store_charge (s, more * size, error))
    return FALSE;
  *cap += more;
  *v = g_realloc_n (*v, *cap, size);
  return TRUE;
}

gboolean
row_store_push_id (RowStore *s, guint64 id, GError **error)
{
  if (!store_grow (s, (gpointer *) &s->ids, s->n_ids, &s->cap_ids, sizeof (guint64), error))
    return FALSE;
  s->ids[s->n_ids++] = id;
  return TRUE;
}

gboolean
row_store_push_float (RowStore *s, float f, GError **error)
{
  if (!store_grow (s, (gpointer *) &s->floats, s->n_floats, &s->cap_floats, sizeof (float), error))
    return FALSE;
  s->floats[s->n_floats++] = f;
  return TRUE;
}

const char *
row_store_text (RowStore *s, const char *p, gsize len, GError **error)
{
  if (!row_store_charge (s, len + 1, error))
    return NULL;
  return g_string_chunk_insert_len (s->text, p, (gssize) len);
}

/* ---- the builder ---- */

void
row_builder_init (RowBuilder *b, const char *what, guint n_rows, RowStore *store)
{
  memset (b, 0, sizeof *b);
  b->what = what;
  b->n_rows = n_rows;
  b->cap_rows = MAX (n_rows, 1);
  b->columns = g_array_new (FALSE, TRUE, sizeof (RowColumn));
  b->row_order = g_array_new (FALSE, FALSE, sizeof (guint));
  b->store = store;
}

void
row_builder_clear (RowBuilder *b)
{
  for (guint i = 0; i < b->columns->len; i++)
    g_free (g_array_index (b->columns, RowColumn, i).vals);
  g_array_unref (b->columns);
  g_array_unref (b->row_order);
  g_free (b->index);
}

gboolean
row_builder_add_row (RowBuilder *b, GError **error)
{
  if (b->n_rows >= b->store->limits.max_items)
    return sedp_protocol_over_limit (error, "%s: more than the limit of %u items (max_items)",
                                     b->what, b->store->limits.max_items);
  if (b->n_rows == b->cap_rows) {
    guint cap = b->cap_rows * 2;
    if (!row_store_charge (b->store, (gsize) b->columns->len * b->cap_rows * sizeof (RowValue),
                           error))
      return FALSE;
    for (guint i = 0; i < b->columns->len; i++) {
      RowColumn *c = &g_array_index (b->columns, RowColumn, i);
      c->vals = g_renew (RowValue, c->vals, cap);
      memset (c->vals + b->cap_rows, 0, (gsize) (cap - b->cap_rows) * sizeof (RowValue));
    }
    b->cap_rows = cap;
  }
  b->n_rows++;
  return TRUE;
}

static guint32
name_hash (const char *name, gsize len)
{
  guint32 h = 2166136261u; /* FNV-1a */
  for (gsize i = 0; i < len; i++)
    h = (h ^ (guint8) name[i]) * 16777619u;
  return h;
}

static gboolean
column_is (const RowColumn *c, const char *name, gsize len)
{
  return c->name_len == len && memcmp (c->k.name, name, len) == 0;
}

/* Puts column @i into the hash index (rebuilt at twice the size when half full). */
static void
index_insert (RowBuilder *b, guint i)
{
  if (b->index == NULL || (b->columns->len) * 2 > b->index_mask + 1) {
    guint size = 64;
    while (size < b->columns->len * 4)
      size *= 2;
    g_free (b->index);
    b->index = g_new0 (guint, size);
    b->index_mask = size - 1;
    for (guint k = 0; k < b->columns->len; k++)
      if (k != i)
        index_insert (b, k);
  }
  guint32 h = g_array_index (b->columns, RowColumn, i).hash;
  for (guint p = h & b->index_mask;; p = (p + 1) & b->index_mask)
    if (b->index[p] == 0) {
      b->index[p] = i + 1;
      return;
    }
}

/* The column of that name, or -1. Rows name the same features in the same order, so the column
 * after the last one found is tried first, then the hash index. */
static gint
column_find (RowBuilder *b, const char *name, gsize len, guint32 *hash)
{
  guint n = b->columns->len;
  if (n == 0)
    return -1;
  guint g = b->guess < n ? b->guess : 0;
  if (column_is (&g_array_index (b->columns, RowColumn, g), name, len))
    return (gint) g;
  *hash = name_hash (name, len);
  for (guint p = *hash & b->index_mask; b->index[p]; p = (p + 1) & b->index_mask) {
    guint i = b->index[p] - 1;
    RowColumn *c = &g_array_index (b->columns, RowColumn, i);
    if (c->hash == *hash && column_is (c, name, len))
      return (gint) i;
  }
  return -1;
}

/* column_find(), the guess moved past what it found; @hash as column_find() leaves it. */
static gint
column_lookup (RowBuilder *b, const char *name, gsize len, guint32 *hash)
{
  gint found = column_find (b, name, len, hash);
  if (found >= 0)
    b->guess = (guint) found + 1;
  return found;
}

gint
row_builder_lookup (RowBuilder *b, const char *name, gsize len)
{
  guint32 hash = 0;
  return column_lookup (b, name, len, &hash);
}

gboolean
row_builder_column (RowBuilder *b, const char *name, gsize len, guint *column, GError **error)
{
  guint32 hash = 0;
  gint found = column_lookup (b, name, len, &hash);
  if (found >= 0) {
    *column = (guint) found;
    return TRUE;
  }
  RowStore *s = b->store;
  if (b->columns->len >= s->limits.max_features)
    return sedp_protocol_over_limit (error, "%s: more than the limit of %u distinct features "
                                     "(max_features)", b->what, s->limits.max_features);
  if (b->columns->len == 0)
    hash = name_hash (name, len); /* column_find hashed it otherwise */
  const char *copy = row_store_text (s, name, len, error);
  if (copy == NULL || !row_store_charge (s, (gsize) b->cap_rows * sizeof (RowValue), error))
    return FALSE;
  RowColumn c = {.k.name = copy, .name_len = len, .hash = hash,
                 .vals = g_new0 (RowValue, b->cap_rows)};
  g_array_append_val (b->columns, c);
  guint n = b->columns->len - 1;
  index_insert (b, n);
  b->guess = n + 1;
  *column = n;
  return TRUE;
}

void
row_builder_set (RowBuilder *b, guint row, guint column, const RowValue *v)
{
  RowColumn *c = &g_array_index (b->columns, RowColumn, column);
  if (c->seen != row + 1) {
    c->seen = row + 1;
    g_array_append_val (b->row_order, column);
  }
  c->vals[row] = *v;
}

gboolean
row_builder_set_named (RowBuilder *b, guint row, const char *name, gsize len, const RowValue *v,
                       GError **error)
{
  guint column = 0;
  if (!row_builder_column (b, name, len, &column, error))
    return FALSE;
  row_builder_set (b, row, column, v);
  return TRUE;
}

const char *
row_builder_column_name (const RowBuilder *b, guint column)
{
  return g_array_index (b->columns, RowColumn, column).k.name;
}

static Kind
value_kind (const RowValue *v, guint *width)
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
  case SRC_FLOATS_AT:
    *width = v->n;
    return v->n ? KIND_VECTOR : KIND_IDLIST; /* [] is all integers */
  default:
    return KIND_NONE;
  }
}

gboolean
row_builder_end_row (RowBuilder *b, guint row, GError **error)
{
  for (guint i = 0; i < b->row_order->len; i++) {
    RowColumn *c = &g_array_index (b->columns, RowColumn, g_array_index (b->row_order, guint, i));
    guint width = 0;
    Kind k = value_kind (&c->vals[row], &width);
    if (sedp_column_kind_merge_same (&c->k, k, width))
      continue;
    g_autofree char *conflict = NULL;
    if (!sedp_column_kind_merge (&c->k, k, width, row, b->what, &conflict))
      return sedp_protocol_invalid (error, "%s", conflict);
  }
  g_array_set_size (b->row_order, 0);
  return TRUE;
}

/* ---- the frame ---- */

static void
fill_idlist (const RowBuilder *b, const RowColumn *f, SedpFrame *frame)
{
  guint32 *offsets;
  guint64 *values = sedp_column_idlist_data (sedp_frame_add_idlist (frame, f->k.name, f->k.n_values),
                                             &offsets);
  const guint64 *ids = b->store->ids;
  guint pos = 0;
  for (guint r = 0; r < b->n_rows; r++) {
    offsets[r] = pos;
    const RowValue *v = &f->vals[r];
    if (v->src == SRC_IDS && v->n) {
      memcpy (values + pos, ids + v->v.at, (gsize) v->n * sizeof (guint64));
      pos += v->n;
    }
  }
  offsets[b->n_rows] = pos;
}

static void
fill_vector (const RowBuilder *b, const RowColumn *f, float *data, guint width)
{
  const RowStore *s = b->store;
  for (guint r = 0; r < b->n_rows; r++) {
    const RowValue *v = &f->vals[r];
    float *dst = data + (gsize) r * width;
    guint n = MIN (v->n, width); /* equal once typed; never read past */
    if (v->src == SRC_FLOATS)
      memcpy (dst, v->v.raw, (gsize) n * sizeof (float)); /* little-endian, as the wire */
    else if (v->src == SRC_FLOATS_AT)
      memcpy (dst, s->floats + v->v.at, (gsize) n * sizeof (float));
    else if (v->src == SRC_IDS)
      for (guint k = 0; k < n; k++) /* as the JSON integer the id stands for */
        dst[k] = (float) (double) (gint64) s->ids[v->v.at + k];
  }
}

static void
fill_scalar (const RowBuilder *b, const RowColumn *f, SedpColumn *col, SedpColumnType type)
{
  if (type == SEDP_COLUMN_STRING) {
    for (guint r = 0; r < b->n_rows; r++)
      if (f->vals[r].src == SRC_STRING)
        sedp_column_set_string (col, r, f->vals[r].v.s);
  } else if (type == SEDP_COLUMN_INT64) {
    gint64 *dst = sedp_column_int64_data (col);
    for (guint r = 0; r < b->n_rows; r++)
      if (f->vals[r].src == SRC_INT)
        dst[r] = f->vals[r].v.i;
  } else {
    float *dst = sedp_column_float32_data (col);
    for (guint r = 0; r < b->n_rows; r++) {
      const RowValue *v = &f->vals[r];
      if (v->src == SRC_FLOAT)
        dst[r] = (float) v->v.d;
      else if (v->src == SRC_INT)
        dst[r] = (float) (double) v->v.i;
    }
  }
}

SedpFrame *
row_builder_frame (RowBuilder *b)
{
  SedpFrame *frame = sedp_frame_new (b->n_rows);
  for (guint i = 0; i < b->columns->len; i++) {
    const RowColumn *f = &g_array_index (b->columns, RowColumn, i);
    if (f->k.kind == KIND_NONE)
      continue;
    if (f->k.kind == KIND_IDLIST) {
      fill_idlist (b, f, frame);
      continue;
    }
    SedpColumnType type = f->k.kind == KIND_INT      ? SEDP_COLUMN_INT64
                          : f->k.kind == KIND_STRING ? SEDP_COLUMN_STRING
                                                   : SEDP_COLUMN_FLOAT32;
    guint width = f->k.kind == KIND_VECTOR ? MAX (f->k.width, 1) : 1;
    SedpColumn *col = sedp_frame_add_column (frame, f->k.name, type, width);
    if (f->k.kind == KIND_VECTOR)
      fill_vector (b, f, sedp_column_float32_data (col), width);
    else
      fill_scalar (b, f, col, type);
  }
  return frame;
}
