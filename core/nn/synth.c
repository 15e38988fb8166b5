/* sedp — synthetic recommendation models, shaped as PyTorch's ONNX exporter writes them.
 *
 * Every model reads `dense` float [batch, n_dense] and `slot_K` int64 [batch, ids_per_slot];
 * embedding tables are initializers `emb_K` [rows, dim] looked up by Gather(emb_K, slot_K, axis=0)
 * and pooled over the ids by ReduceSum / ReduceMean (axes as an input where the opset has it:
 * ReduceSum from 13, ReduceMean from 18). Linear layers are Gemm(x, W, b, transB=1) as PyTorch
 * exports nn.Linear on 2-D inputs, or MatMul + Add(bias, ·) as it exports them on other ranks.
 * Node and value names follow the exporter ("/deep.0/Gemm", "/deep.0/Gemm_output_0"); shape
 * arithmetic appears as PyTorch traces it (Shape → Gather → Unsqueeze → Concat → Reshape). */
#include "synth.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char *const archs[] = {"mlp", "dlrm", "dcn", "deepfm", "mmoe", NULL};

const char *const *
sedp_nn_synth_archs (void)
{
  return archs;
}

static void
set_layers (guint *n, guint *sizes, guint count, ...)
{
  va_list ap;
  va_start (ap, count);
  for (guint k = 0; k < count; k++)
    sizes[k] = va_arg (ap, guint);
  va_end (ap);
  *n = count;
}

gboolean
sedp_nn_synth_options_init (SedpNnSynthOptions *o, const char *preset, const char *arch)
{
  memset (o, 0, sizeof *o);
  o->opset = 17;
  if (preset == NULL || strcmp (preset, "small") == 0) {
    o->slots = 4;
    o->dim = 8;
    o->rows = 100;
    o->ids_per_slot = 3;
    o->n_dense = 5;
    set_layers (&o->n_hidden, o->hidden, 2, 32, 16);
    set_layers (&o->n_bottom, o->bottom, 1, 16);
    o->cross_layers = 2;
    o->experts = 3;
    set_layers (&o->n_expert_hidden, o->expert_hidden, 2, 32, 16);
    o->tower = 8;
    return TRUE;
  }
  if (strcmp (preset, "realistic") == 0) {
    o->slots = 26;
    o->dim = 32;
    o->rows = 10000;
    o->ids_per_slot = 4;
    o->n_dense = 13;
    set_layers (&o->n_hidden, o->hidden, 3, 512, 256, 128);
    set_layers (&o->n_bottom, o->bottom, 2, 512, 256);
    o->cross_layers = 3;
    o->experts = 4;
    set_layers (&o->n_expert_hidden, o->expert_hidden, 2, 256, 128);
    o->tower = 64;
    return TRUE;
  }
  return FALSE;
}

/* The builder. */

typedef struct {
  SedpNnModel *m;
  const SedpNnSynthOptions *o;
  guint64 rng;
  GHashTable *names; /* node names in use (owned keys) → uses */
  GHashTable *axes;  /* reduce axes initializers by content → name (borrowed) */
  guint anon;
} B;

