/* sedp tests — libsedp_processor.so driven as a DeepRec host drives libserving_processor.so:
 * dlopen, dlsym of DeepRec's four functions, initialize with a model_config, process (also from
 * 8 threads at once), batch_process, get_serving_model_info, and the failures. Requests and
 * answers go through protoc-c code generated from DeepRec's messages; the expected scores are
 * computed here by hand from the weights make-model.py writes. */
#include "test-common.h"

#include "deeprec_model_info.pb-c.h"
#include "deeprec_predict.pb-c.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* make-model.py's weights: logits = x W + B, prob = sigmoid (logits). */
static const double W[3][2] = {{0.5, -1.0}, {0.25, 2.0}, {-0.75, 0.125}};
static const double B[2] = {0.1, -0.2};

/* DeepRec's processor.h. */
typedef void *(*InitializeFn) (const char *, const char *, int *);
typedef int (*ProcessFn) (void *, const void *, int, void **, int *);
typedef int (*BatchProcessFn) (void *, const void *[], int *, void *[], int *);
typedef int (*ModelInfoFn) (void *, void **, int *);
typedef void (*ReleaseFn) (void *);

static void *lib;
static InitializeFn initialize_fn;
static ProcessFn process_fn;
static BatchProcessFn batch_process_fn;
static ModelInfoFn model_info_fn;
static ReleaseFn release_fn;

static const char *const FULL_CONFIG =
  "{\"session_num\": 2, \"select_session_policy\": \"RR\", \"signature_name\": \"serving_default\","
  " \"inter_op_parallelism_threads\": 2, \"intra_op_parallelism_threads\": 4,"
  " \"serialize_protocol\": \"protobuf\", \"checkpoint_dir\": \"/nowhere\","
  " \"savedmodel_dir\": \"/nowhere\", \"feature_store_type\": \"local\","
  " \"model_store_type\": \"local\", \"omp_num_threads\": 4, \"no_such_key\": [1, 2]}";

static gboolean
under_valgrind (void)
{
  return g_getenv ("SEDP_VALGRIND") != NULL;
}

/* ---- requests and answers (protoc-c) ---- */

/* The input value of row @row, column @col of a request seeded by @seed. */
static float
x_value (guint seed, guint row, guint col)
{
  return (float) ((int) ((seed * 7 + row * 3 + col * 5) % 17) - 8) / 4.0f;
}

/* A serialized PredictRequest: x = @rows × 3 values from @seed; @filter: output_filter. */
static guint8 *
make_request (const char *signature, guint seed, guint rows, const char *filter, guint width,
              gsize *size)
{
  Tensorflow__Eas__PredictRequest req = TENSORFLOW__EAS__PREDICT_REQUEST__INIT;
  Tensorflow__Eas__ArrayProto x = TENSORFLOW__EAS__ARRAY_PROTO__INIT;
  Tensorflow__Eas__ArrayShape shape = TENSORFLOW__EAS__ARRAY_SHAPE__INIT;
  Tensorflow__Eas__PredictRequest__InputsEntry entry =
    TENSORFLOW__EAS__PREDICT_REQUEST__INPUTS_ENTRY__INIT;
  Tensorflow__Eas__PredictRequest__InputsEntry *entries[] = {&entry};
  int64_t dims[] = {rows, width};
  g_autofree float *values = g_new (float, rows * width + 1);
  for (guint r = 0; r < rows; r++)
    for (guint c = 0; c < width; c++)
      values[r * width + c] = x_value (seed, r, c);
  shape.n_dim = 2;
  shape.dim = dims;
  x.dtype = TENSORFLOW__EAS__ARRAY_DATA_TYPE__DT_FLOAT;
  x.array_shape = &shape;
  x.n_float_val = rows * width;
  x.float_val = values;
  entry.key = (char *) "x";
  entry.value = &x;
  req.signature_name = (char *) (signature ? signature : "");
  req.n_inputs = 1;
  req.inputs = entries;
  char *filters[] = {(char *) filter};
  req.n_output_filter = filter ? 1 : 0;
  req.output_filter = filters;
  *size = tensorflow__eas__predict_request__get_packed_size (&req);
  guint8 *buf = g_malloc (*size + 1);
  tensorflow__eas__predict_request__pack (&req, buf);
  return buf;
}

