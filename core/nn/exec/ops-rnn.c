/* sedp — recurrent operators: GRU (ONNX opsets 7 to 22 semantics, layout from 14).
 *
 * The input projection X·Wᵀ of every time step is one GEMM up front; each step then multiplies
 * the hidden state by Rᵀ (one GEMM, two when linear_before_reset is 0) and applies the gates
 * elementwise. W and R are constants, packed once (gemm-packed.h) when the packed kernels fit. */
#include "gemm-packed.h"
#include "fast-math.h"
#include "ops.h"

#include <cblas.h>

#define I64S(...) ((const gint64[]){__VA_ARGS__})

/* C[M, N] = A[M, K] · B[N, K]ᵀ + bias (a row of N, nullable): packed when @pb, else sgemm. */
static void
rnn_gemm (const float *a, gint64 M, gint64 K, const float *b, gint64 N, const PackedB *pb,
          const float *bias, float *c)
{
  if (M == 0 || N == 0)
    return;
  if (pb) {
    nn_gemm_packed (a, M, pb, c, 1.0f, bias, bias ? 2 : 0, 1.0f);
    return;
  }
  for (gint64 m = 0; m < M; m++)
    for (gint64 n = 0; n < N; n++)
      c[m * N + n] = bias ? bias[n] : 0.0f;
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, (blasint) M, (blasint) N, (blasint) K, 1.0f,
               a, (blasint) K, b, (blasint) K, 1.0f, c, (blasint) N);
}

/* Clips @n pre-activations to [-clip, clip] (clip > 0) and applies @act. Sigmoid and tanh are
 * nn_fast_sigmoid and nn_fast_tanh (within 2 ulp of the exact values; libm's tanhf and expf, one call per
 * element, took 70 % of a DIEN-sized GRU). */
NN_VECTORIZE NN_HOT static void
gate_act (float *v, gint64 n, float clip, Activation act)
{
  if (clip > 0.0f)
    for (gint64 i = 0; i < n; i++)
      v[i] = v[i] < -clip ? -clip : v[i] > clip ? clip : v[i];
  if (act == ACT_SIGMOID)
    for (gint64 i = 0; i < n; i++)
      v[i] = nn_fast_sigmoid (v[i]);
  else if (act == ACT_TANH)
    for (gint64 i = 0; i < n; i++)
      v[i] = nn_fast_tanh (v[i]);
  else
    nn_apply_activation (v, n, act, 0.0f);
}

/* One row, linear_before_reset = 1. @xw: X·Wᵀ + biases [3H]; @hr: h·Rᵀ + (0, 0, Rb_h) [3H],
 * overwritten with the gates; @h [H] updated in place. */
NN_VECTORIZE NN_HOT static void
row_lbr (const GruParams *p, int d, const float *xw, float *hr, float *h)
{
  gint64 H = p->hidden;
  for (gint64 j = 0; j < 2 * H; j++)
    hr[j] += xw[j];
  gate_act (hr, 2 * H, p->clip, p->f[d]);
  const float *z = hr, *r = hr + H;
  float *n = hr + 2 * H;
  for (gint64 j = 0; j < H; j++)
    n[j] = xw[2 * H + j] + r[j] * n[j];
  gate_act (n, H, p->clip, p->g[d]);
  for (gint64 j = 0; j < H; j++)
    h[j] = (1.0f - z[j]) * n[j] + z[j] * h[j];
}

/* The rows active at step @i: the time index each reads (-1 when its sequence has ended). */
static void
step_times (const GruParams *p, gboolean rev, gint64 i, const gint64 *lens, gint64 *t)
{
  for (gint64 b = 0; b < p->batch; b++)
    t[b] = i >= lens[b] ? -1 : rev ? lens[b] - 1 - i : i;
}

/* X·Wᵀ's row for batch row @b at time @t. */
static inline gint64
xw_row (const GruParams *p, gint64 t, gint64 b)
{
  return p->layout ? b * p->seq + t : t * p->batch + b;
}

/* Scratch of one direction (floats, in the arena). */
typedef struct {
  float *xw;  /* [seq · batch, 3H] */
  float *h;   /* [batch, H] */
  float *hr;  /* [batch, 3H] */
  float *rh;  /* [batch, H] (r ⊙ h, linear_before_reset 0) */
  float *hn;  /* [batch, H] ((r ⊙ h)·R_hᵀ) */
  gint64 *t;  /* [batch] the time index of each row at the current step */
} GruScratch;

