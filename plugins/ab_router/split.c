/* ab_router — the split: arms, buckets, the salted SipHash and the overrides file (split.h). */
#include "split.h"

#include <sedp/sedp.h>
#include <sodium.h>

#include <string.h>

G_STATIC_ASSERT (AB_MAX_ARMS == SEDP_MAX_BRANCHES);
G_STATIC_ASSERT (AB_KEY_BYTES == crypto_shorthash_KEYBYTES);
G_STATIC_ASSERT (AB_KEY_BYTES >= crypto_generichash_BYTES_MIN);
G_STATIC_ASSERT (crypto_shorthash_BYTES == 8);

static void config_error (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
config_error (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_propagate_error (error,
                     g_error_new_valist (SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, format, args));
  va_end (args);
}

/* ---- arms ---- */

/* "90", "12.5", "0.05" for a weight in hundredths of a percent. */
static char *
format_percent (guint hundredths)
{
  if (hundredths % 100 == 0)
    return g_strdup_printf ("%u", hundredths / 100);
  if (hundredths % 10 == 0)
    return g_strdup_printf ("%u.%u", hundredths / 100, hundredths % 100 / 10);
  return g_strdup_printf ("%u.%02u", hundredths / 100, hundredths % 100);
}

static gboolean
valid_name (const char *name)
{
  gsize n = strlen (name);
  if (n == 0 || n > AB_MAX_NAME)
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!(g_ascii_islower (*p) || g_ascii_isdigit (*p) || *p == '_'))
      return FALSE;
  return TRUE;
}

typedef enum { WEIGHT_OK, WEIGHT_MALFORMED, WEIGHT_NEGATIVE, WEIGHT_OVER } WeightResult;

/* Reads "D+[.D{1,2}]" into hundredths of a percent; a leading '-' before such a number is
 * WEIGHT_NEGATIVE, more than 100 WEIGHT_OVER, anything else WEIGHT_MALFORMED. */
static WeightResult
parse_weight (const char *s, guint *hundredths)
{
  if (*s == '-' && s[1] != '-')
    return parse_weight (s + 1, hundredths) == WEIGHT_MALFORMED ? WEIGHT_MALFORMED : WEIGHT_NEGATIVE;
  guint64 whole = 0, frac = 0;
  const char *p = s;
  for (; g_ascii_isdigit (*p); p++)
    whole = MIN (whole * 10 + (guint64) (*p - '0'), 1000);
  if (p == s)
    return WEIGHT_MALFORMED;
  if (*p == '.') {
    const char *f = ++p;
    for (; g_ascii_isdigit (*p) && p - f < 2; p++)
      frac = frac * 10 + (guint64) (*p - '0');
    if (p == f)
      return WEIGHT_MALFORMED;
    frac *= p - f == 1 ? 10 : 1;
  }
  if (*p != '\0')
    return WEIGHT_MALFORMED;
  *hundredths = (guint) (whole * 100 + frac);
  return *hundredths > AB_BUCKETS ? WEIGHT_OVER : WEIGHT_OK;
}

static gboolean
weight_error (WeightResult r, const char *where, const char *item, const char *weight,
              GError **error)
{
  if (r == WEIGHT_NEGATIVE)
    config_error (error, "%s: item '%s': weight %s is negative; weights are percentages from 0 to 100",
                  where, item, weight);
  else if (r == WEIGHT_OVER)
    config_error (error, "%s: item '%s': weight %s is more than 100 percent; weights are "
                  "percentages from 0 to 100 that sum to 100", where, item, weight);
  else
    config_error (error, "%s: item '%s': weight '%s' is not a percentage with at most two "
                  "decimals; write it like 'control:90' or 'control:12.25'", where, item, weight);
  return FALSE;
}

/* One "NAME:WEIGHT" item into @name (on success only) and @weight. */
static gboolean
parse_item (const char *item, const char *where, char **name, guint *weight, GError **error)
{
  const char *colon = strchr (item, ':');
  if (colon == NULL) {
    config_error (error, "%s: item '%s' is not NAME:WEIGHT; write it like 'control:90'", where, item);
    return FALSE;
  }
  g_autofree char *n = g_strstrip (g_strndup (item, (gsize) (colon - item)));
  g_autofree char *w = g_strstrip (g_strdup (colon + 1));
  if (!valid_name (n)) {
    config_error (error, "%s: item '%s': arm name '%s' is not 1-%d characters of a-z, 0-9 and '_'; "
                  "rename the arm (like 'control' or 'treatment_2')", where, item, n, AB_MAX_NAME);
    return FALSE;
  }
  WeightResult r = parse_weight (w, weight);
  if (r != WEIGHT_OK)
    return weight_error (r, where, item, w, error);
  *name = g_steal_pointer (&n);
  return TRUE;
}

static gboolean
check_count (guint n, const char *where, GError **error)
{
  if (n == 0)
    config_error (error, "%s: no arms; write at least one NAME:WEIGHT item, like 'control:100'", where);
  else if (n > AB_MAX_ARMS)
    config_error (error, "%s: %u arms, more than the %d a router may have; use fewer arms", where,
                  n, AB_MAX_ARMS);
  return n > 0 && n <= AB_MAX_ARMS;
}

