/* sedp tests — the pipeline DSL: parsing (spec.c), option validation (options.c) and the graph
 * checks (graph.c). Every error has a fixture in tests/fixtures/dsl/ and a test asserting the
 * error's domain and code and that its message names the file, the line, the group and the key
 * (where there is one). */
#include "test-common.h"
#include "test-spec.h"

#include "dsl/spec.h"
#include "io/warmup.h"
#include "graph/graph.h"
#include "loader/registry.h"
#include "runtime/pipeline.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static SedpRegistry *registry; /* build/plugins, then the DSL fixture plugins */

static char *
fixture (const char *name)
{
  return g_build_filename (SEDP_TEST_SRCDIR, "fixtures", "dsl", name, NULL);
}

static int
suite_init (void)
{
  g_autofree char *good = g_build_filename (SEDP_TEST_FIXTURE_PLUGIN_DIR, "good", NULL);
  const char *const dirs[] = {SEDP_TEST_PLUGIN_DIR, good, NULL};
  registry = sedp_registry_new (dirs);
  return registry ? 0 : 1;
}

static int
suite_cleanup (void)
{
  g_clear_pointer (&registry, sedp_registry_free);
  return 0;
}

/* SEDP_ASSERT_ERROR (domain and message needles), plus the error code. */
#define ASSERT_GERROR(err, dom, cod, ...)                                                        \
  do {                                                                                           \
    const GError *_e = (err);                                                                    \
    SEDP_ASSERT_ERROR (_e, dom, __VA_ARGS__);                                                    \
    if (_e->domain != (dom) || _e->code != (int) (cod))                                          \
      fprintf (stderr, "\n  error '%s' is %s/%d, expected %s/%d\n", _e->message,                 \
               g_quark_to_string (_e->domain), _e->code, g_quark_to_string (dom), (int) (cod));  \
    CU_ASSERT_EQUAL (_e->code, (int) (cod));                                                     \
  } while (0)

/* Loads fixture @file with sedp_graph_load() and asserts that it fails in SEDP_DSL_ERROR with
 * @cod, and that the message contains the fixture's path and every needle. */
#define ASSERT_DSL_ERROR(file, cod, ...)                                                         \
  do {                                                                                           \
    g_autofree char *_path = fixture (file);                                                     \
    g_autoptr (GError) _error = NULL;                                                            \
    g_autoptr (SedpGraph) _graph = sedp_graph_load (_path, registry, &_error);                   \
    CU_ASSERT_PTR_NULL (_graph);                                                                 \
    ASSERT_GERROR (_error, SEDP_DSL_ERROR, cod, _path, __VA_ARGS__);                             \
  } while (0)

/* ---- syntax and structure -------------------------------------------------------------- */

static void
test_syntax_error (void)
{
  ASSERT_DSL_ERROR ("syntax.pipeline", SEDP_DSL_ERROR_SYNTAX, "syntax error",
                    "this line has no equals sign");
}

/* Regression: a line that is not KEY = VALUE is reported like every other DSL error, with
 * the file, line and group ("FILE:LINE: [GROUP]: ..."), not with GKeyFile's bare message. */
static void
test_syntax_error_names_line_and_group (void)
{
  ASSERT_DSL_ERROR ("syntax.pipeline", SEDP_DSL_ERROR_SYNTAX, "syntax.pipeline:5:",
                    "[stage reader]");
}

static void
test_syntax_key_before_group (void)
{
  const char text[] = "plugin = passthrough\n[stage reader]\nplugin = passthrough\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec =
      sedp_pipeline_spec_parse (text, sizeof text - 1, "inline.pipeline", &error);
  CU_ASSERT_PTR_NULL (spec);
  ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SYNTAX, "inline.pipeline");
}

static void
test_unknown_group (void)
{
  ASSERT_DSL_ERROR ("unknown-group.pipeline", SEDP_DSL_ERROR_UNKNOWN_GROUP,
                    "unknown-group.pipeline:4: [stages reader]", "unknown group");
}

static void
test_bad_stage_name (void)
{
  const char text[] = "[stage a.b]\nplugin = passthrough\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec =
      sedp_pipeline_spec_parse (text, sizeof text - 1, "names.pipeline", &error);
  CU_ASSERT_PTR_NULL (spec);
  ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_GROUP, "names.pipeline:1: [stage a.b]", "'a.b'");
}

static void
test_group_twice (void)
{
  ASSERT_DSL_ERROR ("group-twice.pipeline", SEDP_DSL_ERROR_DUPLICATE,
                    "group-twice.pipeline:9: [stage reader]", "defined twice",
                    "first on line 1");
}

static void
test_stage_twice (void)
{
  ASSERT_DSL_ERROR ("stage-twice.pipeline", SEDP_DSL_ERROR_DUPLICATE, "stage-twice.pipeline:6:",
                    "'reader' defined twice", "first on line 2");
}

static void
test_key_twice (void)
{
  ASSERT_DSL_ERROR ("key-twice.pipeline", SEDP_DSL_ERROR_DUPLICATE,
                    "key-twice.pipeline:10: [stage work] batch", "set twice", "first on line 8");
}

/* ---- keys and values ------------------------------------------------------------------- */

static void
test_unknown_pipeline_key (void)
{
  ASSERT_DSL_ERROR ("unknown-pipeline-key.pipeline", SEDP_DSL_ERROR_UNKNOWN_KEY,
                    "unknown-pipeline-key.pipeline:3: [pipeline] deadline", "unknown key",
                    "deadline_ms");
}

static void
test_unknown_option (void)
{
  ASSERT_DSL_ERROR ("unknown-option.pipeline", SEDP_DSL_ERROR_UNKNOWN_KEY,
                    "unknown-option.pipeline:8: [stage work] spin:", "synthetic_work", "spin_us");
}

static void
test_bad_batch (void)
{
  ASSERT_DSL_ERROR ("bad-batch.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-batch.pipeline:8: [stage work] batch", "integer", "'ten'");
}

static void
test_bad_double (void)
{
  ASSERT_DSL_ERROR ("bad-double.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-double.pipeline:8: [stage work] spin_us", "number", "'fast'");
}

static void
test_bad_bool (void)
{
  ASSERT_DSL_ERROR ("bad-bool.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-bool.pipeline:8: [stage faults] fail_batch", "true or false", "'maybe'");
}

