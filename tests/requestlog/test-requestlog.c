/* sedp tests — request files of `sedp run`: the JSON Lines reader's column typing across items,
 * protobuf request logs (length-delimited PredictRequests), format detection, replay through
 * data_reader, and corrupt logs. */
#include "../runtime/runtime-helpers.h"
#include "test-spawn.h"

#include "io/protocol.h"
#include "io/request-file.h"
#include "io/request-log.h"
#include "runtime/runtime-private.h"
#include "sedp.pb-c.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

/* ---- JSON Lines typing: an array feature has one kind and, as a vector, one width ---------- */

/* @items (a JSON array of item objects) must be refused with a message containing @needle. */
static void
json_refused (const char *items, const char *needle)
{
  g_autofree char *text = g_strdup_printf ("{\"id\": \"x\", \"items\": %s}", items);
  g_autoptr (GError) error = NULL;
  SedpRequest *r = sedp_request_from_json (text, -1, "t.jsonl:1", &error);
  CU_ASSERT_PTR_NULL (r);
  if (r)
    sedp_request_unref (r);
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "t.jsonl:1: ", needle);
}

static void
test_json_ragged_ids_then_vector (void)
{
  /* Before the fix: a vector column of width 3 read items[1]'s one-element array past its end. */
  json_refused ("[{\"x\": [1, 2, 3]}, {\"x\": [1]}, {\"x\": [0.5, 1.5, 2.5]}]",
                "items[2].x: an array of numbers of length 3, but items[1] has an array of "
                "integers of length 1");
  json_refused ("[{\"x\": [1, 2, 3]}, {\"x\": [1, 2, 3, 4, 5]}, {\"x\": [0.5, 1.5, 2.5]}]",
                "items[2].x: an array of numbers of length 3, but items[1] has an array of "
                "integers of length 5");
  json_refused ("[{\"x\": [1, 2, 3]}, {\"x\": []}, {\"x\": [0.5, 1.5, 2.5]}]",
                "items[2].x: an array of numbers of length 3, but items[1] has an array of "
                "integers of length 0");
}

static void
test_json_ids_then_longer_vector (void)
{
  json_refused ("[{\"x\": [1, 2]}, {\"x\": [0.5, 1.5, 2.5]}]",
                "items[1].x: an array of numbers of length 3, but items[0] has an array of "
                "integers of length 2");
  json_refused ("[{\"x\": [1, 2, 3]}, {\"x\": [0.5]}]",
                "items[1].x: an array of numbers of length 1, but items[0] has an array of "
                "integers of length 3");
}

static void
test_json_vector_then_other_lengths (void)
{
  json_refused ("[{\"x\": [0.5, 1.5]}, {\"x\": [1, 2, 3]}]",
                "items[1].x: an array of integers of length 3, but items[0] has an array of "
                "numbers of length 2");
  json_refused ("[{\"x\": [1, 2]}, {\"x\": [1, 2]}, {\"x\": [0.5, 1.5]}, {\"x\": [3]}]",
                "items[3].x: an array of integers of length 1, but items[2] has an array of "
                "numbers of length 2");
  json_refused ("[{\"x\": [0.5, 1.5]}, {\"x\": [0.5]}]",
                "items[1].x: an array of numbers of length 1, but items[0] has an array of "
                "numbers of length 2");
  json_refused ("[{\"x\": [0.5, 1.5]}, {\"x\": 2}]",
                "items[1].x: an integer, but items[0] has an array of numbers of length 2");
  json_refused ("[{\"x\": 0.5}, {\"x\": [1, 2]}]",
                "items[1].x: an array of integers, but items[0] has a number");
}

/* Arrays that do type: ragged id lists; integer arrays among vectors of their length. */
static void
test_json_arrays_that_type (void)
{
  const char *text = "{\"id\": \"x\", \"items\": [{\"ids\": [1, 2], \"v\": [1, 2]},"
                     " {\"ids\": [3, 4, 5], \"v\": [0.5, 1.5]}, {\"ids\": [], \"v\": null},"
                     " {\"v\": [3, 4]}]}";
  g_autoptr (GError) error = NULL;
  SedpRequest *r = sedp_request_from_json (text, -1, "t.jsonl:1", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  const SedpFrame *items = r->items; /* the frame the reader made */
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (items), 4);
  const SedpColumn *ids = sedp_frame_get_column (items, "ids");
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (ids), SEDP_COLUMN_IDLIST);
  guint n = 0;
  const guint64 *v = sedp_column_get_ids (ids, 1, &n);
  CU_ASSERT_EQUAL (n, 3);
  CU_ASSERT_EQUAL (v[2], 5);
  sedp_column_get_ids (ids, 2, &n);
  CU_ASSERT_EQUAL (n, 0);
  const SedpColumn *vec = sedp_frame_get_column (items, "v");
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (vec), SEDP_COLUMN_FLOAT32);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_width (vec), 2);
  const float *f = sedp_column_get_float32 (vec);
  const float expected[] = {1, 2, 0.5f, 1.5f, 0, 0, 3, 4};
  for (guint k = 0; k < G_N_ELEMENTS (expected); k++)
    CU_ASSERT_EQUAL (f[k], expected[k]);
  sedp_request_unref (r);
}

