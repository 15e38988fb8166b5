/* sedp — tensor operators: Concat, Gather (and the fused embedding bag), the views (Reshape,
 * Flatten, Squeeze, Unsqueeze, Identity), Transpose, Slice, Expand, the reductions (ReduceSum,
 * Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp), and the metadata operators folded
 * at plan time (Constant, Shape, Size). */
#include "ops.h"

#include <math.h>

/* ---- strided copy: out[idx] = src[base + Σ idx[d] * stride[d]] ---- */

void
nn_strided_copy (const CopyParams *p, const guint8 *src, guint8 *dst)
{
  if (p->numel == 0)
    return;
  int r = p->rank;
  if (r == 0) {
    memcpy (dst, src + p->base * p->esize, p->esize);
    return;
  }
  gint64 inner = p->dims[r - 1], is = p->strides[r - 1], outer = p->numel / inner;
  gint64 idx[SEDP_NN_MAX_RANK] = {0}, off = p->base;
  gsize es = p->esize;
  for (gint64 o = 0; o < outer; o++) {
    guint8 *d = dst + (gsize) (o * inner) * es;
    if (is == 1) {
      memcpy (d, src + off * es, (gsize) inner * es);
    } else if (es == 4) {
      const guint32 *s = (const guint32 *) src + off;
      for (gint64 i = 0; i < inner; i++)
        ((guint32 *) d)[i] = s[i * is];
    } else if (es == 8) {
      const guint64 *s = (const guint64 *) src + off;
      for (gint64 i = 0; i < inner; i++)
        ((guint64 *) d)[i] = s[i * is];
    } else {
      for (gint64 i = 0; i < inner; i++)
        memcpy (d + i * es, src + (off + i * is) * es, es);
    }
    for (int k = r - 2; k >= 0; k--) {
      idx[k]++;
      off += p->strides[k];
      if (idx[k] < p->dims[k])
        break;
      off -= p->strides[k] * idx[k];
      idx[k] = 0;
    }
  }
}

static gboolean
kernel_strided_copy (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  nn_strided_copy (s->params, ptrs[s->in[0]], ptrs[s->out[0]]);
  return TRUE;
}

void
nn_contiguous_strides (int rank, const gint64 *dims, gint64 *strides)
{
  gint64 st = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= dims[i];
  }
}

/* ---- views: the output is the input's bytes with another shape ---- */

static gboolean
make_view (OpCtx *c, int rank, const gint64 *dims, GError **error)
{
  Value *x = op_in (c, 0), *y = op_out (c, 0);
  if (nn_numel (rank, dims) != x->numel) {
    g_autofree char *a = sedp_nn_shape_to_string (x->rank, x->dims);
    g_autofree char *b = sedp_nn_shape_to_string (rank, dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "cannot view %s as %s", a, b);
    return FALSE;
  }
  nn_set_shape (y, x->dtype, rank, dims);
  y->kind = VALUE_ALIAS;
  y->alias_of = c->step->in[0];
  c->step->fn = NULL; /* nothing to run */
  c->step->kernel = "view";
  return TRUE;
}

/* Dropout is the identity in inference: training_mode absent or false, or a ratio of 0 (ONNX:
 * nothing is dropped). Training with a ratio above 0 drops at random and is refused. */
static gboolean
dropout_is_identity (OpCtx *c, GError **error)
{
  Value *ratio = op_in (c, 1), *training = op_in (c, 2);
  if (training == NULL)
    return TRUE;
  if (!nn_require_const (c, 2, error) || (ratio && !nn_require_const (c, 1, error)))
    return FALSE;
  if (training->numel != 1 || training->dtype != SEDP_NN_BOOL) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "training_mode must be a bool scalar");
    return FALSE;
  }
  gboolean train = *(const guint8 *) training->data != 0;
  gboolean zero = ratio && ratio->numel == 1 && ratio->dtype == SEDP_NN_FLOAT &&
                  *(const float *) ratio->data == 0.0f;
  if (train && !zero) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "training_mode is true with a ratio above 0: dropout at random is training, not "
                   "inference (export the model in eval mode)");
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_identity (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x == NULL) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "needs an input");
    return FALSE;
  }
  if (!dropout_is_identity (c, error) || !make_view (c, x->rank, x->dims, error))
    return FALSE;
  if (c->node->n_outputs > 1 && c->node->outputs[1][0]) { /* Dropout's mask: nothing dropped */
    Value *mask = op_out (c, 1);
    nn_set_shape (mask, SEDP_NN_BOOL, x->rank, x->dims);
    mask->kind = VALUE_CONST;
    mask->data = g_malloc (MAX (mask->numel, 1));
    memset (mask->data, 1, mask->numel);
    mask->owned_data = TRUE;
  }
  return TRUE;
}

