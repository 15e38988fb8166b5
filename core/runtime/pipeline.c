/* sedp — running a pipeline: stage workers, batching, delivery along the DAG, sync mode. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "runtime-private.h"
#include "../util/cpus.h"

#include <errno.h>
#include <gio/gio.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

G_DEFINE_QUARK (sedp-runtime-error-quark, sedp_runtime_error)

/* Sync mode: the stages' pending events of the one request a thread runs. */
struct _SyncExec {
  GPtrArray **queues; /* per stage */
  guint worker;
};

static const double latency_bounds_us[] = {1,    2,    5,     10,    20,    50,     100,
                                           200,  500,  1000,  2000,  5000,  10000,  20000,
                                           50000, 100000, 200000, 500000, 1000000, 5000000};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};

static void process_batch (SedpPipeline *p, Stage *s, SedpEvent **evs, guint n, guint worker,
                           SyncExec *x);

/* ---- delivery ---- */

void
sedp_runtime_enqueue (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *ev)
{
  (void) p;
  ev->enqueued_at = g_get_monotonic_time ();
  if (x) {
    g_ptr_array_add (x->queues[stage->node->index], ev);
    return;
  }
  if (!sedp_channel_push (stage->channel, ev))
    sedp_event_free (ev); /* closed: the pipeline is gone, its requests already completed */
}

void
sedp_runtime_deliver (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *ev)
{
  if (stage->direct) {
    if (ev->skip)
      sedp_route_pass_skip (p, x, stage, ev);
    else
      sedp_runtime_enqueue (p, x, stage, ev);
    return;
  }
  GPtrArray *ready = sedp_join_accept (p, stage, ev);
  if (ready == NULL)
    return;
  for (guint i = 0; i < ready->len; i++) {
    SedpEvent *one = ready->pdata[i];
    if (one->skip)
      sedp_route_pass_skip (p, x, stage, one);
    else
      sedp_runtime_enqueue (p, x, stage, one);
  }
  g_ptr_array_unref (ready);
}

/* Sends @ev's frame (NULL: a tombstone) to every output of @s, or to the request's result
 * when @s is a sink. Takes ownership of @ev. */
static void
forward (SedpPipeline *p, Stage *s, SedpEvent *ev, SyncExec *x)
{
  const SedpGraphNode *node = s->node;
  if (s->is_sink) {
    SedpFrame *f = ev->frame;
    ev->frame = NULL;
    sedp_request_collect (ev->request, f);
    sedp_event_free (ev);
    return;
  }
  if (s->n_branches > 0 && ev->frame) {
    sedp_route_forward (p, s, ev, x);
    return;
  }
  for (guint k = 0; k < node->n_outputs; k++) {
    SedpFrame *f;
    if (k + 1 == node->n_outputs) {
      f = ev->frame;
      ev->frame = NULL;
    } else {
      f = ev->frame ? sedp_frame_ref (ev->frame) : NULL;
    }
    SedpEvent *next = sedp_event_new (ev->request, ev->frame_index, f);
    next->slot = node->output_slots[k];
    sedp_runtime_deliver (p, x, &p->stages[node->outputs[k]], next);
  }
  sedp_event_free (ev);
}

/* Every pending item of the request dropped (or answered); the request completes. */
static void
end_request_early (SedpRequest *r, const char *stage, SedpItemStatus status)
{
  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->result.n_items; i++)
    if (r->result.item_status[i] == SEDP_ITEM_PENDING)
      r->result.item_status[i] = status;
  g_mutex_unlock (&r->lock);
  g_autofree char *msg = g_strdup_printf ("stage '%s' %s the request", stage,
                                          status == SEDP_ITEM_CACHED ? "answered"
                                          : status == SEDP_ITEM_SHED ? "shed"
                                                                     : "dropped");
  sedp_request_complete (r, SEDP_STATUS_OK, msg);
}

static void
drop_request (SedpRequest *r, const char *stage)
{
  end_request_early (r, stage, SEDP_ITEM_DROPPED);
}