/* The serving decoder shares the rule (JSON and protobuf payloads). */
static void
test_protocol_ragged_ids_then_vector (void)
{
  const char *json = "{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"ids\": [1, 2, 3]}}},"
                     " {\"id\": 2, \"features\": {\"x\": {\"ids\": [1]}}},"
                     " {\"id\": 3, \"features\": {\"x\": {\"floats\": [0.5, 1.5, 2.5]}}}]}";
  SedpProtocolRequest out = {0};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_protocol_decode_request ((const guint8 *) json, strlen (json), NULL,
                                                 SEDP_PROTOCOL_JSON, 0, NULL, &out, &error));
  SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, "items[2].x: an array of numbers of length 3",
                     "items[1] has an array of integers of length 1");
  sedp_protocol_request_clear (&out);

  /* The same request in protobuf. */
  guint64 ids3[] = {1, 2, 3}, ids1[] = {1};
  float floats[] = {0.5f, 1.5f, 2.5f};
  Sedp__Serving__IdList l3 = SEDP__SERVING__ID_LIST__INIT, l1 = SEDP__SERVING__ID_LIST__INIT;
  l3.n_ids = 3;
  l3.ids = ids3;
  l1.n_ids = 1;
  l1.ids = ids1;
  Sedp__Serving__FloatList fl = SEDP__SERVING__FLOAT_LIST__INIT;
  fl.n_values = 3;
  fl.values = floats;
  Sedp__Serving__Feature fx[3];
  Sedp__Serving__Item__FeaturesEntry e[3], *ep[3];
  Sedp__Serving__Item it[3], *itp[3];
  for (guint i = 0; i < 3; i++) {
    sedp__serving__feature__init (&fx[i]);
    fx[i].value_case = i < 2 ? SEDP__SERVING__FEATURE__VALUE_IDS : SEDP__SERVING__FEATURE__VALUE_FLOATS;
    if (i < 2)
      fx[i].ids = i == 0 ? &l3 : &l1;
    else
      fx[i].floats = &fl;
    sedp__serving__item__features_entry__init (&e[i]);
    e[i].key = (char *) "x";
    e[i].value = &fx[i];
    ep[i] = &e[i];
    sedp__serving__item__init (&it[i]);
    it[i].id = i + 1;
    it[i].n_features = 1;
    it[i].features = &ep[i];
    itp[i] = &it[i];
  }
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  m.n_items = 3;
  m.items = itp;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  g_autofree guint8 *buf = g_malloc (len);
  sedp__serving__predict_request__pack (&m, buf);
  g_autoptr (GError) pb_error = NULL;
  CU_ASSERT_FALSE (sedp_protocol_decode_request (buf, len, NULL, SEDP_PROTOCOL_PROTOBUF, 0, NULL,
                                                 &out, &pb_error));
  SEDP_ASSERT_ERROR (pb_error, SEDP_PROTOCOL_ERROR, "items[2].x: an array of numbers of length 3",
                     "items[1] has an array of integers of length 1");
  sedp_protocol_request_clear (&out);
}

/* ---- the test requests, in the three formats --------------------------------------------- */

/* Request q: id "rQ" (none for q == 1: the default id), user 7+q with age (int) and hist (ids),
 * 2+q items: id 100+10q+i, escore i/4, ctr i/8 (float), tags 0…i (ids), emb [i/2, 1.5]. */
#define N_REQUESTS 3
#define N_ITEMS(q) (2 + (q))

static char *
request_id (guint q)
{
  return q == 1 ? NULL : g_strdup_printf ("r%u", q);
}

/* sedp run's JSON Lines form. */
static char *
make_run_jsonl (const char *path)
{
  GString *s = g_string_new ("# the test requests\n");
  for (guint q = 0; q < N_REQUESTS; q++) {
    g_autofree char *id = request_id (q);
    g_autofree char *id_member = id ? g_strdup_printf ("\"id\": \"%s\", ", id)
                                    : g_strdup_printf ("\"id\": \"%s:%u\", ", path, q + 2);
    g_string_append_printf (s, "{%s\"user\": {\"user_id\": %u, \"age\": %u, \"hist\": [1, 2, %u]}, "
                               "\"items\": [", id_member, 7 + q, 30 + q, 3 + q);
    for (guint i = 0; i < N_ITEMS (q); i++) {
      g_string_append_printf (s, "%s{\"item_id\": %u, \"escore\": %.2f, \"ctr\": %.3f, \"tags\": [",
                              i ? ", " : "", 100 + 10 * q + i, i / 4.0, i / 8.0);
      for (guint k = 0; k <= i; k++)
        g_string_append_printf (s, "%s%u", k ? ", " : "", k);
      g_string_append_printf (s, "], \"emb\": [%.1f, 1.5]}", i / 2.0);
    }
    g_string_append (s, "]}\n");
  }
  return g_string_free (s, FALSE);
}

/* PredictRequest JSON lines (the bodies of POST …:predict). */
static char *
make_predict_jsonl (void)
{
  GString *s = g_string_new (NULL);
  for (guint q = 0; q < N_REQUESTS; q++) {
    g_autofree char *id = request_id (q);
    g_autofree char *id_member = id ? g_strdup_printf ("\"request_id\": \"%s\", ", id) : g_strdup ("");
    g_string_append_printf (s, "{%s\"deadline_ms\": 60000, \"user\": {\"id\": %u, \"features\": "
                               "{\"age\": {\"int_value\": %u}, \"hist\": {\"ids\": [1, 2, %u]}}}, "
                               "\"items\": [", id_member, 7 + q, 30 + q, 3 + q);
    for (guint i = 0; i < N_ITEMS (q); i++) {
      g_string_append_printf (s, "%s{\"id\": %u, \"escore\": %.2f, \"features\": {\"ctr\": "
                                 "{\"float_value\": %.3f}, \"tags\": {\"ids\": [",
                              i ? ", " : "", 100 + 10 * q + i, i / 4.0, i / 8.0);
      for (guint k = 0; k <= i; k++)
        g_string_append_printf (s, "%s%u", k ? ", " : "", k);
      g_string_append_printf (s, "]}, \"emb\": {\"floats\": [%.1f, 1.5]}}}", i / 2.0);
    }
    g_string_append (s, "]}\n");
  }
  return g_string_free (s, FALSE);
}

