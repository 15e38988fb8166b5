/* sedp — compiling a model into a plan (shapes, folding, fusion, arena) and running it. */
#include "ops.h"

#include <cblas.h>
#include <errno.h>
#include <sys/mman.h>

/* Values folded at plan time when every input is constant and each output is at most this many
 * elements (bigger results, such as a transposed weight matrix, would be copied per plan). */
#define FOLD_MAX_ELEMENTS 65536

/* OpenBLAS's own control of its thread count. */
extern void openblas_set_num_threads (int num_threads);

void
sedp_nn_set_blas_threads (int threads)
{
  openblas_set_num_threads (MAX (threads, 1));
}

/* A model of an opset before 11 runs when every operator it uses is defined in that opset as the
 * engine runs it (OpDef.since): the error names those that changed since. */
static gboolean
check_opset (const SedpNnModel *model, GError **error)
{
  if (model->opset >= 11)
    return TRUE;
  g_autoptr (GString) changed = g_string_new (NULL);
  for (guint i = 0; i < model->n_nodes; i++) {
    const OpDef *def = nn_op_lookup (model->nodes[i].op_type);
    g_autofree char *item = g_strdup_printf ("%s (%" G_GINT64_FORMAT ")", def->op_type, def->since);
    if (def->since > model->opset && !strstr (changed->str, item))
      g_string_append_printf (changed, "%s%s", changed->len ? ", " : "", item);
  }
  if (changed->len == 0)
    return TRUE;
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
               "opset %" G_GINT64_FORMAT ": the engine runs these operators as defined from a later "
               "opset (in brackets): %s; re-export the model with opset 11 or later",
               model->opset, changed->str);
  return FALSE;
}

gboolean
sedp_nn_model_check (const SedpNnModel *model, GError **error)
{
  g_autoptr (GPtrArray) missing = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < model->n_nodes; i++) {
    const SedpNnNode *n = &model->nodes[i];
    gboolean default_domain = n->domain == NULL || n->domain[0] == '\0' || strcmp (n->domain, "ai.onnx") == 0;
    if (default_domain && nn_op_lookup (n->op_type))
      continue;
    g_autofree char *name = default_domain ? g_strdup (n->op_type) : g_strdup_printf ("%s:%s", n->domain, n->op_type);
    gboolean seen = FALSE;
    for (guint k = 0; k < missing->len && !seen; k++)
      seen = strcmp (missing->pdata[k], name) == 0;
    if (!seen)
      g_ptr_array_add (missing, g_steal_pointer (&name));
  }
  if (missing->len == 0)
    return check_opset (model, error);
  g_ptr_array_add (missing, NULL);
  g_autofree char *list = g_strjoinv (", ", (char **) missing->pdata);
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
               "unsupported operators (opset %" G_GINT64_FORMAT "): %s", model->opset, list);
  return FALSE;
}

void
nn_compile_options_from_env (NnCompileOptions *opts)
{
  *opts = (NnCompileOptions){
    .no_fuse_attention = g_getenv ("SEDP_NN_NO_FUSE_ATTENTION") != NULL,
    .no_pack = g_getenv ("SEDP_NN_NO_PACKED") != NULL,
  };
}

const char *
nn_kernel_id_name (NnKernelId id)
{
  static const char *const names[NN_KERNEL_N] = {
    [NN_KERNEL_UNKNOWN] = "unknown",
    [NN_KERNEL_GEMM] = "gemm",
    [NN_KERNEL_MATMUL_BATCHED] = "matmul_batched",
    [NN_KERNEL_BINARY] = "binary",
    [NN_KERNEL_COMPARE] = "compare",
    [NN_KERNEL_LOGIC] = "logic",
    [NN_KERNEL_MOD] = "mod",
    [NN_KERNEL_POW] = "pow",
    [NN_KERNEL_PRELU] = "prelu",
    [NN_KERNEL_WHERE] = "where",
    [NN_KERNEL_VARIADIC] = "variadic",
    [NN_KERNEL_UNARY] = "unary",
    [NN_KERNEL_PARAM_ACT] = "param_act",
    [NN_KERNEL_CLIP] = "clip",
    [NN_KERNEL_CAST] = "cast",
    [NN_KERNEL_NOT] = "not",
    [NN_KERNEL_IS] = "is",
    [NN_KERNEL_SOFTMAX] = "softmax",
    [NN_KERNEL_BATCHNORM] = "batchnorm",
    [NN_KERNEL_LAYERNORM] = "layer_norm",
    [NN_KERNEL_REDUCE] = "reduce",
    [NN_KERNEL_EMBEDDING_BAG] = "embedding_bag",
    [NN_KERNEL_GATHER] = "gather",
    [NN_KERNEL_GATHER_ELEMENTS] = "gather_elements",
    [NN_KERNEL_STRIDED_COPY] = "strided_copy",
    [NN_KERNEL_TILE] = "tile",
    [NN_KERNEL_CONCAT] = "concat",
    [NN_KERNEL_SPLIT] = "split",
    [NN_KERNEL_ARG] = "arg",
    [NN_KERNEL_TOPK] = "topk",
    [NN_KERNEL_CUMSUM] = "cumsum",
    [NN_KERNEL_ONEHOT] = "onehot",
    [NN_KERNEL_TRILU] = "trilu",
    [NN_KERNEL_GRU] = "gru",
    [NN_KERNEL_TARGET_ATTENTION] = "target_attention",
    [NN_KERNEL_SELF_ATTENTION] = "self_attention",
    [NN_KERNEL_RETIRED] = "retired",
  };
  return (guint) id < NN_KERNEL_N && names[id] ? names[id] : "unknown";
}

