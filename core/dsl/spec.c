/* sedp — parsing pipeline files: GKeyFile syntax, the runtime's keys, ${VAR} substitution. */
#include "spec.h"

#include "keys.h"
#include "spec-private.h"
#include "../util/cpus.h"

#include <string.h>

G_DEFINE_QUARK (sedp-dsl-error-quark, sedp_dsl_error)


guint
dsl_line_of (LineMap *map, const char *group, const char *key)
{
  g_autofree char *k = key ? g_strconcat (group, "\n", key, NULL) : g_strdup (group);
  return GPOINTER_TO_UINT (g_hash_table_lookup (map->lines, k));
}

static gboolean
prescan (const char *path, const char *text, gsize length, LineMap *map, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autofree char *group = NULL;
  (void) length;
  for (guint i = 0; lines[i]; i++) {
    char *line = g_strstrip (lines[i]);
    guint no = i + 1;
    if (*line == '\0' || *line == '#')
      continue;
    if (*line == '[') {
      char *end = strrchr (line, ']');
      if (end == NULL) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX,
                     "%s:%u: syntax error: group header '%s' lacks ']'", path, no, line);
        return FALSE;
      }
      g_free (group);
      group = g_strndup (line + 1, (gsize) (end - line - 1));
      if (g_hash_table_contains (map->lines, group)) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                     "%s:%u: [%s]: group defined twice (first on line %u)", path, no, group,
                     dsl_line_of (map, group, NULL));
        return FALSE;
      }
      g_hash_table_insert (map->lines, g_strdup (group), GUINT_TO_POINTER (no));
      continue;
    }
    char *eq = strchr (line, '=');
    if (eq == NULL) {
      if (group)
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX,
                     "%s:%u: [%s]: syntax error: '%s' is not KEY = VALUE", path, no, group, line);
      else
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX,
                     "%s:%u: syntax error: '%s' is not KEY = VALUE", path, no, line);
      return FALSE;
    }
    if (group == NULL) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX,
                   "%s:%u: syntax error: '%s' comes before the first [group]", path, no, line);
      return FALSE;
    }
    g_autofree char *key = g_strstrip (g_strndup (line, (gsize) (eq - line)));
    g_autofree char *k = g_strconcat (group, "\n", key, NULL);
    if (g_hash_table_contains (map->lines, k)) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                   "%s:%u: [%s] %s: key set twice (first on line %u)", path, no, group, key,
                   dsl_line_of (map, group, key));
      return FALSE;
    }
    g_hash_table_insert (map->lines, g_steal_pointer (&k), GUINT_TO_POINTER (no));
  }
  return TRUE;
}

char *
sedp_dsl_substitute (const char *value, GError **error)
{
  GString *out = g_string_new (NULL);
  const char *p = value;
  while (*p) {
    if (p[0] == '$' && p[1] == '{') {
      const char *end = strchr (p + 2, '}');
      if (end == NULL) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_ENVIRONMENT,
                     "unterminated '${' in '%s'", value);
        g_string_free (out, TRUE);
        return NULL;
      }
      g_autofree char *body = g_strndup (p + 2, (gsize) (end - p - 2));
      char *dflt = strstr (body, ":-");
      if (dflt) {
        *dflt = '\0';
        dflt += 2;
      }
      const char *env = g_getenv (body);
      if (env == NULL || (*env == '\0' && dflt))
        env = dflt;
      if (env == NULL) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_ENVIRONMENT,
                     "environment variable '%s' is not set (write ${%s:-default} for a default)",
                     body, body);
        g_string_free (out, TRUE);
        return NULL;
      }
      g_string_append (out, env);
      p = end + 1;
    } else {
      g_string_append_c (out, *p++);
    }
  }
  return g_string_free (out, FALSE);
}



