/* sedp nn tests: LayerNormalization, the reductions beyond Sum/Mean (Max, Min, Prod, L2,
 * SumSquare, LogSumExp), Split, Tile, ConstantOfShape and Range, against references computed
 * here in double precision from the ONNX definitions, plus their plan-time errors. */
#include "nn-test.h"

#define F SEDP_NN_FLOAT
#define I SEDP_NN_INT64

/* A plan whose compilation must fail with @code, naming every needle. Frees @m. */
#define EXPECT_PLAN_ERROR(m, batch, code, ...)                                                  \
  do {                                                                                          \
    g_autoptr (GError) _e = NULL;                                                               \
    SedpNnPlan *_p = sedp_nn_plan_new ((m), (batch), &_e);                                      \
    CU_ASSERT_PTR_NULL (_p);                                                                    \
    if (_p)                                                                                     \
      sedp_nn_plan_free (_p);                                                                   \
    ASSERT_NN_ERROR (_e, (code), __VA_ARGS__);                                                  \
    sedp_nn_model_unref (m);                                                                    \
  } while (0)

/* ================================================================================================
 * LayerNormalization
 * ============================================================================================== */

/* y = (x - mean) / sqrt(var + eps) · scale + b over rows of @cols; scale and b given per column
 * (already broadcast), b nullable. @mag: a per-element error scale (|normalised·scale| + |b|). */
static void
layernorm_ref (const float *x, gint64 rows, gint64 cols, const double *scale, const double *b,
               double eps, double *y, double *mag, double *mean_out, double *inv_out)
{
  for (gint64 r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    double mean = 0, var = 0;
    for (gint64 c = 0; c < cols; c++)
      mean += xr[c];
    mean /= (double) cols;
    for (gint64 c = 0; c < cols; c++)
      var += (xr[c] - mean) * (xr[c] - mean);
    var /= (double) cols;
    double inv = 1.0 / sqrt (var + eps);
    for (gint64 c = 0; c < cols; c++) {
      double n = (xr[c] - mean) * inv * scale[c];
      y[r * cols + c] = n + (b ? b[c] : 0);
      mag[r * cols + c] = fabs (n) + (b ? fabs (b[c]) : 0);
    }
    if (mean_out)
      mean_out[r] = mean;
    if (inv_out)
      inv_out[r] = inv;
  }
}

static double *
to_doubles (const float *v, gint64 n)
{
  double *d = g_new (double, MAX (n, 1));
  for (gint64 i = 0; i < n; i++)
    d[i] = v[i];
  return d;
}

/* X [b, 5, 8] normalised over the last axis (default), over [5, 8] (axis 1 and -2), with and
 * without B; rows of large mean and small spread check the variance's numerics. */
/* A graph input read where a constant is needed is a parameter: the plan is specialised on its
 * value at run time (plan-special.c, tested in test-plan-special.c), not refused. */
static void
expect_parameter (SedpNnModel *m, gint64 batch, guint input)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  CU_ASSERT_PTR_NOT_NULL (plan);
  if (plan)
    CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, input));
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

