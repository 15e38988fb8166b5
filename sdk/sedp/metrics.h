/* sedp — counters and histograms a stage publishes. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpCounter:
 * A monotonically growing 64-bit count, owned by the runtime and valid as long as the stage
 * instance that registered it. Updates are atomic and lock-free.
 */
typedef struct _SedpCounter SedpCounter;

/**
 * SedpHistogram:
 * A distribution of observed values over fixed bucket bounds (Prometheus style: cumulative
 * buckets, a sum and a count), owned by the runtime. Updates are atomic and lock-free.
 */
typedef struct _SedpHistogram SedpHistogram;

/**
 * SedpStats:
 * The collector a stage's `stats` callback reports instantaneous values to.
 */
typedef struct _SedpStats SedpStats;

/** sedp_counter_add: Adds @value to @counter. Thread-safe; @counter may be %NULL (no-op). */
SEDP_API void sedp_counter_add (SedpCounter *counter, guint64 value);

/** sedp_counter_get: Returns: the current value of @counter. Thread-safe. */
SEDP_API guint64 sedp_counter_get (const SedpCounter *counter);

/**
 * sedp_histogram_observe:
 * Records @value in @histogram. Thread-safe; @histogram may be %NULL (no-op).
 */
SEDP_API void sedp_histogram_observe (SedpHistogram *histogram, double value);

/** sedp_histogram_get_count: Returns: how many values were observed. Thread-safe. */
SEDP_API guint64 sedp_histogram_get_count (const SedpHistogram *histogram);

/**
 * sedp_stats_add:
 * @name: a metric name made of [a-z0-9_], optionally followed by labels in Prometheus' form
 *   (`ab_router_weight{arm="control"}`, values without spaces); a name ending in `_total` is
 *   exported as a counter, any other as a gauge (docs/observability.md)
 * @value: its current value
 *
 * Reports one gauge from a `stats` callback.
 */
SEDP_API void sedp_stats_add (SedpStats *stats, const char *name, double value);

G_END_DECLS
