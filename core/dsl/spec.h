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
  SEDP_DSL_ERROR_BRANCH,
  SEDP_DSL_ERROR_COLUMN,
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
  char **branch_max_inflight; /* a router's quotas, `BRANCH:N` (docs/routing.md; graph/routes.c) */
  char **branch_max_rate;  /* `BRANCH:REQUESTS_PER_S` */
  char **option_keys;      /* the plugin's own options, in file order */
  char **option_values;
  guint *option_lines;
  guint line;              /* line of the group header */
  GHashTable *key_lines;   /* runtime keys (plugin, after, scope, ...) -> their lines */
} SedpStageSpec;

/**
 * SedpModelSpec: one `[model NAME]` group: a model served from a repository
 * (docs/model-lifecycle.md). Stages name its parts as `@NAME` in their path options.
 */
typedef struct {
  char *name;
  char *repository;        /* absolute: the model's versions are in REPOSITORY/NAME/ */
  char *version;           /* "latest" or a version number, as written (NULL: latest) */
  gint64 pinned;           /* the pinned version, or 0 for the latest */
  char *public_key;        /* absolute path of the Ed25519 public key, or NULL (unsigned ok) */
  guint poll_interval_s;   /* the polling fallback's period */
  guint probation_s;       /* how long after a swap the guards are watched (0: none) */
  double max_error_rate;   /* failed items / items during probation above this: rollback (1: off) */
  double max_p99_over_previous; /* p99 over the previous version's above this: rollback (0: off) */
  double warmup_pause;     /* a reload's warm-up waits this many times each request's time */
  guint line;              /* line of the group header */
  GHashTable *key_lines;   /* the keys the file sets -> their lines */
} SedpModelSpec;

/**
 * SedpSignatureSpec: the `[signature NAME]` group (docs/compat.md): how the model API (TF Serving
 * REST, DeepRec protobuf) maps named arrays to the request's item columns and answers columns as
 * arrays. The entries are kept as written, `ARRAY[=COLUMN][:TYPE][[D1,D2,…]]`, and checked by
 * the protocol module (core/io/model-api.h) when the pipeline is served under the model API.
 */
typedef struct {
  char *name;
  char **inputs;           /* NULL-terminated; NULL when the key is absent (open inputs) */
  char **outputs;          /* NULL-terminated; NULL when absent (the pipeline's `outputs`) */
  guint line;              /* the group header's line */
  GHashTable *key_lines;   /* inputs, outputs -> their lines */
} SedpSignatureSpec;

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
  GPtrArray *models;       /* SedpModelSpec*, the [model NAME] groups in file order */
  SedpSignatureSpec *signature; /* (nullable) the [signature NAME] group (at most one) */
  GHashTable *key_lines;   /* the [pipeline] keys the file sets -> their lines (NULL: none) */
  char **tune_keys;        /* the [tune] group (docs/tuning.md), kept as written for `sedp
                            * tune`: its keys in file order (NULL-terminated; empty without) */
  char **tune_values;      /* their values, raw: GLib escapes and ${VAR} left as written */
  guint *tune_lines;       /* their lines */
  guint tune_line;         /* the line of the [tune] header (0: the file has none) */
} SedpPipelineSpec;


/* Reads and checks the syntax and the runtime's own keys of a pipeline file. Plugin options
 * are checked later, against the plugin's schema (sedp_graph_compile()). */
SEDP_API SedpPipelineSpec *sedp_pipeline_spec_load (const char *path, GError **error);

/* The same from text; @path names it in messages and anchors relative paths. */
SEDP_API SedpPipelineSpec *sedp_pipeline_spec_parse (const char *text, gsize length,
                                                     const char *path, GError **error);

SEDP_API void sedp_pipeline_spec_free (SedpPipelineSpec *spec);

/**
 * sedp_pipeline_text_for_model:
 * @name: the pipeline's name (the model's name in the model API)
 * @model_path: an ONNX model file; written absolute
 * @deadline_ms: the pipeline's deadline_ms (0: 1000)
 *
 * The implicit pipeline of a bare model (docs/compat.md): `[stage reader]` data_reader, then
 * `[stage model]` model_inference (item scope, batch 16 without waiting, two workers) writing
 * every output of the model under its own name. Nothing is checked here: parse it.
 *
 * Returns: (transfer full): the pipeline file's text. Thread-safe.
 */
