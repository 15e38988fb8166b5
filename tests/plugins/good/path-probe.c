/* path_probe — a DSL fixture: a required PATH option `file`, and a STRING option `expect`.
 * create() fails unless the resolved `file` equals `expect` (when `expect` is set), so a test can
 * check how the core resolved a relative path through the public pipeline API only. */
#include <sedp/sedp.h>

#include <string.h>

static gpointer
probe_create (SedpStageContext *ctx, GError **error)
{
  const char *file = sedp_stage_context_get_string (ctx, "file");
  const char *expect = sedp_stage_context_get_string (ctx, "expect");
  if (expect && g_strcmp0 (file, expect) != 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "file resolved to '%s', expected '%s'", file ? file : "(null)", expect);
    return NULL;
  }
  return g_new0 (char, 1);
}

static gboolean
probe_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
               GError **error)
{
  return TRUE;
}

static void
probe_destroy (gpointer instance)
{
  g_free (instance);
}

static const SedpOptionSpec probe_options[] = {
  SEDP_OPTION_PATH_SPEC ("file", NULL, TRUE, "A file, relative to the pipeline file's folder"),
  SEDP_OPTION_STRING_SPEC ("expect", NULL, "The absolute path `file` must resolve to"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "path_probe", .version = "1.0",
                   .description = "Test fixture: checks how a PATH option was resolved",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = probe_options,
                   .create = probe_create, .process = probe_process, .destroy = probe_destroy);
