/* sedp — the Redis cube source: batched lookups of NAME:SIGNATURE keys on one Redis server or a
 * Redis Cluster, pipelined per node, within the request's timeout. A server that is down or slow
 * fails the call (UNAVAILABLE, counted as degraded) or, in a cluster, only the keys of its slots;
 * anything the server answers that is not a value of the right length counts as malformed and
 * the key as not found. */
#include "redis-private.h"

#include <errno.h>
#include <stdlib.h>

/* Keys per MGET on a single server (a cluster gets one GET per key: keys rarely share a slot). */
#define MGET_CHUNK 128

/* ---- URLs, names, keys ---- */

static gboolean
url_fail (GError **error, const char *url, const char *reason)
{
  g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "bad Redis URL '%s': %s",
               url ? url : "(null)", reason);
  return FALSE;
}

static gboolean
host_char_ok (char c)
{
  return g_ascii_isalnum (c) || c == '.' || c == '-' || c == '_';
}

/* One "HOST[:PORT]" or "[V6]:PORT". */
static gboolean
parse_hostport (const char *url, const char *part, RedisUrl *parsed, GError **error)
{
  g_autofree char *host = NULL;
  const char *port_str = NULL;
  if (part[0] == '\0')
    return url_fail (error, url, "empty host");
  if (part[0] == '[') {
    const char *close = strchr (part, ']');
    if (close == NULL)
      return url_fail (error, url, "unclosed '[' in an IPv6 address");
    host = g_strndup (part + 1, (gsize) (close - part - 1));
    if (host[0] == '\0')
      return url_fail (error, url, "empty host");
    for (const char *c = host; *c; c++)
      if (!g_ascii_isxdigit (*c) && *c != ':' && *c != '.')
        return url_fail (error, url, "bad character in an IPv6 address");
    if (close[1] == ':')
      port_str = close + 2;
    else if (close[1] != '\0')
      return url_fail (error, url, "junk after ']'");
  } else {
    const char *colon = strchr (part, ':');
    if (colon && strchr (colon + 1, ':'))
      return url_fail (error, url, "IPv6 addresses go in brackets ([::1]:6379)");
    host = colon ? g_strndup (part, (gsize) (colon - part)) : g_strdup (part);
    if (host[0] == '\0')
      return url_fail (error, url, "empty host");
    for (const char *c = host; *c; c++)
      if (!host_char_ok (*c))
        return url_fail (error, url, "bad character in a host name");
    port_str = colon ? colon + 1 : NULL;
  }
  guint64 port = 6379;
  if (port_str) {
    if (port_str[0] == '\0')
      return url_fail (error, url, "empty port");
    for (const char *c = port_str; *c; c++)
      if (!g_ascii_isdigit (*c))
        return url_fail (error, url, "the port is not a number");
    port = g_ascii_strtoull (port_str, NULL, 10);
    if (port == 0 || port > 65535 || strlen (port_str) > 5)
      return url_fail (error, url, "the port is not in 1…65535");
  }
  g_ptr_array_add (parsed->hosts, g_steal_pointer (&host));
  guint16 p16 = (guint16) port;
  g_array_append_val (parsed->ports, p16);
  return TRUE;
}

gboolean
redis_url_parse (const char *url, RedisUrl *parsed, GError **error)
{
  memset (parsed, 0, sizeof *parsed);
  if (url == NULL || url[0] == '\0')
    return url_fail (error, url, "no URL");
  const char *rest;
  if (g_str_has_prefix (url, "redis://")) {
    rest = url + strlen ("redis://");
  } else if (g_str_has_prefix (url, "redis+cluster://")) {
    rest = url + strlen ("redis+cluster://");
    parsed->cluster = TRUE;
  } else {
    return url_fail (error, url,
                     "expected redis://HOST:PORT or redis+cluster://HOST:PORT[,HOST:PORT…]");
  }
  g_autofree char *body = g_strdup (rest);
  gsize len = strlen (body);
  if (len > 0 && body[len - 1] == '/')
    body[len - 1] = '\0';
  if (strchr (body, '@'))
    return url_fail (error, url, "user names and passwords are not supported");
  if (strpbrk (body, "/?#"))
    return url_fail (error, url, "a path, query or fragment is not supported");
  if (strpbrk (body, " \t\r\n"))
    return url_fail (error, url, "white space");
  if (!parsed->cluster && strchr (body, ','))
    return url_fail (error, url, "several servers: a cluster URL starts with redis+cluster://");

  parsed->hosts = g_ptr_array_new_with_free_func (g_free);
  parsed->ports = g_array_new (FALSE, FALSE, sizeof (guint16));
  g_auto (GStrv) parts = g_strsplit (body, ",", -1);
  if (parts[0] == NULL) {
    redis_url_clear (parsed);
    return url_fail (error, url, "empty host");
  }
  for (guint i = 0; parts[i]; i++) {
    if (!parse_hostport (url, parts[i], parsed, error)) {
      redis_url_clear (parsed);
      return FALSE;
    }
  }
  return TRUE;
}

