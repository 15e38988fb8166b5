/* sedp — the builder of the synthetic models: see synth-private.h. */
#include "synth-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* splitmix64: the same stream on every platform; two of them in step (see synth-private.h). */
guint64
synth_rng_next (SynthBuilder *b)
{
  b->rng += 0x9e3779b97f4a7c15ULL;
  b->table_rng += 0x9e3779b97f4a7c15ULL;
  guint64 z = b->tables ? b->table_rng : b->rng;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
float
synth_rng_uniform (SynthBuilder *b, float lo, float hi)
{
  double u = (double) (synth_rng_next (b) >> 40) / (double) (1ULL << 24);
  return (float) (lo + (hi - lo) * u);
}

char *
synth_anon_name (SynthBuilder *b, const char *what)
{
  return g_strdup_printf ("onnx::%s_%u", what, ++b->anon);
}

/* A float initializer of @rank dims, uniform in [lo, hi). Returns its name (owned by the model). */
const char *
synth_init_uniform (SynthBuilder *b, const char *name, int rank, const gint64 *dims, float lo, float hi)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, rank, dims);
  float *d = t->data;
  gint64 n = sedp_nn_tensor_numel (t);
  for (gint64 k = 0; k < n; k++)
    d[k] = synth_rng_uniform (b, lo, hi);
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

/* The same for an embedding table: drawn from the tables' stream. */
const char *
synth_init_table (SynthBuilder *b, const char *name, int rank, const gint64 *dims, float lo, float hi)
{
  b->tables = TRUE;
  const char *t = synth_init_uniform (b, name, rank, dims, lo, hi);
  b->tables = FALSE;
  return t;
}

const char *
synth_init_scalar_f (SynthBuilder *b, const char *name, float v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, 0, NULL);
  *(float *) t->data = v;
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

const char *
synth_init_i64 (SynthBuilder *b, const char *name, guint n, const gint64 *v)
{
  gint64 dims[1] = {n};
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_INT64, 1, dims);
  memcpy (t->data, v, n * sizeof (gint64));
  sedp_nn_model_add_initializer (b->m, t);
  return t->name;
}

/* A node with one output "<scope>/<op>[_N]_output_0"; @in NULL-terminated. The node pointer is
 * valid until the next node is added. */
SedpNnNode *
synth_addv (SynthBuilder *b, const char *scope, const char *op, const char *const *in)
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
SedpNnNode *
synth_add (SynthBuilder *b, const char *scope, const char *op, ...)
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
  return synth_addv (b, scope, op, in);
}

/* Same with the inputs in an array. */
SedpNnNode *
synth_add_array (SynthBuilder *b, const char *scope, const char *op, GPtrArray *inputs)
{
  g_autofree const char **in = g_new0 (const char *, inputs->len + 1);
  for (guint k = 0; k < inputs->len; k++)
    in[k] = g_ptr_array_index (inputs, k);
  return synth_addv (b, scope, op, in);
}


void
synth_rename_output (SedpNnNode *n, const char *name)
{
  g_free (n->outputs[0]);
  n->outputs[0] = g_strdup (name);
}

/* A Constant node holding an int64 scalar (rank 0) or vector. */
const char *
synth_const_i64 (SynthBuilder *b, const char *scope, int rank, guint n, const gint64 *v)
{
  gint64 dims[1] = {n};
  SedpNnTensor *t = sedp_nn_tensor_new (NULL, SEDP_NN_INT64, rank, dims);
  memcpy (t->data, v, n * sizeof (gint64));
  SedpNnNode *node = synth_add (b, scope, "Constant", NULL);
  sedp_nn_node_set_attr_tensor (node, "value", t);
  return OUT (node);
}

const char *
synth_const_f (SynthBuilder *b, const char *scope, float v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (NULL, SEDP_NN_FLOAT, 0, NULL);
  *(float *) t->data = v;
  SedpNnNode *node = synth_add (b, scope, "Constant", NULL);
  sedp_nn_node_set_attr_tensor (node, "value", t);
  return OUT (node);
}

/* Unsqueeze / Squeeze one axis: axes an input (a Constant) from opset 13, an attribute before. */
const char *
synth_unsqueeze_like (SynthBuilder *b, const char *scope, const char *op, const char *x, gint64 axis)
{
  if (b->o->opset >= 13) {
    const char *axes = synth_const_i64 (b, scope, 1, 1, &axis);
    return OUT (synth_add (b, scope, op, x, axes, NULL));
  }
  SedpNnNode *n = synth_add (b, scope, op, x, NULL);
  sedp_nn_node_set_attr_ints (n, "axes", 1, &axis);
  return OUT (n);
}

