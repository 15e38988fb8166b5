/* sedp tests — the model API of `sedp serve` through a real server (docs/compat.md):
 * `--model m=FILE.onnx` answering TF Serving's REST JSON (rows and columns) and DeepRec's protobuf
 * on /v1/models/m:predict, the native route on the bare model, GetModelStatus and
 * GetModelMetadata, the routes' 404s and 405s, every refusal (400, 415) followed by a good
 * request, a pipeline's [signature] group beside a bare model, and the start-up errors of
 * --model and of a bad [signature] entry.
 *
 * The model is tests/processor/make-model.py's: x float [N, 3] -> logits = x W + B [N, 2] ->
 * prob = sigmoid (logits) [N, 2]. The expected answers are computed here by hand from the same W
 * and B, in double; JSON answers are compared with the expected document parsed by json-glib,
 * numbers within 1e-6 (relative beyond 1). DeepRec messages go through protoc-c code generated
 * from tests/compat/deeprec_predict.proto. */
#include "server-harness.h"

#include "deeprec_predict.pb-c.h"
#include "test-spawn.h"

#include <math.h>

#ifndef SEDP_TEST_MODEL_API_MODEL
#error "SEDP_TEST_MODEL_API_MODEL must be defined by the build"
#endif

/* make-model.py's weights: logits = x W + B, prob = sigmoid (logits). */
static const double W[3][2] = {{0.5, -1.0}, {0.25, 2.0}, {-0.75, 0.125}};
static const double B[2] = {0.1, -0.2};

/* The rows the requests carry (exact in float32 and in JSON). */
#define N_ROWS 4
static const float X[N_ROWS][3] = {
    {0.5f, -1.0f, 2.0f}, {1.5f, 0.25f, -0.75f}, {-2.0f, 3.0f, 0.125f}, {0.0f, 0.0f, 0.0f}};

/* Row @r of x: X, then (the large batches) multiples of 0.25 from -0.75 to 0.75. */
static float
xv (guint r, guint c)
{
  return r < N_ROWS ? X[r][c] : (float) (((r * 3 + c) % 7) * 0.25 - 0.75);
}

static double
expected (guint row, guint out, gboolean sigmoid)
{
  double v = B[out];
  for (guint c = 0; c < 3; c++)
    v += (double) xv (row, c) * W[c][out];
  return sigmoid ? 1.0 / (1.0 + exp (-v)) : v;
}

/* ---- JSON ---- */

static gboolean json_close (JsonNode *got, JsonNode *want, const char *path);

static gboolean
json_object_close (JsonObject *got, JsonObject *want, const char *path)
{
  if (json_object_get_size (got) != json_object_get_size (want)) {
    fprintf (stderr, "\n  %s: %u members, expected %u\n", path, json_object_get_size (got),
             json_object_get_size (want));
    return FALSE;
  }
  g_autoptr (GList) members = json_object_get_members (want);
  for (GList *l = members; l; l = l->next) {
    g_autofree char *sub = g_strdup_printf ("%s.%s", path, (const char *) l->data);
    JsonNode *g = json_object_get_member (got, l->data);
    if (g == NULL) {
      fprintf (stderr, "\n  %s: missing\n", sub);
      return FALSE;
    }
    if (!json_close (g, json_object_get_member (want, l->data), sub))
      return FALSE;
  }
  return TRUE;
}

static gboolean
json_array_close (JsonArray *got, JsonArray *want, const char *path)
{
  if (json_array_get_length (got) != json_array_get_length (want)) {
    fprintf (stderr, "\n  %s: %u elements, expected %u\n", path, json_array_get_length (got),
             json_array_get_length (want));
    return FALSE;
  }
  for (guint i = 0; i < json_array_get_length (want); i++) {
    g_autofree char *sub = g_strdup_printf ("%s[%u]", path, i);
    if (!json_close (json_array_get_element (got, i), json_array_get_element (want, i), sub))
      return FALSE;
  }
  return TRUE;
}

static gboolean
json_value_close (JsonNode *got, JsonNode *want, const char *path)
{
  GType g = json_node_get_value_type (got), w = json_node_get_value_type (want);
  gboolean g_num = g == G_TYPE_INT64 || g == G_TYPE_DOUBLE;
  gboolean w_num = w == G_TYPE_INT64 || w == G_TYPE_DOUBLE;
  gboolean ok;
  if (w_num && g_num) {
    double a = json_node_get_double (got), b = json_node_get_double (want);
    ok = fabs (a - b) <= 1e-6 * MAX (1.0, fabs (b));
  } else if (g != w)
    ok = FALSE;
  else if (w == G_TYPE_STRING)
    ok = strcmp (json_node_get_string (got), json_node_get_string (want)) == 0;
  else
    ok = json_node_get_boolean (got) == json_node_get_boolean (want);
  if (!ok) {
    g_autofree char *gs = json_to_string (got, FALSE);
    g_autofree char *ws = json_to_string (want, FALSE);
    fprintf (stderr, "\n  %s: %s, expected %s\n", path, gs, ws);
  }
  return ok;
}

/* Whether @got equals @want: the same structure, strings and booleans equal, numbers within
 * 1e-6 (relative beyond 1); prints where they differ. */
