/* sedp compat tests — TF Serving's REST predict JSON (core/io/tfs-json.c) and model-API
 * signatures (core/io/model-api-signature.c). The golden requests and answers are the examples
 * of TF Serving's "RESTful API" page (tensorflow_serving/g3doc/api_rest.md); answers are
 * compared with the expected text as parsed JSON trees (json-glib). */
#include "compat-test.h"

#include <json-glib/json-glib.h>

static const SedpProtocolLimits *no_limits = NULL;

static gboolean
decode (const SedpModelApiSignature *s, const SedpProtocolLimits *limits, const char *json,
        SedpModelApiRequest *out, GError **error)
{
  return sedp_model_api_decode (SEDP_MODEL_API_TFS_JSON, (const guint8 *) json, strlen (json), s,
                                limits, out, error);
}

/* Decodes @json, failing the test when refused. */
static void
decode_ok (const SedpModelApiSignature *s, const char *json, SedpModelApiRequest *out)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = decode (s, no_limits, json, out, &error);
  if (!ok)
    fprintf (stderr, "\n  refused %s: %s\n", json, error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  CU_ASSERT_PTR_NOT_NULL_FATAL (out->items);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (out->items), out->n_rows);
}

/* Decodes @json, which must be refused with @code and a message holding @needle (and @needle2
 * when given). */
static void
refused (const SedpModelApiSignature *s, const SedpProtocolLimits *limits, const char *json,
         gint code, const char *needle, const char *needle2)
{
  SedpModelApiRequest out;
  g_autoptr (GError) error = NULL;
  gboolean ok = decode (s, limits, json, &out, &error);
  if (ok)
    fprintf (stderr, "\n  accepted %s\n", json);
  CU_ASSERT_FALSE_FATAL (ok);
  CU_ASSERT_PTR_NULL (out.items);
  COMPAT_ASSERT_REFUSED (error, code, needle, needle2 ? needle2 : needle);
}

/* @got is the JSON text @want (compared as trees: key order and number spelling aside). */
static void
assert_json (GBytes *got, const char *want)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (got);
  gsize len = 0;
  const char *text = g_bytes_get_data (got, &len);
  g_autofree char *copy = g_strndup (text, len);
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonNode) a = json_from_string (copy, &error);
  g_autoptr (JsonNode) b = json_from_string (want, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  if (a == NULL || !json_node_equal (a, b))
    fprintf (stderr, "\n  got  %s\n  want %s\n", copy, want);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT (json_node_equal (a, b));
}

/* ---- the documented requests ---- */

/* "List of 3 scalar tensors": {"instances": ["foo", "bar", "baz"]} */
static void
test_row_bare_strings (void)
{
  const char *in[] = {"word:string", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [ \"foo\", \"bar\", \"baz\" ]}", &r);
  CU_ASSERT_EQUAL (r.n_rows, 3);
  CU_ASSERT_FALSE (r.columnar);
  CU_ASSERT_PTR_NULL (r.signature_name);
  const char *want[] = {"foo", "bar", "baz", NULL};
  assert_strings (r.items, "word", want);
  CU_ASSERT_EQUAL (sedp_frame_get_n_columns (r.items), 1); /* no item_id: rows are the batch */
  sedp_model_api_request_clear (&r);
}

/* "List of 2 tensors each of [1, 2] shape": {"instances": [ [[1, 2]], [[3, 4]] ]} */
static void
test_row_bare_nested (void)
{
  const char *in[] = {"t:float32[1,2]", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [ [[1, 2]], [[3, 4]] ]}", &r);
  const float want[] = {1, 2, 3, 4};
  assert_floats (r.items, "t", 2, want, 4);
  sedp_model_api_request_clear (&r);
}

/* The documented instances of three named inputs (with the page's stray ']' removed). */
#define DOC_ROWS                                                                                 \
  "{\"instances\": [{\"tag\": \"foo\", \"signal\": [1, 2, 3, 4, 5], \"sensor\": [[1, 2], [3, 4]]}," \
  " {\"tag\": \"bar\", \"signal\": [3, 4, 1, 2, 5], \"sensor\": [[4, 5], [6, 8]]}]}"
#define DOC_COLUMNS                                                                              \
  "{\"inputs\": {\"tag\": [\"foo\", \"bar\"], \"signal\": [[1, 2, 3, 4, 5], [3, 4, 1, 2, 5]],"    \
  " \"sensor\": [[[1, 2], [3, 4]], [[4, 5], [6, 8]]]}}"

static const char *const doc_inputs[] = {"tag:string", "signal:float32[5]", "sensor[2,2]", NULL};

static void
check_doc_columns (const SedpModelApiRequest *r)
{
  CU_ASSERT_EQUAL (r->n_rows, 2);
  const char *tags[] = {"foo", "bar", NULL};
  assert_strings (r->items, "tag", tags);
  const float signal[] = {1, 2, 3, 4, 5, 3, 4, 1, 2, 5}, sensor[] = {1, 2, 3, 4, 4, 5, 6, 8};
  assert_floats (r->items, "signal", 5, signal, 10);
  assert_floats (r->items, "sensor", 4, sensor, 8);
}

static void
test_row_named (void)
{
  g_autoptr (SedpModelApiSignature) s = make_signature (doc_inputs, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, DOC_ROWS, &r);
  CU_ASSERT_FALSE (r.columnar);
  check_doc_columns (&r);
  sedp_model_api_request_clear (&r);
}

static void
test_columnar_named (void)
{
  g_autoptr (SedpModelApiSignature) s = make_signature (doc_inputs, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, DOC_COLUMNS, &r);
  CU_ASSERT_TRUE (r.columnar);
  check_doc_columns (&r);
  sedp_model_api_request_clear (&r);
}

/* half_plus_three's request, both ways; a signature_name; ARRAY=COLUMN */
static void
test_bare_scalars (void)
{
  const char *in[] = {"x=feature_x", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, FALSE);
  const float want[] = {1, 2, 5};
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [1.0,2.0,5.0]}", &r);
  assert_floats (r.items, "feature_x", 1, want, 3);
  sedp_model_api_request_clear (&r);
  decode_ok (s, "{\"signature_name\": \"serving_default\", \"inputs\": [1.0, 2, 5e0]}", &r);
  CU_ASSERT_TRUE (r.columnar);
  CU_ASSERT_STRING_EQUAL (r.signature_name, "serving_default");
  assert_floats (r.items, "feature_x", 1, want, 3);
  sedp_model_api_request_clear (&r);
  /* a one-value list is the same row; an object naming the one input too */
  decode_ok (s, "{\"instances\": [[1], {\"x\": 2}, {\"x\": [5.0]}]}", &r);
  assert_floats (r.items, "feature_x", 1, want, 3);
  sedp_model_api_request_clear (&r);
  refused (s, NULL, "{\"signature_name\": \"other\", \"instances\": [1]}",
           SEDP_PROTOCOL_ERROR_INVALID, "signature_name: 'other' is not a signature of this model",
           "it has 'serving_default'");
}

