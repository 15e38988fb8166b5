/* sedp runtime tests: joins and broadcast under concurrency, gathering, batching, deadlines,
 * error isolation, backpressure, shutdown with requests in flight, sync mode. */
#include "runtime-helpers.h"
#include "util/cpus.h"

#include <unistd.h>

static const SedpResult *
result_of (Collector *c, guint i)
{
  return sedp_request_get_result (c->done->pdata[i]);
}

static guint
find_seq (SedpRequest *r)
{
  return (guint) g_ascii_strtoull (sedp_request_get_id (r) + 1, NULL, 10);
}

static guint64
counter_value (SedpPipeline *p, const char *stage, const char *name)
{
  return sedp_counter_get (sedp_metrics_counter (sedp_pipeline_get_metrics (p), stage, name, NULL));
}

/* ---- joins ---- */

static const char *join_pipeline =
    "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
    "[stage reader]\nplugin = stamp\nscope = request\n"
    "[stage user]\nplugin = stamp\nafter = reader\nscope = request\ndelay_us = 300\nparallelism = 2\n"
    "[stage items]\nplugin = stamp\nafter = reader\nparallelism = 3\nbatch = 5\nbatch_timeout_us = 200\ndelay_us = 300\n"
    "[stage other]\nplugin = stamp\nafter = reader\nparallelism = 2\nbatch = 3\ndelay_us = 500\n"
    "[stage join]\nplugin = stamp\nafter = user, items, other\nparallelism = 2\nbatch = 7\ndelay_us = 100\n";