/* Arenas of at least this size are mapped, not taken from the heap. */
#define ARENA_MAP_MIN ((gsize) 1 << 20)

/* The plan's zeroed arena of @size bytes. A large one is mapped (anonymous memory is zero and
 * lazily backed), so that a model whose plan asks for gigabytes costs nothing until a run
 * touches them: `sedp model info` of a hostile file stays instant, and a plan's resident memory
 * is what its runs use. With options.lazy_arena every arena is mapped. */
static gboolean
plan_arena_alloc (Plan *p, gsize size, GError **error)
{
  if (size < ARENA_MAP_MIN && !p->options.lazy_arena) {
    p->arena = g_aligned_alloc0 (size, 1, NN_ALIGN);
    return TRUE;
  }
  void *m = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                  -1, 0);
  if (m == MAP_FAILED) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_SHAPE,
                 "cannot map the model's %zu bytes of intermediate values at batch %" G_GINT64_FORMAT
                 ": %s", size, p->batch, g_strerror (errno));
    return FALSE;
  }
  p->arena = m;
  p->arena_mapped = TRUE;
  return TRUE;
}

static void
plan_arena_free (Plan *p)
{
  if (p->arena_mapped && p->arena)
    munmap (p->arena, MAX (p->arena_size, NN_ALIGN));
  else
    g_free (p->arena);
  p->arena = NULL;
  p->arena_mapped = FALSE;
}

static void
plan_clear (Plan *p)
{
  g_clear_pointer (&p->ocl, nn_ocl_plan_free); /* before the values: it holds their weights */
  g_clear_pointer (&p->device, sedp_nn_device_unref);
  if (p->steps) {
    for (guint i = 0; i < p->steps->len; i++)
      nn_free_step_params (&g_array_index (p->steps, Step, i));
    g_array_unref (p->steps);
  }
  for (guint i = 0; i < p->n_values; i++)
    if (p->values[i].owned_data)
      g_free (p->values[i].data);
  g_free (p->values);
  if (p->by_name)
    g_hash_table_unref (p->by_name);
  plan_arena_free (p);
  g_free (p->ptrs);
  g_free (p->input_values);
  g_free (p->input_info);
  g_free (p->output_values);
  g_free (p->output_info);
  if (p->input_aliases)
    g_array_unref (p->input_aliases);
  nn_special_free (p->special);
  if (p->model)
    sedp_nn_model_unref (p->model);
}

void
sedp_nn_plan_free (SedpNnPlan *plan)
{
  if (plan == NULL)
    return;
  plan_clear ((Plan *) plan);
  g_free (plan);
}

static int
value_index (Plan *p, const char *name)
{
  return GPOINTER_TO_INT (g_hash_table_lookup (p->by_name, name)) - 1;
}

static int
add_value (Plan *p, const char *name)
{
  int idx = (int) p->n_values++;
  Value *v = &p->values[idx];
  v->name = name;
  v->def_step = -1;
  v->last_use = -1;
  v->alias_of = -1;
  v->input_index = -1;
  g_hash_table_insert (p->by_name, (gpointer) name, GINT_TO_POINTER (idx + 1));
  return idx;
}

int
nn_add_scratch (OpCtx *c, gint64 numel)
{
  Step *s = c->step;
  g_return_val_if_fail (s->n_out < NN_MAX_OUT, -1);
  int v = (int) c->plan->n_values++;
  Value *val = &c->plan->values[v];
  val->name = "(scratch)"; /* not in by_name: nothing reads it by name */
  val->def_step = -1;
  val->last_use = -1;
  val->alias_of = -1;
  val->input_index = -1;
  gint64 dims[1] = {MAX (numel, 1)};
  nn_set_shape (val, SEDP_NN_FLOAT, 1, dims);
  s->out[s->n_out++] = v;
  return (int) s->n_out - 1;
}

int
nn_alias_root (const Plan *p, int v)
{
  while (p->values[v].kind == VALUE_ALIAS)
    v = p->values[v].alias_of;
  return v;
}

/* Binds the graph inputs: symbolic dims named like input 0's first dim (or unnamed first dims)
 * take the batch size. An input with @param_data[i] set is a constant of that value (copied). */