static gboolean
json_close (JsonNode *got, JsonNode *want, const char *path)
{
  if (JSON_NODE_TYPE (got) != JSON_NODE_TYPE (want)) {
    fprintf (stderr, "\n  %s: a %s, expected a %s\n", path, json_node_type_name (got),
             json_node_type_name (want));
    return FALSE;
  }
  switch (JSON_NODE_TYPE (want)) {
  case JSON_NODE_OBJECT:
    return json_object_close (json_node_get_object (got), json_node_get_object (want), path);
  case JSON_NODE_ARRAY:
    return json_array_close (json_node_get_array (got), json_node_get_array (want), path);
  case JSON_NODE_VALUE:
    return json_value_close (got, want, path);
  case JSON_NODE_NULL:
  default:
    return TRUE;
  }
}

static JsonNode *
parse_json (const char *text)
{
  g_autoptr (GError) error = NULL;
  JsonNode *node = text ? json_from_string (text, &error) : NULL;
  if (node == NULL)
    fprintf (stderr, "\n  not JSON (%s): %.300s\n", error ? error->message : "no body",
             text ? text : "");
  return node;
}

/* Asserts that @r answered @status with a JSON body equal to @want (numbers within 1e-6). */
static void
assert_json_answer (const Resp *r, int status, const char *want)
{
  if (r->status != status)
    fprintf (stderr, "\n  status %d, expected %d: %.300s\n", r->status, status,
             r->body ? r->body : "");
  CU_ASSERT_EQUAL (r->status, status);
  CU_ASSERT_PTR_NOT_NULL (r->headers && strstr (r->headers, "content-type: application/json"));
  g_autoptr (JsonNode) got = parse_json (r->body);
  g_autoptr (JsonNode) expect = parse_json (want);
  CU_ASSERT_PTR_NOT_NULL_FATAL (expect);
  CU_ASSERT (got && json_close (got, expect, "$"));
}

/* ---- the expected answers ---- */

/* "[a, b]": output @sigmoid (prob) or logits of @row. */
static void
append_output_row (GString *s, guint row, gboolean sigmoid)
{
  g_string_append_printf (s, "[%.17g, %.17g]", expected (row, 0, sigmoid),
                          expected (row, 1, sigmoid));
}

/* TF Serving's row answer to rows 0..@n-1: {"predictions": [{"logits": …, "prob": …}, …]}. */
static char *
expected_predictions (guint n)
{
  GString *s = g_string_new ("{\"predictions\": [");
  for (guint r = 0; r < n; r++) {
    g_string_append (s, r ? ", {\"logits\": " : "{\"logits\": ");
    append_output_row (s, r, FALSE);
    g_string_append (s, ", \"prob\": ");
    append_output_row (s, r, TRUE);
    g_string_append (s, "}");
  }
  g_string_append (s, "]}");
  return g_string_free (s, FALSE);
}

/* "[[…], …]": output @sigmoid or logits of rows 0..@n-1. */
static void
append_output_column (GString *s, guint n, gboolean sigmoid)
{
  g_string_append (s, "[");
  for (guint r = 0; r < n; r++) {
    if (r)
      g_string_append (s, ", ");
    append_output_row (s, r, sigmoid);
  }
  g_string_append (s, "]");
}

/* TF Serving's columnar answer: {"outputs": {"logits": [[…], …], "prob": [[…], …]}}. */
static char *
expected_outputs (guint n)
{
  GString *s = g_string_new ("{\"outputs\": {\"logits\": ");
  append_output_column (s, n, FALSE);
  g_string_append (s, ", \"prob\": ");
  append_output_column (s, n, TRUE);
  g_string_append (s, "}}");
  return g_string_free (s, FALSE);
}

/* ---- requests ---- */

/* "[0.5, -1, 2]": row @r of X. */
static char *
x_row (guint r)
{
  return g_strdup_printf ("[%.9g, %.9g, %.9g]", xv (r, 0), xv (r, 1), xv (r, 2));
}

/* {"instances": [{"x": ROW}, …]} (@objects) or {"instances": [ROW, …]} for rows 0..@n-1. */
static char *
instances_request (guint n, gboolean objects)
{
  GString *s = g_string_new ("{\"instances\": [");
  for (guint r = 0; r < n; r++) {
    g_autofree char *row = x_row (r);
    g_string_append_printf (s, objects ? "%s{\"x\": %s}" : "%s%s", r ? ", " : "", row);
  }
  g_string_append (s, "]}");
  return g_string_free (s, FALSE);
}

/* {"inputs": {"x": [ROW, …]}} (@named) or {"inputs": [ROW, …]} for rows 0..@n-1. */
static char *
inputs_request (guint n, gboolean named)
{
  GString *s = g_string_new (named ? "{\"inputs\": {\"x\": [" : "{\"inputs\": [");
  for (guint r = 0; r < n; r++) {
    g_autofree char *row = x_row (r);
    g_string_append_printf (s, "%s%s", r ? ", " : "", row);
  }
  g_string_append (s, named ? "]}}" : "]}");
  return g_string_free (s, FALSE);
}

static void
post (guint port, const char *path, const char *ctype, const void *body, gsize len, Resp *r)
{
  http (port, "POST", path, ctype, body, len, r);
}

static void
post_json (guint port, const char *path, const char *json, Resp *r)
{
  post (port, path, "application/json", json, strlen (json), r);
}

/* A serialized DeepRec PredictRequest of x = rows 0..@n-1 of X (@width values a row: 3 is the
 * model's), with the output filter @filter (nullable). */