void
redis_url_clear (RedisUrl *parsed)
{
  if (parsed->hosts)
    g_ptr_array_unref (parsed->hosts);
  if (parsed->ports)
    g_array_unref (parsed->ports);
  parsed->hosts = NULL;
  parsed->ports = NULL;
}

gboolean
redis_name_check (const char *name, GError **error)
{
  if (name == NULL || name[0] == '\0') {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "no cube name for Redis");
    return FALSE;
  }
  gsize len = strlen (name);
  gboolean ok = len <= 200;
  for (const char *c = name; ok && *c; c++)
    ok = *c > ' ' && *c < 0x7f;
  if (!ok)
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "bad cube name '%s' for Redis: 1 to 200 printable ASCII characters, no spaces",
                 name);
  return ok;
}

static inline void
append_hex16 (GString *out, guint64 key)
{
  static const char digits[] = "0123456789abcdef";
  char buf[16];
  for (int i = 15; i >= 0; i--) {
    buf[i] = digits[key & 15];
    key >>= 4;
  }
  g_string_append_len (out, buf, 16);
}

void
redis_append_key (GString *out, const char *name, gsize name_len, guint64 key)
{
  g_string_append_len (out, name, (gssize) name_len);
  g_string_append_c (out, ':');
  append_hex16 (out, key);
}

/* ---- the source ---- */

typedef struct {
  SedpCubeSource parent;
  RedisClient *client;
  SedpCubeMeta meta;
  char *name;
  gsize name_len;
  char *get_prefix;   /* "*2\r\n$3\r\nGET\r\n$LEN\r\nNAME:" */
  char *item_prefix;  /* "$LEN\r\nNAME:" */
  gsize get_prefix_len, item_prefix_len;
  gint64 timeout_us;
  _Atomic guint64 lookups, keys, found, missing, malformed, errors, degraded, partial;
} RedisSource;

typedef struct {
  RedisSource *s;
  const guint64 *keys;
  guint n;
  float *out;
  guint8 *found;
  guint chunk; /* keys per command: 1 (GET) or MGET_CHUNK */
  RedisLookupCounts counts;
} Lookup;

static guint16
lookup_slot (gpointer data, guint i)
{
  Lookup *l = data;
  char buf[256];
  gsize len = l->s->name_len;
  memcpy (buf, l->s->name, len);
  buf[len++] = ':';
  static const char digits[] = "0123456789abcdef";
  guint64 key = l->keys[(gsize) i * l->chunk];
  for (int d = 15; d >= 0; d--) {
    buf[len + (gsize) d] = digits[key & 15];
    key >>= 4;
  }
  return (guint16) sedp_redis_key_slot (buf, len + 16);
}

static void
lookup_format (gpointer data, guint i, GString *out)
{
  Lookup *l = data;
  RedisSource *s = l->s;
  if (l->chunk == 1) {
    g_string_append_len (out, s->get_prefix, (gssize) s->get_prefix_len);
    append_hex16 (out, l->keys[i]);
    g_string_append_len (out, "\r\n", 2);
    return;
  }
  guint first = i * l->chunk;
  guint count = MIN (l->chunk, l->n - first);
  g_string_append_printf (out, "*%u\r\n$4\r\nMGET\r\n", count + 1);
  for (guint k = first; k < first + count; k++) {
    g_string_append_len (out, s->item_prefix, (gssize) s->item_prefix_len);
    append_hex16 (out, l->keys[k]);
    g_string_append_len (out, "\r\n", 2);
  }
}

