/* sedp cache tests — the policies on synthetic traces: LRU against a reference, LFU's preference
 * for frequent keys and its aging, W-TinyLFU's scan resistance, the invariants every policy
 * keeps (what it reports matches what it holds; slots), and Belady's optimum: an upper bound of
 * every policy, and equal to a brute-force optimum on tiny traces. */
#include "test-common.h"

#include "cube/cache/policy-private.h"

#include <math.h>
#include <string.h>

static const SedpCachePolicyKind all_kinds[] = {SEDP_CACHE_LRU, SEDP_CACHE_LFU, SEDP_CACHE_TINYLFU};

static guint64
count_hits (SedpCachePolicyKind kind, guint64 capacity, const guint64 *trace, gsize n)
{
  SedpCachePolicy *p = sedp_cache_policy_new (kind, capacity);
  guint64 hits = 0;
  for (gsize i = 0; i < n; i++)
    hits += sedp_cache_policy_access (p, trace[i], NULL, NULL, NULL);
  sedp_cache_policy_free (p);
  return hits;
}

/* A Zipf-like trace over @n_keys keys (rank r drawn with weight 1/(r+1)^s), by inversion. */
static guint64 *
zipf_trace (gsize n, guint n_keys, double s, guint32 seed)
{
  double *cdf = g_new (double, n_keys), sum = 0;
  for (guint k = 0; k < n_keys; k++)
    cdf[k] = (sum += 1.0 / pow (k + 1, s));
  GRand *rng = g_rand_new_with_seed (seed);
  guint64 *t = g_new (guint64, n);
  for (gsize i = 0; i < n; i++) {
    double u = g_rand_double (rng) * sum;
    guint lo = 0, hi = n_keys - 1;
    while (lo < hi) {
      guint mid = (lo + hi) / 2;
      if (cdf[mid] < u)
        lo = mid + 1;
      else
        hi = mid;
    }
    t[i] = (guint64) lo * 0x9E3779B97F4A7C15ull; /* scattered keys */
  }
  g_rand_free (rng);
  g_free (cdf);
  return t;
}

static void
test_kind_names (void)
{
  SedpCachePolicyKind k = SEDP_CACHE_LRU;
  CU_ASSERT_TRUE (sedp_cache_policy_kind_from_string ("lfu", &k));
  CU_ASSERT_EQUAL (k, SEDP_CACHE_LFU);
  CU_ASSERT_TRUE (sedp_cache_policy_kind_from_string ("TinyLFU", &k));
  CU_ASSERT_EQUAL (k, SEDP_CACHE_TINYLFU);
  CU_ASSERT_TRUE (sedp_cache_policy_kind_from_string ("lru", &k));
  CU_ASSERT_EQUAL (k, SEDP_CACHE_LRU);
  CU_ASSERT_FALSE (sedp_cache_policy_kind_from_string ("arc", &k));
  CU_ASSERT_FALSE (sedp_cache_policy_kind_from_string (NULL, &k));
}

