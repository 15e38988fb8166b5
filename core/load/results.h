/* sedp — what a run of the load generator measured: counts, failures by kind, the answers'
 * statuses and the latencies of the requests answered OK (docs/load-testing.md). */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpLoadgenMode:
 * @SEDP_LOADGEN_CLOSED: closed loop: a fixed number of clients, each sending its next request
 *   once the previous one is answered; latency counts from the send.
 * @SEDP_LOADGEN_OPEN: open loop: requests due at Poisson arrivals of a fixed rate, whatever the
 *   answers; latency counts from the time a request was due (its scheduled send), so that a
 *   generator or target that falls behind shows in the latency (no coordinated omission).
 */
typedef enum {
  SEDP_LOADGEN_CLOSED,
  SEDP_LOADGEN_OPEN,
} SedpLoadgenMode;

/**
 * SedpLoadgenFailure:
 * @SEDP_LOADGEN_FAILURE_TRANSPORT: HTTP: no answer (connection refused or reset, timeout).
 * @SEDP_LOADGEN_FAILURE_HTTP: HTTP: an answer other than 200 and 503 (400, 404, 504, …).
 * @SEDP_LOADGEN_FAILURE_REFUSED: refused at entry: HTTP 503; in process, the submission answered
 *   OVERLOADED (the source stage's queue is full) or CANCELLED (the pipeline is stopping).
 * @SEDP_LOADGEN_FAILURE_NOT_OK: answered, but not OK: HTTP 200 whose PredictResponse status is
 *   not OK; in process, a result other than OK (PARTIAL, FAILED, TIMEOUT).
 * @SEDP_LOADGEN_FAILURE_UNSENT: open loop: not sent at all, as max_in_flight requests were
 *   already in flight when it was due.
 * @SEDP_LOADGEN_N_FAILURES: the number of kinds.
 *
 * Why a request did not count as answered OK; each failed request has exactly one kind.
 */
typedef enum {
  SEDP_LOADGEN_FAILURE_TRANSPORT,
  SEDP_LOADGEN_FAILURE_HTTP,
  SEDP_LOADGEN_FAILURE_REFUSED,
  SEDP_LOADGEN_FAILURE_NOT_OK,
  SEDP_LOADGEN_FAILURE_UNSENT,
  SEDP_LOADGEN_N_FAILURES,
} SedpLoadgenFailure;

/* "transport", "http", "refused", "not_ok", "unsent" (the RESULT keys' suffixes). */
SEDP_API const char *sedp_loadgen_failure_to_string (SedpLoadgenFailure kind);

/**
 * SedpLoadgenCounts:
 * @mode: the run's mode
 * @rate: open loop: the mean arrival rate asked for, per second; closed loop: 0
 * @concurrency: closed loop: the clients; open loop: 0
 * @duration_s: the seconds during which requests were sent (the configured duration)
 * @wall_s: the seconds from the start to the last answer (the duration plus the drain)
 * @arrivals: requests due: every request sent or counted unsent
 * @sent: requests that left the generator (HTTP sent, or submitted in process, refused or not)
 * @ok: requests answered OK (HTTP 200 with status OK; in process, status OK)
 * @items: the candidate items of the requests answered OK
 * @late_sends: requests sent more than 1 ms after they were due (open loop)
 * @failures: the failed requests, by #SedpLoadgenFailure
 *
 * The raw counts of a run; every request due is either @ok or one failure
 * (@arrivals = @ok + the sum of @failures).
 */
typedef struct {
  SedpLoadgenMode mode;
  double rate;
  guint concurrency;
  double duration_s;
  double wall_s;
  guint64 arrivals;
  guint64 sent;
  guint64 ok;
  guint64 items;
  guint64 late_sends;
  guint64 failures[SEDP_LOADGEN_N_FAILURES];
} SedpLoadgenCounts;

/**
 * SedpLoadgenResults:
 * What one run measured. Immutable once sedp_loadgen_run() returned it: it may then be read from
 * any thread. Free with sedp_loadgen_results_free().
 */
typedef struct _SedpLoadgenResults SedpLoadgenResults;

SEDP_API void sedp_loadgen_results_free (SedpLoadgenResults *results);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpLoadgenResults, sedp_loadgen_results_free)

/* The raw counts. Returns: (transfer none). */
SEDP_API const SedpLoadgenCounts *sedp_loadgen_results_get_counts (const SedpLoadgenResults *results);

/* The failed requests: the sum of the counts' failures. */
SEDP_API guint64 sedp_loadgen_results_get_errors (const SedpLoadgenResults *results);

/* ok / wall_s and items / wall_s: what was answered OK per second of the whole run. */
SEDP_API double sedp_loadgen_results_get_requests_per_s (const SedpLoadgenResults *results);
SEDP_API double sedp_loadgen_results_get_items_per_s (const SedpLoadgenResults *results);

/* sent / duration_s: the rate at which requests actually left the generator. */
SEDP_API double sedp_loadgen_results_get_offered_rps (const SedpLoadgenResults *results);

/* ok / arrivals (0 when nothing was due), and errors / arrivals. */
SEDP_API double sedp_loadgen_results_get_answered_share (const SedpLoadgenResults *results);
SEDP_API double sedp_loadgen_results_get_error_share (const SedpLoadgenResults *results);

/**
 * sedp_loadgen_results_get_latency_ms:
 * @q: the quantile, 0 to 1 (0.99: p99)
 *
 * Returns: the latency at @q of the requests answered OK, in milliseconds, nearest rank; 0 when
 * none was. Closed loop: from the send to the complete answer; open loop: from the time the
 * request was due.
 */
SEDP_API double sedp_loadgen_results_get_latency_ms (const SedpLoadgenResults *results, double q);

/* The latencies of the requests answered OK, in microseconds, ascending; *@n gets how many.
 * Returns: (transfer none). */
SEDP_API const gint64 *sedp_loadgen_results_get_latencies_us (const SedpLoadgenResults *results,
                                                              guint *n);

/**
 * sedp_loadgen_results_get_n_statuses:
 *
 * The answers by status, in ascending order of name: HTTP: the status code ("200", "503");
 * in process: sedp_status_to_string() of the result's status, or of the submission's refusal
 * ("ok", "overloaded", "timeout"). Requests without an answer (transport failures, unsent) have
 * none. Returns: the number of distinct statuses.
 */
SEDP_API guint sedp_loadgen_results_get_n_statuses (const SedpLoadgenResults *results);

/* Status @i (below get_n_statuses()): its name (transfer none), and in *@count its answers. */
SEDP_API const char *sedp_loadgen_results_get_status (const SedpLoadgenResults *results, guint i,
                                                      guint64 *count);

/* The count of answers of status @name (0 when none). */
SEDP_API guint64 sedp_loadgen_results_get_status_count (const SedpLoadgenResults *results,
                                                        const char *name);

/* (nullable) The first failure's description ("HTTP 404: …", "timeout: …"). Transfer none. */
SEDP_API const char *sedp_loadgen_results_get_first_error (const SedpLoadgenResults *results);

G_END_DECLS