/* The source ran: cut the items into frames and set how many sink arrivals to expect. */
static gboolean
start_request (SedpPipeline *p, SedpEvent *ev)
{
  SedpRequest *r = ev->request;
  SedpFrame *items = ev->items ? g_steal_pointer (&ev->items)
                               : (r->items ? sedp_frame_ref (r->items) : sedp_frame_new (0));
  guint per_frame = 0, once = 0;
  const SedpGraph *g = p->graph;
  for (guint k = 0; k < g->n_sinks; k++) {
    if (g->nodes[g->sinks[k]].scope == SEDP_SCOPE_ITEM)
      per_frame++;
    else
      once++;
  }
  sedp_request_start_items (r, items, p->frame_rows, per_frame, once);
  guint n = sedp_frame_get_n_rows (items);
  sedp_frame_unref (items);
  if (n == 0) {
    sedp_request_complete (r, SEDP_STATUS_OK, "the request has no items");
    return FALSE;
  }
  return TRUE;
}

/* After `process`: errors, drops, shed rows, then on to the next stages. */
static void
post_process (SedpPipeline *p, Stage *s, SedpEvent *ev, SyncExec *x)
{
  SedpRequest *r = ev->request;
  const char *name = s->ctx.name;

  if (ev->error) {
    sedp_counter_add (s->m_failed, 1);
    if (ev->frame_index == SEDP_FRAME_INDEX_REQUEST) {
      sedp_request_fail (r, name, ev->error);
      sedp_event_free (ev);
      return;
    }
    g_autofree char *msg = g_strdup_printf ("stage '%s': %s", name, ev->error->message);
    sedp_request_record_frame (r, ev->frame, SEDP_ITEM_FAILED, msg);
    g_clear_pointer (&ev->frame, sedp_frame_unref);
    forward (p, s, ev, x);
    return;
  }
  if (ev->dropped) {
    sedp_counter_add (s->m_dropped, ev->frame ? sedp_frame_get_n_rows (ev->frame) : 0);
    if (ev->frame_index == SEDP_FRAME_INDEX_REQUEST) {
      if (s->is_source)
        start_request (p, ev);
      drop_request (r, name);
      sedp_event_free (ev);
      return;
    }
    sedp_request_record_frame (r, ev->frame, SEDP_ITEM_DROPPED, NULL);
    g_clear_pointer (&ev->frame, sedp_frame_unref);
    forward (p, s, ev, x);
    return;
  }
  if (s->is_source && !start_request (p, ev)) {
    sedp_event_free (ev);
    return;
  }
  if (ev->items) {
    g_warning ("stage '%s' set items, but only the source stage may; ignored", name);
    g_clear_pointer (&ev->items, sedp_frame_unref);
  }
  SedpFrame *f = ev->frame;
  if (sedp_frame_has_dead_rows (f)) {
    if (sedp_frame_get_kind (f) == FRAME_KIND_REQUEST) {
      SedpRowState st = sedp_frame_get_row_state (f, 0);
      if (st == SEDP_ROW_FAILED) {
        g_autofree char *msg = g_strdup_printf ("stage '%s': %s", name, sedp_frame_get_row_message (f, 0));
        sedp_counter_add (s->m_failed, 1);
        sedp_request_complete (r, SEDP_STATUS_FAILED, msg);
      } else {
        end_request_early (r, name, st == SEDP_ROW_ANSWERED ? SEDP_ITEM_CACHED
                                    : st == SEDP_ROW_SHED   ? SEDP_ITEM_SHED
                                                            : SEDP_ITEM_DROPPED);
      }
      sedp_event_free (ev);
      return;
    }
    sedp_request_record_rows (r, f, name);
    guint n = sedp_frame_get_n_rows (f), live = 0, dropped = 0, answered = 0;
    g_autofree guint32 *rows = g_new (guint32, MAX (n, 1));
    g_autofree guint32 *early = g_new (guint32, MAX (n, 1));
    for (guint row = 0; row < n; row++) {
      SedpRowState st = sedp_frame_get_row_state (f, row);
      if (st == SEDP_ROW_LIVE)
        rows[live++] = row;
      else if (st == SEDP_ROW_DROPPED || st == SEDP_ROW_SHED)
        dropped++;
      else if (st == SEDP_ROW_ANSWERED)
        early[answered++] = row;
    }
    sedp_counter_add (s->m_dropped, dropped);
    if (answered) {
      /* Rows answered early keep the columns they have now, as their result. */
      SedpFrame *done = sedp_frame_select_rows (f, early, answered);
      sedp_frame_set_kind (done, FRAME_KIND_ITEMS);
      sedp_request_record_answered (r, done);
    }
    ev->frame = live ? sedp_frame_select_rows (f, rows, live) : NULL;
    sedp_frame_unref (f);
  }
  forward (p, s, ev, x);
}

