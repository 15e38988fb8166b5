/* sedp — elementwise arithmetic: Add/Sub/Mul/Div, Mod, Pow and Sum/Max/Min/Mean with
 * broadcasting, unary functions and activations, Clip, Softmax/LogSoftmax/Hardmax,
 * BatchNormalization (inference), Cast and CastLike. */
#include "fast-math.h"
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- binary ops with numpy broadcasting ---- */

#define OP_ADD(x, y) ((x) + (y))
#define OP_SUB(x, y) ((x) - (y))
#define OP_MUL(x, y) ((x) * (y))
#define OP_DIV(x, y) ((x) / (y))
#define OP_IDIV(x, y) ((y) != 0 ? (x) / (y) : 0)

BIN_LOOP (add_float, float, float, float, OP_ADD)
BIN_LOOP (sub_float, float, float, float, OP_SUB)
BIN_LOOP (mul_float, float, float, float, OP_MUL)
BIN_LOOP (div_float, float, float, float, OP_DIV)
BIN_LOOP (add_int64, gint64, gint64, gint64, OP_ADD)
BIN_LOOP (sub_int64, gint64, gint64, gint64, OP_SUB)
BIN_LOOP (mul_int64, gint64, gint64, gint64, OP_MUL)
BIN_LOOP (div_int64, gint64, gint64, gint64, OP_IDIV)

/* Add, Sub, Mul, Div: the loop for the float and the int64 form. */
static const struct {
  const char *op;
  BroadcastFn f32, i64;
  NnElemOp elem;
} arith_ops[] = {
  {"Add", add_float, add_int64, NN_ELEM_ADD},
  {"Sub", sub_float, sub_int64, NN_ELEM_SUB},
  {"Mul", mul_float, mul_int64, NN_ELEM_MUL},
  {"Div", div_float, div_int64, NN_ELEM_DIV},
};

gboolean
nn_prepare_binary (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  if (a->dtype != b->dtype || (a->dtype != SEDP_NN_FLOAT && a->dtype != SEDP_NN_INT64)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "inputs of types %s and %s",
                   sedp_nn_dtype_name (a->dtype), sedp_nn_dtype_name (b->dtype));
    return FALSE;
  }
  guint k = NN_OP_ROW (c, arith_ops);
  BroadcastFn fn = a->dtype == SEDP_NN_FLOAT ? arith_ops[k].f32 : arith_ops[k].i64;
  return nn_prepare_broadcast (c, 2, fn, a->dtype, arith_ops[k].elem, "binary", error);
}

/* ---- Mod: fmod (float, and int64 with fmod = 1: the dividend's sign) or the floored
 * remainder (int64 with fmod = 0: the divisor's sign, as Python); x mod 0 is 0 for int64 ---- */

#define OP_FMOD(x, y) fmodf ((x), (y))
#define OP_IREM(x, y) ((y) == 0 || (y) == -1 ? 0 : (x) % (y))
#define OP_IMOD(x, y) (OP_IREM (x, y) != 0 && (OP_IREM (x, y) < 0) != ((y) < 0) ? OP_IREM (x, y) + (y) : OP_IREM (x, y))

BIN_LOOP (fmod_float, float, float, float, OP_FMOD)
BIN_LOOP (fmod_int64, gint64, gint64, gint64, OP_IREM)
BIN_LOOP (mod_int64, gint64, gint64, gint64, OP_IMOD)

gboolean
nn_prepare_mod (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  gboolean fmod = nn_attr_int (c->node, "fmod", 0) != 0;
  if (a->dtype != b->dtype || (a->dtype != SEDP_NN_FLOAT && a->dtype != SEDP_NN_INT64)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "inputs of types %s and %s: takes two float or two int64",
                   sedp_nn_dtype_name (a->dtype), sedp_nn_dtype_name (b->dtype));
    return FALSE;
  }
  if (a->dtype == SEDP_NN_FLOAT && !fmod) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "float inputs need fmod = 1, not 0");
    return FALSE;
  }
  BroadcastFn fn = a->dtype == SEDP_NN_FLOAT ? fmod_float : fmod ? fmod_int64 : mod_int64;
  return nn_prepare_broadcast (c, 2, fn, a->dtype, fmod ? NN_ELEM_FMOD : NN_ELEM_MOD,
                               fmod ? "fmod" : "mod", error);
}

/* ---- Pow: a float base, a float, int64 or int32 exponent ---- */

