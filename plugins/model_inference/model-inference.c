/* model_inference — runs an ONNX model on the dense engine over the rows of frames.
 *
 * It uses the SDK's engine API (<sedp/engine.h>, part of <sedp/sedp.h>). The model is
 * loaded once in `create` and shared read-only by everything; compiled plans (one per row
 * count, each with its own arena) are cached per worker thread and per instance, so `process`
 * takes no lock. See docs/model-inference.md. */
#define _GNU_SOURCE
#include <sedp/sedp.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_CACHE_SIZE 16

/* One graph input: the column it reads and what it needs. */
typedef struct {
  char *name;         /* the model's input name */
  char *column;       /* the frame column it reads */
  SedpNnDType dtype;  /* FLOAT or INT64 */
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK]; /* dims[0] is the batch */
  guint width;        /* values per row: the product of dims[1..] */
  char *shape;        /* "[N, 3]", for messages */
} InputMap;

/* One graph output written as a float32 column. */
typedef struct {
  guint index;        /* among the model's outputs */
  char *name;
  char *column;
  guint width;
} OutputMap;

typedef struct {
  gint64 rows;
  SedpNnPlan *plan;
  guint64 used;
} CachedPlan;

/* The compiled plans of one instance in one worker: a small LRU keyed by row count. */
typedef struct {
  CachedPlan slots[PLAN_CACHE_SIZE];
  guint n;
  guint64 tick;
} PlanCache;

/* Where one input row comes from: an event of the batch and a row of its frame. */
typedef struct {
  guint ev;
  guint row;
} RowRef;

/* What process knows about one event of the batch. */
typedef struct {
  SedpEvent *event;
  SedpFrame *frame;
  gboolean ok;        /* passed the checks, still to be scored */
} EventState;

/* Per-worker state: only ever touched by the worker's own thread. */
typedef struct {
  gboolean ready;
  PlanCache *caches;             /* one per instance */
  GArray *events;                /* EventState */
  GArray *rows;                  /* RowRef */
  GPtrArray *in_cols;            /* const SedpColumn *, n_events × n_in */
  GPtrArray *out_data;           /* float *, n_events × n_out */
  gpointer *bufs;                /* per input: gathered rows */
  gsize *buf_bytes;
  SedpNnTensor *in;              /* n_in */
  SedpNnTensor *out;             /* the model's n_outputs */
} Worker;

typedef struct {
  char *stage;
  char *model_path;
  SedpNnModel *model;
  gint64 parameters;
  guint n_in;
  InputMap *in;
  guint n_out;
  OutputMap *out;
  guint instances;
  gboolean drop_inputs; /* remove the input columns once scored */
  gboolean select_mod;
  guint n_pin;
  int *pin_cpus;
  gint64 max_batch_rows;
  gint64 row_granule;            /* plans are made for multiples of this (padded rows) */
  gint64 fixed_batch;            /* > 0: the model only runs at this batch (rows are padded) */
  guint n_workers;
  Worker *workers;
  gint rr;                       /* atomic: round-robin position */
  gint plans_cached;             /* atomic */
  gint *instance_runs;           /* atomic, per instance */
  SedpCounter *rows_scored;
  SedpCounter *engine_runs;
  SedpCounter *plans_compiled;
  SedpNnDevice *device;          /* engine = opencl: where plans run (NULL: the CPU engine) */
  double device_ready_ms;        /* engine = opencl: open, lower and warm up at create */
} ModelInference;

/* ---- create ---- */

static void
input_map_clear (InputMap *m)
{
  g_free (m->name);
  g_free (m->column);
  g_free (m->shape);
}

static void
output_map_clear (OutputMap *m)
{
  g_free (m->name);
  g_free (m->column);
}

static void
plan_cache_clear (ModelInference *mi, PlanCache *c)
{
  for (guint k = 0; k < c->n; k++) {
    sedp_nn_plan_free (c->slots[k].plan);
    g_atomic_int_add (&mi->plans_cached, -1);
  }
  c->n = 0;
}

static void
mi_destroy (gpointer instance)
{
  ModelInference *mi = instance;
  for (guint w = 0; mi->workers && w < mi->n_workers; w++) {
    Worker *wk = &mi->workers[w];
    if (!wk->ready)
      continue;
    for (guint k = 0; k < mi->instances; k++)
      plan_cache_clear (mi, &wk->caches[k]);
    g_free (wk->caches);
    g_array_unref (wk->events);
    g_array_unref (wk->rows);
    g_ptr_array_unref (wk->in_cols);
    g_ptr_array_unref (wk->out_data);
    for (guint i = 0; i < mi->n_in; i++)
      g_free (wk->bufs[i]);
    g_free (wk->bufs);
    g_free (wk->buf_bytes);
    g_free (wk->in);
    g_free (wk->out);
  }
  g_free (mi->workers);
  for (guint i = 0; i < mi->n_in; i++)
    input_map_clear (&mi->in[i]);
  g_free (mi->in);
  for (guint i = 0; i < mi->n_out; i++)
    output_map_clear (&mi->out[i]);
  g_free (mi->out);
  g_free (mi->pin_cpus);
  g_free (mi->instance_runs);
  if (mi->model)
    sedp_nn_model_unref (mi->model);
  sedp_nn_device_unref (mi->device); /* after the plans, which hold it too */
  g_free (mi->model_path);
  g_free (mi->stage);
  g_free (mi);
}

/* "a=b" → (a, b); "a" → (a, a). FALSE for an empty side. */
static gboolean
split_mapping (const char *item, char **key, char **value)
{
  const char *eq = strchr (item, '=');
  *key = g_strstrip (eq ? g_strndup (item, (gsize) (eq - item)) : g_strdup (item));
  *value = g_strstrip (g_strdup (eq ? eq + 1 : item));
  if (**key == '\0' || **value == '\0') {
    g_clear_pointer (key, g_free);
    g_clear_pointer (value, g_free);
    return FALSE;
  }
  return TRUE;
}

