/* sedp serving tests — the PredictRequest/PredictResponse codecs and the data_reader stage. */
#include "../runtime/runtime-helpers.h"

#include "io/protocol.h"
#include "sedp.pb-c.h"

#include <json-glib/json-glib.h>
#include <math.h>

/* A protobuf request: user 7 (age, hist, emb) and @n items (id 100+i, ctr, cat, tags, escore). */
static GBytes *
make_protobuf (const char *id, guint n, guint64 first_id)
{
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  Sedp__Serving__User user = SEDP__SERVING__USER__INIT;
  m.request_id = (char *) id;
  m.deadline_ms = 500;
  m.top_k = 2;
  m.user = &user;
  user.id = 7;
  Sedp__Serving__Feature age = SEDP__SERVING__FEATURE__INIT, hist = SEDP__SERVING__FEATURE__INIT,
                         emb = SEDP__SERVING__FEATURE__INIT;
  age.value_case = SEDP__SERVING__FEATURE__VALUE_INT_VALUE;
  age.int_value = 30;
  guint64 hist_ids[] = {1, 2, G_MAXUINT64};
  Sedp__Serving__IdList hl = SEDP__SERVING__ID_LIST__INIT;
  hl.n_ids = 3;
  hl.ids = hist_ids;
  hist.value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
  hist.ids = &hl;
  float emb_v[] = {0.5f, 1.5f};
  Sedp__Serving__FloatList el = SEDP__SERVING__FLOAT_LIST__INIT;
  el.n_values = 2;
  el.values = emb_v;
  emb.value_case = SEDP__SERVING__FEATURE__VALUE_FLOATS;
  emb.floats = &el;
  Sedp__Serving__User__FeaturesEntry ue[3];
  Sedp__Serving__User__FeaturesEntry *uep[3];
  const char *un[] = {"age", "hist", "emb"};
  Sedp__Serving__Feature *uf[] = {&age, &hist, &emb};
  for (guint k = 0; k < 3; k++) {
    sedp__serving__user__features_entry__init (&ue[k]);
    ue[k].key = (char *) un[k];
    ue[k].value = uf[k];
    uep[k] = &ue[k];
  }
  user.n_features = 3;
  user.features = uep;
  g_autofree Sedp__Serving__Item *items = g_new0 (Sedp__Serving__Item, MAX (n, 1));
  g_autofree Sedp__Serving__Item **itemp = g_new0 (Sedp__Serving__Item *, MAX (n, 1));
  g_autofree Sedp__Serving__Feature *f = g_new0 (Sedp__Serving__Feature, 2 * MAX (n, 1));
  g_autofree Sedp__Serving__Item__FeaturesEntry *fe = g_new0 (Sedp__Serving__Item__FeaturesEntry, 2 * MAX (n, 1));
  g_autofree Sedp__Serving__Item__FeaturesEntry **fep = g_new0 (Sedp__Serving__Item__FeaturesEntry *, 2 * MAX (n, 1));
  g_autofree char **cats = g_new0 (char *, MAX (n, 1) + 1);
  for (guint i = 0; i < n; i++) {
    sedp__serving__item__init (&items[i]);
    itemp[i] = &items[i];
    items[i].id = first_id + i;
    items[i].escore_present_case = SEDP__SERVING__ITEM__ESCORE_PRESENT_ESCORE;
    items[i].escore = 0.25f * (float) i;
    sedp__serving__feature__init (&f[2 * i]);
    f[2 * i].value_case = SEDP__SERVING__FEATURE__VALUE_FLOAT_VALUE;
    f[2 * i].float_value = 0.125f * (float) i;
    sedp__serving__feature__init (&f[2 * i + 1]);
    f[2 * i + 1].value_case = SEDP__SERVING__FEATURE__VALUE_STRING_VALUE;
    cats[i] = g_strdup_printf ("cat%u", i);
    f[2 * i + 1].string_value = cats[i];
    for (guint k = 0; k < 2; k++) {
      sedp__serving__item__features_entry__init (&fe[2 * i + k]);
      fe[2 * i + k].key = (char *) (k == 0 ? "ctr" : "cat");
      fe[2 * i + k].value = &f[2 * i + k];
      fep[2 * i + k] = &fe[2 * i + k];
    }
    items[i].n_features = 2;
    items[i].features = &fep[2 * i];
  }
  m.n_items = n;
  m.items = itemp;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  guint8 *buf = g_malloc (MAX (len, 1));
  sedp__serving__predict_request__pack (&m, buf);
  for (guint i = 0; i < n; i++)
    g_free (cats[i]);
  return g_bytes_new_take (buf, len);
}