static void
test_batch_zero (void)
{
  ASSERT_DSL_ERROR ("batch-zero.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "batch-zero.pipeline:8: [stage work] batch", "from 1", "'0'");
}

static void
test_parallelism_out_of_range (void)
{
  ASSERT_DSL_ERROR ("parallelism-5000.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "parallelism-5000.pipeline:8: [stage work] parallelism", "to 1024", "'5000'");
}

static void
test_double_option_out_of_range (void)
{
  ASSERT_DSL_ERROR ("double-range.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "double-range.pipeline:8: [stage work] pareto_alpha", "from 1.05 to 10",
                    "'0.5'");
}

static void
test_bad_mode (void)
{
  ASSERT_DSL_ERROR ("bad-mode.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-mode.pipeline:3: [pipeline] mode", "'staged' or 'sync'", "'turbo'");
}

static void
test_bad_scope (void)
{
  ASSERT_DSL_ERROR ("bad-scope.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-scope.pipeline:8: [stage work] scope", "'request' or 'item'",
                    "'batch'");
}

static void
test_bad_enum_option (void)
{
  ASSERT_DSL_ERROR ("bad-distribution.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "bad-distribution.pipeline:8: [stage work] distribution",
                    "fixed, exponential, pareto, lognormal", "'gaussian'");
}

static void
test_missing_plugin_key (void)
{
  ASSERT_DSL_ERROR ("missing-plugin.pipeline", SEDP_DSL_ERROR_MISSING_KEY,
                    "missing-plugin.pipeline:5: [stage work] plugin", "missing");
}

static void
test_missing_required_option (void)
{
  ASSERT_DSL_ERROR ("missing-required.pipeline", SEDP_DSL_ERROR_MISSING_KEY,
                    "missing-required.pipeline:5: [stage probe] file", "required",
                    "'path_probe'");
}

static void
test_plugin_bad_default (void)
{
  ASSERT_DSL_ERROR ("bad-default.pipeline", SEDP_DSL_ERROR_PLUGIN,
                    "bad-default.pipeline:5: [stage counter]", "'bad_default'", "'count'");
}

static void
test_unknown_plugin (void)
{
  ASSERT_DSL_ERROR ("unknown-plugin.pipeline", SEDP_DSL_ERROR_PLUGIN,
                    "[stage work] plugin", "'nosuch_plugin' not found", SEDP_TEST_PLUGIN_DIR);
}

/* ---- the graph ------------------------------------------------------------------------- */

static void
test_unknown_stage_in_after (void)
{
  ASSERT_DSL_ERROR ("unknown-after.pipeline", SEDP_DSL_ERROR_UNKNOWN_STAGE,
                    "[stage work] after", "unknown stage 'ghost'");
}

static void
test_stage_twice_in_after (void)
{
  ASSERT_DSL_ERROR ("after-twice.pipeline", SEDP_DSL_ERROR_DUPLICATE, "[stage work] after",
                    "'reader' listed twice");
}

/* Regression: errors about the runtime keys `after`, `plugin` and `scope` of a stage name the
 * key's own line, not the line of the [stage NAME] header. */
static void
test_graph_errors_point_at_key_line (void)
{
  ASSERT_DSL_ERROR ("unknown-after.pipeline", SEDP_DSL_ERROR_UNKNOWN_STAGE,
                    "unknown-after.pipeline:7: [stage work] after");
  ASSERT_DSL_ERROR ("after-twice.pipeline", SEDP_DSL_ERROR_DUPLICATE,
                    "after-twice.pipeline:7: [stage work] after");
  ASSERT_DSL_ERROR ("unknown-plugin.pipeline", SEDP_DSL_ERROR_PLUGIN,
                    "unknown-plugin.pipeline:7: [stage work] plugin");
  ASSERT_DSL_ERROR ("source-item-scope.pipeline", SEDP_DSL_ERROR_SCOPE,
                    "source-item-scope.pipeline:3: [stage reader] scope");
}

static void
test_cycle (void)
{
  ASSERT_DSL_ERROR ("cycle.pipeline", SEDP_DSL_ERROR_CYCLE, "[stage a] after",
                    "cycle a -> b -> c -> a");
}

static void
test_unreachable (void)
{
  ASSERT_DSL_ERROR ("unreachable.pipeline", SEDP_DSL_ERROR_UNREACHABLE,
                    "unreachable.pipeline:5: [stage orphan]", "unreachable", "'reader'");
}

static void
test_no_source (void)
{
  ASSERT_DSL_ERROR ("no-source.pipeline", SEDP_DSL_ERROR_NO_SOURCE, "no source");
}

static void
test_no_sink (void)
{
  ASSERT_DSL_ERROR ("no-sink.pipeline", SEDP_DSL_ERROR_NO_SINK, "no sink");
}

static void
test_source_item_scope (void)
{
  ASSERT_DSL_ERROR ("source-item-scope.pipeline", SEDP_DSL_ERROR_SCOPE, "[stage reader] scope",
                    "scope = request");
  /* The plugin's default scope (passthrough: item) counts when the file sets none. */
  ASSERT_DSL_ERROR ("source-default-item-scope.pipeline", SEDP_DSL_ERROR_SCOPE,
                    "source-default-item-scope.pipeline:2: [stage reader] scope");
}

/* ---- files ----------------------------------------------------------------------------- */

static void
test_empty_file (void)
{
  ASSERT_DSL_ERROR ("empty.pipeline", SEDP_DSL_ERROR_NO_SINK, "no sink");
}

static void
test_non_utf8 (void)
{
  ASSERT_DSL_ERROR ("non-utf8.pipeline", SEDP_DSL_ERROR_SYNTAX, "UTF-8");
}

static void
test_nonexistent_file (void)
{
  ASSERT_DSL_ERROR ("no-such-file.pipeline", SEDP_DSL_ERROR_IO, "cannot read");
}

/* ---- ${VAR} substitution --------------------------------------------------------------- */



static void
test_env_substitution (void)
{
  g_autofree char *path = fixture ("env.pipeline");
  g_unsetenv ("SEDP_TEST_PIPELINE_NAME");
  g_unsetenv ("SEDP_TEST_DEADLINE");
  g_unsetenv ("SEDP_TEST_OUTPUT");
  g_setenv ("SEDP_TEST_SPIN_US", "3.5", TRUE);
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpPipelineSpec) spec = sedp_pipeline_spec_load (path, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
    /* Unset variables take their ${VAR:-default}. */
    CU_ASSERT_STRING_EQUAL (spec->name, "env-default");
    CU_ASSERT_EQUAL (spec->deadline_ms, 75);
    const SedpStageSpec *work = stage_named (spec, "work");
    CU_ASSERT_PTR_NOT_NULL_FATAL (work);
    CU_ASSERT_STRING_EQUAL (option_value (work, "spin_us"), "3.5");
    CU_ASSERT_STRING_EQUAL (option_value (work, "output"), "pre_score_post");
  }
  g_setenv ("SEDP_TEST_PIPELINE_NAME", "prod", TRUE);
  g_setenv ("SEDP_TEST_DEADLINE", "120", TRUE);
  g_setenv ("SEDP_TEST_OUTPUT", "", TRUE); /* empty: the default applies */
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpPipelineSpec) spec = sedp_pipeline_spec_load (path, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
    CU_ASSERT_STRING_EQUAL (spec->name, "prod");
    CU_ASSERT_EQUAL (spec->deadline_ms, 120);
    CU_ASSERT_STRING_EQUAL (option_value (stage_named (spec, "work"), "output"), "pre_score_post");
  }
  g_setenv ("SEDP_TEST_OUTPUT", "ctr", TRUE);
  {
    /* The substituted values are validated like written ones: the whole file compiles. */
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpGraph) graph = sedp_graph_load (path, registry, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
    CU_ASSERT_STRING_EQUAL (option_value (stage_named (graph->spec, "work"), "output"),
                            "pre_ctr_post");
  }
  /* A substituted value that is invalid is reported like a written one. */
  g_setenv ("SEDP_TEST_SPIN_US", "lots", TRUE);
  ASSERT_DSL_ERROR ("env.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "env.pipeline:12: [stage work] spin_us", "'lots'");
  g_setenv ("SEDP_TEST_DEADLINE", "soon", TRUE);
  ASSERT_DSL_ERROR ("env.pipeline", SEDP_DSL_ERROR_INVALID_VALUE,
                    "env.pipeline:3: [pipeline] deadline_ms", "'soon'");
  g_unsetenv ("SEDP_TEST_PIPELINE_NAME");
  g_unsetenv ("SEDP_TEST_DEADLINE");
  g_unsetenv ("SEDP_TEST_OUTPUT");
  g_unsetenv ("SEDP_TEST_SPIN_US");
}

/* ---- [pipeline] warmup and warmup_repeat (files written to a scratch folder) ---- */

static const char *warmup_stages = "[stage reader]\nplugin = data_reader\n"
                                   "[stage s]\nplugin = synthetic_work\nafter = reader\n";

/* Writes @pipeline (the [pipeline] group; the stages are appended) as DIR/p.pipeline and @warm
 * (if any) as DIR/warm.jsonl; returns the pipeline file's path. */
static char *
warmup_files (const char *dir, const char *pipeline, const char *warm)
{
  char *path = g_build_filename (dir, "p.pipeline", NULL);
  g_autofree char *text = g_strconcat (pipeline, warmup_stages, NULL);
  CU_ASSERT_TRUE (g_file_set_contents (path, text, -1, NULL));
  g_autofree char *w = g_build_filename (dir, "warm.jsonl", NULL);
  if (warm) {
    CU_ASSERT_TRUE (g_file_set_contents (w, warm, -1, NULL));
  } else {
    g_unlink (w);
  }
  return path;
}

static void
remove_scratch (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (dir, n, NULL);
    g_unlink (p);
  }
  g_rmdir (dir);
}