/* The graph inputs (@outputs FALSE) or outputs of @m: names, dtypes, shapes (-1: symbolic). */
static SedpNnTensor *
value_infos (const SedpNnModel *m, gboolean outputs, guint *n)
{
  *n = outputs ? sedp_nn_model_get_n_outputs (m) : sedp_nn_model_get_n_inputs (m);
  SedpNnTensor *v = g_new0 (SedpNnTensor, MAX (*n, 1));
  for (guint i = 0; i < *n; i++) {
    if (outputs)
      sedp_nn_model_get_output_info (m, i, &v[i]);
    else
      sedp_nn_model_get_input_info (m, i, &v[i]);
  }
  return v;
}

static char *
names_of (const SedpNnTensor *vi, guint n)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", vi[i].name);
  return g_string_free (s, FALSE);
}

static int
find_value (const SedpNnTensor *vi, guint n, const char *name)
{
  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (vi[i].name, name) == 0)
      return (int) i;
  return -1;
}

static char *
shape_string (int rank, const gint64 *dims)
{
  GString *s = g_string_new ("[");
  for (int k = 0; k < rank; k++) {
    if (k)
      g_string_append (s, ", ");
    if (k == 0)
      g_string_append (s, "N");
    else
      g_string_append_printf (s, "%" G_GINT64_FORMAT, dims[k]);
  }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static gboolean
setup_inputs (ModelInference *mi, SedpStageContext *ctx, GError **error)
{
  guint n_inputs;
  g_autofree SedpNnTensor *inputs = value_infos (mi->model, FALSE, &n_inputs);
  mi->n_in = n_inputs;
  mi->in = g_new0 (InputMap, MAX (n_inputs, 1));
  for (guint i = 0; i < n_inputs; i++) {
    const SedpNnTensor *vi = &inputs[i];
    InputMap *im = &mi->in[i];
    im->name = g_strdup (vi->name);
    im->column = g_strdup (vi->name);
    im->dtype = vi->dtype;
    im->rank = vi->rank;
    if (vi->dtype != SEDP_NN_FLOAT && vi->dtype != SEDP_NN_INT64) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model input '%s' has type %s; model_inference feeds float (from float32 "
                   "columns) and int64 (from int64, uint64 and idlist columns) inputs",
                   vi->name, sedp_nn_dtype_name (vi->dtype));
      return FALSE;
    }
    if (vi->rank < 1) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model input '%s' has %s; model_inference needs a batch dimension first",
                   vi->name, vi->rank < 0 ? "no shape" : "rank 0");
      return FALSE;
    }
    guint64 width = 1;
    for (int k = 0; k < vi->rank; k++) {
      im->dims[k] = vi->dims[k];
      if (k == 0)
        continue;
      if (vi->dims[k] < 0) {
        g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                     "model input '%s': dimension %d is symbolic; only the first (batch) "
                     "dimension may be",
                     vi->name, k);
        return FALSE;
      }
      width *= (guint64) vi->dims[k];
    }
    if (width == 0 || width > G_MAXINT32) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model input '%s' has %" G_GUINT64_FORMAT " values per row", vi->name, width);
      return FALSE;
    }
    im->width = (guint) width;
    im->shape = shape_string (vi->rank, vi->dims);
  }
  const char *const *map = sedp_stage_context_get_strv (ctx, "inputs");
  for (guint k = 0; map && map[k]; k++) {
    g_autofree char *name = NULL, *column = NULL;
    if (!split_mapping (map[k], &name, &column)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "inputs: '%s' is not MODEL_INPUT=COLUMN", map[k]);
      return FALSE;
    }
    int i = find_value (inputs, n_inputs, name);
    if (i < 0) {
      g_autofree char *names = names_of (inputs, n_inputs);
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "inputs: the model has no input '%s' (its inputs: %s)", name, names);
      return FALSE;
    }
    g_free (mi->in[i].column);
    mi->in[i].column = g_steal_pointer (&column);
  }
  return TRUE;
}

static gboolean
setup_outputs (ModelInference *mi, SedpStageContext *ctx, GError **error)
{
  guint n_outputs;
  g_autofree SedpNnTensor *outputs = value_infos (mi->model, TRUE, &n_outputs);
  const char *const *map = sedp_stage_context_get_strv (ctx, "outputs");
  if (map && map[0]) {
    guint n = g_strv_length ((char **) map);
    mi->out = g_new0 (OutputMap, n);
    for (guint k = 0; k < n; k++) {
      g_autofree char *name = NULL, *column = NULL;
      if (!split_mapping (map[k], &name, &column)) {
        g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                     "outputs: '%s' is not MODEL_OUTPUT=COLUMN", map[k]);
        return FALSE;
      }
      int i = find_value (outputs, n_outputs, name);
      if (i < 0) {
        g_autofree char *names = names_of (outputs, n_outputs);
        g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                     "outputs: the model has no output '%s' (its outputs: %s)", name, names);
        return FALSE;
      }
      mi->out[mi->n_out++] = (OutputMap){.index = (guint) i, .name = g_steal_pointer (&name),
                                         .column = g_steal_pointer (&column)};
    }
  } else {
    mi->out = g_new0 (OutputMap, MAX (n_outputs, 1));
    for (guint i = 0; i < n_outputs; i++)
      mi->out[mi->n_out++] = (OutputMap){.index = i, .name = g_strdup (outputs[i].name),
                                         .column = g_strdup (outputs[i].name)};
  }
  for (guint a = 0; a < mi->n_out; a++)
    for (guint b = a + 1; b < mi->n_out; b++)
      if (strcmp (mi->out[a].column, mi->out[b].column) == 0) {
        g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                     "outputs: model outputs '%s' and '%s' both write column '%s'",
                     mi->out[a].name, mi->out[b].name, mi->out[a].column);
        return FALSE;
      }
  return TRUE;
}

