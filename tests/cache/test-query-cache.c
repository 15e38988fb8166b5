/* sedp cache tests — the query cache (expiry, admission, invalidation by user, LRU order, model
 * versions, named caches, threads) and the query_cache stages in a running pipeline: rows that
 * hit are answered early (status "cached", with the cached score) and skip the scoring stage. */
#include "test-common.h"

#include "cube/cache/query-cache.h"
#include "graph/graph.h"
#include "runtime/pipeline.h"

#include <math.h>
#include <string.h>

static SedpQueryCache *
make (guint64 capacity, gint64 ttl_ms, double admit, guint n_scores)
{
  SedpQueryCacheOptions o = {capacity, ttl_ms, admit, n_scores};
  return sedp_query_cache_new (&o);
}

static gboolean
has (SedpQueryCache *qc, guint64 user, guint64 item, guint64 version, gint64 now, float *score)
{
  float tmp[4];
  return sedp_query_cache_lookup (qc, user, item, version, now, score ? score : tmp);
}

static void
test_hit_and_miss (void)
{
  SedpQueryCache *qc = make (100, 0, -1e30, 2);
  const float s[2] = {0.25f, 7.0f};
  float out[2] = {0};
  CU_ASSERT_FALSE (has (qc, 1, 2, 3, 0, out));
  CU_ASSERT_TRUE (sedp_query_cache_store (qc, 1, 2, 3, s, 0));
  CU_ASSERT_TRUE (has (qc, 1, 2, 3, 1000, out));
  CU_ASSERT_EQUAL (out[0], 0.25f);
  CU_ASSERT_EQUAL (out[1], 7.0f);
  /* Every part of the key counts: another user, item or model version misses. */
  CU_ASSERT_FALSE (has (qc, 9, 2, 3, 0, NULL));
  CU_ASSERT_FALSE (has (qc, 1, 9, 3, 0, NULL));
  CU_ASSERT_FALSE (has (qc, 1, 2, 9, 0, NULL));
  /* Refreshing a key replaces its scores. */
  const float s2[2] = {0.5f, 1.0f};
  CU_ASSERT_TRUE (sedp_query_cache_store (qc, 1, 2, 3, s2, 5));
  CU_ASSERT_TRUE (has (qc, 1, 2, 3, 6, out));
  CU_ASSERT_EQUAL (out[0], 0.5f);
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.lookups, 6);
  CU_ASSERT_EQUAL (st.hits, 2);
  CU_ASSERT_EQUAL (st.misses, 4);
  CU_ASSERT_EQUAL (st.stores, 2);
  CU_ASSERT_EQUAL (st.admitted, 2);
  CU_ASSERT_EQUAL (st.entries, 1);
  CU_ASSERT_EQUAL (sedp_query_cache_get_options (qc)->n_scores, 2);
  /* String ids have stable, distinct keys. */
  CU_ASSERT_EQUAL (sedp_query_cache_key_of_string ("alice"), sedp_query_cache_key_of_string ("alice"));
  CU_ASSERT_NOT_EQUAL (sedp_query_cache_key_of_string ("alice"), sedp_query_cache_key_of_string ("bob"));
  CU_ASSERT_EQUAL (sedp_query_cache_key_of_string (""), sedp_query_cache_key_of_string (NULL));
  sedp_query_cache_unref (qc);
}

static void
test_ttl (void)
{
  SedpQueryCache *qc = make (100, 50, -1e30, 1);
  const float s = 1.0f;
  sedp_query_cache_store (qc, 1, 1, 0, &s, 1000000);
  CU_ASSERT_TRUE (has (qc, 1, 1, 0, 1000000 + 50000, NULL)); /* exactly ttl old: still valid */
  CU_ASSERT_FALSE (has (qc, 1, 1, 0, 1000000 + 50001, NULL));
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.expired, 1);
  CU_ASSERT_EQUAL (st.entries, 0); /* an expired entry is removed */
  /* A store restarts the window. */
  sedp_query_cache_store (qc, 1, 1, 0, &s, 2000000);
  sedp_query_cache_store (qc, 1, 1, 0, &s, 2040000);
  CU_ASSERT_TRUE (has (qc, 1, 1, 0, 2080000, NULL));
  sedp_query_cache_unref (qc);
  /* ttl 0: never expires. */
  qc = make (10, 0, -1e30, 1);
  sedp_query_cache_store (qc, 1, 1, 0, &s, 0);
  CU_ASSERT_TRUE (has (qc, 1, 1, 0, G_MAXINT64 / 2, NULL));
  sedp_query_cache_unref (qc);
}

