/* responder — the formula evaluator: runs a compiled program (formula-private.h) once over whole
 * column vectors, each operation one loop over the rows. */
#include "formula-private.h"

#include <math.h>
#include <string.h>

/* min and max that give NaN when either operand is NaN (fminf/fmaxf would drop it). */
static inline float
min_nan (float a, float b)
{
  return isnan (a) || isnan (b) ? NAN : (a < b ? a : b);
}

static inline float
max_nan (float a, float b)
{
  return isnan (a) || isnan (b) ? NAN : (a > b ? a : b);
}

static inline float
sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x)); /* -inf → 0, +inf → 1, NaN → NaN */
}

/* @dst[r] = the value input @in has at row r. */
static void
load_input (float *dst, const FormulaInput *in, guint n)
{
  if (in->stride == 0) {
    for (guint r = 0; r < n; r++)
      dst[r] = in->values[0];
  } else if (in->stride == 1) {
    memcpy (dst, in->values, n * sizeof *dst);
  } else {
    for (guint r = 0; r < n; r++)
      dst[r] = in->values[(gsize) r * in->stride];
  }
}

static void
fill (float *dst, float value, guint n)
{
  for (guint r = 0; r < n; r++)
    dst[r] = value;
}

/* @a = OP(@a), in place. */
static void
run_unary (FormulaOp op, float *a, guint n)
{
  switch (op) {
  case FORMULA_OP_NEG:
    for (guint r = 0; r < n; r++)
      a[r] = -a[r];
    break;
  case FORMULA_OP_EXP:
    for (guint r = 0; r < n; r++)
      a[r] = expf (a[r]);
    break;
  case FORMULA_OP_LOG:
    for (guint r = 0; r < n; r++)
      a[r] = logf (a[r]);
    break;
  case FORMULA_OP_SQRT:
    for (guint r = 0; r < n; r++)
      a[r] = sqrtf (a[r]);
    break;
  default: /* FORMULA_OP_SIGMOID */
    for (guint r = 0; r < n; r++)
      a[r] = sigmoid (a[r]);
    break;
  }
}

/* The arithmetic binary operations: @a = @a OP @b. */
static gboolean
run_arith (FormulaOp op, float *restrict a, const float *restrict b, guint n)
{
  switch (op) {
  case FORMULA_OP_ADD:
    for (guint r = 0; r < n; r++)
      a[r] += b[r];
    return TRUE;
  case FORMULA_OP_SUB:
    for (guint r = 0; r < n; r++)
      a[r] -= b[r];
    return TRUE;
  case FORMULA_OP_MUL:
    for (guint r = 0; r < n; r++)
      a[r] *= b[r];
    return TRUE;
  case FORMULA_OP_DIV:
    for (guint r = 0; r < n; r++)
      a[r] /= b[r];
    return TRUE;
  default:
    return FALSE;
  }
}

/* @a = @a OP @b, for every binary operation. */
static void
run_binary (FormulaOp op, float *restrict a, const float *restrict b, guint n)
{
  if (run_arith (op, a, b, n))
    return;
  if (op == FORMULA_OP_POW) {
    for (guint r = 0; r < n; r++)
      a[r] = powf (a[r], b[r]);
  } else if (op == FORMULA_OP_MIN) {
    for (guint r = 0; r < n; r++)
      a[r] = min_nan (a[r], b[r]);
  } else {
    for (guint r = 0; r < n; r++)
      a[r] = max_nan (a[r], b[r]);
  }
}

void
formula_eval (const Formula *formula, const FormulaInput *inputs, guint n_rows, float *out)
{
  g_return_if_fail (formula != NULL && (inputs != NULL || formula->n_inputs == 0));
  if (n_rows == 0)
    return;
  /* Stack slot 0 is @out itself, the others scratch vectors of n_rows values. */
  g_autofree float *scratch = g_new (float, (gsize) (formula->max_stack - 1) * n_rows + 1);
  float *slot[FORMULA_MAX_OPS + 1];
  for (guint s = 0; s < formula->max_stack; s++)
    slot[s] = s == 0 ? out : scratch + (gsize) (s - 1) * n_rows;
  guint sp = 0;
  for (guint i = 0; i < formula->n_prog; i++) {
    const FormulaInstr *in = &formula->prog[i];
    if (in->op == FORMULA_OP_CONST)
      fill (slot[sp++], in->value, n_rows);
    else if (in->op == FORMULA_OP_INPUT)
      load_input (slot[sp++], &inputs[in->input], n_rows);
    else if (formula_op_is_binary (in->op)) {
      sp--;
      run_binary (in->op, slot[sp - 1], slot[sp], n_rows);
    } else
      run_unary (in->op, slot[sp - 1], n_rows);
  }
}
