/* sedp — one declaration of the search space, `TYPE [RANGE] [log]` (int LOW..HIGH, real
 * LOW..HIGH, bool, enum A|B|...), read from a [tune] value and checked against the key it is
 * for: the key's type, the runtime's or the plugin's limits, the option's words. */
#include "space-decl.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void
sedp_tune_entry_error (const SedpTuneEntry *e, GError **error, SedpTuneSpaceError code,
                       const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, SEDP_TUNE_SPACE_ERROR, code, "%s: %s", e->where, message);
}

static const char *const type_names[] = {"int", "real", "bool", "enum", NULL};

static gboolean
parse_number (const SedpTuneEntry *e, const char *text, SedpTuneType type, double *out,
              GError **error)
{
  gint64 n;
  char *end = NULL;
  if (type == SEDP_TUNE_INT && g_ascii_string_to_signed (text, 10, G_MININT64, G_MAXINT64, &n,
                                                         NULL)) {
    *out = (double) n;
    return TRUE;
  }
  if (type == SEDP_TUNE_REAL && *text) {
    /* as the option parser reads a double (core/dsl/options.c): out of range (ERANGE: too
     * large, or subnormal) is refused there, so a bound here would write refused candidates */
    errno = 0;
    *out = g_ascii_strtod (text, &end);
    if (*end == '\0' && errno != ERANGE && isfinite (*out))
      return TRUE;
  }
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_SYNTAX,
                         "'%s' is not %s (write %s LOW..HIGH, e.g. %s)", text,
                         type == SEDP_TUNE_INT ? "a decimal integer" : "a finite number",
                         type_names[type], type == SEDP_TUNE_INT ? "int 1..64" : "real 0.1..0.9");
  return FALSE;
}

/* LOW..HIGH, not empty; with log, a low the logarithm takes. */
static gboolean
parse_range (const SedpTuneEntry *e, const char *text, SedpTuneDecl *d, GError **error)
{
  const char *dots = strstr (text, "..");
  if (dots == NULL) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_SYNTAX,
                           "'%s' is not a range LOW..HIGH (e.g. %s 1..64)", text,
                           type_names[d->type]);
    return FALSE;
  }
  d->low_text = g_strndup (text, (gsize) (dots - text));
  d->high_text = g_strdup (dots + 2);
  if (!parse_number (e, d->low_text, d->type, &d->low, error) ||
      !parse_number (e, d->high_text, d->type, &d->high, error))
    return FALSE;
  if (d->low >= d->high) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_RANGE,
                           "the range %s..%s is empty: low must be below high (write %s %s..%s "
                           "or widen it)",
                           d->low_text, d->high_text, type_names[d->type], d->high_text,
                           d->low_text);
    return FALSE;
  }
  return TRUE;
}

static gboolean
check_log (const SedpTuneEntry *e, SedpTuneDecl *d, GError **error)
{
  gboolean is_int = d->type == SEDP_TUNE_INT;
  if (is_int ? d->low < 0 : d->low <= 0) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_LOG,
                           "log needs low %s, got %s..%s: raise low or drop log",
                           is_int ? "≥ 0 for an int (it spaces log(1 + value))" : "> 0 for a real",
                           d->low_text, d->high_text);
    return FALSE;
  }
  /* The optimiser's coordinates (space.c, to_coordinate): a range too narrow for its logarithms
   * to differ in double precision would be an empty box. */
  if ((is_int ? log1p (d->low) : log (d->low)) < (is_int ? log1p (d->high) : log (d->high)))
    return TRUE;
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_RANGE,
                         "the range %s..%s is empty on the log scale (the logarithms of its ends "
                         "are the same number): widen it or drop log",
                         d->low_text, d->high_text);
  return FALSE;
}