/* [stage] drop_columns: removes the columns whose names match a pattern, in this stage's thread,
 * so that later stages, joins and gathers neither carry nor copy what nothing after needs. */
static void
drop_columns (Stage *s, SedpFrame *frame)
{
  for (guint c = frame->n_columns; c-- > 0;)
    for (guint k = 0; s->drop[k]; k++)
      if (g_pattern_spec_match_string (s->drop[k], frame->columns[c]->name)) {
        sedp_frame_remove_column_at (frame, c);
        break;
      }
}

static void
process_batch (SedpPipeline *p, Stage *s, SedpEvent **evs, guint n, guint worker, SyncExec *x)
{
  gint64 now = g_get_monotonic_time ();
  guint live = 0;
  for (guint i = 0; i < n; i++) {
    SedpEvent *ev = evs[i];
    if (now > ev->request->deadline) {
      /* Expired at stage entry: dropped; the deadline thread answers the request. */
      sedp_counter_add (s->m_expired, 1);
      sedp_event_free (ev);
    } else if (sedp_request_is_done (ev->request)) {
      sedp_event_free (ev); /* the request already failed as a whole */
    } else if (ev->frame == NULL) {
      forward (p, s, ev, x); /* a tombstone passes through for the joins and the sink */
    } else {
      ev->frame = sedp_frame_make_writable (ev->frame);
      evs[live++] = ev;
    }
  }
  if (live == 0)
    return;
  sedp_counter_add (s->m_events, live);
  sedp_histogram_observe (s->m_batch, live);
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok = s->desc->process (s->instance, evs, live, worker, &error);
  if (!ok) {
    if (live == 1) {
      if (error == NULL)
        g_set_error_literal (&error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL,
                             "process failed without saying why");
      sedp_event_fail (evs[0], error);
    } else {
      /* Isolate the failure: run each event alone, so only the requests that fail on their
       * own get the error. */
      for (guint i = 0; i < live; i++) {
        GError *one = NULL;
        if (!s->desc->process (s->instance, &evs[i], 1, worker, &one)) {
          if (one == NULL)
            g_set_error_literal (&one, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL,
                                 "process failed without saying why");
          sedp_event_fail (evs[i], one);
          g_error_free (one);
        }
      }
    }
    g_clear_error (&error);
  }
  gint64 t1 = g_get_monotonic_time ();
  sedp_histogram_observe (s->m_latency, (double) (t1 - t0));
  guint rows = 0;
  for (guint i = 0; i < live; i++) {
    sedp_latency_window_observe (s->residence, t1 - evs[i]->enqueued_at, t1);
    rows += evs[i]->frame ? sedp_frame_get_n_rows (evs[i]->frame) : 0;
  }
  sedp_latency_window_observe_n (s->rows_done, 0, rows, t1);
  sedp_latency_window_observe_n (s->busy_us, 0, (guint) MIN (t1 - t0, G_MAXUINT), t1);
  for (guint i = 0; i < live; i++) {
    if (s->drop && evs[i]->frame)
      drop_columns (s, evs[i]->frame);
    post_process (p, s, evs[i], x);
  }
}

/* ---- threads ---- */

