/* sedp — frames and columns: reference counted, shared, copied on write. */
#include "frame-private.h"

#include <string.h>

static gsize
column_elem_size (SedpColumnType type)
{
  switch (type) {
  case SEDP_COLUMN_FLOAT32:
    return sizeof (float);
  case SEDP_COLUMN_INT64:
    return sizeof (gint64);
  case SEDP_COLUMN_UINT64:
  case SEDP_COLUMN_IDLIST:
    return sizeof (guint64);
  case SEDP_COLUMN_STRING:
    return sizeof (char *);
  }
  return 0;
}

const char *
sedp_column_type_to_string (SedpColumnType type)
{
  switch (type) {
  case SEDP_COLUMN_FLOAT32:
    return "float32";
  case SEDP_COLUMN_INT64:
    return "int64";
  case SEDP_COLUMN_UINT64:
    return "uint64";
  case SEDP_COLUMN_IDLIST:
    return "idlist";
  case SEDP_COLUMN_STRING:
    return "string";
  }
  return "invalid";
}

/* FNV-1a of a column name: frames hold dozens of columns (26 pooled embeddings and their ids in
 * the CTR example) and are searched by name on every hop, so names are compared by hash first. */
static inline guint32
column_name_hash (const char *name)
{
  guint32 h = 2166136261u;
  for (const guint8 *p = (const guint8 *) name; *p; p++)
    h = (h ^ *p) * 16777619u;
  return h;
}

/* A new column of @n_rows; its values zeroed when @zeroed (a caller that writes every value,
 * offset and string itself passes FALSE). */
static SedpColumn *
column_alloc_full (const char *name, SedpColumnType type, guint width, guint n_rows,
                   guint n_values, gboolean zeroed)
{
  SedpColumn *c = g_new0 (SedpColumn, 1);
  c->ref_count = 1;
  c->name = g_strdup (name);
  c->name_hash = column_name_hash (name);
  c->type = type;
  c->width = (type == SEDP_COLUMN_IDLIST || type == SEDP_COLUMN_STRING) ? 1 : MAX (width, 1);
  c->n_rows = n_rows;
  if (type == SEDP_COLUMN_IDLIST) {
    c->n_values = n_values;
    c->offsets = zeroed ? g_new0 (guint32, (gsize) n_rows + 1) : g_new (guint32, (gsize) n_rows + 1);
    c->data = (zeroed ? g_malloc0_n : g_malloc_n) (MAX (n_values, 1), sizeof (guint64));
  } else {
    c->data = (zeroed ? g_malloc0_n : g_malloc_n) (MAX ((gsize) n_rows * c->width, 1),
                                                   column_elem_size (type));
  }
  return c;
}

static SedpColumn *
column_alloc (const char *name, SedpColumnType type, guint width, guint n_rows, guint n_values)
{
  return column_alloc_full (name, type, width, n_rows, n_values, TRUE);
}

SedpColumn *
sedp_column_ref (SedpColumn *column)
{
  g_atomic_int_inc (&column->ref_count);
  return column;
}

void
sedp_column_unref (SedpColumn *column)
{
  if (column == NULL || !g_atomic_int_dec_and_test (&column->ref_count))
    return;
  if (column->type == SEDP_COLUMN_STRING) {
    char **s = column->data;
    for (guint r = 0; r < column->n_rows; r++)
      g_free (s[r]);
  }
  g_free (column->data);
  g_free (column->offsets);
  g_free (column->name);
  g_free (column);
}

/* Copies rows[0..n) of @src (all rows when @rows is NULL) into a new column; a broadcast source
 * is expanded to @n rows. */