/* In double, rounded once to float. */
#define OP_POW(x, y) ((float) pow ((double) (x), (double) (y)))
/* The same values for a constant exponent of 2 and of 0.5 (pow (-0, 0.5) is +0, pow (-∞, 0.5)
 * is +∞, where sqrt gives -0 and NaN). */
#define OP_POW_2(x, y) ((void) (y), (x) * (x))
#define OP_POW_HALF(x, y) ((void) (y), (x) == -INFINITY ? INFINITY : sqrtf (x) + 0.0f)

BIN_LOOP (pow_float, float, float, float, OP_POW)
BIN_LOOP (pow_int64, float, gint64, float, OP_POW)
BIN_LOOP (pow_int32, float, gint32, float, OP_POW)
BIN_LOOP (pow_2, float, float, float, OP_POW_2)
BIN_LOOP (pow_half, float, float, float, OP_POW_HALF)

/* The exponent's one value when it is a constant of one element, else NAN. */
static double
const_exponent (const Value *e)
{
  if (e->kind != VALUE_CONST || e->numel != 1)
    return NAN;
  switch (e->dtype) {
  case SEDP_NN_FLOAT: return *(const float *) e->data;
  case SEDP_NN_INT64: return (double) *(const gint64 *) e->data;
  default: return (double) *(const gint32 *) e->data;
  }
}

gboolean
nn_prepare_pow (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0), *e = op_in (c, 1);
  if (x->dtype != SEDP_NN_FLOAT ||
      (e->dtype != SEDP_NN_FLOAT && e->dtype != SEDP_NN_INT64 && e->dtype != SEDP_NN_INT32)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "base of type %s and exponent of type %s: takes a float base and a float, "
                   "int64 or int32 exponent",
                   sedp_nn_dtype_name (x->dtype), sedp_nn_dtype_name (e->dtype));
    return FALSE;
  }
  double k = const_exponent (e);
  BroadcastFn fn = k == 2.0                    ? pow_2
                   : k == 0.5                  ? pow_half
                   : e->dtype == SEDP_NN_FLOAT ? pow_float
                   : e->dtype == SEDP_NN_INT64 ? pow_int64
                                               : pow_int32;
  NnElemOp op = fn == pow_2 ? NN_ELEM_POW2 : fn == pow_half ? NN_ELEM_POW_HALF : NN_ELEM_POW;
  return nn_prepare_broadcast (c, 2, fn, SEDP_NN_FLOAT, op,
                               fn == pow_2 ? "pow2" : fn == pow_half ? "pow_half" : "pow", error);
}

/* ---- Sum, Max, Min, Mean of 1 to NN_MAX_IN inputs, with broadcasting ---- */

#define OP_FMAX(x, y) ((x) >= (y) || (x) != (x) ? (x) : (y)) /* NaN wins, as in numpy */
#define OP_FMIN(x, y) ((x) <= (y) || (x) != (x) ? (x) : (y))
#define OP_IMAX(x, y) ((x) >= (y) ? (x) : (y))
#define OP_IMIN(x, y) ((x) <= (y) ? (x) : (y))

BIN_LOOP (max_float, float, float, float, OP_FMAX)
BIN_LOOP (min_float, float, float, float, OP_FMIN)
BIN_LOOP (max_int64, gint64, gint64, gint64, OP_IMAX)
BIN_LOOP (min_int64, gint64, gint64, gint64, OP_IMIN)

static gboolean
kernel_variadic (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const VariadicParams *p = s->params;
  gpointer y = ptrs[s->out[0]];
  gint64 numel = plan->values[s->out[0]].numel;
  if (p->n == 1 && y != ptrs[s->in[0]])
    memcpy (y, ptrs[s->in[0]], (gsize) numel * p->esize);
  for (guint k = 1; k < p->n; k++)
    p->fn (&p->walks[k - 1], k == 1 ? ptrs[s->in[0]] : y, ptrs[s->in[k]], NULL, y);
  if (p->mean)
    for (gint64 i = 0; i < numel; i++)
      ((float *) y)[i] /= (float) p->n;
  return TRUE;
}

/* Sum, Max, Min, Mean: the loop for float and for int64 (NULL: float only). */
static const struct {
  const char *op;
  BroadcastFn f32, i64;
  NnElemOp elem;
} variadic_ops[] = {
  {"Sum", add_float, NULL, NN_ELEM_ADD},
  {"Mean", add_float, NULL, NN_ELEM_ADD},
  {"Max", max_float, max_int64, NN_ELEM_MAX},
  {"Min", min_float, min_int64, NN_ELEM_MIN},
};

