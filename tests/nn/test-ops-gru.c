/* sedp nn tests — the GRU operator, against a plain double-precision GRU written from the ONNX
 * equations (gate order z, r, h):
 *   z = f(X·Wzᵀ + H·Rzᵀ + Wbz + Rbz)        r = f(X·Wrᵀ + H·Rrᵀ + Wbr + Rbr)
 *   h̃ = g(X·Whᵀ + (r ⊙ H)·Rhᵀ + Rbh + Wbh)          (linear_before_reset 0)
 *   h̃ = g(X·Whᵀ + r ⊙ (H·Rhᵀ + Rbh) + Wbh)          (linear_before_reset 1)
 *   H' = (1 − z) ⊙ h̃ + z ⊙ H
 * With sequence_lens (ONNX Runtime's behaviour): a row runs its first len steps (the reverse
 * direction from step len − 1 down to 0), Y is zero past them, Y_h holds the last step's state,
 * and zeros for a row of length 0. */
#include "nn-test.h"

typedef enum { A_SIGMOID, A_TANH, A_RELU } RefAct;

/* One case: sizes, attributes, which optional inputs and outputs the node has. */
typedef struct {
  const char *what;
  gint64 S, B, I, H;
  const char *direction;  /* NULL: the attribute left out (forward) */
  int lbr;
  int layout;
  gboolean bias, h0, want_y;
  int lens_type;           /* 0: no sequence_lens, 32 or 64: its type */
  const gint64 *lens;      /* [B] */
  float clip;              /* 0: none */
  const char *acts;        /* "Sigmoid,Relu": the activations attribute (NULL: default) */
} GruCase;

/* The data of a case, random. */
typedef struct {
  int D;
  float *x, *w, *r, *b, *h0;
  gint64 *lens;
  RefAct f[2], g[2];
} GruData;

static double
ref_act (RefAct a, double v)
{
  return a == A_SIGMOID ? 1.0 / (1.0 + exp (-v)) : a == A_TANH ? tanh (v) : v > 0 ? v : 0;
}

static double
ref_clip (const GruCase *c, double v)
{
  return c->clip > 0 ? CLAMP (v, -c->clip, c->clip) : v;
}

/* Σ_k a[k]·b[k] in double. */
static double
dot (const float *a, const float *b, gint64 n)
{
  double s = 0;
  for (gint64 k = 0; k < n; k++)
    s += (double) a[k] * b[k];
  return s;
}

/* One step of the reference for one row: @x [I], @h [H] updated in place. */
static void
ref_step (const GruCase *c, const GruData *g, int d, const float *x, double *h)
{
  gint64 H = c->H, I = c->I;
  const float *w = g->w + d * 3 * H * I, *r = g->r + d * 3 * H * H;
  const float *wb = c->bias ? g->b + d * 6 * H : NULL, *rb = wb ? wb + 3 * H : NULL;
  g_autofree float *hf = g_new (float, H);
  g_autofree float *rh = g_new (float, H);
  g_autofree double *z = g_new (double, H), *rr = g_new (double, H), *n = g_new (double, H);
  for (gint64 j = 0; j < H; j++)
    hf[j] = (float) h[j]; /* the state as float32 (the engine's state), products in double */
  for (gint64 j = 0; j < H; j++) {
    double bz = wb ? (double) wb[j] + rb[j] : 0, br = wb ? (double) wb[H + j] + rb[H + j] : 0;
    z[j] = ref_act (g->f[d], ref_clip (c, dot (x, w + j * I, I) + dot (hf, r + j * H, H) + bz));
    rr[j] = ref_act (g->f[d], ref_clip (c, dot (x, w + (H + j) * I, I) + dot (hf, r + (H + j) * H, H) + br));
    rh[j] = (float) (rr[j] * h[j]);
  }
  for (gint64 j = 0; j < H; j++) {
    const float *rhj = r + (2 * H + j) * H;
    double wbh = wb ? wb[2 * H + j] : 0, rbh = rb ? rb[2 * H + j] : 0;
    double pre = c->lbr ? dot (x, w + (2 * H + j) * I, I) + rr[j] * (dot (hf, rhj, H) + rbh) + wbh
                        : dot (x, w + (2 * H + j) * I, I) + dot (rh, rhj, H) + rbh + wbh;
    n[j] = ref_act (g->g[d], ref_clip (c, pre));
  }
  for (gint64 j = 0; j < H; j++)
    h[j] = (1 - z[j]) * n[j] + z[j] * h[j];
}

