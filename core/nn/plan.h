/* sedp — the executor: a model compiled for one batch size into a static schedule over an arena. */
#pragma once

#include "model.h"

G_BEGIN_DECLS

/**
 * SedpNnPlan:
 * A model compiled for a fixed batch size: every symbolic batch dimension bound, shapes
 * inferred, shape computations folded into constants, nodes fused where it pays (Gemm/MatMul +
 * bias + activation), a static schedule, and one preallocated arena for every intermediate
 * value, reused by every run. The plan references the model's weights (no copy). A plan is used
 * by one thread at a time; make one plan per worker thread.
 */
typedef struct _SedpNnPlan SedpNnPlan;

/* Checks that every operator of @model is supported; the error lists every unsupported op with
 * its opset ("unsupported operators (opset 13): Foo, Bar"). */
SEDP_API gboolean sedp_nn_model_check (const SedpNnModel *model, GError **error);

/* Compiles @model for @batch rows: the first dimension of every graph input, when it is
 * symbolic, takes the value @batch, and so does any other symbolic dimension with the same name
 * as the first input's first one; any other symbolic dimension is an UNSUPPORTED error. A model
 * whose first input has a fixed first dimension accepts only that batch (SHAPE error). Errors:
 * UNSUPPORTED, SHAPE, INVALID. */
SEDP_API SedpNnPlan *sedp_nn_plan_new (SedpNnModel *model, gint64 batch, GError **error);
SEDP_API void sedp_nn_plan_free (SedpNnPlan *plan);

SEDP_API gint64 sedp_nn_plan_get_batch (const SedpNnPlan *plan);
/* The graph inputs (initializers excluded) and outputs with the shapes of this plan. */
SEDP_API guint sedp_nn_plan_get_n_inputs (const SedpNnPlan *plan);
SEDP_API const SedpNnTensor *sedp_nn_plan_get_input (const SedpNnPlan *plan, guint index);
SEDP_API guint sedp_nn_plan_get_n_outputs (const SedpNnPlan *plan);
SEDP_API const SedpNnTensor *sedp_nn_plan_get_output (const SedpNnPlan *plan, guint index);

/**
 * sedp_nn_plan_run:
 * @inputs: (array length=n_inputs): one tensor per graph input, in graph order, of the plan's
 *   dtype and shape (data borrowed for the call)
 * @outputs: (array length=n_outputs) (out caller-allocates): filled with the outputs' dtype,
 *   shape and data pointers into the plan's arena, valid until the next run or free
 *
 * Errors: INPUT (wrong count, dtype or shape, naming the input), or an error of an operator
 * (e.g. a Gather index out of range, naming the node).
 */
SEDP_API gboolean sedp_nn_plan_run (SedpNnPlan *plan, guint n_inputs, const SedpNnTensor *inputs,
                                    guint n_outputs, SedpNnTensor *outputs, GError **error);

/* Floating-point operations of one run (multiply-adds count 2), and per row. */
SEDP_API double sedp_nn_plan_get_flops (const SedpNnPlan *plan);
/* Bytes of the arena. */
SEDP_API gsize sedp_nn_plan_get_arena_size (const SedpNnPlan *plan);
/* The compiled schedule, one line per kernel (for `sedp model info --verbose`). */
SEDP_API void sedp_nn_plan_describe (const SedpNnPlan *plan, GString *out);

/* Makes OpenBLAS single-threaded (the default inside stage workers) or use @threads threads. */
SEDP_API void sedp_nn_set_blas_threads (int threads);

G_END_DECLS
