/* sedp — writing a local cube. Values stream into block files as keys are added; the index is
 * an open-addressing table kept in memory (duplicates are found as they are added) and written
 * at the end with the metadata. Everything goes into DIR.tmp-XXXXXX, renamed to DIR only when
 * complete, so that a failed or aborted build leaves nothing half-written. */
#define _GNU_SOURCE
#include "cube-format.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_BUFFER ((gsize) 4 << 20)

struct _SedpCubeBuilder {
  char *dir;
  char *tmp;
  char *name;
  guint dim;
  gsize row_bytes;
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];
  guint64 block_size;
  guint64 values_per_block;
  gint64 created;
  /* The block being written. */
  int fd;
  guint block;                /* its number */
  guint64 in_block;           /* values in it so far */
  guint8 *buf;                /* bytes not yet written */
  gsize buf_len;
  crypto_generichash_state state;
  GArray *block_bytes;        /* guint64 per finished block */
  GArray *block_sums;         /* CUBE_SUM_BYTES per finished block */
  /* The index. */
  SedpCubeSlot *slots;
  guint64 n_slots;
  guint shift;
  guint64 used;               /* keys in the table (all but 0) */
  gboolean has_zero;
  guint32 zero_block, zero_offset;
  /* An I/O error, after which nothing more is written. */
  GError *broken;
};


static gboolean
write_all (int fd, const void *data, gsize len, const char *path, GError **error)
{
  const guint8 *p = data;
  while (len > 0) {
    ssize_t w = write (fd, p, MIN (len, (gsize) 1 << 30));
    if (w < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot write: %s", path, g_strerror (e));
    }
    p += w;
    len -= (gsize) w;
  }
  return TRUE;
}

static gboolean
sync_close (int fd, const char *path, GError **error)
{
  gboolean ok = TRUE;
  if (fsync (fd) != 0) {
    int e = errno;
    ok = sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot write: %s", path, g_strerror (e));
  }
  if (close (fd) != 0 && ok) {
    int e = errno;
    ok = sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot write: %s", path, g_strerror (e));
  }
  return ok;
}

static int
create_file (const char *path, GError **error)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot create: %s", path, g_strerror (e));
  }
  return fd;
}

static char *
member_path (SedpCubeBuilder *b, const char *name)
{
  return g_build_filename (b->tmp, name, NULL);
}

static void
remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d)) != NULL) {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
    g_dir_close (d);
  }
  g_rmdir (dir);
}

static void
builder_free (SedpCubeBuilder *b)
{
  if (b->fd >= 0)
    close (b->fd);
  if (b->slots)
    sedp_cube_unmap (b->slots, (gsize) (b->n_slots * sizeof (SedpCubeSlot)));
  g_free (b->buf);
  g_array_unref (b->block_bytes);
  g_array_unref (b->block_sums);
  g_clear_error (&b->broken);
  g_free (b->dir);
  g_free (b->tmp);
  g_free (b->name);
  g_free (b);
}

