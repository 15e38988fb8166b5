/* sedp — DeepRec Processor's protobuf (docs/compat.md "DeepRec protobuf"): tensorflow.eas's
 * PredictRequest read in place with wire.h, PredictResponse and PredictRequest written with it.
 *
 * PredictRequest {signature_name = 1; map<string, ArrayProto> inputs = 2; repeated string
 * output_filter = 3}; ArrayProto {dtype = 1; ArrayShape array_shape = 2 {repeated int64 dim = 1};
 * float_val = 3; double_val = 4; int_val = 5; string_val = 6; int64_val = 7; bool_val = 8};
 * PredictResponse {map<string, ArrayProto> outputs = 1}. Repeated scalars come packed or not.
 * An ArrayProto is read twice: once to find its dtype, shape and value runs, and count the
 * values (so nothing is allocated from a declared length), then to convert the values. */
#include "model-api-private.h"
#include "wire.h"

#include <gio/gio.h>
#include <string.h>

enum {
  DT_INVALID = 0,
  DT_FLOAT = 1,
  DT_DOUBLE = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 5,
  DT_INT8 = 6,
  DT_STRING = 7,
  DT_INT64 = 9,
  DT_BOOL = 10,
};

/* ArrayProto's value fields and how their scalars are encoded. */
enum { F_FLOAT = 3, F_DOUBLE = 4, F_INT = 5, F_STRING = 6, F_INT64 = 7, F_BOOL = 8 };

typedef struct {
  Wire whole;
  MaInputs *in;
  GError **error;
  /* the array being read, for messages */
  const char *name;
  gsize name_len;
  guint index; /* the value being converted */
} PbDecode;

/* "inputs.NAME" */
static char *
array_path (gconstpointer ctx)
{
  const PbDecode *d = ctx;
  return g_strdup_printf ("inputs.%.*s", (int) MIN (d->name_len, 64), d->name);
}

/* "inputs.NAME[INDEX]": a value, counted over the whole array. */
static char *
value_path (gconstpointer ctx)
{
  const PbDecode *d = ctx;
  return g_strdup_printf ("inputs.%.*s[%u]", (int) MIN (d->name_len, 64), d->name, d->index);
}

/* "not a valid DeepRec PredictRequest: WHAT (at byte N of M)" */
static gboolean G_GNUC_PRINTF (3, 4)
malformed (PbDecode *d, const Wire *w, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *what = g_strdup_vprintf (format, args);
  va_end (args);
  return sedp_protocol_invalid (d->error, "not a valid DeepRec PredictRequest (truncated or "
                                "malformed): %s (at byte %zu of %zu)", what,
                                (gsize) (w->p - d->whole.p), (gsize) (d->whole.end - d->whole.p));
}

static const char *
wire_type_name (guint type)
{
  static const char *const names[] = {"varint", "fixed64", "length-delimited", "group start",
                                      "group end", "fixed32", "6", "7"};
  return names[type & 7];
}

/* ---- ArrayProto ---- */

/* The most dimensions an array_shape may have. */
#define MAX_DIMS 32

/* A run of values of one value field: a packed field's bytes, or one unpacked value's. */
typedef struct {
  Wire w;
  guint field;
} Run;

/* Where an ArrayProto's parts are (the first pass). */
typedef struct {
  guint64 dtype;
  GArray *shapes; /* Wire: the ArrayShape messages (merged, as protobuf merges them) */
  GArray *runs;   /* Run, in order */
} ArrayParts;

/* The value field of @dtype; 0 for a dtype sedp does not take. */
static guint
dtype_field (guint64 dtype)
{
  switch (dtype) {
  case DT_FLOAT:
    return F_FLOAT;
  case DT_DOUBLE:
    return F_DOUBLE;
  case DT_INT32:
  case DT_UINT8:
  case DT_INT16:
  case DT_INT8:
    return F_INT;
  case DT_INT64:
    return F_INT64;
  case DT_BOOL:
    return F_BOOL;
  case DT_STRING:
    return F_STRING;
  default:
    return 0;
  }
}

static const char *
field_name (guint field)
{
  static const char *const names[] = {[F_FLOAT] = "float_val", [F_DOUBLE] = "double_val",
                                      [F_INT] = "int_val", [F_STRING] = "string_val",
                                      [F_INT64] = "int64_val", [F_BOOL] = "bool_val"};
  return names[field];
}

