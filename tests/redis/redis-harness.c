/* sedp tests — redis-server processes for the tests (see redis-harness.h). */
#include "redis-harness.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

gboolean
redis_harness_available (void)
{
  g_autofree char *server = g_find_program_in_path ("redis-server");
  g_autofree char *cli = g_find_program_in_path ("redis-cli");
  return server != NULL && cli != NULL;
}

static gboolean
port_free (guint port)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons ((guint16) port),
                           .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
  gboolean ok = bind (fd, (struct sockaddr *) &sa, sizeof sa) == 0;
  close (fd);
  return ok;
}

/* A random free port (and its cluster bus port, +10000, for cluster nodes). */
static guint16
pick_port (gboolean cluster)
{
  for (int tries = 0; tries < 200; tries++) {
    guint port = (guint) g_random_int_range (20000, 50000);
    if (port_free (port) && (!cluster || port_free (port + 10000)))
      return (guint16) port;
  }
  return 0;
}

static char *
read_log (const RedisServer *server)
{
  g_autofree char *path = g_build_filename (server->dir, "redis.log", NULL);
  char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return g_strdup ("(no log)");
  gsize len = strlen (text);
  if (len > 2000) {
    char *tail = g_strdup (text + len - 2000);
    g_free (text);
    return tail;
  }
  return text;
}

static redisContext *
connect_to (guint16 port, guint timeout_ms)
{
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  redisContext *c = redisConnectWithTimeout ("127.0.0.1", port, tv);
  if (c == NULL)
    return NULL;
  if (c->err) {
    redisFree (c);
    return NULL;
  }
  struct timeval rw = {.tv_sec = 20};
  redisSetTimeout (c, rw);
  return c;
}

redisReply *
redis_server_command_argv (const RedisServer *server, int argc, const char **argv,
                           const size_t *argvlen)
{
  redisContext *c = connect_to (server->port, 2000);
  if (c == NULL)
    return NULL;
  redisReply *r = redisCommandArgv (c, argc, argv, argvlen);
  redisFree (c);
  return r;
}

redisReply *
redis_server_command (const RedisServer *server, const char *format, ...)
{
  redisContext *c = connect_to (server->port, 2000);
  if (c == NULL)
    return NULL;
  va_list ap;
  va_start (ap, format);
  redisReply *r = redisvCommand (c, format, ap);
  va_end (ap);
  redisFree (c);
  return r;
}

static gboolean
answers_ping (const RedisServer *server)
{
  redisContext *c = connect_to (server->port, 200);
  if (c == NULL)
    return FALSE;
  redisReply *r = redisCommand (c, "PING");
  gboolean ok = r && r->type == REDIS_REPLY_STATUS && strcmp (r->str, "PONG") == 0;
  if (r)
    freeReplyObject (r);
  redisFree (c);
  return ok;
}

gboolean
redis_server_start (RedisServer *server, GError **error)
{
  g_return_val_if_fail (server->pid == 0, FALSE);
  g_autofree char *port = g_strdup_printf ("%u", server->port);
  g_autofree char *log = g_build_filename (server->dir, "redis.log", NULL);
  g_autofree char *conf = g_build_filename (server->dir, "nodes.conf", NULL);
  GPtrArray *argv = g_ptr_array_new ();
  const char *base[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--daemonize", "no", "--dir", server->dir,
                        "--logfile", log, "--enable-debug-command", "local"};
  for (guint i = 0; i < G_N_ELEMENTS (base); i++)
    g_ptr_array_add (argv, (gpointer) base[i]);
  if (server->cluster) {
    const char *cl[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf,
                        "--cluster-node-timeout", "5000"};
    for (guint i = 0; i < G_N_ELEMENTS (cl); i++)
      g_ptr_array_add (argv, (gpointer) cl[i]);
  }
  g_ptr_array_add (argv, NULL);
  gboolean ok = g_spawn_async (server->dir, (char **) argv->pdata, NULL,
                               G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                 G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, &server->pid, error);
  g_ptr_array_unref (argv);
  if (!ok) {
    server->pid = 0;
    return FALSE;
  }
  gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < until) {
    int status;
    if (waitpid (server->pid, &status, WNOHANG) == server->pid) {
      g_spawn_close_pid (server->pid);
      server->pid = 0;
      g_autofree char *text = read_log (server);
      g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                   "redis-server on port %u exited at start: %s", server->port, text);
      return FALSE;
    }
    if (answers_ping (server))
      return TRUE;
    g_usleep (20000);
  }
  redis_server_kill (server);
  g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
               "redis-server on port %u does not answer PING", server->port);
  return FALSE;
}

RedisServer *
redis_server_new (gboolean cluster, GError **error)
{
  for (int attempt = 0; attempt < 5; attempt++) {
    RedisServer *server = g_new0 (RedisServer, 1);
    server->cluster = cluster;
    server->port = pick_port (cluster);
    server->dir = g_dir_make_tmp ("sedp-redis-XXXXXX", error);
    if (server->dir == NULL || server->port == 0) {
      if (server->port == 0 && server->dir)
        g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "no free port");
      redis_server_free (server);
      return NULL;
    }
    GError *local = NULL;
    if (redis_server_start (server, &local))
      return server;
    redis_server_free (server);
    if (attempt == 4) { /* the port may have been taken between the check and the start */
      g_propagate_error (error, local);
      return NULL;
    }
    g_clear_error (&local);
  }
  return NULL;
}

