/* sedp — operators that work along one axis or with indices: ArgMax and ArgMin, TopK, CumSum,
 * GatherElements, OneHot and Trilu. */
#include "ops.h"

#include <math.h>

/* The axis @a of @x (negative counted from the end) and the lanes along it. */
static gboolean
axis_lanes (OpCtx *c, const Value *x, gint64 a, gint64 *axis, AxisLanes *l, GError **error)
{
  *axis = nn_norm_axis (a, x->rank);
  if (*axis < 0 || *axis >= x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "axis %" G_GINT64_FORMAT " out of range for rank %d", a, x->rank);
    return FALSE;
  }
  l->outer = nn_numel ((int) *axis, x->dims);
  l->len = x->dims[*axis];
  l->inner = nn_numel (x->rank - (int) *axis - 1, x->dims + *axis + 1);
  return TRUE;
}

/* Input 0 must be float or int64. */
static gboolean
float_or_int64 (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x->dtype == SEDP_NN_FLOAT || x->dtype == SEDP_NN_INT64)
    return TRUE;
  nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                 "input of type %s: takes float or int64", sedp_nn_dtype_name (x->dtype));
  return FALSE;
}

/* A constant input of one integer (int64 or int32), into @out. */
static gboolean
const_int (OpCtx *c, guint k, const char *what, gint64 *out, GError **error)
{
  g_autofree gint64 *v = NULL;
  guint n = 0;
  if (!nn_const_ints (c, k, &v, &n, error))
    return FALSE;
  if (n != 1) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "%s must have one element, has %u", what,
                   n);
    return FALSE;
  }
  *out = v[0];
  return TRUE;
}

/* ---- ArgMax, ArgMin: the index of the first (or last) extreme along the axis; NaN is the
 * extreme of both, as numpy ---- */

static inline gboolean
arg_better_f (const ArgParams *p, float v, float b)
{
  if (p->last)
    return (p->max ? v >= b : v <= b) || isnan (v);
  return (p->max ? v > b : v < b) || (isnan (v) && !isnan (b));
}

static inline gboolean
arg_better_i (const ArgParams *p, gint64 v, gint64 b)
{
  return p->last ? (p->max ? v >= b : v <= b) : (p->max ? v > b : v < b);
}

#define ARG_LOOP(T, BETTER)                                                                     \
  NN_HOT static void arg_##T (const ArgParams *p, const T *x, gint64 *y)                        \
  {                                                                                             \
    const AxisLanes *l = &p->l;                                                                 \
    for (gint64 o = 0; o < l->outer; o++)                                                       \
      for (gint64 i = 0; i < l->inner; i++) {                                                   \
        const T *px = x + o * l->len * l->inner + i;                                            \
        gint64 best = 0;                                                                        \
        for (gint64 k = 1; k < l->len; k++)                                                     \
          if (BETTER (p, px[k * l->inner], px[best * l->inner]))                                \
            best = k;                                                                           \
        y[o * l->inner + i] = best;                                                             \
      }                                                                                         \
  }

ARG_LOOP (float, arg_better_f)
ARG_LOOP (gint64, arg_better_i)

static gboolean
kernel_arg (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const ArgParams *p = s->params;
  if (p->int64)
    arg_gint64 (p, ptrs[s->in[0]], ptrs[s->out[0]]);
  else
    arg_float (p, ptrs[s->in[0]], ptrs[s->out[0]]);
  return TRUE;
}

/* X's shape with the axis set to @n (or dropped, when @n is negative). */
static void
shape_along (const Value *x, gint64 axis, gint64 n, int *rank, gint64 *dims)
{
  *rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (i != axis || n >= 0)
      dims[(*rank)++] = i == axis ? n : x->dims[i];
}

