/* sedp — the `[model NAME]` group of pipeline files: a model served from a repository
 * (docs/model-lifecycle.md, docs/pipeline-dsl.md). Its keys are keys.c's model table. */
#include "spec-private.h"

#include "../bundle/bundle.h"

#include <string.h>

void
dsl_model_spec_free (SedpModelSpec *m)
{
  if (m == NULL)
    return;
  g_free (m->name);
  g_free (m->repository);
  g_free (m->version);
  g_free (m->public_key);
  if (m->key_lines)
    g_hash_table_unref (m->key_lines);
  g_free (m);
}

/* Every key of the group is one of the table's; records where each one is. */
static gboolean
check_keys (Ctx *c, SedpModelSpec *m, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (c->kf, c->group, NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++) {
    guint line = dsl_line_of (c->map, c->group, keys[i]);
    if (sedp_dsl_runtime_key (SEDP_DSL_GROUP_MODEL, keys[i]) == NULL) {
      g_autofree char *known = sedp_dsl_key_names (SEDP_DSL_GROUP_MODEL);
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_KEY,
                   "%s:%u: [%s] %s: unknown key (known: %s)", c->path, line, c->group, keys[i],
                   known);
      return FALSE;
    }
    g_hash_table_insert (m->key_lines, g_strdup (keys[i]), GUINT_TO_POINTER (line));
  }
  return TRUE;
}

/* KEY = a path, made absolute against @dir; an empty value is refused. */
static gboolean
get_path (Ctx *c, const char *key, const char *dir, char **out, GError **error)
{
  GError *local = NULL;
  g_autofree char *v = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (v && *v == '\0') {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [%s] %s: expected a path, got an empty value", c->path,
                 dsl_line_of (c->map, c->group, key), c->group, key);
    return FALSE;
  }
  if (v)
    *out = g_canonicalize_filename (v, dir);
  return TRUE;
}

/* KEY = a decimal number within the key's [dmin, dmax]. */
static gboolean
get_double (Ctx *c, const char *key, SedpModelSpec *m, GError **error)
{
  const SedpDslKey *k = sedp_dsl_runtime_key (SEDP_DSL_GROUP_MODEL, key);
  GError *local = NULL;
  g_autofree char *v = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (v == NULL)
    return TRUE;
  char *end = NULL;
  double d = g_ascii_strtod (v, &end);
  if (*v == '\0' || *end != '\0' || !(d >= k->dmin && d <= k->dmax)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [%s] %s: expected a number from %g to %g, got '%s'", c->path,
                 dsl_line_of (c->map, c->group, key), c->group, key, k->dmin, k->dmax, v);
    return FALSE;
  }
  *SEDP_DSL_KEY_DOUBLE_P (k, m) = d;
  return TRUE;
}

/* version = latest, or a version number as the repository's folders are named
 * (sedp_bundle_version_parse). */
static gboolean
get_version (Ctx *c, SedpModelSpec *m, GError **error)
{
  GError *local = NULL;
  m->version = dsl_get_value (c, "version", &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (m->version == NULL || strcmp (m->version, "latest") == 0)
    return TRUE;
  g_autoptr (GError) why = NULL;
  m->pinned = sedp_bundle_version_parse (m->version, &why);
  if (m->pinned > 0)
    return TRUE;
  g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
               "%s:%u: [%s] version: expected 'latest' or a version number, got '%s': %s",
               c->path, dsl_line_of (c->map, c->group, "version"), c->group, m->version,
               why->message);
  return FALSE;
}

SedpModelSpec *
dsl_parse_model_group (Ctx *c, const char *name, const char *dir, GError **error)
{
  g_autoptr (SedpModelSpec) m = g_new0 (SedpModelSpec, 1);
  m->name = g_strdup (name);
  m->line = dsl_line_of (c->map, c->group, NULL);
  m->key_lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  sedp_dsl_keys_init (SEDP_DSL_GROUP_MODEL, m);
  g_autoptr (GError) why = NULL;
  if (!sedp_bundle_name_check (name, &why)) { /* the repository's rule (core/bundle/names.c) */
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_GROUP, "%s:%u: [%s]: %s", c->path,
                 m->line, c->group, why->message);
    return NULL;
  }
  if (!check_keys (c, m, error) || !get_path (c, "repository", dir, &m->repository, error) ||
      !get_path (c, "public_key", dir, &m->public_key, error) || !get_version (c, m, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_MODEL, "poll_interval_s", m, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_MODEL, "probation_s", m, error) ||
      !get_double (c, "max_error_rate", m, error) ||
      !get_double (c, "max_p99_over_previous", m, error) ||
      !get_double (c, "warmup_pause", m, error))
    return NULL;
  if (m->repository == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_MISSING_KEY,
                 "%s:%u: [%s] repository: missing required key (the folder that holds %s/1, "
                 "%s/2, …)", c->path, m->line, c->group, name, name);
    return NULL;
  }
  return g_steal_pointer (&m);
}
