/* sedp tests — the Redis backend against real redis-server processes started by the harness: one
 * server (push, lookups, malformed values, bad metadata, a slow server, a killed and restarted
 * server, concurrent lookups) and a 3-node Redis Cluster (key slots, routing over every node, MOVED
 * and ASK during a slot migration, a node down). Fails when redis-server is not
 * installed (skips, 77, with SEDP_ALLOW_SKIP=1). */
#include "test-common.h"

#include "cube/cube.h"
#include "cube/redis/redis.h"
#include "cube/source.h"
#include "redis-harness.h"

#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIM 16
#define N_KEYS 3000

/* Slower machines (valgrind) get wider deadlines. */
static guint slow = 1;

static guint64 keys[N_KEYS];
static float values[N_KEYS * DIM];
static guint64 absent[N_KEYS];

static void
make_data (void)
{
  GRand *rand = g_rand_new_with_seed (42);
  for (guint i = 0; i < N_KEYS; i++) {
    keys[i] = ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);
    absent[i] = ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand);
    for (guint d = 0; d < DIM; d++)
      values[i * DIM + d] = (float) i + (float) d / 100.0f;
  }
  g_rand_free (rand);
}

static SedpCubeMeta
test_meta (void)
{
  SedpCubeMeta meta = {.dim = DIM, .version = 7, .created = 1700000000};
  for (guint i = 0; i < SEDP_CUBE_HASH_KEY_BYTES; i++)
    meta.hash_key[i] = (guint8) (i * 17);
  return meta;
}

static gint64
elapsed_ms (gint64 since)
{
  return (g_get_monotonic_time () - since) / 1000;
}

/* A counter from the source's stats ("name value" lines). */
static guint64
counter (SedpCubeSource *source, const char *name)
{
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_cube_source_stats (source, out);
  g_auto (GStrv) lines = g_strsplit (out->str, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    gsize len = strlen (name);
    if (strncmp (lines[i], name, len) == 0 && lines[i][len] == ' ')
      return g_ascii_strtoull (lines[i] + len + 1, NULL, 10);
  }
  fprintf (stderr, "\n  no counter %s in:\n%s", name, out->str);
  CU_FAIL ("counter missing");
  return 0;
}

static SedpCubeSource *
open_source (const char *url, const char *name, guint timeout_ms, guint reconnect_ms)
{
  SedpRedisOptions options = {.url = url, .name = name, .timeout_ms = timeout_ms,
                              .reconnect_ms = reconnect_ms};
  g_autoptr (GError) error = NULL;
  SedpCubeSource *source = sedp_cube_source_new_redis (&options, DIM, &error);
  if (source == NULL)
    fprintf (stderr, "\n  cannot open %s on %s: %s\n", name, url, error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (source);
  return source;
}

static gboolean
push (const char *url, const char *name, guint n)
{
  SedpRedisOptions options = {.url = url, .name = name, .timeout_ms = 2000 * slow};
  SedpCubeMeta meta = test_meta ();
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_redis_push_arrays (&options, &meta, keys, values, n, &error);
  if (!ok)
    fprintf (stderr, "\n  push %s to %s: %s\n", name, url, error->message);
  return ok;
}

/* Looks up keys[first … first+n) and checks every value; returns the keys found. */
static gint64
check_lookup (SedpCubeSource *source, guint first, guint n)
{
  float *out = g_new (float, (gsize) n * DIM);
  guint8 *found = g_new (guint8, n);
  g_autoptr (GError) error = NULL;
  gint64 got = sedp_cube_source_lookup (source, keys + first, n, out, found, &error);
  if (got < 0)
    fprintf (stderr, "\n  lookup: %s\n", error->message);
  for (guint i = 0; got >= 0 && i < n; i++) {
    CU_ASSERT_EQUAL (found[i], 1);
    if (found[i])
      CU_ASSERT_EQUAL (memcmp (out + (gsize) i * DIM, values + (gsize) (first + i) * DIM,
                               DIM * sizeof (float)), 0);
  }
  g_free (out);
  g_free (found);
  return got;
}

static char *
key_string (const char *name, guint64 key)
{
  return g_strdup_printf ("%s:%016" G_GINT64_MODIFIER "x", name, key);
}

/* ---- URLs and names (no server) ---- */

static void
test_bad_urls (void)
{
  const char *bad[] = {
    "",
    "http://127.0.0.1:6379",
    "redis://",
    "redis://127.0.0.1:0",
    "redis://127.0.0.1:65536",
    "redis://127.0.0.1:99999999999",
    "redis://127.0.0.1:abc",
    "redis://127.0.0.1:",
    "redis://:6379",
    "redis://user:pw@127.0.0.1:6379",
    "redis://127.0.0.1:6379/0",
    "redis://127.0.0.1:6379,127.0.0.1:6380",
    "redis://::1:6379",
    "redis://[::1:6379",
    "redis://[]:6379",
    "redis://host name:6379",
    "redis+cluster://",
    "redis+cluster://127.0.0.1:7000,,127.0.0.1:7001",
    "redis+cluster://127.0.0.1:7000,",
    "rediss://127.0.0.1:6379",
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    SedpRedisOptions options = {.url = bad[i], .name = "cube", .timeout_ms = 100};
    g_autoptr (GError) error = NULL;
    SedpCubeSource *source = sedp_cube_source_new_redis (&options, 0, &error);
    CU_ASSERT_PTR_NULL (source);
    if (source) {
      fprintf (stderr, "\n  accepted '%s'\n", bad[i]);
      sedp_cube_source_free (source);
      continue;
    }
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "bad Redis URL", bad[i]);
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_INVALID);

    SedpCubeMeta meta = test_meta ();
    g_clear_error (&error);
    CU_ASSERT_FALSE (sedp_redis_push_arrays (&options, &meta, keys, values, 1, &error));
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, bad[i]);
  }
  SedpRedisOptions null_url = {.name = "cube"};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&null_url, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "bad Redis URL");

  const char *bad_names[] = {"", "a b", "tab\tname", "\x01"};
  for (guint i = 0; i < G_N_ELEMENTS (bad_names); i++) {
    SedpRedisOptions options = {.url = "redis://127.0.0.1:1", .name = bad_names[i]};
    g_clear_error (&error);
    CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "name");
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_INVALID);
  }
}

/* Nothing listening: UNAVAILABLE at once, naming the address. */
static void
test_unreachable (void)
{
  const char *urls[] = {"redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1,127.0.0.1:2"};
  for (guint i = 0; i < G_N_ELEMENTS (urls); i++) {
    SedpRedisOptions options = {.url = urls[i], .name = "cube", .timeout_ms = 500};
    g_autoptr (GError) error = NULL;
    gint64 t0 = g_get_monotonic_time ();
    CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
    CU_ASSERT (elapsed_ms (t0) < 1500 * slow);
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "127.0.0.1:1");
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);

    SedpCubeMeta meta = test_meta ();
    g_clear_error (&error);
    CU_ASSERT_FALSE (sedp_redis_push_arrays (&options, &meta, keys, values, 10, &error));
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "127.0.0.1:1");
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);
  }
}

