/* Attention fused in the plan (core/nn/exec/fuse-attention.c). Target attention (DIN's activation
 * unit):
 * the fused kernel against the unit computed in double here, for several orders and sets of
 * parts, with and without bias and activation; patterns that must not be fused (a piece read
 * outside the pattern, a Concat on another axis) stay correct and unfused. Multi-head
 * self-attention (BST): Div or Mul scale, Where masks either way, an additive mask, no mask,
 * against the attention computed in double; with the scores exposed, unfused and the same. */
#include "../common/test-common.h"
#include "nn-test.h"

#define F SEDP_NN_FLOAT

enum { B = 5, L = 7, D = 6, H = 9 };

typedef enum { P_Q, P_K, P_QMK, P_KMQ, P_QK } Part;

/* The unit: X = Concat (parts), Y = act (X · W1 + b1) · W2 → [B, L, 1]; @extra_read: E is also
 * an output (so it must not be fused away); @axis of the Concat. */
static SedpNnModel *
unit_model (const Part *parts, guint n, gboolean bias, const char *act, gboolean extra_read,
            const float *w1, const float *b1, const float *w2)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "q", F, B, 1, D);
  IN (m, "k", F, B, L, D);
  INTS (m, "shape", 1, L, D);
  tb_node (m, "Expand", "expand", "q,shape", "E");
  static const char *const names[] = {"E", "k", "QMK", "KMQ", "QK"};
  static const char *const ops[] = {NULL, NULL, "Sub", "Sub", "Mul"};
  static const char *const args[] = {NULL, NULL, "E,k", "k,E", "k,E"};
  guint made = 0;
  for (guint j = 0; j < n; j++)
    if (ops[parts[j]] && !(made & (1u << parts[j]))) {
      tb_node (m, ops[parts[j]], names[parts[j]], args[parts[j]], names[parts[j]]);
      made |= 1u << parts[j];
    }
  GString *cat = g_string_new (NULL);
  for (guint j = 0; j < n; j++)
    g_string_append_printf (cat, "%s%s", j ? "," : "", names[parts[j]]);
  SedpNnNode *c = tb_node (m, "Concat", "cat", cat->str, "X");
  tb_attr_i (c, "axis", -1);
  g_string_free (cat, TRUE);
  tb_init_f (m, "w1", 2, I64 (n * D, H), w1);
  tb_node (m, "MatMul", "l1", "X,w1", bias || act ? "X1" : "A1");
  const char *pre = "X1";
  if (bias) {
    tb_init_f (m, "b1", 1, I64 (H), b1);
    tb_node (m, "Add", "l1b", "X1,b1", act ? "X2" : "A1");
    pre = "X2";
  }
  if (act)
    tb_node (m, act, "act", pre, "A1");
  tb_init_f (m, "w2", 2, I64 (H, 1), w2);
  tb_node (m, "MatMul", "l2", "A1,w2", "Y");
  OUT (m, "Y", F);
  if (extra_read)
    OUT (m, "E", F);
  return m;
}

static double
part_value (Part p, double q, double k)
{
  switch (p) {
  case P_Q: return q;
  case P_K: return k;
  case P_QMK: return q - k;
  case P_KMQ: return k - q;
  default: return q * k;
  }
}

/* The unit in double. */
static void
reference (const Part *parts, guint n, gboolean bias, const char *act, const float *q,
           const float *k, const float *w1, const float *b1, const float *w2, double *y,
           double *scale)
{
  for (int b = 0; b < B; b++)
    for (int l = 0; l < L; l++) {
      double out = 0, mag = 0;
      for (int h = 0; h < H; h++) {
        double s = bias ? b1[h] : 0;
        for (guint j = 0; j < n; j++)
          for (int d = 0; d < D; d++)
            s += part_value (parts[j], q[b * D + d], k[(b * L + l) * D + d]) *
                 w1[(j * D + d) * H + h];
        if (act && strcmp (act, "Sigmoid") == 0)
          s = 1 / (1 + exp (-s));
        else if (act && strcmp (act, "Relu") == 0)
          s = s > 0 ? s : 0;
        out += s * w2[h];
        mag += fabs (s * w2[h]);
      }
      y[b * L + l] = out;
      scale[b * L + l] = mag; /* the output cancels: its rounding follows the terms */
    }
}