/* Appends the column of `outputs` item @item to @cols (and its model output to @names), or
 * fails naming the item when it is malformed or writes a column an earlier item writes. */
static gboolean
declare_output (const char *item, GPtrArray *names, GPtrArray *cols, GError **error)
{
  g_autofree char *name = NULL, *column = NULL;
  if (!split_mapping (item, &name, &column)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "outputs: '%s' is not MODEL_OUTPUT=COLUMN", item);
    return FALSE;
  }
  guint at;
  if (g_ptr_array_find_with_equal_func (cols, column, g_str_equal, &at)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "outputs: model outputs '%s' and '%s' both write column '%s'",
                 (char *) names->pdata[at], name, column);
    return FALSE;
  }
  g_ptr_array_add (names, g_steal_pointer (&name));
  g_ptr_array_add (cols, g_steal_pointer (&column));
  return TRUE;
}

/* `writes` (for sedp check): the columns the `outputs` option names — COLUMN of each
 * MODEL_OUTPUT=COLUMN, MODEL_OUTPUT of an item without '='. %NULL without an error when
 * `outputs` is not set: the model's outputs are known only once it is loaded. Opens nothing;
 * called from one thread. */
static char **
mi_writes (const SedpStageContext *ctx, GError **error)
{
  const char *const *map = sedp_stage_context_get_strv (ctx, "outputs");
  if (map == NULL || map[0] == NULL)
    return NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *cols = g_ptr_array_new_with_free_func (g_free);
  for (guint k = 0; map[k]; k++)
    if (!declare_output (map[k], names, cols, error)) {
      g_ptr_array_unref (cols);
      return NULL;
    }
  g_ptr_array_set_free_func (cols, NULL);
  g_ptr_array_add (cols, NULL);
  return (char **) g_ptr_array_free (cols, FALSE);
}

/* Checks what can only be known from a compiled plan: every mapped output has the batch first,
 * and its width. */
static gboolean
probe (ModelInference *mi, GError **error)
{
  gint64 batch = mi->fixed_batch > 0 ? mi->fixed_batch : 2;
  GError *local = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (mi->model, batch, &local);
  if (plan == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "model %s: %s", mi->model_path,
                 local->message);
    g_error_free (local);
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < sedp_nn_plan_get_n_inputs (plan) && ok; i++)
    if (sedp_nn_plan_input_is_parameter (plan, i)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model %s: graph input '%s' is read where a constant is needed (a shape, axes, "
                   "bounds): the stage feeds inputs from columns, row by row; make it an "
                   "initializer of the model",
                   mi->model_path, sedp_nn_plan_get_input (plan, i)->name);
      ok = FALSE;
    }
  for (guint k = 0; k < mi->n_out && ok; k++) {
    const SedpNnTensor *t = sedp_nn_plan_get_output (plan, mi->out[k].index);
    guint64 width = 1;
    for (int d = 1; d < t->rank; d++)
      width *= (guint64) t->dims[d];
    if (t->rank < 1 || t->dims[0] != batch) {
      g_autofree char *shape = sedp_nn_shape_to_string (t->rank, t->dims);
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model output '%s' has shape %s at batch %" G_GINT64_FORMAT
                   ": its first dimension is not the batch, so it cannot be written as a column",
                   mi->out[k].name, shape, batch);
      ok = FALSE;
    } else if (width == 0 || width > G_MAXINT32) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "model output '%s' has %" G_GUINT64_FORMAT " values per row", mi->out[k].name,
                   width);
      ok = FALSE;
    } else
      mi->out[k].width = (guint) width;
  }
  sedp_nn_plan_free (plan);
  return ok;
}

static gboolean
parse_pin_cpus (ModelInference *mi, SedpStageContext *ctx, GError **error)
{
  const char *const *cpus = sedp_stage_context_get_strv (ctx, "pin_cpus");
  if (cpus == NULL || cpus[0] == NULL)
    return TRUE;
  cpu_set_t allowed;
  CPU_ZERO (&allowed);
  gboolean know_allowed = sched_getaffinity (0, sizeof allowed, &allowed) == 0;
  mi->n_pin = g_strv_length ((char **) cpus);
  mi->pin_cpus = g_new (int, mi->n_pin);
  for (guint k = 0; k < mi->n_pin; k++) {
    char *end = NULL;
    errno = 0;
    gint64 v = g_ascii_strtoll (cpus[k], &end, 10);
    if (errno || end == cpus[k] || *end != '\0' || v < 0 || v >= CPU_SETSIZE) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "pin_cpus: '%s' is not a CPU number (0 to %d)", cpus[k], CPU_SETSIZE - 1);
      return FALSE;
    }
    if (know_allowed && !CPU_ISSET ((int) v, &allowed)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "pin_cpus: CPU %" G_GINT64_FORMAT " is not available to this process (%d "
                   "CPUs are)",
                   v, CPU_COUNT (&allowed));
      return FALSE;
    }
    mi->pin_cpus[k] = (int) v;
  }
  return TRUE;
}

/* ---- engine = opencl (docs/opencl.md §2.4, §6) ---- */

/* Runs a device plan of @rows once on zero inputs (valid: id 0 exists in every table), so that
 * its kernels and CLBlast's are compiled before the first request. */
