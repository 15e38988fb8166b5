/* sedp — the dense engine's public API: tensors, models, plans. A stage that runs ONNX models
 * (such as model_inference) uses these; the model's graph itself stays internal to libsedp. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_NN_MAX_RANK: the highest tensor rank the engine handles. */
#define SEDP_NN_MAX_RANK 8

/**
 * SedpNnDType:
 * Element types, numbered as ONNX's TensorProto.DataType. The engine computes in FLOAT and uses
 * INT64 for shapes and indexes; INT32 and BOOL appear in models and are converted by Cast.
 */
typedef enum {
  SEDP_NN_UNDEFINED = 0,
  SEDP_NN_FLOAT = 1,
  SEDP_NN_UINT8 = 2,
  SEDP_NN_INT8 = 3,
  SEDP_NN_INT32 = 6,
  SEDP_NN_INT64 = 7,
  SEDP_NN_BOOL = 9,
  SEDP_NN_DOUBLE = 11,
} SedpNnDType;

/* Bytes per element (0 for unsupported types). */
SEDP_API gsize sedp_nn_dtype_size (SedpNnDType dtype);
/* "float", "int64", … ("type N" for others, in a static buffer per thread). */
SEDP_API const char *sedp_nn_dtype_name (SedpNnDType dtype);

/**
 * SedpNnTensor:
 * A tensor: type, shape and data. Whether @data is owned depends on where the tensor lives
 * (initializers own theirs; plan inputs and outputs borrow).
 */
typedef struct {
  char *name;
  SedpNnDType dtype;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gpointer data;
} SedpNnTensor;

/* Product of the dims (1 for rank 0). */
SEDP_API gint64 sedp_nn_tensor_numel (const SedpNnTensor *t);

/* A new tensor owning zeroed data (64-byte aligned); free with sedp_nn_tensor_free(). */
SEDP_API SedpNnTensor *sedp_nn_tensor_new (const char *name, SedpNnDType dtype, int rank,
                                           const gint64 *dims);
SEDP_API void sedp_nn_tensor_free (SedpNnTensor *t);
/* A deep copy of @t (name, shape, data) in a new aligned buffer. */
SEDP_API SedpNnTensor *sedp_nn_tensor_dup (const SedpNnTensor *t);
/* numel × element size. */
SEDP_API gsize sedp_nn_tensor_nbytes (const SedpNnTensor *t);

/* "[64, 128]". */
SEDP_API char *sedp_nn_shape_to_string (int rank, const gint64 *dims);

/** SEDP_NN_ERROR: errors loading, checking and running models. Codes are #SedpNnError. */
#define SEDP_NN_ERROR (sedp_nn_error_quark ())
SEDP_API GQuark sedp_nn_error_quark (void);

typedef enum {
  SEDP_NN_ERROR_IO,          /* cannot read or write the file */
  SEDP_NN_ERROR_CORRUPT,     /* not a valid ONNX protobuf (truncated, bad wire data) */
  SEDP_NN_ERROR_INVALID,     /* a valid protobuf that is not a usable model (dangling names, bad dims, cycles) */
  SEDP_NN_ERROR_UNSUPPORTED, /* operators, opsets, types or attributes the engine lacks */
  SEDP_NN_ERROR_SHAPE,       /* shapes that do not fit together */
  SEDP_NN_ERROR_INPUT,       /* request-time inputs of the wrong shape or type */
  SEDP_NN_ERROR_DEVICE,      /* OpenCL: no platform or device, a bad device spec, a program that
                              * does not build, device memory, a lost device (docs/opencl.md §7) */
} SedpNnError;

/**
 * SedpNnModel:
 * A loaded ONNX model, immutable after loading and shared by every plan and stage instance that
 * runs it (one copy of the weights). Reference counted; thread-safe to share.
 */
typedef struct _SedpNnModel SedpNnModel;

/* Reads an ONNX model file. Errors: IO, CORRUPT (truncated or bad protobuf), INVALID (missing
 * graph, initializer data not matching its dims, dims < 0 or too large, …). Operator support is
 * checked by sedp_nn_model_check() and when a plan is made. */
SEDP_API SedpNnModel *sedp_nn_model_load (const char *path, GError **error);
SEDP_API SedpNnModel *sedp_nn_model_load_data (const guint8 *data, gsize size, const char *name,
                                               GError **error);

/**
 * sedp_nn_model_get_n_inputs:
 * Returns: the number of graph inputs (initializers excluded).
 */
SEDP_API guint sedp_nn_model_get_n_inputs (const SedpNnModel *model);

