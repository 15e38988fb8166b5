/* sedp tests — the `sedp tune` command (docs/tuning.md, "The command"), spawned as a child
 * process: a short tune of a small pipeline (data_reader, synthetic_work, passthrough) over a
 * [tune] group of two parameters writes a tuned pipeline that `sedp check` accepts and that
 * differs from its input only in the tuned values and the top comment, a JSON report of the
 * baseline and every evaluation, a journal of a header and a line per evaluation, and an SVG
 * plot of a mark per evaluation, and re-measures the baseline and the finalists 3 times each in
 * interleaved rounds; a --maximize throughput tune measures each candidate's capacity; a tune
 * resumed from its journal with a larger budget replays the recorded candidates and measures
 * only the new ones; a resume with another seed or in another mode, and a new tune over an
 * existing journal, are refused; SIGINT mid-tune exits 130 keeping the journal and an
 * interrupted report, and the tune then resumes past a journal line cut short; bad options each
 * give their error and exit 2; a space naming a missing stage stops the tune before any run. */
#include "test-common.h"
#include "test-spawn.h"

#include <json-glib/json-glib.h>
#include <signal.h>
#include <string.h>

static const SedpTestSpawn with_plugins = {.plugin_path = SEDP_TEST_PLUGIN_DIR};
#define spawn_sedp(r, ...) sedp_test_spawn ((r), &with_plugins, __VA_ARGS__)

static const char pipeline_text[] =
  "# a small pipeline to tune\n"
  "[pipeline]\nname = tuned\ndeadline_ms = 20000\n\n"
  "[stage reader]\nplugin = data_reader\n\n"
  "[stage work]\nplugin = synthetic_work\nafter = reader\nparallelism = 2\nbatch = 1\n"
  "distribution = fixed\nspin_us = 50\noutput = score\n\n"
  "[stage pass]\nplugin = passthrough\nafter = work\n\n"
  "[tune]\nstage.work.parallelism = int 1..2\nstage.work.batch = int 1..8\n";

/* For --maximize throughput: 3.2 ms of work per request (8 items of 400 µs), so that the
 * capacity (a few hundred requests/s on 2 cores) is found in a few probes. */
static const char heavy_text[] =
  "[pipeline]\nname = heavy\ndeadline_ms = 20000\n\n"
  "[stage reader]\nplugin = data_reader\n\n"
  "[stage work]\nplugin = synthetic_work\nafter = reader\nparallelism = 1\nbatch = 1\n"
  "distribution = fixed\nspin_us = 400\noutput = score\n\n"
  "[stage pass]\nplugin = passthrough\nafter = work\n\n"
  "[tune]\nstage.work.parallelism = int 1..2\n";

static char *dir, *pipeline, *heavy;

static int
suite_init (void)
{
  dir = g_dir_make_tmp ("sedp-tune-cli-XXXXXX", NULL);
  pipeline = dir ? g_build_filename (dir, "p.pipeline", NULL) : NULL;
  heavy = dir ? g_build_filename (dir, "heavy.pipeline", NULL) : NULL;
  return pipeline == NULL || !g_file_set_contents (pipeline, pipeline_text, -1, NULL) ||
         !g_file_set_contents (heavy, heavy_text, -1, NULL);
}

static int
suite_clean (void)
{
  if (dir)
    sedp_test_remove_tree (dir);
  g_clear_pointer (&dir, g_free);
  g_clear_pointer (&pipeline, g_free);
  g_clear_pointer (&heavy, g_free);
  return 0;
}

static char *
in_dir (const char *name)
{
  return g_build_filename (dir, name, NULL);
}

/* Whether line @tuned differs from @orig only in a tuned key's value. */
static gboolean
only_tuned_value (const char *orig, const char *tuned)
{
  if (strcmp (orig, tuned) == 0)
    return TRUE;
  return (g_str_has_prefix (orig, "parallelism = ") && g_str_has_prefix (tuned, "parallelism = ")) ||
         (g_str_has_prefix (orig, "batch = ") && g_str_has_prefix (tuned, "batch = "));
}

