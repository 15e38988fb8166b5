/* The elementwise family on an OpenCL device (core/nn/ocl/lower-elementwise.c,
 * kernels/broadcast.cl, kernels/elementwise.cl; docs/opencl.md §3.2, §8, §9.1) on PoCL: every
 * operator of the kernel ids binary, compare, logic, mod, pow, prelu, where, variadic, unary,
 * param_act, clip, cast, not and is, as small models run on the CPU engine and on the device on
 * the same inputs at batches 1, 7 and 64: integers and bools equal, floats within §8's
 * elementwise bound (rtol 1e-5), NaN where the CPU gives NaN. Operand shapes cover the three
 * walks (flat, blocks: scalar, row, column; the general N-d walk with broadcasts on every axis);
 * special values (NaN, ±∞, ±0, int64 division by zero, negative Mod operands, Pow's special
 * exponents) reach the device as computed values: (x·0 + 1)·K turns a graph input x into rows of
 * the constant K without letting the compiler fold them. Each model's device plan must run every
 * step on the device (no host fallback) and hold a step of the kernel under test. The reference
 * is the CPU engine (itself checked against ONNX's outputs, docs/conformance.md). Under valgrind
 * (SEDP_VALGRIND=1) PoCL is slow: batch 7 only, the first cases of each test. */
#include "../nn/nn-test.h"
#include "ocl-test.h"

#include "nn/exec/plan-private.h"

#include <glib/gstdio.h>

static SedpNnDevice *device;
static gboolean valgrind;
static guint32 seed = 1;

/* §8: elementwise float results. */
#define RTOL 1e-5
#define ATOL 1e-30

#define N -1 /* the batch dimension in operand shapes */

/* ---- checking a model ---- */

/* Whether the device plan of @m runs every step on the device and holds a step of kernel @id
 * named @kernel (NULL: any name). */
static gboolean
on_device (SedpNnModel *m, NnKernelId id, const char *kernel)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new_on (m, 7, device, &error);
  if (plan == NULL) {
    fprintf (stderr, "\n  device plan: %s", error->message);
    return FALSE;
  }
  const Plan *p = (const Plan *) plan;
  gboolean found = FALSE;
  for (guint i = 0; i < p->steps->len; i++) {
    const Step *s = &g_array_index (p->steps, Step, i);
    found = found || (s->id == id && (kernel == NULL || strcmp (s->kernel, kernel) == 0));
  }
  guint n_host = p->ocl->n_host;
  if (n_host > 0 || !found) {
    g_autoptr (GString) d = g_string_new (NULL);
    sedp_nn_plan_describe (plan, d);
    fprintf (stderr, "\n  %u host commands, kernel id %d '%s' %s:\n%s", n_host, (int) id,
             kernel ? kernel : "", found ? "found" : "missing", d->str);
  }
  sedp_nn_plan_free (plan);
  return n_host == 0 && found;
}

/* Device against CPU at batches 1, 7 and 64 (7 under valgrind) within |ocl − cpu| ≤ RTOL ·
 * max(|ocl|, |cpu|) + @atol, then on_device. Takes @m. */
static gboolean
check_atol (SedpNnModel *m, const char *what, NnKernelId id, const char *kernel, double atol)
{
  const gint64 batches[] = {1, 7, 64};
  gboolean ok = TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (batches); i++)
    if (!valgrind || batches[i] == 7)
      ok = ocl_test_parity (m, batches[i], device, seed++, RTOL, atol) && ok;
  ok = on_device (m, id, kernel) && ok;
  if (!ok)
    fprintf (stderr, "\n  case: %s\n", what);
  CU_ASSERT_TRUE (ok);
  sedp_nn_model_unref (m);
  return ok;
}

/* check_atol with §8's elementwise bound (atol 1e-30). */
static gboolean
check (SedpNnModel *m, const char *what, NnKernelId id, const char *kernel)
{
  return check_atol (m, what, id, kernel, ATOL);
}

/* ---- building operands ---- */

/* An operand: a graph input (dims with N for the batch) or a random initializer. */
typedef struct {
  gboolean init;
  int rank;
  gint64 dims[4];
} Opnd;

#define INP(...) ((Opnd){FALSE, NDIMS (__VA_ARGS__), {__VA_ARGS__}})
#define INI(...) ((Opnd){TRUE, NDIMS (__VA_ARGS__), {__VA_ARGS__}})
#define SCALAR ((Opnd){TRUE, 0, {0}})

/* Random initializer data: floats in [-2, 2), integers in [-5, 5], bools 0/1. */
static gpointer
rand_data (SedpNnDType dt, gint64 n, GRand *rng)
{
  gpointer d = g_malloc0 ((gsize) MAX (n, 1) * sedp_nn_dtype_size (dt));
  for (gint64 i = 0; i < n; i++)
    switch (dt) {
    case SEDP_NN_FLOAT: ((float *) d)[i] = (float) g_rand_double_range (rng, -2, 2); break;
    case SEDP_NN_DOUBLE: ((double *) d)[i] = g_rand_double_range (rng, -2, 2); break;
    case SEDP_NN_INT64: ((gint64 *) d)[i] = g_rand_int_range (rng, -5, 6); break;
    case SEDP_NN_INT32: ((gint32 *) d)[i] = g_rand_int_range (rng, -5, 6); break;
    default: ((guint8 *) d)[i] = (guint8) g_rand_int_range (rng, 0, 2); break;
    }
  return d;
}

