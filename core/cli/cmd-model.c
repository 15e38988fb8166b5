/* sedp model — ONNX models: info, eval, bench, synth, split. */
#include "cli.h"

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

static int
cmd_info (int argc, char **argv)
{
  gboolean verbose = FALSE;
  const GOptionEntry entries[] = {
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Also print the compiled schedule", NULL},
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
  SedpNnPlan *plan = sedp_nn_plan_new (model, batch, &error);
  if (plan == NULL) {
    printf ("flops/row:   unavailable: %s\n", error->message);
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
  const GOptionEntry entries[] = {
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
  SedpNnPlan *plan = sedp_nn_plan_new (model, batch, &error);
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
  const GOptionEntry entries[] = {
    {"batch", 'b', 0, G_OPTION_ARG_INT64, &batch, "Rows per run (default 64)", "N"},
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
                       "RESULT gflops=….",
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
  g_autoptr (SedpNnModel) model = load_model ("model bench", argv[1]);
  if (model == NULL)
    return 1;
  sedp_nn_set_blas_threads (1);

  int status = 0;
  Worker *w = g_new0 (Worker, threads);
  GThread **th = g_new0 (GThread *, threads);
  double flops = 0;
  for (int i = 0; i < threads; i++) {
    g_autoptr (GError) error = NULL;
    w[i].plan = sedp_nn_plan_new (model, batch, &error);
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

static int
cmd_synth (int argc, char **argv)
{
  g_autofree char *arch = NULL, *seed_text = NULL, *preset = NULL, *out = NULL;
  g_autofree char *hidden = NULL, *bottom = NULL, *expert_hidden = NULL;
  int slots = -1, dim = -1, rows = -1, ids = -1, dense = -1, cross = -1, experts = -1;
  int tower = -1, opset = -1;
  const GOptionEntry entries[] = {
    {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch, "mlp, dlrm, dcn, deepfm or mmoe", "ARCH"},
    {"seed", 0, 0, G_OPTION_ARG_STRING, &seed_text, "Seed of the weights (default 1)", "S"},
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
    {"tower", 0, 0, G_OPTION_ARG_INT, &tower, "mmoe: hidden size of the task towers", "N"},
    {"opset", 0, 0, G_OPTION_ARG_INT, &opset, "ONNX opset, 11 to 21 (default 17)", "V"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model synth", "",
                       "Writes a synthetic recommendation model as a complete ONNX graph shaped "
                       "like a PyTorch export: inputs 'dense' float [batch, N] and 'slot_K' "
                       "int64 [batch, L]; embedding tables 'emb_K' as Gather initializers with "
                       "sum or mean pooling; then the dense part of ARCH. Weights are drawn from "
                       "SEED: the same arguments write the same file.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 1) {
    sedp_cli_error ("model synth", "unexpected arguments (see --help)");
    return 2;
  }
  if (arch == NULL) {
    sedp_cli_error ("model synth", "missing --arch (mlp, dlrm, dcn, deepfm or mmoe)");
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
  guint64 seed = 1;
  if (seed_text && !g_ascii_string_to_unsigned (seed_text, 10, 0, G_MAXUINT64, &seed, NULL)) {
    g_autofree char *msg = g_strdup_printf ("--seed wants a non-negative integer, not '%s'",
                                            seed_text);
    sedp_cli_error ("model synth", msg);
    return 2;
  }
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

  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = sedp_nn_synth (arch, seed, &o, &error);
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
  printf ("wrote %s: %s, seed %" G_GUINT64_FORMAT ", opset %" G_GINT64_FORMAT
          ", %u inputs, %u outputs, %u nodes, %" G_GUINT64_FORMAT " parameters\n",
          out, arch, seed, model->opset, model->n_inputs, model->n_outputs, model->n_nodes, params);
  return 0;
}

/* ---- split ---- */

/* One id input taken out of the model: its table goes into the cube, its lookup and pooling
 * become the graph input pooled_K. */
typedef struct {
  guint input;            /* the id input's index among the graph inputs */
  guint slot;             /* K: its number among the split inputs */
  const SedpNnTensor *table;
  gboolean mean;          /* ReduceMean, or ReduceSum then Div by the id count */
  const char *value;      /* the pooled value the rest of the graph reads */
  gboolean keepdims;      /* @value is [batch, 1, dim] */
  char *pooled;           /* "pooled_K" */
} SplitSlot;

static void
split_slot_clear (gpointer p)
{
  g_free (((SplitSlot *) p)->pooled);
}

/* The node producing @name, or -1. */
static int
split_producer (const SedpNnModel *m, const char *name)
{
  for (guint k = 0; k < m->n_nodes; k++)
    for (guint o = 0; o < m->nodes[k].n_outputs; o++)
      if (strcmp (m->nodes[k].outputs[o], name) == 0)
        return (int) k;
  return -1;
}

/* The nodes reading @name. */
static GArray *
split_consumers (const SedpNnModel *m, const char *name)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint k = 0; k < m->n_nodes; k++)
    for (guint i = 0; i < m->nodes[k].n_inputs; i++)
      if (strcmp (m->nodes[k].inputs[i], name) == 0) {
        g_array_append_val (a, k);
        break;
      }
  return a;
}

static gboolean
split_is_output (const SedpNnModel *m, const char *name)
{
  for (guint k = 0; k < m->n_outputs; k++)
    if (strcmp (m->outputs[k].name, name) == 0)
      return TRUE;
  return FALSE;
}

/* The integers of a constant: an int64/int32 initializer or the output of a Constant node.
 * Returns the count (at most @max), or -1 when @name is not such a constant. */
static int
split_const_ints (const SedpNnModel *m, const char *name, gint64 *out, int max)
{
  const SedpNnTensor *t = sedp_nn_model_get_initializer (m, name);
  if (t == NULL) {
    int p = split_producer (m, name);
    if (p < 0 || strcmp (m->nodes[p].op_type, "Constant") != 0)
      return -1;
    const SedpNnAttr *a = sedp_nn_node_attr (&m->nodes[p], "value");
    if (a && a->type == SEDP_NN_ATTR_TENSOR)
      t = a->t;
    else if ((a = sedp_nn_node_attr (&m->nodes[p], "value_ints")) && a->type == SEDP_NN_ATTR_INTS) {
      for (guint k = 0; k < a->n_ints && (int) k < max; k++)
        out[k] = a->ints[k];
      return a->n_ints <= (guint) max ? (int) a->n_ints : -1;
    } else if ((a = sedp_nn_node_attr (&m->nodes[p], "value_int")) && a->type == SEDP_NN_ATTR_INT) {
      out[0] = a->i;
      return 1;
    }
  }
  if (t == NULL || t->data == NULL || (t->dtype != SEDP_NN_INT64 && t->dtype != SEDP_NN_INT32))
    return -1;
  gint64 n = sedp_nn_tensor_numel (t);
  if (n > max)
    return -1;
  for (gint64 k = 0; k < n; k++)
    out[k] = t->dtype == SEDP_NN_INT64 ? ((const gint64 *) t->data)[k]
                                       : ((const gint32 *) t->data)[k];
  return (int) n;
}

/* Whether reduce node @r pools over axis 1 of a rank-3 tensor (attribute or axes input). */
static gboolean
split_reduces_ids (const SedpNnModel *m, const SedpNnNode *r)
{
  gint64 axes[4];
  int n = -1;
  const SedpNnAttr *a = sedp_nn_node_attr (r, "axes");
  if (a && a->type == SEDP_NN_ATTR_INTS && a->n_ints <= 4) {
    n = (int) a->n_ints;
    memcpy (axes, a->ints, sizeof (gint64) * (gsize) n);
  } else if (r->n_inputs >= 2 && *r->inputs[1]) {
    n = split_const_ints (m, r->inputs[1], axes, 4);
  }
  return n == 1 && (axes[0] == 1 || axes[0] == -2);
}

/* ReduceSum's output @sum divided by the number of ids: Div (sum, Cast (Gather (Shape (ids),
 * 1))), as PyTorch exports `emb(ids).sum(1) / ids.size(1)`. Returns the Div node or -1. */
static int
split_div_by_count (const SedpNnModel *m, const char *sum, const char *ids)
{
  if (split_is_output (m, sum))
    return -1;
  g_autoptr (GArray) cons = split_consumers (m, sum);
  if (cons->len != 1)
    return -1;
  guint d = g_array_index (cons, guint, 0);
  const SedpNnNode *div = &m->nodes[d];
  if (strcmp (div->op_type, "Div") != 0 || div->n_inputs != 2 || strcmp (div->inputs[0], sum) != 0)
    return -1;
  int c = split_producer (m, div->inputs[1]);
  if (c < 0 || strcmp (m->nodes[c].op_type, "Cast") != 0)
    return -1;
  const SedpNnAttr *to = sedp_nn_node_attr (&m->nodes[c], "to");
  if (to == NULL || to->i != SEDP_NN_FLOAT)
    return -1;
  int g = split_producer (m, m->nodes[c].inputs[0]);
  if (g < 0 || strcmp (m->nodes[g].op_type, "Gather") != 0 || m->nodes[g].n_inputs != 2)
    return -1;
  const SedpNnAttr *axis = sedp_nn_node_attr (&m->nodes[g], "axis");
  gint64 idx[2];
  if ((axis && axis->i != 0) || split_const_ints (m, m->nodes[g].inputs[1], idx, 1) != 1 ||
      idx[0] != 1)
    return -1;
  int sh = split_producer (m, m->nodes[g].inputs[0]);
  if (sh < 0 || strcmp (m->nodes[sh].op_type, "Shape") != 0 ||
      strcmp (m->nodes[sh].inputs[0], ids) != 0 || m->nodes[sh].n_attrs != 0)
    return -1;
  return (int) d;
}

static gboolean G_GNUC_PRINTF (2, 3)
split_fail (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED, msg);
  g_free (msg);
  return FALSE;
}

/* Finds the id inputs to take out: every int64/int32 graph input read by a Gather of a float
 * [rows, dim] initializer on axis 0, pooled by ReduceSum/ReduceMean over the ids (rank-2 ids) or
 * not at all (rank-1 ids: one id per row). Marks the nodes removed in @removed. */
static gboolean
split_find (const SedpNnModel *m, GArray *slots, gboolean *removed, GError **error)
{
  for (guint i = 0; i < m->n_inputs; i++) {
    const SedpNnValueInfo *in = &m->inputs[i];
    if (in->dtype != SEDP_NN_INT64 && in->dtype != SEDP_NN_INT32)
      continue;
    g_autoptr (GArray) cons = split_consumers (m, in->name);
    int gather = -1;
    for (guint c = 0; c < cons->len; c++) {
      const SedpNnNode *n = &m->nodes[g_array_index (cons, guint, c)];
      if (strcmp (n->op_type, "Gather") != 0 || n->n_inputs != 2 ||
          strcmp (n->inputs[1], in->name) != 0)
        continue;
      const SedpNnTensor *t = sedp_nn_model_get_initializer (m, n->inputs[0]);
      const SedpNnAttr *axis = sedp_nn_node_attr (n, "axis");
      if (t == NULL || t->dtype != SEDP_NN_FLOAT || t->rank != 2 || (axis && axis->i != 0))
        continue;
      if (gather >= 0)
      {
        const SedpNnTensor *t0 = sedp_nn_model_get_initializer (m, m->nodes[gather].inputs[0]);
        return split_fail (error, "input '%s' indexes two tables ('%s' [%" G_GINT64_FORMAT ", %"
                           G_GINT64_FORMAT "] and '%s' [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                           "]); split takes one table per id input, all of one dim, into the "
                           "cube", in->name, t0->name, t0->dims[0], t0->dims[1], t->name,
                           t->dims[0], t->dims[1]);
      }
      gather = (int) g_array_index (cons, guint, c);
    }
    if (gather < 0)
      continue;
    const SedpNnNode *g = &m->nodes[gather];
    SplitSlot s = {.input = i, .slot = slots->len,
                   .table = sedp_nn_model_get_initializer (m, g->inputs[0])};
    if (in->rank == 1) {
      /* One id per row: the looked-up row is the value. */
      s.value = g->outputs[0];
      removed[gather] = TRUE;
    } else if (in->rank == 2) {
      g_autoptr (GArray) gc = split_consumers (m, g->outputs[0]);
      const SedpNnNode *r = gc->len == 1 ? &m->nodes[g_array_index (gc, guint, 0)] : NULL;
      gboolean is_sum = r && strcmp (r->op_type, "ReduceSum") == 0;
      if (r == NULL || split_is_output (m, g->outputs[0]) ||
          (!is_sum && strcmp (r->op_type, "ReduceMean") != 0) || !split_reduces_ids (m, r))
        return split_fail (error, "the lookup of input '%s' in table '%s' is not pooled by one "
                           "ReduceSum or ReduceMean over the ids (axis 1); split cannot replace "
                           "it by a pooled embedding", in->name, g->inputs[0]);
      const SedpNnAttr *kd = sedp_nn_node_attr (r, "keepdims");
      s.keepdims = kd == NULL || kd->i != 0;
      s.mean = !is_sum;
      s.value = r->outputs[0];
      removed[gather] = TRUE;
      removed[r - m->nodes] = TRUE;
      int div = is_sum ? split_div_by_count (m, r->outputs[0], in->name) : -1;
      if (div >= 0) {
        s.mean = TRUE;
        s.value = m->nodes[div].outputs[0];
        removed[div] = TRUE;
      }
    } else {
      return split_fail (error, "input '%s' has rank %d; split takes ids of rank 1 [batch] or 2 "
                         "[batch, ids]", in->name, in->rank);
    }
    s.pooled = g_strdup_printf ("pooled_%u", s.slot);
    g_array_append_val (slots, s);
  }
  if (slots->len == 0)
    return split_fail (error, "no embedding lookups to split: no int64 input indexes a float "
                       "[rows, dim] initializer through Gather on axis 0");
  guint dim = 0;
  const char *first = NULL;
  for (guint k = 0; k < slots->len; k++) {
    const SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    guint d = (guint) s->table->dims[1];
    if (k == 0) {
      dim = d;
      first = s->table->name;
    } else if (d != dim) {
      return split_fail (error, "the tables have different dims ('%s' has %u, '%s' has %u); one "
                         "cube holds one dim", first, dim, s->table->name, d);
    }
    if (d < 1 || d > CUBE_MAX_DIM)
      return split_fail (error, "table '%s' has dim %u (a cube holds 1 to %d)", s->table->name,
                         d, CUBE_MAX_DIM);
    if (sedp_nn_model_find_input (m, s->pooled) >= 0 || split_producer (m, s->pooled) >= 0 ||
        sedp_nn_model_get_initializer (m, s->pooled))
      return split_fail (error, "the model already has a value named '%s'", s->pooled);
  }
  return TRUE;
}

/* The dense model: @m without the tables, lookups and pooling of @slots, whose pooled values
 * become inputs pooled_K [batch, dim]; nodes and initializers left unused are dropped. Steals
 * nodes and initializers from @m. */
static SedpNnModel *
split_dense (SedpNnModel *m, GArray *slots, gboolean *removed, GError **error)
{
  /* What the rest of the graph reads instead of each pooled value. */
  g_autoptr (GHashTable) rename = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < slots->len; k++) {
    SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    if (!s->keepdims)
      g_hash_table_insert (rename, (gpointer) s->value, s->pooled);
  }
  /* Liveness from the graph outputs. */
  g_autoptr (GHashTable) used = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < m->n_outputs; k++)
    g_hash_table_add (used, m->outputs[k].name);
  g_autofree gboolean *live = g_new0 (gboolean, MAX (m->n_nodes, 1));
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    for (guint k = 0; k < m->n_nodes; k++) {
      if (removed[k] || live[k])
        continue;
      const SedpNnNode *n = &m->nodes[k];
      gboolean needed = FALSE;
      for (guint o = 0; o < n->n_outputs && !needed; o++)
        needed = g_hash_table_contains (used, n->outputs[o]);
      if (!needed)
        continue;
      live[k] = changed = TRUE;
      for (guint i = 0; i < n->n_inputs; i++)
        g_hash_table_add (used, n->inputs[i]);
    }
  }
  for (guint k = 0; k < slots->len; k++) {
    const SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    const char *ids = m->inputs[s->input].name;
    for (guint n = 0; n < m->n_nodes; n++)
      for (guint i = 0; live[n] && i < m->nodes[n].n_inputs; i++)
        if (strcmp (m->nodes[n].inputs[i], ids) == 0) {
          split_fail (error, "input '%s' is also read by node '%s' (%s); split needs id inputs "
                      "that only index their table", ids,
                      m->nodes[n].name ? m->nodes[n].name : "?", m->nodes[n].op_type);
          return NULL;
        }
    if (split_is_output (m, ids)) {
      split_fail (error, "input '%s' is also a graph output", ids);
      return NULL;
    }
  }

  SedpNnModel *d = sedp_nn_model_new (m->opset, m->producer);
  d->ir_version = m->ir_version;
  d->graph_name = g_strdup (m->graph_name);
  for (guint i = 0; i < m->n_inputs; i++) {
    const SedpNnValueInfo *in = &m->inputs[i];
    const SplitSlot *s = NULL;
    for (guint k = 0; k < slots->len; k++)
      if (g_array_index (slots, SplitSlot, k).input == i)
        s = &g_array_index (slots, SplitSlot, k);
    if (s == NULL) {
      sedp_nn_model_add_input (d, in->name, in->dtype, in->rank, in->dims,
                               (const char *const *) in->dim_params);
      continue;
    }
    gint64 dims[2] = {in->dims[0], s->table->dims[1]};
    const char *params[2] = {in->dim_params[0], NULL};
    sedp_nn_model_add_input (d, s->pooled, SEDP_NN_FLOAT, 2, dims, params);
  }
  for (guint k = 0; k < m->n_outputs; k++) {
    const SedpNnValueInfo *o = &m->outputs[k];
    sedp_nn_model_add_output (d, o->name, o->dtype, o->rank, o->dims,
                              (const char *const *) o->dim_params);
  }
  for (guint k = 0; k < m->n_initializers; k++)
    if (m->initializers[k] && g_hash_table_contains (used, m->initializers[k]->name)) {
      sedp_nn_model_add_initializer (d, m->initializers[k]);
      m->initializers[k] = NULL;
    }
  guint n_live = 0;
  for (guint k = 0; k < m->n_nodes; k++)
    n_live += live[k];
  d->nodes = g_new0 (SedpNnNode, MAX (n_live, 1));
  for (guint k = 0; k < m->n_nodes; k++) {
    if (!live[k])
      continue;
    SedpNnNode *n = &d->nodes[d->n_nodes++];
    *n = m->nodes[k];
    memset (&m->nodes[k], 0, sizeof m->nodes[k]);
    for (guint i = 0; i < n->n_inputs; i++) {
      const char *to = g_hash_table_lookup (rename, n->inputs[i]);
      if (to) {
        g_free (n->inputs[i]);
        n->inputs[i] = g_strdup (to);
      }
    }
  }
  /* Pooled values kept [batch, 1, dim] (keepdims) or read as graph outputs. */
  for (guint k = 0; k < slots->len; k++) {
    const SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    const char *in[3] = {s->pooled, NULL, NULL};
    const char *out[2] = {s->value, NULL};
    if (s->keepdims) {
      gint64 one = 1;
      if (d->opset >= 13) {
        g_autofree char *axes = g_strdup_printf ("%s_axes", s->pooled);
        gint64 n1 = 1;
        SedpNnTensor *t = sedp_nn_tensor_new (axes, SEDP_NN_INT64, 1, &n1);
        *(gint64 *) t->data = one;
        sedp_nn_model_add_initializer (d, t);
        in[1] = t->name;
        sedp_nn_model_add_node (d, "Unsqueeze", s->pooled, in, out);
      } else {
        SedpNnNode *n = sedp_nn_model_add_node (d, "Unsqueeze", s->pooled, in, out);
        sedp_nn_node_set_attr_ints (n, "axes", 1, &one);
      }
    } else if (split_is_output (m, s->value)) {
      sedp_nn_model_add_node (d, "Identity", s->pooled, in, out);
    }
  }
  return d;
}

