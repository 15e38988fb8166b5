/* sedp tests — the sedp host binary: check, inspect and run, spawned as a child process with
 * SEDP_PLUGIN_PATH set to build/plugins. Asserts exit statuses, stdout and stderr. */
#include "test-spawn.h"

#include <json-glib/json-glib.h>
#include <sedp/version.h>
#include <string.h>

static char *
srcfile (const char *first, ...)
{
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) SEDP_TEST_SRCDIR);
  va_list ap;
  va_start (ap, first);
  for (const char *p = first; p; p = va_arg (ap, const char *))
    g_ptr_array_add (parts, (gpointer) p);
  va_end (ap);
  g_ptr_array_add (parts, NULL);
  return g_build_filenamev ((char **) parts->pdata);
}

/* Runs sedp with the NULL-terminated arguments, SEDP_PLUGIN_PATH set to build/plugins or to
 * @plugin_path (spawn_sedp_on). */
static const SedpTestSpawn with_plugins = {.plugin_path = SEDP_TEST_PLUGIN_DIR};
#define spawn_sedp(r, ...) sedp_test_spawn ((r), &with_plugins, __VA_ARGS__)
#define spawn_sedp_on(r, path, ...)                                                              \
  sedp_test_spawn ((r), &(const SedpTestSpawn){.plugin_path = (path)}, __VA_ARGS__)

static guint
count_lines (const char *text)
{
  guint n = 0;
  for (const char *p = text; *p; p++)
    n += *p == '\n';
  return n;
}

/* ---- global options -------------------------------------------------------------------- */

static void
test_version (void)
{
  g_autofree char *expected = g_strdup_printf ("sedp %s (stage ABI %d.%d)\n", SEDP_VERSION,
                                               SEDP_ABI_MAJOR, SEDP_ABI_MINOR);
  const char *const flags[] = {"--version", "-V"};
  for (guint i = 0; i < G_N_ELEMENTS (flags); i++) {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, flags[i], NULL);
    SEDP_ASSERT_EXIT (r, 0);
    CU_ASSERT_STRING_EQUAL (r.out, expected);
    CU_ASSERT_STRING_EQUAL (r.err, "");
  }
}

static void
test_help (void)
{
  const char *const flags[] = {"--help", "-h", "help"};
  for (guint i = 0; i < G_N_ELEMENTS (flags); i++) {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, flags[i], NULL);
    SEDP_ASSERT_EXIT (r, 0);
    SEDP_ASSERT_CONTAINS (r.out, "Usage: sedp");
    SEDP_ASSERT_CONTAINS (r.out, "  check ");
    SEDP_ASSERT_CONTAINS (r.out, "  inspect ");
    SEDP_ASSERT_CONTAINS (r.out, "  run ");
    SEDP_ASSERT_CONTAINS (r.out, "SEDP_PLUGIN_PATH");
    CU_ASSERT_STRING_EQUAL (r.err, "");
  }
}

static void
test_command_help (void)
{
  struct {
    const char *cmd, *needle;
  } cases[] = {
    {"check", "--dot"},
    {"inspect", "[PLUGIN]"},
    {"run", "--requests"},
    {"run", "--max-inflight"},
    {"run", "--out"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, cases[i].cmd, "--help", NULL);
    SEDP_ASSERT_EXIT (r, 0);
    g_autofree char *usage = g_strdup_printf ("sedp %s", cases[i].cmd);
    SEDP_ASSERT_CONTAINS (r.out, "Usage:");
    SEDP_ASSERT_CONTAINS (r.out, usage);
    SEDP_ASSERT_CONTAINS (r.out, cases[i].needle);
  }
}

static void
test_unknown_command (void)
{
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "frobnicate", NULL);
    CU_ASSERT_NOT_EQUAL (r.status, 0);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "unknown command 'frobnicate'");
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
  {
    g_auto (SedpTestRun) r;
    sedp_test_spawn_args (&r, &with_plugins, (const char *const[]){NULL}); /* no arguments */
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "Usage: sedp");
  }
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "check", "--no-such-option", NULL);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "sedp check: ");
    SEDP_ASSERT_CONTAINS (r.err, "--no-such-option");
  }
}

/* --cpus of serve, bench and model bench: a bad list or a CPU the machine lacks is refused
 * before anything starts, naming the option. */
