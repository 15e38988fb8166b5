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
#include "fast-math.h"
#include "gemm-packed.h"
#include "ops.h"

#include <cblas.h>
#include <math.h>

typedef enum { PART_Q, PART_K, PART_Q_MINUS_K, PART_K_MINUS_Q, PART_QK } Part;

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

/* Y[b·L + l] += Qh[b]. A scalar loop whose speed depends on where it lands in the code (din
 * ran 7 % slower when an unrelated change moved it by 0x3f0 bytes): aligned, to keep it stable. */
NN_HOT __attribute__ ((aligned (64))) static void
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

/* Folds W's row blocks into Wq, Wk and Wqk, packed unless @no_pack. */
static TargetAttParams *
fold_weights (const Match *m, const float *w, gint64 B, gint64 L, gint64 D, gint64 N,
              gboolean no_pack)
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
  if (!no_pack) {
    tp->pkm = nn_packed_b_acquire (tp->wkm, 2 * D, N, FALSE);
    tp->pq = nn_packed_b_acquire (tp->wq, D, N, FALSE);
  }
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
  s->id = NN_KERNEL_RETIRED;
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
  TargetAttParams *tp = fold_weights (&m, w->data, B, L, D, N, p->options.no_pack);
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
  g->id = NN_KERNEL_TARGET_ATTENTION;
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
  if (p->options.no_fuse_attention)
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

/* ==== multi-head self-attention ====
 *
 * Exported attention computes, per batch row b and head h (Q, K, V [B, H, L, D], heads made by
 * a Reshape and a Transpose (0, 2, 1, 3) of the projections):
 *
 *   S = Q · Kᵀ;  S = S / c (or · c);  S = Where (mask, fill, S) (or S + mask);  P = Softmax (S);
 *   O = P · V;   then Transpose (0, 2, 1, 3) back to [B, L, H, D]
 *
 * as six kernels and four transposes, with S [B, H, L, L] written and read four times. The fused
 * kernel reads Q, K and V where the projections left them (strides instead of transposes), keeps
 * the scores of 16 queries at a time in a small buffer (transposed: a vector lane per query) and
 * writes O in the layout its reader wants. */

/* Queries are taken QB at a time, a lane per query: the block's scores against key j, the
 * softmax along j and O = P · V are then vertical vector operations (no sum across lanes, no
 * padding of the keys). */
#define QB 16

/* The scratch one head needs: Qᵀ [D, QB], Sᵀ [Lk, QB] and Oᵀ [D, QB]. */
static inline gint64
head_scratch (const SelfAttParams *p)
{
  return (2 * p->D + p->Lk) * QB;
}

/* A block's lanes as one vector (GCC's vector extension: one register with AVX-512, split into
 * halves or quarters by the other clones); loads and stores need only float alignment. */
typedef float Lanes __attribute__ ((vector_size (QB * sizeof (float)), aligned (sizeof (float))));

/* Sᵀ[j] = the block's queries (Qᵀ, lane t = query t) · K[j], scaled. */
NN_HOT static void
block_scores (const SelfAttParams *p, const float *qt, const float *k, float *st)
{
  for (gint64 j = 0; j < p->Lk; j++) {
    const float *kr = k + j * p->ks[2];
    Lanes acc = {0};
    for (gint64 d = 0; d < p->D; d++)
      acc += *(const Lanes *) (qt + d * QB) * kr[d];
    *(Lanes *) (st + j * QB) = p->divide ? acc / p->c : acc * p->c;
  }
}