const char *
synth_unsqueeze (SynthBuilder *b, const char *scope, const char *x, gint64 axis)
{
  return synth_unsqueeze_like (b, scope, "Unsqueeze", x, axis);
}

const char *
synth_squeeze (SynthBuilder *b, const char *scope, const char *x, gint64 axis)
{
  return synth_unsqueeze_like (b, scope, "Squeeze", x, axis);
}

/* ReduceSum (axes an input from opset 13) or ReduceMean (from opset 18) over one axis; the axes
 * initializers are shared, as after PyTorch's constant folding. */
const char *
synth_reduce (SynthBuilder *b, const char *scope, const char *op, const char *x, gint64 axis, gboolean keepdims)
{
  gint64 since = strcmp (op, "ReduceSum") == 0 ? 13 : 18;
  SedpNnNode *n;
  if (b->o->opset >= since) {
    g_autofree char *key = g_strdup_printf ("%" G_GINT64_FORMAT, axis);
    const char *axes = g_hash_table_lookup (b->axes, key);
    if (axes == NULL) {
      g_autofree char *name = synth_anon_name (b, "ReduceSum");
      axes = synth_init_i64 (b, name, 1, &axis);
      g_hash_table_insert (b->axes, g_steal_pointer (&key), (gpointer) axes);
    }
    n = synth_add (b, scope, op, x, axes, NULL);
  } else {
    n = synth_add (b, scope, op, x, NULL);
    sedp_nn_node_set_attr_ints (n, "axes", 1, &axis);
  }
  sedp_nn_node_set_attr_int (n, "keepdims", keepdims);
  return OUT (n);
}

const char *
synth_concat (SynthBuilder *b, const char *scope, GPtrArray *parts, gint64 axis)
{
  SedpNnNode *n = synth_add_array (b, scope, "Concat", parts);
  sedp_nn_node_set_attr_int (n, "axis", axis);
  return OUT (n);
}

const char *
synth_activation (SynthBuilder *b, const char *scope, const char *act, const char *x)
{
  SedpNnNode *n = synth_add (b, scope, act, x, NULL);
  if (strcmp (act, "LeakyRelu") == 0)
    sedp_nn_node_set_attr_float (n, "alpha", 0.01f);
  return OUT (n);
}

/* nn.Linear(in, out) named @prefix: Gemm(x, W[out, in], b, transB=1), or MatMul(x, Wᵀ[in, out])
 * then Add(b, ·) as the exporter writes it for inputs of other ranks. Weights uniform with the
 * variance that keeps activations at scale (@gain √2 before a ReLU), biases within ±0.1. */
const char *
synth_linear_gain (SynthBuilder *b, const char *prefix, const char *x, guint in, guint out, gboolean matmul,
             float gain)
{
  g_autofree char *scope = g_strdup_printf ("/%s", prefix);
  g_autofree char *wname = g_strdup_printf ("%s.weight", prefix);
  g_autofree char *bname = g_strdup_printf ("%s.bias", prefix);
  float a = gain * sqrtf (3.0f / (float) in), ab = 0.1f;
  gint64 bdims[1] = {out};
  if (!matmul) {
    gint64 wdims[2] = {out, in};
    const char *w = synth_init_uniform (b, wname, 2, wdims, -a, a);
    const char *bias = synth_init_uniform (b, bname, 1, bdims, -ab, ab);
    SedpNnNode *n = synth_add (b, scope, "Gemm", x, w, bias, NULL);
    sedp_nn_node_set_attr_float (n, "alpha", 1.0f);
    sedp_nn_node_set_attr_float (n, "beta", 1.0f);
    sedp_nn_node_set_attr_int (n, "transB", 1);
    return OUT (n);
  }
  gint64 wdims[2] = {in, out};
  g_autofree char *wt = synth_anon_name (b, "MatMul");
  const char *w = synth_init_uniform (b, wt, 2, wdims, -a, a);
  const char *bias = synth_init_uniform (b, bname, 1, bdims, -ab, ab);
  const char *mm = OUT (synth_add (b, scope, "MatMul", x, w, NULL));
  return OUT (synth_add (b, scope, "Add", bias, mm, NULL));
}

const char *
synth_linear (SynthBuilder *b, const char *prefix, const char *x, guint in, guint out, gboolean matmul)
{
  return synth_linear_gain (b, prefix, x, in, out, matmul, 1.0f);
}

/* An MLP @prefix.0, @prefix.1, … with @act after every layer (@last_act after the last one, none
 * if NULL); with @alternate, odd layers are MatMul + Add. */
