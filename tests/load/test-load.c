/* sedp load generator tests (core/load): Poisson arrivals, the workload and its protobuf
 * encoding, open-loop latency counted from the scheduled send, max_in_flight and refusals, the
 * capacity search on an in-process pipeline of known capacity, the HTTP client against a loopback
 * server (Content-Length, chunked, cut short, garbage, 503, timeout, refused), and `sedp bench`'s
 * staircase and option errors. The pipelines sleep rather than spin, so that a busy 2-core
 * machine changes the figures little; the bounds are wide. */
#include "test-spawn.h"

#include "dsl/spec.h"
#include "graph/graph.h"
#include "load/arrivals.h"
#include "load/capacity.h"
#include "load/report.h"
#include "runtime/pipeline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sedp/protocol.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* One stage that sleeps 2 ms per call, one request per call, one worker: about 500 requests/s. */
static const char slow_pipeline[] = "[pipeline]\n"
                                    "name = slow\n"
                                    "deadline_ms = 20000\n"
                                    "frame_rows = 64\n"
                                    "[stage reader]\n"
                                    "plugin = data_reader\n"
                                    "[stage work]\n"
                                    "plugin = synthetic_work\n"
                                    "after = reader\n"
                                    "parallelism = 1\n"
                                    "batch = 1\n"
                                    "sleep_us = 2000\n"
                                    "output = score\n";

/* Answers at once (a few µs of work). */
static const char fast_pipeline[] = "[pipeline]\n"
                                    "name = fast\n"
                                    "deadline_ms = 20000\n"
                                    "[stage reader]\n"
                                    "plugin = data_reader\n"
                                    "[stage work]\n"
                                    "plugin = synthetic_work\n"
                                    "after = reader\n"
                                    "spin_us = 1\n"
                                    "output = score\n";

static gboolean
under_valgrind (void)
{
  return g_getenv ("SEDP_VALGRIND") != NULL;
}

/* A started pipeline from @text, and the registry its plugins came from. */
typedef struct {
  SedpRegistry *registry;
  SedpPipeline *pipeline;
} TestPipeline;

static void
test_pipeline_start (TestPipeline *t, const char *text)
{
  g_autoptr (GError) error = NULL;
  const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
  t->registry = sedp_registry_new (dirs);
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, t->registry, &error) : NULL;
  t->pipeline = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (t->pipeline)
    sedp_pipeline_start (t->pipeline, &error);
  if (error)
    fprintf (stderr, "\n  pipeline error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t->pipeline);
}

static void
test_pipeline_stop (TestPipeline *t)
{
  sedp_pipeline_free (t->pipeline);
  sedp_registry_free (t->registry);
}

/* An open-loop configuration at @rate for @seconds. */
static SedpLoadgenConfig
open_config (double rate, double seconds)
{
  SedpLoadgenConfig c;
  sedp_loadgen_config_init (&c);
  c.mode = SEDP_LOADGEN_OPEN;
  c.rate = rate;
  c.duration_s = seconds;
  return c;
}

/* Runs @c on @pipeline_text with the built-in request; fails the test when the run fails. */
static SedpLoadgenResults *
run_on (const char *pipeline_text, const SedpLoadgenConfig *c)
{
  TestPipeline t;
  test_pipeline_start (&t, pipeline_text);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, &error);
  SedpLoadgen *gen = sedp_loadgen_new_pipeline (t.pipeline, w);
  SedpLoadgenResults *r = sedp_loadgen_run (gen, c, &error);
  if (error)
    fprintf (stderr, "\n  run error: %s\n", error->message);
  sedp_loadgen_free (gen);
  test_pipeline_stop (&t);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  return r;
}

/* Every request due is answered OK or failed, once. */
static void
assert_accounted (const SedpLoadgenResults *r)
{
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (r);
  CU_ASSERT_EQUAL (c->arrivals, c->ok + sedp_loadgen_results_get_errors (r));
  CU_ASSERT_EQUAL (c->sent, c->arrivals - c->failures[SEDP_LOADGEN_FAILURE_UNSENT]);
  guint n;
  sedp_loadgen_results_get_latencies_us (r, &n);
  CU_ASSERT_EQUAL (n, c->ok);
}

/* ---- arrivals ---- */

/* 20 000 gaps at 1000/s with a fixed seed: mean 1 ms within 3 %, coefficient of variation 1
 * within 3 % (an exponential's), no negative gap; the schedule's span agrees with the rate. */
static void
test_poisson_gaps (void)
{
  const guint n = 20000;
  SedpArrivals *a = sedp_arrivals_new (1000, 7, 0);
  double sum = 0, sum2 = 0, min = 1;
  for (guint i = 0; i < n; i++) {
    double g = sedp_arrivals_draw_gap (a);
    sum += g;
    sum2 += g * g;
    min = MIN (min, g);
  }
  double mean = sum / n, sd = sqrt (sum2 / n - mean * mean);
  CU_ASSERT_DOUBLE_EQUAL (mean, 0.001, 0.00003);
  CU_ASSERT_DOUBLE_EQUAL (sd / mean, 1.0, 0.03);
  CU_ASSERT (min >= 0);
  gint64 last = 0;
  for (guint i = 0; i < n; i++) {
    gint64 t = sedp_arrivals_next (a);
    CU_ASSERT (t >= last);
    last = t;
  }
  CU_ASSERT_DOUBLE_EQUAL ((double) last / n, 1000.0, 30.0);
  sedp_arrivals_free (a);
}