/**
 * sedp_nn_model_get_input_info:
 * @info: (out caller-allocates): filled with the input's name (borrowed from the model), dtype,
 *   rank (-1 when unknown) and dims (-1 for a symbolic dimension such as the batch); data NULL
 *
 * Returns: %FALSE when @index is out of range.
 */
SEDP_API gboolean sedp_nn_model_get_input_info (const SedpNnModel *model, guint index,
                                                SedpNnTensor *info);

/** sedp_nn_model_get_n_outputs: Returns: the number of graph outputs. */
SEDP_API guint sedp_nn_model_get_n_outputs (const SedpNnModel *model);

/** sedp_nn_model_get_output_info: Like sedp_nn_model_get_input_info() for graph outputs. */
SEDP_API gboolean sedp_nn_model_get_output_info (const SedpNnModel *model, guint index,
                                                 SedpNnTensor *info);

/** sedp_nn_model_get_n_parameters: Returns: the number of elements of all initializers. */
SEDP_API gint64 sedp_nn_model_get_n_parameters (const SedpNnModel *model);

SEDP_API SedpNnModel *sedp_nn_model_ref (SedpNnModel *model);
SEDP_API void sedp_nn_model_unref (SedpNnModel *model);

/**
 * SedpNnPlan:
 * A model compiled for a fixed batch size: every symbolic batch dimension bound, shapes
 * inferred, shape computations folded into constants, nodes fused where it pays (Gemm/MatMul +
 * bias + activation), a static schedule, and one preallocated arena for every intermediate
 * value, reused by every run. The plan references the model's weights (no copy). A plan is used
 * by one thread at a time; make one plan per worker thread.
 */
typedef struct _SedpNnPlan SedpNnPlan;

/* The operators of the default domain the engine runs, in the order of its table; free with
 * g_strfreev. */
SEDP_API char **sedp_nn_operator_names (void);

/* Checks that every operator of @model is supported; the error lists every unsupported op with
 * its opset ("unsupported operators (opset 13): Foo, Bar"). */
SEDP_API gboolean sedp_nn_model_check (const SedpNnModel *model, GError **error);

/* Compiles @model for @batch rows: the first dimension of every graph input, when it is
 * symbolic, takes the value @batch, and so does any other symbolic dimension with the same name
 * as the first input's first one; any other symbolic dimension is an UNSUPPORTED error. A model
 * whose first input has a fixed first dimension accepts only that batch (SHAPE error). Errors:
 * UNSUPPORTED, SHAPE, INVALID.
 *
 * Parameters given at run time: when a node needs, at compile time, the value of something
 * computed from graph inputs (a Reshape's shape, Slice's starts, Clip's bounds, …), those graph
 * inputs become the plan's *parameters* (each of at most 65 536 elements; a larger one is an
 * UNSUPPORTED error). Such a plan compiles nothing here: each run compiles, or finds among the 16
 * it keeps, the plan specialised on the parameters' values, so the first run with new values is
 * slow and later ones are not. Errors that depend on those values (a shape that does not fit)
 * come from sedp_nn_plan_run. Until the first run, its outputs' shapes are the graph's declared
 * ones (possibly -1), its FLOPs and arena 0; after a run, those of the last run's plan. */
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

/* Whether graph input @index is a parameter of the plan (see sedp_nn_plan_new): its value, not
 * only its shape, selects the plan a run uses. */
SEDP_API gboolean sedp_nn_plan_input_is_parameter (const SedpNnPlan *plan, guint index);

/* Floating-point operations of one run (multiply-adds count 2), and per row. */
SEDP_API double sedp_nn_plan_get_flops (const SedpNnPlan *plan);
/* Bytes of the arena. */
SEDP_API gsize sedp_nn_plan_get_arena_size (const SedpNnPlan *plan);
/* The compiled schedule, one line per kernel (for `sedp model info --verbose`). */
SEDP_API void sedp_nn_plan_describe (const SedpNnPlan *plan, GString *out);

/**
 * SedpNnDevice:
 * An OpenCL device opened by the engine: its context and the engine's kernels built for it
 * (docs/opencl.md). A process opens each device once: every sedp_nn_device_open() of the same
 * device returns the same object, with one more reference. Reference counted; thread-safe to
 * share between threads.
 */
typedef struct _SedpNnDevice SedpNnDevice;

