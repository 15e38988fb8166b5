/* sedp — the `streams = auto` controller (docs/opencl.md §5.3): a pure state machine, fed with the
 * runs a device completes, that returns how many streams to use. It knows nothing of OpenCL (the
 * device calls it, ocl-streams.c), so its tests drive it with synthetic throughput curves
 * (tests/nn-ocl/test-ocl-auto.c). Not thread-safe: the device serialises calls. */
#pragma once

#include <glib.h>

/* The stream counts tried, in order. */
#define NN_AUTO_N_CANDIDATES 6
extern const guint nn_auto_candidates[NN_AUTO_N_CANDIDATES];

/* Concurrency buckets: 1, 2, 3–4, 5–8, 9–16, 17+. */
#define NN_AUTO_N_BUCKETS 6
guint nn_auto_bucket (guint concurrency);

/* Timing (µs): the concurrency window, an exploration slot's least length and least runs, the
 * longest a slot may take, and the age after which a table entry is explored again. */
#define NN_AUTO_WINDOW_US 250000
#define NN_AUTO_SLOT_US 100000
#define NN_AUTO_SLOT_RUNS 20
#define NN_AUTO_SLOT_MAX_US 1000000
#define NN_AUTO_STALE_US (G_GINT64_CONSTANT (600) * G_USEC_PER_SEC)
/* Candidates within this fraction of the best rate count as tied: the fewest streams wins. */
#define NN_AUTO_TIE 0.02

typedef struct _NnAuto NnAuto;

/* A controller starting at @streams (1 to 8) for concurrency bucket nn_auto_bucket (@concurrency). */
NnAuto *nn_auto_new (guint streams, guint concurrency);
void nn_auto_free (NnAuto *a);

/* Records what a start profile measured at @concurrency: @rates[k] rows/s with
 * nn_auto_candidates[k] streams. Chooses by the rule (nn_auto_choose), stores it for the bucket
 * and returns it (the count to use now). */
guint nn_auto_learn (NnAuto *a, guint concurrency, const double *rates, gint64 now_us);

/* A run of @rows rows completed at @now_us; @concurrency is how many runs were in flight on the
 * device when it started (itself included). Returns the stream count to use from now on. */
guint nn_auto_observe (NnAuto *a, gint64 now_us, guint concurrency, guint64 rows);

/* The index of the candidate to keep given @rates[NN_AUTO_N_CANDIDATES] (rows/s; negative: not
 * measured): the highest rate, or among those within NN_AUTO_TIE of it the fewest streams. */
guint nn_auto_choose (const double *rates);

/* The stream count to use now. */
guint nn_auto_streams (const NnAuto *a);
/* How many times the count changed (for the stats), the bucket the count now serves, whether
 * the controller is exploring, and the table's entry for a bucket (0: none). */
guint nn_auto_changes (const NnAuto *a);
guint nn_auto_current_bucket (const NnAuto *a);
gboolean nn_auto_exploring (const NnAuto *a);
guint nn_auto_table (const NnAuto *a, guint bucket);
