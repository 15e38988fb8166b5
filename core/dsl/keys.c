/* sedp — the table of the runtime's own keys of pipeline files (keys.h). */
#include "keys.h"

#include <string.h>

#define P(field) G_STRUCT_OFFSET (SedpPipelineSpec, field)
#define S(field) G_STRUCT_OFFSET (SedpStageSpec, field)
#define M(field) G_STRUCT_OFFSET (SedpModelSpec, field)
#define G(field) G_STRUCT_OFFSET (SedpSignatureSpec, field)

/* In the order of docs/pipeline-dsl.md's tables and of the parser's "known keys". */
static const SedpDslKey pipeline_keys[] = {
  {SEDP_DSL_GROUP_PIPELINE, "name", SEDP_DSL_KEY_STRING, .offset = P (name)},
  {SEDP_DSL_GROUP_PIPELINE, "deadline_ms", SEDP_DSL_KEY_UINT, 1, 3600000, 100,
   .offset = P (deadline_ms)},
  {SEDP_DSL_GROUP_PIPELINE, "frame_rows", SEDP_DSL_KEY_UINT, 1, 1 << 20, 64,
   .offset = P (frame_rows)},
  {SEDP_DSL_GROUP_PIPELINE, "mode", SEDP_DSL_KEY_CHOICE, .default_value = SEDP_MODE_STAGED,
   .choices = "staged|sync", .first_choice = SEDP_MODE_STAGED, .offset = P (mode)},
  {SEDP_DSL_GROUP_PIPELINE, "outputs", SEDP_DSL_KEY_LIST, .offset = P (outputs)},
  {SEDP_DSL_GROUP_PIPELINE, "sync_workers", SEDP_DSL_KEY_UINT, 1, 1024, 0,
   .offset = P (sync_workers)},
  {SEDP_DSL_GROUP_PIPELINE, "idle_spin_us", SEDP_DSL_KEY_UINT, 0, 100000, 50,
   .offset = P (idle_spin_us)},
  {SEDP_DSL_GROUP_PIPELINE, "warmup", SEDP_DSL_KEY_PATH, .offset = P (warmup)},
  {SEDP_DSL_GROUP_PIPELINE, "warmup_repeat", SEDP_DSL_KEY_UINT, 1, 1000000, 1,
   .offset = P (warmup_repeat)},
  {SEDP_DSL_GROUP_PIPELINE, "cpus", SEDP_DSL_KEY_CPUS, .offset = P (cpus),
   .count_offset = P (n_cpus)},
};

static const SedpDslKey stage_keys[] = {
  {SEDP_DSL_GROUP_STAGE, "plugin", SEDP_DSL_KEY_STRING, .offset = S (plugin)},
  {SEDP_DSL_GROUP_STAGE, "after", SEDP_DSL_KEY_LIST, .offset = S (after)},
  {SEDP_DSL_GROUP_STAGE, "scope", SEDP_DSL_KEY_CHOICE, .default_value = 0,
   .choices = "request|item", .first_choice = SEDP_SCOPE_REQUEST, .offset = S (scope)},
  {SEDP_DSL_GROUP_STAGE, "parallelism", SEDP_DSL_KEY_UINT, 1, 1024, 1, .offset = S (parallelism)},
  {SEDP_DSL_GROUP_STAGE, "batch", SEDP_DSL_KEY_UINT, 1, 65536, 1, .offset = S (batch)},
  {SEDP_DSL_GROUP_STAGE, "batch_timeout_us", SEDP_DSL_KEY_UINT, 0, 10000000, 0,
   .offset = S (batch_timeout_us)},
  {SEDP_DSL_GROUP_STAGE, "queue_capacity", SEDP_DSL_KEY_UINT, 1, 10000000, 1024,
   .offset = S (queue_capacity)},
  {SEDP_DSL_GROUP_STAGE, "drop_columns", SEDP_DSL_KEY_LIST, .offset = S (drop_columns)},
  {SEDP_DSL_GROUP_STAGE, "cpus", SEDP_DSL_KEY_CPUS, .offset = S (cpus), .count_offset = S (n_cpus)},
  {SEDP_DSL_GROUP_STAGE, "branch_max_inflight", SEDP_DSL_KEY_LIST,
   .offset = S (branch_max_inflight)},
  {SEDP_DSL_GROUP_STAGE, "branch_max_rate", SEDP_DSL_KEY_LIST, .offset = S (branch_max_rate)},
};

