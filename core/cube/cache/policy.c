/* sedp — cache admission and eviction policies over 64-bit keys: LRU, LFU with aging (JiZhi),
 * W-TinyLFU (Caffeine's design), and Belady's offline optimum.
 *
 * Every policy keeps its resident keys in a pool of `capacity` nodes (key, two links, one
 * policy word) found through an open-addressing index: memory is proportional to the capacity
 * (plus the sketch for W-TinyLFU), and every access is O(1) amortized. A node's index is the
 * key's *slot*, stable while the key stays resident; the caches keep values in arrays of slots. */
#include "policy-private.h"

#include "index.h"

#include <string.h>

#define NIL G_MAXUINT32

typedef struct {
  guint32 head; /* most recent */
  guint32 tail; /* least recent */
  guint32 len;
} List;

enum { SEG_WINDOW = 1, SEG_PROBATION, SEG_PROTECTED };

/* W-TinyLFU: a node's segment is also its index entry's tag, so that a hit reads it from the
 * entry it found, with REF: a protected node hit since it last came to the segment's front
 * (second chance). */
#define REF 0x100u
/* SAT: the key's four sketch counters were all at their maximum (15) when last counted, and no
 * halving has happened since. Counters only grow between halvings, so counting the key again
 * would change nothing (conservative update raises only counters below 15): a hit on a key so
 * marked skips the sketch and its two cache misses, with exactly the same result. Every halving
 * clears the marks (sat_clear). */
#define SAT 0x200u
#define SEG(p, n) (AUX (p, n))

/* LFU: the keys of one frequency, most recent first; buckets in ascending frequency. */
typedef struct {
  guint32 freq;
  List list;
  guint32 prev, next;
} Bucket;

/* A node's links and policy word, together: a hit touches one 16-byte node (and its two
 * neighbours), four to a cache line. */
typedef struct {
  guint32 prev, next;
  guint32 aux;          /* LFU: the node's bucket; W-TinyLFU: its segment */
  guint32 pad;
} Node;

#define PREV(p, n) ((p)->nodes[n].prev)
#define NEXT(p, n) ((p)->nodes[n].next)
#define AUX(p, n) ((p)->nodes[n].aux)

/* Count-min sketch of 4-bit counters (16 per word) with 4 counters per key, conservative update,
 * periodic halving, and an optional doorkeeper (a Bloom filter of the keys seen once this
 * period). Blocked, after Caffeine's FrequencySketch, but in two blocks: a key's counters 0 and 1
 * lie in one 64-byte block of 8 words, counters 2 and 3 in another (counter r in word 4 (r & 1)
 * to 4 (r & 1) + 3 of its block), so that an access costs two cache misses, not four. With all
 * four in one block (Caffeine's layout) the counters of keys that share a block are correlated,
 * and hit ratios fell by up to 0.003 at 1 % capacity (bench cube policies); with two they do not
 * (docs/storage.md). */
typedef struct {
  guint64 *table;       /* blocks × 8 words, 64-byte aligned */
  guint64 words;        /* in all */
  guint64 block_mask;   /* blocks - 1 */
  guint64 *door;        /* bits, or NULL */
  guint64 door_mask;
  guint64 additions;
  guint64 sample;
} Sketch;

struct _SedpCachePolicy {
  SedpCachePolicyKind kind;
  SedpCachePolicyParams params;
  guint64 capacity;
  guint32 cap;
  guint32 size;
  guint64 *keys;
  Node *nodes;
  guint32 free_head;
  SedpIndex index;

  List lru;             /* LRU; W-TinyLFU's window */
  List probation, protected_;
  guint32 window_cap, main_cap, protected_cap;
  Sketch sketch;

  Bucket *buckets;
  guint32 bucket_free;
  guint32 bucket_first; /* lowest frequency */
  guint64 accesses;
  guint64 period;
};

gboolean
sedp_cache_policy_kind_from_string (const char *name, SedpCachePolicyKind *kind)
{
  static const char *const names[] = {"lru", "lfu", "tinylfu"};
  for (guint i = 0; name && i < G_N_ELEMENTS (names); i++) {
    if (g_ascii_strcasecmp (name, names[i]) == 0) {
      if (kind)
        *kind = (SedpCachePolicyKind) i;
      return TRUE;
    }
  }
  return FALSE;
}

void
sedp_cache_policy_params_init (SedpCachePolicyParams *params, SedpCachePolicyKind kind)
{
  /* Tuned on the benchmark's traces (docs/storage.md, "Cube cache"): a long sample period and
   * a larger protected segment suit skewed, stable popularity; the doorkeeper did not pay. */
  (void) kind;
  params->window = 0.01;
  params->protected_share = 0.9;
  params->sample_factor = 40.0;
  params->sketch_factor = 8.0;
  params->doorkeeper = FALSE;
}

/* ---- lists of nodes ---- */

static inline void
list_push_front (SedpCachePolicy *p, List *l, guint32 n)
{
  PREV (p, n) = NIL;
  NEXT (p, n) = l->head;
  if (l->head != NIL)
    PREV (p, l->head) = n;
  else
    l->tail = n;
  l->head = n;
  l->len++;
}

