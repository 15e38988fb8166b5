/* sedp — the stage plugin interface: descriptor, option schema, lifecycle, events. */
#pragma once

#include <sedp/frame.h>
#include <sedp/macros.h>
#include <sedp/metrics.h>
#include <sedp/request.h>
#include <sedp/version.h>

G_BEGIN_DECLS

/**
 * SEDP_STAGE_ERROR:
 * Error domain for errors a stage reports about its own work. Codes are #SedpStageError.
 */
#define SEDP_STAGE_ERROR (sedp_stage_error_quark ())
SEDP_API GQuark sedp_stage_error_quark (void);

/**
 * SedpStageError:
 * @SEDP_STAGE_ERROR_INVALID_INPUT: the frame lacks a column, or a value is out of range.
 * @SEDP_STAGE_ERROR_CONFIG: an option value is unusable (raised from `create`).
 * @SEDP_STAGE_ERROR_UNAVAILABLE: a resource (file, server) could not be reached.
 * @SEDP_STAGE_ERROR_INTERNAL: anything else.
 */
typedef enum {
  SEDP_STAGE_ERROR_INVALID_INPUT,
  SEDP_STAGE_ERROR_CONFIG,
  SEDP_STAGE_ERROR_UNAVAILABLE,
  SEDP_STAGE_ERROR_INTERNAL,
} SedpStageError;

/**
 * SedpScope:
 * @SEDP_SCOPE_REQUEST: the stage runs once per request, on the request frame (one row).
 * @SEDP_SCOPE_ITEM: the stage runs on every item frame of the request.
 *
 * Where a stage runs. A request-scope result that flows into an item-scope stage is broadcast
 * into every item frame of its request; item frames that flow into a request-scope stage are
 * gathered (concatenated, in item order) into one frame first.
 */
typedef enum {
  SEDP_SCOPE_REQUEST = 1,
  SEDP_SCOPE_ITEM,
} SedpScope;

/**
 * SedpOptionType:
 * @SEDP_OPTION_BOOL: true/false.
 * @SEDP_OPTION_INT: a 64-bit integer, range-checked against min/max when min < max.
 * @SEDP_OPTION_DOUBLE: a number, range-checked against min/max when min < max.
 * @SEDP_OPTION_STRING: any string.
 * @SEDP_OPTION_PATH: a file path; a relative path is resolved against the pipeline file's folder.
 * @SEDP_OPTION_ENUM: one of the words in `choices` ("rr|mod").
 * @SEDP_OPTION_STRING_LIST: a comma-separated list of strings.
 *
 * The type of a stage option.
 */
typedef enum {
  SEDP_OPTION_BOOL = 1,
  SEDP_OPTION_INT,
  SEDP_OPTION_DOUBLE,
  SEDP_OPTION_STRING,
  SEDP_OPTION_PATH,
  SEDP_OPTION_ENUM,
  SEDP_OPTION_STRING_LIST,
} SedpOptionType;

/**
 * SedpOptionSpec:
 * @name: the key in the pipeline file ([a-z0-9_], not one of the runtime's keys)
 * @type: its type
 * @default_value: (nullable): the default, written as in a pipeline file; %NULL for none
 * @required: whether the pipeline must set it
 * @min: lowest allowed value of INT and DOUBLE options (checked when @min < @max)
 * @max: highest allowed value
 * @choices: the words of an ENUM option, separated by '|'
 * @help: one sentence for `sedp inspect` and the generated reference
 *
 * One entry of a plugin's option schema: a static array ended by SEDP_OPTION_END. The core
 * validates a stage's options against it before any stage is created: unknown keys, wrong
 * types, values out of range and missing required options are errors naming the pipeline file,
 * the stage group and the key.
 */
typedef struct {
  const char *name;
  SedpOptionType type;
  const char *default_value;
  gboolean required;
  double min;
  double max;
  const char *choices;
  const char *help;
  gpointer _reserved[4];
} SedpOptionSpec;

/** SEDP_OPTION_BOOL_SPEC: a BOOL option with a default ("true"/"false"). */
#define SEDP_OPTION_BOOL_SPEC(n, def, h) {.name = (n), .type = SEDP_OPTION_BOOL, .default_value = (def), .help = (h)}
/** SEDP_OPTION_INT_SPEC: an INT option with a default and an inclusive range. */
#define SEDP_OPTION_INT_SPEC(n, def, lo, hi, h) \
  {.name = (n), .type = SEDP_OPTION_INT, .default_value = (def), .min = (lo), .max = (hi), .help = (h)}
