/* sedp — the load signals a stage reads (sdk/sedp/load.h) and the gauges that export them.
 *
 * A snapshot sums sliding windows (window.c), which costs a few microseconds per window, so
 * each stage keeps the last one it computed in two buffers: a reader that finds it older than
 * SNAPSHOT_TTL_US and wins the `refreshing` flag computes the next into the other buffer and
 * publishes it; every other reader copies the published one. The counts in flight are read
 * fresh on every call. No lock anywhere: a reader preempted for over a millisecond in the middle
 * of its copy could see parts of two consecutive snapshots, which a control signal tolerates. */
#include "runtime-private.h"

#include <string.h>

#define SNAPSHOT_TTL_US 1000

struct _LoadCache {
  SedpLoadSnapshot snap[2];
  gint cur;              /* atomic: the published buffer */
  gint refreshing;       /* atomic: 1 while a reader computes the next one */
  gint64 at;             /* atomic (__atomic): when the published one was computed; 0: never */
};

static Stage *
stage_of (SedpStageContext *ctx)
{
  return (Stage *) (void *) ((char *) ctx - G_STRUCT_OFFSET (Stage, ctx));
}

static SedpChannel *
channel_of (const Stage *s)
{
  return __atomic_load_n (&s->channel, __ATOMIC_ACQUIRE);
}

guint
sedp_load_queued (const Stage *s)
{
  SedpChannel *ch = channel_of (s);
  return ch ? sedp_channel_length (ch) : 0;
}

guint
sedp_load_capacity (const Stage *s)
{
  return s->pipeline->mode == SEDP_MODE_STAGED ? s->node->spec->queue_capacity : 0;
}

static double
sedp_load_window_s (void)
{
  return SEDP_RECENT_SLICES * (SEDP_RECENT_SLICE_US / 1e6);
}

static double
sedp_load_arrival_rate (SedpPipeline *p, gint64 now)
{
  return (double) sedp_latency_window_count (p->recent_arrivals, now) / sedp_load_window_s ();
}

void
sedp_load_init_stage (SedpPipeline *p, Stage *s)
{
  s->residence = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  s->rows_done = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  s->busy_us = sedp_latency_window_new (SEDP_RECENT_SLICES, SEDP_RECENT_SLICE_US);
  s->load = g_new0 (LoadCache, 1);
  /* Which stages come after @s: in topological order, those with an input that is @s or after it. */
  s->downstream = g_new0 (guint8, p->n_stages);
  for (guint t = 0; t < p->n_stages; t++) {
    const SedpGraphNode *node = &p->graph->nodes[p->graph->topo[t]];
    for (guint k = 0; k < node->n_inputs; k++)
      if (node->inputs[k] == s->node->index || s->downstream[node->inputs[k]])
        s->downstream[node->index] = 1;
  }
}

void
sedp_load_clear_stage (Stage *s)
{
  sedp_latency_window_free (s->residence);
  sedp_latency_window_free (s->rows_done);
  sedp_latency_window_free (s->busy_us);
  g_free (s->load);
  g_free (s->downstream);
}

/* The seconds of `process` one row costs @d (over its workers), in the window; 0 when it
 * processed nothing. */
static double
stage_row_cost (Stage *d, gint64 now)
{
  guint64 rows = sedp_latency_window_count (d->rows_done, now);
  guint64 busy = sedp_latency_window_count (d->busy_us, now);
  return rows ? (double) busy / rows / 1e6 / d->ctx.parallelism : 0.0;
}

/* The longest path after @s, each stage weighed by its windowed p99 of residence; and the
 * queues of those stages. */
static void
read_downstream (Stage *s, gint64 now, SedpLoadSnapshot *o)
{
  SedpPipeline *p = s->pipeline;
  double cost = 0; /* seconds per item of the item stages after @s, added */
  double *path = g_newa (double, p->n_stages);
  for (guint t = p->n_stages; t-- > 0;) {
    guint n = p->graph->topo[t];
    path[n] = 0;
    if (!s->downstream[n])
      continue;
    Stage *d = &p->stages[n];
    double longest = 0;
    for (guint k = 0; k < d->node->n_outputs; k++)
      longest = MAX (longest, path[d->node->outputs[k]]);
    path[n] = sedp_latency_window_quantile_span (d->residence, 0.99, now, SEDP_FAST_SLICES, NULL) +
              longest;
    o->downstream_queued += sedp_load_queued (d);
    o->downstream_capacity += sedp_load_capacity (d);
    if (d->ctx.scope == SEDP_SCOPE_ITEM)
      cost += stage_row_cost (d, now);
  }
  for (guint k = 0; k < s->node->n_outputs; k++)
    o->downstream_p99_us = MAX (o->downstream_p99_us, path[s->node->outputs[k]]);
  o->downstream_item_capacity = cost > 0 ? 1.0 / cost : 0.0;
}

static void
compute (Stage *s, gint64 now, SedpLoadSnapshot *o)
{
  SedpPipeline *p = s->pipeline;
  memset (o, 0, sizeof *o);
  o->window_s = sedp_load_window_s ();
  o->arrival_rate = sedp_load_arrival_rate (p, now);
  o->item_rate = (double) sedp_latency_window_count (p->recent_items, now) / o->window_s;
  o->latency_p50_us = sedp_latency_window_quantile (p->recent_latency, 0.5, now, &o->latency_count);
  o->latency_p99_us = sedp_latency_window_quantile (p->recent_latency, 0.99, now, NULL);
  read_downstream (s, now, o);
}