/* [model NAME]: a model served from a repository (docs/model-lifecycle.md). `version` is
 * "latest" or a version number, checked by spec-model.c. */
static const SedpDslKey model_keys[] = {
  {SEDP_DSL_GROUP_MODEL, "repository", SEDP_DSL_KEY_PATH, .offset = M (repository)},
  {SEDP_DSL_GROUP_MODEL, "version", SEDP_DSL_KEY_STRING, .offset = M (version)},
  {SEDP_DSL_GROUP_MODEL, "public_key", SEDP_DSL_KEY_PATH, .offset = M (public_key)},
  {SEDP_DSL_GROUP_MODEL, "poll_interval_s", SEDP_DSL_KEY_UINT, 1, 86400, 5,
   .offset = M (poll_interval_s)},
  {SEDP_DSL_GROUP_MODEL, "probation_s", SEDP_DSL_KEY_UINT, 0, 86400, 60, .offset = M (probation_s)},
  {SEDP_DSL_GROUP_MODEL, "max_error_rate", SEDP_DSL_KEY_DOUBLE, .offset = M (max_error_rate),
   .dmin = 0.0, .dmax = 1.0, .ddefault = 1.0},
  {SEDP_DSL_GROUP_MODEL, "max_p99_over_previous", SEDP_DSL_KEY_DOUBLE,
   .offset = M (max_p99_over_previous), .dmin = 0.0, .dmax = 1000.0, .ddefault = 0.0},
  {SEDP_DSL_GROUP_MODEL, "warmup_pause", SEDP_DSL_KEY_DOUBLE, .offset = M (warmup_pause),
   .dmin = 0.0, .dmax = 100.0, .ddefault = 1.0},
};

/* [signature NAME]: the model API's arrays (docs/compat.md); entries checked by core/io. */
static const SedpDslKey signature_keys[] = {
  {SEDP_DSL_GROUP_SIGNATURE, "inputs", SEDP_DSL_KEY_LIST, .offset = G (inputs)},
  {SEDP_DSL_GROUP_SIGNATURE, "outputs", SEDP_DSL_KEY_LIST, .offset = G (outputs)},
};

const SedpDslKey *
sedp_dsl_keys (SedpDslGroup group, guint *n)
{
  if (group == SEDP_DSL_GROUP_SIGNATURE) {
    *n = G_N_ELEMENTS (signature_keys);
    return signature_keys;
  }
  if (group == SEDP_DSL_GROUP_PIPELINE) {
    *n = G_N_ELEMENTS (pipeline_keys);
    return pipeline_keys;
  }
  if (group == SEDP_DSL_GROUP_MODEL) {
    *n = G_N_ELEMENTS (model_keys);
    return model_keys;
  }
  *n = G_N_ELEMENTS (stage_keys);
  return stage_keys;
}

const SedpDslKey *
sedp_dsl_runtime_key (SedpDslGroup group, const char *name)
{
  guint n;
  const SedpDslKey *keys = sedp_dsl_keys (group, &n);
  for (guint i = 0; i < n; i++)
    if (strcmp (keys[i].name, name) == 0)
      return &keys[i];
  return NULL;
}

char *
sedp_dsl_key_names (SedpDslGroup group)
{
  guint n;
  const SedpDslKey *keys = sedp_dsl_keys (group, &n);
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s%s", i ? ", " : "", keys[i].name);
  return g_string_free (out, FALSE);
}

void
sedp_dsl_keys_init (SedpDslGroup group, gpointer base)
{
  guint n;
  const SedpDslKey *keys = sedp_dsl_keys (group, &n);
  for (guint i = 0; i < n; i++) {
    if (keys[i].type == SEDP_DSL_KEY_UINT)
      *SEDP_DSL_KEY_UINT_P (&keys[i], base) = (guint) keys[i].default_value;
    else if (keys[i].type == SEDP_DSL_KEY_CHOICE)
      *(int *) G_STRUCT_MEMBER_P (base, keys[i].offset) = (int) keys[i].default_value;
    else if (keys[i].type == SEDP_DSL_KEY_DOUBLE)
      *SEDP_DSL_KEY_DOUBLE_P (&keys[i], base) = keys[i].ddefault;
  }
}