static void
test_key_slot_vectors (void)
{
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("123456789", 9), 12739);
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("{user1000}.following", 20),
                   sedp_redis_key_slot ("{user1000}.followers", 20));
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("{user1000}.following", 20),
                   sedp_redis_key_slot ("user1000", 8));
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("foo{}{bar}", 10) ,
                   sedp_redis_key_slot ("foo{}{bar}", 10));
  CU_ASSERT_NOT_EQUAL (sedp_redis_key_slot ("foo{}{bar}", 10), sedp_redis_key_slot ("bar", 3));
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("foo{{bar}}zap", 13), sedp_redis_key_slot ("{bar", 4));
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("foo{bar}{zap}", 13), sedp_redis_key_slot ("bar", 3));
  CU_ASSERT_EQUAL (sedp_redis_key_slot ("", 0), 0);
}

/* ---- one server ---- */

static RedisServer *single;
static char *single_url;

static int
single_init (void)
{
  g_autoptr (GError) error = NULL;
  single = redis_server_new (FALSE, &error);
  if (single == NULL) {
    fprintf (stderr, "\n  cannot start redis-server: %s\n", error->message);
    return 1;
  }
  single_url = redis_server_url (single);
  return push (single_url, "t", N_KEYS) ? 0 : 1;
}

static int
single_clean (void)
{
  redis_server_free (single);
  g_free (single_url);
  return 0;
}

static void
test_single_lookup (void)
{
  SedpCubeSource *source = open_source (single_url, "t", 1000 * slow, 200);
  CU_ASSERT_EQUAL (source->dim, DIM);
  const SedpCubeMeta *meta = sedp_cube_source_redis_get_meta (source);
  CU_ASSERT_PTR_NOT_NULL_FATAL (meta);
  SedpCubeMeta expect = test_meta ();
  CU_ASSERT_EQUAL (meta->dim, DIM);
  CU_ASSERT_EQUAL (meta->count, N_KEYS);
  CU_ASSERT_EQUAL (meta->version, 7);
  CU_ASSERT_EQUAL (meta->created, 1700000000);
  CU_ASSERT_EQUAL (memcmp (meta->hash_key, expect.hash_key, SEDP_CUBE_HASH_KEY_BYTES), 0);

  /* Every key, in batches of 1000, and in one odd-sized batch (MGET chunks with a remainder). */
  for (guint first = 0; first < N_KEYS; first += 1000)
    CU_ASSERT_EQUAL (check_lookup (source, first, 1000), 1000);
  CU_ASSERT_EQUAL (check_lookup (source, 7, 1301), 1301);
  CU_ASSERT_EQUAL (check_lookup (source, 5, 1), 1);

  /* Present, absent and duplicate keys mixed: absent rows are left as they were. */
  guint n = 600;
  guint64 mixed[600];
  for (guint i = 0; i < n; i++)
    mixed[i] = i % 3 == 0 ? absent[i] : keys[i % 50];
  float *out = g_new (float, n * DIM);
  guint8 found[600];
  for (guint i = 0; i < n * DIM; i++)
    out[i] = -7.0f;
  g_autoptr (GError) error = NULL;
  gint64 got = sedp_cube_source_lookup (source, mixed, n, out, found, &error);
  CU_ASSERT_EQUAL (got, 400);
  for (guint i = 0; i < n; i++) {
    if (i % 3 == 0) {
      CU_ASSERT_EQUAL (found[i], 0);
      CU_ASSERT_EQUAL (out[i * DIM], -7.0f);
      CU_ASSERT_EQUAL (out[i * DIM + DIM - 1], -7.0f);
    } else {
      CU_ASSERT_EQUAL (found[i], 1);
      CU_ASSERT_EQUAL (memcmp (out + i * DIM, values + (i % 50) * DIM, DIM * 4), 0);
    }
  }
  /* No found array. */
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, mixed, n, out, NULL, &error), 400);
  /* Nothing to look up. */
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, mixed, 0, out, found, &error), 0);
  g_free (out);

  CU_ASSERT_EQUAL (counter (source, "redis_missing"), 400);
  CU_ASSERT_EQUAL (counter (source, "redis_found"), 3000 + 1301 + 1 + 800);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_malformed"), 0);
  /* 7 or 8: the dispatch may answer an empty lookup itself. */
  CU_ASSERT (counter (source, "redis_lookups") >= 7 && counter (source, "redis_lookups") <= 8);
  sedp_cube_source_free (source);

  /* The dim is checked when asked for; 0 takes the server's. */
  SedpRedisOptions options = {.url = single_url, .name = "t", .timeout_ms = 1000};
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 8, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "dim 16", "expected 8");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_INVALID);
  source = sedp_cube_source_new_redis (&options, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (source);
  CU_ASSERT_EQUAL (source->dim, DIM);
  sedp_cube_source_free (source);
}

/* A local cube built with the builder, pushed, read back through Redis: the same values. */
static void
test_push_local_cube (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-redis-cube-XXXXXX", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (tmp);
  g_autofree char *dir = g_build_filename (tmp, "cube", NULL);
  SedpCubeBuilder *builder = sedp_cube_builder_new (dir, "local", DIM, NULL, 0, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (builder);
  for (guint i = 0; i < N_KEYS; i++)
    CU_ASSERT_FATAL (sedp_cube_builder_add (builder, keys[i], values + i * DIM, &error));
  CU_ASSERT_FATAL (sedp_cube_builder_finish (builder, &error));
  SedpCube *cube = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cube);

  SedpRedisOptions options = {.url = single_url, .name = "local", .timeout_ms = 2000 * slow};
  gboolean ok = sedp_cube_push (cube, &options, &error);
  if (!ok)
    fprintf (stderr, "\n  push: %s\n", error->message);
  CU_ASSERT_FATAL (ok);

  SedpCubeSource *source = open_source (single_url, "local", 1000 * slow, 200);
  const SedpCubeMeta *local = sedp_cube_get_meta (cube);
  const SedpCubeMeta *remote = sedp_cube_source_redis_get_meta (source);
  CU_ASSERT_EQUAL (remote->count, local->count);
  CU_ASSERT_EQUAL (remote->version, local->version);
  CU_ASSERT_EQUAL (remote->created, local->created);
  CU_ASSERT_EQUAL (memcmp (remote->hash_key, local->hash_key, SEDP_CUBE_HASH_KEY_BYTES), 0);

  guint n = 2 * N_KEYS;
  guint64 *ask = g_new (guint64, n);
  for (guint i = 0; i < n; i++)
    ask[i] = i % 2 ? keys[i / 2] : absent[i / 2];
  float *a = g_new0 (float, (gsize) n * DIM), *b = g_new0 (float, (gsize) n * DIM);
  guint8 *fa = g_new (guint8, n), *fb = g_new (guint8, n);
  gint64 want = sedp_cube_lookup (cube, ask, n, a, fa, &error);
  CU_ASSERT_EQUAL (want, N_KEYS);
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, ask, n, b, fb, &error), want);
  CU_ASSERT_EQUAL (memcmp (fa, fb, n), 0);
  CU_ASSERT_EQUAL (memcmp (a, b, (gsize) n * DIM * sizeof (float)), 0);
  g_free (ask);
  g_free (a);
  g_free (b);
  g_free (fa);
  g_free (fb);
  sedp_cube_source_free (source);

  /* Pushing to nowhere fails cleanly. */
  SedpRedisOptions nowhere = {.url = "redis://127.0.0.1:1", .name = "local", .timeout_ms = 200};
  g_clear_error (&error);
  CU_ASSERT_FALSE (sedp_cube_push (cube, &nowhere, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "127.0.0.1:1");
  sedp_cube_close (cube);

  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", tmp);
  CU_ASSERT_EQUAL (system (rm), 0);
}

