/* sedp fuzz target `manifest` — a model bundle's manifest.json (docs/model-lifecycle.md, "The
 * manifest"), read by sedp_bundle_manifest_parse() (core/bundle/manifest-parse.c). What the API
 * promises is asserted: a refusal is a SEDP_BUNDLE_ERROR; an accepted manifest written back by
 * sedp_bundle_manifest_to_string() parses again, and its text is then a fixed point (the writer
 * and the reader agree on every member, escape and number). */
#include "fuzz-common.h"

#include "bundle/bundle.h"

#include <string.h>

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;
  SedpBundleManifest *m = sedp_bundle_manifest_parse ((const char *) data, size, "fuzz", &error);
  if (m == NULL) {
    g_assert (error != NULL && error->domain == SEDP_BUNDLE_ERROR);
    fuzz_refused ("parse", error);
    return 0;
  }
  char *text = sedp_bundle_manifest_to_string (m);
  SedpBundleManifest *back = sedp_bundle_manifest_parse (text, strlen (text), "fuzz", &error);
  g_assert_no_error (error);
  char *again = sedp_bundle_manifest_to_string (back);
  g_assert_cmpstr (text, ==, again);
  g_free (again);
  g_free (text);
  sedp_bundle_manifest_free (back);
  sedp_bundle_manifest_free (m);
  return 0;
}