/* One key's reply: a value of dim little-endian floats, nil (missing), or anything else
 * (malformed: a wrong length, a list, an error). */
static void
lookup_value (const redisReply *r, guint dim, float *out, guint8 *found, RedisLookupCounts *counts)
{
  switch (r->type) {
  case REDIS_REPLY_STRING:
    if (r->len == (size_t) dim * 4) {
      redis_floats_from_le (out, r->str, dim);
      if (found)
        *found = 1;
      counts->found++;
    } else {
      counts->malformed++;
    }
    break;
  case REDIS_REPLY_NIL:
    counts->missing++;
    break;
  case REDIS_REPLY_ERROR:
    if (r->str && g_str_has_prefix (r->str, "WRONGTYPE"))
      counts->malformed++;
    else
      counts->errors++;
    break;
  default:
    counts->malformed++;
    break;
  }
}

void
redis_lookup_take_reply (const redisReply *reply, gboolean mget, guint count, guint dim,
                         float *out, guint8 *found, RedisLookupCounts *counts)
{
  if (!mget) {
    lookup_value (reply, dim, out, found, counts);
    return;
  }
  if (reply->type == REDIS_REPLY_ARRAY && reply->elements == count) {
    for (guint k = 0; k < count; k++)
      lookup_value (reply->element[k], dim, out + (gsize) k * dim, found ? found + k : NULL,
                    counts);
  } else if (reply->type == REDIS_REPLY_ERROR) {
    counts->errors += count;
  } else {
    counts->malformed += count;
  }
}

static gboolean
lookup_reply (gpointer data, guint i, redisReply *r)
{
  Lookup *l = data;
  guint first = i * l->chunk;
  guint count = MIN (l->chunk, l->n - first);
  guint dim = l->s->parent.dim;
  redis_lookup_take_reply (r, l->chunk > 1, count, dim, l->out + (gsize) first * dim,
                           l->found ? l->found + first : NULL, &l->counts);
  return FALSE;
}

static gint64
redis_source_lookup (SedpCubeSource *source, const guint64 *keys, guint n, float *out,
                     guint8 *found, GError **error)
{
  RedisSource *s = (RedisSource *) source;
  atomic_fetch_add_explicit (&s->lookups, 1, memory_order_relaxed);
  atomic_fetch_add_explicit (&s->keys, n, memory_order_relaxed);
  if (found)
    memset (found, 0, n);
  if (n == 0)
    return 0;

  gint64 deadline = g_get_monotonic_time () + s->timeout_us;
  Lookup l = {.s = s, .keys = keys, .n = n, .out = out, .found = found};
  l.chunk = s->client->cluster ? 1 : MGET_CHUNK;
  guint n_cmds = (n + l.chunk - 1) / l.chunk;
  guint8 stack_failed[256];
  guint8 *failed = n_cmds <= sizeof stack_failed ? stack_failed : g_malloc (n_cmds);
  RedisBatch batch = {.n = n_cmds, .data = &l, .slot = lookup_slot, .format = lookup_format,
                      .reply = lookup_reply};
  GError *local = NULL;
  guint n_failed = redis_client_run (s->client, &batch, deadline, failed, &local);

  guint64 failed_keys = 0;
  if (n_failed > 0) {
    for (guint c = 0; c < n_cmds; c++)
      if (failed[c])
        failed_keys += MIN (l.chunk, n - c * l.chunk);
  }
  if (failed != stack_failed)
    g_free (failed);

  atomic_fetch_add_explicit (&s->found, l.counts.found, memory_order_relaxed);
  atomic_fetch_add_explicit (&s->missing, l.counts.missing, memory_order_relaxed);
  atomic_fetch_add_explicit (&s->malformed, l.counts.malformed, memory_order_relaxed);
  atomic_fetch_add_explicit (&s->errors, l.counts.errors + failed_keys, memory_order_relaxed);

  if (n_failed == n_cmds) {
    atomic_fetch_add_explicit (&s->degraded, 1, memory_order_relaxed);
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "Redis cube '%s' at %s unavailable: %s", s->name, s->client->url,
                 local ? local->message : "no reply");
    g_clear_error (&local);
    return -1;
  }
  if (n_failed > 0)
    atomic_fetch_add_explicit (&s->partial, 1, memory_order_relaxed);
  g_clear_error (&local);
  return (gint64) l.counts.found;
}

