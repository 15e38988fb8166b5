/* sedp — target attention (DIN's activation unit) recognised in the plan and run as one kernel.
 *
 * DIN and the models after it score each behaviour k_l of a sequence against the candidate q
 * with an MLP over features of the pair; PyTorch exports its first layer as
 *
 *   E = Expand (q [B, 1, D], [B, L, D])
 *   X = Concat (parts…, axis -1)        parts among E, K, E − K, K − E, E ⊙ K  ([B, L, D] each)
 *   H = act (X · W + b)                  W [P·D, N], one Gemm step (MatMul + Add + act fused)
 *
 * Split W by parts into row blocks W_j: every part is linear in q, k or q ⊙ k, so
 *
 *   X · W = q · Wq + [k, q ⊙ k] · [Wk; Wqk]
 *
 * with Wq the sum of the blocks of the parts holding +q or −q (signed), Wk likewise for k, Wqk
 * the block of E ⊙ K. q · Wq + b is computed once per row of the batch instead of once per
 * behaviour, and the product over the sequence has 2D inner columns instead of P·D (half, for
 * DIN's four parts), without materialising X. */
#include "gemm-packed.h"
#include "ops.h"

#include <cblas.h>

typedef enum { PART_Q, PART_K, PART_Q_MINUS_K, PART_K_MINUS_Q, PART_QK } Part;

/* Parameters of the fused kernel; owns the folded weights and their packed forms. */
typedef struct {
  gint64 B, L, D, N;
  float *wkm;       /* [2D, N]: Wk then Wqk */
  float *wq;        /* [D, N] */
  PackedB *pkm, *pq; /* packed forms (NULL where no packed kernel fits) */
  Activation act;
  float leaky_alpha;
  gboolean has_bias; /* in[2] is a row of N biases */
} TargetAttParams;

static void
free_params (TargetAttParams *p)
{
  nn_packed_b_release (p->pkm);
  nn_packed_b_release (p->pq);
  g_free (p->wkm);
  g_free (p->wq);
}

/* C[M, N] = A[M, K] · B[K, N], packed when possible. */
static void
product (const float *a, gint64 M, gint64 K, const float *b, const PackedB *pb, gint64 N, float *c)
{
  if (pb)
    nn_gemm_packed (a, M, pb, c, 1.0f, NULL, 0, 0.0f);
  else
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint) M, (blasint) N, (blasint) K,
                 1.0f, a, (blasint) K, b, (blasint) N, 0.0f, c, (blasint) N);
}

/* X[b·L + l] = [k, q ⊙ k] for every behaviour. */
NN_HOT static void
pair_features (const float *q, const float *k, float *x, gint64 B, gint64 L, gint64 D)
{
  for (gint64 b = 0; b < B; b++)
    for (gint64 l = 0; l < L; l++) {
      const float *kr = k + (b * L + l) * D, *qr = q + b * D;
      float *xr = x + (b * L + l) * 2 * D;
      for (gint64 d = 0; d < D; d++) {
        xr[d] = kr[d];
        xr[D + d] = qr[d] * kr[d];
      }
    }
}

/* Y[b·L + l] += Qh[b]. */
NN_HOT static void
add_per_row (float *y, const float *qh, gint64 B, gint64 L, gint64 N)
{
  for (gint64 b = 0; b < B; b++)
    for (gint64 l = 0; l < L; l++) {
      float *yr = y + (b * L + l) * N;
      const float *qr = qh + b * N;
      for (gint64 n = 0; n < N; n++)
        yr[n] += qr[n];
    }
}

/* in: q, k, [bias]; out: H, then the scratch values X [B·L, 2D] and Qh [B, N]. */
static gboolean
kernel_target_attention (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const TargetAttParams *p = s->params;
  const float *q = ptrs[s->in[0]], *k = ptrs[s->in[1]];
  float *y = ptrs[s->out[0]], *x = ptrs[s->out[1]], *qh = ptrs[s->out[2]];
  pair_features (q, k, x, p->B, p->L, p->D);
  product (x, p->B * p->L, 2 * p->D, p->wkm, p->pkm, p->N, y);
  product (q, p->B, p->D, p->wq, p->pq, p->N, qh);
  if (p->has_bias) {
    const float *bias = ptrs[s->in[2]];
    for (gint64 b = 0; b < p->B; b++)
      for (gint64 n = 0; n < p->N; n++)
        qh[b * p->N + n] += bias[n];
  }
  add_per_row (y, qh, p->B, p->L, p->N);
  nn_apply_activation (y, p->B * p->L * p->N, p->act, p->leaky_alpha);
  return TRUE;
}

