/* The data-movement and index kernels of the OpenCL engine (core/nn/ocl/lower-copy.c,
 * lower-index.c, kernels/copy.cl, index.cl; docs/opencl.md §3.2, §7) on PoCL: Transpose, Slice,
 * Expand, Tile, Concat, Split, Gather, GatherElements, the embedding bag (sum and mean), OneHot
 * and Trilu, each against the CPU engine on the same inputs at batches 1, 7 and 64, over element
 * sizes 1, 4 and 8, with negative and out-of-range indices, NaN, ±inf and -0. These kernels move
 * bits (the bag adds in the CPU's order), so outputs must be the same bits (NaN: any NaN). No
 * step of these models may fall back to the host. An index out of range on the device gives the
 * CPU engine's message exactly (written here as ops-tensor.c's format, the independent
 * reference), and the same plan then runs good inputs. Skips only without an OpenCL platform
 * (SEDP_REQUIRE_OPENCL=1 makes that a failure); under valgrind (SEDP_VALGRIND=1) one batch and a
 * few models. */
#include "../nn/nn-test.h"
#include "ocl-test.h"

#include "nn/exec/plan-private.h"

static SedpNnDevice *device;
static gboolean valgrind;

/* ---- comparing with the CPU engine ---- */

/* Output @i of both engines: same dtype and shape, same bits (floats: both NaN, or the same bits,
 * so that -0 and +0 differ). Returns the mismatches. */
static guint
same_bits (const char *what, const SedpNnTensor *ocl, const SedpNnTensor *cpu)
{
  if (ocl_test_compare (what, ocl, cpu, 0, 0) != 0)
    return 1;
  gsize es = sedp_nn_dtype_size (cpu->dtype);
  gint64 n = sedp_nn_tensor_numel (cpu);
  guint bad = 0;
  for (gint64 i = 0; i < n; i++) {
    const guint8 *a = (const guint8 *) ocl->data + i * es, *b = (const guint8 *) cpu->data + i * es;
    gboolean nan = cpu->dtype == SEDP_NN_FLOAT && isnan (*(const float *) a) &&
                   isnan (*(const float *) b);
    if (!nan && memcmp (a, b, es) != 0 && bad++ < 5)
      fprintf (stderr, "\n  %s[%" G_GINT64_FORMAT "]: the bits differ", what, i);
  }
  return bad;
}

/* Runs @m at @batch on both engines with @in (NULL: random inputs, ocl_test_inputs) and compares
 * every output bit for bit; checks that the device plan has no host command and names @kernel. */