/* Whether arm @i's name differs from the names before it. */
static gboolean
check_unique (const AbArms *arms, guint i, const char *where, GError **error)
{
  for (guint j = 0; j < i; j++)
    if (strcmp (arms->names[j], arms->names[i]) == 0) {
      config_error (error, "%s: arm '%s' is listed twice (items %u and %u); give each arm one "
                    "NAME:WEIGHT item", where, arms->names[i], j + 1, i + 1);
      return FALSE;
    }
  return TRUE;
}

/* The weights sum to AB_BUCKETS; fills @arms->ends. */
static gboolean
check_sum (AbArms *arms, const char *where, GError **error)
{
  guint sum = 0;
  for (guint i = 0; i < arms->n_arms; i++)
    arms->ends[i] = sum += arms->weights[i];
  if (sum == AB_BUCKETS)
    return TRUE;
  g_autofree char *total = format_percent (sum);
  config_error (error, "%s: the weights sum to %s percent, not 100; change them to sum to "
                "exactly 100", where, total);
  return FALSE;
}

AbArms *
ab_arms_parse (const char *const *items, const char *where, GError **error)
{
  guint n = items ? g_strv_length ((char **) items) : 0;
  if (!check_count (n, where, error))
    return NULL;
  g_autoptr (AbArms) arms = g_new0 (AbArms, 1);
  arms->names = g_new0 (char *, n + 1);
  for (guint i = 0; i < n; i++) {
    if (!parse_item (items[i], where, &arms->names[i], &arms->weights[i], error))
      return NULL;
    if (!check_unique (arms, i, where, error))
      return NULL;
  }
  arms->n_arms = n;
  return check_sum (arms, where, error) ? g_steal_pointer (&arms) : NULL;
}

AbArms *
ab_arms_parse_line (const char *line, const char *where, GError **error)
{
  g_auto (GStrv) pieces = g_strsplit (line, ",", -1);
  g_autoptr (GPtrArray) items = g_ptr_array_new ();
  for (guint k = 0; pieces[k]; k++)
    if (*g_strstrip (pieces[k]))
      g_ptr_array_add (items, pieces[k]);
  g_ptr_array_add (items, NULL);
  return ab_arms_parse ((const char *const *) items->pdata, where, error);
}

AbArms *
ab_arms_parse_file (const char *text, const char *where, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  guint found = 0;
  for (guint i = 0; lines[i]; i++) {
    const char *l = g_strstrip (lines[i]);
    if (*l == '\0' || *l == '#')
      continue;
    if (found) {
      config_error (error, "%s: lines %u and %u both hold arms; keep one arms line", where, found, i + 1);
      return NULL;
    }
    found = i + 1;
  }
  if (found == 0) {
    config_error (error, "%s: no arms line; write one, like 'control:90, treatment:10'", where);
    return NULL;
  }
  return ab_arms_parse_line (lines[found - 1], where, error);
}

void
ab_arms_free (AbArms *arms)
{
  if (arms == NULL)
    return;
  g_strfreev (arms->names);
  g_free (arms);
}

int
ab_arms_find (const AbArms *arms, const char *name)
{
  for (guint i = 0; name && i < arms->n_arms; i++)
    if (strcmp (arms->names[i], name) == 0)
      return (int) i;
  return -1;
}

guint
ab_arms_arm_of (const AbArms *arms, guint bucket)
{
  for (guint i = 0; i < arms->n_arms; i++)
    if (bucket < arms->ends[i])
      return i;
  return arms->n_arms - 1; /* not reached: the last end is AB_BUCKETS */
}

char *
ab_arms_list_names (const AbArms *arms)
{
  return g_strjoinv (", ", arms->names);
}

gboolean
ab_arms_check_names (const AbArms *want, const AbArms *got, const char *where, GError **error)
{
  gboolean same = want->n_arms == got->n_arms;
  for (guint i = 0; same && i < want->n_arms; i++)
    same = strcmp (want->names[i], got->names[i]) == 0;
  if (same)
    return TRUE;
  g_autofree char *w = ab_arms_list_names (want);
  g_autofree char *g = ab_arms_list_names (got);
  config_error (error, "%s: its arms (%s) are not the arms option's (%s) in that order; the "
                "branches are fixed when the pipeline starts, so change only the weights there "
                "(or change arms and restart)", where, g, w);
  return FALSE;
}

/* ---- the hash ---- */

gboolean
ab_split_init (GError **error)
{
  static gsize once = 0;
  static int rc;
  if (g_once_init_enter (&once)) {
    rc = sodium_init ();
    g_once_init_leave (&once, 1);
  }
  if (rc < 0)
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL,
                         "libsodium could not be initialised (sodium_init failed)");
  return rc >= 0;
}

void
ab_split_key_of_salt (const char *salt, guint8 key[AB_KEY_BYTES])
{
  crypto_generichash (key, AB_KEY_BYTES, (const unsigned char *) salt, strlen (salt), NULL, 0);
}