/** SEDP_OPTION_DOUBLE_SPEC: a DOUBLE option with a default and an inclusive range. */
#define SEDP_OPTION_DOUBLE_SPEC(n, def, lo, hi, h) \
  {.name = (n), .type = SEDP_OPTION_DOUBLE, .default_value = (def), .min = (lo), .max = (hi), .help = (h)}
/** SEDP_OPTION_STRING_SPEC: a STRING option with a default (may be NULL). */
#define SEDP_OPTION_STRING_SPEC(n, def, h) {.name = (n), .type = SEDP_OPTION_STRING, .default_value = (def), .help = (h)}
/** SEDP_OPTION_PATH_SPEC: a PATH option; @req says whether it is required. */
#define SEDP_OPTION_PATH_SPEC(n, def, req, h) \
  {.name = (n), .type = SEDP_OPTION_PATH, .default_value = (def), .required = (req), .help = (h)}
/** SEDP_OPTION_ENUM_SPEC: an ENUM option of the '|'-separated @ch with a default. */
#define SEDP_OPTION_ENUM_SPEC(n, def, ch, h) \
  {.name = (n), .type = SEDP_OPTION_ENUM, .default_value = (def), .choices = (ch), .help = (h)}
/** SEDP_OPTION_LIST_SPEC: a STRING_LIST option with a default (may be NULL). */
#define SEDP_OPTION_LIST_SPEC(n, def, h) {.name = (n), .type = SEDP_OPTION_STRING_LIST, .default_value = (def), .help = (h)}
/** SEDP_OPTION_END: ends an option schema. */
#define SEDP_OPTION_END {.name = NULL}

/**
 * SedpStageContext:
 * What the runtime tells a stage instance about itself: its name in the pipeline, its scope,
 * its validated options, and where to register metrics. Valid from `create` until `destroy`
 * returns. Thread-safe for reading.
 */
typedef struct _SedpStageContext SedpStageContext;

/** sedp_stage_context_get_name: Returns: (transfer none): the stage's name in the pipeline. */
SEDP_API const char *sedp_stage_context_get_name (const SedpStageContext *ctx);

/** sedp_stage_context_get_scope: Returns: the scope the stage runs at. */
SEDP_API SedpScope sedp_stage_context_get_scope (const SedpStageContext *ctx);

/** sedp_stage_context_get_parallelism: Returns: the number of workers that call `process`. */
SEDP_API guint sedp_stage_context_get_parallelism (const SedpStageContext *ctx);

/** sedp_stage_context_get_batch: Returns: the most events one `process` call receives. */
SEDP_API guint sedp_stage_context_get_batch (const SedpStageContext *ctx);

/**
 * sedp_stage_context_get_bool:
 * Returns: the value of the BOOL option @name (its default when the pipeline does not set it).
 * Asking for an option the schema does not declare, or with the wrong type, is a programming
 * error: it logs a critical and returns %FALSE.
 */
SEDP_API gboolean sedp_stage_context_get_bool (const SedpStageContext *ctx, const char *name);

/** sedp_stage_context_get_int: Like sedp_stage_context_get_bool() for INT options (0 if unset). */
SEDP_API gint64 sedp_stage_context_get_int (const SedpStageContext *ctx, const char *name);

/** sedp_stage_context_get_double: Like sedp_stage_context_get_bool() for DOUBLE options. */
SEDP_API double sedp_stage_context_get_double (const SedpStageContext *ctx, const char *name);

/**
 * sedp_stage_context_get_string:
 * Returns: (transfer none) (nullable): the value of a STRING, PATH (absolute after resolution)
 * or ENUM option, or %NULL when it has no value and no default.
 */
SEDP_API const char *sedp_stage_context_get_string (const SedpStageContext *ctx, const char *name);

/**
 * sedp_stage_context_get_strv:
 * Returns: (transfer none) (nullable): the items of a STRING_LIST option (%NULL-terminated).
 */
SEDP_API const char *const *sedp_stage_context_get_strv (const SedpStageContext *ctx,
                                                         const char *name);

/**
 * sedp_stage_context_add_counter:
 * @name: the metric's name ([a-z0-9_]); it is published as `sedp_NAME` with a label
 *   `stage="STAGE"`, so several stages of the same plugin share one metric family
 * @help: one sentence
 *
 * Registers a counter. Call from `create`.
 *
 * Returns: (transfer none): the counter, owned by the runtime, valid until `destroy` returns.
 */
SEDP_API SedpCounter *sedp_stage_context_add_counter (SedpStageContext *ctx, const char *name,
                                                      const char *help);