/* A cube without metadata (never pushed, or a push cut short) is refused; bad metadata too. */
static void
test_meta_refused (void)
{
  struct {
    const char *name;
    const char *setup; /* a command, with %s for the meta key */
    int code;
    const char *needle;
  } cases[] = {
    {"never", NULL, SEDP_CUBE_ERROR_UNAVAILABLE, "never:meta does not exist"},
    {"str", "SET %s hello", SEDP_CUBE_ERROR_CORRUPT, "not a hash"},
    {"fmt", "HSET %s format other/1 dtype float32 dim 16 count 1 version 1 created 1 hash_key "
            "00000000000000000000000000000000", SEDP_CUBE_ERROR_CORRUPT, "format"},
    {"dtype", "HSET %s format sedp-cube/1 dtype float16 dim 16 count 1 version 1 created 1 "
              "hash_key 00000000000000000000000000000000", SEDP_CUBE_ERROR_CORRUPT, "dtype"},
    {"dim", "HSET %s format sedp-cube/1 dtype float32 dim x16 count 1 version 1 created 1 hash_key "
            "00000000000000000000000000000000", SEDP_CUBE_ERROR_CORRUPT, "'dim'"},
    {"dim0", "HSET %s format sedp-cube/1 dtype float32 dim 0 count 1 version 1 created 1 hash_key "
             "00000000000000000000000000000000", SEDP_CUBE_ERROR_CORRUPT, "'dim'"},
    {"nocount", "HSET %s format sedp-cube/1 dtype float32 dim 16 version 1 created 1 hash_key "
                "00000000000000000000000000000000", SEDP_CUBE_ERROR_CORRUPT, "'count' is missing"},
    {"hk", "HSET %s format sedp-cube/1 dtype float32 dim 16 count 1 version 1 created 1 hash_key "
           "0000zz", SEDP_CUBE_ERROR_CORRUPT, "hash_key"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *meta_key = g_strconcat (cases[i].name, ":meta", NULL);
    if (cases[i].setup) {
      g_autofree char *cmd = g_strdup_printf (cases[i].setup, meta_key);
      g_auto (GStrv) argv = g_strsplit (cmd, " ", -1);
      redisReply *r = redis_server_command_argv (single, (int) g_strv_length (argv),
                                                 (const char **) argv, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (r);
      CU_ASSERT_NOT_EQUAL (r->type, REDIS_REPLY_ERROR);
      freeReplyObject (r);
    }
    SedpRedisOptions options = {.url = single_url, .name = cases[i].name, .timeout_ms = 1000};
    g_autoptr (GError) error = NULL;
    CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, cases[i].needle, cases[i].name);
    CU_ASSERT_EQUAL (error->code, cases[i].code);
  }
}

/* Values of the wrong length or type: missing (and counted), never a crash. */
static void
test_malformed_values (void)
{
  CU_ASSERT_FATAL (push (single_url, "mal", 20));
  g_autofree char *k0 = key_string ("mal", keys[0]);
  g_autofree char *k1 = key_string ("mal", keys[1]);
  g_autofree char *k2 = key_string ("mal", keys[2]);
  g_autofree char *k3 = key_string ("mal", keys[3]);
  g_autofree char *k4 = key_string ("mal", keys[4]);
  g_autofree char *k5 = key_string ("mal", keys[5]);
  const char *setup[][4] = {
    {"SET", k0, "abc"},
    {"DEL", k1}, {"RPUSH", k1, "a", "b"},
    {"DEL", k2}, {"HSET", k2, "f", "v"},
    {"SET", k3, "0123456789012345678901234567890123456789012345678901234567890123x"},
    {"SET", k4, ""},
    {"DEL", k5}, {"SADD", k5, "m"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (setup); i++) {
    int argc = setup[i][3] ? 4 : setup[i][2] ? 3 : 2;
    redisReply *r = redis_server_command_argv (single, argc, setup[i], NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (r);
    freeReplyObject (r);
  }
  SedpCubeSource *source = open_source (single_url, "mal", 1000 * slow, 200);
  float out[20 * DIM];
  guint8 found[20];
  for (guint i = 0; i < 20 * DIM; i++)
    out[i] = -1.0f;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, 20, out, found, &error), 14);
  for (guint i = 0; i < 20; i++) {
    CU_ASSERT_EQUAL (found[i], i >= 6);
    if (i < 6) {
      CU_ASSERT_EQUAL (out[i * DIM], -1.0f);
    } else {
      CU_ASSERT_EQUAL (memcmp (out + i * DIM, values + i * DIM, DIM * 4), 0);
    }
  }
  /* A single server answers MGET, which reads keys of other types as nil: strings of the wrong
   * length are malformed, the list, the hash and the set missing. */
  CU_ASSERT_EQUAL (counter (source, "redis_malformed"), 3);
  CU_ASSERT_EQUAL (counter (source, "redis_missing"), 3);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  for (guint i = 0; i < 6; i++)
    CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys + i, 1, out, found, &error), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_malformed") + counter (source, "redis_missing"), 12);
  sedp_cube_source_free (source);
}

typedef struct {
  SedpCubeSource *source;
  guint seed;
  guint bad;
} Worker;

static gpointer
worker_run (gpointer data)
{
  Worker *w = data;
  GRand *rand = g_rand_new_with_seed (w->seed);
  guint64 ask[500];
  guint idx[500];
  float *out = g_new (float, 500 * DIM);
  guint8 found[500];
  for (int round = 0; round < 40; round++) {
    for (guint i = 0; i < 500; i++) {
      idx[i] = (guint) g_rand_int_range (rand, 0, N_KEYS);
      ask[i] = keys[idx[i]];
    }
    if (sedp_cube_source_lookup (w->source, ask, 500, out, found, NULL) != 500)
      w->bad++;
    for (guint i = 0; i < 500; i++)
      if (!found[i] || memcmp (out + i * DIM, values + (gsize) idx[i] * DIM, DIM * 4) != 0)
        w->bad++;
  }
  g_free (out);
  g_rand_free (rand);
  return NULL;
}

/* Several threads on one source: each gets its own connections, the values stay right. */
static void
test_concurrent (void)
{
  SedpCubeSource *source = open_source (single_url, "t", 2000 * slow, 200);
  Worker workers[4];
  GThread *threads[4];
  for (guint i = 0; i < 4; i++) {
    workers[i] = (Worker) {.source = source, .seed = i + 1};
    threads[i] = g_thread_new ("lookup", worker_run, &workers[i]);
  }
  for (guint i = 0; i < 4; i++) {
    g_thread_join (threads[i]);
    CU_ASSERT_EQUAL (workers[i].bad, 0);
  }
  CU_ASSERT_EQUAL (counter (source, "redis_lookups"), 160);
  CU_ASSERT_EQUAL (counter (source, "redis_found"), 160 * 500);
  sedp_cube_source_free (source);
}

/* DEBUG SLEEP on another connection: lookups time out at the deadline, never hang, and work
 * again once the server is back. */
