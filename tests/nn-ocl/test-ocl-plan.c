/* Plans lowered to an OpenCL device (core/nn/ocl/ocl-plan.c, ocl-run.c, lower-gemm.c;
 * docs/opencl.md §2–§5, §9.1–§9.2) on PoCL: every GEMM form (transposes, bias kinds, fused
 * activations, batched with even and irregular spacing, a folded Transpose), every synthetic
 * architecture at batches 1, 64 and 256, a plan specialised on a parameter, the weight store's
 * sharing, determinism, and streams under concurrency, each against the CPU engine on the same
 * inputs (§8's tolerances). Skips only without an OpenCL platform (SEDP_REQUIRE_OPENCL=1 makes
 * that a failure). Under valgrind (SEDP_VALGRIND=1) PoCL is slow: two GEMM forms, two MatMul
 * forms at one batch, one architecture at one batch, no determinism run. */
#include "../nn/nn-test.h"
#include "ocl-test.h"

#include "nn/exec/plan-private.h"
#include "nn/synth.h"

static SedpNnDevice *device;
static gboolean valgrind;

/* Relative bound of a product or a reduction's result against the CPU's (§8: the terms here are
 * of one sign at most half the time, so the result's magnitude is within a small factor of the
 * sum of the terms' magnitudes). */
#define RTOL 1e-5
#define ATOL 1e-6

/* ---- GEMM forms ---- */

/* Y = act (alpha · op(A) op(B) + beta · C): A a graph input [M, K] (or [K, M] with transA), B and
 * C initializers; C by @bias_kind (0 none, 1 scalar, 2 row, 3 column, 4 full). */
static SedpNnModel *
gemm_model (gboolean ta, gboolean tb, int bias_kind, const char *act, GRand *rng)
{
  const gint64 M = 5, K = 7, N = 3;
  SedpNnModel *m = tb_new (17);
  tb_input (m, "A", SEDP_NN_FLOAT, 2, ta ? I64 (K, M) : I64 (M, K));
  g_autofree float *b = rand_floats (rng, K * N, -1, 1), *c = rand_floats (rng, M * N, -1, 1);
  tb_init_f (m, "B", 2, tb ? I64 (N, K) : I64 (K, N), b);
  const gint64 cdims[5][2] = {{0, 0}, {1, 1}, {1, N}, {M, 1}, {M, N}};
  if (bias_kind)
    tb_init_f (m, "C", bias_kind == 1 ? 1 : 2, bias_kind == 1 ? I64 (1) : cdims[bias_kind], c);
  SedpNnNode *n = tb_node (m, "Gemm", "gemm", bias_kind ? "A,B,C" : "A,B", act ? "G" : "Y");
  tb_attr_f (n, "alpha", 0.75f);
  tb_attr_f (n, "beta", 1.25f);
  tb_attr_i (n, "transA", ta);
  tb_attr_i (n, "transB", tb);
  if (act) {
    SedpNnNode *a = tb_node (m, act, "act", "G", "Y");
    if (strcmp (act, "LeakyRelu") == 0)
      tb_attr_f (a, "alpha", 0.3f);
  }
  tb_output (m, "Y", SEDP_NN_FLOAT, -1, NULL);
  return m;
}

static void
test_gemm_forms (void)
{
  GRand *rng = g_rand_new_with_seed (7);
  const char *acts[] = {NULL, "Relu", "Sigmoid", "Tanh", "LeakyRelu"};
  guint checked = 0;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int bias = 0; bias <= 4; bias++)
        for (guint a = 0; a < G_N_ELEMENTS (acts); a++) {
          if (valgrind && (ta || tb || bias != 2 || a > 1))
            continue; /* under valgrind: NN with a row bias, with and without Relu */
          g_autoptr (SedpNnModel) m = gemm_model (ta, tb, bias, acts[a], rng);
          gboolean ok = ocl_test_parity (m, ta ? 7 : 5, device, 11, RTOL, ATOL);
          if (!ok)
            fprintf (stderr, "\n  gemm transA %d transB %d bias %d act %s", ta, tb, bias,
                     acts[a] ? acts[a] : "none");
          CU_ASSERT_TRUE (ok);
          checked++;
        }
  CU_ASSERT_TRUE (checked >= (valgrind ? 2u : 10u));
  g_rand_free (rng);
}