static inline void
list_remove (SedpCachePolicy *p, List *l, guint32 n)
{
  guint32 a = PREV (p, n), b = NEXT (p, n);
  if (a != NIL)
    NEXT (p, a) = b;
  else
    l->head = b;
  if (b != NIL)
    PREV (p, b) = a;
  else
    l->tail = a;
  l->len--;
}

static inline void
list_to_front (SedpCachePolicy *p, List *l, guint32 n)
{
  if (l->head == n)
    return;
  list_remove (p, l, n);
  list_push_front (p, l, n);
}

static inline void
list_init (List *l)
{
  l->head = l->tail = NIL;
  l->len = 0;
}

/* ---- nodes ---- */

static inline guint32
node_alloc (SedpCachePolicy *p, guint64 key)
{
  guint32 n = p->free_head;
  p->free_head = NEXT (p, n);
  p->keys[n] = key;
  sedp_index_put (&p->index, key, n);
  p->size++;
  return n;
}

static inline void
node_free (SedpCachePolicy *p, guint32 n)
{
  sedp_index_remove (&p->index, p->keys[n]);
  NEXT (p, n) = p->free_head;
  p->free_head = n;
  p->size--;
}

/* ---- the sketch ---- */

static void
sketch_init (Sketch *s, guint64 capacity, const SedpCachePolicyParams *params)
{
  /* As many counters as 4 rows of sketch_factor × capacity (a power of two) would have. */
  guint64 counters = 4 * sedp_pow2_at_least (MAX ((guint64) ((double) capacity * params->sketch_factor), 64));
  s->words = counters / 16;
  s->block_mask = s->words / 8 - 1;
  s->table = sedp_table_alloc (s->words * sizeof (guint64), TRUE);
  s->sample = MAX ((guint64) ((double) capacity * params->sample_factor), 16);
  s->additions = 0;
  if (params->doorkeeper) {
    guint64 bits = sedp_pow2_at_least (MAX (s->sample * 2, 64));
    s->door = g_new0 (guint64, bits / 64);
    s->door_mask = bits - 1;
  }
}

static void
sketch_clear (Sketch *s)
{
  g_clear_pointer (&s->table, sedp_table_free);
  g_clear_pointer (&s->door, g_free);
}

/* A key's hash for the sketch: the low bits pick the first block, a multiple of the hash the
 * second, the high 32 bits the counters (6 bits each). */
static inline guint64
sketch_hash (guint64 key)
{
  return sedp_mix64 (key ^ 0x9E3779B97F4A7C15ull);
}

static inline guint64 *
sketch_block (const Sketch *s, guint64 h)
{
  return s->table + (h & s->block_mask) * 8;
}

static inline guint64 *
sketch_block2 (const Sketch *s, guint64 h)
{
  return s->table + (((h * 0x9E3779B97F4A7C15ull) >> 20) & s->block_mask) * 8;
}

/* Counter @r of the key hashed @h (in the first block for r < 2, else the second): its word in
 * the block and the shift in that word (6 bits of the high half of the hash each: 2 pick one of
 * the row's 4 words, 4 the counter). */
static inline guint
sketch_word (guint64 h, guint r)
{
  return 4 * (r & 1) + (guint) ((h >> (32 + 6 * r)) & 3);
}

static inline guint
sketch_shift (guint64 h, guint r)
{
  return (guint) ((h >> (34 + 6 * r)) & 15) * 4;
}

/* The doorkeeper's two bits of a key (from the high half of its hash). */
static inline gboolean
door_test (const Sketch *s, guint64 h)
{
  guint64 a = (h >> 32) & s->door_mask, b = ((h >> 32) * 0x2545F4914F6CDD1Dull >> 20) & s->door_mask;
  return (s->door[a >> 6] >> (a & 63) & 1) && (s->door[b >> 6] >> (b & 63) & 1);
}

static inline void
door_set (Sketch *s, guint64 h)
{
  guint64 a = (h >> 32) & s->door_mask, b = ((h >> 32) * 0x2545F4914F6CDD1Dull >> 20) & s->door_mask;
  s->door[a >> 6] |= 1ull << (a & 63);
  s->door[b >> 6] |= 1ull << (b & 63);
}

static inline guint
sketch_estimate_hash (const Sketch *s, guint64 h)
{
  const guint64 *b[2] = {sketch_block (s, h), sketch_block2 (s, h)};
  guint m = 15;
  for (guint r = 0; r < 4; r++)
    m = MIN (m, (guint) (b[r >> 1][sketch_word (h, r)] >> sketch_shift (h, r)) & 15);
  if (s->door && door_test (s, h))
    m++;
  return m;
}

static inline guint
sketch_estimate (const Sketch *s, guint64 key)
{
  return sketch_estimate_hash (s, sketch_hash (key));
}

