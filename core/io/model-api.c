/* sedp — the model API (model-api.h): the input arrays of a request as both formats decode them,
 * the items frame they make, the output columns an answer reads, and the entry points that pick
 * the format (tfs-json.c, deeprec-pb.c). */
#include "model-api-private.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

/* ---- input arrays ---- */

static MaArray *
array_new (const char *name, gsize len, const char *column, const SedpModelApiTensor *decl)
{
  MaArray *a = g_new0 (MaArray, 1);
  a->name = g_strndup (name, len);
  a->name_len = len;
  a->column = g_strdup (column ? column : a->name);
  a->decl = decl;
  if (decl) {
    a->type = decl->type;
    a->width = decl->type == SEDP_COLUMN_STRING ? 1 : decl->width;
  }
  return a;
}

static void
array_free (MaArray *a)
{
  g_free (a->name);
  g_free (a->column);
  g_free (a->values);
  if (a->strings)
    g_ptr_array_unref (a->strings);
  g_free (a);
}

void
ma_inputs_init (MaInputs *in, const SedpModelApiSignature *signature,
                const SedpProtocolLimits *limits)
{
  memset (in, 0, sizeof *in);
  in->signature = signature;
  SedpProtocolLimits l = limits ? *limits : (SedpProtocolLimits) {0};
  in->limits.max_items = l.max_items ? l.max_items : SEDP_PROTOCOL_DEFAULT_MAX_ITEMS;
  in->limits.max_depth = l.max_depth ? l.max_depth : SEDP_PROTOCOL_DEFAULT_MAX_DEPTH;
  in->limits.max_features = l.max_features ? l.max_features : SEDP_PROTOCOL_DEFAULT_MAX_FEATURES;
  in->limits.max_values = l.max_values ? l.max_values : SEDP_PROTOCOL_DEFAULT_MAX_VALUES;
  in->limits.max_string_bytes = l.max_string_bytes ? l.max_string_bytes
                                                   : SEDP_PROTOCOL_DEFAULT_MAX_STRING_BYTES;
  in->limits.max_decoded_bytes = l.max_decoded_bytes ? l.max_decoded_bytes
                                                     : SEDP_PROTOCOL_DEFAULT_MAX_DECODED_BYTES;
  in->arrays = g_ptr_array_new_with_free_func ((GDestroyNotify) array_free);
  for (guint i = 0; i < signature->inputs->len; i++) {
    const SedpModelApiTensor *t = &g_array_index (signature->inputs, SedpModelApiTensor, i);
    g_ptr_array_add (in->arrays, array_new (t->name, strlen (t->name), t->column, t));
  }
  in->n_declared = in->arrays->len;
}

void
ma_inputs_clear (MaInputs *in)
{
  g_clear_pointer (&in->arrays, g_ptr_array_unref);
}

gboolean
ma_inputs_charge (MaInputs *in, gsize bytes, GError **error)
{
  if (G_LIKELY (bytes <= in->limits.max_decoded_bytes - MIN (in->charged,
                                                               in->limits.max_decoded_bytes))) {
    in->charged += bytes;
    return TRUE;
  }
  return sedp_protocol_over_limit (error, "the request needs more than the limit of %"
                                   G_GSIZE_FORMAT " bytes of memory to decode "
                                   "(max_decoded_bytes)", in->limits.max_decoded_bytes);
}

