/* sedp nn tests: every operator of the engine against independently computed values (literals
 * for small cases, naive double-precision loops for random ones), fusion, load-time and run-time
 * errors, and arena reuse. */
#include "nn-test.h"

#define F SEDP_NN_FLOAT
#define I SEDP_NN_INT64

/* ================================================================================================
 * References (written here, never calling the engine)
 * ============================================================================================== */

/* Y = alpha · op(A) · op(B) + beta · C; scale[i] = the sum of |terms| (the error scale). */
static void
ref_gemm (gint64 M, gint64 K, gint64 N, const float *A, gboolean ta, const float *B, gboolean tb,
          const float *C, int rc, const gint64 *dc, double alpha, double beta, double *want,
          double *scale)
{
  const gint64 dy[2] = {M, N};
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++) {
      double s = 0, abs_s = 0;
      for (gint64 k = 0; k < K; k++) {
        double a = ta ? A[k * M + i] : A[i * K + k];
        double b = tb ? B[j * K + k] : B[k * N + j];
        s += a * b;
        abs_s += fabs (a * b);
      }
      double c = C ? C[bcast_offset (i * N + j, 2, dy, rc, dc)] : 0.0;
      want[i * N + j] = alpha * s + beta * c;
      scale[i * N + j] = fabs (alpha) * abs_s + fabs (beta * c);
    }
}

/* Batched, broadcasting matrix product of operands of rank ≥ 2. Returns the output's element
 * count; fills (ro, dout), want and scale (allocated). */
static gint64
ref_matmul (int ra, const gint64 *da, const float *a, int rb, const gint64 *db, const float *b,
            int *ro, gint64 *dout, double **want, double **scale)
{
  gint64 M = da[ra - 2], K = da[ra - 1], N = db[rb - 1];
  g_assert (db[rb - 2] == K);
  int rbo = 0;
  gint64 bo[SEDP_NN_MAX_RANK];
  g_assert (bcast_shape (ra - 2, da, rb - 2, db, &rbo, bo));
  gint64 nb = numel_of (rbo, bo);
  *ro = rbo + 2;
  memcpy (dout, bo, sizeof (gint64) * rbo);
  dout[rbo] = M;
  dout[rbo + 1] = N;
  gint64 n = nb * M * N;
  *want = g_new0 (double, n);
  *scale = g_new0 (double, n);
  for (gint64 p = 0; p < nb; p++) {
    gint64 oa = bcast_offset (p, rbo, bo, ra - 2, da) * M * K;
    gint64 ob = bcast_offset (p, rbo, bo, rb - 2, db) * K * N;
    for (gint64 i = 0; i < M; i++)
      for (gint64 j = 0; j < N; j++) {
        double s = 0, abs_s = 0;
        for (gint64 k = 0; k < K; k++) {
          double t = (double) a[oa + i * K + k] * b[ob + k * N + j];
          s += t;
          abs_s += fabs (t);
        }
        (*want)[p * M * N + i * N + j] = s;
        (*scale)[p * M * N + i * N + j] = abs_s;
      }
  }
  return n;
}

static void transpose_ref (int rank, const gint64 *dims, const gint64 *perm, const float *x,
                           double *y);

static double
sigmoid_ref (double x)
{
  return x >= 0 ? 1.0 / (1.0 + exp (-x)) : exp (x) / (1.0 + exp (x));
}

/* ================================================================================================
 * Gemm
 * ============================================================================================== */

static void
test_gemm_literal (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, -1, 3);
  INIT_F (m, "B", F32 (1, 2, 3, 4, 5, 6), 3, 2);
  INIT_F (m, "C", F32 (0.5f, -1), 2);
  tb_node (m, "Gemm", "gemm", "A,B,C", "Y");
  OUT (m, "Y", F);
  Out o[1];
  SedpNnTensor in = TT (F, F32 (1, 0, 2, -1, 1, 0), 2, 3);
  run_model (m, 2, 1, &in, o);
  /* [1 0 2]·B = [11 14], [-1 1 0]·B = [2 2]; + C. */
  SHAPE_IS (o[0], 2, 2);
  FLOATS_ARE (o[0], RTOL_REDUCE, 11.5, 13, 2.5, 1);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* Literal alpha, beta, transA, transB. */
static void
test_gemm_literal_attrs (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, 2, 3); /* transA: A is [K, M], a fixed shape (batch = K = 2) */
  INIT_F (m, "B", F32 (1, 1, 0, 1), 2, 2); /* transB: B is [N, K] */
  INIT_F (m, "C", F32 (10), 1);
  SedpNnNode *n = tb_node (m, "Gemm", "gemm_t", "A,B,C", "Y");
  tb_attr_f (n, "alpha", 2.0f);
  tb_attr_f (n, "beta", 0.5f);
  tb_attr_i (n, "transA", 1);
  tb_attr_i (n, "transB", 1);
  OUT (m, "Y", F);
  /* A^T = [[1 3] [2 4] [0 1]] (M=3, K=2); B^T = [[1 0] [1 1]] → A^T·B^T = [[4 3] [6 4] [1 1]]. */
  SedpNnTensor in = TT (F, F32 (1, 2, 0, 3, 4, 1), 2, 3);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 3, 2);
  FLOATS_ARE (o[0], RTOL_REDUCE, 13, 11, 17, 13, 7, 7);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

typedef enum { BIAS_NONE, BIAS_ROW, BIAS_ROW2, BIAS_ONE, BIAS_SCALAR, BIAS_COL, BIAS_FULL } BiasKind;

/* A random Gemm: A [M, K] a graph input with the batch M, B an initializer, C of the given
 * broadcast kind. COL and FULL biases fix M, so they run at batch @M only. With transA, A is
 * [K, M] with fixed dims (its first dimension K is then the batch a plan is made for). */