gboolean
nn_prepare_reshape (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *shape = NULL;
  guint n = 0;
  if (x == NULL || !nn_const_ints (c, 1, &shape, &n, error))
    return FALSE;
  if (n > SEDP_NN_MAX_RANK) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "rank %u", n);
    return FALSE;
  }
  gboolean allowzero = nn_attr_int (c->node, "allowzero", 0) != 0;
  gint64 dims[SEDP_NN_MAX_RANK], known = 1;
  int infer = -1;
  for (guint i = 0; i < n; i++) {
    dims[i] = shape[i];
    if (shape[i] == 0 && !allowzero) {
      if ((int) i >= x->rank) {
        nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "shape[%u] = 0 copies a missing dim", i);
        return FALSE;
      }
      dims[i] = x->dims[i];
    } else if (shape[i] == -1) {
      if (infer >= 0) {
        nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "two -1 in the shape");
        return FALSE;
      }
      infer = (int) i;
      continue;
    } else if (shape[i] < 0) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "negative dim %" G_GINT64_FORMAT, shape[i]);
      return FALSE;
    }
    if (__builtin_mul_overflow (known, dims[i], &known)) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "the shape overflows");
      return FALSE;
    }
  }
  if (infer >= 0) {
    if (known == 0 || x->numel % known != 0) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "cannot infer -1 for %" G_GINT64_FORMAT
                     " elements", x->numel);
      return FALSE;
    }
    dims[infer] = x->numel / known;
  }
  return make_view (c, (int) n, dims, error);
}

gboolean
nn_prepare_flatten (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  gint64 axis = nn_norm_axis (nn_attr_int (c->node, "axis", 1), x->rank);
  if (axis < 0 || axis > x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "axis out of range");
    return FALSE;
  }
  gint64 dims[2] = {nn_numel ((int) axis, x->dims), nn_numel (x->rank - (int) axis, x->dims + axis)};
  return make_view (c, 2, dims, error);
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13. */
static gboolean
check_axes_form (OpCtx *c, gint64 input_from, GError **error)
{
  return nn_check_param_form (c, "axes", 1, input_from, error);
}

static gboolean
read_axes (OpCtx *c, gint64 **axes, guint *n, GError **error)
{
  if (!check_axes_form (c, 13, error))
    return FALSE;
  if (c->opset >= 13) {
    if (op_in (c, 1) == NULL) {
      *axes = NULL;
      *n = 0;
      return TRUE;
    }
    return nn_const_ints (c, 1, axes, n, error);
  }
  const SedpNnAttr *a = sedp_nn_node_attr (c->node, "axes");
  *n = a ? a->n_ints : 0;
  *axes = g_memdup2 (a ? a->ints : NULL, sizeof (gint64) * MAX (*n, 1));
  return TRUE;
}

gboolean
nn_prepare_squeeze (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *axes = NULL;
  guint n = 0;
  if (!read_axes (c, &axes, &n, error))
    return FALSE;
  gboolean drop[SEDP_NN_MAX_RANK] = {0};
  for (guint i = 0; i < n; i++) {
    gint64 a = nn_norm_axis (axes[i], x->rank);
    if (a < 0 || a >= x->rank || x->dims[a] != 1) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "cannot squeeze axis %" G_GINT64_FORMAT,
                     axes[i]);
      return FALSE;
    }
    drop[a] = TRUE;
  }
  gint64 dims[SEDP_NN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!(n ? drop[i] : x->dims[i] == 1))
      dims[r++] = x->dims[i];
  return make_view (c, r, dims, error);
}

gboolean
nn_prepare_unsqueeze (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *axes = NULL;
  guint n = 0;
  if (!read_axes (c, &axes, &n, error))
    return FALSE;
  int r = x->rank + (int) n;
  if (r > SEDP_NN_MAX_RANK || n == 0) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "needs 1 to %d axes",
                   SEDP_NN_MAX_RANK - x->rank);
    return FALSE;
  }
  gboolean ins[SEDP_NN_MAX_RANK] = {0};
  for (guint i = 0; i < n; i++) {
    gint64 a = nn_norm_axis (axes[i], r);
    if (a < 0 || a >= r || ins[a]) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "bad axis %" G_GINT64_FORMAT, axes[i]);
      return FALSE;
    }
    ins[a] = TRUE;
  }
  gint64 dims[SEDP_NN_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    dims[i] = ins[i] ? 1 : x->dims[k++];
  return make_view (c, r, dims, error);
}

/* ---- Transpose ---- */