/* The same seed gives the same schedule; another seed another one. */
static void
test_poisson_seeded (void)
{
  SedpArrivals *a = sedp_arrivals_new (250, 42, 1000), *b = sedp_arrivals_new (250, 42, 1000),
               *c = sedp_arrivals_new (250, 43, 1000);
  guint same = 0, differ = 0;
  for (guint i = 0; i < 1000; i++) {
    gint64 ta = sedp_arrivals_next (a), tb = sedp_arrivals_next (b), tc = sedp_arrivals_next (c);
    same += ta == tb;
    differ += ta != tc;
  }
  CU_ASSERT_EQUAL (same, 1000);
  CU_ASSERT (differ > 900);
  sedp_arrivals_free (a);
  sedp_arrivals_free (b);
  sedp_arrivals_free (c);
}

/* ---- the workload ---- */

static const char rich_request[] =
  "{\"request_id\": \"q1\", \"deadline_ms\": 300, \"top_k\": 2, \"user\": {\"id\": 7, \"features\": "
  "{\"age\": {\"int_value\": 31}, \"hist\": {\"ids\": [3, 4, 5]}}}, \"items\": ["
  "{\"id\": 10, \"escore\": 0.5, \"features\": {\"ctr\": 0.25, \"cat\": \"x\", \"v\": [0.5, 1.5]}}, "
  "{\"id\": 11, \"escore\": 0.125, \"features\": {\"ctr\": {\"float_value\": 0.75}, \"cat\": "
  "{\"string_value\": \"y\"}, \"v\": {\"floats\": {\"values\": [1.0, 2.0]}}}}]}";

static void
assert_same_column (const SedpColumn *a, const SedpColumn *b)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  SedpColumnType t = sedp_column_get_column_type (a);
  CU_ASSERT_EQUAL (t, sedp_column_get_column_type (b));
  CU_ASSERT_EQUAL (sedp_column_get_width (a), sedp_column_get_width (b));
  guint n = sedp_column_get_n_rows (a) * sedp_column_get_width (a);
  if (t == SEDP_COLUMN_FLOAT32)
    CU_ASSERT (memcmp (sedp_column_get_float32 (a), sedp_column_get_float32 (b), n * 4) == 0);
  if (t == SEDP_COLUMN_INT64)
    CU_ASSERT (memcmp (sedp_column_get_int64 (a), sedp_column_get_int64 (b), n * 8) == 0);
}

static void
assert_same_frame (const SedpFrame *a, const SedpFrame *b)
{
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (a), sedp_frame_get_n_rows (b));
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_columns (a), sedp_frame_get_n_columns (b));
  for (guint i = 0; i < sedp_frame_get_n_columns (a); i++) {
    const SedpColumn *c = sedp_frame_get_column_at (a, i);
    assert_same_column (c, sedp_frame_get_column (b, sedp_column_get_name (c)));
  }
}

/* Decodes workload @w's request 0 as the server's decoder would; @user gets the user row. */
static void
decode (SedpWorkload *w, SedpFrame *user, SedpProtocolRequest *out)
{
  g_autoptr (GError) error = NULL;
  gsize n;
  const guint8 *p = g_bytes_get_data (sedp_workload_get_body (w, 0, NULL), &n);
  gboolean ok = sedp_protocol_decode_request (p, n, sedp_workload_get_content_type (w),
                                              SEDP_PROTOCOL_AUTO, 0, user, out, &error);
  if (!ok)
    fprintf (stderr, "\n  decode: %s\n", error->message);
  CU_ASSERT_FATAL (ok);
}

/* A request encoded as protobuf decodes to what its JSON decodes to. */
static void
test_workload_protobuf (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) js = sedp_workload_new (SEDP_WORKLOAD_JSON);
  g_autoptr (SedpWorkload) pb = sedp_workload_new (SEDP_WORKLOAD_PROTOBUF);
  CU_ASSERT_TRUE (sedp_workload_add_json (js, rich_request, "rich", &error));
  CU_ASSERT_TRUE (sedp_workload_add_json (pb, rich_request, "rich", &error));
  CU_ASSERT_STRING_EQUAL (sedp_workload_get_content_type (pb), SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
  SedpFrame *uj = sedp_frame_new (1), *up = sedp_frame_new (1);
  SedpProtocolRequest rj = {0}, rp = {0};
  decode (js, uj, &rj);
  decode (pb, up, &rp);
  CU_ASSERT_STRING_EQUAL (rj.request_id, rp.request_id);
  CU_ASSERT_EQUAL (rp.deadline_ms, 300);
  CU_ASSERT_EQUAL (rp.top_k, 2);
  assert_same_frame (rj.items, rp.items);
  assert_same_frame (uj, up);
  guint n_items;
  sedp_workload_get_body (pb, 0, &n_items);
  CU_ASSERT_EQUAL (n_items, 2);
  sedp_protocol_request_clear (&rj);
  sedp_protocol_request_clear (&rp);
  sedp_frame_unref (uj);
  sedp_frame_unref (up);
}

