/* sedp — the Redis backend's insides: connections, the node table, the cluster slot map and the
 * batch executor shared by lookups (source-redis.c) and uploads (push.c). */
#pragma once

#include "cube/cube.h"
#include "cube/source.h"
#include "redis.h"

#include <hiredis/hiredis.h>
#include <netdb.h>
#include <stdatomic.h>
#include <string.h>

G_BEGIN_DECLS

#define REDIS_SLOTS 16384

/* Defaults for options left at 0. */
#define REDIS_DEFAULT_TIMEOUT_MS 1000
#define REDIS_DEFAULT_RECONNECT_MS 1000

/* Value byte order on the server: little-endian float32, dim per key. */
#define REDIS_META_FORMAT "sedp-cube/1"

/* ---- URLs (source-redis.c) ---- */

typedef struct {
  gboolean cluster;
  GPtrArray *hosts; /* char*, at least one */
  GArray *ports;    /* guint16, one per host */
} RedisUrl;

/* Parses "redis://HOST[:PORT][/]" and "redis+cluster://HOST[:PORT][,HOST[:PORT]…][/]" (IPv6 hosts in
 * brackets); PORT defaults to 6379. Errors: INVALID naming @url. */
gboolean redis_url_parse (const char *url, RedisUrl *parsed, GError **error);
void redis_url_clear (RedisUrl *parsed);

/* Checks a cube name: 1 to 200 printable, non-space ASCII characters. Errors: INVALID. */
gboolean redis_name_check (const char *name, GError **error);

/* Appends "NAME:%016" PRIx64 (the key of a signature) to @out. */
void redis_append_key (GString *out, const char *name, gsize name_len, guint64 key);

/* ---- one connection (conn.c) ---- */

typedef struct {
  int fd;
  gboolean connecting; /* a non-blocking connect() is in progress */
  gboolean eof;        /* the server closed the connection */
  gboolean reused;     /* taken from a node's pool */
  gboolean io_failed;  /* send or receive failed (a reset connection) */
  struct addrinfo *addrs, *next_addr;
  char *addr;          /* "host:port", for messages */
  redisReader *reader;
  GString *obuf;       /* formatted commands not yet sent, from @sent on */
  gsize sent;
  guint epoch;         /* the node's epoch when connected (see RedisNode) */
  int array_refused;   /* the element count of a reply array refused as too large, or 0 */
} RedisConn;

/* The most elements one reply array may have (an MGET answers MGET_CHUNK, CLUSTER SLOTS at most
 * 16384 ranges): hiredis would allocate a pointer per announced element before any arrives. */
#define REDIS_MAX_REPLY_ELEMENTS (1 << 20)

/* hiredis's reply reader for @conn, its arrays bounded by REDIS_MAX_REPLY_ELEMENTS (a larger
 * one stops it with an error naming the count, from redis_conn_next_reply()). */
redisReader *redis_conn_reader_new (RedisConn *conn);

/* Resolves @host and starts a non-blocking connect. Errors: UNAVAILABLE. */
RedisConn *redis_conn_new (const char *host, guint16 port, GError **error);
void redis_conn_free (RedisConn *conn);
/* After poll() reported the connecting socket: finishes the connect, or moves to the host's next
 * address (conn->connecting stays TRUE). FALSE with @error when no address is left. */
gboolean redis_conn_connect_step (RedisConn *conn, GError **error);
static inline gboolean
redis_conn_has_output (const RedisConn *conn)
{
  return conn->sent < conn->obuf->len;
}
/* Sends what the socket takes now (never blocks, never raises SIGPIPE). */
gboolean redis_conn_write (RedisConn *conn, GError **error);
/* Feeds what the socket has to the reply reader (never blocks); sets conn->eof at end of stream. */
gboolean redis_conn_read (RedisConn *conn, GError **error);
/* 1: a reply in *@reply (freeReplyObject); 0: more input needed; -1: a protocol error. */
int redis_conn_next_reply (RedisConn *conn, redisReply **reply, GError **error);
/* Sends the output buffer and waits for one reply until @deadline (monotonic µs). */
redisReply *redis_conn_roundtrip (RedisConn *conn, gint64 deadline, GError **error);
/* Appends a command in RESP to the output buffer. */
void redis_conn_append_argv (RedisConn *conn, int argc, const char **argv, const size_t *argvlen);

/* ---- the client: nodes, slot map, batches (cluster.c) ---- */

/**
 * RedisNode:
 * One server, with a pool of idle connections. A failure (I/O error, timeout) bumps @epoch, which
 * retires every connection made before it, and holds further connects off for reconnect_ms.
 */
typedef struct {
  char *host;
  guint16 port;
  char *addr; /* "host:port" */
  guint index;
  GMutex lock;
  GPtrArray *idle; /* RedisConn* */
  guint epoch;
  gboolean failed;     /* since the last successful connect */
  gint64 retry_after;  /* monotonic µs: no connect before */
} RedisNode;

