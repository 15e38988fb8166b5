/* sedp tune — offline auto-tuning of a pipeline by CMA-ES (docs/tuning.md, "The command"): the
 * options, their checks, the signals, and the flow: load the pipeline, its search space and the
 * workload; prepare the journal; check the workload; search; choose; write the tuned pipeline,
 * the table, the report and the plot (on a signal: the report and the plot, and how to resume). */
#include "cmd-tune.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Prints "sedp tune: MESSAGE" (formatted) and returns FALSE. */
G_GNUC_PRINTF (1, 2) static gboolean
tune_error (const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *m = g_strdup_vprintf (format, ap);
  va_end (ap);
  sedp_cli_error ("tune", m);
  return FALSE;
}

static void
tune_clear (Tune *t)
{
  TuneOptions *o = &t->o;
  g_free (o->requests_path), g_free (o->format), g_free (o->output);
  g_free (o->space_path), g_free (o->method_name), g_free (o->report);
  g_free (o->journal), g_free (o->plot), g_free (o->maximize);
  tune_journal_close (t);
  g_clear_pointer (&t->recorded, g_ptr_array_unref);
  g_free (t->journal_path), g_free (t->command);
  tune_eval_clear (&t->baseline);
  g_clear_pointer (&t->evals, g_ptr_array_unref);
  g_clear_pointer (&t->finalists, g_ptr_array_unref);
  for (guint i = 0; i < G_N_ELEMENTS (t->rep); i++)
    sedp_tune_repeated_clear (&t->rep[i]);
  g_clear_pointer (&t->order, g_array_unref);
  g_clear_pointer (&t->workload, sedp_workload_unref);
  g_clear_pointer (&t->space, sedp_tune_space_free);
  g_clear_pointer (&t->spec, sedp_pipeline_spec_free);
  g_clear_pointer (&t->registry, sedp_registry_free);
  g_free (t->text);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Tune, tune_clear)

/* ---- options ---- */

