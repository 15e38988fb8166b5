/* sedp — the OpenCL engine's internals (docs/opencl.md §2.2): the device record, the program of
 * our kernels, OpenCL error names. Compiled only with the `opencl` feature (SEDP_HAVE_OPENCL). */
#pragma once

#define CL_TARGET_OPENCL_VERSION 120 /* OpenCL 1.2 API: PoCL, NVIDIA, AMD, Intel all have it */
#include <CL/cl.h>
#include <clblast_c.h>

#include <glib.h>
#include <sedp/engine.h>

/* A stream (ocl-streams.c, docs/opencl.md §5.1), created on first use: on a device with
 * overlap, three in-order queues chained by events per run (uploads, the compute commands,
 * downloads), so that one run's upload and another's download proceed while a third computes;
 * otherwise (a CPU device) one in-order queue, @up and @down then being @queue. */
typedef struct {
  cl_command_queue queue;     /* compute; NULL until first picked; set (last) under the device's
                               * lock, after up and down */
  cl_command_queue up, down;  /* uploads, downloads: == queue without overlap */
  gint in_flight;             /* atomic: runs picked and not done */
} OclStream;

/* A constant uploaded once per device (ocl-weights.c), shared by every plan that reads it. */
typedef struct {
  cl_mem mem;
  gsize bytes;
  guint refs;                 /* plans holding it, under the device's lock; freed at 0 */
  char *key;                  /* owned: the store's key */
} OclWeight;

/* An open device (ocl-device.c). The fields up to local_sizes are set at open and immutable
 * afterwards; the rest is guarded as said. */
struct _SedpNnDevice {
  gint ref_count;             /* atomic; the registry's lock orders the last unref with opens */
  guint index;                /* in sedp_nn_device_list's order */
  char *label;                /* "N (PLATFORM: DEVICE)" */
  char *name;                 /* "PLATFORM: DEVICE" */
  cl_platform_id platform;
  cl_device_id id;
  cl_context context;
  cl_device_type type;
  gboolean unified_memory, fp64;
  gboolean overlap;           /* streams are three queues (§5.1): every type but CPU, or as
                               * SEDP_OPENCL_OVERLAP says */
  cl_ulong global_mem, max_alloc, base_align; /* bytes */
  size_t max_work_group;
  cl_program program;         /* our kernels, built once (ocl-program.c) */
  GHashTable *local_sizes;    /* kernel name (owned) → its fixed local size (GSIZE_TO_POINTER) */
  GMutex lock;                /* weights, the byte counts, queue creation */
  GHashTable *weights;        /* key → OclWeight * (ocl-weights.c) */
  cl_ulong weight_bytes;      /* held by the store */
  cl_ulong arena_bytes;       /* held by plans' arenas */
  OclStream streams[SEDP_NN_MAX_STREAMS];
  gint active;                /* atomic: streams runs may use, 1..SEDP_NN_MAX_STREAMS */
  gint rr;                    /* atomic: where the least-loaded search starts */
  GMutex blas_lock;           /* serialises CLBlast calls (its cache's race, opencl.md §12.1) */
  gint in_flight;             /* atomic: runs picked and not done, over all streams */
  GMutex auto_lock;
  struct _NnAuto *autoc;      /* streams = auto: the controller (ocl-auto.c), else NULL; under
                               * auto_lock */
  char *lost;                 /* set once (under lock) when a run found the device gone: why */
};

/* ---- streams (ocl-streams.c) ---- */

/* The active stream with the fewest runs in flight (creating its queue on first use), its
 * in-flight count and the device's raised; @concurrency: the device's runs in flight with this
 * one. NULL with an error when the queue cannot be created. */
OclStream *nn_ocl_stream_pick (SedpNnDevice *d, guint *concurrency, GError **error);
/* The run picked on @s, of @rows rows, has finished: feeds the auto controller if there is one. */
void nn_ocl_stream_done (SedpNnDevice *d, OclStream *s, guint64 rows, guint concurrency);
/* Installs the auto controller @autoc (taken; NULL: fixed counts), freeing the previous one. */
void nn_ocl_set_auto (SedpNnDevice *d, struct _NnAuto *autoc);
/* The queue every upload at plan time goes through (stream 0), NULL with an error. */
cl_command_queue nn_ocl_setup_queue (SedpNnDevice *d, GError **error);
/* Releases the queues (device close). */
void nn_ocl_streams_clear (SedpNnDevice *d);