static SedpColumn *
column_gather (const SedpColumn *src, const guint32 *rows, guint n)
{
  SedpColumn *c;
  if (src->type == SEDP_COLUMN_IDLIST) {
    guint total = 0;
    for (guint i = 0; i < n; i++) {
      guint r = src->broadcast ? 0 : (rows ? rows[i] : i);
      total += src->offsets[r + 1] - src->offsets[r];
    }
    c = column_alloc_full (src->name, src->type, 1, n, total, FALSE);
    guint64 *dst = c->data;
    const guint64 *sv = src->data;
    guint pos = 0;
    for (guint i = 0; i < n; i++) {
      guint r = src->broadcast ? 0 : (rows ? rows[i] : i);
      guint len = src->offsets[r + 1] - src->offsets[r];
      memcpy (dst + pos, sv + src->offsets[r], len * sizeof (guint64));
      c->offsets[i] = pos;
      pos += len;
    }
    c->offsets[n] = pos;
    return c;
  }
  c = column_alloc_full (src->name, src->type, src->width, n, 0, FALSE); /* every value copied */
  if (src->type == SEDP_COLUMN_STRING) {
    char **d = c->data, *const *s = src->data;
    for (guint i = 0; i < n; i++)
      d[i] = g_strdup (s[src->broadcast ? 0 : (rows ? rows[i] : i)]);
    return c;
  }
  gsize row_bytes = (gsize) src->width * column_elem_size (src->type);
  if (rows == NULL && !src->broadcast) {
    memcpy (c->data, src->data, row_bytes * n);
    return c;
  }
  for (guint i = 0; i < n; i++) {
    guint r = src->broadcast ? 0 : rows[i];
    memcpy ((char *) c->data + row_bytes * i, (const char *) src->data + row_bytes * r, row_bytes);
  }
  return c;
}

static SedpColumn *
column_copy (const SedpColumn *src)
{
  SedpColumn *c = column_gather (src, NULL, src->n_rows);
  c->broadcast = src->broadcast;
  return c;
}

const char *
sedp_column_get_name (const SedpColumn *column)
{
  g_return_val_if_fail (column != NULL, NULL);
  return column->name;
}

SedpColumnType
sedp_column_get_column_type (const SedpColumn *column)
{
  g_return_val_if_fail (column != NULL, 0);
  return column->type;
}

guint
sedp_column_get_width (const SedpColumn *column)
{
  g_return_val_if_fail (column != NULL, 0);
  return column->width;
}

guint
sedp_column_get_n_rows (const SedpColumn *column)
{
  g_return_val_if_fail (column != NULL, 0);
  return column->n_rows;
}

gboolean
sedp_column_is_broadcast (const SedpColumn *column)
{
  g_return_val_if_fail (column != NULL, FALSE);
  return column->broadcast;
}

#define TYPED_GETTER(fn, ctype, tag)                          \
  const ctype *fn (const SedpColumn *column)                  \
  {                                                           \
    g_return_val_if_fail (column != NULL, NULL);              \
    return column->type == (tag) ? column->data : NULL;       \
  }

TYPED_GETTER (sedp_column_get_float32, float, SEDP_COLUMN_FLOAT32)
TYPED_GETTER (sedp_column_get_int64, gint64, SEDP_COLUMN_INT64)
TYPED_GETTER (sedp_column_get_uint64, guint64, SEDP_COLUMN_UINT64)

#define TYPED_WRITER(fn, ctype, tag)                          \
  ctype *fn (SedpColumn *column)                              \
  {                                                           \
    g_return_val_if_fail (column != NULL, NULL);              \
    g_return_val_if_fail (column->type == (tag), NULL);       \
    return column->data;                                      \
  }

TYPED_WRITER (sedp_column_float32_data, float, SEDP_COLUMN_FLOAT32)
TYPED_WRITER (sedp_column_int64_data, gint64, SEDP_COLUMN_INT64)
TYPED_WRITER (sedp_column_uint64_data, guint64, SEDP_COLUMN_UINT64)

const guint64 *
sedp_column_get_ids (const SedpColumn *column, guint row, guint *n_ids)
{
  g_return_val_if_fail (column != NULL && n_ids != NULL, NULL);
  *n_ids = 0;
  if (column->type != SEDP_COLUMN_IDLIST || row >= column->n_rows)
    return NULL;
  *n_ids = column->offsets[row + 1] - column->offsets[row];
  return *n_ids ? (const guint64 *) column->data + column->offsets[row] : NULL;
}

const guint64 *
sedp_column_get_idlist (const SedpColumn *column, const guint32 **offsets, guint *n_values)
{
  g_return_val_if_fail (column != NULL, NULL);
  if (column->type != SEDP_COLUMN_IDLIST)
    return NULL;
  if (offsets)
    *offsets = column->offsets;
  if (n_values)
    *n_values = column->n_values;
  return column->data;
}

guint64 *
sedp_column_idlist_data (SedpColumn *column, guint32 **offsets)
{
  g_return_val_if_fail (column != NULL && column->type == SEDP_COLUMN_IDLIST, NULL);
  if (offsets)
    *offsets = column->offsets;
  return column->data;
}