static void
test_slow_server (void)
{
  const guint timeout = 300;
  SedpCubeSource *source = open_source (single_url, "t", timeout, 200);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 10), 10);

  redisContext *c = redisConnect ("127.0.0.1", single->port);
  CU_ASSERT_FATAL (c != NULL && !c->err);
  redisAppendCommand (c, "DEBUG SLEEP 1.2");
  int done = 0;
  while (!done)
    CU_ASSERT_FATAL (redisBufferWrite (c, &done) == REDIS_OK);
  g_usleep (50000); /* the server is now asleep */

  float out[10 * DIM];
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, 10, out, NULL, &error), -1);
  gint64 took = elapsed_ms (t0);
  CU_ASSERT (took >= timeout - 20);
  CU_ASSERT (took <= timeout + 250 * slow);
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "timed out", "unavailable");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);
  /* Held off until reconnect_ms: fails at once. */
  g_clear_error (&error);
  t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, 10, out, NULL, &error), -1);
  CU_ASSERT (elapsed_ms (t0) < 50 * slow);
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "down");
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 2);
  /* Opening a source on the sleeping server: refused at the deadline too. */
  SedpRedisOptions options = {.url = single_url, .name = "t", .timeout_ms = timeout};
  g_clear_error (&error);
  t0 = g_get_monotonic_time ();
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, DIM, &error));
  CU_ASSERT (elapsed_ms (t0) <= timeout + 250 * slow);
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "timed out");

  redisReply *r = NULL;
  CU_ASSERT_EQUAL (redisGetReply (c, (void **) &r), REDIS_OK); /* the sleep is over */
  if (r)
    freeReplyObject (r);
  redisFree (c);
  g_usleep (250000);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 10), 10);
  CU_ASSERT (counter (source, "redis_reconnects") >= 1);
  sedp_cube_source_free (source);
}

/* The server killed: lookups fail fast (degraded); restarted on its port: the source reconnects
 * by itself. Runs last in the suite (the data is pushed again). */
static void
test_kill_restart (void)
{
  const guint timeout = 500 * slow, reconnect = 200;
  SedpCubeSource *source = open_source (single_url, "t", timeout, reconnect);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 1000), 1000);

  /* Restarted between two lookups: the pooled connection is found closed and the lookup goes
   * again on a fresh one (not a failure). */
  g_autoptr (GError) start_error = NULL;
  redis_server_kill (single);
  CU_ASSERT_FATAL (redis_server_start (single, &start_error));
  CU_ASSERT_FATAL (push (single_url, "t", N_KEYS));
  CU_ASSERT_EQUAL (check_lookup (source, 0, 1000), 1000);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), 0);

  redis_server_kill (single);
  float *out = g_new (float, 1000 * DIM);
  g_autoptr (GError) error = NULL;
  for (int i = 0; i < 3; i++) {
    gint64 t0 = g_get_monotonic_time ();
    CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, 1000, out, NULL, &error), -1);
    CU_ASSERT (elapsed_ms (t0) <= timeout + 100);
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unavailable", "127.0.0.1");
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);
    g_clear_error (&error);
  }
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 3);
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), 3000);

  /* Down longer than reconnect_ms: one connection attempt per interval, each refused. */
  g_usleep (reconnect * 1000 + 50000);
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, 1000, out, NULL, &error), -1);
  g_clear_error (&error);
  CU_ASSERT (counter (source, "redis_connect_failures") >= 1);

  CU_ASSERT_FATAL (redis_server_start (single, &start_error));
  CU_ASSERT_FATAL (push (single_url, "t", N_KEYS));
  g_usleep (reconnect * 1000 + 50000);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 1000), 1000);
  CU_ASSERT_EQUAL (check_lookup (source, 1000, 1000), 1000);
  CU_ASSERT (counter (source, "redis_reconnects") >= 1);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 4);
  g_free (out);
  sedp_cube_source_free (source);
}

/* ---- a fake server: any reply the protocol allows, and some it does not ---- */

#define FAKE_CLOSE "<close>" /* at the end of a scripted reply: then close the connection */

typedef struct {
  int listen_fd;
  guint16 port;
  GThread *thread;
  gint stop;
  GMutex lock;
  GPtrArray *script; /* char*: replies to GET/MGET in order; afterwards nils */
  GPtrArray *slots;  /* char*: replies to CLUSTER SLOTS in order; the last one repeats */
  guint next, next_slots;
  guint data_commands;
} FakeServer;

static void
resp_bulk (GString *out, const void *data, gsize len)
{
  g_string_append_printf (out, "$%zu\r\n", len);
  g_string_append_len (out, data, (gssize) len);
  g_string_append (out, "\r\n");
}

static char *
fake_value (void)
{
  GString *out = g_string_new (NULL);
  char v[DIM * 4]; /* no NUL byte: the scripts are C strings */
  memset (v, 'A', sizeof v);
  resp_bulk (out, v, sizeof v);
  return g_string_free (out, FALSE);
}

static void
fake_send (int fd, const char *data, gsize len)
{
  while (len > 0) {
    ssize_t w = send (fd, data, len, MSG_NOSIGNAL);
    if (w <= 0)
      return;
    data += w;
    len -= (gsize) w;
  }
}

/* Answers one command; FALSE to close the connection. */
static gboolean
fake_answer (FakeServer *f, int fd, redisReply *cmd)
{
  if (cmd->type != REDIS_REPLY_ARRAY || cmd->elements == 0)
    return FALSE;
  const char *name = cmd->element[0]->str;
  g_autoptr (GString) out = g_string_new (NULL);
  g_mutex_lock (&f->lock);
  if (g_ascii_strcasecmp (name, "HGETALL") == 0) {
    const char *meta[] = {"format", "sedp-cube/1", "dtype", "float32", "dim", "16", "count", "3",
                          "version", "1", "created", "1", "hash_key",
                          "000102030405060708090a0b0c0d0e0f"};
    g_string_append_printf (out, "*%u\r\n", (guint) G_N_ELEMENTS (meta));
    for (guint i = 0; i < G_N_ELEMENTS (meta); i++)
      resp_bulk (out, meta[i], strlen (meta[i]));
  } else if (g_ascii_strcasecmp (name, "ASKING") == 0) {
    g_string_append (out, "+OK\r\n");
  } else if (g_ascii_strcasecmp (name, "CLUSTER") == 0) {
    const char *r = g_ptr_array_index (f->slots, MIN (f->next_slots, f->slots->len - 1));
    f->next_slots++;
    g_autofree char *port = g_strdup_printf ("%u", f->port);
    /* "PORT" in a CLUSTER SLOTS reply stands for the fake's own port */
    g_auto (GStrv) parts = g_strsplit (r, "PORT", -1);
    g_autofree char *with_port = g_strjoinv (port, parts);
    g_string_append (out, with_port);
  } else {
    f->data_commands++;
    if (f->next < f->script->len) {
      const char *r = g_ptr_array_index (f->script, f->next++);
      g_autofree char *port = g_strdup_printf ("%u", f->port);
      g_auto (GStrv) parts = g_strsplit (r, "PORT", -1);
      g_autofree char *with_port = g_strjoinv (port, parts);
      if (g_str_has_suffix (with_port, FAKE_CLOSE)) {
        g_mutex_unlock (&f->lock);
        fake_send (fd, with_port, strlen (with_port) - strlen (FAKE_CLOSE));
        return FALSE;
      }
      g_string_append (out, with_port);
    } else if (g_ascii_strcasecmp (name, "GET") == 0) {
      g_string_append (out, "$-1\r\n");
    } else {
      g_string_append_printf (out, "*%zu\r\n", cmd->elements - 1);
      for (size_t i = 1; i < cmd->elements; i++)
        g_string_append (out, "$-1\r\n");
    }
  }
  g_mutex_unlock (&f->lock);
  fake_send (fd, out->str, out->len);
  return TRUE;
}