typedef struct {
  SedpPipeline *pipeline;
  Stage *stage;
  guint worker;
  gint *tid;               /* where the worker writes its kernel thread id */
} WorkerArgs;

static void
record_tid (gint *slot)
{
  g_atomic_int_set (slot, (gint) syscall (SYS_gettid));
}

/* `cpus` (the stage's, else the pipeline's): the calling worker runs on those CPUs only. */
static void
pin_worker (const guint *cpus, guint n_cpus, const char *who)
{
  GError *error = NULL;
  if (n_cpus > 0 && !sedp_cpu_list_pin_thread (cpus, n_cpus, &error)) {
    g_warning ("stage '%s': %s; its worker runs on any CPU", who, error->message);
    g_error_free (error);
  }
}

static gpointer
stage_worker (gpointer data)
{
  WorkerArgs *a = data;
  Stage *s = a->stage;
  record_tid (a->tid);
  pin_worker (s->node->spec->n_cpus ? s->node->spec->cpus : a->pipeline->graph->spec->cpus,
              s->node->spec->n_cpus ? s->node->spec->n_cpus : a->pipeline->graph->spec->n_cpus,
              s->ctx.name);
  guint batch = s->node->spec->batch;
  SedpEvent **buf = g_new (SedpEvent *, batch);
  guint n;
  while ((n = sedp_channel_pop_batch (s->channel, (gpointer *) buf, batch,
                                      s->node->spec->batch_timeout_us)) > 0)
    process_batch (a->pipeline, s, buf, n, a->worker, NULL);
  g_free (buf);
  g_free (a);
  return NULL;
}

static gpointer
sync_worker (gpointer data)
{
  WorkerArgs *a = data;
  SedpPipeline *p = a->pipeline;
  record_tid (a->tid);
  pin_worker (p->graph->spec->cpus, p->graph->spec->n_cpus, "sync");
  SyncExec x = {g_new (GPtrArray *, p->n_stages), a->worker};
  for (guint i = 0; i < p->n_stages; i++)
    x.queues[i] = g_ptr_array_new ();
  guint max_batch = 1;
  for (guint i = 0; i < p->n_stages; i++)
    max_batch = MAX (max_batch, p->stages[i].node->spec->batch);
  SedpEvent **buf = g_new (SedpEvent *, max_batch);
  SedpEvent *ev;
  while (sedp_channel_pop_batch (p->entry, (gpointer *) &ev, 1, 0) == 1) {
    g_ptr_array_add (x.queues[p->graph->source], ev);
    /* Run every stage of this one request, in topological order, in this thread. */
    for (guint t = 0; t < p->n_stages; t++) {
      Stage *s = &p->stages[p->graph->topo[t]];
      GPtrArray *q = x.queues[s->node->index];
      guint batch = s->node->spec->batch;
      for (guint i = 0; i < q->len;) {
        guint n = MIN (batch, q->len - i);
        memcpy (buf, q->pdata + i, n * sizeof (gpointer));
        i += n;
        process_batch (p, s, buf, n, a->worker, &x);
      }
      g_ptr_array_set_size (q, 0);
    }
  }
  for (guint i = 0; i < p->n_stages; i++)
    g_ptr_array_unref (x.queues[i]);
  g_free (x.queues);
  g_free (buf);
  g_free (a);
  return NULL;
}

/* ---- life cycle ---- */

static void
destroy_instances (SedpPipeline *p)
{
  for (guint t = p->n_stages; t-- > 0;) {
    Stage *s = &p->stages[p->graph->topo[t]];
    if (s->instance) {
      s->desc->destroy (s->instance);
      s->instance = NULL;
    }
  }
}