/* MatMul: A [N, 2, 6] · B [6, 4] (batch dims folded into M), a batched product of two graph
 * inputs [N, 3, 4, 6] · [N, 3, 6, 5] (evenly spaced: strided), B broadcast [3, 6, 5] (irregular
 * offsets: SgemmBatched) and a Transpose of B's last axes folded in (matmul_batched_tb). */
static void
test_matmul_forms (void)
{
  GRand *rng = g_rand_new_with_seed (8);
  g_autofree float *w = rand_floats (rng, 6 * 4, -1, 1);
  g_autoptr (SedpNnModel) m1 = tb_new (17);
  tb_input (m1, "A", SEDP_NN_FLOAT, 3, I64 (-1, 2, 6));
  tb_init_f (m1, "W", 2, I64 (6, 4), w);
  tb_node (m1, "MatMul", "mm", "A,W", "Y");
  tb_output (m1, "Y", SEDP_NN_FLOAT, -1, NULL);

  g_autoptr (SedpNnModel) m2 = tb_new (17);
  tb_input (m2, "A", SEDP_NN_FLOAT, 4, I64 (-1, 3, 4, 6));
  tb_input (m2, "B", SEDP_NN_FLOAT, 4, I64 (-1, 3, 6, 5));
  tb_node (m2, "MatMul", "mm", "A,B", "Y");
  tb_output (m2, "Y", SEDP_NN_FLOAT, -1, NULL);

  g_autofree float *b3 = rand_floats (rng, 3 * 6 * 5, -1, 1);
  g_autoptr (SedpNnModel) m3 = tb_new (17);
  tb_input (m3, "A", SEDP_NN_FLOAT, 4, I64 (-1, 3, 4, 6));
  tb_input (m3, "X", SEDP_NN_FLOAT, 2, I64 (-1, 2));
  tb_init_f (m3, "B", 3, I64 (3, 6, 5), b3);
  tb_node (m3, "MatMul", "mm", "A,B", "Y");
  tb_node (m3, "Relu", "r", "X", "Z");
  tb_output (m3, "Y", SEDP_NN_FLOAT, -1, NULL);
  tb_output (m3, "Z", SEDP_NN_FLOAT, -1, NULL);

  g_autoptr (SedpNnModel) m4 = tb_new (17);
  tb_input (m4, "Q", SEDP_NN_FLOAT, 3, I64 (-1, 4, 6));
  tb_input (m4, "K", SEDP_NN_FLOAT, 3, I64 (-1, 5, 6));
  SedpNnNode *t = tb_node (m4, "Transpose", "t", "K", "KT");
  tb_attr_ints (t, "perm", 3, I64 (0, 2, 1));
  tb_node (m4, "MatMul", "mm", "Q,KT", "Y");
  tb_output (m4, "Y", SEDP_NN_FLOAT, -1, NULL);

  SedpNnModel *models[] = {m1, m2, m3, m4};
  const gint64 batches[] = {1, 3, 17};
  /* Under valgrind (CLBlast's batched routines are slow to set up there): the first two models
   * at batch 3. */
  for (guint i = 0; i < (valgrind ? 2 : G_N_ELEMENTS (models)); i++)
    for (guint b = valgrind ? 1 : 0; b < (valgrind ? 2 : G_N_ELEMENTS (batches)); b++) {
      gboolean ok = ocl_test_parity (models[i], batches[b], device, 12 + b, RTOL, ATOL);
      if (!ok)
        fprintf (stderr, "\n  matmul model %u batch %" G_GINT64_FORMAT, i + 1, batches[b]);
      CU_ASSERT_TRUE (ok);
    }
  /* The lowering chose the three CLBlast routines. */
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) d = g_string_new (NULL);
  for (guint i = 1; i < (valgrind ? 1 : G_N_ELEMENTS (models)); i++) {
    SedpNnPlan *p = sedp_nn_plan_new_on (models[i], 2, device, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (p);
    sedp_nn_plan_describe (p, d);
    sedp_nn_plan_free (p);
  }
  CU_ASSERT_TRUE (valgrind || strstr (d->str, "clblast sgemm batched NN"));
  CU_ASSERT_TRUE (valgrind || strstr (d->str, "clblast sgemm batched NT"));
  g_rand_free (rng);
}

