/* sedp tests — `sedp model split` on hand-made models, spawned as a child process: tables of
 * several dims and several tables per id input (one cube per dim under DIR, DIR/d4b for a second
 * table of dim 4 on the same ids), every pooling form (keepdims, a dim-1 lookup squeezed, one id
 * per row, a lookup that is also a graph output) checked for equivalence by looking up the
 * cubes and running the dense model; a DIN-like model (unpooled lookups of one shared table, the
 * id input kept for its mask) checked the same way; and bad input: one clear error naming what is wrong, exit
 * status 1, nothing left behind (no cube, no dense model, no temporary file). The synthetic
 * archs are checked end to end through `sedp run` by test-split.sh. */
#include "cube-test.h"

#include "nn/model.h"
#include "test-spawn.h"

#include <gio/gio.h>
#include <math.h>

#define HASH_HEX "00112233445566778899aabbccddeeff"

/* Runs sedp with the NULL-terminated arguments. */
#define sedp_run(r, ...) sedp_test_spawn ((r), NULL, __VA_ARGS__)

/* ---- building models ---- */

static const char *const batch_param[3] = {"N", NULL, NULL};

static void
add_table (SedpNnModel *m, const char *name, gint64 rows, gint64 dim, double phase)
{
  gint64 dims[2] = {rows, dim};
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, 2, dims);
  for (gint64 k = 0; k < rows * dim; k++)
    ((float *) t->data)[k] = (float) sin ((double) k * 0.37 + phase);
  sedp_nn_model_add_initializer (m, t);
}

static void
add_ids (SedpNnModel *m, const char *name, int rank, gint64 width)
{
  gint64 dims[3] = {-1, width, width};
  sedp_nn_model_add_input (m, name, SEDP_NN_INT64, rank, dims, batch_param);
}

static void
node (SedpNnModel *m, const char *op, const char *name, const char *in0, const char *in1,
      const char *out)
{
  const char *in[3] = {in0, in1, NULL}, *o[2] = {out, NULL};
  sedp_nn_model_add_node (m, op, name, in, o);
}

/* A one-element int64 initializer named @name (once). */
static const char *
axes_init (SedpNnModel *m, const char *name, gint64 axis)
{
  if (sedp_nn_model_get_initializer (m, name) == NULL) {
    gint64 n1 = 1;
    SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_INT64, 1, &n1);
    *(gint64 *) t->data = axis;
    sedp_nn_model_add_initializer (m, t);
  }
  return name;
}

/* @op over @axis with @keepdims, or a Squeeze/Unsqueeze of @axis: the axes an input from
 * @since on, an attribute before. */
static void
axis_node (SedpNnModel *m, const char *op, gint64 since, const char *x, gint64 axis, int keepdims,
           const char *out)
{
  SedpNnNode *n;
  if (m->opset >= since) {
    g_autofree char *an = g_strdup_printf ("axes%" G_GINT64_FORMAT, axis);
    const char *in[3] = {x, axes_init (m, an, axis), NULL}, *o[2] = {out, NULL};
    n = sedp_nn_model_add_node (m, op, out, in, o);
  } else {
    const char *in[2] = {x, NULL}, *o[2] = {out, NULL};
    n = sedp_nn_model_add_node (m, op, out, in, o);
    sedp_nn_node_set_attr_ints (n, "axes", 1, &axis);
  }
  if (keepdims >= 0)
    sedp_nn_node_set_attr_int (n, "keepdims", keepdims);
}

static void
reduce (SedpNnModel *m, const char *op, const char *x, gint64 axis, int keepdims, const char *out)
{
  axis_node (m, op, strcmp (op, "ReduceSum") == 0 ? 13 : 18, x, axis, keepdims, out);
}

static void
squeeze (SedpNnModel *m, const char *op, const char *x, gint64 axis, const char *out)
{
  axis_node (m, op, 13, x, axis, -1, out);
}

static char *
save (SedpNnModel *m, const char *name)
{
  char *path = tpath (name);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path, NULL));
  sedp_nn_model_unref (m);
  return path;
}

/* Inputs x [N, 2], a [N, 3], b [N], c [N, 2]:
 *   a: ta [20, 4] summed; ta2 [20, 4] mean with keepdims then Reshape [-1, 4]; wa [20, 1]
 *      squeezed, summed without keepdims → [N], Unsqueeze'd back;
 *   b: tb [10, 8], one id per row, also a graph output;
 *   c: tc [15, 4] summed over axis -2; wc [15, 1] squeezed (axis -1), mean over axis -1 with
 *      keepdims → [N, 1];
 * all concatenated with x, MatMul to one score. Cubes: d8 (b), d4 (a, c), d4b (a), d1 (a, c). */
