/* sedp — the runtime's host API: requests, results and running pipelines. */
#pragma once

#include "../graph/graph.h"
#include "metrics.h"

G_BEGIN_DECLS

/** SEDP_RUNTIME_ERROR: errors starting a pipeline. Codes are #SedpRuntimeError. */
#define SEDP_RUNTIME_ERROR (sedp_runtime_error_quark ())
SEDP_API GQuark sedp_runtime_error_quark (void);

typedef enum {
  SEDP_RUNTIME_ERROR_CREATE_FAILED,
  SEDP_RUNTIME_ERROR_THREAD,
} SedpRuntimeError;

/**
 * SedpStatus:
 * @SEDP_STATUS_OK: every item was scored or shed on purpose.
 * @SEDP_STATUS_PARTIAL: some items failed; the others were scored (see per-item status).
 * @SEDP_STATUS_FAILED: the request failed as a whole (a request-scope stage failed, or all items).
 * @SEDP_STATUS_TIMEOUT: the deadline passed first; items finished by then are in the result.
 * @SEDP_STATUS_OVERLOADED: refused at entry: the source stage's channel is full.
 * @SEDP_STATUS_CANCELLED: refused at entry: the pipeline is stopping.
 */
typedef enum {
  SEDP_STATUS_OK = 0,
  SEDP_STATUS_PARTIAL,
  SEDP_STATUS_FAILED,
  SEDP_STATUS_TIMEOUT,
  SEDP_STATUS_OVERLOADED,
  SEDP_STATUS_CANCELLED,
} SedpStatus;

/** SedpItemStatus: what became of one candidate item. PENDING items were not finished (timeout);
 * CACHED items were answered early by a stage (sedp_frame_answer_row()); SHED items were shed by
 * a load shedder (sedp_frame_shed_row()). */
typedef enum {
  SEDP_ITEM_PENDING = 0,
  SEDP_ITEM_SCORED,
  SEDP_ITEM_DROPPED,
  SEDP_ITEM_FAILED,
  SEDP_ITEM_CACHED,
  SEDP_ITEM_SHED,
} SedpItemStatus;

SEDP_API const char *sedp_status_to_string (SedpStatus status);
SEDP_API const char *sedp_item_status_to_string (SedpItemStatus status);

/**
 * sedp_request_new:
 * @id: the request's id (copied)
 * @deadline: absolute deadline on g_get_monotonic_time()'s clock, or 0 for the pipeline's
 *   deadline_ms from submission
 *
 * Returns: (transfer full): a new request without frames.
 */
SEDP_API SedpRequest *sedp_request_new (const char *id, gint64 deadline);

/**
 * sedp_request_set_timeout:
 * @timeout_us: the time the request may take from its submission, in microseconds; 0 for the
 *   pipeline's deadline_ms
 *
 * Sets a deadline relative to the request's start (sedp_request_set_start(), else submission;
 * replaces an absolute one given to sedp_request_new()).
 */
SEDP_API void sedp_request_set_timeout (SedpRequest *request, gint64 timeout_us);

/**
 * sedp_request_set_start:
 * @start_us: when the request arrived, on g_get_monotonic_time()'s clock (0: at submission)
 *
 * Starts the request's clock before its submission: a relative deadline (set_timeout() or the
 * pipeline's deadline_ms) and the result's latency count from @start_us, so that the time a
 * front end held the request (accepting the connection, reading the body) is counted. A start
 * after the submission is taken as the submission. Call it before sedp_pipeline_submit().
 */
SEDP_API void sedp_request_set_start (SedpRequest *request, gint64 start_us);

/**
 * sedp_request_set_frames:
 * @request_frame: (transfer full) (nullable): the request-scope data (one row), or %NULL for an
 *   empty one
 * @items: (transfer full) (nullable): one row per candidate item, or %NULL when the source stage
 *   decodes the items from the payload
 */
SEDP_API void sedp_request_set_frames (SedpRequest *request, SedpFrame *request_frame,
                                       SedpFrame *items);

/** sedp_request_set_payload: Attaches raw bytes (referenced) for a decoding source stage. */
SEDP_API void sedp_request_set_payload (SedpRequest *request, GBytes *payload,
                                        const char *content_type);

SEDP_API SedpRequest *sedp_request_ref (SedpRequest *request);
SEDP_API void sedp_request_unref (SedpRequest *request);

/** SedpResult: the outcome of a completed request; owned by the request. */
typedef struct _SedpResult SedpResult;

/* The result, once the completion callback ran (NULL before). */
SEDP_API const SedpResult *sedp_request_get_result (SedpRequest *request);

SEDP_API SedpStatus sedp_result_get_status (const SedpResult *result);
/* (nullable) A message naming the stage, for statuses other than OK. */
SEDP_API const char *sedp_result_get_message (const SedpResult *result);
/* (nullable) Why a FAILED request failed, when a stage failed its request-scope event with a
 * GError (sedp_event_fail()): a copy of that error, its domain and code kept and its message
 * "stage 'NAME': …" (= the result's message). A server maps it to a status by domain and code
 * (SEDP_PROTOCOL_ERROR: the client's fault, 4xx), never by its text. NULL for other outcomes. */
