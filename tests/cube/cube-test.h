/* sedp cube tests — temporary folders, cubes built from keys, and surgery on cube files
 * (truncation, flipped bytes, metadata rewritten with a valid checksum) for the corruption
 * tests. */
#pragma once

#include "test-common.h"

#include "cube/cube.h"
#include "cube/source.h"

#include <glib/gstdio.h>
#include <sodium.h>
#include <string.h>

static char *cube_tmp_root;

static inline void
rm_rf (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *d = g_dir_open (path, 0, NULL);
    if (d) {
      const char *name;
      while ((name = g_dir_read_name (d)) != NULL) {
        g_autofree char *p = g_build_filename (path, name, NULL);
        rm_rf (p);
      }
      g_dir_close (d);
    }
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

static inline int
cube_suite_init (void)
{
  cube_tmp_root = g_dir_make_tmp ("sedp-cube-test-XXXXXX", NULL);
  return cube_tmp_root ? 0 : 1;
}

static inline int
cube_suite_clean (void)
{
  if (cube_tmp_root)
    rm_rf (cube_tmp_root);
  g_clear_pointer (&cube_tmp_root, g_free);
  return 0;
}

/* A path in the suite's temporary folder (free it). */
static inline char *
tpath (const char *name)
{
  return g_build_filename (cube_tmp_root, name, NULL);
}

/* The value of dimension @d of @key in the test cubes: exact in float32. */
static inline float
test_value (guint64 key, guint d)
{
  return (float) ((gint64) ((key * 2654435761u + d * 40503u) % 20001u) - 10000) / 64.0f;
}

static const guint8 test_hash_key[SEDP_CUBE_HASH_KEY_BYTES] = {
  0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

/* Builds a cube of @keys (values test_value) into @dir; fails the test on errors. */
static inline void
build_cube (const char *dir, const guint64 *keys, guint n, guint dim, guint64 block_size)
{
  g_autoptr (GError) error = NULL;
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, "test", dim, test_hash_key, block_size, &error);
  if (error)
    fprintf (stderr, "\n  builder: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  g_autofree float *v = g_new (float, dim);
  for (guint i = 0; i < n; i++) {
    for (guint d = 0; d < dim; d++)
      v[d] = test_value (keys[i], d);
    if (!sedp_cube_builder_add (b, keys[i], v, &error))
      fprintf (stderr, "\n  add: %s\n", error->message);
    CU_ASSERT_PTR_NULL_FATAL (error);
  }
  CU_ASSERT_EQUAL (sedp_cube_builder_get_count (b), n);
  gboolean ok = sedp_cube_builder_finish (b, &error);
  if (!ok)
    fprintf (stderr, "\n  finish: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
}

/* @n distinct pseudo-random keys, key 0 and 2^64 - 1 among them when @n ≥ 2. */
static inline guint64 *
test_keys (guint n, guint64 seed)
{
  guint64 *keys = g_new (guint64, n);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  guint64 x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (guint i = 0; i < n;) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    guint64 k = x * 0x2545F4914F6CDD1Dull;
    if (i == 0 && n >= 2)
      k = 0;
    else if (i == 1)
      k = G_MAXUINT64;
    if (g_hash_table_contains (seen, &k))
      continue;
    keys[i] = k;
    g_hash_table_add (seen, &keys[i]);
    i++;
  }
  return keys;
}

/* No DIR and no DIR.tmp-* next to it. */
static inline gboolean
nothing_left (const char *dir)
{
  if (g_file_test (dir, G_FILE_TEST_EXISTS)) {
    fprintf (stderr, "\n  %s exists", dir);
    return FALSE;
  }
  g_autofree char *parent = g_path_get_dirname (dir);
  g_autofree char *base = g_path_get_basename (dir);
  g_autofree char *prefix = g_strconcat (base, ".tmp-", NULL);
  GDir *d = g_dir_open (parent, 0, NULL);
  gboolean clean = TRUE;
  const char *name;
  while (d && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_prefix (name, prefix)) {
      fprintf (stderr, "\n  %s/%s was left behind", parent, name);
      clean = FALSE;
    }
  if (d)
    g_dir_close (d);
  return clean;
}

static inline char *
member (const char *dir, const char *name)
{
  return g_build_filename (dir, name, NULL);
}

/* Copies the files of cube @from into a new folder @to. */
static inline void
copy_cube (const char *from, const char *to)
{
  rm_rf (to);
  CU_ASSERT_EQUAL_FATAL (g_mkdir (to, 0755), 0);
  GDir *d = g_dir_open (from, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name (d)) != NULL) {
    g_autofree char *a = g_build_filename (from, name, NULL), *b = g_build_filename (to, name, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    CU_ASSERT_TRUE_FATAL (g_file_get_contents (a, &data, &len, NULL));
    CU_ASSERT_TRUE_FATAL (g_file_set_contents (b, data, (gssize) len, NULL));
  }
  g_dir_close (d);
}

static inline void
flip_byte (const char *path, gsize offset)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  CU_ASSERT_FATAL (offset < len);
  data[offset] ^= 0x20;
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, data, (gssize) len, NULL));
}

