/* sedp check — validate a pipeline file and print the compiled graph. */
#include "cli.h"
#include "../io/warmup.h"

#include <stdio.h>

int
sedp_cmd_check (int argc, char **argv)
{
  gboolean dot = FALSE;
  const GOptionEntry entries[] = {
    {"dot", 0, 0, G_OPTION_ARG_NONE, &dot, "Print the graph in Graphviz dot instead", NULL},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("check", "PIPELINE",
                       "Parses PIPELINE, resolves its plugins, validates every option against the "
                       "plugins' schemas and checks the graph (unknown stages, cycles, "
                       "unreachable stages, no sink), and reads the warm-up requests of a "
                       "[pipeline] warmup key. Exits non-zero with one message naming the file, "
                       "group and key on the first error.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("check", "expected one PIPELINE file (see --help)");
    return 2;
  }
  g_auto (GStrv) path = sedp_registry_default_path ();
  g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) path);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpGraph) graph = sedp_graph_load (argv[1], registry, &error);
  g_autoptr (GPtrArray) warmup = NULL;
  if (graph && graph->spec->warmup)
    warmup = sedp_warmup_load (graph->spec, &error);
  if (graph == NULL || error) {
    sedp_cli_error ("check", error->message);
    return 1;
  }
  g_autoptr (GString) out = g_string_new (NULL);
  if (dot)
    sedp_graph_write_dot (graph, out);
  else
    sedp_graph_describe (graph, out);
  fputs (out->str, stdout);
  return 0;
}