/* splitmix64: the same stream on every platform. */
static guint64
rng_next (B *b)
{
  guint64 z = (b->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float
rng_uniform (B *b, float lo, float hi)
{
  double u = (double) (rng_next (b) >> 40) / (double) (1ULL << 24);
  return (float) (lo + (hi - lo) * u);
}

static char *
anon_name (B *b, const char *what)
{
  return g_strdup_printf ("onnx::%s_%u", what, ++b->anon);
}

/* A float initializer of @rank dims, uniform in [lo, hi). Returns its name (owned by the model). */
static const char *
init_uniform (B *b, const char *name, int rank, const gint64 *dims, float lo, float hi)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, rank, dims);
  float *d = t->data;
  gint64 n = sedp_nn_tensor_numel (t);
  for (gint64 k = 0; k < n; k++)
    d[k] = rng_uniform (b, lo, hi);
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

static const char *
init_scalar_f (B *b, const char *name, float v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, 0, NULL);
  *(float *) t->data = v;
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

static const char *
init_i64 (B *b, const char *name, guint n, const gint64 *v)
{
  gint64 dims[1] = {n};
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_INT64, 1, dims);
  memcpy (t->data, v, n * sizeof (gint64));
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

/* A node with one output "<scope>/<op>[_N]_output_0"; @in NULL-terminated. The node pointer is
 * valid until the next node is added. */
static SedpNnNode *
addv (B *b, const char *scope, const char *op, const char *const *in)
{
  char *base = g_strdup_printf ("%s/%s", scope, op);
  guint uses = GPOINTER_TO_UINT (g_hash_table_lookup (b->names, base));
  char *name = uses ? g_strdup_printf ("%s_%u", base, uses) : g_strdup (base);
  g_hash_table_insert (b->names, base, GUINT_TO_POINTER (uses + 1));
  char *out = g_strdup_printf ("%s_output_0", name);
  const char *outs[2] = {out, NULL};
  SedpNnNode *node = sedp_nn_model_add_node (b->m, op, name, in, outs);
  g_free (name);
  g_free (out);
  return node;
}

/* Same with the inputs as arguments, NULL-terminated. */
static SedpNnNode *
add (B *b, const char *scope, const char *op, ...)
{
  const char *in[16];
  guint n = 0;
  va_list ap;
  va_start (ap, op);
  for (const char *s = va_arg (ap, const char *); s; s = va_arg (ap, const char *)) {
    g_assert (n < G_N_ELEMENTS (in) - 1);
    in[n++] = s;
  }
  va_end (ap);
  in[n] = NULL;
  return addv (b, scope, op, in);
}

/* Same with the inputs in an array. */
static SedpNnNode *
add_array (B *b, const char *scope, const char *op, GPtrArray *inputs)
{
  g_autofree const char **in = g_new0 (const char *, inputs->len + 1);
  for (guint k = 0; k < inputs->len; k++)
    in[k] = g_ptr_array_index (inputs, k);
  return addv (b, scope, op, in);
}

#define OUT(node) ((const char *) (node)->outputs[0])

static void
rename_output (SedpNnNode *n, const char *name)
{
  g_free (n->outputs[0]);
  n->outputs[0] = g_strdup (name);
}

/* A Constant node holding an int64 scalar (rank 0) or vector. */
static const char *
const_i64 (B *b, const char *scope, int rank, guint n, const gint64 *v)
{
  gint64 dims[1] = {n};
  SedpNnTensor *t = sedp_nn_tensor_new (NULL, SEDP_NN_INT64, rank, dims);
  memcpy (t->data, v, n * sizeof (gint64));
  SedpNnNode *node = add (b, scope, "Constant", NULL);
  sedp_nn_node_set_attr_tensor (node, "value", t);
  return OUT (node);
}

static const char *
const_f (B *b, const char *scope, float v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (NULL, SEDP_NN_FLOAT, 0, NULL);
  *(float *) t->data = v;
  SedpNnNode *node = add (b, scope, "Constant", NULL);
  sedp_nn_node_set_attr_tensor (node, "value", t);
  return OUT (node);
}

/* Unsqueeze / Squeeze one axis: axes an input (a Constant) from opset 13, an attribute before. */
static const char *
unsqueeze_like (B *b, const char *scope, const char *op, const char *x, gint64 axis)
{
  if (b->o->opset >= 13) {
    const char *axes = const_i64 (b, scope, 1, 1, &axis);
    return OUT (add (b, scope, op, x, axes, NULL));
  }
  SedpNnNode *n = add (b, scope, op, x, NULL);
  sedp_nn_node_set_attr_ints (n, "axes", 1, &axis);
  return OUT (n);
}

static const char *
unsqueeze (B *b, const char *scope, const char *x, gint64 axis)
{
  return unsqueeze_like (b, scope, "Unsqueeze", x, axis);
}

static const char *
squeeze (B *b, const char *scope, const char *x, gint64 axis)
{
  return unsqueeze_like (b, scope, "Squeeze", x, axis);
}

/* ReduceSum (axes an input from opset 13) or ReduceMean (from opset 18) over one axis; the axes
 * initializers are shared, as after PyTorch's constant folding. */
static const char *
reduce (B *b, const char *scope, const char *op, const char *x, gint64 axis, gboolean keepdims)
{
  gint64 since = strcmp (op, "ReduceSum") == 0 ? 13 : 18;
  SedpNnNode *n;
  if (b->o->opset >= since) {
    g_autofree char *key = g_strdup_printf ("%" G_GINT64_FORMAT, axis);
    const char *axes = g_hash_table_lookup (b->axes, key);
    if (axes == NULL) {
      g_autofree char *name = anon_name (b, "ReduceSum");
      axes = init_i64 (b, name, 1, &axis);
      g_hash_table_insert (b->axes, g_steal_pointer (&key), (gpointer) axes);
    }
    n = add (b, scope, op, x, axes, NULL);
  } else {
    n = add (b, scope, op, x, NULL);
    sedp_nn_node_set_attr_ints (n, "axes", 1, &axis);
  }
  sedp_nn_node_set_attr_int (n, "keepdims", keepdims);
  return OUT (n);
}

static const char *
concat (B *b, const char *scope, GPtrArray *parts, gint64 axis)
{
  SedpNnNode *n = add_array (b, scope, "Concat", parts);
  sedp_nn_node_set_attr_int (n, "axis", axis);
  return OUT (n);
}

static const char *
activation (B *b, const char *scope, const char *act, const char *x)
{
  SedpNnNode *n = add (b, scope, act, x, NULL);
  if (strcmp (act, "LeakyRelu") == 0)
    sedp_nn_node_set_attr_float (n, "alpha", 0.01f);
  return OUT (n);
}

/* nn.Linear(in, out) named @prefix: Gemm(x, W[out, in], b, transB=1), or MatMul(x, Wᵀ[in, out])
 * then Add(b, ·) as the exporter writes it for inputs of other ranks. Weights uniform with the
 * variance that keeps activations at scale (@gain √2 before a ReLU), biases within ±0.1. */
static const char *
linear_gain (B *b, const char *prefix, const char *x, guint in, guint out, gboolean matmul,
             float gain)
{
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  g_autofree char *wname = g_strdup_printf ("%s.weight", prefix);
  g_autofree char *bname = g_strdup_printf ("%s.bias", prefix);
  float a = gain * sqrtf (3.0f / (float) in), ab = 0.1f;
  gint64 bdims[1] = {out};
  if (!matmul) {
    gint64 wdims[2] = {out, in};
    const char *w = init_uniform (b, wname, 2, wdims, -a, a);
    const char *bias = init_uniform (b, bname, 1, bdims, -ab, ab);
    SedpNnNode *n = add (b, scope, "Gemm", x, w, bias, NULL);
    sedp_nn_node_set_attr_float (n, "alpha", 1.0f);
    sedp_nn_node_set_attr_float (n, "beta", 1.0f);
    sedp_nn_node_set_attr_int (n, "transB", 1);
    return OUT (n);
  }
  gint64 wdims[2] = {in, out};
  g_autofree char *wt = anon_name (b, "MatMul");
  const char *w = init_uniform (b, wt, 2, wdims, -a, a);
  const char *bias = init_uniform (b, bname, 1, bdims, -ab, ab);
  const char *mm = OUT (add (b, scope, "MatMul", x, w, NULL));
  return OUT (add (b, scope, "Add", bias, mm, NULL));
}

static const char *
linear (B *b, const char *prefix, const char *x, guint in, guint out, gboolean matmul)
{
  return linear_gain (b, prefix, x, in, out, matmul, 1.0f);
}

/* An MLP @prefix.0, @prefix.1, … with @act after every layer (@last_act after the last one, none
 * if NULL); with @alternate, odd layers are MatMul + Add. */
static const char *
mlp (B *b, const char *prefix, const char *x, guint in, guint n, const guint *sizes,
     const char *act, const char *last_act, gboolean alternate)
{
  for (guint k = 0; k < n; k++) {
    g_autofree char *p = g_strdup_printf ("%s.%u", prefix, 2 * k);
    const char *a = k + 1 == n ? last_act : act;
    gboolean rectifier = a && (strcmp (a, "Relu") == 0 || strcmp (a, "LeakyRelu") == 0);
    x = linear_gain (b, p, x, in, sizes[k], alternate && (k % 2 == 1),
                     rectifier ? (float) G_SQRT2 : 1.0f);
    in = sizes[k];
    if (a) {
      g_autofree char *s = g_strdup_printf ("/%s.%u", prefix, 2 * k + 1);
      x = activation (b, s, a, x);
    }
  }
  return x;
}

/* Gather(table, slot_K, axis=0) → [batch, L, width]; the table is a new initializer
 * "@table_K" [rows, width]. */
static const char *
lookup (B *b, const char *table, guint k, guint width, float scale)
{
  g_autofree char *tname = g_strdup_printf ("%s_%u", table, k);
  g_autofree char *slot = g_strdup_printf ("slot_%u", k);
  g_autofree char *scope = g_strdup_printf ("/%s.%u", table, k);
  gint64 dims[2] = {b->o->rows, width};
  const char *t = init_uniform (b, tname, 2, dims, -scale, scale);
  SedpNnNode *n = add (b, scope, "Gather", t, slot, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  return OUT (n);
}

typedef enum { POOL_SUM, POOL_MEAN, POOL_SUM_DIV } Pool;

/* emb_K looked up and pooled over the ids → [batch, dim]. POOL_SUM_DIV is
 * `emb(ids).sum(1) / ids.size(1)`: ReduceSum, then Div by Cast(Gather(Shape(ids), 1)). */
static const char *
embed (B *b, guint k, Pool pool)
{
  const char *g = lookup (b, "emb", k, b->o->dim, 0.1f);
  g_autofree char *scope = g_strdup_printf ("/emb.%u", k);
  if (pool == POOL_MEAN)
    return reduce (b, scope, "ReduceMean", g, 1, FALSE);
  const char *s = reduce (b, scope, "ReduceSum", g, 1, FALSE);
  if (pool == POOL_SUM)
    return s;
  g_autofree char *slot = g_strdup_printf ("slot_%u", k);
  const char *shape = OUT (add (b, scope, "Shape", slot, NULL));
  gint64 one = 1;
  const char *idx = const_i64 (b, scope, 0, 1, &one);
  SedpNnNode *n = add (b, scope, "Gather", shape, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  n = add (b, scope, "Cast", OUT (n), NULL);
  sedp_nn_node_set_attr_int (n, "to", SEDP_NN_FLOAT);
  return OUT (add (b, scope, "Div", s, OUT (n), NULL));
}

/* x.view(x.size(0), *rest): Shape → Gather(0) → Unsqueeze → Concat(·, rest) → Reshape. */
static const char *
view_batch (B *b, const char *scope, const char *x, guint n_rest, const gint64 *rest)
{
  const char *shape = OUT (add (b, scope, "Shape", x, NULL));
  gint64 zero = 0;
  const char *idx = const_i64 (b, scope, 0, 1, &zero);
  SedpNnNode *n = add (b, scope, "Gather", shape, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  const char *batch = unsqueeze (b, scope, OUT (n), 0);
  const char *r = const_i64 (b, scope, 1, n_rest, rest);
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) batch);
  g_ptr_array_add (parts, (gpointer) r);
  const char *s = concat (b, scope, parts, 0);
  return OUT (add (b, scope, "Reshape", x, s, NULL));
}

static void
add_output (B *b, SedpNnNode *producer, const char *name)
{
  rename_output (producer, name);
  gint64 dims[2] = {-1, 1};
  const char *params[2] = {"batch", NULL};
  sedp_nn_model_add_output (b->m, name, SEDP_NN_FLOAT, 2, dims, params);
}

static const char *
sigmoid_output (B *b, const char *x, const char *name)
{
  SedpNnNode *n = add (b, "", "Sigmoid", x, NULL);
  add_output (b, n, name);
  return name;
}

/* [dense, pooled embeddings…] */
static GPtrArray *
dense_and_embeddings (B *b, const char *dense, Pool pool)
{
  GPtrArray *parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) dense);
  for (guint k = 0; k < b->o->slots; k++)
    g_ptr_array_add (parts, (gpointer) embed (b, k, pool));
  return parts;
}

