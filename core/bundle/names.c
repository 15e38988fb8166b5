/* sedp — bundles: the rules for model names and version folders, and the downgrade rule. */
#include "bundle.h"

#include <string.h>

G_DEFINE_QUARK (sedp-bundle-error-quark, sedp_bundle_error)

#define NAME_RULE                                                                                \
  "a model name is 1 to 128 characters of A-Z a-z 0-9 _ - . and does not start with '.'"
#define VERSION_RULE                                                                             \
  "a version is a decimal number from 1 to 9223372036854775807 without sign or leading zeros "  \
  "(7, not 007)"

/* Whether @c may appear in a model name. */
static gboolean
name_char (char c)
{
  return g_ascii_isalnum (c) || c == '_' || c == '-' || c == '.';
}

gboolean
sedp_bundle_name_check (const char *name, GError **error)
{
  g_return_val_if_fail (name != NULL, FALSE);
  gsize n = strlen (name);
  const char *why = NULL;
  if (n == 0)
    why = "it is empty";
  else if (n > SEDP_BUNDLE_MAX_NAME)
    why = "it is longer than 128 characters";
  else if (name[0] == '.')
    why = "it starts with '.'";
  for (const char *p = name; why == NULL && *p; p++)
    if (!name_char (*p))
      why = "it has a character outside A-Z a-z 0-9 _ - .";
  if (why == NULL)
    return TRUE;
  g_autofree char *shown = g_strescape (name, NULL);
  g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_BAD_NAME,
               "model name '%s' is not allowed: %s (%s)", shown, why, NAME_RULE);
  return FALSE;
}

gint64
sedp_bundle_version_parse (const char *text, GError **error)
{
  g_return_val_if_fail (text != NULL, 0);
  guint64 v = 0;
  gboolean digits = *text != '\0' && text[0] != '0' && strlen (text) <= 19;
  for (const char *p = text; digits && *p; p++)
    digits = g_ascii_isdigit (*p);
  /* 19 digits at most, so no overflow of a guint64; then the gint64 range. */
  if (digits)
    v = g_ascii_strtoull (text, NULL, 10);
  if (digits && v >= 1 && v <= G_MAXINT64)
    return (gint64) v;
  g_autofree char *shown = g_strescape (text, NULL);
  g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_BAD_NAME,
               "version folder '%s' is not a version: %s", shown, VERSION_RULE);
  return 0;
}

gboolean
sedp_bundle_check_upgrade (const char *name, gint64 serving, gint64 candidate,
                           gboolean explicit_rollback, GError **error)
{
  g_return_val_if_fail (name != NULL, FALSE);
  if (serving <= 0 || candidate >= serving || explicit_rollback)
    return TRUE;
  g_set_error (error, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_DOWNGRADE,
               "model '%s': version %" G_GINT64_FORMAT " is lower than version %" G_GINT64_FORMAT
               " serving; a downgrade is refused unless asked for: roll back with "
               "POST /v1/admin/models/%s:rollback?version=%" G_GINT64_FORMAT,
               name, candidate, serving, name, candidate);
  return FALSE;
}
