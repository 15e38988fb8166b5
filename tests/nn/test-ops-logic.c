/* sedp nn tests: comparisons, logic, Where, the unary math functions, Pow and Sum/Max/Min/Mean
 * against references computed here in double precision from each operator's definition
 * (numpy broadcasting of any number of operands, NaN and infinities, both ends of the opset
 * range), their FLOP counts, folding and errors. */
#include "nn-test.h"

#define F SEDP_NN_FLOAT
#define I SEDP_NN_INT64
#define I32 SEDP_NN_INT32
#define B SEDP_NN_BOOL

/* ================================================================================================
 * Values of any element type, as doubles
 * ============================================================================================== */

static double
load (SedpNnDType t, gconstpointer p, gint64 i)
{
  switch (t) {
  case F: return ((const float *) p)[i];
  case I: return (double) ((const gint64 *) p)[i];
  case I32: return ((const gint32 *) p)[i];
  default: return ((const guint8 *) p)[i];
  }
}

static gpointer
store (SedpNnDType t, gint64 n, const double *v)
{
  gpointer p = g_malloc0 ((gsize) MAX (n, 1) * sedp_nn_dtype_size (t));
  for (gint64 i = 0; i < n; i++)
    switch (t) {
    case F: ((float *) p)[i] = (float) v[i]; break;
    case I: ((gint64 *) p)[i] = (gint64) v[i]; break;
    case I32: ((gint32 *) p)[i] = (gint32) v[i]; break;
    default: ((guint8 *) p)[i] = v[i] != 0; break;
    }
  return p;
}

/* Whether a float result equals a reference rounded to float (so that beyond float's range it
 * is an infinity): NaN only with NaN, an infinity only with itself, else within @rtol of it
 * (relative; absolute below 1e-6). */
static gboolean
float_agrees (double got, double want, double rtol)
{
  want = (float) want;
  if (isnan (want) || isnan (got))
    return isnan (want) && isnan (got);
  if (isinf (want) || isinf (got))
    return got == want;
  return fabs (got - want) <= rtol * MAX (fabs (want), 1e-6);
}

/* Compares an output of type @t with references; prints the first few mismatches. */
static guint
values_are (const Out *o, SedpNnDType t, gint64 n, const double *want, double rtol)
{
  if (o->dtype != t || o->numel != n) {
    fprintf (stderr, "\n  output %s × %" G_GINT64_FORMAT ", want %s × %" G_GINT64_FORMAT,
             sedp_nn_dtype_name (o->dtype), o->numel, sedp_nn_dtype_name (t), n);
    return 1;
  }
  guint bad = 0;
  for (gint64 i = 0; i < n; i++) {
    double got = load (t, o->data, i);
    gboolean ok = t == F ? float_agrees (got, want[i], rtol) : t == B ? got == (want[i] != 0) : got == want[i];
    if (!ok && bad++ < 5)
      fprintf (stderr, "\n  out[%" G_GINT64_FORMAT "]: got %.9g, want %.9g", i, got, want[i]);
  }
  return bad;
}

/* ================================================================================================
 * Broadcasting operators: any number of operands, references per output element
 * ============================================================================================== */

/* An operand: its shape (-1: the batch), type, and whether it is a graph input (else an
 * initializer). */
typedef struct {
  int rank;
  gint64 dims[4];
  SedpNnDType dtype;
  gboolean input;
} Operand;

#define OPND(t, in, ...) ((Operand){NDIMS (__VA_ARGS__), {__VA_ARGS__}, (t), (in)})
#define SCALAR(t) ((Operand){0, {0}, (t), FALSE})

/* The definition of each operator on one element of each operand. */
static double
ref_op (const char *op, guint n, const double *values)
{
  double v[4] = {0, 0, 0, 0}; /* at least the three Where reads */
  memcpy (v, values, MIN (n, 4u) * sizeof (double));
  if (strcmp (op, "Equal") == 0)
    return v[0] == v[1];
  if (strcmp (op, "Less") == 0)
    return v[0] < v[1];
  if (strcmp (op, "Greater") == 0)
    return v[0] > v[1];
  if (strcmp (op, "LessOrEqual") == 0)
    return v[0] <= v[1];
  if (strcmp (op, "GreaterOrEqual") == 0)
    return v[0] >= v[1];
  if (strcmp (op, "And") == 0)
    return v[0] != 0 && v[1] != 0;
  if (strcmp (op, "Or") == 0)
    return v[0] != 0 || v[1] != 0;
  if (strcmp (op, "Xor") == 0)
    return (v[0] != 0) != (v[1] != 0);
  if (strcmp (op, "Where") == 0)
    return v[0] != 0 ? v[1] : v[2];
  if (strcmp (op, "Pow") == 0)
    return pow (v[0], v[1]);
  double r = v[0];
  for (guint k = 1; k < n; k++) {
    if (strcmp (op, "Max") == 0)
      r = isnan (r) || isnan (v[k]) ? NAN : MAX (r, v[k]);
    else if (strcmp (op, "Min") == 0)
      r = isnan (r) || isnan (v[k]) ? NAN : MIN (r, v[k]);
    else /* Sum, Mean */
      r += v[k];
  }
  return strcmp (op, "Mean") == 0 ? r / n : r;
}