const char *
sedp_column_get_string (const SedpColumn *column, guint row)
{
  g_return_val_if_fail (column != NULL, NULL);
  if (column->type != SEDP_COLUMN_STRING || row >= column->n_rows)
    return NULL;
  return ((char *const *) column->data)[row];
}

void
sedp_column_set_string (SedpColumn *column, guint row, const char *value)
{
  g_return_if_fail (column != NULL && column->type == SEDP_COLUMN_STRING);
  g_return_if_fail (row < column->n_rows);
  char **s = column->data;
  g_free (s[row]);
  s[row] = g_strdup (value);
}

/* ---- frames ---- */

SedpFrame *
sedp_frame_new (guint n_rows)
{
  SedpFrame *f = g_new0 (SedpFrame, 1);
  f->ref_count = 1;
  f->n_rows = n_rows;
  return f;
}

SedpFrame *
sedp_frame_ref (SedpFrame *frame)
{
  g_return_val_if_fail (frame != NULL, NULL);
  g_atomic_int_inc (&frame->ref_count);
  return frame;
}

static void
frame_clear_rows (SedpFrame *frame)
{
  if (frame->row_message) {
    for (guint r = 0; r < frame->n_rows; r++)
      g_free (frame->row_message[r]);
    g_clear_pointer (&frame->row_message, g_free);
  }
  g_clear_pointer (&frame->row_state, g_free);
}

void
sedp_frame_unref (SedpFrame *frame)
{
  if (frame == NULL || !g_atomic_int_dec_and_test (&frame->ref_count))
    return;
  for (guint i = 0; i < frame->n_columns; i++)
    sedp_column_unref (frame->columns[i]);
  g_free (frame->columns);
  g_free (frame->item_index);
  frame_clear_rows (frame);
  g_free (frame);
}

guint
sedp_frame_get_n_rows (const SedpFrame *frame)
{
  g_return_val_if_fail (frame != NULL, 0);
  return frame->n_rows;
}

guint
sedp_frame_get_n_columns (const SedpFrame *frame)
{
  g_return_val_if_fail (frame != NULL, 0);
  return frame->n_columns;
}

const SedpColumn *
sedp_frame_get_column_at (const SedpFrame *frame, guint index)
{
  g_return_val_if_fail (frame != NULL && index < frame->n_columns, NULL);
  return frame->columns[index];
}

static int
frame_find (const SedpFrame *frame, const char *name)
{
  guint32 h = column_name_hash (name);
  for (guint i = 0; i < frame->n_columns; i++)
    if (frame->columns[i]->name_hash == h && strcmp (frame->columns[i]->name, name) == 0)
      return (int) i;
  return -1;
}

const SedpColumn *
sedp_frame_get_column (const SedpFrame *frame, const char *name)
{
  g_return_val_if_fail (frame != NULL && name != NULL, NULL);
  int i = frame_find (frame, name);
  return i < 0 ? NULL : frame->columns[i];
}

const SedpColumn *
sedp_frame_require_column (const SedpFrame *frame, const char *name, SedpColumnType type,
                           guint width, GError **error)
{
  g_return_val_if_fail (frame != NULL && name != NULL, NULL);
  const SedpColumn *c = sedp_frame_get_column (frame, name);
  if (c == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' is missing", name);
    return NULL;
  }
  if (c->type != type) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' has type %s, expected %s", name, sedp_column_type_to_string (c->type),
                 sedp_column_type_to_string (type));
    return NULL;
  }
  if (width != 0 && c->width != width) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' has width %u, expected %u", name, c->width, width);
    return NULL;
  }
  return c;
}

void
sedp_frame_put_column (SedpFrame *frame, SedpColumn *column)
{
  int i = frame_find (frame, column->name);
  sedp_column_ref (column);
  if (i >= 0) {
    sedp_column_unref (frame->columns[i]);
    frame->columns[i] = column;
    return;
  }
  if (frame->n_columns == frame->columns_size) {
    frame->columns_size = MAX (8, frame->columns_size * 2);
    frame->columns = g_renew (SedpColumn *, frame->columns, frame->columns_size);
  }
  frame->columns[frame->n_columns++] = column;
}

static SedpColumn *
frame_take_column (SedpFrame *frame, SedpColumn *column)
{
  sedp_frame_put_column (frame, column);
  sedp_column_unref (column);
  return column;
}

