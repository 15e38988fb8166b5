/* sedp — GEMM steps on the device (docs/opencl.md §3.2): Gemm and MatMul through CLBlastSgemm
 * (row-major, offsets in elements, CLBlast's temporary buffer preallocated per plan) with the
 * bias and the activation in one epilogue kernel; batched MatMul through
 * CLBlastSgemmStridedBatched when the matrices are evenly spaced, else CLBlastSgemmBatched. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

static const char *
gemm_what (gboolean ta, gboolean tb, gboolean batched)
{
  static const char *names[2][4] = {
    {"clblast sgemm NN", "clblast sgemm NT", "clblast sgemm TN", "clblast sgemm TT"},
    {"clblast sgemm batched NN", "clblast sgemm batched NT", "clblast sgemm batched TN",
     "clblast sgemm batched TT"},
  };
  return names[batched ? 1 : 0][(ta ? 2 : 0) + (tb ? 1 : 0)];
}

/* The refs of a step's A, B and Y, as element offsets. */
static gboolean
operands (OclPlan *o, const Step *s, OclGemm *g, GError **error)
{
  OclRef a, b, y;
  if (!nn_ocl_ref (o, s->in[0], &a, error) || !nn_ocl_ref (o, s->in[1], &b, error) ||
      !nn_ocl_ref (o, s->out[0], &y, error))
    return FALSE;
  g->a = a.mem, g->b = b.mem, g->c = y.mem;
  g->a_off = a.offset / sizeof (float);
  g->b_off = b.offset / sizeof (float);
  g->c_off = y.offset / sizeof (float);
  return TRUE;
}

