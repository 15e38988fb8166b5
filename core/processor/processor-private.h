/* sedp — libsedp_processor.so's internals: the model_config it honours, the model it serves. */
#pragma once

#include "../io/model-api.h"
#include "../loader/registry.h"
#include "../runtime/pipeline.h"

#include <gio/gio.h>

G_BEGIN_DECLS

/**
 * ProcessorConfig:
 * What libsedp_processor.so takes from DeepRec's model_config JSON (docs/compat.md); 0 and %NULL
 * mean "not set". Strings owned.
 */
typedef struct {
  guint session_num;        /* model_inference `instances` */
  const char *select;       /* "mod" or "rr" (static), from select_session_policy */
  guint inter_op_threads;   /* the model stages' `parallelism` */
  char *signature_name;
  char *warmup_file_name;   /* as written */
} ProcessorConfig;

/* Parses @json (nullable, "" = {}) into @config, logging one line per key it ignores. FALSE with
 * @error (G_IO_ERROR_INVALID_DATA) naming the key, its value and what it must be, or the JSON
 * parser's message with its position. */
gboolean processor_config_parse (const char *json, ProcessorConfig *config, GError **error);
void processor_config_clear (ProcessorConfig *config);

/**
 * Processor:
 * One initialize()d model: its started pipeline and the signature requests are checked against.
 * Read-only after initialize(), but for @next_id (atomic).
 */
typedef struct {
  char *entry;              /* model_entry, absolute */
  char *model_path;         /* what get_serving_model_info() answers */
  SedpRegistry *registry;
  SedpPipeline *pipeline;
  SedpModelApiSignature *signature;
  char *debug;              /* process()'s answer to an empty input (JSON) */
  gint next_id;             /* request ids, atomic */
} Processor;

/* Builds and starts the pipeline of @entry with @config applied, and the signature (renamed to
 * config->signature_name where the entry declares none). NULL with @error. */
Processor *processor_model_new (const char *entry, const ProcessorConfig *config, GError **error);
void processor_model_free (Processor *p);

/* Runs the warm-up request (a serialized PredictRequest, DeepRec's warmup file) through @p.
 * FALSE with @error naming the file. */
gboolean processor_warmup (Processor *p, const char *path, GError **error);

/**
 * processor_run:
 * @bodies: @n serialized PredictRequests; @sizes their sizes
 * @answers: (out caller-allocates): @n answers (transfer full), set only when TRUE is returned
 *
 * Decodes all, submits all before waiting for any, encodes all. FALSE with @error naming the
 * request ("request I of N: " when @n > 1) at the first failure; nothing is answered then.
 */
gboolean processor_run (Processor *p, const guint8 *const *bodies, const gsize *sizes, guint n,
                        GBytes **answers, GError **error);

/* The debug string: the signature as DeepRec's JSON, with the pipeline's name and its stages
 * (name, plugin, parallelism, options as applied). */
char *processor_describe (const Processor *p);

G_END_DECLS
