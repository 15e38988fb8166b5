/* sedp — the builder of the synthetic models (synth-builder.c), shared by the files that build
 * architectures (synth.c, …): initializers drawn from a seeded stream, nodes named as PyTorch's
 * exporter names them, and the layers (Linear, MLP, embedding lookups and pooling) every
 * architecture is made of. Internal to core/nn. */
#pragma once

#include "synth.h"

/* One model being built: the model, its options, the random streams, the names in use. */
typedef struct {
  SedpNnModel *m;
  const SedpNnSynthOptions *o;
  guint64 rng;       /* the dense weights' stream (splitmix64 state), from the dense seed */
  guint64 table_rng; /* the embedding tables' stream, from the seed */
  gboolean tables;   /* drawing an embedding table: synth_rng_next reads table_rng */
  GHashTable *names; /* node names in use (owned keys) → uses */
  GHashTable *axes;  /* reduce axes initializers by content → name (borrowed) */
  guint anon;
} SynthBuilder;

/* A node's first output. */
#define OUT(node) ((const char *)(node)->outputs[0])

/* How a slot's ids are pooled: sum, mean, or `emb(ids).sum(1) / ids.size(1)`. */
typedef enum { POOL_SUM, POOL_MEAN, POOL_SUM_DIV } Pool;

/* splitmix64: the same stream on every platform. Both streams advance on every draw and the
 * draw takes its value from the tables' stream while b->tables is set, else from the dense one:
 * a table's values depend on the seed and its place in the model, not on the dense seed, and
 * with equal seeds the two are one stream. */
guint64 synth_rng_next(SynthBuilder *b);
/* Uniform in [lo, hi). */
float synth_rng_uniform(SynthBuilder *b, float lo, float hi);
char *synth_anon_name(SynthBuilder *b, const char *what);
/* A float initializer of @rank dims, uniform in [lo, hi). Returns its name (owned by the model). */
const char *synth_init_uniform(SynthBuilder *b, const char *name, int rank, const gint64 *dims,
                               float lo, float hi);
/* The same for an embedding table (an initializer read by Gather): drawn from the tables' stream. */
const char *synth_init_table(SynthBuilder *b, const char *name, int rank, const gint64 *dims,
                             float lo, float hi);
const char *synth_init_scalar_f(SynthBuilder *b, const char *name, float v);
const char *synth_init_i64(SynthBuilder *b, const char *name, guint n, const gint64 *v);
/* A node with one output "<scope>/<op>[_N]_output_0"; @in NULL-terminated. The node pointer is
 * valid until the next node is added. */
SedpNnNode *synth_addv(SynthBuilder *b, const char *scope, const char *op, const char *const *in);
/* Same with the inputs as arguments, NULL-terminated. */
SedpNnNode *synth_add(SynthBuilder *b, const char *scope, const char *op, ...);
/* Same with the inputs in an array. */
SedpNnNode *synth_add_array(SynthBuilder *b, const char *scope, const char *op, GPtrArray *inputs);
void synth_rename_output(SedpNnNode *n, const char *name);
/* A Constant node holding an int64 scalar (rank 0) or vector. */
const char *synth_const_i64(SynthBuilder *b, const char *scope, int rank, guint n, const gint64 *v);
const char *synth_const_f(SynthBuilder *b, const char *scope, float v);
/* Unsqueeze / Squeeze one axis: axes an input (a Constant) from opset 13, an attribute before. */
const char *synth_unsqueeze_like(SynthBuilder *b, const char *scope, const char *op, const char *x,
                                 gint64 axis);
const char *synth_unsqueeze(SynthBuilder *b, const char *scope, const char *x, gint64 axis);
const char *synth_squeeze(SynthBuilder *b, const char *scope, const char *x, gint64 axis);
/* ReduceSum (axes an input from opset 13) or ReduceMean (from opset 18) over one axis; the axes
 * initializers are shared, as after PyTorch's constant folding. */
const char *synth_reduce(SynthBuilder *b, const char *scope, const char *op, const char *x,
                         gint64 axis, gboolean keepdims);
const char *synth_concat(SynthBuilder *b, const char *scope, GPtrArray *parts, gint64 axis);
const char *synth_activation(SynthBuilder *b, const char *scope, const char *act, const char *x);
/* nn.Linear(in, out) named @prefix: Gemm(x, W[out, in], b, transB=1), or MatMul(x, Wᵀ[in, out])
 * then Add(b, ·) as the exporter writes it for inputs of other ranks. Weights uniform with the
 * variance that keeps activations at scale (@gain √2 before a ReLU), biases within ±0.1. */
const char *synth_linear_gain(SynthBuilder *b, const char *prefix, const char *x, guint in,
                              guint out, gboolean matmul, float gain);
const char *synth_linear(SynthBuilder *b, const char *prefix, const char *x, guint in, guint out,
                         gboolean matmul);
/* An MLP @prefix.0, @prefix.1, … with @act after every layer (@last_act after the last one, none
 * if NULL); with @alternate, odd layers are MatMul + Add. */
const char *synth_mlp(SynthBuilder *b, const char *prefix, const char *x, guint in, guint n,
                      const guint *sizes, const char *act, const char *last_act,
                      gboolean alternate);
/* Gather(table, slot_K, axis=0) → [batch, L, width]; the table is a new initializer
 * "@table_K" [rows, width]. */
const char *synth_lookup(SynthBuilder *b, const char *table, guint k, guint width, float scale);
/* emb_K looked up and pooled over the ids → [batch, dim]. POOL_SUM_DIV is
 * `emb(ids).sum(1) / ids.size(1)`: ReduceSum, then Div by Cast(Gather(Shape(ids), 1)). */
const char *synth_embed(SynthBuilder *b, guint k, Pool pool);
/* x.view(x.size(0), *rest): Shape → Gather(0) → Unsqueeze → Concat(·, rest) → Reshape. */
const char *synth_view_batch(SynthBuilder *b, const char *scope, const char *x, guint n_rest,
                             const gint64 *rest);
void synth_add_output(SynthBuilder *b, SedpNnNode *producer, const char *name);
const char *synth_sigmoid_output(SynthBuilder *b, const char *x, const char *name);
/* [dense, pooled embeddings…] */
GPtrArray *synth_dense_and_embeddings(SynthBuilder *b, const char *dense, Pool pool);

/* The architectures of synth-multi.c. */
void synth_build_wdl(SynthBuilder *b);
void synth_build_dcnv2(SynthBuilder *b);
void synth_build_dssm(SynthBuilder *b);
void synth_build_esmm(SynthBuilder *b);
void synth_build_ple(SynthBuilder *b);
/* The sequence models (synth-seq.c): din, dien, bst. */
gboolean synth_seq_is_seq(const char *arch);
/* The sequence options of a preset (all architectures), and the sizes of din, dien and bst. */
void synth_seq_options_init(SedpNnSynthOptions *o, gboolean realistic, const char *arch);
gboolean synth_seq_check_options(const SedpNnSynthOptions *o, const char *arch, GError **error);
void synth_build_din(SynthBuilder *b);
void synth_build_dien(SynthBuilder *b);
void synth_build_bst(SynthBuilder *b);