static gboolean
parity (SedpNnModel *m, gint64 batch, const SedpNnTensor *in, guint32 seed, const char *kernel)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *cpu = sedp_nn_plan_new (m, batch, &error);
  SedpNnPlan *ocl = cpu ? sedp_nn_plan_new_on (m, batch, device, &error) : NULL;
  if (ocl == NULL) {
    fprintf (stderr, "\n  plan at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
    sedp_nn_plan_free (cpu);
    return FALSE;
  }
  guint n_in = sedp_nn_plan_get_n_inputs (cpu), n_out = sedp_nn_plan_get_n_outputs (cpu);
  GRand *rng = g_rand_new_with_seed (seed);
  g_autoptr (GPtrArray) rnd = ocl_test_inputs (m, cpu, rng);
  g_rand_free (rng);
  g_autofree SedpNnTensor *args = g_new0 (SedpNnTensor, MAX (n_in, 1));
  for (guint k = 0; k < n_in; k++)
    args[k] = in ? in[k] : *(SedpNnTensor *) rnd->pdata[k];
  g_autofree SedpNnTensor *co = g_new0 (SedpNnTensor, MAX (n_out, 1));
  g_autofree SedpNnTensor *oo = g_new0 (SedpNnTensor, MAX (n_out, 1));
  gboolean ok = sedp_nn_plan_run (cpu, n_in, args, n_out, co, &error) &&
                sedp_nn_plan_run (ocl, n_in, args, n_out, oo, &error);
  if (!ok)
    fprintf (stderr, "\n  run at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
  for (guint i = 0; ok && i < n_out; i++) {
    g_autofree char *what = g_strdup_printf ("batch %" G_GINT64_FORMAT " output '%s'", batch,
                                             co[i].name);
    ok = same_bits (what, &oo[i], &co[i]) == 0;
  }
  g_autoptr (GString) d = g_string_new (NULL);
  sedp_nn_plan_describe (ocl, d);
  if (((Plan *) ocl)->ocl->n_host != 0 || (kernel && !strstr (d->str, kernel))) {
    fprintf (stderr, "\n  the device plan has host commands or lacks '%s':\n%s", kernel, d->str);
    ok = FALSE;
  }
  sedp_nn_plan_free (ocl);
  sedp_nn_plan_free (cpu);
  return ok;
}

/* parity() on random inputs at batches 1, 7 and 64 (7 only under valgrind). */
static void
check (SedpNnModel *m, const char *what, const char *kernel)
{
  const gint64 batches[] = {1, 7, 64};
  for (guint b = 0; b < G_N_ELEMENTS (batches); b++) {
    if (valgrind && batches[b] != 7)
      continue;
    gboolean ok = parity (m, batches[b], NULL, 40 + b, kernel);
    if (!ok)
      fprintf (stderr, "\n  %s at batch %" G_GINT64_FORMAT, what, batches[b]);
    CU_ASSERT_TRUE (ok);
  }
}

/* parity() on the given inputs. */
static void
check_with (SedpNnModel *m, gint64 batch, const SedpNnTensor *in, const char *what,
            const char *kernel)
{
  gboolean ok = parity (m, batch, in, 0, kernel);
  if (!ok)
    fprintf (stderr, "\n  %s with given inputs", what);
  CU_ASSERT_TRUE (ok);
}

/* A scalar initializer of @dtype. */
static void
init_scalar (SedpNnModel *m, const char *name, SedpNnDType dtype, gconstpointer v)
{
  tb_init (m, name, dtype, 0, NULL, v);
}

/* A model with one graph input per (@names[t], @types[t]) of shape @dims (-1: the batch), the
 * node @op over each ("IN" + @extra inputs → "Y" + IN), every Y an output; @attr and @ints set
 * one ints attribute on each node when not NULL. */
static SedpNnModel *
per_type (const char *op, const char *extra, int n, const char *const *names,
          const SedpNnDType *types, int rank, const gint64 *dims, const char *attr, guint n_ints,
          const gint64 *ints)
{
  SedpNnModel *m = tb_new (17);
  for (int t = 0; t < n; t++) {
    tb_input (m, names[t], types[t], rank, dims);
    g_autofree char *ins = g_strdup_printf ("%s%s", names[t], extra ? extra : "");
    g_autofree char *out = g_strdup_printf ("Y%s", names[t]);
    g_autofree char *node = g_strdup_printf ("%s_%s", op, names[t]);
    SedpNnNode *nd = tb_node (m, op, node, ins, out);
    if (attr)
      tb_attr_ints (nd, attr, n_ints, ints);
    tb_output (m, out, types[t], -1, NULL);
  }
  return m;
}

/* Float, int64 and bool: element sizes 4, 8 and 1. */
static const char *const FLB[3] = {"F", "L", "B"};
static const SedpNnDType FLB_TYPES[3] = {SEDP_NN_FLOAT, SEDP_NN_INT64, SEDP_NN_BOOL};

static void
test_transpose (void)
{
  g_autoptr (SedpNnModel) m = per_type ("Transpose", NULL, 3, FLB, FLB_TYPES, 4, I64 (-1, 2, 3, 4),
                                        "perm", 4, I64 (0, 3, 1, 2));
  check (m, "transpose", "strided_copy");
  /* NaN, ±inf, -0 and a denormal travel as bits */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  IN (m2, "X", SEDP_NN_FLOAT, -1, 3);
  tb_node (m2, "Transpose", "t", "X", "Y");
  OUT (m2, "Y", SEDP_NN_FLOAT);
  const float x[6] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -1e-40f};
  SedpNnTensor in = TT (SEDP_NN_FLOAT, x, 2, 3);
  check_with (m2, 2, &in, "transpose of special values", "strided_copy");
}

