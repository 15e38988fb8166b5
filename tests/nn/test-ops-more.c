/* sedp nn tests: PRelu and the activations with attributes, Sign/Sin/Cos/Round, IsNaN/IsInf,
 * Mod, LogSoftmax/Hardmax, ReduceL1/ReduceLogSum, Size, CastLike, ArgMax/ArgMin, TopK, CumSum,
 * GatherElements, OneHot, Trilu and Einsum, against references computed here in double
 * precision from the ONNX definitions (NaN and infinities, ties, axes of length 1, negative axes, both opset
 * forms), plus their errors. */
#include "nn-test.h"

#define F SEDP_NN_FLOAT
#define I SEDP_NN_INT64
#define I32 SEDP_NN_INT32
#define B SEDP_NN_BOOL
/* One input tensor over data, as a pointer: IN1 (F, x, 2, 3). */
#define IN1(...) ((SedpNnTensor[]){TT (__VA_ARGS__)})

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

/* A float result against a reference rounded to float: NaN only with NaN, an infinity only with
 * itself, else within @rtol (absolute below 1e-6). Prints the first few mismatches. */
static guint
floats_agree (const Out *o, gint64 n, const double *want, double rtol)
{
  if (o->dtype != F || o->numel != n) {
    fprintf (stderr, "\n  output %s × %" G_GINT64_FORMAT ", want float × %" G_GINT64_FORMAT,
             sedp_nn_dtype_name (o->dtype), o->numel, n);
    return 1;
  }
  guint bad = 0;
  for (gint64 i = 0; i < n; i++) {
    double got = ((const float *) o->data)[i], w = (float) want[i];
    gboolean ok = isnan (w) || isnan (got) ? isnan (w) && isnan (got)
                  : isinf (w) || isinf (got) ? got == w
                                             : fabs (got - w) <= rtol * MAX (fabs (w), 1e-6);
    if (!ok && bad++ < 5)
      fprintf (stderr, "\n  out[%" G_GINT64_FORMAT "]: got %.9g, want %.9g", i, got, w);
  }
  return bad;
}

static guint
bools_are (const Out *o, gint64 n, const gboolean *want)
{
  guint bad = o->dtype != B || o->numel != n;
  for (gint64 i = 0; !bad && i < n; i++)
    if ((((const guint8 *) o->data)[i] != 0) != (want[i] != 0) && bad++ < 5)
      fprintf (stderr, "\n  out[%" G_GINT64_FORMAT "]: got %d", i, ((const guint8 *) o->data)[i]);
  return bad;
}

/* A graph of one node Y = OP (x[, more inputs already added]) over X [N, cols]; returns it. */
static SedpNnNode *
one_node (SedpNnModel *m, const char *op, const char *inputs, gint64 cols)
{
  IN (m, "x", F, -1, cols);
  SedpNnNode *n = tb_node (m, op, "n", inputs, "y");
  OUT (m, "y", F);
  return n;
}

/* ================================================================================================
 * Elementwise activations and functions
 * ============================================================================================== */

/* Values at the edges: signed zeros, halves, infinities, NaN, large magnitudes. */
static const float edge_values[] = {-INFINITY, -100.0f, -2.5f, -1.5f, -1.0f, -0.5f, -1e-3f, -0.0f,
                                    0.0f,      1e-3f,   0.5f,  1.0f,  1.5f,  2.5f,  3.0f,   4.5f,
                                    100.0f,    INFINITY, NAN,  -3.0f};
#define N_EDGE ((gint64) G_N_ELEMENTS (edge_values))

static double
softplus_ref (double x)
{
  return x > 30 ? x : log (1 + exp (x));
}

static double
hard_sigmoid_ref (double x, double a, double b)
{
  return isnan (x) ? NAN : MAX (0.0, MIN (1.0, a * x + b));
}

/* Each operator's definition at one point (alpha, beta as given to the node). */
static double
act_ref (const char *op, double x, double a, double b)
{
  if (!strcmp (op, "Softplus"))
    return softplus_ref (x);
  if (!strcmp (op, "Softsign"))
    return x / (1 + fabs (x));
  if (!strcmp (op, "Elu"))
    return x < 0 ? a * (exp (x) - 1) : x;
  if (!strcmp (op, "Selu"))
    return x <= 0 ? b * (a * exp (x) - a) : b * x;
  if (!strcmp (op, "Celu"))
    return isnan (x) ? NAN : MAX (0.0, x) + MIN (0.0, a * (exp (x / a) - 1));
  if (!strcmp (op, "HardSigmoid"))
    return hard_sigmoid_ref (x, a, b);
  if (!strcmp (op, "HardSwish"))
    return x * hard_sigmoid_ref (x, 1.0 / 6, 0.5);
  if (!strcmp (op, "ThresholdedRelu"))
    return x > a ? x : 0; /* NaN too: the definition's "otherwise", as ONNX Runtime */
  if (!strcmp (op, "Sign"))
    return isnan (x) ? NAN : x > 0 ? 1 : x < 0 ? -1 : 0;
  if (!strcmp (op, "Sin"))
    return sin (x);
  if (!strcmp (op, "Cos"))
    return cos (x);
  /* Round: halves to the even neighbour */
  double f = floor (x), d = x - f;
  return isinf (x) || isnan (x) ? x : d > 0.5 || (d == 0.5 && fmod (f, 2) != 0) ? f + 1 : f;
}

/* One activation over the edge values at batch 2 (each row the values, the second negated);
 * @alpha_name / @beta_name (nullable) set on the node, @a and @b the values the reference uses. */
static void
check_act (gint64 opset, const char *op, const char *alpha_name, double a, const char *beta_name,
           double b)
{
  SedpNnModel *m = tb_new (opset);
  SedpNnNode *n = one_node (m, op, "x", N_EDGE);
  if (alpha_name)
    tb_attr_f (n, alpha_name, (float) a);
  if (beta_name)
    tb_attr_f (n, beta_name, (float) b);
  float x[2 * N_EDGE];
  double want[2 * N_EDGE];
  for (gint64 i = 0; i < 2 * N_EDGE; i++) {
    x[i] = i < N_EDGE ? edge_values[i] : -edge_values[i - N_EDGE];
    want[i] = act_ref (op, x[i], a, b);
  }
  Out y;
  run_model (m, 2, 1, IN1 (F, x, 2, N_EDGE), &y);
  if (floats_agree (&y, 2 * N_EDGE, want, 2e-6))
    fprintf (stderr, "\n  (%s, opset %" G_GINT64_FORMAT ")\n", op, opset);
  CU_ASSERT_EQUAL (floats_agree (&y, 2 * N_EDGE, want, 2e-6), 0);
  SHAPE_IS (y, 2, N_EDGE);
  outs_free (&y, 1);
  sedp_nn_model_unref (m);
}

