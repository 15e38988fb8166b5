/* sedp serving tests — the streaming JSON decoder (core/io/json-request.c) and every limit of
 * SedpProtocolLimits (docs/limits.md), in both encodings:
 * 1. nesting: 200 000 '[' (the request that crashed `sedp serve`) and deep nesting inside a valid
 *    prefix are refused at the first byte past the limit, on a thread with a 128 KiB stack (no
 *    recursion anywhere on the way), by the decoder and by the nesting check that guards the
 *    json-glib parsers;
 * 2. a test per limit: max_items, max_depth, max_features, max_values, max_string_bytes,
 *    max_decoded_bytes — each refused with SEDP_PROTOCOL_ERROR_LIMIT naming it, and accepted one
 *    below it;
 * 3. malformed JSON the older corpus (test-serving.c) lacks, each with the field named;
 * 4. numbers: random decimals decoded by the fast path and by strtod (the reference) agree
 *    bit for bit; integers at the edges of int64 and uint64;
 * 5. the peek of request_id and deadline_ms through strings with escaped quotes. */
#include "../runtime/runtime-helpers.h"

#include "io/peek.h"
#include "io/protocol.h"
#include "io/request-file.h"
#include "io/request-log.h"
#include "sedp.pb-c.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static gboolean
decode (const char *json, gsize len, const SedpProtocolLimits *limits, SedpFrame *rf,
        SedpProtocolRequest *req, GError **error)
{
  return sedp_protocol_decode_request_limited ((const guint8 *) json, len, NULL,
                                               SEDP_PROTOCOL_JSON, limits, rf, req, error);
}

/* Decodes @json; expects a refusal of @code whose message holds @needle. */
static void
expect_refusal (const char *json, gsize len, const SedpProtocolLimits *limits, gint code,
                const char *needle)
{
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpFrame) rf = sedp_frame_new (1);
  CU_ASSERT_FALSE (decode (json, len, limits, rf, &req, &error));
  SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, "invalid request: ", needle);
  if (error && error->code != code)
    fprintf (stderr, "\n  '%s': code %d, expected %d\n", error->message, error->code, code);
  CU_ASSERT (error && error->code == code);
  CU_ASSERT_PTR_NULL (req.items);
}

static void
expect_ok (const char *json, const SedpProtocolLimits *limits, guint n_items)
{
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpFrame) rf = sedp_frame_new (1);
  gboolean ok = decode (json, strlen (json), limits, rf, &req, &error);
  if (!ok)
    fprintf (stderr, "\n  unexpected: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (req.items), n_items);
  sedp_protocol_request_clear (&req);
}

/* ---- 1. nesting ---- */

typedef struct {
  char *text;
  gsize len;
  gboolean decode_refused, check_refused;
  char *message;
} Deep;

static void *
deep_thread (void *data)
{
  Deep *t = data;
  SedpProtocolRequest req;
  GError *error = NULL;
  t->decode_refused = !decode (t->text, t->len, NULL, NULL, &req, &error);
  if (error)
    t->message = g_strdup (error->message);
  g_clear_error (&error);
  t->check_refused = !sedp_json_check_nesting (t->text, t->len, 64, &error);
  g_clear_error (&error);
  return NULL;
}

/* Runs both on a thread of 128 KiB of stack: any recursion per level would overflow it. */
static void
run_deep (Deep *t)
{
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  pthread_attr_setstacksize (&attr, 128 * 1024);
  pthread_t th;
  CU_ASSERT_EQUAL_FATAL (pthread_create (&th, &attr, deep_thread, t), 0);
  pthread_join (th, NULL);
  pthread_attr_destroy (&attr);
}

static char *
repeat (const char *prefix, char c, gsize n, const char *suffix)
{
  GString *s = g_string_new (prefix);
  for (gsize i = 0; i < n; i++)
    g_string_append_c (s, c);
  g_string_append (s, suffix);
  return g_string_free (s, FALSE);
}

