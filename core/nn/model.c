/* sedp — ONNX models in memory: lifetime, lookups and building. */
#include "model.h"

#include <string.h>

G_DEFINE_QUARK (sedp-nn-error-quark, sedp_nn_error)

static void
value_info_clear (SedpNnValueInfo *vi)
{
  g_free (vi->name);
  for (int k = 0; k < SEDP_NN_MAX_RANK; k++)
    g_free (vi->dim_params[k]);
}

static void
attr_clear (SedpNnAttr *a)
{
  g_free (a->name);
  g_free (a->s);
  sedp_nn_tensor_free (a->t);
  g_free (a->floats);
  g_free (a->ints);
  for (guint k = 0; k < a->n_strings; k++)
    g_free (a->strings[k]);
  g_free (a->strings);
  memset (a, 0, sizeof *a);
}

static void
node_clear (SedpNnNode *n)
{
  g_free (n->name);
  g_free (n->op_type);
  g_free (n->domain);
  for (guint k = 0; k < n->n_inputs; k++)
    g_free (n->inputs[k]);
  g_free (n->inputs);
  for (guint k = 0; k < n->n_outputs; k++)
    g_free (n->outputs[k]);
  g_free (n->outputs);
  for (guint k = 0; k < n->n_attrs; k++)
    attr_clear (&n->attrs[k]);
  g_free (n->attrs);
}

static void
model_free (SedpNnModel *model)
{
  g_free (model->producer);
  g_free (model->graph_name);
  for (guint k = 0; k < model->n_inputs; k++)
    value_info_clear (&model->inputs[k]);
  g_free (model->inputs);
  for (guint k = 0; k < model->n_outputs; k++)
    value_info_clear (&model->outputs[k]);
  g_free (model->outputs);
  for (guint k = 0; k < model->n_initializers; k++)
    sedp_nn_tensor_free (model->initializers[k]);
  g_free (model->initializers);
  for (guint k = 0; k < model->n_nodes; k++)
    node_clear (&model->nodes[k]);
  g_free (model->nodes);
  g_free (model);
}

SedpNnModel *
sedp_nn_model_ref (SedpNnModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  g_atomic_int_inc (&model->ref_count);
  return model;
}

void
sedp_nn_model_unref (SedpNnModel *model)
{
  if (model == NULL)
    return;
  if (g_atomic_int_dec_and_test (&model->ref_count))
    model_free (model);
}

SedpNnModel *
sedp_nn_model_new (gint64 opset, const char *producer)
{
  SedpNnModel *model = g_new0 (SedpNnModel, 1);
  model->ref_count = 1;
  model->ir_version = 8;
  model->opset = opset;
  model->producer = g_strdup (producer);
  return model;
}

const SedpNnAttr *
sedp_nn_node_attr (const SedpNnNode *node, const char *name)
{
  for (guint k = 0; k < node->n_attrs; k++)
    if (node->attrs[k].name && strcmp (node->attrs[k].name, name) == 0)
      return &node->attrs[k];
  return NULL;
}

const SedpNnTensor *
sedp_nn_model_get_initializer (const SedpNnModel *model, const char *name)
{
  for (guint k = 0; k < model->n_initializers; k++)
    if (model->initializers[k]->name && strcmp (model->initializers[k]->name, name) == 0)
      return model->initializers[k];
  return NULL;
}

int
sedp_nn_model_find_input (const SedpNnModel *model, const char *name)
{
  for (guint k = 0; k < model->n_inputs; k++)
    if (strcmp (model->inputs[k].name, name) == 0)
      return (int) k;
  return -1;
}

/* Building. */

static void
value_info_init (SedpNnValueInfo *vi, const char *name, SedpNnDType dtype, int rank,
                 const gint64 *dims, const char *const *dim_params)
{
  memset (vi, 0, sizeof *vi);
  vi->name = g_strdup (name);
  vi->dtype = dtype;
  vi->rank = rank;
  for (int k = 0; k < rank; k++) {
    vi->dims[k] = dims[k] < 0 ? -1 : dims[k];
    if (dims[k] < 0 && dim_params && dim_params[k])
      vi->dim_params[k] = g_strdup (dim_params[k]);
  }
}

SedpNnValueInfo *
sedp_nn_model_add_input (SedpNnModel *model, const char *name, SedpNnDType dtype, int rank,
                         const gint64 *dims, const char *const *dim_params)
{
  g_return_val_if_fail (rank >= -1 && rank <= SEDP_NN_MAX_RANK, NULL);
  model->inputs = g_renew (SedpNnValueInfo, model->inputs, model->n_inputs + 1);
  SedpNnValueInfo *vi = &model->inputs[model->n_inputs++];
  value_info_init (vi, name, dtype, rank, dims, dim_params);
  return vi;
}

SedpNnValueInfo *
sedp_nn_model_add_output (SedpNnModel *model, const char *name, SedpNnDType dtype, int rank,
                          const gint64 *dims, const char *const *dim_params)
{
  g_return_val_if_fail (rank >= -1 && rank <= SEDP_NN_MAX_RANK, NULL);
  model->outputs = g_renew (SedpNnValueInfo, model->outputs, model->n_outputs + 1);
  SedpNnValueInfo *vi = &model->outputs[model->n_outputs++];
  value_info_init (vi, name, dtype, rank, dims, dim_params);
  return vi;
}

