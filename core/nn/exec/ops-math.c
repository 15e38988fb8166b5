/* sedp — elementwise operators: Add/Sub/Mul/Div with broadcasting, activations, Clip, Softmax,
 * BatchNormalization (inference), Cast. */
#include "ops.h"

#include <math.h>

/* ---- binary ops with numpy broadcasting ---- */

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV } BinOp;

typedef struct {
  BinOp op;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 sa[SEDP_NN_MAX_RANK]; /* element strides of A and B in the output's index space */
  gint64 sb[SEDP_NN_MAX_RANK];
  gint64 numel;
} BinaryParams;

#define BIN_LOOP(T, OPX)                                                                   \
  NN_HOT static void bin_##T##_##OPX (const BinaryParams *p, const T *a, const T *b, T *y) \
  {                                                                                        \
    int r = p->rank;                                                                       \
    gint64 inner = r ? p->dims[r - 1] : 1, ia = r ? p->sa[r - 1] : 0, ib = r ? p->sb[r - 1] : 0; \
    gint64 outer = inner ? p->numel / inner : 0;                                           \
    gint64 idx[SEDP_NN_MAX_RANK] = {0}, oa = 0, ob = 0;                                    \
    for (gint64 o = 0; o < outer; o++) {                                                   \
      const T *pa = a + oa, *pb = b + ob;                                                  \
      T *py = y + o * inner;                                                               \
      if (ia && ib)                                                                        \
        for (gint64 i = 0; i < inner; i++)                                                 \
          py[i] = OPX (pa[i], pb[i]);                                                      \
      else if (ia)                                                                         \
        for (gint64 i = 0; i < inner; i++)                                                 \
          py[i] = OPX (pa[i], pb[0]);                                                      \
      else if (ib)                                                                         \
        for (gint64 i = 0; i < inner; i++)                                                 \
          py[i] = OPX (pa[0], pb[i]);                                                      \
      else                                                                                 \
        for (gint64 i = 0; i < inner; i++)                                                 \
          py[i] = OPX (pa[0], pb[0]);                                                      \
      for (int d = r - 2; d >= 0; d--) { /* next outer index */                            \
        idx[d]++;                                                                          \
        oa += p->sa[d];                                                                    \
        ob += p->sb[d];                                                                    \
        if (idx[d] < p->dims[d])                                                           \
          break;                                                                           \
        oa -= p->sa[d] * idx[d];                                                           \
        ob -= p->sb[d] * idx[d];                                                           \
        idx[d] = 0;                                                                        \
      }                                                                                    \
    }                                                                                      \
  }

#define OP_ADD(x, y) ((x) + (y))
#define OP_SUB(x, y) ((x) - (y))
#define OP_MUL(x, y) ((x) * (y))
#define OP_DIV(x, y) ((x) / (y))
#define OP_IDIV(x, y) ((y) != 0 ? (x) / (y) : 0)

BIN_LOOP (float, OP_ADD)
BIN_LOOP (float, OP_SUB)
BIN_LOOP (float, OP_MUL)
BIN_LOOP (float, OP_DIV)
BIN_LOOP (gint64, OP_ADD)
BIN_LOOP (gint64, OP_SUB)
BIN_LOOP (gint64, OP_MUL)
BIN_LOOP (gint64, OP_IDIV)

static gboolean
kernel_binary (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const BinaryParams *p = s->params;
  gpointer a = ptrs[s->in[0]], b = ptrs[s->in[1]], y = ptrs[s->out[0]];
  if (plan->values[s->out[0]].dtype == SEDP_NN_FLOAT) {
    switch (p->op) {
    case BIN_ADD: bin_float_OP_ADD (p, a, b, y); break;
    case BIN_SUB: bin_float_OP_SUB (p, a, b, y); break;
    case BIN_MUL: bin_float_OP_MUL (p, a, b, y); break;
    case BIN_DIV: bin_float_OP_DIV (p, a, b, y); break;
    }
  } else {
    switch (p->op) {
    case BIN_ADD: bin_gint64_OP_ADD (p, a, b, y); break;
    case BIN_SUB: bin_gint64_OP_SUB (p, a, b, y); break;
    case BIN_MUL: bin_gint64_OP_MUL (p, a, b, y); break;
    case BIN_DIV: bin_gint64_OP_IDIV (p, a, b, y); break;
    }
  }
  return TRUE;
}

