/* sedp tests — the local cube: signatures, the format's round trip through the builder and
 * both placements, lookups (missing keys, key 0, colliding keys, concurrent callers), foreach,
 * builder errors that leave nothing behind, and every kind of damaged file refused at open
 * (CORRUPT naming the file). */
#include "cube-test.h"

#include <sedp/cube.h>

/* ---- signatures ---- */

static void
test_signature (void)
{
  /* The definition: SipHash-2-4 of the 12 little-endian bytes (slot u32, id u64). */
  guint8 msg[12] = {0x07, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0x80};
  guint8 out[8];
  crypto_shorthash (out, msg, sizeof msg, test_hash_key);
  guint64 want = 0;
  for (int k = 7; k >= 0; k--)
    want = want << 8 | out[k];
  guint64 id = 42 | (G_GUINT64_CONSTANT (0x80) << 56);
  CU_ASSERT_EQUAL (sedp_signature (test_hash_key, 7, id), want);
  /* Slot, id and key all matter. */
  guint8 other[16];
  memcpy (other, test_hash_key, 16);
  other[15] ^= 1;
  CU_ASSERT_NOT_EQUAL (sedp_signature (test_hash_key, 8, id), want);
  CU_ASSERT_NOT_EQUAL (sedp_signature (test_hash_key, 7, id + 1), want);
  CU_ASSERT_NOT_EQUAL (sedp_signature (other, 7, id), want);
  CU_ASSERT_EQUAL (sedp_signature (test_hash_key, 7, id), sedp_signature (test_hash_key, 7, id));
}

/* ---- round trip ---- */