SedpPipeline *
sedp_pipeline_new (SedpGraph *graph, GError **error)
{
  g_return_val_if_fail (graph != NULL, NULL);
  const SedpPipelineSpec *spec = graph->spec;
  /* Every CPU a `cpus` key names must exist here (the file may come from a larger machine). */
  GError *bad = NULL;
  if (!sedp_cpu_list_check (spec->cpus, spec->n_cpus, &bad)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE, "%s: [pipeline] cpus: %s",
                 spec->path, bad->message);
    g_error_free (bad);
    return NULL;
  }
  for (guint i = 0; i < graph->n_nodes; i++) {
    const SedpStageSpec *ss = graph->nodes[i].spec;
    if (!sedp_cpu_list_check (ss->cpus, ss->n_cpus, &bad)) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE, "%s:%u: [stage %s] cpus: %s",
                   spec->path, sedp_stage_spec_key_line (ss, "cpus"), ss->name, bad->message);
      g_error_free (bad);
      return NULL;
    }
  }
  SedpPipeline *p = g_new0 (SedpPipeline, 1);
  p->graph = graph;
  p->n_stages = graph->n_nodes;
  p->stages = g_new0 (Stage, p->n_stages);
  p->metrics = sedp_metrics_new ();
  p->mode = spec->mode;
  p->deadline_us = (gint64) spec->deadline_ms * 1000;
  p->frame_rows = spec->frame_rows;
  g_mutex_init (&p->lock);
  g_cond_init (&p->drained);

  guint total_parallelism = 0;
  for (guint i = 0; i < p->n_stages; i++)
    total_parallelism += graph->nodes[i].spec->parallelism;
  p->n_sync_threads = spec->sync_workers ? spec->sync_workers : total_parallelism;

  p->m_requests = sedp_metrics_counter (p->metrics, "pipeline", "requests_total", "Requests completed");
  p->m_overloaded = sedp_metrics_counter (p->metrics, "pipeline", "overloaded_total",
                                          "Requests refused because the entry channel was full");
  p->m_timeouts = sedp_metrics_counter (p->metrics, "pipeline", "timeouts_total",
                                        "Requests answered at their deadline");
  p->recent_latency = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  p->recent_arrivals = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  p->recent_items = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  p->m_request_latency = sedp_metrics_histogram (p->metrics, "pipeline", "request_latency_us",
                                                 "Request latency (microseconds)", latency_bounds_us,
                                                 G_N_ELEMENTS (latency_bounds_us));

  for (guint i = 0; i < p->n_stages; i++) {
    Stage *s = &p->stages[i];
    const SedpGraphNode *node = &graph->nodes[i];
    s->pipeline = p;
    s->node = node;
    s->desc = node->plugin->desc;
    s->is_sink = node->n_outputs == 0;
    s->is_source = i == graph->source;
    s->slot_is_item = g_new0 (guint8, MAX (node->n_inputs, 1));
    s->slot_pos = g_new0 (guint, MAX (node->n_inputs, 1));
    guint n_drop = node->spec->drop_columns ? g_strv_length (node->spec->drop_columns) : 0;
    if (n_drop > 0) {
      s->drop = g_new0 (GPatternSpec *, n_drop + 1);
      for (guint k = 0; k < n_drop; k++)
        s->drop[k] = g_pattern_spec_new (node->spec->drop_columns[k]);
    }
    for (guint k = 0; k < node->n_inputs; k++) {
      gboolean item = graph->nodes[node->inputs[k]].scope == SEDP_SCOPE_ITEM;
      s->slot_is_item[k] = (guint8) item;
      s->slot_pos[k] = item ? s->n_item_inputs++ : s->n_req_inputs++;
    }
    s->direct = node->n_inputs == 1 &&
                graph->nodes[node->inputs[0]].scope == node->scope;
    s->compact_scatter = sedp_join_compacts (graph, i);
    s->ctx.name = g_strdup (node->spec->name);
    s->ctx.scope = node->scope;
    s->ctx.parallelism = p->mode == SEDP_MODE_SYNC ? p->n_sync_threads : node->spec->parallelism;
    s->ctx.batch = node->spec->batch;
    s->ctx.options = node->options;
    s->ctx.metrics = p->metrics;
    s->m_events = sedp_metrics_counter (p->metrics, s->ctx.name, "stage_events_total",
                                        "Events processed by the stage");
    s->m_expired = sedp_metrics_counter (p->metrics, s->ctx.name, "stage_expired_total",
                                         "Events dropped at stage entry after their deadline");
    s->m_failed = sedp_metrics_counter (p->metrics, s->ctx.name, "stage_errors_total",
                                        "Events that failed in the stage");
    s->m_dropped = sedp_metrics_counter (p->metrics, s->ctx.name, "stage_dropped_rows_total",
                                         "Rows shed by the stage");
    s->m_batch = sedp_metrics_histogram (p->metrics, s->ctx.name, "stage_batch_size",
                                         "Events per process call", batch_bounds,
                                         G_N_ELEMENTS (batch_bounds));
    s->m_latency = sedp_metrics_histogram (p->metrics, s->ctx.name, "stage_process_us",
                                           "Duration of one process call (microseconds)",
                                           latency_bounds_us, G_N_ELEMENTS (latency_bounds_us));
    sedp_load_init_stage (p, s);
    sedp_route_init_stage (p, s);
  }
  sedp_load_register_gauges (p);

  for (guint t = 0; t < p->n_stages; t++) {
    Stage *s = &p->stages[graph->topo[t]];
    GError *local = NULL;
    s->instance = s->desc->create (&s->ctx, &local);
    if (s->instance == NULL) {
      g_set_error (error, SEDP_RUNTIME_ERROR, SEDP_RUNTIME_ERROR_CREATE_FAILED,
                   "%s:%u: [stage %s]: plugin '%s' failed to start: %s", spec->path,
                   s->node->spec->line, s->ctx.name, s->desc->name,
                   local ? local->message : "create returned NULL without an error");
      g_clear_error (&local);
      sedp_pipeline_free (p);
      return NULL;
    }
  }
  return p;
}

