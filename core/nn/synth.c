/* sedp — synthetic recommendation models, shaped as PyTorch's ONNX exporter writes them.
 *
 * Every model reads `dense` float [batch, n_dense] and `slot_K` int64 [batch, ids_per_slot];
 * embedding tables are initializers `emb_K` [rows, dim] looked up by Gather(emb_K, slot_K, axis=0)
 * and pooled over the ids by ReduceSum / ReduceMean (axes as an input where the opset has it:
 * ReduceSum from 13, ReduceMean from 18). Linear layers are Gemm(x, W, b, transB=1) as PyTorch
 * exports nn.Linear on 2-D inputs, or MatMul + Add(bias, ·) as it exports them on other ranks.
 * Node and value names follow the exporter ("/deep.0/Gemm", "/deep.0/Gemm_output_0"); shape
 * arithmetic appears as PyTorch traces it (Shape → Gather → Unsqueeze → Concat → Reshape). */
#include "synth-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char *const archs[] = {"mlp", "dlrm", "dcn", "deepfm", "mmoe",
                                    "wdl", "dcnv2", "dssm", "esmm", "ple", "din", "dien", "bst",
                                    NULL};

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
    o->crosses = 2;
    o->cross_rank = 4;
    o->levels = 2;
    o->task_experts = 2;
    o->shared_experts = 2;
    synth_seq_options_init (o, FALSE, arch);
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
    o->crosses = 8;
    o->cross_rank = 64;
    o->levels = 2;
    o->task_experts = 2;
    o->shared_experts = 2;
    if (g_strcmp0 (arch, "wdl") == 0) /* DeepRec's WDL */
      set_layers (&o->n_hidden, o->hidden, 3, 1024, 512, 256);
    if (g_strcmp0 (arch, "esmm") == 0) /* the ESMM paper's towers */
      set_layers (&o->n_hidden, o->hidden, 3, 360, 200, 80);
    synth_seq_options_init (o, TRUE, arch);
    return TRUE;
  }
  return FALSE;
}

/* The architectures. */

/* Wide & deep: a BatchNorm on the dense features; the wide part is a linear model on some dense
 * features (Slice) and on the ids (1-wide tables); the deep part an MLP over [dense, pooled
 * embeddings] (odd slots mean-pooled); their sum clipped, then Sigmoid. */
