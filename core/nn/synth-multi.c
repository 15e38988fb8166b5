/* sedp — synthetic models: wide & deep (wdl), stacked low-rank DCN-v2 (dcnv2), two-tower DSSM
 * (dssm), ESMM (esmm) and PLE (ple), the models of DeepRec's model zoo that the five of synth.c
 * do not already cover. Conventions (inputs, names, weights) as in synth.c. */
#include "synth-private.h"

#include <math.h>
#include <string.h>

/* The node added last. */
static SedpNnNode *
last_node (SynthBuilder *b)
{
  return &b->m->nodes[b->m->n_nodes - 1];
}

/* The value @name a graph output [batch, @width]. */
static void
add_output (SynthBuilder *b, const char *name, gint64 width)
{
  gint64 dims[2] = {-1, width};
  const char *params[2] = {"batch", NULL};
  sedp_nn_model_add_output (b->m, name, SEDP_NN_FLOAT, 2, dims, params);
}

/* emb_K [rows, dim] drawn within ±@scale, looked up by slot_K and pooled over the ids. */
static const char *
embed_scaled (SynthBuilder *b, guint k, const char *op, float scale)
{
  const char *g = synth_lookup (b, "emb", k, b->o->dim, scale);
  g_autofree char *scope = g_strdup_printf ("/emb.%u", k);
  return synth_reduce (b, scope, op, g, 1, FALSE);
}

/* [batch, 1, h] for stacking along axis 1. */
static const char *
stackable (SynthBuilder *b, const char *scope, const char *x)
{
  return synth_unsqueeze (b, scope, x, 1);
}

static void
append (GPtrArray *to, GPtrArray *from)
{
  for (guint k = 0; k < from->len; k++)
    g_ptr_array_add (to, g_ptr_array_index (from, k));
}

/* Softmax(Linear(@x)) over the experts @stacked [batch, n, h] mixed as
 * `(gate.unsqueeze(-1) * experts).sum(1)` → [batch, h]. */
static const char *
gate_mix (SynthBuilder *b, const char *prefix, const char *x, guint in, GPtrArray *experts)
{
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  const char *g = synth_linear (b, prefix, x, in, experts->len, FALSE);
  SedpNnNode *n = synth_add (b, scope, "Softmax", g, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g = synth_unsqueeze (b, scope, OUT (n), 2);
  const char *stacked = synth_concat (b, scope, experts, 1);
  const char *m = OUT (synth_add (b, scope, "Mul", g, stacked, NULL));
  return synth_reduce (b, scope, "ReduceSum", m, 1, FALSE);
}

/* Wide & deep (Cheng et al. 2016, DeepRec's WDL). Wide: a linear model over the sparse features
 * only, 1-wide tables `wide_emb_K` summed over the ids of every slot and 1-wide tables
 * `cross_emb_K` looked up by the hashed cross features `cross_K` [batch, 1], all summed, plus a
 * bias. Deep: [dense, mean-pooled embeddings] → MLP (Relu) → 1. Sigmoid(wide + deep). */
void
synth_build_wdl (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  gint64 cd[2] = {-1, 1};
  const char *params[2] = {"batch", NULL};
  for (guint k = 0; k < o->crosses; k++) {
    g_autofree char *name = g_strdup_printf ("cross_%u", k);
    sedp_nn_model_add_input (b->m, name, SEDP_NN_INT64, 2, cd, params);
  }

  /* Wide. */
  g_autoptr (GPtrArray) wparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *g = synth_lookup (b, "wide_emb", k, 1, 0.1f);
    g_autofree char *scope = g_strdup_printf ("/wide_emb.%u", k);
    g_ptr_array_add (wparts, (gpointer) synth_reduce (b, scope, "ReduceSum", g, 1, FALSE));
  }
  for (guint k = 0; k < o->crosses; k++) {
    g_autofree char *tname = g_strdup_printf ("cross_emb_%u", k);
    g_autofree char *input = g_strdup_printf ("cross_%u", k);
    g_autofree char *scope = g_strdup_printf ("/cross_emb.%u", k);
    gint64 dims[2] = {o->rows, 1};
    const char *t = synth_init_table (b, tname, 2, dims, -0.1f, 0.1f);
    SedpNnNode *n = synth_add (b, scope, "Gather", t, input, NULL);
    sedp_nn_node_set_attr_int (n, "axis", 0);
    g_ptr_array_add (wparts, (gpointer) synth_reduce (b, scope, "ReduceSum", OUT (n), 1, FALSE));
  }
  const char *wcat = synth_concat (b, "/wide", wparts, 1);
  const char *wsum = synth_reduce (b, "/wide", "ReduceSum", wcat, 1, TRUE);
  gint64 one = 1;
  const char *wbias = synth_init_uniform (b, "wide.bias", 1, &one, -0.1f, 0.1f);
  const char *wide = OUT (synth_add (b, "/wide", "Add", wsum, wbias, NULL));

  /* Deep. */
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_MEAN);
  const char *x = synth_concat (b, "/deep", parts, 1);
  x = synth_mlp (b, "deep", x, o->n_dense + o->slots * o->dim, o->n_hidden, o->hidden, "Relu",
                 "Relu", FALSE);
  const char *deep = synth_linear (b, "deep_out", x, o->hidden[o->n_hidden - 1], 1, FALSE);

  const char *logit = OUT (synth_add (b, "", "Add", wide, deep, NULL));
  synth_sigmoid_output (b, logit, "prob");
}