SedpCubeBuilder *
sedp_cube_builder_new (const char *dir, const char *name, guint dim, const guint8 *hash_key,
                       guint64 block_size, GError **error)
{
  g_return_val_if_fail (dir != NULL && *dir != '\0', NULL);
  sedp_cube_sodium_init ();
  /* "users/" is the folder "users" (its temporary folder goes next to it, not inside). */
  g_autofree char *trimmed = g_strdup (dir);
  for (gsize n = strlen (trimmed); n > 1 && trimmed[n - 1] == '/'; n--)
    trimmed[n - 1] = '\0';
  dir = trimmed;
  if (dim < 1 || dim > CUBE_MAX_DIM) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "dim %u is out of range (1 to %d)", dim, CUBE_MAX_DIM);
    return NULL;
  }
  g_autofree char *base = g_path_get_basename (dir);
  if (name == NULL)
    name = base;
  if (!cube_name_valid (name)) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "bad cube name '%s' (1 to %d letters, digits, '_', "
          "'.' or '-')", name, CUBE_MAX_NAME);
    return NULL;
  }
  gsize row = (gsize) dim * sizeof (float);
  if (block_size == 0)
    block_size = CUBE_DEFAULT_BLOCK_SIZE;
  if (block_size < row || block_size > CUBE_MAX_BLOCK_SIZE || block_size / row > G_MAXUINT32) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "block size %" G_GUINT64_FORMAT " must hold at least "
          "one value of dim %u (%" G_GSIZE_FORMAT " bytes) and at most 2^32 - 1 of them, up to "
          "2^40 bytes", block_size, dim, row);
    return NULL;
  }
  if (g_file_test (dir, G_FILE_TEST_EXISTS)) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "%s already exists (a cube is never overwritten: "
          "remove it first, or build into another folder)", dir);
    return NULL;
  }
  SedpCubeBuilder *b = g_new0 (SedpCubeBuilder, 1);
  b->fd = -1;
  b->block_bytes = g_array_new (FALSE, FALSE, sizeof (guint64));
  b->block_sums = g_array_new (FALSE, FALSE, CUBE_SUM_BYTES);
  b->dir = g_strdup (dir);
  b->name = g_strdup (name);
  b->dim = dim;
  b->row_bytes = row;
  b->block_size = block_size;
  b->values_per_block = block_size / row;
  b->created = g_get_real_time () / G_USEC_PER_SEC;
  if (hash_key)
    memcpy (b->hash_key, hash_key, SEDP_CUBE_HASH_KEY_BYTES);
  else
    randombytes_buf (b->hash_key, SEDP_CUBE_HASH_KEY_BYTES);
  b->tmp = g_strdup_printf ("%s.tmp-XXXXXX", dir);
  if (g_mkdtemp_full (b->tmp, 0755) == NULL) {
    int e = errno;
    g_autofree char *parent = g_path_get_dirname (dir);
    sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "cannot create a folder next to %s (in %s): %s", dir,
          parent, g_strerror (e));
    g_clear_pointer (&b->tmp, g_free);
    builder_free (b);
    return NULL;
  }
  b->n_slots = CUBE_MIN_SLOTS;
  b->shift = 64 - cube_log2 (b->n_slots);
  b->slots = sedp_cube_map ((gsize) (b->n_slots * sizeof (SedpCubeSlot)), "the cube index", error);
  b->buf = g_malloc (WRITE_BUFFER);
  if (b->slots == NULL) {
    sedp_cube_builder_abort (b);
    return NULL;
  }
  return b;
}

/* Writes the buffered values into the current block file (created when needed). */
static gboolean
flush (SedpCubeBuilder *b, GError **error)
{
  if (b->buf_len == 0)
    return TRUE;
  g_autofree char *name = cube_block_name (b->block);
  g_autofree char *path = member_path (b, name);
  if (b->fd < 0) {
    if ((b->fd = create_file (path, error)) < 0)
      return FALSE;
    crypto_generichash_init (&b->state, NULL, 0, CUBE_SUM_BYTES);
  }
  crypto_generichash_update (&b->state, b->buf, b->buf_len);
  if (!write_all (b->fd, b->buf, b->buf_len, path, error))
    return FALSE;
  b->buf_len = 0;
  return TRUE;
}

/* Closes the current block and records its size and checksum. */
static gboolean
finish_block (SedpCubeBuilder *b, GError **error)
{
  if (!flush (b, error))
    return FALSE;
  g_autofree char *name = cube_block_name (b->block);
  g_autofree char *path = member_path (b, name);
  guint8 sum[CUBE_SUM_BYTES];
  crypto_generichash_final (&b->state, sum, CUBE_SUM_BYTES);
  int fd = b->fd;
  b->fd = -1;
  if (!sync_close (fd, path, error))
    return FALSE;
  guint64 bytes = b->in_block * b->row_bytes;
  g_array_append_val (b->block_bytes, bytes);
  g_array_append_vals (b->block_sums, sum, 1);
  b->block++;
  b->in_block = 0;
  return TRUE;
}

/* Doubles the table. */
static gboolean
grow (SedpCubeBuilder *b, GError **error)
{
  guint64 n = b->n_slots * 2;
  SedpCubeSlot *slots = sedp_cube_map ((gsize) (n * sizeof (SedpCubeSlot)), "the cube index",
                                       error);
  if (slots == NULL)
    return FALSE;
  guint shift = 64 - cube_log2 (n);
  for (guint64 i = 0; i < b->n_slots; i++) {
    const SedpCubeSlot *s = &b->slots[i];
    if (s->key == 0)
      continue;
    guint64 j = cube_home (s->key, shift);
    while (slots[j].key != 0)
      j = (j + 1) & (n - 1);
    slots[j] = *s;
  }
  sedp_cube_unmap (b->slots, (gsize) (b->n_slots * sizeof (SedpCubeSlot)));
  b->slots = slots;
  b->n_slots = n;
  b->shift = shift;
  return TRUE;
}