static void
gemm_random (gint64 M, gint64 K, gint64 N, gboolean ta, gboolean tb, float alpha, float beta,
             BiasKind bias, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  SedpNnModel *m = tb_new (13);
  if (ta)
    IN (m, "A", F, K, M);
  else
    IN (m, "A", F, -1, K);
  g_autofree float *B = rand_floats (rng, K * N, -1, 1);
  if (tb)
    INIT_F (m, "B", B, N, K);
  else
    INIT_F (m, "B", B, K, N);
  int rc = 0;
  gint64 dc[2] = {0, 0};
  switch (bias) {
  case BIAS_ROW: rc = 1, dc[0] = N; break;
  case BIAS_ROW2: rc = 2, dc[0] = 1, dc[1] = N; break;
  case BIAS_ONE: rc = 1, dc[0] = 1; break;
  case BIAS_SCALAR: rc = 0; break;
  case BIAS_COL: rc = 2, dc[0] = M, dc[1] = 1; break;
  case BIAS_FULL: rc = 2, dc[0] = M, dc[1] = N; break;
  default: break;
  }
  g_autofree float *C = bias == BIAS_NONE ? NULL : rand_floats (rng, numel_of (rc, dc), -1, 1);
  if (C)
    tb_init_f (m, "C", rc, dc, C);
  SedpNnNode *n = tb_node (m, "Gemm", "gemm_r", C ? "A,B,C" : "A,B", "Y");
  if (alpha != 1.0f)
    tb_attr_f (n, "alpha", alpha);
  if (beta != 1.0f)
    tb_attr_f (n, "beta", beta);
  if (ta)
    tb_attr_i (n, "transA", 1);
  if (tb)
    tb_attr_i (n, "transB", 1);
  OUT (m, "Y", F);

  gint64 batches[2] = {M, M + 7};
  guint n_batches = (ta || bias == BIAS_COL || bias == BIAS_FULL) ? 1 : 2;
  for (guint bi = 0; bi < n_batches; bi++) {
    gint64 rows = batches[bi];
    g_autofree float *A = rand_floats (rng, rows * K, -1, 1);
    SedpNnTensor in = ta ? TT (F, A, K, rows) : TT (F, A, rows, K);
    Out o[1];
    run_model (m, ta ? K : rows, 1, &in, o);
    g_autofree double *want = g_new (double, rows * N);
    g_autofree double *scale = g_new (double, rows * N);
    ref_gemm (rows, K, N, A, ta, B, tb, C, rc, dc, alpha, beta, want, scale);
    SHAPE_IS (o[0], rows, N);
    if (o[0].numel == rows * N)
      ASSERT_CLOSE_SCALED (o[0], want, scale, RTOL_REDUCE);
    outs_free (o, 1);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_gemm_random (void)
{
  gemm_random (5, 33, 19, FALSE, FALSE, 1, 1, BIAS_ROW, 1);
  gemm_random (4, 64, 128, FALSE, TRUE, 1, 1, BIAS_ROW, 2);
  gemm_random (3, 17, 9, TRUE, FALSE, 0.5f, 2, BIAS_ROW2, 3);
  gemm_random (6, 8, 5, TRUE, TRUE, -1.5f, 0.25f, BIAS_ONE, 4);
  gemm_random (2, 31, 7, FALSE, TRUE, 1, 3, BIAS_SCALAR, 5);
  gemm_random (1, 40, 16, FALSE, FALSE, 1, 1, BIAS_NONE, 6);
  gemm_random (7, 12, 10, FALSE, FALSE, 2, -1, BIAS_COL, 7);
  gemm_random (3, 12, 10, TRUE, FALSE, 1, 0.5f, BIAS_FULL, 8);
  gemm_random (1, 300, 1, FALSE, FALSE, 1, 1, BIAS_ONE, 9); /* gemv-shaped */
}

/* ================================================================================================
 * MatMul
 * ============================================================================================== */

/* MatMul of a graph input A (dims with -1 = batch) and B (graph input or initializer). */
static void
matmul_case (int ra, const gint64 *sa, int rb, const gint64 *sb, gboolean b_input,
             const gint64 *batches, guint n_batches, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  SedpNnModel *m = tb_new (13);
  tb_input (m, "A", F, ra, sa);
  gint64 nb_fixed = numel_of (rb, sb);
  g_autofree float *Bfixed = NULL;
  if (b_input)
    tb_input (m, "B", F, rb, sb);
  else {
    Bfixed = rand_floats (rng, nb_fixed, -1, 1);
    tb_init_f (m, "B", rb, sb, Bfixed);
  }
  tb_node (m, "MatMul", "mm", "A,B", "Y");
  OUT (m, "Y", F);
  for (guint bi = 0; bi < n_batches; bi++) {
    gint64 da[SEDP_NN_MAX_RANK], db[SEDP_NN_MAX_RANK];
    for (int k = 0; k < ra; k++)
      da[k] = sa[k] < 0 ? batches[bi] : sa[k];
    for (int k = 0; k < rb; k++)
      db[k] = sb[k] < 0 ? batches[bi] : sb[k];
    g_autofree float *A = rand_floats (rng, numel_of (ra, da), -1, 1);
    g_autofree float *Bin = b_input ? rand_floats (rng, numel_of (rb, db), -1, 1) : NULL;
    const float *B = b_input ? Bin : Bfixed;
    SedpNnTensor in[2] = {tt (F, A, ra, da), tt (F, Bin, rb, db)};
    Out o[1];
    run_model (m, batches[bi], b_input ? 2 : 1, in, o);
    int ro;
    gint64 dout[SEDP_NN_MAX_RANK];
    g_autofree double *want = NULL, *scale = NULL;
    gint64 n = ref_matmul (ra, da, A, rb, db, B, &ro, dout, &want, &scale);
    CU_ASSERT (shape_is (&o[0], ro, dout));
    if (o[0].numel == n)
      ASSERT_CLOSE_SCALED (o[0], want, scale, RTOL_REDUCE);
    outs_free (o, 1);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_matmul_literal (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, -1, 2);
  INIT_F (m, "B", F32 (1, 2, 3, 4, 5, 6), 2, 3);
  tb_node (m, "MatMul", "mm", "A,B", "Y");
  OUT (m, "Y", F);
  Out o[1];
  SedpNnTensor in = TT (F, F32 (1, 1, 2, -1), 2, 2);
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 2, 3);
  FLOATS_ARE (o[0], RTOL_REDUCE, 5, 7, 9, -2, -1, 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_matmul_2d (void)
{
  matmul_case (2, I64 (-1, 37), 2, I64 (37, 23), FALSE, I64 (1, 9), 2, 11);
  matmul_case (2, I64 (-1, 128), 2, I64 (128, 64), FALSE, I64 (64, 3), 2, 12);
  matmul_case (2, I64 (-1, 5), 2, I64 (5, 4), TRUE, I64 (3, 8), 2, 13);
}

static void
test_matmul_batched (void)
{
  /* [N, 3, 4] × [N, 4, 5], both inputs. */
  matmul_case (3, I64 (-1, 3, 4), 3, I64 (-1, 4, 5), TRUE, I64 (1, 4), 2, 21);
  /* 4-D. */
  matmul_case (4, I64 (-1, 2, 3, 6), 4, I64 (-1, 2, 6, 2), TRUE, I64 (2, 3), 2, 22);
}

static void
test_matmul_broadcast (void)
{
  /* [2, 3, 4] × [4, 5]: the 2-D right operand is broadcast over the batch. */
  matmul_case (3, I64 (-1, 3, 4), 2, I64 (4, 5), FALSE, I64 (2, 5), 2, 31);
  /* [1, 3, 4] × [2, 4, 5] (and [2, 3, 4] × [2, 4, 5] at batch 2). */
  matmul_case (3, I64 (-1, 3, 4), 3, I64 (2, 4, 5), FALSE, I64 (1, 2), 2, 32);
  /* [N, 1, 3, 4] × [2, 4, 5] → [N, 2, 3, 5]. */
  matmul_case (4, I64 (-1, 1, 3, 4), 3, I64 (2, 4, 5), FALSE, I64 (1, 3), 2, 33);
  /* [N, 3, 4] × [1, 4, 5] (rank equal, broadcast of 1). */
  matmul_case (3, I64 (-1, 3, 4), 3, I64 (1, 4, 5), FALSE, I64 (3, 1), 2, 34);
  /* the left operand broadcast: A [N, 6, 4] fixed-batch 1 input × B input [2, 4, 3]: A of batch 1. */
  matmul_case (3, I64 (-1, 6, 4), 3, I64 (2, 4, 3), TRUE, I64 (1), 1, 35);
}

/* A Transpose of the last two axes feeding MatMul (which the engine may fold into the product):
 * A · Bᵀ with B [N, 5, 4], and Z · Zᵀ (the pairwise dot products of DLRM's interaction), with the
 * transposed value also a graph output in one case. */
static void
test_matmul_transposed (void)
{
  GRand *rng = g_rand_new_with_seed (36);
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, -1, 3, 4);
  IN (m, "B", F, -1, 5, 4);
  IN (m, "Z", F, -1, 6, 8);
  SedpNnNode *n = tb_node (m, "Transpose", "bt", "B", "Bt");
  ATTR_INTS (n, "perm", 0, 2, 1);
  tb_node (m, "MatMul", "abt", "A,Bt", "Y1");
  n = tb_node (m, "Transpose", "zt", "Z", "Zt");
  ATTR_INTS (n, "perm", 0, 2, 1);
  tb_node (m, "MatMul", "zzt", "Z,Zt", "Y2");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Zt", F);
  for (gint64 b = 1; b <= 3; b += 2) {
    gint64 da[3] = {b, 3, 4}, db[3] = {b, 5, 4}, dz[3] = {b, 6, 8};
    gint64 dbt[3] = {b, 4, 5}, dzt[3] = {b, 8, 6};
    g_autofree float *A = rand_floats (rng, b * 12, -1, 1);
    g_autofree float *B = rand_floats (rng, b * 20, -1, 1);
    g_autofree float *Z = rand_floats (rng, b * 48, -1, 1);
    g_autofree double *bt_d = g_new (double, b * 20), *zt_d = g_new (double, b * 48);
    transpose_ref (3, db, I64 (0, 2, 1), B, bt_d);
    transpose_ref (3, dz, I64 (0, 2, 1), Z, zt_d);
    g_autofree float *Bt = g_new (float, b * 20), *Zt = g_new (float, b * 48);
    for (gint64 i = 0; i < b * 20; i++)
      Bt[i] = (float) bt_d[i];
    for (gint64 i = 0; i < b * 48; i++)
      Zt[i] = (float) zt_d[i];
    SedpNnTensor in[3] = {tt (F, A, 3, da), tt (F, B, 3, db), tt (F, Z, 3, dz)};
    Out o[3];
    run_model (m, b, 3, in, o);
    int ro;
    gint64 dout[SEDP_NN_MAX_RANK];
    g_autofree double *w1 = NULL, *s1 = NULL, *w2 = NULL, *s2 = NULL;
    gint64 n1 = ref_matmul (3, da, A, 3, dbt, Bt, &ro, dout, &w1, &s1);
    CU_ASSERT (shape_is (&o[0], ro, dout));
    if (o[0].numel == n1)
      ASSERT_CLOSE_SCALED (o[0], w1, s1, RTOL_REDUCE);
    gint64 n2 = ref_matmul (3, dz, Z, 3, dzt, Zt, &ro, dout, &w2, &s2);
    CU_ASSERT (shape_is (&o[1], ro, dout));
    if (o[1].numel == n2)
      ASSERT_CLOSE_SCALED (o[1], w2, s2, RTOL_REDUCE);
    CU_ASSERT (shape_is (&o[2], 3, dzt));
    if (o[2].numel == b * 48)
      ASSERT_CLOSE (o[2], zt_d, 0);
    outs_free (o, 3);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* MatMul with a Transpose'd initializer (a weight stored [N, K], as some exporters write it). */
static void
test_matmul_transposed_weight (void)
{
  GRand *rng = g_rand_new_with_seed (37);
  const gint64 K = 70, N = 45;
  g_autofree float *W = rand_floats (rng, N * K, -1, 1); /* [N, K] */
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, K);
  INIT_F (m, "W", W, N, K);
  SedpNnNode *n = tb_node (m, "Transpose", "wt", "W", "Wt");
  ATTR_INTS (n, "perm", 1, 0);
  tb_node (m, "MatMul", "mm", "X,Wt", "Y");
  OUT (m, "Y", F);
  for (gint64 b = 1; b <= 19; b += 18) {
    g_autofree float *x = rand_floats (rng, b * K, -1, 1);
    SedpNnTensor in = TT (F, x, b, K);
    Out o[1];
    run_model (m, b, 1, &in, o);
    g_autofree double *want = g_new (double, b * N), *scale = g_new (double, b * N);
    ref_gemm (b, K, N, x, FALSE, W, TRUE, NULL, 0, NULL, 1, 0, want, scale);
    SHAPE_IS (o[0], b, N);
    if (o[0].numel == b * N)
      ASSERT_CLOSE_SCALED (o[0], want, scale, RTOL_REDUCE);
    outs_free (o, 1);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Sizes past the kernels' tiles and K blocks: odd M, N and K in the hundreds. */
static void
test_gemm_large (void)
{
  gemm_random (37, 700, 45, FALSE, FALSE, 1, 1, BIAS_ROW, 38);
  gemm_random (13, 1025, 33, FALSE, TRUE, 1, 1, BIAS_ROW2, 39);
  gemm_random (70, 513, 130, FALSE, FALSE, 0.5f, 1, BIAS_NONE, 40);
  matmul_case (2, I64 (-1, 777), 2, I64 (777, 31), FALSE, I64 (9, 65), 2, 41);
  matmul_case (3, I64 (-1, 17, 260), 2, I64 (260, 24), FALSE, I64 (2, 3), 2, 42);
}

/* ================================================================================================
 * Elementwise binary ops with broadcasting
 * ============================================================================================== */

typedef struct {
  int rank;
  gint64 dims[4]; /* -1: the batch */
  gboolean input; /* a graph input, else an initializer */
} Operand;

static double
apply_binary (const char *op, double a, double b)
{
  switch (op[0]) {
  case 'A': return a + b;
  case 'S': return a - b;
  case 'M': return a * b;
  default: return a / b;
  }
}

/* Values for Div's right operand: away from zero. */
static float *
divisors (GRand *rng, gsize n)
{
  float *v = rand_floats (rng, n, 0.5, 2);
  for (gsize i = 0; i < n; i++)
    if (g_rand_boolean (rng))
      v[i] = -v[i];
  return v;
}

static void
binary_case (const char *op, Operand a, Operand b, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  SedpNnModel *m = tb_new (13);
  float *fixed[2] = {NULL, NULL};
  Operand ops[2] = {a, b};
  for (int s = 0; s < 2; s++) {
    const char *name = s == 0 ? "A" : "B";
    if (ops[s].input)
      tb_input (m, name, F, ops[s].rank, ops[s].dims);
    else {
      gint64 n = numel_of (ops[s].rank, ops[s].dims);
      fixed[s] = (s == 1 && op[0] == 'D') ? divisors (rng, n) : rand_floats (rng, n, -2, 2);
      tb_init_f (m, name, ops[s].rank, ops[s].dims, fixed[s]);
    }
  }
  g_autofree char *node_name = g_strdup_printf ("%s_node", op);
  tb_node (m, op, node_name, "A,B", "Y");
  OUT (m, "Y", F);
  const gint64 batches[2] = {1, 3};
  for (guint bi = 0; bi < 2; bi++) {
    gint64 d[2][4];
    float *data[2];
    SedpNnTensor in[2];
    guint n_in = 0;
    for (int s = 0; s < 2; s++) {
      for (int k = 0; k < ops[s].rank; k++)
        d[s][k] = ops[s].dims[k] < 0 ? batches[bi] : ops[s].dims[k];
      gint64 n = numel_of (ops[s].rank, d[s]);
      data[s] = ops[s].input ? ((s == 1 && op[0] == 'D') ? divisors (rng, n) : rand_floats (rng, n, -2, 2))
                             : fixed[s];
      if (ops[s].input)
        in[n_in++] = tt (F, data[s], ops[s].rank, d[s]);
    }
    Out o[1];
    run_model (m, batches[bi], n_in, in, o);
    int ro;
    gint64 dout[4];
    g_assert (bcast_shape (ops[0].rank, d[0], ops[1].rank, d[1], &ro, dout));
    gint64 n = numel_of (ro, dout);
    g_autofree double *want = g_new (double, MAX (n, 1));
    for (gint64 i = 0; i < n; i++) {
      float x = data[0][bcast_offset (i, ro, dout, ops[0].rank, d[0])];
      float y = data[1][bcast_offset (i, ro, dout, ops[1].rank, d[1])];
      want[i] = apply_binary (op, x, y);
    }
    CU_ASSERT (shape_is (&o[0], ro, dout));
    if (o[0].numel == n)
      ASSERT_CLOSE (o[0], want, RTOL_ELEM);
    outs_free (o, 1);
    for (int s = 0; s < 2; s++)
      if (ops[s].input)
        g_free (data[s]);
  }
  g_free (fixed[0]);
  g_free (fixed[1]);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_binary_literal (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  INIT_F (m, "row", F32 (1, 2, 4), 3);
  INIT_F (m, "two", F32 (2), 1);
  tb_node (m, "Add", "add", "X,row", "a");
  tb_node (m, "Sub", "sub", "X,row", "s");
  tb_node (m, "Mul", "mul", "X,two", "mu");
  tb_node (m, "Div", "div", "X,row", "d");
  OUT (m, "a", F);
  OUT (m, "s", F);
  OUT (m, "mu", F);
  OUT (m, "d", F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, -4, 0, 8), 2, 3);
  Out o[4];
  run_model (m, 2, 1, &in, o);
  FLOATS_ARE (o[0], RTOL_ELEM, 2, 4, 7, -3, 2, 12);
  FLOATS_ARE (o[1], RTOL_ELEM, 0, 0, -1, -5, -2, 4);
  FLOATS_ARE (o[2], RTOL_ELEM, 2, 4, 6, -8, 0, 16);
  FLOATS_ARE (o[3], RTOL_ELEM, 1, 1, 0.75, -4, 0, 2);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

static void
test_binary_broadcast (void)
{
  const char *ops[] = {"Add", "Sub", "Mul", "Div"};
  for (guint i = 0; i < G_N_ELEMENTS (ops); i++) {
    guint32 s = 100 + 10 * i;
    /* same shape, both inputs */
    binary_case (ops[i], (Operand){2, {-1, 7}, TRUE}, (Operand){2, {-1, 7}, TRUE}, s + 0);
    /* scalar (rank 0) */
    binary_case (ops[i], (Operand){3, {-1, 3, 4}, TRUE}, (Operand){0, {0}, FALSE}, s + 1);
    /* [1] */
    binary_case (ops[i], (Operand){2, {-1, 5}, TRUE}, (Operand){1, {1}, FALSE}, s + 2);
    /* row, rank-expanding: [N, 3, 4] op [4] */
    binary_case (ops[i], (Operand){3, {-1, 3, 4}, TRUE}, (Operand){1, {4}, FALSE}, s + 3);
    /* column: [N, 3, 4] op [3, 1] */
    binary_case (ops[i], (Operand){3, {-1, 3, 4}, TRUE}, (Operand){2, {3, 1}, FALSE}, s + 4);
    /* the left operand broadcast: [4] op [N, 4] */
    binary_case (ops[i], (Operand){1, {4}, FALSE}, (Operand){2, {-1, 4}, TRUE}, s + 5);
    /* both broadcast: [N, 1] op [1, 6] → [N, 6] */
    binary_case (ops[i], (Operand){2, {-1, 1}, TRUE}, (Operand){2, {1, 6}, FALSE}, s + 6);
    /* [N, 1, 5] op [N, 3, 1] (both inputs) */
    binary_case (ops[i], (Operand){3, {-1, 1, 5}, TRUE}, (Operand){3, {-1, 3, 1}, TRUE}, s + 7);
    /* [N, 4] op [N, 1] (both inputs, column) */
    binary_case (ops[i], (Operand){2, {-1, 4}, TRUE}, (Operand){2, {-1, 1}, TRUE}, s + 8);
    /* rank-expanding with a middle 1: [2, 1, 3] op [N, 1, 1, 3]... → [N, 2, 1, 3] */
    binary_case (ops[i], (Operand){3, {2, 1, 3}, FALSE}, (Operand){4, {-1, 1, 1, 3}, TRUE}, s + 9);
  }
}

/* ================================================================================================
 * Activations
 * ============================================================================================== */

/* A one-input, one-output model running @op on X [N, n/N…]; returns the output at batch 1 with
 * X as given (rank 2: [1, n]). */
static SedpNnModel *
unary_model (const char *op, gint64 opset, gint64 width, SedpNnNode **node)
{
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, width);
  SedpNnNode *n = tb_node (m, op, "act", "X", "Y");
  OUT (m, "Y", F);
  if (node)
    *node = n;
  return m;
}

static void
unary_check (SedpNnModel *m, guint n, const float *x, double (*ref) (double))
{
  Out o[1];
  SedpNnTensor in = tt (F, x, 2, I64 (1, n));
  run_model (m, 1, 1, &in, o);
  g_autofree double *want = g_new (double, n);
  for (guint i = 0; i < n; i++)
    want[i] = ref (x[i]);
  CU_ASSERT (shape_is (&o[0], 2, I64 (1, n)));
  if (o[0].numel == n) {
    ASSERT_CLOSE (o[0], want, RTOL_ELEM);
    for (guint i = 0; i < n; i++)
      CU_ASSERT (isfinite (((float *) o[0].data)[i]));
  }
  outs_free (o, 1);
}

static double relu_ref (double x) { return x > 0 ? x : 0; }
static double leaky01_ref (double x) { return x >= 0 ? x : 0.01 * x; }
static double leaky02_ref (double x) { return x >= 0 ? x : 0.2 * (double) (float) x; }
static double tanh_ref (double x) { return tanh (x); }

static const float act_inputs[] = {-1000, -100, -88.7f, -20, -3.5f, -1, -0.25f, -1e-4f, 0, 1e-4f,
                                   0.25f, 1, 3.5f, 20, 88.7f, 100, 1000, -0.0f};

static void
test_relu (void)
{
  SedpNnModel *m = unary_model ("Relu", 13, G_N_ELEMENTS (act_inputs), NULL);
  unary_check (m, G_N_ELEMENTS (act_inputs), act_inputs, relu_ref);
  sedp_nn_model_unref (m);
}

static void
test_leaky_relu (void)
{
  SedpNnModel *m = unary_model ("LeakyRelu", 13, G_N_ELEMENTS (act_inputs), NULL);
  unary_check (m, G_N_ELEMENTS (act_inputs), act_inputs, leaky01_ref); /* default alpha 0.01 */
  sedp_nn_model_unref (m);
  SedpNnNode *n;
  m = unary_model ("LeakyRelu", 16, G_N_ELEMENTS (act_inputs), &n);
  tb_attr_f (n, "alpha", 0.2f);
  unary_check (m, G_N_ELEMENTS (act_inputs), act_inputs, leaky02_ref);
  sedp_nn_model_unref (m);
}

static void
test_sigmoid (void)
{
  SedpNnModel *m = unary_model ("Sigmoid", 13, G_N_ELEMENTS (act_inputs), NULL);
  unary_check (m, G_N_ELEMENTS (act_inputs), act_inputs, sigmoid_ref);
  sedp_nn_model_unref (m);
  /* random, wider */
  GRand *rng = g_rand_new_with_seed (41);
  g_autofree float *x = rand_floats (rng, 1000, -30, 30);
  m = unary_model ("Sigmoid", 13, 1000, NULL);
  unary_check (m, 1000, x, sigmoid_ref);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_tanh (void)
{
  SedpNnModel *m = unary_model ("Tanh", 13, G_N_ELEMENTS (act_inputs), NULL);
  unary_check (m, G_N_ELEMENTS (act_inputs), act_inputs, tanh_ref);
  sedp_nn_model_unref (m);
  GRand *rng = g_rand_new_with_seed (42);
  g_autofree float *x = rand_floats (rng, 777, -6, 6);
  m = unary_model ("Tanh", 13, 777, NULL);
  unary_check (m, 777, x, tanh_ref);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* ================================================================================================
 * Softmax
 * ============================================================================================== */

/* Softmax over @axis only (opset 13), in double. */
static void
ref_softmax_axis (int rank, const gint64 *dims, int axis, const float *x, double *y)
{
  gint64 outer = numel_of (axis, dims), n = dims[axis], inner = numel_of (rank - axis - 1, dims + axis + 1);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++) {
      double mx = -INFINITY, sum = 0;
      for (gint64 k = 0; k < n; k++)
        mx = MAX (mx, x[(o * n + k) * inner + i]);
      for (gint64 k = 0; k < n; k++)
        sum += exp (x[(o * n + k) * inner + i] - mx);
      for (gint64 k = 0; k < n; k++)
        y[(o * n + k) * inner + i] = exp (x[(o * n + k) * inner + i] - mx) / sum;
    }
}

static void
softmax_case (gint64 opset, gboolean set_axis, gint64 axis, gint64 batch, double lo, double hi, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 3, 5);
  SedpNnNode *n = tb_node (m, "Softmax", "softmax", "X", "Y");
  if (set_axis)
    tb_attr_i (n, "axis", axis);
  OUT (m, "Y", F);
  gint64 dims[3] = {batch, 3, 5};
  g_autofree float *x = rand_floats (rng, batch * 15, lo, hi);
  SedpNnTensor in = tt (F, x, 3, dims);
  Out o[1];
  run_model (m, batch, 1, &in, o);
  g_autofree double *want = g_new (double, batch * 15);
  gint64 ax = set_axis ? axis : (opset >= 13 ? -1 : 1);
  if (ax < 0)
    ax += 3;
  if (opset >= 13)
    ref_softmax_axis (3, dims, (int) ax, x, want);
  else {
    /* before opset 13: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] */
    gint64 d2[2] = {numel_of ((int) ax, dims), numel_of (3 - (int) ax, dims + ax)};
    ref_softmax_axis (2, d2, 1, x, want);
  }
  CU_ASSERT (shape_is (&o[0], 3, dims));
  if (o[0].numel == batch * 15)
    ASSERT_CLOSE (o[0], want, RTOL_REDUCE);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_softmax_literal (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  tb_node (m, "Softmax", "softmax", "X", "Y");
  OUT (m, "Y", F);
  /* large values: the result depends on differences only */
  SedpNnTensor in = TT (F, F32 (0, 1, 2, 1000, 1001, 1002, -1000, -1000, -1000), 3, 3);
  Out o[1];
  run_model (m, 3, 1, &in, o);
  double e1 = exp (1), e2 = exp (2), s = 1 + e1 + e2;
  FLOATS_ARE (o[0], RTOL_REDUCE, 1 / s, e1 / s, e2 / s, 1 / s, e1 / s, e2 / s, 1 / 3.0, 1 / 3.0, 1 / 3.0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_softmax (void)
{
  softmax_case (13, FALSE, 0, 4, -5, 5, 51);      /* default axis -1 */
  softmax_case (13, TRUE, -1, 2, -5, 5, 52);
  softmax_case (13, TRUE, 1, 3, -5, 5, 53);        /* axis 1 only (opset 13) */
  softmax_case (13, TRUE, 2, 1, 500, 600, 54);     /* large values */
  softmax_case (13, TRUE, 1, 2, -700, -600, 55);   /* large negative values */
}

/* Before opset 13, Softmax coerces the input to 2-D at axis (default 1). */
static void
test_softmax_opset11 (void)
{
  softmax_case (11, FALSE, 0, 2, -5, 5, 56);
  softmax_case (11, TRUE, 2, 3, -5, 5, 57);
}

/* ================================================================================================
 * Clip
 * ============================================================================================== */

static void
clip_case (gint64 opset, const char *inputs, gboolean have_min, float lo, gboolean have_max, float hi)
{
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 6);
  if (have_min)
    tb_scalar_f (m, "lo", lo);
  if (have_max)
    tb_scalar_f (m, "hi", hi);
  tb_node (m, "Clip", "clip", inputs, "Y");
  OUT (m, "Y", F);
  const float x[] = {-1e30f, -3, -0.5f, 0.5f, 3, 1e30f, -2, -1, 0, 1, 2, 10};
  SedpNnTensor in = TT (F, x, 2, 6);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  double want[12];
  for (int i = 0; i < 12; i++) {
    double v = x[i];
    if (have_min)
      v = MAX (v, lo);
    if (have_max)
      v = MIN (v, hi);
    want[i] = v;
  }
  SHAPE_IS (o[0], 2, 6);
  if (o[0].numel == 12)
    ASSERT_CLOSE (o[0], want, RTOL_ELEM);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_clip (void)
{
  clip_case (11, "X,lo,hi", TRUE, -1, TRUE, 2);
  clip_case (13, "X,lo,hi", TRUE, 0, TRUE, 6);  /* Relu6 */
  clip_case (13, "X,lo", TRUE, -0.75f, FALSE, 0);
  clip_case (13, "X,,hi", FALSE, 0, TRUE, 1.5f);
  clip_case (12, "X,,", FALSE, 0, FALSE, 0);
  clip_case (13, "X", FALSE, 0, FALSE, 0);
}

/* ================================================================================================
 * Concat
 * ============================================================================================== */

static void
test_concat (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, -1, 2);
  IN (m, "B", F, -1, 3);
  INIT_F (m, "C", F32 (7, 8), 1, 2);
  SedpNnNode *n = tb_node (m, "Concat", "cat1", "A,B", "Y1");
  tb_attr_i (n, "axis", 1);
  n = tb_node (m, "Concat", "cat0", "A,C,A", "Y0");
  tb_attr_i (n, "axis", 0);
  n = tb_node (m, "Concat", "catm1", "B,A,B", "Ym1");
  tb_attr_i (n, "axis", -1);
  OUT (m, "Y1", F);
  OUT (m, "Y0", F);
  OUT (m, "Ym1", F);
  SedpNnTensor in[2] = {TT (F, F32 (1, 2, 3, 4), 2, 2), TT (F, F32 (10, 11, 12, 13, 14, 15), 2, 3)};
  Out o[3];
  run_model (m, 2, 2, in, o);
  SHAPE_IS (o[0], 2, 5);
  FLOATS_ARE (o[0], 0, 1, 2, 10, 11, 12, 3, 4, 13, 14, 15);
  SHAPE_IS (o[1], 5, 2);
  FLOATS_ARE (o[1], 0, 1, 2, 3, 4, 7, 8, 1, 2, 3, 4);
  SHAPE_IS (o[2], 2, 8);
  FLOATS_ARE (o[2], 0, 10, 11, 12, 1, 2, 10, 11, 12, 13, 14, 15, 3, 4, 13, 14, 15);
  outs_free (o, 3);

  /* batch 1 */
  SedpNnTensor in1[2] = {TT (F, F32 (5, 6), 1, 2), TT (F, F32 (-1, -2, -3), 1, 3)};
  run_model (m, 1, 2, in1, o);
  FLOATS_ARE (o[0], 0, 5, 6, -1, -2, -3);
  SHAPE_IS (o[1], 3, 2);
  FLOATS_ARE (o[1], 0, 5, 6, 7, 8, 5, 6);
  FLOATS_ARE (o[2], 0, -1, -2, -3, 5, 6, -1, -2, -3);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
}

/* Concat in the middle axis of 3-D tensors, random. */
static void
test_concat_3d (void)
{
  GRand *rng = g_rand_new_with_seed (61);
  SedpNnModel *m = tb_new (13);
  IN (m, "A", F, -1, 2, 4);
  IN (m, "B", F, -1, 3, 4);
  SedpNnNode *n = tb_node (m, "Concat", "cat", "A,B", "Y");
  tb_attr_i (n, "axis", 1);
  OUT (m, "Y", F);
  gint64 N = 3;
  g_autofree float *a = rand_floats (rng, N * 8, -1, 1);
  g_autofree float *b = rand_floats (rng, N * 12, -1, 1);
  SedpNnTensor in[2] = {TT (F, a, N, 2, 4), TT (F, b, N, 3, 4)};
  Out o[1];
  run_model (m, N, 2, in, o);
  double want[3 * 5 * 4];
  for (gint64 i = 0; i < N; i++)
    for (int r = 0; r < 5; r++)
      for (int c = 0; c < 4; c++)
        want[(i * 5 + r) * 4 + c] = r < 2 ? a[(i * 2 + r) * 4 + c] : b[(i * 3 + r - 2) * 4 + c];
  SHAPE_IS (o[0], 3, 5, 4);
  if (o[0].numel == 60)
    ASSERT_CLOSE (o[0], want, 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_concat_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "A", I, -1);
  INTS (m, "B", 7, 8, 9);
  SedpNnNode *n = tb_node (m, "Concat", "cat", "A,B", "Y");
  tb_attr_i (n, "axis", 0);
  OUT (m, "Y", I);
  SedpNnTensor in = TT (I, I64 (-1, G_MAXINT64), 2);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 5);
  INTS_ARE (o[0], -1, G_MAXINT64, 7, 8, 9);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Gather
 * ============================================================================================== */

/* Embedding lookup: data [6, 3] initializer, indices [N, 2] input, axis 0 → [N, 2, 3]. */
static void
test_gather_axis0 (void)
{
  SedpNnModel *m = tb_new (13);
  float table[18];
  for (int i = 0; i < 18; i++)
    table[i] = (float) (i / 3) * 10 + (float) (i % 3);
  INIT_F (m, "table", table, 6, 3);
  IN (m, "ids", I, -1, 2);
  tb_node (m, "Gather", "lookup", "table,ids", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in = TT (I, I64 (0, 5, -1, -6, 2, 2), 3, 2);
  Out o[1];
  run_model (m, 3, 1, &in, o);
  SHAPE_IS (o[0], 3, 2, 3);
  FLOATS_ARE (o[0], 0, 0, 1, 2, 50, 51, 52, 50, 51, 52, 0, 1, 2, 20, 21, 22, 20, 21, 22);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* axis 1 with 1-D indices, and with scalar indices (rank drops). */
static void
test_gather_axis1 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 4);
  INTS (m, "idx", 3, -4, 1);
  tb_init_i (m, "one", 0, NULL, I64 (-1));
  SedpNnNode *n = tb_node (m, "Gather", "g1", "X,idx", "Y");
  tb_attr_i (n, "axis", 1);
  n = tb_node (m, "Gather", "g2", "X,one", "Z");
  tb_attr_i (n, "axis", -1);
  OUT (m, "Y", F);
  OUT (m, "Z", F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, 4, 5, 6, 7, 8), 2, 4);
  Out o[2];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 2, 3);
  FLOATS_ARE (o[0], 0, 4, 1, 2, 8, 5, 6);
  SHAPE_IS (o[1], 2);
  FLOATS_ARE (o[1], 0, 4, 8);
  outs_free (o, 2);
  sedp_nn_model_unref (m);
}

/* Gather on int64 data: picking a dimension out of a shape. */
static void
test_gather_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  tb_init_i (m, "zero", 0, NULL, I64 (0));
  INTS (m, "last2", -1, 1);
  tb_node (m, "Shape", "shape", "X", "s");
  tb_node (m, "Gather", "g0", "s,zero", "n");
  tb_node (m, "Gather", "g1", "s,last2", "d");
  OUT (m, "n", I);
  OUT (m, "d", I);
  for (gint64 b = 1; b <= 5; b += 4) {
    g_autofree float *x = g_new0 (float, b * 12);
    SedpNnTensor in = TT (F, x, b, 3, 4);
    Out o[2];
    run_model (m, b, 1, &in, o);
    CU_ASSERT (shape_is (&o[0], 0, NULL));
    INTS_ARE (o[0], b);
    SHAPE_IS (o[1], 2);
    INTS_ARE (o[1], 4, 3);
    outs_free (o, 2);
  }
  sedp_nn_model_unref (m);
}

/* Random embedding lookups and the pooled pattern (Gather → ReduceSum / ReduceMean over the ids
 * axis), which the engine may fuse. */
static void
test_gather_pooled (void)
{
  GRand *rng = g_rand_new_with_seed (71);
  const gint64 V = 50, Dm = 16, L = 5;
  g_autofree float *table = rand_floats (rng, V * Dm, -1, 1);
  SedpNnModel *m = tb_new (13);
  INIT_F (m, "table", table, V, Dm);
  IN (m, "ids", I, -1, L);
  INTS (m, "ax1", 1);
  tb_node (m, "Gather", "emb", "table,ids", "e");
  SedpNnNode *n = tb_node (m, "ReduceSum", "pool_sum", "e,ax1", "sum");
  tb_attr_i (n, "keepdims", 0);
  n = tb_node (m, "ReduceMean", "pool_mean", "e", "mean");
  ATTR_INTS (n, "axes", 1);
  tb_attr_i (n, "keepdims", 0);
  OUT (m, "sum", F);
  OUT (m, "mean", F);
  for (gint64 b = 1; b <= 9; b += 8) {
    g_autofree gint64 *ids = g_new (gint64, b * L);
    for (gint64 i = 0; i < b * L; i++)
      ids[i] = g_rand_int_range (rng, (gint32) -V, (gint32) V);
    SedpNnTensor in = TT (I, ids, b, L);
    Out o[2];
    run_model (m, b, 1, &in, o);
    g_autofree double *ws = g_new0 (double, b * Dm);
    g_autofree double *wm = g_new0 (double, b * Dm);
    g_autofree double *sc = g_new0 (double, b * Dm);
    for (gint64 r = 0; r < b; r++)
      for (gint64 l = 0; l < L; l++) {
        gint64 id = ids[r * L + l] < 0 ? ids[r * L + l] + V : ids[r * L + l];
        for (gint64 d = 0; d < Dm; d++) {
          ws[r * Dm + d] += table[id * Dm + d];
          wm[r * Dm + d] += table[id * Dm + d] / (double) L;
          sc[r * Dm + d] += fabs (table[id * Dm + d]);
        }
      }
    SHAPE_IS (o[0], b, Dm);
    SHAPE_IS (o[1], b, Dm);
    if (o[0].numel == b * Dm && o[1].numel == b * Dm) {
      ASSERT_CLOSE_SCALED (o[0], ws, sc, RTOL_REDUCE);
      ASSERT_CLOSE_SCALED (o[1], wm, sc, RTOL_REDUCE);
    }
    outs_free (o, 2);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Gather followed by reductions that are not the pooling pattern (another axis, keepdims, the
 * gathered value also an output): none may be computed as an embedding bag wrongly. */
static void
test_gather_reduce_other (void)
{
  GRand *rng = g_rand_new_with_seed (72);
  const gint64 Vt = 20, Dm = 5, L = 3;
  g_autofree float *table = rand_floats (rng, Vt * Dm, -1, 1);
  SedpNnModel *m = tb_new (13);
  INIT_F (m, "table", table, Vt, Dm);
  IN (m, "ids", I, -1, L);
  INTS (m, "ax2", 2);
  INTS (m, "ax1", 1);
  tb_node (m, "Gather", "emb", "table,ids", "e");
  SedpNnNode *n = tb_node (m, "ReduceSum", "sum_d", "e,ax2", "sd");   /* [N, L] */
  tb_attr_i (n, "keepdims", 0);
  tb_node (m, "ReduceSum", "sum_keep", "e,ax1", "sk");                 /* [N, 1, D] */
  n = tb_node (m, "ReduceMean", "mean", "e,ax1", "mn");                /* [N, D] */
  tb_attr_i (n, "keepdims", 0);
  m->opset = 18;
  OUT (m, "sd", F);
  OUT (m, "sk", F);
  OUT (m, "mn", F);
  OUT (m, "e", F);
  for (gint64 b = 1; b <= 4; b += 3) {
    g_autofree gint64 *ids = g_new (gint64, b * L);
    for (gint64 i = 0; i < b * L; i++)
      ids[i] = g_rand_int_range (rng, 0, (gint32) Vt);
    SedpNnTensor in = TT (I, ids, b, L);
    Out o[4];
    run_model (m, b, 1, &in, o);
    g_autofree double *sd = g_new0 (double, b * L), *sk = g_new0 (double, b * Dm);
    g_autofree double *mn = g_new0 (double, b * Dm), *e = g_new0 (double, b * L * Dm);
    g_autofree double *sc_sd = g_new0 (double, b * L), *sc_sk = g_new0 (double, b * Dm);
    for (gint64 r = 0; r < b; r++)
      for (gint64 l = 0; l < L; l++)
        for (gint64 d = 0; d < Dm; d++) {
          double v = table[ids[r * L + l] * Dm + d];
          e[(r * L + l) * Dm + d] = v;
          sd[r * L + l] += v;
          sc_sd[r * L + l] += fabs (v);
          sk[r * Dm + d] += v;
          mn[r * Dm + d] += v / (double) L;
          sc_sk[r * Dm + d] += fabs (v);
        }
    SHAPE_IS (o[0], b, L);
    SHAPE_IS (o[1], b, 1, Dm);
    SHAPE_IS (o[2], b, Dm);
    SHAPE_IS (o[3], b, L, Dm);
    if (o[0].numel == b * L)
      ASSERT_CLOSE_SCALED (o[0], sd, sc_sd, RTOL_REDUCE);
    if (o[1].numel == b * Dm)
      ASSERT_CLOSE_SCALED (o[1], sk, sc_sk, RTOL_REDUCE);
    if (o[2].numel == b * Dm)
      ASSERT_CLOSE_SCALED (o[2], mn, sc_sk, RTOL_REDUCE);
    if (o[3].numel == b * L * Dm)
      ASSERT_CLOSE (o[3], e, 0);
    outs_free (o, 4);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* An index out of range fails the run with an error naming the node; the plan stays usable. */
static void
gather_out_of_range (gboolean pooled)
{
  SedpNnModel *m = tb_new (13);
  float table[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  INIT_F (m, "table", table, 5, 2);
  IN (m, "ids", I, -1, 2);
  tb_node (m, "Gather", "item_lookup", "table,ids", "e");
  if (pooled) {
    SedpNnNode *n = tb_node (m, "ReduceSum", "pool", "e", "Y");
    ATTR_INTS (n, "axes", 1);
    tb_attr_i (n, "keepdims", 0);
  } else
    tb_node (m, "Identity", "id", "e", "Y");
  m->opset = pooled ? 11 : 13;
  OUT (m, "Y", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 2, &error);
  if (error)
    fprintf (stderr, "\n  plan error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  const gint64 bad[][4] = {{0, 1, 2, 5}, {-6, 0, 0, 0}, {G_MAXINT64, 0, 0, 0}, {G_MININT64, 1, 1, 1}};
  for (guint k = 0; k < G_N_ELEMENTS (bad); k++) {
    SedpNnTensor in = TT (I, bad[k], 2, 2);
    Out o[1];
    CU_ASSERT_FALSE (run_plan (plan, 1, &in, o, &error));
    if (error) {
      CU_ASSERT_EQUAL (error->domain, SEDP_NN_ERROR);
      if (strstr (error->message, "item_lookup") == NULL)
        fprintf (stderr, "\n  message '%s' lacks the node name\n", error->message);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "item_lookup"));
    } else
      CU_FAIL ("no error for an index out of range");
    g_clear_error (&error);
  }
  /* good indices afterwards */
  SedpNnTensor in = TT (I, I64 (4, -1, 0, 1), 2, 2);
  Out o[1];
  CU_ASSERT_TRUE (run_plan (plan, 1, &in, o, &error));
  if (!error) {
    if (pooled) {
      FLOATS_ARE (o[0], 0, 16, 18, 2, 4);
    } else {
      FLOATS_ARE (o[0], 0, 8, 9, 8, 9, 0, 1, 2, 3);
    }
    outs_free (o, 1);
  }
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

static void
test_gather_out_of_range (void)
{
  gather_out_of_range (FALSE);
}

static void
test_gather_pooled_out_of_range (void)
{
  gather_out_of_range (TRUE);
}

/* ================================================================================================
 * Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity
 * ============================================================================================== */

static void
test_reshape (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  INTS (m, "s1", 0, -1);
  INTS (m, "s2", 0, 2, -1);
  INTS (m, "s3", -1, 4);
  INTS (m, "s4", -1);
  INTS (m, "s5", 0, 0, 2, 2);
  tb_node (m, "Reshape", "r1", "X,s1", "Y1");
  tb_node (m, "Reshape", "r2", "X,s2", "Y2");
  tb_node (m, "Reshape", "r3", "X,s3", "Y3");
  tb_node (m, "Reshape", "r4", "X,s4", "Y4");
  tb_node (m, "Reshape", "r5", "X,s5", "Y5");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  OUT (m, "Y4", F);
  OUT (m, "Y5", F);
  for (gint64 b = 1; b <= 3; b += 2) {
    g_autofree float *x = g_new (float, b * 12);
    g_autofree double *want = g_new (double, b * 12);
    for (gint64 i = 0; i < b * 12; i++)
      want[i] = x[i] = (float) i * 0.5f - 3;
    SedpNnTensor in = TT (F, x, b, 3, 4);
    Out o[5];
    run_model (m, b, 1, &in, o);
    SHAPE_IS (o[0], b, 12);
    SHAPE_IS (o[1], b, 2, 6);
    SHAPE_IS (o[2], 3 * b, 4);
    SHAPE_IS (o[3], 12 * b);
    SHAPE_IS (o[4], b, 3, 2, 2);
    for (int k = 0; k < 5; k++)
      if (o[k].numel == b * 12)
        ASSERT_CLOSE (o[k], want, 0);
    outs_free (o, 5);
  }
  sedp_nn_model_unref (m);
}

static void
test_flatten (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  tb_node (m, "Flatten", "f_default", "X", "Y1");
  SedpNnNode *n = tb_node (m, "Flatten", "f0", "X", "Y0");
  tb_attr_i (n, "axis", 0);
  n = tb_node (m, "Flatten", "f2", "X", "Y2");
  tb_attr_i (n, "axis", 2);
  n = tb_node (m, "Flatten", "fm1", "X", "Ym1");
  tb_attr_i (n, "axis", -1);
  n = tb_node (m, "Flatten", "f3", "X", "Y3");
  tb_attr_i (n, "axis", 3);
  OUT (m, "Y1", F);
  OUT (m, "Y0", F);
  OUT (m, "Y2", F);
  OUT (m, "Ym1", F);
  OUT (m, "Y3", F);
  gint64 b = 2;
  float x[24];
  double want[24];
  for (int i = 0; i < 24; i++)
    want[i] = x[i] = (float) i;
  SedpNnTensor in = TT (F, x, b, 3, 4);
  Out o[5];
  run_model (m, b, 1, &in, o);
  SHAPE_IS (o[0], 2, 12);
  SHAPE_IS (o[1], 1, 24);
  SHAPE_IS (o[2], 6, 4);
  SHAPE_IS (o[3], 6, 4);
  SHAPE_IS (o[4], 24, 1);
  for (int k = 0; k < 5; k++)
    if (o[k].numel == 24)
      ASSERT_CLOSE (o[k], want, 0);
  outs_free (o, 5);
  sedp_nn_model_unref (m);
}

static void
transpose_ref (int rank, const gint64 *dims, const gint64 *perm, const float *x, double *y)
{
  gint64 n = numel_of (rank, dims), od[SEDP_NN_MAX_RANK], in_stride[SEDP_NN_MAX_RANK];
  for (int k = 0; k < rank; k++)
    od[k] = dims[perm[k]];
  in_stride[rank - 1] = 1;
  for (int k = rank - 2; k >= 0; k--)
    in_stride[k] = in_stride[k + 1] * dims[k + 1];
  for (gint64 f = 0; f < n; f++) {
    gint64 rest = f, off = 0;
    for (int k = rank - 1; k >= 0; k--) {
      gint64 idx = rest % od[k];
      rest /= od[k];
      off += idx * in_stride[perm[k]];
    }
    y[f] = x[off];
  }
}

static void
test_transpose (void)
{
  GRand *rng = g_rand_new_with_seed (81);
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  SedpNnNode *n = tb_node (m, "Transpose", "t021", "X", "Y1");
  ATTR_INTS (n, "perm", 0, 2, 1);
  n = tb_node (m, "Transpose", "t201", "X", "Y2");
  ATTR_INTS (n, "perm", 2, 0, 1);
  tb_node (m, "Transpose", "trev", "X", "Y3");
  n = tb_node (m, "Transpose", "t012", "X", "Y4");
  ATTR_INTS (n, "perm", 0, 1, 2);
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  OUT (m, "Y4", F);
  const gint64 perms[4][3] = {{0, 2, 1}, {2, 0, 1}, {2, 1, 0}, {0, 1, 2}};
  for (gint64 b = 1; b <= 5; b += 4) {
    gint64 dims[3] = {b, 3, 4};
    g_autofree float *x = rand_floats (rng, b * 12, -1, 1);
    SedpNnTensor in = tt (F, x, 3, dims);
    Out o[4];
    run_model (m, b, 1, &in, o);
    for (int k = 0; k < 4; k++) {
      gint64 od[3] = {dims[perms[k][0]], dims[perms[k][1]], dims[perms[k][2]]};
      CU_ASSERT (shape_is (&o[k], 3, od));
      g_autofree double *want = g_new (double, b * 12);
      transpose_ref (3, dims, perms[k], x, want);
      if (o[k].numel == b * 12)
        ASSERT_CLOSE (o[k], want, 0);
    }
    outs_free (o, 4);
  }
  sedp_nn_model_unref (m);

  /* 4-D, the perm PyTorch uses for attention-like blocks */
  m = tb_new (13);
  IN (m, "X", F, -1, 2, 3, 5);
  n = tb_node (m, "Transpose", "t0213", "X", "Y");
  ATTR_INTS (n, "perm", 0, 2, 1, 3);
  OUT (m, "Y", F);
  gint64 dims[4] = {2, 2, 3, 5};
  g_autofree float *x = rand_floats (rng, 60, -1, 1);
  SedpNnTensor in = tt (F, x, 4, dims);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 2, 3, 2, 5);
  double want[60];
  transpose_ref (4, dims, I64 (0, 2, 1, 3), x, want);
  if (o[0].numel == 60)
    ASSERT_CLOSE (o[0], want, 0);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* Squeeze / Unsqueeze: axes as an attribute (opset 11) or an input (opset 13). */
static void
squeeze_case (gint64 opset)
{
  gboolean as_input = opset >= 13;
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 1, 3, 1);
  SedpNnNode *n;
  if (as_input) {
    INTS (m, "ax_sq", 1, -1);
    INTS (m, "ax_sq1", 3);
    INTS (m, "ax_un", 0, -1);
    INTS (m, "ax_un2", 1, 3);
    tb_node (m, "Squeeze", "sq", "X,ax_sq", "S");
    tb_node (m, "Squeeze", "sq1", "X,ax_sq1", "S1");
    tb_node (m, "Unsqueeze", "un", "S,ax_un", "U");
    tb_node (m, "Unsqueeze", "un2", "S,ax_un2", "U2");
  } else {
    n = tb_node (m, "Squeeze", "sq", "X", "S");
    ATTR_INTS (n, "axes", 1, -1);
    n = tb_node (m, "Squeeze", "sq1", "X", "S1");
    ATTR_INTS (n, "axes", 3);
    n = tb_node (m, "Unsqueeze", "un", "S", "U");
    ATTR_INTS (n, "axes", 0, -1);
    n = tb_node (m, "Unsqueeze", "un2", "S", "U2");
    ATTR_INTS (n, "axes", 1, 3);
  }
  OUT (m, "S", F);
  OUT (m, "S1", F);
  OUT (m, "U", F);
  OUT (m, "U2", F);
  for (gint64 b = 1; b <= 2; b++) {
    float x[6] = {1, 2, 3, 4, 5, 6};
    SedpNnTensor in = TT (F, x, b, 1, 3, 1);
    Out o[4];
    run_model (m, b, 1, &in, o);
    SHAPE_IS (o[0], b, 3);
    SHAPE_IS (o[1], b, 1, 3);
    SHAPE_IS (o[2], 1, b, 3, 1);
    SHAPE_IS (o[3], b, 1, 3, 1);
    double want[6] = {1, 2, 3, 4, 5, 6};
    for (int k = 0; k < 4; k++)
      if (o[k].numel == b * 3)
        ASSERT_CLOSE (o[k], want, 0);
    outs_free (o, 4);
  }
  sedp_nn_model_unref (m);
}

static void
test_squeeze_unsqueeze_opset11 (void)
{
  squeeze_case (11);
}

static void
test_squeeze_unsqueeze_opset13 (void)
{
  squeeze_case (13);
}

/* Squeeze without axes removes every dimension of size 1 (fixed shapes). */
static void
test_squeeze_all (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, 2, 1, 3, 1);
  tb_node (m, "Squeeze", "sq", "X", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, 4, 5, 6), 2, 1, 3, 1);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 2, 3);
  FLOATS_ARE (o[0], 0, 1, 2, 3, 4, 5, 6);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_identity (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2);
  IN (m, "K", I, -1);
  tb_node (m, "Identity", "id", "X", "Y");
  tb_node (m, "Identity", "idk", "K", "Z");
  tb_node (m, "Identity", "id2", "Y", "W");
  OUT (m, "Y", F);
  OUT (m, "Z", I);
  OUT (m, "W", F);
  SedpNnTensor in[2] = {TT (F, F32 (1.5f, -2, 3, 4), 2, 2), TT (I, I64 (7, -9), 2)};
  Out o[3];
  run_model (m, 2, 2, in, o);
  FLOATS_ARE (o[0], 0, 1.5, -2, 3, 4);
  INTS_ARE (o[1], 7, -9);
  FLOATS_ARE (o[2], 0, 1.5, -2, 3, 4);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Reductions
 * ============================================================================================== */

/* Sum (or mean) of X [b, 3, 4] over @axes (a bitmask of dims, 0: all). */
static void
reduce_ref (const float *x, gint64 b, guint mask, gboolean mean, double *want, double *scale)
{
  gint64 dims[3] = {b, 3, 4};
  if (mask == 0)
    mask = 7;
  gint64 od[3];
  for (int k = 0; k < 3; k++)
    od[k] = (mask & (1u << k)) ? 1 : dims[k];
  gint64 n_out = od[0] * od[1] * od[2], count = (b * 12) / n_out;
  memset (want, 0, sizeof (double) * n_out);
  memset (scale, 0, sizeof (double) * n_out);
  for (gint64 i = 0; i < b; i++)
    for (gint64 j = 0; j < 3; j++)
      for (gint64 k = 0; k < 4; k++) {
        gint64 oi = ((mask & 1) ? 0 : i), oj = ((mask & 2) ? 0 : j), ok = ((mask & 4) ? 0 : k);
        gint64 o = (oi * od[1] + oj) * od[2] + ok;
        double v = x[(i * 3 + j) * 4 + k];
        want[o] += mean ? v / (double) count : v;
        scale[o] += fabs (mean ? v / (double) count : v);
      }
}

typedef struct {
  const char *name;
  guint mask;          /* dims reduced (0: all) */
  gboolean keepdims;
  gboolean axes_given;
  gint64 axes[3];
  guint n_axes;
} ReduceCase;

static void
reduce_cases (const char *op, gint64 opset, gboolean axes_as_input)
{
  GRand *rng = g_rand_new_with_seed (91 + (guint32) opset);
  const ReduceCase cases[] = {
      {"r1", 2, TRUE, TRUE, {1}, 1},
      {"r2", 2, FALSE, TRUE, {1}, 1},
      {"r3", 4, FALSE, TRUE, {-1}, 1},
      {"r4", 6, TRUE, TRUE, {1, 2}, 2},
      {"r5", 6, FALSE, TRUE, {-2, -1}, 2},
      {"r6", 0, TRUE, FALSE, {0}, 0},
      {"r7", 0, FALSE, FALSE, {0}, 0},
      {"r8", 1, FALSE, TRUE, {0}, 1},
  };
  SedpNnModel *m = tb_new (opset);
  IN (m, "X", F, -1, 3, 4);
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    const ReduceCase *rc = &cases[c];
    g_autofree char *out = g_strdup_printf ("Y%u", c);
    g_autofree char *axes = g_strdup_printf ("axes%u", c);
    g_autofree char *ins = g_strdup_printf ("X,%s", axes);
    SedpNnNode *n;
    if (axes_as_input && rc->axes_given) {
      tb_ints (m, axes, rc->n_axes, rc->axes);
      n = tb_node (m, op, rc->name, ins, out);
    } else {
      n = tb_node (m, op, rc->name, "X", out);
      if (rc->axes_given)
        tb_attr_ints (n, "axes", rc->n_axes, rc->axes);
    }
    if (!rc->keepdims)
      tb_attr_i (n, "keepdims", 0);
    OUT (m, out, F);
  }
  for (gint64 b = 1; b <= 4; b += 3) {
    g_autofree float *x = rand_floats (rng, b * 12, -2, 2);
    SedpNnTensor in = TT (F, x, b, 3, 4);
    Out o[G_N_ELEMENTS (cases)];
    run_model (m, b, 1, &in, o);
    for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
      const ReduceCase *rc = &cases[c];
      double want[64], scale[64];
      reduce_ref (x, b, rc->mask, op[6] == 'M', want, scale);
      guint mask = rc->mask ? rc->mask : 7;
      gint64 dims[3] = {b, 3, 4}, od[3];
      int r = 0;
      for (int k = 0; k < 3; k++)
        if (!(mask & (1u << k)))
          od[r++] = dims[k];
        else if (rc->keepdims)
          od[r++] = 1;
      if (!shape_is (&o[c], r, od)) {
        fprintf (stderr, " (%s %s)", op, rc->name);
        CU_FAIL ("reduction shape");
      } else
        ASSERT_CLOSE_SCALED (o[c], want, scale, RTOL_REDUCE);
    }
    outs_free (o, G_N_ELEMENTS (cases));
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_reduce_sum_opset11 (void)
{
  reduce_cases ("ReduceSum", 11, FALSE);
}

static void
test_reduce_sum_opset13 (void)
{
  reduce_cases ("ReduceSum", 13, TRUE);
}

static void
test_reduce_mean_opset13 (void)
{
  reduce_cases ("ReduceMean", 13, FALSE);
}

static void
test_reduce_mean_opset17 (void)
{
  reduce_cases ("ReduceMean", 17, FALSE);
}

static void
test_reduce_mean_opset18 (void)
{
  reduce_cases ("ReduceMean", 18, TRUE);
}

/* noop_with_empty_axes: without axes, 1 is the identity, 0 reduces everything; an empty axes
 * input counts as no axes. */
static void
test_reduce_noop_empty_axes (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  tb_init_i (m, "empty", 1, I64 (0), NULL);
  SedpNnNode *n = tb_node (m, "ReduceSum", "noop", "X", "Y1");
  tb_attr_i (n, "noop_with_empty_axes", 1);
  n = tb_node (m, "ReduceSum", "noop_empty", "X,empty", "Y2");
  tb_attr_i (n, "noop_with_empty_axes", 1);
  n = tb_node (m, "ReduceSum", "all", "X,empty", "Y3");
  tb_attr_i (n, "keepdims", 0);
  n = tb_node (m, "ReduceSum", "all_keep", "X", "Y4");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  OUT (m, "Y4", F);
  SedpNnTensor in = TT (F, F32 (1, 2, 3, 4, 5, 6.5f), 2, 3);
  Out o[4];
  run_model (m, 2, 1, &in, o);
  SHAPE_IS (o[0], 2, 3);
  FLOATS_ARE (o[0], RTOL_REDUCE, 1, 2, 3, 4, 5, 6.5);
  SHAPE_IS (o[1], 2, 3);
  FLOATS_ARE (o[1], RTOL_REDUCE, 1, 2, 3, 4, 5, 6.5);
  CU_ASSERT (shape_is (&o[2], 0, NULL));
  FLOATS_ARE (o[2], RTOL_REDUCE, 21.5);
  SHAPE_IS (o[3], 1, 1);
  FLOATS_ARE (o[3], RTOL_REDUCE, 21.5);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * BatchNormalization
 * ============================================================================================== */

static void
batchnorm_case (int rank, float eps, gboolean set_eps, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  const gint64 C = 5, L = 3;
  g_autofree float *scale = rand_floats (rng, C, 0.5, 2);
  g_autofree float *bias = rand_floats (rng, C, -1, 1);
  g_autofree float *mean = rand_floats (rng, C, -1, 1);
  g_autofree float *var = rand_floats (rng, C, 0.01, 3);
  SedpNnModel *m = tb_new (15);
  if (rank == 2)
    IN (m, "X", F, -1, C);
  else
    IN (m, "X", F, -1, C, L);
  INIT_F (m, "scale", scale, C);
  INIT_F (m, "B", bias, C);
  INIT_F (m, "mean", mean, C);
  INIT_F (m, "var", var, C);
  SedpNnNode *n = tb_node (m, "BatchNormalization", "bn", "X,scale,B,mean,var", "Y");
  if (set_eps)
    tb_attr_f (n, "epsilon", eps);
  tb_attr_f (n, "momentum", 0.9f);
  OUT (m, "Y", F);
  double e = set_eps ? eps : 1e-5;
  for (gint64 b = 1; b <= 6; b += 5) {
    gint64 inner = rank == 2 ? 1 : L, n_el = b * C * inner;
    g_autofree float *x = rand_floats (rng, n_el, -3, 3);
    SedpNnTensor in = rank == 2 ? TT (F, x, b, C) : TT (F, x, b, C, L);
    Out o[1];
    run_model (m, b, 1, &in, o);
    g_autofree double *want = g_new (double, n_el);
    g_autofree double *sc = g_new (double, n_el);
    for (gint64 i = 0; i < b; i++)
      for (gint64 c = 0; c < C; c++)
        for (gint64 l = 0; l < inner; l++) {
          gint64 f = (i * C + c) * inner + l;
          double inv = 1.0 / sqrt ((double) var[c] + (double) (float) e);
          want[f] = ((double) x[f] - mean[c]) * inv * scale[c] + bias[c];
          sc[f] = (fabs (x[f]) + fabs (mean[c])) * inv * scale[c] + fabs (bias[c]);
        }
    if (o[0].numel == n_el)
      ASSERT_CLOSE_SCALED (o[0], want, sc, RTOL_REDUCE);
    else
      CU_FAIL ("batchnorm output size");
    outs_free (o, 1);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_batchnorm (void)
{
  batchnorm_case (2, 0, FALSE, 101);
  batchnorm_case (2, 1e-3f, TRUE, 102);
  batchnorm_case (3, 0.5f, TRUE, 103);
}

static void
test_batchnorm_literal (void)
{
  SedpNnModel *m = tb_new (15);
  IN (m, "X", F, -1, 2);
  INIT_F (m, "scale", F32 (2, 1), 2);
  INIT_F (m, "B", F32 (1, -1), 2);
  INIT_F (m, "mean", F32 (1, 0), 2);
  INIT_F (m, "var", F32 (4, 0.25f), 2);
  SedpNnNode *n = tb_node (m, "BatchNormalization", "bn", "X,scale,B,mean,var", "Y");
  tb_attr_f (n, "epsilon", 0);
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, F32 (3, 1, -1, -0.5f), 2, 2);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  /* (3-1)/2·2+1 = 3; (1-0)/0.5·1-1 = 1; (-1-1)/2·2+1 = -1; -0.5/0.5-1 = -2 */
  FLOATS_ARE (o[0], RTOL_REDUCE, 3, 1, -1, -2);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Cast
 * ============================================================================================== */

static void
test_cast_float_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 4);
  IN (m, "K", I, -1, 2);
  SedpNnNode *n = tb_node (m, "Cast", "to_i64", "X", "Xi");
  tb_attr_i (n, "to", SEDP_NN_INT64);
  n = tb_node (m, "Cast", "to_f", "K", "Kf");
  tb_attr_i (n, "to", SEDP_NN_FLOAT);
  n = tb_node (m, "Cast", "to_f_same", "X", "Xf");
  tb_attr_i (n, "to", SEDP_NN_FLOAT);
  OUT (m, "Xi", I);
  OUT (m, "Kf", F);
  OUT (m, "Xf", F);
  SedpNnTensor in[2] = {TT (F, F32 (2.7f, -2.7f, 0.4f, -0.4f, 1e6f, -3, 5.5f, 100.99f), 2, 4),
                        TT (I, I64 (-5, 16777216, 1LL << 40, 0), 2, 2)};
  Out o[3];
  run_model (m, 2, 2, in, o);
  SHAPE_IS (o[0], 2, 4);
  INTS_ARE (o[0], 2, -2, 0, 0, 1000000, -3, 5, 100); /* truncation toward zero */
  FLOATS_ARE (o[1], 0, -5, 16777216, 1099511627776.0, 0);
  FLOATS_ARE (o[2], 0, 2.7f, -2.7f, 0.4f, -0.4f, 1e6, -3, 5.5, 100.99f);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
}

/* float → int32 → float and float → bool → float, int64 → int32 → int64. */
static void
test_cast_int32_bool (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 4);
  IN (m, "K", I, -1, 2);
  SedpNnNode *n = tb_node (m, "Cast", "to_i32", "X", "a");
  tb_attr_i (n, "to", SEDP_NN_INT32);
  n = tb_node (m, "Cast", "i32_to_f", "a", "Y1");
  tb_attr_i (n, "to", SEDP_NN_FLOAT);
  n = tb_node (m, "Cast", "to_bool", "X", "b");
  tb_attr_i (n, "to", SEDP_NN_BOOL);
  n = tb_node (m, "Cast", "bool_to_f", "b", "Y2");
  tb_attr_i (n, "to", SEDP_NN_FLOAT);
  n = tb_node (m, "Cast", "k_to_i32", "K", "c");
  tb_attr_i (n, "to", SEDP_NN_INT32);
  n = tb_node (m, "Cast", "i32_to_k", "c", "Y3");
  tb_attr_i (n, "to", SEDP_NN_INT64);
  n = tb_node (m, "Cast", "bool_to_k", "b", "Y4");
  tb_attr_i (n, "to", SEDP_NN_INT64);
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", I);
  OUT (m, "Y4", I);
  SedpNnTensor in[2] = {TT (F, F32 (2.7f, -2.7f, 0, -0.25f, 0.5f, 1e9f, -0.0f, 3), 2, 4),
                        TT (I, I64 (-7, 123456, 0, 2147483647), 2, 2)};
  Out o[4];
  run_model (m, 2, 2, in, o);
  FLOATS_ARE (o[0], 0, 2, -2, 0, 0, 0, 1e9, 0, 3);
  FLOATS_ARE (o[1], 0, 1, 1, 0, 1, 1, 1, 0, 1);
  INTS_ARE (o[2], -7, 123456, 0, 2147483647);
  INTS_ARE (o[3], 1, 1, 0, 1, 1, 1, 0, 1);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

/* int32 and bool tensors as graph outputs. */
static void
test_cast_outputs (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  SedpNnNode *n = tb_node (m, "Cast", "to_i32", "X", "a");
  tb_attr_i (n, "to", SEDP_NN_INT32);
  n = tb_node (m, "Cast", "to_bool", "X", "b");
  tb_attr_i (n, "to", SEDP_NN_BOOL);
  OUT (m, "a", SEDP_NN_INT32);
  OUT (m, "b", SEDP_NN_BOOL);
  SedpNnTensor in = TT (F, F32 (-1.5f, 0, 7.9f), 1, 3);
  Out o[2];
  run_model (m, 1, 1, &in, o);
  CU_ASSERT_EQUAL (o[0].dtype, SEDP_NN_INT32);
  CU_ASSERT_EQUAL (o[1].dtype, SEDP_NN_BOOL);
  if (o[0].dtype == SEDP_NN_INT32 && o[0].numel == 3) {
    const gint32 *v = o[0].data;
    CU_ASSERT (v[0] == -1 && v[1] == 0 && v[2] == 7);
  }
  if (o[1].dtype == SEDP_NN_BOOL && o[1].numel == 3) {
    const guint8 *v = o[1].data;
    CU_ASSERT (v[0] == 1 && v[1] == 0 && v[2] == 1);
  }
  outs_free (o, 2);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Constant, Shape, Slice, Expand
 * ============================================================================================== */

static void
test_constant (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3);
  SedpNnNode *n = tb_node (m, "Constant", "c_tensor", "", "ct");
  tb_attr_tensor (n, "value", tb_tensor ("ct", F, 2, I64 (1, 3), F32 (1, 2, 3)));
  n = tb_node (m, "Constant", "c_float", "", "cf");
  tb_attr_f (n, "value_float", 0.5f);
  n = tb_node (m, "Constant", "c_floats", "", "cfs");
  tb_attr_floats (n, "value_floats", 3, F32 (10, 20, 30));
  n = tb_node (m, "Constant", "c_int", "", "ci");
  tb_attr_i (n, "value_int", -42);
  n = tb_node (m, "Constant", "c_ints", "", "cis");
  ATTR_INTS (n, "value_ints", 4, 5, -6);
  n = tb_node (m, "Constant", "c_itensor", "", "cit");
  tb_attr_tensor (n, "value", tb_tensor ("cit", I, 0, NULL, I64 (9)));
  tb_node (m, "Add", "add_t", "X,ct", "Y1");
  tb_node (m, "Mul", "mul_f", "X,cf", "Y2");
  tb_node (m, "Sub", "sub_fs", "X,cfs", "Y3");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  OUT (m, "ci", I);
  OUT (m, "cis", I);
  OUT (m, "cit", I);
  OUT (m, "cfs", F);
  SedpNnTensor in = TT (F, F32 (1, 1, 1, 2, 4, 6), 2, 3);
  Out o[7];
  run_model (m, 2, 1, &in, o);
  FLOATS_ARE (o[0], RTOL_ELEM, 2, 3, 4, 3, 6, 9);
  FLOATS_ARE (o[1], RTOL_ELEM, 0.5, 0.5, 0.5, 1, 2, 3);
  FLOATS_ARE (o[2], RTOL_ELEM, -9, -19, -29, -8, -16, -24);
  CU_ASSERT (shape_is (&o[3], 0, NULL));
  INTS_ARE (o[3], -42);
  SHAPE_IS (o[4], 3);
  INTS_ARE (o[4], 4, 5, -6);
  CU_ASSERT (shape_is (&o[5], 0, NULL));
  INTS_ARE (o[5], 9);
  SHAPE_IS (o[6], 3);
  FLOATS_ARE (o[6], 0, 10, 20, 30);
  outs_free (o, 7);
  sedp_nn_model_unref (m);
}

static void
test_shape (void)
{
  SedpNnModel *m = tb_new (15);
  IN (m, "X", F, -1, 3, 4);
  tb_node (m, "Shape", "s_all", "X", "S");
  SedpNnNode *n = tb_node (m, "Shape", "s_start", "X", "S1");
  tb_attr_i (n, "start", 1);
  n = tb_node (m, "Shape", "s_end", "X", "S2");
  tb_attr_i (n, "end", -1);
  n = tb_node (m, "Shape", "s_mid", "X", "S3");
  tb_attr_i (n, "start", -2);
  tb_attr_i (n, "end", -1);
  n = tb_node (m, "Shape", "s_clamp", "X", "S4");
  tb_attr_i (n, "start", -10);
  tb_attr_i (n, "end", 10);
  OUT (m, "S", I);
  OUT (m, "S1", I);
  OUT (m, "S2", I);
  OUT (m, "S3", I);
  OUT (m, "S4", I);
  for (gint64 b = 1; b <= 7; b += 6) {
    g_autofree float *x = g_new0 (float, b * 12);
    SedpNnTensor in = TT (F, x, b, 3, 4);
    Out o[5];
    run_model (m, b, 1, &in, o);
    INTS_ARE (o[0], b, 3, 4);
    INTS_ARE (o[1], 3, 4);
    INTS_ARE (o[2], b, 3);
    INTS_ARE (o[3], 3);
    INTS_ARE (o[4], b, 3, 4);
    outs_free (o, 5);
  }
  sedp_nn_model_unref (m);
}

/* Python-style slicing of one axis, the reference for Slice. */
static void
slice_axis (gint64 dim, gint64 start, gint64 end, gint64 step, gint64 *first, gint64 *count)
{
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = CLAMP (start, 0, dim);
    end = CLAMP (end, 0, dim);
    *count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = CLAMP (start, 0, dim - 1);
    end = CLAMP (end, -1, dim - 1);
    *count = start > end ? (start - end - step - 1) / (-step) : 0;
  }
  *first = start;
}

typedef struct {
  const char *name;
  guint n;
  gint64 starts[3], ends[3], axes[3], steps[3];
  gboolean with_axes, with_steps;
} SliceCase;

static void
test_slice (void)
{
  const gint64 BIG = G_MAXINT64, SMALL = G_MININT64;
  const SliceCase cases[] = {
      {"plain", 1, {1}, {3}, {2}, {1}, TRUE, FALSE},
      {"neg", 2, {-2, 0}, {-1, 100}, {1, 2}, {1, 1}, TRUE, TRUE},
      {"clamp", 1, {-1000}, {BIG}, {-1}, {1}, TRUE, TRUE},
      {"step2", 1, {0}, {BIG}, {2}, {2}, TRUE, TRUE},
      {"rev", 1, {-1}, {SMALL}, {2}, {-1}, TRUE, TRUE},
      {"rev2", 2, {BIG, 2}, {0, -1000}, {1, 2}, {-2, -3}, TRUE, TRUE},
      {"noaxes", 3, {0, 1, 1}, {BIG, 3, 4}, {0}, {1}, FALSE, FALSE},
  };
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 5);
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    const SliceCase *sc = &cases[c];
    g_autofree char *st = g_strdup_printf ("st%u", c), *en = g_strdup_printf ("en%u", c),
                    *ax = g_strdup_printf ("ax%u", c), *sp = g_strdup_printf ("sp%u", c);
    tb_ints (m, st, sc->n, sc->starts);
    tb_ints (m, en, sc->n, sc->ends);
    if (sc->with_axes)
      tb_ints (m, ax, sc->n, sc->axes);
    if (sc->with_steps)
      tb_ints (m, sp, sc->n, sc->steps);
    g_autoptr (GString) ins = g_string_new (NULL);
    g_string_printf (ins, "X,%s,%s", st, en);
    if (sc->with_axes || sc->with_steps)
      g_string_append_printf (ins, ",%s", sc->with_axes ? ax : "");
    if (sc->with_steps)
      g_string_append_printf (ins, ",%s", sp);
    g_autofree char *out = g_strdup_printf ("Y%u", c);
    tb_node (m, "Slice", sc->name, ins->str, out);
    OUT (m, out, F);
  }
  GRand *rng = g_rand_new_with_seed (111);
  for (gint64 b = 1; b <= 4; b += 3) {
    gint64 dims[3] = {b, 3, 5};
    g_autofree float *x = rand_floats (rng, b * 15, -1, 1);
    SedpNnTensor in = tt (F, x, 3, dims);
    Out o[G_N_ELEMENTS (cases)];
    run_model (m, b, 1, &in, o);
    for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
      const SliceCase *sc = &cases[c];
      gint64 first[3] = {0, 0, 0}, cnt[3] = {dims[0], dims[1], dims[2]}, step[3] = {1, 1, 1};
      for (guint k = 0; k < sc->n; k++) {
        gint64 a = sc->with_axes ? sc->axes[k] : (gint64) k;
        if (a < 0)
          a += 3;
        step[a] = sc->with_steps ? sc->steps[k] : 1;
        slice_axis (dims[a], sc->starts[k], sc->ends[k], step[a], &first[a], &cnt[a]);
      }
      gint64 n = cnt[0] * cnt[1] * cnt[2];
      g_autofree double *want = g_new (double, MAX (n, 1));
      gint64 f = 0;
      for (gint64 i = 0; i < cnt[0]; i++)
        for (gint64 j = 0; j < cnt[1]; j++)
          for (gint64 k = 0; k < cnt[2]; k++)
            want[f++] = x[((first[0] + i * step[0]) * 3 + first[1] + j * step[1]) * 5 + first[2] + k * step[2]];
      if (!shape_is (&o[c], 3, cnt)) {
        fprintf (stderr, " (slice %s, batch %" G_GINT64_FORMAT ")", sc->name, b);
        CU_FAIL ("slice shape");
      } else if (n > 0)
        ASSERT_CLOSE (o[c], want, 0);
    }
    outs_free (o, G_N_ELEMENTS (cases));
  }
  g_rand_free (rng);
  sedp_nn_model_unref (m);
}

/* Slice on int64 data (shapes), as exporters emit around Reshape. */
static void
test_slice_int64 (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  INTS (m, "st", 1);
  INTS (m, "en", G_MAXINT64);
  tb_node (m, "Shape", "shape", "X", "s");
  tb_node (m, "Slice", "tail", "s,st,en", "Y");
  OUT (m, "Y", I);
  g_autofree float *x = g_new0 (float, 24);
  SedpNnTensor in = TT (F, x, 2, 3, 4);
  Out o[1];
  run_model (m, 2, 1, &in, o);
  INTS_ARE (o[0], 3, 4);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

static void
test_expand (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 1, 4);
  IN (m, "c", F, -1, 1);
  INTS (m, "s1", 3, 1);       /* [N,1,4] with [3,1] → [N,3,4] */
  INTS (m, "s2", 1, 1, 1, 4); /* rank grows: [1,N,1,4] */
  INTS (m, "s3", 1, 5);       /* [N,1] → [N,5] */
  tb_node (m, "Expand", "e1", "X,s1", "Y1");
  tb_node (m, "Expand", "e2", "X,s2", "Y2");
  tb_node (m, "Expand", "e3", "c,s3", "Y3");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  SedpNnTensor in[2] = {TT (F, F32 (1, 2, 3, 4, 5, 6, 7, 8), 2, 1, 4), TT (F, F32 (-1, 9), 2, 1)};
  Out o[3];
  run_model (m, 2, 2, in, o);
  SHAPE_IS (o[0], 2, 3, 4);
  FLOATS_ARE (o[0], 0, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8);
  SHAPE_IS (o[1], 1, 2, 1, 4);
  FLOATS_ARE (o[1], 0, 1, 2, 3, 4, 5, 6, 7, 8);
  SHAPE_IS (o[2], 2, 5);
  FLOATS_ARE (o[2], 0, -1, -1, -1, -1, -1, 9, 9, 9, 9, 9);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
}

/* Expand to a shape computed from another input (expand_as), as PyTorch exports it. */
static void
test_expand_shape_of (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "u", F, -1, 1, 2);   /* user vector, one per row */
  IN (m, "items", F, -1, 3, 2);
  tb_node (m, "Shape", "shape", "items", "s");
  tb_node (m, "Expand", "expand_as", "u,s", "ue");
  tb_node (m, "Mul", "dot", "ue,items", "Y");
  OUT (m, "Y", F);
  SedpNnTensor in[2] = {TT (F, F32 (1, 2), 1, 1, 2), TT (F, F32 (1, 1, 2, 2, 3, -3), 1, 3, 2)};
  Out o[1];
  run_model (m, 1, 2, in, o);
  SHAPE_IS (o[0], 1, 3, 2);
  FLOATS_ARE (o[0], RTOL_ELEM, 1, 2, 2, 4, 3, -6);
  outs_free (o, 1);
  sedp_nn_model_unref (m);
}

/* x.view(x.size(0), -1) as PyTorch exports it: Shape → Gather → Unsqueeze → Concat → Reshape. */
static void
test_pytorch_flatten_pattern (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  tb_init_i (m, "zero", 0, NULL, I64 (0));
  INTS (m, "ax0", 0);
  INTS (m, "minus1", -1);
  tb_node (m, "Shape", "shape", "X", "s");
  tb_node (m, "Gather", "size0", "s,zero", "n");
  tb_node (m, "Unsqueeze", "unsq", "n,ax0", "n1");
  SedpNnNode *c = tb_node (m, "Concat", "cat", "n1,minus1", "shape2");
  tb_attr_i (c, "axis", 0);
  tb_node (m, "Reshape", "view", "X,shape2", "Y");
  OUT (m, "Y", F);
  for (gint64 b = 1; b <= 3; b += 2) {
    g_autofree float *x = g_new (float, b * 12);
    g_autofree double *want = g_new (double, b * 12);
    for (gint64 i = 0; i < b * 12; i++)
      want[i] = x[i] = (float) (i * 3 % 7);
    SedpNnTensor in = TT (F, x, b, 3, 4);
    Out o[1];
    run_model (m, b, 1, &in, o);
    SHAPE_IS (o[0], b, 12);
    if (o[0].numel == b * 12)
      ASSERT_CLOSE (o[0], want, 0);
    outs_free (o, 1);
  }
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Fusion: chains the engine may fuse give the unfused numbers
 * ============================================================================================== */

typedef enum { ACT_NONE, ACT_RELU, ACT_SIGMOID } Act;

static double
act_apply (Act a, double v)
{
  return a == ACT_RELU ? MAX (v, 0) : a == ACT_SIGMOID ? sigmoid_ref (v) : v;
}

/* X [N, K] → (Gemm with bias | MatMul + Add(bias)) → act; the pre-activation value is also a
 * graph output when @expose_mid (so it cannot disappear into a fused kernel). @bias_first: Add
 * (bias, mm) instead of Add (mm, bias). */
static void
fusion_case (gboolean gemm, Act act, gboolean expose_mid, gboolean bias_first, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  const gint64 K = 24, N = 10;
  g_autofree float *W = rand_floats (rng, K * N, -1, 1);
  g_autofree float *bias = rand_floats (rng, N, -1, 1);
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, K);
  INIT_F (m, "W", W, K, N);
  INIT_F (m, "b", bias, N);
  const char *pre = "pre";
  if (gemm)
    tb_node (m, "Gemm", "fc", "X,W,b", pre);
  else {
    tb_node (m, "MatMul", "mm", "X,W", "mmout");
    tb_node (m, "Add", "bias", bias_first ? "b,mmout" : "mmout,b", pre);
  }
  if (act != ACT_NONE)
    tb_node (m, act == ACT_RELU ? "Relu" : "Sigmoid", "act", pre, "Y");
  else
    tb_node (m, "Identity", "act", pre, "Y");
  OUT (m, "Y", F);
  if (expose_mid)
    OUT (m, pre, F);
  for (gint64 b = 1; b <= 33; b += 32) {
    g_autofree float *x = rand_floats (rng, b * K, -1, 1);
    SedpNnTensor in = TT (F, x, b, K);
    Out o[2];
    run_model (m, b, 1, &in, o);
    g_autofree double *pre_w = g_new (double, b * N), *pre_s = g_new (double, b * N);
    g_autofree double *y_w = g_new (double, b * N), *y_s = g_new (double, b * N);
    ref_gemm (b, K, N, x, FALSE, W, FALSE, bias, 1, I64 (N), 1, 1, pre_w, pre_s);
    for (gint64 i = 0; i < b * N; i++) {
      y_w[i] = act_apply (act, pre_w[i]);
      /* the activations have slope ≤ 1 */
      y_s[i] = pre_s[i];
    }
    SHAPE_IS (o[0], b, N);
    if (o[0].numel == b * N)
      ASSERT_CLOSE_SCALED (o[0], y_w, y_s, RTOL_REDUCE);
    if (expose_mid) {
      SHAPE_IS (o[1], b, N);
      if (o[1].numel == b * N)
        ASSERT_CLOSE_SCALED (o[1], pre_w, pre_s, RTOL_REDUCE);
    }
    outs_free (o, expose_mid ? 2 : 1);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

static void
test_fusion_gemm_relu (void)
{
  fusion_case (TRUE, ACT_RELU, FALSE, FALSE, 121);
  fusion_case (TRUE, ACT_RELU, TRUE, FALSE, 122);
  fusion_case (TRUE, ACT_SIGMOID, FALSE, FALSE, 123);
}

static void
test_fusion_matmul_add_relu (void)
{
  fusion_case (FALSE, ACT_RELU, FALSE, FALSE, 131);
  fusion_case (FALSE, ACT_RELU, FALSE, TRUE, 132);
  fusion_case (FALSE, ACT_RELU, TRUE, FALSE, 133);
  fusion_case (FALSE, ACT_NONE, FALSE, FALSE, 134);
}

static void
test_fusion_matmul_add_sigmoid (void)
{
  fusion_case (FALSE, ACT_SIGMOID, FALSE, FALSE, 141);
  fusion_case (FALSE, ACT_SIGMOID, FALSE, TRUE, 142);
  fusion_case (FALSE, ACT_SIGMOID, TRUE, TRUE, 143);
}

/* The MatMul result feeds two consumers, and the Add's other operand is a full [N, M] input (not
 * a bias): neither may be fused away. */
static void
test_fusion_not_applicable (void)
{
  GRand *rng = g_rand_new_with_seed (151);
  const gint64 K = 6, N = 4;
  g_autofree float *W = rand_floats (rng, K * N, -1, 1);
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, K);
  IN (m, "R", F, -1, N);
  INIT_F (m, "W", W, K, N);
  tb_node (m, "MatMul", "mm", "X,W", "h");
  tb_node (m, "Add", "add_res", "h,R", "s");  /* a residual, not a bias */
  tb_node (m, "Relu", "relu", "s", "Y");
  tb_node (m, "Sigmoid", "sig", "h", "Z");    /* h's second consumer */
  OUT (m, "Y", F);
  OUT (m, "Z", F);
  for (gint64 b = 2; b <= 5; b += 3) {
    g_autofree float *x = rand_floats (rng, b * K, -1, 1);
    g_autofree float *r = rand_floats (rng, b * N, -1, 1);
    SedpNnTensor in[2] = {TT (F, x, b, K), TT (F, r, b, N)};
    Out o[2];
    run_model (m, b, 2, in, o);
    g_autofree double *h = g_new (double, b * N), *hs = g_new (double, b * N);
    g_autofree double *y = g_new (double, b * N), *ys = g_new (double, b * N), *z = g_new (double, b * N);
    ref_gemm (b, K, N, x, FALSE, W, FALSE, NULL, 0, NULL, 1, 0, h, hs);
    for (gint64 i = 0; i < b * N; i++) {
      y[i] = MAX (h[i] + r[i], 0);
      ys[i] = hs[i] + fabs (r[i]);
      z[i] = sigmoid_ref (h[i]);
    }
    if (o[0].numel == b * N && o[1].numel == b * N) {
      ASSERT_CLOSE_SCALED (o[0], y, ys, RTOL_REDUCE);
      ASSERT_CLOSE_SCALED (o[1], z, hs, RTOL_REDUCE);
    } else
      CU_FAIL ("output sizes");
    outs_free (o, 2);
  }
  sedp_nn_model_unref (m);
  g_rand_free (rng);
}

/* ================================================================================================
 * A small MLP; arena reuse; several plans and threads
 * ============================================================================================== */

typedef struct {
  gint64 K, H, O;
  float *W1, *b1, *W2, *b2;
} Mlp;

/* X [N, K] → MatMul+Add → Relu → Gemm → Sigmoid → Y [N, O]. */
static SedpNnModel *
mlp_model (Mlp *p, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  p->K = 20, p->H = 16, p->O = 3;
  p->W1 = rand_floats (rng, p->K * p->H, -0.5, 0.5);
  p->b1 = rand_floats (rng, p->H, -0.5, 0.5);
  p->W2 = rand_floats (rng, p->H * p->O, -0.5, 0.5);
  p->b2 = rand_floats (rng, p->O, -0.5, 0.5);
  g_rand_free (rng);
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, p->K);
  INIT_F (m, "W1", p->W1, p->K, p->H);
  INIT_F (m, "b1", p->b1, p->H);
  INIT_F (m, "W2", p->W2, p->H, p->O);
  INIT_F (m, "b2", p->b2, p->O);
  tb_node (m, "MatMul", "fc1", "X,W1", "h0");
  tb_node (m, "Add", "fc1_bias", "h0,b1", "h1");
  tb_node (m, "Relu", "relu1", "h1", "h");
  tb_node (m, "Gemm", "fc2", "h,W2,b2", "logit");
  tb_node (m, "Sigmoid", "out", "logit", "Y");
  OUT (m, "Y", F);
  return m;
}

static void
mlp_free (Mlp *p)
{
  g_free (p->W1);
  g_free (p->b1);
  g_free (p->W2);
  g_free (p->b2);
}

static void
mlp_ref (const Mlp *p, gint64 rows, const float *x, double *y)
{
  g_autofree double *h = g_new (double, p->H);
  for (gint64 r = 0; r < rows; r++) {
    for (gint64 j = 0; j < p->H; j++) {
      double s = p->b1[j];
      for (gint64 k = 0; k < p->K; k++)
        s += (double) x[r * p->K + k] * p->W1[k * p->H + j];
      h[j] = MAX (s, 0);
    }
    for (gint64 j = 0; j < p->O; j++) {
      double s = p->b2[j];
      for (gint64 k = 0; k < p->H; k++)
        s += h[k] * p->W2[k * p->O + j];
      y[r * p->O + j] = sigmoid_ref (s);
    }
  }
}

static void
test_arena_reuse (void)
{
  Mlp p;
  SedpNnModel *m = mlp_model (&p, 161);
  GRand *rng = g_rand_new_with_seed (162);
  const gint64 B = 6;
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, B, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT (sedp_nn_plan_get_arena_size (plan) > 0);
  g_autofree float *x1 = rand_floats (rng, B * p.K, -1, 1);
  g_autofree float *x2 = rand_floats (rng, B * p.K, -1, 1);
  g_autofree double *w1 = g_new (double, B * p.O), *w2 = g_new (double, B * p.O);
  mlp_ref (&p, B, x1, w1);
  mlp_ref (&p, B, x2, w2);
  SedpNnTensor in1 = TT (F, x1, B, p.K), in2 = TT (F, x2, B, p.K);
  Out a[1], b[1], c[1];
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 1, &in1, a, &error));
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 1, &in2, b, &error));
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 1, &in1, c, &error));
  ASSERT_CLOSE (a[0], w1, RTOL_REDUCE);
  ASSERT_CLOSE (b[0], w2, RTOL_REDUCE);
  /* the same inputs give bit-identical outputs */
  CU_ASSERT_EQUAL (memcmp (a[0].data, c[0].data, sizeof (float) * B * p.O), 0);

  /* the outputs point into the plan's arena: valid until the next run, overwritten by it */
  SedpNnTensor raw[1];
  CU_ASSERT_TRUE (sedp_nn_plan_run (plan, 1, &in2, 1, raw, &error));
  CU_ASSERT_EQUAL (raw[0].dtype, SEDP_NN_FLOAT);
  CU_ASSERT (raw[0].rank == 2 && raw[0].dims[0] == B && raw[0].dims[1] == p.O);
  CU_ASSERT_EQUAL (memcmp (raw[0].data, b[0].data, sizeof (float) * B * p.O), 0);

  /* the plan's declared inputs and outputs */
  CU_ASSERT_EQUAL (sedp_nn_plan_get_n_inputs (plan), 1);
  const SedpNnTensor *pi = sedp_nn_plan_get_input (plan, 0);
  CU_ASSERT (pi && pi->dtype == F && pi->rank == 2 && pi->dims[0] == B && pi->dims[1] == p.K);
  CU_ASSERT (pi && pi->name && strcmp (pi->name, "X") == 0);
  CU_ASSERT_EQUAL (sedp_nn_plan_get_n_outputs (plan), 1);
  const SedpNnTensor *po = sedp_nn_plan_get_output (plan, 0);
  CU_ASSERT (po && po->dtype == F && po->rank == 2 && po->dims[0] == B && po->dims[1] == p.O);
  CU_ASSERT (po && po->name && strcmp (po->name, "Y") == 0);
  /* 2 flops per multiply-add of the two layers, at least */
  CU_ASSERT (sedp_nn_plan_get_flops (plan) >= 2.0 * B * (p.K * p.H + p.H * p.O));
  g_autoptr (GString) desc = g_string_new (NULL);
  sedp_nn_plan_describe (plan, desc);
  CU_ASSERT (desc->len > 0);

  outs_free (a, 1);
  outs_free (b, 1);
  outs_free (c, 1);
  sedp_nn_plan_free (plan);
  g_rand_free (rng);
  sedp_nn_model_unref (m);
  mlp_free (&p);
}

