/* responder — the formula compiler: a lexer and a recursive-descent parser (formula.h's
 * grammar) that emit the postfix program formula-eval.c runs. */
#include "formula-private.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

GQuark
formula_error_quark (void)
{
  /* Not g_quark_from_static_string: the string lives in a module that may be unloaded. */
  return g_quark_from_string ("sedp-responder-formula-error");
}

typedef enum { TOK_END, TOK_NUMBER, TOK_NAME, TOK_PUNCT } TokKind;

typedef struct {
  TokKind kind;
  char punct;   /* TOK_PUNCT: one of + - * / ( ) , [ ] = */
  guint start;  /* 0-based offset in the text */
  guint len;
  double value; /* TOK_NUMBER */
  gboolean dollar; /* TOK_NAME written `$name`: a column of the request, not a head */
} Token;

typedef struct {
  const char *text;
  guint pos;        /* the next character to lex */
  Token tok;        /* the current token */
  guint depth;
  GArray *prog;     /* FormulaInstr */
  GPtrArray *names; /* the input columns (owned) */
  GPtrArray *heads; /* the columns written without '$' (owned, distinct) */
  GArray *index;    /* guint: the K of each input */
  guint sp, max_sp;
  guint error_at;
  GError **error;
} Parser;

static const struct {
  const char *name;
  guint arity;
  FormulaOp op;
  const char *usage;
} functions[] = {
    {"pow", 2, FORMULA_OP_POW, "pow(a, b)"},   {"exp", 1, FORMULA_OP_EXP, "exp(a)"},
    {"log", 1, FORMULA_OP_LOG, "log(a)"},      {"sqrt", 1, FORMULA_OP_SQRT, "sqrt(a)"},
    {"min", 2, FORMULA_OP_MIN, "min(a, b)"},   {"max", 2, FORMULA_OP_MAX, "max(a, b)"},
    {"sigmoid", 1, FORMULA_OP_SIGMOID, "sigmoid(a)"},
};

#define FUNCTION_NAMES "pow, exp, log, sqrt, min, max, sigmoid"

/* Sets the error: "at character N: " (N = @at + 1, the 0-based offset @at) and the message. */
G_GNUC_PRINTF (4, 5) static gboolean
fail (Parser *p, guint at, FormulaError code, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *what = g_strdup_vprintf (format, ap);
  va_end (ap);
  p->error_at = at + 1;
  g_set_error (p->error, FORMULA_ERROR, code, "at character %u: %s", at + 1, what);
  return FALSE;
}

/* The current token, for "(got …)": "the end", or the token quoted (long ones cut). */
static char *
describe (const Parser *p)
{
  if (p->tok.kind == TOK_END)
    return g_strdup ("the end");
  guint len = MIN (p->tok.len, 32);
  return g_strdup_printf ("'%.*s%s'", (int) len, p->text + p->tok.start,
                          p->tok.len > len ? "…" : "");
}

/* A character that starts no token: named (printable) or by its byte value. */
static gboolean
lex_bad_char (Parser *p)
{
  guchar c = (guchar) p->text[p->pos];
  if (g_ascii_isupper (c))
    return fail (p, p->pos, FORMULA_ERROR_SYNTAX,
                 "unexpected character '%c' (column names are [a-z_][a-z0-9_]*)", c);
  if (g_ascii_isprint (c))
    return fail (p, p->pos, FORMULA_ERROR_SYNTAX, "unexpected character '%c'", c);
  return fail (p, p->pos, FORMULA_ERROR_SYNTAX, "unexpected byte 0x%02x", c);
}

/* The end of the digits/fraction/exponent at @s, or NULL when an exponent has no digits. */
static const char *
scan_number (const char *s)
{
  while (g_ascii_isdigit (*s))
    s++;
  if (*s == '.')
    for (s++; g_ascii_isdigit (*s); s++)
      ;
  if (*s != 'e' && *s != 'E')
    return s;
  s += (s[1] == '+' || s[1] == '-') ? 2 : 1;
  if (!g_ascii_isdigit (*s))
    return NULL;
  while (g_ascii_isdigit (*s))
    s++;
  return s;
}

static gboolean
lex_number (Parser *p)
{
  const char *s = p->text + p->pos, *e = scan_number (s);
  if (e == NULL)
    return fail (p, p->pos, FORMULA_ERROR_NUMBER,
                 "a number's exponent needs digits (write 1e-3, 2.5E+2)");
  g_autofree char *copy = g_strndup (s, (gsize) (e - s));
  double v = g_ascii_strtod (copy, NULL);
  if (!(fabs (v) <= FLT_MAX))
    return fail (p, p->pos, FORMULA_ERROR_NUMBER,
                 "'%s' is out of the float range (at most %g)", copy, (double) FLT_MAX);
  p->tok = (Token){.kind = TOK_NUMBER, .start = p->pos, .len = (guint) (e - s), .value = v};
  p->pos += p->tok.len;
  return TRUE;
}

