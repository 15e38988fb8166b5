/* Routing in the runtime (docs/routing.md): routed completion, merges that wait only for the
 * branches taken, skips that never queue behind an untaken branch, deadlines, quotas, routers at
 * item scope, a stress run, and the graph's refusals. The router is the test plugin `stamp` with
 * `branches` (tests/runtime/stamp.c): request "rN:a+b" takes branches a and b. */
#include "runtime-helpers.h"

/* reader → ab (router: a, b) and items; A after items and ab:a, B after items and ab:b (slow);
 * join (request scope) after A and B: a merge. */
static const char *ab_pipeline =
    "[pipeline]\nframe_rows = 4\ndeadline_ms = 5000\n"
    "[stage reader]\nplugin = stamp\nscope = request\n"
    "[stage ab]\nplugin = stamp\nafter = reader\nscope = request\nbranches = a, b\n%s\n"
    "[stage items]\nplugin = stamp\nafter = reader\nparallelism = 2\n"
    "[stage A]\nplugin = stamp\nafter = items, ab:a\nparallelism = 2\n"
    "[stage B]\nplugin = stamp\nafter = items, ab:b\ndelay_us = %u\n"
    "[stage join]\nplugin = stamp\nafter = A, B\nscope = request\n";

static SedpPipeline *
start_ab (const char *extra, guint b_delay_us)
{
  g_autofree char *text = g_strdup_printf (ab_pipeline, extra, b_delay_us);
  return start_pipeline (text);
}

static SedpRequest *
submit_one (SedpPipeline *p, Collector *c, const char *id, guint seq, guint n_items,
            SedpStatus *status)
{
  SedpRequest *r = make_request (id, seq, n_items, 0);
  *status = sedp_pipeline_submit (p, r, collector_done, c);
  return r;
}

static SedpRequest *
find_done (Collector *c, const char *id)
{
  for (guint k = 0; k < c->done->len; k++)
    if (strcmp (sedp_request_get_id (c->done->pdata[k]), id) == 0)
      return c->done->pdata[k];
  return NULL;
}

/* Whether every item of @r went through stage @tag (a column @tag_req of its own request). */
static gboolean
all_items_through (SedpRequest *r, const char *tag)
{
  const SedpResult *res = sedp_request_get_result (r);
  g_autofree char *col = g_strdup_printf ("%s_req", tag);
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    if (f == NULL || int_at (f, col, row) != id_hash (sedp_request_get_id (r)))
      return FALSE;
  }
  return sedp_result_get_n_items (res) > 0;
}

static gboolean
no_item_through (SedpRequest *r, const char *tag)
{
  const SedpResult *res = sedp_request_get_result (r);
  g_autofree char *col = g_strdup_printf ("%s_req", tag);
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    if (f && sedp_frame_get_column (f, col))
      return FALSE;
  }
  return TRUE;
}

static const char *
first_route (SedpRequest *r)
{
  return sedp_result_get_routes (sedp_request_get_result (r))[0];
}

static void
test_routed_completion (void)
{
  SedpPipeline *p = start_ab ("", 0);
  Collector c;
  collector_init (&c);
  const char *ids[] = {"r0:a", "r1:b", "r2:a+b", "r3:"};
  for (guint k = 0; k < G_N_ELEMENTS (ids); k++) {
    SedpStatus st;
    sedp_request_unref (submit_one (p, &c, ids[k], k, 9, &st));
    CU_ASSERT_EQUAL (st, SEDP_STATUS_OK);
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 4, 10), 4);
  SedpRequest *a = find_done (&c, "r0:a"), *b = find_done (&c, "r1:b");
  SedpRequest *both = find_done (&c, "r2:a+b"), *none = find_done (&c, "r3:");
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (a)), SEDP_STATUS_OK);
  CU_ASSERT_TRUE (all_items_through (a, "A") && no_item_through (a, "B") && all_items_through (a, "join"));
  CU_ASSERT_TRUE (all_items_through (b, "B") && no_item_through (b, "A") && all_items_through (b, "join"));
  CU_ASSERT_TRUE (all_items_through (both, "A") && all_items_through (both, "B"));
  CU_ASSERT_STRING_EQUAL (first_route (a), "ab:a");
  CU_ASSERT_STRING_EQUAL (first_route (b), "ab:b");
  const char *const *routes = sedp_result_get_routes (sedp_request_get_result (both));
  CU_ASSERT_TRUE (routes[0] && routes[1] && routes[2] == NULL);
  /* Routed nowhere: every sink got a skip; the items are dropped, the request is answered. */
  const SedpResult *res = sedp_request_get_result (none);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  CU_ASSERT_PTR_NULL (first_route (none));
  CU_ASSERT_EQUAL (sedp_result_get_item_status (res, 0), SEDP_ITEM_DROPPED);
  CU_ASSERT_STRING_EQUAL (sedp_result_get_item_message (res, 0), "no branch it took reached a sink");
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A request routed to `a` never waits behind the slow `b` (skips are not queued). */
static void
test_skip_does_not_queue (void)
{
  SedpPipeline *p = start_ab ("", 200000);
  Collector c;
  collector_init (&c);
  SedpStatus st;
  for (guint k = 0; k < 3; k++) {
    g_autofree char *id = g_strdup_printf ("slow%u:b", k);
    sedp_request_unref (submit_one (p, &c, id, k, 9, &st));
  }
  g_usleep (20000);
  SedpRequest *fast = submit_one (p, &c, "fast:a", 9, 9, &st);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 10), 1);
  CU_ASSERT_STRING_EQUAL (sedp_request_get_id (c.done->pdata[0]), "fast:a");
  CU_ASSERT_TRUE (sedp_result_get_latency_us (sedp_request_get_result (fast)) < 150000 ||
                  g_getenv ("SEDP_VALGRIND"));
  collector_wait (&c, 4, 10);
  sedp_request_unref (fast);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* The deadline of a request on the slow branch fires; one on the other branch is answered. */