static void
sketch_reset (Sketch *s)
{
  for (guint64 i = 0; i < s->words; i++)
    s->table[i] = (s->table[i] >> 1) & 0x7777777777777777ull;
  if (s->door)
    memset (s->door, 0, (s->door_mask + 1) / 8);
  s->additions /= 2;
}

/* Counts one access in blocks @b0, @b1 (no doorkeeper, no sample period). Returns whether the
 * key's counters are all at 15 now. */
static inline gboolean
sketch_count (guint64 *b0, guint64 *b1, guint64 h)
{
  guint64 *b[2] = {b0, b1};
  guint v[4], m = 15;
  for (guint r = 0; r < 4; r++) {
    v[r] = (guint) (b[r >> 1][sketch_word (h, r)] >> sketch_shift (h, r)) & 15;
    m = MIN (m, v[r]);
  }
  if (m == 15)
    return TRUE;
  /* Conservative update: raise only the counters at the minimum. A counter is read again before
   * it is raised: when the two blocks are one, two of a key's counters can be the same cell, which
   * must be raised once (twice would carry a 15 into the next counter). */
  for (guint r = 0; r < 4; r++) {
    guint64 *w = &b[r >> 1][sketch_word (h, r)];
    guint shift = sketch_shift (h, r);
    if (v[r] == m && ((*w >> shift) & 15) == m)
      *w += 1ull << shift;
  }
  return m == 14;
}

/* Counts one access of the key hashed @h. Returns whether that halved the counters. */
static inline gboolean
sketch_increment_hash (Sketch *s, guint64 h)
{
  if (s->door && !door_test (s, h))
    door_set (s, h);
  else
    sketch_count (sketch_block (s, h), sketch_block2 (s, h), h);
  if (G_UNLIKELY (++s->additions >= s->sample)) {
    sketch_reset (s);
    return TRUE;
  }
  return FALSE;
}

/* ---- LFU with aging ---- */

static guint32
bucket_new (SedpCachePolicy *p, guint32 freq, guint32 after)
{
  guint32 b = p->bucket_free;
  Bucket *bk = &p->buckets[b];
  p->bucket_free = bk->next;
  bk->freq = freq;
  list_init (&bk->list);
  bk->prev = after;
  if (after == NIL) {
    bk->next = p->bucket_first;
    p->bucket_first = b;
  } else {
    bk->next = p->buckets[after].next;
    p->buckets[after].next = b;
  }
  if (bk->next != NIL)
    p->buckets[bk->next].prev = b;
  return b;
}

static void
bucket_delete (SedpCachePolicy *p, guint32 b)
{
  Bucket *bk = &p->buckets[b];
  if (bk->prev != NIL)
    p->buckets[bk->prev].next = bk->next;
  else
    p->bucket_first = bk->next;
  if (bk->next != NIL)
    p->buckets[bk->next].prev = bk->prev;
  bk->next = p->bucket_free;
  p->bucket_free = b;
}

/* Halves every count (at least 1), merging buckets that meet. Entries that had the higher count
 * go to the recent end of the merged bucket, so they are evicted last. O(capacity). */
static void
lfu_age (SedpCachePolicy *p)
{
  guint32 b = p->bucket_first;
  guint32 keep = NIL; /* the bucket the previous ones merged into */
  while (b != NIL) {
    Bucket *bk = &p->buckets[b];
    guint32 next = bk->next;
    guint32 freq = MAX (bk->freq / 2, 1);
    if (keep != NIL && p->buckets[keep].freq == freq) {
      /* Move b's nodes in front of keep's (b had the higher count). */
      Bucket *kb = &p->buckets[keep];
      for (guint32 n = bk->list.head; n != NIL; n = NEXT (p, n))
        AUX (p, n) = keep;
      if (bk->list.len) {
        NEXT (p, bk->list.tail) = kb->list.head;
        if (kb->list.head != NIL)
          PREV (p, kb->list.head) = bk->list.tail;
        else
          kb->list.tail = bk->list.tail;
        kb->list.head = bk->list.head;
        kb->list.len += bk->list.len;
      }
      bucket_delete (p, b);
    } else {
      bk->freq = freq;
      keep = b;
    }
    b = next;
  }
}

static inline void
lfu_tick (SedpCachePolicy *p)
{
  if (++p->accesses >= p->period) {
    p->accesses = 0;
    lfu_age (p);
  }
}

/* A hit on node @n: one more use, so it moves to the next frequency's bucket. */
static void
lfu_hit (SedpCachePolicy *p, guint32 n)
{
  lfu_tick (p);
  guint32 b = AUX (p, n);
  guint32 nb = p->buckets[b].next;
  if (nb == NIL || p->buckets[nb].freq != p->buckets[b].freq + 1)
    nb = bucket_new (p, p->buckets[b].freq + 1, b);
  list_remove (p, &p->buckets[b].list, n);
  list_push_front (p, &p->buckets[nb].list, n);
  AUX (p, n) = nb;
  if (p->buckets[b].list.len == 0)
    bucket_delete (p, b);
}