static void
test_cpus_options (void)
{
  const char *const cmds[][3] = {{"serve", "p.pipeline", NULL},
                                 {"bench", "http://127.0.0.1:1/v1/pipelines/x:predict", NULL},
                                 {"model", "bench", "m.onnx"}};
  for (guint i = 0; i < G_N_ELEMENTS (cmds); i++) {
    const char *bad[] = {"x", "3-1", "100000"};
    for (guint k = 0; k < G_N_ELEMENTS (bad); k++) {
      g_auto (SedpTestRun) r;
      const char *argv[] = {cmds[i][0], cmds[i][1], "--cpus", bad[k], cmds[i][2], NULL};
      sedp_test_spawn_args (&r, &with_plugins, argv);
      SEDP_ASSERT_EXIT (r, 2);
      SEDP_ASSERT_CONTAINS (r.err, "--cpus: ");
    }
  }
  g_auto (SedpTestRun) r;
  const char *argv[] = {"bench", "--cpus", "1023", "http://127.0.0.1:1/v1/pipelines/x:predict", NULL};
  sedp_test_spawn_args (&r, &with_plugins, argv);
  SEDP_ASSERT_EXIT (r, 2);
  SEDP_ASSERT_CONTAINS (r.err, "CPU 1023 does not exist");
}

/* ---- check ----------------------------------------------------------------------------- */

static void
test_check_example (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "check", example, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  CU_ASSERT_STRING_EQUAL (r.err, "");
  g_autofree char *head = g_strdup_printf ("pipeline example (%s): mode=staged deadline_ms=200 "
                                           "frame_rows=16 stages=4\n", example);
  CU_ASSERT_TRUE (g_str_has_prefix (r.out, head));
  CU_ASSERT_EQUAL (count_lines (r.out), 5);
  /* One line per stage, in topological order. */
  g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
  CU_ASSERT_FATAL (g_strv_length (lines) >= 5);
  CU_ASSERT_TRUE (g_str_has_prefix (lines[1], "  reader "));
  SEDP_ASSERT_CONTAINS (lines[1], "plugin=passthrough scope=request");
  SEDP_ASSERT_CONTAINS (lines[1], "[source]");
  CU_ASSERT_TRUE (g_str_has_prefix (lines[4], "  score "));
  SEDP_ASSERT_CONTAINS (lines[4], "plugin=synthetic_work scope=item");
  SEDP_ASSERT_CONTAINS (lines[4], "after=user,items [join] [sink]");
  SEDP_ASSERT_CONTAINS (r.out, "  items            plugin=synthetic_work scope=item parallelism=2 "
                               "batch=8 batch_timeout_us=100");
}

static void
test_check_dot (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "check", "--dot", example, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  CU_ASSERT_TRUE (g_str_has_prefix (r.out, "digraph \"example\" {\n"));
  CU_ASSERT_TRUE (g_str_has_suffix (r.out, "}\n"));
  SEDP_ASSERT_CONTAINS (r.out, "\"reader\" -> \"user\";");
  SEDP_ASSERT_CONTAINS (r.out, "\"reader\" -> \"items\";");
  SEDP_ASSERT_CONTAINS (r.out, "\"user\" -> \"score\";");
  SEDP_ASSERT_CONTAINS (r.out, "\"items\" -> \"score\";");
  CU_ASSERT_PTR_NULL (strstr (r.out, "[source]"));
  CU_ASSERT_STRING_EQUAL (r.err, "");
}

/* A bad pipeline: exit 1, nothing on stdout, exactly one line on stderr naming the file. */
static void
check_fails (const char *fixture, const char *needle)
{
  g_autofree char *path = srcfile ("fixtures", "dsl", fixture, NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "check", path, NULL);
  SEDP_ASSERT_EXIT (r, 1);
  CU_ASSERT_STRING_EQUAL (r.out, "");
  if (count_lines (r.err) != 1)
    fprintf (stderr, "\n  expected one line on stderr, got:\n%s", r.err);
  CU_ASSERT_EQUAL (count_lines (r.err), 1);
  CU_ASSERT_TRUE (g_str_has_suffix (r.err, "\n"));
  g_autofree char *prefix = g_strdup_printf ("sedp check: %s", path);
  if (!g_str_has_prefix (r.err, prefix))
    fprintf (stderr, "\n  stderr '%s' does not start with '%s'\n", r.err, prefix);
  CU_ASSERT_TRUE (g_str_has_prefix (r.err, prefix));
  SEDP_ASSERT_CONTAINS (r.err, needle);
}