/* LRU, step by step, against a plain array kept in recency order. */
static void
test_lru_exact (void)
{
  /* A hand-checked trace first: capacity 3. */
  const guint64 trace[] = {1, 2, 3, 1, 4, 2, 5, 1, 3, 4};
  const gboolean want_hit[] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  const gint64 want_evicted[] = {-1, -1, -1, -1, 2, 3, 1, 4, 2, 5};
  SedpCachePolicy *p = sedp_cache_policy_new (SEDP_CACHE_LRU, 3);
  for (guint i = 0; i < G_N_ELEMENTS (trace); i++) {
    gboolean admitted = FALSE, has = FALSE;
    guint64 ev = 0;
    gboolean hit = sedp_cache_policy_access (p, trace[i], &admitted, &ev, &has);
    CU_ASSERT_EQUAL (hit, want_hit[i]);
    CU_ASSERT_EQUAL (admitted, !want_hit[i]);
    CU_ASSERT_EQUAL (has, want_evicted[i] >= 0);
    if (has)
      CU_ASSERT_EQUAL ((gint64) ev, want_evicted[i]);
  }
  CU_ASSERT_EQUAL (sedp_cache_policy_get_size (p), 3);
  CU_ASSERT_TRUE (sedp_cache_policy_contains (p, 1) && sedp_cache_policy_contains (p, 3) &&
                  sedp_cache_policy_contains (p, 4));
  sedp_cache_policy_free (p);

  /* Random traces against the reference. */
  GRand *rng = g_rand_new_with_seed (11);
  for (guint round = 0; round < 50; round++) {
    guint cap = (guint) g_rand_int_range (rng, 1, 9), universe = (guint) g_rand_int_range (rng, 2, 25);
    p = sedp_cache_policy_new (SEDP_CACHE_LRU, cap);
    guint64 ref[16];
    guint len = 0, bad = 0;
    for (guint i = 0; i < 400; i++) {
      guint64 key = (guint64) g_rand_int_range (rng, 0, (gint32) universe);
      guint pos = len;
      for (guint j = 0; j < len; j++)
        if (ref[j] == key)
          pos = j;
      gboolean ref_hit = pos < len;
      gint64 ref_ev = -1;
      if (ref_hit) {
        memmove (ref + 1, ref, pos * sizeof (guint64));
      } else {
        if (len == cap)
          ref_ev = (gint64) ref[--len];
        memmove (ref + 1, ref, len * sizeof (guint64));
        len++;
      }
      ref[0] = key;
      gboolean has = FALSE;
      guint64 ev = 0;
      gboolean hit = sedp_cache_policy_access (p, key, NULL, &ev, &has);
      bad += hit != ref_hit || has != (ref_ev >= 0) || (has && (gint64) ev != ref_ev);
    }
    CU_ASSERT_EQUAL (bad, 0);
    sedp_cache_policy_free (p);
  }
  g_rand_free (rng);
}

/* What every policy reports matches what it holds: a hit iff resident, an evicted key was
 * resident, size ≤ capacity, slots distinct and below capacity, and an admitted key that evicts
 * another takes its slot. */
static void
test_invariants (void)
{
  GRand *rng = g_rand_new_with_seed (5);
  for (guint k = 0; k < G_N_ELEMENTS (all_kinds); k++) {
    for (guint round = 0; round < 20; round++) {
      guint cap = (guint) g_rand_int_range (rng, 0, 40), universe = (guint) g_rand_int_range (rng, 1, 120);
      SedpCachePolicy *p = sedp_cache_policy_new (all_kinds[k], cap);
      GHashTable *held = g_hash_table_new (g_int64_hash, g_int64_equal);
      static gint64 keys[200];
      for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
        keys[i] = i;
      guint bad = 0;
      for (guint i = 0; i < 3000; i++) {
        /* Skewed: low keys more often. */
        guint a = (guint) g_rand_int_range (rng, 0, (gint32) universe);
        guint key = g_rand_boolean (rng) ? a : a / 4;
        gboolean was = g_hash_table_contains (held, &keys[key]);
        guint32 old_slot = sedp_cache_policy_get_slot (p, key);
        gboolean hit, admitted, has;
        guint64 ev;
        guint32 evicted_slot = SEDP_CACHE_NO_SLOT;
        if (i % 97 == 0 && was) {
          /* Now and then a removal. */
          bad += !sedp_cache_policy_remove (p, key);
          g_hash_table_remove (held, &keys[key]);
          continue;
        }
        guint32 slot = sedp_cache_policy_access_slot (p, key, &hit, &admitted, &ev, &has);
        bad += hit != was;
        if (hit)
          bad += slot != old_slot || admitted || has;
        if (has) {
          bad += !g_hash_table_contains (held, &keys[ev]) || ev == key;
          evicted_slot = slot; /* the new key took the evicted key's slot */
          g_hash_table_remove (held, &keys[ev]);
          bad += sedp_cache_policy_contains (p, ev);
        }
        if (admitted) {
          g_hash_table_add (held, &keys[key]);
          bad += slot == SEDP_CACHE_NO_SLOT || slot >= cap;
          if (has)
            bad += evicted_slot != slot;
        }
        bad += sedp_cache_policy_contains (p, key) != g_hash_table_contains (held, &keys[key]);
        bad += sedp_cache_policy_get_size (p) != g_hash_table_size (held);
        bad += sedp_cache_policy_get_size (p) > cap;
      }
      /* Slots of the resident keys are distinct. */
      guint8 *used = g_new0 (guint8, cap + 1);
      GHashTableIter it;
      gpointer kp;
      g_hash_table_iter_init (&it, held);
      while (g_hash_table_iter_next (&it, &kp, NULL)) {
        guint32 s = sedp_cache_policy_get_slot (p, (guint64) * (gint64 *) kp);
        bad += s >= cap || used[s];
        if (s < cap)
          used[s] = 1;
      }
      g_free (used);
      if (bad)
        fprintf (stderr, "\n  policy %u, capacity %u: %u inconsistencies\n", all_kinds[k], cap, bad);
      CU_ASSERT_EQUAL (bad, 0);
      g_hash_table_destroy (held);
      sedp_cache_policy_free (p);
    }
  }
  g_rand_free (rng);
}

