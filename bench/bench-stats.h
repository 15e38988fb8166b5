/* sedp benchmarks — quantiles, and how far a latency quantile measured over a window can be
 * trusted. */
#pragma once

#include <glib.h>
#include <math.h>
#include <stdlib.h>

/* One latency sample and when it was due (seconds from the run's start). */
typedef struct {
  double t;
  double ms;
} BenchTimed;

/* qsort()'s comparison of doubles, ascending. */
static inline int
bench_cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The @q quantile of @n values: the value at index round (@q × (@n − 1)) once sorted (sorts
 * them); 0 when none. */
static inline double
bench_quantile (double *v, guint n, double q)
{
  if (n == 0)
    return 0;
  qsort (v, n, sizeof (double), bench_cmp_double);
  guint i = (guint) (q * (n - 1) + 0.5);
  return v[MIN (i, n - 1)];
}

/* The @q quantile (nearest rank: the ceil (@q × @n)-th smallest) of @n values of @v, sorted
 * in place; 0 when none. */
static inline double
bench_quantile_rank (double *v, guint n, double q)
{
  if (n == 0)
    return 0;
  qsort (v, n, sizeof *v, bench_cmp_double);
  guint rank = (guint) ceil (q * n);
  return v[MAX (rank, 1) - 1];
}

/* One block-bootstrap draw of the @q quantile of a window's samples @w cut in @n_blocks
 * blocks at @start: as many blocks as the window holds, each drawn with replacement, their
 * samples pooled. @buf holds @n_blocks times the largest block. */
static double
bench_stats_block_draw (const BenchTimed *w, guint n_blocks, const guint *start, double q,
                        GRand *rand, double *buf)
{
  guint m = 0;
  for (guint b = 0; b < n_blocks; b++) {
    guint k = (guint) g_rand_int_range (rand, 0, (gint32) n_blocks);
    for (guint i = start[k]; i < start[k + 1]; i++)
      buf[m++] = w[i].ms;
  }
  return bench_quantile_rank (buf, m, q);
}

/* The largest block of @n_blocks at @start, times @n_blocks: what a draw may hold. */
static gsize
bench_stats_draw_size (const guint *start, guint n_blocks)
{
  guint most = 0;
  for (guint b = 0; b < n_blocks; b++)
    most = MAX (most, start[b + 1] - start[b]);
  return (gsize) most * n_blocks;
}

/* Where each block of @block_s seconds of @w (@n samples sorted by t) starts: @n_blocks + 1
 * offsets, the last @n. */
static guint *
bench_stats_blocks (const BenchTimed *w, guint n, double block_s, guint *n_blocks)
{
  double t0 = n ? w[0].t : 0;
  guint nb = n ? (guint) floor ((w[n - 1].t - t0) / block_s) + 1 : 0;
  guint *start = g_new0 (guint, nb + 1);
  for (guint b = 0, i = 0; b <= nb; b++) {
    while (i < n && w[i].t < t0 + b * block_s)
      i++;
    start[b] = i;
  }
  start[nb] = n;
  *n_blocks = nb;
  return start;
}

/**
 * bench_stats_quantile_change_ci:
 * @a: the first window's samples, sorted by t; @na of them
 * @b: the second window's, sorted by t; @nb of them
 * @q: the quantile (0.99 for the p99)
 * @block_s: the block length: latencies a little apart in time are alike (a queue builds and
 *   drains), so blocks of this many seconds are drawn whole, not single samples
 * @rounds: bootstrap draws (2000 is plenty)
 * @seed: the draws' seed (the same data and seed give the same interval)
 * @lo, @hi: (out): the 5 % and 95 % points of the signed change `(qb − qa) / qa`
 *
 * A 90 % interval for the change of a quantile between two windows, by a block bootstrap of
 * each window: what the two windows' own sampling spread allows, with nothing else changed. A
 * change whose interval holds 0 cannot be told from that spread. Either window empty: both 0.
 */
static inline void
bench_stats_quantile_change_ci (const BenchTimed *a, guint na, const BenchTimed *b, guint nb,
                                double q, double block_s, guint rounds, guint32 seed,
                                double *lo, double *hi)
{
  *lo = *hi = 0;
  if (na == 0 || nb == 0 || rounds == 0)
    return;
  guint ba, bb;
  g_autofree guint *sa = bench_stats_blocks (a, na, block_s, &ba);
  g_autofree guint *sb = bench_stats_blocks (b, nb, block_s, &bb);
  g_autofree double *buf = g_new (double, MAX (bench_stats_draw_size (sa, ba),
                                               bench_stats_draw_size (sb, bb)));
  g_autofree double *change = g_new (double, rounds);
  GRand *rand = g_rand_new_with_seed (seed);
  guint k = 0;
  for (guint r = 0; r < rounds; r++) {
    double qa = bench_stats_block_draw (a, ba, sa, q, rand, buf);
    double qb = bench_stats_block_draw (b, bb, sb, q, rand, buf);
    if (qa > 0)
      change[k++] = (qb - qa) / qa;
  }
  g_rand_free (rand);
  if (k == 0)
    return;
  qsort (change, k, sizeof *change, bench_cmp_double);
  *lo = change[(guint) floor (0.05 * (k - 1))];
  *hi = change[(guint) ceil (0.95 * (k - 1))];
}