/* The architectures. */

/* Wide & deep: a BatchNorm on the dense features; the wide part is a linear model on some dense
 * features (Slice) and on the ids (1-wide tables); the deep part an MLP over [dense, pooled
 * embeddings] (odd slots mean-pooled); their sum clipped, then Sigmoid. */
static void
build_mlp (B *b)
{
  const SedpNnSynthOptions *o = b->o;
  gint64 nd[1] = {o->n_dense};
  const char *bn_w = init_uniform (b, "bn.weight", 1, nd, 0.5f, 1.5f);
  const char *bn_b = init_uniform (b, "bn.bias", 1, nd, -0.1f, 0.1f);
  const char *bn_m = init_uniform (b, "bn.running_mean", 1, nd, 0.3f, 0.7f);
  const char *bn_v = init_uniform (b, "bn.running_var", 1, nd, 0.5f, 1.5f);
  SedpNnNode *n = add (b, "/bn", "BatchNormalization", "dense", bn_w, bn_b, bn_m, bn_v, NULL);
  sedp_nn_node_set_attr_float (n, "epsilon", 1e-5f);
  sedp_nn_node_set_attr_float (n, "momentum", 0.9f);
  const char *dense = OUT (n);

  /* Wide. */
  guint n_wide = MIN (o->n_dense, 4u);
  gint64 starts = 0, ends = n_wide, axes = 1, steps = 1;
  const char *sl = OUT (add (b, "/wide", "Slice", dense, init_i64 (b, "onnx::Slice_starts", 1, &starts),
                             init_i64 (b, "onnx::Slice_ends", 1, &ends),
                             init_i64 (b, "onnx::Slice_axes", 1, &axes),
                             init_i64 (b, "onnx::Slice_steps", 1, &steps), NULL));
  const char *wide_dense = linear (b, "wide.dense", sl, n_wide, 1, FALSE);
  g_autoptr (GPtrArray) wparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *g = lookup (b, "wide_emb", k, 1, 0.1f);
    g_autofree char *scope = g_strdup_printf ("/wide_emb.%u", k);
    g_ptr_array_add (wparts, (gpointer) reduce (b, scope, "ReduceSum", g, 1, FALSE));
  }
  const char *wcat = concat (b, "/wide", wparts, 1);
  const char *wsum = reduce (b, "/wide", "ReduceSum", wcat, 1, TRUE);
  const char *wide = OUT (add (b, "/wide", "Add", wide_dense, wsum, NULL));

  /* Deep. */
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) dense);
  for (guint k = 0; k < o->slots; k++)
    g_ptr_array_add (parts, (gpointer) embed (b, k, k % 2 ? POOL_MEAN : POOL_SUM));
  const char *x = concat (b, "/deep", parts, 1);
  gint64 minus1 = -1;
  x = view_batch (b, "/deep", x, 1, &minus1);
  guint in = o->n_dense + o->slots * o->dim;
  x = mlp (b, "deep", x, in, o->n_hidden, o->hidden, "Relu", "Relu", TRUE);
  const char *deep = linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);

  const char *logit = OUT (add (b, "", "Add", wide, deep, NULL));
  const char *lo = init_scalar_f (b, "onnx::Clip_min", -15.0f);
  const char *hi = init_scalar_f (b, "onnx::Clip_max", 15.0f);
  logit = OUT (add (b, "", "Clip", logit, lo, hi, NULL));
  sigmoid_output (b, logit, "prob");
}