static double
expected (guint seed, guint row, guint out, gboolean sigmoid)
{
  double v = B[out];
  for (guint c = 0; c < 3; c++)
    v += (double) x_value (seed, row, c) * W[c][out];
  return sigmoid ? 1.0 / (1.0 + exp (-v)) : v;
}

static const Tensorflow__Eas__ArrayProto *
find_output (const Tensorflow__Eas__PredictResponse *resp, const char *name)
{
  for (size_t i = 0; i < resp->n_outputs; i++)
    if (strcmp (resp->outputs[i]->key, name) == 0)
      return resp->outputs[i]->value;
  return NULL;
}

/* Whether @a is output @name of the request (@seed, @rows): DT_FLOAT [rows, 2], every value
 * within 1e-5 of the hand-computed one. */
static gboolean
output_ok (const Tensorflow__Eas__ArrayProto *a, const char *name, guint seed, guint rows)
{
  if (a == NULL || a->dtype != TENSORFLOW__EAS__ARRAY_DATA_TYPE__DT_FLOAT || !a->array_shape ||
      a->array_shape->n_dim != 2 || a->array_shape->dim[0] != rows ||
      a->array_shape->dim[1] != 2 || a->n_float_val != rows * 2) {
    fprintf (stderr, "\n  output %s: wrong dtype or shape\n", name);
    return FALSE;
  }
  for (guint r = 0; r < rows; r++)
    for (guint o = 0; o < 2; o++) {
      double want = expected (seed, r, o, strcmp (name, "prob") == 0);
      if (fabs (a->float_val[r * 2 + o] - want) > 1e-5 * MAX (1.0, fabs (want))) {
        fprintf (stderr, "\n  %s[%u][%u] = %.7g, expected %.7g\n", name, r, o,
                 a->float_val[r * 2 + o], want);
        return FALSE;
      }
    }
  return TRUE;
}

/* Whether @answer is the full answer (logits and prob, or only @filter) to (@seed, @rows). */
static gboolean
answer_ok (const void *answer, int size, guint seed, guint rows, const char *filter)
{
  Tensorflow__Eas__PredictResponse *resp =
    tensorflow__eas__predict_response__unpack (NULL, (size_t) size, answer);
  if (resp == NULL) {
    fprintf (stderr, "\n  the answer is not a PredictResponse (%d bytes)\n", size);
    return FALSE;
  }
  gboolean ok;
  if (filter)
    ok = resp->n_outputs == 1 && output_ok (find_output (resp, filter), filter, seed, rows);
  else
    ok = resp->n_outputs == 2 && output_ok (find_output (resp, "logits"), "logits", seed, rows) &&
         output_ok (find_output (resp, "prob"), "prob", seed, rows);
  tensorflow__eas__predict_response__free_unpacked (resp, NULL);
  return ok;
}

/* ---- the host ---- */

/* initialize() with fd 2 captured into *@err (nullable). */
static void *
init_capture (const char *entry, const char *config, int *state, char **err)
{
  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "sedp-processor-XXXXXX", NULL);
  int fd = g_mkstemp (path);
  fflush (stderr);
  int saved = dup (2);
  dup2 (fd, 2);
  void *model = initialize_fn (entry, config, state);
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  close (fd);
  if (err)
    g_file_get_contents (path, err, NULL, NULL);
  g_unlink (path);
  return model;
}

static void *
init_ok (const char *config)
{
  int state = 1;
  void *model = initialize_fn (SEDP_TEST_PROCESSOR_MODEL, config, &state);
  CU_ASSERT_EQUAL (state, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  return model;
}

/* process() of the request (@seed, @rows, @filter); its answer checked. */
static gboolean
process_ok (void *model, guint seed, guint rows, const char *filter)
{
  gsize size;
  g_autofree guint8 *req = make_request (NULL, seed, rows, filter, 3, &size);
  void *out = NULL;
  int out_size = -1;
  int code = process_fn (model, req, (int) size, &out, &out_size);
  gboolean ok = code == 200 && answer_ok (out, out_size, seed, rows, filter);
  if (code != 200)
    fprintf (stderr, "\n  process: %d %.*s\n", code, out_size, (const char *) out);
  free (out);
  return ok;
}

/* process() of @req must fail: 500 and a message holding @needle. */
static void
assert_process_fails (void *model, const void *req, int size, const char *needle)
{
  void *out = NULL;
  int out_size = -1;
  CU_ASSERT_EQUAL (process_fn (model, req, size, &out, &out_size), 500);
  CU_ASSERT_PTR_NOT_NULL_FATAL (out);
  CU_ASSERT_EQUAL (strlen (out), (size_t) out_size);
  if (strstr (out, needle) == NULL)
    fprintf (stderr, "\n  message '%s' lacks '%s'\n", (const char *) out, needle);
  CU_ASSERT_PTR_NOT_NULL (strstr (out, needle));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "[sedp] Processor predict failed: "));
  free (out);
}