static void
test_slice (void)
{
  /* axis 1: rows 1, 3, 5 (step 2); axis 2: columns 4, 2, 0 (step -2, the end clamped) */
  g_autoptr (SedpNnModel) m = per_type ("Slice", ",starts,ends,axes,steps", 3, FLB, FLB_TYPES, 3,
                                        I64 (-1, 6, 5), NULL, 0, NULL);
  INTS (m, "starts", 1, 4);
  INTS (m, "ends", 6, -10);
  INTS (m, "axes", 1, 2);
  INTS (m, "steps", 2, -2);
  check (m, "slice", "strided_copy");
  /* on the batch axis: empty at batch 1 (nothing launched) */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  INTS (m2, "starts", 1);
  INTS (m2, "ends", G_MAXINT64);
  INTS (m2, "axes", 0);
  IN (m2, "X", SEDP_NN_FLOAT, -1, 3);
  tb_node (m2, "Slice", "slice_batch", "X,starts,ends,axes", "Y");
  OUT (m2, "Y", SEDP_NN_FLOAT);
  check (m2, "slice on the batch axis", NULL);
}

static void
test_expand (void)
{
  /* [N, 1, 3] expanded with [4, 1]: [N, 4, 3] */
  g_autoptr (SedpNnModel) m = per_type ("Expand", ",shape", 3, FLB, FLB_TYPES, 3, I64 (-1, 1, 3),
                                        NULL, 0, NULL);
  INTS (m, "shape", 4, 1);
  check (m, "expand", "strided_copy");
}

static void
test_tile (void)
{
  /* [N, 2, 3] tiled (2, 1, 3): [2N, 2, 9] */
  g_autoptr (SedpNnModel) m = per_type ("Tile", ",repeats", 3, FLB, FLB_TYPES, 3, I64 (-1, 2, 3),
                                        NULL, 0, NULL);
  INTS (m, "repeats", 2, 1, 3);
  check (m, "tile", "strided_copy");
}

/* ---- Concat and Split ---- */

static void
test_concat (void)
{
  g_autoptr (SedpNnModel) m = tb_new (17);
  IN (m, "A", SEDP_NN_FLOAT, -1, 3);
  IN (m, "B", SEDP_NN_FLOAT, -1, 2);
  IN (m, "L", SEDP_NN_INT64, -1, 2, 2);
  IN (m, "Q", SEDP_NN_BOOL, -1, 2, 1);
  const float c[6] = {1, 2, 3, -0.0f, NAN, INFINITY};
  INIT_F (m, "C", c, 2, 3);
  tb_attr_i (tb_node (m, "Concat", "cat_rows", "A,B,A", "Y1"), "axis", 1);
  tb_attr_i (tb_node (m, "Concat", "cat_const", "A,C", "Y2"), "axis", 0); /* outer 1 */
  tb_attr_i (tb_node (m, "Concat", "cat_l", "L,L", "Y3"), "axis", -1);
  tb_attr_i (tb_node (m, "Concat", "cat_b", "Q,Q,Q", "Y4"), "axis", 1);
  OUT (m, "Y1", SEDP_NN_FLOAT);
  OUT (m, "Y2", SEDP_NN_FLOAT);
  OUT (m, "Y3", SEDP_NN_INT64);
  OUT (m, "Y4", SEDP_NN_BOOL);
  check (m, "concat", "copy_rows");
  /* many inputs (DLRM's pooled embeddings): 40 launches */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  IN (m2, "A", SEDP_NN_FLOAT, -1, 3);
  IN (m2, "B", SEDP_NN_FLOAT, -1, 1);
  g_autoptr (GString) ins = g_string_new ("A");
  for (int k = 1; k < 40; k++)
    g_string_append (ins, k % 3 ? ",A" : ",B");
  tb_attr_i (tb_node (m2, "Concat", "cat_many", ins->str, "Y"), "axis", 1);
  OUT (m2, "Y", SEDP_NN_FLOAT);
  check (m2, "concat of 40 inputs", "copy_rows");
}

static void
test_split (void)
{
  g_autoptr (SedpNnModel) m = tb_new (17);
  IN (m, "X", SEDP_NN_FLOAT, -1, 7);
  IN (m, "L", SEDP_NN_INT64, -1, 2, 6);
  IN (m, "Q", SEDP_NN_BOOL, -1, 4);
  INTS (m, "sizes", 2, 0, 5);
  tb_attr_i (tb_node (m, "Split", "split_f", "X,sizes", "X0,X1,X2"), "axis", 1); /* X1 empty */
  tb_attr_i (tb_node (m, "Split", "split_l", "L", "L0,L1,L2"), "axis", 2);
  tb_attr_i (tb_node (m, "Split", "split_b", "Q", "Q0,Q1"), "axis", -1);
  const char *outs[] = {"X0", "X1", "X2", "L0", "L1", "L2", "Q0", "Q1"};
  for (guint i = 0; i < G_N_ELEMENTS (outs); i++)
    OUT (m, outs[i], i < 3 ? SEDP_NN_FLOAT : i < 6 ? SEDP_NN_INT64 : SEDP_NN_BOOL);
  check (m, "split", "copy_rows");
}

