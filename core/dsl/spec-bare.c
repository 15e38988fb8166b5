/* sedp — the implicit pipeline of a bare model (`sedp serve --model NAME=FILE.onnx`,
 * libsedp_processor.so): data_reader, then model_inference with the engine's batching
 * (docs/compat.md "A bare model"). */
#include "spec.h"

#include <string.h>

/* What the bare model's model stage sets: batch what is queued, never wait for more (Triton's
 * dynamic batcher with max_queue_delay 0); two workers so that a request's decode and answer
 * overlap another's model run. */
#define BARE_BATCH 16
#define BARE_PARALLELISM 2

char *
sedp_pipeline_text_for_model (const char *name, const char *model_path, guint deadline_ms)
{
  g_autofree char *absolute = g_canonicalize_filename (model_path, NULL);
  g_autofree char *path = sedp_dsl_escape_value (absolute);
  g_autofree char *escaped_name = sedp_dsl_escape_value (name);
  return g_strdup_printf ("# the implicit pipeline of a bare model (docs/compat.md)\n"
                          "[pipeline]\n"
                          "name = %s\n"
                          "deadline_ms = %u\n"
                          "\n"
                          "[stage reader]\n"
                          "plugin = data_reader\n"
                          "\n"
                          "[stage model]\n"
                          "plugin = model_inference\n"
                          "after = reader\n"
                          "scope = item\n"
                          "batch = %u\n"
                          "parallelism = %u\n"
                          "model = %s\n",
                          escaped_name, deadline_ms ? deadline_ms : 1000, BARE_BATCH,
                          BARE_PARALLELISM, path);
}

SedpPipelineSpec *
sedp_pipeline_spec_for_model (const char *name, const char *model_path, guint deadline_ms,
                              GError **error)
{
  g_autofree char *text = sedp_pipeline_text_for_model (name, model_path, deadline_ms);
  g_autofree char *absolute = g_canonicalize_filename (model_path, NULL);
  return sedp_pipeline_spec_parse (text, strlen (text), absolute, error);
}
