/* bench/run runtime — the staged runtime's own cost and its benefit over the sync design.
 *
 * 1. Hop overhead: latency of one request through a chain of passthrough stages, closed loop
 *    (one request at a time), for a short and a long chain; the difference per added stage is
 *    the latency a hop adds (p50 and p99).
 * 2. Frames per second through the long chain with many requests in flight.
 * 3. Staged over sync: the same plugins and workload (heavy-tailed CPU cost per item, an I/O
 *    wait per call); for each configuration the capacity: the highest Poisson arrival rate whose
 *    p99 latency stays under the SLO with no more than 0.5 % of requests refused, timed out or
 *    failed.
 *    a. Both modes with the same total number of worker threads (6): staged/sync, the first
 *       figure (staged_over_sync_throughput).
 *    b. Sync at its best: sync_workers doubled from 1 until the capacity stops rising.
 *    c. Staged at its best: its own knobs one at a time (the I/O stage's parallelism, batch and
 *       batch_timeout_us, then the CPU stage's parallelism).
 *    d. The two winners again in alternating rounds; staged_over_best_sync is the ratio of the
 *       median capacities, both at the same p99 SLO. */
#include "bench-common.h"

#include <math.h>
#include <string.h>
#include <sys/resource.h>

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
  double p99_ms;
  double bad_fraction;
  double cpu_us_per_request; /* the process's CPU time (workers and load generator) / submitted */
  guint submitted;
  gboolean cut; /* stopped early: it could no longer pass */
} Trial;

typedef struct {
  guint items;
  guint frame_rows;
  double spin_us;
  guint features_workers;
  guint lookup_workers;
  guint lookup_batch;
  guint lookup_linger_us;
  guint io_us;
  double io_per_row_us;
  double score_us;
  guint sync_workers; /* threads of mode = sync; 0: the default, the stages' parallelism summed */
  double slo_ms;
  double seconds;
} Workload;

/* CPU time of the whole process so far, in seconds. */
static double
process_cpu_s (void)
{
  struct rusage u;
  getrusage (RUSAGE_SELF, &u);
  return (double) (u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double) (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* The pipeline file of @w in staged or sync mode: the same stages and plugin options in both. */
static char *
workload_text (const Workload *w, gboolean sync)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "[pipeline]\nname = workload\nmode = %s\ndeadline_ms = 2000\n"
                             "frame_rows = %u\n", sync ? "sync" : "staged", w->frame_rows);
  if (sync && w->sync_workers > 0)
    g_string_append_printf (s, "sync_workers = %u\n", w->sync_workers);
  g_string_append_printf (
      s,
      "[stage reader]\nplugin = passthrough\nscope = request\nqueue_capacity = 100000\n"
      "[stage features]\nplugin = synthetic_work\nafter = reader\nparallelism = %u\nbatch = 16\n"
      "queue_capacity = 100000\nspin_us = %g\ndistribution = pareto\npareto_alpha = 1.5\n"
      "max_factor = 200\nseed = 11\n"
      "[stage lookup]\nplugin = synthetic_work\nafter = features\nparallelism = %u\nbatch = %u\n"
      "batch_timeout_us = %u\nqueue_capacity = 100000\nsleep_us = %u\nsleep_per_row_us = %g\n"
      "[stage score]\nplugin = synthetic_work\nafter = lookup\nbatch = 32\nqueue_capacity = 100000\n"
      "spin_us = %g\ndistribution = fixed\noutput = score\n",
      w->features_workers, w->spin_us, w->lookup_workers, w->lookup_batch, w->lookup_linger_us,
      w->io_us, w->io_per_row_us, w->score_us);
  return g_string_free (s, FALSE);
}

typedef struct {
  GMutex lock;
  GArray *latencies; /* double, µs */
  gint failed;       /* atomic */
  gint over_slo;     /* atomic: completed later than the SLO */
  double slo_us;
} Load;