static void
test_warmup_keys (void)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-dsl-warmup-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dir);
  g_autofree char *canon = g_canonicalize_filename (dir, NULL);
  g_autofree char *warm = g_build_filename (canon, "warm.jsonl", NULL);

  /* Resolved against the pipeline file's folder; blank and '#' lines skipped; \r\n ends. */
  {
    g_autofree char *path = warmup_files (
        dir, "[pipeline]\nwarmup = warm.jsonl\nwarmup_repeat = 3\n",
        "# warm-up\r\n{\"items\": [{\"id\": 1}]}\r\n\r\n"
        "{\"request_id\": \"b\", \"user\": {\"id\": 7}, \"items\": [{\"id\": 2}, {\"id\": 3}]}");
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpGraph) graph = sedp_graph_load (path, registry, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
    CU_ASSERT_STRING_EQUAL (graph->spec->warmup, warm);
    CU_ASSERT_EQUAL (graph->spec->warmup_line, 2);
    CU_ASSERT_EQUAL (graph->spec->warmup_repeat, 3);
    g_autoptr (GPtrArray) records = sedp_warmup_load (graph->spec, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (records);
    CU_ASSERT_EQUAL_FATAL (records->len, 2);
    const SedpWarmupRecord *r0 = records->pdata[0], *r1 = records->pdata[1];
    CU_ASSERT_EQUAL (r0->line, 2);
    CU_ASSERT_EQUAL (r1->line, 4);
    gsize n;
    const char *d = g_bytes_get_data (r0->payload, &n);
    CU_ASSERT (n == strlen ("{\"items\": [{\"id\": 1}]}") && memcmp (d, "{\"items\"", 8) == 0);
  }
  /* Without warmup: none, repeat 1. */
  {
    g_autofree char *path = warmup_files (dir, "[pipeline]\nname = x\n", NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpGraph) graph = sedp_graph_load (path, registry, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
    CU_ASSERT_PTR_NULL (graph->spec->warmup);
    CU_ASSERT_EQUAL (graph->spec->warmup_repeat, 1);
  }
  /* Errors: FILE:LINE of the key, and the warm-up file's line for a bad record. */
  struct {
    const char *pipeline, *warm;
    int code;
    const char *needle1, *needle2;
  } bad[] = {
    {"[pipeline]\nname = x\nwarmup = warm.jsonl\n", NULL, SEDP_DSL_ERROR_IO,
     "p.pipeline:3: [pipeline] warmup: cannot read", "warm.jsonl"},
    {"[pipeline]\nwarmup = warm.jsonl\n", "{\"items\": [{\"id\": 1}]}\n\n{\"items\": [{\"id\": 1}], \"x\": 1}\n",
     SEDP_DSL_ERROR_INVALID_VALUE, "p.pipeline:2: [pipeline] warmup: ", "warm.jsonl:3: invalid request: x"},
    {"[pipeline]\nwarmup = warm.jsonl\n", "{\"items\": [{\"id\": 1}\n", SEDP_DSL_ERROR_INVALID_VALUE,
     "p.pipeline:2: [pipeline] warmup: ", "warm.jsonl:1: invalid request"},
    {"[pipeline]\nwarmup = warm.jsonl\n", "{\"items\": []}\n", SEDP_DSL_ERROR_INVALID_VALUE,
     "warm.jsonl:1: invalid request: items", NULL},
    {"[pipeline]\nwarmup = warm.jsonl\n", "\n# nothing\n\n", SEDP_DSL_ERROR_INVALID_VALUE,
     "p.pipeline:2: [pipeline] warmup: ", "holds no request"},
    {"[pipeline]\nwarmup =\n", NULL, SEDP_DSL_ERROR_INVALID_VALUE, "p.pipeline:2: [pipeline] warmup: expected", NULL},
    {"[pipeline]\nname = x\nwarmup_repeat = 2\n", NULL, SEDP_DSL_ERROR_MISSING_KEY,
     "p.pipeline:3: [pipeline] warmup_repeat: set without warmup", NULL},
    {"[pipeline]\nwarmup = warm.jsonl\nwarmup_repeat = 0\n", "{\"items\": [{\"id\": 1}]}\n",
     SEDP_DSL_ERROR_INVALID_VALUE, "p.pipeline:3: [pipeline] warmup_repeat: expected an integer from 1", NULL},
    {"[pipeline]\nwarmup = warm.jsonl\nwarmup_repeat = many\n", "{\"items\": [{\"id\": 1}]}\n",
     SEDP_DSL_ERROR_INVALID_VALUE, "p.pipeline:3: [pipeline] warmup_repeat", "'many'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autofree char *path = warmup_files (dir, bad[i].pipeline, bad[i].warm);
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpGraph) graph = sedp_graph_load (path, registry, &error);
    /* The file itself is read when it is sent (sedp check, sedp serve), not by the parse. */
    g_autoptr (GPtrArray) records =
        graph ? sedp_warmup_load (graph->spec, &error) : NULL;
    CU_ASSERT_PTR_NULL (records);
    if (bad[i].needle2)
      ASSERT_GERROR (error, SEDP_DSL_ERROR, bad[i].code, path, bad[i].needle1, bad[i].needle2);
    else
      ASSERT_GERROR (error, SEDP_DSL_ERROR, bad[i].code, path, bad[i].needle1);
  }
  /* An unknown key's message lists the new keys. */
  {
    g_autofree char *path = warmup_files (dir, "[pipeline]\nwarm = x\n", NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpGraph) graph = sedp_graph_load (path, registry, &error);
    CU_ASSERT_PTR_NULL (graph);
    ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_KEY,
                   "warmup, warmup_repeat, cpus)");
  }
  remove_scratch (dir);
}