/* Every row of every request went through the right branches with its own request's data. */
static void
check_joined (Collector *c, guint n_requests, const guint *n_items)
{
  CU_ASSERT_EQUAL_FATAL (c->done->len, n_requests);
  guint bad = 0;
  for (guint k = 0; k < c->done->len; k++) {
    SedpRequest *r = c->done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = find_seq (r);
    gint64 h = id_hash (sedp_request_get_id (r));
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    CU_ASSERT_EQUAL (sedp_result_get_n_items (res), n_items[seq]);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      if (f == NULL || sedp_result_get_item_status (res, i) != SEDP_ITEM_SCORED) {
        bad++;
        continue;
      }
      gboolean ok = int_at (f, "item_id", row) == (gint64) seq * 1000 + i &&
                    int_at (f, "user_id", row) == seq &&       /* request column, broadcast */
                    int_at (f, "user_req", row) == h &&        /* request-scope branch */
                    int_at (f, "user_item", row) == -1 &&
                    int_at (f, "items_req", row) == h && int_at (f, "items_item", row) == i &&
                    int_at (f, "other_req", row) == h && int_at (f, "other_item", row) == i &&
                    int_at (f, "join_req", row) == h && int_at (f, "join_item", row) == i &&
                    int_at (f, "join_rows", row) <= 4 && int_at (f, "join_batch", row) <= 7 &&
                    int_at (f, "items_batch", row) <= 5 && int_at (f, "other_batch", row) <= 3;
      if (!ok)
        bad++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
}

static void
test_join_broadcast_concurrent (void)
{
  SedpPipeline *p = start_pipeline (join_pipeline);
  const guint n = g_getenv ("SEDP_VALGRIND") ? 40 : 300;
  g_autofree guint *n_items = g_new (guint, n);
  Collector c;
  collector_init (&c);
  GRand *rng = g_rand_new_with_seed (7);
  for (guint i = 0; i < n; i++)
    n_items[i] = (guint) g_rand_int_range (rng, 1, 61);
  CU_ASSERT_EQUAL (submit_numbered (p, &c, n, n_items, 0), n);
  CU_ASSERT_EQUAL (collector_wait (&c, n, 60), n);
  check_joined (&c, n, n_items);
  g_rand_free (rng);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A request-scope stage after item stages gets all items of the request in one frame. */
static void
test_gather (void)
{
  g_autofree char *text = g_strconcat (join_pipeline,
                                       "[stage collect]\nplugin = stamp\nafter = join\nscope = request\n", NULL);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 40;
  g_autofree guint *counts = ascending_counts (n);
  submit_numbered (p, &c, n, counts, 0);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 60), n);
  for (guint k = 0; k < n; k++) {
    const SedpResult *res = result_of (&c, k);
    guint seq = find_seq (c.done->pdata[k]);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    CU_ASSERT_EQUAL (sedp_result_get_n_items (res), 1 + seq);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      CU_ASSERT_EQUAL (row, i); /* gathered in item order */
      CU_ASSERT_EQUAL (int_at (f, "collect_rows", row), 1 + seq);
      CU_ASSERT_EQUAL (int_at (f, "collect_item", row), i);
      CU_ASSERT_EQUAL (int_at (f, "join_item", row), i);
      CU_ASSERT_EQUAL (int_at (f, "user_id", row), seq);
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* [stage] drop_columns: the columns matching a pattern leave the stage's frames (item frames
 * and broadcast columns alike) and so never reach the gather; the others arrive intact. */
static void
test_drop_columns (void)
{
  g_autofree char *text = g_strconcat (join_pipeline,
                                       "drop_columns = items_*, other_rows, user_id\n"
                                       "[stage collect]\nplugin = stamp\nafter = join\nscope = request\n", NULL);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 12;
  g_autofree guint *counts = ascending_counts (n);
  submit_numbered (p, &c, n, counts, 0);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 60), n);
  for (guint k = 0; k < n; k++) {
    const SedpResult *res = result_of (&c, k);
    guint seq = find_seq (c.done->pdata[k]);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "items_rows"));
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "items_item"));
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "other_rows"));
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "user_id"));
      CU_ASSERT_EQUAL (int_at (f, "other_item", row), i);
      CU_ASSERT_EQUAL (int_at (f, "join_item", row), i);
      CU_ASSERT_EQUAL (int_at (f, "collect_rows", row), 1 + seq);
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* The CPUs the kernel lets thread @name of this process run on ("0", "0-1"), or NULL. */
static char *
thread_cpus (const char *name)
{
  g_autoptr (GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;
  while (dir && (tid = g_dir_read_name (dir))) {
    g_autofree char *comm_path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
    g_autofree char *status_path = g_strdup_printf ("/proc/self/task/%s/status", tid);
    g_autofree char *comm = NULL, *status = NULL;
    if (!g_file_get_contents (comm_path, &comm, NULL, NULL) || strcmp (g_strstrip (comm), name) != 0 ||
        !g_file_get_contents (status_path, &status, NULL, NULL))
      continue;
    const char *line = strstr (status, "Cpus_allowed_list:");
    if (line == NULL)
      return NULL;
    line += strlen ("Cpus_allowed_list:");
    return g_strstrip (g_strndup (line, strcspn (line, "\n")));
  }
  return NULL;
}

/* [pipeline] cpus and [stage] cpus: every worker runs on the stage's CPUs, else the
 * pipeline's; requests go through as usual. A CPU the machine lacks is refused. */
static void
test_cpus (void)
{
  /* the stage's own CPU: the last one (on a machine of one CPU, that is the pipeline's too) */
  long n_cpus = sysconf (_SC_NPROCESSORS_CONF);
  g_autofree char *last = g_strdup_printf ("%ld", MAX (n_cpus, 1) - 1);
  g_autofree char *text = g_strdup_printf ("[pipeline]\ncpus = 0\ndeadline_ms = 60000\n"
                                           "[stage reader]\nplugin = stamp\nscope = request\n"
                                           "[stage pinned]\nplugin = stamp\nafter = reader\ncpus = %s\n"
                                           "[stage free]\nplugin = stamp\nafter = pinned\n", last);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  submit_numbered (p, &c, 4, NULL, 5);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 4, 60), 4);
  g_autofree char *reader = thread_cpus ("sedp-reader"), *pinned = thread_cpus ("sedp-pinned"),
                  *free_ = thread_cpus ("sedp-free");
  CU_ASSERT_STRING_EQUAL (reader ? reader : "(none)", "0");
  CU_ASSERT_STRING_EQUAL (pinned ? pinned : "(none)", last);
  CU_ASSERT_STRING_EQUAL (free_ ? free_ : "(none)", "0");
  sedp_pipeline_free (p);
  collector_clear (&c);

  const char *bad = "[pipeline]\n[stage reader]\nplugin = stamp\nscope = request\ncpus = 1000\n";
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (bad, strlen (bad), "bad.pipeline", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (spec);
  SedpGraph *graph = sedp_graph_compile (spec, runtime_registry (), &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
  CU_ASSERT_PTR_NULL (sedp_pipeline_new (graph, &error));
  CU_ASSERT (error && strstr (error->message, "bad.pipeline:5: [stage reader] cpus: CPU 1000 does not exist"));
  sedp_graph_free (graph);

  guint n = 0;
  g_autofree guint *list = sedp_cpu_list_parse (" 3, 0-1,1 ", &n, NULL);
  CU_ASSERT_FATAL (list && n == 3);
  CU_ASSERT (list[0] == 0 && list[1] == 1 && list[2] == 3);
  g_autofree char *back = sedp_cpu_list_to_string (list, n);
  CU_ASSERT_STRING_EQUAL (back, "0-1,3");
  CU_ASSERT_PTR_NULL (sedp_cpu_list_parse ("2-1", &n, NULL));
  CU_ASSERT_PTR_NULL (sedp_cpu_list_parse ("", &n, NULL));
  CU_ASSERT_PTR_NULL (sedp_cpu_list_parse ("1024", &n, NULL));

  const char *syntax = "[pipeline]\ncpus = 0,two\n[stage reader]\nplugin = stamp\nscope = request\n";
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_pipeline_spec_parse (syntax, strlen (syntax), "s.pipeline", &error));
  CU_ASSERT (error && strstr (error->message, "s.pipeline:2: [pipeline] cpus: 'two' is not a CPU number"));
}

