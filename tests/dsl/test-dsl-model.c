/* sedp tests — the `[model NAME]` group of pipeline files (core/dsl/spec-model.c): its keys,
 * their defaults and ranges, the errors (each naming the file, the line, the group and the
 * key), and the writer's round trip. docs/pipeline-dsl.md, docs/model-lifecycle.md. */
#include "test-common.h"

#include "dsl/spec.h"

#include <string.h>

#define PIPE "/srv/p/ctr.pipeline"

/* A pipeline of one stage with @model_group (text, may hold several groups) before it. */
static SedpPipelineSpec *
parse_with (const char *model_group, GError **error)
{
  g_autofree char *text = g_strdup_printf ("[pipeline]\nname = ctr\n\n%s\n[stage a]\n"
                                           "plugin = passthrough\n", model_group);
  return sedp_pipeline_spec_parse (text, strlen (text), PIPE, error);
}

static void
expect_error (const char *model_group, int code, const char *needle1, const char *needle2)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (model_group, &error);
  CU_ASSERT_PTR_NULL (spec);
  SEDP_ASSERT_ERROR (error, SEDP_DSL_ERROR, PIPE, needle1, needle2);
  if (error->code != code)
    fprintf (stderr, "\n  '%s': code %d, expected %d\n", error->message, error->code, code);
  CU_ASSERT_EQUAL (error->code, code);
}

