/* sedp fuzz — writes the generated seeds of the binary corpora (docs/fuzzing.md):
 *   OUTDIR/protobuf/    PredictRequests in protobuf, valid and odd (unpacked lists, unknown fields,
 *                       overlong varints, maps without key or value, truncations)
 *   OUTDIR/requestlog/  protobuf request logs (length-delimited records), valid and corrupt
 *   OUTDIR/onnx/        tiny models: each synthetic architecture, and one graph per operator
 *   OUTDIR/cube/        small cubes packed as fuzz-cube.c reads them
 * Usage: fuzz-gen-seeds OUTDIR (then copy what is wanted into tests/fuzz/corpus/). The text
 * corpora (json, pipeline, redis, http, JSON lines) are written by hand. */
#include "cube/cube-format.h"
#include "io/request-log.h"
#include "nn/synth.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *outdir;

static void
save (const char *target, const char *name, const void *data, gsize size)
{
  g_autofree char *dir = g_build_filename (outdir, target, NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  if (g_mkdir_with_parents (dir, 0755) != 0 ||
      !g_file_set_contents (path, data, (gssize) size, &error)) {
    fprintf (stderr, "gen-seeds: cannot write %s\n", path);
    exit (1);
  }
}

/* ---- protobuf wire ---------------------------------------------------------------------- */

enum { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };

static void
put_varint (GByteArray *b, guint64 v)
{
  do {
    guint8 byte = (guint8) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    g_byte_array_append (b, &byte, 1);
    v >>= 7;
  } while (v);
}

static void
put_tag (GByteArray *b, guint field, guint wire)
{
  put_varint (b, (guint64) field << 3 | wire);
}

static void
put_bytes (GByteArray *b, guint field, const void *data, gsize size)
{
  put_tag (b, field, LEN);
  put_varint (b, size);
  g_byte_array_append (b, data, (guint) size);
}

/* Appends @msg as field @field and frees it. */
static void
put_msg (GByteArray *b, guint field, GByteArray *msg)
{
  put_bytes (b, field, msg->data, msg->len);
  g_byte_array_unref (msg);
}

static void
put_str (GByteArray *b, guint field, const char *s)
{
  put_bytes (b, field, s, strlen (s));
}

static void
put_float (GByteArray *b, guint field, float f)
{
  guint32 u;
  memcpy (&u, &f, 4);
  u = GUINT32_TO_LE (u);
  put_tag (b, field, I32);
  g_byte_array_append (b, (const guint8 *) &u, 4);
}

static void
put_uint (GByteArray *b, guint field, guint64 v)
{
  put_tag (b, field, VARINT);
  put_varint (b, v);
}

/* Features (sedp.serving.Feature). */
static GByteArray *
f_int (gint64 v)
{
  GByteArray *f = g_byte_array_new ();
  put_uint (f, 1, (guint64) v);
  return f;
}

static GByteArray *
f_float (float v)
{
  GByteArray *f = g_byte_array_new ();
  put_float (f, 2, v);
  return f;
}

static GByteArray *
f_string (const char *s)
{
  GByteArray *f = g_byte_array_new ();
  put_str (f, 3, s);
  return f;
}

/* An IdList (field 4), packed or one varint per id. */
static GByteArray *
f_ids (const guint64 *ids, guint n, gboolean packed)
{
  GByteArray *list = g_byte_array_new ();
  if (packed) {
    GByteArray *p = g_byte_array_new ();
    for (guint k = 0; k < n; k++)
      put_varint (p, ids[k]);
    put_msg (list, 1, p);
  } else {
    for (guint k = 0; k < n; k++)
      put_uint (list, 1, ids[k]);
  }
  GByteArray *f = g_byte_array_new ();
  put_msg (f, 4, list);
  return f;
}

/* A FloatList (field 5), packed or one fixed32 per value. */
static GByteArray *
f_floats (const float *v, guint n, gboolean packed)
{
  GByteArray *list = g_byte_array_new ();
  if (packed) {
    GByteArray *p = g_byte_array_new ();
    for (guint k = 0; k < n; k++) {
      guint32 u;
      memcpy (&u, &v[k], 4);
      u = GUINT32_TO_LE (u);
      g_byte_array_append (p, (const guint8 *) &u, 4);
    }
    put_msg (list, 1, p);
  } else {
    for (guint k = 0; k < n; k++)
      put_float (list, 1, v[k]);
  }
  GByteArray *f = g_byte_array_new ();
  put_msg (f, 5, list);
  return f;
}

/* A map entry (key = 1, value = 2) as field 2 of a User or Item; @key or @value may be NULL. */
static void
put_feature (GByteArray *b, const char *key, GByteArray *value)
{
  GByteArray *e = g_byte_array_new ();
  if (key)
    put_str (e, 1, key);
  if (value)
    put_msg (e, 2, value);
  put_msg (b, 2, e);
}

static GByteArray *
item (guint64 id, gboolean has_escore, float escore)
{
  GByteArray *it = g_byte_array_new ();
  put_uint (it, 1, id);
  if (has_escore)
    put_float (it, 3, escore);
  return it;
}

static void
save_msg (const char *target, const char *name, GByteArray *msg)
{
  save (target, name, msg->data, msg->len);
}

/* The request of docs/protocol.md's JSON example. */
static GByteArray *
doc_request (void)
{
  GByteArray *r = g_byte_array_new ();
  put_str (r, 1, "r1");
  GByteArray *user = g_byte_array_new ();
  put_uint (user, 1, 42);
  put_feature (user, "age", f_int (31));
  guint64 clicked[] = {17, 3, G_MAXUINT64};
  put_feature (user, "clicked", f_ids (clicked, 3, TRUE));
  float emb[] = {0.5f, -1.25f};
  put_feature (user, "embedding", f_floats (emb, 2, TRUE));
  put_msg (r, 2, user);
  GByteArray *a = item (1001, TRUE, 0.8f);
  put_feature (a, "ctr", f_float (0.031f));
  put_feature (a, "cat", f_string ("shoes"));
  put_msg (r, 3, a);
  GByteArray *b = item (1002, TRUE, 0.3f);
  put_feature (b, "ctr", f_float (0.012f));
  put_feature (b, "cat", f_string ("hats"));
  put_msg (r, 3, b);
  put_uint (r, 4, 50);
  put_uint (r, 5, 2);
  return r;
}

static void
gen_protobuf (void)
{
  const char *t = "protobuf";
  g_autoptr (GByteArray) doc = doc_request ();
  save_msg (t, "doc-example", doc);
  save (t, "empty", "", 0);

  g_autoptr (GByteArray) minimal = g_byte_array_new ();
  put_msg (minimal, 3, item (1, FALSE, 0));
  save_msg (t, "minimal", minimal);

  /* Lists written unpacked, as proto2 writers do. */
  g_autoptr (GByteArray) unpacked = g_byte_array_new ();
  GByteArray *it = item (7, TRUE, 1.5f);
  guint64 ids[] = {1, 2, 300, 1u << 31};
  float vals[] = {0.25f, -8, 1e-7f};
  put_feature (it, "ids", f_ids (ids, 4, FALSE));
  put_feature (it, "v", f_floats (vals, 3, FALSE));
  put_msg (unpacked, 3, it);
  save_msg (t, "unpacked-lists", unpacked);

  /* Unknown fields of every wire type, at the top and inside an item and a feature. */
  g_autoptr (GByteArray) unknown = g_byte_array_new ();
  put_uint (unknown, 99, 5);
  put_tag (unknown, 98, I64);
  g_byte_array_append (unknown, (const guint8 *) "\1\2\3\4\5\6\7\10", 8);
  put_str (unknown, 97, "skip me");
  put_tag (unknown, 96, I32);
  g_byte_array_append (unknown, (const guint8 *) "\1\2\3\4", 4);
  GByteArray *it2 = item (9, FALSE, 0);
  put_uint (it2, 15, 1);
  GByteArray *feat = f_int (-1);
  put_str (feat, 9, "unknown");
  put_feature (it2, "neg", feat);
  put_msg (unknown, 3, it2);
  save_msg (t, "unknown-fields", unknown);

  /* Groups (wire types 3 and 4), which proto3 does not have. */
  g_autoptr (GByteArray) group = g_byte_array_new ();
  put_tag (group, 20, SGROUP);
  put_uint (group, 1, 1);
  put_tag (group, 20, EGROUP);
  put_msg (group, 3, item (2, FALSE, 0));
  save_msg (t, "group", group);

  /* Overlong varints: an id in 10 bytes; a varint of 11 bytes. */
  g_autoptr (GByteArray) overlong = g_byte_array_new ();
  GByteArray *it3 = g_byte_array_new ();
  put_tag (it3, 1, VARINT);
  g_byte_array_append (it3, (const guint8 *) "\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00", 10);
  put_msg (overlong, 3, it3);
  save_msg (t, "varint-10-bytes", overlong);
  g_autoptr (GByteArray) too_long = g_byte_array_new ();
  put_tag (too_long, 4, VARINT);
  g_byte_array_append (too_long, (const guint8 *) "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  save_msg (t, "varint-11-bytes", too_long);

  /* Map entries without a key or without a value, a key twice, a oneof set twice. */
  g_autoptr (GByteArray) maps = g_byte_array_new ();
  GByteArray *it4 = item (3, FALSE, 0);
  put_feature (it4, NULL, f_int (1));
  put_feature (it4, "novalue", NULL);
  put_feature (it4, "twice", f_int (1));
  put_feature (it4, "twice", f_float (2));
  GByteArray *both = f_int (5);
  put_float (both, 2, 0.5f);
  put_feature (it4, "oneof", both);
  put_msg (maps, 3, it4);
  save_msg (t, "map-odd", maps);

  /* Features whose kind or width changes between items; ids at the limits. */
  g_autoptr (GByteArray) ragged = g_byte_array_new ();
  float two[] = {1, 2}, one[] = {3};
  GByteArray *r1 = item (1, TRUE, 0.1f), *r2 = item (2, FALSE, 0), *r3 = item (G_MAXUINT64, TRUE, -0.0f);
  put_feature (r1, "v", f_floats (two, 2, TRUE));
  put_feature (r2, "v", f_floats (one, 1, TRUE));
  put_feature (r3, "v", f_int (G_MININT64));
  put_msg (ragged, 3, r1);
  put_msg (ragged, 3, r2);
  put_msg (ragged, 3, r3);
  save_msg (t, "ragged", ragged);

  /* Strings: empty, not UTF-8, with a NUL. */
  g_autoptr (GByteArray) strings = g_byte_array_new ();
  put_bytes (strings, 1, "\xff\xfe", 2);
  GByteArray *it5 = item (4, FALSE, 0);
  put_feature (it5, "", f_string (""));
  GByteArray *nul = g_byte_array_new ();
  put_bytes (nul, 3, "a\0b", 3);
  put_feature (it5, "nul", nul);
  put_msg (strings, 3, it5);
  save_msg (t, "strings-odd", strings);

  /* A deadline over the limit, a top_k past the items, a user without id. */
  g_autoptr (GByteArray) limits = g_byte_array_new ();
  put_uint (limits, 4, 3600001);
  put_uint (limits, 5, G_MAXUINT32);
  GByteArray *user = g_byte_array_new ();
  put_feature (user, "u", f_ids (NULL, 0, TRUE));
  put_msg (limits, 2, user);
  put_msg (limits, 3, item (5, FALSE, 0));
  save_msg (t, "limits", limits);

  /* Many items, a few features each. */
  g_autoptr (GByteArray) many = g_byte_array_new ();
  for (guint k = 0; k < 150; k++) {
    GByteArray *m = item (k, TRUE, (float) k / 150);
    guint64 pair[] = {k, k * 7};
    put_feature (m, "ids", f_ids (pair, 2, TRUE));
    put_feature (m, "x", f_float ((float) k));
    put_msg (many, 3, m);
  }
  save_msg (t, "many-items", many);

  /* Cut short: inside the last item, and a length past the end. */
  save (t, "truncated", doc->data, doc->len - 7);
  g_autoptr (GByteArray) past = g_byte_array_new ();
  put_tag (past, 3, LEN);
  put_varint (past, 1000);
  put_uint (past, 1, 1);
  save_msg (t, "length-past-end", past);
}

/* ---- request logs ---------------------------------------------------------------------- */

static void
gen_requestlog (void)
{
  const char *t = "requestlog";
  g_autoptr (GByteArray) doc = doc_request ();
  g_autoptr (GByteArray) small = g_byte_array_new ();
  put_str (small, 1, "");
  put_msg (small, 3, item (1, FALSE, 0));

  g_autoptr (GByteArray) one = g_byte_array_new ();
  sedp_request_log_append (one, doc->data, doc->len);
  save_msg (t, "log-one", one);

  g_autoptr (GByteArray) three = g_byte_array_new ();
  sedp_request_log_append (three, doc->data, doc->len);
  sedp_request_log_append (three, small->data, small->len);
  sedp_request_log_append (three, doc->data, doc->len);
  save_msg (t, "log-three", three);

  g_autoptr (GByteArray) zero = g_byte_array_new ();
  sedp_request_log_append (zero, small->data, small->len);
  sedp_request_log_append (zero, NULL, 0);
  save_msg (t, "log-zero-length", zero);

  g_autoptr (GByteArray) cut = g_byte_array_new ();
  sedp_request_log_append (cut, doc->data, doc->len);
  save (t, "log-cut", cut->data, cut->len - 3);

  g_autoptr (GByteArray) huge = g_byte_array_new ();
  sedp_request_log_append (huge, small->data, small->len);
  put_varint (huge, ((guint64) 64 << 20) + 1);
  save_msg (t, "log-huge-length", huge);

  g_autoptr (GByteArray) varint = g_byte_array_new ();
  sedp_request_log_append (varint, small->data, small->len);
  g_byte_array_append (varint, (const guint8 *) "\xff\xff", 2);
  save_msg (t, "log-cut-varint", varint);

  g_autoptr (GByteArray) garbage = g_byte_array_new ();
  sedp_request_log_append (garbage, (const guint8 *) "\x1a\x05\x08", 3);
  save_msg (t, "log-bad-message", garbage);
}

/* ---- ONNX ------------------------------------------------------------------------------ */

static void
save_model (SedpNnModel *m, const char *name)
{
  g_autofree char *dir = g_build_filename (outdir, "onnx", NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_mkdir_with_parents (dir, 0755);
  if (!sedp_nn_model_save (m, path, &error)) {
    fprintf (stderr, "gen-seeds: %s\n", error->message);
    exit (1);
  }
  sedp_nn_model_unref (m);
}

static void
gen_synth (void)
{
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++) {
    SedpNnSynthOptions o;
    sedp_nn_synth_options_init (&o, "small", *arch);
    o.slots = 2;
    o.dim = 4;
    o.rows = 6;
    o.ids_per_slot = 2;
    o.n_dense = 3;
    o.n_hidden = 2;
    o.hidden[0] = 6;
    o.hidden[1] = 3;
    o.n_bottom = 1;
    o.bottom[0] = 4;
    o.cross_layers = 1;
    o.experts = 2;
    o.n_expert_hidden = 1;
    o.expert_hidden[0] = 4;
    o.tower = 3;
    g_autoptr (GError) error = NULL;
    SedpNnModel *m = sedp_nn_synth (*arch, 1, &o, &error);
    if (m == NULL) {
      fprintf (stderr, "gen-seeds: synth %s: %s\n", *arch, error->message);
      exit (1);
    }
    g_autofree char *name = g_strdup_printf ("synth-%s.onnx", *arch);
    save_model (m, name);
  }
}

static const char *const batch_param[] = {"N", "N", "N", "N"};

/* A model with input X float [N, 4] (and more inputs by the caller), output Y of unknown shape. */
static SedpNnModel *
op_model (void)
{
  SedpNnModel *m = sedp_nn_model_new (17, "sedp-fuzz-seeds");
  gint64 dims[] = {-1, 4};
  sedp_nn_model_add_input (m, "X", SEDP_NN_FLOAT, 2, dims, batch_param);
  sedp_nn_model_add_output (m, "Y", SEDP_NN_FLOAT, -1, NULL, NULL);
  return m;
}

static void
init_f (SedpNnModel *m, const char *name, int rank, const gint64 *dims, const float *v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, rank, dims);
  memcpy (t->data, v, (gsize) sedp_nn_tensor_numel (t) * sizeof (float));
  sedp_nn_model_add_initializer (m, t);
}

static void
init_i (SedpNnModel *m, const char *name, int rank, const gint64 *dims, const gint64 *v)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_INT64, rank, dims);
  memcpy (t->data, v, (gsize) sedp_nn_tensor_numel (t) * sizeof (gint64));
  sedp_nn_model_add_initializer (m, t);
}

