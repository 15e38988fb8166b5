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
#include "cube/cache/cache-private.h"
#include "cube/cache/policy-private.h"
#include "cube/cache/query-cache.h"
#include "cube/cube.h"
#include "cube/source.h"
#include "bench-common.h"
#include "redis-harness.h"

#include <glib/gstdio.h>
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

/* ---- the query cache ---- */

/* Repeated user-item pairs: requests arrive at 1 000/s (simulated time) from 100 000 users drawn
 * from a Zipf (s = 1.0); each user has a candidate pool of 200 items (what recall returns for
 * them), and each request scores 50 of them, drawn uniformly, so a returning user brings back
 * about a quarter of the pairs of its last visit. Scores are uniform in [0, 1); the cache keeps
 * scores ≥ 0.1 (admission), for 5 minutes (ttl), in 2 M entries; 1 % of requests are followed by
 * feedback that invalidates the user. */
static void
query_cache_benchmark (gboolean quick)
{
  const guint n_users = 100000, pool = 200, per_request = 50;
  const guint n_requests = quick ? 40000 : 400000;
  SedpQueryCacheOptions o = {.capacity = 2000000, .ttl_ms = 300000, .admit_min_score = 0.1, .n_scores = 1};
  SedpQueryCache *qc = sedp_query_cache_new (&o);
  ZipfTable users;
  zipf_init (&users, n_users, 1.0);
  Rng r;
  rng_seed (&r, 77);
  guint64 items[50];
  float scores[50];
  guint8 hit[50];
  gint64 t0 = g_get_monotonic_time ();
  for (guint q = 0; q < n_requests; q++) {
    gint64 now = (gint64) q * 1000; /* µs: 1 000 requests per second */
    guint64 user = zipf_draw (&users, &r);
    for (guint i = 0; i < per_request; i++)
      items[i] = mix64 (user * pool + rng_next (&r) % pool) % 1000000;
    sedp_query_cache_lookup_many (qc, user, 1, items, per_request, now, scores, hit);
    guint n_miss = 0;
    for (guint i = 0; i < per_request; i++)
      if (!hit[i]) {
        items[n_miss] = items[i];
        scores[n_miss++] = (float) rng_unit (&r); /* the model's score */
      }
    sedp_query_cache_store_many (qc, user, 1, items, n_miss, scores, now);
    if (rng_next (&r) % 100 == 0)
      sedp_query_cache_invalidate_user (qc, user);
  }
  SedpQueryCacheStats st;
  sedp_query_cache_get_stats (qc, &st);
  double secs = (double) (g_get_monotonic_time () - t0) / 1e6;
  fprintf (stderr, "bench: query cache: %u requests × %u items, %" G_GUINT64_FORMAT " entries, "
           "%" G_GUINT64_FORMAT " expired, %" G_GUINT64_FORMAT " refused, %" G_GUINT64_FORMAT
           " invalidated, %.1f s\n", n_requests, per_request, st.entries, st.expired, st.rejected,
           st.invalidated, secs);
  printf ("RESULT query_cache_hit=%.4f\n", (double) st.hits / (double) st.lookups);
  printf ("RESULT query_cache_ops_per_s=%.0f\n", (double) (st.lookups + st.stores) / secs);
  fflush (stdout);
  zipf_clear (&users);
  sedp_query_cache_unref (qc);
}

/* ---- lookups per second ---- */

#define LDIM 16
#define LBATCH 1000
#define NBATCHES 512

/* Batches of keys drawn from @z over @keys (uniform when @z is NULL). */
static guint64 *
make_batches (const guint64 *keys, guint64 n_keys, const ZipfTable *z, guint64 seed)
{
  Rng r;
  rng_seed (&r, seed);
  guint64 *b = g_new (guint64, (gsize) NBATCHES * LBATCH);
  for (gsize i = 0; i < (gsize) NBATCHES * LBATCH; i++)
    b[i] = keys[z ? zipf_draw (z, &r) : rng_next (&r) % n_keys];
  return b;
}

