/* sedp — what the pipeline-file parser's files share (spec.c, spec-model.c): where each key
 * sits, the parse context, and the readers of one key's value. Not installed. */
#pragma once

#include "keys.h"
#include "spec.h"

/* Where each group and key sits in the file; GKeyFile merges duplicates silently, so they are
 * found here first. */
typedef struct {
  GHashTable *lines; /* "group\nkey" or "group" -> line number */
} LineMap;

/* The parse of one group: the file's path (for messages), the group, the lines, the key file. */
typedef struct {
  const char *path;
  const char *group;
  LineMap *map;
  GKeyFile *kf;
} Ctx;

/* The line of @key in @group (of @group's header when @key is NULL); 0 when unknown. */
guint dsl_line_of (LineMap *map, const char *group, const char *key);

/* The value of @key in the current group, unescaped and ${VAR}-substituted, blanks stripped;
 * NULL with *error unset when the key is absent, NULL with *error set when a ${VAR} fails. */
char *dsl_get_value (Ctx *c, const char *key, GError **error);

/* KEY = an integer within the range of the runtime key @key of @group (keys.c), into its field
 * of @base; TRUE and nothing changed when the key is absent. */
gboolean dsl_get_uint (Ctx *c, SedpDslGroup group, const char *key, gpointer base, GError **error);

/* [model NAME] (spec-model.c): the group parsed into a new #SedpModelSpec, or NULL with @error
 * naming the file, the line, the group and the key. @dir anchors relative paths. */
SedpModelSpec *dsl_parse_model_group (Ctx *c, const char *name, const char *dir, GError **error);

/* Frees a #SedpModelSpec (NULL is fine). */
void dsl_model_spec_free (SedpModelSpec *m);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpModelSpec, dsl_model_spec_free)

/* [signature NAME] (spec-signature.c): the group parsed into a new #SedpSignatureSpec, or NULL
 * with @error naming the file, the line, the group and the key. */
SedpSignatureSpec *dsl_parse_signature_group (Ctx *c, const char *name, GError **error);

/* Frees a #SedpSignatureSpec (NULL is fine). */
void dsl_signature_spec_free (SedpSignatureSpec *g);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpSignatureSpec, dsl_signature_spec_free)