static const char *json_request =
    "{\"request_id\": \"j1\", \"deadline_ms\": 500, \"top_k\": 2,"
    " \"user\": {\"id\": 7, \"features\": {\"age\": {\"int_value\": 30},"
    "   \"hist\": {\"ids\": [1, 2, \"18446744073709551615\"]}, \"emb\": {\"floats\": [0.5, 1.5]}}},"
    " \"items\": [{\"id\": 100, \"escore\": 0, \"features\": {\"ctr\": {\"float_value\": 0}, \"cat\": \"cat0\"}},"
    "            {\"id\": 101, \"escore\": 0.25, \"features\": {\"ctr\": 0.125, \"cat\": {\"string_value\": \"cat1\"}}},"
    "            {\"id\": \"102\", \"escore\": 0.5, \"features\": {\"ctr\": {\"float_value\": 0.25}, \"cat\": \"cat2\"}}]}";

/* The frames every encoding of the sample request decodes to. */
static void
check_sample (const SedpProtocolRequest *req, SedpFrame *rf, const char *id)
{
  CU_ASSERT_STRING_EQUAL (req->request_id, id);
  CU_ASSERT_EQUAL (req->deadline_ms, 500);
  CU_ASSERT_EQUAL (req->top_k, 2);
  CU_ASSERT_EQUAL (int_at (rf, "user_id", 0), 7);
  CU_ASSERT_EQUAL (int_at (rf, "age", 0), 30);
  const SedpColumn *hist = sedp_frame_get_column (rf, "hist");
  CU_ASSERT_PTR_NOT_NULL_FATAL (hist);
  CU_ASSERT_EQUAL (sedp_column_get_column_type (hist), SEDP_COLUMN_IDLIST);
  guint n = 0;
  const guint64 *ids = sedp_column_get_ids (hist, 0, &n);
  CU_ASSERT_EQUAL_FATAL (n, 3);
  CU_ASSERT (ids[0] == 1 && ids[1] == 2 && ids[2] == G_MAXUINT64);
  const SedpColumn *emb = sedp_frame_get_column (rf, "emb");
  CU_ASSERT_PTR_NOT_NULL_FATAL (emb);
  CU_ASSERT_EQUAL (sedp_column_get_column_type (emb), SEDP_COLUMN_FLOAT32);
  CU_ASSERT_EQUAL (sedp_column_get_width (emb), 2);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (emb)[1], 1.5f);
  SedpFrame *it = req->items;
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (it), 3);
  const SedpColumn *ctr = sedp_frame_get_column (it, "ctr"), *cat = sedp_frame_get_column (it, "cat"),
                   *es = sedp_frame_get_column (it, "escore");
  CU_ASSERT_FATAL (ctr && cat && es);
  CU_ASSERT_EQUAL (sedp_column_get_column_type (ctr), SEDP_COLUMN_FLOAT32);
  CU_ASSERT_EQUAL (sedp_column_get_column_type (cat), SEDP_COLUMN_STRING);
  CU_ASSERT_EQUAL (sedp_column_get_column_type (es), SEDP_COLUMN_FLOAT32);
  for (guint i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL (int_at (it, "item_id", i), 100 + i);
    CU_ASSERT_EQUAL (sedp_column_get_float32 (ctr)[i], 0.125f * (float) i);
    CU_ASSERT_EQUAL (sedp_column_get_float32 (es)[i], 0.25f * (float) i);
    g_autofree char *want = g_strdup_printf ("cat%u", i);
    CU_ASSERT_STRING_EQUAL (sedp_column_get_string (cat, i), want);
  }
}

static void
test_protobuf_decode (void)
{
  g_autoptr (GBytes) pb = make_protobuf ("p1", 3, 100);
  g_autoptr (SedpFrame) rf = sedp_frame_new (1);
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  gsize size;
  const guint8 *data = g_bytes_get_data (pb, &size);
  CU_ASSERT_TRUE_FATAL (sedp_protocol_decode_request (data, size, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF,
                                                      SEDP_PROTOCOL_AUTO, 0, rf, &req, &error));
  check_sample (&req, rf, "p1");
  sedp_protocol_request_clear (&req);
}