/* A file: comments and blank lines skipped, each bad line named FILE:LINE, an empty file refused. */
static void
test_workload_file (void)
{
  g_autofree char *dir = sedp_test_make_tmp_dir ("load-XXXXXX");
  g_autofree char *good = g_build_filename (dir, "good.jsonl", NULL);
  g_autofree char *bad = g_build_filename (dir, "bad.jsonl", NULL);
  g_autofree char *empty = g_build_filename (dir, "empty.jsonl", NULL);
  g_autofree char *text = g_strdup_printf ("# two requests\n\n%s\n{\"items\": [{\"id\": 1}]}\n", rich_request);
  sedp_test_write_file (good, text, -1);
  sedp_test_write_file (bad, "{\"items\": []}\n[1, 2]\n", -1);
  sedp_test_write_file (empty, "# nothing\n\n", -1);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (good, SEDP_WORKLOAD_PROTOBUF, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (w);
  CU_ASSERT_EQUAL (sedp_workload_get_n_requests (w), 2);
  CU_ASSERT_PTR_NULL (sedp_workload_load (bad, SEDP_WORKLOAD_JSON, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "bad.jsonl:2", "must be a JSON object");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_workload_load (empty, SEDP_WORKLOAD_JSON, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "empty.jsonl", "no requests");
  g_clear_error (&error);
  g_autoptr (SedpWorkload) b = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, &error);
  guint n_items;
  sedp_workload_get_body (b, 0, &n_items);
  CU_ASSERT_EQUAL (n_items, 8);
  sedp_test_remove_tree (dir);
}

/* ---- configuration ---- */

static void
assert_config_error (const SedpLoadgenConfig *c, const char *needle)
{
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_loadgen_config_check (c, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, needle);
}

static void
test_config_check (void)
{
  SedpLoadgenConfig c = open_config (0, 1);
  assert_config_error (&c, "rate 0");
  c = open_config (-3, 1);
  assert_config_error (&c, "rate -3");
  c = open_config (10, 0);
  assert_config_error (&c, "duration_s 0");
  c = open_config (10, 1);
  c.max_in_flight = 0;
  assert_config_error (&c, "max_in_flight 0");
  sedp_loadgen_config_init (&c);
  c.concurrency = 0;
  assert_config_error (&c, "concurrency 0");
  c.concurrency = 1;
  CU_ASSERT_TRUE (sedp_loadgen_config_check (&c, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, NULL);
  CU_ASSERT_PTR_NULL (sedp_loadgen_new_http ("ftp://x/y", w, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "ftp://x/y", "http://HOST:PORT");
}

/* ---- open loop, in process ---- */

/* Under capacity (100/s against ~500/s): everything answered, latency about the service time,
 * the RESULT lines of the open loop. */
static void
test_open_loop_light (void)
{
  SedpLoadgenConfig c = open_config (100, 0.5);
  g_autoptr (SedpLoadgenResults) r = run_on (slow_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_errors (r), 0);
  CU_ASSERT (k->ok >= 20 && k->ok <= 90);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_status_count (r, "ok"), k->ok);
  CU_ASSERT_DOUBLE_EQUAL (sedp_loadgen_results_get_answered_share (r), 1.0, 1e-9);
  CU_ASSERT (sedp_loadgen_results_get_latency_ms (r, 0.5) >= 1.9);
  if (!under_valgrind ())
    CU_ASSERT (sedp_loadgen_results_get_latency_ms (r, 0.5) < 20);
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_loadgen_results_format (r, "x_", out);
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_rate=100.0 x_duration_s=0.5\n");
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_offered_rps=");
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_errors=0\n");
  SEDP_ASSERT_CONTAINS (out->str, "x_errors_unsent=0");
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_answered_share=1.0000\n");
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_late_sends=");
  SEDP_ASSERT_CONTAINS (out->str, "RESULT x_status_ok=");
}

/* Over capacity (1000/s against ~500/s for 0.4 s): the queue grows, and the latencies, counted
 * from the scheduled sends, grow far beyond the 2 ms of service (the last ones by ~200 ms). */
static void
test_latency_from_schedule (void)
{
  SedpLoadgenConfig c = open_config (1000, 0.4);
  g_autoptr (SedpLoadgenResults) r = run_on (slow_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_errors (r), 0);
  CU_ASSERT (k->sent > 280 && k->sent < 520);
  double p50 = sedp_loadgen_results_get_latency_ms (r, 0.5), p99 = sedp_loadgen_results_get_latency_ms (r, 0.99);
  if (p99 < 80)
    fprintf (stderr, "\n  p50 %.3f ms, p99 %.3f ms: the queueing is not counted\n", p50, p99);
  CU_ASSERT (p50 > 20);
  CU_ASSERT (p99 > 80);
  /* The drain: answered after the sending stopped, at the pipeline's pace. */
  CU_ASSERT (k->wall_s > k->duration_s + 0.1);
}

/* Stalls the generator's thread for 300 ms at its first progress report. */
static void
stall_once (const SedpLoadgenProgress *p, gpointer data)
{
  gboolean *stalled = data;
  (void) p;
  if (!*stalled)
    g_usleep (300000);
  *stalled = TRUE;
}

/* The generator itself falls behind (stalled 300 ms at 1 s): the requests due meanwhile are sent
 * late, at once, and their latency counts from when they were due (no coordinated omission). */
static void
test_late_sends_counted (void)
{
  SedpLoadgenConfig c = open_config (200, 1.2);
  gboolean stalled = FALSE;
  c.progress = stall_once;
  c.progress_data = &stalled;
  g_autoptr (SedpLoadgenResults) r = run_on (fast_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT_TRUE (stalled);
  CU_ASSERT (k->late_sends >= 30);
  guint n;
  const gint64 *lat = sedp_loadgen_results_get_latencies_us (r, &n);
  CU_ASSERT_FATAL (n > 0);
  CU_ASSERT (lat[n - 1] >= 250000);
  CU_ASSERT (sedp_loadgen_results_get_latency_ms (r, 0.5) < 50);
}

/* max_in_flight 4 at 2000/s on the slow pipeline: the arrivals beyond 4 in flight are not sent,
 * and are counted apart. */
static void
test_max_in_flight (void)
{
  SedpLoadgenConfig c = open_config (2000, 0.3);
  c.max_in_flight = 4;
  g_autoptr (SedpLoadgenResults) r = run_on (slow_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT (k->failures[SEDP_LOADGEN_FAILURE_UNSENT] > 100);
  CU_ASSERT (k->ok > 20);
  CU_ASSERT (k->sent < k->arrivals);
  SEDP_ASSERT_CONTAINS (sedp_loadgen_results_get_first_error (r), "max_in_flight");
}

/* The slow pipeline with queues of 2: it refuses at entry (OVERLOADED) once they are full. */
static const char refusing_pipeline[] = "[pipeline]\n"
                                        "name = refusing\n"
                                        "deadline_ms = 20000\n"
                                        "[stage reader]\n"
                                        "plugin = data_reader\n"
                                        "queue_capacity = 2\n"
                                        "[stage work]\n"
                                        "plugin = synthetic_work\n"
                                        "after = reader\n"
                                        "batch = 1\n"
                                        "queue_capacity = 2\n"
                                        "sleep_us = 2000\n"
                                        "output = score\n";

/* 2000/s against queues of 2: the refusals at entry are counted as refused, by status. */
static void
test_refused (void)
{
  SedpLoadgenConfig c = open_config (2000, 0.3);
  g_autoptr (SedpLoadgenResults) r = run_on (refusing_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT (k->failures[SEDP_LOADGEN_FAILURE_REFUSED] > 100);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_status_count (r, "overloaded"),
                   k->failures[SEDP_LOADGEN_FAILURE_REFUSED]);
  CU_ASSERT_EQUAL (k->failures[SEDP_LOADGEN_FAILURE_UNSENT], 0);
  CU_ASSERT (k->ok > 20);
}

/* The closed loop still works through the library: clients × one request in flight. */
static void
test_closed_loop (void)
{
  SedpLoadgenConfig c;
  sedp_loadgen_config_init (&c);
  c.concurrency = 2;
  c.duration_s = 0.3;
  g_autoptr (SedpLoadgenResults) r = run_on (slow_pipeline, &c);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  assert_accounted (r);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_errors (r), 0);
  CU_ASSERT (k->ok > 40);
  CU_ASSERT_EQUAL (k->late_sends, 0);
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_loadgen_results_format (r, "", out);
  CU_ASSERT_PTR_NULL (strstr (out->str, "offered_rps"));
  SEDP_ASSERT_CONTAINS (out->str, "RESULT errors=0\n");
}

/* ---- the capacity search ---- */

static void
count_probe (guint probe, double rate, const SedpLoadgenResults *r, gboolean pass, gpointer data)
{
  (void) rate;
  (void) r;
  (void) pass;
  *(guint *) data = probe;
}

/* ~500 requests/s, an SLO of 50 ms, probes of 0.3 s: the capacity lands between 250 and 700. */
static void
test_find_capacity (void)
{
  TestPipeline t;
  test_pipeline_start (&t, slow_pipeline);
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, NULL);
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_pipeline (t.pipeline, w);
  SedpLoadgenConfig c = open_config (1, 0.3);
  c.concurrency = 2;
  SedpLoadgenSearch s;
  sedp_loadgen_search_init (&s);
  s.slo_p99_ms = 50;
  s.tolerance = 0.1;
  guint probes = 0;
  s.probe = count_probe;
  s.probe_data = &probes;
  g_autoptr (GError) error = NULL;
  SedpLoadgenCapacity cap;
  gboolean ok = sedp_loadgen_find_capacity (gen, &c, &s, &cap, &error);
  if (!ok)
    fprintf (stderr, "\n  find_capacity: %s\n", error->message);
  CU_ASSERT_TRUE (ok);
  fprintf (stderr, " [capacity %.1f/s, estimate %.1f/s, %u probes] ", cap.capacity_rps, cap.estimate_rps, cap.probes);
  CU_ASSERT_EQUAL (probes, cap.probes);
  CU_ASSERT (cap.probes >= 2 && cap.probes <= 12);
  CU_ASSERT_PTR_NOT_NULL (cap.results);
  if (cap.results)
    CU_ASSERT (sedp_loadgen_results_get_latency_ms (cap.results, 0.99) <= 50);
  if (!under_valgrind ())
    CU_ASSERT (cap.capacity_rps > 250 && cap.capacity_rps < 700);
  CU_ASSERT (cap.lowest_failing_rps > cap.capacity_rps);
  sedp_loadgen_capacity_clear (&cap);
  g_clear_pointer (&gen, sedp_loadgen_free);
  test_pipeline_stop (&t);
}

/* An SLO below the service time: no rate passes; the error says what the lowest probe had. */
static void
test_no_capacity (void)
{
  TestPipeline t;
  test_pipeline_start (&t, slow_pipeline);
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, NULL);
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_pipeline (t.pipeline, w);
  SedpLoadgenConfig c = open_config (1, 0.2);
  SedpLoadgenSearch s;
  sedp_loadgen_search_init (&s);
  s.slo_p99_ms = 0.5;
  s.start_rate = 100;
  s.max_probes = 2;
  g_autoptr (GError) error = NULL;
  SedpLoadgenCapacity cap;
  CU_ASSERT_FALSE (sedp_loadgen_find_capacity (gen, &c, &s, &cap, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "no rate met the SLO", "50 requests/s", "0.500 ms");
  CU_ASSERT_EQUAL (cap.capacity_rps, 0);
  CU_ASSERT_EQUAL (cap.probes, 2);
  sedp_loadgen_capacity_clear (&cap);
  g_clear_pointer (&gen, sedp_loadgen_free);
  test_pipeline_stop (&t);
}

/* The accept hook refuses every probe above 120 requests/s offered: the capacity stays under
 * it although the SLO passes far higher, and with every probe refused the error gives the
 * hook's reason. */
static char *
refuse_above_120 (const SedpLoadgenResults *r, gpointer data)
{
  (*(guint *) data)++;
  double offered = sedp_loadgen_results_get_offered_rps (r);
  return offered > 120 ? g_strdup_printf ("offered %.0f/s", offered) : NULL;
}

static void
test_capacity_accept (void)
{
  TestPipeline t;
  test_pipeline_start (&t, slow_pipeline);
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, NULL);
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_pipeline (t.pipeline, w);
  SedpLoadgenConfig c = open_config (1, 0.3);
  SedpLoadgenSearch s;
  sedp_loadgen_search_init (&s);
  s.slo_p99_ms = 50;
  s.start_rate = 40;
  s.tolerance = 0.1;
  guint asked = 0;
  s.accept = refuse_above_120;
  s.accept_data = &asked;
  g_autoptr (GError) error = NULL;
  SedpLoadgenCapacity cap;
  gboolean ok = sedp_loadgen_find_capacity (gen, &c, &s, &cap, &error);
  /* under valgrind the SLO itself may fail at 40/s: only the hook's bound is checked there */
  CU_ASSERT (cap.capacity_rps < 160);
  if (!under_valgrind ()) {
    CU_ASSERT_TRUE (ok);
    CU_ASSERT (asked >= 2);
    CU_ASSERT (cap.capacity_rps >= 40 && cap.lowest_failing_rps > cap.capacity_rps);
  }
  sedp_loadgen_capacity_clear (&cap);
  g_clear_error (&error);
  s.start_rate = 200;
  s.max_probes = 1;
  CU_ASSERT_FALSE (sedp_loadgen_find_capacity (gen, &c, &s, &cap, &error));
  if (!under_valgrind ())
    SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "kept the p99 and the errors but offered");
  CU_ASSERT_EQUAL (cap.capacity_rps, 0);
  sedp_loadgen_capacity_clear (&cap);
  g_clear_pointer (&gen, sedp_loadgen_free);
  test_pipeline_stop (&t);
}