/* DLRM: bottom MLP dense → dim; [bottom, pooled embeddings] viewed as [batch, F, dim]; pairwise
 * dots Z = T Tᵀ; the strictly lower triangle of Z gathered from its flattened form; concat with
 * bottom; top MLP; Sigmoid. */
static void
build_dlrm (B *b)
{
  const SedpNnSynthOptions *o = b->o;
  guint sizes[SEDP_NN_SYNTH_MAX_LAYERS + 1];
  memcpy (sizes, o->bottom, o->n_bottom * sizeof (guint));
  sizes[o->n_bottom] = o->dim;
  const char *bot = mlp (b, "bot", "dense", o->n_dense, o->n_bottom + 1, sizes, "Relu", "Relu",
                         FALSE);
  g_autoptr (GPtrArray) parts = dense_and_embeddings (b, bot, POOL_SUM);
  const char *t = concat (b, "/interact", parts, 1);
  guint f = o->slots + 1;
  gint64 rest[2] = {-1, o->dim};
  t = view_batch (b, "/interact", t, 2, rest);
  SedpNnNode *n = add (b, "/interact", "Transpose", t, NULL);
  gint64 perm[3] = {0, 2, 1};
  sedp_nn_node_set_attr_ints (n, "perm", 3, perm);
  const char *z = OUT (add (b, "/interact", "MatMul", t, OUT (n), NULL));
  n = add (b, "/interact", "Flatten", z, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  const char *zf = OUT (n);
  guint pairs = f * (f - 1) / 2;
  g_autofree gint64 *li = g_new (gint64, pairs);
  guint p = 0;
  for (guint i = 0; i < f; i++)
    for (guint j = 0; j < i; j++)
      li[p++] = (gint64) i * f + j;
  const char *idx = init_i64 (b, "interact.tril_indices", pairs, li);
  n = add (b, "/interact", "Gather", zf, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g_autoptr (GPtrArray) rparts = g_ptr_array_new ();
  g_ptr_array_add (rparts, (gpointer) bot);
  g_ptr_array_add (rparts, (gpointer) OUT (n));
  const char *r = concat (b, "/interact", rparts, 1);
  const char *x = mlp (b, "top", r, o->dim + pairs, o->n_hidden, o->hidden, "Relu", "Relu", TRUE);
  x = linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);
  sigmoid_output (b, x, "prob");
}

/* DCN-v2: x0 = [dense, pooled embeddings]; cross layers x_{l+1} = x0 * (x_l W_l + b_l) + x_l;
 * a deep tower over x0 (Tanh on its last layer); [x_L, deep] → linear → Sigmoid. */
static void
build_dcn (B *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = dense_and_embeddings (b, "dense", POOL_SUM);
  const char *x0 = concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim;
  const char *xl = x0;
  float a = 1.0f / sqrtf ((float) d0);
  for (guint l = 0; l < o->cross_layers; l++) {
    g_autofree char *scope = g_strdup_printf ("/cross.%u", l);
    g_autofree char *wname = g_strdup_printf ("cross.%u.weight", l);
    g_autofree char *bname = g_strdup_printf ("cross.%u.bias", l);
    gint64 wd[2] = {d0, d0}, bd[1] = {d0};
    const char *w = init_uniform (b, wname, 2, wd, -a, a);
    const char *bias = init_uniform (b, bname, 1, bd, -a, a);
    const char *xw = OUT (add (b, scope, "MatMul", xl, w, NULL));
    const char *xwb = OUT (add (b, scope, "Add", xw, bias, NULL));
    const char *m = OUT (add (b, scope, "Mul", x0, xwb, NULL));
    xl = OUT (add (b, scope, "Add", m, xl, NULL));
  }
  const char *deep = mlp (b, "deep", x0, d0, o->n_hidden, o->hidden, "Relu", "Tanh", TRUE);
  deep = OUT (add (b, "/deep", "Identity", deep, NULL));
  g_autoptr (GPtrArray) cparts = g_ptr_array_new ();
  g_ptr_array_add (cparts, (gpointer) xl);
  g_ptr_array_add (cparts, (gpointer) deep);
  const char *c = concat (b, "/out", cparts, 1);
  const char *logit = linear (b, "out", c, d0 + o->hidden[o->n_hidden - 1], 1, FALSE);
  sigmoid_output (b, logit, "prob");
}

/* DeepFM: first order from 1-wide tables and a linear on dense; FM second order
 * 0.5 ((Σv)² − Σv²) summed over dim; a deep MLP over the flattened embeddings and dense;
 * the three summed, Sigmoid. */
static void
build_deepfm (B *b)
{
  const SedpNnSynthOptions *o = b->o;
  /* First order. */
  g_autoptr (GPtrArray) fparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *g = lookup (b, "fo_emb", k, 1, 0.1f);
    g_autofree char *scope = g_strdup_printf ("/fo_emb.%u", k);
    const char *s = squeeze (b, scope, g, 2);
    g_ptr_array_add (fparts, (gpointer) reduce (b, scope, "ReduceSum", s, 1, TRUE));
  }
  const char *fcat = concat (b, "/first", fparts, 1);
  const char *fsum = reduce (b, "/first", "ReduceSum", fcat, 1, TRUE);
  const char *fdense = linear (b, "first.dense", "dense", o->n_dense, 1, FALSE);
  const char *first = OUT (add (b, "/first", "Add", fdense, fsum, NULL));

  /* Second order over V [batch, slots, dim]. */
  g_autoptr (GPtrArray) vparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *e = embed (b, k, POOL_SUM);
    g_autofree char *scope = g_strdup_printf ("/emb.%u", k);
    g_ptr_array_add (vparts, (gpointer) unsqueeze (b, scope, e, 1));
  }
  const char *v = concat (b, "/fm", vparts, 1);
  const char *sv = reduce (b, "/fm", "ReduceSum", v, 1, FALSE);
  const char *sq = OUT (add (b, "/fm", "Mul", sv, sv, NULL));
  const char *vv = OUT (add (b, "/fm", "Mul", v, v, NULL));
  const char *ssq = reduce (b, "/fm", "ReduceSum", vv, 1, FALSE);
  const char *d = OUT (add (b, "/fm", "Sub", sq, ssq, NULL));
  const char *fm = reduce (b, "/fm", "ReduceSum", d, 1, TRUE);
  fm = OUT (add (b, "/fm", "Div", fm, const_f (b, "/fm", 2.0f), NULL));

  /* Deep. */
  SedpNnNode *n = add (b, "/deep", "Flatten", v, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g_autoptr (GPtrArray) dparts = g_ptr_array_new ();
  g_ptr_array_add (dparts, (gpointer) "dense");
  g_ptr_array_add (dparts, (gpointer) OUT (n));
  const char *x = concat (b, "/deep", dparts, 1);
  x = mlp (b, "deep", x, o->n_dense + o->slots * o->dim, o->n_hidden, o->hidden, "Relu", "Relu",
           TRUE);
  const char *deep = linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);

  const char *logit = OUT (add (b, "", "Add", first, fm, NULL));
  logit = OUT (add (b, "", "Add", logit, deep, NULL));
  sigmoid_output (b, logit, "prob");
}

