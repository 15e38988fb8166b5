/* sedp tests — the shedder's MLP (core/shed/mlp.h): training converges on a synthetic set and is
 * deterministic, the hand-written gradients match finite differences, the ONNX export runs in
 * sedp's engine with the trainer's own outputs, and bad data is refused with a named error. */
#include "test-common.h"
#include "shed/mlp-private.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define D 9

static double
sigmoid (double z)
{
  return 1.0 / (1.0 + exp (-z));
}

/* The synthetic target: smooth, nonlinear in x0, x1 and x5 (a product), linear in x3, the other
 * five inputs noise. */
static float
target (const float *x)
{
  return (float) sigmoid (3.0 * sin (G_PI * x[0]) - 1.5 * x[3] + 2.0 * (x[1] - 0.5) * (x[5] - 0.5) * 4.0
                          - 1.0);
}

/* @n rows of D inputs uniform in [0, 1) from @seed, and their targets. */
static void
make_set (guint n, guint32 seed, float **x, float **y)
{
  GRand *r = g_rand_new_with_seed (seed);
  *x = g_new (float, (gsize) n * D);
  *y = g_new (float, n);
  for (guint i = 0; i < n; i++) {
    for (guint k = 0; k < D; k++)
      (*x)[i * D + k] = (float) g_rand_double (r);
    (*y)[i] = target (*x + i * D);
  }
  g_rand_free (r);
}

/* The MSE of predicting the mean of @y for every row. */
static double
mean_mse (const float *y, guint n)
{
  double mean = 0, mse = 0;
  for (guint i = 0; i < n; i++)
    mean += y[i] / n;
  for (guint i = 0; i < n; i++)
    mse += (y[i] - mean) * (y[i] - mean) / n;
  return mse;
}

/* ---- convergence ---- */

/* The report of @epochs epochs of @batches steps each, its loss history asked for; cleared. */
static void
check_report (SedpMlpTrainReport *r, guint epochs, guint batches)
{
  CU_ASSERT_EQUAL (r->n_epochs, epochs);
  CU_ASSERT_EQUAL (r->n_steps, (guint64) epochs * batches);
  CU_ASSERT_EQUAL_FATAL (r->losses->len, epochs);
  CU_ASSERT_EQUAL (g_array_index (r->losses, double, 0), r->first_loss);
  CU_ASSERT_EQUAL (g_array_index (r->losses, double, epochs - 1), r->last_loss);
  sedp_mlp_train_report_clear (r);
  CU_ASSERT_PTR_NULL (r->losses);
}

/* 2000 rows, 9 → 16 → 8 → 1, 150 epochs of batches of 32 at 0.01: the training MSE falls below
 * 5e-4 (predicting the mean: 0.06), and so does the MSE on 500 rows not trained on. */
static void
test_converges (void)
{
  g_autofree float *x = NULL, *y = NULL, *hx = NULL, *hy = NULL;
  make_set (2000, 7, &x, &y);
  make_set (500, 8, &hx, &hy);
  const guint hidden[] = {16, 8};
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, hidden, 2, 42);
  CU_ASSERT_EQUAL (sedp_mlp_n_parameters (m), 9 * 16 + 16 + 16 * 8 + 8 + 8 + 1);
  SedpMlpTrainOptions opt;
  sedp_mlp_train_options_init (&opt);
  opt.epochs = 150;
  opt.record_losses = TRUE;
  SedpMlpTrainReport r;
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  CU_ASSERT_TRUE_FATAL (sedp_mlp_train (m, x, y, 2000, &opt, &r, &error));
  double secs = (g_get_monotonic_time () - t0) / 1e6, base = mean_mse (y, 2000);
  double held = sedp_mlp_loss (m, hx, hy, 500);
  printf ("\n    mean-predictor MSE %.4g; initial %.4g, epoch 1 %.4g, epoch %u %.4g; held-out %.4g "
          "(%.2f s, %" G_GUINT64_FORMAT " steps)\n", base, r.initial_loss, r.first_loss, r.n_epochs,
          r.last_loss, held, secs, r.n_steps);
  CU_ASSERT (base > 0.03);
  CU_ASSERT (r.last_loss < 5e-4 && held < 5e-4);
  CU_ASSERT (r.last_loss < base / 50);
  CU_ASSERT (r.first_loss < r.initial_loss && r.last_loss < r.first_loss);
  CU_ASSERT_DOUBLE_EQUAL (sedp_mlp_loss (m, x, y, 2000), r.last_loss, 0);
  check_report (&r, 150, 63); /* ⌈2000 / 32⌉ batches an epoch */
}

