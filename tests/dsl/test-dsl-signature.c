/* sedp tests — the `[signature NAME]` group of pipeline files (core/dsl/spec-signature.c): its
 * entries as written (commas inside brackets kept), absent keys, the errors (each naming the
 * file, the line, the group and the key), at most one group, and the writer's round trip.
 * docs/pipeline-dsl.md, docs/compat.md. */
#include "test-common.h"

#include "dsl/spec.h"

#include <string.h>

#define PIPE "/srv/p/ctr.pipeline"

/* A pipeline of one stage with @group (text, may hold several groups) after it. */
static SedpPipelineSpec *
parse_with (const char *group, GError **error)
{
  g_autofree char *text = g_strdup_printf ("[pipeline]\nname = ctr\n\n[stage a]\n"
                                           "plugin = passthrough\n\n%s", group);
  return sedp_pipeline_spec_parse (text, strlen (text), PIPE, error);
}

static void
expect_error (const char *group, int code, const char *needle1, const char *needle2)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (group, &error);
  CU_ASSERT_PTR_NULL (spec);
  SEDP_ASSERT_ERROR (error, SEDP_DSL_ERROR, PIPE, needle1, needle2);
  CU_ASSERT_EQUAL (error->code, code);
}

static void
test_entries (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (
      "[signature serving_default]\n"
      "inputs = dense=dense_features:float32[13], emb:float32[4,8],  query:string\n"
      "outputs = prob=score[1]\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  const SedpSignatureSpec *g = spec->signature;
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  CU_ASSERT_STRING_EQUAL (g->name, "serving_default");
  CU_ASSERT_EQUAL (g->line, 7);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (g->inputs), 3);
  CU_ASSERT_STRING_EQUAL (g->inputs[0], "dense=dense_features:float32[13]");
  CU_ASSERT_STRING_EQUAL (g->inputs[1], "emb:float32[4,8]");
  CU_ASSERT_STRING_EQUAL (g->inputs[2], "query:string");
  CU_ASSERT_EQUAL_FATAL (g_strv_length (g->outputs), 1);
  CU_ASSERT_STRING_EQUAL (g->outputs[0], "prob=score[1]");
}

static void
test_absent_keys (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with ("[signature s]\noutputs = score\n", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  CU_ASSERT_PTR_NULL (spec->signature->inputs); /* open inputs */
  CU_ASSERT_STRING_EQUAL (spec->signature->outputs[0], "score");
  g_autoptr (SedpPipelineSpec) none = parse_with ("", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (none);
  CU_ASSERT_PTR_NULL (none->signature);
}

static void
test_errors (void)
{
  expect_error ("[signature s]\nshape = 3\n", SEDP_DSL_ERROR_UNKNOWN_KEY, ":8: [signature s] shape",
                "known: inputs, outputs");
  expect_error ("[signature s]\ninputs = , ,\n", SEDP_DSL_ERROR_INVALID_VALUE,
                ":8: [signature s] inputs", "empty list");
  expect_error ("[signature]\noutputs = x\n", SEDP_DSL_ERROR_UNKNOWN_GROUP, ":7: [signature]",
                "needs a name");
  expect_error ("[signature a]\noutputs = x\n[signature b]\noutputs = y\n",
                SEDP_DSL_ERROR_DUPLICATE, ":9: [signature b]", "line 7");
}

static void
test_round_trip (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpPipelineSpec) spec = parse_with (
      "[signature serving_default]\ninputs = emb:float32[4,8], id:int64\noutputs = prob=score\n",
      &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  g_autofree char *text = sedp_pipeline_spec_to_keyfile (spec, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (text);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "[signature serving_default]\n"));
  g_autoptr (SedpPipelineSpec) back = sedp_pipeline_spec_parse (text, strlen (text), PIPE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (back);
  CU_ASSERT_TRUE (sedp_pipeline_spec_equal (spec, back));
  /* A different entry, or no signature, is a different spec. */
  g_autoptr (SedpPipelineSpec) other = parse_with (
      "[signature serving_default]\ninputs = emb:float32[4,9], id:int64\noutputs = prob=score\n",
      &error);
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (spec, other));
  g_autoptr (SedpPipelineSpec) none = parse_with ("", &error);
  CU_ASSERT_FALSE (sedp_pipeline_spec_equal (spec, none));
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("dsl-signature", NULL, NULL);
  CU_add_test (s, "entries as written", test_entries);
  CU_add_test (s, "absent keys", test_absent_keys);
  CU_add_test (s, "errors name file, line, group and key", test_errors);
  CU_add_test (s, "written back and compared", test_round_trip);
  return sedp_test_run ();
}
