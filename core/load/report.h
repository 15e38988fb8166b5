/* sedp — a load generator run's results as `RESULT key=value` lines, the output of `sedp bench`
 * (the keys: docs/load-testing.md). */
#pragma once

#include "results.h"

G_BEGIN_DECLS

/**
 * sedp_loadgen_results_format:
 * @prefix: prepended to every key ("" or "step2_"); not %NULL
 * @out: where the lines are appended, each ending with a newline
 *
 * Both loops: requests_per_s, items_per_s, p50_ms p90_ms p99_ms p999_ms, errors, the errors by
 * kind (errors_transport … errors_unsent) and the answers by status (status_200=…, status_ok=…).
 * The open loop adds rate and duration_s (first), offered_rps, answered_share and late_sends.
 * Pure function of @results: thread-safe.
 */
SEDP_API void sedp_loadgen_results_format (const SedpLoadgenResults *results, const char *prefix,
                                           GString *out);

G_END_DECLS