static int
cmd_split (int argc, char **argv)
{
  g_autofree char *dense_path = NULL, *cube_dir = NULL, *hex = NULL, *name = NULL;
  g_autofree char *block_text = NULL;
  const GOptionEntry entries[] = {
    {"dense", 0, 0, G_OPTION_ARG_FILENAME, &dense_path, "The dense model to write", "OUT.onnx"},
    {"cube", 0, 0, G_OPTION_ARG_FILENAME, &cube_dir, "The cube to create (must not exist)", "DIR"},
    {"hash-key", 0, 0, G_OPTION_ARG_STRING, &hex,
     "The cube's signature key, 32 hex digits (default: random)", "HEX"},
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name, "The cube's name (default: the folder's name)",
     "NAME"},
    {"block-size", 0, 0, G_OPTION_ARG_STRING, &block_text,
     "Bytes per value block file of the cube (default 1 GiB)", "BYTES"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model split", "MODEL.onnx --dense OUT.onnx --cube DIR",
                       "Splits a model into a cube and a dense model. Every int64 input slot_K "
                       "that indexes a float [rows, dim] initializer through Gather (axis 0), "
                       "pooled by ReduceSum or ReduceMean over its ids (or by ReduceSum then a "
                       "division by the id count), gives its table to the cube: row r under the "
                       "signature of (K, r), K counting those inputs from 0 in graph-input "
                       "order. The dense model reads the pooled embeddings instead, as float "
                       "inputs pooled_K [batch, dim]; every other node is kept. All tables must "
                       "have the same dim. The cube_accessor stage computes pooled_K at serving "
                       "time.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("model split", "expected one MODEL.onnx (see --help)");
    return 2;
  }
  if (dense_path == NULL || cube_dir == NULL) {
    sedp_cli_error ("model split", "missing --dense OUT.onnx or --cube DIR");
    return 2;
  }
  guint8 key[SEDP_CUBE_HASH_KEY_BYTES];
  if (hex) {
    if (!cube_unhex (hex, key, sizeof key)) {
      g_autofree char *msg = g_strdup_printf ("--hash-key wants %d hex digits, not '%s'",
                                              2 * SEDP_CUBE_HASH_KEY_BYTES, hex);
      sedp_cli_error ("model split", msg);
      return 2;
    }
  } else {
    if (sodium_init () < 0) {
      sedp_cli_error ("model split", "no source of randomness for a hash key (give --hash-key)");
      return 1;
    }
    randombytes_buf (key, sizeof key);
  }
  guint64 block_size = 0;
  if (block_text && !g_ascii_string_to_unsigned (block_text, 10, 1, G_MAXUINT64, &block_size,
                                                 NULL)) {
    sedp_cli_error ("model split", "--block-size wants a number of bytes");
    return 2;
  }
  g_autoptr (SedpNnModel) model = load_model ("model split", argv[1]);
  if (model == NULL)
    return 1;

  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) slots = g_array_new (FALSE, FALSE, sizeof (SplitSlot));
  g_array_set_clear_func (slots, split_slot_clear);
  g_autofree gboolean *removed = g_new0 (gboolean, MAX (model->n_nodes, 1));
  if (!split_find (model, slots, removed, &error)) {
    g_autofree char *msg = g_strdup_printf ("%s: %s", argv[1], error->message);
    sedp_cli_error ("model split", msg);
    return 1;
  }
  guint dim = (guint) g_array_index (slots, SplitSlot, 0).table->dims[1];

  /* The cube first (into a temporary folder), while the tables are still in @model. */
  SedpCubeBuilder *b = sedp_cube_builder_new (cube_dir, name, dim, key, block_size, &error);
  if (b == NULL) {
    sedp_cli_error ("model split", error->message);
    return 1;
  }
  guint64 rows_total = 0;
  for (guint k = 0; k < slots->len; k++) {
    const SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    const float *data = s->table->data;
    for (gint64 r = 0; r < s->table->dims[0]; r++) {
      if (!sedp_cube_builder_add (b, sedp_signature (key, s->slot, (guint64) r),
                                  data + (gsize) r * dim, &error)) {
        g_autofree char *msg = g_strdup_printf ("table '%s' row %" G_GINT64_FORMAT ": %s",
                                                s->table->name, r, error->message);
        sedp_cli_error ("model split", msg);
        sedp_cube_builder_abort (b);
        return 1;
      }
    }
    rows_total += (guint64) s->table->dims[0];
  }
  /* Names and poolings for the summary, before the dense model steals from @model. */
  g_autoptr (GString) ids = g_string_new (NULL), pools = g_string_new (NULL);
  g_autoptr (GString) tables = g_string_new (NULL);
  for (guint k = 0; k < slots->len; k++) {
    const SplitSlot *s = &g_array_index (slots, SplitSlot, k);
    g_string_append_printf (ids, "%s%s", k ? ", " : "", model->inputs[s->input].name);
    g_string_append_printf (pools, "%s%s", k ? ", " : "", s->mean ? "mean" : "sum");
    g_string_append_printf (tables, "%s%s", k ? ", " : "", s->table->name);
  }
  g_autoptr (SedpNnModel) dense = split_dense (model, slots, removed, &error);
  if (dense == NULL) {
    g_autofree char *msg = g_strdup_printf ("%s: %s", argv[1], error->message);
    sedp_cli_error ("model split", msg);
    sedp_cube_builder_abort (b);
    return 1;
  }
  /* The dense model next to its place, renamed once the cube is complete. */
  g_autofree char *tmp = g_strdup_printf ("%s.tmp-XXXXXX", dense_path);
  int fd = g_mkstemp (tmp);
  if (fd < 0) {
    int e = errno;
    g_autofree char *msg = g_strdup_printf ("cannot write next to %s: %s", dense_path,
                                            g_strerror (e));
    sedp_cli_error ("model split", msg);
    sedp_cube_builder_abort (b);
    return 1;
  }
  close (fd);
  if (!sedp_nn_model_save (dense, tmp, &error)) {
    sedp_cli_error ("model split", error->message);
    g_unlink (tmp);
    sedp_cube_builder_abort (b);
    return 1;
  }
  if (!sedp_cube_builder_finish (b, &error)) {
    sedp_cli_error ("model split", error->message);
    g_unlink (tmp);
    return 1;
  }
  if (g_rename (tmp, dense_path) != 0) {
    int e = errno;
    g_autofree char *msg = g_strdup_printf ("cannot rename %s to %s: %s (the cube %s was "
                                            "written)", tmp, dense_path, g_strerror (e), cube_dir);
    sedp_cli_error ("model split", msg);
    g_unlink (tmp);
    return 1;
  }
  char khex[2 * SEDP_CUBE_HASH_KEY_BYTES + 1];
  cube_hex (key, sizeof key, khex);
  printf ("split %s: %u tables (%s), %" G_GUINT64_FORMAT " rows of dim %u\n", argv[1],
          slots->len, tables->str, rows_total, dim);
  printf ("cube:   %s (hash key %s)\n", cube_dir, khex);
  printf ("dense:  %s (%u inputs, %u nodes, %" G_GINT64_FORMAT " parameters)\n", dense_path,
          dense->n_inputs, dense->n_nodes, sedp_nn_model_get_n_parameters (dense));
  printf ("cube_accessor options: slots = %s; pooling = %s; hash_slot_ids = true\n", ids->str,
          pools->str);
  return 0;
}

/* ---- dispatch ---- */

static const SedpCliCommand subs[] = {
  {"info", cmd_info, "Inputs, outputs, operators, parameters and FLOPs of an ONNX model"},
  {"eval", cmd_eval, "Run a model on TensorProto inputs, write TensorProto outputs"},
  {"bench", cmd_bench, "Measure rows/s and GFLOP/s on random inputs"},
  {"synth", cmd_synth, "Write a synthetic recommendation model (mlp, dlrm, dcn, deepfm, mmoe)"},
  {"split", cmd_split, "Split a model into a cube of its embedding tables and a dense model"},
};

int
sedp_cmd_model (int argc, char **argv)
{
  return sedp_cli_dispatch ("model", "ONNX models of the dense engine.", NULL, subs,
                            G_N_ELEMENTS (subs), argc, argv);
}