static const char *const x_only[] = {"X", NULL};
static const char *const y_only[] = {"Y", NULL};

/* Y = OP (X) for the elementwise and shape-keeping operators. */
static void
gen_unary (void)
{
  const char *ops[] = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Identity", "Dropout", "Softmax",
                       "Flatten", "Shape"};
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++) {
    SedpNnModel *m = op_model ();
    SedpNnNode *n = sedp_nn_model_add_node (m, ops[k], NULL, x_only, y_only);
    if (strcmp (ops[k], "LeakyRelu") == 0)
      sedp_nn_node_set_attr_float (n, "alpha", 0.1f);
    if (strcmp (ops[k], "Softmax") == 0 || strcmp (ops[k], "Flatten") == 0)
      sedp_nn_node_set_attr_int (n, "axis", 1);
    g_autofree char *name = g_strdup_printf ("op-%s.onnx", ops[k]);
    save_model (m, name);
  }
}

/* Y = OP (X, B) with B an initializer of shape [4] (broadcast). */
static void
gen_binary (void)
{
  const char *ops[] = {"Add", "Sub", "Mul", "Div"};
  const char *const in[] = {"X", "B", NULL};
  gint64 d4[] = {4};
  float b[] = {1, -2, 0.5f, 4};
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++) {
    SedpNnModel *m = op_model ();
    init_f (m, "B", 1, d4, b);
    sedp_nn_model_add_node (m, ops[k], NULL, in, y_only);
    g_autofree char *name = g_strdup_printf ("op-%s.onnx", ops[k]);
    save_model (m, name);
  }
}