gboolean
sedp_pipeline_start (SedpPipeline *p, GError **error)
{
  g_return_val_if_fail (p != NULL && !p->started, FALSE);
  (void) error;
  guint spin = p->graph->spec->idle_spin_us;
  p->deadlines = sedp_deadline_queue_new ();
  if (p->mode == SEDP_MODE_STAGED) {
    for (guint i = 0; i < p->n_stages; i++) {
      Stage *s = &p->stages[i];
      __atomic_store_n (&s->channel, sedp_channel_new (s->node->spec->queue_capacity, spin),
                        __ATOMIC_RELEASE);
    }
    for (guint i = 0; i < p->n_stages; i++) {
      Stage *s = &p->stages[i];
      s->n_threads = s->node->spec->parallelism;
      s->threads = g_new0 (GThread *, s->n_threads);
      s->tids = g_new0 (gint, s->n_threads);
      for (guint w = 0; w < s->n_threads; w++) {
        WorkerArgs *a = g_new (WorkerArgs, 1);
        *a = (WorkerArgs){p, s, w, &s->tids[w]};
        /* a thread name holds 15 bytes: a longer one is refused, and the thread keeps "sedp" */
        g_autofree char *tname = g_strdup_printf ("sedp-%.10s", s->ctx.name);
        s->threads[w] = g_thread_new (tname, stage_worker, a);
      }
    }
  } else {
    p->entry = sedp_channel_new (p->stages[p->graph->source].node->spec->queue_capacity, spin);
    p->sync_threads = g_new0 (GThread *, p->n_sync_threads);
    p->sync_tids = g_new0 (gint, p->n_sync_threads);
    for (guint w = 0; w < p->n_sync_threads; w++) {
      WorkerArgs *a = g_new (WorkerArgs, 1);
      *a = (WorkerArgs){p, NULL, w, &p->sync_tids[w]};
      p->sync_threads[w] = g_thread_new ("sedp-sync", sync_worker, a);
    }
  }
  p->started = TRUE;
  g_atomic_int_set (&p->accepting, 1);
  return TRUE;
}