static gboolean
lfu_access (SedpCachePolicy *p, guint64 key, guint32 *slot, gboolean *admitted, guint64 *evicted,
            gboolean *has_evicted)
{
  guint32 n = sedp_index_get (&p->index, key);
  if (n != NIL) {
    lfu_hit (p, n);
    *slot = n;
    return TRUE;
  }
  lfu_tick (p);
  if (p->size == p->cap) {
    /* Evict the least recently used key of the lowest frequency. */
    guint32 b = p->bucket_first;
    guint32 v = p->buckets[b].list.tail;
    list_remove (p, &p->buckets[b].list, v);
    if (p->buckets[b].list.len == 0)
      bucket_delete (p, b);
    *evicted = p->keys[v];
    *has_evicted = TRUE;
    node_free (p, v);
  }
  n = node_alloc (p, key);
  guint32 b = p->bucket_first;
  if (b == NIL || p->buckets[b].freq != 1)
    b = bucket_new (p, 1, NIL);
  list_push_front (p, &p->buckets[b].list, n);
  AUX (p, n) = b;
  *admitted = TRUE;
  *slot = n;
  return FALSE;
}

static void
lfu_remove (SedpCachePolicy *p, guint32 n)
{
  guint32 b = AUX (p, n);
  list_remove (p, &p->buckets[b].list, n);
  if (p->buckets[b].list.len == 0)
    bucket_delete (p, b);
}

/* ---- LRU ---- */

static inline void
lru_hit (SedpCachePolicy *p, guint32 n)
{
  list_to_front (p, &p->lru, n);
}

static gboolean
lru_access (SedpCachePolicy *p, guint64 key, guint32 *slot, gboolean *admitted, guint64 *evicted,
            gboolean *has_evicted)
{
  guint32 n = sedp_index_get (&p->index, key);
  if (n != NIL) {
    lru_hit (p, n);
    *slot = n;
    return TRUE;
  }
  if (p->size == p->cap) {
    guint32 v = p->lru.tail;
    list_remove (p, &p->lru, v);
    *evicted = p->keys[v];
    *has_evicted = TRUE;
    node_free (p, v);
  }
  n = node_alloc (p, key);
  list_push_front (p, &p->lru, n);
  *admitted = TRUE;
  *slot = n;
  return FALSE;
}

/* ---- W-TinyLFU ---- */

static inline List *
segment (SedpCachePolicy *p, guint32 n)
{
  return SEG (p, n) == SEG_WINDOW ? &p->lru : SEG (p, n) == SEG_PROBATION ? &p->probation : &p->protected_;
}

/* Evicts node @v from the segment it is in. */
static void
tiny_evict (SedpCachePolicy *p, guint32 v, guint64 *evicted, gboolean *has_evicted)
{
  list_remove (p, segment (p, v), v);
  *evicted = p->keys[v];
  *has_evicted = TRUE;
  node_free (p, v);
}

/* Node @n's index entry. */
static inline SedpIndexSlot *
node_entry (SedpCachePolicy *p, guint32 n)
{
  return sedp_index_find (&p->index, p->keys[n]);
}

/* Puts node @n (entry @e, or NULL to look it up) in segment @seg (no list change). */
static inline void
set_seg (SedpCachePolicy *p, guint32 n, SedpIndexSlot *e, guint32 seg)
{
  AUX (p, n) = seg;
  SedpIndexSlot *entry = e ? e : node_entry (p, n);
  entry->tag = seg | (entry->tag & SAT);
}

/* The protected segment is an LRU list with second chance (CLOCK): a hit only marks the key's
 * index entry (REF), which costs no list move, so a protected hit touches neither its node nor
 * its neighbours; a marked node that reaches the tail is moved to the front and unmarked. This
 * returns the segment's least recent key not hit since it last came to the front. */
static guint32
protected_tail (SedpCachePolicy *p)
{
  for (;;) {
    guint32 t = p->protected_.tail;
    if (t == NIL)
      return t;
    SedpIndexSlot *e = node_entry (p, t);
    if (!(e->tag & REF))
      return t;
    e->tag &= ~REF;
    list_to_front (p, &p->protected_, t);
  }
}

/* The main space's victim: probation's least recent, else protected's. */
static guint32
tiny_main_victim (SedpCachePolicy *p)
{
  return p->probation.tail != NIL ? p->probation.tail : protected_tail (p);
}

/* Forgets every SAT mark (after a halving). */
static void
sat_clear (SedpCachePolicy *p)
{
  for (guint64 i = 0; i <= p->index.mask; i++)
    p->index.slots[i].tag &= ~SAT;
}

/* Counts an access of the key hashed @h (sketch_hash()) in the sketch; when that halves the
 * counters, the SAT marks go. */
static inline void
tiny_count (SedpCachePolicy *p, guint64 h)
{
  if (G_UNLIKELY (sketch_increment_hash (&p->sketch, h)))
    sat_clear (p);
}