static char *
mixed_model (int opset)
{
  SedpNnModel *m = sedp_nn_model_new (opset, "test");
  gint64 dx[2] = {-1, 2};
  sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 2, dx, batch_param);
  add_ids (m, "a", 2, 3);
  add_ids (m, "b", 1, 0);
  add_ids (m, "c", 2, 2);
  add_table (m, "ta", 20, 4, 0.0);
  add_table (m, "ta2", 20, 4, 1.0);
  add_table (m, "wa", 20, 1, 2.0);
  add_table (m, "tb", 10, 8, 3.0);
  add_table (m, "tc", 15, 4, 4.0);
  add_table (m, "wc", 15, 1, 5.0);
  node (m, "Gather", "g_ta", "ta", "a", "ga");
  reduce (m, "ReduceSum", "ga", 1, 0, "pa");
  node (m, "Gather", "g_ta2", "ta2", "a", "ga2");
  reduce (m, "ReduceMean", "ga2", 1, 1, "pa2k");
  gint64 n2 = 2;
  SedpNnTensor *shape = sedp_nn_tensor_new ("shape", SEDP_NN_INT64, 1, &n2);
  ((gint64 *) shape->data)[0] = -1;
  ((gint64 *) shape->data)[1] = 4;
  sedp_nn_model_add_initializer (m, shape);
  node (m, "Reshape", "rs", "pa2k", "shape", "pa2");
  node (m, "Gather", "g_wa", "wa", "a", "gwa");
  squeeze (m, "Squeeze", "gwa", 2, "swa");
  reduce (m, "ReduceSum", "swa", 1, 0, "pwa1");
  squeeze (m, "Unsqueeze", "pwa1", 1, "pwa");
  node (m, "Gather", "g_tb", "tb", "b", "eb");
  node (m, "Gather", "g_tc", "tc", "c", "gc");
  reduce (m, "ReduceSum", "gc", -2, 0, "pc");
  node (m, "Gather", "g_wc", "wc", "c", "gwc");
  squeeze (m, "Squeeze", "gwc", -1, "swc");
  reduce (m, "ReduceMean", "swc", -1, 1, "pwc");
  const char *cin[] = {"x", "pa", "pa2", "pwa", "eb", "pc", "pwc", NULL}, *cout[] = {"cat", NULL};
  sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Concat", "cat", cin, cout), "axis", 1);
  gint64 wd[2] = {24, 1};
  SedpNnTensor *w = sedp_nn_tensor_new ("w", SEDP_NN_FLOAT, 2, wd);
  for (int k = 0; k < 24; k++)
    ((float *) w->data)[k] = 0.05f * (float) (k - 11);
  sedp_nn_model_add_initializer (m, w);
  node (m, "MatMul", "mm", "cat", "w", "score");
  gint64 od[2] = {-1, 1}, ed[2] = {-1, 8};
  sedp_nn_model_add_output (m, "score", SEDP_NN_FLOAT, 2, od, batch_param);
  sedp_nn_model_add_output (m, "eb", SEDP_NN_FLOAT, 2, ed, batch_param);
  g_autofree char *name = g_strdup_printf ("mixed%d.onnx", opset);
  return save (m, name);
}

/* ---- checking a split ---- */

static void
run_plan (SedpNnModel *m, SedpNnTensor *in, guint batch, GPtrArray *outputs)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  if (plan == NULL)
    fprintf (stderr, "\n  plan: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  guint n_out = sedp_nn_plan_get_n_outputs (plan);
  g_autofree SedpNnTensor *out = g_new0 (SedpNnTensor, n_out);
  gboolean ok = sedp_nn_plan_run (plan, m->n_inputs, in, n_out, out, &error);
  if (!ok)
    fprintf (stderr, "\n  run: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  for (guint k = 0; k < n_out; k++)
    g_ptr_array_add (outputs, sedp_nn_tensor_dup (&out[k]));
  sedp_nn_plan_free (plan);
}

/* The pooled embedding of @ids (@L per row) of slot @slot in @cube_dir. */
static SedpNnTensor *
pool_from_cube (const char *name, const char *cube_dir, guint32 slot, const gint64 *ids,
                guint batch, guint L, gboolean mean)
{
  SedpCube *cube = sedp_cube_open (cube_dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cube);
  const SedpCubeMeta *meta = sedp_cube_get_meta (cube);
  char hex[33];
  hex16 (meta->hash_key, hex);
  CU_ASSERT_STRING_EQUAL (hex, HASH_HEX);
  guint dim = meta->dim;
  g_autofree guint64 *keys = g_new (guint64, (gsize) batch * L);
  for (guint i = 0; i < batch * L; i++)
    keys[i] = sedp_signature (meta->hash_key, slot, (guint64) ids[i]);
  g_autofree float *v = g_new (float, (gsize) batch * L * dim);
  CU_ASSERT_EQUAL (sedp_cube_lookup (cube, keys, batch * L, v, NULL, NULL), batch * L);
  gint64 dims[2] = {batch, dim};
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, 2, dims);
  float *out = t->data;
  for (guint r = 0; r < batch; r++)
    for (guint d = 0; d < dim; d++) {
      float s = 0;
      for (guint j = 0; j < L; j++)
        s += v[((gsize) r * L + j) * dim + d];
      out[(gsize) r * dim + d] = mean ? s / (float) L : s;
    }
  sedp_cube_close (cube);
  return t;
}

/* The unpooled embeddings [batch, L, dim] of @ids (@L per row) of slot @slot in @cube_dir, one
 * lookup per id; every id must be in the cube. */