gboolean
nn_prepare_variadic (OpCtx *c, GError **error)
{
  guint n = c->step->n_in, k = NN_OP_ROW (c, variadic_ops);
  Value *x0 = op_in (c, 0);
  if (x0->dtype != SEDP_NN_FLOAT && !(x0->dtype == SEDP_NN_INT64 && variadic_ops[k].i64)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "inputs of type %s: takes float%s",
                   sedp_nn_dtype_name (x0->dtype), variadic_ops[k].i64 ? " or int64" : "");
    return FALSE;
  }
  Value **in = g_newa (Value *, n);
  for (guint i = 0; i < n; i++) {
    in[i] = op_in (c, i);
    if (in[i] == NULL || in[i]->dtype != x0->dtype) {
      nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                     "input %u is %s, input 0 %s: the inputs must have one type", i,
                     in[i] ? sedp_nn_dtype_name (in[i]->dtype) : "omitted",
                     sedp_nn_dtype_name (x0->dtype));
      return FALSE;
    }
  }
  VariadicParams *p = g_malloc0 (sizeof (VariadicParams) + (n - 1) * sizeof (Broadcast));
  c->step->params = p;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  if (!nn_broadcast_values (c, n, in, &rank, dims, error))
    return FALSE;
  Value *y = op_out (c, 0);
  nn_set_shape (y, x0->dtype, rank, dims);
  for (guint i = 1; i < n; i++)
    nn_broadcast_set (&p->walks[i - 1], rank, dims, 2, (Value *const[]){i == 1 ? in[0] : y, in[i]});
  p->n = n;
  p->esize = sedp_nn_dtype_size (x0->dtype);
  p->fn = x0->dtype == SEDP_NN_FLOAT ? variadic_ops[k].f32 : variadic_ops[k].i64;
  p->op = variadic_ops[k].elem;
  p->mean = strcmp (c->node->op_type, "Mean") == 0;
  c->step->fn = kernel_variadic;
  c->step->id = NN_KERNEL_VARIADIC;
  c->step->kernel = variadic_ops[k].op;
  c->step->flops = (double) y->numel;
  return TRUE;
}

/* ---- unary ---- */

NN_VECTORIZE NN_HOT void
nn_map_activation (const float *x, float *y, gint64 n, Activation act, float leaky_alpha)
{
  switch (act) {
  case ACT_RELU:
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    break;
  case ACT_LEAKY_RELU:
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] >= 0.0f ? x[i] : x[i] * leaky_alpha;
    break;
  case ACT_SIGMOID: /* fast-math.h: vectorized, within 2 ulp */
    for (gint64 i = 0; i < n; i++)
      y[i] = nn_fast_sigmoid (x[i]);
    break;
  case ACT_TANH:
    for (gint64 i = 0; i < n; i++)
      y[i] = nn_fast_tanh (x[i]);
    break;
  case ACT_EXP:
    for (gint64 i = 0; i < n; i++)
      y[i] = expf (x[i]);
    break;
  case ACT_LOG:
    for (gint64 i = 0; i < n; i++)
      y[i] = logf (x[i]);
    break;
  case ACT_SQRT:
    for (gint64 i = 0; i < n; i++)
      y[i] = sqrtf (x[i]);
    break;
  case ACT_NEG:
    for (gint64 i = 0; i < n; i++)
      y[i] = -x[i];
    break;
  case ACT_ABS:
    for (gint64 i = 0; i < n; i++)
      y[i] = fabsf (x[i]);
    break;
  case ACT_RECIPROCAL:
    for (gint64 i = 0; i < n; i++)
      y[i] = 1.0f / x[i];
    break;
  case ACT_ERF: /* in double, so that the float result is erf's correctly rounded value */
    for (gint64 i = 0; i < n; i++)
      y[i] = (float) erf ((double) x[i]);
    break;
  case ACT_FLOOR:
    for (gint64 i = 0; i < n; i++)
      y[i] = floorf (x[i]);
    break;
  case ACT_CEIL:
    for (gint64 i = 0; i < n; i++)
      y[i] = ceilf (x[i]);
    break;
  case ACT_SIGN: /* NaN stays NaN, ±0 gives 0; on the bits (valgrind emulates the vectorized
                  * float compares' NaN cases wrongly) */
    for (gint64 i = 0; i < n; i++) {
      guint32 u, mag;
      memcpy (&u, x + i, sizeof u);
      mag = u & 0x7fffffffu;
      u = mag > 0x7f800000u ? u : mag == 0 ? 0 : (u & 0x80000000u) | 0x3f800000u;
      memcpy (y + i, &u, sizeof u);
    }
    break;
  case ACT_SIN:
    for (gint64 i = 0; i < n; i++)
      y[i] = sinf (x[i]);
    break;
  case ACT_COS:
    for (gint64 i = 0; i < n; i++)
      y[i] = cosf (x[i]);
    break;
  case ACT_ROUND: /* halves to even (the default rounding mode) */
    for (gint64 i = 0; i < n; i++)
      y[i] = nearbyintf (x[i]);
    break;
  case ACT_NONE:
    if (x != y)
      memcpy (y, x, (gsize) n * sizeof (float));
    break;
  }
}