static void
gen_gemm (void)
{
  gint64 w_dims[] = {3, 4}, b_dims[] = {3}, mm_dims[] = {4, 3};
  float w[12], bias[] = {0.1f, 0.2f, 0.3f};
  for (guint k = 0; k < 12; k++)
    w[k] = (float) k / 12 - 0.5f;
  SedpNnModel *m = op_model ();
  init_f (m, "W", 2, w_dims, w);
  init_f (m, "C", 1, b_dims, bias);
  const char *const in[] = {"X", "W", "C", NULL};
  SedpNnNode *n = sedp_nn_model_add_node (m, "Gemm", NULL, in, y_only);
  sedp_nn_node_set_attr_int (n, "transB", 1);
  sedp_nn_node_set_attr_float (n, "alpha", 0.5f);
  sedp_nn_node_set_attr_float (n, "beta", 2);
  save_model (m, "op-Gemm.onnx");

  /* MatMul + Add + Relu: the fused form. */
  m = op_model ();
  init_f (m, "W", 2, mm_dims, w);
  init_f (m, "C", 1, b_dims, bias);
  const char *const mm_in[] = {"X", "W", NULL}, *const add_in[] = {"P", "C", NULL};
  const char *const p_out[] = {"P", NULL}, *const q_out[] = {"Q", NULL}, *const q_in[] = {"Q", NULL};
  sedp_nn_model_add_node (m, "MatMul", NULL, mm_in, p_out);
  sedp_nn_model_add_node (m, "Add", NULL, add_in, q_out);
  sedp_nn_model_add_node (m, "Relu", NULL, q_in, y_only);
  save_model (m, "op-MatMul-Add-Relu.onnx");
}

