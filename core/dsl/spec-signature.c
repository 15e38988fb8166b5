/* sedp — the `[signature NAME]` group of pipeline files: the model API's named arrays
 * (docs/compat.md, docs/pipeline-dsl.md). Its keys are keys.c's signature table; the entries are
 * kept as written and checked by the protocol module (sedp_model_api_signature_add_spec()). */
#include "spec-private.h"

#include <string.h>

void
dsl_signature_spec_free (SedpSignatureSpec *g)
{
  if (g == NULL)
    return;
  g_free (g->name);
  g_strfreev (g->inputs);
  g_strfreev (g->outputs);
  if (g->key_lines)
    g_hash_table_unref (g->key_lines);
  g_free (g);
}

/* Splits @v at the commas outside brackets (`emb:float32[4,8], id:int64` is two entries). */
static char **
split_entries (const char *v)
{
  GPtrArray *out = g_ptr_array_new ();
  int depth = 0;
  const char *start = v;
  for (const char *p = v;; p++) {
    depth += *p == '[' ? 1 : *p == ']' && depth > 0 ? -1 : 0;
    if (*p != '\0' && (*p != ',' || depth > 0))
      continue;
    char *entry = g_strstrip (g_strndup (start, (gsize) (p - start)));
    if (*entry)
      g_ptr_array_add (out, entry);
    else
      g_free (entry);
    if (*p == '\0')
      break;
    start = p + 1;
  }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

/* KEY = entries; an empty list is refused (leave the key out for the default). */
static gboolean
get_entries (Ctx *c, SedpSignatureSpec *g, const char *key, char ***out, GError **error)
{
  GError *local = NULL;
  g_autofree char *v = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (v == NULL)
    return TRUE;
  guint line = dsl_line_of (c->map, c->group, key);
  g_hash_table_insert (g->key_lines, g_strdup (key), GUINT_TO_POINTER (line));
  *out = split_entries (v);
  if ((*out)[0] == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [%s] %s: expected ARRAY[=COLUMN][:TYPE][[DIMS]] entries, got an empty "
                 "list (leave the key out for the default)", c->path, line, c->group, key);
    return FALSE;
  }
  return TRUE;
}

SedpSignatureSpec *
dsl_parse_signature_group (Ctx *c, const char *name, GError **error)
{
  g_autoptr (SedpSignatureSpec) g = g_new0 (SedpSignatureSpec, 1);
  g->name = g_strdup (name);
  g->line = dsl_line_of (c->map, c->group, NULL);
  g->key_lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (*name == '\0') {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_GROUP,
                 "%s:%u: [%s]: a signature needs a name ([signature serving_default])", c->path,
                 g->line, c->group);
    return NULL;
  }
  g_auto (GStrv) keys = g_key_file_get_keys (c->kf, c->group, NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++) {
    if (sedp_dsl_runtime_key (SEDP_DSL_GROUP_SIGNATURE, keys[i]) == NULL) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_KEY,
                   "%s:%u: [%s] %s: unknown key (known: inputs, outputs)", c->path,
                   dsl_line_of (c->map, c->group, keys[i]), c->group, keys[i]);
      return NULL;
    }
  }
  if (!get_entries (c, g, "inputs", &g->inputs, error) ||
      !get_entries (c, g, "outputs", &g->outputs, error))
    return NULL;
  return g_steal_pointer (&g);
}
