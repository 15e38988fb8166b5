/* bench/run runtime — the staged runtime's own cost and its benefit over the sync design.
 *
 * 1. Hop overhead: latency of one request through a chain of passthrough stages, closed loop
 *    (one request at a time), for a short and a long chain; the difference per added stage is
 *    the latency a hop adds (p50 and p99).
 * 2. Frames per second through the long chain with many requests in flight.
 * 3. Staged over sync: the same plugins and workload (heavy-tailed CPU cost per item, an I/O
 *    wait per call), the same total number of worker threads; for each mode the highest Poisson
 *    arrival rate whose p99 latency stays under the SLO with no more than 0.5 % of requests
 *    refused, timed out or failed. The ratio is staged/sync. */
#include "bench-common.h"

#include <math.h>
#include <string.h>

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean done;
} Waiter;

static void
waiter_done (SedpRequest *r, gpointer data)
{
  Waiter *w = data;
  g_mutex_lock (&w->lock);
  w->done = TRUE;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
}

static char *
chain_text (guint n_item_stages, guint frame_rows, guint batch)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "[pipeline]\nname = chain\ndeadline_ms = 60000\nframe_rows = %u\n"
                             "[stage s0]\nplugin = passthrough\nscope = request\n", frame_rows);
  for (guint i = 1; i <= n_item_stages; i++)
    g_string_append_printf (s, "[stage s%u]\nplugin = passthrough\nafter = s%u\nbatch = %u\n"
                               "queue_capacity = 4096\n", i, i - 1, batch);
  return g_string_free (s, FALSE);
}

/* Closed-loop latencies (µs) of @n requests of one item through a chain. */
static double *
chain_latencies (guint n_item_stages, guint n)
{
  g_autofree char *text = chain_text (n_item_stages, 64, 1);
  SedpPipeline *p = bench_pipeline (text);
  double *lat = g_new (double, n);
  Waiter w;
  g_mutex_init (&w.lock);
  g_cond_init (&w.cond);
  for (guint i = 0; i < n + 200; i++) {
    SedpRequest *r = bench_request (i, 1, 0);
    w.done = FALSE;
    gint64 t0 = g_get_monotonic_time ();
    while (sedp_pipeline_submit (p, r, waiter_done, &w) != SEDP_STATUS_OK)
      g_usleep (10);
    g_mutex_lock (&w.lock);
    while (!w.done)
      g_cond_wait (&w.cond, &w.lock);
    g_mutex_unlock (&w.lock);
    gint64 t1 = g_get_monotonic_time ();
    if (i >= 200)
      lat[i - 200] = (double) (t1 - t0);
    sedp_request_unref (r);
  }
  sedp_pipeline_free (p);
  g_mutex_clear (&w.lock);
  g_cond_clear (&w.cond);
  return lat;
}

/* ---- throughput of the chain ---- */

typedef struct {
  GAsyncQueue *done;
} Flow;

static void
flow_done (SedpRequest *r, gpointer data)
{
  g_async_queue_push (((Flow *) data)->done, GINT_TO_POINTER (1));
}

static double
chain_frames_per_s (guint n_item_stages, double seconds)
{
  const guint items = 64, frame_rows = 8, window = 64;
  g_autofree char *text = chain_text (n_item_stages, frame_rows, 8);
  SedpPipeline *p = bench_pipeline (text);
  Flow f = {g_async_queue_new ()};
  guint64 seq = 0, completed = 0;
  guint inflight = 0;
  gint64 start = g_get_monotonic_time (), end = start + (gint64) (seconds * 1e6);
  while (g_get_monotonic_time () < end) {
    while (inflight < window) {
      SedpRequest *r = bench_request (seq++, items, 0);
      if (sedp_pipeline_submit (p, r, flow_done, &f) == SEDP_STATUS_OK)
        inflight++;
      sedp_request_unref (r);
    }
    g_async_queue_pop (f.done);
    inflight--;
    completed++;
  }
  gint64 elapsed = g_get_monotonic_time () - start;
  while (inflight-- > 0)
    g_async_queue_pop (f.done);
  sedp_pipeline_free (p);
  g_async_queue_unref (f.done);
  return completed * (double) (items / frame_rows) / (elapsed / 1e6);
}