static GBytes *
deeprec_request (guint n, guint width, const char *filter)
{
  Tensorflow__Eas__PredictRequest req = TENSORFLOW__EAS__PREDICT_REQUEST__INIT;
  Tensorflow__Eas__ArrayProto x = TENSORFLOW__EAS__ARRAY_PROTO__INIT;
  Tensorflow__Eas__ArrayShape shape = TENSORFLOW__EAS__ARRAY_SHAPE__INIT;
  Tensorflow__Eas__PredictRequest__InputsEntry entry =
      TENSORFLOW__EAS__PREDICT_REQUEST__INPUTS_ENTRY__INIT;
  Tensorflow__Eas__PredictRequest__InputsEntry *entries[] = {&entry};
  int64_t dims[] = {n, width};
  g_autofree float *values = g_new (float, n * width);
  for (guint r = 0; r < n; r++)
    for (guint c = 0; c < width; c++)
      values[r * width + c] = xv (r, c);
  shape.n_dim = 2;
  shape.dim = dims;
  x.dtype = TENSORFLOW__EAS__ARRAY_DATA_TYPE__DT_FLOAT;
  x.array_shape = &shape;
  x.n_float_val = n * width;
  x.float_val = values;
  entry.key = (char *) "x";
  entry.value = &x;
  req.n_inputs = 1;
  req.inputs = entries;
  char *filters[] = {(char *) filter};
  req.n_output_filter = filter ? 1 : 0;
  req.output_filter = filters;
  gsize size = tensorflow__eas__predict_request__get_packed_size (&req);
  guint8 *buf = g_malloc (size);
  tensorflow__eas__predict_request__pack (&req, buf);
  return g_bytes_new_take (buf, size);
}

static void
post_deeprec (guint port, const char *path, GBytes *body, gsize len, Resp *r)
{
  post (port, path, "application/x-protobuf", g_bytes_get_data (body, NULL), len, r);
}

static const Tensorflow__Eas__ArrayProto *
find_output (const Tensorflow__Eas__PredictResponse *resp, const char *name)
{
  for (size_t i = 0; i < resp->n_outputs; i++)
    if (strcmp (resp->outputs[i]->key, name) == 0)
      return resp->outputs[i]->value;
  return NULL;
}

/* Whether @a is output @name (logits or prob) of rows 0..@n-1: DT_FLOAT [n, 2], values within
 * 1e-6 of the hand-computed ones. */
static gboolean
deeprec_output_ok (const Tensorflow__Eas__ArrayProto *a, const char *name, guint n)
{
  if (a == NULL || a->dtype != TENSORFLOW__EAS__ARRAY_DATA_TYPE__DT_FLOAT || !a->array_shape ||
      a->array_shape->n_dim != 2 || a->array_shape->dim[0] != n || a->array_shape->dim[1] != 2 ||
      a->n_float_val != n * 2) {
    fprintf (stderr, "\n  output %s: missing, or the wrong dtype or shape\n", name);
    return FALSE;
  }
  for (guint r = 0; r < n; r++)
    for (guint o = 0; o < 2; o++) {
      double want = expected (r, o, strcmp (name, "prob") == 0);
      if (fabs (a->float_val[r * 2 + o] - want) > 1e-6 * MAX (1.0, fabs (want))) {
        fprintf (stderr, "\n  %s[%u][%u] = %.9g, expected %.9g\n", name, r, o,
                 a->float_val[r * 2 + o], want);
        return FALSE;
      }
    }
  return TRUE;
}

/* Asserts that @r is DeepRec's 200 answer to rows 0..@n-1: logits and prob, or only @filter. */
static void
assert_deeprec_answer (const Resp *r, guint n, const char *filter)
{
  if (r->status != 200)
    fprintf (stderr, "\n  status %d: %.300s\n", r->status, r->body ? r->body : "");
  CU_ASSERT_EQUAL_FATAL (r->status, 200);
  CU_ASSERT_PTR_NOT_NULL (strstr (r->headers, "content-type: application/x-protobuf"));
  Tensorflow__Eas__PredictResponse *resp =
      tensorflow__eas__predict_response__unpack (NULL, r->body_len, (const guint8 *) r->body);
  CU_ASSERT_PTR_NOT_NULL_FATAL (resp);
  if (filter) {
    CU_ASSERT_EQUAL (resp->n_outputs, 1);
    CU_ASSERT (deeprec_output_ok (find_output (resp, filter), filter, n));
  } else {
    CU_ASSERT_EQUAL (resp->n_outputs, 2);
    CU_ASSERT (deeprec_output_ok (find_output (resp, "logits"), "logits", n));
    CU_ASSERT (deeprec_output_ok (find_output (resp, "prob"), "prob", n));
  }
  tensorflow__eas__predict_response__free_unpacked (resp, NULL);
}

/* ---- the bare model: answers ---- */

#define M_PREDICT "/v1/models/m:predict"

static void
check_tfs_rows (guint port)
{
  for (guint n = 1; n <= N_ROWS; n += N_ROWS - 1)
    for (int objects = 0; objects < 2; objects++) {
      g_autofree char *req = instances_request (n, objects);
      g_autofree char *want = expected_predictions (n);
      Resp r;
      post_json (port, M_PREDICT, req, &r);
      assert_json_answer (&r, 200, want);
      resp_clear (&r);
    }
  /* signature_name given, and the served version's route. */
  const char *req = "{\"signature_name\": \"serving_default\", \"instances\": [[0.5, -1, 2]]}";
  g_autofree char *want = expected_predictions (1);
  const char *paths[] = {M_PREDICT, "/v1/models/m/versions/1:predict"};
  for (guint i = 0; i < G_N_ELEMENTS (paths); i++) {
    Resp r;
    post_json (port, paths[i], req, &r);
    assert_json_answer (&r, 200, want);
    resp_clear (&r);
  }
}