/* The same data, sizes and seeds give the same weights, bit for bit; another shuffling seed
 * other weights. */
static void
test_deterministic (void)
{
  g_autofree float *x = NULL, *y = NULL;
  make_set (300, 3, &x, &y);
  const guint hidden[] = {6};
  SedpMlpTrainOptions opt;
  sedp_mlp_train_options_init (&opt);
  opt.epochs = 5;
  opt.batch_size = 16;
  SedpMlp *m[3];
  for (guint k = 0; k < 3; k++) {
    m[k] = sedp_mlp_new (D, hidden, 1, 5);
    opt.seed = k < 2 ? 11 : 12;
    CU_ASSERT_TRUE (sedp_mlp_train (m[k], x, y, 300, &opt, NULL, NULL));
  }
  gsize bytes = sedp_mlp_n_parameters (m[0]) * sizeof (double);
  CU_ASSERT_EQUAL (memcmp (sedp_mlp_get_params (m[0]), sedp_mlp_get_params (m[1]), bytes), 0);
  CU_ASSERT_NOT_EQUAL (memcmp (sedp_mlp_get_params (m[0]), sedp_mlp_get_params (m[2]), bytes), 0);
  for (guint k = 0; k < 3; k++)
    sedp_mlp_free (m[k]);
}

/* Xavier-uniform initialization: every weight within ±√(6 / (fan_in + fan_out)), biases zero. */
static void
test_init (void)
{
  const guint hidden[] = {16, 8};
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, hidden, 2, 1);
  const double *p = sedp_mlp_get_params (m);
  const guint sizes[] = {D, 16, 8, 1};
  for (guint l = 0; l < 3; l++) {
    double a = sqrt (6.0 / (sizes[l] + sizes[l + 1])), max = 0;
    for (guint k = 0; k < sizes[l] * sizes[l + 1]; k++, p++)
      max = MAX (max, fabs (*p));
    CU_ASSERT (max <= a && max > a / 2);
    for (guint j = 0; j < sizes[l + 1]; j++, p++)
      CU_ASSERT_EQUAL (*p, 0.0);
  }
}

/* ---- gradients ---- */

/* Every analytic partial derivative of the loss over @rows (NULL: all @n) against a central
 * difference with h = 1e-5: |a − f| ≤ 1e-8 + 1e-6·max(|a|, |f|). Returns the worst ratio
 * of error to tolerance. */
static double
check_gradient (SedpMlp *m, const float *x, const float *y, const guint *rows, guint n)
{
  gsize np = sedp_mlp_n_parameters (m);
  g_autofree double *grad = g_new (double, np), *scratch = g_new (double, np);
  double *p = sedp_mlp_get_params (m), worst = 0;
  sedp_mlp_loss_grad (m, x, y, rows, n, grad);
  for (gsize i = 0; i < np; i++) {
    const double h = 1e-5, keep = p[i];
    p[i] = keep + h;
    double up = sedp_mlp_loss_grad (m, x, y, rows, n, scratch);
    p[i] = keep - h;
    double down = sedp_mlp_loss_grad (m, x, y, rows, n, scratch);
    p[i] = keep;
    double f = (up - down) / (2 * h), tol = 1e-8 + 1e-6 * MAX (fabs (grad[i]), fabs (f));
    worst = MAX (worst, fabs (grad[i] - f) / tol);
  }
  return worst;
}

/* Tiny nets (3 → 4 → 3 → 1, 3 → 1, 3 → 5 → 1) on 6 random rows with targets in [0, 1],
 * weights scaled up so that the tanh and sigmoid curve; all rows and a subset in an order. */
static void
test_gradient_check (void)
{
  float x[6 * 3], y[6];
  GRand *r = g_rand_new_with_seed (99);
  for (guint i = 0; i < 6 * 3; i++)
    x[i] = (float) g_rand_double_range (r, -1.5, 1.5);
  for (guint i = 0; i < 6; i++)
    y[i] = (float) g_rand_double (r);
  const guint h2[] = {4, 3}, h1[] = {5}, rows[] = {4, 1, 1, 5};
  SedpMlp *nets[] = {sedp_mlp_new (3, h2, 2, 3), sedp_mlp_new (3, NULL, 0, 4),
                     sedp_mlp_new (3, h1, 1, 5)};
  for (guint k = 0; k < G_N_ELEMENTS (nets); k++) {
    double *p = sedp_mlp_get_params (nets[k]);
    for (gsize i = 0; i < sedp_mlp_n_parameters (nets[k]); i++)
      p[i] = 2.0 * p[i] + g_rand_double_range (r, -0.5, 0.5);
    double all = check_gradient (nets[k], x, y, NULL, 6);
    double some = check_gradient (nets[k], x, y, rows, G_N_ELEMENTS (rows));
    printf ("\n    net %u: worst |analytic − finite difference| / tolerance %.3g (all rows), "
            "%.3g (rows 4, 1, 1, 5)", k, all, some);
    CU_ASSERT (all <= 1.0 && some <= 1.0);
    sedp_mlp_free (nets[k]);
  }
  printf ("\n");
  g_rand_free (r);
}