/* ---- tests ---- */

/* Exactly DeepRec's four functions and sedp_processor_release() are exported. */
static void
test_exports (void)
{
  g_autofree char *out = NULL;
  const char *argv[] = {"nm", "-D", "--defined-only", SEDP_TEST_PROCESSOR_LIB, NULL};
  int status = -1;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                      &out, NULL, &status, &error));
  CU_ASSERT_EQUAL (status, 0);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit_set (lines[i], " ", -1);
    if (g_strv_length (f) == 3 && strchr ("TtWDdBbRrVv", f[1][0]) && f[1][0] != 'A')
      g_ptr_array_add (names, g_strdup (f[2]));
  }
  g_ptr_array_sort (names, (GCompareFunc) g_ascii_strcasecmp);
  const char *want[] = {"batch_process", "get_serving_model_info", "initialize", "process",
                        "sedp_processor_release"};
  if (names->len != G_N_ELEMENTS (want))
    fprintf (stderr, "\n  nm -D lists %u symbols:\n%s\n", names->len, out);
  CU_ASSERT_EQUAL_FATAL (names->len, G_N_ELEMENTS (want));
  g_ptr_array_sort (names, (GCompareFunc) (void *) strcmp);
  for (guint i = 0; i < names->len; i++)
    CU_ASSERT_PTR_NOT_NULL (g_strv_contains (want, names->pdata[i]) ? "ok" : NULL);
  g_ptr_array_foreach (names, (GFunc) (void *) g_free, NULL);
  CU_ASSERT_PTR_NULL (dlsym (lib, "processor_run"));
  CU_ASSERT_PTR_NULL (dlsym (lib, "processor_config_parse"));
}