void
nn_apply_activation (float *y, gint64 n, Activation act, float leaky_alpha)
{
  nn_map_activation (y, y, n, act, leaky_alpha);
}

NN_HOT static void
map_int64 (const gint64 *x, gint64 *y, gint64 n, Activation act)
{
  if (act == ACT_NEG)
    for (gint64 i = 0; i < n; i++)
      y[i] = (gint64) (0 - (guint64) x[i]); /* wraps at G_MININT64, as two's complement does */
  else
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] < 0 ? (gint64) (0 - (guint64) x[i]) : x[i];
}

static gboolean
kernel_unary (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const UnaryParams *p = s->params;
  if (p->int64)
    map_int64 (ptrs[s->in[0]], ptrs[s->out[0]], p->n, p->act);
  else
    nn_map_activation (ptrs[s->in[0]], ptrs[s->out[0]], p->n, p->act, p->alpha);
  return TRUE;
}

/* The unary operators: their function, and whether they also take int64. */
static const struct {
  const char *op;
  Activation act;
  gboolean int64;
} unary_ops[] = {
  {"Relu", ACT_RELU, FALSE},     {"LeakyRelu", ACT_LEAKY_RELU, FALSE},
  {"Sigmoid", ACT_SIGMOID, FALSE}, {"Tanh", ACT_TANH, FALSE},
  {"Exp", ACT_EXP, FALSE},       {"Log", ACT_LOG, FALSE},
  {"Sqrt", ACT_SQRT, FALSE},     {"Neg", ACT_NEG, TRUE},
  {"Abs", ACT_ABS, TRUE},        {"Reciprocal", ACT_RECIPROCAL, FALSE},
  {"Erf", ACT_ERF, FALSE},       {"Floor", ACT_FLOOR, FALSE},
  {"Ceil", ACT_CEIL, FALSE},     {"Sign", ACT_SIGN, FALSE},
  {"Sin", ACT_SIN, FALSE},       {"Cos", ACT_COS, FALSE},
  {"Round", ACT_ROUND, FALSE},
};

gboolean
nn_prepare_unary (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  guint k = NN_OP_ROW (c, unary_ops);
  if (x->dtype != SEDP_NN_FLOAT && !(x->dtype == SEDP_NN_INT64 && unary_ops[k].int64)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "input of type %s: takes float%s",
                   sedp_nn_dtype_name (x->dtype), unary_ops[k].int64 ? " or int64" : "");
    return FALSE;
  }
  UnaryParams *p = g_new0 (UnaryParams, 1);
  c->step->params = p;
  p->act = unary_ops[k].act;
  p->alpha = nn_attr_float (c->node, "alpha", 0.01f);
  p->int64 = x->dtype == SEDP_NN_INT64;
  p->n = x->numel;
  nn_set_shape (op_out (c, 0), x->dtype, x->rank, x->dims);
  c->step->fn = kernel_unary;
  c->step->id = NN_KERNEL_UNARY;
  c->step->kernel = unary_ops[k].op;
  c->step->flops = (double) p->n;
  return TRUE;
}

/* ---- Clip (opset ≥ 11: min and max are optional inputs) ---- */

NN_HOT static gboolean
kernel_clip (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const ClipParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  for (gint64 i = 0; i < p->n; i++)
    y[i] = x[i] < p->lo ? p->lo : (x[i] > p->hi ? p->hi : x[i]);
  return TRUE;
}

