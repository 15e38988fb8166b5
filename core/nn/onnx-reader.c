/* sedp — reading ONNX models (ModelProto) and tensors (TensorProto) with protobuf-c.
 *
 * Nothing in the file is trusted. Before protobuf-c unpacks anything, one pass over the wire
 * checks that every length fits, that messages nest at most MAX_DEPTH deep (protobuf-c recurses
 * without a limit) and that there are at most MAX_MESSAGES of them (each costs a struct), so
 * what unpacking allocates is bounded by a small multiple of the file size. After unpacking,
 * every tensor's dims must be ≥ 0, their product must not overflow and must match the data
 * exactly; names must be defined once and every node input must be defined somewhere; the graph
 * must be acyclic. */
#include "model.h"
#include "proto/onnx.pb-c.h"
#include "../io/wire.h"

#include <string.h>

#define MAX_DEPTH 64
#define MAX_MESSAGES 1000000
#define MIN_OPSET 1 /* older operator definitions are checked per operator (sedp_nn_model_check) */
#define MIN_IR_VERSION 3

/* The ONNX element type numbers sedp reads data of. */
static gboolean
dtype_supported (gint64 t)
{
  return t == SEDP_NN_FLOAT || t == SEDP_NN_UINT8 || t == SEDP_NN_INT8 || t == SEDP_NN_INT32 ||
         t == SEDP_NN_INT64 || t == SEDP_NN_BOOL || t == SEDP_NN_DOUBLE;
}

/* The wire pass. */

typedef struct {
  const guint8 *base;
  guint n_messages;
  GError **error;
  const char *name;
} Scan;

static gboolean
scan_message (Scan *s, const guint8 *p, gsize len, const ProtobufCMessageDescriptor *desc,
              int depth)
{
  if (depth > MAX_DEPTH) {
    g_set_error (s->error, SEDP_NN_ERROR, SEDP_NN_ERROR_CORRUPT,
                 "%s: messages nested more than %d deep (at byte %zu); not an ONNX model",
                 s->name, MAX_DEPTH, (gsize) (p - s->base));
    return FALSE;
  }
  if (++s->n_messages > MAX_MESSAGES) {
    g_set_error (s->error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: more than %d protobuf messages; sedp does not load models this large",
                 s->name, MAX_MESSAGES);
    return FALSE;
  }
  Wire w = {p, p + len};
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    const guint8 *start = w.p;
    Wire inner;
    if (field > 0x1fffffff)
      goto corrupt;
    if (type != WT_LEN) {
      if (!wire_skip (&w, type)) {
        w.p = start;
        goto corrupt;
      }
      continue;
    }
    if (!wire_len (&w, &inner))
      goto corrupt;
    const ProtobufCFieldDescriptor *f =
      desc ? protobuf_c_message_descriptor_get_field (desc, field) : NULL;
    if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
        !scan_message (s, inner.p, (gsize) (inner.end - inner.p), f->descriptor, depth + 1))
      return FALSE;
  }
  if (!bad)
    return TRUE;

corrupt:
  g_set_error (s->error, SEDP_NN_ERROR, SEDP_NN_ERROR_CORRUPT,
               "%s: truncated or corrupt protobuf (bad field at byte %zu of %zu); not a "
               "complete ONNX file",
               s->name, (gsize) (w.p - s->base), (gsize) (p + len - s->base));
  return FALSE;
}

static ProtobufCMessage *
unpack_checked (const ProtobufCMessageDescriptor *desc, const guint8 *data, gsize size,
                const char *name, const char *what, GError **error)
{
  if (size > G_MAXINT32) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: %zu bytes is more than protobuf's 2 GiB limit", name, size);
    return NULL;
  }
  Scan s = {data, 0, error, name};
  if (!scan_message (&s, data, size, desc, 0))
    return NULL;
  ProtobufCMessage *msg = protobuf_c_message_unpack (desc, NULL, size, data);
  if (msg == NULL)
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_CORRUPT,
                 "%s: not a valid %s (protobuf fields of the wrong wire type or bad data)", name,
                 what);
  return msg;
}

/* Tensors. */