/* A full DeepRec model_config: honoured keys applied, every other key accepted and logged. */
static void
test_process (void)
{
  int state = 1;
  g_autofree char *err = NULL;
  void *model = init_capture (SEDP_TEST_PROCESSOR_MODEL, FULL_CONFIG, &state, &err);
  CU_ASSERT_EQUAL (state, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  CU_ASSERT_PTR_NOT_NULL (strstr (err, "\"no_such_key\" ignored"));
  CU_ASSERT_PTR_NOT_NULL (strstr (err, "\"intra_op_parallelism_threads\" ignored"));
  CU_ASSERT_PTR_NOT_NULL (strstr (err, "\"checkpoint_dir\" ignored"));
  CU_ASSERT_PTR_NULL (strstr (err, "\"session_num\" ignored"));
  /* session_num, select_session_policy and inter_op_parallelism_threads reached the model stage */
  void *debug = NULL;
  int debug_size = 0;
  CU_ASSERT_EQUAL (process_fn (model, NULL, 0, &debug, &debug_size), 200);
  CU_ASSERT_PTR_NOT_NULL (strstr (debug, "{\"name\":\"model\",\"plugin\":\"model_inference\","
                                         "\"parallelism\":2,\"options\":{"));
  CU_ASSERT_PTR_NOT_NULL (strstr (debug, "\"instances\":\"2\""));
  CU_ASSERT_PTR_NOT_NULL (strstr (debug, "\"select\":\"rr\""));
  free (debug);
  CU_ASSERT_TRUE (process_ok (model, 1, 1, NULL));
  CU_ASSERT_TRUE (process_ok (model, 2, 5, NULL));
  CU_ASSERT_TRUE (process_ok (model, 3, 4, "prob"));
  CU_ASSERT_TRUE (process_ok (model, 4, 2, "logits"));
  /* the request may name the signature */
  gsize size;
  g_autofree guint8 *named = make_request ("serving_default", 5, 2, NULL, 3, &size);
  void *out = NULL;
  int out_size = 0;
  CU_ASSERT_EQUAL (process_fn (model, named, (int) size, &out, &out_size), 200);
  CU_ASSERT_TRUE (answer_ok (out, out_size, 5, 2, NULL));
  free (out);
  release_fn (model);
}

/* input_size 0: the debug string, DeepRec's JSON signature with the pipeline's stages. */
static void
test_debug_string (void)
{
  void *model = init_ok ("{\"signature_name\": \"predict\"}");
  void *out = NULL;
  int size = -1;
  CU_ASSERT_EQUAL (process_fn (model, NULL, 0, &out, &size), 200);
  CU_ASSERT_PTR_NOT_NULL_FATAL (out);
  CU_ASSERT_EQUAL (strlen (out), (size_t) size);
  g_autoptr (JsonParser) parser = json_parser_new ();
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_data (parser, out, size, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "signature_name"), "predict");
  JsonArray *inputs = json_object_get_array_member (o, "inputs");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (inputs), 1);
  JsonObject *x = json_array_get_object_element (inputs, 0);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (x, "name"), "x");
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (x, "type"), "DT_FLOAT");
  JsonArray *shape = json_object_get_array_member (x, "shape");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (shape), 2);
  CU_ASSERT_EQUAL (json_array_get_int_element (shape, 0), -1);
  CU_ASSERT_EQUAL (json_array_get_int_element (shape, 1), 3);
  JsonArray *outputs = json_object_get_array_member (o, "outputs");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (outputs), 2);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "pipeline"), "processor-test");
  JsonArray *stages = json_object_get_array_member (o, "stages");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (stages), 2);
  JsonObject *model_stage = json_array_get_object_element (stages, 1);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (model_stage, "plugin"),
                          "model_inference");
  free (out);
  /* requests naming another signature are refused; naming "predict" works */
  gsize rsize;
  g_autofree guint8 *other = make_request ("serving_default", 1, 1, NULL, 3, &rsize);
  assert_process_fails (model, other, (int) rsize, "'serving_default' is not a signature");
  g_autofree guint8 *named = make_request ("predict", 1, 1, NULL, 3, &rsize);
  out = NULL;
  CU_ASSERT_EQUAL (process_fn (model, named, (int) rsize, &out, &size), 200);
  free (out);
  release_fn (model);
}

typedef struct {
  void *model;
  guint thread;
  guint n;
  gboolean ok;
} Worker;

static gpointer
worker (gpointer data)
{
  Worker *w = data;
  w->ok = TRUE;
  for (guint i = 0; i < w->n; i++)
    w->ok = process_ok (w->model, w->thread * 1000 + i, 1 + (i + w->thread) % 6,
                        i % 3 == 0 ? "prob" : NULL) && w->ok;
  return NULL;
}

/* 8 host threads call process() at once; every answer is its own request's. */
static void
test_concurrent (void)
{
  void *model = init_ok ("{\"session_num\": 2, \"select_session_policy\": \"MOD\"}");
  Worker w[8];
  GThread *t[8];
  for (guint i = 0; i < 8; i++) {
    w[i] = (Worker) {model, i + 1, under_valgrind () ? 8 : 100, FALSE};
    t[i] = g_thread_new ("host", worker, &w[i]);
  }
  for (guint i = 0; i < 8; i++) {
    g_thread_join (t[i]);
    CU_ASSERT_TRUE (w[i].ok);
  }
  release_fn (model);
}