SEDP_API char *sedp_pipeline_text_for_model (const char *name, const char *model_path,
                                             guint deadline_ms);

/* The same, parsed (its path: the model's absolute path); %NULL with @error as the parser's. */
SEDP_API SedpPipelineSpec *sedp_pipeline_spec_for_model (const char *name, const char *model_path,
                                                         guint deadline_ms, GError **error);


/* Replaces ${VAR} and ${VAR:-default} in @value from the environment. */
SEDP_API char *sedp_dsl_substitute (const char *value, GError **error);

/* The line of @key in @group of the file (0 when unknown), for messages. */
guint sedp_stage_spec_key_line (const SedpStageSpec *stage, const char *key);

/**
 * sedp_pipeline_spec_to_keyfile:
 * @spec: a parsed pipeline (or one built alike)
 * @error: %SEDP_DSL_ERROR_INVALID_VALUE when a value holds `${`: the parser would substitute it
 *   again, and pipeline files have no escape for a literal `${`
 *
 * Writes @spec as pipeline-file text that parses back, by sedp_pipeline_spec_parse() with
 * @spec's own path (so that relative paths resolve alike), to a spec that
 * sedp_pipeline_spec_equal() finds equal, and that `sedp check` accepts when @spec's own file
 * does. `[pipeline]` gets its `name` and every other runtime key that the file set or that
 * differs from its default; each `[stage NAME]` in order gets the runtime keys under the same
 * rule (keys.h's table, in its order), then its plugin's options in file order; the
 * `[signature NAME]` group, when the file had one, with its keys; `[tune]`, when
 * the file had one, is written back raw. Values are the spec's: after `${VAR}` substitution,
 * with GLib's escapes put back; relative paths of options stay as written, `warmup` is
 * absolute. Comments are not kept (sedp_pipeline_text_set() keeps them).
 *
 * Returns: (transfer full) (nullable): the text, or %NULL with @error set. Thread-safe for a
 * @spec no one changes meanwhile.
 */
SEDP_API char *sedp_pipeline_spec_to_keyfile (const SedpPipelineSpec *spec, GError **error);

/**
 * sedp_pipeline_spec_equal:
 * Returns: whether @a and @b say the same: path, folder, every runtime key of the pipeline and
 * of each stage (stages in the same order), the plugin options (keys and values, in the same
 * order), the `[signature NAME]` group (its name and entries, or that there is none) and the
 * `[tune]` group's keys and values (and whether there is one). Line numbers are
 * not compared. Thread-safe for specs no one changes meanwhile.
 */
SEDP_API gboolean sedp_pipeline_spec_equal (const SedpPipelineSpec *a, const SedpPipelineSpec *b);

/**
 * sedp_pipeline_text_set:
 * @text: a pipeline file's text
 * @group: a group name as written between the brackets ("pipeline", "stage model", "tune"); a
 *   stage's group is found however many blanks its header has after "stage"
 * @key: the key, as written left of '=' (no '=', brackets, line breaks or leading '#')
 * @value: the value as the parser should read it: GLib's escapes are added here (`${VAR}` in it
 *   is left for the parser to substitute)
 *
 * Sets @key of the first group @group of @text to @value, in place: when the key is there, only
 * its value's bytes change (the blanks around it, the line's ending, every other line stay);
 * when it is not, the line `KEY = VALUE` is inserted after the group's last key (after its
 * header when it has none); when the group is not there, a blank line, the header and the key
 * are appended at the end. New lines end as the text's first line does (`\n` or `\r\n`).
 * The text is not otherwise checked: parse the result to check it.
 *
 * Returns: (transfer full): the new text. Thread-safe.
 */
SEDP_API char *sedp_pipeline_text_set (const char *text, const char *group, const char *key,
                                       const char *value);

/**
 * sedp_dsl_escape_value:
 * Returns: (transfer full): @value written as a pipeline file's value, so that GKeyFile reads
 * it back unchanged: `\\`, `\n`, `\t`, `\r`, and `\s` for a blank at either end.
 */
SEDP_API char *sedp_dsl_escape_value (const char *value);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpPipelineSpec, sedp_pipeline_spec_free)

G_END_DECLS