static void
swap_le (guint8 *data, gsize n, gsize esize)
{
#if G_BYTE_ORDER == G_BIG_ENDIAN
  for (gsize k = 0; k < n; k++) {
    guint8 *e = data + k * esize;
    for (gsize a = 0, b = esize - 1; a < b; a++, b--) {
      guint8 t = e[a];
      e[a] = e[b];
      e[b] = t;
    }
  }
#else
  (void) data, (void) n, (void) esize;
#endif
}

/* @what names the tensor in messages ("initializer 'emb_0'"). */
static SedpNnTensor *
tensor_from_proto (const Sedp__Onnx__TensorProto *tp, const char *name, const char *what,
                   GError **error)
{
  if (tp->n_external_data > 0 ||
      (tp->has_data_location &&
       tp->data_location == SEDP__ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: %s keeps its data in an external file; external data is not supported "
                 "(save the model with its weights inside the .onnx file)",
                 name, what);
    return NULL;
  }
  if (tp->segment) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: %s is a segment of a tensor; segmented tensors are not supported", name,
                 what);
    return NULL;
  }
  if (!tp->has_data_type || tp->data_type == 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: %s has no element type",
                 name, what);
    return NULL;
  }
  if (!dtype_supported (tp->data_type)) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: %s has element type %s, which sedp does not support", name, what,
                 sedp_nn_dtype_name ((SedpNnDType) tp->data_type));
    return NULL;
  }
  SedpNnDType dtype = (SedpNnDType) tp->data_type;
  gsize esize = sedp_nn_dtype_size (dtype);
  if (tp->n_dims > SEDP_NN_MAX_RANK) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: %s has rank %zu; sedp handles tensors of rank up to %d", name, what,
                 tp->n_dims, SEDP_NN_MAX_RANK);
    return NULL;
  }
  int rank = (int) tp->n_dims;
  guint64 numel = 1;
  gboolean overflow = FALSE;
  for (int k = 0; k < rank; k++) {
    if (tp->dims[k] < 0) {
      g_autofree char *shape = sedp_nn_shape_to_string (rank, tp->dims);
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: %s has a negative dimension: shape %s", name, what, shape);
      return NULL;
    }
    if (!overflow && __builtin_mul_overflow (numel, (guint64) tp->dims[k], &numel))
      overflow = TRUE;
  }
  if (overflow || numel > (guint64) G_MAXSSIZE / esize) {
    g_autofree char *shape = sedp_nn_shape_to_string (rank, tp->dims);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: %s has shape %s, too large to address", name, what, shape);
    return NULL;
  }
  gsize nbytes = (gsize) numel * esize;

  /* Where the values are and how many there are; checked against the shape before allocating. */
  gsize have = 0;
  const char *field = "raw_data";
  if (tp->has_raw_data) {
    have = tp->raw_data.len;
    if (have != nbytes) {
      g_autofree char *shape = sedp_nn_shape_to_string (rank, tp->dims);
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: %s has %zu bytes of raw_data, but shape %s of %s needs %zu bytes", name,
                   what, have, shape, sedp_nn_dtype_name (dtype), nbytes);
      return NULL;
    }
  } else {
    switch (dtype) {
    case SEDP_NN_FLOAT:
      have = tp->n_float_data, field = "float_data";
      break;
    case SEDP_NN_DOUBLE:
      have = tp->n_double_data, field = "double_data";
      break;
    case SEDP_NN_INT64:
      have = tp->n_int64_data, field = "int64_data";
      break;
    default:
      have = tp->n_int32_data, field = "int32_data";
      break;
    }
    if (have != numel) {
      g_autofree char *shape = sedp_nn_shape_to_string (rank, tp->dims);
      if (have == 0)
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s has no data, but shape %s needs %" G_GUINT64_FORMAT " values", name,
                     what, shape, numel);
      else
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s has %zu values in %s, but shape %s needs %" G_GUINT64_FORMAT, name,
                     what, have, field, shape, numel);
      return NULL;
    }
  }

  SedpNnTensor *t = sedp_nn_tensor_new (tp->name && *tp->name ? tp->name : NULL, dtype, rank,
                                        tp->dims);
  if (nbytes == 0)
    return t;
  if (tp->has_raw_data) {
    memcpy (t->data, tp->raw_data.data, nbytes);
    swap_le (t->data, (gsize) numel, esize);
    return t;
  }
  switch (dtype) {
  case SEDP_NN_FLOAT:
    memcpy (t->data, tp->float_data, nbytes);
    break;
  case SEDP_NN_DOUBLE:
    memcpy (t->data, tp->double_data, nbytes);
    break;
  case SEDP_NN_INT64:
    memcpy (t->data, tp->int64_data, nbytes);
    break;
  case SEDP_NN_INT32:
    memcpy (t->data, tp->int32_data, nbytes);
    break;
  case SEDP_NN_BOOL:
    for (gsize k = 0; k < numel; k++)
      ((guint8 *) t->data)[k] = tp->int32_data[k] != 0;
    break;
  default: /* uint8, int8: one value per int32 */
    for (gsize k = 0; k < numel; k++)
      ((guint8 *) t->data)[k] = (guint8) tp->int32_data[k];
    break;
  }
  return t;
}