/* Rows shed in one branch are left out of the join; the others are joined correctly. */
static void
test_join_with_shed_rows (void)
{
  const char *text =
      "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage shed]\nplugin = fault_injector\nafter = reader\ndrop_items = 1, 2, 9\n"
      "[stage items]\nplugin = stamp\nafter = reader\ndelay_us = 200\n"
      "[stage join]\nplugin = stamp\nafter = shed, items\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  submit_numbered (p, &c, 20, NULL, 12);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 20, 30), 20);
  for (guint k = 0; k < 20; k++) {
    const SedpResult *res = result_of (&c, k);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    for (guint i = 0; i < 12; i++) {
      gboolean shed = i == 1 || i == 2 || i == 9;
      CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), shed ? SEDP_ITEM_DROPPED : SEDP_ITEM_SCORED);
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      if (!shed) {
        CU_ASSERT_PTR_NOT_NULL_FATAL (f);
        CU_ASSERT_EQUAL (int_at (f, "items_item", row), i);
        CU_ASSERT_EQUAL (int_at (f, "join_item", row), i);
      } else {
        CU_ASSERT_PTR_NULL (f);
      }
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A request-scope stage that sees all items (gathered) sheds some; the item stages after it get
 * its frame back cut into full frames, without the shed rows, with its per-item columns. */
static void
test_gather_shed_scatter (void)
{
  const char *text = "[pipeline]\nframe_rows = 4\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage items]\nplugin = stamp\nafter = reader\nparallelism = 2\ndelay_us = 200\n"
                     "[stage rank]\nplugin = stamp\nafter = items\nscope = request\n"
                     "[stage shed]\nplugin = fault_injector\nafter = rank\nscope = request\n"
                     "drop_items = 3, 5, 8, 9, 10, 11\n"
                     "[stage final]\nplugin = stamp\nafter = shed\nparallelism = 2\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (submit_numbered (p, &c, 10, NULL, 14), 10);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 10, 30), 10);
  for (guint k = 0; k < 10; k++) {
    const SedpResult *res = result_of (&c, k);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    for (guint i = 0; i < 14; i++) {
      gboolean shed = i == 3 || i == 5 || (i >= 8 && i <= 11);
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), shed ? SEDP_ITEM_DROPPED : SEDP_ITEM_SCORED);
      if (shed) {
        CU_ASSERT_PTR_NULL (f);
        continue;
      }
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      CU_ASSERT_EQUAL (int_at (f, "final_item", row), i);
      CU_ASSERT_EQUAL (int_at (f, "rank_item", row), i);  /* per item, not broadcast */
      CU_ASSERT_EQUAL (int_at (f, "rank_rows", row), 14); /* the rank stage saw every item */
      CU_ASSERT_EQUAL (int_at (f, "final_rows", row), 4); /* cut again into full frames */
      CU_ASSERT_EQUAL (int_at (f, "item_id", row), (gint64) find_seq (c.done->pdata[k]) * 1000 + i);
    }
  }
  /* The 8 items kept of 4 frames of 4 are cut again, in order, into 2 full frames (nothing
   * after the gather joins them with the frames they came from): the final stage ran twice. */
  CU_ASSERT_EQUAL (counter_value (p, "final", "stage_events_total"), 10 * 2);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* ---- batching ---- */

