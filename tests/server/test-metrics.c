/* sedp tests — /metrics of sedp serve (docs/observability.md): the text passes `promtool check
 * metrics` (the Prometheus project's own linter, Debian package prometheus) after real requests,
 * the cache figures are families (no comment lines), and the queue and in-flight gauges follow a
 * slow stage's backlog. */
#include "server-harness.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

/* Every family the runtime and the plugins below write: a query cache (lookup and store), a
 * router's branches (stage and branch labels), a request-scope stage. */
static const char *qc_pipeline =
    "[pipeline]\nname = qc\ndeadline_ms = 30000\n"
    "[stage reader]\nplugin = data_reader\n"
    "[stage lookup]\nplugin = query_cache\nafter = reader\nmode = lookup\ncache = m\n"
    "[stage score]\nplugin = synthetic_work\nafter = lookup\noutput = score\n"
    "[stage store]\nplugin = query_cache\nafter = score\nmode = store\ncache = m\n";

static const char *ab_pipeline =
    "[pipeline]\nname = ab\ndeadline_ms = 30000\n"
    "[stage reader]\nplugin = data_reader\n"
    "[stage ab]\nplugin = ab_router\nafter = reader\nby = value\nkey = tenant\narms = a:50, b:50\n"
    "[stage x]\nplugin = synthetic_work\nafter = ab:a\noutput = score\n"
    "[stage y]\nplugin = synthetic_work\nafter = ab:b\noutput = score\n"
    "[stage out]\nplugin = passthrough\nafter = x, y\n";

/* Runs promtool check metrics on @text (its standard input); returns what it printed (empty when
 * the text is clean) and its exit status in @status. NULL when promtool cannot run. */
static char *
promtool_check (const char *text, int *status)
{
  g_autoptr (GError) error = NULL;
  const char *argv[] = {"promtool", "check", "metrics", NULL};
  g_autoptr (GSubprocess) p = g_subprocess_newv (
      argv, G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE,
      &error);
  if (p == NULL) {
    fprintf (stderr, "\n  promtool: %s: install the Debian package prometheus "
                     "(scripts/debian-packages.txt lists it; its daemon need not run)\n",
             error->message);
    return NULL;
  }
  char *out = NULL;
  if (!g_subprocess_communicate_utf8 (p, text, NULL, &out, NULL, &error)) {
    fprintf (stderr, "\n  promtool: %s\n", error->message);
    return NULL;
  }
  *status = g_subprocess_get_exit_status (p);
  return out ? out : g_strdup ("");
}

static void
predict_ok (guint port, const char *name, const char *json)
{
  Resp r;
  predict_json (port, name, json, &r);
  if (r.status != 200)
    fprintf (stderr, "\n  %s: status %d: %.200s\n", name, r.status, r.body ? r.body : "");
  CU_ASSERT_EQUAL (r.status, 200);
  resp_clear (&r);
}

/* A scrape after hits, misses and both branches passes promtool without a word; the cache
 * figures are samples of typed families, and no line is a comment other than HELP and TYPE. */
