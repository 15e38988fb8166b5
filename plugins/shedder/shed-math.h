/* shedder — the arithmetic of load shedding, shared by the `shedder` stage and by
 * `sedp shed train` (which builds this file too): the order of the candidates, the pruning
 * DNN's features, the number kept, and the feedback controller. The feature layout lives here
 * and nowhere else (docs/load-shedding.md#features). Plain functions of their arguments, no
 * state but the controller's: thread-safe. */
#pragma once

#include <glib.h>

/* The pruning DNN's input row, in this order (docs/load-shedding.md#features). */
typedef enum {
  SHED_F_QUOTA = 0,      /* the share of the candidates the pipeline can afford now, 0..1 */
  SHED_F_PREV_CUTOFF,    /* the stage's previous cutoff ratio, 0..1 */
  SHED_F_QUEUE,          /* the queue (worker) id over the stage's parallelism, 0..1 */
  SHED_F_ESCORE_MEAN,    /* over the candidates' finite escores (0 when none) */
  SHED_F_ESCORE_VAR,
  SHED_F_ESCORE_MAX,
  SHED_F_ESCORE_MIN,
  SHED_F_COUNT,          /* log2 (n + 1) / 16: the candidate count, about 0..1 */
  SHED_F_BUDGET,         /* the deadline budget left, in seconds */
  SHED_N_FEATURES
} ShedFeature;

/* What a request's features are made of, apart from its escores. */
typedef struct {
  double quota;
  double prev_cutoff;
  double queue;
  double budget_s;
} ShedContext;

/* Mean, variance (population), max and min of the finite values; @n_finite of @n. */
typedef struct {
  double mean, var, max, min;
  guint n_finite;
} ShedEscoreStats;

/* Stats of @escore[0..n) (NULL: none, all zero). */
void shed_escore_stats (const float *escore, guint n, ShedEscoreStats *out);

/* Writes the SHED_N_FEATURES features of a request of @n candidates into @out. */
void shed_features (const ShedContext *ctx, const ShedEscoreStats *stats, guint n, float *out);

/* Fills @order[0..n) with the candidates best first: by escore, descending; NaN and infinite
 * escores last; ties (and the non-finite ones) in item order. With @escore NULL, item order.
 * Returns the number of non-finite escores. */
guint shed_order (const float *escore, guint n, guint *order);

/* How many of @n candidates to keep for the keep fraction @keep (clamped to 0..1, NaN as 1):
 * ceil (keep × n), at least @min_keep and ceil ((1 − max_cutoff) × n), at most n; products
 * within n × 1e-6 above an integer count as that integer (float32 fractions). */
guint shed_keep_count (double keep, guint n, guint min_keep, double max_cutoff);

/**
 * ShedControl:
 * The `control` policy: an integral controller (PIE's, without its derivative term) that
 * steers a latency signal to a target by the share of candidates cut. Each update moves the
 * cutoff by `gain × (signal / target − 1) × dt`: at twice the target it rises by `gain` per
 * second, below the target it falls back. Not thread-safe: the stage serializes updates.
 */
typedef struct {
  double gain;          /* cutoff per second at an error of 1 */
  double max_cutoff;
  double cutoff;        /* the output, 0..max_cutoff */
  gint64 last_us;       /* the last update; 0 before the first */
} ShedControl;

/* Largest step, in seconds, one update integrates (after an idle spell the error is not
 * multiplied by the whole pause). */
#define SHED_CONTROL_MAX_DT 0.05

void shed_control_init (ShedControl *c, double gain, double max_cutoff);

/* One step at @now_us with the measured @signal and its @target (same unit, target > 0).
 * Returns the new cutoff. */
double shed_control_update (ShedControl *c, double signal, double target, gint64 now_us);