guint64
ab_split_hash (const guint8 key[AB_KEY_BYTES], const void *data, gsize len)
{
  guint8 out[crypto_shorthash_BYTES];
  crypto_shorthash (out, data, len, key);
  guint64 h = 0;
  for (int i = crypto_shorthash_BYTES - 1; i >= 0; i--)
    h = (h << 8) | out[i];
  return h;
}

guint
ab_split_bucket_int64 (const guint8 key[AB_KEY_BYTES], gint64 value)
{
  guint8 bytes[8];
  for (guint i = 0; i < 8; i++)
    bytes[i] = (guint8) ((guint64) value >> (8 * i));
  return (guint) (ab_split_hash (key, bytes, sizeof bytes) % AB_BUCKETS);
}

guint
ab_split_bucket_string (const guint8 key[AB_KEY_BYTES], const char *value)
{
  return (guint) (ab_split_hash (key, value, strlen (value)) % AB_BUCKETS);
}

/* ---- overrides ---- */

struct _AbOverrides {
  GHashTable *by_text;   /* the key as written -> line (GUINT_TO_POINTER) */
  GHashTable *by_int;    /* gint64* (the key's value, when it is a decimal int64) -> line */
  GHashTable *arm_of;    /* line -> arm + 1 */
};

void
ab_overrides_free (AbOverrides *o)
{
  if (o == NULL)
    return;
  g_hash_table_unref (o->by_text);
  g_hash_table_unref (o->by_int);
  g_hash_table_unref (o->arm_of);
  g_free (o);
}

/* Splits @line in place into at most @max blank-separated tokens before a '#' token; returns
 * how many tokens there were (possibly more than @max). */
static guint
tokenize (char *line, char **tokens, guint max)
{
  guint n = 0;
  for (char *save = NULL, *t = strtok_r (line, " \t\r", &save); t && *t != '#';
       t = strtok_r (NULL, " \t\r", &save))
    if (n++ < max)
      tokens[n - 1] = t;
  return n;
}

static gboolean
duplicate_error (guint line, guint first, const char *key, const char *path, GError **error)
{
  config_error (error, "overrides: %s:%u: key '%s' is already pinned on line %u; keep one line "
                "per key", path, line, key, first);
  return FALSE;
}

static gboolean
override_add (AbOverrides *o, const char *key, int arm, guint line, const char *path,
              GError **error)
{
  gpointer first = g_hash_table_lookup (o->by_text, key);
  if (first)
    return duplicate_error (line, GPOINTER_TO_UINT (first), key, path, error);
  gint64 v;
  if (g_ascii_string_to_signed (key, 10, G_MININT64, G_MAXINT64, &v, NULL)) {
    if ((first = g_hash_table_lookup (o->by_int, &v)))
      return duplicate_error (line, GPOINTER_TO_UINT (first), key, path, error);
    g_hash_table_insert (o->by_int, g_memdup2 (&v, sizeof v), GUINT_TO_POINTER (line));
  }
  g_hash_table_insert (o->by_text, g_strdup (key), GUINT_TO_POINTER (line));
  g_hash_table_insert (o->arm_of, GUINT_TO_POINTER (line), GINT_TO_POINTER (arm + 1));
  return TRUE;
}

static gboolean
parse_override_line (AbOverrides *o, char *line, guint lineno, const char *path,
                     const AbArms *arms, GError **error)
{
  g_autofree char *text = g_strstrip (g_strdup (line));
  char *tokens[2];
  guint n = tokenize (line, tokens, 2);
  if (n == 0)
    return TRUE;
  if (n != 2) {
    config_error (error, "overrides: %s:%u: '%s' is not 'KEY ARM'; write one key and one arm "
                  "name per line, separated by blanks", path, lineno, text);
    return FALSE;
  }
  int arm = ab_arms_find (arms, tokens[1]);
  if (arm < 0) {
    g_autofree char *names = ab_arms_list_names (arms);
    config_error (error, "overrides: %s:%u: arm '%s' is not one of the arms (%s); name one of "
                  "them", path, lineno, tokens[1], names);
    return FALSE;
  }
  return override_add (o, tokens[0], arm, lineno, path, error);
}

AbOverrides *
ab_overrides_parse (const char *text, const char *path, const AbArms *arms, GError **error)
{
  g_autoptr (AbOverrides) o = g_new0 (AbOverrides, 1);
  o->by_text = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  o->by_int = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  o->arm_of = g_hash_table_new (NULL, NULL);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (!parse_override_line (o, lines[i], i + 1, path, arms, error))
      return NULL;
  return g_steal_pointer (&o);
}

guint
ab_overrides_size (const AbOverrides *o)
{
  return g_hash_table_size (o->by_text);
}

static int
arm_of_line (const AbOverrides *o, gpointer line)
{
  return line ? GPOINTER_TO_INT (g_hash_table_lookup (o->arm_of, line)) - 1 : -1;
}

int
ab_overrides_lookup_int64 (const AbOverrides *o, gint64 key)
{
  return arm_of_line (o, g_hash_table_lookup (o->by_int, &key));
}

int
ab_overrides_lookup_string (const AbOverrides *o, const char *key)
{
  return arm_of_line (o, g_hash_table_lookup (o->by_text, key));
}