static SedpNnDType
result_type (const char *op, guint n, const Operand *ops)
{
  if (strcmp (op, "Where") == 0 && n > 1)
    return ops[1].dtype;
  if (strstr ("Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor", op))
    return B;
  return ops[0].dtype;
}

/* A value for operand @k: halves in [-3, 3] (so that ties and equal values occur), integers in
 * [-3, 3], bools; Pow's base positive unless its exponent is an integer. */
static double
gen_value (GRand *rng, const char *op, guint k, const Operand *ops)
{
  SedpNnDType t = ops[k].dtype;
  if (t == B)
    return g_rand_boolean (rng);
  if (strcmp (op, "Pow") == 0 && k == 0 && ops[1].dtype == F)
    return g_rand_double_range (rng, 0.05, 3);
  if (strcmp (op, "Pow") == 0 && k == 1 && t == F)
    return g_rand_double_range (rng, -3, 3);
  if (t == F)
    return g_rand_int_range (rng, -6, 7) / 2.0;
  return g_rand_int_range (rng, -3, 4);
}

/* Runs @op on the @n operands at batch 1 and 3 (model opset @opset) and compares every output
 * element with ref_op on the operands' elements it reads under numpy broadcasting. */
static void
bcast_case (gint64 opset, const char *op, guint n, const Operand *ops, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  SedpNnModel *m = tb_new (opset);
  double *fixed[4] = {NULL};
  gpointer fixed_data[4] = {NULL};
  GString *names = g_string_new (NULL);
  for (guint k = 0; k < n; k++) {
    g_autofree char *name = g_strdup_printf ("x%u", k);
    g_string_append_printf (names, "%s%s", k ? "," : "", name);
    if (ops[k].input) {
      tb_input (m, name, ops[k].dtype, ops[k].rank, ops[k].dims);
      continue;
    }
    gint64 cnt = numel_of (ops[k].rank, ops[k].dims);
    fixed[k] = g_new (double, MAX (cnt, 1));
    for (gint64 i = 0; i < cnt; i++)
      fixed[k][i] = gen_value (rng, op, k, ops);
    fixed_data[k] = store (ops[k].dtype, cnt, fixed[k]);
    tb_init (m, name, ops[k].dtype, ops[k].rank, ops[k].dims, fixed_data[k]);
  }
  tb_node (m, op, "node", names->str, "Y");
  g_string_free (names, TRUE);
  OUT (m, "Y", result_type (op, n, ops));
  for (gint64 batch = 1; batch <= 3; batch += 2) {
    gint64 d[4][4];
    double *vals[4];
    gpointer data[4];
    SedpNnTensor in[4];
    guint n_in = 0;
    int ro = 0;
    gint64 dout[4];
    for (guint k = 0; k < n; k++) {
      for (int j = 0; j < ops[k].rank; j++)
        d[k][j] = ops[k].dims[j] < 0 ? batch : ops[k].dims[j];
      gint64 cnt = numel_of (ops[k].rank, d[k]);
      vals[k] = fixed[k];
      data[k] = fixed_data[k];
      if (ops[k].input) {
        vals[k] = g_new (double, MAX (cnt, 1));
        for (gint64 i = 0; i < cnt; i++)
          vals[k][i] = gen_value (rng, op, k, ops);
        data[k] = store (ops[k].dtype, cnt, vals[k]);
        in[n_in++] = tt (ops[k].dtype, data[k], ops[k].rank, d[k]);
      }
      gint64 sofar[4];
      memcpy (sofar, dout, sizeof dout);
      g_assert (bcast_shape (ro, sofar, ops[k].rank, d[k], &ro, dout));
    }
    Out o[1];
    run_model (m, batch, n_in, in, o);
    gint64 total = numel_of (ro, dout);
    g_autofree double *want = g_new (double, MAX (total, 1));
    for (gint64 i = 0; i < total; i++) {
      double v[4] = {0, 0, 0, 0};
      for (guint k = 0; k < n && k < 4; k++)
        v[k] = load (ops[k].dtype, data[k], bcast_offset (i, ro, dout, ops[k].rank, d[k]));
      want[i] = ref_op (op, n, v);
    }
    if (!shape_is (&o[0], ro, dout) || values_are (&o[0], result_type (op, n, ops), total, want, RTOL_ELEM))
      fprintf (stderr, "\n  (%s, opset %" G_GINT64_FORMAT ", batch %" G_GINT64_FORMAT ", seed %u)\n",
               op, opset, batch, seed);
    CU_ASSERT (shape_is (&o[0], ro, dout));
    CU_ASSERT_EQUAL (values_are (&o[0], result_type (op, n, ops), total, want, RTOL_ELEM), 0);
    outs_free (o, 1);
    for (guint k = 0; k < n; k++)
      if (ops[k].input) {
        g_free (vals[k]);
        g_free (data[k]);
      }
  }
  for (guint k = 0; k < n; k++) {
    g_free (fixed[k]);
    g_free (fixed_data[k]);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* The binary shapes every two-operand operator is run on (operand types @ta and @tb). The first
 * graph input always leads with the batch. */
static void
binary_shapes (const char *op, SedpNnDType ta, SedpNnDType tb, guint32 seed)
{
  const Operand cases[][2] = {
    {OPND (ta, TRUE, -1, 7), OPND (tb, TRUE, -1, 7)},                 /* same shape */
    {OPND (ta, TRUE, -1, 3, 4), SCALAR (tb)},                         /* rank 0 */
    {OPND (ta, TRUE, -1, 5), OPND (tb, FALSE, 1)},                    /* [1] */
    {OPND (ta, TRUE, -1, 3, 4), OPND (tb, FALSE, 4)},                 /* a row, rank-expanding */
    {OPND (ta, TRUE, -1, 3, 4), OPND (tb, FALSE, 3, 1)},              /* a column */
    {OPND (ta, FALSE, 4), OPND (tb, TRUE, -1, 4)},                    /* the left one broadcast */
    {OPND (ta, TRUE, -1, 1), OPND (tb, FALSE, 1, 6)},                 /* both broadcast */
    {OPND (ta, TRUE, -1, 2, 1, 3), OPND (tb, TRUE, -1, 1, 4, 1)},     /* rank 4, both inputs */
    {OPND (ta, TRUE, -1, 0), OPND (tb, FALSE, 1)},                    /* a length-0 axis */
    {OPND (ta, TRUE, -1), OPND (tb, TRUE, -1)},                       /* rank 1 */
  };
  const gint64 opsets[] = {11, 13, 18};
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    bcast_case (opsets[i % 3], op, 2, cases[i], seed + i);
}

static void
test_compare_broadcast (void)
{
  const char *ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++) {
    binary_shapes (ops[i], F, F, 100 + 40 * i);
    binary_shapes (ops[i], I, I, 110 + 40 * i);
    binary_shapes (ops[i], I32, I32, 120 + 40 * i);
  }
  binary_shapes ("Equal", B, B, 300);
}

/* NaN compares false (and unequal to itself), -0 equals 0, infinities order. */
static void
test_compare_special (void)
{
  const float a[] = {NAN, NAN, 1, -0.0f, INFINITY, -INFINITY, 2, 1e-45f};
  const float b[] = {NAN, 1, NAN, 0, INFINITY, 3, INFINITY, 0};
  const char *ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++) {
    SedpNnModel *m = tb_new (13);
    IN (m, "A", F, -1, 8);
    IN (m, "B", F, -1, 8);
    tb_node (m, ops[k], "cmp", "A,B", "Y");
    OUT (m, "Y", B);
    SedpNnTensor in[2] = {TT (F, a, 1, 8), TT (F, b, 1, 8)};
    Out o[1];
    run_model (m, 1, 2, in, o);
    double want[8];
    for (guint i = 0; i < 8; i++)
      want[i] = ref_op (ops[k], 2, (double[]){a[i], b[i]});
    CU_ASSERT_EQUAL (values_are (&o[0], B, 8, want, 0), 0);
    outs_free (o, 1);
    sedp_nn_model_unref (m);
  }
}

