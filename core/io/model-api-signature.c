/* sedp — model-API signatures (model-api.h): built by hand, from a pipeline's `[signature NAME]`
 * entries (sedp_model_api_signature_add_spec()) or from an ONNX model's graph inputs and
 * outputs. */
#include "model-api.h"

#include "../nn/model.h"

#include <gio/gio.h>
#include <string.h>

static void
tensor_clear (SedpModelApiTensor *t)
{
  g_free (t->name);
  g_free (t->column);
  g_free (t->dims);
}

SedpModelApiSignature *
sedp_model_api_signature_new (const char *name)
{
  SedpModelApiSignature *s = g_new0 (SedpModelApiSignature, 1);
  s->name = g_strdup (name ? name : "serving_default");
  s->inputs = g_array_new (FALSE, TRUE, sizeof (SedpModelApiTensor));
  s->outputs = g_array_new (FALSE, TRUE, sizeof (SedpModelApiTensor));
  g_array_set_clear_func (s->inputs, (GDestroyNotify) tensor_clear);
  g_array_set_clear_func (s->outputs, (GDestroyNotify) tensor_clear);
  return s;
}

void
sedp_model_api_signature_free (SedpModelApiSignature *signature)
{
  if (signature == NULL)
    return;
  g_free (signature->name);
  g_array_unref (signature->inputs);
  g_array_unref (signature->outputs);
  g_free (signature);
}

static void
add_tensor (GArray *to, const SedpModelApiTensor *tensor)
{
  g_return_if_fail (tensor != NULL && tensor->name != NULL);
  SedpModelApiTensor t = *tensor;
  t.name = g_strdup (tensor->name);
  t.column = g_strdup (tensor->column ? tensor->column : tensor->name);
  t.dims = tensor->dims && tensor->n_dims ? g_memdup2 (tensor->dims, tensor->n_dims * sizeof (gint64))
                                          : NULL;
  t.n_dims = t.dims ? tensor->n_dims : 0;
  g_array_append_val (to, t);
}

void
sedp_model_api_signature_add_input (SedpModelApiSignature *signature,
                                    const SedpModelApiTensor *tensor)
{
  g_return_if_fail (signature != NULL);
  add_tensor (signature->inputs, tensor);
}

void
sedp_model_api_signature_add_output (SedpModelApiSignature *signature,
                                     const SedpModelApiTensor *tensor)
{
  g_return_if_fail (signature != NULL);
  add_tensor (signature->outputs, tensor);
}

/* ---- entries: ARRAY[=COLUMN][:TYPE][[D1,D2,…]] ---- */

#define SPEC_SYNTAX "ARRAY[=COLUMN][:float32|int64|string][[D1,D2,…]]"

static gboolean G_GNUC_PRINTF (3, 4)
spec_error (GError **error, const char *spec, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *why = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, SEDP_PROTOCOL_ERROR, SEDP_PROTOCOL_ERROR_INVALID,
               "signature entry '%s': %s (the syntax: " SPEC_SYNTAX ")", spec, why);
  return FALSE;
}

/* A name: non-empty, without blanks or the syntax's characters. */
static gboolean
spec_name (const char *spec, const char *what, const char *s, GError **error)
{
  if (*s == '\0')
    return spec_error (error, spec, "an empty %s name", what);
  for (const char *p = s; *p; p++)
    if (g_ascii_isspace (*p) || strchr ("=:[],", *p) || (guchar) *p < 0x20)
      return spec_error (error, spec, "the %s name '%s' holds '%c'", what, s, *p);
  if (!g_utf8_validate (s, -1, NULL))
    return spec_error (error, spec, "the %s name is not UTF-8 text", what);
  return TRUE;
}

static gboolean
spec_type (const char *spec, const char *s, SedpColumnType *type, GError **error)
{
  if (strcmp (s, "float32") == 0)
    *type = SEDP_COLUMN_FLOAT32;
  else if (strcmp (s, "int64") == 0)
    *type = SEDP_COLUMN_INT64;
  else if (strcmp (s, "string") == 0)
    *type = SEDP_COLUMN_STRING;
  else
    return spec_error (error, spec, "unknown type '%s' (float32, int64 or string)", s);
  return TRUE;
}

/* "D1,D2,…" (the text between the brackets) into @dims; the width their product. */
static gboolean
spec_dims (const char *spec, const char *s, GArray *dims, guint *width, GError **error)
{
  guint64 product = 1;
  g_auto (GStrv) parts = *s ? g_strsplit (s, ",", -1) : g_new0 (char *, 1);
  for (guint k = 0; parts[k]; k++) {
    guint64 d = 0;
    const char *text = g_strstrip (parts[k]);
    if (!g_ascii_string_to_unsigned (text, 10, 1, G_MAXINT32, &d, NULL))
      return spec_error (error, spec, "the dimension '%s' is not a positive integer", text);
    product *= d;
    if (product > G_MAXINT32)
      return spec_error (error, spec, "the dimensions make more than %d values per row",
                         G_MAXINT32);
    gint64 v = (gint64) d;
    g_array_append_val (dims, v);
  }
  *width = (guint) product;
  return TRUE;
}

