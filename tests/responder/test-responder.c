/* sedp tests — the responder stage in running pipelines: reader (passthrough, request) → items
 * (synthetic_work output=score) → responder; every item answered with a rank and a top_k mark
 * equal to a sort done here (descending and ascending, option top_k and 0 = all); the client's
 * top_k from a data_reader JSON payload overriding the option; NaN scores ranked last; two heads
 * ranked by the first score column; a missing score column failing the request, named. */
#include "runtime-helpers.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  float score;
  guint item;
} Ref;

static gboolean ref_asc;

static int
ref_cmp (const void *pa, const void *pb)
{
  const Ref *a = pa, *b = pb;
  if (isnan (a->score) != isnan (b->score))
    return isnan (a->score) ? 1 : -1;
  if (!isnan (a->score) && a->score != b->score)
    return (ref_asc ? a->score < b->score : a->score > b->score) ? -1 : 1;
  return (int) a->item - (int) b->item;
}

/* Checks one completed request: every item scored, rank/top_k equal to a reference sort of the
 * first head of @score_col. Returns the number of mismatches. */
static guint
check_ranks (SedpRequest *r, const char *score_col, const char *prefix, gboolean asc, guint k,
             guint want_items)
{
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_PTR_NOT_NULL_FATAL (res);
  if (sedp_result_get_message (res))
    fprintf (stderr, "\n  %s\n", sedp_result_get_message (res));
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  guint n = sedp_result_get_n_items (res), bad = 0;
  CU_ASSERT_EQUAL (n, want_items);
  Ref *ref = g_new (Ref, n);
  for (guint i = 0; i < n; i++) {
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), SEDP_ITEM_SCORED);
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    CU_ASSERT_PTR_NOT_NULL_FATAL (f);
    const SedpColumn *c = sedp_frame_get_column (f, score_col);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    ref[i].score = sedp_column_get_float32 (c)[row * sedp_column_get_width (c)];
    ref[i].item = i;
  }
  ref_asc = asc;
  qsort (ref, n, sizeof *ref, ref_cmp);
  if (k == 0 || k > n)
    k = n;
  g_autofree char *rank_name = g_strconcat (prefix, "rank", NULL);
  g_autofree char *top_name = g_strconcat (prefix, "top_k", NULL);
  for (guint pos = 0; pos < n; pos++) {
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, ref[pos].item, &row);
    gint64 rank = int_at (f, rank_name, row), top = int_at (f, top_name, row);
    if (rank != (gint64) pos || top != (pos < k)) {
      fprintf (stderr, "\n  %s item %u: rank %" G_GINT64_FORMAT " top_k %" G_GINT64_FORMAT
                       ", want %u %d\n", sedp_request_get_id (r), ref[pos].item, rank, top, pos,
               pos < k);
      bad++;
    }
  }
  g_free (ref);
  return bad;
}

static char *
synthetic_pipeline (const char *responder_opts)
{
  return g_strdup_printf ("[pipeline]\nframe_rows = 3\ndeadline_ms = 60000\n"
                          "[stage reader]\nplugin = passthrough\nscope = request\n"
                          "[stage items]\nplugin = synthetic_work\nafter = reader\noutput = score\n"
                          "[stage respond]\nplugin = responder\nafter = items\n%s",
                          responder_opts);
}

static void
run_synthetic (const char *opts, const char *prefix, gboolean asc, guint k)
{
  g_autofree char *text = synthetic_pipeline (opts);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 12;
  g_autofree guint *counts = ascending_counts (n);
  CU_ASSERT_EQUAL (submit_numbered (p, &c, n, counts, 0), n);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 30), n);
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    SedpRequest *r = c.done->pdata[i];
    guint seq = (guint) atoi (sedp_request_get_id (r) + 1);
    bad += check_ranks (r, "score", prefix, asc, k, counts[seq]);
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_desc_top_k (void)
{
  run_synthetic ("top_k = 3\n", "", FALSE, 3);
}

static void
test_asc_all (void)
{
  run_synthetic ("order = asc\noutput = resp_\n", "resp_", TRUE, 0);
}

/* The client's top_k (JSON payload through data_reader) overrides the option; 0 keeps it. */
static void
test_client_top_k (void)
{
  const char *text = "[pipeline]\nframe_rows = 2\ndeadline_ms = 60000\n"
                     "[stage reader]\nplugin = data_reader\n"
                     "[stage items]\nplugin = synthetic_work\nafter = reader\noutput = score\n"
                     "[stage respond]\nplugin = responder\nafter = items\ntop_k = 4\n";
  SedpPipeline *p = start_pipeline (text);
  const guint client_k[] = {2, 0, 1, 9};
  for (guint t = 0; t < G_N_ELEMENTS (client_k); t++) {
    GString *json = g_string_new (NULL);
    g_string_append_printf (json, "{\"request_id\": \"j%u\", \"top_k\": %u, \"user\": {\"id\": 7}, "
                                  "\"items\": [", t, client_k[t]);
    for (guint i = 0; i < 7; i++)
      g_string_append_printf (json, "%s{\"id\": %u}", i ? ", " : "", 100 + i);
    g_string_append (json, "]}");
    GBytes *payload = g_string_free_to_bytes (json);
    Collector c;
    collector_init (&c);
    g_autofree char *id = g_strdup_printf ("j%u", t);
    SedpRequest *r = sedp_request_new (id, 0);
    sedp_request_set_payload (r, payload, "application/json");
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
    CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 30), 1);
    CU_ASSERT_EQUAL (check_ranks (r, "score", "", FALSE, client_k[t] ? client_k[t] : 4, 7), 0);
    sedp_request_unref (r);
    g_bytes_unref (payload);
    collector_clear (&c);
  }
  sedp_pipeline_free (p);
}