static void
test_logic_broadcast (void)
{
  const char *ops[] = {"And", "Or", "Xor"};
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    binary_shapes (ops[i], B, B, 400 + 20 * i);
}

/* Not, rank 1 to 4; any non-zero byte of a bool is true. */
static void
test_not (void)
{
  const gint64 shapes[][4] = {{5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}};
  for (int r = 1; r <= 4; r++) {
    gint64 dims[4];
    memcpy (dims, shapes[r - 1], sizeof dims);
    gint64 n = numel_of (r, dims);
    SedpNnModel *m = tb_new (r % 2 ? 11 : 18);
    gint64 decl[4];
    memcpy (decl, dims, sizeof decl);
    decl[0] = -1;
    tb_input (m, "X", B, r, decl);
    tb_node (m, "Not", "not", "X", "Y");
    OUT (m, "Y", B);
    g_autofree guint8 *x = g_new (guint8, n);
    g_autofree double *want = g_new (double, n);
    for (gint64 i = 0; i < n; i++) {
      x[i] = (guint8) ((i * 7) % 3); /* 0, 1, 2 */
      want[i] = x[i] == 0;
    }
    SedpNnTensor in = tt (B, x, r, dims);
    Out o[1];
    run_model (m, dims[0], 1, &in, o);
    CU_ASSERT (shape_is (&o[0], r, dims));
    CU_ASSERT_EQUAL (values_are (&o[0], B, n, want, 0), 0);
    outs_free (o, 1);
    sedp_nn_model_unref (m);
  }
}