gboolean
nn_prepare_transpose (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  const SedpNnAttr *pa = sedp_nn_node_attr (c->node, "perm");
  gint64 perm[SEDP_NN_MAX_RANK];
  if (pa && pa->n_ints != (guint) x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "perm has %u axes for rank %d", pa->n_ints,
                   x->rank);
    return FALSE;
  }
  gboolean seen[SEDP_NN_MAX_RANK] = {0};
  for (int i = 0; i < x->rank; i++) {
    perm[i] = pa ? nn_norm_axis (pa->ints[i], x->rank) : x->rank - 1 - i;
    if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]]) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "perm is not a permutation");
      return FALSE;
    }
    seen[perm[i]] = TRUE;
  }
  CopyParams *p = g_new0 (CopyParams, 1);
  c->step->params = p;
  gint64 in_strides[SEDP_NN_MAX_RANK];
  nn_contiguous_strides (x->rank, x->dims, in_strides);
  p->rank = x->rank;
  for (int i = 0; i < x->rank; i++) {
    p->dims[i] = x->dims[perm[i]];
    p->strides[i] = in_strides[perm[i]];
  }
  p->numel = x->numel;
  p->esize = sedp_nn_dtype_size (x->dtype);
  nn_set_shape (op_out (c, 0), x->dtype, p->rank, p->dims);
  c->step->fn = kernel_strided_copy;
  c->step->id = NN_KERNEL_STRIDED_COPY;
  c->step->kernel = "transpose";
  return TRUE;
}

/* ---- Slice (opset ≥ 10: starts, ends, axes, steps are inputs) ---- */

gboolean
nn_prepare_slice (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  guint ns = 0, ne = 0, na = 0, nst = 0;
  if (!nn_const_ints (c, 1, &starts, &ns, error) || !nn_const_ints (c, 2, &ends, &ne, error))
    return FALSE;
  if (op_in (c, 3) && !nn_const_ints (c, 3, &axes, &na, error))
    return FALSE;
  if (op_in (c, 4) && !nn_const_ints (c, 4, &steps, &nst, error))
    return FALSE;
  if (ns != ne || (axes && na != ns) || (steps && nst != ns)) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "starts, ends, axes and steps differ in length");
    return FALSE;
  }
  gint64 start[SEDP_NN_MAX_RANK], step[SEDP_NN_MAX_RANK], count[SEDP_NN_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    start[i] = 0;
    step[i] = 1;
    count[i] = x->dims[i];
  }
  for (guint k = 0; k < ns; k++) {
    gint64 a = nn_norm_axis (axes ? axes[k] : (gint64) k, x->rank);
    gint64 st = steps ? steps[k] : 1, d = x->dims[a >= 0 && a < x->rank ? a : 0];
    if (a < 0 || a >= x->rank || st == 0) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "bad axis or zero step");
      return FALSE;
    }
    gint64 s = starts[k] < 0 ? starts[k] + d : starts[k];
    gint64 e = ends[k] < 0 ? ends[k] + d : ends[k];
    if (st > 0) {
      s = CLAMP (s, 0, d);
      e = CLAMP (e, 0, d);
      count[a] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = CLAMP (s, 0, d - 1);
      e = CLAMP (e, -1, d - 1);
      count[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    start[a] = s;
    step[a] = st;
  }
  CopyParams *p = g_new0 (CopyParams, 1);
  c->step->params = p;
  gint64 in_strides[SEDP_NN_MAX_RANK];
  nn_contiguous_strides (x->rank, x->dims, in_strides);
  p->rank = x->rank;
  for (int i = 0; i < x->rank; i++) {
    p->dims[i] = count[i];
    p->strides[i] = in_strides[i] * step[i];
    p->base += in_strides[i] * start[i];
  }
  p->numel = nn_numel (p->rank, p->dims);
  p->esize = sedp_nn_dtype_size (x->dtype);
  nn_set_shape (op_out (c, 0), x->dtype, p->rank, p->dims);
  c->step->fn = kernel_strided_copy;
  c->step->id = NN_KERNEL_STRIDED_COPY;
  c->step->kernel = "slice";
  return TRUE;
}

/* ---- Expand ---- */

gboolean
nn_prepare_expand (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  g_autofree gint64 *shape = NULL;
  guint n = 0;
  if (!nn_const_ints (c, 1, &shape, &n, error))
    return FALSE;
  CopyParams *p = g_new0 (CopyParams, 1);
  c->step->params = p;
  if (n > SEDP_NN_MAX_RANK || !nn_broadcast_shape (x->rank, x->dims, (int) n, shape, &p->rank, p->dims)) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "cannot expand to the given shape");
    return FALSE;
  }
  nn_broadcast_strides (x->rank, x->dims, p->rank, p->dims, p->strides);
  p->numel = nn_numel (p->rank, p->dims);
  p->esize = sedp_nn_dtype_size (x->dtype);
  nn_set_shape (op_out (c, 0), x->dtype, p->rank, p->dims);
  c->step->fn = kernel_strided_copy;
  c->step->id = NN_KERNEL_STRIDED_COPY;
  c->step->kernel = "expand";
  return TRUE;
}