static void
test_deadline_on_branch (void)
{
  g_autofree char *text = g_strdup_printf (ab_pipeline, "", 400000);
  char *d = strstr (text, "deadline_ms = 5000");
  memcpy (d, "deadline_ms = 0100", 18);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  SedpStatus st;
  sedp_request_unref (submit_one (p, &c, "late:b", 1, 9, &st));
  sedp_request_unref (submit_one (p, &c, "ok:a", 2, 9, &st));
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 2, 10), 2);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (find_done (&c, "late:b"))),
                   SEDP_STATUS_TIMEOUT);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (find_done (&c, "ok:a"))),
                   SEDP_STATUS_OK);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static guint
count_status (Collector *c, SedpStatus status, const char *needle)
{
  guint n = 0;
  for (guint k = 0; k < c->done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c->done->pdata[k]);
    const char *msg = sedp_result_get_message (res);
    n += sedp_result_get_status (res) == status && (!needle || (msg && strstr (msg, needle)));
  }
  return n;
}

static void
test_quota_inflight (void)
{
  /* B sleeps 200 ms exactly: the first request holds the branch's one unit while the next two
   * are routed. */
  g_autofree char *text = g_strdup_printf (ab_pipeline, "branch_max_inflight = b:1", 200000);
  char *b = strstr (text, "[stage B]");
  g_autofree char *fixed = g_strdup_printf ("%.*s[stage B]\nfixed_delay = true%s", (int) (b - text),
                                            text, b + strlen ("[stage B]"));
  SedpPipeline *p = start_pipeline (fixed);
  Collector c;
  collector_init (&c);
  SedpStatus st;
  for (guint k = 0; k < 3; k++) {
    g_autofree char *id = g_strdup_printf ("q%u:b", k);
    sedp_request_unref (submit_one (p, &c, id, k, 4, &st));
  }
  sedp_request_unref (submit_one (p, &c, "free:a", 5, 4, &st));
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 4, 10), 4);
  CU_ASSERT_EQUAL (count_status (&c, SEDP_STATUS_OVERLOADED,
                                 "stage 'ab': branch 'b' is over its quota (in flight 1 of 1)"), 2);
  CU_ASSERT_EQUAL (count_status (&c, SEDP_STATUS_OK, NULL), 2);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (find_done (&c, "free:a"))),
                   SEDP_STATUS_OK);
  /* The unit is given back: the branch takes a request again. */
  sedp_request_unref (submit_one (p, &c, "again:b", 9, 4, &st));
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 5, 10), 5);
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (find_done (&c, "again:b"))),
                   SEDP_STATUS_OK);
  GString *prom = g_string_new (NULL);
  sedp_metrics_write_prometheus (sedp_pipeline_get_metrics (p), prom);
  CU_ASSERT_PTR_NOT_NULL (strstr (prom->str, "sedp_branch_refused_total{stage=\"ab\",branch=\"b\"} 2"));
  CU_ASSERT_PTR_NOT_NULL (strstr (prom->str, "sedp_branch_inflight{stage=\"ab\",branch=\"b\"} 0"));
  g_string_free (prom, TRUE);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_quota_rate (void)
{
  SedpPipeline *p = start_ab ("branch_max_rate = a:5", 0);
  Collector c;
  collector_init (&c);
  SedpStatus st;
  for (guint k = 0; k < 6; k++) {
    g_autofree char *id = g_strdup_printf ("r%u:a", k);
    sedp_request_unref (submit_one (p, &c, id, k, 2, &st));
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 6, 10), 6);
  /* A bucket of 0.1 s of 5/s holds one token: the first passes, the burst right after does not
   * (a slow machine may refill one more). */
  guint refused = count_status (&c, SEDP_STATUS_OVERLOADED, "(rate 5/s)");
  CU_ASSERT_TRUE (refused >= 4 && refused <= 5);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* An item-scope router sends frame J down branch J mod 2; the gather concatenates the frames of
 * both branches, keeping the columns every branch wrote (both stamp `br_*`). */
