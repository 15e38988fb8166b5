/* sedp — binding a pipeline's [model NAME] groups to checked bundles (models.h). */
#include "models.h"

#include <string.h>

void
sedp_graph_model_free (SedpGraphModel *model)
{
  if (model == NULL)
    return;
  g_free (model->name);
  g_free (model->dir);
  sedp_bundle_manifest_free (model->manifest);
  g_free (model);
}

/* "@NAME/PATH" → DIR/PATH for @path and every folder above it. */
static void
add_part (GHashTable *parts, const SedpGraphModel *m, const char *path)
{
  g_autofree char *rel = g_strdup (path);
  for (char *end = rel + strlen (rel); end > rel;) {
    *end = '\0';
    g_hash_table_insert (parts, g_strdup_printf ("@%s/%s", m->name, rel),
                         g_build_filename (m->dir, rel, NULL));
    end = strrchr (rel, '/');
    if (end == NULL)
      break;
  }
}

static void
add_parts (GHashTable *parts, const SedpGraphModel *m)
{
  g_hash_table_insert (parts, g_strdup_printf ("@%s", m->name),
                       g_build_filename (m->dir, m->manifest->model, NULL));
  for (guint i = 0; i < m->manifest->files->len; i++)
    add_part (parts, m, ((const SedpBundleFile *) m->manifest->files->pdata[i])->path);
}

/* Resolves and checks one group's bundle. */
static SedpGraphModel *
bind_one (const SedpModelSpec *spec, GHashTable *versions, GError **error)
{
  const gint64 *forced = versions ? g_hash_table_lookup (versions, spec->name) : NULL;
  g_autofree char *dir = NULL;
  gint64 version = sedp_bundle_repository_resolve (spec->repository, spec->name,
                                                   forced ? *forced : spec->pinned, &dir, error);
  if (version <= 0)
    return NULL;
  guint8 key[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  if (spec->public_key && !sedp_bundle_read_public_key (spec->public_key, key, error))
    return NULL;
  SedpBundleVerifyOptions options = {
      .public_key = spec->public_key ? key : NULL,
      .key_name = spec->public_key,
      .contents = FALSE,
  };
  SedpBundleManifest *manifest = NULL;
  if (!sedp_bundle_verify_full (dir, &options, &manifest, error))
    return NULL;
  SedpGraphModel *m = g_new0 (SedpGraphModel, 1);
  m->name = g_strdup (spec->name);
  m->version = version;
  m->dir = g_steal_pointer (&dir);
  m->signature_checked = spec->public_key != NULL;
  m->manifest = manifest;
  return m;
}

GPtrArray *
sedp_graph_bind_models (const SedpPipelineSpec *spec, GHashTable *versions, GHashTable *parts,
                        GError **error)
{
  g_autoptr (GPtrArray) models =
      g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_graph_model_free);
  for (guint i = 0; spec->models && i < spec->models->len; i++) {
    const SedpModelSpec *ms = spec->models->pdata[i];
    SedpGraphModel *m = bind_one (ms, versions, error);
    if (m == NULL) {
      g_prefix_error (error, "%s:%u: [model %s]: ", spec->path, ms->line, ms->name);
      return NULL;
    }
    add_parts (parts, m);
    g_ptr_array_add (models, m);
  }
  return g_steal_pointer (&models);
}

const SedpGraphModel *
sedp_graph_models_find (const GPtrArray *models, const char *name)
{
  for (guint i = 0; models && i < models->len; i++) {
    const SedpGraphModel *m = models->pdata[i];
    if (strcmp (m->name, name) == 0)
      return m;
  }
  return NULL;
}