static void
fake_serve (FakeServer *f, int fd)
{
  redisReader *reader = redisReaderCreate ();
  gboolean open = TRUE;
  while (open && !g_atomic_int_get (&f->stop)) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll (&pfd, 1, 50) <= 0)
      continue;
    char buf[4096];
    ssize_t r = recv (fd, buf, sizeof buf, 0);
    if (r <= 0)
      break;
    redisReaderFeed (reader, buf, (size_t) r);
    void *cmd = NULL;
    while (open && redisReaderGetReply (reader, &cmd) == REDIS_OK && cmd) {
      open = fake_answer (f, fd, cmd);
      freeReplyObject (cmd);
      cmd = NULL;
    }
  }
  redisReaderFree (reader);
  close (fd);
}

static gpointer
fake_run (gpointer data)
{
  FakeServer *f = data;
  while (!g_atomic_int_get (&f->stop)) {
    struct pollfd pfd = {.fd = f->listen_fd, .events = POLLIN};
    if (poll (&pfd, 1, 50) <= 0)
      continue;
    int fd = accept (f->listen_fd, NULL, NULL);
    if (fd >= 0)
      fake_serve (f, fd);
  }
  return NULL;
}

static FakeServer *
fake_new (void)
{
  FakeServer *f = g_new0 (FakeServer, 1);
  g_mutex_init (&f->lock);
  f->script = g_ptr_array_new_with_free_func (g_free);
  f->slots = g_ptr_array_new_with_free_func (g_free);
  f->listen_fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
  CU_ASSERT_FATAL (bind (f->listen_fd, (struct sockaddr *) &sa, sizeof sa) == 0);
  CU_ASSERT_FATAL (listen (f->listen_fd, 16) == 0);
  socklen_t len = sizeof sa;
  getsockname (f->listen_fd, (struct sockaddr *) &sa, &len);
  f->port = ntohs (sa.sin_port);
  f->thread = g_thread_new ("fake-redis", fake_run, f);
  return f;
}

static void
fake_free (FakeServer *f)
{
  g_atomic_int_set (&f->stop, 1);
  g_thread_join (f->thread);
  close (f->listen_fd);
  g_ptr_array_unref (f->script);
  g_ptr_array_unref (f->slots);
  g_mutex_clear (&f->lock);
  g_free (f);
}

static void
fake_script (FakeServer *f, const char *reply)
{
  g_mutex_lock (&f->lock);
  g_ptr_array_add (f->script, g_strdup (reply));
  g_mutex_unlock (&f->lock);
}

/* Every reply the reader parses but we do not expect, and broken streams: keys missing or the
 * call failed (degraded), never a crash; the source recovers afterwards. */
static void
test_fake_single (void)
{
  FakeServer *f = fake_new ();
  g_autofree char *v = fake_value ();
  g_autofree char *url = g_strdup_printf ("redis://127.0.0.1:%u", f->port);
  SedpCubeSource *source = open_source (url, "fake", 300 * slow, 50);
  guint64 k[3] = {1, 2, 3};
  float out[3 * DIM];
  guint8 found[3];
  struct {
    const char *reply;
    gint64 expect; /* keys found, -1: the call failed */
  } cases[] = {
    {":5\r\n", 0},                                              /* not an array */
    {"+OK\r\n", 0},                                             /* a status */
    {"-ERR boom\r\n", 0},                                       /* an error */
    {"*2\r\n$-1\r\n$-1\r\n", 0},                                /* too few elements */
    {"*-1\r\n", 0},                                             /* a nil array */
    {NULL, 1},                                                  /* nested, status, value */
    {NULL, 1},                                                  /* nil, short, value */
    {"%1\r\n+a\r\n+b\r\n", -1},                                 /* RESP3 map: a protocol error */
    {"!garbage\r\n", -1},                                       /* not RESP */
    {"*3\r\n$64\r\n0123" FAKE_CLOSE, -1},                       /* cut short, then closed */
    {"*3\r\n$999999999\r\nabc", -1},                            /* never finished: timeout */
    {"$2147483648000\r\n", -1},                                 /* absurd length */
  };
  g_autofree char *mixed1 = g_strdup_printf ("*3\r\n*1\r\n:1\r\n+OK\r\n%s", v);
  g_autofree char *mixed2 = g_strdup_printf ("*3\r\n$-1\r\n$3\r\nabc\r\n%s", v);
  cases[5].reply = mixed1;
  cases[6].reply = mixed2;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    fake_script (f, cases[i].reply);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GError) error = NULL;
    gint64 t0 = g_get_monotonic_time ();
    gint64 got = sedp_cube_source_lookup (source, k, 3, out, found, &error);
    if (got != cases[i].expect)
      fprintf (stderr, "\n  reply %u '%s': %" G_GINT64_FORMAT " found\n", i, cases[i].reply, got);
    CU_ASSERT_EQUAL (got, cases[i].expect);
    CU_ASSERT (elapsed_ms (t0) <= 300 * slow + 200);
    if (got < 0) {
      SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unavailable");
      g_usleep (80000); /* past reconnect_ms */
    }
  }
  CU_ASSERT_EQUAL (found[0], 0);
  /* The script is over: the fake answers nils, the source is back. */
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, k, 3, out, found, NULL), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 5);
  CU_ASSERT_EQUAL (counter (source, "redis_found"), 2);
  CU_ASSERT (counter (source, "redis_malformed") >= 10);
  CU_ASSERT (counter (source, "redis_reconnects") >= 4);
  sedp_cube_source_free (source);
  fake_free (f);
}