static gboolean
const_scalar (OpCtx *c, guint k, float *out, GError **error)
{
  Value *v = op_in (c, k);
  if (v == NULL)
    return TRUE;
  if (!nn_require_const (c, k, error))
    return FALSE;
  if (v->dtype != SEDP_NN_FLOAT || v->numel != 1) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "input %u must be a float scalar, is %s of %" G_GINT64_FORMAT " elements", k,
                   sedp_nn_dtype_name (v->dtype), v->numel);
    return FALSE;
  }
  *out = *(const float *) v->data;
  return TRUE;
}

gboolean
nn_prepare_clip (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x == NULL || x->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs a float input");
    return FALSE;
  }
  ClipParams *p = g_new0 (ClipParams, 1);
  c->step->params = p;
  p->lo = -INFINITY;
  p->hi = INFINITY;
  if (!const_scalar (c, 1, &p->lo, error) || !const_scalar (c, 2, &p->hi, error))
    return FALSE;
  p->n = x->numel;
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_clip;
  c->step->id = NN_KERNEL_CLIP;
  c->step->kernel = "clip";
  return TRUE;
}

/* ---- Softmax, LogSoftmax, Hardmax: along one axis (opset ≥ 13) or over the input coerced to
 * 2-D at the axis (before 13) ---- */

NN_VECTORIZE NN_HOT void
nn_softmax_row (const float *x, float *y, gint64 n)
{
  /* Max and sum in 16 lanes (one vector register), the tail after them: rows of a few tens of
   * values (attention over a behaviour sequence) are common. */
  gint64 n16 = n & ~(gint64) 15;
  float lane[16];
  for (int t = 0; t < 16; t++)
    lane[t] = -INFINITY;
  for (gint64 k = 0; k < n16; k += 16)
    for (int t = 0; t < 16; t++)
      lane[t] = x[k + t] > lane[t] ? x[k + t] : lane[t];
  float m = -INFINITY;
  for (int t = 0; t < 16; t++)
    m = lane[t] > m ? lane[t] : m;
  for (gint64 k = n16; k < n; k++)
    m = x[k] > m ? x[k] : m;
  for (gint64 k = 0; k < n; k++)
    y[k] = nn_fast_exp (x[k] - m);
  for (int t = 0; t < 16; t++)
    lane[t] = 0.0f;
  for (gint64 k = 0; k < n16; k += 16)
    for (int t = 0; t < 16; t++)
      lane[t] += y[k + t];
  double sum = 0;
  for (int t = 0; t < 16; t++)
    sum += lane[t];
  for (gint64 k = n16; k < n; k++)
    sum += y[k];
  float inv = (float) (1.0 / sum);
  for (gint64 k = 0; k < n; k++)
    y[k] *= inv;
}

static float
lane_max (const float *x, gint64 n, gint64 stride)
{
  float m = -INFINITY;
  for (gint64 k = 0; k < n; k++)
    m = MAX (m, x[k * stride]);
  return m;
}

static void
softmax_lane (const float *x, float *y, gint64 n, gint64 stride)
{
  float m = lane_max (x, n, stride);
  double sum = 0;
  for (gint64 k = 0; k < n; k++) {
    float e = expf (x[k * stride] - m);
    y[k * stride] = e;
    sum += e;
  }
  float inv = (float) (1.0 / sum);
  for (gint64 k = 0; k < n; k++)
    y[k * stride] *= inv;
}

/* x - m - log Σ exp(x - m), m the maximum. */
static void
log_softmax_lane (const float *x, float *y, gint64 n, gint64 stride)
{
  float m = lane_max (x, n, stride);
  double sum = 0;
  for (gint64 k = 0; k < n; k++)
    sum += exp ((double) x[k * stride] - m);
  double lse = m + log (sum);
  for (gint64 k = 0; k < n; k++)
    y[k * stride] = (float) (x[k * stride] - lse);
}

/* 1 at the first maximum, 0 elsewhere. */
static void
hardmax_lane (const float *x, float *y, gint64 n, gint64 stride)
{
  gint64 best = 0;
  for (gint64 k = 0; k < n; k++) {
    y[k * stride] = 0.0f;
    if (x[k * stride] > x[best * stride])
      best = k;
  }
  if (n > 0)
    y[best * stride] = 1.0f;
}

