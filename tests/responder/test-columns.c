/* sedp tests — the columns stages declare for `sedp check` (SedpStageDescriptor.writes and
 * .needs) in a multi-model pipeline: model_inference's `writes` from its `outputs` option
 * (MODEL_OUTPUT=COLUMN → COLUMN, MODEL_OUTPUT → itself; unknown without `outputs`; a malformed
 * or duplicate item an error naming the option), the responder's `writes` (the combine output,
 * rank and top_k under the prefix) and `needs` (combine=COLUMN for each column its formula
 * reads; none without combine; a formula error naming the option). The model file does not
 * exist: the callbacks must open nothing. */
#include "test-common.h"

#include "graph/graph.h"
#include "runtime/runtime-private.h"

#include <string.h>

static SedpRegistry *registry;
static SedpGraph *graph;

/* Compiles a graph of: reader (passthrough) → m (model_inference, @model_opts) → respond
 * (responder, @responder_opts). Fails the test on errors. */
static void
compile (const char *model_opts, const char *responder_opts)
{
  g_clear_pointer (&graph, sedp_graph_free);
  g_autofree char *text = g_strdup_printf (
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage m]\nplugin = model_inference\nafter = reader\nmodel = /nonexistent/model.onnx\n%s"
      "[stage respond]\nplugin = responder\nafter = m\n%s", model_opts, responder_opts);
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  graph = spec ? sedp_graph_compile (spec, registry, &error) : NULL;
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
}

/* The error of compiling that graph (which must fail). */
static GError *
compile_error (const char *model_opts, const char *responder_opts)
{
  g_autofree char *text = g_strdup_printf (
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage m]\nplugin = model_inference\nafter = reader\nmodel = /nonexistent/model.onnx\n%s"
      "[stage respond]\nplugin = responder\nafter = m\n%s", model_opts, responder_opts);
  GError *error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *g = spec ? sedp_graph_compile (spec, registry, &error) : NULL;
  CU_ASSERT_PTR_NULL (g);
  if (g)
    sedp_graph_free (g);
  if (error && g_getenv ("SEDP_TEST_VERBOSE"))
    fprintf (stderr, "\n  %s\n", error->message);
  return error;
}

typedef enum { WRITES, NEEDS } Which;

/* Calls `writes` or `needs` of the stage called @stage, the way sedp check does. */
static char **
declared (const char *stage, Which which, GError **error)
{
  for (guint i = 0; i < graph->n_nodes; i++) {
    const SedpGraphNode *node = &graph->nodes[i];
    if (strcmp (node->spec->name, stage) != 0)
      continue;
    SedpStageContext ctx = {.name = node->spec->name, .scope = node->scope, .parallelism = 1,
                            .batch = 1, .options = node->options};
    const SedpStageDescriptor *d = node->plugin->desc;
    CU_ASSERT_FATAL (which == WRITES ? d->writes != NULL : d->needs != NULL);
    return which == WRITES ? d->writes (&ctx, error) : d->needs (&ctx, error);
  }
  CU_FAIL_FATAL ("no such stage");
  return NULL;
}

/* Asserts that @got (freed) is the comma-joined @want. */
static void
assert_list (char **got, const char *want)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (got);
  g_autofree char *joined = g_strjoinv (",", got);
  if (strcmp (joined, want) != 0)
    fprintf (stderr, "\n  got '%s', want '%s'\n", joined, want);
  CU_ASSERT_STRING_EQUAL (joined, want);
  g_strfreev (got);
}

static void
test_model_writes (void)
{
  compile ("outputs = prob=ctr, aux, logit = logit_col\n", "");
  g_autoptr (GError) error = NULL;
  assert_list (declared ("m", WRITES, &error), "ctr,aux,logit_col");
  CU_ASSERT_PTR_NULL (error);
}

/* Without `outputs` the columns are the model's: unknown before it is loaded. */
static void
test_model_writes_unknown (void)
{
  compile ("", "");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (declared ("m", WRITES, &error));
  CU_ASSERT_PTR_NULL (error);
}