/* The int64 column @name of item @item in the result (G_MININT64 when absent). */
static gint64
item_int (const SedpResult *res, guint item, const char *name)
{
  guint row = 0;
  const SedpFrame *f = sedp_result_get_item_frame (res, item, &row);
  return f ? int_at (f, name, row) : G_MININT64;
}

static gint64
run_one (SedpPipeline *p, const char *id, guint n_items, SedpRequest **out)
{
  Collector c;
  collector_init (&c);
  SedpRequest *r = make_request (id, 1, n_items, 0);
  gint64 t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (collector_wait (&c, 1, 10), 1);
  gint64 dt = g_get_monotonic_time () - t0;
  *out = r;
  collector_clear (&c);
  return dt;
}

static void
test_batch_limit_and_timeout (void)
{
  const char *text = "[pipeline]\nframe_rows = 1\ndeadline_ms = 10000\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage b]\nplugin = stamp\nafter = reader\nbatch = 8\nbatch_timeout_us = 300000\n";
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r;
  /* Eight frames arrive together: one call of eight, without waiting out the linger. */
  gint64 dt = run_one (p, "full", 8, &r);
  const SedpResult *res = sedp_request_get_result (r);
  for (guint i = 0; i < 8; i++)
    CU_ASSERT_EQUAL (item_int (res, i, "b_batch"), 8);
  CU_ASSERT (dt < 250000);
  sedp_request_unref (r);
  /* Twenty frames: batches never exceed eight. */
  run_one (p, "many", 20, &r);
  res = sedp_request_get_result (r);
  for (guint i = 0; i < 20; i++)
    CU_ASSERT (item_int (res, i, "b_batch") >= 1 && item_int (res, i, "b_batch") <= 8);
  sedp_request_unref (r);
  /* One frame alone: the worker lingers up to batch_timeout_us for more. */
  dt = run_one (p, "alone", 1, &r);
  CU_ASSERT (dt >= 290000);
  CU_ASSERT_EQUAL (item_int (sedp_request_get_result (r), 0, "b_batch"), 1);
  sedp_request_unref (r);
  sedp_pipeline_free (p);

  /* Without a timeout the worker takes what is there at once. */
  p = start_pipeline ("[pipeline]\nframe_rows = 1\n[stage reader]\nplugin = passthrough\nscope = request\n"
                      "[stage b]\nplugin = stamp\nafter = reader\nbatch = 8\n");
  dt = run_one (p, "alone", 1, &r);
  CU_ASSERT (dt < 200000);
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

/* ---- deadlines ---- */

static void
test_deadline_timeout (void)
{
  const char *text = "[pipeline]\ndeadline_ms = 50\nframe_rows = 4\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage slow]\nplugin = synthetic_work\nafter = reader\nsleep_us = 300000\n"
                     "[stage after]\nplugin = passthrough\nafter = slow\n";
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r;
  gint64 dt = run_one (p, "late", 8, &r);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_TIMEOUT);
  CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "deadline"));
  CU_ASSERT (dt >= 45000 && dt < 280000); /* answered at the deadline, not after the work */
  CU_ASSERT_EQUAL (sedp_result_get_item_status (res, 0), SEDP_ITEM_PENDING);
  sedp_request_unref (r);
  /* The frames that were late are dropped at the next stage's entry. */
  for (guint i = 0; i < 100 && counter_value (p, "after", "stage_expired_total") == 0; i++)
    g_usleep (50000);
  CU_ASSERT (counter_value (p, "after", "stage_expired_total") >= 1);
  CU_ASSERT_EQUAL (counter_value (p, "after", "stage_events_total"), 0);
  /* A request with its own, longer deadline completes. */
  Collector c;
  collector_init (&c);
  SedpRequest *ok = make_request ("patient", 2, 3, g_get_monotonic_time () + 5000000);
  sedp_pipeline_submit (p, ok, collector_done, &c);
  CU_ASSERT_EQUAL (collector_wait (&c, 1, 10), 1);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (ok)), SEDP_STATUS_OK);
  sedp_request_unref (ok);
  collector_clear (&c);
  sedp_pipeline_free (p);
}

