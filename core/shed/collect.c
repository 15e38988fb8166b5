/* sedp — a recorded workload run unshed, for `sedp shed train` (see collect.h). */
#include "collect.h"

#include "../dsl/keys.h"
#include "../graph/graph.h"
#include "../io/request-file.h"
#include "../runtime/pipeline.h"

#include <string.h>

G_DEFINE_QUARK (sedp-shed-error-quark, sedp_shed_error)

/* Requests in flight at once while collecting. */
#define COLLECT_INFLIGHT 64

static void
request_free (SedpShedRequest *r)
{
  g_free (r->escore);
  g_free (r->score);
  g_free (r);
}

void
sedp_shed_workload_free (SedpShedWorkload *w)
{
  if (w == NULL)
    return;
  g_ptr_array_unref (w->requests);
  g_free (w);
}

/* Sets option @key of @st to @value, replacing the file's or adding it. */
static void
stage_set_option (SedpStageSpec *st, const char *key, const char *value)
{
  guint n = st->option_keys ? g_strv_length (st->option_keys) : 0;
  for (guint i = 0; i < n; i++)
    if (strcmp (st->option_keys[i], key) == 0) {
      g_free (st->option_values[i]);
      st->option_values[i] = g_strdup (value);
      return;
    }
  st->option_keys = g_renew (char *, st->option_keys, n + 2);
  st->option_values = g_renew (char *, st->option_values, n + 2);
  st->option_lines = g_renew (guint, st->option_lines, n + 1);
  st->option_keys[n] = g_strdup (key);
  st->option_values[n] = g_strdup (value);
  st->option_lines[n] = st->line;
  st->option_keys[n + 1] = st->option_values[n + 1] = NULL;
}

/* The pipeline of @path with its shedders off, its plugins from @registry (which must outlive
 * it); the first shedder's floors into @w. */
static SedpGraph *
load_unshed (const char *path, SedpRegistry *registry, SedpShedWorkload *w, GError **error)
{
  SedpPipelineSpec *spec = sedp_pipeline_spec_load (path, error);
  if (spec == NULL)
    return NULL;
  for (guint i = 0; i < spec->stages->len; i++) {
    SedpStageSpec *st = g_ptr_array_index (spec->stages, i);
    if (strcmp (st->plugin, "shedder") == 0)
      stage_set_option (st, "policy", "none");
  }
  w->deadline_ms = spec->deadline_ms;
  /* Offline, every request must be scored to learn from it, and they queue behind each other
   * (COLLECT_INFLIGHT at once, a cold pipeline first): the serving deadline does not apply;
   * the longest a pipeline file allows does (an hour).
   * (With it, the first request of a cold CTR pipeline once timed out at 500 ms.) */
  spec->deadline_ms = (guint) sedp_dsl_runtime_key (SEDP_DSL_GROUP_PIPELINE, "deadline_ms")->max;
  SedpGraph *g = sedp_graph_compile (spec, registry, error);
  for (guint i = 0; g && i < g->n_nodes; i++) {
    const SedpGraphNode *node = &g->nodes[i];
    if (strcmp (node->plugin->name, "shedder") != 0 || w->min_keep != G_MAXUINT)
      continue;
    SedpOptionType t;
    w->min_keep = (guint) sedp_option_values_get_int (
        node->options, sedp_option_values_find (node->options, "min_keep", &t));
    w->max_cutoff = sedp_option_values_get_double (
        node->options, sedp_option_values_find (node->options, "max_cutoff", &t));
  }
  return g;
}

/* The float column @name of item @i's result frame, or NULL with @error naming what is wrong. */
static const float *
result_column (const SedpFrame *f, const char *name, guint *width, const char *rid, GError **error)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32) {
    g_set_error (error, SEDP_SHED_ERROR, SEDP_SHED_ERROR_COLUMN,
                 "request '%s': the pipeline's results have no float32 column '%s' (name the "
                 "model's score with --score and the escore with --escore; a stage's "
                 "drop_columns must not remove them)", rid, name);
    return NULL;
  }
  *width = sedp_column_is_broadcast (c) ? 0 : sedp_column_get_width (c);
  return sedp_column_get_float32 (c);
}

/* Keeps @r's escores and scores in @w (requests of fewer than two candidates are skipped). */
static gboolean
keep_result (SedpShedWorkload *w, SedpRequest *r, guint index, const char *score,
             const char *escore, GError **error)
{
  const SedpResult *res = sedp_request_get_result (r);
  const char *rid = sedp_request_get_id (r);
  if (sedp_result_get_status (res) != SEDP_STATUS_OK) {
    g_set_error (error, SEDP_SHED_ERROR, SEDP_SHED_ERROR_FAILED,
                 "request '%s' ended %s: %s (every request must be scored to learn from it)", rid,
                 sedp_status_to_string (sedp_result_get_status (res)),
                 sedp_result_get_message (res) ? sedp_result_get_message (res) : "no message");
    return FALSE;
  }
  guint n = sedp_result_get_n_items (res);
  if (n < 2) {
    w->skipped++;
    return TRUE;
  }
  SedpShedRequest *q = g_new0 (SedpShedRequest, 1);
  q->index = index;
  q->n = n;
  q->escore = g_new (float, n);
  q->score = g_new (float, n);
  g_ptr_array_add (w->requests, q);
  for (guint i = 0; i < n; i++) {
    guint row = 0, ws = 0, we = 0;
    const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
    const float *s = f ? result_column (f, score, &ws, rid, error) : NULL;
    const float *e = s ? result_column (f, escore, &we, rid, error) : NULL;
    if (f == NULL) {
      g_set_error (error, SEDP_SHED_ERROR, SEDP_SHED_ERROR_FAILED,
                   "request '%s': item %u was not scored (%s)", rid, i,
                   sedp_item_status_to_string (sedp_result_get_item_status (res, i)));
    }
    if (e == NULL)
      return FALSE;
    q->score[i] = s[(gsize) row * ws];
    q->escore[i] = e[(gsize) row * we];
  }
  return TRUE;
}

