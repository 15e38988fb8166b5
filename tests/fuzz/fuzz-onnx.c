/* sedp fuzz target `onnx` — the dense engine's model path, as `sedp model info` and the
 * model_inference stage take it: the ONNX reader (core/nn/onnx-reader.c: protobuf, tensors,
 * attributes, graph checks), the operator check, the plan compiler (core/nn/exec/plan.c: shape
 * inference, constant folding, fusions, the arena) at batch 1 and at the model's own batch, the
 * plan's description, and, when the plan is small, one run on zeroed inputs (the kernels with the
 * shapes and attributes the input chose). */
#include "fuzz-common.h"

#include "nn/plan.h"

/* A plan is run only below these. */
#define RUN_MAX_ARENA ((gsize) 64 << 20)
#define RUN_MAX_FLOPS 1e8
/* The model's own batch is compiled only up to this. */
#define MAX_NATURAL_BATCH 64

/* One run on zeroed inputs of the plan's shapes; an operator's error (an index out of range) is
 * an answer, not a finding. */
static void
run_plan (SedpNnPlan *plan)
{
  if (sedp_nn_plan_get_arena_size (plan) > RUN_MAX_ARENA ||
      sedp_nn_plan_get_flops (plan) > RUN_MAX_FLOPS)
    return;
  guint n_in = sedp_nn_plan_get_n_inputs (plan), n_out = sedp_nn_plan_get_n_outputs (plan);
  SedpNnTensor *in = g_new0 (SedpNnTensor, MAX (n_in, 1));
  SedpNnTensor *out = g_new0 (SedpNnTensor, MAX (n_out, 1));
  gsize total = 0;
  for (guint k = 0; k < n_in; k++) {
    in[k] = *sedp_nn_plan_get_input (plan, k);
    total += sedp_nn_tensor_nbytes (&in[k]);
  }
  if (total <= RUN_MAX_ARENA) {
    for (guint k = 0; k < n_in; k++)
      in[k].data = g_malloc0 (MAX (sedp_nn_tensor_nbytes (&in[k]), 1));
    GError *error = NULL;
    if (sedp_nn_plan_run (plan, n_in, in, n_out, out, &error)) {
      for (guint k = 0; k < n_out; k++)
        fuzz_checksum_bytes (out[k].data, sedp_nn_tensor_nbytes (&out[k]));
    } else {
      g_assert (error != NULL);
      fuzz_refused ("run", error);
    }
    for (guint k = 0; k < n_in; k++)
      g_free (in[k].data);
  }
  g_free (in);
  g_free (out);
}

/* Compiles @model for @batch, describes the plan and runs it. */
static void
compile (SedpNnModel *model, gint64 batch)
{
  GError *error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (model, batch, &error);
  if (plan == NULL) {
    g_assert (error != NULL && error->domain == SEDP_NN_ERROR);
    fuzz_refused ("compile", error);
    return;
  }
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_nn_plan_describe (plan, out);
  run_plan (plan);
  sedp_nn_plan_free (plan);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  sedp_nn_set_blas_threads (1);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;
  SedpNnModel *model = sedp_nn_model_load_data (data, size, "fuzz.onnx", &error);
  if (model == NULL) {
    g_assert (error != NULL && error->domain == SEDP_NN_ERROR);
    fuzz_refused ("load", error);
    return 0;
  }
  /* `sedp model info` compiles without checking first: the compiler must refuse what the check
   * would. */
  if (!sedp_nn_model_check (model, &error))
    fuzz_refused ("check", g_steal_pointer (&error));
  compile (model, 1);
  /* `sedp model info` compiles at the first input's fixed first dimension. */
  if (model->n_inputs > 0 && model->inputs[0].rank > 0 && model->inputs[0].dims[0] > 1 &&
      model->inputs[0].dims[0] <= MAX_NATURAL_BATCH)
    compile (model, model->inputs[0].dims[0]);
  sedp_nn_model_unref (model);
  return 0;
}