static void
test_layernorm_random (void)
{
  GRand *rng = g_rand_new_with_seed (4242);
  g_autofree float *s8 = rand_floats (rng, 8, 0.5, 2), *b8 = rand_floats (rng, 8, -1, 1);
  g_autofree float *s40 = rand_floats (rng, 40, 0.5, 2), *b40 = rand_floats (rng, 40, -1, 1);
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, -1, 5, 8);
  INIT_F (m, "s8", s8, 8);
  INIT_F (m, "b8", b8, 8);
  INIT_F (m, "s40", s40, 5, 8);
  INIT_F (m, "b40", b40, 5, 8);
  tb_node (m, "LayerNormalization", "last", "X,s8,b8", "Y0");
  SedpNnNode *n = tb_node (m, "LayerNormalization", "axis1", "X,s40,b40", "Y1");
  tb_attr_i (n, "axis", 1);
  tb_attr_f (n, "epsilon", 1e-3f);
  n = tb_node (m, "LayerNormalization", "axis_m2_nob", "X,s40", "Y2");
  tb_attr_i (n, "axis", -2);
  OUT (m, "Y0", F);
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  for (gint64 b = 1; b <= 3; b += 2) {
    g_autofree float *x = rand_floats (rng, b * 40, -3, 3);
    for (gint64 i = 0; i < 8; i++) /* a row near 1e4 with a spread of 0.1 */
      x[i] = 10000.0f + (float) g_rand_double_range (rng, -0.1, 0.1);
    SedpNnTensor in = TT (F, x, b, 5, 8);
    Out o[3];
    run_model (m, b, 1, &in, o);
    g_autofree double *want = g_new (double, b * 40), *mag = g_new (double, b * 40);
    g_autofree double *ds8 = to_doubles (s8, 8), *db8 = to_doubles (b8, 8);
    g_autofree double *ds40 = to_doubles (s40, 40), *db40 = to_doubles (b40, 40);
    layernorm_ref (x, b * 5, 8, ds8, db8, 1e-5, want, mag, NULL, NULL);
    SHAPE_IS (o[0], b, 5, 8);
    ASSERT_CLOSE_SCALED (o[0], want, mag, 1e-5);
    layernorm_ref (x, b, 40, ds40, db40, (float) 1e-3f, want, mag, NULL, NULL);
    ASSERT_CLOSE_SCALED (o[1], want, mag, 1e-5);
    layernorm_ref (x, b, 40, ds40, NULL, 1e-5, want, mag, NULL, NULL);
    ASSERT_CLOSE_SCALED (o[2], want, mag, 1e-5);
    outs_free (o, 3);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Rank 4 with axis 1 and a Scale [4, 1] and a scalar B broadcast over [3, 4, 5]; the Mean and
 * InvStdDev outputs; the FLOP count (8 per element). */
static void
test_layernorm_broadcast_stats (void)
{
  GRand *rng = g_rand_new_with_seed (77);
  g_autofree float *s = rand_floats (rng, 4, 0.5, 2);
  float bias = 0.25f;
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, -1, 3, 4, 5);
  INIT_F (m, "S", s, 4, 1);
  tb_scalar_f (m, "B", bias);
  SedpNnNode *n = tb_node (m, "LayerNormalization", "ln", "X,S,B", "Y,Mean,Inv");
  tb_attr_i (n, "axis", 1);
  OUT (m, "Y", F);
  OUT (m, "Mean", F);
  OUT (m, "Inv", F);
  gint64 b = 2, cols = 60;
  g_autofree float *x = rand_floats (rng, b * cols, -2, 2);
  double sc[60], bb[60], want[120], mag[120], mean[2], inv[2];
  for (gint64 c = 0; c < cols; c++) {
    sc[c] = s[(c / 5) % 4]; /* [3, 4, 5]: the Scale index is the middle axis */
    bb[c] = bias;
  }
  layernorm_ref (x, b, cols, sc, bb, 1e-5, want, mag, mean, inv);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, b, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_DOUBLE_EQUAL (sedp_nn_plan_get_flops (plan), 8.0 * (double) (b * cols), 0.5);
  sedp_nn_plan_free (plan);
  SedpNnTensor in = TT (F, x, b, 3, 4, 5);
  Out o[3];
  run_model (m, b, 1, &in, o);
  SHAPE_IS (o[0], 2, 3, 4, 5);
  ASSERT_CLOSE_SCALED (o[0], want, mag, 1e-5);
  SHAPE_IS (o[1], 2, 1, 1, 1);
  ASSERT_CLOSE_SCALED (o[1], mean, D (2, 2), 1e-6);
  SHAPE_IS (o[2], 2, 1, 1, 1);
  ASSERT_CLOSE (o[2], inv, 1e-6);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Rank 1 (over the batch), a normalised axis of length 1 (y = B) and of length 0 (empty). */
static void
test_layernorm_edges (void)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, -1);
  tb_scalar_f (m, "S", 2.0f);
  tb_node (m, "LayerNormalization", "ln", "X,S", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, 6), 4);
  Out o[1];
  run_model (m, 4, 1, &in, o);
  double var = (4 + 1 + 0 + 9) / 4.0, inv = 1 / sqrt (var + 1e-5); /* mean 3 */
  SHAPE_IS (o[0], 4);
  FLOATS_ARE (o[0], 1e-5, -2 * inv * 2, -1 * inv * 2, 0, 3 * inv * 2);
  outs_free (o, 1);
  sedp_nn_model_unref (m);

  m = tb_new (17);
  IN (m, "X", F, -1, 1);
  IN (m, "Z", F, -1, 0);
  INIT_F (m, "S1", F32 (3), 1);
  INIT_F (m, "B1", F32 (0.5f), 1);
  INIT_F (m, "S0", NULL, 0);
  tb_node (m, "LayerNormalization", "one", "X,S1,B1", "Y,M");
  tb_node (m, "LayerNormalization", "zero", "Z,S0", "W");
  /* on a constant (folded at plan time), Mean omitted */
  INIT_F (m, "K", F32 (1, 2, 4), 3);
  tb_scalar_f (m, "one", 1.0f);
  tb_node (m, "LayerNormalization", "folded", "K,one", "KY,,KI");
  OUT (m, "Y", F);
  OUT (m, "M", F);
  OUT (m, "W", F);
  OUT (m, "KY", F);
  OUT (m, "KI", F);
  SedpNnTensor ins[2] = {TT (F, F32 (7, -3), 2, 1), TT (F, F32 (0), 2, 0)};
  Out o3[5];
  run_model (m, 2, 2, ins, o3);
  SHAPE_IS (o3[0], 2, 1);
  FLOATS_ARE (o3[0], 1e-6, 0.5, 0.5);
  FLOATS_ARE (o3[1], 1e-6, 7, -3);
  SHAPE_IS (o3[2], 2, 0);
  double kinv = 1 / sqrt (14.0 / 9 + 1e-5); /* mean 7/3, deviations -4/3, -1/3, 5/3 */
  FLOATS_ARE (o3[3], 1e-6, -4 / 3.0 * kinv, -1 / 3.0 * kinv, 5 / 3.0 * kinv);
  SHAPE_IS (o3[4], 1);
  FLOATS_ARE (o3[4], 1e-6, kinv);
  outs_free (o3, 5);
  sedp_nn_model_unref (m);
}

