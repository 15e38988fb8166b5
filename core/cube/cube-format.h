/* sedp — the on-disk layout of a local cube, shared by the builder (builder.c) and the reader
 * (cube.c). Private to libsedp. The format is described for users in docs/storage.md.
 *
 * A cube is a folder:
 *   meta               text: "SEDPCUBE 1", then "key: value" lines (name, dim, dtype, count,
 *                      version, created, hash_key, block_size, n_blocks, index_slots,
 *                      index_checksum, one "block-NNNNN.bin: BYTES CHECKSUM" line per block),
 *                      then "checksum: HEX" over every byte before that line.
 *   index              a 64-byte header (SedpCubeIndexHeader), then index_slots slots of 16 bytes
 *                      (SedpCubeSlot): an open-addressing table with linear probing; key 0 marks
 *                      an empty slot, and a real key 0 lives in the header instead.
 *   block-NNNNN.bin    values: float32, dim per key, in the order keys were added; every block
 *                      but the last holds exactly values_per_block = block_size / (4 dim) values.
 * Numbers in binary files are little-endian. Checksums are 16-byte BLAKE2b digests (libsodium
 * crypto_generichash), written as 32 lowercase hex digits. */
#pragma once

#include "cube.h"

#include "../util/hex.h"

#include <sodium.h>
#include <string.h>

G_BEGIN_DECLS

#define CUBE_MAGIC "SEDPCUBE"
#define CUBE_FORMAT_VERSION 1
#define CUBE_INDEX_MAGIC "SEDPIDX1"
#define CUBE_META_FILE "meta"
#define CUBE_INDEX_FILE "index"
#define CUBE_SUM_BYTES 16
#define CUBE_DEFAULT_BLOCK_SIZE (G_GUINT64_CONSTANT (1) << 30)

/* Limits: what a reader accepts before it allocates anything. */
#define CUBE_MAX_DIM 65536
#define CUBE_MAX_COUNT (G_GUINT64_CONSTANT (1) << 40)
#define CUBE_MAX_BLOCK_SIZE (G_GUINT64_CONSTANT (1) << 40)
#define CUBE_MAX_BLOCKS (1u << 20)
#define CUBE_MAX_META_BYTES (64u << 20)
#define CUBE_MIN_SLOTS 16
#define CUBE_MAX_NAME 200

/* One slot of the index: the key (0: empty) and where its values are: block number and value
 * number inside the block (values, not bytes). */
typedef struct {
  guint64 key;
  guint32 block;
  guint32 offset;
} SedpCubeSlot;

G_STATIC_ASSERT (sizeof (SedpCubeSlot) == 16);

/* The index file's header. */
typedef struct {
  char magic[8];       /* CUBE_INDEX_MAGIC */
  guint64 n_slots;     /* a power of two, = meta's index_slots */
  guint64 count;       /* keys, key 0 included */
  guint32 has_zero;    /* 1 when key 0 is in the cube */
  guint32 zero_block;  /* its location */
  guint32 zero_offset;
  guint32 reserved;
  guint8 pad[24];
} SedpCubeIndexHeader;

G_STATIC_ASSERT (sizeof (SedpCubeIndexHeader) == 64);

/* The home slot of @key in a table of 2^(64 - @shift) slots: Fibonacci hashing, so that
 * sequential keys spread as well as signatures do. */
static inline guint64
cube_home (guint64 key, guint shift)
{
  return (key * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> shift;
}

/* log2 of a power of two. */
static inline guint
cube_log2 (guint64 v)
{
  return 63u - (guint) __builtin_clzll (v);
}

/* Slots for @count keys: the smallest power of two ≥ 1.3 × count, at least CUBE_MIN_SLOTS. */
static inline guint64
cube_slots_for (guint64 count)
{
  guint64 need = count + (count * 3 + 9) / 10;
  guint64 n = CUBE_MIN_SLOTS;
  while (n < need)
    n <<= 1;
  return n;
}

static inline void
cube_hex (const guint8 *bytes, gsize n, char *out)
{
  sedp_hex_encode (bytes, n, out);
}

/* Exactly 2 @n hex digits → @out. */
static inline gboolean
cube_unhex (const char *text, guint8 *out, gsize n)
{
  return sedp_hex_decode (text, strlen (text), out, n);
}

/* "block-00042.bin" */
static inline char *
cube_block_name (guint block)
{
  return g_strdup_printf ("block-%05u.bin", block);
}

/* A valid cube name: 1..CUBE_MAX_NAME of [A-Za-z0-9_.-]. */
static inline gboolean
cube_name_valid (const char *name)
{
  gsize n = strlen (name);
  if (n == 0 || n > CUBE_MAX_NAME)
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '_' && *p != '.' && *p != '-')
      return FALSE;
  return TRUE;
}

/* More of an open cube, for `sedp cube info`, the sources and the Redis upload. */
SEDP_API guint64 sedp_cube_get_index_slots (const SedpCube *cube);
SEDP_API const char *sedp_cube_get_dir (const SedpCube *cube);
SEDP_API SedpCubePlacement sedp_cube_get_placement (const SedpCube *cube);

/* libsodium, initialized once (thread-safe). */
void sedp_cube_sodium_init (void);

/* Memory for the index and value blocks: anonymous mappings aligned to 2 MiB and advised for
 * transparent huge pages (random lookups miss the TLB less). NULL with @error (IO) when the
 * system refuses; free with cube_unmap(). */
gpointer sedp_cube_map (gsize bytes, const char *what, GError **error);
void sedp_cube_unmap (gpointer p, gsize bytes);

/* Sets a SEDP_CUBE_ERROR error from a printf-style message and returns FALSE (cube.c). */
gboolean sedp_cube_fail (GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

G_END_DECLS