SedpColumn *
sedp_frame_add_column (SedpFrame *frame, const char *name, SedpColumnType type, guint width)
{
  g_return_val_if_fail (frame != NULL && name != NULL, NULL);
  g_return_val_if_fail (type >= SEDP_COLUMN_FLOAT32 && type <= SEDP_COLUMN_STRING, NULL);
  g_return_val_if_fail (type != SEDP_COLUMN_IDLIST, NULL);
  return frame_take_column (frame, column_alloc (name, type, width, frame->n_rows, 0));
}

SedpColumn *
sedp_frame_add_idlist (SedpFrame *frame, const char *name, guint n_values)
{
  g_return_val_if_fail (frame != NULL && name != NULL, NULL);
  SedpColumn *c = column_alloc (name, SEDP_COLUMN_IDLIST, 1, frame->n_rows, n_values);
  c->offsets[frame->n_rows] = n_values;
  return frame_take_column (frame, c);
}

SedpColumn *
sedp_frame_edit_column (SedpFrame *frame, const char *name, GError **error)
{
  g_return_val_if_fail (frame != NULL && name != NULL, NULL);
  int i = frame_find (frame, name);
  if (i < 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' is missing", name);
    return NULL;
  }
  SedpColumn *c = frame->columns[i];
  if (g_atomic_int_get (&c->ref_count) == 1)
    return c;
  SedpColumn *copy = column_copy (c);
  sedp_column_unref (c);
  frame->columns[i] = copy;
  return copy;
}

gboolean
sedp_frame_remove_column (SedpFrame *frame, const char *name)
{
  g_return_val_if_fail (frame != NULL && name != NULL, FALSE);
  int i = frame_find (frame, name);
  if (i < 0)
    return FALSE;
  sedp_frame_remove_column_at (frame, (guint) i);
  return TRUE;
}

void
sedp_frame_remove_column_at (SedpFrame *frame, guint index)
{
  g_return_if_fail (frame != NULL && index < frame->n_columns);
  sedp_column_unref (frame->columns[index]);
  memmove (frame->columns + index, frame->columns + index + 1,
           (frame->n_columns - index - 1) * sizeof (SedpColumn *));
  frame->n_columns--;
}

gboolean
sedp_frame_has_item_rows (const SedpFrame *frame)
{
  g_return_val_if_fail (frame != NULL, FALSE);
  return frame->kind == 1; /* FRAME_KIND_ITEMS */
}

guint
sedp_frame_get_item_index (const SedpFrame *frame, guint row)
{
  g_return_val_if_fail (frame != NULL, 0);
  return frame->item_index ? frame->item_index[row] : frame->item_base + row;
}

static void
frame_mark (SedpFrame *frame, guint row, SedpRowState state)
{
  if (frame->row_state == NULL)
    frame->row_state = g_new0 (guint8, MAX (frame->n_rows, 1));
  frame->row_state[row] = (guint8) state;
}

void
sedp_frame_drop_row (SedpFrame *frame, guint row)
{
  g_return_if_fail (frame != NULL && row < frame->n_rows);
  frame_mark (frame, row, SEDP_ROW_DROPPED);
}

void
sedp_frame_shed_row (SedpFrame *frame, guint row)
{
  g_return_if_fail (frame != NULL && row < frame->n_rows);
  frame_mark (frame, row, SEDP_ROW_SHED);
}

void
sedp_frame_fail_row (SedpFrame *frame, guint row, const char *message)
{
  g_return_if_fail (frame != NULL && row < frame->n_rows);
  frame_mark (frame, row, SEDP_ROW_FAILED);
  if (frame->row_message == NULL)
    frame->row_message = g_new0 (char *, MAX (frame->n_rows, 1));
  g_free (frame->row_message[row]);
  frame->row_message[row] = g_strdup (message ? message : "failed");
}

void
sedp_frame_answer_row (SedpFrame *frame, guint row)
{
  g_return_if_fail (frame != NULL && row < frame->n_rows);
  frame_mark (frame, row, SEDP_ROW_ANSWERED);
}

SedpRowState
sedp_frame_get_row_state (const SedpFrame *frame, guint row)
{
  g_return_val_if_fail (frame != NULL && row < frame->n_rows, SEDP_ROW_LIVE);
  return frame->row_state ? (SedpRowState) frame->row_state[row] : SEDP_ROW_LIVE;
}

const char *
sedp_frame_get_row_message (const SedpFrame *frame, guint row)
{
  return frame->row_message ? frame->row_message[row] : NULL;
}

