/* The executor's plumbing for other engines (docs/opencl.md §11, stage 1): every step of a
 * compiled plan has a kernel id (core/nn/exec/params.h) that agrees with the kernel it runs, and
 * the compile options (NnCompileOptions) do what they say. Links the executor's objects itself:
 * these are libsedp's hidden internals. */
#include "../common/test-common.h"
#include "nn-test.h"

#include "nn/exec/plan-private.h"
#include "nn/synth.h"

#include <sys/mman.h>
#include <unistd.h>

/* What docs/opencl.md §3 says each describe name of a CPU kernel is: the id a step with that
 * `kernel` string must have. Written from the design's table, not from the code. */
static NnKernelId
expected_id (const char *kernel)
{
  static const struct {
    const char *names;
    NnKernelId id;
  } table[] = {
    {" gemm matmul gemm+bias gemm+relu gemm+sigmoid gemm+act ", NN_KERNEL_GEMM},
    {" matmul_batched matmul_batched_tb ", NN_KERNEL_MATMUL_BATCHED},
    {" binary ", NN_KERNEL_BINARY},
    {" compare ", NN_KERNEL_COMPARE},
    {" logic ", NN_KERNEL_LOGIC},
    {" fmod mod ", NN_KERNEL_MOD},
    {" pow pow2 pow_half ", NN_KERNEL_POW},
    {" prelu ", NN_KERNEL_PRELU},
    {" where ", NN_KERNEL_WHERE},
    {" Sum Mean Max Min ", NN_KERNEL_VARIADIC},
    {" Relu LeakyRelu Sigmoid Tanh Exp Log Sqrt Neg Abs Reciprocal Erf Floor Ceil Sign Sin Cos "
     "Round ", NN_KERNEL_UNARY},
    {" Softplus Softsign Elu Selu Celu HardSigmoid HardSwish ThresholdedRelu ",
     NN_KERNEL_PARAM_ACT},
    {" clip ", NN_KERNEL_CLIP},
    {" cast ", NN_KERNEL_CAST},
    {" not ", NN_KERNEL_NOT},
    {" isnan isinf ", NN_KERNEL_IS},
    {" softmax log_softmax hardmax ", NN_KERNEL_SOFTMAX},
    {" batchnorm ", NN_KERNEL_BATCHNORM},
    {" layer_norm ", NN_KERNEL_LAYERNORM},
    {" reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_l1 reduce_l2 "
     "reduce_sum_square reduce_log_sum reduce_log_sum_exp ", NN_KERNEL_REDUCE},
    {" embedding_bag_sum embedding_bag_mean ", NN_KERNEL_EMBEDDING_BAG},
    {" gather ", NN_KERNEL_GATHER},
    {" gather_elements ", NN_KERNEL_GATHER_ELEMENTS},
    {" transpose slice expand ", NN_KERNEL_STRIDED_COPY},
    {" tile ", NN_KERNEL_TILE},
    {" concat ", NN_KERNEL_CONCAT},
    {" split ", NN_KERNEL_SPLIT},
    {" argmax argmin ", NN_KERNEL_ARG},
    {" topk ", NN_KERNEL_TOPK},
    {" cumsum ", NN_KERNEL_CUMSUM},
    {" onehot ", NN_KERNEL_ONEHOT},
    {" trilu ", NN_KERNEL_TRILU},
    {" gru gru_lbr ", NN_KERNEL_GRU},
    {" target_attention ", NN_KERNEL_TARGET_ATTENTION},
    {" self_attention ", NN_KERNEL_SELF_ATTENTION},
    {" folded ", NN_KERNEL_RETIRED},
  };
  g_autofree char *key = g_strdup_printf (" %s ", kernel);
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (strstr (table[i].names, key))
      return table[i].id;
  return NN_KERNEL_UNKNOWN;
}

/* The NnElemOp or SoftmaxKind a step of @op_type must record; -1 when the step has none. Mod and
 * Pow have several (the attribute fmod, a constant exponent): any of @alt too. */