typedef struct {
  GAsyncQueue *done;
} Collecting;

/* A request in flight: where its answer goes and its place in the file. */
typedef struct {
  Collecting *c;
  guint index;
  SedpRequest *r;
} Submitted;

static void
on_done (SedpRequest *r, gpointer data)
{
  Submitted *s = data;
  s->r = sedp_request_ref (r);
  g_async_queue_push (s->c->done, s);
}

/* Takes one completed request from @c and keeps it. */
static gboolean
take_one (Collecting *c, SedpShedWorkload *w, const char *score, const char *escore,
          GError **error)
{
  Submitted *s = g_async_queue_pop (c->done);
  gboolean ok = keep_result (w, s->r, s->index, score, escore, error);
  sedp_request_unref (s->r);
  g_free (s);
  return ok;
}

/* Submits every request of @reader to @p, at most COLLECT_INFLIGHT at once, and keeps them;
 * every accepted request is waited for, also after an error. */
static gboolean
run_all (SedpPipeline *p, SedpRequestReader *reader, SedpShedWorkload *w, const char *score,
         const char *escore, GError **error)
{
  Collecting c = {g_async_queue_new ()};
  guint inflight = 0;
  gboolean ok = TRUE;
  GError *first = NULL, *later = NULL;
  SedpRequest *r;
  for (guint index = 0; ok && (r = sedp_request_reader_next (reader, &first)) != NULL; index++) {
    SedpStatus st;
    Submitted *sub = g_new0 (Submitted, 1);
    *sub = (Submitted) {&c, index, NULL};
    while ((st = sedp_pipeline_submit (p, r, on_done, sub)) == SEDP_STATUS_OVERLOADED && inflight > 0) {
      ok = take_one (&c, w, score, escore, first ? &later : &first) && ok;
      inflight--;
    }
    inflight += st == SEDP_STATUS_OK;
    if (st != SEDP_STATUS_OK)
      g_free (sub);
    if (st != SEDP_STATUS_OK && first == NULL)
      g_set_error (&first, SEDP_SHED_ERROR, SEDP_SHED_ERROR_FAILED, "request '%s' was refused: %s",
                   sedp_request_get_id (r), sedp_status_to_string (st));
    sedp_request_unref (r);
    ok = ok && first == NULL;
    for (; ok && inflight >= COLLECT_INFLIGHT; inflight--)
      ok = take_one (&c, w, score, escore, &first);
  }
  for (; inflight > 0; inflight--) {
    take_one (&c, w, score, escore, first ? &later : &first);
    g_clear_error (&later);
  }
  g_async_queue_unref (c.done);
  if (first)
    g_propagate_error (error, first);
  return first == NULL;
}

static gint
by_index (gconstpointer a, gconstpointer b)
{
  const SedpShedRequest *x = *(SedpShedRequest *const *) a, *y = *(SedpShedRequest *const *) b;
  return x->index < y->index ? -1 : x->index > y->index;
}

SedpShedWorkload *
sedp_shed_collect (const char *pipeline, const char *requests, SedpRequestFormat format,
                   const char *score, const char *escore, GError **error)
{
  g_autoptr (SedpShedWorkload) w = g_new0 (SedpShedWorkload, 1);
  w->requests = g_ptr_array_new_with_free_func ((GDestroyNotify) request_free);
  w->min_keep = G_MAXUINT;
  w->max_cutoff = 0.9;
  g_auto (GStrv) dirs = sedp_registry_default_path ();
  g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) dirs);
  SedpGraph *g = load_unshed (pipeline, registry, w, error);
  if (w->min_keep == G_MAXUINT)
    w->min_keep = 10;
  SedpPipeline *p = g ? sedp_pipeline_new (g, error) : NULL;
  if (p == NULL || !sedp_pipeline_start (p, error)) {
    sedp_pipeline_free (p);
    return NULL;
  }
  SedpRequestReader *reader = sedp_request_reader_open_format (requests, format, error);
  gboolean ok = reader && run_all (p, reader, w, score, escore, error);
  g_ptr_array_sort (w->requests, by_index); /* the file's order, whatever order they ended in */
  sedp_request_reader_close (reader);
  sedp_pipeline_free (p);
  if (ok && w->requests->len == 0)
    g_set_error (error, SEDP_SHED_ERROR, SEDP_SHED_ERROR_EMPTY,
                 "%s: no request of two or more candidates to learn from (%u requests had fewer)",
                 requests, w->skipped);
  return ok && w->requests->len > 0 ? g_steal_pointer (&w) : NULL;
}
