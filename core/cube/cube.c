/* sedp — local cubes: opening (every file checked against the metadata and its checksum),
 * lookups (memory or disk placement) and verification. The layout is in cube-format.h. */
#define _GNU_SOURCE
#include "cube-format.h"
#include "../util/hex.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <sodium.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK (sedp-cube-error-quark, sedp_cube_error)

struct _SedpCube {
  SedpCubeMeta meta;
  char *dir;
  SedpCubePlacement placement;
  gsize row_bytes;           /* 4 × dim */
  guint64 values_per_block;
  guint64 index_slots;
  guint8 index_sum[CUBE_SUM_BYTES];
  guint64 *block_bytes;      /* per block, from the meta (checked against the files) */
  guint8 (*block_sums)[CUBE_SUM_BYTES];
  /* The index. */
  SedpCubeSlot *slots;
  guint shift;               /* 64 - log2 (index_slots) */
  gboolean has_zero;
  guint32 zero_block, zero_offset;
  /* Values: memory placement. */
  float **blocks;
  /* Values: disk placement. */
  int *fds;
  /* Sharing (memory placement): the opens of this cube not closed, and its key in `shared`. */
  guint refs;
  char *share_key;
};

/* ---- memory ---------------------------------------------------------------------------- */

#define HUGE_PAGE ((gsize) 2 << 20)

static gsize
map_length (gsize bytes)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gsize unit = bytes >= HUGE_PAGE ? HUGE_PAGE : page;
  return (MAX (bytes, 1) + unit - 1) / unit * unit;
}

gpointer
sedp_cube_map (gsize bytes, const char *what, GError **error)
{
  gsize len = map_length (bytes);
  if (len < bytes || len > G_MAXSIZE - HUGE_PAGE) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "%s: %" G_GSIZE_FORMAT
                 " bytes cannot be allocated", what, bytes);
    return NULL;
  }
  gsize extra = len >= HUGE_PAGE ? HUGE_PAGE : 0;
  guint8 *p = mmap (NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO,
                 "%s: cannot allocate %" G_GSIZE_FORMAT " MiB of memory: %s", what, bytes >> 20,
                 g_strerror (e));
    return NULL;
  }
  if (extra) {
    /* Keep the 2 MiB-aligned part, so that the kernel can back it with huge pages. */
    guint8 *aligned = (guint8 *) (((guintptr) p + HUGE_PAGE - 1) & ~(guintptr) (HUGE_PAGE - 1));
    if (aligned > p)
      munmap (p, (gsize) (aligned - p));
    gsize tail = (gsize) ((p + len + extra) - (aligned + len));
    if (tail)
      munmap (aligned + len, tail);
    p = aligned;
#ifdef MADV_HUGEPAGE
    madvise (p, len, MADV_HUGEPAGE);
#endif
  }
  return p;
}

void
sedp_cube_unmap (gpointer p, gsize bytes)
{
  if (p)
    munmap (p, map_length (bytes));
}

/* ---- files ----------------------------------------------------------------------------- */

gboolean
sedp_cube_fail (GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_propagate_error (error, g_error_new_valist (SEDP_CUBE_ERROR, code, fmt, ap));
  va_end (ap);
  return FALSE;
}

/* Reads exactly @len bytes at @offset; a short file is CORRUPT (truncated), a failing read IO. */
static gboolean
pread_full (int fd, void *buf, gsize len, guint64 offset, const char *path, GError **error)
{
  guint8 *p = buf;
  while (len > 0) {
    ssize_t r = pread (fd, p, MIN (len, (gsize) 1 << 30), (off_t) offset);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot read: %s", path, g_strerror (e));
    }
    if (r == 0)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: truncated (it ends before byte %"
                   G_GUINT64_FORMAT ")", path, offset + 1);
    p += r;
    len -= (gsize) r;
    offset += (guint64) r;
  }
  return TRUE;
}

/* Opens @path for reading; a missing file is CORRUPT (a cube lacks a file), other failures IO. */
static int
open_member (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT)
      sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: missing (the cube is incomplete)", path);
    else
      sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot open: %s", path, g_strerror (e));
  }
  return fd;
}

/* ---- meta ------------------------------------------------------------------------------ */

static guint64
values_in_block (const SedpCube *c, guint block)
{
  if (block + 1 < c->meta.n_blocks)
    return c->values_per_block;
  return c->meta.count - c->values_per_block * (guint64) block;
}