/**
 * sedp_stage_context_add_degraded_counter:
 * @name, @help: as sedp_stage_context_add_counter()
 *
 * Registers a counter of *degraded* work: answers the stage gave with stand-ins instead of what
 * it exists to give, while the request still succeeds (a lookup whose backend failed, answered
 * with default embeddings; items shed under load). Count what the stage can count (lookups,
 * items); the unit is the stage's own, and any increase says that answers were degraded.
 *
 * Published as any counter. Tools that must not take a degraded answer for a good one read the
 * sum of a pipeline's degraded counters: `sedp tune` holds a candidate infeasible when it rose
 * during its measure (docs/tuning.md). A stage that never degrades its answers registers none.
 * Call from `create`; thread-safety and ownership as sedp_stage_context_add_counter().
 *
 * Returns: (transfer none): the counter, owned by the runtime, valid until `destroy` returns.
 */
SEDP_API SedpCounter *sedp_stage_context_add_degraded_counter (SedpStageContext *ctx,
                                                               const char *name,
                                                               const char *help);

/**
 * sedp_stage_context_add_histogram:
 * @bounds: (array length=n_bounds): ascending upper bounds of the buckets (copied)
 *
 * Registers a histogram. Call from `create`.
 *
 * Returns: (transfer none): the histogram, owned by the runtime.
 */
SEDP_API SedpHistogram *sedp_stage_context_add_histogram (SedpStageContext *ctx, const char *name,
                                                          const char *help, const double *bounds,
                                                          guint n_bounds);

/**
 * SedpEvent:
 * One frame of one request, as handed to `process`: the frame, the request it belongs to and
 * the frame's index (SEDP_FRAME_INDEX_REQUEST for the request frame). Borrowed for the call.
 */
typedef struct _SedpEvent SedpEvent;

/** SEDP_FRAME_INDEX_REQUEST: the frame index of a request frame. */
#define SEDP_FRAME_INDEX_REQUEST (-1)

/**
 * sedp_event_get_frame:
 * Returns: (transfer none): the event's frame, writable by the caller during `process`.
 */
SEDP_API SedpFrame *sedp_event_get_frame (SedpEvent *event);

/** sedp_event_get_request: Returns: (transfer none): the request the event belongs to. */
SEDP_API SedpRequest *sedp_event_get_request (SedpEvent *event);

/**
 * sedp_event_get_frame_index:
 * Returns: the index of the item frame within its request (0, 1, …), or
 * SEDP_FRAME_INDEX_REQUEST.
 */
SEDP_API int sedp_event_get_frame_index (const SedpEvent *event);

/**
 * sedp_event_fail:
 * @error: what went wrong (copied)
 *
 * Fails this event only: its rows are reported as failed with @error's message and the stage's
 * name; for a request frame the whole request fails. Other events of the batch go on.
 */
SEDP_API void sedp_event_fail (SedpEvent *event, const GError *error);

/**
 * sedp_event_drop:
 * Sheds the whole frame: its rows are reported as dropped and later stages do not see it.
 */
SEDP_API void sedp_event_drop (SedpEvent *event);

/**
 * sedp_event_set_items:
 * @items: (transfer full): one row per candidate item of the request
 *
 * For the source stage only (the stage without `after`, which runs at request scope): hands the
 * runtime the request's decoded items, which it cuts into item frames of at most `frame_rows`
 * rows for the item-scope stages. Replaces items the request arrived with.
 */
SEDP_API void sedp_event_set_items (SedpEvent *event, SedpFrame *items);

/** SEDP_MAX_BRANCHES: the most branches a router may declare. */
#define SEDP_MAX_BRANCHES 64

/**
 * sedp_event_route:
 * @branch: the index of a branch in the list the stage's `branches` returned
 *
 * For a router's `process` (docs/routing.md): sends @event down @branch as well. Call it once
 * per branch taken; the outputs labelled with a branch not taken get a *skip* (no frame, no
 * queue, no work) so that joins and sinks after them do not wait. An event routed nowhere goes
 * only down the router's unlabelled outputs (`after = STAGE`). An index out of range is a
 * programming error (a critical, ignored). On a failed or dropped event it has no effect: the
 * frame goes on as a tombstone down every output. Not thread-safe for one event (it is the
 * calling worker's during `process`).
 */
SEDP_API void sedp_event_route (SedpEvent *event, guint branch);

/**
 * sedp_event_get_routes:
 * Returns: the branches @event was routed to so far, bit @branch set for each.
 */
SEDP_API guint64 sedp_event_get_routes (const SedpEvent *event);

