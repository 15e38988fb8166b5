/* sedp — the model API's signature of a pipeline: its `[signature NAME]` group's entries
 * (docs/pipeline-dsl.md), or the default one (open inputs, the pipeline's outputs). */
#include "model-api.h"

#define DEFAULT_SIGNATURE "serving_default"

/* Adds every entry of @entries; on a bad one, @error names the file, the line, the group and the
 * key around the entry's own message. */
static gboolean
add_entries (SedpModelApiSignature *sig, const SedpPipelineSpec *spec, const char *key,
             char *const *entries, GError **error)
{
  const SedpSignatureSpec *g = spec->signature;
  for (guint i = 0; entries && entries[i]; i++) {
    g_autoptr (GError) local = NULL;
    if (sedp_model_api_signature_add_spec (sig, g_str_equal (key, "outputs"), entries[i], &local))
      continue;
    guint line = GPOINTER_TO_UINT (g_hash_table_lookup (g->key_lines, key));
    g_set_error (error, local->domain, local->code, "%s:%u: [signature %s] %s: %s", spec->path,
                 line, g->name, key, local->message);
    return FALSE;
  }
  return TRUE;
}

/* The pipeline's `outputs`, each answered under its own name with the column's own type. */
static void
add_pipeline_outputs (SedpModelApiSignature *sig, const SedpPipelineSpec *spec)
{
  for (guint i = 0; spec->outputs && spec->outputs[i]; i++) {
    SedpModelApiTensor t = {.name = spec->outputs[i], .column = spec->outputs[i]};
    sedp_model_api_signature_add_output (sig, &t);
  }
}

SedpModelApiSignature *
sedp_model_api_signature_for_pipeline (const SedpPipelineSpec *spec, GError **error)
{
  const SedpSignatureSpec *g = spec->signature;
  g_autoptr (SedpModelApiSignature) sig =
      sedp_model_api_signature_new (g ? g->name : DEFAULT_SIGNATURE);
  sig->open_inputs = g == NULL || g->inputs == NULL;
  if (g && !add_entries (sig, spec, "inputs", g->inputs, error))
    return NULL;
  if (g && g->outputs) {
    if (!add_entries (sig, spec, "outputs", g->outputs, error))
      return NULL;
  } else {
    add_pipeline_outputs (sig, spec);
  }
  return g_steal_pointer (&sig);
}
