/* sedp — the Redis client under the cube source and the push: the node table with a connection
 * pool per node, Redis Cluster's slot map (CLUSTER SLOTS, CRC16 key slots with hash tags, MOVED and
 * ASK redirects), and the batch executor that pipelines commands to every node at once and waits
 * for their replies with poll() until the request's deadline.
 *
 * Thread safety: any number of threads run batches at once; each takes its own connection per
 * node from the node's pool (made on demand, returned after a clean exchange), so no connection
 * is shared by two threads and no lock is held during I/O. The slot map is read under a
 * reader lock; MOVED and map refreshes take the writer lock briefly. */
#include "redis-private.h"

#include <errno.h>
#include <poll.h>

#define MAX_ROUNDS 5      /* redirect rounds per batch */
#define MAX_IDLE_CONNS 64 /* per node */
#define ASKING_MARK G_MAXUINT

/* ---- key slots ---- */

static const guint16 crc16_table[256] = {
  0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
  0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
  0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
  0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
  0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738,
  0xf7df, 0xe7fe, 0xd79d, 0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
  0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5, 0x4ad4, 0x7ab7, 0x6a96,
  0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
  0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
  0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
  0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb,
  0xd10c, 0xc12d, 0xf14e, 0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
  0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1, 0x1290, 0x22f3, 0x32d2,
  0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
  0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
  0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
  0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827,
  0x18c0, 0x08e1, 0x3882, 0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
  0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e, 0xed0f, 0xdd6c, 0xcd4d,
  0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
  0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
  0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

static guint16
crc16 (const char *buf, gsize len)
{
  guint16 crc = 0;
  for (gsize i = 0; i < len; i++)
    crc = (guint16) ((crc << 8) ^ crc16_table[((crc >> 8) ^ (guint8) buf[i]) & 0xff]);
  return crc;
}

SEDP_API guint
sedp_redis_key_slot (const char *key, gsize len)
{
  g_return_val_if_fail (key != NULL || len == 0, 0);
  const char *open = memchr (key, '{', len);
  if (open) {
    gsize start = (gsize) (open - key) + 1;
    const char *close = memchr (key + start, '}', len - start);
    if (close && close > key + start)
      return crc16 (key + start, (gsize) (close - key) - start) & (REDIS_SLOTS - 1);
  }
  return crc16 (key, len) & (REDIS_SLOTS - 1);
}

/* ---- nodes ---- */

static char *
make_addr (const char *host, guint16 port)
{
  return strchr (host, ':') ? g_strdup_printf ("[%s]:%u", host, port)
                            : g_strdup_printf ("%s:%u", host, port);
}

static void
node_free (RedisNode *node)
{
  g_ptr_array_unref (node->idle);
  g_mutex_clear (&node->lock);
  g_free (node->host);
  g_free (node->addr);
  g_free (node);
}

/* The node at host:port, added when new. Call with the writer lock held. */
static RedisNode *
node_get_locked (RedisClient *client, const char *host, guint16 port)
{
  g_autofree char *addr = make_addr (host, port);
  RedisNode *node = g_hash_table_lookup (client->by_addr, addr);
  if (node)
    return node;
  node = g_new0 (RedisNode, 1);
  node->host = g_strdup (host);
  node->port = port;
  node->addr = g_steal_pointer (&addr);
  node->index = client->nodes->len;
  g_mutex_init (&node->lock);
  node->idle = g_ptr_array_new_with_free_func ((GDestroyNotify) redis_conn_free);
  g_ptr_array_add (client->nodes, node);
  g_hash_table_insert (client->by_addr, node->addr, node);
  return node;
}

/* Records a failure of @node (I/O error, timeout): retires its connections, holds connects off
 * for reconnect_ms, asks for a fresh slot map. Frees @conn. */
static void
node_fail (RedisClient *client, RedisNode *node, RedisConn *conn)
{
  if (conn && conn->connecting)
    atomic_fetch_add_explicit (&client->connect_failures, 1, memory_order_relaxed);
  g_mutex_lock (&node->lock);
  if (conn == NULL || conn->epoch == node->epoch) {
    node->epoch++;
    node->failed = TRUE;
    node->retry_after = g_get_monotonic_time () + client->reconnect_us;
    g_ptr_array_set_size (node->idle, 0);
  }
  g_mutex_unlock (&node->lock);
  redis_conn_free (conn);
  if (client->cluster)
    g_atomic_int_set (&client->refresh_needed, 1);
}

/* A pooled connection was found closed by the server (a restart, an idle timeout): the other
 * idle ones are likely closed too. Not a failure of the node. */
static void
node_retire_idle (RedisNode *node, RedisConn *conn)
{
  g_mutex_lock (&node->lock);
  if (conn->epoch == node->epoch) {
    node->epoch++;
    g_ptr_array_set_size (node->idle, 0);
  }
  g_mutex_unlock (&node->lock);
  redis_conn_free (conn);
}

/* A connection from the pool, or a new one (possibly still connecting). NULL with @error while
 * the node is held off after a failure, or when the connect fails at once. */
static RedisConn *
node_acquire (RedisClient *client, RedisNode *node, gboolean fresh, GError **error)
{
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&node->lock);
  if (node->idle->len > 0 && !fresh) {
    RedisConn *conn = g_ptr_array_steal_index_fast (node->idle, node->idle->len - 1);
    g_mutex_unlock (&node->lock);
    conn->reused = TRUE;
    return conn;
  }
  if (node->failed && now < node->retry_after) {
    gint64 wait_ms = (node->retry_after - now + 999) / 1000;
    g_mutex_unlock (&node->lock);
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "%s: down (next connection attempt in %" G_GINT64_FORMAT " ms)", node->addr,
                 wait_ms);
    return NULL;
  }
  guint epoch = node->epoch;
  if (node->failed) /* one attempt per reconnect_ms, whatever the number of threads */
    node->retry_after = now + client->reconnect_us;
  g_mutex_unlock (&node->lock);

  RedisConn *conn = redis_conn_new (node->host, node->port, error);
  if (conn == NULL) {
    atomic_fetch_add_explicit (&client->connect_failures, 1, memory_order_relaxed);
    node_fail (client, node, NULL);
    return NULL;
  }
  conn->epoch = epoch;
  return conn;
}