/* ---- whole architectures ---- */

static void
test_architectures (void)
{
  const char *const *archs = sedp_nn_synth_archs ();
  const gint64 batches[] = {1, 64, 256};
  for (guint a = 0; archs[a]; a++) {
    if (valgrind && a > 0)
      break;
    SedpNnSynthOptions o;
    CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&o, "small", archs[a]));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (archs[a], 3, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    for (guint b = 0; b < G_N_ELEMENTS (batches); b++) {
      if (valgrind && b > 0)
        break;
      gboolean ok = ocl_test_parity (m, batches[b], device, 100 + b, RTOL, ATOL);
      if (!ok)
        fprintf (stderr, "\n  architecture %s at batch %" G_GINT64_FORMAT, archs[a], batches[b]);
      CU_ASSERT_TRUE (ok);
    }
    /* Every step on the device: no host fallback left in any architecture. */
    if (valgrind)
      continue;
    SedpNnPlan *p = sedp_nn_plan_new_on (m, 8, device, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (p);
    const OclPlan *op = ((const Plan *) p)->ocl;
    if (op->n_host)
      fprintf (stderr, "\n  architecture %s: %u steps on the host", archs[a], op->n_host);
    CU_ASSERT_EQUAL (op->n_host, 0);
    sedp_nn_plan_free (p);
  }
}

/* Every kernel id a device plan can meet has a device lowering (docs/opencl.md §11, stage 5): all
 * but the fused attentions, which a device plan never has (it is compiled with
 * no_fuse_attention, and their parts are lowered), and the retired steps, which run nothing. */
static void
test_every_kernel_lowered (void)
{
  for (guint id = 1; id < NN_KERNEL_N; id++) {
    gboolean never = id == NN_KERNEL_TARGET_ATTENTION || id == NN_KERNEL_SELF_ATTENTION ||
                     id == NN_KERNEL_RETIRED;
    if (!never && nn_ocl_lowering (id) == NULL)
      fprintf (stderr, "\n  kernel '%s' has no device lowering", nn_kernel_id_name (id));
    CU_ASSERT_TRUE (never || nn_ocl_lowering (id) != NULL);
  }
}

/* ---- a plan specialised on a parameter: each of its plans is lowered ---- */

static void
test_specialised (void)
{
  GRand *rng = g_rand_new_with_seed (9);
  g_autofree float *w = rand_floats (rng, 3 * 4, -1, 1);
  g_autoptr (SedpNnModel) m = tb_new (17);
  tb_input (m, "X", SEDP_NN_FLOAT, 2, I64 (-1, 6));
  tb_input (m, "shape", SEDP_NN_INT64, 1, I64 (2));
  tb_init_f (m, "W", 2, I64 (3, 4), w);
  tb_node (m, "Reshape", "reshape", "X,shape", "R");
  tb_node (m, "MatMul", "mm", "R,W", "Y");
  tb_output (m, "Y", SEDP_NN_FLOAT, -1, NULL);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *cpu = sedp_nn_plan_new (m, 4, &error);
  SedpNnPlan *ocl = sedp_nn_plan_new_on (m, 4, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ocl);
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (ocl, 1));
  CU_ASSERT_PTR_EQUAL (sedp_nn_plan_get_device (ocl), device);
  g_autofree float *x = rand_floats (rng, 4 * 6, -1, 1);
  const gint64 shapes[2][2] = {{-1, 3}, {8, 3}};
  for (guint k = 0; k < 2; k++) {
    SedpNnTensor in[2] = {tt (SEDP_NN_FLOAT, x, 2, I64 (4, 6)), tt (SEDP_NN_INT64, shapes[k], 1, I64 (2))};
    SedpNnTensor co, oo;
    CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (cpu, 2, in, 1, &co, &error));
    CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (ocl, 2, in, 1, &oo, &error));
    CU_ASSERT_EQUAL (ocl_test_compare ("specialised", &oo, &co, RTOL, ATOL), 0);
  }
  g_autoptr (GString) d = g_string_new (NULL);
  sedp_nn_plan_describe (ocl, d);
  CU_ASSERT_PTR_NOT_NULL (strstr (d->str, "clblast sgemm NN"));
  sedp_nn_plan_free (ocl);
  sedp_nn_plan_free (cpu);
  g_rand_free (rng);
}

