/* sedp tests — `sedp run --trace` (docs/observability.md): the file is a Chrome trace (the Trace
 * Event Format, read back with json-glib), one queue wait and one process event per stage for
 * each sampled request, times monotone per lane, every lane named; bad options refused. */
#include "test-common.h"
#include "test-spawn.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

static const char *const stages[] = {"reader", "work", "score"};

/* reader (request scope) → work (items, two workers, 2 ms a call) → score (items). */
static const char *pipeline_text =
    "[pipeline]\nname = traced\nmode = %s\n"
    "[stage reader]\nplugin = data_reader\n"
    "[stage work]\nplugin = synthetic_work\nafter = reader\nparallelism = 2\nsleep_us = 2000\n"
    "[stage score]\nplugin = synthetic_work\nafter = work\noutput = score\n";

typedef struct {
  GHashTable *lanes;  /* tid → name */
  GHashTable *events; /* "REQUEST STAGE KIND" → count */
  GHashTable *last;   /* tid → last ts (boxed gint64) */
  guint n_x;
  gboolean bad_times;
} Seen;

static void
seen_event (Seen *s, JsonObject *e)
{
  const char *ph = json_object_get_string_member (e, "ph");
  gint64 tid = json_object_get_int_member (e, "tid");
  if (strcmp (ph, "M") == 0) {
    if (strcmp (json_object_get_string_member (e, "name"), "thread_name") == 0)
      g_hash_table_insert (s->lanes, GINT_TO_POINTER ((gint) tid),
                           g_strdup (json_object_get_string_member (
                               json_object_get_object_member (e, "args"), "name")));
    return;
  }
  CU_ASSERT_STRING_EQUAL (ph, "X");
  s->n_x++;
  gint64 ts = json_object_get_int_member (e, "ts"), dur = json_object_get_int_member (e, "dur");
  gint64 *last = g_hash_table_lookup (s->last, GINT_TO_POINTER ((gint) tid));
  if (dur < 0 || ts < 0 || (last && ts < *last))
    s->bad_times = TRUE;
  if (last == NULL) {
    last = g_new (gint64, 1);
    g_hash_table_insert (s->last, GINT_TO_POINTER ((gint) tid), last);
  }
  *last = ts;
  JsonObject *args = json_object_get_object_member (e, "args");
  CU_ASSERT (json_object_get_int_member (args, "batch") >= 1);
  CU_ASSERT (json_object_get_int_member (args, "rows") >= 1);
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (args, "pipeline"), "traced");
  g_autofree char *key = g_strdup_printf ("%s %s %s", json_object_get_string_member (args, "request_id"),
                                          json_object_get_string_member (args, "stage"),
                                          json_object_get_string_member (e, "cat"));
  guint count = GPOINTER_TO_UINT (g_hash_table_lookup (s->events, key));
  g_hash_table_insert (s->events, g_steal_pointer (&key), GUINT_TO_POINTER (count + 1));
  /* Every event's lane is named (the names come first in the file). */
  const char *lane = g_hash_table_lookup (s->lanes, GINT_TO_POINTER ((gint) tid));
  CU_ASSERT_PTR_NOT_NULL (lane);
  if (lane)
    CU_ASSERT_PTR_NOT_NULL (strstr (lane, "traced/"));
}

/* Runs 9 requests (2 items each) through the pipeline in @mode, tracing one in 3: requests 1, 4
 * and 7 each have one queue wait and one process event per stage, the others none. */