/* ---- HTTP, against a loopback server ---- */

/* A loopback HTTP/1.1 server on a thread of its own, for the load generator's HTTP client: it
 * takes one connection at a time, reads the whole request (its head, then Content-Length bytes of
 * body) and answers as the request's path says (serve_answer()), then closes. */
typedef struct {
  int fd;             /* listening */
  guint16 port;
  GThread *thread;
  gint stop;          /* atomic: the thread ends */
  gint requests;      /* atomic: requests read whole */
  gint bad_requests;  /* atomic: requests without a Content-Length their body matched */
  char *first_head;   /* the first request's head (read after test_server_stop()) */
  GString *cl_body;   /* the body of /cl */
  GString *chunked_body; /* the body of /chunked */
} TestServer;

static void
write_all (int fd, const void *p, gsize n)
{
  while (n > 0) {
    gssize k = write (fd, p, n);
    if (k <= 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return;
    p = (const char *) p + k;
    n -= k;
  }
}

/* Reads a request from @fd: its head (returned, NULL on EOF or error) and its body, counted. */
static char *
serve_read_request (TestServer *srv, int fd)
{
  g_autoptr (GString) in = g_string_new (NULL);
  char buf[65536];
  const char *end = NULL;
  gsize want = 0;
  for (;;) {
    if (end == NULL && (end = strstr (in->str, "\r\n\r\n")) != NULL) {
      const char *cl = g_strstr_len (in->str, end - in->str, "\r\nContent-Length: ");
      want = (end - in->str) + 4 + (cl ? strtoul (cl + 18, NULL, 10) : 0);
      if (cl == NULL)
        g_atomic_int_inc (&srv->bad_requests);
    }
    if (end && in->len >= want)
      break;
    gssize n = read (fd, buf, sizeof buf);
    if (n <= 0)
      return NULL;
    g_string_append_len (in, buf, n);
  }
  if (in->len != want)
    g_atomic_int_inc (&srv->bad_requests);
  g_atomic_int_inc (&srv->requests);
  return g_strndup (in->str, end + 4 - in->str);
}

/* Writes @body chunked in pieces of 1, 7, 100, 1000 bytes and the rest, one write each (one with
 * an extension), after an interim 100 Continue; then the last chunk and a trailer. */
static void
serve_chunked (int fd, const GString *body)
{
  static const char head[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
                             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  static const gsize pieces[] = {1, 7, 100, 1000, G_MAXSIZE};
  write_all (fd, head, strlen (head));
  gsize at = 0;
  for (guint i = 0; i < G_N_ELEMENTS (pieces) && at < body->len; i++) {
    gsize n = MIN (pieces[i], body->len - at);
    g_autofree char *size = g_strdup_printf (i == 2 ? "%zX;x=y\r\n" : "%zx\r\n", n);
    write_all (fd, size, strlen (size));
    write_all (fd, body->str + at, n);
    write_all (fd, "\r\n", 2);
    at += n;
  }
  write_all (fd, "0\r\nX-Trailer: t\r\n\r\n", 20);
}

/* Answers the request of head @head on @fd: /cl 200 with Content-Length, /chunked 200 chunked,
 * /short a Content-Length of 100 but 10 bytes, /garbage no HTTP, /503 overloaded, /silent
 * nothing (it waits for the client to close). */
/* Whether the request of head @head is for @path (its query aside). */
static gboolean
is_for (const char *head, const char *path)
{
  gsize n = strlen (path);
  return g_str_has_prefix (head, "POST ") && strncmp (head + 5, path, n) == 0
         && (head[5 + n] == ' ' || head[5 + n] == '?');
}

static void
serve_answer (TestServer *srv, int fd, const char *head)
{
  char buf[256];
  if (is_for (head, "/cl")) {
    g_autofree char *h = g_strdup_printf ("HTTP/1.1 200 OK\r\ncontent-length: %zu\r\n\r\n",
                                          srv->cl_body->len);
    write_all (fd, h, strlen (h));
    write_all (fd, srv->cl_body->str, srv->cl_body->len);
  } else if (is_for (head, "/chunked")) {
    serve_chunked (fd, srv->chunked_body);
  } else if (is_for (head, "/short")) {
    static const char a[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";
    write_all (fd, a, strlen (a));
  } else if (is_for (head, "/garbage")) {
    write_all (fd, "SPAM\x01\xff SPAM\r\n\r\n", 15);
  } else if (is_for (head, "/503")) {
    static const char a[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\r\n"
                            "overloaded";
    write_all (fd, a, strlen (a));
  } else {
    while (read (fd, buf, sizeof buf) > 0) /* /silent: until the client closes */
      ;
  }
}

static gpointer
serve (gpointer data)
{
  TestServer *srv = data;
  while (!g_atomic_int_get (&srv->stop)) {
    struct pollfd p = {.fd = srv->fd, .events = POLLIN};
    if (poll (&p, 1, 20) <= 0)
      continue;
    int fd = accept (srv->fd, NULL, NULL);
    if (fd < 0)
      continue;
    struct timeval tv = {.tv_sec = 5};
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *head = serve_read_request (srv, fd);
    if (head)
      serve_answer (srv, fd, head);
    if (head && srv->first_head == NULL)
      srv->first_head = head;
    else
      g_free (head);
    close (fd);
  }
  return NULL;
}

/* A loopback socket bound to a free port, listening when @listening. */
static int
loopback_socket (gboolean listening, guint16 *port)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  CU_ASSERT_FATAL (fd >= 0 && bind (fd, (struct sockaddr *) &a, sizeof a) == 0);
  CU_ASSERT_FATAL (!listening || listen (fd, 64) == 0);
  CU_ASSERT_FATAL (getsockname (fd, (struct sockaddr *) &a, &n) == 0);
  *port = ntohs (a.sin_port);
  return fd;
}

static void
test_server_start (TestServer *srv)
{
  memset (srv, 0, sizeof *srv);
  srv->fd = loopback_socket (TRUE, &srv->port);
  srv->cl_body = g_string_new ("{\"status\": \"OK\", \"pad\": \"");
  for (guint i = 0; i < 100000; i++)
    g_string_append_c (srv->cl_body, 'a' + i % 26);
  g_string_append (srv->cl_body, "\"}");
  srv->chunked_body = g_string_new ("{\"status\":\"OK\", \"pad\": \"");
  for (guint i = 0; i < 5000; i++)
    g_string_append_c (srv->chunked_body, 'A' + i % 26);
  g_string_append (srv->chunked_body, "\"}");
  srv->thread = g_thread_new ("test-server", serve, srv);
}

static void
test_server_stop (TestServer *srv)
{
  g_atomic_int_set (&srv->stop, 1);
  g_thread_join (srv->thread);
  close (srv->fd);
}

static void
test_server_free (TestServer *srv)
{
  g_free (srv->first_head);
  g_string_free (srv->cl_body, TRUE);
  g_string_free (srv->chunked_body, TRUE);
}

/* What on_response was given: the statuses, and the bodies (NULL for none). */
typedef struct {
  GArray *codes;
  GPtrArray *bodies;
} Answers;

static void
on_answer (guint index, guint status, GBytes *body, gint64 latency_us, gpointer data)
{
  Answers *a = data;
  (void) index;
  CU_ASSERT (latency_us >= 0);
  g_array_append_val (a->codes, status);
  g_ptr_array_add (a->bodies, body ? g_bytes_ref (body) : NULL);
}

/* Runs @c (on_response set to fill @a, when given) against http://127.0.0.1:@port@path. */
static SedpLoadgenResults *
run_http (guint16 port, const char *path, SedpLoadgenConfig *c, Answers *a)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, &error);
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u%s", port, path);
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_http (url, w, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (gen);
  if (a) {
    a->codes = g_array_new (FALSE, FALSE, sizeof (guint));
    a->bodies = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
    c->on_response = on_answer;
    c->response_data = a;
  }
  SedpLoadgenResults *r = sedp_loadgen_run (gen, c, &error);
  if (error)
    fprintf (stderr, "\n  run error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (r);
  assert_accounted (r);
  return r;
}

static void
answers_clear (Answers *a)
{
  g_array_unref (a->codes);
  g_ptr_array_unref (a->bodies);
}

/* A closed loop of 2 clients for @seconds. */
static SedpLoadgenConfig
closed_config (double seconds)
{
  SedpLoadgenConfig c;
  sedp_loadgen_config_init (&c);
  c.concurrency = 2;
  c.duration_s = seconds;
  return c;
}

/* Every request to @path answered 200 OK with @body exactly (on_response saw it), none failed;
 * the server read every request whole. Returns the first request's head. */
static char *
assert_answered (const char *path, const GString *(*body) (TestServer *))
{
  TestServer srv;
  test_server_start (&srv);
  SedpLoadgenConfig c = closed_config (0.2);
  Answers a;
  g_autoptr (SedpLoadgenResults) r = run_http (srv.port, path, &c, &a);
  test_server_stop (&srv);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  if (sedp_loadgen_results_get_first_error (r))
    fprintf (stderr, "\n  first error: %s\n", sedp_loadgen_results_get_first_error (r));
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_errors (r), 0);
  CU_ASSERT (k->ok >= 2);
  CU_ASSERT_EQUAL (sedp_loadgen_results_get_status_count (r, "200"), k->ok);
  CU_ASSERT_EQUAL (k->items, k->ok * 8);
  CU_ASSERT_EQUAL (a.bodies->len, k->ok);
  CU_ASSERT_EQUAL ((guint64) g_atomic_int_get (&srv.requests), k->ok);
  CU_ASSERT_EQUAL (g_atomic_int_get (&srv.bad_requests), 0);
  const GString *want = body (&srv);
  for (guint i = 0; i < a.bodies->len; i++) {
    gsize n;
    const void *p = g_bytes_get_data (a.bodies->pdata[i], &n);
    CU_ASSERT_EQUAL (g_array_index (a.codes, guint, i), 200);
    CU_ASSERT (p && n == want->len && memcmp (p, want->str, n) == 0);
  }
  answers_clear (&a);
  char *head = g_strdup_printf ("%s\n%u", srv.first_head ? srv.first_head : "", srv.port);
  test_server_free (&srv);
  return head;
}

static const GString *
cl_body (TestServer *srv)
{
  return srv->cl_body;
}

static const GString *
chunked_body (TestServer *srv)
{
  return srv->chunked_body;
}

/* 100 KB answers with a Content-Length: all OK, the exact bodies; the request head as sent. */
static void
test_http_content_length (void)
{
  g_autofree char *head = assert_answered ("/cl?q=a%2Fb%20c", cl_body);
  const char *port = strrchr (head, '\n') + 1;
  g_autofree char *host = g_strdup_printf ("\r\nHost: 127.0.0.1:%s\r\n", port);
  CU_ASSERT (g_str_has_prefix (head, "POST /cl?q=a%2Fb%20c HTTP/1.1\r\n"));
  SEDP_ASSERT_CONTAINS (head, host);
  SEDP_ASSERT_CONTAINS (head, "\r\nContent-Type: application/json\r\n");
  SEDP_ASSERT_CONTAINS (head, "\r\nConnection: close\r\n");
}

/* Chunked answers after an interim 100 Continue, in pieces, with an extension and a trailer: all
 * OK, the exact bodies. */
static void
test_http_chunked (void)
{
  g_free (assert_answered ("/chunked", chunked_body));
}

/* Every request to @path failed as @kind, with a first error naming @needle; on_response got
 * status @code (and no body when 0) for each. */
static void
assert_failing (const char *path, SedpLoadgenFailure kind, guint code, const char *needle,
                SedpLoadgenConfig *c)
{
  TestServer srv;
  test_server_start (&srv);
  Answers a;
  g_autoptr (SedpLoadgenResults) r = run_http (srv.port, path, c, &a);
  test_server_stop (&srv);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  CU_ASSERT (k->arrivals >= 1);
  CU_ASSERT_EQUAL (k->failures[kind], k->arrivals);
  CU_ASSERT_EQUAL (a.codes->len, k->arrivals);
  for (guint i = 0; i < a.codes->len; i++) {
    CU_ASSERT_EQUAL (g_array_index (a.codes, guint, i), code);
    CU_ASSERT ((a.bodies->pdata[i] == NULL) == (code == 0));
  }
  const char *first = sedp_loadgen_results_get_first_error (r);
  CU_ASSERT_PTR_NOT_NULL_FATAL (first);
  SEDP_ASSERT_CONTAINS (first, needle);
  answers_clear (&a);
  test_server_free (&srv);
}

/* An answer cut short, one that is not HTTP, a 503: each counted as its kind. */
static void
test_http_bad_answers (void)
{
  SedpLoadgenConfig c = closed_config (0.1);
  assert_failing ("/short", SEDP_LOADGEN_FAILURE_TRANSPORT, 0, "closed after 10 of 100 body bytes",
                  &c);
  assert_failing ("/garbage", SEDP_LOADGEN_FAILURE_TRANSPORT, 0, "malformed HTTP answer", &c);
  assert_failing ("/503", SEDP_LOADGEN_FAILURE_REFUSED, 503, "HTTP 503: overloaded", &c);
}

/* No answer: the request fails after http_timeout_s. */
static void
test_http_timeout (void)
{
  SedpLoadgenConfig c = closed_config (0.1);
  c.concurrency = 1;
  c.http_timeout_s = 1;
  gint64 t0 = g_get_monotonic_time ();
  assert_failing ("/silent", SEDP_LOADGEN_FAILURE_TRANSPORT, 0, "within 1 s (http_timeout_s)", &c);
  double s = (double) (g_get_monotonic_time () - t0) / 1e6;
  CU_ASSERT (s >= 1.0 && s < 4.0);
}

/* Nothing listening (a bound port): every request fails as a transport error naming it; an
 * https URL is refused at once. */
static void
test_http_refused (void)
{
  guint16 port;
  int fd = loopback_socket (FALSE, &port);
  SedpLoadgenConfig c = open_config (100, 0.2);
  g_autoptr (SedpLoadgenResults) r = run_http (port, "/x", &c, NULL);
  close (fd);
  const SedpLoadgenCounts *k = sedp_loadgen_results_get_counts (r);
  CU_ASSERT (k->arrivals >= 5);
  CU_ASSERT_EQUAL (k->failures[SEDP_LOADGEN_FAILURE_TRANSPORT], k->arrivals);
  g_autofree char *where = g_strdup_printf ("connecting to 127.0.0.1:%u: ", port);
  SEDP_ASSERT_CONTAINS (sedp_loadgen_results_get_first_error (r), where);
  SEDP_ASSERT_CONTAINS (sedp_loadgen_results_get_first_error (r), "refused");
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (NULL, SEDP_WORKLOAD_JSON, NULL);
  static const char https[] = "https://127.0.0.1:1/v1/pipelines/x:predict";
  CU_ASSERT_PTR_NULL (sedp_loadgen_new_http (https, w, &error));
  SEDP_ASSERT_ERROR (error, SEDP_LOADGEN_ERROR, "https is not supported", "plain HTTP/1.1");
  CU_ASSERT (g_error_matches (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_TARGET));
}

/* ---- sedp bench ---- */

/* sedp runs with the build's plugins. */
static const SedpTestSpawn with_plugins = {.plugin_path = SEDP_TEST_PLUGIN_DIR};

/* The value of key @key on the RESULT lines of @out (-1 when absent). */
static double
result_value (const char *out, const char *key)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) words = g_strsplit (lines[i], " ", -1);
    for (guint j = 1; words[0] && strcmp (words[0], "RESULT") == 0 && words[j]; j++) {
      const char *eq = strchr (words[j], '=');
      if (eq && (gsize) (eq - words[j]) == strlen (key) && strncmp (words[j], key, eq - words[j]) == 0)
        return g_ascii_strtod (eq + 1, NULL);
    }
  }
  return -1;
}

