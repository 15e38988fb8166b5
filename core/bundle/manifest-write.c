/* sedp — bundles: writing manifest.json. One member per line in the documented order, an
 * input, output or file per line, files sorted by path: the same manifest gives the same bytes,
 * so that a bundle packed twice from the same files differs only in its `created` line. */
#include "bundle-private.h"

#include <string.h>

/* Appends @text as a JSON string. */
static void
put_string (GString *s, const char *text)
{
  g_string_append_c (s, '"');
  for (const char *p = text; *p; p++) {
    guchar c = (guchar) *p;
    if (c == '"' || c == '\\')
      g_string_append_printf (s, "\\%c", c);
    else if (c == '\n')
      g_string_append (s, "\\n");
    else if (c == '\t')
      g_string_append (s, "\\t");
    else if (c < 0x20)
      g_string_append_printf (s, "\\u%04x", c);
    else
      g_string_append_c (s, (char) c);
  }
  g_string_append_c (s, '"');
}

/* "  \"KEY\": " */
static void
put_key (GString *s, const char *key)
{
  g_string_append (s, "  ");
  put_string (s, key);
  g_string_append (s, ": ");
}

/* {"name": …, "dtype": …, "shape": […]} */
static void
put_tensor (GString *s, gconstpointer element)
{
  const SedpBundleTensor *t = element;
  g_string_append (s, "{\"name\": ");
  put_string (s, t->name);
  g_string_append (s, ", \"dtype\": ");
  put_string (s, t->dtype);
  g_string_append (s, ", \"shape\": [");
  for (guint k = 0; k < t->rank; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, k ? ", " : "", t->shape[k]);
  g_string_append (s, "]}");
}

/* {"path": …, "size": …, "blake2b": …} */
static void
put_file (GString *s, gconstpointer element)
{
  const SedpBundleFile *f = element;
  char hex[2 * SEDP_BUNDLE_DIGEST_BYTES + 1];
  sedp_bundle_hex (f->blake2b, SEDP_BUNDLE_DIGEST_BYTES, hex);
  g_string_append (s, "{\"path\": ");
  put_string (s, f->path);
  g_string_append_printf (s, ", \"size\": %" G_GINT64_FORMAT ", \"blake2b\": \"%s\"}", f->size,
                          hex);
}

/* "  \"KEY\": [\n    ELEMENT,\n    ELEMENT\n  ]" with @put for each element of @a. */
static void
put_lines (GString *s, const char *key, const GPtrArray *a, void (*put) (GString *, gconstpointer))
{
  put_key (s, key);
  g_string_append_c (s, '[');
  for (guint i = 0; i < a->len; i++) {
    g_string_append (s, i ? ",\n    " : "\n    ");
    put (s, a->pdata[i]);
  }
  g_string_append (s, a->len ? "\n  ]" : "]");
}

static int
file_order (gconstpointer a, gconstpointer b)
{
  const SedpBundleFile *fa = *(const SedpBundleFile *const *) a;
  const SedpBundleFile *fb = *(const SedpBundleFile *const *) b;
  return strcmp (fa->path, fb->path);
}

/* format … model: the members that are one value each. */
static void
put_scalars (GString *s, const SedpBundleManifest *m)
{
  char key[2 * SEDP_BUNDLE_HASH_KEY_BYTES + 1];
  sedp_bundle_hex (m->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES, key);
  g_string_append (s, "{\n  \"format\": \"" SEDP_BUNDLE_FORMAT "\",\n");
  g_string_append_printf (s, "  \"format_version\": %d,\n", SEDP_BUNDLE_FORMAT_VERSION);
  put_key (s, "name");
  put_string (s, m->name);
  g_string_append_printf (s, ",\n  \"version\": %" G_GINT64_FORMAT ",\n", m->version);
  put_key (s, "created");
  put_string (s, m->created);
  g_string_append_printf (s, ",\n  \"hash_key\": \"%s\",\n", key);
  put_key (s, "model");
  put_string (s, m->model);
  g_string_append (s, ",\n");
}

char *
sedp_bundle_manifest_to_string (const SedpBundleManifest *m)
{
  g_return_val_if_fail (m != NULL && m->name != NULL && m->created != NULL && m->model != NULL,
                        NULL);
  GString *s = g_string_new (NULL);
  put_scalars (s, m);
  put_key (s, "cubes");
  g_string_append_c (s, '[');
  for (guint i = 0; i < m->cubes->len; i++) {
    g_string_append (s, i ? ", " : "");
    put_string (s, m->cubes->pdata[i]);
  }
  g_string_append (s, "],\n");
  put_lines (s, "inputs", m->inputs, put_tensor);
  g_string_append (s, ",\n");
  put_lines (s, "outputs", m->outputs, put_tensor);
  g_string_append (s, ",\n");
  g_autoptr (GPtrArray) files = g_ptr_array_sized_new (m->files->len); /* borrowed */
  for (guint i = 0; i < m->files->len; i++)
    g_ptr_array_add (files, m->files->pdata[i]);
  g_ptr_array_sort (files, file_order);
  put_lines (s, "files", files, put_file);
  g_string_append (s, "\n}\n");
  return g_string_free (s, FALSE);
}
