/* sedp — parsing and validating plugin options against the plugin's schema. */
#include "options.h"

#include "keys.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  gboolean set;
  gboolean b;
  gint64 i;
  double d;
  char *s;
  char **v;
} OptionValue;

struct _SedpOptionValues {
  const SedpOptionSpec *schema;
  guint n;
  OptionValue *values;
};

const char *
sedp_option_type_to_string (SedpOptionType type)
{
  switch (type) {
  case SEDP_OPTION_BOOL:
    return "bool";
  case SEDP_OPTION_INT:
    return "int";
  case SEDP_OPTION_DOUBLE:
    return "double";
  case SEDP_OPTION_STRING:
    return "string";
  case SEDP_OPTION_PATH:
    return "path";
  case SEDP_OPTION_ENUM:
    return "enum";
  case SEDP_OPTION_STRING_LIST:
    return "list";
  }
  return "invalid";
}

static gboolean
in_range (const SedpOptionSpec *o, double v)
{
  return !(o->min < o->max) || (v >= o->min && v <= o->max);
}

static int
compare_strings (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* The references of @parts, sorted, as "@a, @a/b, …" (at most 12, then "…"). */
static char *
list_model_parts (GHashTable *parts)
{
  g_autofree gpointer *keys = (gpointer *) g_hash_table_get_keys_as_array (parts, NULL);
  guint n = g_hash_table_size (parts);
  qsort (keys, n, sizeof (gpointer), compare_strings);
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < n && i < 12; i++)
    g_string_append_printf (out, "%s%s", i ? ", " : "", (const char *) keys[i]);
  if (n > 12)
    g_string_append (out, ", …");
  return g_string_free (out, FALSE);
}

/* A PATH value "@NAME[/PATH]": a part of a [model NAME]'s bundle (docs/model-lifecycle.md). */
static gboolean
resolve_model_part (const char *text, GHashTable *parts, OptionValue *out, char **why)
{
  const char *path = parts ? g_hash_table_lookup (parts, text) : NULL;
  if (path == NULL) {
    g_autofree char *known = parts ? list_model_parts (parts) : NULL;
    *why = known && *known
               ? g_strdup_printf ("'%s' is not a part of a served model's bundle (its parts: %s)",
                                  text, known)
               : g_strdup_printf ("'%s' names a model's bundle, but the pipeline has no [model "
                                  "NAME] group: add one (docs/model-lifecycle.md)", text);
    return FALSE;
  }
  g_free (out->s);
  out->s = g_strdup (path);
  out->set = TRUE;
  return TRUE;
}

/* Parses @text as option @o into @out; on failure returns FALSE and sets *@why. */
static gboolean
parse_one (const SedpOptionSpec *o, const char *text, const char *base_dir, GHashTable *parts,
           OptionValue *out, char **why)
{
  switch (o->type) {
  case SEDP_OPTION_BOOL:
    if (g_ascii_strcasecmp (text, "true") == 0 || strcmp (text, "1") == 0 ||
        g_ascii_strcasecmp (text, "yes") == 0)
      out->b = TRUE;
    else if (g_ascii_strcasecmp (text, "false") == 0 || strcmp (text, "0") == 0 ||
             g_ascii_strcasecmp (text, "no") == 0)
      out->b = FALSE;
    else {
      *why = g_strdup_printf ("expected true or false, got '%s'", text);
      return FALSE;
    }
    break;
  case SEDP_OPTION_INT: {
    gint64 v;
    if (!g_ascii_string_to_signed (text, 10, G_MININT64, G_MAXINT64, &v, NULL)) {
      *why = g_strdup_printf ("expected an integer, got '%s'", text);
      return FALSE;
    }
    if (!in_range (o, (double) v)) {
      *why = g_strdup_printf ("expected an integer from %.0f to %.0f, got '%s'", o->min, o->max, text);
      return FALSE;
    }
    out->i = v;
    break;
  }
  case SEDP_OPTION_DOUBLE: {
    char *end = NULL;
    errno = 0;
    double v = g_ascii_strtod (text, &end);
    if (*text == '\0' || end == NULL || *end != '\0' || errno == ERANGE || !isfinite (v)) {
      *why = g_strdup_printf ("expected a number, got '%s'", text);
      return FALSE;
    }
    if (!in_range (o, v)) {
      *why = g_strdup_printf ("expected a number from %g to %g, got '%s'", o->min, o->max, text);
      return FALSE;
    }
    out->d = v;
    break;
  }
  case SEDP_OPTION_STRING:
    g_free (out->s);
    out->s = g_strdup (text);
    break;
  case SEDP_OPTION_PATH:
    if (text[0] == '@')
      return resolve_model_part (text, parts, out, why);
    g_free (out->s);
    out->s = *text ? g_canonicalize_filename (text, base_dir) : g_strdup ("");
    break;
  case SEDP_OPTION_ENUM: {
    g_auto (GStrv) choices = g_strsplit (o->choices ? o->choices : "", "|", -1);
    if (!g_strv_contains ((const char *const *) choices, text)) {
      g_autofree char *list = g_strjoinv (", ", choices);
      *why = g_strdup_printf ("expected one of %s, got '%s'", list, text);
      return FALSE;
    }
    g_free (out->s);
    out->s = g_strdup (text);
    break;
  }
  case SEDP_OPTION_STRING_LIST: {
    g_auto (GStrv) pieces = g_strsplit (text, ",", -1);
    GPtrArray *items = g_ptr_array_new ();
    for (guint k = 0; pieces[k]; k++) {
      char *item = g_strstrip (pieces[k]);
      if (*item)
        g_ptr_array_add (items, g_strdup (item));
    }
    g_ptr_array_add (items, NULL);
    g_strfreev (out->v);
    out->v = (char **) g_ptr_array_free (items, FALSE);
    break;
  }
  default:
    *why = g_strdup ("the plugin declares an option of unknown type");
    return FALSE;
  }
  out->set = TRUE;
  return TRUE;
}

