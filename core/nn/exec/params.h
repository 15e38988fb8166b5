/* sedp — what a compiled step is: its kernel id (NnKernelId) and the parameter struct its
 * `params` points to, per kernel. Shared by the CPU kernels (ops-*.c, fuse-attention.c) and by
 * whatever else reads a compiled plan (the OpenCL lowering, docs/opencl.md §2.3), which switches
 * on the id and reads these structs; nothing here is used at run time to pick a kernel (the CPU
 * engine calls step->fn). */
#pragma once

#include "../plan.h"

/* The most inputs and outputs a step may have (Concat's inputs; Split into heads or gates: a
 * step's out[] is NN_MAX_OUT long). */
#define NN_MAX_IN 256
#define NN_MAX_OUT 64

/**
 * NnKernelId:
 * Which CPU kernel a step runs, set at compile time next to step->fn (one id per kernel
 * function; a function that serves several operator families through a function pointer, the
 * broadcast walk, has one id per family). A step's `params` is the struct named per id.
 * NN_KERNEL_UNKNOWN (0) is never the id of a step in a compiled plan (tests/nn/test-plan-ids.c).
 */
typedef enum {
  NN_KERNEL_UNKNOWN = 0,
  NN_KERNEL_GEMM,             /* GemmParams: Gemm, MatMul with a 2-D B, + fused bias and activation
                               * ("gemm", "matmul", "gemm+bias", "gemm+relu", …) */
  NN_KERNEL_MATMUL_BATCHED,   /* BatchedParams: "matmul_batched", "matmul_batched_tb" */
  NN_KERNEL_BINARY,           /* BroadcastParams: Add, Sub, Mul, Div (float, int64) */
  NN_KERNEL_COMPARE,          /* BroadcastParams: Equal, Less, Greater, LessOrEqual,
                               * GreaterOrEqual */
  NN_KERNEL_LOGIC,            /* BroadcastParams: And, Or, Xor */
  NN_KERNEL_MOD,              /* BroadcastParams: Mod ("fmod", "mod") */
  NN_KERNEL_POW,              /* BroadcastParams: Pow ("pow", "pow2", "pow_half") */
  NN_KERNEL_PRELU,            /* BroadcastParams: PRelu */
  NN_KERNEL_WHERE,            /* BroadcastParams (three operands): Where */
  NN_KERNEL_VARIADIC,         /* VariadicParams: Sum, Max, Min, Mean */
  NN_KERNEL_UNARY,            /* UnaryParams: Relu … Round, Neg and Abs of int64 */
  NN_KERNEL_PARAM_ACT,        /* ParamActParams: Softplus … ThresholdedRelu */
  NN_KERNEL_CLIP,             /* ClipParams */
  NN_KERNEL_CAST,             /* CastParams: Cast, CastLike */
  NN_KERNEL_NOT,              /* no params: Not */
  NN_KERNEL_IS,               /* IsParams: IsNaN, IsInf */
  NN_KERNEL_SOFTMAX,          /* SoftmaxParams: "softmax", "log_softmax", "hardmax" */
  NN_KERNEL_BATCHNORM,        /* BatchNormParams */
  NN_KERNEL_LAYERNORM,        /* LayerNormParams */
  NN_KERNEL_REDUCE,           /* ReduceParams: the ten Reduce operators */
  NN_KERNEL_EMBEDDING_BAG,    /* EmbeddingBagParams: Gather + ReduceSum/Mean, fused (plan.c) */
  NN_KERNEL_GATHER,           /* GatherParams */
  NN_KERNEL_GATHER_ELEMENTS,  /* GatherElementsParams */
  NN_KERNEL_STRIDED_COPY,     /* CopyParams: "transpose", "slice", "expand" */
  NN_KERNEL_TILE,             /* CopyParams: X viewed as [r0, d0, r1, d1, …], stride 0 on each r */
  NN_KERNEL_CONCAT,           /* ConcatParams */
  NN_KERNEL_SPLIT,            /* SplitParams */
  NN_KERNEL_ARG,              /* ArgParams: ArgMax, ArgMin */
  NN_KERNEL_TOPK,             /* TopKParams */
  NN_KERNEL_CUMSUM,           /* CumSumParams */
  NN_KERNEL_ONEHOT,           /* OneHotParams */
  NN_KERNEL_TRILU,            /* TriluParams */
  NN_KERNEL_GRU,              /* GruParams: "gru", "gru_lbr" */
  NN_KERNEL_TARGET_ATTENTION, /* TargetAttParams: fused DIN attention (fuse-attention.c) */
  NN_KERNEL_SELF_ATTENTION,   /* SelfAttParams: fused multi-head attention (fuse-attention.c) */
  NN_KERNEL_RETIRED,          /* no params, n_out 0: folded into another step ("folded") */
  NN_KERNEL_N
} NnKernelId;