/* Adds operand @o of type @dt as value @name. An int64 graph input (random in [0, 4)) is shifted
 * by −2 so that negative values and zeros occur. */
static void
add_operand (SedpNnModel *m, const char *name, const Opnd *o, SedpNnDType dt, GRand *rng)
{
  if (o->init) {
    g_autofree gpointer data = rand_data (dt, numel_of (o->rank, o->dims), rng);
    tb_init (m, name, dt, o->rank, o->dims, data);
    return;
  }
  if (dt != SEDP_NN_INT64) {
    tb_input (m, name, dt, o->rank, o->dims);
    return;
  }
  g_autofree char *raw = g_strconcat (name, "_raw", NULL), *two = g_strconcat (name, "_two", NULL);
  g_autofree char *ins = g_strconcat (raw, ",", two, NULL);
  tb_input (m, raw, dt, o->rank, o->dims);
  tb_init_i (m, two, 0, NULL, I64 (2));
  tb_node (m, "Sub", NULL, ins, name);
}

/* Y = @op (a, b), a of @da, b of @db; Mod's fmod attribute when @fmod ≥ 0. */
static SedpNnModel *
bin_model (const char *op, SedpNnDType da, const Opnd *a, SedpNnDType db, const Opnd *b, int fmod,
           GRand *rng)
{
  SedpNnModel *m = tb_new (17);
  add_operand (m, "a", a, da, rng);
  add_operand (m, "b", b, db, rng);
  SedpNnNode *n = tb_node (m, op, "op", "a,b", "Y");
  if (fmod >= 0)
    tb_attr_i (n, "fmod", fmod);
  OUT (m, "Y", SEDP_NN_UNDEFINED);
  return m;
}

/* Value @name [N, 1, @n]: every row the constant @k (of @dt, float or int64), computed on the
 * device from graph input @name_x: (x·0 + 1)·k for float, x·0 + k for int64. */
static void
rows_of (SedpNnModel *m, const char *name, SedpNnDType dt, guint n, gconstpointer k)
{
  g_autofree char *x = g_strconcat (name, "_x", NULL), *z = g_strconcat (name, "_z", NULL);
  g_autofree char *zero = g_strconcat (name, "_0", NULL), *one = g_strconcat (name, "_1", NULL);
  g_autofree char *u = g_strconcat (name, "_u", NULL), *kn = g_strconcat (name, "_k", NULL);
  g_autofree char *xz = g_strconcat (x, ",", zero, NULL), *zo = g_strconcat (z, ",", one, NULL);
  g_autofree char *uk = g_strconcat (u, ",", kn, NULL), *zk = g_strconcat (z, ",", kn, NULL);
  tb_input (m, x, dt, 3, I64 (N, 1, n));
  tb_init (m, kn, dt, 1, I64 (n), k);
  if (dt == SEDP_NN_FLOAT) {
    tb_scalar_f (m, zero, 0.0f);
    tb_scalar_f (m, one, 1.0f);
    tb_node (m, "Mul", NULL, xz, z);
    tb_node (m, "Add", NULL, zo, u);
    tb_node (m, "Mul", NULL, uk, name);
  } else {
    tb_init_i (m, zero, 0, NULL, I64 (0));
    tb_node (m, "Mul", NULL, xz, z);
    tb_node (m, "Add", NULL, zk, name);
  }
}

/* Float specials and ordinary values. */
static const float spec_f[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1.0f, -2.5f, 0.5f,
                               3.0e38f, -1.0e-40f, 2.0f, -7.25f};
#define N_SPEC_F G_N_ELEMENTS (spec_f)
/* int64 values around 0 (every pair of them: division by 0 and by −1, each sign of Mod). */
static const gint64 spec_l[] = {-7, -3, -2, -1, 0, 1, 2, 3, 7, 1000003, -999};
#define N_SPEC_L G_N_ELEMENTS (spec_l)

/* Y = @op over every pair of specials: rows_of (a) [N, 1, n] against the constant [n, 1] (the
 * constant first when @swap). */
static SedpNnModel *
spec_model (const char *op, SedpNnDType dt, int fmod, gboolean swap)
{
  SedpNnModel *m = tb_new (17);
  gconstpointer k = dt == SEDP_NN_FLOAT ? (gconstpointer) spec_f : (gconstpointer) spec_l;
  guint n = dt == SEDP_NN_FLOAT ? N_SPEC_F : N_SPEC_L;
  rows_of (m, "a", dt, n, k);
  tb_init (m, "b", dt, 2, I64 (n, 1), k);
  SedpNnNode *node = tb_node (m, op, "op", swap ? "b,a" : "a,b", "Y");
  if (fmod >= 0)
    tb_attr_i (node, "fmod", fmod);
  OUT (m, "Y", SEDP_NN_UNDEFINED);
  return m;
}