/* One serialized PredictRequest q (protobuf-c). */
static GBytes *
make_protobuf (guint q)
{
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  g_autofree char *id = request_id (q);
  m.request_id = id ? id : (char *) "";
  m.deadline_ms = 60000;
  Sedp__Serving__User user = SEDP__SERVING__USER__INIT;
  user.id = 7 + q;
  m.user = &user;
  Sedp__Serving__Feature age = SEDP__SERVING__FEATURE__INIT, hist = SEDP__SERVING__FEATURE__INIT;
  age.value_case = SEDP__SERVING__FEATURE__VALUE_INT_VALUE;
  age.int_value = 30 + q;
  guint64 hist_ids[] = {1, 2, 3 + q};
  Sedp__Serving__IdList hl = SEDP__SERVING__ID_LIST__INIT;
  hl.n_ids = 3;
  hl.ids = hist_ids;
  hist.value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
  hist.ids = &hl;
  Sedp__Serving__User__FeaturesEntry ue[2], *uep[2];
  for (guint k = 0; k < 2; k++) {
    sedp__serving__user__features_entry__init (&ue[k]);
    ue[k].key = (char *) (k == 0 ? "age" : "hist");
    ue[k].value = k == 0 ? &age : &hist;
    uep[k] = &ue[k];
  }
  user.n_features = 2;
  user.features = uep;
  enum { MAXI = 8 };
  Sedp__Serving__Item items[MAXI], *itemp[MAXI];
  Sedp__Serving__Feature f[MAXI][3];
  Sedp__Serving__Item__FeaturesEntry fe[MAXI][3], *fep[MAXI][3];
  Sedp__Serving__IdList tl[MAXI];
  Sedp__Serving__FloatList el[MAXI];
  guint64 tags[MAXI][MAXI];
  float emb[MAXI][2];
  g_assert (N_ITEMS (q) <= MAXI);
  for (guint i = 0; i < N_ITEMS (q); i++) {
    sedp__serving__item__init (&items[i]);
    itemp[i] = &items[i];
    items[i].id = 100 + 10 * q + i;
    items[i].escore_present_case = SEDP__SERVING__ITEM__ESCORE_PRESENT_ESCORE;
    items[i].escore = (float) (i / 4.0);
    for (guint k = 0; k < 3; k++)
      sedp__serving__feature__init (&f[i][k]);
    f[i][0].value_case = SEDP__SERVING__FEATURE__VALUE_FLOAT_VALUE;
    f[i][0].float_value = (float) (i / 8.0);
    sedp__serving__id_list__init (&tl[i]);
    for (guint k = 0; k <= i; k++)
      tags[i][k] = k;
    tl[i].n_ids = i + 1;
    tl[i].ids = tags[i];
    f[i][1].value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
    f[i][1].ids = &tl[i];
    sedp__serving__float_list__init (&el[i]);
    emb[i][0] = (float) (i / 2.0);
    emb[i][1] = 1.5f;
    el[i].n_values = 2;
    el[i].values = emb[i];
    f[i][2].value_case = SEDP__SERVING__FEATURE__VALUE_FLOATS;
    f[i][2].floats = &el[i];
    const char *names[] = {"ctr", "tags", "emb"};
    for (guint k = 0; k < 3; k++) {
      sedp__serving__item__features_entry__init (&fe[i][k]);
      fe[i][k].key = (char *) names[k];
      fe[i][k].value = &f[i][k];
      fep[i][k] = &fe[i][k];
    }
    items[i].n_features = 3;
    items[i].features = fep[i];
  }
  m.n_items = N_ITEMS (q);
  m.items = itemp;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  guint8 *buf = g_malloc (len);
  sedp__serving__predict_request__pack (&m, buf);
  return g_bytes_new_take (buf, len);
}

/* The protobuf request log of the test requests. */
static GByteArray *
make_log (void)
{
  GByteArray *log = g_byte_array_new ();
  for (guint q = 0; q < N_REQUESTS; q++) {
    g_autoptr (GBytes) m = make_protobuf (q);
    gsize len = 0;
    const guint8 *data = g_bytes_get_data (m, &len);
    sedp_request_log_append (log, data, len);
  }
  return log;
}

/* A scratch folder with the test files. */
typedef struct {
  char *dir;
  char *run_jsonl, *predict_jsonl, *log_pb, *log_noext, *pipeline, *passthrough;
  GByteArray *log;
} Files;

static const char *pipeline_text =
    "[pipeline]\nname = replay\nframe_rows = 2\ndeadline_ms = 60000\n"
    "outputs = user_id, age, hist, item_id, escore, ctr, tags, emb, score\n"
    "[stage reader]\nplugin = data_reader\n"
    "[stage features]\nplugin = feature_processor\nafter = reader\nscope = item\n"
    "log1p = score=ctr\n";