/* The reference: Y [S, D, B, H] (or [B, S, D, H] with layout 1) and Y_h [D, B, H] ([B, D, H]). */
static void
ref_gru (const GruCase *c, const GruData *g, double *y, double *yh)
{
  gint64 S = c->S, B = c->B, H = c->H, D = g->D;
  g_autofree double *h = g_new (double, H);
  memset (y, 0, sizeof (double) * S * D * B * H);
  for (int d = 0; d < D; d++)
    for (gint64 b = 0; b < B; b++) {
      gint64 len = g->lens ? g->lens[b] : S, hoff = c->layout ? (b * D + d) * H : (d * B + b) * H;
      gboolean rev = d == 1 || (c->direction && strcmp (c->direction, "reverse") == 0);
      for (gint64 j = 0; j < H; j++)
        h[j] = g->h0 ? g->h0[hoff + j] : 0;
      for (gint64 i = 0; i < len; i++) {
        gint64 t = rev ? len - 1 - i : i;
        const float *x = g->x + (c->layout ? b * S + t : t * B + b) * c->I;
        ref_step (c, g, d, x, h);
        gint64 yoff = c->layout ? ((b * S + t) * D + d) * H : ((t * D + d) * B + b) * H;
        memcpy (y + yoff, h, sizeof (double) * H);
      }
      for (gint64 j = 0; j < H; j++)
        yh[hoff + j] = len > 0 ? h[j] : 0;
    }
}

/* Sets a list-of-strings attribute (the builder has no setter for one): a string attribute
 * turned into a list. */
static void
tb_attr_strings (SedpNnNode *n, const char *name, const char *comma_list)
{
  sedp_nn_node_set_attr_string (n, name, comma_list);
  SedpNnAttr *a = (SedpNnAttr *) sedp_nn_node_attr (n, name);
  a->type = SEDP_NN_ATTR_STRINGS;
  a->strings = g_strsplit (comma_list, ",", -1);
  a->n_strings = g_strv_length (a->strings);
}

static RefAct
ref_act_named (const char *s)
{
  return strcmp (s, "Sigmoid") == 0 ? A_SIGMOID : strcmp (s, "Tanh") == 0 ? A_TANH : A_RELU;
}

static void
gru_data (const GruCase *c, GruData *g, GRand *rng)
{
  gint64 S = c->S, B = c->B, I = c->I, H = c->H;
  g->D = c->direction && strcmp (c->direction, "bidirectional") == 0 ? 2 : 1;
  g->x = rand_floats (rng, S * B * I, -1, 1);
  g->w = rand_floats (rng, g->D * 3 * H * I, -0.6, 0.6);
  g->r = rand_floats (rng, g->D * 3 * H * H, -0.6, 0.6);
  g->b = c->bias ? rand_floats (rng, g->D * 6 * H, -0.5, 0.5) : NULL;
  g->h0 = c->h0 ? rand_floats (rng, g->D * B * H, -1, 1) : NULL;
  g->lens = c->lens_type ? g_memdup2 (c->lens, sizeof (gint64) * B) : NULL;
  g_auto (GStrv) acts = c->acts ? g_strsplit (c->acts, ",", -1) : NULL;
  for (int d = 0; d < g->D; d++) {
    g->f[d] = acts ? ref_act_named (acts[2 * d]) : A_SIGMOID;
    g->g[d] = acts ? ref_act_named (acts[2 * d + 1]) : A_TANH;
  }
}

static void
gru_data_free (GruData *g)
{
  g_free (g->x);
  g_free (g->w);
  g_free (g->r);
  g_free (g->b);
  g_free (g->h0);
  g_free (g->lens);
}

/* The model of a case: X (and sequence_lens, initial_h when asked) as graph inputs, W, R, B as
 * initializers. */