static void
test_layernorm_errors (void)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "X", I, -1, 4);
  INIT_F (m, "S", F32 (1, 1, 1, 1), 4);
  tb_node (m, "LayerNormalization", "ln", "X,S", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_UNSUPPORTED, "float X", "int64");

  m = tb_new (17);
  IN (m, "X", F, -1, 4);
  INIT_F (m, "S", F32 (1, 1, 1, 1), 4);
  tb_attr_i (tb_node (m, "LayerNormalization", "ln", "X,S", "Y"), "axis", 2);
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "axis 2", "rank 2");

  m = tb_new (17);
  IN (m, "X", F, -1, 4);
  INIT_F (m, "S", F32 (1, 1, 1), 3);
  tb_node (m, "LayerNormalization", "ln", "X,S", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "Scale", "[3]", "[4]");

  m = tb_new (17);
  IN (m, "X", F, -1, 4);
  INIT_F (m, "S", F32 (1, 1, 1, 1), 4);
  INIT_I (m, "B", I64 (0, 0, 0, 0), 4);
  tb_node (m, "LayerNormalization", "ln", "X,S,B", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_UNSUPPORTED, "B is int64");

  m = tb_new (17);
  IN (m, "X", F, -1, 4);
  INIT_F (m, "S", F32 (1, 1, 1, 1), 4);
  tb_attr_i (tb_node (m, "LayerNormalization", "ln", "X,S", "Y,Mean"), "stash_type", 11);
  OUT (m, "Y", F);
  OUT (m, "Mean", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_UNSUPPORTED, "stash_type 11");
}

/* ================================================================================================
 * Reductions: Max, Min, Prod, L2, SumSquare, LogSumExp
 * ============================================================================================== */