/* The wire type of one unpacked value of value field @field. */
static guint
field_type (guint field)
{
  return field == F_FLOAT ? WT_I32 : field == F_DOUBLE ? WT_I64 : field == F_STRING ? WT_LEN
                                                                                   : WT_VARINT;
}

/* The values in @run (its field's encoding); FALSE when a packed run does not divide into
 * whole values. */
static gboolean
count_run (const Run *run, guint64 *n)
{
  gsize len = (gsize) (run->w.end - run->w.p);
  if (run->field == F_STRING) {
    *n = 1;
    return TRUE;
  }
  if (run->field == F_FLOAT || run->field == F_DOUBLE) {
    gsize size = run->field == F_FLOAT ? 4 : 8;
    *n = len / size;
    return len % size == 0;
  }
  guint64 count = 0;
  for (const guint8 *p = run->w.p; p < run->w.end; p++)
    count += *p < 0x80;
  *n = count;
  return len == 0 || run->w.end[-1] < 0x80;
}

/* One field of an ArrayProto, its wire type checked, into @parts. */
static gboolean
array_field (PbDecode *d, Wire *w, guint32 field, guint type, ArrayParts *parts)
{
  gboolean value = field >= F_FLOAT && field <= F_BOOL;
  guint want = field == 1 ? WT_VARINT : field == 2 ? WT_LEN : value ? field_type (field) : type;
  if (type != want && !(value && type == WT_LEN)) { /* scalars may come packed */
    g_autofree char *path = array_path (d);
    return malformed (d, w, "%s: field %u has wire type %s, expected %s", path, field,
                      wire_type_name (type), wire_type_name (want));
  }
  const guint8 *start = w->p;
  Wire inner;
  if (field == 1)
    return wire_varint (w, &parts->dtype) || malformed (d, w, "a truncated dtype");
  if (!value && field != 2)
    return wire_skip (w, type) || malformed (d, w, "a malformed field %u", field);
  if (type == WT_LEN) {
    if (!wire_len (w, &inner))
      return malformed (d, w, "a truncated field %u", field);
  } else {
    if (!wire_skip (w, type))
      return malformed (d, w, "a truncated field %u", field);
    inner = (Wire) {start, w->p}; /* one unpacked value's bytes */
  }
  if (field == 2) {
    g_array_append_val (parts->shapes, inner);
  } else {
    Run r = {inner, field};
    g_array_append_val (parts->runs, r);
  }
  return TRUE;
}

static gboolean
array_scan (PbDecode *d, Wire w, ArrayParts *parts)
{
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad))
    if (!array_field (d, &w, field, type, parts))
      return FALSE;
  return bad ? malformed (d, &w, "a malformed field tag") : TRUE;
}

/* One dim read at @from (inside @w) into @dims. */
static gboolean
append_dim (PbDecode *d, const Wire *w, Wire *from, GArray *dims)
{
  guint64 v;
  if (!wire_varint (from, &v))
    return malformed (d, w, "a truncated array_shape.dim");
  if (dims->len == MAX_DIMS) {
    g_autofree char *path = array_path (d);
    return sedp_protocol_invalid (d->error, "%s.array_shape: more than %u dimensions", path,
                                  MAX_DIMS);
  }
  g_array_append_val (dims, v);
  return TRUE;
}

/* The dims of every array_shape (merged) into @dims (at most MAX_DIMS). */
static gboolean
array_dims (PbDecode *d, const ArrayParts *parts, GArray *dims)
{
  for (guint i = 0; i < parts->shapes->len; i++) {
    Wire w = g_array_index (parts->shapes, Wire, i);
    guint32 field;
    guint type;
    gboolean bad;
    while (wire_tag (&w, &field, &type, &bad)) {
      Wire run;
      if (field != 1 || (type != WT_LEN && type != WT_VARINT)) {
        if (!wire_skip (&w, type))
          return malformed (d, &w, "a malformed array_shape");
        continue;
      }
      if (type == WT_VARINT) {
        if (!append_dim (d, &w, &w, dims))
          return FALSE;
        continue;
      }
      if (!wire_len (&w, &run))
        return malformed (d, &w, "a truncated array_shape.dim");
      while (run.p < run.end)
        if (!append_dim (d, &w, &run, dims))
          return FALSE;
    }
    if (bad)
      return malformed (d, &w, "a malformed array_shape");
  }
  return TRUE;
}