static void
test_activations (void)
{
  check_act (1, "Softplus", NULL, 0, NULL, 0);
  check_act (18, "Softsign", NULL, 0, NULL, 0);
  check_act (6, "Elu", NULL, 1.0, NULL, 0);
  check_act (13, "Elu", "alpha", 0.5, NULL, 0);
  check_act (6, "Selu", NULL, 1.67326319217681884765625, NULL, 1.05070102214813232421875);
  check_act (13, "Selu", "alpha", 2.0, "gamma", 3.0);
  check_act (12, "Celu", NULL, 1.0, NULL, 0);
  check_act (13, "Celu", "alpha", 2.0, NULL, 0);
  check_act (6, "HardSigmoid", NULL, 0.2, NULL, 0.5);
  check_act (13, "HardSigmoid", "alpha", 0.5, "beta", 0.25);
  check_act (14, "HardSwish", NULL, 0, NULL, 0);
  check_act (10, "ThresholdedRelu", NULL, 1.0, NULL, 0);
  check_act (13, "ThresholdedRelu", "alpha", -0.5, NULL, 0);
  check_act (13, "Sign", NULL, 0, NULL, 0);
  check_act (7, "Sin", NULL, 0, NULL, 0);
  check_act (13, "Cos", NULL, 0, NULL, 0);
  check_act (11, "Round", NULL, 0, NULL, 0);
}

/* Round of every half from -4.5 to 4.5: to the even neighbour (literals). */
static void
test_round_halves (void)
{
  SedpNnModel *m = tb_new (13);
  one_node (m, "Round", "x", 10);
  Out y;
  run_model (m, 1, 1,
             IN1 (F, F32 (-4.5f, -3.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.5f), 1, 10),
             &y);
  FLOATS_ARE (y, 0, -4, -4, -2, -2, 0, 0, 2, 2, 4, 4);
  CU_ASSERT (signbit (((float *) y.data)[4])); /* -0.5 rounds to -0 */
  outs_free (&y, 1);
  sedp_nn_model_unref (m);
}

/* An activation of an int64 input is refused; an opset-5 model with Elu (from 6) too. */
static void
test_activation_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "x", I, -1, 3);
  tb_node (m, "Softplus", "sp", "x", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "'sp' (Softplus)", "int64", "float");
  m = tb_new (13);
  IN (m, "x", I, -1, 3);
  tb_node (m, "Sin", "s", "x", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "'s' (Sin)", "int64");
  m = tb_new (5);
  one_node (m, "Elu", "x", 3);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "opset 5", "Elu (6)");
}

/* ================================================================================================
 * PRelu
 * ============================================================================================== */

/* X [N, 2, 3] with slopes of shapes [2, 1], [3], [1] and [] (unidirectional broadcasting). */
static void
test_prelu (void)
{
  static const struct {
    int rank;
    gint64 dims[2];
  } slopes[] = {{2, {2, 1}}, {1, {3}}, {1, {1}}, {0, {0}}, {2, {2, 3}}};
  const float sv[6] = {0.1f, -2.0f, 0.5f, 3.0f, 0.0f, -0.25f};
  for (guint s = 0; s < G_N_ELEMENTS (slopes); s++) {
    SedpNnModel *m = tb_new (s % 2 ? 9 : 16);
    IN (m, "x", F, -1, 2, 3);
    tb_init_f (m, "slope", slopes[s].rank, slopes[s].dims, sv);
    tb_node (m, "PRelu", "p", "x,slope", "y");
    OUT (m, "y", F);
    gint64 b = 2, xd[3] = {b, 2, 3};
    float x[12];
    double want[12];
    for (int i = 0; i < 12; i++) {
      x[i] = (float) ((i * 7 % 11) - 5) * 0.5f;
      gint64 k = bcast_offset (i, 3, xd, slopes[s].rank, slopes[s].dims);
      want[i] = x[i] < 0 ? (double) x[i] * sv[k] : x[i];
    }
    x[5] = NAN;
    want[5] = NAN;
    Out y;
    run_model (m, b, 1, IN1 (F, x, b, 2, 3), &y);
    CU_ASSERT_EQUAL (floats_agree (&y, 12, want, 1e-7), 0);
    SHAPE_IS (y, b, 2, 3);
    outs_free (&y, 1);
    sedp_nn_model_unref (m);
  }
}

/* A slope that broadcasts with X but to a larger shape, one that does not broadcast, int64. */
static void
test_prelu_errors (void)
{
  SedpNnModel *m = tb_new (16);
  IN (m, "x", F, -1, 3);
  INIT_F (m, "slope", F32 (1, 2, 3, 4, 5, 6), 2, 3);
  tb_node (m, "PRelu", "p", "x,slope", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "'p' (PRelu)", "[2, 3]", "[1, 3]");
  m = tb_new (16);
  IN (m, "x", F, -1, 3);
  INIT_F (m, "slope", F32 (1, 2), 2);
  tb_node (m, "PRelu", "p", "x,slope", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "do not broadcast");
  m = tb_new (16);
  IN (m, "x", I, -1, 3);
  INIT_I (m, "slope", I64 (1), 1);
  tb_node (m, "PRelu", "p", "x,slope", "y");
  OUT (m, "y", I);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "int64");
}

/* ================================================================================================
 * IsNaN, IsInf, Mod
 * ============================================================================================== */

static void
check_is (const char *op, int neg, int pos)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "x", F, -1, N_EDGE);
  SedpNnNode *n = tb_node (m, op, "n", "x", "y");
  if (neg >= 0)
    tb_attr_i (n, "detect_negative", neg);
  if (pos >= 0)
    tb_attr_i (n, "detect_positive", pos);
  OUT (m, "y", B);
  gboolean want[N_EDGE];
  for (gint64 i = 0; i < N_EDGE; i++) {
    float v = edge_values[i];
    gboolean inf = (v == INFINITY && pos != 0) || (v == -INFINITY && neg != 0);
    want[i] = op[2] == 'N' ? isnan (v) : inf;
  }
  Out y;
  run_model (m, 1, 1, IN1 (F, edge_values, 1, N_EDGE), &y);
  CU_ASSERT_EQUAL (bools_are (&y, N_EDGE, want), 0);
  outs_free (&y, 1);
  sedp_nn_model_unref (m);
}

static void
test_isnan_isinf (void)
{
  check_is ("IsNaN", -1, -1);
  check_is ("IsInf", -1, -1);
  check_is ("IsInf", 0, -1);
  check_is ("IsInf", -1, 0);
  check_is ("IsInf", 0, 0);
}

/* Python's remainder: the divisor's sign; 0 for a zero divisor (sedp's choice, as Div's). */
static gint64
py_mod (gint64 a, gint64 b)
{
  if (b == 0)
    return 0;
  gint64 q = (gint64) floor ((double) a / (double) b);
  return a - q * b;
}