static void
check_tfs_columns (guint port)
{
  for (guint n = 1; n <= N_ROWS; n += N_ROWS - 1)
    for (int named = 0; named < 2; named++) {
      g_autofree char *req = inputs_request (n, named);
      g_autofree char *want = expected_outputs (n);
      Resp r;
      post_json (port, M_PREDICT, req, &r);
      assert_json_answer (&r, 200, want);
      resp_clear (&r);
    }
}

static void
check_deeprec (guint port)
{
  const char *filters[] = {NULL, "prob", "logits"};
  for (guint f = 0; f < G_N_ELEMENTS (filters); f++)
    for (guint n = 1; n <= N_ROWS; n += N_ROWS - 1) {
      g_autoptr (GBytes) req = deeprec_request (n, 3, filters[f]);
      Resp r;
      post_deeprec (port, M_PREDICT, req, g_bytes_get_size (req), &r);
      assert_deeprec_answer (&r, n, filters[f]);
      resp_clear (&r);
    }
}

/* The native protocol on the bare model: item features named as the model's inputs; the scores
 * are every float32 item column in frame order (docs/protocol.md): x, then logits and prob. */
static void
check_native (guint port)
{
  GString *req = g_string_new ("{\"user\": {\"id\": 1}, \"items\": [");
  for (guint r = 0; r < N_ROWS; r++) {
    g_autofree char *row = x_row (r);
    g_string_append_printf (req, "%s{\"id\": %u, \"features\": {\"x\": {\"floats\": %s}}}",
                            r ? ", " : "", 100 + r, row);
  }
  g_string_append (req, "]}");
  Resp r;
  predict_json (port, "m", req->str, &r);
  g_string_free (req, TRUE);
  CU_ASSERT_EQUAL_FATAL (r.status, 200);
  g_autoptr (JsonNode) got = parse_json (r.body);
  CU_ASSERT_PTR_NOT_NULL_FATAL (got);
  JsonObject *o = json_node_get_object (got);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "status"), "OK");
  JsonArray *items = json_object_get_array_member (o, "items");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (items), N_ROWS);
  for (guint i = 0; i < N_ROWS; i++) {
    GString *want = g_string_new (NULL);
    g_autofree char *row = x_row (i);
    g_string_append_printf (want, "{\"id\": %u, \"status\": \"SCORED\", \"scores\": [%s", 100 + i,
                            row + 1);
    g_string_truncate (want, want->len - 1);
    for (guint k = 0; k < 4; k++)
      g_string_append_printf (want, ", %.17g", expected (i, k % 2, k >= 2));
    g_string_append (want, "]}");
    g_autoptr (JsonNode) expect = parse_json (want->str);
    g_string_free (want, TRUE);
    g_autofree char *path = g_strdup_printf ("items[%u]", i);
    CU_ASSERT (json_close (json_array_get_element (items, i), expect, path));
  }
  resp_clear (&r);
  /* A request cut short: the error is at its end, byte 21 of 21. */
  predict_json (port, "m", "{\"items\": [{\"id\": 1}]", &r);
  CU_ASSERT_EQUAL (r.status, 400);
  CU_ASSERT_PTR_NOT_NULL (r.body && strstr (r.body, "invalid request: invalid JSON: the text ends "
                                                    "before the JSON value does (at byte 21 of 21)"));
  resp_clear (&r);
}

/* Concurrent requests of 1 to 16 rows, and one of 40, in both JSON formats: the model stage
 * batches queued requests into one engine run and splits the outputs back to each. */
typedef struct {
  guint port;
  guint n;
  gboolean columns;
  gboolean ok;
} Concurrent;

static gpointer
concurrent_request (gpointer data)
{
  Concurrent *c = data;
  g_autofree char *req = c->columns ? inputs_request (c->n, TRUE) : instances_request (c->n, TRUE);
  g_autofree char *want = c->columns ? expected_outputs (c->n) : expected_predictions (c->n);
  Resp r;
  post_json (c->port, M_PREDICT, req, &r);
  g_autoptr (JsonNode) got = r.status == 200 ? parse_json (r.body) : NULL;
  g_autoptr (JsonNode) expect = parse_json (want);
  g_autofree char *where = g_strdup_printf ("%u rows", c->n);
  c->ok = got && json_close (got, expect, where);
  if (r.status != 200)
    fprintf (stderr, "\n  %u rows: status %d: %.200s\n", c->n, r.status, r.body ? r.body : "");
  resp_clear (&r);
  return NULL;
}

static void
check_concurrent (guint port)
{
  Concurrent c[17];
  GThread *t[17];
  for (guint i = 0; i < G_N_ELEMENTS (c); i++) {
    c[i] = (Concurrent) {.port = port, .n = i < 16 ? i + 1 : 40, .columns = i % 2};
    t[i] = g_thread_new ("client", concurrent_request, &c[i]);
  }
  for (guint i = 0; i < G_N_ELEMENTS (c); i++) {
    g_thread_join (t[i]);
    CU_ASSERT (c[i].ok);
  }
}

/* ---- the bare model: status, metadata and routes ---- */