/* The substituted value of @key, or NULL (with *error unset) when the key is absent. */
char *
dsl_get_value (Ctx *c, const char *key, GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autofree char *raw = g_key_file_get_value (c->kf, c->group, key, &local);
  if (raw == NULL)
    return NULL;
  g_autofree char *unescaped = g_key_file_get_string (c->kf, c->group, key, NULL);
  char *v = sedp_dsl_substitute (unescaped ? unescaped : raw, &local);
  if (v == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_ENVIRONMENT, "%s:%u: [%s] %s: %s", c->path,
                 dsl_line_of (c->map, c->group, key), c->group, key, local->message);
    return NULL;
  }
  return g_strstrip (v);
}

/* KEY = CPU list in the current group, if set: "0,2-3" (see core/util/cpus.h). */
static gboolean
get_cpus (Ctx *c, const char *key, guint **cpus, guint *n_cpus, GError **error)
{
  GError *local = NULL;
  char *text = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (text == NULL)
    return TRUE;
  guint *list = sedp_cpu_list_parse (text, n_cpus, &local);
  g_free (text);
  if (list == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE, "%s:%u: [%s] %s: %s", c->path,
                 dsl_line_of (c->map, c->group, key), c->group, key, local->message);
    g_error_free (local);
    return FALSE;
  }
  *cpus = list;
  return TRUE;
}

/* KEY = an integer in the current group, if set, within the range of the runtime key @key of
 * @group (keys.c), into its field of @base (the pipeline's or the stage's spec). */
gboolean
dsl_get_uint (Ctx *c, SedpDslGroup group, const char *key, gpointer base, GError **error)
{
  const SedpDslKey *k = sedp_dsl_runtime_key (group, key);
  guint64 min = k->min, max = k->max;
  guint *out = SEDP_DSL_KEY_UINT_P (k, base);
  g_autoptr (GError) local = NULL;
  g_autofree char *v = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, g_steal_pointer (&local));
    return FALSE;
  }
  if (v == NULL)
    return TRUE;
  guint64 n;
  if (!g_ascii_string_to_unsigned (v, 10, min, max, &n, NULL)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [%s] %s: expected an integer from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                 ", got '%s'",
                 c->path, dsl_line_of (c->map, c->group, key), c->group, key, min, max, v);
    return FALSE;
  }
  *out = (guint) n;
  return TRUE;
}

static char **
split_list (const char *v)
{
  g_auto (GStrv) parts = g_strsplit (v, ",", -1);
  GPtrArray *out = g_ptr_array_new ();
  for (guint i = 0; parts[i]; i++) {
    char *s = g_strstrip (parts[i]);
    if (*s)
      g_ptr_array_add (out, g_strdup (s));
  }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

static gboolean
valid_name (const char *s)
{
  if (s == NULL || *s == '\0')
    return FALSE;
  for (const char *p = s; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '_' && *p != '-')
      return FALSE;
  return TRUE;
}

/* warmup = PATH (relative to the pipeline file's folder) and warmup_repeat = N: the file must
 * hold at least one request, and every request must decode. */
static gboolean
parse_warmup (Ctx *c, SedpPipelineSpec *spec, GError **error)
{
  GError *local = NULL;
  g_autofree char *warmup = dsl_get_value (c, "warmup", &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  guint repeat_line = dsl_line_of (c->map, c->group, "warmup_repeat");
  if (!dsl_get_uint (c, SEDP_DSL_GROUP_PIPELINE, "warmup_repeat", spec, error))
    return FALSE;
  if (warmup == NULL || *warmup == '\0') {
    if (warmup)
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [pipeline] warmup: expected the path of a file of warm-up requests",
                   c->path, dsl_line_of (c->map, c->group, "warmup"));
    else if (repeat_line)
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_MISSING_KEY,
                   "%s:%u: [pipeline] warmup_repeat: set without warmup (the file of warm-up "
                   "requests)", c->path, repeat_line);
    return warmup == NULL && repeat_line == 0;
  }
  g_free (spec->warmup);
  spec->warmup = g_canonicalize_filename (warmup, spec->dir);
  spec->warmup_line = dsl_line_of (c->map, c->group, "warmup");
  /* The file itself is read by those who send it (sedp check, sedp serve), once: a reload
   * parses the pipeline again and must not hold a second copy of it for a moment. */
  return TRUE;
}

