/* sedp — shape and data-movement operators: Split, Tile, and the values folded at plan time
 * ConstantOfShape and Range. Any element type, except Range (float, int64, int32). */
#include "ops.h"

#include <math.h>

/* ---- Split ---- */

static gboolean
kernel_split (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const SplitParams *p = s->params;
  const guint8 *x = ptrs[s->in[0]];
  for (gint64 o = 0; o < p->outer; o++) {
    const guint8 *src = x + (gsize) (o * p->total) * p->esize;
    for (guint k = 0; k < p->n; k++) {
      gsize bytes = (gsize) p->chunk[k] * p->esize;
      if (s->out[k] >= 0)
        memcpy ((guint8 *) ptrs[s->out[k]] + (gsize) o * bytes, src, bytes);
      src += bytes;
    }
  }
  return TRUE;
}

/* The sizes given: the `split` attribute before opset 13, the optional input from 13. */
static gboolean
split_given (OpCtx *c, gint64 **given, guint *n, GError **error)
{
  *given = NULL;
  *n = 0;
  if (!nn_check_param_form (c, "split", 1, 13, error))
    return FALSE;
  if (c->opset >= 13)
    return op_in (c, 1) == NULL || nn_const_ints (c, 1, given, n, error);
  const SedpNnAttr *a = sedp_nn_node_attr (c->node, "split");
  if (a) {
    *n = a->n_ints;
    *given = g_memdup2 (a->ints, sizeof (gint64) * MAX (*n, 1));
  }
  return TRUE;
}

/* Checks sizes given for @n outputs against the dimension @dim. */
static gboolean
split_check (OpCtx *c, const gint64 *given, guint ng, guint n, gint64 dim, GError **error)
{
  if (ng != n) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "split has %u sizes for %u outputs", ng, n);
    return FALSE;
  }
  gint64 sum = 0;
  for (guint k = 0; k < n; k++)
    if (given[k] < 0 || __builtin_add_overflow (sum, given[k], &sum)) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "split size %" G_GINT64_FORMAT " is negative",
                     given[k]);
      return FALSE;
    }
  if (sum != dim) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "split sizes sum to %" G_GINT64_FORMAT ", the dimension is %" G_GINT64_FORMAT, sum, dim);
    return FALSE;
  }
  return TRUE;
}

/* The size of each of the node's outputs along the axis of length @dim: given, or from 18
 * `num_outputs` chunks of ceil(dim / n) (the last smaller), or else n equal parts. */
static gboolean
split_sizes (OpCtx *c, gint64 dim, gint64 *sizes, GError **error)
{
  guint n = c->node->n_outputs, ng = 0;
  g_autofree gint64 *given = NULL;
  const SedpNnAttr *num = sedp_nn_node_attr (c->node, "num_outputs");
  if (!split_given (c, &given, &ng, error))
    return FALSE;
  if (num && (c->opset < 18 || given || num->i != (gint64) n)) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "num_outputs %" G_GINT64_FORMAT " with %u outputs, %s split sizes, opset %" G_GINT64_FORMAT
                   " (from 18, equal to the outputs and without split sizes)",
                   num->i, n, given ? "with" : "without", c->opset);
    return FALSE;
  }
  if (given) {
    if (!split_check (c, given, ng, n, dim, error))
      return FALSE;
    memcpy (sizes, given, sizeof (gint64) * n);
  } else if (num || dim % n == 0) {
    gint64 chunk = (dim + n - 1) / n;
    for (guint k = 0; k < n; k++)
      sizes[k] = CLAMP (dim - (gint64) k * chunk, 0, chunk);
  } else {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "cannot split a dimension of %" G_GINT64_FORMAT " into %u equal parts", dim, n);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_split (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  gint64 a = nn_attr_int (c->node, "axis", 0), axis = nn_norm_axis (a, x->rank);
  if (axis < 0 || axis >= x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "axis %" G_GINT64_FORMAT " out of range for rank %d", a, x->rank);
    return FALSE;
  }
  gint64 sizes[NN_MAX_OUT];
  if (!split_sizes (c, x->dims[axis], sizes, error))
    return FALSE;
  SplitParams *p = g_new0 (SplitParams, 1);
  c->step->params = p;
  gint64 inner = nn_numel (x->rank - (int) axis - 1, x->dims + axis + 1), dims[SEDP_NN_MAX_RANK];
  memcpy (dims, x->dims, sizeof dims);
  p->outer = nn_numel ((int) axis, x->dims);
  p->esize = sedp_nn_dtype_size (x->dtype);
  p->n = c->node->n_outputs;
  for (guint k = 0; k < p->n; k++) {
    p->chunk[k] = sizes[k] * inner;
    p->total += p->chunk[k];
    dims[axis] = sizes[k];
    if (c->step->out[k] >= 0)
      nn_set_shape (op_out (c, k), x->dtype, x->rank, dims);
  }
  c->step->fn = kernel_split;
  c->step->id = NN_KERNEL_SPLIT;
  c->step->kernel = "split";
  return TRUE;
}

