/* sedp model — ONNX models: info, eval, bench, synth, devices, split (cmd-model-split.c), and model
 * bundles: pack, verify, keygen, sign (cmd-model-bundle.c). */
#include "cli.h"
#include "cmd-model-bundle.h"
#include "cmd-model-split.h"

#include "../cube/cube-format.h"
#include "../cube/cube.h"
#include "../nn/plan.h"
#include "../nn/synth.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "[batch, 13]": symbolic dims by name. */
static char *
value_shape (const SedpNnValueInfo *vi)
{
  if (vi->rank < 0)
    return g_strdup ("(unknown shape)");
  GString *s = g_string_new ("[");
  for (int k = 0; k < vi->rank; k++) {
    if (k)
      g_string_append (s, ", ");
    if (vi->dims[k] >= 0)
      g_string_append_printf (s, "%" G_GINT64_FORMAT, vi->dims[k]);
    else
      g_string_append (s, vi->dim_params[k] ? vi->dim_params[k] : "?");
  }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static SedpNnModel *
load_model (const char *sub, const char *path)
{
  g_autoptr (GError) error = NULL;
  SedpNnModel *model = sedp_nn_model_load (path, &error);
  if (model == NULL)
    sedp_cli_error (sub, error->message);
  return model;
}

/* The batch a plan for FLOPs per row is made with: the fixed first dimension of the first
 * input if it has one, else 1. */
static gint64
natural_batch (const SedpNnModel *model)
{
  if (model->n_inputs > 0 && model->inputs[0].rank > 0 && model->inputs[0].dims[0] > 0)
    return model->inputs[0].dims[0];
  return 1;
}

/* ---- --engine, --device and --streams (info, eval, bench; docs/opencl.md §2.5) ---- */

typedef struct {
  char *engine, *device, *streams;
  double open_ms;         /* how long opening the device took */
  gboolean auto_streams;  /* --streams auto: the caller profiles (sedp_nn_device_set_streams_auto) */
} EngineArgs;

static void
engine_args_clear (EngineArgs *a)
{
  g_free (a->engine);
  g_free (a->device);
  g_free (a->streams);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (EngineArgs, engine_args_clear)

#define ENGINE_ENTRIES(a)                                                                       \
  {"engine", 0, 0, G_OPTION_ARG_STRING, &(a).engine, "cpu (default) or opencl", "ENGINE"},     \
  {"device", 0, 0, G_OPTION_ARG_STRING, &(a).device,                                            \
   "With --engine opencl: a device index or a unique part of its name (default: the first; "   \
   "see sedp model devices)", "SPEC"}

/* Opens the device the arguments name (*device NULL: the CPU engine). Returns 0, or the exit
 * status after printing the error: 2 for a usage error, 1 for a device that does not open. */
static int
engine_open (const char *sub, EngineArgs *a, SedpNnDevice **device)
{
  *device = NULL;
  gboolean ocl = a->engine && strcmp (a->engine, "opencl") == 0;
  if (a->engine && !ocl && strcmp (a->engine, "cpu") != 0) {
    g_autofree char *msg = g_strdup_printf ("--engine '%s': expected cpu or opencl", a->engine);
    sedp_cli_error (sub, msg);
    return 2;
  }
  if (!ocl && (a->device || a->streams)) {
    sedp_cli_error (sub, a->device ? "--device needs --engine opencl"
                                   : "--streams needs --engine opencl");
    return 2;
  }
  guint64 streams = 1;
  a->auto_streams = g_strcmp0 (a->streams, "auto") == 0;
  if (a->streams && !a->auto_streams &&
      !g_ascii_string_to_unsigned (a->streams, 10, 1, SEDP_NN_MAX_STREAMS, &streams, NULL)) {
    g_autofree char *msg = g_strdup_printf ("--streams '%s': expected 1 to %d or auto", a->streams,
                                            SEDP_NN_MAX_STREAMS);
    sedp_cli_error (sub, msg);
    return 2;
  }
  if (!ocl)
    return 0;
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  *device = sedp_nn_device_open (a->device, &error);
  a->open_ms = (double) (g_get_monotonic_time () - t0) / 1000.0;
  if (*device == NULL || !sedp_nn_device_set_streams (*device, (guint) streams, &error)) {
    g_clear_pointer (device, sedp_nn_device_unref);
    sedp_cli_error (sub, error->message);
    return 1;
  }
  return 0;
}

static int
cmd_info (int argc, char **argv)
{
  gboolean verbose = FALSE;
  g_auto (EngineArgs) ea = {0};
  const GOptionEntry entries[] = {
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose,
     "Also print the compiled schedule (with --engine opencl, each step's device command)", NULL},
    ENGINE_ENTRIES (ea),
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model info", "MODEL.onnx",
                       "Prints the model's IR version, opset and producer, its inputs and outputs "
                       "with shapes, a histogram of its operators, its parameter count and the "
                       "FLOPs per row of the compiled plan (or why it cannot be compiled).",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("model info", "expected one MODEL.onnx (see --help)");
    return 2;
  }
  g_autoptr (SedpNnDevice) device = NULL;
  int rc = engine_open ("model info", &ea, &device);
  if (rc != 0)
    return rc;
  g_autoptr (SedpNnModel) model = load_model ("model info", argv[1]);
  if (model == NULL)
    return 1;

  printf ("model:       %s\n", argv[1]);
  printf ("ir_version:  %" G_GINT64_FORMAT "\n", model->ir_version);
  printf ("opset:       %" G_GINT64_FORMAT "\n", model->opset);
  printf ("producer:    %s\n", model->producer ? model->producer : "(none)");
  if (model->graph_name && *model->graph_name)
    printf ("graph:       %s\n", model->graph_name);

  printf ("inputs:      %u\n", model->n_inputs);
  for (guint k = 0; k < model->n_inputs; k++) {
    g_autofree char *shape = value_shape (&model->inputs[k]);
    printf ("  %-24s %-8s %s\n", model->inputs[k].name, sedp_nn_dtype_name (model->inputs[k].dtype),
            shape);
  }
  printf ("outputs:     %u\n", model->n_outputs);
  for (guint k = 0; k < model->n_outputs; k++) {
    g_autofree char *shape = value_shape (&model->outputs[k]);
    printf ("  %-24s %-8s %s\n", model->outputs[k].name,
            sedp_nn_dtype_name (model->outputs[k].dtype), shape);
  }

  /* Operators, most frequent first (then by name). */
  g_autoptr (GHashTable) counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < model->n_nodes; k++) {
    const SedpNnNode *n = &model->nodes[k];
    char *key = n->domain && *n->domain ? g_strdup_printf ("%s.%s", n->domain, n->op_type)
                                        : g_strdup (n->op_type);
    guint c = GPOINTER_TO_UINT (g_hash_table_lookup (counts, key));
    g_hash_table_replace (counts, key, GUINT_TO_POINTER (c + 1));
  }
  guint n_ops = 0;
  g_autofree gpointer *ops = g_hash_table_get_keys_as_array (counts, &n_ops);
  for (guint i = 1; i < n_ops; i++)
    for (guint j = i; j > 0; j--) {
      guint a = GPOINTER_TO_UINT (g_hash_table_lookup (counts, ops[j - 1]));
      guint b = GPOINTER_TO_UINT (g_hash_table_lookup (counts, ops[j]));
      if (a > b || (a == b && strcmp (ops[j - 1], ops[j]) <= 0))
        break;
      gpointer t = ops[j - 1];
      ops[j - 1] = ops[j];
      ops[j] = t;
    }
  printf ("operators:   %u nodes, %u kinds\n", model->n_nodes, n_ops);
  for (guint i = 0; i < n_ops; i++)
    printf ("  %-24s %u\n", (const char *) ops[i],
            GPOINTER_TO_UINT (g_hash_table_lookup (counts, ops[i])));

  guint64 params = 0, bytes = 0;
  for (guint k = 0; k < model->n_initializers; k++) {
    params += (guint64) sedp_nn_tensor_numel (model->initializers[k]);
    bytes += sedp_nn_tensor_nbytes (model->initializers[k]);
  }
  printf ("parameters:  %" G_GUINT64_FORMAT " in %u initializers (%.2f MiB)\n", params,
          model->n_initializers, (double) bytes / (1024.0 * 1024.0));

  gint64 batch = natural_batch (model);
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new_on (model, batch, device, &error);
  if (plan == NULL) {
    printf ("flops/row:   unavailable: %s\n", error->message);
    return 0;
  }
  g_autoptr (GString) params_named = g_string_new (NULL);
  for (guint i = 0; i < sedp_nn_plan_get_n_inputs (plan); i++)
    if (sedp_nn_plan_input_is_parameter (plan, i))
      g_string_append_printf (params_named, "%s'%s'", params_named->len ? ", " : "",
                              sedp_nn_plan_get_input (plan, i)->name);
  if (params_named->len) { /* nothing is compiled before the parameters' values are known */
    printf ("flops/row:   unavailable: the plan is specialised at run time on the values of %s\n",
            params_named->str);
    sedp_nn_plan_free (plan);
    return 0;
  }
  double flops = sedp_nn_plan_get_flops (plan) / (double) batch;
  printf ("flops/row:   %.0f (%.3f MFLOP)\n", flops, flops / 1e6);
  printf ("arena:       %zu bytes at batch %" G_GINT64_FORMAT "\n",
          sedp_nn_plan_get_arena_size (plan), batch);
  if (verbose) {
    g_autoptr (GString) s = g_string_new (NULL);
    sedp_nn_plan_describe (plan, s);
    fputs (s->str, stdout);
  }
  sedp_nn_plan_free (plan);
  return 0;
}

