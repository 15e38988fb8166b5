/* sedp — Gemm and MatMul on OpenBLAS sgemm, with the bias and activation fused in. */
#include "gemm-packed.h"
#include "ops.h"

#include <cblas.h>

gboolean
nn_kernel_gemm (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const GemmParams *p = s->params;
  const float *a = ptrs[s->in[0]], *b = ptrs[s->in[1]];
  const float *bias = s->n_in > 2 && s->in[2] >= 0 ? ptrs[s->in[2]] : NULL;
  float *y = ptrs[s->out[0]];
  gint64 M = p->M, N = p->N, K = p->K;
  if (p->packed) {
    nn_gemm_packed (a, M, p->packed, y, p->alpha, bias, bias ? p->bias_kind : 0, p->beta);
    nn_apply_activation (y, M * N, p->act, p->leaky_alpha);
    return TRUE;
  }
  float beta = 0.0f;
  if (bias && p->bias_kind) {
    beta = 1.0f;
    switch (p->bias_kind) {
    case 1:
      for (gint64 i = 0; i < M * N; i++)
        y[i] = p->beta * bias[0];
      break;
    case 2:
      for (gint64 m = 0; m < M; m++)
        for (gint64 n = 0; n < N; n++)
          y[m * N + n] = p->beta * bias[n];
      break;
    case 3:
      for (gint64 m = 0; m < M; m++)
        for (gint64 n = 0; n < N; n++)
          y[m * N + n] = p->beta * bias[m];
      break;
    default:
      for (gint64 i = 0; i < M * N; i++)
        y[i] = p->beta * bias[i];
    }
  }
  if (M > 0 && N > 0) {
    if (K == 0) {
      if (beta == 0.0f)
        memset (y, 0, (gsize) (M * N) * sizeof (float));
    } else {
      cblas_sgemm (CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans,
                   p->trans_b ? CblasTrans : CblasNoTrans, (blasint) M, (blasint) N, (blasint) K,
                   p->alpha, a, (blasint) (p->trans_a ? M : K), b, (blasint) (p->trans_b ? K : N),
                   beta, y, (blasint) N);
    }
  }
  nn_apply_activation (y, M * N, p->act, p->leaky_alpha);
  return TRUE;
}

/* How a bias of shape (rank, dims) broadcasts to [M, N]: 1 scalar, 2 row, 3 column, 4 full,
 * 0 when it does not. */
static int
bias_kind (const Value *c, gint64 M, gint64 N)
{
  gint64 d0 = c->rank >= 2 ? c->dims[c->rank - 2] : 1, d1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
  for (int i = 0; i < c->rank - 2; i++)
    if (c->dims[i] != 1)
      return 0;
  if (d0 == 1 && d1 == 1)
    return 1;
  if (d0 == 1 && d1 == N)
    return 2;
  if (d0 == M && d1 == 1)
    return 3;
  if (d0 == M && d1 == N)
    return 4;
  return 0;
}