/* Every key of [pipeline] is a runtime key (keys.c); records where each one is. */
static gboolean
check_pipeline_keys (Ctx *c, SedpPipelineSpec *spec, GError **error)
{
  g_auto (GStrv) keys = g_key_file_get_keys (c->kf, c->group, NULL, NULL);
  spec->key_lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; keys && keys[i]; i++) {
    guint line = dsl_line_of (c->map, c->group, keys[i]);
    if (sedp_dsl_runtime_key (SEDP_DSL_GROUP_PIPELINE, keys[i]) == NULL) {
      g_autofree char *known = sedp_dsl_key_names (SEDP_DSL_GROUP_PIPELINE);
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_KEY,
                   "%s:%u: [pipeline] %s: unknown key (known: %s)", c->path, line, keys[i], known);
      return FALSE;
    }
    g_hash_table_insert (spec->key_lines, g_strdup (keys[i]), GUINT_TO_POINTER (line));
  }
  return TRUE;
}

static gboolean
parse_pipeline_group (Ctx *c, SedpPipelineSpec *spec, GError **error)
{
  if (!check_pipeline_keys (c, spec, error))
    return FALSE;
  GError *local = NULL;
  char *name = dsl_get_value (c, "name", &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (name) {
    if (!valid_name (name)) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [pipeline] name: '%s' is not a name (letters, digits, '_' and '-')",
                   c->path, dsl_line_of (c->map, c->group, "name"), name);
      g_free (name);
      return FALSE;
    }
    g_free (spec->name);
    spec->name = name;
  }
  if (!dsl_get_uint (c, SEDP_DSL_GROUP_PIPELINE, "deadline_ms", spec, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_PIPELINE, "frame_rows", spec, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_PIPELINE, "sync_workers", spec, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_PIPELINE, "idle_spin_us", spec, error) ||
      !get_cpus (c, "cpus", &spec->cpus, &spec->n_cpus, error))
    return FALSE;
  g_autofree char *mode = dsl_get_value (c, "mode", &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (mode) {
    if (strcmp (mode, "staged") == 0)
      spec->mode = SEDP_MODE_STAGED;
    else if (strcmp (mode, "sync") == 0)
      spec->mode = SEDP_MODE_SYNC;
    else {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [pipeline] mode: expected 'staged' or 'sync', got '%s'", c->path,
                   dsl_line_of (c->map, c->group, "mode"), mode);
      return FALSE;
    }
  }
  g_autofree char *outputs = dsl_get_value (c, "outputs", &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  if (outputs) {
    g_strfreev (spec->outputs);
    spec->outputs = split_list (outputs);
  }
  return parse_warmup (c, spec, error);
}

static void
stage_spec_free (SedpStageSpec *s)
{
  g_free (s->name);
  g_free (s->plugin);
  g_strfreev (s->after);
  g_strfreev (s->drop_columns);
  g_strfreev (s->branch_max_inflight);
  g_strfreev (s->branch_max_rate);
  g_free (s->cpus);
  g_strfreev (s->option_keys);
  g_strfreev (s->option_values);
  g_free (s->option_lines);
  if (s->key_lines)
    g_hash_table_unref (s->key_lines);
  g_free (s);
}

static gboolean
is_stage_key (const char *key)
{
  return sedp_dsl_runtime_key (SEDP_DSL_GROUP_STAGE, key) != NULL;
}