static const char *const red_ops[] = {"ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                                      "ReduceSumSquare", "ReduceLogSumExp"};

/* The reduction @op (an index into red_ops) of X [b, 3, 4] over the dims of @mask, in double:
 * want[o] for each output (in the keepdims layout). */
static void
red_ref (int op, const float *x, gint64 b, guint mask, double *want)
{
  gint64 dims[3] = {b, 3, 4}, od[3];
  for (int k = 0; k < 3; k++)
    od[k] = (mask & (1u << k)) ? 1 : dims[k];
  gint64 n_out = od[0] * od[1] * od[2];
  double init = op == 0 ? -INFINITY : op == 1 ? INFINITY : op == 2 ? 1 : 0;
  g_autofree double *mx = g_new (double, n_out);
  for (gint64 o = 0; o < n_out; o++)
    want[o] = init, mx[o] = -INFINITY;
  for (int pass = 0; pass < (op == 5 ? 2 : 1); pass++)
    for (gint64 i = 0; i < b * 12; i++) {
      gint64 d0 = i / 12, d1 = (i / 4) % 3, d2 = i % 4;
      gint64 o = (((mask & 1) ? 0 : d0) * od[1] + ((mask & 2) ? 0 : d1)) * od[2] + ((mask & 4) ? 0 : d2);
      double v = x[i];
      if (op == 0)
        want[o] = MAX (want[o], v);
      else if (op == 1)
        want[o] = MIN (want[o], v);
      else if (op == 2)
        want[o] *= v;
      else if (op == 3 || op == 4)
        want[o] += v * v;
      else if (pass == 0)
        mx[o] = MAX (mx[o], v);
      else
        want[o] += exp (v - mx[o]);
    }
  for (gint64 o = 0; o < n_out; o++)
    want[o] = op == 3 ? sqrt (want[o]) : op == 5 ? mx[o] + log (want[o]) : want[o];
}

typedef struct {
  guint mask;      /* dims reduced */
  gboolean keepdims;
  gint64 axes[3];
  guint n_axes;    /* 0: no axes (every dim) */
} RedCase;

/* Every op over several axis sets (adjacent, not adjacent, negative, all), with `axes` an
 * attribute (@opset < 18) or an input (18). */
static void
red_cases (gint64 opset)
{
  static const RedCase cases[] = {
      {2, TRUE, {1}, 1},      {4, FALSE, {-1}, 1}, {6, TRUE, {-2, 2}, 2},
      {5, FALSE, {0, 2}, 2},  {7, TRUE, {0}, 0},   {7, FALSE, {0}, 0},
      {1, TRUE, {-3}, 1},
  };
  GRand *rng = g_rand_new_with_seed (500 + (guint32) opset);
  guint n_cases = G_N_ELEMENTS (cases), n_out = G_N_ELEMENTS (red_ops) * n_cases;
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 3, 4);
  for (guint k = 0; k < G_N_ELEMENTS (red_ops); k++)
    for (guint c = 0; c < n_cases; c++) {
      const RedCase *rc = &cases[c];
      g_autofree char *out = g_strdup_printf ("Y%u_%u", k, c), *ax = g_strdup_printf ("ax%u_%u", k, c);
      g_autofree char *ins = g_strdup_printf ("X,%s", ax);
      SedpNnNode *n;
      if (opset >= 18 && rc->n_axes) {
        tb_ints (m, ax, rc->n_axes, rc->axes);
        n = tb_node (m, red_ops[k], out, ins, out);
      } else {
        n = tb_node (m, red_ops[k], out, "X", out);
        if (rc->n_axes)
          tb_attr_ints (n, "axes", rc->n_axes, rc->axes);
      }
      tb_attr_i (n, "keepdims", rc->keepdims);
      OUT (m, out, F);
    }
  for (gint64 b = 1; b <= 3; b += 2) {
    g_autofree float *x = rand_floats (rng, b * 12, -2, 2);
    SedpNnTensor in = TT (F, x, b, 3, 4);
    g_autofree Out *o = g_new0 (Out, n_out);
    run_model (m, b, 1, &in, o);
    for (guint k = 0; k < G_N_ELEMENTS (red_ops); k++)
      for (guint c = 0; c < n_cases; c++) {
        const RedCase *rc = &cases[c];
        double want[64];
        red_ref ((int) k, x, b, rc->mask, want);
        gint64 dims[3] = {b, 3, 4}, od[3];
        int r = 0;
        for (int d = 0; d < 3; d++)
          if (!(rc->mask & (1u << d)) || rc->keepdims)
            od[r++] = rc->mask & (1u << d) ? 1 : dims[d];
        Out *out = &o[k * n_cases + c];
        if (!shape_is (out, r, od) ||
            close_scaled (red_ops[k], out->data, want, NULL, out->numel, RTOL_REDUCE, 1e-6)) {
          fprintf (stderr, " (%s case %u batch %" G_GINT64_FORMAT ")\n", red_ops[k], c, b);
          CU_FAIL ("reduction");
        }
      }
    outs_free (o, n_out);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_reduce_ops_opset13 (void)
{
  red_cases (13);
}

static void
test_reduce_ops_opset18 (void)
{
  red_cases (18);
}

/* An axis of length 0 gives each op's identity (-inf, +inf, 1, 0, 0, -inf); of length 1 the
 * element itself (L2: its magnitude); Max and Min propagate NaN; noop_with_empty_axes reduces
 * over no axis (SumSquare: each element squared). */
static void
test_reduce_ops_edges (void)
{
  SedpNnModel *m = tb_new (18);
  IN (m, "E", F, -1, 0);
  IN (m, "X", F, -1, 1);
  IN (m, "N", F, -1, 3);
  INTS (m, "ax1", 1);
  for (guint k = 0; k < G_N_ELEMENTS (red_ops); k++) {
    g_autofree char *e = g_strdup_printf ("E%u", k), *x = g_strdup_printf ("X%u", k);
    tb_attr_i (tb_node (m, red_ops[k], e, "E,ax1", e), "keepdims", 0);
    tb_node (m, red_ops[k], x, "X,ax1", x);
    OUT (m, e, F);
    OUT (m, x, F);
  }
  tb_node (m, "ReduceMax", "nanmax", "N,ax1", "NM");
  tb_node (m, "ReduceMin", "nanmin", "N,ax1", "Nm");
  tb_attr_i (tb_node (m, "ReduceSumSquare", "noop", "N", "NS"), "noop_with_empty_axes", 1);
  OUT (m, "NM", F);
  OUT (m, "Nm", F);
  OUT (m, "NS", F);
  SedpNnTensor in[3] = {TT (F, F32 (0), 2, 0), TT (F, F32 (-1.5f, 2), 2, 1),
                        TT (F, F32 (1, NAN, 3, -4, 5, 6), 2, 3)};
  Out o[15];
  run_model (m, 2, 3, in, o);
  const double empty[] = {-INFINITY, INFINITY, 1, 0, 0, -INFINITY};
  const double one[][2] = {{-1.5, 2}, {-1.5, 2}, {-1.5, 2}, {1.5, 2}, {2.25, 4}, {-1.5, 2}};
  for (guint k = 0; k < G_N_ELEMENTS (red_ops); k++) {
    SHAPE_IS (o[2 * k], 2);
    const float *e = o[2 * k].data; /* exact (close_scaled accepts any value for ±∞) */
    if (!(e[0] == empty[k] && e[1] == empty[k]))
      fprintf (stderr, "\n  %s of nothing: got %g %g, want %g", red_ops[k], e[0], e[1], empty[k]);
    CU_ASSERT (e[0] == empty[k] && e[1] == empty[k]);
    SHAPE_IS (o[2 * k + 1], 2, 1);
    CU_ASSERT_EQUAL (close_scaled (red_ops[k], o[2 * k + 1].data, one[k], NULL, 2, 1e-6, 1e-6), 0);
  }
  const float *nm = o[12].data, *nmin = o[13].data;
  CU_ASSERT (isnan (nm[0]) && nm[1] == 6.0f);
  CU_ASSERT (isnan (nmin[0]) && nmin[1] == -4.0f);
  SHAPE_IS (o[14], 2, 3);
  CU_ASSERT (((const float *) o[14].data)[5] == 36.0f); /* over no axis: each element squared */
  outs_free (o, 15);
  sedp_nn_model_unref (m);
}

/* int64 Max and Min, over adjacent and non-adjacent axes and over an empty axis. */
static void
test_reduce_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", I, -1, 2, 2);
  IN (m, "E", I, -1, 0);
  ATTR_INTS (tb_node (m, "ReduceMax", "max1", "X", "A"), "axes", 1);
  SedpNnNode *n = tb_node (m, "ReduceMin", "min02", "X", "B");
  ATTR_INTS (n, "axes", 0, 2);
  tb_attr_i (n, "keepdims", 0);
  ATTR_INTS (tb_node (m, "ReduceMax", "maxe", "E", "C"), "axes", 1);
  ATTR_INTS (tb_node (m, "ReduceMin", "mine", "E", "D"), "axes", 1);
  OUT (m, "A", I);
  OUT (m, "B", I);
  OUT (m, "C", I);
  OUT (m, "D", I);
  gint64 big = G_GINT64_CONSTANT (1) << 60;
  SedpNnTensor in[2] = {TT (I, I64 (big + 1, -7, big, 9, 3, 4, -5, -big), 2, 2, 2),
                        TT (I, I64 (0), 2, 0)};
  Out o[4];
  run_model (m, 2, 2, in, o);
  SHAPE_IS (o[0], 2, 1, 2);
  INTS_ARE (o[0], big + 1, 9, 3, 4);
  SHAPE_IS (o[1], 2);
  INTS_ARE (o[1], -7, -big);
  SHAPE_IS (o[2], 2, 1);
  INTS_ARE (o[2], G_MININT64, G_MININT64);
  INTS_ARE (o[3], G_MAXINT64, G_MAXINT64);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

static void
test_reduce_ops_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", I, -1, 3);
  tb_node (m, "ReduceProd", "p", "X", "Y");
  OUT (m, "Y", I);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_UNSUPPORTED, "float input", "int64");

  m = tb_new (18);
  IN (m, "X", F, -1, 3);
  ATTR_INTS (tb_node (m, "ReduceMax", "p", "X", "Y"), "axes", 1);
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_INVALID, "'axes' is an input", "18");

  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  INTS (m, "ax", 1);
  tb_node (m, "ReduceMin", "p", "X,ax", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_INVALID, "'axes' is an attribute", "13");

  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  ATTR_INTS (tb_node (m, "ReduceL2", "p", "X", "Y"), "axes", -3);
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "axis -3", "rank 2");
}

