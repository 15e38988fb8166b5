/* sedp — Redis direct lookups per second (dim 16, one thread, batches of 1000 random present keys)
 * against a redis-server (and a 3-node Redis Cluster) that the test harness starts on loopback.
 * Not a test: run build/tests/redis/bench-redis [KEYS [SECONDS]]. Prints RESULT lines. */
#include "cube/redis/redis.h"
#include "cube/source.h"
#include "redis-harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DIM 16
#define BATCH 1000

typedef struct {
  SedpCubeSource *source;
  const guint64 *keys;
  guint n;
  gint64 until;
  gsize looked; /* atomic */
} Shared;

static gpointer
thread_run (gpointer data)
{
  Shared *sh = data;
  GRand *rand = g_rand_new ();
  guint64 ask[BATCH];
  float *out = g_new (float, BATCH * DIM);
  while (g_get_monotonic_time () < sh->until) {
    for (guint i = 0; i < BATCH; i++)
      ask[i] = sh->keys[g_rand_int_range (rand, 0, (gint32) sh->n)];
    if (sedp_cube_source_lookup (sh->source, ask, BATCH, out, NULL, NULL) != BATCH) {
      fprintf (stderr, "lookup failed\n");
      exit (1);
    }
    g_atomic_pointer_add (&sh->looked, BATCH);
  }
  g_free (out);
  g_rand_free (rand);
  return NULL;
}

static void
measure (const char *label, const char *url, const guint64 *keys, const float *values, guint n,
         double seconds)
{
  SedpRedisOptions options = {.url = url, .name = "bench", .timeout_ms = 10000};
  SedpCubeMeta meta = {.dim = DIM, .version = 1};
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  if (!sedp_redis_push_arrays (&options, &meta, keys, values, n, &error)) {
    fprintf (stderr, "push: %s\n", error->message);
    exit (1);
  }
  double push_s = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  printf ("RESULT %s_push_keys_per_s=%.0f\n", label, n / push_s);

  options.timeout_ms = 1000;
  SedpCubeSource *source = sedp_cube_source_new_redis (&options, DIM, &error);
  if (source == NULL) {
    fprintf (stderr, "open: %s\n", error->message);
    exit (1);
  }
  GRand *rand = g_rand_new_with_seed (1);
  guint64 ask[BATCH];
  float *out = g_new (float, BATCH * DIM);
  guint8 found[BATCH];
  guint64 looked = 0, batches = 0;
  gint64 until = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
  t0 = g_get_monotonic_time ();
  struct timespec c0, c1;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &c0);
  while (g_get_monotonic_time () < until) {
    for (guint i = 0; i < BATCH; i++)
      ask[i] = keys[g_rand_int_range (rand, 0, (gint32) n)];
    gint64 got = sedp_cube_source_lookup (source, ask, BATCH, out, found, &error);
    if (got != BATCH) {
      fprintf (stderr, "lookup: %" G_GINT64_FORMAT " found%s%s\n", got, error ? ": " : "",
               error ? error->message : "");
      exit (1);
    }
    looked += BATCH;
    batches++;
  }
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &c1);
  double cpu = (double) (c1.tv_sec - c0.tv_sec) + (double) (c1.tv_nsec - c0.tv_nsec) / 1e9;
  printf ("RESULT %s_lookups_per_s=%.0f\n", label, looked / secs);
  printf ("RESULT %s_client_cpu_ns_per_key=%.0f\n", label, cpu * 1e9 / looked);
  printf ("RESULT %s_batch_latency_us=%.0f\n", label, secs * 1e6 / batches);
  g_rand_free (rand);
  g_free (out);

  /* The same source from several threads at once (each takes its own pooled connections). */
  guint threads = g_getenv ("BENCH_THREADS") ? (guint) atoi (g_getenv ("BENCH_THREADS")) : 4;
  Shared shared = {.source = source, .keys = keys, .n = n,
                   .until = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC)};
  GThread **pool = g_new (GThread *, threads);
  t0 = g_get_monotonic_time ();
  for (guint i = 0; i < threads; i++)
    pool[i] = g_thread_new ("bench", thread_run, &shared);
  for (guint i = 0; i < threads; i++)
    g_thread_join (pool[i]);
  secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  printf ("RESULT %s_lookups_per_s_%uthreads=%.0f\n", label, threads,
          (double) g_atomic_pointer_get (&shared.looked) / secs);
  g_free (pool);
  sedp_cube_source_free (source);
}

int
main (int argc, char **argv)
{
  if (!redis_harness_available ()) {
    fprintf (stderr, "redis-server not installed\n");
    return 77;
  }
  guint n = argc > 1 ? (guint) atoi (argv[1]) : 200000;
  double seconds = argc > 2 ? atof (argv[2]) : 3.0;
  guint64 *keys = g_new (guint64, n);
  float *values = g_new (float, (gsize) n * DIM);
  GRand *rand = g_rand_new_with_seed (7);
  for (guint i = 0; i < n; i++) {
    keys[i] = ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);
    for (guint d = 0; d < DIM; d++)
      values[(gsize) i * DIM + d] = (float) g_rand_double (rand);
  }
  g_rand_free (rand);

  g_autoptr (GError) error = NULL;
  RedisServer *server = redis_server_new (FALSE, &error);
  if (server == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 1;
  }
  g_autofree char *url = redis_server_url (server);
  measure ("redis_direct", url, keys, values, n, seconds);
  redis_server_free (server);

  RedisCluster *cluster = redis_cluster_new (3, &error);
  if (cluster == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 1;
  }
  measure ("redis_cluster3", cluster->url, keys, values, n, seconds);
  redis_cluster_free (cluster);
  g_free (keys);
  g_free (values);
  return 0;
}