/* Parses "key: value" lines after the magic line. @path names the meta file in messages. */
static gboolean
meta_parse (SedpCube *c, const char *data, gsize size, const char *path, GError **error)
{
  if (memchr (data, '\0', size) != NULL)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: binary data in a text file", path);
  gsize magic_len = strlen (CUBE_MAGIC);
  if (size < magic_len || memcmp (data, CUBE_MAGIC, magic_len) != 0)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: bad magic (not a cube's metadata)", path);
  if (size == 0 || data[size - 1] != '\n')
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: truncated (no final newline)", path);

  /* The first line: "SEDPCUBE VERSION". */
  const char *eol = memchr (data, '\n', size);
  g_autofree char *first = g_strndup (data, (gsize) (eol - data));
  guint64 version = 0;
  if (first[magic_len] != ' ' ||
      !g_ascii_string_to_unsigned (first + magic_len + 1, 10, 0, G_MAXUINT32, &version, NULL))
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: bad first line '%s' (expected '%s %d')",
                 path, first, CUBE_MAGIC, CUBE_FORMAT_VERSION);
  if (version != CUBE_FORMAT_VERSION)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: format version %" G_GUINT64_FORMAT ", this sedp reads version %d", path,
                 version, CUBE_FORMAT_VERSION);

  /* The last line: "checksum: HEX" over everything before it. */
  gsize last = size - 1;
  while (last > 0 && data[last - 1] != '\n')
    last--;
  const char *sum_prefix = "checksum: ";
  guint8 want[CUBE_SUM_BYTES], got[CUBE_SUM_BYTES];
  g_autofree char *sum_line = g_strndup (data + last, size - 1 - last);
  if (!g_str_has_prefix (sum_line, sum_prefix) ||
      !cube_unhex (sum_line + strlen (sum_prefix), want, CUBE_SUM_BYTES))
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: truncated or malformed (the last line is not 'checksum: <32 hex digits>')",
                 path);
  crypto_generichash (got, CUBE_SUM_BYTES, (const guint8 *) data, last, NULL, 0);
  if (sodium_memcmp (got, want, CUBE_SUM_BYTES) != 0)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: checksum mismatch (the metadata was modified or damaged)", path);

  /* The fields. */
  g_autofree char *body = g_strndup (eol + 1, last - (gsize) (eol + 1 - data));
  g_auto (GStrv) lines = g_strsplit (body, "\n", -1);
  enum { NAME, DIM, DTYPE, COUNT, VERSION, CREATED, HASH_KEY, BLOCK_SIZE, N_BLOCKS, INDEX_SLOTS,
         INDEX_CHECKSUM, N_FIELDS };
  static const char *const names[N_FIELDS] = {
    "name", "dim", "dtype", "count", "version", "created", "hash_key", "block_size", "n_blocks",
    "index_slots", "index_checksum"};
  gboolean seen[N_FIELDS] = {FALSE};
  guint64 n_blocks = 0, next_block = 0;
  for (guint i = 0; lines[i]; i++) {
    const char *line = lines[i];
    guint lineno = i + 2;
    if (*line == '\0' && lines[i + 1] == NULL)
      break; /* after the last newline */
    const char *colon = strstr (line, ": ");
    if (colon == NULL)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: malformed line (no 'key: value')",
                   path, lineno);
    g_autofree char *key = g_strndup (line, (gsize) (colon - line));
    const char *value = colon + 2;
    if (g_str_has_prefix (key, "block-")) {
      if (!seen[N_BLOCKS])
        return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: a block before n_blocks", path,
                     lineno);
      g_autofree char *expected = cube_block_name ((guint) next_block);
      if (next_block >= n_blocks || strcmp (key, expected) != 0)
        return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: unexpected block '%s'", path,
                     lineno, key);
      g_auto (GStrv) parts = g_strsplit (value, " ", -1);
      guint64 bytes = 0;
      if (g_strv_length (parts) != 2 ||
          !g_ascii_string_to_unsigned (parts[0], 10, 0, G_MAXUINT64, &bytes, NULL) ||
          !cube_unhex (parts[1], c->block_sums[next_block], CUBE_SUM_BYTES))
        return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                     "%s:%u: malformed block line (expected 'BYTES CHECKSUM')", path, lineno);
      c->block_bytes[next_block++] = bytes;
      continue;
    }
    int f = -1;
    for (int k = 0; k < N_FIELDS; k++)
      if (strcmp (key, names[k]) == 0)
        f = k;
    if (f < 0)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: unknown field '%s'", path, lineno, key);
    if (seen[f])
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: '%s' given twice", path, lineno, key);
    seen[f] = TRUE;
    guint64 v = 0;
    gboolean ok = TRUE;
    switch (f) {
    case NAME:
      ok = cube_name_valid (value);
      c->meta.name = g_strdup (value);
      break;
    case DIM:
      ok = g_ascii_string_to_unsigned (value, 10, 1, CUBE_MAX_DIM, &v, NULL);
      c->meta.dim = (guint) v;
      break;
    case DTYPE:
      ok = strcmp (value, "float32") == 0;
      break;
    case COUNT:
      ok = g_ascii_string_to_unsigned (value, 10, 0, CUBE_MAX_COUNT, &c->meta.count, NULL);
      break;
    case VERSION:
      ok = g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &c->meta.version, NULL);
      break;
    case CREATED:
      ok = g_ascii_string_to_unsigned (value, 10, 0, G_MAXINT64, &v, NULL);
      c->meta.created = (gint64) v;
      break;
    case HASH_KEY:
      ok = cube_unhex (value, c->meta.hash_key, SEDP_CUBE_HASH_KEY_BYTES);
      break;
    case BLOCK_SIZE:
      ok = g_ascii_string_to_unsigned (value, 10, 1, CUBE_MAX_BLOCK_SIZE, &c->meta.block_size,
                                       NULL);
      break;
    case N_BLOCKS:
      ok = g_ascii_string_to_unsigned (value, 10, 0, CUBE_MAX_BLOCKS, &n_blocks, NULL);
      if (ok) {
        c->meta.n_blocks = (guint) n_blocks;
        c->block_bytes = g_new0 (guint64, MAX (n_blocks, 1));
        c->block_sums = g_malloc0 ((gsize) MAX (n_blocks, 1) * CUBE_SUM_BYTES);
      }
      break;
    case INDEX_SLOTS:
      ok = g_ascii_string_to_unsigned (value, 10, CUBE_MIN_SLOTS, CUBE_MAX_COUNT * 4,
                                       &c->index_slots, NULL) &&
           (c->index_slots & (c->index_slots - 1)) == 0;
      break;
    case INDEX_CHECKSUM:
      ok = cube_unhex (value, c->index_sum, CUBE_SUM_BYTES);
      break;
    }
    if (!ok)
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s:%u: bad %s '%s'", path, lineno, key,
                   value);
  }
  for (int k = 0; k < N_FIELDS; k++)
    if (!seen[k])
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: the field '%s' is missing", path,
                   names[k]);
  if (next_block != n_blocks)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: %" G_GUINT64_FORMAT " block lines for %"
                 G_GUINT64_FORMAT " blocks", path, next_block, n_blocks);

  /* The fields must agree with each other: sizes are derived, never trusted. */
  c->row_bytes = (gsize) c->meta.dim * sizeof (float);
  c->values_per_block = c->meta.block_size / c->row_bytes;
  if (c->values_per_block == 0 || c->values_per_block > G_MAXUINT32)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: block_size %" G_GUINT64_FORMAT " does not fit between one and 2^32 - 1 "
                 "values of dim %u", path, c->meta.block_size, c->meta.dim);
  guint64 want_blocks = (c->meta.count + c->values_per_block - 1) / c->values_per_block;
  if (n_blocks != want_blocks)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: n_blocks is %" G_GUINT64_FORMAT " but %" G_GUINT64_FORMAT
                 " keys of dim %u in blocks of %" G_GUINT64_FORMAT " bytes need %" G_GUINT64_FORMAT,
                 path, n_blocks, c->meta.count, c->meta.dim, c->meta.block_size, want_blocks);
  for (guint b = 0; b < n_blocks; b++) {
    guint64 expect = values_in_block (c, b) * c->row_bytes;
    if (c->block_bytes[b] != expect) {
      g_autofree char *bn = cube_block_name (b);
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                   "%s: %s is said to hold %" G_GUINT64_FORMAT " bytes, but count, dim and "
                   "block_size make it %" G_GUINT64_FORMAT, path, bn, c->block_bytes[b], expect);
    }
  }
  if (c->index_slots <= c->meta.count)
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: index_slots %" G_GUINT64_FORMAT " cannot hold %" G_GUINT64_FORMAT " keys",
                 path, c->index_slots, c->meta.count);
  c->shift = 64 - cube_log2 (c->index_slots);
  return TRUE;
}