/* One time step with linear_before_reset = 0: (r ⊙ h) is multiplied by R_h after the gates. */
NN_VECTORIZE NN_HOT static void
step_default (const GruParams *p, int d, GruScratch *s)
{
  gint64 H = p->hidden, B = p->batch;
  const float *r_d = p->r + d * 3 * H * H;
  rnn_gemm (s->h, B, H, r_d, 2 * H, p->pr[d], NULL, s->hr);
  for (gint64 b = 0; b < B; b++) {
    if (s->t[b] < 0)
      continue;
    const float *xw = s->xw + xw_row (p, s->t[b], b) * 3 * H;
    float *zr = s->hr + b * 2 * H, *h = s->h + b * H, *rh = s->rh + b * H;
    for (gint64 j = 0; j < 2 * H; j++)
      zr[j] += xw[j];
    gate_act (zr, 2 * H, p->clip, p->f[d]);
    for (gint64 j = 0; j < H; j++)
      rh[j] = zr[H + j] * h[j];
  }
  rnn_gemm (s->rh, B, H, r_d + 2 * H * H, H, p->prh[d], NULL, s->hn);
  for (gint64 b = 0; b < B; b++) {
    if (s->t[b] < 0)
      continue;
    const float *xw = s->xw + xw_row (p, s->t[b], b) * 3 * H, *z = s->hr + b * 2 * H;
    float *n = s->hn + b * H, *h = s->h + b * H;
    for (gint64 j = 0; j < H; j++)
      n[j] += xw[2 * H + j];
    gate_act (n, H, p->clip, p->g[d]);
    for (gint64 j = 0; j < H; j++)
      h[j] = (1.0f - z[j]) * n[j] + z[j] * h[j];
  }
}

/* One time step with linear_before_reset = 1: one product h·Rᵀ for the three gates. */
static void
step_lbr (const GruParams *p, int d, GruScratch *s)
{
  gint64 H = p->hidden, B = p->batch;
  rnn_gemm (s->h, B, H, p->r + d * 3 * H * H, 3 * H, p->pr[d], p->bias_h + d * 3 * H, s->hr);
  for (gint64 b = 0; b < B; b++)
    if (s->t[b] >= 0)
      row_lbr (p, d, s->xw + xw_row (p, s->t[b], b) * 3 * H, s->hr + b * 3 * H, s->h + b * H);
}

/* Where Y and Y_h keep (t, d, b) and (d, b). */
static inline gint64
y_at (const GruParams *p, gint64 t, int d, gint64 b)
{
  return (p->layout ? (b * p->seq + t) * p->dirs + d : (t * p->dirs + d) * p->batch + b) * p->hidden;
}

static inline gint64
yh_at (const GruParams *p, int d, gint64 b)
{
  return (p->layout ? b * p->dirs + d : d * p->batch + b) * p->hidden;
}

/* Runs direction @d over the sequence: Y's valid steps (the rest stays zero), then Y_h (h after
 * each row's last step). */
static void
gru_direction (const GruParams *p, int d, const float *x, const float *h0, const gint64 *lens,
               float *y, float *yh, GruScratch *s)
{
  gint64 H = p->hidden, B = p->batch, max_len = 0;
  gboolean rev = p->reverse || d == 1;
  rnn_gemm (x, p->seq * B, p->input, p->w + d * 3 * H * p->input, 3 * H, p->pw[d],
            p->bias_x + d * 3 * H, s->xw);
  for (gint64 b = 0; b < B; b++) {
    max_len = MAX (max_len, lens[b]);
    if (h0)
      memcpy (s->h + b * H, h0 + yh_at (p, d, b), (gsize) H * sizeof (float));
    else
      memset (s->h + b * H, 0, (gsize) H * sizeof (float));
  }
  for (gint64 i = 0; i < max_len; i++) {
    step_times (p, rev, i, lens, s->t);
    if (p->lbr)
      step_lbr (p, d, s);
    else
      step_default (p, d, s);
    for (gint64 b = 0; y && b < B; b++)
      if (s->t[b] >= 0)
        memcpy (y + y_at (p, s->t[b], d, b), s->h + b * H, (gsize) H * sizeof (float));
  }
  /* A row of length 0 has no last step: zeros, as ONNX Runtime gives (not initial_h). */
  for (gint64 b = 0; yh && b < B; b++)
    if (lens[b] > 0)
      memcpy (yh + yh_at (p, d, b), s->h + b * H, (gsize) H * sizeof (float));
    else
      memset (yh + yh_at (p, d, b), 0, (gsize) H * sizeof (float));
}

