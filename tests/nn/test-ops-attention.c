/* Target attention (DIN's activation unit) fused in the plan (core/nn/exec/fuse-attention.c):
 * the fused kernel against the unit computed in double here, for several orders and sets of
 * parts, with and without bias and activation; patterns that must not be fused (a piece read
 * outside the pattern, a Concat on another axis) stay correct and unfused. */
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
  return sedp_test_run ();
}
