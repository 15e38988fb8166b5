/* bench/run refusal — the server CPU that a malicious request costs before it is refused.
 *
 * The target (docs/limits.md, "Cost of a refusal"): a malicious request is refused in under 1 ms
 * of server CPU, whatever its nesting or size up to the body limit.
 *
 * 1. prepares the CTR example as bench/run e2e does (build-bench/e2e-data/, shared with it and
 *    with bench/run soak: 64 requests of 300 items, the realistic DLRM preset);
 * 2. writes a copy of pipelines/ctr.pipeline pointing there (the local cube: no Redis), starts
 *    `sedp serve COPY --listen 127.0.0.1:0` (default --max-body, 16 MiB) and waits for
 *    `sedp serve: ready`;
 * 3. in --rounds rounds (3), for each kind of kinds[] below in turn: sends it twice (not counted:
 *    first-touch costs), reads the server's CPU time, sends it N times one at a time, each on a
 *    fresh connection, reading each answer to its end, and reads the server's CPU time again.
 *    N is --count (200), or --large-count (20) for the kinds whose body is 16–17 MB. Every answer
 *    must have the kind's status, else the benchmark stops (exit status 1) and says what came
 *    back. The machine is shared and its speed drifts: the median of the rounds is reported;
 * 4. prints RESULT refusal_cpu_us_KIND (server CPU per request, µs), refusal_cpu_us_max_small
 *    (the most of the malicious kinds, healthz left out, whose body is at most 1 MiB),
 *    refusal_cpu_us_per_mib_read (what
 *    receiving a MiB costs: valid_at_16m_read_only over its size) and
 *    refusal_cpu_us_per_mib_decode (error_at_end_16m minus valid_at_16m_read_only, per MiB).
 *
 * Server CPU is the sum over the server's threads (/proc/PID/task/TID/schedstat, first field:
 * nanoseconds on a CPU, user and kernel). A thread that exits between two readings takes its time
 * with it; sedp serve's threads are all long-lived (the main loop, which runs libsoup and the
 * peek; GLib's gmain; the stage workers (sedp-reader, …), sync workers and deadline timer of
 * core/runtime/pipeline.c, started with the pipeline and joined at shutdown; 10 in all for the
 * CTR pipeline), and the benchmark checks
 * that the set of threads is the same before and after each kind (a warning on stderr and
 * RESULT refusal_threads_changed=1 otherwise). The kernel's loopback TCP work is mostly charged to
 * the sending client, not to the server: the figures are the server's own reading, copying and
 * parsing. See docs/load-testing.md.
 *
 * Options: --count N (200), --large-count N (20), --rounds R (3). */
#define _GNU_SOURCE
#include "bench-process.h"
#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)
/* sedp serve's default --max-body (SEDP_SERVER_DEFAULT_MAX_BODY, core/server/server.h) */
#define MAX_BODY (16u * 1024u * 1024u)
#define OVER_MAX_BODY 17000000u
#define PREDICT "/v1/pipelines/ctr:predict"
#define PB "application/x-protobuf"
#define JSON "application/json"
#define MAX_ROUNDS 15

static struct sockaddr_in server_addr;
static GPid server_pid;

/* ---- the kinds ---- */

/* One kind of request, prepared once: @head (owned) is its request line and headers, @body (a
 * reference, NULL for none) what follows them. */
typedef struct {
  const char *name;
  guint expect;   /* the HTTP status every answer must have */
  gboolean large; /* 16–17 MB: sent --large-count times */
  char *head;
  GBytes *body;
  double round_us[MAX_ROUNDS]; /* server CPU per request, µs, in each round */
  double us;                   /* the result: the median of the rounds */
} Kind;

enum {
  K_HEALTHZ, K_BRACKETS, K_NESTED, K_TOO_MANY, K_HUGE_STRING, K_PB_HUGE, K_PB_GARBAGE,
  K_OVER_EXPECT, K_OVER_BODY, K_ERROR_AT_END, K_READ_ONLY, N_KINDS
};