/* MMoE: x = [dense, mean-pooled embeddings]; K expert MLPs stacked [batch, K, H]; per task a
 * Softmax gate over the experts; task 0 mixes with Expand + Mul + ReduceSum, task 1 with a
 * batched MatMul; towers with LeakyRelu; outputs ctr and cvr. */
static void
build_mmoe (B *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = dense_and_embeddings (b, "dense", POOL_SUM_DIV);
  const char *x = concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim;
  guint h = o->expert_hidden[o->n_expert_hidden - 1];
  g_autoptr (GPtrArray) eparts = g_ptr_array_new ();
  for (guint k = 0; k < o->experts; k++) {
    g_autofree char *prefix = g_strdup_printf ("experts.%u", k);
    g_autofree char *scope = g_strdup_printf ("/experts.%u", k);
    const char *e = mlp (b, prefix, x, d0, o->n_expert_hidden, o->expert_hidden, "Relu", "Relu",
                         FALSE);
    g_ptr_array_add (eparts, (gpointer) unsqueeze (b, scope, e, 1));
  }
  const char *experts = concat (b, "/experts", eparts, 1);

  static const char *const tasks[2] = {"ctr", "cvr"};
  for (guint t = 0; t < 2; t++) {
    g_autofree char *gp = g_strdup_printf ("gates.%u", t);
    g_autofree char *gs = g_strdup_printf ("/gates.%u", t);
    const char *g = linear (b, gp, x, d0, o->experts, FALSE);
    SedpNnNode *n = add (b, gs, "Softmax", g, NULL);
    sedp_nn_node_set_attr_int (n, "axis", 1);
    g = OUT (n);
    const char *mixed;
    if (t == 0) {
      const char *g3 = unsqueeze (b, gs, g, 2);
      const char *shape = OUT (add (b, gs, "Shape", experts, NULL));
      const char *ge = OUT (add (b, gs, "Expand", g3, shape, NULL));
      const char *m = OUT (add (b, gs, "Mul", ge, experts, NULL));
      mixed = reduce (b, gs, "ReduceSum", m, 1, FALSE);
    } else {
      const char *g3 = unsqueeze (b, gs, g, 1);
      const char *mm = OUT (add (b, gs, "MatMul", g3, experts, NULL));
      mixed = squeeze (b, gs, mm, 1);
    }
    g_autofree char *tp = g_strdup_printf ("towers.%u", t);
    guint tower[1] = {o->tower};
    const char *y = mlp (b, tp, mixed, h, 1, tower, "LeakyRelu", "LeakyRelu", FALSE);
    g_autofree char *op = g_strdup_printf ("towers.%u.out", t);
    y = linear (b, op, y, o->tower, 1, FALSE);
    g_autofree char *ts = g_strdup_printf ("/towers.%u", t);
    n = add (b, ts, "Sigmoid", y, NULL);
    add_output (b, n, tasks[t]);
  }
}

