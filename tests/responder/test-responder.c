/* sedp tests — the responder stage in running pipelines: reader (passthrough, request) → items
 * (synthetic_work output=score) → responder; every item answered with a rank and a top_k mark
 * equal to a sort done here (descending and ascending, option top_k and 0 = all); the client's
 * top_k from a data_reader JSON payload overriding the option; NaN scores ranked last; two heads
 * ranked by the first score column; a missing score column failing the request, named.
 * `combine` (test-formula.c checks the formulas themselves): the column it writes on every item
 * (indexed heads, a broadcast request column), ranked by when score_columns names it, NaN heads
 * ranked last, a missing or too narrow head failing the request named, formula errors stopping
 * the pipeline. `keep`: the best N items answered with rank and top_k, the others dropped; and a
 * two-phase pipeline (a responder with keep before a second model stage and responder). */
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

/* Items with their scores: @heads values per item, NaN every third item; cvr = the index. */
static SedpFrame *
scored_items (guint n, guint heads, gboolean with_score)
{
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
  return items;
}

/* A request of user 1 with scored_items(); the user frame has a float32 `boost` when @boost is
 * not NaN. */
static SedpRequest *
scored_request_boost (const char *id, guint n, guint heads, gboolean with_score, float boost)
{
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *user = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (user, "user_id", SEDP_COLUMN_INT64, 1))[0] = 1;
  if (!isnan (boost)) {
    SedpColumn *b = sedp_frame_add_column (user, "boost", SEDP_COLUMN_FLOAT32, 1);
    sedp_column_float32_data (b)[0] = boost;
  }
  sedp_request_set_frames (r, user, scored_items (n, heads, with_score));
  return r;
}

static SedpRequest *
scored_request (const char *id, guint n, guint heads, gboolean with_score)
{
  return scored_request_boost (id, n, heads, with_score, NAN);
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

/* The float value of column @name at @row (row 0 for broadcast columns); NaN when missing. */
static float
float_at (const SedpFrame *f, const char *name, guint row)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32)
    return NAN;
  guint w = sedp_column_get_width (c);
  return sedp_column_get_float32 (c)[(sedp_column_is_broadcast (c) ? 0 : row) * w];
}

/* Checks that item i of @r has @col equal to @want[i] (NaN equal to NaN); returns mismatches. */
static guint
check_values (SedpRequest *r, const char *col, const float *want)
{
  const SedpResult *res = sedp_request_get_result (r);
  guint bad = 0;
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    float got = f ? float_at (f, col, row) : NAN;
    if (isnan (want[i]) ? !isnan (got) : got != want[i]) {
      fprintf (stderr, "\n  %s item %u: %s = %g, want %g\n", sedp_request_get_id (r), i, col,
               (double) got, (double) want[i]);
      bad++;
    }
  }
  return bad;
}

/* `combine` over an indexed head and a second column, ranked by its output. */
static void
test_combine (void)
{
  SedpRequest *r = run_scored ("combine = blend = $score[1] * 2 + $cvr\nscore_columns = blend\n"
                               "top_k = 4\n", scored_request ("c1", 9, 2, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "blend", "", FALSE, 4, 9), 0);
  float want[9];
  for (guint i = 0; i < 9; i++)
    want[i] = (1.0f - (float) i) * 2.0f + (float) i;
  CU_ASSERT_EQUAL (check_values (r, "blend", want), 0);
  sedp_request_unref (r);
}

/* The output named `score` ranks with the default score_columns; a NaN head ranks last. */
static void
test_combine_score (void)
{
  SedpRequest *r = run_scored ("combine = score = -$cvr\n", scored_request ("c2", 7, 1, FALSE));
  CU_ASSERT_EQUAL (check_ranks (r, "score", "", FALSE, 0, 7), 0);
  sedp_request_unref (r);
  r = run_scored ("combine = blend = $score * 2\nscore_columns = blend\norder = asc\n",
                  scored_request ("c3", 10, 1, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "blend", "", TRUE, 0, 10), 0);
  const SedpResult *res = sedp_request_get_result (r);
  guint row;
  const SedpFrame *f = sedp_result_get_item_frame (res, 1, &row); /* score NaN */
  CU_ASSERT (isnan (float_at (f, "blend", row)));
  CU_ASSERT (int_at (f, "rank", row) >= 10 - 3);
  sedp_request_unref (r);
}

