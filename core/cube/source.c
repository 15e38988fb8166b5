/* sedp — cube sources: the dispatch functions, the local source (an open cube), and the SDK's
 * sedp_cube_source_open() (sdk/sedp/cube.h), which builds any source from options. */
#include "cube-format.h"
#include "source.h"
#include "redis/redis.h"

#include <sedp/cube.h>

gint64
sedp_cube_source_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out,
                         guint8 *found, GError **error)
{
  g_return_val_if_fail (source != NULL && source->klass != NULL, -1);
  g_return_val_if_fail (n == 0 || (keys != NULL && out != NULL), -1);
  if (n == 0)
    return 0;
  return source->klass->lookup (source, keys, n, out, found, error);
}

void
sedp_cube_source_stats (SedpCubeSource *source, GString *out)
{
  g_return_if_fail (source != NULL && out != NULL);
  if (source->klass->stats)
    source->klass->stats (source, out);
}

void
sedp_cube_source_free (SedpCubeSource *source)
{
  if (source)
    source->klass->free (source);
}

guint
sedp_cube_source_get_dim (const SedpCubeSource *source)
{
  g_return_val_if_fail (source != NULL, 0);
  return source->dim;
}

/* ---- the local source ------------------------------------------------------------------ */

typedef struct {
  SedpCubeSource parent;
  SedpCube *cube;
  guint64 lookups;  /* calls */
  guint64 keys;     /* keys asked for */
  guint64 found;    /* keys found */
  guint64 errors;   /* failed calls (disk placement) */
} LocalSource;

static gint64
local_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out, guint8 *found,
              GError **error)
{
  LocalSource *s = (LocalSource *) source;
  gint64 hits = sedp_cube_lookup (s->cube, keys, n, out, found, error);
  __atomic_fetch_add (&s->lookups, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add (&s->keys, n, __ATOMIC_RELAXED);
  if (hits >= 0)
    __atomic_fetch_add (&s->found, (guint64) hits, __ATOMIC_RELAXED);
  else
    __atomic_fetch_add (&s->errors, 1, __ATOMIC_RELAXED);
  return hits;
}

static void
local_stats (SedpCubeSource *source, GString *out)
{
  LocalSource *s = (LocalSource *) source;
  guint64 keys = __atomic_load_n (&s->keys, __ATOMIC_RELAXED);
  guint64 found = __atomic_load_n (&s->found, __ATOMIC_RELAXED);
  g_string_append_printf (out, "cube_lookups %" G_GUINT64_FORMAT "\n",
                          __atomic_load_n (&s->lookups, __ATOMIC_RELAXED));
  g_string_append_printf (out, "cube_keys %" G_GUINT64_FORMAT "\n", keys);
  g_string_append_printf (out, "cube_hits %" G_GUINT64_FORMAT "\n", found);
  g_string_append_printf (out, "cube_misses %" G_GUINT64_FORMAT "\n", keys - found);
  g_string_append_printf (out, "cube_errors %" G_GUINT64_FORMAT "\n",
                          __atomic_load_n (&s->errors, __ATOMIC_RELAXED));
}

static void
local_free (SedpCubeSource *source)
{
  LocalSource *s = (LocalSource *) source;
  sedp_cube_close (s->cube);
  g_free (s);
}

static const SedpCubeSourceClass local_class = {
  .lookup = local_lookup,
  .stats = local_stats,
  .free = local_free,
};

SedpCubeSource *
sedp_cube_source_new_local (SedpCube *cube)
{
  g_return_val_if_fail (cube != NULL, NULL);
  LocalSource *s = g_new0 (LocalSource, 1);
  s->parent.klass = &local_class;
  s->parent.dim = sedp_cube_get_meta (cube)->dim;
  s->cube = cube;
  return &s->parent;
}

/* ---- a source that knows the key of the cube behind it ------------------------------- */

/* The cube cache does not say which cube it caches: the source opened in front of Redis is
 * wrapped with the remote cube's hash key, so that sedp_cube_source_get_hash_key() answers. */
typedef struct {
  SedpCubeSource parent;
  SedpCubeSource *inner;
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];
} KeyedSource;