/* A connection of @node finished connecting. */
static void
node_connected (RedisClient *client, RedisNode *node, RedisConn *conn)
{
  g_mutex_lock (&node->lock);
  if (node->failed && conn->epoch == node->epoch) {
    node->failed = FALSE;
    atomic_fetch_add_explicit (&client->reconnects, 1, memory_order_relaxed);
  }
  g_mutex_unlock (&node->lock);
}

/* Returns a connection after a clean exchange (every reply read) to the pool. */
static void
node_release (RedisNode *node, RedisConn *conn)
{
  gboolean clean = !conn->eof && !conn->connecting && !redis_conn_has_output (conn) &&
                   conn->reader->pos == conn->reader->len;
  g_mutex_lock (&node->lock);
  if (clean && conn->epoch == node->epoch && node->idle->len < MAX_IDLE_CONNS) {
    g_ptr_array_add (node->idle, conn);
    conn = NULL;
  }
  g_mutex_unlock (&node->lock);
  redis_conn_free (conn);
}

/* One command on one node, outside batches (CLUSTER SLOTS). */
static redisReply *
node_call (RedisClient *client, RedisNode *node, int argc, const char **argv, gint64 deadline,
           GError **error)
{
  RedisConn *conn = node_acquire (client, node, FALSE, error);
  if (conn == NULL)
    return NULL;
  gboolean was_connecting = conn->connecting;
  redis_conn_append_argv (conn, argc, argv, NULL);
  g_autoptr (GError) local = NULL;
  redisReply *reply = redis_conn_roundtrip (conn, deadline, &local);
  if (reply == NULL && conn->reused && (conn->eof || conn->io_failed) &&
      g_get_monotonic_time () < deadline) {
    /* Closed while in the pool: once more on a fresh connection. */
    node_retire_idle (node, conn);
    g_clear_error (&local);
    conn = node_acquire (client, node, TRUE, error);
    if (conn == NULL)
      return NULL;
    was_connecting = conn->connecting;
    redis_conn_append_argv (conn, argc, argv, NULL);
    reply = redis_conn_roundtrip (conn, deadline, &local);
  }
  if (reply == NULL) {
    g_propagate_error (error, g_steal_pointer (&local));
    node_fail (client, node, conn);
    return NULL;
  }
  if (was_connecting)
    node_connected (client, node, conn);
  node_release (node, conn);
  return reply;
}