/* Mod of int64 (fmod 0 and 1, with a broadcast divisor row) and of float (fmod 1). */
static void
test_mod (void)
{
  const gint64 a[12] = {-7, -7, 7, 7, 0, 5, 13, -13, 4, -4, 9, -9};
  const gint64 d[3] = {3, -3, 0};
  for (int fm = 0; fm < 2; fm++) {
    SedpNnModel *m = tb_new (13);
    IN (m, "a", I, -1, 3);
    INIT_I (m, "d", d, 3);
    tb_attr_i (tb_node (m, "Mod", "m", "a,d", "y"), "fmod", fm);
    OUT (m, "y", I);
    gint64 want[12];
    for (int i = 0; i < 12; i++)
      want[i] = d[i % 3] == 0 ? 0 : fm ? a[i] - (a[i] / d[i % 3]) * d[i % 3]
                                         : py_mod (a[i], d[i % 3]);
    Out y;
    run_model (m, 4, 1, IN1 (I, a, 4, 3), &y);
    CU_ASSERT_EQUAL (ints_are (&y, 12, want), 0);
    outs_free (&y, 1);
    sedp_nn_model_unref (m);
  }
  SedpNnModel *m = tb_new (10);
  IN (m, "a", F, -1, 4);
  INIT_F (m, "d", F32 (3, -3, 0.75f, INFINITY), 4);
  tb_attr_i (tb_node (m, "Mod", "m", "a,d", "y"), "fmod", 1);
  OUT (m, "y", F);
  const float af[8] = {-7.5f, -7.5f, 7.25f, 7.25f, 5, -5, 0, INFINITY};
  const double df[4] = {3, -3, 0.75, INFINITY};
  double want[8];
  for (int i = 0; i < 8; i++)
    want[i] = fmod (af[i], df[i % 4]);
  Out y;
  run_model (m, 2, 1, IN1 (F, af, 2, 4), &y);
  CU_ASSERT_EQUAL (floats_agree (&y, 8, want, 1e-7), 0);
  outs_free (&y, 1);
  sedp_nn_model_unref (m);
}

static void
test_mod_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "a", F, -1, 2);
  INIT_F (m, "d", F32 (3, 2), 2);
  tb_node (m, "Mod", "m", "a,d", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "'m' (Mod)", "fmod = 1");
  m = tb_new (13);
  IN (m, "a", F, -1, 2);
  INIT_I (m, "d", I64 (3, 2), 2);
  tb_attr_i (tb_node (m, "Mod", "m", "a,d", "y"), "fmod", 1);
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "float and int64");
}

/* ================================================================================================
 * LogSoftmax, Hardmax
 * ============================================================================================== */

/* The reference over X [2, 3, 4] seen as [outer, len, inner]. */
static void
lane_ref (const char *op, const float *x, gint64 outer, gint64 len, gint64 inner, double *y)
{
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++) {
      const float *px = x + o * len * inner + i;
      double *py = y + o * len * inner + i;
      double mx = -INFINITY, s = 0;
      gint64 best = 0;
      for (gint64 k = 0; k < len; k++) {
        if (px[k * inner] > mx)
          best = k;
        mx = MAX (mx, px[k * inner]);
      }
      for (gint64 k = 0; k < len; k++)
        s += exp (px[k * inner] - mx);
      for (gint64 k = 0; k < len; k++)
        py[k * inner] = op[0] == 'L' ? px[k * inner] - mx - log (s) : k == best;
    }
}

/* axis 1, -1 and the default at opset 13 (one axis) and opset 11 (the input coerced to 2-D). */
static void
test_logsoftmax_hardmax (void)
{
  const char *ops[] = {"LogSoftmax", "Hardmax"};
  const struct {
    gint64 opset, axis; /* axis 99: the default */
    gint64 outer, len, inner;
  } cases[] = {{13, 1, 2, 3, 4}, {13, -1, 6, 4, 1}, {13, 99, 6, 4, 1}, {13, 0, 1, 2, 12},
               {11, 1, 2, 12, 1}, {11, 99, 2, 12, 1}, {11, 2, 6, 4, 1}, {11, -3, 1, 24, 1}};
  float x[24];
  for (int i = 0; i < 24; i++)
    x[i] = (float) ((i * 5 % 7) - 3) + (i >= 12 ? 1000.0f : 0.0f); /* ties; large numbers */
  for (guint o = 0; o < 2; o++)
    for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
      SedpNnModel *m = tb_new (cases[c].opset);
      IN (m, "x", F, -1, 3, 4);
      SedpNnNode *n = tb_node (m, ops[o], "n", "x", "y");
      if (cases[c].axis != 99)
        tb_attr_i (n, "axis", cases[c].axis);
      OUT (m, "y", F);
      double want[24];
      lane_ref (ops[o], x, cases[c].outer, cases[c].len, cases[c].inner, want);
      Out y;
      run_model (m, 2, 1, IN1 (F, x, 2, 3, 4), &y);
      if (floats_agree (&y, 24, want, 1e-6))
        fprintf (stderr, "\n  (%s case %u)\n", ops[o], c);
      CU_ASSERT_EQUAL (floats_agree (&y, 24, want, 1e-6), 0);
      SHAPE_IS (y, 2, 3, 4);
      outs_free (&y, 1);
      sedp_nn_model_unref (m);
    }
}

/* ================================================================================================
 * ReduceL1, ReduceLogSum
 * ============================================================================================== */