static gboolean
kernel_softmax (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const SoftmaxParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  if (p->inner == 1 && p->lane == softmax_lane) { /* the usual last axis, vectorized */
    for (gint64 o = 0; o < p->outer; o++)
      nn_softmax_row (x + o * p->axis_len, y + o * p->axis_len, p->axis_len);
    return TRUE;
  }
  for (gint64 o = 0; o < p->outer; o++)
    for (gint64 i = 0; i < p->inner; i++) {
      gint64 off = o * p->axis_len * p->inner + i;
      p->lane (x + off, y + off, p->axis_len, p->inner);
    }
  return TRUE;
}

/* The operators of the family: the lane function, the kernel's name, FLOPs per element. */
static const struct {
  const char *op;
  LaneFn lane;
  const char *kernel;
  double flops;
  SoftmaxKind kind;
} softmax_ops[] = {
  {"Softmax", softmax_lane, "softmax", 3, SOFTMAX_PLAIN},
  {"LogSoftmax", log_softmax_lane, "log_softmax", 3, SOFTMAX_LOG},
  {"Hardmax", hardmax_lane, "hardmax", 1, SOFTMAX_HARD},
};

gboolean
nn_prepare_softmax (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  guint row = NN_OP_ROW (c, softmax_ops);
  if (x == NULL || x->dtype != SEDP_NN_FLOAT || x->rank < 1) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs a float input of rank ≥ 1");
    return FALSE;
  }
  gint64 axis = nn_attr_int (c->node, "axis", c->opset >= 13 ? -1 : 1);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "axis out of range for rank %d", x->rank);
    return FALSE;
  }
  SoftmaxParams *p = g_new0 (SoftmaxParams, 1);
  c->step->params = p;
  p->outer = nn_numel ((int) axis, x->dims);
  if (c->opset >= 13) {
    p->axis_len = x->dims[axis];
    p->inner = nn_numel (x->rank - (int) axis - 1, x->dims + axis + 1);
  } else {
    /* Before opset 13 the input is coerced to 2-D at axis. */
    p->axis_len = nn_numel (x->rank - (int) axis, x->dims + axis);
    p->inner = 1;
  }
  p->lane = softmax_ops[row].lane;
  p->kind = softmax_ops[row].kind;
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_softmax;
  c->step->id = NN_KERNEL_SOFTMAX;
  c->step->kernel = softmax_ops[row].kernel;
  c->step->flops = softmax_ops[row].flops * (double) x->numel;
  return TRUE;
}

/* ---- BatchNormalization (inference): y = x * a[c] + b[c] ---- */

NN_HOT static gboolean
kernel_batchnorm (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const BatchNormParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  for (gint64 i = 0; i < p->n; i++)
    for (gint64 ch = 0; ch < p->channels; ch++) {
      const float *px = x + (i * p->channels + ch) * p->inner;
      float *py = y + (i * p->channels + ch) * p->inner;
      float a = p->a[ch], b = p->b[ch];
      for (gint64 k = 0; k < p->inner; k++)
        py[k] = px[k] * a + b;
    }
  return TRUE;
}

gboolean
nn_prepare_batchnorm (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x == NULL || x->dtype != SEDP_NN_FLOAT || x->rank < 2) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs a float input of rank ≥ 2");
    return FALSE;
  }
  if (nn_attr_int (c->node, "training_mode", 0) != 0 || c->node->n_outputs > 1) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "only inference mode is supported");
    return FALSE;
  }
  gint64 ch = x->dims[1];
  for (guint k = 1; k <= 4; k++) {
    Value *v = op_in (c, k);
    if (!nn_require_const (c, k, error))
      return FALSE;
    if (v == NULL || v->dtype != SEDP_NN_FLOAT || v->numel != ch) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                     "scale, B, mean and var must be constant float vectors of %" G_GINT64_FORMAT
                     " channels",
                     ch);
      return FALSE;
    }
  }
  float eps = nn_attr_float (c->node, "epsilon", 1e-5f);
  const float *scale = op_in (c, 1)->data, *bias = op_in (c, 2)->data, *mean = op_in (c, 3)->data,
              *var = op_in (c, 4)->data;
  BatchNormParams *p = g_malloc0 (sizeof (BatchNormParams) + 2 * (gsize) ch * sizeof (float));
  c->step->params = p;
  p->a = (float *) (p + 1);
  p->b = p->a + ch;
  for (gint64 i = 0; i < ch; i++) {
    p->a[i] = (float) (scale[i] / sqrt ((double) var[i] + eps));
    p->b[i] = bias[i] - mean[i] * p->a[i];
  }
  p->n = x->dims[0];
  p->channels = ch;
  p->inner = nn_numel (x->rank - 2, x->dims + 2);
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_batchnorm;
  c->step->id = NN_KERNEL_BATCHNORM;
  c->step->kernel = "batchnorm";
  c->step->flops = 2.0 * (double) x->numel;
  return TRUE;
}

