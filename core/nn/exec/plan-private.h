/* sedp — executor internals: values, steps (kernels), the plan, the operator table. */
#pragma once

#include "params.h"

#include <string.h>

/* Hot loops are compiled for AVX-512, AVX2 and a baseline, and the best one the CPU runs is
 * picked when the library loads (GCC function multi-versioning). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(SEDP_NN_NO_CLONES)
#define NN_HOT __attribute__ ((target_clones ("avx512f", "avx2", "default")))
#else
#define NN_HOT
#endif
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

/**
 * NnCompileOptions:
 * How nn_plan_compile builds a plan. All FALSE is the CPU engine's plan; another engine that
 * reuses the compiled plan (the OpenCL lowering, docs/opencl.md §2.3) sets what it needs.
 * nn_compile_options_from_env() maps the environment variables onto them.
 */
typedef struct {
  gboolean no_fuse_attention; /* keep target and self attention as separate steps
                               * (SEDP_NN_NO_FUSE_ATTENTION) */
  gboolean no_pack;           /* no packed copies of constant weights (gemm-packed.c): every
                               * product on OpenBLAS (SEDP_NN_NO_PACKED) */
  gboolean lazy_arena;        /* the arena is only reserved (mmap, MAP_NORESERVE) whatever its size,
                               * so that no page is resident until a run touches it */
} NnCompileOptions;

/* The options the CPU engine compiles with: SEDP_NN_NO_FUSE_ATTENTION and SEDP_NN_NO_PACKED set
 * in the environment (any value) set no_fuse_attention and no_pack; lazy_arena is FALSE. Read at
 * each call (plan time only). Thread-safe as g_getenv is. */
void nn_compile_options_from_env (NnCompileOptions *opts);

/* A kernel: computes the step's outputs from its inputs. @ptrs holds every value's data. */
typedef gboolean (*KernelFn) (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);

struct _Step {
  KernelFn fn;
  const char *kernel;   /* kernel name, for describe */
  NnKernelId id;        /* which kernel fn is, and what params points to (params.h); set with fn */
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
  GArray *wanted;       /* while compiling: graph input indexes (guint) whose values a node needed
                         * at plan time (nn_require_const); read by plan-special.c */
  struct _Special *special; /* non-NULL: a shell plan specialised at run time (plan-special.c) */
  NnCompileOptions options; /* what it was compiled with (a shell: what its plans compile with) */
  SedpNnDevice *device;     /* made by sedp_nn_plan_new_on with a device (referenced): runs there;
                             * a shell lowers each plan it compiles to it */
  struct _OclPlan *ocl;     /* the plan lowered to @device (core/nn/ocl/ocl-plan.c), or NULL */
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
  gint64 since;        /* the oldest opset whose definition of the operator the engine runs as it
                        * is (a model of an older opset that uses it is refused) */
  guint max_outputs;   /* outputs it may have; 0: one */
  guint64 optional_outputs; /* bit k: output k may be absent or ""; the others must be named (a
                             * prepare function writes them unconditionally). plan.c checks both,
                             * and that at least one output is named. */
} OpDef;

/* The operator table (ops.c). NULL when @op_type is not supported. */
const OpDef *nn_op_lookup (const char *op_type);

/* The value whose bytes @v's are (itself unless an alias). */
int nn_alias_root (const Plan *p, int v);

/* Points the plan's ptrs at the run's graph inputs (and the aliases of them). */
void nn_plan_bind_inputs (Plan *p, const SedpNnTensor *inputs);

/* ---- the OpenCL lowering (core/nn/ocl/ocl-plan.c; ocl-none.c in a build without OpenCL) ---- */

/* Lowers the compiled plan @p to @device (docs/opencl.md §2.2): uploads or finds its constants,
 * makes its device arena and commands, and sets p->ocl. FALSE with a SEDP_NN_ERROR_DEVICE error
 * naming the node and the device. */
gboolean nn_ocl_plan_lower (Plan *p, SedpNnDevice *device, GError **error);
/* sedp_nn_plan_run of a lowered plan (inputs already checked). */
gboolean nn_ocl_plan_run (Plan *p, const SedpNnTensor *inputs, guint n_outputs,
                          SedpNnTensor *outputs, GError **error);
void nn_ocl_plan_free (struct _OclPlan *o);
/* Appends the device and each command's lowering to a description. */
void nn_ocl_plan_describe (const Plan *p, GString *out);

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

/* Checks that input @k of the node is known at plan time: an initializer, a Constant, a value
 * folded from them, or a graph input the plan is specialised on. When it is not, records the
 * graph inputs it is computed from in the plan's wanted list (so that sedp_nn_plan_new makes a
 * plan specialised on their values at run time, plan-special.c) and fails with
 * SEDP_NN_ERROR_UNSUPPORTED: "input K must be a constant …". A missing optional input passes. */
gboolean nn_require_const (OpCtx *c, guint k, GError **error);
/* Adds a scratch value of @numel floats to the step being prepared, as one more output after
 * the node's: run-time memory in the plan's arena, live during this step only (shared with other
 * steps' values). Returns its position in c->step->out. One per step (the plan reserves one value
 * per node); the step must have fewer than NN_MAX_OUT outputs (plan.c). */