gboolean
nn_prepare_argmax (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  ArgParams *p = g_new0 (ArgParams, 1);
  c->step->params = p;
  gint64 axis;
  if (!float_or_int64 (c, error) ||
      !axis_lanes (c, x, nn_attr_int (c->node, "axis", 0), &axis, &p->l, error))
    return FALSE;
  if (p->l.len == 0) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "axis %" G_GINT64_FORMAT " has length 0: no %s", axis, c->node->op_type);
    return FALSE;
  }
  p->max = strcmp (c->node->op_type, "ArgMax") == 0;
  p->last = nn_attr_int (c->node, "select_last_index", 0) != 0;
  p->int64 = x->dtype == SEDP_NN_INT64;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  shape_along (x, axis, nn_attr_int (c->node, "keepdims", 1) ? 1 : -1, &rank, dims);
  nn_set_shape (op_out (c, 0), SEDP_NN_INT64, rank, dims);
  c->step->fn = kernel_arg;
  c->step->id = NN_KERNEL_ARG;
  c->step->kernel = p->max ? "argmax" : "argmin";
  c->step->flops = (double) x->numel;
  return TRUE;
}

/* ---- TopK: the k largest (or smallest) along the axis, sorted, ties to the lower index; NaN
 * after every number ---- */

/* One lane being sorted: its first element, the stride, the order. */
typedef struct {
  gconstpointer x;
  gint64 stride;
  gboolean largest, int64;
} TopKLane;

/* The order of two indices of a lane: by value (NaN last), then by index. */
static gint
topk_cmp (gconstpointer a, gconstpointer b, gpointer data)
{
  const TopKLane *o = data;
  gint64 i = *(const gint64 *) a, j = *(const gint64 *) b;
  if (o->int64) {
    gint64 u = ((const gint64 *) o->x)[i * o->stride], v = ((const gint64 *) o->x)[j * o->stride];
    if (u != v)
      return (o->largest ? u > v : u < v) ? -1 : 1;
  } else {
    float u = ((const float *) o->x)[i * o->stride], v = ((const float *) o->x)[j * o->stride];
    if (isnan (u) != isnan (v))
      return isnan (u) ? 1 : -1;
    if (u != v && !isnan (u))
      return (o->largest ? u > v : u < v) ? -1 : 1;
  }
  return i < j ? -1 : i > j;
}

static gboolean
kernel_topk (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const TopKParams *p = s->params;
  const AxisLanes *l = &p->l;
  gint64 *order = ptrs[s->out[p->scratch]], *yi = ptrs[s->out[1]];
  gsize es = p->int64 ? 8 : 4;
  for (gint64 o = 0; o < l->outer; o++)
    for (gint64 i = 0; i < l->inner; i++) {
      gint64 in_off = o * l->len * l->inner + i, out_off = o * p->k * l->inner + i;
      const guint8 *x = (const guint8 *) ptrs[s->in[0]] + in_off * es;
      TopKLane lane = {x, l->inner, p->largest, p->int64};
      for (gint64 k = 0; k < l->len; k++)
        order[k] = k;
      g_qsort_with_data (order, (gint) l->len, sizeof (gint64), topk_cmp, &lane);
      for (gint64 k = 0; k < p->k; k++) {
        gint64 dst = out_off + k * l->inner;
        memcpy ((guint8 *) ptrs[s->out[0]] + dst * es, x + order[k] * l->inner * es, es);
        yi[dst] = order[k];
      }
    }
  return TRUE;
}

gboolean
nn_prepare_topk (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  TopKParams *p = g_new0 (TopKParams, 1);
  c->step->params = p;
  gint64 axis;
  if (!float_or_int64 (c, error) || !const_int (c, 1, "K", &p->k, error) ||
      !axis_lanes (c, x, nn_attr_int (c->node, "axis", -1), &axis, &p->l, error))
    return FALSE;
  if (p->k < 0 || p->k > p->l.len || p->l.len > G_MAXINT) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "K = %" G_GINT64_FORMAT " for an axis of length %" G_GINT64_FORMAT, p->k,
                   p->l.len);
    return FALSE;
  }
  p->largest = nn_attr_int (c->node, "largest", 1) != 0;
  p->int64 = x->dtype == SEDP_NN_INT64;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  shape_along (x, axis, p->k, &rank, dims);
  nn_set_shape (op_out (c, 0), x->dtype, rank, dims);
  nn_set_shape (op_out (c, 1), SEDP_NN_INT64, rank, dims);
  p->scratch = nn_add_scratch (c, 2 * MAX (p->l.len, 1)); /* len int64 */
  c->step->fn = kernel_topk;
  c->step->id = NN_KERNEL_TOPK;
  c->step->kernel = "topk";
  c->step->flops = (double) x->numel * MAX (1.0, log2 ((double) MAX (p->l.len, 1)));
  return TRUE;
}