/* The tuned file: a comment on top, then the input with only tuned values changed. */
static void
check_tuned_file (const char *path)
{
  g_autofree char *text = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &text, NULL, NULL));
  CU_ASSERT_TRUE (g_str_has_prefix (text, "# Tuned by sedp tune on "));
  g_auto (GStrv) got = g_strsplit (text, "\n", -1);
  g_auto (GStrv) want = g_strsplit (pipeline_text, "\n", -1);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (got), g_strv_length (want) + 1);
  for (guint i = 0; want[i]; i++) {
    gboolean same = only_tuned_value (want[i], got[i + 1]);
    if (!same)
      fprintf (stderr, "\n  line %u changed: '%s' -> '%s'\n", i + 1, want[i], got[i + 1]);
    CU_ASSERT_TRUE (same);
  }
}

/* The report: the baseline and 6 evaluations, each with its fields; the choice. */
static void
check_report (const char *path)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_file (parser, path, &error));
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  CU_ASSERT_PTR_NOT_NULL_FATAL (root);
  CU_ASSERT_TRUE (json_object_has_member (root, "baseline"));
  CU_ASSERT_TRUE (json_object_has_member (root, "chosen"));
  JsonArray *evals = json_object_get_array_member (root, "evaluations");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (evals), 6);
  gboolean seen_feasible = FALSE;
  for (guint i = 0; i < 6; i++) {
    JsonObject *e = json_array_get_object_element (evals, i);
    /* the first feasible candidate is the best so far: a close call, measured twice */
    gboolean feasible = json_object_get_boolean_member (e, "feasible");
    gint64 measures = json_object_get_int_member (e, "measures");
    CU_ASSERT (measures == (!seen_feasible && feasible ? 2 : measures) && measures >= 1 && measures <= 2);
    seen_feasible |= feasible;
    CU_ASSERT_EQUAL (json_object_get_int_member (e, "index"), i + 1);
    JsonObject *p = json_object_get_object_member (e, "parameters");
    CU_ASSERT_TRUE (json_object_has_member (p, "stage.work.parallelism"));
    CU_ASSERT_TRUE (json_object_has_member (p, "stage.work.batch"));
    CU_ASSERT_TRUE (json_object_has_member (e, "cpu_s_per_request"));
    CU_ASSERT_TRUE (json_object_has_member (e, "p99_ms"));
    CU_ASSERT_TRUE (json_object_has_member (e, "feasible"));
    CU_ASSERT_TRUE (json_object_has_member (e, "reason"));
  }
}

/* The lines of the journal at @path, each a JSON object (fails the test when not). */
static GPtrArray *
journal_lines (const char *path)
{
  g_autofree char *text = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &text, NULL, NULL));
  CU_ASSERT_TRUE (g_str_has_suffix (text, "\n"));
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GPtrArray *objects = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
  for (guint i = 0; lines[i] && lines[i][0]; i++) {
    g_autoptr (JsonParser) parser = json_parser_new ();
    CU_ASSERT_TRUE_FATAL (json_parser_load_from_data (parser, lines[i], -1, NULL));
    JsonNode *root = json_parser_get_root (parser);
    CU_ASSERT_TRUE_FATAL (JSON_NODE_HOLDS_OBJECT (root));
    g_ptr_array_add (objects, json_object_ref (json_node_get_object (root)));
  }
  return objects;
}

/* The journal at @path: a header, the baseline (index 0), then @n candidates in order. */
static void
check_journal (const char *path, guint n)
{
  g_autoptr (GPtrArray) lines = journal_lines (path);
  CU_ASSERT_EQUAL_FATAL (lines->len, 2 + n);
  JsonObject *header = lines->pdata[0];
  CU_ASSERT_EQUAL (json_object_get_int_member (header, "sedp_tune_journal"), 2);
  CU_ASSERT_TRUE (json_object_has_member (header, "maximize"));
  CU_ASSERT_EQUAL (json_object_get_int_member (header, "seed"), 1);
  CU_ASSERT_TRUE (json_object_has_member (header, "pipeline_sha256"));
  for (guint i = 1; i < lines->len; i++) {
    JsonObject *e = lines->pdata[i];
    CU_ASSERT_EQUAL (json_object_get_int_member (e, "index"), i - 1);
    CU_ASSERT_TRUE (json_object_has_member (e, "x") && json_object_has_member (e, "result"));
    CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (e, "violations")), 4);
  }
}

