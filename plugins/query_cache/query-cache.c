/* query_cache — JiZhi's query cache as two stages around the expensive part of a pipeline:
 *
 *   mode = lookup (early): for each item row, looks up (user, item, model version); a row that
 *     hits gets its cached score(s) written into the score column and is *answered*
 *     (sedp_frame_answer_row): it skips every later stage and the request reports the item as
 *     "cached", with the frame's columns as they are here;
 *   mode = store (late, after the model): stores the scores of the rows that were computed,
 *     when they pass the admission condition (admit_min_score).
 *
 * Both stages name the same cache (`cache`), shared within the process; the serving layer
 * invalidates a user's entries on feedback with sedp_query_cache_invalidate_user(). See
 * docs/storage.md, "Query cache". */
#include <sedp/sedp.h>


#include <string.h>

typedef struct {
  char *stage;
  SedpQueryCache *qc;
  gboolean store;
  char *user_column;
  char *item_column;
  char *score_column;
  guint width;
  guint64 version;
  SedpCounter *hits;
  SedpCounter *misses;
  SedpCounter *stored;
  SedpCounter *refused;
} QueryCacheStage;

/* The 64-bit key of @row of an id column (integers as they are, strings hashed). */
static gboolean
column_keys (const SedpColumn *col, const char *name, guint n, guint64 *keys, GError **error)
{
  SedpColumnType type = sedp_column_get_column_type (col);
  gboolean bc = sedp_column_is_broadcast (col);
  if ((type == SEDP_COLUMN_INT64 || type == SEDP_COLUMN_UINT64) && sedp_column_get_width (col) == 1) {
    const guint64 *v = type == SEDP_COLUMN_INT64 ? (const guint64 *) sedp_column_get_int64 (col)
                                                 : sedp_column_get_uint64 (col);
    for (guint r = 0; r < n; r++)
      keys[r] = v[bc ? 0 : r];
    return TRUE;
  }
  if (type == SEDP_COLUMN_STRING) {
    for (guint r = 0; r < n; r++)
      keys[r] = r > 0 && bc ? keys[0] : sedp_query_cache_key_of_string (sedp_column_get_string (col, bc ? 0 : r));
    return TRUE;
  }
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
               "column '%s' must hold one int64, uint64 or string id per row, not %s × %u", name,
               sedp_column_type_to_string (type), sedp_column_get_width (col));
  return FALSE;
}

static const SedpColumn *
id_column (SedpFrame *f, const char *name, GError **error)
{
  const SedpColumn *col = sedp_frame_get_column (f, name);
  if (col == NULL)
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT, "no column '%s'", name);
  return col;
}

/* Runs one lookup or store of a frame's rows; rows of different users (unusual: the user is
 * normally a request column) go user by user. */
static gboolean
frame_process (QueryCacheStage *q, SedpFrame *f, GError **error)
{
  if (!sedp_frame_has_item_rows (f)) {
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                         "query_cache runs on item rows (an item-scope stage, or a request-scope "
                         "stage after item stages)");
    return FALSE;
  }
  guint n = sedp_frame_get_n_rows (f), width = q->width;
  const SedpColumn *ucol = id_column (f, q->user_column, error);
  const SedpColumn *icol = ucol ? id_column (f, q->item_column, error) : NULL;
  if (icol == NULL)
    return FALSE;
  g_autofree guint64 *users = g_new (guint64, n);
  g_autofree guint64 *items = g_new (guint64, n);
  if (!column_keys (ucol, q->user_column, n, users, error) ||
      !column_keys (icol, q->item_column, n, items, error))
    return FALSE;
  gint64 now = g_get_monotonic_time ();

  if (q->store) {
    const SedpColumn *scol =
        sedp_frame_require_column (f, q->score_column, SEDP_COLUMN_FLOAT32, width, error);
    if (scol == NULL)
      return FALSE;
    const float *scores = sedp_column_get_float32 (scol);
    guint stored = 0;
    for (guint r = 0; r < n;) {
      guint end = r + 1;
      while (end < n && users[end] == users[r])
        end++;
      stored += sedp_query_cache_store_many (q->qc, users[r], q->version, items + r, end - r,
                                             scores + (gsize) r * width, now);
      r = end;
    }
    sedp_counter_add (q->stored, stored);
    sedp_counter_add (q->refused, n - stored);
    return TRUE;
  }

  g_autofree float *scores = g_new (float, (gsize) n * width);
  g_autofree guint8 *hit = g_new0 (guint8, n);
  guint hits = 0;
  for (guint r = 0; r < n;) {
    guint end = r + 1;
    while (end < n && users[end] == users[r])
      end++;
    hits += sedp_query_cache_lookup_many (q->qc, users[r], q->version, items + r, end - r, now,
                                          scores + (gsize) r * width, hit + r);
    r = end;
  }
  sedp_counter_add (q->hits, hits);
  sedp_counter_add (q->misses, n - hits);
  if (hits == 0)
    return TRUE;
  /* The answer goes into the score column: a new one (the rows that go on get zeros there, which
   * the scoring stage replaces), or the frame's own, of which only the answered rows change. */
  SedpColumn *out;
  const SedpColumn *have = sedp_frame_get_column (f, q->score_column);
  if (have) {
    if (sedp_column_get_column_type (have) != SEDP_COLUMN_FLOAT32 || sedp_column_get_width (have) != width ||
        sedp_column_is_broadcast (have)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                   "column '%s' exists and is not a float32 column of width %u per row",
                   q->score_column, width);
      return FALSE;
    }
    out = sedp_frame_edit_column (f, q->score_column, error);
    if (out == NULL)
      return FALSE;
  } else {
    out = sedp_frame_add_column (f, q->score_column, SEDP_COLUMN_FLOAT32, width);
  }
  float *dst = sedp_column_float32_data (out);
  for (guint r = 0; r < n; r++) {
    if (!hit[r])
      continue;
    memcpy (dst + (gsize) r * width, scores + (gsize) r * width, sizeof (float) * width);
    sedp_frame_answer_row (f, r);
  }
  return TRUE;
}

