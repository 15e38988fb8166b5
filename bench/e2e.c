/* bench/run e2e — the CTR example end to end over loopback HTTP against the bare dense model.
 *
 * 1. prepares the CTR example (realistic preset, 64 requests of 300 items) once, under
 *    build-bench/e2e-data/ (reused by later runs; delete it to regenerate);
 * 2. writes a copy of pipelines/ctr.pipeline whose paths point there (and, with --parallelism P,
 *    `parallelism = P` on the model stage), starts `sedp serve COPY --listen 127.0.0.1:0`;
 * 3. warms up, then runs `sedp bench URL --concurrency C --duration S --format protobuf`;
 * 4. runs `sedp model bench dense.onnx --batch B --threads T` with B = the pipeline's frame_rows
 *    (the model stage's batch is 1 frame per call, so it sees runs of frame_rows rows) and T = the
 *    model stage's parallelism (1 in pipelines/ctr.pipeline, else --parallelism);
 * 5. prints RESULT e2e_items_per_s, model_items_per_s, e2e_over_model, e2e_p99_ms, e2e_errors.
 *
 * Options: --concurrency C (default 8), --duration S (default 60), --parallelism P (default: as
 * the pipeline file), --reader-parallelism R (the reader stage's workers; default: as the file), --items M (default 300), --model-seconds S (default 10).
 * See docs/load-testing.md. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *
find_source_dir (const char *build)
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

/* Runs @argv; returns its stdout (or NULL on failure, with the reason on stderr). */
static char *
run_capture (char **argv)
{
  g_autofree char *cmd = g_strjoinv (" ", argv);
  fprintf (stderr, "e2e: %s\n", cmd);
  char *out = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  if (!g_spawn_sync (NULL, argv, NULL, G_SPAWN_CHILD_INHERITS_STDIN, NULL, NULL, &out, NULL, &status,
                     &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return NULL;
  }
  if (!g_spawn_check_wait_status (status, &error)) {
    fprintf (stderr, "e2e: %s: %s\n", argv[0], error->message);
    g_free (out);
    return NULL;
  }
  return out;
}

static double
result_value (const char *out, const char *key)
{
  g_autofree char *pat = g_strdup_printf ("%s=", key);
  const char *p = out ? strstr (out, pat) : NULL;
  return p ? g_ascii_strtod (p + strlen (pat), NULL) : -1;
}

int
main (int argc, char **argv)
{
  gint concurrency = 8, parallelism = 0, reader_par = 0, items = 300;
  gdouble duration = 60, model_seconds = 10;
  const GOptionEntry entries[] = {
    {"concurrency", 'c', 0, G_OPTION_ARG_INT, &concurrency, "Clients (default 8)", "C"},
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &duration, "Seconds of load (default 60)", "S"},
    {"parallelism", 'p', 0, G_OPTION_ARG_INT, &parallelism,
     "Model stage workers in the served copy (default: the pipeline file's)", "P"},
    {"reader-parallelism", 0, 0, G_OPTION_ARG_INT, &reader_par,
     "Reader (protobuf decoding) stage workers in the served copy (default: the pipeline file's)", "R"},
    {"items", 0, 0, G_OPTION_ARG_INT, &items, "Items per request (default 300)", "M"},
    {"model-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &model_seconds,
     "Seconds of sedp model bench (default 10)", "S"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— the CTR example over HTTP vs the bare model");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 2;
  }
  if (concurrency < 1 || duration <= 0 || parallelism < 0 || reader_par < 0 || items < 1 || model_seconds <= 0) {
    fprintf (stderr, "e2e: bad option value\n");
    return 2;
  }

  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *bench_dir = g_path_get_dirname (exe);
  g_autofree char *build = g_path_get_dirname (bench_dir);
  g_autofree char *src = find_source_dir (build);
  g_autofree char *sedp = g_build_filename (build, "core", "sedp", NULL);
  g_autofree char *data = g_build_filename (build, "e2e-data", NULL);
  g_autofree char *items_s = g_strdup_printf ("%d", items);
  g_autofree char *stamp = g_strdup_printf ("%s/.prepared-%d", data, items);
  g_setenv ("SEDP", sedp, TRUE);

  /* 1. the data */
  if (!g_file_test (stamp, G_FILE_TEST_EXISTS)) {
    g_autofree char *prepare = g_build_filename (src, "examples", "ctr", "prepare", NULL);
    g_autofree char *out_opt = g_strdup_printf ("--out=%s", data);
    char *pargv[] = {prepare, "--requests", "64", "--items", items_s, out_opt, NULL};
    g_autofree char *o = run_capture (pargv);
    if (o == NULL)
      return 1;
    fputs (o, stderr);
    g_file_set_contents (stamp, "", 0, NULL);
  }

  /* 2. the pipeline copy */
  g_autofree char *pl_src = g_build_filename (src, "pipelines", "ctr.pipeline", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (pl_src, &text, NULL, &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 1;
  }
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GString *copy = g_string_new (NULL);
  gint frame_rows = 64, model_par = 1;
  gboolean in_model = FALSE, in_reader = FALSE;
  for (guint i = 0; lines[i]; i++) {
    char *l = lines[i];
    if (l[0] == '[') {
      if (in_model && parallelism > 0)
        g_string_append_printf (copy, "parallelism = %d\n", parallelism);
      if (in_reader && reader_par > 0)
        g_string_append_printf (copy, "parallelism = %d\n", reader_par);
      in_model = strcmp (l, "[stage model]") == 0;
      in_reader = strcmp (l, "[stage reader]") == 0;
    }
    if (in_reader && reader_par > 0 && g_str_has_prefix (l, "parallelism"))
      continue;
    if (g_str_has_prefix (l, "frame_rows"))
      frame_rows = atoi (strchr (l, '=') + 1);
    if (in_model && g_str_has_prefix (l, "parallelism")) {
      model_par = atoi (strchr (l, '=') + 1);
      if (parallelism > 0)
        continue;
    }
    g_autofree char *fixed = NULL;
    char *p = strstr (l, "../examples/ctr/data");
    if (p)
      l = fixed = g_strdup_printf ("%.*s%s%s", (int) (p - l), l, data, p + strlen ("../examples/ctr/data"));
    g_string_append_printf (copy, "%s\n", l);
  }
  if (in_model && parallelism > 0)
    g_string_append_printf (copy, "parallelism = %d\n", parallelism);
  if (in_reader && reader_par > 0)
    g_string_append_printf (copy, "parallelism = %d\n", reader_par);
  if (parallelism > 0)
    model_par = parallelism;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-e2e-XXXXXX", &error);
  if (tmp == NULL) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 1;
  }
  g_autofree char *pl = g_build_filename (tmp, "ctr.pipeline", NULL);
  g_file_set_contents (pl, copy->str, -1, NULL);
  g_string_free (copy, TRUE);
  fprintf (stderr, "e2e: model stage: batch %d rows (frame_rows, 1 frame per call), %d worker(s)\n",
           frame_rows, model_par);

  /* 3. the server */
  char *sargv[] = {sedp, "serve", pl, "--listen", "127.0.0.1:0", NULL};
  GPid server = 0;
  int err_fd = -1;
  if (!g_spawn_async_with_pipes (NULL, sargv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &server,
                                 NULL, NULL, &err_fd, &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 1;
  }
  FILE *serr = fdopen (err_fd, "r");
  char line[4096], url[512] = "";
  while (fgets (line, sizeof line, serr)) {
    fputs (line, stderr);
    char *p = strstr (line, "listening on ");
    if (p) {
      p += strlen ("listening on ");
      p[strcspn (p, " \r\n")] = '\0';
      g_snprintf (url, sizeof url, "%s/v1/pipelines/ctr:predict", p);
    }
    if (url[0] && strstr (line, "sedp serve: ready")) /* warmed up (the pipeline's warmup key) */
      break;
  }
  g_autofree char *req = NULL, *c_s = NULL, *d_s = NULL, *warm = NULL, *e2e = NULL, *dense = NULL, *b_s = NULL, *t_s = NULL, *s_s = NULL, *model = NULL;
  int rc = 1;
  double model_before_items = 0;
  if (url[0] == '\0') {
    fprintf (stderr, "e2e: the server did not start\n");
    goto out;
  }
  /* keep draining the server's stderr so it never blocks on a full pipe */
  if (fork () == 0) {
    while (fgets (line, sizeof line, serr))
      fputs (line, stderr);
    _exit (0);
  }
  fclose (serr);

  req = g_build_filename (data, "requests.jsonl", NULL);
  c_s = g_strdup_printf ("%d", concurrency);
  d_s = g_strdup_printf ("%g", duration);
  char *wargv[] = {sedp, "bench", url, "--concurrency", c_s, "--duration", "3", "--requests", req,
                   "--format", "protobuf", "--quiet", NULL};
  warm = run_capture (wargv);
  if (warm == NULL)
    goto out;
  {
    /* the bare model once before the end-to-end run (the server idles meanwhile) */
    g_autofree char *dense0 = g_build_filename (data, "dense.onnx", NULL);
    g_autofree char *b0 = g_strdup_printf ("%d", frame_rows), *t0 = g_strdup_printf ("%d", model_par);
    g_autofree char *s0 = g_strdup_printf ("%g", model_seconds);
    char *m0argv[] = {sedp, "model", "bench", dense0, "--batch", b0, "--threads", t0, "--seconds", s0, NULL};
    g_autofree char *m0 = run_capture (m0argv);
    if (m0 == NULL)
      goto out;
    fputs (m0, stderr);
    model_before_items = result_value (m0, "rows_per_s");
  }
  char *bargv[] = {sedp, "bench", url, "--concurrency", c_s, "--duration", d_s, "--requests", req,
                   "--format", "protobuf", NULL};
  e2e = run_capture (bargv);
  if (e2e == NULL)
    goto out;
  fputs (e2e, stderr);
  kill (server, SIGTERM);
  waitpid (server, NULL, 0);
  server = 0;

  /* 4. the bare model */
  dense = g_build_filename (data, "dense.onnx", NULL);
  b_s = g_strdup_printf ("%d", frame_rows);
  t_s = g_strdup_printf ("%d", model_par);
  s_s = g_strdup_printf ("%g", model_seconds);
  char *margv[] = {sedp, "model", "bench", dense, "--batch", b_s, "--threads", t_s, "--seconds", s_s, NULL};
  model = run_capture (margv);
  if (model == NULL)
    goto out;
  fputs (model, stderr);
  /* The machine is shared: the bare model runs twice, before and after the end-to-end run (the
   * first after the server's warm-up, see 3.), and the ratio takes the better of the two, so that
   * noise during one of them cannot flatter the pipeline. */
  double model_items = MAX (model_before_items, result_value (model, "rows_per_s"));

  char reader_s[16] = "file";
  if (reader_par > 0)
    g_snprintf (reader_s, sizeof reader_s, "%d", reader_par);
  double e2e_items = result_value (e2e, "items_per_s");
  printf ("RESULT e2e_concurrency=%d e2e_duration_s=%g model_batch=%d model_threads=%d reader_workers=%s\n",
          concurrency, duration, frame_rows, model_par, reader_s);
  printf ("RESULT e2e_items_per_s=%.1f\n", e2e_items);
  printf ("RESULT model_items_per_s=%.1f\n", model_items);
  printf ("RESULT model_items_per_s_runs=%.1f,%.1f\n", model_before_items, result_value (model, "rows_per_s"));
  printf ("RESULT e2e_over_model=%.3f\n", model_items > 0 ? e2e_items / model_items : 0);
  printf ("RESULT e2e_p99_ms=%.3f\n", result_value (e2e, "p99_ms"));
  printf ("RESULT e2e_errors=%.0f\n", result_value (e2e, "errors"));
  rc = 0;
out:
  if (server > 0) {
    kill (server, SIGTERM);
    waitpid (server, NULL, 0);
  }
  g_unlink (pl);
  g_rmdir (tmp);
  return rc;
}
