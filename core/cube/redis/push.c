/* sedp — uploading a cube to Redis: NAME:meta deleted first (a source refuses the cube while the
 * upload runs), the values as pipelined SETs in chunks (grouped per node in a cluster), the
 * metadata written last. An upload that fails leaves values without metadata: never served. */
#include "redis-private.h"

#include <stdio.h>

#define PUSH_CHUNK 1000
#define PUSH_MIN_TIMEOUT_US (10 * G_USEC_PER_SEC) /* per chunk */

typedef struct {
  RedisClient *client;
  const char *url;
  char *name;
  gsize name_len;
  guint dim;
  guint64 total, done;
  guint64 *keys;
  float *values;
  guint n; /* keys in the chunk */
  char *set_prefix; /* "*3\r\n$3\r\nSET\r\n$LEN\r\nNAME:" */
  char *value_prefix; /* "\r\n$BYTES\r\n" */
  gsize set_prefix_len, value_prefix_len;
  gint64 chunk_timeout_us;
  gint64 started, last_report;
  gboolean reported;
  char *bad_reply; /* the first reply other than +OK */
  guint64 n_bad;
} Pusher;

static guint16
push_slot (gpointer data, guint i)
{
  Pusher *p = data;
  g_autoptr (GString) key = g_string_sized_new (p->name_len + 17);
  redis_append_key (key, p->name, p->name_len, p->keys[i]);
  return (guint16) sedp_redis_key_slot (key->str, key->len);
}

static void
push_format (gpointer data, guint i, GString *out)
{
  Pusher *p = data;
  g_string_append_len (out, p->set_prefix, (gssize) p->set_prefix_len);
  static const char digits[] = "0123456789abcdef";
  char hex[16];
  guint64 key = p->keys[i];
  for (int d = 15; d >= 0; d--) {
    hex[d] = digits[key & 15];
    key >>= 4;
  }
  g_string_append_len (out, hex, 16);
  g_string_append_len (out, p->value_prefix, (gssize) p->value_prefix_len);
  const float *row = p->values + (gsize) i * p->dim;
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  g_string_append_len (out, (const char *) row, (gssize) p->dim * 4);
#else
  for (guint d = 0; d < p->dim; d++) {
    guint32 u;
    memcpy (&u, row + d, 4);
    u = GUINT32_TO_LE (u);
    g_string_append_len (out, (const char *) &u, 4);
  }
#endif
  g_string_append_len (out, "\r\n", 2);
}

static gboolean
push_reply (gpointer data, guint i, redisReply *r)
{
  Pusher *p = data;
  if (r->type == REDIS_REPLY_STATUS && strcmp (r->str, "OK") == 0)
    return FALSE;
  p->n_bad++;
  if (p->bad_reply == NULL)
    p->bad_reply = g_strdup (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS
                               ? r->str
                               : "an unexpected reply");
  return FALSE;
}

static void
push_progress (Pusher *p, gboolean last)
{
  gint64 now = g_get_monotonic_time ();
  if (last ? !p->reported
           : (now - p->started < G_USEC_PER_SEC || now - p->last_report < G_USEC_PER_SEC))
    return;
  double secs = (double) (now - p->started) / G_USEC_PER_SEC;
  fprintf (stderr, "cube push '%s': %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " keys (%.0f%%), %.0f keys/s%s\n",
           p->name, p->done, p->total, p->total ? 100.0 * (double) p->done / (double) p->total : 100.0,
           secs > 0 ? (double) p->done / secs : 0.0, last ? ", done" : "");
  p->last_report = now;
  p->reported = TRUE;
}

static gboolean
push_flush (Pusher *p, GError **error)
{
  if (p->n == 0)
    return TRUE;
  RedisBatch batch = {.n = p->n, .data = p, .slot = push_slot, .format = push_format,
                      .reply = push_reply};
  guint8 *failed = g_malloc (p->n);
  GError *local = NULL;
  guint n_failed = redis_client_run (p->client, &batch, g_get_monotonic_time () + p->chunk_timeout_us,
                                     failed, &local);
  g_free (failed);
  if (n_failed > 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "cube push '%s' to %s failed after %" G_GUINT64_FORMAT " keys: %s", p->name,
                 p->url, p->done, local ? local->message : "no reply");
    g_clear_error (&local);
    return FALSE;
  }
  if (p->n_bad > 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "cube push '%s' to %s: %" G_GUINT64_FORMAT " SETs refused: %s", p->name, p->url,
                 p->n_bad, p->bad_reply);
    return FALSE;
  }
  p->done += p->n;
  p->n = 0;
  push_progress (p, FALSE);
  return TRUE;
}

static gboolean
push_add (Pusher *p, guint64 key, const float *values, GError **error)
{
  p->keys[p->n] = key;
  memcpy (p->values + (gsize) p->n * p->dim, values, (gsize) p->dim * sizeof (float));
  p->n++;
  return p->n < PUSH_CHUNK || push_flush (p, error);
}

static void
pusher_free (Pusher *p)
{
  redis_client_free (p->client);
  g_free (p->name);
  g_free (p->keys);
  g_free (p->values);
  g_free (p->set_prefix);
  g_free (p->value_prefix);
  g_free (p->bad_reply);
  g_free (p);
}

