/* sedp latency window tests: quantiles against the exact ones, slices expiring, many writers. */
#include "test-common.h"

#include "runtime/window.h"

#include <math.h>

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return (x > y) - (x < y);
}

/* The exact quantile of sorted @v (nearest rank), as the window defines it. */
static gint64
exact (const gint64 *v, guint n, double q)
{
  guint rank = (guint) ceil (q * n);
  return v[MAX (rank, 1) - 1];
}

/* 20 000 latencies from 1 µs to about 1 s (log-uniform): every quantile is an upper bound of
 * the exact one, within an eighth of its power of two. */
static void
test_quantiles (void)
{
  SedpLatencyWindow *w = sedp_latency_window_new (20, 100000);
  enum { N = 20000 };
  static gint64 v[N];
  GRand *rand = g_rand_new_with_seed (7);
  for (guint i = 0; i < N; i++) {
    v[i] = (gint64) exp (g_rand_double_range (rand, 0, log (1e6)));
    sedp_latency_window_observe (w, v[i], 5000000 + i * 10); /* all within one slice */
  }
  qsort (v, N, sizeof *v, cmp_i64);
  const double qs[] = {0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0};
  for (guint i = 0; i < G_N_ELEMENTS (qs); i++) {
    guint64 count = 0;
    double got = sedp_latency_window_quantile (w, qs[i], 5200000, &count);
    double want = (double) exact (v, N, qs[i]);
    CU_ASSERT_EQUAL (count, N);
    CU_ASSERT (got > want && got <= want * 1.125 + 1);
    if (!(got > want && got <= want * 1.125 + 1))
      fprintf (stderr, "\n  q %.3f: window %.1f, exact %.1f\n", qs[i], got, want);
  }
  g_rand_free (rand);
  sedp_latency_window_free (w);
}

/* What was observed more than n_slices × slice_us ago no longer counts; an empty window says 0. */
static void
test_expiry (void)
{
  SedpLatencyWindow *w = sedp_latency_window_new (10, 100000); /* 1 s */
  guint64 count = 1;
  CU_ASSERT_DOUBLE_EQUAL (sedp_latency_window_quantile (w, 0.99, 0, &count), 0, 1e-9);
  CU_ASSERT_EQUAL (count, 0);
  for (guint i = 0; i < 100; i++)
    sedp_latency_window_observe (w, 50000, 1000000 + i * 1000); /* 50 ms, at 1.0–1.1 s */
  for (guint i = 0; i < 100; i++)
    sedp_latency_window_observe (w, 1000, 1500000 + i * 1000);  /* 1 ms, at 1.5–1.6 s */
  double p99 = sedp_latency_window_quantile (w, 0.99, 1600000, &count);
  CU_ASSERT_EQUAL (count, 200);
  CU_ASSERT (p99 >= 50000 && p99 <= 50000 * 1.125);
  /* The last 3 slices (1.4–1.6 s) hold only the 1 ms ones; a span past the window is the window. */
  p99 = sedp_latency_window_quantile_span (w, 0.99, 1600000, 3, &count);
  CU_ASSERT_EQUAL (count, 100);
  CU_ASSERT (p99 >= 1000 && p99 <= 1000 * 1.125);
  sedp_latency_window_quantile_span (w, 0.99, 1600000, 99, &count);
  CU_ASSERT_EQUAL (count, 200);
  /* At 2.15 s the slices of 1.0–1.1 s are gone (the window is 1.2–2.15 s): 1 ms remains. */
  p99 = sedp_latency_window_quantile (w, 0.99, 2150000, &count);
  CU_ASSERT_EQUAL (count, 100);
  CU_ASSERT (p99 >= 1000 && p99 <= 1000 * 1.125);
  /* 2.5 s reuses the slice of 1.5 s: it starts empty (7 µs: the bucket [7, 7.5)). */
  sedp_latency_window_observe (w, 7, 2500000);
  CU_ASSERT_DOUBLE_EQUAL (sedp_latency_window_quantile (w, 1.0, 2500000, &count), 7.5, 1e-9);
  CU_ASSERT_EQUAL (count, 1);
  CU_ASSERT_DOUBLE_EQUAL (sedp_latency_window_quantile (w, 0.5, 9000000, &count), 0, 1e-9);
  CU_ASSERT_EQUAL (count, 0);
  sedp_latency_window_observe (w, -5, 9000000); /* a clock step back counts as 0 µs */
  CU_ASSERT_DOUBLE_EQUAL (sedp_latency_window_quantile (w, 1.0, 9000000, &count), 1, 1e-9);
  sedp_latency_window_free (w);
}

typedef struct {
  SedpLatencyWindow *w;
  guint n;
} Writer;

static gpointer
writer (gpointer data)
{
  Writer *x = data;
  for (guint i = 0; i < x->n; i++)
    sedp_latency_window_observe (x->w, 100 + i % 100, 3000000);
  return NULL;
}

/* Four threads at once into the same slice: no count is lost. */
static void
test_many_writers (void)
{
  SedpLatencyWindow *w = sedp_latency_window_new (20, 100000);
  sedp_latency_window_observe (w, 100, 3000000); /* the slice emptied before the race */
  Writer x = {w, g_getenv ("SEDP_VALGRIND") ? 20000 : 200000};
  GThread *t[4];
  for (guint i = 0; i < 4; i++)
    t[i] = g_thread_new ("writer", writer, &x);
  for (guint i = 0; i < 4; i++)
    g_thread_join (t[i]);
  guint64 count = 0;
  sedp_latency_window_quantile (w, 0.5, 3000000, &count);
  CU_ASSERT_EQUAL (count, 4 * (guint64) x.n + 1);
  sedp_latency_window_free (w);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("window", NULL, NULL);
  CU_add_test (s, "quantiles within an eighth of an octave", test_quantiles);
  CU_add_test (s, "slices expire", test_expiry);
  CU_add_test (s, "many writers lose nothing", test_many_writers);
  return sedp_test_run ();
}