static void
files_init (Files *f)
{
  f->dir = sedp_test_make_tmp_dir ("sedp-requestlog-XXXXXX");
  f->run_jsonl = g_build_filename (f->dir, "run.jsonl", NULL);
  f->predict_jsonl = g_build_filename (f->dir, "predict.jsonl", NULL);
  f->log_pb = g_build_filename (f->dir, "requests.pb", NULL);
  f->log_noext = g_build_filename (f->dir, "requests.log", NULL);
  f->pipeline = g_build_filename (f->dir, "replay.pipeline", NULL);
  f->passthrough = g_build_filename (f->dir, "passthrough.pipeline", NULL);
  g_autofree char *run = make_run_jsonl (f->run_jsonl);
  g_autofree char *predict = make_predict_jsonl ();
  f->log = make_log ();
  sedp_test_write_file (f->run_jsonl, run, -1);
  sedp_test_write_file (f->predict_jsonl, predict, -1);
  sedp_test_write_file (f->log_pb, f->log->data, f->log->len);
  sedp_test_write_file (f->log_noext, f->log->data, f->log->len);
  sedp_test_write_file (f->pipeline, pipeline_text, -1);
  sedp_test_write_file (f->passthrough,
                        "[pipeline]\n[stage reader]\nplugin = passthrough\nscope = request\n", -1);
}

/* Removes the folder and everything in it. */
static void
files_clear (Files *f)
{
  sedp_test_remove_tree (f->dir);
  g_free (f->dir);
  g_free (f->run_jsonl);
  g_free (f->predict_jsonl);
  g_free (f->log_pb);
  g_free (f->log_noext);
  g_free (f->pipeline);
  g_free (f->passthrough);
  g_byte_array_unref (f->log);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Files, files_clear)

/* Writes @data to @name in the scratch folder; returns the path. */
static char *
scratch (Files *f, const char *name, const guint8 *data, gsize len)
{
  char *path = g_build_filename (f->dir, name, NULL);
  sedp_test_write_file (path, data, (gssize) len);
  return path;
}

/* ---- the log format ------------------------------------------------------------------------ */

static void
test_append_varint (void)
{
  const struct {
    gsize size;
    guint n;
    guint8 bytes[3];
  } cases[] = {{1, 1, {0x01}}, {127, 1, {0x7f}}, {128, 2, {0x80, 0x01}}, {300, 2, {0xac, 0x02}},
               {16384, 3, {0x80, 0x80, 0x01}}};
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_autofree guint8 *msg = g_malloc0 (cases[c].size);
    g_autoptr (GByteArray) log = g_byte_array_new ();
    sedp_request_log_append (log, msg, cases[c].size);
    CU_ASSERT_EQUAL (log->len, cases[c].n + cases[c].size);
    CU_ASSERT_EQUAL (memcmp (log->data, cases[c].bytes, cases[c].n), 0);
  }
}

/* A reader over @data in memory (size unknown when @sized is FALSE, as on a pipe). */
static SedpRequestLog *
log_over (const guint8 *data, gsize len, gboolean sized)
{
  g_autoptr (GInputStream) in = g_memory_input_stream_new_from_data (g_memdup2 (data, len), (gssize) len,
                                                                      g_free);
  return sedp_request_log_new (in, "mem.pb", sized ? (goffset) len : 0);
}