/* Runs one case; @fused: whether the plan must show the fused kernel. */
static void
unit_case (const Part *parts, guint n, gboolean bias, const char *act, gboolean extra_read,
           gboolean fused, guint32 seed)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
  g_autofree float *q = rand_floats (rng, B * D, -1, 1), *k = rand_floats (rng, B * L * D, -1, 1);
  g_autofree float *w1 = rand_floats (rng, n * D * H, -0.5, 0.5), *b1 = rand_floats (rng, H, -0.5, 0.5);
  g_autofree float *w2 = rand_floats (rng, H, -1, 1);
  SedpNnModel *m = unit_model (parts, n, bias, act, extra_read, w1, b1, w2);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, B, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autoptr (GString) desc = g_string_new (NULL);
  sedp_nn_plan_describe (plan, desc);
  gboolean has = strstr (desc->str, "target_attention") != NULL;
  if (has != fused)
    fprintf (stderr, "\n  fused %d, want %d:\n%s", has, fused, desc->str);
  CU_ASSERT_EQUAL (has, fused);
  SedpNnTensor in[2] = {TT (F, q, B, 1, D), TT (F, k, B, L, D)};
  Out o[2];
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 2, in, o, &error));
  double want[B * L], scale[B * L];
  reference (parts, n, bias, act, q, k, w1, b1, w2, want, scale);
  SHAPE_IS (o[0], B, L, 1);
  ASSERT_CLOSE_SCALED (o[0], want, scale, RTOL_REDUCE);
  /* A second run on the same plan (the scratch is reused) gives the same. */
  Out again[2];
  CU_ASSERT_TRUE_FATAL (run_plan (plan, 2, in, again, &error));
  CU_ASSERT (memcmp (o[0].data, again[0].data, sizeof (float) * B * L) == 0);
  outs_free (o, extra_read ? 2 : 1);
  outs_free (again, extra_read ? 2 : 1);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

static void
test_din_unit (void)
{
  const Part din[] = {P_Q, P_K, P_QMK, P_QK};
  unit_case (din, 4, TRUE, "Sigmoid", FALSE, TRUE, 1);
  unit_case (din, 4, FALSE, NULL, FALSE, TRUE, 2);
  unit_case (din, 4, TRUE, "Relu", FALSE, TRUE, 3);
}

static void
test_other_parts (void)
{
  const Part reordered[] = {P_K, P_Q, P_KMQ, P_QK};
  unit_case (reordered, 4, TRUE, "Sigmoid", FALSE, TRUE, 4);
  const Part three[] = {P_Q, P_K, P_QK};
  unit_case (three, 3, TRUE, "Sigmoid", FALSE, TRUE, 5);
  const Part two[] = {P_QMK, P_QK};
  unit_case (two, 2, TRUE, NULL, FALSE, TRUE, 6);
}

/* The Expand's output is also a graph output: nothing is fused, the result is the same. */
static void
test_not_fused (void)
{
  const Part din[] = {P_Q, P_K, P_QMK, P_QK};
  unit_case (din, 4, TRUE, "Sigmoid", TRUE, FALSE, 7);
  /* Without an Expand among the parts (only K-derived parts): nothing to fold. */
  const Part konly[] = {P_K, P_K};
  unit_case (konly, 2, TRUE, "Sigmoid", FALSE, FALSE, 8);
}


/* ==== multi-head self-attention ==== */

/* batch, sequence (the kernel takes queries 16 at a time: one whole block and a part), heads,
 * head dim: model dim SH·SD */
enum { SB = 3, SL = 21, SH = 2, SD = 4 };

typedef enum { SCALE_DIV, SCALE_MUL } ScaleKind;
/* M_CAUSAL: a [1, 1, L, L] mask, true above the diagonal (where the fill goes): it differs per
 * query. */
