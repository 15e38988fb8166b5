/* sedp — the cube cache: a memory tier and a disk tier in front of a remote cube source (Redis).
 *
 * A lookup asks the memory tier, then the disk tier for the keys memory lacks, then the remote,
 * in one batched call, for the keys neither tier holds (each key once). Values found on disk or
 * remotely are offered to the memory tier's policy; the key the memory tier evicts (or refuses)
 * is offered to the disk tier, so the disk holds the next-hottest keys after memory's. Each tier
 * is governed by its own policy (the options' policy: W-TinyLFU, LFU with aging or LRU), whose
 * slot numbers index the tier's storage: an array of values in memory, and fixed-size slots of a
 * preallocated file on disk (pread/pwrite).
 *
 * Concurrency: keys are spread over shards by hash; each shard has its own policies and a lock
 * per tier, and the remote call is made without any lock held. A remote failure costs only the
 * keys the tiers could not answer: they are reported missing (the caller uses its defaults), and
 * the call fails (-1) only when nothing at all could be answered. */
#include "cache-private.h"
#include "index.h"
#include "policy-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 4096
static const char magic[8] = {'S', 'E', 'D', 'P', 'C', 'C', 'H', '1'};

typedef struct {
  GMutex mem_lock;
  SedpCachePolicy *mem;
  float *mem_values;          /* capacity × dim, 64-byte aligned */
  GMutex disk_lock;
  SedpCachePolicy *disk;      /* NULL: no disk tier */
  guint32 *disk_gen;          /* per slot: bumped whenever the slot is given to a key */
  guint64 disk_first;         /* the shard's first slot in the file */
} Shard;

typedef struct {
  guint64 lookups, keys;
  guint64 mem_hits, mem_misses;
  guint64 disk_hits, disk_misses, disk_errors;
  guint64 remote_calls, remote_keys, remote_found, remote_failures, degraded;
} Counters;

typedef struct {
  SedpCubeSource parent;
  SedpCubeSource *remote;
  SedpCachePolicyKind kind;
  guint64 memory_entries, disk_entries;
  guint n_shards;
  guint shard_shift;
  Shard *shards;
  int fd;
  char *disk_path;
  gsize value_bytes;
  Counters c;
} CachedSource;

static const SedpCubeSourceClass cached_class;

#define COUNT(s, field, v) __atomic_fetch_add (&(s)->c.field, (v), __ATOMIC_RELAXED)

/* Fibonacci hashing: the top bits of a multiplication by 2^64 / φ (one multiply a key; the
 * policies hash keys on their own, with a different function, inside the shard). */
static inline guint
shard_of (const CachedSource *s, guint64 key)
{
  return s->shard_shift >= 64 ? 0 : (guint) ((key * 0x9E3779B97F4A7C15ull) >> s->shard_shift);
}

/* ---- the disk tier's file ---- */

static gboolean
disk_open (CachedSource *s, const char *path, GError **error)
{
  int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "cannot open the cube cache's disk "
                 "tier %s: %s", path, g_strerror (errno));
    return FALSE;
  }
  if (flock (fd, LOCK_EX | LOCK_NB) != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "the cube cache's disk tier %s is in "
                 "use by another cache", path);
    close (fd);
    return FALSE;
  }
  struct stat st;
  char head[sizeof magic];
  if (fstat (fd, &st) == 0 && st.st_size > 0 &&
      (pread (fd, head, sizeof head, 0) != (ssize_t) sizeof head || memcmp (head, magic, sizeof magic) != 0)) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "%s exists and is not a cube "
                 "cache file; refusing to overwrite it", path);
    close (fd);
    return FALSE;
  }
  /* Its old contents are of no use (the index lives in memory): start afresh, preallocated. */
  off_t size = (off_t) (HEADER_BYTES + s->disk_entries * s->value_bytes);
  int rc = ftruncate (fd, 0) == 0 ? posix_fallocate (fd, 0, size) : errno;
  if (rc == EOPNOTSUPP || rc == EINVAL)
    rc = ftruncate (fd, size) == 0 ? 0 : errno;
  char header[64] = {0};
  memcpy (header, magic, sizeof magic);
  guint32 dim = s->parent.dim;
  memcpy (header + 8, &dim, sizeof dim);
  memcpy (header + 16, &s->disk_entries, sizeof s->disk_entries);
  if (rc == 0 && pwrite (fd, header, sizeof header, 0) != (ssize_t) sizeof header)
    rc = errno ? errno : EIO;
  if (rc != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "cannot allocate %" G_GUINT64_FORMAT
                 " bytes for the cube cache's disk tier %s: %s", (guint64) size, path, g_strerror (rc));
    close (fd);
    unlink (path);
    return FALSE;
  }
  s->fd = fd;
  s->disk_path = g_strdup (path);
  return TRUE;
}

