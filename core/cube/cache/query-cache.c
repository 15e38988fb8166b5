/* sedp — the query cache: an LRU of (user, item, model version) → scores with an expiry window,
 * an admission condition and per-user invalidation.
 *
 * Entries live in a pool of `capacity` nodes, found through an open-addressing index on a 64-bit
 * fingerprint of the key (the full key is compared, so a fingerprint collision is only a miss),
 * linked in an LRU list and in a list per user, whose heads are found through a second index:
 * invalidating a user walks only that user's entries. Keys are spread over shards by user (one
 * lock each), so all items of one user — one request's lookups — take one lock. */
#include "query-cache.h"

#include "cube/cube.h"
#include "index.h"

#include <math.h>
#include <string.h>

#define NIL G_MAXUINT32

typedef struct {
  guint64 user, item, version;
  gint64 stored_us;
  guint32 prev, next;           /* LRU: prev is more recent */
  guint32 user_prev, user_next; /* the user's list */
} Entry;

typedef struct {
  GMutex lock;
  guint32 cap;
  guint32 size;
  Entry *entries;
  float *scores;                /* cap × n_scores */
  guint32 free_head;
  guint32 head, tail;           /* most / least recent */
  SedpIndex index;              /* fingerprint → entry */
  SedpIndex users;              /* user → first entry of the user's list */
} Shard;

struct _SedpQueryCache {
  gint ref_count;
  char *name;                   /* in the registry of named caches, or NULL */
  SedpQueryCacheOptions options;
  gint64 ttl_us;
  guint n_shards;
  Shard *shards;
  SedpQueryCacheStats c;        /* entries unused here */
};

#define COUNT(qc, field, v) __atomic_fetch_add (&(qc)->c.field, (v), __ATOMIC_RELAXED)

static inline guint64
fingerprint (guint64 user, guint64 item, guint64 version)
{
  return sedp_mix64 (user * 0x9E3779B97F4A7C15ull ^ sedp_mix64 (item ^ sedp_mix64 (version + 0x632BE59BD9B4E019ull)));
}

static inline Shard *
shard_of (SedpQueryCache *qc, guint64 user)
{
  return &qc->shards[qc->n_shards == 1 ? 0 : sedp_mix64 (user ^ 0xD6E8FEB86659FD93ull) & (qc->n_shards - 1)];
}

guint64
sedp_query_cache_key_of_string (const char *s)
{
  guint64 h = 0xcbf29ce484222325ull; /* FNV-1a, then mixed */
  for (const guint8 *p = (const guint8 *) (s ? s : ""); *p; p++)
    h = (h ^ *p) * 0x100000001b3ull;
  return sedp_mix64 (h);
}

SedpQueryCache *
sedp_query_cache_new (const SedpQueryCacheOptions *o)
{
  g_return_val_if_fail (o != NULL && o->n_scores >= 1, NULL);
  g_return_val_if_fail (o->capacity < (guint64) G_MAXUINT32 * 16, NULL);
  SedpQueryCache *qc = g_new0 (SedpQueryCache, 1);
  qc->ref_count = 1;
  qc->options = *o;
  qc->ttl_us = o->ttl_ms > 0 ? o->ttl_ms * 1000 : 0;
  guint want = (guint) CLAMP (o->capacity / 4096, 1, 16), n = 1;
  while (n * 2 <= want)
    n *= 2;
  while (o->capacity / n >= G_MAXUINT32 - 1)
    n *= 2;
  qc->n_shards = n;
  qc->shards = g_new0 (Shard, n);
  for (guint k = 0; k < n; k++) {
    Shard *sh = &qc->shards[k];
    g_mutex_init (&sh->lock);
    sh->cap = (guint32) (o->capacity / n + (k < o->capacity % n));
    guint32 alloc = MAX (sh->cap, 1);
    sh->entries = g_new (Entry, alloc);
    sh->scores = g_new (float, (gsize) alloc * o->n_scores);
    for (guint32 i = 0; i < alloc; i++)
      sh->entries[i].next = i + 1 < sh->cap ? i + 1 : NIL;
    sh->free_head = sh->cap ? 0 : NIL;
    sh->head = sh->tail = NIL;
    sedp_index_init (&sh->index, sh->cap);
    sedp_index_init (&sh->users, sh->cap);
  }
  return qc;
}