/* ================================================================================================
 * Split
 * ============================================================================================== */

/* Expected output k of splitting X [rows, cols] (row-major) along axis 1 at column offsets. */
static void
split_ref (const float *x, gint64 rows, gint64 cols, gint64 from, gint64 width, double *want)
{
  for (gint64 r = 0; r < rows; r++)
    for (gint64 c = 0; c < width; c++)
      want[r * width + c] = x[r * cols + from + c];
}

/* Sizes as the opset-11 attribute, the opset-13 input, and opset-18 `num_outputs` (7 into 3:
 * 3, 3, 1), an empty part, and an equal split of rank 1. */
static void
test_split_forms (void)
{
  for (gint64 opset = 11; opset <= 18; opset += opset == 11 ? 2 : 5) {
    SedpNnModel *m = tb_new (opset);
    IN (m, "X", F, -1, 7);
    IN (m, "V", F, 4);
    SedpNnNode *n;
    if (opset >= 13) {
      INTS (m, "sz", 2, 0, 4, 1);
      n = tb_node (m, "Split", "var", "X,sz", "A,B,C,D");
    } else {
      n = tb_node (m, "Split", "var", "X", "A,B,C,D");
      ATTR_INTS (n, "split", 2, 0, 4, 1);
    }
    tb_attr_i (n, "axis", -1);
    tb_node (m, "Split", "eq", "V", "P,Q");
    if (opset >= 18) {
      n = tb_node (m, "Split", "num", "X", "E,F,G");
      tb_attr_i (n, "num_outputs", 3);
      tb_attr_i (n, "axis", 1);
    }
    for (const char *const *o = (const char *const[]){"A", "B", "C", "D", "P", "Q", NULL}; *o; o++)
      OUT (m, *o, F);
    if (opset >= 18)
      for (const char *const *o = (const char *const[]){"E", "F", "G", NULL}; *o; o++)
        OUT (m, *o, F);
    float x[21], v[4] = {1, 2, 3, 4};
    for (int i = 0; i < 21; i++)
      x[i] = (float) i * 0.5f;
    SedpNnTensor in[2] = {TT (F, x, 3, 7), TT (F, v, 4)};
    Out o[9];
    run_model (m, 3, 2, in, o);
    static const gint64 from[] = {0, 2, 2, 6}, width[] = {2, 0, 4, 1};
    double want[21];
    for (int k = 0; k < 4; k++) {
      split_ref (x, 3, 7, from[k], width[k], want);
      CU_ASSERT (shape_is (&o[k], 2, I64 (3, width[k])));
      if (width[k])
        ASSERT_CLOSE (o[k], want, 1e-7);
    }
    SHAPE_IS (o[4], 2);
    FLOATS_ARE (o[4], 1e-7, 1, 2);
    FLOATS_ARE (o[5], 1e-7, 3, 4);
    static const gint64 nfrom[] = {0, 3, 6}, nwidth[] = {3, 3, 1};
    for (int k = 0; opset >= 18 && k < 3; k++) {
      split_ref (x, 3, 7, nfrom[k], nwidth[k], want);
      CU_ASSERT (shape_is (&o[6 + k], 2, I64 (3, nwidth[k])));
      ASSERT_CLOSE (o[6 + k], want, 1e-7);
    }
    outs_free (o, opset >= 18 ? 9 : 6);
    sedp_nn_model_unref (m);
  }
}

