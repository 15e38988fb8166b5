/* sedp — stage options validated against a plugin's schema. */
#pragma once

#include "spec.h"

/**
 * SedpOptionValues:
 * The typed value of every option of one schema (defaults filled in), parsed from a stage
 * group of a pipeline file. Read-only after parsing, so safe to share between threads.
 */
typedef struct _SedpOptionValues SedpOptionValues;

/* Checks @stage's plugin options against @schema: unknown keys, wrong types, out-of-range
 * values and missing required options are errors naming @path, the group and the key. PATH
 * options are resolved against @base_dir, except a value starting with '@': a part of a served
 * model's bundle, looked up in @parts (nullable; "@ctr", "@ctr/cube" → absolute paths, as
 * sedp_graph_bind_models() builds it), an error listing the parts when it is not there. */
SEDP_API SedpOptionValues *sedp_option_values_parse (const SedpOptionSpec *schema,
                                                     const SedpStageSpec *stage, const char *path,
                                                     const char *base_dir, GHashTable *parts,
                                                     GError **error);

SEDP_API void sedp_option_values_free (SedpOptionValues *values);

/* Index of @name in the schema, or -1. */
int sedp_option_values_find (const SedpOptionValues *values, const char *name, SedpOptionType *type);

gboolean sedp_option_values_get_bool (const SedpOptionValues *values, int index);
gint64 sedp_option_values_get_int (const SedpOptionValues *values, int index);
double sedp_option_values_get_double (const SedpOptionValues *values, int index);
const char *sedp_option_values_get_string (const SedpOptionValues *values, int index);
const char *const *sedp_option_values_get_strv (const SedpOptionValues *values, int index);

/* "bool", "int", ... for help texts. */
SEDP_API const char *sedp_option_type_to_string (SedpOptionType type);