static inline off_t
disk_offset (const CachedSource *s, const Shard *sh, guint32 slot)
{
  return (off_t) (HEADER_BYTES + (sh->disk_first + slot) * s->value_bytes);
}

static gboolean
disk_read (CachedSource *s, const Shard *sh, guint32 slot, float *value)
{
  ssize_t got = pread (s->fd, value, s->value_bytes, disk_offset (s, sh, slot));
  return got == (ssize_t) s->value_bytes;
}

/* Offers (@key, @value) to the disk tier of @sh: stored when the policy admits it. Called with
 * the shard's disk lock held: writes are rare next to reads (a key is written once per stay),
 * and a write into the page cache is short. */
static void
disk_offer (CachedSource *s, Shard *sh, guint64 key, const float *value)
{
  gboolean hit, admitted;
  guint32 slot = sedp_cache_policy_access_slot (sh->disk, key, &hit, &admitted, NULL, NULL);
  if (hit || !admitted)
    return; /* already there (values never change), or refused */
  sh->disk_gen[slot]++; /* readers of the slot's previous key find out */
  if (pwrite (s->fd, value, s->value_bytes, disk_offset (s, sh, slot)) != (ssize_t) s->value_bytes) {
    COUNT (s, disk_errors, 1);
    sedp_cache_policy_remove (sh->disk, key);
  }
}

/* ---- lookups ---- */

/* The keys of one call that neither tier held, each once, with the positions asking for it. */
typedef struct {
  guint n;
  guint64 *keys;
  guint *first;    /* first position of the key */
  guint *next;     /* [position] → next position with the same key, or G_MAXUINT */
  guint8 *from;    /* 0: not found, 1: disk, 2: remote */
  float *values;   /* n × dim */
} Missing;

enum { FROM_NONE = 0, FROM_DISK, FROM_REMOTE };

/* Positions sorted by shard (counting sort), so that each shard is locked once per call; @out
 * has room for @n positions. With one shard the order is the identity: @out is left alone and
 * NULL returned; otherwise @out. */
static guint *
order_by_shard (const CachedSource *s, const guint64 *keys, guint n, guint *out, guint *start)
{
  if (s->n_shards == 1) {
    start[0] = 0;
    start[1] = n;
    return NULL;
  }
  memset (start, 0, sizeof (guint) * (s->n_shards + 1));
  /* Each key's shard, hashed once. */
  g_autofree guint16 *heap = n > 4096 ? g_new (guint16, n) : NULL;
  guint16 small[heap ? 1 : MAX (n, 1)];
  guint16 *sd = heap ? heap : small;
  for (guint i = 0; i < n; i++) {
    sd[i] = (guint16) shard_of (s, keys[i]);
    start[sd[i] + 1]++;
  }
  for (guint k = 0; k < s->n_shards; k++)
    start[k + 1] += start[k];
  guint fill[s->n_shards];
  memcpy (fill, start, sizeof fill);
  for (guint i = 0; i < n; i++)
    out[fill[sd[i]]++] = i;
  return out;
}

/* Keys looked up in the memory tier at a time (hits recorded, then their values copied). */
#define MEM_CHUNK 128

/* The position a sorted index stands for. */
#define AT(order, i) ((order) ? (order)[i] : (i))

/* Copies one value: a constant size for the usual ones, so that it is a few vector moves. */
static inline void
copy_value (float *dst, const float *src, gsize bytes)
{
  switch (bytes) {
  case 32:
    memcpy (dst, src, 32);
    break;
  case 64:
    memcpy (dst, src, 64);
    break;
  case 128:
    memcpy (dst, src, 128);
    break;
  default:
    memcpy (dst, src, bytes);
  }
}