/* batch_process: the batch ends at the first NULL; all answered, or one error in entry 0. */
static void
test_batch (void)
{
  void *model = init_ok (NULL);
  enum { N = 6 };
  guint8 *reqs[N];
  const void *in[N + 1];
  int in_size[N];
  void *out[N];
  int out_size[N];
  for (guint i = 0; i < N; i++) {
    gsize size;
    reqs[i] = make_request (NULL, 50 + i, 1 + i, NULL, 3, &size);
    in[i] = reqs[i];
    in_size[i] = (int) size;
  }
  in[N] = NULL;
  CU_ASSERT_EQUAL (batch_process_fn (model, in, in_size, out, out_size), 200);
  for (guint i = 0; i < N; i++) {
    CU_ASSERT_TRUE (answer_ok (out[i], out_size[i], 50 + i, 1 + i, NULL));
    free (out[i]);
  }
  /* a bad third request: nothing answered but the error, which names it */
  gsize bad_size;
  g_autofree guint8 *bad = make_request (NULL, 1, 2, NULL, 4, &bad_size);
  in[2] = bad;
  in_size[2] = (int) bad_size;
  CU_ASSERT_EQUAL (batch_process_fn (model, in, in_size, out, out_size), 500);
  CU_ASSERT_PTR_NOT_NULL_FATAL (out[0]);
  CU_ASSERT_PTR_NOT_NULL (strstr (out[0], "request 3 of 6: invalid request"));
  CU_ASSERT_EQUAL (strlen (out[0]), (size_t) out_size[0]);
  for (guint i = 1; i < N; i++) {
    CU_ASSERT_PTR_NULL (out[i]);
    CU_ASSERT_EQUAL (out_size[i], 0);
  }
  free (out[0]);
  /* the batch ends at the first NULL: two requests */
  in[2] = NULL;
  out[2] = (void *) "untouched";
  CU_ASSERT_EQUAL (batch_process_fn (model, in, in_size, out, out_size), 200);
  CU_ASSERT_TRUE (answer_ok (out[0], out_size[0], 50, 1, NULL));
  CU_ASSERT_TRUE (answer_ok (out[1], out_size[1], 51, 2, NULL));
  CU_ASSERT_STRING_EQUAL (out[2], "untouched");
  free (out[0]);
  free (out[1]);
  /* input_size NULL: the debug string, as DeepRec */
  CU_ASSERT_EQUAL (batch_process_fn (model, in, NULL, out, out_size), 200);
  CU_ASSERT_PTR_NOT_NULL (strstr (out[0], "\"signature_name\":\"serving_default\""));
  free (out[0]);
  for (guint i = 0; i < N; i++)
    g_free (reqs[i]);
  release_fn (model);
}