/* The id's name ("gemm", "binary", …; "unknown" for 0 or out of range), for tests and messages. */
SEDP_API const char *nn_kernel_id_name (NnKernelId id);

/* Elementwise float functions: the activations a Gemm/MatMul step may apply to its output, and
 * the unary operators of ops-math.c. */
typedef enum {
  ACT_NONE = 0,
  ACT_RELU,
  ACT_SIGMOID,
  ACT_TANH,
  ACT_LEAKY_RELU,
  ACT_EXP,
  ACT_LOG,
  ACT_SQRT,
  ACT_NEG,
  ACT_ABS,
  ACT_RECIPROCAL,
  ACT_ERF,
  ACT_FLOOR,
  ACT_CEIL,
  ACT_SIGN,
  ACT_SIN,
  ACT_COS,
  ACT_ROUND,
} Activation;

/* ---- GEMM (ops-gemm.c) ---- */

/* Y[M,N] = act(alpha * op(A) op(B) + bias) where bias (nullable) broadcasts to [M,N]. */
typedef struct {
  gboolean trans_a, trans_b;
  gint64 M, N, K;
  float alpha, beta;
  int bias_kind;      /* 0 none, 1 scalar, 2 row [N], 3 column [M], 4 full [M,N] */
  Activation act;
  float leaky_alpha;
  struct _PackedB *packed; /* B packed once, when it is a constant (gemm-packed.c) */
} GemmParams;

/* Batched MatMul with numpy broadcasting: one sgemm per matrix of the batch. */
typedef struct {
  gint64 batch, M, N, K;
  gboolean trans_b;      /* B is stored [N, K] (a Transpose before the MatMul was folded in) */
  gint64 *a_off, *b_off; /* element offsets of each matrix of the batch */
} BatchedParams;

/* ---- elementwise with numpy broadcasting (ops.c, ops-math.c, ops-logic.c, ops-act.c) ---- */

/* The most operands one broadcast walk reads (Where's three). */
#define NN_BCAST_MAX_IN 3

/* A walk over a broadcast output: its shape, and each operand's element strides in the
 * output's index space (0 along the axes it is broadcast over; nn_broadcast_strides). */
typedef struct {
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 numel;
  gint64 strides[NN_BCAST_MAX_IN][SEDP_NN_MAX_RANK];
} Broadcast;

/* An elementwise kernel over a walk: y = f (a, b[, c]) (c is NULL for two operands). */
typedef void (*BroadcastFn) (const Broadcast *p, gconstpointer a, gconstpointer b, gconstpointer c,
                             gpointer y);

/* What the loop of a BroadcastParams or VariadicParams computes, per output element, for a reader
 * that cannot call it (the CPU engine only calls fn). The kernel id follows from it
 * (nn_prepare_broadcast). */
typedef enum {
  NN_ELEM_ADD,
  NN_ELEM_SUB,
  NN_ELEM_MUL,
  NN_ELEM_DIV,              /* int64: x / 0 is 0 */
  NN_ELEM_EQUAL,
  NN_ELEM_LESS,
  NN_ELEM_GREATER,
  NN_ELEM_LESS_OR_EQUAL,
  NN_ELEM_GREATER_OR_EQUAL,
  NN_ELEM_AND,
  NN_ELEM_OR,
  NN_ELEM_XOR,
  NN_ELEM_FMOD,             /* Mod with fmod = 1: the dividend's sign (int64: 0 for y 0 or -1) */
  NN_ELEM_MOD,              /* int64 Mod with fmod = 0: floored, the divisor's sign; x mod 0 is 0 */
  NN_ELEM_POW,              /* (float) pow ((double) x, (double) y), y float, int64 or int32 */
  NN_ELEM_POW2,             /* a constant exponent 2: x · x */
  NN_ELEM_POW_HALF,         /* a constant exponent 0.5: sqrt, with -∞ → +∞ and -0 → +0 */
  NN_ELEM_PRELU,            /* x < 0 ? slope · x : x */
  NN_ELEM_WHERE,            /* three operands: cond ? x : y */
  NN_ELEM_MAX,              /* variadic Max: NaN wins for float */
  NN_ELEM_MIN,              /* variadic Min: NaN wins for float */
} NnElemOp;

/* A step of nn_prepare_broadcast: the walk and the loop over it. */
typedef struct {
  Broadcast b;
  BroadcastFn fn;
  NnElemOp op;                          /* what fn computes */
  SedpNnDType in_dtype[NN_BCAST_MAX_IN]; /* the operands' types (Where: bool, then X's twice) */
  SedpNnDType out_dtype;
} BroadcastParams;