/* Over axis 1 of X [N, 3, 2] (attribute at 13, input at 18), keepdims 0 and 1, and over all. */
static void
test_reduce_l1_log_sum (void)
{
  const char *ops[] = {"ReduceL1", "ReduceLogSum"};
  float x[12];
  for (int i = 0; i < 12; i++)
    x[i] = (float) (i % 5) * 0.75f + 0.5f;
  for (guint o = 0; o < 2; o++)
    for (gint64 opset = 13; opset <= 18; opset += 5)
      for (int keep = 0; keep < 2; keep++) {
        SedpNnModel *m = tb_new (opset);
        IN (m, "x", F, -1, 3, 2);
        SedpNnNode *n;
        if (opset == 18) {
          INTS (m, "axes", -2);
          n = tb_node (m, ops[o], "r", "x,axes", "y");
        } else {
          n = tb_node (m, ops[o], "r", "x", "y");
          ATTR_INTS (n, "axes", -2);
        }
        tb_attr_i (n, "keepdims", keep);
        OUT (m, "y", F);
        double want[4];
        for (int b = 0; b < 2; b++)
          for (int j = 0; j < 2; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
              s += o == 0 ? fabs ((double) x[b * 6 + k * 2 + j]) : x[b * 6 + k * 2 + j];
            want[b * 2 + j] = o == 0 ? s : log (s);
          }
        Out y;
        run_model (m, 2, 1, IN1 (F, x, 2, 3, 2), &y);
        CU_ASSERT_EQUAL (floats_agree (&y, 4, want, 1e-6), 0);
        if (keep) {
          SHAPE_IS (y, 2, 1, 2);
        } else {
          SHAPE_IS (y, 2, 2);
        }
        outs_free (&y, 1);
        sedp_nn_model_unref (m);
      }
  /* ReduceL1 of negatives over every axis; ReduceLogSum of zeros is -inf */
  SedpNnModel *m = tb_new (13);
  IN (m, "x", F, -1, 2);
  tb_node (m, "ReduceL1", "a", "x", "l1");
  tb_attr_i (tb_node (m, "ReduceLogSum", "b", "x", "ls"), "keepdims", 0);
  OUT (m, "l1", F);
  OUT (m, "ls", F);
  Out y[2];
  run_model (m, 2, 1, IN1 (F, F32 (-1, -2, -0.0f, 0), 2, 2), y);
  FLOATS_ARE (y[0], 1e-7, 3);
  SHAPE_IS (y[0], 1, 1);
  CU_ASSERT (y[1].rank == 0 && isinf (((float *) y[1].data)[0]) == 0 &&
             isnan (((float *) y[1].data)[0])); /* log of -3 */
  outs_free (y, 2);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Size, CastLike
 * ============================================================================================== */

/* Size of X [N, 3, 2] is folded (no kernel) and feeds arithmetic; CastLike both ways. */
static void
test_size_castlike (void)
{
  SedpNnModel *m = tb_new (15);
  IN (m, "x", F, -1, 3, 2);
  INIT_I (m, "like_i", I64 (0), 1);
  INIT_F (m, "like_f", F32 (0), 1);
  tb_node (m, "Size", "s", "x", "numel");
  tb_node (m, "CastLike", "ci", "x,like_i", "xi");
  tb_node (m, "CastLike", "cf", "numel,like_f", "sf");
  OUT (m, "numel", I);
  OUT (m, "xi", I);
  OUT (m, "sf", F);
  const float x[12] = {-2.7f, -0.5f, 0, 0.9f, 1.5f, 7, 100.25f, -100.75f, 3, 4, 5, 6};
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autoptr (GString) d = g_string_new (NULL);
  sedp_nn_plan_describe (plan, d);
  CU_ASSERT_PTR_NOT_NULL (strstr (d->str, " 1 kernels")); /* CastLike of x; the rest folded */
  CU_ASSERT_PTR_NULL (strstr (d->str, "numel"));
  Out y[3];
  CU_ASSERT_TRUE (run_plan (plan, 1, IN1 (F, x, 2, 3, 2), y, &error));
  CU_ASSERT_EQUAL (y[0].rank, 0);
  INTS_ARE (y[0], 12);
  gint64 want[12];
  for (int i = 0; i < 12; i++)
    want[i] = (gint64) trunc (x[i]);
  CU_ASSERT_EQUAL (ints_are (&y[1], 12, want), 0);
  FLOATS_ARE (y[2], 0, 12);
  outs_free (y, 3);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * ArgMax, ArgMin
 * ============================================================================================== */

/* numpy's argmax/argmin along one lane (NaN is the extreme, its first occurrence), or the last
 * extreme with @last. */
static gint64
arg_ref (const double *v, gint64 n, gint64 stride, gboolean max, gboolean last)
{
  gint64 best = 0;
  for (gint64 k = 1; k < n; k++) {
    double a = v[k * stride], b = v[best * stride];
    if (isnan (b) && !last)
      break;
    gboolean better = isnan (a) || (max ? a > b : a < b) || (last && a == b);
    if (better && !(last && isnan (b) && !isnan (a)))
      best = k;
  }
  return best;
}

/* X [2, 3, 4] float (ties, a NaN) and int64, every axis (negative too), keepdims, both ends. */
static void
test_argmax_argmin (void)
{
  double xv[24];
  for (int i = 0; i < 24; i++)
    xv[i] = (double) ((i * 5) % 4);
  xv[17] = NAN;
  xv[21] = NAN;
  for (int t = 0; t < 2; t++)
    for (int op = 0; op < 2; op++)
      for (gint64 axis = -3; axis < 3; axis++)
        for (int last = 0; last < 2; last++) {
          SedpNnDType dt = t ? I : F;
          SedpNnModel *m = tb_new (13);
          IN (m, "x", dt, -1, 3, 4);
          SedpNnNode *n = tb_node (m, op ? "ArgMin" : "ArgMax", "a", "x", "y");
          tb_attr_i (n, "axis", axis);
          tb_attr_i (n, "keepdims", axis % 2 == 0);
          tb_attr_i (n, "select_last_index", last);
          OUT (m, "y", I);
          float xf[24];
          gint64 xi[24];
          double xr[24];
          for (int i = 0; i < 24; i++) {
            xr[i] = t && isnan (xv[i]) ? 9 : xv[i];
            xf[i] = (float) xr[i];
            xi[i] = t ? (gint64) xr[i] : 0; /* read only for int64 (t); xr may be NaN else */
          }
          gint64 dims[3] = {2, 3, 4}, a = axis < 0 ? axis + 3 : axis;
          gint64 outer = a == 0 ? 1 : a == 1 ? 2 : 6, len = dims[a], inner = 24 / outer / len;
          gint64 want[12];
          for (gint64 o = 0; o < outer; o++)
            for (gint64 i = 0; i < inner; i++)
              want[o * inner + i] = arg_ref (xr + o * len * inner + i, len, inner, !op, last);
          Out y;
          run_model (m, 2, 1, t ? IN1 (I, xi, 2, 3, 4) : IN1 (F, xf, 2, 3, 4), &y);
          CU_ASSERT_EQUAL (ints_are (&y, (guint) (24 / len), want), 0);
          CU_ASSERT_EQUAL (y.rank, axis % 2 == 0 ? 3 : 2);
          outs_free (&y, 1);
          sedp_nn_model_unref (m);
        }
}

/* A lane of length 1: every index 0; the default axis (0) at opset 11. */
static void
test_argmax_edges (void)
{
  SedpNnModel *m = tb_new (11);
  IN (m, "x", F, -1, 1);
  tb_attr_i (tb_node (m, "ArgMax", "a", "x", "y"), "axis", 1);
  tb_attr_i (tb_node (m, "ArgMin", "b", "x", "z"), "keepdims", 0);
  OUT (m, "y", I);
  OUT (m, "z", I);
  Out y[2];
  run_model (m, 3, 1, IN1 (F, F32 (5, -1, 2), 3, 1), y);
  INTS_ARE (y[0], 0, 0, 0);
  SHAPE_IS (y[0], 3, 1);
  INTS_ARE (y[1], 1);
  SHAPE_IS (y[1], 1);
  outs_free (y, 2);
  sedp_nn_model_unref (m);
}

static void
test_argmax_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "x", F, -1, 3);
  tb_attr_i (tb_node (m, "ArgMax", "a", "x", "y"), "axis", 2);
  OUT (m, "y", I);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "'a' (ArgMax)", "axis 2", "rank 2");
  m = tb_new (13);
  IN (m, "x", SEDP_NN_BOOL, -1, 3);
  tb_node (m, "ArgMin", "a", "x", "y");
  OUT (m, "y", I);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "bool", "float or int64");
  m = tb_new (13);
  IN (m, "x", F, -1, 3);
  gint64 d[2] = {2, 0};
  tb_init (m, "e", F, 2, d, NULL);
  tb_attr_i (tb_node (m, "ArgMax", "a", "e", "y"), "axis", 1);
  tb_node (m, "Identity", "i", "x", "z");
  OUT (m, "y", I);
  OUT (m, "z", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "axis 1 has length 0");
}