/* ---- the slot map ---- */

static gboolean
reply_int (const redisReply *r, long long lo, long long hi, long long *out)
{
  if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
    return FALSE;
  *out = r->integer;
  return TRUE;
}

gboolean
redis_client_apply_slots (RedisClient *client, RedisNode *node, const redisReply *reply,
                          GError **error)
{
  if (reply->type != REDIS_REPLY_ARRAY) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "%s: CLUSTER SLOTS: %s", node->addr,
                 reply->type == REDIS_REPLY_ERROR ? reply->str : "not an array");
    return FALSE;
  }

  g_rw_lock_writer_lock (&client->lock);
  guint16 *slots = g_new0 (guint16, REDIS_SLOTS);
  guint covered = 0;
  for (size_t i = 0; i < reply->elements; i++) {
    const redisReply *range = reply->element[i];
    long long start, end, port;
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
        !reply_int (range->element[0], 0, REDIS_SLOTS - 1, &start) ||
        !reply_int (range->element[1], start, REDIS_SLOTS - 1, &end))
      continue;
    const redisReply *master = range->element[2];
    if (master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
        master->element[0]->type != REDIS_REPLY_STRING ||
        !reply_int (master->element[1], 1, 65535, &port))
      continue;
    const char *host = master->element[0]->str;
    if (strcmp (host, "?") == 0) /* endpoint unknown */
      continue;
    if (host[0] == '\0') /* the endpoint is the one asked */
      host = node->host;
    RedisNode *owner = node_get_locked (client, host, (guint16) port);
    for (long long s = start; s <= end; s++)
      slots[s] = (guint16) (owner->index + 1);
    covered += (guint) (end - start + 1);
  }
  if (covered > 0) {
    g_free (client->slots);
    client->slots = slots;
  } else {
    g_free (slots);
  }
  g_rw_lock_writer_unlock (&client->lock);
  if (covered == 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "%s: CLUSTER SLOTS lists no slot (is the cluster created?)", node->addr);
    return FALSE;
  }
  atomic_fetch_add_explicit (&client->refreshes, 1, memory_order_relaxed);
  return TRUE;
}

/* Reads CLUSTER SLOTS from @node into the slot map. */
static gboolean
refresh_from (RedisClient *client, RedisNode *node, gint64 deadline, GError **error)
{
  const char *argv[] = {"CLUSTER", "SLOTS"};
  redisReply *reply = node_call (client, node, 2, argv, deadline, error);
  if (reply == NULL)
    return FALSE;
  gboolean ok = redis_client_apply_slots (client, node, reply, error);
  freeReplyObject (reply);
  return ok;
}

/* Asks the known nodes in turn (seeds included) for the slot map. */
static gboolean
refresh (RedisClient *client, gint64 deadline, GError **error)
{
  g_rw_lock_reader_lock (&client->lock);
  guint n = client->nodes->len;
  RedisNode **nodes = g_memdup2 (client->nodes->pdata, n * sizeof (RedisNode *));
  g_rw_lock_reader_unlock (&client->lock);

  gboolean ok = FALSE;
  GError *last = NULL;
  for (guint k = 0; k < n && !ok && g_get_monotonic_time () < deadline; k++) {
    RedisNode *node = nodes[(client->refresh_next + k) % n];
    g_clear_error (&last);
    gint64 node_deadline = MIN (deadline, g_get_monotonic_time () + client->timeout_us);
    ok = refresh_from (client, node, node_deadline, &last);
    if (ok)
      client->refresh_next = (client->refresh_next + k) % n;
  }
  if (!ok) {
    if (last)
      g_propagate_error (error, last);
    else
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "timed out");
  } else {
    g_clear_error (&last);
  }
  g_free (nodes);
  return ok;
}

/* After redirects or failures: a fresh map, at most once per reconnect_ms, by one thread. */
static void
maybe_refresh (RedisClient *client, gint64 deadline)
{
  if (!g_atomic_int_get (&client->refresh_needed) || !g_mutex_trylock (&client->refresh_lock))
    return;
  gint64 now = g_get_monotonic_time ();
  if (now - client->last_refresh >= client->reconnect_us) {
    client->last_refresh = now;
    g_atomic_int_set (&client->refresh_needed, 0);
    if (!refresh (client, deadline, NULL))
      g_atomic_int_set (&client->refresh_needed, 1);
  }
  g_mutex_unlock (&client->refresh_lock);
}