void
sedp_stage_context_read_load (SedpStageContext *ctx, SedpLoadSnapshot *out)
{
  g_return_if_fail (ctx != NULL && out != NULL);
  Stage *s = stage_of (ctx);
  SedpPipeline *p = s->pipeline;
  memset (out, 0, sizeof *out);
  if (!p->started)
    return;
  LoadCache *c = s->load;
  gint64 now = g_get_monotonic_time ();
  if (now - __atomic_load_n (&c->at, __ATOMIC_ACQUIRE) >= SNAPSHOT_TTL_US &&
      g_atomic_int_compare_and_exchange (&c->refreshing, 0, 1)) {
    gint next = 1 - g_atomic_int_get (&c->cur);
    compute (s, now, &c->snap[next]);
    g_atomic_int_set (&c->cur, next);
    __atomic_store_n (&c->at, now, __ATOMIC_RELEASE);
    g_atomic_int_set (&c->refreshing, 0);
  }
  *out = c->snap[g_atomic_int_get (&c->cur)];
  out->requests_in_flight = (guint) g_atomic_int_get ((gint *) &p->inflight);
  out->items_in_flight = (guint) g_atomic_int_get (&p->items_inflight);
  Stage *entry = &p->stages[p->graph->source];
  out->entry_queued = p->mode == SEDP_MODE_STAGED ? sedp_load_queued (entry)
                                                  : (p->entry ? sedp_channel_length (p->entry) : 0);
  out->entry_capacity = p->mode == SEDP_MODE_STAGED ? sedp_load_capacity (entry)
                                                    : (p->entry ? sedp_channel_capacity (p->entry) : 0);
}

gboolean
sedp_stage_context_read_stage_load (SedpStageContext *ctx, const char *stage, SedpStageLoad *out)
{
  g_return_val_if_fail (ctx != NULL && stage != NULL && out != NULL, FALSE);
  SedpPipeline *p = stage_of (ctx)->pipeline;
  memset (out, 0, sizeof *out);
  for (guint i = 0; i < p->n_stages; i++) {
    Stage *d = &p->stages[i];
    if (strcmp (d->ctx.name, stage) != 0)
      continue;
    gint64 now = g_get_monotonic_time ();
    out->queued = sedp_load_queued (d);
    out->capacity = sedp_load_capacity (d);
    out->residence_p50_us = sedp_latency_window_quantile (d->residence, 0.5, now, &out->events);
    out->residence_p99_us = sedp_latency_window_quantile (d->residence, 0.99, now, NULL);
    return TRUE;
  }
  return FALSE;
}

/* ---- the gauges of /metrics ---- */

static double
read_queue_depth (gconstpointer data)
{
  return (double) sedp_load_queued (data);
}

static double
read_queue_capacity (gconstpointer data)
{
  return (double) sedp_load_capacity (data);
}

static double
read_stage_in_flight (gconstpointer data)
{
  return (double) g_atomic_int_get (&((Stage *) data)->processing);
}

static double
read_inflight (gconstpointer data)
{
  return (double) g_atomic_int_get ((gint *) &((SedpPipeline *) data)->inflight);
}

static double
read_items_inflight (gconstpointer data)
{
  return (double) g_atomic_int_get (&((SedpPipeline *) data)->items_inflight);
}

static double
read_recent_p50 (gconstpointer data)
{
  return sedp_latency_window_quantile (((SedpPipeline *) data)->recent_latency, 0.5,
                                       g_get_monotonic_time (), NULL);
}

static double
read_recent_p99 (gconstpointer data)
{
  return sedp_latency_window_quantile (((SedpPipeline *) data)->recent_latency, 0.99,
                                       g_get_monotonic_time (), NULL);
}

static double
read_arrival_rate (gconstpointer data)
{
  return sedp_load_arrival_rate ((SedpPipeline *) data, g_get_monotonic_time ());
}

/* The pipeline's gauges (requests and items in flight, the recent latency and arrival rate)
 * and each stage's queue depth and capacity. */
void
sedp_load_register_gauges (SedpPipeline *p)
{
  SedpMetrics *m = p->metrics;
  sedp_metrics_gauge (m, "pipeline", "requests_in_flight",
                      "Requests submitted and not yet completed", read_inflight, p);
  sedp_metrics_gauge (m, "pipeline", "items_in_flight",
                      "Candidate items of the requests in flight (once their source ran)",
                      read_items_inflight, p);
  sedp_metrics_gauge (m, "pipeline", "recent_latency_p50_us",
                      "Median latency of the requests completed in the last 2 s (seconds)",
                      read_recent_p50, p);
  sedp_metrics_gauge (m, "pipeline", "recent_latency_p99_us",
                      "99th percentile latency of the requests completed in the last 2 s "
                      "(seconds)", read_recent_p99, p);
  sedp_metrics_gauge (m, "pipeline", "recent_arrival_rate",
                      "Requests submitted per second, over the last 2 s", read_arrival_rate, p);
  for (guint i = 0; i < p->n_stages; i++) {
    Stage *s = &p->stages[i];
    sedp_metrics_gauge (m, s->ctx.name, "queue_depth", "Events waiting in the stage's channel",
                        read_queue_depth, s);
    sedp_metrics_gauge (m, s->ctx.name, "queue_capacity",
                        "Capacity of the stage's channel (0 in sync mode: no channel)",
                        read_queue_capacity, s);
    sedp_metrics_gauge (m, s->ctx.name, "stage_in_flight",
                        "Events in the stage's process call now (over its workers)",
                        read_stage_in_flight, s);
  }
}
