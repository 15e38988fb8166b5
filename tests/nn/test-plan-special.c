/* Plans specialised on parameters given at run time: a Reshape's shape, a Slice's starts, Clip's
 * bounds taken as graph inputs instead of initializers (core/nn/exec/plan-special.c). */
#include "../common/test-common.h"
#include "nn-test.h"

#define F SEDP_NN_FLOAT
#define I SEDP_NN_INT64

/* X [2, 6] reshaped by the graph input "shape" [2]. */
static SedpNnModel *
reshape_model (void)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, 2, 6);
  IN (m, "shape", I, 2);
  tb_node (m, "Reshape", "reshape", "X,shape", "Y");
  OUT (m, "Y", F);
  return m;
}

static const float x12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* Runs @plan with X = x12 and the shape @shape; checks the output's shape and that the bytes are
 * X's (a Reshape keeps the order). */
static void
run_reshape (SedpNnPlan *plan, gint64 d0, gint64 d1)
{
  gint64 shape[2] = {d0, d1};
  SedpNnTensor in[2] = {TT (F, x12, 2, 6), TT (I, shape, 2)};
  Out o[1];
  g_autoptr (GError) error = NULL;
  gboolean ok = run_plan (plan, 2, in, o, &error);
  if (error)
    fprintf (stderr, "\n  run error: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  gint64 want1 = d1 == -1 ? 12 / d0 : d1, want0 = d0 == 0 ? 2 : d0;
  SHAPE_IS (o[0], want0, want1);
  CU_ASSERT (o[0].numel == 12 && memcmp (o[0].data, x12, sizeof x12) == 0);
  CU_ASSERT_EQUAL (sedp_nn_plan_get_output (plan, 0)->dims[0], want0);
  outs_free (o, 1);
}

static void
test_reshape_parameter (void)
{
  g_autoptr (GError) error = NULL;
  SedpNnModel *m = reshape_model ();
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_FALSE (sedp_nn_plan_input_is_parameter (plan, 0));
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, 1));
  run_reshape (plan, 3, 4);
  run_reshape (plan, 4, -1);
  run_reshape (plan, 3, 4); /* the first plan again, from the cache */
  run_reshape (plan, 0, 6); /* 0 copies X's dimension */
  /* More distinct values than the cache keeps: the evicted ones compile again. */
  for (int round = 0; round < 2; round++)
    for (gint64 d0 = 1; d0 <= 12; d0++)
      if (12 % d0 == 0)
        for (int twice = 0; twice < 2; twice++)
          run_reshape (plan, d0, twice ? -1 : 12 / d0);
  GString *desc = g_string_new (NULL);
  sedp_nn_plan_describe (plan, desc);
  CU_ASSERT_PTR_NOT_NULL (strstr (desc->str, "specialised at run time on the values of 'shape'"));
  g_string_free (desc, TRUE);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* A value that does not fit is an error of that run; the plan stays usable. */