/* Counts the elements whose class is "mark …". */
static void
count_mark (GMarkupParseContext *ctx, const char *element, const char **names,
            const char **values, gpointer data, GError **error)
{
  (void) ctx, (void) element, (void) error;
  for (guint i = 0; names[i]; i++)
    if (strcmp (names[i], "class") == 0 && g_str_has_prefix (values[i], "mark "))
      (*(guint *) data)++;
}

/* The SVG plot at @path parses as XML, an <svg>, with a mark for each of @n candidates. */
static void
check_plot (const char *path, guint n)
{
  g_autofree char *text = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &text, NULL, NULL));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "<svg "));
  const GMarkupParser parser = {.start_element = count_mark};
  guint marks = 0;
  g_autoptr (GError) error = NULL;
  GMarkupParseContext *ctx = g_markup_parse_context_new (&parser, 0, &marks, NULL);
  gboolean ok = g_markup_parse_context_parse (ctx, text, -1, &error) &&
                g_markup_parse_context_end_parse (ctx, &error);
  g_markup_parse_context_free (ctx);
  if (!ok)
    fprintf (stderr, "\n  %s: %s\n", path, error->message);
  CU_ASSERT_TRUE (ok);
  CU_ASSERT_EQUAL (marks, n);
}

/* The report at @path as a JSON object (its parser kept in @parser). */
static JsonObject *
load_report (JsonParser *parser, const char *path)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = json_parser_load_from_file (parser, path, &error);
  if (!ok)
    fprintf (stderr, "\n  %s: %s\n", path, error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  CU_ASSERT_PTR_NOT_NULL_FATAL (root);
  return root;
}

/* The report's re-measure: the baseline (index 0) and each finalist 3 times, whose @field has 3
 * values and a median, measured in interleaved rounds: each round once each, round r starting
 * one further along (0 1 2, 1 2 0, …). */
static void
check_remeasure (JsonObject *root, const char *field)
{
  JsonArray *rem = json_object_get_array_member (root, "remeasured");
  JsonArray *order = json_object_get_array_member (root, "remeasure_order");
  guint n = json_array_get_length (rem);
  CU_ASSERT_FATAL (n >= 1 && json_array_get_length (order) == 3 * n);
  CU_ASSERT_EQUAL (json_object_get_int_member (json_array_get_object_element (rem, 0), "index"), 0);
  for (guint i = 0; i < n; i++) {
    JsonObject *r = json_array_get_object_element (rem, i);
    CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (r, field)), 3);
    CU_ASSERT_TRUE (json_object_has_member (r, "median"));
  }
  for (guint round = 0; round < 3; round++)
    for (guint k = 0; k < n; k++) {
      JsonObject *want = json_array_get_object_element (rem, (k + round) % n);
      CU_ASSERT_EQUAL (json_array_get_int_element (order, round * n + k),
                       json_object_get_int_member (want, "index"));
    }
}

static void
test_short_tune (void)
{
  g_autofree char *out = in_dir ("tuned.pipeline");
  g_autofree char *report = in_dir ("report.json");
  g_autofree char *plot = in_dir ("plot.svg");
  g_autofree char *journal = in_dir ("tuned.pipeline.journal");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", pipeline, "--rate", "100", "--slo-p99-ms", "200", "--budget-evals", "6",
              "--warmup-s", "0.1", "--measure-s", "0.3", "-o", out, "--report", report,
              "--plot", plot, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.err, "eval 6/6: ");
  SEDP_ASSERT_CONTAINS (r.err, "baseline: cpu ");
  SEDP_ASSERT_CONTAINS (r.err, "the journal ");
  SEDP_ASSERT_CONTAINS (r.out, "cpu per request");
  SEDP_ASSERT_CONTAINS (r.err, "3 interleaved rounds");
  check_tuned_file (out);
  check_report (report);
  check_journal (journal, 6);
  check_plot (plot, 6);
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_report (parser, report);
  CU_ASSERT_TRUE (json_array_get_length (json_object_get_array_member (root, "remeasured")) >= 2);
  check_remeasure (root, "cpu_s_per_request");
  g_auto (SedpTestRun) c;
  spawn_sedp (&c, "check", out, NULL);
  SEDP_ASSERT_EXIT (c, 0);
}