/* The list key @key of the current group into *@out (empty when unset). */
static gboolean
get_list (Ctx *c, const char *key, char ***out, GError **error)
{
  GError *local = NULL;
  g_autofree char *value = dsl_get_value (c, key, &local);
  if (local) {
    g_propagate_error (error, local);
    return FALSE;
  }
  *out = split_list (value ? value : "");
  return TRUE;
}

static SedpStageSpec *
parse_stage_group (Ctx *c, const char *name, GError **error)
{
  SedpStageSpec *s = g_new0 (SedpStageSpec, 1);
  s->name = g_strdup (name);
  s->line = dsl_line_of (c->map, c->group, NULL);
  s->key_lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  sedp_dsl_keys_init (SEDP_DSL_GROUP_STAGE, s);
  GError *local = NULL;
  g_autofree char *after = NULL;
  g_autofree char *scope = NULL;
  g_auto (GStrv) keys = NULL;

  if (!valid_name (name)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_GROUP,
                 "%s:%u: [%s]: '%s' is not a stage name (letters, digits, '_' and '-')", c->path,
                 s->line, c->group, name);
    goto fail;
  }
  s->plugin = dsl_get_value (c, "plugin", &local);
  if (local)
    goto propagate;
  if (s->plugin == NULL || *s->plugin == '\0') {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_MISSING_KEY,
                 "%s:%u: [%s] plugin: missing required key", c->path, s->line, c->group);
    goto fail;
  }
  after = dsl_get_value (c, "after", &local);
  if (local)
    goto propagate;
  s->after = split_list (after ? after : "");
  if (!get_list (c, "drop_columns", &s->drop_columns, error) ||
      !get_list (c, "branch_max_inflight", &s->branch_max_inflight, error) ||
      !get_list (c, "branch_max_rate", &s->branch_max_rate, error))
    goto fail;
  scope = dsl_get_value (c, "scope", &local);
  if (local)
    goto propagate;
  if (scope) {
    if (strcmp (scope, "request") == 0)
      s->scope = SEDP_SCOPE_REQUEST;
    else if (strcmp (scope, "item") == 0)
      s->scope = SEDP_SCOPE_ITEM;
    else {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [%s] scope: expected 'request' or 'item', got '%s'", c->path,
                   dsl_line_of (c->map, c->group, "scope"), c->group, scope);
      goto fail;
    }
  }
  if (!dsl_get_uint (c, SEDP_DSL_GROUP_STAGE, "parallelism", s, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_STAGE, "batch", s, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_STAGE, "batch_timeout_us", s, error) ||
      !dsl_get_uint (c, SEDP_DSL_GROUP_STAGE, "queue_capacity", s, error) ||
      !get_cpus (c, "cpus", &s->cpus, &s->n_cpus, error))
    goto fail;

  keys = g_key_file_get_keys (c->kf, c->group, NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++)
    if (is_stage_key (keys[i]))
      g_hash_table_insert (s->key_lines, g_strdup (keys[i]),
                           GUINT_TO_POINTER (dsl_line_of (c->map, c->group, keys[i])));
  GPtrArray *ok = g_ptr_array_new (), *ov = g_ptr_array_new ();
  GArray *ol = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; keys && keys[i]; i++) {
    if (is_stage_key (keys[i]))
      continue;
    char *v = dsl_get_value (c, keys[i], &local);
    if (local)
      break;
    guint line = dsl_line_of (c->map, c->group, keys[i]);
    g_ptr_array_add (ok, g_strdup (keys[i]));
    g_ptr_array_add (ov, v);
    g_array_append_val (ol, line);
  }
  g_ptr_array_add (ok, NULL);
  g_ptr_array_add (ov, NULL);
  s->option_keys = (char **) g_ptr_array_free (ok, FALSE);
  s->option_values = (char **) g_ptr_array_free (ov, FALSE);
  s->option_lines = (guint *) g_array_free (ol, FALSE);
  if (local)
    goto propagate;
  return s;

propagate:
  g_propagate_error (error, local);