static gboolean
check_options (const SedpNnSynthOptions *o, const char *arch, GError **error)
{
#define RANGE(field, lo, hi)                                                                    \
  if ((gint64) o->field < (lo) || (gint64) o->field > (hi)) {                                                     \
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,                                   \
                 "synth: %s must be between %d and %d (got %" G_GINT64_FORMAT ")", #field,      \
                 (int) (lo), (int) (hi), (gint64) o->field);                                    \
    return FALSE;                                                                               \
  }
  RANGE (slots, 1, 1024);
  RANGE (dim, 1, 1024);
  RANGE (rows, 1, 100000000);
  RANGE (ids_per_slot, 1, 1024);
  RANGE (n_dense, 1, 4096);
  RANGE (n_hidden, 1, SEDP_NN_SYNTH_MAX_LAYERS);
  RANGE (n_bottom, 0, SEDP_NN_SYNTH_MAX_LAYERS);
  RANGE (opset, 11, 21);
  for (guint k = 0; k < o->n_hidden; k++)
    RANGE (hidden[k], 1, 65536);
  for (guint k = 0; k < o->n_bottom; k++)
    RANGE (bottom[k], 1, 65536);
  if (strcmp (arch, "dcn") == 0)
    RANGE (cross_layers, 1, 16);
  if (strcmp (arch, "mmoe") == 0) {
    RANGE (experts, 1, 64);
    RANGE (n_expert_hidden, 1, SEDP_NN_SYNTH_MAX_LAYERS);
    for (guint k = 0; k < o->n_expert_hidden; k++)
      RANGE (expert_hidden[k], 1, 65536);
    RANGE (tower, 1, 65536);
  }
