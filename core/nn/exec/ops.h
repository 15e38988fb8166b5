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
/* ops-norm.c */
gboolean nn_prepare_layernorm (OpCtx *c, GError **error);
/* ops-shape.c */
gboolean nn_prepare_split (OpCtx *c, GError **error);
gboolean nn_prepare_tile (OpCtx *c, GError **error);
gboolean nn_prepare_constant_of_shape (OpCtx *c, GError **error);
gboolean nn_prepare_range (OpCtx *c, GError **error);

/* An axis counted from the end when negative (not checked against the rank). */
static inline gint64
nn_norm_axis (gint64 axis, int rank)
{
  return axis < 0 ? axis + rank : axis;
}

/* A strided copy (ops-tensor.c): out[idx] = src[base + Σ idx[d] * strides[d]], out contiguous
 * of shape dims (Transpose, Slice, Expand, Tile, broadcast operands). */
typedef struct {
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 strides[SEDP_NN_MAX_RANK]; /* in source elements, per output axis */
  gint64 base;
  gint64 numel;
  gsize esize;
} CopyParams;
void nn_strided_copy (const CopyParams *p, const guint8 *src, guint8 *dst);
/* Row-major strides (in elements) of a contiguous tensor of shape @dims. */
void nn_contiguous_strides (int rank, const gint64 *dims, gint64 *strides);

/* Fused embedding lookup with pooling: Gather(table, ids) → ReduceSum/Mean over the ids axis. */
typedef struct {
  gint64 rows;   /* table rows */
  gint64 dim;    /* table columns */
  gint64 bags;   /* output rows */
  gint64 per_bag;
  gboolean mean;
} EmbeddingBagParams;
gboolean nn_kernel_embedding_bag (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);
