/* The `streams = auto` controller (core/nn/ocl/ocl-auto.c; docs/opencl.md §5.3, §9.3) without a
 * device: runs complete at the rate a synthetic throughput curve gives for the concurrency and
 * the stream count in use (with ±1 % noise), and the controller must settle on the curve's best
 * count per concurrency bucket, keep the fewest streams among rates within 2 %, not flap under a
 * gauge that moves within a bucket or alternates between two, answer a shift back to a known
 * bucket from its table, restart an exploration that a second shift interrupts, learn from a
 * start profile and explore a stale entry again. The expected counts are the curves' maxima,
 * written by hand. */
#include "../common/test-common.h"

#include "nn/ocl/ocl-auto.h"

#include <math.h>

/* Runs per second at concurrency c with s streams. */
typedef double (*Curve) (guint c, guint s);

/* One queue is best at every concurrency (PoCL's CPU device, docs/opencl.md §1). */
static double
curve_one (guint c, guint s)
{
  (void) c;
  return 1000.0 / (1.0 + 0.08 * (s - 1));
}

/* More streams help up to min(c, 4); past 4 each pair of streams loses 5 % (mxRec's remark). */
static double
curve_four (guint c, guint s)
{
  static const double gain[9] = {0, 1000, 1500, 1800, 2000, 0, 2050, 0, 2100};
  guint useful = MIN (MIN (s, c), 4);
  double r = gain[useful == 0 ? 1 : useful];
  if (useful == 4 && c >= 4 && s >= 4)
    r = 2000;
  return s > 4 ? r * (1.0 - 0.05 * (s - 4) / 2.0) : r;
}

static double
curve_flat (guint c, guint s)
{
  (void) c, (void) s;
  return 1000.0;
}

typedef struct {
  NnAuto *a;
  Curve f;
  gint64 now;
  GRand *rng;
  guint streams;
} Sim;

static void
sim_init (Sim *s, Curve f, guint concurrency)
{
  s->a = nn_auto_new (1, concurrency);
  s->f = f;
  s->now = 1000000;
  s->rng = g_rand_new_with_seed (17);
  s->streams = 1;
}

static void
sim_clear (Sim *s)
{
  nn_auto_free (s->a);
  g_rand_free (s->rng);
}

/* @seconds of runs at concurrency @c (the gauge @c2 on odd windows when nonzero). */
static void
sim_run (Sim *s, guint c, guint c2, double seconds)
{
  gint64 end = s->now + (gint64) (seconds * G_USEC_PER_SEC);
  while (s->now < end) {
    guint cc = c2 && (s->now / NN_AUTO_WINDOW_US) % 2 ? c2 : c;
    double rate = s->f (cc, s->streams) * (1.0 + g_rand_double_range (s->rng, -0.01, 0.01));
    s->now += (gint64) (G_USEC_PER_SEC / rate);
    s->streams = nn_auto_observe (s->a, s->now, cc, 64);
  }
}

static void
test_choose (void)
{
  CU_ASSERT_EQUAL (nn_auto_choose ((const double[]){100, 101, 99, 50, 40, 30}), 0);
  CU_ASSERT_EQUAL (nn_auto_choose ((const double[]){100, 110, 120, 130, 129, 100}), 3);
  CU_ASSERT_EQUAL (nn_auto_choose ((const double[]){100, 110, 128, 130, 131, 100}), 3);
  CU_ASSERT_EQUAL (nn_auto_choose ((const double[]){100, 110, 129, 130, 131, 100}), 2);
  CU_ASSERT_EQUAL (nn_auto_choose ((const double[]){-1, -1, 5, 6, -1, -1}), 3);
  CU_ASSERT_EQUAL (nn_auto_bucket (1), 0);
  CU_ASSERT_EQUAL (nn_auto_bucket (4), 2);
  CU_ASSERT_EQUAL (nn_auto_bucket (5), 3);
  CU_ASSERT_EQUAL (nn_auto_bucket (16), 4);
  CU_ASSERT_EQUAL (nn_auto_bucket (17), 5);
}

/* Steady concurrency 4 on each curve: the best count, then no change for 30 s. */
static void
test_steady (void)
{
  const struct {
    Curve f;
    guint c, want;
  } cases[] = {{curve_one, 4, 1}, {curve_four, 4, 4}, {curve_four, 16, 4}, {curve_flat, 8, 1},
               {curve_four, 2, 2}};
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    Sim s;
    sim_init (&s, cases[i].f, cases[i].c);
    sim_run (&s, cases[i].c, 0, 5);
    CU_ASSERT_FALSE (nn_auto_exploring (s.a));
    CU_ASSERT_EQUAL (s.streams, cases[i].want);
    guint changes = nn_auto_changes (s.a);
    sim_run (&s, cases[i].c, 0, 30);
    CU_ASSERT_EQUAL (nn_auto_changes (s.a), changes); /* no flapping */
    CU_ASSERT_EQUAL (s.streams, cases[i].want);
    sim_clear (&s);
  }
}