/* ---- staged over sync ---- */

typedef struct {
  GMutex lock;
  GArray *latencies; /* double, µs */
  guint failed;
} Load;

static void
load_done (SedpRequest *r, gpointer data)
{
  Load *l = data;
  const SedpResult *res = sedp_request_get_result (r);
  g_mutex_lock (&l->lock);
  double us = (double) sedp_result_get_latency_us (res);
  g_array_append_val (l->latencies, us);
  if (sedp_result_get_status (res) != SEDP_STATUS_OK)
    l->failed++;
  g_mutex_unlock (&l->lock);
}

typedef struct {
  double p99_ms;
  double bad_fraction;
  guint submitted;
} Trial;

static const char *workload_fmt =
    "[pipeline]\nname = workload\nmode = %s\ndeadline_ms = 2000\nframe_rows = %u\n"
    "[stage reader]\nplugin = passthrough\nscope = request\nqueue_capacity = 100000\n"
    "[stage features]\nplugin = synthetic_work\nafter = reader\nparallelism = %u\nbatch = 16\n"
    "queue_capacity = 100000\nspin_us = %g\ndistribution = pareto\npareto_alpha = 1.5\n"
    "max_factor = 200\nseed = 11\n"
    "[stage lookup]\nplugin = synthetic_work\nafter = features\nparallelism = %u\nbatch = 128\n"
    "batch_timeout_us = %u\nqueue_capacity = 100000\nsleep_us = %u\nsleep_per_row_us = %g\n"
    "[stage score]\nplugin = synthetic_work\nafter = lookup\nbatch = 32\nqueue_capacity = 100000\n"
    "spin_us = %g\ndistribution = fixed\noutput = score\n";

typedef struct {
  guint items;
  guint frame_rows;
  double spin_us;
  guint features_workers;
  guint lookup_workers;
  guint lookup_linger_us;
  guint io_us;
  double io_per_row_us;
  double score_us;
  double slo_ms;
  double seconds;
} Workload;

static Trial
run_trial (const Workload *w, gboolean sync, double rate)
{
  g_autofree char *text = g_strdup_printf (
      workload_fmt, sync ? "sync" : "staged", w->frame_rows, w->features_workers, w->spin_us,
      w->lookup_workers, w->lookup_linger_us, w->io_us, w->io_per_row_us, w->score_us);
  SedpPipeline *p = bench_pipeline (text);
  Load l = {.latencies = g_array_new (FALSE, FALSE, sizeof (double))};
  g_mutex_init (&l.lock);
  GRand *rng = g_rand_new_with_seed (42);
  guint refused = 0, submitted = 0;
  gint64 start = g_get_monotonic_time (), end = start + (gint64) (w->seconds * 1e6);
  double next = (double) start;
  guint64 seq = 0;
  while (next < (double) end) {
    gint64 now = g_get_monotonic_time ();
    if ((double) now < next) {
      g_usleep ((gulong) MIN (next - (double) now, 1000.0));
      continue;
    }
    SedpRequest *r = bench_request (seq++, w->items, 0);
    if (sedp_pipeline_submit (p, r, load_done, &l) != SEDP_STATUS_OK)
      refused++;
    submitted++;
    sedp_request_unref (r);
    next += -log (1.0 - g_rand_double (rng)) / rate * 1e6;
  }
  sedp_pipeline_stop (p);
  Trial t;
  t.submitted = submitted;
  t.p99_ms = bench_quantile ((double *) l.latencies->data, l.latencies->len, 0.99) / 1000.0;
  t.bad_fraction = submitted ? (double) (refused + l.failed) / submitted : 1.0;
  sedp_pipeline_free (p);
  g_array_unref (l.latencies);
  g_mutex_clear (&l.lock);
  g_rand_free (rng);
  return t;
}

