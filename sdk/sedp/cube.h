/* sedp — sparse-parameter lookups for stage plugins: feature signatures and a cube source (a
 * local cube, Redis, or the cube cache in front of Redis) opened from options. A stage such as
 * cube_accessor uses these; the cube's format, builder and backends stay internal to libsedp
 * (docs/storage.md). */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_CUBE_ERROR: errors of cubes and their backends (codes: IO 0, CORRUPT 1, INVALID 2,
 * UNAVAILABLE 3). */
#define SEDP_CUBE_ERROR (sedp_cube_error_quark ())
SEDP_API GQuark sedp_cube_error_quark (void);

/**
 * SedpCubeError:
 * @SEDP_CUBE_ERROR_IO: cannot read or write a file
 * @SEDP_CUBE_ERROR_CORRUPT: a cube file is truncated, fails its checksum or is malformed
 * @SEDP_CUBE_ERROR_INVALID: bad input: a malformed TSV line, wrong dim, duplicate key, bad URL
 * @SEDP_CUBE_ERROR_UNAVAILABLE: a remote backend cannot be reached (down, timeout)
 */
typedef enum {
  SEDP_CUBE_ERROR_IO,
  SEDP_CUBE_ERROR_CORRUPT,
  SEDP_CUBE_ERROR_INVALID,
  SEDP_CUBE_ERROR_UNAVAILABLE,
} SedpCubeError;

/** SEDP_CUBE_HASH_KEY_BYTES: size of a cube's signature key. */
#define SEDP_CUBE_HASH_KEY_BYTES 16

/**
 * sedp_signature:
 * @hash_key: the cube's key (SEDP_CUBE_HASH_KEY_BYTES bytes)
 * @slot: the feature slot
 * @id: the raw feature id
 *
 * Returns: the 64-bit signature of @id in @slot: libsodium's keyed crypto_shorthash
 * (SipHash-2-4) of the 12 little-endian bytes (slot as u32, id as u64), read as a little-endian
 * u64. Cubes are keyed by signatures; build time and serve time use the cube's key.
 */
SEDP_API guint64 sedp_signature (const guint8 *hash_key, guint32 slot, guint64 id);

/**
 * sedp_cube_hash_key_parse:
 * @hex: exactly 2 × SEDP_CUBE_HASH_KEY_BYTES hex digits (as `sedp cube info` prints the key)
 * @hash_key: (out caller-allocates): SEDP_CUBE_HASH_KEY_BYTES bytes
 *
 * Returns: whether @hex was such a key (@hash_key is then set).
 */
SEDP_API gboolean sedp_cube_hash_key_parse (const char *hex, guint8 *hash_key);

/**
 * sedp_cube_read_hash_key:
 * @dir: a local cube's folder
 * @hash_key: (out caller-allocates): SEDP_CUBE_HASH_KEY_BYTES bytes
 *
 * Reads the cube's hash key from its metadata alone — neither its index nor its values are
 * loaded — for a stage that hashes features for the cube without looking anything up in it.
 * The metadata is checked as an open checks it. Any thread.
 *
 * Returns: %FALSE with a SEDP_CUBE_ERROR (IO, CORRUPT) naming the file when it cannot be read.
 */
SEDP_API gboolean sedp_cube_read_hash_key (const char *dir, guint8 *hash_key, GError **error);

/**
 * SedpCubeSource:
 * Where embeddings come from: a uniform, thread-safe, batched lookup of 64-bit keys into rows of
 * `dim` float32 values. Opaque to plugins.
 */
typedef struct _SedpCubeSource SedpCubeSource;

/**
 * SedpCubeSourceOptions:
 * @backend: "local" (a cube folder; the default when %NULL), "redis" (a Redis server or
 *   cluster), or "cached" (the cube cache, memory then disk tier, in front of Redis)
 * @cube: local: the cube's folder
 * @values: local: "memory" (blocks read into memory at open; the default) or "disk" (read on
 *   demand)
 * @redis_url: redis, cached: "redis://HOST:PORT" or "redis+cluster://HOST:PORT,HOST:PORT"
 * @name: redis, cached: the cube's name on the server
 * @timeout_ms: redis, cached: per request (0: the backend's default)
 * @reconnect_ms: redis, cached: least time between reconnection attempts (0: the default)
 * @memory_entries: cached: keys in the memory tier
 * @disk_entries: cached: keys in the disk tier (0: none)
 * @disk_path: cached: the disk tier's file
 * @policy: cached: "tinylfu", "lfu" or "lru" (%NULL: the cache's default)
 * @threads: cached: how many threads look up at once (0: as many as processors); the cache has
 *   no more shards (locks) than that
 *
 * What sedp_cube_source_open() opens. Zero-fill it, then set what the backend needs.
 */
typedef struct {
  const char *backend;
  const char *cube;
  const char *values;
  const char *redis_url;
  const char *name;
  guint timeout_ms;
  guint reconnect_ms;
  guint64 memory_entries;
  guint64 disk_entries;
  const char *disk_path;
  const char *policy;
  guint threads;
  gpointer _reserved[SEDP_PADDING - 1];
} SedpCubeSourceOptions;

/**
 * sedp_cube_source_open:
 *
 * Opens a source. A local cube is checked completely (metadata, index and, in memory, every
 * block's checksum); a remote backend is connected and its metadata read.
 *
 * Returns: (transfer full) (nullable): the source, or %NULL with @error (SEDP_CUBE_ERROR: IO,
 *   CORRUPT naming the file, INVALID for bad options, UNAVAILABLE when Redis cannot be reached).
 */
SEDP_API SedpCubeSource *sedp_cube_source_open (const SedpCubeSourceOptions *options,
                                                GError **error);

/** sedp_cube_source_get_dim: Returns: the values per key. */
SEDP_API guint sedp_cube_source_get_dim (const SedpCubeSource *source);

/**
 * sedp_cube_source_get_hash_key:
 * @hash_key: (out caller-allocates): SEDP_CUBE_HASH_KEY_BYTES bytes
 *
 * Returns: %TRUE with the cube's signature key when the source knows it (a local cube always
 *   does).
 */
SEDP_API gboolean sedp_cube_source_get_hash_key (const SedpCubeSource *source, guint8 *hash_key);

/**
 * sedp_cube_source_lookup:
 * @keys: (array length=n): signatures (duplicates allowed)
 * @out: (array): n × dim floats; the rows of missing keys are left as they are
 * @found: (array) (nullable): per key, 1 when found, 0 when missing
 *
 * Thread-safe.
 *
 * Returns: the keys found (≥ 0), or -1 with @error when the backend failed as a whole (then
 *   nothing was written: use defaults).
 */
SEDP_API gint64 sedp_cube_source_lookup (SedpCubeSource *source, const guint64 *keys, guint n,
                                         float *out, guint8 *found, GError **error);

/** sedp_cube_source_stats: Appends "name value" lines of the source's counters to @out. */
SEDP_API void sedp_cube_source_stats (SedpCubeSource *source, GString *out);

/** sedp_cube_source_free: Closes @source (%NULL is ignored). */
SEDP_API void sedp_cube_source_free (SedpCubeSource *source);

G_END_DECLS
