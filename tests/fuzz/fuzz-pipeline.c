/* sedp fuzz target `pipeline` — pipeline files as `sedp check` reads them: the keyfile DSL
 * (core/dsl/spec.c: syntax, the runtime's keys, ${VAR} substitution, CPU lists, the warm-up
 * file), then the graph (core/graph/graph.c: plugins resolved in the build's plugin folder, every
 * option checked against its plugin's schema, the DAG's checks) and its descriptions. The
 * pipeline is not created: its plugins' instances would load models and cubes.
 *
 * The file is "parsed" as FUZZDIR/fuzz.pipeline, where FUZZDIR holds warmup.jsonl (valid
 * warm-up requests) for `warmup = warmup.jsonl`; ${SEDP_FUZZ_SPIN} is "5" and ${SEDP_FUZZ_EMPTY}
 * is "". A plugin given by an absolute path is not looked up (it would be dlopened). */
#include "fuzz-common.h"

#include "graph/graph.h"
#include "io/warmup.h"

#include <string.h>

#ifndef SEDP_FUZZ_PLUGIN_DIR
#error "SEDP_FUZZ_PLUGIN_DIR: the build's plugin folder"
#endif

static SedpRegistry *registry;
static char *pipeline_path;

static const char warmup[] =
    "{\"request_id\": \"w1\", \"user\": {\"id\": 1}, \"items\": [{\"id\": 10}, {\"id\": 11}]}\n"
    "# a comment\n"
    "{\"items\": [{\"id\": 12, \"features\": {\"ctr\": 0.5}}]}\n";

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  const char *dirs[] = {SEDP_FUZZ_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  g_setenv ("SEDP_FUZZ_SPIN", "5", TRUE);
  g_setenv ("SEDP_FUZZ_EMPTY", "", TRUE);
  const char *dir = fuzz_tmpdir ();
  g_autofree char *warmup_path = g_build_filename (dir, "warmup.jsonl", NULL);
  if (!g_file_set_contents (warmup_path, warmup, -1, NULL))
    g_error ("fuzz: cannot write %s", warmup_path);
  pipeline_path = g_build_filename (dir, "fuzz.pipeline", NULL);
  return 0;
}

/* TRUE when a stage names its plugin by an absolute path. */
static gboolean
has_absolute_plugin (const SedpPipelineSpec *spec)
{
  for (guint i = 0; i < spec->stages->len; i++) {
    const SedpStageSpec *stage = spec->stages->pdata[i];
    if (stage->plugin && stage->plugin[0] == '/')
      return TRUE;
  }
  return FALSE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* As sedp_pipeline_spec_load() passes a file: its bytes, then a NUL past the end. */
  g_autofree char *text = g_malloc (size + 1);
  memcpy (text, data, size);
  text[size] = '\0';
  GError *error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, size, pipeline_path, &error);
  if (spec == NULL) {
    g_assert (error != NULL);
    fuzz_refused ("parse", error);
    return 0;
  }
  if (has_absolute_plugin (spec)) {
    sedp_pipeline_spec_free (spec);
    return 0;
  }
  SedpGraph *graph = sedp_graph_compile (spec, registry, &error);
  if (graph == NULL) {
    g_assert (error != NULL);
    fuzz_refused ("compile", error);
    return 0;
  }
  /* sedp check reads the warm-up file after the graph: the parse only records its path */
  if (graph->spec->warmup) {
    GPtrArray *records = sedp_warmup_load (graph->spec, &error);
    if (records == NULL) {
      g_assert (error != NULL);
      fuzz_refused ("warmup", error);
      sedp_graph_free (graph);
      return 0;
    }
    g_ptr_array_unref (records);
  }
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_graph_describe (graph, out);
  sedp_graph_write_dot (graph, out);
  sedp_graph_free (graph);
  return 0;
}