/* ---- the weight store (ocl-weights.c) ---- */

/**
 * nn_ocl_weight_acquire:
 * @host: the constant's bytes
 * @stable: TRUE when @host stays valid and unchanged while any plan holds the weight (an
 *   initializer of a model the plan references): the store's key is then its address; FALSE
 *   for bytes a plan made (folded values), keyed by their SHA-256
 *
 * The device buffer holding @bytes of @host, uploaded on first acquire and shared afterwards,
 * with one more reference. NULL with a SEDP_NN_ERROR_DEVICE error: larger than the device's
 * per-buffer limit, or out of device memory (@what names the value). Thread-safe.
 */
OclWeight *nn_ocl_weight_acquire (SedpNnDevice *d, gconstpointer host, gsize bytes, gboolean stable,
                                  const char *what, GError **error);
void nn_ocl_weight_release (SedpNnDevice *d, OclWeight *w);
/* Frees the store (device close: no plan holds a weight then). */
void nn_ocl_weights_clear (SedpNnDevice *d);

/* ---- plans (ocl-plan.c) and their lowering (lower-*.c) ---- */

typedef struct _Plan Plan;
typedef struct _Step Step;

/* Where a value lives on the device: a buffer and a byte offset in it. */
typedef struct {
  cl_mem mem;
  guint64 offset;
} OclRef;

/* What a command is. */
typedef enum {
  OCL_CMD_KERNEL,      /* one of ours, 1-D, fixed local size */
  OCL_CMD_GEMM,        /* CLBlastSgemm */
  OCL_CMD_GEMM_STRIDED,/* CLBlastSgemmStridedBatched */
  OCL_CMD_GEMM_BATCH,  /* CLBlastSgemmBatched (irregular offsets) */
  OCL_CMD_HOST,        /* the CPU kernel on copies read back (opencl.md §3.3) */
} OclCmdKind;

typedef struct {
  CLBlastTranspose ta, tb;
  size_t m, n, k, lda, ldb, ldc;
  size_t a_off, b_off, c_off;             /* elements */
  size_t a_stride, b_stride, c_stride;    /* GEMM_STRIDED */
  size_t count;                           /* GEMM_STRIDED, GEMM_BATCH */
  size_t *a_offs, *b_offs, *c_offs;       /* GEMM_BATCH (owned) */
  float *alphas, *betas;                  /* GEMM_BATCH (owned) */
  float alpha, beta;
  cl_mem a, b, c;
  size_t temp_bytes;                      /* GEMM: CLBlast's temporary buffer */
} OclGemm;

/* One command of a lowered plan; a CPU step becomes one or several. */
typedef struct {
  OclCmdKind kind;
  const Step *step;         /* the CPU step it runs (or part of): the node for errors */
  const char *what;         /* "clblast sgemm NT", "gemm_epilogue", "host" (static) */
  cl_kernel kernel;         /* KERNEL: arguments bound at lowering */
  size_t global, local;
  OclGemm gemm;
} OclCmd;

typedef struct _OclPlan {
  SedpNnDevice *device;     /* the Plan's (not referenced again) */
  Plan *cpu;                /* the compiled plan it lowers (its owner) */
  cl_mem arena;             /* temps at the CPU plan's offsets, then the input slots */
  gsize arena_bytes;
  guint64 *input_offset;    /* per graph input: its slot's byte offset in the arena */
  OclRef *refs;             /* per value, resolved on first use (mem NULL: not yet) */
  OclWeight **weights;      /* per value: the weight its ref holds, or NULL */
  GPtrArray *uploads;       /* OclWeight *: tables the lowering made (nn_ocl_upload) */
  GArray *cmds;             /* OclCmd */
  guint n_host;             /* HOST commands */
  cl_mem gemm_temp;         /* CLBlast's temporary buffer, the largest a GEMM needs */
  cl_mem host_out_mem;      /* the pinned buffer host_out maps (ocl-plan.c) */
  guint8 *host_out;         /* outputs downloaded here: host_out_mem, mapped while the plan lives */
  gsize *out_offset;        /* per graph output: its place in host_out, G_MAXSIZE: not on device */
  guint64 status_offset;    /* the status words (one guint32 per step) after the input slots */
  guint n_status;           /* steps that use theirs (nn_ocl_status_word): 0, none downloaded */
  guint32 *host_status;     /* per step: its word downloaded with the outputs (owned) */
} OclPlan;

