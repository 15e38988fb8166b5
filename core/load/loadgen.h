/* sedp — the load generator: a workload sent to a served pipeline over HTTP or to a pipeline in
 * process, in a closed loop (fixed clients) or an open loop (Poisson arrivals at a fixed rate),
 * for a duration; measured into a SedpLoadgenResults. `sedp bench` is a command line over it;
 * docs/load-testing.md describes the measures. */
#pragma once

#include "../runtime/pipeline.h"
#include "error.h"
#include "results.h"
#include "workload.h"

G_BEGIN_DECLS

/** The most requests in flight an open loop allows by default (SedpLoadgenConfig.max_in_flight). */
#define SEDP_LOADGEN_DEFAULT_MAX_IN_FLIGHT 4096

/**
 * SedpLoadgenProgress:
 * @elapsed_s: seconds since the run started
 * @ok, @errors, @items: so far (see #SedpLoadgenCounts)
 * @in_flight: requests sent and not yet answered
 */
typedef struct {
  double elapsed_s;
  guint64 ok;
  guint64 errors;
  guint64 items;
  guint in_flight;
} SedpLoadgenProgress;

/* Called on the thread running sedp_loadgen_run(), about once a second. */
typedef void (*SedpLoadgenProgressFunc) (const SedpLoadgenProgress *progress, gpointer user_data);

/**
 * SedpLoadgenResponseFunc:
 * @index: the request's index in the workload
 * @status: the HTTP status, 0 when no answer came
 * @body: (nullable): the answer's body (borrowed for the call)
 * @latency_us: from the request's scheduled send (open loop) or its send (closed loop)
 *
 * Called for every HTTP request that completed, after it was counted, on the thread running
 * sedp_loadgen_run(): for a caller that checks answers (the shed benchmark reads each
 * response's top K). Not called in process.
 */
typedef void (*SedpLoadgenResponseFunc) (guint index, guint status, GBytes *body,
                                         gint64 latency_us, gpointer user_data);

/**
 * SedpLoadgenConfig:
 * @mode: closed or open loop
 * @concurrency: closed loop: the clients, each with one request in flight, 1 to 100 000
 * @rate: open loop: the mean arrival rate, requests per second, more than 0 and at most 1 000 000
 * @duration_s: seconds of sending, more than 0 and at most 86 400; requests still in flight at
 *   the end are waited for (HTTP: at most 60 s each) and counted
 * @max_in_flight: open loop: the most requests in flight, 1 to 1 000 000; a request due while
 *   that many are in flight is not sent and counts as %SEDP_LOADGEN_FAILURE_UNSENT. Over HTTP
 *   each request in flight may hold a connection (a file descriptor)
 * @seed: open loop: the seed of the arrival draws (the same seed, the same schedule)
 * @progress: (nullable): called about once a second during the run
 * @progress_data: @progress's user data
 * @http_timeout_s: HTTP: the seconds a request may take, from its send to its complete answer,
 *   before it fails as a transport error, 1 to 3600 (default 60): what bounds the drain after an
 *   overload
 * @on_response: (nullable): called with every HTTP answer
 * @response_data: @on_response's user data
 *
 * How to run. Initialize with sedp_loadgen_config_init() and set the fields that differ; the
 * fields of the other mode are ignored. A plain struct: the caller owns it.
 */
typedef struct {
  SedpLoadgenMode mode;
  guint concurrency;
  double rate;
  double duration_s;
  guint max_in_flight;
  guint64 seed;
  SedpLoadgenProgressFunc progress;
  gpointer progress_data;
  guint http_timeout_s;
  SedpLoadgenResponseFunc on_response;
  gpointer response_data;
} SedpLoadgenConfig;

/* The defaults: closed loop, 1 client, 10 s; rate 0 (to be set for the open loop), max_in_flight
 * SEDP_LOADGEN_DEFAULT_MAX_IN_FLIGHT, seed 1, HTTP timeout 60 s, no progress. */
SEDP_API void sedp_loadgen_config_init (SedpLoadgenConfig *config);

/* Returns: %FALSE with @error (%SEDP_LOADGEN_ERROR_CONFIG naming the field, its value and its
 * range) when a field of @config's mode is out of range. */
SEDP_API gboolean sedp_loadgen_config_check (const SedpLoadgenConfig *config, GError **error);

/**
 * SedpLoadgen:
 * A target and a workload, ready for runs. One run at a time per generator: sedp_loadgen_run()
 * blocks the calling thread (any thread) and drives its own GMainContext, pushed as that thread's
 * default for the run. Generators in different threads may run concurrently (in process, each
 * adds its load to the pipeline's).
 */
typedef struct _SedpLoadgen SedpLoadgen;

/**
 * sedp_loadgen_new_http:
 * @url: `http://HOST:PORT/v1/pipelines/NAME:predict` of a running `sedp serve`
 * @workload: the requests (a reference is taken)
 *
 * Requests are POSTed by the generator's own HTTP/1.1 client (non-blocking sockets, one
 * connection per request with `Connection: close`; the host is resolved once per run, its first
 * IPv4 address preferred). An unreachable or unresolvable server is not an error here: its
 * requests fail as %SEDP_LOADGEN_FAILURE_TRANSPORT.
 * Returns: (transfer full): the generator, or %NULL with @error (%SEDP_LOADGEN_ERROR_TARGET) when
 * @url is not an http:// URL with a host (https is not supported: `sedp serve` serves http).
 */
SEDP_API SedpLoadgen *sedp_loadgen_new_http (const char *url, SedpWorkload *workload,
                                             GError **error);

/**
 * sedp_loadgen_new_pipeline:
 * @pipeline: a started pipeline whose source stage decodes payloads (data_reader); borrowed: it
 *   must outlive the generator, and the caller stops and frees it
 * @workload: the requests (a reference is taken), attached as payloads with
 *   sedp_request_set_payload()
 *
 * Returns: (transfer full): the generator.
 */
SEDP_API SedpLoadgen *sedp_loadgen_new_pipeline (SedpPipeline *pipeline, SedpWorkload *workload);

/* Frees @gen (not during a run); NULL is ignored. */
SEDP_API void sedp_loadgen_free (SedpLoadgen *gen);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpLoadgen, sedp_loadgen_free)

/* (transfer none) The generator's workload. */
SEDP_API SedpWorkload *sedp_loadgen_get_workload (SedpLoadgen *gen);

/**
 * sedp_loadgen_run:
 *
 * Sends load as @config says, waits for every request in flight, and returns what was measured.
 * Blocks the calling thread for about @config->duration_s plus the drain. In process, a request
 * refused at submission counts as %SEDP_LOADGEN_FAILURE_REFUSED: a closed-loop client retries
 * after 1 ms, an open loop goes on with its schedule.
 * Returns: (transfer full): the results, or %NULL with @error: %SEDP_LOADGEN_ERROR_CONFIG (see
 * sedp_loadgen_config_check()) or %SEDP_LOADGEN_ERROR_SYSTEM (no timer for the open loop).
 */
SEDP_API SedpLoadgenResults *sedp_loadgen_run (SedpLoadgen *gen, const SedpLoadgenConfig *config,
                                               GError **error);

G_END_DECLS