static void
test_admission (void)
{
  SedpQueryCache *qc = make (100, 0, 0.5, 1);
  const float low = 0.4f, high = 0.6f, edge = 0.5f, nan_score = NAN;
  CU_ASSERT_FALSE (sedp_query_cache_store (qc, 1, 1, 0, &low, 0));
  CU_ASSERT_FALSE (has (qc, 1, 1, 0, 0, NULL));
  CU_ASSERT_TRUE (sedp_query_cache_store (qc, 1, 2, 0, &high, 0));
  CU_ASSERT_TRUE (sedp_query_cache_store (qc, 1, 3, 0, &edge, 0));
  CU_ASSERT_FALSE (sedp_query_cache_store (qc, 1, 4, 0, &nan_score, 0));
  CU_ASSERT_TRUE (has (qc, 1, 2, 0, 0, NULL));
  CU_ASSERT_TRUE (has (qc, 1, 3, 0, 0, NULL));
  /* A newer score below the threshold removes the older entry: it is stale. */
  CU_ASSERT_FALSE (sedp_query_cache_store (qc, 1, 2, 0, &low, 1));
  CU_ASSERT_FALSE (has (qc, 1, 2, 0, 1, NULL));
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.rejected, 3);
  CU_ASSERT_EQUAL (st.admitted, 2);
  CU_ASSERT_EQUAL (st.entries, 1);
  sedp_query_cache_unref (qc);
}

static void
test_invalidate_user (void)
{
  SedpQueryCache *qc = make (1000, 0, -1e30, 1);
  const float s = 1.0f;
  for (guint64 item = 0; item < 30; item++) {
    sedp_query_cache_store (qc, 7, item, 1, &s, 0);
    sedp_query_cache_store (qc, 7, item, 2, &s, 0); /* another model version */
    sedp_query_cache_store (qc, 8, item, 1, &s, 0);
  }
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 7), 60);
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 7), 0);
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 12345), 0);
  guint left7 = 0, left8 = 0;
  for (guint64 item = 0; item < 30; item++) {
    left7 += has (qc, 7, item, 1, 0, NULL) + has (qc, 7, item, 2, 0, NULL);
    left8 += has (qc, 8, item, 1, 0, NULL);
  }
  CU_ASSERT_EQUAL (left7, 0);
  CU_ASSERT_EQUAL (left8, 30);
  /* The user's entries come back when stored again, and go again. */
  sedp_query_cache_store (qc, 7, 1, 1, &s, 0);
  CU_ASSERT_TRUE (has (qc, 7, 1, 1, 0, NULL));
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 7), 1);
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.invalidated, 61);
  CU_ASSERT_EQUAL (st.entries, 30);
  sedp_query_cache_clear (qc);
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.entries, 0);
  sedp_query_cache_unref (qc);
}

/* Least recently used first, where a lookup counts as a use. */
static void
test_lru_order (void)
{
  SedpQueryCache *qc = make (3, 0, -1e30, 1);
  const float s = 1.0f;
  sedp_query_cache_store (qc, 1, 1, 0, &s, 0);
  sedp_query_cache_store (qc, 1, 2, 0, &s, 0);
  sedp_query_cache_store (qc, 2, 3, 0, &s, 0);
  CU_ASSERT_TRUE (has (qc, 1, 1, 0, 0, NULL)); /* 1 is now the most recent; 2 the least */
  sedp_query_cache_store (qc, 2, 4, 0, &s, 0);
  CU_ASSERT_FALSE (has (qc, 1, 2, 0, 0, NULL));
  CU_ASSERT_TRUE (has (qc, 1, 1, 0, 0, NULL));
  CU_ASSERT_TRUE (has (qc, 2, 3, 0, 0, NULL));
  CU_ASSERT_TRUE (has (qc, 2, 4, 0, 0, NULL));
  /* Order now (old → new): 1, 3, 4. Two more evict 1 and 3. */
  sedp_query_cache_store (qc, 3, 5, 0, &s, 0);
  sedp_query_cache_store (qc, 3, 6, 0, &s, 0);
  CU_ASSERT_FALSE (has (qc, 1, 1, 0, 0, NULL));
  CU_ASSERT_FALSE (has (qc, 2, 3, 0, 0, NULL));
  CU_ASSERT_TRUE (has (qc, 2, 4, 0, 0, NULL));
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT_EQUAL (st.evictions, 3);
  CU_ASSERT_EQUAL (st.entries, 3);
  /* Eviction keeps the per-user index right: invalidating user 1 finds nothing left. */
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 1), 0);
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user (qc, 3), 2);
  sedp_query_cache_unref (qc);
  /* Capacity 0 stores nothing. */
  qc = make (0, 0, -1e30, 1);
  CU_ASSERT_FALSE (sedp_query_cache_store (qc, 1, 1, 0, &s, 0));
  CU_ASSERT_FALSE (has (qc, 1, 1, 0, 0, NULL));
  sedp_query_cache_unref (qc);
}