static Kind kinds[N_KINDS] = {
  [K_HEALTHZ] = {"healthz", 200},
  [K_BRACKETS] = {"brackets_400k", 400},
  [K_NESTED] = {"nested_objects", 400},
  [K_TOO_MANY] = {"too_many_items", 400},
  [K_HUGE_STRING] = {"huge_string", 400},
  [K_PB_HUGE] = {"pb_huge_length", 400},
  [K_PB_GARBAGE] = {"pb_garbage", 400},
  [K_OVER_EXPECT] = {"over_max_body_expect", 413},
  [K_OVER_BODY] = {"over_max_body", 413, TRUE},
  [K_ERROR_AT_END] = {"error_at_end_16m", 400, TRUE},
  /* POST to /healthz: answered 405 once the body is read, without looking at it */
  [K_READ_ONLY] = {"valid_at_16m_read_only", 405, TRUE},
};

static gsize
body_len (const Kind *k)
{
  return k->body ? g_bytes_get_size (k->body) : 0;
}

/* Sets kind @i to a POST of @body (taken) to @path. */
static void
set_post (guint i, const char *path, const char *ctype, GBytes *body)
{
  kinds[i].body = body;
  kinds[i].head = bench_http_head ("POST", path, ctype, g_bytes_get_size (body), FALSE,
                                   ntohs (server_addr.sin_port));
}

/* ---- the bodies ---- */

/* @prefix, @open × @n, @mid, @close × @n, @suffix. */
static GBytes *
nest (const char *prefix, const char *open, const char *mid, const char *close, guint n,
      const char *suffix)
{
  GString *s = g_string_new (prefix);
  for (guint i = 0; i < n; i++)
    g_string_append (s, open);
  g_string_append (s, mid);
  for (guint i = 0; i < n; i++)
    g_string_append (s, close);
  g_string_append (s, suffix);
  return g_string_free_to_bytes (s);
}

/* JSON of 10 001 items (the reader's max_items is 10 000), as bench/run soak sends it. */
static GBytes *
too_many_items (void)
{
  GString *s = g_string_new ("{\"request_id\": \"many\", \"user\": {\"id\": 1}, \"items\": [");
  for (guint i = 0; i < 10001; i++)
    g_string_append_printf (s, "%s{\"id\": %u}", i ? ", " : "", i + 1);
  g_string_append (s, "]}");
  return g_string_free_to_bytes (s);
}

static GBytes *
random_bytes (gsize n)
{
  guint8 *b = g_malloc (n);
  GRand *rand = g_rand_new_with_seed (42);
  for (gsize i = 0; i < n; i++)
    b[i] = (guint8) g_rand_int (rand);
  g_rand_free (rand);
  return g_bytes_new_take (b, n);
}

/* ---- the 16 MiB JSON request ---- */

static void
append_ids (GString *s, GRand *r, guint n)
{
  for (guint k = 0; k < n; k++)
    g_string_append_printf (s, "%s%d", k ? "," : "", g_rand_int_range (r, 0, 10000));
}

/* One item shaped as the CTR example's (13 dense floats, slot_13 … slot_25 of 4 ids each), with
 * a behaviour sequence of 200 ids ("hist") that brings it to about 1.7 KB. */
static void
append_item (GString *s, GRand *r, guint i)
{
  g_string_append_printf (s, "%s{\"id\":%u,\"escore\":%.6f,\"features\":{\"dense\":{\"floats\":[",
                          i ? "," : "", 100000 + i, g_rand_double (r));
  for (guint k = 0; k < 13; k++)
    g_string_append_printf (s, "%s%.4f", k ? "," : "", g_rand_double_range (r, 0, 2));
  g_string_append (s, "]}");
  for (guint slot = 13; slot < 26; slot++) {
    g_string_append_printf (s, ",\"slot_%u\":{\"ids\":[", slot);
    append_ids (s, r, 4);
    g_string_append (s, "]}");
  }
  g_string_append (s, ",\"hist\":{\"ids\":[");
  append_ids (s, r, 200);
  g_string_append (s, "]}}}");
}

/* A request that is valid up to its last member, top_k, given a string: 10 000 items (max_items;
 * fewer if the body would come within 4 KiB of the body limit: 15.9 MiB as they are), then the
 * fault. It gives itself a deadline of 60 s (a client may ask for up to an hour): with the
 * pipeline's 500 ms, a busy machine answers 504 before the decoder reaches the fault. */