/* ---- Concat ---- */

static gboolean
kernel_concat (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const ConcatParams *p = s->params;
  guint8 *y = ptrs[s->out[0]];
  for (gint64 o = 0; o < p->outer; o++) {
    guint8 *d = y + (gsize) (o * p->total) * p->esize;
    for (guint k = 0; k < p->n; k++) {
      gsize bytes = (gsize) p->chunk[k] * p->esize;
      memcpy (d, (const guint8 *) ptrs[s->in[k]] + (gsize) o * bytes, bytes);
      d += bytes;
    }
  }
  return TRUE;
}

gboolean
nn_prepare_concat (OpCtx *c, GError **error)
{
  Value *x0 = op_in (c, 0);
  if (x0 == NULL || c->step->n_in > NN_MAX_IN) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs 1 to %d inputs", NN_MAX_IN);
    return FALSE;
  }
  gint64 axis = nn_norm_axis (nn_attr_int (c->node, "axis", 0), x0->rank);
  if (axis < 0 || axis >= x0->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "axis out of range for rank %d", x0->rank);
    return FALSE;
  }
  ConcatParams *p = g_new0 (ConcatParams, 1);
  c->step->params = p;
  gint64 dims[SEDP_NN_MAX_RANK];
  memcpy (dims, x0->dims, sizeof dims);
  dims[axis] = 0;
  p->n = c->step->n_in;
  p->esize = sedp_nn_dtype_size (x0->dtype);
  p->outer = nn_numel ((int) axis, x0->dims);
  for (guint k = 0; k < p->n; k++) {
    Value *x = op_in (c, k);
    gboolean ok = x && x->rank == x0->rank && x->dtype == x0->dtype;
    for (int d = 0; ok && d < x0->rank; d++)
      ok = d == axis || x->dims[d] == x0->dims[d];
    if (!ok) {
      g_autofree char *a = sedp_nn_shape_to_string (x0->rank, x0->dims);
      g_autofree char *b = x ? sedp_nn_shape_to_string (x->rank, x->dims) : g_strdup ("nothing");
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                     "input %u has shape %s, which does not concatenate with %s on axis %" G_GINT64_FORMAT,
                     k, b, a, axis);
      return FALSE;
    }
    dims[axis] += x->dims[axis];
    p->chunk[k] = nn_numel (x->rank - (int) axis, x->dims + axis);
    p->total += p->chunk[k];
  }
  nn_set_shape (op_out (c, 0), x0->dtype, x0->rank, dims);
  c->step->fn = kernel_concat;
  c->step->id = NN_KERNEL_CONCAT;
  c->step->kernel = "concat";
  return TRUE;
}

/* ---- Gather ---- */

static gboolean
kernel_gather (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const GatherParams *p = s->params;
  const guint8 *x = ptrs[s->in[0]];
  gconstpointer idx = ptrs[s->in[1]];
  guint8 *y = ptrs[s->out[0]];
  gsize block = (gsize) p->inner * p->esize;
  for (gint64 o = 0; o < p->outer; o++)
    for (gint64 j = 0; j < p->n_idx; j++) {
      gint64 k = p->idx64 ? ((const gint64 *) idx)[j] : ((const gint32 *) idx)[j];
      if (k < 0)
        k += p->axis_len;
      if (k < 0 || k >= p->axis_len) {
        nn_node_error (error, SEDP_NN_ERROR_INPUT, s->node,
                       "index %" G_GINT64_FORMAT " out of range [-%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                       p->idx64 ? ((const gint64 *) idx)[j] : ((const gint32 *) idx)[j], p->axis_len,
                       p->axis_len);
        return FALSE;
      }
      memcpy (y + (gsize) (o * p->n_idx + j) * block, x + (gsize) (o * p->axis_len + k) * block, block);
    }
  return TRUE;
}