static int
expected_op (const char *op_type, int *alt1, int *alt2)
{
  static const struct {
    const char *op_type;
    int op, alt1, alt2;
  } table[] = {
    {"Add", NN_ELEM_ADD, -1, -1},          {"Sub", NN_ELEM_SUB, -1, -1},
    {"Mul", NN_ELEM_MUL, -1, -1},          {"Div", NN_ELEM_DIV, -1, -1},
    {"Equal", NN_ELEM_EQUAL, -1, -1},      {"Less", NN_ELEM_LESS, -1, -1},
    {"Greater", NN_ELEM_GREATER, -1, -1},  {"LessOrEqual", NN_ELEM_LESS_OR_EQUAL, -1, -1},
    {"GreaterOrEqual", NN_ELEM_GREATER_OR_EQUAL, -1, -1},
    {"And", NN_ELEM_AND, -1, -1},          {"Or", NN_ELEM_OR, -1, -1},
    {"Xor", NN_ELEM_XOR, -1, -1},          {"Mod", NN_ELEM_FMOD, NN_ELEM_MOD, -1},
    {"Pow", NN_ELEM_POW, NN_ELEM_POW2, NN_ELEM_POW_HALF},
    {"PRelu", NN_ELEM_PRELU, -1, -1},      {"Where", NN_ELEM_WHERE, -1, -1},
    {"Sum", NN_ELEM_ADD, -1, -1},          {"Mean", NN_ELEM_ADD, -1, -1},
    {"Max", NN_ELEM_MAX, -1, -1},          {"Min", NN_ELEM_MIN, -1, -1},
    {"Softmax", SOFTMAX_PLAIN, -1, -1},    {"LogSoftmax", SOFTMAX_LOG, -1, -1},
    {"Hardmax", SOFTMAX_HARD, -1, -1},
  };
  *alt1 = *alt2 = -1;
  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (strcmp (table[i].op_type, op_type) == 0) {
      *alt1 = table[i].alt1;
      *alt2 = table[i].alt2;
      return table[i].op;
    }
  return -1;
}

/* The operation a broadcast, variadic or softmax step records is its node's. */
static void
check_op (const Step *st)
{
  int op;
  switch (st->id) {
  case NN_KERNEL_BINARY: case NN_KERNEL_COMPARE: case NN_KERNEL_LOGIC: case NN_KERNEL_MOD:
  case NN_KERNEL_POW: case NN_KERNEL_PRELU: case NN_KERNEL_WHERE:
    op = (int) ((const BroadcastParams *) st->params)->op;
    break;
  case NN_KERNEL_VARIADIC:
    op = (int) ((const VariadicParams *) st->params)->op;
    break;
  case NN_KERNEL_SOFTMAX:
    op = (int) ((const SoftmaxParams *) st->params)->kind;
    break;
  default:
    return;
  }
  int alt1, alt2, want = expected_op (st->node->op_type, &alt1, &alt2);
  if (op != want && op != alt1 && op != alt2)
    fprintf (stderr, "\n  step '%s' (%s): op %d, want %d", st->kernel, st->node->op_type, op, want);
  CU_ASSERT (want >= 0 && (op == want || op == alt1 || op == alt2));
}

/* Random inputs for a synthetic model at @batch: floats in [-1, 1), ids in [0, rows) (every
 * table of a synthetic model has opts->rows rows). Free with inputs_free. */
static SedpNnTensor *
synth_inputs (const Plan *p, guint rows, GRand *rng)
{
  SedpNnTensor *in = g_new0 (SedpNnTensor, MAX (p->n_inputs, 1));
  for (guint i = 0; i < p->n_inputs; i++) {
    in[i] = p->input_info[i];
    gint64 n = numel_of (in[i].rank, in[i].dims);
    if (in[i].dtype == SEDP_NN_FLOAT) {
      in[i].data = rand_floats (rng, (gsize) n, -1.0, 1.0);
      continue;
    }
    g_assert (in[i].dtype == SEDP_NN_INT64);
    gint64 *ids = g_new (gint64, MAX (n, 1));
    for (gint64 k = 0; k < n; k++)
      ids[k] = g_rand_int_range (rng, 0, (gint32) rows);
    in[i].data = ids;
  }
  return in;
}

