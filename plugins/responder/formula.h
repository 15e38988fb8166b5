/* responder — combine formulas: `OUT = EXPR` over float32 columns (the heads of several models),
 * compiled once into a small postfix program and evaluated over whole column vectors.
 *
 * The language (docs/routing.md, "Multi-model pipelines"):
 *   EXPR   := TERM (('+' | '-') TERM)*
 *   TERM   := UNARY (('*' | '/') UNARY)*
 *   UNARY  := '-' UNARY | NUMBER | COLUMN ['[' K ']'] | FUNC '(' EXPR {',' EXPR} ')' | '(' EXPR ')'
 * NUMBER is a decimal float (`2`, `0.5`, `.5`, `1e-3`); COLUMN and OUT are [a-z_][a-z0-9_]*;
 * `$COLUMN` reads a column of the request (a feature such as a bid) rather than a head that a
 * stage writes: `sedp check` requires every head to be declared by an earlier stage
 * (formula_list_heads()) and leaves `$` columns to the requests.
 * `COLUMN[K]` is the K-th value of a multi-valued column (`COLUMN` alone is `COLUMN[0]`); FUNC is
 * one of pow(a, b), exp(a), log(a), sqrt(a), min(a, b), max(a, b), sigmoid(a). A name followed
 * by '(' is a function, otherwise a column.
 *
 * Arithmetic is IEEE float and never an error at evaluation: x/0 is ±inf (0/0 NaN), log(0) is
 * -inf, log and sqrt of a negative number NaN, exp and pow overflow to inf, sigmoid(±inf) is 1
 * or 0. A NaN operand gives NaN, min and max included (unlike fminf): a NaN head makes the
 * combined score NaN, which the responder ranks last. */
#pragma once

#include <sedp/sedp.h>

/** FORMULA_ERROR: the error domain of formula_compile(); codes are #FormulaError. */
#define FORMULA_ERROR (formula_error_quark ())

/* formula_error_quark: the quark of FORMULA_ERROR (registered with a copied string, so the
 * quark outlives the plugin module). Thread-safe. */
GQuark formula_error_quark (void);

/**
 * FormulaError:
 * @FORMULA_ERROR_EMPTY: no formula, or one that does not start with the output column.
 * @FORMULA_ERROR_SYNTAX: a character or token where it cannot be (no `=` after OUT, an unbalanced
 *   parenthesis, a missing operand, an argument missing after ',', text after the expression).
 * @FORMULA_ERROR_NUMBER: a malformed number, one outside the float range, or a bad index `[K]`.
 * @FORMULA_ERROR_FUNCTION: an unknown function name.
 * @FORMULA_ERROR_ARITY: a function called with the wrong number of arguments.
 * @FORMULA_ERROR_LIMIT: nested deeper than FORMULA_MAX_DEPTH, or longer than FORMULA_MAX_OPS.
 */
typedef enum {
  FORMULA_ERROR_EMPTY,
  FORMULA_ERROR_SYNTAX,
  FORMULA_ERROR_NUMBER,
  FORMULA_ERROR_FUNCTION,
  FORMULA_ERROR_ARITY,
  FORMULA_ERROR_LIMIT,
} FormulaError;

/** FORMULA_MAX_DEPTH: the deepest nesting of parentheses, calls and unary minus. */
#define FORMULA_MAX_DEPTH 64
/** FORMULA_MAX_OPS: the most operations (numbers, columns, operators, calls) in a formula. */
#define FORMULA_MAX_OPS 256
/** FORMULA_MAX_INDEX: the largest K of `COLUMN[K]`. */
#define FORMULA_MAX_INDEX 65535

/**
 * Formula:
 * A compiled formula. Immutable once compiled: safe to evaluate from several threads at once.
 */
typedef struct _Formula Formula;

/**
 * formula_compile:
 * @text: the formula, `OUT = EXPR`
 * @error_at: (out) (optional): on error, the 1-based character of @text the error is at
 *   (0 when it is about the whole formula)
 * @error: a FORMULA_ERROR, its message `at character N: WHAT (got 'TOKEN')` without the
 *   option's name (the caller prefixes it)
 *
 * Returns: (transfer full) (nullable): the compiled formula (free with formula_free()), or
 * %NULL with @error set.
 */
Formula *formula_compile (const char *text, guint *error_at, GError **error);

/* formula_free: frees @formula (may be NULL). */
void formula_free (Formula *formula);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Formula, formula_free)

/* formula_get_output: Returns: (transfer none): OUT, the column the formula writes. */
const char *formula_get_output (const Formula *formula);

/**
 * formula_get_n_inputs:
 * Returns: how many distinct `COLUMN[K]` values the formula reads (its inputs, numbered
 * 0..n-1 in order of first appearance; formula_eval() takes them in that order).
 */
guint formula_get_n_inputs (const Formula *formula);

/**
 * formula_get_input:
 * @i: the input, < formula_get_n_inputs()
 * @index: (out) (optional): its K (0 for a plain `COLUMN`)
 *
 * Returns: (transfer none): the column input @i reads.
 */
const char *formula_get_input (const Formula *formula, guint i, guint *index);

/**
 * formula_list_columns:
 * Returns: (transfer full): the distinct columns the formula reads, in order of first
 * appearance (a new %NULL-terminated array, possibly empty; free with g_strfreev()).
 */
char **formula_list_columns (const Formula *formula);

/**
 * formula_list_heads:
 * Returns: (transfer full): the distinct columns the formula reads written without `$`, the
 * heads that an earlier stage must declare it writes (`sedp check`); `$name` reads a column of
 * the request (a feature) that no stage declares.
 */
char **formula_list_heads (const Formula *formula);

/**
 * FormulaInput:
 * @values: the first value of input i: row r reads values[r * stride]
 * @stride: floats between rows (the column's width; 0 for a broadcast column, whose one row
 *   applies to every row)
 *
 * Where formula_eval() reads one input. Borrowed for the call.
 */
typedef struct {
  const float *values;
  gsize stride;
} FormulaInput;

/**
 * formula_eval:
 * @inputs: (array): one per input, in formula_get_input() order
 * @n_rows: rows to compute
 * @out: (out caller-allocates) (array length=n_rows): the results; must not overlap an input
 *
 * Runs the program once over whole vectors of @n_rows values (each operation a loop over the
 * rows), with scratch space of its own (allocated per call). Thread-safe.
 */
void formula_eval (const Formula *formula, const FormulaInput *inputs, guint n_rows, float *out);