/* ---- the weight store ---- */

static void
test_weights_shared (void)
{
  SedpNnSynthOptions o;
  CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&o, "small", "mlp"));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_synth ("mlp", 5, &o, &error);
  CU_ASSERT_EQUAL_FATAL (device->weight_bytes, 0);
  SedpNnPlan *a = sedp_nn_plan_new_on (m, 8, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  cl_ulong one = device->weight_bytes;
  CU_ASSERT_TRUE (one > 0);
  SedpNnPlan *b = sedp_nn_plan_new_on (m, 32, device, &error);
  SedpNnPlan *c = sedp_nn_plan_new_on (m, 8, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_EQUAL (device->weight_bytes, one); /* three plans, one copy */
  CU_ASSERT_TRUE (device->arena_bytes > 0);
  sedp_nn_plan_free (a);
  sedp_nn_plan_free (b);
  CU_ASSERT_EQUAL (device->weight_bytes, one);
  sedp_nn_plan_free (c);
  CU_ASSERT_EQUAL (device->weight_bytes, 0);
  CU_ASSERT_EQUAL (device->arena_bytes, 0);
}

/* ---- determinism ---- */

static void
test_deterministic (void)
{
  SedpNnSynthOptions o;
  CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&o, "small", "dlrm"));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_synth ("dlrm", 5, &o, &error);
  SedpNnPlan *p = sedp_nn_plan_new_on (m, 16, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  GRand *rng = g_rand_new_with_seed (5);
  g_autoptr (GPtrArray) in = ocl_test_inputs (m, p, rng);
  g_rand_free (rng);
  g_autofree SedpNnTensor *args = ocl_test_args (in);
  SedpNnTensor out;
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  gsize bytes = sedp_nn_tensor_nbytes (&out);
  g_autofree gpointer first = g_memdup2 (out.data, bytes);
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  CU_ASSERT_EQUAL (memcmp (first, out.data, bytes), 0);
  sedp_nn_plan_free (p);
}

/* ---- streams under concurrency ---- */

typedef struct {
  SedpNnModel *model;
  guint runs;
  guint32 seed;
  guint bad;
} StreamWorker;

/* Its own device plan and CPU plan; new random inputs each run; every output checked. */
static gpointer
stream_worker (gpointer data)
{
  StreamWorker *w = data;
  g_autoptr (GError) error = NULL;
  SedpNnPlan *cpu = sedp_nn_plan_new (w->model, 8, &error);
  SedpNnPlan *ocl = sedp_nn_plan_new_on (w->model, 8, device, &error);
  GRand *rng = g_rand_new_with_seed (w->seed);
  for (guint r = 0; r < w->runs && ocl; r++) {
    g_autoptr (GPtrArray) in = ocl_test_inputs (w->model, cpu, rng);
    g_autofree SedpNnTensor *args = ocl_test_args (in);
    SedpNnTensor co, oo;
    if (!sedp_nn_plan_run (cpu, in->len, args, 1, &co, NULL) ||
        !sedp_nn_plan_run (ocl, in->len, args, 1, &oo, NULL) ||
        ocl_test_compare ("stream run", &oo, &co, RTOL, ATOL) != 0)
      w->bad++;
  }
  if (ocl == NULL)
    w->bad = w->runs;
  g_rand_free (rng);
  sedp_nn_plan_free (ocl);
  sedp_nn_plan_free (cpu);
  return NULL;
}