/* The device-side place of value @v of the plan (its alias root's), uploading the constant it is
 * on first use; FALSE with an error. A graph input's is its arena slot. */
gboolean nn_ocl_ref (OclPlan *o, int v, OclRef *ref, GError **error);
/* A read-only device copy of @bytes of @data that a lowering made (a parameter table: offsets,
 * per-channel factors), shared through the weight store by content and held by the plan; FALSE
 * with an error (@what names it). */
gboolean nn_ocl_upload (OclPlan *o, gconstpointer data, gsize bytes, const char *what, cl_mem *mem,
                        GError **error);
/* Appends a command of kernel @name over @n items (global size rounded up to its local size) and
 * binds its arguments from @fmt, one character per argument after the kernel's:
 *   'v' int value index: two arguments, the buffer and the element offset (ulong) of the value;
 *   'u' guint64 as ulong; 'l' gint64 as long; 'i' int; 'f' double as float;
 *   '8' const gint64 * as long8 (8 entries read); 'm' a cl_mem (nn_ocl_upload's);
 *   'r' a const OclRef * then an int element size: two arguments, the buffer and the element
 *   offset (a place inside a value: a scratch region, a direction's rows).
 * FALSE with an error naming the node and the device. */
gboolean nn_ocl_add_kernel (OclPlan *o, const Step *s, const char *name, guint64 n, GError **error,
                            const char *fmt, ...);
/* The status word of index-reading step @s (docs/opencl.md §7), as an offset in guint32s in
 * o->arena (a kernel's `__global uint *st, ulong st_off`: bind 'm' o->arena, 'u' this). Zeroed
 * at each run's start and downloaded with the outputs; a kernel sets it (to non-zero) on a bad
 * index, and the run then takes the CPU engine's message from a re-run on the CPU plan. */
guint64 nn_ocl_status_word (OclPlan *o, const Step *s);
/* Appends a command that runs @s on the host (the fallback). */
void nn_ocl_add_host (OclPlan *o, const Step *s);
/* An error "OpenCL device LABEL: node 'NAME' (OP): WHAT: CL_NAME (CODE)". */
void nn_ocl_node_error (GError **error, const OclPlan *o, const Step *s, const char *what,
                        cl_int code);

/* Whether a run's failure @code means the device is gone (CL_DEVICE_NOT_AVAILABLE,
 * CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY, an event's failure): the device is then marked lost
 * with @why, and later runs fail at once (ocl-run.c). */
gboolean nn_ocl_mark_lost (SedpNnDevice *d, cl_int code, const char *why);
/* The SEDP_NN_ERROR_DEVICE error of a run on a lost device; FALSE when it is not lost. */
gboolean nn_ocl_check_lost (SedpNnDevice *d, GError **error);

/* Lowers CPU step @s, appending its commands; FALSE with an error naming the node. */
typedef gboolean (*OclLowerFn) (OclPlan *o, const Step *s, GError **error);
/* The lowering per NnKernelId (ocl-lower.c); NULL: the host fallback. */
SEDP_API OclLowerFn nn_ocl_lowering (guint kernel_id);

