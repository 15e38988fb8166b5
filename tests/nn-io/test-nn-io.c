/* sedp tests — ONNX files: the reader against malformed models (crafted here with protobuf-c and
 * written to a fixtures folder under the build directory), truncation and bit-flip robustness,
 * the writer (save → load round trips of every synthetic architecture, TensorProto files), the
 * synthetic models themselves, and the `sedp model` commands. */
#include "test-spawn.h"

#include "nn/model.h"
#include "nn/plan.h"
#include "nn/synth.h"
#include "proto/onnx.pb-c.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *fixtures; /* build/tests/nn-io/fixtures */
static char *tmpdir;   /* a scratch folder, removed at the end */

static char *
fixture_path (const char *name)
{
  return g_build_filename (fixtures, name, NULL);
}

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static guint8 *
read_file (const char *path, gsize *size)
{
  char *data = NULL;
  g_autoptr (GError) error = NULL;
  gboolean ok = g_file_get_contents (path, &data, size, &error);
  if (!ok)
    fprintf (stderr, "\n  cannot read %s: %s\n", path, error->message);
  CU_ASSERT_FATAL (ok);
  return (guint8 *) data;
}

/* ---- IR comparison ---- */

static gboolean
tensors_equal (const SedpNnTensor *a, const SedpNnTensor *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  if (a->dtype != b->dtype || a->rank != b->rank)
    return FALSE;
  if (g_strcmp0 (a->name, b->name) != 0)
    return FALSE;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return FALSE;
  return memcmp (a->data, b->data, sedp_nn_tensor_nbytes (a)) == 0;
}

static void
assert_value_infos_equal (const SedpNnValueInfo *a, const SedpNnValueInfo *b)
{
  CU_ASSERT_STRING_EQUAL (a->name, b->name);
  CU_ASSERT_EQUAL (a->dtype, b->dtype);
  CU_ASSERT_EQUAL_FATAL (a->rank, b->rank);
  for (int k = 0; k < a->rank; k++) {
    CU_ASSERT_EQUAL (a->dims[k], b->dims[k]);
    CU_ASSERT_EQUAL (g_strcmp0 (a->dim_params[k], b->dim_params[k]), 0);
  }
}

static void
assert_attrs_equal (const SedpNnAttr *a, const SedpNnAttr *b)
{
  CU_ASSERT_STRING_EQUAL (a->name, b->name);
  CU_ASSERT_EQUAL_FATAL (a->type, b->type);
  switch (a->type) {
  case SEDP_NN_ATTR_FLOAT:
    CU_ASSERT_EQUAL (a->f, b->f);
    break;
  case SEDP_NN_ATTR_INT:
    CU_ASSERT_EQUAL (a->i, b->i);
    break;
  case SEDP_NN_ATTR_STRING:
    CU_ASSERT_STRING_EQUAL (a->s, b->s);
    break;
  case SEDP_NN_ATTR_TENSOR:
    /* Constant tensors are unnamed; the reader keeps them unnamed. */
    CU_ASSERT (tensors_equal (a->t, b->t));
    break;
  case SEDP_NN_ATTR_INTS:
    CU_ASSERT_EQUAL_FATAL (a->n_ints, b->n_ints);
    CU_ASSERT (memcmp (a->ints, b->ints, a->n_ints * sizeof (gint64)) == 0);
    break;
  case SEDP_NN_ATTR_FLOATS:
    CU_ASSERT_EQUAL_FATAL (a->n_floats, b->n_floats);
    CU_ASSERT (memcmp (a->floats, b->floats, a->n_floats * sizeof (float)) == 0);
    break;
  default:
    CU_FAIL ("unexpected attribute type");
  }
}

static void
assert_models_equal (const SedpNnModel *a, const SedpNnModel *b)
{
  CU_ASSERT_EQUAL (a->ir_version, b->ir_version);
  CU_ASSERT_EQUAL (a->opset, b->opset);
  CU_ASSERT_EQUAL (g_strcmp0 (a->producer, b->producer), 0);
  CU_ASSERT_EQUAL (g_strcmp0 (a->graph_name, b->graph_name), 0);
  CU_ASSERT_EQUAL_FATAL (a->n_inputs, b->n_inputs);
  for (guint k = 0; k < a->n_inputs; k++)
    assert_value_infos_equal (&a->inputs[k], &b->inputs[k]);
  CU_ASSERT_EQUAL_FATAL (a->n_outputs, b->n_outputs);
  for (guint k = 0; k < a->n_outputs; k++)
    assert_value_infos_equal (&a->outputs[k], &b->outputs[k]);
  CU_ASSERT_EQUAL_FATAL (a->n_initializers, b->n_initializers);
  for (guint k = 0; k < a->n_initializers; k++)
    CU_ASSERT (tensors_equal (a->initializers[k], b->initializers[k]));
  CU_ASSERT_EQUAL_FATAL (a->n_nodes, b->n_nodes);
  for (guint k = 0; k < a->n_nodes; k++) {
    const SedpNnNode *x = &a->nodes[k], *y = &b->nodes[k];
    CU_ASSERT_STRING_EQUAL (x->name, y->name);
    CU_ASSERT_STRING_EQUAL (x->op_type, y->op_type);
    CU_ASSERT_STRING_EQUAL (x->domain, y->domain);
    CU_ASSERT_EQUAL_FATAL (x->n_inputs, y->n_inputs);
    for (guint i = 0; i < x->n_inputs; i++)
      CU_ASSERT_STRING_EQUAL (x->inputs[i], y->inputs[i]);
    CU_ASSERT_EQUAL_FATAL (x->n_outputs, y->n_outputs);
    for (guint i = 0; i < x->n_outputs; i++)
      CU_ASSERT_STRING_EQUAL (x->outputs[i], y->outputs[i]);
    CU_ASSERT_EQUAL_FATAL (x->n_attrs, y->n_attrs);
    for (guint i = 0; i < x->n_attrs; i++)
      assert_attrs_equal (&x->attrs[i], &y->attrs[i]);
  }
}

/* ---- synthetic models: round trips ---- */