gboolean
nn_prepare_gather (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0), *ix = op_in (c, 1);
  if (x == NULL || ix == NULL || (ix->dtype != SEDP_NN_INT64 && ix->dtype != SEDP_NN_INT32)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs data and int64/int32 indices");
    return FALSE;
  }
  gint64 axis = nn_norm_axis (nn_attr_int (c->node, "axis", 0), x->rank);
  if (axis < 0 || axis >= x->rank || x->rank + ix->rank - 1 > SEDP_NN_MAX_RANK) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "axis out of range for rank %d", x->rank);
    return FALSE;
  }
  GatherParams *p = g_new0 (GatherParams, 1);
  c->step->params = p;
  p->outer = nn_numel ((int) axis, x->dims);
  p->axis_len = x->dims[axis];
  p->inner = nn_numel (x->rank - (int) axis - 1, x->dims + axis + 1);
  p->n_idx = ix->numel;
  p->esize = sedp_nn_dtype_size (x->dtype);
  p->idx64 = ix->dtype == SEDP_NN_INT64;
  gint64 dims[SEDP_NN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < axis; i++)
    dims[r++] = x->dims[i];
  for (int i = 0; i < ix->rank; i++)
    dims[r++] = ix->dims[i];
  for (int i = (int) axis + 1; i < x->rank; i++)
    dims[r++] = x->dims[i];
  nn_set_shape (op_out (c, 0), x->dtype, r, dims);
  c->step->fn = kernel_gather;
  c->step->id = NN_KERNEL_GATHER;
  c->step->kernel = "gather";
  return TRUE;
}

