/* sedp — bundles: the manifest in memory, its paths and element type names. Reading it is in
 * manifest-parse.c, writing it in manifest-write.c. */
#include "bundle-private.h"

#include <stdarg.h>
#include <string.h>

gboolean
bundle_fail (GError **error, SedpBundleError code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_propagate_error (error, g_error_new_valist (SEDP_BUNDLE_ERROR, (int) code, fmt, ap));
  va_end (ap);
  return FALSE;
}

void
bundle_tensor_free (gpointer p)
{
  SedpBundleTensor *t = p;
  g_free (t->name);
  g_free (t->dtype);
  g_free (t->shape);
  g_free (t);
}

static void
file_free (gpointer p)
{
  SedpBundleFile *f = p;
  g_free (f->path);
  g_free (f);
}

SedpBundleManifest *
sedp_bundle_manifest_new (void)
{
  SedpBundleManifest *m = g_new0 (SedpBundleManifest, 1);
  m->cubes = g_ptr_array_new_with_free_func (g_free);
  m->inputs = g_ptr_array_new_with_free_func (bundle_tensor_free);
  m->outputs = g_ptr_array_new_with_free_func (bundle_tensor_free);
  m->files = g_ptr_array_new_with_free_func (file_free);
  return m;
}

void
sedp_bundle_manifest_free (SedpBundleManifest *m)
{
  if (m == NULL)
    return;
  g_free (m->name);
  g_free (m->created);
  g_free (m->model);
  g_ptr_array_unref (m->cubes);
  g_ptr_array_unref (m->inputs);
  g_ptr_array_unref (m->outputs);
  g_ptr_array_unref (m->files);
  g_free (m);
}

void
sedp_bundle_manifest_add_tensor (GPtrArray *to, const char *name, const char *dtype, guint rank,
                                 const gint64 *shape)
{
  g_return_if_fail (to != NULL && name != NULL && dtype != NULL);
  SedpBundleTensor *t = g_new0 (SedpBundleTensor, 1);
  t->name = g_strdup (name);
  t->dtype = g_strdup (dtype);
  t->rank = rank;
  t->shape = rank ? g_memdup2 (shape, rank * sizeof (gint64)) : NULL;
  g_ptr_array_add (to, t);
}

void
sedp_bundle_manifest_add_file (SedpBundleManifest *m, const char *path, gint64 size,
                               const guint8 *blake2b)
{
  g_return_if_fail (m != NULL && path != NULL && blake2b != NULL);
  SedpBundleFile *f = g_new0 (SedpBundleFile, 1);
  f->path = g_strdup (path);
  f->size = size;
  memcpy (f->blake2b, blake2b, SEDP_BUNDLE_DIGEST_BYTES);
  g_ptr_array_add (m->files, f);
}

const SedpBundleFile *
sedp_bundle_manifest_find_file (const SedpBundleManifest *m, const char *path)
{
  g_return_val_if_fail (m != NULL && path != NULL, NULL);
  for (guint i = 0; i < m->files->len; i++) {
    const SedpBundleFile *f = m->files->pdata[i];
    if (strcmp (f->path, path) == 0)
      return f;
  }
  return NULL;
}

const char *
sedp_bundle_dtype_name (int onnx_dtype)
{
  switch (onnx_dtype) {
  case SEDP_NN_FLOAT:
    return "float32";
  case SEDP_NN_DOUBLE:
    return "float64";
  default:
    return sedp_nn_dtype_name ((SedpNnDType) onnx_dtype);
  }
}

/* What is wrong with a component of a path (NULL: nothing), and the error code for it. */
static const char *
component_fault (const char *c, gsize len, SedpBundleError *code)
{
  *code = SEDP_BUNDLE_ERROR_OUTSIDE;
  if (len == 2 && c[0] == '.' && c[1] == '.')
    return "has a '..' component (every path stays inside the bundle)";
  *code = SEDP_BUNDLE_ERROR_MANIFEST;
  if (len == 0)
    return "has an empty component (write 'a/b', not 'a//b' or 'a/')";
  if (len == 1 && c[0] == '.')
    return "has a '.' component (write 'a/b', not './a/b')";
  for (gsize k = 0; k < len; k++)
    if ((guchar) c[k] < 0x20 || c[k] == 0x7f)
      return "has a control character";
  return NULL;
}

/* What is wrong with @path as a whole (NULL: nothing), and the error code for it. */
static const char *
path_fault (const char *path, SedpBundleError *code)
{
  *code = SEDP_BUNDLE_ERROR_OUTSIDE;
  if (path[0] == '/')
    return "is absolute (paths are relative to the bundle's folder)";
  if (strcmp (path, SEDP_BUNDLE_MANIFEST) == 0 || strcmp (path, SEDP_BUNDLE_SIGNATURE) == 0)
    return "names the manifest itself (the manifest lists every other file)";
  for (const char *c = path;;) {
    const char *end = strchr (c, '/');
    gsize len = end ? (gsize) (end - c) : strlen (c);
    const char *why = component_fault (c, len, code);
    if (why || end == NULL)
      return why;
    c = end + 1;
  }
}

gboolean
sedp_bundle_path_check (const char *path, const char *where, const char *member, GError **error)
{
  g_return_val_if_fail (path != NULL && where != NULL && member != NULL, FALSE);
  SedpBundleError code = SEDP_BUNDLE_ERROR_MANIFEST;
  const char *why = NULL;
  if (*path == '\0')
    why = "is empty";
  else if (!g_utf8_validate (path, -1, NULL))
    why = "is not UTF-8";
  else
    why = path_fault (path, &code);
  if (why == NULL)
    return TRUE;
  g_autofree char *shown = g_strescape (path, NULL);
  return bundle_fail (error, code, "%s: member '%s': path '%s' %s", where, member, shown, why);
}