char *
ma_signature_names (const GArray *tensors)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < tensors->len; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "",
                            g_array_index (tensors, SedpModelApiTensor, i).name);
  if (tensors->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

/* At most 64 bytes of a name from the request, for messages. */
static char *
short_name (const char *name, gsize len)
{
  gsize n = MIN (len, 64);
  const char *end = NULL;
  g_utf8_validate_len (name, n, &end);
  n = (gsize) (end - name);
  return g_strdup_printf ("%.*s%s", (int) n, name, len > n ? "…" : "");
}

/* The array named @name: the guess first (each instance names its inputs in the order the
 * previous one did), then every array. */
static MaArray *
find_array (MaInputs *in, const char *name, gsize len)
{
  guint n = in->arrays->len;
  for (guint k = 0, i = in->guess; k < n; k++, i++) {
    if (i >= n)
      i = 0;
    MaArray *a = g_ptr_array_index (in->arrays, i);
    if (a->name_len == len && memcmp (a->name, name, len) == 0) {
      in->guess = i + 1;
      return a;
    }
  }
  return NULL;
}

/* A new open array: a name that may be a column, not one already filled. */
static MaArray *
open_array (MaInputs *in, const char *where, const char *name, gsize len, GError **error)
{
  g_autofree char *shown = short_name (name, len);
  if (len == 0 || memchr (name, '\0', len) || !g_utf8_validate_len (name, len, NULL)) {
    sedp_protocol_invalid (error, "%s: an input's name must be non-empty UTF-8 text without NUL",
                           where);
    return NULL;
  }
  if (len > in->limits.max_string_bytes) {
    sedp_protocol_over_limit (error, "%s: an input name of %" G_GSIZE_FORMAT " bytes, more than "
                              "the limit of %" G_GSIZE_FORMAT " (max_string_bytes)", where, len,
                              in->limits.max_string_bytes);
    return NULL;
  }
  if (in->arrays->len - in->n_declared >= in->limits.max_features) {
    sedp_protocol_over_limit (error, "%s.%s: more than the limit of %u inputs (max_features)",
                              where, shown, in->limits.max_features);
    return NULL;
  }
  for (guint i = 0; i < in->arrays->len; i++) {
    MaArray *a = g_ptr_array_index (in->arrays, i);
    if (strlen (a->column) == len && memcmp (a->column, name, len) == 0) {
      sedp_protocol_invalid (error, "%s.%s: its column is already filled by the input %s "
                             "(rename one of them)", where, shown, a->name);
      return NULL;
    }
  }
  if (!ma_inputs_charge (in, sizeof (MaArray) + 2 * (len + 1), error))
    return NULL;
  MaArray *a = array_new (name, len, NULL, NULL);
  g_ptr_array_add (in->arrays, a);
  return a;
}

MaArray *
ma_inputs_array (MaInputs *in, MaPath path, gconstpointer ctx, const char *name, gsize len,
                 GError **error)
{
  MaArray *a = find_array (in, name, len);
  if (a)
    return a;
  g_autofree char *where = path (ctx);
  if (in->signature->open_inputs)
    return open_array (in, where, name, len, error);
  g_autofree char *shown = short_name (name, len);
  g_autofree char *names = ma_signature_names (in->signature->inputs);
  sedp_protocol_invalid (error, "%s.%s: not an input of the signature %s (its inputs: %s)", where,
                         shown, in->signature->name, names);
  return NULL;
}

MaArray *
ma_inputs_single (MaInputs *in)
{
  return in->n_declared == 1 ? g_ptr_array_index (in->arrays, 0) : NULL;
}

/* ---- values ---- */

gboolean
ma_array_accept (MaArray *a, SedpColumnType type, MaPath where, gconstpointer ctx,
                 GError **error)
{
  gboolean string = type == SEDP_COLUMN_STRING;
  if (a->type == 0) {
    a->type = type;
    return TRUE;
  }
  if (string == (a->type == SEDP_COLUMN_STRING))
    return TRUE;
  g_autofree char *path = where (ctx);
  if (string)
    return sedp_protocol_invalid (error, "%s: a string, but the input %s is a %s array (give "
                                  "numbers)", path, a->name, sedp_column_type_to_string (a->type));
  return sedp_protocol_invalid (error, "%s: a number, but the input %s is a string array (give "
                                "strings, or {\"b64\": \"…\"} for bytes)", path, a->name);
}

static gboolean
push_value (MaInputs *in, MaArray *a, gconstpointer v, GError **error)
{
  gsize size = a->type == SEDP_COLUMN_INT64 ? sizeof (gint64) : sizeof (float);
  if (!ma_inputs_charge (in, size, error))
    return FALSE;
  if ((a->n_values + (gsize) 1) * size > a->capacity) { /* doubling, within what was charged */
    a->capacity = MAX (a->capacity * 2, 4096);
    a->values = g_realloc (a->values, a->capacity);
  }
  memcpy (a->values + a->n_values * size, v, size);
  a->n_values++;
  return TRUE;
}

gboolean
ma_array_push_double (MaInputs *in, MaArray *a, double v, MaPath where, gconstpointer ctx,
                      GError **error)
{
  if (a->type != SEDP_COLUMN_INT64) {
    float f = (float) v;
    if (G_UNLIKELY (isfinite (v) && !isfinite (f))) {
      g_autofree char *path = where (ctx);
      return sedp_protocol_invalid (error, "%s: %g is out of the range of the float32 input %s "
                                    "(at most 3.4e38 in magnitude)", path, v, a->name);
    }
    return push_value (in, a, &f, error);
  }
  /* int64: an integral value within range (2^63 is the first double past G_MAXINT64) */
  if (!(v == floor (v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
    g_autofree char *path = where (ctx);
    return sedp_protocol_invalid (error, "%s: %.17g is not a 64-bit integer, and the input %s is "
                                  "an int64 array (give whole numbers)", path, v, a->name);
  }
  gint64 i = (gint64) v;
  return push_value (in, a, &i, error);
}

gboolean
ma_array_push_int (MaInputs *in, MaArray *a, gint64 v, GError **error)
{
  if (a->type != SEDP_COLUMN_INT64) {
    float f = (float) v;
    return push_value (in, a, &f, error);
  }
  return push_value (in, a, &v, error);
}

gboolean
ma_array_push_string (MaInputs *in, MaArray *a, const char *s, gsize len, MaPath where,
                      gconstpointer ctx, GError **error)
{
  if (len > in->limits.max_string_bytes) {
    g_autofree char *path = where (ctx);
    return sedp_protocol_over_limit (error, "%s: a string of %" G_GSIZE_FORMAT " bytes, more "
                                     "than the limit of %" G_GSIZE_FORMAT " (max_string_bytes)",
                                     path, len, in->limits.max_string_bytes);
  }
  if (memchr (s, '\0', len)) {
    g_autofree char *path = where (ctx);
    return sedp_protocol_invalid (error, "%s: the value holds a NUL byte, which a string column "
                                  "cannot hold (its strings are NUL-terminated)", path);
  }
  if (!ma_inputs_charge (in, len + 1 + sizeof (char *), error))
    return FALSE;
  if (a->strings == NULL)
    a->strings = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (a->strings, g_strndup (s, len));
  a->n_values++;
  return TRUE;
}

/* Sets @error to why a row of @n values cannot end @a (its @path first); FALSE (TRUE when it
 * can). */
static gboolean
bad_row (MaInputs *in, MaArray *a, guint n, const char *path, GError **error)
{
  if (a->n_rows >= in->limits.max_items)
    return sedp_protocol_over_limit (error, "%s: more than the limit of %u rows in a batch "
                                     "(max_items)", path, in->limits.max_items);
  if (n == 0)
    return sedp_protocol_invalid (error, "%s: no values (a row of the input %s needs at least "
                                  "one)", path, a->name);
  if (n > in->limits.max_values)
    return sedp_protocol_over_limit (error, "%s: %u values in one row, more than the limit of %u "
                                     "(max_values)", path, n, in->limits.max_values);
  if (a->type == SEDP_COLUMN_STRING && n != 1)
    return sedp_protocol_invalid (error, "%s: %u strings, but a string input holds one string "
                                  "per row", path, n);
  if (a->width != 0 && n != a->width) {
    if (a->decl && a->decl->width)
      return sedp_protocol_invalid (error, "%s: %u values, the signature's width for %s is %u",
                                    path, n, a->name, a->width);
    return sedp_protocol_invalid (error, "%s: %u values, but the first row of %s has %u (every "
                                  "row of an input has the same width)", path, n, a->name,
                                  a->width);
  }
  return TRUE;
}

gboolean
ma_array_end_row (MaInputs *in, MaArray *a, guint n, MaPath where, gconstpointer ctx,
                  GError **error)
{
  gboolean ok = a->n_rows < in->limits.max_items && n > 0 && n <= in->limits.max_values &&
                (a->type != SEDP_COLUMN_STRING || n == 1) && (a->width == 0 || n == a->width);
  if (G_UNLIKELY (!ok)) {
    g_autofree char *path = where (ctx);
    return bad_row (in, a, n, path, error);
  }
  if (a->width == 0)
    a->width = n;
  a->n_rows++;
  return TRUE;
}

/* ---- the items frame ---- */

static void
fill_column (SedpFrame *frame, const MaArray *a, guint n_rows)
{
  SedpColumn *col = sedp_frame_add_column (frame, a->column, a->type, a->width);
  if (a->type == SEDP_COLUMN_STRING) {
    for (guint r = 0; r < n_rows; r++)
      sedp_column_set_string (col, r, g_ptr_array_index (a->strings, r));
  } else if (a->type == SEDP_COLUMN_INT64) {
    if (a->values)
      memcpy (sedp_column_int64_data (col), a->values, (gsize) n_rows * a->width * 8);
  } else if (a->values) {
    memcpy (sedp_column_float32_data (col), a->values, (gsize) n_rows * a->width * 4);
  }
}

gboolean
ma_inputs_finish (MaInputs *in, const char *what, guint n_rows, SedpFrame **items, GError **error)
{
  for (guint i = 0; i < in->arrays->len; i++) {
    const MaArray *a = g_ptr_array_index (in->arrays, i);
    if (a->n_rows == 0) {
      g_autofree char *names = ma_signature_names (in->signature->inputs);
      return sedp_protocol_invalid (error, "%s: the input %s is missing (the signature %s takes "
                                    "%s)", what, a->name, in->signature->name, names);
    }
    if (a->n_rows != n_rows)
      return sedp_protocol_invalid (error, "%s.%s: %u rows, but the batch is %u (every input's "
                                    "first dimension is the batch)", what, a->name, a->n_rows,
                                    n_rows);
  }
  if (n_rows == 0)
    return sedp_protocol_invalid (error, "%s: no input (a request needs at least one)", what);
  SedpFrame *frame = sedp_frame_new (n_rows);
  for (guint i = 0; i < in->arrays->len; i++)
    fill_column (frame, g_ptr_array_index (in->arrays, i), n_rows);
  *items = frame;
  return TRUE;
}

gboolean
ma_check_signature_name (const SedpModelApiSignature *signature, const char *name,
                         GError **error)
{
  if (name == NULL || *name == '\0' || strcmp (name, signature->name) == 0)
    return TRUE;
  g_autofree char *shown = short_name (name, strlen (name));
  return sedp_protocol_invalid (error, "signature_name: '%s' is not a signature of this model "
                                "(it has '%s'; leave signature_name out for it)", shown,
                                signature->name);
}

/* ---- answers ---- */

GPtrArray *
ma_answer_outputs (const SedpModelApiSignature *signature, const char *const *filter,
                   GError **error)
{
  GPtrArray *outs = g_ptr_array_new ();
  for (guint k = 0; filter && filter[k]; k++) {
    gboolean known = FALSE;
    for (guint i = 0; i < signature->outputs->len && !known; i++)
      known = strcmp (g_array_index (signature->outputs, SedpModelApiTensor, i).name,
                      filter[k]) == 0;
    if (!known) {
      g_autofree char *names = ma_signature_names (signature->outputs);
      g_autofree char *shown = short_name (filter[k], strlen (filter[k]));
      sedp_protocol_invalid (error, "output_filter: '%s' is not an output of the signature %s "
                             "(its outputs: %s)", shown, signature->name, names);
      g_ptr_array_unref (outs);
      return NULL;
    }
  }
  for (guint i = 0; i < signature->outputs->len; i++) {
    const SedpModelApiTensor *t = &g_array_index (signature->outputs, SedpModelApiTensor, i);
    gboolean wanted = filter == NULL || filter[0] == NULL ||
                      g_strv_contains ((const char *const *) filter, t->name);
    if (wanted)
      g_ptr_array_add (outs, (gpointer) t);
  }
  return outs;
}

/* The frame item @item ended in; NULL with @error when it did not complete. */
static const SedpFrame *
item_frame (const SedpResult *result, guint item, guint *row, GError **error)
{
  SedpItemStatus st = sedp_result_get_item_status (result, item);
  const SedpFrame *f = sedp_result_get_item_frame (result, item, row);
  if ((st == SEDP_ITEM_SCORED || st == SEDP_ITEM_CACHED) && f)
    return f;
  const char *msg = sedp_result_get_item_message (result, item);
  if (msg == NULL)
    msg = sedp_result_get_message (result);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "row %u of the batch was not answered: it "
               "is %s%s%s", item, sedp_item_status_to_string (st), msg ? ": " : "",
               msg ? msg : "");
  return NULL;
}

const SedpColumn *
ma_output_column (const SedpResult *result, guint item, const SedpModelApiTensor *out,
                  guint *row, guint *width, GError **error)
{
  guint r = 0;
  const SedpFrame *f = item_frame (result, item, &r, error);
  if (f == NULL)
    return NULL;
  const SedpColumn *col = sedp_frame_get_column (f, out->column);
  if (col == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "output %s: the pipeline's items have "
                 "no column %s (name the column that holds it in the signature's outputs)",
                 out->name, out->column);
    return NULL;
  }
  SedpColumnType type = sedp_column_get_column_type (col);
  guint w = sedp_column_get_width (col);
  if (type != SEDP_COLUMN_FLOAT32 && type != SEDP_COLUMN_INT64 && type != SEDP_COLUMN_STRING) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "output %s: the column %s is %s, "
                 "which an answer cannot carry (float32, int64 or string)", out->name,
                 out->column, sedp_column_type_to_string (type));
    return NULL;
  }
  if ((out->type && out->type != type) || (out->width && out->width != w)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "output %s: the column %s is %s "
                 "with width %u, the signature declares %s with width %u (fix the signature's "
                 "output entry)", out->name, out->column, sedp_column_type_to_string (type), w,
                 sedp_column_type_to_string (out->type ? out->type : type),
                 out->width ? out->width : w);
    return NULL;
  }
  *row = sedp_column_is_broadcast (col) ? 0 : r;
  *width = w;
  return col;
}

