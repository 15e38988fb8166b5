/* sedp — the search space of `sedp tune` (docs/tuning.md, "The search space"): which values of a
 * pipeline are tuned, over which ranges, from the `[tune]` group of a pipeline file (or of a
 * file holding only that group) or by default; the space as the optimiser's box (cmaes.h), and
 * a point of the box written back as pipeline text (through sedp_pipeline_text_set()). */
#pragma once

#include "../dsl/spec.h"
#include "../loader/registry.h"
#include "cmaes.h"

G_BEGIN_DECLS

/**
 * SEDP_TUNE_SPACE_ERROR:
 * Errors in a search space, found before any run. The message names the file, `[tune]`, the
 * line and the key as written, the value given and the limit it breaks, and the fix. Codes are
 * #SedpTuneSpaceError.
 */
#define SEDP_TUNE_SPACE_ERROR (sedp_tune_space_error_quark ())
SEDP_API GQuark sedp_tune_space_error_quark (void);

typedef enum {
  SEDP_TUNE_SPACE_ERROR_FILE,          /* a space file that holds more than a [tune] group */
  SEDP_TUNE_SPACE_ERROR_ADDRESS,       /* a key that is not stage.NAME.KEY, stage.*.KEY,
                                        * pipeline.KEY or max_workers */
  SEDP_TUNE_SPACE_ERROR_UNKNOWN_STAGE, /* stage.NAME.KEY of a stage the pipeline lacks */
  SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY,   /* neither a runtime key nor an option of the plugin */
  SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE,   /* a key that exists but is not tuned (plugin, cpus,
                                        * deadline_ms, a string option, ...) */
  SEDP_TUNE_SPACE_ERROR_SYNTAX,        /* a value that is not TYPE [RANGE] [log] */
  SEDP_TUNE_SPACE_ERROR_TYPE,          /* an unknown type, or one the key does not have */
  SEDP_TUNE_SPACE_ERROR_RANGE,         /* an empty range: low ≥ high (with log, or equal
                                        * logarithms of low and high) */
  SEDP_TUNE_SPACE_ERROR_LIMIT,         /* a range beyond the runtime's or the plugin's limits */
  SEDP_TUNE_SPACE_ERROR_LOG,           /* log with low ≤ 0 (real) or low < 0 (int) */
  SEDP_TUNE_SPACE_ERROR_ENUM,          /* an enum list of fewer than two words, a word twice,
                                        * or a word the option does not have */
  SEDP_TUNE_SPACE_ERROR_MAX_WORKERS,   /* max_workers not an integer from 1 to 1048576 */
  SEDP_TUNE_SPACE_ERROR_TOO_MANY,      /* more than %SEDP_CMAES_MAX_DIM parameters */
  SEDP_TUNE_SPACE_ERROR_EMPTY,         /* a [tune] group without parameters */
  SEDP_TUNE_SPACE_ERROR_PLUGIN,        /* a stage's plugin cannot be loaded to read its options */
} SedpTuneSpaceError;

/** SedpTuneType: how a parameter varies. */
typedef enum {
  SEDP_TUNE_INT,  /* an integer in [low, high] */
  SEDP_TUNE_REAL, /* a number in [low, high] */
  SEDP_TUNE_BOOL, /* false or true (coordinate 0 or 1) */
  SEDP_TUNE_ENUM, /* one of the words of choices (coordinate: the word's index) */
} SedpTuneType;

/**
 * SedpTuneParam:
 * @address: the parameter, "stage.NAME.KEY" or "pipeline.KEY" (a wildcard's, expanded)
 * @group: the pipeline file's group it sets: "stage NAME" or "pipeline"
 * @stage: (nullable): the stage's name; %NULL for the pipeline's keys
 * @key: the key it sets
 * @type: its type
 * @low: the lowest value (int, real); bool 0; enum 0
 * @high: the highest (int, real); bool 1; enum the number of words − 1
 * @log: searched on a log scale: log(value) for a real, log(1 + value) for an int
 * @choices: (nullable): enum: the words, in the order written; %NULL otherwise
 * @start: its value in the pipeline as given — the optimiser's start (an option the pipeline
 *   does not set: the plugin's default; bool 0 or 1; enum the word's index in @choices); NaN
 *   when there is none (no default, or a word not among @choices)
 * @runtime: whether @key is one of the runtime's keys (else an option of the stage's plugin)
 * @line: the line of the `[tune]` entry it comes from; 0 in the default space
 *
 * One coordinate of the space; owned by the space, read-only.
 */
typedef struct {
  char *address;
  char *group;
  char *stage;
  char *key;
  SedpTuneType type;
  double low;
  double high;
  gboolean log;
  char **choices;
  double start;
  gboolean runtime;
  guint line;
} SedpTuneParam;

/**
 * SedpTuneSpace:
 * The parameters of a search space, in the order of the `[tune]` entries (a wildcard's in the
 * stages' file order), and the worker limit. Immutable once made: safe to read from several
 * threads.
 */
typedef struct _SedpTuneSpace SedpTuneSpace;