/* ---- CumSum: running sums along the axis, inclusive or exclusive, forward or reverse ---- */

#define CUMSUM_LOOP(T, A)                                                                       \
  NN_HOT static void cumsum_##T (const CumSumParams *p, const T *x, T *y)                       \
  {                                                                                             \
    const AxisLanes *l = &p->l;                                                                 \
    for (gint64 o = 0; o < l->outer; o++)                                                       \
      for (gint64 i = 0; i < l->inner; i++) {                                                   \
        gint64 off = o * l->len * l->inner + i;                                                 \
        A acc = 0;                                                                              \
        for (gint64 n = 0; n < l->len; n++) {                                                   \
          gint64 at = off + (p->reverse ? l->len - 1 - n : n) * l->inner;                       \
          A v = (A) x[at];                                                                      \
          y[at] = (T) (p->exclusive ? acc : acc + v);                                           \
          acc += v;                                                                             \
        }                                                                                       \
      }                                                                                         \
  }

CUMSUM_LOOP (float, float)
CUMSUM_LOOP (gint64, guint64) /* int64 sums wrap around (two's complement), as numpy's */

static gboolean
kernel_cumsum (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const CumSumParams *p = s->params;
  if (p->int64)
    cumsum_gint64 (p, ptrs[s->in[0]], ptrs[s->out[0]]);
  else
    cumsum_float (p, ptrs[s->in[0]], ptrs[s->out[0]]);
  return TRUE;
}

gboolean
nn_prepare_cumsum (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  CumSumParams *p = g_new0 (CumSumParams, 1);
  c->step->params = p;
  gint64 a, axis;
  if (!float_or_int64 (c, error) || !const_int (c, 1, "axis", &a, error) ||
      !axis_lanes (c, x, a, &axis, &p->l, error))
    return FALSE;
  p->exclusive = nn_attr_int (c->node, "exclusive", 0) != 0;
  p->reverse = nn_attr_int (c->node, "reverse", 0) != 0;
  p->int64 = x->dtype == SEDP_NN_INT64;
  nn_set_shape (op_out (c, 0), x->dtype, x->rank, x->dims);
  c->step->fn = kernel_cumsum;
  c->step->id = NN_KERNEL_CUMSUM;
  c->step->kernel = "cumsum";
  c->step->flops = (double) x->numel;
  return TRUE;
}

/* ---- GatherElements: out[idx] = data[idx with idx[axis] = indices[idx]] ---- */

