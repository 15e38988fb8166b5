/* responder — the last stage of a serving pipeline (request scope, after the scoring stage).
 * On the gathered frame of all items it ranks the items by their first score column and marks
 * the best K: it writes an int64 `rank` column (0 = best) and an int64 `top_k` column (1 for the
 * best K items, 0 otherwise), both under the `output` prefix. The serving layer fills
 * PredictResponse.top_k from these columns. NaN scores rank last whatever the order; ties keep
 * the item order. The client's top_k (sedp_request_get_top_k(), set by data_reader) overrides
 * the `top_k` option when it is not 0.
 *
 * Several models (docs/routing.md, "Multi-model pipelines"): `combine = OUT = EXPR` first writes
 * the float32 column OUT from the heads the formula reads (formula.h), which `score_columns` can
 * then rank by; `keep = N` keeps only the N best items and drops the others (a light model's
 * pre-ranking before a heavy one). Without `keep` every item is answered. */
#include <sedp/sedp.h>

#include "formula.h"

#include <math.h>
#include <string.h>

typedef struct {
  char **score_columns;
  guint top_k;
  guint keep;         /* 0: every item */
  gboolean ascending;
  char *rank_name;
  char *top_k_name;
  Formula *combine;   /* NULL without `combine` */
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

/* The name of column @base under the `output` prefix. */
static char *
prefixed (const SedpStageContext *ctx, const char *base)
{
  const char *prefix = sedp_stage_context_get_string (ctx, "output");
  return g_strconcat (prefix ? prefix : "", base, NULL);
}

/* The output of @f must not be a column the ranking writes. */
static gboolean
check_combine_output (const SedpStageContext *ctx, const Formula *f, GError **error)
{
  const char *out = formula_get_output (f);
  const char *bases[] = {"rank", "top_k"};
  for (guint i = 0; i < G_N_ELEMENTS (bases); i++) {
    g_autofree char *name = prefixed (ctx, bases[i]);
    if (strcmp (out, name) == 0) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "combine: the output column '%s' is the %s column this stage writes; name "
                   "the output otherwise (or set output = PREFIX)", out, bases[i]);
      return FALSE;
    }
  }
  return TRUE;
}

/* The compiled `combine` option in *@out (NULL when it is not set). Opens nothing: shared by
 * create, writes and needs. */
static gboolean
load_combine (const SedpStageContext *ctx, Formula **out, GError **error)
{
  *out = NULL;
  const char *text = sedp_stage_context_get_string (ctx, "combine");
  if (text == NULL || text[strspn (text, " \t")] == '\0')
    return TRUE;
  g_autoptr (GError) local = NULL;
  g_autoptr (Formula) f = formula_compile (text, NULL, &local);
  if (f == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "combine: %s", local->message);
    return FALSE;
  }
  if (!check_combine_output (ctx, f, error))
    return FALSE;
  *out = g_steal_pointer (&f);
  return TRUE;
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
  Formula *combine;
  if (!load_combine (ctx, &combine, error))
    return NULL;
  Responder *r = g_new0 (Responder, 1);
  r->combine = combine;
  r->score_columns = g_strdupv ((char **) cols);
  r->top_k = (guint) sedp_stage_context_get_int (ctx, "top_k");
  r->keep = (guint) sedp_stage_context_get_int (ctx, "keep");
  r->ascending = g_strcmp0 (sedp_stage_context_get_string (ctx, "order"), "asc") == 0;
  r->rank_name = prefixed (ctx, "rank");
  r->top_k_name = prefixed (ctx, "top_k");
  r->ranked = sedp_stage_context_add_counter (ctx, "responder_items_total", "items ranked");
  return r;
}

/* Where formula input @i is in @f: a float32 column with at least K + 1 values per item. */
static gboolean
bind_input (const Formula *fm, guint i, const SedpFrame *f, FormulaInput *in, GError **error)
{
  guint k;
  const char *name = formula_get_input (fm, i, &k);
  const SedpColumn *col = sedp_frame_require_column (f, name, SEDP_COLUMN_FLOAT32, 0, error);
  if (col == NULL) {
    g_prefix_error (error, "combine: ");
    return FALSE;
  }
  guint width = sedp_column_get_width (col);
  if (k >= width) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "combine: '%s[%u]' reads value %u of column '%s', which has %u per item "
                 "(%s[0] … %s[%u])", name, k, k, name, width, name, name, width - 1);
    return FALSE;
  }
  in->values = sedp_column_get_float32 (col) + k;
  in->stride = sedp_column_is_broadcast (col) ? 0 : width;
  return TRUE;
}

/* Writes the `combine` output column on every row of @f. */
static gboolean
write_combined (const Responder *r, SedpFrame *f, GError **error)
{
  guint n = sedp_frame_get_n_rows (f), n_in = formula_get_n_inputs (r->combine);
  g_autofree FormulaInput *in = g_new0 (FormulaInput, MAX (n_in, 1));
  for (guint i = 0; i < n_in; i++)
    if (!bind_input (r->combine, i, f, &in[i], error))
      return FALSE;
  g_autofree float *values = g_new (float, MAX (n, 1));
  formula_eval (r->combine, in, n, values); /* before the output replaces an input column */
  SedpColumn *out = sedp_frame_add_column (f, formula_get_output (r->combine),
                                           SEDP_COLUMN_FLOAT32, 1);
  memcpy (sedp_column_float32_data (out), values, n * sizeof *values);
  return TRUE;
}