/* The mask over Sᵀ; @moff[t] is lane t's offset into the mask (its query's row). */
NN_VECTORIZE NN_HOT static void
block_mask (const SelfAttParams *p, float *restrict st, const void *mask, const gint64 *moff)
{
  gboolean add = p->mask == MASK_ADD;
  guint8 when = p->mask == MASK_FILL_WHEN_TRUE;
  for (gint64 j = 0; j < p->Lk; j++) {
    float *restrict s = st + j * QB;
    gint64 mj = j * p->ms[3];
    if (p->ms[2] == 0) { /* the same for every query (a key padding mask) */
      float m = add ? ((const float *) mask)[mj + moff[0]] : 0.0f;
      gboolean fill = !add && (((const guint8 *) mask)[mj + moff[0]] != 0) == when;
      for (int t = 0; t < QB; t++)
        s[t] = fill ? p->fill : s[t] + m;
    } else if (add) {
      const float *m = (const float *) mask + mj;
      for (int t = 0; t < QB; t++)
        s[t] += m[moff[t]];
    } else {
      const guint8 *m = (const guint8 *) mask + mj;
      for (int t = 0; t < QB; t++)
        s[t] = (m[moff[t]] != 0) == when ? p->fill : s[t];
    }
  }
}

typedef gint32 LaneBits __attribute__ ((vector_size (QB * sizeof (gint32)), aligned (sizeof (float))));

/* Each lane's softmax along j, unnormalized (e^(s − max)); its 1 / Σ in @inv. */
NN_VECTORIZE NN_HOT static void
block_softmax (gint64 Lk, float *st, float *inv)
{
  Lanes mx = *(const Lanes *) st, sum = {0};
  for (gint64 j = 1; j < Lk; j++) {
    Lanes x = *(const Lanes *) (st + j * QB);
    LaneBits gt = x > mx; /* NaN never wins, as in the unfused softmax */
    mx = (Lanes) (((LaneBits) x & gt) | ((LaneBits) mx & ~gt));
  }
  for (gint64 j = 0; j < Lk; j++) {
    float *restrict s = st + j * QB;
    Lanes x = *(const Lanes *) s - mx;
    float e[QB];
    for (int t = 0; t < QB; t++)
      e[t] = nn_fast_exp (x[t]);
    memcpy (s, e, sizeof e);
    sum += *(const Lanes *) e;
  }
  *(Lanes *) inv = 1.0f / sum;
}

/* Oᵀ[d] = Σ_j Pᵀ[j] · V[j][d], normalized by @inv. */
NN_HOT static void
block_pv (const SelfAttParams *p, const float *st, const float *v, const float *inv, float *ot)
{
  Lanes norm = *(const Lanes *) inv;
  for (gint64 d = 0; d < p->D; d++) {
    Lanes acc = {0};
    for (gint64 j = 0; j < p->Lk; j++)
      acc += *(const Lanes *) (st + j * QB) * v[j * p->vs[2] + d];
    *(Lanes *) (ot + d * QB) = acc * norm;
  }
}

/* One head of one row, QB queries at a time: Qᵀ gathered (lanes past Lq repeat the last query
 * and are not written back), scores, mask, softmax, P · V, then O scattered to its layout. */
static void
attention_head (const SelfAttParams *p, gint64 b, gint64 h, const float *q, const float *k,
                const float *v, const void *mask, float *o, float *scratch)
{
  gint64 D = p->D;
  float *qt = scratch, *ot = qt + D * QB, *st = ot + D * QB, inv[QB];
  gint64 moff[QB];
  k += b * p->ks[0] + h * p->ks[1];
  v += b * p->vs[0] + h * p->vs[1];
  for (gint64 i0 = 0; i0 < p->Lq; i0 += QB) {
    gint64 n = MIN (QB, p->Lq - i0);
    for (int t = 0; t < QB; t++) {
      gint64 i = i0 + MIN (t, n - 1);
      const float *qr = q + b * p->qs[0] + h * p->qs[1] + i * p->qs[2];
      for (gint64 d = 0; d < D; d++)
        qt[d * QB + t] = qr[d];
      moff[t] = b * p->ms[0] + h * p->ms[1] + i * p->ms[2];
    }
    block_scores (p, qt, k, st);
    if (p->mask != MASK_NONE)
      block_mask (p, st, mask, moff);
    block_softmax (p->Lk, st, inv);
    block_pv (p, st, v, inv, ot);
    for (gint64 t = 0; t < n; t++) {
      float *orow = o + b * p->os[0] + h * p->os[1] + (i0 + t) * p->os[2];
      for (gint64 d = 0; d < D; d++)
        orow[d] = ot[d * QB + t];
    }
  }
}

