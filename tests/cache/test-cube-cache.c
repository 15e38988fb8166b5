/* sedp cache tests — the cube cache (memory tier, disk tier, remote) in front of a fake remote
 * source: a SedpCubeSource made here, whose values are a function of the key, with keys that are
 * missing and a switch that makes it fail. No Redis needed. */
#include "test-common.h"

#include "cube/cache/cache-private.h"
#include "cube/cache/policy-private.h"

#include <glib/gstdio.h>
#include <string.h>

#define DIM 8

typedef struct {
  SedpCubeSource parent;
  gint fail;           /* atomic: the next calls fail as a whole */
  gint calls;          /* atomic */
  gint keys;           /* atomic */
  gint duplicates;     /* atomic: calls that asked for a key twice */
  guint last_n;
} FakeRemote;

static gboolean
is_missing (guint64 key)
{
  return key % 11 == 5;
}

static float
value_of (guint64 key, guint j)
{
  return (float) (key % 100003) * 0.5f + (float) j;
}

static gint64
fake_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out, guint8 *found,
             GError **error)
{
  FakeRemote *f = (FakeRemote *) source;
  if (g_atomic_int_get (&f->fail)) {
    g_set_error_literal (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "fake remote is down");
    return -1;
  }
  g_atomic_int_inc (&f->calls);
  g_atomic_int_add (&f->keys, (gint) n);
  f->last_n = n;
  GHashTable *seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  gint64 hits = 0;
  for (guint i = 0; i < n; i++) {
    if (g_hash_table_contains (seen, &keys[i]))
      g_atomic_int_inc (&f->duplicates);
    g_hash_table_add (seen, (gpointer) &keys[i]);
    found[i] = !is_missing (keys[i]);
    if (!found[i])
      continue;
    for (guint j = 0; j < DIM; j++)
      out[(gsize) i * DIM + j] = value_of (keys[i], j);
    hits++;
  }
  g_hash_table_destroy (seen);
  return hits;
}

static void
fake_stats (SedpCubeSource *source, GString *out)
{
  g_string_append_printf (out, "fake_calls %d\n", g_atomic_int_get (&((FakeRemote *) source)->calls));
}

static void
fake_free (SedpCubeSource *source)
{
  g_free (source);
}

static const SedpCubeSourceClass fake_class = {fake_lookup, fake_stats, fake_free};

static FakeRemote *
fake_new (void)
{
  FakeRemote *f = g_new0 (FakeRemote, 1);
  f->parent.klass = &fake_class;
  f->parent.dim = DIM;
  return f;
}

static guint64
stat_value (SedpCubeSource *s, const char *name)
{
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_cube_source_stats (s, out);
  g_autofree char *needle = g_strdup_printf ("%s ", name);
  for (const char *p = out->str; p && *p; p = strchr (p, '\n') ? strchr (p, '\n') + 1 : NULL)
    if (g_str_has_prefix (p, needle))
      return g_ascii_strtoull (p + strlen (needle), NULL, 10);
  fprintf (stderr, "\n  no counter %s in:\n%s", name, out->str);
  CU_FAIL ("counter missing");
  return G_MAXUINT64;
}

/* Checks the rows of @keys: found ones have their values, missing ones are untouched (-7). */
static guint
check_rows (const guint64 *keys, guint n, const float *out, const guint8 *found)
{
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    gboolean want = !is_missing (keys[i]);
    bad += found[i] != want;
    for (guint j = 0; j < DIM; j++)
      bad += out[(gsize) i * DIM + j] != (want ? value_of (keys[i], j) : -7.0f);
  }
  return bad;
}