SEDP_API const GError *sedp_result_get_error (const SedpResult *result);
SEDP_API guint sedp_result_get_n_items (const SedpResult *result);
SEDP_API SedpItemStatus sedp_result_get_item_status (const SedpResult *result, guint item);
SEDP_API const char *sedp_result_get_item_message (const SedpResult *result, guint item);
/* The number of items shed by a load shedder (status SHED). */
SEDP_API guint sedp_result_get_n_shed (const SedpResult *result);
/* Where item @item ended in a sink frame: the frame (borrowed) and *@row; NULL if nowhere. */
SEDP_API const SedpFrame *sedp_result_get_item_frame (const SedpResult *result, guint item,
                                                      guint *row);
/* The request-scope frame a request-scope sink produced (borrowed), or NULL. */
SEDP_API const SedpFrame *sedp_result_get_request_frame (const SedpResult *result);
/* The branches the request took at request-scope routers, as "STAGE:BRANCH" in the order it
 * took them (docs/routing.md); a NULL-terminated array owned by the result, empty without any. */
SEDP_API const char *const *sedp_result_get_routes (const SedpResult *result);
/* Microseconds from the request's start (sedp_request_set_start(), else submission) to completion. */
SEDP_API gint64 sedp_result_get_latency_us (const SedpResult *result);

/**
 * SedpRequestDone:
 * Called exactly once per accepted request, from a runtime thread, when it completed (any
 * status). Keep it short: it runs on a stage worker or the deadline thread.
 */
typedef void (*SedpRequestDone) (SedpRequest *request, gpointer user_data);

/**
 * SedpPipeline:
 * A running pipeline: one plugin instance per stage, their channels and worker threads (staged
 * mode), or a pool of run-to-completion threads (sync mode).
 */
typedef struct _SedpPipeline SedpPipeline;

/* Creates the plugin instances (create failures name the stage). Takes ownership of @graph. */
SEDP_API SedpPipeline *sedp_pipeline_new (SedpGraph *graph, GError **error);

/* Starts the worker threads. */
SEDP_API gboolean sedp_pipeline_start (SedpPipeline *pipeline, GError **error);

/**
 * sedp_pipeline_submit:
 * @request: the request (a reference is taken)
 *
 * Returns: %SEDP_STATUS_OK when accepted (@done will be called once); OVERLOADED or CANCELLED
 * when refused (@done is not called).
 */
SEDP_API SedpStatus sedp_pipeline_submit (SedpPipeline *pipeline, SedpRequest *request,
                                          SedpRequestDone done, gpointer user_data);

/**
 * sedp_pipeline_run:
 * @request: the request (a reference is taken)
 *
 * sedp_pipeline_submit() and a wait for the request's completion, for a caller that has a
 * thread to block (never a stage's worker of @pipeline: it would wait for itself). Returns
 * %SEDP_STATUS_OK once the request completed (its result is in @request), or the refusal.
 */
SEDP_API SedpStatus sedp_pipeline_run (SedpPipeline *pipeline, SedpRequest *request);

/**
 * sedp_pipeline_set_idle:
 * @idle: %TRUE: SCHED_IDLE (they run only on CPU time nothing else wants); %FALSE: SCHED_OTHER
 *
 * Sets the scheduling policy of every thread of the started @pipeline, its workers and its
 * deadline timer, waiting up to 1 s for each to have started. Threads started by a thread running at SCHED_IDLE inherit it: a
 * server warms up a new version that way, beside the one serving, then moves it back (hot
 * reload, docs/model-lifecycle.md). Leaving SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE of
 * 20; FALSE with a G_IO_ERROR naming the thread and the reason when the system refuses, some
 * threads possibly moved. Any thread.
 */
SEDP_API gboolean sedp_pipeline_set_idle (SedpPipeline *pipeline, gboolean idle, GError **error);

/* Refuses new requests, waits until every accepted one completed, stops the threads. */
SEDP_API void sedp_pipeline_stop (SedpPipeline *pipeline);

/* Stops (if needed) and destroys the plugin instances. */
SEDP_API void sedp_pipeline_free (SedpPipeline *pipeline);

SEDP_API const SedpGraph *sedp_pipeline_get_graph (SedpPipeline *pipeline);
SEDP_API SedpMetrics *sedp_pipeline_get_metrics (SedpPipeline *pipeline);
/* Requests accepted and not yet completed. */
SEDP_API guint sedp_pipeline_get_inflight (SedpPipeline *pipeline);
/* Total worker threads (staged: sum of parallelism; sync: the pool size). */
SEDP_API guint sedp_pipeline_get_n_threads (SedpPipeline *pipeline);
/* Appends every stage's stats callback output ("stage key value" lines). */
SEDP_API void sedp_pipeline_collect_stats (SedpPipeline *pipeline, GString *out);

G_END_DECLS
