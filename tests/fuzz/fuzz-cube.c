/* sedp fuzz target `cube` — opening a local cube (core/cube/cube.c: the metadata, the index, the
 * value blocks, with both placements), lookups, iteration and verification.
 *
 * The input is a cube folder packed in one file (gen-seeds.c writes them from real cubes):
 *   byte 0      flags: FLAG_FIX_SUMS (the checksums are rewritten to match the files before
 *               opening, so that mutations get past them to the checks behind), FLAG_DISK (disk
 *               placement, else memory)
 *   then        the files' contents, each followed by SEPARATOR: meta, index, block-00000.bin,
 *               block-00001.bin, … (at most MAX_BLOCKS); a file left out does not exist. */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "cube/cube-format.h"

#include <string.h>

#define FLAG_FIX_SUMS 1
#define FLAG_DISK 2
#define SEPARATOR "\n--sedp-fuzz-file--\n"
#define MAX_BLOCKS 8
/* Keys taken from the cube to look up again, at most. */
#define MAX_KEYS 64

typedef struct {
  const guint8 *data;
  gsize size;
} Part;

/* Splits @data at each SEPARATOR into at most @max parts; returns how many. */
static guint
split (const guint8 *data, gsize size, Part *parts, guint max)
{
  gsize sep = strlen (SEPARATOR);
  guint n = 0;
  while (n < max && size > 0) {
    const guint8 *end = memmem (data, size, SEPARATOR, sep);
    gsize len = end ? (gsize) (end - data) : size;
    parts[n++] = (Part){data, len};
    if (end == NULL)
      break;
    data += len + sep;
    size -= len + sep;
  }
  return n;
}

static void
sum_hex (const guint8 *data, gsize size, char *hex)
{
  guint8 sum[CUBE_SUM_BYTES];
  crypto_generichash (sum, CUBE_SUM_BYTES, data, size, NULL, 0);
  cube_hex (sum, CUBE_SUM_BYTES, hex);
}

/* The meta of @meta with its index_checksum, block and checksum lines made to match the files. */
static GString *
fix_meta (const Part *meta, const Part *index, const Part *blocks, guint n_blocks)
{
  g_autofree char *text = g_strndup ((const char *) meta->data, meta->size);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GString *out = g_string_new (NULL);
  char hex[2 * CUBE_SUM_BYTES + 1];
  for (guint i = 0; lines[i]; i++) {
    const char *line = lines[i];
    guint b = 0;
    char bytes[32];
    if (g_str_has_prefix (line, "checksum: ")) {
      sum_hex ((const guint8 *) out->str, out->len, hex);
      g_string_append_printf (out, "checksum: %s", hex);
    } else if (g_str_has_prefix (line, "index_checksum: ") && index) {
      sum_hex (index->data, index->size, hex);
      g_string_append_printf (out, "index_checksum: %s", hex);
    } else if (sscanf (line, "block-%5u.bin: %31s ", &b, bytes) == 2 && b < n_blocks) {
      sum_hex (blocks[b].data, blocks[b].size, hex);
      g_string_append_printf (out, "block-%05u.bin: %s %s", b, bytes, hex);
    } else {
      g_string_append (out, line);
    }
    if (lines[i + 1])
      g_string_append_c (out, '\n');
  }
  return out;
}

static void
write_file (const char *dir, const char *name, const void *data, gsize size)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  if (!g_file_set_contents (path, data, (gssize) size, NULL))
    g_error ("fuzz: cannot write %s", path);
}

/* Writes the parts as the cube's files into @dir. */
static void
write_cube (const char *dir, guint flags, const Part *parts, guint n)
{
  fuzz_clear_dir (dir);
  const Part *index = n > 1 ? &parts[1] : NULL;
  guint n_blocks = n > 2 ? n - 2 : 0;
  for (guint b = 0; b < n_blocks; b++) {
    g_autofree char *name = cube_block_name (b);
    write_file (dir, name, parts[2 + b].data, parts[2 + b].size);
  }
  if (index)
    write_file (dir, CUBE_INDEX_FILE, index->data, index->size);
  if (n == 0)
    return;
  if (flags & FLAG_FIX_SUMS) {
    g_autoptr (GString) meta = fix_meta (&parts[0], index, parts + 2, n_blocks);
    write_file (dir, CUBE_META_FILE, meta->str, meta->len);
  } else {
    write_file (dir, CUBE_META_FILE, parts[0].data, parts[0].size);
  }
}

typedef struct {
  guint64 keys[MAX_KEYS];
  guint n;
  guint64 sum;
} Collect;

static gboolean
collect (guint64 key, const float *values, gpointer data)
{
  Collect *c = data;
  c->keys[c->n++] = key;
  c->sum += fuzz_checksum_bytes (values, sizeof (float));
  return c->n < MAX_KEYS;
}

/* Looks up the keys the cube holds (by foreach) and a few it may not. */
static void
use_cube (SedpCube *cube)
{
  const SedpCubeMeta *meta = sedp_cube_get_meta (cube);
  Collect c = {.n = 0};
  GError *error = NULL;
  if (!sedp_cube_foreach (cube, collect, &c, &error))
    fuzz_refused ("foreach", g_steal_pointer (&error));
  guint64 extra[] = {0, 1, 2, G_MAXUINT64, 0x9E3779B97F4A7C15};
  for (guint k = 0; k < G_N_ELEMENTS (extra) && c.n < MAX_KEYS; k++)
    c.keys[c.n++] = extra[k];
  float *out = g_new0 (float, (gsize) c.n * meta->dim);
  guint8 found[MAX_KEYS];
  if (sedp_cube_lookup (cube, c.keys, c.n, out, found, &error) < 0)
    fuzz_refused ("lookup", g_steal_pointer (&error));
  fuzz_checksum_bytes (out, (gsize) c.n * meta->dim * sizeof (float));
  g_free (out);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  if (sodium_init () < 0)
    g_error ("fuzz: sodium_init failed");
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  guint flags = data[0];
  Part parts[2 + MAX_BLOCKS];
  guint n = split (data + 1, size - 1, parts, G_N_ELEMENTS (parts));
  const char *dir = fuzz_tmpdir ();
  write_cube (dir, flags, parts, n);
  GError *error = NULL;
  SedpCube *cube = sedp_cube_open (dir, flags & FLAG_DISK ? SEDP_CUBE_VALUES_DISK
                                                          : SEDP_CUBE_VALUES_MEMORY, &error);
  if (cube == NULL) {
    g_assert (error != NULL && error->domain == SEDP_CUBE_ERROR);
    fuzz_refused ("open", error);
    return 0;
  }
  use_cube (cube);
  sedp_cube_close (cube);
  if (!sedp_cube_verify (dir, &error))
    fuzz_refused ("verify", error);
  return 0;
}
