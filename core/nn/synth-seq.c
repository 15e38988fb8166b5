/* sedp — the sequence models of `sedp model synth`: DIN, DIEN (AIGRU) and BST, shaped as
 * torch.onnx.export (opset 17, the TorchScript exporter) writes their PyTorch modules.
 *
 * Besides `dense` and the pooled `slot_K`, each reads `item` int64 [batch, 1] (the candidate) and
 * `hist` int64 [batch, seq_len] (the user's behaviour sequence, oldest first, right-padded with
 * 0). Both index one table `emb_item` [rows, dim] whose row 0 is zero (padding_idx = 0); the
 * padding mask is computed in the graph from `hist` (Equal(hist, 0)), so padded positions never
 * contribute. One output, `prob` [batch, 1]. */
#include "synth-private.h"

#include <math.h>
#include <string.h>

gboolean
synth_seq_is_seq (const char *arch)
{
  return arch && (strcmp (arch, "din") == 0 || strcmp (arch, "dien") == 0 ||
                  strcmp (arch, "bst") == 0);
}

static void
set_sizes (guint *n, guint *sizes, guint count, const guint *v)
{
  memcpy (sizes, v, count * sizeof (guint));
  *n = count;
}

void
synth_seq_options_init (SedpNnSynthOptions *o, gboolean realistic, const char *arch)
{
  static const guint att_small[2] = {16, 8}, att_real[2] = {80, 40};
  /* Every architecture gets the sequence fields (unused but by din, dien and bst). */
  o->seq_len = realistic ? 50 : 10;
  set_sizes (&o->n_att_hidden, o->att_hidden, 2, realistic ? att_real : att_small);
  o->heads = realistic ? 8 : 2;
  o->ffn = 4 * o->dim;
  if (!synth_seq_is_seq (arch))
    return;
  /* DIN's and DIEN's papers: a few user features, embeddings of 12 to 32, an MLP 200-80. */
  static const guint mlp_small[2] = {32, 16}, mlp_real[2] = {200, 80};
  static const guint bst_real[3] = {1024, 512, 256};
  o->slots = realistic ? 4 : 2;
  o->dim = realistic ? 32 : 8;
  o->rows = realistic ? 10000 : 100;
  o->ffn = 4 * o->dim;
  if (strcmp (arch, "bst") == 0) {
    /* BST: sequences of 20, 8 heads, an MLP 1024-512-256. */
    if (realistic) {
      o->seq_len = 20;
      set_sizes (&o->n_hidden, o->hidden, 3, bst_real);
    } else
      set_sizes (&o->n_hidden, o->hidden, 2, mlp_small);
  } else
    set_sizes (&o->n_hidden, o->hidden, 2, realistic ? mlp_real : mlp_small);
}

gboolean
synth_seq_check_options (const SedpNnSynthOptions *o, const char *arch, GError **error)
{
  if (!synth_seq_is_seq (arch))
    return TRUE;
#define RANGE(field, lo, hi)                                                                    \
  if ((gint64) o->field < (lo) || (gint64) o->field > (hi)) {                                   \
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,                                   \
                 "synth: %s must be between %d and %d (got %" G_GINT64_FORMAT ")", #field,      \
                 (int) (lo), (int) (hi), (gint64) o->field);                                    \
    return FALSE;                                                                               \
  }
  RANGE (seq_len, 1, 4096);
  if (strcmp (arch, "bst") == 0) {
    RANGE (heads, 1, 1024);
    RANGE (ffn, 1, 65536);
    if (o->dim % o->heads != 0) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "synth: heads (%u) must divide dim (%u) for bst", o->heads, o->dim);
      return FALSE;
    }
  } else {
    RANGE (n_att_hidden, 1, SEDP_NN_SYNTH_MAX_LAYERS);
    for (guint k = 0; k < o->n_att_hidden; k++)
      if (o->att_hidden[k] < 1 || o->att_hidden[k] > 65536) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "synth: att_hidden[%u] must be between 1 and 65536 (got %u)", k,
                     o->att_hidden[k]);
        return FALSE;
      }
  }
#undef RANGE
  return TRUE;
}

/* ---- pieces ---- */

