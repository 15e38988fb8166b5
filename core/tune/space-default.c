/* sedp — the search space of a pipeline without [tune] (sedp_tune_space_default): the runtime
 * keys that most often decide throughput and latency, and the cache sizes of the plugins that
 * have one. */
#include "space-private.h"

#include <math.h>
#include <string.h>

/* A runtime key's default range. */
typedef struct {
  const char *key;
  double low, high;
  gboolean log;
} DefaultRange;

/* Every stage's runtime keys, and their ranges (parallelism's top, 0: the machine's cores). */
static const DefaultRange stage_defaults[] = {
  {"parallelism", 1, 0, FALSE},
  {"batch", 1, 64, TRUE},
  {"batch_timeout_us", 0, 4000, TRUE},
};

/* The [pipeline] keys: the rows per frame, and how long an idle worker polls its channel before
 * it sleeps (its CPU is spent whether work comes or not: on the CTR example, eight workers
 * polling 50 µs after each frame). */
static const DefaultRange pipeline_defaults[] = {
  {"frame_rows", 16, 256, TRUE},
  {"idle_spin_us", 0, 1000, TRUE},
};

/* The cache sizes tuned by default. An option schema says no "this is a cache size"; until it
 * does, this list names them: the memory tier of cube_accessor's cached backend, and
 * query_cache's entries. Each is searched from 1/16 to 16 times its value, on a log scale. */
static const struct {
  const char *plugin, *option;
  const char *when_key, *when_value; /* only when the stage sets that option so */
} cache_sizes[] = {
  {"cube_accessor", "memory_entries", "backend", "cached"},
  {"query_cache", "capacity", NULL, NULL},
};

/* Adds @t over [low, high], widened to hold the pipeline's own value; a range of one value is
 * left out. */
static gboolean
add_default (SedpTuneSpace *space, const SedpPipelineSpec *spec, const SedpTuneTarget *t,
             double low, double high, gboolean log, GError **error)
{
  if (!isnan (t->start)) {
    low = MIN (low, t->start);
    high = MAX (high, t->start);
  }
  if (low >= high)
    return TRUE;
  g_autofree char *where = g_strdup_printf ("%s: the default space", spec->path);
  if (!sedp_tune_space_check_room (space, where, error))
    return FALSE;
  sedp_tune_space_add (space, t, SEDP_TUNE_INT, low, high, log, NULL);
  return TRUE;
}

static const char *
option_value (const SedpStageSpec *stage, const char *key)
{
  for (guint i = 0; stage->option_keys && stage->option_keys[i]; i++)
    if (strcmp (stage->option_keys[i], key) == 0)
      return stage->option_values[i];
  return NULL;
}

/* The stage's cache size, when its plugin is one of cache_sizes and it is on (above 0). */
static gboolean
add_cache_size (SedpTuneSpace *space, const SedpPipelineSpec *spec, SedpRegistry *registry,
                guint index, const char *where, GError **error)
{
  const SedpStageSpec *stage = spec->stages->pdata[index];
  for (guint c = 0; c < G_N_ELEMENTS (cache_sizes); c++) {
    if (strcmp (stage->plugin, cache_sizes[c].plugin) != 0 ||
        (cache_sizes[c].when_key &&
         g_strcmp0 (option_value (stage, cache_sizes[c].when_key), cache_sizes[c].when_value)))
      continue;
    SedpTuneTarget t;
    if (!sedp_tune_target_stage (spec, registry, index, cache_sizes[c].option, where, &t, error))
      return FALSE;
    gboolean ok = TRUE;
    if (t.option && t.start > 0) {
      double top = t.option->min < t.option->max ? t.option->max : G_MAXINT64;
      ok = add_default (space, spec, &t, MAX (1, floor (t.start / 16)), MIN (top, t.start * 16),
                        TRUE, error);
    }
    sedp_tune_target_clear (&t);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

static gboolean
add_stage (SedpTuneSpace *space, const SedpPipelineSpec *spec, SedpRegistry *registry,
           guint index, GError **error)
{
  g_autofree char *where = g_strdup_printf ("%s: the default space", spec->path);
  for (guint k = 0; k < G_N_ELEMENTS (stage_defaults); k++) {
    SedpTuneTarget t;
    if (!sedp_tune_target_stage (spec, registry, index, stage_defaults[k].key, where, &t, error))
      return FALSE;
    double high = stage_defaults[k].high ? stage_defaults[k].high : sedp_tune_space_cores ();
    gboolean ok = add_default (space, spec, &t, stage_defaults[k].low, high,
                               stage_defaults[k].log, error);
    sedp_tune_target_clear (&t);
    if (!ok)
      return FALSE;
  }
  return add_cache_size (space, spec, registry, index, where, error);
}

SedpTuneSpace *
sedp_tune_space_default (const SedpPipelineSpec *spec, SedpRegistry *registry, GError **error)
{
  g_return_val_if_fail (spec != NULL && registry != NULL, NULL);
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_new (spec);
  for (guint i = 0; i < spec->stages->len; i++)
    if (!add_stage (space, spec, registry, i, error))
      return NULL;
  for (guint k = 0; k < G_N_ELEMENTS (pipeline_defaults); k++) {
    SedpTuneTarget t;
    sedp_tune_target_pipeline (spec, pipeline_defaults[k].key, &t);
    if (!add_default (space, spec, &t, pipeline_defaults[k].low, pipeline_defaults[k].high,
                      pipeline_defaults[k].log, error))
      return NULL;
  }
  return g_steal_pointer (&space);
}