static void
test_many (void)
{
  SedpQueryCache *qc = make (100, 0, 0.5, 1);
  const guint64 items[] = {10, 11, 12, 13};
  const float scores[] = {0.9f, 0.1f, 0.7f, 0.6f};
  CU_ASSERT_EQUAL (sedp_query_cache_store_many (qc, 5, 1, items, 4, scores, 0), 3);
  float out[4] = {-1, -1, -1, -1};
  guint8 hit[4];
  CU_ASSERT_EQUAL (sedp_query_cache_lookup_many (qc, 5, 1, items, 4, 0, out, hit), 3);
  CU_ASSERT (hit[0] && !hit[1] && hit[2] && hit[3]);
  CU_ASSERT_EQUAL (out[0], 0.9f);
  CU_ASSERT_EQUAL (out[1], -1.0f);
  CU_ASSERT_EQUAL (out[3], 0.6f);
  sedp_query_cache_unref (qc);
}

typedef struct {
  SedpQueryCache *qc;
  guint seed;
  guint bad;
} Worker;

static gpointer
worker_run (gpointer data)
{
  Worker *w = data;
  GRand *rng = g_rand_new_with_seed (w->seed);
  guint rounds = g_getenv ("SEDP_VALGRIND") ? 3000 : 60000;
  for (guint i = 0; i < rounds; i++) {
    guint64 user = (guint64) g_rand_int_range (rng, 0, 300), item = (guint64) g_rand_int_range (rng, 0, 50);
    float s[2] = {(float) (user * 1000 + item), 1.0f}, out[2];
    switch (g_rand_int_range (rng, 0, 10)) {
    case 0:
      sedp_query_cache_invalidate_user (w->qc, user);
      break;
    case 1:
    case 2:
    case 3:
      sedp_query_cache_store (w->qc, user, item, 1, s, 0);
      break;
    default:
      /* A hit always has the key's own score. */
      if (sedp_query_cache_lookup (w->qc, user, item, 1, 0, out))
        w->bad += out[0] != s[0] || out[1] != 1.0f;
    }
  }
  g_rand_free (rng);
  return NULL;
}

static void
check_threads (guint64 capacity)
{
  SedpQueryCache *qc = make (capacity, 0, -1e30, 2);
  Worker w[4];
  GThread *t[4];
  for (guint i = 0; i < 4; i++) {
    w[i] = (Worker){qc, 40 + i, 0};
    t[i] = g_thread_new ("qc", worker_run, &w[i]);
  }
  for (guint i = 0; i < 4; i++) {
    g_thread_join (t[i]);
    CU_ASSERT_EQUAL (w[i].bad, 0);
  }
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  CU_ASSERT (st.entries <= capacity);
  CU_ASSERT_EQUAL (st.hits + st.misses, st.lookups);
  CU_ASSERT (st.hits > 0);
  sedp_query_cache_unref (qc);
}

static void
test_threads (void)
{
  check_threads (1000);    /* one shard */
  check_threads (100000);  /* sharded by user */
}

static void
test_named (void)
{
  SedpQueryCacheOptions o = {100, 1000, 0.0, 1};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_query_cache_find ("named"));
  SedpQueryCache *a = sedp_query_cache_acquire ("named", &o, &error);
  SedpQueryCache *b = sedp_query_cache_acquire ("named", &o, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_EQUAL (a, b);
  SedpQueryCacheOptions other = o;
  other.capacity = 5;
  CU_ASSERT_PTR_NULL (sedp_query_cache_acquire ("named", &other, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "'named'", "capacity 100", "must agree");
  SedpQueryCache *c = sedp_query_cache_acquire ("other", &other, NULL);
  const float s = 1.0f;
  sedp_query_cache_store (a, 3, 1, 0, &s, 0);
  sedp_query_cache_store (c, 3, 1, 0, &s, 0);
  sedp_query_cache_store (c, 4, 1, 0, &s, 0);
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user_everywhere (3), 2);
  SedpQueryCache *found = sedp_query_cache_find ("named");
  CU_ASSERT_PTR_EQUAL (found, a);
  sedp_query_cache_unref (found);
  sedp_query_cache_unref (a);
  sedp_query_cache_unref (b);
  CU_ASSERT_PTR_NULL (sedp_query_cache_find ("named")); /* gone with its last user */
  sedp_query_cache_unref (c);
  CU_ASSERT_PTR_NULL (sedp_query_cache_find ("other"));
  CU_ASSERT_EQUAL (sedp_query_cache_invalidate_user_everywhere (4), 0);
}