/* A float32 column of the request frame reaches the responder broadcast into the items. */
static void
test_combine_broadcast (void)
{
  SedpRequest *r = scored_request_boost ("c4", 6, 1, TRUE, 0.5f);
  run_scored ("combine = blend = $cvr * $boost - $boost\nscore_columns = blend\n", r);
  CU_ASSERT_EQUAL (check_ranks (r, "blend", "", FALSE, 0, 6), 0);
  float want[6];
  for (guint i = 0; i < 6; i++)
    want[i] = (float) i * 0.5f - 0.5f;
  CU_ASSERT_EQUAL (check_values (r, "blend", want), 0);
  sedp_request_unref (r);
}

/* The request's message, or its first item's when it has none. */
static const char *
failure_message (SedpRequest *r)
{
  const SedpResult *res = sedp_request_get_result (r);
  const char *m = sedp_result_get_message (res);
  if (m == NULL && sedp_result_get_n_items (res) > 0)
    m = sedp_result_get_item_message (res, 0);
  return m ? m : "";
}

/* A head the frame lacks, or a K past its width, fails the request naming it. */
static void
test_combine_missing (void)
{
  const char *opts[] = {"combine = blend = $ctr * $cvr\nscore_columns = blend\n",
                        "combine = blend = $cvr[1]\nscore_columns = blend\n"};
  const char *needle[] = {"'ctr'", "cvr[1]"};
  for (guint t = 0; t < G_N_ELEMENTS (opts); t++) {
    SedpRequest *r = run_scored (opts[t], scored_request ("c5", 4, 1, TRUE));
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
    const char *m = failure_message (r);
    if (!strstr (m, "combine") || !strstr (m, needle[t]))
      fprintf (stderr, "\n  message: %s (want combine and %s)\n", m, needle[t]);
    CU_ASSERT (strstr (m, "combine") && strstr (m, needle[t]));
    sedp_request_unref (r);
  }
}

/* The error that stops a pipeline with these responder options from starting. */
static GError *
start_error (const char *responder_opts)
{
  g_autofree char *text = synthetic_pipeline (responder_opts);
  GError *error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p)
    sedp_pipeline_start (p, &error);
  if (p)
    sedp_pipeline_free (p);
  return error;
}