static gboolean
warm_plan (ModelInference *mi, gint64 rows, GError **error)
{
  SedpNnPlan *plan = sedp_nn_plan_new_on (mi->model, rows, mi->device, error);
  if (plan == NULL)
    return FALSE;
  guint n_in = sedp_nn_plan_get_n_inputs (plan), n_out = sedp_nn_plan_get_n_outputs (plan);
  g_autoptr (GPtrArray) zeros = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_autofree SedpNnTensor *in = g_new0 (SedpNnTensor, MAX (n_in, 1));
  g_autofree SedpNnTensor *out = g_new0 (SedpNnTensor, MAX (n_out, 1));
  for (guint i = 0; i < n_in; i++) {
    const SedpNnTensor *t = sedp_nn_plan_get_input (plan, i);
    SedpNnTensor *z = sedp_nn_tensor_new (t->name, t->dtype, t->rank, t->dims); /* zeroed */
    g_ptr_array_add (zeros, z);
    in[i] = *z;
  }
  gboolean ok = sedp_nn_plan_run (plan, n_in, in, n_out, out, error);
  sedp_nn_plan_free (plan);
  return ok;
}

/* streams = 1…8 or auto (0). */
static gboolean
parse_streams (const char *text, guint *streams, GError **error)
{
  guint64 v = 0;
  if (g_strcmp0 (text, "auto") == 0) {
    *streams = 0;
    return TRUE;
  }
  if (text && g_ascii_string_to_unsigned (text, 10, 1, SEDP_NN_MAX_STREAMS, &v, NULL)) {
    *streams = (guint) v;
    return TRUE;
  }
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
               "streams: '%s' is not 1 to %d or auto", text ? text : "", SEDP_NN_MAX_STREAMS);
  return FALSE;
}

/* A fixed count, or auto's start profile at the stage's parallelism and largest run. */
static gboolean
set_streams (ModelInference *mi, guint streams, guint profile_ms, GError **error)
{
  if (streams > 0)
    return sedp_nn_device_set_streams (mi->device, streams, error);
  gint64 batch = mi->fixed_batch > 0 ? mi->fixed_batch : mi->max_batch_rows;
  return sedp_nn_device_set_streams_auto (mi->device, mi->model, batch, mi->n_workers, profile_ms,
                                          error);
}

/* Opens the device, sets its streams, and warms the plans of the largest and the smallest run
 * (CLBlast compiles a different GEMM kernel for small and large products). */
static gboolean
setup_device (ModelInference *mi, SedpStageContext *ctx, GError **error)
{
  const char *engine = sedp_stage_context_get_string (ctx, "engine");
  const char *spec = sedp_stage_context_get_string (ctx, "device");
  const char *streams_text = sedp_stage_context_get_string (ctx, "streams");
  if (g_strcmp0 (engine, "opencl") != 0) {
    if (spec || streams_text)
      g_warning ("stage '%s': device and streams apply to engine = opencl; ignored", mi->stage);
    return TRUE;
  }
  guint streams = 0;
  guint profile_ms = (guint) sedp_stage_context_get_int (ctx, "streams_profile_ms");
  if (!parse_streams (streams_text ? streams_text : "auto", &streams, error))
    return FALSE;
  gint64 t0 = g_get_monotonic_time ();
  GError *local = NULL;
  mi->device = sedp_nn_device_open (spec, &local);
  if (mi->device == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_UNAVAILABLE, "engine = opencl: %s",
                 local->message);
    g_error_free (local);
    return FALSE;
  }
  gint64 big = mi->fixed_batch > 0 ? mi->fixed_batch : mi->max_batch_rows;
  gint64 small = mi->fixed_batch > 0 ? mi->fixed_batch : mi->row_granule;
  if (!warm_plan (mi, big, &local) || (small != big && !warm_plan (mi, small, &local)) ||
      !set_streams (mi, streams, profile_ms, &local)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_UNAVAILABLE, "model %s: %s",
                 mi->model_path, local->message);
    g_error_free (local);
    return FALSE;
  }
  mi->device_ready_ms = (double) (g_get_monotonic_time () - t0) / 1000.0;
  guint active = sedp_nn_device_get_streams (mi->device);
  g_message ("stage '%s': OpenCL device %s ready in %.2f s (%s%u stream%s of %u queue%s)",
             mi->stage, sedp_nn_device_get_label (mi->device), mi->device_ready_ms / 1000.0,
             streams ? "" : "auto: ", active, active == 1 ? "" : "s",
             sedp_nn_device_get_queues_per_stream (mi->device),
             sedp_nn_device_get_queues_per_stream (mi->device) == 1 ? "" : "s");
  return TRUE;
}

