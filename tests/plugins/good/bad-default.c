/* bad_default — a DSL fixture whose schema declares an INT option with a default that is not an
 * integer: using it in a pipeline must fail with SEDP_DSL_ERROR_PLUGIN. */
#include <sedp/sedp.h>

static gpointer
bad_create (SedpStageContext *ctx, GError **error)
{
  return g_new0 (char, 1);
}

static gboolean
bad_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
             GError **error)
{
  return TRUE;
}

static void
bad_destroy (gpointer instance)
{
  g_free (instance);
}

static const SedpOptionSpec bad_options[] = {
  SEDP_OPTION_INT_SPEC ("count", "many", 0, 10, "A count whose default is not an integer"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "bad_default", .version = "1.0",
                   .description = "Test fixture: an option default that does not parse",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = bad_options,
                   .create = bad_create, .process = bad_process, .destroy = bad_destroy);
