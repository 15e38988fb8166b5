/* bench/run cube — the storage benchmark.
 *
 * 1. Cube-cache hit ratios: the cache policies simulated on synthetic traces over 10 M distinct
 *    keys (Zipf s = 0.8, 1.0, 1.2, and `jizhi`: a Zipf whose s is solved so that the hottest 1 %
 *    of the keys draw 80 % of the lookups, the shape of JiZhi's Figure 5a), at 0.1 % and 1 %
 *    capacity, next to LRU and Belady's optimum on the same trace.
 * 2. Query-cache hit ratio on a trace of repeated user-item pairs.
 * 3. Lookups per second (dim 16, one thread): local cube in memory, on disk (warm), Redis direct,
 *    Redis behind the cube cache (see the hooks below).
 *
 * Environment: SEDP_BENCH_QUICK=1 (short traces, for a smoke run), SEDP_BENCH_CUBE_ACCESSES
 * (accesses per trace), SEDP_BENCH_CUBE_KEYS (distinct keys), SEDP_BENCH_CUBE_TRACES (a comma
 * list of trace names), SEDP_BENCH_CUBE_PARAMS ("window,protected,sample,sketch,door": policy
 * parameters for tuning runs). */
#include "cube/cache/policy-private.h"
/* query cache: later */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers and traces ---- */

typedef struct {
  guint64 s[4];
} Rng;