/* Moves to the next token. */
static gboolean
lex_next (Parser *p)
{
  const char *t = p->text;
  while (g_ascii_isspace (t[p->pos]))
    p->pos++;
  char c = t[p->pos];
  if (c == '\0') {
    p->tok = (Token){.kind = TOK_END, .start = p->pos};
    return TRUE;
  }
  if (g_ascii_isdigit (c) || (c == '.' && g_ascii_isdigit (t[p->pos + 1])))
    return lex_number (p);
  gboolean dollar = c == '$' && (g_ascii_islower (t[p->pos + 1]) || t[p->pos + 1] == '_');
  if (g_ascii_islower (c) || c == '_' || dollar) {
    guint start = p->pos + dollar, end = start + 1;
    while (g_ascii_islower (t[end]) || g_ascii_isdigit (t[end]) || t[end] == '_')
      end++;
    p->tok = (Token){.kind = TOK_NAME, .start = start, .len = end - start, .dollar = dollar};
    p->pos = end;
    return TRUE;
  }
  if (strchr ("+-*/(),[]=", c) == NULL)
    return lex_bad_char (p);
  p->tok = (Token){.kind = TOK_PUNCT, .punct = c, .start = p->pos++, .len = 1};
  return TRUE;
}

static gboolean
at_punct (const Parser *p, char c)
{
  return p->tok.kind == TOK_PUNCT && p->tok.punct == c;
}

/* Consumes @c, or fails "expected 'c' (got …)" followed by @hint (may be "") when it is not
 * the current token. */
static gboolean
expect (Parser *p, char c, const char *hint)
{
  if (at_punct (p, c))
    return lex_next (p);
  g_autofree char *got = describe (p);
  return fail (p, p->tok.start, FORMULA_ERROR_SYNTAX, "expected '%c' (got %s)%s", c, got, hint);
}

/* Appends @in to the program, keeping count of the stack it needs. */
static gboolean
emit (Parser *p, FormulaInstr in)
{
  if (p->prog->len >= FORMULA_MAX_OPS)
    return fail (p, p->tok.start, FORMULA_ERROR_LIMIT,
                 "the formula has more than %u operations; simplify it", FORMULA_MAX_OPS);
  if (in.op == FORMULA_OP_CONST || in.op == FORMULA_OP_INPUT)
    p->max_sp = MAX (p->max_sp, ++p->sp);
  else if (formula_op_is_binary (in.op))
    p->sp--;
  g_array_append_val (p->prog, in);
  return TRUE;
}

static gboolean
emit_op (Parser *p, FormulaOp op)
{
  return emit (p, (FormulaInstr){.op = op});
}

static gboolean parse_expr (Parser *p);

/* The number of input NAME[K], added when new. */
static guint
input_of (Parser *p, const char *name, guint k)
{
  for (guint i = 0; i < p->names->len; i++)
    if (strcmp (p->names->pdata[i], name) == 0 && g_array_index (p->index, guint, i) == k)
      return i;
  g_ptr_array_add (p->names, g_strdup (name));
  g_array_append_val (p->index, k);
  return p->names->len - 1;
}

/* `[K]` after column @name (the current token is '['). */
static gboolean
parse_index (Parser *p, const char *name, guint *k)
{
  if (!lex_next (p))
    return FALSE;
  const char *s = p->text + p->tok.start;
  gboolean digits = p->tok.kind == TOK_NUMBER && strspn (s, "0123456789") == p->tok.len;
  if (!digits || p->tok.value > FORMULA_MAX_INDEX) {
    g_autofree char *got = describe (p);
    return fail (p, p->tok.start, FORMULA_ERROR_NUMBER,
                 "expected a value index 0..%u in '%s[K]' (got %s)", FORMULA_MAX_INDEX, name, got);
  }
  *k = (guint) p->tok.value;
  return lex_next (p) && expect (p, ']', "");
}

/* A column, `NAME` or `NAME[K]`; the current token is the one after NAME. */
static gboolean
parse_column (Parser *p, const char *name)
{
  guint k = 0;
  if (at_punct (p, '[') && !parse_index (p, name, &k))
    return FALSE;
  return emit (p, (FormulaInstr){.op = FORMULA_OP_INPUT, .input = input_of (p, name, k)});
}