/* A hit on the key of index entry @e (its access already counted in the sketch). */
static inline void
tiny_hit (SedpCachePolicy *p, SedpIndexSlot *e)
{
  guint32 n = e->value;
  switch (e->tag & 0xffu) {
  case SEG_WINDOW:
    list_to_front (p, &p->lru, n);
    break;
  case SEG_PROBATION:
    list_remove (p, &p->probation, n);
    list_push_front (p, &p->protected_, n);
    set_seg (p, n, e, SEG_PROTECTED);
    if (p->protected_.len > p->protected_cap) {
      guint32 d = protected_tail (p); /* (no index change: @e stays valid) */
      list_remove (p, &p->protected_, d);
      list_push_front (p, &p->probation, d);
      set_seg (p, d, NULL, SEG_PROBATION);
    }
    break;
  default:
    if (!(e->tag & REF)) /* (a store only when it changes something: a clean line stays clean) */
      e->tag |= REF;
  }
}

static gboolean
tiny_access (SedpCachePolicy *p, guint64 key, guint32 *slot, gboolean *admitted, guint64 *evicted,
             gboolean *has_evicted)
{
  tiny_count (p, sketch_hash (key));
  SedpIndexSlot *e = sedp_index_find (&p->index, key);
  if (e) {
    tiny_hit (p, e);
    *slot = e->value;
    return TRUE;
  }
  guint32 n;
  if (p->size == p->cap) {
    if (p->main_cap == 0) {
      tiny_evict (p, p->lru.tail, evicted, has_evicted);
    } else if (p->lru.len < p->window_cap) {
      /* (Only after removals.) Room in the window: the main space gives up its victim. */
      tiny_evict (p, tiny_main_victim (p), evicted, has_evicted);
    } else {
      /* The window's least recent key enters the main space only if the sketch says it is used
       * more often than the key it would replace. */
      guint32 c = p->lru.tail, v = tiny_main_victim (p);
      if (sketch_estimate (&p->sketch, p->keys[c]) > sketch_estimate (&p->sketch, p->keys[v])) {
        tiny_evict (p, v, evicted, has_evicted);
        list_remove (p, &p->lru, c);
        list_push_front (p, &p->probation, c);
        set_seg (p, c, NULL, SEG_PROBATION);
      } else {
        tiny_evict (p, c, evicted, has_evicted);
      }
    }
  }
  n = node_alloc (p, key);
  list_push_front (p, &p->lru, n);
  set_seg (p, n, NULL, SEG_WINDOW);
  if (p->lru.len > p->window_cap) {
    /* Filling up: the window overflows into the main space, which has room. */
    guint32 c = p->lru.tail;
    list_remove (p, &p->lru, c);
    list_push_front (p, &p->probation, c);
    set_seg (p, c, NULL, SEG_PROBATION);
  }
  *admitted = TRUE;
  *slot = n;
  return FALSE;
}

/* ---- the interface ---- */

SedpCachePolicy *
sedp_cache_policy_new_full (SedpCachePolicyKind kind, guint64 capacity,
                            const SedpCachePolicyParams *params)
{
  g_return_val_if_fail (kind <= SEDP_CACHE_TINYLFU, NULL);
  g_return_val_if_fail (capacity < G_MAXUINT32, NULL);
  SedpCachePolicy *p = g_new0 (SedpCachePolicy, 1);
  p->kind = kind;
  if (params)
    p->params = *params;
  else
    sedp_cache_policy_params_init (&p->params, kind);
  p->capacity = capacity;
  p->cap = (guint32) capacity;
  guint32 alloc = MAX (p->cap, 1);
  p->keys = g_new (guint64, alloc);
  p->nodes = sedp_table_alloc (alloc * sizeof (Node), TRUE);
  for (guint32 i = 0; i < alloc; i++)
    NEXT (p, i) = i + 1 < p->cap ? i + 1 : NIL;
  p->free_head = p->cap ? 0 : NIL;
  sedp_index_init (&p->index, capacity);
  list_init (&p->lru);
  list_init (&p->probation);
  list_init (&p->protected_);
  switch (kind) {
  case SEDP_CACHE_TINYLFU: {
    guint32 w = (guint32) ((double) p->cap * p->params.window + 0.5);
    p->window_cap = p->cap == 0 ? 0 : CLAMP (w, 1, p->cap);
    p->main_cap = p->cap - p->window_cap;
    p->protected_cap = (guint32) ((double) p->main_cap * p->params.protected_share);
    sketch_init (&p->sketch, MAX (capacity, 1), &p->params);
    break;
  }
  case SEDP_CACHE_LFU:
    p->buckets = g_new (Bucket, alloc + 1);
    for (guint32 i = 0; i <= alloc; i++)
      p->buckets[i].next = i + 1 <= alloc ? i + 1 : NIL;
    p->bucket_free = 0;
    p->bucket_first = NIL;
    p->period = MAX ((guint64) ((double) capacity * p->params.sample_factor), 16);
    break;
  default:
    break;
  }
  return p;
}

SedpCachePolicy *
sedp_cache_policy_new (SedpCachePolicyKind kind, guint64 capacity)
{
  return sedp_cache_policy_new_full (kind, capacity, NULL);
}