/* Plans of several batch sizes of one model, alive at once, interleaved. */
static void
test_plans_interleaved (void)
{
  Mlp p;
  SedpNnModel *m = mlp_model (&p, 171);
  GRand *rng = g_rand_new_with_seed (172);
  const gint64 batches[] = {1, 7, 64, 3};
  SedpNnPlan *plans[4];
  for (guint i = 0; i < 4; i++) {
    plans[i] = sedp_nn_plan_new (m, batches[i], NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (plans[i]);
  }
  for (guint round = 0; round < 3; round++)
    for (guint i = 0; i < 4; i++) {
      gint64 B = batches[(i + round) % 4];
      SedpNnPlan *plan = plans[(i + round) % 4];
      g_autofree float *x = rand_floats (rng, B * p.K, -1, 1);
      g_autofree double *w = g_new (double, B * p.O);
      mlp_ref (&p, B, x, w);
      SedpNnTensor in = TT (F, x, B, p.K);
      Out o[1];
      CU_ASSERT_TRUE_FATAL (run_plan (plan, 1, &in, o, NULL));
      ASSERT_CLOSE (o[0], w, RTOL_REDUCE);
      outs_free (o, 1);
    }
  for (guint i = 0; i < 4; i++)
    sedp_nn_plan_free (plans[i]);
  /* the model outlives its plans, and plans hold no reference the test must drop */
  g_rand_free (rng);
  sedp_nn_model_unref (m);
  mlp_free (&p);
}

typedef struct {
  SedpNnModel *model;
  const Mlp *mlp;
  guint32 seed;
  guint bad;
} ThreadJob;

static gpointer
plan_thread (gpointer data)
{
  ThreadJob *job = data;
  GRand *rng = g_rand_new_with_seed (job->seed);
  const gint64 B = 5 + (job->seed % 4);
  SedpNnPlan *plan = sedp_nn_plan_new (job->model, B, NULL);
  if (!plan) {
    job->bad++;
    g_rand_free (rng);
    return NULL;
  }
  const guint rounds = g_getenv ("SEDP_VALGRIND") ? 5 : 50;
  for (guint r = 0; r < rounds; r++) {
    g_autofree float *x = rand_floats (rng, B * job->mlp->K, -1, 1);
    g_autofree double *w = g_new (double, B * job->mlp->O);
    mlp_ref (job->mlp, B, x, w);
    SedpNnTensor in = TT (F, x, B, job->mlp->K), out[1];
    if (!sedp_nn_plan_run (plan, 1, &in, 1, out, NULL)) {
      job->bad++;
      continue;
    }
    for (gint64 i = 0; i < B * job->mlp->O; i++)
      if (fabs (((float *) out[0].data)[i] - w[i]) > 1e-5 * MAX (fabs (w[i]), 1e-3))
        job->bad++;
  }
  sedp_nn_plan_free (plan);
  g_rand_free (rng);
  return NULL;
}

/* One model, one plan per thread, run concurrently. */
static void
test_plans_threads (void)
{
  Mlp p;
  SedpNnModel *m = mlp_model (&p, 181);
  ThreadJob jobs[4];
  GThread *threads[4];
  for (guint i = 0; i < 4; i++) {
    jobs[i] = (ThreadJob){.model = m, .mlp = &p, .seed = 190 + i};
    threads[i] = g_thread_new ("plan", plan_thread, &jobs[i]);
  }
  for (guint i = 0; i < 4; i++) {
    g_thread_join (threads[i]);
    CU_ASSERT_EQUAL (jobs[i].bad, 0);
  }
  sedp_nn_model_unref (m);
  mlp_free (&p);
}

/* The caller's input buffers are borrowed read-only: in-place kernels must not write into them,
 * even through a Reshape/Flatten/Squeeze alias. */
static void
test_inputs_untouched (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2, 3);
  IN (m, "Z", F, -1, 6);
  INTS (m, "s", 0, -1);
  tb_node (m, "Reshape", "view", "X,s", "xv");
  tb_node (m, "Relu", "relu", "xv", "Y1");
  tb_node (m, "Flatten", "flat", "X", "xf");
  tb_node (m, "Sigmoid", "sig", "xf", "Y2");
  tb_node (m, "Add", "add", "Z,Z", "Y3");
  tb_node (m, "Clip", "clip", "Z", "Y4");
  OUT (m, "Y1", F);
  OUT (m, "Y2", F);
  OUT (m, "Y3", F);
  OUT (m, "Y4", F);
  float x[12], z[12], x0[12], z0[12];
  for (int i = 0; i < 12; i++) {
    x[i] = x0[i] = (float) (i - 6) * 0.75f;
    z[i] = z0[i] = (float) (5 - i) * 0.5f;
  }
  SedpNnTensor in[2] = {TT (F, x, 2, 2, 3), TT (F, z, 2, 6)};
  Out o[4];
  run_model (m, 2, 2, in, o);
  CU_ASSERT_EQUAL (memcmp (x, x0, sizeof x), 0);
  CU_ASSERT_EQUAL (memcmp (z, z0, sizeof z), 0);
  double y1[12], y2[12], y3[12], y4[12];
  for (int i = 0; i < 12; i++) {
    y1[i] = MAX (x0[i], 0);
    y2[i] = sigmoid_ref (x0[i]);
    y3[i] = 2.0 * z0[i];
    y4[i] = z0[i];
  }
  ASSERT_CLOSE (o[0], y1, RTOL_ELEM);
  ASSERT_CLOSE (o[1], y2, RTOL_ELEM);
  ASSERT_CLOSE (o[2], y3, RTOL_ELEM);
  ASSERT_CLOSE (o[3], y4, RTOL_ELEM);
  outs_free (o, 4);
  sedp_nn_model_unref (m);
}