/* The inputs item [batch, 1] and hist [batch, seq_len], and the item table emb_item [rows, dim]
 * with row 0 zero, as nn.Embedding(rows, dim, padding_idx=0). */
static const char *
seq_inputs (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  const char *params[2] = {"batch", NULL};
  gint64 id[2] = {-1, 1}, hd[2] = {-1, o->seq_len};
  sedp_nn_model_add_input (b->m, "item", SEDP_NN_INT64, 2, id, params);
  sedp_nn_model_add_input (b->m, "hist", SEDP_NN_INT64, 2, hd, params);
  gint64 dims[2] = {o->rows, o->dim};
  SedpNnTensor *t = sedp_nn_tensor_new ("emb_item", SEDP_NN_FLOAT, 2, dims);
  float *d = t->data;
  /* Wider than the slots' tables (±0.1): the attention reads differences between items. */
  b->tables = TRUE;
  for (gint64 k = 0; k < (gint64) o->rows * o->dim; k++)
    d[k] = synth_rng_uniform (b, -0.5f, 0.5f);
  b->tables = FALSE;
  memset (d, 0, o->dim * sizeof (float));
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

static const char *
gather (SynthBuilder *b, const char *table, const char *ids)
{
  SedpNnNode *n = synth_add (b, "/emb_item", "Gather", table, ids, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  return OUT (n);
}

static const char *
transpose (SynthBuilder *b, const char *scope, const char *x, guint rank, const gint64 *perm)
{
  SedpNnNode *n = synth_add (b, scope, "Transpose", x, NULL);
  sedp_nn_node_set_attr_ints (n, "perm", rank, perm);
  return OUT (n);
}

static const char *
softmax (SynthBuilder *b, const char *scope, const char *x)
{
  SedpNnNode *n = synth_add (b, scope, "Softmax", x, NULL);
  sedp_nn_node_set_attr_int (n, "axis", -1);
  return OUT (n);
}

static const char *
cast (SynthBuilder *b, const char *scope, const char *x, SedpNnDType to)
{
  SedpNnNode *n = synth_add (b, scope, "Cast", x, NULL);
  sedp_nn_node_set_attr_int (n, "to", to);
  return OUT (n);
}

/* hist == 0: the padded positions, bool [batch, seq_len]. */
static const char *
padding_mask (SynthBuilder *b, const char *scope)
{
  gint64 zero = 0;
  const char *z = synth_const_i64 (b, scope, 0, 1, &zero);
  return OUT (synth_add (b, scope, "Equal", "hist", z, NULL));
}

/* DIN's activation unit over keys [B, L, D] for the query [B, 1, D]: q expanded as the keys,
 * [q, k, q − k, q·k] → MLP (Sigmoid) → one score per position [B, L, 1]. */
static const char *
activation_unit (SynthBuilder *b, const char *prefix, const char *q, const char *k)
{
  const SedpNnSynthOptions *o = b->o;
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  const char *shape = OUT (synth_add (b, scope, "Shape", k, NULL));
  const char *qe = OUT (synth_add (b, scope, "Expand", q, shape, NULL));
  const char *diff = OUT (synth_add (b, scope, "Sub", qe, k, NULL));
  const char *prod = OUT (synth_add (b, scope, "Mul", qe, k, NULL));
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) qe);
  g_ptr_array_add (parts, (gpointer) k);
  g_ptr_array_add (parts, (gpointer) diff);
  g_ptr_array_add (parts, (gpointer) prod);
  const char *x = synth_concat (b, scope, parts, -1);
  guint in = 4 * o->dim;
  for (guint l = 0; l < o->n_att_hidden; l++) {
    g_autofree char *p = g_strdup_printf ("%s.mlp.%u", prefix, 2 * l);
    g_autofree char *s = g_strdup_printf ("/%s.mlp.%u", prefix, 2 * l + 1);
    /* Gain 4: the sigmoid's slope at 0 is 1/4, so the differences between positions keep
     * their scale through the layers instead of shrinking fourfold at each. */
    x = synth_linear_gain (b, p, x, in, o->att_hidden[l], TRUE, 4.0f);
    x = synth_activation (b, s, "Sigmoid", x);
    in = o->att_hidden[l];
  }
  g_autofree char *p = g_strdup_printf ("%s.out", prefix);
  return synth_linear_gain (b, p, x, in, 1, TRUE, 4.0f);
}