static gboolean
kernel_gather_elements (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const GatherElementsParams *p = s->params;
  gconstpointer ix = ptrs[s->in[1]];
  gint64 idx[SEDP_NN_MAX_RANK] = {0}, off = 0;
  for (gint64 n = 0; n < p->numel; n++) {
    gint64 v = p->idx64 ? ((const gint64 *) ix)[n] : ((const gint32 *) ix)[n];
    gint64 k = v < 0 ? v + p->axis_len : v;
    if (k < 0 || k >= p->axis_len) {
      nn_node_error (error, SEDP_NN_ERROR_INPUT, s->node,
                     "index %" G_GINT64_FORMAT " out of range [-%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                     v, p->axis_len, p->axis_len);
      return FALSE;
    }
    memcpy ((guint8 *) ptrs[s->out[0]] + n * p->esize,
            (const guint8 *) ptrs[s->in[0]] + (off + k * p->axis_stride) * p->esize, p->esize);
    for (int d = p->rank - 1; d >= 0; d--) {
      idx[d]++;
      off += p->strides[d];
      if (idx[d] < p->dims[d])
        break;
      off -= p->strides[d] * idx[d];
      idx[d] = 0;
    }
  }
  return TRUE;
}

/* Indices of data's rank, no longer than data on the other axes. */
static gboolean
gather_elements_check (OpCtx *c, const Value *x, const Value *ix, gint64 axis, GError **error)
{
  gboolean ok = ix->rank == x->rank;
  for (int d = 0; ok && d < x->rank; d++)
    ok = d == axis || ix->dims[d] <= x->dims[d];
  if (!ok) {
    g_autofree char *a = sedp_nn_shape_to_string (x->rank, x->dims);
    g_autofree char *b = sedp_nn_shape_to_string (ix->rank, ix->dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "indices of shape %s for data of shape %s (the same rank, no longer off the axis)",
                   b, a);
  }
  return ok;
}

gboolean
nn_prepare_gather_elements (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0), *ix = op_in (c, 1);
  if (ix->dtype != SEDP_NN_INT64 && ix->dtype != SEDP_NN_INT32) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "indices of type %s: takes int64 or int32", sedp_nn_dtype_name (ix->dtype));
    return FALSE;
  }
  GatherElementsParams *p = g_new0 (GatherElementsParams, 1);
  c->step->params = p;
  gint64 axis;
  AxisLanes l;
  if (!axis_lanes (c, x, nn_attr_int (c->node, "axis", 0), &axis, &l, error) ||
      !gather_elements_check (c, x, ix, axis, error))
    return FALSE;
  p->rank = x->rank;
  p->axis = (int) axis;
  memcpy (p->dims, ix->dims, sizeof p->dims);
  nn_contiguous_strides (x->rank, x->dims, p->strides);
  p->axis_stride = p->strides[axis];
  p->strides[axis] = 0;
  p->axis_len = l.len;
  p->numel = ix->numel;
  p->esize = sedp_nn_dtype_size (x->dtype);
  p->idx64 = ix->dtype == SEDP_NN_INT64;
  nn_set_shape (op_out (c, 0), x->dtype, ix->rank, ix->dims);
  c->step->fn = kernel_gather_elements;
  c->step->id = NN_KERNEL_GATHER_ELEMENTS;
  c->step->kernel = "gather_elements";
  return TRUE;
}

/* ---- OneHot: indices → [..., depth at axis, ...] of values[1] at the index, values[0]
 * elsewhere; negative indices counted from depth, those outside [-depth, depth) give a row of
 * values[0] ---- */

static gboolean
kernel_onehot (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const OneHotParams *p = s->params;
  guint8 *y = ptrs[s->out[0]];
  gint64 n = p->outer * p->depth * p->inner;
  for (gint64 i = 0; i < n; i++)
    memcpy (y + i * p->esize, p->off, p->esize);
  for (gint64 o = 0; o < p->outer; o++)
    for (gint64 i = 0; i < p->inner; i++) {
      double v = nn_load_double (p->idtype, ptrs[s->in[0]], o * p->inner + i);
      /* 2³² or more selects nothing (depth ≤ 2³⁰), NaN and ±inf too; the OpenCL kernel's rule */
      gint64 k = fabs (v) < 0x1p32 ? (gint64) v : -1 - p->depth;
      k = k < 0 ? k + p->depth : k;
      if (k >= 0 && k < p->depth)
        memcpy (y + ((o * p->depth + k) * p->inner + i) * p->esize, p->on, p->esize);
    }
  return TRUE;
}

/* depth: a constant scalar of any numeric type, at least 1. */
static gboolean
onehot_depth (OpCtx *c, gint64 *depth, GError **error)
{
  Value *d = op_in (c, 1);
  if (!nn_require_const (c, 1, error))
    return FALSE;
  gboolean one = d->numel == 1 && sedp_nn_dtype_size (d->dtype) != 0;
  double v = one ? nn_load_double (d->dtype, d->data, 0) : 0;
  if (!(v >= 1 && v <= (double) NN_MAX_ELEMENTS)) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "depth must be one number from 1 to 2^30, is %s of %" G_GINT64_FORMAT
                   " elements (first %g)",
                   sedp_nn_dtype_name (d->dtype), d->numel, v);
    return FALSE;
  }
  *depth = (gint64) v;
  return TRUE;
}