static gboolean
passes (const Workload *w, Trial t)
{
  return t.p99_ms <= w->slo_ms && t.bad_fraction <= 0.005;
}

/* The highest rate that passes: doubling, then bisection. */
static double
max_rate (const Workload *w, gboolean sync)
{
  double lo = 0, hi = 0, rate = 100;
  for (;;) {
    Trial t = run_trial (w, sync, rate);
    fprintf (stderr, "  %-6s rate=%7.0f/s p99=%7.2f ms bad=%.4f\n", sync ? "sync" : "staged", rate,
             t.p99_ms, t.bad_fraction);
    if (!passes (w, t)) {
      hi = rate;
      break;
    }
    lo = rate;
    rate *= 2;
    if (rate > 1e6)
      return lo;
  }
  for (guint i = 0; i < 6 && hi - lo > lo * 0.03; i++) {
    double mid = (lo + hi) / 2;
    Trial t = run_trial (w, sync, mid);
    fprintf (stderr, "  %-6s rate=%7.0f/s p99=%7.2f ms bad=%.4f\n", sync ? "sync" : "staged", mid,
             t.p99_ms, t.bad_fraction);
    if (passes (w, t))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

int
main (int argc, char **argv)
{
  gboolean quick = g_getenv ("SEDP_BENCH_QUICK") != NULL;
  const guint short_chain = 1, long_chain = 9, n = quick ? 2000 : 20000;

  fprintf (stderr, "hop overhead: closed loop, %u requests, chains of %u and %u passthrough stages\n",
           n, short_chain + 1, long_chain + 1);
  double *a = chain_latencies (short_chain, n);
  double *b = chain_latencies (long_chain, n);
  double hops = long_chain - short_chain;
  double a50 = bench_quantile (a, n, 0.5), b50 = bench_quantile (b, n, 0.5);
  double a99 = bench_quantile (a, n, 0.99), b99 = bench_quantile (b, n, 0.99);
  fprintf (stderr, "  latency p50 %.1f µs → %.1f µs, p99 %.1f µs → %.1f µs\n", a50, b50, a99, b99);
  printf ("RESULT hop_overhead_us_p50=%.2f\n", MAX (0.0, (b50 - a50) / hops));
  printf ("RESULT hop_overhead_us_p99=%.2f\n", MAX (0.0, (b99 - a99) / hops));
  g_free (a);
  g_free (b);
  fflush (stdout);

  double fps = chain_frames_per_s (long_chain, quick ? 1.0 : 3.0);
  printf ("RESULT frames_per_s=%.0f\n", fps);
  fflush (stdout);

  Workload w = {
    .items = 32,
    .frame_rows = 8,
    .spin_us = 10,
    .features_workers = 2,
    .lookup_workers = 2,
    .lookup_linger_us = 200,
    .io_us = 2000,
    .io_per_row_us = 0.5,
    .score_us = 1,
    .slo_ms = 50,
    .seconds = quick ? 1.0 : 3.0,
  };
  guint threads = 1 + w.features_workers + w.lookup_workers + 1;
  fprintf (stderr,
           "staged vs sync: %u items/request in frames of %u; features: Pareto(1.5) CPU, mean %g "
           "µs/item; lookup: %u µs I/O per call + %g µs/row; score: %g µs/item; %u worker threads "
           "in both modes; SLO p99 ≤ %g ms, ≤ 0.5%% refused/failed\n",
           w.items, w.frame_rows, w.spin_us, w.io_us, w.io_per_row_us, w.score_us, threads,
           w.slo_ms);
  double staged = max_rate (&w, FALSE);
  double sync = max_rate (&w, TRUE);
  printf ("RESULT staged_max_rps=%.0f\n", staged);
  printf ("RESULT sync_max_rps=%.0f\n", sync);
  printf ("RESULT staged_over_sync_throughput=%.2f\n", sync > 0 ? staged / sync : 0.0);
  return 0;
}