static gboolean
meta_load (SedpCube *c, GError **error)
{
  struct stat st;
  if (stat (c->dir, &st) != 0) {
    int e = errno;
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: cannot open the cube: %s", c->dir,
                 g_strerror (e));
  }
  if (!S_ISDIR (st.st_mode))
    return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: not a cube (a cube is a folder)", c->dir);
  g_autofree char *path = g_build_filename (c->dir, CUBE_META_FILE, NULL);
  int fd = open_member (path, error);
  if (fd < 0)
    return FALSE;
  gboolean ok = FALSE;
  char *data = NULL;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: not a regular file", path);
    goto out;
  }
  if ((guint64) st.st_size > CUBE_MAX_META_BYTES) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: %" G_GINT64_FORMAT " bytes, more than metadata "
          "can be (%u MiB at most)", path, (gint64) st.st_size, CUBE_MAX_META_BYTES >> 20);
    goto out;
  }
  data = g_malloc ((gsize) st.st_size + 1);
  if (!pread_full (fd, data, (gsize) st.st_size, 0, path, error))
    goto out;
  data[st.st_size] = '\0';
  ok = meta_parse (c, data, (gsize) st.st_size, path, error);
out:
  g_free (data);
  close (fd);
  return ok;
}

/* ---- index ----------------------------------------------------------------------------- */