static gboolean
bind_inputs (Plan *p, gint64 batch, gconstpointer const *param_data, GError **error)
{
  const SedpNnModel *m = p->model;
  const char *batch_param = m->n_inputs && m->inputs[0].rank > 0 ? m->inputs[0].dim_params[0] : NULL;
  p->n_inputs = m->n_inputs;
  p->input_values = g_new (int, MAX (m->n_inputs, 1));
  p->input_info = g_new0 (SedpNnTensor, MAX (m->n_inputs, 1));
  for (guint i = 0; i < m->n_inputs; i++) {
    const SedpNnValueInfo *vi = &m->inputs[i];
    if (vi->rank < 0) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                   "graph input '%s' has no shape", vi->name);
      return FALSE;
    }
    if (sedp_nn_dtype_size (vi->dtype) == 0) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                   "graph input '%s' has the unsupported type %s", vi->name, sedp_nn_dtype_name (vi->dtype));
      return FALSE;
    }
    gint64 dims[SEDP_NN_MAX_RANK];
    for (int k = 0; k < vi->rank; k++) {
      if (vi->dims[k] >= 0) {
        dims[k] = vi->dims[k];
        if (k == 0 && vi->dims[0] != batch && i == 0) {
          g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_SHAPE,
                       "graph input '%s' has a fixed batch of %" G_GINT64_FORMAT
                       ", asked for %" G_GINT64_FORMAT,
                       vi->name, vi->dims[0], batch);
          return FALSE;
        }
      } else if (k == 0 || (vi->dim_params[k] && batch_param && strcmp (vi->dim_params[k], batch_param) == 0)) {
        dims[k] = batch;
      } else {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                     "graph input '%s': symbolic dimension %d ('%s') is not the batch", vi->name, k,
                     vi->dim_params[k] ? vi->dim_params[k] : "?");
        return FALSE;
      }
    }
    if (nn_numel (vi->rank, dims) > NN_MAX_ELEMENTS) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_SHAPE,
                   "graph input '%s' would have more than %" G_GINT64_FORMAT " elements", vi->name,
                   NN_MAX_ELEMENTS);
      return FALSE;
    }
    int v = value_index (p, vi->name);
    nn_set_shape (&p->values[v], vi->dtype, vi->rank, dims);
    p->values[v].kind = VALUE_INPUT;
    p->values[v].input_index = (int) i;
    if (param_data && param_data[i]) { /* a parameter: its value is part of the plan */
      p->values[v].kind = VALUE_CONST;
      p->values[v].data = g_memdup2 (param_data[i], MAX ((gsize) p->values[v].numel * sedp_nn_dtype_size (vi->dtype), 1));
      p->values[v].owned_data = TRUE;
    }
    p->input_values[i] = v;
    SedpNnTensor *t = &p->input_info[i];
    t->name = vi->name;
    t->dtype = vi->dtype;
    t->rank = vi->rank;
    memcpy (t->dims, dims, sizeof dims);
  }
  return TRUE;
}

/* The node's outputs against its operator's (OpDef.max_outputs, optional_outputs): not more
 * than it has, every required one named, at least one named. */
static gboolean
check_outputs (const SedpNnNode *node, const OpDef *def, GError **error)
{
  guint max = def->max_outputs ? def->max_outputs : 1, named = 0;
  if (node->n_outputs > max) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, node, "has %u outputs; the operator has %u",
                   node->n_outputs, max);
    return FALSE;
  }
  for (guint k = 0; k < max; k++) {
    gboolean present = k < node->n_outputs && node->outputs[k][0] != '\0';
    named += present;
    if (!present && !(def->optional_outputs & (G_GUINT64_CONSTANT (1) << k))) {
      nn_node_error (error, SEDP_NN_ERROR_INVALID, node,
                     "output %u has no name; the operator always produces it", k);
      return FALSE;
    }
  }
  if (named == 0)
    nn_node_error (error, SEDP_NN_ERROR_INVALID, node, "has no output");
  return named > 0;
}

/* Orders the nodes so that every input is defined before it is read. */
static guint *
topological_order (Plan *p, GError **error)
{
  const SedpNnModel *m = p->model;
  g_autofree guint8 *ready = g_new0 (guint8, p->n_values);
  for (guint i = 0; i < p->n_values; i++)
    ready[i] = p->values[i].kind == VALUE_INPUT || p->values[i].kind == VALUE_CONST;
  guint *order = g_new (guint, MAX (m->n_nodes, 1));
  g_autofree guint8 *done = g_new0 (guint8, MAX (m->n_nodes, 1));
  guint n = 0;
  gboolean progress = TRUE;
  /* Nodes are usually already sorted: repeated sweeps are linear in practice. */
  while (progress && n < m->n_nodes) {
    progress = FALSE;
    for (guint i = 0; i < m->n_nodes; i++) {
      if (done[i])
        continue;
      const SedpNnNode *node = &m->nodes[i];
      gboolean ok = TRUE;
      for (guint k = 0; k < node->n_inputs && ok; k++)
        ok = node->inputs[k][0] == '\0' || ready[value_index (p, node->inputs[k])];
      if (!ok)
        continue;
      done[i] = 1;
      order[n++] = i;
      progress = TRUE;
      for (guint k = 0; k < node->n_outputs; k++)
        if (node->outputs[k][0])
          ready[value_index (p, node->outputs[k])] = 1;
    }
  }
  if (n < m->n_nodes) {
    for (guint i = 0; i < m->n_nodes; i++)
      if (!done[i]) {
        const SedpNnNode *node = &m->nodes[i];
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "the graph has a cycle: node '%s' (%s) depends on its own output",
                     node->name && *node->name ? node->name : node->outputs[0], node->op_type);
        break;
      }
    g_free (order);
    return NULL;
  }
  return order;
}

static gboolean
is_gemm_step (const Step *s)
{
  return s->fn == nn_kernel_gemm;
}

/* Tries to fold this node into the Gemm/MatMul step that produces its input: a bias Add, or an
 * activation. Returns TRUE when fused (the node needs no step of its own). */