static redisReply *
push_call (Pusher *p, const char *key, int argc, const char **argv, GError **error)
{
  g_autoptr (GError) local = NULL;
  redisReply *r = redis_client_call (p->client, key, argc, argv, NULL,
                                     g_get_monotonic_time () + p->chunk_timeout_us, &local);
  if (r == NULL) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "cube push '%s' to %s: %s",
                 p->name, p->url, local ? local->message : "no reply");
    return NULL;
  }
  if (r->type == REDIS_REPLY_ERROR) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "cube push '%s' to %s: %s %s: %s", p->name, p->url, argv[0], key, r->str);
    freeReplyObject (r);
    return NULL;
  }
  return r;
}

/* Connects and deletes the old metadata. */
static Pusher *
pusher_new (const SedpRedisOptions *options, guint dim, guint64 total, GError **error)
{
  if (!redis_name_check (options->name, error))
    return NULL;
  if (dim == 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "cube push '%s': dim is 0",
                 options->name);
    return NULL;
  }
  RedisClient *client =
    redis_client_new (options->url, options->timeout_ms, options->reconnect_ms, error);
  if (client == NULL)
    return NULL;
  Pusher *p = g_new0 (Pusher, 1);
  p->client = client;
  p->url = client->url;
  p->name = g_strdup (options->name);
  p->name_len = strlen (p->name);
  p->dim = dim;
  p->total = total;
  p->keys = g_new (guint64, PUSH_CHUNK);
  p->values = g_new (float, (gsize) PUSH_CHUNK * dim);
  p->set_prefix = g_strdup_printf ("*3\r\n$3\r\nSET\r\n$%zu\r\n%s:", p->name_len + 17, p->name);
  p->set_prefix_len = strlen (p->set_prefix);
  p->value_prefix = g_strdup_printf ("\r\n$%u\r\n", dim * 4);
  p->value_prefix_len = strlen (p->value_prefix);
  p->chunk_timeout_us = MAX (client->timeout_us, PUSH_MIN_TIMEOUT_US);
  p->started = p->last_report = g_get_monotonic_time ();

  g_autofree char *meta_key = g_strconcat (p->name, ":meta", NULL);
  const char *argv[] = {"DEL", meta_key};
  redisReply *r = push_call (p, meta_key, 2, argv, error);
  if (r == NULL) {
    pusher_free (p);
    return NULL;
  }
  freeReplyObject (r);
  return p;
}

/* Flushes the last chunk and writes the metadata. */
static gboolean
pusher_finish (Pusher *p, const SedpCubeMeta *meta, GError **error)
{
  if (!push_flush (p, error))
    return FALSE;
  g_autofree char *meta_key = g_strconcat (p->name, ":meta", NULL);
  char dim[16], count[24], version[24], created[24], hex[2 * SEDP_CUBE_HASH_KEY_BYTES + 1];
  g_snprintf (dim, sizeof dim, "%u", p->dim);
  g_snprintf (count, sizeof count, "%" G_GUINT64_FORMAT, p->done);
  g_snprintf (version, sizeof version, "%" G_GUINT64_FORMAT, meta->version);
  g_snprintf (created, sizeof created, "%" G_GINT64_FORMAT, MAX (meta->created, 0));
  for (guint i = 0; i < SEDP_CUBE_HASH_KEY_BYTES; i++)
    g_snprintf (hex + 2 * i, 3, "%02x", meta->hash_key[i]);
  const char *argv[] = {"HSET",  meta_key, "format",  REDIS_META_FORMAT, "dtype",
                        "float32", "dim",  dim,       "count",           count,
                        "version", version, "created", created,           "hash_key",
                        hex};
  redisReply *r = push_call (p, meta_key, G_N_ELEMENTS (argv), argv, error);
  if (r == NULL)
    return FALSE;
  freeReplyObject (r);
  push_progress (p, TRUE);
  return TRUE;
}

SEDP_API gboolean
sedp_redis_push_arrays (const SedpRedisOptions *options, const SedpCubeMeta *meta,
                        const guint64 *keys, const float *values, guint64 n, GError **error)
{
  g_return_val_if_fail (options != NULL && meta != NULL, FALSE);
  g_return_val_if_fail (n == 0 || (keys != NULL && values != NULL), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  Pusher *p = pusher_new (options, meta->dim, n, error);
  if (p == NULL)
    return FALSE;
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < n; i++)
    ok = push_add (p, keys[i], values + i * meta->dim, error);
  ok = ok && pusher_finish (p, meta, error);
  pusher_free (p);
  return ok;
}

typedef struct {
  Pusher *p;
  GError *error;
} ForeachPush;

static gboolean
push_one (guint64 key, const float *values, gpointer data)
{
  ForeachPush *fp = data;
  return push_add (fp->p, key, values, &fp->error);
}

SEDP_API gboolean
sedp_cube_push (SedpCube *cube, const SedpRedisOptions *options, GError **error)
{
  g_return_val_if_fail (cube != NULL && options != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  const SedpCubeMeta *meta = sedp_cube_get_meta (cube);
  Pusher *p = pusher_new (options, meta->dim, meta->count, error);
  if (p == NULL)
    return FALSE;
  ForeachPush fp = {.p = p};
  gboolean ok = sedp_cube_foreach (cube, push_one, &fp, error);
  if (ok && fp.error) {
    g_propagate_error (error, g_steal_pointer (&fp.error));
    ok = FALSE;
  }
  g_clear_error (&fp.error);
  if (ok && p->done + p->n != meta->count) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "cube push '%s': the cube lists %" G_GUINT64_FORMAT " keys, its index gave %"
                 G_GUINT64_FORMAT, p->name, meta->count, p->done + p->n);
    ok = FALSE;
  }
  ok = ok && pusher_finish (p, meta, error);
  pusher_free (p);
  return ok;
}