static void
build_mlp (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  gint64 nd[1] = {o->n_dense};
  const char *bn_w = synth_init_uniform (b, "bn.weight", 1, nd, 0.5f, 1.5f);
  const char *bn_b = synth_init_uniform (b, "bn.bias", 1, nd, -0.1f, 0.1f);
  const char *bn_m = synth_init_uniform (b, "bn.running_mean", 1, nd, 0.3f, 0.7f);
  const char *bn_v = synth_init_uniform (b, "bn.running_var", 1, nd, 0.5f, 1.5f);
  SedpNnNode *n = synth_add (b, "/bn", "BatchNormalization", "dense", bn_w, bn_b, bn_m, bn_v, NULL);
  sedp_nn_node_set_attr_float (n, "epsilon", 1e-5f);
  sedp_nn_node_set_attr_float (n, "momentum", 0.9f);
  const char *dense = OUT (n);

  /* Wide. */
  guint n_wide = MIN (o->n_dense, 4u);
  gint64 starts = 0, ends = n_wide, axes = 1, steps = 1;
  const char *sl = OUT (synth_add (b, "/wide", "Slice", dense, synth_init_i64 (b, "onnx::Slice_starts", 1, &starts),
                             synth_init_i64 (b, "onnx::Slice_ends", 1, &ends),
                             synth_init_i64 (b, "onnx::Slice_axes", 1, &axes),
                             synth_init_i64 (b, "onnx::Slice_steps", 1, &steps), NULL));
  const char *wide_dense = synth_linear (b, "wide.dense", sl, n_wide, 1, FALSE);
  g_autoptr (GPtrArray) wparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *g = synth_lookup (b, "wide_emb", k, 1, 0.1f);
    g_autofree char *scope = g_strdup_printf ("/wide_emb.%u", k);
    g_ptr_array_add (wparts, (gpointer) synth_reduce (b, scope, "ReduceSum", g, 1, FALSE));
  }
  const char *wcat = synth_concat (b, "/wide", wparts, 1);
  const char *wsum = synth_reduce (b, "/wide", "ReduceSum", wcat, 1, TRUE);
  const char *wide = OUT (synth_add (b, "/wide", "Add", wide_dense, wsum, NULL));

  /* Deep. */
  g_autoptr (GPtrArray) parts = g_ptr_array_new ();
  g_ptr_array_add (parts, (gpointer) dense);
  for (guint k = 0; k < o->slots; k++)
    g_ptr_array_add (parts, (gpointer) synth_embed (b, k, k % 2 ? POOL_MEAN : POOL_SUM));
  const char *x = synth_concat (b, "/deep", parts, 1);
  gint64 minus1 = -1;
  x = synth_view_batch (b, "/deep", x, 1, &minus1);
  guint in = o->n_dense + o->slots * o->dim;
  x = synth_mlp (b, "deep", x, in, o->n_hidden, o->hidden, "Relu", "Relu", TRUE);
  const char *deep = synth_linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);

  const char *logit = OUT (synth_add (b, "", "Add", wide, deep, NULL));
  const char *lo = synth_init_scalar_f (b, "onnx::Clip_min", -15.0f);
  const char *hi = synth_init_scalar_f (b, "onnx::Clip_max", 15.0f);
  logit = OUT (synth_add (b, "", "Clip", logit, lo, hi, NULL));
  synth_sigmoid_output (b, logit, "prob");
}

/* DLRM: bottom MLP dense → dim; [bottom, pooled embeddings] viewed as [batch, F, dim]; pairwise
 * dots Z = T Tᵀ; the strictly lower triangle of Z gathered from its flattened form; concat with
 * bottom; top MLP; Sigmoid. */
static void
build_dlrm (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  guint sizes[SEDP_NN_SYNTH_MAX_LAYERS + 1];
  memcpy (sizes, o->bottom, o->n_bottom * sizeof (guint));
  sizes[o->n_bottom] = o->dim;
  const char *bot = synth_mlp (b, "bot", "dense", o->n_dense, o->n_bottom + 1, sizes, "Relu", "Relu",
                         FALSE);
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, bot, POOL_SUM);
  const char *t = synth_concat (b, "/interact", parts, 1);
  guint f = o->slots + 1;
  gint64 rest[2] = {-1, o->dim};
  t = synth_view_batch (b, "/interact", t, 2, rest);
  SedpNnNode *n = synth_add (b, "/interact", "Transpose", t, NULL);
  gint64 perm[3] = {0, 2, 1};
  sedp_nn_node_set_attr_ints (n, "perm", 3, perm);
  const char *z = OUT (synth_add (b, "/interact", "MatMul", t, OUT (n), NULL));
  n = synth_add (b, "/interact", "Flatten", z, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  const char *zf = OUT (n);
  guint pairs = f * (f - 1) / 2;
  g_autofree gint64 *li = g_new (gint64, pairs);
  guint p = 0;
  for (guint i = 0; i < f; i++)
    for (guint j = 0; j < i; j++)
      li[p++] = (gint64) i * f + j;
  const char *idx = synth_init_i64 (b, "interact.tril_indices", pairs, li);
  n = synth_add (b, "/interact", "Gather", zf, idx, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g_autoptr (GPtrArray) rparts = g_ptr_array_new ();
  g_ptr_array_add (rparts, (gpointer) bot);
  g_ptr_array_add (rparts, (gpointer) OUT (n));
  const char *r = synth_concat (b, "/interact", rparts, 1);
  const char *x = synth_mlp (b, "top", r, o->dim + pairs, o->n_hidden, o->hidden, "Relu", "Relu", TRUE);
  x = synth_linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);
  synth_sigmoid_output (b, x, "prob");
}