/* A formula that does not compile, or writes the rank column, stops the pipeline. */
static void
test_combine_config (void)
{
  g_autoptr (GError) e1 = start_error ("combine = blend = exp(a, 2)\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL (e1);
  CU_ASSERT_PTR_NOT_NULL (strstr (e1->message, "combine: at character 14: expected ')' (got ',')"));
  g_autoptr (GError) e2 = start_error ("combine = rank = $score\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL (e2);
  CU_ASSERT_PTR_NOT_NULL (strstr (e2->message, "'rank'"));
  g_autoptr (GError) e3 = start_error ("combine = top_k = $score\noutput = r_\n");
  CU_ASSERT_PTR_NULL (e3); /* the rank columns are r_rank and r_top_k */
}

/* `keep = 3` of 9 items ranked by cvr (= the item index): 8, 7, 6 answered with rank 0, 1, 2
 * and top_k 1, 1, 0; the others dropped. With keep ≥ the items, every item is answered. */
static void
test_keep (void)
{
  SedpRequest *r = run_scored ("keep = 3\ntop_k = 2\nscore_columns = cvr\n",
                               scored_request ("k1", 9, 1, TRUE));
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_n_items (res), 9);
  for (guint i = 0; i < 9; i++) {
    SedpItemStatus st = sedp_result_get_item_status (res, i);
    CU_ASSERT_EQUAL (st, i >= 6 ? SEDP_ITEM_SCORED : SEDP_ITEM_DROPPED);
    if (st != SEDP_ITEM_SCORED)
      continue;
    guint row = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    CU_ASSERT_EQUAL (int_at (f, "rank", row), 8 - i);
    CU_ASSERT_EQUAL (int_at (f, "top_k", row), i >= 7);
  }
  sedp_request_unref (r);
  r = run_scored ("keep = 20\ntop_k = 2\nscore_columns = cvr\n", scored_request ("k2", 9, 1, TRUE));
  CU_ASSERT_EQUAL (check_ranks (r, "cvr", "", FALSE, 2, 9), 0);
  sedp_request_unref (r);
}

/* Two phases: `pre` keeps the 4 best items by cvr (= the item index: 10 … 13 of 14), a second
 * scoring stage (`heavy`) scores only those, and the last responder ranks them by heavy - cvr. */
static void
test_keep_two_phases (void)
{
  const char *text = "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
                     "[stage reader]\nplugin = passthrough\nscope = request\n"
                     "[stage items]\nplugin = passthrough\nafter = reader\nscope = item\n"
                     "[stage pre]\nplugin = responder\nafter = items\nscore_columns = cvr\n"
                     "keep = 4\noutput = pre_\n"
                     "[stage heavy]\nplugin = synthetic_work\nafter = pre\nscope = item\n"
                     "output = heavy\n"
                     "[stage respond]\nplugin = responder\nafter = heavy\n"
                     "combine = final = heavy - $cvr\nscore_columns = final\ntop_k = 2\n";
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  SedpRequest *r = scored_request ("t1", 14, 1, FALSE);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 30), 1);
  const SedpResult *res = sedp_request_get_result (r);
  CU_ASSERT_EQUAL_FATAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  guint scored = 0, marked = 0;
  for (guint i = 0; i < 14; i++) {
    SedpItemStatus st = sedp_result_get_item_status (res, i);
    CU_ASSERT_EQUAL (st, i >= 10 ? SEDP_ITEM_SCORED : SEDP_ITEM_DROPPED);
    guint row = 0;
    const SedpFrame *f = st == SEDP_ITEM_SCORED ? sedp_result_get_item_frame (res, i, &row) : NULL;
    if (f == NULL)
      continue;
    scored++;
    CU_ASSERT_EQUAL (int_at (f, "pre_rank", row), 13 - i);
    CU_ASSERT (float_at (f, "final", row) == float_at (f, "heavy", row) - (float) i);
    CU_ASSERT (int_at (f, "rank", row) >= 0 && int_at (f, "rank", row) < 4);
    marked += int_at (f, "top_k", row) == 1;
  }
  CU_ASSERT_EQUAL (scored, 4);
  CU_ASSERT_EQUAL (marked, 2);
  sedp_request_unref (r);
  sedp_pipeline_free (p);
  collector_clear (&c);
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
      CU_add_test (suite, "missing score column", test_missing_score) == NULL ||
      CU_add_test (suite, "combine", test_combine) == NULL ||
      CU_add_test (suite, "combine: score output, NaN head", test_combine_score) == NULL ||
      CU_add_test (suite, "combine: broadcast column", test_combine_broadcast) == NULL ||
      CU_add_test (suite, "combine: missing head", test_combine_missing) == NULL ||
      CU_add_test (suite, "combine: option errors", test_combine_config) == NULL ||
      CU_add_test (suite, "keep", test_keep) == NULL ||
      CU_add_test (suite, "keep: two phases", test_keep_two_phases) == NULL) {
    CU_cleanup_registry ();
    return CU_get_error ();
  }
  int rc = sedp_test_run ();
  g_clear_pointer (&test_registry, sedp_registry_free);
  return rc;
}