/* The operand shapes of every binary test: flat, row, scalar first, column, N-d, N-d on every
 * axis (two graph inputs), a rank-1 batch-only pair. */
static const struct {
  const char *what;
  Opnd a, b;
} shapes[] = {
  {"flat [N,5] ∘ [N,5]", INP (N, 5), INP (N, 5)},
  {"row [N,5] ∘ [5]", INP (N, 5), INI (5)},
  {"scalar [] ∘ [N,5]", SCALAR, INP (N, 5)},
  {"column [N,4,5] ∘ [N,4,1]", INP (N, 4, 5), INP (N, 4, 1)},
  {"blocks [1,3] ∘ [N,1]", INI (1, 3), INP (N, 1)},
  {"nd [N,1,5] ∘ [3,1]", INP (N, 1, 5), INI (3, 1)},
  {"nd every axis [N,1,4,1] ∘ [N,3,1,2]", INP (N, 1, 4, 1), INP (N, 3, 1, 2)},
  {"nd [1,3,1,2] ∘ [N,1,4,1]", INI (1, 3, 1, 2), INP (N, 1, 4, 1)},
};

/* @op of two @dt operands over every shape pair. */
static void
check_shapes (const char *op, SedpNnDType dt, SedpNnDType db, int fmod, NnKernelId id,
              const char *kernel, GRand *rng)
{
  for (guint i = 0; i < G_N_ELEMENTS (shapes) && (!valgrind || i < 2); i++) {
    g_autofree char *what = g_strdup_printf ("%s %s/%s %s", op, sedp_nn_dtype_name (dt),
                                             sedp_nn_dtype_name (db), shapes[i].what);
    check (bin_model (op, dt, &shapes[i].a, db, &shapes[i].b, fmod, rng), what, id, kernel);
  }
}

/* @op over every pair of specials, in both orders. */
static void
check_specials (const char *op, SedpNnDType dt, int fmod, NnKernelId id, const char *kernel)
{
  for (int swap = 0; swap < 2 && (!valgrind || swap == 0); swap++) {
    g_autofree char *what = g_strdup_printf ("%s %s specials%s", op, sedp_nn_dtype_name (dt),
                                             swap ? " swapped" : "");
    check (spec_model (op, dt, fmod, swap), what, id, kernel);
  }
}

/* ---- the broadcast family ---- */

static void
test_binary (void)
{
  GRand *rng = g_rand_new_with_seed (1);
  const char *ops[] = {"Add", "Sub", "Mul", "Div"};
  for (guint k = 0; k < G_N_ELEMENTS (ops) && (!valgrind || k < 1); k++) {
    check_shapes (ops[k], SEDP_NN_FLOAT, SEDP_NN_FLOAT, -1, NN_KERNEL_BINARY, "binary", rng);
    check_shapes (ops[k], SEDP_NN_INT64, SEDP_NN_INT64, -1, NN_KERNEL_BINARY, "binary", rng);
  }
  g_rand_free (rng);
}

/* ±∞, NaN, ±0, denormals; int64 division by 0 and by −1 (0 and −x as the CPU). */
static void
test_binary_specials (void)
{
  const char *ops[] = {"Div", "Add", "Sub", "Mul"};
  for (guint k = 0; k < G_N_ELEMENTS (ops) && (!valgrind || k < 1); k++) {
    check_specials (ops[k], SEDP_NN_FLOAT, -1, NN_KERNEL_BINARY, "binary");
    check_specials (ops[k], SEDP_NN_INT64, -1, NN_KERNEL_BINARY, "binary");
  }
}

static void
test_compare (void)
{
  GRand *rng = g_rand_new_with_seed (2);
  const char *ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  for (guint k = 0; k < G_N_ELEMENTS (ops) && (!valgrind || k < 1); k++) {
    check_shapes (ops[k], SEDP_NN_FLOAT, SEDP_NN_FLOAT, -1, NN_KERNEL_COMPARE, "compare", rng);
    check_shapes (ops[k], SEDP_NN_INT64, SEDP_NN_INT64, -1, NN_KERNEL_COMPARE, "compare", rng);
    check_shapes (ops[k], SEDP_NN_INT32, SEDP_NN_INT32, -1, NN_KERNEL_COMPARE, "compare", rng);
    check_specials (ops[k], SEDP_NN_FLOAT, -1, NN_KERNEL_COMPARE, "compare"); /* NaN: false */
    check_specials (ops[k], SEDP_NN_INT64, -1, NN_KERNEL_COMPARE, "compare");
  }
  check_shapes ("Equal", SEDP_NN_BOOL, SEDP_NN_BOOL, -1, NN_KERNEL_COMPARE, "compare", rng);
  g_rand_free (rng);
}