NN_HOT gboolean
nn_kernel_embedding_bag (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const EmbeddingBagParams *p = s->params;
  const float *table = ptrs[s->in[0]];
  const gint64 *ids = ptrs[s->in[1]];
  float *y = ptrs[s->out[0]];
  gint64 dim = p->dim;
  float scale = p->mean && p->per_bag ? 1.0f / (float) p->per_bag : 1.0f;
  for (gint64 b = 0; b < p->bags; b++) {
    float *out = y + b * dim;
    memset (out, 0, (gsize) dim * sizeof (float));
    for (gint64 j = 0; j < p->per_bag; j++) {
      gint64 k = ids[b * p->per_bag + j];
      if (k < 0)
        k += p->rows;
      if (k < 0 || k >= p->rows) {
        nn_node_error (error, SEDP_NN_ERROR_INPUT, s->node,
                       "index %" G_GINT64_FORMAT " out of range [-%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                       ids[b * p->per_bag + j], p->rows, p->rows);
        return FALSE;
      }
      /* The rows are scattered over a large table: fetch the next one while adding this. */
      gint64 next = j + 1 < p->per_bag ? ids[b * p->per_bag + j + 1]
                    : b + 1 < p->bags  ? ids[(b + 1) * p->per_bag]
                                       : -1;
      if (next >= 0 && next < p->rows)
        for (gint64 d = 0; d < dim; d += 16)
          __builtin_prefetch (table + next * dim + d);
      const float *row = table + k * dim;
      for (gint64 d = 0; d < dim; d++)
        out[d] += row[d];
    }
    if (scale != 1.0f)
      for (gint64 d = 0; d < dim; d++)
        out[d] *= scale;
  }
  return TRUE;
}

/* ---- Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum, ReduceLogSumExp ---- */

/* Each reduction: its kernel name, and the opset from which `axes` is an input. */
static const struct {
  const char *op_type;
  ReduceOp op;
  const char *kernel;
  gint64 axes_input_from;
} reduce_ops[] = {
  {"ReduceSum", RED_SUM, "reduce_sum", 13},
  {"ReduceMean", RED_MEAN, "reduce_mean", 18},
  {"ReduceMax", RED_MAX, "reduce_max", 18},
  {"ReduceMin", RED_MIN, "reduce_min", 18},
  {"ReduceProd", RED_PROD, "reduce_prod", 18},
  {"ReduceL2", RED_L2, "reduce_l2", 18},
  {"ReduceSumSquare", RED_SUM_SQUARE, "reduce_sum_square", 18},
  {"ReduceLogSumExp", RED_LOG_SUM_EXP, "reduce_log_sum_exp", 18},
  {"ReduceL1", RED_L1, "reduce_l1", 18},
  {"ReduceLogSum", RED_LOG_SUM, "reduce_log_sum", 18},
};

/* The value of a reduction over nothing: 0 for sums, ±∞ for Max/Min, 1 for Prod. */
static double
reduce_identity (ReduceOp op)
{
  return op == RED_MAX || op == RED_LOG_SUM_EXP ? -INFINITY : op == RED_MIN ? INFINITY
         : op == RED_PROD                        ? 1.0
                                                 : 0.0;
}

/* py[i] = py[i] ⊕ px[i] over one row (Max and Min propagate NaN, as numpy). */
static inline void
reduce_row (ReduceOp op, float *restrict py, const float *restrict px, gint64 n)
{
  switch (op) {
  case RED_MAX:
  case RED_LOG_SUM_EXP: /* its first pass: the maximum */
    for (gint64 i = 0; i < n; i++)
      py[i] = px[i] > py[i] || px[i] != px[i] ? px[i] : py[i];
    break;
  case RED_MIN:
    for (gint64 i = 0; i < n; i++)
      py[i] = px[i] < py[i] || px[i] != px[i] ? px[i] : py[i];
    break;
  case RED_PROD:
    for (gint64 i = 0; i < n; i++)
      py[i] *= px[i];
    break;
  case RED_L2:
  case RED_SUM_SQUARE:
    for (gint64 i = 0; i < n; i++)
      py[i] += px[i] * px[i];
    break;
  case RED_L1:
    for (gint64 i = 0; i < n; i++)
      py[i] += fabsf (px[i]);
    break;
  default:
    for (gint64 i = 0; i < n; i++)
      py[i] += px[i];
  }
}

/* log Σ exp(x - m) + m, with m the maximum already in py (stable; ±∞ and NaN maxima stay). */
static void
reduce_lse_finish (float *py, const float *px, gint64 red, gint64 inner)
{
  for (gint64 i = 0; i < inner; i++) {
    double m = py[i], s = 0;
    if (!isfinite (m))
      continue;
    for (gint64 r = 0; r < red; r++)
      s += exp ((double) px[r * inner + i] - m);
    py[i] = (float) (m + log (s));
  }
}

/* The last step of one output row: Mean's division, L2's root, LogSumExp's second pass. */
static inline void
reduce_finish (const ReduceParams *p, float *py, const float *px)
{
  if (p->op == RED_MEAN)
    for (gint64 i = 0; i < p->inner; i++)
      py[i] = (float) (py[i] / p->divisor);
  else if (p->op == RED_L2)
    for (gint64 i = 0; i < p->inner; i++)
      py[i] = sqrtf (py[i]);
  else if (p->op == RED_LOG_SUM)
    for (gint64 i = 0; i < p->inner; i++)
      py[i] = logf (py[i]);
  else if (p->op == RED_LOG_SUM_EXP)
    reduce_lse_finish (py, px, p->red, p->inner);
}

/* The next input element's output offset (an odometer over the input's index). */
static inline void
reduce_next (const ReduceParams *p, gint64 *idx, gint64 *off)
{
  for (int d = p->rank - 1; d >= 0; d--) {
    idx[d]++;
    *off += p->out_strides[d];
    if (idx[d] < p->dims[d])
      break;
    *off -= p->out_strides[d] * idx[d];
    idx[d] = 0;
  }
}

static inline double
reduce_combine (ReduceOp op, double a, double x)
{
  switch (op) {
  case RED_MAX:
  case RED_LOG_SUM_EXP:
    return x > a || x != x ? x : a;
  case RED_MIN:
    return x < a || x != x ? x : a;
  case RED_PROD:
    return a * x;
  case RED_L2:
  case RED_SUM_SQUARE:
    return a + x * x;
  case RED_L1:
    return a + fabs (x);
  default:
    return a + x;
  }
}

/* An output from its accumulated value: Mean's division, L2's root, LogSum's logarithm. */
static inline float
reduce_final (const ReduceParams *p, double acc)
{
  return (float) (p->op == RED_MEAN      ? acc / p->divisor
                  : p->op == RED_L2      ? sqrt (acc)
                  : p->op == RED_LOG_SUM ? log (acc)
                                         : acc);
}

/* The general float case, accumulated in double. */
static void
reduce_general (const ReduceParams *p, const float *x, float *y)
{
  g_autofree double *acc = g_new (double, MAX (p->out_numel, 1));
  g_autofree double *sum = p->op == RED_LOG_SUM_EXP ? g_new0 (double, MAX (p->out_numel, 1)) : NULL;
  for (gint64 i = 0; i < p->out_numel; i++)
    acc[i] = reduce_identity (p->op);
  gint64 idx[SEDP_NN_MAX_RANK] = {0}, off = 0;
  for (gint64 i = 0; i < p->in_numel; i++, reduce_next (p, idx, &off))
    acc[off] = reduce_combine (p->op, acc[off], x[i]);
  if (sum) { /* log-sum-exp: Σ exp(x - max), then max + log Σ */
    memset (idx, 0, sizeof idx);
    off = 0;
    for (gint64 i = 0; i < p->in_numel; i++, reduce_next (p, idx, &off))
      sum[off] += isfinite (acc[off]) ? exp (x[i] - acc[off]) : 0;
    for (gint64 i = 0; i < p->out_numel; i++)
      acc[i] = isfinite (acc[i]) ? acc[i] + log (sum[i]) : acc[i];
  }
  for (gint64 i = 0; i < p->out_numel; i++)
    y[i] = reduce_final (p, acc[i]);
}

/* One lane of @n contiguous elements (the reduced axes last), accumulated in double: a long sum
 * of terms of both signs keeps its precision, as ONNX Runtime's. */
static float
reduce_lane (const ReduceParams *p, const float *x, gint64 n)
{
  double acc = reduce_identity (p->op), sum = 0;
  for (gint64 i = 0; i < n; i++)
    acc = reduce_combine (p->op, acc, x[i]);
  if (p->op == RED_LOG_SUM_EXP && isfinite (acc)) {
    for (gint64 i = 0; i < n; i++)
      sum += exp (x[i] - acc);
    acc += log (sum);
  }
  return reduce_final (p, acc);
}

/* int64 ReduceMax/Min; over nothing, the type's minimum (Max) or maximum (Min). */
static void
reduce_int64 (const ReduceParams *p, const gint64 *x, gint64 *y)
{
  gboolean max = p->op == RED_MAX;
  for (gint64 i = 0; i < p->out_numel; i++)
    y[i] = max ? G_MININT64 : G_MAXINT64;
  gint64 idx[SEDP_NN_MAX_RANK] = {0}, off = 0;
  for (gint64 i = 0; i < p->in_numel; i++, reduce_next (p, idx, &off))
    y[off] = max ? MAX (y[off], x[i]) : MIN (y[off], x[i]);
}

NN_HOT static gboolean
kernel_reduce (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const ReduceParams *p = s->params;
  if (p->int64) {
    reduce_int64 (p, ptrs[s->in[0]], ptrs[s->out[0]]);
    return TRUE;
  }
  const float *x = ptrs[s->in[0]];
  float *y = ptrs[s->out[0]];
  if (p->general) {
    reduce_general (p, x, y);
    return TRUE;
  }
  if (p->inner == 1) {
    for (gint64 o = 0; o < p->outer; o++)
      y[o] = reduce_lane (p, x + o * p->red, p->red);
    return TRUE;
  }
  float id = (float) reduce_identity (p->op);
  for (gint64 o = 0; o < p->outer; o++) {
    float *py = y + o * p->inner;
    const float *px = x + o * p->red * p->inner;
    for (gint64 i = 0; i < p->inner; i++)
      py[i] = id;
    for (gint64 r = 0; r < p->red; r++)
      reduce_row (p->op, py, px + r * p->inner, p->inner);
    reduce_finish (p, py, px);
  }
  return TRUE;
}

/* The reduced axes (red[d]) from the `axes` attribute (before @input_from) or input (from it);
 * none given: every axis, or none with `noop_with_empty_axes` (an input-form attribute). */
static gboolean
reduce_axes (OpCtx *c, gint64 input_from, gboolean *red, GError **error)
{
  Value *x = op_in (c, 0);
  gboolean axes_input = c->opset >= input_from;
  if (!check_axes_form (c, input_from, error))
    return FALSE;
  g_autofree gint64 *axes = NULL;
  guint n = 0;
  if (axes_input) {
    if (op_in (c, 1) && !nn_const_ints (c, 1, &axes, &n, error))
      return FALSE;
  } else {
    const SedpNnAttr *a = sedp_nn_node_attr (c->node, "axes");
    n = a ? a->n_ints : 0;
    axes = g_memdup2 (a ? a->ints : NULL, sizeof (gint64) * MAX (n, 1));
  }
  gboolean noop = axes_input && nn_attr_int (c->node, "noop_with_empty_axes", 0) != 0;
  for (guint i = 0; i < n; i++) {
    gint64 a = nn_norm_axis (axes[i], x->rank);
    if (a < 0 || a >= x->rank) {
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                     "axis %" G_GINT64_FORMAT " out of range for rank %d", axes[i], x->rank);
      return FALSE;
    }
    red[a] = TRUE;
  }
  for (int i = 0; n == 0 && !noop && i < x->rank; i++)
    red[i] = TRUE;
  return TRUE;
}

