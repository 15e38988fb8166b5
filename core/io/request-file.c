/* sedp — request files of `sedp run`: JSON Lines requests decoded into frames (the other formats
 * are read by request-log.c), and results encoded as JSON Lines. */
#include "request-file.h"

#include "column-kind.h"
#include "peek.h"
#include "request-log.h"

#include "../runtime/frame-ops.h"

#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK (sedp-io-error-quark, sedp_io_error)

typedef ColumnKind Feature;

const char *
sedp_column_kind_name (Kind k)
{
  static const char *const names[] = {"nothing", "an integer", "a number", "an array of integers",
                                      "an array of numbers", "a string"};
  return names[k];
}

/* "an array of integers of length 3", "a string", …; lengths for arrays when @lengths. */
static char *
describe_kind (Kind k, guint width, gboolean lengths)
{
  if (lengths && (k == KIND_IDLIST || k == KIND_VECTOR))
    return g_strdup_printf ("%s of length %u", sedp_column_kind_name (k), width);
  return g_strdup (sedp_column_kind_name (k));
}

/* Sets *@message to "WHAT[ROW].NAME: MINE, but WHAT[OTHER_ROW] has THEIRS" and returns FALSE. */
static gboolean
kind_conflict (const ColumnKind *f, Kind k, guint width, guint row, Kind other, guint other_width,
               guint other_row, const char *what, char **message)
{
  /* Lengths matter when both are arrays (or a vector is involved). */
  gboolean lengths = (k == KIND_IDLIST || k == KIND_VECTOR) &&
                     (other == KIND_IDLIST || other == KIND_VECTOR);
  g_autofree char *mine = describe_kind (k, width, lengths || k == KIND_VECTOR);
  g_autofree char *theirs = describe_kind (other, other_width, lengths || other == KIND_VECTOR);
  *message = g_strdup_printf ("%s[%u].%s: %s, but %s[%u] has %s", what, row, f->name, mine, what,
                              other_row, theirs);
  return FALSE;
}

gboolean
sedp_column_kind_merge (ColumnKind *f, Kind k, guint width, guint row, const char *what,
                        char **message)
{
  if (k == KIND_NONE)
    return TRUE;
  if (f->kind == KIND_NONE) {
    f->kind = k;
    f->width = width;
    f->first_row = row;
    if (k == KIND_IDLIST)
      f->n_values = width;
    return TRUE;
  }
  switch (f->kind) {
  case KIND_IDLIST:
    if (k == KIND_IDLIST) {
      if (width != f->width && f->ragged_row == 0) {
        f->ragged_row = row + 1;
        f->ragged_width = width;
      }
      f->n_values += width;
      return TRUE;
    }
    if (k == KIND_VECTOR) {
      /* Integer lists so far become vectors when every one of them has this length. */
      if (f->ragged_row)
        return kind_conflict (f, k, width, row, KIND_IDLIST, f->ragged_width, f->ragged_row - 1,
                              what, message);
      if (width != f->width)
        return kind_conflict (f, k, width, row, KIND_IDLIST, f->width, f->first_row, what,
                              message);
      f->kind = KIND_VECTOR;
      f->first_row = row; /* the first vector, for later messages */
      return TRUE;
    }
    break;
  case KIND_VECTOR:
    if ((k == KIND_VECTOR || k == KIND_IDLIST) && width == f->width)
      return TRUE; /* [1, 2] among float vectors of length 2 */
    break;
  case KIND_INT:
    if (k == KIND_INT)
      return TRUE;
    if (k == KIND_FLOAT) {
      f->kind = KIND_FLOAT;
      return TRUE;
    }
    break;
  case KIND_FLOAT:
    if (k == KIND_FLOAT || k == KIND_INT)
      return TRUE;
    break;
  case KIND_STRING:
    if (k == KIND_STRING)
      return TRUE;
    break;
  case KIND_NONE:
    break;
  }
  return kind_conflict (f, k, width, row, f->kind, f->width, f->first_row, what, message);
}

static gboolean
is_integer_node (JsonNode *n)
{
  return JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64;
}