/**
 * sedp_nn_device_open:
 * @spec: (nullable): which device: NULL or "" for the first device of the first platform that
 *   has one; "N" (digits only) for the N-th device over all platforms, in the order
 *   sedp_nn_device_list() lists them (the ICD loader's: a GPU is not preferred silently); or a
 *   case-insensitive substring of "PLATFORM: DEVICE" that exactly one device matches
 * @error: return location for a #SEDP_NN_ERROR_DEVICE error
 *
 * Opens the device, or returns the one already open in this process (then with one more
 * reference). Opening creates the device's context and builds the engine's program for it,
 * once per process (≈ 0.7 s the first time on PoCL, ≈ 60 ms when its kernel cache is warm).
 * Thread-safe: concurrent opens of one device build it once (opens are serialised).
 *
 * Returns: (transfer full): the device, or NULL with a #SEDP_NN_ERROR_DEVICE error: no OpenCL
 *   platform; no device on any platform; "device = 5: out of range, there are 2 OpenCL
 *   devices (0: …, 1: …)"; a name that matches none or several devices (listing them); a
 *   context or a program that fails, naming the device and the OpenCL error, with the first
 *   2 KB of the build log for a program; or "sedp was built without OpenCL (…)" when meson did
 *   not find OpenCL and CLBlast.
 */
SEDP_API SedpNnDevice *sedp_nn_device_open (const char *spec, GError **error);

/**
 * sedp_nn_device_ref:
 * Returns: (transfer full): @device, with one more reference. Thread-safe.
 */
SEDP_API SedpNnDevice *sedp_nn_device_ref (SedpNnDevice *device);

/**
 * sedp_nn_device_unref:
 * Drops a reference; the last one closes the device (its program and context are released, and
 * a later sedp_nn_device_open() opens it afresh). NULL is ignored. Thread-safe.
 */
SEDP_API void sedp_nn_device_unref (SedpNnDevice *device);

/**
 * sedp_nn_device_get_label:
 * Returns: (transfer none): "N (PLATFORM: DEVICE)", e.g. "0 (Portable Computing Language:
 *   pthread-skylake-avx512-…)": the index and names used in messages ("OpenCL device 0 (…)");
 *   valid while @device is open. Thread-safe (immutable).
 */
SEDP_API const char *sedp_nn_device_get_label (const SedpNnDevice *device);

/**
 * sedp_nn_device_list:
 * @error: return location for a #SEDP_NN_ERROR_DEVICE error
 *
 * Lists every OpenCL device of every platform, one line each, in the order the "N" of
 * sedp_nn_device_open() counts them: "N  PLATFORM: DEVICE  TYPE  GLOBAL_MEM  OpenCL C
 * VERSION" (e.g. "0  Portable Computing Language: pthread-…  CPU  4.5 GiB  OpenCL C 1.2
 * PoCL"), for `sedp model devices`. Opens nothing. Thread-safe.
 *
 * Returns: (transfer full): a NULL-terminated array (free with g_strfreev), or NULL with a
 *   #SEDP_NN_ERROR_DEVICE error when there is no OpenCL platform or no device, or when sedp was
 *   built without OpenCL.
 */
SEDP_API char **sedp_nn_device_list (GError **error);

/* The most command queues ("streams") runs on one device are spread over. */
#define SEDP_NN_MAX_STREAMS 8

/**
 * sedp_nn_device_set_streams:
 * @streams: how many command queues runs on @device use, 1 to #SEDP_NN_MAX_STREAMS
 * @error: return location for a #SEDP_NN_ERROR_INPUT error (a count out of range)
 *
 * Sets how many of the device's command queues runs are spread over (docs/opencl.md §5): each
 * run takes the queue with the fewest runs in flight among the first @streams. A new device uses
 * one. Queues are created on first use and kept; runs in flight finish on the queue they
 * started on. Replaces `auto` (sedp_nn_device_set_streams_auto()). Thread-safe.
 */
SEDP_API gboolean sedp_nn_device_set_streams (SedpNnDevice *device, guint streams,
                                              GError **error);