/* A|B|...: two words or more, each once, none empty. */
static gboolean
parse_words (const SedpTuneEntry *e, const char *text, SedpTuneDecl *d, GError **error)
{
  d->choices = g_strsplit (text, "|", -1);
  guint n = g_strv_length (d->choices);
  const char *problem = n < 2 ? "lists fewer than two words" : NULL;
  for (guint i = 0; !problem && i < n; i++) {
    g_strstrip (d->choices[i]);
    if (*d->choices[i] == '\0')
      problem = "has an empty word";
    for (guint j = 0; !problem && j < i; j++)
      if (strcmp (d->choices[i], d->choices[j]) == 0)
        problem = "lists a word twice";
  }
  if (problem)
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_ENUM,
                           "the enum '%s' %s: list two or more words, each once, '|'-separated "
                           "(e.g. enum packed|naive)",
                           text, problem);
  d->high = n ? n - 1 : 0;
  return problem == NULL;
}

static gboolean
parse_type (const SedpTuneEntry *e, const char *word, SedpTuneDecl *d, GError **error)
{
  for (guint t = 0; type_names[t]; t++)
    if (strcmp (word, type_names[t]) == 0) {
      d->type = (SedpTuneType) t;
      return TRUE;
    }
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_TYPE,
                         "unknown type '%s' (expected int, real, bool or enum)", word);
  return FALSE;
}

static gboolean
syntax_error (const SedpTuneEntry *e, GError **error)
{
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_SYNTAX,
                         "'%s' is not TYPE [RANGE] [log]: write int LOW..HIGH [log], real "
                         "LOW..HIGH [log], bool, or enum A|B|...",
                         e->value);
  return FALSE;
}

/* How many words each type takes: int and real a range and perhaps log, enum its list, bool
 * none. */
static gboolean
check_word_count (const SedpTuneEntry *e, const SedpTuneDecl *d, guint n, GError **error)
{
  gboolean numeric = d->type == SEDP_TUNE_INT || d->type == SEDP_TUNE_REAL;
  guint most = numeric ? 3 : d->type == SEDP_TUNE_ENUM ? 2 : 1;
  guint least = d->type == SEDP_TUNE_BOOL ? 1 : 2;
  return (n >= least && n <= most) || syntax_error (e, error);
}

static gboolean
parse_log (const SedpTuneEntry *e, const char *word, SedpTuneDecl *d, GError **error)
{
  if (word == NULL)
    return TRUE;
  if (strcmp (word, "log") != 0) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_SYNTAX,
                           "'%s' after the range is not 'log', the only word allowed there",
                           word);
    return FALSE;
  }
  d->log = TRUE;
  return check_log (e, d, error);
}

/* The value's words, blanks between them dropped. */
static char **
split_words (const char *value)
{
  g_auto (GStrv) parts = g_strsplit_set (value, " \t", -1);
  GPtrArray *words = g_ptr_array_new ();
  for (guint i = 0; parts[i]; i++)
    if (*parts[i])
      g_ptr_array_add (words, g_strdup (parts[i]));
  g_ptr_array_add (words, NULL);
  return (char **) g_ptr_array_free (words, FALSE);
}

gboolean
sedp_tune_decl_parse (const SedpTuneEntry *e, SedpTuneDecl *d, GError **error)
{
  memset (d, 0, sizeof *d);
  g_auto (GStrv) words = split_words (e->value);
  guint n = g_strv_length (words);
  if (n == 0)
    return syntax_error (e, error);
  if (!parse_type (e, words[0], d, error) || !check_word_count (e, d, n, error))
    return FALSE;
  switch (d->type) {
  case SEDP_TUNE_BOOL:
    d->high = 1;
    return TRUE;
  case SEDP_TUNE_ENUM:
    return parse_words (e, words[1], d, error);
  default:
    return parse_range (e, words[1], d, error) && parse_log (e, words[2], d, error);
  }
}

void
sedp_tune_decl_clear (SedpTuneDecl *d)
{
  g_clear_pointer (&d->low_text, g_free);
  g_clear_pointer (&d->high_text, g_free);
  g_clear_pointer (&d->choices, g_strfreev);
}