/**
 * SedpStageDescriptor:
 * @abi_major: SEDP_ABI_MAJOR the plugin was built with (set by SEDP_STAGE_DEFINE())
 * @abi_minor: SEDP_ABI_MINOR the plugin was built with
 * @name: the plugin's name, as written in `plugin =` ([a-z0-9_]); unique on the plugin path
 * @version: the plugin's own version
 * @description: one sentence for `sedp inspect`
 * @license: an SPDX license identifier
 * @scope: the scope used when the pipeline does not set `scope`
 * @options: the option schema, ended by SEDP_OPTION_END (may be %NULL for none)
 * @create: makes an instance from validated options; returns %NULL and sets @error on failure
 *   (the pipeline then does not start, and the error names the stage). Called once per stage.
 * @process: processes a batch of 1..`batch` events, possibly of different requests. Called
 *   from the stage's `parallelism` worker threads at once, so the instance must be safe to use
 *   from several threads; @worker (0..parallelism-1) identifies the calling worker, for
 *   per-worker scratch space. Report single rows with sedp_frame_fail_row()/drop_row(), single
 *   events with sedp_event_fail()/drop(). Returning %FALSE with @error fails the batch: the
 *   runtime then runs each event of the batch alone, so that only the requests that fail on
 *   their own get the error — `process` must therefore not have side effects that cannot be
 *   repeated.
 * @destroy: frees the instance, after the last `process` call returned.
 * @reload: (nullable): applies new options without stopping the stage (optional).
 * @stats: (nullable): reports instantaneous values (cache size, model version) (optional).
 * @branches: (nullable): makes the stage a *router* (docs/routing.md): returns the names of its
 *   branches (a new %NULL-terminated array the caller frees; names `[a-z0-9_]`, 1–64
 *   characters, distinct, at most 64), computed from the validated options of @ctx alone;
 *   %NULL without @error when this configuration of the plugin routes nothing (the stage is then
 *   not a router), or %NULL with @error (an error in an option, naming it). Called once per stage before `create`,
 *   by `sedp check` too, from one thread: it must not open files or servers. Stages take a branch
 *   with `after = STAGE:BRANCH`; `process` routes each event with sedp_event_route(). Since ABI
 *   1.2.
 * @writes: (nullable): the columns the stage writes into the frames it processes, computed from
 *   the options of @ctx alone (a new %NULL-terminated array), %NULL without @error when they are
 *   not known before the stage starts, or %NULL with @error. Read by `sedp check` for the
 *   columns later stages declare they need (@needs). Same rules as @branches. Since ABI 1.2.
 * @needs: (nullable): the columns the stage needs that an earlier stage must declare it writes,
 *   each written `OPTION=COLUMN` (the option that names it, for the error that `sedp check`
 *   reports when no earlier stage writes COLUMN); a new %NULL-terminated array, or %NULL with
 *   @error. Same rules as @branches. Since ABI 1.2.
 *
 * What a plugin exports: one constant descriptor, declared with SEDP_STAGE_DEFINE().
 */
typedef struct {
  guint32 abi_major;
  guint32 abi_minor;
  const char *name;
  const char *version;
  const char *description;
  const char *license;
  SedpScope scope;
  const SedpOptionSpec *options;
  gpointer (*create) (SedpStageContext *ctx, GError **error);
  gboolean (*process) (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                       GError **error);
  void (*destroy) (gpointer instance);
  gboolean (*reload) (gpointer instance, SedpStageContext *ctx, GError **error);
  void (*stats) (gpointer instance, SedpStats *stats);
  char **(*branches) (const SedpStageContext *ctx, GError **error);
  char **(*writes) (const SedpStageContext *ctx, GError **error);
  char **(*needs) (const SedpStageContext *ctx, GError **error);
  gpointer _reserved[SEDP_PADDING - 3];
} SedpStageDescriptor;

/**
 * SEDP_STAGE_DESCRIPTOR_SYMBOL:
 * The name of the symbol the loader looks up in a plugin module.
 */
#define SEDP_STAGE_DESCRIPTOR_SYMBOL "sedp_stage_descriptor"

/**
 * SEDP_STAGE_DEFINE:
 * @...: designated initializers of the remaining SedpStageDescriptor fields
 *
 * Declares the plugin's exported descriptor, stamped with the ABI version of these headers:
 * |[
 * SEDP_STAGE_DEFINE (.name = "upper", .version = "1.0", .description = "…",
 *                    .scope = SEDP_SCOPE_ITEM, .options = upper_options,
 *                    .create = upper_create, .process = upper_process,
 *                    .destroy = upper_destroy);
 * ]|
 */
#define SEDP_STAGE_DEFINE(...)                                                 \
  SEDP_PLUGIN_EXPORT extern const SedpStageDescriptor sedp_stage_descriptor;   \
  const SedpStageDescriptor sedp_stage_descriptor = {                          \
      .abi_major = SEDP_ABI_MAJOR, .abi_minor = SEDP_ABI_MINOR, __VA_ARGS__}

G_END_DECLS