SedpQueryCache *
sedp_query_cache_ref (SedpQueryCache *qc)
{
  g_return_val_if_fail (qc != NULL, NULL);
  g_atomic_int_inc (&qc->ref_count);
  return qc;
}

static GMutex registry_lock;
static GHashTable *registry; /* name → SedpQueryCache, without a reference of its own */

void
sedp_query_cache_unref (SedpQueryCache *qc)
{
  if (qc == NULL)
    return;
  if (qc->name) {
    /* Under the registry's lock, so that find() never revives a cache being freed. */
    g_mutex_lock (&registry_lock);
    if (!g_atomic_int_dec_and_test (&qc->ref_count)) {
      g_mutex_unlock (&registry_lock);
      return;
    }
    g_hash_table_remove (registry, qc->name);
    if (g_hash_table_size (registry) == 0)
      g_clear_pointer (&registry, g_hash_table_destroy);
    g_mutex_unlock (&registry_lock);
    g_free (qc->name);
  } else if (!g_atomic_int_dec_and_test (&qc->ref_count)) {
    return;
  }
  for (guint k = 0; k < qc->n_shards; k++) {
    Shard *sh = &qc->shards[k];
    g_free (sh->entries);
    g_free (sh->scores);
    sedp_index_clear (&sh->index);
    sedp_index_clear (&sh->users);
    g_mutex_clear (&sh->lock);
  }
  g_free (qc->shards);
  g_free (qc);
}

const SedpQueryCacheOptions *
sedp_query_cache_get_options (const SedpQueryCache *qc)
{
  g_return_val_if_fail (qc != NULL, NULL);
  return &qc->options;
}

/* ---- lists (shard locked) ---- */

static inline void
lru_unlink (Shard *sh, guint32 i)
{
  Entry *e = &sh->entries[i];
  if (e->prev != NIL)
    sh->entries[e->prev].next = e->next;
  else
    sh->head = e->next;
  if (e->next != NIL)
    sh->entries[e->next].prev = e->prev;
  else
    sh->tail = e->prev;
}

static inline void
lru_push_front (Shard *sh, guint32 i)
{
  Entry *e = &sh->entries[i];
  e->prev = NIL;
  e->next = sh->head;
  if (sh->head != NIL)
    sh->entries[sh->head].prev = i;
  else
    sh->tail = i;
  sh->head = i;
}

static inline void
user_link (Shard *sh, guint32 i)
{
  Entry *e = &sh->entries[i];
  guint32 first = sedp_index_get (&sh->users, e->user);
  e->user_prev = NIL;
  e->user_next = first;
  if (first != NIL)
    sh->entries[first].user_prev = i;
  sedp_index_put (&sh->users, e->user, i);
}

static inline void
user_unlink (Shard *sh, guint32 i)
{
  Entry *e = &sh->entries[i];
  if (e->user_next != NIL)
    sh->entries[e->user_next].user_prev = e->user_prev;
  if (e->user_prev != NIL)
    sh->entries[e->user_prev].user_next = e->user_next;
  else if (e->user_next != NIL)
    sedp_index_put (&sh->users, e->user, e->user_next);
  else
    sedp_index_remove (&sh->users, e->user);
}

static void
entry_remove (Shard *sh, guint32 i)
{
  Entry *e = &sh->entries[i];
  sedp_index_remove (&sh->index, fingerprint (e->user, e->item, e->version));
  lru_unlink (sh, i);
  user_unlink (sh, i);
  e->next = sh->free_head;
  sh->free_head = i;
  sh->size--;
}

/* The entry of a key, or NIL. */
static inline guint32
entry_find (Shard *sh, guint64 user, guint64 item, guint64 version)
{
  guint32 i = sedp_index_get (&sh->index, fingerprint (user, item, version));
  if (i == NIL)
    return NIL;
  const Entry *e = &sh->entries[i];
  return e->user == user && e->item == item && e->version == version ? i : NIL;
}

static gboolean
lookup_locked (SedpQueryCache *qc, Shard *sh, guint64 user, guint64 item, guint64 version,
               gint64 now_us, float *scores)
{
  guint32 i = entry_find (sh, user, item, version);
  if (i == NIL)
    return FALSE;
  if (qc->ttl_us > 0 && now_us - sh->entries[i].stored_us > qc->ttl_us) {
    entry_remove (sh, i);
    COUNT (qc, expired, 1);
    return FALSE;
  }
  if (sh->head != i) {
    lru_unlink (sh, i);
    lru_push_front (sh, i);
  }
  memcpy (scores, sh->scores + (gsize) i * qc->options.n_scores, sizeof (float) * qc->options.n_scores);
  return TRUE;
}

