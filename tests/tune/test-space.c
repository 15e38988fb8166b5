/* sedp tests — the search space of `sedp tune` (core/tune/space.h): the [tune] group's forms,
 * wildcards, the default space, the optimiser's box, candidates written back as pipeline text
 * with the worker limit, a space file, and one test per error (its code, and the names its
 * message must carry: file, line, [tune], key, values). */
#include "test-common.h"
#include "test-spec.h"

#include "graph/graph.h"
#include "tune/space.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static SedpRegistry *registry; /* build/plugins */

static int
suite_init (void)
{
  const char *const dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  return registry ? 0 : 1;
}

static int
suite_cleanup (void)
{
  g_clear_pointer (&registry, sedp_registry_free);
  return 0;
}

/* Four stages of four plugins; [tune] follows on line BASE_LINES + 1. */
static const char base[] = "[pipeline]\n"
                           "frame_rows = 32\n"
                           "\n"
                           "[stage reader]\n"
                           "plugin = passthrough\n"
                           "scope = request\n"
                           "\n"
                           "[stage work]\n"
                           "plugin = synthetic_work\n"
                           "after = reader\n"
                           "# two workers\n"
                           "parallelism = 2\n"
                           "spin_us = 2\n"
                           "distribution = fixed\n"
                           "\n"
                           "[stage model]\n"
                           "plugin = model_inference\n"
                           "after = work\n"
                           "model = m.onnx\n"
                           "batch = 8\n"
                           "\n"
                           "[stage lookup]\n"
                           "plugin = cube_accessor\n"
                           "after = model\n"
                           "backend = cached\n"
                           "slots = a\n"
                           "memory_entries = 1000\n";
#define BASE_LINES 27u

static char *
with_tune (const char *tune)
{
  return g_strconcat (base, "[tune]\n", tune, NULL);
}

static SedpPipelineSpec *
parse_text (const char *text)
{
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "tune.pipeline", &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  return spec;
}

/* The space of @tune (lines of a [tune] group) over the base pipeline. */
static SedpTuneSpace *
space_of (const char *tune, GError **error)
{
  g_autofree char *text = with_tune (tune);
  g_autoptr (SedpPipelineSpec) spec = parse_text (text);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  return sedp_tune_space_parse (spec, spec, registry, error);
}

static const SedpTuneParam *
param_named (const SedpTuneSpace *space, const char *address)
{
  for (guint i = 0; i < sedp_tune_space_n_params (space); i++)
    if (strcmp (sedp_tune_space_param (space, i)->address, address) == 0)
      return sedp_tune_space_param (space, i);
  fprintf (stderr, "\n  no parameter %s\n", address);
  return NULL;
}

static int
param_index (const SedpTuneSpace *space, const char *address)
{
  for (guint i = 0; i < sedp_tune_space_n_params (space); i++)
    if (strcmp (sedp_tune_space_param (space, i)->address, address) == 0)
      return (int) i;
  return -1;
}

/* ---- the forms of [tune] ------------------------------------------------------------------ */

static const char every_form[] = "stage.work.batch = int 1..64\n"
                                 "stage.*.batch_timeout_us = int 0..4000 log\n"
                                 "pipeline.frame_rows = int 16..256 log\n"
                                 "stage.work.spin_us = real 0.5..20 log\n"
                                 "stage.model.drop_inputs = bool\n"
                                 "stage.work.distribution = enum fixed|exponential\n"
                                 "stage.model.select = enum mod|rr\n"
                                 "max_workers = 6\n";

static void
assert_param (const SedpTuneParam *p, const char *group, const char *key, SedpTuneType type,
              double low, double high, gboolean log, double start, gboolean runtime, guint line)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_STRING_EQUAL (p->group, group);
  CU_ASSERT_STRING_EQUAL (p->key, key);
  CU_ASSERT_EQUAL (p->type, type);
  CU_ASSERT_DOUBLE_EQUAL (p->low, low, 0);
  CU_ASSERT_DOUBLE_EQUAL (p->high, high, 0);
  CU_ASSERT_EQUAL (p->log, log);
  if (isnan (start)) {
    CU_ASSERT (isnan (p->start));
  } else {
    CU_ASSERT_DOUBLE_EQUAL (p->start, start, 0);
  }
  CU_ASSERT_EQUAL (p->runtime, runtime);
  CU_ASSERT_EQUAL (p->line, line);
}