static void
test_deep_nesting (void)
{
  /* The request of the report: '[' x 200 000 then as many ']'. */
  g_autofree char *open = repeat ("", '[', 200000, "");
  g_autofree char *text = repeat (open, ']', 200000, "");
  Deep t = {text, strlen (text)};
  run_deep (&t);
  CU_ASSERT_TRUE (t.decode_refused);
  CU_ASSERT_TRUE (t.check_refused);
  CU_ASSERT_PTR_NOT_NULL (t.message && strstr (t.message, "must be a JSON object"));
  g_free (t.message);

  /* Deep inside a valid prefix, where a feature's value may be an array: the limit, by name. */
  g_autofree char *inner = repeat ("{\"items\": [{\"features\": {\"x\": ", '[', 100000, "");
  Deep u = {inner, strlen (inner)};
  run_deep (&u);
  CU_ASSERT_TRUE (u.decode_refused);
  CU_ASSERT_TRUE (u.check_refused);
  CU_ASSERT_PTR_NOT_NULL (u.message && strstr (u.message, "items[0].features.x"));
  g_free (u.message);

  /* Objects: {"items": [{"features": {"x": {"a": {"a": ... */
  GString *objs = g_string_new ("{\"items\": [{\"features\": {\"x\": ");
  for (guint i = 0; i < 100000; i++)
    g_string_append (objs, "{\"ids\": ");
  Deep v = {objs->str, objs->len};
  run_deep (&v);
  CU_ASSERT_TRUE (v.decode_refused);
  CU_ASSERT_TRUE (v.check_refused);
  g_free (v.message);
  g_string_free (objs, TRUE);
}

/* max_depth itself: a one-member object holding a wrapper needs 6 levels, its list 7. */
static void
test_max_depth (void)
{
  const char *json = "{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"ids\": {\"ids\": [1]}}}}]}";
  SedpProtocolLimits six = {.max_depth = 6}, seven = {.max_depth = 7};
  expect_refusal (json, strlen (json), &six, SEDP_PROTOCOL_ERROR_LIMIT,
                  "JSON nested deeper than the limit of 6 levels (max_depth)");
  expect_ok (json, &seven, 1);
  /* The check for json-glib's users counts the same way. */
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_json_check_nesting (json, strlen (json), 6, &error));
  SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, "max_depth", "at byte 55");
  CU_ASSERT_TRUE (sedp_json_check_nesting (json, strlen (json), 7, NULL));
  /* Brackets inside strings, escaped quotes among them, are not nesting. */
  const char *strings = "{\"a\": \"[[[[\\\"[[[[\", \"b\": [\"]]]]\\\\\", [[1]]]}";
  CU_ASSERT_TRUE (sedp_json_check_nesting (strings, strlen (strings), 4, NULL));
  CU_ASSERT_FALSE (sedp_json_check_nesting (strings, strlen (strings), 3, NULL));
}

/* `sedp run`'s JSON Lines and the PredictRequest lines of request files go through json-glib:
 * the nesting check refuses first, with the file's place. */
static void
test_nesting_json_glib_paths (void)
{
  g_autofree char *deep = repeat ("{\"items\": ", '[', 100000, "");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_request_from_json (deep, -1, "f.jsonl:3", &error));
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "f.jsonl:3: ", "max_depth");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_request_from_predict_json (deep, strlen (deep), "f.jsonl:4", &error));
  SEDP_ASSERT_ERROR (error, SEDP_IO_ERROR, "f.jsonl:4: ", "max_depth");
  CU_ASSERT_FALSE (sedp_request_json_is_predict (deep, strlen (deep)));
}

/* ---- 2. limits, a test each ---- */

/* {"items": [{"id": 0}, ... n items]} */
static char *
items_json (guint n)
{
  GString *s = g_string_new ("{\"items\": [");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s{\"id\": %u}", i ? ", " : "", i);
  g_string_append (s, "]}");
  return g_string_free (s, FALSE);
}

static void
test_limit_items (void)
{
  SedpProtocolLimits l = {.max_items = 5};
  g_autofree char *five = items_json (5), *six = items_json (6);
  expect_ok (five, &l, 5);
  expect_refusal (six, strlen (six), &l, SEDP_PROTOCOL_ERROR_LIMIT,
                  "items: more than the limit of 5 items (max_items)");
}

