/* sedp — the operator table and the helpers prepare functions share. */
#include "ops.h"

#include <stdarg.h>

void
nn_set_shape (Value *v, SedpNnDType dtype, int rank, const gint64 *dims)
{
  v->dtype = dtype;
  v->rank = rank;
  for (int i = 0; i < rank; i++)
    v->dims[i] = dims[i];
  v->numel = nn_numel (rank, dims);
  v->known = TRUE;
}

void
nn_node_error (GError **error, int code, const SedpNnNode *node, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  const char *name = node->name && *node->name ? node->name : "";
  for (guint k = 0; !*name && k < node->n_outputs; k++)
    name = node->outputs[k]; /* unnamed: its first output present */
  g_set_error (error, SEDP_NN_ERROR, code, "node '%s' (%s): %s", name, node->op_type, msg);
}

gint64
nn_attr_int (const SedpNnNode *node, const char *name, gint64 dflt)
{
  const SedpNnAttr *a = sedp_nn_node_attr (node, name);
  return a && a->type == SEDP_NN_ATTR_INT ? a->i : dflt;
}

float
nn_attr_float (const SedpNnNode *node, const char *name, float dflt)
{
  const SedpNnAttr *a = sedp_nn_node_attr (node, name);
  return a && a->type == SEDP_NN_ATTR_FLOAT ? a->f : dflt;
}

/* Adds the graph inputs that value @v is computed from to @wanted (depth-first over the steps
 * made so far; @seen marks visited values). */
static void
collect_inputs (const Plan *p, int v, guint8 *seen, GArray *wanted)
{
  if (v < 0 || seen[v])
    return;
  seen[v] = 1;
  const Value *val = &p->values[v];
  if (val->kind == VALUE_INPUT) {
    guint idx = (guint) val->input_index;
    for (guint i = 0; i < wanted->len; i++)
      if (g_array_index (wanted, guint, i) == idx)
        return;
    g_array_append_val (wanted, idx);
  } else if (val->kind == VALUE_ALIAS) {
    collect_inputs (p, val->alias_of, seen, wanted);
  } else if (val->kind == VALUE_TEMP && val->def_step >= 0) {
    const Step *s = &g_array_index (p->steps, Step, val->def_step);
    for (guint k = 0; k < s->n_in; k++)
      collect_inputs (p, s->in[k], seen, wanted);
  }
}

gboolean
nn_require_const (OpCtx *c, guint k, GError **error)
{
  Value *v = op_in (c, k);
  if (v == NULL || v->kind == VALUE_CONST)
    return TRUE;
  if (c->plan->wanted) {
    g_autofree guint8 *seen = g_new0 (guint8, c->plan->n_values);
    collect_inputs (c->plan, c->step->in[k], seen, c->plan->wanted);
  }
  nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                 "input %u ('%s') must be a constant (computed from initializers and shapes)", k,
                 v->name);
  return FALSE;
}

gboolean
nn_const_ints (OpCtx *c, guint k, gint64 **out, guint *n, GError **error)
{
  Value *v = op_in (c, k);
  if (v == NULL) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "input %u is missing", k);
    return FALSE;
  }
  if (!nn_require_const (c, k, error))
    return FALSE;
  if (v->dtype != SEDP_NN_INT64 && v->dtype != SEDP_NN_INT32) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node, "input %u must be int64 or int32, is %s", k,
                   sedp_nn_dtype_name (v->dtype));
    return FALSE;
  }
  *n = (guint) v->numel;
  *out = g_new (gint64, MAX (*n, 1));
  for (guint i = 0; i < *n; i++)
    (*out)[i] = v->dtype == SEDP_NN_INT64 ? ((gint64 *) v->data)[i] : ((gint32 *) v->data)[i];
  return TRUE;
}

gboolean
nn_check_param_form (OpCtx *c, const char *name, guint input, gint64 input_from, GError **error)
{
  gboolean has_attr = sedp_nn_node_attr (c->node, name) != NULL;
  gboolean has_input = op_in (c, input) != NULL;
  if (c->opset >= input_from && has_attr) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "from opset %" G_GINT64_FORMAT " '%s' is an input, not an attribute (model opset %" G_GINT64_FORMAT ")",
                   input_from, name, c->opset);
    return FALSE;
  }
  if (c->opset < input_from && has_input) {
    nn_node_error (error, SEDP_NN_ERROR_INVALID, c->node,
                   "before opset %" G_GINT64_FORMAT " '%s' is an attribute, not an input (model opset %" G_GINT64_FORMAT ")",
                   input_from, name, c->opset);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_broadcast_shape (int ra, const gint64 *a, int rb, const gint64 *b, int *rank, gint64 *out)
{
  int r = MAX (ra, rb);
  for (int i = 0; i < r; i++) {
    gint64 da = i < r - ra ? 1 : a[i - (r - ra)];
    gint64 db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1)
      return FALSE;
    out[i] = da == 1 ? db : da;
  }
  *rank = r;
  return TRUE;
}