static guint64
splitmix (guint64 *x)
{
  guint64 z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void
rng_seed (Rng *r, guint64 seed)
{
  for (guint i = 0; i < 4; i++)
    r->s[i] = splitmix (&seed);
}

/* xoshiro256** */
static inline guint64
rng_next (Rng *r)
{
  guint64 *s = r->s;
  guint64 result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
  guint64 t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = s[3] << 45 | s[3] >> 19;
  return result;
}

static inline double
rng_unit (Rng *r)
{
  return (double) (rng_next (r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline guint64
mix64 (guint64 h)
{
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

/* H(m, s) = sum_{k=1..m} k^-s: the first terms exactly, the rest by Euler–Maclaurin. */
static double
harmonic (double m, double s)
{
  const double K = 1000;
  double h = 0;
  for (double k = 1; k <= MIN (m, K); k++)
    h += pow (k, -s);
  if (m <= K)
    return h;
  double integral = fabs (s - 1) < 1e-12 ? log (m / K) : (pow (m, 1 - s) - pow (K, 1 - s)) / (1 - s);
  return h + integral + (pow (m, -s) - pow (K, -s)) / 2 + s / 12 * (pow (K, -s - 1) - pow (m, -s - 1));
}

/* The s of a Zipf over @n keys whose top @frac of keys draw @share of the accesses. */
static double
solve_zipf_s (guint64 n, double frac, double share)
{
  double lo = 0.5, hi = 2.0, top = (double) n * frac;
  for (guint i = 0; i < 60; i++) {
    double mid = (lo + hi) / 2;
    if (harmonic (top, mid) / harmonic ((double) n, mid) < share)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

/* Sampling a Zipf(s) over ranks 0..n-1 by inverting its CDF: a table of the CDF and a guide
 * table (the first rank of each 1/n-th of the unit interval), so a draw is one or two lookups. */
typedef struct {
  double *cdf;
  guint32 *guide;
  guint64 n;
} ZipfTable;

static void
zipf_init (ZipfTable *z, guint64 n, double s)
{
  z->n = n;
  z->cdf = g_new (double, n);
  double sum = 0;
  for (guint64 k = 0; k < n; k++) {
    sum += pow ((double) (k + 1), -s);
    z->cdf[k] = sum;
  }
  for (guint64 k = 0; k < n; k++)
    z->cdf[k] /= sum;
  z->cdf[n - 1] = 1.0;
  z->guide = g_new (guint32, n + 1);
  guint64 i = 0;
  for (guint64 j = 0; j <= n; j++) {
    double u = (double) j / (double) n;
    while (i < n - 1 && z->cdf[i] < u)
      i++;
    z->guide[j] = (guint32) i;
  }
}

static void
zipf_clear (ZipfTable *z)
{
  g_free (z->cdf);
  g_free (z->guide);
}

static inline guint64
zipf_draw (const ZipfTable *z, Rng *r)
{
  double u = rng_unit (r);
  guint64 i = z->guide[(guint64) (u * (double) z->n)];
  while (z->cdf[i] < u)
    i++;
  return i;
}

typedef struct {
  const char *name;
  double s;
  guint64 *keys;
  gsize n;
  guint32 *next;
  guint64 static_hits[2]; /* an oracle that holds the truly hottest 0.1 % and 1 % of the keys */
} Trace;

/* Besides the trace, counts the hits of the static oracle: accesses to the C hottest ranks,
 * less the first access of each (a compulsory miss, as for every policy). Under independent
 * references this is what an online policy can reach at best, in expectation. */
static void
trace_make (Trace *t, guint64 n_keys, gsize n, guint64 seed, const guint64 *caps)
{
  ZipfTable z;
  gint64 t0 = g_get_monotonic_time ();
  zipf_init (&z, n_keys, t->s);
  Rng r;
  rng_seed (&r, seed);
  t->keys = g_new (guint64, n);
  t->n = n;
  guint8 *seen = g_new0 (guint8, caps[1]);
  for (gsize i = 0; i < n; i++) {
    guint64 rank = zipf_draw (&z, &r);
    t->keys[i] = mix64 (rank + seed * 0x100000000ull); /* ranks → scattered keys */
    if (rank < caps[1]) {
      for (guint c = 0; c < 2; c++)
        t->static_hits[c] += rank < caps[c] && seen[rank];
      seen[rank] = 1;
    }
  }
  g_free (seen);
  double top = z.cdf[MAX (n_keys / 100, 1) - 1];
  zipf_clear (&z);
  fprintf (stderr, "bench: trace %s: Zipf s = %.4f over %" G_GUINT64_FORMAT " keys (top 1 %% of keys: %.1f %% "
           "of accesses), %zu accesses, made in %.1f s\n",
           t->name, t->s, n_keys, 100 * top, n, (double) (g_get_monotonic_time () - t0) / 1e6);
}

/* ---- policy simulations ---- */

static SedpCachePolicyParams tuned[3];
static gboolean have_tuned;

typedef struct {
  const Trace *trace;
  int kind;           /* a SedpCachePolicyKind, or -1 for Belady */
  guint64 capacity;
  double hit;
} Sim;

static void
sim_run (gpointer data, gpointer unused)
{
  Sim *s = data;
  const Trace *t = s->trace;
  if (s->kind < 0) {
    s->hit = (double) sedp_cache_belady_hits (t->next, t->n, s->capacity) / (double) t->n;
    return;
  }
  SedpCachePolicy *p = sedp_cache_policy_new_full (s->kind, s->capacity, have_tuned ? &tuned[s->kind] : NULL);
  guint64 hits = 0;
  for (gsize i = 0; i < t->n; i++)
    hits += sedp_cache_policy_access (p, t->keys[i], NULL, NULL, NULL);
  sedp_cache_policy_free (p);
  s->hit = (double) hits / (double) t->n;
}

static guint64
env_u64 (const char *name, guint64 def)
{
  const char *v = g_getenv (name);
  return v && *v ? g_ascii_strtoull (v, NULL, 10) : def;
}

/* The policy the cube cache uses by default (chosen by these numbers; docs/storage.md). */
#define CHOSEN SEDP_CACHE_TINYLFU

static void
policy_benchmark (gboolean quick)
{
  guint64 n_keys = env_u64 ("SEDP_BENCH_CUBE_KEYS", quick ? 1000000 : 10000000);
  gsize n_access = env_u64 ("SEDP_BENCH_CUBE_ACCESSES", quick ? 5000000 : 50000000);
  const char *params = g_getenv ("SEDP_BENCH_CUBE_PARAMS");
  if (params && *params) {
    double v[5] = {0.01, 0.8, 10, 4, 1};
    sscanf (params, "%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4]);
    for (guint k = 0; k < 3; k++) {
      tuned[k] = (SedpCachePolicyParams){v[0], v[1], v[2], v[3], v[4] != 0};
    }
    have_tuned = TRUE;
    fprintf (stderr, "bench: policy parameters %s\n", params);
  }
  Trace traces[] = {
      {"zipf0.8", 0.8}, {"zipf1.0", 1.0}, {"zipf1.2", 1.2}, {"jizhi", solve_zipf_s (n_keys, 0.01, 0.80)},
  };
  const char *only = g_getenv ("SEDP_BENCH_CUBE_TRACES");
  const guint64 caps[] = {n_keys / 1000, n_keys / 100};
  const char *cap_names[] = {"0.1pct", "1pct"};
  const char *kind_names[] = {"lru", "lfu", "tinylfu"};
  guint threads = MAX (g_get_num_processors (), 1);
  for (guint ti = 0; ti < G_N_ELEMENTS (traces); ti++) {
    Trace *t = &traces[ti];
    if (only && *only && !strstr (only, t->name))
      continue;
    trace_make (t, n_keys, n_access, 1000 + ti, caps);
    gint64 t0 = g_get_monotonic_time ();
    t->next = sedp_cache_belady_next_use (t->keys, t->n);
    Sim sims[G_N_ELEMENTS (caps)][4];
    GThreadPool *pool = g_thread_pool_new (sim_run, NULL, (gint) threads, TRUE, NULL);
    for (guint ci = 0; ci < G_N_ELEMENTS (caps); ci++)
      for (int k = -1; k < 3; k++) {
        sims[ci][k + 1] = (Sim){t, k, caps[ci], 0};
        g_thread_pool_push (pool, &sims[ci][k + 1], NULL);
      }
    g_thread_pool_free (pool, FALSE, TRUE);
    fprintf (stderr, "bench: trace %s simulated in %.1f s\n", t->name,
             (double) (g_get_monotonic_time () - t0) / 1e6);
    for (guint ci = 0; ci < G_N_ELEMENTS (caps); ci++) {
      double opt = sims[ci][0].hit;
      printf ("RESULT hit_%s_cap%s=%.4f\n", t->name, cap_names[ci], sims[ci][CHOSEN + 1].hit);
      for (int k = 0; k < 3; k++)
        printf ("RESULT hit_%s_cap%s_%s=%.4f\n", t->name, cap_names[ci], kind_names[k], sims[ci][k + 1].hit);
      printf ("RESULT hit_%s_cap%s_opt=%.4f\n", t->name, cap_names[ci], opt);
      printf ("RESULT hit_%s_cap%s_static=%.4f\n", t->name, cap_names[ci],
              (double) t->static_hits[ci] / (double) t->n);
      printf ("RESULT hit_%s_cap%s_of_opt=%.3f\n", t->name, cap_names[ci],
              opt > 0 ? sims[ci][CHOSEN + 1].hit / opt : 0);
      fflush (stdout);
    }
    g_free (t->keys);
    g_free (t->next);
  }
}

int
main (int argc, char **argv)
{
  gboolean quick = g_getenv ("SEDP_BENCH_QUICK") != NULL;
  const char *part = argc > 1 ? argv[1] : "all";
  if (strcmp (part, "all") == 0 || strcmp (part, "policies") == 0)
    policy_benchmark (quick);
  return 0;
}
