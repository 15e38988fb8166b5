/* sedp tests — the responder's combine formulas (plugins/responder/formula.c, formula-eval.c),
 * built into the test: results against references computed here in double (precedence and
 * associativity, unary minus, every function, numbers, `NAME[K]` indexing, strided and
 * broadcast inputs, many rows), the IEEE cases formula.h documents (inf, NaN, NaN through min
 * and max), the inputs and columns a formula lists, and every compile error: its code and the
 * character it points at. */
#include "test-common.h"

#include "formula.h"

#include <math.h>
#include <string.h>

/* Three inputs a, b, c of one row each, unless a test binds its own. */
static const float a_val = 2.0f, b_val = 3.0f, c_val = 0.25f;

/* Compiles @text (which must compile) and evaluates it on one row where every input named
 * `a`, `b` or `c` has the value above, whatever its K. */
static float
eval1 (const char *text)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (Formula) f = formula_compile (text, NULL, &error);
  if (error)
    fprintf (stderr, "\n  '%s': %s\n", text, error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  guint n = formula_get_n_inputs (f);
  g_autofree FormulaInput *in = g_new0 (FormulaInput, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    const char *name = formula_get_input (f, i, NULL);
    in[i].values = strcmp (name, "a") == 0 ? &a_val : strcmp (name, "b") == 0 ? &b_val : &c_val;
    in[i].stride = 1;
  }
  float out = -12345.0f;
  formula_eval (f, in, 1, &out);
  return out;
}

/* @got within float rounding of the double reference @want (or the same inf / NaN). */
static gboolean
close_to (float got, double want)
{
  if (isnan (want))
    return isnan (got);
  if (isinf (want))
    return got == (float) want;
  return fabs ((double) got - want) <= 1e-5 * fabs (want) + 1e-6;
}

static void
check (const char *text, double want)
{
  float got = eval1 (text);
  if (!close_to (got, want))
    fprintf (stderr, "\n  '%s' = %.9g, want %.9g\n", text, (double) got, want);
  CU_ASSERT (close_to (got, want));
}

static void
test_precedence (void)
{
  check ("o = 1 + 2 * 3 - 4 / 2", 5.0);
  check ("o = (1 + 2) * 3", 9.0);
  check ("o = 2 - 3 - 4", -5.0);        /* left associative */
  check ("o = 8 / 4 / 2", 1.0);
  check ("o = a + b * c", 2.0 + 3.0 * 0.25);
  check ("o = (a + b) * c", (2.0 + 3.0) * 0.25);
  check ("o = a / b * c", 2.0 / 3.0 * 0.25);
  check ("o = a - b + c", 2.0 - 3.0 + 0.25);
  check ("o=a*b+c*a", 2.0 * 3.0 + 0.25 * 2.0); /* no spaces */
  check ("o = ((((a))))", 2.0);
  check ("o = 7", 7.0);                /* no input at all */
}

static void
test_unary_minus (void)
{
  check ("o = -a", -2.0);
  check ("o = -a * b", -6.0);
  check ("o = - -a", 2.0);
  check ("o = -(a + b)", -5.0);
  check ("o = 2 * -a", -4.0);
  check ("o = a - -b", 5.0);
  check ("o = -a - -b - -c", -2.0 + 3.0 + 0.25);
  check ("o = -pow(a, 2)", -4.0);
  check ("o = pow(-a, 2)", 4.0);
}

static void
test_functions (void)
{
  check ("o = pow(a, b)", pow (2.0, 3.0));
  check ("o = pow(b, 0.5)", sqrt (3.0));
  check ("o = exp(c)", exp (0.25));
  check ("o = log(b)", log (3.0));
  check ("o = sqrt(a)", sqrt (2.0));
  check ("o = min(a, b)", 2.0);
  check ("o = max(a, b)", 3.0);
  check ("o = sigmoid(c)", 1.0 / (1.0 + exp (-0.25)));
  check ("o = sigmoid(-a)", 1.0 / (1.0 + exp (2.0)));
  check ("o = max(min(a, b), log(exp(c)))", 2.0);
  check ("o = a * pow(b, 0.5) + sigmoid(c - 1) / max(a, 0.5)",
         2.0 * sqrt (3.0) + (1.0 / (1.0 + exp (0.75))) / 2.0);
}

static void
test_numbers (void)
{
  check ("o = .5", 0.5);
  check ("o = 2.", 2.0);
  check ("o = 1e-3", 1e-3);
  check ("o = 2.5E+2", 250.0);
  check ("o = 0.1 * 3", 0.1 * 3.0);
  check ("o = 3.4e38", 3.4e38);
}

