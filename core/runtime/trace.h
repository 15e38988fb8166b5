/* sedp — a trace of sampled requests in Chrome's Trace Event Format (docs/observability.md). */
#pragma once

#include <sedp/sedp.h>

/**
 * SedpTrace:
 * Records, for one request in every N submitted, each stage's queue wait (from the event's
 * enqueue to a worker taking it) and process call, on lanes named after the stage workers; and
 * writes them as a JSON trace (`{"traceEvents": [...], "displayTimeUnit": "ms"}`, complete
 * events `ph: "X"` in microseconds, `ph: "M"` thread names) that Perfetto and Chromium's
 * chrome://tracing open. Recording takes a lock, for sampled requests only; the buffer holds
 * at most max_events events, the later ones are counted as dropped. The runtime looks at a
 * pipeline's trace once per batch (one branch) when it is off.
 */
typedef struct _SedpTrace SedpTrace;

/* The default bound on the events buffered (about 64 MiB). */
#define SEDP_TRACE_DEFAULT_MAX_EVENTS 1000000

/* A trace to be written to @path, sampling one request in @sample_every (≥ 1), buffering at
 * most @max_events events (≥ 1). Nothing is opened until sedp_trace_write(). */
SEDP_API SedpTrace *sedp_trace_new (const char *path, guint sample_every, guint max_events);

/* Frees @trace (NULL: nothing); the pipelines recording into it must be stopped. */
SEDP_API void sedp_trace_free (SedpTrace *trace);

/* Sets the trace the pipelines created from now on record into (NULL: none). Not thread-safe
 * with sedp_pipeline_new(): call it before creating pipelines; @trace must outlive them. */
SEDP_API void sedp_trace_set_default (SedpTrace *trace);

/* The trace set by sedp_trace_set_default(), or NULL. */
SEDP_API SedpTrace *sedp_trace_get_default (void);

/* Whether the next submitted request is sampled (the first, then one in every N). Thread-safe. */
SEDP_API gboolean sedp_trace_sample (SedpTrace *trace);

/* Writes the events recorded so far, sorted by time, to the trace's path. Call once the
 * pipelines stopped (events recorded meanwhile may be missing). An I/O failure is a GError
 * naming the file. */
SEDP_API gboolean sedp_trace_write (SedpTrace *trace, GError **error);

/* Events buffered, events dropped beyond the bound, requests sampled. Thread-safe. */
SEDP_API guint64 sedp_trace_get_n_events (SedpTrace *trace);
SEDP_API guint64 sedp_trace_get_dropped (SedpTrace *trace);
SEDP_API guint64 sedp_trace_get_n_sampled (SedpTrace *trace);

/* The file the trace is written to (owned by @trace). */
SEDP_API const char *sedp_trace_get_path (SedpTrace *trace);

/* One process call of a stage worker, as the runtime saw it (core/runtime/pipeline.c). */
typedef struct {
  const char *pipeline;
  const char *stage;       /* "sync" lanes are named after the sync worker, args after @stage */
  guint worker;
  gboolean sync;           /* a sync-mode worker: its lane is "PIPELINE/sync #W" */
  gint tid;                /* the worker's kernel thread id */
  gint64 picked;           /* when the worker took the batch */
  gint64 t0, t1;           /* the process call */
} SedpTraceBatch;

/* Records the queue wait and process call of every sampled request's event in @events (@n of
 * them) of one batch. Thread-safe (takes the trace's lock when one is sampled). */
void sedp_trace_record_batch (SedpTrace *trace, const SedpTraceBatch *batch, SedpEvent **events,
                              guint n);
