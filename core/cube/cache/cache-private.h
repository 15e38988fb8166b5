/* sedp — the cube cache's knobs for tests and the benchmark. */
#pragma once

#include "cube/source.h"

G_BEGIN_DECLS

/**
 * sedp_cube_source_new_cached_sharded:
 * @n_shards: how many independent shards (each with its own locks and policies) the keys are
 *   spread over; rounded down to a power of two; 0: automatic (as many as processors, at most
 *   16 and at most one per 4096 memory entries)
 *
 * sedp_cube_source_new_cached() with a chosen number of shards.
 */
SEDP_API SedpCubeSource *sedp_cube_source_new_cached_sharded (SedpCubeSource *remote,
                                                              const SedpCubeCacheOptions *options,
                                                              guint n_shards, GError **error);

/* The number of shards of a cached source (1 for other sources). */
SEDP_API guint sedp_cube_source_cached_get_shards (SedpCubeSource *source);

G_END_DECLS