static gint64
cached_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out, guint8 *found,
               GError **error)
{
  CachedSource *s = (CachedSource *) source;
  const guint dim = source->dim;
  COUNT (s, lookups, 1);
  COUNT (s, keys, n);
  g_autofree guint8 *found_own = found ? NULL : g_new (guint8, n);
  if (!found)
    found = found_own;
  memset (found, 0, n);
  g_autofree guint *order_buf = g_new (guint, n);
  guint *order;
  guint start[s->n_shards + 1];
  gint64 answered = 0;

  /* 1. The memory tier. */
  g_autofree guint *miss = g_new (guint, n);
  g_autofree guint32 *slots = g_new (guint32, n);
  guint n_miss = 0;
  order = order_by_shard (s, keys, n, order_buf, start);
  for (guint k = 0; k < s->n_shards; k++) {
    if (start[k] == start[k + 1])
      continue;
    Shard *sh = &s->shards[k];
    const guint len = start[k + 1] - start[k];
    const guint *ord = order ? order + start[k] : NULL;
    guint32 *sl = slots + start[k];
    const float *values = sh->mem_values;
    const gsize vb = s->value_bytes;
    /* In chunks: the policy hashes the keys once, prefetches what each hit touches (index entry,
     * sketch block, node, list neighbours, value) a pass ahead, and records the hits; then the
     * chunk's values, still in the L1 cache, are copied out. */
    g_mutex_lock (&sh->mem_lock);
    for (guint c = 0; c < len; c += MEM_CHUNK) {
      guint m = MIN (MEM_CHUNK, len - c);
      answered += sedp_cache_policy_hit_many (sh->mem, ord ? keys : keys + c, ord ? ord + c : NULL, m, sl + c,
                                              values, vb);
      for (guint i = c; i < c + m; i++) {
        guint p = AT (ord, i);
        if (sl[i] == SEDP_CACHE_NO_SLOT) {
          miss[n_miss++] = p;
          continue;
        }
        copy_value (out + (gsize) p * dim, values + (gsize) sl[i] * dim, vb);
        found[p] = 1;
      }
    }
    g_mutex_unlock (&sh->mem_lock);
  }
  COUNT (s, mem_hits, (guint64) answered);
  COUNT (s, mem_misses, n_miss);
  if (n_miss == 0)
    return answered;

  /* Each missing key once. */
  Missing m = {0};
  m.keys = g_new (guint64, n_miss);
  m.first = g_new (guint, n_miss);
  m.next = g_new (guint, n);
  SedpIndex seen;
  sedp_index_init (&seen, n_miss);
  g_autofree guint *last = g_new (guint, n_miss);
  for (guint i = 0; i < n_miss; i++) {
    guint p = miss[i];
    m.next[p] = G_MAXUINT;
    guint32 u = sedp_index_get (&seen, keys[p]);
    if (u == SEDP_INDEX_NONE) {
      u = m.n++;
      sedp_index_put (&seen, keys[p], u);
      m.keys[u] = keys[p];
      m.first[u] = p;
    } else {
      m.next[last[u]] = p;
    }
    last[u] = p;
  }
  sedp_index_clear (&seen);
  m.from = g_new0 (guint8, m.n);
  m.values = g_new (float, (gsize) m.n * dim);

  /* 2. The disk tier. Reads happen outside the lock (an SSD read takes far longer than a memory
   * lookup): each key's slot and the slot's generation are noted under the lock, the values
   * read, and a read is kept only if the slot still belongs to the key and was not given to
   * another key meanwhile (the generation did not move). */
  guint disk_hits = 0;
  if (s->fd >= 0) {
    g_autofree guint32 *dslot = g_new (guint32, m.n);
    g_autofree guint32 *dgen = g_new (guint32, m.n);
    order = order_by_shard (s, m.keys, m.n, order_buf, start);
    for (guint k = 0; k < s->n_shards; k++) {
      if (start[k] == start[k + 1])
        continue;
      Shard *sh = &s->shards[k];
      guint asked = 0;
      g_mutex_lock (&sh->disk_lock);
      for (guint i = start[k]; i < start[k + 1]; i++) {
        guint u = AT (order, i);
        dslot[u] = sedp_cache_policy_hit (sh->disk, m.keys[u]);
        if (dslot[u] != SEDP_CACHE_NO_SLOT) {
          dgen[u] = sh->disk_gen[dslot[u]];
          asked++;
        }
      }
      g_mutex_unlock (&sh->disk_lock);
      if (asked == 0)
        continue;
      for (guint i = start[k]; i < start[k + 1]; i++) {
        guint u = AT (order, i);
        if (dslot[u] != SEDP_CACHE_NO_SLOT && disk_read (s, sh, dslot[u], m.values + (gsize) u * dim))
          m.from[u] = FROM_DISK;
      }
      g_mutex_lock (&sh->disk_lock);
      for (guint i = start[k]; i < start[k + 1]; i++) {
        guint u = AT (order, i);
        if (dslot[u] == SEDP_CACHE_NO_SLOT)
          continue;
        gboolean same = sh->disk_gen[dslot[u]] == dgen[u] &&
                        sedp_cache_policy_get_slot (sh->disk, m.keys[u]) == dslot[u];
        if (m.from[u] == FROM_DISK && !same) {
          m.from[u] = FROM_NONE; /* overwritten meanwhile: ask the remote */
        } else if (m.from[u] != FROM_DISK) {
          COUNT (s, disk_errors, 1);
          if (same)
            sedp_cache_policy_remove (sh->disk, m.keys[u]);
        }
        disk_hits += m.from[u] == FROM_DISK;
      }
      g_mutex_unlock (&sh->disk_lock);
    }
    COUNT (s, disk_hits, disk_hits);
    COUNT (s, disk_misses, m.n - disk_hits);
  }

  /* 3. The remote, once, for the rest. */
  guint n_remote = m.n - disk_hits;
  gboolean remote_failed = FALSE;
  GError *remote_error = NULL;
  if (n_remote > 0) {
    g_autofree guint64 *rkeys = g_new (guint64, n_remote);
    g_autofree guint *ru = g_new (guint, n_remote);
    g_autofree float *rvalues = g_new (float, (gsize) n_remote * dim);
    g_autofree guint8 *rfound = g_new0 (guint8, n_remote);
    guint r = 0;
    for (guint u = 0; u < m.n; u++)
      if (m.from[u] == FROM_NONE) {
        ru[r] = u;
        rkeys[r++] = m.keys[u];
      }
    COUNT (s, remote_calls, 1);
    COUNT (s, remote_keys, n_remote);
    gint64 got = sedp_cube_source_lookup (s->remote, rkeys, n_remote, rvalues, rfound, &remote_error);
    if (got < 0) {
      remote_failed = TRUE;
      COUNT (s, remote_failures, 1);
      COUNT (s, degraded, n_remote);
    } else {
      guint remote_found = 0;
      for (guint i = 0; i < n_remote; i++) {
        if (!rfound[i])
          continue;
        memcpy (m.values + (gsize) ru[i] * dim, rvalues + (gsize) i * dim, s->value_bytes);
        m.from[ru[i]] = FROM_REMOTE;
        remote_found++;
      }
      COUNT (s, remote_found, remote_found);
    }
  }

  /* 4. Answer the positions, and offer what was found to the memory tier; what it evicts or
   * refuses is offered to the disk tier. */
  g_autofree guint64 *down_keys = g_new (guint64, m.n);
  g_autofree float *down_values = g_new (float, (gsize) m.n * dim);
  guint n_down = 0;
  order = order_by_shard (s, m.keys, m.n, order_buf, start);
  for (guint k = 0; k < s->n_shards; k++) {
    guint down_start = n_down;
    gboolean locked = FALSE;
    Shard *sh = &s->shards[k];
    for (guint i = start[k]; i < start[k + 1]; i++) {
      guint u = AT (order, i);
      if (m.from[u] == FROM_NONE)
        continue;
      const float *v = m.values + (gsize) u * dim;
      for (guint p = m.first[u]; p != G_MAXUINT; p = m.next[p]) {
        memcpy (out + (gsize) p * dim, v, s->value_bytes);
        found[p] = 1;
        answered++;
      }
      if (!locked) {
        g_mutex_lock (&sh->mem_lock);
        locked = TRUE;
      }
      gboolean hit, admitted, has_evicted;
      guint64 evicted;
      guint32 slot = sedp_cache_policy_access_slot (sh->mem, m.keys[u], &hit, &admitted, &evicted,
                                                    &has_evicted);
      if (hit)
        continue; /* another lookup brought it in meanwhile */
      float *mv = slot != SEDP_CACHE_NO_SLOT ? sh->mem_values + (gsize) slot * dim : NULL;
      if (has_evicted && sh->disk) {
        /* The evicted key's value is still in the slot the new key takes. */
        down_keys[n_down] = evicted;
        memcpy (down_values + (gsize) n_down++ * dim, mv, s->value_bytes);
      }
      if (admitted)
        memcpy (mv, v, s->value_bytes);
      else if (sh->disk && m.from[u] == FROM_REMOTE) {
        down_keys[n_down] = m.keys[u];
        memcpy (down_values + (gsize) n_down++ * dim, v, s->value_bytes);
      }
    }
    if (locked)
      g_mutex_unlock (&sh->mem_lock);
    if (n_down > down_start) {
      g_mutex_lock (&sh->disk_lock);
      for (guint j = down_start; j < n_down; j++)
        disk_offer (s, sh, down_keys[j], down_values + (gsize) j * dim);
      g_mutex_unlock (&sh->disk_lock);
    }
  }

  g_free (m.keys);
  g_free (m.first);
  g_free (m.next);
  g_free (m.from);
  g_free (m.values);
  if (remote_failed) {
    if (answered == 0) {
      g_propagate_prefixed_error (error, remote_error, "cube cache: ");
      return -1;
    }
    g_error_free (remote_error);
  }
  return answered;
}