/* ---- the declaration against the key ----------------------------------------------------- */

static const char *
option_type_name (SedpOptionType type)
{
  switch (type) {
  case SEDP_OPTION_INT:
    return "int";
  case SEDP_OPTION_DOUBLE:
    return "real";
  case SEDP_OPTION_BOOL:
    return "bool";
  case SEDP_OPTION_ENUM:
    return "enum";
  default:
    return NULL; /* strings, paths and lists are not tuned */
  }
}

/* What to write for a key of type @want, for messages. */
static const char *
declaration_hint (const char *want)
{
  if (strcmp (want, "enum") == 0)
    return "enum A|B|...";
  if (strcmp (want, "bool") == 0)
    return "bool";
  return strcmp (want, "int") == 0 ? "int LOW..HIGH" : "real LOW..HIGH";
}

static gboolean
check_type (const SedpTuneEntry *e, const SedpTuneDecl *d, const SedpTuneTarget *t,
            GError **error)
{
  const char *want = t->runtime ? "int" : option_type_name (t->option->type);
  if (strcmp (want, type_names[d->type]) == 0)
    return TRUE;
  if (t->runtime)
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_TYPE,
                           "declared %s, but the runtime key %s is an integer: write %s",
                           type_names[d->type], t->runtime->name, declaration_hint (want));
  else
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_TYPE,
                           "declared %s, but option '%s' of plugin '%s' (stage '%s') is %s: "
                           "write %s",
                           type_names[d->type], t->option->name, t->plugin, t->stage->name, want,
                           declaration_hint (want));
  return FALSE;
}

/* Within the runtime's limits (keys.h), or the option's when it has some (min < max). */
static gboolean
check_limits (const SedpTuneEntry *e, const SedpTuneDecl *d, const SedpTuneTarget *t,
              GError **error)
{
  if (t->runtime && (d->low < t->runtime->min || d->high > t->runtime->max)) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_LIMIT,
                           "the range %s..%s goes beyond the runtime's limits of %s, "
                           "%" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
                           " (docs/pipeline-dsl.md): keep within them",
                           d->low_text, d->high_text, t->runtime->name, t->runtime->min,
                           t->runtime->max);
    return FALSE;
  }
  const SedpOptionSpec *o = t->option;
  if (o && o->min < o->max && (d->low < o->min || d->high > o->max)) {
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_LIMIT,
                           "the range %s..%s goes beyond the limits of option '%s' of plugin "
                           "'%s' (stage '%s'), %g..%g: keep within them",
                           d->low_text, d->high_text, o->name, t->plugin, t->stage->name, o->min,
                           o->max);
    return FALSE;
  }
  return TRUE;
}

/* Every word of an enum is one of the option's. */
static gboolean
check_choices (const SedpTuneEntry *e, const SedpTuneDecl *d, const SedpTuneTarget *t,
               GError **error)
{
  g_auto (GStrv) allowed = g_strsplit (t->option->choices ? t->option->choices : "", "|", -1);
  for (guint i = 0; d->choices[i]; i++) {
    if (g_strv_contains ((const char *const *) allowed, d->choices[i]))
      continue;
    g_autofree char *list = g_strjoinv (", ", allowed);
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_ENUM,
                           "'%s' is not a value of option '%s' of plugin '%s' (stage '%s'; its "
                           "values: %s): list only those",
                           d->choices[i], t->option->name, t->plugin, t->stage->name, list);
    return FALSE;
  }
  return TRUE;
}

gboolean
sedp_tune_decl_fits (const SedpTuneEntry *e, const SedpTuneDecl *d, const SedpTuneTarget *t,
                     GError **error)
{
  if (!check_type (e, d, t, error))
    return FALSE;
  if (d->type == SEDP_TUNE_ENUM)
    return check_choices (e, d, t, error);
  return d->type == SEDP_TUNE_BOOL || check_limits (e, d, t, error);
}