void
redis_server_kill (RedisServer *server)
{
  if (server == NULL || server->pid == 0)
    return;
  kill (server->pid, SIGKILL);
  int status;
  while (waitpid (server->pid, &status, 0) < 0 && errno == EINTR)
    ;
  g_spawn_close_pid (server->pid);
  server->pid = 0;
}

static void
remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d))) {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
        remove_tree (path);
      else
        g_unlink (path);
    }
    g_dir_close (d);
  }
  g_rmdir (dir);
}

void
redis_server_free (RedisServer *server)
{
  if (server == NULL)
    return;
  redis_server_kill (server);
  if (server->dir)
    remove_tree (server->dir);
  g_free (server->dir);
  g_free (server);
}

char *
redis_server_url (const RedisServer *server)
{
  return g_strdup_printf ("redis://127.0.0.1:%u", server->port);
}

char *
redis_server_node_id (const RedisServer *server)
{
  redisReply *r = redis_server_command (server, "CLUSTER MYID");
  char *id = (r && r->type == REDIS_REPLY_STRING) ? g_strdup (r->str) : NULL;
  if (r)
    freeReplyObject (r);
  return id;
}

/* Every node: cluster_state:ok and CLUSTER SLOTS covering all 16384 slots. */
static gboolean
cluster_ready (RedisCluster *cluster)
{
  for (guint i = 0; i < cluster->n; i++) {
    redisReply *r = redis_server_command (cluster->nodes[i], "CLUSTER INFO");
    gboolean ok = r && r->type == REDIS_REPLY_STRING && strstr (r->str, "cluster_state:ok");
    if (r)
      freeReplyObject (r);
    if (!ok)
      return FALSE;
    r = redis_server_command (cluster->nodes[i], "CLUSTER SLOTS");
    long long covered = 0;
    if (r && r->type == REDIS_REPLY_ARRAY)
      for (size_t k = 0; k < r->elements; k++)
        covered += r->element[k]->element[1]->integer - r->element[k]->element[0]->integer + 1;
    if (r)
      freeReplyObject (r);
    if (covered != 16384)
      return FALSE;
  }
  return TRUE;
}

RedisCluster *
redis_cluster_new (guint n, GError **error)
{
  RedisCluster *cluster = g_new0 (RedisCluster, 1);
  cluster->nodes = g_new0 (RedisServer *, n);
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, g_strdup ("redis-cli"));
  g_ptr_array_add (argv, g_strdup ("--cluster"));
  g_ptr_array_add (argv, g_strdup ("create"));
  GString *url = g_string_new ("redis+cluster://");
  for (guint i = 0; i < n; i++) {
    cluster->nodes[i] = redis_server_new (TRUE, error);
    if (cluster->nodes[i] == NULL) {
      g_ptr_array_unref (argv);
      g_string_free (url, TRUE);
      redis_cluster_free (cluster);
      return NULL;
    }
    cluster->n = i + 1;
    g_ptr_array_add (argv, g_strdup_printf ("127.0.0.1:%u", cluster->nodes[i]->port));
    g_string_append_printf (url, "%s127.0.0.1:%u", i ? "," : "", cluster->nodes[i]->port);
  }
  cluster->url = g_string_free (url, FALSE);
  g_ptr_array_add (argv, g_strdup ("--cluster-replicas"));
  g_ptr_array_add (argv, g_strdup ("0"));
  g_ptr_array_add (argv, g_strdup ("--cluster-yes"));
  g_ptr_array_add (argv, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  gboolean ok = g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                              &out, &err, &status, error);
  g_ptr_array_unref (argv);
  if (ok && !g_spawn_check_wait_status (status, NULL)) {
    g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "redis-cli --cluster create: %s%s",
                 out, err);
    ok = FALSE;
  }
  gint64 until = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (ok && !cluster_ready (cluster)) {
    if (g_get_monotonic_time () > until) {
      g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "the cluster did not settle");
      ok = FALSE;
    }
    g_usleep (50000);
  }
  if (!ok) {
    redis_cluster_free (cluster);
    return NULL;
  }
  return cluster;
}

void
redis_cluster_free (RedisCluster *cluster)
{
  if (cluster == NULL)
    return;
  for (guint i = 0; i < cluster->n; i++)
    redis_server_free (cluster->nodes[i]);
  g_free (cluster->nodes);
  g_free (cluster->url);
  g_free (cluster);
}

void
redis_cluster_slot_map (RedisCluster *cluster, RedisServer **owners)
{
  memset (owners, 0, 16384 * sizeof *owners);
  for (guint i = 0; i < cluster->n; i++) {
    if (cluster->nodes[i]->pid == 0)
      continue;
    redisReply *r = redis_server_command (cluster->nodes[i], "CLUSTER SLOTS");
    if (r == NULL)
      continue;
    if (r->type == REDIS_REPLY_ARRAY)
      for (size_t k = 0; k < r->elements; k++) {
        redisReply *range = r->element[k];
        long long port = range->element[2]->element[1]->integer;
        RedisServer *owner = NULL;
        for (guint j = 0; j < cluster->n; j++)
          if (cluster->nodes[j]->port == port)
            owner = cluster->nodes[j];
        for (long long s = range->element[0]->integer; s <= range->element[1]->integer; s++)
          if (s >= 0 && s < 16384)
            owners[s] = owner;
      }
    freeReplyObject (r);
    return;
  }
}

RedisServer *
redis_cluster_owner (RedisCluster *cluster, guint slot)
{
  RedisServer **owners = g_new0 (RedisServer *, 16384);
  redis_cluster_slot_map (cluster, owners);
  RedisServer *owner = slot < 16384 ? owners[slot] : NULL;
  g_free (owners);
  return owner;
}
