/* sedp nn tests — building tiny models in memory (with model.h's builder functions), running
 * them, comparing with references. Nothing here calls engine code to compute an expected value:
 * references are literals or naive loops in double precision. */
#pragma once

#include "test-common.h"

#include "nn/plan.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- building ---- */

/* dims: -1 marks the symbolic batch dimension "N". */
static inline const char *const *
tb_dim_params (int rank, const gint64 *dims)
{
  static const char *const names[SEDP_NN_MAX_RANK] = {"N", "N", "N", "N", "N", "N", "N", "N"};
  return rank > 0 && dims ? names : NULL;
}

static inline SedpNnModel *
tb_new (gint64 opset)
{
  SedpNnModel *m = sedp_nn_model_new (opset, "sedp-tests");
  g_assert (m != NULL);
  return m;
}

static inline void
tb_input (SedpNnModel *m, const char *name, SedpNnDType dtype, int rank, const gint64 *dims)
{
  g_assert (sedp_nn_model_add_input (m, name, dtype, rank, dims, tb_dim_params (rank, dims)));
}

/* rank -1: shape left unknown (inferred by the engine). */
static inline void
tb_output (SedpNnModel *m, const char *name, SedpNnDType dtype, int rank, const gint64 *dims)
{
  g_assert (sedp_nn_model_add_output (m, name, dtype, rank, dims, tb_dim_params (rank, dims)));
}

static inline SedpNnTensor *
tb_tensor (const char *name, SedpNnDType dtype, int rank, const gint64 *dims, gconstpointer data)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, dtype, rank, dims);
  g_assert (t != NULL);
  if (data)
    memcpy (t->data, data, (gsize) sedp_nn_tensor_numel (t) * sedp_nn_dtype_size (dtype));
  return t;
}

static inline void
tb_init (SedpNnModel *m, const char *name, SedpNnDType dtype, int rank, const gint64 *dims,
         gconstpointer data)
{
  sedp_nn_model_add_initializer (m, tb_tensor (name, dtype, rank, dims, data));
}

static inline void
tb_init_f (SedpNnModel *m, const char *name, int rank, const gint64 *dims, const float *data)
{
  tb_init (m, name, SEDP_NN_FLOAT, rank, dims, data);
}

static inline void
tb_init_i (SedpNnModel *m, const char *name, int rank, const gint64 *dims, const gint64 *data)
{
  tb_init (m, name, SEDP_NN_INT64, rank, dims, data);
}

/* A 1-D int64 initializer. */
static inline void
tb_ints (SedpNnModel *m, const char *name, guint n, const gint64 *values)
{
  gint64 d = n;
  tb_init_i (m, name, 1, &d, values);
}

/* A rank-0 float initializer. */
static inline void
tb_scalar_f (SedpNnModel *m, const char *name, float v)
{
  tb_init_f (m, name, 0, NULL, &v);
}

/* "a,,c" → {"a", "", "c", NULL}; "" → {NULL}. */
static inline char **
tb_split (const char *list)
{
  if (list == NULL || *list == '\0')
    return g_new0 (char *, 1);
  return g_strsplit (list, ",", -1);
}

/* @inputs, @outputs: comma-separated names; an empty name ("a,,c") is an omitted optional
 * input. The node pointer is valid until the next tb_node() on @m. */
static inline SedpNnNode *
tb_node (SedpNnModel *m, const char *op, const char *name, const char *inputs, const char *outputs)
{
  g_auto (GStrv) in = tb_split (inputs);
  g_auto (GStrv) out = tb_split (outputs);
  SedpNnNode *n = sedp_nn_model_add_node (m, op, name, (const char *const *) in,
                                          (const char *const *) out);
  g_assert (n != NULL);
  return n;
}

static inline void
tb_attr_i (SedpNnNode *n, const char *name, gint64 v)
{
  sedp_nn_node_set_attr_int (n, name, v);
}

static inline void
tb_attr_f (SedpNnNode *n, const char *name, float v)
{
  sedp_nn_node_set_attr_float (n, name, v);
}

static inline void
tb_attr_ints (SedpNnNode *n, const char *name, guint count, const gint64 *v)
{
  sedp_nn_node_set_attr_ints (n, name, count, v);
}

static inline void
tb_attr_floats (SedpNnNode *n, const char *name, guint count, const float *v)
{
  sedp_nn_node_set_attr_floats (n, name, count, v);
}