static void
test_capacity_zero (void)
{
  for (guint k = 0; k < G_N_ELEMENTS (all_kinds); k++) {
    SedpCachePolicy *p = sedp_cache_policy_new (all_kinds[k], 0);
    for (guint i = 0; i < 100; i++) {
      gboolean admitted = TRUE, has = TRUE;
      CU_ASSERT_FALSE (sedp_cache_policy_access (p, i % 3, &admitted, NULL, &has));
      CU_ASSERT_FALSE (admitted);
      CU_ASSERT_FALSE (has);
    }
    CU_ASSERT_EQUAL (sedp_cache_policy_get_size (p), 0);
    sedp_cache_policy_free (p);
  }
  CU_ASSERT_EQUAL (sedp_cache_belady_hit_ratio ((const guint64[]){1, 1, 1}, 3, 0), 0.0);
}

/* LFU keeps keys used often over a stream of keys used once, where LRU loses them. */
static void
test_lfu_prefers_frequent (void)
{
  SedpCachePolicy *lfu = sedp_cache_policy_new (SEDP_CACHE_LFU, 10);
  SedpCachePolicy *lru = sedp_cache_policy_new (SEDP_CACHE_LRU, 10);
  for (guint round = 0; round < 20; round++)
    for (guint64 k = 0; k < 5; k++) {
      sedp_cache_policy_access (lfu, k, NULL, NULL, NULL);
      sedp_cache_policy_access (lru, k, NULL, NULL, NULL);
    }
  for (guint64 k = 1000; k < 1200; k++) {
    sedp_cache_policy_access (lfu, k, NULL, NULL, NULL);
    sedp_cache_policy_access (lru, k, NULL, NULL, NULL);
  }
  guint lfu_kept = 0, lru_kept = 0;
  for (guint64 k = 0; k < 5; k++) {
    lfu_kept += sedp_cache_policy_contains (lfu, k);
    lru_kept += sedp_cache_policy_contains (lru, k);
  }
  CU_ASSERT_EQUAL (lfu_kept, 5);
  CU_ASSERT_EQUAL (lru_kept, 0);
  /* The least frequent goes first: a key used 3 times outlives keys used once. */
  sedp_cache_policy_access (lfu, 77, NULL, NULL, NULL);
  sedp_cache_policy_access (lfu, 77, NULL, NULL, NULL);
  sedp_cache_policy_access (lfu, 77, NULL, NULL, NULL);
  for (guint64 k = 2000; k < 2050; k++)
    sedp_cache_policy_access (lfu, k, NULL, NULL, NULL);
  CU_ASSERT_TRUE (sedp_cache_policy_contains (lfu, 77));
  sedp_cache_policy_free (lfu);
  sedp_cache_policy_free (lru);
}

/* Aging: keys that were hot long ago give way to keys that are hot now, after a few periods,
 * instead of holding the cache forever on their old counts. */