static gpointer
mi_create (SedpStageContext *ctx, GError **error)
{
  /* BLAS runs single-threaded inside stage workers: the stage's parallelism is the unit of
   * concurrency. */
  sedp_nn_set_blas_threads (1);
  ModelInference *mi = g_new0 (ModelInference, 1);
  mi->stage = g_strdup (sedp_stage_context_get_name (ctx));
  mi->model_path = g_strdup (sedp_stage_context_get_string (ctx, "model"));
  mi->instances = (guint) sedp_stage_context_get_int (ctx, "instances");
  mi->select_mod = g_strcmp0 (sedp_stage_context_get_string (ctx, "select"), "mod") == 0;
  mi->max_batch_rows = sedp_stage_context_get_int (ctx, "max_batch_rows");
  mi->drop_inputs = sedp_stage_context_get_bool (ctx, "drop_inputs");
  mi->row_granule = MAX (sedp_stage_context_get_int (ctx, "row_granule"), 1);
  mi->n_workers = MAX (sedp_stage_context_get_parallelism (ctx), 1);
  if (mi->instances < 1)
    mi->instances = 1;
  if (mi->max_batch_rows < 1)
    mi->max_batch_rows = 1;

  GError *local = NULL;
  if (mi->model_path == NULL || *mi->model_path == '\0') {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "model: no model file given");
    goto fail;
  }
  mi->model = sedp_nn_model_load (mi->model_path, &local);
  if (mi->model == NULL) {
    if (strstr (local->message, mi->model_path))
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_UNAVAILABLE,
                   "cannot load the model: %s", local->message);
    else
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_UNAVAILABLE,
                   "cannot load the model %s: %s", mi->model_path, local->message);
    g_error_free (local);
    goto fail;
  }
  if (!sedp_nn_model_check (mi->model, &local)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "model %s: %s", mi->model_path,
                 local->message);
    g_error_free (local);
    goto fail;
  }
  mi->parameters = sedp_nn_model_get_n_parameters (mi->model);
  if (sedp_nn_model_get_n_inputs (mi->model) == 0 || sedp_nn_model_get_n_outputs (mi->model) == 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "model %s has no %s", mi->model_path,
                 sedp_nn_model_get_n_inputs (mi->model) == 0 ? "graph inputs" : "graph outputs");
    goto fail;
  }
  if (!setup_inputs (mi, ctx, error) || !setup_outputs (mi, ctx, error))
    goto fail;
  /* the executor takes the first input's first dimension as the batch */
  mi->fixed_batch = mi->in[0].dims[0] >= 0 ? mi->in[0].dims[0] : 0;
  if (mi->fixed_batch == 0 && mi->in[0].dims[0] == 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "model input '%s' has a fixed batch of 0", mi->in[0].name);
    goto fail;
  }
  if (!probe (mi, error) || !parse_pin_cpus (mi, ctx, error) || !setup_device (mi, ctx, error))
    goto fail;

  mi->workers = g_new0 (Worker, mi->n_workers);
  mi->instance_runs = g_new0 (gint, mi->instances);
  mi->rows_scored = sedp_stage_context_add_counter (ctx, "rows_scored_total",
                                                    "Rows the model scored");
  mi->engine_runs = sedp_stage_context_add_counter (ctx, "engine_runs_total",
                                                    "Runs of the model (one per chunk of rows)");
  mi->plans_compiled = sedp_stage_context_add_counter (
      ctx, "plans_compiled_total", "Plans compiled for a new row count (plan cache misses)");
  g_debug ("stage '%s': model %s (%u inputs, %u outputs, %" G_GINT64_FORMAT " parameters), "
           "%u instances, select %s",
           mi->stage, mi->model_path, mi->n_in, mi->n_out, mi->parameters, mi->instances,
           mi->select_mod ? "mod" : "rr");
  return mi;

fail:
  mi_destroy (mi);
  return NULL;
}

/* ---- process ---- */

static void
worker_init (ModelInference *mi, Worker *w, guint index)
{
  w->caches = g_new0 (PlanCache, mi->instances);
  w->events = g_array_new (FALSE, TRUE, sizeof (EventState));
  w->rows = g_array_new (FALSE, FALSE, sizeof (RowRef));
  w->in_cols = g_ptr_array_new ();
  w->out_data = g_ptr_array_new ();
  w->bufs = g_new0 (gpointer, MAX (mi->n_in, 1));
  w->buf_bytes = g_new0 (gsize, MAX (mi->n_in, 1));
  w->in = g_new0 (SedpNnTensor, MAX (mi->n_in, 1));
  w->out = g_new0 (SedpNnTensor, MAX (sedp_nn_model_get_n_outputs (mi->model), 1));
  if (mi->n_pin > 0) {
    /* Pinning is per worker thread, once: worker w runs on pin_cpus[w % n]. */
    cpu_set_t set;
    CPU_ZERO (&set);
    int cpu = mi->pin_cpus[index % mi->n_pin];
    CPU_SET (cpu, &set);
    int rc = pthread_setaffinity_np (pthread_self (), sizeof set, &set);
    if (rc != 0)
      g_warning ("stage '%s': worker %u: cannot pin to CPU %d: %s", mi->stage, index, cpu,
                 g_strerror (rc));
  }
  w->ready = TRUE;
}

/* The plan for @rows in @cache, compiled on a miss (evicting the least recently used). */
static SedpNnPlan *
get_plan (ModelInference *mi, PlanCache *c, gint64 rows, GError **error)
{
  c->tick++;
  for (guint k = 0; k < c->n; k++)
    if (c->slots[k].rows == rows) {
      c->slots[k].used = c->tick;
      return c->slots[k].plan;
    }
  SedpNnPlan *plan = sedp_nn_plan_new_on (mi->model, rows, mi->device, error);
  if (plan == NULL)
    return NULL;
  for (guint k = 0; k < mi->n_out; k++) {
    const SedpNnTensor *t = sedp_nn_plan_get_output (plan, mi->out[k].index);
    gint64 width = 1;
    for (int d = 1; d < t->rank; d++)
      width *= t->dims[d];
    if (t->rank < 1 || t->dims[0] != rows || width != mi->out[k].width) {
      g_autofree char *shape = sedp_nn_shape_to_string (t->rank, t->dims);
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL,
                   "model output '%s' has shape %s at batch %" G_GINT64_FORMAT
                   ", expected %" G_GINT64_FORMAT " rows of %u values",
                   mi->out[k].name, shape, rows, rows, mi->out[k].width);
      sedp_nn_plan_free (plan);
      return NULL;
    }
  }
  sedp_counter_add (mi->plans_compiled, 1);
  guint slot = c->n;
  if (c->n == PLAN_CACHE_SIZE) {
    slot = 0;
    for (guint k = 1; k < c->n; k++)
      if (c->slots[k].used < c->slots[slot].used)
        slot = k;
    sedp_nn_plan_free (c->slots[slot].plan);
  } else {
    c->n++;
    g_atomic_int_inc (&mi->plans_cached);
  }
  c->slots[slot] = (CachedPlan){.rows = rows, .plan = plan, .used = c->tick};
  return plan;
}

static const char *
column_type_wanted (SedpNnDType dtype)
{
  return dtype == SEDP_NN_FLOAT ? "float32" : "int64, uint64 or idlist";
}