/* A staircase of 200 then 900 requests/s on the slow pipeline: a block per step; the first
 * step keeps up, the second is capped near capacity and its latency grows. */
static void
test_bench_steps (void)
{
  g_autofree char *dir = sedp_test_make_tmp_dir ("load-XXXXXX");
  g_autofree char *path = g_build_filename (dir, "slow.pipeline", NULL);
  sedp_test_write_file (path, slow_pipeline, -1);
  g_auto (SedpTestRun) r;
  sedp_test_spawn (&r, &with_plugins, "bench", path, "--rate-steps", "200,900", "--duration", "0.4", NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.out, "RESULT steps=2\n");
  SEDP_ASSERT_CONTAINS (r.out, "RESULT step1_rate=200.0 step1_duration_s=0.4\n");
  SEDP_ASSERT_CONTAINS (r.out, "RESULT step2_rate=900.0 step2_duration_s=0.4\n");
  SEDP_ASSERT_CONTAINS (r.err, "step 2 of 2");
  double o1 = result_value (r.out, "step1_offered_rps"), o2 = result_value (r.out, "step2_offered_rps");
  CU_ASSERT (o1 > 110 && o1 < 290);
  CU_ASSERT (o2 > 650 && o2 < 1150);
  CU_ASSERT_EQUAL (result_value (r.out, "step1_errors"), 0);
  CU_ASSERT (result_value (r.out, "step2_p99_ms") > 2 * result_value (r.out, "step1_p99_ms"));
  CU_ASSERT (result_value (r.out, "step2_requests_per_s") < 750);
  sedp_test_remove_tree (dir);
}