static void
test_lfu_aging (void)
{
  const guint cap = 20;
  SedpCachePolicy *p = sedp_cache_policy_new (SEDP_CACHE_LFU, cap);
  /* Old favourites: 20 keys, 50 accesses each. */
  for (guint round = 0; round < 50; round++)
    for (guint64 k = 0; k < cap; k++)
      sedp_cache_policy_access (p, k, NULL, NULL, NULL);
  /* Now 10 other keys are used, 4 times per round, among one-off keys. */
  guint64 one_off = 1000000;
  for (guint round = 0; round < 400; round++) {
    for (guint64 k = 100; k < 110; k++)
      for (guint j = 0; j < 4; j++)
        sedp_cache_policy_access (p, k, NULL, NULL, NULL);
    for (guint j = 0; j < 10; j++)
      sedp_cache_policy_access (p, one_off++, NULL, NULL, NULL);
  }
  guint now_hot = 0;
  for (guint64 k = 100; k < 110; k++)
    now_hot += sedp_cache_policy_contains (p, k);
  CU_ASSERT_EQUAL (now_hot, 10);
  sedp_cache_policy_free (p);
}

/* W-TinyLFU: a hot set survives long scans of keys used once; LRU loses it to every scan. */
static void
test_tinylfu_scan_resistance (void)
{
  const guint cap = 200, hot = 100;
  SedpCachePolicy *tiny = sedp_cache_policy_new (SEDP_CACHE_TINYLFU, cap);
  SedpCachePolicy *lru = sedp_cache_policy_new (SEDP_CACHE_LRU, cap);
  GRand *rng = g_rand_new_with_seed (3);
  guint64 scan = 1 << 30;
  guint tiny_hits = 0, lru_hits = 0, hot_accesses = 0;
  for (guint round = 0; round < 60; round++) {
    /* 500 accesses to the hot set, then a scan of 1000 new keys. */
    for (guint i = 0; i < 500; i++) {
      guint64 k = (guint64) g_rand_int_range (rng, 0, (gint32) hot);
      gboolean t = sedp_cache_policy_access (tiny, k, NULL, NULL, NULL);
      gboolean l = sedp_cache_policy_access (lru, k, NULL, NULL, NULL);
      if (round >= 10) {
        tiny_hits += t;
        lru_hits += l;
        hot_accesses++;
      }
    }
    for (guint i = 0; i < 1000; i++) {
      sedp_cache_policy_access (tiny, scan, NULL, NULL, NULL);
      sedp_cache_policy_access (lru, scan++, NULL, NULL, NULL);
    }
  }
  double tiny_ratio = (double) tiny_hits / hot_accesses, lru_ratio = (double) lru_hits / hot_accesses;
  if (tiny_ratio < 0.95)
    fprintf (stderr, "\n  hot hit ratio: tinylfu %.3f, lru %.3f\n", tiny_ratio, lru_ratio);
  CU_ASSERT (tiny_ratio >= 0.95);
  CU_ASSERT (lru_ratio < 0.85);
  guint kept = 0;
  for (guint64 k = 0; k < hot; k++)
    kept += sedp_cache_policy_contains (tiny, k);
  CU_ASSERT (kept >= hot * 9 / 10);
  g_rand_free (rng);
  sedp_cache_policy_free (tiny);
  sedp_cache_policy_free (lru);
}

/* On skewed traces the frequency-based policies beat LRU clearly, and W-TinyLFU is at least
 * about as good as LFU (on a small, stable universe they tie; the benchmark's traces separate
 * them). */
static void
test_skewed_ordering (void)
{
  gsize n = g_getenv ("SEDP_VALGRIND") ? 60000 : 400000;
  guint64 *t = zipf_trace (n, 20000, 0.9, 17);
  guint64 lru = count_hits (SEDP_CACHE_LRU, 200, t, n);
  guint64 lfu = count_hits (SEDP_CACHE_LFU, 200, t, n);
  guint64 tiny = count_hits (SEDP_CACHE_TINYLFU, 200, t, n);
  double opt = sedp_cache_belady_hit_ratio (t, n, 200) * (double) n;
  CU_ASSERT (lfu > lru);
  CU_ASSERT (tiny > lru);
  CU_ASSERT (tiny * 100 >= lfu * 98);
  CU_ASSERT (lfu * 10 > lru * 12);
  CU_ASSERT ((double) tiny <= opt);
  g_free (t);
}

