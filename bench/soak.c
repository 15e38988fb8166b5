/* bench/run soak — the CTR example served from Redis for a long run at a steady share of its
 * capacity, with Redis restarted midway and malformed requests mixed in.
 *
 * 1. prepares the CTR example as bench/run e2e does (build-bench/e2e-data/, shared with it:
 *    64 requests of 300 items, the realistic DLRM preset);
 * 2. starts redis-server on a free loopback port (tests/redis's harness, in a temporary folder),
 *    pushes the cube (`sedp cube push … --name ctr_example`) and has Redis write it to its
 *    dump.rdb (SAVE), so that a restarted server comes back with the same data;
 * 3. writes a copy of pipelines/ctr-redis.pipeline pointing at that server and at the data, with
 *    the requests as its warm-up, starts `sedp serve COPY --listen 127.0.0.1:0` and waits for
 *    `sedp serve: ready`;
 * 4. sends each of the 64 requests twice, one at a time, and keeps the scores of each answer: the
 *    reference against which every answer of the run is checked (an answer whose scores differ
 *    was given default embeddings somewhere: answered with defaults);
 * 5. measures the capacity: `sedp bench URL --find-capacity --slo-p99-ms --capacity-slo-ms
 *    --format protobuf`, probes of --capacity-seconds: the highest open-loop rate whose p99 stays
 *    within the SLO; unless --rate is given;
 * 6. the soak: an open-loop constant rate of --load × capacity requests/s for --duration seconds
 *    from this program's own HTTP/1.1 client (threads, one connection per request, as sedp serve
 *    closes each connection on libsoup < 3.3). Request i is due at t0 + i / rate; its latency is
 *    counted from that due time (no coordinated omission). One request in 100 is malformed, in
 *    turn of the kinds in malformed_kinds[] below (broken protobuf, broken JSON, JSON nested
 *    100 000 deep, wrong or missing content type, oversized counts and bodies): each must be
 *    answered 4xx. At --duration / 2 redis-server is killed (SIGKILL) and restarted on its port
 *    --outage seconds later. Every --sample-interval seconds the server's RssAnon and open
 *    descriptors are read from /proc;
 * 7. after the run (and --drain seconds without load) the descriptors are counted again, and the
 *    server's /metrics (scraped before and after) give the degraded lookups.
 *
 * Results (docs/load-testing.md, "Soak"): soak_errors (valid requests not answered 200 with
 * status OK, plus answers with defaults outside the outage window, plus malformed requests not
 * answered 4xx), soak_rss_growth_kb (RssAnon, last sample minus the one --rss-window seconds
 * before the end: 300, or half the run when shorter), soak_fd_delta (end minus start, both idle),
 * soak_p99_drift (|p99 last − p99 first| / p99 first over windows of 60 s, or a quarter of the
 * run when shorter), with the supporting lines before them.
 *
 * Options: --duration S (600), --load F (0.7), --rate R (requests/s; skips the capacity run),
 * --capacity-seconds S (10), --capacity-slo-ms MS (100), --outage S (5), --sample-interval S (5), --drain S (2),
 * --workers N (client threads; default: the rate, 16 to 512), --timeout-ms T (cube_accessor's
 * timeout_ms in the copy; default: the file's, 50). */
#define _GNU_SOURCE /* memmem */
#include "bench-process.h"
#include "bench-stats.h"
#include "redis-harness.h"
#include "io/wire.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_REFS_MAX 4096

/* ---- the requests ---- */

typedef enum {
  KIND_VALID,
  KIND_PB_TRUNCATED,    /* a valid protobuf request cut in half */
  KIND_PB_GARBAGE,      /* 2000 random bytes as protobuf */
  KIND_PB_HUGE_LENGTH,  /* items field claiming 2^31 bytes */
  KIND_JSON_TRUNCATED,  /* a valid JSON request cut in half */
  KIND_JSON_WRONG_TYPE, /* {"items": "many", …} */
  KIND_JSON_NESTED,     /* '[' × 100000 */
  KIND_TEXT_PLAIN,      /* a valid protobuf body as text/plain */
  KIND_NO_TYPE,         /* a valid protobuf body without Content-Type */
  KIND_TOO_MANY_ITEMS,  /* JSON of 10001 items (max_items is 10000) */
  KIND_OVER_MAX_EXPECT, /* Content-Length 17 MB (over --max-body) with Expect: 100-continue */
  KIND_OVER_MAX_BODY,   /* a body of 17 MB (over --max-body), sent without Expect */
  N_KINDS
} Kind;

static const char *const kind_names[N_KINDS] = {
  "valid", "pb_truncated", "pb_garbage", "pb_huge_length", "json_truncated", "json_wrong_type",
  "json_nested", "text_plain", "no_content_type", "too_many_items", "over_max_body_expect",
  "over_max_body",
};

typedef struct {
  char *head; /* request line and headers */
  gsize head_len;
  guint8 *body;
  gsize body_len;
} Prepared;

typedef struct {
  gint64 due, sent, done; /* µs, monotonic */
  guint16 status;         /* HTTP status; 0: no answer (transport failure) */
  guint8 kind;
  guint8 not_ok;    /* valid, 200, but PredictResponse.status not OK (or unreadable) */
  guint8 defaulted; /* valid, 200, OK, scores differ from the reference answer */
  guint16 req;
} Record;

typedef struct {
  float *v;
  guint n;
} Scores;

/* ---- a minimal HTTP/1.1 client: one connection per exchange ---- */

static struct sockaddr_in server_addr;

/* Removes chunked transfer coding from @b (in place); FALSE when malformed. */
static gboolean
dechunk (GByteArray *b, gsize start)
{
  gsize in = start, out = start;
  for (;;) {
    guint8 *eol = memmem (b->data + in, b->len - in, "\r\n", 2);
    if (eol == NULL)
      return FALSE;
    gsize size = strtoul ((const char *) b->data + in, NULL, 16);
    in = (gsize) (eol - b->data) + 2;
    if (size == 0)
      break;
    if (in + size > b->len)
      return FALSE;
    memmove (b->data + out, b->data + in, size);
    out += size;
    in += size + 2;
  }
  g_byte_array_set_size (b, (guint) out);
  return TRUE;
}

/* Connects, sends @head and @body, reads the answer to the end of the connection (the request
 * says Connection: close). Returns the HTTP status (0 on failure); @resp gets the body; *sent the
 * time the request was written. */
static guint
http_exchange (const char *head, gsize head_len, const guint8 *body, gsize body_len,
               GByteArray *resp, int timeout_s, gint64 *sent)
{
  g_byte_array_set_size (resp, 0);
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct timeval tv = {.tv_sec = timeout_s};
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect (fd, (struct sockaddr *) &server_addr, sizeof server_addr) != 0) {
    close (fd);
    return 0;
  }
  /* A server may answer (413, 415) and close before it read all of a large body: the answer is
   * still read when sending fails. */
  if (bench_send_all (fd, (const guint8 *) head, head_len) && body_len > 0)
    bench_send_all (fd, body, body_len);
  if (sent)
    *sent = g_get_monotonic_time ();
  guint8 buf[65536];
  for (;;) {
    ssize_t r = recv (fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    g_byte_array_append (resp, buf, (guint) r);
  }
  close (fd);
  if (resp->len < 12 || memcmp (resp->data, "HTTP/1.", 7) != 0)
    return 0;
  guint status = (guint) strtoul ((const char *) resp->data + 9, NULL, 10);
  guint8 *end = memmem (resp->data, resp->len, "\r\n\r\n", 4);
  if (end == NULL)
    return 0;
  gsize hlen = (gsize) (end - resp->data) + 4;
  g_autofree char *headers = g_ascii_strdown ((const char *) resp->data, (gssize) hlen);
  gboolean chunked = strstr (headers, "\ntransfer-encoding: chunked") != NULL;
  const char *cl = strstr (headers, "\ncontent-length:");
  g_byte_array_remove_range (resp, 0, (guint) hlen);
  if (chunked && !dechunk (resp, 0))
    return 0;
  if (!chunked && cl && (gsize) strtoull (cl + 16, NULL, 10) != resp->len)
    return 0; /* cut short */
  return status;
}