/* The same for the cluster protocol: broken slot maps and redirects. */
static void
test_fake_cluster (void)
{
  FakeServer *f = fake_new ();
  g_autofree char *v = fake_value ();
  g_autofree char *url = g_strdup_printf ("redis+cluster://127.0.0.1:%u", f->port);
  const char *bad_maps[] = {
    "-ERR This instance has cluster support disabled\r\n",
    ":1\r\n",
    "*0\r\n",
    "*3\r\n:1\r\n*1\r\n:5\r\n*3\r\n:9\r\n:2\r\n*2\r\n$9\r\n127.0.0.1\r\n:PORT\r\n", /* no range */
    "*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:PORT\r\n",           /* past 16383 */
    "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:0\r\n",              /* port 0 */
    "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n:1\r\n:PORT\r\n",                        /* host a number */
    "*1\r\n*3\r\n:0\r\n:16383\r\n*1\r\n$9\r\n127.0.0.1\r\n\r\n",                /* no port */
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad_maps); i++)
    g_ptr_array_add (f->slots, g_strdup (bad_maps[i]));
  /* Then a good one: every slot on the fake itself ("" = the address asked). */
  g_ptr_array_add (f->slots, g_strdup ("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$0\r\n\r\n:PORT\r\n"));
  for (guint i = 0; i < G_N_ELEMENTS (bad_maps); i++) {
    SedpRedisOptions options = {.url = url, .name = "fake", .timeout_ms = 300 * slow};
    g_autoptr (GError) error = NULL;
    CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
    if (error == NULL)
      fprintf (stderr, "\n  slot map %u accepted\n", i);
    SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "Redis Cluster");
  }
  SedpCubeSource *source = open_source (url, "fake", 300 * slow, 50);
  guint64 k[1] = {1};
  float out[DIM];
  guint8 found[1];
  struct {
    const char *reply;
    gint64 expect;
  } cases[] = {
    {"-MOVED 99999 127.0.0.1:PORT\r\n", 0},   /* bad slot: an error reply */
    {"-MOVED 5 127.0.0.1:notaport\r\n", 0},   /* bad port */
    {"-MOVED 5\r\n", 0},                      /* no address */
    {"-ASK 5 127.0.0.1:PORT\r\n", 1},         /* ASKING, then the value below */
    {NULL, 1},
    {"-MOVED 5 :PORT\r\n", 1},                /* "" = the node asked */
    {NULL, 1},
    {"-MOVED 5 127.0.0.1:PORT\r\n", -1},      /* redirected to itself, again and again */
    {"-MOVED 5 127.0.0.1:PORT\r\n", -1},
    {"-MOVED 5 127.0.0.1:PORT\r\n", -1},
    {"-MOVED 5 127.0.0.1:PORT\r\n", -1},
    {"-MOVED 5 127.0.0.1:PORT\r\n", -1},
    {"-ASK 5 127.0.0.1:1\r\n", -1},           /* to a node that is down */
  };
  cases[4].reply = v;
  cases[6].reply = v;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    fake_script (f, cases[i].reply);
  gint64 results[] = {0, 0, 0, 1, 1, -1, -1};
  for (guint i = 0; i < G_N_ELEMENTS (results); i++) {
    g_autoptr (GError) error = NULL;
    gint64 got = sedp_cube_source_lookup (source, k, 1, out, found, &error);
    if (got != results[i])
      fprintf (stderr, "\n  lookup %u: %" G_GINT64_FORMAT " found (%s)\n", i, got,
               error ? error->message : "");
    CU_ASSERT_EQUAL (got, results[i]);
    if (i == 5)
      SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "redirected");
    if (i == 6)
      SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "127.0.0.1:1");
  }
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), 3 + 2);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), 1 + 1 + 5 + 1);
  sedp_cube_source_free (source);
  fake_free (f);
}

/* ---- a 3-node cluster ---- */

static RedisCluster *cluster;

static int
cluster_init (void)
{
  g_autoptr (GError) error = NULL;
  cluster = redis_cluster_new (3, &error);
  if (cluster == NULL) {
    fprintf (stderr, "\n  cannot start a Redis Cluster: %s\n", error->message);
    return 1;
  }
  return push (cluster->url, "c", N_KEYS) ? 0 : 1;
}

static int
cluster_clean (void)
{
  redis_cluster_free (cluster);
  return 0;
}

/* Our slots equal the server's (CLUSTER KEYSLOT), hash tags included. */
static void
test_cluster_key_slot (void)
{
  const char *fixed[] = {"", "a", "123456789", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
                         "foo{bar}{zap}", "{}", "{", "}", "a{b", "a}b{c}", "{a}{b}", "c:meta",
                         "x{}", "{{}}", "\xff\xfe{\x01}"};
  for (guint i = 0; i < G_N_ELEMENTS (fixed) + 200; i++) {
    g_autofree char *owned = i < G_N_ELEMENTS (fixed) ? NULL : key_string ("c", keys[i]);
    const char *key = owned ? owned : fixed[i];
    const char *argv[] = {"CLUSTER", "KEYSLOT", key};
    size_t lens[] = {7, 7, strlen (key)};
    redisReply *r = redis_server_command_argv (cluster->nodes[0], 3, argv, lens);
    CU_ASSERT_FATAL (r && r->type == REDIS_REPLY_INTEGER);
    if ((long long) sedp_redis_key_slot (key, strlen (key)) != r->integer)
      fprintf (stderr, "\n  slot of '%s': ours %u, the server's %lld\n", key,
               sedp_redis_key_slot (key, strlen (key)), r->integer);
    CU_ASSERT_EQUAL (sedp_redis_key_slot (key, strlen (key)), (guint) r->integer);
    freeReplyObject (r);
  }
}

/* The push spreads the keys over every node; lookups reach them all without a redirect. */
static void
test_cluster_lookup (void)
{
  long long total = 0;
  for (guint i = 0; i < cluster->n; i++) {
    redisReply *r = redis_server_command (cluster->nodes[i], "DBSIZE");
    CU_ASSERT_FATAL (r && r->type == REDIS_REPLY_INTEGER);
    CU_ASSERT (r->integer > N_KEYS / 5);
    total += r->integer;
    freeReplyObject (r);
  }
  CU_ASSERT_EQUAL (total, N_KEYS + 1);

  SedpCubeSource *source = open_source (cluster->url, "c", 1000 * slow, 200);
  for (guint first = 0; first < N_KEYS; first += 1000)
    CU_ASSERT_EQUAL (check_lookup (source, first, 1000), 1000);
  guint64 ask[100];
  float out[100 * DIM];
  guint8 found[100];
  for (guint i = 0; i < 100; i++)
    ask[i] = i % 2 ? keys[i] : absent[i];
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, ask, 100, out, found, NULL), 50);
  for (guint i = 0; i < 100; i++)
    CU_ASSERT_EQUAL (found[i], i % 2);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_found"), N_KEYS + 50);
  CU_ASSERT_EQUAL (counter (source, "redis_missing"), 50);
  sedp_cube_source_free (source);

  /* A dead seed first: the next one gives the map. */
  g_autofree char *url =
    g_strdup_printf ("redis+cluster://127.0.0.1:1,127.0.0.1:%u", cluster->nodes[1]->port);
  source = open_source (url, "c", 1000 * slow, 200);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 1000), 1000);
  sedp_cube_source_free (source);

  /* One node of the cluster named as a single server: refused with a hint when the metadata
   * lives elsewhere. */
  guint meta_slot = sedp_redis_key_slot ("c:meta", 6);
  RedisServer *owner = redis_cluster_owner (cluster, meta_slot);
  CU_ASSERT_PTR_NOT_NULL_FATAL (owner);
  RedisServer *other = owner == cluster->nodes[0] ? cluster->nodes[1] : cluster->nodes[0];
  g_autofree char *single_node = redis_server_url (other);
  SedpRedisOptions options = {.url = single_node, .name = "c", .timeout_ms = 1000};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "redis+cluster://");
}