/* The step that computes @v, if @v is an intermediate value read only inside the pattern. */
static Step *
producer (Plan *p, int v, const char *op)
{
  Value *val = &p->values[v];
  if (val->kind != VALUE_TEMP || val->def_step < 0 || val->is_output)
    return NULL;
  Step *s = &g_array_index (p->steps, Step, val->def_step);
  return s->node && strcmp (s->node->op_type, op) == 0 && s->n_out == 1 ? s : NULL;
}

/* The pattern found around one Gemm step. */
typedef struct {
  Step *concat, *expand, *parts_step[8];
  Part parts[8];
  guint n_parts;
  int q, k; /* values: q [B, 1, D] (the Expand's input) and K [B, L, D] */
} Match;

static gboolean
same_shape (const Value *v, gint64 B, gint64 L, gint64 D)
{
  return v->dtype == SEDP_NN_FLOAT && v->rank == 3 && v->dims[0] == B && v->dims[1] == L &&
         v->dims[2] == D;
}

/* Classifies one part of the Concat: E, K, E − K, K − E or E ⊙ K (E the Expand's output). */
static gboolean
classify (Plan *p, Match *m, int v, int e, guint j)
{
  if (v == e) {
    m->parts[j] = PART_Q;
    return TRUE;
  }
  Step *s = producer (p, v, "Sub");
  if (s == NULL)
    s = producer (p, v, "Mul");
  if (s != NULL && p->values[v].n_consumers == 1 && (s->in[0] == e || s->in[1] == e)) {
    int other = s->in[0] == e ? s->in[1] : s->in[0];
    if (m->k >= 0 && other != m->k)
      return FALSE;
    m->k = other;
    m->parts_step[j] = s;
    gboolean sub = strcmp (s->node->op_type, "Sub") == 0;
    m->parts[j] = !sub ? PART_QK : s->in[0] == e ? PART_Q_MINUS_K : PART_K_MINUS_Q;
    return s->in[0] != s->in[1];
  }
  if (m->k >= 0 && v != m->k)
    return FALSE;
  m->k = v;
  m->parts[j] = PART_K;
  return TRUE;
}

/* E = Expand (q): a part of the Concat, or an operand of a Sub or Mul part. */
static int
find_expand (Plan *p, Match *m)
{
  for (guint j = 0; j < m->concat->n_in; j++) {
    int v = m->concat->in[j];
    Step *s = producer (p, v, "Sub");
    if (s == NULL)
      s = producer (p, v, "Mul");
    int cand[3] = {v, s ? s->in[0] : -1, s ? s->in[1] : -1};
    for (guint c = 0; c < 3; c++)
      if (cand[c] >= 0 && (m->expand = producer (p, cand[c], "Expand")) != NULL)
        return cand[c];
  }
  return -1;
}

/* Finds Concat(parts of E = Expand(q), K) feeding @g's A, every piece read only inside. */
static gboolean
match (Plan *p, Step *g, Match *m)
{
  memset (m, 0, sizeof *m);
  m->k = m->q = -1;
  Value *a = &p->values[g->in[0]];
  if (a->n_consumers != 1 || (m->concat = producer (p, g->in[0], "Concat")) == NULL ||
      m->concat->n_in < 2 || m->concat->n_in > G_N_ELEMENTS (m->parts))
    return FALSE;
  int e = find_expand (p, m);
  if (e < 0)
    return FALSE;
  gint64 axis = nn_attr_int (m->concat->node, "axis", 0);
  if (axis != -1 && axis != 2)
    return FALSE;
  m->n_parts = m->concat->n_in;
  guint uses_e = 0;
  for (guint j = 0; j < m->n_parts; j++) {
    if (!classify (p, m, m->concat->in[j], e, j))
      return FALSE;
    uses_e += m->parts[j] != PART_K;
  }
  m->q = m->expand->in[0];
  const Value *ev = &p->values[e], *q = &p->values[m->q];
  if (m->k < 0 || ev->n_consumers != uses_e || ev->rank != 3)
    return FALSE;
  gint64 B = ev->dims[0], L = ev->dims[1], D = ev->dims[2];
  gboolean q_ok = q->dtype == SEDP_NN_FLOAT && q->numel == B * D &&
                  ((q->rank == 3 && q->dims[1] == 1) || q->rank == 2) && q->dims[0] == B;
  return q_ok && same_shape (&p->values[m->k], B, L, D) && a->dims[a->rank - 1] == m->n_parts * D;
}