static GBytes *
error_at_end (void)
{
  static const char tail[] = "],\"top_k\":\"ten\"}";
  GString *s = g_string_new ("{\"request_id\":\"at-end\",\"deadline_ms\":60000,"
                              "\"user\":{\"id\":1000,\"features\":{");
  GRand *r = g_rand_new_with_seed (7);
  for (guint slot = 0; slot < 13; slot++) {
    g_string_append_printf (s, "%s\"slot_%u\":{\"ids\":[", slot ? "," : "", slot);
    append_ids (s, r, 4);
    g_string_append (s, "]}");
  }
  g_string_append (s, "}},\"items\":[");
  for (guint i = 0; i < 10000 && s->len + 4096 < MAX_BODY; i++)
    append_item (s, r, i);
  g_rand_free (r);
  g_string_append (s, tail);
  g_assert (s->len <= MAX_BODY);
  return g_string_free_to_bytes (s);
}

/* ---- preparing every kind ---- */

static void
prepare_small_kinds (void)
{
  kinds[K_HEALTHZ].head =
    bench_http_head ("GET", "/healthz", NULL, 0, FALSE, ntohs (server_addr.sin_port));
  set_post (K_BRACKETS, PREDICT, JSON, nest ("", "[", "", "]", 200000, ""));
  /* 100 000 objects deep where a feature's value goes: about 600 KB */
  set_post (K_NESTED, PREDICT, JSON,
            nest ("{\"items\":[{\"features\":{\"a\":", "{\"a\":", "1", "}", 100000, "}}]}"));
  set_post (K_TOO_MANY, PREDICT, JSON, too_many_items ());
  /* a string value of 70 000 bytes (max_string_bytes is 65 536) */
  set_post (K_HUGE_STRING, PREDICT, JSON,
            nest ("{\"items\":[{\"id\":1,\"features\":{\"s\":{\"string_value\":\"", "a", "", "",
                  70000, "\"}}}]}"));
  /* request_id "huge", then items (3) claiming 2^31 bytes, then 16 bytes */
  static const guint8 huge[] = {0x0a, 4, 'h', 'u', 'g', 'e', 0x1a, 0x80, 0x80, 0x80, 0x80, 0x08,
                                0x08, 1, 0x12, 2, 0x08, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  set_post (K_PB_HUGE, PREDICT, PB, g_bytes_new_static (huge, sizeof huge));
  set_post (K_PB_GARBAGE, PREDICT, PB, random_bytes (2000));
  /* declared over the limit, refused before the body: none is sent */
  kinds[K_OVER_EXPECT].head =
    bench_http_head ("POST", PREDICT, PB, OVER_MAX_BODY, TRUE, ntohs (server_addr.sin_port));
}

static void
prepare_large_kinds (void)
{
  /* over the limit without Expect: libsoup 3.2 reads the whole body, which sedp discards */
  set_post (K_OVER_BODY, PREDICT, PB, g_bytes_new_take (g_malloc0 (OVER_MAX_BODY), OVER_MAX_BODY));
  GBytes *json = error_at_end ();
  set_post (K_READ_ONLY, "/healthz", JSON, g_bytes_ref (json));
  set_post (K_ERROR_AT_END, PREDICT, JSON, json);
}

/* ---- a minimal HTTP/1.1 client: one connection per exchange ---- */

static int
connect_server (void)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct timeval tv = {.tv_sec = 30};
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect (fd, (struct sockaddr *) &server_addr, sizeof server_addr) != 0) {
    close (fd);
    return -1;
  }
  return fd;
}

/* Reads the answer to the end of the connection; keeps its first bytes in @start (at most
 * @size - 1, NUL-terminated). */