typedef enum { M_NONE, M_WHERE_FILL_TRUE, M_WHERE_FILL_FALSE, M_ADD, M_CAUSAL } MaskKind;

/* x [B, L, H·D] → q, k, v as Reshape [B, L, H, D] + Transpose (0, 2, 1, 3) of x itself (the
 * projections do not matter to the fusion); S = Q·Kᵀ scaled, masked, softmaxed; O = P·V,
 * transposed back and reshaped to [B, L, H·D]. @expose: S is also a graph output (no fusion). */
static SedpNnModel *
mha_model (ScaleKind scale, MaskKind mask, gboolean expose)
{
  SedpNnModel *m = tb_new (17);
  IN (m, "x", F, SB, SL, SH * SD);
  IN (m, "y", F, SB, SL, SH * SD);
  INTS (m, "heads", SB, SL, SH, SD);
  INTS (m, "flat", SB, SL, SH * SD);
  const char *srcs[3] = {"x", "y", "x"}, *names[3] = {"Q", "K", "V"};
  for (int t = 0; t < 3; t++) {
    g_autofree char *r = g_strdup_printf ("%s4", names[t]);
    g_autofree char *rin = g_strdup_printf ("%s,heads", srcs[t]);
    tb_node (m, "Reshape", r, rin, r);
    tb_attr_ints (tb_node (m, "Transpose", names[t], r, names[t]), "perm", 4, I64 (0, 2, 1, 3));
  }
  tb_attr_ints (tb_node (m, "Transpose", "KT", "K", "KT"), "perm", 4, I64 (0, 1, 3, 2));
  tb_node (m, "MatMul", "S", "Q,KT", "S");
  tb_scalar_f (m, "c", 2.0f);
  tb_node (m, scale == SCALE_DIV ? "Div" : "Mul", "S2", "S,c", "S2");
  const char *pre = "S2";
  if (mask == M_ADD) {
    static float add[SB * SL];
    for (int i = 0; i < SB * SL; i++)
      add[i] = i % 4 == 3 ? -1e9f : 0.25f * (float) (i % 3);
    tb_init_f (m, "madd", 4, I64 (SB, 1, 1, SL), add);
    tb_node (m, "Add", "S3", "S2,madd", "S3");
    pre = "S3";
  } else if (mask != M_NONE) {
    if (mask == M_CAUSAL)
      IN (m, "mask", SEDP_NN_BOOL, 1, 1, SL, SL);
    else
      IN (m, "mask", SEDP_NN_BOOL, SB, 1, 1, SL);
    tb_scalar_f (m, "fill", -1e9f);
    tb_node (m, "Where", "S3", mask == M_WHERE_FILL_FALSE ? "mask,S2,fill" : "mask,fill,S2", "S3");
    pre = "S3";
  }
  tb_attr_i (tb_node (m, "Softmax", "P", pre, "P"), "axis", -1);
  tb_node (m, "MatMul", "O", "P,V", "O");
  tb_attr_ints (tb_node (m, "Transpose", "OT", "O", "OT"), "perm", 4, I64 (0, 2, 1, 3));
  tb_node (m, "Reshape", "Y", "OT,flat", "Y");
  OUT (m, "Y", F);
  if (expose)
    OUT (m, "S", F);
  return m;
}

