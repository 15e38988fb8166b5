/* sedp — the metric registry behind SedpCounter and SedpHistogram. */
#pragma once

#include <sedp/sedp.h>

/**
 * SedpMetrics:
 * All counters and histograms of one pipeline, for the status endpoints and `sedp run` summaries.
 * Registration takes a lock; updates are lock-free atomics.
 */
typedef struct _SedpMetrics SedpMetrics;

SEDP_API SedpMetrics *sedp_metrics_new (void);
SEDP_API void sedp_metrics_free (SedpMetrics *metrics);

/* Registers (or returns the existing) counter @stage:@name. */
SEDP_API SedpCounter *sedp_metrics_counter (SedpMetrics *metrics, const char *stage, const char *name,
                                   const char *help);

/* As sedp_metrics_counter(); with @degraded the counter counts answers given with stand-ins
 * (sedp_stage_context_add_degraded_counter) and is summed by sedp_metrics_get_degraded(). The
 * first registration of @stage:@name decides. */
SEDP_API SedpCounter *sedp_metrics_degraded_counter (SedpMetrics *metrics, const char *stage,
                                                     const char *name, const char *help,
                                                     gboolean degraded);

/* The sum of the degraded counters (above) of every stage, read now. Thread-safe. */
SEDP_API guint64 sedp_metrics_get_degraded (SedpMetrics *metrics);

/* Registers (or returns the existing) histogram @stage:@name with the given bounds. */
SEDP_API SedpHistogram *sedp_metrics_histogram (SedpMetrics *metrics, const char *stage, const char *name,
                                       const char *help, const double *bounds, guint n_bounds);

/* What a gauge reads at each export: thread-safe and cheap (no lock held long). */
typedef double (*SedpGaugeRead) (gconstpointer data);

/* Registers the gauge @stage:@name, whose value is @read (@data) at each export; @data must
 * live as long as @metrics. A second registration of the same @stage:@name is ignored. */
SEDP_API void sedp_metrics_gauge (SedpMetrics *metrics, const char *stage, const char *name,
                                  const char *help, SedpGaugeRead read, gconstpointer data);

/* The value at quantile @q (0..1) estimated from the buckets (upper bound of the bucket). */
SEDP_API double sedp_histogram_quantile (const SedpHistogram *histogram, double q);

/* Mean of the observed values (0 when none). */
SEDP_API double sedp_histogram_mean (const SedpHistogram *histogram);

/* Appends every metric in Prometheus text format (names prefixed with "sedp_", label stage): one
 * family (HELP, TYPE, samples) per name. A name registered with an "_us" part (microseconds) is
 * exported with "_seconds" there and its values in seconds (Prometheus' base unit). Thread-safe. */
SEDP_API void sedp_metrics_write_prometheus (SedpMetrics *metrics, GString *out);

/* Appends the "STAGE NAME VALUE" lines of sedp_pipeline_collect_stats (@stats) as Prometheus
 * families sedp_NAME{stage="STAGE"}: a counter when NAME ends in "_total", else a gauge; "_us"
 * names as above. Lines of another shape are skipped. Pure function of @stats. */
SEDP_API void sedp_metrics_write_stats (const char *stats, GString *out);

/* Makes a SedpStats collector writing "stage name value" lines into @out. */
SEDP_API SedpStats *sedp_stats_new (const char *stage, GString *out);
SEDP_API void sedp_stats_free (SedpStats *stats);
