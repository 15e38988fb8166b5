/* sedp — the cube: a read-only store of embeddings keyed by 64-bit feature signatures. */
#pragma once

#include <sedp/cube.h>

G_BEGIN_DECLS

/* The error domain and codes, the hash key size and sedp_signature() are in the SDK. */



/**
 * SedpCubeMeta:
 * What a cube's metadata holds. Values are float32, @dim per key.
 */
typedef struct {
  char *name;
  guint dim;
  guint64 count;                               /* keys */
  guint64 version;
  gint64 created;                              /* Unix seconds */
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];   /* keys signatures: sedp_signature() */
  guint64 block_size;                          /* bytes per value block file */
  guint n_blocks;
} SedpCubeMeta;

/** SedpCubePlacement: where the values of an open cube live (the key index is always in memory). */
typedef enum {
  SEDP_CUBE_VALUES_MEMORY = 0, /* blocks read into memory at open */
  SEDP_CUBE_VALUES_DISK,       /* blocks read on demand (pread) */
} SedpCubePlacement;



/** SedpCube: an open local cube. Lookups are thread-safe. */
typedef struct _SedpCube SedpCube;

/* Opens the cube in @dir; checks the metadata, the index and (memory placement) every block's
 * checksum. Errors: IO, CORRUPT. In memory placement, a cube already open whose meta file has
 * the same bytes (hence the same blocks and index, wherever its folder is) is shared, not
 * loaded again: each open takes a reference that sedp_cube_close() drops; the values are freed
 * with the last one. Thread-safe. */
SEDP_API SedpCube *sedp_cube_open (const char *dir, SedpCubePlacement values, GError **error);
SEDP_API void sedp_cube_close (SedpCube *cube);
SEDP_API const SedpCubeMeta *sedp_cube_get_meta (const SedpCube *cube);

/**
 * sedp_cube_lookup:
 * @keys: (array length=n): signatures
 * @out: (array): n × dim floats; rows of missing keys are left as they are
 * @found: (array) (nullable): per key, 1 when found
 *
 * Returns: the number of keys found, or -1 with @error set on an I/O error (disk placement).
 */
SEDP_API gint64 sedp_cube_lookup (SedpCube *cube, const guint64 *keys, guint n, float *out,
                                  guint8 *found, GError **error);

/**
 * SedpCubeForeachFunc:
 * @key: a signature
 * @values: its dim floats (valid during the call only)
 *
 * Returns: %TRUE to go on, %FALSE to stop.
 */
typedef gboolean (*SedpCubeForeachFunc) (guint64 key, const float *values, gpointer user_data);

/**
 * sedp_cube_foreach:
 * Calls @func for every key of @cube with its values, in storage order, each key once (used by
 * sedp_cube_push()). Stopping early (@func returned %FALSE) is not an error.
 *
 * Returns: %FALSE with @error set on an I/O error (disk placement), else %TRUE.
 */
SEDP_API gboolean sedp_cube_foreach (SedpCube *cube, SedpCubeForeachFunc func, gpointer user_data,
                                     GError **error);

/* Re-reads every block and checks it against its checksum and the index. */
SEDP_API gboolean sedp_cube_verify (const char *dir, GError **error);

/**
 * SedpCubeBuilder:
 * Writes a cube into DIR.tmp-XXXXXX and renames it to DIR when finished, so that a failed build
 * leaves nothing half-written.
 */
typedef struct _SedpCubeBuilder SedpCubeBuilder;

/* @hash_key NULL: a random key. @block_size 0: the default (1 GiB). */
SEDP_API SedpCubeBuilder *sedp_cube_builder_new (const char *dir, const char *name, guint dim,
                                                 const guint8 *hash_key, guint64 block_size,
                                                 GError **error);
/* Adds one key; a duplicate key is an error (INVALID) found at finish time at the latest. */
SEDP_API gboolean sedp_cube_builder_add (SedpCubeBuilder *builder, guint64 key,
                                         const float *values, GError **error);
SEDP_API guint64 sedp_cube_builder_get_count (const SedpCubeBuilder *builder);
/* Writes the index and metadata and renames the folder into place. Frees the builder. */
SEDP_API gboolean sedp_cube_builder_finish (SedpCubeBuilder *builder, GError **error);
/* Removes the temporary folder. Frees the builder. */
SEDP_API void sedp_cube_builder_abort (SedpCubeBuilder *builder);

G_END_DECLS