static SedpNnModel *
gru_model (const GruCase *c, const GruData *g, gint64 opset)
{
  gint64 S = c->S, B = c->B, I = c->I, H = c->H, D = g->D;
  SedpNnModel *m = tb_new (opset);
  if (c->layout)
    IN (m, "x", SEDP_NN_FLOAT, B, S, I);
  else
    IN (m, "x", SEDP_NN_FLOAT, S, B, I);
  if (c->lens_type)
    IN (m, "lens", c->lens_type == 32 ? SEDP_NN_INT32 : SEDP_NN_INT64, B);
  if (c->h0 && c->layout)
    IN (m, "h0", SEDP_NN_FLOAT, B, D, H);
  else if (c->h0)
    IN (m, "h0", SEDP_NN_FLOAT, D, B, H);
  INIT_F (m, "w", g->w, D, 3 * H, I);
  INIT_F (m, "r", g->r, D, 3 * H, H);
  if (c->bias)
    INIT_F (m, "b", g->b, D, 6 * H);
  g_autofree char *ins = g_strdup_printf ("x,w,r,%s,%s,%s", c->bias ? "b" : "",
                                          c->lens_type ? "lens" : "", c->h0 ? "h0" : "");
  while (g_str_has_suffix (ins, ","))
    ins[strlen (ins) - 1] = '\0';
  SedpNnNode *n = tb_node (m, "GRU", "gru", ins, c->want_y ? "y,yh" : ",yh");
  tb_attr_i (n, "hidden_size", H);
  if (c->direction)
    sedp_nn_node_set_attr_string (n, "direction", c->direction);
  if (c->lbr)
    tb_attr_i (n, "linear_before_reset", 1);
  if (c->layout)
    tb_attr_i (n, "layout", 1);
  if (c->clip > 0)
    tb_attr_f (n, "clip", c->clip);
  if (c->acts)
    tb_attr_strings (n, "activations", c->acts);
  if (c->want_y)
    OUT (m, "y", SEDP_NN_FLOAT);
  OUT (m, "yh", SEDP_NN_FLOAT);
  return m;
}

/* Abs error allowed (the values are O(1)): float32 against double over a few steps. */
#define GRU_TOL 2e-5

/* Runs a case through the engine and compares Y, Y_h with the reference. */
static void
check_gru (const GruCase *c)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) (c->S * 131 + c->B * 17 + c->H));
  GruData g = {0};
  gru_data (c, &g, rng);
  gint64 S = c->S, B = c->B, H = c->H, D = g.D;
  SedpNnModel *m = gru_model (c, &g, 14);
  g_autofree gint32 *lens32 = g_new (gint32, B);
  for (gint64 b = 0; g.lens && b < B; b++)
    lens32[b] = (gint32) g.lens[b];
  SedpNnTensor in[3];
  guint n_in = 0;
  in[n_in++] = c->layout ? TT (SEDP_NN_FLOAT, g.x, B, S, c->I) : TT (SEDP_NN_FLOAT, g.x, S, B, c->I);
  if (c->lens_type)
    in[n_in++] = c->lens_type == 32 ? TT (SEDP_NN_INT32, lens32, B) : TT (SEDP_NN_INT64, g.lens, B);
  if (c->h0)
    in[n_in++] = c->layout ? TT (SEDP_NN_FLOAT, g.h0, B, D, H) : TT (SEDP_NN_FLOAT, g.h0, D, B, H);
  Out out[2] = {0};
  run_model (m, c->layout ? B : S, n_in, in, out);
  g_autofree double *y = g_new (double, S * D * B * H), *yh = g_new (double, D * B * H);
  g_autofree double *ones = g_new (double, S * D * B * H);
  for (gint64 i = 0; i < S * D * B * H; i++)
    ones[i] = 1.0;
  ref_gru (c, &g, y, yh);
  Out *oy = c->want_y ? &out[0] : NULL, *oh = &out[c->want_y ? 1 : 0];
  if (oy) {
    if (c->layout) {
      SHAPE_IS (*oy, B, S, D, H);
    } else {
      SHAPE_IS (*oy, S, D, B, H);
    }
    guint bad = close_scaled ("Y", oy->data, y, ones, oy->numel, GRU_TOL, 1e-6);
    if (bad)
      fprintf (stderr, "\n  case '%s': %u elements of Y differ\n", c->what, bad);
    CU_ASSERT_EQUAL (bad, 0);
  }
  if (c->layout) {
    SHAPE_IS (*oh, B, D, H);
  } else {
    SHAPE_IS (*oh, D, B, H);
  }
  guint bad = close_scaled ("Y_h", oh->data, yh, ones, oh->numel, GRU_TOL, 1e-6);
  if (bad)
    fprintf (stderr, "\n  case '%s': %u elements of Y_h differ\n", c->what, bad);
  CU_ASSERT_EQUAL (bad, 0);
  outs_free (out, c->want_y ? 2 : 1);
  sedp_nn_model_unref (m);
  gru_data_free (&g);
}

static void
test_gru_forward (void)
{
  check_gru (&(GruCase){"forward", 5, 7, 4, 3, NULL, 0, 0, FALSE, FALSE, TRUE});
  check_gru (&(GruCase){"forward b h0", 5, 7, 4, 3, "forward", 0, 0, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"forward lbr b h0", 5, 7, 4, 3, "forward", 1, 0, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"forward lbr, Y_h only", 5, 1, 4, 3, NULL, 1, 0, TRUE, FALSE, FALSE});
}