static void
test_logic (void)
{
  GRand *rng = g_rand_new_with_seed (3);
  const char *ops[] = {"And", "Or", "Xor"};
  for (guint k = 0; k < G_N_ELEMENTS (ops) && (!valgrind || k < 1); k++)
    check_shapes (ops[k], SEDP_NN_BOOL, SEDP_NN_BOOL, -1, NN_KERNEL_LOGIC, "logic", rng);
  SedpNnModel *m = tb_new (17);
  IN (m, "x", SEDP_NN_BOOL, N, 3, 4);
  tb_node (m, "Not", "op", "x", "Y");
  OUT (m, "Y", SEDP_NN_BOOL);
  check (m, "Not", NN_KERNEL_NOT, "not");
  g_rand_free (rng);
}

/* fmod (the dividend's sign) of float and int64, the floored int64 Mod (the divisor's sign); x
 * mod 0 is 0 for int64, NaN for float. */
static void
test_mod (void)
{
  GRand *rng = g_rand_new_with_seed (4);
  check_shapes ("Mod", SEDP_NN_FLOAT, SEDP_NN_FLOAT, 1, NN_KERNEL_MOD, "fmod", rng);
  check_shapes ("Mod", SEDP_NN_INT64, SEDP_NN_INT64, 1, NN_KERNEL_MOD, "fmod", rng);
  check_shapes ("Mod", SEDP_NN_INT64, SEDP_NN_INT64, 0, NN_KERNEL_MOD, "mod", rng);
  check_specials ("Mod", SEDP_NN_FLOAT, 1, NN_KERNEL_MOD, "fmod");
  check_specials ("Mod", SEDP_NN_INT64, 1, NN_KERNEL_MOD, "fmod");
  check_specials ("Mod", SEDP_NN_INT64, 0, NN_KERNEL_MOD, "mod");
  g_rand_free (rng);
}