gboolean
nn_prepare_gemm (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1), *cv = op_in (c, 2);
  if (a == NULL || b == NULL || a->dtype != SEDP_NN_FLOAT || b->dtype != SEDP_NN_FLOAT ||
      a->rank != 2 || b->rank != 2 || (cv && cv->dtype != SEDP_NN_FLOAT)) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "needs 2-D float A and B");
    return FALSE;
  }
  GemmParams *p = g_new0 (GemmParams, 1);
  c->step->params = p;
  p->trans_a = nn_attr_int (c->node, "transA", 0) != 0;
  p->trans_b = nn_attr_int (c->node, "transB", 0) != 0;
  p->alpha = nn_attr_float (c->node, "alpha", 1.0f);
  p->beta = nn_attr_float (c->node, "beta", 1.0f);
  p->M = p->trans_a ? a->dims[1] : a->dims[0];
  p->K = p->trans_a ? a->dims[0] : a->dims[1];
  gint64 kb = p->trans_b ? b->dims[1] : b->dims[0];
  p->N = p->trans_b ? b->dims[0] : b->dims[1];
  if (kb != p->K) {
    g_autofree char *sa = sedp_nn_shape_to_string (a->rank, a->dims);
    g_autofree char *sb = sedp_nn_shape_to_string (b->rank, b->dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "inner dimensions differ: A %s, B %s (transA=%d, transB=%d)", sa, sb, p->trans_a,
                   p->trans_b);
    return FALSE;
  }
  if (cv) {
    p->bias_kind = bias_kind (cv, p->M, p->N);
    if (p->bias_kind == 0) {
      g_autofree char *sc = sedp_nn_shape_to_string (cv->rank, cv->dims);
      nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                     "C %s does not broadcast to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", sc,
                     p->M, p->N);
      return FALSE;
    }
  }
  gint64 dims[2] = {p->M, p->N};
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, 2, dims);
  c->step->fn = nn_kernel_gemm;
  c->step->id = NN_KERNEL_GEMM;
  c->step->kernel = "gemm";
  c->step->flops = 2.0 * (double) (p->M * p->N * p->K);
  return TRUE;
}

/* C[M,N] = A[M,K] · B, for small matrices where a direct loop beats the call overhead of
 * sgemm (DLRM's pairwise interactions: 27 × 32 · 32 × 27 per row of the batch). B is copied
 * into a local [K, Npad] tile, Npad a multiple of 16, zero-padded (and transposed when
 * @trans_b: B stored [N, K]); each row of C is then accumulated in whole vector registers,
 * without remainder loops. */
#define SMALL_TILE (32 * 32 * 32 / 8)

NN_HOT static void
small_matmul (const float *a, const float *b, float *c, gint64 M, gint64 N, gint64 K,
              gboolean trans_b)
{
  gint64 np = (N + 15) & ~(gint64) 15;
  float tile[SMALL_TILE], row[1024];
  g_autofree float *heap_tile = NULL, *heap_row = NULL;
  float *bt = K * np <= SMALL_TILE ? tile : (heap_tile = g_new (float, K * np));
  float *acc = np <= 1024 ? row : (heap_row = g_new (float, np));
  for (gint64 k = 0; k < K; k++) {
    float *dst = bt + k * np;
    for (gint64 n = 0; n < N; n++)
      dst[n] = trans_b ? b[n * K + k] : b[k * N + n];
    for (gint64 n = N; n < np; n++)
      dst[n] = 0.0f;
  }
  for (gint64 m = 0; m < M; m++) {
    for (gint64 n = 0; n < np; n++)
      acc[n] = 0.0f;
    for (gint64 k = 0; k < K; k++) {
      float av = a[m * K + k];
      const float *brow = bt + k * np;
      for (gint64 n = 0; n < np; n++)
        acc[n] += av * brow[n];
    }
    memcpy (c + m * N, acc, (gsize) N * sizeof (float));
  }
}

static gboolean
kernel_matmul_batched (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const BatchedParams *p = s->params;
  const float *a = ptrs[s->in[0]], *b = ptrs[s->in[1]];
  float *y = ptrs[s->out[0]];
  gint64 M = p->M, N = p->N, K = p->K;
  for (gint64 i = 0; i < p->batch; i++) {
    const float *pa = a + p->a_off[i], *pb = b + p->b_off[i];
    float *py = y + i * M * N;
    if (M * N * K <= 32 * 32 * 32)
      small_matmul (pa, pb, py, M, N, K, p->trans_b);
    else
      cblas_sgemm (CblasRowMajor, CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
                   (blasint) M, (blasint) N, (blasint) K, 1.0f, pa, (blasint) K, pb,
                   (blasint) (p->trans_b ? K : N), 0.0f, py, (blasint) N);
  }
  return TRUE;
}