static gboolean
is_number_node (JsonNode *n)
{
  GType t = JSON_NODE_HOLDS_VALUE (n) ? json_node_get_value_type (n) : G_TYPE_INVALID;
  return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
}

/* The kind of one value; KIND_NONE with *why set when it has none we support. */
static Kind
kind_of (JsonNode *n, guint *width, guint *n_values, const char **why)
{
  if (JSON_NODE_HOLDS_NULL (n))
    return KIND_NONE;
  if (JSON_NODE_HOLDS_VALUE (n)) {
    GType t = json_node_get_value_type (n);
    if (t == G_TYPE_INT64 || t == G_TYPE_BOOLEAN)
      return KIND_INT;
    if (t == G_TYPE_DOUBLE)
      return KIND_FLOAT;
    if (t == G_TYPE_STRING)
      return KIND_STRING;
  }
  if (JSON_NODE_HOLDS_ARRAY (n)) {
    JsonArray *a = json_node_get_array (n);
    guint len = json_array_get_length (a);
    gboolean all_int = TRUE;
    for (guint i = 0; i < len; i++) {
      JsonNode *e = json_array_get_element (a, i);
      if (!is_number_node (e)) {
        *why = "arrays may hold numbers only";
        return KIND_NONE;
      }
      all_int = all_int && is_integer_node (e);
    }
    *width = len;
    *n_values = len;
    return all_int ? KIND_IDLIST : KIND_VECTOR;
  }
  *why = "expected a number, a string, a boolean or an array of numbers";
  return KIND_NONE;
}

/* Merges the kind of one more value into @f; FALSE with an error on a conflict. */
static gboolean
merge_kind (Feature *f, JsonNode *n, guint row, const char *where, const char *what,
            GError **error)
{
  guint width = 0, n_values = 0;
  const char *why = NULL;
  Kind k = kind_of (n, &width, &n_values, &why);
  if (why) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, "%s: %s[%u].%s: %s", where, what,
                 row, f->name, why);
    return FALSE;
  }
  g_autofree char *conflict = NULL;
  if (!sedp_column_kind_merge (f, k, width, row, what, &conflict)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, "%s: %s", where, conflict);
    return FALSE;
  }
  return TRUE;
}

/* Builds a frame from @n_rows JSON objects (features by name). */
SedpFrame *
sedp_frame_from_json_objects (JsonObject **rows, guint n_rows, const char *where, const char *what,
                    GError **error)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GArray) features = g_array_new (FALSE, TRUE, sizeof (Feature));
  for (guint r = 0; r < n_rows; r++) {
    g_autoptr (GList) members = json_object_get_members (rows[r]);
    for (GList *l = members; l; l = l->next) {
      const char *name = l->data;
      gpointer pos;
      if (!g_hash_table_lookup_extended (index, name, NULL, &pos)) {
        Feature f = {.name = name};
        g_array_append_val (features, f);
        pos = GUINT_TO_POINTER (features->len - 1);
        g_hash_table_insert (index, (gpointer) name, pos);
      }
      Feature *f = &g_array_index (features, Feature, GPOINTER_TO_UINT (pos));
      if (!merge_kind (f, json_object_get_member (rows[r], name), r, where, what, error))
        return NULL;
    }
  }
  SedpFrame *frame = sedp_frame_new (n_rows);
  for (guint i = 0; i < features->len; i++) {
    Feature *f = &g_array_index (features, Feature, i);
    if (f->kind == KIND_NONE)
      continue;
    if (f->kind == KIND_IDLIST) {
      guint32 *offsets;
      guint64 *values = sedp_column_idlist_data (sedp_frame_add_idlist (frame, f->name, f->n_values), &offsets);
      guint pos = 0;
      for (guint r = 0; r < n_rows; r++) {
        offsets[r] = pos;
        JsonNode *n = json_object_get_member (rows[r], f->name);
        if (n && JSON_NODE_HOLDS_ARRAY (n)) {
          JsonArray *a = json_node_get_array (n);
          for (guint k = 0; k < json_array_get_length (a); k++)
            values[pos++] = (guint64) json_array_get_int_element (a, k);
        }
      }
      offsets[n_rows] = pos;
      continue;
    }
    SedpColumnType type = f->kind == KIND_INT      ? SEDP_COLUMN_INT64
                          : f->kind == KIND_STRING ? SEDP_COLUMN_STRING
                                                   : SEDP_COLUMN_FLOAT32;
    guint width = f->kind == KIND_VECTOR ? MAX (f->width, 1) : 1;
    SedpColumn *col = sedp_frame_add_column (frame, f->name, type, width);
    for (guint r = 0; r < n_rows; r++) {
      JsonNode *n = json_object_get_member (rows[r], f->name);
      if (n == NULL || JSON_NODE_HOLDS_NULL (n))
        continue;
      if (type == SEDP_COLUMN_STRING) {
        sedp_column_set_string (col, r, json_node_get_string (n));
      } else if (type == SEDP_COLUMN_INT64) {
        sedp_column_int64_data (col)[r] = json_node_get_value_type (n) == G_TYPE_BOOLEAN
                                              ? json_node_get_boolean (n)
                                              : json_node_get_int (n);
      } else if (f->kind == KIND_VECTOR) {
        JsonArray *a = json_node_get_array (n);
        float *dst = sedp_column_float32_data (col) + (gsize) r * width;
        guint len = MIN (json_array_get_length (a), width); /* equal once typed; never read past */
        for (guint k = 0; k < len; k++)
          dst[k] = (float) json_array_get_double_element (a, k);
      } else {
        sedp_column_float32_data (col)[r] = (float) json_node_get_double (n);
      }
    }
  }
  return frame;
}

