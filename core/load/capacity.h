/* sedp — the capacity search: the highest open-loop rate whose p99 latency (from the scheduled
 * send) stays within an SLO and whose share of failed requests stays under a bound, found by
 * doubling or halving from an estimate, then bisecting (docs/load-testing.md). */
#pragma once

#include "loadgen.h"

G_BEGIN_DECLS

/* Called after each probe of the search, on the searching thread. */
typedef void (*SedpLoadgenProbeFunc) (guint probe, double rate, const SedpLoadgenResults *results,
                                      gboolean pass, gpointer user_data);

/* Called after each probe that met the SLO, on the searching thread: %NULL accepts it, a
 * message (newly allocated, freed by the search) fails it and says why. For what the results
 * do not show (sedp tune: answers the target degraded during the probe). */
typedef char *(*SedpLoadgenAcceptFunc) (const SedpLoadgenResults *results, gpointer user_data);

/**
 * SedpLoadgenSearch:
 * @slo_p99_ms: the p99 latency a rate must keep, in milliseconds, more than 0
 * @max_error_share: the share of failed requests (any #SedpLoadgenFailure) a rate must stay
 *   under, more than 0 and at most 1 (default 0.01)
 * @tolerance: the search stops once the highest passing rate and the lowest failing one are
 *   within this share of the failing one, from 0.001 to 0.5 (default 0.05)
 * @start_rate: the first rate probed; 0 (default): a closed-loop run first, at the probe
 *   config's concurrency for its duration, and its requests per second
 * @max_probes: the most open-loop probes, 1 to 1000 (default 30)
 * @probe: (nullable): called after each probe
 * @probe_data: @probe's user data
 * @accept: (nullable): a further condition on each probe that met the SLO and the error bound
 * @accept_data: @accept's user data
 *
 * How to search. Initialize with sedp_loadgen_search_init(); a plain struct the caller owns.
 */
typedef struct {
  double slo_p99_ms;
  double max_error_share;
  double tolerance;
  double start_rate;
  guint max_probes;
  SedpLoadgenProbeFunc probe;
  gpointer probe_data;
  SedpLoadgenAcceptFunc accept;
  gpointer accept_data;
} SedpLoadgenSearch;

/* The defaults above; @slo_p99_ms 0, to be set. */
SEDP_API void sedp_loadgen_search_init (SedpLoadgenSearch *search);

/* Returns: %FALSE with @error (%SEDP_LOADGEN_ERROR_CONFIG naming the field, its value and its
 * range) when a field is out of range. */
SEDP_API gboolean sedp_loadgen_search_check (const SedpLoadgenSearch *search, GError **error);

/**
 * SedpLoadgenCapacity:
 * @capacity_rps: the highest rate probed that passed; 0 when none did
 * @results: (nullable): the results of that probe (owned: sedp_loadgen_capacity_clear())
 * @lowest_failing_rps: the lowest rate probed that failed; 0 when none did (the search then
 *   stopped at max_probes while doubling)
 * @estimate_rps: the rate the search started from (the closed-loop estimate or start_rate)
 * @probes: the open-loop probes run
 *
 * What a search found. Zero-initialize it or let sedp_loadgen_find_capacity() fill it.
 */
typedef struct {
  double capacity_rps;
  SedpLoadgenResults *results;
  double lowest_failing_rps;
  double estimate_rps;
  guint probes;
} SedpLoadgenCapacity;

/* Frees @capacity's results and zeroes it. */
SEDP_API void sedp_loadgen_capacity_clear (SedpLoadgenCapacity *capacity);

/**
 * sedp_loadgen_find_capacity:
 * @config: each probe's configuration: its duration_s, max_in_flight and seed are used, and its
 *   concurrency for the closed-loop estimate; its mode and rate are set by the search
 * @out: (out caller-allocates): what was found; filled (and owned by the caller) also on failure
 *
 * A probe passes when its p99 of the requests answered OK is at most @search->slo_p99_ms, its
 * error share is under @search->max_error_share, and at least one request was answered OK.
 * From the estimate, the rate doubles while probes pass or halves while they fail until one of
 * each is found, then bisects between them until within the tolerance. Each probe blocks for
 * its duration (plus the drain): a search of N probes takes about N × duration_s.
 * Returns: %FALSE with @error: %SEDP_LOADGEN_ERROR_CONFIG, or %SEDP_LOADGEN_ERROR_NO_CAPACITY
 * when the estimate answered nothing OK or no probed rate passed (down to 1/1000 of the
 * estimate, or max_probes).
 */
SEDP_API gboolean sedp_loadgen_find_capacity (SedpLoadgen *gen, const SedpLoadgenConfig *config,
                                              const SedpLoadgenSearch *search,
                                              SedpLoadgenCapacity *out, GError **error);

G_END_DECLS