static void
test_where (void)
{
  const SedpNnDType types[] = {F, I, B, I32};
  for (guint t = 0; t < G_N_ELEMENTS (types); t++) {
    SedpNnDType x = types[t];
    const Operand cases[][3] = {
      {OPND (B, TRUE, -1, 4), OPND (x, TRUE, -1, 4), OPND (x, TRUE, -1, 4)},
      {OPND (B, TRUE, -1, 1, 4), OPND (x, FALSE, 3, 1), SCALAR (x)},        /* three ways */
      {OPND (B, FALSE, 5), OPND (x, TRUE, -1, 1), OPND (x, FALSE, 2, 1, 5)}, /* → [2, N, 5] */
      {OPND (B, TRUE, -1, 2, 1, 3), OPND (x, FALSE, 1), OPND (x, TRUE, -1, 1, 4, 1)},
      {SCALAR (B), OPND (x, TRUE, -1, 3), OPND (x, FALSE, 3)},
      {OPND (B, TRUE, -1, 0), OPND (x, FALSE, 1), SCALAR (x)},             /* length 0 */
    };
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
      bcast_case (i % 2 ? 11 : 16, "Where", 3, cases[i], 500 + 10 * t + i);
  }
}

/* ================================================================================================
 * Unary functions
 * ============================================================================================== */

static const float special_inputs[] = {0,       -0.0f,   1,     -1,    0.5f,    -0.5f, 1.5f,  -1.5f,
                                       2.5f,    -2.5f,   3.7f,  -3.7f, 1e-3f,   -1e-3f, 1e-40f, 20,
                                       -20,     88,      -88,   100,   -100,    1e30f, -1e30f,
                                       INFINITY, -INFINITY, NAN};

static double ref_neg (double x) { return -x; }
static double ref_reciprocal (double x) { return 1 / x; }

/* Runs @op on X [N, n] (rank 1 [n] at opset 11 for one case) and compares with @ref. */
static void
unary_case (const char *op, gint64 opset, guint n, const float *x, double (*ref) (double), double rtol)
{
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, n);
  tb_node (m, op, "u", "X", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, x, 1, n);
  Out o[1];
  run_model (m, 1, 1, &in, o);
  g_autofree double *want = g_new (double, n);
  for (guint i = 0; i < n; i++)
    want[i] = ref (x[i]);
  SHAPE_IS (o[0], 1, n);
  if (values_are (&o[0], F, n, want, rtol))
    fprintf (stderr, "\n  (%s)\n", op);
  CU_ASSERT_EQUAL (values_are (&o[0], F, n, want, rtol), 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_unary_float (void)
{
  const struct {
    const char *op;
    double (*ref) (double);
  } ops[] = {
    {"Exp", exp},     {"Log", log},     {"Sqrt", sqrt},        {"Neg", ref_neg},
    {"Abs", fabs},    {"Erf", erf},     {"Reciprocal", ref_reciprocal},
    {"Floor", floor}, {"Ceil", ceil},
  };
  guint ns = G_N_ELEMENTS (special_inputs);
  GRand *rng = g_rand_new_with_seed (77);
  g_autofree float *wide = rand_floats (rng, 1000, -30, 30);
  g_autofree float *pos = rand_floats (rng, 1000, 1e-6, 1e6);
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++) {
    /* float's exp, log and sqrt are within an ulp or two (the reference is exact) */
    unary_case (ops[k].op, k % 2 ? 11 : 18, ns, special_inputs, ops[k].ref, RTOL_ELEM);
    unary_case (ops[k].op, 13, 1000, wide, ops[k].ref, RTOL_ELEM);
    unary_case (ops[k].op, 13, 1000, pos, ops[k].ref, RTOL_ELEM);
  }
  g_rand_free (rng);
}

