/* sedp — a pipeline's warm-up requests (the `warmup` key of docs/pipeline-dsl.md), read and
 * checked by the protocol module. */
#pragma once

#include "../dsl/spec.h"

G_BEGIN_DECLS

/** SedpWarmupRecord: one warm-up request: a PredictRequest as JSON text, and its line. */
typedef struct {
  GBytes *payload;
  guint line;
} SedpWarmupRecord;

/* Reads the warm-up file of @spec (JSON Lines of PredictRequest; blank and '#' lines skipped)
 * and decodes every record with the protocol's decoder, to check it. Parsing a pipeline only
 * records the file's path: sedp check and sedp serve call this. Returns its records
 * (SedpWarmupRecord*, in file order; at least one), or NULL with @error naming the pipeline
 * file's line and, for a bad record, the warm-up file's line. @spec must have a warmup. */
SEDP_API GPtrArray *sedp_warmup_load (const SedpPipelineSpec *spec, GError **error);

G_END_DECLS
