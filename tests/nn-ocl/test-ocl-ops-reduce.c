/* The reduction, normalisation and lane kernels on an OpenCL device (core/nn/ocl/lower-reduce.c,
 * lower-norm.c, kernels/reduce.cl, softmax-norm.cl; docs/opencl.md §3.2, §8, §9.1) on PoCL: the
 * ten Reduce operators in every layout (contiguous with inner 1 and inner > 1, general, over the
 * batch axis, every axis, none), int64 ReduceMax/Min, empty reductions; Softmax, LogSoftmax,
 * Hardmax; LayerNormalization with broadcast Scale and B and its optional outputs;
 * BatchNormalization; ArgMax/ArgMin; TopK; CumSum — each at batches 1, 7 and 64, with NaN, ±∞,
 * -0 and ties, against the CPU engine on the same inputs. Bounds (§8): reductions within
 * 1e-5 · Σ|termᵢ| (the scale computed here from the inputs), Max/Min/Hardmax/indices/int64
 * exactly, NaN where the CPU has NaN. Every plan must run its steps on the device (no host
 * command). Under valgrind (SEDP_VALGRIND=1) PoCL is slow: batch 1 and a few cases. */
#include "../nn/nn-test.h"
#include "ocl-test.h"

#include "nn/exec/plan-private.h"

static SedpNnDevice *device;
static gboolean valgrind;

/* §8's relative bound for reductions (to the sum of the terms' magnitudes). */
#define RTOL 1e-5

static const gint64 batches[] = {1, 7, 64};
#define N_BATCHES (valgrind ? 1u : (guint) G_N_ELEMENTS (batches))

/* ---- inputs ---- */

typedef enum {
  FILL_UNIFORM,  /* floats in [-1, 1), int64 in [-1000, 1000) */
  FILL_POSITIVE, /* floats in [0.05, 1) */
  FILL_SPECIAL,  /* uniform, with NaN, ±∞ and -0 (int64: the type's extremes) here and there */
  FILL_TIES,     /* a few values only: -1, -0.5, 0, 0.5, 1 (int64: -2 … 2) */
  FILL_WIDE,     /* floats in [-30, 30) */
} Fill;

static float
fill_float (Fill f, GRand *rng)
{
  static const float special[] = {NAN, INFINITY, -INFINITY, -0.0f};
  switch (f) {
  case FILL_POSITIVE: return (float) g_rand_double_range (rng, 0.05, 1.0);
  case FILL_TIES: return (float) g_rand_int_range (rng, -2, 3) * 0.5f;
  case FILL_WIDE: return (float) g_rand_double_range (rng, -30.0, 30.0);
  case FILL_SPECIAL:
    if (g_rand_int_range (rng, 0, 25) == 0)
      return special[g_rand_int_range (rng, 0, G_N_ELEMENTS (special))];
    /* fall through */
  default: return (float) g_rand_double_range (rng, -1.0, 1.0);
  }
}

static gint64
fill_int (Fill f, GRand *rng)
{
  if (f == FILL_TIES)
    return g_rand_int_range (rng, -2, 3);
  if (f == FILL_SPECIAL && g_rand_int_range (rng, 0, 10) == 0)
    return g_rand_boolean (rng) ? G_MAXINT64 : G_MININT64;
  return g_rand_int_range (rng, -1000, 1000);
}

/* ---- running on both engines ---- */

#define MAX_OUT 3

/* One model run on the CPU engine and on the device on the same inputs. */
typedef struct {
  guint n;
  Out cpu[MAX_OUT], dev[MAX_OUT];
  GPtrArray *in; /* SedpNnTensor * (owned) */
} Run;

static void
run_clear (Run *r)
{
  outs_free (r->cpu, r->n);
  outs_free (r->dev, r->n);
  g_clear_pointer (&r->in, g_ptr_array_unref);
}

static const float *
in_f (const Run *r, guint k)
{
  return ((SedpNnTensor *) r->in->pdata[k])->data;
}

static const SedpNnTensor *
in_t (const Run *r, guint k)
{
  return r->in->pdata[k];
}

/* The device plan must have no host command: every step of these families runs a kernel. */
static gboolean
all_on_device (SedpNnPlan *plan)
{
  const OclPlan *o = ((Plan *) plan)->ocl;
  if (o != NULL && o->n_host == 0)
    return TRUE;
  g_autoptr (GString) d = g_string_new (NULL);
  sedp_nn_plan_describe (plan, d);
  fprintf (stderr, "\n  the device plan has host commands:\n%s", d->str);
  return FALSE;
}