static const char *status_available =
    "{\"model_version_status\": [{\"version\": \"1\", \"state\": \"AVAILABLE\", "
    "\"status\": {\"error_code\": \"OK\", \"error_message\": \"\"}}]}";

/* TF Serving's GetModelMetadata of make-model.py's model as `m`. */
static const char *metadata_m =
    "{\"model_spec\": {\"name\": \"m\", \"signature_name\": \"\", \"version\": \"1\"},"
    " \"metadata\": {\"signature_def\": {\"signature_def\": {\"serving_default\": {"
    "  \"inputs\": {\"x\": {\"dtype\": \"DT_FLOAT\", \"tensor_shape\": {\"dim\": "
    "     [{\"size\": \"-1\"}, {\"size\": \"3\"}]}, \"name\": \"x\"}},"
    "  \"outputs\": {"
    "   \"logits\": {\"dtype\": \"DT_FLOAT\", \"tensor_shape\": {\"dim\": "
    "     [{\"size\": \"-1\"}, {\"size\": \"2\"}]}, \"name\": \"logits\"},"
    "   \"prob\": {\"dtype\": \"DT_FLOAT\", \"tensor_shape\": {\"dim\": "
    "     [{\"size\": \"-1\"}, {\"size\": \"2\"}]}, \"name\": \"prob\"}},"
    "  \"method_name\": \"tensorflow/serving/predict\"}}}}}";

/* Asserts that @r answered @status with TF Serving's {"error": "…"} holding every needle. */
static void
assert_tfs_error (const Resp *r, int status, const char *const *needles)
{
  if (r->status != status)
    fprintf (stderr, "\n  status %d, expected %d: %.300s\n", r->status, status,
             r->body ? r->body : "");
  CU_ASSERT_EQUAL (r->status, status);
  g_autoptr (JsonNode) got = parse_json (r->body);
  CU_ASSERT_FATAL (got && JSON_NODE_HOLDS_OBJECT (got));
  JsonObject *o = json_node_get_object (got);
  CU_ASSERT_EQUAL (json_object_get_size (o), 1);
  const char *m = json_object_get_string_member_with_default (o, "error", "");
  for (guint i = 0; needles[i]; i++) {
    if (strstr (m, needles[i]) == NULL)
      fprintf (stderr, "\n  error '%s' lacks '%s'\n", m, needles[i]);
    CU_ASSERT_PTR_NOT_NULL (strstr (m, needles[i]));
  }
}

#define ASSERT_TFS_ERROR(r, status, ...)                                                           \
  do {                                                                                             \
    const char *const _n[] = {__VA_ARGS__, NULL};                                                  \
    assert_tfs_error ((r), (status), _n);                                                          \
  } while (0)

static void
check_status_and_routes (guint port)
{
  Resp r;
  const char *status_paths[] = {"/v1/models/m", "/v1/models/m/versions/1"};
  for (guint i = 0; i < G_N_ELEMENTS (status_paths); i++) {
    get (port, status_paths[i], &r);
    assert_json_answer (&r, 200, status_available);
    resp_clear (&r);
  }
  get (port, "/v1/models/m/metadata", &r);
  assert_json_answer (&r, 200, metadata_m);
  resp_clear (&r);
  get (port, "/v1/models/m/versions/1/metadata", &r); /* per version, as TF Serving */
  assert_json_answer (&r, 200, metadata_m);
  resp_clear (&r);
  get (port, "/v1/models/m/versions/2/metadata", &r);
  ASSERT_TFS_ERROR (&r, 404, "version '2' of model 'm' is not served");
  resp_clear (&r);
  get (port, "/v1/models/m/versions/2", &r);
  ASSERT_TFS_ERROR (&r, 404, "version '2' of model 'm' is not served", "serves version 1");
  resp_clear (&r);
  g_autofree char *req = instances_request (1, FALSE);
  post_json (port, "/v1/models/m/versions/2:predict", req, &r);
  ASSERT_TFS_ERROR (&r, 404, "version '2' of model 'm' is not served", "serves version 1");
  resp_clear (&r);
  post_json (port, "/v1/models/m/labels/x:predict", req, &r);
  ASSERT_TFS_ERROR (&r, 404, "no version labelled 'x'");
  resp_clear (&r);
  post_json (port, "/v1/models/nope:predict", req, &r);
  ASSERT_TFS_ERROR (&r, 404, "/v1/models/nope:predict");
  resp_clear (&r);
  get (port, "/v1/models/nope/metadata", &r);
  ASSERT_TFS_ERROR (&r, 404, "/v1/models/nope/metadata");
  resp_clear (&r);
  get (port, "/v1/models/nope", &r);
  CU_ASSERT_EQUAL (r.status, 404);
  resp_clear (&r);
}

/* ---- the bare model: refusals, each followed by a good request ---- */

static void
assert_still_serving (guint port)
{
  Resp r;
  g_autofree char *req = instances_request (2, TRUE);
  g_autofree char *want = expected_predictions (2);
  post_json (port, M_PREDICT, req, &r);
  assert_json_answer (&r, 200, want);
  resp_clear (&r);
}

