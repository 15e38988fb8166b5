/* sedp — writing a parsed pipeline back as pipeline-file text (spec.h,
 * sedp_pipeline_spec_to_keyfile), the inverse of spec.c's parser. */
#include "spec.h"

#include "keys.h"
#include "../util/cpus.h"

#include <string.h>

char *
sedp_dsl_escape_value (const char *value)
{
  GString *out = g_string_sized_new (strlen (value) + 8);
  gsize n = strlen (value);
  for (gsize i = 0; i < n; i++) {
    char ch = value[i];
    if (ch == '\\')
      g_string_append (out, "\\\\");
    else if (ch == '\n')
      g_string_append (out, "\\n");
    else if (ch == '\t')
      g_string_append (out, "\\t");
    else if (ch == '\r')
      g_string_append (out, "\\r");
    else if (ch == ' ' && (i == 0 || i + 1 == n))
      g_string_append (out, "\\s"); /* GKeyFile drops blanks around a value */
    else
      g_string_append_c (out, ch);
  }
  return g_string_free (out, FALSE);
}

typedef struct {
  GString *out;
  const SedpPipelineSpec *spec;
  const char *group;
} Writer;

/* KEY = VALUE, escaped; a value holding "${" cannot be written, since the parser would
 * substitute it again and the DSL has no escape for a literal "${". */
static gboolean
write_value (Writer *w, const char *key, const char *value, GError **error)
{
  if (strstr (value, "${")) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s: [%s] %s: cannot write the value '%s': the parser would substitute its "
                 "'${' again and pipeline files have no escape for a literal '${' (give the "
                 "value without '${')",
                 w->spec->path, w->group, key, value);
    return FALSE;
  }
  g_autofree char *escaped = sedp_dsl_escape_value (value);
  g_string_append_printf (w->out, "%s = %s\n", key, escaped);
  return TRUE;
}

/* The text of runtime key @k in @base, or NULL when it holds no value (an unset scope, an empty
 * list, no CPUs, no path). */
static char *
format_key (const SedpDslKey *k, gconstpointer base)
{
  gconstpointer field = G_STRUCT_MEMBER_P (base, k->offset);
  switch (k->type) {
  case SEDP_DSL_KEY_UINT:
    return g_strdup_printf ("%u", *(const guint *) field);
  case SEDP_DSL_KEY_DOUBLE: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup (g_ascii_dtostr (buf, sizeof buf, *(const double *) field));
  }
  case SEDP_DSL_KEY_STRING:
  case SEDP_DSL_KEY_PATH:
    return g_strdup (*(char *const *) field);
  case SEDP_DSL_KEY_CHOICE: {
    int v = *(const int *) field - (int) k->first_choice;
    g_auto (GStrv) words = g_strsplit (k->choices, "|", -1);
    return v >= 0 && (guint) v < g_strv_length (words) ? g_strdup (words[v]) : NULL;
  }
  case SEDP_DSL_KEY_LIST: {
    char *const *list = *(char **const *) field;
    return list && list[0] ? g_strjoinv (", ", (char **) list) : NULL;
  }
  case SEDP_DSL_KEY_CPUS: {
    guint n = G_STRUCT_MEMBER (guint, base, k->count_offset);
    return n ? sedp_cpu_list_to_string (*(guint *const *) field, n) : NULL;
  }
  }
  return NULL;
}

/* Whether @k holds its default in @base: a number or word equal to it; any other type when it
 * holds no value. Strings (the pipeline's name, a stage's plugin) are never "default": the
 * name's default comes from the file's name, which a written copy need not share. */
static gboolean
is_default (const SedpDslKey *k, gconstpointer base)
{
  gconstpointer field = G_STRUCT_MEMBER_P (base, k->offset);
  if (k->type == SEDP_DSL_KEY_UINT)
    return *(const guint *) field == k->default_value;
  if (k->type == SEDP_DSL_KEY_CHOICE)
    return *(const int *) field == (int) k->default_value;
  if (k->type == SEDP_DSL_KEY_DOUBLE)
    return *(const double *) field == k->ddefault;
  if (k->type == SEDP_DSL_KEY_STRING)
    return FALSE;
  g_autofree char *text = format_key (k, base);
  return text == NULL;
}

/* The runtime keys of one group: those the file set (@key_lines) or that differ from their
 * defaults, in the table's order. */
static gboolean
write_runtime_keys (Writer *w, SedpDslGroup group, gconstpointer base, GHashTable *key_lines,
                    GError **error)
{
  guint n;
  const SedpDslKey *keys = sedp_dsl_keys (group, &n);
  for (guint i = 0; i < n; i++) {
    gboolean set = key_lines && g_hash_table_contains (key_lines, keys[i].name);
    if (!set && is_default (&keys[i], base))
      continue;
    g_autofree char *text = format_key (&keys[i], base);
    if (text && !write_value (w, keys[i].name, text, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
write_stage (Writer *w, const SedpStageSpec *s, GError **error)
{
  g_autofree char *group = g_strconcat ("stage ", s->name, NULL);
  w->group = group;
  g_string_append_printf (w->out, "\n[%s]\n", group);
  if (!write_runtime_keys (w, SEDP_DSL_GROUP_STAGE, s, s->key_lines, error))
    return FALSE;
  for (guint i = 0; s->option_keys && s->option_keys[i]; i++)
    if (!write_value (w, s->option_keys[i], s->option_values[i], error))
      return FALSE;
  return TRUE;
}

static gboolean
write_model (Writer *w, const SedpModelSpec *m, GError **error)
{
  g_autofree char *group = g_strconcat ("model ", m->name, NULL);
  w->group = group;
  g_string_append_printf (w->out, "\n[%s]\n", group);
  return write_runtime_keys (w, SEDP_DSL_GROUP_MODEL, m, m->key_lines, error);
}

static gboolean
write_signature (Writer *w, const SedpSignatureSpec *g, GError **error)
{
  g_autofree char *group = g_strconcat ("signature ", g->name, NULL);
  w->group = group;
  g_string_append_printf (w->out, "\n[%s]\n", group);
  return write_runtime_keys (w, SEDP_DSL_GROUP_SIGNATURE, g, g->key_lines, error);
}

/* [tune], raw: its values were never unescaped nor substituted. */
static void
write_tune (Writer *w)
{
  const SedpPipelineSpec *spec = w->spec;
  if (spec->tune_line == 0 && (spec->tune_keys == NULL || spec->tune_keys[0] == NULL))
    return;
  g_string_append (w->out, "\n[tune]\n");
  for (guint i = 0; spec->tune_keys && spec->tune_keys[i]; i++)
    g_string_append_printf (w->out, "%s = %s\n", spec->tune_keys[i], spec->tune_values[i]);
}

char *
sedp_pipeline_spec_to_keyfile (const SedpPipelineSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL && spec->stages != NULL, NULL);
  Writer w = {g_string_new ("[pipeline]\n"), spec, "pipeline"};
  gboolean ok = write_runtime_keys (&w, SEDP_DSL_GROUP_PIPELINE, spec, spec->key_lines, error);
  for (guint i = 0; ok && spec->models && i < spec->models->len; i++)
    ok = write_model (&w, spec->models->pdata[i], error);
  for (guint i = 0; ok && i < spec->stages->len; i++)
    ok = write_stage (&w, spec->stages->pdata[i], error);
  if (ok && spec->signature)
    ok = write_signature (&w, spec->signature, error);
  if (ok)
    write_tune (&w);
  return g_string_free (w.out, !ok);
}
