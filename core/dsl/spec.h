/* sedp — the pipeline file (GKeyFile DSL) parsed into a specification. */
#pragma once

#include <sedp/sedp.h>

G_BEGIN_DECLS

/**
 * SEDP_DSL_ERROR:
 * Errors in pipeline files; the message always names the file, and the group and key when
 * there is one. Codes are #SedpDslError.
 */
#define SEDP_DSL_ERROR (sedp_dsl_error_quark ())
SEDP_API GQuark sedp_dsl_error_quark (void);

typedef enum {
  SEDP_DSL_ERROR_IO,
  SEDP_DSL_ERROR_SYNTAX,
  SEDP_DSL_ERROR_UNKNOWN_GROUP,
  SEDP_DSL_ERROR_DUPLICATE,
  SEDP_DSL_ERROR_UNKNOWN_KEY,
  SEDP_DSL_ERROR_MISSING_KEY,
  SEDP_DSL_ERROR_INVALID_VALUE,
  SEDP_DSL_ERROR_ENVIRONMENT,
  SEDP_DSL_ERROR_PLUGIN,
  SEDP_DSL_ERROR_UNKNOWN_STAGE,
  SEDP_DSL_ERROR_NO_SOURCE,
  SEDP_DSL_ERROR_UNREACHABLE,
  SEDP_DSL_ERROR_NO_SINK,
  SEDP_DSL_ERROR_CYCLE,
  SEDP_DSL_ERROR_SCOPE,
} SedpDslError;

/** SedpMode: how a pipeline runs: one stage per thread pool (staged) or run-to-completion per
 * request in one thread (sync, the legacy design kept for comparison). */
typedef enum {
  SEDP_MODE_STAGED = 0,
  SEDP_MODE_SYNC,
} SedpMode;

/** SedpStageSpec: one `[stage NAME]` group, as written (after ${VAR} substitution). */
typedef struct {
  char *name;
  char *plugin;
  char **after;            /* NULL-terminated, possibly empty */
  SedpScope scope;         /* 0 when the file does not set it */
  guint parallelism;
  guint batch;
  guint batch_timeout_us;
  guint queue_capacity;
  char **drop_columns;     /* NULL-terminated glob patterns (possibly empty): columns removed
                            * from every frame once the stage has processed it */
  guint *cpus;             /* the CPUs the stage's workers run on (n_cpus of them; 0: the
                            * pipeline's `cpus`, else anywhere) */
  guint n_cpus;
  char **option_keys;      /* the plugin's own options, in file order */
  char **option_values;
  guint *option_lines;
  guint line;              /* line of the group header */
  GHashTable *key_lines;   /* runtime keys (plugin, after, scope, ...) -> their lines */
} SedpStageSpec;

/** SedpPipelineSpec: a parsed pipeline file. */
typedef struct {
  char *path;              /* as given */
  char *dir;               /* absolute folder, for relative paths */
  char *name;
  guint deadline_ms;
  guint frame_rows;
  SedpMode mode;
  guint sync_workers;      /* 0: the sum of the stages' parallelism */
  guint idle_spin_us;
  guint *cpus;             /* default CPUs of every stage's workers (n_cpus; 0: anywhere) */
  guint n_cpus;
  char **outputs;          /* NULL-terminated; empty: every float32 column of the sinks */
  char *warmup;            /* absolute path of the warm-up requests (sedp serve), or NULL */
  guint warmup_line;       /* the line of the warmup key (0 when unset) */
  guint warmup_repeat;     /* how many times sedp serve sends the warm-up file (default 1) */
  GPtrArray *stages;       /* SedpStageSpec*, in file order */
} SedpPipelineSpec;

/** SedpWarmupRecord: one warm-up request: a PredictRequest as JSON text, and its line. */
typedef struct {
  GBytes *payload;
  guint line;
} SedpWarmupRecord;

/* Reads and checks the syntax and the runtime's own keys of a pipeline file. Plugin options
 * are checked later, against the plugin's schema (sedp_graph_compile()). */
SEDP_API SedpPipelineSpec *sedp_pipeline_spec_load (const char *path, GError **error);

/* The same from text; @path names it in messages and anchors relative paths. */
SEDP_API SedpPipelineSpec *sedp_pipeline_spec_parse (const char *text, gsize length,
                                                     const char *path, GError **error);

SEDP_API void sedp_pipeline_spec_free (SedpPipelineSpec *spec);

/* Reads the warm-up file of @spec (JSON Lines of PredictRequest; blank and '#' lines skipped)
 * and decodes every record with the protocol's decoder, to check it. Returns its records
 * (SedpWarmupRecord*, in file order; at least one), or NULL with @error naming the pipeline
 * file's line and, for a bad record, the warm-up file's line. @spec must have a warmup. */
SEDP_API GPtrArray *sedp_pipeline_spec_load_warmup (const SedpPipelineSpec *spec, GError **error);

/* Replaces ${VAR} and ${VAR:-default} in @value from the environment. */
SEDP_API char *sedp_dsl_substitute (const char *value, GError **error);

/* The line of @key in @group of the file (0 when unknown), for messages. */
guint sedp_stage_spec_key_line (const SedpStageSpec *stage, const char *key);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpPipelineSpec, sedp_pipeline_spec_free)

G_END_DECLS