static void
test_streams_concurrent (void)
{
  SedpNnSynthOptions o;
  CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&o, "small", "mlp"));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_synth ("mlp", 6, &o, &error);
  const guint counts[] = {1, 3, 8};
  guint threads = valgrind ? 2 : 16, runs = valgrind ? 2 : 25;
  /* PoCL's device is a CPU: one queue per stream unless the suite's variant asks for three */
  CU_ASSERT_EQUAL (sedp_nn_device_get_queues_per_stream (device),
                   g_strcmp0 (g_getenv ("SEDP_OPENCL_OVERLAP"), "1") == 0 ? 3 : 1);
  for (guint c = 0; c < G_N_ELEMENTS (counts); c++) {
    CU_ASSERT_TRUE_FATAL (sedp_nn_device_set_streams (device, counts[c], &error));
    CU_ASSERT_EQUAL (sedp_nn_device_get_streams (device), counts[c]);
    StreamWorker w[16];
    GThread *th[16];
    for (guint i = 0; i < threads; i++) {
      w[i] = (StreamWorker){m, runs, 1000 * c + i, 0};
      th[i] = g_thread_new ("stream", stream_worker, &w[i]);
    }
    for (guint i = 0; i < threads; i++) {
      g_thread_join (th[i]);
      CU_ASSERT_EQUAL (w[i].bad, 0);
    }
  }
  CU_ASSERT_FALSE (sedp_nn_device_set_streams (device, 0, &error));
  CU_ASSERT_TRUE (g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT));
  g_clear_error (&error);
  CU_ASSERT_FALSE (sedp_nn_device_set_streams (device, 9, &error));
  CU_ASSERT_TRUE (sedp_nn_device_set_streams (device, 1, &error));
}

/* ---- errors ---- */

/* A run whose event fails (CL_OUT_OF_RESOURCES, through the test hook): that run's error, then
 * every later run refused as the device is lost, the process up; reopening gives a working
 * device. Runs last: it closes the suite's device. */