static void
test_env_unset (void)
{
  g_unsetenv ("SEDP_TEST_SURELY_UNSET_VARIABLE");
  ASSERT_DSL_ERROR ("env-unset.pipeline", SEDP_DSL_ERROR_ENVIRONMENT,
                    "env-unset.pipeline:8: [stage work] spin_us",
                    "'SEDP_TEST_SURELY_UNSET_VARIABLE' is not set");
  /* env.pipeline's spin_us has no default either. */
  g_unsetenv ("SEDP_TEST_SPIN_US");
  ASSERT_DSL_ERROR ("env.pipeline", SEDP_DSL_ERROR_ENVIRONMENT,
                    "env.pipeline:12: [stage work] spin_us", "'SEDP_TEST_SPIN_US'");
}

static void
test_env_unterminated (void)
{
  ASSERT_DSL_ERROR ("env-unterminated.pipeline", SEDP_DSL_ERROR_ENVIRONMENT,
                    "env-unterminated.pipeline:8: [stage work] output", "unterminated");
}

static void
test_substitute (void)
{
  g_setenv ("SEDP_TEST_A", "alpha", TRUE);
  g_unsetenv ("SEDP_TEST_B");
  struct {
    const char *in, *out;
  } cases[] = {
    {"plain", "plain"},
    {"${SEDP_TEST_A}", "alpha"},
    {"x${SEDP_TEST_A}y${SEDP_TEST_A}z", "xalphayalphaz"},
    {"${SEDP_TEST_B:-beta}", "beta"},
    {"${SEDP_TEST_A:-beta}", "alpha"},
    {"${SEDP_TEST_B:-}", ""},
    {"$SEDP_TEST_A", "$SEDP_TEST_A"},
    {"cost $5", "cost $5"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GError) error = NULL;
    g_autofree char *out = sedp_dsl_substitute (cases[i].in, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL (out);
    if (out && strcmp (out, cases[i].out) != 0)
      fprintf (stderr, "\n  substitute '%s' gave '%s', expected '%s'\n", cases[i].in, out,
               cases[i].out);
    CU_ASSERT (out && strcmp (out, cases[i].out) == 0);
  }
  g_autoptr (GError) error = NULL;
  g_autofree char *out = sedp_dsl_substitute ("a${SEDP_TEST_B}b", &error);
  CU_ASSERT_PTR_NULL (out);
  ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_ENVIRONMENT, "SEDP_TEST_B");
  g_unsetenv ("SEDP_TEST_A");
}

/* ---- PATH options ---------------------------------------------------------------------- */

/* path.pipeline sets `file = data/../models/model.bin`; path_probe's create() fails unless the
 * resolved value equals `expect`, which the file takes from SEDP_TEST_EXPECT_PATH. The pipeline
 * is loaded by a path relative to the working directory (which is not its folder), so a
 * resolution against the working directory would be caught. */