static void
inputs_free (SedpNnTensor *in, guint n)
{
  for (guint i = 0; i < n; i++)
    g_free (in[i].data);
  g_free (in);
}

static Plan *
compile (SedpNnModel *m, gint64 batch, const NnCompileOptions *opts)
{
  g_autoptr (GError) error = NULL;
  Plan *p = nn_plan_new_with_options (m, batch, opts, &error);
  if (error)
    fprintf (stderr, "\n  compile error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_PTR_NULL_FATAL (p->special); /* synthetic models have no parameters */
  return p;
}

static SedpNnModel *
synth (const char *arch, guint *rows)
{
  SedpNnSynthOptions o;
  CU_ASSERT_FATAL (sedp_nn_synth_options_init (&o, "small", arch));
  g_autoptr (GError) error = NULL;
  SedpNnModel *m = sedp_nn_synth (arch, 3, &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  *rows = o.rows;
  return m;
}

static guint
count_id (const Plan *p, NnKernelId id)
{
  guint n = 0;
  for (guint s = 0; s < p->steps->len; s++)
    n += g_array_index (p->steps, Step, s).id == id;
  return n;
}

/* Every step of every synthetic architecture, fused and unfused, at batches 1 and 16: an id in
 * range, not unknown, the one §3 gives its kernel name; the operation recorded for a broadcast,
 * variadic or softmax step is its node's. */
static void
test_synth_ids (void)
{
  guint seen[NN_KERNEL_N] = {0};
  for (const char *const *arch = sedp_nn_synth_archs (); *arch; arch++)
    for (int unfused = 0; unfused < 2; unfused++)
      for (gint64 batch = 1; batch <= 16; batch += 15) {
        guint rows;
        g_autoptr (SedpNnModel) m = synth (*arch, &rows);
        NnCompileOptions opts = {.no_fuse_attention = unfused};
        Plan *p = compile (m, batch, &opts);
        CU_ASSERT (p->steps->len > 0);
        for (guint s = 0; s < p->steps->len; s++) {
          const Step *st = &g_array_index (p->steps, Step, s);
          NnKernelId want = expected_id (st->kernel);
          if (st->id == NN_KERNEL_UNKNOWN || st->id != want || st->id >= NN_KERNEL_N)
            fprintf (stderr,
                     "\n  %s (batch %" G_GINT64_FORMAT "%s) step %u '%s': id %d (%s), want %s", *arch, batch, unfused ? ", unfused" : "", s, st->kernel, (int) st->id,
                     nn_kernel_id_name (st->id), nn_kernel_id_name (want));
          CU_ASSERT (st->id > NN_KERNEL_UNKNOWN && st->id < NN_KERNEL_N);
          CU_ASSERT_EQUAL (st->id, want);
          CU_ASSERT ((st->id == NN_KERNEL_RETIRED) == (st->n_out == 0));
          if (st->id < NN_KERNEL_N)
            seen[st->id]++;
          check_op (st);
        }
        sedp_nn_plan_free ((SedpNnPlan *) p);
      }
  /* The synthetic models reach the main families, both fused attentions included. */
  static const NnKernelId must[] = {
    NN_KERNEL_GEMM, NN_KERNEL_MATMUL_BATCHED, NN_KERNEL_EMBEDDING_BAG, NN_KERNEL_GATHER,
    NN_KERNEL_GRU, NN_KERNEL_TARGET_ATTENTION, NN_KERNEL_SELF_ATTENTION, NN_KERNEL_SOFTMAX,
    NN_KERNEL_WHERE, NN_KERNEL_LAYERNORM, NN_KERNEL_CONCAT,
  };
  for (guint i = 0; i < G_N_ELEMENTS (must); i++) {
    if (seen[must[i]] == 0)
      fprintf (stderr, "\n  no synthetic model has a %s step", nn_kernel_id_name (must[i]));
    CU_ASSERT (seen[must[i]] > 0);
  }
}

/* Every id has a distinct name; 0 and out-of-range ids are "unknown". */
static void
test_id_names (void)
{
  CU_ASSERT_STRING_EQUAL (nn_kernel_id_name (NN_KERNEL_UNKNOWN), "unknown");
  CU_ASSERT_STRING_EQUAL (nn_kernel_id_name (NN_KERNEL_N), "unknown");
  CU_ASSERT_STRING_EQUAL (nn_kernel_id_name ((NnKernelId) -1), "unknown");
  CU_ASSERT_STRING_EQUAL (nn_kernel_id_name (NN_KERNEL_GEMM), "gemm");
  for (int i = 1; i < NN_KERNEL_N; i++) {
    CU_ASSERT_STRING_NOT_EQUAL (nn_kernel_id_name (i), "unknown");
    for (int j = 1; j < i; j++)
      CU_ASSERT_STRING_NOT_EQUAL (nn_kernel_id_name (i), nn_kernel_id_name (j));
  }
}

/* Runs two plans of one model on the same random inputs; every output within the conformance
 * criterion |a − b| ≤ 1e-5 · max(|a|, |b|) + 1e-6 (docs/opencl.md §8), or bit for bit when
 * @exact. */
static void
assert_same_outputs (const char *arch, Plan *a, Plan *b, guint rows, gboolean exact)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  SedpNnTensor *in = synth_inputs (a, rows, rng);
  guint n_out = a->n_outputs;
  CU_ASSERT_EQUAL_FATAL (n_out, b->n_outputs);
  Out oa[8], ob[8];
  CU_ASSERT_FATAL (n_out <= 8);
  g_autoptr (GError) error = NULL;
  gboolean ok = run_plan ((SedpNnPlan *) a, a->n_inputs, in, oa, &error) &&
                run_plan ((SedpNnPlan *) b, b->n_inputs, in, ob, &error);
  if (error)
    fprintf (stderr, "\n  %s: %s\n", arch, error->message);
  inputs_free (in, a->n_inputs);
  CU_ASSERT_FATAL (ok);
  for (guint k = 0; k < n_out; k++) {
    CU_ASSERT_EQUAL_FATAL (oa[k].numel, ob[k].numel);
    CU_ASSERT_EQUAL_FATAL (oa[k].dtype, SEDP_NN_FLOAT);
    const float *x = oa[k].data, *y = ob[k].data;
    guint bad = 0;
    for (gint64 i = 0; i < oa[k].numel; i++) {
      double d = fabs ((double) x[i] - y[i]), s = MAX (fabs (x[i]), fabs (y[i]));
      gboolean same = exact ? memcmp (&x[i], &y[i], sizeof (float)) == 0 : d <= 1e-5 * s + 1e-6;
      if (!same && bad++ < 3)
        fprintf (stderr, "\n  %s output %u [%" G_GINT64_FORMAT "]: %.9g vs %.9g", arch, k, i,
                 (double) x[i], (double) y[i]);
    }
    CU_ASSERT_EQUAL (bad, 0);
  }
  outs_free (oa, n_out);
  outs_free (ob, n_out);
}

/* no_fuse_attention: din and bst lose their fused step (and keep the unfused kernels), with the
 * same outputs. */
static void
test_option_no_fuse_attention (void)
{
  static const struct {
    const char *arch;
    NnKernelId fused;
  } cases[] = {{"din", NN_KERNEL_TARGET_ATTENTION}, {"bst", NN_KERNEL_SELF_ATTENTION}};
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    guint rows;
    g_autoptr (SedpNnModel) m = synth (cases[c].arch, &rows);
    NnCompileOptions fused = {0}, unfused = {.no_fuse_attention = TRUE};
    Plan *a = compile (m, 8, &fused), *b = compile (m, 8, &unfused);
    CU_ASSERT (count_id (a, cases[c].fused) > 0);
    CU_ASSERT_EQUAL (count_id (b, cases[c].fused), 0);
    /* The fused step's parts are retired (bst also folds Kᵀ into a MatMul either way). */
    CU_ASSERT (count_id (a, NN_KERNEL_RETIRED) > count_id (b, NN_KERNEL_RETIRED));
    assert_same_outputs (cases[c].arch, a, b, rows, FALSE);
    sedp_nn_plan_free ((SedpNnPlan *) a);
    sedp_nn_plan_free ((SedpNnPlan *) b);
  }
}