/* Sets the scheduling policy of worker @tid (waiting for it to have started). */
static gboolean
set_policy (const gint *tid, gboolean idle, GError **error)
{
  for (guint t = 0; g_atomic_int_get (tid) == 0 && t < 10000; t++)
    g_usleep (100);
  struct sched_param param = {0};
  gint id = g_atomic_int_get (tid);
  if (id == 0 || sched_setscheduler (id, idle ? SCHED_IDLE : SCHED_OTHER, &param) != 0) {
    int e = id ? errno : ESRCH;
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                 "cannot move worker thread %d to %s: %s%s", id, idle ? "SCHED_IDLE" : "SCHED_OTHER",
                 g_strerror (e),
                 e == EPERM ? " (leaving SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE of 20)" : "");
    return FALSE;
  }
  return TRUE;
}

gboolean
sedp_pipeline_set_idle (SedpPipeline *p, gboolean idle, GError **error)
{
  g_return_val_if_fail (p != NULL && p->started, FALSE);
  for (guint i = 0; p->mode == SEDP_MODE_STAGED && i < p->n_stages; i++)
    for (guint w = 0; w < p->stages[i].n_threads; w++)
      if (!set_policy (&p->stages[i].tids[w], idle, error))
        return FALSE;
  for (guint w = 0; p->mode != SEDP_MODE_STAGED && w < p->n_sync_threads; w++)
    if (!set_policy (&p->sync_tids[w], idle, error))
      return FALSE;
  return set_policy (sedp_deadline_queue_tid (p->deadlines), idle, error);
}

/* Takes back an accepted request that could not be queued. */
static void
unbegin (SedpPipeline *p, SedpRequest *r, gboolean auto_deadline)
{
  sedp_deadline_queue_remove (p->deadlines, r);
  g_clear_pointer (&r->joins, g_free);
  g_clear_pointer (&r->result.frames, g_ptr_array_unref);
  r->pipeline = NULL;
  if (auto_deadline)
    r->deadline = 0;
  g_mutex_lock (&p->lock);
  if (g_atomic_int_dec_and_test ((gint *) &p->inflight))
    g_cond_broadcast (&p->drained);
  g_mutex_unlock (&p->lock);
  sedp_request_unref (r);
}

/* sedp_pipeline_run()'s wait. */
typedef struct {
  GMutex lock;
  GCond cond;
  gboolean done;
} RunWait;

static void
run_done (SedpRequest *request, gpointer data)
{
  RunWait *w = data;
  g_mutex_lock (&w->lock);
  w->done = TRUE;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
}

SedpStatus
sedp_pipeline_run (SedpPipeline *pipeline, SedpRequest *request)
{
  RunWait w = {.done = FALSE};
  g_mutex_init (&w.lock);
  g_cond_init (&w.cond);
  SedpStatus st = sedp_pipeline_submit (pipeline, request, run_done, &w);
  g_mutex_lock (&w.lock);
  while (st == SEDP_STATUS_OK && !w.done)
    g_cond_wait (&w.cond, &w.lock);
  g_mutex_unlock (&w.lock);
  g_mutex_clear (&w.lock);
  g_cond_clear (&w.cond);
  return st;
}

SedpStatus
sedp_pipeline_submit (SedpPipeline *p, SedpRequest *r, SedpRequestDone done, gpointer user_data)
{
  g_return_val_if_fail (p != NULL && r != NULL, SEDP_STATUS_CANCELLED);
  g_return_val_if_fail (r->pipeline == NULL && !r->done, SEDP_STATUS_CANCELLED);
  if (!g_atomic_int_get (&p->accepting))
    return SEDP_STATUS_CANCELLED;
  gboolean auto_deadline = r->deadline == 0;
  sedp_request_ref (r); /* the pipeline's, dropped at completion */
  sedp_request_begin (r, p, done, user_data);
  sedp_latency_window_observe (p->recent_arrivals, 0, r->submitted_at);
  g_mutex_lock (&p->lock);
  g_atomic_int_inc ((gint *) &p->inflight);
  g_mutex_unlock (&p->lock);
  sedp_deadline_queue_add (p->deadlines, r);

  SedpFrame *rf = r->request_frame ? sedp_frame_ref (r->request_frame) : sedp_frame_new (1);
  SedpEvent *ev = sedp_event_new (r, SEDP_FRAME_INDEX_REQUEST, rf);
  SedpChannel *entry = p->mode == SEDP_MODE_STAGED ? p->stages[p->graph->source].channel : p->entry;
  if (!sedp_channel_try_push (entry, ev)) {
    sedp_event_free (ev);
    sedp_counter_add (p->m_overloaded, 1);
    unbegin (p, r, auto_deadline);
    return g_atomic_int_get (&p->accepting) ? SEDP_STATUS_OVERLOADED : SEDP_STATUS_CANCELLED;
  }
  return SEDP_STATUS_OK;
}