static void
test_gru_reverse (void)
{
  check_gru (&(GruCase){"reverse", 6, 7, 3, 5, "reverse", 0, 0, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"reverse lbr", 6, 1, 3, 5, "reverse", 1, 0, FALSE, TRUE, TRUE});
}

static void
test_gru_bidirectional (void)
{
  check_gru (&(GruCase){"bidirectional", 4, 7, 5, 4, "bidirectional", 0, 0, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"bidirectional lbr", 4, 7, 5, 4, "bidirectional", 1, 0, FALSE, FALSE, TRUE});
}

static void
test_gru_seq_one (void)
{
  check_gru (&(GruCase){"seq 1", 1, 7, 4, 3, "bidirectional", 1, 0, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"seq 1 batch 1", 1, 1, 4, 3, NULL, 0, 0, TRUE, FALSE, TRUE});
}

static void
test_gru_layout (void)
{
  check_gru (&(GruCase){"layout 1", 5, 7, 4, 3, NULL, 1, 1, TRUE, TRUE, TRUE});
  check_gru (&(GruCase){"layout 1 bidirectional", 5, 7, 4, 3, "bidirectional", 0, 1, TRUE, TRUE, TRUE});
}

static void
test_gru_sequence_lens (void)
{
  const gint64 lens[7] = {0, 1, 5, 3, 5, 1, 4};
  for (int lbr = 0; lbr < 2; lbr++) {
    check_gru (&(GruCase){"lens int32", 5, 7, 4, 3, NULL, lbr, 0, TRUE, TRUE, TRUE, 32, lens});
    check_gru (&(GruCase){"lens int64 reverse", 5, 7, 4, 3, "reverse", lbr, 0, TRUE, FALSE, TRUE, 64, lens});
    check_gru (&(GruCase){"lens bidirectional", 5, 7, 4, 3, "bidirectional", lbr, 0, FALSE, TRUE, TRUE, 32, lens});
    check_gru (&(GruCase){"lens layout 1", 5, 7, 4, 3, "bidirectional", lbr, 1, TRUE, TRUE, TRUE, 64, lens});
  }
  check_gru (&(GruCase){"lens 0, batch 1", 5, 1, 4, 3, NULL, 0, 0, TRUE, TRUE, TRUE, 64, I64 (0)});
}

/* Sizes where the packed GEMM kernels take over (16 columns and more). */
static void
test_gru_packed (void)
{
  const gint64 lens[9] = {20, 3, 0, 19, 20, 1, 7, 20, 11};
  check_gru (&(GruCase){"packed lbr", 20, 9, 16, 32, "bidirectional", 1, 0, TRUE, TRUE, TRUE, 32, lens});
  check_gru (&(GruCase){"packed", 20, 9, 24, 16, "forward", 0, 0, TRUE, TRUE, TRUE, 64, lens});
}

static void
test_gru_activations_clip (void)
{
  check_gru (&(GruCase){"clip", 5, 7, 4, 3, NULL, 0, 0, TRUE, TRUE, TRUE, 0, NULL, 0.4f});
  check_gru (&(GruCase){"relu", 5, 7, 4, 3, "bidirectional", 1, 0, TRUE, TRUE, TRUE, 0, NULL, 0,
                        "Sigmoid,Relu,Tanh,Tanh"});
  check_gru (&(GruCase){"relu clip", 5, 7, 4, 3, NULL, 0, 0, TRUE, TRUE, TRUE, 0, NULL, 0.9f,
                        "Sigmoid,Relu"});
}

/* Plan compilation fails with @code naming @needle. */
static void
expect_gru_error (SedpNnModel *m, gint64 batch, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  CU_ASSERT_PTR_NULL (plan);
  if (plan)
    sedp_nn_plan_free (plan);
  ASSERT_NN_ERROR (error, code, needle);
  sedp_nn_model_unref (m);
}