static void
test_every_form (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = space_of (every_form, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  CU_ASSERT_EQUAL (sedp_tune_space_n_params (space), 10);
  CU_ASSERT_EQUAL (sedp_tune_space_max_workers (space), 6);
  guint l = BASE_LINES + 2;
  assert_param (param_named (space, "stage.work.batch"), "stage work", "batch", SEDP_TUNE_INT, 1,
                64, FALSE, 1, TRUE, l);
  /* The wildcard: one per stage, in file order, right after. */
  const char *const stages[] = {"reader", "work", "model", "lookup"};
  for (guint i = 0; i < 4; i++) {
    const SedpTuneParam *p = sedp_tune_space_param (space, 1 + i);
    CU_ASSERT_STRING_EQUAL (p->stage, stages[i]);
    assert_param (p, p->group, "batch_timeout_us", SEDP_TUNE_INT, 0, 4000, TRUE, 0, TRUE, l + 1);
  }
  const SedpTuneParam *rows = param_named (space, "pipeline.frame_rows");
  assert_param (rows, "pipeline", "frame_rows", SEDP_TUNE_INT, 16, 256, TRUE, 32, TRUE, l + 2);
  CU_ASSERT_PTR_NULL (rows->stage);
  assert_param (param_named (space, "stage.work.spin_us"), "stage work", "spin_us",
                SEDP_TUNE_REAL, 0.5, 20, TRUE, 2, FALSE, l + 3);
  /* Options the file does not set start from the plugin's default (false, rr). */
  assert_param (param_named (space, "stage.model.drop_inputs"), "stage model", "drop_inputs",
                SEDP_TUNE_BOOL, 0, 1, FALSE, 0, FALSE, l + 4);
  const SedpTuneParam *d = param_named (space, "stage.work.distribution");
  assert_param (d, "stage work", "distribution", SEDP_TUNE_ENUM, 0, 1, FALSE, 0, FALSE, l + 5);
  CU_ASSERT_STRING_EQUAL (d->choices[1], "exponential");
  CU_ASSERT_PTR_NULL (d->choices[2]);
  assert_param (param_named (space, "stage.model.select"), "stage model", "select",
                SEDP_TUNE_ENUM, 0, 1, FALSE, 1, FALSE, l + 6);
}

/* A stage named for a key overrides the wildcard for it, before or after; a wildcard of an
 * option covers the stages whose plugin has it. */

/* The workers of @spec as written: the default max_workers less the cores. */
static guint
written_workers (const SedpPipelineSpec *spec)
{
  guint n = 0;
  for (guint i = 0; i < spec->stages->len; i++)
    n += ((const SedpStageSpec *) spec->stages->pdata[i])->parallelism;
  return n;
}

static void
test_wildcard_override (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = space_of ("stage.*.parallelism = int 1..4\n"
                                              "stage.work.parallelism = int 1..8\n"
                                              "stage.*.spin_us = real 0..10\n",
                                              &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  CU_ASSERT_EQUAL (sedp_tune_space_n_params (space), 5);
  CU_ASSERT_STRING_EQUAL (sedp_tune_space_param (space, 0)->address, "stage.reader.parallelism");
  CU_ASSERT_STRING_EQUAL (sedp_tune_space_param (space, 1)->address, "stage.model.parallelism");
  CU_ASSERT_STRING_EQUAL (sedp_tune_space_param (space, 2)->address, "stage.lookup.parallelism");
  const SedpTuneParam *work = sedp_tune_space_param (space, 3);
  CU_ASSERT_STRING_EQUAL (work->address, "stage.work.parallelism");
  CU_ASSERT_DOUBLE_EQUAL (work->high, 8, 0);
  CU_ASSERT_DOUBLE_EQUAL (work->start, 2, 0);
  CU_ASSERT_EQUAL (work->line, BASE_LINES + 3);
  CU_ASSERT_STRING_EQUAL (sedp_tune_space_param (space, 4)->address, "stage.work.spin_us");
  g_autoptr (SedpPipelineSpec) spec = parse_text (base);
  CU_ASSERT_EQUAL (sedp_tune_space_max_workers (space),
                   written_workers (spec) + MAX (g_get_num_processors (), 1));
}

static void
test_default_space (void)
{
  g_autoptr (SedpPipelineSpec) spec = parse_text (base);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_default (spec, registry, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  guint cores = MAX (g_get_num_processors (), 1);
  CU_ASSERT_EQUAL (sedp_tune_space_max_workers (space), written_workers (spec) + cores);
  CU_ASSERT_EQUAL (written_workers (spec), 5); /* reader, work × 2, model, lookup */
  /* parallelism 1..cores (left out where that is one value; work's 2 widens it) */
  const char *const stages[] = {"reader", "work", "model", "lookup"};
  guint with_parallelism = 0;
  for (guint i = 0; i < 4; i++) {
    g_autofree char *a = g_strdup_printf ("stage.%s.parallelism", stages[i]);
    g_autofree char *b = g_strdup_printf ("stage.%s.batch", stages[i]);
    g_autofree char *t = g_strdup_printf ("stage.%s.batch_timeout_us", stages[i]);
    double top = MAX (cores, i == 1 ? 2 : 1);
    if (top > 1) {
      with_parallelism++;
      assert_param (param_named (space, a), param_named (space, a)->group, "parallelism",
                    SEDP_TUNE_INT, 1, top, FALSE, i == 1 ? 2 : 1, TRUE, 0);
    }
    assert_param (param_named (space, b), param_named (space, b)->group, "batch", SEDP_TUNE_INT,
                  1, 64, TRUE, i == 2 ? 8 : 1, TRUE, 0);
    assert_param (param_named (space, t), param_named (space, t)->group, "batch_timeout_us",
                  SEDP_TUNE_INT, 0, 4000, TRUE, 0, TRUE, 0);
  }
  assert_param (param_named (space, "pipeline.frame_rows"), "pipeline", "frame_rows",
                SEDP_TUNE_INT, 16, 256, TRUE, 32, TRUE, 0);
  assert_param (param_named (space, "pipeline.idle_spin_us"), "pipeline", "idle_spin_us",
                SEDP_TUNE_INT, 0, 1000, TRUE, 50, TRUE, 0);
  /* The cached backend's memory tier, 1/16 to 16 times its value. */
  assert_param (param_named (space, "stage.lookup.memory_entries"), "stage lookup",
                "memory_entries", SEDP_TUNE_INT, 62, 16000, TRUE, 1000, FALSE, 0);
  CU_ASSERT_EQUAL (sedp_tune_space_n_params (space), with_parallelism + 4 * 2 + 3);
}

/* ---- the optimiser's box and the candidates ---------------------------------------------- */

static void
test_to_cmaes (void)
{
  g_autoptr (SedpTuneSpace) space = space_of (every_form, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  SedpCmaesOptions opt;
  sedp_cmaes_options_init (&opt);
  sedp_tune_space_to_cmaes (space, &opt);
  CU_ASSERT_EQUAL_FATAL (opt.n, 10);
  int batch = param_index (space, "stage.work.batch");
  int rows = param_index (space, "pipeline.frame_rows");
  int spin = param_index (space, "stage.work.spin_us");
  int drop = param_index (space, "stage.model.drop_inputs");
  int sel = param_index (space, "stage.model.select");
  int bto = param_index (space, "stage.work.batch_timeout_us");
  CU_ASSERT_FATAL (batch >= 0 && rows >= 0 && spin >= 0 && drop >= 0 && sel >= 0 && bto >= 0);
  /* int: as is, integer; int log: log(1 + v), real; real log: log(v); bool, enum: integers. */
  CU_ASSERT (opt.lower[batch] == 1 && opt.upper[batch] == 64 && opt.integer[batch]);
  CU_ASSERT (opt.x0[batch] == 1);
  CU_ASSERT_DOUBLE_EQUAL (opt.lower[rows], log (17), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (opt.upper[rows], log (257), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (opt.x0[rows], log (33), 1e-12);
  CU_ASSERT_FALSE (opt.integer[rows]);
  CU_ASSERT (opt.lower[bto] == 0 && opt.x0[bto] == 0);
  CU_ASSERT_DOUBLE_EQUAL (opt.lower[spin], log (0.5), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (opt.upper[spin], log (20), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (opt.x0[spin], log (2), 1e-12);
  CU_ASSERT (opt.lower[drop] == 0 && opt.upper[drop] == 1 && opt.integer[drop]);
  CU_ASSERT (opt.x0[drop] == 0);
  CU_ASSERT (opt.lower[sel] == 0 && opt.upper[sel] == 1 && opt.integer[sel] && opt.x0[sel] == 1);
  CU_ASSERT_DOUBLE_EQUAL (opt.sigma0, 0.3, 0); /* left as it was */
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpCmaes) es = sedp_cmaes_new (&opt, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (es);
}

/* A start outside the range is moved into it; none (an enum word not listed) is NaN. */
static void
test_start_outside_range (void)
{
  g_autoptr (SedpTuneSpace) space = space_of ("stage.model.batch = int 1..4\n"
                                              "stage.work.distribution = enum pareto|lognormal\n",
                                              NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  CU_ASSERT_DOUBLE_EQUAL (sedp_tune_space_param (space, 0)->start, 8, 0);
  CU_ASSERT (isnan (sedp_tune_space_param (space, 1)->start));
  SedpCmaesOptions opt;
  sedp_cmaes_options_init (&opt);
  sedp_tune_space_to_cmaes (space, &opt);
  CU_ASSERT_DOUBLE_EQUAL (opt.x0[0], 4, 0);
  CU_ASSERT (isnan (opt.x0[1]));
}

static void
test_values (void)
{
  g_autoptr (SedpTuneSpace) space = space_of (every_form, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  struct {
    const char *address;
    double x;
    const char *value;
  } cases[] = {
    {"stage.work.batch", 7.4, "7"},          {"stage.work.batch", 99, "64"},
    {"pipeline.frame_rows", log (33), "32"}, {"pipeline.frame_rows", log (1e9), "256"},
    {"stage.work.spin_us", log (3.3), "3.3"}, {"stage.work.spin_us", log (20) + 1e-15, "20"},
    {"stage.model.drop_inputs", 1, "true"},  {"stage.model.drop_inputs", 0, "false"},
    {"stage.model.select", 0, "mod"},        {"stage.work.distribution", 1, "exponential"},
    {"stage.reader.batch_timeout_us", 0, "0"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    int k = param_index (space, cases[i].address);
    CU_ASSERT_FATAL (k >= 0);
    g_autofree char *v = sedp_tune_space_value (space, (guint) k, cases[i].x);
    if (strcmp (v, cases[i].value) != 0)
      fprintf (stderr, "\n  %s at %g: '%s', expected '%s'\n", cases[i].address, cases[i].x, v,
               cases[i].value);
    CU_ASSERT_STRING_EQUAL (v, cases[i].value);
  }
}



/* A candidate: every parameter set in the text (added where absent), the rest kept, and the
 * worker limit. */
static void
test_apply (void)
{
  g_autofree char *text = with_tune ("stage.*.parallelism = int 1..4\n"
                                     "stage.model.batch = int 1..64 log\n"
                                     "pipeline.idle_spin_us = int 0..100\n"
                                     "stage.model.drop_inputs = bool\n"
                                     "stage.work.spin_us = real 0.5..20\n"
                                     "max_workers = 6\n");
  g_autoptr (SedpPipelineSpec) spec = parse_text (text);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_parse (spec, spec, registry, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  CU_ASSERT_EQUAL_FATAL (sedp_tune_space_n_params (space), 8);
  double x[8] = {1, 1, 3, 1, log (17), 7, 1, 2.25}, violation = -1;
  g_autofree char *out = sedp_tune_space_apply (space, x, text, &violation);
  CU_ASSERT_DOUBLE_EQUAL (violation, 0, 0); /* 1 + 1 + 3 + 1 ≤ 6 */
  g_autoptr (SedpPipelineSpec) back = parse_text (out);
  CU_ASSERT_PTR_NOT_NULL_FATAL (back);
  CU_ASSERT_EQUAL (stage_named (back, "work")->parallelism, 1);
  CU_ASSERT_EQUAL (stage_named (back, "model")->parallelism, 3);
  CU_ASSERT_EQUAL (stage_named (back, "model")->batch, 16);
  CU_ASSERT_EQUAL (back->idle_spin_us, 7);
  CU_ASSERT_STRING_EQUAL (option_value (stage_named (back, "model"), "drop_inputs"), "true");
  CU_ASSERT_STRING_EQUAL (option_value (stage_named (back, "work"), "spin_us"), "2.25");
  /* In place: the comment, the [tune] group and the untouched keys are still there. */
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "# two workers\nparallelism = 1\nspin_us = 2.25\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "[tune]\nstage.*.parallelism = int 1..4\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "[pipeline]\nframe_rows = 32\nidle_spin_us = 7\n"));
  CU_ASSERT_TRUE (sedp_pipeline_spec_equal (back, back));
  /* The candidate compiles. */
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpGraph) graph = sedp_graph_compile (g_steal_pointer (&back), registry, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (graph);
  /* 4 + 4 + 4 + 4 workers: 10 beyond max_workers. */
  double wide[8] = {4, 4, 4, 4, log (17), 7, 1, 2.25};
  g_autofree char *crowded = sedp_tune_space_apply (space, wide, text, &violation);
  CU_ASSERT_DOUBLE_EQUAL (violation, 10, 0);
  /* At the start point (the values as given, unset keys at their defaults) nothing changes:
   * no key is written, not even an unset one at its default. */
  SedpCmaesOptions opt;
  sedp_tune_space_to_cmaes (space, &opt);
  for (guint i = 0; i < 8; i++)
    CU_ASSERT_FALSE (isnan (opt.x0[i])); /* every parameter here has a value or a default */
  g_autofree char *same = sedp_tune_space_apply (space, opt.x0, text, NULL);
  CU_ASSERT_STRING_EQUAL (same, text);
}

/* A stage whose parallelism is not tuned counts with its written value. */
static void
test_violation_counts_fixed_stages (void)
{
  g_autofree char *text = with_tune ("stage.model.parallelism = int 1..8\nmax_workers = 4\n");
  g_autoptr (SedpPipelineSpec) spec = parse_text (text);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_parse (spec, spec, registry, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (space);
  double x[1] = {3}, violation = -1;
  g_autofree char *out = sedp_tune_space_apply (space, x, text, &violation);
  CU_ASSERT_DOUBLE_EQUAL (violation, 1 + 2 + 3 + 1 - 4, 0);
}

/* ---- a space file ------------------------------------------------------------------------ */

static void
test_space_file (void)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-space-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dir);
  g_autofree char *path = g_build_filename (dir, "space.tune", NULL);
  g_autoptr (SedpPipelineSpec) spec = parse_text (base);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  {
    CU_ASSERT_TRUE (g_file_set_contents (path, "# the space\n[tune]\nstage.work.batch = int 1..8\n"
                                         "stage.work.bogus = int 1..2\n", -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpTuneSpace) space = sedp_tune_space_load (spec, path, registry, &error);
    CU_ASSERT_PTR_NULL (space);
    SEDP_ASSERT_ERROR (error, SEDP_TUNE_SPACE_ERROR, path, ":4: [tune] stage.work.bogus");
  }
  {
    CU_ASSERT_TRUE (g_file_set_contents (path, "[tune]\nstage.work.batch = int 1..8\n", -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpTuneSpace) space = sedp_tune_space_load (spec, path, registry, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (space);
    CU_ASSERT_EQUAL (sedp_tune_space_n_params (space), 1);
    CU_ASSERT_EQUAL (sedp_tune_space_param (space, 0)->line, 2);
  }
  {
    CU_ASSERT_TRUE (g_file_set_contents (path, "[tune]\nx = 1\n[stage s]\nplugin = p\n", -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpTuneSpace) space = sedp_tune_space_load (spec, path, registry, &error);
    CU_ASSERT_PTR_NULL (space);
    SEDP_ASSERT_ERROR (error, SEDP_TUNE_SPACE_ERROR, path, ":3: [stage s]");
    CU_ASSERT_EQUAL (error->code, SEDP_TUNE_SPACE_ERROR_FILE);
  }
  {
    CU_ASSERT_TRUE (g_file_set_contents (path, "[tune]\nno equals sign\n", -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpTuneSpace) space = sedp_tune_space_load (spec, path, registry, &error);
    CU_ASSERT_PTR_NULL (space);
    SEDP_ASSERT_ERROR (error, SEDP_DSL_ERROR, path, ":2:");
  }
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- errors: one per kind ---------------------------------------------------------------- */

/* The [tune] line @entry over the base pipeline fails with @cod; the message names the file,
 * the line, [tune], the key and every needle. */
#define ASSERT_SPACE_ERROR(entry, cod, ...)                                                     \
  do {                                                                                           \
    g_autoptr (GError) _error = NULL;                                                            \
    g_autoptr (SedpTuneSpace) _space = space_of (entry "\n", &_error);                           \
    CU_ASSERT_PTR_NULL (_space);                                                                 \
    char _key[128];                                                                              \
    g_strlcpy (_key, entry, sizeof _key);                                                        \
    *strchr (_key, ' ') = '\0';                                                                  \
    g_autofree char *_where = g_strdup_printf ("tune.pipeline:%u: [tune] %s", BASE_LINES + 2,   \
                                               _key);                                            \
    SEDP_ASSERT_ERROR (_error, SEDP_TUNE_SPACE_ERROR, _where, __VA_ARGS__);                      \
    if (_error->code != (int) (cod))                                                             \
      fprintf (stderr, "\n  '%s': code %d, expected %d\n", _error->message, _error->code,        \
               (int) (cod));                                                                     \
    CU_ASSERT_EQUAL (_error->code, (int) (cod));                                                 \
  } while (0)

static void
test_error_address (void)
{
  ASSERT_SPACE_ERROR ("stage..batch = int 1..4", SEDP_TUNE_SPACE_ERROR_ADDRESS, "'stage..batch'");
  ASSERT_SPACE_ERROR ("stages.work.batch = int 1..4", SEDP_TUNE_SPACE_ERROR_ADDRESS,
                      "stage.NAME.KEY");
  ASSERT_SPACE_ERROR ("batch = int 1..4", SEDP_TUNE_SPACE_ERROR_ADDRESS, "max_workers");
}

static void
test_error_unknown_stage (void)
{
  ASSERT_SPACE_ERROR ("stage.nope.batch = int 1..4", SEDP_TUNE_SPACE_ERROR_UNKNOWN_STAGE,
                      "'nope'", "reader, work, model, lookup", "stage.*.batch");
}

static void
test_error_unknown_key (void)
{
  ASSERT_SPACE_ERROR ("stage.work.bogus = int 1..4", SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY,
                      "'bogus'", "'synthetic_work'", "spin_us", "parallelism");
  ASSERT_SPACE_ERROR ("stage.*.bogus = int 1..4", SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY, "'bogus'");
  ASSERT_SPACE_ERROR ("pipeline.bogus = int 1..4", SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY, "'bogus'",
                      "frame_rows");
}

static void
test_error_not_tunable (void)
{
  ASSERT_SPACE_ERROR ("pipeline.deadline_ms = int 1..4", SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE,
                      "deadline_ms", "frame_rows, idle_spin_us");
  ASSERT_SPACE_ERROR ("stage.work.cpus = int 0..1", SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE, "cpus",
                      "queue_capacity");
  ASSERT_SPACE_ERROR ("stage.work.output = enum a|b", SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE,
                      "'output'", "'synthetic_work'", "string");
}

static void
test_error_empty_range (void)
{
  ASSERT_SPACE_ERROR ("stage.work.batch = int 64..1", SEDP_TUNE_SPACE_ERROR_RANGE, "64..1",
                      "1..64");
  ASSERT_SPACE_ERROR ("stage.work.spin_us = real 4..4", SEDP_TUNE_SPACE_ERROR_RANGE, "4..4");
  /* low < high, but log(low) = log(high): an empty box for the optimiser (fuzz target
   * tune-space, corpus/tune-space/crash-real-log-empty-box) */
  ASSERT_SPACE_ERROR ("stage.work.spin_us = real 1000000..1000000.0000000002 log",
                      SEDP_TUNE_SPACE_ERROR_RANGE, "1000000..1000000.0000000002", "log scale");
}

static void
test_error_limits (void)
{
  ASSERT_SPACE_ERROR ("stage.work.batch = int 1..100000", SEDP_TUNE_SPACE_ERROR_LIMIT,
                      "1..100000", "batch", "1..65536");
  ASSERT_SPACE_ERROR ("pipeline.frame_rows = int 0..64", SEDP_TUNE_SPACE_ERROR_LIMIT, "0..64",
                      "1..1048576");
  ASSERT_SPACE_ERROR ("stage.work.spin_us = real -1..5", SEDP_TUNE_SPACE_ERROR_LIMIT, "-1..5",
                      "'spin_us'", "'synthetic_work'", "0..1e+07");
  ASSERT_SPACE_ERROR ("stage.*.batch_timeout_us = int 0..20000000", SEDP_TUNE_SPACE_ERROR_LIMIT,
                      "0..20000000", "0..10000000");
}

static void
test_error_type (void)
{
  ASSERT_SPACE_ERROR ("stage.work.batch = float 1..4", SEDP_TUNE_SPACE_ERROR_TYPE, "'float'",
                      "int, real, bool or enum");
  ASSERT_SPACE_ERROR ("stage.work.batch = real 1..4", SEDP_TUNE_SPACE_ERROR_TYPE, "real", "batch",
                      "int LOW..HIGH");
  ASSERT_SPACE_ERROR ("stage.work.spin_us = int 1..4", SEDP_TUNE_SPACE_ERROR_TYPE, "'spin_us'",
                      "'synthetic_work'", "real LOW..HIGH");
  ASSERT_SPACE_ERROR ("stage.model.drop_inputs = enum a|b", SEDP_TUNE_SPACE_ERROR_TYPE,
                      "'drop_inputs'", "bool");
}

static void
test_error_log (void)
{
  ASSERT_SPACE_ERROR ("stage.work.spin_us = real 0..10 log", SEDP_TUNE_SPACE_ERROR_LOG, "0..10",
                      "> 0");
  ASSERT_SPACE_ERROR ("stage.work.seed = int -5..10 log", SEDP_TUNE_SPACE_ERROR_LOG, "-5..10",
                      "≥ 0");
}

static void
test_error_enum (void)
{
  ASSERT_SPACE_ERROR ("stage.work.distribution = enum fixed", SEDP_TUNE_SPACE_ERROR_ENUM,
                      "'fixed'");
  ASSERT_SPACE_ERROR ("stage.work.distribution = enum fixed|pareto|fixed",
                      SEDP_TUNE_SPACE_ERROR_ENUM, "'fixed|pareto|fixed'");
  ASSERT_SPACE_ERROR ("stage.work.distribution = enum fixed||pareto", SEDP_TUNE_SPACE_ERROR_ENUM,
                      "'fixed||pareto'");
  ASSERT_SPACE_ERROR ("stage.work.distribution = enum fixed|gauss", SEDP_TUNE_SPACE_ERROR_ENUM,
                      "'gauss'", "'distribution'", "fixed, exponential, pareto, lognormal");
}

static void
test_error_syntax (void)
{
  ASSERT_SPACE_ERROR ("stage.work.batch = int 1-64", SEDP_TUNE_SPACE_ERROR_SYNTAX, "'1-64'");
  ASSERT_SPACE_ERROR ("stage.work.batch = int 1..sixty", SEDP_TUNE_SPACE_ERROR_SYNTAX, "'sixty'");
  ASSERT_SPACE_ERROR ("stage.work.batch = int 1..64 lin", SEDP_TUNE_SPACE_ERROR_SYNTAX, "'lin'");
  ASSERT_SPACE_ERROR ("stage.work.batch = int", SEDP_TUNE_SPACE_ERROR_SYNTAX, "'int'");
  ASSERT_SPACE_ERROR ("stage.model.drop_inputs = bool 0..1", SEDP_TUNE_SPACE_ERROR_SYNTAX,
                      "'bool 0..1'");
  /* subnormal: the option parser refuses it, so candidates near it would be refused (fuzz
   * target tune-space, corpus/tune-space/crash-real-subnormal-bound) */
  ASSERT_SPACE_ERROR ("stage.work.spin_us = real 0..1e-320", SEDP_TUNE_SPACE_ERROR_SYNTAX,
                      "'1e-320'");
  g_unsetenv ("SEDP_TEST_SURELY_UNSET");
  ASSERT_SPACE_ERROR ("stage.work.batch = int 1..${SEDP_TEST_SURELY_UNSET}",
                      SEDP_TUNE_SPACE_ERROR_SYNTAX, "SEDP_TEST_SURELY_UNSET");
}

static void
test_error_max_workers (void)
{
  ASSERT_SPACE_ERROR ("max_workers = 0", SEDP_TUNE_SPACE_ERROR_MAX_WORKERS, "'0'", "1 to 1048576");
  ASSERT_SPACE_ERROR ("max_workers = many", SEDP_TUNE_SPACE_ERROR_MAX_WORKERS, "'many'");
}

static void
test_error_empty (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = space_of ("max_workers = 6\n", &error);
  CU_ASSERT_PTR_NULL (space);
  g_autofree char *where = g_strdup_printf ("tune.pipeline:%u: [tune]", BASE_LINES + 1);
  SEDP_ASSERT_ERROR (error, SEDP_TUNE_SPACE_ERROR, where);
  CU_ASSERT_EQUAL (error->code, SEDP_TUNE_SPACE_ERROR_EMPTY);
}

static void
test_error_plugin (void)
{
  const char text[] = "[stage reader]\nplugin = passthrough\nscope = request\n"
                      "[stage ghost]\nplugin = nosuch_plugin\nafter = reader\n"
                      "[tune]\nstage.ghost.batch = int 1..4\nstage.ghost.knob = int 1..4\n";
  g_autoptr (SedpPipelineSpec) spec = parse_text (text);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_parse (spec, spec, registry, &error);
  CU_ASSERT_PTR_NULL (space);
  SEDP_ASSERT_ERROR (error, SEDP_TUNE_SPACE_ERROR, "tune.pipeline:9: [tune] stage.ghost.knob",
                     "'ghost'", "'nosuch_plugin'");
  CU_ASSERT_EQUAL (error->code, SEDP_TUNE_SPACE_ERROR_PLUGIN);
}

/* 22 stages × 3 wildcards: 66 parameters, two more than the optimiser takes. */
static void
test_error_too_many (void)
{
  GString *text = g_string_new ("[stage s0]\nplugin = passthrough\nscope = request\n");
  for (guint i = 1; i < 22; i++)
    g_string_append_printf (text, "[stage s%u]\nplugin = passthrough\nafter = s%u\n", i, i - 1);
  guint line = 3 + 21 * 3 + 4;
  g_string_append (text, "[tune]\nstage.*.parallelism = int 1..2\nstage.*.batch = int 1..8\n"
                         "stage.*.queue_capacity = int 16..1024 log\n");
  g_autoptr (SedpPipelineSpec) spec = parse_text (text->str);
  g_string_free (text, TRUE);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpTuneSpace) space = sedp_tune_space_parse (spec, spec, registry, &error);
  CU_ASSERT_PTR_NULL (space);
  g_autofree char *where =
      g_strdup_printf ("tune.pipeline:%u: [tune] stage.*.queue_capacity", line);
  SEDP_ASSERT_ERROR (error, SEDP_TUNE_SPACE_ERROR, where, "64");
  CU_ASSERT_EQUAL (error->code, SEDP_TUNE_SPACE_ERROR_TOO_MANY);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("space", suite_init, suite_cleanup);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
    T (test_every_form),
    T (test_wildcard_override),
    T (test_default_space),
    T (test_to_cmaes),
    T (test_start_outside_range),
    T (test_values),
    T (test_apply),
    T (test_violation_counts_fixed_stages),
    T (test_space_file),
    T (test_error_address),
    T (test_error_unknown_stage),
    T (test_error_unknown_key),
    T (test_error_not_tunable),
    T (test_error_empty_range),
    T (test_error_limits),
    T (test_error_type),
    T (test_error_log),
    T (test_error_enum),
    T (test_error_syntax),
    T (test_error_max_workers),
    T (test_error_empty),
    T (test_error_plugin),
    T (test_error_too_many),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  return sedp_test_run ();
}