/* A graph input that is also a graph output, and one value that is two outputs. */
static void
test_outputs_aliasing (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Relu", "relu", "X", "Y");
  OUT (m, "X", F);
  OUT (m, "Y", F);
  OUT (m, "Y", F);
  SedpNnTensor in = TT (F, F32 (-1, 2, 3, -4), 2, 2);
  Out o[3];
  run_model (m, 2, 1, &in, o);
  FLOATS_ARE (o[0], 0, -1, 2, 3, -4);
  FLOATS_ARE (o[1], 0, 0, 2, 3, 0);
  FLOATS_ARE (o[2], 0, 0, 2, 3, 0);
  outs_free (o, 3);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Load-time errors
 * ============================================================================================== */

static void
test_unsupported_ops (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 4);
  tb_node (m, "Relu", "r", "X", "a");
  tb_node (m, "FooOp", "foo1", "a", "b");
  tb_node (m, "BarOp", "bar", "b", "c");
  tb_node (m, "FooOp", "foo2", "c", "d");
  SedpNnNode *n = tb_node (m, "FusedMatMul", "ms", "d,d", "e");
  g_free (n->domain);
  n->domain = g_strdup ("com.microsoft");
  OUT (m, "e", F);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_nn_model_check (m, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_UNSUPPORTED, "FooOp", "BarOp", "FusedMatMul", "13");
  /* the same op is listed once */
  if (error) {
    const char *first = strstr (error->message, "FooOp");
    CU_ASSERT (first && strstr (first + 5, "FooOp") == NULL);
  }
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_nn_plan_new (m, 1, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_UNSUPPORTED, "FooOp", "BarOp", "FusedMatMul", "13");
  sedp_nn_model_unref (m);

  /* a supported model passes the check */
  Mlp p;
  m = mlp_model (&p, 201);
  g_clear_error (&error);
  CU_ASSERT_TRUE (sedp_nn_model_check (m, &error));
  CU_ASSERT_PTR_NULL (error);
  sedp_nn_model_unref (m);
  mlp_free (&p);
}