/* Folds the inputs left to right into the output: walk 0 combines inputs 0 and 1, walk k - 1
 * the output so far with input k; Mean divides by n at the end. */
typedef struct {
  guint n;
  gsize esize;
  BroadcastFn fn;
  NnElemOp op;       /* what fn computes: ADD (Sum, Mean), MAX or MIN */
  gboolean mean;
  Broadcast walks[]; /* n - 1 */
} VariadicParams;

/* A unary step: @act over @n elements, of float (or of int64 for Neg and Abs). */
typedef struct {
  gint64 n;
  Activation act;   /* float */
  float alpha;      /* LeakyRelu */
  gboolean int64;   /* Neg or Abs of int64 */
} UnaryParams;

typedef enum {
  PACT_SOFTPLUS,
  PACT_SOFTSIGN,
  PACT_ELU,
  PACT_SELU,
  PACT_CELU,
  PACT_HARD_SIGMOID,
  PACT_HARD_SWISH,
  PACT_THRESHOLDED_RELU,
} ParamAct;

/* An activation step: the function and its attributes (no pointers: g_free). */
typedef struct {
  ParamAct act;
  float alpha, beta; /* beta: HardSigmoid's beta, Selu's gamma */
  gint64 n;
} ParamActParams;

typedef struct {
  float lo, hi;
  gint64 n;
} ClipParams;

typedef struct {
  SedpNnDType from, to;
  gint64 n;
} CastParams;

/* What a step detects (no pointers: g_free). */
typedef struct {
  gboolean nan;          /* IsNaN; else IsInf: */
  gboolean neg, pos;     /* detect_negative, detect_positive */
} IsParams;

/* ---- softmax and normalisation (ops-math.c, ops-norm.c) ---- */

/* One lane: @n elements @stride apart in @x, written at the same places in @y. */
typedef void (*LaneFn) (const float *x, float *y, gint64 n, gint64 stride);

typedef enum { SOFTMAX_PLAIN, SOFTMAX_LOG, SOFTMAX_HARD } SoftmaxKind;

/* [outer, axis_len, inner]: a lane per (outer, inner) index (no pointers: g_free). */
typedef struct {
  gint64 outer, axis_len, inner;
  LaneFn lane;
  SoftmaxKind kind; /* what lane computes: Softmax, LogSoftmax or Hardmax */
} SoftmaxParams;

/* BatchNormalization (inference): y = x * a[c] + b[c]. */
typedef struct {
  gint64 n, channels, inner;
  float *a, *b;
} BatchNormParams;

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

/* LayerNormalization: X seen as [rows, cols], cols the product of the normalised dimensions
 * (axis on). Scale and B are read as [cols]; one that broadcasts from a smaller shape is
 * expanded to [cols] at each run by its copy. No pointers: freed with g_free. */
typedef struct {
  gint64 rows, cols;
  double epsilon;
  gboolean expand_scale, expand_bias; /* broadcast: expanded by scale_copy / bias_copy */
  CopyParams scale_copy, bias_copy;
} LayerNormParams;

/* ---- tensors and reductions (ops-tensor.c, ops-shape.c) ---- */

typedef struct {
  gint64 outer;
  gsize esize;
  guint n;
  gint64 chunk[NN_MAX_IN]; /* elements per outer index, per input */
  gint64 total;            /* Σ chunk */
} ConcatParams;

/* X seen as [outer, total] split into chunks of [outer, chunk[k]]. No pointers (g_free). */
typedef struct {
  gint64 outer;
  gsize esize;
  guint n;
  gint64 chunk[NN_MAX_OUT]; /* elements per outer index, per output */
  gint64 total;             /* Σ chunk */
} SplitParams;

typedef struct {
  gint64 outer, axis_len, inner, n_idx;
  gsize esize;
  gboolean idx64;
} GatherParams;

/* Fused embedding lookup with pooling: Gather(table, ids) → ReduceSum/Mean over the ids axis. */
typedef struct {
  gint64 rows;   /* table rows */
  gint64 dim;    /* table columns */
  gint64 bags;   /* output rows */
  gint64 per_bag;
  gboolean mean;
} EmbeddingBagParams;

typedef enum {
  RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L2, RED_SUM_SQUARE, RED_LOG_SUM_EXP,
  RED_L1, RED_LOG_SUM,
} ReduceOp;

