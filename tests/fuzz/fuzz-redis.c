/* sedp fuzz target `redis` — what sedp makes of a Redis server's replies: the bytes are what a
 * server sent, parsed by hiredis's reader through the connection's reply function
 * (core/cube/redis/conn.c), and every reply is then taken by each of sedp's interpreters
 * (core/cube/redis/cluster.c, source-redis.c): as a CLUSTER SLOTS slot map, as a MOVED/ASK
 * redirect, as the HGETALL of a cube's metadata (single server and cluster), and as the reply
 * to a GET and to an MGET of lookups (dim 1 and 4). No socket is opened. */
#include "fuzz-common.h"

#include "cube/redis/redis-private.h"

/* Replies taken from one input, at most. */
#define MAX_REPLIES 256
/* Keys of an MGET, at most. */
#define MAX_MGET 4096

static void
take_lookups (const redisReply *reply)
{
  static const guint dims[] = {1, 4};
  for (guint d = 0; d < G_N_ELEMENTS (dims); d++) {
    guint dim = dims[d];
    guint count = reply->type == REDIS_REPLY_ARRAY ? (guint) MIN (reply->elements, MAX_MGET) : 3;
    float *out = g_new0 (float, (gsize) MAX (count, 1) * dim);
    guint8 *found = g_new0 (guint8, MAX (count, 1));
    RedisLookupCounts counts = {0};
    redis_lookup_take_reply (reply, FALSE, 1, dim, out, found, &counts);
    redis_lookup_take_reply (reply, TRUE, count, dim, out, found, &counts);
    g_assert (counts.found + counts.missing + counts.malformed + counts.errors == 1 + count);
    g_free (out);
    g_free (found);
  }
}

static void
take_meta (const redisReply *reply, gboolean cluster)
{
  SedpCubeMeta meta;
  GError *error = NULL;
  if (redis_meta_from_reply (reply, cluster, "fuzz", "redis://fuzz", &meta, &error)) {
    g_assert (meta.dim >= 1);
    g_free (meta.name);
  } else {
    g_assert (error != NULL && error->domain == SEDP_CUBE_ERROR);
    g_error_free (error);
  }
}

static void
take_redirect (const redisReply *reply)
{
  if ((reply->type != REDIS_REPLY_ERROR && reply->type != REDIS_REPLY_STATUS) || reply->str == NULL)
    return;
  gboolean ask;
  guint16 slot, port;
  char *host = NULL;
  if (redis_redirect_parse (reply->str, &ask, &slot, &host, &port)) {
    g_assert (slot < REDIS_SLOTS && port > 0 && host != NULL);
    g_free (host);
  }
}

static void
take_reply (RedisClient *client, const redisReply *reply)
{
  GError *error = NULL;
  RedisNode *node = client->nodes->pdata[0];
  if (!redis_client_apply_slots (client, node, reply, &error))
    g_clear_error (&error);
  take_redirect (reply);
  take_meta (reply, FALSE);
  take_meta (reply, TRUE);
  take_lookups (reply);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;
  /* A single-server URL: the client connects to nothing until asked. */
  RedisClient *client = redis_client_new ("redis://127.0.0.1:6379", 0, 0, &error);
  g_assert (client != NULL);
  RedisConn conn = {.fd = -1, .addr = "fuzz:6379"};
  conn.reader = redis_conn_reader_new (&conn);
  if (size > 0 && redisReaderFeed (conn.reader, (const char *) data, size) != REDIS_OK)
    g_error ("fuzz: redisReaderFeed failed");
  for (guint n = 0; n < MAX_REPLIES; n++) {
    redisReply *reply = NULL;
    int got = redis_conn_next_reply (&conn, &reply, &error);
    if (got <= 0) {
      if (error)
        fuzz_refused ("reply", g_steal_pointer (&error));
      break;
    }
    take_reply (client, reply);
    freeReplyObject (reply);
  }
  redisReaderFree (conn.reader);
  redis_client_free (client);
  return 0;
}