/* ---- errors ---- */

static void
test_batch_error_isolated (void)
{
  const char *text = "[pipeline]\nframe_rows = 2\ndeadline_ms = 30000\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage faults]\nplugin = fault_injector\nafter = reader\nbatch = 16\n"
                     "batch_timeout_us = 20000\nfail_requests = r3, r7\nfail_batch = true\n"
                     "[stage score]\nplugin = synthetic_work\nafter = faults\noutput = score\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  submit_numbered (p, &c, 20, NULL, 5);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 20, 30), 20);
  for (guint k = 0; k < 20; k++) {
    SedpRequest *r = c.done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = find_seq (r);
    if (seq == 3 || seq == 7) {
      CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
      CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "stage 'faults'"));
      CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "injected failure"));
      for (guint i = 0; i < 5; i++)
        CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), SEDP_ITEM_FAILED);
    } else {
      CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
      for (guint i = 0; i < 5; i++)
        CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), SEDP_ITEM_SCORED);
    }
  }
  CU_ASSERT_EQUAL (counter_value (p, "faults", "stage_errors_total"), 6); /* 3 frames × 2 */
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_row_errors (void)
{
  const char *text = "[pipeline]\nframe_rows = 3\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage faults]\nplugin = fault_injector\nafter = reader\nfail_items = 1, 3\n"
                     "drop_items = 2\nmessage = bad row\n"
                     "[stage score]\nplugin = synthetic_work\nafter = faults\noutput = score\n";
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r;
  run_one (p, "rows", 7, &r);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_PARTIAL);
  CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "2 of 7 items failed"));
  for (guint i = 0; i < 7; i++) {
    SedpItemStatus want = (i == 1 || i == 3) ? SEDP_ITEM_FAILED : i == 2 ? SEDP_ITEM_DROPPED : SEDP_ITEM_SCORED;
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), want);
    if (want == SEDP_ITEM_FAILED)
      CU_ASSERT_STRING_EQUAL (sedp_result_get_item_message (res, i), "stage 'faults': bad row");
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    if (want == SEDP_ITEM_SCORED) {
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      CU_ASSERT_EQUAL (int_at (f, "item_id", row), 1000 + i);
      CU_ASSERT_PTR_NOT_NULL (sedp_frame_get_column (f, "score"));
    }
  }
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

/* Rows answered early (from a cache) leave the pipeline with the columns they have, and are
 * reported as cached; the other rows go on. */
static void
test_answered_rows (void)
{
  const char *text = "[pipeline]\nframe_rows = 4\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage early]\nplugin = stamp\nafter = reader\n"
                     "[stage cache]\nplugin = fault_injector\nafter = early\nanswer_items = 0, 5, 6\n"
                     "[stage late]\nplugin = stamp\nafter = cache\n";
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r;
  run_one (p, "cached", 9, &r);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  for (guint i = 0; i < 9; i++) {
    gboolean answered = i == 0 || i == 5 || i == 6;
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), answered ? SEDP_ITEM_CACHED : SEDP_ITEM_SCORED);
    CU_ASSERT_EQUAL (item_int (res, i, "early_item"), i);
    /* Answered rows never reached the late stage. */
    CU_ASSERT_EQUAL (item_int (res, i, "late_item"), answered ? G_MININT64 : (gint64) i);
  }
  sedp_request_unref (r);
  CU_ASSERT_EQUAL (counter_value (p, "late", "stage_events_total"), 3); /* frames 0, 1, 2 */
  sedp_pipeline_free (p);
}