guint
nn_op_row (const char *op_type, const char *const *first, gsize stride, guint n)
{
  guint k = 0;
  while (k + 1 < n && strcmp (*(const char *const *) ((const guint8 *) first + k * stride), op_type) != 0)
    k++;
  return k;
}

void
nn_broadcast_strides (int r, const gint64 *d, int rank, const gint64 *out_dims, gint64 *strides)
{
  gint64 stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    int k = i - (rank - r);
    gint64 dim = k >= 0 ? d[k] : 1;
    strides[i] = (dim == 1 && out_dims[i] != 1) || k < 0 ? 0 : stride;
    if (k >= 0)
      stride *= dim;
  }
}

gboolean
nn_broadcast_values (OpCtx *c, guint n, Value *const *in, int *rank, gint64 *dims, GError **error)
{
  *rank = 0;
  gboolean ok = TRUE;
  for (guint k = 0; k < n && ok; k++) {
    gint64 sofar[SEDP_NN_MAX_RANK];
    memcpy (sofar, dims, (gsize) *rank * sizeof (gint64));
    ok = nn_broadcast_shape (*rank, sofar, in[k]->rank, in[k]->dims, rank, dims);
  }
  if (ok)
    return TRUE;
  g_autoptr (GString) shapes = g_string_new (NULL);
  for (guint k = 0; k < n; k++) {
    g_autofree char *s = sedp_nn_shape_to_string (in[k]->rank, in[k]->dims);
    g_string_append_printf (shapes, "%s%s", k == 0 ? "" : k + 1 < n ? ", " : " and ", s);
  }
  nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "shapes %s do not broadcast", shapes->str);
  return FALSE;
}

void
nn_broadcast_set (Broadcast *b, int rank, const gint64 *dims, guint n, Value *const *in)
{
  g_assert (n <= NN_BCAST_MAX_IN);
  b->rank = rank;
  memcpy (b->dims, dims, (gsize) rank * sizeof (gint64));
  b->numel = nn_numel (rank, dims);
  for (guint k = 0; k < n; k++)
    nn_broadcast_strides (in[k]->rank, in[k]->dims, rank, dims, b->strides[k]);
}

/* The kernel id of a broadcast step computing @op. */
static NnKernelId
broadcast_id (NnElemOp op)
{
  switch (op) {
  case NN_ELEM_ADD: case NN_ELEM_SUB: case NN_ELEM_MUL: case NN_ELEM_DIV:
    return NN_KERNEL_BINARY;
  case NN_ELEM_EQUAL: case NN_ELEM_LESS: case NN_ELEM_GREATER: case NN_ELEM_LESS_OR_EQUAL:
  case NN_ELEM_GREATER_OR_EQUAL:
    return NN_KERNEL_COMPARE;
  case NN_ELEM_AND: case NN_ELEM_OR: case NN_ELEM_XOR:
    return NN_KERNEL_LOGIC;
  case NN_ELEM_FMOD: case NN_ELEM_MOD:
    return NN_KERNEL_MOD;
  case NN_ELEM_POW: case NN_ELEM_POW2: case NN_ELEM_POW_HALF:
    return NN_KERNEL_POW;
  case NN_ELEM_PRELU:
    return NN_KERNEL_PRELU;
  case NN_ELEM_WHERE:
    return NN_KERNEL_WHERE;
  default: /* MAX, MIN: variadic only */
    return NN_KERNEL_UNKNOWN;
  }
}

static gboolean
kernel_broadcast (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const BroadcastParams *p = s->params;
  p->fn (&p->b, ptrs[s->in[0]], ptrs[s->in[1]], s->n_in > 2 ? ptrs[s->in[2]] : NULL,
         ptrs[s->out[0]]);
  return TRUE;
}