/* DCN-v2 (Wang et al., WWW'21), the stacked low-rank form: x₀ = [dense, pooled embeddings];
 * cross layers x_{l+1} = x₀ ⊙ (U_l (V_lᵀ x_l) + b_l) + x_l, V_l a bias-free Linear(d, r) (MatMul),
 * U_l a Linear(r, d) (Gemm); the deep MLP on top of x_L; → 1; Sigmoid. */
void
synth_build_dcnv2 (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *x0 = synth_concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim, r = o->cross_rank;
  const char *xl = x0;
  float a = sqrtf (3.0f / (float) d0);
  for (guint l = 0; l < o->cross_layers; l++) {
    g_autofree char *vscope = g_strdup_printf ("/cross.%u.V", l);
    g_autofree char *uprefix = g_strdup_printf ("cross.%u.U", l);
    g_autofree char *scope = g_strdup_printf ("/cross.%u", l);
    g_autofree char *vname = synth_anon_name (b, "MatMul");
    gint64 vd[2] = {d0, r};
    const char *v = synth_init_uniform (b, vname, 2, vd, -a, a);
    const char *xv = OUT (synth_add (b, vscope, "MatMul", xl, v, NULL));
    const char *u = synth_linear_gain (b, uprefix, xv, r, d0, FALSE, 0.5f);
    const char *m = OUT (synth_add (b, scope, "Mul", x0, u, NULL));
    xl = OUT (synth_add (b, scope, "Add", m, xl, NULL));
  }
  const char *deep = synth_mlp (b, "deep", xl, d0, o->n_hidden, o->hidden, "Relu", "Relu", TRUE);
  const char *logit = synth_linear (b, "out", deep, o->hidden[o->n_hidden - 1], 1, FALSE);
  synth_sigmoid_output (b, logit, "prob");
}

/* DSSM (Huang et al. 2013; two-tower retrieval as DeepRec's DSSM). User tower over [dense, the
 * first slots/2 slots sum-pooled], item tower over the other slots mean-pooled, each an MLP with
 * Tanh on every layer; score = 5 · cos(u, v) (ReduceSum(u·v) / (√Σu² · √Σv² + ε)); Sigmoid.
 * Outputs prob [batch, 1], then the towers' vectors user_vec, item_vec [batch, h]. */
void
synth_build_dssm (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  guint nu = o->slots / 2, h = o->hidden[o->n_hidden - 1];
  g_autoptr (GPtrArray) uparts = g_ptr_array_new ();
  g_ptr_array_add (uparts, (gpointer) "dense");
  for (guint k = 0; k < nu; k++)
    g_ptr_array_add (uparts, (gpointer) embed_scaled (b, k, "ReduceSum", 0.5f));
  const char *u = synth_concat (b, "/user_tower", uparts, 1);
  u = synth_mlp (b, "user_tower", u, o->n_dense + nu * o->dim, o->n_hidden, o->hidden, "Tanh",
                 "Tanh", FALSE);
  synth_rename_output (last_node (b), "user_vec");
  u = "user_vec";

  g_autoptr (GPtrArray) iparts = g_ptr_array_new ();
  for (guint k = nu; k < o->slots; k++)
    g_ptr_array_add (iparts, (gpointer) embed_scaled (b, k, "ReduceMean", 1.0f));
  const char *v = synth_concat (b, "/item_tower", iparts, 1);
  v = synth_mlp (b, "item_tower", v, (o->slots - nu) * o->dim, o->n_hidden, o->hidden, "Tanh",
                 "Tanh", FALSE);
  synth_rename_output (last_node (b), "item_vec");
  v = "item_vec";

  const char *s = "/cosine";
  const char *uv = OUT (synth_add (b, s, "Mul", u, v, NULL));
  const char *dot = synth_reduce (b, s, "ReduceSum", uv, 1, TRUE);
  const char *uu = OUT (synth_add (b, s, "Mul", u, u, NULL));
  const char *nu2 = OUT (synth_add (b, s, "Sqrt", synth_reduce (b, s, "ReduceSum", uu, 1, TRUE), NULL));
  const char *vv = OUT (synth_add (b, s, "Mul", v, v, NULL));
  const char *nv2 = OUT (synth_add (b, s, "Sqrt", synth_reduce (b, s, "ReduceSum", vv, 1, TRUE), NULL));
  const char *den = OUT (synth_add (b, s, "Mul", nu2, nv2, NULL));
  den = OUT (synth_add (b, s, "Add", den, synth_const_f (b, s, 1e-8f), NULL));
  const char *cosine = OUT (synth_add (b, s, "Div", dot, den, NULL));
  const char *score = OUT (synth_add (b, "", "Mul", cosine, synth_const_f (b, "", 5.0f), NULL));
  synth_sigmoid_output (b, score, "prob");
  add_output (b, "user_vec", h);
  add_output (b, "item_vec", h);
}