static void
load_done (SedpRequest *r, gpointer data)
{
  Load *l = data;
  const SedpResult *res = sedp_request_get_result (r);
  double us = (double) sedp_result_get_latency_us (res);
  g_mutex_lock (&l->lock);
  g_array_append_val (l->latencies, us);
  g_mutex_unlock (&l->lock);
  if (sedp_result_get_status (res) != SEDP_STATUS_OK)
    g_atomic_int_inc (&l->failed);
  if (us > l->slo_us)
    g_atomic_int_inc (&l->over_slo);
}

/* Poisson arrivals at @rate for w->seconds. The trial stops early once it cannot pass whatever
 * comes later: with at most n_max = expected + 5 σ + 10 arrivals (Poisson), more than
 * 1 % × n_max + 2 requests over the SLO put the p99 over it, and more than 0.5 % × n_max bad
 * ones put the bad fraction over 0.5 %. This only saves the time of rates that fail. */
static Trial
run_trial (const Workload *w, gboolean sync, double rate)
{
  g_autofree char *text = workload_text (w, sync);
  SedpPipeline *p = bench_pipeline (text);
  double cpu0 = process_cpu_s ();
  Load l = {.latencies = g_array_new (FALSE, FALSE, sizeof (double)), .slo_us = w->slo_ms * 1000};
  g_mutex_init (&l.lock);
  GRand *rng = g_rand_new_with_seed (42);
  double expected = rate * w->seconds, n_max = expected + 5 * sqrt (expected) + 10;
  guint refused = 0, submitted = 0;
  gboolean cut = FALSE;
  gint64 start = g_get_monotonic_time (), end = start + (gint64) (w->seconds * 1e6);
  double next = (double) start;
  guint64 seq = 0;
  while (next < (double) end) {
    if (g_atomic_int_get (&l.over_slo) > 0.01 * n_max + 2 ||
        refused + g_atomic_int_get (&l.failed) > 0.005 * n_max) {
      cut = TRUE;
      break;
    }
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
  t.cpu_us_per_request = submitted ? (process_cpu_s () - cpu0) * 1e6 / submitted : 0;
  t.cut = cut;
  t.p99_ms = bench_quantile ((double *) l.latencies->data, l.latencies->len, 0.99) / 1000.0;
  t.bad_fraction = submitted ? (double) (refused + (guint) l.failed) / submitted : 1.0;
  sedp_pipeline_free (p);
  g_array_unref (l.latencies);
  g_mutex_clear (&l.lock);
  g_rand_free (rng);
  return t;
}

static gboolean
passes (const Workload *w, Trial t)
{
  return !t.cut && t.p99_ms <= w->slo_ms && t.bad_fraction <= 0.005;
}

static gboolean
trial_passes (const Workload *w, gboolean sync, double rate, const char *label)
{
  Trial t = run_trial (w, sync, rate);
  gboolean ok = passes (w, t);
  fprintf (stderr, "  %-24s rate=%7.0f/s p99=%7.2f ms bad=%.4f cpu=%4.0f µs/request %s%s\n",
           label, rate, t.p99_ms, t.bad_fraction, t.cpu_us_per_request, ok ? "pass" : "FAIL",
           t.cut ? " (stopped early)" : "");
  return ok;
}

/* The capacity of @w: the highest Poisson rate that passes. From @from, up by ×@step while it
 * passes (down by ÷@step while it fails) until the rate is bracketed, then bisection to 3 %.
 * From 100/s with ×2 this is the doubling-then-bisection search of the first figure. */
static double
capacity (const Workload *w, gboolean sync, double from, double step, const char *label)
{
  double lo = 0, hi = 0, rate = from;
  if (trial_passes (w, sync, rate, label)) {
    for (lo = rate;;) {
      rate *= step;
      if (rate > 1e6)
        return lo;
      if (!trial_passes (w, sync, rate, label)) {
        hi = rate;
        break;
      }
      lo = rate;
    }
  } else {
    for (hi = rate;;) {
      rate /= step;
      if (rate < 10)
        return 0;
      if (trial_passes (w, sync, rate, label)) {
        lo = rate;
        break;
      }
      hi = rate;
    }
  }
  for (guint i = 0; i < 8 && hi - lo > lo * 0.03; i++) {
    double mid = (lo + hi) / 2;
    if (trial_passes (w, sync, mid, label))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static char *
staged_label (const Workload *w)
{
  return g_strdup_printf ("staged f%u l%u b%u t%u", w->features_workers, w->lookup_workers,
                          w->lookup_batch, w->lookup_linger_us);
}

static char *
sync_label (const Workload *w)
{
  return g_strdup_printf ("sync workers=%u", w->sync_workers);
}

static double
median (double *v, guint n)
{
  qsort (v, n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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
    .lookup_batch = 128,
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
  gint64 t_start = g_get_monotonic_time ();
  g_autofree char *staged_6 = g_strdup_printf ("staged (%u threads)", threads);
  g_autofree char *sync_6 = g_strdup_printf ("sync (%u threads)", threads);
  double staged = capacity (&w, FALSE, 100, 2, staged_6);
  double sync = capacity (&w, TRUE, 100, 2, sync_6);
  printf ("RESULT staged_max_rps=%.0f\n", staged);
  printf ("RESULT sync_max_rps=%.0f\n", sync);
  printf ("RESULT staged_over_sync_throughput=%.2f\n", sync > 0 ? staged / sync : 0.0);
  fflush (stdout);

  /* Sync at its best: sync_workers doubled (×4 when quick), at least up to 32 (16) — past the
   * size where the threads' I/O bound, N / 2.4 ms, meets the 2 cores' CPU bound — and then
   * until two doublings in a row (one when quick) gained no more than 3 % over the best of the
   * sweep. The search of each size starts near what its threads could carry if only the I/O
   * wait bound them. The 6-thread point above is a candidate too. */
  double per_request_us = w.io_us + w.io_per_row_us * w.items + w.items * (w.spin_us + w.score_us);
  fprintf (stderr, "sync at its best: sync_workers swept (%s), same search and SLO\n",
           quick ? "1, 4, 16, …" : "1, 2, 4, 8, …");
  Workload ws_best = w;
  ws_best.sync_workers = threads;
  double sync_cap = sync, sweep_best = 0, prev = 0;
  GString *sync_table = g_string_new (NULL);
  g_string_append_printf (sync_table, " %u:%.0f", threads, sync);
  const guint sweep_min = quick ? 16 : 32;
  for (guint k = 1, flat = 0; k <= 1024 && (k <= sweep_min || flat < (quick ? 1u : 2u));
       k *= quick ? 4 : 2) {
    Workload ws = w;
    ws.sync_workers = k;
    double io_bound = 0.8 * k * 1e6 / per_request_us;
    double from = prev > 0 ? MIN (io_bound, prev * 1.5) : io_bound;
    g_autofree char *label = sync_label (&ws);
    double c = capacity (&ws, TRUE, from, 1.4, label);
    fprintf (stderr, "sync_workers=%u: %.0f requests/s\n", k, c);
    g_string_append_printf (sync_table, " %u:%.0f", k, c);
    flat = c > sweep_best * 1.03 ? 0 : flat + 1;
    sweep_best = MAX (sweep_best, c);
    if (c > sync_cap) {
      sync_cap = c;
      ws_best = ws;
    }
    prev = c;
  }
  fprintf (stderr, "sync capacity by sync_workers:%s; best %u (%.0f/s)\n", sync_table->str,
           ws_best.sync_workers, sync_cap);
  g_string_free (sync_table, TRUE);

  /* Staged at its best: one knob at a time from the configuration above (its capacity is the
   * first candidate), each axis keeping the best so far: the I/O stage's parallelism, then how
   * long its workers wait to fill a batch, then the CPU stage's parallelism. */
  static const guint lookup_full[] = {1, 4, 8}, lookup_quick[] = {4};
  static const guint batch_full[] = {32, 512}, batch_quick[] = {512};
  static const guint linger_full[] = {0, 1000}, linger_quick[] = {0};
  static const guint features_full[] = {1, 4}, features_quick[] = {4};
#define AXIS(knob, field, v)                                                                       \
  {knob, G_STRUCT_OFFSET (Workload, field), quick ? v##_quick : v##_full,                          \
   quick ? G_N_ELEMENTS (v##_quick) : G_N_ELEMENTS (v##_full)}
  struct {
    const char *knob;
    gsize offset;
    const guint *values;
    guint n;
  } axes[] = {
    AXIS ("lookup parallelism", lookup_workers, lookup),
    AXIS ("lookup batch", lookup_batch, batch),
    AXIS ("lookup batch_timeout_us", lookup_linger_us, linger),
    AXIS ("features parallelism", features_workers, features),
  };
#undef AXIS
  fprintf (stderr, "staged at its best: one knob at a time, same search and SLO\n");
  Workload wt_best = w;
  double staged_cap = staged;
  for (guint x = 0; x < G_N_ELEMENTS (axes); x++) {
    for (guint i = 0; i < axes[x].n; i++) {
      Workload wt = wt_best;
      G_STRUCT_MEMBER (guint, &wt, axes[x].offset) = axes[x].values[i];
      if (G_STRUCT_MEMBER (guint, &wt_best, axes[x].offset) == axes[x].values[i])
        continue;
      g_autofree char *label = staged_label (&wt);
      double c = capacity (&wt, FALSE, staged_cap, 1.25, label);
      fprintf (stderr, "%s=%u (features %u; lookup %u, batch %u, batch_timeout_us %u): %.0f "
                       "requests/s\n", axes[x].knob, axes[x].values[i], wt.features_workers,
               wt.lookup_workers, wt.lookup_batch, wt.lookup_linger_us, c);
      if (c > staged_cap) {
        staged_cap = c;
        wt_best = wt;
      }
    }
  }
  fprintf (stderr, "staged best: features parallelism %u; lookup parallelism %u, batch %u, "
                   "batch_timeout_us %u (%.0f/s)\n",
           wt_best.features_workers, wt_best.lookup_workers, wt_best.lookup_batch,
           wt_best.lookup_linger_us, staged_cap);

  /* The two finalists again, in alternating rounds (staged first in even rounds, sync first in
   * odd ones), each search starting at its sweep capacity; the ratio of the medians. */
  guint rounds = quick ? 1 : 3;
  double st[3], sy[3];
  g_autofree char *st_label = staged_label (&wt_best);
  g_autofree char *sy_label = sync_label (&ws_best);
  for (guint r = 0; r < rounds; r++) {
    fprintf (stderr, "final round %u of %u\n", r + 1, rounds);
    for (guint k = 0; k < 2; k++) {
      if ((k == 0) == (r % 2 == 0))
        st[r] = capacity (&wt_best, FALSE, staged_cap, 1.25, st_label);
      else
        sy[r] = capacity (&ws_best, TRUE, sync_cap, 1.25, sy_label);
    }
    fprintf (stderr, "  round %u: staged %.0f/s, sync %.0f/s\n", r + 1, st[r], sy[r]);
  }
  double st_med = median (st, rounds), sy_med = median (sy, rounds);
  printf ("RESULT sync_best_workers=%u\n", ws_best.sync_workers);
  printf ("RESULT sync_best_rps=%.0f\n", sy_med);
  printf ("RESULT staged_best_features_parallelism=%u\n", wt_best.features_workers);
  printf ("RESULT staged_best_lookup_parallelism=%u\n", wt_best.lookup_workers);
  printf ("RESULT staged_best_lookup_batch=%u\n", wt_best.lookup_batch);
  printf ("RESULT staged_best_lookup_batch_timeout_us=%u\n", wt_best.lookup_linger_us);
  printf ("RESULT staged_best_rps=%.0f\n", st_med);
  printf ("RESULT staged_over_best_sync=%.2f\n", sy_med > 0 ? st_med / sy_med : 0.0);
  fprintf (stderr, "staged vs sync took %.0f s\n", (g_get_monotonic_time () - t_start) / 1e6);
  return 0;
}
