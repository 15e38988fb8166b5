/* responder — the compiled form of a formula, shared by its compiler (formula.c) and its
 * evaluator (formula-eval.c). */
#pragma once

#include "formula.h"

/* One postfix operation. Pushes (CONST, INPUT) add a vector to the stack; unary operations
 * replace the top; binary ones pop the top (b) and replace the one below (a) with `a OP b`. */
typedef enum {
  FORMULA_OP_CONST,
  FORMULA_OP_INPUT,
  FORMULA_OP_NEG,
  FORMULA_OP_ADD,
  FORMULA_OP_SUB,
  FORMULA_OP_MUL,
  FORMULA_OP_DIV,
  FORMULA_OP_POW,
  FORMULA_OP_MIN,
  FORMULA_OP_MAX,
  FORMULA_OP_EXP,
  FORMULA_OP_LOG,
  FORMULA_OP_SQRT,
  FORMULA_OP_SIGMOID,
} FormulaOp;

/* Whether @op pops two vectors and pushes one (ADD … MAX). */
static inline gboolean
formula_op_is_binary (FormulaOp op)
{
  return op >= FORMULA_OP_ADD && op <= FORMULA_OP_MAX;
}

/* FormulaInstr: one operation; @value for CONST, @input (an input number) for INPUT. */
typedef struct {
  FormulaOp op;
  guint input;
  float value;
} FormulaInstr;

/* The program of OUT = EXPR; immutable after formula_compile(). */
struct _Formula {
  char *output;
  FormulaInstr *prog;
  guint n_prog;
  guint max_stack;     /* the most vectors on the stack at once (≥ 1) */
  char **input_names;  /* [n_inputs], NULL-terminated */
  guint *input_index;  /* [n_inputs]: the K of each */
  guint n_inputs;
  char **head_names;   /* the columns read without '$', distinct, NULL-terminated */
};