static void
test_request_scope_failure_and_drop (void)
{
  const char *text = "[pipeline]\nframe_rows = 3\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage user]\nplugin = fault_injector\nafter = reader\nscope = request\n"
                     "fail_requests = bad\ndrop_requests = skip\n"
                     "[stage items]\nplugin = passthrough\nafter = reader\n"
                     "[stage join]\nplugin = passthrough\nafter = user, items\n";
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r;
  run_one (p, "bad", 5, &r);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (r)), SEDP_STATUS_FAILED);
  CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (sedp_request_get_result (r)), "stage 'user'"));
  sedp_request_unref (r);
  run_one (p, "skip", 5, &r);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (r)), SEDP_STATUS_OK);
  for (guint i = 0; i < 5; i++)
    CU_ASSERT_EQUAL (sedp_result_get_item_status (sedp_request_get_result (r), i), SEDP_ITEM_DROPPED);
  sedp_request_unref (r);
  run_one (p, "good", 5, &r);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (r)), SEDP_STATUS_OK);
  for (guint i = 0; i < 5; i++)
    CU_ASSERT_EQUAL (sedp_result_get_item_status (sedp_request_get_result (r), i), SEDP_ITEM_SCORED);
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

/* ---- load signals ---- */

/* What a stage reads of the pipeline's load (sdk/sedp/load.h), written into columns by the
 * stamp plugin: requests and items in flight, the downstream p99 (the slow stage sleeps 20 ms a
 * call, so its residence is at least that), the queues' capacities, the deadline budget. */
static void
test_load_signals (void)
{
  const char *text = "[pipeline]\ndeadline_ms = 30000\n"
                     "[stage reader]\nplugin = stamp\nscope = request\nqueue_capacity = 64\n"
                     "[stage probe]\nplugin = stamp\nafter = reader\nscope = request\nload = true\n"
                     "[stage slow]\nplugin = synthetic_work\nafter = probe\nsleep_us = 20000\n"
                     "queue_capacity = 32\n"
                     "[stage sink]\nplugin = stamp\nafter = slow\nload = true\nqueue_capacity = 16\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  for (guint i = 0; i < 8; i++) { /* one at a time: the windows see the slow stage */
    CU_ASSERT_EQUAL (submit_numbered (p, &c, 1, NULL, 3), 1);
    CU_ASSERT_EQUAL (collector_wait (&c, i + 1, 10), i + 1);
  }
  CU_ASSERT_EQUAL (submit_numbered (p, &c, 4, NULL, 3), 4); /* then four at once */
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 12, 10), 12);
  for (guint k = 8; k < 12; k++) {
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (result_of (&c, k), 0, &row);
    CU_ASSERT_PTR_NOT_NULL_FATAL (f);
    /* Four at once, and the last of the eight before may still be finishing (the completion
     * callback runs before the request leaves the count). */
    gint64 reqs = int_at (f, "probe_inflight", row), items = int_at (f, "probe_items_inflight", row);
    if (reqs < 1 || reqs > 5 || items < 3 || items > 15)
      fprintf (stderr, "\n  in flight: %" G_GINT64_FORMAT " requests, %" G_GINT64_FORMAT " items\n",
               reqs, items);
    CU_ASSERT (reqs >= 1 && reqs <= 5);
    CU_ASSERT (items >= 3 && items <= 15);
    gint64 down = int_at (f, "probe_downstream_p99_us", row);
    if (down < 20000 || down > 500000)
      fprintf (stderr, "\n  downstream p99 %" G_GINT64_FORMAT " us\n", down);
    CU_ASSERT (down >= 20000 && down <= 500000);
    CU_ASSERT_EQUAL (int_at (f, "probe_downstream_capacity", row), 32 + 16);
    CU_ASSERT_EQUAL (int_at (f, "probe_entry_capacity", row), 64);
    CU_ASSERT (int_at (f, "probe_remaining_us", row) > 20000000 &&
               int_at (f, "probe_remaining_us", row) <= 30000000);
    CU_ASSERT_EQUAL (int_at (f, "sink_downstream_p99_us", row), 0); /* nothing after a sink */
    CU_ASSERT_EQUAL (int_at (f, "sink_downstream_capacity", row), 0);
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* ---- backpressure and shutdown ---- */

static void
test_backpressure_overloaded (void)
{
  const char *text = "[pipeline]\ndeadline_ms = 30000\n"
                     "[stage reader]\nplugin = synthetic_work\nscope = request\nsleep_us = 20000\n"
                     "queue_capacity = 2\n"
                     "[stage items]\nplugin = passthrough\nafter = reader\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  guint accepted = 0, overloaded = 0;
  for (guint i = 0; i < 20; i++) {
    char id[16];
    g_snprintf (id, sizeof id, "r%u", i);
    SedpRequest *r = make_request (id, i, 2, 0);
    SedpStatus s = sedp_pipeline_submit (p, r, collector_done, &c);
    if (s == SEDP_STATUS_OK)
      accepted++;
    else if (s == SEDP_STATUS_OVERLOADED)
      overloaded++;
    /* A refused request may be submitted again later. */
    sedp_request_unref (r);
  }
  CU_ASSERT (overloaded >= 10);
  CU_ASSERT (accepted >= 2 && accepted <= 4);
  CU_ASSERT_EQUAL (accepted + overloaded, 20);
  CU_ASSERT_EQUAL (collector_wait (&c, accepted, 10), accepted);
  g_usleep (100000);
  CU_ASSERT_EQUAL (c.done->len, accepted); /* each accepted request answered exactly once */
  for (guint k = 0; k < c.done->len; k++)
    CU_ASSERT_EQUAL (sedp_result_get_status (result_of (&c, k)), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (counter_value (p, "pipeline", "overloaded_total"), overloaded);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_resubmit_after_overload (void)
{
  const char *text = "[pipeline]\n[stage reader]\nplugin = synthetic_work\nscope = request\n"
                     "sleep_us = 30000\nqueue_capacity = 1\n"
                     "[stage items]\nplugin = passthrough\nafter = reader\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  SedpRequest *a = make_request ("a", 1, 1, 0), *b = make_request ("b", 2, 1, 0),
              *d = make_request ("d", 3, 1, 0);
  sedp_pipeline_submit (p, a, collector_done, &c);
  g_usleep (5000); /* a is being processed, the channel is empty */
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, b, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, d, collector_done, &c), SEDP_STATUS_OVERLOADED);
  CU_ASSERT_EQUAL (collector_wait (&c, 2, 10), 2);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, d, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (collector_wait (&c, 3, 10), 3);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (d)), SEDP_STATUS_OK);
  sedp_request_unref (a);
  sedp_request_unref (b);
  sedp_request_unref (d);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_shutdown_in_flight (void)
{
  g_autofree char *text = g_strconcat (join_pipeline, NULL);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 100;
  g_autofree guint *n_items = g_new (guint, n);
  guint accepted = 0;
  for (guint i = 0; i < n; i++) {
    char id[16];
    g_snprintf (id, sizeof id, "r%u", i);
    n_items[i] = 1 + i % 17;
    SedpRequest *r = make_request (id, i, n_items[i], 0);
    accepted += sedp_pipeline_submit (p, r, collector_done, &c) == SEDP_STATUS_OK;
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL (accepted, n);
  /* Stop at once: every accepted request is finished (drained), none is lost. */
  sedp_pipeline_stop (p);
  CU_ASSERT_EQUAL (c.done->len, n);
  check_joined (&c, n, n_items);
  SedpRequest *late = make_request ("late", 1, 1, 0);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, late, collector_done, &c), SEDP_STATUS_CANCELLED);
  sedp_request_unref (late);
  sedp_pipeline_free (p);
  CU_ASSERT_EQUAL (c.done->len, n);
  collector_clear (&c);
}