static void
test_check_bad_pipelines (void)
{
  check_fails ("unknown-option.pipeline", ":8: [stage work] spin:");
  check_fails ("cycle.pipeline", "cycle a -> b -> c -> a");
  check_fails ("missing-required.pipeline", "[stage probe] plugin: plugin 'path_probe' not found");
  check_fails ("unknown-after.pipeline", "unknown stage 'ghost'");
  check_fails ("syntax.pipeline", "syntax error");
  check_fails ("non-utf8.pipeline", "UTF-8");
  check_fails ("no-such-file.pipeline", "cannot read");
  check_fails ("bad-warmup.pipeline", "bad-warmup.jsonl:2: invalid request: colour");
  check_fails ("bad-arms.pipeline", "bad-arms.pipeline:8: [stage ab]: arms: the weights sum to 99 percent");
  check_fails ("bad-branch.pipeline", "bad-branch.pipeline:19: [stage treatment] after: stage 'ab' has no "
                                      "branch 'treatmnt' (its branches: control, treatment)");
}

static void
test_check_usage (void)
{
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "check", NULL);
  SEDP_ASSERT_EXIT (r, 2);
  SEDP_ASSERT_CONTAINS (r.err, "sedp check: expected one PIPELINE");
}

/* ---- inspect --------------------------------------------------------------------------- */

static void
test_inspect_list (void)
{
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "inspect", NULL);
  SEDP_ASSERT_EXIT (r, 0);
  CU_ASSERT_STRING_EQUAL (r.err, "");
  g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
  const char *const names[] = {"ab_router",         "cube_accessor",   "data_reader",
                               "fault_injector",    "feature_processor", "model_inference",
                               "passthrough",       "query_cache",     "responder",
                               "shedder",           "synthetic_work"};
  const guint n = G_N_ELEMENTS (names);
  CU_ASSERT_FATAL (g_strv_length (lines) >= n + 2);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    g_autofree char *prefix = g_strdup_printf ("%-20s ", names[i]);
    if (!g_str_has_prefix (lines[i], prefix))
      fprintf (stderr, "\n  line %u '%s' is not plugin %s\n", i, lines[i], names[i]);
    CU_ASSERT_TRUE (g_str_has_prefix (lines[i], prefix));
    CU_ASSERT (strlen (lines[i]) > strlen (prefix)); /* the description follows */
  }
  CU_ASSERT_STRING_EQUAL (lines[n], "");
  g_autofree char *summary = g_strdup_printf ("%u plugins on %s", n, SEDP_TEST_PLUGIN_DIR);
  SEDP_ASSERT_CONTAINS (lines[n + 1], summary);
}

static void
test_inspect_warns_about_broken_modules (void)
{
  g_autofree char *notaplugin = g_build_filename (SEDP_TEST_FIXTURE_PLUGIN_DIR, "notaplugin", NULL);
  g_autofree char *path = g_strjoin (G_SEARCHPATH_SEPARATOR_S, SEDP_TEST_PLUGIN_DIR, notaplugin, NULL);
  g_autofree char *module = g_build_filename (notaplugin, "notaplugin.so", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp_on (&r, path, "inspect", NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.out, "11 plugins on ");
  g_autofree char *warning = g_strdup_printf ("warning: %s: not a plugin", module);
  SEDP_ASSERT_CONTAINS (r.err, warning);
  CU_ASSERT_EQUAL (count_lines (r.err), 1);
}

/* The line of @out that describes option @name ("  NAME  TYPE ..."). */
static char *
option_line (const char *out, const char *name)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  g_autofree char *prefix = g_strdup_printf ("  %s ", name);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], prefix))
      return g_strdup (lines[i]);
  fprintf (stderr, "\n  no line for option %s in:\n%s\n", name, out);
  return g_strdup ("");
}

