/* sedp tests — request files of `sedp run`: the JSON Lines reader's column typing across items,
 * protobuf request logs (length-delimited PredictRequests), format detection, replay through
 * data_reader, and corrupt logs. */
#include "../runtime/runtime-helpers.h"

#include "io/protocol.h"
#include "io/request-file.h"
#include "runtime/runtime-private.h"

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
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  int status = sedp_test_run ();
  g_clear_pointer (&test_registry, sedp_registry_free);
  return status;
}