static int
find_function (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (functions); i++)
    if (strcmp (functions[i].name, name) == 0)
      return (int) i;
  return -1;
}

/* The arguments of function @f, from its '(' (the current token) to its ')'. */
static gboolean
parse_args (Parser *p, guint f)
{
  guint arity = functions[f].arity;
  g_autofree char *hint = g_strdup_printf (": %s takes %u argument%s, %s", functions[f].name,
                                           arity, arity == 1 ? "" : "s", functions[f].usage);
  if (!lex_next (p))
    return FALSE;
  for (guint n = 1; n <= arity; n++) {
    if (n > 1 && at_punct (p, ')'))
      return fail (p, p->tok.start, FORMULA_ERROR_ARITY, "expected ',' (got ')')%s", hint);
    if (n > 1 && !expect (p, ',', hint))
      return FALSE;
    if (at_punct (p, ')'))
      return fail (p, p->tok.start, n == 1 ? FORMULA_ERROR_ARITY : FORMULA_ERROR_SYNTAX,
                   "expected an argument (got ')')%s", hint);
    if (!parse_expr (p))
      return FALSE;
  }
  if (at_punct (p, ','))
    return fail (p, p->tok.start, FORMULA_ERROR_ARITY, "expected ')' (got ',')%s", hint);
  return expect (p, ')', "") && emit_op (p, functions[f].op);
}

/* A name: a call when '(' follows, else a column. The current token is the name. */
static gboolean
parse_name (Parser *p)
{
  g_autofree char *name = g_strndup (p->text + p->tok.start, p->tok.len);
  guint at = p->tok.start;
  gboolean dollar = p->tok.dollar;
  if (!lex_next (p))
    return FALSE;
  if (!at_punct (p, '(')) {
    if (!dollar && !g_ptr_array_find_with_equal_func (p->heads, name, g_str_equal, NULL))
      g_ptr_array_add (p->heads, g_strdup (name));
    return parse_column (p, name);
  }
  if (dollar)
    return fail (p, at - 1, FORMULA_ERROR_SYNTAX, "'$' marks a column of the request, not a "
                 "function: write %s(…)", name);
  int f = find_function (name);
  if (f < 0)
    return fail (p, at, FORMULA_ERROR_FUNCTION, "unknown function '%s' (the functions: %s)", name,
                 FUNCTION_NAMES);
  return parse_args (p, (guint) f);
}

static gboolean
parse_primary (Parser *p)
{
  if (p->tok.kind == TOK_NUMBER) {
    FormulaInstr in = {.op = FORMULA_OP_CONST, .value = (float) p->tok.value};
    return emit (p, in) && lex_next (p);
  }
  if (p->tok.kind == TOK_NAME)
    return parse_name (p);
  if (at_punct (p, '('))
    return lex_next (p) && parse_expr (p) && expect (p, ')', "");
  g_autofree char *got = describe (p);
  return fail (p, p->tok.start, FORMULA_ERROR_SYNTAX,
               "expected a number, a column, a function or '(' (got %s)", got);
}

/* UNARY: '-' UNARY | PRIMARY; counts the nesting (every recursion passes here). */
static gboolean
parse_unary (Parser *p)
{
  if (++p->depth > FORMULA_MAX_DEPTH)
    return fail (p, p->tok.start, FORMULA_ERROR_LIMIT,
                 "the formula nests deeper than %u levels (parentheses, calls, unary minus); "
                 "simplify it", FORMULA_MAX_DEPTH);
  gboolean ok;
  if (at_punct (p, '-'))
    ok = lex_next (p) && parse_unary (p) && emit_op (p, FORMULA_OP_NEG);
  else
    ok = parse_primary (p);
  p->depth--;
  return ok;
}

static gboolean
parse_term (Parser *p)
{
  if (!parse_unary (p))
    return FALSE;
  while (at_punct (p, '*') || at_punct (p, '/')) {
    FormulaOp op = p->tok.punct == '*' ? FORMULA_OP_MUL : FORMULA_OP_DIV;
    if (!lex_next (p) || !parse_unary (p) || !emit_op (p, op))
      return FALSE;
  }
  return TRUE;
}

static gboolean
parse_expr (Parser *p)
{
  if (!parse_term (p))
    return FALSE;
  while (at_punct (p, '+') || at_punct (p, '-')) {
    FormulaOp op = p->tok.punct == '+' ? FORMULA_OP_ADD : FORMULA_OP_SUB;
    if (!lex_next (p) || !parse_term (p) || !emit_op (p, op))
      return FALSE;
  }
  return TRUE;
}