static GPtrArray *
make_inputs (SedpNnPlan *plan, Fill f, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  for (guint k = 0; k < sedp_nn_plan_get_n_inputs (plan); k++) {
    const SedpNnTensor *info = sedp_nn_plan_get_input (plan, k);
    SedpNnTensor *t = sedp_nn_tensor_new (info->name, info->dtype, info->rank, info->dims);
    gint64 n = sedp_nn_tensor_numel (t);
    for (gint64 i = 0; i < n; i++)
      if (t->dtype == SEDP_NN_FLOAT)
        ((float *) t->data)[i] = fill_float (f, rng);
      else
        ((gint64 *) t->data)[i] = fill_int (f, rng);
    g_ptr_array_add (all, t);
  }
  g_rand_free (rng);
  return all;
}

/* Runs @m at @batch on both engines; FALSE (reason printed) on an error or a host command. */
static gboolean
run_both (SedpNnModel *m, gint64 batch, Fill f, guint32 seed, Run *r)
{
  g_autoptr (GError) error = NULL;
  memset (r, 0, sizeof *r);
  SedpNnPlan *cpu = sedp_nn_plan_new (m, batch, &error);
  SedpNnPlan *dev = cpu ? sedp_nn_plan_new_on (m, batch, device, &error) : NULL;
  gboolean ok = dev != NULL && all_on_device (dev);
  if (error)
    fprintf (stderr, "\n  plan at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
  if (ok) {
    r->in = make_inputs (cpu, f, seed);
    r->n = MIN (sedp_nn_plan_get_n_outputs (cpu), MAX_OUT);
    g_autofree SedpNnTensor *args = ocl_test_args (r->in);
    ok = run_plan (cpu, r->in->len, args, r->cpu, &error) &&
         run_plan (dev, r->in->len, args, r->dev, &error);
    if (!ok)
      fprintf (stderr, "\n  run at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
  }
  sedp_nn_plan_free (dev);
  sedp_nn_plan_free (cpu);
  return ok;
}

/* Output @k of the device against the CPU's: same dtype and shape; integers equal; floats both
 * NaN, or equal, or within @rtol · scale[i] (NULL: exactly equal). Returns the mismatches. */
static guint
compare (const char *what, const Run *r, guint k, const double *scale, double rtol)
{
  const Out *d = &r->dev[k], *c = &r->cpu[k];
  if (d->dtype != c->dtype || !shape_is (d, c->rank, c->dims)) {
    fprintf (stderr, "\n  %s: output %u's dtype or shape differs from the CPU engine's", what, k);
    return 1;
  }
  guint bad = 0;
  for (gint64 i = 0; i < c->numel; i++) {
    gboolean ok;
    double a = 0, b = 0;
    if (c->dtype == SEDP_NN_FLOAT) {
      a = ((const float *) d->data)[i], b = ((const float *) c->data)[i];
      ok = (isnan (a) && isnan (b)) || a == b ||
           (isfinite (a) && isfinite (b) && scale && fabs (a - b) <= rtol * scale[i] + 1e-30);
    } else {
      a = (double) ((const gint64 *) d->data)[i], b = (double) ((const gint64 *) c->data)[i];
      ok = ((const gint64 *) d->data)[i] == ((const gint64 *) c->data)[i];
    }
    if (!ok && bad++ < 5)
      fprintf (stderr, "\n  %s: output %u [%" G_GINT64_FORMAT "]: device %.9g, cpu %.9g (scale %.3g)",
               what, k, i, a, b, scale ? scale[i] : 0.0);
  }
  return bad;
}

/* ---- reductions ---- */

/* The reduced axes of a layout: @n_axes given (negative from the end), else every axis, or none
 * with @noop. */
static void
reduced_axes (int rank, guint n_axes, const gint64 *axes, gboolean noop, gboolean *red)
{
  for (int i = 0; i < rank; i++)
    red[i] = n_axes == 0 && !noop;
  for (guint k = 0; k < n_axes; k++)
    red[axes[k] < 0 ? axes[k] + rank : axes[k]] = TRUE;
}

/* Per output of reducing X (@rank, @dims; @red) by @op: the scale of §8's bound in the
 * operator's terms — Σ|x| (Sum, L1; Mean: over the count), Σx² (SumSquare), its root (L2), Π|x|
 * (Prod), Σ|x| / |Σx| (LogSum: the error of a logarithm), 1 + max|x| (LogSumExp), 0 (Max, Min:
 * exact). Walks X with its own odometer. */
static double *
reduce_scales (const char *op, const float *x, int rank, const gint64 *dims, const gboolean *red,
               gint64 n_out)
{
  gint64 ost[SEDP_NN_MAX_RANK], st = 1, idx[SEDP_NN_MAX_RANK] = {0}, n_in = numel_of (rank, dims);
  for (int i = rank - 1; i >= 0; i--) {
    ost[i] = red[i] ? 0 : st;
    st *= red[i] ? 1 : dims[i];
  }
  g_autofree double *s1 = g_new0 (double, n_out + 1), *s2 = g_new0 (double, n_out + 1),
                    *sum = g_new0 (double, n_out + 1), *mx = g_new0 (double, n_out + 1),
                    *cnt = g_new0 (double, n_out + 1);
  double *prod = g_new (double, n_out + 1);
  for (gint64 o = 0; o < n_out; o++)
    prod[o] = 1;
  for (gint64 i = 0; i < n_in; i++) {
    gint64 o = 0;
    for (int d = 0; d < rank; d++)
      o += idx[d] * ost[d];
    double v = x[i];
    s1[o] += fabs (v), s2[o] += v * v, sum[o] += v, prod[o] *= fabs (v), cnt[o] += 1;
    mx[o] = MAX (mx[o], fabs (v));
    for (int d = rank - 1; d >= 0 && ++idx[d] == dims[d]; d--)
      idx[d] = 0;
  }
  for (gint64 o = 0; o < n_out; o++) {
    if (!strcmp (op, "ReduceMax") || !strcmp (op, "ReduceMin"))
      prod[o] = 0;
    else if (!strcmp (op, "ReduceSum") || !strcmp (op, "ReduceL1"))
      prod[o] = s1[o];
    else if (!strcmp (op, "ReduceMean"))
      prod[o] = cnt[o] > 0 ? s1[o] / cnt[o] : 0;
    else if (!strcmp (op, "ReduceSumSquare"))
      prod[o] = s2[o];
    else if (!strcmp (op, "ReduceL2"))
      prod[o] = sqrt (s2[o]);
    else if (!strcmp (op, "ReduceLogSum"))
      prod[o] = s1[o] / fabs (sum[o]);
    else if (!strcmp (op, "ReduceLogSumExp"))
      prod[o] = 1 + mx[o];
  }
  return prod;
}

static const char *const reduce_ops[] = {
  "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
  "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
};

/* A layout of the reduced axes; dims[0] is the batch. */
typedef struct {
  const char *name;
  int rank;
  gint64 dims[4];
  guint n_axes;
  gint64 axes[2];
  gboolean keepdims, noop;
} Layout;

static const Layout layouts[] = {
  {"[outer, red, 1]", 4, {-1, 4, 3, 5}, 2, {2, 3}, FALSE, FALSE},
  {"[outer, red, 5]", 4, {-1, 4, 3, 5}, 2, {1, 2}, TRUE, FALSE},
  {"general", 4, {-1, 4, 3, 5}, 2, {1, -1}, FALSE, FALSE},
  {"general with the batch axis", 4, {-1, 4, 3, 5}, 2, {0, 2}, TRUE, FALSE},
  {"the batch axis", 3, {-1, 4, 3}, 1, {0}, FALSE, FALSE},
  {"every axis", 3, {-1, 4, 3}, 0, {0}, FALSE, FALSE},
  {"no axis (noop_with_empty_axes)", 3, {-1, 4, 3}, 0, {0}, TRUE, TRUE},
};

static const Layout empty_layouts[] = {
  {"empty [outer, 0, 3]", 3, {-1, 0, 3}, 1, {1}, TRUE, FALSE},
  {"empty [outer, 0, 1]", 3, {-1, 3, 0}, 1, {2}, FALSE, FALSE},
  {"empty general", 4, {-1, 0, 2, 3}, 2, {1, 3}, FALSE, FALSE},
};

static SedpNnModel *
reduce_model (const char *op, SedpNnDType dt, const Layout *l)
{
  SedpNnModel *m = tb_new (18);
  tb_input (m, "X", dt, l->rank, l->dims);
  if (l->n_axes)
    tb_ints (m, "axes", l->n_axes, l->axes);
  SedpNnNode *n = tb_node (m, op, "red", l->n_axes ? "X,axes" : "X", "Y");
  tb_attr_i (n, "keepdims", l->keepdims);
  if (l->noop)
    tb_attr_i (n, "noop_with_empty_axes", 1);
  tb_output (m, "Y", dt, -1, NULL);
  return m;
}

/* One reduction at every batch: device against CPU within its scale (int64: equal). */
static gboolean
reduce_case (const char *op, SedpNnDType dt, const Layout *l, Fill f, guint32 seed)
{
  g_autoptr (SedpNnModel) m = reduce_model (op, dt, l);
  gboolean all = TRUE;
  for (guint b = 0; b < N_BATCHES; b++) {
    Run r;
    gboolean ok = run_both (m, batches[b], f, seed + b, &r);
    g_autofree double *scale = NULL;
    if (ok && dt == SEDP_NN_FLOAT) {
      gboolean red[SEDP_NN_MAX_RANK];
      reduced_axes (l->rank, l->n_axes, l->axes, l->noop, red);
      const SedpNnTensor *x = in_t (&r, 0);
      scale = reduce_scales (op, x->data, x->rank, x->dims, red, r.cpu[0].numel);
    }
    g_autofree char *what = g_strdup_printf ("%s %s over %s, batch %" G_GINT64_FORMAT, op,
                                             sedp_nn_dtype_name (dt), l->name, batches[b]);
    ok = ok && compare (what, &r, 0, scale, RTOL) == 0;
    if (!ok)
      fprintf (stderr, "\n  failed: %s", what);
    all = all && ok;
    run_clear (&r);
  }
  return all;
}

static void
test_reduce_layouts (void)
{
  guint n = 0;
  for (guint k = 0; k < G_N_ELEMENTS (reduce_ops); k++)
    for (guint l = 0; l < G_N_ELEMENTS (layouts); l++) {
      if (valgrind && (k > 1 || l > 2))
        continue;
      Fill f = strcmp (reduce_ops[k], "ReduceLogSum") == 0 ? FILL_POSITIVE : FILL_UNIFORM;
      CU_ASSERT_TRUE (reduce_case (reduce_ops[k], SEDP_NN_FLOAT, &layouts[l], f, 100 + k));
      n++;
    }
  CU_ASSERT_TRUE (n >= 6);
}

/* NaN, ±∞ and -0 in the terms: Max/Min propagate NaN, sums and LogSumExp as the CPU. */
static void
test_reduce_special (void)
{
  if (valgrind)
    return;
  for (guint k = 0; k < G_N_ELEMENTS (reduce_ops); k++)
    for (guint l = 0; l < 4; l++)
      CU_ASSERT_TRUE (reduce_case (reduce_ops[k], SEDP_NN_FLOAT, &layouts[l], FILL_SPECIAL, 200 + k));
  for (guint l = 0; l < G_N_ELEMENTS (layouts); l++)
    CU_ASSERT_TRUE (reduce_case ("ReduceMax", SEDP_NN_FLOAT, &layouts[l], FILL_TIES, 250 + l));
}

static void
test_reduce_int64 (void)
{
  const Fill fills[] = {FILL_UNIFORM, FILL_SPECIAL, FILL_TIES};
  for (guint l = 0; l < G_N_ELEMENTS (layouts); l++)
    for (guint f = 0; f < G_N_ELEMENTS (fills); f++) {
      if (valgrind && (l > 0 || f > 0))
        continue;
      CU_ASSERT_TRUE (reduce_case ("ReduceMax", SEDP_NN_INT64, &layouts[l], fills[f], 300 + l));
      CU_ASSERT_TRUE (reduce_case ("ReduceMin", SEDP_NN_INT64, &layouts[l], fills[f], 310 + l));
    }
}

/* Over nothing: each operator's identity, on the device as on the CPU (ONNX's values: 0 for
 * sums, NaN for Mean, ∓∞ for Max/Min and the logarithms of 0, 1 for Prod). */
static void
test_reduce_empty (void)
{
  static const double ident[] = {0, NAN, -INFINITY, INFINITY, 1, 0, 0, 0, -INFINITY, -INFINITY};
  for (guint l = 0; l < G_N_ELEMENTS (empty_layouts); l++) {
    for (guint k = 0; k < G_N_ELEMENTS (reduce_ops); k++) {
      if (valgrind && k > 2)
        continue;
      g_autoptr (SedpNnModel) m = reduce_model (reduce_ops[k], SEDP_NN_FLOAT, &empty_layouts[l]);
      Run r;
      gboolean ok = run_both (m, 7, FILL_UNIFORM, 1, &r);
      CU_ASSERT_TRUE_FATAL (ok);
      CU_ASSERT_EQUAL (compare (reduce_ops[k], &r, 0, NULL, 0), 0);
      CU_ASSERT_TRUE (r.dev[0].numel > 0);
      for (gint64 i = 0; i < r.dev[0].numel; i++) {
        float v = ((const float *) r.dev[0].data)[i];
        if (!(isnan (ident[k]) ? isnan (v) : v == ident[k])) {
          fprintf (stderr, "\n  %s over %s: %g, want %g", reduce_ops[k], empty_layouts[l].name, v,
                   ident[k]);
          CU_FAIL ("not the identity");
          break;
        }
      }
      run_clear (&r);
    }
    for (int max = 0; max < 2; max++) {
      g_autoptr (SedpNnModel) m =
        reduce_model (max ? "ReduceMax" : "ReduceMin", SEDP_NN_INT64, &empty_layouts[l]);
      Run r;
      CU_ASSERT_TRUE_FATAL (run_both (m, 7, FILL_UNIFORM, 2, &r));
      CU_ASSERT_EQUAL (compare ("int64 over nothing", &r, 0, NULL, 0), 0);
      for (gint64 i = 0; i < r.dev[0].numel; i++)
        CU_ASSERT_EQUAL (((const gint64 *) r.dev[0].data)[i], max ? G_MININT64 : G_MAXINT64);
      run_clear (&r);
    }
  }
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

/* Per element: |cpu| for Softmax (each output is a ratio of positive terms), |x| + |x − y| (= |x|
 * + |log Σ|) for LogSoftmax, 0 for Hardmax (exact). */
static double *
softmax_scales (const char *op, const Run *r)
{
  const Out *c = &r->cpu[0];
  const float *x = in_f (r, 0), *y = c->data;
  double *s = g_new0 (double, c->numel + 1);
  for (gint64 i = 0; i < c->numel; i++)
    s[i] = !strcmp (op, "Softmax") ? fabs (y[i])
           : !strcmp (op, "LogSoftmax") ? fabs (x[i]) + fabs ((double) x[i] - y[i])
                                        : 0;
  return s;
}

static void
test_softmax (void)
{
  static const struct {
    const char *name;
    gint64 opset;
    int rank;
    gint64 dims[3];
    gint64 axis;
  } shapes[] = {
    {"last axis", 13, 2, {-1, 7}, -1},
    {"last axis, 40 long", 13, 2, {-1, 40}, -1},
    {"inner 6", 13, 3, {-1, 4, 6}, 1},
    {"the batch axis", 13, 3, {-1, 2, 3}, 0},
    {"coerced to 2-D (opset 11)", 11, 3, {-1, 3, 4}, 1},
  };
  static const char *const ops[] = {"Softmax", "LogSoftmax", "Hardmax"};
  const Fill fills[] = {FILL_UNIFORM, FILL_WIDE, FILL_SPECIAL, FILL_TIES};
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
      for (guint f = 0; f < G_N_ELEMENTS (fills); f++) {
        if (valgrind && (s > 0 || f > 0))
          continue;
        g_autoptr (SedpNnModel) m = tb_new (shapes[s].opset);
        tb_input (m, "X", SEDP_NN_FLOAT, shapes[s].rank, shapes[s].dims);
        tb_attr_i (tb_node (m, ops[o], "sm", "X", "Y"), "axis", shapes[s].axis);
        tb_output (m, "Y", SEDP_NN_FLOAT, -1, NULL);
        for (guint b = 0; b < N_BATCHES; b++) {
          Run r;
          gboolean ok = run_both (m, batches[b], fills[f], 400 + 10 * s + f, &r);
          g_autofree double *scale = ok ? softmax_scales (ops[o], &r) : NULL;
          g_autofree char *what = g_strdup_printf ("%s over %s, fill %u, batch %" G_GINT64_FORMAT,
                                                   ops[o], shapes[s].name, f, batches[b]);
          ok = ok && compare (what, &r, 0, scale, RTOL) == 0;
          CU_ASSERT_TRUE (ok);
          run_clear (&r);
        }
      }
}

/* ---- LayerNormalization ---- */

/* Per element of Y: (|x| + |mean|) · inv · |scale| + |bias| (the terms of y, x − mean's
 * included), mean and inv computed here in double; of Mean: Σ|x| / cols; of InvStdDev: |inv|. @sdims/@bdims: Scale's and B's
 * shapes broadcast to the normalised [rows, cols] as numpy does (rank 2 here). */
typedef struct {
  double *y, *mean, *inv;
} NormScales;

static void
layernorm_scales (const Run *r, gint64 cols, const gint64 *sdims, const gint64 *bdims,
                  gint64 rows2, NormScales *ns)
{
  const float *x = in_f (r, 0), *sc = in_f (r, 1), *bi = r->in->len > 2 ? in_f (r, 2) : NULL;
  gint64 rows = r->cpu[0].numel / MAX (cols, 1);
  ns->y = g_new0 (double, r->cpu[0].numel + 1);
  ns->mean = g_new0 (double, rows + 1);
  ns->inv = g_new0 (double, rows + 1);
  for (gint64 i = 0; i < rows; i++) {
    double mean = 0, var = 0, abs = 0;
    for (gint64 j = 0; j < cols; j++)
      mean += x[i * cols + j], abs += fabs (x[i * cols + j]);
    mean /= (double) cols;
    for (gint64 j = 0; j < cols; j++)
      var += (x[i * cols + j] - mean) * (x[i * cols + j] - mean);
    double inv = 1 / sqrt (var / (double) cols + 1e-5);
    ns->mean[i] = abs / (double) cols;
    ns->inv[i] = inv;
    for (gint64 j = 0; j < cols; j++) {
      gint64 a = j / (cols / rows2), c = j % (cols / rows2);
      gint64 sk = (sdims[0] == 1 ? 0 : a) * sdims[1] + (sdims[1] == 1 ? 0 : c);
      gint64 bk = (bdims[0] == 1 ? 0 : a) * bdims[1] + (bdims[1] == 1 ? 0 : c);
      ns->y[i * cols + j] = (fabs (x[i * cols + j]) + fabs (mean)) * inv * fabs (sc[sk]) +
                            (bi ? fabs (bi[bk]) : 0);
    }
  }
}

static void
test_layernorm (void)
{
  /* X [N, 4, 6]: the normalised shape [6] (axis -1) or [4, 6] (axis 1); Scale and B of the given
   * shapes (as [a, b] over [4, 6] or [1, 6]; 0: no B); which outputs. */
  static const struct {
    const char *name;
    gint64 axis;
    gint64 sdims[2], bdims[2];
    const char *outputs;
  } cases[] = {
    {"axis -1, Scale and B [6]", -1, {1, 6}, {1, 6}, "Y"},
    {"axis 1, Scale [4, 6], no B, Mean and InvStdDev", 1, {4, 6}, {0, 0}, "Y,Mean,Inv"},
    {"axis 1, Scale [1, 6] and B [4, 1] expanded, InvStdDev only", 1, {1, 6}, {4, 1}, "Y,,Inv"},
    {"axis 1, Scale [4, 1] expanded, B [4, 6], Mean only", 1, {4, 1}, {4, 6}, "Y,Mean"},
  };
  const Fill fills[] = {FILL_UNIFORM, FILL_WIDE, FILL_TIES, FILL_SPECIAL};
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (guint f = 0; f < G_N_ELEMENTS (fills); f++) {
      if (valgrind && (c > 1 || f > 0))
        continue;
      gboolean axis1 = cases[c].axis == 1, bias = cases[c].bdims[0] > 0;
      g_autoptr (SedpNnModel) m = tb_new (17);
      tb_input (m, "X", SEDP_NN_FLOAT, 3, I64 (-1, 4, 6));
      /* Scale and B are graph inputs (the strided reads of the device kernel see new values per
       * run); their rank is 1 when the normalised shape is [6]. */
      tb_input (m, "S", SEDP_NN_FLOAT, axis1 ? 2 : 1, axis1 ? cases[c].sdims : I64 (6));
      if (bias)
        tb_input (m, "B", SEDP_NN_FLOAT, axis1 ? 2 : 1, axis1 ? cases[c].bdims : I64 (6));
      SedpNnNode *n = tb_node (m, "LayerNormalization", "ln", bias ? "X,S,B" : "X,S",
                               cases[c].outputs);
      tb_attr_i (n, "axis", cases[c].axis);
      g_auto (GStrv) outs = g_strsplit (cases[c].outputs, ",", -1);
      for (guint k = 0; outs[k]; k++)
        if (*outs[k])
          tb_output (m, outs[k], SEDP_NN_FLOAT, -1, NULL);
      gint64 cols = axis1 ? 24 : 6, rows2 = axis1 ? 4 : 1;
      const gint64 *sd = axis1 ? cases[c].sdims : I64 (1, 6), *bd = axis1 ? cases[c].bdims : I64 (1, 6);
      for (guint b = 0; b < N_BATCHES; b++) {
        Run r;
        gboolean ok = run_both (m, batches[b], fills[f], 500 + 10 * c + f, &r);
        g_autofree char *what = g_strdup_printf ("LayerNorm %s, fill %u, batch %" G_GINT64_FORMAT,
                                                 cases[c].name, f, batches[b]);
        NormScales ns = {0};
        if (ok)
          layernorm_scales (&r, cols, sd, bd, rows2, &ns);
        for (guint k = 0; ok && k < r.n; k++) {
          const char *name = k == 0 ? "Y" : outs[1] && *outs[1] && k == 1 ? "Mean" : "Inv";
          double *s = k == 0 ? ns.y : strcmp (name, "Mean") == 0 ? ns.mean : ns.inv;
          ok = compare (what, &r, k, s, RTOL) == 0;
        }
        CU_ASSERT_TRUE (ok);
        g_free (ns.y), g_free (ns.mean), g_free (ns.inv);
        run_clear (&r);
      }
    }
}

/* ---- BatchNormalization ---- */

static void
test_batchnorm (void)
{
  static const struct {
    int rank;
    gint64 dims[4];
  } shapes[] = {{4, {-1, 3, 4, 2}}, {2, {-1, 5}}, {3, {-1, 2, 1}}};
  GRand *rng = g_rand_new_with_seed (600);
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++) {
    if (valgrind && s > 0)
      continue;
    gint64 ch = shapes[s].dims[1];
    g_autofree float *sc = rand_floats (rng, ch, -2, 2), *bi = rand_floats (rng, ch, -1, 1),
                     *mean = rand_floats (rng, ch, -1, 1), *var = rand_floats (rng, ch, 0.1, 2);
    g_autoptr (SedpNnModel) m = tb_new (15);
    tb_input (m, "X", SEDP_NN_FLOAT, shapes[s].rank, shapes[s].dims);
    tb_init_f (m, "scale", 1, &ch, sc);
    tb_init_f (m, "B", 1, &ch, bi);
    tb_init_f (m, "mean", 1, &ch, mean);
    tb_init_f (m, "var", 1, &ch, var);
    tb_attr_f (tb_node (m, "BatchNormalization", "bn", "X,scale,B,mean,var", "Y"), "epsilon", 1e-3f);
    tb_output (m, "Y", SEDP_NN_FLOAT, -1, NULL);
    for (guint b = 0; b < N_BATCHES; b++) {
      Run r;
      gboolean ok = run_both (m, batches[b], b == 2 ? FILL_SPECIAL : FILL_WIDE, 610 + s, &r);
      g_autofree double *scale = NULL;
      if (ok) { /* |x · a| + |b|, a = scale / sqrt (var + eps), b = B − mean · a */
        const float *x = in_f (&r, 0);
        gint64 inner = r.cpu[0].numel / MAX (batches[b] * ch, 1);
        scale = g_new0 (double, r.cpu[0].numel + 1);
        for (gint64 i = 0; i < r.cpu[0].numel; i++) {
          gint64 c = i / inner % ch;
          double a = sc[c] / sqrt ((double) var[c] + 1e-3);
          scale[i] = fabs (x[i] * a) + fabs (bi[c] - mean[c] * a);
        }
      }
      g_autofree char *what = g_strdup_printf ("BatchNorm shape %u, batch %" G_GINT64_FORMAT, s,
                                               batches[b]);
      ok = ok && compare (what, &r, 0, scale, RTOL) == 0;
      CU_ASSERT_TRUE (ok);
      run_clear (&r);
    }
  }
  g_rand_free (rng);
}

/* ---- ArgMax, ArgMin, TopK, CumSum: lanes along an axis ---- */

/* A lane shape: X's dims (dims[0] the batch) and the axis. */
typedef struct {
  const char *name;
  int rank;
  gint64 dims[3];
  gint64 axis;
} Lanes;

static const Lanes lane_shapes[] = {
  {"[N, 9] axis -1", 2, {-1, 9}, -1},
  {"[N, 5, 3] axis 1", 3, {-1, 5, 3}, 1},
  {"[N, 2, 3] axis 0 (the batch)", 3, {-1, 2, 3}, 0},
};

/* Runs @m at every batch with @fills; outputs compared exactly (float outputs with @scale_of). */
static gboolean
lanes_case (SedpNnModel *m, const char *what, const Fill *fills, guint n_fills, guint32 seed,
            double *(*scale_of) (const Run *r, const Lanes *l), const Lanes *l)
{
  gboolean all = TRUE;
  for (guint f = 0; f < n_fills; f++)
    for (guint b = 0; b < N_BATCHES; b++) {
      if (valgrind && f > 0)
        continue;
      Run r;
      gboolean ok = run_both (m, batches[b], fills[f], seed + 10 * f + b, &r);
      g_autofree double *scale = ok && scale_of ? scale_of (&r, l) : NULL;
      for (guint k = 0; ok && k < r.n; k++) {
        g_autofree char *w = g_strdup_printf ("%s, fill %u, batch %" G_GINT64_FORMAT, what, f,
                                              batches[b]);
        ok = compare (w, &r, k, scale, RTOL) == 0;
      }
      all = all && ok;
      run_clear (&r);
    }
  return all;
}

static void
test_arg (void)
{
  const Fill fills[] = {FILL_UNIFORM, FILL_TIES, FILL_SPECIAL};
  for (guint s = 0; s < G_N_ELEMENTS (lane_shapes); s++)
    for (int max = 0; max < 2; max++)
      for (int last = 0; last < 2; last++)
        for (int i64 = 0; i64 < 2; i64++) {
          if (valgrind && (s > 0 || last || i64))
            continue;
          const Lanes *l = &lane_shapes[s];
          SedpNnDType dt = i64 ? SEDP_NN_INT64 : SEDP_NN_FLOAT;
          g_autoptr (SedpNnModel) m = tb_new (13);
          tb_input (m, "X", dt, l->rank, l->dims);
          SedpNnNode *n = tb_node (m, max ? "ArgMax" : "ArgMin", "arg", "X", "Y");
          tb_attr_i (n, "axis", l->axis);
          tb_attr_i (n, "select_last_index", last);
          tb_attr_i (n, "keepdims", (s + last) % 2);
          tb_output (m, "Y", SEDP_NN_INT64, -1, NULL);
          g_autofree char *what = g_strdup_printf ("%s %s last %d %s", max ? "ArgMax" : "ArgMin",
                                                   l->name, last, sedp_nn_dtype_name (dt));
          gboolean ok = lanes_case (m, what, fills, G_N_ELEMENTS (fills), 700, NULL, l);
          if (!ok)
            fprintf (stderr, "\n  failed: %s", what);
          CU_ASSERT_TRUE (ok);
        }
}

static void
test_topk (void)
{
  const Fill fills[] = {FILL_UNIFORM, FILL_TIES, FILL_SPECIAL};
  for (guint s = 0; s < G_N_ELEMENTS (lane_shapes); s++)
    for (int largest = 0; largest < 2; largest++)
      for (int i64 = 0; i64 < 2; i64++) {
        const Lanes *l = &lane_shapes[s];
        /* k: a few, every element, one (the batch axis is 1 long at batch 1) */
        gint64 ks[] = {3, l->axis == 0 ? 1 : l->dims[l->axis < 0 ? l->axis + l->rank : l->axis], 1};
        for (guint kk = 0; kk < G_N_ELEMENTS (ks); kk++) {
          if (valgrind && (s > 0 || i64 || kk > 0))
            continue;
          if (l->axis == 0 && kk != 2)
            continue;
          SedpNnDType dt = i64 ? SEDP_NN_INT64 : SEDP_NN_FLOAT;
          g_autoptr (SedpNnModel) m = tb_new (11);
          tb_input (m, "X", dt, l->rank, l->dims);
          tb_ints (m, "K", 1, &ks[kk]);
          SedpNnNode *n = tb_node (m, "TopK", "topk", "X,K", "V,I");
          tb_attr_i (n, "axis", l->axis);
          tb_attr_i (n, "largest", largest);
          tb_attr_i (n, "sorted", 1);
          tb_output (m, "V", dt, -1, NULL);
          tb_output (m, "I", SEDP_NN_INT64, -1, NULL);
          g_autofree char *what = g_strdup_printf ("TopK %s k %" G_GINT64_FORMAT " largest %d %s",
                                                   l->name, ks[kk], largest,
                                                   sedp_nn_dtype_name (dt));
          gboolean ok = lanes_case (m, what, fills, G_N_ELEMENTS (fills), 800, NULL, l);
          if (!ok)
            fprintf (stderr, "\n  failed: %s", what);
          CU_ASSERT_TRUE (ok);
        }
      }
}

/* CumSum's scale per element: Σ|x| over its lane (bounds every prefix's). */
static double *
cumsum_scales (const Run *r, const Lanes *l)
{
  const SedpNnTensor *x = in_t (r, 0);
  if (x->dtype != SEDP_NN_FLOAT)
    return NULL;
  int axis = (int) (l->axis < 0 ? l->axis + x->rank : l->axis);
  gint64 outer = numel_of (axis, x->dims), len = x->dims[axis];
  gint64 inner = numel_of (x->rank - axis - 1, x->dims + axis + 1);
  double *s = g_new0 (double, outer * len * inner + 1);
  const float *v = x->data;
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++) {
      double t = 0;
      for (gint64 k = 0; k < len; k++)
        t += fabs (v[(o * len + k) * inner + i]);
      for (gint64 k = 0; k < len; k++)
        s[(o * len + k) * inner + i] = t;
    }
  return s;
}

static void
test_cumsum (void)
{
  const Fill fills[] = {FILL_UNIFORM, FILL_SPECIAL};
  for (guint s = 0; s < G_N_ELEMENTS (lane_shapes); s++)
    for (int excl = 0; excl < 2; excl++)
      for (int rev = 0; rev < 2; rev++)
        for (int i64 = 0; i64 < 2; i64++) {
          if (valgrind && (s > 0 || i64 || rev))
            continue;
          const Lanes *l = &lane_shapes[s];
          SedpNnDType dt = i64 ? SEDP_NN_INT64 : SEDP_NN_FLOAT;
          g_autoptr (SedpNnModel) m = tb_new (14);
          tb_input (m, "X", dt, l->rank, l->dims);
          tb_init_i (m, "axis", 0, NULL, &l->axis);
          SedpNnNode *n = tb_node (m, "CumSum", "cs", "X,axis", "Y");
          tb_attr_i (n, "exclusive", excl);
          tb_attr_i (n, "reverse", rev);
          tb_output (m, "Y", dt, -1, NULL);
          g_autofree char *what = g_strdup_printf ("CumSum %s exclusive %d reverse %d %s", l->name,
                                                   excl, rev, sedp_nn_dtype_name (dt));
          /* int64 with the type's extremes wraps the same way on both */
          gboolean ok = lanes_case (m, what, fills, G_N_ELEMENTS (fills), 900, cumsum_scales, l);
          if (!ok)
            fprintf (stderr, "\n  failed: %s", what);
          CU_ASSERT_TRUE (ok);
        }
}

int
main (void)
{
  CU_pSuite s = NULL;
  int status = ocl_test_begin ("nn-ocl-ops-reduce", &valgrind, &device, &s);
  if (status)
    return status;
  CU_add_test (s, "the ten reductions in every layout", test_reduce_layouts);
  CU_add_test (s, "reductions over NaN, ±inf, -0 and ties", test_reduce_special);
  CU_add_test (s, "int64 ReduceMax and ReduceMin", test_reduce_int64);
  CU_add_test (s, "empty reductions give the identities", test_reduce_empty);
  CU_add_test (s, "Softmax, LogSoftmax, Hardmax", test_softmax);
  CU_add_test (s, "LayerNormalization", test_layernorm);
  CU_add_test (s, "BatchNormalization", test_batchnorm);
  CU_add_test (s, "ArgMax and ArgMin", test_arg);
  CU_add_test (s, "TopK", test_topk);
  CU_add_test (s, "CumSum", test_cumsum);
  status = sedp_test_run ();
  sedp_nn_device_unref (device);
  return status;
}