gboolean
sedp_cube_builder_add (SedpCubeBuilder *b, guint64 key, const float *values, GError **error)
{
  g_return_val_if_fail (b != NULL && values != NULL, FALSE);
  if (b->broken) {
    g_propagate_error (error, g_error_copy (b->broken));
    return FALSE;
  }
  guint64 count = b->used + (guint64) b->has_zero;
  if (count >= CUBE_MAX_COUNT)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "a cube holds at most 2^40 keys");
  guint32 block = b->block, offset = (guint32) b->in_block;
  if (key == 0) {
    if (b->has_zero)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "duplicate key 0");
  } else {
    if (cube_slots_for (b->used + 1) > b->n_slots && !grow (b, &b->broken)) {
      g_propagate_error (error, g_error_copy (b->broken));
      return FALSE;
    }
    guint64 mask = b->n_slots - 1, i = cube_home (key, b->shift);
    for (; b->slots[i].key != 0; i = (i + 1) & mask)
      if (b->slots[i].key == key)
        return sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "duplicate key %" G_GUINT64_FORMAT, key);
    b->slots[i] = (SedpCubeSlot){.key = key, .block = block, .offset = offset};
    b->used++;
  }
  if (key == 0) {
    b->has_zero = TRUE;
    b->zero_block = block;
    b->zero_offset = offset;
  }

  if (b->buf_len + b->row_bytes > WRITE_BUFFER && !flush (b, &b->broken))
    goto broken;
#if G_BYTE_ORDER == G_BIG_ENDIAN
  for (guint k = 0; k < b->dim; k++) {
    guint32 v;
    memcpy (&v, &values[k], 4);
    v = GUINT32_TO_LE (v);
    memcpy (b->buf + b->buf_len + 4 * k, &v, 4);
  }
#else
  /* (dim ≤ 65536: a value always fits the buffer.) */
  memcpy (b->buf + b->buf_len, values, b->row_bytes);
#endif
  b->buf_len += b->row_bytes;
  b->in_block++;
  if (b->in_block == b->values_per_block && !finish_block (b, &b->broken))
    goto broken;
  return TRUE;
broken:
  g_propagate_error (error, g_error_copy (b->broken));
  return FALSE;
}

guint64
sedp_cube_builder_get_count (const SedpCubeBuilder *b)
{
  g_return_val_if_fail (b != NULL, 0);
  return b->used + (guint64) b->has_zero;
}

static gboolean
write_index (SedpCubeBuilder *b, guint8 *sum, GError **error)
{
  g_autofree char *path = member_path (b, CUBE_INDEX_FILE);
  int fd = create_file (path, error);
  if (fd < 0)
    return FALSE;
  SedpCubeIndexHeader h;
  memset (&h, 0, sizeof h);
  memcpy (h.magic, CUBE_INDEX_MAGIC, sizeof h.magic);
  h.n_slots = GUINT64_TO_LE (b->n_slots);
  h.count = GUINT64_TO_LE (b->used + (guint64) b->has_zero);
  h.has_zero = GUINT32_TO_LE ((guint32) b->has_zero);
  h.zero_block = GUINT32_TO_LE (b->has_zero ? b->zero_block : 0);
  h.zero_offset = GUINT32_TO_LE (b->has_zero ? b->zero_offset : 0);
  gsize bytes = (gsize) (b->n_slots * sizeof (SedpCubeSlot));
#if G_BYTE_ORDER == G_BIG_ENDIAN
  for (guint64 i = 0; i < b->n_slots; i++) {
    b->slots[i].key = GUINT64_TO_LE (b->slots[i].key);
    b->slots[i].block = GUINT32_TO_LE (b->slots[i].block);
    b->slots[i].offset = GUINT32_TO_LE (b->slots[i].offset);
  }
#endif
  crypto_generichash_state state;
  crypto_generichash_init (&state, NULL, 0, CUBE_SUM_BYTES);
  crypto_generichash_update (&state, (const guint8 *) &h, sizeof h);
  crypto_generichash_update (&state, (const guint8 *) b->slots, bytes);
  crypto_generichash_final (&state, sum, CUBE_SUM_BYTES);
  gboolean ok = write_all (fd, &h, sizeof h, path, error) &&
                write_all (fd, b->slots, bytes, path, error);
  if (!ok) {
    close (fd);
    return FALSE;
  }
  return sync_close (fd, path, error);
}

