/* sedp — index operators on the device (docs/opencl.md §3.2, §7): Gather, the fused embedding
 * bag, GatherElements, OneHot and Trilu (kernels/index.cl). The three that read indices get a
 * status word each (nn_ocl_status_word): a bad index sets it, and the run then takes the CPU
 * engine's message from a re-run on the CPU plan (ocl-run.c). */
#include "ocl-private.h"

#include "../exec/plan-private.h"

#include <string.h>

gboolean
nn_ocl_lower_gather (OclPlan *o, const Step *s, GError **error)
{
  const GatherParams *p = s->params;
  /* inner 0: one work-item per (o, j) still checks the index, as the CPU does */
  guint64 n = (guint64) (p->outer * p->n_idx * MAX (p->inner, 1));
  if (n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "gather", n, error, "vvvmuulllii", s->in[0], s->in[1], s->out[0],
                            o->arena, nn_ocl_status_word (o, s), n, p->axis_len, p->inner,
                            p->n_idx, (int) p->esize, (int) p->idx64);
}

gboolean
nn_ocl_lower_embedding_bag (OclPlan *o, const Step *s, GError **error)
{
  const EmbeddingBagParams *p = s->params;
  guint64 n = (guint64) (p->bags * MAX (p->dim, 1));
  if (n == 0)
    return TRUE;
  /* the CPU's scale, computed as the CPU computes it */
  float scale = p->mean && p->per_bag ? 1.0f / (float) p->per_bag : 1.0f;
  return nn_ocl_add_kernel (o, s, "embedding_bag", n, error, "vvvmuulllfi", s->in[0], s->in[1],
                            s->out[0], o->arena, nn_ocl_status_word (o, s), n, p->rows, p->dim,
                            p->per_bag, (double) scale, (int) (scale != 1.0f));
}

gboolean
nn_ocl_lower_gather_elements (OclPlan *o, const Step *s, GError **error)
{
  const GatherElementsParams *p = s->params;
  if (p->numel == 0)
    return TRUE;
  gint64 dims[8], strides[8];
  for (int d = 0; d < 8; d++) {
    dims[d] = d < p->rank ? p->dims[d] : 1;
    strides[d] = d < p->rank ? p->strides[d] : 0;
  }
  return nn_ocl_add_kernel (o, s, "gather_elements", (guint64) p->numel, error, "vvvmuui88llii",
                            s->in[0], s->in[1], s->out[0], o->arena, nn_ocl_status_word (o, s),
                            (guint64) p->numel, p->rank, dims, strides, p->axis_len,
                            p->axis_stride, (int) p->esize, (int) p->idx64);
}

gboolean
nn_ocl_lower_onehot (OclPlan *o, const Step *s, GError **error)
{
  const OneHotParams *p = s->params;
  guint64 n = (guint64) (p->outer * p->depth * p->inner);
  if (n == 0)
    return TRUE;
  if (p->idtype == SEDP_NN_DOUBLE && !o->device->fp64) {
    nn_ocl_add_host (o, s); /* double indices need cl_khr_fp64 */
    return TRUE;
  }
  guint64 on = 0, off = 0; /* the values' bytes, in the low bytes as the kernel writes them */
  memcpy (&on, p->on, p->esize);
  memcpy (&off, p->off, p->esize);
  return nn_ocl_add_kernel (o, s, "onehot", n, error, "vvulliuui", s->in[0], s->out[0], n, p->depth,
                            p->inner, (int) p->idtype, on, off, (int) p->esize);
}

gboolean
nn_ocl_lower_trilu (OclPlan *o, const Step *s, GError **error)
{
  const TriluParams *p = s->params;
  guint64 n = (guint64) (p->batch * p->rows * p->cols);
  if (n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "trilu", n, error, "vvulllii", s->in[0], s->out[0], n, p->rows,
                            p->cols, p->k, (int) p->upper, (int) p->esize);
}