/* Looks up @keys (each present when @present) and checks values, found flags and the count. */
static void
check_lookup (SedpCube *c, const guint64 *keys, guint n, guint dim, gboolean present)
{
  g_autofree float *out = g_new (float, (gsize) n * dim);
  g_autofree guint8 *found = g_new (guint8, n);
  for (gsize k = 0; k < (gsize) n * dim; k++)
    out[k] = -1234.5f;
  g_autoptr (GError) error = NULL;
  gint64 hits = sedp_cube_lookup (c, keys, n, out, found, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_EQUAL (hits, present ? n : 0);
  guint bad = 0;
  for (guint i = 0; i < n; i++) {
    if (found[i] != present)
      bad++;
    for (guint d = 0; d < dim; d++)
      if (out[(gsize) i * dim + d] != (present ? test_value (keys[i], d) : -1234.5f))
        bad++;
  }
  if (bad)
    fprintf (stderr, "\n  %u bad values or flags", bad);
  CU_ASSERT_EQUAL (bad, 0);
}

static void
test_round_trip (void)
{
  g_autofree char *dir = tpath ("round-trip");
  const guint n = 1001, dim = 7;
  g_autofree guint64 *keys = test_keys (n + 200, 1);
  gint64 before = g_get_real_time () / G_USEC_PER_SEC;
  /* 100 values per block (the block size need not be a multiple of a value): 11 blocks. */
  build_cube (dir, keys, n, dim, 100 * dim * 4 + 5);
  gint64 after = g_get_real_time () / G_USEC_PER_SEC;
  for (int p = 0; p < 2; p++) {
    g_autoptr (GError) error = NULL;
    SedpCube *c = sedp_cube_open (dir, p ? SEDP_CUBE_VALUES_DISK : SEDP_CUBE_VALUES_MEMORY,
                                  &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    const SedpCubeMeta *m = sedp_cube_get_meta (c);
    CU_ASSERT_STRING_EQUAL (m->name, "test");
    CU_ASSERT_EQUAL (m->dim, dim);
    CU_ASSERT_EQUAL (m->count, n);
    CU_ASSERT_EQUAL (m->n_blocks, 11);
    CU_ASSERT_EQUAL (m->block_size, 100 * dim * 4 + 5);
    CU_ASSERT (m->created >= before && m->created <= after);
    CU_ASSERT (m->version > 0);
    CU_ASSERT_EQUAL (memcmp (m->hash_key, test_hash_key, 16), 0);
    /* Every key (0 and 2^64 - 1 among them), in a shuffled order, with duplicates. */
    g_autofree guint64 *q = g_new (guint64, 2 * n);
    GRand *rng = g_rand_new_with_seed (7);
    for (guint i = 0; i < 2 * n; i++)
      q[i] = keys[g_rand_int_range (rng, 0, n)];
    g_rand_free (rng);
    check_lookup (c, keys, n, dim, TRUE);
    check_lookup (c, q, 2 * n, dim, TRUE);
    /* Keys never added. */
    check_lookup (c, keys + n, 200, dim, FALSE);
    /* found may be NULL; n = 0 is fine. */
    float v[7];
    CU_ASSERT_EQUAL (sedp_cube_lookup (c, &keys[5], 1, v, NULL, NULL), 1);
    CU_ASSERT_EQUAL (v[3], test_value (keys[5], 3));
    CU_ASSERT_EQUAL (sedp_cube_lookup (c, NULL, 0, NULL, NULL, NULL), 0);
    sedp_cube_close (c);
  }
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE (sedp_cube_verify (dir, &error));
  CU_ASSERT_PTR_NULL (error);
}

/* Keys whose home slot is the last of a 16-slot table: they collide, and probing for them
 * wraps around to slot 0. */
static void
test_collisions (void)
{
  g_autofree char *dir = tpath ("collisions");
  guint64 keys[12], missing[6];
  guint n = 0, m = 0;
  for (guint64 k = 1; n < 12 || m < 6; k++) {
    guint64 home = (k * 0x9E3779B97F4A7C15ull) >> 60;
    if (home == 15 && n < 8)
      keys[n++] = k;
    else if (home == 15 && m < 6)
      missing[m++] = k;
    else if (home == 2 && n >= 8 && n < 12)
      keys[n++] = k;
  }
  build_cube (dir, keys, 12, 3, 0);
  for (int p = 0; p < 2; p++) {
    SedpCube *c = sedp_cube_open (dir, p ? SEDP_CUBE_VALUES_DISK : SEDP_CUBE_VALUES_MEMORY, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    CU_ASSERT_EQUAL (sedp_cube_get_meta (c)->n_blocks, 1);
    check_lookup (c, keys, 12, 3, TRUE);
    check_lookup (c, missing, 6, 3, FALSE);
    sedp_cube_close (c);
  }
  CU_ASSERT_TRUE (sedp_cube_verify (dir, NULL));
}

static void
test_key_zero (void)
{
  g_autofree char *with = tpath ("zero-with"), *without = tpath ("zero-without");
  guint64 a[3] = {5, 0, 9}, b[2] = {5, 9};
  build_cube (with, a, 3, 2, 0);
  build_cube (without, b, 2, 2, 0);
  SedpCube *c = sedp_cube_open (with, SEDP_CUBE_VALUES_MEMORY, NULL);
  SedpCube *d = sedp_cube_open (without, SEDP_CUBE_VALUES_DISK, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  guint64 zero = 0;
  check_lookup (c, &zero, 1, 2, TRUE);
  check_lookup (c, a, 3, 2, TRUE);
  check_lookup (d, &zero, 1, 2, FALSE);
  check_lookup (d, b, 2, 2, TRUE);
  CU_ASSERT_EQUAL (sedp_cube_get_meta (c)->count, 3);
  sedp_cube_close (c);
  sedp_cube_close (d);
}

static void
test_placements_agree (void)
{
  g_autofree char *dir = tpath ("agree");
  const guint n = 3000, dim = 16;
  g_autofree guint64 *keys = test_keys (2 * n, 3);
  build_cube (dir, keys, n, dim, 4096);
  SedpCube *mem = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  SedpCube *disk = sedp_cube_open (dir, SEDP_CUBE_VALUES_DISK, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (mem);
  CU_ASSERT_PTR_NOT_NULL_FATAL (disk);
  const guint q = 5000;
  g_autofree guint64 *query = g_new (guint64, q);
  GRand *rng = g_rand_new_with_seed (11);
  for (guint i = 0; i < q; i++)
    query[i] = keys[g_rand_int_range (rng, 0, 2 * n)]; /* half of them missing */
  g_rand_free (rng);
  g_autofree float *a = g_new0 (float, (gsize) q * dim), *b = g_new0 (float, (gsize) q * dim);
  g_autofree guint8 *fa = g_new (guint8, q), *fb = g_new (guint8, q);
  gint64 ha = sedp_cube_lookup (mem, query, q, a, fa, NULL);
  gint64 hb = sedp_cube_lookup (disk, query, q, b, fb, NULL);
  CU_ASSERT_EQUAL (ha, hb);
  CU_ASSERT (ha > q / 3 && ha < 2 * q / 3);
  CU_ASSERT_EQUAL (memcmp (fa, fb, q), 0);
  CU_ASSERT_EQUAL (memcmp (a, b, sizeof (float) * q * dim), 0);
  sedp_cube_close (mem);
  sedp_cube_close (disk);
}

/* The same cube in two folders is loaded once in memory (a model's versions sharing a cube);
 * another cube, or the disk placement, is not shared; each open is closed on its own. */
static void
test_shared (void)
{
  g_autofree char *a = tpath ("shared-a"), *b = tpath ("shared-b"), *c = tpath ("shared-c");
  const guint n = 500, dim = 4;
  g_autofree guint64 *keys = test_keys (n, 5);
  build_cube (a, keys, n, dim, 1024);
  g_autofree char *cmd = g_strdup_printf ("cp -a '%s' '%s'", a, b);
  CU_ASSERT_EQUAL_FATAL (system (cmd), 0);
  g_autofree guint64 *other = test_keys (n, 6);
  build_cube (c, other, n, dim, 1024);
  SedpCube *ca = sedp_cube_open (a, SEDP_CUBE_VALUES_MEMORY, NULL);
  SedpCube *cb = sedp_cube_open (b, SEDP_CUBE_VALUES_MEMORY, NULL);
  SedpCube *cc = sedp_cube_open (c, SEDP_CUBE_VALUES_MEMORY, NULL);
  SedpCube *cd = sedp_cube_open (b, SEDP_CUBE_VALUES_DISK, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ca);
  CU_ASSERT_PTR_EQUAL (ca, cb);
  CU_ASSERT_PTR_NOT_EQUAL (ca, cc);
  CU_ASSERT_PTR_NOT_EQUAL (cb, cd);
  sedp_cube_close (ca);
  check_lookup (cb, keys, n, dim, TRUE); /* still open through b */
  sedp_cube_close (cb);
  SedpCube *again = sedp_cube_open (a, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL (again);
  check_lookup (again, keys, n, dim, TRUE);
  sedp_cube_close (again);
  sedp_cube_close (cc);
  sedp_cube_close (cd);
}

typedef struct {
  SedpCube *cube;
  const guint64 *keys;
  guint n;
  guint bad;
} LookupJob;

static gpointer
lookup_thread (gpointer data)
{
  LookupJob *j = data;
  const guint dim = sedp_cube_get_meta (j->cube)->dim;
  float *out = g_new (float, 64 * dim);
  guint8 found[64];
  for (guint round = 0; round < 20; round++)
    for (guint base = 0; base + 64 <= j->n; base += 64) {
      if (sedp_cube_lookup (j->cube, j->keys + base, 64, out, found, NULL) != 64)
        j->bad++;
      for (guint i = 0; i < 64; i++)
        if (!found[i] || out[i * dim + 1] != test_value (j->keys[base + i], 1))
          j->bad++;
    }
  g_free (out);
  return NULL;
}

static void
test_concurrent_lookups (void)
{
  g_autofree char *dir = tpath ("threads");
  const guint n = 2048;
  g_autofree guint64 *keys = test_keys (n, 5);
  build_cube (dir, keys, n, 5, 2000);
  for (int p = 0; p < 2; p++) {
    SedpCube *c = sedp_cube_open (dir, p ? SEDP_CUBE_VALUES_DISK : SEDP_CUBE_VALUES_MEMORY, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    LookupJob jobs[4];
    GThread *th[4];
    for (int t = 0; t < 4; t++) {
      jobs[t] = (LookupJob){.cube = c, .keys = keys + t * 512, .n = 512};
      th[t] = g_thread_new ("lookup", lookup_thread, &jobs[t]);
    }
    for (int t = 0; t < 4; t++) {
      g_thread_join (th[t]);
      CU_ASSERT_EQUAL (jobs[t].bad, 0);
    }
    sedp_cube_close (c);
  }
}

/* ---- foreach ---- */

typedef struct {
  GHashTable *seen;
  guint dim;
  guint bad;
  guint stop_after;
  guint calls;
} ForeachState;

static gboolean
foreach_one (guint64 key, const float *values, gpointer data)
{
  ForeachState *s = data;
  s->calls++;
  guint64 *k = g_new (guint64, 1);
  *k = key;
  if (!g_hash_table_add (s->seen, k))
    s->bad++;
  for (guint d = 0; d < s->dim; d++)
    if (values[d] != test_value (key, d))
      s->bad++;
  return s->stop_after == 0 || s->calls < s->stop_after;
}

static void
test_foreach (void)
{
  g_autofree char *dir = tpath ("foreach");
  const guint n = 777;
  g_autofree guint64 *keys = test_keys (n, 9);
  build_cube (dir, keys, n, 4, 1000);
  for (int p = 0; p < 2; p++) {
    SedpCube *c = sedp_cube_open (dir, p ? SEDP_CUBE_VALUES_DISK : SEDP_CUBE_VALUES_MEMORY, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    ForeachState s = {.seen = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL),
                      .dim = 4};
    CU_ASSERT_TRUE (sedp_cube_foreach (c, foreach_one, &s, NULL));
    CU_ASSERT_EQUAL (s.bad, 0);
    CU_ASSERT_EQUAL (g_hash_table_size (s.seen), n);
    for (guint i = 0; i < n; i++)
      CU_ASSERT_TRUE (g_hash_table_contains (s.seen, &keys[i]));
    g_hash_table_remove_all (s.seen);
    s.calls = 0;
    s.stop_after = 10;
    CU_ASSERT_TRUE (sedp_cube_foreach (c, foreach_one, &s, NULL));
    CU_ASSERT_EQUAL (s.calls, 10);
    g_hash_table_unref (s.seen);
    sedp_cube_close (c);
  }
}

static void
test_empty_cube (void)
{
  g_autofree char *dir = tpath ("empty");
  build_cube (dir, NULL, 0, 3, 0);
  for (int p = 0; p < 2; p++) {
    SedpCube *c = sedp_cube_open (dir, p ? SEDP_CUBE_VALUES_DISK : SEDP_CUBE_VALUES_MEMORY, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (c);
    CU_ASSERT_EQUAL (sedp_cube_get_meta (c)->count, 0);
    CU_ASSERT_EQUAL (sedp_cube_get_meta (c)->n_blocks, 0);
    guint64 keys[2] = {0, 17};
    check_lookup (c, keys, 2, 3, FALSE);
    sedp_cube_close (c);
  }
  CU_ASSERT_TRUE (sedp_cube_verify (dir, NULL));
}

/* ---- the builder's errors ---- */

static void
test_builder_errors (void)
{
  g_autofree char *dir = tpath ("bad-build");
  float v[4] = {1, 2, 3, 4};
  g_autoptr (GError) error = NULL;

  /* Duplicates, zero included: INVALID naming the key; the builder goes on. */
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, NULL, 4, NULL, 64, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_TRUE (sedp_cube_builder_add (b, 77, v, NULL));
  CU_ASSERT_TRUE (sedp_cube_builder_add (b, 0, v, NULL));
  CU_ASSERT_FALSE (sedp_cube_builder_add (b, 77, v, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "duplicate key 77");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_INVALID);
  g_clear_error (&error);
  CU_ASSERT_FALSE (sedp_cube_builder_add (b, 0, v, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "duplicate key 0");
  g_clear_error (&error);
  /* Many more, over several blocks (4 values of 16 bytes per block), then abort. */
  for (guint64 k = 1000; k < 1100; k++)
    CU_ASSERT_TRUE (sedp_cube_builder_add (b, k, v, NULL));
  CU_ASSERT_EQUAL (sedp_cube_builder_get_count (b), 102);
  sedp_cube_builder_abort (b);
  CU_ASSERT_TRUE (nothing_left (dir));

  /* The name defaults to the folder's. */
  b = sedp_cube_builder_new (dir, NULL, 4, NULL, 0, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_TRUE (sedp_cube_builder_finish (b, NULL));
  SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_STRING_EQUAL (sedp_cube_get_meta (c)->name, "bad-build");
  sedp_cube_close (c);

  /* An existing folder is never overwritten. */
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (dir, "x", 4, NULL, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, dir, "already exists", "remove it");
  g_clear_error (&error);
  rm_rf (dir);

  /* Bad arguments. */
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (dir, "x", 0, NULL, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "dim 0");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (dir, "x", 65537, NULL, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "dim 65537");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (dir, "a b", 4, NULL, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "bad cube name 'a b'");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (dir, "x", 4, NULL, 15, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "block size 15");
  g_clear_error (&error);
  g_autofree char *deep = tpath ("no/such/parent/cube");
  CU_ASSERT_PTR_NULL (sedp_cube_builder_new (deep, "x", 4, NULL, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "no/such/parent");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_IO);
  g_clear_error (&error);
  CU_ASSERT_TRUE (nothing_left (dir));

  /* Finishing onto a folder that appeared meanwhile: refused, the temporary folder removed. */
  b = sedp_cube_builder_new (dir, "x", 4, NULL, 0, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_TRUE (sedp_cube_builder_add (b, 1, v, NULL));
  CU_ASSERT_EQUAL (g_mkdir (dir, 0755), 0);
  CU_ASSERT_FALSE (sedp_cube_builder_finish (b, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "already exists");
  g_clear_error (&error);
  g_rmdir (dir);
  CU_ASSERT_TRUE (nothing_left (dir));
}

/* ---- damaged cubes ---- */

static char *good_dir;

/* A fresh copy of the good cube (3 blocks of 40 values of dim 4, 100 keys). */
static char *
damaged (const char *name)
{
  if (good_dir == NULL) {
    good_dir = tpath ("good");
    g_autofree guint64 *keys = test_keys (100, 13);
    build_cube (good_dir, keys, 100, 4, 40 * 16);
  }
  char *dir = tpath (name);
  copy_cube (good_dir, dir);
  return dir;
}

static void
test_corrupt_blocks (void)
{
  g_autofree char *a = damaged ("blk-truncated");
  g_autofree char *b1 = member (a, "block-00001.bin");
  truncate_to (b1, 600);
  ASSERT_CORRUPT (a, SEDP_CUBE_VALUES_MEMORY, "block-00001.bin", "truncated");
  ASSERT_CORRUPT (a, SEDP_CUBE_VALUES_DISK, "block-00001.bin", "truncated");

  g_autofree char *b = damaged ("blk-flipped");
  g_autofree char *b2 = member (b, "block-00002.bin");
  flip_byte (b2, 77);
  ASSERT_CORRUPT (b, SEDP_CUBE_VALUES_MEMORY, "block-00002.bin", "checksum mismatch");
  /* On disk, blocks are checked by size at open; verify reads them. */
  SedpCube *c = sedp_cube_open (b, SEDP_CUBE_VALUES_DISK, NULL);
  CU_ASSERT_PTR_NOT_NULL (c);
  sedp_cube_close (c);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_cube_verify (b, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "block-00002.bin", "checksum mismatch");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_CORRUPT);

  g_autofree char *d = damaged ("blk-missing");
  g_autofree char *b0 = member (d, "block-00000.bin");
  g_unlink (b0);
  ASSERT_CORRUPT (d, SEDP_CUBE_VALUES_MEMORY, "block-00000.bin", "missing");
  ASSERT_CORRUPT (d, SEDP_CUBE_VALUES_DISK, "block-00000.bin", "missing");

  g_autofree char *e = damaged ("blk-trailing");
  g_autofree char *b3 = member (e, "block-00002.bin");
  append_bytes (b3, "xyz");
  ASSERT_CORRUPT (e, SEDP_CUBE_VALUES_MEMORY, "block-00002.bin", "trailing data");
}

static void
test_corrupt_index (void)
{
  g_autofree char *a = damaged ("idx-truncated");
  g_autofree char *ia = member (a, "index");
  truncate_to (ia, 100);
  ASSERT_CORRUPT (a, SEDP_CUBE_VALUES_MEMORY, "index", "truncated");

  g_autofree char *b = damaged ("idx-flipped");
  g_autofree char *ib = member (b, "index");
  flip_byte (ib, 64 + 16 * 5 + 3);
  ASSERT_CORRUPT (b, SEDP_CUBE_VALUES_DISK, "index", "checksum mismatch");

  g_autofree char *c = damaged ("idx-missing");
  g_autofree char *ic = member (c, "index");
  g_unlink (ic);
  ASSERT_CORRUPT (c, SEDP_CUBE_VALUES_DISK, "index", "missing");

  g_autofree char *d = damaged ("idx-magic");
  g_autofree char *id = member (d, "index");
  flip_byte (id, 2);
  index_reseal (d);
  ASSERT_CORRUPT (d, SEDP_CUBE_VALUES_DISK, "index", "bad magic");

  /* A slot pointing past the values, with valid checksums: refused, never read. */
  g_autofree char *e = damaged ("idx-past");
  g_autofree char *ie = member (e, "index");
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (ie, &data, &len, NULL));
  for (gsize off = 64; off < len; off += 16)
    if (memcmp (data + off, "\0\0\0\0\0\0\0\0", 8) != 0) {
      guint32 offset = 41; /* block 0 holds 40 values */
      memcpy (data + off + 12, &offset, 4);
      break;
    }
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (ie, data, (gssize) len, NULL));
  index_reseal (e);
  ASSERT_CORRUPT (e, SEDP_CUBE_VALUES_MEMORY, "index", "points past the values");

  /* The header's count disagreeing with the meta. */
  g_autofree char *f = damaged ("idx-count");
  g_autofree char *ifc = member (f, "index");
  flip_byte (ifc, 16);
  index_reseal (f);
  ASSERT_CORRUPT (f, SEDP_CUBE_VALUES_DISK, "index", "does not match the metadata");

  /* Two keys sharing values: opens (locations are valid), verify refuses. */
  g_autofree char *g = damaged ("idx-shared");
  g_autofree char *ig = member (g, "index");
  g_autofree char *gdata = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (ig, &gdata, &len, NULL));
  int first = -1;
  for (gsize off = 64; off < len; off += 16)
    if (memcmp (gdata + off, "\0\0\0\0\0\0\0\0", 8) != 0) {
      if (first < 0)
        first = (int) off;
      else {
        memcpy (gdata + off + 8, gdata + first + 8, 8);
        break;
      }
    }
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (ig, gdata, (gssize) len, NULL));
  index_reseal (g);
  SedpCube *cube = sedp_cube_open (g, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL (cube);
  sedp_cube_close (cube);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_cube_verify (g, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "index", "shares its values");
}

static void
test_corrupt_meta (void)
{
  g_autofree char *a = damaged ("meta-magic");
  g_autofree char *ma = member (a, "meta");
  flip_byte (ma, 1);
  ASSERT_CORRUPT (a, SEDP_CUBE_VALUES_MEMORY, "meta", "bad magic");

  g_autofree char *b = damaged ("meta-flipped");
  g_autofree char *mb = member (b, "meta");
  flip_byte (mb, 40);
  ASSERT_CORRUPT (b, SEDP_CUBE_VALUES_MEMORY, "meta", "checksum mismatch");

  g_autofree char *c = damaged ("meta-missing");
  g_autofree char *mc = member (c, "meta");
  g_unlink (mc);
  ASSERT_CORRUPT (c, SEDP_CUBE_VALUES_MEMORY, "meta", "missing");

  /* Truncated at every length: always refused, never a crash. */
  g_autofree char *d = damaged ("meta-cut");
  g_autofree char *md = member (d, "meta");
  g_autofree char *whole = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (md, &whole, &len, NULL));
  for (gsize cut = 0; cut < len; cut++) {
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (md, whole, (gssize) cut, NULL));
    g_autoptr (GError) error = NULL;
    SedpCube *cube = sedp_cube_open (d, SEDP_CUBE_VALUES_DISK, &error);
    CU_ASSERT_PTR_NULL (cube);
    if (cube)
      sedp_cube_close (cube);
    else
      CU_ASSERT (error->code == SEDP_CUBE_ERROR_CORRUPT && strstr (error->message, "meta"));
  }

  /* The format version. */
  g_autofree char *e = damaged ("meta-version");
  g_autofree char *me = member (e, "meta");
  g_autofree char *text = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (me, &text, NULL, NULL));
  text[9] = '2';
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (me, text, -1, NULL));
  ASSERT_CORRUPT (e, SEDP_CUBE_VALUES_DISK, "meta", "format version 2");
}

/* Fields that lie, with a valid checksum: the sizes derived from them disagree with the files
 * (or each other), and nothing is allocated from them. */
static void
test_meta_lies (void)
{
  static const struct {
    const char *key, *value, *needle;
  } lies[] = {
    {"count", "101", "block-00002.bin is said to hold 320 bytes"},
    {"count", "99", "block-00002.bin is said to hold"},
    {"count", "1099511627775", "n_blocks"},
    {"count", "99999999999999999", "bad count"},
    {"dim", "8", "n_blocks is 3 but 100 keys of dim 8"},
    {"dim", "0", "bad dim"},
    {"dtype", "float64", "bad dtype"},
    {"block_size", "320", "n_blocks"},
    {"block_size", "8", "block_size 8 does not fit"},
    {"n_blocks", "2", "unexpected block 'block-00002.bin'"},
    {"n_blocks", "4000000000", "bad n_blocks"},
    {"block-00001.bin", "64 00000000000000000000000000000000", "block-00001.bin is said to hold"},
    {"block-00001.bin", "640", "malformed block line"},
    {"index_slots", "512", "index"},
    {"index_slots", "4398046511104", "index"},
    {"index_slots", "100", "bad index_slots"},
    {"index_slots", "64", "cannot hold"},
    {"index_checksum", "00000000000000000000000000000000", "checksum mismatch"},
    {"hash_key", "xyz", "bad hash_key"},
    {"name", "a b", "bad name"},
    {"version", "-1", "bad version"},
    {"surprise", "1", "unknown field 'surprise'"},
    {"created", NULL, "'created' is missing"},
    {"block-00002.bin", NULL, "block lines"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (lies); i++) {
    g_autofree char *name = g_strdup_printf ("lie-%u", i);
    g_autofree char *dir = damaged (name);
    meta_set (dir, lies[i].key, lies[i].value);
    g_autoptr (GError) error = NULL;
    SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
    CU_ASSERT_PTR_NULL (c);
    if (c) {
      fprintf (stderr, "\n  lie %s: %s was accepted", lies[i].key, lies[i].value);
      sedp_cube_close (c);
      continue;
    }
    CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_CORRUPT);
    if (strstr (error->message, lies[i].needle) == NULL)
      fprintf (stderr, "\n  lie %s: %s: '%s' lacks '%s'", lies[i].key,
               lies[i].value ? lies[i].value : "(removed)", error->message, lies[i].needle);
    CU_ASSERT_PTR_NOT_NULL (strstr (error->message, lies[i].needle));
  }
}

/* Any flipped byte anywhere is caught at open with memory placement (every file has a
 * checksum). */
static void
test_random_flips (void)
{
  g_autofree char *dir = damaged ("flips");
  const char *files[] = {"meta", "index", "block-00000.bin", "block-00001.bin", "block-00002.bin"};
  GRand *rng = g_rand_new_with_seed (99);
  guint trials = g_getenv ("SEDP_VALGRIND") ? 20 : 150;
  for (guint t = 0; t < trials; t++) {
    const char *f = files[g_rand_int_range (rng, 0, G_N_ELEMENTS (files))];
    g_autofree char *path = member (dir, f);
    g_autofree char *data = NULL;
    gsize len = 0;
    CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
    gsize off = (gsize) g_rand_int_range (rng, 0, (gint32) len);
    guint8 bit = (guint8) (1u << g_rand_int_range (rng, 0, 8));
    data[off] ^= (char) bit;
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, data, (gssize) len, NULL));
    g_autoptr (GError) error = NULL;
    SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, &error);
    CU_ASSERT_PTR_NULL (c);
    if (c) {
      fprintf (stderr, "\n  flip of %s byte %zu bit %u accepted", f, off, bit);
      sedp_cube_close (c);
    } else {
      CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_CORRUPT);
    }
    data[off] ^= (char) bit;
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, data, (gssize) len, NULL));
  }
  g_rand_free (rng);
  SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL (c);
  sedp_cube_close (c);
}