static void
test_defaults (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with ("[model ctr]\nrepository = ../models\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_EQUAL_FATAL (spec->models->len, 1);
  const SedpModelSpec *m = spec->models->pdata[0];
  CU_ASSERT_STRING_EQUAL (m->name, "ctr");
  CU_ASSERT_STRING_EQUAL (m->repository, "/srv/models");
  CU_ASSERT_PTR_NULL (m->version);
  CU_ASSERT_EQUAL (m->pinned, 0);
  CU_ASSERT_PTR_NULL (m->public_key);
  CU_ASSERT_EQUAL (m->poll_interval_s, 5);
  CU_ASSERT_EQUAL (m->probation_s, 60);
  CU_ASSERT_EQUAL (m->max_error_rate, 1.0);
  CU_ASSERT_EQUAL (m->max_p99_over_previous, 0.0);
  CU_ASSERT_EQUAL (m->warmup_pause, 1.0);
  CU_ASSERT_EQUAL (m->line, 4);
}

static void
test_every_key (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (
    "[model ctr.v2-b_x]\nrepository = /data/models\nversion = 42\npublic_key = keys/ctr.public\n"
    "poll_interval_s = 1\nprobation_s = 0\nmax_error_rate = 0.005\nmax_p99_over_previous = 1.5\n"
    "warmup_pause = 0\n\n[model other]\nrepository = r\nversion = latest\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_EQUAL_FATAL (spec->models->len, 2);
  const SedpModelSpec *m = spec->models->pdata[0], *o = spec->models->pdata[1];
  CU_ASSERT_STRING_EQUAL (m->name, "ctr.v2-b_x");
  CU_ASSERT_STRING_EQUAL (m->repository, "/data/models");
  CU_ASSERT_STRING_EQUAL (m->version, "42");
  CU_ASSERT_EQUAL (m->pinned, 42);
  CU_ASSERT_STRING_EQUAL (m->public_key, "/srv/p/keys/ctr.public");
  CU_ASSERT_EQUAL (m->poll_interval_s, 1);
  CU_ASSERT_EQUAL (m->probation_s, 0);
  CU_ASSERT_DOUBLE_EQUAL (m->max_error_rate, 0.005, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL (m->max_p99_over_previous, 1.5, 1e-15);
  CU_ASSERT_EQUAL (m->warmup_pause, 0.0);
  CU_ASSERT_EQUAL (o->warmup_pause, 1.0);
  CU_ASSERT_STRING_EQUAL (o->name, "other");
  CU_ASSERT_STRING_EQUAL (o->repository, "/srv/p/r");
  CU_ASSERT_EQUAL (o->pinned, 0);
}

static void
test_version_limits (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec =
    parse_with ("[model m]\nrepository = r\nversion = 9223372036854775807\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_EQUAL (((SedpModelSpec *) spec->models->pdata[0])->pinned, G_MAXINT64);
  static const char *const bad[] = {"0", "007", "-3", "+3", "7a", "9223372036854775808", "", "Latest"};
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autofree char *group = g_strdup_printf ("[model m]\nrepository = r\nversion = %s\n", bad[i]);
    g_autofree char *got = g_strdup_printf ("got '%s'", bad[i]);
    expect_error (group, SEDP_DSL_ERROR_INVALID_VALUE, "[model m] version", got);
  }
}

static void
test_errors (void)
{
  expect_error ("[model ctr]\nversion = 3\n", SEDP_DSL_ERROR_MISSING_KEY, "[model ctr] repository",
                "missing required key");
  expect_error ("[model ctr]\nrepository = r\nrepo = x\n", SEDP_DSL_ERROR_UNKNOWN_KEY,
                ":6: [model ctr] repo", "known: repository, version");
  expect_error ("[model ctr]\nrepository =\n", SEDP_DSL_ERROR_INVALID_VALUE,
                "[model ctr] repository", "empty");
  expect_error ("[model .hidden]\nrepository = r\n", SEDP_DSL_ERROR_UNKNOWN_GROUP,
                "[model .hidden]", "is not allowed: it starts with '.'");
  expect_error ("[model a/b]\nrepository = r\n", SEDP_DSL_ERROR_UNKNOWN_GROUP, "[model a/b]",
                "is not allowed: it has a character outside");
  expect_error ("[model ctr]\nrepository = r\nmax_error_rate = 1.5\n",
                SEDP_DSL_ERROR_INVALID_VALUE, ":6: [model ctr] max_error_rate", "got '1.5'");
  expect_error ("[model ctr]\nrepository = r\nmax_p99_over_previous = fast\n",
                SEDP_DSL_ERROR_INVALID_VALUE, "[model ctr] max_p99_over_previous", "got 'fast'");
  expect_error ("[model ctr]\nrepository = r\nmax_error_rate = nan\n",
                SEDP_DSL_ERROR_INVALID_VALUE, "max_error_rate", "from 0 to 1");
  expect_error ("[model ctr]\nrepository = r\nwarmup_pause = -1\n",
                SEDP_DSL_ERROR_INVALID_VALUE, "[model ctr] warmup_pause", "from 0 to 100");
  expect_error ("[model ctr]\nrepository = r\npoll_interval_s = 0\n",
                SEDP_DSL_ERROR_INVALID_VALUE, "[model ctr] poll_interval_s", "from 1 to 86400");
  expect_error ("[model ctr]\nrepository = r\n\n[model ctr]\nrepository = s\n",
                SEDP_DSL_ERROR_DUPLICATE, ":7: [model ctr]", "defined twice (first on line 4)");
  expect_error ("[model ctr]\nrepository = r\n\n[model  ctr]\nrepository = s\n",
                SEDP_DSL_ERROR_DUPLICATE, "model 'ctr' defined twice", "first on line 4");
  expect_error ("[model ctr]\nrepository = ${SEDP_TEST_NO_SUCH_VARIABLE}\n",
                SEDP_DSL_ERROR_ENVIRONMENT, "[model ctr] repository", "SEDP_TEST_NO_SUCH_VARIABLE");
}

/* Written back and parsed again, the groups say the same; a changed key is seen as a change. */
static void
test_round_trip (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (
    "[model ctr]\nrepository = /data/models\nversion = 42\nmax_error_rate = 0.125\n"
    "max_p99_over_previous = 1.75\n\n[model b]\nrepository = r\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autofree char *text = sedp_pipeline_spec_to_keyfile (spec, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (text);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "[model ctr]\nrepository = /data/models\nversion = 42\n"
                                        "max_error_rate = 0.125\nmax_p99_over_previous = 1.75\n"));
  CU_ASSERT_PTR_NULL (strstr (text, "probation_s")); /* defaults the file did not set */
  g_autoptr (SedpPipelineSpec) back = sedp_pipeline_spec_parse (text, strlen (text), PIPE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (back);
  CU_ASSERT_TRUE (sedp_pipeline_spec_equal (spec, back));
  ((SedpModelSpec *) back->models->pdata[0])->max_error_rate = 0.25;
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (spec, back));
  ((SedpModelSpec *) back->models->pdata[0])->max_error_rate = 0.125;
  g_ptr_array_remove_index (back->models, 1);
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (spec, back));
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("dsl-model", NULL, NULL);
  CU_add_test (s, "defaults", test_defaults);
  CU_add_test (s, "every key", test_every_key);
  CU_add_test (s, "version: latest or a number", test_version_limits);
  CU_add_test (s, "errors name file, line, group and key", test_errors);
  CU_add_test (s, "written back and compared", test_round_trip);
  return sedp_test_run ();
}