/* 16 outputs (beyond the old limit of 4), on int64 data of rank 4 along axis 2. */
static void
test_split_many_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", I, -1, 2, 32, 1);
  GString *outs = g_string_new (NULL);
  for (int k = 0; k < 16; k++)
    g_string_append_printf (outs, "%sY%d", k ? "," : "", k);
  tb_attr_i (tb_node (m, "Split", "heads", "X", outs->str), "axis", 2);
  for (int k = 0; k < 16; k++) {
    g_autofree char *name = g_strdup_printf ("Y%d", k);
    OUT (m, name, I);
  }
  g_string_free (outs, TRUE);
  gint64 x[128];
  for (int i = 0; i < 128; i++)
    x[i] = i * 1000 + 7;
  SedpNnTensor in = TT (I, x, 2, 2, 32, 1);
  Out o[16];
  run_model (m, 2, 1, &in, o);
  for (int k = 0; k < 16; k++) {
    SHAPE_IS (o[k], 2, 2, 2, 1);
    gint64 want[8];
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 2; c++)
        want[r * 2 + c] = x[r * 32 + k * 2 + c];
    CU_ASSERT_EQUAL (ints_are (&o[k], 8, want), 0);
  }
  outs_free (o, 16);
  sedp_nn_model_unref (m);
}

static SedpNnModel *
split_model (gint64 opset, const char *outputs)
{
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 6);
  g_auto (GStrv) names = g_strsplit (outputs, ",", -1);
  for (guint k = 0; names[k]; k++)
    OUT (m, names[k], F);
  return m;
}

static void
test_split_errors (void)
{
  SedpNnModel *m = split_model (13, "A,B");
  INTS (m, "sz", 2, 3);
  tb_attr_i (tb_node (m, "Split", "s", "X,sz", "A,B"), "axis", 1);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "sum to 5", "dimension is 6");

  m = split_model (11, "A,B");
  SedpNnNode *n = tb_node (m, "Split", "s", "X", "A,B");
  ATTR_INTS (n, "split", 1, 2, 3);
  tb_attr_i (n, "axis", 1);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_INVALID, "3 sizes for 2 outputs");

  m = split_model (13, "A,B,C,D");
  tb_attr_i (tb_node (m, "Split", "s", "X", "A,B,C,D"), "axis", -1);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "dimension of 6 into 4 equal parts");

  m = split_model (13, "A,B");
  tb_attr_i (tb_node (m, "Split", "s", "X", "A,B"), "axis", 2);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "axis 2", "rank 2");

  m = split_model (13, "A,B");
  ATTR_INTS (tb_node (m, "Split", "s", "X", "A,B"), "split", 3, 3);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_INVALID, "'split' is an input");

  m = split_model (13, "A,B");
  tb_attr_i (tb_node (m, "Split", "s", "X", "A,B"), "num_outputs", 2);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_INVALID, "num_outputs 2");

  m = split_model (18, "A,B");
  INTS (m, "sz", -1, 7);
  tb_attr_i (tb_node (m, "Split", "s", "X,sz", "A,B"), "axis", 1);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "-1 is negative");
}

/* ================================================================================================
 * Tile
 * ============================================================================================== */

/* Tiling of X (rank @r, dims @d) by @rep, by the definition out[j] = x[j mod d]. */
static void
tile_ref (const double *x, int r, const gint64 *d, const gint64 *rep, double *want)
{
  gint64 od[8], n = 1;
  for (int k = 0; k < r; k++)
    n *= (od[k] = d[k] * rep[k]);
  for (gint64 i = 0; i < n; i++) {
    gint64 rest = i, src = 0, stride = 1;
    for (int k = r - 1; k >= 0; k--) {
      gint64 j = rest % od[k];
      rest /= od[k];
      src += (j % d[k]) * stride;
      stride *= d[k];
    }
    want[i] = x[src];
  }
}