static int
cmd_eval (int argc, char **argv)
{
  g_auto (GStrv) inputs = NULL;
  g_autofree char *outdir = NULL;
  g_auto (EngineArgs) ea = {0};
  const GOptionEntry entries[] = {
    ENGINE_ENTRIES (ea),
    {"input", 'i', 0, G_OPTION_ARG_FILENAME_ARRAY, &inputs,
     "A serialized TensorProto, one per graph input in graph-input order (initializers "
     "excluded)",
     "INPUT_K.pb"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &outdir,
     "Folder to write output_0.pb … into (created if missing)", "OUTDIR"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model eval", "MODEL.onnx",
                       "Runs MODEL.onnx once on the given inputs (the layout of ONNX's backend "
                       "test data: input_0.pb …) and writes OUTDIR/output_0.pb … as TensorProto "
                       "in graph-output order. The batch is the first dimension of input 0.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("model eval", "expected one MODEL.onnx (see --help)");
    return 2;
  }
  if (outdir == NULL) {
    sedp_cli_error ("model eval", "missing -o OUTDIR (see --help)");
    return 2;
  }
  g_autoptr (SedpNnDevice) device = NULL;
  int rc = engine_open ("model eval", &ea, &device);
  if (rc != 0)
    return rc;
  g_autoptr (SedpNnModel) model = load_model ("model eval", argv[1]);
  if (model == NULL)
    return 1;
  guint n_given = inputs ? g_strv_length (inputs) : 0;
  if (n_given != model->n_inputs) {
    g_autofree char *msg =
      g_strdup_printf ("%s takes %u input%s, %u given with -i", argv[1], model->n_inputs,
                       model->n_inputs == 1 ? "" : "s", n_given);
    sedp_cli_error ("model eval", msg);
    return 2;
  }

  g_autoptr (GPtrArray) tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_autofree SedpNnTensor *in = g_new0 (SedpNnTensor, n_given ? n_given : 1);
  g_autoptr (GError) error = NULL;
  for (guint k = 0; k < n_given; k++) {
    SedpNnTensor *t = sedp_nn_tensor_load (inputs[k], &error);
    if (t == NULL) {
      sedp_cli_error ("model eval", error->message);
      return 1;
    }
    g_ptr_array_add (tensors, t);
    in[k] = *t;
  }
  gint64 batch = n_given > 0 && in[0].rank > 0 ? in[0].dims[0] : natural_batch (model);
  if (batch < 1) {
    sedp_cli_error ("model eval", "input 0 has an empty first dimension (batch 0)");
    return 1;
  }
  SedpNnPlan *plan = sedp_nn_plan_new_on (model, batch, device, &error);
  if (plan == NULL) {
    sedp_cli_error ("model eval", error->message);
    return 1;
  }
  guint n_out = sedp_nn_plan_get_n_outputs (plan);
  g_autofree SedpNnTensor *out = g_new0 (SedpNnTensor, n_out ? n_out : 1);
  int status = 0;
  if (!sedp_nn_plan_run (plan, n_given, in, n_out, out, &error)) {
    sedp_cli_error ("model eval", error->message);
    status = 1;
    goto done;
  }
  if (g_mkdir_with_parents (outdir, 0777) != 0) {
    g_autofree char *msg = g_strdup_printf ("cannot create %s: %s", outdir, g_strerror (errno));
    sedp_cli_error ("model eval", msg);
    status = 1;
    goto done;
  }
  for (guint k = 0; k < n_out; k++) {
    SedpNnTensor t = out[k];
    t.name = k < model->n_outputs ? model->outputs[k].name : t.name;
    g_autofree char *file = g_strdup_printf ("output_%u.pb", k);
    g_autofree char *path = g_build_filename (outdir, file, NULL);
    if (!sedp_nn_tensor_save (&t, path, &error)) {
      sedp_cli_error ("model eval", error->message);
      status = 1;
      goto done;
    }
  }
done:
  sedp_nn_plan_free (plan);
  return status;
}

/* ---- bench ---- */

/* The number of rows of the embedding table input @name indexes: the first dimension of the
 * initializer that a Gather reading @name as its indices gathers from (following Cast, Identity
 * and shape-only ops on the way); the smallest if several; 0 if none. */
static gint64
index_range (const SedpNnModel *model, const char *name)
{
  static const char *const pass[] = {"Cast", "Identity", "Reshape", "Flatten", "Squeeze",
                                     "Unsqueeze", NULL};
  gint64 rows = 0;
  g_autoptr (GPtrArray) worklist = g_ptr_array_new ();
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  g_ptr_array_add (worklist, (gpointer) name);
  while (worklist->len > 0) {
    const char *v = g_ptr_array_steal_index_fast (worklist, worklist->len - 1);
    if (!g_hash_table_add (seen, (gpointer) v))
      continue;
    for (guint k = 0; k < model->n_nodes; k++) {
      const SedpNnNode *n = &model->nodes[k];
      if (strcmp (n->op_type, "Gather") == 0 && n->n_inputs >= 2 &&
          strcmp (n->inputs[1], v) == 0) {
        const SedpNnTensor *t = sedp_nn_model_get_initializer (model, n->inputs[0]);
        const SedpNnAttr *axis = sedp_nn_node_attr (n, "axis");
        gint64 ax = axis ? axis->i : 0;
        if (t && t->rank > 0 && ax >= -t->rank && ax < t->rank) {
          gint64 r = t->dims[ax < 0 ? ax + t->rank : ax];
          if (rows == 0 || r < rows)
            rows = r;
        }
      } else if (g_strv_contains (pass, n->op_type) && n->n_inputs >= 1 && n->n_outputs >= 1 &&
                 strcmp (n->inputs[0], v) == 0) {
        g_ptr_array_add (worklist, n->outputs[0]);
      }
    }
  }
  return rows;
}

typedef struct {
  SedpNnPlan *plan;
  GPtrArray *inputs; /* SedpNnTensor, owned */
  SedpNnTensor *in;  /* views of @inputs */
  SedpNnTensor *out;
  guint n_out;
  guint64 runs;
  gint64 t_start, t_end;
  char *error;
} Worker;

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean go;
  gint64 warmup_end, end;
} Race;

