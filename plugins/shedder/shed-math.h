/* shedder — the arithmetic of load shedding, shared by the `shedder` stage and by
 * `sedp shed train` (which builds this file too): the order of the candidates, the pruning
 * DNN's features, the number kept, and the control policy's share. The feature layout lives
 * here and nowhere else (docs/load-shedding.md#features). Plain functions of their arguments,
 * without state: thread-safe. */
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

/* The least share of @n candidates any keep leaves (shed_keep_count's floors, over @n); 1 when
 * @n is 0. */
double shed_floor_share (guint n, guint min_keep, double max_cutoff);

/**
 * shed_fit_share:
 * @in_flight: items in the pipeline not finished yet, this request's @n among them
 * @rate: items the pipeline can process per second (its service rate)
 * @n: the request's candidates
 * @elapsed_us: how long the request has taken so far
 * @target_us: when it should be done, from its start
 *
 * The `control` policy: the share of the request's candidates that it can keep and still be
 * done by @target_us: the items ahead of it take `(in_flight − n) / rate` seconds, its own
 * `share × n / rate`. 1 when @rate is not positive (nothing measured yet),
 * 0 when even the items ahead of it are late.
 */
double shed_fit_share (double in_flight, double rate, guint n, double elapsed_us, double target_us);

/**
 * shed_control_share:
 * @drain_s: the seconds the work in flight takes at @service_rate (the backlog)
 * @target_s: when a request should be done, from its start
 * @service_rate: the items per second the stages after the shedder process (when they are
 *   busy, their capacity); 0 when not measured yet
 * @offered_rate: the candidates per second arriving
 *
 * The `control` policy's share kept: the share at which the candidates kept arrive at the
 * service rate, less what drains the backlog past half of @target_s within @target_s
 * (`service / offered × (1 − (drain − 0.5 target) / target)`), clamped to 0..1. Below that
 * backlog nothing is shed while the offered load fits; above it the backlog settles where the
 * share matches the capacity. The same for every request of a moment, and steady while the load
 * is (docs/load-shedding.md#control). 1 when a rate is not positive (nothing measured yet).
 */
double shed_control_share (double drain_s, double target_s, double service_rate, double offered_rate);

/* The requests of a `dnn` stage over which the quota is kept: about the last 50. */
#define SHED_BALANCE_REQUESTS 50

/* The recent requests of a `dnn` stage under load (a ring of SHED_BALANCE_REQUESTS): each one's
 * candidates, the model's keep, the least it could keep (its floor) and the share its quota
 * allowed. Zeroed to start. */
typedef struct {
  guint next;   /* where the next request goes */
  guint count;  /* requests held, up to SHED_BALANCE_REQUESTS */
  struct {
    double n;
    double model;
    double floor;
    double allowed;
  } request[SHED_BALANCE_REQUESTS];
} ShedBalance;

/**
 * shed_balance_keep:
 * @b: the stage's recent requests, updated (the caller serialises calls)
 * @quota: the share of the candidates the pipeline can afford now (the `control` share), 0..1
 * @model_keep: the pruning DNN's keep fraction for this request, 0..1
 * @n: the request's candidates
 * @floor: the least share the request keeps whatever is asked (shed_keep_count's floors: the
 *   share `min_keep` and `max_cutoff` leave), 0..1
 *
 * The `dnn` policy's keep: the model spreads the quota over the requests, the quota sets how much
 * is kept in all. The model's keeps are scaled by one factor `r` so that the recent requests,
 * this one included, keep the candidates their quotas allow, as kept: each keeps
 * `CLAMP (model_keep × r, floor, 1)` and `Σ n × that = Σ n × MAX (quota, floor)`, what `control`
 * keeps at the same quotas (docs/load-shedding.md#the-quota-is-kept). Found by bisection over
 * the ring. Returns this request's share; 1 when @quota is 1 (nothing need be shed; @b
 * unchanged).
 */
double shed_balance_keep (ShedBalance *b, double quota, double model_keep, guint n, double floor);

/**
 * shed_balance_level:
 * @b: the stage's recent requests (not changed)
 * @quota: @n: @floor: the request at hand, as shed_balance_keep() takes them
 *
 * The load level the `dnn` model is asked at: the share the recent requests may keep,
 * candidate-weighted (`Σ n × MAX (quota, floor) / Σ n`), over the ring with this request in the
 * place shed_balance_keep() will put it. The model decides how a request's keep compares with
 * the others' at a level; the level is the same for the requests of a moment, so that a quota
 * that moves from one request to the next (the control share's jitter, a late request cut to
 * fit) does not move the spread from one request to the next: shed_balance_keep() scales the
 * keeps to those quotas anyway. Returns @quota when the ring is empty.
 */
double shed_balance_level (const ShedBalance *b, double quota, guint n, double floor);

/* The candidates that reached a stage over a sliding window of SHED_WINDOW_SLICES slices (the
 * `control` policy's offered load). Zeroed to start. */
#define SHED_WINDOW_SLICES 20
typedef struct {
  gint64 slice[SHED_WINDOW_SLICES]; /* 1 + the slice's number (now / slice_us); 0: unused */
  double sum[SHED_WINDOW_SLICES];
} ShedWindow;

/* Adds @value at @now_us to the slice of @slice_us microseconds it falls in. */
void shed_window_add (ShedWindow *w, gint64 now_us, gint64 slice_us, double value);

/* The sum over the last SHED_WINDOW_SLICES slices, the current one included. */
double shed_window_sum (const ShedWindow *w, gint64 now_us, gint64 slice_us);