/* One item with @n features named f0, f1, … (or the same name when @same). */
static char *
features_json (guint n, gboolean across_items)
{
  GString *s = g_string_new ("{\"items\": [");
  for (guint i = 0; i < n; i++) {
    if (across_items)
      g_string_append_printf (s, "%s{\"id\": %u, \"features\": {\"f%u\": 1}}", i ? ", " : "", i, i);
    else
      g_string_append_printf (s, "%s\"f%u\": 1", i ? ", " : "{\"id\": 1, \"features\": {", i);
  }
  g_string_append (s, across_items ? "]}" : "}}]}");
  return g_string_free (s, FALSE);
}

static void
test_limit_features (void)
{
  /* item_id is a column too: 9 features + item_id = 10 */
  SedpProtocolLimits l = {.max_features = 10};
  g_autofree char *nine = features_json (9, FALSE), *ten = features_json (10, FALSE);
  g_autofree char *spread = features_json (10, TRUE);
  expect_ok (nine, &l, 1);
  expect_refusal (ten, strlen (ten), &l, SEDP_PROTOCOL_ERROR_LIMIT,
                  "items: more than the limit of 10 distinct features (max_features)");
  /* distinct over all items, not per item */
  expect_refusal (spread, strlen (spread), &l, SEDP_PROTOCOL_ERROR_LIMIT, "(max_features)");
  /* the user's own */
  const char *user = "{\"user\": {\"id\": 1, \"features\": {\"a\": 1, \"b\": 2}}, \"items\": [{\"id\": 1}]}";
  SedpProtocolLimits two = {.max_features = 2};
  expect_refusal (user, strlen (user), &two, SEDP_PROTOCOL_ERROR_LIMIT,
                  "user: more than the limit of 2 distinct features");
}

static char *
list_json (const char *open, guint n, const char *element, const char *close)
{
  GString *s = g_string_new ("{\"items\": [{\"id\": 1, \"features\": {\"x\": ");
  g_string_append (s, open);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", element);
  g_string_append_printf (s, "%s}}]}", close);
  return g_string_free (s, FALSE);
}

static void
test_limit_values (void)
{
  SedpProtocolLimits l = {.max_values = 4};
  const char *shapes[][3] = {{"[", "7", "]"},  /* bare ids */
                             {"[", "0.5", "]"}, /* bare floats */
                             {"{\"ids\": [", "\"7\"", "]}"},
                             {"{\"floats\": {\"values\": [", "1.5", "]}}"}};
  for (guint k = 0; k < G_N_ELEMENTS (shapes); k++) {
    g_autofree char *four = list_json (shapes[k][0], 4, shapes[k][1], shapes[k][2]);
    g_autofree char *five = list_json (shapes[k][0], 5, shapes[k][1], shapes[k][2]);
    expect_ok (four, &l, 1);
    expect_refusal (five, strlen (five), &l, SEDP_PROTOCOL_ERROR_LIMIT,
                    "items[0].features.x: more than the limit of 4 values in one list (max_values)");
  }
}