/**
 * sedp_nn_device_set_streams_auto:
 * @model: the model whose runs are profiled (referenced while profiling only)
 * @batch: the rows of a profiled run (a stage's max_batch_rows)
 * @concurrency: how many runs are expected in flight on the device (a stage's parallelism),
 *   1 to 64
 * @profile_ms: how long each candidate count is measured at start; 0 skips the profile (the
 *   count starts at min(@concurrency, 4) and is learned from traffic)
 * @error: return location for the errors of sedp_nn_plan_new_on() and sedp_nn_plan_run()
 *
 * `streams = auto` (docs/opencl.md §5.3): measures rows/s with 1, 2, 3, 4, 6 and 8 streams at
 * @concurrency (@concurrency threads, each with its own plan of @batch rows on zero inputs, for
 * @profile_ms each after one discarded run: about 6 × @profile_ms), keeps the best (the fewest
 * streams among rates within 2 % of the best), then follows the device's concurrency: when the
 * runs in flight move to another bucket (1, 2, 3–4, 5–8, 9–16, 17+) for half a second, the count
 * known for that bucket is used, or found by trying each count on the live runs for 100 ms;
 * counts older than 10 minutes are tried again. Replaces any fixed count. Blocks while profiling;
 * other runs on the device during the profile distort it. Thread-safe.
 */
SEDP_API gboolean sedp_nn_device_set_streams_auto (SedpNnDevice *device, SedpNnModel *model,
                                                   gint64 batch, guint concurrency,
                                                   guint profile_ms, GError **error);

/* How many times `auto` changed the stream count since it was set (0 for fixed counts).
 * Thread-safe. */
SEDP_API guint sedp_nn_device_get_stream_changes (SedpNnDevice *device);

/* The device memory plans hold now: @weights, the weight store's bytes (one copy per device);
 * @arenas, the plans' intermediate values and input slots. Thread-safe. */
SEDP_API void sedp_nn_device_get_memory (SedpNnDevice *device, guint64 *weights, guint64 *arenas);

/* The number of queues runs on @device now use (sedp_nn_device_set_streams). Thread-safe. */
SEDP_API guint sedp_nn_device_get_streams (const SedpNnDevice *device);

/**
 * sedp_nn_device_get_queues_per_stream:
 *
 * How many command queues one stream of @device has (docs/opencl.md §5.1): 3 (uploads, compute,
 * downloads, chained by events per run, so that runs sharing a stream overlap their transfers
 * with each other's computation) on GPUs and accelerators, 1 (one in-order queue) on CPU
 * devices, where a transfer is a memory copy by the same cores; the environment variable
 * SEDP_OPENCL_OVERLAP = 1 or 0, read when the device is opened, forces 3 or 1. 0 in a build
 * without OpenCL. Thread-safe (immutable).
 */
SEDP_API guint sedp_nn_device_get_queues_per_stream (const SedpNnDevice *device);

/**
 * sedp_nn_plan_new_on:
 * @device: (nullable): where the plan's runs execute; NULL is sedp_nn_plan_new() (the CPU engine)
 *
 * Compiles @model for @batch rows as sedp_nn_plan_new() does, then lowers the plan to @device
 * (docs/opencl.md §2): its constants are uploaded once per device and shared with every other
 * plan on it (found by address, or by content for values the compiler made); its intermediate
 * values get one device buffer at the CPU plan's offsets; each step becomes a CLBlast call, one
 * of the engine's kernels, or — where no device lowering exists yet — the CPU kernel run on
 * copies read back from the device (marked "host" by sedp_nn_plan_describe()). The plan keeps a
 * reference on @device.
 *
 * The returned plan is used like any other: sedp_nn_plan_run() takes and returns host memory
 * (outputs point into a buffer the plan owns, valid until its next run or its free), uploads
 * the inputs, enqueues the run on one of the device's queues and returns when the outputs are on
 * the host; a failure on the device is a #SEDP_NN_ERROR_DEVICE error naming the node and the
 * device, and the plan stays usable. Same contract as a CPU plan: one thread at a time per plan;
 * plans on one device may run concurrently from different threads. The first run of a plan pays
 * the kernels' compiles where the platform's caches are cold (docs/opencl.md §6).
 *
 * Returns: (transfer full): the plan, or NULL with the errors of sedp_nn_plan_new(), or a
 *   #SEDP_NN_ERROR_DEVICE error: a buffer larger than the device allows, out of device memory,
 *   a type the device lacks (each naming the node or value and the device).
 */
SEDP_API SedpNnPlan *sedp_nn_plan_new_on (SedpNnModel *model, gint64 batch, SedpNnDevice *device,
                                          GError **error);

/* The device a plan runs on (NULL: the CPU engine). Transfer none. */
SEDP_API SedpNnDevice *sedp_nn_plan_get_device (const SedpNnPlan *plan);

/* Makes OpenBLAS single-threaded (the default inside stage workers) or use @threads threads. */
SEDP_API void sedp_nn_set_blas_threads (int threads);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpNnModel, sedp_nn_model_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpNnTensor, sedp_nn_tensor_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpNnDevice, sedp_nn_device_unref)

G_END_DECLS