static void
test_bad_value_then_good (void)
{
  g_autoptr (GError) error = NULL;
  SedpNnModel *m = reshape_model ();
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  gint64 bad[2] = {5, 5};
  SedpNnTensor in[2] = {TT (F, x12, 2, 6), TT (I, bad, 2)};
  SedpNnTensor out[1];
  CU_ASSERT_FALSE (sedp_nn_plan_run (plan, 2, in, 1, out, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "reshape", "[5, 5]");
  CU_ASSERT_EQUAL (error ? error->code : -1, SEDP_NN_ERROR_SHAPE);
  g_clear_error (&error);
  run_reshape (plan, 6, 2);
  /* A wrong dtype for the parameter is an input error, as for any input. */
  double dshape[2] = {6, 2};
  SedpNnTensor din[2] = {TT (F, x12, 2, 6), TT (SEDP_NN_DOUBLE, dshape, 2)};
  CU_ASSERT_FALSE (sedp_nn_plan_run (plan, 2, din, 1, out, &error));
  CU_ASSERT_EQUAL (error ? error->code : -1, SEDP_NN_ERROR_INPUT);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* Parameters found one after the other: Slice's starts come from "s" through an Add, and Clip's
 * bound "lo" is needed only once the Slice compiles. */
static void
test_chained_parameters (void)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, 2, 5);
  IN (m, "s", I, 1);
  IN (m, "lo", F);
  INTS (m, "one", 1);
  INTS (m, "ends", 5);
  INTS (m, "axes", 1);
  tb_node (m, "Add", "start", "s,one", "start1");
  tb_node (m, "Slice", "slice", "X,start1,ends,axes", "S");
  tb_node (m, "Clip", "clip", "S,lo", "Y");
  OUT (m, "Y", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  const float x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (gint64 s = 0; s < 3; s++) {
    float lo = 2.5f + (float) s;
    SedpNnTensor in[3] = {TT (F, x, 2, 5), TT (I, &s, 1), tt (F, &lo, 0, NULL)};
    Out o[1];
    CU_ASSERT_TRUE_FATAL (run_plan (plan, 3, in, o, &error));
    gint64 w = 5 - (s + 1);
    SHAPE_IS (o[0], 2, w);
    for (gint64 r = 0; r < 2 && o[0].numel == 2 * w; r++)
      for (gint64 c = 0; c < w; c++)
        CU_ASSERT_EQUAL (((float *) o[0].data)[r * w + c], MAX (x[r * 5 + s + 1 + c], lo));
    outs_free (o, 1);
  }
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, 1));
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, 2));
  CU_ASSERT_FALSE (sedp_nn_plan_input_is_parameter (plan, 0));
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* A graph input too large to be a parameter: refused when the plan is made, naming it. */
static void
test_parameter_too_large (void)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, 1, 4);
  IN (m, "big", I, 70000);
  tb_node (m, "Shape", "sh", "big", "n");
  tb_node (m, "Slice", "slice", "big,n,n", "S"); /* starts from a shape: constant */
  tb_node (m, "Reshape", "reshape", "X,big", "Y"); /* the shape itself: a parameter */
  OUT (m, "Y", F);
  OUT (m, "S", I);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 1, &error);
  CU_ASSERT_PTR_NULL (plan);
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "'big'", "70000", "initializer");
  CU_ASSERT_EQUAL (error ? error->code : -1, SEDP_NN_ERROR_UNSUPPORTED);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* BatchNormalization's statistics and Dropout's training_mode as graph inputs. */
static void
test_batchnorm_dropout_parameters (void)
{
  SedpNnModel *m = tb_new (15);
  IN (m, "X", F, 2, 2);
  IN (m, "scale", F, 2);
  IN (m, "b", F, 2);
  IN (m, "mean", F, 2);
  IN (m, "var", F, 2);
  IN (m, "train", SEDP_NN_BOOL);
  tb_node (m, "BatchNormalization", "bn", "X,scale,b,mean,var", "N");
  tb_node (m, "Dropout", "drop", "N,,train", "Y");
  OUT (m, "Y", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  const float x[4] = {1, 2, 3, 4}, scale[2] = {2, 0.5f}, b[2] = {1, -3}, mean[2] = {1, 2},
              var[2] = {4, 1};
  guint8 train = 0;
  SedpNnTensor in[6] = {TT (F, x, 2, 2),    TT (F, scale, 2), TT (F, b, 2),
                        TT (F, mean, 2),    TT (F, var, 2),   tt (SEDP_NN_BOOL, &train, 0, NULL)};
  Out o[1];
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 6, in, o, &error));
  double want[4];
  for (int i = 0; i < 4; i++)
    want[i] = scale[i % 2] * (x[i] - mean[i % 2]) / sqrt (var[i % 2] + 1e-5) + b[i % 2];
  ASSERT_CLOSE (o[0], want, RTOL_ELEM);
  outs_free (o, 1);
  train = 1; /* training with the default ratio 0.5: refused, this run only */
  CU_ASSERT_FALSE (run_plan (plan, 6, in, o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "drop", "training_mode");
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-plan-special", NULL, NULL);
  CU_add_test (s, "reshape shape as a graph input", test_reshape_parameter);
  CU_add_test (s, "a bad parameter value, then a good one", test_bad_value_then_good);
  CU_add_test (s, "parameters found one after another", test_chained_parameters);
  CU_add_test (s, "a parameter too large", test_parameter_too_large);
  CU_add_test (s, "batchnorm and dropout parameters", test_batchnorm_dropout_parameters);
  return sedp_test_run ();
}