static void
read_answer (int fd, char *start, gsize size)
{
  gsize kept = 0;
  char buf[65536];
  for (;;) {
    ssize_t r = recv (fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    gsize take = MIN ((gsize) r, size - 1 - kept);
    memcpy (start + kept, buf, take);
    kept += take;
  }
  start[kept] = '\0';
}

/* Sends @k on a fresh connection and reads its whole answer. Returns the HTTP status (0: no
 * answer); @start gets the answer's first bytes. The server may answer (413) and close before it
 * has read a large body: the answer is still read when sending fails. */
static guint
exchange (const Kind *k, char *start, gsize size)
{
  start[0] = '\0';
  int fd = connect_server ();
  if (fd < 0)
    return 0;
  gsize n = 0;
  const guint8 *body = k->body ? g_bytes_get_data (k->body, &n) : NULL;
  if (bench_send_all (fd, (const guint8 *) k->head, strlen (k->head)) && n > 0)
    bench_send_all (fd, body, n);
  read_answer (fd, start, size);
  close (fd);
  if (strncmp (start, "HTTP/1.", 7) != 0 || strlen (start) < 12)
    return 0;
  return (guint) strtoul (start + 9, NULL, 10);
}

/* One exchange whose status must be the kind's; FALSE (with what came back on stderr) if not.
 * @answer (nullable) gets the answer's body, its first bytes. */
static gboolean
exchange_checked (const Kind *k, char **answer)
{
  char start[1024];
  guint status = exchange (k, start, sizeof start);
  if (status != k->expect) {
    fprintf (stderr, "refusal: %s: expected HTTP %u, got %u:\n%s\n", k->name, k->expect, status,
             start);
    return FALSE;
  }
  if (answer) {
    const char *body = strstr (start, "\r\n\r\n");
    *answer = g_strndup (body ? body + 4 : "", 160);
  }
  return TRUE;
}

/* ---- the server's CPU time ---- */

/* Nanoseconds on a CPU of all the server's live threads (schedstat's first field); -1 if the
 * server is gone. */
static gint64
server_cpu_ns (void)
{
  g_autofree char *dir = g_strdup_printf ("/proc/%d/task", (int) server_pid);
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d == NULL)
    return -1;
  gint64 sum = 0;
  for (const char *tid; (tid = g_dir_read_name (d)) != NULL;) {
    g_autofree char *path = g_strdup_printf ("%s/%s/schedstat", dir, tid);
    g_autofree char *text = NULL;
    if (g_file_get_contents (path, &text, NULL, NULL))
      sum += g_ascii_strtoll (text, NULL, 10);
  }
  g_dir_close (d);
  return sum;
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The server's thread ids, sorted, comma-separated. */
static char *
server_threads (void)
{
  g_autofree char *dir = g_strdup_printf ("/proc/%d/task", (int) server_pid);
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d == NULL)
    return g_strdup ("");
  g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
  for (const char *tid; (tid = g_dir_read_name (d)) != NULL;)
    g_ptr_array_add (ids, g_strdup (tid));
  g_dir_close (d);
  g_ptr_array_sort (ids, cmp_str);
  g_ptr_array_add (ids, NULL);
  return g_strjoinv (",", (char **) ids->pdata);
}

/* The server's CPU (user + system, exited threads included) in µs, at clock-tick resolution: a
 * cross-check of server_cpu_ns() for the large kinds. */