/* ---- Gather ---- */

/* The table [10, 4] of the index tests: values whose float sums depend on the order of the
 * additions (so that the bag's order is checked), with NaN, ±inf and -0 in row 9 and -0 in
 * row 3. */
static void
add_table (SedpNnModel *m)
{
  float t[40];
  for (int i = 0; i < 40; i++)
    t[i] = i / 4 == 3 ? -0.0f : (float) (sin (i * 1.7) * (1 + i % 7) * 1e3);
  t[36] = NAN, t[37] = INFINITY, t[38] = -INFINITY, t[39] = -0.0f;
  INIT_F (m, "table", t, 10, 4);
}

/* table [10, 4] gathered by ids [N, 3] (int64, a graph input): node 'lookup'. */
static SedpNnModel *
lookup_model (void)
{
  SedpNnModel *m = tb_new (17);
  add_table (m);
  IN (m, "ids", SEDP_NN_INT64, -1, 3);
  tb_node (m, "Gather", "lookup", "table,ids", "Y");
  OUT (m, "Y", SEDP_NN_FLOAT);
  return m;
}

static void
test_gather (void)
{
  g_autoptr (SedpNnModel) m = lookup_model ();
  check (m, "gather of table rows", "gather");
  const gint64 ids[6] = {-1, -10, 9, 0, -3, 5};
  SedpNnTensor in = TT (SEDP_NN_INT64, ids, 2, 3);
  check_with (m, 2, &in, "gather with negative ids", "gather");

  /* axis 1 with constant int32 indices (negative ones wrap), a scalar int64 index (rank drops),
   * int32 indices from a graph input over bool data */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  IN (m2, "X", SEDP_NN_FLOAT, -1, 5, 2);
  IN (m2, "L", SEDP_NN_INT64, -1, 5);
  IN (m2, "Q", SEDP_NN_BOOL, -1, 5);
  IN (m2, "I", SEDP_NN_INT32, -1, 2);
  const gint32 i32[4] = {-1, 0, -5, 3};
  tb_init (m2, "i32", SEDP_NN_INT32, 1, I64 (4), i32);
  const gint64 minus2 = -2;
  init_scalar (m2, "minus2", SEDP_NN_INT64, &minus2);
  tb_attr_i (tb_node (m2, "Gather", "g_f", "X,i32", "YF"), "axis", 1);
  tb_attr_i (tb_node (m2, "Gather", "g_l", "L,minus2", "YL"), "axis", 1);
  tb_attr_i (tb_node (m2, "Gather", "g_b", "Q,I", "YB"), "axis", 1);
  OUT (m2, "YF", SEDP_NN_FLOAT);
  OUT (m2, "YL", SEDP_NN_INT64);
  OUT (m2, "YB", SEDP_NN_BOOL);
  check (m2, "gather on axis 1", "gather");
}

static void
test_gather_elements (void)
{
  g_autoptr (SedpNnModel) m = tb_new (17);
  IN (m, "X", SEDP_NN_FLOAT, -1, 4, 3);
  IN (m, "Q", SEDP_NN_BOOL, -1, 4, 3);
  IN (m, "I", SEDP_NN_INT64, -1, 2, 3);
  /* constant int32 indices [1, 4, 2] along axis 2, negative ones included */
  const gint32 k[8] = {-3, 2, 0, -1, 1, -2, 2, 0};
  tb_init (m, "K", SEDP_NN_INT32, 3, I64 (1, 4, 2), k);
  tb_attr_i (tb_node (m, "GatherElements", "ge_f", "X,I", "Y1"), "axis", 1);
  tb_attr_i (tb_node (m, "GatherElements", "ge_k", "X,K", "Y2"), "axis", -1);
  tb_attr_i (tb_node (m, "GatherElements", "ge_b", "Q,I", "Y3"), "axis", 1);
  OUT (m, "Y1", SEDP_NN_FLOAT);
  OUT (m, "Y2", SEDP_NN_FLOAT);
  OUT (m, "Y3", SEDP_NN_BOOL);
  check (m, "gather_elements", "gather_elements");
  /* int64 data, negative indices from the input */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  IN (m2, "L", SEDP_NN_INT64, -1, 4);
  IN (m2, "I", SEDP_NN_INT64, -1, 3);
  tb_attr_i (tb_node (m2, "GatherElements", "ge_l", "L,I", "Y"), "axis", 1);
  OUT (m2, "Y", SEDP_NN_INT64);
  const gint64 l[8] = {10, 11, 12, 13, 20, 21, 22, 23}, ix[6] = {-1, -4, 3, 0, -2, 1};
  SedpNnTensor in[2] = {TT (SEDP_NN_INT64, l, 2, 4), TT (SEDP_NN_INT64, ix, 2, 3)};
  check_with (m2, 2, in, "gather_elements with negative indices", "gather_elements");
}