void
sedp_nn_model_add_initializer (SedpNnModel *model, SedpNnTensor *tensor)
{
  g_return_if_fail (tensor != NULL && tensor->name != NULL && tensor->data != NULL);
  model->initializers = g_renew (SedpNnTensor *, model->initializers, model->n_initializers + 1);
  model->initializers[model->n_initializers++] = tensor;
}

static char **
strv_copy_n (const char *const *v, guint *n)
{
  guint count = v ? g_strv_length ((char **) v) : 0;
  char **out = g_new0 (char *, count + 1);
  for (guint k = 0; k < count; k++)
    out[k] = g_strdup (v[k]);
  *n = count;
  return out;
}

SedpNnNode *
sedp_nn_model_add_node (SedpNnModel *model, const char *op_type, const char *name,
                        const char *const *inputs, const char *const *outputs)
{
  g_return_val_if_fail (op_type != NULL, NULL);
  model->nodes = g_renew (SedpNnNode, model->nodes, model->n_nodes + 1);
  SedpNnNode *n = &model->nodes[model->n_nodes++];
  memset (n, 0, sizeof *n);
  n->op_type = g_strdup (op_type);
  n->name = g_strdup (name);
  n->domain = g_strdup ("");
  n->inputs = strv_copy_n (inputs, &n->n_inputs);
  n->outputs = strv_copy_n (outputs, &n->n_outputs);
  return n;
}

/* The attribute @name of @node, cleared and ready to fill (added if missing). */
static SedpNnAttr *
node_take_attr (SedpNnNode *node, const char *name, SedpNnAttrType type)
{
  SedpNnAttr *a = (SedpNnAttr *) sedp_nn_node_attr (node, name);
  if (a)
    attr_clear (a);
  else {
    node->attrs = g_renew (SedpNnAttr, node->attrs, node->n_attrs + 1);
    a = &node->attrs[node->n_attrs++];
    memset (a, 0, sizeof *a);
  }
  a->name = g_strdup (name);
  a->type = type;
  return a;
}

void
sedp_nn_node_set_attr_int (SedpNnNode *node, const char *name, gint64 value)
{
  node_take_attr (node, name, SEDP_NN_ATTR_INT)->i = value;
}

void
sedp_nn_node_set_attr_float (SedpNnNode *node, const char *name, float value)
{
  node_take_attr (node, name, SEDP_NN_ATTR_FLOAT)->f = value;
}

void
sedp_nn_node_set_attr_string (SedpNnNode *node, const char *name, const char *value)
{
  node_take_attr (node, name, SEDP_NN_ATTR_STRING)->s = g_strdup (value);
}

void
sedp_nn_node_set_attr_ints (SedpNnNode *node, const char *name, guint n, const gint64 *values)
{
  SedpNnAttr *a = node_take_attr (node, name, SEDP_NN_ATTR_INTS);
  a->n_ints = n;
  a->ints = g_memdup2 (values, n * sizeof (gint64));
}

void
sedp_nn_node_set_attr_floats (SedpNnNode *node, const char *name, guint n, const float *values)
{
  SedpNnAttr *a = node_take_attr (node, name, SEDP_NN_ATTR_FLOATS);
  a->n_floats = n;
  a->floats = g_memdup2 (values, n * sizeof (float));
}

void
sedp_nn_node_set_attr_tensor (SedpNnNode *node, const char *name, SedpNnTensor *tensor)
{
  node_take_attr (node, name, SEDP_NN_ATTR_TENSOR)->t = tensor;
}

guint
sedp_nn_model_get_n_inputs (const SedpNnModel *model)
{
  g_return_val_if_fail (model != NULL, 0);
  return model->n_inputs;
}

guint
sedp_nn_model_get_n_outputs (const SedpNnModel *model)
{
  g_return_val_if_fail (model != NULL, 0);
  return model->n_outputs;
}

static gboolean
value_info (const SedpNnValueInfo *vi, SedpNnTensor *info)
{
  memset (info, 0, sizeof *info);
  info->name = vi->name;
  info->dtype = vi->dtype;
  info->rank = vi->rank;
  for (int k = 0; k < vi->rank && k < SEDP_NN_MAX_RANK; k++)
    info->dims[k] = vi->dims[k];
  return TRUE;
}

gboolean
sedp_nn_model_get_input_info (const SedpNnModel *model, guint index, SedpNnTensor *info)
{
  g_return_val_if_fail (model != NULL && info != NULL, FALSE);
  return index < model->n_inputs && value_info (&model->inputs[index], info);
}

gboolean
sedp_nn_model_get_output_info (const SedpNnModel *model, guint index, SedpNnTensor *info)
{
  g_return_val_if_fail (model != NULL && info != NULL, FALSE);
  return index < model->n_outputs && value_info (&model->outputs[index], info);
}

gint64
sedp_nn_model_get_n_parameters (const SedpNnModel *model)
{
  g_return_val_if_fail (model != NULL, 0);
  gint64 n = 0;
  for (guint i = 0; i < model->n_initializers; i++)
    n += sedp_nn_tensor_numel (model->initializers[i]);
  return n;
}
