/* sedp — what an address of the search space names in a pipeline: a runtime key of [pipeline]
 * or of a stage (keys.h), or an option of a stage's plugin (its schema, found as
 * sedp_graph_compile() finds it), and the value the pipeline gives it. */
#include "space-private.h"

#include "../dsl/options.h"
#include "../graph/models.h"

#include <math.h>
#include <string.h>

/* The runtime keys `sedp tune` may set. Left out: name, plugin, after, scope, outputs, mode,
 * warmup and drop_columns change what the pipeline computes, not how fast; deadline_ms is the
 * requests' contract, which the tuner measures against; cpus is a placement, not a number;
 * sync_workers only counts in the legacy sync mode; warmup_repeat only at start. */
static const char *const tunable_pipeline[] = {"frame_rows", "idle_spin_us", NULL};
static const char *const tunable_stage[] = {"parallelism", "batch", "batch_timeout_us",
                                            "queue_capacity", NULL};

gboolean
sedp_tune_space_tunable (SedpDslGroup group, const char *key)
{
  return g_strv_contains (group == SEDP_DSL_GROUP_PIPELINE ? tunable_pipeline : tunable_stage,
                          key);
}

char *
sedp_tune_space_tunable_names (SedpDslGroup group)
{
  return g_strjoinv (", ", (char **) (group == SEDP_DSL_GROUP_PIPELINE ? tunable_pipeline
                                                                       : tunable_stage));
}

guint
sedp_tune_space_cores (void)
{
  return MAX (g_get_num_processors (), 1);
}

void
sedp_tune_target_pipeline (const SedpPipelineSpec *spec, const char *key, SedpTuneTarget *t)
{
  memset (t, 0, sizeof *t);
  t->runtime = sedp_dsl_runtime_key (SEDP_DSL_GROUP_PIPELINE, key);
  t->start = NAN;
  if (t->runtime && t->runtime->type == SEDP_DSL_KEY_UINT)
    t->start = *SEDP_DSL_KEY_UINT_P (t->runtime, (gpointer) spec);
}

static gboolean
stage_sets (const SedpStageSpec *stage, const char *option)
{
  for (guint i = 0; stage->option_keys && stage->option_keys[i]; i++)
    if (strcmp (stage->option_keys[i], option) == 0)
      return TRUE;
  return FALSE;
}

/* The option's value in @t->stage (or the plugin's default), from the options validated as
 * sedp_graph_compile() validates them. */
static gboolean
option_start (const SedpPipelineSpec *spec, const SedpOptionSpec *schema, SedpTuneTarget *t,
              GError **error)
{
  /* A stage naming a served model's parts (@NAME) needs them bound to check its options. */
  g_autoptr (GHashTable) parts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GPtrArray) models = spec->models && spec->models->len
                                     ? sedp_graph_bind_models (spec, NULL, parts, error)
                                     : g_ptr_array_new ();
  if (models == NULL)
    return FALSE;
  SedpOptionValues *values =
      sedp_option_values_parse (schema, t->stage, spec->path, spec->dir, parts, error);
  if (values == NULL)
    return FALSE;
  SedpOptionType type;
  int i = sedp_option_values_find (values, t->option->name, &type);
  gboolean set = t->option->default_value != NULL || stage_sets (t->stage, t->option->name);
  if (set && type == SEDP_OPTION_INT)
    t->start = (double) sedp_option_values_get_int (values, i);
  else if (set && type == SEDP_OPTION_DOUBLE)
    t->start = sedp_option_values_get_double (values, i);
  else if (set && type == SEDP_OPTION_BOOL)
    t->start = sedp_option_values_get_bool (values, i) ? 1 : 0;
  else if (type == SEDP_OPTION_ENUM)
    t->start_word = g_strdup (sedp_option_values_get_string (values, i));
  sedp_option_values_free (values);
  return TRUE;
}

gboolean
sedp_tune_target_stage (const SedpPipelineSpec *spec, SedpRegistry *registry, guint stage_index,
                        const char *key, const char *where, SedpTuneTarget *t, GError **error)
{
  memset (t, 0, sizeof *t);
  t->stage = spec->stages->pdata[stage_index];
  t->stage_index = stage_index;
  t->plugin = t->stage->plugin;
  t->start = NAN;
  t->runtime = sedp_dsl_runtime_key (SEDP_DSL_GROUP_STAGE, key);
  if (t->runtime) {
    if (t->runtime->type == SEDP_DSL_KEY_UINT)
      t->start = *SEDP_DSL_KEY_UINT_P (t->runtime, (gpointer) t->stage);
    return TRUE;
  }
  g_autoptr (GError) local = NULL;
  const SedpPluginInfo *info = sedp_registry_lookup (registry, t->plugin, spec->dir, &local);
  if (info == NULL) {
    g_set_error (error, SEDP_TUNE_SPACE_ERROR, SEDP_TUNE_SPACE_ERROR_PLUGIN,
                 "%s: cannot read the options of stage '%s' (plugin '%s'): %s (fix the stage "
                 "first: sedp check)",
                 where, t->stage->name, t->plugin, local->message);
    return FALSE;
  }
  t->schema = info->desc->options;
  for (const SedpOptionSpec *o = t->schema; o && o->name; o++)
    if (strcmp (o->name, key) == 0)
      t->option = o;
  return t->option == NULL || option_start (spec, info->desc->options, t, error);
}

void
sedp_tune_target_clear (SedpTuneTarget *t)
{
  g_clear_pointer (&t->start_word, g_free);
}