static void
cached_stats (SedpCubeSource *source, GString *out)
{
  CachedSource *s = (CachedSource *) source;
  guint64 mem_size = 0, disk_size = 0;
  for (guint k = 0; k < s->n_shards; k++) {
    Shard *sh = &s->shards[k];
    g_mutex_lock (&sh->mem_lock);
    mem_size += sedp_cache_policy_get_size (sh->mem);
    g_mutex_unlock (&sh->mem_lock);
    if (sh->disk) {
      g_mutex_lock (&sh->disk_lock);
      disk_size += sedp_cache_policy_get_size (sh->disk);
      g_mutex_unlock (&sh->disk_lock);
    }
  }
#define LINE(name, field)                                                                      \
  g_string_append_printf (out, "cache_" name "_total %" G_GUINT64_FORMAT "\n",                 \
                          __atomic_load_n (&s->c.field, __ATOMIC_RELAXED))
  LINE ("lookups", lookups);
  LINE ("keys", keys);
  LINE ("memory_hits", mem_hits);
  LINE ("memory_misses", mem_misses);
  LINE ("disk_hits", disk_hits);
  LINE ("disk_misses", disk_misses);
  LINE ("disk_errors", disk_errors);
  LINE ("remote_calls", remote_calls);
  LINE ("remote_keys", remote_keys);
  LINE ("remote_found", remote_found);
  LINE ("remote_failures", remote_failures);
  LINE ("degraded_keys", degraded);
#undef LINE
  g_string_append_printf (out, "cache_memory_entries %" G_GUINT64_FORMAT "\n", mem_size);
  g_string_append_printf (out, "cache_disk_entries %" G_GUINT64_FORMAT "\n", disk_size);
  sedp_cube_source_stats (s->remote, out);
}

