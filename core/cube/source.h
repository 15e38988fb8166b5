/* sedp — where a stage gets embeddings from: a local cube, Redis, or a cache in front of Redis. */
#pragma once

#include "cube.h"

G_BEGIN_DECLS

/**
 * SedpCubeSourceClass:
 * How one kind of source (local cube, Redis, cube cache) looks up embeddings. A source
 * (SedpCubeSource, declared in the SDK's cube header) is a uniform way to look up embeddings,
 * whatever holds them: lookups are thread-safe and batched, one call looks up many keys
 * (duplicates allowed), the backend groups them as it sees fit (pipelined multi-gets per Redis
 * node). Missing keys are reported, never invented.
 */
typedef struct {
  /* Returns keys found (≥ 0), or -1 with @error when the backend failed as a whole
   * (UNAVAILABLE: the caller uses defaults). */
  gint64 (*lookup) (SedpCubeSource *source, const guint64 *keys, guint n, float *out,
                    guint8 *found, GError **error);
  /* Appends "name value" lines of counters (hits, misses, degraded lookups, reconnects). */
  void (*stats) (SedpCubeSource *source, GString *out);
  void (*free) (SedpCubeSource *source);
} SedpCubeSourceClass;

struct _SedpCubeSource {
  const SedpCubeSourceClass *klass;
  guint dim;
};

/* A local cube (takes ownership). */
SEDP_API SedpCubeSource *sedp_cube_source_new_local (SedpCube *cube);

/**
 * SedpRedisOptions:
 * @url: "redis://HOST:PORT" for one server, or several comma-separated seeds of a Redis Cluster
 *   ("redis+cluster://HOST:PORT,HOST:PORT")
 * @name: the cube's name on the server (keys are NAME:SIGNATURE, the metadata NAME:meta)
 * @timeout_ms: per request
 * @reconnect_ms: the least time between reconnection attempts to a node that failed
 */
typedef struct {
  const char *url;
  const char *name;
  guint timeout_ms;
  guint reconnect_ms;
} SedpRedisOptions;

/* Connects (reading the cube's metadata from the server: its dim must match when @dim > 0).
 * Errors: INVALID (bad URL), UNAVAILABLE. */
SEDP_API SedpCubeSource *sedp_cube_source_new_redis (const SedpRedisOptions *options, guint dim,
                                                     GError **error);

/* Uploads a local cube to Redis under @name (pipelined SETs, then the metadata last). */
SEDP_API gboolean sedp_cube_push (SedpCube *cube, const SedpRedisOptions *options, GError **error);

/**
 * SedpCubeCacheOptions:
 * @memory_entries: capacity of the memory tier, in keys
 * @disk_entries: capacity of the disk tier, in keys (0: no disk tier)
 * @disk_path: the file of the disk tier
 * @policy: "lfu" (frequency with aging, as in JiZhi) or "tinylfu" (W-TinyLFU) or "lru"
 * @threads: how many threads look up at once (0: as many as there are processors); the cache
 *   is split into that many shards, each with its own locks, or fewer (at most the processors,
 *   16, and one per 4 096 memory entries) — one caller pays nothing for shards it cannot contend
 */
typedef struct {
  guint64 memory_entries;
  guint64 disk_entries;
  const char *disk_path;
  const char *policy;
  guint threads;
} SedpCubeCacheOptions;

/* The cube cache in front of @remote (takes ownership): memory tier, then disk tier, then the
 * remote; keys found remotely are admitted by the policy. */
SEDP_API SedpCubeSource *sedp_cube_source_new_cached (SedpCubeSource *remote,
                                                      const SedpCubeCacheOptions *options,
                                                      GError **error);

G_END_DECLS
