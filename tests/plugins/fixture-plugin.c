/* A configurable fixture plugin for the loader suite. The build compiles it several times with
 * different macros; the descriptor is written out by hand (not with SEDP_STAGE_DEFINE) so that
 * the ABI fields can be set to values the loader must refuse.
 *
 *   FIXTURE_NAME        the descriptor's name (required)
 *   FIXTURE_VERSION     the descriptor's version (default "1.0")
 *   FIXTURE_ABI_MAJOR   default SEDP_ABI_MAJOR
 *   FIXTURE_ABI_MINOR   default SEDP_ABI_MINOR
 *   FIXTURE_NO_PROCESS  leave .process NULL
 *   FIXTURE_SCOPE       default SEDP_SCOPE_REQUEST
 *   FIXTURE_OPTION      declare one INT option with this name (e.g. a runtime key, refused)
 */
#include <sedp/sedp.h>

#ifndef FIXTURE_NAME
#error "FIXTURE_NAME must be defined"
#endif
#ifndef FIXTURE_VERSION
#define FIXTURE_VERSION "1.0"
#endif
#ifndef FIXTURE_ABI_MAJOR
#define FIXTURE_ABI_MAJOR SEDP_ABI_MAJOR
#endif
#ifndef FIXTURE_ABI_MINOR
#define FIXTURE_ABI_MINOR SEDP_ABI_MINOR
#endif
#ifndef FIXTURE_SCOPE
#define FIXTURE_SCOPE SEDP_SCOPE_REQUEST
#endif

static gpointer
fixture_create (SedpStageContext *ctx, GError **error)
{
  return g_new0 (char, 1);
}

#ifndef FIXTURE_NO_PROCESS
static gboolean
fixture_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                 GError **error)
{
  return TRUE;
}
#endif

static void
fixture_destroy (gpointer instance)
{
  g_free (instance);
}

#ifdef FIXTURE_OPTION
static const SedpOptionSpec fixture_options[] = {
  SEDP_OPTION_INT_SPEC (FIXTURE_OPTION, "1", 0, 10, "An option the loader must refuse"),
  SEDP_OPTION_END,
};
#define FIXTURE_OPTIONS fixture_options
#else
#define FIXTURE_OPTIONS NULL
#endif

SEDP_PLUGIN_EXPORT extern const SedpStageDescriptor sedp_stage_descriptor;
const SedpStageDescriptor sedp_stage_descriptor = {
  .abi_major = FIXTURE_ABI_MAJOR,
  .abi_minor = FIXTURE_ABI_MINOR,
  .name = FIXTURE_NAME,
  .version = FIXTURE_VERSION,
  .description = "Loader test fixture " FIXTURE_NAME,
  .license = "MIT",
  .scope = FIXTURE_SCOPE,
  .options = FIXTURE_OPTIONS,
  .create = fixture_create,
#ifndef FIXTURE_NO_PROCESS
  .process = fixture_process,
#endif
  .destroy = fixture_destroy,
};