static gboolean
index_load (SedpCube *c, GError **error)
{
  g_autofree char *path = g_build_filename (c->dir, CUBE_INDEX_FILE, NULL);
  int fd = open_member (path, error);
  if (fd < 0)
    return FALSE;
  gboolean ok = FALSE;
  struct stat st;
  guint64 want = sizeof (SedpCubeIndexHeader) + c->index_slots * sizeof (SedpCubeSlot);
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: not a regular file", path);
    goto out;
  }
  if ((guint64) st.st_size != want) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: %" G_GINT64_FORMAT " bytes, but %" G_GUINT64_FORMAT
          " slots make %" G_GUINT64_FORMAT " (%s)", path, (gint64) st.st_size, c->index_slots,
          want, (guint64) st.st_size < want ? "truncated" : "trailing data");
    goto out;
  }
  SedpCubeIndexHeader h;
  if (!pread_full (fd, &h, sizeof h, 0, path, error))
    goto out;
  crypto_generichash_state state;
  crypto_generichash_init (&state, NULL, 0, CUBE_SUM_BYTES);
  crypto_generichash_update (&state, (const guint8 *) &h, sizeof h);
  if (memcmp (h.magic, CUBE_INDEX_MAGIC, sizeof h.magic) != 0) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: bad magic (not a cube index)", path);
    goto out;
  }
  guint64 n_slots = GUINT64_FROM_LE (h.n_slots), count = GUINT64_FROM_LE (h.count);
  if (n_slots != c->index_slots || count != c->meta.count || GUINT32_FROM_LE (h.has_zero) > 1) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: the header (%" G_GUINT64_FORMAT " slots, %"
          G_GUINT64_FORMAT " keys) does not match the metadata (%" G_GUINT64_FORMAT " slots, %"
          G_GUINT64_FORMAT " keys)", path, n_slots, count, c->index_slots, c->meta.count);
    goto out;
  }
  gsize bytes = (gsize) (n_slots * sizeof (SedpCubeSlot));
  c->slots = sedp_cube_map (bytes, path, error);
  if (c->slots == NULL)
    goto out;
  const gsize chunk = (gsize) 16 << 20;
  for (gsize off = 0; off < bytes; off += chunk) {
    gsize len = MIN (chunk, bytes - off);
    if (!pread_full (fd, (guint8 *) c->slots + off, len, sizeof h + off, path, error))
      goto out;
    crypto_generichash_update (&state, (const guint8 *) c->slots + off, len);
  }
  guint8 sum[CUBE_SUM_BYTES];
  crypto_generichash_final (&state, sum, CUBE_SUM_BYTES);
  if (sodium_memcmp (sum, c->index_sum, CUBE_SUM_BYTES) != 0) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
          "%s: checksum mismatch (the index was modified or damaged)", path);
    goto out;
  }
  c->has_zero = GUINT32_FROM_LE (h.has_zero);
  c->zero_block = GUINT32_FROM_LE (h.zero_block);
  c->zero_offset = GUINT32_FROM_LE (h.zero_offset);

  /* Every location must be inside the values: a lookup then never reads past a block. */
  guint64 used = 0;
  guint n_blocks = c->meta.n_blocks;
  guint64 last_values = n_blocks ? values_in_block (c, n_blocks - 1) : 0;
  for (guint64 i = 0; i < n_slots; i++) {
    SedpCubeSlot *s = &c->slots[i];
#if G_BYTE_ORDER == G_BIG_ENDIAN
    s->key = GUINT64_FROM_LE (s->key);
    s->block = GUINT32_FROM_LE (s->block);
    s->offset = GUINT32_FROM_LE (s->offset);
#endif
    if (s->key == 0)
      continue;
    used++;
    if (s->block >= n_blocks ||
        s->offset >= (s->block + 1u == n_blocks ? last_values : c->values_per_block)) {
      sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: slot %" G_GUINT64_FORMAT " points past the "
            "values (block %u, value %u)", path, i, s->block, s->offset);
      goto out;
    }
  }
  if (c->has_zero && (c->zero_block >= n_blocks || c->zero_offset >= values_in_block (c, c->zero_block))) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: key 0 points past the values", path);
    goto out;
  }
  if (used + (guint64) c->has_zero != c->meta.count) {
    sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: %" G_GUINT64_FORMAT " keys in the index, the "
          "metadata says %" G_GUINT64_FORMAT, path, used + (guint64) c->has_zero, c->meta.count);
    goto out;
  }
  ok = TRUE;
out:
  close (fd);
  return ok;
}

/* ---- blocks ---------------------------------------------------------------------------- */