/* Strides of an input of shape (r, d) in an output space of rank @rank (0 where broadcast). */
static void
broadcast_strides (int r, const gint64 *d, int rank, const gint64 *out_dims, gint64 *strides)
{
  gint64 stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int k = i - (rank - r);
    gint64 dim = k >= 0 ? d[k] : 1;
    strides[i] = (dim == 1 && out_dims[i] != 1) || k < 0 ? 0 : stride;
    if (k >= 0)
      stride *= dim;
  }
}

gboolean
nn_prepare_binary (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  if (a == NULL || b == NULL) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "needs two inputs");
    return FALSE;
  }
  if (a->dtype != b->dtype || (a->dtype != SEDP_NN_FLOAT && a->dtype != SEDP_NN_INT64)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "inputs of types %s and %s",
                   sedp_nn_dtype_name (a->dtype), sedp_nn_dtype_name (b->dtype));
    return FALSE;
  }
  BinaryParams *p = g_new0 (BinaryParams, 1);
  c->step->params = p;
  const char *op = c->node->op_type;
  p->op = op[0] == 'A' ? BIN_ADD : op[0] == 'S' ? BIN_SUB : op[0] == 'M' ? BIN_MUL : BIN_DIV;
  if (!nn_broadcast_shape (a->rank, a->dims, b->rank, b->dims, &p->rank, p->dims)) {
    g_autofree char *sa = sedp_nn_shape_to_string (a->rank, a->dims);
    g_autofree char *sb = sedp_nn_shape_to_string (b->rank, b->dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "shapes %s and %s do not broadcast", sa, sb);
    return FALSE;
  }
  p->numel = nn_numel (p->rank, p->dims);
  broadcast_strides (a->rank, a->dims, p->rank, p->dims, p->sa);
  broadcast_strides (b->rank, b->dims, p->rank, p->dims, p->sb);
  nn_set_shape (op_out (c, 0), a->dtype, p->rank, p->dims);
  c->step->fn = kernel_binary;
  c->step->kernel = "binary";
  c->step->flops = (double) p->numel;
  return TRUE;
}

/* ---- unary ---- */

typedef struct {
  Activation act;
  float alpha;
  gint64 n;
} UnaryParams;

NN_HOT void
nn_apply_activation (float *y, gint64 n, Activation act, float leaky_alpha)
{
  switch (act) {
  case ACT_RELU:
    for (gint64 i = 0; i < n; i++)
      y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    break;
  case ACT_LEAKY_RELU:
    for (gint64 i = 0; i < n; i++)
      y[i] = y[i] >= 0.0f ? y[i] : y[i] * leaky_alpha;
    break;
  case ACT_SIGMOID:
    for (gint64 i = 0; i < n; i++) {
      float x = y[i];
      /* Stable for large |x|: exp of a non-positive number only. */
      if (x >= 0) {
        float e = expf (-x);
        y[i] = 1.0f / (1.0f + e);
      } else {
        float e = expf (x);
        y[i] = e / (1.0f + e);
      }
    }
    break;
  case ACT_TANH:
    for (gint64 i = 0; i < n; i++)
      y[i] = tanhf (y[i]);
    break;
  case ACT_NONE:
    break;
  }
}

static gboolean
kernel_unary (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const UnaryParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  if (x != y)
    memcpy (y, x, (gsize) p->n * sizeof (float));
  nn_apply_activation (y, p->n, p->act, p->alpha);
  return TRUE;
}

gboolean
nn_prepare_unary (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x == NULL || x->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs one float input");
    return FALSE;
  }
  UnaryParams *p = g_new0 (UnaryParams, 1);
  c->step->params = p;
  const char *op = c->node->op_type;
  p->act = strcmp (op, "Relu") == 0      ? ACT_RELU
           : strcmp (op, "Sigmoid") == 0 ? ACT_SIGMOID
           : strcmp (op, "Tanh") == 0    ? ACT_TANH
                                         : ACT_LEAKY_RELU;
  p->alpha = nn_attr_float (c->node, "alpha", 0.01f);
  p->n = x->numel;
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_unary;
  c->step->kernel = op;
  c->step->flops = (double) p->n;
  return TRUE;
}