/* in: q, k, v, [mask]; out: O, then the scratch. */
static gboolean
kernel_self_attention (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const SelfAttParams *p = s->params;
  const void *mask = p->mask != MASK_NONE ? ptrs[s->in[3]] : NULL;
  for (gint64 b = 0; b < p->B; b++)
    for (gint64 h = 0; h < p->H; h++)
      attention_head (p, b, h, ptrs[s->in[0]], ptrs[s->in[1]], ptrs[s->in[2]], mask,
                      ptrs[s->out[0]], ptrs[s->out[1]]);
  return TRUE;
}

/* The step computing @v when @v is an intermediate value read by exactly one node. */
static Step *
only_producer (Plan *p, int v, const char *op)
{
  return v >= 0 && p->values[v].n_consumers == 1 ? producer (p, v, op) : NULL;
}

/* A float scalar constant's value. */
static gboolean
const_scalar (const Plan *p, int v, float *out)
{
  const Value *val = &p->values[v];
  if (val->kind != VALUE_CONST || val->dtype != SEDP_NN_FLOAT || val->numel != 1)
    return FALSE;
  *out = *(const float *) val->data;
  return TRUE;
}

/* Whether @s is a Transpose with perm (0, 2, 1, 3). */
static gboolean
swaps_heads (const Step *s)
{
  const SedpNnAttr *perm = s ? sedp_nn_node_attr (s->node, "perm") : NULL;
  static const gint64 want[4] = {0, 2, 1, 3};
  if (perm == NULL || perm->n_ints != 4)
    return FALSE;
  for (int i = 0; i < 4; i++)
    if (perm->ints[i] != want[i])
      return FALSE;
  return TRUE;
}

/* The pieces found around one Softmax step. */
typedef struct {
  Step *scores, *scale, *mask_step, *softmax, *pv, *tq, *tk, *tv, *to;
  int q, k, v, out, mask;
} SelfMatch;

/* Where one of Q, K, V is read from: the Transpose's input [B, L, H, D] when the heads were made
 * by a Transpose read only here (it is then retired), else the value [B, H, L, D] itself. */
static int
head_source (Plan *p, int v, Step **transpose, gint64 *strides)
{
  const Value *val = &p->values[v];
  gint64 H = val->dims[1], L = val->dims[2], D = val->dims[3];
  Step *t = only_producer (p, v, "Transpose");
  if (t && swaps_heads (t)) {
    *transpose = t;
    strides[0] = L * H * D, strides[1] = D, strides[2] = H * D;
    return t->in[0];
  }
  *transpose = NULL;
  strides[0] = H * L * D, strides[1] = L * D, strides[2] = D;
  return v;
}

/* The step after @from that reads value @v as input @k. */
static Step *
reader (Plan *p, guint from, int v, guint k)
{
  for (guint i = from + 1; i < p->steps->len; i++) {
    Step *s = &g_array_index (p->steps, Step, i);
    if (s->n_in > k && s->in[k] == v)
      return s;
  }
  return NULL;
}

/* The mask before the Softmax, if any: Where (cond, fill, S), Where (cond, S, fill) or
 * S + mask. Returns the value that carries S on, or -1 when the piece does not fit. */