static void
test_item_router (void)
{
  const char *text =
      "[pipeline]\nframe_rows = 3\n"
      "[stage reader]\nplugin = stamp\nscope = request\n"
      "[stage split]\nplugin = stamp\nafter = reader\nbranches = even, odd\nroute = frame\n"
      "[stage E]\nplugin = stamp\nafter = split:even\ntag = br\n"
      "[stage O]\nplugin = stamp\nafter = split:odd\nparallelism = 2\ntag = br\n"
      "[stage rank]\nplugin = stamp\nafter = E, O\nscope = request\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  SedpStatus st;
  SedpRequest *r = submit_one (p, &c, "items", 1, 11, &st);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 10), 1);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  guint bad = 0;
  for (guint i = 0; i < 11; i++) {
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    bad += f == NULL || int_at (f, "item_id", row) != 1000 + i || int_at (f, "br_item", row) != i ||
           int_at (f, "rank_rows", row) != 11;
  }
  CU_ASSERT_EQUAL (bad, 0);
  /* Frames 0 and 2 went to E, 1 and 3 to O. */
  GString *prom = g_string_new (NULL);
  sedp_metrics_write_prometheus (sedp_pipeline_get_metrics (p), prom);
  CU_ASSERT_PTR_NOT_NULL (strstr (prom->str, "sedp_stage_events_total{stage=\"E\"} 2\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (prom->str, "sedp_stage_events_total{stage=\"O\"} 2\n"));
  CU_ASSERT_PTR_NOT_NULL (strstr (prom->str, "sedp_branch_requests_total{stage=\"split\",branch=\"odd\"} 2\n"));
  g_string_free (prom, TRUE);
  sedp_request_unref (r);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* Many requests on random branches, with random delays: each completes with its own branches. */
static void
test_stress (void)
{
  SedpPipeline *p = start_ab ("parallelism = 2", 300);
  const guint n = g_getenv ("SEDP_VALGRIND") ? 40 : 400;
  const char *suffix[] = {":a", ":b", ":a+b"};
  Collector c;
  collector_init (&c);
  GRand *rng = g_rand_new_with_seed (11);
  for (guint i = 0; i < n; i++) {
    g_autofree char *id = g_strdup_printf ("s%u%s", i, suffix[g_rand_int_range (rng, 0, 3)]);
    SedpStatus st;
    sedp_request_unref (submit_one (p, &c, id, i, (guint) g_rand_int_range (rng, 1, 20), &st));
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 60), n);
  guint bad = 0;
  for (guint k = 0; k < n; k++) {
    SedpRequest *r = c.done->pdata[k];
    const char *id = sedp_request_get_id (r);
    gboolean a = strstr (id, ":a") != NULL, b = strstr (id, "b") != NULL;
    bad += sedp_result_get_status (sedp_request_get_result (r)) != SEDP_STATUS_OK ||
           (a ? !all_items_through (r, "A") : !no_item_through (r, "A")) ||
           (b ? !all_items_through (r, "B") : !no_item_through (r, "B")) ||
           !all_items_through (r, "join");
  }
  CU_ASSERT_EQUAL (bad, 0);
  g_rand_free (rng);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* The graph refuses what cannot route; @needle is in the message. */
static void
refused (const char *text, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "r.pipeline", &error);
  SedpGraph *g = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  CU_ASSERT_PTR_NULL (g);
  if (g)
    sedp_graph_free (g);
  CU_ASSERT_TRUE (g_error_matches (error, SEDP_DSL_ERROR, code));
  if (error && !strstr (error->message, needle))
    fprintf (stderr, "\n  got: %s\n  want: %s\n", error->message, needle);
  CU_ASSERT_TRUE (error && strstr (error->message, needle));
}