/* ---- the client ---- */

RedisClient *
redis_client_new (const char *url, guint timeout_ms, guint reconnect_ms, GError **error)
{
  RedisUrl parsed;
  if (!redis_url_parse (url, &parsed, error))
    return NULL;
  RedisClient *client = g_new0 (RedisClient, 1);
  client->cluster = parsed.cluster;
  client->url = g_strdup (url);
  client->timeout_us = (gint64) (timeout_ms ? timeout_ms : REDIS_DEFAULT_TIMEOUT_MS) * 1000;
  client->reconnect_us = (gint64) (reconnect_ms ? reconnect_ms : REDIS_DEFAULT_RECONNECT_MS) * 1000;
  g_rw_lock_init (&client->lock);
  g_mutex_init (&client->refresh_lock);
  client->nodes = g_ptr_array_new_with_free_func ((GDestroyNotify) node_free);
  client->by_addr = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < parsed.hosts->len; i++)
    node_get_locked (client, g_ptr_array_index (parsed.hosts, i),
                     g_array_index (parsed.ports, guint16, i));
  client->n_seeds = client->nodes->len;
  redis_url_clear (&parsed);

  if (client->cluster) {
    /* Every seed gets the full timeout: one dead seed must not starve the others. */
    gint64 deadline = g_get_monotonic_time () + client->timeout_us * client->n_seeds;
    g_autoptr (GError) local = NULL;
    if (!refresh (client, deadline, &local)) {
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                   "Redis Cluster %s: no slot map from any seed: %s", url, local->message);
      redis_client_free (client);
      return NULL;
    }
    client->last_refresh = g_get_monotonic_time ();
  }
  return client;
}

void
redis_client_free (RedisClient *client)
{
  if (client == NULL)
    return;
  g_hash_table_unref (client->by_addr);
  g_ptr_array_unref (client->nodes);
  g_free (client->slots);
  g_rw_lock_clear (&client->lock);
  g_mutex_clear (&client->refresh_lock);
  g_free (client->url);
  g_free (client);
}

void
redis_client_stats (RedisClient *client, GString *out)
{
  g_string_append_printf (
    out,
    "redis_reconnects %" G_GUINT64_FORMAT "\nredis_connect_failures %" G_GUINT64_FORMAT
    "\nredis_redirects %" G_GUINT64_FORMAT "\nredis_slot_map_refreshes %" G_GUINT64_FORMAT "\n",
    (guint64) atomic_load (&client->reconnects), (guint64) atomic_load (&client->connect_failures),
    (guint64) atomic_load (&client->redirects), (guint64) atomic_load (&client->refreshes));
}

/* ---- batches ---- */

typedef struct {
  guint cmd;
  RedisNode *node; /* NULL: the slot map's */
  gboolean asking;
  gboolean fresh;  /* on a new connection (a pooled one was found closed) */
} Pending;

typedef struct {
  RedisNode *node;
  RedisConn *conn;
  GArray *expect;  /* guint: command index per reply expected, ASKING_MARK for ASKING's */
  guint next;      /* replies received */
  gboolean active;
  gboolean fresh;
} Group;

typedef struct {
  RedisClient *client;
  const RedisBatch *batch;
  guint8 *failed;
  guint n_failed;
  GError *first;
  GArray *next_round; /* Pending */
} Run;

static void
run_fail_cmd (Run *run, guint cmd)
{
  if (!run->failed[cmd]) {
    run->failed[cmd] = 1;
    run->n_failed++;
  }
}

static void
run_note_error (Run *run, GError *error)
{
  if (run->first == NULL)
    run->first = error;
  else
    g_error_free (error);
}

/* The group's node failed: its commands still waiting fail, the node is held off. Except when
 * @may_retry and the connection came from the pool and was closed or reset before any reply
 * (the server restarted, or dropped it while idle): then the commands go again on a fresh
 * connection in the next round. */