/* Each refused JSON request and the field its message names (after "invalid request: "). */
static const struct {
  const char *body;
  const char *needle;
} refused_json[] = {
    /* Cut short: the error is at the text's end, byte 27 of 27. */
    {"{\"instances\": [[0.5, -1, 2]",
     "invalid request: invalid JSON: the text ends before the JSON value does (at byte 27 of 27)"},
    /* Text after the value: the error is at its first byte, the 30th (offset 29). */
    {"{\"instances\": [[0.5, -1, 2]]}}",
     "invalid request: invalid JSON: text after the JSON value (at byte 29 of 30)"},
    {"[1, 2]", "invalid request: a request must be a JSON object with instances or inputs"},
    {"{\"instances\": [{\"x\": [1, 2, 3]}, {\"x\": [1, 2]}]}",
     "invalid request: instances[1].x: 2 values, the signature's width for x is 3"},
    {"{\"inputs\": {\"x\": [[1, 2, 3], [1, 2, 3, 4]]}}",
     "invalid request: inputs.x[1]: 4 values, the signature's width for x is 3"},
    {"{\"instances\": [[1, 2]]}", "invalid request: instances[0]: 2 values"},
    {"{\"inputs\": {}}", "invalid request: inputs: the input x is missing"},
    {"{\"instances\": [{\"x\": [1, 2, 3]}, {}]}",
     "invalid request: instances[1]: the input x is missing (the signature serving_default takes "
     "x; every instance carries the same inputs)"},
    {"{\"instances\": [{\"x\": [1, 2, 3], \"y\": [1]}]}",
     "invalid request: instances[0].y: not an input of the signature serving_default (its "
     "inputs: x)"},
    {"{\"inputs\": {\"x\": [[1, 2, 3]], \"z\": [[1]]}}",
     "invalid request: inputs.z: not an input of the signature serving_default"},
    {"{\"instances\": [[1, 2, 3]], \"inputs\": [[1, 2, 3]]}",
     "a request carries instances (row format) or inputs (columnar format), not both"},
    {"{\"instances\": [[1, 2, 3]], \"outputs\": 1}",
     "invalid request: outputs: unknown field (expected signature_name, instances or inputs)"},
    {"{\"signature_name\": \"other\", \"instances\": [[1, 2, 3]]}",
     "invalid request: signature_name: 'other' is not a signature of this model"},
    {"{\"instances\": []}", "invalid request: instances: an empty list"},
    {"{\"instances\": [[1, \"a\", 3]]}", "invalid request: instances[0]: a string, but the "
                                         "input x is a float32 array"},
    {"{}", "invalid request: expected instances (row format) or inputs (columnar format)"},
};

static void
check_refused_json (guint port)
{
  for (guint i = 0; i < G_N_ELEMENTS (refused_json); i++) {
    Resp r;
    post_json (port, M_PREDICT, refused_json[i].body, &r);
    ASSERT_TFS_ERROR (&r, 400, refused_json[i].needle);
    CU_ASSERT (r.body && g_str_has_prefix (r.body, "{\"error\":"));
    resp_clear (&r);
    assert_still_serving (port);
  }
}

/* Asserts DeepRec's refusal: @status with a plain-text message holding @needle. */
static void
assert_text_error (const Resp *r, int status, const char *needle)
{
  if (r->status != status || r->body == NULL || strstr (r->body, needle) == NULL)
    fprintf (stderr, "\n  status %d (expected %d): '%s' (expected '%s')\n", r->status, status,
             r->body ? r->body : "", needle);
  CU_ASSERT_EQUAL (r->status, status);
  CU_ASSERT_PTR_NOT_NULL (r->headers && strstr (r->headers, "content-type: text/plain"));
  CU_ASSERT_PTR_NOT_NULL (r->body && strstr (r->body, needle));
}

static void
check_refused_deeprec (guint port)
{
  g_autoptr (GBytes) good = deeprec_request (2, 3, NULL);
  gsize len = g_bytes_get_size (good);
  Resp r;
  /* Truncated: the last bytes of the float values are missing. */
  post_deeprec (port, M_PREDICT, good, len - 3, &r);
  assert_text_error (&r, 400, "invalid request: not a valid DeepRec PredictRequest (truncated "
                              "or malformed)");
  resp_clear (&r);
  assert_still_serving (port);
  g_autoptr (GBytes) narrow = deeprec_request (2, 2, NULL);
  post_deeprec (port, M_PREDICT, narrow, g_bytes_get_size (narrow), &r);
  assert_text_error (&r, 400, "invalid request: inputs.x: the shape [2, 2] makes rows of 2 "
                              "values, the signature's width for x is 3");
  resp_clear (&r);
  assert_still_serving (port);
  g_autoptr (GBytes) filtered = deeprec_request (1, 3, "score");
  post_deeprec (port, M_PREDICT, filtered, g_bytes_get_size (filtered), &r);
  assert_text_error (&r, 400, "invalid request: output_filter: 'score' is not an output of the "
                              "signature serving_default (its outputs: logits, prob)");
  resp_clear (&r);
  /* The other content types DeepRec clients send answer the same. */
  post (port, M_PREDICT, "application/octet-stream", g_bytes_get_data (good, NULL), len, &r);
  assert_deeprec_answer (&r, 2, NULL);
  resp_clear (&r);
}

static void
check_refused_http (guint port)
{
  Resp r;
  g_autofree char *req = instances_request (1, FALSE);
  post (port, M_PREDICT, "text/plain", req, strlen (req), &r);
  CU_ASSERT_EQUAL (r.status, 415);
  CU_ASSERT_PTR_NOT_NULL (r.body && strstr (r.body, "content type 'text/plain' is not supported"));
  resp_clear (&r);
  assert_still_serving (port);
  get (port, M_PREDICT, &r);
  CU_ASSERT_EQUAL (r.status, 405);
  CU_ASSERT_PTR_NOT_NULL (r.headers && strstr (r.headers, "allow: post"));
  resp_clear (&r);
  post_json (port, "/v1/models/m/metadata", req, &r);
  CU_ASSERT_EQUAL (r.status, 405);
  resp_clear (&r);
  assert_still_serving (port);
}