static char *
http_get (const char *path)
{
  g_autofree char *head =
    bench_http_head ("GET", path, NULL, 0, FALSE, ntohs (server_addr.sin_port));
  g_autoptr (GByteArray) resp = g_byte_array_new ();
  if (http_exchange (head, strlen (head), NULL, 0, resp, 30, NULL) != 200)
    return NULL;
  g_byte_array_append (resp, (const guint8 *) "", 1);
  return g_strndup ((const char *) resp->data, resp->len);
}

/* ---- protobuf: the request log and the answers (core/io/wire.h) ---- */

/* A PredictResponse (core/proto/sedp.proto): its status (2) and the scores (ItemResult.scores,
 * 5.2) of every item in order. FALSE when it does not parse. */
static void
append_float_bits (GArray *scores, guint32 bits)
{
  float x;
  memcpy (&x, &bits, 4);
  g_array_append_val (scores, x);
}

static gboolean
parse_item_scores (Wire *item, GArray *scores)
{
  guint32 f;
  guint type;
  gboolean bad;
  while (wire_tag (item, &f, &type, &bad)) {
    Wire packed;
    guint32 u;
    if (f == 2 && type == WT_LEN) {
      if (!wire_len (item, &packed) || (packed.end - packed.p) % 4)
        return FALSE;
      while (wire_fixed32 (&packed, &u))
        append_float_bits (scores, u);
    } else if (f == 2 && type == WT_I32) {
      if (!wire_fixed32 (item, &u))
        return FALSE;
      append_float_bits (scores, u);
    } else if (!wire_skip (item, type))
      return FALSE;
  }
  return !bad;
}

static gboolean
parse_response (const guint8 *d, gsize n, guint *status, GArray *scores)
{
  Wire w = {d, d + n};
  guint32 field;
  guint type;
  gboolean bad;
  *status = 0;
  g_array_set_size (scores, 0);
  while (wire_tag (&w, &field, &type, &bad)) {
    guint64 v;
    Wire item;
    if (field == 2 && type == WT_VARINT) {
      if (!wire_varint (&w, &v))
        return FALSE;
      *status = (guint) v;
    } else if (field == 5 && type == WT_LEN) {
      if (!wire_len (&w, &item) || !parse_item_scores (&item, scores))
        return FALSE;
    } else if (!wire_skip (&w, type))
      return FALSE;
  }
  return !bad;
}

static gboolean
same_scores (const Scores *ref, const GArray *got)
{
  if (ref->n != got->len)
    return FALSE;
  for (guint i = 0; i < ref->n; i++) {
    float a = ref->v[i], b = g_array_index (got, float, i);
    if (fabsf (a - b) > 1e-6f + 1e-5f * fabsf (a))
      return FALSE;
  }
  return TRUE;
}

/* The messages of a length-delimited request log. */
static GPtrArray *
read_request_log (const char *path, GError **error)
{
  gchar *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &text, &len, error))
    return NULL;
  GPtrArray *msgs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  Wire w = {(const guint8 *) text, (const guint8 *) text + len};
  Wire msg;
  while (w.p < w.end && msgs->len < N_REFS_MAX && wire_len (&w, &msg))
    g_ptr_array_add (msgs, g_bytes_new (msg.p, (gsize) (msg.end - msg.p)));
  g_free (text);
  return msgs;
}

/* ---- the server process: /proc and /metrics ---- */

static GPid server_pid;
static guint16 redis_port;

static long
rss_anon_kb (void)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) server_pid);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return -1;
  const char *p = strstr (text, "RssAnon:");
  return p ? strtol (p + 8, NULL, 10) : -1;
}

typedef struct {
  int total, listen, clients, redis, other_tcp, unix_, pipes, anon, files;
} FdCount;

/* inode → "L" (listening on our port), "C" (a client of our port), "R" (to Redis), "T" (other) */
static void
read_tcp_table (const char *path, GHashTable *kinds)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  guint16 port = ntohs (server_addr.sin_port);
  for (guint i = 1; lines[i]; i++) {
    char local[64], remote[64];
    unsigned st;
    unsigned long inode;
    /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
    if (sscanf (lines[i], "%*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
                &inode) != 4)
      continue;
    const char *lc = strrchr (local, ':'), *rc = strrchr (remote, ':');
    if (lc == NULL || rc == NULL)
      continue;
    unsigned lport = (unsigned) strtoul (lc + 1, NULL, 16);
    unsigned rport = (unsigned) strtoul (rc + 1, NULL, 16);
    const char *k = "T";
    if (lport == port)
      k = st == 0x0A ? "L" : "C";
    else if (rport == redis_port)
      k = "R";
    g_hash_table_insert (kinds, GUINT_TO_POINTER ((guint) inode), (gpointer) k);
  }
}

static FdCount
count_fds (void)
{
  FdCount c = {0};
  g_autoptr (GHashTable) kinds = g_hash_table_new (NULL, NULL);
  g_autofree char *tcp = g_strdup_printf ("/proc/%d/net/tcp", (int) server_pid);
  g_autofree char *tcp6 = g_strdup_printf ("/proc/%d/net/tcp6", (int) server_pid);
  read_tcp_table (tcp, kinds);
  read_tcp_table (tcp6, kinds);
  g_autofree char *dir = g_strdup_printf ("/proc/%d/fd", (int) server_pid);
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d == NULL) {
    c.total = -1;
    return c;
  }
  const char *name;
  while ((name = g_dir_read_name (d))) {
    g_autofree char *path = g_build_filename (dir, name, NULL);
    g_autofree char *link = g_file_read_link (path, NULL);
    c.total++;
    if (link == NULL)
      continue;
    unsigned long inode;
    if (sscanf (link, "socket:[%lu]", &inode) == 1) {
      const char *k = g_hash_table_lookup (kinds, GUINT_TO_POINTER ((guint) inode));
      if (k == NULL)
        c.unix_++;
      else if (*k == 'L')
        c.listen++;
      else if (*k == 'C')
        c.clients++;
      else if (*k == 'R')
        c.redis++;
      else
        c.other_tcp++;
    } else if (g_str_has_prefix (link, "pipe:")) {
      c.pipes++;
    } else if (g_str_has_prefix (link, "anon_inode:")) {
      c.anon++;
    } else {
      c.files++;
    }
  }
  g_dir_close (d);
  return c;
}

static char *
fd_string (const FdCount *c)
{
  return g_strdup_printf ("total:%d,listen:%d,clients:%d,redis:%d,other_tcp:%d,other_sockets:%d,"
                          "pipes:%d,anon_inodes:%d,files:%d", c->total, c->listen, c->clients,
                          c->redis, c->other_tcp, c->unix_, c->pipes, c->anon, c->files);
}

/* The value of the first line of @text that starts with @prefix (its last field); -1 if none. */
static double
metric (const char *text, const char *prefix)
{
  for (const char *p = text; p && *p;) {
    const char *eol = strchr (p, '\n');
    if (g_str_has_prefix (p, prefix)) {
      g_autofree char *line = eol ? g_strndup (p, (gsize) (eol - p)) : g_strdup (p);
      const char *sp = strrchr (line, ' ');
      return sp ? g_ascii_strtod (sp + 1, NULL) : -1;
    }
    p = eol ? eol + 1 : NULL;
  }
  return -1;
}