static void
test_tile (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2, 3);
  IN (m, "R", F, -1);
  IN (m, "Q", I, -1, 1, 2, 2);
  INTS (m, "r3", 2, 1, 3);
  INTS (m, "r1", 3);
  INTS (m, "r4", 1, 2, 0, 1);
  INTS (m, "r4b", 1, 3, 2, 1);
  tb_node (m, "Tile", "t3", "X,r3", "A");
  tb_node (m, "Tile", "t1", "R,r1", "B");
  tb_node (m, "Tile", "t4", "Q,r4", "C");
  tb_node (m, "Tile", "t4b", "Q,r4b", "D");
  OUT (m, "A", F);
  OUT (m, "B", F);
  OUT (m, "C", I);
  OUT (m, "D", I);
  float x[12], r[2] = {5, -1};
  double xd[12], want[144];
  for (int i = 0; i < 12; i++)
    xd[i] = x[i] = (float) i - 3.5f;
  gint64 q[8];
  double qd[8];
  for (int i = 0; i < 8; i++)
    qd[i] = (double) (q[i] = i * 11 - 20);
  SedpNnTensor in[3] = {TT (F, x, 2, 2, 3), TT (F, r, 2), TT (I, q, 2, 1, 2, 2)};
  Out o[4];
  run_model (m, 2, 3, in, o);
  SHAPE_IS (o[0], 4, 2, 9);
  tile_ref (xd, 3, I64 (2, 2, 3), I64 (2, 1, 3), want);
  ASSERT_CLOSE (o[0], want, 1e-7);
  SHAPE_IS (o[1], 6);
  FLOATS_ARE (o[1], 1e-7, 5, -1, 5, -1, 5, -1);
  SHAPE_IS (o[2], 2, 2, 0, 2);
  SHAPE_IS (o[3], 2, 3, 4, 2);
  tile_ref (qd, 4, I64 (2, 1, 2, 2), I64 (1, 3, 2, 1), want);
  gint64 wi[48];
  for (int i = 0; i < 48; i++)
    wi[i] = (gint64) want[i];
  CU_ASSERT_EQUAL (ints_are (&o[3], 48, wi), 0);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

static void
test_tile_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  INTS (m, "r", 1, 2, 3);
  tb_node (m, "Tile", "t", "X,r", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "3 values for rank 2");

  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  INTS (m, "r", 1, -2);
  tb_node (m, "Tile", "t", "X,r", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 2, SEDP_NN_ERROR_SHAPE, "repeats[1] = -2");

  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  IN (m, "r", I, 2);
  tb_node (m, "Tile", "t", "X,r", "Y");
  OUT (m, "Y", F);
  expect_parameter (m, 2, 1);
}

/* ================================================================================================
 * ConstantOfShape and Range
 * ============================================================================================== */

/* The default (float 0), an int64 value, a scalar shape [], an empty dimension, and a shape
 * computed from the batch (Shape of X): X + ConstantOfShape(Shape(X), 1.5). */
static void
test_constant_of_shape (void)
{
  SedpNnModel *m = tb_new (11);
  IN (m, "X", F, -1, 2);
  INTS (m, "s23", 2, 3);
  tb_init_i (m, "s0", 1, I64 (0), NULL);
  INTS (m, "s_0", 4, 0);
  tb_node (m, "ConstantOfShape", "zeros", "s23", "A");
  tb_attr_tensor (tb_node (m, "ConstantOfShape", "sevens", "s23", "B"), "value",
                  tb_tensor ("v", I, 1, I64 (1), I64 (7)));
  tb_attr_tensor (tb_node (m, "ConstantOfShape", "scalar", "s0", "C"), "value",
                  tb_tensor ("v", F, 1, I64 (1), F32 (-2.5f)));
  tb_node (m, "ConstantOfShape", "empty", "s_0", "D");
  tb_node (m, "Shape", "shape", "X", "sx");
  tb_attr_tensor (tb_node (m, "ConstantOfShape", "ones", "sx", "E1"), "value",
                  tb_tensor ("v", F, 1, I64 (1), F32 (1.5f)));
  tb_node (m, "Add", "add", "X,E1", "E");
  for (const char *const *o = (const char *const[]){"A", "B", "C", "D", "E", NULL}; *o; o++)
    OUT (m, *o, **o == 'B' ? I : F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, 4, 5, 6), 3, 2);
  Out o[5];
  run_model (m, 3, 1, &in, o);
  SHAPE_IS (o[0], 2, 3);
  FLOATS_ARE (o[0], 0, 0, 0, 0, 0, 0, 0);
  SHAPE_IS (o[1], 2, 3);
  INTS_ARE (o[1], 7, 7, 7, 7, 7, 7);
  CU_ASSERT (shape_is (&o[2], 0, NULL));
  FLOATS_ARE (o[2], 0, -2.5);
  SHAPE_IS (o[3], 4, 0);
  SHAPE_IS (o[4], 3, 2);
  FLOATS_ARE (o[4], 1e-7, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
  outs_free (o, 5);
  sedp_nn_model_unref (m);
}