static void
redis_source_stats (SedpCubeSource *source, GString *out)
{
  RedisSource *s = (RedisSource *) source;
#define STAT(name) \
  g_string_append_printf (out, "redis_" #name " %" G_GUINT64_FORMAT "\n", (guint64) atomic_load (&s->name))
  STAT (lookups);
  STAT (keys);
  STAT (found);
  STAT (missing);
  STAT (malformed);
  STAT (errors);
  STAT (degraded);
  STAT (partial);
#undef STAT
  redis_client_stats (s->client, out);
}

static void
redis_source_free (SedpCubeSource *source)
{
  RedisSource *s = (RedisSource *) source;
  redis_client_free (s->client);
  g_free (s->meta.name);
  g_free (s->name);
  g_free (s->get_prefix);
  g_free (s->item_prefix);
  g_free (s);
}

static const SedpCubeSourceClass redis_source_class = {
  .lookup = redis_source_lookup,
  .stats = redis_source_stats,
  .free = redis_source_free,
};

/* ---- metadata ---- */

static gboolean
meta_u64 (GHashTable *fields, const char *field, guint64 lo, guint64 hi, guint64 *out,
          const char *key, GError **error)
{
  const char *v = g_hash_table_lookup (fields, field);
  guint64 x = 0;
  if (v == NULL || !g_ascii_string_to_unsigned (v, 10, lo, hi, &x, NULL)) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: field '%s' is %s%s%s (expected an integer in %" G_GUINT64_FORMAT "…%"
                 G_GUINT64_FORMAT ")", key, field, v ? "'" : "missing", v ? v : "", v ? "'" : "",
                 lo, hi);
    return FALSE;
  }
  *out = x;
  return TRUE;
}

gboolean
redis_meta_from_reply (const redisReply *reply, gboolean cluster, const char *name,
                       const char *url, SedpCubeMeta *meta, GError **error)
{
  g_autofree char *key = g_strconcat (name, ":meta", NULL);
  g_autoptr (GHashTable) fields = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree char *where = g_strdup_printf ("Redis cube '%s' at %s: %s", name, url, key);
  if (reply->type == REDIS_REPLY_ERROR) {
    if (!cluster && (g_str_has_prefix (reply->str, "MOVED ") ||
                     g_str_has_prefix (reply->str, "ASK ")))
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                   "Redis cube '%s': %s is a Redis Cluster node (%s): use a redis+cluster:// URL",
                   name, url, reply->str);
    else if (g_str_has_prefix (reply->str, "WRONGTYPE"))
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                   "Redis cube '%s' at %s: %s is not a hash", name, url, key);
    else
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                   "Redis cube '%s' at %s: HGETALL %s: %s", name, url, key, reply->str);
    return FALSE;
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "Redis cube '%s' at %s: HGETALL %s: unexpected reply", name, url, key);
    return FALSE;
  }
  if (reply->elements == 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "no Redis cube '%s' at %s: %s does not exist (never pushed, or the push did "
                 "not finish)", name, url, key);
    return FALSE;
  }
  for (size_t i = 0; i < reply->elements; i += 2) {
    const redisReply *f = reply->element[i], *v = reply->element[i + 1];
    if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
        strlen (f->str) == f->len && strlen (v->str) == v->len)
      g_hash_table_insert (fields, f->str, v->str);
  }

  const char *format = g_hash_table_lookup (fields, "format");
  if (g_strcmp0 (format, REDIS_META_FORMAT) != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: format is '%s', expected '%s'", where, format ? format : "(none)",
                 REDIS_META_FORMAT);
    return FALSE;
  }
  const char *dtype = g_hash_table_lookup (fields, "dtype");
  if (g_strcmp0 (dtype, "float32") != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: dtype is '%s', expected 'float32'", where, dtype ? dtype : "(none)");
    return FALSE;
  }
  guint64 dim, count, version, created;
  if (!meta_u64 (fields, "dim", 1, 1 << 20, &dim, where, error) ||
      !meta_u64 (fields, "count", 0, G_MAXUINT64, &count, where, error) ||
      !meta_u64 (fields, "version", 0, G_MAXUINT64, &version, where, error) ||
      !meta_u64 (fields, "created", 0, G_MAXINT64, &created, where, error))
    return FALSE;
  const char *hex = g_hash_table_lookup (fields, "hash_key");
  gboolean hex_ok = hex && strlen (hex) == 2 * SEDP_CUBE_HASH_KEY_BYTES;
  for (guint i = 0; hex_ok && i < 2 * SEDP_CUBE_HASH_KEY_BYTES; i++)
    hex_ok = g_ascii_isxdigit (hex[i]);
  if (!hex_ok) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_CORRUPT,
                 "%s: field 'hash_key' is not %d hex digits", where, 2 * SEDP_CUBE_HASH_KEY_BYTES);
    return FALSE;
  }
  memset (meta, 0, sizeof *meta);
  meta->name = g_strdup (name);
  meta->dim = (guint) dim;
  meta->count = count;
  meta->version = version;
  meta->created = (gint64) created;
  for (guint i = 0; i < SEDP_CUBE_HASH_KEY_BYTES; i++)
    meta->hash_key[i] =
      (guint8) (g_ascii_xdigit_value (hex[2 * i]) << 4 | g_ascii_xdigit_value (hex[2 * i + 1]));
  return TRUE;
}