/* get_serving_model_info: a ServingModelInfo naming the model file. */
static void
test_model_info (void)
{
  void *model = init_ok ("");
  void *out = NULL;
  int size = -1;
  CU_ASSERT_EQUAL (model_info_fn (model, &out, &size), 200);
  Tensorflow__Eas__ServingModelInfo *info =
    tensorflow__eas__serving_model_info__unpack (NULL, (size_t) size, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL (info);
  g_autofree char *want = g_canonicalize_filename (SEDP_TEST_PROCESSOR_MODEL, NULL);
  CU_ASSERT_STRING_EQUAL (info->model_path, want);
  tensorflow__eas__serving_model_info__free_unpacked (info, NULL);
  free (out);
  release_fn (model);
}

/* Malformed requests are answered 500 with a message; the model keeps serving. */
static void
test_bad_requests (void)
{
  void *model = init_ok (NULL);
  const guint8 garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
  assert_process_fails (model, garbage, sizeof garbage, "invalid request");
  gsize size;
  g_autofree guint8 *wide = make_request (NULL, 1, 2, NULL, 4, &size);
  assert_process_fails (model, wide, (int) size, "invalid request");
  g_autofree guint8 *unknown = make_request (NULL, 1, 2, "no_such_output", 3, &size);
  assert_process_fails (model, unknown, (int) size, "no_such_output");
  /* no inputs at all */
  Tensorflow__Eas__PredictRequest none = TENSORFLOW__EAS__PREDICT_REQUEST__INIT;
  none.signature_name = (char *) "serving_default";
  guint8 buf[64];
  size = tensorflow__eas__predict_request__pack (&none, buf);
  assert_process_fails (model, buf, (int) size, "invalid request");
  const guint8 truncated[] = {0x12};
  assert_process_fails (model, truncated, sizeof truncated, "invalid request");
  assert_process_fails (model, garbage, -3, "input_size");
  CU_ASSERT_TRUE (process_ok (model, 9, 3, NULL));
  release_fn (model);
}

/* initialize() failures: state -1, NULL, and stderr naming the problem. */
static void
assert_init_fails (const char *entry, const char *config, const char *needle)
{
  int state = 0;
  g_autofree char *err = NULL;
  void *model = init_capture (entry, config, &state, &err);
  CU_ASSERT_PTR_NULL (model);
  CU_ASSERT_EQUAL (state, -1);
  if (err == NULL || strstr (err, needle) == NULL)
    fprintf (stderr, "\n  stderr '%s' lacks '%s'\n", err ? err : "(none)", needle);
  CU_ASSERT_PTR_NOT_NULL (err ? strstr (err, needle) : NULL);
  CU_ASSERT_PTR_NOT_NULL (err ? strstr (err, "[sedp] Processor initialize failed: ") : NULL);
}

static void
test_bad_initialize (void)
{
  const char *m = SEDP_TEST_PROCESSOR_MODEL;
  assert_init_fails ("/nonexistent/model.onnx", NULL, "/nonexistent/model.onnx");
  assert_init_fails ("/nonexistent/serving.pipeline", NULL, "/nonexistent/serving.pipeline");
  assert_init_fails ("", NULL, "model_entry is empty");
  assert_init_fails (m, "{\"session_num\": 2", "model_config is not valid JSON");
  assert_init_fails (m, "[1, 2]", "model_config must be a JSON object");
  assert_init_fails (m, "{\"session_num\": \"two\"}", "\"session_num\" is \"two\"");
  assert_init_fails (m, "{\"session_num\": 0}", "an integer from 1 to 256");
  assert_init_fails (m, "{\"select_session_policy\": \"RANDOM\"}", "\"MOD\" or \"RR\"");
  assert_init_fails (m, "{\"serialize_protocol\": \"flatbuffer\"}", "\"protobuf\"");
  assert_init_fails (m, "{\"signature_name\": \"\"}", "signature_name");
  assert_init_fails (m, "{\"inter_op_parallelism_threads\": -1}", "inter_op_parallelism_threads");
  assert_init_fails (m, "{\"warmup_file_name\": \"/nonexistent/warmup.pb\"}",
                     "/nonexistent/warmup.pb");
}

static char *
write_temp (const void *data, gsize size)
{
  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "sedp-warmup-XXXXXX", NULL);
  int fd = g_mkstemp (path);
  close (fd);
  CU_ASSERT_TRUE (g_file_set_contents (path, data, (gssize) size, NULL));
  return g_steal_pointer (&path);
}

/* warmup_file_name: DeepRec's format, one serialized PredictRequest, run before initialize()
 * returns; a warm-up request that fails fails initialize(). */
static void
test_warmup (void)
{
  gsize size;
  g_autofree guint8 *good = make_request (NULL, 3, 4, "prob", 3, &size);
  g_autofree char *good_path = write_temp (good, size);
  g_autofree char *config = g_strdup_printf ("{\"warmup_file_name\": \"%s\"}", good_path);
  void *model = init_ok (config);
  CU_ASSERT_TRUE (process_ok (model, 1, 2, NULL));
  release_fn (model);
  g_autofree guint8 *bad = make_request (NULL, 3, 4, NULL, 5, &size);
  g_autofree char *bad_path = write_temp (bad, size);
  g_autofree char *bad_config = g_strdup_printf ("{\"warmup_file_name\": \"%s\"}", bad_path);
  assert_init_fails (SEDP_TEST_PROCESSOR_MODEL, bad_config, bad_path);
  g_unlink (good_path);
  g_unlink (bad_path);
}

/* A pipeline file as model_entry: its stages, with model_config applied to its model stage; an
 * open signature (no [signature NAME]) takes signature_name's name. */
