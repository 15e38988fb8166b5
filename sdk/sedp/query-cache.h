/* sedp — the query cache (JiZhi's): scores of (user, item, model version) kept for a while, so
 * that a user-item pair scored recently skips the expensive stages. Used by the query_cache
 * stage; the serving layer calls sedp_query_cache_invalidate_user() on user feedback. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpQueryCacheOptions:
 * @capacity: entries kept at most; the least recently used go first
 * @ttl_ms: entries older than this are misses (and are removed); 0: no expiry
 * @admit_min_score: only entries whose first score is ≥ this are stored (NaN is never stored)
 * @n_scores: floats per entry (the width of the score column), ≥ 1
 */
typedef struct {
  guint64 capacity;
  gint64 ttl_ms;
  double admit_min_score;
  guint n_scores;
} SedpQueryCacheOptions;

/** SedpQueryCacheStats: counters since the cache was made. */
typedef struct {
  guint64 lookups;      /* keys looked up */
  guint64 hits;
  guint64 misses;       /* expired ones included */
  guint64 expired;      /* misses because the entry was older than ttl_ms */
  guint64 stores;       /* keys offered */
  guint64 admitted;
  guint64 rejected;     /* below admit_min_score */
  guint64 evictions;    /* to make room */
  guint64 invalidated;  /* removed by sedp_query_cache_invalidate_user() */
  guint64 entries;      /* now */
} SedpQueryCacheStats;

/**
 * SedpQueryCache:
 * A thread-safe LRU map from (user, item, model version) to scores, with an expiry window, an
 * admission condition and invalidation by user (O(entries of that user)). Keys are 64-bit:
 * integer ids as they are, strings through sedp_query_cache_key_of_string(). Reference counted.
 * Times are on the g_get_monotonic_time() clock, in microseconds, passed by the caller.
 */
typedef struct _SedpQueryCache SedpQueryCache;

SEDP_API SedpQueryCache *sedp_query_cache_new (const SedpQueryCacheOptions *options);
SEDP_API SedpQueryCache *sedp_query_cache_ref (SedpQueryCache *qc);
SEDP_API void sedp_query_cache_unref (SedpQueryCache *qc);
SEDP_API const SedpQueryCacheOptions *sedp_query_cache_get_options (const SedpQueryCache *qc);

/* The key of a string id (user, item or model version): a 64-bit hash. */
SEDP_API guint64 sedp_query_cache_key_of_string (const char *s);

/**
 * sedp_query_cache_lookup:
 * @scores: (out caller-allocates): n_scores floats, written on a hit
 *
 * Returns: %TRUE on a hit (an entry younger than ttl_ms); the entry becomes the most recent.
 */
SEDP_API gboolean sedp_query_cache_lookup (SedpQueryCache *qc, guint64 user, guint64 item,
                                           guint64 version, gint64 now_us, float *scores);

/**
 * sedp_query_cache_lookup_many:
 * @items: (array length=n): items of one @user
 * @scores: (out caller-allocates): n × n_scores floats; rows of misses are left as they are
 * @hit: (out caller-allocates): per item, 1 on a hit
 *
 * Looks up several items of one user at once (one lock). Returns: the hits.
 */
SEDP_API guint sedp_query_cache_lookup_many (SedpQueryCache *qc, guint64 user, guint64 version,
                                             const guint64 *items, guint n, gint64 now_us,
                                             float *scores, guint8 *hit);

/**
 * sedp_query_cache_store:
 * @scores: n_scores floats
 *
 * Stores (or refreshes) an entry when its first score passes the admission condition; a
 * refused store removes an older entry of the same key. Returns: whether it was stored.
 */
SEDP_API gboolean sedp_query_cache_store (SedpQueryCache *qc, guint64 user, guint64 item,
                                          guint64 version, const float *scores, gint64 now_us);

/* sedp_query_cache_store() for several items of one user (one lock). Returns: the entries stored. */
SEDP_API guint sedp_query_cache_store_many (SedpQueryCache *qc, guint64 user, guint64 version,
                                            const guint64 *items, guint n, const float *scores,
                                            gint64 now_us);

/**
 * sedp_query_cache_invalidate_user:
 *
 * Removes every entry of @user (all items, all model versions): what the serving layer calls when
 * feedback from that user (a click, a purchase) makes the cached scores stale.
 *
 * Returns: the entries removed.
 */
SEDP_API guint sedp_query_cache_invalidate_user (SedpQueryCache *qc, guint64 user);

/* Removes every entry. */
SEDP_API void sedp_query_cache_clear (SedpQueryCache *qc);

SEDP_API void sedp_query_cache_get_stats (SedpQueryCache *qc, SedpQueryCacheStats *stats);

/* ---- caches shared by name within the process (the query_cache stages, the serving layer) ---- */

/**
 * sedp_query_cache_acquire:
 * @name: the cache's name (the query_cache stages' `cache` option)
 *
 * Returns the cache called @name, made with @options if there is none yet. Stages that share a
 * cache (a lookup stage and a store stage) must give it the same options.
 *
 * Returns: (transfer full) (nullable): a reference, or %NULL with @error (SEDP_CUBE_ERROR_INVALID)
 *   when a cache of that name exists with other options.
 */
SEDP_API SedpQueryCache *sedp_query_cache_acquire (const char *name,
                                                   const SedpQueryCacheOptions *options,
                                                   GError **error);

/* Returns: (transfer full) (nullable): the cache called @name, or %NULL. */
SEDP_API SedpQueryCache *sedp_query_cache_find (const char *name);

/* Invalidates @user in every named cache of the process. Returns: the entries removed. */
SEDP_API guint sedp_query_cache_invalidate_user_everywhere (guint64 user);

G_END_DECLS