static Race race;

static gpointer
bench_thread (gpointer data)
{
  Worker *w = data;
  g_autoptr (GError) error = NULL;
  g_mutex_lock (&race.lock);
  while (!race.go)
    g_cond_wait (&race.cond, &race.lock);
  g_mutex_unlock (&race.lock);
  while (g_get_monotonic_time () < race.warmup_end)
    if (!sedp_nn_plan_run (w->plan, w->inputs->len, w->in, w->n_out, w->out, &error))
      goto fail;
  w->t_start = g_get_monotonic_time ();
  do {
    if (!sedp_nn_plan_run (w->plan, w->inputs->len, w->in, w->n_out, w->out, &error))
      goto fail;
    w->runs++;
  } while ((w->t_end = g_get_monotonic_time ()) < race.end);
  return NULL;
fail:
  w->error = g_strdup (error->message);
  return NULL;
}

static void
fill_random (SedpNnTensor *t, gint64 range, guint64 *state)
{
  gint64 n = sedp_nn_tensor_numel (t);
  for (gint64 k = 0; k < n; k++) {
    /* xorshift64* */
    guint64 x = *state;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *state = x;
    guint64 r = x * 0x2545f4914f6cdd1dULL;
    double u = (double) (r >> 11) / (double) (1ULL << 53);
    switch (t->dtype) {
    case SEDP_NN_FLOAT:
      ((float *) t->data)[k] = (float) u;
      break;
    case SEDP_NN_DOUBLE:
      ((double *) t->data)[k] = u;
      break;
    case SEDP_NN_INT64:
      ((gint64 *) t->data)[k] = range > 0 ? (gint64) (r % (guint64) range) : 0;
      break;
    case SEDP_NN_INT32:
      ((gint32 *) t->data)[k] = range > 0 ? (gint32) (r % (guint64) range) : 0;
      break;
    default:
      ((guint8 *) t->data)[k] = range > 0 ? (guint8) (r % (guint64) MIN (range, 256)) : (r >> 63);
      break;
    }
  }
}