static void
test_json_decode (void)
{
  g_autoptr (SedpFrame) rf = sedp_frame_new (1);
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_protocol_decode_request ((const guint8 *) json_request, strlen (json_request),
                                              "application/json; charset=utf-8", SEDP_PROTOCOL_AUTO,
                                              0, rf, &req, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  check_sample (&req, rf, "j1");
  sedp_protocol_request_clear (&req);
}

static const char *serve_pipeline =
    "[pipeline]\nname = serve\ndeadline_ms = 60000\nframe_rows = 2\n"
    "[stage reader]\nplugin = data_reader\nmax_items = 50\n"
    "[stage score]\nplugin = synthetic_work\nafter = reader\noutput = score\n";

static SedpRequest *
serve (SedpPipeline *p, const char *id, GBytes *payload, const char *content_type)
{
  Collector c;
  collector_init (&c);
  SedpRequest *r = sedp_request_new (id, 0);
  sedp_request_set_payload (r, payload, content_type);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (collector_wait (&c, 1, 30), 1);
  collector_clear (&c);
  return r;
}

static void
check_served (SedpRequest *r, guint n, guint64 first_id)
{
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_PTR_NOT_NULL_FATAL (res);
  if (sedp_result_get_message (res))
    fprintf (stderr, "\n  %s\n", sedp_result_get_message (res));
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_n_items (res), n);
  for (guint i = 0; i < n; i++) {
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), SEDP_ITEM_SCORED);
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    CU_ASSERT_PTR_NOT_NULL_FATAL (f);
    CU_ASSERT_EQUAL (int_at (f, "item_id", row), (gint64) (first_id + i));
    CU_ASSERT_PTR_NOT_NULL (sedp_frame_get_column (f, "score"));
  }
}

static void
test_pipeline_payloads (void)
{
  SedpPipeline *p = start_pipeline (serve_pipeline);
  g_autoptr (GBytes) pb = make_protobuf ("p1", 5, 100);
  SedpRequest *r1 = serve (p, "p1", pb, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
  check_served (r1, 5, 100);
  CU_ASSERT_EQUAL (sedp_request_get_top_k (r1), 2);
  g_autoptr (GBytes) js = g_bytes_new_static (json_request, strlen (json_request));
  SedpRequest *r2 = serve (p, "j1", js, NULL); /* sniffed */
  check_served (r2, 3, 100);

  /* The protobuf response: ids, one score per item, top 2 by score. */
  const char *outputs[] = {"score", NULL};
  g_autoptr (GBytes) out = sedp_protocol_encode_response (r1, outputs, "model-v1", 2, SEDP_PROTOCOL_PROTOBUF);
  gsize size;
  const guint8 *data = g_bytes_get_data (out, &size);
  Sedp__Serving__PredictResponse *m = sedp__serving__predict_response__unpack (NULL, size, data);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_STRING_EQUAL (m->request_id, "p1");
  CU_ASSERT_STRING_EQUAL (m->model_version, "model-v1");
  CU_ASSERT_EQUAL (m->status, SEDP__SERVING__PREDICT_RESPONSE__STATUS__OK);
  CU_ASSERT_EQUAL_FATAL (m->n_items, 5);
  for (guint i = 0; i < 5; i++) {
    CU_ASSERT_EQUAL (m->items[i]->id, 100 + i);
    CU_ASSERT_EQUAL (m->items[i]->n_scores, 1);
    CU_ASSERT_EQUAL (m->items[i]->status, SEDP__SERVING__ITEM_RESULT__STATUS__SCORED);
  }
  CU_ASSERT_EQUAL_FATAL (m->n_top_k, 2);
  CU_ASSERT (m->items[m->top_k[0]]->scores[0] >= m->items[m->top_k[1]]->scores[0]);
  for (guint i = 0; i < 5; i++)
    CU_ASSERT (m->items[i]->scores[0] <= m->items[m->top_k[1]]->scores[0] || i == m->top_k[0] ||
               i == m->top_k[1]);
  float score0 = m->items[0]->scores[0];
  sedp__serving__predict_response__free_unpacked (m, NULL);

  /* The same response as JSON. */
  g_autoptr (GBytes) jout = sedp_protocol_encode_response (r1, outputs, "model-v1", 2, SEDP_PROTOCOL_JSON);
  g_autoptr (JsonParser) parser = json_parser_new ();
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_data (parser, g_bytes_get_data (jout, NULL),
                                                    (gssize) g_bytes_get_size (jout), NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "status"), "OK");
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "model_version"), "model-v1");
  JsonArray *items = json_object_get_array_member (o, "items");
  CU_ASSERT_EQUAL_FATAL (json_array_get_length (items), 5);
  JsonObject *i0 = json_array_get_object_element (items, 0);
  CU_ASSERT_EQUAL (json_object_get_int_member (i0, "id"), 100);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (i0, "status"), "SCORED");
  CU_ASSERT (fabs (json_array_get_double_element (json_object_get_array_member (i0, "scores"), 0) - score0) < 1e-6);
  CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (o, "top_k")), 2);
  sedp_request_unref (r1);
  sedp_request_unref (r2);
  sedp_pipeline_free (p);
}