fail:
  stage_spec_free (s);
  return NULL;
}

guint
sedp_stage_spec_key_line (const SedpStageSpec *stage, const char *key)
{
  for (guint i = 0; stage->option_keys && stage->option_keys[i]; i++)
    if (strcmp (stage->option_keys[i], key) == 0)
      return stage->option_lines[i];
  gpointer line;
  if (stage->key_lines && g_hash_table_lookup_extended (stage->key_lines, key, NULL, &line))
    return GPOINTER_TO_UINT (line);
  return stage->line;
}

/* [tune]: kept as written, in file order, for `sedp tune` (core/tune/space.c checks it);
 * the pipeline itself ignores it. */
static void
parse_tune_group (Ctx *c, SedpPipelineSpec *spec)
{
  g_auto (GStrv) keys = g_key_file_get_keys (c->kf, c->group, NULL, NULL);
  guint n = keys ? g_strv_length (keys) : 0;
  g_strfreev (spec->tune_keys);
  g_strfreev (spec->tune_values);
  g_free (spec->tune_lines);
  spec->tune_keys = g_new0 (char *, n + 1);
  spec->tune_values = g_new0 (char *, n + 1);
  spec->tune_lines = g_new0 (guint, n + 1);
  for (guint i = 0; i < n; i++) {
    spec->tune_keys[i] = g_strdup (keys[i]);
    spec->tune_values[i] = g_strstrip (g_key_file_get_value (c->kf, c->group, keys[i], NULL));
    spec->tune_lines[i] = dsl_line_of (c->map, c->group, keys[i]);
  }
  spec->tune_line = dsl_line_of (c->map, c->group, NULL);
}

/* [model NAME]: parsed (spec-model.c) and added, a name given twice refused. */
static gboolean
add_model_group (Ctx *c, SedpPipelineSpec *spec, GError **error)
{
  const char *name = c->group + strlen ("model ");
  while (*name == ' ')
    name++;
  SedpModelSpec *m = dsl_parse_model_group (c, name, spec->dir, error);
  if (m == NULL)
    return FALSE;
  for (guint j = 0; j < spec->models->len; j++) {
    SedpModelSpec *o = spec->models->pdata[j];
    if (strcmp (o->name, m->name) == 0) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                   "%s:%u: [%s]: model '%s' defined twice (first on line %u)", c->path, m->line,
                   c->group, m->name, o->line);
      dsl_model_spec_free (m);
      return FALSE;
    }
  }
  g_ptr_array_add (spec->models, m);
  return TRUE;
}

/* [signature NAME]: parsed (spec-signature.c); a pipeline has at most one. */
static gboolean
add_signature_group (Ctx *c, SedpPipelineSpec *spec, GError **error)
{
  const char *name = c->group + strlen ("signature");
  while (*name == ' ')
    name++;
  if (spec->signature) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                 "%s:%u: [%s]: a second signature (the first, [signature %s], is on line %u); a "
                 "pipeline has one", c->path, dsl_line_of (c->map, c->group, NULL), c->group,
                 spec->signature->name, spec->signature->line);
    return FALSE;
  }
  spec->signature = dsl_parse_signature_group (c, name, error);
  return spec->signature != NULL;
}

