/* sedp — writing ONNX models (ModelProto) and tensors (TensorProto) with protobuf-c.
 *
 * The protobuf-c structs point into the model (names, dims, tensor data); only the structs
 * themselves are allocated, in one list freed after packing. Tensors are written as raw_data
 * (little endian), symbolic dimensions as dim_param. */
#include "model.h"
#include "proto/onnx.pb-c.h"

#include <string.h>

typedef struct {
  GPtrArray *allocs;
} Writer;

static gpointer
w_alloc (Writer *w, gsize size)
{
  gpointer p = g_malloc0 (size);
  g_ptr_array_add (w->allocs, p);
  return p;
}

#define W_NEW(w, T, n) ((T *) w_alloc ((w), sizeof (T) * ((n) ? (n) : 1)))

static Sedp__Onnx__TensorProto *
tensor_to_proto (Writer *w, const SedpNnTensor *t, const char *name)
{
  Sedp__Onnx__TensorProto *tp = W_NEW (w, Sedp__Onnx__TensorProto, 1);
  sedp__onnx__tensor_proto__init (tp);
  tp->n_dims = (size_t) t->rank;
  tp->dims = (int64_t *) t->dims;
  tp->has_data_type = TRUE;
  tp->data_type = (int32_t) t->dtype;
  tp->name = (char *) (name ? name : t->name);
  tp->has_raw_data = TRUE;
  tp->raw_data.len = sedp_nn_tensor_nbytes (t);
  tp->raw_data.data = t->data;
#if G_BYTE_ORDER == G_BIG_ENDIAN
  {
    gsize esize = sedp_nn_dtype_size (t->dtype);
    guint8 *le = w_alloc (w, tp->raw_data.len + 1);
    for (gsize k = 0; k < tp->raw_data.len; k += esize)
      for (gsize b = 0; b < esize; b++)
        le[k + b] = ((const guint8 *) t->data)[k + esize - 1 - b];
    tp->raw_data.data = le;
  }
#endif
  if (tp->raw_data.data == NULL)
    tp->raw_data.len = 0;
  return tp;
}

static Sedp__Onnx__ValueInfoProto *
value_info_to_proto (Writer *w, const SedpNnValueInfo *vi)
{
  Sedp__Onnx__ValueInfoProto *vp = W_NEW (w, Sedp__Onnx__ValueInfoProto, 1);
  sedp__onnx__value_info_proto__init (vp);
  vp->name = vi->name;
  Sedp__Onnx__TypeProto *type = W_NEW (w, Sedp__Onnx__TypeProto, 1);
  sedp__onnx__type_proto__init (type);
  Sedp__Onnx__TypeProto__Tensor *tt = W_NEW (w, Sedp__Onnx__TypeProto__Tensor, 1);
  sedp__onnx__type_proto__tensor__init (tt);
  tt->has_elem_type = TRUE;
  tt->elem_type = (int32_t) vi->dtype;
  if (vi->rank >= 0) {
    Sedp__Onnx__TensorShapeProto *shape = W_NEW (w, Sedp__Onnx__TensorShapeProto, 1);
    sedp__onnx__tensor_shape_proto__init (shape);
    shape->n_dim = (size_t) vi->rank;
    shape->dim = W_NEW (w, Sedp__Onnx__TensorShapeProto__Dimension *, vi->rank);
    for (int k = 0; k < vi->rank; k++) {
      Sedp__Onnx__TensorShapeProto__Dimension *d =
        W_NEW (w, Sedp__Onnx__TensorShapeProto__Dimension, 1);
      sedp__onnx__tensor_shape_proto__dimension__init (d);
      if (vi->dims[k] >= 0) {
        d->value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = vi->dims[k];
      } else if (vi->dim_params[k]) {
        d->value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = vi->dim_params[k];
      }
      shape->dim[k] = d;
    }
    tt->shape = shape;
  }
  type->value_case = SEDP__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type->tensor_type = tt;
  vp->type = type;
  return vp;
}

/* NULL for attributes whose payload the IR does not keep (graphs, …): those are not written. */
static Sedp__Onnx__AttributeProto *
attr_to_proto (Writer *w, const SedpNnAttr *a)
{
  Sedp__Onnx__AttributeProto *ap = W_NEW (w, Sedp__Onnx__AttributeProto, 1);
  sedp__onnx__attribute_proto__init (ap);
  ap->name = a->name;
  ap->has_type = TRUE;
  ap->type = (int32_t) a->type;
  switch (a->type) {
  case SEDP_NN_ATTR_FLOAT:
    ap->has_f = TRUE;
    ap->f = a->f;
    break;
  case SEDP_NN_ATTR_INT:
    ap->has_i = TRUE;
    ap->i = a->i;
    break;
  case SEDP_NN_ATTR_STRING:
    ap->has_s = TRUE;
    ap->s.data = (guint8 *) (a->s ? a->s : "");
    ap->s.len = a->s ? strlen (a->s) : 0;
    break;
  case SEDP_NN_ATTR_TENSOR:
    if (a->t == NULL)
      return NULL;
    ap->t = tensor_to_proto (w, a->t, a->t->name ? a->t->name : "");
    break;
  case SEDP_NN_ATTR_FLOATS:
    ap->n_floats = a->n_floats;
    ap->floats = a->floats;
    break;
  case SEDP_NN_ATTR_INTS:
    ap->n_ints = a->n_ints;
    ap->ints = (int64_t *) a->ints;
    break;
  case SEDP_NN_ATTR_STRINGS:
    ap->n_strings = a->n_strings;
    ap->strings = W_NEW (w, ProtobufCBinaryData, a->n_strings);
    for (guint k = 0; k < a->n_strings; k++) {
      ap->strings[k].data = (guint8 *) a->strings[k];
      ap->strings[k].len = strlen (a->strings[k]);
    }
    break;
  default:
    return NULL;
  }
  return ap;
}