static gint64
lookup_checked (SedpCubeSource *s, const guint64 *keys, guint n, guint *bad)
{
  float *out = g_new (float, (gsize) n * DIM);
  guint8 *found = g_new (guint8, n);
  for (gsize i = 0; i < (gsize) n * DIM; i++)
    out[i] = -7.0f;
  g_autoptr (GError) error = NULL;
  gint64 got = sedp_cube_source_lookup (s, keys, n, out, found, &error);
  if (error)
    fprintf (stderr, "\n  lookup: %s\n", error->message);
  *bad += check_rows (keys, n, out, found);
  guint want = 0;
  for (guint i = 0; i < n; i++)
    want += !is_missing (keys[i]);
  *bad += got != (gint64) want;
  g_free (out);
  g_free (found);
  return got;
}

static char *
temp_path (const char *name)
{
  static char *dir;
  if (dir == NULL)
    dir = g_dir_make_tmp ("sedp-cache-XXXXXX", NULL);
  return g_build_filename (dir, name, NULL);
}

static SedpCubeSource *
cached (FakeRemote *f, guint64 mem, guint64 disk, const char *disk_name, const char *policy,
        guint shards)
{
  g_autofree char *path = disk_name ? temp_path (disk_name) : NULL;
  SedpCubeCacheOptions o = {.memory_entries = mem, .disk_entries = disk, .disk_path = path, .policy = policy};
  g_autoptr (GError) error = NULL;
  SedpCubeSource *s = sedp_cube_source_new_cached_sharded (&f->parent, &o, shards, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  CU_ASSERT_EQUAL (s->dim, DIM);
  return s;
}

static void
test_bad_options (void)
{
  g_autoptr (GError) error = NULL;
  SedpCubeCacheOptions o = {.memory_entries = 10, .policy = "arc"};
  /* The remote is taken over even on failure (freed: valgrind would see a leak otherwise). */
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_cached (&fake_new ()->parent, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unknown cache policy 'arc'");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_INVALID);
  g_clear_error (&error);

  o = (SedpCubeCacheOptions){.memory_entries = 10, .disk_entries = 10};
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_cached (&fake_new ()->parent, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "disk tier needs a file");
  g_clear_error (&error);

  /* A file that is not a cube cache file is never overwritten. */
  g_autofree char *precious = temp_path ("precious.txt");
  CU_ASSERT_TRUE (g_file_set_contents (precious, "keep me", -1, NULL));
  o = (SedpCubeCacheOptions){.memory_entries = 10, .disk_entries = 10, .disk_path = precious};
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_cached (&fake_new ()->parent, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, precious, "not a cube cache file");
  g_clear_error (&error);
  g_autofree char *text = NULL;
  CU_ASSERT_TRUE (g_file_get_contents (precious, &text, NULL, NULL));
  CU_ASSERT_STRING_EQUAL (text, "keep me");
  g_unlink (precious);

  /* An unwritable place. */
  o = (SedpCubeCacheOptions){.memory_entries = 10, .disk_entries = 10, .disk_path = "/nonexistent/dir/cache"};
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_cached (&fake_new ()->parent, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "/nonexistent/dir/cache");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_IO);
}

/* Duplicates are asked for once, found values come back, missing rows are left alone, and the
 * second time the memory tier answers. */
static void
test_memory_tier (void)
{
  FakeRemote *f = fake_new ();
  SedpCubeSource *s = cached (f, 100, 0, NULL, NULL, 0); /* the default policy */
  const guint64 keys[] = {1, 2, 3, 2, 1, 5, 16, 3};     /* 5 and 16 are missing */
  guint bad = 0;
  CU_ASSERT_EQUAL (lookup_checked (s, keys, G_N_ELEMENTS (keys), &bad), 6);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 1);
  CU_ASSERT_EQUAL (f->last_n, 5); /* 1, 2, 3, 5, 16 */
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->duplicates), 0);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_hits_total"), 0);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_misses_total"), 8);
  CU_ASSERT_EQUAL (stat_value (s, "cache_remote_keys_total"), 5);
  CU_ASSERT_EQUAL (stat_value (s, "cache_remote_found_total"), 3);

  CU_ASSERT_EQUAL (lookup_checked (s, keys, G_N_ELEMENTS (keys), &bad), 6);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 2);
  CU_ASSERT_EQUAL (f->last_n, 2); /* only the missing keys are asked for again */
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_hits_total"), 6);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_entries"), 3);
  CU_ASSERT_EQUAL (stat_value (s, "fake_calls"), 2); /* the remote's own counters follow */
  CU_ASSERT_EQUAL (stat_value (s, "cache_lookups_total"), 2);
  CU_ASSERT_EQUAL (stat_value (s, "cache_keys_total"), 16);

  /* found may be NULL; an empty lookup asks nothing. */
  float out[DIM];
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (s, (const guint64[]){2}, 1, out, NULL, NULL), 1);
  CU_ASSERT_EQUAL (out[3], value_of (2, 3));
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (s, NULL, 0, out, NULL, NULL), 0);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 2);
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_source_free (s);
}