static double
server_ticks_us (void)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) server_pid);
  g_autofree char *text = NULL;
  unsigned long ut = 0, st = 0;
  if (!g_file_get_contents (path, &text, NULL, NULL) || strrchr (text, ')') == NULL)
    return 0;
  /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
   * stime */
  sscanf (strrchr (text, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
  return (double) (ut + st) * 1e6 / (double) sysconf (_SC_CLK_TCK);
}

/* ---- the measurement ---- */

static gboolean threads_changed;

/* One reading of the server: its CPU by schedstat and by clock ticks, its threads (owned). */
typedef struct {
  gint64 cpu_ns, t;
  double ticks_us;
  char *threads;
} Reading;

static Reading
reading_take (void)
{
  Reading r = {.threads = server_threads (), .ticks_us = server_ticks_us ()};
  r.cpu_ns = server_cpu_ns ();
  r.t = g_get_monotonic_time ();
  return r;
}

static gboolean
send_n (const Kind *k, guint n)
{
  for (guint i = 0; i < n; i++)
    if (!exchange_checked (k, NULL))
      return FALSE;
  return TRUE;
}

/* Sets k->round_us[@r] from the readings @a and @b around @n requests; says it on stderr with
 * @answer. */
static void
report (Kind *k, guint r, guint n, const Reading *a, const Reading *b, char *answer)
{
  if (strcmp (a->threads, b->threads) != 0) {
    fprintf (stderr, "refusal: %s: the server's threads changed (%s → %s): the CPU of those that "
             "exited is not counted\n", k->name, a->threads, b->threads);
    threads_changed = TRUE;
  }
  double us = k->round_us[r] = (double) (b->cpu_ns - a->cpu_ns) / 1e3 / n;
  fprintf (stderr, "refusal: %-22s %4u × %8" G_GSIZE_FORMAT " bytes → %u: %9.1f µs of server CPU "
           "each (clock ticks: %.0f µs), %.2f ms wall each\n", k->name, n, body_len (k), k->expect,
           us, (b->ticks_us - a->ticks_us) / n, (double) (b->t - a->t) / 1e3 / n);
  if (r == 0)
    fprintf (stderr, "refusal: %-22s answer: %s\n", "", g_strdelimit (answer, "\r\n", ' '));
}

/* Round @r of @k: sends it twice (not counted: first-touch costs), then @n times between two
 * readings of the server; sets k->round_us[@r]. FALSE on a wrong answer. */
static gboolean
measure (Kind *k, guint r, guint n)
{
  g_autofree char *answer = NULL;
  if (!exchange_checked (k, &answer) || !send_n (k, 1))
    return FALSE;
  Reading a = reading_take ();
  gboolean ok = send_n (k, n);
  Reading b = reading_take ();
  if (ok)
    report (k, r, n, &a, &b, answer);
  g_free (a.threads);
  g_free (b.threads);
  return ok;
}

/* The server's CPU over @seconds of idling, in µs per second. */
static double
idle_cpu (double seconds)
{
  gint64 cpu0 = server_cpu_ns ();
  g_usleep ((gulong) (seconds * G_USEC_PER_SEC));
  return (double) (server_cpu_ns () - cpu0) / 1e3 / seconds;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Sets k->us to the median of its @rounds rounds and says them on stderr. */
static void
take_median (Kind *k, guint rounds)
{
  double v[MAX_ROUNDS];
  g_autoptr (GString) list = g_string_new (NULL);
  for (guint r = 0; r < rounds; r++)
    g_string_append_printf (list, "%s%.1f", r ? ", " : "", v[r] = k->round_us[r]);
  qsort (v, rounds, sizeof (double), cmp_double);
  k->us = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
  fprintf (stderr, "refusal: %-22s %9.1f µs (median of %s)\n", k->name, k->us, list->str);
}

static void
print_results (double idle)
{
  double max_small = 0;
  printf ("RESULT refusal_server_idle_cpu_us_per_s=%.1f\n", idle);
  for (guint i = 0; i < N_KINDS; i++) {
    printf ("RESULT refusal_cpu_us_%s=%.1f\n", kinds[i].name, kinds[i].us);
    if (i != K_HEALTHZ && body_len (&kinds[i]) <= 1024 * 1024) /* healthz: the baseline */
      max_small = MAX (max_small, kinds[i].us);
  }
  const Kind *ro = &kinds[K_READ_ONLY], *end = &kinds[K_ERROR_AT_END];
  double mib = (double) body_len (end) / MIB;
  printf ("RESULT refusal_body_bytes_16m=%" G_GSIZE_FORMAT "\n", body_len (end));
  printf ("RESULT refusal_cpu_us_max_small=%.1f\n", max_small);
  printf ("RESULT refusal_cpu_us_per_mib_read=%.1f\n", ro->us / mib);
  printf ("RESULT refusal_cpu_us_per_mib_decode=%.1f\n", (end->us - ro->us) / mib);
  printf ("RESULT refusal_threads_changed=%d\n", threads_changed ? 1 : 0);
}

/* ---- set-up: the data, the pipeline copy, the server ---- */

/* Writes pipelines/ctr.pipeline with its data paths pointing at @data into @tmp; returns the
 * copy's path, or NULL. */
static char *
write_pipeline (const char *src, const char *data, const char *tmp)
{
  static const char dir[] = "../examples/ctr/data";
  g_autofree char *from = g_build_filename (src, "pipelines", "ctr.pipeline", NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (from, &text, NULL, &error)) {
    fprintf (stderr, "refusal: %s\n", error->message);
    return NULL;
  }
  g_auto (GStrv) parts = g_strsplit (text, dir, -1);
  g_autofree char *copy = g_strjoinv (data, parts);
  char *to = g_build_filename (tmp, "ctr.pipeline", NULL);
  g_file_set_contents (to, copy, -1, NULL);
  return to;
}

/* Sets server_addr from "http://HOST:PORT…" in @line; FALSE if there is none. */
static gboolean
parse_listen (char *line)
{
  char *p = strstr (line, "listening on http://");
  if (p == NULL)
    return FALSE;
  p += strlen ("listening on http://");
  p[strcspn (p, " /\r\n")] = '\0';
  char *colon = strrchr (p, ':');
  if (colon == NULL)
    return FALSE;
  *colon = '\0';
  server_addr.sin_family = AF_INET;
  server_addr.sin_port = htons ((guint16) atoi (colon + 1));
  return inet_pton (AF_INET, p, &server_addr.sin_addr) == 1;
}

/* Starts `sedp serve @pipeline --listen 127.0.0.1:0`, waits for `sedp serve: ready`; its stderr
 * is then drained by a thread. FALSE if it did not start. */
static gboolean
start_server (char *sedp, char *pipeline)
{
  char *argv[] = {sedp, "serve", pipeline, "--listen", "127.0.0.1:0", NULL};
  int err_fd = -1;
  g_autoptr (GError) error = NULL;
  if (!g_spawn_async_with_pipes (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                 &server_pid, NULL, NULL, &err_fd, &error)) {
    fprintf (stderr, "refusal: %s\n", error->message);
    return FALSE;
  }
  FILE *serr = fdopen (err_fd, "r");
  char line[4096];
  gboolean listening = FALSE;
  while (fgets (line, sizeof line, serr)) {
    fprintf (stderr, "refusal: server: %s", line);
    if (listening && strstr (line, "sedp serve: ready")) {
      g_thread_unref (g_thread_new ("refusal-stderr", bench_drain_stderr, serr));
      return TRUE;
    }
    listening = listening || parse_listen (line);
  }
  fclose (serr);
  fprintf (stderr, "refusal: the server did not start\n");
  return FALSE;
}

/* ---- main ---- */

/* Steps 3 and 4 against the running server: @rounds rounds of every kind in turn. */
static int
run_kinds (guint count, guint large_count, guint rounds)
{
  prepare_small_kinds ();
  prepare_large_kinds ();
  for (guint r = 0; r < rounds; r++)
    for (guint i = 0; i < N_KINDS; i++)
      if (!measure (&kinds[i], r, kinds[i].large ? large_count : count))
        return 1;
  /* after the last answer: work still going on would be missing from the last kind's figure */
  double idle = idle_cpu (1.0);
  for (guint i = 0; i < N_KINDS; i++)
    take_median (&kinds[i], rounds);
  printf ("RESULT refusal_count=%u refusal_large_count=%u refusal_rounds=%u\n", count,
          large_count, rounds);
  print_results (idle);
  return 0;
}

typedef struct {
  gint count, large_count, rounds;
} Options;

static gboolean
parse_options (int *argc, char ***argv, Options *o)
{
  const GOptionEntry entries[] = {
    {"count", 'n', 0, G_OPTION_ARG_INT, &o->count,
     "Requests of each kind of at most 1 MiB, per round (default 200)", "N"},
    {"large-count", 0, 0, G_OPTION_ARG_INT, &o->large_count,
     "Requests of each 16–17 MB kind, per round (default 20)", "N"},
    {"rounds", 'r', 0, G_OPTION_ARG_INT, &o->rounds,
     "Rounds of every kind in turn; the median is reported (default 3, at most 15)", "R"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx =
    g_option_context_new ("— the server CPU of a refused request");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error)) {
    fprintf (stderr, "refusal: %s\n", error->message);
    return FALSE;
  }
  if (o->count < 1 || o->large_count < 1 || o->rounds < 1 || o->rounds > MAX_ROUNDS) {
    fprintf (stderr, "refusal: --count and --large-count: at least 1; --rounds: 1 to 15\n");
    return FALSE;
  }
  return TRUE;
}

/* Stops the server (when started) and removes the pipeline copy @pl and its folder @tmp. */
static void
clean_up (const char *pl, const char *tmp)
{
  if (server_pid > 0) {
    kill (server_pid, SIGTERM);
    waitpid (server_pid, NULL, 0);
  }
  if (pl)
    g_unlink (pl);
  if (tmp)
    g_rmdir (tmp);
}

int
main (int argc, char **argv)
{
  g_set_prgname ("refusal");
  Options o = {.count = 200, .large_count = 20, .rounds = 3};
  if (!parse_options (&argc, &argv, &o))
    return 2;
  signal (SIGPIPE, SIG_IGN);
  g_autofree char *build = NULL, *src = NULL, *sedp = NULL, *data = NULL;
  bench_paths (&build, &src, &sedp, &data);
  if (!bench_prepare_ctr (src, data, 300))
    return 1;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-refusal-XXXXXX", NULL);
  g_autofree char *pl = tmp ? write_pipeline (src, data, tmp) : NULL;
  int rc = 1;
  if (pl && start_server (sedp, pl))
    rc = run_kinds ((guint) o.count, (guint) o.large_count, (guint) o.rounds);
  clean_up (pl, tmp);
  return rc;
}