/* Takes ownership of @t. */
static inline void
tb_attr_tensor (SedpNnNode *n, const char *name, SedpNnTensor *t)
{
  sedp_nn_node_set_attr_tensor (n, name, t);
}

/* ---- tensors ---- */

/* A tensor whose data the caller owns (or borrows): not for sedp_nn_tensor_free. */
static inline SedpNnTensor
tt (SedpNnDType dtype, gconstpointer data, int rank, const gint64 *dims)
{
  SedpNnTensor t = {.dtype = dtype, .rank = rank, .data = (gpointer) data};
  for (int k = 0; k < rank; k++)
    t.dims[k] = dims[k];
  return t;
}

static inline gint64
numel_of (int rank, const gint64 *dims)
{
  gint64 n = 1;
  for (int k = 0; k < rank; k++)
    n *= dims[k];
  return n;
}

/* Deterministic values in [lo, hi). */
static inline float *
rand_floats (GRand *rng, gsize n, double lo, double hi)
{
  float *v = g_new (float, MAX (n, 1));
  for (gsize i = 0; i < n; i++)
    v[i] = (float) g_rand_double_range (rng, lo, hi);
  return v;
}

/* ---- running ---- */

/* One output copied out of the plan's arena. */
typedef struct {
  SedpNnDType dtype;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 numel;
  gpointer data;
} Out;

static inline void
outs_free (Out *o, guint n)
{
  for (guint i = 0; i < n; i++)
    g_free (o[i].data);
}

static inline void
copy_out (Out *o, const SedpNnTensor *t)
{
  o->dtype = t->dtype;
  o->rank = t->rank;
  memcpy (o->dims, t->dims, sizeof o->dims);
  o->numel = numel_of (t->rank, t->dims);
  gsize bytes = (gsize) o->numel * sedp_nn_dtype_size (t->dtype);
  o->data = g_malloc0 (MAX (bytes, 1));
  if (bytes && t->data)
    memcpy (o->data, t->data, bytes);
}

/* Runs @plan once and copies the outputs into @outs (n_outputs of the plan). Prints the error. */
static inline gboolean
run_plan (SedpNnPlan *plan, guint n_in, const SedpNnTensor *in, Out *outs, GError **error)
{
  guint n_out = sedp_nn_plan_get_n_outputs (plan);
  SedpNnTensor *raw = g_new0 (SedpNnTensor, MAX (n_out, 1));
  gboolean ok = sedp_nn_plan_run (plan, n_in, in, n_out, raw, error);
  if (ok)
    for (guint i = 0; i < n_out; i++)
      copy_out (&outs[i], &raw[i]);
  g_free (raw);
  return ok;
}

/* The device run_model and nn_test_plan_new make plans on: NULL (the CPU engine) unless the
 * suite runs again on the OpenCL engine (nn_test_engine_init). */
static SedpNnDevice *nn_test_device;

/* With SEDP_TEST_ENGINE=opencl in the environment (the nn-ocl-ops-* runs of the op suites,
 * docs/opencl.md §9.1), opens the first OpenCL device for every plan the suite makes. Returns 0,
 * or an exit status: 1 when the device does not open. */
static inline int
nn_test_engine_init (void)
{
  if (g_strcmp0 (g_getenv ("SEDP_TEST_ENGINE"), "opencl") != 0)
    return 0;
  g_autoptr (GError) error = NULL;
  nn_test_device = sedp_nn_device_open (NULL, &error);
  if (nn_test_device == NULL)
    fprintf (stderr, "SEDP_TEST_ENGINE=opencl: %s\n", error->message);
  return nn_test_device ? 0 : 1;
}

/* sedp_nn_plan_new on the suite's engine. */
static inline SedpNnPlan *
nn_test_plan_new (SedpNnModel *m, gint64 batch, GError **error)
{
  return sedp_nn_plan_new_on (m, batch, nn_test_device, error);
}

/* Compiles @m for @batch and runs it once; fails the test (fatally) on any error. */
static inline void
run_model (SedpNnModel *m, gint64 batch, guint n_in, const SedpNnTensor *in, Out *outs)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = nn_test_plan_new (m, batch, &error);
  if (error)
    fprintf (stderr, "\n  plan error (batch %" G_GINT64_FORMAT "): %s\n", batch, error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_EQUAL (sedp_nn_plan_get_batch (plan), batch);
  CU_ASSERT_EQUAL (sedp_nn_plan_get_n_inputs (plan), n_in);
  gboolean ok = run_plan (plan, n_in, in, outs, &error);
  if (error)
    fprintf (stderr, "\n  run error (batch %" G_GINT64_FORMAT "): %s\n", batch, error->message);
  sedp_nn_plan_free (plan);
  CU_ASSERT_TRUE_FATAL (ok);
}