/* Member @name of member @object of @root, a number (0 when null or absent). */
static double
member_number (JsonObject *root, const char *object, const char *name)
{
  JsonObject *o = json_object_get_object_member (root, object);
  CU_ASSERT_PTR_NOT_NULL_FATAL (o);
  JsonNode *v = json_object_get_member (o, name);
  return v && JSON_NODE_HOLDS_VALUE (v) ? json_node_get_double (v) : 0;
}

/* --maximize throughput without --rate, probes of 0.1 s, random search (seed 1 draws
 * parallelism 2, 2, 1: one finalist besides the baseline, whose start is 1): the baseline's
 * capacity and the chosen one's above 0, in the progress, the table and the report; the two
 * re-measured in interleaved rounds; the tuned file passes `sedp check`; the journal's header
 * names the mode, and a resume without it is refused. About 10 s. */
static void
test_throughput (void)
{
  g_autofree char *out = in_dir ("heavy-tuned.pipeline"), *report = in_dir ("heavy.json");
  g_autofree char *journal = in_dir ("heavy-tuned.pipeline.journal"), *plot = in_dir ("heavy.svg");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", heavy, "--maximize", "throughput", "--slo-p99-ms", "50",
              "--budget-evals", "3", "--warmup-s", "0", "--measure-s", "0.1", "--method", "random",
              "-o", out, "--report", report, "--plot", plot, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.err, "baseline: capacity ");
  SEDP_ASSERT_CONTAINS (r.err, " req/s");
  SEDP_ASSERT_CONTAINS (r.err, "1 best candidate in 3 interleaved rounds");
  SEDP_ASSERT_CONTAINS (r.out, "capacity (req/s, median)");
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_report (parser, report);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (root, "maximize"), "throughput");
  CU_ASSERT (member_number (root, "baseline", "capacity_rps") > 0);
  CU_ASSERT (member_number (root, "chosen", "median_capacity_rps") > 0);
  CU_ASSERT (member_number (root, "chosen", "baseline_median_capacity_rps") > 0);
  CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (root, "remeasured")), 2);
  check_remeasure (root, "capacity_rps");
  check_journal (journal, 3);
  check_plot (plot, 3);
  g_auto (SedpTestRun) c;
  spawn_sedp (&c, "check", out, NULL);
  SEDP_ASSERT_EXIT (c, 0);
  g_auto (SedpTestRun) cpu;
  spawn_sedp (&cpu, "tune", heavy, "--rate", "100", "--slo-p99-ms", "50", "--budget-evals", "3",
              "--warmup-s", "0", "--measure-s", "0.1", "--method", "random", "-o", out,
              "--resume", NULL);
  SEDP_ASSERT_EXIT (cpu, 1);
  SEDP_ASSERT_CONTAINS (cpu.err, "'maximize'");
  SEDP_ASSERT_CONTAINS (cpu.err, "give --maximize throughput");
}

/* `sedp tune` on the test pipeline at 0.3 s a measure with the arguments @first… (NULL-ended). */
G_GNUC_NULL_TERMINATED static void
spawn_tune (SedpTestRun *r, const char *out, const char *first, ...)
{
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  const char *fixed[] = {"tune", pipeline, "--rate", "100", "--slo-p99-ms", "200",
                         "--warmup-s", "0", "--measure-s", "0.3", "-o", out};
  for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (args, (gpointer) fixed[i]);
  va_list ap;
  va_start (ap, first);
  for (const char *a = first; a; a = va_arg (ap, const char *))
    g_ptr_array_add (args, (gpointer) a);
  va_end (ap);
  g_ptr_array_add (args, NULL);
  sedp_test_spawn_args (r, &with_plugins, (const char *const *) args->pdata);
}