/* Checks that every block file exists with the size the metadata gives it. */
static gboolean
blocks_stat (SedpCube *c, GError **error)
{
  for (guint b = 0; b < c->meta.n_blocks; b++) {
    g_autofree char *name = cube_block_name (b);
    g_autofree char *path = g_build_filename (c->dir, name, NULL);
    struct stat st;
    if (stat (path, &st) != 0) {
      int e = errno;
      if (e == ENOENT)
        return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: missing (the cube is incomplete)",
                     path);
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_IO, "%s: %s", path, g_strerror (e));
    }
    if (!S_ISREG (st.st_mode))
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: not a regular file", path);
    if ((guint64) st.st_size != c->block_bytes[b])
      return sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: %" G_GINT64_FORMAT " bytes, the metadata "
                   "says %" G_GUINT64_FORMAT " (%s)", path, (gint64) st.st_size,
                   c->block_bytes[b], (guint64) st.st_size < c->block_bytes[b] ? "truncated"
                                                                        : "trailing data");
  }
  return TRUE;
}

/* Reads block @b into @dest (NULL: only checks it) and checks its checksum. */
static gboolean
block_read (SedpCube *c, guint b, int fd, guint8 *dest, GError **error)
{
  g_autofree char *name = cube_block_name (b);
  g_autofree char *path = g_build_filename (c->dir, name, NULL);
  int own = -1;
  if (fd < 0 && (fd = own = open_member (path, error)) < 0)
    return FALSE;
  const gsize chunk = (gsize) 8 << 20;
  guint8 *scratch = dest ? NULL : g_malloc (chunk);
  crypto_generichash_state state;
  crypto_generichash_init (&state, NULL, 0, CUBE_SUM_BYTES);
  gboolean ok = TRUE;
  for (guint64 off = 0; off < c->block_bytes[b] && ok; off += chunk) {
    gsize len = (gsize) MIN ((guint64) chunk, c->block_bytes[b] - off);
    guint8 *buf = dest ? dest + off : scratch;
    ok = pread_full (fd, buf, len, off, path, error);
    if (ok)
      crypto_generichash_update (&state, buf, len);
  }
  if (ok) {
    guint8 sum[CUBE_SUM_BYTES];
    crypto_generichash_final (&state, sum, CUBE_SUM_BYTES);
    if (sodium_memcmp (sum, c->block_sums[b], CUBE_SUM_BYTES) != 0)
      ok = sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: checksum mismatch (the values were modified or damaged)", path);
  }
#if G_BYTE_ORDER == G_BIG_ENDIAN
  if (ok && dest)
    for (guint64 k = 0; k < c->block_bytes[b] / 4; k++)
      ((guint32 *) dest)[k] = GUINT32_FROM_LE (((guint32 *) dest)[k]);
#endif
  g_free (scratch);
  if (own >= 0)
    close (own);
  return ok;
}

/* ---- open / close ---------------------------------------------------------------------- */

static void cube_free (SedpCube *c);

/* Opens the cube in @dir anew. */
static SedpCube *
cube_open_fresh (const char *dir, SedpCubePlacement values, GError **error)
{
  SedpCube *c = g_new0 (SedpCube, 1);
  c->refs = 1;
  c->dir = g_strdup (dir);
  c->placement = values;
  if (!meta_load (c, error) || !blocks_stat (c, error) || !index_load (c, error))
    goto fail;
  guint n = c->meta.n_blocks;
  if (values == SEDP_CUBE_VALUES_MEMORY) {
    c->blocks = g_new0 (float *, MAX (n, 1));
    for (guint b = 0; b < n; b++) {
      g_autofree char *name = cube_block_name (b);
      g_autofree char *path = g_build_filename (c->dir, name, NULL);
      c->blocks[b] = sedp_cube_map ((gsize) c->block_bytes[b], path, error);
      if (c->blocks[b] == NULL || !block_read (c, b, -1, (guint8 *) c->blocks[b], error))
        goto fail;
    }
  } else {
    c->fds = g_new (int, MAX (n, 1));
    for (guint b = 0; b < n; b++)
      c->fds[b] = -1;
    for (guint b = 0; b < n; b++) {
      g_autofree char *name = cube_block_name (b);
      g_autofree char *path = g_build_filename (c->dir, name, NULL);
      if ((c->fds[b] = open_member (path, error)) < 0)
        goto fail;
    }
  }
  return c;
fail:
  cube_free (c);
  return NULL;
}

gboolean
sedp_cube_read_hash_key (const char *dir, guint8 *hash_key, GError **error)
{
  g_return_val_if_fail (dir != NULL && hash_key != NULL, FALSE);
  SedpCube *c = g_new0 (SedpCube, 1);
  c->dir = g_strdup (dir);
  gboolean ok = meta_load (c, error);
  if (ok)
    memcpy (hash_key, c->meta.hash_key, SEDP_CUBE_HASH_KEY_BYTES);
  cube_free (c);
  return ok;
}

/* ---- sharing ----
 *
 * A cube opened in memory twice — by two stages, or by two versions of a served model whose
 * bundles carry the same cube (docs/model-lifecycle.md) — is loaded once: its meta file names
 * every block's checksum and the index's, so two cubes with the same meta bytes have the same
 * values, wherever their folders are. */

static GMutex shared_lock;
static GHashTable *shared; /* share key -> SedpCube *, memory placement */

/* The key of the cube in @dir: the BLAKE2b of its meta file, or NULL when unreadable (the open
 * then reports why). */