SedpOptionValues *
sedp_option_values_parse (const SedpOptionSpec *schema, const SedpStageSpec *stage,
                          const char *path, const char *base_dir, GHashTable *parts,
                          GError **error)
{
  SedpOptionValues *vals = g_new0 (SedpOptionValues, 1);
  vals->schema = schema;
  while (schema && schema[vals->n].name)
    vals->n++;
  vals->values = g_new0 (OptionValue, MAX (vals->n, 1));

  for (guint i = 0; i < vals->n; i++) {
    const SedpOptionSpec *o = &schema[i];
    if (o->default_value) {
      char *why = NULL;
      if (!parse_one (o, o->default_value, base_dir, parts, &vals->values[i], &why)) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_PLUGIN,
                     "%s:%u: [stage %s]: plugin '%s' has a bad default for '%s': %s", path,
                     stage->line, stage->name, stage->plugin, o->name, why);
        g_free (why);
        goto fail;
      }
    }
  }
  for (guint k = 0; stage->option_keys && stage->option_keys[k]; k++) {
    const char *key = stage->option_keys[k];
    guint i;
    for (i = 0; i < vals->n; i++)
      if (strcmp (schema[i].name, key) == 0)
        break;
    if (i == vals->n) {
      GString *known = g_string_new (NULL);
      for (guint j = 0; j < vals->n; j++)
        g_string_append_printf (known, "%s%s", j ? ", " : "", schema[j].name);
      g_autofree char *runtime = sedp_dsl_key_names (SEDP_DSL_GROUP_STAGE);
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_KEY,
                   "%s:%u: [stage %s] %s: unknown key for plugin '%s' (its options: %s; runtime "
                   "keys: %s)",
                   path, stage->option_lines[k], stage->name, key, stage->plugin,
                   known->len ? known->str : "none", runtime);
      g_string_free (known, TRUE);
      goto fail;
    }
    char *why = NULL;
    if (!parse_one (&schema[i], stage->option_values[k], base_dir, parts, &vals->values[i], &why)) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [stage %s] %s: %s", path, stage->option_lines[k], stage->name, key, why);
      g_free (why);
      goto fail;
    }
  }
  for (guint i = 0; i < vals->n; i++) {
    if (schema[i].required && !vals->values[i].set) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_MISSING_KEY,
                   "%s:%u: [stage %s] %s: missing required option of plugin '%s' (%s)", path,
                   stage->line, stage->name, schema[i].name, stage->plugin,
                   schema[i].help ? schema[i].help : "");
      goto fail;
    }
  }
  return vals;
fail:
  sedp_option_values_free (vals);
  return NULL;
}

void
sedp_option_values_free (SedpOptionValues *vals)
{
  if (vals == NULL)
    return;
  for (guint i = 0; i < vals->n; i++) {
    g_free (vals->values[i].s);
    g_strfreev (vals->values[i].v);
  }
  g_free (vals->values);
  g_free (vals);
}

int
sedp_option_values_find (const SedpOptionValues *vals, const char *name, SedpOptionType *type)
{
  for (guint i = 0; i < vals->n; i++)
    if (strcmp (vals->schema[i].name, name) == 0) {
      if (type)
        *type = vals->schema[i].type;
      return (int) i;
    }
  return -1;
}

gboolean
sedp_option_values_get_bool (const SedpOptionValues *vals, int i)
{
  return vals->values[i].b;
}

gint64
sedp_option_values_get_int (const SedpOptionValues *vals, int i)
{
  return vals->values[i].i;
}

double
sedp_option_values_get_double (const SedpOptionValues *vals, int i)
{
  return vals->values[i].d;
}

const char *
sedp_option_values_get_string (const SedpOptionValues *vals, int i)
{
  return vals->values[i].s;
}

const char *const *
sedp_option_values_get_strv (const SedpOptionValues *vals, int i)
{
  return (const char *const *) vals->values[i].v;
}