/* ---- the embedding bag ---- */

/* Gather (table [10, 4], ids [N, L]) then ReduceSum over axis 1 (keepdims 0) and ReduceMean
 * (keepdims 1) of a second lookup: two fused bags. */
static SedpNnModel *
bag_model (gint64 per_bag)
{
  SedpNnModel *m = tb_new (17);
  add_table (m);
  IN (m, "ids", SEDP_NN_INT64, -1, per_bag);
  IN (m, "ids2", SEDP_NN_INT64, -1, per_bag);
  INTS (m, "axes", 1);
  tb_node (m, "Gather", "lookup", "table,ids", "G");
  tb_attr_i (tb_node (m, "ReduceSum", "pool", "G,axes", "S"), "keepdims", 0);
  tb_node (m, "Gather", "lookup2", "table,ids2", "G2");
  SedpNnNode *mean = tb_node (m, "ReduceMean", "pool2", "G2", "M");
  ATTR_INTS (mean, "axes", 1);
  OUT (m, "S", SEDP_NN_FLOAT);
  OUT (m, "M", SEDP_NN_FLOAT);
  return m;
}

static void
test_embedding_bag (void)
{
  g_autoptr (SedpNnModel) m = bag_model (5);
  check (m, "embedding bags", "embedding_bag");
  /* negative ids; a bag of -0 rows only (0 + -0 is +0 on both engines) */
  g_autoptr (SedpNnModel) m2 = bag_model (3);
  const gint64 a[6] = {-1, -10, 9, 3, -7, 3}, b[6] = {0, 0, 0, -2, 4, -7};
  SedpNnTensor in[2] = {TT (SEDP_NN_INT64, a, 2, 3), TT (SEDP_NN_INT64, b, 2, 3)};
  check_with (m2, 2, in, "embedding bags with negative ids", "embedding_bag");
  g_autoptr (SedpNnModel) m3 = bag_model (1); /* the mean of one row: no scaling */
  check (m3, "embedding bags of one id", "embedding_bag");
}

/* ---- OneHot ---- */