gboolean
nn_step_is_batched_matmul (const Step *s, gboolean *trans_b)
{
  if (s->fn != kernel_matmul_batched)
    return FALSE;
  *trans_b = ((const BatchedParams *) s->params)->trans_b;
  return TRUE;
}

static void
free_batched (gpointer data)
{
  BatchedParams *p = data;
  g_free (p->a_off);
  g_free (p->b_off);
}

gboolean
nn_prepare_matmul (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  if (a == NULL || b == NULL || a->dtype != SEDP_NN_FLOAT || b->dtype != SEDP_NN_FLOAT ||
      a->rank < 1 || b->rank < 1) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "needs float inputs of rank ≥ 1");
    return FALSE;
  }
  return nn_prepare_matmul_as (c, a->rank, a->dims, b->rank, b->dims, FALSE, error);
}

gboolean
nn_prepare_matmul_as (OpCtx *c, int a_rank, const gint64 *a_dims, int b_rank, const gint64 *b_dims,
                      gboolean trans_b, GError **error)
{
  /* Promote vectors as numpy does, and remember to drop the added dims. */
  gint64 ad[SEDP_NN_MAX_RANK + 1], bd[SEDP_NN_MAX_RANK + 1];
  int ar = a_rank, br = b_rank;
  memcpy (ad, a_dims, sizeof (gint64) * ar);
  memcpy (bd, b_dims, sizeof (gint64) * br);
  if (trans_b && br >= 2) { /* B stored [..., N, K] */
    bd[br - 2] = b_dims[br - 1];
    bd[br - 1] = b_dims[br - 2];
  }
  gboolean a_vec = ar == 1, b_vec = br == 1;
  if (a_vec) {
    ad[1] = ad[0];
    ad[0] = 1;
    ar = 2;
  }
  if (b_vec) {
    bd[1] = 1;
    br = 2;
  }
  gint64 M = ad[ar - 2], K = ad[ar - 1], N = bd[br - 1];
  if (bd[br - 2] != K) {
    g_autofree char *sa = sedp_nn_shape_to_string (a_rank, a_dims);
    g_autofree char *sb = sedp_nn_shape_to_string (b_rank, b_dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "inner dimensions differ: %s × %s%s", sa,
                   sb, trans_b ? "ᵀ" : "");
    return FALSE;
  }
  int batch_rank;
  gint64 batch_dims[SEDP_NN_MAX_RANK];
  if (!nn_broadcast_shape (ar - 2, ad, br - 2, bd, &batch_rank, batch_dims)) {
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "batch dimensions do not broadcast");
    return FALSE;
  }
  gint64 dims[SEDP_NN_MAX_RANK + 2];
  int r = 0;
  for (int i = 0; i < batch_rank; i++)
    dims[r++] = batch_dims[i];
  if (!a_vec)
    dims[r++] = M;
  if (!b_vec)
    dims[r++] = N;
  if (r > SEDP_NN_MAX_RANK) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "rank too high");
    return FALSE;
  }
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, r, dims);
  gint64 batch = nn_numel (batch_rank, batch_dims);
  c->step->flops = 2.0 * (double) (batch * M * N * K);

  if (br == 2) {
    /* B is one matrix: fold A's batch dims into its rows, one sgemm (fusable with a bias). */
    GemmParams *p = g_new0 (GemmParams, 1);
    c->step->params = p;
    p->M = nn_numel (ar - 1, ad);
    p->N = N;
    p->K = K;
    p->alpha = 1.0f;
    p->beta = 1.0f;
    p->trans_b = trans_b;
    c->step->fn = nn_kernel_gemm;
    c->step->id = NN_KERNEL_GEMM;
    c->step->kernel = "matmul";
    return TRUE;
  }
  BatchedParams *p = g_new0 (BatchedParams, 1);
  c->step->params = p;
  p->batch = batch;
  p->M = M;
  p->N = N;
  p->K = K;
  p->a_off = g_new (gint64, MAX (batch, 1));
  p->b_off = g_new (gint64, MAX (batch, 1));
  gint64 idx[SEDP_NN_MAX_RANK] = {0};
  for (gint64 i = 0; i < batch; i++) {
    gint64 oa = 0, ob = 0, sa = M * K, sb = K * N;
    for (int d = batch_rank - 1; d >= 0; d--) {
      int ka = d - (batch_rank - (ar - 2)), kb = d - (batch_rank - (br - 2));
      if (ka >= 0) {
        if (ad[ka] != 1)
          oa += idx[d] * sa;
        sa *= ad[ka];
      }
      if (kb >= 0) {
        if (bd[kb] != 1)
          ob += idx[d] * sb;
        sb *= bd[kb];
      }
    }
    p->a_off[i] = oa;
    p->b_off[i] = ob;
    for (int d = batch_rank - 1; d >= 0; d--) {
      if (++idx[d] < batch_dims[d])
        break;
      idx[d] = 0;
    }
  }
  p->trans_b = trans_b;
  c->step->fn = kernel_matmul_batched;
  c->step->id = NN_KERNEL_MATMUL_BATCHED;
  c->step->kernel = trans_b ? "matmul_batched_tb" : "matmul_batched";
  return TRUE;
}