/* `OUT =`: the output column, in *@output. */
static gboolean
parse_output (Parser *p, char **output)
{
  if (!lex_next (p))
    return FALSE;
  if (p->tok.kind == TOK_END)
    return fail (p, p->tok.start, FORMULA_ERROR_EMPTY,
                 "empty formula; write OUT = EXPR, e.g. score = ctr * pow(cvr, 0.5)");
  g_autofree char *got = describe (p);
  if (p->tok.kind != TOK_NAME)
    return fail (p, p->tok.start, FORMULA_ERROR_EMPTY,
                 "expected the output column (got %s); write OUT = EXPR", got);
  *output = g_strndup (p->text + p->tok.start, p->tok.len);
  g_autofree char *hint = g_strdup_printf ("; write %s = EXPR", *output);
  return lex_next (p) && expect (p, '=', hint);
}

/* The compiled formula, taking the parser's program and inputs. */
static Formula *
build (Parser *p, char *output)
{
  Formula *f = g_new0 (Formula, 1);
  f->output = output;
  f->n_prog = p->prog->len;
  f->prog = (FormulaInstr *) g_array_free (g_steal_pointer (&p->prog), FALSE);
  f->max_stack = MAX (p->max_sp, 1);
  f->n_inputs = p->names->len;
  g_ptr_array_add (p->names, NULL);
  f->input_names = (char **) g_ptr_array_free (g_steal_pointer (&p->names), FALSE);
  f->input_index = (guint *) g_array_free (g_steal_pointer (&p->index), FALSE);
  g_ptr_array_add (p->heads, NULL);
  f->head_names = (char **) g_ptr_array_free (g_steal_pointer (&p->heads), FALSE);
  return f;
}

Formula *
formula_compile (const char *text, guint *error_at, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);
  Parser p = {.text = text, .error = error};
  p.prog = g_array_new (FALSE, FALSE, sizeof (FormulaInstr));
  p.names = g_ptr_array_new_with_free_func (g_free);
  p.heads = g_ptr_array_new_with_free_func (g_free);
  p.index = g_array_new (FALSE, FALSE, sizeof (guint));
  char *output = NULL;
  gboolean ok = parse_output (&p, &output) && parse_expr (&p);
  if (ok && p.tok.kind != TOK_END) {
    g_autofree char *got = describe (&p);
    ok = fail (&p, p.tok.start, FORMULA_ERROR_SYNTAX, "expected an operator or the end (got %s)",
               got);
  }
  Formula *f = ok ? build (&p, output) : NULL;
  if (!ok)
    g_free (output);
  if (p.prog)
    g_array_free (p.prog, TRUE);
  if (p.names)
    g_ptr_array_free (p.names, TRUE);
  if (p.heads)
    g_ptr_array_free (p.heads, TRUE);
  if (p.index)
    g_array_free (p.index, TRUE);
  if (error_at)
    *error_at = ok ? 0 : p.error_at;
  return f;
}

void
formula_free (Formula *formula)
{
  if (formula == NULL)
    return;
  g_free (formula->output);
  g_free (formula->prog);
  g_strfreev (formula->input_names);
  g_strfreev (formula->head_names);
  g_free (formula->input_index);
  g_free (formula);
}

const char *
formula_get_output (const Formula *formula)
{
  g_return_val_if_fail (formula != NULL, NULL);
  return formula->output;
}

guint
formula_get_n_inputs (const Formula *formula)
{
  g_return_val_if_fail (formula != NULL, 0);
  return formula->n_inputs;
}

const char *
formula_get_input (const Formula *formula, guint i, guint *index)
{
  g_return_val_if_fail (formula != NULL && i < formula->n_inputs, NULL);
  if (index)
    *index = formula->input_index[i];
  return formula->input_names[i];
}

char **
formula_list_columns (const Formula *formula)
{
  g_return_val_if_fail (formula != NULL, NULL);
  GPtrArray *cols = g_ptr_array_new ();
  for (guint i = 0; i < formula->n_inputs; i++) {
    const char *name = formula->input_names[i];
    if (!g_ptr_array_find_with_equal_func (cols, name, g_str_equal, NULL))
      g_ptr_array_add (cols, g_strdup (name));
  }
  g_ptr_array_add (cols, NULL);
  return (char **) g_ptr_array_free (cols, FALSE);
}

char **
formula_list_heads (const Formula *formula)
{
  g_return_val_if_fail (formula != NULL, NULL);
  return g_strdupv (formula->head_names);
}