/**
 * sedp_tune_space_parse:
 * @spec: the pipeline to tune
 * @tune: the spec holding the `[tune]` group: @spec itself, or a space file's
 *   (sedp_tune_space_load()); its path names the file in messages
 * @registry: where the stages' plugins are found, to check options against their schemas (as
 *   sedp_graph_compile() does)
 *
 * Checks every entry of @tune's `[tune]` group against @spec: the address (the stage exists,
 * the key is a tunable runtime key or an int, double, bool or enum option of the stage's
 * plugin), the type (the key's own), the range (not empty, within the runtime's limits of
 * keys.h or the option's), `log`, the enum words (two or more, each once, each one of the
 * option's). `${VAR}` in values is substituted first. A specific address overrides a wildcard
 * for its stage, whatever their order. @spec's own options are validated too (they give the
 * start point): their errors are %SEDP_DSL_ERROR's. Reads @spec and @tune only; looks plugins
 * up in @registry, which no other thread may use meanwhile.
 *
 * Returns: (transfer full) (nullable): the space, or %NULL with @error set; free it with
 * sedp_tune_space_free().
 */
SEDP_API SedpTuneSpace *sedp_tune_space_parse (const SedpPipelineSpec *spec,
                                               const SedpPipelineSpec *tune,
                                               SedpRegistry *registry, GError **error);

/**
 * sedp_tune_space_load:
 * @path: a file holding only a `[tune]` group (`sedp tune --space FILE`)
 *
 * Reads @path with the pipeline parser (its syntax errors are %SEDP_DSL_ERROR's), refuses any
 * other group in it (%SEDP_TUNE_SPACE_ERROR_FILE), then as sedp_tune_space_parse().
 */
SEDP_API SedpTuneSpace *sedp_tune_space_load (const SedpPipelineSpec *spec, const char *path,
                                              SedpRegistry *registry, GError **error);

/**
 * sedp_tune_space_default:
 * The space for a pipeline without `[tune]`: every stage's parallelism from 1 to the machine's
 * cores, batch 1..64 (log) and batch_timeout_us 0..4000 (log); the pipeline's frame_rows
 * 16..256 (log); the cache sizes of the plugins that have one (space-default.c lists them).
 * Each range is widened to hold the pipeline's own value, and one that would hold a single
 * value (parallelism on one core) is left out. max_workers: the pipeline's workers as written
 * plus the machine's cores.
 *
 * Returns: (transfer full) (nullable): the space, or %NULL with @error set (a plugin that
 * cannot be loaded, invalid options, more than %SEDP_CMAES_MAX_DIM parameters). As
 * sedp_tune_space_parse(), @registry is used by no other thread meanwhile.
 */
SEDP_API SedpTuneSpace *sedp_tune_space_default (const SedpPipelineSpec *spec,
                                                 SedpRegistry *registry, GError **error);

/** sedp_tune_space_free: Frees @space; %NULL is ignored. */
SEDP_API void sedp_tune_space_free (SedpTuneSpace *space);

/** sedp_tune_space_n_params: Returns: how many parameters (coordinates) @space has, ≥ 1. */
SEDP_API guint sedp_tune_space_n_params (const SedpTuneSpace *space);

/** sedp_tune_space_param: Returns: (transfer none): parameter @i, below the count. */
SEDP_API const SedpTuneParam *sedp_tune_space_param (const SedpTuneSpace *space, guint i);

/**
 * sedp_tune_space_max_workers:
 * Returns: the most worker threads all stages together may have (`max_workers`; by default the
 * pipeline's workers as written plus the machine's cores): a hard constraint of every candidate (sedp_tune_space_apply()).
 */
SEDP_API guint sedp_tune_space_max_workers (const SedpTuneSpace *space);

/**
 * sedp_tune_space_to_cmaes:
 * @opt: options made by sedp_cmaes_options_init(), or a caller's
 *
 * Sets @opt's n, lower, upper, integer and x0 from @space; leaves the rest (method, sigma0,
 * seed, n_constraints: count the worker limit among the constraints). Coordinate i is
 * parameter i: an int [low, high] integer, or with log the real [log(1 + low), log(1 + high)];
 * a real [low, high], or with log [log(low), log(high)]; a bool integer [0, 1]; an enum
 * integer [0, k − 1]. x0 is the start, moved into the range when the pipeline's value lies
 * outside it, NaN (the centre) when there is none.
 */
SEDP_API void sedp_tune_space_to_cmaes (const SedpTuneSpace *space, SedpCmaesOptions *opt);

/**
 * sedp_tune_space_value:
 * @coordinate: parameter @i's coordinate, as sedp_cmaes_ask() gives it
 *
 * Returns: (transfer full): the value it stands for, as a pipeline file writes it: an int
 * rounded (after exp(x) − 1 with log) into [low, high]; a real into [low, high] with the fewest
 * digits (6 to 17) that stay within it; "true" or "false"; an enum's word.
 */
SEDP_API char *sedp_tune_space_value (const SedpTuneSpace *space, guint i, double coordinate);

/**
 * sedp_tune_space_apply:
 * @x: (array): a point of the box, one coordinate per parameter
 * @text: the pipeline file's text (as read: the edit keeps its comments and every other value)
 * @violation: (out) (optional): how many worker threads the candidate has beyond max_workers,
 *   ≥ 0 (0: within): the sum of every stage's parallelism, tuned or as written, minus
 *   max_workers
 *
 * Returns: (transfer full): @text with every parameter whose value at @x differs from the
 * pipeline's as given set to it, in place (sedp_pipeline_text_set()); a key the file lacks is
 * added to its group. A parameter at its given value is left as written (or unset), so that
 * the tuned file differs from the input only where the tuner changed something.
 */
SEDP_API char *sedp_tune_space_apply (const SedpTuneSpace *space, const double *x,
                                      const char *text, double *violation);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpTuneSpace, sedp_tune_space_free)

G_END_DECLS