/* The kernel's layout: [outer, red, inner] when the reduced axes are adjacent, else (or for
 * int64) the output offset of every input axis. */
static void
reduce_layout (ReduceParams *p, const Value *x, const gboolean *red)
{
  int first = -1, last = -1;
  p->divisor = 1;
  for (int i = 0; i < x->rank; i++)
    if (red[i]) {
      p->divisor *= (double) x->dims[i];
      first = first < 0 ? i : first;
      last = i;
    }
  gboolean contiguous = TRUE;
  for (int i = first; first >= 0 && i <= last; i++)
    contiguous = contiguous && red[i];
  p->general = !contiguous || p->int64;
  /* Nothing reduced (noop_with_empty_axes): each element alone, so ReduceSumSquare squares and
   * ReduceL2 takes magnitudes, as ONNX's reference and ONNX Runtime. */
  p->outer = first < 0 ? x->numel : nn_numel (first, x->dims);
  p->red = first < 0 ? 1 : nn_numel (last - first + 1, x->dims + first);
  p->inner = first < 0 ? 1 : nn_numel (x->rank - last - 1, x->dims + last + 1);
  p->rank = x->rank;
  memcpy (p->dims, x->dims, sizeof p->dims);
  gint64 st = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    p->out_strides[i] = red[i] ? 0 : st;
    st *= red[i] ? 1 : x->dims[i];
  }
  p->in_numel = x->numel;
  p->out_numel = st;
}