/* ---- sync mode, sources, request data ---- */

static void
run_scores (const char *mode, GHashTable *scores)
{
  g_autofree char *text = g_strdup_printf (
      "[pipeline]\nmode = %s\nframe_rows = 5\n"
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage user]\nplugin = synthetic_work\nafter = reader\nscope = request\noutput = uscore\n"
      "[stage items]\nplugin = synthetic_work\nafter = reader\nparallelism = 2\nbatch = 4\nspin_us = 3\n"
      "[stage score]\nplugin = synthetic_work\nafter = user, items\nbatch = 8\noutput = score\nseed = 5\n",
      mode);
  SedpPipeline *p = start_pipeline (text);
  CU_ASSERT_EQUAL (sedp_pipeline_get_n_threads (p), 5);
  Collector c;
  collector_init (&c);
  g_autofree guint *counts = ascending_counts (30);
  CU_ASSERT_EQUAL (submit_numbered (p, &c, 30, counts, 0), 30);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 30, 30), 30);
  for (guint k = 0; k < 30; k++) {
    SedpRequest *r = c.done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      const SedpColumn *s = sedp_frame_get_column (f, "score");
      const SedpColumn *u = sedp_frame_get_column (f, "uscore");
      CU_ASSERT_PTR_NOT_NULL_FATAL (s);
      CU_ASSERT_PTR_NOT_NULL_FATAL (u);
      CU_ASSERT (sedp_column_is_broadcast (u));
      double v = sedp_column_get_float32 (s)[row] + 10.0 * sedp_column_get_float32 (u)[0];
      g_hash_table_insert (scores, g_strdup_printf ("%s/%u", sedp_request_get_id (r), i),
                           g_memdup2 (&v, sizeof v));
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_sync_matches_staged (void)
{
  g_autoptr (GHashTable) a = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GHashTable) b = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  run_scores ("staged", a);
  run_scores ("sync", b);
  CU_ASSERT_EQUAL (g_hash_table_size (a), 465);
  CU_ASSERT_EQUAL (g_hash_table_size (a), g_hash_table_size (b));
  GHashTableIter it;
  gpointer k, v;
  guint same = 0;
  g_hash_table_iter_init (&it, a);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    double *w = g_hash_table_lookup (b, k);
    same += w && *w == *(double *) v;
  }
  CU_ASSERT_EQUAL (same, 465);
}