/* ---- comparing ---- */

/* |got - want| <= rtol * scale, scale = max(|want|, floor), per element; prints the first few
 * mismatches. Returns the number of mismatches. */
static inline guint
close_scaled (const char *what, const float *got, const double *want, const double *scale,
              gint64 n, double rtol, double floor)
{
  guint bad = 0;
  for (gint64 i = 0; i < n; i++) {
    double s = scale ? scale[i] : fabs (want[i]);
    s = MAX (s, floor);
    double d = fabs ((double) got[i] - want[i]);
    if (!(d <= rtol * s) && !(isinf (want[i]) && got[i] == want[i])) {
      if (bad < 5)
        fprintf (stderr, "\n  %s[%" G_GINT64_FORMAT "]: got %.9g, want %.9g (scale %.3g)", what, i,
                 (double) got[i], want[i], s);
      bad++;
    }
  }
  return bad;
}

#define RTOL_ELEM 1e-6
#define RTOL_REDUCE 1e-5

/* Compares an output with a double reference, elementwise tolerance scaled by |want|. */
#define ASSERT_CLOSE(out, want, rtol)                                                         \
  do {                                                                                        \
    CU_ASSERT_EQUAL_FATAL ((out).dtype, SEDP_NN_FLOAT);                                       \
    CU_ASSERT_EQUAL (close_scaled (#out, (const float *) (out).data, (want), NULL, (out).numel, \
                                   (rtol), 1e-6), 0);                                         \
  } while (0)

/* Compares with a reference whose error scale is given per element (sum of |terms|). */
#define ASSERT_CLOSE_SCALED(out, want, scale, rtol)                                           \
  do {                                                                                        \
    CU_ASSERT_EQUAL_FATAL ((out).dtype, SEDP_NN_FLOAT);                                       \
    CU_ASSERT_EQUAL (close_scaled (#out, (const float *) (out).data, (want), (scale),         \
                                   (out).numel, (rtol), 1e-6), 0);                            \
  } while (0)

/* Whether an output has this shape (prints it when not). */
static inline gboolean
shape_is (const Out *o, int rank, const gint64 *dims)
{
  gboolean ok = o->rank == rank;
  for (int k = 0; ok && k < rank; k++)
    ok = o->dims[k] == dims[k];
  if (!ok) {
    g_autofree char *s = sedp_nn_shape_to_string (o->rank, o->dims);
    g_autofree char *w = sedp_nn_shape_to_string (rank, dims);
    fprintf (stderr, "\n  output shape %s, want %s", s, w);
  }
  return ok;
}

/* Literal float expectations. */
static inline guint
floats_are (const Out *o, double rtol, guint n, const double *want)
{
  if (o->dtype != SEDP_NN_FLOAT || o->numel != (gint64) n) {
    fprintf (stderr, "\n  output: dtype %d numel %" G_GINT64_FORMAT ", want float × %u", o->dtype,
             o->numel, n);
    return 1;
  }
  return close_scaled ("out", o->data, want, NULL, n, rtol, 1e-6);
}

static inline guint
ints_are (const Out *o, guint n, const gint64 *want)
{
  if (o->dtype != SEDP_NN_INT64 || o->numel != (gint64) n) {
    fprintf (stderr, "\n  output: dtype %d numel %" G_GINT64_FORMAT ", want int64 × %u", o->dtype,
             o->numel, n);
    return 1;
  }
  guint bad = 0;
  for (guint i = 0; i < n; i++)
    if (((const gint64 *) o->data)[i] != want[i]) {
      if (bad < 5)
        fprintf (stderr, "\n  out[%u]: got %" G_GINT64_FORMAT ", want %" G_GINT64_FORMAT, i,
                 ((const gint64 *) o->data)[i], want[i]);
      bad++;
    }
  return bad;
}

#define D(...) ((const double[]){__VA_ARGS__})
#define F32(...) ((const float[]){__VA_ARGS__})
#define I64(...) ((const gint64[]){__VA_ARGS__})
#define NDIMS(...) ((int) (sizeof ((const gint64[]){__VA_ARGS__}) / sizeof (gint64)))
#define NVALS(...) ((guint) (sizeof ((const double[]){__VA_ARGS__}) / sizeof (double)))
#define NINTS(...) ((guint) (sizeof ((const gint64[]){__VA_ARGS__}) / sizeof (gint64)))

