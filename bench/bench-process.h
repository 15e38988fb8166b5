/* sedp benchmarks that drive a `sedp` process (e2e, soak, refusal): finding the source tree,
 * running commands for their RESULT lines, writing to sockets. Messages start with the
 * program's name (g_set_prgname() in main: "e2e", "soak", "refusal"). */
#pragma once

#include "bench-stats.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The source tree of the build folder @build (from its meson-info), or its parent. */
static inline char *
bench_find_source_dir (const char *build)
{
  g_autofree char *info = g_build_filename (build, "meson-info", "meson-info.json", NULL);
  g_autoptr (JsonParser) p = json_parser_new ();
  if (json_parser_load_from_file (p, info, NULL)) {
    JsonObject *o = json_node_get_object (json_parser_get_root (p));
    JsonObject *d = json_object_get_object_member (o, "directories");
    if (d && json_object_has_member (d, "source"))
      return g_strdup (json_object_get_string_member (d, "source"));
  }
  return g_path_get_dirname (build);
}

/* Runs @argv (said on stderr); returns its stdout, or NULL with the reason on stderr. */
static inline char *
bench_run_capture (char **argv)
{
  g_autofree char *cmd = g_strjoinv (" ", argv);
  fprintf (stderr, "%s: %s\n", g_get_prgname (), cmd);
  char *out = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  if (!g_spawn_sync (NULL, argv, NULL, G_SPAWN_CHILD_INHERITS_STDIN, NULL, NULL, &out, NULL, &status,
                     &error)) {
    fprintf (stderr, "%s: %s\n", g_get_prgname (), error->message);
    return NULL;
  }
  if (!g_spawn_check_wait_status (status, &error)) {
    fprintf (stderr, "%s: %s: %s\n", g_get_prgname (), argv[0], error->message);
    g_free (out);
    return NULL;
  }
  return out;
}

/* The number after "KEY=" in @out (RESULT lines), or -1. */
static inline double
bench_result_value (const char *out, const char *key)
{
  g_autofree char *pat = g_strdup_printf ("%s=", key);
  const char *p = out ? strstr (out, pat) : NULL;
  return p ? g_ascii_strtod (p + strlen (pat), NULL) : -1;
}