static gboolean
store_locked (SedpQueryCache *qc, Shard *sh, guint64 user, guint64 item, guint64 version,
              const float *scores, gint64 now_us)
{
  guint64 fp = fingerprint (user, item, version);
  guint32 i = sedp_index_get (&sh->index, fp);
  gboolean admit = !isnan (scores[0]) && scores[0] >= qc->options.admit_min_score && sh->cap > 0;
  if (i != NIL) {
    Entry *e = &sh->entries[i];
    if (!admit || e->user != user || e->item != item || e->version != version) {
      entry_remove (sh, i); /* stale now, or another key with the same fingerprint */
      i = NIL;
    }
  }
  if (!admit) {
    COUNT (qc, rejected, 1);
    return FALSE;
  }
  if (i == NIL) {
    if (sh->size == sh->cap) {
      entry_remove (sh, sh->tail);
      COUNT (qc, evictions, 1);
    }
    i = sh->free_head;
    sh->free_head = sh->entries[i].next;
    sh->size++;
    Entry *e = &sh->entries[i];
    e->user = user;
    e->item = item;
    e->version = version;
    sedp_index_put (&sh->index, fp, i);
    lru_push_front (sh, i);
    user_link (sh, i);
  } else if (sh->head != i) {
    lru_unlink (sh, i);
    lru_push_front (sh, i);
  }
  sh->entries[i].stored_us = now_us;
  memcpy (sh->scores + (gsize) i * qc->options.n_scores, scores, sizeof (float) * qc->options.n_scores);
  COUNT (qc, admitted, 1);
  return TRUE;
}

gboolean
sedp_query_cache_lookup (SedpQueryCache *qc, guint64 user, guint64 item, guint64 version,
                         gint64 now_us, float *scores)
{
  g_return_val_if_fail (qc != NULL && scores != NULL, FALSE);
  Shard *sh = shard_of (qc, user);
  g_mutex_lock (&sh->lock);
  gboolean hit = lookup_locked (qc, sh, user, item, version, now_us, scores);
  g_mutex_unlock (&sh->lock);
  COUNT (qc, lookups, 1);
  COUNT (qc, hits, hit);
  COUNT (qc, misses, !hit);
  return hit;
}

guint
sedp_query_cache_lookup_many (SedpQueryCache *qc, guint64 user, guint64 version,
                              const guint64 *items, guint n, gint64 now_us, float *scores,
                              guint8 *hit)
{
  g_return_val_if_fail (qc != NULL && (n == 0 || (items && scores && hit)), 0);
  Shard *sh = shard_of (qc, user);
  guint hits = 0;
  g_mutex_lock (&sh->lock);
  for (guint r = 0; r < n; r++) {
    hit[r] = lookup_locked (qc, sh, user, items[r], version, now_us,
                            scores + (gsize) r * qc->options.n_scores);
    hits += hit[r];
  }
  g_mutex_unlock (&sh->lock);
  COUNT (qc, lookups, n);
  COUNT (qc, hits, hits);
  COUNT (qc, misses, n - hits);
  return hits;
}

gboolean
sedp_query_cache_store (SedpQueryCache *qc, guint64 user, guint64 item, guint64 version,
                        const float *scores, gint64 now_us)
{
  g_return_val_if_fail (qc != NULL && scores != NULL, FALSE);
  Shard *sh = shard_of (qc, user);
  g_mutex_lock (&sh->lock);
  gboolean stored = store_locked (qc, sh, user, item, version, scores, now_us);
  g_mutex_unlock (&sh->lock);
  COUNT (qc, stores, 1);
  return stored;
}

guint
sedp_query_cache_store_many (SedpQueryCache *qc, guint64 user, guint64 version,
                             const guint64 *items, guint n, const float *scores, gint64 now_us)
{
  g_return_val_if_fail (qc != NULL && (n == 0 || (items && scores)), 0);
  Shard *sh = shard_of (qc, user);
  guint stored = 0;
  g_mutex_lock (&sh->lock);
  for (guint r = 0; r < n; r++)
    stored += store_locked (qc, sh, user, items[r], version,
                            scores + (gsize) r * qc->options.n_scores, now_us);
  g_mutex_unlock (&sh->lock);
  COUNT (qc, stores, n);
  return stored;
}