static char *
share_key (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, CUBE_META_FILE, NULL);
  g_autofree char *text = NULL;
  gsize len;
  GStatBuf st;
  if (g_stat (path, &st) != 0 || (guint64) st.st_size > CUBE_MAX_META_BYTES ||
      !g_file_get_contents (path, &text, &len, NULL))
    return NULL;
  guint8 sum[32];
  crypto_generichash (sum, sizeof sum, (const guint8 *) text, len, NULL, 0);
  char *hex = g_malloc (2 * sizeof sum + 1);
  sedp_hex_encode (sum, sizeof sum, hex);
  return hex;
}

SedpCube *
sedp_cube_open (const char *dir, SedpCubePlacement values, GError **error)
{
  g_return_val_if_fail (dir != NULL, NULL);
  g_return_val_if_fail (values == SEDP_CUBE_VALUES_MEMORY || values == SEDP_CUBE_VALUES_DISK,
                        NULL);
  sedp_cube_sodium_init ();
  g_autofree char *key = values == SEDP_CUBE_VALUES_MEMORY ? share_key (dir) : NULL;
  if (key == NULL)
    return cube_open_fresh (dir, values, error);
  g_mutex_lock (&shared_lock);
  if (shared == NULL)
    shared = g_hash_table_new (g_str_hash, g_str_equal);
  SedpCube *c = g_hash_table_lookup (shared, key);
  if (c)
    c->refs++;
  else if ((c = cube_open_fresh (dir, values, error)) != NULL) {
    c->share_key = g_steal_pointer (&key);
    g_hash_table_insert (shared, c->share_key, c);
  }
  g_mutex_unlock (&shared_lock);
  return c;
}

void
sedp_cube_close (SedpCube *c)
{
  if (c == NULL)
    return;
  if (c->share_key) {
    g_mutex_lock (&shared_lock);
    gboolean last = --c->refs == 0;
    if (last)
      g_hash_table_remove (shared, c->share_key);
    g_mutex_unlock (&shared_lock);
    if (!last)
      return;
  }
  cube_free (c);
}

static void
cube_free (SedpCube *c)
{
  if (c == NULL)
    return;
  for (guint b = 0; c->blocks && b < c->meta.n_blocks; b++)
    sedp_cube_unmap (c->blocks[b], (gsize) c->block_bytes[b]);
  g_free (c->blocks);
  for (guint b = 0; c->fds && b < c->meta.n_blocks; b++)
    if (c->fds[b] >= 0)
      close (c->fds[b]);
  g_free (c->fds);
  if (c->slots)
    sedp_cube_unmap (c->slots, (gsize) (c->index_slots * sizeof (SedpCubeSlot)));
  g_free (c->block_bytes);
  g_free (c->block_sums);
  g_free (c->meta.name);
  g_free (c->dir);
  g_free (c->share_key);
  g_free (c);
}

const SedpCubeMeta *
sedp_cube_get_meta (const SedpCube *c)
{
  g_return_val_if_fail (c != NULL, NULL);
  return &c->meta;
}

guint64
sedp_cube_get_index_slots (const SedpCube *c)
{
  return c->index_slots;
}

const char *
sedp_cube_get_dir (const SedpCube *c)
{
  return c->dir;
}

SedpCubePlacement
sedp_cube_get_placement (const SedpCube *c)
{
  return c->placement;
}

/* ---- lookups --------------------------------------------------------------------------- */

/* Keys handled per round: their slots are prefetched together, then probed, then their values
 * prefetched together, then copied, so that up to this many cache misses are in flight. (16 to
 * 128 measured the same.) The prefetches are ordinary ones (into every cache level): the
 * non-temporal hint, which keeps a line out of L2, made in-memory lookups 10–40 % slower — lines
 * fetched a round ahead were lost before their use and fetched again (bench/run cube,
 * alternating rounds in one process). */
#define ROUND 32

/* The slot of @key, or NULL. Key 0 is handled by the caller. */
static inline const SedpCubeSlot *
probe (const SedpCubeSlot *slots, guint64 mask, guint64 home, guint64 key)
{
  for (guint64 i = home;; i = (i + 1) & mask) {
    const SedpCubeSlot *s = &slots[i];
    if (G_LIKELY (s->key == key))
      return s;
    if (s->key == 0)
      return NULL;
  }
}

/* Where @key's values are (block, offset), or FALSE. */
static inline gboolean
locate (const SedpCube *c, guint64 mask, guint64 key, guint32 *block, guint32 *offset)
{
  if (G_UNLIKELY (key == 0)) {
    *block = c->zero_block;
    *offset = c->zero_offset;
    return c->has_zero;
  }
  const SedpCubeSlot *s = probe (c->slots, mask, cube_home (key, c->shift), key);
  if (s == NULL)
    return FALSE;
  *block = s->block;
  *offset = s->offset;
  return TRUE;
}