static void
test_inspect_plugin (void)
{
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "inspect", "synthetic_work", NULL);
  SEDP_ASSERT_EXIT (r, 0);
  CU_ASSERT_STRING_EQUAL (r.err, "");
  CU_ASSERT_TRUE (g_str_has_prefix (r.out, "Plugin: synthetic_work\n"));
  SEDP_ASSERT_CONTAINS (r.out, "Scope:       item (default)");
  g_autofree char *abi = g_strdup_printf ("ABI:         %d.%d", SEDP_ABI_MAJOR, SEDP_ABI_MINOR);
  SEDP_ASSERT_CONTAINS (r.out, abi);
  g_autofree char *file = g_build_filename (SEDP_TEST_PLUGIN_DIR, "synthetic_work.so", NULL);
  SEDP_ASSERT_CONTAINS (r.out, file);
  struct {
    const char *name, *type, *rest;
  } options[] = {
    {"spin_us", "double", "default: 0  range: 0..1e+07"},
    {"distribution", "enum", "default: pareto  one of: fixed|exponential|pareto|lognormal"},
    {"pareto_alpha", "double", "default: 1.5  range: 1.05..10"},
    {"sleep_us", "int", "default: 0  range: 0..1e+07"},
    {"seed", "int", "default: 1"},
    {"output", "string", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS (options); i++) {
    g_autofree char *line = option_line (r.out, options[i].name);
    g_autofree char *type = g_strdup_printf (" %s ", options[i].type);
    g_autofree char *typed = g_strdup_printf ("%s ", line); /* a type may end the line */
    SEDP_ASSERT_CONTAINS (typed, type);
    if (options[i].rest)
      SEDP_ASSERT_CONTAINS (line, options[i].rest);
    else
      CU_ASSERT_PTR_NULL (strstr (line, "default:"));
  }
  SEDP_ASSERT_CONTAINS (r.out, "Mean CPU work per row, in microseconds"); /* the help text */
  SEDP_ASSERT_CONTAINS (r.out, "Runtime keys of every stage: plugin, after, scope");
}

static void
test_inspect_module_path (void)
{
  g_autofree char *module = g_build_filename (SEDP_TEST_PLUGIN_DIR, "fault_injector.so", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "inspect", module, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  CU_ASSERT_TRUE (g_str_has_prefix (r.out, "Plugin: fault_injector\n"));
  g_autofree char *line = option_line (r.out, "fail_create");
  SEDP_ASSERT_CONTAINS (line, " bool ");
  SEDP_ASSERT_CONTAINS (line, "default: false");
}

static void
test_inspect_unknown (void)
{
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "inspect", "nosuch", NULL);
  SEDP_ASSERT_EXIT (r, 1);
  CU_ASSERT_STRING_EQUAL (r.out, "");
  SEDP_ASSERT_CONTAINS (r.err, "sedp inspect: plugin 'nosuch' not found");
  SEDP_ASSERT_CONTAINS (r.err, SEDP_TEST_PLUGIN_DIR);
  CU_ASSERT_EQUAL (count_lines (r.err), 1);
}

/* ---- run ------------------------------------------------------------------------------- */

/* Parses JSON Lines; NULL-terminated array of objects' nodes, fails the test on a bad line. */
static GPtrArray *
parse_lines (const char *text)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *l = g_strstrip (lines[i]);
    if (*l == '\0' || *l == '#')
      continue;
    g_autoptr (GError) error = NULL;
    JsonNode *node = json_from_string (l, &error);
    if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node)) {
      fprintf (stderr, "\n  not a JSON object: %s (%s)\n", l, error ? error->message : "");
      CU_FAIL ("output line is not a JSON object");
      if (node)
        json_node_unref (node);
      continue;
    }
    g_ptr_array_add (out, node);
  }
  return out;
}

/* Checks that every request of @requests_file got one "ok" result line in @out, in order, with
 * every item scored and a float "score". */