/* IEEE results, never errors: formula.h's list. */
static void
test_ieee (void)
{
  check ("o = a / 0", INFINITY);
  check ("o = -a / 0", -INFINITY);
  check ("o = 0 / 0", NAN);
  check ("o = log(0)", -INFINITY);
  check ("o = log(-a)", NAN);
  check ("o = sqrt(-a)", NAN);
  check ("o = exp(1000)", INFINITY);
  check ("o = pow(10, 50)", INFINITY);
  check ("o = sigmoid(a / 0)", 1.0);
  check ("o = sigmoid(-a / 0)", 0.0);
  check ("o = min(0 / 0, a)", NAN);     /* NaN through min and max, unlike fminf */
  check ("o = min(a, 0 / 0)", NAN);
  check ("o = max(0 / 0, a)", NAN);
  check ("o = max(a, 0 / 0)", NAN);
  check ("o = a / 0 - a / 0", NAN);
  check ("o = 0 * (a / 0)", NAN);
  check ("o = 1 / (a / 0)", 0.0);
}

/* `NAME[K]` over a column of width 3 (strided), the same column read at two K, a broadcast
 * input, over many rows; against double references. */
static void
test_columns (void)
{
  enum { N = 1000, W = 3 };
  g_autofree float *ctr = g_new (float, N * W);
  g_autofree float *cvr = g_new (float, N);
  for (guint r = 0; r < N * W; r++)
    ctr[r] = (float) ((r * 37) % 101) / 100.0f;
  for (guint r = 0; r < N; r++)
    cvr[r] = (float) ((r * 13) % 17) / 16.0f;
  const float boost = 1.5f;
  g_autoptr (GError) error = NULL;
  g_autoptr (Formula) f = formula_compile (
      "score = ctr * pow(cvr, 0.5) + ctr[2] * boost - sigmoid(ctr[0] - ctr[1])", NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  CU_ASSERT_STRING_EQUAL (formula_get_output (f), "score");
  CU_ASSERT_EQUAL_FATAL (formula_get_n_inputs (f), 5); /* ctr[0], cvr, ctr[2], boost, ctr[1] */
  const float *base[] = {ctr, cvr, ctr + 2, &boost, ctr + 1};
  const gsize stride[] = {W, 1, W, 0, W};
  const guint want_k[] = {0, 0, 2, 0, 1};
  FormulaInput in[5];
  for (guint i = 0; i < 5; i++) {
    guint k = 99;
    formula_get_input (f, i, &k);
    CU_ASSERT_EQUAL (k, want_k[i]);
    in[i] = (FormulaInput){.values = base[i], .stride = stride[i]};
  }
  g_autofree float *out = g_new (float, N);
  formula_eval (f, in, N, out);
  guint bad = 0;
  for (guint r = 0; r < N; r++) {
    double c0 = ctr[r * W], c1 = ctr[r * W + 1], c2 = ctr[r * W + 2];
    double want = c0 * sqrt ((double) cvr[r]) + c2 * 1.5 - 1.0 / (1.0 + exp (-(c0 - c1)));
    bad += !close_to (out[r], want);
  }
  CU_ASSERT_EQUAL (bad, 0);
  g_auto (GStrv) cols = formula_list_columns (f);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (cols), 3);
  CU_ASSERT_STRING_EQUAL (cols[0], "ctr");
  CU_ASSERT_STRING_EQUAL (cols[1], "cvr");
  CU_ASSERT_STRING_EQUAL (cols[2], "boost");
}

/* `$name` reads the request's column `name`: an input, not a head for sedp check; `$f(` is an
 * error. */