/* ---- the stages in a pipeline ---- */

static SedpRegistry *registry;

static SedpPipeline *
start (const char *text)
{
  if (registry == NULL) {
    const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
    registry = sedp_registry_new (dirs);
  }
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "qc.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, registry, &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p)
    sedp_pipeline_start (p, &error);
  if (error)
    fprintf (stderr, "\n  pipeline: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  return p;
}

/* Runs one request of user @user with items @first .. @first + @n - 1 and waits for it. */
static SedpRequest *
run (SedpPipeline *p, const char *id, gint64 user, gint64 first, guint n)
{
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *uf = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (uf, "user_id", SEDP_COLUMN_INT64, 1))[0] = user;
  SedpFrame *items = sedp_frame_new (n);
  gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
  for (guint i = 0; i < n; i++)
    ids[i] = first + i;
  sedp_request_set_frames (r, uf, items);
  CU_ASSERT_EQUAL_FATAL (sedp_pipeline_run (p, r), SEDP_STATUS_OK);
  return r;
}

static float
score_of (const SedpResult *res, guint item)
{
  guint row = 0;
  const SedpFrame *f = sedp_result_get_item_frame (res, item, &row);
  const SedpColumn *c = f ? sedp_frame_get_column (f, "score") : NULL;
  return c ? sedp_column_get_float32 (c)[row] : NAN;
}

static guint64
counter (SedpPipeline *p, const char *stage, const char *name)
{
  return sedp_counter_get (sedp_metrics_counter (sedp_pipeline_get_metrics (p), stage, name, NULL));
}

static const char *qc_pipeline =
    "[pipeline]\nname = qc\ndeadline_ms = 60000\nframe_rows = 4\n"
    "[stage reader]\nplugin = passthrough\nscope = request\n"
    "[stage lookup]\nplugin = query_cache\nafter = reader\nmode = lookup\ncache = stage_test\n"
    "ttl_ms = 600000\nadmit_min_score = 0.2\nparallelism = 2\n"
    "[stage score]\nplugin = synthetic_work\nafter = lookup\noutput = score\n"
    "[stage store]\nplugin = query_cache\nafter = score\nmode = store\ncache = stage_test\n"
    "ttl_ms = 600000\nadmit_min_score = 0.2\n";

/* Second time round, the items whose score was cached skip the scoring stage and come back
 * "cached" with the first request's scores; a user's feedback invalidates them. */
