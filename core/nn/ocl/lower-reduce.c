/* sedp — reductions and the lane operators on the device (docs/opencl.md §3.2): the ten Reduce
 * operators (reduce_inner for the contiguous [outer, red, inner] layout, reduce_nd and
 * reduce_nd_l for the general one), ArgMax/ArgMin (arg_lane_*), TopK (topk_lane_*) and CumSum
 * (cumsum_lane_*), kernels of kernels/reduce.cl. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

/* kernels/reduce.cl's NN_RED_* codes are the CPU engine's ReduceOp. */
G_STATIC_ASSERT (RED_SUM == 0 && RED_MEAN == 1 && RED_MAX == 2 && RED_MIN == 3 && RED_PROD == 4);
G_STATIC_ASSERT (RED_L2 == 5 && RED_SUM_SQUARE == 6 && RED_LOG_SUM_EXP == 7 && RED_L1 == 8);
G_STATIC_ASSERT (RED_LOG_SUM == 9);

/* The general layout split for reduce_nd: the kept axes (each output's place in X) and the
 * reduced axes (the terms of one output), each with its dims and X's strides. */
typedef struct {
  int krank, rrank;
  gint64 kdims[8], kstrides[8], rdims[8], rstrides[8];
  gint64 nred;
} ReduceSplit;

/* Splits @p's axes by their output strides (0: reduced); only for a non-empty output, where
 * every kept axis has a non-zero stride. */
static void
reduce_split (const ReduceParams *p, ReduceSplit *r)
{
  gint64 in_strides[SEDP_NN_MAX_RANK], st = 1;
  for (int i = p->rank - 1; i >= 0; i--) {
    in_strides[i] = st;
    st *= p->dims[i];
  }
  *r = (ReduceSplit){.nred = 1};
  for (int i = 0; i < 8; i++)
    r->kdims[i] = r->rdims[i] = 1;
  for (int i = 0; i < p->rank; i++) {
    if (p->out_strides[i] == 0) {
      r->rdims[r->rrank] = p->dims[i];
      r->rstrides[r->rrank++] = in_strides[i];
      r->nred *= p->dims[i];
    } else {
      r->kdims[r->krank] = p->dims[i];
      r->kstrides[r->krank++] = in_strides[i];
    }
  }
}

gboolean
nn_ocl_lower_reduce (OclPlan *o, const Step *s, GError **error)
{
  const ReduceParams *p = s->params;
  gint64 divisor = (gint64) p->divisor;
  if (!p->general)
    return nn_ocl_add_kernel (o, s, "reduce_inner", (guint64) (p->outer * p->inner), error,
                              "vvulliil", s->in[0], s->out[0], (guint64) (p->outer * p->inner),
                              p->red, p->inner, (int) p->op, (int) (p->inner == 1), divisor);
  if (p->out_numel == 0)
    return TRUE;
  ReduceSplit r;
  reduce_split (p, &r);
  if (p->int64)
    return nn_ocl_add_kernel (o, s, "reduce_nd_l", (guint64) p->out_numel, error, "vvui88i88li",
                              s->in[0], s->out[0], (guint64) p->out_numel, r.krank, r.kdims,
                              r.kstrides, r.rrank, r.rdims, r.rstrides, r.nred,
                              (int) (p->op == RED_MAX));
  return nn_ocl_add_kernel (o, s, "reduce_nd", (guint64) p->out_numel, error, "vvui88i88lil",
                            s->in[0], s->out[0], (guint64) p->out_numel, r.krank, r.kdims,
                            r.kstrides, r.rrank, r.rdims, r.rstrides, r.nred, (int) p->op, divisor);
}

gboolean
nn_ocl_lower_arg (OclPlan *o, const Step *s, GError **error)
{
  const ArgParams *p = s->params;
  guint64 lanes = (guint64) (p->l.outer * p->l.inner);
  return nn_ocl_add_kernel (o, s, p->int64 ? "arg_lane_l" : "arg_lane_f", lanes, error, "vvullii",
                            s->in[0], s->out[0], lanes, p->l.len, p->l.inner, (int) p->max,
                            (int) p->last);
}

/* TopK by insertion, a work-item per lane (the scratch output the CPU sorts in is not used). */
gboolean
nn_ocl_lower_topk (OclPlan *o, const Step *s, GError **error)
{
  const TopKParams *p = s->params;
  guint64 lanes = (guint64) (p->l.outer * p->l.inner);
  if (p->k == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, p->int64 ? "topk_lane_l" : "topk_lane_f", lanes, error,
                            "vvvullli", s->in[0], s->out[0], s->out[1], lanes, p->l.len,
                            p->l.inner, p->k, (int) p->largest);
}

gboolean
nn_ocl_lower_cumsum (OclPlan *o, const Step *s, GError **error)
{
  const CumSumParams *p = s->params;
  guint64 lanes = (guint64) (p->l.outer * p->l.inner);
  return nn_ocl_add_kernel (o, s, p->int64 ? "cumsum_lane_l" : "cumsum_lane_f", lanes, error,
                            "vvullii", s->in[0], s->out[0], lanes, p->l.len, p->l.inner,
                            (int) p->exclusive, (int) p->reverse);
}