SedpRequest *
sedp_request_from_json (const char *text, gssize length, const char *where, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new_immutable ();
  g_autoptr (GError) local = NULL;
  gsize size = length < 0 ? strlen (text) : (gsize) length;
  if (!sedp_json_check_nesting (text, size, SEDP_PROTOCOL_DEFAULT_MAX_DEPTH, &local)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, "%s: %s", where, local->message);
    return NULL;
  }
  if (!json_parser_load_from_data (parser, text, (gssize) size, &local)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, "%s: invalid JSON: %s", where,
                 local->message);
    return NULL;
  }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                 "%s: a request must be a JSON object", where);
    return NULL;
  }
  JsonObject *obj = json_node_get_object (root);
  static const char *const known[] = {"id", "deadline_ms", "user", "items", NULL};
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l; l = l->next)
    if (!g_strv_contains (known, l->data)) {
      g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                   "%s: unknown field '%s' (expected id, deadline_ms, user, items)", where,
                   (const char *) l->data);
      return NULL;
    }

  g_autofree char *id = NULL;
  JsonNode *idn = json_object_get_member (obj, "id");
  if (idn && JSON_NODE_HOLDS_VALUE (idn) && json_node_get_value_type (idn) == G_TYPE_STRING)
    id = g_strdup (json_node_get_string (idn));
  else if (idn && is_integer_node (idn))
    id = g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (idn));
  else if (idn) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                 "%s: id: expected a string or an integer", where);
    return NULL;
  } else
    id = g_strdup (where);

  gint64 timeout_us = 0;
  JsonNode *dn = json_object_get_member (obj, "deadline_ms");
  if (dn) {
    double ms = is_number_node (dn) ? json_node_get_double (dn) : -1;
    if (!(ms >= 0.001 && ms <= 3600000)) {
      g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                   "%s: deadline_ms: expected milliseconds, more than 0 and at most 3600000", where);
      return NULL;
    }
    timeout_us = MAX ((gint64) (ms * 1000), 1);
  }

  JsonNode *un = json_object_get_member (obj, "user");
  if (un && !JSON_NODE_HOLDS_OBJECT (un) && !JSON_NODE_HOLDS_NULL (un)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                 "%s: user: expected an object of features", where);
    return NULL;
  }
  JsonNode *in = json_object_get_member (obj, "items");
  if (in == NULL || !JSON_NODE_HOLDS_ARRAY (in)) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                 "%s: items: expected an array of item objects", where);
    return NULL;
  }
  JsonArray *items = json_node_get_array (in);
  guint n_items = json_array_get_length (items);
  g_autofree JsonObject **rows = g_new0 (JsonObject *, MAX (n_items, 1));
  for (guint i = 0; i < n_items; i++) {
    JsonNode *e = json_array_get_element (items, i);
    if (!JSON_NODE_HOLDS_OBJECT (e)) {
      g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                   "%s: items[%u]: expected an object of features", where, i);
      return NULL;
    }
    rows[i] = json_node_get_object (e);
  }
  SedpFrame *item_frame = sedp_frame_from_json_objects (rows, n_items, where, "items", error);
  if (item_frame == NULL)
    return NULL;
  SedpFrame *user_frame;
  if (un && JSON_NODE_HOLDS_OBJECT (un)) {
    JsonObject *uo = json_node_get_object (un);
    user_frame = sedp_frame_from_json_objects (&uo, 1, where, "user", error);
    if (user_frame == NULL) {
      sedp_frame_unref (item_frame);
      return NULL;
    }
  } else {
    user_frame = sedp_frame_new (1);
  }
  SedpRequest *r = sedp_request_new (id, 0);
  if (timeout_us)
    sedp_request_set_timeout (r, timeout_us); /* counted from submission, not from reading */
  sedp_request_set_frames (r, user_frame, item_frame);
  return r;
}