/* ---- ONNX ---- */

/* The model written, read back and run by sedp's engine at @batch rows of @x. */
static void
run_engine (const char *path, const float *x, guint batch, float *out)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  SedpNnPlan *plan = sedp_nn_plan_new (model, batch, &error);
  if (plan == NULL)
    fprintf (stderr, "\n  plan: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  SedpNnTensor in = {.name = (char *) "features", .dtype = SEDP_NN_FLOAT, .rank = 2,
                     .dims = {batch, D}, .data = (gpointer) x};
  SedpNnTensor res;
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (plan, 1, &in, 1, &res, &error));
  CU_ASSERT (res.rank == 2 && res.dims[0] == batch && res.dims[1] == 1);
  memcpy (out, res.data, batch * sizeof (float));
  sedp_nn_plan_free (plan);
}

/* The file's shape: input features [N, 9], output keep [N, 1], the MLP's parameter count. */
static void
check_signature (const char *path, const SedpMlp *m)
{
  g_autoptr (SedpNnModel) model = sedp_nn_model_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  SedpNnTensor info;
  CU_ASSERT_TRUE (sedp_nn_model_get_input_info (model, 0, &info));
  CU_ASSERT (strcmp (info.name, "features") == 0 && info.rank == 2 && info.dims[0] == -1
             && info.dims[1] == D);
  CU_ASSERT_TRUE (sedp_nn_model_get_output_info (model, 0, &info));
  CU_ASSERT (strcmp (info.name, "keep") == 0 && info.rank == 2 && info.dims[0] == -1
             && info.dims[1] == 1);
  CU_ASSERT_EQUAL (sedp_nn_model_get_n_parameters (model), (gint64) sedp_mlp_n_parameters (m));
  CU_ASSERT_TRUE (sedp_nn_model_check (model, NULL));
}

/* A trained 9 → 16 → 8 → 1 net exported, saved, loaded and run at batches of 1, 7 and 200 rows
 * (inputs in [−2, 3), beyond the training range): the engine's outputs equal
 * sedp_mlp_predict()'s within 1e-5. */
static void
test_onnx_matches_predict (void)
{
  g_autofree float *x = NULL, *y = NULL;
  make_set (200, 21, &x, &y);
  const guint hidden[] = {16, 8};
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, hidden, 2, 9);
  SedpMlpTrainOptions opt;
  sedp_mlp_train_options_init (&opt);
  opt.epochs = 20;
  CU_ASSERT_TRUE_FATAL (sedp_mlp_train (m, x, y, 200, &opt, NULL, NULL));
  for (guint i = 0; i < 200 * D; i++)
    x[i] = x[i] * 5.0f - 2.0f;
  g_autoptr (SedpNnModel) model = sedp_mlp_to_onnx (m, "features", "keep");
  g_autofree char *path = NULL;
  close (g_file_open_tmp ("test-mlp-XXXXXX.onnx", &path, NULL));
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (model, path, &error));
  check_signature (path, m);
  float want[200], got[200];
  sedp_mlp_predict (m, x, 200, want);
  const guint batches[] = {1, 7, 200};
  double worst = 0;
  for (guint b = 0; b < G_N_ELEMENTS (batches); b++) {
    run_engine (path, x, batches[b], got);
    for (guint i = 0; i < batches[b]; i++)
      worst = MAX (worst, fabs ((double) got[i] - want[i]));
  }
  printf ("\n    engine against sedp_mlp_predict: max |difference| %.3g\n", worst);
  CU_ASSERT (worst <= 1e-5);
  g_unlink (path);
}

/* ---- bad input ---- */

static GError *
train_error (SedpMlp *m, const float *x, const float *y, guint n, const SedpMlpTrainOptions *opt)
{
  GError *error = NULL;
  SedpMlpTrainReport r;
  CU_ASSERT_FALSE (sedp_mlp_train (m, x, y, n, opt, &r, &error));
  CU_ASSERT_PTR_NULL (r.losses);
  return error;
}