/* Bad options: one "sedp bench: …" line naming the problem, exit status 2. */
static void
test_bench_bad_options (void)
{
  static const char url[] = "http://127.0.0.1:1/v1/pipelines/x:predict";
  static const char *const cases[][6] = {
    {"--rate", "0", "--rate 0", NULL},
    {"--rate", "-5", "--rate -5", NULL},
    {"--rate-steps", "100,x", "('x') is not a rate", NULL},
    {"--rate-steps", "100,,200", "item 2 ('')", NULL},
    {"--find-capacity", "--find-capacity needs --slo-p99-ms", NULL},
    {"--slo-p99-ms", "20", "only applies with --find-capacity", NULL},
    {"--rate", "100", "--concurrency", "4", "--max-in-flight N instead", NULL},
    {"--rate", "10", "--rate-steps", "1,2", "do not go together", NULL},
    {"--rate", "10", "--max-in-flight", "0", "--max-in-flight 0", NULL},
    {"--seed", "3", "only applies to an open loop", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    const char *args[8] = {"bench"};
    guint n = 1, last = 0;
    while (cases[i][last + 1])
      args[n++] = cases[i][last++];
    args[n++] = url;
    g_auto (SedpTestRun) r;
    sedp_test_spawn_args (&r, &with_plugins, args);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, "sedp bench: ");
    SEDP_ASSERT_CONTAINS (r.err, cases[i][last]);
    CU_ASSERT_STRING_EQUAL (r.out, "");
  }
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("load", NULL, NULL);
  CU_add_test (s, "Poisson gaps: mean and coefficient of variation", test_poisson_gaps);
  CU_add_test (s, "Poisson arrivals follow the seed", test_poisson_seeded);
  CU_add_test (s, "protobuf workload decodes as its JSON", test_workload_protobuf);
  CU_add_test (s, "workload files and their errors", test_workload_file);
  CU_add_test (s, "configuration errors", test_config_check);
  CU_add_test (s, "open loop under capacity", test_open_loop_light);
  CU_add_test (s, "latency counted from the scheduled send", test_latency_from_schedule);
  CU_add_test (s, "a stalled generator's late sends counted", test_late_sends_counted);
  CU_add_test (s, "max_in_flight: unsent requests counted", test_max_in_flight);
  CU_add_test (s, "refusals at entry counted", test_refused);
  CU_add_test (s, "closed loop", test_closed_loop);
  CU_add_test (s, "capacity search on a known capacity", test_find_capacity);
  CU_add_test (s, "the capacity search's accept hook", test_capacity_accept);
  CU_add_test (s, "capacity search: no rate meets the SLO", test_no_capacity);
  CU_add_test (s, "HTTP: answers with a Content-Length", test_http_content_length);
  CU_add_test (s, "HTTP: chunked answers", test_http_chunked);
  CU_add_test (s, "HTTP: cut short, garbage, 503", test_http_bad_answers);
  CU_add_test (s, "HTTP: no answer within http_timeout_s", test_http_timeout);
  CU_add_test (s, "HTTP: connection refused, https refused", test_http_refused);
  CU_add_test (s, "sedp bench --rate-steps", test_bench_steps);
  CU_add_test (s, "sedp bench: bad options", test_bench_bad_options);
  return sedp_test_run ();
}
