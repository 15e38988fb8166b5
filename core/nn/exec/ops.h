/* sedp — prepare functions of the operators (shape inference, attributes, kernel choice). */
#pragma once

#include "plan-private.h"

gboolean nn_prepare_gemm (OpCtx *c, GError **error);
gboolean nn_prepare_matmul (OpCtx *c, GError **error);
/* MatMul's step for the node's two float inputs read as shapes (@a_rank, @a_dims) and
 * (@b_rank, @b_dims) (views of their bytes: the same element counts), B's last two axes swapped
 * when @trans_b (B stored [..., N, K]); the output's shape is the product's (ops-gemm.c). */
gboolean nn_prepare_matmul_as (OpCtx *c, int a_rank, const gint64 *a_dims, int b_rank,
                               const gint64 *b_dims, gboolean trans_b, GError **error);
/* Einsum, the forms exports write, lowered to MatMul's kernels (ops-einsum.c). */
gboolean nn_prepare_einsum (OpCtx *c, GError **error);
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
/* Comparisons, logic and Where (ops-logic.c); Pow and Sum/Max/Min/Mean (ops-math.c). */
gboolean nn_prepare_compare (OpCtx *c, GError **error);
gboolean nn_prepare_not (OpCtx *c, GError **error);
gboolean nn_prepare_logic (OpCtx *c, GError **error);
gboolean nn_prepare_where (OpCtx *c, GError **error);
gboolean nn_prepare_pow (OpCtx *c, GError **error);
gboolean nn_prepare_variadic (OpCtx *c, GError **error);
gboolean nn_prepare_gru (OpCtx *c, GError **error);
/* ops-norm.c */
gboolean nn_prepare_layernorm (OpCtx *c, GError **error);
/* ops-shape.c */
gboolean nn_prepare_split (OpCtx *c, GError **error);
gboolean nn_prepare_tile (OpCtx *c, GError **error);
gboolean nn_prepare_constant_of_shape (OpCtx *c, GError **error);
gboolean nn_prepare_range (OpCtx *c, GError **error);
/* PRelu and the activations with attributes (ops-act.c); Mod (ops-math.c); IsNaN and IsInf
 * (ops-logic.c); Size (ops-tensor.c). */
gboolean nn_prepare_prelu (OpCtx *c, GError **error);
gboolean nn_prepare_param_act (OpCtx *c, GError **error);
gboolean nn_prepare_mod (OpCtx *c, GError **error);
gboolean nn_prepare_is (OpCtx *c, GError **error);
gboolean nn_prepare_size (OpCtx *c, GError **error);
/* ops-index.c */
gboolean nn_prepare_argmax (OpCtx *c, GError **error);
gboolean nn_prepare_topk (OpCtx *c, GError **error);
gboolean nn_prepare_cumsum (OpCtx *c, GError **error);
gboolean nn_prepare_gather_elements (OpCtx *c, GError **error);
gboolean nn_prepare_onehot (OpCtx *c, GError **error);
gboolean nn_prepare_trilu (OpCtx *c, GError **error);

/* Element @i of an array of numeric type @t (float, double, int64, int32, int8, uint8, bool) as
 * a double (ops-math.c). */
double nn_load_double (SedpNnDType t, gconstpointer p, gint64 i);

/* An axis counted from the end when negative (not checked against the rank). */
static inline gint64
nn_norm_axis (gint64 axis, int rank)
{
  return axis < 0 ? axis + rank : axis;
}

void nn_strided_copy (const CopyParams *p, const guint8 *src, guint8 *dst);
/* Row-major strides (in elements) of a contiguous tensor of shape @dims. */
void nn_contiguous_strides (int rank, const gint64 *dims, gint64 *strides);

gboolean nn_kernel_embedding_bag (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);

/* The row of a table of operators (an array of structs whose first field is `const char *op`)
 * for the node's operator; the last row when none matches (the operator table sends only the
 * operators a table lists to its prepare function). */
#define NN_OP_ROW(c, table) \
  nn_op_row ((c)->node->op_type, &(table)[0].op, sizeof (table)[0], G_N_ELEMENTS (table))
guint nn_op_row (const char *op_type, const char *const *first, gsize stride, guint n);