gboolean nn_ocl_lower_gemm (OclPlan *o, const Step *s, GError **error);
/* lower-rnn.c: NN_KERNEL_GRU. */
gboolean nn_ocl_lower_gru (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_matmul_batched (OclPlan *o, const Step *s, GError **error);
/* lower-reduce.c: NN_KERNEL_REDUCE, NN_KERNEL_ARG, NN_KERNEL_TOPK, NN_KERNEL_CUMSUM. */
gboolean nn_ocl_lower_reduce (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_arg (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_topk (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_cumsum (OclPlan *o, const Step *s, GError **error);
/* lower-norm.c: NN_KERNEL_SOFTMAX, NN_KERNEL_LAYERNORM, NN_KERNEL_BATCHNORM. */
gboolean nn_ocl_lower_softmax (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_layernorm (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_batchnorm (OclPlan *o, const Step *s, GError **error);
/* Data movement (lower-copy.c): Transpose, Slice, Expand, Tile; Concat; Split. */
gboolean nn_ocl_lower_strided_copy (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_concat (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_split (OclPlan *o, const Step *s, GError **error);
/* Index operators (lower-index.c); the first three use a status word. */
gboolean nn_ocl_lower_gather (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_embedding_bag (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_gather_elements (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_onehot (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_trilu (OclPlan *o, const Step *s, GError **error);
/* lower-elementwise.c: Binary, Compare, Logic, Mod, Pow, PRelu and Where (BroadcastParams); the
 * variadic Sum/Max/Min/Mean; Unary, ParamAct, Clip, Cast (FALSE with a DEVICE error for double on
 * a device without cl_khr_fp64), Not, IsNaN/IsInf. */
gboolean nn_ocl_lower_broadcast (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_variadic (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_unary (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_param_act (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_clip (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_cast (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_not (OclPlan *o, const Step *s, GError **error);
gboolean nn_ocl_lower_is (OclPlan *o, const Step *s, GError **error);
/* Enqueues a GEMM command on @queue (under the device's blas_lock). */
cl_int nn_ocl_gemm_enqueue (OclPlan *o, const OclCmd *c, cl_command_queue queue);

/* The .cl files of kernels/, concatenated (generated by embed-kernels.py). */
extern const char nn_ocl_kernels_source[];

/* "CL_BUILD_PROGRAM_FAILURE", …, or "an unknown OpenCL error" (static strings; ocl-error.c). */
SEDP_API const char *nn_ocl_error_name (cl_int code);

/* "640.0 MiB" (IEC units, an ordinary space), for messages. Free with g_free. */
char *nn_ocl_size (guint64 bytes);

/* Sets a SEDP_NN_ERROR_DEVICE error "OpenCL device LABEL: WHAT: CL_NAME (CODE)" for a failed
 * call @what on @d. */
void nn_ocl_set_error (GError **error, const SedpNnDevice *d, const char *what, cl_int code);

/* Builds our program for @d (sets d->program and d->local_sizes): options -cl-std=CL1.2, plus
 * -DNN_HAVE_FP64 when the device has cl_khr_fp64; no fast-math options (docs/opencl.md §6, §8).
 * A build failure is a SEDP_NN_ERROR_DEVICE error naming the device, with the first 2 KB of the
 * build log. */
gboolean nn_ocl_program_build (SedpNnDevice *d, GError **error);
/* Releases what nn_ocl_program_build made (safe on a device whose build failed). */
void nn_ocl_program_clear (SedpNnDevice *d);

/**
 * nn_ocl_kernel_new:
 * @local_size: (out): the kernel's fixed work-group size on @d: its preferred work-group size
 *   multiple × 8 (64 on PoCL, 256 on most GPUs), capped by CL_KERNEL_WORK_GROUP_SIZE. Every
 *   enqueue of the kernel uses it, so that PoCL compiles its work-group function once
 *   (docs/opencl.md §1, §6).
 *
 * Creates a new kernel object of our program (one per user: clSetKernelArg is not thread-safe
 * per kernel). Returns: (transfer full): the kernel, or NULL with a SEDP_NN_ERROR_DEVICE error
 * (an unknown name).
 */
SEDP_API cl_kernel nn_ocl_kernel_new (SedpNnDevice *d, const char *name, size_t *local_size,
                                      GError **error);

/* @n rounded up to a multiple of @local_size (the global size of a 1-D launch over n items). */
SEDP_API size_t nn_ocl_global_size (size_t n, size_t local_size);

/* ---- test hooks (tests/nn-ocl/) ---- */

/* Appends @source (NULL: nothing) to the program of devices opened afterwards: the test of a
 * program that does not build. Not thread-safe; tests only. */
SEDP_API void nn_ocl_test_set_extra_source (const char *source);
/* Makes the next run on any device end as if its commands' event had reported @code (a
 * negative OpenCL status, e.g. CL_OUT_OF_RESOURCES): the test of a device lost at run time. */
SEDP_API void nn_ocl_test_fail_next_run (cl_int code);
/* How many devices are open in this process (the registry's size). */
SEDP_API guint nn_ocl_test_n_open (void);
