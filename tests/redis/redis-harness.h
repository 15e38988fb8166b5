/* sedp tests — real redis-server processes on loopback for the Redis backend's tests: one
 * server, or a Redis Cluster of several, each in its own temporary folder, started with
 * g_spawn_async and killed and reaped by the test. */
#pragma once

#include <glib.h>
#include <hiredis/hiredis.h>

typedef struct {
  GPid pid;         /* 0 while not running */
  guint16 port;
  char *dir;        /* its temporary folder (log, nodes.conf) */
  gboolean cluster;
} RedisServer;

typedef struct {
  RedisServer **nodes;
  guint n;
  char *url; /* "redis+cluster://127.0.0.1:P1,…" */
} RedisCluster;

/* TRUE when redis-server and redis-cli are on PATH. */
gboolean redis_harness_available (void);

/* A server on a free loopback port (cluster-enabled when @cluster), answering PING. */
RedisServer *redis_server_new (gboolean cluster, GError **error);
/* (Re)starts the server on its port and waits until it answers PING. */
gboolean redis_server_start (RedisServer *server, GError **error);
/* SIGKILL and reap. */
void redis_server_kill (RedisServer *server);
/* Kills it if running and removes its folder. */
void redis_server_free (RedisServer *server);
/* "redis://127.0.0.1:PORT" (free it). */
char *redis_server_url (const RedisServer *server);

/* A command on a fresh connection (NULL when the server cannot be reached). */
redisReply *redis_server_command (const RedisServer *server, const char *format, ...);
redisReply *redis_server_command_argv (const RedisServer *server, int argc, const char **argv,
                                       const size_t *argvlen);

/* @n cluster-enabled servers joined with redis-cli --cluster create (no replicas), waited for
 * until every node reports cluster_state:ok and the same slot map. */
RedisCluster *redis_cluster_new (guint n, GError **error);
void redis_cluster_free (RedisCluster *cluster);
/* The node serving @slot, by CLUSTER SLOTS on a live node; NULL when unknown. */
RedisServer *redis_cluster_owner (RedisCluster *cluster, guint slot);
/* @owners (16384 entries): the node serving each slot (NULL when none), by one CLUSTER SLOTS. */
void redis_cluster_slot_map (RedisCluster *cluster, RedisServer **owners);
/* The node's id (CLUSTER MYID); free it. */
char *redis_server_node_id (const RedisServer *server);