static void
test_path_option_relative_to_pipeline_file (void)
{
  g_autofree char *old_cwd = g_get_current_dir ();
  g_autofree char *fixtures = g_build_filename (SEDP_TEST_SRCDIR, "fixtures", NULL);
  g_autofree char *dsl_dir = g_canonicalize_filename ("dsl", fixtures);
  g_autofree char *expected = g_build_filename (dsl_dir, "models", "model.bin", NULL);
  g_autofree char *wrong = g_canonicalize_filename ("models/model.bin", fixtures);
  CU_ASSERT_FATAL (chdir (fixtures) == 0);

  g_setenv ("SEDP_TEST_EXPECT_PATH", expected, TRUE);
  {
    g_autoptr (GError) error = NULL;
    SedpGraph *graph = sedp_graph_load ("dsl/path.pipeline", registry, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL (graph);
    if (graph) {
      CU_ASSERT_STRING_EQUAL (graph->spec->dir, dsl_dir);
      SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
      if (error)
        fprintf (stderr, "\n  %s\n", error->message);
      CU_ASSERT_PTR_NULL (error);
      CU_ASSERT_PTR_NOT_NULL (pipeline);
      sedp_pipeline_free (pipeline);
    }
  }
  /* The control: the probe does refuse a value other than the one it resolved. */
  g_setenv ("SEDP_TEST_EXPECT_PATH", wrong, TRUE);
  {
    g_autoptr (GError) error = NULL;
    SedpGraph *graph = sedp_graph_load ("dsl/path.pipeline", registry, &error);
    CU_ASSERT_PTR_NOT_NULL (graph);
    if (graph) {
      SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
      CU_ASSERT_PTR_NULL (pipeline);
      ASSERT_GERROR (error, SEDP_RUNTIME_ERROR, SEDP_RUNTIME_ERROR_CREATE_FAILED, "dsl/path.pipeline", "[stage probe]",
                         expected);
      sedp_pipeline_free (pipeline);
    }
  }
  g_unsetenv ("SEDP_TEST_EXPECT_PATH");
  CU_ASSERT (chdir (old_cwd) == 0);
}

static void
test_path_option_absolute (void)
{
  g_autofree char *path = fixture ("path-absolute.pipeline");
  g_autoptr (GError) error = NULL;
  SedpGraph *graph = sedp_graph_load (path, registry, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
  SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (pipeline);
  sedp_pipeline_free (pipeline);
}

/* ---- valid pipelines ------------------------------------------------------------------- */

static int
node_named (const SedpGraph *g, const char *name)
{
  for (guint i = 0; i < g->n_nodes; i++)
    if (strcmp (g->nodes[i].spec->name, name) == 0)
      return (int) i;
  return -1;
}

static guint
topo_position (const SedpGraph *g, guint node)
{
  for (guint t = 0; t < g->n_nodes; t++)
    if (g->topo[t] == node)
      return t;
  return G_MAXUINT;
}

static SedpGraph *
load_ok (const char *path)
{
  GError *error = NULL;
  SedpGraph *graph = sedp_graph_load (path, registry, &error);
  if (error) {
    fprintf (stderr, "\n  %s\n", error->message);
    g_error_free (error);
  }
  return graph;
}

static void
test_example_compiles (void)
{
  g_autofree char *path = g_build_filename (SEDP_TEST_SRCDIR, "..", "pipelines", "example.pipeline", NULL);
  g_autoptr (SedpGraph) g = load_ok (path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_STRING_EQUAL (g->spec->name, "example");
  CU_ASSERT_EQUAL (g->spec->deadline_ms, 200);
  CU_ASSERT_EQUAL (g->spec->frame_rows, 16);
  CU_ASSERT_EQUAL (g->spec->mode, SEDP_MODE_STAGED);
  CU_ASSERT_EQUAL (g_strv_length (g->spec->outputs), 1);
  CU_ASSERT_STRING_EQUAL (g->spec->outputs[0], "score");
  CU_ASSERT_EQUAL_FATAL (g->n_nodes, 4);
  int reader = node_named (g, "reader"), user = node_named (g, "user"),
      items = node_named (g, "items"), score = node_named (g, "score");
  CU_ASSERT_FATAL (reader >= 0 && user >= 0 && items >= 0 && score >= 0);
  CU_ASSERT_EQUAL (g->source, (guint) reader);
  CU_ASSERT_EQUAL (g->topo[0], (guint) reader);
  CU_ASSERT_EQUAL (g->topo[3], (guint) score);
  CU_ASSERT_STRING_EQUAL (g->nodes[reader].plugin->name, "passthrough");
  CU_ASSERT_STRING_EQUAL (g->nodes[score].plugin->name, "synthetic_work");
  /* Scopes: set in the file, or the plugin's default (synthetic_work: item). */
  CU_ASSERT_EQUAL (g->nodes[reader].scope, SEDP_SCOPE_REQUEST);
  CU_ASSERT_EQUAL (g->nodes[user].scope, SEDP_SCOPE_REQUEST);
  CU_ASSERT_EQUAL (g->nodes[items].scope, SEDP_SCOPE_ITEM);
  CU_ASSERT_EQUAL (g->nodes[score].scope, SEDP_SCOPE_ITEM);
  /* Runtime keys. */
  CU_ASSERT_EQUAL (g->nodes[items].spec->parallelism, 2);
  CU_ASSERT_EQUAL (g->nodes[items].spec->batch, 8);
  CU_ASSERT_EQUAL (g->nodes[items].spec->batch_timeout_us, 100);
  CU_ASSERT_EQUAL (g->nodes[reader].spec->parallelism, 1);
  CU_ASSERT_EQUAL (g->nodes[reader].spec->batch, 1);
  CU_ASSERT_EQUAL (g->nodes[score].spec->batch, 16);
  /* Every stage got its validated options. */
  for (guint i = 0; i < g->n_nodes; i++)
    CU_ASSERT_PTR_NOT_NULL (g->nodes[i].options);
  /* The join and the single sink. */
  CU_ASSERT_EQUAL_FATAL (g->nodes[score].n_inputs, 2);
  CU_ASSERT_EQUAL (g->nodes[score].inputs[0], (guint) user);
  CU_ASSERT_EQUAL (g->nodes[score].inputs[1], (guint) items);
  CU_ASSERT_EQUAL_FATAL (g->n_sinks, 1);
  CU_ASSERT_EQUAL (g->sinks[0], (guint) score);

  g_autoptr (GString) out = g_string_new (NULL);
  sedp_graph_describe (g, out);
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "pipeline example"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "[source]"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "after=user,items [join] [sink]"));
}

static void
test_defaults (void)
{
  const char text[] = "[stage only]\nplugin = passthrough\nscope = request\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec =
      sedp_pipeline_spec_parse (text, sizeof text - 1, "some/where/ctr-v2.pipeline", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_STRING_EQUAL (spec->name, "ctr-v2"); /* the file name without its extension */
  CU_ASSERT_EQUAL (spec->deadline_ms, 100);
  CU_ASSERT_EQUAL (spec->frame_rows, 64);
  CU_ASSERT_EQUAL (spec->mode, SEDP_MODE_STAGED);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec->outputs);
  CU_ASSERT_PTR_NULL (spec->outputs[0]);
  CU_ASSERT_TRUE (g_path_is_absolute (spec->dir));
  CU_ASSERT_TRUE (g_str_has_suffix (spec->dir, "some/where"));
  CU_ASSERT_EQUAL_FATAL (spec->stages->len, 1);
  const SedpStageSpec *s = spec->stages->pdata[0];
  CU_ASSERT_EQUAL (s->scope, SEDP_SCOPE_REQUEST);
  CU_ASSERT_EQUAL (s->parallelism, 1);
  CU_ASSERT_EQUAL (s->batch, 1);
  CU_ASSERT_EQUAL (s->line, 1);
  CU_ASSERT_PTR_NULL (s->after[0]);
  CU_ASSERT_PTR_NULL (s->option_keys[0]);
}

/* diamond.pipeline lists its stages out of order: rank (join of user and items), items, log
 * (a second sink after items), user, src. */
static void
test_topological_order (void)
{
  g_autofree char *path = fixture ("diamond.pipeline");
  g_autoptr (SedpGraph) g = load_ok (path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_EQUAL (g->spec->mode, SEDP_MODE_SYNC);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (g->spec->outputs), 2);
  CU_ASSERT_STRING_EQUAL (g->spec->outputs[0], "score");
  CU_ASSERT_STRING_EQUAL (g->spec->outputs[1], "ctr");
  CU_ASSERT_EQUAL_FATAL (g->n_nodes, 5);
  int src = node_named (g, "src");
  CU_ASSERT_EQUAL (g->source, (guint) src);
  CU_ASSERT_EQUAL (g->topo[0], (guint) src);
  /* A permutation in which every stage comes after all of its inputs. */
  g_autofree guint8 *seen = g_new0 (guint8, g->n_nodes);
  for (guint t = 0; t < g->n_nodes; t++) {
    CU_ASSERT_FATAL (g->topo[t] < g->n_nodes);
    CU_ASSERT_FALSE (seen[g->topo[t]]);
    seen[g->topo[t]] = 1;
  }
  for (guint i = 0; i < g->n_nodes; i++)
    for (guint k = 0; k < g->nodes[i].n_inputs; k++)
      CU_ASSERT (topo_position (g, g->nodes[i].inputs[k]) < topo_position (g, i));
  CU_ASSERT (topo_position (g, node_named (g, "rank")) > topo_position (g, node_named (g, "user")));
  CU_ASSERT (topo_position (g, node_named (g, "rank")) > topo_position (g, node_named (g, "items")));
}

static void
test_join_detection (void)
{
  g_autofree char *path = fixture ("diamond.pipeline");
  g_autoptr (SedpGraph) g = load_ok (path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  int rank = node_named (g, "rank"), user = node_named (g, "user"), items = node_named (g, "items"),
      log = node_named (g, "log"), src = node_named (g, "src");
  /* Only rank has two inputs, in `after` order. */
  for (guint i = 0; i < g->n_nodes; i++)
    CU_ASSERT_EQUAL (g->nodes[i].n_inputs, i == (guint) rank ? 2u : i == (guint) src ? 0u : 1u);
  CU_ASSERT_EQUAL (g->nodes[rank].inputs[0], (guint) user);
  CU_ASSERT_EQUAL (g->nodes[rank].inputs[1], (guint) items);
  /* Each output records the input slot it feeds: user -> rank slot 0, items -> rank slot 1. */
  CU_ASSERT_EQUAL_FATAL (g->nodes[user].n_outputs, 1);
  CU_ASSERT_EQUAL (g->nodes[user].outputs[0], (guint) rank);
  CU_ASSERT_EQUAL (g->nodes[user].output_slots[0], 0);
  CU_ASSERT_EQUAL_FATAL (g->nodes[items].n_outputs, 2);
  for (guint k = 0; k < 2; k++) {
    guint to = g->nodes[items].outputs[k];
    CU_ASSERT (to == (guint) rank || to == (guint) log);
    CU_ASSERT_EQUAL (g->nodes[items].output_slots[k], to == (guint) rank ? 1u : 0u);
  }
  CU_ASSERT_EQUAL (g->nodes[src].n_outputs, 2);
  CU_ASSERT_EQUAL (g->nodes[items].spec->parallelism, 3);
  CU_ASSERT_EQUAL (g->nodes[items].spec->batch, 12);
  CU_ASSERT_EQUAL (g->nodes[log].scope, SEDP_SCOPE_REQUEST);
  CU_ASSERT_EQUAL (g->nodes[items].scope, SEDP_SCOPE_ITEM);

  g_autoptr (GString) out = g_string_new (NULL);
  sedp_graph_describe (g, out);
  g_auto (GStrv) lines = g_strsplit (out->str, "\n", -1);
  guint joins = 0;
  for (guint i = 0; lines[i]; i++)
    if (strstr (lines[i], "[join]")) {
      joins++;
      CU_ASSERT_PTR_NOT_NULL (strstr (lines[i], "rank"));
    }
  CU_ASSERT_EQUAL (joins, 1);
}

static void
test_sinks (void)
{
  g_autofree char *path = fixture ("diamond.pipeline");
  g_autoptr (SedpGraph) g = load_ok (path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_EQUAL_FATAL (g->n_sinks, 2);
  int rank = node_named (g, "rank"), log = node_named (g, "log");
  CU_ASSERT ((g->sinks[0] == (guint) rank && g->sinks[1] == (guint) log) ||
             (g->sinks[0] == (guint) log && g->sinks[1] == (guint) rank));
  for (guint i = 0; i < g->n_sinks; i++)
    CU_ASSERT_EQUAL (g->nodes[g->sinks[i]].n_outputs, 0);

  g_autoptr (GString) out = g_string_new (NULL);
  sedp_graph_describe (g, out);
  guint sinks = 0;
  for (const char *p = out->str; (p = strstr (p, "[sink]")); p++)
    sinks++;
  CU_ASSERT_EQUAL (sinks, 2);
}

static void
test_write_dot (void)
{
  g_autofree char *path = fixture ("diamond.pipeline");
  g_autoptr (SedpGraph) g = load_ok (path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_graph_write_dot (g, out);
  CU_ASSERT_TRUE (g_str_has_prefix (out->str, "digraph \"diamond\" {"));
  CU_ASSERT_TRUE (g_str_has_suffix (out->str, "}\n"));
  const char *const edges[] = {"\"src\" -> \"items\";", "\"src\" -> \"user\";",
                               "\"user\" -> \"rank\";", "\"items\" -> \"rank\";",
                               "\"items\" -> \"log\";"};
  for (guint i = 0; i < G_N_ELEMENTS (edges); i++) {
    if (!strstr (out->str, edges[i]))
      fprintf (stderr, "\n  dot output lacks %s:\n%s", edges[i], out->str);
    CU_ASSERT_PTR_NOT_NULL (strstr (out->str, edges[i]));
  }
  guint arrows = 0;
  for (const char *p = out->str; (p = strstr (p, " -> ")); p++)
    arrows++;
  CU_ASSERT_EQUAL (arrows, 5);
  /* Every stage is a node, with its plugin in the label. */
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "\"rank\" [label=\"rank\\nsynthetic_work"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "\"src\" [label=\"src\\npassthrough"));
}

/* ---- writing pipelines: the round trip, the in-place edit, [tune] --------------------- */

/* Parses @path, writes it, parses the text back with the same path and checks that the two
 * specs are equal, that writing again gives the same text, and that the written pipeline
 * compiles when the original does. Returns FALSE when @path itself does not parse. */
static gboolean
round_trip (const char *path, GError **parse_error)
{
  g_autoptr (SedpPipelineSpec) spec = sedp_pipeline_spec_load (path, parse_error);
  if (spec == NULL)
    return FALSE;
  g_autoptr (GError) error = NULL;
  g_autofree char *text = sedp_pipeline_spec_to_keyfile (spec, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (text);
  g_autoptr (SedpPipelineSpec) back = sedp_pipeline_spec_parse (text, strlen (text), path, &error);
  if (back == NULL || !sedp_pipeline_spec_equal (spec, back))
    fprintf (stderr, "\n  %s: round trip differs (%s); written:\n%s", path,
             error ? error->message : "specs differ", text);
  CU_ASSERT (back && sedp_pipeline_spec_equal (spec, back));
  if (back == NULL)
    return TRUE;
  g_autofree char *again = sedp_pipeline_spec_to_keyfile (back, NULL);
  CU_ASSERT_STRING_EQUAL (again, text);
  g_autoptr (SedpGraph) original = sedp_graph_compile (g_steal_pointer (&spec), registry, NULL);
  if (original) {
    g_autoptr (SedpGraph) written = sedp_graph_compile (g_steal_pointer (&back), registry, &error);
    if (error)
      fprintf (stderr, "\n  %s: written copy does not compile: %s\n", path, error->message);
    CU_ASSERT_PTR_NOT_NULL (written);
  }
  return TRUE;
}

/* Every *.pipeline under @dir (recursively) into @found. */
static void
find_pipelines (const char *dir, GPtrArray *found)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (dir, n, NULL);
    if (g_file_test (p, G_FILE_TEST_IS_DIR))
      find_pipelines (p, found);
    else if (g_str_has_suffix (n, ".pipeline"))
      g_ptr_array_add (found, g_steal_pointer (&p));
  }
}

/* Every pipeline file of the repository, found at test time: those of pipelines/ and examples/
 * must parse (or miss only generated data, an IO error: examples/ctr/data is made by
 * examples/ctr/prepare); those of tests/ that parse (not the error fixtures) are checked too. */
static void
test_round_trip_repository_pipelines (void)
{
  const char *const folders[] = {"pipelines", "examples", "tests"};
  guint checked = 0;
  for (guint f = 0; f < G_N_ELEMENTS (folders); f++) {
    g_autofree char *dir = g_build_filename (SEDP_TEST_SRCDIR, "..", folders[f], NULL);
    g_autoptr (GPtrArray) files = g_ptr_array_new_with_free_func (g_free);
    find_pipelines (dir, files);
    for (guint i = 0; i < files->len; i++) {
      g_autoptr (GError) error = NULL;
      if (round_trip (files->pdata[i], &error)) {
        checked++;
      } else if (strcmp (folders[f], "tests") != 0) {
        if (error->code != SEDP_DSL_ERROR_IO)
          fprintf (stderr, "\n  %s\n", error->message);
        CU_ASSERT_EQUAL (error->code, SEDP_DSL_ERROR_IO);
      }
    }
  }
  if (checked < 4)
    fprintf (stderr, "\n  only %u pipeline files round-tripped\n", checked);
  CU_ASSERT (checked >= 4);
}

/* Every kind of key, escapes, a substituted value, a warm-up file and [tune]. */
static void
test_round_trip_every_key (void)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-dsl-write-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dir);
  g_autofree char *path = g_build_filename (dir, "rt.pipeline", NULL);
  g_autofree char *warm = g_build_filename (dir, "warm.jsonl", NULL);
  CU_ASSERT_TRUE (g_file_set_contents (warm, "{\"items\": [{\"id\": 1}]}\n", -1, NULL));
  const char text[] =
      "# every kind of key\n[pipeline]\nname = rt\ndeadline_ms = 100\nmode = sync\n"
      "sync_workers = 3\nidle_spin_us = 0\noutputs = a, b\ncpus = 0,2-3\nwarmup = warm.jsonl\n"
      "warmup_repeat = 2\n\n[stage src]\nplugin = passthrough\nscope = request\ncpus = 1\n"
      "queue_capacity = 16\n\n[stage work]\nplugin = synthetic_work\nafter = src\n"
      "parallelism = 2\nbatch = 8\nbatch_timeout_us = 100\ndrop_columns = x_*, y\n"
      "output = tab\\there\nspin_us = ${SEDP_TEST_RT_SPIN:-2.5}\ndistribution = fixed\n\n"
      "[tune]\nstage.work.batch = int 1..64 log\nstage.*.parallelism = int 1..${N}\n";
  CU_ASSERT_TRUE (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE (round_trip (path, &error));
  g_autoptr (SedpPipelineSpec) spec = sedp_pipeline_spec_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autofree char *out = sedp_pipeline_spec_to_keyfile (spec, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (out);
  g_autofree char *warm_line = g_strdup_printf ("warmup = %s\n", spec->warmup);
  const char *const present[] = {"deadline_ms = 100\n", "mode = sync\n", "cpus = 0,2-3\n",
                                 warm_line, "output = tab\\there\n", "spin_us = 2.5\n",
                                 "drop_columns = x_*, y\n", "after = src\n", "scope = request\n",
                                 "stage.*.parallelism = int 1..${N}\n"};
  for (guint i = 0; i < G_N_ELEMENTS (present); i++) {
    if (!strstr (out, present[i]))
      fprintf (stderr, "\n  written text lacks '%s':\n%s", present[i], out);
    CU_ASSERT_PTR_NOT_NULL (strstr (out, present[i]));
  }
  /* Defaults the file did not set are left out: src's parallelism and batch. */
  const char *src = strstr (out, "[stage src]");
  CU_ASSERT_PTR_NOT_NULL_FATAL (src);
  CU_ASSERT_PTR_NULL (g_strstr_len (src, strstr (src, "[stage work]") - src, "batch"));
  remove_scratch (dir);
}

static void
test_write_refuses_literal_substitution (void)
{
  g_setenv ("SEDP_TEST_DOLLAR", "${HOME}", TRUE);
  const char text[] = "[stage s]\nplugin = synthetic_work\noutput = ${SEDP_TEST_DOLLAR}\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec =
      sedp_pipeline_spec_parse (text, sizeof text - 1, "dollar.pipeline", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autofree char *out = sedp_pipeline_spec_to_keyfile (spec, &error);
  CU_ASSERT_PTR_NULL (out);
  ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE, "dollar.pipeline",
                 "[stage s] output", "'${HOME}'");
  g_unsetenv ("SEDP_TEST_DOLLAR");
}

static void
test_spec_equal (void)
{
  const char text[] = "[pipeline]\nframe_rows = 8\n[stage a]\nplugin = passthrough\n"
                      "scope = request\ncpus = 1\n[stage b]\nplugin = synthetic_work\nafter = a\n"
                      "spin_us = 2\n[tune]\nx = 1\n";
  SedpPipelineSpec *s[2];
  for (guint i = 0; i < 2; i++)
    s[i] = sedp_pipeline_spec_parse (text, sizeof text - 1, "eq.pipeline", NULL);
  CU_ASSERT_FATAL (s[0] && s[1]);
  CU_ASSERT_TRUE (sedp_pipeline_spec_equal (s[0], s[1]));
  SedpStageSpec *b = s[1]->stages->pdata[1], *a = s[1]->stages->pdata[0];
  b->batch = 2;
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (s[0], s[1]));
  b->batch = 1;
  g_free (b->option_values[0]);
  b->option_values[0] = g_strdup ("3");
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (s[0], s[1]));
  g_free (b->option_values[0]);
  b->option_values[0] = g_strdup ("2");
  a->cpus[0] = 2;
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (s[0], s[1]));
  a->cpus[0] = 1;
  g_free (s[1]->tune_values[0]);
  s[1]->tune_values[0] = g_strdup ("2");
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (s[0], s[1]));
  g_free (s[1]->tune_values[0]);
  s[1]->tune_values[0] = g_strdup ("1");
  s[1]->frame_rows = 9;
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (s[0], s[1]));
  s[1]->frame_rows = 8;
  CU_ASSERT_TRUE (sedp_pipeline_spec_equal (s[0], s[1]));
  sedp_pipeline_spec_free (s[0]);
  sedp_pipeline_spec_free (s[1]);
}

