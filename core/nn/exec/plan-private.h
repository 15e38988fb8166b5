/* sedp — executor internals: values, steps (kernels), the plan, the operator table. */
#pragma once

#include "../plan.h"

#include <string.h>

#define NN_MAX_IN 256

/* Hot loops are compiled for AVX-512, AVX2 and a baseline, and the best one the CPU runs is
 * picked when the library loads (GCC function multi-versioning). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(SEDP_NN_NO_CLONES)
#define NN_HOT __attribute__ ((target_clones ("avx512f", "avx2", "default")))
#else
#define NN_HOT
#endif
/* The most outputs a node may have (Split into heads or gates: a step's out[] is this long). */
#define NN_MAX_OUT 64
#define NN_ALIGN 64

typedef enum {
  VALUE_TEMP = 0, /* computed at run time, stored in the arena */
  VALUE_INPUT,    /* a graph input, bound at run time */
  VALUE_CONST,    /* an initializer or a value folded at plan time */
  VALUE_ALIAS,    /* the same bytes as another value, with another shape (Reshape, …) */
} ValueKind;

typedef struct {
  const char *name;
  SedpNnDType dtype;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gint64 numel;
  ValueKind kind;
  gboolean known;      /* shape inferred */
  gpointer data;       /* CONST: the data (owned when owned_data) */
  gboolean owned_data;
  int alias_of;        /* VALUE_ALIAS: the value whose bytes these are */
  int input_index;     /* VALUE_INPUT: index among graph inputs */
  gsize offset;        /* VALUE_TEMP: offset in the arena */
  int def_step;        /* the step that writes it (-1: none) */
  int last_use;        /* the last step that reads it */
  guint n_consumers;   /* nodes reading it (for fusion) */
  gboolean is_output;  /* a graph output */
} Value;

typedef struct _Plan Plan;
typedef struct _Step Step;

/* A kernel: computes the step's outputs from its inputs. @ptrs holds every value's data. */
typedef gboolean (*KernelFn) (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);

struct _Step {
  KernelFn fn;
  const char *kernel;   /* kernel name, for describe */
  const SedpNnNode *node;
  guint n_in;
  int in[NN_MAX_IN];    /* value indexes; -1 for an omitted optional input */
  guint n_out;
  int out[NN_MAX_OUT];
  gpointer params;      /* kernel parameters (owned, g_free) */
  double flops;
};

struct _Plan {
  SedpNnModel *model;
  gint64 batch;
  guint n_values;
  Value *values;
  GHashTable *by_name;  /* value name -> index + 1 */
  GArray *steps;        /* Step */
  guint8 *arena;
  gsize arena_size;
  gboolean arena_mapped; /* arena from mmap (plan_arena_alloc), else from the heap */
  gpointer *ptrs;       /* per value, resolved */
  guint n_inputs;
  int *input_values;
  SedpNnTensor *input_info;
  guint n_outputs;
  int *output_values;
  SedpNnTensor *output_info;
  GArray *input_aliases; /* value indexes of aliases whose root is a graph input */
  double flops;
};

/* The builder's view while compiling one node. */
typedef struct {
  Plan *plan;
  const SedpNnNode *node;
  gint64 opset;
  Step *step;
} OpCtx;

/* Prepares a node: checks inputs, reads attributes, infers the outputs' dtypes and shapes (or
 * marks them aliases), and sets step->fn and step->params. */
typedef gboolean (*PrepareFn) (OpCtx *ctx, GError **error);

typedef struct {
  const char *op_type;
  PrepareFn prepare;
  gboolean shape_only; /* cheap metadata op: always folded when its inputs are constant */
  guint min_inputs;    /* required inputs (present, not "") */
  guint max_inputs;    /* inputs it may have */
} OpDef;

/* The operator table (ops.c). NULL when @op_type is not supported. */
const OpDef *nn_op_lookup (const char *op_type);

/* ---- helpers for prepare functions (ops.c) ---- */

static inline Value *
op_in (OpCtx *c, guint k)
{
  return k < c->step->n_in && c->step->in[k] >= 0 ? &c->plan->values[c->step->in[k]] : NULL;
}

static inline Value *
op_out (OpCtx *c, guint k)
{
  return &c->plan->values[c->step->out[k]];
}

/* The most elements one value may have, and the most bytes an arena may take: a model whose
 * shapes ask for more is refused at plan time instead of exhausting memory. */
#define NN_MAX_ELEMENTS (G_GINT64_CONSTANT (1) << 30)
#define NN_MAX_ARENA (G_GINT64_CONSTANT (1) << 34)

/* Product of @dims, saturating at G_MAXINT64 (never overflowing). */
static inline gint64
nn_numel (int rank, const gint64 *dims)
{
  gint64 n = 1;
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0 || __builtin_mul_overflow (n, dims[i], &n))
      return G_MAXINT64;
  return n;
}

/* Sets an output's dtype and shape. */
void nn_set_shape (Value *v, SedpNnDType dtype, int rank, const gint64 *dims);

/* An error naming the node: "node 'NAME' (OP): MESSAGE". */
void nn_node_error (GError **error, int code, const SedpNnNode *node, const char *fmt, ...)
    G_GNUC_PRINTF (4, 5);

/* Attribute helpers. */
gint64 nn_attr_int (const SedpNnNode *node, const char *name, gint64 dflt);
float nn_attr_float (const SedpNnNode *node, const char *name, float dflt);

/* Reads a constant int64 (or int32) input as a list; FALSE with an error if it is not constant. */
gboolean nn_const_ints (OpCtx *c, guint k, gint64 **out, guint *n, GError **error);

/* Refuses the form of parameter @name that the model's opset does not have: an attribute from
 * opset @input_from on, or input @input before it (an ignored form would silently change the
 * result). */
gboolean nn_check_param_form (OpCtx *c, const char *name, guint input, gint64 input_from,
                              GError **error);

/* Numpy broadcasting of two shapes; FALSE when they do not broadcast. */
gboolean nn_broadcast_shape (int ra, const gint64 *a, int rb, const gint64 *b, int *rank, gint64 *out);

/* ---- kernels' entry points used by fusion (kernels-gemm.c) ---- */

typedef enum { ACT_NONE = 0, ACT_RELU, ACT_SIGMOID, ACT_TANH, ACT_LEAKY_RELU } Activation;

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

gboolean nn_kernel_gemm (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);
void nn_apply_activation (float *y, gint64 n, Activation act, float leaky_alpha);

/* Folds a Transpose of the last two axes into the batched MatMul that reads it (ops-gemm.c). */
gboolean nn_fuse_transpose_into_matmul (Plan *p, Step *step);
void nn_free_step_params (Step *step);

/* Packs the constant weights of every Gemm/MatMul step of @p (shared by all plans). */
void nn_pack_weights (Plan *p);