gboolean
sedp_frame_has_dead_rows (const SedpFrame *frame)
{
  if (frame->row_state == NULL)
    return FALSE;
  for (guint r = 0; r < frame->n_rows; r++)
    if (frame->row_state[r] != SEDP_ROW_LIVE)
      return TRUE;
  return FALSE;
}

SedpFrame *
sedp_frame_copy_shallow (const SedpFrame *frame)
{
  SedpFrame *f = sedp_frame_new (frame->n_rows);
  f->kind = frame->kind;
  f->item_base = frame->item_base;
  if (frame->item_index)
    f->item_index = g_memdup2 (frame->item_index, sizeof (guint32) * frame->n_rows);
  f->columns_size = MAX (frame->n_columns, 8);
  f->columns = g_new (SedpColumn *, f->columns_size);
  for (guint i = 0; i < frame->n_columns; i++)
    f->columns[i] = sedp_column_ref (frame->columns[i]);
  f->n_columns = frame->n_columns;
  return f;
}

SedpFrame *
sedp_frame_make_writable (SedpFrame *frame)
{
  if (g_atomic_int_get (&frame->ref_count) == 1)
    return frame;
  SedpFrame *copy = sedp_frame_copy_shallow (frame);
  sedp_frame_unref (frame);
  return copy;
}

SedpFrame *
sedp_frame_select_rows (const SedpFrame *frame, const guint32 *rows, guint n_rows)
{
  SedpFrame *f = sedp_frame_new (n_rows);
  f->kind = frame->kind;
  f->item_index = g_new (guint32, MAX (n_rows, 1));
  for (guint i = 0; i < n_rows; i++)
    f->item_index[i] = sedp_frame_get_item_index (frame, rows[i]);
  for (guint c = 0; c < frame->n_columns; c++) {
    const SedpColumn *src = frame->columns[c];
    if (src->broadcast)
      sedp_frame_put_column (f, (SedpColumn *) src);
    else
      frame_take_column (f, column_gather (src, rows, n_rows));
  }
  return f;
}