/* 1 → 16 → 1 → 16: each bucket explored once, then answered from the table. */
static void
test_shifts (void)
{
  Sim s;
  sim_init (&s, curve_four, 1);
  sim_run (&s, 1, 0, 5);
  CU_ASSERT_EQUAL (s.streams, 1);
  sim_run (&s, 16, 0, 5);
  CU_ASSERT_EQUAL (s.streams, 4);
  CU_ASSERT_EQUAL (nn_auto_table (s.a, nn_auto_bucket (16)), 4);
  guint changes = nn_auto_changes (s.a);
  sim_run (&s, 1, 0, 3);
  CU_ASSERT_EQUAL (s.streams, 1);
  sim_run (&s, 16, 0, 3);
  CU_ASSERT_EQUAL (s.streams, 4);
  CU_ASSERT_EQUAL (nn_auto_changes (s.a), changes + 2); /* two table answers, no exploration */
  sim_clear (&s);
}

/* A gauge moving within a bucket (3, 4), or alternating between two buckets window by window
 * (2, 4): no shift. */
static void
test_no_flap (void)
{
  Sim s;
  sim_init (&s, curve_four, 4);
  sim_run (&s, 4, 0, 5);
  CU_ASSERT_EQUAL (s.streams, 4);
  guint changes = nn_auto_changes (s.a);
  sim_run (&s, 3, 4, 10);
  CU_ASSERT_EQUAL (nn_auto_changes (s.a), changes);
  CU_ASSERT_EQUAL (nn_auto_current_bucket (s.a), nn_auto_bucket (4));
  sim_clear (&s);
}

/* A shift in the middle of an exploration restarts it for the new bucket (one window suffices:
 * what the exploration measured no longer holds). */
static void
test_shift_during_exploration (void)
{
  Sim s;
  sim_init (&s, curve_four, 1);
  sim_run (&s, 1, 0, 5);
  sim_run (&s, 16, 0, 0.6); /* two windows to see the shift, then part of the exploration */
  CU_ASSERT_TRUE (nn_auto_exploring (s.a));
  sim_run (&s, 2, 0, 5);
  CU_ASSERT_FALSE (nn_auto_exploring (s.a));
  CU_ASSERT_EQUAL (s.streams, 2);
  CU_ASSERT_EQUAL (nn_auto_current_bucket (s.a), nn_auto_bucket (2));
  CU_ASSERT_EQUAL (nn_auto_table (s.a, nn_auto_bucket (16)), 0); /* never finished */
  sim_clear (&s);
}

/* A start profile is used at once; after NN_AUTO_STALE_US its entry is explored again. */
static void
test_learn_and_stale (void)
{
  Sim s;
  sim_init (&s, curve_four, 16);
  double rates[NN_AUTO_N_CANDIDATES];
  for (guint k = 0; k < NN_AUTO_N_CANDIDATES; k++)
    rates[k] = curve_four (16, nn_auto_candidates[k]);
  s.streams = nn_auto_learn (s.a, 16, rates, s.now);
  CU_ASSERT_EQUAL (s.streams, 4);
  sim_run (&s, 16, 0, 2);
  CU_ASSERT_FALSE (nn_auto_exploring (s.a));
  CU_ASSERT_EQUAL (nn_auto_changes (s.a), 1);
  s.now += NN_AUTO_STALE_US;
  sim_run (&s, 16, 0, 0.3);
  CU_ASSERT_TRUE (nn_auto_exploring (s.a));
  sim_run (&s, 16, 0, 3);
  CU_ASSERT_EQUAL (s.streams, 4);
  sim_clear (&s);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ocl-auto", NULL, NULL);
  CU_add_test (s, "the choice rule and the buckets", test_choose);
  CU_add_test (s, "steady concurrency: the best count, no flapping", test_steady);
  CU_add_test (s, "shifts: explored once, then from the table", test_shifts);
  CU_add_test (s, "a gauge within a bucket or alternating: no shift", test_no_flap);
  CU_add_test (s, "a shift during an exploration restarts it", test_shift_during_exploration);
  CU_add_test (s, "a start profile, then a stale entry", test_learn_and_stale);
  return sedp_test_run ();
}