static void
check_results (const char *requests_file, const char *out, guint expected_n)
{
  g_autofree char *input = NULL;
  CU_ASSERT_FATAL (g_file_get_contents (requests_file, &input, NULL, NULL));
  g_autoptr (GPtrArray) requests = parse_lines (input);
  g_autoptr (GPtrArray) results = parse_lines (out);
  CU_ASSERT_EQUAL (count_lines (out), expected_n);
  CU_ASSERT_EQUAL (requests->len, expected_n);
  CU_ASSERT_EQUAL_FATAL (results->len, requests->len);
  for (guint i = 0; i < results->len; i++) {
    JsonObject *req = json_node_get_object (requests->pdata[i]);
    JsonObject *res = json_node_get_object (results->pdata[i]);
    CU_ASSERT_STRING_EQUAL (json_object_get_string_member_with_default (res, "id", ""),
                            json_object_get_string_member (req, "id"));
    const char *status = json_object_get_string_member_with_default (res, "status", "");
    if (strcmp (status, "ok") != 0)
      fprintf (stderr, "\n  result %u has status '%s'\n", i, status);
    CU_ASSERT_STRING_EQUAL (status, "ok");
    CU_ASSERT_FALSE (json_object_has_member (res, "message"));
    JsonArray *in_items = json_object_get_array_member (req, "items");
    CU_ASSERT_FATAL (json_object_has_member (res, "items"));
    JsonArray *items = json_object_get_array_member (res, "items");
    CU_ASSERT_EQUAL_FATAL (json_array_get_length (items), json_array_get_length (in_items));
    for (guint k = 0; k < json_array_get_length (items); k++) {
      JsonObject *item = json_array_get_object_element (items, k);
      CU_ASSERT_STRING_EQUAL (json_object_get_string_member_with_default (item, "status", ""),
                              "scored");
      JsonNode *score = json_object_get_member (item, "score");
      CU_ASSERT (score && JSON_NODE_HOLDS_VALUE (score) &&
                 json_node_get_value_type (score) == G_TYPE_DOUBLE);
      /* outputs = score: no other column is written. */
      CU_ASSERT_EQUAL (json_object_get_size (item), 2);
    }
  }
}

static void
test_run_sample (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_autofree char *sample = srcfile ("..", "examples", "requests", "sample.jsonl", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "run", example, "--requests", sample, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  check_results (sample, r.out, 20);
  SEDP_ASSERT_CONTAINS (r.err, "sedp run: 20 requests in ");
  SEDP_ASSERT_CONTAINS (r.err, "20 ok, 0 partial, 0 failed, 0 timeout");
}

static void
test_run_out_file_quiet (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_autofree char *requests = srcfile ("fixtures", "requests", "valid-small.jsonl", NULL);
  g_autofree char *tmp = sedp_test_make_tmp_dir ("sedp-cli-XXXXXX");
  g_autofree char *out = g_build_filename (tmp, "results.jsonl", NULL);
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "run", "-q", "--max-inflight", "1", example, "-r", requests, "-o", out, NULL);
    SEDP_ASSERT_EXIT (r, 0);
    CU_ASSERT_STRING_EQUAL (r.out, "");
    CU_ASSERT_STRING_EQUAL (r.err, "");
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL (g_file_get_contents (out, &text, NULL, NULL));
    check_results (requests, text, 2);
  }
  sedp_test_remove_tree (tmp);
}

