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
  g_set_error (error, SEDP_NN_ERROR, code, "node '%s' (%s): %s",
               node->name && *node->name ? node->name : node->outputs[0], node->op_type, msg);
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

gboolean
nn_const_ints (OpCtx *c, guint k, gint64 **out, guint *n, GError **error)
{
  Value *v = op_in (c, k);
  if (v == NULL || v->kind != VALUE_CONST) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "input %u must be a constant (computed from initializers and shapes)", k);
    return FALSE;
  }
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

static const OpDef op_table[] = {
  {"Gemm", nn_prepare_gemm, FALSE, 2, 3},
  {"MatMul", nn_prepare_matmul, FALSE, 2, 2},
  {"Add", nn_prepare_binary, FALSE, 2, 2},
  {"Sub", nn_prepare_binary, FALSE, 2, 2},
  {"Mul", nn_prepare_binary, FALSE, 2, 2},
  {"Div", nn_prepare_binary, FALSE, 2, 2},
  {"Relu", nn_prepare_unary, FALSE, 1, 1},
  {"LeakyRelu", nn_prepare_unary, FALSE, 1, 1},
  {"Sigmoid", nn_prepare_unary, FALSE, 1, 1},
  {"Tanh", nn_prepare_unary, FALSE, 1, 1},
  {"Clip", nn_prepare_clip, FALSE, 1, 3},
  {"Softmax", nn_prepare_softmax, FALSE, 1, 1},
  {"BatchNormalization", nn_prepare_batchnorm, FALSE, 5, 5},
  {"Cast", nn_prepare_cast, FALSE, 1, 1},
  {"Concat", nn_prepare_concat, FALSE, 1, 256},
  {"Gather", nn_prepare_gather, FALSE, 2, 2},
  {"Reshape", nn_prepare_reshape, TRUE, 2, 2},
  {"Flatten", nn_prepare_flatten, TRUE, 1, 1},
  {"Squeeze", nn_prepare_squeeze, TRUE, 1, 2},
  {"Unsqueeze", nn_prepare_unsqueeze, TRUE, 1, 2},
  {"Identity", nn_prepare_identity, TRUE, 1, 1},
  {"Dropout", nn_prepare_identity, TRUE, 1, 3},
  {"Transpose", nn_prepare_transpose, FALSE, 1, 1},
  {"ReduceSum", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceMean", nn_prepare_reduce, FALSE, 1, 2},
  {"Constant", nn_prepare_constant, TRUE, 0, 0},
  {"Shape", nn_prepare_shape_op, TRUE, 1, 1},
  {"Slice", nn_prepare_slice, FALSE, 3, 5},
  {"Expand", nn_prepare_expand, FALSE, 2, 2},
  /* normalisation, more reductions, shape operators (ops-norm.c, ops-tensor.c, ops-shape.c) */
  {"LayerNormalization", nn_prepare_layernorm, FALSE, 2, 3},
  {"ReduceMax", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceMin", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceProd", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceL2", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceSumSquare", nn_prepare_reduce, FALSE, 1, 2},
  {"ReduceLogSumExp", nn_prepare_reduce, FALSE, 1, 2},
  {"Split", nn_prepare_split, FALSE, 1, 2},
  {"Tile", nn_prepare_tile, FALSE, 2, 2},
  {"ConstantOfShape", nn_prepare_constant_of_shape, TRUE, 1, 1},
  {"Range", nn_prepare_range, TRUE, 3, 3},
};

const OpDef *
nn_op_lookup (const char *op_type)
{
  for (guint i = 0; i < G_N_ELEMENTS (op_table); i++)
    if (strcmp (op_table[i].op_type, op_type) == 0)
      return &op_table[i];
  return NULL;
}
