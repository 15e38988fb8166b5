/* sedp — one connection to a Redis server: a non-blocking socket, hiredis's reply reader and an
 * output buffer. Nothing here blocks: the callers wait with poll() against their deadline, so a
 * slow or dead server never holds a lookup past it. Writes use send(MSG_NOSIGNAL): a server that
 * went away is an error, never a SIGPIPE. */
#include "redis-private.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

static void
set_unavailable (GError **error, const RedisConn *conn, const char *what, int errsv)
{
  g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "%s: %s%s%s", conn->addr, what,
               errsv ? ": " : "", errsv ? g_strerror (errsv) : "");
}

/* Tries the remaining addresses until a connect is under way or done. */
static gboolean
conn_try_addresses (RedisConn *conn, GError **error)
{
  int last = ECONNREFUSED;
  for (struct addrinfo *ai = conn->next_addr; ai; ai = ai->ai_next) {
    conn->next_addr = ai->ai_next;
    int fd = socket (ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect (fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      conn->fd = fd;
      conn->connecting = FALSE;
      return TRUE;
    }
    if (errno == EINPROGRESS) {
      conn->fd = fd;
      conn->connecting = TRUE;
      return TRUE;
    }
    last = errno;
    close (fd);
  }
  set_unavailable (error, conn, "cannot connect", last);
  return FALSE;
}

/* hiredis's own reply functions, with arrays bounded: a reply announcing "*309551616" made
 * hiredis 0.14 allocate 2.4 GB of element pointers before a single element arrived (found by
 * the redis fuzzer; hiredis 1.0 has maxelements, Debian 12 has 0.14). */
static redisReplyObjectFunctions bounded_fn;
static void *(*hiredis_create_array) (const redisReadTask *, int);

static void *
bounded_create_array (const redisReadTask *task, int elements)
{
  if (elements > REDIS_MAX_REPLY_ELEMENTS) {
    ((RedisConn *) task->privdata)->array_refused = elements;
    return NULL; /* the reader stops with an error */
  }
  return hiredis_create_array (task, elements);
}

redisReader *
redis_conn_reader_new (RedisConn *conn)
{
  static gsize once;
  if (g_once_init_enter (&once)) {
    redisReader *plain = redisReaderCreate ();
    bounded_fn = *plain->fn;
    hiredis_create_array = bounded_fn.createArray;
    bounded_fn.createArray = bounded_create_array;
    redisReaderFree (plain);
    g_once_init_leave (&once, 1);
  }
  redisReader *r = redisReaderCreateWithFunctions (&bounded_fn);
  if (r)
    r->privdata = conn;
  return r;
}

RedisConn *
redis_conn_new (const char *host, guint16 port, GError **error)
{
  RedisConn *conn = g_new0 (RedisConn, 1);
  conn->fd = -1;
  conn->addr = strchr (host, ':') ? g_strdup_printf ("[%s]:%u", host, port)
                                  : g_strdup_printf ("%s:%u", host, port);
  conn->obuf = g_string_sized_new (4096);
  conn->reader = redis_conn_reader_new (conn);
  if (conn->reader == NULL) {
    set_unavailable (error, conn, "out of memory", 0);
    redis_conn_free (conn);
    return NULL;
  }

  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  char service[8];
  g_snprintf (service, sizeof service, "%u", port);
  int rc = getaddrinfo (host, service, &hints, &conn->addrs);
  if (rc != 0) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "%s: cannot resolve '%s': %s",
                 conn->addr, host, gai_strerror (rc));
    conn->addrs = NULL;
    redis_conn_free (conn);
    return NULL;
  }
  conn->next_addr = conn->addrs;
  if (!conn_try_addresses (conn, error)) {
    redis_conn_free (conn);
    return NULL;
  }
  return conn;
}

void
redis_conn_free (RedisConn *conn)
{
  if (conn == NULL)
    return;
  if (conn->fd >= 0)
    close (conn->fd);
  if (conn->addrs)
    freeaddrinfo (conn->addrs);
  if (conn->reader)
    redisReaderFree (conn->reader);
  g_string_free (conn->obuf, TRUE);
  g_free (conn->addr);
  g_free (conn);
}