/* --metrics writes Prometheus text: one HELP/TYPE per family, a sample per stage. */
static void
test_run_metrics (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_autofree char *requests = srcfile ("fixtures", "requests", "valid-small.jsonl", NULL);
  g_autofree char *tmp = sedp_test_make_tmp_dir ("sedp-cli-XXXXXX");
  g_autofree char *metrics = g_build_filename (tmp, "metrics.txt", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "run", "-q", example, "-r", requests, "--metrics", metrics, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  g_autofree char *text = NULL;
  CU_ASSERT_FATAL (g_file_get_contents (metrics, &text, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  guint types = 0, samples = 0;
  for (guint i = 0; lines[i]; i++) {
    types += g_str_has_prefix (lines[i], "# TYPE sedp_stage_events_total ");
    samples += g_str_has_prefix (lines[i], "sedp_stage_events_total{stage=");
  }
  CU_ASSERT_EQUAL (types, 1);
  CU_ASSERT_EQUAL (samples, 4); /* reader, user, items, score */
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "sedp_requests_total{stage=\"pipeline\"} 2\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "sedp_stage_batch_size_bucket{stage=\"items\",le=\"+Inf\"}"));
  sedp_test_remove_tree (tmp);
}

/* A malformed request file: exit 1, a message naming the file and the line; the requests before
 * the bad line are still scored and written. */
static void
run_fails (const char *fixture, guint line, const char *needle, guint n_before)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_autofree char *requests = srcfile ("fixtures", "requests", fixture, NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "run", example, "--requests", requests, NULL);
  SEDP_ASSERT_EXIT (r, 1);
  g_autofree char *where = g_strdup_printf ("sedp run: %s:%u: ", requests, line);
  SEDP_ASSERT_CONTAINS (r.err, where);
  SEDP_ASSERT_CONTAINS (r.err, needle);
  CU_ASSERT_EQUAL (count_lines (r.out), n_before);
  g_autofree char *summary = g_strdup_printf ("sedp run: %u requests in ", n_before);
  SEDP_ASSERT_CONTAINS (r.err, summary);
}

static void
test_run_invalid_json (void)
{
  run_fails ("bad-json.jsonl", 4, "invalid JSON", 1);
}

static void
test_run_items_not_array (void)
{
  run_fails ("items-not-array.jsonl", 1, "items: expected an array", 0);
}

static void
test_run_unknown_field (void)
{
  run_fails ("unknown-field.jsonl", 2, "unknown field 'candidates'", 1);
}

static void
test_run_type_change (void)
{
  run_fails ("type-change.jsonl", 1, "items[1].category: a string", 0);
}

static void
test_run_string_array (void)
{
  run_fails ("string-array.jsonl", 1, "items[0].tags: arrays may hold numbers only", 0);
}

static void
test_run_usage (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "run", example, NULL);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "sedp run: ");
    SEDP_ASSERT_CONTAINS (r.err, "--requests");
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "run", example, "--requests", example, "--max-inflight", "0", NULL);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "--max-inflight");
  }
}

static void
test_run_missing_requests_file (void)
{
  g_autofree char *example = srcfile ("..", "pipelines", "example.pipeline", NULL);
  g_autofree char *missing = srcfile ("fixtures", "requests", "no-such-file.jsonl", NULL);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "run", example, "--requests", missing, NULL);
  SEDP_ASSERT_EXIT (r, 1);
  g_autofree char *where = g_strdup_printf ("sedp run: %s: cannot open", missing);
  SEDP_ASSERT_CONTAINS (r.err, where);
  CU_ASSERT_STRING_EQUAL (r.out, "");
}

static void
test_run_bad_pipeline (void)
{
  g_autofree char *pipeline = srcfile ("fixtures", "dsl", "bad-double.pipeline", NULL);
  g_autofree char *sample = srcfile ("..", "examples", "requests", "sample.jsonl", NULL);
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "run", pipeline, "--requests", sample, NULL);
    SEDP_ASSERT_EXIT (r, 1);
    g_autofree char *where = g_strdup_printf ("sedp run: %s:8: [stage work] spin_us", pipeline);
    SEDP_ASSERT_CONTAINS (r.err, where);
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
  {
    /* A plugin whose create fails stops the run before any request. */
    g_autofree char *failing = srcfile ("fixtures", "loader", "fail-create.pipeline", NULL);
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, "run", failing, "--requests", sample, NULL);
    SEDP_ASSERT_EXIT (r, 1);
    g_autofree char *where = g_strdup_printf ("sedp run: %s:9: [stage faults]", failing);
    SEDP_ASSERT_CONTAINS (r.err, where);
    SEDP_ASSERT_CONTAINS (r.err, "fail_create is set");
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("cli", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
    T (test_version),
    T (test_help),
    T (test_command_help),
    T (test_unknown_command),
    T (test_cpus_options),
    T (test_check_example),
    T (test_check_dot),
    T (test_check_bad_pipelines),
    T (test_check_usage),
    T (test_inspect_list),
    T (test_inspect_warns_about_broken_modules),
    T (test_inspect_plugin),
    T (test_inspect_module_path),
    T (test_inspect_unknown),
    T (test_run_sample),
    T (test_run_out_file_quiet),
    T (test_run_metrics),
    T (test_run_invalid_json),
    T (test_run_items_not_array),
    T (test_run_unknown_field),
    T (test_run_type_change),
    T (test_run_string_array),
    T (test_run_usage),
    T (test_run_missing_requests_file),
    T (test_run_bad_pipeline),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  return sedp_test_run ();
}