/* The float's nearest value to erf (x), for every x: erf must be as good as float allows
 * (GELU is built on it). */
static void
test_erf_rounding (void)
{
  const guint n = 20000;
  GRand *rng = g_rand_new_with_seed (5);
  g_autofree float *x = rand_floats (rng, n, -6, 6);
  for (guint i = 0; i < n / 4; i++)
    x[i] = (float) g_rand_double_range (rng, -1e-3, 1e-3);
  memcpy (x, special_inputs, sizeof special_inputs);
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, n);
  tb_node (m, "Erf", "erf", "X", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, x, 1, n);
  Out o[1];
  run_model (m, 1, 1, &in, o);
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    float got = ((float *) o[0].data)[i], want = (float) erf ((double) x[i]);
    if (!(got == want || (isnan (got) && isnan (want))) || signbit (got) != signbit (want))
      if (bad++ < 5)
        fprintf (stderr, "\n  erf(%.9g): got %.9g, want %.9g", (double) x[i], (double) got, (double) want);
  }
  CU_ASSERT_EQUAL (bad, 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* GELU as PyTorch exports it: x · 0.5 · (1 + erf (x / √2)), against the double formula. */
static void
test_gelu_pattern (void)
{
  const guint n = 64;
  SedpNnModel *m = tb_new (17);
  IN (m, "X", F, -1, n);
  tb_scalar_f (m, "sqrt2", 1.4142135381698608f);
  tb_scalar_f (m, "one", 1);
  tb_scalar_f (m, "half", 0.5f);
  tb_node (m, "Div", "div", "X,sqrt2", "a");
  tb_node (m, "Erf", "erf", "a", "b");
  tb_node (m, "Add", "add", "b,one", "c");
  tb_node (m, "Mul", "mul", "X,c", "d");
  tb_node (m, "Mul", "mul2", "d,half", "Y");
  OUT (m, "Y", F);
  GRand *rng = g_rand_new_with_seed (9);
  g_autofree float *x = rand_floats (rng, 2 * n, -6, 6);
  SedpNnTensor in = TT (F, x, 2, n);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  double want[128];
  for (guint i = 0; i < 2 * n; i++)
    want[i] = 0.5 * x[i] * (1 + erf (x[i] / sqrt (2.0)));
  /* near x = -6 the result is about 1e-16: its error follows the terms, about |x| · 1e-7 */
  guint bad = 0;
  for (guint i = 0; i < 2 * n; i++)
    bad += fabs (((float *) o[0].data)[i] - want[i]) > 1e-6 * MAX (fabs (x[i]), 1e-3);
  CU_ASSERT_EQUAL (bad, 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Neg and Abs of int64, the most negative value wrapping as in numpy. */
static void
test_unary_int64 (void)
{
  const gint64 x[] = {0, 1, -1, 7, -7, G_MAXINT64, G_MININT64, G_MININT64 + 1};
  const char *ops[] = {"Neg", "Abs"};
  for (guint k = 0; k < 2; k++) {
    SedpNnModel *m = tb_new (k ? 11 : 18);
    IN (m, "X", I, -1, 8);
    tb_node (m, ops[k], "u", "X", "Y");
    OUT (m, "Y", I);
    SedpNnTensor in = TT (I, x, 1, 8);
    Out o[1];
    run_model (m, 1, 1, &in, o);
    gint64 want[8];
    for (guint i = 0; i < 8; i++) {
      guint64 neg = 0 - (guint64) x[i];
      want[i] = k == 0 || x[i] < 0 ? (gint64) neg : x[i];
    }
    CU_ASSERT_EQUAL (ints_are (&o[0], 8, want), 0);
    outs_free (o, 1);
    sedp_nn_model_unref (m);
  }
}

/* Compiles @m at @batch, checking that `describe` mentions @needle (a kernel, a count). */
static SedpNnPlan *
plan_describing (SedpNnModel *m, gint64 batch, const char *needle)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  if (error)
    fprintf (stderr, "\n  plan error: %s", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autoptr (GString) desc = g_string_new (NULL);
  sedp_nn_plan_describe (plan, desc);
  if (strstr (desc->str, needle) == NULL)
    fprintf (stderr, "\n  no '%s' in:\n%s", needle, desc->str);
  CU_ASSERT_PTR_NOT_NULL (strstr (desc->str, needle));
  return plan;
}

/* ================================================================================================
 * Pow
 * ============================================================================================== */

static void
test_pow_broadcast (void)
{
  binary_shapes ("Pow", F, F, 600);
  binary_shapes ("Pow", F, I, 620);
  binary_shapes ("Pow", F, I32, 640);
}

/* Pow with a constant exponent @e of type @et: bitwise pow's float value on every input, the
 * kernel @kernel. */
static void
pow_const_case (double e, SedpNnDType et, const char *kernel)
{
  GRand *rng = g_rand_new_with_seed (21);
  const guint n = 4096;
  g_autofree float *x = rand_floats (rng, n, -50, 50);
  for (guint i = 0; i < n / 4; i++) /* all exponents, subnormals and overflow included */
    x[i] = g_rand_int (rng) % 2 ? ldexpf ((float) g_rand_double_range (rng, 1, 2), g_rand_int_range (rng, -149, 128))
                                : -ldexpf ((float) g_rand_double (rng), g_rand_int_range (rng, -149, 128));
  memcpy (x + n / 4, special_inputs, sizeof special_inputs);
  SedpNnModel *m = tb_new (15);
  IN (m, "X", F, -1, n);
  g_autofree gpointer ev = store (et, 1, &e);
  tb_init (m, "e", et, 0, NULL, ev);
  tb_node (m, "Pow", "pow", "X,e", "Y");
  OUT (m, "Y", F);
  SedpNnPlan *plan = plan_describing (m, 1, kernel);
  SedpNnTensor in = TT (F, x, 1, n);
  Out o[1];
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 1, &in, o, &error));
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    float got = ((float *) o[0].data)[i], want = (float) pow ((double) x[i], e);
    gboolean same = isnan (want) ? isnan (got) : memcmp (&got, &want, sizeof got) == 0;
    if (!same && bad++ < 5)
      fprintf (stderr, "\n  pow(%.9g, %g): got %.9g, want %.9g", (double) x[i], e, (double) got,
               (double) want);
  }
  CU_ASSERT_EQUAL (bad, 0);
  outs_free (o, 1);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_pow_constant_exponent (void)
{
  pow_const_case (2, F, "pow2");
  pow_const_case (2, I, "pow2");
  pow_const_case (0.5, F, "pow_half");
  pow_const_case (3, F, " pow ");
  pow_const_case (-1, I, " pow ");
  pow_const_case (0, I32, " pow ");
  pow_const_case (1.5, F, " pow ");
}

/* ================================================================================================
 * Sum, Max, Min, Mean
 * ============================================================================================== */

static void
test_variadic (void)
{
  const char *ops[] = {"Sum", "Max", "Min", "Mean"};
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    for (guint t = 0; t < (i == 1 || i == 2 ? 2u : 1u); t++) {
      SedpNnDType x = t ? I : F;
      guint32 s = 700 + 50 * i + 25 * t;
      const Operand one[] = {OPND (x, TRUE, -1, 3, 2)};
      bcast_case (11, ops[i], 1, one, s);
      binary_shapes (ops[i], x, x, s + 1);
      const Operand three[] = {OPND (x, TRUE, -1, 1, 4), OPND (x, FALSE, 3, 1), SCALAR (x)};
      bcast_case (13, ops[i], 3, three, s + 20);
      const Operand four[] = {OPND (x, TRUE, -1, 1), OPND (x, TRUE, -1, 5), OPND (x, FALSE, 2, 1, 5),
                              OPND (x, FALSE, 5)};
      bcast_case (18, ops[i], 4, four, s + 21);
      const Operand empty[] = {OPND (x, TRUE, -1, 0), OPND (x, FALSE, 1), SCALAR (x)};
      bcast_case (13, ops[i], 3, empty, s + 22);
    }
}

/* Max and Min propagate NaN from either side, as numpy's maximum and minimum. */
static void
test_max_min_nan (void)
{
  const float a[] = {NAN, 1, NAN, -INFINITY, 2};
  const float b[] = {1, NAN, NAN, 3, -0.0f};
  const float c[] = {0, 0, 0, 0, 1};
  for (guint k = 0; k < 2; k++) {
    const char *op = k ? "Min" : "Max";
    SedpNnModel *m = tb_new (13);
    IN (m, "A", F, -1, 5);
    IN (m, "B", F, -1, 5);
    IN (m, "C", F, -1, 5);
    tb_node (m, op, "mm", "A,B,C", "Y");
    OUT (m, "Y", F);
    SedpNnTensor in[3] = {TT (F, a, 1, 5), TT (F, b, 1, 5), TT (F, c, 1, 5)};
    Out o[1];
    run_model (m, 1, 3, in, o);
    double want[5];
    for (guint i = 0; i < 5; i++)
      want[i] = ref_op (op, 3, (double[]){a[i], b[i], c[i]});
    CU_ASSERT_EQUAL (values_are (&o[0], F, 5, want, 0), 0);
    outs_free (o, 1);
    sedp_nn_model_unref (m);
  }
}

/* ================================================================================================
 * Plans: FLOPs, folding, fusion left alone
 * ============================================================================================== */

/* One FLOP per output element: Less [N, 3] < [3], Where, Sum of three, Exp, Not. */
static void
test_flops (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  IN (m, "C", B, -1, 1);
  INIT_F (m, "r", F32 (1, 2, 3), 3);
  tb_node (m, "Less", "lt", "X,r", "l");           /* 3N */
  tb_node (m, "Where", "w", "C,X,r", "w");         /* 3N */
  tb_node (m, "Sum", "s", "X,r,w", "s");           /* 3N */
  tb_node (m, "Exp", "e", "s", "e");               /* 3N */
  tb_node (m, "Not", "n", "l", "n");               /* 3N */
  OUT (m, "n", B);
  OUT (m, "e", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 10, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_DOUBLE_EQUAL (sedp_nn_plan_get_flops (plan), 5 * 30.0, 1e-9);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* Operators on constants only are computed at plan time, with the same results. */
static void
test_folded (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  INIT_F (m, "a", F32 (1, -2, 4), 3);
  INIT_F (m, "b", F32 (2, -2, 1), 1, 3);
  tb_node (m, "GreaterOrEqual", "ge", "a,b", "ge");
  tb_node (m, "Where", "w", "ge,a,b", "w");        /* max (a, b) = [2, -2, 4] */
  tb_node (m, "Max", "mx", "a,b", "mx");
  tb_node (m, "Sub", "d", "w,mx", "zero");
  tb_node (m, "Pow", "p", "a,b", "p");             /* [1, 0.25, 4] */
  tb_node (m, "Sqrt", "sq", "p", "sq");            /* [1, 0.5, 2] */
  tb_node (m, "Add", "y0", "X,zero", "y0");
  tb_node (m, "Mul", "y", "y0,sq", "Y");
  OUT (m, "Y", F);
  sedp_nn_plan_free (plan_describing (m, 2, "2 kernels"));
  SedpNnTensor in = TT (F, F32 (1, 1, 1, 2, 2, 2), 2, 3);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  FLOATS_ARE (o[0], RTOL_ELEM, 1, 0.5, 2, 2, 1, 4);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* Gemm → Relu still fuses; Gemm → Exp (not an activation of Gemm) runs on its own. */
static void
test_fusion_kept (void)
{
  for (guint k = 0; k < 2; k++) {
    SedpNnModel *m = tb_new (13);
    IN (m, "X", F, -1, 2);
    INIT_F (m, "W", F32 (1, -1, 2, 0.5f), 2, 2);
    tb_node (m, "Gemm", "g", "X,W", "h");
    tb_node (m, k ? "Exp" : "Relu", "act", "h", "Y");
    OUT (m, "Y", F);
    sedp_nn_plan_free (plan_describing (m, 1, k ? "Exp" : "gemm+relu"));
    SedpNnTensor in = TT (F, F32 (1, 2), 1, 2);
    Out o[1];
    run_model (m, 1, 1, &in, o);
    /* h = [1·1 + 2·2, 1·-1 + 2·0.5] = [5, 0] */
    if (k) {
      FLOATS_ARE (o[0], RTOL_ELEM, exp (5.0), 1);
    } else {
      FLOATS_ARE (o[0], RTOL_ELEM, 5, 0);
    }
    outs_free (o, 1);
    sedp_nn_model_unref (m);
  }
}

/* ================================================================================================
 * Errors
 * ============================================================================================== */

/* A model of one @op node over inputs of the given types and shapes [N, width]. */
static SedpNnModel *
typed_model (const char *op, guint n, const SedpNnDType *types, const gint64 *widths)
{
  SedpNnModel *m = tb_new (13);
  GString *names = g_string_new (NULL);
  for (guint k = 0; k < n; k++) {
    g_autofree char *name = g_strdup_printf ("x%u", k);
    tb_input (m, name, types[k], 2, I64 (-1, widths[k]));
    g_string_append_printf (names, "%s%s", k ? "," : "", name);
  }
  tb_node (m, op, "bad", names->str, "Y");
  g_string_free (names, TRUE);
  OUT (m, "Y", F);
  return m;
}

#define TYPES(...) ((const SedpNnDType[]){__VA_ARGS__})
#define W(...) ((const gint64[]){__VA_ARGS__})

static void
test_errors (void)
{
  const int U = SEDP_NN_ERROR_UNSUPPORTED, S = SEDP_NN_ERROR_SHAPE;
  /* types */
  expect_plan_error (typed_model ("Less", 2, TYPES (F, I), W (3, 3)), 2, U, "float and int64");
  expect_plan_error (typed_model ("Greater", 2, TYPES (B, B), W (3, 3)), 2, U, "bool and bool");
  expect_plan_error (typed_model ("Equal", 2, TYPES (SEDP_NN_DOUBLE, SEDP_NN_DOUBLE), W (3, 3)), 2, U, "double");
  expect_plan_error (typed_model ("And", 2, TYPES (B, F), W (3, 3)), 2, U, "input 1 is float");
  expect_plan_error (typed_model ("Not", 1, TYPES (F), W (3)), 2, U, "takes bool");
  expect_plan_error (typed_model ("Where", 3, TYPES (F, F, F), W (3, 3, 3)), 2, U, "condition of type float");
  expect_plan_error (typed_model ("Where", 3, TYPES (B, F, I), W (3, 3, 3)), 2, U, "X float, Y int64");
  expect_plan_error (typed_model ("Exp", 1, TYPES (I), W (3)), 2, U, "int64");
  expect_plan_error (typed_model ("Neg", 1, TYPES (I32), W (3)), 2, U, "takes float or int64");
  expect_plan_error (typed_model ("Pow", 2, TYPES (I, I), W (3, 3)), 2, U, "base of type int64");
  expect_plan_error (typed_model ("Pow", 2, TYPES (F, B), W (3, 3)), 2, U, "exponent of type bool");
  expect_plan_error (typed_model ("Sum", 2, TYPES (I, I), W (3, 3)), 2, U, "takes float");
  expect_plan_error (typed_model ("Max", 3, TYPES (F, F, I), W (3, 3, 3)), 2, U, "input 2 is int64");
  expect_plan_error (typed_model ("Min", 1, TYPES (I32), W (3)), 2, U, "int32");
  /* shapes: every shape named */
  expect_plan_error (typed_model ("Equal", 2, TYPES (F, F), W (3, 4)), 2, S, "[2, 3] and [2, 4]");
  expect_plan_error (typed_model ("Xor", 2, TYPES (B, B), W (2, 5)), 2, S, "do not broadcast");
  expect_plan_error (typed_model ("Where", 3, TYPES (B, F, F), W (1, 3, 4)), 2, S, "[2, 1], [2, 3] and [2, 4]");
  expect_plan_error (typed_model ("Pow", 2, TYPES (F, F), W (3, 2)), 2, S, "do not broadcast");
  expect_plan_error (typed_model ("Sum", 4, TYPES (F, F, F, F), W (1, 3, 1, 2)), 2, S, "[2, 2] do not broadcast");
  expect_plan_error (typed_model ("Mean", 3, TYPES (F, F, F), W (4, 1, 5)), 2, S, "bad");
  /* arity */
  expect_plan_error (typed_model ("Where", 2, TYPES (B, F), W (3, 3)), 2, SEDP_NN_ERROR_INVALID, "3 to 3 inputs");
  expect_plan_error (typed_model ("Less", 3, TYPES (F, F, F), W (3, 3, 3)), 2, SEDP_NN_ERROR_INVALID, "2 to 2");
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops-logic", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
      {"comparisons, broadcasting, float int64 int32 bool", test_compare_broadcast},
      {"comparisons with NaN, -0 and infinities", test_compare_special},
      {"And Or Xor, broadcasting", test_logic_broadcast},
      {"Not, rank 1 to 4", test_not},
      {"Where, three-way broadcasting", test_where},
      {"unary float functions", test_unary_float},
      {"Erf correctly rounded", test_erf_rounding},
      {"GELU from Erf", test_gelu_pattern},
      {"Neg and Abs of int64", test_unary_int64},
      {"Pow, broadcasting, float int64 int32 exponents", test_pow_broadcast},
      {"Pow with a constant exponent equals pow", test_pow_constant_exponent},
      {"Sum Max Min Mean, 1 to 4 inputs", test_variadic},
      {"Max Min propagate NaN", test_max_min_nan},
      {"FLOPs", test_flops},
      {"folded at plan time", test_folded},
      {"Gemm fusion unchanged", test_fusion_kept},
      {"errors", test_errors},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  return sedp_test_run ();
}