/* Y = Pow (a, E) with E a constant of @dt, @n elements. */
static SedpNnModel *
pow_const_model (const Opnd *a, gboolean specials, SedpNnDType dt, int rank, gconstpointer e)
{
  SedpNnModel *m = tb_new (17);
  if (specials)
    rows_of (m, "a", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
  else
    tb_input (m, "a", SEDP_NN_FLOAT, a->rank, a->dims);
  tb_init (m, "e", dt, rank, rank ? I64 (N_SPEC_F) : NULL, e);
  tb_node (m, "Pow", "op", "a,e", "Y");
  OUT (m, "Y", SEDP_NN_FLOAT);
  return m;
}

/* Float, int64 and int32 exponents (the CPU: pow in double, rounded once), every special pair,
 * and the constant exponents 2 (x·x) and 0.5 (sqrt with −∞ → +∞ and −0 → +0). */
static void
test_pow (void)
{
  GRand *rng = g_rand_new_with_seed (5);
  check_shapes ("Pow", SEDP_NN_FLOAT, SEDP_NN_FLOAT, -1, NN_KERNEL_POW, "pow", rng);
  check_shapes ("Pow", SEDP_NN_FLOAT, SEDP_NN_INT64, -1, NN_KERNEL_POW, "pow", rng);
  check_shapes ("Pow", SEDP_NN_FLOAT, SEDP_NN_INT32, -1, NN_KERNEL_POW, "pow", rng);
  check_specials ("Pow", SEDP_NN_FLOAT, -1, NN_KERNEL_POW, "pow");
  const gint64 el[N_SPEC_F] = {0, 1, 2, 3, -1, -2, 5, -7, 31, 64, -64, 10};
  gint32 ei[N_SPEC_F];
  for (guint i = 0; i < N_SPEC_F; i++)
    ei[i] = (gint32) el[i];
  check (pow_const_model (NULL, TRUE, SEDP_NN_INT64, 1, el), "Pow specials ^ int64 row",
         NN_KERNEL_POW, "pow");
  check (pow_const_model (NULL, TRUE, SEDP_NN_INT32, 1, ei), "Pow specials ^ int32 row",
         NN_KERNEL_POW, "pow");
  const Opnd x = INP (N, 6);
  for (int sp = 0; sp < 2; sp++) {
    check (pow_const_model (&x, sp, SEDP_NN_FLOAT, 0, F32 (2.0f)), "Pow ^ 2.0", NN_KERNEL_POW,
           "pow2");
    check (pow_const_model (&x, sp, SEDP_NN_INT64, 0, I64 (2)), "Pow ^ int64 2", NN_KERNEL_POW,
           "pow2");
    check (pow_const_model (&x, sp, SEDP_NN_FLOAT, 0, F32 (0.5f)), "Pow ^ 0.5", NN_KERNEL_POW,
           "pow_half");
    check (pow_const_model (&x, sp, SEDP_NN_FLOAT, 0, F32 (-1.5f)), "Pow ^ -1.5", NN_KERNEL_POW,
           "pow");
  }
  g_rand_free (rng);
}

/* Slopes broadcast to X: a scalar, per channel [3, 1], a row [4], full [3, 4]; specials. */
static void
test_prelu (void)
{
  GRand *rng = g_rand_new_with_seed (6);
  const Opnd x = INP (N, 3, 4), slopes[] = {SCALAR, INI (3, 1), INI (4), INI (3, 4), INI (1)};
  for (guint i = 0; i < G_N_ELEMENTS (slopes) && (!valgrind || i < 1); i++)
    check (bin_model ("PRelu", SEDP_NN_FLOAT, &x, SEDP_NN_FLOAT, &slopes[i], -1, rng), "PRelu",
           NN_KERNEL_PRELU, "prelu");
  SedpNnModel *m = tb_new (17);
  rows_of (m, "a", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
  tb_init_f (m, "s", 1, I64 (N_SPEC_F), spec_f);
  tb_node (m, "PRelu", "op", "a,s", "Y");
  OUT (m, "Y", SEDP_NN_FLOAT);
  check (m, "PRelu specials", NN_KERNEL_PRELU, "prelu");
  g_rand_free (rng);
}

/* Where (c, x, y) with elements of 1 (bool), 4 (float, int32) and 8 (int64, double) bytes, over
 * flat, block and N-d walks. */
static void
test_where (void)
{
  GRand *rng = g_rand_new_with_seed (7);
  const SedpNnDType types[] = {SEDP_NN_FLOAT, SEDP_NN_INT64, SEDP_NN_BOOL, SEDP_NN_INT32,
                               SEDP_NN_DOUBLE};
  const struct {
    Opnd c, x, y;
  } cases[] = {
    {INP (N, 4), INP (N, 4), INP (N, 4)},
    {INP (N, 4), INP (N, 4), INI (4)},
    {INP (N, 1, 3), INI (4, 1), SCALAR},
    {INP (N, 1, 3, 1), INP (N, 2, 1, 1), INI (1, 1, 1, 5)},
  };
  for (guint t = 0; t < G_N_ELEMENTS (types) && (!valgrind || t < 1); t++)
    for (guint i = 0; i < G_N_ELEMENTS (cases) && (!valgrind || i < 2); i++) {
      SedpNnModel *m = tb_new (17);
      add_operand (m, "c", &cases[i].c, SEDP_NN_BOOL, rng);
      add_operand (m, "x", &cases[i].x, types[t], rng);
      add_operand (m, "y", &cases[i].y, types[t], rng);
      tb_node (m, "Where", "op", "c,x,y", "Y");
      OUT (m, "Y", types[t]);
      g_autofree char *what = g_strdup_printf ("Where %s case %u", sedp_nn_dtype_name (types[t]), i);
      check (m, what, NN_KERNEL_WHERE, "where");
    }
  g_rand_free (rng);
}

/* Y = @op (x0 … x(n-1)) with operand shapes from @shapes (cycled). */
static SedpNnModel *
variadic_model (const char *op, SedpNnDType dt, guint n, const Opnd *opnds, guint n_opnds,
                GRand *rng)
{
  SedpNnModel *m = tb_new (17);
  g_autoptr (GString) ins = g_string_new (NULL);
  for (guint k = 0; k < n; k++) {
    g_autofree char *name = g_strdup_printf ("x%u", k);
    add_operand (m, name, &opnds[k % n_opnds], dt, rng);
    g_string_append_printf (ins, "%s%s", k ? "," : "", name);
  }
  tb_node (m, op, "op", ins->str, "Y");
  OUT (m, "Y", dt);
  return m;
}

/* Sum, Mean, Max, Min of 1 to 5 inputs (accumulated in the CPU's order, Mean divided by n),
 * broadcast; Max and Min of int64; NaN wins in Max and Min wherever it is. */
static void
test_variadic (void)
{
  GRand *rng = g_rand_new_with_seed (8);
  const char *ops[] = {"Sum", "Mean", "Max", "Min"};
  const Opnd bc[] = {INP (N, 3, 4), INI (4), INP (N, 3, 1), INI (3, 1), SCALAR};
  const Opnd same[] = {INP (N, 6)};
  const Opnd nd[] = {INP (N, 1, 4), INI (3, 1), INP (N, 3, 4)};
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    for (guint n = 1; n <= 5 && (!valgrind || n == 3); n++) {
      g_autofree char *what = g_strdup_printf ("%s of %u", ops[k], n);
      check (variadic_model (ops[k], SEDP_NN_FLOAT, n, same, 1, rng), what, NN_KERNEL_VARIADIC,
             ops[k]);
      check (variadic_model (ops[k], SEDP_NN_FLOAT, n, bc, G_N_ELEMENTS (bc), rng), what,
             NN_KERNEL_VARIADIC, ops[k]);
      check (variadic_model (ops[k], SEDP_NN_FLOAT, n, nd, G_N_ELEMENTS (nd), rng), what,
             NN_KERNEL_VARIADIC, ops[k]);
      if (k >= 2)
        check (variadic_model (ops[k], SEDP_NN_INT64, n, bc, G_N_ELEMENTS (bc), rng), what,
               NN_KERNEL_VARIADIC, ops[k]);
    }
  /* NaN first, in the middle, last; ±∞ */
  for (guint k = 0; k < G_N_ELEMENTS (ops) && !valgrind; k++) {
    SedpNnModel *m = tb_new (17);
    rows_of (m, "a", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
    float rev[N_SPEC_F];
    for (guint i = 0; i < N_SPEC_F; i++)
      rev[i] = spec_f[N_SPEC_F - 1 - i];
    tb_init_f (m, "b", 2, I64 (N_SPEC_F, 1), spec_f);
    tb_init_f (m, "c", 1, I64 (N_SPEC_F), rev);
    tb_node (m, ops[k], "op", "c,a,b,a", "Y");
    OUT (m, "Y", SEDP_NN_FLOAT);
    g_autofree char *what = g_strdup_printf ("%s of specials", ops[k]);
    check (m, what, NN_KERNEL_VARIADIC, ops[k]);
  }
  g_rand_free (rng);
}

/* ---- one operand ---- */

/* Y = @op (x), x [N, 2, 3] of @dt (or rows of the specials), with @alpha when ≥ 0 and the
 * attribute @beta_name = @beta when named. */
static SedpNnModel *
unary_model (const char *op, SedpNnDType dt, gboolean specials, const char *alpha_name,
             float alpha, const char *beta_name, float beta)
{
  SedpNnModel *m = tb_new (17);
  if (specials && dt == SEDP_NN_FLOAT)
    rows_of (m, "x", dt, N_SPEC_F, spec_f);
  else if (specials)
    rows_of (m, "x", dt, N_SPEC_L, spec_l);
  else if (dt == SEDP_NN_FLOAT) { /* x · 3: [-3, 3) */
    IN (m, "x0", dt, N, 2, 3);
    tb_scalar_f (m, "three", 3.0f);
    tb_node (m, "Mul", NULL, "x0,three", "x");
  } else {
    add_operand (m, "x", &INP (N, 2, 3), dt, NULL);
  }
  SedpNnNode *n = tb_node (m, op, "op", "x", "Y");
  if (alpha_name)
    tb_attr_f (n, alpha_name, alpha);
  if (beta_name)
    tb_attr_f (n, beta_name, beta);
  OUT (m, "Y", dt);
  return m;
}

/* Every unary function of UnaryParams (Sigmoid and Tanh: the CPU's polynomials and the device's
 * built-ins agree within §8), on ordinary values and on the specials; Neg and Abs of int64. */
static void
test_unary (void)
{
  const char *ops[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs",
                       "Reciprocal", "Erf", "Floor", "Ceil", "Sign", "Sin", "Cos", "Round"};
  for (guint k = 0; k < G_N_ELEMENTS (ops) && (!valgrind || k < 2); k++)
    for (int sp = 0; sp < 2; sp++) {
      gboolean leaky = strcmp (ops[k], "LeakyRelu") == 0;
      g_autofree char *what = g_strdup_printf ("%s%s", ops[k], sp ? " specials" : "");
      check (unary_model (ops[k], SEDP_NN_FLOAT, sp, leaky ? "alpha" : NULL, 0.3f, NULL, 0), what,
             NN_KERNEL_UNARY, ops[k]);
    }
  /* Round's halves to even, Floor and Ceil of halves */
  const float halves[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1e8f, -0.49999997f, 8388609.0f};
  const char *rounding[] = {"Round", "Floor", "Ceil"};
  for (guint k = 0; k < G_N_ELEMENTS (rounding); k++) {
    SedpNnModel *m = tb_new (17);
    rows_of (m, "x", SEDP_NN_FLOAT, G_N_ELEMENTS (halves), halves);
    tb_node (m, rounding[k], "op", "x", "Y");
    OUT (m, "Y", SEDP_NN_FLOAT);
    check (m, rounding[k], NN_KERNEL_UNARY, rounding[k]);
  }
  for (int sp = 0; sp < 2; sp++) {
    check (unary_model ("Neg", SEDP_NN_INT64, sp, NULL, 0, NULL, 0), "Neg int64", NN_KERNEL_UNARY,
           "Neg");
    check (unary_model ("Abs", SEDP_NN_INT64, sp, NULL, 0, NULL, 0), "Abs int64", NN_KERNEL_UNARY,
           "Abs");
  }
}

/* HardSigmoid's alpha·x + beta cancels near x = −beta/alpha, and the CPU engine rounds it once
 * (an FMA: GCC contracts it in the optimised AVX2/AVX-512 clones) or twice (-O0, the baseline
 * clone): the bound there is relative to the terms (§8), within 1e-6 absolute for |x| < 3
 * (half an ulp of |alpha·x| ≤ 0.6 is 3e-8; HardSwish multiplies it by |x|). */
#define ATOL_HARD 1e-6

/* The activations with attributes, at their defaults and at other values. */
static void
test_param_act (void)
{
  const struct {
    const char *op, *alpha_name, *beta_name;
    float alpha, beta;
  } cases[] = {
    {"Softplus", NULL, NULL, 0, 0},           {"Softsign", NULL, NULL, 0, 0},
    {"Elu", NULL, NULL, 0, 0},                {"Elu", "alpha", NULL, 0.4f, 0},
    {"Selu", NULL, NULL, 0, 0},               {"Selu", "alpha", "gamma", 1.2f, 0.8f},
    {"Celu", NULL, NULL, 0, 0},               {"Celu", "alpha", NULL, 2.5f, 0},
    {"HardSigmoid", NULL, NULL, 0, 0},        {"HardSigmoid", "alpha", "beta", 0.3f, 0.25f},
    {"HardSwish", NULL, NULL, 0, 0},          {"ThresholdedRelu", NULL, NULL, 0, 0},
    {"ThresholdedRelu", "alpha", NULL, -0.5f, 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases) && (!valgrind || i < 2); i++)
    for (int sp = 0; sp < 2; sp++) {
      g_autofree char *what = g_strdup_printf ("%s (%s)%s", cases[i].op,
                                               cases[i].alpha_name ? "attributes" : "defaults",
                                               sp ? " specials" : "");
      gboolean hard = g_str_has_prefix (cases[i].op, "Hard");
      check_atol (unary_model (cases[i].op, SEDP_NN_FLOAT, sp, cases[i].alpha_name,
                               cases[i].alpha, cases[i].beta_name, cases[i].beta),
                  what, NN_KERNEL_PARAM_ACT, cases[i].op, hard ? ATOL_HARD : ATOL);
    }
}

/* Clip with both bounds, one, none (±∞), and bounds that cross; NaN passes through. */
static void
test_clip (void)
{
  const struct {
    const char *inputs;
    float lo, hi;
  } cases[] = {
    {"x,lo,hi", -0.5f, 0.75f}, {"x,lo", -0.5f, 0}, {"x,,hi", 0, 0.25f},
    {"x", 0, 0},               {"x,lo,hi", 1.0f, -1.0f}, {"x,lo,hi", -INFINITY, INFINITY},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases) && (!valgrind || i < 1); i++)
    for (int sp = 0; sp < 2; sp++) {
      SedpNnModel *m = tb_new (17);
      if (sp)
        rows_of (m, "x", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
      else
        IN (m, "x", SEDP_NN_FLOAT, N, 7);
      tb_scalar_f (m, "lo", cases[i].lo);
      tb_scalar_f (m, "hi", cases[i].hi);
      tb_node (m, "Clip", "op", cases[i].inputs, "Y");
      OUT (m, "Y", SEDP_NN_FLOAT);
      g_autofree char *what = g_strdup_printf ("Clip (%s)%s", cases[i].inputs, sp ? " specials" : "");
      check (m, what, NN_KERNEL_CLIP, "clip");
    }
}

/* IsNaN; IsInf with each detect_positive/detect_negative pair. */
static void
test_is (void)
{
  for (int k = -1; k < 4 && (!valgrind || k < 0); k++) {
    SedpNnModel *m = tb_new (17);
    rows_of (m, "x", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
    SedpNnNode *n = tb_node (m, k < 0 ? "IsNaN" : "IsInf", "op", "x", "Y");
    if (k >= 0) {
      tb_attr_i (n, "detect_positive", k & 1);
      tb_attr_i (n, "detect_negative", (k >> 1) & 1);
    }
    OUT (m, "Y", SEDP_NN_BOOL);
    check (m, k < 0 ? "IsNaN" : "IsInf", NN_KERNEL_IS, k < 0 ? "isnan" : "isinf");
  }
}

/* ---- Cast ---- */

static const SedpNnDType cast_types[] = {SEDP_NN_FLOAT, SEDP_NN_DOUBLE, SEDP_NN_INT64,
                                         SEDP_NN_INT32, SEDP_NN_INT8,   SEDP_NN_UINT8,
                                         SEDP_NN_BOOL};

/* Y = Cast (Cast (v, @from), @to) where v is x · 300 (x a graph input: fractions, negatives,
 * values beyond int8 and uint8) or the float specials (NaN and ±∞ → 0 as integers, NaN → true). */
static SedpNnModel *
cast_model (SedpNnDType from, SedpNnDType to, gboolean specials)
{
  SedpNnModel *m = tb_new (17);
  if (specials) {
    rows_of (m, "v", SEDP_NN_FLOAT, N_SPEC_F, spec_f);
  } else {
    IN (m, "x", SEDP_NN_FLOAT, N, 2, 5);
    tb_scalar_f (m, "k", 300.0f);
    tb_node (m, "Mul", NULL, "x,k", "v");
  }
  tb_attr_i (tb_node (m, "Cast", "from", "v", "f"), "to", from);
  tb_attr_i (tb_node (m, "Cast", "op", "f", "Y"), "to", to);
  OUT (m, "Y", to);
  return m;
}

/* Every pair of the seven types, through float first. */
static void
test_cast (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cast_types) && (!valgrind || i < 1); i++)
    for (guint j = 0; j < G_N_ELEMENTS (cast_types); j++)
      for (int sp = 0; sp < 2; sp++) {
        g_autofree char *what = g_strdup_printf ("Cast %s → %s%s", sedp_nn_dtype_name (cast_types[i]),
                                                 sedp_nn_dtype_name (cast_types[j]),
                                                 sp ? " specials" : "");
        check (cast_model (cast_types[i], cast_types[j], sp), what, NN_KERNEL_CAST, "cast");
      }
  /* CastLike */
  SedpNnModel *m = tb_new (17);
  IN (m, "x", SEDP_NN_FLOAT, N, 4);
  tb_init_i (m, "like", 1, I64 (1), I64 (0));
  tb_node (m, "CastLike", "op", "x,like", "Y");
  OUT (m, "Y", SEDP_NN_INT64);
  check (m, "CastLike float → int64", NN_KERNEL_CAST, "cast");
}

/* A device without cl_khr_fp64 refuses a Cast from or to double at plan time, naming the node
 * (docs/opencl.md §7); float ↔ int64 still lowers. */
static void
test_cast_no_fp64 (void)
{
  gboolean had = device->fp64;
  device->fp64 = FALSE; /* the lowering reads it; the program was built with it already */
  for (int k = 0; k < 2; k++) {
    g_autoptr (SedpNnModel) m = cast_model (k ? SEDP_NN_DOUBLE : SEDP_NN_FLOAT,
                                            k ? SEDP_NN_FLOAT : SEDP_NN_DOUBLE, FALSE);
    g_autoptr (GError) error = NULL;
    SedpNnPlan *plan = sedp_nn_plan_new_on (m, 3, device, &error);
    CU_ASSERT_PTR_NULL (plan);
    g_autofree char *want = g_strdup_printf ("node '%s' (Cast): double needs cl_khr_fp64, which "
                                             "OpenCL device %s lacks; use engine = cpu",
                                             k ? "from" : "op", device->label);
    ASSERT_NN_ERROR (error, SEDP_NN_ERROR_DEVICE, want);
    if (plan)
      sedp_nn_plan_free (plan);
  }
  g_autoptr (SedpNnModel) ok = cast_model (SEDP_NN_INT64, SEDP_NN_FLOAT, FALSE);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new_on (ok, 3, device, &error);
  CU_ASSERT_PTR_NOT_NULL (plan);
  if (plan)
    sedp_nn_plan_free (plan);
  device->fp64 = had;
}

/* The program's source (the .cl files of kernels/, common.cl first as the build embeds it)
 * builds for the device without -DNN_HAVE_FP64: no double outside the fp64 guards. */
static void
test_builds_without_fp64 (void)
{
  g_autofree char *dir = g_build_filename (SEDP_TEST_SRCDIR, "..", "core", "nn", "ocl", "kernels",
                                           NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *f; (f = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (f, ".cl") && strcmp (f, "common.cl") != 0)
      g_ptr_array_add (names, g_strdup (f));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  g_ptr_array_insert (names, 0, g_strdup ("common.cl"));
  g_autoptr (GString) src = g_string_new (NULL);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL), *text = NULL;
    CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &text, NULL, NULL));
    g_string_append_printf (src, "%s\n", text);
  }
  cl_int rc = CL_SUCCESS;
  const char *s = src->str;
  cl_program p = clCreateProgramWithSource (device->context, 1, &s, NULL, &rc);
  CU_ASSERT_EQUAL_FATAL (rc, CL_SUCCESS);
  rc = clBuildProgram (p, 1, &device->id, "-cl-std=CL1.2", NULL, NULL);
  if (rc != CL_SUCCESS) {
    char log[4096] = "";
    clGetProgramBuildInfo (p, device->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    fprintf (stderr, "\n  build without fp64: %s\n%s", nn_ocl_error_name (rc), log);
  }
  CU_ASSERT_EQUAL (rc, CL_SUCCESS);
  clReleaseProgram (p);
}