/* Writes all @n bytes to the socket @fd (no SIGPIPE); FALSE when the peer is gone. */
static inline gboolean
bench_send_all (int fd, const guint8 *p, gsize n)
{
  while (n > 0) {
    ssize_t w = send (fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return FALSE;
    p += w;
    n -= (gsize) w;
  }
  return TRUE;
}

/* A thread's body: copies the lines of @data (a FILE of a server's stderr, closed at its end)
 * to our stderr, each after "PRGNAME: server: ", so that the server never blocks on a full
 * pipe. */
static inline gpointer
bench_drain_stderr (gpointer data)
{
  FILE *f = data;
  char line[4096];
  while (fgets (line, sizeof line, f))
    fprintf (stderr, "%s: server: %s", g_get_prgname (), line);
  fclose (f);
  return NULL;
}

/* The request line and headers of an HTTP/1.1 request to 127.0.0.1:@port; a POST gets
 * Content-Length @len (with @expect, "Expect: 100-continue" and no body is meant to follow
 * until the server says so). Connection: close, as sedp serve closes every connection anyway.
 * Free with g_free(). */
static inline char *
bench_http_head (const char *method, const char *path, const char *ctype, gsize len,
                 gboolean expect, guint port)
{
  GString *h = g_string_new (NULL);
  g_string_append_printf (h, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n", method, path, port);
  if (ctype)
    g_string_append_printf (h, "Content-Type: %s\r\n", ctype);
  if (strcmp (method, "POST") == 0)
    g_string_append_printf (h, "Content-Length: %" G_GSIZE_FORMAT "\r\n", len);
  if (expect)
    g_string_append (h, "Expect: 100-continue\r\n");
  g_string_append (h, "Connection: close\r\n\r\n");
  return g_string_free (h, FALSE);
}

/* The folders and files of the build this benchmark runs from (bench/ of a build folder): the
 * build folder, its source tree, its `sedp` (also set as $SEDP for the example's scripts) and
 * the CTR example's data folder shared by e2e, soak and refusal. Each out-parameter is freed by
 * the caller. */
static inline void
bench_paths (char **build, char **src, char **sedp, char **data)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *bench_dir = g_path_get_dirname (exe);
  *build = g_path_get_dirname (bench_dir);
  *src = bench_find_source_dir (*build);
  *sedp = g_build_filename (*build, "core", "sedp", NULL);
  *data = g_build_filename (*build, "e2e-data", NULL);
  g_setenv ("SEDP", *sedp, TRUE);
}

/* The CTR example (realistic preset, 64 requests of @items items) prepared under @data, once:
 * the stamp file .prepared-@items says it was (shared by e2e, soak, refusal and tune). With @din,
 * the DIN example (examples/ctr/prepare --din) under @data-din instead, as pipelines/ctr-din.pipeline
 * finds it when ../examples/ctr/data is rewritten to @data. */
static inline gboolean
bench_prepare_example (const char *src, const char *data, guint items, gboolean din)
{
  g_autofree char *dir = din ? g_strconcat (data, "-din", NULL) : g_strdup (data);
  g_autofree char *stamp = g_strdup_printf ("%s/.prepared-%u", dir, items);
  if (g_file_test (stamp, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autofree char *prep = g_build_filename (src, "examples", "ctr", "prepare", NULL);
  g_autofree char *out_opt = g_strdup_printf ("--out=%s", dir);
  g_autofree char *items_s = g_strdup_printf ("%u", items);
  char *argv[] = {prep, "--requests", "64", "--items", items_s, out_opt, din ? "--din" : NULL, NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL)
    return FALSE;
  fputs (out, stderr);
  return g_file_set_contents (stamp, "", 0, NULL);
}

static inline gboolean
bench_prepare_ctr (const char *src, const char *data, guint items)
{
  return bench_prepare_example (src, data, items, FALSE);
}

/* The CTR example as bench_prepare_ctr() makes it, and the multi-model example's dcn and mmoe
 * dense models beside it (examples/ctr/prepare --multi-model), once: stamp .prepared-multi-@items. */
static inline gboolean
bench_prepare_multi (const char *src, const char *data, guint items)
{
  g_autofree char *stamp = g_strdup_printf ("%s/.prepared-multi-%u", data, items);
  if (g_file_test (stamp, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autofree char *prep = g_build_filename (src, "examples", "ctr", "prepare", NULL);
  g_autofree char *out_opt = g_strdup_printf ("--out=%s", data);
  g_autofree char *items_s = g_strdup_printf ("%u", items);
  char *argv[] = {prep, "--requests", "64", "--items", items_s, out_opt, "--multi-model", NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL)
    return FALSE;
  fputs (out, stderr);
  g_autofree char *ctr_stamp = g_strdup_printf ("%s/.prepared-%u", data, items);
  return g_file_set_contents (stamp, "", 0, NULL) && g_file_set_contents (ctr_stamp, "", 0, NULL);
}

/* CPU seconds (user + system) of process @pid so far (0: this one, all its threads); 0 when it
 * is gone. */
static inline double
bench_process_cpu (int pid)
{
  g_autofree char *path =
    pid > 0 ? g_strdup_printf ("/proc/%d/stat", pid) : g_strdup ("/proc/self/stat");
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return 0;
  const char *p = strrchr (text, ')');
  unsigned long utime = 0, stime = 0;
  /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
   * stime */
  if (p == NULL || sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                           &stime) != 2)
    return 0;
  return (double) (utime + stime) / (double) sysconf (_SC_CLK_TCK);
}

/* CPU seconds the whole machine has been busy (all CPUs). */
static inline double
bench_machine_busy (void)
{
  g_autofree char *text = NULL;
  unsigned long long v[8] = {0};
  if (!g_file_get_contents ("/proc/stat", &text, NULL, NULL) ||
      sscanf (text, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
              &v[4], &v[5], &v[6], &v[7]) != 8)
    return 0;
  /* user nice system idle iowait irq softirq steal: all but idle and iowait */
  return (double) (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double) sysconf (_SC_CLK_TCK);
}

/* The calling thread's CPU time, in µs, for a fixed piece of work: a 48 × 48 float matrix
 * product, vectorised as the model's kernels are, 40 times (about 0.27 ms on this machine).
 * CPU time, not wall time, so that waiting for a core does not count; what does count is how
 * fast the core runs while this thread has it (its clock, a hyperthread sibling's load, the
 * caches), the speed that a shared machine's drift changes under a benchmark. The median of
 * five, so that one interruption does not. */
static inline double
bench_speed_probe_us (void)
{
  enum { N = 48, REPS = 40, RUNS = 5 };
  static float a[N * N], b[N * N], c[N * N];
  for (guint i = 0; i < N * N; i++) {
    a[i] = (float) (i % 7) * 0.25f;
    b[i] = (float) (i % 5) * 0.5f;
  }
  double t[RUNS];
  for (guint r = 0; r < RUNS; r++) {
    struct timespec t0, t1;
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t0);
    for (guint rep = 0; rep < REPS; rep++) {
      memset (c, 0, sizeof c);
      for (guint i = 0; i < N; i++)
        for (guint k = 0; k < N; k++)
          for (guint j = 0; j < N; j++)
            c[i * N + j] += a[i * N + k] * b[k * N + j];
      __asm__ __volatile__ ("" : : "r" (c) : "memory"); /* the product is kept */
    }
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t1);
    t[r] = (double) (t1.tv_sec - t0.tv_sec) * 1e6 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e3;
  }
  return bench_quantile (t, RUNS, 0.5);
}

/* Removes @path and everything under it, symbolic links not followed (no error when it is not
 * there): a benchmark's temporary folder. */
static inline void
bench_remove_tree (const char *path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  for (const char *name; d && (name = g_dir_read_name (d));) {
    g_autofree char *sub = g_build_filename (path, name, NULL);
    if (g_file_test (sub, G_FILE_TEST_IS_DIR) && !g_file_test (sub, G_FILE_TEST_IS_SYMLINK))
      bench_remove_tree (sub);
    else
      g_unlink (sub);
  }
  if (d)
    g_dir_close (d);
  g_remove (path);
}

/* A `sedp serve` started by a benchmark: its pid, the predict URL of its pipeline, and the thread
 * that drains its stderr. */
typedef struct {
  GPid pid;
  char url[512];
  GThread *drain;
} BenchServer;

/* Starts `sedp serve --listen 127.0.0.1:0 [@pipeline] [@extra…]` and waits until it says it is
 * ready (warmed up); @s->url is then `http://HOST:PORT/v1/pipelines/@name:predict`. @pipeline is
 * nullable (`--model NAME=FILE` in @extra serves a bare model); @extra is NULL-terminated
 * (nullable). FALSE with the reason on stderr. */
static inline gboolean
bench_server_start (BenchServer *s, const char *sedp, const char *pipeline, const char *name,
                    const char *const *extra)
{
  GPtrArray *argv = g_ptr_array_new ();
  const char *head[] = {sedp, "serve", "--listen", "127.0.0.1:0", pipeline};
  for (guint i = 0; i < G_N_ELEMENTS (head) && head[i]; i++)
    g_ptr_array_add (argv, (gpointer) head[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  int err_fd = -1;
  g_autoptr (GError) error = NULL;
  memset (s, 0, sizeof *s);
  gboolean ok = g_spawn_async_with_pipes (NULL, (char **) argv->pdata, NULL,
                                          G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &s->pid, NULL,
                                          NULL, &err_fd, &error);
  g_ptr_array_unref (argv);
  if (!ok) {
    fprintf (stderr, "%s: %s\n", g_get_prgname (), error->message);
    return FALSE;
  }
  FILE *f = fdopen (err_fd, "r");
  char line[4096], host[256] = "";
  guint port = 0;
  while (fgets (line, sizeof line, f)) {
    fprintf (stderr, "%s: server: %s", g_get_prgname (), line);
    const char *p = strstr (line, "listening on http://");
    if (p && sscanf (p, "listening on http://%255[^:]:%u", host, &port) == 2)
      g_snprintf (s->url, sizeof s->url, "http://%s:%u/v1/pipelines/%s:predict", host, port, name);
    if (s->url[0] && strstr (line, "sedp serve: ready"))
      break;
  }
  if (s->url[0] == '\0' || feof (f)) {
    fclose (f);
    fprintf (stderr, "%s: the server of %s did not start\n", g_get_prgname (), name);
    return FALSE;
  }
  s->drain = g_thread_new ("drain", bench_drain_stderr, f);
  return TRUE;
}

/* Stops (SIGTERM, then waits for) a server started by bench_server_start(); zeroes @s. */
static inline void
bench_server_stop (BenchServer *s)
{
  if (s->pid) {
    kill (s->pid, SIGTERM);
    waitpid (s->pid, NULL, 0);
    g_spawn_close_pid (s->pid);
  }
  if (s->drain)
    g_thread_join (s->drain);
  memset (s, 0, sizeof *s);
}
