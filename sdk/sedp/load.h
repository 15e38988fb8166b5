/* sedp — load signals: how busy the pipeline is, as a stage sees it (since stage ABI 1.1). */
#pragma once

#include <sedp/stage.h>

G_BEGIN_DECLS

/**
 * SedpLoadSnapshot:
 * @requests_in_flight: requests submitted to the pipeline and not yet completed
 * @items_in_flight: the candidate items of those requests not finished yet: cut by the source,
 *   and neither scored, answered early, shed, dropped nor failed
 * @arrival_rate: requests submitted per second over the window
 * @latency_p50_us: median latency of the requests completed in the window, from each one's
 *   start (for `sedp serve`, the connection's accept) to its completion; 0 when none completed
 * @latency_p99_us: their 99th percentile, likewise
 * @latency_count: the number of requests completed in the window
 * @downstream_p99_us: the time an event spends in the stages after the caller, estimated as
 *   the longest path through them of each stage's 99th percentile of residence (from entering
 *   its queue to leaving its `process`) over the last 0.5 s, a quarter of the window, so that it
 *   follows the queues closely; 0 for a sink or when nothing passed in that time
 * @downstream_queued: events waiting in the channels of every stage after the caller
 * @downstream_capacity: those channels' capacity (0 in sync mode: there are no channels)
 * @entry_queued: requests waiting in the pipeline's entry (the source stage's channel, or the
 *   sync mode's queue)
 * @entry_capacity: its capacity; a full entry refuses submissions (503 in `sedp serve`)
 * @window_s: the span of the window the rates and percentiles are taken over, in seconds
 * @item_rate: items finished scored (or answered early) per second over the window: the work
 *   the pipeline does; with @items_in_flight, Little's law gives the time the work in flight
 *   needs (`items_in_flight / item_rate` seconds)
 * @downstream_item_capacity: the items per second the stages after the caller can process, as if
 *   they shared one core: 1 over the sum, over the item-scope stages among them, of the
 *   `process` time one row costs each (over its workers), in the window. A service rate, not
 *   the throughput (which is only the demand when the pipeline is not busy), and a lower bound
 *   when the stages run on several cores; 0 when none of them processed anything
 * @reserved: zero; room for fields of later minor ABI versions
 *
 * The pipeline's load, read by sedp_stage_context_read_load(). Percentiles are the upper bound
 * of a log-linear bucket (exact to 12.5 %). The figures are read one after another without a
 * lock, so they are not a consistent cut across stages: what a control signal needs, not an
 * audit. The same figures are the `sedp_queue_depth`, `sedp_queue_capacity`,
 * `sedp_requests_in_flight`, `sedp_items_in_flight`, `sedp_recent_arrival_rate` and
 * `sedp_recent_latency_p{50,99}_us` gauges of `/metrics`.
 */
typedef struct {
  guint requests_in_flight;
  guint items_in_flight;
  double arrival_rate;
  double latency_p50_us;
  double latency_p99_us;
  guint64 latency_count;
  double downstream_p99_us;
  guint downstream_queued;
  guint downstream_capacity;
  guint entry_queued;
  guint entry_capacity;
  double window_s;
  double item_rate;
  double downstream_item_capacity;
  double reserved[6];
} SedpLoadSnapshot;

/**
 * sedp_stage_context_read_load:
 * @ctx: the calling stage's context
 * @out: (out caller-allocates): the snapshot
 *
 * Reads the pipeline's current load, with the downstream figures relative to the stage of
 * @ctx. Cheap enough for every request: the window sums behind the percentiles are computed at
 * most once per millisecond per stage and shared; the rest are atomic reads. Takes no lock.
 *
 * Thread-safety: callable from any worker of the stage, from `process`, concurrently. Not from
 * `create` or `destroy` (the pipeline is not running then: the snapshot is all zeros).
 */
SEDP_API void sedp_stage_context_read_load (SedpStageContext *ctx, SedpLoadSnapshot *out);

/**
 * SedpStageLoad:
 * @queued: events waiting in the stage's channel (0 in sync mode)
 * @capacity: the channel's capacity (0 in sync mode)
 * @residence_p50_us: median time of an event from entering the stage's queue to leaving its
 *   `process`, over the window; 0 when nothing passed
 * @residence_p99_us: its 99th percentile
 * @events: the events that left `process` in the window
 * @reserved: zero; room for later fields
 *
 * One stage's load, read by sedp_stage_context_read_stage_load().
 */
typedef struct {
  guint queued;
  guint capacity;
  double residence_p50_us;
  double residence_p99_us;
  guint64 events;
  double reserved[4];
} SedpStageLoad;

/**
 * sedp_stage_context_read_stage_load:
 * @ctx: the calling stage's context
 * @stage: the name of a stage of the same pipeline (the caller's own included)
 * @out: (out caller-allocates): its load
 *
 * Reads one stage's queue and residence times. Not cached: it sums the stage's window (a few
 * microseconds); a stage that reads it per request should read it once per batch.
 * Thread-safety: as sedp_stage_context_read_load().
 *
 * Returns: %FALSE (and @out zeroed) when the pipeline has no stage named @stage.
 */
SEDP_API gboolean sedp_stage_context_read_stage_load (SedpStageContext *ctx, const char *stage,
                                                      SedpStageLoad *out);

G_END_DECLS