static gboolean
try_fuse (Plan *p, const SedpNnNode *node, Step *step)
{
  const char *op = node->op_type;
  gboolean is_add = strcmp (op, "Add") == 0;
  Activation act = strcmp (op, "Relu") == 0        ? ACT_RELU
                   : strcmp (op, "Sigmoid") == 0   ? ACT_SIGMOID
                   : strcmp (op, "Tanh") == 0      ? ACT_TANH
                   : strcmp (op, "LeakyRelu") == 0 ? ACT_LEAKY_RELU
                                                   : ACT_NONE;
  if (!is_add && act == ACT_NONE)
    return FALSE;
  for (guint k = 0; k < (is_add ? 2u : 1u); k++) {
    int vi = step->in[k];
    Value *v = &p->values[vi];
    if (v->kind != VALUE_TEMP || v->def_step < 0 || v->is_output || v->n_consumers != 1)
      continue;
    Step *src = &g_array_index (p->steps, Step, v->def_step);
    if (!is_gemm_step (src))
      continue;
    GemmParams *gp = src->params;
    if (gp->act != ACT_NONE)
      continue;
    Value *out = &p->values[step->out[0]];
    if (is_add) {
      if (gp->bias_kind != 0)
        continue;
      Value *w = &p->values[step->in[1 - k]];
      if (w->dtype != SEDP_NN_FLOAT || out->rank != v->rank || out->numel != v->numel)
        continue;
      gboolean row = w->numel == gp->N && w->rank >= 1 && w->dims[w->rank - 1] == gp->N;
      for (int d = 0; row && d < w->rank - 1; d++)
        row = w->dims[d] == 1;
      if (!row && w->numel != 1)
        continue;
      gp->bias_kind = w->numel == 1 ? 1 : 2;
      gp->beta = 1.0f;
      src->in[2] = step->in[1 - k];
      src->n_in = 3;
      src->flops += (double) out->numel;
      src->kernel = "gemm+bias";
    } else {
      gp->act = act;
      gp->leaky_alpha = nn_attr_float (node, "alpha", 0.01f);
      src->kernel = act == ACT_RELU ? "gemm+relu" : act == ACT_SIGMOID ? "gemm+sigmoid" : "gemm+act";
    }
    src->out[0] = step->out[0];
    out->def_step = v->def_step;
    v->def_step = -1;
    v->n_consumers = 0;
    return TRUE;
  }
  return FALSE;
}

/* Gather(table, ids [B, L]) followed by ReduceSum/Mean over axis 1: one pooled lookup. */
static gboolean
try_embedding_bag (Plan *p, const SedpNnNode *node, Step *step)
{
  gboolean mean = strcmp (node->op_type, "ReduceMean") == 0;
  if (!mean && strcmp (node->op_type, "ReduceSum") != 0)
    return FALSE;
  Value *v = &p->values[step->in[0]];
  if (v->kind != VALUE_TEMP || v->def_step < 0 || v->is_output || v->n_consumers != 1 || v->rank != 3)
    return FALSE;
  Step *src = &g_array_index (p->steps, Step, v->def_step);
  if (strcmp (src->node->op_type, "Gather") != 0 || nn_attr_int (src->node, "axis", 0) != 0)
    return FALSE;
  Value *table = &p->values[src->in[0]], *ids = &p->values[src->in[1]];
  Value *out = &p->values[step->out[0]];
  if (table->dtype != SEDP_NN_FLOAT || table->rank != 2 || ids->dtype != SEDP_NN_INT64 || ids->rank != 2)
    return FALSE;
  /* The reduction must be over axis 1 only: [B, L, D] → [B, D] or [B, 1, D]. */
  if (out->rank < 2 || out->numel != v->dims[0] * v->dims[2] ||
      out->dims[out->rank - 1] != v->dims[2] || out->dims[0] != v->dims[0] ||
      (out->rank == 3 && out->dims[1] != 1))
    return FALSE;
  EmbeddingBagParams *ep = g_new0 (EmbeddingBagParams, 1);
  ep->rows = table->dims[0];
  ep->dim = table->dims[1];
  ep->bags = ids->dims[0];
  ep->per_bag = ids->dims[1];
  ep->mean = mean;
  nn_free_step_params (src);
  src->params = ep;
  src->fn = nn_kernel_embedding_bag;
  src->id = NN_KERNEL_EMBEDDING_BAG;
  src->kernel = mean ? "embedding_bag_mean" : "embedding_bag_sum";
  src->flops = (double) (ep->bags * ep->per_bag * ep->dim);
  src->out[0] = step->out[0];
  out->def_step = v->def_step;
  v->def_step = -1;
  v->n_consumers = 0;
  return TRUE;
}

static gboolean
fold_step (Plan *p, Step *step, GError **error)
{
  for (guint k = 0; k < step->n_out; k++) {
    if (step->out[k] < 0)
      continue; /* an omitted optional output */
    Value *o = &p->values[step->out[k]];
    gsize bytes = (gsize) o->numel * sedp_nn_dtype_size (o->dtype);
    o->data = g_malloc0 (MAX (bytes, 1));
    o->owned_data = TRUE;
    o->kind = VALUE_CONST;
  }
  /* The kernel reads ptrs[value]: give it a sparse view with just what it touches. */
  g_autofree gpointer *ptrs = g_new0 (gpointer, p->n_values);
  for (guint k = 0; k < step->n_in; k++)
    if (step->in[k] >= 0)
      ptrs[step->in[k]] = p->values[nn_alias_root (p, step->in[k])].data;
  for (guint k = 0; k < step->n_out; k++)
    if (step->out[k] >= 0)
      ptrs[step->out[k]] = p->values[step->out[k]].data;
  return step->fn (p, step, ptrs, error);
}