/* Items submitted with their scores: @heads values per item, NaN every third item. */
static SedpRequest *
scored_request (const char *id, guint n, guint heads, gboolean with_score)
{
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *user = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (user, "user_id", SEDP_COLUMN_INT64, 1))[0] = 1;
  SedpFrame *items = sedp_frame_new (n);
  gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
  float *s = with_score ? sedp_column_float32_data (
                              sedp_frame_add_column (items, "score", SEDP_COLUMN_FLOAT32, heads))
                        : NULL;
  float *cvr = sedp_column_float32_data (sedp_frame_add_column (items, "cvr", SEDP_COLUMN_FLOAT32, 1));
  for (guint i = 0; i < n; i++) {
    ids[i] = i;
    cvr[i] = (float) i; /* ranked the other way round if it were used */
    if (s == NULL)
      continue;
    for (guint h = 0; h < heads; h++)
      s[i * heads + h] = h == 0 ? (float) ((i * 7) % 5) * 0.25f : 1.0f - (float) i;
    if (i % 3 == 1)
      s[i * heads] = NAN;
  }
  sedp_request_set_frames (r, user, items);
  return r;
}

static SedpRequest *
run_scored (const char *responder_opts, SedpRequest *r)
{
  g_autofree char *text = g_strdup_printf (
      "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
      "[stage reader]\nplugin = passthrough\nscope = request\n"
      "[stage items]\nplugin = passthrough\nafter = reader\nscope = item\n"
      "[stage respond]\nplugin = responder\nafter = items\n%s", responder_opts);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL (collector_wait (&c, 1, 30), 1);
  sedp_pipeline_free (p);
  collector_clear (&c);
  return r;
}

/* NaN scores rank last in both orders; ties keep the item order. */
static void
test_nan_last (void)
{
  SedpRequest *r = run_scored ("top_k = 5\n", scored_request ("n1", 11, 1, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "score", "", FALSE, 5, 11), 0);
  const SedpResult *res = sedp_request_get_result (r);
  guint row;
  const SedpFrame *f = sedp_result_get_item_frame (res, 1, &row); /* the first NaN */
  CU_ASSERT (int_at (f, "rank", row) >= 11 - 4);
  sedp_request_unref (r);
  r = run_scored ("order = asc\n", scored_request ("n2", 11, 1, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "score", "", TRUE, 0, 11), 0);
  sedp_request_unref (r);
}

/* Two heads in one column and a second score column: the first head of the first column ranks. */
static void
test_multi_head (void)
{
  SedpRequest *r = run_scored ("score_columns = score, cvr\ntop_k = 2\n",
                               scored_request ("m1", 9, 2, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "score", "", FALSE, 2, 9), 0);
  sedp_request_unref (r);
}

/* A missing score column fails the request with the column named. */
static void
test_missing_score (void)
{
  SedpRequest *r = run_scored ("score_columns = cvr, score\n", scored_request ("x1", 5, 1, FALSE));
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_PTR_NOT_NULL_FATAL (res);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
  gboolean named = FALSE;
  const char *m = sedp_result_get_message (res);
  if (m && strstr (m, "score"))
    named = TRUE;
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    const char *im = sedp_result_get_item_message (res, i);
    if (im && strstr (im, "score"))
      named = TRUE;
  }
  if (!named)
    fprintf (stderr, "\n  message: %s\n", m ? m : "(none)");
  CU_ASSERT (named);
  sedp_request_unref (r);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return CU_get_error ();
  CU_pSuite suite = CU_add_suite ("responder", NULL, NULL);
  if (suite == NULL || CU_add_test (suite, "descending, option top_k", test_desc_top_k) == NULL ||
      CU_add_test (suite, "ascending, all, output prefix", test_asc_all) == NULL ||
      CU_add_test (suite, "client top_k overrides", test_client_top_k) == NULL ||
      CU_add_test (suite, "NaN ranked last", test_nan_last) == NULL ||
      CU_add_test (suite, "multi-head", test_multi_head) == NULL ||
      CU_add_test (suite, "missing score column", test_missing_score) == NULL) {
    CU_cleanup_registry ();
    return CU_get_error ();
  }
  int rc = sedp_test_run ();
  g_clear_pointer (&test_registry, sedp_registry_free);
  return rc;
}