/* Belady's optimum is an upper bound of every policy, on random and skewed traces. */
static void
test_belady_upper_bound (void)
{
  GRand *rng = g_rand_new_with_seed (23);
  guint bad = 0;
  for (guint round = 0; round < 40; round++) {
    gsize n = (gsize) g_rand_int_range (rng, 1, 3000);
    guint universe = (guint) g_rand_int_range (rng, 1, 400);
    guint64 cap = (guint64) g_rand_int_range (rng, 0, 120);
    guint64 *t = round % 2 ? zipf_trace (n, universe, 1.0, round) : g_new (guint64, n);
    if (round % 2 == 0)
      for (gsize i = 0; i < n; i++)
        t[i] = (guint64) g_rand_int_range (rng, 0, (gint32) universe);
    guint32 *next = sedp_cache_belady_next_use (t, n);
    guint64 opt = sedp_cache_belady_hits (next, n, cap);
    for (guint k = 0; k < G_N_ELEMENTS (all_kinds); k++) {
      guint64 h = count_hits (all_kinds[k], cap, t, n);
      if (h > opt) {
        fprintf (stderr, "\n  policy %u beats Belady: %" G_GUINT64_FORMAT " > %" G_GUINT64_FORMAT "\n",
                 all_kinds[k], h, opt);
        bad++;
      }
    }
    /* The ratio agrees with the two-step form, and a capacity of every key hits all reuses. */
    CU_ASSERT_DOUBLE_EQUAL (sedp_cache_belady_hit_ratio (t, n, cap), (double) opt / n, 1e-12);
    guint64 reuses = 0;
    for (gsize i = 0; i < n; i++)
      reuses += next[i] != n;
    CU_ASSERT_EQUAL (sedp_cache_belady_hits (next, n, universe), reuses);
    g_free (next);
    g_free (t);
  }
  CU_ASSERT_EQUAL (bad, 0);
  g_rand_free (rng);
}

/* The best number of hits over every possible choice (admit or not, evict any key). */
static guint
brute_force (const guint64 *t, guint n, guint i, guint64 *cache, guint size, guint cap)
{
  if (i == n)
    return 0;
  for (guint k = 0; k < size; k++)
    if (cache[k] == t[i])
      return 1 + brute_force (t, n, i + 1, cache, size, cap);
  guint best = brute_force (t, n, i + 1, cache, size, cap); /* not cached */
  if (size < cap) {
    cache[size] = t[i];
    best = MAX (best, brute_force (t, n, i + 1, cache, size + 1, cap));
  } else {
    for (guint k = 0; k < size; k++) {
      guint64 old = cache[k];
      cache[k] = t[i];
      best = MAX (best, brute_force (t, n, i + 1, cache, size, cap));
      cache[k] = old;
    }
  }
  return best;
}

static void
test_belady_brute_force (void)
{
  GRand *rng = g_rand_new_with_seed (29);
  guint bad = 0, rounds = g_getenv ("SEDP_VALGRIND") ? 150 : 1500;
  for (guint round = 0; round < rounds; round++) {
    guint n = (guint) g_rand_int_range (rng, 1, 12), universe = (guint) g_rand_int_range (rng, 1, 6);
    guint64 t[12], cache[4];
    for (guint i = 0; i < n; i++)
      t[i] = (guint64) g_rand_int_range (rng, 0, (gint32) universe) * 7919;
    guint32 *next = sedp_cache_belady_next_use (t, n);
    for (guint cap = 1; cap <= 3; cap++) {
      guint want = brute_force (t, n, 0, cache, 0, cap);
      guint64 got = sedp_cache_belady_hits (next, n, cap);
      if (got != want) {
        fprintf (stderr, "\n  round %u capacity %u: Belady %" G_GUINT64_FORMAT ", optimum %u\n", round,
                 cap, got, want);
        bad++;
      }
    }
    g_free (next);
  }
  CU_ASSERT_EQUAL (bad, 0);
  g_rand_free (rng);
}