/* Offsets in the arena for every run-time value: greedy by size, sharing memory between values
 * whose lifetimes do not overlap. */
static gboolean
plan_memory (Plan *p, GError **error)
{
  guint n_steps = p->steps->len;
  for (guint s = 0; s < n_steps; s++) {
    Step *st = &g_array_index (p->steps, Step, s);
    for (guint k = 0; k < st->n_in; k++)
      if (st->in[k] >= 0) {
        int r = nn_alias_root (p, st->in[k]);
        p->values[r].last_use = MAX (p->values[r].last_use, (int) s);
      }
  }
  for (guint i = 0; i < p->n_outputs; i++) {
    int r = nn_alias_root (p, p->output_values[i]);
    p->values[r].last_use = (int) n_steps;
  }
  g_autoptr (GArray) temps = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint i = 0; i < p->n_values; i++)
    if (p->values[i].kind == VALUE_TEMP && p->values[i].def_step >= 0) {
      int v = (int) i;
      if (p->values[v].last_use < p->values[v].def_step)
        p->values[v].last_use = p->values[v].def_step; /* written, never read */
      g_array_append_val (temps, v);
    }
  /* Largest first. */
  for (guint i = 1; i < temps->len; i++)
    for (guint j = i; j > 0; j--) {
      int a = g_array_index (temps, int, j - 1), b = g_array_index (temps, int, j);
      if (p->values[a].numel * (gint64) sedp_nn_dtype_size (p->values[a].dtype) >=
          p->values[b].numel * (gint64) sedp_nn_dtype_size (p->values[b].dtype))
        break;
      g_array_index (temps, int, j - 1) = b;
      g_array_index (temps, int, j) = a;
    }
  gsize total = 0;
  for (guint i = 0; i < temps->len; i++) {
    Value *v = &p->values[g_array_index (temps, int, i)];
    gsize size = ((gsize) v->numel * sedp_nn_dtype_size (v->dtype) + NN_ALIGN - 1) & ~(gsize) (NN_ALIGN - 1);
    size = MAX (size, NN_ALIGN);
    gsize offset = 0;
    gboolean moved = TRUE;
    while (moved) {
      moved = FALSE;
      for (guint j = 0; j < i; j++) {
        Value *o = &p->values[g_array_index (temps, int, j)];
        gsize osize = MAX (((gsize) o->numel * sedp_nn_dtype_size (o->dtype) + NN_ALIGN - 1) & ~(gsize) (NN_ALIGN - 1), NN_ALIGN);
        gboolean time_overlap = !(o->last_use < v->def_step || v->last_use < o->def_step);
        gboolean mem_overlap = offset < o->offset + osize && o->offset < offset + size;
        if (time_overlap && mem_overlap) {
          offset = o->offset + osize;
          moved = TRUE;
        }
      }
    }
    v->offset = offset;
    total = MAX (total, offset + size);
  }
  p->arena_size = total;
  if ((gint64) total > NN_MAX_ARENA) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_SHAPE,
                 "the model needs %zu bytes of intermediate values at batch %" G_GINT64_FORMAT
                 ", more than the limit of %" G_GINT64_FORMAT,
                 total, p->batch, NN_MAX_ARENA);
    return FALSE;
  }
  return plan_arena_alloc (p, MAX (total, NN_ALIGN), error);
}

static void
resolve_pointers (Plan *p)
{
  p->ptrs = g_new0 (gpointer, p->n_values);
  p->input_aliases = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint i = 0; i < p->n_values; i++) {
    Value *v = &p->values[i];
    int r = nn_alias_root (p, (int) i);
    Value *root = &p->values[r];
    if (root->kind == VALUE_CONST)
      p->ptrs[i] = root->data;
    else if (root->kind == VALUE_TEMP)
      p->ptrs[i] = p->arena + root->offset;
    else if (root->kind == VALUE_INPUT && v->kind == VALUE_ALIAS) {
      int idx = (int) i;
      g_array_append_val (p->input_aliases, idx);
    }
  }
}

/* The plan's values (initializers, graph inputs, node outputs) with the graph inputs bound:
 * every step of compiling before the nodes. NULL with @error on a malformed graph. */