/* Graph inputs and outputs. */

static gboolean
value_info_from_proto (const Sedp__Onnx__ValueInfoProto *vp, SedpNnValueInfo *vi,
                       gboolean need_type, const char *name, const char *what, GError **error)
{
  memset (vi, 0, sizeof *vi);
  vi->rank = -1;
  vi->name = g_strdup (vp->name);
  const Sedp__Onnx__TypeProto *type = vp->type;
  if (type == NULL || type->value_case != SEDP__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    if (!need_type && type == NULL)
      return TRUE;
    g_set_error (error, SEDP_NN_ERROR,
                 type ? SEDP_NN_ERROR_UNSUPPORTED : SEDP_NN_ERROR_INVALID,
                 type ? "%s: %s '%s' is not a tensor (sequences, maps and optionals are not "
                        "supported)"
                      : "%s: %s '%s' has no type",
                 name, what, vp->name);
    return FALSE;
  }
  const Sedp__Onnx__TypeProto__Tensor *tt = type->tensor_type;
  vi->dtype = tt->has_elem_type ? (SedpNnDType) tt->elem_type : SEDP_NN_UNDEFINED;
  if (tt->shape == NULL)
    return TRUE;
  if (tt->shape->n_dim > SEDP_NN_MAX_RANK) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: %s '%s' has rank %zu; sedp handles tensors of rank up to %d", name, what,
                 vp->name, tt->shape->n_dim, SEDP_NN_MAX_RANK);
    return FALSE;
  }
  vi->rank = (int) tt->shape->n_dim;
  for (int k = 0; k < vi->rank; k++) {
    const Sedp__Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
    if (d->value_case == SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s '%s' has a negative dimension (%" G_GINT64_FORMAT ")", name, what,
                     vp->name, (gint64) d->dim_value);
        return FALSE;
      }
      vi->dims[k] = d->dim_value;
    } else {
      vi->dims[k] = -1;
      if (d->value_case == SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
          d->dim_param && *d->dim_param)
        vi->dim_params[k] = g_strdup (d->dim_param);
    }
  }
  return TRUE;
}

/* Nodes and attributes. */

static char *
node_label (const Sedp__Onnx__NodeProto *np, gsize index)
{
  const char *op = np->op_type ? np->op_type : "?";
  if (np->name && *np->name)
    return g_strdup_printf ("node '%s' (%s)", np->name, op);
  return g_strdup_printf ("node #%zu (%s)", index, op);
}

static int
attr_type_of (const Sedp__Onnx__AttributeProto *ap)
{
  if (ap->has_type && ap->type != 0)
    return ap->type;
  /* Old files without the type: infer it from what is set. */
  if (ap->has_f)
    return SEDP_NN_ATTR_FLOAT;
  if (ap->has_i)
    return SEDP_NN_ATTR_INT;
  if (ap->has_s)
    return SEDP_NN_ATTR_STRING;
  if (ap->t)
    return SEDP_NN_ATTR_TENSOR;
  if (ap->g)
    return 5;
  if (ap->n_floats)
    return SEDP_NN_ATTR_FLOATS;
  if (ap->n_ints)
    return SEDP_NN_ATTR_INTS;
  if (ap->n_strings)
    return SEDP_NN_ATTR_STRINGS;
  return 0;
}