/* The same in double. */
static void
mha_reference (ScaleKind scale, MaskKind mask, const float *x, const float *y, const guint8 *mk,
               double *out, double *mag)
{
  for (int b = 0; b < SB; b++)
    for (int h = 0; h < SH; h++)
      for (int i = 0; i < SL; i++) {
        double s[SL], mx = -INFINITY, sum = 0;
        for (int j = 0; j < SL; j++) {
          double dot = 0;
          for (int d = 0; d < SD; d++)
            dot += (double) x[(b * SL + i) * SH * SD + h * SD + d] * y[(b * SL + j) * SH * SD + h * SD + d];
          s[j] = scale == SCALE_DIV ? dot / 2.0 : dot * 2.0;
          if (mask == M_ADD)
            s[j] += (b * SL + j) % 4 == 3 ? -1e9 : 0.25 * ((b * SL + j) % 3);
          else if (mask == M_CAUSAL && j > i)
            s[j] = -1e9;
          else if (mask != M_NONE && mask != M_CAUSAL &&
                   (mk[b * SL + j] != 0) == (mask == M_WHERE_FILL_TRUE))
            s[j] = -1e9;
          mx = MAX (mx, s[j]);
        }
        for (int j = 0; j < SL; j++)
          sum += s[j] = exp (s[j] - mx);
        for (int d = 0; d < SD; d++) {
          double o = 0, a = 0;
          for (int j = 0; j < SL; j++) {
            o += s[j] / sum * x[(b * SL + j) * SH * SD + h * SD + d];
            a += s[j] / sum * fabs (x[(b * SL + j) * SH * SD + h * SD + d]);
          }
          out[(b * SL + i) * SH * SD + h * SD + d] = o;
          mag[(b * SL + i) * SH * SD + h * SD + d] = a; /* o cancels: its rounding follows a */
        }
      }
}

static void
mha_case (ScaleKind scale, MaskKind mask, gboolean expose, guint32 seed)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (seed);
  g_autofree float *x = rand_floats (rng, SB * SL * SH * SD, -1, 1);
  g_autofree float *y = rand_floats (rng, SB * SL * SH * SD, -1, 1);
  guint8 mk[SB * SL], causal[SL * SL];
  for (int i = 0; i < SB * SL; i++)
    mk[i] = i % SL == 0 || i % 5 == 2; /* every row keeps some keys */
  for (int i = 0; i < SL * SL; i++)
    causal[i] = i % SL > i / SL;
  SedpNnModel *m = mha_model (scale, mask, expose);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, SB, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autoptr (GString) desc = g_string_new (NULL);
  sedp_nn_plan_describe (plan, desc);
  gboolean fused = strstr (desc->str, "self_attention") != NULL;
  if (fused == expose)
    fprintf (stderr, "\n  fused %d with expose %d:\n%s", fused, expose, desc->str);
  CU_ASSERT_NOT_EQUAL (fused, expose);
  SedpNnTensor in[3] = {TT (F, x, SB, SL, SH * SD), TT (F, y, SB, SL, SH * SD),
                        mask == M_CAUSAL ? TT (SEDP_NN_BOOL, causal, 1, 1, SL, SL)
                                         : TT (SEDP_NN_BOOL, mk, SB, 1, 1, SL)};
  guint n_in = mask == M_NONE || mask == M_ADD ? 2 : 3;
  Out o[2];
  CU_ASSERT_TRUE_FATAL (run_plan (plan, n_in, in, o, &error));
  double want[SB * SL * SH * SD], mag[SB * SL * SH * SD];
  mha_reference (scale, mask, x, y, mk, want, mag);
  SHAPE_IS (o[0], SB, SL, SH * SD);
  ASSERT_CLOSE_SCALED (o[0], want, mag, RTOL_REDUCE);
  outs_free (o, expose ? 2 : 1);
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
}

static void
test_self_attention (void)
{
  mha_case (SCALE_DIV, M_WHERE_FILL_TRUE, FALSE, 11);
  mha_case (SCALE_MUL, M_WHERE_FILL_FALSE, FALSE, 12);
  mha_case (SCALE_DIV, M_ADD, FALSE, 13);
  mha_case (SCALE_MUL, M_NONE, FALSE, 14);
  mha_case (SCALE_DIV, M_CAUSAL, FALSE, 16);
}

/* The scores are a graph output: nothing is fused, the result is the same. */
static void
test_self_attention_not_fused (void)
{
  mha_case (SCALE_DIV, M_WHERE_FILL_TRUE, TRUE, 15);
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops-attention", NULL, NULL);
  CU_add_test (s, "din activation unit", test_din_unit);
  CU_add_test (s, "other parts and orders", test_other_parts);
  CU_add_test (s, "patterns not fused", test_not_fused);
  CU_add_test (s, "self-attention", test_self_attention);
  CU_add_test (s, "self-attention not fused", test_self_attention_not_fused);
  return sedp_test_run ();
}