static void
test_log_records (void)
{
  g_autoptr (GByteArray) log = make_log ();
  for (int sized = 0; sized < 2; sized++) {
    SedpRequestLog *rd = log_over (log->data, log->len, sized);
    for (guint q = 0; q < N_REQUESTS; q++) {
      g_autoptr (GError) error = NULL;
      SedpRequest *r = sedp_request_log_next (rd, &error);
      CU_ASSERT_PTR_NULL (error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (r);
      g_autofree char *id = request_id (q);
      g_autofree char *fallback = g_strdup_printf ("mem.pb#%u", q + 1);
      CU_ASSERT_STRING_EQUAL (sedp_request_get_id (r), id ? id : fallback);
      CU_ASSERT_EQUAL (r->timeout_us, 60000 * 1000);
      gsize size = 0;
      const char *ct = NULL;
      const guint8 *payload = sedp_request_get_payload (r, &size, &ct);
      g_autoptr (GBytes) expected = make_protobuf (q);
      CU_ASSERT_STRING_EQUAL (ct, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
      CU_ASSERT (payload && g_bytes_get_size (expected) == size &&
                 memcmp (payload, g_bytes_get_data (expected, NULL), size) == 0);
      sedp_request_unref (r);
    }
    g_autoptr (GError) error = NULL;
    CU_ASSERT_PTR_NULL (sedp_request_log_next (rd, &error));
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_EQUAL (sedp_request_log_get_offset (rd), log->len);
    CU_ASSERT_EQUAL (sedp_request_log_get_n_records (rd), N_REQUESTS);
    sedp_request_log_free (rd);
  }
}

/* The valid log followed by @tail: @n_good requests, then one error containing the needles. */
static void
log_corrupt (const guint8 *tail, gsize tail_len, gboolean sized, guint n_good, const char *needle,
             const char *needle2)
{
  g_autoptr (GByteArray) log = tail_len && tail[0] == 0xff && tail_len == 1 ? g_byte_array_new ()
                                                                               : make_log ();
  if (!(tail_len == 1 && tail[0] == 0xff))
    g_byte_array_append (log, tail, (guint) tail_len);
  SedpRequestLog *rd = log_over (log->data, log->len, sized);
  guint good = 0;
  g_autoptr (GError) error = NULL;
  SedpRequest *r;
  while ((r = sedp_request_log_next (rd, &error))) {
    good++;
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL (good, n_good);
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, needle, needle2);
  /* The reader stays at the error. */
  g_autoptr (GError) again = NULL;
  CU_ASSERT_PTR_NULL (sedp_request_log_next (rd, &again));
  CU_ASSERT_PTR_NULL (again);
  sedp_request_log_free (rd);
}

static void
test_log_corrupt (void)
{
  g_autoptr (GByteArray) valid = make_log ();
  g_autofree char *at = g_strdup_printf ("mem.pb: record 4 (byte %u): ", valid->len);
  const guint8 cut_length[] = {0x80};
  const guint8 past_end[] = {0xe8, 0x07, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; /* 1000, 10 bytes */
  const guint8 zero[] = {0x00, 0x0a, 0x00};
  const guint8 garbage[] = {0x05, 0xff, 0xff, 0xff, 0xff, 0xff};
  const guint8 long_varint[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  const guint8 huge_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  const guint8 over_limit[] = {0x80, 0x80, 0x80, 0x80, 0x01}; /* 256 MiB */
  const guint8 empty_marker[] = {0xff};
  for (int sized = 0; sized < 2; sized++) {
    log_corrupt (cut_length, sizeof cut_length, sized, 3, at, "truncated length");
    log_corrupt (past_end, sizeof past_end, sized, 3, at,
                 sized ? "the length 1000 runs past the end of the file (10 bytes left)"
                       : "truncated message: the length says 1000 bytes, the file ends after 10");
    log_corrupt (zero, sizeof zero, sized, 3, at, "an empty record (length 0)");
    log_corrupt (garbage, sizeof garbage, sized, 3, at,
                 "not a valid protobuf PredictRequest (5 bytes)");
    log_corrupt (long_varint, sizeof long_varint, sized, 3, at, "malformed length");
    log_corrupt (huge_varint, sizeof huge_varint, sized, 3, at, "malformed length");
    log_corrupt (empty_marker, sizeof empty_marker, sized, 0, "mem.pb: an empty request log", "");
  }
  log_corrupt (over_limit, sizeof over_limit, FALSE, 3, at, "is over the limit of 67108864 bytes");
}

/* ---- format detection ------------------------------------------------------------------------ */

static SedpRequestFormat
detected (const char *path, SedpRequestFormat format, guint *n, GError **error)
{
  SedpRequestReader *rd = sedp_request_reader_open_format (path, format, error);
  if (rd == NULL)
    return SEDP_REQUEST_FORMAT_AUTO;
  SedpRequest *r;
  *n = 0;
  while ((r = sedp_request_reader_next (rd, error))) {
    (*n)++;
    sedp_request_unref (r);
  }
  SedpRequestFormat f = sedp_request_reader_get_format (rd);
  sedp_request_reader_close (rd);
  return f;
}

static void
test_detect_format (void)
{
  g_auto (Files) f;
  files_init (&f);
  const guint8 comment_first[] = "# a comment\n{\"request_id\": \"a\", \"items\": [{\"id\": 1}]}\n";
  const guint8 bare_predict[] = "{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"int_value\": 1}}}]}\n";
  g_autofree char *comment = scratch (&f, "comment", comment_first, sizeof comment_first - 1);
  g_autofree char *bare = scratch (&f, "bare.jsonl", bare_predict, sizeof bare_predict - 1);
  g_autofree char *empty = scratch (&f, "empty", (const guint8 *) "", 0);
  g_autofree char *copy = g_build_filename (f.dir, "run-copy", NULL); /* JSON without .jsonl */
  g_autofree char *run = NULL;
  gsize run_len = 0;
  CU_ASSERT_FATAL (g_file_get_contents (f.run_jsonl, &run, &run_len, NULL));
  CU_ASSERT_FATAL (g_file_set_contents (copy, run, (gssize) run_len, NULL));
  const struct {
    const char *path;
    SedpRequestFormat given, expected;
    guint n;
  } cases[] = {
    {f.log_pb, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_PB, N_REQUESTS},
    {f.log_noext, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_PB, N_REQUESTS},
    {f.log_noext, SEDP_REQUEST_FORMAT_PB, SEDP_REQUEST_FORMAT_PB, N_REQUESTS},
    {f.run_jsonl, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_JSONL, N_REQUESTS},
    {copy, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_JSONL, N_REQUESTS},
    {f.predict_jsonl, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_PREDICT_JSONL, N_REQUESTS},
    {f.predict_jsonl, SEDP_REQUEST_FORMAT_PREDICT_JSONL, SEDP_REQUEST_FORMAT_PREDICT_JSONL, N_REQUESTS},
    {comment, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_PREDICT_JSONL, 1},
    {bare, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_PREDICT_JSONL, 1},
    {empty, SEDP_REQUEST_FORMAT_AUTO, SEDP_REQUEST_FORMAT_AUTO, 0},
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    g_autoptr (GError) error = NULL;
    guint n = 0;
    SedpRequestFormat got = detected (cases[c].path, cases[c].given, &n, &error);
    if (error || got != cases[c].expected || n != cases[c].n)
      fprintf (stderr, "\n  case %u (%s): format %s, %u requests, %s\n", c, cases[c].path,
               sedp_request_format_to_string (got), n, error ? error->message : "no error");
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_EQUAL (got, cases[c].expected);
    CU_ASSERT_EQUAL (n, cases[c].n);
  }
  /* A log read as JSON lines is invalid JSON; JSON read as a log is a corrupt log. */
  g_autoptr (GError) error = NULL;
  guint n = 0;
  detected (f.run_jsonl, SEDP_REQUEST_FORMAT_PB, &n, &error);
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "run.jsonl: record 1 (byte 0): ");
  for (SedpRequestFormat k = SEDP_REQUEST_FORMAT_AUTO; k <= SEDP_REQUEST_FORMAT_PB; k++) {
    SedpRequestFormat back = SEDP_REQUEST_FORMAT_AUTO;
    CU_ASSERT (sedp_request_format_from_string (sedp_request_format_to_string (k), &back));
    CU_ASSERT_EQUAL (back, k);
  }
  SedpRequestFormat unused;
  CU_ASSERT_FALSE (sedp_request_format_from_string ("protobuf", &unused));
}

static void
test_predict_json_requests (void)
{
  const char *text = "{\"request_id\": \"p\\u00e9\", \"deadline_ms\": \"250\", \"items\": []}";
  g_autoptr (GError) error = NULL;
  SedpRequest *r = sedp_request_from_predict_json (text, strlen (text), "f:3", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  CU_ASSERT_STRING_EQUAL (sedp_request_get_id (r), "p\xc3\xa9");
  CU_ASSERT_EQUAL (r->timeout_us, 250000);
  gsize size = 0;
  const char *ct = NULL;
  const guint8 *p = sedp_request_get_payload (r, &size, &ct);
  CU_ASSERT (p && size == strlen (text) && memcmp (p, text, size) == 0);
  CU_ASSERT_STRING_EQUAL (ct, SEDP_PROTOCOL_CONTENT_TYPE_JSON);
  sedp_request_unref (r);
  /* No request_id: the place; a deadline out of range is left to the decoder. */
  text = "{\"deadline_ms\": 9000000, \"items\": [{\"id\": 1}]}";
  r = sedp_request_from_predict_json (text, strlen (text), "f:4", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  CU_ASSERT_STRING_EQUAL (sedp_request_get_id (r), "f:4");
  CU_ASSERT_EQUAL (r->timeout_us, 0);
  sedp_request_unref (r);
  CU_ASSERT_PTR_NULL (sedp_request_from_predict_json ("{\"items\": [", 11, "f:5", &error));
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "f:5: invalid JSON");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_request_from_predict_json ("[1]", 3, "f:6", &error));
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "f:6: a request must be a JSON object");
  CU_ASSERT_FALSE (sedp_request_json_is_predict ("{\"id\": \"x\", \"items\": [{\"id\": 3}]}", 33));
  CU_ASSERT_FALSE (sedp_request_json_is_predict ("not json", 8));
  CU_ASSERT_TRUE (sedp_request_json_is_predict ("{\"top_k\": 3}", 12));
}

/* ---- replay: the same results from every format -------------------------------------------- */

/* Every request of @path through the pipeline, in order, as sedp run writes results. */
static GPtrArray *
replay (SedpPipeline *p, const char *path)
{
  g_autoptr (GError) error = NULL;
  SedpRequestReader *rd = sedp_request_reader_open_format (path, SEDP_REQUEST_FORMAT_AUTO, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (rd);
  Collector c;
  collector_init (&c);
  g_autoptr (GPtrArray) order = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_request_unref);
  SedpRequest *r;
  while ((r = sedp_request_reader_next (rd, &error))) {
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
    g_ptr_array_add (order, r);
  }
  CU_ASSERT_PTR_NULL (error);
  sedp_request_reader_close (rd);
  CU_ASSERT_EQUAL (collector_wait (&c, order->len, 30), order->len);
  const char *outputs[] = {"user_id", "age", "hist", "item_id", "escore", "ctr", "tags", "emb",
                           "score", NULL};
  GPtrArray *results = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  for (guint i = 0; i < order->len; i++) {
    g_autoptr (GString) line = g_string_new (NULL);
    sedp_result_write_json (order->pdata[i], outputs, line);
    JsonNode *node = json_from_string (line->str, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (node);
    g_ptr_array_add (results, node);
  }
  collector_clear (&c);
  return results;
}

static void
test_replay_same_results (void)
{
  g_auto (Files) f;
  files_init (&f);
  SedpPipeline *p = start_pipeline (pipeline_text);
  g_autoptr (GPtrArray) from_run = replay (p, f.run_jsonl);
  g_autoptr (GPtrArray) from_predict = replay (p, f.predict_jsonl);
  g_autoptr (GPtrArray) from_log = replay (p, f.log_pb);
  sedp_pipeline_free (p);
  CU_ASSERT_EQUAL_FATAL (from_run->len, N_REQUESTS);
  CU_ASSERT_EQUAL_FATAL (from_predict->len, N_REQUESTS);
  CU_ASSERT_EQUAL_FATAL (from_log->len, N_REQUESTS);
  for (guint q = 0; q < N_REQUESTS; q++) {
    JsonObject *o = json_node_get_object (from_log->pdata[q]);
    CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "status"), "ok");
    JsonArray *items = json_object_get_array_member (o, "items");
    CU_ASSERT_EQUAL_FATAL (json_array_get_length (items), N_ITEMS (q));
    JsonObject *last = json_array_get_object_element (items, N_ITEMS (q) - 1);
    CU_ASSERT_EQUAL (json_object_get_size (last), 10); /* status and the nine outputs */
    CU_ASSERT_EQUAL (json_array_get_length (json_object_get_array_member (last, "tags")),
                     N_ITEMS (q));
    /* The default ids differ (FILE:LINE, FILE#RECORD); everything else is equal. */
    if (q == 1) {
      for (guint k = 0; k < 3; k++)
        json_object_remove_member (json_node_get_object (
                                       ((GPtrArray *[]){from_run, from_predict, from_log})[k]->pdata[q]),
                                   "id");
    }
    if (!json_node_equal (from_log->pdata[q], from_run->pdata[q]) ||
        !json_node_equal (from_log->pdata[q], from_predict->pdata[q])) {
      g_autofree char *a = json_to_string (from_log->pdata[q], FALSE);
      g_autofree char *b = json_to_string (from_run->pdata[q], FALSE);
      g_autofree char *c = json_to_string (from_predict->pdata[q], FALSE);
      fprintf (stderr, "\n  log:     %s\n  run:     %s\n  predict: %s\n", a, b, c);
    }
    CU_ASSERT (json_node_equal (from_log->pdata[q], from_run->pdata[q]));
    CU_ASSERT (json_node_equal (from_log->pdata[q], from_predict->pdata[q]));
  }
}

/* A record that is valid protobuf but not a valid request is the decoder's to refuse: the
 * request fails as in serving, the replay goes on. */
static void
test_replay_invalid_request (void)
{
  const char *json = "{\"request_id\": \"bad\", \"items\": [{\"id\": 1, \"features\": {\"x\": "
                     "{\"int_value\": 1}}}, {\"id\": 2, \"features\": {\"x\": {\"string_value\": "
                     "\"a\"}}}]}";
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  m.request_id = (char *) "empty"; /* no items */
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  g_autofree guint8 *buf = g_malloc (len);
  sedp__serving__predict_request__pack (&m, buf);
  g_autoptr (GByteArray) log = make_log ();
  sedp_request_log_append (log, buf, len);
  g_auto (Files) f;
  files_init (&f);
  g_autofree char *path = scratch (&f, "invalid.pb", log->data, log->len);
  g_autofree char *jpath = scratch (&f, "invalid.jsonl", (const guint8 *) json, strlen (json));
  SedpPipeline *p = start_pipeline (pipeline_text);
  g_autoptr (GPtrArray) results = replay (p, path);
  g_autoptr (GPtrArray) jresults = replay (p, jpath);
  sedp_pipeline_free (p);
  CU_ASSERT_EQUAL_FATAL (results->len, N_REQUESTS + 1);
  JsonObject *o = json_node_get_object (results->pdata[N_REQUESTS]);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "id"), "empty");
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "status"), "failed");
  CU_ASSERT_PTR_NOT_NULL (strstr (json_object_get_string_member (o, "message"), "invalid request: "));
  CU_ASSERT_EQUAL_FATAL (jresults->len, 1);
  o = json_node_get_object (jresults->pdata[0]);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "id"), "bad");
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (o, "status"), "failed");
  CU_ASSERT_PTR_NOT_NULL (strstr (json_object_get_string_member (o, "message"),
                                  "items[1].x: a string, but items[0] has an integer"));
}