/* ESMM (Ma et al., SIGIR'18): shared embeddings, x = [dense, pooled embeddings]; a CTR tower and
 * a CVR tower (MLPs with Relu, → 1); ctr = Sigmoid(CTR), ctcvr = ctr · Sigmoid(CVR). */
void
synth_build_esmm (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *x = synth_concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim, h = o->hidden[o->n_hidden - 1];
  const char *ctr = synth_mlp (b, "ctr_tower", x, d0, o->n_hidden, o->hidden, "Relu", "Relu", FALSE);
  ctr = synth_linear (b, "ctr_tower.out", ctr, h, 1, FALSE);
  ctr = synth_sigmoid_output (b, ctr, "ctr");
  const char *cvr = synth_mlp (b, "cvr_tower", x, d0, o->n_hidden, o->hidden, "Relu", "Relu", FALSE);
  cvr = synth_linear (b, "cvr_tower.out", cvr, h, 1, FALSE);
  cvr = OUT (synth_add (b, "/cvr_tower", "Sigmoid", cvr, NULL));
  synth_add_output (b, synth_add (b, "", "Mul", ctr, cvr, NULL), "ctcvr");
}

/* PLE (Tang et al., RecSys'20), two tasks: x = [dense, mean-pooled embeddings]; per level,
 * task_experts expert MLPs per task over the task's input and shared_experts over the shared
 * input; each task's gate mixes its experts and the shared ones (Softmax over them, Unsqueeze,
 * Mul, ReduceSum) into the task's next input; below the last level a shared gate mixes all
 * experts into the next shared input. Towers (Relu) → 1 → Sigmoid: ctr, cvr. */
void
synth_build_ple (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_MEAN);
  const char *x = synth_concat (b, "", parts, 1);
  guint in = o->n_dense + o->slots * o->dim, h = o->expert_hidden[o->n_expert_hidden - 1];
  const char *task_in[2] = {x, x}, *shared_in = x;
  for (guint l = 0; l < o->levels; l++) {
    GPtrArray *task_e[2] = {g_ptr_array_new (), g_ptr_array_new ()};
    g_autoptr (GPtrArray) shared_e = g_ptr_array_new ();
    for (guint t = 0; t < 2; t++)
      for (guint e = 0; e < o->task_experts; e++) {
        g_autofree char *prefix = g_strdup_printf ("levels.%u.task_experts.%u.%u", l, t, e);
        g_autofree char *scope = g_strdup_printf ("/%s", prefix);
        const char *y = synth_mlp (b, prefix, task_in[t], in, o->n_expert_hidden,
                                   o->expert_hidden, "Relu", "Relu", FALSE);
        g_ptr_array_add (task_e[t], (gpointer) stackable (b, scope, y));
      }
    for (guint e = 0; e < o->shared_experts; e++) {
      g_autofree char *prefix = g_strdup_printf ("levels.%u.shared_experts.%u", l, e);
      g_autofree char *scope = g_strdup_printf ("/%s", prefix);
      const char *y = synth_mlp (b, prefix, shared_in, in, o->n_expert_hidden, o->expert_hidden,
                                 "Relu", "Relu", FALSE);
      g_ptr_array_add (shared_e, (gpointer) stackable (b, scope, y));
    }
    const char *next[2];
    for (guint t = 0; t < 2; t++) {
      g_autoptr (GPtrArray) mine = g_ptr_array_new ();
      append (mine, task_e[t]);
      append (mine, shared_e);
      g_autofree char *prefix = g_strdup_printf ("levels.%u.gates.%u", l, t);
      next[t] = gate_mix (b, prefix, task_in[t], in, mine);
    }
    if (l + 1 < o->levels) {
      g_autoptr (GPtrArray) all = g_ptr_array_new ();
      append (all, task_e[0]);
      append (all, task_e[1]);
      append (all, shared_e);
      g_autofree char *prefix = g_strdup_printf ("levels.%u.shared_gate", l);
      shared_in = gate_mix (b, prefix, shared_in, in, all);
    }
    g_ptr_array_unref (task_e[0]);
    g_ptr_array_unref (task_e[1]);
    task_in[0] = next[0];
    task_in[1] = next[1];
    in = h;
  }
  static const char *const tasks[2] = {"ctr", "cvr"};
  for (guint t = 0; t < 2; t++) {
    g_autofree char *tp = g_strdup_printf ("towers.%u", t);
    g_autofree char *op = g_strdup_printf ("towers.%u.out", t);
    g_autofree char *ts = g_strdup_printf ("/towers.%u", t);
    guint tower[1] = {o->tower};
    const char *y = synth_mlp (b, tp, task_in[t], h, 1, tower, "Relu", "Relu", FALSE);
    y = synth_linear (b, op, y, o->tower, 1, FALSE);
    synth_add_output (b, synth_add (b, ts, "Sigmoid", y, NULL), tasks[t]);
  }
}