static void
group_fail (Run *run, Group *g, GError *error, gboolean may_retry)
{
  if (may_retry && g->conn && g->conn->reused && g->next == 0 &&
      (g->conn->eof || g->conn->io_failed)) {
    gboolean asking = FALSE;
    for (guint k = 0; k < g->expect->len; k++) {
      guint cmd = g_array_index (g->expect, guint, k);
      if (cmd == ASKING_MARK) {
        asking = TRUE;
        continue;
      }
      Pending again = {.cmd = cmd, .node = g->node, .asking = asking, .fresh = TRUE};
      g_array_append_val (run->next_round, again);
      asking = FALSE;
    }
    node_retire_idle (g->node, g->conn);
    g_clear_error (&error);
    g->conn = NULL;
    g->active = FALSE;
    return;
  }
  for (guint k = g->next; k < g->expect->len; k++) {
    guint cmd = g_array_index (g->expect, guint, k);
    if (cmd != ASKING_MARK)
      run_fail_cmd (run, cmd);
  }
  if (error == NULL)
    error = g_error_new (SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "%s: failed",
                         g->node->addr);
  run_note_error (run, error);
  node_fail (run->client, g->node, g->conn);
  g->conn = NULL;
  g->active = FALSE;
}

gboolean
redis_redirect_parse (const char *text, gboolean *ask, guint16 *slot, char **host, guint16 *port)
{
  gboolean moved = g_str_has_prefix (text, "MOVED ");
  *ask = g_str_has_prefix (text, "ASK ");
  if (!moved && !*ask)
    return FALSE;
  const char *p = text + (moved ? 6 : 4);
  char *end = NULL;
  guint64 s = g_ascii_strtoull (p, &end, 10);
  if (end == p || *end != ' ' || s >= REDIS_SLOTS)
    return FALSE;
  const char *hostport = end + 1;
  const char *colon = strrchr (hostport, ':');
  if (colon == NULL)
    return FALSE;
  guint64 n = g_ascii_strtoull (colon + 1, &end, 10);
  if (end == colon + 1 || *end != '\0' || n == 0 || n > 65535)
    return FALSE;
  gsize len = (gsize) (colon - hostport);
  if (len >= 2 && hostport[0] == '[' && hostport[len - 1] == ']')
    *host = g_strndup (hostport + 1, len - 2);
  else
    *host = g_strndup (hostport, len);
  *slot = (guint16) s;
  *port = (guint16) n;
  return TRUE;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381": follows it, TRUE when it was one. */
static gboolean
handle_redirect (Run *run, Group *g, guint cmd, const redisReply *r)
{
  gboolean ask;
  guint16 slot, port;
  g_autofree char *host = NULL;
  if (!redis_redirect_parse (r->str, &ask, &slot, &host, &port))
    return FALSE;
  if (host[0] == '\0') { /* endpoint unknown to the server: the one we asked */
    g_free (host);
    host = g_strdup (g->node->host);
  }

  RedisClient *client = run->client;
  g_rw_lock_writer_lock (&client->lock);
  RedisNode *target = node_get_locked (client, host, port);
  if (!ask && client->slots)
    client->slots[slot] = (guint16) (target->index + 1);
  g_rw_lock_writer_unlock (&client->lock);
  if (!ask)
    g_atomic_int_set (&client->refresh_needed, 1);
  atomic_fetch_add_explicit (&client->redirects, 1, memory_order_relaxed);
  Pending next = {.cmd = cmd, .node = target, .asking = ask};
  g_array_append_val (run->next_round, next);
  return TRUE;
}

/* Hands the complete replies to the batch; the group ends when all came. */
static gboolean
group_drain (Run *run, Group *g, GError **error)
{
  while (g->next < g->expect->len) {
    redisReply *r = NULL;
    int got = redis_conn_next_reply (g->conn, &r, error);
    if (got < 0)
      return FALSE;
    if (got == 0)
      break;
    guint cmd = g_array_index (g->expect, guint, g->next);
    g->next++;
    if (cmd == ASKING_MARK) {
      freeReplyObject (r); /* an error here shows in the command's own reply */
      continue;
    }
    if (run->client->cluster && r->type == REDIS_REPLY_ERROR && r->str &&
        handle_redirect (run, g, cmd, r)) {
      freeReplyObject (r);
      continue;
    }
    if (!run->batch->reply (run->batch->data, cmd, r))
      freeReplyObject (r);
  }
  if (g->next == g->expect->len) {
    node_release (g->node, g->conn);
    g->conn = NULL;
    g->active = FALSE;
  } else if (g->conn->eof) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                 "%s: connection closed by the server", g->node->addr);
    return FALSE;
  }
  return TRUE;
}