/* sedp_pipeline_text_set (@text, @group, @key, @value) gives @expected, byte for byte. */
static void
assert_text_set (const char *text, const char *group, const char *key, const char *value,
                 const char *expected)
{
  g_autofree char *out = sedp_pipeline_text_set (text, group, key, value);
  if (g_strcmp0 (out, expected) != 0)
    fprintf (stderr, "\n  set [%s] %s = %s gave:\n%s\n  expected:\n%s\n", group, key, value, out,
             expected);
  CU_ASSERT_STRING_EQUAL (out, expected);
}

static void
test_text_set (void)
{
  const char crlf[] = "# head\r\n[pipeline]\r\nname = x\r\n\r\n[stage  work]\r\n"
                      "plugin = synthetic_work\r\nbatch_timeout_us = 5\r\nbatch =  4   \r\n"
                      "# the end of work\r\n\r\n[tune]\r\nk = v\r\n";
  /* An existing value: only its bytes change (not batch_timeout_us, whose name begins alike). */
  assert_text_set (crlf, "stage work", "batch", "16",
                   "# head\r\n[pipeline]\r\nname = x\r\n\r\n[stage  work]\r\n"
                   "plugin = synthetic_work\r\nbatch_timeout_us = 5\r\nbatch =  16   \r\n"
                   "# the end of work\r\n\r\n[tune]\r\nk = v\r\n");
  /* An absent key: after the group's last key, before its trailing comment, with \r\n. */
  assert_text_set (crlf, "stage work", "parallelism", "2",
                   "# head\r\n[pipeline]\r\nname = x\r\n\r\n[stage  work]\r\n"
                   "plugin = synthetic_work\r\nbatch_timeout_us = 5\r\nbatch =  4   \r\n"
                   "parallelism = 2\r\n# the end of work\r\n\r\n[tune]\r\nk = v\r\n");
  /* A group with no key yet, a last line without its ending, an absent group. */
  assert_text_set ("[pipeline]\n[stage a]\nplugin = p", "pipeline", "frame_rows", "32",
                   "[pipeline]\nframe_rows = 32\n[stage a]\nplugin = p");
  assert_text_set ("[stage a]\nplugin = p", "stage a", "batch", "2",
                   "[stage a]\nplugin = p\nbatch = 2\n");
  assert_text_set ("[stage a]\nplugin = p\n", "pipeline", "frame_rows", "32",
                   "[stage a]\nplugin = p\n\n[pipeline]\nframe_rows = 32\n");
  assert_text_set ("", "pipeline", "name", "n", "[pipeline]\nname = n\n");
  /* Values are escaped; an empty value; '=' in the old value. */
  assert_text_set ("[stage a]\nx = 1\n", "stage a", "x", "a\\b\tc", "[stage a]\nx = a\\\\b\\tc\n");
  assert_text_set ("[stage a]\nx = a=b\n", "stage a", "x", "", "[stage a]\nx = \n");
  /* The result parses, with the new value. */
  g_autofree char *set = sedp_pipeline_text_set (crlf, "stage work", "batch", "16");
  g_autoptr (SedpPipelineSpec) spec =
      sedp_pipeline_spec_parse (set, strlen (set), "set.pipeline", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_EQUAL (((SedpStageSpec *) spec->stages->pdata[0])->batch, 16);
  CU_ASSERT_EQUAL (((SedpStageSpec *) spec->stages->pdata[0])->batch_timeout_us, 5);
}

static void
test_tune_group_kept (void)
{
  const char text[] = "[stage reader]\nplugin = passthrough\nscope = request\n\n# the space\n"
                      "[tune]\nstage.*.batch = int 1..${N:-64} log\n\nmax_workers = 6\n"
                      "[stage s]\nplugin = synthetic_work\nafter = reader\n";
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, sizeof text - 1, "t.pipeline", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_EQUAL (spec->tune_line, 6);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (spec->tune_keys), 2);
  CU_ASSERT_STRING_EQUAL (spec->tune_keys[0], "stage.*.batch");
  CU_ASSERT_STRING_EQUAL (spec->tune_values[0], "int 1..${N:-64} log"); /* raw */
  CU_ASSERT_EQUAL (spec->tune_lines[0], 7);
  CU_ASSERT_STRING_EQUAL (spec->tune_keys[1], "max_workers");
  CU_ASSERT_STRING_EQUAL (spec->tune_values[1], "6");
  CU_ASSERT_EQUAL (spec->tune_lines[1], 9);
  CU_ASSERT_EQUAL (spec->stages->len, 2);
  /* The pipeline ignores it: the graph compiles. */
  g_autoptr (SedpGraph) graph = sedp_graph_compile (spec, registry, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (graph);
  /* Without the group: none. */
  const char plain[] = "[stage reader]\nplugin = passthrough\n";
  g_autoptr (SedpPipelineSpec) none =
      sedp_pipeline_spec_parse (plain, sizeof plain - 1, "n.pipeline", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (none);
  CU_ASSERT_EQUAL (none->tune_line, 0);
  CU_ASSERT_PTR_NULL (none->tune_keys[0]);
  /* The unknown-group message names it among the known ones. */
  ASSERT_DSL_ERROR ("unknown-group.pipeline", SEDP_DSL_ERROR_UNKNOWN_GROUP, "[tune]");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("dsl", suite_init, suite_cleanup);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
    T (test_syntax_error),
    T (test_syntax_error_names_line_and_group),
    T (test_syntax_key_before_group),
    T (test_unknown_group),
    T (test_bad_stage_name),
    T (test_group_twice),
    T (test_stage_twice),
    T (test_key_twice),
    T (test_unknown_pipeline_key),
    T (test_unknown_option),
    T (test_bad_batch),
    T (test_bad_double),
    T (test_bad_bool),
    T (test_batch_zero),
    T (test_parallelism_out_of_range),
    T (test_double_option_out_of_range),
    T (test_bad_mode),
    T (test_bad_scope),
    T (test_bad_enum_option),
    T (test_missing_plugin_key),
    T (test_missing_required_option),
    T (test_plugin_bad_default),
    T (test_unknown_plugin),
    T (test_unknown_stage_in_after),
    T (test_stage_twice_in_after),
    T (test_graph_errors_point_at_key_line),
    T (test_cycle),
    T (test_unreachable),
    T (test_no_source),
    T (test_no_sink),
    T (test_source_item_scope),
    T (test_empty_file),
    T (test_non_utf8),
    T (test_nonexistent_file),
    T (test_env_substitution),
    T (test_env_unset),
    T (test_warmup_keys),
    T (test_env_unterminated),
    T (test_substitute),
    T (test_path_option_relative_to_pipeline_file),
    T (test_path_option_absolute),
    T (test_example_compiles),
    T (test_defaults),
    T (test_topological_order),
    T (test_join_detection),
    T (test_sinks),
    T (test_write_dot),
    T (test_round_trip_repository_pipelines),
    T (test_round_trip_every_key),
    T (test_write_refuses_literal_substitution),
    T (test_spec_equal),
    T (test_text_set),
    T (test_tune_group_kept),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  return sedp_test_run ();
}