/* "[2, 13]" */
static char *
dims_text (const GArray *dims)
{
  GString *s = g_string_new ("[");
  for (guint k = 0; k < dims->len; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, k ? ", " : "",
                            (gint64) g_array_index (dims, guint64, k));
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* The batch (first dimension) and the width (the product of the others) of @dims. */
static gboolean
array_shape (PbDecode *d, const GArray *dims, guint *batch, guint *width)
{
  g_autofree char *path = array_path (d);
  if (dims->len == 0)
    return sedp_protocol_invalid (d->error, "%s.array_shape: missing (its first dimension is the "
                                  "batch)", path);
  guint64 product = 1;
  for (guint k = 0; k < dims->len; k++) {
    gint64 v = (gint64) g_array_index (dims, guint64, k);
    g_autofree char *shape = dims_text (dims);
    if (v < 1)
      return sedp_protocol_invalid (d->error, "%s.array_shape: %s has the dimension %" G_GINT64_FORMAT
                                    "; every dimension must be at least 1%s", path, shape, v,
                                    k == 0 ? " (the first is the batch)" : "");
    if (k == 0 && (guint64) v > d->in->limits.max_items)
      return sedp_protocol_over_limit (d->error, "%s.array_shape: %s, a batch of more than the "
                                       "limit of %u rows (max_items)", path, shape,
                                       d->in->limits.max_items);
    if (k > 0 && (product *= (guint64) v) > d->in->limits.max_values)
      return sedp_protocol_over_limit (d->error, "%s.array_shape: %s, rows of more than the "
                                       "limit of %u values (max_values)", path, shape,
                                       d->in->limits.max_values);
  }
  *batch = (guint) g_array_index (dims, guint64, 0);
  *width = (guint) product;
  return TRUE;
}

/* The column type a dtype's values make in an open signature. */
static SedpColumnType
field_column_type (guint field)
{
  return field == F_STRING ? SEDP_COLUMN_STRING
         : field == F_FLOAT || field == F_DOUBLE ? SEDP_COLUMN_FLOAT32
                                                 : SEDP_COLUMN_INT64;
}

/* One value at @r into @a. */
static gboolean
push_one (PbDecode *d, MaArray *a, guint field, Wire *r)
{
  guint64 u = 0;
  guint32 bits = 0;
  float f;
  double v;
  switch (field) {
  case F_FLOAT:
    wire_fixed32 (r, &bits);
    memcpy (&f, &bits, 4);
    return ma_array_push_double (d->in, a, f, value_path, d, d->error);
  case F_DOUBLE:
    wire_fixed64 (r, &u);
    memcpy (&v, &u, 8);
    return ma_array_push_double (d->in, a, v, value_path, d, d->error);
  case F_STRING: {
    gsize len = (gsize) (r->end - r->p);
    const char *s = (const char *) r->p;
    r->p = r->end;
    return ma_array_push_string (d->in, a, s, len, value_path, d, d->error);
  }
  default:
    if (!wire_varint (r, &u))
      return malformed (d, r, "a malformed %s", field_name (field));
    return ma_array_push_int (d->in, a, field == F_INT ? (gint64) (gint32) (guint32) u
                                        : field == F_BOOL ? (u != 0) : (gint64) u, d->error);
  }
}

/* The values of @field's runs into @a. */
static gboolean
array_values (PbDecode *d, const ArrayParts *parts, guint field, MaArray *a)
{
  d->index = 0;
  for (guint i = 0; i < parts->runs->len; i++) {
    const Run *run = &g_array_index (parts->runs, Run, i);
    if (run->field != field)
      continue;
    Wire r = run->w;
    do {
      if (!push_one (d, a, field, &r))
        return FALSE;
      d->index++;
    } while (r.p < r.end);
  }
  return TRUE;
}

/* The count of @field's values, against the shape's @batch × @width. */
static gboolean
array_count (PbDecode *d, const ArrayParts *parts, guint field, const GArray *dims, guint batch,
             guint width)
{
  guint64 n = 0;
  for (guint i = 0; i < parts->runs->len; i++) {
    const Run *run = &g_array_index (parts->runs, Run, i);
    guint64 k;
    if (run->field != field)
      continue;
    if (!count_run (run, &k)) {
      g_autofree char *path = array_path (d);
      return sedp_protocol_invalid (d->error, "%s.%s: a packed run that does not divide into "
                                    "whole values", path, field_name (field));
    }
    n += k;
  }
  if (n == (guint64) batch * width)
    return TRUE;
  g_autofree char *path = array_path (d);
  g_autofree char *shape = dims_text (dims);
  return sedp_protocol_invalid (d->error, "%s: %" G_GUINT64_FORMAT " values in %s, but the "
                                "shape %s holds %" G_GUINT64_FORMAT, path, n, field_name (field),
                                shape, (guint64) batch * width);
}

/* The ArrayProto's dtype and shape, checked; its value field into *@field. */
static gboolean
array_layout (PbDecode *d, const ArrayParts *parts, GArray *dims, guint *field, guint *batch,
              guint *width)
{
  *field = dtype_field (parts->dtype);
  if (*field == 0) {
    g_autofree char *path = array_path (d);
    return sedp_protocol_invalid (d->error, "%s.dtype: %" G_GUINT64_FORMAT " is %s (give "
                                  "DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, "
                                  "DT_STRING, DT_INT64 or DT_BOOL)", path, parts->dtype,
                                  parts->dtype ? "not a type sedp takes" : "missing (DT_INVALID)");
  }
  return array_dims (d, parts, dims) && array_shape (d, dims, batch, width) &&
         array_count (d, parts, *field, dims, *batch, *width);
}

/* One ArrayProto of input @a. */
static gboolean
array_read (PbDecode *d, Wire w, MaArray *a)
{
  ArrayParts parts = {0, g_array_new (FALSE, FALSE, sizeof (Wire)),
                      g_array_new (FALSE, FALSE, sizeof (Run))};
  g_autoptr (GArray) dims = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint field = 0, batch = 0, width = 0;
  gboolean ok = array_scan (d, w, &parts) &&
                array_layout (d, &parts, dims, &field, &batch, &width) &&
                ma_array_accept (a, field_column_type (field), array_path, d, d->error);
  if (ok && a->width && a->width != width) {
    g_autofree char *path = array_path (d);
    g_autofree char *shape = dims_text (dims);
    ok = sedp_protocol_invalid (d->error, "%s: the shape %s makes rows of %u values, the "
                                "signature's width for %s is %u", path, shape, width, a->name,
                                a->width);
  }
  ok = ok && array_values (d, &parts, field, a);
  for (guint r = 0; ok && r < batch; r++)
    ok = ma_array_end_row (d->in, a, width, array_path, d, d->error);
  g_array_unref (parts.shapes);
  g_array_unref (parts.runs);
  return ok;
}

/* ---- PredictRequest ---- */

static char *
inputs_path (gconstpointer ctx)
{
  (void) ctx;
  return g_strdup ("inputs");
}

/* One entry of `map<string, ArrayProto> inputs` (key 1, value 2). */
static gboolean
request_input (PbDecode *d, Wire w)
{
  Wire key = {w.p, w.p}, value = {w.p, w.p};
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    if ((field == 1 || field == 2) && type != WT_LEN)
      return malformed (d, &w, "inputs: an entry's field %u has wire type %s, expected "
                        "length-delimited", field, wire_type_name (type));
    if (!(field == 1 ? wire_len (&w, &key) : field == 2 ? wire_len (&w, &value)
                                                        : wire_skip (&w, type)))
      return malformed (d, &w, "inputs: a truncated entry");
  }
  if (bad)
    return malformed (d, &w, "inputs: a malformed entry");
  d->name = (const char *) key.p;
  d->name_len = (gsize) (key.end - key.p);
  MaArray *a = ma_inputs_array (d->in, inputs_path, d, d->name, d->name_len, d->error);
  if (a == NULL)
    return FALSE;
  if (a->n_rows > 0)
    return sedp_protocol_invalid (d->error, "inputs.%s: given twice", a->name);
  return array_read (d, value, a);
}