/* Locates keys[base .. base+m) into @src (NULL: missing) and prefetches their values. */
static inline void
locate_round (const SedpCube *c, const guint64 *keys, guint m, const float **src)
{
  const guint64 mask = c->index_slots - 1;
  const gsize dim = c->meta.dim;
  for (guint j = 0; j < m; j++) {
    guint32 b, o;
    if (locate (c, mask, keys[j], &b, &o)) {
      src[j] = c->blocks[b] + (gsize) o * dim;
      __builtin_prefetch (src[j]);
      if (c->row_bytes > 64)
        __builtin_prefetch ((const char *) src[j] + 64);
    } else {
      src[j] = NULL;
    }
  }
}

static inline void
prefetch_round (const SedpCube *c, const guint64 *keys, guint m)
{
  for (guint j = 0; j < m; j++)
    __builtin_prefetch (&c->slots[cube_home (keys[j], c->shift)]);
}

static gint64
lookup_memory (SedpCube *c, const guint64 *keys, guint n, float *out, guint8 *found)
{
  const gsize dim = c->meta.dim, row = c->row_bytes;
  const float *src[2][ROUND];
  gint64 hits = 0;
  /* Software-pipelined in rounds of ROUND keys: while round r is copied, round r + 1 is located
   * (its slots were fetched during round r - 1, its values are fetched now) and the slots of
   * round r + 2 are fetched, so that each miss has a round's work to hide behind. */
  guint rounds = (n + ROUND - 1) / ROUND;
#define ROUND_LEN(r) ((r) + 1 < rounds ? ROUND : n - (r) * ROUND)
  prefetch_round (c, keys, ROUND_LEN (0));
  if (rounds > 1)
    prefetch_round (c, keys + ROUND, ROUND_LEN (1));
  locate_round (c, keys, ROUND_LEN (0), src[0]);
  for (guint r = 0; r < rounds; r++) {
    if (r + 2 < rounds)
      prefetch_round (c, keys + (gsize) (r + 2) * ROUND, ROUND_LEN (r + 2));
    if (r + 1 < rounds)
      locate_round (c, keys + (gsize) (r + 1) * ROUND, ROUND_LEN (r + 1), src[(r + 1) & 1]);
    const float **s = src[r & 1];
    guint base = r * ROUND, m = ROUND_LEN (r);
    for (guint j = 0; j < m; j++) {
      if (s[j]) {
        memcpy (out + (gsize) (base + j) * dim, s[j], row);
        hits++;
      }
      if (found)
        found[base + j] = s[j] != NULL;
    }
  }
#undef ROUND_LEN
  return hits;
}

static gint64
lookup_disk (SedpCube *c, const guint64 *keys, guint n, float *out, guint8 *found,
             GError **error)
{
  const guint64 mask = c->index_slots - 1;
  const guint shift = c->shift;
  const gsize dim = c->meta.dim, row = c->row_bytes;
  gint64 hits = 0;
  for (guint base = 0; base < n; base += ROUND) {
    guint m = MIN (ROUND, n - base);
    const guint64 *k = keys + base;
    for (guint j = 0; j < m; j++)
      __builtin_prefetch (&c->slots[cube_home (k[j], shift)]);
    for (guint j = 0; j < m; j++) {
      guint32 b, o;
      gboolean hit = locate (c, mask, k[j], &b, &o);
      if (hit) {
        float *dest = out + (gsize) (base + j) * dim;
        guint64 offset = (guint64) o * row;
        gsize done = 0;
        while (done < row) {
          ssize_t r = pread (c->fds[b], (guint8 *) dest + done, row - done,
                             (off_t) (offset + done));
          if (r < 0 && errno == EINTR)
            continue;
          if (r <= 0) {
            int e = r < 0 ? errno : 0;
            g_autofree char *name = cube_block_name (b);
            g_autofree char *path = g_build_filename (c->dir, name, NULL);
            g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "%s: cannot read: %s", path,
                         e ? g_strerror (e) : "the file was truncated after the cube was opened");
            return -1;
          }
          done += (gsize) r;
        }
#if G_BYTE_ORDER == G_BIG_ENDIAN
        for (gsize q = 0; q < dim; q++)
          ((guint32 *) dest)[q] = GUINT32_FROM_LE (((guint32 *) dest)[q]);
#endif
        hits++;
      }
      if (found)
        found[base + j] = hit;
    }
  }
  return hits;
}

gint64
sedp_cube_lookup (SedpCube *c, const guint64 *keys, guint n, float *out, guint8 *found,
                  GError **error)
{
  g_return_val_if_fail (c != NULL, -1);
  g_return_val_if_fail (n == 0 || (keys != NULL && out != NULL), -1);
  if (c->placement == SEDP_CUBE_VALUES_MEMORY)
    return lookup_memory (c, keys, n, out, found);
  return lookup_disk (c, keys, n, out, found, error);
}

/* ---- iteration and verification -------------------------------------------------------- */