/* Operators whose second input is an int64 constant (shape, axes, indices). */
static void
gen_shape_ops (void)
{
  struct {
    const char *op;
    gint64 values[4];
    guint n;
  } cases[] = {
    {"Reshape", {-1, 2, 2}, 3},
    {"Reshape", {0, -1}, 2},
    {"Unsqueeze", {1}, 1},
    {"Squeeze", {0}, 1},
    {"Expand", {3, 1, 4}, 3},
    {"ReduceSum", {1}, 1},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++) {
    SedpNnModel *m = op_model ();
    gint64 dims[] = {cases[k].n};
    init_i (m, "S", 1, dims, cases[k].values);
    const char *const in[] = {"X", "S", NULL};
    SedpNnNode *n = sedp_nn_model_add_node (m, cases[k].op, NULL, in, y_only);
    if (strcmp (cases[k].op, "ReduceSum") == 0)
      sedp_nn_node_set_attr_int (n, "keepdims", 0);
    g_autofree char *name = g_strdup_printf ("op-%s-%u.onnx", cases[k].op, k);
    save_model (m, name);
  }

  /* Slice X[:, 1:3]. */
  SedpNnModel *m = op_model ();
  gint64 one[] = {1}, starts[] = {1}, ends[] = {3}, axes[] = {1}, steps[] = {1};
  init_i (m, "starts", 1, one, starts);
  init_i (m, "ends", 1, one, ends);
  init_i (m, "axes", 1, one, axes);
  init_i (m, "steps", 1, one, steps);
  const char *const slice_in[] = {"X", "starts", "ends", "axes", "steps", NULL};
  sedp_nn_model_add_node (m, "Slice", NULL, slice_in, y_only);
  save_model (m, "op-Slice.onnx");

  /* Transpose, ReduceMean with axes as an attribute, Concat of X with itself. */
  m = op_model ();
  gint64 perm[] = {1, 0};
  sedp_nn_node_set_attr_ints (sedp_nn_model_add_node (m, "Transpose", NULL, x_only, y_only), "perm",
                              2, perm);
  save_model (m, "op-Transpose.onnx");
  m = sedp_nn_model_new (13, "sedp-fuzz-seeds");
  gint64 xd[] = {-1, 4};
  sedp_nn_model_add_input (m, "X", SEDP_NN_FLOAT, 2, xd, batch_param);
  sedp_nn_model_add_output (m, "Y", SEDP_NN_FLOAT, -1, NULL, NULL);
  sedp_nn_node_set_attr_ints (sedp_nn_model_add_node (m, "ReduceMean", NULL, x_only, y_only),
                              "axes", 1, axes);
  save_model (m, "op-ReduceMean-opset13.onnx");
  m = op_model ();
  const char *const cat_in[] = {"X", "X", NULL};
  sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Concat", NULL, cat_in, y_only), "axis", 1);
  save_model (m, "op-Concat.onnx");
}