static void
write_value (JsonBuilder *b, const SedpColumn *c, guint row)
{
  guint r = sedp_column_is_broadcast (c) ? 0 : row;
  guint w = sedp_column_get_width (c);
  switch (sedp_column_get_column_type (c)) {
  case SEDP_COLUMN_FLOAT32: {
    const float *v = sedp_column_get_float32 (c) + (gsize) r * w;
    if (w == 1) {
      json_builder_add_double_value (b, isfinite (v[0]) ? v[0] : 0.0);
    } else {
      json_builder_begin_array (b);
      for (guint k = 0; k < w; k++)
        json_builder_add_double_value (b, isfinite (v[k]) ? v[k] : 0.0);
      json_builder_end_array (b);
    }
    break;
  }
  case SEDP_COLUMN_INT64:
  case SEDP_COLUMN_UINT64: {
    gboolean is_signed = sedp_column_get_column_type (c) == SEDP_COLUMN_INT64;
    if (w > 1)
      json_builder_begin_array (b);
    for (guint k = 0; k < w; k++) {
      if (is_signed) {
        json_builder_add_int_value (b, sedp_column_get_int64 (c)[(gsize) r * w + k]);
      } else {
        /* JSON readers lose integers past 2^53; unsigned signatures are written as strings. */
        char text[24];
        g_snprintf (text, sizeof text, "%" G_GUINT64_FORMAT, sedp_column_get_uint64 (c)[(gsize) r * w + k]);
        json_builder_add_string_value (b, text);
      }
    }
    if (w > 1)
      json_builder_end_array (b);
    break;
  }
  case SEDP_COLUMN_IDLIST: {
    guint n = 0;
    const guint64 *ids = sedp_column_get_ids (c, r, &n);
    json_builder_begin_array (b);
    for (guint k = 0; k < n; k++)
      json_builder_add_int_value (b, (gint64) ids[k]);
    json_builder_end_array (b);
    break;
  }
  case SEDP_COLUMN_STRING: {
    const char *s = sedp_column_get_string (c, r);
    if (s)
      json_builder_add_string_value (b, s);
    else
      json_builder_add_null_value (b);
    break;
  }
  }
}