int
main (void)
{
  CU_pSuite s = NULL;
  int status = ocl_test_begin ("nn-ocl-ops-elementwise", &valgrind, &device, &s);
  if (status)
    return status;
  CU_add_test (s, "binary: Add, Sub, Mul, Div of float and int64, every walk", test_binary);
  CU_add_test (s, "binary: NaN, ±inf, ±0, int64 division by 0", test_binary_specials);
  CU_add_test (s, "compare: float, int64, int32, bool Equal", test_compare);
  CU_add_test (s, "logic: And, Or, Xor, Not", test_logic);
  CU_add_test (s, "mod: fmod and floored int64 Mod", test_mod);
  CU_add_test (s, "pow: exponent types, pow2, pow_half, specials", test_pow);
  CU_add_test (s, "prelu: slope broadcasts", test_prelu);
  CU_add_test (s, "where: 1, 4 and 8-byte elements", test_where);
  CU_add_test (s, "variadic: Sum, Mean, Max, Min of 1 to 5 inputs", test_variadic);
  CU_add_test (s, "unary: every function, int64 Neg and Abs", test_unary);
  CU_add_test (s, "param_act: the activations with attributes", test_param_act);
  CU_add_test (s, "clip: bounds, none, NaN", test_clip);
  CU_add_test (s, "is: IsNaN, IsInf", test_is);
  CU_add_test (s, "cast: every pair of types", test_cast);
  CU_add_test (s, "cast: double without cl_khr_fp64", test_cast_no_fp64);
  CU_add_test (s, "the program builds without fp64", test_builds_without_fp64);
  status = sedp_test_run ();
  sedp_nn_device_unref (device);
  return status;
}