SedpPipelineSpec *
sedp_pipeline_spec_parse (const char *text, gsize length, const char *path, GError **error)
{
  g_autoptr (SedpPipelineSpec) spec = g_new0 (SedpPipelineSpec, 1);
  spec->path = g_strdup (path);
  g_autofree char *abs = g_canonicalize_filename (path, NULL);
  spec->dir = g_path_get_dirname (abs);
  g_autofree char *base = g_path_get_basename (path);
  char *dot = strrchr (base, '.');
  if (dot && dot != base)
    *dot = '\0';
  spec->name = g_strdup (base);
  sedp_dsl_keys_init (SEDP_DSL_GROUP_PIPELINE, spec);
  spec->outputs = g_new0 (char *, 1);
  spec->tune_keys = g_new0 (char *, 1);
  spec->tune_values = g_new0 (char *, 1);
  spec->tune_lines = g_new0 (guint, 1);
  spec->stages = g_ptr_array_new_with_free_func ((GDestroyNotify) stage_spec_free);
  spec->models = g_ptr_array_new_with_free_func ((GDestroyNotify) dsl_model_spec_free);

  LineMap map = {g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL)};
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  g_auto (GStrv) groups = NULL;
  gboolean ok = FALSE;

  if (!g_utf8_validate (text, (gssize) length, NULL)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX, "%s: not UTF-8 text", path);
    goto out;
  }
  if (!prescan (path, text, length, &map, error))
    goto out;
  if (!g_key_file_load_from_data (kf, text, length, G_KEY_FILE_NONE, &local)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX, "%s: syntax error: %s", path,
                 local->message);
    goto out;
  }
  groups = g_key_file_get_groups (kf, NULL);
  Ctx c = {path, NULL, &map, kf};
  for (guint i = 0; groups[i]; i++) {
    c.group = groups[i];
    if (strcmp (groups[i], "pipeline") == 0) {
      if (!parse_pipeline_group (&c, spec, error))
        goto out;
    } else if (g_str_has_prefix (groups[i], "stage ")) {
      const char *name = groups[i] + strlen ("stage ");
      while (*name == ' ')
        name++;
      SedpStageSpec *s = parse_stage_group (&c, name, error);
      if (s == NULL)
        goto out;
      for (guint j = 0; j < spec->stages->len; j++) {
        SedpStageSpec *o = spec->stages->pdata[j];
        if (strcmp (o->name, s->name) == 0) {
          g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                       "%s:%u: [%s]: stage '%s' defined twice (first on line %u)", path, s->line,
                       groups[i], s->name, o->line);
          stage_spec_free (s);
          goto out;
        }
      }
      g_ptr_array_add (spec->stages, s);
    } else if (g_str_has_prefix (groups[i], "model ")) {
      if (!add_model_group (&c, spec, error))
        goto out;
    } else if (strcmp (groups[i], "signature") == 0 ||
               g_str_has_prefix (groups[i], "signature ")) {
      if (!add_signature_group (&c, spec, error))
        goto out;
    } else if (strcmp (groups[i], "tune") == 0) {
      parse_tune_group (&c, spec);
    } else {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_GROUP,
                   "%s:%u: [%s]: unknown group (expected [pipeline], [stage NAME], [model NAME], "
                   "[signature NAME] or [tune])", path,
                   dsl_line_of (&map, groups[i], NULL), groups[i]);
      goto out;
    }
  }
  ok = TRUE;
out:
  g_hash_table_unref (map.lines);
  return ok ? g_steal_pointer (&spec) : NULL;
}

SedpPipelineSpec *
sedp_pipeline_spec_load (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &text, &length, &local)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_IO, "%s: cannot read pipeline file: %s",
                 path, local->message);
    return NULL;
  }
  return sedp_pipeline_spec_parse (text, length, path, error);
}

void
sedp_pipeline_spec_free (SedpPipelineSpec *spec)
{
  if (spec == NULL)
    return;
  g_free (spec->path);
  g_free (spec->dir);
  g_free (spec->name);
  g_strfreev (spec->outputs);
  g_free (spec->cpus);
  g_free (spec->warmup);
  if (spec->stages)
    g_ptr_array_unref (spec->stages);
  if (spec->models)
    g_ptr_array_unref (spec->models);
  if (spec->key_lines)
    g_hash_table_unref (spec->key_lines);
  g_strfreev (spec->tune_keys);
  g_strfreev (spec->tune_values);
  g_free (spec->tune_lines);
  dsl_signature_spec_free (spec->signature);
  g_free (spec);
}