static gboolean
attr_from_proto (const Sedp__Onnx__AttributeProto *ap, SedpNnAttr *a, const char *name,
                 const char *node, GError **error)
{
  memset (a, 0, sizeof *a);
  if (ap->name == NULL || *ap->name == '\0') {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: %s has an attribute without "
                 "a name", name, node);
    return FALSE;
  }
  a->name = g_strdup (ap->name);
  int type = attr_type_of (ap);
  a->type = (SedpNnAttrType) type;
  switch (type) {
  case SEDP_NN_ATTR_FLOAT:
    a->f = ap->f;
    break;
  case SEDP_NN_ATTR_INT:
    a->i = ap->i;
    break;
  case SEDP_NN_ATTR_STRING:
    a->s = g_strndup ((const char *) ap->s.data, ap->s.len);
    break;
  case SEDP_NN_ATTR_TENSOR: {
    if (ap->t == NULL) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: attribute '%s' of %s is a tensor attribute without a tensor", name,
                   ap->name, node);
      return FALSE;
    }
    g_autofree char *what = g_strdup_printf ("attribute '%s' of %s", ap->name, node);
    a->t = tensor_from_proto (ap->t, name, what, error);
    if (a->t == NULL)
      return FALSE;
    break;
  }
  case SEDP_NN_ATTR_FLOATS:
    if (ap->n_floats > G_MAXUINT)
      goto too_many;
    a->n_floats = (guint) ap->n_floats;
    a->floats = g_memdup2 (ap->floats, ap->n_floats * sizeof (float));
    break;
  case SEDP_NN_ATTR_INTS:
    if (ap->n_ints > G_MAXUINT)
      goto too_many;
    a->n_ints = (guint) ap->n_ints;
    a->ints = g_memdup2 (ap->ints, ap->n_ints * sizeof (gint64));
    break;
  case SEDP_NN_ATTR_STRINGS:
    if (ap->n_strings > G_MAXUINT)
      goto too_many;
    a->strings = g_new0 (char *, ap->n_strings + 1);
    for (gsize k = 0; k < ap->n_strings; k++)
      a->strings[k] = g_strndup ((const char *) ap->strings[k].data, ap->strings[k].len);
    a->n_strings = (guint) ap->n_strings;
    break;
  case 5:  /* GRAPH */
  case 9:  /* TENSORS */
  case 10: /* GRAPHS */
  case 11: /* SPARSE_TENSOR */
  case 12: /* SPARSE_TENSORS */
  case 13: /* TYPE_PROTO */
  case 14: /* TYPE_PROTOS */
    /* Kept with their ONNX type number and no payload: no operator sedp runs takes them, and the
     * operator check reports the node. */
    break;
  default:
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: attribute '%s' of %s has an unknown type (%d)", name, ap->name, node, type);
    return FALSE;
  }
  return TRUE;

too_many:
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
               "%s: attribute '%s' of %s has too many values", name, ap->name, node);
  return FALSE;
}

static char **
strv_from_proto (char **v, gsize n)
{
  char **out = g_new0 (char *, n + 1);
  for (gsize k = 0; k < n; k++)
    out[k] = g_strdup (v[k] ? v[k] : "");
  return out;
}

static gboolean
node_from_proto (const Sedp__Onnx__NodeProto *np, gsize index, SedpNnNode *n, const char *name,
                 GError **error)
{
  memset (n, 0, sizeof *n);
  g_autofree char *label = node_label (np, index);
  if (np->op_type == NULL || *np->op_type == '\0') {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: %s has no op_type", name,
                 label);
    return FALSE;
  }
  if (np->n_input > G_MAXUINT || np->n_output > G_MAXUINT || np->n_attribute > G_MAXUINT) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: %s is too large", name, label);
    return FALSE;
  }
  n->name = g_strdup (np->name ? np->name : "");
  n->op_type = g_strdup (np->op_type);
  const char *domain = np->domain ? np->domain : "";
  n->domain = g_strdup (strcmp (domain, "ai.onnx") == 0 ? "" : domain);
  n->inputs = strv_from_proto (np->input, np->n_input);
  n->n_inputs = (guint) np->n_input;
  n->outputs = strv_from_proto (np->output, np->n_output);
  n->n_outputs = (guint) np->n_output;
  n->attrs = g_new0 (SedpNnAttr, np->n_attribute ? np->n_attribute : 1);
  for (gsize k = 0; k < np->n_attribute; k++) {
    for (gsize j = 0; j < k; j++)
      if (np->attribute[k]->name && np->attribute[j]->name &&
          strcmp (np->attribute[k]->name, np->attribute[j]->name) == 0) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s has attribute '%s' twice", name, label, np->attribute[k]->name);
        return FALSE;
      }
    /* Counted before filling, so that the model's free clears a half-filled attribute too. */
    n->n_attrs = (guint) k + 1;
    if (!attr_from_proto (np->attribute[k], &n->attrs[k], name, label, error))
      return FALSE;
  }
  return TRUE;
}