static void
test_promtool (void)
{
  const char *pipelines[] = {qc_pipeline, ab_pipeline, NULL};
  Server s;
  if (!server_start (&s, pipelines, NULL))
    return;
  const char *req = "{\"user\": {\"id\": 7}, \"items\": [{\"id\": 1}, {\"id\": 2}, {\"id\": 3}]}";
  predict_ok (s.port, "qc", req); /* 3 misses, stored */
  predict_ok (s.port, "qc", req); /* 3 hits */
  predict_ok (s.port, "ab", "{\"user\": {\"id\": 1, \"features\": {\"tenant\": \"a\"}}, \"items\": [{\"id\": 1}]}");
  predict_ok (s.port, "ab", "{\"user\": {\"id\": 1, \"features\": {\"tenant\": \"b\"}}, \"items\": [{\"id\": 1}]}");
  Resp m;
  CU_ASSERT_EQUAL (get (s.port, "/metrics", &m), 200);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m.body);
  int status = -1;
  g_autofree char *lint = promtool_check (m.body, &status);
  if (lint == NULL)
    CU_FAIL ("promtool is missing: install the Debian package prometheus (scripts/debian-packages.txt)");
  if (lint && (*lint || status != 0))
    fprintf (stderr, "\n  promtool check metrics (status %d):\n%s\n", status, lint);
  CU_ASSERT (lint && *lint == '\0' && status == 0);
  /* Only HELP and TYPE comments: no figure hides in a comment. */
  g_auto (GStrv) lines = g_strsplit (m.body, "\n", -1);
  for (char **l = lines; *l; l++)
    if (**l == '#' && !g_str_has_prefix (*l, "# HELP ") && !g_str_has_prefix (*l, "# TYPE ")) {
      fprintf (stderr, "\n  comment line: %s\n", *l);
      CU_FAIL ("a comment line other than HELP or TYPE");
    }
  /* The query cache: 6 lookups, 3 hits (the second request), as a gauge; the rows the lookup
   * stage answered and missed as counters. */
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_query_cache_hit_ratio gauge\n"));
  CU_ASSERT_DOUBLE_EQUAL (metric_value (m.body, "sedp_query_cache_hit_ratio{pipeline=\"qc\",stage=\"lookup\"} "), 0.5, 1e-9);
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_query_cache_hits_total counter\n"));
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_query_cache_hits_total{pipeline=\"qc\",stage=\"lookup\"} "), 3);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_query_cache_misses_total{pipeline=\"qc\",stage=\"lookup\"} "), 3);
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_query_cache_evictions_total counter\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_query_cache_entries gauge\n"));
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_query_cache_entries{pipeline=\"qc\",stage=\"store\"} "), 3);
  /* Times in seconds: the request latency histogram's sum is under the deadline, over 0. */
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_request_latency_seconds histogram\n"));
  double sum = metric_value (m.body, "sedp_request_latency_seconds_sum{pipeline=\"qc\",stage=\"pipeline\"} ");
  CU_ASSERT (sum > 0 && sum < 60);
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "# TYPE sedp_stage_in_flight gauge\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (m.body, "sedp_branch_requests_total{pipeline=\"ab\",stage=\"ab\",branch=\"b\"} 1\n"));
  resp_clear (&m);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
}

/* Reads one gauge of pipeline "slow", stage @stage (-1 when absent). */
static double
slow_gauge (guint port, const char *stage, const char *name)
{
  g_autofree char *sample = g_strdup_printf ("sedp_%s{pipeline=\"slow\",stage=\"%s\"} ", name, stage);
  Resp m;
  get (port, "/metrics", &m);
  double v = metric_value (m.body, sample);
  resp_clear (&m);
  return v;
}

static gpointer
slow_call (gpointer data)
{
  guint port = GPOINTER_TO_UINT (data);
  Resp *r = g_new0 (Resp, 1);
  predict_json (port, "slow", "{\"items\": [{\"id\": 1}]}", r);
  return r;
}

/* A stage that sleeps 400 ms per request, one worker: of three requests sent at once, one is in
 * its process call (stage_in_flight 1) while the others wait in its channel (queue_depth 2);
 * once all are answered, both read 0. */