/* A request frame submitted decoded (no payload) passes through data_reader. */
static void
test_pipeline_passthrough (void)
{
  SedpPipeline *p = start_pipeline (serve_pipeline);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (submit_numbered (p, &c, 3, NULL, 4), 3);
  CU_ASSERT_EQUAL (collector_wait (&c, 3, 30), 3);
  for (guint i = 0; i < c.done->len; i++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[i]);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    CU_ASSERT_EQUAL (sedp_result_get_n_items (res), 4);
  }
  collector_clear (&c);
  sedp_pipeline_free (p);
}

typedef struct {
  const char *name;
  const char *payload; /* NULL: a truncated protobuf */
  const char *content_type;
  const char *needle;
} Bad;

static const Bad corpus[] = {
  {"truncated protobuf", NULL, "application/x-protobuf", "not a valid protobuf PredictRequest"},
  {"invalid JSON", "{\"items\": [", "application/json", "invalid JSON"},
  {"not an object", "[1, 2]", "application/json", "must be a JSON object"},
  {"unknown field", "{\"items\": [{\"id\": 1}], \"colour\": 1}", NULL, "colour: unknown field"},
  {"unknown item field", "{\"items\": [{\"id\": 1, \"score\": 1}]}", NULL, "items[0].score: unknown field"},
  {"zero items", "{\"items\": []}", NULL, "items: a request needs at least one item"},
  {"no items", "{\"user\": {\"id\": 1}}", NULL, "items: expected an array"},
  {"wrong types across items",
   "{\"items\": [{\"id\": 1, \"features\": {\"x\": 1}}, {\"id\": 2, \"features\": {\"x\": \"a\"}}]}",
   NULL, "items[1].x: a string, but items[0] has an integer"},
  {"wrong oneof type", "{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"int_value\": \"a\"}}}]}", NULL,
   "items[0].features.x.int_value: expected an integer"},
  {"negative id", "{\"items\": [{\"id\": -3}]}", NULL, "items[0].id: -3 is negative"},
  {"huge id", "{\"items\": [{\"id\": 1}, {\"id\": \"18446744073709551615\"}]}", NULL,
   "items[1].id: 18446744073709551615 does not fit the int64 column item_id"},
  {"id too large for uint64", "{\"items\": [{\"id\": 1e30}]}", NULL, "items[0].id: expected an unsigned"},
  {"negative user id", "{\"user\": {\"id\": -1}, \"items\": [{\"id\": 1}]}", NULL, "user.id: -1 is negative"},
  {"negative ids in a list", "{\"items\": [{\"id\": 1, \"features\": {\"t\": [1, -2]}}]}", NULL,
   "items[0].features.t[1]: -2 is negative"},
  {"negative deadline", "{\"deadline_ms\": -5, \"items\": [{\"id\": 1}]}", NULL, "deadline_ms: -5 is negative"},
  {"huge deadline", "{\"deadline_ms\": 86400000, \"items\": [{\"id\": 1}]}", NULL, "deadline_ms: 86400000 is more than"},
  {"wrong content type", "{\"items\": [{\"id\": 1}]}", "text/plain", "content type 'text/plain'"},
  {"bad escore", "{\"items\": [{\"id\": 1, \"escore\": \"high\"}]}", NULL, "items[0].escore: expected a number"},
};