static Plan *
plan_start (SedpNnModel *model, gint64 batch, const NnCompileOptions *opts,
            gconstpointer const *param_data, GError **error)
{
  Plan *p = g_new0 (Plan, 1);
  p->model = sedp_nn_model_ref (model);
  p->batch = batch;
  p->options = *opts;
  p->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  p->steps = g_array_new (FALSE, TRUE, sizeof (Step));
  guint cap = model->n_inputs + model->n_initializers + 1;
  for (guint i = 0; i < model->n_nodes; i++)
    cap += model->nodes[i].n_outputs + 1; /* + a scratch value (nn_add_scratch) */
  p->values = g_new0 (Value, cap);

  /* Values: initializers, graph inputs, node outputs. */
  for (guint i = 0; i < model->n_initializers; i++) {
    SedpNnTensor *t = model->initializers[i];
    int v = add_value (p, t->name);
    nn_set_shape (&p->values[v], t->dtype, t->rank, t->dims);
    p->values[v].kind = VALUE_CONST;
    p->values[v].data = t->data;
  }
  for (guint i = 0; i < model->n_inputs; i++)
    if (value_index (p, model->inputs[i].name) < 0)
      add_value (p, model->inputs[i].name);
  for (guint i = 0; i < model->n_nodes; i++)
    for (guint k = 0; k < model->nodes[i].n_outputs; k++) {
      const char *o = model->nodes[i].outputs[k];
      if (o[0] == '\0')
        continue;
      if (value_index (p, o) >= 0) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "value '%s' is defined twice (again by node '%s')", o, model->nodes[i].name);
        goto fail;
      }
      add_value (p, o);
    }
  for (guint i = 0; i < model->n_nodes; i++)
    for (guint k = 0; k < model->nodes[i].n_inputs; k++) {
      const char *in = model->nodes[i].inputs[k];
      if (in[0] == '\0')
        continue;
      int v = value_index (p, in);
      if (v < 0) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "node '%s' (%s) reads '%s', which nothing defines", model->nodes[i].name,
                     model->nodes[i].op_type, in);
        goto fail;
      }
      p->values[v].n_consumers++;
    }
  if (!bind_inputs (p, batch, param_data, error))
    goto fail;
  p->n_outputs = model->n_outputs;
  p->output_values = g_new (int, MAX (model->n_outputs, 1));
  for (guint i = 0; i < model->n_outputs; i++) {
    int v = value_index (p, model->outputs[i].name);
    if (v < 0) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "graph output '%s' is not computed by any node", model->outputs[i].name);
      goto fail;
    }
    p->output_values[i] = v;
    p->values[v].is_output = TRUE;
  }
  return p;

fail:
  sedp_nn_plan_free ((SedpNnPlan *) p);
  return NULL;
}

Plan *
nn_plan_compile (SedpNnModel *model, gint64 batch, const NnCompileOptions *opts,
                 gconstpointer const *param_data, GArray *wanted, GError **error)
{
  g_autofree guint *order = NULL;
  Plan *p = plan_start (model, batch, opts, param_data, error);
  if (p == NULL)
    return NULL;
  p->wanted = wanted;
  order = topological_order (p, error);
  if (order == NULL)
    goto fail;

  for (guint t = 0; t < model->n_nodes; t++) {
    const SedpNnNode *node = &model->nodes[order[t]];
    const OpDef *def = nn_op_lookup (node->op_type);
    Step step = {.node = node};
    if (node->n_inputs > def->max_inputs || node->n_inputs < def->min_inputs) {
      nn_node_error (error, SEDP_NN_ERROR_INVALID, node,
                     "has %u inputs; the operator takes %u to %u inputs", node->n_inputs,
                     def->min_inputs, def->max_inputs);
      goto fail;
    }
    if (!check_outputs (node, def, error))
      goto fail;
    for (guint k = 0; k < def->min_inputs; k++)
      if (node->inputs[k][0] == '\0') {
        nn_node_error (error, SEDP_NN_ERROR_INVALID, node, "required input %u is missing", k);
        goto fail;
      }
    step.n_in = node->n_inputs;
    for (guint k = 0; k < node->n_inputs; k++)
      step.in[k] = node->inputs[k][0] ? value_index (p, node->inputs[k]) : -1;
    step.n_out = node->n_outputs;
    for (guint k = 0; k < node->n_outputs; k++)
      step.out[k] = node->outputs[k][0] ? value_index (p, node->outputs[k]) : -1;
    gboolean all_const = TRUE;
    for (guint k = 0; k < step.n_in; k++) {
      if (step.in[k] < 0)
        continue;
      Value *in = &p->values[step.in[k]];
      if (!in->known) {
        nn_node_error (error, SEDP_NN_ERROR_SHAPE, node, "input '%s' has no known shape", in->name);
        goto fail;
      }
      all_const = all_const && nn_alias_root (p, step.in[k]) >= 0 &&
                  p->values[nn_alias_root (p, step.in[k])].kind == VALUE_CONST;
    }
    OpCtx ctx = {p, node, model->opset, &step};
    if (!def->prepare (&ctx, error)) {
      nn_free_step_params (&step);
      goto fail;
    }
    for (guint k = 0; k < step.n_out; k++) {
      const Value *o = step.out[k] >= 0 ? &p->values[step.out[k]] : NULL;
      if (o && !o->known) {
        nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, node, "output %u is not produced", k);
        nn_free_step_params (&step);
        goto fail;
      }
      if (o && o->numel > NN_MAX_ELEMENTS) {
        g_autofree char *shape = sedp_nn_shape_to_string (o->rank, o->dims);
        nn_node_error (error, SEDP_NN_ERROR_SHAPE, node,
                       "output %s would have more than %" G_GINT64_FORMAT " elements", shape,
                       NN_MAX_ELEMENTS);
        nn_free_step_params (&step);
        goto fail;
      }
    }
    /* A view of a constant is a constant. */
    for (guint k = 0; k < step.n_out; k++) {
      Value *o = step.out[k] >= 0 ? &p->values[step.out[k]] : NULL;
      if (o && o->kind == VALUE_ALIAS && p->values[nn_alias_root (p, o->alias_of)].kind == VALUE_CONST) {
        o->data = p->values[nn_alias_root (p, o->alias_of)].data;
        o->kind = VALUE_CONST;
        o->alias_of = -1;
      }
    }
    if (step.fn == NULL) {
      nn_free_step_params (&step);
      continue;
    }
    gboolean small = TRUE;
    for (guint k = 0; k < step.n_out; k++)
      small = small && (step.out[k] < 0 || p->values[step.out[k]].numel <= FOLD_MAX_ELEMENTS);
    if (all_const && (small || def->shape_only)) {
      gboolean ok = fold_step (p, &step, error);
      nn_free_step_params (&step);
      if (!ok)
        goto fail;
      continue;
    }
    if (try_fuse (p, node, &step) || try_embedding_bag (p, node, &step)) {
      nn_free_step_params (&step);
      continue;
    }
    nn_fuse_transpose_into_matmul (p, &step);
    for (guint k = 0; k < step.n_out; k++)
      if (step.out[k] >= 0)
        p->values[step.out[k]].def_step = (int) p->steps->len;
    g_array_append_val (p->steps, step);
  }

  /* Outputs. */
  p->output_info = g_new0 (SedpNnTensor, MAX (p->n_outputs, 1));
  for (guint i = 0; i < p->n_outputs; i++) {
    Value *v = &p->values[p->output_values[i]];
    if (!v->known) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "graph output '%s' is never computed",
                   v->name);
      goto fail;
    }
    SedpNnTensor *t = &p->output_info[i];
    t->name = (char *) v->name;
    t->dtype = v->dtype;
    t->rank = v->rank;
    memcpy (t->dims, v->dims, sizeof t->dims);
  }
  nn_fuse_target_attention (p);
  nn_fuse_self_attention (p);
  nn_pack_weights (p);
  if (!plan_memory (p, error))
    goto fail;
  resolve_pointers (p);
  for (guint s = 0; s < p->steps->len; s++)
    p->flops += g_array_index (p->steps, Step, s).flops;
  p->wanted = NULL;
  return p;