/* ---- Tile: a strided copy of X viewed as [r0, d0, r1, d1, …] with stride 0 on each r ---- */

static gboolean
kernel_tile (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  nn_strided_copy (s->params, ptrs[s->in[0]], ptrs[s->out[0]]);
  return TRUE;
}

/* Appends an axis to @p, merged into the previous one when the two are one run of memory
 * (axes of 1 dropped). FALSE when the copy would need more than SEDP_NN_MAX_RANK axes. */
static gboolean
copy_push (CopyParams *p, gint64 dim, gint64 stride)
{
  if (dim == 1)
    return TRUE;
  if (p->rank > 0 && p->strides[p->rank - 1] == stride * dim && dim != 0) {
    p->dims[p->rank - 1] *= dim;
    p->strides[p->rank - 1] = stride;
    return TRUE;
  }
  if (p->rank == SEDP_NN_MAX_RANK)
    return FALSE;
  p->dims[p->rank] = dim;
  p->strides[p->rank++] = stride;
  return TRUE;
}

gboolean
nn_prepare_tile (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *rep = NULL;
  guint n = 0;
  if (!nn_const_ints (c, 1, &rep, &n, error))
    return FALSE;
  if (n != (guint) x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "repeats has %u values for rank %d", n, x->rank);
    return FALSE;
  }
  CopyParams *p = g_new0 (CopyParams, 1);
  c->step->params = p;
  gint64 st[SEDP_NN_MAX_RANK], dims[SEDP_NN_MAX_RANK];
  nn_contiguous_strides (x->rank, x->dims, st);
  gboolean fits = TRUE;
  for (int i = 0; i < x->rank; i++) {
    if (rep[i] < 0 || __builtin_mul_overflow (x->dims[i], rep[i], &dims[i])) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "repeats[%d] = %" G_GINT64_FORMAT
                     " for a dimension of %" G_GINT64_FORMAT, i, rep[i], x->dims[i]);
      return FALSE;
    }
    fits = fits && copy_push (p, rep[i], 0) && copy_push (p, x->dims[i], st[i]);
  }
  if (!fits) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "tiling rank %d needs more than %d axes",
                   x->rank, SEDP_NN_MAX_RANK);
    return FALSE;
  }
  p->numel = nn_numel (x->rank, dims);
  p->esize = sedp_nn_dtype_size (x->dtype);
  nn_set_shape (op_out (c, 0), x->dtype, x->rank, dims);
  c->step->fn = kernel_tile;
  c->step->id = NN_KERNEL_TILE;
  c->step->kernel = "tile";
  return TRUE;
}

/* ---- values folded at plan time ---- */

/* Makes @v a constant owning @data. */
static void
set_folded (OpCtx *c, Value *v, SedpNnDType dtype, int rank, const gint64 *dims, gpointer data)
{
  nn_set_shape (v, dtype, rank, dims);
  v->kind = VALUE_CONST;
  v->data = data;
  v->owned_data = TRUE;
  c->step->fn = NULL;
  c->step->kernel = "constant";
}