static int
match_mask (Plan *p, int x, SelfMatch *m, SelfAttParams *sp)
{
  Step *w = only_producer (p, x, "Where");
  if (w && p->values[w->in[0]].dtype == SEDP_NN_BOOL) {
    m->mask_step = w, m->mask = w->in[0];
    if (const_scalar (p, w->in[1], &sp->fill))
      return sp->mask = MASK_FILL_WHEN_TRUE, w->in[2];
    if (const_scalar (p, w->in[2], &sp->fill))
      return sp->mask = MASK_FILL_WHEN_FALSE, w->in[1];
    return -1;
  }
  Step *a = only_producer (p, x, "Add");
  if (a) {
    gboolean first = only_producer (p, a->in[0], "Div") || only_producer (p, a->in[0], "Mul") ||
                     only_producer (p, a->in[0], "MatMul");
    m->mask_step = a, m->mask = a->in[first ? 1 : 0], sp->mask = MASK_ADD;
    return p->values[m->mask].dtype == SEDP_NN_FLOAT ? a->in[first ? 0 : 1] : -1;
  }
  sp->mask = MASK_NONE;
  return x;
}

/* The scale before the mask, if any: S / c, S · c or c · S. Returns the scores' value. */
static int
match_scale (Plan *p, int x, SelfMatch *m, SelfAttParams *sp)
{
  sp->c = 1.0f;
  Step *d = only_producer (p, x, "Div");
  if (d && const_scalar (p, d->in[1], &sp->c))
    return m->scale = d, sp->divide = TRUE, d->in[0];
  Step *mu = only_producer (p, x, "Mul");
  if (mu && const_scalar (p, mu->in[1], &sp->c))
    return m->scale = mu, mu->in[0];
  if (mu && const_scalar (p, mu->in[0], &sp->c))
    return m->scale = mu, mu->in[1];
  return x;
}

/* Softmax ← [Where | Add] ← [Div | Mul] ← MatMul (Q, Kᵀ), and Softmax → MatMul (·, V). */
static gboolean
match_chain (Plan *p, guint index, SelfMatch *m, SelfAttParams *sp)
{
  memset (m, 0, sizeof *m);
  memset (sp, 0, sizeof *sp);
  m->mask = -1;
  m->softmax = &g_array_index (p->steps, Step, index);
  const Value *x = &p->values[m->softmax->in[0]];
  gint64 axis = nn_attr_int (m->softmax->node, "axis", -1);
  int pv = m->softmax->out[0];
  if (x->rank != 4 || (axis != -1 && axis != 3) || p->values[pv].n_consumers != 1 ||
      p->values[pv].is_output)
    return FALSE;
  int sc = match_scale (p, match_mask (p, m->softmax->in[0], m, sp), m, sp);
  gboolean tb = FALSE;
  if (sc < 0 || (m->scores = only_producer (p, sc, "MatMul")) == NULL ||
      !nn_step_is_batched_matmul (m->scores, &tb) || !tb)
    return FALSE;
  m->pv = reader (p, index, pv, 0);
  return m->pv && m->pv->node && strcmp (m->pv->node->op_type, "MatMul") == 0 &&
         nn_step_is_batched_matmul (m->pv, &tb) && !tb;
}

/* Shapes: Q [B, H, Lq, D], K and V [B, H, Lk, D], the mask broadcast to [B, H, Lq, Lk]. */
static gboolean
check_shapes (Plan *p, SelfMatch *m, SelfAttParams *sp)
{
  const Value *q = &p->values[m->scores->in[0]], *k = &p->values[m->scores->in[1]];
  const Value *v = &p->values[m->pv->in[1]], *s = &p->values[m->scores->out[0]];
  if (q->rank != 4 || k->rank != 4 || v->rank != 4 || q->dtype != SEDP_NN_FLOAT)
    return FALSE;
  sp->B = q->dims[0], sp->H = q->dims[1], sp->Lq = q->dims[2], sp->D = q->dims[3];
  sp->Lk = k->dims[2];
  for (int d = 0; d < 4; d++)
    if (k->dims[d] != (d == 2 ? sp->Lk : q->dims[d]) || v->dims[d] != k->dims[d])
      return FALSE;
  if (s->numel < head_scratch (sp))
    return FALSE; /* the scores' memory is the scratch */
  if (m->mask < 0)
    return TRUE;
  const Value *mk = &p->values[m->mask];
  int rank;
  gint64 out[SEDP_NN_MAX_RANK];
  if (mk->rank > 4 || !nn_broadcast_shape (mk->rank, mk->dims, 4, s->dims, &rank, out))
    return FALSE;
  for (int d = 0; d < 4; d++)
    if (out[d] != s->dims[d])
      return FALSE;
  nn_broadcast_strides (mk->rank, mk->dims, 4, s->dims, sp->ms);
  return TRUE;
}