/* A reduction's parameters (no pointers: freed with g_free). */
typedef struct {
  ReduceOp op;
  gint64 outer, red, inner; /* contiguous case: [outer, red, inner] → [outer, inner] */
  /* general case (reduced axes not adjacent, or int64): each input element's output offset */
  gboolean general;
  gboolean int64;           /* int64 ReduceMax/Min (always the general case) */
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 out_strides[SEDP_NN_MAX_RANK]; /* 0 on reduced axes */
  gint64 out_numel, in_numel;
  double divisor;           /* elements per output (ReduceMean) */
} ReduceParams;

/* ---- along an axis, with indices (ops-index.c) ---- */

/* X seen as [outer, len, inner] around one axis: a lane of len elements inner apart per
 * (outer, inner) index. */
typedef struct {
  gint64 outer, len, inner;
} AxisLanes;

/* No pointers (g_free). */
typedef struct {
  AxisLanes l;
  gboolean max, last, int64;
} ArgParams;

/* No pointers (g_free). */
typedef struct {
  AxisLanes l;
  gint64 k;
  gboolean largest, int64;
  int scratch; /* position in the step's outputs of the scratch (a lane's indices) */
} TopKParams;

/* No pointers (g_free). */
typedef struct {
  AxisLanes l;
  gboolean exclusive, reverse, int64;
} CumSumParams;

/* The walk over the indices (no pointers: g_free). */
typedef struct {
  int rank, axis;
  gint64 dims[SEDP_NN_MAX_RANK];     /* the indices' (and the output's) shape */
  gint64 strides[SEDP_NN_MAX_RANK];  /* data's strides, 0 on the axis */
  gint64 axis_len, axis_stride, numel;
  gsize esize;
  gboolean idx64;
} GatherElementsParams;

/* The output as [outer, depth, inner] (no pointers: g_free). */
typedef struct {
  gint64 outer, depth, inner;
  SedpNnDType idtype;
  gsize esize;
  guint8 off[8], on[8]; /* values[0], values[1] */
} OneHotParams;

/* No pointers (g_free). */
typedef struct {
  gint64 batch, rows, cols, k;
  gboolean upper;
  gsize esize;
} TriluParams;

/* ---- recurrent (ops-rnn.c) ---- */

/* A GRU step's parameters. Owns bias_x, bias_h and the references to the packed weights
 * (nn_free_rnn_params releases them); w and r point into the model's initializers. */
typedef struct {
  gint64 seq, batch, input, hidden;
  int dirs;               /* 1, or 2 for bidirectional */
  gboolean reverse;       /* direction "reverse" (dirs 1) */
  gboolean layout;        /* 1: X [batch, seq, input], Y [batch, seq, dirs, H], Y_h [batch, dirs, H] */
  gboolean lbr;           /* linear_before_reset */
  Activation f[2], g[2];  /* per direction: the gates' activation, the candidate's */
  float clip;             /* > 0: pre-activations clipped to [-clip, clip] */
  const float *w, *r;     /* [dirs, 3H, input], [dirs, 3H, H] */
  float *bias_x;          /* [dirs, 3H]: Wb, plus Rb for z and r (and h when !lbr) */
  float *bias_h;          /* [dirs, 3H]: 0, 0, Rb_h (lbr only) */
  struct _PackedB *pw[2];  /* W_d [3H, input] packed, or NULL (cblas) */
  struct _PackedB *pr[2];  /* lbr: R_d [3H, H]; else R_d's z, r rows [2H, H] */
  struct _PackedB *prh[2]; /* !lbr: R_d's h rows [H, H] */
  int scratch;            /* position of the scratch value in step->out */
} GruParams;

/* ---- fused attention (fuse-attention.c) ---- */

/* Target attention's parameters; owns the folded weights and their packed forms. */
typedef struct {
  gint64 B, L, D, N;
  float *wkm;       /* [2D, N]: Wk then Wqk */
  float *wq;        /* [D, N] */
  struct _PackedB *pkm, *pq; /* packed forms (NULL where no packed kernel fits or no_pack) */
  Activation act;
  float leaky_alpha;
  gboolean has_bias; /* in[2] is a row of N biases */
} TargetAttParams;

typedef enum { MASK_NONE, MASK_FILL_WHEN_TRUE, MASK_FILL_WHEN_FALSE, MASK_ADD } MaskMode;

/* Self-attention's parameters. Strides are in elements over (b, h, l); D is contiguous. */
typedef struct {
  gint64 B, H, Lq, Lk, D;
  gint64 qs[3], ks[3], vs[3], os[3];
  float c;          /* the scale's constant */
  gboolean divide;  /* S / c, else S · c */
  MaskMode mask;
  float fill;       /* Where's constant */
  gint64 ms[4];     /* the mask's strides over (b, h, i, j), 0 where broadcast */
} SelfAttParams;