/* A cluster URL on a server without cluster support. */
static void
test_cluster_url_on_single (void)
{
  g_autoptr (GError) error = NULL;
  RedisServer *server = redis_server_new (FALSE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (server);
  g_autofree char *url = g_strdup_printf ("redis+cluster://127.0.0.1:%u", server->port);
  SedpRedisOptions options = {.url = url, .name = "c", .timeout_ms = 1000};
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_redis (&options, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "CLUSTER SLOTS", url);
  redis_server_free (server);
}

static redisReply *
node_cmd (RedisServer *node, const char *a, const char *b, const char *c, const char *d,
          const char *e)
{
  const char *argv[] = {a, b, c, d, e};
  int argc = 0;
  while (argc < 5 && argv[argc])
    argc++;
  redisReply *r = redis_server_command_argv (node, argc, argv, NULL);
  if (r == NULL || r->type == REDIS_REPLY_ERROR)
    fprintf (stderr, "\n  %s %s %s: %s\n", a, b ? b : "", c ? c : "", r ? r->str : "no reply");
  CU_ASSERT (r != NULL && r->type != REDIS_REPLY_ERROR);
  return r;
}

static void
node_do (RedisServer *node, const char *a, const char *b, const char *c, const char *d,
         const char *e)
{
  redisReply *r = node_cmd (node, a, b, c, d, e);
  if (r)
    freeReplyObject (r);
}

/* MIGRATE of some keys of @slot from @from to @to. */
static void
migrate_keys (RedisServer *from, RedisServer *to, const char *const *which, guint n)
{
  g_autofree char *port = g_strdup_printf ("%u", to->port);
  const char **argv = g_new (const char *, 8 + n);
  int argc = 0;
  argv[argc++] = "MIGRATE";
  argv[argc++] = "127.0.0.1";
  argv[argc++] = port;
  argv[argc++] = "";
  argv[argc++] = "0";
  argv[argc++] = "5000";
  argv[argc++] = "KEYS";
  for (guint i = 0; i < n; i++)
    argv[argc++] = which[i];
  redisReply *r = redis_server_command_argv (from, argc, argv, NULL);
  CU_ASSERT (r && r->type == REDIS_REPLY_STATUS);
  if (r && r->type == REDIS_REPLY_ERROR)
    fprintf (stderr, "\n  MIGRATE: %s\n", r->str);
  if (r)
    freeReplyObject (r);
  g_free (argv);
}

/* The keys of @slot on @node. */
static GPtrArray *
keys_in_slot (RedisServer *node, guint slot)
{
  g_autofree char *s = g_strdup_printf ("%u", slot);
  redisReply *r = node_cmd (node, "CLUSTER", "GETKEYSINSLOT", s, "1000", NULL);
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  if (r && r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i < r->elements; i++)
      g_ptr_array_add (out, g_strdup (r->element[i]->str));
  if (r)
    freeReplyObject (r);
  return out;
}

/* SETSLOT … NODE on every node: the migration is over. */
static void
finish_migration (guint slot, RedisServer *to)
{
  g_autofree char *s = g_strdup_printf ("%u", slot);
  g_autofree char *id = redis_server_node_id (to);
  node_do (to, "CLUSTER", "SETSLOT", s, "NODE", id);
  for (guint i = 0; i < cluster->n; i++)
    if (cluster->nodes[i] != to)
      node_do (cluster->nodes[i], "CLUSTER", "SETSLOT", s, "NODE", id);
}

/* While a slot migrates, its moved keys answer ASK (followed, map unchanged); once it moved,
 * MOVED (followed, map updated: no further redirect). */
static void
test_cluster_redirects (void)
{
  SedpCubeSource *source = open_source (cluster->url, "c", 1000 * slow, 100);
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), 0);

  /* keys[0]'s slot, from its owner to another node. */
  g_autofree char *k0 = key_string ("c", keys[0]);
  guint slot = sedp_redis_key_slot (k0, strlen (k0));
  RedisServer *from = redis_cluster_owner (cluster, slot);
  CU_ASSERT_PTR_NOT_NULL_FATAL (from);
  RedisServer *to = from == cluster->nodes[0] ? cluster->nodes[1] : cluster->nodes[0];
  g_autofree char *from_id = redis_server_node_id (from);
  g_autofree char *to_id = redis_server_node_id (to);
  g_autofree char *s = g_strdup_printf ("%u", slot);
  node_do (to, "CLUSTER", "SETSLOT", s, "IMPORTING", from_id);
  node_do (from, "CLUSTER", "SETSLOT", s, "MIGRATING", to_id);
  const char *one[] = {k0};
  migrate_keys (from, to, one, 1);

  /* ASK: followed with ASKING, every time, the map left alone. */
  CU_ASSERT_EQUAL (check_lookup (source, 0, 1), 1);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), 1);
  CU_ASSERT_EQUAL (check_lookup (source, 0, 100), 100);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), 2);

  /* The rest of the slot, then the slot itself. */
  GPtrArray *rest = keys_in_slot (from, slot);
  if (rest->len)
    migrate_keys (from, to, (const char *const *) rest->pdata, rest->len);
  g_ptr_array_unref (rest);
  finish_migration (slot, to);

  /* MOVED: followed once, then the map knows. */
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);
  guint64 after_move = counter (source, "redis_redirects");
  CU_ASSERT (after_move >= 3);
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), after_move);

  /* A stale map everywhere: another whole slot moved behind the source's back, and the slot
   * map refreshed (CLUSTER SLOTS) after the redirect. First let a pending refresh happen. */
  g_usleep (150000);
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);
  guint64 refreshes = counter (source, "redis_slot_map_refreshes");
  g_autofree char *k1 = key_string ("c", keys[1]);
  guint slot1 = sedp_redis_key_slot (k1, strlen (k1));
  RedisServer *from1 = redis_cluster_owner (cluster, slot1);
  RedisServer *to1 = from1 == cluster->nodes[2] ? cluster->nodes[1] : cluster->nodes[2];
  g_autofree char *from1_id = redis_server_node_id (from1);
  g_autofree char *to1_id = redis_server_node_id (to1);
  g_autofree char *s1 = g_strdup_printf ("%u", slot1);
  node_do (to1, "CLUSTER", "SETSLOT", s1, "IMPORTING", from1_id);
  node_do (from1, "CLUSTER", "SETSLOT", s1, "MIGRATING", to1_id);
  GPtrArray *all = keys_in_slot (from1, slot1);
  CU_ASSERT (all->len >= 1);
  migrate_keys (from1, to1, (const char *const *) all->pdata, all->len);
  g_ptr_array_unref (all);
  finish_migration (slot1, to1);
  CU_ASSERT_EQUAL (check_lookup (source, 1, 1), 1);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), after_move + 1);
  g_usleep (150000); /* past reconnect_ms: the next call refreshes */
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);
  CU_ASSERT (counter (source, "redis_slot_map_refreshes") > refreshes);
  CU_ASSERT_EQUAL (counter (source, "redis_redirects"), after_move + 1);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  sedp_cube_source_free (source);
}

typedef struct {
  SedpCubeSource *source;
  guint seed;
  guint bad;
  gint *stop;
  guint rounds;
} ClusterWorker;

static gpointer
cluster_worker_run (gpointer data)
{
  ClusterWorker *w = data;
  GRand *rand = g_rand_new_with_seed (w->seed);
  guint64 ask[300];
  guint idx[300];
  float *out = g_new (float, 300 * DIM);
  guint8 found[300];
  while (!g_atomic_int_get (w->stop) || w->rounds < 5) {
    for (guint i = 0; i < 300; i++) {
      idx[i] = i < 2 ? i : (guint) g_rand_int_range (rand, 0, N_KEYS); /* keys[0] and keys[1] always */
      ask[i] = keys[idx[i]];
    }
    if (sedp_cube_source_lookup (w->source, ask, 300, out, found, NULL) != 300)
      w->bad++;
    for (guint i = 0; i < 300; i++)
      if (!found[i] || memcmp (out + i * DIM, values + (gsize) idx[i] * DIM, DIM * 4) != 0)
        w->bad++;
    w->rounds++;
  }
  g_free (out);
  g_rand_free (rand);
  return NULL;
}