fail:
  sedp_nn_plan_free ((SedpNnPlan *) p);
  return NULL;
}

SedpNnPlan *
sedp_nn_plan_new (SedpNnModel *model, gint64 batch, GError **error)
{
  NnCompileOptions opts;
  nn_compile_options_from_env (&opts);
  return (SedpNnPlan *) nn_plan_new_with_options (model, batch, &opts, error);
}

SedpNnPlan *
sedp_nn_plan_new_on (SedpNnModel *model, gint64 batch, SedpNnDevice *device, GError **error)
{
  if (device == NULL)
    return sedp_nn_plan_new (model, batch, error);
  NnCompileOptions opts;
  nn_compile_options_from_env (&opts);
  opts.no_pack = TRUE;           /* the device never reads OpenBLAS's packed copies */
  opts.lazy_arena = TRUE;        /* only host-run steps touch the CPU arena (opencl.md §4) */
  opts.no_fuse_attention = TRUE; /* attention runs as its parts on the device (opencl.md §3.2) */
  Plan *p = nn_plan_new_with_options (model, batch, &opts, error);
  if (p == NULL)
    return NULL;
  p->device = sedp_nn_device_ref (device);
  if (p->special == NULL && !nn_ocl_plan_lower (p, device, error)) {
    sedp_nn_plan_free ((SedpNnPlan *) p);
    return NULL;
  }
  return (SedpNnPlan *) p;
}

Plan *
nn_plan_new_with_options (SedpNnModel *model, gint64 batch, const NnCompileOptions *opts,
                          GError **error)
{
  g_return_val_if_fail (model != NULL, NULL);
  if (batch < 1 || batch > (1 << 24)) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT, "batch %" G_GINT64_FORMAT
                 " out of range (1 to %d)", batch, 1 << 24);
    return NULL;
  }
  if (!sedp_nn_model_check (model, error))
    return NULL;
  g_autoptr (GArray) wanted = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GError) local = NULL;
  Plan *p = nn_plan_compile (model, batch, opts, NULL, wanted, &local);
  if (p != NULL)
    return p;
  /* A node needed the value of a graph input: a plan specialised on it at run time. */
  if (wanted->len > 0 && (p = plan_start (model, batch, opts, NULL, NULL)) != NULL) {
    g_autoptr (GError) refusal = NULL;
    if (nn_special_attach (p, wanted, &refusal))
      return p;
    sedp_nn_plan_free ((SedpNnPlan *) p);
    g_propagate_error (error, g_steal_pointer (&refusal)); /* names the input, says what to do */
    return NULL;
  }
  g_propagate_error (error, g_steal_pointer (&local));
  return NULL;
}