/* A string field (signature_name, an output_filter name): UTF-8 without NUL, within
 * max_string_bytes; NULL with the error. */
static char *
request_text (PbDecode *d, const Wire *s, const char *what)
{
  gsize len = (gsize) (s->end - s->p);
  if (len > d->in->limits.max_string_bytes) {
    sedp_protocol_over_limit (d->error, "%s: a string of %zu bytes, more than the limit of %"
                              G_GSIZE_FORMAT " (max_string_bytes)", what, len,
                              d->in->limits.max_string_bytes);
    return NULL;
  }
  if (memchr (s->p, '\0', len) || !g_utf8_validate_len ((const char *) s->p, len, NULL)) {
    sedp_protocol_invalid (d->error, "%s: not UTF-8 text without NUL", what);
    return NULL;
  }
  return g_strndup ((const char *) s->p, len);
}

static gboolean
request_field (PbDecode *d, Wire *w, guint32 field, guint type, SedpModelApiRequest *out,
               GPtrArray *filter)
{
  Wire inner;
  if (field < 1 || field > 3)
    return wire_skip (w, type) || malformed (d, w, "a malformed field %u", field);
  static const char *const names[] = {NULL, "signature_name", "inputs", "output_filter"};
  if (type != WT_LEN)
    return malformed (d, w, "%s: wire type %s, expected length-delimited", names[field],
                      wire_type_name (type));
  if (!wire_len (w, &inner))
    return malformed (d, w, "%s: truncated", names[field]);
  if (field == 2)
    return request_input (d, inner);
  char *text = request_text (d, &inner, names[field]);
  if (text == NULL)
    return FALSE;
  if (field == 1) {
    g_free (out->signature_name);
    out->signature_name = text;
    return TRUE;
  }
  g_ptr_array_add (filter, text);
  if (filter->len > d->in->limits.max_features)
    return sedp_protocol_over_limit (d->error, "output_filter: more than the limit of %u names "
                                     "(max_features)", d->in->limits.max_features);
  return TRUE;
}