void
sedp_pipeline_stop (SedpPipeline *p)
{
  g_return_if_fail (p != NULL);
  if (!p->started || p->stopped)
    return;
  g_atomic_int_set (&p->accepting, 0);
  g_mutex_lock (&p->lock);
  while (p->inflight > 0)
    g_cond_wait (&p->drained, &p->lock);
  g_mutex_unlock (&p->lock);
  if (p->mode == SEDP_MODE_STAGED) {
    for (guint i = 0; i < p->n_stages; i++)
      sedp_channel_close (p->stages[i].channel);
    for (guint i = 0; i < p->n_stages; i++)
      for (guint w = 0; w < p->stages[i].n_threads; w++)
        g_thread_join (p->stages[i].threads[w]);
  } else {
    sedp_channel_close (p->entry);
    for (guint w = 0; w < p->n_sync_threads; w++)
      g_thread_join (p->sync_threads[w]);
  }
  sedp_deadline_queue_free (p->deadlines);
  p->deadlines = NULL;
  p->stopped = TRUE;
}

void
sedp_pipeline_free (SedpPipeline *p)
{
  if (p == NULL)
    return;
  sedp_pipeline_stop (p);
  destroy_instances (p);
  for (guint i = 0; i < p->n_stages; i++) {
    Stage *s = &p->stages[i];
    sedp_channel_free (s->channel);
    g_free (s->threads);
    g_free (s->tids);
    g_free (s->slot_is_item);
    g_free (s->slot_pos);
    for (guint k = 0; s->drop && s->drop[k]; k++)
      g_pattern_spec_free (s->drop[k]);
    g_free (s->drop);
    g_free (s->ctx.name);
    sedp_load_clear_stage (s);
    sedp_route_clear_stage (s);
  }
  sedp_channel_free (p->entry);
  g_free (p->sync_threads);
  g_free (p->sync_tids);
  g_free (p->stages);
  sedp_metrics_free (p->metrics);
  sedp_latency_window_free (p->recent_latency);
  sedp_latency_window_free (p->recent_arrivals);
  sedp_latency_window_free (p->recent_items);
  sedp_graph_free (p->graph);
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->drained);
  g_free (p);
}

const SedpGraph *
sedp_pipeline_get_graph (SedpPipeline *p)
{
  return p->graph;
}

SedpMetrics *
sedp_pipeline_get_metrics (SedpPipeline *p)
{
  return p->metrics;
}

guint
sedp_pipeline_get_inflight (SedpPipeline *p)
{
  g_mutex_lock (&p->lock);
  guint n = p->inflight;
  g_mutex_unlock (&p->lock);
  return n;
}

guint
sedp_pipeline_get_n_threads (SedpPipeline *p)
{
  if (p->mode == SEDP_MODE_SYNC)
    return p->n_sync_threads;
  guint n = 0;
  for (guint i = 0; i < p->n_stages; i++)
    n += p->stages[i].node->spec->parallelism;
  return n;
}

void
sedp_pipeline_collect_stats (SedpPipeline *p, GString *out)
{
  for (guint i = 0; i < p->n_stages; i++) {
    Stage *s = &p->stages[i];
    if (s->desc->stats && s->instance) {
      SedpStats *st = sedp_stats_new (s->ctx.name, out);
      s->desc->stats (s->instance, st);
      sedp_stats_free (st);
    }
  }
}