static void
test_limit_strings (void)
{
  SedpProtocolLimits l = {.max_string_bytes = 8};
  expect_ok ("{\"request_id\": \"12345678\", \"items\": [{\"id\": 1, \"features\": "
             "{\"name5678\": \"value678\"}}]}", &l, 1);
  const char *cases[][2] = {
    {"{\"request_id\": \"123456789\", \"items\": [{\"id\": 1}]}", "request_id: a string of 9 bytes"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"name56789\": 1}}]}",
     "items[0].features: a string of 9 bytes, more than the limit of 8 (max_string_bytes)"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"s\": \"value6789\"}}]}",
     "items[0].features.s: a string of 9 bytes"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"s\": {\"string_value\": \"value6789\"}}}]}",
     "items[0].features.s.string_value: a string of 9 bytes"},
    /* escapes count as what they decode to: 9 bytes of "\u00e9" x 4 + 1 */
    {"{\"items\": [{\"id\": 1, \"features\": {\"s\": \"\\u00e9\\u00e9\\u00e9\\u00e9a\"}}]}",
     "a string of 9 bytes"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    expect_refusal (cases[k][0], strlen (cases[k][0]), &l, SEDP_PROTOCOL_ERROR_LIMIT, cases[k][1]);
}

static void
test_limit_decoded (void)
{
  /* 2 000 items of 100 distinct features each is 200 000 row slots: far over 1 MiB. */
  GString *s = g_string_new ("{\"items\": [");
  for (guint i = 0; i < 2000; i++) {
    g_string_append_printf (s, "%s{\"id\": %u, \"features\": {", i ? ", " : "", i);
    for (guint f = 0; f < 100; f++)
      g_string_append_printf (s, "%s\"f%u\": %u", f ? ", " : "", (i * 100 + f) % 1000, f);
    g_string_append (s, "}}");
  }
  g_string_append (s, "]}");
  SedpProtocolLimits small = {.max_decoded_bytes = 1 << 20};
  expect_refusal (s->str, s->len, &small, SEDP_PROTOCOL_ERROR_LIMIT,
                  "more than 1048576 bytes of memory to decode (max_decoded_bytes)");
  SedpProtocolLimits big = {.max_decoded_bytes = 256 << 20};
  expect_ok (s->str, &big, 2000);
  /* A list's ids are charged as they come. */
  g_autofree char *ids = list_json ("[", 60000, "123", "]");
  expect_refusal (ids, strlen (ids), &(SedpProtocolLimits) {.max_decoded_bytes = 100000},
                  SEDP_PROTOCOL_ERROR_LIMIT, "(max_decoded_bytes)");
  g_string_free (s, TRUE);
}

/* The protobuf decoder applies the same limits. */
static GBytes *
protobuf_with (guint n_ids, guint n_features, gsize name_len)
{
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  Sedp__Serving__Item item = SEDP__SERVING__ITEM__INIT;
  Sedp__Serving__Item *items[] = {&item};
  m.n_items = 1;
  m.items = items;
  g_autofree guint64 *ids = g_new0 (guint64, MAX (n_ids, 1));
  Sedp__Serving__IdList il = SEDP__SERVING__ID_LIST__INIT;
  il.n_ids = n_ids;
  il.ids = ids;
  Sedp__Serving__Feature f = SEDP__SERVING__FEATURE__INIT;
  f.value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
  f.ids = &il;
  g_autofree Sedp__Serving__Item__FeaturesEntry *fe = g_new0 (Sedp__Serving__Item__FeaturesEntry, n_features);
  g_autofree Sedp__Serving__Item__FeaturesEntry **fep = g_new0 (Sedp__Serving__Item__FeaturesEntry *, n_features);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (guint k = 0; k < n_features; k++) {
    sedp__serving__item__features_entry__init (&fe[k]);
    char *name = g_strdup_printf ("%0*u", (int) name_len, k);
    g_ptr_array_add (names, name);
    fe[k].key = name;
    fe[k].value = &f;
    fep[k] = &fe[k];
  }
  item.n_features = n_features;
  item.features = fep;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  guint8 *buf = g_malloc (len);
  sedp__serving__predict_request__pack (&m, buf);
  return g_bytes_new_take (buf, len);
}

static void
expect_pb (GBytes *pb, const SedpProtocolLimits *l, const char *needle)
{
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  gsize size;
  const guint8 *data = g_bytes_get_data (pb, &size);
  gboolean ok = sedp_protocol_decode_request_limited (data, size, NULL, SEDP_PROTOCOL_PROTOBUF, l,
                                                      NULL, &req, &error);
  if (needle == NULL) {
    CU_ASSERT_TRUE (ok);
    sedp_protocol_request_clear (&req);
    return;
  }
  CU_ASSERT_FALSE (ok);
  SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, needle);
  CU_ASSERT (error && error->code == SEDP_PROTOCOL_ERROR_LIMIT);
}

static void
test_limits_protobuf (void)
{
  g_autoptr (GBytes) ids5 = protobuf_with (5, 1, 3);
  expect_pb (ids5, &(SedpProtocolLimits) {.max_values = 5}, NULL);
  expect_pb (ids5, &(SedpProtocolLimits) {.max_values = 4},
             "items[0].features: more than the limit of 4 values in one list (max_values)");
  g_autoptr (GBytes) feats = protobuf_with (1, 10, 3);
  expect_pb (feats, &(SedpProtocolLimits) {.max_features = 11}, NULL); /* + item_id */
  expect_pb (feats, &(SedpProtocolLimits) {.max_features = 10}, "(max_features)");
  g_autoptr (GBytes) names = protobuf_with (1, 2, 9);
  expect_pb (names, &(SedpProtocolLimits) {.max_string_bytes = 9}, NULL);
  expect_pb (names, &(SedpProtocolLimits) {.max_string_bytes = 8},
             "a feature name of 9 bytes, more than the limit of 8 (max_string_bytes)");
  g_autoptr (GBytes) many = protobuf_with (60000, 1, 3);
  expect_pb (many, &(SedpProtocolLimits) {.max_decoded_bytes = 100000}, "(max_decoded_bytes)");
}

/* ---- 3. malformed JSON ---- */

static void
test_malformed_json (void)
{
  const char *cases[][2] = {
    {"", "invalid JSON"},
    {"{\"items\": [{\"id\": 1}]} x", "invalid JSON"},
    {"{\"items\": [{\"id\": 1}], \"items\": [{\"id\": 2}]}", "items: given twice"},
    {"{\"user\": {}, \"user\": {}, \"items\": [{\"id\": 1}]}", "user: given twice"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"int_value\": 1, \"float_value\": 2}}}]}",
     "items[0].features.x: expected one of int_value"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {}}}]}", "items[0].features.x: expected one of"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"ids\": {\"values\": [1]}}}}]}",
     "items[0].features.x.ids.values: unknown field (expected ids)"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"floats\": {}}}}]}",
     "items[0].features.x.floats: expected an array of numbers"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": [1, [2]]}}]}",
     "items[0].features.x: arrays may hold numbers only"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": [true]}}]}", "arrays may hold numbers only"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"ids\": [1, 2.5]}}}]}",
     "items[0].features.x.ids[1]: expected an unsigned 64-bit integer"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"floats\": [1, \"2\"]}}}]}",
     "items[0].features.x.floats[1]: expected a number"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": \"a\\u0000b\"}}]}", "NUL character"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"a\\u0000\": 1}}]}", "items[0].features: a string holds a NUL"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": {\"int_value\": 9223372036854775808}}}]}",
     "items[0].features.x.int_value: expected an integer"},
    {"{\"items\": [{\"id\": 18446744073709551616}]}", "items[0].id: expected an unsigned"},
    {"{\"items\": [{\"id\": 9223372036854775808}]}", "does not fit the int64 column item_id"},
    {"{\"top_k\": 1.5, \"items\": [{\"id\": 1}]}", "top_k: expected an integer"},
    {"{\"top_k\": 4294967296, \"items\": [{\"id\": 1}]}", "top_k: 4294967296 is out of range"},
    {"{\"items\": [1]}", "items[0]: expected an object with id, features and escore"},
    {"{\"items\": {}}", "items: expected an array of items"},
    {"{\"user\": [], \"items\": [{\"id\": 1}]}", "user: expected an object with id and features"},
    {"{\"user\": {\"age\": 1}, \"items\": [{\"id\": 1}]}", "user.age: unknown field (expected id, features)"},
    {"{\"items\": [{\"id\": 1, \"features\": []}]}", "items[0].features: expected an object of features"},
    {"\"items\"", "must be a JSON object"},
    {"{\"items\": [{\"id\": 1, \"features\": {\"x\": \"\xff\"}}]}", "invalid JSON"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    expect_refusal (cases[k][0], strlen (cases[k][0]), NULL, SEDP_PROTOCOL_ERROR_INVALID,
                    cases[k][1]);
}