/* Finds and checks the columns of one event; FALSE with @error naming the column and the model
 * input. */
static gboolean
check_event (ModelInference *mi, SedpFrame *f, const SedpColumn **cols, GError **error)
{
  for (guint i = 0; i < mi->n_in; i++) {
    const InputMap *im = &mi->in[i];
    const SedpColumn *c = sedp_frame_get_column (f, im->column);
    if (c == NULL) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                   "column '%s' is missing (model input '%s' %s %s reads it)", im->column,
                   im->name, sedp_nn_dtype_name (im->dtype), im->shape);
      return FALSE;
    }
    SedpColumnType type = sedp_column_get_column_type (c);
    gboolean type_ok = im->dtype == SEDP_NN_FLOAT
                           ? type == SEDP_COLUMN_FLOAT32
                           : (type == SEDP_COLUMN_INT64 || type == SEDP_COLUMN_UINT64 ||
                              type == SEDP_COLUMN_IDLIST);
    if (!type_ok) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                   "column '%s' has type %s, expected %s (model input '%s' %s %s)", im->column,
                   sedp_column_type_to_string (type), column_type_wanted (im->dtype), im->name,
                   sedp_nn_dtype_name (im->dtype), im->shape);
      return FALSE;
    }
    if (type != SEDP_COLUMN_IDLIST && sedp_column_get_width (c) != im->width) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                   "column '%s' has width %u, expected %u (model input '%s' %s %s)", im->column,
                   sedp_column_get_width (c), im->width, im->name, sedp_nn_dtype_name (im->dtype),
                   im->shape);
      return FALSE;
    }
    cols[i] = c;
  }
  return TRUE;
}

/* For idlist inputs: every row must hold exactly `width` ids. */
static const char *
check_row (ModelInference *mi, const SedpColumn **cols, guint row, char *msg, gsize msg_size)
{
  for (guint i = 0; i < mi->n_in; i++) {
    if (sedp_column_get_column_type (cols[i]) != SEDP_COLUMN_IDLIST)
      continue;
    guint n = 0;
    sedp_column_get_ids (cols[i], sedp_column_is_broadcast (cols[i]) ? 0 : row, &n);
    if (n != mi->in[i].width) {
      g_snprintf (msg, msg_size,
                  "column '%s' has %u ids in this row, expected %u (model input '%s' int64 %s)",
                  mi->in[i].column, n, mi->in[i].width, mi->in[i].name, mi->in[i].shape);
      return msg;
    }
  }
  return NULL;
}

static gpointer
scratch (Worker *w, guint i, gsize bytes)
{
  if (w->buf_bytes[i] < bytes) {
    g_free (w->bufs[i]);
    w->bufs[i] = g_malloc (bytes);
    w->buf_bytes[i] = bytes;
  }
  return w->bufs[i];
}

/* Points or copies input @i for rows [start, start + n) of w->rows into a tensor of @batch rows
 * (rows past n are zero padding). */
static void
fill_input (ModelInference *mi, Worker *w, guint i, guint start, guint n, gint64 batch)
{
  const InputMap *im = &mi->in[i];
  const RowRef *rows = &g_array_index (w->rows, RowRef, start);
  SedpNnTensor *t = &w->in[i];
  t->name = im->name;
  t->dtype = im->dtype;
  t->rank = im->rank;
  memcpy (t->dims, im->dims, sizeof t->dims);
  t->dims[0] = batch;
  gsize elem = im->dtype == SEDP_NN_FLOAT ? sizeof (float) : sizeof (gint64);
  gsize row_bytes = elem * im->width;
  guint n_in = mi->n_in;

  /* Zero copy: the rows are one contiguous run of one frame and the column is dense. The
   * engine only reads its inputs. */
  const SedpColumn *c0 = g_ptr_array_index (w->in_cols, rows[0].ev * n_in + i);
  SedpColumnType type0 = sedp_column_get_column_type (c0);
  if ((gint64) n == batch && rows[n - 1].ev == rows[0].ev && rows[n - 1].row - rows[0].row == n - 1 &&
      !sedp_column_is_broadcast (c0) && type0 != SEDP_COLUMN_IDLIST) {
    const guint8 *base = type0 == SEDP_COLUMN_FLOAT32  ? (const guint8 *) sedp_column_get_float32 (c0)
                         : type0 == SEDP_COLUMN_INT64 ? (const guint8 *) sedp_column_get_int64 (c0)
                                                      : (const guint8 *) sedp_column_get_uint64 (c0);
    t->data = (gpointer) (base + (gsize) rows[0].row * row_bytes);
    return;
  }

  guint8 *dst = scratch (w, i, row_bytes * (gsize) batch);
  t->data = dst;
  for (guint r = 0; r < n; r++, dst += row_bytes) {
    const SedpColumn *c = g_ptr_array_index (w->in_cols, rows[r].ev * n_in + i);
    guint row = sedp_column_is_broadcast (c) ? 0 : rows[r].row;
    switch (sedp_column_get_column_type (c)) {
    case SEDP_COLUMN_FLOAT32:
      memcpy (dst, sedp_column_get_float32 (c) + (gsize) row * im->width, row_bytes);
      break;
    case SEDP_COLUMN_INT64:
      memcpy (dst, sedp_column_get_int64 (c) + (gsize) row * im->width, row_bytes);
      break;
    case SEDP_COLUMN_UINT64: /* the same bits as int64 */
      memcpy (dst, sedp_column_get_uint64 (c) + (gsize) row * im->width, row_bytes);
      break;
    case SEDP_COLUMN_IDLIST: {
      guint n_ids = 0;
      const guint64 *ids = sedp_column_get_ids (c, row, &n_ids);
      memcpy (dst, ids, row_bytes); /* n_ids == width, checked per row */
      break;
    }
    default:
      memset (dst, 0, row_bytes);
    }
  }
  if ((gint64) n < batch)
    memset (dst, 0, row_bytes * (gsize) (batch - n));
}