gboolean
nn_plan_check_inputs (const Plan *p, guint n_inputs, const SedpNnTensor *inputs, GError **error)
{
  if (n_inputs != p->n_inputs) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT, "the model takes %u inputs, got %u",
                 p->n_inputs, n_inputs);
    return FALSE;
  }
  for (guint i = 0; i < n_inputs; i++) {
    const SedpNnTensor *want = &p->input_info[i], *got = &inputs[i];
    gboolean same = got->dtype == want->dtype && got->rank == want->rank && got->data != NULL;
    for (int k = 0; same && k < want->rank; k++)
      same = got->dims[k] == want->dims[k];
    if (!same) {
      g_autofree char *ws = sedp_nn_shape_to_string (want->rank, want->dims);
      g_autofree char *gs = sedp_nn_shape_to_string (got->rank, got->dims);
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT,
                   "input %u ('%s') must be %s %s, got %s %s%s", i, want->name,
                   sedp_nn_dtype_name (want->dtype), ws, sedp_nn_dtype_name (got->dtype), gs,
                   got->data ? "" : " without data");
      return FALSE;
    }
  }
  return TRUE;
}

void
nn_plan_bind_inputs (Plan *p, const SedpNnTensor *inputs)
{
  for (guint i = 0; i < p->n_inputs; i++)
    if (p->values[p->input_values[i]].kind == VALUE_INPUT) /* else a parameter, in the plan */
      p->ptrs[p->input_values[i]] = inputs[i].data;
  for (guint i = 0; i < p->input_aliases->len; i++) {
    int v = g_array_index (p->input_aliases, int, i);
    p->ptrs[v] = p->ptrs[nn_alias_root (p, v)];
  }
}

gboolean
sedp_nn_plan_run (SedpNnPlan *plan, guint n_inputs, const SedpNnTensor *inputs, guint n_outputs,
                  SedpNnTensor *outputs, GError **error)
{
  Plan *p = (Plan *) plan;
  g_return_val_if_fail (p != NULL, FALSE);
  if (p->special)
    return nn_special_run (p, n_inputs, inputs, n_outputs, outputs, error);
  if (!nn_plan_check_inputs (p, n_inputs, inputs, error))
    return FALSE;
  if (p->ocl)
    return nn_ocl_plan_run (p, inputs, n_outputs, outputs, error);
  nn_plan_bind_inputs (p, inputs);
  for (guint s = 0; s < p->steps->len; s++) {
    const Step *st = &g_array_index (p->steps, Step, s);
    if (!st->fn (p, st, p->ptrs, error))
      return FALSE;
  }
  for (guint i = 0; i < MIN (n_outputs, p->n_outputs); i++) {
    outputs[i] = p->output_info[i];
    outputs[i].data = p->ptrs[p->output_values[i]];
    if (outputs[i].data == NULL)
      outputs[i].data = p->ptrs[nn_alias_root (p, p->output_values[i])];
  }
  return TRUE;
}

gint64
sedp_nn_plan_get_batch (const SedpNnPlan *plan)
{
  return ((const Plan *) plan)->batch;
}

guint
sedp_nn_plan_get_n_inputs (const SedpNnPlan *plan)
{
  return ((const Plan *) plan)->n_inputs;
}

const SedpNnTensor *
sedp_nn_plan_get_input (const SedpNnPlan *plan, guint index)
{
  const Plan *p = (const Plan *) plan;
  g_return_val_if_fail (index < p->n_inputs, NULL);
  return &p->input_info[index];
}

guint
sedp_nn_plan_get_n_outputs (const SedpNnPlan *plan)
{
  return ((const Plan *) plan)->n_outputs;
}

const SedpNnTensor *
sedp_nn_plan_get_output (const SedpNnPlan *plan, guint index)
{
  const Plan *p = (const Plan *) plan;
  g_return_val_if_fail (index < p->n_outputs, NULL);
  return &p->output_info[index];
}

double
sedp_nn_plan_get_flops (const SedpNnPlan *plan)
{
  return nn_special_current ((const Plan *) plan)->flops;
}

gsize
sedp_nn_plan_get_arena_size (const SedpNnPlan *plan)
{
  return nn_special_current ((const Plan *) plan)->arena_size;
}

void
sedp_nn_plan_describe (const SedpNnPlan *plan, GString *out)
{
  const Plan *p = nn_special_current ((const Plan *) plan);
  nn_special_describe ((const Plan *) plan, out);
  guint kernels = 0;
  for (guint s = 0; s < p->steps->len; s++)
    kernels += g_array_index (p->steps, Step, s).n_out > 0;
  g_string_append_printf (out, "plan: batch %" G_GINT64_FORMAT ", %u kernels, arena %zu bytes, %.3g FLOPs\n",
                          p->batch, kernels, p->arena_size, p->flops);
  for (guint s = 0; s < p->steps->len; s++) {
    const Step *st = &g_array_index (p->steps, Step, s);
    if (st->n_out == 0)
      continue; /* folded into another kernel */
    guint k = 0;
    while (k + 1 < st->n_out && st->out[k] < 0)
      k++; /* the first output present (optional outputs may be omitted) */
    const Value *o = &p->values[st->out[k]];
    g_autofree char *shape = sedp_nn_shape_to_string (o->rank, o->dims);
    g_string_append_printf (out, "  %3u %-20s %-24s → %s %s\n", s, st->kernel,
                            st->node->name && *st->node->name ? st->node->name : st->node->op_type,
                            o->name, shape);
  }
  if (p->ocl)
    nn_ocl_plan_describe (p, out);
}

SedpNnDevice *
sedp_nn_plan_get_device (const SedpNnPlan *plan)
{
  return ((const Plan *) plan)->device;
}