/* Gather from an embedding table by int64 ids, Cast, Clip, BatchNormalization, Constant. */
static void
gen_other_ops (void)
{
  SedpNnModel *m = sedp_nn_model_new (17, "sedp-fuzz-seeds");
  gint64 ids_dims[] = {-1, 2}, table_dims[] = {5, 3};
  sedp_nn_model_add_input (m, "ids", SEDP_NN_INT64, 2, ids_dims, batch_param);
  sedp_nn_model_add_output (m, "Y", SEDP_NN_FLOAT, -1, NULL, NULL);
  float table[15];
  for (guint k = 0; k < 15; k++)
    table[k] = (float) k;
  init_f (m, "T", 2, table_dims, table);
  const char *const gather_in[] = {"T", "ids", NULL};
  sedp_nn_model_add_node (m, "Gather", NULL, gather_in, y_only);
  save_model (m, "op-Gather.onnx");

  m = sedp_nn_model_new (17, "sedp-fuzz-seeds");
  sedp_nn_model_add_input (m, "ids", SEDP_NN_INT64, 2, ids_dims, batch_param);
  sedp_nn_model_add_output (m, "Y", SEDP_NN_FLOAT, -1, NULL, NULL);
  const char *const cast_in[] = {"ids", NULL};
  sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Cast", NULL, cast_in, y_only), "to",
                             SEDP_NN_FLOAT);
  save_model (m, "op-Cast.onnx");

  m = op_model ();
  float lo = -0.5f, hi = 0.5f;
  init_f (m, "lo", 0, NULL, &lo);
  init_f (m, "hi", 0, NULL, &hi);
  const char *const clip_in[] = {"X", "lo", "hi", NULL};
  sedp_nn_model_add_node (m, "Clip", NULL, clip_in, y_only);
  save_model (m, "op-Clip.onnx");

  m = op_model ();
  gint64 d4[] = {4};
  float scale[] = {1, 2, 3, 4}, bias[] = {0, 0, 1, 1}, mean[] = {0, 1, 0, 1}, var[] = {1, 1, 2, 2};
  init_f (m, "scale", 1, d4, scale);
  init_f (m, "bias", 1, d4, bias);
  init_f (m, "mean", 1, d4, mean);
  init_f (m, "var", 1, d4, var);
  const char *const bn_in[] = {"X", "scale", "bias", "mean", "var", NULL};
  sedp_nn_node_set_attr_float (sedp_nn_model_add_node (m, "BatchNormalization", NULL, bn_in, y_only),
                               "epsilon", 1e-5f);
  save_model (m, "op-BatchNormalization.onnx");

  m = op_model ();
  SedpNnTensor *value = sedp_nn_tensor_new ("v", SEDP_NN_FLOAT, 1, d4);
  memcpy (value->data, scale, sizeof scale);
  const char *const none[] = {NULL}, *const c_out[] = {"C", NULL};
  sedp_nn_node_set_attr_tensor (sedp_nn_model_add_node (m, "Constant", NULL, none, c_out), "value",
                                value);
  const char *const add_in[] = {"X", "C", NULL};
  sedp_nn_model_add_node (m, "Add", NULL, add_in, y_only);
  save_model (m, "op-Constant.onnx");
}