/* ---- sedp run ------------------------------------------------------------------------------- */

/* Runs sedp with the NULL-terminated arguments, standard input from @stdin_path (or none). */
#define spawn_sedp(r, stdin_path, ...)                                                           \
  sedp_test_spawn ((r),                                                                          \
                   &(const SedpTestSpawn){.plugin_path = SEDP_TEST_PLUGIN_DIR,                   \
                                          .input_path = (stdin_path)},                           \
                   __VA_ARGS__)

static guint
count (const char *text, const char *needle)
{
  guint n = 0;
  for (const char *p = text; (p = strstr (p, needle)); p += strlen (needle))
    n++;
  return n;
}

#define ASSERT_RUN(r, code, needle)                                                              \
  do {                                                                                           \
    if ((r).status != (code) || strstr ((r).err, (needle)) == NULL)                              \
      fprintf (stderr, "\n  exit status %d (expected %d), stderr lacks '%s'?\n%s\n", (r).status,   \
               (code), (needle), (r).err);                                                       \
    CU_ASSERT_EQUAL ((r).status, (code));                                                        \
    CU_ASSERT_PTR_NOT_NULL (strstr ((r).err, (needle)));                                         \
  } while (0)

static void
test_run_log (void)
{
  g_auto (Files) f;
  files_init (&f);
  g_auto (SedpTestRun) json_run;
  spawn_sedp (&json_run, NULL, "run", "-q", f.pipeline, "--requests", f.predict_jsonl, NULL);
  ASSERT_RUN (json_run, 0, "");
  CU_ASSERT_EQUAL (count (json_run.out, "\n"), N_REQUESTS);
  CU_ASSERT_EQUAL (count (json_run.out, "\"status\":\"ok\""), N_REQUESTS);
  /* The log by name, by content and on standard input: the same lines but the default id. */
  const char *paths[] = {f.log_pb, f.log_noext, "-"};
  for (guint k = 0; k < G_N_ELEMENTS (paths); k++) {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, k == 2 ? f.log_pb : NULL, "run", f.pipeline, "--requests", paths[k], NULL);
    ASSERT_RUN (r, 0, "sedp run: 3 requests in ");
    CU_ASSERT_EQUAL (count (r.out, "\n"), N_REQUESTS);
    CU_ASSERT_EQUAL (count (r.out, "\"status\":\"ok\""), N_REQUESTS);
    g_auto (GStrv) a = g_strsplit (r.out, "\n", -1);
    g_auto (GStrv) b = g_strsplit (json_run.out, "\n", -1);
    CU_ASSERT_STRING_EQUAL (a[0], b[0]);
    CU_ASSERT_STRING_EQUAL (a[2], b[2]);
    g_autofree char *id = g_strdup_printf ("{\"id\":\"%s#2\",", paths[k]);
    CU_ASSERT (g_str_has_prefix (a[1], id));
    CU_ASSERT_STRING_EQUAL (strchr (a[1], ','), strchr (b[1], ','));
  }
  /* --requests-format */
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, NULL, "run", "-q", "--requests-format", "pb", f.pipeline, "-r", f.predict_jsonl,
                NULL);
    g_autofree char *where = g_strdup_printf ("sedp run: %s: record 1 (byte 0): ", f.predict_jsonl);
    ASSERT_RUN (r, 1, where);
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
  {
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, NULL, "run", "--requests-format", "protobuf", f.pipeline, "-r", f.log_pb, NULL);
    ASSERT_RUN (r, 2, "--requests-format must be auto, jsonl, predict-jsonl or pb");
  }
  {
    /* The source stage must decode the payloads. */
    g_auto (SedpTestRun) r;
    spawn_sedp (&r, NULL, "run", f.passthrough, "-r", f.log_pb, NULL);
    ASSERT_RUN (r, 1, "its source stage 'reader' is plugin 'passthrough', not data_reader");
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
}