/* Shorthands: IN (m, "x", SEDP_NN_FLOAT, -1, 3) declares x [N, 3]; TT (dtype, data, 2, 3) a
 * [2, 3] tensor over data; SHAPE_IS (out, 2, 3); FLOATS_ARE (out, rtol, 1, 2, …). */
#define IN(m, name, dtype, ...) tb_input ((m), (name), (dtype), NDIMS (__VA_ARGS__), I64 (__VA_ARGS__))
#define OUT(m, name, dtype) tb_output ((m), (name), (dtype), -1, NULL)
#define INIT_F(m, name, data, ...) tb_init_f ((m), (name), NDIMS (__VA_ARGS__), I64 (__VA_ARGS__), (data))
#define INIT_I(m, name, data, ...) tb_init_i ((m), (name), NDIMS (__VA_ARGS__), I64 (__VA_ARGS__), (data))
#define INTS(m, name, ...) tb_ints ((m), (name), NINTS (__VA_ARGS__), I64 (__VA_ARGS__))
#define TT(dtype, data, ...) tt ((dtype), (data), NDIMS (__VA_ARGS__), I64 (__VA_ARGS__))
#define SHAPE_IS(out, ...) CU_ASSERT (shape_is (&(out), NDIMS (__VA_ARGS__), I64 (__VA_ARGS__)))
#define FLOATS_ARE(out, rtol, ...) \
  CU_ASSERT_EQUAL (floats_are (&(out), (rtol), NVALS (__VA_ARGS__), D (__VA_ARGS__)), 0)
#define INTS_ARE(out, ...) CU_ASSERT_EQUAL (ints_are (&(out), NINTS (__VA_ARGS__), I64 (__VA_ARGS__)), 0)
#define ATTR_INTS(node, name, ...) tb_attr_ints ((node), (name), NINTS (__VA_ARGS__), I64 (__VA_ARGS__))

/* ---- broadcasting references ---- */

/* numpy broadcasting of two shapes; FALSE when they do not broadcast. */
static inline gboolean
bcast_shape (int ra, const gint64 *da, int rb, const gint64 *db, int *ro, gint64 *dout)
{
  int r = MAX (ra, rb);
  for (int k = 0; k < r; k++) {
    int ka = k - (r - ra), kb = k - (r - rb);
    gint64 a = ka >= 0 ? da[ka] : 1, b = kb >= 0 ? db[kb] : 1;
    if (a != b && a != 1 && b != 1)
      return FALSE;
    dout[k] = a == 1 ? b : a;
  }
  *ro = r;
  return TRUE;
}

/* The flat offset in an operand of shape (ri, di) of the output element @flat of shape
 * (ro, dout), under broadcasting (right-aligned, dims of 1 repeated). */
static inline gint64
bcast_offset (gint64 flat, int ro, const gint64 *dout, int ri, const gint64 *di)
{
  gint64 off = 0, stride = 1;
  for (int k = ro - 1, j = ri - 1; k >= 0; k--, j--) {
    gint64 idx = flat % dout[k];
    flat /= dout[k];
    if (j >= 0) {
      if (di[j] != 1)
        off += idx * stride;
      stride *= di[j];
    }
  }
  return off;
}

/* ---- errors ---- */

/* An error of SEDP_NN_ERROR with @want_code whose message holds every needle. */
#define ASSERT_NN_ERROR(error, want_code, ...)                                                 \
  do {                                                                                         \
    SEDP_ASSERT_ERROR ((error), SEDP_NN_ERROR, __VA_ARGS__);                                   \
    if ((error)->code != (int) (want_code))                                                    \
      fprintf (stderr, "\n  error code %d, want %d: %s\n", (error)->code, (int) (want_code),    \
               (error)->message);                                                              \
    CU_ASSERT_EQUAL ((error)->code, (int) (want_code));                                        \
  } while (0)

/* A plan whose compilation must fail with @code, naming @needle. */
static inline void
expect_plan_error (SedpNnModel *m, gint64 batch, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  CU_ASSERT_PTR_NULL (plan);
  if (plan)
    sedp_nn_plan_free (plan);
  ASSERT_NN_ERROR (error, code, needle);
  sedp_nn_model_unref (m);
}