void
sedp_result_write_json (SedpRequest *request, const char *const *outputs, GString *out)
{
  const SedpResult *res = sedp_request_get_result (request);
  g_return_if_fail (res != NULL);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "id");
  json_builder_add_string_value (b, sedp_request_get_id (request));
  json_builder_set_member_name (b, "status");
  json_builder_add_string_value (b, sedp_status_to_string (sedp_result_get_status (res)));
  if (sedp_result_get_message (res)) {
    json_builder_set_member_name (b, "message");
    json_builder_add_string_value (b, sedp_result_get_message (res));
  }
  gboolean all_float = outputs == NULL || outputs[0] == NULL;
  const SedpFrame *rf = sedp_result_get_request_frame (res);
  if (rf && sedp_frame_get_n_rows (rf) > 0 && sedp_frame_get_n_columns (rf) > 0) {
    /* What a request-scope sink produced (for example a top-K list). */
    json_builder_set_member_name (b, "request");
    json_builder_begin_object (b);
    for (guint c = 0; c < sedp_frame_get_n_columns (rf); c++) {
      const SedpColumn *col = sedp_frame_get_column_at (rf, c);
      const char *name = sedp_column_get_name (col);
      if (all_float ? sedp_column_get_column_type (col) != SEDP_COLUMN_FLOAT32
                    : !g_strv_contains (outputs, name))
        continue;
      json_builder_set_member_name (b, name);
      write_value (b, col, 0);
    }
    json_builder_end_object (b);
  }
  const char *const *routes = sedp_result_get_routes (res);
  if (routes[0]) {
    json_builder_set_member_name (b, "routes");
    json_builder_begin_array (b);
    for (guint k = 0; routes[k]; k++)
      json_builder_add_string_value (b, routes[k]);
    json_builder_end_array (b);
  }
  guint shed = sedp_result_get_n_shed (res);
  if (shed) {
    json_builder_set_member_name (b, "shed_items");
    json_builder_add_int_value (b, shed);
  }
  json_builder_set_member_name (b, "items");
  json_builder_begin_array (b);
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "status");
    json_builder_add_string_value (b, sedp_item_status_to_string (sedp_result_get_item_status (res, i)));
    const char *msg = sedp_result_get_item_message (res, i);
    if (msg) {
      json_builder_set_member_name (b, "message");
      json_builder_add_string_value (b, msg);
    }
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    SedpItemStatus st = sedp_result_get_item_status (res, i);
    if (f && (st == SEDP_ITEM_SCORED || st == SEDP_ITEM_CACHED)) {
      for (guint c = 0; c < sedp_frame_get_n_columns (f); c++) {
        const SedpColumn *col = sedp_frame_get_column_at (f, c);
        const char *name = sedp_column_get_name (col);
        if (all_float ? (sedp_column_get_column_type (col) != SEDP_COLUMN_FLOAT32 ||
                         sedp_column_is_broadcast (col))
                      : !g_strv_contains (outputs, name))
          continue;
        json_builder_set_member_name (b, name);
        write_value (b, col, row);
      }
    }
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  g_string_append (out, text);
}

const char *
sedp_request_format_to_string (SedpRequestFormat format)
{
  static const char *const names[] = {"auto", "jsonl", "predict-jsonl", "pb"};
  return format <= SEDP_REQUEST_FORMAT_PB ? names[format] : "invalid";
}

gboolean
sedp_request_format_from_string (const char *name, SedpRequestFormat *format)
{
  for (SedpRequestFormat f = SEDP_REQUEST_FORMAT_AUTO; f <= SEDP_REQUEST_FORMAT_PB; f++)
    if (g_strcmp0 (name, sedp_request_format_to_string (f)) == 0) {
      *format = f;
      return TRUE;
    }
  return FALSE;
}

struct _SedpRequestReader {
  char *path;
  GInputStream *base;
  GDataInputStream *data;
  SedpRequestFormat format; /* AUTO: JSON lines, the kind not known yet */
  SedpRequestLog *log;      /* SEDP_REQUEST_FORMAT_PB */
  guint line;
  goffset size;
  goffset consumed;
};

/* AUTO: the format from the name, else from the first byte (JSON lines may still be either). */
static gboolean
sniff_format (SedpRequestReader *rd, GError **error)
{
  if (g_str_has_suffix (rd->path, ".pb")) {
    rd->format = SEDP_REQUEST_FORMAT_PB;
    return TRUE;
  }
  if (g_str_has_suffix (rd->path, ".jsonl") || g_str_has_suffix (rd->path, ".json") ||
      g_str_has_suffix (rd->path, ".ndjson"))
    return TRUE;
  g_autoptr (GError) local = NULL;
  if (g_buffered_input_stream_fill (G_BUFFERED_INPUT_STREAM (rd->data), 1, NULL, &local) < 0) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_READ, "%s: read error: %s", rd->path,
                 local->message);
    return FALSE;
  }
  gsize avail = 0;
  const guint8 *head = g_buffered_input_stream_peek_buffer (G_BUFFERED_INPUT_STREAM (rd->data), &avail);
  gboolean json = avail == 0 || head[0] == 0xef /* a byte order mark */ ||
                  (head[0] != '\0' && strchr ("{# \t\r\n\v\f", head[0]) != NULL);
  if (!json)
    rd->format = SEDP_REQUEST_FORMAT_PB;
  return TRUE;
}