static void
test_constant_of_shape_errors (void)
{
  SedpNnModel *m = tb_new (11);
  INTS (m, "s", 2, -3);
  tb_node (m, "ConstantOfShape", "c", "s", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "negative dimension", "[2, -3]");

  m = tb_new (11);
  INTS (m, "s", 2);
  tb_attr_tensor (tb_node (m, "ConstantOfShape", "c", "s", "Y"), "value",
                  tb_tensor ("v", F, 1, I64 (2), F32 (1, 2)));
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "one element");

  m = tb_new (11);
  IN (m, "s", I, 2);
  tb_node (m, "ConstantOfShape", "c", "s", "Y");
  OUT (m, "Y", F);
  expect_parameter (m, 2, 0);

  m = tb_new (11);
  INTS (m, "s", 1 << 20, 1 << 20);
  tb_node (m, "ConstantOfShape", "c", "s", "Y");
  OUT (m, "Y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "more than");
}

/* float, int64 with a negative delta, an empty range, and a Range used as Gather indices. */
static void
test_range (void)
{
  SedpNnModel *m = tb_new (11);
  IN (m, "X", F, -1, 6);
  tb_scalar_f (m, "f0", 0.5f);
  tb_scalar_f (m, "f1", 1.6f);
  tb_scalar_f (m, "fd", 0.25f);
  tb_init_i (m, "i10", 0, NULL, I64 (10));
  tb_init_i (m, "i3", 0, NULL, I64 (3));
  tb_init_i (m, "im3", 0, NULL, I64 (-3));
  tb_init_i (m, "i5", 0, NULL, I64 (5));
  tb_init_i (m, "i1", 0, NULL, I64 (1));
  tb_init_i (m, "i0", 0, NULL, I64 (0));
  tb_init_i (m, "i2", 0, NULL, I64 (2));
  tb_node (m, "Range", "rf", "f0,f1,fd", "A");
  tb_node (m, "Range", "ri", "i10,i3,im3", "B");
  tb_node (m, "Range", "re", "i5,i1,i3", "C");
  tb_node (m, "Range", "idx", "i1,i5,i2", "ix");
  tb_attr_i (tb_node (m, "Gather", "g", "X,ix", "D"), "axis", 1);
  OUT (m, "A", F);
  OUT (m, "B", I);
  OUT (m, "C", I);
  OUT (m, "D", F);
  SedpNnTensor in = TT (F, F32 (0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15), 2, 6);
  Out o[4];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 5); /* ceil((1.6 - 0.5) / 0.25) = 5 */
  FLOATS_ARE (o[0], 1e-7, 0.5, 0.75, 1.0, 1.25, 1.5);
  SHAPE_IS (o[1], 3);
  INTS_ARE (o[1], 10, 7, 4);
  SHAPE_IS (o[2], 0);
  SHAPE_IS (o[3], 2, 2);
  FLOATS_ARE (o[3], 1e-7, 1, 3, 11, 13);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

static void
test_range_errors (void)
{
  SedpNnModel *m = tb_new (11);
  tb_init_i (m, "a", 0, NULL, I64 (0));
  tb_init_i (m, "b", 0, NULL, I64 (4));
  tb_init_i (m, "z", 0, NULL, I64 (0));
  tb_node (m, "Range", "r", "a,b,z", "Y");
  OUT (m, "Y", I);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "zero delta");

  m = tb_new (11);
  tb_init_i (m, "a", 0, NULL, I64 (0));
  tb_scalar_f (m, "b", 4);
  tb_init_i (m, "d", 0, NULL, I64 (1));
  tb_node (m, "Range", "r", "a,b,d", "Y");
  OUT (m, "Y", I);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "limit must be", "int64", "float");

  m = tb_new (11);
  tb_input (m, "a", F, 0, NULL);
  tb_scalar_f (m, "b", 4);
  tb_scalar_f (m, "d", 1);
  tb_node (m, "Range", "r", "a,b,d", "Y");
  OUT (m, "Y", F);
  expect_parameter (m, 1, 0);
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops-norm", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
      {"layernorm random (axes, epsilon, no B, large mean)", test_layernorm_random},
      {"layernorm broadcast Scale/B, Mean/InvStdDev, FLOPs", test_layernorm_broadcast_stats},
      {"layernorm rank 1, axis of 1 and of 0", test_layernorm_edges},
      {"layernorm errors", test_layernorm_errors},
      {"reduce max/min/prod/l2/sumsquare/logsumexp opset 13", test_reduce_ops_opset13},
      {"reduce max/min/prod/l2/sumsquare/logsumexp opset 18", test_reduce_ops_opset18},
      {"reduce empty and unit axes, NaN, noop", test_reduce_ops_edges},
      {"reduce max/min int64", test_reduce_int64},
      {"reduce errors", test_reduce_ops_errors},
      {"split attribute, input, num_outputs", test_split_forms},
      {"split 16 outputs int64", test_split_many_int64},
      {"split errors", test_split_errors},
      {"tile", test_tile},
      {"tile errors", test_tile_errors},
      {"constantofshape", test_constant_of_shape},
      {"constantofshape errors", test_constant_of_shape_errors},
      {"range", test_range},
      {"range errors", test_range_errors},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  return sedp_test_run ();
}