/* The packed weights a plan's steps hold: GEMM's B, GRU's W and R, target attention's folded
 * weights. */
static guint
count_packed (const Plan *p)
{
  guint n = 0;
  for (guint s = 0; s < p->steps->len; s++) {
    const Step *st = &g_array_index (p->steps, Step, s);
    if (st->id == NN_KERNEL_GEMM)
      n += ((const GemmParams *) st->params)->packed != NULL;
    if (st->id == NN_KERNEL_GRU) {
      const GruParams *g = st->params;
      for (int d = 0; d < 2; d++)
        n += (g->pw[d] != NULL) + (g->pr[d] != NULL) + (g->prh[d] != NULL);
    }
    if (st->id == NN_KERNEL_TARGET_ATTENTION) {
      const TargetAttParams *t = st->params;
      n += (t->pkm != NULL) + (t->pq != NULL);
    }
  }
  return n;
}

/* The packed kernels exist for AVX2 + FMA and AVX-512 (gemm-packed.c). */
static gboolean
cpu_packs (void)
{
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512f") ||
         (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"));
}

/* no_pack: no step holds a packed weight (mlp's GEMMs, dien's GRU, din's fused attention); the
 * outputs are those of the packed plan within the criterion. Without it, on a CPU the packed
 * kernels fit, each of these models packs something. */
static void
test_option_no_pack (void)
{
  static const char *const archs[] = {"mlp", "dien", "din"};
  for (guint c = 0; c < G_N_ELEMENTS (archs); c++) {
    guint rows;
    g_autoptr (SedpNnModel) m = synth (archs[c], &rows);
    NnCompileOptions packed = {0}, plain = {.no_pack = TRUE};
    Plan *a = compile (m, 16, &packed), *b = compile (m, 16, &plain);
    CU_ASSERT_EQUAL (count_packed (b), 0);
    if (cpu_packs ()) {
      if (count_packed (a) == 0)
        fprintf (stderr, "\n  %s: nothing packed without no_pack", archs[c]);
      CU_ASSERT (count_packed (a) > 0);
    }
    assert_same_outputs (archs[c], a, b, rows, FALSE);
    sedp_nn_plan_free ((SedpNnPlan *) a);
    sedp_nn_plan_free ((SedpNnPlan *) b);
  }
}

/* Pages of [@p, @p + @size) resident in memory (mincore). */
static gsize
resident_pages (gconstpointer p, gsize size)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gsize n = (size + page - 1) / page;
  g_autofree unsigned char *vec = g_new0 (unsigned char, n);
  CU_ASSERT_EQUAL_FATAL (mincore ((void *) p, size, vec), 0);
  gsize r = 0;
  for (gsize i = 0; i < n; i++)
    r += vec[i] & 1;
  return r;
}