/* Whether the first @n evaluations of the reports @a and @b have the same parameter values. */
static gboolean
same_candidates (JsonObject *a, JsonObject *b, guint n)
{
  JsonArray *ea = json_object_get_array_member (a, "evaluations");
  JsonArray *eb = json_object_get_array_member (b, "evaluations");
  for (guint i = 0; i < n; i++) {
    JsonNode *pa = json_object_get_member (json_array_get_object_element (ea, i), "parameters");
    JsonNode *pb = json_object_get_member (json_array_get_object_element (eb, i), "parameters");
    if (!json_node_equal (pa, pb))
      return FALSE;
  }
  return TRUE;
}

/* A tune of 3 candidates, then resumed to 5: 2 measured, 3 replayed as they were; a resume
 * with another seed and a new tune over the journal are refused. */
static void
test_resume (void)
{
  g_autofree char *out = in_dir ("resumed.pipeline"), *journal = in_dir ("resumed.pipeline.journal");
  g_autofree char *report1 = in_dir ("resumed-1.json"), *report2 = in_dir ("resumed-2.json");
  g_auto (SedpTestRun) r1;
  spawn_tune (&r1, out, "--budget-evals", "3", "--report", report1, NULL);
  SEDP_ASSERT_EXIT (r1, 0);
  check_journal (journal, 3);
  g_auto (SedpTestRun) r2;
  spawn_tune (&r2, out, "--budget-evals", "5", "--resume", "--report", report2, NULL);
  SEDP_ASSERT_EXIT (r2, 0);
  SEDP_ASSERT_CONTAINS (r2.err, "3 candidates replayed");
  SEDP_ASSERT_CONTAINS (r2.err, "eval 4/5: ");
  SEDP_ASSERT_CONTAINS (r2.err, "eval 5/5: ");
  CU_ASSERT_PTR_NULL (strstr (r2.err, "eval 3/5"));
  CU_ASSERT_PTR_NULL (strstr (r2.err, "baseline: cpu"));
  check_journal (journal, 5);
  g_autoptr (JsonParser) p1 = json_parser_new (), p2 = json_parser_new ();
  JsonObject *a = load_report (p1, report1), *b = load_report (p2, report2);
  CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (b, "evaluations")), 5);
  CU_ASSERT_EQUAL (json_object_get_int_member (b, "replayed"), 3);
  CU_ASSERT_TRUE (same_candidates (a, b, 3));

  g_auto (SedpTestRun) seed;
  spawn_tune (&seed, out, "--budget-evals", "5", "--resume", "--seed", "2", NULL);
  SEDP_ASSERT_EXIT (seed, 1);
  SEDP_ASSERT_CONTAINS (seed.err, "'seed'");
  SEDP_ASSERT_CONTAINS (seed.err, "give --seed 1");
  g_auto (SedpTestRun) again;
  spawn_tune (&again, out, "--budget-evals", "5", NULL);
  SEDP_ASSERT_EXIT (again, 1);
  SEDP_ASSERT_CONTAINS (again.err, "exists");
  SEDP_ASSERT_CONTAINS (again.err, "--resume");
  check_journal (journal, 5);
}

/* How many complete lines the file at @path has (0 when it does not exist). */
static guint
complete_lines (const char *path)
{
  g_autofree char *text = NULL;
  guint n = 0;
  if (g_file_get_contents (path, &text, NULL, NULL))
    for (const char *c = text; *c; c++)
      n += *c == '\n';
  return n;
}

/* Starts sedp with @args (NULL-ended), its outputs piped. */
static GSubprocess *
spawn_async (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) SEDP_BINARY);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_setenv (l, "SEDP_PLUGIN_PATH", SEDP_TEST_PLUGIN_DIR, TRUE);
  g_subprocess_launcher_setenv (l, "LC_ALL", "C", TRUE);
  GSubprocess *p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  return p;
}

/* SIGINT once the baseline is in the journal: exit 130, the journal and an interrupted report
 * kept, no tuned file; then, past a line cut short, the tune resumes and completes. */