/* Keys evicted from memory go to the disk tier, which answers them later without the remote. */
static void
test_disk_tier (void)
{
  FakeRemote *f = fake_new ();
  SedpCubeSource *s = cached (f, 4, 64, "tier.cache", "lru", 1);
  g_autofree char *path = temp_path ("tier.cache");
  struct stat st;
  CU_ASSERT_EQUAL_FATAL (g_stat (path, &st), 0);
  CU_ASSERT_EQUAL (st.st_size, 4096 + 64 * DIM * 4); /* preallocated */
  g_autofree char *head = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE (g_file_get_contents (path, &head, &len, NULL));
  CU_ASSERT (len >= 8 && memcmp (head, "SEDPCCH1", 8) == 0);

  guint bad = 0;
  guint64 keys[20];
  for (guint i = 0; i < 20; i++)
    keys[i] = 100 + i * 11; /* none missing */
  for (guint i = 0; i < 20; i++)
    lookup_checked (s, &keys[i], 1, &bad);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 20);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_entries"), 4);
  CU_ASSERT_EQUAL (stat_value (s, "cache_disk_entries"), 16);
  /* The 16 that left memory are on disk: no remote call. */
  for (guint i = 0; i < 16; i++)
    lookup_checked (s, &keys[i], 1, &bad);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 20);
  CU_ASSERT_EQUAL (stat_value (s, "cache_disk_hits_total"), 16);
  /* All 20 again in one call: from memory and disk, still no remote call. */
  CU_ASSERT_EQUAL (lookup_checked (s, keys, 20, &bad), 20);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 20);
  CU_ASSERT_EQUAL (stat_value (s, "cache_disk_errors_total"), 0);
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_source_free (s);
  /* The file holds nothing of use without the index: it goes with the cache. */
  CU_ASSERT_FALSE (g_file_test (path, G_FILE_TEST_EXISTS));

  /* A file left by an earlier cache is reused (overwritten), not refused. */
  CU_ASSERT_TRUE (g_file_set_contents (path, "SEDPCCH1 old contents", -1, NULL));
  s = cached (fake_new (), 4, 8, "tier.cache", "lfu", 0);
  CU_ASSERT_EQUAL (lookup_checked (s, keys, 10, &bad), 10);
  CU_ASSERT_EQUAL (lookup_checked (s, keys, 10, &bad), 10);
  CU_ASSERT (stat_value (s, "cache_disk_hits_total") > 0);
  CU_ASSERT_EQUAL (bad, 0);
  /* Two caches never share a file. */
  g_autoptr (GError) error = NULL;
  SedpCubeCacheOptions o = {.memory_entries = 1, .disk_entries = 8, .disk_path = path};
  CU_ASSERT_PTR_NULL (sedp_cube_source_new_cached (&fake_new ()->parent, &o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "in use");
  sedp_cube_source_free (s);
}

