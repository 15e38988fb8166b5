/* sedp — normalisation operators: LayerNormalization. */
#include "ops.h"

#include <math.h>

/* Σ (x[i] - shift)^p for p = 1 or 2, in double, in 8 independent lanes (a fixed order the
 * compiler vectorises without reassociating). */
static inline double
row_moment (const float *restrict x, gint64 n, double shift, gboolean square)
{
  double acc[8] = {0};
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) {
      double d = (double) x[i + l] - shift;
      acc[l] += square ? d * d : d;
    }
  for (; i < n; i++) {
    double d = (double) x[i] - shift;
    acc[0] += square ? d * d : d;
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* y = (x - mean) · inv · scale + bias over one row (bias nullable); in blocks of 8, which the
 * compiler vectorises (SLP) even under -O2's cost model. */
static inline void
normalise_row (const float *restrict x, float *restrict y, gint64 n, double mean, double inv,
               const float *restrict scale, const float *restrict bias)
{
  gint64 i = 0;
  if (bias)
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++)
        y[i + l] = (float) (((double) x[i + l] - mean) * inv) * scale[i + l] + bias[i + l];
  else
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++)
        y[i + l] = (float) (((double) x[i + l] - mean) * inv) * scale[i + l];
  for (; i < n; i++)
    y[i] = (float) (((double) x[i] - mean) * inv) * scale[i] + (bias ? bias[i] : 0.0f);
}

/* Scale or B as [cols]: the operand itself, or its expansion into @tmp. */
static const float *
operand_row (const CopyParams *cp, gboolean expand, const float *v, float **tmp)
{
  if (!expand)
    return v;
  *tmp = g_new (float, MAX (cp->numel, 1));
  nn_strided_copy (cp, (const guint8 *) v, (guint8 *) *tmp);
  return *tmp;
}

/* Two passes per row in double: the mean, then the mean of squared deviations (no
 * cancellation, unlike E[x²] - E[x]²). Writes Mean and InvStdDev when they are asked for. */
NN_HOT static gboolean
kernel_layernorm (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const LayerNormParams *p = s->params;
  g_autofree float *tmp_scale = NULL, *tmp_bias = NULL;
  const float *x = ptrs[s->in[0]];
  const float *scale = operand_row (&p->scale_copy, p->expand_scale, ptrs[s->in[1]], &tmp_scale);
  const float *bias = s->n_in > 2 && s->in[2] >= 0
                        ? operand_row (&p->bias_copy, p->expand_bias, ptrs[s->in[2]], &tmp_bias)
                        : NULL;
  float *y = ptrs[s->out[0]];
  float *mean_out = s->n_out > 1 && s->out[1] >= 0 ? ptrs[s->out[1]] : NULL;
  float *inv_out = s->n_out > 2 && s->out[2] >= 0 ? ptrs[s->out[2]] : NULL;
  for (gint64 r = 0; r < p->rows; r++) {
    const float *xr = x + r * p->cols;
    double mean = row_moment (xr, p->cols, 0.0, FALSE) / (double) p->cols;
    double var = row_moment (xr, p->cols, mean, TRUE) / (double) p->cols;
    double inv = 1.0 / sqrt (var + p->epsilon);
    normalise_row (xr, y + r * p->cols, p->cols, mean, inv, scale, bias);
    if (mean_out)
      mean_out[r] = (float) mean;
    if (inv_out)
      inv_out[r] = (float) inv;
  }
  return TRUE;
}

/* Checks that operand @k (Scale or B) is float and broadcasts to the normalised shape
 * (@rank, @dims); sets @cp to expand it to [cols] when it is not already that. */
static gboolean
check_operand (OpCtx *c, guint k, int rank, const gint64 *dims, gboolean *expand, CopyParams *cp,
               GError **error)
{
  const Value *v = op_in (c, k);
  const char *what = k == 1 ? "Scale" : "B";
  int br = 0;
  gint64 bd[SEDP_NN_MAX_RANK];
  gboolean ok = v->rank <= rank && nn_broadcast_shape (rank, dims, v->rank, v->dims, &br, bd) &&
                nn_numel (br, bd) == nn_numel (rank, dims);
  if (v->dtype != SEDP_NN_FLOAT || !ok) {
    g_autofree char *a = sedp_nn_shape_to_string (v->rank, v->dims);
    g_autofree char *b = sedp_nn_shape_to_string (rank, dims);
    nn_node_error (error, v->dtype != SEDP_NN_FLOAT ? SEDP_NN_ERROR_UNSUPPORTED : SEDP_NN_ERROR_SHAPE,
                   c->node, "%s is %s %s, must be float and broadcast to the normalised shape %s",
                   what, sedp_nn_dtype_name (v->dtype), a, b);
    return FALSE;
  }
  *expand = v->numel != nn_numel (rank, dims);
  gint64 st[SEDP_NN_MAX_RANK];
  nn_contiguous_strides (v->rank, v->dims, st);
  cp->rank = rank;
  for (int i = 0; i < rank; i++) {
    int j = i - (rank - v->rank);
    cp->dims[i] = dims[i];
    cp->strides[i] = j < 0 || v->dims[j] == 1 ? 0 : st[j];
  }
  cp->numel = nn_numel (rank, dims);
  cp->esize = sizeof (float);
  return TRUE;
}

/* The optional outputs Mean and InvStdDev: X's shape with the normalised dimensions set to 1. */
static gboolean
stat_outputs (OpCtx *c, const Value *x, gint64 axis, GError **error)
{
  gboolean wanted = FALSE;
  gint64 dims[SEDP_NN_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    dims[i] = i < axis ? x->dims[i] : 1;
  for (guint k = 1; k < c->step->n_out; k++)
    if (c->step->out[k] >= 0) {
      nn_set_shape (op_out (c, k), SEDP_NN_FLOAT, x->rank, dims);
      wanted = TRUE;
    }
  gint64 stash = nn_attr_int (c->node, "stash_type", 1);
  if (wanted && stash != 1) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "Mean and InvStdDev with stash_type %" G_GINT64_FORMAT " (only 1, float)", stash);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_prepare_layernorm (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs a float X, got %s",
                   sedp_nn_dtype_name (x->dtype));
    return FALSE;
  }
  gint64 a = nn_attr_int (c->node, "axis", -1), axis = nn_norm_axis (a, x->rank);
  if (axis < 0 || axis >= x->rank) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "axis %" G_GINT64_FORMAT " out of range for rank %d", a, x->rank);
    return FALSE;
  }
  LayerNormParams *p = g_new0 (LayerNormParams, 1);
  c->step->params = p;
  int nr = x->rank - (int) axis;
  const gint64 *nd = x->dims + axis;
  if (!check_operand (c, 1, nr, nd, &p->expand_scale, &p->scale_copy, error) ||
      (op_in (c, 2) && !check_operand (c, 2, nr, nd, &p->expand_bias, &p->bias_copy, error)) ||
      !stat_outputs (c, x, axis, error))
    return FALSE;
  p->rows = nn_numel ((int) axis, x->dims);
  p->cols = nn_numel (nr, nd);
  p->epsilon = nn_attr_float (c->node, "epsilon", 1e-5f);
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_layernorm;
  c->step->id = NN_KERNEL_LAYERNORM;
  c->step->kernel = "layer_norm";
  c->step->flops = 8.0 * (double) x->numel;
  return TRUE;
}