static void
cached_free (SedpCubeSource *source)
{
  CachedSource *s = (CachedSource *) source;
  for (guint k = 0; s->shards && k < s->n_shards; k++) {
    Shard *sh = &s->shards[k];
    sedp_cache_policy_free (sh->mem);
    sedp_cache_policy_free (sh->disk);
    sedp_table_free (sh->mem_values);
    g_free (sh->disk_gen);
    g_mutex_clear (&sh->mem_lock);
    g_mutex_clear (&sh->disk_lock);
  }
  g_free (s->shards);
  if (s->fd >= 0) {
    unlink (s->disk_path); /* nothing in it is of use without the index */
    close (s->fd);
  }
  g_free (s->disk_path);
  sedp_cube_source_free (s->remote);
  g_free (s);
}

static const SedpCubeSourceClass cached_class = {
  .lookup = cached_lookup,
  .stats = cached_stats,
  .free = cached_free,
};

/* Shard @k's share of @total entries. */
static guint64
share (guint64 total, guint n, guint k)
{
  return total / n + (k < total % n);
}

SedpCubeSource *
sedp_cube_source_new_cached_sharded (SedpCubeSource *remote, const SedpCubeCacheOptions *options,
                                     guint n_shards, GError **error)
{
  g_return_val_if_fail (remote != NULL && options != NULL, NULL);
  SedpCachePolicyKind kind = SEDP_CACHE_TINYLFU;
  const char *policy = options->policy && *options->policy ? options->policy : "tinylfu";
  g_autofree char *problem = NULL;
  if (!sedp_cache_policy_kind_from_string (policy, &kind))
    problem = g_strdup_printf ("unknown cache policy '%s' (lru, lfu or tinylfu)", policy);
  else if (remote->dim == 0)
    problem = g_strdup ("the remote source has no dimension");
  else if (options->disk_entries > 0 && (options->disk_path == NULL || !*options->disk_path))
    problem = g_strdup ("the disk tier needs a file (disk_path)");
  else if (options->memory_entries >= (guint64) G_MAXUINT32 * 512 ||
           options->disk_entries >= (guint64) G_MAXUINT32 * 512)
    problem = g_strdup ("too many entries");
  if (problem) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "cube cache: %s", problem);
    sedp_cube_source_free (remote);
    return NULL;
  }
  CachedSource *s = g_new0 (CachedSource, 1);
  s->parent.klass = &cached_class;
  s->parent.dim = remote->dim;
  s->remote = remote;
  s->kind = kind;
  s->memory_entries = options->memory_entries;
  s->disk_entries = options->disk_entries;
  s->value_bytes = (gsize) remote->dim * sizeof (float);
  s->fd = -1;
  if (n_shards == 0) {
    /* More shards than processors, or than threads that call at once, only split batches into
     * smaller pieces (measured: bench/run cube, docs/storage.md), and tiny shards make the
     * policies coarse. */
    guint procs = (guint) MAX (g_get_num_processors (), 1);
    guint callers = options->threads ? MIN (options->threads, procs) : procs;
    n_shards = (guint) MIN ((guint64) MIN (callers, 16u), MAX (options->memory_entries / 4096, 1));
  }
  guint shards = 1, bits = 0;
  while (shards * 2 <= MIN (n_shards, 1024u)) {
    shards *= 2;
    bits++;
  }
  /* Each shard's policies must fit 32-bit slots. */
  while (shards < 1024 && (options->memory_entries / shards >= G_MAXUINT32 - 1 ||
                           options->disk_entries / shards >= G_MAXUINT32 - 1)) {
    shards *= 2;
    bits++;
  }
  s->n_shards = shards;
  s->shard_shift = bits == 0 ? 64 : 64 - bits;
  if (s->disk_entries > 0 && !disk_open (s, options->disk_path, error)) {
    s->disk_entries = 0;
    cached_free (&s->parent);
    return NULL;
  }
  s->shards = g_new0 (Shard, shards);
  guint64 disk_first = 0;
  for (guint k = 0; k < shards; k++) {
    Shard *sh = &s->shards[k];
    g_mutex_init (&sh->mem_lock);
    g_mutex_init (&sh->disk_lock);
    guint64 mem = share (s->memory_entries, shards, k);
    sh->mem = sedp_cache_policy_new (kind, mem);
    /* Aligned, so that a value of 64 bytes (dim 16) is one cache line. */
    sh->mem_values = sedp_table_alloc (MAX (mem, 1) * remote->dim * sizeof (float), FALSE);
    if (s->disk_entries > 0) {
      guint64 disk = share (s->disk_entries, shards, k);
      sh->disk = sedp_cache_policy_new (kind, disk);
      sh->disk_gen = g_new0 (guint32, MAX (disk, 1));
      sh->disk_first = disk_first;
      disk_first += disk;
    }
  }
  return &s->parent;
}

SedpCubeSource *
sedp_cube_source_new_cached (SedpCubeSource *remote, const SedpCubeCacheOptions *options,
                             GError **error)
{
  return sedp_cube_source_new_cached_sharded (remote, options, 0, error);
}

guint
sedp_cube_source_cached_get_shards (SedpCubeSource *source)
{
  g_return_val_if_fail (source != NULL, 0);
  return source->klass == &cached_class ? ((CachedSource *) source)->n_shards : 1;
}