/* ================================================================================================
 * TopK
 * ============================================================================================== */

/* The reference: the lane's indices sorted by value (largest or smallest first; NaN last), ties
 * by index; the first k. */
static void
topk_ref (const double *v, gint64 n, gint64 stride, gint64 k, gboolean largest, gint64 *idx)
{
  gint64 order[16];
  for (gint64 i = 0; i < n; i++)
    order[i] = i;
  for (gint64 i = 1; i < n; i++) /* insertion sort: stable */
    for (gint64 j = i; j > 0; j--) {
      double a = v[order[j - 1] * stride], b = v[order[j] * stride];
      gboolean swap = isnan (b) ? FALSE : isnan (a) ? TRUE : largest ? b > a : b < a;
      if (!swap)
        break;
      gint64 t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  memcpy (idx, order, (gsize) k * sizeof (gint64));
}

/* X [N, 6] (ties, NaN) float and int64: along -1 and 0, largest and smallest, K 0..len. */
static void
test_topk (void)
{
  const double xv[12] = {3, 1, 3, NAN, -2, 3, 0, 5, 5, -1, 0, 5};
  for (int t = 0; t < 2; t++)
    for (int axis = -1; axis <= 0; axis++)
      for (int largest = 0; largest < 2; largest++)
        for (gint64 k = 0; k <= (axis ? 6 : 2); k += axis ? 2 : 1) {
          SedpNnDType dt = t ? I : F;
          gint64 opset = !t && largest ? 10 : t ? 18 : 11; /* 10: no `largest` attribute */
          SedpNnModel *m = tb_new (opset);
          IN (m, "x", dt, -1, 6);
          INIT_I (m, "k", I64 (k), 1);
          SedpNnNode *n = tb_node (m, "TopK", "t", "x,k", "v,i");
          if (axis == 0)
            tb_attr_i (n, "axis", -2);
          if (opset > 10)
            tb_attr_i (n, "largest", largest);
          OUT (m, "v", dt);
          OUT (m, "i", I);
          float xf[12];
          gint64 xi[12];
          double xr[12];
          for (int i = 0; i < 12; i++) {
            xr[i] = t && isnan (xv[i]) ? 4 : xv[i];
            xf[i] = (float) xr[i];
            xi[i] = t ? (gint64) xr[i] : 0; /* read only for int64 (t); xr may be NaN else */
          }
          gint64 lanes = axis ? 2 : 6, len = axis ? 6 : 2, stride = axis ? 1 : 6;
          gint64 want_i[12];
          double want_v[12];
          for (gint64 l = 0; l < lanes; l++) {
            gint64 base = axis ? l * 6 : l, idx[6];
            topk_ref (xr + base, len, stride, k, largest, idx);
            for (gint64 j = 0; j < k; j++) {
              gint64 at = axis ? l * k + j : j * 6 + l;
              want_i[at] = idx[j];
              want_v[at] = xr[base + idx[j] * stride];
            }
          }
          Out y[2];
          run_model (m, 2, 1, t ? IN1 (I, xi, 2, 6) : IN1 (F, xf, 2, 6), y);
          CU_ASSERT_EQUAL (ints_are (&y[1], (guint) (lanes * k), want_i), 0);
          if (t) {
            gint64 wv[12];
            for (gint64 j = 0; j < lanes * k; j++)
              wv[j] = (gint64) want_v[j];
            CU_ASSERT_EQUAL (ints_are (&y[0], (guint) (lanes * k), wv), 0);
          } else {
            CU_ASSERT_EQUAL (floats_agree (&y[0], lanes * k, want_v, 0), 0);
          }
          if (axis) {
            SHAPE_IS (y[1], 2, k);
          } else {
            SHAPE_IS (y[1], k, 6);
          }
          outs_free (y, 2);
          sedp_nn_model_unref (m);
        }
}

/* K beyond the axis, K of two elements, K negative; K a graph input: a parameter. */
static void
test_topk_errors (void)
{
  const gint64 ks[3][2] = {{7, 0}, {1, 2}, {-1, 0}};
  const int code[3] = {SEDP_NN_ERROR_SHAPE, SEDP_NN_ERROR_INVALID, SEDP_NN_ERROR_SHAPE};
  const char *needle[3] = {"K = 7 for an axis of length 6", "K must have one element", "K = -1"};
  for (int c = 0; c < 3; c++) {
    SedpNnModel *m = tb_new (11);
    IN (m, "x", F, -1, 6);
    tb_ints (m, "k", c == 1 ? 2 : 1, ks[c]);
    tb_node (m, "TopK", "t", "x,k", "v,i");
    OUT (m, "v", F);
    OUT (m, "i", I);
    EXPECT_PLAN_ERROR (m, 1, code[c], "'t' (TopK)", needle[c]);
  }
  SedpNnModel *m = tb_new (11);
  IN (m, "x", F, -1, 6);
  IN (m, "k", I, 1);
  tb_node (m, "TopK", "t", "x,k", "v,i");
  OUT (m, "v", F);
  OUT (m, "i", I);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 1, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, 1));
  Out y[2];
  SedpNnTensor in[2] = {TT (F, F32 (1, 9, 3, 9, 0, 2), 1, 6), TT (I, I64 (2), 1)};
  CU_ASSERT_TRUE (run_plan (plan, 2, in, y, &error));
  INTS_ARE (y[1], 1, 3);
  FLOATS_ARE (y[0], 0, 9, 9);
  outs_free (y, 2);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * CumSum
 * ============================================================================================== */

/* X [N, 3, 4] float and int64 along each axis (negative, an int32 axis), every mode. */
static void
test_cumsum (void)
{
  for (int t = 0; t < 2; t++)
    for (gint64 axis = -3; axis < 3; axis += 2)
      for (int mode = 0; mode < 4; mode++) {
        gboolean excl = mode & 1, rev = mode >> 1;
        SedpNnDType dt = t ? I : F;
        SedpNnModel *m = tb_new (t ? 14 : 11);
        IN (m, "x", dt, -1, 3, 4);
        gint32 a32 = (gint32) axis;
        if (t)
          tb_init (m, "axis", I32, 0, NULL, &a32);
        else
          tb_init_i (m, "axis", 0, NULL, &axis);
        SedpNnNode *n = tb_node (m, "CumSum", "c", "x,axis", "y");
        tb_attr_i (n, "exclusive", excl);
        tb_attr_i (n, "reverse", rev);
        OUT (m, "y", dt);
        double xr[24], want[24];
        float xf[24];
        gint64 xi[24];
        for (int i = 0; i < 24; i++) {
          xr[i] = (double) ((i * 7) % 10 - 4) * (t ? 1 : 0.25);
          xf[i] = (float) xr[i];
          xi[i] = (gint64) xr[i];
        }
        gint64 dims[3] = {2, 3, 4}, a = axis < 0 ? axis + 3 : axis;
        gint64 outer = a == 0 ? 1 : a == 1 ? 2 : 6, len = dims[a], inner = 24 / outer / len;
        for (gint64 o = 0; o < outer; o++)
          for (gint64 i = 0; i < inner; i++)
            for (gint64 k = 0; k < len; k++) {
              double s = 0;
              for (gint64 j = 0; j < len; j++)
                if ((rev ? j > k : j < k) || (!excl && j == k))
                  s += xr[(o * len + j) * inner + i];
              want[(o * len + k) * inner + i] = s;
            }
        Out y;
        run_model (m, 2, 1, t ? IN1 (I, xi, 2, 3, 4) : IN1 (F, xf, 2, 3, 4), &y);
        if (t) {
          gint64 wi[24];
          for (int i = 0; i < 24; i++)
            wi[i] = (gint64) want[i];
          CU_ASSERT_EQUAL (ints_are (&y, 24, wi), 0);
        } else {
          CU_ASSERT_EQUAL (floats_agree (&y, 24, want, 1e-6), 0);
        }
        SHAPE_IS (y, 2, 3, 4);
        outs_free (&y, 1);
        sedp_nn_model_unref (m);
      }
}

