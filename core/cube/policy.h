/* sedp — cache admission and eviction policies over 64-bit keys (the cube cache's brain, also
 * simulated on traces by the benchmark). */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

typedef enum {
  SEDP_CACHE_LRU = 0,   /* least recently used; admits everything */
  SEDP_CACHE_LFU,       /* least frequently used with periodic aging (halving), as in JiZhi */
  SEDP_CACHE_TINYLFU,   /* W-TinyLFU: a small LRU window, a count-min sketch admission filter, SLRU main */
} SedpCachePolicyKind;

/* "lru", "lfu", "tinylfu" → kind; FALSE for an unknown name. */
SEDP_API gboolean sedp_cache_policy_kind_from_string (const char *name, SedpCachePolicyKind *kind);

/**
 * SedpCachePolicy:
 * Which keys reside in a cache of @capacity entries. Not thread-safe: the cache that uses it
 * serializes calls. O(1) per access.
 */
typedef struct _SedpCachePolicy SedpCachePolicy;

SEDP_API SedpCachePolicy *sedp_cache_policy_new (SedpCachePolicyKind kind, guint64 capacity);
SEDP_API void sedp_cache_policy_free (SedpCachePolicy *policy);

/**
 * sedp_cache_policy_access:
 * @admitted: (out): on a miss, whether the key now resides in the cache
 * @evicted: (out): the key that left to make room, when *@has_evicted
 *
 * Records an access to @key. Returns: %TRUE on a hit.
 */
SEDP_API gboolean sedp_cache_policy_access (SedpCachePolicy *policy, guint64 key,
                                            gboolean *admitted, guint64 *evicted,
                                            gboolean *has_evicted);

SEDP_API gboolean sedp_cache_policy_contains (const SedpCachePolicy *policy, guint64 key);
SEDP_API guint64 sedp_cache_policy_get_size (const SedpCachePolicy *policy);

/* Belady's optimum (evict the key used furthest in the future) on @trace for @capacity: the
 * upper bound any online policy is measured against. Offline, O(n log capacity). */
SEDP_API double sedp_cache_belady_hit_ratio (const guint64 *trace, gsize n, guint64 capacity);

G_END_DECLS