/* scores [B, L, 1] → [B, 1, L], padded positions set to −2³² + 1 (DeepCTR's padding), Softmax
 * over the positions. */
static const char *
masked_softmax (SynthBuilder *b, const char *scope, const char *score, const char *mask)
{
  static const gint64 perm[3] = {0, 2, 1};
  const char *t = transpose (b, scope, score, 3, perm);
  const char *m = synth_unsqueeze (b, scope, mask, 1);
  const char *pad = synth_const_f (b, scope, (float) -4294967295.0);
  const char *w = OUT (synth_add (b, scope, "Where", m, pad, t, NULL));
  return softmax (b, scope, w);
}

/* [dense, pooled slots, extra parts…] → MLP (Relu) → 1 → Sigmoid `prob`. */
static void
head (SynthBuilder *b, GPtrArray *parts, guint in)
{
  const SedpNnSynthOptions *o = b->o;
  const char *x = synth_concat (b, "", parts, 1);
  x = synth_mlp (b, "mlp", x, in, o->n_hidden, o->hidden, "Relu", "Relu", FALSE);
  x = synth_linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);
  synth_sigmoid_output (b, x, "prob");
}

/* ---- DIN ---- */

/* DIN (Zhou et al., KDD 2018): the activation unit weighs the behaviours by their relevance to
 * the candidate; the weighted sum is the user's interest in it. */
void
synth_build_din (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  const char *table = seq_inputs (b);
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *q = gather (b, table, "item");
  const char *k = gather (b, table, "hist");
  const char *mask = padding_mask (b, "/att");
  const char *score = activation_unit (b, "att", q, k);
  const char *w = masked_softmax (b, "/att", score, mask);
  const char *interest = OUT (synth_add (b, "/att", "MatMul", w, k, NULL));
  interest = synth_squeeze (b, "/att", interest, 1);
  g_ptr_array_add (parts, (gpointer) synth_squeeze (b, "/emb_item", q, 1));
  g_ptr_array_add (parts, (gpointer) interest);
  head (b, parts, o->n_dense + (o->slots + 2) * o->dim);
}

/* ---- DIEN ---- */

/* nn.GRU(in, hidden, batch_first=True) over x [B, L, in] with lengths: Transpose to [L, B, in],
 * GRU (linear_before_reset = 1, torch's formula; W, R, B as ONNX orders the gates), Y squeezed
 * and transposed back to [B, L, hidden] (when @y), Y_h squeezed to [B, hidden]. */
static const char *
gru (SynthBuilder *b, const char *prefix, const char *x, guint in, guint hidden, const char *lens,
     const char **y)
{
  static const gint64 perm[3] = {1, 0, 2};
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  const char *xt = transpose (b, scope, x, 3, perm);
  float a = 1.0f / sqrtf ((float) hidden);
  gint64 wd[3] = {1, 3 * hidden, in}, rd[3] = {1, 3 * hidden, hidden}, bd[2] = {1, 6 * hidden};
  g_autofree char *wn = synth_anon_name (b, "GRU");
  g_autofree char *rn = synth_anon_name (b, "GRU");
  g_autofree char *bn = synth_anon_name (b, "GRU");
  const char *w = synth_init_uniform (b, wn, 3, wd, -a, a);
  const char *r = synth_init_uniform (b, rn, 3, rd, -a, a);
  const char *bias = synth_init_uniform (b, bn, 2, bd, -a, a);
  g_autofree char *name = g_strdup_printf ("%s/GRU", scope);
  g_autofree char *y0 = g_strdup_printf ("%s/GRU_output_0", scope);
  g_autofree char *y1 = g_strdup_printf ("%s/GRU_output_1", scope);
  const char *ins[6] = {xt, w, r, bias, lens, NULL};
  const char *outs[3] = {y0, y1, NULL};
  SedpNnNode *n = sedp_nn_model_add_node (b->m, "GRU", name, ins, outs);
  sedp_nn_node_set_attr_int (n, "hidden_size", hidden);
  sedp_nn_node_set_attr_int (n, "linear_before_reset", 1);
  if (y) {
    const char *s = synth_squeeze (b, scope, y0, 1);
    *y = transpose (b, scope, s, 3, perm);
  }
  return synth_squeeze (b, scope, y1, 0);
}