gboolean
nn_prepare_reduce (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  guint k = 0;
  while (strcmp (reduce_ops[k].op_type, c->node->op_type) != 0)
    k++;
  ReduceOp op = reduce_ops[k].op;
  gboolean int64_ok = op == RED_MAX || op == RED_MIN;
  if (x == NULL || (x->dtype != SEDP_NN_FLOAT && !(int64_ok && x->dtype == SEDP_NN_INT64))) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs a float%s input, got %s",
                   int64_ok ? " or int64" : "", x ? sedp_nn_dtype_name (x->dtype) : "nothing");
    return FALSE;
  }
  gboolean red[SEDP_NN_MAX_RANK] = {0};
  if (!reduce_axes (c, reduce_ops[k].axes_input_from, red, error))
    return FALSE;
  gboolean keepdims = nn_attr_int (c->node, "keepdims", 1) != 0;
  gint64 dims[SEDP_NN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!red[i] || keepdims)
      dims[r++] = red[i] ? 1 : x->dims[i];
  ReduceParams *p = g_new0 (ReduceParams, 1);
  c->step->params = p;
  p->op = op;
  p->int64 = x->dtype == SEDP_NN_INT64;
  reduce_layout (p, x, red);
  nn_set_shape (op_out (c, 0), x->dtype, r, dims);
  c->step->fn = kernel_reduce;
  c->step->id = NN_KERNEL_REDUCE;
  c->step->kernel = reduce_ops[k].kernel;
  c->step->flops = (double) x->numel;
  return TRUE;
}

/* ---- Constant and Shape: values known at plan time ---- */

static void
set_const (OpCtx *c, Value *v, SedpNnDType dtype, int rank, const gint64 *dims, gpointer data,
           gboolean owned)
{
  nn_set_shape (v, dtype, rank, dims);
  v->kind = VALUE_CONST;
  v->data = data;
  v->owned_data = owned;
  c->step->fn = NULL;
  c->step->kernel = "constant";
}

gboolean
nn_prepare_constant (OpCtx *c, GError **error)
{
  Value *y = op_out (c, 0);
  const SedpNnAttr *a;
  if ((a = sedp_nn_node_attr (c->node, "value")) && a->type == SEDP_NN_ATTR_TENSOR && a->t) {
    set_const (c, y, a->t->dtype, a->t->rank, a->t->dims, a->t->data, FALSE);
  } else if ((a = sedp_nn_node_attr (c->node, "value_float"))) {
    float *d = g_new (float, 1);
    *d = a->f;
    set_const (c, y, SEDP_NN_FLOAT, 0, NULL, d, TRUE);
  } else if ((a = sedp_nn_node_attr (c->node, "value_int"))) {
    gint64 *d = g_new (gint64, 1);
    *d = a->i;
    set_const (c, y, SEDP_NN_INT64, 0, NULL, d, TRUE);
  } else if ((a = sedp_nn_node_attr (c->node, "value_floats"))) {
    gint64 dims[1] = {a->n_floats};
    set_const (c, y, SEDP_NN_FLOAT, 1, dims, g_memdup2 (a->floats, sizeof (float) * MAX (a->n_floats, 1)), TRUE);
  } else if ((a = sedp_nn_node_attr (c->node, "value_ints"))) {
    gint64 dims[1] = {a->n_ints};
    set_const (c, y, SEDP_NN_INT64, 1, dims, g_memdup2 (a->ints, sizeof (gint64) * MAX (a->n_ints, 1)), TRUE);
  } else {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "needs a value, value_float(s) or value_int(s) attribute");
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_shape_op (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  gint64 start = nn_attr_int (c->node, "start", 0), end = nn_attr_int (c->node, "end", x->rank);
  start = CLAMP (nn_norm_axis (start, x->rank), 0, x->rank);
  end = CLAMP (nn_norm_axis (end, x->rank), 0, x->rank);
  gint64 n = MAX (end - start, 0);
  gint64 *d = g_new (gint64, MAX (n, 1));
  for (gint64 i = 0; i < n; i++)
    d[i] = x->dims[start + i];
  set_const (c, op_out (c, 0), SEDP_NN_INT64, 1, &n, d, TRUE);
  return TRUE;
}

/* Size: the number of elements, an int64 scalar (shapes are fixed in a plan). */
gboolean
nn_prepare_size (OpCtx *c, GError **error)
{
  gint64 *d = g_new (gint64, 1);
  *d = op_in (c, 0)->numel;
  set_const (c, op_out (c, 0), SEDP_NN_INT64, 0, NULL, d, TRUE);
  return TRUE;
}