/* The first score column, after checking that every one is there. */
static const SedpColumn *
require_scores (const Responder *r, const SedpFrame *f, GError **error)
{
  const SedpColumn *first = NULL;
  for (guint c = 0; r->score_columns[c]; c++) {
    const SedpColumn *col = sedp_frame_require_column (f, r->score_columns[c], SEDP_COLUMN_FLOAT32,
                                                       0, error);
    if (col == NULL)
      return NULL;
    if (first == NULL)
      first = col;
  }
  return first;
}

/* The rows of @f, best first by the first head of @scores. */
static Entry *
sort_rows (const Responder *r, const SedpFrame *f, const SedpColumn *scores)
{
  guint n = sedp_frame_get_n_rows (f);
  guint width = sedp_column_get_width (scores);
  gboolean bcast = sedp_column_is_broadcast (scores);
  const float *v = sedp_column_get_float32 (scores);
  Entry *e = g_new (Entry, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    e[i].score = v[(bcast ? 0 : i) * width]; /* multi-head: the first head */
    e[i].item = sedp_frame_get_item_index (f, i);
    e[i].row = i;
  }
  qsort (e, n, sizeof *e, r->ascending ? cmp_asc : cmp_desc);
  return e;
}

/* K: the client's top_k when it sent one, else the option; every item for 0. */
static guint
top_k_of (const Responder *r, SedpEvent *event, guint n)
{
  guint k = r->top_k;
  guint client = sedp_request_get_top_k (sedp_event_get_request (event));
  if (client > 0)
    k = client;
  return k == 0 || k > n ? n : k;
}

/* Writes rank and top_k; with `keep`, drops the rows ranked past it. */
static void
mark (const Responder *r, SedpFrame *f, const Entry *e, guint n, guint k)
{
  SedpColumn *rc = sedp_frame_add_column (f, r->rank_name, SEDP_COLUMN_INT64, 1);
  SedpColumn *tc = sedp_frame_add_column (f, r->top_k_name, SEDP_COLUMN_INT64, 1);
  gint64 *rank = sedp_column_int64_data (rc), *top = sedp_column_int64_data (tc);
  for (guint i = 0; i < n; i++) {
    rank[e[i].row] = i;
    top[e[i].row] = i < k;
  }
  for (guint i = r->keep; r->keep > 0 && i < n; i++)
    sedp_frame_drop_row (f, e[i].row); /* no message: drop_row carries none */
}

static gboolean
respond (Responder *r, SedpEvent *event, GError **error)
{
  SedpFrame *f = sedp_event_get_frame (event);
  if (!sedp_frame_has_item_rows (f))
    return TRUE; /* no items reached this stage: nothing to rank */
  if (r->combine && !write_combined (r, f, error))
    return FALSE;
  const SedpColumn *scores = require_scores (r, f, error);
  if (scores == NULL)
    return FALSE;
  guint n = sedp_frame_get_n_rows (f);
  g_autofree Entry *e = sort_rows (r, f, scores);
  mark (r, f, e, n, top_k_of (r, event, n));
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
  formula_free (r->combine);
  g_free (r);
}

/* `writes`: the combine output, then rank and top_k under the prefix. */
static char **
responder_writes (const SedpStageContext *ctx, GError **error)
{
  g_autoptr (Formula) f = NULL;
  if (!load_combine (ctx, &f, error))
    return NULL;
  GPtrArray *cols = g_ptr_array_new ();
  if (f)
    g_ptr_array_add (cols, g_strdup (formula_get_output (f)));
  g_ptr_array_add (cols, prefixed (ctx, "rank"));
  g_ptr_array_add (cols, prefixed (ctx, "top_k"));
  g_ptr_array_add (cols, NULL);
  return (char **) g_ptr_array_free (cols, FALSE);
}

/* `needs`: combine=COLUMN for every column the formula reads. The score_columns are not
 * declared: a plain pipeline ranks columns that stages declaring no `writes` produce. */
static char **
responder_needs (const SedpStageContext *ctx, GError **error)
{
  g_autoptr (Formula) f = NULL;
  if (!load_combine (ctx, &f, error))
    return NULL;
  char **cols = f ? formula_list_heads (f) : g_new0 (char *, 1);
  for (guint i = 0; cols[i]; i++) {
    char *col = cols[i];
    cols[i] = g_strconcat ("combine=", col, NULL);
    g_free (col);
  }
  return cols;
}

static const SedpOptionSpec responder_options[] = {
  SEDP_OPTION_LIST_SPEC ("score_columns", "score",
                         "float32 score columns every item must have; the first one ranks (the "
                         "combine output when it names it)"),
  SEDP_OPTION_INT_SPEC ("top_k", "0", 0, 100000000,
                        "items marked as the top K (0: all); the client's top_k overrides it"),
  SEDP_OPTION_ENUM_SPEC ("order", "desc", "desc|asc", "best first: highest (desc) or lowest score"),
  SEDP_OPTION_STRING_SPEC ("output", "", "prefix of the rank and top_k columns written"),
  SEDP_OPTION_STRING_SPEC ("combine", NULL,
                           "OUT = EXPR: writes float32 column OUT per item from the heads EXPR "
                           "reads (+ - * /, pow exp log sqrt min max sigmoid), before ranking"),
  SEDP_OPTION_INT_SPEC ("keep", "0", 0, 100000000,
                        "keep only the best N items, dropping the others (0: keep every item)"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "responder", .version = "1.1",
                   .description = "ranks the gathered items by score (or a formula combining "
                                  "several heads) and marks the top K; keeps the best N",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = responder_options,
                   .create = responder_create, .process = responder_process,
                   .destroy = responder_destroy, .writes = responder_writes,
                   .needs = responder_needs);