/* Under `meson test --setup valgrind` the bare model's server runs under memcheck too: the
 * model API's decoding, routing and answers are in the server process. */
static const char *const valgrind_argv[] = {
    "valgrind", "--error-exitcode=1", "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
    "--num-callers=30", "--suppressions=" SEDP_TEST_SRCDIR "/valgrind.supp", NULL};

/* One server, `sedp serve --model m=MODEL.onnx`, through every check; it exits 0 at SIGTERM
 * (under valgrind: without an error or a leak). */
static void
test_bare_model (void)
{
  const char *pipelines[] = {NULL};
  Server s;
  server_wrapper = g_getenv ("SEDP_VALGRIND") ? valgrind_argv : NULL;
  gboolean started = server_start (&s, pipelines, "--model=m=" SEDP_TEST_MODEL_API_MODEL);
  server_wrapper = NULL;
  if (!started)
    return;
  check_tfs_rows (s.port);
  check_tfs_columns (s.port);
  check_deeprec (s.port);
  check_native (s.port);
  check_concurrent (s.port);
  check_status_and_routes (s.port);
  check_refused_json (s.port);
  check_refused_deeprec (s.port);
  check_refused_http (s.port);
  assert_healthy (s.port);
  int status = server_stop (&s);
  if (status != 0)
    fprintf (stderr, "\n  sedp serve exited %d\n", status);
  CU_ASSERT_EQUAL (status, 0);
}

/* ---- a pipeline under the model API, beside a bare model ---- */

/* data_reader, then the model on item rows; the signature renames the request's `features` to
 * the model's input column x and answers the column prob as `score`. */
static const char *sig_pipeline =
    "[pipeline]\nname = sig\ndeadline_ms = 30000\n"
    "[stage reader]\nplugin = data_reader\n"
    "[stage model]\nplugin = model_inference\nafter = reader\nscope = item\n"
    "model = " SEDP_TEST_MODEL_API_MODEL "\n"
    "[signature serving_default]\ninputs = features=x:float32[3]\noutputs = score=prob[2]\n";

/* Its GetModelMetadata: the signature's arrays, each naming the column it fills or answers. */
static const char *metadata_sig =
    "{\"model_spec\": {\"name\": \"sig\", \"signature_name\": \"\", \"version\": \"1\"},"
    " \"metadata\": {\"signature_def\": {\"signature_def\": {\"serving_default\": {"
    "  \"inputs\": {\"features\": {\"dtype\": \"DT_FLOAT\", \"tensor_shape\": {\"dim\": "
    "     [{\"size\": \"-1\"}, {\"size\": \"3\"}]}, \"name\": \"x\"}},"
    "  \"outputs\": {\"score\": {\"dtype\": \"DT_FLOAT\", \"tensor_shape\": {\"dim\": "
    "     [{\"size\": \"-1\"}, {\"size\": \"2\"}]}, \"name\": \"prob\"}},"
    "  \"method_name\": \"tensorflow/serving/predict\"}}}}}";

static void
check_signature_pipeline (guint port)
{
  /* Rows: {"predictions": [[p0, p1], …]} (one output: the bare value of each row). */
  GString *req = g_string_new ("{\"instances\": [");
  GString *want = g_string_new ("{\"predictions\": ");
  GString *creq = g_string_new ("{\"inputs\": {\"features\": [");
  for (guint r = 0; r < N_ROWS; r++) {
    g_autofree char *row = x_row (r);
    g_string_append_printf (req, "%s{\"features\": %s}", r ? ", " : "", row);
    g_string_append_printf (creq, "%s%s", r ? ", " : "", row);
  }
  g_string_append (req, "]}");
  g_string_append (creq, "]}}");
  append_output_column (want, N_ROWS, TRUE);
  g_string_append (want, "}");
  Resp r;
  post_json (port, "/v1/models/sig:predict", req->str, &r);
  assert_json_answer (&r, 200, want->str);
  resp_clear (&r);
  /* Columns: {"outputs": [[p0, p1], …]}. */
  g_string_assign (want, "{\"outputs\": ");
  append_output_column (want, N_ROWS, TRUE);
  g_string_append (want, "}");
  post_json (port, "/v1/models/sig:predict", creq->str, &r);
  assert_json_answer (&r, 200, want->str);
  resp_clear (&r);
  g_string_free (req, TRUE);
  g_string_free (creq, TRUE);
  g_string_free (want, TRUE);
  /* The model's own name is not the signature's. */
  post_json (port, "/v1/models/sig:predict", "{\"instances\": [{\"x\": [1, 2, 3]}]}", &r);
  ASSERT_TFS_ERROR (&r, 400, "invalid request: instances[0].x: not an input of the signature "
                             "serving_default (its inputs: features)");
  resp_clear (&r);
  /* DeepRec's protobuf names the signature's arrays too. */
  g_autoptr (GBytes) pb = deeprec_request (2, 3, NULL);
  post_deeprec (port, "/v1/models/sig:predict", pb, g_bytes_get_size (pb), &r);
  assert_text_error (&r, 400, "invalid request: inputs.x: not an input of the signature "
                              "serving_default (its inputs: features)");
  resp_clear (&r);
  get (port, "/v1/models/sig/metadata", &r);
  assert_json_answer (&r, 200, metadata_sig);
  resp_clear (&r);
  get (port, "/v1/models/sig", &r);
  CU_ASSERT_EQUAL (r.status, 200);
  g_autoptr (JsonNode) status = parse_json (r.body);
  g_autoptr (JsonNode) available = parse_json (status_available);
  CU_ASSERT (status && json_close (status, available, "$"));
  resp_clear (&r);
}