/* Names: who defines each value. */

enum { DEF_INITIALIZER = 1, DEF_INPUT = 2, DEF_NODE = 3 /* + node index */ };

static char *
definer_label (const Sedp__Onnx__GraphProto *g, gsize def)
{
  if (def == DEF_INITIALIZER)
    return g_strdup ("an initializer");
  if (def == DEF_INPUT)
    return g_strdup ("a graph input");
  return node_label (g->node[def - DEF_NODE], def - DEF_NODE);
}

static gboolean
check_graph (const Sedp__Onnx__GraphProto *g, GHashTable *defs, const char *name, GError **error)
{
  /* Node outputs: each name defined once. */
  for (gsize i = 0; i < g->n_node; i++) {
    const Sedp__Onnx__NodeProto *np = g->node[i];
    for (gsize k = 0; k < np->n_output; k++) {
      const char *out = np->output[k];
      if (out == NULL || *out == '\0')
        continue; /* an omitted optional output */
      gpointer prev = g_hash_table_lookup (defs, out);
      if (prev) {
        g_autofree char *label = node_label (np, i);
        g_autofree char *other = definer_label (g, GPOINTER_TO_SIZE (prev));
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s defines '%s', which %s already defines", name, label, out, other);
        return FALSE;
      }
      g_hash_table_insert (defs, (gpointer) out, GSIZE_TO_POINTER (DEF_NODE + i));
    }
  }
  /* Node inputs: each defined somewhere. Edges for the cycle check: consumers of each node. */
  g_autofree guint *indegree = g_new0 (guint, g->n_node + 1);
  g_autoptr (GPtrArray) consumers = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (gsize i = 0; i < g->n_node; i++)
    g_ptr_array_add (consumers, g_array_new (FALSE, FALSE, sizeof (gsize)));
  for (gsize i = 0; i < g->n_node; i++) {
    const Sedp__Onnx__NodeProto *np = g->node[i];
    for (gsize k = 0; k < np->n_input; k++) {
      const char *in = np->input[k];
      if (in == NULL || *in == '\0')
        continue; /* an omitted optional input */
      gsize def = GPOINTER_TO_SIZE (g_hash_table_lookup (defs, in));
      if (def == 0) {
        g_autofree char *label = node_label (np, i);
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: %s reads '%s', which no initializer, graph input or node defines",
                     name, label, in);
        return FALSE;
      }
      if (def >= DEF_NODE) {
        g_array_append_val (g_ptr_array_index (consumers, def - DEF_NODE), i);
        indegree[i]++;
      }
    }
  }
  /* Kahn's algorithm: every node must become ready. */
  g_autofree gsize *queue = g_new (gsize, g->n_node + 1);
  gsize head = 0, tail = 0;
  for (gsize i = 0; i < g->n_node; i++)
    if (indegree[i] == 0)
      queue[tail++] = i;
  while (head < tail) {
    GArray *cons = g_ptr_array_index (consumers, queue[head++]);
    for (guint k = 0; k < cons->len; k++) {
      gsize j = g_array_index (cons, gsize, k);
      if (--indegree[j] == 0)
        queue[tail++] = j;
    }
  }
  if (tail < g->n_node) {
    for (gsize i = 0; i < g->n_node; i++)
      if (indegree[i] > 0) {
        g_autofree char *label = node_label (g->node[i], i);
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: the graph has a cycle (through %s)", name, label);
        return FALSE;
      }
  }
  /* Graph outputs: defined, once each. */
  for (gsize k = 0; k < g->n_output; k++) {
    const char *out = g->output[k]->name;
    if (out == NULL || *out == '\0') {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: graph output #%zu has no name",
                   name, k);
      return FALSE;
    }
    if (!g_hash_table_contains (defs, out)) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: graph output '%s' is not defined by any node, initializer or input", name,
                   out);
      return FALSE;
    }
    for (gsize j = 0; j < k; j++)
      if (g->output[j]->name && strcmp (g->output[j]->name, out) == 0) {
        g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                     "%s: graph output '%s' is listed twice", name, out);
        return FALSE;
      }
  }
  return TRUE;
}