void
sedp_cache_policy_free (SedpCachePolicy *p)
{
  if (p == NULL)
    return;
  g_free (p->keys);
  sedp_table_free (p->nodes);
  g_free (p->buckets);
  sketch_clear (&p->sketch);
  sedp_index_clear (&p->index);
  g_free (p);
}

guint32
sedp_cache_policy_access_slot (SedpCachePolicy *p, guint64 key, gboolean *hit, gboolean *admitted,
                               guint64 *evicted, gboolean *has_evicted)
{
  gboolean adm = FALSE, has = FALSE, h;
  guint64 ev = 0;
  guint32 slot = SEDP_CACHE_NO_SLOT;
  if (p->cap == 0) {
    h = FALSE;
    if (p->kind == SEDP_CACHE_TINYLFU)
      tiny_count (p, sketch_hash (key));
  } else if (p->kind == SEDP_CACHE_LRU) {
    h = lru_access (p, key, &slot, &adm, &ev, &has);
  } else if (p->kind == SEDP_CACHE_LFU) {
    h = lfu_access (p, key, &slot, &adm, &ev, &has);
  } else {
    h = tiny_access (p, key, &slot, &adm, &ev, &has);
  }
  if (hit)
    *hit = h;
  if (admitted)
    *admitted = adm;
  if (evicted)
    *evicted = ev;
  if (has_evicted)
    *has_evicted = has;
  return slot;
}

gboolean
sedp_cache_policy_access (SedpCachePolicy *p, guint64 key, gboolean *admitted, guint64 *evicted,
                          gboolean *has_evicted)
{
  g_return_val_if_fail (p != NULL, FALSE);
  gboolean hit;
  sedp_cache_policy_access_slot (p, key, &hit, admitted, evicted, has_evicted);
  return hit;
}

guint32
sedp_cache_policy_hit (SedpCachePolicy *p, guint64 key)
{
  SedpIndexSlot *e = sedp_index_find (&p->index, key);
  if (e == NULL)
    return SEDP_CACHE_NO_SLOT;
  guint32 n = e->value;
  /* Resident: the access is a hit, which never admits or evicts. */
  if (p->kind == SEDP_CACHE_LRU) {
    lru_hit (p, n);
  } else if (p->kind == SEDP_CACHE_LFU) {
    lfu_hit (p, n);
  } else {
    tiny_count (p, sketch_hash (key));
    tiny_hit (p, e);
  }
  return n;
}

void
sedp_cache_policy_prefetch (const SedpCachePolicy *p, guint64 key)
{
  __builtin_prefetch (sedp_index_home (&p->index, sedp_mix64 (key)));
  if (p->kind == SEDP_CACHE_TINYLFU && p->sketch.table) {
    guint64 h = sketch_hash (key);
    __builtin_prefetch (sketch_block (&p->sketch, h));
    __builtin_prefetch (sketch_block2 (&p->sketch, h));
  }
}

/* Keys are handled in chunks of this many, pass after pass, so that each pass's cache misses
 * overlap and what it prefetched for the next is still in the L1/L2 cache when used. */
#define HIT_CHUNK 128