const char *
synth_mlp (SynthBuilder *b, const char *prefix, const char *x, guint in, guint n, const guint *sizes,
     const char *act, const char *last_act, gboolean alternate)
{
  for (guint k = 0; k < n; k++) {
    g_autofree char *p = g_strdup_printf ("%s.%u", prefix, 2 * k);
    const char *a = k + 1 == n ? last_act : act;
    gboolean rectifier = a && (strcmp (a, "Relu") == 0 || strcmp (a, "LeakyRelu") == 0);
    x = synth_linear_gain (b, p, x, in, sizes[k], alternate && (k % 2 == 1),
                     rectifier ? (float) G_SQRT2 : 1.0f);
    in = sizes[k];
    if (a) {
      g_autofree char *s = g_strdup_printf ("/%s.%u", prefix, 2 * k + 1);
      x = synth_activation (b, s, a, x);
    }
  }
  return x;
}

/* Gather(table, slot_K, axis=0) → [batch, L, width]; the table is a new initializer
 * "@table_K" [rows, width]. */
const char *
synth_lookup (SynthBuilder *b, const char *table, guint k, guint width, float scale)
{
  g_autofree char *tname = g_strdup_printf ("%s_%u", table, k);
  g_autofree char *slot = g_strdup_printf ("slot_%u", k);
  g_autofree char *scope = g_strdup_printf ("/%s.%u", table, k);
  gint64 dims[2] = {b->o->rows, width};
  const char *t = synth_init_table (b, tname, 2, dims, -scale, scale);
  SedpNnNode *n = synth_add (b, scope, "Gather", t, slot, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  return OUT (n);
}


/* emb_K looked up and pooled over the ids → [batch, dim]. POOL_SUM_DIV is
 * `emb(ids).sum(1) / ids.size(1)`: ReduceSum, then Div by Cast(Gather(Shape(ids), 1)). */
const char *
synth_embed (SynthBuilder *b, guint k, Pool pool)
{
  const char *g = synth_lookup (b, "emb", k, b->o->dim, 0.1f);
  g_autofree char *scope = g_strdup_printf ("/emb.%u", k);
  if (pool == POOL_MEAN)
    return synth_reduce (b, scope, "ReduceMean", g, 1, FALSE);
  const char *s = synth_reduce (b, scope, "ReduceSum", g, 1, FALSE);
  if (pool == POOL_SUM)
    return s;
  g_autofree char *slot = g_strdup_printf ("slot_%u", k);
  const char *shape = OUT (synth_add (b, scope, "Shape", slot, NULL));
  gint64 one = 1;
  const char *idx = synth_const_i64 (b, scope, 0, 1, &one);
  SedpNnNode *n = synth_add (b, scope, "Gather", shape, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  n = synth_add (b, scope, "Cast", OUT (n), NULL);
  sedp_nn_node_set_attr_int (n, "to", SEDP_NN_FLOAT);
  return OUT (synth_add (b, scope, "Div", s, OUT (n), NULL));
}

/* x.view(x.size(0), *rest): Shape → Gather(0) → Unsqueeze → Concat(·, rest) → Reshape. */
const char *
synth_view_batch (SynthBuilder *b, const char *scope, const char *x, guint n_rest, const gint64 *rest)
{
  const char *shape = OUT (synth_add (b, scope, "Shape", x, NULL));
  gint64 zero = 0;
  const char *idx = synth_const_i64 (b, scope, 0, 1, &zero);
  SedpNnNode *n = synth_add (b, scope, "Gather", shape, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 0);
  const char *batch = synth_unsqueeze (b, scope, OUT (n), 0);
  const char *r = synth_const_i64 (b, scope, 1, n_rest, rest);
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) batch);
  g_ptr_array_add (parts, (gpointer) r);
  const char *s = synth_concat (b, scope, parts, 0);
  return OUT (synth_add (b, scope, "Reshape", x, s, NULL));
}

void
synth_add_output (SynthBuilder *b, SedpNnNode *producer, const char *name)
{
  synth_rename_output (producer, name);
  gint64 dims[2] = {-1, 1};
  const char *params[2] = {"batch", NULL};
  sedp_nn_model_add_output (b->m, name, SEDP_NN_FLOAT, 2, dims, params);
}

const char *
synth_sigmoid_output (SynthBuilder *b, const char *x, const char *name)
{
  SedpNnNode *n = synth_add (b, "", "Sigmoid", x, NULL);
  synth_add_output (b, n, name);
  return name;
}

/* [dense, pooled embeddings…] */
GPtrArray *
synth_dense_and_embeddings (SynthBuilder *b, const char *dense, Pool pool)
{
  GPtrArray *parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) dense);
  for (guint k = 0; k < b->o->slots; k++)
    g_ptr_array_add (parts, (gpointer) synth_embed (b, k, pool));
  return parts;
}