SedpRequestReader *
sedp_request_reader_open (const char *path, GError **error)
{
  return sedp_request_reader_open_format (path, SEDP_REQUEST_FORMAT_JSONL, error);
}

SedpRequestReader *
sedp_request_reader_open_format (const char *path, SedpRequestFormat format, GError **error)
{
  SedpRequestReader *rd = g_new0 (SedpRequestReader, 1);
  rd->path = g_strdup (path);
  rd->format = format;
  if (strcmp (path, "-") == 0) {
    rd->base = g_unix_input_stream_new (0, FALSE);
  } else {
    g_autoptr (GFile) file = g_file_new_for_path (path);
    g_autoptr (GError) local = NULL;
    GFileInputStream *s = g_file_read (file, NULL, &local);
    if (s == NULL) {
      g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_OPEN, "%s: cannot open request file: %s",
                   path, local->message);
      g_free (rd->path);
      g_free (rd);
      return NULL;
    }
    g_autoptr (GFileInfo) info = g_file_query_info (file, G_FILE_ATTRIBUTE_STANDARD_SIZE, 0, NULL, NULL);
    rd->size = info ? g_file_info_get_size (info) : 0;
    rd->base = G_INPUT_STREAM (s);
  }
  rd->data = g_data_input_stream_new (rd->base);
  g_data_input_stream_set_newline_type (rd->data, G_DATA_STREAM_NEWLINE_TYPE_ANY);
  if (format == SEDP_REQUEST_FORMAT_AUTO && !sniff_format (rd, error)) {
    sedp_request_reader_close (rd);
    return NULL;
  }
  if (rd->format == SEDP_REQUEST_FORMAT_PB)
    rd->log = sedp_request_log_new (G_INPUT_STREAM (rd->data), path, rd->size);
  return rd;
}

SedpRequest *
sedp_request_reader_next (SedpRequestReader *rd, GError **error)
{
  if (rd->log) {
    SedpRequest *r = sedp_request_log_next (rd->log, error);
    rd->consumed = (goffset) sedp_request_log_get_offset (rd->log);
    return r;
  }
  for (;;) {
    gsize len = 0;
    g_autoptr (GError) local = NULL;
    g_autofree char *line = g_data_input_stream_read_line (rd->data, &len, NULL, &local);
    if (line == NULL) {
      if (local)
        g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_READ, "%s:%u: read error: %s", rd->path,
                     rd->line + 1, local->message);
      return NULL;
    }
    rd->line++;
    rd->consumed += (goffset) len + 1;
    char *text = g_strstrip (line);
    if (*text == '\0' || *text == '#')
      continue;
    if (rd->format == SEDP_REQUEST_FORMAT_AUTO) /* the first request decides */
      rd->format = sedp_request_json_is_predict (text, strlen (text))
                       ? SEDP_REQUEST_FORMAT_PREDICT_JSONL
                       : SEDP_REQUEST_FORMAT_JSONL;
    g_autofree char *where = g_strdup_printf ("%s:%u", rd->path, rd->line);
    if (rd->format == SEDP_REQUEST_FORMAT_PREDICT_JSONL)
      return sedp_request_from_predict_json (text, strlen (text), where, error);
    return sedp_request_from_json (text, -1, where, error);
  }
}

SedpRequestFormat
sedp_request_reader_get_format (SedpRequestReader *rd)
{
  return rd->format;
}

double
sedp_request_reader_progress (SedpRequestReader *rd)
{
  return rd->size > 0 ? MIN (1.0, (double) rd->consumed / (double) rd->size) : 0.0;
}

void
sedp_request_reader_close (SedpRequestReader *rd)
{
  if (rd == NULL)
    return;
  sedp_request_log_free (rd->log);
  g_object_unref (rd->data);
  g_object_unref (rd->base);
  g_free (rd->path);
  g_free (rd);
}