static gboolean
qc_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
            GError **error)
{
  QueryCacheStage *q = instance;
  for (guint e = 0; e < n_events; e++) {
    GError *local = NULL;
    if (!frame_process (q, sedp_event_get_frame (events[e]), &local)) {
      sedp_event_fail (events[e], local);
      g_error_free (local);
    }
  }
  return TRUE;
}

static void
qc_destroy (gpointer instance)
{
  QueryCacheStage *q = instance;
  sedp_query_cache_unref (q->qc);
  g_free (q->stage);
  g_free (q->user_column);
  g_free (q->item_column);
  g_free (q->score_column);
  g_free (q);
}

static gpointer
qc_create (SedpStageContext *ctx, GError **error)
{
  SedpQueryCacheOptions o = {
      .capacity = (guint64) sedp_stage_context_get_int (ctx, "capacity"),
      .ttl_ms = sedp_stage_context_get_int (ctx, "ttl_ms"),
      .admit_min_score = sedp_stage_context_get_double (ctx, "admit_min_score"),
      .n_scores = (guint) sedp_stage_context_get_int (ctx, "score_width"),
  };
  const char *name = sedp_stage_context_get_string (ctx, "cache");
  GError *local = NULL;
  SedpQueryCache *qc = sedp_query_cache_acquire (name, &o, &local);
  if (qc == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "%s", local->message);
    g_error_free (local);
    return NULL;
  }
  QueryCacheStage *q = g_new0 (QueryCacheStage, 1);
  q->stage = g_strdup (sedp_stage_context_get_name (ctx));
  q->qc = qc;
  q->store = strcmp (sedp_stage_context_get_string (ctx, "mode"), "store") == 0;
  q->user_column = g_strdup (sedp_stage_context_get_string (ctx, "user_column"));
  q->item_column = g_strdup (sedp_stage_context_get_string (ctx, "item_column"));
  q->score_column = g_strdup (sedp_stage_context_get_string (ctx, "score_column"));
  q->width = o.n_scores;
  const char *version = sedp_stage_context_get_string (ctx, "model_version");
  q->version = sedp_query_cache_key_of_string (version ? version : "");
  if (q->store) {
    q->stored = sedp_stage_context_add_counter (ctx, "query_cache_stored_total",
                                                "Scores stored in the query cache");
    q->refused = sedp_stage_context_add_counter (ctx, "query_cache_refused_total",
                                                 "Scores not stored (below admit_min_score)");
  } else {
    q->hits = sedp_stage_context_add_counter (ctx, "query_cache_hits_total",
                                              "Rows answered from the query cache");
    q->misses = sedp_stage_context_add_counter (ctx, "query_cache_misses_total",
                                                "Rows not in the query cache (or expired)");
  }
  return q;
}

static void
qc_stats (gpointer instance, SedpStats *stats)
{
  QueryCacheStage *q = instance;
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (q->qc, &st);
  sedp_stats_add (stats, "query_cache_entries", (double) st.entries);
  sedp_stats_add (stats, "query_cache_hit_ratio", st.lookups ? (double) st.hits / (double) st.lookups : 0);
  sedp_stats_add (stats, "query_cache_expired_total", (double) st.expired);
  sedp_stats_add (stats, "query_cache_evictions_total", (double) st.evictions);
  sedp_stats_add (stats, "query_cache_invalidated_total", (double) st.invalidated);
}

static const SedpOptionSpec qc_options[] = {
  SEDP_OPTION_ENUM_SPEC ("mode", "lookup", "lookup|store",
                         "lookup: answer rows whose score is cached (they skip the later stages); "
                         "store: cache the scores computed upstream"),
  SEDP_OPTION_STRING_SPEC ("cache", "query_cache",
                           "Name of the cache; the lookup and store stages of one pipeline share it"),
  SEDP_OPTION_INT_SPEC ("capacity", "1000000", 0, 1e10, "Entries kept at most (least recently used go first)"),
  SEDP_OPTION_INT_SPEC ("ttl_ms", "60000", 0, 1e12, "Expiry window: older entries are misses, in milliseconds (0: none)"),
  SEDP_OPTION_DOUBLE_SPEC ("admit_min_score", "-1e30", -1e30, 1e30,
                           "Only scores at least this high are cached (the default admits every score)"),
  SEDP_OPTION_STRING_SPEC ("user_column", "user_id", "The user id column (int64, uint64 or string; usually a request column)"),
  SEDP_OPTION_STRING_SPEC ("item_column", "item_id", "The item id column (int64, uint64 or string)"),
  SEDP_OPTION_STRING_SPEC ("score_column", "score", "The float32 score column that is cached and answered"),
  SEDP_OPTION_INT_SPEC ("score_width", "1", 1, 1024, "Values per row of the score column"),
  SEDP_OPTION_STRING_SPEC ("model_version", "0",
                           "Version of the model whose scores are cached: part of the key, so a new model misses"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "query_cache", .version = SEDP_VERSION,
                   .description = "Caches scores of (user, item, model version): a lookup stage "
                                  "answers cached rows early, a store stage caches new scores",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = qc_options,
                   .create = qc_create, .process = qc_process, .destroy = qc_destroy,
                   .stats = qc_stats);