static SedpNnTensor *
seq_from_cube (const char *name, const char *cube_dir, guint32 slot, const gint64 *ids,
               guint batch, guint L)
{
  SedpCube *cube = sedp_cube_open (cube_dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cube);
  const SedpCubeMeta *meta = sedp_cube_get_meta (cube);
  guint dim = meta->dim;
  gint64 dims[3] = {batch, L, dim};
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, 3, dims);
  for (guint i = 0; i < batch * L; i++) {
    guint64 key = sedp_signature (meta->hash_key, slot, (guint64) ids[i]);
    CU_ASSERT_EQUAL (sedp_cube_lookup (cube, &key, 1, (float *) t->data + (gsize) i * dim, NULL,
                                       NULL), 1);
  }
  sedp_cube_close (cube);
  return t;
}

static void
compare_outputs_within (GPtrArray *a, GPtrArray *b, double tolerance)
{
  CU_ASSERT_EQUAL_FATAL (a->len, b->len);
  guint bad = 0;
  for (guint k = 0; k < a->len; k++) {
    const SedpNnTensor *x = a->pdata[k], *y = b->pdata[k];
    CU_ASSERT_EQUAL_FATAL (sedp_nn_tensor_numel (x), sedp_nn_tensor_numel (y));
    CU_ASSERT_EQUAL (x->rank, y->rank);
    for (gint64 i = 0; i < sedp_nn_tensor_numel (x); i++) {
      double p = ((float *) x->data)[i], q = ((float *) y->data)[i];
      if (!(fabs (p - q) <= tolerance * MAX (fabs (p), 1e-6)) && bad++ < 3)
        fprintf (stderr, "\n  output %u [%" G_GINT64_FORMAT "]: %.9g vs %.9g", k, i, p, q);
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
}

static void
compare_outputs (GPtrArray *a, GPtrArray *b)
{
  compare_outputs_within (a, b, 1e-5);
}

static gint
cmp_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The names in @dir, sorted, comma-separated. */
static char *
listing (const char *dir)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  if (d)
    g_dir_close (d);
  g_ptr_array_sort (names, cmp_names);
  GString *s = g_string_new (NULL);
  for (guint k = 0; k < names->len; k++)
    g_string_append_printf (s, "%s%s", k ? "," : "", (char *) names->pdata[k]);
  return g_string_free (s, FALSE);
}

/* ---- tests ---- */

static void
test_mixed_dims (void)
{
  for (int opset = 11; opset <= 18; opset += opset == 11 ? 2 : 5) {
    g_autofree char *path = mixed_model (opset);
    g_autofree char *tag = g_strdup_printf ("mixed%d", opset);
    g_autofree char *dense_path = g_strdup_printf ("%s/%s-dense.onnx", cube_tmp_root, tag);
    g_autofree char *cube_dir = g_strdup_printf ("%s/%s-cube", cube_tmp_root, tag);
    g_autofree char *cube_arg = g_strdup_printf ("%s/", cube_dir); /* a trailing slash is fine */
    g_auto (SedpTestRun) s;
    sedp_run (&s, "model", "split", path, "--dense", dense_path, "--cube", cube_arg,
              "--hash-key", HASH_HEX, NULL);
    SEDP_ASSERT_EXIT (s, 0);
    SEDP_ASSERT_CONTAINS (s.out, "into 4 cubes of dims 8, 4, 4, 1");
    g_autofree char *opt_d8 = g_strdup_printf ("cube = %s/d8; slots = 1=b; pooling = sum; "
                                               "hash_slot_ids = true; output_prefix = pooled_d8_\n",
                                               cube_dir);
    g_autofree char *opt_d4 = g_strdup_printf ("cube = %s/d4; slots = 0=a, 2=c; pooling = sum, "
                                               "sum; hash_slot_ids = true; output_prefix = "
                                               "pooled_d4_\n", cube_dir);
    g_autofree char *opt_d4b = g_strdup_printf ("cube = %s/d4b; slots = a; pooling = mean; "
                                                "hash_slot_ids = true; output_prefix = "
                                                "pooled_d4b_\n", cube_dir);
    g_autofree char *opt_d1 = g_strdup_printf ("cube = %s/d1; slots = 0=a, 2=c; pooling = sum, "
                                               "mean; hash_slot_ids = true; output_prefix = "
                                               "pooled_d1_\n", cube_dir);
    SEDP_ASSERT_CONTAINS (s.out, opt_d8);
    SEDP_ASSERT_CONTAINS (s.out, opt_d4);
    SEDP_ASSERT_CONTAINS (s.out, opt_d4b);
    SEDP_ASSERT_CONTAINS (s.out, opt_d1);
    g_autofree char *names = listing (cube_dir);
    CU_ASSERT_STRING_EQUAL (names, "d1,d4,d4b,d8");
    g_autofree char *d4 = g_build_filename (cube_dir, "d4", NULL);
    g_autofree char *cube_name = meta_get (d4, "name");
    g_autofree char *want_name = g_strdup_printf ("%s-cube.d4", tag);
    CU_ASSERT_STRING_EQUAL (cube_name, want_name);
    CU_ASSERT_TRUE (g_file_test (dense_path, G_FILE_TEST_IS_REGULAR));

    g_autoptr (SedpNnModel) orig = sedp_nn_model_load (path, NULL);
    g_autoptr (SedpNnModel) dense = sedp_nn_model_load (dense_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (orig);
    CU_ASSERT_PTR_NOT_NULL_FATAL (dense);
    static const char *const inputs[] = {"x", "pooled_d4_0", "pooled_d4b_0", "pooled_d1_0",
                                         "pooled_d8_1", "pooled_d4_2", "pooled_d1_2"};
    CU_ASSERT_EQUAL_FATAL (dense->n_inputs, G_N_ELEMENTS (inputs));
    for (guint k = 0; k < G_N_ELEMENTS (inputs); k++)
      CU_ASSERT_STRING_EQUAL (dense->inputs[k].name, inputs[k]);
    CU_ASSERT_EQUAL (dense->n_initializers, opset >= 13 ? 5u : 2u); /* shape, w (+ axes) */

    const guint batch = 5;
    float x[10];
    gint64 a[15], b[5], c[10];
    for (int k = 0; k < 10; k++)
      x[k] = (float) k / 7.0f - 0.5f;
    for (int k = 0; k < 15; k++)
      a[k] = (k * 7 + 3) % 20;
    for (int k = 0; k < 5; k++)
      b[k] = (k * 3 + 1) % 10;
    for (int k = 0; k < 10; k++)
      c[k] = (k * 11) % 15;
    SedpNnTensor in_o[4] = {
      {.name = "x", .dtype = SEDP_NN_FLOAT, .rank = 2, .dims = {batch, 2}, .data = x},
      {.name = "a", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {batch, 3}, .data = a},
      {.name = "b", .dtype = SEDP_NN_INT64, .rank = 1, .dims = {batch}, .data = b},
      {.name = "c", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {batch, 2}, .data = c}};
    g_autofree char *cd8 = g_build_filename (cube_dir, "d8", NULL);
    g_autofree char *cd4b = g_build_filename (cube_dir, "d4b", NULL);
    g_autofree char *cd1 = g_build_filename (cube_dir, "d1", NULL);
    g_autoptr (GPtrArray) pooled = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d4_0", d4, 0, a, batch, 3, FALSE));
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d4b_0", cd4b, 0, a, batch, 3, TRUE));
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d1_0", cd1, 0, a, batch, 3, FALSE));
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d8_1", cd8, 1, b, batch, 1, FALSE));
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d4_2", d4, 2, c, batch, 2, FALSE));
    g_ptr_array_add (pooled, pool_from_cube ("pooled_d1_2", cd1, 2, c, batch, 2, TRUE));
    SedpNnTensor in_d[7];
    in_d[0] = in_o[0];
    for (guint k = 0; k < 6; k++)
      in_d[1 + k] = *(SedpNnTensor *) pooled->pdata[k];
    g_autoptr (GPtrArray) out_o = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    g_autoptr (GPtrArray) out_d = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    run_plan (orig, in_o, batch, out_o);
    run_plan (dense, in_d, batch, out_d);
    compare_outputs (out_o, out_d);
  }
}

/* A DIN-like model: u [N, 2] pooled from tu [10, 4]; item [N, 1] and hist [N, 5] (0 = padding)
 * both read from emb_item [12, 4] (row 0 zeros), neither pooled: item's lookup flattened and
 * dotted with every step of hist's, hist's masked by 1 - Cast (Equal (hist, 0)), weighted by the
 * dots and summed; all concatenated, MatMul to one score. The split keeps hist (the mask reads
 * it), drops item and u, makes seq_item [N, 1, 4] and seq_hist [N, 5, 4] and stores emb_item once
 * under slot 1 (item's, the first id input reading it). */
#define DIN_L 5
#define DIN_D 4

static char *
din_model (void)
{
  SedpNnModel *m = sedp_nn_model_new (13, "test");
  add_ids (m, "u", 2, 2);
  add_ids (m, "item", 2, 1);
  add_ids (m, "hist", 2, DIN_L);
  add_table (m, "tu", 10, DIN_D, 0.25);
  add_table (m, "emb_item", 12, DIN_D, 1.25);
  float *e = (float *) sedp_nn_model_get_initializer (m, "emb_item")->data;
  memset (e, 0, DIN_D * sizeof (float));
  node (m, "Gather", "g_u", "tu", "u", "eu");
  reduce (m, "ReduceSum", "eu", 1, 0, "pu");
  node (m, "Gather", "g_item", "emb_item", "item", "ei");    /* [N, 1, D] */
  node (m, "Gather", "g_hist", "emb_item", "hist", "eh");    /* [N, L, D] */
  gint64 n1 = 1;
  SedpNnTensor *zero = sedp_nn_tensor_new ("zero", SEDP_NN_INT64, 1, &n1);
  *(gint64 *) zero->data = 0;
  sedp_nn_model_add_initializer (m, zero);
  SedpNnTensor *one = sedp_nn_tensor_new ("one", SEDP_NN_FLOAT, 1, &n1);
  *(float *) one->data = 1.0f;
  sedp_nn_model_add_initializer (m, one);
  node (m, "Equal", "pad", "hist", "zero", "is_pad");
  node (m, "Cast", "padf", "is_pad", NULL, "pad_f");
  sedp_nn_node_set_attr_int (&m->nodes[m->n_nodes - 1], "to", SEDP_NN_FLOAT);
  node (m, "Sub", "keep", "one", "pad_f", "keep_f");          /* [N, L] */
  squeeze (m, "Unsqueeze", "keep_f", 2, "keep3");            /* [N, L, 1] */
  node (m, "Mul", "mask", "eh", "keep3", "ehm");
  node (m, "Mul", "dot_terms", "ehm", "ei", "dt");            /* [N, L, D] */
  reduce (m, "ReduceSum", "dt", 2, 1, "att");                /* [N, L, 1] */
  node (m, "Mul", "weigh", "ehm", "att", "w_eh");
  reduce (m, "ReduceSum", "w_eh", 1, 0, "interest");          /* [N, D] */
  gint64 n2 = 2;
  SedpNnTensor *shape = sedp_nn_tensor_new ("flat", SEDP_NN_INT64, 1, &n2);
  ((gint64 *) shape->data)[0] = -1;
  ((gint64 *) shape->data)[1] = DIN_D;
  sedp_nn_model_add_initializer (m, shape);
  node (m, "Reshape", "item_flat", "ei", "flat", "ei2");
  const char *cin[] = {"interest", "ei2", "pu", NULL}, *cout[] = {"cat", NULL};
  sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Concat", "cat", cin, cout), "axis", 1);
  gint64 wd[2] = {3 * DIN_D, 1};
  SedpNnTensor *w = sedp_nn_tensor_new ("w", SEDP_NN_FLOAT, 2, wd);
  for (int k = 0; k < 3 * DIN_D; k++)
    ((float *) w->data)[k] = 0.1f * (float) (k - 5);
  sedp_nn_model_add_initializer (m, w);
  node (m, "MatMul", "mm", "cat", "w", "score");
  gint64 od[2] = {-1, 1};
  sedp_nn_model_add_output (m, "score", SEDP_NN_FLOAT, 2, od, batch_param);
  return save (m, "din.onnx");
}

static void
test_sequences (void)
{
  g_autofree char *path = din_model ();
  g_autofree char *dense_path = tpath ("din-dense.onnx"), *dir = tpath ("din-cube");
  g_auto (SedpTestRun) s;
  sedp_run (&s, "model", "split", path, "--dense", dense_path, "--cube", dir, "--hash-key",
            HASH_HEX, NULL);
  SEDP_ASSERT_EXIT (s, 0);
  /* emb_item once: 10 + 12 rows. */
  SEDP_ASSERT_CONTAINS (s.out, "2 tables (tu, emb_item), 22 rows of dim 4\n");
  g_autofree char *opt = g_strdup_printf ("cube_accessor options: cube = %s; slots = u; "
                                          "pooling = sum; sequences = 1=item, 1=hist; "
                                          "hash_slot_ids = true\n", dir);
  SEDP_ASSERT_CONTAINS (s.out, opt);
  g_autofree char *count = meta_get (dir, "count");
  CU_ASSERT_STRING_EQUAL (count, "22");

  g_autoptr (SedpNnModel) orig = sedp_nn_model_load (path, NULL);
  g_autoptr (SedpNnModel) dense = sedp_nn_model_load (dense_path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (orig);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dense);
  static const char *const inputs[] = {"pooled_0", "seq_item", "hist", "seq_hist"};
  CU_ASSERT_EQUAL_FATAL (dense->n_inputs, G_N_ELEMENTS (inputs));
  for (guint k = 0; k < G_N_ELEMENTS (inputs); k++)
    CU_ASSERT_STRING_EQUAL (dense->inputs[k].name, inputs[k]);
  const SedpNnValueInfo *si = &dense->inputs[1], *h = &dense->inputs[2], *sh = &dense->inputs[3];
  CU_ASSERT_EQUAL (si->dtype, SEDP_NN_FLOAT);
  CU_ASSERT_EQUAL_FATAL (si->rank, 3);
  CU_ASSERT_EQUAL (si->dims[1], 1);
  CU_ASSERT_EQUAL (si->dims[2], DIN_D);
  CU_ASSERT_STRING_EQUAL (si->dim_params[0], "N");
  CU_ASSERT_EQUAL (sh->dtype, SEDP_NN_FLOAT);
  CU_ASSERT_EQUAL_FATAL (sh->rank, 3);
  CU_ASSERT_EQUAL (sh->dims[1], DIN_L);
  CU_ASSERT_EQUAL (sh->dims[2], DIN_D);
  CU_ASSERT_STRING_EQUAL (sh->dim_params[0], "N");
  CU_ASSERT_EQUAL (h->dtype, SEDP_NN_INT64);
  CU_ASSERT_EQUAL (h->rank, 2);
  /* The tables are gone from the dense model; the Gathers too. */
  CU_ASSERT_PTR_NULL (sedp_nn_model_get_initializer (dense, "emb_item"));
  CU_ASSERT_PTR_NULL (sedp_nn_model_get_initializer (dense, "tu"));
  for (guint k = 0; k < dense->n_nodes; k++)
    CU_ASSERT_STRING_NOT_EQUAL (dense->nodes[k].op_type, "Gather");

  /* The unsplit model against the dense one on inputs looked up in the cube. */
  const guint batch = 6;
  gint64 u[2 * 6], item[6], hist[DIN_L * 6];
  for (guint k = 0; k < 2 * batch; k++)
    u[k] = (k * 7 + 2) % 10;
  for (guint k = 0; k < batch; k++)
    item[k] = 1 + (k * 5) % 11;
  /* Row r: 5 - r % 4 behaviours, then padding (0) — row 0 of the table, zeros. */
  for (guint r = 0; r < batch; r++)
    for (guint j = 0; j < DIN_L; j++)
      hist[r * DIN_L + j] = j < DIN_L - r % 4 ? 1 + (r * 3 + j * 7) % 11 : 0;
  SedpNnTensor in_o[3] = {
    {.name = "u", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {batch, 2}, .data = u},
    {.name = "item", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {batch, 1}, .data = item},
    {.name = "hist", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {batch, DIN_L}, .data = hist}};
  g_autoptr (GPtrArray) looked = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_ptr_array_add (looked, pool_from_cube ("pooled_0", dir, 0, u, batch, 2, FALSE));
  g_ptr_array_add (looked, seq_from_cube ("seq_item", dir, 1, item, batch, 1));
  g_ptr_array_add (looked, seq_from_cube ("seq_hist", dir, 1, hist, batch, DIN_L));
  /* The padding id's row is in the cube, zeros, under slot 1. */
  const float *sh0 = (const float *) ((SedpNnTensor *) looked->pdata[2])->data;
  for (guint d = 0; d < DIN_D; d++)
    CU_ASSERT_EQUAL (sh0[((gsize) 1 * DIN_L + DIN_L - 1) * DIN_D + d], 0.0f);
  SedpNnTensor in_d[4] = {*(SedpNnTensor *) looked->pdata[0], *(SedpNnTensor *) looked->pdata[1],
                          in_o[2], *(SedpNnTensor *) looked->pdata[2]};
  g_autoptr (GPtrArray) out_o = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_autoptr (GPtrArray) out_d = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  run_plan (orig, in_o, batch, out_o);
  run_plan (dense, in_d, batch, out_d);
  compare_outputs_within (out_o, out_d, 1e-6);
  /* The scores differ across rows (the check is not vacuous). */
  const float *so = ((SedpNnTensor *) out_o->pdata[0])->data;
  CU_ASSERT (so[0] != so[1] && so[1] != so[2]);
}

/* Lookups that are not pooled through other shapes (Flatten, a reduction over the embedding
 * axis, a Gather read twice), and id inputs other nodes read: split, the id input kept. */
static void
expect_split (const char *tag, const char *model, const char *options, const char *inputs)
{
  g_autofree char *dense_name = g_strdup_printf ("%s-dense.onnx", tag);
  g_autofree char *dir_name = g_strdup_printf ("%s-cube", tag);
  g_autofree char *dense = tpath (dense_name), *dir = tpath (dir_name);
  g_auto (SedpTestRun) s;
  sedp_run (&s, "model", "split", model, "--dense", dense, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (s, 0);
  g_autofree char *want = g_strdup_printf ("cube_accessor options: cube = %s; %s\n", dir, options);
  SEDP_ASSERT_CONTAINS (s.out, want);
  g_autoptr (SedpNnModel) d = sedp_nn_model_load (dense, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  GString *names = g_string_new (NULL);
  for (guint k = 0; k < d->n_inputs; k++)
    g_string_append_printf (names, "%s%s", k ? "," : "", d->inputs[k].name);
  CU_ASSERT_STRING_EQUAL (names->str, inputs);
  g_string_free (names, TRUE);
}

/* One table per dim: the cube is DIR itself, its inputs pooled_K, as before several dims. */
static void
test_one_dim_one_cube (void)
{
  SedpNnModel *m = sedp_nn_model_new (13, "test");
  add_ids (m, "u", 2, 2);
  add_ids (m, "v", 1, 0);
  add_table (m, "tu", 7, 3, 0.5);
  add_table (m, "tv", 9, 3, 1.5);
  node (m, "Gather", "gu", "tu", "u", "eu");
  reduce (m, "ReduceSum", "eu", 1, 0, "pu");
  node (m, "Gather", "gv", "tv", "v", "ev");
  node (m, "Add", "add", "pu", "ev", "y");
  gint64 od[2] = {-1, 3};
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, 2, od, batch_param);
  g_autofree char *path = save (m, "one.onnx");
  g_autofree char *dense = tpath ("one-dense.onnx"), *dir = tpath ("one-cube");
  g_auto (SedpTestRun) s;
  sedp_run (&s, "model", "split", path, "--dense", dense, "--cube", dir, "--hash-key", HASH_HEX,
            NULL);
  SEDP_ASSERT_EXIT (s, 0);
  SEDP_ASSERT_CONTAINS (s.out, "2 tables (tu, tv), 16 rows of dim 3\n");
  g_autofree char *opt = g_strdup_printf ("cube_accessor options: cube = %s; slots = u, v; "
                                          "pooling = sum, sum; hash_slot_ids = true\n", dir);
  SEDP_ASSERT_CONTAINS (s.out, opt);
  g_autofree char *count = meta_get (dir, "count");
  CU_ASSERT_STRING_EQUAL (count, "16");
  g_autoptr (SedpNnModel) d = sedp_nn_model_load (dense, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  CU_ASSERT_EQUAL_FATAL (d->n_inputs, 2);
  CU_ASSERT_STRING_EQUAL (d->inputs[0].name, "pooled_0");
  CU_ASSERT_STRING_EQUAL (d->inputs[1].name, "pooled_1");
}

/* Runs split on @model into a fresh folder, expecting exit status 1 and @needle in the one line
 * of stderr; the folder must be as it was: @model (if inside it) and @keep only. */
static void
expect_refusal (const char *tag, const char *model, const char *needle, gboolean make_cube_dir)
{
  g_autofree char *work = tpath (tag);
  CU_ASSERT_EQUAL_FATAL (g_mkdir (work, 0755), 0);
  g_autofree char *dense = g_build_filename (work, "dense.onnx", NULL);
  g_autofree char *dir = g_build_filename (work, "cube", NULL);
  g_autofree char *marker = g_build_filename (dir, "mine", NULL);
  if (make_cube_dir) {
    CU_ASSERT_EQUAL (g_mkdir (dir, 0755), 0);
    CU_ASSERT_TRUE (g_file_set_contents (marker, "x", 1, NULL));
  }
  g_auto (SedpTestRun) s;
  sedp_run (&s, "model", "split", model, "--dense", dense, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (s, 1);
  SEDP_ASSERT_CONTAINS (s.err, "sedp model split: ");
  SEDP_ASSERT_CONTAINS (s.err, needle);
  /* One line. */
  CU_ASSERT_PTR_NOT_NULL (strchr (s.err, '\n'));
  CU_ASSERT_TRUE (strchr (s.err, '\n') == s.err + strlen (s.err) - 1);
  CU_ASSERT_STRING_EQUAL (s.out, "");
  g_autofree char *left = listing (work);
  CU_ASSERT_STRING_EQUAL (left, make_cube_dir ? "cube" : "");
  if (make_cube_dir) {
    g_autofree char *inside = listing (dir);
    CU_ASSERT_STRING_EQUAL (inside, "mine");
  }
}

/* A model with inputs ids [N, 2] (and x [N, 4]) and one table t [6, 4]: @build adds the nodes
 * reading them, ending in output y. */
static char *
small_model (const char *name, int opset, void (*build) (SedpNnModel *m))
{
  SedpNnModel *m = sedp_nn_model_new (opset, "test");
  gint64 dx[2] = {-1, 4};
  sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 2, dx, batch_param);
  add_ids (m, "ids", 2, 2);
  add_table (m, "t", 6, 4, 0.0);
  build (m);
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, -1, NULL, NULL);
  return save (m, name);
}

static void
build_plain (SedpNnModel *m)
{
  node (m, "Relu", "relu", "x", NULL, "y");
}

static void
build_unpooled (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  SedpNnNode *n = sedp_nn_model_add_node (m, "Flatten", "flat", (const char *[]){"e", NULL},
                                          (const char *[]){"y", NULL});
  sedp_nn_node_set_attr_int (n, "axis", 1);
}

static void
build_wrong_axis (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 2, 0, "y");
}

static void
build_lookup_twice (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 1, 0, "p");
  node (m, "Relu", "r", "e", NULL, "q");
  node (m, "Add", "y", "p", "x", "y");
}

static void
build_ids_read (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 1, 0, "p");
  node (m, "Cast", "ids_as_float", "ids", NULL, "f");
  sedp_nn_node_set_attr_int (&m->nodes[m->n_nodes - 1], "to", SEDP_NN_FLOAT);
  node (m, "ReduceSum", "rf", "f", NULL, "fs");
  node (m, "Add", "a", "p", "fs", "y");
}