/* lazy_arena: a small arena (heap-allocated by default) is mapped and has no resident page
 * until a run; the results are the default plan's, bit for bit (the same kernels). */
static void
test_option_lazy_arena (void)
{
  guint rows;
  g_autoptr (SedpNnModel) m = synth ("mlp", &rows);
  NnCompileOptions heap = {0}, lazy = {.lazy_arena = TRUE};
  Plan *a = compile (m, 4, &heap), *b = compile (m, 4, &lazy);
  CU_ASSERT_EQUAL (a->arena_size, b->arena_size);
  CU_ASSERT_FATAL (a->arena_size > 0 && a->arena_size < ((gsize) 1 << 20)); /* below the map size */
  CU_ASSERT_FALSE (a->arena_mapped);
  CU_ASSERT_TRUE (b->arena_mapped);
  CU_ASSERT_EQUAL ((guintptr) b->arena % (guintptr) sysconf (_SC_PAGESIZE), 0);
  CU_ASSERT_EQUAL (resident_pages (b->arena, b->arena_size), 0);
  assert_same_outputs ("mlp", a, b, rows, TRUE);
  CU_ASSERT (resident_pages (b->arena, b->arena_size) > 0);
  sedp_nn_plan_free ((SedpNnPlan *) a);
  sedp_nn_plan_free ((SedpNnPlan *) b);
}