static gboolean
model_from_proto (SedpNnModel *model, const Sedp__Onnx__ModelProto *mp, const char *name,
                  GError **error)
{
  if (!mp->has_ir_version) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: no ONNX IR version; not an ONNX model", name);
    return FALSE;
  }
  if (mp->ir_version < MIN_IR_VERSION) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: ONNX IR version %" G_GINT64_FORMAT
                 " is not supported (sedp reads IR version %d and later)",
                 name, (gint64) mp->ir_version, MIN_IR_VERSION);
    return FALSE;
  }
  model->ir_version = mp->ir_version;
  gboolean have_opset = FALSE;
  for (gsize k = 0; k < mp->n_opset_import; k++) {
    const Sedp__Onnx__OperatorSetIdProto *os = mp->opset_import[k];
    const char *domain = os->domain ? os->domain : "";
    if ((*domain == '\0' || strcmp (domain, "ai.onnx") == 0) && !have_opset) {
      model->opset = os->has_version ? os->version : 0;
      have_opset = TRUE;
    }
  }
  if (!have_opset) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: no opset_import for the default ONNX domain", name);
    return FALSE;
  }
  if (model->opset < MIN_OPSET) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                 "%s: opset %" G_GINT64_FORMAT " is not an ONNX opset (they start at %d)",
                 name, model->opset, MIN_OPSET);
    return FALSE;
  }
  if (mp->producer_name && *mp->producer_name)
    model->producer = mp->producer_version && *mp->producer_version
                        ? g_strdup_printf ("%s %s", mp->producer_name, mp->producer_version)
                        : g_strdup (mp->producer_name);
  const Sedp__Onnx__GraphProto *g = mp->graph;
  if (g == NULL) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: the model has no graph", name);
    return FALSE;
  }
  model->graph_name = g_strdup (g->name);
  if (g->n_node == 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: the graph has no nodes", name);
    return FALSE;
  }
  if (g->n_output == 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: the graph has no outputs",
                 name);
    return FALSE;
  }
  if (g->n_sparse_initializer > 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                 "%s: sparse initializers are not supported", name);
    return FALSE;
  }
  if (g->n_node > G_MAXUINT || g->n_initializer > G_MAXUINT || g->n_input > G_MAXUINT ||
      g->n_output > G_MAXUINT) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: the graph is too large", name);
    return FALSE;
  }

  /* Value name → definer; keys point into @mp. */
  g_autoptr (GHashTable) defs = g_hash_table_new (g_str_hash, g_str_equal);

  model->initializers = g_new0 (SedpNnTensor *, g->n_initializer + 1);
  for (gsize k = 0; k < g->n_initializer; k++) {
    const Sedp__Onnx__TensorProto *tp = g->initializer[k];
    if (tp->name == NULL || *tp->name == '\0') {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: initializer #%zu has no name",
                   name, k);
      return FALSE;
    }
    if (g_hash_table_contains (defs, tp->name)) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: initializer '%s' is defined twice", name, tp->name);
      return FALSE;
    }
    g_autofree char *what = g_strdup_printf ("initializer '%s'", tp->name);
    SedpNnTensor *t = tensor_from_proto (tp, name, what, error);
    if (t == NULL)
      return FALSE;
    model->initializers[model->n_initializers++] = t;
    g_hash_table_insert (defs, tp->name, GSIZE_TO_POINTER (DEF_INITIALIZER));
  }

  /* Graph inputs, less the initializers (files of IR < 4 list those as inputs too). */
  model->inputs = g_new0 (SedpNnValueInfo, g->n_input + 1);
  for (gsize k = 0; k < g->n_input; k++) {
    const Sedp__Onnx__ValueInfoProto *vp = g->input[k];
    if (vp->name == NULL || *vp->name == '\0') {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID, "%s: graph input #%zu has no name",
                   name, k);
      return FALSE;
    }
    gsize prev = GPOINTER_TO_SIZE (g_hash_table_lookup (defs, vp->name));
    if (prev == DEF_INITIALIZER)
      continue;
    if (prev == DEF_INPUT) {
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INVALID,
                   "%s: graph input '%s' is listed twice", name, vp->name);
      return FALSE;
    }
    SedpNnValueInfo *vi = &model->inputs[model->n_inputs++];
    if (!value_info_from_proto (vp, vi, TRUE, name, "graph input", error))
      return FALSE;
    g_hash_table_insert (defs, vp->name, GSIZE_TO_POINTER (DEF_INPUT));
  }

  if (!check_graph (g, defs, name, error))
    return FALSE;

  model->outputs = g_new0 (SedpNnValueInfo, g->n_output);
  for (gsize k = 0; k < g->n_output; k++) {
    SedpNnValueInfo *vi = &model->outputs[model->n_outputs++];
    if (!value_info_from_proto (g->output[k], vi, FALSE, name, "graph output", error))
      return FALSE;
  }

  model->nodes = g_new0 (SedpNnNode, g->n_node);
  for (gsize k = 0; k < g->n_node; k++) {
    model->n_nodes++;
    if (!node_from_proto (g->node[k], k, &model->nodes[k], name, error))
      return FALSE;
  }
  return TRUE;
}