/* The batch: the rows of the first input given. */
static guint
batch_rows (const MaInputs *in)
{
  for (guint i = 0; i < in->arrays->len; i++) {
    const MaArray *a = g_ptr_array_index (in->arrays, i);
    if (a->n_rows)
      return a->n_rows;
  }
  return 0;
}

gboolean
ma_deeprec_decode (const guint8 *data, gsize size, MaInputs *in, SedpModelApiRequest *out,
                   GError **error)
{
  PbDecode d = {.whole = {data, data + size}, .in = in, .error = error};
  Wire w = d.whole;
  g_autoptr (GPtrArray) filter = g_ptr_array_new_with_free_func (g_free);
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad))
    if (!request_field (&d, &w, field, type, out, filter))
      return FALSE;
  if (bad)
    return malformed (&d, &w, "a malformed field tag");
  if (filter->len) {
    g_ptr_array_add (filter, NULL);
    out->output_filter = (char **) g_ptr_array_steal (filter, NULL);
    g_autoptr (GPtrArray) outs = ma_answer_outputs (in->signature,
                                                    (const char *const *) out->output_filter,
                                                    error);
    if (outs == NULL)
      return FALSE;
  }
  out->n_rows = batch_rows (in);
  return ma_check_signature_name (in->signature, out->signature_name, error) &&
         ma_inputs_finish (in, "inputs", out->n_rows, &out->items, error);
}

/* ---- writing ---- */

/* An array_shape [n_rows, dims…] into @array. */static void
put_shape (GByteArray *array, guint n_rows, const gint64 *dims, guint n_dims)
{
  GByteArray *shape = g_byte_array_new ();
  GByteArray *packed = g_byte_array_new ();
  wire_put_varint (packed, n_rows);
  for (guint k = 0; k < n_dims; k++)
    wire_put_varint (packed, (guint64) dims[k]);
  wire_put_message (shape, 1, packed);
  wire_put_message (array, 2, shape);
}

/* The values of row @row (@width of them) of @col, appended to @values (packed floats or
 * varints) or, for strings, to @array as string_val fields. */
static void
put_row (GByteArray *array, GByteArray *values, const SedpColumn *col, guint row, guint width)
{
  switch (sedp_column_get_column_type (col)) {
  case SEDP_COLUMN_FLOAT32: {
    const float *f = sedp_column_get_float32 (col) + (gsize) row * width;
    for (guint k = 0; k < width; k++)
      wire_put_float (values, f[k]);
    break;
  }
  case SEDP_COLUMN_INT64: {
    const gint64 *v = sedp_column_get_int64 (col) + (gsize) row * width;
    for (guint k = 0; k < width; k++)
      wire_put_varint (values, (guint64) v[k]);
    break;
  }
  default: {
    const char *s = sedp_column_get_string (col, row);
    wire_put_bytes (array, F_STRING, s ? s : "", s ? strlen (s) : 0);
  }
  }
}

static guint64
column_dtype (SedpColumnType type, guint *field)
{
  *field = type == SEDP_COLUMN_FLOAT32 ? F_FLOAT : type == SEDP_COLUMN_INT64 ? F_INT64 : F_STRING;
  return type == SEDP_COLUMN_FLOAT32 ? DT_FLOAT : type == SEDP_COLUMN_INT64 ? DT_INT64
                                                                            : DT_STRING;
}