/* ---- 4. numbers ---- */

static float
decoded_float (const char *literal)
{
  g_autofree char *json = g_strdup_printf ("{\"items\": [{\"id\": 1, \"features\": {\"x\": %s}}]}",
                                           literal);
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (decode (json, strlen (json), NULL, NULL, &req, &error));
  const SedpColumn *x = sedp_frame_get_column (req.items, "x");
  CU_ASSERT_PTR_NOT_NULL_FATAL (x);
  float v = sedp_column_get_column_type (x) == SEDP_COLUMN_FLOAT32
                ? sedp_column_get_float32 (x)[0]
                : (float) (double) sedp_column_get_int64 (x)[0];
  sedp_protocol_request_clear (&req);
  return v;
}

static void
test_numbers (void)
{
  GRand *r = g_rand_new_with_seed (7);
  for (guint k = 0; k < 3000; k++) {
    char lit[64];
    guint form = k % 4;
    double m = g_rand_double_range (r, -1e6, 1e6);
    if (form == 0)
      g_snprintf (lit, sizeof lit, "%.*f", g_rand_int_range (r, 0, 17), m);
    else if (form == 1)
      g_snprintf (lit, sizeof lit, "%.17g", m);
    else if (form == 2)
      g_snprintf (lit, sizeof lit, "%.6e", m * pow (10, g_rand_int_range (r, -40, 40)));
    else
      g_snprintf (lit, sizeof lit, "0.%0*u", g_rand_int_range (r, 1, 24), g_rand_int (r));
    float want = (float) g_ascii_strtod (lit, NULL); /* the reference: strtod, then to float */
    float got = decoded_float (lit);
    if (memcmp (&want, &got, sizeof want) != 0)
      fprintf (stderr, "\n  %s: %.9g, strtod says %.9g\n", lit, got, want);
    CU_ASSERT_EQUAL (memcmp (&want, &got, sizeof want), 0);
  }
  g_rand_free (r);
  /* ids at the edges: as strings (proto3 JSON) and as numbers */
  const char *json = "{\"user\": {\"id\": 1, \"features\": {\"h\": {\"ids\": [\"18446744073709551615\", "
                     "18446744073709551615, 9223372036854775807, 0]}, \"n\": -9223372036854775808}},"
                     " \"items\": [{\"id\": \"9223372036854775807\"}]}";
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpFrame) rf = sedp_frame_new (1);
  CU_ASSERT_TRUE_FATAL (decode (json, strlen (json), NULL, rf, &req, &error));
  guint n = 0;
  const guint64 *ids = sedp_column_get_ids (sedp_frame_get_column (rf, "h"), 0, &n);
  CU_ASSERT_EQUAL_FATAL (n, 4);
  CU_ASSERT (ids[0] == G_MAXUINT64 && ids[1] == G_MAXUINT64 && ids[2] == G_MAXINT64 && ids[3] == 0);
  CU_ASSERT_EQUAL (sedp_column_get_int64 (sedp_frame_get_column (rf, "n"))[0], G_MININT64);
  CU_ASSERT_EQUAL (sedp_column_get_int64 (sedp_frame_get_column (req.items, "item_id"))[0], G_MAXINT64);
  sedp_protocol_request_clear (&req);
}