/* DIEN (Zhou et al., AAAI 2019), AIGRU: an interest extractor GRU over the behaviours; the
 * activation unit of the candidate over its states, masked and softmaxed; an interest evolving
 * GRU over the states scaled by their attention; its last state is the evolved interest. Both
 * GRUs get the lengths (the non-zero ids), computed in the graph. */
void
synth_build_dien (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  const char *table = seq_inputs (b);
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *q = gather (b, table, "item");
  const char *k = gather (b, table, "hist");
  const char *mask = padding_mask (b, "/lengths");
  const char *nz = OUT (synth_add (b, "/lengths", "Not", mask, NULL));
  nz = cast (b, "/lengths", nz, SEDP_NN_FLOAT);
  const char *len = synth_reduce (b, "/lengths", "ReduceSum", nz, 1, FALSE);
  len = cast (b, "/lengths", len, SEDP_NN_INT32);

  guint h = o->dim;
  const char *states = NULL;
  gru (b, "extractor", k, o->dim, h, len, &states);
  const char *score = activation_unit (b, "att", q, states);
  const char *w = masked_softmax (b, "/att", score, mask);
  static const gint64 perm[3] = {0, 2, 1};
  const char *a = transpose (b, "/att", w, 3, perm);
  const char *scaled = OUT (synth_add (b, "/att", "Mul", states, a, NULL));
  const char *interest = gru (b, "evolution", scaled, h, h, len, NULL);
  g_ptr_array_add (parts, (gpointer) synth_squeeze (b, "/emb_item", q, 1));
  g_ptr_array_add (parts, (gpointer) interest);
  head (b, parts, o->n_dense + (o->slots + 1) * o->dim + h);
}

/* ---- BST ---- */

/* nn.LayerNorm(dim): LayerNormalization from opset 17; before, the exporter's decomposition
 * (ReduceMean, Sub, Pow, ReduceMean, Add ε, Sqrt, Div, Mul, Add). */
static const char *
layer_norm (SynthBuilder *b, const char *prefix, const char *x)
{
  const SedpNnSynthOptions *o = b->o;
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  g_autofree char *wn = g_strdup_printf ("%s.weight", prefix);
  g_autofree char *bn = g_strdup_printf ("%s.bias", prefix);
  gint64 d[1] = {o->dim};
  const char *w = synth_init_uniform (b, wn, 1, d, 0.8f, 1.2f);
  const char *bias = synth_init_uniform (b, bn, 1, d, -0.1f, 0.1f);
  if (o->opset >= 17) {
    SedpNnNode *n = synth_add (b, scope, "LayerNormalization", x, w, bias, NULL);
    sedp_nn_node_set_attr_int (n, "axis", -1);
    sedp_nn_node_set_attr_float (n, "epsilon", 1e-5f);
    return OUT (n);
  }
  const char *mean = synth_reduce (b, scope, "ReduceMean", x, -1, TRUE);
  const char *c = OUT (synth_add (b, scope, "Sub", x, mean, NULL));
  const char *sq = OUT (synth_add (b, scope, "Pow", c, synth_const_f (b, scope, 2.0f), NULL));
  const char *var = synth_reduce (b, scope, "ReduceMean", sq, -1, TRUE);
  const char *ve = OUT (synth_add (b, scope, "Add", var, synth_const_f (b, scope, 1e-5f), NULL));
  const char *sd = OUT (synth_add (b, scope, "Sqrt", ve, NULL));
  const char *nrm = OUT (synth_add (b, scope, "Div", c, sd, NULL));
  const char *m = OUT (synth_add (b, scope, "Mul", nrm, w, NULL));
  return OUT (synth_add (b, scope, "Add", m, bias, NULL));
}

/* x [B, T, D] → [B, heads, T, D / heads]: view, then transpose(1, 2). */
static const char *
split_heads (SynthBuilder *b, const char *x)
{
  const SedpNnSynthOptions *o = b->o;
  gint64 rest[3] = {-1, o->heads, o->dim / o->heads};
  const char *v = synth_view_batch (b, "/attn", x, 3, rest);
  static const gint64 perm[4] = {0, 2, 1, 3};
  return transpose (b, "/attn", v, 4, perm);
}