/* Lookups per second of one thread on @s, in calls of @batch keys, for @seconds. */
static double
lookups_per_s_batch (SedpCubeSource *s, const guint64 *batches, guint batch, double seconds)
{
  float *out = g_new (float, LBATCH * LDIM);
  guint8 found[LBATCH];
  guint64 done = 0, missing = 0, calls = 0;
  gint64 t0 = g_get_monotonic_time (), end = t0 + (gint64) (seconds * 1e6), now;
  for (gsize at = 0;; at = (at + batch) % ((gsize) NBATCHES * LBATCH)) {
    g_autoptr (GError) error = NULL;
    gint64 got = sedp_cube_source_lookup (s, batches + at, batch, out, found, &error);
    if (got < 0) {
      fprintf (stderr, "bench: lookup failed: %s\n", error->message);
      exit (1);
    }
    missing += batch - (guint64) got;
    done += batch;
    if (++calls % 8 == 0 && (now = g_get_monotonic_time ()) >= end)
      break;
  }
  g_free (out);
  if (missing)
    fprintf (stderr, "bench: %" G_GUINT64_FORMAT " keys missing\n", missing);
  return (double) done / ((double) (now - t0) / 1e6);
}

static double
lookups_per_s (SedpCubeSource *s, const guint64 *batches, double seconds)
{
  return lookups_per_s_batch (s, batches, LBATCH, seconds);
}

typedef struct {
  SedpCubeSource *s;
  const guint64 *batches;
  double seconds;
  double rate;
} Job;

static gpointer
job_run (gpointer data)
{
  Job *j = data;
  j->rate = lookups_per_s (j->s, j->batches, j->seconds);
  return NULL;
}

static double
threads_lookups_per_s (SedpCubeSource *s, guint n_threads, const guint64 *const *batches, double seconds)
{
  Job jobs[n_threads];
  GThread *t[n_threads];
  for (guint i = 0; i < n_threads; i++) {
    jobs[i] = (Job){s, batches[i], seconds, 0};
    t[i] = g_thread_new ("lookup", job_run, &jobs[i]);
  }
  double total = 0;
  for (guint i = 0; i < n_threads; i++) {
    g_thread_join (t[i]);
    total += jobs[i].rate;
  }
  return total;
}

/* The value of the "NAME VALUE" line @name of a source's stats. */
static guint64
stat_line (const GString *stats, const char *name)
{
  g_autofree char *needle = g_strdup_printf ("%s ", name);
  for (const char *p = stats->str; p && *p; p = strchr (p, '\n') ? strchr (p, '\n') + 1 : NULL)
    if (g_str_has_prefix (p, needle))
      return g_ascii_strtoull (p + strlen (needle), NULL, 10);
  return 0;
}

static void
rm_rf (const char *path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d))) {
      g_autofree char *child = g_build_filename (path, name, NULL);
      rm_rf (child);
    }
    g_dir_close (d);
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

