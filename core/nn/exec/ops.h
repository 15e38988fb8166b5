/* sedp — prepare functions of the operators (shape inference, attributes, kernel choice). */
#pragma once

#include "plan-private.h"

gboolean nn_prepare_gemm (OpCtx *c, GError **error);
gboolean nn_prepare_matmul (OpCtx *c, GError **error);
gboolean nn_prepare_binary (OpCtx *c, GError **error);
gboolean nn_prepare_unary (OpCtx *c, GError **error);
gboolean nn_prepare_clip (OpCtx *c, GError **error);
gboolean nn_prepare_softmax (OpCtx *c, GError **error);
gboolean nn_prepare_batchnorm (OpCtx *c, GError **error);
gboolean nn_prepare_cast (OpCtx *c, GError **error);
gboolean nn_prepare_concat (OpCtx *c, GError **error);
gboolean nn_prepare_gather (OpCtx *c, GError **error);
gboolean nn_prepare_reshape (OpCtx *c, GError **error);
gboolean nn_prepare_flatten (OpCtx *c, GError **error);
gboolean nn_prepare_squeeze (OpCtx *c, GError **error);
gboolean nn_prepare_unsqueeze (OpCtx *c, GError **error);
gboolean nn_prepare_identity (OpCtx *c, GError **error);
gboolean nn_prepare_transpose (OpCtx *c, GError **error);
gboolean nn_prepare_reduce (OpCtx *c, GError **error);
gboolean nn_prepare_constant (OpCtx *c, GError **error);
gboolean nn_prepare_shape_op (OpCtx *c, GError **error);
gboolean nn_prepare_slice (OpCtx *c, GError **error);
gboolean nn_prepare_expand (OpCtx *c, GError **error);
gboolean nn_prepare_gru (OpCtx *c, GError **error);

/* Fused embedding lookup with pooling: Gather(table, ids) → ReduceSum/Mean over the ids axis. */
typedef struct {
  gint64 rows;   /* table rows */
  gint64 dim;    /* table columns */
  gint64 bags;   /* output rows */
  gint64 per_bag;
  gboolean mean;
} EmbeddingBagParams;
gboolean nn_kernel_embedding_bag (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);