static void
test_cumsum_errors (void)
{
  SedpNnModel *m = tb_new (14);
  IN (m, "x", F, -1, 3);
  INTS (m, "axis", 2);
  tb_node (m, "CumSum", "c", "x,axis", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "'c' (CumSum)", "axis 2", "rank 2");
  m = tb_new (14);
  IN (m, "x", F, -1, 3);
  INIT_F (m, "axis", F32 (1), 1);
  tb_node (m, "CumSum", "c", "x,axis", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "must be int64 or int32");
}

/* ================================================================================================
 * GatherElements
 * ============================================================================================== */

/* data [N, 4] (int64 and float) with indices [N, 3] along 1 and [1, 4] along 0 (negative
 * indices, int32 indices). */
static void
test_gather_elements (void)
{
  const gint64 data[12] = {10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33};
  for (int axis = 0; axis < 2; axis++)
    for (int i32 = 0; i32 < 2; i32++) {
      SedpNnModel *m = tb_new (13);
      IN (m, "d", I, -1, 4);
      const gint64 ix1[6] = {0, 3, -1, -4, 2, 2}, ix0[4] = {2, -1, 0, -3};
      gint32 ix32[6];
      const gint64 *ix = axis ? ix1 : ix0;
      gint64 idims[2] = {axis ? 2 : 1, axis ? 3 : 4};
      for (int i = 0; i < 6; i++)
        ix32[i] = (gint32) ix[i % (axis ? 6 : 4)];
      tb_init (m, "ix", i32 ? I32 : I, 2, idims, i32 ? (gconstpointer) ix32 : ix);
      tb_attr_i (tb_node (m, "GatherElements", "g", "d,ix", "y"), "axis", axis - 2);
      OUT (m, "y", I);
      gint64 want[6];
      for (gint64 r = 0; r < idims[0]; r++)
        for (gint64 c = 0; c < idims[1]; c++) {
          gint64 v = ix[r * idims[1] + c], len = axis ? 4 : 3;
          v = v < 0 ? v + len : v;
          want[r * idims[1] + c] = axis ? data[r * 4 + v] : data[v * 4 + c];
        }
      Out y;
      run_model (m, 3, 1, IN1 (I, data, 3, 4), &y);
      CU_ASSERT_EQUAL (ints_are (&y, (guint) (idims[0] * idims[1]), want), 0);
      CU_ASSERT (shape_is (&y, 2, idims));
      outs_free (&y, 1);
      sedp_nn_model_unref (m);
    }
}

/* An index out of range at run time (the error of Gather); indices of another rank. */
static void
test_gather_elements_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "d", F, -1, 4);
  IN (m, "ix", I, -1, 2);
  tb_attr_i (tb_node (m, "GatherElements", "g", "d,ix", "y"), "axis", 1);
  OUT (m, "y", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 1, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  Out y;
  SedpNnTensor in[2] = {TT (F, F32 (1, 2, 3, 4), 1, 4), TT (I, I64 (1, -5), 1, 2)};
  CU_ASSERT_FALSE (run_plan (plan, 2, in, &y, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "'g' (GatherElements)",
                   "index -5 out of range [-4, 4)");
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
  m = tb_new (13);
  IN (m, "d", F, -1, 4);
  INTS (m, "ix", 0, 1);
  tb_node (m, "GatherElements", "g", "d,ix", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "indices of shape [2]", "data of shape [1, 4]");
}

/* ================================================================================================
 * OneHot
 * ============================================================================================== */

/* indices [N, 3] (int64 and float) into depth 4 (a float), on the axes -1, 0, 1, -3. */
static void
test_onehot (void)
{
  const gint64 ix[6] = {0, 3, -1, -4, 4, -5}; /* the last two outside: a row of off */
  const gint64 axes[4] = {-1, 0, 1, -3};
  for (int a = 0; a < 4; a++)
    for (int fl = 0; fl < 2; fl++) {
      SedpNnModel *m = tb_new (11);
      IN (m, "ix", fl ? F : I, -1, 3);
      tb_scalar_f (m, "depth", 4.0f);
      INIT_I (m, "vals", I64 (-7, 9), 2);
      tb_attr_i (tb_node (m, "OneHot", "o", "ix,depth,vals", "y"), "axis", axes[a]);
      OUT (m, "y", I);
      gint64 ax = axes[a] < 0 ? axes[a] + 3 : axes[a], want[24], d[3];
      for (int i = 0, r = 0; i < 3; i++)
        d[i] = i == ax ? 4 : (r++ ? 3 : 2);
      for (gint64 p = 0; p < 2; p++)
        for (gint64 q = 0; q < 3; q++)
          for (gint64 k = 0; k < 4; k++) {
            gint64 v = ix[p * 3 + q], hot = v < 0 ? v + 4 : v;
            gint64 at[3] = {p, q, q};
            if (ax == 0)
              at[0] = k, at[1] = p, at[2] = q;
            else if (ax == 1)
              at[1] = k, at[2] = q;
            else
              at[2] = k;
            want[(at[0] * d[1] + at[1]) * d[2] + at[2]] = hot == k ? 9 : -7;
          }
      float fx[6];
      for (int i = 0; i < 6; i++)
        fx[i] = (float) ix[i] + (ix[i] < 0 ? -0.5f : 0.5f); /* truncated toward 0 */
      Out y;
      run_model (m, 2, 1, fl ? IN1 (F, fx, 2, 3) : IN1 (I, ix, 2, 3), &y);
      CU_ASSERT_EQUAL (ints_are (&y, 24, want), 0);
      CU_ASSERT (shape_is (&y, 3, d));
      outs_free (&y, 1);
      sedp_nn_model_unref (m);
    }
}

static void
test_onehot_errors (void)
{
  SedpNnModel *m = tb_new (11);
  IN (m, "ix", I, -1, 3);
  INIT_I (m, "depth", I64 (0), 1);
  INIT_F (m, "vals", F32 (0, 1), 2);
  tb_node (m, "OneHot", "o", "ix,depth,vals", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "'o' (OneHot)", "depth must be one number");
  m = tb_new (11);
  IN (m, "ix", I, -1, 3);
  INIT_I (m, "depth", I64 (3), 1);
  INIT_F (m, "vals", F32 (0, 1, 2), 3);
  tb_node (m, "OneHot", "o", "ix,depth,vals", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "values must be [off, on]", "3 elements");
  m = tb_new (11);
  IN (m, "ix", I, -1, 3);
  INIT_I (m, "depth", I64 (3), 1);
  INIT_F (m, "vals", F32 (0, 1), 2);
  tb_attr_i (tb_node (m, "OneHot", "o", "ix,depth,vals", "y"), "axis", 3);
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "axis 3 out of range for an output of rank 3");
  m = tb_new (10);
  IN (m, "ix", I, -1, 3);
  INIT_I (m, "depth", I64 (3), 1);
  INIT_F (m, "vals", F32 (0, 1), 2);
  tb_node (m, "OneHot", "o", "ix,depth,vals", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "OneHot (11)");
}