guint
sedp_cache_policy_hit_many (SedpCachePolicy *p, const guint64 *keys, const guint *order, guint n,
                            guint32 *slots, const void *values, gsize value_bytes)
{
  guint64 ih[HIT_CHUNK], sh[HIT_CHUNK];
  SedpIndexSlot *ent[HIT_CHUNK];
  const gboolean tiny = p->kind == SEDP_CACHE_TINYLFU;
  const char *vbase = values;
  guint hits = 0;
#define KEY(i) keys[order ? order[c + (i)] : c + (i)]
  for (guint c = 0; c < n; c += HIT_CHUNK) {
    guint m = MIN (HIT_CHUNK, n - c);
    guint32 *sl = slots + c;
    /* 1. Hash; prefetch the index entries. */
    for (guint i = 0; i < m; i++) {
      ih[i] = sedp_mix64 (KEY (i));
      __builtin_prefetch (sedp_index_home (&p->index, ih[i]));
    }
    /* 2. Look the keys up; prefetch the sketch blocks a hit will count in (for W-TinyLFU, not a
     * saturated key's: SAT), the nodes it will relink (not a protected key's: its hit is a mark in
     * the index entry) and the values. */
    guint found = 0, relink = 0;
    for (guint i = 0; i < m; i++) {
      SedpIndexSlot *e = ent[i] = sedp_index_find_hashed (&p->index, KEY (i), ih[i]);
      guint32 s = sl[i] = e ? e->value : NIL;
      if (s == NIL)
        continue;
      found++;
      if (tiny && !(e->tag & SAT)) {
        sh[i] = sketch_hash (KEY (i));
        __builtin_prefetch (sketch_block (&p->sketch, sh[i]));
        __builtin_prefetch (sketch_block2 (&p->sketch, sh[i]));
      }
      if (!tiny || (e->tag & 0xffu) != SEG_PROTECTED) {
        __builtin_prefetch (&p->nodes[s]);
        relink++;
      }
      if (vbase && value_bytes == 64) {
        __builtin_prefetch (vbase + (gsize) s * 64); /* (dim 16: one line) */
      } else if (vbase) {
        const char *v = vbase + (gsize) s * value_bytes;
        for (gsize off = 0; off < value_bytes; off += 64)
          __builtin_prefetch (v + off);
        if (value_bytes % 64) /* (else the values are whole lines: the caches align them) */
          __builtin_prefetch (v + value_bytes - 1);
      }
    }
    /* 3. Prefetch the list neighbours a hit will relink (if a hit will). */
    if (p->kind != SEDP_CACHE_LFU && relink) {
      for (guint i = 0; i < m; i++) {
        if (sl[i] == NIL || (tiny && (ent[i]->tag & 0xffu) == SEG_PROTECTED))
          continue;
        const Node *nd = &p->nodes[sl[i]];
        if (nd->prev != NIL)
          __builtin_prefetch (&p->nodes[nd->prev], 1);
        if (nd->next != NIL)
          __builtin_prefetch (&p->nodes[nd->next], 1);
      }
    }
    /* 4. Record the hits, in order. */
    hits += found;
    Sketch *sk = &p->sketch;
    if (tiny && sk->door == NULL && sk->additions + found < sk->sample) {
      /* No halving in this chunk: the sketch's fields in registers, its count added once. */
      guint64 *table = sk->table, bmask = sk->block_mask;
      for (guint i = 0; i < m; i++) {
        if (sl[i] == NIL)
          continue;
        SedpIndexSlot *e = ent[i];
        guint64 h = sh[i];
        if (!(e->tag & SAT) &&
            sketch_count (table + (h & bmask) * 8, table + (((h * 0x9E3779B97F4A7C15ull) >> 20) & bmask) * 8, h))
          e->tag |= SAT;
        tiny_hit (p, e);
      }
      sk->additions += found;
      continue;
    }
    for (guint i = 0; i < m; i++) {
      guint32 s = sl[i];
      if (s == NIL)
        continue;
      if (tiny) {
        /* (A halving here clears the marks: sh[] is not set for every key marked in pass 2.) */
        tiny_count (p, sketch_hash (KEY (i)));
        tiny_hit (p, ent[i]);
      } else if (p->kind == SEDP_CACHE_LRU) {
        lru_hit (p, s);
      } else {
        lfu_hit (p, s);
      }
    }
  }
#undef KEY
  return hits;
}

guint
sedp_cache_policy_frequency (const SedpCachePolicy *p, guint64 key)
{
  return p->kind == SEDP_CACHE_TINYLFU ? sketch_estimate (&p->sketch, key) : 0;
}

void
sedp_cache_policy_sketch_cells (const SedpCachePolicy *p, guint64 key, guint64 word[4], guint shift[4])
{
  guint64 h = sketch_hash (key);
  for (guint r = 0; r < 4; r++) {
    word[r] = p->kind == SEDP_CACHE_TINYLFU
                  ? (guint64) ((r < 2 ? sketch_block (&p->sketch, h) : sketch_block2 (&p->sketch, h)) -
                               p->sketch.table) + sketch_word (h, r)
                  : 0;
    shift[r] = sketch_shift (h, r);
  }
}

gboolean
sedp_cache_policy_contains (const SedpCachePolicy *p, guint64 key)
{
  g_return_val_if_fail (p != NULL, FALSE);
  return sedp_index_get (&p->index, key) != NIL;
}

guint32
sedp_cache_policy_get_slot (const SedpCachePolicy *p, guint64 key)
{
  return sedp_index_get (&p->index, key);
}

guint64
sedp_cache_policy_get_size (const SedpCachePolicy *p)
{
  g_return_val_if_fail (p != NULL, 0);
  return p->size;
}

guint64
sedp_cache_policy_get_capacity (const SedpCachePolicy *p)
{
  return p->capacity;
}

gboolean
sedp_cache_policy_remove (SedpCachePolicy *p, guint64 key)
{
  guint32 n = sedp_index_get (&p->index, key);
  if (n == NIL)
    return FALSE;
  if (p->kind == SEDP_CACHE_LFU)
    lfu_remove (p, n);
  else if (p->kind == SEDP_CACHE_TINYLFU)
    list_remove (p, segment (p, n), n);
  else
    list_remove (p, &p->lru, n);
  node_free (p, n);
  return TRUE;
}

/* ---- Belady's optimum ---- */