gboolean
nn_prepare_broadcast (OpCtx *c, guint n, BroadcastFn fn, SedpNnDType dtype, NnElemOp op,
                      const char *kernel, GError **error)
{
  Value *in[NN_BCAST_MAX_IN] = {NULL};
  for (guint k = 0; k < n; k++)
    in[k] = op_in (c, k);
  BroadcastParams *p = g_new0 (BroadcastParams, 1);
  c->step->params = p;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  if (!nn_broadcast_values (c, n, in, &rank, dims, error))
    return FALSE;
  nn_broadcast_set (&p->b, rank, dims, n, in);
  p->fn = fn;
  p->op = op;
  for (guint k = 0; k < n; k++)
    p->in_dtype[k] = in[k]->dtype;
  p->out_dtype = dtype;
  nn_set_shape (op_out (c, 0), dtype, rank, dims);
  c->step->fn = kernel_broadcast;
  c->step->id = broadcast_id (op);
  c->step->kernel = kernel;
  c->step->flops = (double) p->b.numel;
  return TRUE;
}

static const OpDef op_table[] = {
  {"Gemm", nn_prepare_gemm, FALSE, 2, 3, 7},
  {"MatMul", nn_prepare_matmul, FALSE, 2, 2, 9},
  {"Add", nn_prepare_binary, FALSE, 2, 2, 7},
  {"Sub", nn_prepare_binary, FALSE, 2, 2, 7},
  {"Mul", nn_prepare_binary, FALSE, 2, 2, 7},
  {"Div", nn_prepare_binary, FALSE, 2, 2, 7},
  {"Relu", nn_prepare_unary, FALSE, 1, 1, 6},
  {"LeakyRelu", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Sigmoid", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Tanh", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Clip", nn_prepare_clip, FALSE, 1, 3, 11},
  {"Softmax", nn_prepare_softmax, FALSE, 1, 1, 1},
  {"BatchNormalization", nn_prepare_batchnorm, FALSE, 5, 5, 9},
  {"Cast", nn_prepare_cast, FALSE, 1, 1, 6},
  {"Concat", nn_prepare_concat, FALSE, 1, 256, 4},
  {"Gather", nn_prepare_gather, FALSE, 2, 2, 1},
  {"Reshape", nn_prepare_reshape, TRUE, 2, 2, 5},
  {"Flatten", nn_prepare_flatten, TRUE, 1, 1, 1},
  {"Squeeze", nn_prepare_squeeze, TRUE, 1, 2, 1},
  {"Unsqueeze", nn_prepare_unsqueeze, TRUE, 1, 2, 1},
  {"Identity", nn_prepare_identity, TRUE, 1, 1, 1},
  {"Dropout", nn_prepare_identity, TRUE, 1, 3, 12, 2, 0x2},
  {"Transpose", nn_prepare_transpose, FALSE, 1, 1, 1},
  {"ReduceSum", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceMean", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"Constant", nn_prepare_constant, TRUE, 0, 0, 1},
  {"Shape", nn_prepare_shape_op, TRUE, 1, 1, 1},
  {"Slice", nn_prepare_slice, FALSE, 3, 5, 10},
  {"Expand", nn_prepare_expand, FALSE, 2, 2, 8},
  {"Equal", nn_prepare_compare, FALSE, 2, 2, 7},
  {"Less", nn_prepare_compare, FALSE, 2, 2, 7},
  {"Greater", nn_prepare_compare, FALSE, 2, 2, 7},
  {"LessOrEqual", nn_prepare_compare, FALSE, 2, 2, 12},
  {"GreaterOrEqual", nn_prepare_compare, FALSE, 2, 2, 12},
  {"Not", nn_prepare_not, FALSE, 1, 1, 1},
  {"And", nn_prepare_logic, FALSE, 2, 2, 7},
  {"Or", nn_prepare_logic, FALSE, 2, 2, 7},
  {"Xor", nn_prepare_logic, FALSE, 2, 2, 7},
  {"Where", nn_prepare_where, FALSE, 3, 3, 9},
  {"Exp", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Log", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Sqrt", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Neg", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Abs", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Reciprocal", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Erf", nn_prepare_unary, FALSE, 1, 1, 9},
  {"Floor", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Ceil", nn_prepare_unary, FALSE, 1, 1, 6},
  {"Pow", nn_prepare_pow, FALSE, 2, 2, 7},
  {"Sum", nn_prepare_variadic, FALSE, 1, NN_MAX_IN, 8},
  {"Max", nn_prepare_variadic, FALSE, 1, NN_MAX_IN, 8},
  {"Min", nn_prepare_variadic, FALSE, 1, NN_MAX_IN, 8},
  {"Mean", nn_prepare_variadic, FALSE, 1, NN_MAX_IN, 8},
  {"GRU", nn_prepare_gru, FALSE, 3, 6, 7, 2, 0x3},
  /* normalisation, more reductions, shape operators (ops-norm.c, ops-tensor.c, ops-shape.c) */
  {"LayerNormalization", nn_prepare_layernorm, FALSE, 2, 3, 17, 3, 0x6},
  {"ReduceMax", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceMin", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceProd", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceL2", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceSumSquare", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceLogSumExp", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"Split", nn_prepare_split, FALSE, 1, 2, 2, NN_MAX_OUT, G_MAXUINT64},
  {"Tile", nn_prepare_tile, FALSE, 2, 2, 6},
  {"ConstantOfShape", nn_prepare_constant_of_shape, TRUE, 1, 1, 9},
  {"Range", nn_prepare_range, TRUE, 3, 3, 11},
  /* activations, elementwise functions (ops-act.c, ops-math.c, ops-logic.c) */
  {"PRelu", nn_prepare_prelu, FALSE, 2, 2, 7},
  {"Softplus", nn_prepare_param_act, FALSE, 1, 1, 1},
  {"Softsign", nn_prepare_param_act, FALSE, 1, 1, 1},
  {"Elu", nn_prepare_param_act, FALSE, 1, 1, 6},
  {"Selu", nn_prepare_param_act, FALSE, 1, 1, 6},
  {"Celu", nn_prepare_param_act, FALSE, 1, 1, 12},
  {"HardSigmoid", nn_prepare_param_act, FALSE, 1, 1, 6},
  {"HardSwish", nn_prepare_param_act, FALSE, 1, 1, 14},
  {"ThresholdedRelu", nn_prepare_param_act, FALSE, 1, 1, 10},
  {"Sign", nn_prepare_unary, FALSE, 1, 1, 9},
  {"Sin", nn_prepare_unary, FALSE, 1, 1, 7},
  {"Cos", nn_prepare_unary, FALSE, 1, 1, 7},
  {"Round", nn_prepare_unary, FALSE, 1, 1, 11},
  {"IsNaN", nn_prepare_is, FALSE, 1, 1, 9},
  {"IsInf", nn_prepare_is, FALSE, 1, 1, 10},
  {"Mod", nn_prepare_mod, FALSE, 2, 2, 10},
  {"LogSoftmax", nn_prepare_softmax, FALSE, 1, 1, 1},
  {"Hardmax", nn_prepare_softmax, FALSE, 1, 1, 1},
  {"ReduceL1", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"ReduceLogSum", nn_prepare_reduce, FALSE, 1, 2, 1},
  {"Size", nn_prepare_size, TRUE, 1, 1, 1},
  {"CastLike", nn_prepare_cast, FALSE, 2, 2, 15},
  /* along an axis, with indices (ops-index.c) */
  {"ArgMax", nn_prepare_argmax, FALSE, 1, 1, 1},
  {"ArgMin", nn_prepare_argmax, FALSE, 1, 1, 1},
  {"TopK", nn_prepare_topk, FALSE, 2, 2, 10, 2, 0},
  {"CumSum", nn_prepare_cumsum, FALSE, 2, 2, 11},
  {"GatherElements", nn_prepare_gather_elements, FALSE, 2, 2, 11},
  {"OneHot", nn_prepare_onehot, FALSE, 3, 3, 11},
  {"Trilu", nn_prepare_trilu, FALSE, 1, 2, 14},
  {"Einsum", nn_prepare_einsum, FALSE, 1, NN_MAX_IN, 12},
};

const OpDef *
nn_op_lookup (const char *op_type)
{
  for (guint i = 0; i < G_N_ELEMENTS (op_table); i++)
    if (strcmp (op_table[i].op_type, op_type) == 0)
      return &op_table[i];
  return NULL;
}

char **
sedp_nn_operator_names (void)
{
  char **names = g_new0 (char *, G_N_ELEMENTS (op_table) + 1);
  for (guint i = 0; i < G_N_ELEMENTS (op_table); i++)
    names[i] = g_strdup (op_table[i].op_type);
  return names;
}