/* No memory tier: everything found goes to disk. */
static void
test_disk_only (void)
{
  FakeRemote *f = fake_new ();
  SedpCubeSource *s = cached (f, 0, 16, "only.cache", "tinylfu", 1);
  const guint64 keys[] = {1, 2, 3, 4, 5};
  guint bad = 0;
  CU_ASSERT_EQUAL (lookup_checked (s, keys, 5, &bad), 4);
  CU_ASSERT_EQUAL (lookup_checked (s, keys, 5, &bad), 4);
  CU_ASSERT_EQUAL (stat_value (s, "cache_disk_hits_total"), 4);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_entries"), 0);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->calls), 2); /* the second only for the missing key */
  CU_ASSERT_EQUAL (f->last_n, 1);
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_source_free (s);
}

/* The remote fails: what the tiers hold is still served, the rest is reported missing; the call
 * fails only when nothing could be answered. */
static void
test_remote_failure (void)
{
  FakeRemote *f = fake_new ();
  SedpCubeSource *s = cached (f, 8, 8, "fail.cache", "lru", 1);
  guint bad = 0;
  const guint64 warm[] = {1, 2, 3, 4};
  lookup_checked (s, warm, 4, &bad);
  g_atomic_int_set (&f->fail, 1);

  const guint64 mixed[] = {1, 200, 2, 201, 200};
  float out[5 * DIM];
  guint8 found[5];
  for (guint i = 0; i < G_N_ELEMENTS (out); i++)
    out[i] = -7.0f;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_EQUAL (sedp_cube_source_lookup (s, mixed, 5, out, found, &error), 2);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT (found[0] && found[2] && !found[1] && !found[3] && !found[4]);
  CU_ASSERT_EQUAL (out[0], value_of (1, 0));
  CU_ASSERT_EQUAL (out[2 * DIM + 5], value_of (2, 5));
  CU_ASSERT_EQUAL (out[1 * DIM], -7.0f); /* the caller's default stays */
  CU_ASSERT_EQUAL (out[4 * DIM + DIM - 1], -7.0f);
  CU_ASSERT_EQUAL (stat_value (s, "cache_remote_failures_total"), 1);
  CU_ASSERT_EQUAL (stat_value (s, "cache_degraded_keys_total"), 2);

  CU_ASSERT_EQUAL (sedp_cube_source_lookup (s, (const guint64[]){300, 301}, 2, out, found, &error), -1);
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "fake remote is down");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_UNAVAILABLE);
  CU_ASSERT (!found[0] && !found[1]);
  g_clear_error (&error);

  /* Back up: the rest is fetched again. */
  g_atomic_int_set (&f->fail, 0);
  CU_ASSERT_EQUAL (lookup_checked (s, mixed, 5, &bad), 5);
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_source_free (s);
}

typedef struct {
  SedpCubeSource *s;
  guint seed;
  guint rounds;
  guint bad;
  guint64 keys;
} Worker;

static gpointer
worker_run (gpointer data)
{
  Worker *w = data;
  GRand *rng = g_rand_new_with_seed (w->seed);
  guint64 keys[48];
  for (guint r = 0; r < w->rounds; r++) {
    guint n = (guint) g_rand_int_range (rng, 1, 48);
    for (guint i = 0; i < n; i++) {
      /* Skewed over 4000 keys: small keys often, with duplicates in a call. */
      double u = g_rand_double (rng);
      keys[i] = (guint64) (4000 * u * u * u);
    }
    lookup_checked (w->s, keys, n, &w->bad);
    w->keys += n;
  }
  g_rand_free (rng);
  return NULL;
}

/* Four threads look up overlapping skewed keys: every value is right, the counters add up, and
 * no remote call asks for a key twice. */