static void
write_outputs (ModelInference *mi, Worker *w, guint start, guint n)
{
  const RowRef *rows = &g_array_index (w->rows, RowRef, start);
  for (guint k = 0; k < mi->n_out; k++) {
    const SedpNnTensor *t = &w->out[mi->out[k].index];
    guint width = mi->out[k].width;
    for (guint r = 0; r < n; r++) {
      float *dst = g_ptr_array_index (w->out_data, rows[r].ev * mi->n_out + k);
      dst += (gsize) rows[r].row * width;
      gsize off = (gsize) r * width;
      switch (t->dtype) {
      case SEDP_NN_FLOAT:
        memcpy (dst, (const float *) t->data + off, sizeof (float) * width);
        break;
      case SEDP_NN_INT64:
        for (guint j = 0; j < width; j++)
          dst[j] = (float) ((const gint64 *) t->data)[off + j];
        break;
      case SEDP_NN_INT32:
        for (guint j = 0; j < width; j++)
          dst[j] = (float) ((const gint32 *) t->data)[off + j];
        break;
      case SEDP_NN_DOUBLE:
        for (guint j = 0; j < width; j++)
          dst[j] = (float) ((const double *) t->data)[off + j];
        break;
      case SEDP_NN_BOOL:
      case SEDP_NN_UINT8:
        for (guint j = 0; j < width; j++)
          dst[j] = (float) ((const guint8 *) t->data)[off + j];
        break;
      case SEDP_NN_INT8:
        for (guint j = 0; j < width; j++)
          dst[j] = (float) ((const gint8 *) t->data)[off + j];
        break;
      default:
        memset (dst, 0, sizeof (float) * width);
      }
    }
  }
}

static guint
choose_instance (ModelInference *mi, Worker *w, guint ev)
{
  if (mi->instances == 1)
    return 0;
  if (mi->select_mod) {
    SedpEvent *e = g_array_index (w->events, EventState, ev).event;
    return g_str_hash (sedp_request_get_id (sedp_event_get_request (e))) % mi->instances;
  }
  return (guint) g_atomic_int_add (&mi->rr, 1) % mi->instances;
}

/* One engine run over rows [start, start + n) of w->rows. */
static gboolean
run_chunk (ModelInference *mi, Worker *w, guint start, guint n, GError **error)
{
  const RowRef *rows = &g_array_index (w->rows, RowRef, start);
  gint64 batch = mi->fixed_batch > 0
                     ? mi->fixed_batch
                     : ((gint64) n + mi->row_granule - 1) / mi->row_granule * mi->row_granule;
  guint inst = choose_instance (mi, w, rows[0].ev);
  SedpNnPlan *plan = get_plan (mi, &w->caches[inst], batch, error);
  if (plan == NULL)
    return FALSE;
  for (guint i = 0; i < mi->n_in; i++)
    fill_input (mi, w, i, start, n, batch);
  if (!sedp_nn_plan_run (plan, mi->n_in, w->in, sedp_nn_plan_get_n_outputs (plan), w->out, error))
    return FALSE;
  g_atomic_int_inc (&mi->instance_runs[inst]);
  sedp_counter_add (mi->engine_runs, 1);
  sedp_counter_add (mi->rows_scored, n);
  write_outputs (mi, w, start, n);
  return TRUE;
}

static void
fail_event (Worker *w, guint ev, const GError *error)
{
  EventState *st = &g_array_index (w->events, EventState, ev);
  if (st->ok) {
    sedp_event_fail (st->event, error);
    st->ok = FALSE;
  }
}

/* Runs rows [start, end) in chunks. A chunk that fails and holds rows of several events is run
 * again event by event, so that only the events that fail on their own get the error. */
static void
run_rows (ModelInference *mi, Worker *w, guint start, guint end)
{
  gint64 chunk = mi->fixed_batch > 0 ? mi->fixed_batch : mi->max_batch_rows;
  for (guint s = start; s < end;) {
    guint n = (guint) MIN ((gint64) (end - s), chunk);
    const RowRef *rows = &g_array_index (w->rows, RowRef, s);
    /* skip rows of events that failed meanwhile */
    if (!g_array_index (w->events, EventState, rows[0].ev).ok) {
      guint e = rows[0].ev, k = 0;
      while (s + k < end && rows[k].ev == e)
        k++;
      s += k;
      continue;
    }
    GError *error = NULL;
    if (!run_chunk (mi, w, s, n, &error)) {
      if (rows[0].ev == rows[n - 1].ev)
        fail_event (w, rows[0].ev, error);
      else
        for (guint a = 0; a < n;) {
          guint b = a;
          while (b < n && rows[b].ev == rows[a].ev)
            b++;
          run_rows (mi, w, s + a, s + b);
          a = b;
        }
      g_error_free (error);
    }
    s += n;
  }
}

