/* sedp tests — the `sedp tune` command (docs/tuning.md, "The command"), spawned as a child
 * process: a short tune of a small pipeline (data_reader, synthetic_work, passthrough) over a
 * [tune] group of two parameters writes a tuned pipeline that `sedp check` accepts and that
 * differs from its input only in the tuned values and the top comment, and a JSON report of
 * the baseline and every evaluation; bad options each give their error and exit 2; a space
 * naming a missing stage stops the tune before any run. */
#include "test-common.h"
#include "test-spawn.h"

#include <json-glib/json-glib.h>
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

static char *dir, *pipeline;

static int
suite_init (void)
{
  dir = g_dir_make_tmp ("sedp-tune-cli-XXXXXX", NULL);
  pipeline = dir ? g_build_filename (dir, "p.pipeline", NULL) : NULL;
  return pipeline == NULL || !g_file_set_contents (pipeline, pipeline_text, -1, NULL);
}

static int
suite_clean (void)
{
  if (dir)
    sedp_test_remove_tree (dir);
  g_clear_pointer (&dir, g_free);
  g_clear_pointer (&pipeline, g_free);
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
  for (guint i = 0; i < 6; i++) {
    JsonObject *e = json_array_get_object_element (evals, i);
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

static void
test_short_tune (void)
{
  g_autofree char *out = in_dir ("tuned.pipeline");
  g_autofree char *report = in_dir ("report.json");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "tune", pipeline, "--rate", "100", "--slo-p99-ms", "200", "--budget-evals", "6",
              "--warmup-s", "0.1", "--measure-s", "0.3", "-o", out, "--report", report, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.err, "eval 6/6: ");
  SEDP_ASSERT_CONTAINS (r.err, "baseline: cpu ");
  SEDP_ASSERT_CONTAINS (r.out, "cpu per request");
  check_tuned_file (out);
  check_report (report);
  g_auto (SedpTestRun) c;
  spawn_sedp (&c, "check", out, NULL);
  SEDP_ASSERT_EXIT (c, 0);
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
    {{"--budget-evals", "3", "--method", "random"}, "--method 'random'"},
    {{"--budget-evals", "3", "--format", "xml"}, "--format 'xml'"},
    {{"--budget-evals", "3", "--seed", "-4"}, "--seed -4"},
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

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("tune-cli", suite_init, suite_clean);
  CU_add_test (s, "a short tune writes the tuned pipeline and the report", test_short_tune);
  CU_add_test (s, "bad options each give their error", test_bad_options);
  CU_add_test (s, "a space naming a missing stage stops before any run", test_missing_stage);
  return sedp_test_run ();
}