static void
test_onehot (void)
{
  /* int64 indices, depth 5, float values, last axis; random indices in [0, 4) */
  g_autoptr (SedpNnModel) m = tb_new (17);
  IN (m, "I", SEDP_NN_INT64, -1, 3);
  const gint64 five = 5;
  init_scalar (m, "depth", SEDP_NN_INT64, &five);
  INIT_F (m, "values", F32 (0.5f, -0.0f), 2);
  tb_node (m, "OneHot", "onehot", "I,depth,values", "Y");
  OUT (m, "Y", SEDP_NN_FLOAT);
  check (m, "onehot", "onehot");
  const gint64 ids[6] = {-1, -5, -6, 5, 7, 0}; /* -6, 5 and 7 select nothing */
  SedpNnTensor in = TT (SEDP_NN_INT64, ids, 2, 3);
  check_with (m, 2, &in, "onehot with negative and out-of-range indices", "onehot");

  /* float, int32, uint8 and double indices; int64, bool and int32 values; axes 1 and 0 */
  g_autoptr (SedpNnModel) m2 = tb_new (17);
  IN (m2, "F", SEDP_NN_FLOAT, -1, 2);
  IN (m2, "I", SEDP_NN_INT32, -1, 2);
  IN (m2, "U", SEDP_NN_UINT8, -1, 2);
  IN (m2, "D", SEDP_NN_DOUBLE, -1, 2);
  const float four = 4.0f;
  init_scalar (m2, "depth", SEDP_NN_FLOAT, &four);
  INIT_I (m2, "vl", I64 (7, -3), 2);
  const guint8 vb[2] = {0, 1};
  tb_init (m2, "vb", SEDP_NN_BOOL, 1, I64 (2), vb);
  const gint32 vi[2] = {-9, 100000};
  tb_init (m2, "vi", SEDP_NN_INT32, 1, I64 (2), vi);
  tb_attr_i (tb_node (m2, "OneHot", "oh_f", "F,depth,vl", "YF"), "axis", 1);
  tb_attr_i (tb_node (m2, "OneHot", "oh_i", "I,depth,vb", "YI"), "axis", 0);
  tb_attr_i (tb_node (m2, "OneHot", "oh_u", "U,depth,vi", "YU"), "axis", -1);
  tb_node (m2, "OneHot", "oh_d", "D,depth,vl", "YD");
  OUT (m2, "YF", SEDP_NN_INT64);
  OUT (m2, "YI", SEDP_NN_BOOL);
  OUT (m2, "YU", SEDP_NN_INT32);
  OUT (m2, "YD", SEDP_NN_INT64);
  check (m2, "onehot of other index types", "onehot");
  /* float indices: truncated toward 0, wrapped; NaN, ±inf, huge and -depth - 1 select nothing */
  const float f[8] = {-1.5f, 2.7f, NAN, INFINITY, -4.9f, 1e20f, -5.0f, 3.99f};
  const gint32 i[8] = {0, -4, -5, 3, 4, G_MAXINT32, G_MININT32, 1};
  const guint8 u[8] = {0, 1, 2, 3, 4, 255, 1, 0};
  const double d[8] = {-1.5, 2.7, NAN, -INFINITY, -4.5, 1e300, -4.0, 4.0};
  SedpNnTensor in2[4] = {TT (SEDP_NN_FLOAT, f, 4, 2), TT (SEDP_NN_INT32, i, 4, 2),
                         TT (SEDP_NN_UINT8, u, 4, 2), TT (SEDP_NN_DOUBLE, d, 4, 2)};
  check_with (m2, 4, in2, "onehot of special index values", "onehot");
}

/* ---- Trilu ---- */

static void
test_trilu (void)
{
  g_autoptr (SedpNnModel) m = tb_new (17);
  IN (m, "X", SEDP_NN_FLOAT, -1, 4, 5);
  IN (m, "L", SEDP_NN_INT64, -1, 3, 3);
  IN (m, "Q", SEDP_NN_BOOL, -1, 2, 6);
  const gint64 one = 1, minus1 = -1, big = 100, minus_big = -100;
  init_scalar (m, "one", SEDP_NN_INT64, &one);
  init_scalar (m, "minus1", SEDP_NN_INT64, &minus1);
  init_scalar (m, "big", SEDP_NN_INT64, &big);
  init_scalar (m, "minus_big", SEDP_NN_INT64, &minus_big);
  tb_node (m, "Trilu", "upper_1", "X,one", "Y1");
  tb_attr_i (tb_node (m, "Trilu", "lower_m1", "X,minus1", "Y2"), "upper", 0);
  tb_node (m, "Trilu", "upper_l", "L", "Y3");
  tb_attr_i (tb_node (m, "Trilu", "lower_all", "Q,big", "Y4"), "upper", 0);
  tb_node (m, "Trilu", "upper_all", "X,minus_big", "Y5");
  tb_node (m, "Trilu", "upper_none", "L,big", "Y6");
  const char *outs[] = {"Y1", "Y2", "Y3", "Y4", "Y5", "Y6"};
  const SedpNnDType types[] = {SEDP_NN_FLOAT, SEDP_NN_FLOAT, SEDP_NN_INT64, SEDP_NN_BOOL,
                               SEDP_NN_FLOAT, SEDP_NN_INT64};
  for (guint i = 0; i < G_N_ELEMENTS (outs); i++)
    OUT (m, outs[i], types[i]);
  check (m, "trilu", "trilu");
}

/* ---- an index out of range on the device (docs/opencl.md §7) ---- */

/* @bad on the device plan fails with @want exactly (SEDP_NN_ERROR_INPUT), which is also the CPU
 * engine's message; then @good on the same plan gives the CPU's outputs. */