int nn_add_scratch (OpCtx *c, gint64 numel);

/* Reads a constant int64 (or int32) input as a list; FALSE with an error if it is not constant. */
gboolean nn_const_ints (OpCtx *c, guint k, gint64 **out, guint *n, GError **error);

/* Refuses the form of parameter @name that the model's opset does not have: an attribute from
 * opset @input_from on, or input @input before it (an ignored form would silently change the
 * result). */
gboolean nn_check_param_form (OpCtx *c, const char *name, guint input, gint64 input_from,
                              GError **error);

/* Numpy broadcasting of two shapes; FALSE when they do not broadcast. */
gboolean nn_broadcast_shape (int ra, const gint64 *a, int rb, const gint64 *b, int *rank, gint64 *out);

/* Element strides of an input of shape (@r, @d) in the index space of an output of rank @rank
 * and dims @out_dims that it broadcasts to: 0 along the axes where it is broadcast. */
void nn_broadcast_strides (int r, const gint64 *d, int rank, const gint64 *out_dims, gint64 *strides);

/* ---- kernels' entry points used by fusion (kernels-gemm.c) ---- */

gboolean nn_kernel_gemm (const Plan *plan, const Step *step, gpointer const *ptrs, GError **error);
/* y = act (x), elementwise over @n floats; @y may be @x. nn_apply_activation works in place. */
void nn_map_activation (const float *x, float *y, gint64 n, Activation act, float leaky_alpha);
void nn_apply_activation (float *y, gint64 n, Activation act, float leaky_alpha);

/* Whether @s is a batched MatMul (one product per matrix of a batch, B of rank ≥ 3), and whether
 * it reads B transposed (a Transpose folded in). */
gboolean nn_step_is_batched_matmul (const Step *s, gboolean *trans_b);

/* Folds a Transpose of the last two axes into the batched MatMul that reads it (ops-gemm.c). */
gboolean nn_fuse_transpose_into_matmul (Plan *p, Step *step);
void nn_free_step_params (Step *step);
/* Frees what a GRU step's params own besides themselves; no-op for other steps (ops-rnn.c). */
void nn_free_rnn_params (Step *step);

/* ---- compiling (plan.c) and plans specialised on parameters given at run time (plan-special.c) ---- */

/* Compiles @model at @batch with @opts. @param_data (nullable, one entry per graph input) gives
 * the values of the graph inputs the plan is specialised on: those inputs become constants
 * (copied). When a node needs the value of another graph input, its index is added to @wanted
 * (nullable) and the compile fails. */
Plan *nn_plan_compile (SedpNnModel *model, gint64 batch, const NnCompileOptions *opts,
                       gconstpointer const *param_data, GArray *wanted, GError **error);
/* sedp_nn_plan_new with @opts instead of the environment's (a plan specialised at run time
 * compiles its plans with them too). Same contract otherwise. */
Plan *nn_plan_new_with_options (SedpNnModel *model, gint64 batch, const NnCompileOptions *opts,
                                GError **error);
/* Checks a run's inputs against the plan's dtypes and shapes. */
gboolean nn_plan_check_inputs (const Plan *p, guint n_inputs, const SedpNnTensor *inputs, GError **error);

typedef struct _Special Special;
/* Makes @shell (a plan with its inputs bound and no steps) a plan specialised at run time on the
 * graph inputs @wanted. FALSE with @error when one of them is too large to be a parameter. */
gboolean nn_special_attach (Plan *shell, GArray *wanted, GError **error);
/* Runs a specialised plan: finds or compiles the plan for the parameters' values, runs it. */
gboolean nn_special_run (Plan *shell, guint n_inputs, const SedpNnTensor *inputs, guint n_outputs,
                         SedpNnTensor *outputs, GError **error);
/* The plan of the last run of a specialised plan (itself before the first run, or if not one). */
const Plan *nn_special_current (const Plan *p);
/* Appends a line about the parameters to a description (nothing for an ordinary plan). */
void nn_special_describe (const Plan *p, GString *out);
void nn_special_free (Special *special);

/* Target attention (fuse-attention.c): a Gemm over Concat(Expand(q), K, E − K, E ⊙ K, …) becomes
 * one kernel that computes q's share once per row. Run on the steps before packing; off with
 * the plan's options.no_fuse_attention (SEDP_NN_NO_FUSE_ATTENTION in the environment). */
void nn_fuse_target_attention (Plan *p);
/* Multi-head self-attention (fuse-attention.c): MatMul (Q, Kᵀ) → Div or Mul by a scalar → Where
 * or Add mask → Softmax → MatMul (·, V), with the head Transposes around it, becomes one kernel
 * that keeps each row of scores in registers. Off with options.no_fuse_attention too. */
void nn_fuse_self_attention (Plan *p);
void nn_free_target_attention (Step *step);

/* Packs the constant weights of every Gemm/MatMul step of @p (shared by all plans); nothing with
 * the plan's options.no_pack. */
void nn_pack_weights (Plan *p);