/* A corrupt log: exit 1, one error naming the file, record and byte; the records before it are
 * scored and written. */
static void
run_corrupt (Files *f, const char *name, const guint8 *tail, gsize tail_len, gboolean on_stdin,
             guint n_good, const char *needle)
{
  g_autoptr (GByteArray) log = n_good ? make_log () : g_byte_array_new ();
  g_byte_array_append (log, tail, (guint) tail_len);
  g_autofree char *path = scratch (f, name, log->data, log->len);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, on_stdin ? path : NULL, "run", f->pipeline, "--requests", on_stdin ? "-" : path,
              NULL);
  g_autofree char *where = n_good ? g_strdup_printf ("sedp run: %s: record %u (byte %u): %s",
                                                     on_stdin ? "-" : path, n_good + 1,
                                                     log->len - (guint) tail_len, needle)
                                  : g_strdup_printf ("sedp run: %s: %s", path, needle);
  ASSERT_RUN (r, 1, where);
  CU_ASSERT_EQUAL (count (r.err, "sedp run: "), 2); /* the error and the summary */
  CU_ASSERT_EQUAL (count (r.out, "\"status\":\"ok\""), n_good);
  CU_ASSERT_EQUAL (count (r.out, "\n"), n_good);
  g_autofree char *summary = g_strdup_printf ("sedp run: %u requests in ", n_good);
  CU_ASSERT_PTR_NOT_NULL (strstr (r.err, summary));
}