/* The scratch's floats: lens and times (2 · batch int64, rounded to 16 floats), then the rest. */
static gint64
gru_scratch_floats (gint64 seq, gint64 batch, gint64 H)
{
  gint64 ints = (4 * batch + 15) & ~(gint64) 15;
  return ints + seq * batch * 3 * H + 6 * batch * H;
}

/* Reads sequence_lens (int32 or int64) into @lens; each must lie in [0, seq]. */
static gboolean
read_lens (const Plan *plan, const Step *st, gpointer const *ptrs, const GruParams *p, gint64 *lens,
           GError **error)
{
  int v = st->n_in > 4 ? st->in[4] : -1;
  const Value *lv = v >= 0 ? &plan->values[v] : NULL;
  for (gint64 b = 0; b < p->batch; b++) {
    lens[b] = lv == NULL                      ? p->seq
              : lv->dtype == SEDP_NN_INT32 ? ((const gint32 *) ptrs[v])[b]
                                              : ((const gint64 *) ptrs[v])[b];
    if (lens[b] < 0 || lens[b] > p->seq) {
      nn_node_error (error, SEDP_NN_ERROR_INPUT, st->node,
                     "sequence_lens[%" G_GINT64_FORMAT "] is %" G_GINT64_FORMAT
                     ", outside [0, %" G_GINT64_FORMAT "]", b, lens[b], p->seq);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
kernel_gru (const Plan *plan, const Step *st, gpointer const *ptrs, GError **error)
{
  const GruParams *p = st->params;
  gint64 B = p->batch, H = p->hidden;
  gint64 *ints = ptrs[st->out[p->scratch]];
  float *f = (float *) ints + ((4 * B + 15) & ~(gint64) 15);
  GruScratch s = {f, f + p->seq * B * 3 * H, NULL, NULL, NULL, ints + B};
  s.hr = s.h + B * H;
  s.rh = s.hr + 3 * B * H;
  s.hn = s.rh + B * H;
  if (!read_lens (plan, st, ptrs, p, ints, error))
    return FALSE;
  const float *h0 = st->n_in > 5 && st->in[5] >= 0 ? ptrs[st->in[5]] : NULL;
  float *y = st->out[0] >= 0 ? ptrs[st->out[0]] : NULL;
  float *yh = p->scratch > 1 && st->out[1] >= 0 ? ptrs[st->out[1]] : NULL;
  if (y && st->n_in > 4 && st->in[4] >= 0) /* without sequence_lens every step is written */
    memset (y, 0, (gsize) (p->seq * p->dirs * B * H) * sizeof (float));
  for (int d = 0; d < p->dirs; d++)
    gru_direction (p, d, ptrs[st->in[0]], h0, ints, y, yh, &s);
  return TRUE;
}

/* ---- prepare ---- */

void
nn_free_rnn_params (Step *step)
{
  if (step->fn != kernel_gru || step->params == NULL)
    return;
  GruParams *p = step->params;
  for (int d = 0; d < 2; d++) {
    nn_packed_b_release (p->pw[d]);
    nn_packed_b_release (p->pr[d]);
    nn_packed_b_release (p->prh[d]);
  }
  g_free (p->bias_x);
  g_free (p->bias_h);
}

/* A float parameter input that must be known at plan time (an initializer, folded, or a graph
 * input the plan is specialised on, nn_require_const): its data, or NULL with an error. */
static const float *
const_param (OpCtx *c, guint k, const char *what, GError **error)
{
  Value *v = op_in (c, k);
  if (!nn_require_const (c, k, error)) /* a graph input: the plan is specialised on it */
    return NULL;
  if (v->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "%s must be float, is %s", what,
                   sedp_nn_dtype_name (v->dtype));
    return NULL;
  }
  return v->data;
}

/* Whether @v has the shape (@rank, @want); an error naming both shapes when not. */
static gboolean
check_shape (OpCtx *c, const Value *v, const char *what, int rank, const gint64 *want,
             GError **error)
{
  gboolean ok = v->rank == rank;
  for (int k = 0; ok && k < rank; k++)
    ok = v->dims[k] == want[k];
  if (!ok) {
    g_autofree char *got = sedp_nn_shape_to_string (v->rank, v->dims);
    g_autofree char *exp = sedp_nn_shape_to_string (rank, want);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "%s is %s, expected %s", what, got, exp);
  }
  return ok;
}

/* An activation name of the attribute "activations". */
static gboolean
parse_activation (OpCtx *c, const char *name, Activation *act, GError **error)
{
  if (g_ascii_strcasecmp (name, "Sigmoid") == 0)
    *act = ACT_SIGMOID;
  else if (g_ascii_strcasecmp (name, "Tanh") == 0)
    *act = ACT_TANH;
  else if (g_ascii_strcasecmp (name, "Relu") == 0)
    *act = ACT_RELU;
  else {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "activation '%s' is not supported (Sigmoid, Tanh, Relu are)", name);
    return FALSE;
  }
  return TRUE;
}

