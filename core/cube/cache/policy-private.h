/* sedp — what the caches (and the benchmark) use of the policies beyond policy.h: the slot a
 * resident key occupies, removal, tunable parameters and Belady's optimum in two steps. */
#pragma once

#include "cube/policy.h"

G_BEGIN_DECLS

/* No slot: the key is not resident. */
#define SEDP_CACHE_NO_SLOT G_MAXUINT32

/**
 * SedpCachePolicyParams:
 * @window: W-TinyLFU: the window's share of the capacity (default 0.01)
 * @protected_share: W-TinyLFU: the protected segment's share of the main space (default 0.9)
 * @sample_factor: W-TinyLFU: the sketch halves its counters after this many counted accesses per
 *   entry of capacity (default 40); LFU: all counts are halved after this many accesses per
 *   entry (default 40)
 * @sketch_factor: W-TinyLFU: counters per row of the count-min sketch, per entry of capacity
 *   (rounded up to a power of two; default 8)
 * @doorkeeper: W-TinyLFU: a Bloom filter in front of the sketch that absorbs keys seen once per
 *   sample period (default FALSE)
 */
typedef struct {
  double window;
  double protected_share;
  double sample_factor;
  double sketch_factor;
  gboolean doorkeeper;
} SedpCachePolicyParams;

/* The defaults. */
void sedp_cache_policy_params_init (SedpCachePolicyParams *params, SedpCachePolicyKind kind);

SEDP_API SedpCachePolicy *sedp_cache_policy_new_full (SedpCachePolicyKind kind, guint64 capacity,
                                                      const SedpCachePolicyParams *params);

/**
 * sedp_cache_policy_access_slot:
 * Like sedp_cache_policy_access(); returns the slot (0 .. capacity-1) the key occupies after the
 * access, or SEDP_CACHE_NO_SLOT. Slots are stable while a key stays resident. When a miss
 * admits the key and evicts another, the evicted key's slot is the one the new key gets: its
 * old value is still there until the caller overwrites it.
 */
SEDP_API guint32 sedp_cache_policy_access_slot (SedpCachePolicy *policy, guint64 key, gboolean *hit,
                                                gboolean *admitted, guint64 *evicted,
                                                gboolean *has_evicted);

/**
 * sedp_cache_policy_hit:
 * Records an access to @key if it is resident (as sedp_cache_policy_access() would) and returns
 * its slot; otherwise records nothing and returns SEDP_CACHE_NO_SLOT. For a cache that looks up
 * values first and offers the missing ones for admission once it has them.
 */
SEDP_API guint32 sedp_cache_policy_hit (SedpCachePolicy *policy, guint64 key);

/* Prefetches what an access to @key will touch (its index entry and sketch counters), so that a
 * batch of keys can be prefetched first and looked up after. */
SEDP_API void sedp_cache_policy_prefetch (const SedpCachePolicy *policy, guint64 key);

/**
 * sedp_cache_policy_hit_many:
 * sedp_cache_policy_hit() for @n keys, in order: the key of position i is keys[order[i]] (keys[i]
 * when @order is NULL), its slot goes to slots[i]. The same accesses are recorded as with one
 * call per key, but the keys are hashed once and what each access touches (index entry, sketch
 * blocks, node, list neighbours) is prefetched a pass ahead, so the cache misses overlap; when
 * @values is given, the values of the slots found (@value_bytes each, slot after slot) are
 * prefetched too. Returns: how many keys were resident.
 */
SEDP_API guint sedp_cache_policy_hit_many (SedpCachePolicy *policy, const guint64 *keys,
                                           const guint *order, guint n, guint32 *slots,
                                           const void *values, gsize value_bytes);

/* W-TinyLFU: the sketch's estimate of @key's frequency (0 for the other policies); and where
 * its 4 counters are: word[r] (an index into the sketch's table of 64-bit words) and shift[r]
 * (the counter's lowest bit in that word). For the tests. */
SEDP_API guint sedp_cache_policy_frequency (const SedpCachePolicy *policy, guint64 key);
SEDP_API void sedp_cache_policy_sketch_cells (const SedpCachePolicy *policy, guint64 key,
                                              guint64 word[4], guint shift[4]);

/* The slot of a resident key (no access is recorded), or SEDP_CACHE_NO_SLOT. */
SEDP_API guint32 sedp_cache_policy_get_slot (const SedpCachePolicy *policy, guint64 key);

/* Removes a resident key (its slot becomes free). Returns: whether it was resident. */
SEDP_API gboolean sedp_cache_policy_remove (SedpCachePolicy *policy, guint64 key);

/* The policy's capacity. */
SEDP_API guint64 sedp_cache_policy_get_capacity (const SedpCachePolicy *policy);

/* Belady in two steps, so that one trace is prepared once for several capacities:
 * @next[i] is the position of the next access to trace[i]'s key, or @n when there is none. */
SEDP_API guint32 *sedp_cache_belady_next_use (const guint64 *trace, gsize n);
SEDP_API guint64 sedp_cache_belady_hits (const guint32 *next, gsize n, guint64 capacity);

G_END_DECLS