/* A bare list turns from ids into floats at its first non-integer, keeping what came before. */
static void
test_bare_list_turns_float (void)
{
  const char *json = "{\"items\": [{\"id\": 1, \"features\": {\"v\": [1, 2, 0.5], \"w\": [3, 4]}},"
                     " {\"id\": 2, \"features\": {\"v\": [3, 4, 5], \"w\": [5, 6]}}]}";
  SedpProtocolRequest req;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (decode (json, strlen (json), NULL, NULL, &req, &error));
  const SedpColumn *v = sedp_frame_get_column (req.items, "v");
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (v), SEDP_COLUMN_FLOAT32);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_width (v), 3);
  const float *f = sedp_column_get_float32 (v);
  const float want[] = {1, 2, 0.5f, 3, 4, 5};
  CU_ASSERT_EQUAL (memcmp (f, want, sizeof want), 0);
  const SedpColumn *w = sedp_frame_get_column (req.items, "w");
  CU_ASSERT_EQUAL (sedp_column_get_column_type (w), SEDP_COLUMN_IDLIST);
  sedp_protocol_request_clear (&req);
}

/* ---- 5. peek ---- */

static void
test_peek (void)
{
  const char *json = "{\"x\": \"\\\"request_id\\\": \\\"no\\\"\", \"items\": [{\"request_id\": \"no\"}],"
                     " \"request_id\": \"yes\", \"deadline_ms\": 250}";
  SedpProtocolPeek p;
  sedp_protocol_peek ((const guint8 *) json, strlen (json), SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_STRING_EQUAL (p.request_id, "yes");
  CU_ASSERT_EQUAL (p.deadline_ms, 250);
  g_free (p.request_id);
  const char *escaped = "{\"request_id\": \"a\\\\\", \"deadline_ms\": \"99\"}";
  sedp_protocol_peek ((const guint8 *) escaped, strlen (escaped), SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_PTR_NULL (p.request_id); /* escapes: left to the decoder */
  CU_ASSERT_EQUAL (p.deadline_ms, 99);
  const char *cut = "{\"request_id\": \"abc";
  sedp_protocol_peek ((const guint8 *) cut, strlen (cut), SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_PTR_NULL (p.request_id);
}

/* The peek is bounded: nothing read from a body that is not an object, nothing past the end of
 * the object, nothing past the default nesting limit (members after a too-deep value are not
 * looked for: the decoder refuses the request). */
static void
test_peek_bounded (void)
{
  SedpProtocolPeek p;
  const char *array = " [{\"request_id\": \"no\", \"deadline_ms\": 5}]";
  sedp_protocol_peek ((const guint8 *) array, strlen (array), SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_PTR_NULL (p.request_id);
  CU_ASSERT_EQUAL (p.deadline_ms, 0);
  const char *after = "{\"items\": []} {\"request_id\": \"no\", \"deadline_ms\": 5}";
  sedp_protocol_peek ((const guint8 *) after, strlen (after), SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_PTR_NULL (p.request_id);
  CU_ASSERT_EQUAL (p.deadline_ms, 0);
  g_autoptr (GString) deep = g_string_new ("{\"deadline_ms\": 7, \"x\": ");
  for (guint i = 0; i < SEDP_PROTOCOL_DEFAULT_MAX_DEPTH; i++)
    g_string_append_c (deep, '[');
  for (guint i = 0; i < SEDP_PROTOCOL_DEFAULT_MAX_DEPTH; i++)
    g_string_append_c (deep, ']');
  g_string_append (deep, ", \"request_id\": \"late\"}");
  sedp_protocol_peek ((const guint8 *) deep->str, deep->len, SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_EQUAL (p.deadline_ms, 7);
  CU_ASSERT_PTR_NULL (p.request_id);
  /* one level less: within the limit, the whole object is read */
  g_string_erase (deep, strlen ("{\"deadline_ms\": 7, \"x\": "), 1);
  g_string_erase (deep, deep->len - strlen (", \"request_id\": \"late\"}") - 1, 1);
  sedp_protocol_peek ((const guint8 *) deep->str, deep->len, SEDP_PROTOCOL_JSON, &p);
  CU_ASSERT_STRING_EQUAL (p.request_id, "late");
  g_free (p.request_id);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("limits", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_deep_nesting);
  T (test_max_depth);
  T (test_nesting_json_glib_paths);
  T (test_limit_items);
  T (test_limit_features);
  T (test_limit_values);
  T (test_limit_strings);
  T (test_limit_decoded);
  T (test_limits_protobuf);
  T (test_malformed_json);
  T (test_numbers);
  T (test_bare_list_turns_float);
  T (test_peek);
  T (test_peek_bounded);
  CU_basic_set_mode (CU_BRM_VERBOSE);
  CU_basic_run_tests ();
  guint failed = CU_get_number_of_failures ();
  CU_cleanup_registry ();
  return failed ? 1 : 0;
}