#undef RANGE
  /* Embedding tables: keep the file addressable and the run reasonable. */
  guint64 bytes = (guint64) o->slots * o->rows * (o->dim + 1) * sizeof (float);
  if (bytes > (G_GUINT64_CONSTANT (1) << 31)) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "synth: embedding tables of %" G_GUINT64_FORMAT " MiB exceed the 2 GiB limit of "
                 "an ONNX file (fewer slots, rows or a smaller dim)",
                 bytes >> 20);
    return FALSE;
  }
  return TRUE;
}

SedpNnModel *
sedp_nn_synth (const char *arch, guint64 seed, const SedpNnSynthOptions *opts, GError **error)
{
  g_return_val_if_fail (arch != NULL, NULL);
  SedpNnSynthOptions small;
  if (opts == NULL) {
    sedp_nn_synth_options_init (&small, "small", arch);
    opts = &small;
  }
  void (*build) (B *) = NULL;
  if (strcmp (arch, "mlp") == 0)
    build = build_mlp;
  else if (strcmp (arch, "dlrm") == 0)
    build = build_dlrm;
  else if (strcmp (arch, "dcn") == 0)
    build = build_dcn;
  else if (strcmp (arch, "deepfm") == 0)
    build = build_deepfm;
  else if (strcmp (arch, "mmoe") == 0)
    build = build_mmoe;
  if (build == NULL) {
    g_autofree char *list = g_strjoinv (", ", (char **) archs);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "synth: unknown architecture '%s' (known: %s)", arch, list);
    return NULL;
  }
  if (!check_options (opts, arch, error))
    return NULL;

  B b = {
    .m = sedp_nn_model_new (opts->opset, "sedp-synth"),
    .o = opts,
    .rng = seed ^ 0x5ed9c0ffee5eedULL,
    .names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
    .axes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
  };
  b.m->graph_name = g_strdup_printf ("%s", arch);
  gint64 dd[2] = {-1, opts->n_dense};
  gint64 sd[2] = {-1, opts->ids_per_slot};
  const char *params[2] = {"batch", NULL};
  sedp_nn_model_add_input (b.m, "dense", SEDP_NN_FLOAT, 2, dd, params);
  for (guint k = 0; k < opts->slots; k++) {
    g_autofree char *name = g_strdup_printf ("slot_%u", k);
    sedp_nn_model_add_input (b.m, name, SEDP_NN_INT64, 2, sd, params);
  }
  build (&b);
  g_hash_table_unref (b.names);
  g_hash_table_unref (b.axes);
  return b.m;
}