/* Polls every active group's socket until all replies came or @deadline passed. */
static void
run_groups (Run *run, Group *groups, guint n_groups, gint64 deadline)
{
  struct pollfd *fds = g_new (struct pollfd, n_groups);
  guint *which = g_new (guint, n_groups);
  for (;;) {
    guint n = 0;
    for (guint k = 0; k < n_groups; k++) {
      Group *g = &groups[k];
      if (!g->active)
        continue;
      RedisConn *c = g->conn;
      fds[n].fd = c->fd;
      fds[n].events = (c->connecting || redis_conn_has_output (c)) ? POLLOUT : 0;
      if (!c->connecting)
        fds[n].events |= POLLIN;
      fds[n].revents = 0;
      which[n++] = k;
    }
    if (n == 0)
      break;
    gint64 now = g_get_monotonic_time ();
    if (now >= deadline) {
      for (guint i = 0; i < n; i++) {
        Group *g = &groups[which[i]];
        group_fail (run, g,
                    g_error_new (SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                                 "%s: timed out after %" G_GINT64_FORMAT " ms", g->node->addr,
                                 run->client->timeout_us / 1000),
                    FALSE);
      }
      break;
    }
    int ready = poll (fds, n, (int) MIN ((deadline - now + 999) / 1000, G_MAXINT));
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      int errsv = errno;
      for (guint i = 0; i < n; i++)
        group_fail (run, &groups[which[i]],
                    g_error_new (SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "poll: %s",
                                 g_strerror (errsv)),
                    FALSE);
      break;
    }
    for (guint i = 0; i < n && ready > 0; i++) {
      if (fds[i].revents == 0)
        continue;
      Group *g = &groups[which[i]];
      RedisConn *c = g->conn;
      GError *e = NULL;
      gboolean ok = TRUE;
      if (c->connecting) {
        ok = redis_conn_connect_step (c, &e);
        if (ok && !c->connecting)
          node_connected (run->client, g->node, c);
      } else {
        if ((fds[i].revents & POLLOUT) && redis_conn_has_output (c))
          ok = redis_conn_write (c, &e);
        if (ok && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          ok = redis_conn_read (c, &e);
          if (ok)
            ok = group_drain (run, g, &e);
        }
      }
      if (!ok)
        group_fail (run, g, e, TRUE);
    }
  }
  g_free (fds);
  g_free (which);
}

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