/* O is written where its Transpose (0, 2, 1, 3), read only here, would put it. */
static void
match_output (Plan *p, guint index, SelfMatch *m, SelfAttParams *sp)
{
  int o = m->pv->out[0];
  Step *t = reader (p, index, o, 0);
  gint64 H = sp->H, L = sp->Lq, D = sp->D;
  if (t && p->values[o].n_consumers == 1 && !p->values[o].is_output &&
      strcmp (t->node->op_type, "Transpose") == 0 && swaps_heads (t)) {
    m->to = t, m->out = t->out[0];
    sp->os[0] = L * H * D, sp->os[1] = D, sp->os[2] = H * D;
    return;
  }
  m->out = o;
  sp->os[0] = H * L * D, sp->os[1] = L * D, sp->os[2] = D;
}

static gboolean
fuse_self (Plan *p, guint index)
{
  Step *sm = &g_array_index (p->steps, Step, index);
  SelfMatch m;
  SelfAttParams sp;
  if (sm->node == NULL || strcmp (sm->node->op_type, "Softmax") != 0 || sm->n_out != 1 ||
      !match_chain (p, index, &m, &sp) || !check_shapes (p, &m, &sp))
    return FALSE;
  guint pv_index = (guint) (m.pv - &g_array_index (p->steps, Step, 0));
  match_output (p, pv_index, &m, &sp);
  m.q = head_source (p, m.scores->in[0], &m.tq, sp.qs);
  m.k = head_source (p, m.scores->in[1], &m.tk, sp.ks);
  m.v = head_source (p, m.pv->in[1], &m.tv, sp.vs);
  int scratch = m.scores->out[0], out = m.out, o = m.pv->out[0];
  Step *gone[] = {m.scores, m.scale, m.mask_step, m.softmax, m.tq, m.tk, m.tv, m.to};
  for (guint j = 0; j < G_N_ELEMENTS (gone); j++)
    if (gone[j])
      retire (p, gone[j]);
  nn_free_step_params (m.pv);
  m.pv->params = g_memdup2 (&sp, sizeof sp);
  m.pv->fn = kernel_self_attention;
  m.pv->id = NN_KERNEL_SELF_ATTENTION;
  m.pv->kernel = "self_attention";
  m.pv->n_in = sp.mask != MASK_NONE ? 4 : 3;
  m.pv->in[0] = m.q, m.pv->in[1] = m.k, m.pv->in[2] = m.v, m.pv->in[3] = m.mask;
  m.pv->n_out = 2;
  m.pv->out[0] = out, m.pv->out[1] = scratch;
  if (m.to)
    p->values[o].def_step = -1; /* written where the Transpose put it, instead */
  p->values[out].def_step = p->values[scratch].def_step = (int) pv_index;
  m.pv->flops = (double) (sp.B * sp.H * sp.Lq * sp.Lk) * (4.0 * (double) sp.D + 3.0);
  return TRUE;
}

void
nn_fuse_self_attention (Plan *p)
{
  if (p->options.no_fuse_attention)
    return;
  for (guint i = 0; i < p->steps->len; i++)
    fuse_self (p, i);
}