static int
cmd_bench (int argc, char **argv)
{
  gint64 batch = 64;
  int threads = 1;
  double seconds = 2.0;
  gint64 seed = 1;
  g_autofree char *cpus = NULL;
  g_auto (EngineArgs) ea = {0};
  const GOptionEntry entries[] = {
    {"batch", 'b', 0, G_OPTION_ARG_INT64, &batch, "Rows per run (default 64)", "N"},
    ENGINE_ENTRIES (ea),
    {"streams", 0, 0, G_OPTION_ARG_STRING, &ea.streams,
     "With --engine opencl: command queues the threads' runs are spread over, 1 to 8, or auto "
     "(profiled at T threads before the measure; default 1)",
     "N|auto"},
    {"cpus", 0, 0, G_OPTION_ARG_STRING, &cpus, "Run on these CPUs only (e.g. 1 or 0,2-3)", "LIST"},
    {"threads", 't', 0, G_OPTION_ARG_INT, &threads,
     "Threads, each running its own plan (default 1)", "T"},
    {"seconds", 's', 0, G_OPTION_ARG_DOUBLE, &seconds, "Measured time (default 2)", "S"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed of the random inputs (default 1)", "SEED"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model bench", "MODEL.onnx",
                       "Runs MODEL.onnx on random valid inputs (floats uniform in [0, 1), ids "
                       "uniform over the rows of the table they index) in T threads, each with "
                       "its own plan of N rows and OpenBLAS single-threaded, for S seconds after "
                       "a short warm-up. Prints RESULT rows_per_s=… (T × N × runs per second) and "
                       "RESULT gflops=…; with --engine opencl also RESULT streams=…, "
                       "queues_per_stream=…, device_open_ms=… and warmup_ms=… (the first run of "
                       "each plan, which compiles the kernels where the caches are cold).",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("model bench", "expected one MODEL.onnx (see --help)");
    return 2;
  }
  if (batch < 1 || batch > 1 << 24) {
    sedp_cli_error ("model bench", "--batch must be between 1 and 16777216");
    return 2;
  }
  if (threads < 1 || threads > 256) {
    sedp_cli_error ("model bench", "--threads must be between 1 and 256");
    return 2;
  }
  if (!(seconds > 0 && seconds <= 3600)) {
    sedp_cli_error ("model bench", "--seconds must be more than 0 and at most 3600");
    return 2;
  }
  if (!sedp_cli_apply_cpus ("model bench", cpus))
    return 2;
  g_autoptr (SedpNnDevice) device = NULL;
  int rc = engine_open ("model bench", &ea, &device);
  if (rc != 0)
    return rc;
  g_autoptr (SedpNnModel) model = load_model ("model bench", argv[1]);
  if (model == NULL)
    return 1;
  sedp_nn_set_blas_threads (1);
  double warmup_ms = 0;

  int status = 0;
  Worker *w = g_new0 (Worker, threads);
  GThread **th = g_new0 (GThread *, threads);
  double flops = 0;
  for (int i = 0; i < threads; i++) {
    g_autoptr (GError) error = NULL;
    gint64 t_plan = g_get_monotonic_time ();
    w[i].plan = sedp_nn_plan_new_on (model, batch, device, &error);
    if (w[i].plan == NULL) {
      sedp_cli_error ("model bench", error->message);
      status = 1;
      goto done;
    }
    flops = sedp_nn_plan_get_flops (w[i].plan);
    guint n_in = sedp_nn_plan_get_n_inputs (w[i].plan);
    w[i].inputs = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    w[i].in = g_new0 (SedpNnTensor, n_in ? n_in : 1);
    guint64 state = (guint64) seed * 0x9e3779b97f4a7c15ULL + (guint64) i + 1;
    for (guint k = 0; k < n_in; k++) {
      const SedpNnTensor *info = sedp_nn_plan_get_input (w[i].plan, k);
      SedpNnTensor *t = sedp_nn_tensor_new (info->name, info->dtype, info->rank, info->dims);
      gint64 range = 0;
      if (info->dtype == SEDP_NN_INT64 || info->dtype == SEDP_NN_INT32 ||
          info->dtype == SEDP_NN_INT8 || info->dtype == SEDP_NN_UINT8)
        range = k < model->n_inputs ? index_range (model, model->inputs[k].name) : 0;
      else if (info->dtype == SEDP_NN_BOOL)
        range = 2;
      fill_random (t, range, &state);
      g_ptr_array_add (w[i].inputs, t);
      w[i].in[k] = *t;
    }
    w[i].n_out = sedp_nn_plan_get_n_outputs (w[i].plan);
    w[i].out = g_new0 (SedpNnTensor, w[i].n_out ? w[i].n_out : 1);
    /* One run first: a model that fails on these inputs fails here, with its message. */
    if (!sedp_nn_plan_run (w[i].plan, n_in, w[i].in, w[i].n_out, w[i].out, &error)) {
      sedp_cli_error ("model bench", error->message);
      status = 1;
      goto done;
    }
    warmup_ms += (double) (g_get_monotonic_time () - t_plan) / 1000.0;
  }

  if (device && ea.auto_streams) {
    g_autoptr (GError) error = NULL;
    if (!sedp_nn_device_set_streams_auto (device, model, batch, (guint) threads, 150, &error)) {
      sedp_cli_error ("model bench", error->message);
      status = 1;
      goto done;
    }
  }
  g_mutex_init (&race.lock);
  g_cond_init (&race.cond);
  for (int i = 0; i < threads; i++)
    th[i] = g_thread_new ("bench", bench_thread, &w[i]);
  g_mutex_lock (&race.lock);
  gint64 now = g_get_monotonic_time ();
  race.warmup_end = now + (gint64) (MIN (0.5, seconds / 4) * G_USEC_PER_SEC);
  race.end = race.warmup_end + (gint64) (seconds * G_USEC_PER_SEC);
  race.go = TRUE;
  g_cond_broadcast (&race.cond);
  g_mutex_unlock (&race.lock);
  guint64 runs = 0;
  gint64 t0 = G_MAXINT64, t1 = 0;
  for (int i = 0; i < threads; i++) {
    g_thread_join (th[i]);
    th[i] = NULL;
  }
  for (int i = 0; i < threads; i++) {
    if (w[i].error) {
      sedp_cli_error ("model bench", w[i].error);
      status = 1;
      goto done;
    }
    runs += w[i].runs;
    t0 = MIN (t0, w[i].t_start);
    t1 = MAX (t1, w[i].t_end);
  }
  double elapsed = (double) (t1 - t0) / G_USEC_PER_SEC;
  double rows_per_s = (double) runs * (double) batch / elapsed;
  double gflops = flops * (double) runs / elapsed / 1e9;
  printf ("model %s: batch %" G_GINT64_FORMAT ", %d thread%s, %" G_GUINT64_FORMAT
          " runs in %.3f s, %.1f us per run, %.0f FLOPs per row\n",
          argv[1], batch, threads, threads == 1 ? "" : "s", runs, elapsed,
          elapsed * 1e6 * threads / (double) MAX (runs, 1), flops / (double) batch);
  printf ("RESULT rows_per_s=%.1f\n", rows_per_s);
  printf ("RESULT gflops=%.3f\n", gflops);
  if (device) {
    printf ("RESULT device=%s\n", sedp_nn_device_get_label (device));
    printf ("RESULT streams=%u\n", sedp_nn_device_get_streams (device));
    printf ("RESULT queues_per_stream=%u\n", sedp_nn_device_get_queues_per_stream (device));
    if (ea.auto_streams)
      printf ("RESULT streams_changes=%u\n", sedp_nn_device_get_stream_changes (device));
    printf ("RESULT device_open_ms=%.1f\n", ea.open_ms);
    printf ("RESULT warmup_ms=%.1f\n", warmup_ms);
  }
  g_mutex_clear (&race.lock);
  g_cond_clear (&race.cond);

done:
  for (int i = 0; i < threads; i++) {
    if (w[i].inputs)
      g_ptr_array_unref (w[i].inputs);
    g_free (w[i].in);
    g_free (w[i].out);
    g_free (w[i].error);
    if (w[i].plan)
      sedp_nn_plan_free (w[i].plan);
  }
  g_free (w);
  g_free (th);
  return status;
}

/* ---- synth ---- */

/* "512,256,128" → sizes. */
static gboolean
parse_layers (const char *opt, const char *text, guint *n, guint *sizes, gboolean allow_empty)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  guint count = 0;
  for (char **p = parts; *p; p++) {
    g_strstrip (*p);
    if (**p == '\0' && parts[1] == NULL && allow_empty)
      break;
    guint64 v = 0;
    if (count >= SEDP_NN_SYNTH_MAX_LAYERS ||
        !g_ascii_string_to_unsigned (*p, 10, 1, 65536, &v, NULL)) {
      g_autofree char *msg = g_strdup_printf (
        "--%s wants up to %d comma-separated sizes between 1 and 65536, not '%s'", opt,
        SEDP_NN_SYNTH_MAX_LAYERS, text);
      sedp_cli_error ("model synth", msg);
      return FALSE;
    }
    sizes[count++] = (guint) v;
  }
  if (count == 0 && !allow_empty) {
    g_autofree char *msg = g_strdup_printf ("--%s wants at least one size", opt);
    sedp_cli_error ("model synth", msg);
    return FALSE;
  }
  *n = count;
  return TRUE;
}