static void
test_request_columns (void)
{
  g_autoptr (Formula) f = formula_compile ("score = ctr * $bid + $bid[1] - cvr", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  g_auto (GStrv) cols = formula_list_columns (f);
  g_autofree char *all = g_strjoinv (",", cols);
  CU_ASSERT_STRING_EQUAL (all, "ctr,bid,cvr");
  g_auto (GStrv) heads = formula_list_heads (f);
  g_autofree char *h = g_strjoinv (",", heads);
  CU_ASSERT_STRING_EQUAL (h, "ctr,cvr");
  g_autoptr (GError) error = NULL;
  guint at = 0;
  g_autoptr (Formula) bad = formula_compile ("s = $exp(1)", &at, &error);
  CU_ASSERT_PTR_NULL (bad);
  CU_ASSERT_TRUE (g_error_matches (error, FORMULA_ERROR, FORMULA_ERROR_SYNTAX));
  CU_ASSERT_TRUE (error && strstr (error->message, "'$' marks a column of the request"));
}

/* A name before '(' is a function, otherwise a column (even a function's name); no inputs. */
static void
test_names (void)
{
  g_autoptr (Formula) f = formula_compile ("exp = exp * exp(x_1) + _y[0] + _y", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  g_auto (GStrv) cols = formula_list_columns (f);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (cols), 3);
  CU_ASSERT_STRING_EQUAL (cols[0], "exp");
  CU_ASSERT_STRING_EQUAL (cols[1], "x_1");
  CU_ASSERT_STRING_EQUAL (cols[2], "_y");
  CU_ASSERT_EQUAL (formula_get_n_inputs (f), 3); /* _y and _y[0] are one input */
  g_autoptr (Formula) k = formula_compile ("o = 1 + 2", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (k);
  g_auto (GStrv) none = formula_list_columns (k);
  CU_ASSERT_EQUAL (g_strv_length (none), 0);
  float out[4] = {0};
  formula_eval (k, NULL, 4, out);
  CU_ASSERT (out[0] == 3.0f && out[3] == 3.0f);
}

typedef struct {
  const char *text;
  FormulaError code;
  guint at;            /* 1-based character */
  const char *needle;  /* a part of the message that must be there (what the user reads) */
} Bad;

static const Bad bad_formulas[] = {
  {"", FORMULA_ERROR_EMPTY, 1, "OUT = EXPR"},
  {"   ", FORMULA_ERROR_EMPTY, 4, "OUT = EXPR"},
  {"2 = a", FORMULA_ERROR_EMPTY, 1, "output column"},
  {"= a", FORMULA_ERROR_EMPTY, 1, "output column"},
  {"score", FORMULA_ERROR_SYNTAX, 6, "expected '=' (got the end)"},
  {"score a", FORMULA_ERROR_SYNTAX, 7, "expected '=' (got 'a')"},
  {"score =", FORMULA_ERROR_SYNTAX, 8, "(got the end)"},
  {"score == a", FORMULA_ERROR_SYNTAX, 8, "(got '=')"},
  {"score = exp(a, b)", FORMULA_ERROR_ARITY, 14, "expected ')' (got ',')"},
  {"score = pow(a)", FORMULA_ERROR_ARITY, 14, "pow takes 2 arguments"},
  {"score = exp()", FORMULA_ERROR_ARITY, 13, "exp takes 1 argument"},
  {"score = pow(a,)", FORMULA_ERROR_SYNTAX, 15, "expected an argument"},
  {"score = pow(a b)", FORMULA_ERROR_SYNTAX, 15, "expected ','"},
  {"score = foo(a)", FORMULA_ERROR_FUNCTION, 9, "'foo'"},
  {"score = (a + b", FORMULA_ERROR_SYNTAX, 15, "expected ')' (got the end)"},
  {"score = a + b)", FORMULA_ERROR_SYNTAX, 14, "expected an operator or the end (got ')')"},
  {"score = a b", FORMULA_ERROR_SYNTAX, 11, "(got 'b')"},
  {"score = a +", FORMULA_ERROR_SYNTAX, 12, "(got the end)"},
  {"score = a * * b", FORMULA_ERROR_SYNTAX, 13, "(got '*')"},
  {"score = a + ()", FORMULA_ERROR_SYNTAX, 14, "(got ')')"},
  {"score = Ctr", FORMULA_ERROR_SYNTAX, 9, "'C'"},
  {"score = a # b", FORMULA_ERROR_SYNTAX, 11, "'#'"},
  {"score = a \xc3\xa9", FORMULA_ERROR_SYNTAX, 11, "0xc3"},
  {"score = .", FORMULA_ERROR_SYNTAX, 9, "'.'"},
  {"score = 2[1]", FORMULA_ERROR_SYNTAX, 10, "(got '[')"},
  {"score = 1e", FORMULA_ERROR_NUMBER, 9, "exponent"},
  {"score = 1e+x", FORMULA_ERROR_NUMBER, 9, "exponent"},
  {"score = 1e39", FORMULA_ERROR_NUMBER, 9, "'1e39'"},
  {"score = a[1.5]", FORMULA_ERROR_NUMBER, 11, "'a[K]'"},
  {"score = a[70000]", FORMULA_ERROR_NUMBER, 11, "0..65535"},
  {"score = a[-1]", FORMULA_ERROR_NUMBER, 11, "(got '-')"},
  {"score = a[]", FORMULA_ERROR_NUMBER, 11, "(got ']')"},
  {"score = a[1", FORMULA_ERROR_SYNTAX, 12, "expected ']'"},
  {"score = a[1 + 1]", FORMULA_ERROR_SYNTAX, 13, "expected ']'"},
};

static void
test_errors (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (bad_formulas); i++) {
    const Bad *b = &bad_formulas[i];
    g_autoptr (GError) error = NULL;
    guint at = 0;
    g_autoptr (Formula) f = formula_compile (b->text, &at, &error);
    CU_ASSERT_PTR_NULL (f);
    CU_ASSERT_PTR_NOT_NULL_FATAL (error);
    g_autofree char *prefix = g_strdup_printf ("at character %u: ", b->at);
    gboolean ok = g_error_matches (error, FORMULA_ERROR, (gint) b->code) && at == b->at &&
                  g_str_has_prefix (error->message, prefix) && strstr (error->message, b->needle);
    if (!ok)
      fprintf (stderr, "\n  '%s': code %d at %u: %s (want code %d at %u, '%s')\n", b->text,
               error->code, at, error->message, b->code, b->at, b->needle);
    CU_ASSERT (ok);
  }
}

/* An unknown function's error lists the known ones. */
static void
test_unknown_function (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (Formula) f = formula_compile ("s = a * pwo(b, 2)", NULL, &error);
  CU_ASSERT_PTR_NULL (f);
  SEDP_ASSERT_ERROR (error, FORMULA_ERROR, "at character 9", "'pwo'",
                     "pow, exp, log, sqrt, min, max, sigmoid");
  CU_ASSERT_EQUAL (error->code, FORMULA_ERROR_FUNCTION);
}

/* @n nested parentheses around a, or @n unary minus signs before it. */
static char *
nested (guint n, gboolean parens)
{
  GString *s = g_string_new ("o = ");
  for (guint i = 0; i < n; i++)
    g_string_append_c (s, parens ? '(' : '-');
  g_string_append_c (s, 'a');
  for (guint i = 0; parens && i < n; i++)
    g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}

/* @n terms: a + a + … (2n - 1 operations). */
static char *
long_sum (guint n)
{
  GString *s = g_string_new ("o = a");
  for (guint i = 1; i < n; i++)
    g_string_append (s, " + a");
  return g_string_free (s, FALSE);
}

static void
expect_limit (char *text, gboolean fails)
{
  g_autoptr (GError) error = NULL;
  guint at = 0;
  g_autoptr (Formula) f = formula_compile (text, &at, &error);
  if (fails) {
    CU_ASSERT (g_error_matches (error, FORMULA_ERROR, FORMULA_ERROR_LIMIT));
    CU_ASSERT (at > 0);
  } else {
    CU_ASSERT_PTR_NOT_NULL (f);
  }
  g_free (text);
}

/* FORMULA_MAX_DEPTH levels of nesting compile (the top level is one), one more fails; so
 * do more than FORMULA_MAX_OPS operations. */
static void
test_limits (void)
{
  expect_limit (nested (FORMULA_MAX_DEPTH - 1, TRUE), FALSE);
  expect_limit (nested (FORMULA_MAX_DEPTH, TRUE), TRUE);
  expect_limit (nested (FORMULA_MAX_DEPTH - 1, FALSE), FALSE);
  expect_limit (nested (FORMULA_MAX_DEPTH, FALSE), TRUE);
  expect_limit (nested (100000, TRUE), TRUE);           /* no stack overflow */
  expect_limit (long_sum (FORMULA_MAX_OPS / 2), FALSE); /* 255 operations */
  expect_limit (long_sum (FORMULA_MAX_OPS / 2 + 1), TRUE);
  check ("o = -(-(-(a)))", -2.0);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return CU_get_error ();
  CU_pSuite suite = CU_add_suite ("formula", NULL, NULL);
  if (suite == NULL || CU_add_test (suite, "precedence", test_precedence) == NULL ||
      CU_add_test (suite, "unary minus", test_unary_minus) == NULL ||
      CU_add_test (suite, "functions", test_functions) == NULL ||
      CU_add_test (suite, "numbers", test_numbers) == NULL ||
      CU_add_test (suite, "IEEE: inf and NaN", test_ieee) == NULL ||
      CU_add_test (suite, "columns, indexes, broadcast", test_columns) == NULL ||
      CU_add_test (suite, "names and constants", test_names) == NULL ||
      CU_add_test (suite, "compile errors", test_errors) == NULL ||
      CU_add_test (suite, "unknown function", test_unknown_function) == NULL ||
      CU_add_test (suite, "depth and length limits", test_limits) == NULL ||
      CU_add_test (suite, "$ columns of the request", test_request_columns) == NULL) {
    CU_cleanup_registry ();
    return CU_get_error ();
  }
  return sedp_test_run ();
}