/* The heap of next uses is purged as it goes: a long trace with a small capacity. */
static void
test_belady_long_trace (void)
{
  gsize n = g_getenv ("SEDP_VALGRIND") ? 50000 : 1000000;
  guint64 *t = zipf_trace (n, 5000, 1.0, 31);
  double opt = sedp_cache_belady_hit_ratio (t, n, 50);
  double lru = (double) count_hits (SEDP_CACHE_LRU, 50, t, n) / n;
  CU_ASSERT (opt > lru);
  CU_ASSERT (opt < 1.0);
  g_free (t);
}

/* W-TinyLFU's sketch is blocked: a key's counters 0 and 1 lie in one 64-byte block (8 words,
 * 8-aligned), counters 2 and 3 in another, counter r in words 4 (r & 1) to 4 (r & 1) + 3 of its
 * block; its estimates never undercount, are exact while few keys share the sketch, saturate at
 * 15 and halve after the sample period. */
static void
test_sketch_blocks (void)
{
  SedpCachePolicy *p = sedp_cache_policy_new (SEDP_CACHE_TINYLFU, 1000);
  guint bad = 0;
  guint64 blocks_seen[64] = {0};
  for (guint64 key = 0; key < 4096; key++) {
    guint64 word[4];
    guint shift[4];
    sedp_cache_policy_sketch_cells (p, key * 0x9E3779B97F4A7C15ull, word, shift);
    for (guint r = 0; r < 4; r++) {
      bad += word[r] / 8 != word[r & 2] / 8; /* two blocks */
      bad += word[r] % 8 / 4 != (r & 1);     /* row r's four words */
      bad += shift[r] % 4 != 0 || shift[r] > 60;
    }
    blocks_seen[word[0] / 8 % 64] = 1;
  }
  guint spread = 0;
  for (guint i = 0; i < 64; i++)
    spread += blocks_seen[i] != 0;
  CU_ASSERT_EQUAL (bad, 0);
  CU_ASSERT_EQUAL (spread, 64); /* keys are spread over the blocks */

  /* 20 keys counted 1..20 times: exact (capped at 15) in a sketch of 8 000 × 4 counters. */
  for (guint k = 0; k < 20; k++)
    for (guint i = 0; i <= k; i++)
      sedp_cache_policy_access (p, 1000 + k, NULL, NULL, NULL);
  guint exact = 0;
  for (guint k = 0; k < 20; k++) {
    guint f = sedp_cache_policy_frequency (p, 1000 + k);
    CU_ASSERT (f >= MIN (k + 1, 15));
    exact += f == MIN (k + 1, 15);
  }
  CU_ASSERT (exact >= 19);
  CU_ASSERT_EQUAL (sedp_cache_policy_frequency (p, 1000 + 19), 15);
  /* The sample period is 40 × capacity counted accesses: then every counter halves. */
  for (guint i = 0; i < 40 * 1000; i++)
    sedp_cache_policy_access (p, 1000000 + i, NULL, NULL, NULL);
  guint f = sedp_cache_policy_frequency (p, 1000 + 19);
  CU_ASSERT (f >= 7 && f <= 8);
  sedp_cache_policy_free (p);
}

/* A key two of whose counters are the same cell (its two blocks are one, and the two counters'
 * bits agree) counts up to 15 and stays there: the cell is raised once per access, never carried
 * into its neighbour. */