guint32 *
sedp_cache_belady_next_use (const guint64 *trace, gsize n)
{
  g_return_val_if_fail (n < G_MAXUINT32, NULL);
  guint32 *next = g_new (guint32, MAX (n, 1));
  /* key → its next position, for the keys seen so far (walking backwards); grows as needed. */
  SedpIndex last;
  guint64 cap = 1 << 16;
  sedp_index_init (&last, cap);
  for (gsize i = n; i-- > 0;) {
    guint64 key = trace[i];
    guint32 *slot = NULL;
    for (guint64 j = sedp_mix64 (key) & last.mask;; j = (j + 1) & last.mask) {
      SedpIndexSlot *s = &last.slots[j];
      if (s->value == SEDP_INDEX_NONE) {
        s->key = key;
        last.len++;
        slot = &s->value;
        next[i] = (guint32) n;
        break;
      }
      if (s->key == key) {
        slot = &s->value;
        next[i] = s->value;
        break;
      }
    }
    *slot = (guint32) i;
    if (last.len > cap) {
      /* Rehash into a table twice as large. */
      SedpIndex bigger;
      cap *= 2;
      sedp_index_init (&bigger, cap);
      for (guint64 j = 0; j <= last.mask; j++)
        if (last.slots[j].value != SEDP_INDEX_NONE)
          sedp_index_put (&bigger, last.slots[j].key, last.slots[j].value);
      sedp_index_clear (&last);
      last = bigger;
    }
  }
  sedp_index_clear (&last);
  return next;
}

/* A binary max-heap of positions (the cached keys' next uses). */
typedef struct {
  guint32 *v;
  gsize len;
} Heap;

static inline void
heap_push (Heap *h, guint32 x)
{
  gsize i = h->len++;
  while (i > 0) {
    gsize up = (i - 1) / 2;
    if (h->v[up] >= x)
      break;
    h->v[i] = h->v[up];
    i = up;
  }
  h->v[i] = x;
}

static inline void
heap_sift_down (Heap *h, gsize i)
{
  guint32 x = h->v[i];
  for (;;) {
    gsize c = 2 * i + 1;
    if (c >= h->len)
      break;
    if (c + 1 < h->len && h->v[c + 1] > h->v[c])
      c++;
    if (h->v[c] <= x)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = x;
}

static inline guint32
heap_pop (Heap *h)
{
  guint32 top = h->v[0];
  h->v[0] = h->v[--h->len];
  if (h->len)
    heap_sift_down (h, 0);
  return top;
}

/* The optimum with bypass: a key whose next use is further away than that of every cached key
 * (or never comes) is not cached at all. A cached key is identified by the position of its next
 * use: `cached` is a bitmap over positions, and the heap holds those positions; entries of keys
 * that were hit since are stale (their position has passed) and are purged when the heap has
 * twice the capacity in entries, so it stays O(capacity) in size and O(log capacity) per step. */
guint64
sedp_cache_belady_hits (const guint32 *next, gsize n, guint64 capacity)
{
  if (capacity == 0 || n == 0)
    return 0;
  guint64 *cached = g_new0 (guint64, n / 64 + 1);
  gsize heap_max = (gsize) MIN (capacity, (guint64) n) * 2 + 2;
  Heap h = {g_new (guint32, heap_max), 0};
  guint64 size = 0, hits = 0;
#define IS_CACHED(i) ((cached[(i) >> 6] >> ((i) & 63)) & 1)
#define SET_CACHED(i) (cached[(i) >> 6] |= 1ull << ((i) & 63))
#define CLEAR_CACHED(i) (cached[(i) >> 6] &= ~(1ull << ((i) & 63)))
  for (gsize i = 0; i < n; i++) {
    guint32 nx = next[i];
    if (IS_CACHED (i)) {
      hits++;
      CLEAR_CACHED (i); /* its heap entry is now stale */
      if (nx == n) {
        size--; /* never used again: its room is free */
        continue;
      }
      SET_CACHED (nx);
    } else {
      if (nx == n)
        continue; /* never used again: bypass */
      if (size == capacity) {
        /* The live maximum: stale entries (positions ≤ i) sort below every live one. */
        while (h.len && !IS_CACHED (h.v[0]))
          heap_pop (&h);
        if (h.v[0] <= nx)
          continue; /* every cached key is needed sooner: bypass */
        guint32 out = heap_pop (&h);
        CLEAR_CACHED (out);
        size--;
      }
      size++;
      SET_CACHED (nx);
    }
    if (h.len + 1 >= heap_max) {
      /* Purge stale entries and rebuild. */
      gsize k = 0;
      for (gsize j = 0; j < h.len; j++)
        if (h.v[j] > i && IS_CACHED (h.v[j]))
          h.v[k++] = h.v[j];
      h.len = k;
      for (gsize j = h.len / 2; j-- > 0;)
        heap_sift_down (&h, j);
    }
    heap_push (&h, nx);
  }
#undef IS_CACHED
#undef SET_CACHED
#undef CLEAR_CACHED
  g_free (h.v);
  g_free (cached);
  return hits;
}

double
sedp_cache_belady_hit_ratio (const guint64 *trace, gsize n, guint64 capacity)
{
  g_return_val_if_fail (trace != NULL || n == 0, 0.0);
  if (n == 0)
    return 0.0;
  guint32 *next = sedp_cache_belady_next_use (trace, n);
  guint64 hits = sedp_cache_belady_hits (next, n, capacity);
  g_free (next);
  return (double) hits / (double) n;
}