/* `--model a=MODEL.onnx` and a pipeline file in one server: both answer. */
static void
test_pipeline_and_model (void)
{
  const char *pipelines[] = {sig_pipeline, NULL};
  Server s;
  if (!server_start (&s, pipelines, "--model=a=" SEDP_TEST_MODEL_API_MODEL))
    return;
  check_signature_pipeline (s.port);
  g_autofree char *req = instances_request (N_ROWS, FALSE);
  g_autofree char *want = expected_predictions (N_ROWS);
  Resp r;
  post_json (s.port, "/v1/models/a:predict", req, &r);
  assert_json_answer (&r, 200, want);
  resp_clear (&r);
  g_autoptr (GBytes) pb = deeprec_request (N_ROWS, 3, NULL);
  post_deeprec (s.port, "/v1/models/a:predict", pb, g_bytes_get_size (pb), &r);
  assert_deeprec_answer (&r, N_ROWS, NULL);
  resp_clear (&r);
  check_signature_pipeline (s.port);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
}

/* ---- start-up errors ---- */

/* Runs `sedp serve ARGS… --listen 127.0.0.1:0`: it must exit 1 with every needle on stderr. */
static void
assert_serve_fails (const char *const *args, const char *const *needles)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "serve");
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, (gpointer) "--listen");
  g_ptr_array_add (argv, (gpointer) "127.0.0.1:0");
  g_ptr_array_add (argv, NULL);
  g_auto (SedpTestRun) run = {0};
  sedp_test_spawn_args (&run, NULL, (const char *const *) argv->pdata);
  SEDP_ASSERT_EXIT (run, 1);
  for (guint i = 0; needles[i]; i++)
    SEDP_ASSERT_CONTAINS (run.err, needles[i]);
}

#define ASSERT_SERVE_FAILS(args, ...)                                                              \
  do {                                                                                             \
    const char *const _n[] = {__VA_ARGS__, NULL};                                                  \
    assert_serve_fails ((args), _n);                                                               \
  } while (0)

static void
test_bad_signature (void)
{
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-model-api-XXXXXX");
  g_autofree char *path = g_build_filename (dir, "bad-sig.pipeline", NULL);
  g_autofree char *text = g_strdup_printf (
      "[pipeline]\nname = bad\n"
      "[stage reader]\nplugin = data_reader\n"
      "[stage model]\nplugin = model_inference\nafter = reader\nscope = item\nmodel = %s\n"
      "[signature serving_default]\ninputs = x:float99\n",
      SEDP_TEST_MODEL_API_MODEL);
  sedp_test_write_file (path, text, -1);
  const char *args[] = {path, NULL};
  /* The file, the line, the group, the key, the entry and why. */
  g_autofree char *where = g_strdup_printf ("%s:11: [signature serving_default] inputs: "
                                            "signature entry 'x:float99': unknown type "
                                            "'float99'", path);
  ASSERT_SERVE_FAILS (args, where);
  /* Beside a bare model, the same. */
  const char *args2[] = {"--model", "m=" SEDP_TEST_MODEL_API_MODEL, path, NULL};
  ASSERT_SERVE_FAILS (args2, where);
  sedp_test_remove_tree (dir);
}

static void
test_model_option_errors (void)
{
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-model-api-XXXXXX");
  g_autofree char *text = g_build_filename (dir, "text.onnx", NULL);
  sedp_test_write_file (text, "this is not an ONNX model\n", -1);
  const char *no_eq[] = {"--model", "nofile", NULL};
  ASSERT_SERVE_FAILS (no_eq, "--model nofile: expected NAME=FILE.onnx");
  const char *no_name[] = {"--model", "=" SEDP_TEST_MODEL_API_MODEL, NULL};
  ASSERT_SERVE_FAILS (no_name, "expected NAME=FILE.onnx");
  const char *missing[] = {"--model", "m=/nonexistent.onnx", NULL};
  ASSERT_SERVE_FAILS (missing, "--model m=/nonexistent.onnx", "no such file");
  g_autofree char *not_onnx_arg = g_strdup_printf ("m=%s", text);
  const char *not_onnx[] = {"--model", not_onnx_arg, NULL};
  g_autofree char *not_onnx_msg = g_strdup_printf ("--model %s: %s: ", not_onnx_arg, text);
  ASSERT_SERVE_FAILS (not_onnx, not_onnx_msg, "not a complete ONNX file");
  const char *twice[] = {"--model", "m=" SEDP_TEST_MODEL_API_MODEL, "--model",
                         "m=" SEDP_TEST_MODEL_API_MODEL, NULL};
  ASSERT_SERVE_FAILS (twice, "--model m=" SEDP_TEST_MODEL_API_MODEL ": ",
                      "a pipeline named 'm' is served already");
  sedp_test_remove_tree (dir);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("model-api", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
      T (test_bare_model),
      T (test_pipeline_and_model),
      T (test_bad_signature),
      T (test_model_option_errors),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  return sedp_test_run ();
}