static gint64
keyed_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out, guint8 *found,
              GError **error)
{
  KeyedSource *s = (KeyedSource *) source;
  return sedp_cube_source_lookup (s->inner, keys, n, out, found, error);
}

static void
keyed_stats (SedpCubeSource *source, GString *out)
{
  sedp_cube_source_stats (((KeyedSource *) source)->inner, out);
}

static void
keyed_free (SedpCubeSource *source)
{
  KeyedSource *s = (KeyedSource *) source;
  sedp_cube_source_free (s->inner);
  g_free (s);
}

static const SedpCubeSourceClass keyed_class = {
  .lookup = keyed_lookup,
  .stats = keyed_stats,
  .free = keyed_free,
};

static SedpCubeSource *
keyed_new (SedpCubeSource *inner, const guint8 *hash_key)
{
  KeyedSource *s = g_new0 (KeyedSource, 1);
  s->parent.klass = &keyed_class;
  s->parent.dim = inner->dim;
  s->inner = inner;
  memcpy (s->hash_key, hash_key, SEDP_CUBE_HASH_KEY_BYTES);
  return &s->parent;
}

gboolean
sedp_cube_source_get_hash_key (const SedpCubeSource *source, guint8 *hash_key)
{
  g_return_val_if_fail (source != NULL && hash_key != NULL, FALSE);
  if (source->klass == &keyed_class) {
    memcpy (hash_key, ((const KeyedSource *) source)->hash_key, SEDP_CUBE_HASH_KEY_BYTES);
    return TRUE;
  }
  const SedpCubeMeta *meta = NULL;
  if (source->klass == &local_class)
    meta = sedp_cube_get_meta (((const LocalSource *) source)->cube);
  else
    meta = sedp_cube_source_redis_get_meta ((SedpCubeSource *) source);
  if (meta == NULL)
    return FALSE;
  memcpy (hash_key, meta->hash_key, SEDP_CUBE_HASH_KEY_BYTES);
  return TRUE;
}

/* ---- opening from options -------------------------------------------------------------- */

static gboolean
need (const char *value, const char *what, const char *backend, GError **error)
{
  if (value && *value)
    return TRUE;
  g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "the %s backend needs %s",
               backend, what);
  return FALSE;
}

SedpCubeSource *
sedp_cube_source_open (const SedpCubeSourceOptions *o, GError **error)
{
  g_return_val_if_fail (o != NULL, NULL);
  const char *backend = o->backend ? o->backend : "local";
  if (strcmp (backend, "local") == 0) {
    if (!need (o->cube, "a cube folder", backend, error))
      return NULL;
    SedpCubePlacement placement = SEDP_CUBE_VALUES_MEMORY;
    if (o->values && strcmp (o->values, "disk") == 0)
      placement = SEDP_CUBE_VALUES_DISK;
    else if (o->values && strcmp (o->values, "memory") != 0) {
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                   "unknown value placement '%s' (memory or disk)", o->values);
      return NULL;
    }
    SedpCube *cube = sedp_cube_open (o->cube, placement, error);
    return cube ? sedp_cube_source_new_local (cube) : NULL;
  }
  gboolean cached = strcmp (backend, "cached") == 0;
  if (!cached && strcmp (backend, "redis") != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "unknown cube backend '%s' (local, redis or cached)", backend);
    return NULL;
  }
  if (!need (o->redis_url, "a Redis URL", backend, error) ||
      !need (o->name, "the cube's name", backend, error))
    return NULL;
  SedpRedisOptions ro = {
    .url = o->redis_url,
    .name = o->name,
    .timeout_ms = o->timeout_ms,
    .reconnect_ms = o->reconnect_ms,
  };
  SedpCubeSource *remote = sedp_cube_source_new_redis (&ro, 0, error);
  if (remote == NULL || !cached)
    return remote;
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];
  gboolean has_key = sedp_cube_source_get_hash_key (remote, hash_key);
  SedpCubeCacheOptions co = {
    .memory_entries = o->memory_entries,
    .disk_entries = o->disk_entries,
    .disk_path = o->disk_path,
    .policy = o->policy, /* NULL: the cache's default */
    .threads = o->threads,
  };
  SedpCubeSource *front = sedp_cube_source_new_cached (remote, &co, error);
  return front && has_key ? keyed_new (front, hash_key) : front;
}