/* --@name's value @text (NULL: not given, *@seed kept) as a seed; FALSE with the message. */
static gboolean
parse_seed (const char *name, const char *text, guint64 *seed)
{
  if (text == NULL || g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, seed, NULL))
    return TRUE;
  g_autofree char *msg = g_strdup_printf ("--%s wants a non-negative integer, not '%s'", name,
                                          text);
  sedp_cli_error ("model synth", msg);
  return FALSE;
}

static int
cmd_synth (int argc, char **argv)
{
  g_autofree char *arch = NULL, *seed_text = NULL, *dense_seed_text = NULL, *preset = NULL;
  g_autofree char *out = NULL;
  g_autofree char *hidden = NULL, *bottom = NULL, *expert_hidden = NULL, *att_hidden = NULL;
  int slots = -1, dim = -1, rows = -1, ids = -1, dense = -1, cross = -1, experts = -1;
  int tower = -1, opset = -1, seq_len = -1, heads = -1, ffn = -1;
  int crosses = -1, cross_rank = -1, levels = -1, task_experts = -1, shared_experts = -1;
  const GOptionEntry entries[] = {
    {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch,
     "mlp, dlrm, dcn, deepfm, mmoe, wdl, dcnv2, dssm, esmm, ple, din, dien or bst", "ARCH"},
    {"seed", 0, 0, G_OPTION_ARG_STRING, &seed_text, "Seed of the weights (default 1)", "S"},
    {"dense-seed", 0, 0, G_OPTION_ARG_STRING, &dense_seed_text,
     "Seed of every weight but the embedding tables (default: --seed)", "S"},
    {"preset", 'p', 0, G_OPTION_ARG_STRING, &preset, "small (default) or realistic", "PRESET"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "The ONNX file to write", "FILE.onnx"},
    {"slots", 0, 0, G_OPTION_ARG_INT, &slots, "Sparse slots (embedding tables)", "N"},
    {"dim", 0, 0, G_OPTION_ARG_INT, &dim, "Embedding dimension", "D"},
    {"rows", 0, 0, G_OPTION_ARG_INT, &rows, "Rows per embedding table", "R"},
    {"ids-per-slot", 0, 0, G_OPTION_ARG_INT, &ids, "Ids per row and slot (multi-hot length)",
     "L"},
    {"dense", 0, 0, G_OPTION_ARG_INT, &dense, "Dense features", "N"},
    {"hidden", 0, 0, G_OPTION_ARG_STRING, &hidden, "Deep (top) MLP sizes, e.g. 512,256,128",
     "SIZES"},
    {"bottom", 0, 0, G_OPTION_ARG_STRING, &bottom,
     "dlrm: bottom MLP hidden sizes (its last layer outputs --dim)", "SIZES"},
    {"cross-layers", 0, 0, G_OPTION_ARG_INT, &cross, "dcn: cross layers", "N"},
    {"experts", 0, 0, G_OPTION_ARG_INT, &experts, "mmoe: experts", "K"},
    {"expert-hidden", 0, 0, G_OPTION_ARG_STRING, &expert_hidden, "mmoe: expert MLP sizes",
     "SIZES"},
    {"tower", 0, 0, G_OPTION_ARG_INT, &tower, "mmoe, ple: hidden size of the task towers", "N"},
    {"crosses", 0, 0, G_OPTION_ARG_INT, &crosses, "wdl: hashed cross features (inputs cross_K)",
     "N"},
    {"cross-rank", 0, 0, G_OPTION_ARG_INT, &cross_rank, "dcnv2: rank of the cross layers", "R"},
    {"levels", 0, 0, G_OPTION_ARG_INT, &levels, "ple: extraction levels", "N"},
    {"task-experts", 0, 0, G_OPTION_ARG_INT, &task_experts, "ple: experts per task and level",
     "K"},
    {"shared-experts", 0, 0, G_OPTION_ARG_INT, &shared_experts, "ple: shared experts per level",
     "K"},
    {"seq-len", 0, 0, G_OPTION_ARG_INT, &seq_len,
     "din, dien, bst: length of the behaviour sequence 'hist'", "L"},
    {"att-hidden", 0, 0, G_OPTION_ARG_STRING, &att_hidden,
     "din, dien: attention (activation unit) MLP sizes, e.g. 80,40", "SIZES"},
    {"heads", 0, 0, G_OPTION_ARG_INT, &heads, "bst: attention heads (dividing --dim)", "H"},
    {"ffn", 0, 0, G_OPTION_ARG_INT, &ffn, "bst: feed-forward hidden size", "N"},
    {"opset", 0, 0, G_OPTION_ARG_INT, &opset, "ONNX opset, 11 to 21 (default 17)", "V"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model synth", "",
                       "Writes a synthetic recommendation model as a complete ONNX graph shaped "
                       "like a PyTorch export: inputs 'dense' float [batch, N] and 'slot_K' "
                       "int64 [batch, L]; embedding tables 'emb_K' as Gather initializers with "
                       "sum or mean pooling; then the dense part of ARCH (din, dien and bst also "
                       "read 'item' int64 [batch, 1] and 'hist' int64 [batch, seq_len], 0 = "
                       "padding, both indexing 'emb_item'). Weights are drawn from "
                       "SEED, all but the embedding tables from --dense-seed when it is given "
                       "(the same tables under other dense weights): the same arguments write "
                       "the same file.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 1) {
    sedp_cli_error ("model synth", "unexpected arguments (see --help)");
    return 2;
  }
  if (arch == NULL) {
    sedp_cli_error ("model synth", "missing --arch (mlp, dlrm, dcn, deepfm, mmoe, wdl, dcnv2, dssm, esmm, ple, din, dien or bst)");
    return 2;
  }
  if (!g_strv_contains (sedp_nn_synth_archs (), arch)) {
    g_autofree char *list = g_strjoinv (", ", (char **) sedp_nn_synth_archs ());
    g_autofree char *msg = g_strdup_printf ("unknown --arch '%s' (known: %s)", arch, list);
    sedp_cli_error ("model synth", msg);
    return 2;
  }
  if (out == NULL) {
    sedp_cli_error ("model synth", "missing -o FILE.onnx");
    return 2;
  }
  guint64 seed = 1, dense_seed;
  if (!parse_seed ("seed", seed_text, &seed))
    return 2;
  dense_seed = seed;
  if (!parse_seed ("dense-seed", dense_seed_text, &dense_seed))
    return 2;
  SedpNnSynthOptions o;
  if (!sedp_nn_synth_options_init (&o, preset ? preset : "small", arch)) {
    g_autofree char *msg = g_strdup_printf ("unknown --preset '%s' (small or realistic)", preset);
    sedp_cli_error ("model synth", msg);
    return 2;
  }
#define SET(var, field, opt)                                                                    \
  if (var != -1) {                                                                              \
    if (var < 0) {                                                                              \
      sedp_cli_error ("model synth", "--" opt " must not be negative");                         \
      return 2;                                                                                 \
    }                                                                                           \
    o.field = (guint) var;                                                                      \
  }
  SET (slots, slots, "slots");
  SET (dim, dim, "dim");
  SET (rows, rows, "rows");
  SET (ids, ids_per_slot, "ids-per-slot");
  SET (dense, n_dense, "dense");
  SET (cross, cross_layers, "cross-layers");
  SET (experts, experts, "experts");
  SET (tower, tower, "tower");
  SET (crosses, crosses, "crosses");
  SET (cross_rank, cross_rank, "cross-rank");
  SET (levels, levels, "levels");
  SET (task_experts, task_experts, "task-experts");
  SET (shared_experts, shared_experts, "shared-experts");
  SET (seq_len, seq_len, "seq-len");
  SET (heads, heads, "heads");
  SET (ffn, ffn, "ffn");
#undef SET
  if (opset != -1)
    o.opset = opset;
  if (hidden && !parse_layers ("hidden", hidden, &o.n_hidden, o.hidden, FALSE))
    return 2;
  if (bottom && !parse_layers ("bottom", bottom, &o.n_bottom, o.bottom, TRUE))
    return 2;
  if (expert_hidden &&
      !parse_layers ("expert-hidden", expert_hidden, &o.n_expert_hidden, o.expert_hidden, FALSE))
    return 2;
  if (att_hidden &&
      !parse_layers ("att-hidden", att_hidden, &o.n_att_hidden, o.att_hidden, FALSE))
    return 2;

  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = sedp_nn_synth_seeds (arch, seed, dense_seed, &o, &error);
  if (model == NULL) {
    sedp_cli_error ("model synth", error->message);
    return 2;
  }
  if (!sedp_nn_model_save (model, out, &error)) {
    sedp_cli_error ("model synth", error->message);
    return 1;
  }
  guint64 params = 0;
  for (guint k = 0; k < model->n_initializers; k++)
    params += (guint64) sedp_nn_tensor_numel (model->initializers[k]);
  g_autofree char *dense_note = dense_seed == seed ? g_strdup ("")
    : g_strdup_printf (", dense seed %" G_GUINT64_FORMAT, dense_seed);
  printf ("wrote %s: %s, seed %" G_GUINT64_FORMAT "%s, opset %" G_GINT64_FORMAT
          ", %u inputs, %u outputs, %u nodes, %" G_GUINT64_FORMAT " parameters\n",
          out, arch, seed, dense_note, model->opset, model->n_inputs, model->n_outputs,
          model->n_nodes, params);
  return 0;
}

/* ---- ops ---- */

static int
cmd_ops (int argc, char **argv)
{
  (void) argv;
  if (argc > 1) {
    fprintf (stderr, "usage: sedp model ops\n");
    return 2;
  }
  g_auto (GStrv) names = sedp_nn_operator_names ();
  for (guint i = 0; names[i]; i++)
    printf ("%s\n", names[i]);
  return 0;
}

/* ---- devices ---- */

static int
cmd_devices (int argc, char **argv)
{
  const GOptionEntry entries[] = {G_OPTION_ENTRY_NULL};
  if (!sedp_cli_parse ("model devices", "",
                       "Lists the OpenCL devices sedp sees, one line each: the index that "
                       "selects the device for the OpenCL engine, \"PLATFORM: DEVICE\" (a "
                       "unique part of it also names the device), the type, the global memory "
                       "and the OpenCL C version.",
                       entries, &argc, &argv))
    return 2;
  if (argc > 1) {
    sedp_cli_error ("model devices", "takes no arguments (see --help)");
    return 2;
  }
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) lines = sedp_nn_device_list (&error);
  if (lines == NULL) {
    sedp_cli_error ("model devices", error->message);
    return 1;
  }
  for (guint i = 0; lines[i]; i++)
    printf ("%s\n", lines[i]);
  return 0;
}