gboolean
redis_conn_connect_step (RedisConn *conn, GError **error)
{
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt (conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    err = errno;
  if (err == 0) {
    conn->connecting = FALSE;
    return TRUE;
  }
  close (conn->fd);
  conn->fd = -1;
  if (conn->next_addr == NULL) {
    set_unavailable (error, conn, "cannot connect", err);
    return FALSE;
  }
  return conn_try_addresses (conn, error);
}

gboolean
redis_conn_write (RedisConn *conn, GError **error)
{
  while (conn->sent < conn->obuf->len) {
    ssize_t w = send (conn->fd, conn->obuf->str + conn->sent, conn->obuf->len - conn->sent,
                      MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return TRUE;
      conn->io_failed = TRUE;
      set_unavailable (error, conn, "cannot send", errno);
      return FALSE;
    }
    conn->sent += (gsize) w;
  }
  g_string_truncate (conn->obuf, 0);
  conn->sent = 0;
  return TRUE;
}

gboolean
redis_conn_read (RedisConn *conn, GError **error)
{
  char buf[16384];
  for (int rounds = 0; rounds < 64; rounds++) {
    ssize_t r = recv (conn->fd, buf, sizeof buf, 0);
    if (r > 0) {
      if (redisReaderFeed (conn->reader, buf, (size_t) r) != REDIS_OK) {
        set_unavailable (error, conn, "out of memory reading a reply", 0);
        return FALSE;
      }
      if ((size_t) r < sizeof buf)
        return TRUE;
      continue;
    }
    if (r == 0) {
      conn->eof = TRUE;
      return TRUE;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return TRUE;
    conn->io_failed = TRUE;
    set_unavailable (error, conn, "cannot receive", errno);
    return FALSE;
  }
  return TRUE;
}

int
redis_conn_next_reply (RedisConn *conn, redisReply **reply, GError **error)
{
  void *r = NULL;
  if (redisReaderGetReply (conn->reader, &r) != REDIS_OK) {
    if (conn->array_refused)
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "%s: protocol error: a "
                   "reply array of %d elements, more than the limit of %d", conn->addr,
                   conn->array_refused, REDIS_MAX_REPLY_ELEMENTS);
    else
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE, "%s: protocol error: %s",
                   conn->addr, conn->reader->errstr);
    return -1;
  }
  if (r == NULL)
    return 0;
  *reply = r;
  return 1;
}

void
redis_conn_append_argv (RedisConn *conn, int argc, const char **argv, const size_t *argvlen)
{
  g_string_append_printf (conn->obuf, "*%d\r\n", argc);
  for (int i = 0; i < argc; i++) {
    size_t len = argvlen ? argvlen[i] : strlen (argv[i]);
    g_string_append_printf (conn->obuf, "$%zu\r\n", len);
    g_string_append_len (conn->obuf, argv[i], (gssize) len);
    g_string_append_len (conn->obuf, "\r\n", 2);
  }
}

redisReply *
redis_conn_roundtrip (RedisConn *conn, gint64 deadline, GError **error)
{
  for (;;) {
    if (!conn->connecting && !redis_conn_has_output (conn)) {
      redisReply *reply = NULL;
      int got = redis_conn_next_reply (conn, &reply, error);
      if (got < 0)
        return NULL;
      if (got > 0)
        return reply;
      if (conn->eof) {
        set_unavailable (error, conn, "connection closed by the server", 0);
        return NULL;
      }
    }
    gint64 now = g_get_monotonic_time ();
    if (now >= deadline) {
      set_unavailable (error, conn, "timed out", 0);
      return NULL;
    }
    struct pollfd pfd = {.fd = conn->fd,
                         .events = (conn->connecting || redis_conn_has_output (conn)) ? POLLOUT
                                                                                      : POLLIN};
    int n = poll (&pfd, 1, (int) MIN ((deadline - now + 999) / 1000, G_MAXINT));
    if (n < 0 && errno != EINTR) {
      set_unavailable (error, conn, "poll", errno);
      return NULL;
    }
    if (n <= 0)
      continue;
    if (conn->connecting) {
      if (!redis_conn_connect_step (conn, error))
        return NULL;
    } else if (redis_conn_has_output (conn)) {
      if (!redis_conn_write (conn, error))
        return NULL;
    } else if (!redis_conn_read (conn, error)) {
      return NULL;
    }
  }
}