/* ---- Cast ---- */

double
nn_load_double (SedpNnDType t, gconstpointer p, gint64 i)
{
  switch (t) {
  case SEDP_NN_FLOAT: return ((const float *) p)[i];
  case SEDP_NN_INT64: return (double) ((const gint64 *) p)[i];
  case SEDP_NN_DOUBLE: return ((const double *) p)[i];
  case SEDP_NN_INT32: return ((const gint32 *) p)[i];
  case SEDP_NN_INT8: return ((const gint8 *) p)[i];
  case SEDP_NN_UINT8:
  case SEDP_NN_BOOL: return ((const guint8 *) p)[i];
  default: return 0;
  }
}

/* Element @i as an integer: truncated toward 0; NaN and ±inf give 0, a finite value outside
 * int64's range G_MININT64 (what x86's conversion gives, and numpy and ONNX Runtime with it; C
 * leaves it undefined). The OpenCL kernels follow the same rule (elementwise.cl). */
static gint64
load_as_int (SedpNnDType t, gconstpointer p, gint64 i)
{
  if (t == SEDP_NN_INT64)
    return ((const gint64 *) p)[i];
  double v = nn_load_double (t, p, i);
  if (!isfinite (v))
    return 0;
  return v >= 0x1p63 || v < -0x1p63 ? G_MININT64 : (gint64) v;
}

static gboolean
kernel_cast (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const CastParams *p = s->params;
  gconstpointer x = ptrs[s->in[0]];
  gpointer y = ptrs[s->out[0]];
  for (gint64 i = 0; i < p->n; i++) {
    switch (p->to) {
    case SEDP_NN_FLOAT:
      ((float *) y)[i] = p->from == SEDP_NN_INT64 ? (float) ((const gint64 *) x)[i] : (float) nn_load_double (p->from, x, i);
      break;
    case SEDP_NN_DOUBLE:
      ((double *) y)[i] = p->from == SEDP_NN_INT64 ? (double) ((const gint64 *) x)[i] : nn_load_double (p->from, x, i);
      break;
    case SEDP_NN_INT64: ((gint64 *) y)[i] = load_as_int (p->from, x, i); break;
    case SEDP_NN_INT32: ((gint32 *) y)[i] = (gint32) load_as_int (p->from, x, i); break;
    case SEDP_NN_INT8: ((gint8 *) y)[i] = (gint8) load_as_int (p->from, x, i); break;
    case SEDP_NN_UINT8: ((guint8 *) y)[i] = (guint8) load_as_int (p->from, x, i); break;
    case SEDP_NN_BOOL:
      ((guint8 *) y)[i] = p->from == SEDP_NN_INT64 ? ((const gint64 *) x)[i] != 0 : nn_load_double (p->from, x, i) != 0;
      break;
    default: break;
    }
  }
  return TRUE;
}

gboolean
nn_prepare_cast (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  /* CastLike: to the second input's type. */
  Value *like = strcmp (c->node->op_type, "CastLike") == 0 ? op_in (c, 1) : NULL;
  SedpNnDType to = like ? like->dtype : (SedpNnDType) nn_attr_int (c->node, "to", 0);
  if (x == NULL || sedp_nn_dtype_size (to) == 0 || sedp_nn_dtype_size (x->dtype) == 0) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "cast from %s to %s",
                   x ? sedp_nn_dtype_name (x->dtype) : "nothing", sedp_nn_dtype_name (to));
    return FALSE;
  }
  CastParams *p = g_new0 (CastParams, 1);
  c->step->params = p;
  p->from = x->dtype;
  p->to = to;
  p->n = x->numel;
  nn_set_shape (op_out (c, 0), to, x->rank, x->dims);
  c->step->fn = kernel_cast;
  c->step->id = NN_KERNEL_CAST;
  c->step->kernel = "cast";
  return TRUE;
}