/* Reads NAME:meta (a hash written last by the push). */
static gboolean
read_meta (RedisClient *client, const char *name, SedpCubeMeta *meta, gint64 deadline,
           GError **error)
{
  g_autofree char *key = g_strconcat (name, ":meta", NULL);
  const char *argv[] = {"HGETALL", key};
  g_autoptr (GError) local = NULL;
  redisReply *reply = redis_client_call (client, key, 2, argv, NULL, deadline, &local);
  if (reply == NULL) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "Redis cube '%s' at %s: cannot read %s: %s", name, client->url, key,
                 local ? local->message : "no reply");
    return FALSE;
  }
  gboolean ok = redis_meta_from_reply (reply, client->cluster, name, client->url, meta, error);
  freeReplyObject (reply);
  return ok;
}

SEDP_API SedpCubeSource *
sedp_cube_source_new_redis (const SedpRedisOptions *options, guint dim, GError **error)
{
  g_return_val_if_fail (options != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (!redis_name_check (options->name, error))
    return NULL;
  RedisClient *client =
    redis_client_new (options->url, options->timeout_ms, options->reconnect_ms, error);
  if (client == NULL)
    return NULL;

  SedpCubeMeta meta;
  if (!read_meta (client, options->name, &meta, g_get_monotonic_time () + client->timeout_us,
                  error)) {
    redis_client_free (client);
    return NULL;
  }
  if (dim > 0 && meta.dim != dim) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "Redis cube '%s' at %s has dim %u, expected %u", options->name, options->url,
                 meta.dim, dim);
    g_free (meta.name);
    redis_client_free (client);
    return NULL;
  }

  RedisSource *s = g_new0 (RedisSource, 1);
  s->parent.klass = &redis_source_class;
  s->parent.dim = meta.dim;
  s->client = client;
  s->meta = meta;
  s->name = g_strdup (options->name);
  s->name_len = strlen (s->name);
  gsize key_len = s->name_len + 1 + 16;
  s->get_prefix = g_strdup_printf ("*2\r\n$3\r\nGET\r\n$%zu\r\n%s:", key_len, s->name);
  s->get_prefix_len = strlen (s->get_prefix);
  s->item_prefix = g_strdup_printf ("$%zu\r\n%s:", key_len, s->name);
  s->item_prefix_len = strlen (s->item_prefix);
  s->timeout_us = client->timeout_us;
  return &s->parent;
}

SEDP_API const SedpCubeMeta *
sedp_cube_source_redis_get_meta (SedpCubeSource *source)
{
  g_return_val_if_fail (source != NULL, NULL);
  if (source->klass != &redis_source_class)
    return NULL;
  return &((RedisSource *) source)->meta;
}