/* Refuses a shape with a negative dimension or too many elements, before anything is allocated. */
static gboolean
check_folded_shape (OpCtx *c, guint n, const gint64 *dims, GError **error)
{
  g_autofree char *s = sedp_nn_shape_to_string ((int) MIN (n, SEDP_NN_MAX_RANK), dims);
  if (n > SEDP_NN_MAX_RANK) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "rank %u (at most %d)", n, SEDP_NN_MAX_RANK);
    return FALSE;
  }
  for (guint i = 0; i < n; i++)
    if (dims[i] < 0) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "negative dimension in %s", s);
      return FALSE;
    }
  if (nn_numel ((int) n, dims) > NN_MAX_ELEMENTS) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "shape %s has more than %" G_GINT64_FORMAT
                   " elements", s, NN_MAX_ELEMENTS);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_constant_of_shape (OpCtx *c, GError **error)
{
  g_autofree gint64 *shape = NULL;
  guint n = 0;
  if (!nn_const_ints (c, 0, &shape, &n, error) || !check_folded_shape (c, n, shape, error))
    return FALSE;
  const SedpNnAttr *a = sedp_nn_node_attr (c->node, "value");
  static const float zero = 0.0f;
  if (a && (a->type != SEDP_NN_ATTR_TENSOR || a->t == NULL || sedp_nn_tensor_numel (a->t) != 1 ||
            sedp_nn_dtype_size (a->t->dtype) == 0)) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "value must be a tensor of one element");
    return FALSE;
  }
  SedpNnDType dtype = a ? a->t->dtype : SEDP_NN_FLOAT;
  const guint8 *value = a ? a->t->data : (const guint8 *) &zero;
  gsize es = sedp_nn_dtype_size (dtype);
  gint64 numel = nn_numel ((int) n, shape);
  guint8 *data = g_malloc (MAX ((gsize) numel * es, 1));
  for (gint64 i = 0; i < numel; i++)
    memcpy (data + (gsize) i * es, value, es);
  set_folded (c, op_out (c, 0), dtype, (int) n, shape, data);
  return TRUE;
}

/* Range's scalar input @k as a double and, for integer types, exactly as @i. */
static gboolean
range_scalar (OpCtx *c, guint k, SedpNnDType dtype, double *d, gint64 *i, GError **error)
{
  static const char *const names[] = {"start", "limit", "delta"};
  const Value *v = op_in (c, k);
  if (!nn_require_const (c, k, error)) /* a graph input: the plan is specialised on it */
    return FALSE;
  if (v->numel != 1 || v->dtype != dtype) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "%s must be a scalar of the type of start (%s), is %s with %" G_GINT64_FORMAT
                   " elements", names[k], sedp_nn_dtype_name (dtype), sedp_nn_dtype_name (v->dtype),
                   v->numel);
    return FALSE;
  }
  *i = dtype == SEDP_NN_INT64 ? *(const gint64 *) v->data
       : dtype == SEDP_NN_INT32 ? *(const gint32 *) v->data : 0;
  *d = dtype == SEDP_NN_FLOAT ? *(const float *) v->data : (double) *i;
  return TRUE;
}

/* The number of elements, max(ceil((limit - start) / delta), 0), exactly for integers. */
static gboolean
range_count (OpCtx *c, gboolean is_float, const double *d, const gint64 *i, gint64 *n, GError **error)
{
  double nd = is_float ? ceil ((d[1] - d[0]) / d[2]) : 0;
  gint64 span;
  if (is_float ? d[2] == 0 || !(nd < (double) NN_MAX_ELEMENTS) : i[2] == 0 ||
                 __builtin_sub_overflow (i[1], i[0], &span)) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "start %g, limit %g, delta %g: a zero delta or too many elements", d[0], d[1], d[2]);
    return FALSE;
  }
  if (is_float)
    *n = nd > 0 ? (gint64) nd : 0;
  else
    *n = (span > 0) != (i[2] > 0) || span == 0 ? 0 : span / i[2] + (span % i[2] != 0);
  if (*n > NN_MAX_ELEMENTS) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "%" G_GINT64_FORMAT " elements (at most %"
                   G_GINT64_FORMAT ")", *n, NN_MAX_ELEMENTS);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_range (OpCtx *c, GError **error)
{
  SedpNnDType dtype = op_in (c, 0)->dtype;
  if (dtype != SEDP_NN_FLOAT && dtype != SEDP_NN_INT64 && dtype != SEDP_NN_INT32) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs float, int64 or int32, got %s",
                   sedp_nn_dtype_name (dtype));
    return FALSE;
  }
  double d[3];
  gint64 i[3], n;
  for (guint k = 0; k < 3; k++)
    if (!range_scalar (c, k, dtype, &d[k], &i[k], error))
      return FALSE;
  if (!range_count (c, dtype == SEDP_NN_FLOAT, d, i, &n, error))
    return FALSE;
  gpointer data = g_malloc (MAX ((gsize) n * sedp_nn_dtype_size (dtype), 1));
  for (gint64 k = 0; k < n; k++)
    if (dtype == SEDP_NN_FLOAT)
      ((float *) data)[k] = (float) (d[0] + (double) k * d[2]);
    else if (dtype == SEDP_NN_INT64)
      ((gint64 *) data)[k] = i[0] + k * i[2];
    else
      ((gint32 *) data)[k] = (gint32) (i[0] + k * i[2]);
  set_folded (c, op_out (c, 0), dtype, 1, &n, data);
  return TRUE;
}