static gboolean
spec_parse (const char *spec, char *text, SedpModelApiTensor *t, GArray *dims, GError **error)
{
  char *bracket = strchr (text, '[');
  if (bracket) {
    gsize len = strlen (bracket);
    if (bracket[len - 1] != ']' || memchr (bracket + 1, '[', len - 1) ||
        memchr (bracket + 1, ']', len - 2))
      return spec_error (error, spec, "the dimensions must end the entry, as [D1,D2,…]");
    bracket[len - 1] = '\0';
    *bracket = '\0';
    if (!spec_dims (spec, bracket + 1, dims, &t->width, error))
      return FALSE;
  }
  char *colon = strchr (text, ':');
  t->type = SEDP_COLUMN_FLOAT32;
  if (colon) {
    *colon = '\0';
    if (!spec_type (spec, g_strstrip (colon + 1), &t->type, error))
      return FALSE;
  }
  char *eq = strchr (text, '=');
  if (eq) {
    *eq = '\0';
    t->column = g_strstrip (eq + 1);
    if (!spec_name (spec, "column", t->column, error))
      return FALSE;
  }
  t->name = g_strstrip (text);
  if (!spec_name (spec, "array", t->name, error))
    return FALSE;
  if (t->type == SEDP_COLUMN_STRING && t->width != 1)
    return spec_error (error, spec, "a string array holds one string per row, not %u", t->width);
  return TRUE;
}

/* The array's name and column, each used once among @tensors. */
static gboolean
spec_unique (const char *spec, const GArray *tensors, const SedpModelApiTensor *t,
             gboolean output, GError **error)
{
  const char *column = t->column ? t->column : t->name;
  for (guint i = 0; i < tensors->len; i++) {
    const SedpModelApiTensor *o = &g_array_index (tensors, SedpModelApiTensor, i);
    if (strcmp (o->name, t->name) == 0)
      return spec_error (error, spec, "the array %s is named twice", t->name);
    if (!output && strcmp (o->column, column) == 0)
      return spec_error (error, spec, "the column %s is filled twice (by %s too)", column,
                         o->name);
  }
  return TRUE;
}

gboolean
sedp_model_api_signature_add_spec (SedpModelApiSignature *signature, gboolean output,
                                   const char *spec, GError **error)
{
  g_return_val_if_fail (signature != NULL && spec != NULL, FALSE);
  g_autofree char *text = g_strstrip (g_strdup (spec));
  g_autoptr (GArray) dims = g_array_new (FALSE, FALSE, sizeof (gint64));
  SedpModelApiTensor t = {.width = 1};
  if (!spec_parse (spec, text, &t, dims, error))
    return FALSE;
  GArray *to = output ? signature->outputs : signature->inputs;
  if (!spec_unique (spec, to, &t, output, error))
    return FALSE;
  t.dims = dims->len ? (gint64 *) dims->data : NULL;
  t.n_dims = dims->len;
  add_tensor (to, &t);
  return TRUE;
}

/* ---- a bare model ---- */

/* The width and dims after the batch of @vi; width 0 when a dimension is symbolic. */
static void
value_shape (const SedpNnValueInfo *vi, SedpModelApiTensor *t, gint64 *dims)
{
  t->width = vi->rank < 1 ? 0 : 1;
  t->n_dims = 0;
  for (int k = 1; k < vi->rank; k++) {
    if (vi->dims[k] < 1 || (guint64) t->width * (guint64) vi->dims[k] > G_MAXINT32) {
      t->width = 0;
      t->n_dims = 0;
      return;
    }
    t->width *= (guint) vi->dims[k];
    dims[t->n_dims++] = vi->dims[k];
  }
}

static gboolean
add_model_input (SedpModelApiSignature *s, const char *path, const SedpNnValueInfo *vi,
                 GError **error)
{
  gint64 dims[SEDP_NN_MAX_RANK];
  SedpModelApiTensor t = {.name = vi->name, .dims = dims};
  if (vi->dtype == SEDP_NN_FLOAT) {
    t.type = SEDP_COLUMN_FLOAT32;
  } else if (vi->dtype == SEDP_NN_INT64) {
    t.type = SEDP_COLUMN_INT64;
  } else {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s: the model input '%s' is %s; "
                 "the model API fills float or int64 inputs (cast it in the model)", path,
                 vi->name, sedp_nn_dtype_name (vi->dtype));
    return FALSE;
  }
  if (vi->rank < 1) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s: the model input '%s' has %s; "
                 "the model API needs a first (batch) dimension", path, vi->name,
                 vi->rank < 0 ? "no shape" : "rank 0");
    return FALSE;
  }
  value_shape (vi, &t, dims);
  sedp_model_api_signature_add_input (s, &t);
  return TRUE;
}

SedpModelApiSignature *
sedp_model_api_signature_for_model (const char *model_path, GError **error)
{
  g_return_val_if_fail (model_path != NULL, NULL);
  g_autoptr (SedpNnModel) model = sedp_nn_model_load (model_path, error);
  if (model == NULL)
    return NULL;
  g_autoptr (SedpModelApiSignature) s = sedp_model_api_signature_new ("serving_default");
  for (guint i = 0; i < model->n_inputs; i++)
    if (!add_model_input (s, model_path, &model->inputs[i], error))
      return NULL;
  for (guint i = 0; i < model->n_outputs; i++) {
    gint64 dims[SEDP_NN_MAX_RANK];
    SedpModelApiTensor t = {.name = model->outputs[i].name, .type = SEDP_COLUMN_FLOAT32,
                            .dims = dims};
    value_shape (&model->outputs[i], &t, dims);
    sedp_model_api_signature_add_output (s, &t);
  }
  return g_steal_pointer (&s);
}