static void
run_traced (const char *mode)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-trace-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "p.pipeline", NULL);
  g_autofree char *reqs = g_build_filename (dir, "r.jsonl", NULL);
  g_autofree char *trace = g_build_filename (dir, "trace.json", NULL);
  g_autofree char *text = g_strdup_printf (pipeline_text, mode);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (conf, text, -1, NULL));
  g_autoptr (GString) r = g_string_new (NULL);
  for (guint i = 1; i <= 9; i++)
    g_string_append_printf (r, "{\"id\": \"r%u\", \"items\": [{\"item_id\": 1}, {\"item_id\": 2}]}\n", i);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (reqs, r->str, -1, NULL));
  g_auto (SedpTestRun) run = {0};
  /* One in flight at a time: submission order is input order. */
  sedp_test_spawn (&run, NULL, "run", conf, "--requests", reqs, "--max-inflight", "1", "--trace",
                   trace, "--trace-sample", "3", NULL);
  SEDP_ASSERT_EXIT (run, 0);
  CU_ASSERT_PTR_NOT_NULL (strstr (run.err, "trace of 3 sampled requests: 18 events written to "));
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  gboolean ok = json_parser_load_from_file (parser, trace, &error);
  if (!ok)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  CU_ASSERT_STRING_EQUAL (json_object_get_string_member (root, "displayTimeUnit"), "ms");
  JsonArray *events = json_object_get_array_member (root, "traceEvents");
  Seen s = {g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free),
            g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
            g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free), 0, FALSE};
  for (guint i = 0; i < json_array_get_length (events); i++)
    seen_event (&s, json_array_get_object_element (events, i));
  CU_ASSERT_FALSE (s.bad_times);
  CU_ASSERT_EQUAL (s.n_x, 3 * G_N_ELEMENTS (stages) * 2);
  for (guint i = 1; i <= 9; i++)
    for (guint k = 0; k < G_N_ELEMENTS (stages); k++)
      for (guint kind = 0; kind < 2; kind++) {
        g_autofree char *key = g_strdup_printf ("r%u %s %s", i, stages[k], kind ? "process" : "queue");
        guint n = GPOINTER_TO_UINT (g_hash_table_lookup (s.events, key));
        if (n != (i % 3 == 1 ? 1u : 0u))
          fprintf (stderr, "\n  %s mode: %u events '%s'\n", mode, n, key);
        CU_ASSERT_EQUAL (n, i % 3 == 1 ? 1u : 0u);
      }
  g_hash_table_unref (s.lanes);
  g_hash_table_unref (s.events);
  g_hash_table_unref (s.last);
  g_unlink (conf);
  g_unlink (reqs);
  g_unlink (trace);
  g_rmdir (dir);
}

static void
test_trace_staged (void)
{
  run_traced ("staged");
}

static void
test_trace_sync (void)
{
  run_traced ("sync");
}

/* --trace-sample below 1, and a trace file that cannot be written: one clear error each. */
static void
test_trace_errors (void)
{
  g_auto (SedpTestRun) a = {0};
  sedp_test_spawn (&a, NULL, "run", "x.pipeline", "--requests", "x.jsonl", "--trace", "t.json",
                   "--trace-sample", "0", NULL);
  SEDP_ASSERT_EXIT (a, 2);
  CU_ASSERT_PTR_NOT_NULL (strstr (a.err, "--trace-sample must be 1 or more (one request in N is traced), not 0"));
  g_autofree char *dir = g_dir_make_tmp ("sedp-trace-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "p.pipeline", NULL);
  g_autofree char *reqs = g_build_filename (dir, "r.jsonl", NULL);
  g_autofree char *text = g_strdup_printf (pipeline_text, "staged");
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (conf, text, -1, NULL));
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (reqs, "{\"id\": \"a\", \"items\": [{\"item_id\": 1}]}\n", -1, NULL));
  g_auto (SedpTestRun) b = {0};
  sedp_test_spawn (&b, NULL, "run", conf, "--requests", reqs, "--trace", "/nonexistent/t.json", NULL);
  SEDP_ASSERT_EXIT (b, 2);
  CU_ASSERT_PTR_NOT_NULL (strstr (b.err, "/nonexistent/t.json: cannot write the trace: No such file or directory"));
  g_unlink (conf);
  g_unlink (reqs);
  g_rmdir (dir);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("trace", NULL, NULL);
  if (CU_add_test (s, "test_trace_staged", test_trace_staged) == NULL ||
      CU_add_test (s, "test_trace_sync", test_trace_sync) == NULL ||
      CU_add_test (s, "test_trace_errors", test_trace_errors) == NULL)
    return 1;
  return sedp_test_run ();
}