/* Four threads look up while slots migrate under them (ASK, MOVED, map refreshes): every value
 * stays right, nothing fails. */
static void
test_cluster_concurrent_migration (void)
{
  SedpCubeSource *source = open_source (cluster->url, "c", 2000 * slow, 20);
  gint stop = 0;
  ClusterWorker workers[4];
  GThread *threads[4];
  for (guint i = 0; i < 4; i++) {
    workers[i] = (ClusterWorker) {.source = source, .seed = 10 + i, .stop = &stop};
    threads[i] = g_thread_new ("lookup", cluster_worker_run, &workers[i]);
  }
  /* Move the slots of keys[0] and keys[1] to the next node, key by key, then back. */
  for (guint pass = 0; pass < 2; pass++) {
    for (guint k = 0; k < 2; k++) {
      g_autofree char *key = key_string ("c", keys[k]);
      guint slot = sedp_redis_key_slot (key, strlen (key));
      RedisServer *from = redis_cluster_owner (cluster, slot);
      CU_ASSERT_PTR_NOT_NULL_FATAL (from);
      guint at = 0;
      while (cluster->nodes[at] != from)
        at++;
      RedisServer *to = cluster->nodes[(at + 1) % cluster->n];
      g_autofree char *from_id = redis_server_node_id (from);
      g_autofree char *to_id = redis_server_node_id (to);
      g_autofree char *s = g_strdup_printf ("%u", slot);
      node_do (to, "CLUSTER", "SETSLOT", s, "IMPORTING", from_id);
      node_do (from, "CLUSTER", "SETSLOT", s, "MIGRATING", to_id);
      g_usleep (20000);
      GPtrArray *in_slot = keys_in_slot (from, slot);
      for (guint j = 0; j < in_slot->len; j++) {
        migrate_keys (from, to, (const char *const *) &in_slot->pdata[j], 1);
        g_usleep (20000);
      }
      g_ptr_array_unref (in_slot);
      finish_migration (slot, to);
      g_usleep (50000);
    }
  }
  g_atomic_int_set (&stop, 1);
  for (guint i = 0; i < 4; i++) {
    g_thread_join (threads[i]);
    CU_ASSERT_EQUAL (workers[i].bad, 0);
    CU_ASSERT (workers[i].rounds >= 5);
  }
  CU_ASSERT (counter (source, "redis_redirects") >= 1);
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), 0);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  sedp_cube_source_free (source);
}

/* One node down: its keys fail (counted), the others are served; all down: degraded. */
static void
test_cluster_node_down (void)
{
  const guint timeout = 500 * slow;
  SedpCubeSource *source = open_source (cluster->url, "c", timeout, 200);
  CU_ASSERT_EQUAL (check_lookup (source, 0, N_KEYS), N_KEYS);

  RedisServer *dead = cluster->nodes[2];
  RedisServer **owners = g_new0 (RedisServer *, 16384);
  redis_cluster_slot_map (cluster, owners);
  guint on_dead = 0;
  for (guint i = 0; i < N_KEYS; i++) {
    g_autofree char *k = key_string ("c", keys[i]);
    if (owners[sedp_redis_key_slot (k, strlen (k))] == dead)
      on_dead++;
  }
  g_free (owners);
  CU_ASSERT (on_dead > 0);
  redis_server_kill (dead);

  float *out = g_new (float, (gsize) N_KEYS * DIM);
  guint8 *found = g_new (guint8, N_KEYS);
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, N_KEYS, out, found, &error),
                   N_KEYS - on_dead);
  CU_ASSERT (elapsed_ms (t0) <= timeout + 100);
  CU_ASSERT_EQUAL (counter (source, "redis_partial"), 1);
  CU_ASSERT_EQUAL (counter (source, "redis_errors"), on_dead);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 0);
  /* Again, while the node is held off: the same, at once. */
  t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, N_KEYS, out, found, &error),
                   N_KEYS - on_dead);
  CU_ASSERT (elapsed_ms (t0) <= 100 * slow);

  for (guint i = 0; i < cluster->n; i++)
    redis_server_kill (cluster->nodes[i]);
  g_usleep (250000);
  t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (source, keys, N_KEYS, out, found, &error), -1);
  CU_ASSERT (elapsed_ms (t0) <= timeout + 100);
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unavailable");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);
  CU_ASSERT_EQUAL (counter (source, "redis_degraded"), 1);
  g_free (out);
  g_free (found);
  sedp_cube_source_free (source);
}

int
main (void)
{
  if (!redis_harness_available ()) {
    /* redis-server is in scripts/debian-packages.txt: missing, it fails unless asked to skip */
    gboolean skip = g_strcmp0 (g_getenv ("SEDP_ALLOW_SKIP"), "1") == 0;
    fprintf (stderr, "redis-server or redis-cli not installed: %s\n",
             skip ? "skipped" : "failed (scripts/install-deps installs it; SEDP_ALLOW_SKIP=1 skips)");
    return skip ? 77 : 1;
  }
  if (g_getenv ("SEDP_VALGRIND"))
    slow = 4;
  make_data ();
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;

  CU_pSuite s = CU_add_suite ("redis-urls", NULL, NULL);
  CU_add_test (s, "bad URLs and names are refused", test_bad_urls);
  CU_add_test (s, "nothing listening: UNAVAILABLE at once", test_unreachable);
  CU_add_test (s, "cluster key slots: known vectors", test_key_slot_vectors);
  CU_add_test (s, "a fake server's odd replies: missing or failed, never a crash",
               test_fake_single);
  CU_add_test (s, "a fake cluster's broken slot maps and redirects", test_fake_cluster);

  s = CU_add_suite ("redis-single", single_init, single_clean);
  CU_add_test (s, "push then lookup: values, missing keys, counters", test_single_lookup);
  CU_add_test (s, "a local cube pushed reads back the same", test_push_local_cube);
  CU_add_test (s, "a cube without (good) metadata is refused", test_meta_refused);
  CU_add_test (s, "malformed values are missing, never a crash", test_malformed_values);
  CU_add_test (s, "concurrent lookups", test_concurrent);
  CU_add_test (s, "slow server: timeout, no hang, recovery", test_slow_server);
  CU_add_test (s, "server killed and restarted: degraded, then reconnected", test_kill_restart);

  s = CU_add_suite ("redis-cluster", cluster_init, cluster_clean);
  CU_add_test (s, "key slots equal CLUSTER KEYSLOT", test_cluster_key_slot);
  CU_add_test (s, "routing over every node, seeds, single-server URL on a node",
               test_cluster_lookup);
  CU_add_test (s, "cluster URL on a plain server", test_cluster_url_on_single);
  CU_add_test (s, "ASK and MOVED during a slot migration", test_cluster_redirects);
  CU_add_test (s, "lookups from 4 threads during slot migrations", test_cluster_concurrent_migration);
  CU_add_test (s, "a node down: partial; all down: degraded", test_cluster_node_down);

  return sedp_test_run ();
}