static void
test_device_lost (void)
{
  SedpNnSynthOptions o;
  CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&o, "small", "mlp"));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_synth ("mlp", 7, &o, &error);
  SedpNnPlan *p = sedp_nn_plan_new_on (m, 4, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  GRand *rng = g_rand_new_with_seed (3);
  g_autoptr (GPtrArray) in = ocl_test_inputs (m, p, rng);
  g_rand_free (rng);
  g_autofree SedpNnTensor *args = ocl_test_args (in);
  SedpNnTensor out;
  CU_ASSERT_TRUE (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  nn_ocl_test_fail_next_run (CL_OUT_OF_RESOURCES);
  CU_ASSERT_FALSE (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  g_autofree char *want = g_strdup_printf ("OpenCL device %s: a run of model '%s' at batch 4 failed: "
                                           "CL_OUT_OF_RESOURCES (-5)",
                                           sedp_nn_device_get_label (device), m->graph_name);
  CU_ASSERT_TRUE (g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE));
  if (error && strcmp (error->message, want) != 0)
    fprintf (stderr, "\n  got  '%s'\n  want '%s'", error->message, want);
  CU_ASSERT_STRING_EQUAL (error ? error->message : "", want);
  g_clear_error (&error);
  CU_ASSERT_FALSE (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  CU_ASSERT_TRUE (error && strstr (error->message, "is lost (since ") &&
                  strstr (error->message, "reload the stage to reopen it"));
  g_clear_error (&error);
  sedp_nn_plan_free (p);
  sedp_nn_device_unref (device);
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
  device = sedp_nn_device_open (NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (device);
  p = sedp_nn_plan_new_on (m, 4, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_TRUE (sedp_nn_plan_run (p, in->len, args, 1, &out, &error));
  sedp_nn_plan_free (p);
}

/* In a child with POCL_MEMORY_LIMIT=1 (256 MiB per buffer): a plan whose intermediate values need
 * more is refused when it is made, with the figures and the fix; a smaller batch is fine. */
static int
child_arena_limit (void)
{
  g_autoptr (GError) error = NULL;
  SedpNnDevice *d = sedp_nn_device_open (NULL, &error);
  if (d == NULL)
    return 3;
  GRand *rng = g_rand_new_with_seed (1);
  g_autofree float *w = rand_floats (rng, 256 * 1024, -1, 1);
  g_rand_free (rng);
  g_autoptr (SedpNnModel) m = tb_new (17);
  tb_input (m, "X", SEDP_NN_FLOAT, 2, I64 (-1, 256));
  tb_init_f (m, "W", 2, I64 (256, 1024), w);
  tb_node (m, "MatMul", "mm", "X,W", "Y");
  tb_output (m, "Y", SEDP_NN_FLOAT, -1, NULL);
  SedpNnPlan *small = sedp_nn_plan_new_on (m, 1024, d, &error);
  SedpNnPlan *big = small ? sedp_nn_plan_new_on (m, 131072, d, &error) : NULL;
  printf ("%s\n", error ? error->message : "(no error)");
  int status = small && big == NULL && g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE) ? 0 : 4;
  sedp_nn_plan_free (big);
  sedp_nn_plan_free (small);
  sedp_nn_device_unref (d);
  return status;
}

static char *self_exe;

static void
test_arena_limit (void)
{
  char *argv[] = {self_exe, "--child", "arena", NULL};
  g_auto (GStrv) env = g_environ_setenv (g_get_environ (), "POCL_MEMORY_LIMIT", "1", TRUE);
  g_autofree char *out = NULL;
  int status = -1;
  CU_ASSERT_TRUE_FATAL (g_spawn_sync (NULL, argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                                      &status, NULL));
  CU_ASSERT_TRUE (g_spawn_check_wait_status (status, NULL));
  /* 131072 × 1024 floats of Y and 131072 × 256 of X's slot: 640 MiB. */
  const char *want = "at batch 131072 the intermediate values need 640.0 MiB in one buffer, "
                     "OpenCL device 0 (";
  if (!out || !strstr (out, want))
    fprintf (stderr, "\n  child said: %s", out ? out : "(nothing)");
  CU_ASSERT_PTR_NOT_NULL (out ? strstr (out, want) : NULL);
  CU_ASSERT_PTR_NOT_NULL (out ? strstr (out, "allows 256.0 MiB per buffer "
                                            "(CL_DEVICE_MAX_MEM_ALLOC_SIZE): lower max_batch_rows")
                              : NULL);
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--child") == 0 && strcmp (argv[2], "arena") == 0)
    return child_arena_limit ();
  CU_pSuite s = NULL;
  int status = ocl_test_begin ("nn-ocl-plan", &valgrind, &device, &s);
  if (status)
    return status;
  CU_add_test (s, "the weight store: one copy per device", test_weights_shared);
  CU_add_test (s, "gemm: transposes, bias kinds, activations", test_gemm_forms);
  /* Not under valgrind: CLBlast's batched routines take minutes to set up there. */
  if (!valgrind)
    CU_add_test (s, "matmul: folded, strided, irregular, transposed", test_matmul_forms);
  CU_add_test (s, "every kernel has a device lowering", test_every_kernel_lowered);
  CU_add_test (s, "every synthetic architecture", test_architectures);
  CU_add_test (s, "a plan specialised on a parameter", test_specialised);
  if (!valgrind)
    CU_add_test (s, "the same inputs give the same bits", test_deterministic);
  /* PoCL 3.1's 'basic' device deadlocks when several threads enqueue on several queues (a thread
   * inside a CLBlast launch waits in pocl_update_event_running for an event lock that is never
   * released): the concurrency test runs on its 'pthread' device (plain and ASan runs). */
  if (strstr (sedp_nn_device_get_label (device), ": basic-") == NULL)
    CU_add_test (s, "streams 1, 3 and 8 under 16 threads", test_streams_concurrent);
  self_exe = g_file_read_link ("/proc/self/exe", NULL);
  if (!valgrind)
    CU_add_test (s, "a plan over the device's buffer limit", test_arena_limit);
  CU_add_test (s, "a device lost at run time", test_device_lost);
  status = sedp_test_run ();
  sedp_nn_device_unref (device);
  g_free (self_exe);
  return status;
}