static gboolean
mi_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
            GError **error)
{
  ModelInference *mi = instance;
  if (worker >= mi->n_workers) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL,
                 "worker %u out of range (parallelism %u)", worker, mi->n_workers);
    return FALSE;
  }
  Worker *w = &mi->workers[worker];
  if (!w->ready)
    worker_init (mi, w, worker);
  g_array_set_size (w->events, n_events);
  g_array_set_size (w->rows, 0);
  g_ptr_array_set_size (w->in_cols, (gint) (n_events * mi->n_in));
  g_ptr_array_set_size (w->out_data, (gint) (n_events * mi->n_out));

  char msg[512];
  for (guint e = 0; e < n_events; e++) {
    EventState *st = &g_array_index (w->events, EventState, e);
    st->event = events[e];
    st->frame = sedp_event_get_frame (events[e]);
    st->ok = FALSE;
    const SedpColumn **cols = (const SedpColumn **) &w->in_cols->pdata[e * mi->n_in];
    GError *local = NULL;
    if (!check_event (mi, st->frame, cols, &local)) {
      sedp_event_fail (events[e], local);
      g_error_free (local);
      continue;
    }
    st->ok = TRUE;
    guint n_rows = sedp_frame_get_n_rows (st->frame);
    for (guint k = 0; k < mi->n_out; k++)
      w->out_data->pdata[e * mi->n_out + k] = sedp_column_float32_data (
          sedp_frame_add_column (st->frame, mi->out[k].column, SEDP_COLUMN_FLOAT32, mi->out[k].width));
    for (guint r = 0; r < n_rows; r++) {
      const char *bad = check_row (mi, cols, r, msg, sizeof msg);
      if (bad)
        sedp_frame_fail_row (st->frame, r, bad);
      else
        g_array_append_val (w->rows, ((RowRef){.ev = e, .row = r}));
    }
  }
  if (w->rows->len > 0)
    run_rows (mi, w, 0, w->rows->len);
  if (mi->drop_inputs) /* later stages (a gather, the response) need the scores, not the inputs */
    for (guint e = 0; e < n_events; e++) {
      EventState *st = &g_array_index (w->events, EventState, e);
      for (guint i = 0; st->ok && i < mi->n_in; i++)
        sedp_frame_remove_column (st->frame, mi->in[i].column);
    }
  return TRUE;
}

static void
mi_stats (gpointer instance, SedpStats *stats)
{
  ModelInference *mi = instance;
  sedp_stats_add (stats, "instances", mi->instances);
  sedp_stats_add (stats, "plans_cached", g_atomic_int_get (&mi->plans_cached));
  sedp_stats_add (stats, "model_parameters", (double) mi->parameters);
  sedp_stats_add (stats, "model_inputs", mi->n_in);
  sedp_stats_add (stats, "model_outputs", mi->n_out);
  for (guint k = 0; k < mi->instances; k++) {
    char name[48];
    g_snprintf (name, sizeof name, "instance_%u_runs", k);
    sedp_stats_add (stats, name, g_atomic_int_get (&mi->instance_runs[k]));
  }
  if (mi->device) {
    guint64 weights = 0, arenas = 0;
    sedp_nn_device_get_memory (mi->device, &weights, &arenas);
    sedp_stats_add (stats, "device_streams", sedp_nn_device_get_streams (mi->device));
    sedp_stats_add (stats, "device_stream_changes", sedp_nn_device_get_stream_changes (mi->device));
    sedp_stats_add (stats, "device_weight_bytes", (double) weights);
    sedp_stats_add (stats, "device_arena_bytes", (double) arenas);
    sedp_stats_add (stats, "device_ready_seconds", mi->device_ready_ms / 1000.0);
  }
}

static const SedpOptionSpec mi_options[] = {
  SEDP_OPTION_PATH_SPEC ("model", NULL, TRUE, "The ONNX model file"),
  SEDP_OPTION_LIST_SPEC ("inputs", NULL,
                         "Column of each model input, as MODEL_INPUT=COLUMN items; inputs not "
                         "listed read the column of their own name"),
  SEDP_OPTION_LIST_SPEC ("outputs", NULL,
                         "Model outputs to write, as MODEL_OUTPUT=COLUMN (or MODEL_OUTPUT) items; "
                         "default: every output, under its own name"),
  SEDP_OPTION_INT_SPEC ("instances", "1", 1, 256,
                        "Executor instances sharing one copy of the weights (each with its own "
                        "compiled plans)"),
  SEDP_OPTION_ENUM_SPEC ("select", "rr", "rr|mod",
                         "How a run picks its instance: round-robin, or the request id's hash "
                         "modulo instances"),
  SEDP_OPTION_LIST_SPEC ("pin_cpus", NULL,
                         "CPU ids; worker thread w is pinned to pin_cpus[w % n] on its first call"),
  SEDP_OPTION_BOOL_SPEC ("drop_inputs", "false",
                         "Remove the model's input columns from the frame once scored: later "
                         "stages (a gather, the response) then copy only what they need"),
  SEDP_OPTION_INT_SPEC ("max_batch_rows", "4096", 1, 65536,
                        "Most rows per engine run; the rows of a call's frames are concatenated "
                        "up to this"),
  SEDP_OPTION_INT_SPEC ("row_granule", "1", 1, 4096,
                        "Plans are compiled for row counts rounded up to a multiple of this "
                        "(zero rows pad the input; for models that compute each row on its own)"),
  SEDP_OPTION_ENUM_SPEC ("engine", "cpu", "cpu|opencl",
                         "Which engine runs the model: the CPU engine (OpenBLAS) or the OpenCL "
                         "engine (docs/opencl.md)"),
  SEDP_OPTION_STRING_SPEC ("device", NULL,
                           "engine = opencl: a device index or a unique part of \"PLATFORM: "
                           "DEVICE\" (sedp model devices); default: the first device"),
  SEDP_OPTION_STRING_SPEC ("streams", NULL,
                           "engine = opencl: command queues the workers' runs are spread over, "
                           "1 to 8, or auto: chosen per concurrency (docs/opencl.md; default auto)"),
  SEDP_OPTION_INT_SPEC ("streams_profile_ms", "150", 0, 2000,
                        "engine = opencl, streams = auto: how long each stream count is measured "
                        "at start (0: learn from traffic only)"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "model_inference", .version = SEDP_VERSION,
                   .description = "Runs an ONNX model on the rows of frames (dense engine on "
                                  "OpenBLAS, or OpenCL): columns in, float32 score columns out",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = mi_options,
                   .create = mi_create, .process = mi_process, .destroy = mi_destroy,
                   .stats = mi_stats, .writes = mi_writes);