guint
ma_output_dims (const SedpModelApiTensor *out, guint width, const gint64 **dims, gint64 *one)
{
  if (out->dims && out->n_dims > 0) {
    *dims = out->dims;
    return out->n_dims;
  }
  *one = width;
  *dims = one;
  return width == 1 ? 0 : 1;
}

/* ---- the entry points ---- */

gboolean
sedp_model_api_decode (SedpModelApiFormat format, const guint8 *data, gsize size,
                       const SedpModelApiSignature *signature, const SedpProtocolLimits *limits,
                       SedpModelApiRequest *out, GError **error)
{
  g_return_val_if_fail (signature != NULL && out != NULL, FALSE);
  g_return_val_if_fail (data != NULL || size == 0, FALSE);
  memset (out, 0, sizeof *out);
  MaInputs in;
  ma_inputs_init (&in, signature, limits);
  static const guint8 empty[1];
  if (data == NULL)
    data = empty;
  gboolean ok = format == SEDP_MODEL_API_DEEPREC ? ma_deeprec_decode (data, size, &in, out, error)
                                                 : ma_tfs_decode (data, size, &in, out, error);
  ma_inputs_clear (&in);
  if (!ok)
    sedp_model_api_request_clear (out);
  return ok;
}

void
sedp_model_api_request_clear (SedpModelApiRequest *request)
{
  g_clear_pointer (&request->signature_name, g_free);
  g_clear_pointer (&request->output_filter, g_strfreev);
  g_clear_pointer (&request->items, sedp_frame_unref);
  request->n_rows = 0;
  request->columnar = FALSE;
}

GBytes *
sedp_model_api_encode_result (SedpModelApiFormat format, const SedpModelApiRequest *decoded,
                              const SedpResult *result, const SedpModelApiSignature *signature,
                              GError **error)
{
  g_return_val_if_fail (decoded != NULL && result != NULL && signature != NULL, NULL);
  guint n = sedp_result_get_n_items (result);
  if (n != decoded->n_rows) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the result has %u items, the "
                 "request's batch %u rows", n, decoded->n_rows);
    return NULL;
  }
  return format == SEDP_MODEL_API_DEEPREC
             ? ma_deeprec_encode_result (decoded, result, signature, error)
             : ma_tfs_encode_result (decoded, result, signature, error);
}

GBytes *
sedp_model_api_encode_error (SedpModelApiFormat format, const char *message)
{
  if (message == NULL)
    message = "";
  if (format == SEDP_MODEL_API_DEEPREC)
    return g_bytes_new (message, strlen (message));
  return ma_tfs_encode_error (message);
}
