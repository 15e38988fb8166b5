/* sedp — the Redis backend's extras beyond source.h: uploads from arrays, the remote cube's
 * metadata, and Redis Cluster's key slot. */
#pragma once

#include "cube/cube.h"
#include "cube/source.h"

G_BEGIN_DECLS

/**
 * sedp_redis_push_arrays:
 * @meta: the cube's dim, version, creation time and hash key (name, count and blocks unused)
 * @keys: (array length=n): signatures, each once
 * @values: (array): n × dim floats
 *
 * Uploads @n keys under @options->name exactly as sedp_cube_push() uploads a local cube: the old
 * metadata deleted first, pipelined SETs, the metadata last. Errors: INVALID, UNAVAILABLE.
 */
SEDP_API gboolean sedp_redis_push_arrays (const SedpRedisOptions *options, const SedpCubeMeta *meta,
                                          const guint64 *keys, const float *values, guint64 n,
                                          GError **error);

/* The metadata read from NAME:meta when @source (made by sedp_cube_source_new_redis()) was
 * opened; NULL for another kind of source. n_blocks and block_size are 0. */
SEDP_API const SedpCubeMeta *sedp_cube_source_redis_get_meta (SedpCubeSource *source);

/* Redis Cluster's slot of a key: CRC16 (XMODEM) of the key, or of its first non-empty {hash tag},
 * modulo 16384. */
SEDP_API guint sedp_redis_key_slot (const char *key, gsize len);

G_END_DECLS