static GBytes *
bad_payload (const Bad *b)
{
  if (b->payload)
    return g_bytes_new_static (b->payload, strlen (b->payload));
  g_autoptr (GBytes) pb = make_protobuf ("t", 3, 100);
  return g_bytes_new_from_bytes (pb, 0, g_bytes_get_size (pb) - 7);
}

static void
test_malformed_decode (void)
{
  for (guint k = 0; k < G_N_ELEMENTS (corpus); k++) {
    g_autoptr (GBytes) payload = bad_payload (&corpus[k]);
    SedpProtocolRequest req;
    g_autoptr (GError) error = NULL;
    gsize size;
    const guint8 *data = g_bytes_get_data (payload, &size);
    g_autoptr (SedpFrame) rf = sedp_frame_new (1);
    CU_ASSERT_FALSE (sedp_protocol_decode_request (data, size, corpus[k].content_type,
                                                   SEDP_PROTOCOL_AUTO, 0, rf, &req, &error));
    if (error == NULL)
      fprintf (stderr, "\n  %s: no error\n", corpus[k].name);
    SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, "invalid request: ", corpus[k].needle);
    CU_ASSERT_PTR_NULL (req.items);
  }
}

/* Too many items: over the stage's max_items (50) and over the default limit (10000). */
static void
test_too_many_items (void)
{
  g_autoptr (GBytes) pb = make_protobuf ("big", 10001, 1);
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  gsize size;
  const guint8 *data = g_bytes_get_data (pb, &size);
  CU_ASSERT_FALSE (sedp_protocol_decode_request (data, size, NULL, SEDP_PROTOCOL_PROTOBUF, 0, NULL,
                                                 &req, &error));
  SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, "items: 10001 items, more than the limit of 10000");
  g_clear_error (&error);
  CU_ASSERT_TRUE (sedp_protocol_decode_request (data, size, NULL, SEDP_PROTOCOL_PROTOBUF, 20000,
                                                NULL, &req, &error));
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (req.items), 10001);
  sedp_protocol_request_clear (&req);

  SedpPipeline *p = start_pipeline (serve_pipeline);
  g_autoptr (GBytes) pb51 = make_protobuf ("p51", 51, 1);
  SedpRequest *r = serve (p, "p51", pb51, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
  CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "more than the limit of 50"));
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

/* Each malformed payload fails its request with the field named; the next one is served. */
static void
test_malformed_pipeline (void)
{
  SedpPipeline *p = start_pipeline (serve_pipeline);
  g_autoptr (GBytes) good = make_protobuf ("ok", 3, 100);
  for (guint k = 0; k < G_N_ELEMENTS (corpus); k++) {
    g_autoptr (GBytes) payload = bad_payload (&corpus[k]);
    SedpRequest *r = serve (p, corpus[k].name, payload, corpus[k].content_type);
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_PTR_NOT_NULL_FATAL (res);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
    const char *msg = sedp_result_get_message (res);
    CU_ASSERT_PTR_NOT_NULL_FATAL (msg);
    if (strstr (msg, corpus[k].needle) == NULL)
      fprintf (stderr, "\n  %s: '%s' lacks '%s'\n", corpus[k].name, msg, corpus[k].needle);
    CU_ASSERT_PTR_NOT_NULL (strstr (msg, corpus[k].needle));
    g_autoptr (GBytes) out = sedp_protocol_encode_response (r, NULL, NULL, 0, SEDP_PROTOCOL_PROTOBUF);
    Sedp__Serving__PredictResponse *m = sedp__serving__predict_response__unpack (
        NULL, g_bytes_get_size (out), g_bytes_get_data (out, NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL (m);
    CU_ASSERT_EQUAL (m->status, SEDP__SERVING__PREDICT_RESPONSE__STATUS__INVALID);
    sedp__serving__predict_response__free_unpacked (m, NULL);
    sedp_request_unref (r);
    SedpRequest *ok = serve (p, "ok", good, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
    check_served (ok, 3, 100);
    sedp_request_unref (ok);
  }
  sedp_pipeline_free (p);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("serving", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_protobuf_decode);
  T (test_json_decode);
  T (test_pipeline_payloads);
  T (test_pipeline_passthrough);
  T (test_malformed_decode);
  T (test_too_many_items);
  T (test_malformed_pipeline);
  int rc = sedp_test_run ();
  if (test_registry)
    sedp_registry_free (test_registry);
  return rc;
}