static void
test_queue_gauges (void)
{
  const char *slow = "[pipeline]\nname = slow\ndeadline_ms = 30000\n"
                     "[stage reader]\nplugin = data_reader\n"
                     "[stage wait]\nplugin = synthetic_work\nafter = reader\nscope = request\n"
                     "sleep_us = 400000\n"
                     "[stage score]\nplugin = synthetic_work\nafter = wait\noutput = score\n";
  const char *pipelines[] = {slow, NULL};
  Server s;
  if (!server_start (&s, pipelines, NULL))
    return;
  CU_ASSERT_EQUAL (slow_gauge (s.port, "wait", "queue_depth"), 0);
  GThread *t[3];
  for (guint i = 0; i < 3; i++)
    t[i] = g_thread_new ("client", slow_call, GUINT_TO_POINTER (s.port));
  double depth = -1, busy = -1;
  for (guint i = 0; i < 200 && !(depth == 2 && busy == 1); i++) {
    g_usleep (5000);
    depth = slow_gauge (s.port, "wait", "queue_depth");
    busy = slow_gauge (s.port, "wait", "stage_in_flight");
  }
  if (depth != 2 || busy != 1)
    fprintf (stderr, "\n  queue_depth %g (want 2), stage_in_flight %g (want 1)\n", depth, busy);
  CU_ASSERT_EQUAL (depth, 2);
  CU_ASSERT_EQUAL (busy, 1);
  for (guint i = 0; i < 3; i++) {
    Resp *r = g_thread_join (t[i]);
    CU_ASSERT_EQUAL (r->status, 200);
    resp_clear (r);
    g_free (r);
  }
  /* The last request's completion callback may still run when its answer arrives: settle. */
  for (guint i = 0; i < 100 && slow_gauge (s.port, "pipeline", "requests_in_flight") != 0; i++)
    g_usleep (10000);
  CU_ASSERT_EQUAL (slow_gauge (s.port, "wait", "queue_depth"), 0);
  CU_ASSERT_EQUAL (slow_gauge (s.port, "wait", "stage_in_flight"), 0);
  CU_ASSERT_EQUAL (slow_gauge (s.port, "pipeline", "requests_in_flight"), 0);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
}

/* The events of @request at @stage of kind @cat in the trace file @path. */
static guint
trace_count (JsonArray *events, const char *request, const char *stage, const char *cat)
{
  guint n = 0;
  for (guint i = 0; i < json_array_get_length (events); i++) {
    JsonObject *e = json_array_get_object_element (events, i);
    if (strcmp (json_object_get_string_member (e, "ph"), "X") != 0)
      continue;
    JsonObject *a = json_object_get_object_member (e, "args");
    n += strcmp (json_object_get_string_member (a, "request_id"), request) == 0 &&
         strcmp (json_object_get_string_member (a, "stage"), stage) == 0 &&
         strcmp (json_object_get_string_member (e, "cat"), cat) == 0;
  }
  return n;
}

/* sedp serve --trace: the default samples one request in 100, the first; SIGTERM writes the
 * file, with its queue wait and process call at each stage. */
static void
test_serve_trace (void)
{
  g_autofree char *dir = g_dir_make_tmp ("sedp-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "trace.json", NULL);
  g_autofree char *opt = g_strdup_printf ("--trace=%s", path);
  const char *basic = "[pipeline]\nname = serve\ndeadline_ms = 10000\n"
                      "[stage reader]\nplugin = data_reader\n"
                      "[stage score]\nplugin = synthetic_work\nafter = reader\noutput = score\n";
  const char *pipelines[] = {basic, NULL};
  Server s;
  if (!server_start (&s, pipelines, opt))
    return;
  predict_ok (s.port, "serve", "{\"request_id\": \"t-1\", \"items\": [{\"id\": 1}]}");
  predict_ok (s.port, "serve", "{\"request_id\": \"t-2\", \"items\": [{\"id\": 1}]}");
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  g_autoptr (JsonParser) parser = json_parser_new ();
  CU_ASSERT_TRUE_FATAL (json_parser_load_from_file (parser, path, NULL));
  JsonArray *events = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                                    "traceEvents");
  const char *stages[] = {"reader", "score"};
  for (guint k = 0; k < 2; k++) {
    CU_ASSERT_EQUAL (trace_count (events, "t-1", stages[k], "queue"), 1);
    CU_ASSERT_EQUAL (trace_count (events, "t-1", stages[k], "process"), 1);
    CU_ASSERT_EQUAL (trace_count (events, "t-2", stages[k], "process"), 0);
  }
  g_unlink (path);
  g_rmdir (dir);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("metrics", NULL, NULL);
  if (CU_add_test (s, "test_promtool", test_promtool) == NULL ||
      CU_add_test (s, "test_queue_gauges", test_queue_gauges) == NULL ||
      CU_add_test (s, "test_serve_trace", test_serve_trace) == NULL)
    return 1;
  return sedp_test_run ();
}