static Sedp__Onnx__NodeProto *
node_to_proto (Writer *w, const SedpNnNode *n)
{
  Sedp__Onnx__NodeProto *np = W_NEW (w, Sedp__Onnx__NodeProto, 1);
  sedp__onnx__node_proto__init (np);
  np->n_input = n->n_inputs;
  np->input = n->inputs;
  np->n_output = n->n_outputs;
  np->output = n->outputs;
  np->name = n->name && *n->name ? n->name : NULL;
  np->op_type = n->op_type;
  np->domain = n->domain && *n->domain ? n->domain : NULL;
  np->attribute = W_NEW (w, Sedp__Onnx__AttributeProto *, n->n_attrs);
  for (guint k = 0; k < n->n_attrs; k++) {
    Sedp__Onnx__AttributeProto *ap = attr_to_proto (w, &n->attrs[k]);
    if (ap)
      np->attribute[np->n_attribute++] = ap;
  }
  return np;
}

static gboolean
write_message (const ProtobufCMessage *msg, const char *path, GError **error)
{
  gsize size = protobuf_c_message_get_packed_size (msg);
  guint8 *buf = g_malloc (size ? size : 1);
  protobuf_c_message_pack (msg, buf);
  g_autoptr (GError) local = NULL;
  gboolean ok = g_file_set_contents (path, (const char *) buf, (gssize) size, &local);
  g_free (buf);
  if (!ok)
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_IO, "%s", local->message);
  return ok;
}

gboolean
sedp_nn_model_save (const SedpNnModel *model, const char *path, GError **error)
{
  g_return_val_if_fail (model != NULL && path != NULL, FALSE);
  Writer w = {g_ptr_array_new_with_free_func (g_free)};

  Sedp__Onnx__ModelProto mp;
  sedp__onnx__model_proto__init (&mp);
  mp.has_ir_version = TRUE;
  mp.ir_version = model->ir_version > 0 ? model->ir_version : 8;
  Sedp__Onnx__OperatorSetIdProto os;
  sedp__onnx__operator_set_id_proto__init (&os);
  os.domain = (char *) "";
  os.has_version = TRUE;
  os.version = model->opset;
  Sedp__Onnx__OperatorSetIdProto *osp = &os;
  mp.n_opset_import = 1;
  mp.opset_import = &osp;
  mp.producer_name = model->producer;

  Sedp__Onnx__GraphProto g;
  sedp__onnx__graph_proto__init (&g);
  g.name = (char *) (model->graph_name && *model->graph_name ? model->graph_name : "sedp");
  g.n_node = model->n_nodes;
  g.node = W_NEW (&w, Sedp__Onnx__NodeProto *, model->n_nodes);
  for (guint k = 0; k < model->n_nodes; k++)
    g.node[k] = node_to_proto (&w, &model->nodes[k]);
  g.n_initializer = model->n_initializers;
  g.initializer = W_NEW (&w, Sedp__Onnx__TensorProto *, model->n_initializers);
  for (guint k = 0; k < model->n_initializers; k++)
    g.initializer[k] = tensor_to_proto (&w, model->initializers[k], NULL);
  g.n_input = model->n_inputs;
  g.input = W_NEW (&w, Sedp__Onnx__ValueInfoProto *, model->n_inputs);
  for (guint k = 0; k < model->n_inputs; k++)
    g.input[k] = value_info_to_proto (&w, &model->inputs[k]);
  g.n_output = model->n_outputs;
  g.output = W_NEW (&w, Sedp__Onnx__ValueInfoProto *, model->n_outputs);
  for (guint k = 0; k < model->n_outputs; k++)
    g.output[k] = value_info_to_proto (&w, &model->outputs[k]);
  mp.graph = &g;

  gboolean ok = write_message (&mp.base, path, error);
  g_ptr_array_unref (w.allocs);
  return ok;
}

gboolean
sedp_nn_tensor_save (const SedpNnTensor *tensor, const char *path, GError **error)
{
  g_return_val_if_fail (tensor != NULL && path != NULL, FALSE);
  Writer w = {g_ptr_array_new_with_free_func (g_free)};
  Sedp__Onnx__TensorProto *tp = tensor_to_proto (&w, tensor, NULL);
  gboolean ok = write_message (&tp->base, path, error);
  g_ptr_array_unref (w.allocs);
  return ok;
}
