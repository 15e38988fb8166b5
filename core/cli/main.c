/* sedp — the host binary: checks, inspects and runs pipelines. */
#include "cli.h"
#include "../util/cpus.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
} Command;

static const Command commands[] = {
  {"bench", sedp_cmd_bench, "Closed- or open-loop load on a served URL or a pipeline file"},
  {"check", sedp_cmd_check, "Validate a pipeline file and print its compiled graph"},
  {"cube", sedp_cmd_cube, "Cubes of embeddings: build, info, verify, get, push"},
  {"inspect", sedp_cmd_inspect, "List plugins, or print one plugin's options"},
  {"model", sedp_cmd_model, "ONNX models: info, eval, bench, synth, split; bundles: pack, verify, keygen, sign"},
  {"run", sedp_cmd_run, "Score a file of requests offline"},
  {"serve", sedp_cmd_serve, "Serve pipelines over HTTP"},
  {"shed", sedp_cmd_shed, "The load shedder: train its pruning DNN"},
  {"tune", sedp_cmd_tune, "Tune a pipeline's settings by CMA-ES for the least CPU within a p99 SLO"},
};

void
sedp_cli_error (const char *subcommand, const char *message)
{
  fprintf (stderr, "sedp %s: %s\n", subcommand, message);
}

volatile sig_atomic_t sedp_cli_interrupted;

static void
on_signal (int sig)
{
  sedp_cli_interrupted = sig;
}

void
sedp_cli_catch_signals (gboolean on)
{
  if (on)
    sedp_cli_interrupted = 0;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on ? on_signal : SIG_DFL;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
}

gboolean
sedp_cli_parse (const char *subcommand, const char *params, const char *summary,
                const GOptionEntry *entries, int *argc, char ***argv)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (params);
  g_autofree char *prog = g_strdup_printf ("sedp %s", subcommand);
  g_set_prgname (prog);
  g_option_context_set_summary (ctx, summary);
  if (entries)
    g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error)) {
    sedp_cli_error (subcommand, error->message);
    return FALSE;
  }
  return TRUE;
}

static void
group_usage (FILE *f, const char *group, const char *description, const char *footer,
             const SedpCliCommand *commands, guint n)
{
  fprintf (f, "Usage: sedp %s COMMAND [OPTION…]\n\n%s\n\nCommands:\n", group, description);
  for (guint i = 0; i < n; i++)
    fprintf (f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf (f, "\nRun 'sedp %s COMMAND --help' for a command's options.%s%s\n", group,
           footer ? " " : "", footer ? footer : "");
}

int
sedp_cli_dispatch (const char *group, const char *description, const char *footer,
                   const SedpCliCommand *commands, guint n, int argc, char **argv)
{
  if (argc < 2) {
    group_usage (stderr, group, description, footer, commands, n);
    return 2;
  }
  const char *sub = argv[1];
  if (strcmp (sub, "--help") == 0 || strcmp (sub, "-h") == 0 || strcmp (sub, "help") == 0) {
    group_usage (stdout, group, description, footer, commands, n);
    return 0;
  }
  for (guint i = 0; i < n; i++)
    if (strcmp (sub, commands[i].name) == 0)
      return commands[i].run (argc - 1, argv + 1);
  fprintf (stderr, "sedp %s: unknown command '%s'\n\n", group, sub);
  group_usage (stderr, group, description, footer, commands, n);
  return 2;
}

static void
usage (FILE *out)
{
  fprintf (out, "Usage: sedp [--version] [--help] COMMAND [ARGS…]\n\n"
                "sedp serves deep-learning recommendation models as a staged event-driven "
                "pipeline.\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\nRun 'sedp COMMAND --help' for a command's options.\n"
                "Plugins are searched in SEDP_PLUGIN_PATH, then in %s.\n",
           SEDP_PLUGINDIR);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  if (argc < 2) {
    usage (stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp (cmd, "--version") == 0 || strcmp (cmd, "-V") == 0) {
    printf ("sedp %s (stage ABI %d.%d)\n", SEDP_VERSION, SEDP_ABI_MAJOR, SEDP_ABI_MINOR);
    return 0;
  }
  if (strcmp (cmd, "--help") == 0 || strcmp (cmd, "-h") == 0 || strcmp (cmd, "help") == 0) {
    usage (stdout);
    return 0;
  }
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (cmd, commands[i].name) == 0)
      return commands[i].run (argc - 1, argv + 1);
  fprintf (stderr, "sedp: unknown command '%s'\n\n", cmd);
  usage (stderr);
  return 2;
}

gboolean
sedp_cli_apply_cpus (const char *subcommand, const char *list)
{
  if (list == NULL)
    return TRUE;
  guint n = 0;
  g_autoptr (GError) error = NULL;
  g_autofree guint *cpus = sedp_cpu_list_parse (list, &n, &error);
  if (cpus == NULL || !sedp_cpu_list_check (cpus, n, &error) ||
      !sedp_cpu_list_pin_thread (cpus, n, &error)) {
    g_autofree char *msg = g_strdup_printf ("--cpus: %s", error->message);
    sedp_cli_error (subcommand, msg);
    return FALSE;
  }
  return TRUE;
}