static inline void
truncate_to (const char *path, gsize size)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  CU_ASSERT_FATAL (size <= len);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, data, (gssize) size, NULL));
}

static inline void
append_bytes (const char *path, const char *bytes)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  gsize extra = strlen (bytes);
  g_autofree char *more = g_malloc (len + extra);
  memcpy (more, data, len);
  memcpy (more + len, bytes, extra);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, more, (gssize) (len + extra), NULL));
}

static inline void
hex16 (const guint8 *b, char *out)
{
  for (int k = 0; k < 16; k++)
    g_snprintf (out + 2 * k, 3, "%02x", b[k]);
}

/* Rewrites the meta of @dir with the line starting "@key: " replaced by "@key: @value" (removed
 * when @value is NULL; appended before the checksum when missing), and a valid checksum, so that
 * only the reader's own checks can catch a lie. */
static inline void
meta_set (const char *dir, const char *key, const char *value)
{
  g_autofree char *path = member (dir, "meta");
  g_autofree char *data = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (data, "\n", -1);
  GString *s = g_string_new (NULL);
  g_autofree char *prefix = g_strconcat (key, ": ", NULL);
  gboolean done = FALSE;
  for (char **l = lines; *l; l++) {
    if (**l == '\0' || g_str_has_prefix (*l, "checksum: "))
      continue;
    if (g_str_has_prefix (*l, prefix)) {
      if (value)
        g_string_append_printf (s, "%s%s\n", prefix, value);
      done = TRUE;
      continue;
    }
    g_string_append_printf (s, "%s\n", *l);
  }
  if (!done && value)
    g_string_append_printf (s, "%s%s\n", prefix, value);
  guint8 sum[16];
  crypto_generichash (sum, 16, (const guint8 *) s->str, s->len, NULL, 0);
  char hex[33];
  hex16 (sum, hex);
  g_string_append_printf (s, "checksum: %s\n", hex);
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, s->str, (gssize) s->len, NULL));
  g_string_free (s, TRUE);
}

/* The meta's value of @key (free it), or NULL. */
static inline char *
meta_get (const char *dir, const char *key)
{
  g_autofree char *path = member (dir, "meta");
  g_autofree char *data = NULL;
  if (!g_file_get_contents (path, &data, NULL, NULL))
    return NULL;
  g_auto (GStrv) lines = g_strsplit (data, "\n", -1);
  g_autofree char *prefix = g_strconcat (key, ": ", NULL);
  for (char **l = lines; *l; l++)
    if (g_str_has_prefix (*l, prefix))
      return g_strdup (*l + strlen (prefix));
  return NULL;
}

/* After the index file of @dir was changed: its checksum written into the meta, resealed. */
static inline void
index_reseal (const char *dir)
{
  g_autofree char *path = member (dir, "index");
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  guint8 sum[16];
  crypto_generichash (sum, 16, (const guint8 *) data, len, NULL, 0);
  char hex[33];
  hex16 (sum, hex);
  meta_set (dir, "index_checksum", hex);
}

/* Opens @dir expecting CORRUPT with every needle in the message. */
#define ASSERT_CORRUPT(dir, placement, ...)                                                       \
  do {                                                                                            \
    g_autoptr (GError) _e = NULL;                                                                 \
    SedpCube *_c = sedp_cube_open ((dir), (placement), &_e);                                      \
    CU_ASSERT_PTR_NULL (_c);                                                                      \
    if (_c)                                                                                       \
      sedp_cube_close (_c);                                                                       \
    else {                                                                                        \
      SEDP_ASSERT_ERROR (_e, SEDP_CUBE_ERROR, __VA_ARGS__);                                       \
      if (_e->code != SEDP_CUBE_ERROR_CORRUPT)                                                    \
        fprintf (stderr, "\n  code %d: %s", _e->code, _e->message);                               \
      CU_ASSERT_EQUAL (_e->code, SEDP_CUBE_ERROR_CORRUPT);                                        \
    }                                                                                             \
  } while (0)