typedef struct {
  gboolean cluster;
  char *url;
  gint64 timeout_us;
  gint64 reconnect_us;

  GRWLock lock;          /* nodes, by_addr, slots */
  GPtrArray *nodes;      /* RedisNode*, only ever added; the URL's seeds first */
  GHashTable *by_addr;   /* "host:port" → RedisNode* */
  guint16 *slots;        /* cluster: REDIS_SLOTS node indices + 1 (0: no node known) */
  guint n_seeds;

  GMutex refresh_lock;
  gint refresh_needed;   /* atomic */
  gint64 last_refresh;   /* under refresh_lock */
  guint refresh_next;    /* under refresh_lock: the node asked first */

  _Atomic guint64 reconnects, redirects, refreshes, connect_failures;
} RedisClient;

/* Parses @url; in cluster mode reads the slot map (CLUSTER SLOTS) from the first seed that
 * answers. Errors: INVALID (URL), UNAVAILABLE. */
RedisClient *redis_client_new (const char *url, guint timeout_ms, guint reconnect_ms,
                               GError **error);
void redis_client_free (RedisClient *client);

/**
 * RedisBatch:
 * @n commands, each on one key, formatted on demand (again after a redirect). @reply receives the
 * final reply of each command that got one (never a MOVED or ASK); it returns %TRUE when it keeps
 * the reply (then frees it itself).
 */
typedef struct {
  guint n;
  gpointer data;
  guint16 (*slot) (gpointer data, guint i);
  void (*format) (gpointer data, guint i, GString *out);
  gboolean (*reply) (gpointer data, guint i, redisReply *reply);
} RedisBatch;

/**
 * redis_client_run:
 * Sends every command of @batch, pipelined per node and all nodes at once, and collects the
 * replies until @deadline (monotonic µs), following MOVED and ASK redirects.
 * @failed: (array length=batch->n): set to 1 for each command that got no reply (node down or
 * slow, redirect loop)
 *
 * Returns: the number of failed commands; @error (may be NULL) tells the first reason.
 */
guint redis_client_run (RedisClient *client, const RedisBatch *batch, gint64 deadline,
                        guint8 *failed, GError **error);

/* One command on the node serving @routing_key (any node in single mode). NULL with @error
 * (UNAVAILABLE) when no reply came before @deadline. */
redisReply *redis_client_call (RedisClient *client, const char *routing_key, int argc,
                               const char **argv, const size_t *argvlen, gint64 deadline,
                               GError **error);

/* Appends the client's counters ("redis_reconnects N" …). */
void redis_client_stats (RedisClient *client, GString *out);

/* ---- what replies mean (no I/O: tests/fuzz/fuzz-redis.c feeds them server bytes) ---- */

/* Takes a CLUSTER SLOTS @reply from @node into @client's slot map (nodes it names are added;
 * an empty host means @node's). Errors: UNAVAILABLE (an error reply, not an array, no slot). */
gboolean redis_client_apply_slots (RedisClient *client, RedisNode *node, const redisReply *reply,
                                   GError **error);

/* Parses the text of a redirect error, "MOVED SLOT HOST:PORT" or "ASK SLOT HOST:PORT" (an IPv6
 * HOST in brackets, which are removed; an empty HOST: the node asked). FALSE for any other
 * text; else *@host is new (possibly ""). */
gboolean redis_redirect_parse (const char *text, gboolean *ask, guint16 *slot, char **host,
                               guint16 *port);

/* Checks a HGETALL NAME:meta @reply and fills @meta (its name owned; n_blocks, block_size 0).
 * @cluster: whether the URL @url is a cluster's (a redirect otherwise means a wrong URL).
 * Errors: INVALID, CORRUPT, UNAVAILABLE (no such cube). */
gboolean redis_meta_from_reply (const redisReply *reply, gboolean cluster, const char *name,
                                const char *url, SedpCubeMeta *meta, GError **error);

/* What a lookup's keys got. */
typedef struct {
  guint64 found, missing, malformed, errors;
} RedisLookupCounts;

/* Takes the reply to one lookup command: a GET (@mget FALSE, one key) or an MGET of @count keys.
 * A value of @dim little-endian floats goes to its row of @out (@dim floats per key) and sets
 * its byte of @found (nullable); anything else only counts. */
void redis_lookup_take_reply (const redisReply *reply, gboolean mget, guint count, guint dim,
                              float *out, guint8 *found, RedisLookupCounts *counts);

/* Takes a float row from a value of dim × 4 little-endian bytes. */
static inline void
redis_floats_from_le (float *dst, const char *src, guint dim)
{
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  memcpy (dst, src, (gsize) dim * sizeof (float));
#else
  for (guint d = 0; d < dim; d++) {
    guint32 u;
    memcpy (&u, src + 4 * d, 4);
    u = GUINT32_FROM_LE (u);
    memcpy (dst + d, &u, 4);
  }
#endif
}

G_END_DECLS