/* Folds W's row blocks into Wq, Wk and Wqk. */
static TargetAttParams *
fold_weights (const Match *m, const float *w, gint64 B, gint64 L, gint64 D, gint64 N)
{
  TargetAttParams *tp = g_new0 (TargetAttParams, 1);
  tp->B = B, tp->L = L, tp->D = D, tp->N = N;
  tp->wq = g_new0 (float, D * N);
  tp->wkm = g_new0 (float, 2 * D * N);
  for (guint j = 0; j < m->n_parts; j++) {
    const float *blk = w + j * D * N;
    float sq = m->parts[j] == PART_Q || m->parts[j] == PART_Q_MINUS_K ? 1.0f
               : m->parts[j] == PART_K_MINUS_Q                      ? -1.0f : 0.0f;
    float sk = m->parts[j] == PART_K || m->parts[j] == PART_K_MINUS_Q ? 1.0f
               : m->parts[j] == PART_Q_MINUS_K                      ? -1.0f : 0.0f;
    float *wqk = tp->wkm + D * N;
    for (gint64 i = 0; i < D * N; i++) {
      tp->wq[i] += sq * blk[i];
      tp->wkm[i] += sk * blk[i];
      if (m->parts[j] == PART_QK)
        wqk[i] += blk[i];
    }
  }
  tp->pkm = nn_packed_b_acquire (tp->wkm, 2 * D, N, FALSE);
  tp->pq = nn_packed_b_acquire (tp->wq, D, N, FALSE);
  return tp;
}

static gboolean
kernel_retired (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  return TRUE;
}

/* A step of the pattern that no longer runs: its output is gone, or the fused step's scratch. */
static void
retire (Plan *p, Step *s)
{
  for (guint k = 0; k < s->n_out; k++)
    if (s->out[k] >= 0)
      p->values[s->out[k]].def_step = -1;
  nn_free_step_params (s);
  s->fn = kernel_retired;
  s->kernel = "folded";
  s->n_in = 0;
  s->n_out = 0;
}

static gboolean
fuse_one (Plan *p, guint index)
{
  Step *g = &g_array_index (p->steps, Step, index);
  if (g->fn != nn_kernel_gemm || g->n_out != 1)
    return FALSE;
  GemmParams *gp = g->params;
  const Value *w = &p->values[g->in[1]];
  Match m;
  if (gp->trans_a || gp->trans_b || gp->alpha != 1.0f || w->kind != VALUE_CONST ||
      (gp->bias_kind != 0 && gp->bias_kind != 2) || !match (p, g, &m))
    return FALSE;
  const Value *e = &p->values[m.expand->out[0]];
  if (gp->K != (gint64) m.n_parts * e->dims[2])
    return FALSE;
  gint64 B = e->dims[0], L = e->dims[1], D = e->dims[2], N = gp->N;
  Step *scratch_q = NULL; /* a retired [B, L, D] value holds Qh [B, N] when it is big enough */
  for (guint j = 0; j < m.n_parts && scratch_q == NULL; j++)
    if (m.parts_step[j] && L * D >= N)
      scratch_q = m.parts_step[j];
  if (scratch_q == NULL || gp->beta != 1.0f)
    return FALSE;
  TargetAttParams *tp = fold_weights (&m, w->data, B, L, D, N);
  tp->act = gp->act;
  tp->leaky_alpha = gp->leaky_alpha;
  tp->has_bias = gp->bias_kind == 2 && g->n_in > 2 && g->in[2] >= 0;
  int bias = tp->has_bias ? g->in[2] : -1;
  int out = g->out[0], xs = m.concat->out[0], qs = scratch_q->out[0];
  for (guint j = 0; j < m.n_parts; j++)
    if (m.parts_step[j])
      retire (p, m.parts_step[j]);
  retire (p, m.concat);
  retire (p, m.expand);
  nn_free_step_params (g);
  g->params = tp;
  g->fn = kernel_target_attention;
  g->kernel = "target_attention";
  g->n_in = tp->has_bias ? 3 : 2;
  g->in[0] = m.q;
  g->in[1] = m.k;
  g->in[2] = bias;
  g->n_out = 3;
  g->out[0] = out;
  g->out[1] = xs;
  g->out[2] = qs;
  p->values[xs].def_step = p->values[qs].def_step = (int) index;
  g->flops = 2.0 * (double) (B * L * 2 * D * N + B * D * N) + (double) (B * L * (3 * D + N));
  return TRUE;
}

void
nn_fuse_target_attention (Plan *p)
{
  if (g_getenv ("SEDP_NN_NO_FUSE_ATTENTION"))
    return;
  for (guint i = 0; i < p->steps->len; i++)
    fuse_one (p, i);
}

void
nn_free_target_attention (Step *step)
{
  if (step->fn == kernel_target_attention && step->params)
    free_params (step->params);
}
