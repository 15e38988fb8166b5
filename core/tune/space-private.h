/* sedp — the search space's insides, shared by space.c (the type, the box, the candidates),
 * space-target.c (what an address names), space-parse.c (the [tune] group) and
 * space-default.c (the default space). */
#pragma once

#include "space.h"

#include "../dsl/keys.h"

struct _SedpTuneSpace {
  GPtrArray *params;        /* SedpTuneParam*, in order */
  guint max_workers;
  guint n_stages;
  guint *parallelism;       /* each stage's parallelism as written, in file order */
  int *parallelism_param;   /* the parameter that tunes stage i's parallelism, or -1 */
};

/* What an address names in the pipeline: a runtime key of [pipeline] or of a stage, or an
 * option of a stage's plugin, and its value there. */
typedef struct {
  const SedpStageSpec *stage;    /* NULL: [pipeline] */
  guint stage_index;
  const SedpDslKey *runtime;     /* a runtime key, or NULL */
  const SedpOptionSpec *option;  /* an option of the stage's plugin, or NULL */
  const SedpOptionSpec *schema;  /* the plugin's options (NULL for a runtime key) */
  const char *plugin;            /* the stage's plugin, as written */
  double start;                  /* its value in the pipeline (an option: or the plugin's
                                  * default); NaN when it has none */
  char *start_word;              /* an enum option's value, or NULL */
} SedpTuneTarget;

/* A new space without parameters, max_workers the cores + 2. */
SedpTuneSpace *sedp_tune_space_new (const SedpPipelineSpec *spec);

/* The machine's cores, as sedp_tune_space_default() counts them. */
guint sedp_tune_space_cores (void);

/* Whether runtime key @key is one that `sedp tune` may set (space.c lists them, and why). */
gboolean sedp_tune_space_tunable (SedpDslGroup group, const char *key);

/* The tunable runtime keys of @group, ", "-separated, for messages. */
char *sedp_tune_space_tunable_names (SedpDslGroup group);

/* Fills @t for @key of stage @stage_index of @spec (a runtime key, an option of its plugin, or
 * neither: both NULL). Errors: SEDP_TUNE_SPACE_ERROR_PLUGIN, after @where ("FILE:LINE: [tune]
 * KEY"), when the plugin cannot be loaded; SEDP_DSL_ERROR's when the stage's own options are
 * invalid. */
gboolean sedp_tune_target_stage (const SedpPipelineSpec *spec, SedpRegistry *registry,
                                 guint stage_index, const char *key, const char *where,
                                 SedpTuneTarget *t, GError **error);

/* Fills @t for [pipeline] @key (runtime NULL when it is none). */
void sedp_tune_target_pipeline (const SedpPipelineSpec *spec, const char *key, SedpTuneTarget *t);

void sedp_tune_target_clear (SedpTuneTarget *t);

/* Adds the parameter @t over [low, high] (@choices: an enum's words, copied), starting from
 * t's value. Returns it, for the caller to complete (its line). */
SedpTuneParam *sedp_tune_space_add (SedpTuneSpace *space, const SedpTuneTarget *t,
                                    SedpTuneType type, double low, double high, gboolean log,
                                    char *const *choices);

/* A SEDP_TUNE_SPACE_ERROR_TOO_MANY error when @space is full, naming @where. */
gboolean sedp_tune_space_check_room (const SedpTuneSpace *space, const char *where,
                                     GError **error);