/* ---- Clip (opset ≥ 11: min and max are optional inputs) ---- */

typedef struct {
  float lo, hi;
  gint64 n;
} ClipParams;

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
  c->step->kernel = "clip";
  return TRUE;
}

/* ---- Softmax ---- */

typedef struct {
  gint64 outer, axis_len, inner;
} SoftmaxParams;

static gboolean
kernel_softmax (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const SoftmaxParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  for (gint64 o = 0; o < p->outer; o++)
    for (gint64 i = 0; i < p->inner; i++) {
      const float *px = x + o * p->axis_len * p->inner + i;
      float *py = y + o * p->axis_len * p->inner + i;
      float m = -INFINITY;
      for (gint64 k = 0; k < p->axis_len; k++)
        m = MAX (m, px[k * p->inner]);
      double sum = 0;
      for (gint64 k = 0; k < p->axis_len; k++) {
        float e = expf (px[k * p->inner] - m);
        py[k * p->inner] = e;
        sum += e;
      }
      float inv = (float) (1.0 / sum);
      for (gint64 k = 0; k < p->axis_len; k++)
        py[k * p->inner] *= inv;
    }
  return TRUE;
}

gboolean
nn_prepare_softmax (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
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
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_softmax;
  c->step->kernel = "softmax";
  c->step->flops = 3.0 * (double) x->numel;
  return TRUE;
}

/* ---- BatchNormalization (inference): y = x * a[c] + b[c] ---- */

typedef struct {
  gint64 n, channels, inner;
  float *a, *b;
} BatchNormParams;

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
  c->step->kernel = "batchnorm";
  c->step->flops = 2.0 * (double) x->numel;
  return TRUE;
}

/* ---- Cast ---- */

typedef struct {
  SedpNnDType from, to;
  gint64 n;
} CastParams;

static double
load_as_double (SedpNnDType t, gconstpointer p, gint64 i)
{
  switch (t) {
  case SEDP_NN_FLOAT: return ((const float *) p)[i];
  case SEDP_NN_DOUBLE: return ((const double *) p)[i];
  case SEDP_NN_INT32: return ((const gint32 *) p)[i];
  case SEDP_NN_INT8: return ((const gint8 *) p)[i];
  case SEDP_NN_UINT8:
  case SEDP_NN_BOOL: return ((const guint8 *) p)[i];
  default: return 0;
  }
}

static gint64
load_as_int (SedpNnDType t, gconstpointer p, gint64 i)
{
  if (t == SEDP_NN_INT64)
    return ((const gint64 *) p)[i];
  double v = load_as_double (t, p, i);
  return isfinite (v) ? (gint64) v : 0;
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
      ((float *) y)[i] = p->from == SEDP_NN_INT64 ? (float) ((const gint64 *) x)[i] : (float) load_as_double (p->from, x, i);
      break;
    case SEDP_NN_DOUBLE:
      ((double *) y)[i] = p->from == SEDP_NN_INT64 ? (double) ((const gint64 *) x)[i] : load_as_double (p->from, x, i);
      break;
    case SEDP_NN_INT64: ((gint64 *) y)[i] = load_as_int (p->from, x, i); break;
    case SEDP_NN_INT32: ((gint32 *) y)[i] = (gint32) load_as_int (p->from, x, i); break;
    case SEDP_NN_INT8: ((gint8 *) y)[i] = (gint8) load_as_int (p->from, x, i); break;
    case SEDP_NN_UINT8: ((guint8 *) y)[i] = (guint8) load_as_int (p->from, x, i); break;
    case SEDP_NN_BOOL:
      ((guint8 *) y)[i] = p->from == SEDP_NN_INT64 ? ((const gint64 *) x)[i] != 0 : load_as_double (p->from, x, i) != 0;
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
  SedpNnDType to = (SedpNnDType) nn_attr_int (c->node, "to", 0);
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
  c->step->kernel = "cast";
  return TRUE;
}