static void
bad_then_good (SedpNnModel *m, gint64 batch, const SedpNnTensor *bad, const SedpNnTensor *good,
               const char *want)
{
  g_autoptr (GError) error = NULL, cpu_error = NULL;
  SedpNnPlan *cpu = sedp_nn_plan_new (m, batch, &error);
  SedpNnPlan *ocl = sedp_nn_plan_new_on (m, batch, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cpu);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ocl);
  CU_ASSERT_EQUAL (((Plan *) ocl)->ocl->n_host, 0);
  guint n_in = sedp_nn_plan_get_n_inputs (cpu), n_out = sedp_nn_plan_get_n_outputs (cpu);
  g_autofree SedpNnTensor *co = g_new0 (SedpNnTensor, n_out);
  g_autofree SedpNnTensor *oo = g_new0 (SedpNnTensor, n_out);
  CU_ASSERT_FALSE (sedp_nn_plan_run (cpu, n_in, bad, n_out, co, &cpu_error));
  CU_ASSERT_FALSE (sedp_nn_plan_run (ocl, n_in, bad, n_out, oo, &error));
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cpu_error);
  if (g_strcmp0 (error->message, want) != 0 || g_strcmp0 (cpu_error->message, want) != 0)
    fprintf (stderr, "\n  device: %s\n  cpu:    %s\n  want:   %s", error->message,
             cpu_error->message, want);
  CU_ASSERT_STRING_EQUAL (error->message, want);
  CU_ASSERT_STRING_EQUAL (cpu_error->message, want);
  CU_ASSERT_TRUE (g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT));
  g_clear_error (&error);
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (cpu, n_in, good, n_out, co, &error));
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (ocl, n_in, good, n_out, oo, &error));
  for (guint i = 0; i < n_out; i++)
    CU_ASSERT_EQUAL (same_bits ("the good run after a bad one", &oo[i], &co[i]), 0);
  sedp_nn_plan_free (ocl);
  sedp_nn_plan_free (cpu);
}