/* "Encoding binary values": {"b64": …}, bare and named (the page's image and caption). */
static void
test_b64 (void)
{
  const char *one[] = {"image:string", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (one, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [{ \"b64\": \"aW1hZ2UgYnl0ZXM=\" }, {\"b64\": "
                "\"YXdlc29tZSBpbWFnZSBieXRlcw==\"}]}", &r);
  const char *images[] = {"image bytes", "awesome image bytes", NULL};
  assert_strings (r.items, "image", images);
  sedp_model_api_request_clear (&r);
  const char *two[] = {"image:string", "caption:string", NULL};
  g_autoptr (SedpModelApiSignature) s2 = make_signature (two, NULL, FALSE);
  decode_ok (s2, "{\"instances\": [{\"image\": { \"b64\": \"aW1hZ2UgYnl0ZXM=\" }, \"caption\": "
                 "\"seaside\"}, {\"image\": { \"b64\": \"YXdlc29tZSBpbWFnZSBieXRlcw==\" }, "
                 "\"caption\": \"mountains\"}]}", &r);
  assert_strings (r.items, "image", images);
  const char *captions[] = {"seaside", "mountains", NULL};
  assert_strings (r.items, "caption", captions);
  sedp_model_api_request_clear (&r);
  /* columnar, unpadded, and inside a one-element list */
  decode_ok (s2, "{\"inputs\": {\"image\": [{\"b64\": \"YWI\"}, [{\"b64\": \"YQ==\"}]], "
                 "\"caption\": [\"x\", \"y\"]}}", &r);
  const char *ab[] = {"ab", "a", NULL};
  assert_strings (r.items, "image", ab);
  sedp_model_api_request_clear (&r);
}

static void
test_int64 (void)
{
  const char *in[] = {"ids:int64[3]", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, FALSE);
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [[1, -2, 9223372036854775807], [4.0, 5e2, -9223372036854775808]]}",
             &r);
  const gint64 want[] = {1, -2, G_MAXINT64, 4, 500, G_MININT64};
  assert_ints (r.items, "ids", 3, want, 6);
  sedp_model_api_request_clear (&r);
  refused (s, NULL, "{\"instances\": [[1, 2, 3], [1, 2.5, 3]]}", SEDP_PROTOCOL_ERROR_INVALID,
           "instances[1]: 2.5 is not a 64-bit integer", "int64");
  refused (s, NULL, "{\"inputs\": {\"ids\": [[1, 2, 1e19]]}}", SEDP_PROTOCOL_ERROR_INVALID,
           "inputs.ids[0]: 1e+19 is not a 64-bit integer", NULL);
}

/* Booleans are numbers 1 and 0; an open signature takes its arrays' types and widths from the
 * request. */
static void
test_open (void)
{
  const char *in[] = {"dense[2]", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, TRUE);
  SedpModelApiRequest r;
  decode_ok (s, "{\"instances\": [{\"dense\": [1, 2], \"q\": \"a\", \"v\": [true, false, 3]},"
                " {\"q\": \"b\", \"v\": [4, 5, 6], \"dense\": [3, 4]}]}", &r);
  const float dense[] = {1, 2, 3, 4}, v[] = {1, 0, 3, 4, 5, 6};
  const char *q[] = {"a", "b", NULL};
  assert_floats (r.items, "dense", 2, dense, 4);
  assert_floats (r.items, "v", 3, v, 6);
  assert_strings (r.items, "q", q);
  sedp_model_api_request_clear (&r);
  refused (s, NULL, "{\"instances\": [{\"dense\": [1, 2], \"v\": [1, 2]}, {\"dense\": [3, 4], "
           "\"v\": [1]}]}", SEDP_PROTOCOL_ERROR_INVALID, "instances[1].v: 1 values, but the first "
           "row of v has 2", NULL);
  refused (s, NULL, "{\"instances\": [{\"dense\": [1, 2]}, {\"dense\": [3, 4], \"v\": 1}]}",
           SEDP_PROTOCOL_ERROR_INVALID, "instances[1].v: not in the instances before", NULL);
  refused (s, NULL, "{\"instances\": [{\"dense\": [1, 2], \"v\": 1}, {\"dense\": [3, 4]}]}",
           SEDP_PROTOCOL_ERROR_INVALID, "instances[1]: the input v is missing", NULL);
  refused (s, NULL, "{\"instances\": [{\"dense\": [1, 2], \"v\": 1}, {\"dense\": [3, 4], "
           "\"v\": \"a\"}]}", SEDP_PROTOCOL_ERROR_INVALID, "instances[1].v: a string, but the "
           "input v is a float32 array", NULL);
}

/* ---- refusals ---- */

static void
test_refused_structure (void)
{
  g_autoptr (SedpModelApiSignature) s = make_signature (doc_inputs, NULL, FALSE);
  const gint INVALID = SEDP_PROTOCOL_ERROR_INVALID;
  refused (s, NULL, "[1, 2]", INVALID, "a request must be a JSON object", NULL);
  refused (s, NULL, "\"x\"", INVALID, "a request must be a JSON object", NULL);
  refused (s, NULL, "{\"instances\": [", INVALID, "invalid JSON", NULL);
  refused (s, NULL, "{\"inputs\": {\"signal\": [[NaN, 1, 2, 3, 4]]}}", INVALID, "invalid JSON",
           NULL);
  /* Past float32's range (first value in a list, then later in it: both paths of the decoder) */
  refused (s, NULL, "{\"inputs\": {\"signal\": [[1e39, 1, 2, 3, 4]]}}", INVALID,
           "1e+39 is out of the range of the float32 input signal", NULL);
  refused (s, NULL, "{\"inputs\": {\"signal\": [[1, 2, -4e38, 3, 4]]}}", INVALID,
           "-4e+38 is out of the range of the float32 input signal", NULL);
  refused (s, NULL, "{}", INVALID, "expected instances (row format) or inputs (columnar", NULL);
  refused (s, NULL, "{\"instances\": [], \"inputs\": {}}", INVALID, "instances: an empty list",
           NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [\"a\"]}, \"instances\": []}", INVALID,
           "not both", NULL);
  refused (s, NULL, "{\"instances\": 3}", INVALID, "instances: expected a list", NULL);
  refused (s, NULL, "{\"inputs\": 3}", INVALID, "inputs: expected an object", NULL);
  refused (s, NULL, "{\"inputs\": [1, 2]}", INVALID, "inputs: expected an object of named inputs",
           "takes tag, signal, sensor");
  refused (s, NULL, "{\"instances\": [1, 2]}", INVALID, "instances[0]: expected an object of "
           "named inputs", NULL);
  refused (s, NULL, "{\"model\": 1, \"instances\": []}", INVALID, "model: unknown field", NULL);
  refused (s, NULL, "{\"signature_name\": 7}", INVALID, "signature_name: expected a string",
           NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": \"a\"}}", INVALID, "inputs.tag: expected a list whose "
           "first dimension is the batch", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": []}}", INVALID, "inputs.tag: an empty list", NULL);
}

static void
test_refused_inputs (void)
{
  g_autoptr (SedpModelApiSignature) s = make_signature (doc_inputs, NULL, FALSE);
  const gint INVALID = SEDP_PROTOCOL_ERROR_INVALID;
  /* missing, unknown, twice */
  refused (s, NULL, "{\"instances\": [{\"tag\": \"a\", \"signal\": [1, 2, 3, 4, 5]}]}", INVALID,
           "instances[0]: the input sensor is missing", "takes tag, signal, sensor");
  refused (s, NULL, "{\"inputs\": {\"tag\": [\"a\"], \"signal\": [[1, 2, 3, 4, 5]]}}", INVALID,
           "inputs: the input sensor is missing", NULL);
  refused (s, NULL, "{\"instances\": [{\"tag\": \"a\", \"bogus\": 1}]}", INVALID,
           "instances[0].bogus: not an input of the signature serving_default",
           "its inputs: tag, signal, sensor");
  refused (s, NULL, "{\"inputs\": {\"bogus\": [1]}}", INVALID, "inputs.bogus: not an input", NULL);
  refused (s, NULL, "{\"instances\": [{\"tag\": \"a\", \"tag\": \"b\"}]}", INVALID,
           "instances[0].tag: given twice", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [\"a\"], \"tag\": [\"b\"]}}", INVALID,
           "inputs.tag: given twice", NULL);
  /* widths, ragged lists, rows */
  refused (s, NULL, "{\"instances\": [{\"tag\": \"a\", \"signal\": [1, 2, 3, 4, 5], \"sensor\": "
           "[[1, 2], [3, 4]]}, {\"tag\": \"b\", \"signal\": [1, 2, 3, 4], \"sensor\": [[1, 2], "
           "[3, 4]]}]}", INVALID, "instances[1].signal: 4 values, the signature's width for "
           "signal is 5", NULL);
  refused (s, NULL, "{\"inputs\": {\"sensor\": [[[1, 2], [3]]]}}", INVALID,
           "inputs.sensor[0]: ragged nested lists (a list of 1 where another at the same depth "
           "has 2)", NULL);
  refused (s, NULL, "{\"inputs\": {\"sensor\": [[[1, 2], 3, 4]]}}", INVALID,
           "inputs.sensor[0]: ragged nested lists", NULL);
  refused (s, NULL, "{\"inputs\": {\"sensor\": [[1, [2, 3], 4]]}}", INVALID,
           "inputs.sensor[0]: ragged nested lists", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [\"a\", \"b\"], \"signal\": [[1, 2, 3, 4, 5]], "
           "\"sensor\": [[1, 2, 3, 4], [1, 2, 3, 4]]}}", INVALID,
           "inputs.signal: 1 rows, but the batch is 2", NULL);
  refused (s, NULL, "{\"inputs\": {\"sensor\": [[]]}}", INVALID, "inputs.sensor[0]: no values",
           NULL);
  /* types */
  refused (s, NULL, "{\"inputs\": {\"signal\": [[1, 2, \"3\", 4, 5]]}}", INVALID,
           "inputs.signal[0]: a string, but the input signal is a float32 array", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [1]}}", INVALID,
           "inputs.tag[0]: a number, but the input tag is a string array", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [[\"a\", \"b\"]]}}", INVALID,
           "inputs.tag[0]: 2 strings, but a string input holds one string per row", NULL);
  refused (s, NULL, "{\"inputs\": {\"signal\": [[1, 2, null, 4, 5]]}}", INVALID,
           "inputs.signal[0]: null is not a value", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [{\"b64\": \"a$==\"}]}}", INVALID,
           "inputs.tag[0].b64: not base64 text", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [{\"b64\": \"YQBi\"}]}}", INVALID, /* "a\0b" */
           "inputs.tag[0]: the value holds a NUL byte", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [{\"bytes\": \"YQ==\"}]}}", INVALID,
           "inputs.tag[0]: expected {\"b64\": \"BASE64\"}", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [{\"b64\": \"YQ==\", \"x\": 1}]}}", INVALID,
           "inputs.tag[0]: {\"b64\": …} holds one member", NULL);
  refused (s, NULL, "{\"inputs\": {\"tag\": [\"a\\u0000b\"]}}", INVALID,
           "inputs.tag[0]: the value holds a NUL byte", NULL);
}

static void
test_refused_limits (void)
{
  const char *in[] = {"x[2]", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, NULL, TRUE);
  const gint LIMIT = SEDP_PROTOCOL_ERROR_LIMIT;
  SedpProtocolLimits batch = {.max_items = 2}, depth = {.max_depth = 4}, values = {.max_values = 3},
                     strings = {.max_string_bytes = 4}, memory = {.max_decoded_bytes = 64},
                     features = {.max_features = 1};
  refused (s, &batch, "{\"instances\": [[1, 2], [3, 4], [5, 6]]}", LIMIT,
           "instances: more than the limit of 2 instances (max_items)", NULL);
  refused (s, &batch, "{\"inputs\": {\"x\": [[1, 2], [3, 4], [5, 6]]}}", LIMIT,
           "inputs.x[2]: more than the limit of 2 rows in a batch (max_items)", NULL);
  refused (s, &depth, "{\"inputs\": {\"x\": [[[[1, 2]]]]}}", LIMIT,
           "JSON nested deeper than the limit of 4 levels (max_depth)", NULL);
  GString *deep = g_string_new ("{\"inputs\": {\"x\": ");
  for (guint k = 0; k < 100000; k++) /* the default limit (64), far past it */
    g_string_append_c (deep, '[');
  refused (s, NULL, deep->str, LIMIT, "JSON nested deeper than the limit of 64 levels", NULL);
  g_string_free (deep, TRUE);
  refused (s, &values, "{\"inputs\": {\"v\": [[1, 2, 3, 4]]}}", LIMIT,
           "inputs.v[0]: more than the limit of 3 values in one row (max_values)", NULL);
  refused (s, &strings, "{\"inputs\": {\"q\": [\"hello\"]}}", LIMIT,
           "inputs.q[0]: a string of 5 bytes, more than the limit of 4 (max_string_bytes)", NULL);
  refused (s, &strings, "{\"inputs\": {\"q\": [{\"b64\": \"aGVsbG8=\"}]}}", LIMIT,
           "(max_string_bytes)", NULL);
  refused (s, &strings, "{\"inputs\": {\"query\": [\"a\"]}}", LIMIT,
           "inputs: an input name of 5 bytes", "(max_string_bytes)");
  refused (s, &memory, "{\"inputs\": {\"x\": [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [1, 2], "
           "[1, 2], [1, 2], [1, 2]]}}", LIMIT, "(max_decoded_bytes)", NULL);
  refused (s, &features, "{\"instances\": [{\"x\": [1, 2], \"a\": 1, \"b\": 2}]}", LIMIT,
           "instances[0].b: more than the limit of 1 inputs (max_features)", NULL);
  /* an open array may not take a column another fills */
  const char *renamed[] = {"a=b", NULL};
  g_autoptr (SedpModelApiSignature) s2 = make_signature (renamed, NULL, TRUE);
  refused (s2, NULL, "{\"instances\": [{\"a\": 1, \"b\": 2}]}", SEDP_PROTOCOL_ERROR_INVALID,
           "instances[0].b: its column is already filled by the input a", NULL);
}

/* Every prefix of a valid request is refused cleanly (never crashes, never accepted). */
static void
test_truncations (void)
{
  g_autoptr (SedpModelApiSignature) s = make_signature (doc_inputs, NULL, FALSE);
  const char *full = DOC_ROWS;
  for (gsize n = 0; n < strlen (full); n++) {
    SedpModelApiRequest r;
    g_autoptr (GError) error = NULL;
    CU_ASSERT_FALSE (sedp_model_api_decode (SEDP_MODEL_API_TFS_JSON, (const guint8 *) full, n, s,
                                            NULL, &r, &error));
    CU_ASSERT (error && g_str_has_prefix (error->message, "invalid request: "));
  }
}

/* ---- answers ---- */

/* Decodes @json, runs it through the passthrough pipeline, encodes the answer. */
static GBytes *
answer (const SedpModelApiSignature *s, const char *json, GError **error)
{
  SedpModelApiRequest r;
  decode_ok (s, json, &r);
  SedpRequest *done = run_items (passthrough_pipeline (), r.items);
  GBytes *body = sedp_model_api_encode_result (SEDP_MODEL_API_TFS_JSON, &r,
                                               sedp_request_get_result (done), s, error);
  sedp_request_unref (done);
  sedp_model_api_request_clear (&r);
  return body;
}

/* The documented example end to end: half_plus_three as an ONNX model behind the bare model's
 * pipeline, its signature from the model: {"instances": [1.0,2.0,5.0]} → {"predictions": [3.5,
 * 4.0, 5.5]}. */
static void
test_half_plus_three (void)
{
  g_autofree char *path = write_half_plus_three ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpModelApiSignature) s = sedp_model_api_signature_for_model (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  SedpPipeline *p = bare_model_pipeline (path);
  const char *requests[] = {"{\"instances\": [1.0,2.0,5.0]}", "{\"inputs\": [1.0,2.0,5.0]}"};
  const char *answers[] = {"{\"predictions\": [3.5, 4.0, 5.5]}", "{\"outputs\": [3.5, 4.0, 5.5]}"};
  for (guint k = 0; k < 2; k++) {
    SedpModelApiRequest r;
    decode_ok (s, requests[k], &r);
    SedpRequest *done = run_items (p, r.items);
    g_autoptr (GBytes) body = sedp_model_api_encode_result (SEDP_MODEL_API_TFS_JSON, &r,
                                                            sedp_request_get_result (done), s,
                                                            &error);
    assert_json (body, answers[k]);
    sedp_request_unref (done);
    sedp_model_api_request_clear (&r);
  }
  sedp_pipeline_free (p);
  g_unlink (path);
}

static void
test_answer_shapes (void)
{
  const char *in[] = {"a[2,2]", "n:int64", "w:string", NULL};
  const char *one[] = {"a[2,2]", NULL};
  const char *flat[] = {"flat=a[4]", NULL};
  const char *several[] = {"a[2,2]", "count=n:int64", "word=w:string", NULL};
  const char *req = "{\"instances\": [{\"a\": [[1, 2], [3, 4]], \"n\": 7, \"w\": \"x\\\"y\"}, "
                    "{\"a\": [[5, 6.5], [7, 8]], \"n\": -9007199254740993, \"w\": \"é\"}]}";
  const char *creq = "{\"inputs\": {\"a\": [[[1, 2], [3, 4]], [[5, 6.5], [7, 8]]], \"n\": [7, "
                     "-9007199254740993], \"w\": [\"x\\\"y\", \"é\"]}}";
  struct {
    const char *const *outputs;
    const char *request, *want;
  } cases[] = {
    {one, req, "{\"predictions\": [[[1, 2], [3, 4]], [[5, 6.5], [7, 8]]]}"},
    {flat, req, "{\"predictions\": [[1, 2, 3, 4], [5, 6.5, 7, 8]]}"},
    {several, req, "{\"predictions\": [{\"a\": [[1, 2], [3, 4]], \"count\": 7, \"word\": "
                   "\"x\\\"y\"}, {\"a\": [[5, 6.5], [7, 8]], \"count\": -9007199254740993, "
                   "\"word\": \"é\"}]}"},
    {one, creq, "{\"outputs\": [[[1, 2], [3, 4]], [[5, 6.5], [7, 8]]]}"},
    {several, creq, "{\"outputs\": {\"a\": [[[1, 2], [3, 4]], [[5, 6.5], [7, 8]]], \"count\": "
                    "[7, -9007199254740993], \"word\": [\"x\\\"y\", \"é\"]}}"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++) {
    g_autoptr (SedpModelApiSignature) s = make_signature (in, cases[k].outputs, FALSE);
    g_autoptr (GError) error = NULL;
    g_autoptr (GBytes) body = answer (s, cases[k].request, &error);
    if (error)
      fprintf (stderr, "\n  %s\n", error->message);
    assert_json (body, cases[k].want);
  }
}

/* Binary outputs (names ending in _bytes) as {"b64": …}; floats in the fewest digits that read
 * back the same float32; NaN and the infinities as TF Serving writes them. */
static void
test_answer_values (void)
{
  const char *in[] = {"w:string", "f", NULL};
  const char *outs[] = {"img_bytes=w:string", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, outs, FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = answer (s, "{\"instances\": [{\"w\": {\"b64\": \"aW1hZ2UgYnl0ZXM=\"}, "
                                       "\"f\": 1}]}", &error);
  assert_json (body, "{\"predictions\": [{\"b64\": \"aW1hZ2UgYnl0ZXM=\"}]}");
  const char *fouts[] = {"f", NULL};
  g_autoptr (SedpModelApiSignature) fs = make_signature (in, fouts, FALSE);
  g_autoptr (GBytes) floats = answer (fs, "{\"inputs\": {\"w\": [\"a\", \"b\", \"c\", \"d\"], \"f\": "
                                         "[0.1, 0.3333333333, 1e30, 16777217]}}", &error);
  gsize len;
  const char *text = g_bytes_get_data (floats, &len);
  g_autofree char *copy = g_strndup (text, len);
  CU_ASSERT_STRING_EQUAL (copy, "{\"outputs\":[0.1,0.33333334,1e+30,16777216]}");
  /* each reads back as the float32 it was */
  g_autoptr (JsonNode) tree = json_from_string (copy, NULL);
  JsonArray *a = json_object_get_array_member (json_node_get_object (tree), "outputs");
  const float want[] = {0.1f, 0.3333333333f, 1e30f, 16777217.0f};
  for (guint k = 0; k < 4; k++)
    CU_ASSERT ((float) json_array_get_double_element (a, k) == want[k]);
  /* NaN and infinities: a column written by hand, answered through the pipeline */
  g_autoptr (SedpFrame) items = sedp_frame_new (3);
  float *v = sedp_column_float32_data (sedp_frame_add_column (items, "f", SEDP_COLUMN_FLOAT32, 1));
  v[0] = NAN;
  v[1] = INFINITY;
  v[2] = -INFINITY;
  SedpModelApiRequest r = {.items = items, .n_rows = 3};
  SedpRequest *done = run_items (passthrough_pipeline (), items);
  g_autoptr (GBytes) special = sedp_model_api_encode_result (SEDP_MODEL_API_TFS_JSON, &r,
                                                             sedp_request_get_result (done), fs,
                                                             &error);
  sedp_request_unref (done);
  CU_ASSERT_PTR_NOT_NULL_FATAL (special);
  text = g_bytes_get_data (special, &len);
  CU_ASSERT (len == strlen ("{\"predictions\":[NaN,Infinity,-Infinity]}") &&
             memcmp (text, "{\"predictions\":[NaN,Infinity,-Infinity]}", len) == 0);
}

static void
test_answer_errors (void)
{
  const char *in[] = {"a[2]", NULL};
  const char *missing[] = {"p=score", NULL}, *wrong_type[] = {"a:int64[2]", NULL},
             *wrong_width[] = {"a[3]", NULL}, *none[] = {NULL};
  const char *req = "{\"instances\": [[1, 2]]}";
  struct {
    const char *const *outputs;
    const char *needle;
  } cases[] = {
    {missing, "output p: the pipeline's items have no column score"},
    {wrong_type, "output a: the column a is float32 with width 2, the signature declares int64 "
                 "with width 2"},
    {wrong_width, "output a: the column a is float32 with width 2, the signature declares "
                  "float32 with width 3"},
    {none, "the signature serving_default has no outputs"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++) {
    g_autoptr (SedpModelApiSignature) s = make_signature (in, cases[k].outputs, FALSE);
    g_autoptr (GError) error = NULL;
    g_autoptr (GBytes) body = answer (s, req, &error);
    CU_ASSERT_PTR_NULL (body);
    SEDP_ASSERT_ERROR (error, error->domain, cases[k].needle);
  }
  /* a column no answer can carry */
  g_autoptr (SedpFrame) items = sedp_frame_new (1);
  sedp_frame_add_column (items, "u", SEDP_COLUMN_UINT64, 1);
  const char *outs[] = {"u", NULL};
  g_autoptr (SedpModelApiSignature) s = make_signature (in, outs, FALSE);
  SedpModelApiRequest r = {.items = items, .n_rows = 1};
  SedpRequest *done = run_items (passthrough_pipeline (), items);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_model_api_encode_result (SEDP_MODEL_API_TFS_JSON, &r,
                                                    sedp_request_get_result (done), s, &error));
  SEDP_ASSERT_ERROR (error, G_IO_ERROR, "output u: the column u is uint64, which an answer cannot "
                     "carry");
  g_clear_error (&error);
  r.n_rows = 2; /* not the result's items */
  CU_ASSERT_PTR_NULL (sedp_model_api_encode_result (SEDP_MODEL_API_TFS_JSON, &r,
                                                    sedp_request_get_result (done), s, &error));
  SEDP_ASSERT_ERROR (error, G_IO_ERROR, "the result has 1 items, the request's batch 2 rows");
  sedp_request_unref (done);
}

/* {"error": …} and GetModelStatus as the page shows them. */
static void
test_error_and_status (void)
{
  g_autoptr (GBytes) e = sedp_model_api_encode_error (SEDP_MODEL_API_TFS_JSON,
                                                      "Servable not found for request: "
                                                      "Latest(half) \"q\"\n");
  assert_json (e, "{ \"error\": \"Servable not found for request: Latest(half) \\\"q\\\"\\n\" }");
  g_autoptr (GBytes) d = sedp_model_api_encode_error (SEDP_MODEL_API_DEEPREC, "bad input");
  CU_ASSERT (g_bytes_get_size (d) == 9 && memcmp (g_bytes_get_data (d, NULL), "bad input", 9) == 0);
  g_autoptr (GBytes) st = sedp_model_api_encode_status ("half_plus_three", 123, "AVAILABLE");
  assert_json (st, "{\n \"model_version_status\": [\n  {\n   \"version\": \"123\",\n   \"state\": "
                   "\"AVAILABLE\",\n   \"status\": {\n    \"error_code\": \"OK\",\n    "
                   "\"error_message\": \"\"\n   }\n  }\n ]\n}");
}

/* ---- signatures ---- */

static void
test_spec (void)
{
  g_autoptr (SedpModelApiSignature) s = sedp_model_api_signature_new (NULL);
  CU_ASSERT_STRING_EQUAL (s->name, "serving_default");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, FALSE, "dense=dense_features:float32[13]",
                                                     &error));
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, FALSE, " query:string ", &error));
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, FALSE, "ids:int64[2, 3]", &error));
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, FALSE, "plain", &error));
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, TRUE, "prob=score[1]", &error));
  CU_ASSERT_TRUE (sedp_model_api_signature_add_spec (s, TRUE, "scalar[]", &error));
  CU_ASSERT_EQUAL_FATAL (s->inputs->len, 4);
  CU_ASSERT_EQUAL_FATAL (s->outputs->len, 2);
  const SedpModelApiTensor *t = &g_array_index (s->inputs, SedpModelApiTensor, 0);
  CU_ASSERT (strcmp (t->name, "dense") == 0 && strcmp (t->column, "dense_features") == 0 &&
             t->type == SEDP_COLUMN_FLOAT32 && t->width == 13 && t->n_dims == 1 &&
             t->dims[0] == 13);
  t = &g_array_index (s->inputs, SedpModelApiTensor, 1);
  CU_ASSERT (strcmp (t->name, "query") == 0 && strcmp (t->column, "query") == 0 &&
             t->type == SEDP_COLUMN_STRING && t->width == 1 && t->n_dims == 0 && !t->dims);
  t = &g_array_index (s->inputs, SedpModelApiTensor, 2);
  CU_ASSERT (t->type == SEDP_COLUMN_INT64 && t->width == 6 && t->n_dims == 2 && t->dims[0] == 2 &&
             t->dims[1] == 3);
  t = &g_array_index (s->inputs, SedpModelApiTensor, 3);
  CU_ASSERT (t->type == SEDP_COLUMN_FLOAT32 && t->width == 1 && t->n_dims == 0);
  t = &g_array_index (s->outputs, SedpModelApiTensor, 0);
  CU_ASSERT (strcmp (t->name, "prob") == 0 && strcmp (t->column, "score") == 0 && t->width == 1 &&
             t->n_dims == 1 && t->dims[0] == 1);
  t = &g_array_index (s->outputs, SedpModelApiTensor, 1);
  CU_ASSERT (t->width == 1 && t->n_dims == 0);
  struct {
    gboolean output;
    const char *spec, *needle;
  } bad[] = {
    {FALSE, "", "an empty array name"},
    {FALSE, "=col", "an empty array name"},
    {FALSE, "a=", "an empty column name"},
    {FALSE, "a b", "the array name 'a b' holds ' '"},
    {FALSE, "a:float64", "unknown type 'float64' (float32, int64 or string)"},
    {FALSE, "a[0]", "the dimension '0' is not a positive integer"},
    {FALSE, "a[-1]", "the dimension '-1' is not a positive integer"},
    {FALSE, "a[x]", "the dimension 'x' is not a positive integer"},
    {FALSE, "a[2,]", "the dimension '' is not a positive integer"},
    {FALSE, "a[2", "the dimensions must end the entry"},
    {FALSE, "a[2]:int64", "the dimensions must end the entry"},
    {FALSE, "a[65536,65536]", "the dimensions make more than 2147483647 values per row"},
    {FALSE, "s:string[3]", "a string array holds one string per row, not 3"},
    {FALSE, "dense", "the array dense is named twice"},
    {FALSE, "other=query", "the column query is filled twice (by query too)"},
    {TRUE, "prob=other", "the array prob is named twice"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (bad); k++) {
    g_autoptr (GError) e = NULL;
    CU_ASSERT_FALSE (sedp_model_api_signature_add_spec (s, bad[k].output, bad[k].spec, &e));
    SEDP_ASSERT_ERROR (e, SEDP_PROTOCOL_ERROR, bad[k].needle, "signature entry '", "the syntax: ");
  }
  CU_ASSERT_EQUAL (s->inputs->len, 4);
  CU_ASSERT_EQUAL (s->outputs->len, 2);
}

static void
test_for_model (void)
{
  g_autofree char *path = write_half_plus_three ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpModelApiSignature) s = sedp_model_api_signature_for_model (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  CU_ASSERT_STRING_EQUAL (s->name, "serving_default");
  CU_ASSERT_FALSE (s->open_inputs);
  CU_ASSERT_EQUAL_FATAL (s->inputs->len, 1);
  CU_ASSERT_EQUAL_FATAL (s->outputs->len, 1);
  const SedpModelApiTensor *x = &g_array_index (s->inputs, SedpModelApiTensor, 0);
  CU_ASSERT (strcmp (x->name, "x") == 0 && strcmp (x->column, "x") == 0 &&
             x->type == SEDP_COLUMN_FLOAT32 && x->width == 1 && x->n_dims == 0);
  const SedpModelApiTensor *y = &g_array_index (s->outputs, SedpModelApiTensor, 0);
  CU_ASSERT (strcmp (y->name, "y") == 0 && y->width == 1 && y->n_dims == 0);
  g_unlink (path);
  /* [batch, 3] float, [batch, 2, 2] int64 in; [batch, 1] and [batch, ?] out */
  g_autoptr (SedpNnModel) m = sedp_nn_model_new (17, "sedp-tests");
  gint64 d3[] = {-1, 3}, d22[] = {-1, 2, 2}, d1[] = {-1, 1}, dq[] = {-1, -1};
  sedp_nn_model_add_input (m, "dense", SEDP_NN_FLOAT, 2, d3, NULL);
  sedp_nn_model_add_input (m, "ids", SEDP_NN_INT64, 3, d22, NULL);
  sedp_nn_model_add_output (m, "p", SEDP_NN_FLOAT, 2, d1, NULL);
  sedp_nn_model_add_output (m, "q", SEDP_NN_FLOAT, 2, dq, NULL);
  const char *ins[] = {"dense", NULL}, *o1[] = {"p", NULL}, *o2[] = {"q", NULL};
  sedp_nn_model_add_node (m, "Identity", NULL, ins, o1);
  sedp_nn_model_add_node (m, "Identity", NULL, ins, o2);
  g_autofree char *path2 = NULL;
  int fd = g_file_open_tmp ("sedp-compat-XXXXXX.onnx", &path2, NULL);
  close (fd);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path2, &error));
  g_autoptr (SedpModelApiSignature) s2 = sedp_model_api_signature_for_model (path2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s2);
  const SedpModelApiTensor *dense = &g_array_index (s2->inputs, SedpModelApiTensor, 0);
  const SedpModelApiTensor *ids = &g_array_index (s2->inputs, SedpModelApiTensor, 1);
  const SedpModelApiTensor *p = &g_array_index (s2->outputs, SedpModelApiTensor, 0);
  const SedpModelApiTensor *q = &g_array_index (s2->outputs, SedpModelApiTensor, 1);
  CU_ASSERT (dense->type == SEDP_COLUMN_FLOAT32 && dense->width == 3 && dense->n_dims == 1 &&
             dense->dims[0] == 3);
  CU_ASSERT (ids->type == SEDP_COLUMN_INT64 && ids->width == 4 && ids->n_dims == 2 &&
             ids->dims[0] == 2 && ids->dims[1] == 2);
  CU_ASSERT (p->width == 1 && p->n_dims == 1 && p->dims[0] == 1);
  CU_ASSERT (q->width == 0 && q->n_dims == 0);
  g_unlink (path2);
  /* the loader's error */
  CU_ASSERT_PTR_NULL (sedp_model_api_signature_for_model ("/nonexistent/model.onnx", &error));
  CU_ASSERT_PTR_NOT_NULL (error);
}

int
main (void)
{
  CU_initialize_registry ();
  CU_pSuite suite = CU_add_suite ("tfs", NULL, compat_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_row_bare_strings);
  T (test_row_bare_nested);
  T (test_row_named);
  T (test_columnar_named);
  T (test_bare_scalars);
  T (test_b64);
  T (test_int64);
  T (test_open);
  T (test_refused_structure);
  T (test_refused_inputs);
  T (test_refused_limits);
  T (test_truncations);
  T (test_half_plus_three);
  T (test_answer_shapes);
  T (test_answer_values);
  T (test_answer_errors);
  T (test_error_and_status);
  T (test_spec);
  T (test_for_model);
  return sedp_test_run ();
}