static void
check_concurrent (SedpCachePolicyKind kind, guint shards)
{
  static const char *names[] = {"lru", "lfu", "tinylfu"};
  FakeRemote *f = fake_new ();
  SedpCubeSource *s = cached (f, 200, 800, "mt.cache", names[kind], shards);
  CU_ASSERT_EQUAL (sedp_cube_source_cached_get_shards (s), shards ? shards : 1);
  Worker w[4];
  GThread *t[4];
  guint rounds = g_getenv ("SEDP_VALGRIND") ? 150 : 3000;
  for (guint i = 0; i < 4; i++) {
    w[i] = (Worker){s, 100 + i, rounds, 0, 0};
    t[i] = g_thread_new ("lookup", worker_run, &w[i]);
  }
  guint64 keys = 0;
  for (guint i = 0; i < 4; i++) {
    g_thread_join (t[i]);
    CU_ASSERT_EQUAL (w[i].bad, 0);
    keys += w[i].keys;
  }
  CU_ASSERT_EQUAL (stat_value (s, "cache_keys_total"), keys);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_hits_total") + stat_value (s, "cache_memory_misses_total"), keys);
  guint64 disk = stat_value (s, "cache_disk_hits_total") + stat_value (s, "cache_disk_misses_total");
  CU_ASSERT (disk <= stat_value (s, "cache_memory_misses_total"));
  CU_ASSERT_EQUAL (stat_value (s, "cache_remote_keys_total"), stat_value (s, "cache_disk_misses_total"));
  CU_ASSERT (stat_value (s, "cache_memory_hits_total") > keys / 5);
  CU_ASSERT (stat_value (s, "cache_memory_entries") <= 200);
  CU_ASSERT (stat_value (s, "cache_disk_entries") <= 800);
  CU_ASSERT_EQUAL (g_atomic_int_get (&f->duplicates), 0);
  sedp_cube_source_free (s);
}

static void
test_concurrent_one_shard (void)
{
  check_concurrent (SEDP_CACHE_TINYLFU, 1);
}

static void
test_concurrent_sharded (void)
{
  check_concurrent (SEDP_CACHE_TINYLFU, 8);
  check_concurrent (SEDP_CACHE_LFU, 4);
  check_concurrent (SEDP_CACHE_LRU, 2);
}

/* The public constructor picks the shards by size and by the threads that call. */
static void
test_automatic_shards (void)
{
  SedpCubeCacheOptions o = {.memory_entries = 100};
  SedpCubeSource *s = sedp_cube_source_new_cached (&fake_new ()->parent, &o, NULL);
  CU_ASSERT_EQUAL (sedp_cube_source_cached_get_shards (s), 1);
  sedp_cube_source_free (s);
  o.memory_entries = 1 << 20;
  s = sedp_cube_source_new_cached (&fake_new ()->parent, &o, NULL);
  guint procs = (guint) g_get_num_processors (), want = 1;
  while (want * 2 <= MIN (procs, 16u))
    want *= 2;
  CU_ASSERT_EQUAL (sedp_cube_source_cached_get_shards (s), want);
  sedp_cube_source_free (s);
  /* As many shards as threads that call (at most the processors): one caller, one shard. */
  o.threads = 1;
  s = sedp_cube_source_new_cached (&fake_new ()->parent, &o, NULL);
  CU_ASSERT_EQUAL (sedp_cube_source_cached_get_shards (s), 1);
  sedp_cube_source_free (s);
  o.threads = 64;
  s = sedp_cube_source_new_cached (&fake_new ()->parent, &o, NULL);
  CU_ASSERT_EQUAL (sedp_cube_source_cached_get_shards (s), want);
  guint bad = 0;
  const guint64 keys[] = {7, 8, 9, 10};
  lookup_checked (s, keys, 4, &bad);
  lookup_checked (s, keys, 4, &bad);
  CU_ASSERT_EQUAL (stat_value (s, "cache_memory_hits_total"), 4);
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_source_free (s);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("cube-cache", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_bad_options);
  T (test_memory_tier);
  T (test_disk_tier);
  T (test_disk_only);
  T (test_remote_failure);
  T (test_concurrent_one_shard);
  T (test_concurrent_sharded);
  T (test_automatic_shards);
  int rc = sedp_test_run ();
  g_autofree char *dir = temp_path ("");
  g_rmdir (dir);
  return rc;
}