static void
test_synth_round_trip (void)
{
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (*arch, 7, NULL, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    g_autofree char *name = g_strdup_printf ("%s.onnx", *arch);
    g_autofree char *path = tmp_path (name);
    CU_ASSERT_FATAL (sedp_nn_model_save (m, path, &error));
    g_autoptr (SedpNnModel) back = sedp_nn_model_load (path, &error);
    if (back == NULL)
      fprintf (stderr, "\n  %s: %s\n", *arch, error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL (back);
    assert_models_equal (m, back);
    /* Saving what was loaded writes the same bytes. */
    g_autofree char *name2 = g_strdup_printf ("%s-again.onnx", *arch);
    g_autofree char *path2 = tmp_path (name2);
    CU_ASSERT_FATAL (sedp_nn_model_save (back, path2, &error));
    gsize n1, n2;
    g_autofree guint8 *b1 = read_file (path, &n1);
    g_autofree guint8 *b2 = read_file (path2, &n2);
    CU_ASSERT_EQUAL (n1, n2);
    CU_ASSERT (n1 == n2 && memcmp (b1, b2, n1) == 0);
    /* In memory too. */
    g_autoptr (SedpNnModel) mem = sedp_nn_model_load_data (b1, n1, "mem", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (mem);
    assert_models_equal (m, mem);
  }
}

/* The shape of what synth writes: inputs, outputs, the ops every architecture must contain. */
static void
test_synth_shape (void)
{
  static const struct {
    const char *arch;
    const char *outputs[3];
    const char *ops[12];
  } cases[] = {
    {"mlp", {"prob"}, {"BatchNormalization", "Slice", "Gemm", "MatMul", "ReduceMean", "Reshape",
                       "Shape", "Unsqueeze", "Clip", "Sigmoid", "Constant"}},
    {"dlrm", {"prob"}, {"Transpose", "MatMul", "Flatten", "Gather", "Reshape", "Gemm", "Sigmoid"}},
    {"dcn", {"prob"}, {"MatMul", "Mul", "Add", "Tanh", "Identity", "Gemm", "Sigmoid"}},
    {"deepfm", {"prob"}, {"Squeeze", "Unsqueeze", "Sub", "Div", "Mul", "Flatten", "Sigmoid"}},
    {"mmoe", {"ctr", "cvr"}, {"Softmax", "Expand", "Cast", "Div", "LeakyRelu", "MatMul",
                              "Squeeze", "Sigmoid"}},
  };
  SedpNnSynthOptions o;
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", NULL));
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (cases[c].arch, 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    CU_ASSERT_EQUAL (m->opset, 17);
    CU_ASSERT_EQUAL_FATAL (m->n_inputs, 1 + o.slots);
    CU_ASSERT_STRING_EQUAL (m->inputs[0].name, "dense");
    CU_ASSERT_EQUAL (m->inputs[0].dtype, SEDP_NN_FLOAT);
    CU_ASSERT_EQUAL (m->inputs[0].dims[0], -1);
    CU_ASSERT_STRING_EQUAL (m->inputs[0].dim_params[0], "batch");
    CU_ASSERT_EQUAL (m->inputs[0].dims[1], o.n_dense);
    for (guint k = 0; k < o.slots; k++) {
      g_autofree char *slot = g_strdup_printf ("slot_%u", k);
      g_autofree char *emb = g_strdup_printf ("emb_%u", k);
      CU_ASSERT_STRING_EQUAL (m->inputs[1 + k].name, slot);
      CU_ASSERT_EQUAL (m->inputs[1 + k].dtype, SEDP_NN_INT64);
      CU_ASSERT_EQUAL (m->inputs[1 + k].dims[1], o.ids_per_slot);
      const SedpNnTensor *t = sedp_nn_model_get_initializer (m, emb);
      CU_ASSERT_PTR_NOT_NULL_FATAL (t);
      CU_ASSERT_EQUAL (t->dims[0], o.rows);
      CU_ASSERT_EQUAL (t->dims[1], o.dim);
    }
    guint n_out = 0;
    while (n_out < 3 && cases[c].outputs[n_out])
      n_out++;
    CU_ASSERT_EQUAL_FATAL (m->n_outputs, n_out);
    for (guint k = 0; k < n_out; k++)
      CU_ASSERT_STRING_EQUAL (m->outputs[k].name, cases[c].outputs[k]);
    for (guint k = 0; cases[c].ops[k]; k++) {
      gboolean found = FALSE;
      for (guint i = 0; i < m->n_nodes && !found; i++)
        found = strcmp (m->nodes[i].op_type, cases[c].ops[k]) == 0;
      if (!found)
        fprintf (stderr, "\n  %s has no %s\n", cases[c].arch, cases[c].ops[k]);
      CU_ASSERT (found);
    }
    /* The executor accepts it. */
    CU_ASSERT (sedp_nn_model_check (m, &error));
  }
}

static gboolean
is_seq (const char *arch)
{
  return strcmp (arch, "din") == 0 || strcmp (arch, "dien") == 0 || strcmp (arch, "bst") == 0;
}

/* The sequence models: the input contract (item, hist, emb_item with a zero row 0, the mask
 * computed from hist), the operators of each, older opsets, the same bytes for the same seed. */
static void
test_synth_seq_shape (void)
{
  static const struct {
    const char *arch;
    const char *ops[14];
  } cases[] = {
    {"din", {"Expand", "Sub", "Mul", "Concat", "MatMul", "Sigmoid", "Transpose", "Where",
             "Softmax", "Squeeze", "Gemm", "Relu"}},
    {"dien", {"GRU", "Not", "Cast", "ReduceSum", "Transpose", "Squeeze", "Expand", "Where",
              "Softmax", "Mul", "Gemm"}},
    {"bst", {"LayerNormalization", "ConstantOfShape", "Reshape", "Transpose", "Div", "Where",
             "Softmax", "LeakyRelu", "Flatten", "MatMul", "Gemm"}},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    const char *arch = cases[c].arch;
    SedpNnSynthOptions o;
    CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", arch));
    CU_ASSERT_EQUAL (o.slots, 2);
    CU_ASSERT_EQUAL (o.dim, 8);
    CU_ASSERT_EQUAL (o.seq_len, 10);
    CU_ASSERT_EQUAL (o.rows, 100);
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (arch, 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    CU_ASSERT_EQUAL_FATAL (m->n_inputs, 1 + o.slots + 2);
    CU_ASSERT_STRING_EQUAL (m->inputs[0].name, "dense");
    const SedpNnValueInfo *item = &m->inputs[1 + o.slots], *hist = &m->inputs[2 + o.slots];
    CU_ASSERT_STRING_EQUAL (item->name, "item");
    CU_ASSERT_EQUAL (item->dtype, SEDP_NN_INT64);
    CU_ASSERT_EQUAL (item->rank, 2);
    CU_ASSERT_EQUAL (item->dims[0], -1);
    CU_ASSERT_STRING_EQUAL (item->dim_params[0], "batch");
    CU_ASSERT_EQUAL (item->dims[1], 1);
    CU_ASSERT_STRING_EQUAL (hist->name, "hist");
    CU_ASSERT_EQUAL (hist->dtype, SEDP_NN_INT64);
    CU_ASSERT_EQUAL (hist->dims[0], -1);
    CU_ASSERT_EQUAL (hist->dims[1], o.seq_len);
    CU_ASSERT_EQUAL_FATAL (m->n_outputs, 1);
    CU_ASSERT_STRING_EQUAL (m->outputs[0].name, "prob");
    /* One item table, row 0 zero, others not. */
    const SedpNnTensor *t = sedp_nn_model_get_initializer (m, "emb_item");
    CU_ASSERT_PTR_NOT_NULL_FATAL (t);
    CU_ASSERT_EQUAL (t->dims[0], o.rows);
    CU_ASSERT_EQUAL (t->dims[1], o.dim);
    const float *d = t->data;
    gboolean row0_zero = TRUE, row1_zero = TRUE;
    for (guint k = 0; k < o.dim; k++) {
      row0_zero = row0_zero && d[k] == 0.0f;
      row1_zero = row1_zero && d[o.dim + k] == 0.0f;
    }
    CU_ASSERT (row0_zero);
    CU_ASSERT_FALSE (row1_zero);
    /* item and hist are read by Gathers of emb_item, hist also by Equal(hist, 0). */
    guint gathers = 0, masks = 0;
    for (guint i = 0; i < m->n_nodes; i++) {
      const SedpNnNode *n = &m->nodes[i];
      if (strcmp (n->op_type, "Gather") == 0 && strcmp (n->inputs[0], "emb_item") == 0 &&
          (strcmp (n->inputs[1], "item") == 0 || strcmp (n->inputs[1], "hist") == 0))
        gathers++;
      if (strcmp (n->op_type, "Equal") == 0 && strcmp (n->inputs[0], "hist") == 0)
        masks++;
      if (strcmp (n->op_type, "GRU") == 0) {
        CU_ASSERT_EQUAL (n->n_inputs, 5); /* with sequence_lens */
        CU_ASSERT_EQUAL (n->n_outputs, 2);
        const SedpNnAttr *lbr = sedp_nn_node_attr (n, "linear_before_reset");
        CU_ASSERT (lbr && lbr->i == 1);
      }
    }
    CU_ASSERT_EQUAL (gathers, 2);
    CU_ASSERT_EQUAL (masks, 1);
    for (guint k = 0; cases[c].ops[k]; k++) {
      gboolean found = FALSE;
      for (guint i = 0; i < m->n_nodes && !found; i++)
        found = strcmp (m->nodes[i].op_type, cases[c].ops[k]) == 0;
      if (!found)
        fprintf (stderr, "\n  %s has no %s\n", arch, cases[c].ops[k]);
      CU_ASSERT (found);
    }
    CU_ASSERT (sedp_nn_model_check (m, &error));

    /* The same bytes for the same (arch, seed); another seed, other weights. */
    g_autofree char *n1 = g_strdup_printf ("seq-%s-a.onnx", arch);
    g_autofree char *n2 = g_strdup_printf ("seq-%s-b.onnx", arch);
    g_autofree char *n3 = g_strdup_printf ("seq-%s-c.onnx", arch);
    g_autofree char *p1 = tmp_path (n1), *p2 = tmp_path (n2), *p3 = tmp_path (n3);
    g_autoptr (SedpNnModel) a2 = sedp_nn_synth (arch, 1, &o, &error);
    g_autoptr (SedpNnModel) a3 = sedp_nn_synth (arch, 2, &o, &error);
    CU_ASSERT_FATAL (sedp_nn_model_save (m, p1, &error));
    CU_ASSERT_FATAL (sedp_nn_model_save (a2, p2, &error));
    CU_ASSERT_FATAL (sedp_nn_model_save (a3, p3, &error));
    gsize s1, s2, s3;
    g_autofree guint8 *b1 = read_file (p1, &s1);
    g_autofree guint8 *b2 = read_file (p2, &s2);
    g_autofree guint8 *b3 = read_file (p3, &s3);
    CU_ASSERT (s1 == s2 && memcmp (b1, b2, s1) == 0);
    CU_ASSERT (s1 == s3 && memcmp (b1, b3, s1) != 0);

    /* Older opsets: bst's LayerNorm as the exporter decomposes it; every one still checks. */
    static const gint64 opsets[] = {11, 13, 16, 18};
    for (guint i = 0; i < G_N_ELEMENTS (opsets); i++) {
      o.opset = opsets[i];
      g_autoptr (SedpNnModel) mo = sedp_nn_synth (arch, 1, &o, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (mo);
      gboolean ln = FALSE;
      for (guint k = 0; k < mo->n_nodes; k++)
        ln = ln || strcmp (mo->nodes[k].op_type, "LayerNormalization") == 0;
      CU_ASSERT_EQUAL (ln, strcmp (arch, "bst") == 0 && opsets[i] >= 17);
      if (!sedp_nn_model_check (mo, &error)) {
        fprintf (stderr, "\n  %s opset %d: %s\n", arch, (int) opsets[i], error->message);
        CU_FAIL ("check");
        g_clear_error (&error);
      }
    }
  }
}

static void
test_synth_deterministic (void)
{
  g_autoptr (GError) error = NULL;
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    g_autoptr (SedpNnModel) a = sedp_nn_synth (*arch, 42, NULL, &error);
    g_autoptr (SedpNnModel) b = sedp_nn_synth (*arch, 42, NULL, &error);
    g_autoptr (SedpNnModel) c = sedp_nn_synth (*arch, 43, NULL, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (a);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    assert_models_equal (a, b);
    CU_ASSERT_EQUAL_FATAL (a->n_initializers, c->n_initializers);
    CU_ASSERT_FALSE (tensors_equal (a->initializers[0], c->initializers[0]) &&
                     tensors_equal (a->initializers[a->n_initializers - 1],
                                    c->initializers[c->n_initializers - 1]));
  }
}

/* Whether initializer @name of @m is an embedding table: the data input of a Gather. */
static gboolean
is_gathered (const SedpNnModel *m, const char *name)
{
  for (guint n = 0; n < m->n_nodes; n++)
    if (strcmp (m->nodes[n].op_type, "Gather") == 0 && m->nodes[n].n_inputs == 2 &&
        strcmp (m->nodes[n].inputs[0], name) == 0)
      return TRUE;
  return FALSE;
}

/* --dense-seed: one seed and two dense seeds give the same embedding tables and other dense
 * weights (every dense initializer that another seed changes changes); equal seeds are
 * sedp_nn_synth's model. */
static void
test_synth_dense_seed (void)
{
  g_autoptr (GError) error = NULL;
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    g_autoptr (SedpNnModel) a = sedp_nn_synth_seeds (*arch, 5, 5, NULL, &error);
    g_autoptr (SedpNnModel) plain = sedp_nn_synth (*arch, 5, NULL, &error);
    g_autoptr (SedpNnModel) b = sedp_nn_synth_seeds (*arch, 5, 9, NULL, &error);
    g_autoptr (SedpNnModel) other = sedp_nn_synth (*arch, 6, NULL, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (a);
    CU_ASSERT_PTR_NOT_NULL_FATAL (b);
    CU_ASSERT_PTR_NOT_NULL_FATAL (other);
    assert_models_equal (a, plain);
    CU_ASSERT_EQUAL_FATAL (a->n_initializers, b->n_initializers);
    CU_ASSERT_EQUAL_FATAL (a->n_initializers, other->n_initializers);
    guint tables = 0, dense = 0;
    for (guint k = 0; k < a->n_initializers; k++) {
      const SedpNnTensor *x = a->initializers[k], *y = b->initializers[k];
      CU_ASSERT_STRING_EQUAL_FATAL (x->name, y->name);
      gboolean drawn = !tensors_equal (x, other->initializers[k]);
      if (is_gathered (a, x->name)) {
        tables++;
        CU_ASSERT_TRUE (drawn);
        if (!tensors_equal (x, y))
          CU_FAIL_FATAL ("an embedding table differs between dense seeds");
      } else if (drawn) {
        dense++;
        if (tensors_equal (x, y))
          CU_FAIL_FATAL ("a dense weight is the same under another dense seed");
      }
    }
    CU_ASSERT_TRUE (tables > 0);
    CU_ASSERT_TRUE (dense > 0);
  }
}

/* Older opsets get the attribute forms (axes of ReduceSum / Unsqueeze / Squeeze). */
static void
test_synth_opsets (void)
{
  SedpNnSynthOptions o;
  sedp_nn_synth_options_init (&o, "small", NULL);
  static const gint64 opsets[] = {11, 12, 13, 17, 18, 21};
  for (guint i = 0; i < G_N_ELEMENTS (opsets); i++) {
    o.opset = opsets[i];
    for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
      g_autoptr (GError) error = NULL;
      g_autoptr (SedpNnModel) m = sedp_nn_synth (*arch, 1, &o, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (m);
      CU_ASSERT_EQUAL (m->opset, opsets[i]);
      for (guint k = 0; k < m->n_nodes; k++) {
        const SedpNnNode *n = &m->nodes[k];
        gint64 since = strcmp (n->op_type, "ReduceMean") == 0 ? 18 : 13;
        if (strcmp (n->op_type, "ReduceSum") == 0 || strcmp (n->op_type, "ReduceMean") == 0 ||
            strcmp (n->op_type, "Unsqueeze") == 0 || strcmp (n->op_type, "Squeeze") == 0) {
          gboolean attr = sedp_nn_node_attr (n, "axes") != NULL;
          CU_ASSERT_EQUAL (attr, opsets[i] < since);
          CU_ASSERT_EQUAL (n->n_inputs, opsets[i] < since ? 1u : 2u);
        }
      }
    }
  }
}

static void
test_synth_options (void)
{
  SedpNnSynthOptions o;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_nn_synth_options_init (&o, "huge", NULL));
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("resnet", 1, NULL, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "unknown architecture 'resnet'", "mlp", "mmoe");
  g_clear_error (&error);
  sedp_nn_synth_options_init (&o, "small", NULL);
  o.slots = 0;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("mlp", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "slots");
  g_clear_error (&error);
  sedp_nn_synth_options_init (&o, "small", NULL);
  o.opset = 10;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("mlp", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "opset");
  g_clear_error (&error);
  /* Sizes as asked. */
  sedp_nn_synth_options_init (&o, "small", NULL);
  o.slots = 3;
  o.dim = 5;
  o.rows = 17;
  o.ids_per_slot = 2;
  o.n_dense = 2;
  o.n_hidden = 1;
  o.hidden[0] = 6;
  o.experts = 2;
  o.heads = 1; /* bst: heads must divide dim */
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    g_autoptr (SedpNnModel) m = sedp_nn_synth (*arch, 3, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    CU_ASSERT_EQUAL (m->n_inputs, 4 + (strcmp (*arch, "wdl") == 0 ? o.crosses : 0) +
                                    (is_seq (*arch) ? 2 : 0)); /* + item, hist */
    const SedpNnTensor *t = sedp_nn_model_get_initializer (m, "emb_2");
    CU_ASSERT_PTR_NOT_NULL_FATAL (t);
    CU_ASSERT_EQUAL (t->dims[0], 17);
    CU_ASSERT_EQUAL (t->dims[1], 5);
    CU_ASSERT_PTR_NULL (sedp_nn_model_get_initializer (m, "emb_3"));
    CU_ASSERT (sedp_nn_model_check (m, NULL));
  }
}

/* din, dien and bst refuse sizes they cannot build, naming the option. */
static void
test_synth_seq_options (void)
{
  static const char *const seq[] = {"din", "dien", "bst"};
  for (guint a = 0; a < G_N_ELEMENTS (seq); a++) {
    SedpNnSynthOptions o;
    g_autoptr (GError) error = NULL;
    CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", seq[a]));
    o.seq_len = 0;
    CU_ASSERT_PTR_NULL (sedp_nn_synth (seq[a], 1, &o, &error));
    SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "seq_len must be between 1 and");
    g_clear_error (&error);
    sedp_nn_synth_options_init (&o, "small", seq[a]);
    o.seq_len = 5000;
    CU_ASSERT_PTR_NULL (sedp_nn_synth (seq[a], 1, &o, &error));
    SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "seq_len");
    g_clear_error (&error);
    sedp_nn_synth_options_init (&o, "small", seq[a]);
    o.rows = 100000000;
    o.dim = 1024;
    CU_ASSERT_PTR_NULL (sedp_nn_synth (seq[a], 1, &o, &error));
    SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "2 GiB");
    g_clear_error (&error);
  }
  SedpNnSynthOptions o;
  g_autoptr (GError) error = NULL;
  sedp_nn_synth_options_init (&o, "small", "bst");
  o.heads = 3; /* dim 8 */
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("bst", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "heads (3) must divide dim (8)");
  g_clear_error (&error);
  o.heads = 0;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("bst", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "heads must be between 1 and");
  g_clear_error (&error);
  sedp_nn_synth_options_init (&o, "small", "bst");
  o.ffn = 0;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("bst", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "ffn must be between 1 and");
  g_clear_error (&error);
  /* heads and ffn do not matter to din. */
  sedp_nn_synth_options_init (&o, "small", "din");
  o.heads = 3;
  o.ffn = 0;
  {
    g_autoptr (SedpNnModel) m = sedp_nn_synth ("din", 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL (m);
  }
  sedp_nn_synth_options_init (&o, "small", "din");
  o.n_att_hidden = 0;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("din", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "n_att_hidden must be between 1 and");
  g_clear_error (&error);
  sedp_nn_synth_options_init (&o, "small", "dien");
  o.att_hidden[1] = 0;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("dien", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "att_hidden[1] must be between 1 and 65536 (got 0)");
  g_clear_error (&error);
}

/* The realistic preset: sizes as documented and files under 50 MB. Built in memory only. */
static void
test_synth_realistic (void)
{
  if (g_getenv ("SEDP_VALGRIND"))
    return; /* tens of millions of weights: minutes under memcheck, nothing new to check */
  SedpNnSynthOptions o;
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", NULL));
  CU_ASSERT_EQUAL (o.slots, 26);
  CU_ASSERT_EQUAL (o.dim, 32);
  CU_ASSERT_EQUAL (o.n_dense, 13);
  CU_ASSERT_EQUAL (o.n_hidden, 3);
  CU_ASSERT_EQUAL (o.hidden[0], 512);
  CU_ASSERT_EQUAL (o.experts, 4);
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    g_autoptr (GError) error = NULL;
    if (is_seq (*arch))
      continue;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (*arch, 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    gsize bytes = 0;
    for (guint k = 0; k < m->n_initializers; k++)
      bytes += sedp_nn_tensor_nbytes (m->initializers[k]);
    CU_ASSERT (bytes < 50u * 1000 * 1000);
    CU_ASSERT (bytes > 30u * 1000 * 1000);
    CU_ASSERT_EQUAL (m->n_inputs, 27 + (strcmp (*arch, "wdl") == 0 ? o.crosses : 0));
  }
  /* The sequence models: 4 user slots, the sizes of their papers. */
  static const struct {
    const char *arch;
    guint seq_len, n_hidden, hidden0;
    gsize min_mb, max_mb;
  } seq[] = {{"din", 50, 2, 200, 6, 8}, {"dien", 50, 2, 200, 6, 8}, {"bst", 20, 3, 1024, 11, 14}};
  for (guint a = 0; a < G_N_ELEMENTS (seq); a++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", seq[a].arch));
    CU_ASSERT_EQUAL (o.slots, 4);
    CU_ASSERT_EQUAL (o.dim, 32);
    CU_ASSERT_EQUAL (o.rows, 10000);
    CU_ASSERT_EQUAL (o.seq_len, seq[a].seq_len);
    CU_ASSERT_EQUAL (o.n_hidden, seq[a].n_hidden);
    CU_ASSERT_EQUAL (o.hidden[0], seq[a].hidden0);
    CU_ASSERT_EQUAL (o.n_att_hidden, 2);
    CU_ASSERT_EQUAL (o.att_hidden[0], 80);
    CU_ASSERT_EQUAL (o.att_hidden[1], 40);
    CU_ASSERT_EQUAL (o.heads, 8);
    CU_ASSERT_EQUAL (o.ffn, 128);
    g_autoptr (SedpNnModel) m = sedp_nn_synth (seq[a].arch, 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    gsize bytes = 0;
    for (guint k = 0; k < m->n_initializers; k++)
      bytes += sedp_nn_tensor_nbytes (m->initializers[k]);
    CU_ASSERT (bytes < seq[a].max_mb * 1000 * 1000);
    CU_ASSERT (bytes > seq[a].min_mb * 1000 * 1000);
    CU_ASSERT_EQUAL (m->n_inputs, 7);
    CU_ASSERT (sedp_nn_model_check (m, &error));
  }
}

/* ---- wdl, dcnv2, dssm, esmm, ple (synth-multi.c) ---- */

static guint
count_op (const SedpNnModel *m, const char *op)
{
  guint n = 0;
  for (guint i = 0; i < m->n_nodes; i++)
    n += strcmp (m->nodes[i].op_type, op) == 0;
  return n;
}

/* What makes each of them itself: inputs, outputs, ops present and absent, the weights' shapes. */
static void
test_synth_multi_shape (void)
{
  static const struct {
    const char *arch;
    const char *outputs[3];
    gint64 widths[3];
    const char *ops[8];
    const char *absent[4];
  } cases[] = {
    {"wdl", {"prob"}, {1}, {"Gather", "ReduceSum", "ReduceMean", "Gemm", "Relu", "Sigmoid"},
     {"BatchNormalization", "Clip", "Slice", "MatMul"}},
    {"dcnv2", {"prob"}, {1}, {"MatMul", "Gemm", "Mul", "Add", "Relu", "Sigmoid"}, {"Tanh", "Identity"}},
    {"dssm", {"prob", "user_vec", "item_vec"}, {1, 16, 16},
     {"Tanh", "Sqrt", "Div", "ReduceSum", "ReduceMean", "Sigmoid"}, {"Relu"}},
    {"esmm", {"ctr", "ctcvr"}, {1, 1}, {"Gemm", "Relu", "Sigmoid", "Mul"}, {"Softmax"}},
    {"ple", {"ctr", "cvr"}, {1, 1}, {"Softmax", "Unsqueeze", "Mul", "ReduceSum", "ReduceMean", "Relu"},
     {"MatMul", "Expand", "LeakyRelu"}},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    const char *arch = cases[c].arch;
    SedpNnSynthOptions o;
    CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", arch));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (arch, 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    guint extra = strcmp (arch, "wdl") == 0 ? o.crosses : 0;
    CU_ASSERT_EQUAL_FATAL (m->n_inputs, 1 + o.slots + extra);
    CU_ASSERT_STRING_EQUAL (m->inputs[0].name, "dense");
    for (guint k = 0; k < o.slots; k++) {
      g_autofree char *slot = g_strdup_printf ("slot_%u", k);
      CU_ASSERT_STRING_EQUAL (m->inputs[1 + k].name, slot);
      g_autofree char *emb = g_strdup_printf ("emb_%u", k);
      const SedpNnTensor *t = sedp_nn_model_get_initializer (m, emb);
      CU_ASSERT_PTR_NOT_NULL_FATAL (t);
      CU_ASSERT_EQUAL (t->dims[1], o.dim);
    }
    for (guint k = 0; k < extra; k++) {
      const SedpNnValueInfo *in = &m->inputs[1 + o.slots + k];
      g_autofree char *name = g_strdup_printf ("cross_%u", k);
      g_autofree char *table = g_strdup_printf ("cross_emb_%u", k);
      CU_ASSERT_STRING_EQUAL (in->name, name);
      CU_ASSERT_EQUAL (in->dtype, SEDP_NN_INT64);
      CU_ASSERT_EQUAL (in->rank, 2);
      CU_ASSERT_EQUAL (in->dims[0], -1);
      CU_ASSERT_EQUAL (in->dims[1], 1);
      const SedpNnTensor *t = sedp_nn_model_get_initializer (m, table);
      CU_ASSERT_PTR_NOT_NULL_FATAL (t);
      CU_ASSERT_EQUAL (t->dims[0], o.rows);
      CU_ASSERT_EQUAL (t->dims[1], 1);
    }
    guint n_out = 0;
    while (n_out < 3 && cases[c].outputs[n_out])
      n_out++;
    CU_ASSERT_EQUAL_FATAL (m->n_outputs, n_out);
    for (guint k = 0; k < n_out; k++) {
      CU_ASSERT_STRING_EQUAL (m->outputs[k].name, cases[c].outputs[k]);
      CU_ASSERT_EQUAL (m->outputs[k].dims[0], -1);
      CU_ASSERT_EQUAL (m->outputs[k].dims[1], cases[c].widths[k]);
    }
    for (guint k = 0; k < G_N_ELEMENTS (cases[c].ops) && cases[c].ops[k]; k++) {
      if (count_op (m, cases[c].ops[k]) == 0)
        fprintf (stderr, "\n  %s has no %s\n", arch, cases[c].ops[k]);
      CU_ASSERT (count_op (m, cases[c].ops[k]) > 0);
    }
    for (guint k = 0; k < G_N_ELEMENTS (cases[c].absent) && cases[c].absent[k]; k++) {
      if (count_op (m, cases[c].absent[k]) != 0)
        fprintf (stderr, "\n  %s has a %s\n", arch, cases[c].absent[k]);
      CU_ASSERT_EQUAL (count_op (m, cases[c].absent[k]), 0);
    }
    CU_ASSERT (sedp_nn_model_check (m, &error));
  }

  SedpNnSynthOptions o;
  g_autoptr (GError) error = NULL;
  /* dcnv2: low rank, stacked: cross_layers × (V [d0, r] MatMul, U Gemm [d0, r]); the deep MLP
   * reads the last cross layer's output. */
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", "dcnv2"));
  o.cross_layers = 3;
  o.cross_rank = 5;
  g_autoptr (SedpNnModel) dcn = sedp_nn_synth ("dcnv2", 1, &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dcn);
  gint64 d0 = o.n_dense + o.slots * o.dim;
  for (guint l = 0; l < 3; l++) {
    g_autofree char *u = g_strdup_printf ("cross.%u.U.weight", l);
    const SedpNnTensor *t = sedp_nn_model_get_initializer (dcn, u);
    CU_ASSERT_PTR_NOT_NULL_FATAL (t);
    CU_ASSERT_EQUAL (t->dims[0], d0);
    CU_ASSERT_EQUAL (t->dims[1], 5);
  }
  CU_ASSERT_PTR_NULL (sedp_nn_model_get_initializer (dcn, "cross.3.U.weight"));
  CU_ASSERT_EQUAL (count_op (dcn, "MatMul"), 3 + o.n_hidden / 2);
  const SedpNnNode *first = NULL;
  for (guint i = 0; i < dcn->n_nodes && !first; i++)
    if (strcmp (dcn->nodes[i].name, "/deep.0/Gemm") == 0)
      first = &dcn->nodes[i];
  CU_ASSERT_PTR_NOT_NULL_FATAL (first);
  CU_ASSERT_STRING_EQUAL (first->inputs[0], "/cross.2/Add_output_0");

  /* ple: per level 2 × task_experts + shared_experts experts; a task gate per task and level,
   * a shared gate below the last level. */
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", "ple"));
  o.levels = 3;
  o.task_experts = 1;
  o.shared_experts = 2;
  g_autoptr (SedpNnModel) ple = sedp_nn_synth ("ple", 1, &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ple);
  CU_ASSERT_EQUAL (count_op (ple, "Softmax"), 3 * 2 + 2);
  CU_ASSERT_EQUAL (count_op (ple, "Gemm"),
                   3 * (2 * 1 + 2) * o.n_expert_hidden + (3 * 2 + 2) + 2 * 2);
  const SedpNnTensor *sg = sedp_nn_model_get_initializer (ple, "levels.1.shared_gate.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (sg);
  CU_ASSERT_EQUAL (sg->dims[0], 2 * 1 + 2);
  const SedpNnTensor *tg = sedp_nn_model_get_initializer (ple, "levels.2.gates.1.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (tg);
  CU_ASSERT_EQUAL (tg->dims[0], 1 + 2);
  CU_ASSERT_PTR_NULL (sedp_nn_model_get_initializer (ple, "levels.2.shared_gate.weight"));

  /* dssm: the user tower reads dense and the first half of the slots, the item tower the rest. */
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", "dssm"));
  o.slots = 5;
  g_autoptr (SedpNnModel) dssm = sedp_nn_synth ("dssm", 1, &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dssm);
  const SedpNnTensor *uw = sedp_nn_model_get_initializer (dssm, "user_tower.0.weight");
  const SedpNnTensor *iw = sedp_nn_model_get_initializer (dssm, "item_tower.0.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (uw);
  CU_ASSERT_PTR_NOT_NULL_FATAL (iw);
  CU_ASSERT_EQUAL (uw->dims[1], o.n_dense + 2 * o.dim);
  CU_ASSERT_EQUAL (iw->dims[1], 3 * o.dim);
}

/* check_options: bad sizes of the new options refused, the error naming the option; options of
 * other architectures ignored. */
static void
test_synth_multi_options (void)
{
  static const struct {
    const char *arch;
    const char *field;
    guint offset;
    guint value;
  } cases[] = {
    {"wdl", "crosses", G_STRUCT_OFFSET (SedpNnSynthOptions, crosses), 1025},
    {"wdl", "hidden", G_STRUCT_OFFSET (SedpNnSynthOptions, hidden), 0},
    {"dcnv2", "cross_rank", G_STRUCT_OFFSET (SedpNnSynthOptions, cross_rank), 0},
    {"dcnv2", "cross_layers", G_STRUCT_OFFSET (SedpNnSynthOptions, cross_layers), 0},
    {"dcnv2", "cross_layers", G_STRUCT_OFFSET (SedpNnSynthOptions, cross_layers), 17},
    {"dssm", "slots", G_STRUCT_OFFSET (SedpNnSynthOptions, slots), 1},
    {"dssm", "n_hidden", G_STRUCT_OFFSET (SedpNnSynthOptions, n_hidden), 0},
    {"esmm", "hidden", G_STRUCT_OFFSET (SedpNnSynthOptions, hidden), 70000},
    {"ple", "levels", G_STRUCT_OFFSET (SedpNnSynthOptions, levels), 0},
    {"ple", "levels", G_STRUCT_OFFSET (SedpNnSynthOptions, levels), 9},
    {"ple", "task_experts", G_STRUCT_OFFSET (SedpNnSynthOptions, task_experts), 0},
    {"ple", "shared_experts", G_STRUCT_OFFSET (SedpNnSynthOptions, shared_experts), 65},
    {"ple", "tower", G_STRUCT_OFFSET (SedpNnSynthOptions, tower), 0},
    {"ple", "n_expert_hidden", G_STRUCT_OFFSET (SedpNnSynthOptions, n_expert_hidden), 0},
    {"ple", "expert_hidden", G_STRUCT_OFFSET (SedpNnSynthOptions, expert_hidden), 0},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    SedpNnSynthOptions o;
    sedp_nn_synth_options_init (&o, "small", cases[c].arch);
    G_STRUCT_MEMBER (guint, &o, cases[c].offset) = cases[c].value;
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (cases[c].arch, 1, &o, &error);
    if (m != NULL)
      fprintf (stderr, "\n  %s: %s = %u accepted\n", cases[c].arch, cases[c].field, cases[c].value);
    CU_ASSERT_PTR_NULL (m);
    g_autofree char *needle = g_strdup_printf ("synth: %s", cases[c].field);
    SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, needle, "must be between");
  }
  /* A wdl with too many cross rows for one file. */
  SedpNnSynthOptions o;
  sedp_nn_synth_options_init (&o, "small", "wdl");
  o.rows = 100000000;
  o.slots = 1;
  o.dim = 1;
  o.crosses = 1024;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_nn_synth ("wdl", 1, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "2 GiB");
  g_clear_error (&error);
  /* The options of the others are not checked: ple's levels 0 is no error for wdl, crosses 2000
   * none for ple; a wdl with no crosses has no cross inputs. */
  sedp_nn_synth_options_init (&o, "small", "wdl");
  o.levels = 0;
  o.cross_rank = 0;
  o.crosses = 0;
  g_autoptr (SedpNnModel) w = sedp_nn_synth ("wdl", 1, &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (w);
  CU_ASSERT_EQUAL (w->n_inputs, 1 + o.slots);
  sedp_nn_synth_options_init (&o, "small", "ple");
  o.crosses = 2000;
  g_autoptr (SedpNnModel) p = sedp_nn_synth ("ple", 1, &o, &error);
  CU_ASSERT_PTR_NOT_NULL (p);
  /* The presets. */
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", "wdl"));
  CU_ASSERT_EQUAL (o.n_hidden, 3);
  CU_ASSERT_EQUAL (o.hidden[0], 1024);
  CU_ASSERT_EQUAL (o.hidden[2], 256);
  CU_ASSERT_EQUAL (o.crosses, 8);
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", "esmm"));
  CU_ASSERT_EQUAL (o.hidden[0], 360);
  CU_ASSERT_EQUAL (o.hidden[2], 80);
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", "dcnv2"));
  CU_ASSERT_EQUAL (o.cross_layers, 3);
  CU_ASSERT_EQUAL (o.cross_rank, 64);
  CU_ASSERT_EQUAL (o.hidden[0], 512);
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", "ple"));
  CU_ASSERT_EQUAL (o.levels, 2);
  CU_ASSERT_EQUAL (o.task_experts, 2);
  CU_ASSERT_EQUAL (o.shared_experts, 2);
  CU_ASSERT_EQUAL (o.expert_hidden[0], 256);
  CU_ASSERT_EQUAL (o.expert_hidden[1], 128);
  CU_ASSERT_EQUAL (o.tower, 64);
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", "dcnv2"));
  CU_ASSERT_EQUAL (o.cross_rank, 4);
}

/* The bytes of the file are pinned for (arch, seed): the splitmix stream, the order the weights
 * are drawn in and the graph must not change unnoticed (a change that means to is a new hash
 * here). Both presets build, the realistic one in memory only. */
static void
test_synth_multi_bytes (void)
{
  static const struct {
    const char *arch;
    guint64 seed;
    const char *sha256;
  } cases[] = {
    {"wdl", 1, "6bcbea982a4bbc65810de1773d5b1bd53cf806216ed931e0fb5b0e4c210b2e57"},
    {"wdl", 2, "9e54f3b01de814d6a0bbddeb8f1d2eb575c48d8ced2c234a8d66d2f5e9f0cf02"},
    {"dcnv2", 1, "90ca41a8fb895fa15ed7dd481a645e40c20c28c9f8c53e368c0e60654cde1be3"},
    {"dcnv2", 2, "62f22b11a580ead13058d637f33069a56ffe7d20abb92eea6c4db030875c7f81"},
    {"dssm", 1, "f7f3f4ddb24234b29b580ea191fabd9c6735a9d258312f4771eaa094524b0d6c"},
    {"dssm", 2, "049d1a307db0d0f9733e8325f97938ca69fcb0ee96eb3afbd0581248b9ace08c"},
    {"esmm", 1, "f059afe0466058e15cb7bfe67335d5cb98327607abe717a6ef8cc54e37df2203"},
    {"esmm", 2, "0f73a2f828e8add40714cee19e9f42c417fb8c903624d16bac6a92b7c49a6a7d"},
    {"ple", 1, "936477b1586253fd12f287271004a37b898fe329373886c4db3b4903a3e98ca2"},
    {"ple", 2, "33df73feb8f70f29697fe463ffadcd525207c6e9bf8506dcb521cdcd708ac4f9"},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (cases[c].arch, cases[c].seed, NULL, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    g_autofree char *name = g_strdup_printf ("bytes-%s-%" G_GUINT64_FORMAT ".onnx", cases[c].arch,
                                             cases[c].seed);
    g_autofree char *path = tmp_path (name);
    CU_ASSERT_FATAL (sedp_nn_model_save (m, path, &error));
    gsize n;
    g_autofree guint8 *data = read_file (path, &n);
    g_autofree char *sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, data, n);
    if (g_getenv ("SEDP_PRINT_SYNTH_SHA256"))
      fprintf (stderr, "\n    {\"%s\", %" G_GUINT64_FORMAT ", \"%s\"},", cases[c].arch,
               cases[c].seed, sum);
    if (strcmp (sum, cases[c].sha256) != 0)
      fprintf (stderr, "\n  %s seed %" G_GUINT64_FORMAT ": sha256 %s, pinned %s\n", cases[c].arch,
               cases[c].seed, sum, cases[c].sha256);
    CU_ASSERT_STRING_EQUAL (sum, cases[c].sha256);
  }
  if (g_getenv ("SEDP_VALGRIND"))
    return;
  static const char *const archs[] = {"wdl", "dcnv2", "dssm", "esmm", "ple"};
  for (guint a = 0; a < G_N_ELEMENTS (archs); a++) {
    SedpNnSynthOptions o;
    CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "realistic", archs[a]));
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (archs[a], 1, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    guint64 params = 0;
    for (guint k = 0; k < m->n_initializers; k++)
      params += (guint64) sedp_nn_tensor_numel (m->initializers[k]);
    CU_ASSERT (params > 9000000 && params < 11000000);
    CU_ASSERT (sedp_nn_model_check (m, &error));
  }
}

/* ---- building ---- */

static void
test_build_api (void)
{
  g_autoptr (SedpNnModel) m = sedp_nn_model_new (13, "test");
  CU_ASSERT_EQUAL (m->ir_version, 8);
  CU_ASSERT_EQUAL (m->opset, 13);
  gint64 dims[2] = {-1, 4};
  const char *params[2] = {"N", NULL};
  SedpNnValueInfo *vi = sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 2, dims, params);
  CU_ASSERT_STRING_EQUAL (vi->dim_params[0], "N");
  CU_ASSERT_PTR_NULL (vi->dim_params[1]);
  gint64 wd[2] = {4, 2};
  SedpNnTensor *w = sedp_nn_tensor_new ("W", SEDP_NN_FLOAT, 2, wd);
  CU_ASSERT_EQUAL ((guintptr) w->data % 64, 0);
  CU_ASSERT_EQUAL (sedp_nn_tensor_nbytes (w), 32);
  sedp_nn_model_add_initializer (m, w);
  const char *in[] = {"x", "W", NULL}, *out[] = {"y", NULL};
  SedpNnNode *n = sedp_nn_model_add_node (m, "MatMul", "mm", in, out);
  sedp_nn_node_set_attr_int (n, "a", 1);
  sedp_nn_node_set_attr_int (n, "a", 2); /* replaces */
  gint64 ints[3] = {1, 2, 3};
  float fl[2] = {0.5f, 1.5f};
  sedp_nn_node_set_attr_ints (n, "ints", 3, ints);
  sedp_nn_node_set_attr_floats (n, "floats", 2, fl);
  sedp_nn_node_set_attr_string (n, "s", "hello");
  sedp_nn_node_set_attr_float (n, "f", 0.25f);
  CU_ASSERT_EQUAL (n->n_attrs, 5);
  CU_ASSERT_EQUAL (sedp_nn_node_attr (n, "a")->i, 2);
  CU_ASSERT_PTR_NULL (sedp_nn_node_attr (n, "nope"));
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, 2, dims, params);
  CU_ASSERT_PTR_EQUAL (sedp_nn_model_get_initializer (m, "W"), w);
  CU_ASSERT_EQUAL (sedp_nn_model_find_input (m, "x"), 0);
  CU_ASSERT_EQUAL (sedp_nn_model_find_input (m, "W"), -1);

  g_autofree char *path = tmp_path ("built.onnx");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FATAL (sedp_nn_model_save (m, path, &error));
  g_autoptr (SedpNnModel) back = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (back);
  /* A graph without a name is written with one (ONNX's checker wants it). */
  CU_ASSERT_STRING_EQUAL (back->graph_name, "sedp");
  m->graph_name = g_strdup ("sedp");
  assert_models_equal (m, back);
  CU_ASSERT_PTR_EQUAL (sedp_nn_model_ref (back), back);
  sedp_nn_model_unref (back);

  g_autoptr (SedpNnTensor) d = sedp_nn_tensor_dup (w);
  CU_ASSERT (tensors_equal (d, w));
  CU_ASSERT_PTR_NOT_EQUAL (d->data, w->data);
  g_autofree char *shape = sedp_nn_shape_to_string (2, wd);
  CU_ASSERT_STRING_EQUAL (shape, "[4, 2]");
  CU_ASSERT_STRING_EQUAL (sedp_nn_dtype_name (SEDP_NN_INT64), "int64");
  CU_ASSERT_STRING_EQUAL (sedp_nn_dtype_name ((SedpNnDType) 10), "float16");
  CU_ASSERT_STRING_EQUAL (sedp_nn_dtype_name ((SedpNnDType) 77), "type 77");
  CU_ASSERT_EQUAL (sedp_nn_dtype_size (SEDP_NN_DOUBLE), 8);
  CU_ASSERT_EQUAL (sedp_nn_dtype_size ((SedpNnDType) 10), 0);
  g_autoptr (SedpNnTensor) empty = sedp_nn_tensor_new (NULL, SEDP_NN_FLOAT, 1, (gint64[]){0});
  CU_ASSERT_PTR_NOT_NULL (empty->data);
  CU_ASSERT_EQUAL (sedp_nn_tensor_numel (empty), 0);
}

/* ---- TensorProto files ---- */

static void
test_tensor_round_trip (void)
{
  static const SedpNnDType types[] = {SEDP_NN_FLOAT, SEDP_NN_INT64, SEDP_NN_INT32,
                                      SEDP_NN_DOUBLE, SEDP_NN_BOOL, SEDP_NN_UINT8, SEDP_NN_INT8};
  static const struct {
    int rank;
    gint64 dims[3];
  } shapes[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {3, {2, 0, 3}}, {3, {2, 3, 2}}};
  for (guint ti = 0; ti < G_N_ELEMENTS (types); ti++)
    for (guint si = 0; si < G_N_ELEMENTS (shapes); si++) {
      g_autoptr (SedpNnTensor) t =
        sedp_nn_tensor_new ("input_x", types[ti], shapes[si].rank, shapes[si].dims);
      guint8 *p = t->data;
      for (gsize k = 0; k < sedp_nn_tensor_nbytes (t); k++)
        p[k] = (guint8) (k * 37 + ti);
      if (types[ti] == SEDP_NN_BOOL)
        for (gsize k = 0; k < sedp_nn_tensor_nbytes (t); k++)
          p[k] &= 1;
      g_autofree char *path = tmp_path ("t.pb");
      g_autoptr (GError) error = NULL;
      CU_ASSERT_FATAL (sedp_nn_tensor_save (t, path, &error));
      g_autoptr (SedpNnTensor) back = sedp_nn_tensor_load (path, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (back);
      CU_ASSERT (tensors_equal (t, back));
    }
}

/* A TensorProto with the values in the typed fields, as older exporters and ONNX's own test data
 * sometimes write them. */
static void
test_tensor_typed_fields (void)
{
  Sedp__Onnx__TensorProto tp = SEDP__ONNX__TENSOR_PROTO__INIT;
  int64_t dims[2] = {2, 2};
  tp.n_dims = 2;
  tp.dims = dims;
  tp.has_data_type = TRUE;
  tp.name = "t";
  g_autofree char *path = tmp_path ("typed.pb");
  g_autoptr (GError) error = NULL;

  float f[4] = {1.5f, -2, 3, 4};
  tp.data_type = SEDP_NN_FLOAT;
  tp.n_float_data = 4;
  tp.float_data = f;
  guint8 buf[256];
  gsize n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  SedpNnTensor *t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT_EQUAL (t->dtype, SEDP_NN_FLOAT);
  CU_ASSERT (memcmp (t->data, f, sizeof f) == 0);
  CU_ASSERT_STRING_EQUAL (t->name, "t");
  sedp_nn_tensor_free (t);
  tp.n_float_data = 0;

  int64_t l[4] = {1, -2, G_MAXINT64, 4};
  tp.data_type = SEDP_NN_INT64;
  tp.n_int64_data = 4;
  tp.int64_data = l;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT (memcmp (t->data, l, sizeof l) == 0);
  sedp_nn_tensor_free (t);
  tp.n_int64_data = 0;

  int32_t i[4] = {0, 5, 0, -1};
  tp.data_type = SEDP_NN_BOOL;
  tp.n_int32_data = 4;
  tp.int32_data = i;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  const guint8 want_b[4] = {0, 1, 0, 1};
  CU_ASSERT (memcmp (t->data, want_b, 4) == 0);
  sedp_nn_tensor_free (t);

  tp.data_type = SEDP_NN_INT8;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT_EQUAL (((gint8 *) t->data)[3], -1);
  sedp_nn_tensor_free (t);

  tp.data_type = SEDP_NN_INT32;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT (memcmp (t->data, i, sizeof i) == 0);
  sedp_nn_tensor_free (t);
  tp.n_int32_data = 0;

  double d[4] = {0.25, 1e300, -3, 4};
  tp.data_type = SEDP_NN_DOUBLE;
  tp.n_double_data = 4;
  tp.double_data = d;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  t = sedp_nn_tensor_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t);
  CU_ASSERT (memcmp (t->data, d, sizeof d) == 0);
  sedp_nn_tensor_free (t);

  /* Three values for four elements. */
  tp.n_double_data = 3;
  n = sedp__onnx__tensor_proto__pack (&tp, buf);
  sedp_test_write_file (path, buf, n);
  CU_ASSERT_PTR_NULL (sedp_nn_tensor_load (path, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "3 values in double_data", "[2, 2]");
  CU_ASSERT_EQUAL (error->code, SEDP_NN_ERROR_INVALID);
}

static void
test_tensor_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *missing = tmp_path ("missing.pb");
  CU_ASSERT_PTR_NULL (sedp_nn_tensor_load (missing, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "missing.pb");
  CU_ASSERT_EQUAL (error->code, SEDP_NN_ERROR_IO);
  g_clear_error (&error);

  g_autofree char *garbage = fixture_path ("tensor-garbage.pb");
  const char text[] = "this is not a tensor\n";
  sedp_test_write_file (garbage, text, sizeof text - 1);
  CU_ASSERT_PTR_NULL (sedp_nn_tensor_load (garbage, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "truncated or corrupt");
  CU_ASSERT_EQUAL (error->code, SEDP_NN_ERROR_CORRUPT);
  g_clear_error (&error);

  g_autofree char *empty = fixture_path ("tensor-empty.pb");
  sedp_test_write_file (empty, "", 0);
  CU_ASSERT_PTR_NULL (sedp_nn_tensor_load (empty, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "no element type");
  g_clear_error (&error);

  /* Truncated raw data. */
  Sedp__Onnx__TensorProto tp = SEDP__ONNX__TENSOR_PROTO__INIT;
  int64_t dims[1] = {4};
  tp.n_dims = 1;
  tp.dims = dims;
  tp.has_data_type = TRUE;
  tp.data_type = SEDP_NN_FLOAT;
  tp.has_raw_data = TRUE;
  guint8 raw[12] = {0};
  tp.raw_data.data = raw;
  tp.raw_data.len = sizeof raw;
  guint8 buf[128];
  gsize n = sedp__onnx__tensor_proto__pack (&tp, buf);
  g_autofree char *short_raw = fixture_path ("tensor-short-raw.pb");
  sedp_test_write_file (short_raw, buf, n);
  CU_ASSERT_PTR_NULL (sedp_nn_tensor_load (short_raw, &error));
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, "12 bytes of raw_data", "needs 16 bytes");
  CU_ASSERT_EQUAL (error->code, SEDP_NN_ERROR_INVALID);
}

/* ---- malformed models ---- */

/* A small valid model, every part a protobuf-c struct the tests change before packing:
 * y = Relu(MatMul(x, W)), x float [N, 4], W float [4, 2]. */
typedef struct {
  Sedp__Onnx__ModelProto model;
  Sedp__Onnx__OperatorSetIdProto opset, *opsets[1];
  Sedp__Onnx__GraphProto graph;
  Sedp__Onnx__TensorProto w, *inits[2];
  int64_t w_dims[SEDP_NN_MAX_RANK + 2];
  float w_data[8];
  Sedp__Onnx__NodeProto mm, relu, *nodes[3];
  char *mm_in[2], *mm_out[1], *relu_in[1], *relu_out[1];
  Sedp__Onnx__AttributeProto attr, *attrs[2];
  Sedp__Onnx__ValueInfoProto x, y, *inputs[2], *outputs[1];
  Sedp__Onnx__TypeProto x_type, y_type;
  Sedp__Onnx__TypeProto__Tensor x_tt, y_tt;
  Sedp__Onnx__TensorShapeProto x_shape, y_shape;
  Sedp__Onnx__TensorShapeProto__Dimension x_dims[SEDP_NN_MAX_RANK + 2], *x_dimp[SEDP_NN_MAX_RANK + 2];
  Sedp__Onnx__TensorShapeProto__Dimension y_dims[2], *y_dimp[2];
  Sedp__Onnx__StringStringEntryProto ext, *exts[1];
} Tiny;

static void
tiny_init (Tiny *t)
{
  memset (t, 0, sizeof *t);
  sedp__onnx__model_proto__init (&t->model);
  t->model.has_ir_version = TRUE;
  t->model.ir_version = 8;
  t->model.producer_name = "test";
  sedp__onnx__operator_set_id_proto__init (&t->opset);
  t->opset.domain = "";
  t->opset.has_version = TRUE;
  t->opset.version = 17;
  t->opsets[0] = &t->opset;
  t->model.n_opset_import = 1;
  t->model.opset_import = t->opsets;

  sedp__onnx__tensor_proto__init (&t->w);
  t->w.name = "W";
  t->w.has_data_type = TRUE;
  t->w.data_type = SEDP_NN_FLOAT;
  t->w_dims[0] = 4;
  t->w_dims[1] = 2;
  t->w.n_dims = 2;
  t->w.dims = t->w_dims;
  for (int k = 0; k < 8; k++)
    t->w_data[k] = (float) k - 3.5f;
  t->w.has_raw_data = TRUE;
  t->w.raw_data.data = (guint8 *) t->w_data;
  t->w.raw_data.len = sizeof t->w_data;
  t->inits[0] = &t->w;

  sedp__onnx__node_proto__init (&t->mm);
  t->mm.name = "mm";
  t->mm.op_type = "MatMul";
  t->mm_in[0] = "x";
  t->mm_in[1] = "W";
  t->mm_out[0] = "h";
  t->mm.n_input = 2;
  t->mm.input = t->mm_in;
  t->mm.n_output = 1;
  t->mm.output = t->mm_out;
  sedp__onnx__node_proto__init (&t->relu);
  t->relu.name = "relu";
  t->relu.op_type = "Relu";
  t->relu_in[0] = "h";
  t->relu_out[0] = "y";
  t->relu.n_input = 1;
  t->relu.input = t->relu_in;
  t->relu.n_output = 1;
  t->relu.output = t->relu_out;
  t->nodes[0] = &t->mm;
  t->nodes[1] = &t->relu;
  sedp__onnx__attribute_proto__init (&t->attr);
  t->attrs[0] = &t->attr;

  sedp__onnx__value_info_proto__init (&t->x);
  sedp__onnx__type_proto__init (&t->x_type);
  sedp__onnx__type_proto__tensor__init (&t->x_tt);
  sedp__onnx__tensor_shape_proto__init (&t->x_shape);
  t->x.name = "x";
  t->x.type = &t->x_type;
  t->x_type.value_case = SEDP__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->x_type.tensor_type = &t->x_tt;
  t->x_tt.has_elem_type = TRUE;
  t->x_tt.elem_type = SEDP_NN_FLOAT;
  t->x_tt.shape = &t->x_shape;
  for (int k = 0; k < SEDP_NN_MAX_RANK + 2; k++) {
    sedp__onnx__tensor_shape_proto__dimension__init (&t->x_dims[k]);
    t->x_dimp[k] = &t->x_dims[k];
  }
  t->x_dims[0].value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
  t->x_dims[0].dim_param = "N";
  t->x_dims[1].value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
  t->x_dims[1].dim_value = 4;
  t->x_shape.n_dim = 2;
  t->x_shape.dim = t->x_dimp;
  t->inputs[0] = &t->x;

  sedp__onnx__value_info_proto__init (&t->y);
  sedp__onnx__type_proto__init (&t->y_type);
  sedp__onnx__type_proto__tensor__init (&t->y_tt);
  sedp__onnx__tensor_shape_proto__init (&t->y_shape);
  t->y.name = "y";
  t->y.type = &t->y_type;
  t->y_type.value_case = SEDP__ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->y_type.tensor_type = &t->y_tt;
  t->y_tt.has_elem_type = TRUE;
  t->y_tt.elem_type = SEDP_NN_FLOAT;
  t->y_tt.shape = &t->y_shape;
  for (int k = 0; k < 2; k++) {
    sedp__onnx__tensor_shape_proto__dimension__init (&t->y_dims[k]);
    t->y_dimp[k] = &t->y_dims[k];
  }
  /* An unnamed symbolic dimension, then a fixed one. */
  t->y_dims[1].value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
  t->y_dims[1].dim_value = 2;
  t->y_shape.n_dim = 2;
  t->y_shape.dim = t->y_dimp;
  t->outputs[0] = &t->y;

  sedp__onnx__graph_proto__init (&t->graph);
  t->graph.name = "tiny";
  t->graph.n_node = 2;
  t->graph.node = t->nodes;
  t->graph.n_initializer = 1;
  t->graph.initializer = t->inits;
  t->graph.n_input = 1;
  t->graph.input = t->inputs;
  t->graph.n_output = 1;
  t->graph.output = t->outputs;
  t->model.graph = &t->graph;
}

/* Packs @t into fixtures/@name and returns the path. */
static char *
tiny_write (Tiny *t, const char *name)
{
  gsize size = sedp__onnx__model_proto__get_packed_size (&t->model);
  g_autofree guint8 *buf = g_malloc (size + 1);
  sedp__onnx__model_proto__pack (&t->model, buf);
  char *path = fixture_path (name);
  sedp_test_write_file (path, buf, size);
  return path;
}

/* Loads fixtures/@name: fails with @code and a message naming the file and holding @needle. */
static void
expect_failure (const char *path, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NULL (m);
  if (error == NULL) {
    fprintf (stderr, "\n  %s loaded, expected an error with '%s'\n", path, needle);
    CU_FAIL ("loaded");
    return;
  }
  if (error->code != code)
    fprintf (stderr, "\n  %s: code %d, expected %d (%s)\n", path, error->code, code,
             error->message);
  CU_ASSERT_EQUAL (error->code, code);
  SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, path, needle);
}

static void
test_tiny_valid (void)
{
  Tiny t;
  tiny_init (&t);
  g_autofree char *path = tiny_write (&t, "tiny-valid.onnx");
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL (m->ir_version, 8);
  CU_ASSERT_EQUAL (m->opset, 17);
  CU_ASSERT_STRING_EQUAL (m->producer, "test");
  CU_ASSERT_STRING_EQUAL (m->graph_name, "tiny");
  CU_ASSERT_EQUAL_FATAL (m->n_inputs, 1);
  CU_ASSERT_EQUAL (m->inputs[0].rank, 2);
  CU_ASSERT_EQUAL (m->inputs[0].dims[0], -1);
  CU_ASSERT_STRING_EQUAL (m->inputs[0].dim_params[0], "N");
  CU_ASSERT_EQUAL (m->inputs[0].dims[1], 4);
  CU_ASSERT_EQUAL (m->outputs[0].dims[0], -1);
  CU_ASSERT_PTR_NULL (m->outputs[0].dim_params[0]);
  CU_ASSERT_EQUAL_FATAL (m->n_initializers, 1);
  CU_ASSERT (memcmp (m->initializers[0]->data, t.w_data, sizeof t.w_data) == 0);
  CU_ASSERT_EQUAL ((guintptr) m->initializers[0]->data % 64, 0);
  CU_ASSERT_EQUAL (m->n_nodes, 2);
  CU_ASSERT_STRING_EQUAL (m->nodes[1].domain, "");

  /* The same with: the weights in float_data, W also listed as a graph input (IR < 4 style),
   * the opset under "ai.onnx", the nodes out of order, the output without a shape. */
  t.w.has_raw_data = FALSE;
  t.w.n_float_data = 8;
  t.w.float_data = t.w_data;
  Sedp__Onnx__ValueInfoProto wi = t.x;
  wi.name = "W";
  t.inputs[1] = &wi;
  t.graph.n_input = 2;
  t.opset.domain = "ai.onnx";
  t.nodes[0] = &t.relu;
  t.nodes[1] = &t.mm;
  t.y_tt.shape = NULL;
  g_autofree char *path2 = tiny_write (&t, "tiny-variants.onnx");
  g_autoptr (SedpNnModel) m2 = sedp_nn_model_load (path2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m2);
  CU_ASSERT_EQUAL (m2->opset, 17);
  CU_ASSERT_EQUAL (m2->n_inputs, 1);
  CU_ASSERT_EQUAL (m2->outputs[0].rank, -1);
  CU_ASSERT (memcmp (m2->initializers[0]->data, t.w_data, sizeof t.w_data) == 0);
  CU_ASSERT_STRING_EQUAL (m2->nodes[0].op_type, "Relu");

  /* A Constant node whose tensor is in int64_data, and attributes of every kind. */
  Sedp__Onnx__NodeProto c = SEDP__ONNX__NODE_PROTO__INIT;
  Sedp__Onnx__TensorProto ct = SEDP__ONNX__TENSOR_PROTO__INIT;
  int64_t cvals[3] = {7, 8, 9}, cdims[1] = {3};
  ct.n_dims = 1;
  ct.dims = cdims;
  ct.has_data_type = TRUE;
  ct.data_type = SEDP_NN_INT64;
  ct.n_int64_data = 3;
  ct.int64_data = cvals;
  Sedp__Onnx__AttributeProto a[4];
  for (int k = 0; k < 4; k++)
    sedp__onnx__attribute_proto__init (&a[k]);
  a[0].name = "value";
  a[0].has_type = TRUE;
  a[0].type = SEDP_NN_ATTR_TENSOR;
  a[0].t = &ct;
  a[1].name = "legacy_untyped_int"; /* no type: inferred */
  a[1].has_i = TRUE;
  a[1].i = 5;
  a[2].name = "names";
  a[2].has_type = TRUE;
  a[2].type = SEDP_NN_ATTR_STRINGS;
  ProtobufCBinaryData strs[2] = {{2, (guint8 *) "ab"}, {1, (guint8 *) "c"}};
  a[2].n_strings = 2;
  a[2].strings = strs;
  Sedp__Onnx__GraphProto sub = SEDP__ONNX__GRAPH_PROTO__INIT;
  a[3].name = "body";
  a[3].has_type = TRUE;
  a[3].type = 5; /* GRAPH: kept without payload */
  a[3].g = &sub;
  Sedp__Onnx__AttributeProto *ap[4] = {&a[0], &a[1], &a[2], &a[3]};
  c.op_type = "Constant";
  char *c_out[1] = {"k"};
  c.n_output = 1;
  c.output = c_out;
  c.n_attribute = 4;
  c.attribute = ap;
  t.nodes[2] = &c;
  t.graph.n_node = 3;
  g_autofree char *path3 = tiny_write (&t, "tiny-constant.onnx");
  g_autoptr (SedpNnModel) m3 = sedp_nn_model_load (path3, &error);
  if (m3 == NULL)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m3);
  const SedpNnNode *cn = &m3->nodes[2];
  CU_ASSERT_STRING_EQUAL (cn->name, "");
  const SedpNnAttr *v = sedp_nn_node_attr (cn, "value");
  CU_ASSERT_PTR_NOT_NULL_FATAL (v);
  CU_ASSERT_EQUAL (v->type, SEDP_NN_ATTR_TENSOR);
  CU_ASSERT_EQUAL (v->t->dtype, SEDP_NN_INT64);
  CU_ASSERT (memcmp (v->t->data, cvals, sizeof cvals) == 0);
  CU_ASSERT_EQUAL (sedp_nn_node_attr (cn, "legacy_untyped_int")->type, SEDP_NN_ATTR_INT);
  CU_ASSERT_EQUAL (sedp_nn_node_attr (cn, "legacy_untyped_int")->i, 5);
  const SedpNnAttr *s = sedp_nn_node_attr (cn, "names");
  CU_ASSERT_EQUAL_FATAL (s->n_strings, 2);
  CU_ASSERT_STRING_EQUAL (s->strings[0], "ab");
  CU_ASSERT_EQUAL ((int) sedp_nn_node_attr (cn, "body")->type, 5);
}

typedef void (*Mutate) (Tiny *t);

static void mut_neg_dim (Tiny *t) { t->w_dims[1] = -2; }
static void mut_neg_input_dim (Tiny *t) { t->x_dims[1].dim_value = -3; }
static void
mut_huge_dims (Tiny *t)
{
  t->w_dims[0] = (gint64) 1 << 40;
  t->w.has_raw_data = FALSE;
}
static void
mut_overflow_dims (Tiny *t)
{
  t->w_dims[0] = t->w_dims[1] = t->w_dims[2] = (gint64) 1 << 40;
  t->w.n_dims = 3;
}
static void mut_raw_mismatch (Tiny *t) { t->w.raw_data.len = 31; }
static void mut_dangling (Tiny *t) { t->relu_in[0] = "nope"; }
static void mut_dup_output (Tiny *t) { t->relu_out[0] = "h"; }
static void mut_dup_input_def (Tiny *t) { t->mm_out[0] = "x"; }
static void
mut_dup_initializer (Tiny *t)
{
  t->inits[1] = &t->w;
  t->graph.n_initializer = 2;
}
static void mut_opset0 (Tiny *t) { t->opset.version = 0; }
static void mut_no_default_opset (Tiny *t) { t->opset.domain = "com.microsoft"; }
static void mut_ir2 (Tiny *t) { t->model.ir_version = 2; }
static void mut_no_ir (Tiny *t) { t->model.has_ir_version = FALSE; }
static void
mut_external (Tiny *t)
{
  sedp__onnx__string_string_entry_proto__init (&t->ext);
  t->ext.key = "location";
  t->ext.value = "weights.bin";
  t->exts[0] = &t->ext;
  t->w.n_external_data = 1;
  t->w.external_data = t->exts;
  t->w.has_data_location = TRUE;
  t->w.data_location = 1;
  t->w.has_raw_data = FALSE;
}
static void mut_no_graph (Tiny *t) { t->model.graph = NULL; }
static void mut_no_nodes (Tiny *t) { t->graph.n_node = 0; }
static void mut_no_outputs (Tiny *t) { t->graph.n_output = 0; }
static void
mut_cycle (Tiny *t)
{
  t->mm_in[0] = "y"; /* MatMul(y, W) → h → Relu → y */
}
static void mut_output_undefined (Tiny *t) { t->y.name = "z"; }
static void mut_float16 (Tiny *t) { t->w.data_type = 10; }
static void mut_no_dtype (Tiny *t) { t->w.has_data_type = FALSE; }
static void
mut_rank9 (Tiny *t)
{
  for (int k = 2; k < 9; k++) {
    t->x_dims[k].value_case = SEDP__ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    t->x_dims[k].dim_value = 1;
  }
  t->x_shape.n_dim = 9;
}
static void
mut_unknown_attr_type (Tiny *t)
{
  t->attr.name = "alpha";
  t->attr.has_type = TRUE;
  t->attr.type = 99;
  t->relu.n_attribute = 1;
  t->relu.attribute = t->attrs;
}
static void
mut_dup_attr (Tiny *t)
{
  t->attr.name = "alpha";
  t->attr.has_type = TRUE;
  t->attr.type = SEDP_NN_ATTR_FLOAT;
  t->attr.has_f = TRUE;
  t->attrs[1] = &t->attr;
  t->relu.n_attribute = 2;
  t->relu.attribute = t->attrs;
}
static void
mut_tensor_attr_without_tensor (Tiny *t)
{
  t->attr.name = "value";
  t->attr.has_type = TRUE;
  t->attr.type = SEDP_NN_ATTR_TENSOR;
  t->relu.n_attribute = 1;
  t->relu.attribute = t->attrs;
}
static void mut_no_op_type (Tiny *t) { t->relu.op_type = NULL; }
static void mut_input_no_type (Tiny *t) { t->x.type = NULL; }
static void mut_unnamed_initializer (Tiny *t) { t->w.name = NULL; }

static void
test_malformed (void)
{
  static const struct {
    const char *file;
    Mutate mutate;
    int code;
    const char *needle;
  } cases[] = {
    {"neg-dim.onnx", mut_neg_dim, SEDP_NN_ERROR_INVALID, "initializer 'W' has a negative dimension"},
    {"neg-input-dim.onnx", mut_neg_input_dim, SEDP_NN_ERROR_INVALID, "graph input 'x' has a negative dimension"},
    {"huge-dims.onnx", mut_huge_dims, SEDP_NN_ERROR_INVALID, "initializer 'W' has no data, but shape [1099511627776, 2]"},
    {"overflow-dims.onnx", mut_overflow_dims, SEDP_NN_ERROR_INVALID, "too large"},
    {"raw-mismatch.onnx", mut_raw_mismatch, SEDP_NN_ERROR_INVALID, "initializer 'W' has 31 bytes of raw_data, but shape [4, 2] of float needs 32 bytes"},
    {"dangling.onnx", mut_dangling, SEDP_NN_ERROR_INVALID, "node 'relu' (Relu) reads 'nope', which no initializer, graph input or node defines"},
    {"dup-output.onnx", mut_dup_output, SEDP_NN_ERROR_INVALID, "node 'relu' (Relu) defines 'h', which node 'mm' (MatMul) already defines"},
    {"dup-input-def.onnx", mut_dup_input_def, SEDP_NN_ERROR_INVALID, "node 'mm' (MatMul) defines 'x', which a graph input already defines"},
    {"dup-initializer.onnx", mut_dup_initializer, SEDP_NN_ERROR_INVALID, "initializer 'W' is defined twice"},
    {"opset0.onnx", mut_opset0, SEDP_NN_ERROR_INVALID, "opset 0 is not an ONNX opset"},
    {"no-default-opset.onnx", mut_no_default_opset, SEDP_NN_ERROR_INVALID, "no opset_import for the default ONNX domain"},
    {"ir2.onnx", mut_ir2, SEDP_NN_ERROR_UNSUPPORTED, "IR version 2 is not supported"},
    {"no-ir.onnx", mut_no_ir, SEDP_NN_ERROR_INVALID, "no ONNX IR version"},
    {"external-data.onnx", mut_external, SEDP_NN_ERROR_UNSUPPORTED, "initializer 'W' keeps its data in an external file"},
    {"no-graph.onnx", mut_no_graph, SEDP_NN_ERROR_INVALID, "the model has no graph"},
    {"no-nodes.onnx", mut_no_nodes, SEDP_NN_ERROR_INVALID, "the graph has no nodes"},
    {"no-outputs.onnx", mut_no_outputs, SEDP_NN_ERROR_INVALID, "the graph has no outputs"},
    {"cycle.onnx", mut_cycle, SEDP_NN_ERROR_INVALID, "the graph has a cycle (through node '"},
    {"output-undefined.onnx", mut_output_undefined, SEDP_NN_ERROR_INVALID, "graph output 'z' is not defined"},
    {"float16.onnx", mut_float16, SEDP_NN_ERROR_UNSUPPORTED, "initializer 'W' has element type float16"},
    {"no-dtype.onnx", mut_no_dtype, SEDP_NN_ERROR_INVALID, "initializer 'W' has no element type"},
    {"rank9.onnx", mut_rank9, SEDP_NN_ERROR_UNSUPPORTED, "graph input 'x' has rank 9"},
    {"unknown-attr-type.onnx", mut_unknown_attr_type, SEDP_NN_ERROR_INVALID, "attribute 'alpha' of node 'relu' (Relu) has an unknown type (99)"},
    {"dup-attr.onnx", mut_dup_attr, SEDP_NN_ERROR_INVALID, "node 'relu' (Relu) has attribute 'alpha' twice"},
    {"tensor-attr-empty.onnx", mut_tensor_attr_without_tensor, SEDP_NN_ERROR_INVALID, "without a tensor"},
    {"no-op-type.onnx", mut_no_op_type, SEDP_NN_ERROR_INVALID, "node 'relu' (?) has no op_type"},
    {"input-no-type.onnx", mut_input_no_type, SEDP_NN_ERROR_INVALID, "graph input 'x' has no type"},
    {"unnamed-initializer.onnx", mut_unnamed_initializer, SEDP_NN_ERROR_INVALID, "initializer #0 has no name"},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    Tiny t;
    tiny_init (&t);
    cases[c].mutate (&t);
    g_autofree char *path = tiny_write (&t, cases[c].file);
    expect_failure (path, cases[c].code, cases[c].needle);
  }
}

/* A model of an old opset loads; it runs when its operators (MatMul, Relu) are defined there as
 * the engine runs them (opset 9), and is refused naming each one that changed since otherwise
 * (Relu before opset 6). */
static void
test_old_opsets (void)
{
  static const struct {
    gint64 opset;
    const char *needle; /* NULL: the check passes */
  } cases[] = {{9, NULL}, {6, "MatMul (9)"}, {5, "MatMul (9), Relu (6)"}};
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    Tiny t;
    tiny_init (&t);
    t.opset.version = cases[c].opset;
    g_autofree char *name = g_strdup_printf ("opset%" G_GINT64_FORMAT ".onnx", cases[c].opset);
    g_autofree char *path = tiny_write (&t, name);
    g_autoptr (GError) error = NULL;
    SedpNnModel *m = sedp_nn_model_load (path, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    gboolean ok = sedp_nn_model_check (m, &error);
    CU_ASSERT_EQUAL (ok, cases[c].needle == NULL);
    if (cases[c].needle) {
      SEDP_ASSERT_ERROR (error, SEDP_NN_ERROR, cases[c].needle, "re-export", "opset 11");
      CU_ASSERT_EQUAL (error ? error->code : -1, SEDP_NN_ERROR_UNSUPPORTED);
    }
    sedp_nn_model_unref (m);
  }
}

/* Wire-level damage: truncation, garbage, empty files, absurd nesting, missing files. */
static void
test_corrupt (void)
{
  Tiny t;
  tiny_init (&t);
  gsize size = sedp__onnx__model_proto__get_packed_size (&t.model);
  g_autofree guint8 *buf = g_malloc (size);
  sedp__onnx__model_proto__pack (&t.model, buf);

  g_autofree char *trunc = fixture_path ("truncated.onnx");
  sedp_test_write_file (trunc, buf, size - 7);
  expect_failure (trunc, SEDP_NN_ERROR_CORRUPT, "truncated or corrupt protobuf");

  g_autofree char *garbage = fixture_path ("garbage.onnx");
  const char text[] = "this is not an ONNX model, only some text.\n";
  sedp_test_write_file (garbage, text, sizeof text - 1);
  expect_failure (garbage, SEDP_NN_ERROR_CORRUPT, "truncated or corrupt protobuf");

  g_autofree char *empty = fixture_path ("empty.onnx");
  sedp_test_write_file (empty, "", 0);
  expect_failure (empty, SEDP_NN_ERROR_CORRUPT, "empty file");

  /* Graph → node → attribute → graph → … 200 levels: refused before protobuf-c recurses. */
  GByteArray *inner = g_byte_array_new ();
  for (int level = 0; level < 200; level++) {
    static const guint8 tags[3] = {(6 << 3) | 2, (5 << 3) | 2, (1 << 3) | 2};
    for (int k = 0; k < 3; k++) {
      GByteArray *outer = g_byte_array_new ();
      guint8 hdr[12];
      gsize n = 0;
      hdr[n++] = tags[k];
      guint64 len = inner->len;
      do {
        hdr[n++] = (guint8) ((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
        len >>= 7;
      } while (len);
      g_byte_array_append (outer, hdr, (guint) n);
      g_byte_array_append (outer, inner->data, inner->len);
      g_byte_array_unref (inner);
      inner = outer;
    }
  }
  /* inner is a GraphProto's body; the model: ir_version 8, graph. */
  GByteArray *model = g_byte_array_new ();
  guint8 head[16] = {(1 << 3) | 0, 8, (7 << 3) | 2};
  gsize n = 3;
  guint64 len = inner->len;
  do {
    head[n++] = (guint8) ((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
    len >>= 7;
  } while (len);
  g_byte_array_append (model, head, (guint) n);
  g_byte_array_append (model, inner->data, inner->len);
  g_autofree char *deep = fixture_path ("nested.onnx");
  sedp_test_write_file (deep, model->data, model->len);
  g_byte_array_unref (inner);
  g_byte_array_unref (model);
  expect_failure (deep, SEDP_NN_ERROR_CORRUPT, "nested more than");

  g_autofree char *missing = fixture_path ("does-not-exist.onnx");
  expect_failure (missing, SEDP_NN_ERROR_IO, "does-not-exist.onnx");
  expect_failure (fixtures, SEDP_NN_ERROR_IO, "fixtures");
}

/* Truncation at every 97th byte and random byte damage: every load either succeeds or fails
 * with an error, never both, never a crash (valgrind and ASan check the memory). */
static void
check_robust (const guint8 *data, gsize size, guint *n_ok, guint *n_failed)
{
  GError *error = NULL;
  SedpNnModel *m = sedp_nn_model_load_data (data, size, "damaged", &error);
  if (m) {
    CU_ASSERT_PTR_NULL (error);
    (*n_ok)++;
    sedp_nn_model_unref (m);
  } else {
    CU_ASSERT_PTR_NOT_NULL (error);
    if (error) {
      CU_ASSERT_EQUAL (error->domain, SEDP_NN_ERROR);
      CU_ASSERT (error->message != NULL && g_str_has_prefix (error->message, "damaged: "));
    }
    (*n_failed)++;
  }
  g_clear_error (&error);
}

static void
test_robustness (void)
{
  static const char *const archs[] = {"mlp", "mmoe"};
  for (guint a = 0; a < G_N_ELEMENTS (archs); a++) {
    SedpNnSynthOptions o;
    sedp_nn_synth_options_init (&o, "small", NULL);
    o.rows = 20; /* a smaller file: more of it is structure, not weights */
    g_autoptr (GError) error = NULL;
    g_autoptr (SedpNnModel) m = sedp_nn_synth (archs[a], 5, &o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    g_autofree char *name = g_strdup_printf ("robust-%s.onnx", archs[a]);
    g_autofree char *path = tmp_path (name);
    CU_ASSERT_FATAL (sedp_nn_model_save (m, path, &error));
    gsize size;
    g_autofree guint8 *data = read_file (path, &size);
    guint n_ok = 0, n_failed = 0;
    /* Truncated copies (exact-size buffers, so that reading past the end is caught). */
    for (gsize cut = 0; cut < size; cut += 97) {
      guint8 *copy = g_memdup2 (data, cut ? cut : 1);
      check_robust (copy, cut, &n_ok, &n_failed);
      g_free (copy);
    }
    CU_ASSERT (n_failed >= size / 97); /* every strict prefix … */
    /* Damaged copies: 1 to 4 random bytes replaced. */
    GRand *rand = g_rand_new_with_seed (1234 + a);
    guint rounds = g_getenv ("SEDP_VALGRIND") ? 150 : 1500;
    guint8 *copy = g_malloc (size);
    for (guint r = 0; r < rounds; r++) {
      memcpy (copy, data, size);
      guint flips = 1 + g_rand_int_range (rand, 0, 4);
      for (guint f = 0; f < flips; f++) {
        gsize at = (gsize) g_rand_int_range (rand, 0, (gint32) size);
        if (g_rand_boolean (rand))
          copy[at] ^= (guint8) (1u << g_rand_int_range (rand, 0, 8));
        else
          copy[at] = (guint8) g_rand_int_range (rand, 0, 256);
      }
      check_robust (copy, size, &n_ok, &n_failed);
    }
    g_free (copy);
    g_rand_free (rand);
    CU_ASSERT (n_ok > 0);
    CU_ASSERT (n_failed > 0);
  }
}

/* ---- sedp model ---- */

/* Runs sedp with the NULL-terminated arguments. */
#define spawn_sedp(r, ...) sedp_test_spawn ((r), NULL, __VA_ARGS__)

static void
assert_run (const SedpTestRun *r, int status, const char *out_needle, const char *err_needle)
{
  if (r->status != status)
    fprintf (stderr, "\n  exit %d (expected %d)\n  stdout: %s\n  stderr: %s\n", r->status, status,
             r->out, r->err);
  CU_ASSERT_EQUAL (r->status, status);
  if (out_needle && strstr (r->out, out_needle) == NULL) {
    fprintf (stderr, "\n  stdout lacks '%s':\n%s\n", out_needle, r->out);
    CU_FAIL ("stdout");
  }
  if (err_needle && strstr (r->err, err_needle) == NULL) {
    fprintf (stderr, "\n  stderr lacks '%s':\n%s\n", err_needle, r->err);
    CU_FAIL ("stderr");
  }
}

static void
test_cli_synth_info (void)
{
  g_autofree char *path = tmp_path ("cli-dlrm.onnx");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "model", "synth", "--arch", "dlrm", "--seed", "3", "--slots", "3", "--dim", "4",
              "--hidden", "8,4", "-o", path, NULL);
  assert_run (&r, 0, "wrote", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL (m->n_inputs, 4);
  /* The same as the library writes. */
  SedpNnSynthOptions o;
  sedp_nn_synth_options_init (&o, "small", "dlrm");
  o.slots = 3;
  o.dim = 4;
  o.n_hidden = 2;
  o.hidden[0] = 8;
  o.hidden[1] = 4;
  g_autoptr (SedpNnModel) lib = sedp_nn_synth ("dlrm", 3, &o, &error);
  assert_models_equal (lib, m);

  g_auto (SedpTestRun) info;
  spawn_sedp (&info, "model", "info", path, NULL);
  assert_run (&info, 0, "opset:       17", NULL);
  CU_ASSERT_PTR_NOT_NULL (strstr (info.out, "slot_2"));
  CU_ASSERT_PTR_NOT_NULL (strstr (info.out, "[batch, 3]"));
  CU_ASSERT_PTR_NOT_NULL (strstr (info.out, "Transpose"));
  CU_ASSERT_PTR_NOT_NULL (strstr (info.out, "parameters:"));
  CU_ASSERT_PTR_NOT_NULL (strstr (info.out, "flops/row:"));

  g_auto (SedpTestRun) help;
  spawn_sedp (&help, "model", "synth", "--help", NULL);
  assert_run (&help, 0, "--arch", NULL);
  g_auto (SedpTestRun) mhelp;
  spawn_sedp (&mhelp, "model", "--help", NULL);
  assert_run (&mhelp, 0, "bench", NULL);
}

/* The new options on the command line write what the library writes. */
static void
test_cli_synth_multi (void)
{
  g_autofree char *wpath = tmp_path ("cli-wdl.onnx");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "model", "synth", "--arch", "wdl", "--crosses", "3", "--slots", "2", "-o", wpath,
              NULL);
  assert_run (&r, 0, "wrote", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) w = sedp_nn_model_load (wpath, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (w);
  SedpNnSynthOptions o;
  sedp_nn_synth_options_init (&o, "small", "wdl");
  o.crosses = 3;
  o.slots = 2;
  g_autoptr (SedpNnModel) wlib = sedp_nn_synth ("wdl", 1, &o, &error);
  CU_ASSERT_EQUAL (w->n_inputs, 1 + 2 + 3);
  assert_models_equal (wlib, w);

  g_autofree char *ppath = tmp_path ("cli-ple.onnx");
  g_auto (SedpTestRun) rp;
  spawn_sedp (&rp, "model", "synth", "--arch", "ple", "--levels", "3", "--task-experts", "1",
              "--shared-experts", "3", "--tower", "5", "--seed", "4", "-o", ppath, NULL);
  assert_run (&rp, 0, "wrote", NULL);
  g_autoptr (SedpNnModel) p = sedp_nn_model_load (ppath, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  sedp_nn_synth_options_init (&o, "small", "ple");
  o.levels = 3;
  o.task_experts = 1;
  o.shared_experts = 3;
  o.tower = 5;
  g_autoptr (SedpNnModel) plib = sedp_nn_synth ("ple", 4, &o, &error);
  assert_models_equal (plib, p);

  g_autofree char *dpath = tmp_path ("cli-dcnv2.onnx");
  g_auto (SedpTestRun) rd;
  spawn_sedp (&rd, "model", "synth", "--arch", "dcnv2", "--preset", "realistic", "--cross-rank",
              "7", "--rows", "10", "-o", dpath, NULL);
  assert_run (&rd, 0, "wrote", NULL);
  g_autoptr (SedpNnModel) d = sedp_nn_model_load (dpath, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  const SedpNnTensor *u = sedp_nn_model_get_initializer (d, "cross.2.U.weight");
  CU_ASSERT_PTR_NOT_NULL_FATAL (u);
  CU_ASSERT_EQUAL (u->dims[0], 13 + 26 * 32);
  CU_ASSERT_EQUAL (u->dims[1], 7);

  g_autofree char *out = tmp_path ("x.onnx");
  g_auto (SedpTestRun) bad;
  spawn_sedp (&bad, "model", "synth", "--arch", "dcnv2", "--cross-rank", "0", "-o", out, NULL);
  assert_run (&bad, 2, NULL, "cross_rank must be between");
  g_auto (SedpTestRun) bad2;
  spawn_sedp (&bad2, "model", "synth", "--arch", "ple", "--levels", "-2", "-o", out, NULL);
  assert_run (&bad2, 2, NULL, "--levels must not be negative");
  g_auto (SedpTestRun) bad3;
  spawn_sedp (&bad3, "model", "synth", "--arch", "dssm", "--slots", "1", "-o", out, NULL);
  assert_run (&bad3, 2, NULL, "slots must be between 2");
}

static void
test_cli_errors (void)
{
  g_autofree char *out = tmp_path ("x.onnx");
  struct {
    const char *args[10];
    int status;
    const char *needle;
  } cases[] = {
    {{"model", NULL}, 2, "Usage: sedp model"},
    {{"model", "frobnicate", NULL}, 2, "unknown command 'frobnicate'"},
    {{"model", "synth", "--arch", "resnet", "-o", out, NULL}, 2, "unknown --arch 'resnet'"},
    {{"model", "synth", "--arch", "mlp", NULL}, 2, "missing -o"},
    {{"model", "synth", "-o", out, NULL}, 2, "missing --arch"},
    {{"model", "synth", "--arch", "mlp", "--preset", "xl", "-o", out, NULL}, 2, "unknown --preset 'xl'"},
    {{"model", "synth", "--arch", "mlp", "--hidden", "8,x", "-o", out, NULL}, 2, "--hidden wants"},
    {{"model", "synth", "--arch", "mlp", "--slots", "0", "-o", out, NULL}, 2, "slots must be between"},
    {{"model", "synth", "--arch", "mlp", "--seed", "-4", "-o", out, NULL}, 2, "--seed wants"},
    {{"model", "synth", "--arch", "din", "--seq-len", "0", "-o", out, NULL}, 2, "seq_len must be between"},
    {{"model", "synth", "--arch", "bst", "--heads", "3", "-o", out, NULL}, 2, "heads (3) must divide dim (8)"},
    {{"model", "synth", "--arch", "dien", "--att-hidden", "8,0", "-o", out, NULL}, 2, "--att-hidden wants"},
    {{"model", "info", NULL}, 2, "expected one MODEL.onnx"},
    {{"model", "eval", out, NULL}, 2, "missing -o OUTDIR"},
    {{"model", "bench", out, "--batch", "0", NULL}, 2, "--batch must be"},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_auto (SedpTestRun) r;
    sedp_test_spawn_args (&r, NULL, cases[c].args);
    assert_run (&r, cases[c].status, NULL, cases[c].needle);
  }
  /* Files that do not load: one line naming the file and the reason, exit 1. */
  g_autofree char *garbage = fixture_path ("cli-garbage.onnx");
  sedp_test_write_file (garbage, "garbage!", 8);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "model", "info", garbage, NULL);
  assert_run (&r, 1, NULL, "sedp model info: ");
  CU_ASSERT_PTR_NOT_NULL (strstr (r.err, "cli-garbage.onnx"));
  CU_ASSERT_PTR_NOT_NULL (strstr (r.err, "corrupt"));
  CU_ASSERT_EQUAL (strchr (r.err, '\n'), r.err + strlen (r.err) - 1);
}

static void
test_cli_eval (void)
{
  g_autofree char *path = tmp_path ("cli-mmoe.onnx");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "model", "synth", "--arch", "mmoe", "--seed", "2", "-o", path, NULL);
  assert_run (&r, 0, NULL, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) m = sedp_nn_model_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);

  /* Inputs for 5 rows, as ONNX test data. */
  const gint64 batch = 5;
  g_autoptr (GPtrArray) files = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  for (guint k = 0; k < m->n_inputs; k++) {
    gint64 dims[2] = {batch, m->inputs[k].dims[1]};
    SedpNnTensor *t = sedp_nn_tensor_new (m->inputs[k].name, m->inputs[k].dtype, 2, dims);
    for (gint64 i = 0; i < dims[0] * dims[1]; i++) {
      if (t->dtype == SEDP_NN_FLOAT)
        ((float *) t->data)[i] = (float) ((i * 7 + k) % 11) / 11.0f - 0.5f;
      else
        ((gint64 *) t->data)[i] = (i * 13 + k) % 100;
    }
    g_autofree char *name = g_strdup_printf ("input_%u.pb", k);
    char *file = tmp_path (name);
    CU_ASSERT_FATAL (sedp_nn_tensor_save (t, file, &error));
    g_ptr_array_add (files, file);
    g_ptr_array_add (tensors, t);
  }
  g_autofree char *outdir = tmp_path ("eval-out/nested");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "model");
  g_ptr_array_add (argv, (gpointer) "eval");
  g_ptr_array_add (argv, (gpointer) path);
  for (guint k = 0; k < files->len; k++) {
    g_ptr_array_add (argv, (gpointer) "-i");
    g_ptr_array_add (argv, files->pdata[k]);
  }
  g_ptr_array_add (argv, (gpointer) "-o");
  g_ptr_array_add (argv, outdir);
  g_ptr_array_add (argv, NULL);
  g_auto (SedpTestRun) ev;
  sedp_test_spawn_args (&ev, NULL, (const char *const *) argv->pdata);
  assert_run (&ev, 0, NULL, NULL);

  /* The same as a plan run in this process. */
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autofree SedpNnTensor *in = g_new0 (SedpNnTensor, m->n_inputs);
  for (guint k = 0; k < m->n_inputs; k++)
    in[k] = *(SedpNnTensor *) tensors->pdata[k];
  SedpNnTensor out[2];
  CU_ASSERT_FATAL (sedp_nn_plan_run (plan, m->n_inputs, in, 2, out, &error));
  for (guint k = 0; k < 2; k++) {
    g_autofree char *name = g_strdup_printf ("output_%u.pb", k);
    g_autofree char *file = g_build_filename (outdir, name, NULL);
    g_autoptr (SedpNnTensor) t = sedp_nn_tensor_load (file, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (t);
    CU_ASSERT_STRING_EQUAL (t->name, k == 0 ? "ctr" : "cvr");
    CU_ASSERT_EQUAL (t->dtype, SEDP_NN_FLOAT);
    CU_ASSERT_EQUAL_FATAL (t->rank, 2);
    CU_ASSERT_EQUAL (t->dims[0], batch);
    CU_ASSERT_EQUAL (t->dims[1], 1);
    /* Not bit for bit: under valgrind OpenBLAS may pick other kernels than in the child. */
    for (gint64 i = 0; i < batch; i++) {
      float v = ((float *) t->data)[i], w = ((float *) out[k].data)[i];
      CU_ASSERT (fabsf (v - w) <= 1e-5f * fabsf (w) + 1e-6f);
      CU_ASSERT (v > 0.0f && v < 1.0f);
    }
  }
  sedp_nn_plan_free (plan);

  /* Wrong input count; an input of the wrong type. */
  g_auto (SedpTestRun) few;
  spawn_sedp (&few, "model", "eval", path, "-i", files->pdata[0], "-o", outdir, NULL);
  assert_run (&few, 2, NULL, "takes 5 inputs, 1 given");
  g_autoptr (GPtrArray) argv2 = g_ptr_array_copy (argv, NULL, NULL);
  argv2->pdata[4] = files->pdata[1]; /* slot_0 (int64) where dense (float) goes */
  g_auto (SedpTestRun) bad;
  sedp_test_spawn_args (&bad, NULL, (const char *const *) argv2->pdata);
  assert_run (&bad, 1, NULL, "sedp model eval: ");
  CU_ASSERT_PTR_NOT_NULL (strstr (bad.err, "dense"));
}

static void
test_cli_bench (void)
{
  g_autofree char *path = tmp_path ("cli-deepfm.onnx");
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, "model", "synth", "--arch", "deepfm", "-o", path, NULL);
  assert_run (&r, 0, NULL, NULL);
  g_auto (SedpTestRun) b;
  spawn_sedp (&b, "model", "bench", path, "--batch", "16", "--threads", "2", "--seconds", "0.2",
              NULL);
  assert_run (&b, 0, "RESULT rows_per_s=", NULL);
  CU_ASSERT_PTR_NOT_NULL (strstr (b.out, "RESULT gflops="));
  const char *p = strstr (b.out, "rows_per_s=");
  CU_ASSERT (p && g_ascii_strtod (p + 11, NULL) > 0);
}

/* ---- main ---- */

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  fixtures = g_build_filename (SEDP_TEST_BUILDDIR, "nn-io", "fixtures", NULL);
  g_mkdir_with_parents (fixtures, 0777);
  tmpdir = g_dir_make_tmp ("sedp-nn-io-XXXXXX", NULL);
  g_assert (tmpdir);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-io", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
    {"build API", test_build_api},
    {"synth: save/load round trip, every arch", test_synth_round_trip},
    {"synth: inputs, outputs and ops", test_synth_shape},
    {"synth: deterministic in the seed", test_synth_deterministic},
    {"synth: --dense-seed: the same tables, other dense weights", test_synth_dense_seed},
    {"synth: attribute forms of older opsets", test_synth_opsets},
    {"synth: options", test_synth_options},
    {"synth: din, dien, bst: inputs, ops, bytes, opsets", test_synth_seq_shape},
    {"synth: din, dien, bst: options refused", test_synth_seq_options},
    {"synth: realistic preset", test_synth_realistic},
    {"synth: wdl, dcnv2, dssm, esmm, ple: inputs, outputs, ops, weights", test_synth_multi_shape},
    {"synth: wdl, dcnv2, dssm, esmm, ple: options and presets", test_synth_multi_options},
    {"synth: wdl, dcnv2, dssm, esmm, ple: the bytes for (arch, seed)", test_synth_multi_bytes},
    {"cli: synth wdl, dcnv2, ple options", test_cli_synth_multi},
    {"tensor .pb round trip", test_tensor_round_trip},
    {"tensor .pb typed fields", test_tensor_typed_fields},
    {"tensor .pb errors", test_tensor_errors},
    {"reader: valid variants", test_tiny_valid},
    {"reader: malformed models", test_malformed},
    {"reader: old opsets", test_old_opsets},
    {"reader: corrupt files", test_corrupt},
    {"reader: truncation and bit flips", test_robustness},
    {"cli: synth and info", test_cli_synth_info},
    {"cli: errors", test_cli_errors},
    {"cli: eval", test_cli_eval},
    {"cli: bench", test_cli_bench},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  int status = sedp_test_run ();
  sedp_test_remove_tree (tmpdir);
  g_free (tmpdir);
  g_free (fixtures);
  return status;
}