/* ================================================================================================
 * Trilu
 * ============================================================================================== */

/* X [N, 3, 5] float and [N, 4, 2] int64, upper and lower, k absent, -1, 0, 2, ±100. */
static void
test_trilu (void)
{
  const gint64 ks[6] = {0, -1, 0, 2, 100, -100};
  for (int t = 0; t < 2; t++)
    for (int upper = 0; upper < 2; upper++)
      for (int kc = 0; kc < 6; kc++) {
        gint64 rows = t ? 4 : 3, cols = t ? 2 : 5, n = 2 * rows * cols;
        SedpNnModel *m = tb_new (14);
        IN (m, "x", t ? I : F, -1, rows, cols);
        if (kc)
          tb_init_i (m, "k", 0, NULL, &ks[kc]);
        SedpNnNode *nd = tb_node (m, "Trilu", "t", kc ? "x,k" : "x", "y");
        if (upper == 0 || kc % 2)
          tb_attr_i (nd, "upper", upper);
        OUT (m, "y", t ? I : F);
        gint64 xi[40], want_i[40];
        float xf[40];
        double want_f[40];
        for (gint64 i = 0; i < n; i++) {
          gint64 r = (i / cols) % rows, c = i % cols;
          gboolean keep = upper ? c - r >= ks[kc] : c - r <= ks[kc];
          xi[i] = i + 1;
          xf[i] = (float) i + 0.5f;
          want_i[i] = keep ? xi[i] : 0;
          want_f[i] = keep ? xf[i] : 0;
        }
        Out y;
        run_model (m, 2, 1, t ? IN1 (I, xi, 2, rows, cols) : IN1 (F, xf, 2, rows, cols), &y);
        if (t) {
          CU_ASSERT_EQUAL (ints_are (&y, (guint) n, want_i), 0);
        } else {
          CU_ASSERT_EQUAL (floats_agree (&y, n, want_f, 0), 0);
        }
        outs_free (&y, 1);
        sedp_nn_model_unref (m);
      }
}

static void
test_trilu_errors (void)
{
  SedpNnModel *m = tb_new (14);
  IN (m, "x", F, -1);
  tb_node (m, "Trilu", "t", "x", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "'t' (Trilu)", "rank 1");
  m = tb_new (14);
  IN (m, "x", F, -1, 2);
  INTS (m, "k", 1, 2);
  tb_node (m, "Trilu", "t", "x,k", "y");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_INVALID, "k must have one element, has 2");
}

/* ================================================================================================
 * Empty axes
 * ============================================================================================== */

/* X [N, 0]: CumSum and Trilu give [N, 0], TopK with K = 0 gives [N, 0] twice, ReduceL1 over the
 * empty axis 0 and ReduceLogSum -∞, GatherElements with indices [N, 0] gives [N, 0]. */