static void
build_name_taken (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 1, 0, "p");
  node (m, "Relu", "pooled_0", "x", NULL, "pooled_0");
  node (m, "Add", "y", "p", "pooled_0", "y");
}

static void
build_good (SedpNnModel *m)
{
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 1, 0, "p");
  node (m, "Add", "y", "p", "x", "y");
}

static void
test_refusals (void)
{
  g_autofree char *plain = small_model ("plain.onnx", 13, build_plain);
  expect_refusal ("no-tables", plain, "no embedding lookups to split", FALSE);

  /* Lookups not pooled are sequences now, and id inputs read elsewhere are kept. */
  g_autofree char *unpooled = small_model ("unpooled.onnx", 13, build_unpooled);
  expect_split ("unpooled", unpooled, "sequences = 0=ids; hash_slot_ids = true", "x,seq_ids");
  g_autofree char *axis = small_model ("axis.onnx", 13, build_wrong_axis);
  expect_split ("axis", axis, "sequences = 0=ids; hash_slot_ids = true", "x,seq_ids");
  g_autofree char *twice = small_model ("twice.onnx", 13, build_lookup_twice);
  expect_split ("twice", twice, "sequences = 0=ids; hash_slot_ids = true", "x,seq_ids");
  g_autofree char *read = small_model ("read.onnx", 13, build_ids_read);
  expect_split ("ids-read", read, "slots = ids; pooling = sum; hash_slot_ids = true",
                "x,ids,pooled_0");

  /* Not pooled, and no fixed number of ids. */
  SedpNnModel *v = sedp_nn_model_new (13, "test");
  add_ids (v, "ids", 2, -1);
  add_table (v, "t", 6, 4, 0.0);
  build_unpooled (v);
  sedp_nn_model_add_output (v, "y", SEDP_NN_FLOAT, -1, NULL, NULL);
  g_autofree char *ragged = save (v, "ragged.onnx");
  expect_refusal ("ragged", ragged, "is not pooled (it is read by Flatten 'flat'), and the ids "
                  "have no fixed length", FALSE);

  g_autofree char *taken = small_model ("taken.onnx", 13, build_name_taken);
  expect_refusal ("taken", taken, "the model already has a value named 'pooled_0'", FALSE);

  /* Rank-3 ids. */
  SedpNnModel *m = sedp_nn_model_new (13, "test");
  add_ids (m, "ids", 3, 2);
  add_table (m, "t", 6, 4, 0.0);
  node (m, "Gather", "g", "t", "ids", "e");
  reduce (m, "ReduceSum", "e", 1, 0, "y");
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, -1, NULL, NULL);
  g_autofree char *rank3 = save (m, "rank3.onnx");
  expect_refusal ("rank3", rank3, "input 'ids' has rank 3", FALSE);

  /* The cube folder exists: one cube, and several. */
  g_autofree char *good = small_model ("good.onnx", 13, build_good);
  expect_refusal ("exists-one", good, "already exists (a cube is never overwritten", TRUE);
  g_autofree char *mixed = mixed_model (13);
  expect_refusal ("exists-mixed", mixed, "already exists (a cube is never overwritten", TRUE);

  /* Not a model. */
  g_autofree char *junk = tpath ("junk.onnx");
  CU_ASSERT_TRUE (g_file_set_contents (junk, "not a model", -1, NULL));
  expect_refusal ("junk", junk, "junk.onnx", FALSE);
}

