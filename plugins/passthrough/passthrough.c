/* passthrough — a stage that hands its frames on unchanged. Used to measure the runtime's own
 * cost per stage hop, and as a source for pipelines whose requests arrive decoded. */
#include <sedp/sedp.h>

static gpointer
passthrough_create (SedpStageContext *ctx, GError **error)
{
  return g_new0 (char, 1); /* no state; a non-NULL instance */
}

static gboolean
passthrough_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                     GError **error)
{
  return TRUE;
}

static void
passthrough_destroy (gpointer instance)
{
  g_free (instance);
}

static const SedpOptionSpec passthrough_options[] = {SEDP_OPTION_END};

SEDP_STAGE_DEFINE (.name = "passthrough", .version = SEDP_VERSION,
                   .description = "Hands every frame on unchanged (for tests, benchmarks and "
                                  "sources of pre-decoded requests)",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = passthrough_options,
                   .create = passthrough_create, .process = passthrough_process,
                   .destroy = passthrough_destroy);