/* ---- cubes ----------------------------------------------------------------------------- */

#define SEPARATOR "\n--sedp-fuzz-file--\n"

static void
append_file (GString *out, const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *data = NULL;
  gsize size = 0;
  if (!g_file_get_contents (path, &data, &size, NULL)) {
    fprintf (stderr, "gen-seeds: cannot read %s\n", path);
    exit (1);
  }
  g_string_append_len (out, data, (gssize) size);
  g_string_append (out, SEPARATOR);
}

/* Builds a cube of @n keys (@keys, values k + d / 10) and saves it packed, with each flag set. */
static void
gen_cube (const char *name, guint dim, const guint64 *keys, guint n, guint64 block_size)
{
  g_autofree char *tmp = g_dir_make_tmp ("sedp-seeds-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename (tmp, "cube", NULL);
  g_autoptr (GError) error = NULL;
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES] = {1, 2, 3};
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, name, dim, hash_key, block_size, &error);
  g_autofree float *v = g_new (float, dim);
  for (guint k = 0; b && k < n; k++) {
    for (guint d = 0; d < dim; d++)
      v[d] = (float) k + (float) d / 10;
    if (!sedp_cube_builder_add (b, keys[k], v, &error))
      break;
  }
  if (b == NULL || error || !sedp_cube_builder_finish (b, &error)) {
    fprintf (stderr, "gen-seeds: cube %s: %s\n", name, error ? error->message : "?");
    exit (1);
  }
  g_autoptr (GString) files = g_string_new (NULL);
  append_file (files, dir, CUBE_META_FILE);
  append_file (files, dir, CUBE_INDEX_FILE);
  guint n_blocks = 0;
  for (;; n_blocks++) {
    g_autofree char *block = cube_block_name (n_blocks);
    g_autofree char *path = g_build_filename (dir, block, NULL);
    if (!g_file_test (path, G_FILE_TEST_EXISTS))
      break;
    append_file (files, dir, block);
  }
  for (guint flags = 0; flags < 4; flags++) {
    g_autoptr (GString) packed = g_string_new (NULL);
    g_string_append_c (packed, (char) flags);
    g_string_append_len (packed, files->str, (gssize) files->len);
    g_autofree char *file = g_strdup_printf ("%s-%s-%s", name, flags & 1 ? "fixsums" : "asis",
                                             flags & 2 ? "disk" : "memory");
    save ("cube", file, packed->str, packed->len);
  }
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmp);
  if (system (cmd) != 0)
    fprintf (stderr, "gen-seeds: cannot remove %s\n", tmp);
}

static void
gen_cubes (void)
{
  guint64 keys[] = {1, 2, 3, 1000, G_GUINT64_CONSTANT (1) << 63, 0, 0x9E3779B97F4A7C15};
  gen_cube ("blocks", 2, keys, G_N_ELEMENTS (keys), 16); /* 2 values per block: 4 blocks */
  gen_cube ("one", 3, keys, 3, 0);
  gen_cube ("empty", 1, keys, 0, 0);
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  outdir = argv[1];
  gen_protobuf ();
  gen_requestlog ();
  gen_synth ();
  gen_unary ();
  gen_binary ();
  gen_gemm ();
  gen_shape_ops ();
  gen_other_ops ();
  gen_cubes ();
  return 0;
}