/* BST (Chen et al., 2019): the behaviours and the candidate as one sequence with learned
 * positions; one transformer block (multi-head self-attention with a key padding mask, residual
 * and LayerNorm, a LeakyRelu feed-forward, residual and LayerNorm); flattened, with the other
 * features, into an MLP. */
void
synth_build_bst (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  const char *table = seq_inputs (b);
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *q = gather (b, table, "item");
  const char *k = gather (b, table, "hist");
  guint t = o->seq_len + 1, d = o->dim, dh = d / o->heads;
  g_autoptr (GPtrArray) sp = g_ptr_array_new ();
  g_ptr_array_add (sp, (gpointer) k);
  g_ptr_array_add (sp, (gpointer) q);
  const char *x = synth_concat (b, "", sp, 1);
  gint64 pd[2] = {t, d};
  const char *pos = synth_init_uniform (b, "pos_emb", 2, pd, -0.5f, 0.5f);
  x = OUT (synth_add (b, "", "Add", x, pos, NULL));

  /* The key padding mask [B, T]: hist == 0, then the candidate, never masked. */
  const char *pm = padding_mask (b, "/mask");
  const char *ishape = OUT (synth_add (b, "/mask", "Shape", "item", NULL));
  gint64 one = 1;
  SedpNnTensor *f = sedp_nn_tensor_new (NULL, SEDP_NN_BOOL, 1, &one);
  SedpNnNode *n = synth_add (b, "/mask", "ConstantOfShape", ishape, NULL);
  sedp_nn_node_set_attr_tensor (n, "value", f);
  g_autoptr (GPtrArray) mp = g_ptr_array_new ();
  g_ptr_array_add (mp, (gpointer) pm);
  g_ptr_array_add (mp, (gpointer) OUT (n));
  const char *mask = synth_concat (b, "/mask", mp, 1);
  mask = synth_unsqueeze (b, "/mask", mask, 1);
  mask = synth_unsqueeze (b, "/mask", mask, 2);

  /* Multi-head self-attention. */
  const char *qh = split_heads (b, synth_linear (b, "attn.q", x, d, d, TRUE));
  const char *kh = split_heads (b, synth_linear (b, "attn.k", x, d, d, TRUE));
  const char *vh = split_heads (b, synth_linear (b, "attn.v", x, d, d, TRUE));
  static const gint64 swap[4] = {0, 1, 3, 2};
  const char *kt = transpose (b, "/attn", kh, 4, swap);
  const char *s = OUT (synth_add (b, "/attn", "MatMul", qh, kt, NULL));
  s = OUT (synth_add (b, "/attn", "Div", s, synth_const_f (b, "/attn", sqrtf ((float) dh)), NULL));
  s = OUT (synth_add (b, "/attn", "Where", mask, synth_const_f (b, "/attn", -1e9f), s, NULL));
  const char *p = softmax (b, "/attn", s);
  const char *ctx = OUT (synth_add (b, "/attn", "MatMul", p, vh, NULL));
  static const gint64 back[4] = {0, 2, 1, 3};
  ctx = transpose (b, "/attn", ctx, 4, back);
  gint64 rest[2] = {-1, d};
  ctx = synth_view_batch (b, "/attn", ctx, 2, rest);
  const char *att = synth_linear (b, "attn.out", ctx, d, d, TRUE);
  x = layer_norm (b, "ln1", OUT (synth_add (b, "", "Add", x, att, NULL)));

  /* Feed-forward. */
  const char *y = synth_linear_gain (b, "ffn.0", x, d, o->ffn, TRUE, (float) G_SQRT2);
  y = synth_activation (b, "/ffn.1", "LeakyRelu", y);
  y = synth_linear (b, "ffn.2", y, o->ffn, d, TRUE);
  x = layer_norm (b, "ln2", OUT (synth_add (b, "", "Add", x, y, NULL)));

  n = synth_add (b, "", "Flatten", x, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g_ptr_array_add (parts, (gpointer) OUT (n));
  head (b, parts, o->n_dense + o->slots * o->dim + t * d);
}
