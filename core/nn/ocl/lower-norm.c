/* sedp — softmax and normalisation on the device (docs/opencl.md §3.2): Softmax, LogSoftmax and
 * Hardmax (softmax_lane), LayerNormalization (layer_norm_row), BatchNormalization
 * (channel_affine with the folded per-channel factors uploaded once), kernels of
 * kernels/softmax-norm.cl. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

#include <string.h>

/* kernels/softmax-norm.cl's NN_SOFTMAX_* codes are the CPU engine's SoftmaxKind. */
G_STATIC_ASSERT (SOFTMAX_PLAIN == 0 && SOFTMAX_LOG == 1 && SOFTMAX_HARD == 2);

gboolean
nn_ocl_lower_softmax (OclPlan *o, const Step *s, GError **error)
{
  const SoftmaxParams *p = s->params;
  guint64 lanes = (guint64) (p->outer * p->inner);
  return nn_ocl_add_kernel (o, s, "softmax_lane", lanes, error, "vvulli", s->in[0], s->out[0],
                            lanes, p->axis_len, p->inner, (int) p->kind);
}

/* An operand of LayerNorm read as [cols]: its expansion walk, or the identity walk. */
static void
norm_walk (const CopyParams *cp, gboolean expand, gint64 cols, int *rank, gint64 *dims,
           gint64 *strides)
{
  for (int i = 0; i < 8; i++)
    dims[i] = 1, strides[i] = 0;
  if (!expand) {
    *rank = 1, dims[0] = cols, strides[0] = 1;
    return;
  }
  *rank = cp->rank;
  for (int i = 0; i < cp->rank; i++)
    dims[i] = cp->dims[i], strides[i] = cp->strides[i];
}

gboolean
nn_ocl_lower_layernorm (OclPlan *o, const Step *s, GError **error)
{
  const LayerNormParams *p = s->params;
  gboolean has_bias = s->n_in > 2 && s->in[2] >= 0;
  gboolean has_mean = s->n_out > 1 && s->out[1] >= 0;
  gboolean has_inv = s->n_out > 2 && s->out[2] >= 0;
  int s_rank, b_rank;
  gint64 s_dims[8], s_strides[8], b_dims[8], b_strides[8];
  norm_walk (&p->scale_copy, p->expand_scale, p->cols, &s_rank, s_dims, s_strides);
  norm_walk (&p->bias_copy, has_bias && p->expand_bias, p->cols, &b_rank, b_dims, b_strides);
  return nn_ocl_add_kernel (o, s, "layer_norm_row", (guint64) p->rows, error,
                            "vvvvvvulfiiii88i88", s->in[0], s->in[1],
                            has_bias ? s->in[2] : s->in[1], s->out[0],
                            has_mean ? s->out[1] : s->out[0], has_inv ? s->out[2] : s->out[0],
                            (guint64) p->rows, p->cols, p->epsilon, (int) has_bias, (int) has_mean,
                            (int) has_inv, s_rank, s_dims, s_strides, b_rank, b_dims, b_strides);
}

gboolean
nn_ocl_lower_batchnorm (OclPlan *o, const Step *s, GError **error)
{
  const BatchNormParams *p = s->params;
  guint64 n = (guint64) (p->n * p->channels * p->inner);
  if (n == 0)
    return TRUE;
  /* One table: a[channels] then b[channels]. */
  gsize bytes = (gsize) p->channels * sizeof (float);
  g_autofree float *ab_host = g_malloc (2 * bytes);
  memcpy (ab_host, p->a, bytes);
  memcpy (ab_host + p->channels, p->b, bytes);
  cl_mem ab;
  if (!nn_ocl_upload (o, ab_host, 2 * bytes, "BatchNormalization's per-channel factors", &ab, error))
    return FALSE;
  return nn_ocl_add_kernel (o, s, "channel_affine", n, error, "vvmull", s->in[0], s->out[0], ab, n,
                            p->channels, p->inner);
}