/* ---- the load ---- */

typedef struct {
  Prepared kinds[N_KINDS];
  Prepared *valid; /* one per request of the log */
  guint n_valid;
  Scores *refs;
  Record *recs;
  guint64 n_total;
  double rate;
  gint64 t0;
  guint64 next; /* atomic */
  guint64 done; /* atomic */
} Load;

static void
sleep_until (gint64 t)
{
  gint64 now = g_get_monotonic_time ();
  if (t <= now)
    return;
  struct timespec ts = {.tv_sec = t / G_USEC_PER_SEC, .tv_nsec = (t % G_USEC_PER_SEC) * 1000};
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static gpointer
worker (gpointer data)
{
  Load *L = data;
  g_autoptr (GByteArray) resp = g_byte_array_new ();
  g_autoptr (GArray) scores = g_array_new (FALSE, FALSE, sizeof (float));
  for (;;) {
    guint64 i = __atomic_fetch_add (&L->next, 1, __ATOMIC_RELAXED);
    if (i >= L->n_total)
      break;
    Record *r = &L->recs[i];
    r->due = L->t0 + (gint64) ((double) i * G_USEC_PER_SEC / L->rate);
    /* one in 100 malformed, the kinds in turn */
    r->kind = i % 100 == 50 ? (guint8) (1 + (i / 100) % (N_KINDS - 1)) : KIND_VALID;
    r->req = (guint16) (i % L->n_valid);
    const Prepared *p = r->kind == KIND_VALID ? &L->valid[r->req] : &L->kinds[r->kind];
    sleep_until (r->due);
    r->status =
      (guint16) http_exchange (p->head, p->head_len, p->body, p->body_len, resp, 30, &r->sent);
    r->done = g_get_monotonic_time ();
    if (r->kind == KIND_VALID && r->status == 200) {
      guint st;
      if (!parse_response (resp->data, resp->len, &st, scores) || st != 0)
        r->not_ok = 1;
      else if (!same_scores (&L->refs[r->req], scores))
        r->defaulted = 1;
    }
    __atomic_fetch_add (&L->done, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

typedef struct {
  double t; /* s since t0 */
  long rss_kb;
  int fds;
  double cpu_busy, cpu_server, cpu_redis, cpu_self; /* CPU seconds so far: the machine's, ours */
  double probe_us; /* bench_speed_probe_us(): the machine's speed now */
} Sample;

static RedisServer *the_redis;

typedef struct {
  Load *L;
  double interval;
  GArray *samples;
  gint stop; /* atomic */
} Sampler;

static gpointer
sampler (gpointer data)
{
  Sampler *s = data;
  guint64 last_done = 0;
  for (guint k = 0; !__atomic_load_n (&s->stop, __ATOMIC_RELAXED); k++) {
    sleep_until (s->L->t0 + (gint64) (k * s->interval * G_USEC_PER_SEC));
    if (__atomic_load_n (&s->stop, __ATOMIC_RELAXED))
      break;
    Sample x = {.t = k * s->interval, .rss_kb = rss_anon_kb (), .cpu_busy = bench_machine_busy (),
                .cpu_server = bench_process_cpu ((int) server_pid), .cpu_self = bench_process_cpu (0),
                .probe_us = bench_speed_probe_us ()};
    /* redis-server is restarted midway: its CPU time is summed over both processes */
    static int redis_pid;
    static double redis_base, redis_last;
    int pid = (int) __atomic_load_n (&the_redis->pid, __ATOMIC_RELAXED);
    double rc = pid > 0 ? bench_process_cpu (pid) : 0;
    if (pid != redis_pid) {
      redis_base += redis_last;
      redis_pid = pid;
    }
    redis_last = rc;
    x.cpu_redis = redis_base + rc;
    g_autofree char *dir = g_strdup_printf ("/proc/%d/fd", (int) server_pid);
    GDir *d = g_dir_open (dir, 0, NULL);
    if (d) {
      while (g_dir_read_name (d))
        x.fds++;
      g_dir_close (d);
    } else {
      x.fds = -1;
    }
    g_array_append_val (s->samples, x);
    guint64 done = __atomic_load_n (&s->L->done, __ATOMIC_RELAXED);
    if (k % (guint) MAX (1, (int) (30 / s->interval)) == 0)
      fprintf (stderr,
               "soak: %6.0f s: %" G_GUINT64_FORMAT " answered (%.1f/s), RssAnon %ld kB, %d fds\n",
               x.t, done, k ? (double) (done - last_done) / (30 / s->interval * s->interval) : 0.0,
               x.rss_kb, x.fds);
    if (k % (guint) MAX (1, (int) (30 / s->interval)) == 0)
      last_done = done;
  }
  return NULL;
}

static const Sample *
sample_near (GArray *samples, double t)
{
  const Sample *best = NULL;
  for (guint i = 0; i < samples->len; i++) {
    const Sample *x = &g_array_index (samples, Sample, i);
    if (best == NULL || fabs (x->t - t) < fabs (best->t - t))
      best = x;
  }
  return best;
}

/* CPU of everything but the soak (server, Redis, this program) between the samples nearest
 * @from and @to, in cores. */
static double
other_cores (GArray *samples, double from, double to)
{
  const Sample *a = sample_near (samples, from), *b = sample_near (samples, to);
  if (a == NULL || b == NULL || b->t <= a->t)
    return -1;
  double other = (b->cpu_busy - a->cpu_busy) - (b->cpu_server - a->cpu_server) -
                 (b->cpu_redis - a->cpu_redis) - (b->cpu_self - a->cpu_self);
  return MAX (other, 0) / (b->t - a->t);
}

/* The median speed probe of the samples in [@from, @to), in µs; 0 when none. */
static double
probe_median (GArray *samples, double from, double to)
{
  g_autofree double *v = g_new (double, MAX (samples->len, 1));
  guint n = 0;
  for (guint i = 0; i < samples->len; i++) {
    const Sample *x = &g_array_index (samples, Sample, i);
    if (x->t >= from && x->t < to)
      v[n++] = x->probe_us;
  }
  return bench_quantile (v, n, 0.5);
}

/* The machine's speed per minute (@w: a window, 60 s or shorter), relative to the first: the
 * first window's median probe over each window's ("0.80": the same work took 1.25× the CPU). */
static GString *
speed_by_window (GArray *samples, double duration, double w)
{
  GString *out = g_string_new (NULL);
  double first = probe_median (samples, 0, w);
  for (double t = 0; t + 1e-9 < duration; t += w) {
    double m = probe_median (samples, t, t + w);
    g_string_append_printf (out, "%s%.2f", out->len ? "," : "", m > 0 ? first / m : 0);
  }
  return out;
}

static gint
timed_cmp (gconstpointer a, gconstpointer b)
{
  double x = ((const BenchTimed *) a)->t, y = ((const BenchTimed *) b)->t;
  return x < y ? -1 : x > y;
}

/* The valid requests answered 200 that were due in [@from, @to) seconds: when due, and their
 * latency from then, in due order. */
static GArray *
window_samples (const Load *L, double from, double to)
{
  GArray *v = g_array_new (FALSE, FALSE, sizeof (BenchTimed));
  for (guint64 i = 0; i < L->n_total; i++) {
    const Record *r = &L->recs[i];
    double t = (double) (r->due - L->t0) / G_USEC_PER_SEC;
    if (r->kind == KIND_VALID && r->status == 200 && t >= from && t < to) {
      BenchTimed x = {t, (double) (r->done - r->due) / 1000};
      g_array_append_val (v, x);
    }
  }
  g_array_sort (v, timed_cmp);
  return v;
}

/* The p99 latency (ms) of @w's samples; 0 when none. */
static double
p99_of (const GArray *w)
{
  g_autofree double *ms = g_new (double, MAX (w->len, 1));
  for (guint i = 0; i < w->len; i++)
    ms[i] = g_array_index (w, BenchTimed, i).ms;
  return bench_quantile_rank (ms, w->len, 0.99);
}

/* p99_of the requests due in [@from, @to); their count in @n_out. */
static double
p99_between (const Load *L, double from, double to, guint *n_out)
{
  g_autoptr (GArray) w = window_samples (L, from, to);
  if (n_out)
    *n_out = w->len;
  return p99_of (w);
}

/* The drift's interval: blocks of this many seconds are drawn whole (a queue that builds and
 * drains makes neighbouring latencies alike). */
#define DRIFT_BLOCK_S 2.0

/* The 90 % interval of the signed change of the p99 from the first window of @w seconds to the
 * last (bench_stats_quantile_change_ci): the change the two windows' own spread allows. */
static void
drift_interval (const Load *L, double w, double duration, double *lo, double *hi)
{
  g_autoptr (GArray) a = window_samples (L, 0, w);
  g_autoptr (GArray) b = window_samples (L, duration - w, duration);
  bench_stats_quantile_change_ci ((const BenchTimed *) a->data, a->len,
                                  (const BenchTimed *) b->data, b->len, 0.99, DRIFT_BLOCK_S,
                                  2000, 1, lo, hi);
}

/* ---- set-up ---- */

static const char *predict_path = "/v1/pipelines/ctr-redis:predict";

static void
prepare (Prepared *p, const char *ctype, const guint8 *body, gsize len, gsize claimed)
{
  p->head = bench_http_head ("POST", predict_path, ctype, claimed ? claimed : len, claimed > 0,
                             ntohs (server_addr.sin_port));
  p->head_len = strlen (p->head);
  p->body = g_memdup2 (body, len);
  p->body_len = len;
}

/* The malformed requests (each must be answered 4xx). */
static void
prepare_malformed (Load *L, const char *first_json_line)
{
  const Prepared *v = &L->valid[0];
  const char *pb = "application/x-protobuf", *json = "application/json";
  prepare (&L->kinds[KIND_PB_TRUNCATED], pb, v->body, v->body_len / 2, 0);
  guint8 garbage[2000];
  GRand *rand = g_rand_new_with_seed (42);
  for (guint i = 0; i < sizeof garbage; i++)
    garbage[i] = (guint8) g_rand_int (rand);
  g_rand_free (rand);
  prepare (&L->kinds[KIND_PB_GARBAGE], pb, garbage, sizeof garbage, 0);
  /* request_id "huge", then items (3) claiming 2^31 bytes, then 16 bytes */
  static const guint8 huge[] = {0x0a, 4, 'h', 'u', 'g', 'e', 0x1a, 0x80, 0x80, 0x80, 0x80, 0x08,
                                0x08, 1, 0x12, 2, 0x08, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  prepare (&L->kinds[KIND_PB_HUGE_LENGTH], pb, huge, sizeof huge, 0);
  prepare (&L->kinds[KIND_JSON_TRUNCATED], json, (const guint8 *) first_json_line,
           strlen (first_json_line) / 2, 0);
  const char *wrong = "{\"request_id\": \"wrong\", \"items\": \"many\", \"top_k\": -1}";
  prepare (&L->kinds[KIND_JSON_WRONG_TYPE], json, (const guint8 *) wrong, strlen (wrong), 0);
  g_autofree char *nested = g_malloc (100000);
  memset (nested, '[', 100000);
  prepare (&L->kinds[KIND_JSON_NESTED], json, (const guint8 *) nested, 100000, 0);
  prepare (&L->kinds[KIND_TEXT_PLAIN], "text/plain", v->body, v->body_len, 0);
  prepare (&L->kinds[KIND_NO_TYPE], NULL, v->body, v->body_len, 0);
  GString *many = g_string_new ("{\"request_id\": \"many\", \"user\": {\"id\": 1}, \"items\": [");
  for (guint i = 0; i < 10001; i++)
    g_string_append_printf (many, "%s{\"id\": %u}", i ? ", " : "", i + 1);
  g_string_append (many, "]}");
  prepare (&L->kinds[KIND_TOO_MANY_ITEMS], json, (const guint8 *) many->str, many->len, 0);
  g_string_free (many, TRUE);
  /* over sedp serve's default --max-body (16 MiB): with Expect, no body is sent (413 at once);
   * without, the whole body is (the server reads it, discarding it, then answers 413) */
  prepare (&L->kinds[KIND_OVER_MAX_EXPECT], pb, NULL, 0, 17000000);
  g_autofree guint8 *big = g_malloc (17000000);
  memset (big, 0, 17000000);
  prepare (&L->kinds[KIND_OVER_MAX_BODY], pb, big, 17000000, 0);
}

/* Sends every valid request once, one at a time; fills @refs (when non-NULL) or checks against
 * them. Returns the number of answers that differ from @refs (or -1 on a failed request). */
static int
reference_pass (Load *L, gboolean fill)
{
  g_autoptr (GByteArray) resp = g_byte_array_new ();
  g_autoptr (GArray) scores = g_array_new (FALSE, FALSE, sizeof (float));
  int differ = 0;
  for (guint i = 0; i < L->n_valid; i++) {
    const Prepared *p = &L->valid[i];
    guint st, code = http_exchange (p->head, p->head_len, p->body, p->body_len, resp, 30, NULL);
    if (code != 200 || !parse_response (resp->data, resp->len, &st, scores) || st != 0) {
      fprintf (stderr, "soak: reference request %u: HTTP %u\n", i, code);
      return -1;
    }
    if (fill) {
      L->refs[i].n = scores->len;
      L->refs[i].v = g_memdup2 (scores->data, sizeof (float) * scores->len);
    } else if (!same_scores (&L->refs[i], scores)) {
      differ++;
    }
  }
  return differ;
}

static void
idle (double seconds)
{
  g_usleep ((gulong) (seconds * G_USEC_PER_SEC));
}

typedef struct {
  double duration, load, rate, cap_seconds, cap_slo_ms, outage, interval, drain;
  int workers;
  char *records; /* a TSV of every request, or NULL */
} Options;

static gboolean server_exited;

/* The server's capacity in requests/s: the highest open-loop rate whose p99 stays within the
 * SLO, by `sedp bench --find-capacity` (@argv); 0 when the search fails. (Until session 13 the
 * median of three closed loops of 8 clients: the server's rate saturated 8 deep, of which 70 %
 * did not hold for 10 minutes; docs/load-testing.md, "Soak".) */
static double
measure_capacity (char **argv)
{
  g_autofree char *out = bench_run_capture (argv);
  double rps = bench_result_value (out, "capacity_rps");
  if (out == NULL || rps <= 0) {
    fprintf (stderr, "soak: the capacity search failed%s%s", out ? ":\n" : "\n", out ? out : "");
    return 0;
  }
  fprintf (stderr, "soak: capacity: %.1f requests/s with p99 %.1f ms\n", rps,
           bench_result_value (out, "capacity_p99_ms"));
  return rps;
}

/* Steps 4 to 7 and the results, against the running server and Redis. */
static int
soak (const Options *o, RedisServer *redis, char *sedp, const char *data, const char *url,
      long long redis_keys)
{
  const double duration = o->duration, load = o->load, rate_opt = o->rate, interval = o->interval,
               drain = o->drain, outage = o->outage;
  g_autoptr (GError) error = NULL;
  g_autofree char *metrics0 = NULL, *metrics1 = NULL;
  long long redis_keys_after = -1;
  Load L = {0};
  /* 4. the requests and the reference answers */
  g_autofree char *log_path = g_build_filename (data, "requests.pb", NULL);
  g_autofree char *jsonl_path = g_build_filename (data, "requests.jsonl", NULL);
  g_autoptr (GPtrArray) msgs = read_request_log (log_path, &error);
  g_autofree char *jsonl = NULL;
  if (msgs == NULL || msgs->len == 0 || !g_file_get_contents (jsonl_path, &jsonl, NULL, &error)) {
    fprintf (stderr, "soak: %s\n", error ? error->message : "an empty request log");
    return 1;
  }
  L.n_valid = msgs->len;
  L.valid = g_new0 (Prepared, L.n_valid);
  for (guint i = 0; i < L.n_valid; i++) {
    gsize n;
    const guint8 *b = g_bytes_get_data (msgs->pdata[i], &n);
    prepare (&L.valid[i], "application/x-protobuf", b, n, 0);
  }
  *strchr (jsonl, '\n') = '\0';
  prepare_malformed (&L, jsonl);
  L.refs = g_new0 (Scores, L.n_valid);
  if (reference_pass (&L, TRUE) < 0)
    return 1;
  int differ = reference_pass (&L, FALSE);
  if (differ != 0) {
    fprintf (stderr,
             "soak: %d of %u answers differ between two passes: scores are not reproducible, "
             "answers with defaults cannot be told apart\n", differ, L.n_valid);
    return 1;
  }
  fprintf (stderr, "soak: reference answers of the %u requests taken (two passes agree)\n",
           L.n_valid);

  /* 5. the capacity (open loop, within the SLO) */
  double capacity = 0;
  if (rate_opt > 0) {
    L.rate = rate_opt;
  } else {
    g_autofree char *target = g_strdup_printf ("http://%s%s", url, predict_path);
    g_autofree char *d_s = g_strdup_printf ("%g", o->cap_seconds);
    g_autofree char *slo_s = g_strdup_printf ("%g", o->cap_slo_ms);
    char *bargv[] = {sedp, "bench", target, "--find-capacity", "--slo-p99-ms", slo_s,
                     "--duration", d_s, "--requests", jsonl_path, "--format", "protobuf", "--quiet",
                     NULL};
    capacity = measure_capacity (bargv);
    if (capacity <= 0)
      return 1;
    L.rate = load * capacity;
  }
  L.n_total = (guint64) (duration * L.rate);
  L.recs = g_new0 (Record, L.n_total);
  guint n_workers = o->workers > 0 ? (guint) o->workers : (guint) CLAMP (ceil (L.rate), 16, 512);

  /* 6. the soak */
  idle (drain);
  FdCount fd0 = count_fds ();
  metrics0 = http_get ("/metrics");
  if (metrics0 == NULL) {
    fprintf (stderr, "soak: GET /metrics failed\n");
    return 1;
  }
  fprintf (stderr, "soak: %.1f requests/s for %g s (%" G_GUINT64_FORMAT " requests), %u client "
           "threads\n", L.rate, duration, L.n_total, n_workers);
  L.t0 = g_get_monotonic_time () + G_USEC_PER_SEC / 10;
  Sampler S = {.L = &L, .interval = interval};
  S.samples = g_array_new (FALSE, FALSE, sizeof (Sample));
  GThread *sampler_thread = g_thread_new ("soak-sampler", sampler, &S);
  GThread **threads = g_new (GThread *, n_workers);
  for (guint i = 0; i < n_workers; i++)
    threads[i] = g_thread_new ("soak-client", worker, &L);

  /* Redis down at mid-run, back --outage seconds later with the same data (its dump.rdb) */
  sleep_until (L.t0 + (gint64) (duration / 2 * G_USEC_PER_SEC));
  gint64 kill_at = g_get_monotonic_time ();
  redis_server_kill (redis);
  fprintf (stderr, "soak: redis-server killed\n");
  sleep_until (kill_at + (gint64) (outage * G_USEC_PER_SEC));
  if (!redis_server_start (redis, &error)) {
    fprintf (stderr, "soak: redis restart: %s\n", error->message);
    g_clear_error (&error);
  }
  gint64 ready_at = g_get_monotonic_time ();
  {
    redisReply *r = redis_server_command (redis, "DBSIZE");
    redis_keys_after = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
      freeReplyObject (r);
  }
  fprintf (stderr, "soak: redis-server back after %.2f s, %lld keys\n",
           (double) (ready_at - kill_at) / G_USEC_PER_SEC, redis_keys_after);

  for (guint i = 0; i < n_workers; i++)
    g_thread_join (threads[i]);
  g_free (threads);
  gint64 load_end = g_get_monotonic_time ();
  __atomic_store_n (&S.stop, 1, __ATOMIC_RELAXED);
  g_thread_join (sampler_thread);

  /* 7. after the load: descriptors (idle again), metrics, the server still alive? */
  idle (drain);
  FdCount fd1 = count_fds ();
  metrics1 = http_get ("/metrics");
  int wstatus = 0;
  gboolean exited = waitpid (server_pid, &wstatus, WNOHANG) == server_pid;
  if (exited)
    server_exited = TRUE;

  if (o->records) {
    FILE *f = fopen (o->records, "w");
    if (f) {
      fprintf (f, "due_s\tsent_s\tdone_s\tkind\treq\tstatus\tnot_ok\tdefaulted\n");
      for (guint64 i = 0; i < L.n_total; i++) {
        const Record *r = &L.recs[i];
        fprintf (f, "%.6f\t%.6f\t%.6f\t%s\t%u\t%u\t%u\t%u\n", (double) (r->due - L.t0) / 1e6,
                 (double) (r->sent - L.t0) / 1e6, (double) (r->done - L.t0) / 1e6,
                 kind_names[r->kind], r->req, r->status, r->not_ok, r->defaulted);
      }
      fclose (f);
    }
    g_autofree char *path = g_strconcat (o->records, ".samples", NULL);
    f = fopen (path, "w");
    if (f) {
      fprintf (f, "t_s\trss_anon_kb\tfds\tcpu_busy_s\tcpu_server_s\tcpu_redis_s\tcpu_self_s\t"
                  "probe_us\n");
      for (guint i = 0; i < S.samples->len; i++) {
        const Sample *x = &g_array_index (S.samples, Sample, i);
        fprintf (f, "%.1f\t%ld\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\n", x->t, x->rss_kb, x->fds,
                 x->cpu_busy, x->cpu_server, x->cpu_redis, x->cpu_self, x->probe_us);
      }
      fclose (f);
    }
  }

  /* ---- the figures ---- */
  /* The outage window: from the kill until Redis answers again plus 2 s (cube_accessor holds a
   * failed node off for reconnect_ms, 1 s, before its next attempt). A request is exposed to
   * it when its [sent, done] interval overlaps it. */
  gint64 win_from = kill_at, win_to = ready_at + 2 * G_USEC_PER_SEC;
  guint64 n_valid = 0, n_valid_200 = 0, n_not_ok = 0, n_exposed = 0, n_exposed_defaulted = 0,
          n_exposed_200 = 0, n_defaulted_outside = 0, n_mal = 0, n_mal_4xx = 0, n_late = 0;
  /* answers by status: [0] no answer, [1] 200 with a status other than OK, else the HTTP status */
  g_autofree guint64 *valid_by_code = g_new0 (guint64, 600);
  g_autofree guint64 *mal_by_code = g_new0 (guint64, N_KINDS * 600);
  for (guint64 i = 0; i < L.n_total; i++) {
    const Record *r = &L.recs[i];
    guint code = MIN (r->status, 599);
    if (r->kind == KIND_VALID) {
      n_valid++;
      gboolean exposed = r->sent <= win_to && r->done >= win_from;
      if (r->sent - r->due > 10000)
        n_late++;
      if (r->status == 200 && !r->not_ok) {
        n_valid_200++;
        if (exposed) {
          n_exposed_200++;
          n_exposed_defaulted += r->defaulted;
        } else {
          n_defaulted_outside += r->defaulted;
        }
      } else {
        valid_by_code[r->status == 200 ? 1 : code]++;
        n_not_ok += r->status == 200;
      }
      n_exposed += exposed;
    } else {
      n_mal++;
      n_mal_4xx += r->status >= 400 && r->status < 500;
      mal_by_code[r->kind * 600 + code]++;
    }
  }
  guint64 valid_errors = n_valid - n_valid_200;
  guint64 mal_errors = n_mal - n_mal_4xx;
  guint64 errors = valid_errors + n_defaulted_outside + mal_errors;

  g_autoptr (GString) bad = g_string_new (NULL);
  for (guint c = 0; c < 600; c++)
    if (valid_by_code[c])
      g_string_append_printf (bad, "%s%s%.0u:%" G_GUINT64_FORMAT, bad->len ? "," : "",
                              c == 0 ? "no_answer" : c == 1 ? "200_not_ok" : "", c > 1 ? c : 0,
                              valid_by_code[c]);
  g_autoptr (GString) mal = g_string_new (NULL);
  for (guint kk = 1; kk < N_KINDS; kk++) {
    g_string_append_printf (mal, "%s%s:", kk > 1 ? "," : "", kind_names[kk]);
    gboolean first = TRUE;
    for (guint c = 0; c < 600; c++)
      if (mal_by_code[kk * 600 + c]) {
        g_string_append_printf (mal, "%s%s%.0ux%" G_GUINT64_FORMAT, first ? "" : "/",
                                c == 0 ? "no_answer" : "", c, mal_by_code[kk * 600 + c]);
        first = FALSE;
      }
    if (first)
      g_string_append (mal, "none");
  }

  /* RssAnon: the last sample of the run minus the one nearest 300 s (half the run) before it */
  double rss_window = MIN (300, duration / 2);
  long rss_end = -1, rss_from = -1, rss_min = G_MAXLONG, rss_max = 0;
  double t_end = 0, t_from = 0;
  int fd_max = 0;
  for (guint i = 0; i < S.samples->len; i++) {
    const Sample *x = &g_array_index (S.samples, Sample, i);
    if (x->t <= duration) {
      rss_end = x->rss_kb;
      t_end = x->t;
    }
    fd_max = MAX (fd_max, x->fds);
  }
  double best = G_MAXDOUBLE;
  for (guint i = 0; i < S.samples->len; i++) {
    const Sample *x = &g_array_index (S.samples, Sample, i);
    if (fabs (x->t - (t_end - rss_window)) < best) {
      best = fabs (x->t - (t_end - rss_window));
      rss_from = x->rss_kb;
      t_from = x->t;
    }
  }
  /* Requests outstanding at once (due, not yet answered): the most before the window and in it.
   * Each holds its body and frames (about 1 MB for 300 items), so a new peak raises the heap's
   * high-water mark, which RssAnon keeps. */
  guint inflight_before = 0, inflight_in = 0;
  {
    GArray *ev = g_array_sized_new (FALSE, FALSE, sizeof (double), (guint) (2 * L.n_total));
    for (guint64 i = 0; i < L.n_total; i++) {
      const Record *r = &L.recs[i];
      /* +due, -done: encoded as due*2 (even) and done*2+1 (odd) on a µs grid */
      double a = (double) ((r->due - L.t0) * 2), b = (double) ((r->done - L.t0) * 2 + 1);
      g_array_append_val (ev, a);
      g_array_append_val (ev, b);
    }
    qsort (ev->data, ev->len, sizeof (double), bench_cmp_double);
    int cur = 0;
    for (guint i = 0; i < ev->len; i++) {
      double e = g_array_index (ev, double, i);
      gint64 us = (gint64) e;
      cur += us % 2 ? -1 : 1;
      double t = (double) (us / 2) / G_USEC_PER_SEC;
      if (t < t_from)
        inflight_before = MAX (inflight_before, (guint) MAX (cur, 0));
      else if (t <= t_end)
        inflight_in = MAX (inflight_in, (guint) MAX (cur, 0));
    }
    g_array_unref (ev);
  }
  g_autoptr (GString) rss_series = g_string_new (NULL);
  for (guint i = 0; i < S.samples->len; i++) {
    const Sample *x = &g_array_index (S.samples, Sample, i);
    if (x->t >= t_from && x->t <= t_end) {
      rss_min = MIN (rss_min, x->rss_kb);
      rss_max = MAX (rss_max, x->rss_kb);
    }
    if (fmod (x->t + 1e-9, 60) < interval - 1e-9 || i + 1 == S.samples->len)
      g_string_append_printf (rss_series, "%s%.0f:%ld", rss_series->len ? "," : "", x->t,
                              x->rss_kb);
  }

  /* CPU per minute, in cores: the server, Redis, this program (the client), the whole machine,
   * and everything that is not the soak (server, Redis, this program): the other jobs of a
   * shared machine */
  g_autoptr (GString) cpu_server = g_string_new (NULL), cpu_other = g_string_new (NULL);
  g_autoptr (GString) cpu_redis = g_string_new (NULL), cpu_client = g_string_new (NULL);
  g_autoptr (GString) cpu_busy = g_string_new (NULL);
  {
    const Sample *prev = NULL;
    for (guint i = 0; i < S.samples->len; i++) {
      const Sample *x = &g_array_index (S.samples, Sample, i);
      gboolean last = i + 1 == S.samples->len;
      if (prev == NULL) {
        prev = x;
        continue;
      }
      if (x->t - prev->t + 1e-9 < MIN (60, duration) && !last)
        continue;
      double dt = x->t - prev->t;
      if (dt <= 0)
        break;
      double server_c = (x->cpu_server - prev->cpu_server) / dt;
      double other_c = ((x->cpu_busy - prev->cpu_busy) - (x->cpu_server - prev->cpu_server) -
                        (x->cpu_redis - prev->cpu_redis) - (x->cpu_self - prev->cpu_self)) / dt;
      g_string_append_printf (cpu_server, "%s%.2f", cpu_server->len ? "," : "", server_c);
      g_string_append_printf (cpu_other, "%s%.2f", cpu_other->len ? "," : "", MAX (other_c, 0));
      g_string_append_printf (cpu_redis, "%s%.2f", cpu_redis->len ? "," : "",
                              (x->cpu_redis - prev->cpu_redis) / dt);
      g_string_append_printf (cpu_client, "%s%.2f", cpu_client->len ? "," : "",
                              (x->cpu_self - prev->cpu_self) / dt);
      g_string_append_printf (cpu_busy, "%s%.2f", cpu_busy->len ? "," : "",
                              (x->cpu_busy - prev->cpu_busy) / dt);
      prev = x;
    }
  }

  /* p99: first and last window, and per minute */
  double w = MIN (60, duration / 4);
  guint n_first, n_last;
  double p99_first = p99_between (&L, 0, w, &n_first);
  double p99_last = p99_between (&L, duration - w, duration, &n_last);
  double drift = p99_first > 0 ? fabs (p99_last - p99_first) / p99_first : -1;
  double drift_lo, drift_hi;
  drift_interval (&L, w, duration, &drift_lo, &drift_hi);
  g_autoptr (GString) minutes = g_string_new (NULL);
  for (double t = 0; t < duration; t += 60)
    g_string_append_printf (minutes, "%s%.1f", t > 0 ? "," : "",
                            p99_between (&L, t, MIN (t + 60, duration), NULL));

  /* the server's counters: the lookup stage's, then its Redis backend's (families from its stats callback) */
  static const char *const counters[][2] = {
    {"server_degraded_lookups", "sedp_degraded_lookups_total{"},
    {"server_degraded_keys", "sedp_degraded_keys_total{"},
    {"server_missing_keys", "sedp_missing_keys_total{"},
    {"redis_degraded", "sedp_redis_degraded{pipeline=\"ctr-redis\",stage=\"lookup\"} "},
    {"redis_reconnects", "sedp_redis_reconnects{pipeline=\"ctr-redis\",stage=\"lookup\"} "},
    {"redis_connect_failures", "sedp_redis_connect_failures{pipeline=\"ctr-redis\",stage=\"lookup\"} "},
    {"redis_errors", "sedp_redis_errors{pipeline=\"ctr-redis\",stage=\"lookup\"} "},
  };
  g_autoptr (GString) server_counts = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (counters); i++) {
    double a = metric (metrics0, counters[i][1]);
    double b = metrics1 ? metric (metrics1, counters[i][1]) : -1;
    g_string_append_printf (server_counts, "%s%s=%.0f", i ? " " : "", counters[i][0],
                            a >= 0 && b >= 0 ? b - a : -1);
  }
  double elapsed = (double) (load_end - L.t0) / G_USEC_PER_SEC;

  g_autofree char *fd0s = fd_string (&fd0), *fd1s = fd_string (&fd1);
  printf ("RESULT soak_duration_s=%g soak_load=%g capacity_rps=%.1f offered_rps=%.1f "
          "client_threads=%u malformed_share=0.01 redis_kill_at_s=%.1f redis_outage_s=%.2f "
          "redis_keys=%lld redis_keys_after_restart=%lld\n",
          duration, rate_opt > 0 ? 0 : load, capacity, L.rate, n_workers,
          (double) (kill_at - L.t0) / G_USEC_PER_SEC,
          (double) (ready_at - kill_at) / G_USEC_PER_SEC,
          redis_keys, redis_keys_after);
  printf ("RESULT soak_sent=%" G_GUINT64_FORMAT " soak_answered_rps=%.1f valid_sent=%"
          G_GUINT64_FORMAT " valid_200=%" G_GUINT64_FORMAT " valid_not_200=%" G_GUINT64_FORMAT
          " valid_not_200_by_status=%s valid_late_10ms=%" G_GUINT64_FORMAT "\n",
          L.n_total, (double) L.n_total / elapsed, n_valid, n_valid_200, valid_errors,
          bad->len ? bad->str : "none", n_late);
  printf ("RESULT malformed_sent=%" G_GUINT64_FORMAT " malformed_4xx=%" G_GUINT64_FORMAT
          " malformed_not_4xx=%" G_GUINT64_FORMAT " malformed_status_by_kind=%s\n",
          n_mal, n_mal_4xx, mal_errors, mal->str);
  printf ("RESULT outage_window_s=%.1f-%.1f outage_exposed=%" G_GUINT64_FORMAT
          " outage_answered_200=%" G_GUINT64_FORMAT " outage_defaults=%" G_GUINT64_FORMAT
          " outage_defaults_source=client_score_check defaults_outside_outage=%" G_GUINT64_FORMAT
          "\n",
          (double) (win_from - L.t0) / G_USEC_PER_SEC, (double) (win_to - L.t0) / G_USEC_PER_SEC,
          n_exposed, n_exposed_200, n_exposed_defaulted, n_defaulted_outside);
  printf ("RESULT %s\n", server_counts->str);
  printf ("RESULT soak_errors=%" G_GUINT64_FORMAT "\n", errors);
  printf ("RESULT rss_anon_kb_window=%.0f-%.0f rss_anon_kb_from=%ld rss_anon_kb_end=%ld "
          "rss_anon_kb_min=%ld rss_anon_kb_max=%ld rss_anon_kb_by_minute=%s "
          "outstanding_max_before_window=%u outstanding_max_in_window=%u\n",
          t_from, t_end, rss_from, rss_end, rss_min, rss_max, rss_series->str, inflight_before,
          inflight_in);
  printf ("RESULT soak_rss_growth_kb=%ld\n", rss_end - rss_from);
  printf ("RESULT fd_start=%d fd_end=%d fd_max_under_load=%d fd_start_by_kind=%s "
          "fd_end_by_kind=%s\n",
          fd0.total, fd1.total, fd_max, fd0s, fd1s);
  printf ("RESULT soak_fd_delta=%d\n", fd1.total - fd0.total);
  printf ("RESULT p99_window_s=%g p99_first_ms=%.2f p99_last_ms=%.2f p99_first_n=%u p99_last_n=%u "
          "p99_by_minute_ms=%s\n", w, p99_first, p99_last, n_first, n_last, minutes->str);
  g_autoptr (GString) speed = speed_by_window (S.samples, duration, w);
  printf ("RESULT cpu_cores=%ld cpu_server_cores_by_minute=%s cpu_other_jobs_cores_by_minute=%s "
          "cpu_other_jobs_cores_first_window=%.2f cpu_other_jobs_cores_last_window=%.2f "
          "cpu_speed_by_minute=%s cpu_probe_us_first=%.1f\n",
          sysconf (_SC_NPROCESSORS_ONLN), cpu_server->str, cpu_other->str,
          other_cores (S.samples, 0, w), other_cores (S.samples, duration - w, duration),
          speed->str, probe_median (S.samples, 0, w));
  printf ("RESULT cpu_redis_cores_by_minute=%s cpu_client_cores_by_minute=%s "
          "cpu_machine_busy_cores_by_minute=%s\n", cpu_redis->str, cpu_client->str, cpu_busy->str);
  printf ("RESULT p99_change_signed=%.3f p99_change_ci90=%.3f..%.3f p99_change_block_s=%g\n",
          p99_first > 0 ? (p99_last - p99_first) / p99_first : 0, drift_lo, drift_hi,
          DRIFT_BLOCK_S);
  printf ("RESULT soak_p99_drift=%.3f\n", drift);
  if (exited)
    printf ("RESULT soak_server_exit=%s_%d\n", WIFSIGNALED (wstatus) ? "signal" : "status",
            WIFSIGNALED (wstatus) ? WTERMSIG (wstatus) : WEXITSTATUS (wstatus));
  else if (metrics1 == NULL)
    printf ("RESULT soak_server_exit=not_answering\n");
  g_array_unref (S.samples);
  return 0;
}

int
main (int argc, char **argv)
{
  g_set_prgname ("soak");
  Options o = {
    .duration = 600, .load = 0.7, .cap_seconds = 10, .cap_slo_ms = 100, .outage = 5, .interval = 5, .drain = 2,
  };
  gint timeout_ms = 0;
  const GOptionEntry entries[] = {
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &o.duration, "Seconds of load (default 600)", "S"},
    {"load", 'l', 0, G_OPTION_ARG_DOUBLE, &o.load,
     "Share of the measured capacity offered (default 0.7)", "F"},
    {"rate", 'r', 0, G_OPTION_ARG_DOUBLE, &o.rate,
     "Requests/s to offer (skips the capacity run)", "R"},
    {"capacity-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o.cap_seconds,
     "Seconds of each probe of the capacity search (default 10)", "S"},
    {"capacity-slo-ms", 0, 0, G_OPTION_ARG_DOUBLE, &o.cap_slo_ms,
     "The p99 within which the capacity is measured, in ms (default 100)", "MS"},
    {"outage", 0, 0, G_OPTION_ARG_DOUBLE, &o.outage,
     "Seconds Redis stays down at mid-run (default 5)", "S"},
    {"sample-interval", 0, 0, G_OPTION_ARG_DOUBLE, &o.interval,
     "Seconds between RssAnon and descriptor samples (default 5)", "S"},
    {"drain", 0, 0, G_OPTION_ARG_DOUBLE, &o.drain,
     "Seconds without load before the descriptors are counted (default 2)", "S"},
    {"workers", 'w', 0, G_OPTION_ARG_INT, &o.workers,
     "Client threads (default: the rate, 16 to 512)", "N"},
    {"records", 0, 0, G_OPTION_ARG_FILENAME, &o.records,
     "Write every request (due, sent and done in s from the start, kind, status, defaults) to "
     "FILE, and the samples to FILE.samples", "FILE"},
    {"timeout-ms", 0, 0, G_OPTION_ARG_INT, &timeout_ms,
     "cube_accessor's timeout_ms in the served copy (default: the file's)", "T"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx =
    g_option_context_new ("— the CTR example from Redis at a steady load, Redis restarted midway");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "soak: %s\n", error->message);
    return 2;
  }
  if (o.duration < 8 || o.load <= 0 || o.load > 10 || o.rate < 0 || o.cap_seconds <= 0 ||
      o.cap_slo_ms <= 0 || o.outage < 0 || o.outage > o.duration / 4 || o.interval <= 0 || o.drain < 0 ||
      o.workers < 0 || timeout_ms < 0) {
    fprintf (stderr,
             "soak: bad option value (--duration at least 8 s, --outage at most a quarter of it)\n");
    return 2;
  }
  if (!redis_harness_available ()) {
    fprintf (stderr, "soak: redis-server and redis-cli are needed (scripts/debian-packages.txt)\n");
    return 1;
  }
  signal (SIGPIPE, SIG_IGN);

  g_autofree char *build = NULL, *src = NULL, *sedp = NULL, *data = NULL;
  bench_paths (&build, &src, &sedp, &data);
  /* 1. the data (as bench/run e2e prepares it, in the same folder) */
  if (!bench_prepare_ctr (src, data, 300))
    return 1;

  /* 2. Redis, with the cube pushed and saved to its dump.rdb */
  RedisServer *redis = redis_server_new (FALSE, &error);
  if (redis == NULL) {
    fprintf (stderr, "soak: %s\n", error->message);
    return 1;
  }
  redis_port = redis->port;
  the_redis = redis;
  g_autofree char *redis_url = redis_server_url (redis);
  g_autofree char *cube = g_build_filename (data, "cube", NULL);
  GPid server = 0;
  g_autofree char *tmp = NULL, *pl = NULL, *url = NULL;
  int rc = 1;
  long long redis_keys = -1;
  {
    char *cargv[] = {sedp, "cube", "push", cube, "--redis", redis_url, "--name", "ctr_example",
                     NULL};
    g_autofree char *pushed = bench_run_capture (cargv);
    if (pushed == NULL)
      goto out;
    redisReply *r = redis_server_command (redis, "SAVE");
    gboolean saved = r && r->type == REDIS_REPLY_STATUS;
    if (r)
      freeReplyObject (r);
    r = redis_server_command (redis, "DBSIZE");
    redis_keys = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
      freeReplyObject (r);
    if (!saved) {
      fprintf (stderr, "soak: redis SAVE failed\n");
      goto out;
    }
    fprintf (stderr, "soak: redis-server on port %u: %lld keys, saved to its dump.rdb\n",
             redis->port, redis_keys);
    /* Restarted once now, so that the whole run (capacity, first and second half) is served by
     * a Redis that loaded its data from dump.rdb, as the one restarted midway does: a Redis
     * loaded from a dump answers lookups measurably slower (~15 % on the development machine)
     * than the one the data was pushed into, and the comparison of the halves must not see
     * that. */
    redis_server_kill (redis);
    if (!redis_server_start (redis, &error)) {
      fprintf (stderr, "soak: redis restart: %s\n", error->message);
      goto out;
    }
  }

  /* 3. the pipeline copy and the server */
  {
    g_autofree char *pl_src = g_build_filename (src, "pipelines", "ctr-redis.pipeline", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents (pl_src, &text, NULL, &error)) {
      fprintf (stderr, "soak: %s\n", error->message);
      goto out;
    }
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
    GString *copy = g_string_new (NULL);
    for (guint i = 0; lines[i]; i++) {
      const char *l = lines[i];
      if (g_str_has_prefix (l, "redis = ")) {
        g_string_append_printf (copy, "redis = %s\n", redis_url);
        if (timeout_ms > 0)
          g_string_append_printf (copy, "timeout_ms = %d\n", timeout_ms);
        continue;
      }
      if (g_str_has_prefix (l, "timeout_ms") && timeout_ms > 0)
        continue;
      g_autofree char *fixed = NULL;
      const char *p = strstr (l, "../examples/ctr/data");
      if (p)
        l = fixed = g_strdup_printf ("%.*s%s%s", (int) (p - l), l, data,
                                     p + strlen ("../examples/ctr/data"));
      g_string_append_printf (copy, "%s\n", l);
      if (strcmp (l, "[pipeline]") == 0) /* warmed up with the requests, as ctr.pipeline is */
        g_string_append_printf (copy, "warmup = %s/requests.jsonl\n", data);
    }
    tmp = g_dir_make_tmp ("sedp-soak-XXXXXX", &error);
    if (tmp == NULL) {
      fprintf (stderr, "soak: %s\n", error->message);
      g_string_free (copy, TRUE);
      goto out;
    }
    pl = g_build_filename (tmp, "ctr-redis.pipeline", NULL);
    g_file_set_contents (pl, copy->str, -1, NULL);
    g_string_free (copy, TRUE);
  }
  {
    char *sargv[] = {sedp, "serve", pl, "--listen", "127.0.0.1:0", NULL};
    int err_fd = -1;
    if (!g_spawn_async_with_pipes (NULL, sargv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &server,
                                   NULL, NULL, &err_fd, &error)) {
      fprintf (stderr, "soak: %s\n", error->message);
      goto out;
    }
    server_pid = server;
    FILE *serr = fdopen (err_fd, "r");
    char line[4096];
    while (fgets (line, sizeof line, serr)) {
      fprintf (stderr, "soak: server: %s", line);
      char *p = strstr (line, "listening on http://");
      if (p) {
        p += strlen ("listening on http://");
        p[strcspn (p, " \r\n")] = '\0';
        url = g_strdup (p);
      }
      if (url && strstr (line, "sedp serve: ready"))
        break;
    }
    if (url == NULL || feof (serr)) {
      fprintf (stderr, "soak: the server did not start\n");
      fclose (serr);
      goto out;
    }
    g_thread_unref (g_thread_new ("soak-stderr", bench_drain_stderr, serr));
    char *colon = strrchr (url, ':');
    *colon = '\0';
    server_addr.sin_family = AF_INET;
    server_addr.sin_port = htons ((guint16) atoi (colon + 1));
    inet_pton (AF_INET, url, &server_addr.sin_addr);
    *colon = ':';
  }

  rc = soak (&o, redis, sedp, data, url, redis_keys);
out:
  if (server > 0 && !server_exited) {
    kill (server, SIGTERM);
    waitpid (server, NULL, 0);
  }
  redis_server_free (redis);
  if (pl)
    g_unlink (pl);
  if (tmp)
    g_rmdir (tmp);
  return rc;
}