guint
sedp_query_cache_invalidate_user (SedpQueryCache *qc, guint64 user)
{
  g_return_val_if_fail (qc != NULL, 0);
  Shard *sh = shard_of (qc, user);
  guint removed = 0;
  g_mutex_lock (&sh->lock);
  guint32 i;
  while ((i = sedp_index_get (&sh->users, user)) != NIL) {
    entry_remove (sh, i);
    removed++;
  }
  g_mutex_unlock (&sh->lock);
  COUNT (qc, invalidated, removed);
  return removed;
}

void
sedp_query_cache_clear (SedpQueryCache *qc)
{
  g_return_if_fail (qc != NULL);
  for (guint k = 0; k < qc->n_shards; k++) {
    Shard *sh = &qc->shards[k];
    g_mutex_lock (&sh->lock);
    while (sh->tail != NIL)
      entry_remove (sh, sh->tail);
    g_mutex_unlock (&sh->lock);
  }
}

void
sedp_query_cache_get_stats (SedpQueryCache *qc, SedpQueryCacheStats *st)
{
  g_return_if_fail (qc != NULL && st != NULL);
  guint64 *src = (guint64 *) &qc->c, *dst = (guint64 *) st;
  for (guint k = 0; k < sizeof *st / sizeof (guint64); k++)
    dst[k] = __atomic_load_n (&src[k], __ATOMIC_RELAXED);
  st->entries = 0;
  for (guint k = 0; k < qc->n_shards; k++) {
    g_mutex_lock (&qc->shards[k].lock);
    st->entries += qc->shards[k].size;
    g_mutex_unlock (&qc->shards[k].lock);
  }
}

/* ---- named caches ---- */

static gboolean
same_options (const SedpQueryCacheOptions *a, const SedpQueryCacheOptions *b)
{
  return a->capacity == b->capacity && a->ttl_ms == b->ttl_ms && a->n_scores == b->n_scores &&
         (a->admit_min_score == b->admit_min_score ||
          (isnan (a->admit_min_score) && isnan (b->admit_min_score)));
}

SedpQueryCache *
sedp_query_cache_acquire (const char *name, const SedpQueryCacheOptions *options, GError **error)
{
  g_return_val_if_fail (name != NULL && options != NULL && options->n_scores >= 1, NULL);
  g_mutex_lock (&registry_lock);
  if (registry == NULL)
    registry = g_hash_table_new (g_str_hash, g_str_equal);
  SedpQueryCache *qc = g_hash_table_lookup (registry, name);
  if (qc) {
    if (!same_options (&qc->options, options)) {
      const SedpQueryCacheOptions *o = &qc->options;
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                   "query cache '%s' is already in use with other options (capacity %" G_GUINT64_FORMAT
                   ", ttl_ms %" G_GINT64_FORMAT ", admit_min_score %g, %u score(s) per entry): stages "
                   "that share a cache must agree",
                   name, o->capacity, o->ttl_ms, o->admit_min_score, o->n_scores);
      g_mutex_unlock (&registry_lock);
      return NULL;
    }
    sedp_query_cache_ref (qc);
  } else {
    qc = sedp_query_cache_new (options);
    qc->name = g_strdup (name);
    g_hash_table_insert (registry, qc->name, qc);
  }
  g_mutex_unlock (&registry_lock);
  return qc;
}

SedpQueryCache *
sedp_query_cache_find (const char *name)
{
  g_return_val_if_fail (name != NULL, NULL);
  g_mutex_lock (&registry_lock);
  SedpQueryCache *qc = registry ? g_hash_table_lookup (registry, name) : NULL;
  if (qc)
    sedp_query_cache_ref (qc);
  g_mutex_unlock (&registry_lock);
  return qc;
}

guint
sedp_query_cache_invalidate_user_everywhere (guint64 user)
{
  g_mutex_lock (&registry_lock);
  guint removed = 0;
  if (registry) {
    GHashTableIter it;
    gpointer qc;
    g_hash_table_iter_init (&it, registry);
    while (g_hash_table_iter_next (&it, NULL, &qc))
      removed += sedp_query_cache_invalidate_user (qc, user);
  }
  g_mutex_unlock (&registry_lock);
  return removed;
}
