/* sedp — bundles: check 5, the contents. Every cube opens (metadata, index, block sizes; the
 * blocks' bytes were checked by their digests already) with the manifest's hash key, and the
 * dense model loads, the engine runs its operators, and its inputs and outputs are the
 * manifest's. Also what pack records of a model. */
#include "bundle-private.h"

#include <string.h>

/* "'dense' float32 [-1, 13]" */
static char *
tensor_text (const SedpBundleTensor *t)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "'%s' %s [", t->name, t->dtype);
  for (guint k = 0; k < t->rank; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, k ? ", " : "", t->shape[k]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static gboolean
tensor_equal (const SedpBundleTensor *a, const SedpBundleTensor *b)
{
  return strcmp (a->name, b->name) == 0 && strcmp (a->dtype, b->dtype) == 0 &&
         a->rank == b->rank && (a->rank == 0 || memcmp (a->shape, b->shape,
                                                        a->rank * sizeof (gint64)) == 0);
}

gboolean
bundle_tensors_match (const GPtrArray *actual, const GPtrArray *expected, const char *what,
                      const char *path, GError **error)
{
  if (actual->len != expected->len)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the model has %u %ss, the "
                        "manifest lists %u (the model is not the one packed)", path, actual->len,
                        what, expected->len);
  for (guint i = 0; i < actual->len; i++) {
    if (tensor_equal (actual->pdata[i], expected->pdata[i]))
      continue;
    g_autofree char *got = tensor_text (actual->pdata[i]);
    g_autofree char *want = tensor_text (expected->pdata[i]);
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the model's %s %u is %s, the "
                        "manifest says %s (the model is not the one packed)", path, what, i, got,
                        want);
  }
  return TRUE;
}

/* Appends the description of @info to @to. */
static void
add_info (GPtrArray *to, const SedpNnTensor *info)
{
  sedp_bundle_manifest_add_tensor (to, info->name, sedp_bundle_dtype_name (info->dtype),
                                   (guint) MAX (info->rank, 0), info->dims);
}

/* The inputs and outputs of the loaded @model (file @path). */
static gboolean
model_tensors (const SedpNnModel *model, const char *path, GPtrArray *inputs, GPtrArray *outputs,
               GError **error)
{
  guint n_in = sedp_nn_model_get_n_inputs (model), n = n_in + sedp_nn_model_get_n_outputs (model);
  for (guint i = 0; i < n; i++) {
    SedpNnTensor info;
    gboolean input = i < n_in;
    if (input)
      sedp_nn_model_get_input_info (model, i, &info);
    else
      sedp_nn_model_get_output_info (model, i - n_in, &info);
    if (info.rank < 0)
      return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: %s '%s' has no shape in the "
                          "model (a bundle records the shape of every input and output: export "
                          "the model with shapes)", path, input ? "input" : "output", info.name);
    add_info (input ? inputs : outputs, &info);
  }
  return TRUE;
}

gboolean
bundle_model_tensors (const char *file, const char *shown, GPtrArray *inputs, GPtrArray *outputs,
                      GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autoptr (SedpNnModel) model = sedp_nn_model_load (file, &local);
  if (model == NULL || !sedp_nn_model_check (model, &local))
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the model %s: %s", shown,
                        model ? "has operators the engine lacks" : "does not load",
                        local->message);
  return model_tensors (model, shown, inputs, outputs, error);
}

/* Cube @cube of the bundle opens, with the manifest's hash key. */
static gboolean
check_cube (BundleCheck *c, const char *cube, GString *detail, GError **error)
{
  g_autofree char *full = g_build_filename (c->real, cube, NULL);
  g_autofree char *shown = g_build_filename (c->dir, cube, NULL);
  g_autoptr (GError) local = NULL;
  SedpCube *open = sedp_cube_open (full, SEDP_CUBE_VALUES_DISK, &local);
  if (open == NULL)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the cube does not open: %s",
                        shown, local->message);
  const SedpCubeMeta *meta = sedp_cube_get_meta (open);
  char got[2 * SEDP_BUNDLE_HASH_KEY_BYTES + 1], want[2 * SEDP_BUNDLE_HASH_KEY_BYTES + 1];
  sedp_bundle_hex (meta->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES, got);
  sedp_bundle_hex (c->manifest->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES, want);
  g_string_append_printf (detail, "cube '%s' (%" G_GUINT64_FORMAT " keys of dim %u), ", cube,
                          meta->count, meta->dim);
  sedp_cube_close (open);
  if (strcmp (got, want) == 0)
    return TRUE;
  return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the cube's hash key is %s, the "
                      "manifest's hash_key is %s (a bundle's cubes share the manifest's key: "
                      "pack the bundle again from cubes of one split)", shown, got, want);
}

/* The dense model loads, runs on the engine (bundle_model_tensors), and has the manifest's
 * inputs and outputs. */
static gboolean
check_model (BundleCheck *c, GString *detail, GError **error)
{
  const SedpBundleManifest *m = c->manifest;
  g_autofree char *full = g_build_filename (c->real, m->model, NULL);
  g_autofree char *shown = g_build_filename (c->dir, m->model, NULL);
  g_autoptr (GPtrArray) inputs = g_ptr_array_new_with_free_func (bundle_tensor_free);
  g_autoptr (GPtrArray) outputs = g_ptr_array_new_with_free_func (bundle_tensor_free);
  if (!bundle_model_tensors (full, shown, inputs, outputs, error) ||
      !bundle_tensors_match (inputs, m->inputs, "input", shown, error) ||
      !bundle_tensors_match (outputs, m->outputs, "output", shown, error))
    return FALSE;
  g_string_append_printf (detail, "model '%s' (%u input%s, %u output%s as listed)", m->model,
                          inputs->len, inputs->len == 1 ? "" : "s", outputs->len,
                          outputs->len == 1 ? "" : "s");
  return TRUE;
}

gboolean
bundle_check_contents (BundleCheck *c, GString *detail, GError **error)
{
  for (guint i = 0; i < c->manifest->cubes->len; i++)
    if (!check_cube (c, c->manifest->cubes->pdata[i], detail, error))
      return FALSE;
  return check_model (c, detail, error);
}