/* 0 rows, a NaN input, an infinite target, a target above 1 or below 0: an error naming the
 * row, the input and the value, and the MLP untouched. */
static void
test_bad_data (void)
{
  g_autofree float *x = NULL, *y = NULL;
  make_set (10, 1, &x, &y);
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, (const guint[]) {4}, 1, 1);
  gsize bytes = sedp_mlp_n_parameters (m) * sizeof (double);
  g_autofree double *before = g_memdup2 (sedp_mlp_get_params (m), bytes);
  g_autoptr (GError) e0 = train_error (m, x, y, 0, NULL);
  SEDP_ASSERT_ERROR (e0, SEDP_MLP_ERROR, "no rows", "n_rows = 0", "9 inputs");
  x[3 * D + 5] = NAN;
  g_autoptr (GError) e1 = train_error (m, x, y, 10, NULL);
  SEDP_ASSERT_ERROR (e1, SEDP_MLP_ERROR, "input 5 of row 3", "nan", "finite");
  CU_ASSERT_EQUAL (e1->code, SEDP_MLP_ERROR_NOT_FINITE);
  x[3 * D + 5] = 0.5f;
  y[4] = INFINITY;
  g_autoptr (GError) e2 = train_error (m, x, y, 10, NULL);
  SEDP_ASSERT_ERROR (e2, SEDP_MLP_ERROR, "target of row 4", "inf");
  CU_ASSERT_EQUAL (e2->code, SEDP_MLP_ERROR_NOT_FINITE);
  y[4] = 0.5f;
  y[2] = 1.5f;
  g_autoptr (GError) e3 = train_error (m, x, y, 10, NULL);
  SEDP_ASSERT_ERROR (e3, SEDP_MLP_ERROR, "target of row 2", "1.5", "outside [0, 1]", "clip");
  CU_ASSERT_EQUAL (e3->code, SEDP_MLP_ERROR_RANGE);
  y[2] = -0.25f;
  g_autoptr (GError) e4 = train_error (m, x, y, 10, NULL);
  SEDP_ASSERT_ERROR (e4, SEDP_MLP_ERROR, "target of row 2", "-0.25", "outside [0, 1]");
  CU_ASSERT_EQUAL (memcmp (before, sedp_mlp_get_params (m), bytes), 0);
}

/* A batch size of 0 or a NaN learning rate: an OPTIONS error naming the value; targets of
 * exactly 0 and 1 are fine. */
static void
test_bad_options (void)
{
  g_autofree float *x = NULL, *y = NULL;
  make_set (10, 1, &x, &y);
  y[2] = 1.0f;
  y[3] = 0.0f;
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, NULL, 0, 1);
  SedpMlpTrainOptions opt;
  sedp_mlp_train_options_init (&opt);
  opt.batch_size = 0;
  g_autoptr (GError) e1 = train_error (m, x, y, 10, &opt);
  SEDP_ASSERT_ERROR (e1, SEDP_MLP_ERROR, "batch_size = 0", "at least 1");
  CU_ASSERT_EQUAL (e1->code, SEDP_MLP_ERROR_OPTIONS);
  opt.batch_size = 4;
  opt.learning_rate = NAN;
  g_autoptr (GError) e2 = train_error (m, x, y, 10, &opt);
  SEDP_ASSERT_ERROR (e2, SEDP_MLP_ERROR, "learning_rate = nan", "above 0");
  opt.learning_rate = 0.01;
  opt.final_learning_rate = -0.001;
  g_autoptr (GError) e3 = train_error (m, x, y, 10, &opt);
  SEDP_ASSERT_ERROR (e3, SEDP_MLP_ERROR, "final_learning_rate = -0.001", "above 0");
  CU_ASSERT_EQUAL (e3->code, SEDP_MLP_ERROR_OPTIONS);
  opt.final_learning_rate = 0.001;
  opt.epochs = 1;
  CU_ASSERT_TRUE (sedp_mlp_train (m, x, y, 10, &opt, NULL, NULL));
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("shed", NULL, NULL);
  CU_add_test (s, "Xavier-uniform initialization", test_init);
  CU_add_test (s, "training converges on a synthetic set", test_converges);
  CU_add_test (s, "training is deterministic", test_deterministic);
  CU_add_test (s, "gradients against finite differences", test_gradient_check);
  CU_add_test (s, "the ONNX export runs in the engine as predicted", test_onnx_matches_predict);
  CU_add_test (s, "bad data is refused", test_bad_data);
  CU_add_test (s, "bad options are refused", test_bad_options);
  return sedp_test_run ();
}