static void
test_interrupt (void)
{
  g_autofree char *out = in_dir ("stopped.pipeline"), *journal = in_dir ("stopped.pipeline.journal");
  g_autofree char *report = in_dir ("stopped.json"), *plot = in_dir ("stopped.svg");
  const char *args[] = {"tune", pipeline, "--rate", "100", "--slo-p99-ms", "200", "--warmup-s",
                        "0", "--measure-s", "0.3", "-o", out, "--budget-evals", "3", "--report",
                        report, "--plot", plot, NULL};
  g_autoptr (GSubprocess) p = spawn_async (args);
  for (guint waited = 0; complete_lines (journal) < 2 && waited < 3000; waited++)
    g_usleep (20000); /* header and baseline: the first candidate is being measured */
  g_subprocess_send_signal (p, SIGINT);
  g_autofree char *err = NULL;
  CU_ASSERT_TRUE_FATAL (g_subprocess_communicate_utf8 (p, NULL, NULL, NULL, &err, NULL));
  CU_ASSERT_TRUE (g_subprocess_get_if_exited (p) && g_subprocess_get_exit_status (p) == 130);
  SEDP_ASSERT_CONTAINS (err, "--resume");
  CU_ASSERT_FALSE (g_file_test (out, G_FILE_TEST_EXISTS));
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_report (parser, report);
  CU_ASSERT_TRUE (json_object_get_boolean_member (root, "interrupted"));
  guint n = json_array_get_length (json_object_get_array_member (root, "evaluations"));
  CU_ASSERT (n <= 3); /* 3 only if the signal came during the final re-measure */
  check_journal (journal, n);
  check_plot (plot, n);

  FILE *f = fopen (journal, "a");
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  fputs ("{\"index\": 9, \"x\": [1", f); /* a write cut short */
  fclose (f);
  g_auto (SedpTestRun) r;
  spawn_tune (&r, out, "--budget-evals", "3", "--report", report, "--plot", plot, "--resume", NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.err, "cut short");
  CU_ASSERT_TRUE (g_file_test (out, G_FILE_TEST_EXISTS));
  check_journal (journal, 3);
  check_plot (plot, 3);
}

/* Each bad option: exit 2 and a message naming it, before anything runs. */
static void
test_bad_options (void)
{
  struct {
    const char *args[4], *needle;
  } cases[] = {
    {{"--slo-p99-ms", "10", "--budget-evals", "3"}, "--rate R is required"},
    {{"--rate", "0", "--slo-p99-ms", "10"}, "--rate 0"},
    {{"--rate", "10", "--budget-evals", "3"}, "--slo-p99-ms S is required"},
    {{"--rate", "10", "--slo-p99-ms", "-1"}, "--slo-p99-ms -1"},
    {{"--rate", "10", "--slo-p99-ms", "10"}, "no budget given"},
    {{"--budget-evals", "3", "--budget-s", "9"}, "both budgets given"},
    {{"--budget-evals", "0", "--measure-s", "1"}, "--budget-evals 0"},
    {{"--budget-s", "-2", "--warmup-s", "1"}, "--budget-s -2"},
    {{"--budget-evals", "3", "--measure-s", "0"}, "--measure-s 0"},
    {{"--budget-evals", "3", "--warmup-s", "-1"}, "--warmup-s -1"},
    {{"--budget-evals", "3", "--method", "annealing"}, "--method 'annealing'"},
    {{"--budget-evals", "3", "--format", "xml"}, "--format 'xml'"},
    {{"--budget-evals", "3", "--seed", "-4"}, "--seed -4"},
    {{"--budget-evals", "3", "--maximize", "latency"}, "--maximize 'latency'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    /* defaults for what a case does not give; GOption keeps the last of a repeated option */
    const char *argv[] = {"tune", pipeline, "-o", "/nonexistent/t.pipeline", "--rate", "10",
                          "--slo-p99-ms", "10", cases[i].args[0], cases[i].args[1],
                          cases[i].args[2], cases[i].args[3], NULL};
    gboolean needs_rate = g_str_has_prefix (cases[i].needle, "--rate R"),
             needs_slo = g_str_has_prefix (cases[i].needle, "--slo-p99-ms S");
    if (needs_rate)
      argv[4] = "-q", argv[5] = "-q";
    if (needs_slo)
      argv[6] = "-q", argv[7] = "-q";
    g_auto (SedpTestRun) r;
    sedp_test_spawn_args (&r, &with_plugins, argv);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, cases[i].needle);
  }
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", pipeline, "--rate", "10", "--slo-p99-ms", "10", "--budget-evals", "3", NULL);
  SEDP_ASSERT_EXIT (r, 2);
  SEDP_ASSERT_CONTAINS (r.err, "-o FILE is required");
}

