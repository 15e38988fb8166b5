/* sedp inspect — list plugins, or print one plugin's options (like gst-inspect). */
#include "cli.h"

#include <stdio.h>

static void
print_plugin (const SedpPluginInfo *info)
{
  const SedpStageDescriptor *d = info->desc;
  printf ("Plugin: %s\n  Version:     %s\n  Description: %s\n  License:     %s\n"
          "  Scope:       %s (default)\n  ABI:         %u.%u\n  File:        %s\n\nOptions:\n",
          d->name, d->version ? d->version : "?", d->description ? d->description : "",
          d->license ? d->license : "?", d->scope == SEDP_SCOPE_REQUEST ? "request" : "item",
          d->abi_major, d->abi_minor, info->path);
  guint n = 0;
  for (const SedpOptionSpec *o = d->options; o && o->name; o++, n++) {
    printf ("  %-20s %-7s", o->name, sedp_option_type_to_string (o->type));
    if (o->required)
      printf (" required");
    else if (o->default_value)
      printf (" default: %s", o->default_value);
    if ((o->type == SEDP_OPTION_INT || o->type == SEDP_OPTION_DOUBLE) && o->min < o->max)
      printf ("  range: %g..%g", o->min, o->max);
    if (o->type == SEDP_OPTION_ENUM)
      printf ("  one of: %s", o->choices);
    printf ("\n      %s\n", o->help ? o->help : "");
  }
  if (n == 0)
    printf ("  (none)\n");
  printf ("\nRuntime keys of every stage: plugin, after, scope, parallelism, batch, "
          "batch_timeout_us, queue_capacity\n");
}

int
sedp_cmd_inspect (int argc, char **argv)
{
  if (!sedp_cli_parse ("inspect", "[PLUGIN]",
                       "Without PLUGIN, lists the plugins on the plugin path (SEDP_PLUGIN_PATH, "
                       "then the installed folder). With PLUGIN (a name or a module file), "
                       "prints its description and its options with types, defaults and help.",
                       NULL, &argc, &argv))
    return 2;
  if (argc > 2) {
    sedp_cli_error ("inspect", "expected at most one PLUGIN (see --help)");
    return 2;
  }
  g_auto (GStrv) path = sedp_registry_default_path ();
  g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) path);
  if (argc == 2) {
    g_autoptr (GError) error = NULL;
    g_autofree char *cwd = g_get_current_dir ();
    const SedpPluginInfo *info = sedp_registry_lookup (registry, argv[1], cwd, &error);
    if (info == NULL) {
      sedp_cli_error ("inspect", error->message);
      return 1;
    }
    print_plugin (info);
    return 0;
  }
  g_autoptr (GPtrArray) list = sedp_registry_list (registry);
  for (guint i = 0; i < list->len; i++) {
    const SedpPluginInfo *info = list->pdata[i];
    printf ("%-20s %s\n", info->name, info->desc->description ? info->desc->description : "");
  }
  printf ("\n%u plugins on %s\n", list->len, sedp_registry_describe_path (registry));
  GPtrArray *broken = sedp_registry_get_broken (registry);
  for (guint i = 0; i < broken->len; i++)
    fprintf (stderr, "warning: %s\n", (const char *) broken->pdata[i]);
  return 0;
}