static void
test_source_items_and_request_data (void)
{
  const char *text = "[pipeline]\nframe_rows = 2\n"
                     "[stage reader]\nplugin = stamp\nscope = request\nmake_items = true\nset_data = true\n"
                     "[stage items]\nplugin = stamp\nafter = reader\ncheck_data = true\nparallelism = 2\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  SedpRequest *r = sedp_request_new ("payload", 0);
  g_autoptr (GBytes) payload = g_bytes_new_static ("7", 1);
  sedp_request_set_payload (r, payload, "text/plain");
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 10), 1);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (sedp_result_get_n_items (res), 7);
  for (guint i = 0; i < 7; i++) {
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    CU_ASSERT_PTR_NOT_NULL_FATAL (f);
    CU_ASSERT_EQUAL (int_at (f, "item_id", row), 1000 + i);
    CU_ASSERT_EQUAL (int_at (f, "items_item", row), i);
    CU_ASSERT (int_at (f, "items_rows", row) <= 2);
  }
  sedp_request_unref (r);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_zero_items (void)
{
  SedpPipeline *p = start_pipeline ("[pipeline]\n[stage reader]\nplugin = passthrough\nscope = request\n"
                                    "[stage items]\nplugin = stamp\nafter = reader\n");
  SedpRequest *r;
  run_one (p, "empty", 0, &r);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (sedp_result_get_n_items (res), 0);
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("runtime", NULL, NULL);
  CU_add_test (s, "join and broadcast, many requests, random delays", test_join_broadcast_concurrent);
  CU_add_test (s, "gather item frames into a request-scope stage", test_gather);
  CU_add_test (s, "drop_columns removes matching columns after the stage", test_drop_columns);
  CU_add_test (s, "cpus: workers run on the stage's or the pipeline's CPUs", test_cpus);
  CU_add_test (s, "join drops rows shed in one branch", test_join_with_shed_rows);
  CU_add_test (s, "gather, shed at request scope, scatter back", test_gather_shed_scatter);
  CU_add_test (s, "batch limit and batch timeout", test_batch_limit_and_timeout);
  CU_add_test (s, "deadline: timeout status, expired events dropped", test_deadline_timeout);
  CU_add_test (s, "a failing batch only fails its own requests", test_batch_error_isolated);
  CU_add_test (s, "row failures and drops", test_row_errors);
  CU_add_test (s, "request-scope failure and drop", test_request_scope_failure_and_drop);
  CU_add_test (s, "rows answered early are reported as cached", test_answered_rows);
  CU_add_test (s, "load signals read by a stage", test_load_signals);
  CU_add_test (s, "backpressure: overloaded at entry", test_backpressure_overloaded);
  CU_add_test (s, "a refused request can be submitted again", test_resubmit_after_overload);
  CU_add_test (s, "stop drains requests in flight", test_shutdown_in_flight);
  CU_add_test (s, "sync mode gives the same results as staged", test_sync_matches_staged);
  CU_add_test (s, "source makes items from the payload; request data", test_source_items_and_request_data);
  CU_add_test (s, "a request without items", test_zero_items);
  int status = sedp_test_run ();
  sedp_registry_free (test_registry);
  return status;
}