/* DCN-v2 in its parallel full-rank form (dcnv2, synth-multi.c, is the stacked low-rank one):
 * x0 = [dense, pooled embeddings]; cross layers x_{l+1} = x0 * (x_l W_l + b_l) + x_l;
 * a deep tower over x0 (Tanh on its last layer); [x_L, deep] → linear → Sigmoid. */
static void
build_dcn (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM);
  const char *x0 = synth_concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim;
  const char *xl = x0;
  float a = 1.0f / sqrtf ((float) d0);
  for (guint l = 0; l < o->cross_layers; l++) {
    g_autofree char *scope = g_strdup_printf ("/cross.%u", l);
    g_autofree char *wname = g_strdup_printf ("cross.%u.weight", l);
    g_autofree char *bname = g_strdup_printf ("cross.%u.bias", l);
    gint64 wd[2] = {d0, d0}, bd[1] = {d0};
    const char *w = synth_init_uniform (b, wname, 2, wd, -a, a);
    const char *bias = synth_init_uniform (b, bname, 1, bd, -a, a);
    const char *xw = OUT (synth_add (b, scope, "MatMul", xl, w, NULL));
    const char *xwb = OUT (synth_add (b, scope, "Add", xw, bias, NULL));
    const char *m = OUT (synth_add (b, scope, "Mul", x0, xwb, NULL));
    xl = OUT (synth_add (b, scope, "Add", m, xl, NULL));
  }
  const char *deep = synth_mlp (b, "deep", x0, d0, o->n_hidden, o->hidden, "Relu", "Tanh", TRUE);
  deep = OUT (synth_add (b, "/deep", "Identity", deep, NULL));
  g_autoptr (GPtrArray) cparts = g_ptr_array_new ();
  g_ptr_array_add (cparts, (gpointer) xl);
  g_ptr_array_add (cparts, (gpointer) deep);
  const char *c = synth_concat (b, "/out", cparts, 1);
  const char *logit = synth_linear (b, "out", c, d0 + o->hidden[o->n_hidden - 1], 1, FALSE);
  synth_sigmoid_output (b, logit, "prob");
}

/* DeepFM: first order from 1-wide tables and a linear on dense; FM second order
 * 0.5 ((Σv)² − Σv²) summed over dim; a deep MLP over the flattened embeddings and dense;
 * the three summed, Sigmoid. */
static void
build_deepfm (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  /* First order. */
  g_autoptr (GPtrArray) fparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *g = synth_lookup (b, "fo_emb", k, 1, 0.1f);
    g_autofree char *scope = g_strdup_printf ("/fo_emb.%u", k);
    const char *s = synth_squeeze (b, scope, g, 2);
    g_ptr_array_add (fparts, (gpointer) synth_reduce (b, scope, "ReduceSum", s, 1, TRUE));
  }
  const char *fcat = synth_concat (b, "/first", fparts, 1);
  const char *fsum = synth_reduce (b, "/first", "ReduceSum", fcat, 1, TRUE);
  const char *fdense = synth_linear (b, "first.dense", "dense", o->n_dense, 1, FALSE);
  const char *first = OUT (synth_add (b, "/first", "Add", fdense, fsum, NULL));

  /* Second order over V [batch, slots, dim]. */
  g_autoptr (GPtrArray) vparts = g_ptr_array_new ();
  for (guint k = 0; k < o->slots; k++) {
    const char *e = synth_embed (b, k, POOL_SUM);
    g_autofree char *scope = g_strdup_printf ("/emb.%u", k);
    g_ptr_array_add (vparts, (gpointer) synth_unsqueeze (b, scope, e, 1));
  }
  const char *v = synth_concat (b, "/fm", vparts, 1);
  const char *sv = synth_reduce (b, "/fm", "ReduceSum", v, 1, FALSE);
  const char *sq = OUT (synth_add (b, "/fm", "Mul", sv, sv, NULL));
  const char *vv = OUT (synth_add (b, "/fm", "Mul", v, v, NULL));
  const char *ssq = synth_reduce (b, "/fm", "ReduceSum", vv, 1, FALSE);
  const char *d = OUT (synth_add (b, "/fm", "Sub", sq, ssq, NULL));
  const char *fm = synth_reduce (b, "/fm", "ReduceSum", d, 1, TRUE);
  fm = OUT (synth_add (b, "/fm", "Div", fm, synth_const_f (b, "/fm", 2.0f), NULL));

  /* Deep. */
  SedpNnNode *n = synth_add (b, "/deep", "Flatten", v, NULL);
  sedp_nn_node_set_attr_int (n, "axis", 1);
  g_autoptr (GPtrArray) dparts = g_ptr_array_new ();
  g_ptr_array_add (dparts, (gpointer) "dense");
  g_ptr_array_add (dparts, (gpointer) OUT (n));
  const char *x = synth_concat (b, "/deep", dparts, 1);
  x = synth_mlp (b, "deep", x, o->n_dense + o->slots * o->dim, o->n_hidden, o->hidden, "Relu", "Relu",
           TRUE);
  const char *deep = synth_linear (b, "out", x, o->hidden[o->n_hidden - 1], 1, FALSE);

  const char *logit = OUT (synth_add (b, "", "Add", first, fm, NULL));
  logit = OUT (synth_add (b, "", "Add", logit, deep, NULL));
  synth_sigmoid_output (b, logit, "prob");
}