guint
redis_client_run (RedisClient *client, const RedisBatch *batch, gint64 deadline, guint8 *failed,
                  GError **error)
{
  memset (failed, 0, batch->n);
  if (batch->n == 0)
    return 0;
  if (client->cluster)
    maybe_refresh (client, deadline);

  Run run = {.client = client, .batch = batch, .failed = failed};
  GArray *pending = g_array_sized_new (FALSE, FALSE, sizeof (Pending), batch->n);
  run.next_round = g_array_new (FALSE, FALSE, sizeof (Pending));
  for (guint i = 0; i < batch->n; i++) {
    Pending p = {.cmd = i};
    g_array_append_val (pending, p);
  }

  for (guint round = 0; pending->len > 0; round++) {
    if (round == MAX_ROUNDS) {
      for (guint k = 0; k < pending->len; k++)
        run_fail_cmd (&run, g_array_index (pending, Pending, k).cmd);
      run_note_error (&run, g_error_new (SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                                         "still redirected after %d rounds", MAX_ROUNDS));
      break;
    }

    /* Route: one group per node. */
    GArray *groups = g_array_new (FALSE, TRUE, sizeof (Group));
    g_rw_lock_reader_lock (&client->lock);
    guint n_nodes = client->nodes->len;
    gint *group_of = g_new (gint, n_nodes);
    for (guint k = 0; k < n_nodes; k++)
      group_of[k] = -1;
    gboolean unrouted = FALSE;
    for (guint k = 0; k < pending->len; k++) {
      Pending *p = &g_array_index (pending, Pending, k);
      RedisNode *node = p->node;
      if (node == NULL) {
        if (!client->cluster) {
          node = g_ptr_array_index (client->nodes, 0);
        } else {
          guint16 slot = batch->slot (batch->data, p->cmd);
          guint16 owner = client->slots ? client->slots[slot] : 0;
          if (owner == 0) {
            run_fail_cmd (&run, p->cmd);
            if (!unrouted)
              run_note_error (&run, g_error_new (SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE,
                                                 "slot %u is served by no known node", slot));
            unrouted = TRUE;
            continue;
          }
          node = g_ptr_array_index (client->nodes, owner - 1);
        }
      }
      if (group_of[node->index] < 0) {
        Group g = {.node = node, .expect = g_array_new (FALSE, FALSE, sizeof (guint))};
        group_of[node->index] = (gint) groups->len;
        g_array_append_val (groups, g);
      }
      Group *g = &g_array_index (groups, Group, group_of[node->index]);
      g->fresh |= p->fresh;
      if (p->asking) {
        guint mark = ASKING_MARK;
        g_array_append_val (g->expect, mark);
      }
      g_array_append_val (g->expect, p->cmd);
    }
    g_rw_lock_reader_unlock (&client->lock);
    g_free (group_of);
    if (unrouted)
      g_atomic_int_set (&client->refresh_needed, 1);

    /* Connect (or take pooled connections) and format each node's pipeline. */
    for (guint k = 0; k < groups->len; k++) {
      Group *g = &g_array_index (groups, Group, k);
      GError *e = NULL;
      g->conn = node_acquire (client, g->node, g->fresh, &e);
      if (g->conn == NULL) {
        for (guint j = 0; j < g->expect->len; j++) {
          guint cmd = g_array_index (g->expect, guint, j);
          if (cmd != ASKING_MARK)
            run_fail_cmd (&run, cmd);
        }
        run_note_error (&run, e);
        continue;
      }
      g->active = TRUE;
      for (guint j = 0; j < g->expect->len; j++) {
        guint cmd = g_array_index (g->expect, guint, j);
        if (cmd == ASKING_MARK)
          g_string_append_len (g->conn->obuf, asking_cmd, sizeof asking_cmd - 1);
        else
          batch->format (batch->data, cmd, g->conn->obuf);
      }
      /* Most of the time the pipeline goes out here, before the first poll. */
      if (!g->conn->connecting && !redis_conn_write (g->conn, &e))
        group_fail (&run, g, e, TRUE);
    }

    run_groups (&run, (Group *) groups->data, groups->len, deadline);

    for (guint k = 0; k < groups->len; k++) {
      Group *g = &g_array_index (groups, Group, k);
      g_assert (g->conn == NULL);
      g_array_unref (g->expect);
    }
    g_array_unref (groups);

    GArray *tmp = pending;
    pending = run.next_round;
    run.next_round = tmp;
    g_array_set_size (run.next_round, 0);
  }

  g_array_unref (pending);
  g_array_unref (run.next_round);
  if (run.first) {
    if (run.n_failed > 0 && error)
      g_propagate_error (error, run.first);
    else
      g_error_free (run.first);
  }
  return run.n_failed;
}

/* ---- single commands ---- */

typedef struct {
  const char *key;
  int argc;
  const char **argv;
  const size_t *argvlen;
  redisReply *reply;
} Call;

static guint16
call_slot (gpointer data, guint i)
{
  Call *call = data;
  return (guint16) sedp_redis_key_slot (call->key, strlen (call->key));
}

static void
call_format (gpointer data, guint i, GString *out)
{
  Call *call = data;
  g_string_append_printf (out, "*%d\r\n", call->argc);
  for (int k = 0; k < call->argc; k++) {
    size_t len = call->argvlen ? call->argvlen[k] : strlen (call->argv[k]);
    g_string_append_printf (out, "$%zu\r\n", len);
    g_string_append_len (out, call->argv[k], (gssize) len);
    g_string_append_len (out, "\r\n", 2);
  }
}

static gboolean
call_reply (gpointer data, guint i, redisReply *reply)
{
  Call *call = data;
  call->reply = reply;
  return TRUE;
}

redisReply *
redis_client_call (RedisClient *client, const char *routing_key, int argc, const char **argv,
                   const size_t *argvlen, gint64 deadline, GError **error)
{
  Call call = {.key = routing_key, .argc = argc, .argv = argv, .argvlen = argvlen};
  RedisBatch batch = {.n = 1, .data = &call, .slot = call_slot, .format = call_format,
                      .reply = call_reply};
  guint8 failed = 0;
  redis_client_run (client, &batch, deadline, &failed, error);
  if (failed && error && *error == NULL)
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "no reply");
  return call.reply;
}