/* ---- elementwise operators with numpy broadcasting (ops.c, ops-math.c) ---- */

/* The numpy broadcast shape of the @n values @in; FALSE with a SEDP_NN_ERROR_SHAPE error naming
 * every shape when they do not broadcast. */
gboolean nn_broadcast_values (OpCtx *c, guint n, Value *const *in, int *rank, gint64 *dims,
                              GError **error);

/* Fills @b for an output of shape (@rank, @dims) read from the @n (≤ NN_BCAST_MAX_IN) values @in,
 * which broadcast to it. */
void nn_broadcast_set (Broadcast *b, int rank, const gint64 *dims, guint n, Value *const *in);

/* Advances the index @idx of a row (every axis but the last) to the next row, keeping the
 * offsets @off of the @n operands in step. */
static inline void
nn_broadcast_next_row (const Broadcast *b, guint n, gint64 *idx, gint64 *off)
{
  for (int d = b->rank - 2; d >= 0; d--) {
    idx[d]++;
    for (guint k = 0; k < n; k++)
      off[k] += b->strides[k][d];
    if (idx[d] < b->dims[d])
      return;
    for (guint k = 0; k < n; k++)
      off[k] -= b->strides[k][d] * idx[d];
    idx[d] = 0;
  }
}

/* The length of a walk's rows (its last axis) and operand @k's stride along it (0 or 1). */
#define NN_BCAST_INNER(b) ((b)->rank ? (b)->dims[(b)->rank - 1] : 1)
#define NN_BCAST_ISTRIDE(b, k) ((b)->rank ? (b)->strides[k][(b)->rank - 1] : 0)

/* BIN_LOOP (NAME, TA, TB, TY, OPX) defines the BroadcastFn NAME: y = OPX (a, b) for operands of
 * types TA and TB and a result of type TY, with a loop per row for each of the four cases of
 * contiguous or broadcast operands along the last axis. */
#define BIN_LOOP(NAME, TA, TB, TY, OPX)                                                          \
  NN_HOT static void NAME (const Broadcast *p, gconstpointer va, gconstpointer vb,               \
                           gconstpointer vc, gpointer vy)                                       \
  {                                                                                              \
    const TA *a = va;                                                                            \
    const TB *b = vb;                                                                            \
    gint64 inner = NN_BCAST_INNER (p), ia = NN_BCAST_ISTRIDE (p, 0), ib = NN_BCAST_ISTRIDE (p, 1); \
    gint64 outer = inner ? p->numel / inner : 0;                                                 \
    gint64 idx[SEDP_NN_MAX_RANK] = {0}, off[2] = {0};                                            \
    for (gint64 o = 0; o < outer; o++) {                                                         \
      const TA *pa = a + off[0];                                                                 \
      const TB *pb = b + off[1];                                                                 \
      TY *py = (TY *) vy + o * inner;                                                            \
      if (ia && ib)                                                                              \
        for (gint64 i = 0; i < inner; i++)                                                       \
          py[i] = OPX (pa[i], pb[i]);                                                            \
      else if (ia)                                                                               \
        for (gint64 i = 0; i < inner; i++)                                                       \
          py[i] = OPX (pa[i], pb[0]);                                                            \
      else if (ib)                                                                               \
        for (gint64 i = 0; i < inner; i++)                                                       \
          py[i] = OPX (pa[0], pb[i]);                                                            \
      else                                                                                       \
        for (gint64 i = 0; i < inner; i++)                                                       \
          py[i] = OPX (pa[0], pb[0]);                                                            \
      nn_broadcast_next_row (p, 2, idx, off);                                                    \
    }                                                                                            \
  }

/* Prepares a step that runs @fn over the broadcast of its first @n inputs into one output of
 * @dtype (@op: what @fn computes, which gives the step's kernel id; kernel name @kernel; one FLOP
 * per output element). */
gboolean nn_prepare_broadcast (OpCtx *c, guint n, BroadcastFn fn, SedpNnDType dtype, NnElemOp op,
                               const char *kernel, GError **error);

/* Softmax of @n contiguous values (the usual last axis; @y may be @x): e^(x − max) vectorized
 * (fast-math.h), summed in double (ops-math.c). */
void nn_softmax_row (const float *x, float *y, gint64 n);