static void
test_model_writes_errors (void)
{
  compile ("outputs = prob=\n", "");
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_PTR_NULL (declared ("m", WRITES, &e1));
  SEDP_ASSERT_ERROR (e1, SEDP_STAGE_ERROR, "outputs", "'prob='", "MODEL_OUTPUT=COLUMN");
  compile ("outputs = a=score, b=score\n", "");
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_PTR_NULL (declared ("m", WRITES, &e2));
  SEDP_ASSERT_ERROR (e2, SEDP_STAGE_ERROR, "outputs", "'a'", "'b'", "'score'");
}

static void
test_responder_writes (void)
{
  compile ("outputs = p=ctr, q=cvr\n", "combine = blend = ctr * pow(cvr, 0.5)\noutput = r_\n");
  g_autoptr (GError) error = NULL;
  assert_list (declared ("respond", WRITES, &error), "blend,r_rank,r_top_k");
  compile ("", "");
  assert_list (declared ("respond", WRITES, &error), "rank,top_k");
  CU_ASSERT_PTR_NULL (error);
}

static void
test_responder_needs (void)
{
  compile ("outputs = p=ctr, q=cvr\n", "combine = score = ctr * pow(cvr, 0.5) + ctr[1] - max(ctr, $bias)\n");
  g_autoptr (GError) error = NULL;
  assert_list (declared ("respond", NEEDS, &error), "combine=ctr,combine=cvr");
  compile ("", "combine = score = 2\n");
  assert_list (declared ("respond", NEEDS, &error), "");
  compile ("", "");
  assert_list (declared ("respond", NEEDS, &error), "");
  CU_ASSERT_PTR_NULL (error);
}

/* A formula that does not compile: both callbacks fail with the option named, and so does the
 * graph (sedp check). */
static void
test_responder_errors (void)
{
  g_autoptr (GError) g1 = compile_error ("outputs = p=ctr, q=cvr\n", "combine = score = ctr * pwo(cvr, 2)\n");
  SEDP_ASSERT_ERROR (g1, SEDP_DSL_ERROR, "test.pipeline:9: [stage respond]: combine: at character 15", "'pwo'");
  g_autoptr (GError) g2 = compile_error ("outputs = p=ctr, q=cvr\n", "combine = top_k = ctr\n");
  SEDP_ASSERT_ERROR (g2, SEDP_DSL_ERROR, "combine", "'top_k'");
}

/* sedp check: a head no stage before the responder declares is refused, naming the option and
 * what the stages before write; `$` columns (the request's) are not checked. */
static void
test_graph_check (void)
{
  g_autoptr (GError) e1 = compile_error ("outputs = p=ctr\n", "combine = score = ctr * pow(cvr, 0.5)\n");
  SEDP_ASSERT_ERROR (e1, SEDP_DSL_ERROR,
                     "test.pipeline:12: [stage respond] combine: 'cvr' is written by no stage before "
                     "'respond' (stages before it write: m: ctr)");
  g_autoptr (GError) e2 = compile_error ("", "combine = score = ctr\n");
  SEDP_ASSERT_ERROR (e2, SEDP_DSL_ERROR, "'ctr' is written by no stage before 'respond'",
                     "columns not known before start: 'm' (set their outputs)");
  compile ("outputs = p=ctr\n", "combine = score = ctr * $bid\n");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return CU_get_error ();
  const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  CU_pSuite suite = CU_add_suite ("declared columns", NULL, NULL);
  if (suite == NULL || CU_add_test (suite, "model_inference writes", test_model_writes) == NULL ||
      CU_add_test (suite, "model_inference writes: unknown", test_model_writes_unknown) == NULL ||
      CU_add_test (suite, "model_inference writes: errors", test_model_writes_errors) == NULL ||
      CU_add_test (suite, "responder writes", test_responder_writes) == NULL ||
      CU_add_test (suite, "responder needs", test_responder_needs) == NULL ||
      CU_add_test (suite, "responder errors", test_responder_errors) == NULL ||
      CU_add_test (suite, "sedp check: heads against declared writes", test_graph_check) == NULL) {
    CU_cleanup_registry ();
    return CU_get_error ();
  }
  int rc = sedp_test_run ();
  g_clear_pointer (&graph, sedp_graph_free);
  sedp_registry_free (registry);
  return rc;
}
