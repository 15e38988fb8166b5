/* sedp — the runtime's own keys of pipeline files ([pipeline], [stage NAME], [model NAME] and
 * [signature NAME]): one table of
 * names, types, ranges, defaults and where each value lives in the parsed spec, read by the
 * parser (spec.c), the writer (spec-write.c), the comparison (spec-equal.c), the option checks
 * (options.c) and the search space of `sedp tune` (core/tune/space.c). The table is static and
 * read-only: every function here is thread-safe. */
#pragma once

#include "spec.h"

G_BEGIN_DECLS

/** SedpDslGroup: the kind of group a runtime key belongs to. */
typedef enum {
  SEDP_DSL_GROUP_PIPELINE,
  SEDP_DSL_GROUP_STAGE,
  SEDP_DSL_GROUP_MODEL,
  SEDP_DSL_GROUP_SIGNATURE,
} SedpDslGroup;

/**
 * SedpDslKeyType:
 * @SEDP_DSL_KEY_UINT: plain decimal digits in [min, max]; a #guint in the spec
 * @SEDP_DSL_KEY_STRING: text (`name`, `plugin`); a `char *`
 * @SEDP_DSL_KEY_CHOICE: one of the words of `choices`; an enum in the spec whose value is
 *   `first_choice` + the word's index (0 below `first_choice`: unset)
 * @SEDP_DSL_KEY_LIST: comma-separated items; a %NULL-terminated `char **`
 * @SEDP_DSL_KEY_CPUS: a CPU list ("0,2-3"); a `guint *` with its length at `count_offset`
 * @SEDP_DSL_KEY_PATH: a file path, made absolute against the pipeline file's folder; a `char *`
 * @SEDP_DSL_KEY_DOUBLE: a decimal number in [dmin, dmax]; a `double`
 */
typedef enum {
  SEDP_DSL_KEY_UINT,
  SEDP_DSL_KEY_STRING,
  SEDP_DSL_KEY_CHOICE,
  SEDP_DSL_KEY_LIST,
  SEDP_DSL_KEY_CPUS,
  SEDP_DSL_KEY_PATH,
  SEDP_DSL_KEY_DOUBLE,
} SedpDslKeyType;

/**
 * SedpDslKey:
 * @group: where the key is written
 * @name: the key
 * @type: its type
 * @min: %SEDP_DSL_KEY_UINT: the lowest value the parser accepts
 * @max: %SEDP_DSL_KEY_UINT: the highest
 * @default_value: %SEDP_DSL_KEY_UINT and %SEDP_DSL_KEY_CHOICE: the value the spec holds when the
 *   file does not set the key (sync_workers: 0, "the sum of the stages' parallelism", which no
 *   file can write)
 * @choices: %SEDP_DSL_KEY_CHOICE: the words, '|'-separated
 * @first_choice: %SEDP_DSL_KEY_CHOICE: the spec's value of the first word
 * @offset: where the value lives in #SedpPipelineSpec (@group PIPELINE), #SedpStageSpec or
 *   #SedpModelSpec
 * @count_offset: %SEDP_DSL_KEY_CPUS: where the list's length lives
 * @dmin: %SEDP_DSL_KEY_DOUBLE: the lowest value the parser accepts
 * @dmax: %SEDP_DSL_KEY_DOUBLE: the highest
 * @ddefault: %SEDP_DSL_KEY_DOUBLE: the value when the file does not set the key
 *
 * One runtime key. Static, read-only data: safe from any thread.
 */
typedef struct {
  SedpDslGroup group;
  const char *name;
  SedpDslKeyType type;
  guint64 min;
  guint64 max;
  guint64 default_value;
  const char *choices;
  guint first_choice;
  gsize offset;
  gsize count_offset;
  double dmin;
  double dmax;
  double ddefault;
} SedpDslKey;

/**
 * sedp_dsl_keys:
 * @n: (out): how many keys @group has
 *
 * Returns: (transfer none) (array length=n): every runtime key of @group, in the order the
 * reference (docs/pipeline-dsl.md) and the "known keys" of messages list them.
 */
SEDP_API const SedpDslKey *sedp_dsl_keys (SedpDslGroup group, guint *n);

/**
 * sedp_dsl_runtime_key:
 * Returns: (transfer none) (nullable): the runtime key @name of @group, or %NULL when @name is
 * not one (in a stage group: a plugin option).
 */
SEDP_API const SedpDslKey *sedp_dsl_runtime_key (SedpDslGroup group, const char *name);

/**
 * sedp_dsl_key_names:
 * Returns: (transfer full): the names of @group's runtime keys, ", "-separated, for messages.
 */
SEDP_API char *sedp_dsl_key_names (SedpDslGroup group);

/**
 * sedp_dsl_keys_init:
 * Sets every %SEDP_DSL_KEY_UINT, %SEDP_DSL_KEY_CHOICE and %SEDP_DSL_KEY_DOUBLE key of @group
 * in @base (a #SedpPipelineSpec, #SedpStageSpec or #SedpModelSpec, as @group says) to its
 * default.
 */
SEDP_API void sedp_dsl_keys_init (SedpDslGroup group, gpointer base);

/** SEDP_DSL_KEY_UINT_P: the #guint of the %SEDP_DSL_KEY_UINT key @key in @base. */
#define SEDP_DSL_KEY_UINT_P(key, base) ((guint *) G_STRUCT_MEMBER_P ((base), (key)->offset))
/** SEDP_DSL_KEY_DOUBLE_P: the double of the %SEDP_DSL_KEY_DOUBLE key @key in @base. */
#define SEDP_DSL_KEY_DOUBLE_P(key, base) ((double *) G_STRUCT_MEMBER_P ((base), (key)->offset))

G_END_DECLS