static gboolean
temp_size (OclPlan *o, const Step *s, OclGemm *g, GError **error)
{
  cl_command_queue q = nn_ocl_setup_queue (o->device, error);
  if (q == NULL)
    return FALSE;
  CLBlastStatusCode rc = CLBlastSGemmTempBufferSize (CLBlastLayoutRowMajor, g->ta, g->tb, g->m, g->n,
                                                     g->k, g->a_off, g->lda, g->b_off, g->ldb,
                                                     g->c_off, g->ldc, &q, &g->temp_bytes);
  if (rc != CLBlastSuccess) {
    nn_ocl_node_error (error, o, s, "CLBlastSGemmTempBufferSize", rc);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_ocl_lower_gemm (OclPlan *o, const Step *s, GError **error)
{
  const GemmParams *gp = s->params;
  if (gp->M == 0 || gp->N == 0)
    return TRUE;
  OclCmd c = {.kind = OCL_CMD_GEMM, .step = s, .what = gemm_what (gp->trans_a, gp->trans_b, FALSE)};
  OclGemm *g = &c.gemm;
  if (!operands (o, s, g, error))
    return FALSE;
  g->ta = gp->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
  g->tb = gp->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
  g->m = gp->M, g->n = gp->N, g->k = gp->K;
  g->lda = gp->trans_a ? gp->M : gp->K;
  g->ldb = gp->trans_b ? gp->K : gp->N;
  g->ldc = gp->N;
  g->alpha = gp->alpha;
  if (gp->K > 0) {
    if (!temp_size (o, s, g, error))
      return FALSE;
    g_array_append_val (o->cmds, c);
  }
  gboolean bias = s->n_in > 2 && s->in[2] >= 0 && gp->bias_kind > 0;
  if (!bias && gp->act == ACT_NONE && gp->K > 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "gemm_epilogue", (guint64) (gp->M * gp->N), error, "vvuuiiffi",
                            s->out[0], bias ? s->in[2] : s->out[0], (guint64) (gp->M * gp->N),
                            (guint64) gp->N, bias ? gp->bias_kind : 0, (int) gp->act,
                            (double) gp->beta, (double) gp->leaky_alpha, (int) (gp->K == 0));
}

/* Whether @off[0..n) is an arithmetic progression; its step in @stride. */
static gboolean
evenly_spaced (const gint64 *off, gint64 n, size_t *stride)
{
  gint64 d = n > 1 ? off[1] - off[0] : 0;
  for (gint64 i = 2; i < n; i++)
    if (off[i] - off[i - 1] != d)
      return FALSE;
  *stride = (size_t) d;
  return d >= 0;
}

gboolean
nn_ocl_lower_matmul_batched (OclPlan *o, const Step *s, GError **error)
{
  const BatchedParams *bp = s->params;
  gint64 mn = bp->M * bp->N;
  if (bp->batch == 0 || mn == 0)
    return TRUE;
  if (bp->K == 0)
    return nn_ocl_add_kernel (o, s, "gemm_epilogue", (guint64) (bp->batch * mn), error, "vvuuiiffi",
                              s->out[0], s->out[0], (guint64) (bp->batch * mn), (guint64) bp->N, 0,
                              (int) ACT_NONE, 0.0, 0.0, 1);
  OclCmd c = {.kind = OCL_CMD_GEMM_STRIDED, .step = s, .what = gemm_what (FALSE, bp->trans_b, TRUE)};
  OclGemm *g = &c.gemm;
  if (!operands (o, s, g, error))
    return FALSE;
  g->ta = CLBlastTransposeNo;
  g->tb = bp->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
  g->m = bp->M, g->n = bp->N, g->k = bp->K;
  g->lda = bp->K, g->ldb = bp->trans_b ? bp->K : bp->N, g->ldc = bp->N;
  g->alpha = 1.0f;
  g->count = bp->batch;
  g->c_stride = mn;
  if (evenly_spaced (bp->a_off, bp->batch, &g->a_stride) &&
      evenly_spaced (bp->b_off, bp->batch, &g->b_stride)) {
    g->a_off += bp->a_off[0];
    g->b_off += bp->b_off[0];
  } else {
    c.kind = OCL_CMD_GEMM_BATCH;
    g->a_offs = g_new (size_t, bp->batch);
    g->b_offs = g_new (size_t, bp->batch);
    g->c_offs = g_new (size_t, bp->batch);
    g->alphas = g_new (float, bp->batch);
    g->betas = g_new0 (float, bp->batch);
    for (gint64 i = 0; i < bp->batch; i++) {
      g->a_offs[i] = g->a_off + bp->a_off[i];
      g->b_offs[i] = g->b_off + bp->b_off[i];
      g->c_offs[i] = g->c_off + i * mn;
      g->alphas[i] = 1.0f;
    }
  }
  g_array_append_val (o->cmds, c);
  return TRUE;
}

cl_int
nn_ocl_gemm_enqueue (OclPlan *o, const OclCmd *c, cl_command_queue queue)
{
  const OclGemm *g = &c->gemm;
  CLBlastStatusCode rc;
  g_mutex_lock (&o->device->blas_lock);
  if (c->kind == OCL_CMD_GEMM && g->temp_bytes > 0)
    rc = CLBlastSgemmWithTempBuffer (CLBlastLayoutRowMajor, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
                                     g->a, g->a_off, g->lda, g->b, g->b_off, g->ldb, g->beta, g->c,
                                     g->c_off, g->ldc, &queue, NULL, o->gemm_temp);
  else if (c->kind == OCL_CMD_GEMM)
    rc = CLBlastSgemm (CLBlastLayoutRowMajor, g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->a,
                       g->a_off, g->lda, g->b, g->b_off, g->ldb, g->beta, g->c, g->c_off, g->ldc,
                       &queue, NULL);
  else if (c->kind == OCL_CMD_GEMM_STRIDED)
    rc = CLBlastSgemmStridedBatched (CLBlastLayoutRowMajor, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
                                     g->a, g->a_off, g->lda, g->a_stride, g->b, g->b_off, g->ldb,
                                     g->b_stride, g->beta, g->c, g->c_off, g->ldc, g->c_stride,
                                     g->count, &queue, NULL);
  else
    rc = CLBlastSgemmBatched (CLBlastLayoutRowMajor, g->ta, g->tb, g->m, g->n, g->k, g->alphas, g->a,
                              g->a_offs, g->lda, g->b, g->b_offs, g->ldb, g->betas, g->c, g->c_offs,
                              g->ldc, g->count, &queue, NULL);
  g_mutex_unlock (&o->device->blas_lock);
  return (cl_int) rc;
}