/* The environment variables map onto the options, and reach sedp_nn_plan_new. */
static void
test_options_from_env (void)
{
  g_autofree char *saved_fuse = g_strdup (g_getenv ("SEDP_NN_NO_FUSE_ATTENTION"));
  g_autofree char *saved_pack = g_strdup (g_getenv ("SEDP_NN_NO_PACKED"));
  g_unsetenv ("SEDP_NN_NO_FUSE_ATTENTION");
  g_unsetenv ("SEDP_NN_NO_PACKED");
  NnCompileOptions o;
  memset (&o, 0xff, sizeof o);
  nn_compile_options_from_env (&o);
  CU_ASSERT (!o.no_fuse_attention && !o.no_pack && !o.lazy_arena);
  g_setenv ("SEDP_NN_NO_FUSE_ATTENTION", "1", TRUE);
  nn_compile_options_from_env (&o);
  CU_ASSERT (o.no_fuse_attention && !o.no_pack && !o.lazy_arena);
  g_unsetenv ("SEDP_NN_NO_FUSE_ATTENTION");
  g_setenv ("SEDP_NN_NO_PACKED", "", TRUE); /* set, even empty */
  nn_compile_options_from_env (&o);
  CU_ASSERT (!o.no_fuse_attention && o.no_pack && !o.lazy_arena);

  /* Through the public API: din compiled with both set has neither fusion nor packing. */
  g_setenv ("SEDP_NN_NO_FUSE_ATTENTION", "1", TRUE);
  guint rows;
  g_autoptr (SedpNnModel) m = synth ("din", &rows);
  g_autoptr (GError) error = NULL;
  Plan *p = (Plan *) sedp_nn_plan_new (m, 8, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_EQUAL (count_id (p, NN_KERNEL_TARGET_ATTENTION), 0);
  CU_ASSERT_EQUAL (count_packed (p), 0);
  CU_ASSERT (p->options.no_fuse_attention && p->options.no_pack && !p->options.lazy_arena);
  sedp_nn_plan_free ((SedpNnPlan *) p);
  g_unsetenv ("SEDP_NN_NO_FUSE_ATTENTION");
  g_unsetenv ("SEDP_NN_NO_PACKED");
  p = (Plan *) sedp_nn_plan_new (m, 8, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT (count_id (p, NN_KERNEL_TARGET_ATTENTION) > 0);
  sedp_nn_plan_free ((SedpNnPlan *) p);

  if (saved_fuse)
    g_setenv ("SEDP_NN_NO_FUSE_ATTENTION", saved_fuse, TRUE);
  if (saved_pack)
    g_setenv ("SEDP_NN_NO_PACKED", saved_pack, TRUE);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return CU_get_error ();
  CU_pSuite s = CU_add_suite ("nn-plan-ids", NULL, NULL);
  CU_add_test (s, "every step of every synthetic model has its kernel id", test_synth_ids);
  CU_add_test (s, "kernel id names", test_id_names);
  CU_add_test (s, "no_fuse_attention", test_option_no_fuse_attention);
  CU_add_test (s, "no_pack", test_option_no_pack);
  CU_add_test (s, "lazy_arena", test_option_lazy_arena);
  CU_add_test (s, "options from the environment", test_options_from_env);
  return sedp_test_run ();
}