static gboolean
write_meta (SedpCubeBuilder *b, const guint8 *index_sum, GError **error)
{
  char hex[2 * CUBE_SUM_BYTES + 1];
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%s %d\n", CUBE_MAGIC, CUBE_FORMAT_VERSION);
  g_string_append_printf (s, "name: %s\n", b->name);
  g_string_append_printf (s, "dim: %u\n", b->dim);
  g_string_append (s, "dtype: float32\n");
  g_string_append_printf (s, "count: %" G_GUINT64_FORMAT "\n", b->used + (guint64) b->has_zero);
  g_string_append_printf (s, "version: %" G_GINT64_FORMAT "\n", b->created);
  g_string_append_printf (s, "created: %" G_GINT64_FORMAT "\n", b->created);
  cube_hex (b->hash_key, SEDP_CUBE_HASH_KEY_BYTES, hex);
  g_string_append_printf (s, "hash_key: %s\n", hex);
  g_string_append_printf (s, "block_size: %" G_GUINT64_FORMAT "\n", b->block_size);
  g_string_append_printf (s, "n_blocks: %u\n", b->block_bytes->len);
  g_string_append_printf (s, "index_slots: %" G_GUINT64_FORMAT "\n", b->n_slots);
  cube_hex (index_sum, CUBE_SUM_BYTES, hex);
  g_string_append_printf (s, "index_checksum: %s\n", hex);
  for (guint k = 0; k < b->block_bytes->len; k++) {
    g_autofree char *name = cube_block_name (k);
    cube_hex (&g_array_index (b->block_sums, guint8, k * CUBE_SUM_BYTES), CUBE_SUM_BYTES, hex);
    g_string_append_printf (s, "%s: %" G_GUINT64_FORMAT " %s\n", name,
                            g_array_index (b->block_bytes, guint64, k), hex);
  }
  guint8 sum[CUBE_SUM_BYTES];
  crypto_generichash (sum, CUBE_SUM_BYTES, (const guint8 *) s->str, s->len, NULL, 0);
  cube_hex (sum, CUBE_SUM_BYTES, hex);
  g_string_append_printf (s, "checksum: %s\n", hex);

  g_autofree char *path = member_path (b, CUBE_META_FILE);
  int fd = create_file (path, error);
  gboolean ok = fd >= 0;
  if (ok && !write_all (fd, s->str, s->len, path, error)) {
    close (fd);
    ok = FALSE;
  } else if (ok) {
    ok = sync_close (fd, path, error);
  }
  g_string_free (s, TRUE);
  return ok;
}

static void
sync_dir (const char *dir)
{
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync (fd);
    close (fd);
  }
}

/* Renames the finished folder into place, never over an existing one. */
static gboolean
rename_into_place (SedpCubeBuilder *b, GError **error)
{
  int r = renameat2 (AT_FDCWD, b->tmp, AT_FDCWD, b->dir, RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
    /* A file system without RENAME_NOREPLACE: check, then rename (racy, but the best there is). */
    if (g_file_test (b->dir, G_FILE_TEST_EXISTS))
      errno = EEXIST, r = -1;
    else
      r = rename (b->tmp, b->dir);
  }
  if (r != 0) {
    int e = errno;
    if (e == EEXIST || e == ENOTEMPTY)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_INVALID, "%s already exists (a cube is never "
                   "overwritten: remove it first, or build into another folder)", b->dir);
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "cannot rename %s to %s: %s", b->tmp, b->dir,
                 g_strerror (e));
  }
  g_autofree char *parent = g_path_get_dirname (b->dir);
  sync_dir (parent);
  return TRUE;
}

gboolean
sedp_cube_builder_finish (SedpCubeBuilder *b, GError **error)
{
  g_return_val_if_fail (b != NULL, FALSE);
  guint8 index_sum[CUBE_SUM_BYTES];
  if (b->broken) {
    g_propagate_error (error, g_steal_pointer (&b->broken));
    goto fail;
  }
  if ((b->in_block > 0 && !finish_block (b, error)) || !write_index (b, index_sum, error) ||
      !write_meta (b, index_sum, error))
    goto fail;
  sync_dir (b->tmp);
  if (!rename_into_place (b, error))
    goto fail;
  builder_free (b);
  return TRUE;
fail:
  sedp_cube_builder_abort (b);
  return FALSE;
}

void
sedp_cube_builder_abort (SedpCubeBuilder *b)
{
  if (b == NULL)
    return;
  if (b->fd >= 0) {
    close (b->fd);
    b->fd = -1;
  }
  if (b->tmp)
    remove_tree (b->tmp);
  builder_free (b);
}