SedpFrame *
sedp_frame_slice (const SedpFrame *frame, guint start, guint n)
{
  g_return_val_if_fail (start + n <= frame->n_rows, NULL);
  guint32 *rows = g_new (guint32, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    rows[i] = start + i;
  SedpFrame *f = sedp_frame_select_rows (frame, rows, n);
  g_free (rows);
  if (frame->item_index == NULL) {
    g_clear_pointer (&f->item_index, g_free);
    f->item_base = frame->item_base + start;
  }
  return f;
}

void
sedp_frame_add_broadcast (SedpFrame *frame, const SedpFrame *request_frame)
{
  for (guint c = 0; c < request_frame->n_columns; c++) {
    SedpColumn *src = request_frame->columns[c];
    if (frame_find (frame, src->name) >= 0)
      continue;
    if (src->broadcast || (request_frame->n_rows == frame->n_rows && request_frame->n_rows != 1)) {
      sedp_frame_put_column (frame, src);
    } else if (request_frame->n_rows == 1) {
      /* One row that applies to every row of the item frame. The column is shared with the
       * request frame when it is already flagged; otherwise a one-row copy is flagged. */
      SedpColumn *b = column_copy (src);
      b->broadcast = TRUE;
      frame_take_column (frame, b);
    }
  }
}

void
sedp_frame_merge_columns (SedpFrame *frame, const SedpFrame *other)
{
  for (guint c = 0; c < other->n_columns; c++) {
    int i = frame_find (frame, other->columns[c]->name);
    if (i >= 0 && frame->columns[i] == other->columns[c])
      continue;
    sedp_frame_put_column (frame, other->columns[c]);
  }
}

gboolean
sedp_frame_same_items (const SedpFrame *a, const SedpFrame *b)
{
  if (a->n_rows != b->n_rows)
    return FALSE;
  if (a->item_index == NULL && b->item_index == NULL)
    return a->item_base == b->item_base;
  for (guint r = 0; r < a->n_rows; r++)
    if (sedp_frame_get_item_index (a, r) != sedp_frame_get_item_index (b, r))
      return FALSE;
  return TRUE;
}

SedpFrame *
sedp_frame_intersect_items (const SedpFrame *frame, const SedpFrame *other)
{
  g_autoptr (GHashTable) present = g_hash_table_new (NULL, NULL);
  for (guint r = 0; r < other->n_rows; r++)
    g_hash_table_add (present, GUINT_TO_POINTER (sedp_frame_get_item_index (other, r) + 1));
  guint32 *rows = g_new (guint32, MAX (frame->n_rows, 1));
  guint n = 0;
  for (guint r = 0; r < frame->n_rows; r++)
    if (g_hash_table_contains (present, GUINT_TO_POINTER (sedp_frame_get_item_index (frame, r) + 1)))
      rows[n++] = r;
  SedpFrame *f = sedp_frame_select_rows (frame, rows, n);
  g_free (rows);
  return f;
}

SedpFrame *
sedp_frame_concat (SedpFrame *const *frames, guint n)
{
  guint total = 0;
  for (guint i = 0; i < n; i++)
    total += frames[i]->n_rows;
  SedpFrame *f = sedp_frame_new (total);
  f->kind = 1; /* items */
  f->item_index = g_new (guint32, MAX (total, 1));
  guint pos = 0;
  for (guint i = 0; i < n; i++)
    for (guint r = 0; r < frames[i]->n_rows; r++)
      f->item_index[pos++] = sedp_frame_get_item_index (frames[i], r);
  if (n == 0)
    return f;
  if (n == 1) {
    for (guint c = 0; c < frames[0]->n_columns; c++)
      sedp_frame_put_column (f, frames[0]->columns[c]);
    return f;
  }
  const SedpFrame *first = frames[0];
  for (guint c = 0; c < first->n_columns; c++) {
    const SedpColumn *proto = first->columns[c];
    gboolean all_broadcast = TRUE, usable = TRUE;
    guint n_values = 0;
    for (guint i = 0; i < n && usable; i++) {
      const SedpColumn *col = sedp_frame_get_column (frames[i], proto->name);
      if (col == NULL || col->type != proto->type || col->width != proto->width) {
        usable = FALSE;
        break;
      }
      if (col != proto || !col->broadcast)
        all_broadcast = FALSE;
      if (col->type == SEDP_COLUMN_IDLIST)
        n_values += col->broadcast ? (col->offsets[1] - col->offsets[0]) * frames[i]->n_rows
                                   : col->n_values;
    }
    if (!usable)
      continue;
    if (all_broadcast) {
      sedp_frame_put_column (f, (SedpColumn *) proto);
      continue;
    }
    SedpColumn *dst = column_alloc_full (proto->name, proto->type, proto->width, total, n_values,
                                         FALSE); /* every row copied below */
    gsize row_bytes = (gsize) proto->width * column_elem_size (proto->type);
    guint row = 0, vpos = 0;
    for (guint i = 0; i < n; i++) {
      const SedpColumn *col = sedp_frame_get_column (frames[i], proto->name);
      guint rows = frames[i]->n_rows;
      for (guint r = 0; r < rows; r++, row++) {
        guint sr = col->broadcast ? 0 : r;
        if (proto->type == SEDP_COLUMN_IDLIST) {
          guint len = col->offsets[sr + 1] - col->offsets[sr];
          memcpy ((guint64 *) dst->data + vpos, (const guint64 *) col->data + col->offsets[sr],
                  len * sizeof (guint64));
          dst->offsets[row] = vpos;
          vpos += len;
        } else if (proto->type == SEDP_COLUMN_STRING) {
          ((char **) dst->data)[row] = g_strdup (((char *const *) col->data)[sr]);
        } else {
          memcpy ((char *) dst->data + row_bytes * row, (const char *) col->data + row_bytes * sr,
                  row_bytes);
        }
      }
    }
    if (proto->type == SEDP_COLUMN_IDLIST)
      dst->offsets[total] = vpos;
    frame_take_column (f, dst);
  }
  return f;
}

SedpFrame *
sedp_frame_to_broadcast (const SedpFrame *request_frame)
{
  SedpFrame *f = sedp_frame_new (1);
  for (guint c = 0; c < request_frame->n_columns; c++) {
    SedpColumn *src = request_frame->columns[c];
    if (src->broadcast) {
      sedp_frame_put_column (f, src);
    } else {
      SedpColumn *b = column_copy (src);
      b->broadcast = TRUE;
      frame_take_column (f, b);
    }
  }
  return f;
}

void
sedp_frame_set_kind (SedpFrame *frame, int kind)
{
  frame->kind = kind;
}

int
sedp_frame_get_kind (const SedpFrame *frame)
{
  return frame->kind;
}