/* Attributes: direction, linear_before_reset, activations, clip, layout. */
static gboolean
gru_attributes (OpCtx *c, GruParams *p, GError **error)
{
  const SedpNnAttr *dir = sedp_nn_node_attr (c->node, "direction");
  const char *ds = dir && dir->type == SEDP_NN_ATTR_STRING ? dir->s : "forward";
  if (strcmp (ds, "forward") != 0 && strcmp (ds, "reverse") != 0 && strcmp (ds, "bidirectional") != 0) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "direction '%s' (forward, reverse or bidirectional)", ds);
    return FALSE;
  }
  p->dirs = strcmp (ds, "bidirectional") == 0 ? 2 : 1;
  p->reverse = strcmp (ds, "reverse") == 0;
  p->lbr = nn_attr_int (c->node, "linear_before_reset", 0) != 0;
  p->layout = c->opset >= 14 && nn_attr_int (c->node, "layout", 0) != 0; /* from opset 14 */
  p->clip = nn_attr_float (c->node, "clip", 0.0f);
  const SedpNnAttr *acts = sedp_nn_node_attr (c->node, "activations");
  guint n = acts && acts->type == SEDP_NN_ATTR_STRINGS ? acts->n_strings : 0;
  if (n != 0 && n != 2u * (guint) p->dirs) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "%u activations, expected %d (2 per direction)", n, 2 * p->dirs);
    return FALSE;
  }
  for (int d = 0; d < p->dirs; d++) {
    p->f[d] = ACT_SIGMOID;
    p->g[d] = ACT_TANH;
    if (n && (!parse_activation (c, acts->strings[2 * d], &p->f[d], error) ||
              !parse_activation (c, acts->strings[2 * d + 1], &p->g[d], error)))
      return FALSE;
  }
  return TRUE;
}

/* X's dims, hidden_size against W and R, and the optional inputs' shapes and types. */
static gboolean
gru_shapes (OpCtx *c, GruParams *p, GError **error)
{
  Value *x = op_in (c, 0), *w = op_in (c, 1), *r = op_in (c, 2);
  if (x->dtype != SEDP_NN_FLOAT || x->rank != 3) {
    g_autofree char *sx = sedp_nn_shape_to_string (x->rank, x->dims);
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "X must be 3-D float, is %s %s",
                   sedp_nn_dtype_name (x->dtype), sx);
    return FALSE;
  }
  p->seq = x->dims[p->layout ? 1 : 0];
  p->batch = x->dims[p->layout ? 0 : 1];
  p->input = x->dims[2];
  p->hidden = nn_attr_int (c->node, "hidden_size", r->rank == 3 ? r->dims[2] : 0);
  gint64 H = p->hidden, D = p->dirs;
  if (H < 1) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "hidden_size %" G_GINT64_FORMAT, H);
    return FALSE;
  }
  if (!check_shape (c, w, "W", 3, I64S (D, 3 * H, p->input), error) ||
      !check_shape (c, r, "R", 3, I64S (D, 3 * H, H), error))
    return FALSE;
  Value *b = op_in (c, 3), *lens = op_in (c, 4), *h0 = op_in (c, 5);
  if (b && !check_shape (c, b, "B", 2, I64S (D, 6 * H), error))
    return FALSE;
  if (lens && lens->dtype != SEDP_NN_INT32 && lens->dtype != SEDP_NN_INT64) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "sequence_lens must be int32 or int64, is %s", sedp_nn_dtype_name (lens->dtype));
    return FALSE;
  }
  if (h0 && h0->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "initial_h must be float, is %s",
                   sedp_nn_dtype_name (h0->dtype));
    return FALSE;
  }
  return (!lens || check_shape (c, lens, "sequence_lens", 1, I64S (p->batch), error)) &&
         (!h0 || check_shape (c, h0, "initial_h", 3,
                              p->layout ? I64S (p->batch, D, H) : I64S (D, p->batch, H), error));
  return TRUE;
}

