/* sedp — a private open-addressing map from 64-bit keys to 32-bit values (node indexes), used by
 * the cache policies and the query cache. Linear probing, power-of-two table at most half full,
 * deletion by backward shift (no tombstones), so lookups stay short whatever the churn. */
#pragma once

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#define SEDP_INDEX_NONE G_MAXUINT32

typedef struct {
  guint64 key;
  guint32 value; /* SEDP_INDEX_NONE: empty */
  guint32 tag;   /* the user's, 0 when the key is put; moves with the key */
} SedpIndexSlot;

typedef struct {
  SedpIndexSlot *slots;
  guint64 mask;
  guint64 len;
} SedpIndex;

/* Memory for a table that is accessed at random: 64-byte aligned (an entry never straddles two
 * cache lines when entries divide 64 bytes). Zeroed when @zero. Freed with sedp_table_free().
 * (Transparent huge pages were tried for these tables: no measurable gain.) */
static inline gpointer
sedp_table_alloc (gsize bytes, gboolean zero)
{
  void *p = NULL;
  if (posix_memalign (&p, 64, MAX (bytes, 1)) != 0)
    g_error ("%s: failed to allocate %" G_GSIZE_FORMAT " bytes", G_STRLOC, bytes);
  if (zero)
    memset (p, 0, bytes);
  return p;
}

static inline void
sedp_table_free (gpointer p)
{
  free (p);
}

/* The 64-bit finalizer of MurmurHash3: a bijection that spreads every input bit. */
static inline guint64
sedp_mix64 (guint64 h)
{
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static inline guint64
sedp_pow2_at_least (guint64 n)
{
  guint64 p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

/* A table for up to @capacity keys. */
static inline void
sedp_index_init (SedpIndex *ix, guint64 capacity)
{
  guint64 size = sedp_pow2_at_least (MAX (capacity * 2, 8));
  ix->slots = sedp_table_alloc (size * sizeof (SedpIndexSlot), FALSE);
  for (guint64 i = 0; i < size; i++)
    ix->slots[i].value = SEDP_INDEX_NONE;
  ix->mask = size - 1;
  ix->len = 0;
}

static inline void
sedp_index_clear (SedpIndex *ix)
{
  g_clear_pointer (&ix->slots, sedp_table_free);
  ix->len = 0;
}

/* sedp_index_get() for a key whose sedp_mix64() is @hash (computed once for a prefetch). */
static inline guint32
sedp_index_get_hashed (const SedpIndex *ix, guint64 key, guint64 hash)
{
  for (guint64 i = hash & ix->mask;; i = (i + 1) & ix->mask) {
    const SedpIndexSlot *s = &ix->slots[i];
    if (s->value == SEDP_INDEX_NONE)
      return SEDP_INDEX_NONE;
    if (s->key == key)
      return s->value;
  }
}

/* The entry of @key (its sedp_mix64() is @hash), or NULL. Valid until the next put or remove. */
static inline SedpIndexSlot *
sedp_index_find_hashed (const SedpIndex *ix, guint64 key, guint64 hash)
{
  for (guint64 i = hash & ix->mask;; i = (i + 1) & ix->mask) {
    SedpIndexSlot *s = &ix->slots[i];
    if (s->value == SEDP_INDEX_NONE)
      return NULL;
    if (s->key == key)
      return s;
  }
}

static inline SedpIndexSlot *
sedp_index_find (const SedpIndex *ix, guint64 key)
{
  return sedp_index_find_hashed (ix, key, sedp_mix64 (key));
}

static inline const SedpIndexSlot *
sedp_index_home (const SedpIndex *ix, guint64 hash)
{
  return &ix->slots[hash & ix->mask];
}

static inline guint32
sedp_index_get (const SedpIndex *ix, guint64 key)
{
  for (guint64 i = sedp_mix64 (key) & ix->mask;; i = (i + 1) & ix->mask) {
    const SedpIndexSlot *s = &ix->slots[i];
    if (s->value == SEDP_INDEX_NONE)
      return SEDP_INDEX_NONE;
    if (s->key == key)
      return s->value;
  }
}

/* Sets @key to @value (inserting it or replacing its value). The caller keeps len within the
 * capacity the table was made for. */
static inline void
sedp_index_put (SedpIndex *ix, guint64 key, guint32 value)
{
  for (guint64 i = sedp_mix64 (key) & ix->mask;; i = (i + 1) & ix->mask) {
    SedpIndexSlot *s = &ix->slots[i];
    if (s->value == SEDP_INDEX_NONE) {
      s->key = key;
      s->value = value;
      s->tag = 0;
      ix->len++;
      return;
    }
    if (s->key == key) {
      s->value = value;
      return;
    }
  }
}

/* Removes @key; returns its value or SEDP_INDEX_NONE. */
static inline guint32
sedp_index_remove (SedpIndex *ix, guint64 key)
{
  guint64 i = sedp_mix64 (key) & ix->mask;
  for (;; i = (i + 1) & ix->mask) {
    if (ix->slots[i].value == SEDP_INDEX_NONE)
      return SEDP_INDEX_NONE;
    if (ix->slots[i].key == key)
      break;
  }
  guint32 value = ix->slots[i].value;
  ix->len--;
  /* Backward shift: move later entries of the run into the hole when their home allows it. */
  guint64 hole = i;
  for (guint64 j = (i + 1) & ix->mask;; j = (j + 1) & ix->mask) {
    SedpIndexSlot *s = &ix->slots[j];
    if (s->value == SEDP_INDEX_NONE)
      break;
    guint64 home = sedp_mix64 (s->key) & ix->mask;
    /* The entry at j may move to the hole if its home is not in (hole, j] (cyclically). */
    gboolean stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      ix->slots[hole] = *s;
      hole = j;
    }
  }
  ix->slots[hole].value = SEDP_INDEX_NONE;
  return value;
}