/* Appends the map entry @name → @array (freed) as field @field of @msg. */
static void
put_entry (GByteArray *msg, guint field, const char *name, GByteArray *array)
{
  GByteArray *entry = g_byte_array_new ();
  wire_put_string (entry, 1, name);
  wire_put_message (entry, 2, array);
  wire_put_message (msg, field, entry);
}

/* One output's ArrayProto, read row by row from the result. */
static GByteArray *
output_array (const SedpModelApiRequest *decoded, const SedpResult *result,
              const SedpModelApiTensor *t, GError **error)
{
  GByteArray *array = g_byte_array_new ();
  g_autoptr (GByteArray) values = g_byte_array_new ();
  guint field = 0, width = 0;
  SedpColumnType type = 0;
  for (guint r = 0; r < decoded->n_rows; r++) {
    guint row = 0, w = 0;
    const SedpColumn *col = ma_output_column (result, r, t, &row, &w, error);
    if (col && r > 0 && (w != width || sedp_column_get_column_type (col) != type)) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "output %s: the column %s has "
                   "another type or width in the frame of row %u than in the frame of row 0",
                   t->name, t->column, r);
      col = NULL;
    }
    if (col == NULL) {
      g_byte_array_unref (array);
      return NULL;
    }
    if (r == 0) {
      width = w;
      type = sedp_column_get_column_type (col);
      wire_put_uint_field (array, 1, column_dtype (type, &field));
      gint64 one;
      const gint64 *dims;
      guint n_dims = ma_output_dims (t, width, &dims, &one);
      put_shape (array, decoded->n_rows, dims, n_dims);
    }
    put_row (array, values, col, row, width);
  }
  if (field != F_STRING)
    wire_put_bytes (array, field, values->data, values->len);
  return array;
}

GBytes *
ma_deeprec_encode_result (const SedpModelApiRequest *decoded, const SedpResult *result,
                          const SedpModelApiSignature *signature, GError **error)
{
  g_autoptr (GPtrArray) outs = ma_answer_outputs (signature,
                                                  (const char *const *) decoded->output_filter,
                                                  error);
  if (outs == NULL)
    return NULL;
  GByteArray *msg = g_byte_array_new ();
  for (guint o = 0; o < outs->len; o++) {
    const SedpModelApiTensor *t = g_ptr_array_index (outs, o);
    GByteArray *array = output_array (decoded, result, t, error);
    if (array == NULL) {
      g_byte_array_unref (msg);
      return NULL;
    }
    put_entry (msg, 1, t->name, array);
  }
  return g_byte_array_free_to_bytes (msg);
}

GBytes *
sedp_model_api_encode_deeprec_request (const char *signature_name, const SedpFrame *items,
                                       const char *const *output_filter)
{
  g_return_val_if_fail (items != NULL, NULL);
  GByteArray *msg = g_byte_array_new ();
  if (signature_name && *signature_name)
    wire_put_string (msg, 1, signature_name);
  guint n_rows = sedp_frame_get_n_rows (items);
  for (guint c = 0; c < sedp_frame_get_n_columns (items); c++) {
    const SedpColumn *col = sedp_frame_get_column_at (items, c);
    SedpColumnType type = sedp_column_get_column_type (col);
    if (type != SEDP_COLUMN_FLOAT32 && type != SEDP_COLUMN_INT64 && type != SEDP_COLUMN_STRING)
      continue; /* uint64 and idlist columns have no ArrayProto of their own */
    guint field, width = sedp_column_get_width (col);
    GByteArray *array = g_byte_array_new ();
    wire_put_uint_field (array, 1, column_dtype (type, &field));
    gint64 w = width;
    put_shape (array, n_rows, &w, width == 1 ? 0 : 1);
    g_autoptr (GByteArray) values = g_byte_array_new ();
    for (guint r = 0; r < n_rows; r++)
      put_row (array, values, col, sedp_column_is_broadcast (col) ? 0 : r, width);
    if (field != F_STRING)
      wire_put_bytes (array, field, values->data, values->len);
    put_entry (msg, 2, sedp_column_get_name (col), array);
  }
  for (guint k = 0; output_filter && output_filter[k]; k++)
    wire_put_string (msg, 3, output_filter[k]);
  return g_byte_array_free_to_bytes (msg);
}