static gboolean
parse_options (TuneOptions *o, int *argc, char ***argv)
{
  const GOptionEntry entries[] = {
    {"requests", 'r', 0, G_OPTION_ARG_FILENAME, &o->requests_path, "JSON Lines file of predict requests, sent in turn and cycled (default: one built-in request of 8 items)", "FILE"},
    {"format", 'f', 0, G_OPTION_ARG_STRING, &o->format, "Payload encoding: json (default) or protobuf", "json|protobuf"},
    {"rate", 0, 0, G_OPTION_ARG_DOUBLE, &o->rate, "Required: the open loop's requests per second every candidate is measured at (with --maximize throughput: optional, where each capacity search starts)", "R"},
    {"maximize", 0, 0, G_OPTION_ARG_STRING, &o->maximize, "throughput: the highest rate each candidate serves within --slo-p99-ms, instead of the least CPU per request at --rate", "throughput"},
    {"slo-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &o->slo_p99_ms, "Required: the p99 latency every candidate must keep, in milliseconds", "S"},
    {"budget-evals", 0, 0, G_OPTION_ARG_INT, &o->budget_evals, "Stop after N candidates (this or --budget-s is required)", "N"},
    {"budget-s", 0, 0, G_OPTION_ARG_DOUBLE, &o->budget_s, "Stop asking for candidates after T seconds of search", "T"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output, "Required: where to write the tuned pipeline", "FILE"},
    {"space", 0, 0, G_OPTION_ARG_FILENAME, &o->space_path, "A file holding only a [tune] group (default: the pipeline's [tune], else the default space)", "FILE"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Seed of the optimiser and of the arrivals (default 1)", "N"},
    {"warmup-s", 0, 0, G_OPTION_ARG_DOUBLE, &o->warmup_s, "Seconds of unmeasured load before each measure (default 1)", "S"},
    {"measure-s", 0, 0, G_OPTION_ARG_DOUBLE, &o->measure_s, "Seconds each candidate is measured (default 5)", "S"},
    {"method", 0, 0, G_OPTION_ARG_STRING, &o->method_name, "population (default), one-plus-one, or random (uniform random search, a baseline)", "METHOD"},
    {"report", 0, 0, G_OPTION_ARG_FILENAME, &o->report, "Write every evaluation, the baseline and the choice as JSON", "FILE.json"},
    {"plot", 0, 0, G_OPTION_ARG_FILENAME, &o->plot, "Write an SVG plot of the CPU per request (or capacity) of every evaluation", "FILE.svg"},
    {"journal", 0, 0, G_OPTION_ARG_FILENAME, &o->journal, "The journal of the evaluations, appended as each finishes (default: the -o FILE + .journal)", "FILE"},
    {"resume", 0, 0, G_OPTION_ARG_NONE, &o->resume, "Continue the tune recorded in the journal: its evaluations are replayed, not measured again", NULL},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "No progress on stderr", NULL},
    {NULL},
  };
  return sedp_cli_parse (
    "tune", "PIPELINE",
    "Tunes PIPELINE's runtime keys and plugin options (its [tune] group, --space, or the default "
    "space) by CMA-ES for the least CPU per request at --rate within --slo-p99-ms (or with "
    "--maximize throughput the highest rate within it), measuring each candidate in process, and "
    "writes the tuned pipeline to -o. See docs/tuning.md.",
    entries, argc, argv);
}

/* The options that say how much to search. */
static gboolean
check_budget (const TuneOptions *o)
{
  gboolean evals = o->budget_evals != -1, secs = !isnan (o->budget_s);
  if (evals == secs)
    return tune_error ("%s: give exactly one of --budget-evals N (candidates) or --budget-s T "
                       "(seconds of search)", evals ? "both budgets given" : "no budget given");
  if (evals && (o->budget_evals < 1 || o->budget_evals > 1000000))
    return tune_error ("--budget-evals %d: must be from 1 to 1000000 candidates", o->budget_evals);
  if (secs && !(o->budget_s > 0 && o->budget_s <= 30 * 86400.0))
    return tune_error ("--budget-s %g: must be more than 0 and at most 2592000 seconds (30 days)",
                       o->budget_s);
  return TRUE;
}

/* The options of every measure. */
static gboolean
check_measure (const TuneOptions *o)
{
  if (isnan (o->rate) && !o->throughput)
    return tune_error ("--rate R is required: the requests per second each candidate is measured "
                       "at (or give --maximize throughput to tune for each candidate's capacity)");
  if (!isnan (o->rate) && !(o->rate > 0 && o->rate <= 1e6))
    return tune_error ("--rate %g: must be more than 0 and at most 1000000 requests per second", o->rate);
  if (isnan (o->slo_p99_ms))
    return tune_error ("--slo-p99-ms S is required: the p99 latency, in ms, every candidate must keep");
  if (!(o->slo_p99_ms > 0 && isfinite (o->slo_p99_ms)))
    return tune_error ("--slo-p99-ms %g: must be a number of milliseconds above 0", o->slo_p99_ms);
  if (!(o->warmup_s >= 0 && o->warmup_s <= 3600))
    return tune_error ("--warmup-s %g: must be from 0 to 3600 seconds", o->warmup_s);
  if (!(o->measure_s > 0 && o->measure_s <= 86400))
    return tune_error ("--measure-s %g: must be more than 0 and at most 86400 seconds", o->measure_s);
  if (o->seed < 0)
    return tune_error ("--seed %" G_GINT64_FORMAT ": must be 0 or more", o->seed);
  return TRUE;
}

/* --maximize: absent (the least CPU per request at --rate) or throughput. */
static gboolean
check_mode (TuneOptions *o)
{
  if (o->maximize && strcmp (o->maximize, "throughput") != 0)
    return tune_error ("--maximize '%s': the one mode is throughput (the highest rate each "
                       "candidate serves within --slo-p99-ms); leave --maximize out to tune for "
                       "the least CPU per request at --rate", o->maximize);
  o->throughput = o->maximize != NULL;
  return TRUE;
}

/* The options naming files and words. */
static gboolean
check_words (TuneOptions *o, int argc)
{
  if (argc != 2)
    return tune_error ("expected one PIPELINE file, got %d arguments (usage: sedp tune PIPELINE "
                       "--rate R --slo-p99-ms S --budget-evals N -o tuned.pipeline)", argc - 1);
  if (o->output == NULL)
    return tune_error ("-o FILE is required: where to write the tuned pipeline");
  if (o->format && strcmp (o->format, "json") != 0 && strcmp (o->format, "protobuf") != 0)
    return tune_error ("--format '%s': must be json or protobuf", o->format);
  o->encoding = o->format && strcmp (o->format, "protobuf") == 0 ? SEDP_WORKLOAD_PROTOBUF
                                                                 : SEDP_WORKLOAD_JSON;
  if (o->method_name == NULL || strcmp (o->method_name, "population") == 0)
    o->method = SEDP_CMAES_POPULATION;
  else if (strcmp (o->method_name, "one-plus-one") == 0)
    o->method = SEDP_CMAES_ONE_PLUS_ONE;
  else if (strcmp (o->method_name, "random") == 0)
    o->method = SEDP_CMAES_RANDOM;
  else
    return tune_error ("--method '%s': must be population, one-plus-one or random", o->method_name);
  return TRUE;
}

const char *
tune_method_name (SedpCmaesMethod method)
{
  switch (method) {
  case SEDP_CMAES_ONE_PLUS_ONE:
    return "one-plus-one";
  case SEDP_CMAES_RANDOM:
    return "random";
  default:
    return "population";
  }
}

/* Whether @arg needs quoting in a POSIX shell. */
static gboolean
needs_quotes (const char *arg)
{
  if (*arg == '\0')
    return TRUE;
  for (const char *c = arg; *c; c++)
    if (!g_ascii_isalnum (*c) && strchr ("_-./:=,+@%", *c) == NULL)
      return TRUE;
  return FALSE;
}

/* "sedp tune ARG…" as given (@argv[0] is "tune"), each argument quoted where a shell needs it,
 * for the --resume hint. Free it. */
static char *
command_line (int argc, char **argv)
{
  GString *s = g_string_new ("sedp");
  for (int i = 0; i < argc; i++) {
    g_autofree char *q = needs_quotes (argv[i]) ? g_shell_quote (argv[i]) : g_strdup (argv[i]);
    g_string_append_printf (s, " %s", q);
  }
  return g_string_free (s, FALSE);
}

/* ---- signals ---- */

/* Notes the first signal (a later one of the other kind does not overwrite it). */
static void
on_signal (int sig)
{
  if (sedp_cli_interrupted == 0)
    sedp_cli_interrupted = sig;
}

/* @on: the first SIGINT and the first SIGTERM only set sedp_cli_interrupted (reset here), which
 * the tune checks between evaluations; SA_RESETHAND gives the next one its default action, so a
 * second Ctrl-C ends the process at once (the journal keeps what was appended). SA_RESTART: the
 * evaluation in progress goes on undisturbed. !@on: the default actions back. */
static void
catch_signals (gboolean on)
{
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on ? on_signal : SIG_DFL;
  sa.sa_flags = on ? SA_RESETHAND | SA_RESTART : 0;
  sigemptyset (&sa.sa_mask);
  if (on)
    sedp_cli_interrupted = 0;
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

gboolean
tune_stopped (Tune *t)
{
  if (t->signal == 0)
    t->signal = sedp_cli_interrupted;
  return t->signal != 0;
}

/* ---- the flow ---- */

/* The pipeline's spec and text, the registry and the search space. */
static gboolean
load_pipeline (Tune *t, GError **error)
{
  g_auto (GStrv) dirs = sedp_registry_default_path ();
  t->registry = sedp_registry_new ((const char *const *) dirs);
  t->spec = sedp_pipeline_spec_load (t->path, error);
  if (t->spec == NULL || !g_file_get_contents (t->path, &t->text, NULL, error))
    return FALSE;
  if (t->o.space_path)
    t->space = sedp_tune_space_load (t->spec, t->o.space_path, t->registry, error);
  else if (t->spec->tune_line)
    t->space = sedp_tune_space_parse (t->spec, t->spec, t->registry, error);
  else
    t->space = sedp_tune_space_default (t->spec, t->registry, error);
  return t->space != NULL;
}

/* The workload, checked on the unmodified pipeline, and the measure every candidate shares. */
static gboolean
load_workload (Tune *t, GError **error)
{
  t->workload = sedp_workload_load (t->o.requests_path, t->o.encoding, error);
  if (t->workload == NULL)
    return FALSE;
  sedp_tune_measure_init (&t->measure, t->registry, t->workload);
  t->measure.rate = isnan (t->o.rate) ? TUNE_START_RPS : t->o.rate; /* --maximize throughput */
  t->measure.warmup_s = t->o.warmup_s;
  t->measure.duration_s = t->o.measure_s;
  t->measure.seed = (guint64) t->o.seed;
  if (!sedp_tune_measure_check (&t->measure, error))
    return FALSE;
  return sedp_tune_check_workload (t->registry, t->workload, t->text, t->path, error);
}

/* What --report and --plot ask for: written at the end, and on a signal. */
static gboolean
write_records (const Tune *t, GError **error)
{
  if (t->o.report && !tune_write_report (t, error))
    return FALSE;
  return t->o.plot == NULL || tune_write_plot (t, error);
}

/* Everything after the options; FALSE with @error for what stops the tune. Signals are caught
 * from the journal's opening on (before it, one ends the process: nothing is recorded yet). */
static gboolean
run_tune (Tune *t, GError **error)
{
  if (!load_pipeline (t, error) || !tune_journal_prepare (t, error) || !load_workload (t, error))
    return FALSE;
  catch_signals (TRUE);
  if (!tune_journal_open (t, error) || !tune_search (t, error) || !tune_choose (t, error))
    return FALSE;
  tune_journal_close (t);
  if (t->signal == 0 && !tune_write_pipeline (t, error))
    return FALSE;
  if (t->signal == 0)
    tune_print_table (t);
  return write_records (t, error);
}

/* The last line of a tune that ran its course, naming what it wrote and its journal. */
static void
say_done (const Tune *t)
{
  if (t->o.quiet)
    return;
  fprintf (stderr, "sedp tune: wrote %s%s%s%s%s; the journal %s keeps the baseline and %u "
           "candidate%s (--resume with a larger budget goes on from them; delete it before a new "
           "tune with this -o)\n", t->o.output, t->o.report ? ", " : "",
           t->o.report ? t->o.report : "", t->o.plot ? ", " : "", t->o.plot ? t->o.plot : "",
           t->journal_path, t->evals->len, t->evals->len == 1 ? "" : "s");
}

/* What a signal left: what was kept and written, what was not, and how to go on. Returns the
 * exit status, 128 + the signal (130 for SIGINT). */
static int
say_interrupted (const Tune *t)
{
  guint n = t->evals ? t->evals->len : 0;
  g_autofree char *done = t->baseline.text ? g_strdup_printf ("the baseline and %u candidate%s", n,
                                                             n == 1 ? "" : "s")
                                           : g_strdup ("no evaluation");
  gboolean cut = t->order && t->order->len > 0; /* the signal came during the re-measure */
  fprintf (stderr, "sedp tune: stopped by signal %d (%s) after %s; the final re-measure was "
           "%s and nothing was written to %s%s%s. The journal %s keeps every finished "
           "evaluation; to go on from them:\n  %s%s\n", t->signal, g_strsignal (t->signal),
           done, cut ? "cut short" : "skipped", t->o.output,
           t->o.report ? " (the report is written, marked interrupted)" : "",
           t->o.plot ? " (the plot is written)" : "", t->journal_path, t->command,
           t->o.resume ? "" : " --resume");
  return 128 + t->signal;
}

/**
 * sedp_cmd_tune:
 * `sedp tune PIPELINE (--rate R | --maximize throughput [--rate R]) --slo-p99-ms S
 * (--budget-evals N | --budget-s T) -o FILE`.
 * Returns 0 when the tuned pipeline was written (also when no candidate beat the baseline), 2
 * for bad options, 1 when the tune stopped (its error on stderr), 128 + the signal when SIGINT
 * or SIGTERM stopped it (its journal kept, to --resume). Runs pipelines in process: nothing
 * else may run in the process meanwhile; installs its own SIGINT and SIGTERM handlers.
 */
int
sedp_cmd_tune (int argc, char **argv)
{
  g_auto (Tune) t = {.o = {.rate = NAN, .slo_p99_ms = NAN, .budget_s = NAN, .budget_evals = -1,
                           .warmup_s = 1, .measure_s = 5, .seed = 1},
                     .chosen = -1, .journal_fd = -1};
  t.command = command_line (argc, argv);
  if (!parse_options (&t.o, &argc, &argv) || !check_words (&t.o, argc) || !check_mode (&t.o) ||
      !check_measure (&t.o) || !check_budget (&t.o))
    return 2;
  t.path = argv[1];
  t.bar = !t.o.quiet && isatty (STDERR_FILENO);
  g_autoptr (GError) error = NULL;
  gboolean ok = run_tune (&t, &error);
  catch_signals (FALSE);
  if (!ok) {
    tune_progress_end (&t);
    tune_error ("%s", error->message);
    return 1;
  }
  if (t.signal)
    return say_interrupted (&t);
  say_done (&t);
  return 0;
}