static void
test_not_a_cube (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *none = tpath ("does-not-exist");
  CU_ASSERT_PTR_NULL (sedp_cube_open (none, SEDP_CUBE_VALUES_MEMORY, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "does-not-exist");
  CU_ASSERT_EQUAL (error->code, SEDP_CUBE_ERROR_IO);
  g_clear_error (&error);
  g_autofree char *file = tpath ("a-file");
  CU_ASSERT_TRUE (g_file_set_contents (file, "hello", -1, NULL));
  CU_ASSERT_PTR_NULL (sedp_cube_open (file, SEDP_CUBE_VALUES_MEMORY, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "a-file", "not a cube");
  g_clear_error (&error);
  CU_ASSERT_FALSE (sedp_cube_verify (none, &error));
  CU_ASSERT_PTR_NOT_NULL (error);
}

/* ---- sources ---- */

static void
test_local_source (void)
{
  g_autofree char *dir = tpath ("source");
  g_autofree guint64 *keys = test_keys (50, 21);
  build_cube (dir, keys, 40, 6, 0);
  for (int p = 0; p < 2; p++) {
    SedpCubeSourceOptions o;
    memset (&o, 0, sizeof o);
    o.cube = dir;
    o.values = p ? "disk" : NULL;
    g_autoptr (GError) error = NULL;
    SedpCubeSource *s = sedp_cube_source_open (&o, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (s);
    CU_ASSERT_EQUAL (sedp_cube_source_get_dim (s), 6);
    guint8 key[16];
    CU_ASSERT_TRUE (sedp_cube_source_get_hash_key (s, key));
    CU_ASSERT_EQUAL (memcmp (key, test_hash_key, 16), 0);
    float out[50 * 6];
    guint8 found[50];
    CU_ASSERT_EQUAL (sedp_cube_source_lookup (s, keys, 50, out, found, &error), 40);
    for (guint i = 0; i < 50; i++) {
      CU_ASSERT_EQUAL (found[i], i < 40);
      if (i < 40)
        CU_ASSERT_EQUAL (out[i * 6 + 5], test_value (keys[i], 5));
    }
    g_autoptr (GString) stats = g_string_new (NULL);
    sedp_cube_source_stats (s, stats);
    CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "cube_keys 50\n"));
    CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "cube_hits 40\n"));
    CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "cube_misses 10\n"));
    sedp_cube_source_free (s);
  }
  SedpCubeSourceOptions o;
  memset (&o, 0, sizeof o);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_cube_source_open (&o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "the local backend needs a cube folder");
  g_clear_error (&error);
  o.cube = dir;
  o.values = "tape";
  CU_ASSERT_PTR_NULL (sedp_cube_source_open (&o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unknown value placement 'tape'");
  g_clear_error (&error);
  o.values = NULL;
  o.backend = "carrier-pigeon";
  CU_ASSERT_PTR_NULL (sedp_cube_source_open (&o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "unknown cube backend 'carrier-pigeon'");
  g_clear_error (&error);
  o.backend = "redis";
  CU_ASSERT_PTR_NULL (sedp_cube_source_open (&o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "the redis backend needs a Redis URL");
  g_clear_error (&error);
  /* A damaged cube is refused through the source too. */
  g_autofree char *bad = damaged ("source-bad");
  g_autofree char *blk = member (bad, "block-00001.bin");
  flip_byte (blk, 3);
  o.backend = NULL;
  o.cube = bad;
  CU_ASSERT_PTR_NULL (sedp_cube_source_open (&o, &error));
  SEDP_ASSERT_ERROR (error, SEDP_CUBE_ERROR, "block-00001.bin", "checksum mismatch");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("cube", cube_suite_init, cube_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_signature);
  T (test_round_trip);
  T (test_collisions);
  T (test_key_zero);
  T (test_placements_agree);
  T (test_shared);
  T (test_concurrent_lookups);
  T (test_foreach);
  T (test_empty_cube);
  T (test_builder_errors);
  T (test_corrupt_blocks);
  T (test_corrupt_index);
  T (test_corrupt_meta);
  T (test_meta_lies);
  T (test_random_flips);
  T (test_not_a_cube);
  T (test_local_source);
#undef T
  int status = sedp_test_run ();
  g_free (good_dir);
  return status;
}