/* A node's outputs against its operator's: more than it has, an unnamed output it always
 * produces, none named; each refused with the node named (the fuzzer's Slice with a second
 * output wrote past the plan's values). The optional ones (GRU's Y, LayerNormalization's mean,
 * Dropout's mask) are exercised by their suites and ONNX's node tests. */
static void
test_output_errors (void)
{
  static const struct {
    const char *op, *inputs, *outputs, *needle;
  } cases[] = {
    {"Relu", "X", "Y,Z", "node 'n' (Relu): has 2 outputs; the operator has 1"},
    {"Slice", "X,s,e", ",Y", "node 'n' (Slice): has 2 outputs; the operator has 1"},
    {"Relu", "X", "", "node 'n' (Relu): output 0 has no name; the operator always produces it"},
    {"TopK", "X,k", "Y", "node 'n' (TopK): output 1 has no name; the operator always produces it"},
    {"TopK", "X,k", ",Y", "node 'n' (TopK): output 0 has no name; the operator always produces it"},
    {"Dropout", "X", ",Y", "node 'n' (Dropout): output 0 has no name; the operator always produces it"},
    {"Dropout", "X", "Y,Z,W", "node 'n' (Dropout): has 3 outputs; the operator has 2"},
    {"Split", "X", ",", "node 'n' (Split): has no output"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    SedpNnModel *m = tb_new (13);
    IN (m, "X", F, -1, 4);
    tb_init_i (m, "s", 1, I64 (1), (gint64[]){0});
    tb_init_i (m, "e", 1, I64 (1), (gint64[]){1});
    tb_init_i (m, "k", 1, I64 (1), (gint64[]){2});
    tb_node (m, cases[i].op, "n", cases[i].inputs, cases[i].outputs);
    tb_node (m, "Identity", "id", "X", "O"); /* the graph's output, whatever n names */
    OUT (m, "O", F);
    expect_plan_error (m, 2, SEDP_NN_ERROR_INVALID, cases[i].needle);
  }
}

static void
test_shape_errors (void)
{
  /* Gemm inner dimensions */
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 4);
  tb_init_f (m, "W", 2, I64 (5, 3), NULL);
  tb_node (m, "Gemm", "bad_gemm", "X,W", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_gemm");

  /* Gemm bias that does not broadcast */
  m = tb_new (13);
  IN (m, "X", F, -1, 4);
  tb_init_f (m, "W", 2, I64 (4, 3), NULL);
  tb_init_f (m, "C", 1, I64 (2), NULL);
  tb_node (m, "Gemm", "bad_bias", "X,W,C", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_bias");

  /* MatMul inner dimensions */
  m = tb_new (13);
  IN (m, "X", F, -1, 3, 4);
  tb_init_f (m, "W", 2, I64 (3, 4), NULL);
  tb_node (m, "MatMul", "bad_mm", "X,W", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_mm");

  /* Add that does not broadcast */
  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  tb_init_f (m, "b", 1, I64 (4), NULL);
  tb_node (m, "Add", "bad_add", "X,b", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_add");

  /* batch-dependent mismatch: fine at batch 1 ([1,3] + [2,1] broadcasts), not at batch 3 */
  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  tb_init_f (m, "b", 2, I64 (2, 1), NULL);
  tb_node (m, "Add", "add_batch", "X,b", "Y");
  OUT (m, "Y", F);
  SedpNnPlan *ok = sedp_nn_plan_new (m, 1, NULL);
  CU_ASSERT_PTR_NOT_NULL (ok);
  if (ok)
    sedp_nn_plan_free (ok);
  expect_plan_error (m, 3, SEDP_NN_ERROR_SHAPE, "add_batch");

  /* Concat of mismatched shapes */
  m = tb_new (13);
  IN (m, "A", F, -1, 3);
  IN (m, "B", F, -1, 4);
  SedpNnNode *n = tb_node (m, "Concat", "bad_concat", "A,B", "Y");
  tb_attr_i (n, "axis", 0);
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_concat");

  /* Reshape to a size that does not fit */
  m = tb_new (13);
  IN (m, "X", F, -1, 6);
  INTS (m, "s", 0, 4);
  tb_node (m, "Reshape", "bad_reshape", "X,s", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_SHAPE, "bad_reshape");
}

/* Nodes with too few inputs (valid protobuf, invalid operator use): an error, not a crash. */
static void
test_missing_inputs (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Transpose", "no_input", "", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "no_input");

  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Shape", "empty_input", ",", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "empty_input");

  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Gemm", "one_input", "X", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "takes 2 to 3 inputs");
}

/* `axes` in the form the model's opset does not have is refused (it would change the result),
 * and so is a Dropout in training mode. */
static void
test_wrong_axes_form (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 1);
  SedpNnNode *n = tb_node (m, "Squeeze", "attr_in_13", "X", "Y");
  const gint64 one[] = {1};
  tb_attr_ints (n, "axes", 1, one);
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_INVALID, "'axes' is an input");

  m = tb_new (12);
  IN (m, "X", F, -1, 1);
  INTS (m, "ax", 1);
  tb_node (m, "ReduceSum", "input_in_12", "X,ax", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_INVALID, "'axes' is an attribute");

  m = tb_new (17);
  IN (m, "X", F, -1, 3);
  INTS (m, "ax", 1);
  tb_node (m, "ReduceMean", "mean_input_17", "X,ax", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_INVALID, "before opset 18");

  m = tb_new (13);
  IN (m, "X", F, -1, 3);
  const guint8 yes = 1;
  tb_init (m, "train", SEDP_NN_BOOL, 0, NULL, &yes);
  tb_node (m, "Dropout", "training", "X,,train", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 2, SEDP_NN_ERROR_UNSUPPORTED, "training_mode");
}

/* Shapes that would need absurd amounts of memory are refused at plan time. */
static void
test_huge_shapes (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2);
  const gint64 shape[] = {1 << 20, 1 << 20, 2};
  tb_ints (m, "s", 3, shape);
  tb_node (m, "Expand", "huge", "X,s", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_SHAPE, "huge");

  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  const gint64 over[] = {G_GINT64_CONSTANT (1) << 40, G_GINT64_CONSTANT (1) << 40, -1};
  tb_ints (m, "s", 3, over);
  tb_node (m, "Reshape", "overflow", "X,s", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_SHAPE, "overflow");
}

static void
test_graph_errors (void)
{
  /* a cycle: a = X + c, b = Relu (a), c = Relu (b) */
  SedpNnModel *m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Add", "add", "X,c", "a");
  tb_node (m, "Relu", "r1", "a", "b");
  tb_node (m, "Relu", "r2", "b", "c");
  OUT (m, "b", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "cycle");

  /* a self-loop */
  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Add", "self", "X,a", "a");
  OUT (m, "a", F);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_nn_plan_new (m, 1, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INVALID, "cycle");
  sedp_nn_model_unref (m);

  /* a node reading a name nothing defines */
  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Add", "dangling", "X,nowhere", "Y");
  OUT (m, "Y", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "nowhere");

  /* a graph output nothing produces */
  m = tb_new (13);
  IN (m, "X", F, -1, 2);
  tb_node (m, "Relu", "r", "X", "Y");
  OUT (m, "Y", F);
  OUT (m, "missing_out", F);
  expect_plan_error (m, 1, SEDP_NN_ERROR_INVALID, "missing_out");

  /* a batch the model's fixed first dimension does not allow */
  m = tb_new (13);
  IN (m, "X", F, 4, 2);
  tb_node (m, "Relu", "r", "X", "Y");
  OUT (m, "Y", F);
  SedpNnPlan *plan = sedp_nn_plan_new (m, 4, NULL);
  CU_ASSERT_PTR_NOT_NULL (plan);
  if (plan)
    sedp_nn_plan_free (plan);
  g_clear_error (&error);
  plan = sedp_nn_plan_new (m, 3, &error);
  CU_ASSERT_PTR_NULL (plan);
  if (plan)
    sedp_nn_plan_free (plan);
  CU_ASSERT_PTR_NOT_NULL (error);
  sedp_nn_model_unref (m);
}

/* ================================================================================================
 * Run-time input errors
 * ============================================================================================== */

static void
test_input_errors (void)
{
  SedpNnModel *m = tb_new (13);
  IN (m, "user_features", F, -1, 4);
  IN (m, "item_ids", I, -1, 2);
  float table[20] = {0};
  INIT_F (m, "table", table, 10, 2);
  tb_node (m, "Gather", "lookup", "table,item_ids", "e");
  tb_node (m, "Flatten", "flat", "e", "ef");
  SedpNnNode *n = tb_node (m, "Concat", "cat", "user_features,ef", "Y");
  tb_attr_i (n, "axis", 1);
  OUT (m, "Y", F);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, 3, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  float x[12] = {0}, xbig[16] = {0};
  gint64 ids[6] = {0}, ids_bad[8] = {0};
  Out o[1];

  /* correct */
  SedpNnTensor good[2] = {TT (F, x, 3, 4), TT (I, ids, 3, 2)};
  CU_ASSERT_TRUE (run_plan (plan, 2, good, o, &error));
  if (!error)
    outs_free (o, 1);
  g_clear_error (&error);

  /* wrong dtype */
  SedpNnTensor wrong_type[2] = {TT (F, x, 3, 4), TT (F, x, 3, 2)};
  CU_ASSERT_FALSE (run_plan (plan, 2, wrong_type, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "item_ids");
  g_clear_error (&error);

  /* wrong width */
  SedpNnTensor wrong_width[2] = {TT (F, x, 3, 4), TT (I, ids_bad, 3, 3)};
  CU_ASSERT_FALSE (run_plan (plan, 2, wrong_width, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "item_ids");
  g_clear_error (&error);

  /* wrong batch */
  SedpNnTensor wrong_batch[2] = {TT (F, xbig, 4, 4), TT (I, ids, 3, 2)};
  CU_ASSERT_FALSE (run_plan (plan, 2, wrong_batch, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "user_features");
  g_clear_error (&error);

  /* wrong rank */
  SedpNnTensor wrong_rank[2] = {TT (F, x, 12), TT (I, ids, 3, 2)};
  CU_ASSERT_FALSE (run_plan (plan, 2, wrong_rank, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "user_features");
  g_clear_error (&error);

  /* wrong count */
  CU_ASSERT_FALSE (run_plan (plan, 1, good, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "2");
  g_clear_error (&error);

  /* a NULL data pointer */
  SedpNnTensor null_data[2] = {TT (F, NULL, 3, 4), TT (I, ids, 3, 2)};
  CU_ASSERT_FALSE (run_plan (plan, 2, null_data, o, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "user_features");
  g_clear_error (&error);

  /* still usable */
  CU_ASSERT_TRUE (run_plan (plan, 2, good, o, &error));
  if (!error)
    outs_free (o, 1);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

/* ================================================================================================ */

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
      {"gemm literal", test_gemm_literal},
      {"gemm alpha beta transA transB", test_gemm_literal_attrs},
      {"gemm random and bias broadcasting", test_gemm_random},
      {"matmul literal", test_matmul_literal},
      {"matmul 2-D", test_matmul_2d},
      {"matmul batched", test_matmul_batched},
      {"matmul broadcasting", test_matmul_broadcast},
      {"matmul with a transposed operand", test_matmul_transposed},
      {"matmul with a transposed weight", test_matmul_transposed_weight},
      {"gemm and matmul large", test_gemm_large},
      {"add sub mul div literal", test_binary_literal},
      {"add sub mul div broadcasting", test_binary_broadcast},
      {"relu", test_relu},
      {"leaky relu", test_leaky_relu},
      {"sigmoid", test_sigmoid},
      {"tanh", test_tanh},
      {"softmax literal", test_softmax_literal},
      {"softmax opset 13", test_softmax},
      {"softmax opset 11 (2-D coercion)", test_softmax_opset11},
      {"clip", test_clip},
      {"concat", test_concat},
      {"concat 3-D", test_concat_3d},
      {"concat int64", test_concat_int64},
      {"gather axis 0", test_gather_axis0},
      {"gather axis 1 and scalar index", test_gather_axis1},
      {"gather int64 shapes", test_gather_int64},
      {"gather pooled", test_gather_pooled},
      {"gather then other reductions", test_gather_reduce_other},
      {"gather out of range", test_gather_out_of_range},
      {"gather pooled out of range", test_gather_pooled_out_of_range},
      {"reshape", test_reshape},
      {"flatten", test_flatten},
      {"transpose", test_transpose},
      {"squeeze unsqueeze opset 11", test_squeeze_unsqueeze_opset11},
      {"squeeze unsqueeze opset 13", test_squeeze_unsqueeze_opset13},
      {"squeeze all", test_squeeze_all},
      {"identity", test_identity},
      {"reducesum opset 11", test_reduce_sum_opset11},
      {"reducesum opset 13", test_reduce_sum_opset13},
      {"reducemean opset 13", test_reduce_mean_opset13},
      {"reducemean opset 17", test_reduce_mean_opset17},
      {"reducemean opset 18", test_reduce_mean_opset18},
      {"reduce noop_with_empty_axes", test_reduce_noop_empty_axes},
      {"batchnorm literal", test_batchnorm_literal},
      {"batchnorm", test_batchnorm},
      {"cast float int64", test_cast_float_int64},
      {"cast int32 bool", test_cast_int32_bool},
      {"cast outputs", test_cast_outputs},
      {"constant", test_constant},
      {"shape", test_shape},
      {"slice", test_slice},
      {"slice int64", test_slice_int64},
      {"expand", test_expand},
      {"expand to a shape", test_expand_shape_of},
      {"pytorch flatten pattern", test_pytorch_flatten_pattern},
      {"fusion gemm relu", test_fusion_gemm_relu},
      {"fusion matmul add relu", test_fusion_matmul_add_relu},
      {"fusion matmul add sigmoid", test_fusion_matmul_add_sigmoid},
      {"fusion not applicable", test_fusion_not_applicable},
      {"arena reuse", test_arena_reuse},
      {"plans interleaved", test_plans_interleaved},
      {"plans in threads", test_plans_threads},
      {"inputs untouched", test_inputs_untouched},
      {"outputs aliasing", test_outputs_aliasing},
      {"unsupported ops", test_unsupported_ops},
      {"shape errors", test_shape_errors},
      {"a node's outputs against its operator's", test_output_errors},
      {"graph errors", test_graph_errors},
      {"nodes with missing inputs", test_missing_inputs},
      {"absurd shapes refused at plan time", test_huge_shapes},
      {"axes in the wrong form for the opset; Dropout in training", test_wrong_axes_form},
      {"input errors", test_input_errors},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  return sedp_test_run ();
}