static void
lookup_benchmark (gboolean quick)
{
  const guint64 n_keys = quick ? 100000 : 1000000;
  const double secs = quick ? 0.3 : 2.0;
  g_autoptr (GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-bench-cube-XXXXXX", &error);
  g_autofree char *dir = g_build_filename (tmp, "cube", NULL);

  /* A cube of n_keys random signatures, dim 16. */
  gint64 t0 = g_get_monotonic_time ();
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, "bench", LDIM, NULL, 0, &error);
  guint64 *keys = g_new (guint64, n_keys);
  float v[LDIM];
  for (guint64 i = 0; b && i < n_keys; i++) {
    keys[i] = mix64 (i ^ 0xABCDEF);
    for (guint j = 0; j < LDIM; j++)
      v[j] = (float) (i % 1000) * 0.001f + (float) j;
    if (!sedp_cube_builder_add (b, keys[i], v, &error))
      break;
  }
  if (b == NULL || error || !sedp_cube_builder_finish (b, &error)) {
    fprintf (stderr, "bench: cannot build the cube: %s\n", error->message);
    exit (1);
  }
  fprintf (stderr, "bench: cube of %" G_GUINT64_FORMAT " keys (dim %d) built in %.1f s\n", n_keys,
           LDIM, (double) (g_get_monotonic_time () - t0) / 1e6);
  g_autofree guint64 *uniform = make_batches (keys, n_keys, NULL, 1);
  ZipfTable z;
  zipf_init (&z, n_keys, solve_zipf_s (n_keys, 0.01, 0.80)); /* the jizhi shape */
  g_autofree guint64 *skewed = make_batches (keys, n_keys, &z, 2);

  /* Local cube, values in memory, then on disk (warm: one pass first). */
  SedpCube *cube = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
  SedpCubeSource *local = cube ? sedp_cube_source_new_local (cube) : NULL;
  if (local == NULL) {
    fprintf (stderr, "bench: %s\n", error->message);
    exit (1);
  }
  double mem_rate = lookups_per_s (local, uniform, secs);
  printf ("RESULT local_memory_lookups_per_s=%.0f\n", mem_rate);
  fflush (stdout);
  SedpCube *dcube = sedp_cube_open (dir, SEDP_CUBE_VALUES_DISK, &error);
  SedpCubeSource *disk = dcube ? sedp_cube_source_new_local (dcube) : NULL;
  if (disk) {
    lookups_per_s (disk, uniform, secs / 2); /* warm the page cache */
    printf ("RESULT local_disk_lookups_per_s=%.0f\n", lookups_per_s (disk, uniform, secs));
    sedp_cube_source_free (disk);
  }
  fflush (stdout);

  /* The cube cache's memory tier alone: every key resident (a working set of 50 000 keys), one
   * thread calling (so one shard). */
  SedpCubeCacheOptions co = {.memory_entries = 65536, .policy = "tinylfu", .threads = 1};
  SedpCubeSource *front = sedp_cube_source_new_cached (local, &co, &error); /* takes local */
  local = NULL;
  g_autofree guint64 *resident = make_batches (keys, 50000, NULL, 3);
  lookups_per_s (front, resident, secs / 2);
  double tier_rate = lookups_per_s (front, resident, secs);
  printf ("RESULT cache_memory_tier_lookups_per_s=%.0f\n", tier_rate);
  if (g_getenv ("TIERONLY")) {
    double A[40], B[40], r[40];
    for (int i = 0; i < 40; i++) {
      g_setenv ("ABL", "1", TRUE);
      A[i] = lookups_per_s (front, resident, 0.25) / 1e6;
      g_unsetenv ("ABL");
      B[i] = lookups_per_s (front, resident, 0.25) / 1e6;
      r[i] = B[i] / A[i];
    }
    printf ("TIER old %.1f new %.1f ratio-median %.3f\n", bench_quantile (A, 40, 0.5), bench_quantile (B, 40, 0.5), bench_quantile (r, 40, 0.5));
    exit (0);
  }
  fflush (stdout);

  /* Contention: four threads on a cache in front of the local cube (memory 1 %, jizhi keys),
   * one shard (one lock per tier) against several. */
  for (guint shards = 1; shards <= 16; shards *= 4) {
    SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
    SedpCubeCacheOptions o4 = {.memory_entries = n_keys / 100, .policy = "tinylfu"};
    SedpCubeSource *s = sedp_cube_source_new_cached_sharded (sedp_cube_source_new_local (c), &o4, shards, &error);
    guint64 *per[4];
    for (guint i = 0; i < 4; i++)
      per[i] = make_batches (keys, n_keys, &z, 10 + i);
    threads_lookups_per_s (s, 4, (const guint64 *const *) per, secs / 4);
    printf ("RESULT cache_4threads_lookups_per_s_%ushard%s=%.0f\n", shards, shards > 1 ? "s" : "",
            threads_lookups_per_s (s, 4, (const guint64 *const *) per, secs));
    fflush (stdout);
    for (guint i = 0; i < 4; i++)
      g_free (per[i]);
    sedp_cube_source_free (s);
  }

  /* Redis: a redis-server on a free loopback port, started here as the tests do. */
  if (!redis_harness_available ()) {
    fprintf (stderr, "bench: redis-server not found: no Redis figures\n");
  } else {
    RedisServer *server = redis_server_new (FALSE, &error);
    if (server == NULL) {
      fprintf (stderr, "bench: cannot start redis-server: %s\n", error->message);
      exit (1);
    }
    g_autofree char *url = redis_server_url (server);
    SedpRedisOptions ro = {.url = url, .name = "bench", .timeout_ms = 10000};
    t0 = g_get_monotonic_time ();
    SedpCube *pc = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
    if (pc == NULL || !sedp_cube_push (pc, &ro, &error)) {
      fprintf (stderr, "bench: push: %s\n", error->message);
      exit (1);
    }
    sedp_cube_close (pc);
    fprintf (stderr, "bench: cube pushed to %s in %.1f s\n", url, (double) (g_get_monotonic_time () - t0) / 1e6);
    SedpCubeSource *redis = sedp_cube_source_new_redis (&ro, LDIM, &error);
    if (redis == NULL) {
      fprintf (stderr, "bench: %s\n", error->message);
      exit (1);
    }
    /* The memory tier against Redis direct in interleaved rounds, each ratio within one round,
     * reported as the median: the shared machine's speed drifts by tens of percent within a
     * minute, which a single measurement of each would take for a difference between them. */
    const guint rounds = quick ? 3 : 7;
    const double round_s = quick ? 0.2 : 1.0;
    double tiers[7], remotes[7], ratios[7];
    g_autoptr (GString) list = g_string_new (NULL);
    lookups_per_s (redis, uniform, round_s / 2);
    for (guint r = 0; r < rounds; r++) {
      tiers[r] = lookups_per_s (front, resident, round_s);
      remotes[r] = lookups_per_s (redis, uniform, round_s);
      ratios[r] = tiers[r] / remotes[r];
      g_string_append_printf (list, "%s%.1f", r ? "," : "", ratios[r]);
    }
    double redis_rate = bench_quantile (remotes, rounds, 0.5);
    double tier_median = bench_quantile (tiers, rounds, 0.5);
    double ratio = bench_quantile (ratios, rounds, 0.5);
    g_clear_pointer (&front, sedp_cube_source_free);
    printf ("RESULT redis_direct_lookups_per_s=%.0f\n", redis_rate);
    /* For scale: one key per call (a round trip each), as a client without batching does. */
    double single_rate = lookups_per_s_batch (redis, uniform, 1, secs / 2);
    printf ("RESULT redis_direct_single_key_lookups_per_s=%.0f\n", single_rate);
    fflush (stdout);
    /* Behind the cube cache: memory tier 0.1 %, disk tier 1 %, jizhi-shaped keys, warmed up. */
    g_autofree char *disk_path = g_build_filename (tmp, "tier.cache", NULL);
    SedpCubeCacheOptions rc = {.memory_entries = n_keys / 1000, .disk_entries = n_keys / 100,
                               .disk_path = disk_path, .policy = "tinylfu", .threads = 1};
    SedpCubeSource *cached = sedp_cube_source_new_cached (redis, &rc, &error);
    if (cached == NULL) {
      fprintf (stderr, "bench: %s\n", error->message);
      exit (1);
    }
    lookups_per_s (cached, skewed, secs);
    g_autoptr (GString) before = g_string_new (NULL);
    sedp_cube_source_stats (cached, before);
    double cached_rate = lookups_per_s (cached, skewed, secs);
    g_autoptr (GString) after = g_string_new (NULL);
    sedp_cube_source_stats (cached, after);
    printf ("RESULT redis_cached_lookups_per_s=%.0f\n", cached_rate);
    guint64 k0 = stat_line (before, "cache_keys_total"), k1 = stat_line (after, "cache_keys_total");
    guint64 m0 = stat_line (before, "cache_memory_hits_total"), m1 = stat_line (after, "cache_memory_hits_total");
    guint64 d0 = stat_line (before, "cache_disk_hits_total"), d1 = stat_line (after, "cache_disk_hits_total");
    printf ("RESULT redis_cached_memory_hit=%.4f\n", (double) (m1 - m0) / (double) MAX (k1 - k0, 1));
    printf ("RESULT redis_cached_disk_hit=%.4f\n", (double) (d1 - d0) / (double) MAX (k1 - k0, 1));
    printf ("RESULT redis_cached_over_direct=%.2f\n", cached_rate / redis_rate);
    printf ("RESULT memory_over_redis=%.1f\n", ratio);
    printf ("RESULT memory_over_redis_rounds=%s\n", list->str);
    printf ("RESULT memory_over_redis_single_key=%.0f\n", tier_median / single_rate);
    printf ("RESULT local_memory_over_redis=%.1f\n", mem_rate / redis_rate);
    fflush (stdout);
    sedp_cube_source_free (cached);
    redis_server_free (server);
  }
  g_clear_pointer (&front, sedp_cube_source_free);
  zipf_clear (&z);
  g_free (keys);
  rm_rf (tmp);
}

int
main (int argc, char **argv)
{
  gboolean quick = g_getenv ("SEDP_BENCH_QUICK") != NULL;
  const char *part = argc > 1 ? argv[1] : "all";
  gboolean all = strcmp (part, "all") == 0;
  if (all || strcmp (part, "lookups") == 0)
    lookup_benchmark (quick);
  if (all || strcmp (part, "query") == 0)
    query_cache_benchmark (quick);
  if (all || strcmp (part, "policies") == 0)
    policy_benchmark (quick);
  return 0;
}