static void
test_pipeline_entry (void)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-processor-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "served.pipeline", NULL);
  g_autofree char *text = g_strdup_printf ("[pipeline]\n"
                                           "name = served\n"
                                           "deadline_ms = 10000\n"
                                           "outputs = logits, prob\n"
                                           "\n"
                                           "[stage reader]\n"
                                           "plugin = data_reader\n"
                                           "\n"
                                           "[stage dnn]\n"
                                           "plugin = model_inference\n"
                                           "after = reader\n"
                                           "scope = item\n"
                                           "model = %s\n",
                                           SEDP_TEST_PROCESSOR_MODEL);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, text, -1, NULL));
  int state = 1;
  void *model = initialize_fn (path, "{\"session_num\": 3, \"select_session_policy\": \"MOD\","
                               " \"inter_op_parallelism_threads\": 3, \"signature_name\": \"predict\"}",
                               &state);
  CU_ASSERT_EQUAL (state, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  CU_ASSERT_TRUE (process_ok (model, 11, 4, NULL));
  CU_ASSERT_TRUE (process_ok (model, 12, 1, "prob"));
  void *out = NULL;
  int size = 0;
  CU_ASSERT_EQUAL (process_fn (model, NULL, 0, &out, &size), 200);
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "\"signature_name\":\"predict\""));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "\"pipeline\":\"served\""));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "{\"name\":\"dnn\",\"plugin\":\"model_inference\","
                                       "\"parallelism\":3,\"options\":{"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "\"instances\":\"3\""));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "\"select\":\"mod\""));
  free (out);
  CU_ASSERT_EQUAL (model_info_fn (model, &out, &size), 200);
  Tensorflow__Eas__ServingModelInfo *info =
    tensorflow__eas__serving_model_info__unpack (NULL, (size_t) size, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL (info);
  CU_ASSERT_STRING_EQUAL (info->model_path, path);
  tensorflow__eas__serving_model_info__free_unpacked (info, NULL);
  free (out);
  release_fn (model);
  /* a declared signature: answered as declared; signature_name must name it */
  g_autofree char *declared = g_strdup_printf ("%s[signature predict]\n"
                                               "inputs = x:float32[3]\n"
                                               "outputs = prob[2]\n", text);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, declared, -1, NULL));
  model = initialize_fn (path, "{\"signature_name\": \"predict\"}", &state);
  CU_ASSERT_EQUAL (state, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (model);
  CU_ASSERT_TRUE (process_ok (model, 13, 3, "prob"));
  gsize rsize;
  g_autofree guint8 *req = make_request ("predict", 14, 2, NULL, 3, &rsize);
  CU_ASSERT_EQUAL (process_fn (model, req, (int) rsize, &out, &size), 200);
  CU_ASSERT_TRUE (answer_ok (out, size, 14, 2, "prob"));
  free (out);
  release_fn (model);
  assert_init_fails (path, "{\"signature_name\": \"serving_default\"}",
                     "declares the signature \"predict\"");
  /* a pipeline that does not compile: its error, naming the file */
  CU_ASSERT_TRUE (g_file_set_contents (path, "[pipeline]\nname = broken\n\n[stage a]\n"
                                       "plugin = no_such_plugin\n", -1, NULL));
  assert_init_fails (path, NULL, "no_such_plugin");
  g_unlink (path);
  g_rmdir (dir);
}

int
main (void)
{
  lib = dlopen (SEDP_TEST_PROCESSOR_LIB, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf (stderr, "dlopen %s: %s\n", SEDP_TEST_PROCESSOR_LIB, dlerror ());
    return 1;
  }
  initialize_fn = (InitializeFn) dlsym (lib, "initialize");
  process_fn = (ProcessFn) dlsym (lib, "process");
  batch_process_fn = (BatchProcessFn) dlsym (lib, "batch_process");
  model_info_fn = (ModelInfoFn) dlsym (lib, "get_serving_model_info");
  release_fn = (ReleaseFn) dlsym (lib, "sedp_processor_release");
  if (!initialize_fn || !process_fn || !batch_process_fn || !model_info_fn || !release_fn) {
    fprintf (stderr, "dlsym: %s\n", dlerror ());
    return 1;
  }
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("processor", NULL, NULL);
  CU_add_test (s, "exports", test_exports);
  CU_add_test (s, "process", test_process);
  CU_add_test (s, "debug_string", test_debug_string);
  CU_add_test (s, "concurrent", test_concurrent);
  CU_add_test (s, "batch", test_batch);
  CU_add_test (s, "model_info", test_model_info);
  CU_add_test (s, "bad_requests", test_bad_requests);
  CU_add_test (s, "bad_initialize", test_bad_initialize);
  CU_add_test (s, "warmup", test_warmup);
  CU_add_test (s, "pipeline_entry", test_pipeline_entry);
  return sedp_test_run ();
}
