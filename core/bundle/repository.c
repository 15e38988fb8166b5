/* sedp — bundles: a model's versions in a repository, and which one to serve
 * (docs/model-lifecycle.md, "The repository"). */
#include "bundle.h"


static int
version_order (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

GArray *
sedp_bundle_repository_versions (const char *repository, const char *name, GError **error)
{
  g_return_val_if_fail (repository != NULL && name != NULL, NULL);
  if (!sedp_bundle_name_check (name, error))
    return NULL;
  g_autofree char *folder = g_build_filename (repository, name, NULL);
  if (!g_file_test (folder, G_FILE_TEST_IS_DIR)) {
    g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_NO_VERSION,
                 "%s: no folder for model '%s' in the repository %s (its versions go in "
                 "%s/1, %s/2, …)", folder, name, repository, folder, folder);
    return NULL;
  }
  g_autoptr (GDir) dir = g_dir_open (folder, 0, error);
  if (dir == NULL)
    return NULL;
  GArray *versions = g_array_new (FALSE, FALSE, sizeof (gint64));
  for (const char *entry; (entry = g_dir_read_name (dir)) != NULL;) {
    gint64 v = sedp_bundle_version_parse (entry, NULL);
    g_autofree char *path = g_build_filename (folder, entry, NULL);
    if (v > 0 && g_file_test (path, G_FILE_TEST_IS_DIR))
      g_array_append_val (versions, v);
  }
  g_array_sort (versions, version_order);
  return versions;
}

/* "1, 2, 7" (at most the last 8). */
static char *
list_versions (const GArray *versions)
{
  GString *out = g_string_new (NULL);
  guint first = versions->len > 8 ? versions->len - 8 : 0;
  if (first > 0)
    g_string_append (out, "…, ");
  for (guint i = first; i < versions->len; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i > first ? ", " : "",
                            g_array_index (versions, gint64, i));
  return g_string_free (out, FALSE);
}

gint64
sedp_bundle_repository_resolve (const char *repository, const char *name, gint64 pinned,
                                char **bundle_dir, GError **error)
{
  g_return_val_if_fail (bundle_dir != NULL, 0);
  g_autoptr (GArray) versions = sedp_bundle_repository_versions (repository, name, error);
  if (versions == NULL)
    return 0;
  g_autofree char *folder = g_build_filename (repository, name, NULL);
  gint64 chosen = 0;
  for (guint i = 0; i < versions->len; i++)
    if (pinned <= 0 || g_array_index (versions, gint64, i) == pinned)
      chosen = g_array_index (versions, gint64, i);
  if (chosen == 0) {
    g_autofree char *there = list_versions (versions);
    if (pinned > 0)
      g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_NO_VERSION,
                   "%s: version %" G_GINT64_FORMAT " of model '%s' is pinned but not there "
                   "(versions: %s); pack it there or pin another", folder, pinned, name,
                   versions->len ? there : "none");
    else
      g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_NO_VERSION,
                   "%s: model '%s' has no version yet (a version is a folder named by its "
                   "number: sedp model pack --repository %s --name %s --version 1)",
                   folder, name, repository, name);
    return 0;
  }
  *bundle_dir = g_strdup_printf ("%s/%" G_GINT64_FORMAT, folder, chosen);
  return chosen;
}
