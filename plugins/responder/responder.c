/* responder — the last stage of a serving pipeline (request scope, after the scoring stage).
 * On the gathered frame of all items it ranks the items by their first score column and marks
 * the best K: it writes an int64 `rank` column (0 = best) and an int64 `top_k` column (1 for the
 * best K items, 0 otherwise), both under the `output` prefix. No item is dropped: every item is
 * answered, the serving layer fills PredictResponse.top_k from these columns. NaN scores rank
 * last whatever the order; ties keep the item order. The client's top_k (request data
 * "data_reader.top_k", set by data_reader) overrides the `top_k` option when it is not 0. */
#include <sedp/sedp.h>

#include <math.h>
#include <string.h>

typedef struct {
  char **score_columns;
  guint top_k;
  gboolean ascending;
  char *rank_name;
  char *top_k_name;
  SedpCounter *ranked;
} Responder;

typedef struct {
  float score;
  guint item;
  guint row;
} Entry;

static int
cmp_desc (gconstpointer pa, gconstpointer pb)
{
  const Entry *a = pa, *b = pb;
  gboolean na = isnan (a->score), nb = isnan (b->score);
  if (na != nb)
    return na ? 1 : -1;
  if (!na && a->score != b->score)
    return a->score > b->score ? -1 : 1;
  return a->item < b->item ? -1 : a->item > b->item;
}

static int
cmp_asc (gconstpointer pa, gconstpointer pb)
{
  const Entry *a = pa, *b = pb;
  gboolean na = isnan (a->score), nb = isnan (b->score);
  if (na != nb)
    return na ? 1 : -1;
  if (!na && a->score != b->score)
    return a->score < b->score ? -1 : 1;
  return a->item < b->item ? -1 : a->item > b->item;
}

static gpointer
responder_create (SedpStageContext *ctx, GError **error)
{
  const char *const *cols = sedp_stage_context_get_strv (ctx, "score_columns");
  guint n = cols ? g_strv_length ((char **) cols) : 0;
  if (n == 0 || cols[0][0] == '\0') {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "score_columns: at least one column is needed");
    return NULL;
  }
  Responder *r = g_new0 (Responder, 1);
  r->score_columns = g_strdupv ((char **) cols);
  r->top_k = (guint) sedp_stage_context_get_int (ctx, "top_k");
  r->ascending = g_strcmp0 (sedp_stage_context_get_string (ctx, "order"), "asc") == 0;
  const char *prefix = sedp_stage_context_get_string (ctx, "output");
  if (prefix == NULL)
    prefix = "";
  r->rank_name = g_strconcat (prefix, "rank", NULL);
  r->top_k_name = g_strconcat (prefix, "top_k", NULL);
  r->ranked = sedp_stage_context_add_counter (ctx, "responder_items_total", "items ranked");
  return r;
}

static gboolean
respond (Responder *r, SedpEvent *event, GError **error)
{
  SedpFrame *f = sedp_event_get_frame (event);
  if (!sedp_frame_has_item_rows (f))
    return TRUE; /* no items reached this stage: nothing to rank */
  const SedpColumn *first = NULL;
  for (guint c = 0; r->score_columns[c]; c++) {
    const SedpColumn *col = sedp_frame_require_column (f, r->score_columns[c], SEDP_COLUMN_FLOAT32,
                                                       0, error);
    if (col == NULL)
      return FALSE;
    if (first == NULL)
      first = col;
  }
  guint n = sedp_frame_get_n_rows (f);
  guint width = sedp_column_get_width (first);
  gboolean bcast = sedp_column_is_broadcast (first);
  const float *scores = sedp_column_get_float32 (first);
  Entry *e = g_new (Entry, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    e[i].score = scores[(bcast ? 0 : i) * width]; /* multi-head: the first head */
    e[i].item = sedp_frame_get_item_index (f, i);
    e[i].row = i;
  }
  qsort (e, n, sizeof *e, r->ascending ? cmp_asc : cmp_desc);
  guint k = r->top_k;
  guint client = GPOINTER_TO_UINT (sedp_request_get_data (sedp_event_get_request (event),
                                                          "data_reader.top_k"));
  if (client > 0)
    k = client;
  if (k == 0 || k > n)
    k = n;
  gint64 *rank = sedp_column_int64_data (sedp_frame_add_column (f, r->rank_name, SEDP_COLUMN_INT64, 1));
  gint64 *top = sedp_column_int64_data (sedp_frame_add_column (f, r->top_k_name, SEDP_COLUMN_INT64, 1));
  for (guint i = 0; i < n; i++) {
    rank[e[i].row] = i;
    top[e[i].row] = i < k;
  }
  g_free (e);
  sedp_counter_add (r->ranked, n);
  return TRUE;
}

static gboolean
responder_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                   GError **error)
{
  Responder *r = instance;
  for (guint i = 0; i < n_events; i++) {
    g_autoptr (GError) local = NULL;
    if (!respond (r, events[i], &local))
      sedp_event_fail (events[i], local);
  }
  return TRUE;
}

static void
responder_destroy (gpointer instance)
{
  Responder *r = instance;
  g_strfreev (r->score_columns);
  g_free (r->rank_name);
  g_free (r->top_k_name);
  g_free (r);
}

static const SedpOptionSpec responder_options[] = {
  SEDP_OPTION_LIST_SPEC ("score_columns", "score",
                         "float32 score columns every item must have; the first one ranks"),
  SEDP_OPTION_INT_SPEC ("top_k", "0", 0, 100000000,
                        "items marked as the top K (0: all); the client's top_k overrides it"),
  SEDP_OPTION_ENUM_SPEC ("order", "desc", "desc|asc", "best first: highest (desc) or lowest score"),
  SEDP_OPTION_STRING_SPEC ("output", "", "prefix of the rank and top_k columns written"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "responder", .version = "1.0",
                   .description = "ranks the gathered items by score and marks the top K "
                                  "(rank and top_k columns); answers every item",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = responder_options,
                   .create = responder_create, .process = responder_process,
                   .destroy = responder_destroy);