static void
test_stage_pipeline (void)
{
  SedpPipeline *p = start (qc_pipeline);
  SedpRequest *r1 = run (p, "first", 42, 100, 10);
  const SedpResult *res1 = sedp_request_get_result (r1);
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_status (res1), SEDP_STATUS_OK);
  guint admitted = 0;
  for (guint i = 0; i < 10; i++) {
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res1, i), SEDP_ITEM_SCORED);
    admitted += score_of (res1, i) >= 0.2f;
  }
  CU_ASSERT (admitted > 0 && admitted < 10); /* the synthetic scores are uniform in (0, 1) */
  CU_ASSERT_EQUAL (counter (p, "lookup", "query_cache_misses_total"), 10);
  CU_ASSERT_EQUAL (counter (p, "store", "query_cache_stored_total"), admitted);
  CU_ASSERT_EQUAL (counter (p, "store", "query_cache_refused_total"), 10 - admitted);
  guint64 scored_rows = counter (p, "score", "stage_events_total");

  /* The same user and items, plus two new items. */
  SedpRequest *r2 = run (p, "second", 42, 100, 12);
  const SedpResult *res2 = sedp_request_get_result (r2);
  CU_ASSERT_EQUAL (sedp_result_get_status (res2), SEDP_STATUS_OK);
  guint cached = 0;
  for (guint i = 0; i < 12; i++) {
    gboolean want = i < 10 && score_of (res1, i) >= 0.2f;
    SedpItemStatus st = sedp_result_get_item_status (res2, i);
    CU_ASSERT_EQUAL (st, want ? SEDP_ITEM_CACHED : SEDP_ITEM_SCORED);
    if (want) {
      CU_ASSERT_EQUAL (score_of (res2, i), score_of (res1, i));
      cached++;
    }
    CU_ASSERT_FALSE (isnan (score_of (res2, i)));
  }
  CU_ASSERT_EQUAL (counter (p, "lookup", "query_cache_hits_total"), cached);
  CU_ASSERT (counter (p, "score", "stage_events_total") > scored_rows); /* some frames went on */
  g_autoptr (GString) stats = g_string_new (NULL);
  sedp_pipeline_collect_stats (p, stats);
  CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "query_cache_entries"));

  /* Another user misses; after feedback, user 42 misses too. */
  SedpRequest *r3 = run (p, "third", 43, 100, 4);
  for (guint i = 0; i < 4; i++)
    CU_ASSERT_EQUAL (sedp_result_get_item_status (sedp_request_get_result (r3), i), SEDP_ITEM_SCORED);
  SedpQueryCache *qc = sedp_query_cache_find ("stage_test");
  CU_ASSERT_PTR_NOT_NULL_FATAL (qc);
  /* User 42's entries: request 1's admitted scores, and request 2's admitted new scores (its
   * items that were not cached were scored again, with new synthetic scores). */
  guint admitted_new = 0;
  for (guint i = 0; i < 12; i++)
    admitted_new += sedp_result_get_item_status (res2, i) == SEDP_ITEM_SCORED && score_of (res2, i) >= 0.2f;
  guint inv = sedp_query_cache_invalidate_user (qc, 42);
  CU_ASSERT_EQUAL (inv, admitted + admitted_new);
  sedp_query_cache_unref (qc);
  SedpRequest *r4 = run (p, "fourth", 42, 100, 10);
  for (guint i = 0; i < 10; i++)
    CU_ASSERT_EQUAL (sedp_result_get_item_status (sedp_request_get_result (r4), i), SEDP_ITEM_SCORED);

  /* A whole frame answered from the cache: user 43's first 4 items, stored by request 3, if
   * all of them passed the admission condition; the scoring stage then sees no frame at all. */
  guint admitted43 = 0;
  for (guint i = 0; i < 4; i++)
    admitted43 += score_of (sedp_request_get_result (r3), i) >= 0.2f;
  guint64 before = counter (p, "score", "stage_events_total");
  SedpRequest *r5 = run (p, "fifth", 43, 100, 4);
  const SedpResult *res5 = sedp_request_get_result (r5);
  CU_ASSERT_EQUAL (sedp_result_get_status (res5), SEDP_STATUS_OK);
  guint n_cached = 0;
  for (guint i = 0; i < 4; i++)
    n_cached += sedp_result_get_item_status (res5, i) == SEDP_ITEM_CACHED;
  CU_ASSERT_EQUAL (n_cached, admitted43);
  CU_ASSERT_EQUAL (counter (p, "score", "stage_events_total"), before + (admitted43 < 4));
  sedp_request_unref (r1);
  sedp_request_unref (r2);
  sedp_request_unref (r3);
  sedp_request_unref (r4);
  sedp_request_unref (r5);
  sedp_pipeline_free (p);
  CU_ASSERT_PTR_NULL (sedp_query_cache_find ("stage_test")); /* released with the stages */
}

static void
test_stage_errors (void)
{
  /* Stages sharing a cache must agree on its options. */
  g_autofree char *text = g_strdup (qc_pipeline);
  char *second = strstr (strstr (text, "mode = store"), "admit_min_score = 0.2");
  memcpy (second, "admit_min_score = 0.3", strlen ("admit_min_score = 0.3"));
  if (registry == NULL) {
    const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
    registry = sedp_registry_new (dirs);
  }
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "qc.pipeline", &error);
  SedpGraph *graph = sedp_graph_compile (spec, registry, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
  CU_ASSERT_PTR_NULL (sedp_pipeline_new (graph, &error));
  SEDP_ASSERT_ERROR (error, SEDP_RUNTIME_ERROR, "store", "stage_test", "must agree");
  g_clear_error (&error);

  /* A frame without the item column: the event fails with a message naming it. */
  const char *bad =
      "[pipeline]\nname = qc\ndeadline_ms = 60000\n"
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage lookup]\nplugin = query_cache\nafter = reader\nitem_column = nope\ncache = errors\n";
  SedpPipeline *p = start (bad);
  SedpRequest *r = run (p, "r", 1, 1, 3);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
  CU_ASSERT_PTR_NOT_NULL (strstr (sedp_result_get_message (res), "no column 'nope'"));
  sedp_request_unref (r);
  sedp_pipeline_free (p);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("query-cache", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_hit_and_miss);
  T (test_ttl);
  T (test_admission);
  T (test_invalidate_user);
  T (test_lru_order);
  T (test_many);
  T (test_threads);
  T (test_named);
  T (test_stage_pipeline);
  T (test_stage_errors);
  int rc = sedp_test_run ();
  if (registry)
    sedp_registry_free (registry);
  return rc;
}