static void
test_empty_axes (void)
{
  SedpNnModel *m = tb_new (14);
  IN (m, "x", F, -1, 0);
  INTS (m, "axis", 1);
  INTS (m, "k", 0);
  gint64 d[2] = {1, 0};
  tb_init (m, "ix", I, 2, d, NULL);
  tb_node (m, "CumSum", "c", "x,axis", "cs");
  tb_node (m, "Trilu", "t", "x", "tr");
  tb_node (m, "TopK", "k", "x,k", "tv,ti");
  ATTR_INTS (tb_node (m, "ReduceL1", "l1", "x", "l1"), "axes", 1);
  ATTR_INTS (tb_node (m, "ReduceLogSum", "ls", "x", "ls"), "axes", 1);
  tb_attr_i (tb_node (m, "GatherElements", "g", "x,ix", "ge"), "axis", 1);
  const char *outs[] = {"cs", "tr", "tv", "ti", "l1", "ls", "ge"};
  for (guint i = 0; i < G_N_ELEMENTS (outs); i++)
    OUT (m, outs[i], i == 3 ? I : F);
  Out y[7];
  run_model (m, 1, 1, IN1 (F, F32 (0), 1, 0), y); /* data that is never read */
  for (guint i = 0; i < 7; i++)
    if (i == 4 || i == 5) {
      SHAPE_IS (y[i], 1, 1);
    } else {
      SHAPE_IS (y[i], 1, 0);
    }
  FLOATS_ARE (y[4], 0, 0);
  CU_ASSERT (isinf (((float *) y[5].data)[0]) && ((float *) y[5].data)[0] < 0);
  outs_free (y, 7);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Einsum
 * ============================================================================================== */

/* A naive einsum in double over two operands: @ta, @tb, @to the terms (one letter per axis),
 * @size each letter's extent; sums over the letters missing from the output. */
static void
einsum_ref (const char *ta, const float *a, const char *tb, const float *b, const char *to,
            const gint64 *size, double *y, double *mag)
{
  char letters[8] = {0};
  int n = 0;
  for (const char *t = ta; *t; t++)
    if (!strchr (letters, *t))
      letters[n++] = *t, letters[n] = 0;
  for (const char *t = tb; *t; t++)
    if (!strchr (letters, *t))
      letters[n++] = *t, letters[n] = 0;
  gint64 total = 1, idx[8] = {0};
  for (int i = 0; i < n; i++)
    total *= size[letters[i] - 'a'];
  gint64 out_n = 1;
  for (const char *t = to; *t; t++)
    out_n *= size[*t - 'a'];
  memset (y, 0, sizeof (double) * out_n);
  memset (mag, 0, sizeof (double) * out_n);
  for (gint64 f = 0; f < total; f++) {
    gint64 r = f, at[26] = {0};
    for (int i = n - 1; i >= 0; i--) {
      idx[i] = r % size[letters[i] - 'a'];
      r /= size[letters[i] - 'a'];
      at[letters[i] - 'a'] = idx[i];
    }
    gint64 oa = 0, ob = 0, oy = 0;
    for (const char *t = ta; *t; t++)
      oa = oa * size[*t - 'a'] + at[*t - 'a'];
    for (const char *t = tb; *t; t++)
      ob = ob * size[*t - 'a'] + at[*t - 'a'];
    for (const char *t = to; *t; t++)
      oy = oy * size[*t - 'a'] + at[*t - 'a'];
    y[oy] += (double) a[oa] * b[ob];
    mag[oy] += fabs ((double) a[oa] * b[ob]);
  }
}

/* The five forms, with other letters and spaces, against the naive einsum; B a constant in the
 * bilinear form (packed weights), a graph input elsewhere. */
static void
test_einsum (void)
{
  static const struct {
    const char *eq, *ta, *tb, *to;
  } forms[] = {
      {"bij,bjk->bik", "abc", "acd", "abd"},
      {"zhqd, zhkd -> zhqk", "abcd", "abed", "abce"},
      {"bhqk,bhkd->bhqd", "abcd", "abde", "abce"},
      {"nd,nd->n", "ab", "ab", "a"},
      {"BI,IJ->BJ", "ab", "bc", "ac"},
  };
  const gint64 size[5] = {3, 2, 5, 4, 7}; /* a is the batch */
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  for (guint f = 0; f < G_N_ELEMENTS (forms); f++) {
    gint64 da[4], db[4], dy[4];
    int ra = (int) strlen (forms[f].ta), rb = (int) strlen (forms[f].tb);
    int ry = (int) strlen (forms[f].to);
    for (int i = 0; i < ra; i++)
      da[i] = size[forms[f].ta[i] - 'a'];
    for (int i = 0; i < rb; i++)
      db[i] = size[forms[f].tb[i] - 'a'];
    for (int i = 0; i < ry; i++)
      dy[i] = size[forms[f].to[i] - 'a'];
    gboolean const_b = forms[f].tb[0] != 'a';
    SedpNnModel *m = tb_new (12);
    da[0] = -1;
    tb_input (m, "a", F, ra, da);
    da[0] = 3;
    g_autofree float *a = rand_floats (rng, (gsize) numel_of (ra, da), -1, 1);
    g_autofree float *b = rand_floats (rng, (gsize) numel_of (rb, db), -1, 1);
    if (const_b) {
      tb_init_f (m, "b", rb, db, b);
    } else {
      db[0] = -1;
      tb_input (m, "b", F, rb, db);
      db[0] = 3;
    }
    SedpNnNode *n = tb_node (m, "Einsum", "e", "a,b", "y");
    sedp_nn_node_set_attr_string (n, "equation", forms[f].eq);
    OUT (m, "y", F);
    double want[512], mag[512];
    einsum_ref (forms[f].ta, a, forms[f].tb, b, forms[f].to, size, want, mag);
    SedpNnTensor in[2] = {tt (F, a, ra, da), tt (F, b, rb, db)};
    Out y;
    run_model (m, 3, const_b ? 1 : 2, in, &y);
    ASSERT_CLOSE_SCALED (y, want, mag, 1e-5);
    CU_ASSERT (shape_is (&y, ry, dy));
    outs_free (&y, 1);
    sedp_nn_model_unref (m);
  }
}

/* Equations outside the forms (named in the error), three inputs, ranks and shapes that differ. */
static void
test_einsum_errors (void)
{
  const char *eqs[] = {"bij,bkj->bik", "ij->ji", "...ij,...jk->...ik", "bij,bjk"};
  for (guint k = 0; k < G_N_ELEMENTS (eqs); k++) {
    SedpNnModel *m = tb_new (12);
    IN (m, "a", F, -1, 3, 3);
    IN (m, "b", F, -1, 3, 3);
    sedp_nn_node_set_attr_string (tb_node (m, "Einsum", "e", k == 1 ? "a" : "a,b", "y"), "equation",
                                  eqs[k]);
    OUT (m, "y", F);
    EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "'e' (Einsum)", eqs[k], "bhqd,bhkd->bhqk");
  }
  SedpNnModel *m = tb_new (12);
  IN (m, "a", F, -1, 3);
  IN (m, "b", F, -1, 3);
  IN (m, "c", F, -1, 3);
  sedp_nn_node_set_attr_string (tb_node (m, "Einsum", "e", "a,b,c", "y"), "equation",
                                "bi,bi,bi->b");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_UNSUPPORTED, "with 3 inputs");
  m = tb_new (12);
  IN (m, "a", F, -1, 3, 3);
  IN (m, "b", F, -1, 3);
  sedp_nn_node_set_attr_string (tb_node (m, "Einsum", "e", "a,b", "y"), "equation", "bd,bd->b");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "input 0 has rank 3, its term 2 letters");
  m = tb_new (12);
  IN (m, "a", F, -1, 3);
  IN (m, "b", F, -1, 4);
  sedp_nn_node_set_attr_string (tb_node (m, "Einsum", "e", "a,b", "y"), "equation", "bd,bd->b");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "shapes differ: [1, 3] and [1, 4]");
  m = tb_new (12);
  IN (m, "a", F, -1, 2, 3, 4);
  IN (m, "b", F, -1, 2, 5, 3);
  sedp_nn_node_set_attr_string (tb_node (m, "Einsum", "e", "a,b", "y"), "equation",
                                "bhqd,bhkd->bhqk");
  OUT (m, "y", F);
  EXPECT_PLAN_ERROR (m, 1, SEDP_NN_ERROR_SHAPE, "inner dimensions differ");
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops-more", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
      {"activations with attributes, sign, sin, cos, round at the edges", test_activations},
      {"round halves to even", test_round_halves},
      {"activation errors", test_activation_errors},
      {"prelu slopes broadcast to X", test_prelu},
      {"prelu errors", test_prelu_errors},
      {"isnan, isinf detect_negative/positive", test_isnan_isinf},
      {"mod int64 fmod 0/1, float", test_mod},
      {"mod errors", test_mod_errors},
      {"logsoftmax, hardmax: axes, opset 11 and 13, ties", test_logsoftmax_hardmax},
      {"reduce l1, log sum", test_reduce_l1_log_sum},
      {"size folded, castlike", test_size_castlike},
      {"argmax, argmin: axes, keepdims, last index, NaN, int64", test_argmax_argmin},
      {"argmax, argmin: lane of 1, default axis", test_argmax_edges},
      {"argmax errors", test_argmax_errors},
      {"topk: axes, largest/smallest, ties, NaN, K 0..len, int64", test_topk},
      {"topk errors, K a parameter", test_topk_errors},
      {"cumsum: axes, exclusive, reverse, int64", test_cumsum},
      {"cumsum errors", test_cumsum_errors},
      {"gather elements: axes, negative, int32 indices", test_gather_elements},
      {"gather elements errors", test_gather_elements_errors},
      {"onehot: axes, negative and outside indices, float indices", test_onehot},
      {"onehot errors", test_onehot_errors},
      {"trilu: upper/lower, k", test_trilu},
      {"trilu errors", test_trilu_errors},
      {"length-0 axes: cumsum, trilu, topk, reduce l1/log sum, gather elements", test_empty_axes},
      {"einsum: the five forms, any letters, against a naive einsum", test_einsum},
      {"einsum errors", test_einsum_errors},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  return sedp_test_run ();
}