static void
test_index_errors (void)
{
  g_autoptr (SedpNnModel) g = lookup_model ();
  const gint64 bad[6] = {1, 2, 3, 4, 1000, 5}, good[6] = {1, 2, 3, 4, -10, 5};
  SedpNnTensor b1 = TT (SEDP_NN_INT64, bad, 2, 3), g1 = TT (SEDP_NN_INT64, good, 2, 3);
  bad_then_good (g, 2, &b1, &g1, "node 'lookup' (Gather): index 1000 out of range [-10, 10)");
  const gint64 low[6] = {-11, 0, 0, 0, 0, 0};
  SedpNnTensor b2 = TT (SEDP_NN_INT64, low, 2, 3);
  bad_then_good (g, 2, &b2, &g1, "node 'lookup' (Gather): index -11 out of range [-10, 10)");

  /* the bag: the node is the Gather's; the second bag's index is the one out of range */
  g_autoptr (SedpNnModel) e = bag_model (3);
  const gint64 ok_ids[6] = {0, 1, 2, 3, 4, 5}, bad_ids[6] = {0, 1, 2, 3, 10, 5};
  SedpNnTensor be[2] = {TT (SEDP_NN_INT64, ok_ids, 2, 3), TT (SEDP_NN_INT64, bad_ids, 2, 3)};
  SedpNnTensor ge[2] = {TT (SEDP_NN_INT64, ok_ids, 2, 3), TT (SEDP_NN_INT64, ok_ids, 2, 3)};
  bad_then_good (e, 2, be, ge, "node 'lookup2' (Gather): index 10 out of range [-10, 10)");

  /* int32 indices from a graph input */
  g_autoptr (SedpNnModel) g32 = tb_new (17);
  IN (g32, "X", SEDP_NN_FLOAT, -1, 5);
  IN (g32, "I", SEDP_NN_INT32, -1, 2);
  tb_attr_i (tb_node (g32, "Gather", "pick", "X,I", "Y"), "axis", 1);
  OUT (g32, "Y", SEDP_NN_FLOAT);
  const float x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const gint32 i_bad[4] = {0, -6, 1, 2}, i_good[4] = {0, -5, 1, 4};
  SedpNnTensor b3[2] = {TT (SEDP_NN_FLOAT, x, 2, 5), TT (SEDP_NN_INT32, i_bad, 2, 2)};
  SedpNnTensor g3[2] = {TT (SEDP_NN_FLOAT, x, 2, 5), TT (SEDP_NN_INT32, i_good, 2, 2)};
  bad_then_good (g32, 2, b3, g3, "node 'pick' (Gather): index -6 out of range [-5, 5)");

  /* GatherElements */
  g_autoptr (SedpNnModel) ge_m = tb_new (17);
  IN (ge_m, "X", SEDP_NN_FLOAT, -1, 4);
  IN (ge_m, "I", SEDP_NN_INT64, -1, 2);
  tb_attr_i (tb_node (ge_m, "GatherElements", "ge", "X,I", "Y"), "axis", 1);
  OUT (ge_m, "Y", SEDP_NN_FLOAT);
  const float x4[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const gint64 e_bad[4] = {0, 1, 4, 2}, e_good[4] = {0, 1, -4, 2};
  SedpNnTensor b4[2] = {TT (SEDP_NN_FLOAT, x4, 2, 4), TT (SEDP_NN_INT64, e_bad, 2, 2)};
  SedpNnTensor g4[2] = {TT (SEDP_NN_FLOAT, x4, 2, 4), TT (SEDP_NN_INT64, e_good, 2, 2)};
  bad_then_good (ge_m, 2, b4, g4, "node 'ge' (GatherElements): index 4 out of range [-4, 4)");
}

/* A device that reports a bad index the CPU does not find: the gather command's axis_len
 * argument (its 10th) lowered from 10 to 2 through the OpenCL API, as a faulty device would
 * misread it; then restored, and the plan runs as before. */
static void
test_faulty_device (void)
{
  g_autoptr (SedpNnModel) m = lookup_model ();
  g_autoptr (GError) error = NULL;
  SedpNnPlan *ocl = sedp_nn_plan_new_on (m, 2, device, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ocl);
  OclPlan *o = ((Plan *) ocl)->ocl;
  CU_ASSERT_EQUAL_FATAL (o->cmds->len, 1);
  OclCmd *c = &g_array_index (o->cmds, OclCmd, 0);
  CU_ASSERT_STRING_EQUAL_FATAL (c->what, "gather");
  const gint64 ids[6] = {0, 1, 5, 1, 0, 1};
  SedpNnTensor in = TT (SEDP_NN_INT64, ids, 2, 3), out;
  cl_long len = 2;
  CU_ASSERT_EQUAL_FATAL (clSetKernelArg (c->kernel, 9, sizeof len, &len), CL_SUCCESS);
  CU_ASSERT_FALSE (sedp_nn_plan_run (ocl, 1, &in, 1, &out, &error));
  g_autofree char *want = g_strdup_printf ("node 'lookup' (Gather): OpenCL device %s reported an "
                                           "index out of range that the CPU engine did not find; "
                                           "the device may be faulty",
                                           sedp_nn_device_get_label (device));
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_STRING_EQUAL (error->message, want);
  CU_ASSERT_TRUE (g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE));
  g_clear_error (&error);
  len = 10;
  CU_ASSERT_EQUAL_FATAL (clSetKernelArg (c->kernel, 9, sizeof len, &len), CL_SUCCESS);
  CU_ASSERT_TRUE (sedp_nn_plan_run (ocl, 1, &in, 1, &out, &error));
  CU_ASSERT_EQUAL (((const float *) out.data)[2 * 4 + 1], (float) (sin (21 * 1.7) * 1e3));
  sedp_nn_plan_free (ocl);
}

int
main (void)
{
  CU_pSuite s = NULL;
  int status = ocl_test_begin ("nn-ocl-ops-index", &valgrind, &device, &s);
  if (status)
    return status;
  CU_add_test (s, "an index out of range: the CPU's message, then a good run", test_index_errors);
  CU_add_test (s, "a device that reports a bad index the CPU does not find", test_faulty_device);
  CU_add_test (s, "gather: axes, int32 and int64, negative indices", test_gather);
  CU_add_test (s, "the embedding bag: sum and mean", test_embedding_bag);
  if (!valgrind) {
    CU_add_test (s, "transpose", test_transpose);
    CU_add_test (s, "slice", test_slice);
    CU_add_test (s, "expand", test_expand);
    CU_add_test (s, "tile", test_tile);
    CU_add_test (s, "concat", test_concat);
    CU_add_test (s, "split", test_split);
    CU_add_test (s, "gather_elements", test_gather_elements);
    CU_add_test (s, "onehot", test_onehot);
    CU_add_test (s, "trilu", test_trilu);
  }
  status = sedp_test_run ();
  sedp_nn_device_unref (device);
  return status;
}