/* ---- dispatch ---- */

static const SedpCliCommand subs[] = {
  {"info", cmd_info, "Inputs, outputs, operators, parameters and FLOPs of an ONNX model"},
  {"eval", cmd_eval, "Run a model on TensorProto inputs, write TensorProto outputs"},
  {"ops", cmd_ops, "List the operators the engine runs (default domain)"},
  {"devices", cmd_devices, "List the OpenCL devices sedp sees (the OpenCL engine's devices)"},
  {"bench", cmd_bench, "Measure rows/s and GFLOP/s on random inputs"},
  {"synth", cmd_synth, "Write a synthetic recommendation model (mlp, dlrm, dcn, deepfm, mmoe, wdl, dcnv2, dssm, esmm, ple, din, dien, bst)"},
  {"split", sedp_cmd_model_split, "Split a model into a cube of its embedding tables and a dense model"},
  {"pack", sedp_cmd_model_pack, "Make a bundle (REPO/NAME/VERSION) of a dense model and its cubes"},
  {"verify", sedp_cmd_model_verify, "Check a bundle: names, manifest, digests, signature, contents"},
  {"keygen", sedp_cmd_model_keygen, "Make an Ed25519 key pair to sign bundles"},
  {"sign", sedp_cmd_model_sign, "Sign a bundle's manifest (writes manifest.sig)"},
};

int
sedp_cmd_model (int argc, char **argv)
{
  return sedp_cli_dispatch ("model", "ONNX models of the dense engine, and model bundles.", NULL, subs,
                            G_N_ELEMENTS (subs), argc, argv);
}
