/* sedp — filling a SedpLoadgenResults during a run (internal to core/load). Every function is
 * called from the run's own thread only. */
#pragma once

#include "results.h"

G_BEGIN_DECLS

/* New, empty results of a run of @mode at @rate (open) or @concurrency (closed) for @duration_s. */
SedpLoadgenResults *sedp_loadgen_results_new (SedpLoadgenMode mode, double rate, guint concurrency,
                                              double duration_s);

/* A request due (open loop: an arrival; closed loop: a send). */
void sedp_loadgen_results_count_arrival (SedpLoadgenResults *results);

/* A request left the generator, @late_us after it was due. */
void sedp_loadgen_results_count_sent (SedpLoadgenResults *results, gint64 late_us);

/* A request answered OK after @latency_us, with @n_items items and status @status. */
void sedp_loadgen_results_record_ok (SedpLoadgenResults *results, gint64 latency_us, guint n_items,
                                     const char *status);

/* A failed request of @kind; @status (nullable) its answer's status; @why the first error's
 * description, kept when it is the first failure. */
void sedp_loadgen_results_record_failure (SedpLoadgenResults *results, SedpLoadgenFailure kind,
                                          const char *status, const char *why);

/* The end of the run, @wall_s after its start: sorts the latencies. */
void sedp_loadgen_results_finish (SedpLoadgenResults *results, double wall_s);

G_END_DECLS