static gboolean
kernel_nop (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  return TRUE;
}

gboolean
nn_fuse_transpose_into_matmul (Plan *p, Step *step)
{
  if (step->fn != kernel_matmul_batched)
    return FALSE;
  BatchedParams *bp = step->params;
  Value *b = &p->values[step->in[1]];
  if (bp->trans_b || b->kind != VALUE_TEMP || b->def_step < 0 || b->is_output || b->n_consumers != 1)
    return FALSE;
  Step *src = &g_array_index (p->steps, Step, b->def_step);
  if (src->node == NULL || strcmp (src->node->op_type, "Transpose") != 0)
    return FALSE;
  /* The Transpose must swap the last two axes and keep the others. */
  const SedpNnAttr *perm = sedp_nn_node_attr (src->node, "perm");
  int r = b->rank;
  if (perm == NULL || perm->n_ints != (guint) r || r < 3)
    return FALSE;
  for (int i = 0; i < r - 2; i++)
    if (perm->ints[i] != i)
      return FALSE;
  if (perm->ints[r - 2] != r - 1 || perm->ints[r - 1] != r - 2)
    return FALSE;
  /* Read the Transpose's input instead, as [N, K] matrices at the same offsets. */
  step->in[1] = src->in[0];
  bp->trans_b = TRUE;
  step->kernel = "matmul_batched_tb";
  nn_free_step_params (src);
  src->fn = kernel_nop;
  src->id = NN_KERNEL_RETIRED;
  src->kernel = "folded";
  src->n_in = 0;
  src->n_out = 0;
  b->def_step = -1;
  b->n_consumers = 0;
  return TRUE;
}

void nn_free_step_params (Step *step);

void
nn_pack_weights (Plan *p)
{
  if (p->options.no_pack)
    return;
  for (guint i = 0; i < p->steps->len; i++) {
    Step *s = &g_array_index (p->steps, Step, i);
    if (s->fn != nn_kernel_gemm)
      continue;
    GemmParams *gp = s->params;
    const Value *b = &p->values[s->in[1]];
    if (gp->trans_a || gp->bias_kind > 2 || b->kind != VALUE_CONST || gp->K < 16 || gp->N < 2)
      continue;
    gp->packed = nn_packed_b_acquire (b->data, gp->K, gp->N, gp->trans_b);
  }
}

void
nn_free_step_params (Step *step)
{
  if (step->fn == kernel_matmul_batched && step->params)
    free_batched (step->params);
  if (step->fn == nn_kernel_gemm && step->params)
    nn_packed_b_release (((GemmParams *) step->params)->packed);
  nn_free_rnn_params (step);
  nn_free_target_attention (step);
  g_free (step->params);
  step->params = NULL;
}