/* A --space naming a stage the pipeline lacks stops the tune before the first measure. */
static void
test_missing_stage (void)
{
  g_autofree char *space = in_dir ("space.tune");
  g_autofree char *out = in_dir ("never.pipeline");
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (space, "[tune]\nstage.nope.batch = int 1..8\n", -1, NULL));
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", pipeline, "--rate", "100", "--slo-p99-ms", "50", "--budget-evals", "2",
              "--space", space, "-o", out, NULL);
  SEDP_ASSERT_EXIT (r, 1);
  SEDP_ASSERT_CONTAINS (r.err, "no stage 'nope'");
  SEDP_ASSERT_CONTAINS (r.err, "space.tune");
  CU_ASSERT_PTR_NULL (strstr (r.err, "baseline"));
  CU_ASSERT_PTR_NULL (strstr (r.err, "eval "));
  CU_ASSERT_FALSE (g_file_test (out, G_FILE_TEST_EXISTS));
}

/* A pipeline whose answers are all degraded (a fault_injector counts item 3 of every request):
 * the baseline and each candidate are answered OK but infeasible, the reason says so, the
 * report and the journal carry the counts, and the original values are kept. */
static void
test_degraded (void)
{
  g_auto (GStrv) parts = g_strsplit (pipeline_text, "[tune]", 2);
  g_autofree char *text = g_strconcat (parts[0], "[stage degrade]\nplugin = fault_injector\n"
                                       "after = pass\ndegrade_items = 3\n\n[tune]", parts[1], NULL);
  g_autofree char *path = in_dir ("degraded.pipeline");
  g_autofree char *out = in_dir ("degraded-tuned.pipeline");
  g_autofree char *report = in_dir ("degraded.json");
  g_autofree char *journal = in_dir ("degraded-tuned.pipeline.journal");
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, text, -1, NULL));
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", path, "--rate", "100", "--slo-p99-ms", "200", "--budget-evals", "2",
              "--warmup-s", "0.1", "--measure-s", "0.3", "-o", out, "--report", report, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.err, "eval 2/2: ");
  SEDP_ASSERT_CONTAINS (r.err, "infeasible: answers degraded: the pipeline's degraded counters");
  SEDP_ASSERT_CONTAINS (r.out, "No candidate beat the baseline");
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_report (parser, report);
  JsonArray *evals = json_object_get_array_member (root, "evaluations");
  CU_ASSERT_PTR_NOT_NULL_FATAL (evals);
  CU_ASSERT_TRUE (json_array_get_length (evals) >= 2);
  for (guint i = 0; i < json_array_get_length (evals); i++) {
    JsonObject *e = json_array_get_object_element (evals, i);
    CU_ASSERT_TRUE (json_object_get_int_member (e, "degraded") > 0);
    CU_ASSERT_FALSE (json_object_get_boolean_member (e, "feasible"));
  }
  g_autofree char *lines = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (journal, &lines, NULL, NULL));
  SEDP_ASSERT_CONTAINS (lines, "\"degraded\":");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("tune-cli", suite_init, suite_clean);
  CU_add_test (s, "a short tune writes the tuned pipeline and the report", test_short_tune);
  CU_add_test (s, "--maximize throughput tunes for each candidate's capacity", test_throughput);
  CU_add_test (s, "a tune resumed from its journal measures only the new candidates", test_resume);
  CU_add_test (s, "SIGINT keeps the journal and an interrupted report; the tune resumes", test_interrupt);
  CU_add_test (s, "bad options each give their error", test_bad_options);
  CU_add_test (s, "a space naming a missing stage stops before any run", test_missing_stage);
  CU_add_test (s, "degraded answers make every candidate infeasible", test_degraded);
  return sedp_test_run ();
}