gboolean
nn_prepare_onehot (OpCtx *c, GError **error)
{
  Value *ix = op_in (c, 0), *vals = op_in (c, 2);
  OneHotParams *p = g_new0 (OneHotParams, 1);
  c->step->params = p;
  if (!onehot_depth (c, &p->depth, error) || !nn_require_const (c, 2, error))
    return FALSE;
  p->esize = sedp_nn_dtype_size (vals->dtype);
  if (vals->numel != 2 || p->esize == 0 || p->esize > 8 || sedp_nn_dtype_size (ix->dtype) == 0) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "values must be [off, on], is %s of %" G_GINT64_FORMAT " elements; indices %s",
                   sedp_nn_dtype_name (vals->dtype), vals->numel, sedp_nn_dtype_name (ix->dtype));
    return FALSE;
  }
  gint64 a = nn_attr_int (c->node, "axis", -1), axis = nn_norm_axis (a, ix->rank + 1);
  if (axis < 0 || axis > ix->rank || ix->rank >= SEDP_NN_MAX_RANK) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "axis %" G_GINT64_FORMAT " out of range for an output of rank %d", a, ix->rank + 1);
    return FALSE;
  }
  memcpy (p->off, vals->data, p->esize);
  memcpy (p->on, (const guint8 *) vals->data + p->esize, p->esize);
  p->idtype = ix->dtype;
  p->outer = nn_numel ((int) axis, ix->dims);
  p->inner = nn_numel (ix->rank - (int) axis, ix->dims + axis);
  gint64 dims[SEDP_NN_MAX_RANK];
  for (int i = 0, r = 0; i <= ix->rank; i++)
    dims[i] = i == axis ? p->depth : ix->dims[r++];
  nn_set_shape (op_out (c, 0), vals->dtype, ix->rank + 1, dims);
  c->step->fn = kernel_onehot;
  c->step->id = NN_KERNEL_ONEHOT;
  c->step->kernel = "onehot";
  return TRUE;
}

/* ---- Trilu: the upper (j - i ≥ k) or lower (j - i ≤ k) triangle of the last two axes, zeros
 * elsewhere ---- */

static gboolean
kernel_trilu (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const TriluParams *p = s->params;
  const guint8 *x = ptrs[s->in[0]];
  guint8 *y = ptrs[s->out[0]];
  gsize row = (gsize) p->cols * p->esize;
  for (gint64 m = 0; m < p->batch * p->rows; m++) {
    gint64 i = m % p->rows;
    /* upper: columns [i + k, cols) kept; lower: [0, i + k + 1) kept */
    gint64 cut = CLAMP (p->upper ? i + p->k : i + p->k + 1, 0, p->cols);
    gsize at = (gsize) cut * p->esize;
    const guint8 *src = x + m * row;
    guint8 *dst = y + m * row;
    if (p->upper) {
      memset (dst, 0, at);
      memcpy (dst + at, src + at, row - at);
    } else {
      memcpy (dst, src, at);
      memset (dst + at, 0, row - at);
    }
  }
  return TRUE;
}

gboolean
nn_prepare_trilu (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  TriluParams *p = g_new0 (TriluParams, 1);
  c->step->params = p;
  if (op_in (c, 1) && !const_int (c, 1, "k", &p->k, error))
    return FALSE;
  if (x->rank < 2) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "input of rank %d: needs rank 2 or more",
                   x->rank);
    return FALSE;
  }
  p->rows = x->dims[x->rank - 2];
  p->cols = x->dims[x->rank - 1];
  p->batch = nn_numel (x->rank - 2, x->dims);
  p->upper = nn_attr_int (c->node, "upper", 1) != 0;
  p->esize = sedp_nn_dtype_size (x->dtype);
  p->k = CLAMP (p->k, -G_MAXINT32, G_MAXINT32); /* beyond the matrix either way: all or nothing */
  nn_set_shape (op_out (c, 0), x->dtype, x->rank, x->dims);
  c->step->fn = kernel_trilu;
  c->step->id = NN_KERNEL_TRILU;
  c->step->kernel = "trilu";
  return TRUE;
}