/* MMoE: x = [dense, mean-pooled embeddings]; K expert MLPs stacked [batch, K, H]; per task a
 * Softmax gate over the experts; task 0 mixes with Expand + Mul + ReduceSum, task 1 with a
 * batched MatMul; towers with LeakyRelu; outputs ctr and cvr. */
static void
build_mmoe (SynthBuilder *b)
{
  const SedpNnSynthOptions *o = b->o;
  g_autoptr (GPtrArray) parts = synth_dense_and_embeddings (b, "dense", POOL_SUM_DIV);
  const char *x = synth_concat (b, "", parts, 1);
  guint d0 = o->n_dense + o->slots * o->dim;
  guint h = o->expert_hidden[o->n_expert_hidden - 1];
  g_autoptr (GPtrArray) eparts = g_ptr_array_new ();
  for (guint k = 0; k < o->experts; k++) {
    g_autofree char *prefix = g_strdup_printf ("experts.%u", k);
    g_autofree char *scope = g_strdup_printf ("/experts.%u", k);
    const char *e = synth_mlp (b, prefix, x, d0, o->n_expert_hidden, o->expert_hidden, "Relu", "Relu",
                         FALSE);
    g_ptr_array_add (eparts, (gpointer) synth_unsqueeze (b, scope, e, 1));
  }
  const char *experts = synth_concat (b, "/experts", eparts, 1);

  static const char *const tasks[2] = {"ctr", "cvr"};
  for (guint t = 0; t < 2; t++) {
    g_autofree char *gp = g_strdup_printf ("gates.%u", t);
    g_autofree char *gs = g_strdup_printf ("/gates.%u", t);
    const char *g = synth_linear (b, gp, x, d0, o->experts, FALSE);
    SedpNnNode *n = synth_add (b, gs, "Softmax", g, NULL);
    sedp_nn_node_set_attr_int (n, "axis", 1);
    g = OUT (n);
    const char *mixed;
    if (t == 0) {
      const char *g3 = synth_unsqueeze (b, gs, g, 2);
      const char *shape = OUT (synth_add (b, gs, "Shape", experts, NULL));
      const char *ge = OUT (synth_add (b, gs, "Expand", g3, shape, NULL));
      const char *m = OUT (synth_add (b, gs, "Mul", ge, experts, NULL));
      mixed = synth_reduce (b, gs, "ReduceSum", m, 1, FALSE);
    } else {
      const char *g3 = synth_unsqueeze (b, gs, g, 1);
      const char *mm = OUT (synth_add (b, gs, "MatMul", g3, experts, NULL));
      mixed = synth_squeeze (b, gs, mm, 1);
    }
    g_autofree char *tp = g_strdup_printf ("towers.%u", t);
    guint tower[1] = {o->tower};
    const char *y = synth_mlp (b, tp, mixed, h, 1, tower, "LeakyRelu", "LeakyRelu", FALSE);
    g_autofree char *op = g_strdup_printf ("towers.%u.out", t);
    y = synth_linear (b, op, y, o->tower, 1, FALSE);
    g_autofree char *ts = g_strdup_printf ("/towers.%u", t);
    n = synth_add (b, ts, "Sigmoid", y, NULL);
    synth_add_output (b, n, tasks[t]);
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
  if (strcmp (arch, "dcn") == 0 || strcmp (arch, "dcnv2") == 0)
    RANGE (cross_layers, 1, 16);
  if (strcmp (arch, "wdl") == 0)
    RANGE (crosses, 0, 1024);
  if (strcmp (arch, "dcnv2") == 0)
    RANGE (cross_rank, 1, 65536);
  if (strcmp (arch, "dssm") == 0)
    RANGE (slots, 2, 1024); /* a user and an item tower */
  if (strcmp (arch, "ple") == 0) {
    RANGE (levels, 1, 8);
    RANGE (task_experts, 1, 64);
    RANGE (shared_experts, 1, 64);
  }
  if (strcmp (arch, "mmoe") == 0 || strcmp (arch, "ple") == 0) {
    RANGE (experts, 1, 64);
    RANGE (n_expert_hidden, 1, SEDP_NN_SYNTH_MAX_LAYERS);
    for (guint k = 0; k < o->n_expert_hidden; k++)
      RANGE (expert_hidden[k], 1, 65536);
    RANGE (tower, 1, 65536);
  }
#undef RANGE
  if (!synth_seq_check_options (o, arch, error))
    return FALSE;
  /* Embedding tables: keep the file addressable and the run reasonable. */
  guint64 bytes = (guint64) (o->slots + synth_seq_is_seq (arch)) * o->rows * (o->dim + 1) *
                  sizeof (float);
  if (strcmp (arch, "wdl") == 0)
    bytes += (guint64) o->crosses * o->rows * sizeof (float);
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
  return sedp_nn_synth_seeds (arch, seed, seed, opts, error);
}

SedpNnModel *
sedp_nn_synth_seeds (const char *arch, guint64 seed, guint64 dense_seed,
                     const SedpNnSynthOptions *opts, GError **error)
{
  g_return_val_if_fail (arch != NULL, NULL);
  SedpNnSynthOptions small;
  if (opts == NULL) {
    sedp_nn_synth_options_init (&small, "small", arch);
    opts = &small;
  }
  void (*build) (SynthBuilder *) = NULL;
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
  else if (strcmp (arch, "wdl") == 0)
    build = synth_build_wdl;
  else if (strcmp (arch, "dcnv2") == 0)
    build = synth_build_dcnv2;
  else if (strcmp (arch, "dssm") == 0)
    build = synth_build_dssm;
  else if (strcmp (arch, "esmm") == 0)
    build = synth_build_esmm;
  else if (strcmp (arch, "ple") == 0)
    build = synth_build_ple;
  else if (strcmp (arch, "din") == 0)
    build = synth_build_din;
  else if (strcmp (arch, "dien") == 0)
    build = synth_build_dien;
  else if (strcmp (arch, "bst") == 0)
    build = synth_build_bst;
  if (build == NULL) {
    g_autofree char *list = g_strjoinv (", ", (char **) archs);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "synth: unknown architecture '%s' (known: %s)", arch, list);
    return NULL;
  }
  if (!check_options (opts, arch, error))
    return NULL;

  SynthBuilder b = {
    .m = sedp_nn_model_new (opts->opset, "sedp-synth"),
    .o = opts,
    .rng = dense_seed ^ 0x5ed9c0ffee5eedULL,
    .table_rng = seed ^ 0x5ed9c0ffee5eedULL,
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