/* The biases, folded: bias_x = Wb + Rb except Rb_h under linear_before_reset, which goes to
 * bias_h (added to h·R_hᵀ before the reset gate multiplies it). */
static void
gru_biases (GruParams *p, const float *bias)
{
  gint64 H = p->hidden;
  p->bias_x = g_new0 (float, p->dirs * 3 * H);
  p->bias_h = g_new0 (float, p->dirs * 3 * H);
  for (int d = 0; bias && d < p->dirs; d++) {
    const float *wb = bias + d * 6 * H, *rb = wb + 3 * H;
    float *bx = p->bias_x + d * 3 * H, *bh = p->bias_h + d * 3 * H;
    for (gint64 j = 0; j < 3 * H; j++) {
      gboolean hr = p->lbr && j >= 2 * H;
      bx[j] = wb[j] + (hr ? 0.0f : rb[j]);
      bh[j] = hr ? rb[j] : 0.0f;
    }
  }
}

/* Packs W and R per direction, as nn_pack_weights does for Gemm (from 16 columns of A). */
static void
gru_pack (GruParams *p)
{
  gint64 H = p->hidden;
  for (int d = 0; d < p->dirs; d++) {
    const float *w = p->w + d * 3 * H * p->input, *r = p->r + d * 3 * H * H;
    if (p->input >= 16)
      p->pw[d] = nn_packed_b_acquire (w, p->input, 3 * H, TRUE);
    if (H < 16)
      continue;
    p->pr[d] = nn_packed_b_acquire (r, H, p->lbr ? 3 * H : 2 * H, TRUE);
    if (!p->lbr)
      p->prh[d] = nn_packed_b_acquire (r + 2 * H * H, H, H, TRUE);
  }
}

/* Y and Y_h's shapes (each may be omitted). */
static void
gru_outputs (OpCtx *c, const GruParams *p)
{
  gint64 S = p->seq, D = p->dirs, B = p->batch, H = p->hidden;
  if (c->step->out[0] >= 0)
    nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, 4, p->layout ? I64S (B, S, D, H) : I64S (S, D, B, H));
  if (c->step->n_out > 1 && c->step->out[1] >= 0)
    nn_set_shape (op_out (c, 1), SEDP_NN_FLOAT, 3, p->layout ? I64S (B, D, H) : I64S (D, B, H));
}

gboolean
nn_prepare_gru (OpCtx *c, GError **error)
{
  GruParams *p = g_new0 (GruParams, 1);
  c->step->params = p;
  c->step->fn = kernel_gru; /* so that nn_free_rnn_params frees what p owns on failure */
  c->step->id = NN_KERNEL_GRU;
  if (!gru_attributes (c, p, error) || !gru_shapes (c, p, error))
    return FALSE;
  p->w = const_param (c, 1, "W", error);
  p->r = p->w ? const_param (c, 2, "R", error) : NULL;
  const float *bias = op_in (c, 3) && p->r ? const_param (c, 3, "B", error) : NULL;
  if (p->r == NULL || (op_in (c, 3) && bias == NULL))
    return FALSE;
  gru_biases (p, bias);
  if (!c->plan->options.no_pack)
    gru_pack (p);
  gru_outputs (c, p);
  p->scratch = nn_add_scratch (c, gru_scratch_floats (p->seq, p->batch, p->hidden));
  c->step->kernel = p->lbr ? "gru_lbr" : "gru";
  double rows = (double) (p->seq * p->batch * p->dirs), gates = 3.0 * (double) p->hidden;
  c->step->flops = 2.0 * rows * gates * (double) (p->input + p->hidden) + 10.0 * rows * gates;
  return TRUE;
}