static void
test_sketch_aliased_counters (void)
{
  SedpCachePolicy *p = sedp_cache_policy_new (SEDP_CACHE_TINYLFU, 16); /* 4 blocks */
  guint64 key = 0;
  gboolean found = FALSE;
  for (guint64 k = 1; k < 1000000 && !found; k++) {
    guint64 word[4];
    guint shift[4];
    sedp_cache_policy_sketch_cells (p, k, word, shift);
    if ((word[0] == word[2] && shift[0] == shift[2]) || (word[1] == word[3] && shift[1] == shift[3])) {
      key = k;
      found = TRUE;
    }
  }
  CU_ASSERT_FATAL (found);
  guint bad = 0;
  for (guint i = 1; i <= 40; i++) {
    sedp_cache_policy_access (p, key, NULL, NULL, NULL);
    bad += sedp_cache_policy_frequency (p, key) != MIN (i, 15);
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cache_policy_free (p);
}

/* sedp_cache_policy_hit_many() records what one sedp_cache_policy_hit() per key records: the same
 * slots, and policies that go on to behave the same. */
static void
test_hit_many (void)
{
  GRand *rng = g_rand_new_with_seed (11);
  guint64 *warm = zipf_trace (20000, 3000, 0.9, 12);
  for (guint k = 0; k < G_N_ELEMENTS (all_kinds); k++) {
    SedpCachePolicy *a = sedp_cache_policy_new (all_kinds[k], 500);
    SedpCachePolicy *b = sedp_cache_policy_new (all_kinds[k], 500);
    for (gsize i = 0; i < 20000; i++) {
      sedp_cache_policy_access (a, warm[i], NULL, NULL, NULL);
      sedp_cache_policy_access (b, warm[i], NULL, NULL, NULL);
    }
    guint bad = 0;
    /* Enough hits for the hottest keys to saturate and for the sketch to halve several times
     * (every 40 × 500 counted accesses). */
    for (guint round = 0; round < 300; round++) {
      guint n = (guint) g_rand_int_range (rng, 1, 400);
      guint64 *keys = g_new (guint64, n);
      guint *order = g_new (guint, n);
      guint32 *sa = g_new (guint32, n), *sb = g_new (guint32, n);
      for (guint i = 0; i < n; i++) {
        keys[i] = warm[g_rand_int_range (rng, 0, 20000)] + (g_rand_int_range (rng, 0, 4) == 0);
        order[i] = i;
      }
      for (guint i = n; i > 1; i--) {
        guint j = (guint) g_rand_int_range (rng, 0, (gint32) i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
      }
      gboolean ordered = round % 2 == 0;
      guint hits = sedp_cache_policy_hit_many (a, keys, ordered ? order : NULL, n, sa, NULL, 0);
      guint want = 0;
      for (guint i = 0; i < n; i++) {
        sb[i] = sedp_cache_policy_hit (b, keys[ordered ? order[i] : i]);
        want += sb[i] != SEDP_CACHE_NO_SLOT;
        bad += sa[i] != sb[i];
      }
      bad += hits != want;
      g_free (keys);
      g_free (order);
      g_free (sa);
      g_free (sb);
    }
    /* The same sketch (hit_many skips counting keys it knows saturated: that must change
     * nothing, across halvings too). */
    for (gsize i = 0; i < 20000; i++)
      bad += sedp_cache_policy_frequency (a, warm[i]) != sedp_cache_policy_frequency (b, warm[i]);
    /* The same state: the same hits and evictions from here on. */
    guint64 *more = zipf_trace (20000, 3000, 0.9, 13);
    for (gsize i = 0; i < 20000; i++) {
      guint64 ea = 0, eb = 0;
      gboolean ha = FALSE, hb = FALSE;
      bad += sedp_cache_policy_access (a, more[i], NULL, &ea, &ha) != sedp_cache_policy_access (b, more[i], NULL, &eb, &hb);
      bad += ha != hb || ea != eb;
    }
    g_free (more);
    if (bad)
      fprintf (stderr, "\n  policy %u: %u differences\n", all_kinds[k], bad);
    CU_ASSERT_EQUAL (bad, 0);
    sedp_cache_policy_free (a);
    sedp_cache_policy_free (b);
  }
  g_free (warm);
  g_rand_free (rng);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("cache-policy", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_kind_names);
  T (test_lru_exact);
  T (test_invariants);
  T (test_capacity_zero);
  T (test_lfu_prefers_frequent);
  T (test_lfu_aging);
  T (test_tinylfu_scan_resistance);
  T (test_skewed_ordering);
  T (test_belady_upper_bound);
  T (test_belady_brute_force);
  T (test_belady_long_trace);
  T (test_sketch_blocks);
  T (test_sketch_aliased_counters);
  T (test_hit_many);
  return sedp_test_run ();
}