gboolean
sedp_cube_foreach (SedpCube *c, SedpCubeForeachFunc func, gpointer user_data, GError **error)
{
  g_return_val_if_fail (c != NULL && func != NULL, FALSE);
  guint64 count = c->meta.count;
  if (count == 0)
    return TRUE;
  /* The key of every value, so that the values are read in storage order (sequentially). */
  guint64 *owner = sedp_cube_map ((gsize) (count * sizeof (guint64)), c->dir, error);
  if (owner == NULL)
    return FALSE;
  guint8 *has = g_malloc0 ((gsize) (count / 8 + 1));
  for (guint64 i = 0; i <= c->index_slots; i++) {
    guint64 key;
    guint32 b, o;
    if (i < c->index_slots) {
      if ((key = c->slots[i].key) == 0)
        continue;
      b = c->slots[i].block, o = c->slots[i].offset;
    } else if (c->has_zero) {
      key = 0, b = c->zero_block, o = c->zero_offset;
    } else {
      break;
    }
    guint64 v = (guint64) b * c->values_per_block + o;
    owner[v] = key;
    has[v / 8] |= (guint8) (1u << (v % 8));
  }
  gboolean ok = TRUE, go = TRUE;
  const gsize chunk_values = MAX ((gsize) 1, ((gsize) 4 << 20) / c->row_bytes);
  float *buf = c->placement == SEDP_CUBE_VALUES_DISK ? g_malloc (chunk_values * c->row_bytes)
                                                     : NULL;
  for (guint b = 0; b < c->meta.n_blocks && ok && go; b++) {
    guint64 in_block = values_in_block (c, b);
    for (guint64 first = 0; first < in_block && ok && go; first += chunk_values) {
      gsize n = (gsize) MIN ((guint64) chunk_values, in_block - first);
      const float *values;
      if (buf) {
        g_autofree char *name = cube_block_name (b);
        g_autofree char *path = g_build_filename (c->dir, name, NULL);
        if (!(ok = pread_full (c->fds[b], buf, n * c->row_bytes, first * c->row_bytes, path,
                               error)))
          break;
#if G_BYTE_ORDER == G_BIG_ENDIAN
        for (gsize q = 0; q < n * c->meta.dim; q++)
          ((guint32 *) buf)[q] = GUINT32_FROM_LE (((guint32 *) buf)[q]);
#endif
        values = buf;
      } else {
        values = c->blocks[b] + first * c->meta.dim;
      }
      for (gsize k = 0; k < n && go; k++) {
        guint64 v = (guint64) b * c->values_per_block + first + k;
        if (has[v / 8] & (1u << (v % 8)))
          go = func (owner[v], values + k * c->meta.dim, user_data);
      }
    }
  }
  g_free (buf);
  g_free (has);
  sedp_cube_unmap (owner, (gsize) (count * sizeof (guint64)));
  return ok;
}

gboolean
sedp_cube_verify (const char *dir, GError **error)
{
  g_return_val_if_fail (dir != NULL, FALSE);
  SedpCube *c = sedp_cube_open (dir, SEDP_CUBE_VALUES_DISK, error);
  if (c == NULL)
    return FALSE;
  gboolean ok = TRUE;
  for (guint b = 0; b < c->meta.n_blocks && ok; b++)
    ok = block_read (c, b, c->fds[b], NULL, error);

  /* The index: every key reachable from its home slot, no key twice, every value used once. */
  g_autofree char *path = g_build_filename (dir, CUBE_INDEX_FILE, NULL);
  const guint64 mask = c->index_slots - 1;
  guint64 count = c->meta.count;
  guint8 *used = ok ? g_malloc0 ((gsize) (count / 8 + 1)) : NULL;
  if (ok && c->has_zero) {
    guint64 v = (guint64) c->zero_block * c->values_per_block + c->zero_offset;
    used[v / 8] |= (guint8) (1u << (v % 8));
  }
  for (guint64 i = 0; ok && i < c->index_slots; i++) {
    const SedpCubeSlot *s = &c->slots[i];
    if (s->key == 0)
      continue;
    const SedpCubeSlot *first = probe (c->slots, mask, cube_home (s->key, c->shift), s->key);
    if (first != s) {
      ok = sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: key %" G_GUINT64_FORMAT " in slot %"
                 G_GUINT64_FORMAT " is %s", path, s->key, i,
                 first ? "there twice" : "not reachable from its home slot");
      break;
    }
    guint64 v = (guint64) s->block * c->values_per_block + s->offset;
    if (used[v / 8] & (1u << (v % 8))) {
      ok = sedp_cube_fail (error, SEDP_CUBE_ERROR_CORRUPT, "%s: key %" G_GUINT64_FORMAT " shares its "
                 "values (block %u, value %u) with another key", path, s->key, s->block,
                 s->offset);
      break;
    }
    used[v / 8] |= (guint8) (1u << (v % 8));
  }
  g_free (used);
  sedp_cube_close (c);
  return ok;
}