static void
test_run_corrupt_logs (void)
{
  g_auto (Files) f;
  files_init (&f);
  const guint8 cut_length[] = {0x80};
  const guint8 past_end[] = {0xe8, 0x07, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const guint8 zero[] = {0x00};
  const guint8 garbage[] = {0x05, 0xff, 0xff, 0xff, 0xff, 0xff};
  const guint8 text[] = "this is not a request log\n";
  run_corrupt (&f, "cut-length.pb", cut_length, sizeof cut_length, FALSE, 3, "truncated length");
  run_corrupt (&f, "past-end.pb", past_end, sizeof past_end, FALSE, 3,
               "the length 1000 runs past the end of the file (10 bytes left)");
  run_corrupt (&f, "past-end-stdin.pb", past_end, sizeof past_end, TRUE, 3,
               "truncated message: the length says 1000 bytes, the file ends after 10");
  run_corrupt (&f, "zero.pb", zero, sizeof zero, FALSE, 3, "an empty record (length 0)");
  run_corrupt (&f, "garbage.pb", garbage, sizeof garbage, FALSE, 3,
               "not a valid protobuf PredictRequest (5 bytes)");
  run_corrupt (&f, "empty.pb", NULL, 0, FALSE, 0, "an empty request log (no records)");
  /* Text that is not JSON, read by content as a log: 't' (116) is the first length. */
  g_autofree char *path = scratch (&f, "text", text, sizeof text - 1);
  g_auto (SedpTestRun) r;
  spawn_sedp (&r, NULL, "run", f.pipeline, "--requests", path, NULL);
  g_autofree char *where = g_strdup_printf ("sedp run: %s: record 1 (byte 0): the length 116 runs "
                                            "past the end of the file (25 bytes left)", path);
  ASSERT_RUN (r, 1, where);
  CU_ASSERT_STRING_EQUAL (r.out, "");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("requestlog", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
    T (test_json_ragged_ids_then_vector),
    T (test_json_ids_then_longer_vector),
    T (test_json_vector_then_other_lengths),
    T (test_json_arrays_that_type),
    T (test_protocol_ragged_ids_then_vector),
    T (test_append_varint),
    T (test_log_records),
    T (test_log_corrupt),
    T (test_detect_format),
    T (test_predict_json_requests),
    T (test_replay_same_results),
    T (test_replay_invalid_request),
    T (test_run_log),
    T (test_run_corrupt_logs),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  int status = sedp_test_run ();
  g_clear_pointer (&test_registry, sedp_registry_free);
  return status;
}