SedpNnModel *
sedp_nn_model_load_data (const guint8 *data, gsize size, const char *name, GError **error)
{
  if (name == NULL)
    name = "model";
  if (size == 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_CORRUPT, "%s: empty file; not an ONNX model",
                 name);
    return NULL;
  }
  Sedp__Onnx__ModelProto *mp = (Sedp__Onnx__ModelProto *) unpack_checked (
    &sedp__onnx__model_proto__descriptor, data, size, name, "ONNX model", error);
  if (mp == NULL)
    return NULL;
  SedpNnModel *model = sedp_nn_model_new (0, NULL);
  model->ir_version = 0;
  gboolean ok = model_from_proto (model, mp, name, error);
  sedp__onnx__model_proto__free_unpacked (mp, NULL);
  if (!ok) {
    sedp_nn_model_unref (model);
    return NULL;
  }
  return model;
}

static GMappedFile *
map_file (const char *path, GError **error)
{
  g_autoptr (GError) local = NULL;
  GMappedFile *mf = g_mapped_file_new (path, FALSE, &local);
  if (mf == NULL)
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_IO, "%s", local->message);
  return mf;
}

SedpNnModel *
sedp_nn_model_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  GMappedFile *mf = map_file (path, error);
  if (mf == NULL)
    return NULL;
  SedpNnModel *model = sedp_nn_model_load_data ((const guint8 *) g_mapped_file_get_contents (mf),
                                                g_mapped_file_get_length (mf), path, error);
  g_mapped_file_unref (mf);
  return model;
}

SedpNnTensor *
sedp_nn_tensor_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  GMappedFile *mf = map_file (path, error);
  if (mf == NULL)
    return NULL;
  /* An empty file is a valid, empty TensorProto: the reader reports "no element type". */
  Sedp__Onnx__TensorProto *tp = (Sedp__Onnx__TensorProto *) unpack_checked (
    &sedp__onnx__tensor_proto__descriptor, (const guint8 *) g_mapped_file_get_contents (mf),
    g_mapped_file_get_length (mf), path, "TensorProto", error);
  SedpNnTensor *t = NULL;
  if (tp) {
    g_autofree char *what = tp->name && *tp->name ? g_strdup_printf ("tensor '%s'", tp->name)
                                                  : g_strdup ("the tensor");
    t = tensor_from_proto (tp, path, what, error);
    sedp__onnx__tensor_proto__free_unpacked (tp, NULL);
  }
  g_mapped_file_unref (mf);
  return t;
}