/* A forward GRU (S 5, B 2, I 4, H 3) with W, R initializers; @w_input: W a graph input. */
static SedpNnModel *
gru_error_model (gboolean w_input, gint64 w_rows, SedpNnNode **node)
{
  g_autofree float *w = g_new0 (float, 3 * w_rows * 4);
  g_autofree float *r = g_new0 (float, 9 * 3);
  SedpNnModel *m = tb_new (14);
  IN (m, "x", SEDP_NN_FLOAT, 5, 2, 4);
  if (w_input)
    IN (m, "w", SEDP_NN_FLOAT, 1, w_rows, 4);
  else
    INIT_F (m, "w", w, 1, w_rows, 4);
  INIT_F (m, "r", r, 1, 9, 3);
  *node = tb_node (m, "GRU", "gru", "x,w,r", "y,yh");
  tb_attr_i (*node, "hidden_size", 3);
  OUT (m, "y", SEDP_NN_FLOAT);
  OUT (m, "yh", SEDP_NN_FLOAT);
  return m;
}

static void
test_gru_errors (void)
{
  SedpNnNode *n;
  /* W as a graph input is not an error: the plan is specialised on its value at run time. */
  SedpNnModel *m = gru_error_model (TRUE, 9, &n);
  SedpNnPlan *plan = sedp_nn_plan_new (m, 5, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  CU_ASSERT_TRUE (sedp_nn_plan_input_is_parameter (plan, 1));
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
  m = gru_error_model (FALSE, 12, &n);
  expect_gru_error (m, 5, SEDP_NN_ERROR_SHAPE, "W is [1, 12, 4], expected [1, 9, 4]");
  m = gru_error_model (FALSE, 9, &n);
  tb_attr_strings (n, "activations", "Sigmoid,Softsign");
  expect_gru_error (m, 5, SEDP_NN_ERROR_UNSUPPORTED, "activation 'Softsign'");
  m = gru_error_model (FALSE, 9, &n);
  tb_attr_strings (n, "activations", "Sigmoid,Tanh,Tanh,Tanh");
  expect_gru_error (m, 5, SEDP_NN_ERROR_INVALID, "4 activations, expected 2");
  m = gru_error_model (FALSE, 9, &n);
  sedp_nn_node_set_attr_string (n, "direction", "sideways");
  expect_gru_error (m, 5, SEDP_NN_ERROR_INVALID, "direction 'sideways'");
  m = gru_error_model (FALSE, 9, &n);
  sedp_nn_node_set_attr_string (n, "direction", "bidirectional");
  expect_gru_error (m, 5, SEDP_NN_ERROR_SHAPE, "W is [1, 9, 4], expected [2, 9, 4]");
}

/* sequence_lens out of [0, seq] is refused at run time. */
static void
test_gru_bad_lens (void)
{
  GruCase c = {"bad lens", 5, 2, 4, 3, NULL, 0, 0, FALSE, FALSE, TRUE, 64, I64 (2, 6)};
  g_autoptr (GRand) rng = g_rand_new_with_seed (3);
  GruData g = {0};
  gru_data (&c, &g, rng);
  SedpNnModel *m = gru_model (&c, &g, 14);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = nn_test_plan_new (m, 5, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  SedpNnTensor in[2] = {TT (SEDP_NN_FLOAT, g.x, 5, 2, 4), TT (SEDP_NN_INT64, g.lens, 2)};
  SedpNnTensor out[2];
  CU_ASSERT_FALSE (sedp_nn_plan_run (plan, 2, in, 2, out, &error));
  ASSERT_NN_ERROR (error, SEDP_NN_ERROR_INPUT, "sequence_lens[1] is 6, outside [0, 5]");
  g_clear_error (&error);
  /* The same plan still runs good lengths. */
  const gint64 good[2] = {2, 5};
  in[1] = TT (SEDP_NN_INT64, good, 2);
  CU_ASSERT_TRUE (sedp_nn_plan_run (plan, 2, in, 2, out, &error));
  sedp_nn_plan_free (plan);
  sedp_nn_model_unref (m);
  gru_data_free (&g);
}

int
main (void)
{
  sedp_nn_set_blas_threads (1);
  int rc = nn_test_engine_init ();
  if (rc != 0)
    return rc;
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ops-gru", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
      {"gru forward", test_gru_forward},
      {"gru reverse", test_gru_reverse},
      {"gru bidirectional", test_gru_bidirectional},
      {"gru seq length 1", test_gru_seq_one},
      {"gru layout 1", test_gru_layout},
      {"gru sequence_lens 0, 1, full", test_gru_sequence_lens},
      {"gru packed weights", test_gru_packed},
      {"gru activations and clip", test_gru_activations_clip},
      {"gru errors", test_gru_errors},
      {"gru sequence_lens out of range", test_gru_bad_lens},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    CU_add_test (s, tests[i].name, tests[i].fn);
  rc = sedp_test_run ();
  sedp_nn_device_unref (nn_test_device);
  return rc;
}