#define HEAD "[pipeline]\n[stage reader]\nplugin = stamp\nscope = request\n"
#define ROUTER "[stage ab]\nplugin = stamp\nafter = reader\nscope = request\nbranches = a, b\n"

static void
test_graph_refusals (void)
{
  refused (HEAD "[stage x]\nplugin = stamp\nafter = reader:a\n", SEDP_DSL_ERROR_BRANCH,
           "r.pipeline:7: [stage x] after: stage 'reader' has no branches (plugin stamp is not a "
           "router); write 'after = reader'");
  refused (HEAD ROUTER "[stage x]\nplugin = stamp\nafter = ab:a\n[stage y]\nplugin = stamp\nafter = ab:c\n",
           SEDP_DSL_ERROR_BRANCH, "[stage y] after: stage 'ab' has no branch 'c' (its branches: a, b)");
  refused (HEAD ROUTER "[stage x]\nplugin = stamp\nafter = ab:a\n", SEDP_DSL_ERROR_BRANCH,
           "r.pipeline:5: [stage ab]: branch 'b' reaches no sink: no stage has 'after = ab:b'");
  refused (HEAD ROUTER "branch_max_rate = c:5\n[stage x]\nplugin = stamp\nafter = ab:a, ab:b\n",
           SEDP_DSL_ERROR_BRANCH, "[stage ab] branch_max_rate: no branch 'c' (its branches: a, b)");
  refused (HEAD ROUTER "branch_max_inflight = a:1.5\n[stage x]\nplugin = stamp\nafter = ab:a, ab:b\n",
           SEDP_DSL_ERROR_INVALID_VALUE, "'a:1.5' is not BRANCH:N");
  refused (HEAD "[stage ab]\nplugin = stamp\nafter = reader\nbranches = a, b\nbranch_max_inflight = a:2\n"
                "[stage x]\nplugin = stamp\nafter = ab:a, ab:b\n",
           SEDP_DSL_ERROR_BRANCH, "quotas need a router at request scope (this stage runs at item scope)");
  refused (HEAD "[stage ab]\nplugin = stamp\nafter = reader, x:a\nscope = request\nbranches = a\n"
                "[stage x]\nplugin = stamp\nafter = ab:a\nbranches = a\n",
           SEDP_DSL_ERROR_CYCLE, "cycle");
  refused (HEAD "[stage ab]\nplugin = stamp\nafter = reader\nscope = request\nbranches = a, A\n"
                "[stage x]\nplugin = stamp\nafter = ab:a\n",
           SEDP_DSL_ERROR_BRANCH, "among them 'A'");
}

/* sedp check's description and --dot name the branches. */
static void
test_graph_labels (void)
{
  g_autoptr (GError) error = NULL;
  const char *text = HEAD ROUTER "[stage x]\nplugin = stamp\nafter = ab:a, ab:b\n";
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "r.pipeline", &error);
  SedpGraph *g = sedp_graph_compile (spec, runtime_registry (), &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (g);
  GString *out = g_string_new (NULL);
  sedp_graph_describe (g, out);
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "branches=a,b"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "after=ab:a,ab:b"));
  g_string_truncate (out, 0);
  sedp_graph_write_dot (g, out);
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "\"ab\" -> \"x\" [label=\"a\", style=dashed];"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "\"ab\" -> \"x\" [label=\"b\", style=dashed];"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out->str, "\"reader\" -> \"ab\";"));
  g_string_free (out, TRUE);
  sedp_graph_free (g);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("routing", NULL, NULL);
  CU_add_test (s, "routed completion, merges, routes in the result", test_routed_completion);
  CU_add_test (s, "a skip never queues behind an untaken branch", test_skip_does_not_queue);
  CU_add_test (s, "deadlines on branches", test_deadline_on_branch);
  CU_add_test (s, "branch_max_inflight refuses and gives back", test_quota_inflight);
  CU_add_test (s, "branch_max_rate refuses a burst", test_quota_rate);
  CU_add_test (s, "an item-scope router and a gather of its branches", test_item_router);
  CU_add_test (s, "many requests on random branches", test_stress);
  CU_add_test (s, "the graph refuses what cannot route", test_graph_refusals);
  CU_add_test (s, "descriptions and dot name the branches", test_graph_labels);
  int status = sedp_test_run ();
  sedp_registry_free (test_registry);
  return status;
}