/* A cube that fails while being written (a bad name, refused by the second cube's builder… the
 * first one's here): the temporary folder and the dense model's temporary file are removed. */
static void
test_failure_leaves_nothing (void)
{
  g_autofree char *mixed = mixed_model (17);
  g_autofree char *work = tpath ("fails");
  CU_ASSERT_EQUAL_FATAL (g_mkdir (work, 0755), 0);
  g_autofree char *dense = g_build_filename (work, "dense.onnx", NULL);
  g_autofree char *dir = g_build_filename (work, "cube", NULL);
  g_auto (SedpTestRun) s;
  sedp_run (&s, "model", "split", mixed, "--dense", dense, "--cube", dir, "--name", "bad name",
            NULL);
  SEDP_ASSERT_EXIT (s, 1);
  SEDP_ASSERT_CONTAINS (s.err, "bad cube name 'bad name.d8'");
  g_autofree char *left = listing (work);
  CU_ASSERT_STRING_EQUAL (left, "");
  /* The same with one cube. */
  g_autofree char *good = small_model ("good2.onnx", 13, build_good);
  g_auto (SedpTestRun) t;
  sedp_run (&t, "model", "split", good, "--dense", dense, "--cube", dir, "--name", "bad name",
            NULL);
  SEDP_ASSERT_EXIT (t, 1);
  SEDP_ASSERT_CONTAINS (t.err, "bad cube name 'bad name'");
  g_autofree char *left2 = listing (work);
  CU_ASSERT_STRING_EQUAL (left2, "");
  /* A folder that cannot be created. */
  g_autofree char *deep = g_build_filename (work, "no", "such", "cube", NULL);
  g_auto (SedpTestRun) u;
  sedp_run (&u, "model", "split", mixed, "--dense", dense, "--cube", deep, NULL);
  SEDP_ASSERT_EXIT (u, 1);
  SEDP_ASSERT_CONTAINS (u.err, "cannot create a folder next to");
  g_autofree char *left3 = listing (work);
  CU_ASSERT_STRING_EQUAL (left3, "");
}

/* The builder under split and `sedp cube build`: "DIR/" is the folder DIR. */
static void
test_builder_trailing_slash (void)
{
  g_autofree char *dir = tpath ("slash-cube");
  g_autofree char *arg = g_strdup_printf ("%s//", dir);
  guint64 keys[3] = {1, 2, 3};
  build_cube (arg, keys, 3, 2, 0);
  g_autofree char *count = meta_get (dir, "count");
  CU_ASSERT_STRING_EQUAL (count, "3");
  g_autofree char *left = listing (cube_tmp_root);
  CU_ASSERT_PTR_NULL (strstr (left, ".tmp-"));
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("split", cube_suite_init, cube_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_mixed_dims);
  T (test_sequences);
  T (test_one_dim_one_cube);
  T (test_refusals);
  T (test_failure_leaves_nothing);
  T (test_builder_trailing_slash);
#undef T
  return sedp_test_run ();
}
