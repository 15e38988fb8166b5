/* bench/run e2e — the CTR example end to end over loopback HTTP against the bare dense model.
 *
 * 1. prepares the CTR example (realistic preset, 64 requests of 300 items) once, under
 *    build-bench/e2e-data/ (reused by later runs; delete it to regenerate);
 * 2. writes a copy of pipelines/ctr.pipeline whose paths point there (and, with --parallelism P,
 *    `parallelism = P` on the model stage), starts `sedp serve COPY --listen 127.0.0.1:0`;
 * 3. waits for `sedp serve: ready` (the pipeline's warm-up), then loads it 3 s more;
 * 4. measures the ratio in --rounds rounds (default 7): `sedp model bench dense.onnx --batch B
 *    --threads T` for --model-seconds (default 4), then `sedp bench URL --concurrency C
 *    --format protobuf` for --round-seconds (default 8). B = the pipeline's frame_rows (the model
 *    stage takes one frame per call, so it sees runs of frame_rows rows), T = the model stage's
 *    parallelism (2 in pipelines/ctr.pipeline since session 10, else --parallelism). The machine is shared and its
 *    speed drifts; figures seconds apart make a stable ratio, and the median ratio is reported;
 * 5. runs one continuous --duration (default 60 s) closed-loop run for errors and p99;
 * 6. prints RESULT e2e_items_per_s, model_items_per_s (medians of the rounds), e2e_over_model
 *    (median of the rounds' ratios) and the rounds' ratios, then the continuous run's items/s,
 *    p99 and errors;
 * 7. JSON against protobuf, in --json-rounds interleaved rounds of --json-round-seconds each:
 *    protobuf at C clients, JSON at C, protobuf at 1, JSON at 1, the same requests (the
 *    example's requests.jsonl, sent by `sedp bench` in either encoding). Prints
 *    json_over_protobuf (the median of the rounds' ratios at C) and, for each encoding, its
 *    items/s at 1 and at C clients and their ratio (how it grows with clients); on the pinned
 *    layout (the model on its own core) the keys start with pinned_;
 * 8. when the model was pinned: step 7 again on a server of the default layout (no pinning, as
 *    `sedp serve pipelines/ctr.pipeline` runs), unprefixed keys, and each encoding's best layout
 *    compared (json_over_protobuf_best_layouts).
 *    --json-only skips steps 4-6 (and 8).
 * 10. the model API against sedp's own protocol (e2e-model-api.h): the example's whole model
 *    served bare, its 300-item requests at one client as native protobuf, TF Serving JSON and
 *    DeepRec protobuf, in --model-api-rounds interleaved rounds of
 *    --json-round-seconds each (RESULT tfs_json_over_native, deeprec_over_native); after a
 *    full run, or alone with --model-api-only.
 * 9. --din: steps 1-6 on the DIN example instead (pipelines/ctr-din.pipeline over
 *    examples/ctr/prepare --din, prepared under build-bench/e2e-data-din/; the bare model is its
 *    dense.onnx, whose inputs are the looked-up blocks); the keys start with din_
 *    (din_e2e_over_model).
 *
 * Options: --concurrency C (default 8), --duration S (default 60), --parallelism P (default: as
 * the pipeline file), --reader-parallelism R (the reader stage's workers; default: as the file),
 * --items M (default 300), --rounds N, --round-seconds S, --model-seconds S.
 * See docs/load-testing.md. */
#include "bench-process.h"
#include "e2e-model-api.h"
#include "util/cpus.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The median of @n values (sorts a copy). */
static double
median (const double *v, int n)
{
  g_autofree double *c = g_memdup2 (v, sizeof (double) * (gsize) n);
  qsort (c, (gsize) n, sizeof (double), cmp_double);
  return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

/* `sedp bench URL` for @seconds at @clients in @format: its items/s (-1 on failure). */
static double
bench_items (const char *sedp, const char *url, const char *requests, int clients,
             const char *format, double seconds, const char *cpus)
{
  g_autofree char *c_s = g_strdup_printf ("%d", clients), *d_s = g_strdup_printf ("%g", seconds);
  char *argv[] = {(char *) sedp, "bench", (char *) url, "--concurrency", c_s, "--duration", d_s,
                  "--requests", (char *) requests, "--format", (char *) format, "--quiet",
                  cpus ? "--cpus" : NULL, (char *) cpus, NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL || bench_result_value (out, "errors") != 0)
    return -1;
  return bench_result_value (out, "items_per_s");
}

/* The medians at C clients of the last json_rounds(), for json_default_layout(). */
static double last_pb_items, last_json_items;

/* Step 8 of a full run, after the JSON rounds on the pinned layout: the same rounds on a server
 * of the default layout (`--json-only --model-cpus none`: no core pinned, what
 * `sedp serve pipelines/ctr.pipeline` does), by this program itself; its RESULT lines are passed
 * on. Each encoding's best layout is then compared: json_over_protobuf_best_layouts = JSON's
 * best items/s at C over protobuf's best (medians, rounds minutes apart: a noisier figure than
 * the per-round ratios). */
static gboolean
json_default_layout (const char *self, int rounds, double seconds, int clients)
{
  double pb_pinned = last_pb_items, json_pinned = last_json_items;
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *r_s = g_strdup_printf ("%d", rounds), *s_s = g_strdup_printf ("%g", seconds);
  g_autofree char *c_s = g_strdup_printf ("%d", clients);
  char *argv[] = {exe ? exe : (char *) self, "--json-only", "--model-cpus", "none", "--json-rounds",
                  r_s, "--json-round-seconds", s_s, "--concurrency", c_s, NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL)
    return FALSE;
  fputs (out, stdout);
  g_autofree char *pb_key = g_strdup_printf ("protobuf_items_per_s_c%d", clients);
  g_autofree char *js_key = g_strdup_printf ("json_items_per_s_c%d", clients);
  double pb = MAX (pb_pinned, bench_result_value (out, pb_key));
  double js = MAX (json_pinned, bench_result_value (out, js_key));
  printf ("RESULT protobuf_best_items_per_s_c%d=%.1f json_best_items_per_s_c%d=%.1f\n", clients, pb,
          clients, js);
  printf ("RESULT json_over_protobuf_best_layouts=%.3f\n", pb > 0 ? js / pb : 0);
  return TRUE;
}

/* Step 7: JSON against protobuf in interleaved rounds, at @clients and at 1 client; RESULT keys
 * prefixed by @label ("" for the default layout, "pinned_" for the model on its own cores). */
static gboolean
json_rounds (const char *sedp, const char *url, const char *requests, int clients, int rounds,
             double seconds, const char *cpus, const char *label)
{
  enum { PB_C, JS_C, PB_1, JS_1, N_LOADS };
  static const char *const formats[] = {"protobuf", "json", "protobuf", "json"};
  g_autofree double *v = g_new0 (double, (gsize) rounds * N_LOADS);
  g_autofree double *ratio = g_new0 (double, rounds);
  g_autoptr (GString) list = g_string_new (NULL);
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < N_LOADS; k++) {
      v[k * rounds + r] = bench_items (sedp, url, requests, k < PB_1 ? clients : 1, formats[k],
                                       seconds, cpus);
      if (v[k * rounds + r] <= 0)
        return FALSE;
    }
    ratio[r] = v[JS_C * rounds + r] / v[PB_C * rounds + r];
    fprintf (stderr, "e2e: json round %d: at %d clients protobuf %.0f, json %.0f items/s (%.3f); at "
             "1 client protobuf %.0f, json %.0f\n", r + 1, clients, v[PB_C * rounds + r],
             v[JS_C * rounds + r], ratio[r], v[PB_1 * rounds + r], v[JS_1 * rounds + r]);
    g_string_append_printf (list, "%s%.3f", r ? "," : "", ratio[r]);
  }
  double m[N_LOADS];
  for (int k = 0; k < N_LOADS; k++)
    m[k] = median (v + k * rounds, rounds);
  last_pb_items = m[PB_C];
  last_json_items = m[JS_C];
  const char *l = label;
  printf ("RESULT %sjson_rounds=%d %sjson_round_s=%g %sjson_clients=%d %sjson_layout=%s\n", l, rounds,
          l, seconds, l, clients, l, cpus ? cpus : "any");
  printf ("RESULT %sjson_over_protobuf=%.3f\n", l, median (ratio, rounds));
  printf ("RESULT %sjson_over_protobuf_rounds=%s\n", l, list->str);
  printf ("RESULT %sprotobuf_items_per_s_c1=%.1f %sprotobuf_items_per_s_c%d=%.1f "
          "%sprotobuf_c%d_over_c1=%.2f\n", l, m[PB_1], l, clients, m[PB_C], l, clients,
          m[PB_C] / m[PB_1]);
  printf ("RESULT %sjson_items_per_s_c1=%.1f %sjson_items_per_s_c%d=%.1f %sjson_c%d_over_c1=%.2f\n",
          l, m[JS_1], l, clients, m[JS_C], l, clients, m[JS_C] / m[JS_1]);
  return TRUE;
}

int
main (int argc, char **argv)
{
  g_set_prgname ("e2e");
  gint concurrency = 8, parallelism = 0, reader_par = 0, items = 300, rounds = 7;
  g_autofree char *model_cpus_opt = NULL;
  gdouble duration = 60, model_seconds = 4, round_seconds = 8, json_seconds = 5;
  gint json_rounds_n = 5;
  gboolean json_only = FALSE, din = FALSE, model_api_only = FALSE;
  gint model_api_rounds_n = 5;
  const GOptionEntry entries[] = {
    {"din", 0, 0, G_OPTION_ARG_NONE, &din,
     "The DIN example (pipelines/ctr-din.pipeline, its dense model) instead; keys start with din_",
     NULL},
    {"concurrency", 'c', 0, G_OPTION_ARG_INT, &concurrency, "Clients (default 8)", "C"},
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &duration, "Seconds of load (default 60)", "S"},
    {"parallelism", 'p', 0, G_OPTION_ARG_INT, &parallelism,
     "Model stage workers in the served copy (default: the pipeline file's)", "P"},
    {"reader-parallelism", 0, 0, G_OPTION_ARG_INT, &reader_par,
     "Reader (protobuf decoding) stage workers in the served copy (default: the pipeline file's)", "R"},
    {"items", 0, 0, G_OPTION_ARG_INT, &items, "Items per request (default 300)", "M"},
    {"model-cpus", 0, 0, G_OPTION_ARG_STRING, &model_cpus_opt,
     "CPUs of the model stage and of the bare model; the server and the load generator get the "
     "others (default: the last CPU when there are two or more; 'none': no pinning)", "LIST|none"},
    {"model-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &model_seconds,
     "Seconds of sedp model bench per round (default 4)", "S"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Rounds of model, then served, load (default 7)", "N"},
    {"round-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &round_seconds,
     "Seconds of served load per round (default 8)", "S"},
    {"json-rounds", 0, 0, G_OPTION_ARG_INT, &json_rounds_n,
     "Rounds of JSON against protobuf (default 5; 0: none)", "N"},
    {"json-round-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &json_seconds,
     "Seconds of each load of a JSON round (default 5)", "S"},
    {"json-only", 0, 0, G_OPTION_ARG_NONE, &json_only, "Only the JSON rounds", NULL},
    {"model-api-rounds", 0, 0, G_OPTION_ARG_INT, &model_api_rounds_n,
     "Rounds of the model API against the native protocol (default 5; 0: none)", "N"},
    {"model-api-only", 0, 0, G_OPTION_ARG_NONE, &model_api_only, "Only the model API rounds", NULL},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— the CTR example over HTTP vs the bare model");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || rounds < 1 || rounds > 1000) {
    if (error == NULL)
      g_set_error (&error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--rounds: 1 to 1000");
    fprintf (stderr, "e2e: %s\n", error->message);
    return 2;
  }
  if (concurrency < 1 || duration <= 0 || parallelism < 0 || reader_par < 0 || items < 1 || model_seconds <= 0) {
    fprintf (stderr, "e2e: bad option value\n");
    return 2;
  }

  g_autofree char *build = NULL, *src = NULL, *sedp = NULL, *data = NULL;
  bench_paths (&build, &src, &sedp, &data);

  /* 1. the data (the DIN example's under DATA-din, where the rewritten paths point) */
  const char *name = din ? "ctr-din" : "ctr", *key = din ? "din_" : "";
  if (din)
    json_rounds_n = 0; /* the JSON figures are the CTR example's */
  if (!bench_prepare_example (src, data, (guint) items, din))
    return 1;
  g_autofree char *data_dir = din ? g_strconcat (data, "-din", NULL) : g_strdup (data);
  if (model_api_only)
    return model_api_rounds (sedp, data_dir, MAX (model_api_rounds_n, 1), json_seconds, median)
               ? 0 : 1;

  /* 2. the pipeline copy */
  g_autofree char *pl_file = g_strdup_printf ("%s.pipeline", name);
  g_autofree char *pl_src = g_build_filename (src, "pipelines", pl_file, NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (pl_src, &text, NULL, &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 1;
  }
  /* Core isolation: the model stage (and the bare model) on its own CPU(s), the server's other
   * threads and the load generator on the rest (docs/load-testing.md). */
  long n_cpus = sysconf (_SC_NPROCESSORS_ONLN);
  gint want_model = MAX (parallelism, 1);
  g_autofree char *model_cpus = NULL, *other_cpus = NULL;
  if (model_cpus_opt && strcmp (model_cpus_opt, "none") != 0) {
    model_cpus = g_strdup (model_cpus_opt);
  } else if (model_cpus_opt == NULL && n_cpus > want_model) {
    model_cpus = want_model == 1 ? g_strdup_printf ("%ld", n_cpus - 1)
                                 : g_strdup_printf ("%ld-%ld", n_cpus - want_model, n_cpus - 1);
  }
  if (model_cpus) {
    guint n_model = 0;
    g_autofree guint *mc = sedp_cpu_list_parse (model_cpus, &n_model, &error);
    if (mc == NULL || !sedp_cpu_list_check (mc, n_model, &error)) {
      fprintf (stderr, "e2e: --model-cpus: %s\n", error->message);
      return 2;
    }
    g_autofree guint *rest = g_new (guint, MAX (n_cpus, 1));
    guint n_rest = 0;
    for (long c = 0; c < n_cpus; c++) {
      gboolean taken = FALSE;
      for (guint k = 0; k < n_model; k++)
        taken |= mc[k] == (guint) c;
      if (!taken)
        rest[n_rest++] = (guint) c;
    }
    other_cpus = n_rest ? sedp_cpu_list_to_string (rest, n_rest) : NULL;
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
      if (in_model && model_cpus)
        g_string_append_printf (copy, "cpus = %s\n", model_cpus);
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
  if (in_model && model_cpus)
    g_string_append_printf (copy, "cpus = %s\n", model_cpus);
  if (in_reader && reader_par > 0)
    g_string_append_printf (copy, "parallelism = %d\n", reader_par);
  if (parallelism > 0)
    model_par = parallelism;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-e2e-XXXXXX", &error);
  if (tmp == NULL) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return 1;
  }
  g_autofree char *pl = g_build_filename (tmp, pl_file, NULL);
  g_file_set_contents (pl, copy->str, -1, NULL);
  g_string_free (copy, TRUE);
  fprintf (stderr, "e2e: model stage: batch %d rows (frame_rows, 1 frame per call), %d worker(s)\n",
           frame_rows, model_par);

  /* 3. the server */
  char *sargv[] = {sedp, "serve", pl, "--listen", "127.0.0.1:0", other_cpus ? "--cpus" : NULL, other_cpus, NULL};
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
      g_snprintf (url, sizeof url, "%s/v1/pipelines/%s:predict", p, name);
    }
    if (url[0] && strstr (line, "sedp serve: ready")) /* warmed up (the pipeline's warmup key) */
      break;
  }
  g_autofree char *req = NULL, *c_s = NULL, *d_s = NULL, *warm = NULL, *e2e = NULL, *dense = NULL, *b_s = NULL, *t_s = NULL, *s_s = NULL, *r_s = NULL;
  g_autofree double *ratios = NULL, *e2es = NULL, *models = NULL;
  g_autoptr (GString) list = NULL;
  int rc = 1;
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

  req = g_build_filename (data_dir, "requests.jsonl", NULL);
  c_s = g_strdup_printf ("%d", concurrency);
  d_s = g_strdup_printf ("%g", duration);
  char *wargv[] = {sedp, "bench", url, "--concurrency", c_s, "--duration", "3", "--requests", req,
                   "--format", "protobuf", "--quiet", other_cpus ? "--cpus" : NULL, other_cpus, NULL};
  warm = bench_run_capture (wargv);
  if (warm == NULL)
    goto out;
  if (json_only) {
    rc = json_rounds (sedp, url, req, concurrency, MAX (json_rounds_n, 1), json_seconds, other_cpus,
                      model_cpus ? "pinned_" : "") ? 0 : 1;
    goto out;
  }

  /* 4. The ratio, in rounds: the bare model for --model-seconds (the server idles meanwhile),
   * then the served pipeline for --round-seconds, --rounds times. The machine is shared and its
   * speed drifts by tens of percent within minutes; a ratio of two figures taken seconds apart
   * is stable where figures minutes apart are not, and the median of the rounds' ratios is what
   * is reported. */
  dense = g_build_filename (data_dir, "dense.onnx", NULL);
  b_s = g_strdup_printf ("%d", frame_rows);
  t_s = g_strdup_printf ("%d", model_par);
  s_s = g_strdup_printf ("%g", model_seconds);
  r_s = g_strdup_printf ("%g", round_seconds);
  ratios = g_new0 (double, rounds);
  e2es = g_new0 (double, rounds);
  models = g_new0 (double, rounds);
  list = g_string_new (NULL);
  for (int r = 0; r < rounds; r++) {
    char *margv[] = {sedp, "model", "bench", dense, "--batch", b_s, "--threads", t_s, "--seconds", s_s,
                     model_cpus ? "--cpus" : NULL, model_cpus, NULL};
    g_autofree char *m = bench_run_capture (margv);
    char *rargv[] = {sedp, "bench", url, "--concurrency", c_s, "--duration", r_s, "--requests", req,
                     "--format", "protobuf", "--quiet", other_cpus ? "--cpus" : NULL, other_cpus, NULL};
    g_autofree char *e = m ? bench_run_capture (rargv) : NULL;
    if (e == NULL)
      goto out;
    models[r] = bench_result_value (m, "rows_per_s");
    e2es[r] = bench_result_value (e, "items_per_s");
    ratios[r] = models[r] > 0 ? e2es[r] / models[r] : 0;
    fprintf (stderr, "e2e: round %d: model %.0f items/s, served %.0f items/s, ratio %.3f\n", r + 1,
             models[r], e2es[r], ratios[r]);
    g_string_append_printf (list, "%s%.3f", r ? "," : "", ratios[r]);
  }

  /* 5. The error check: one continuous run of --duration seconds at --concurrency. */
  char *bargv[] = {sedp, "bench", url, "--concurrency", c_s, "--duration", d_s, "--requests", req,
                   "--format", "protobuf", other_cpus ? "--cpus" : NULL, other_cpus, NULL};
  e2e = bench_run_capture (bargv);
  if (e2e == NULL)
    goto out;
  fputs (e2e, stderr);
  if (json_rounds_n > 0 && !json_rounds (sedp, url, req, concurrency, json_rounds_n, json_seconds,
                                         other_cpus, model_cpus ? "pinned_" : ""))
    goto out;
  kill (server, SIGTERM);
  waitpid (server, NULL, 0);
  server = 0;
  if (json_rounds_n > 0 && model_cpus && !json_default_layout (argv[0], json_rounds_n, json_seconds,
                                                               concurrency))
    goto out;

  char reader_s[16] = "file";
  if (reader_par > 0)
    g_snprintf (reader_s, sizeof reader_s, "%d", reader_par);
  printf ("RESULT e2e_concurrency=%d e2e_duration_s=%g rounds=%d round_s=%g model_s=%g model_batch=%d "
          "model_threads=%d reader_workers=%s model_cpus=%s other_cpus=%s\n", concurrency, duration,
          rounds, round_seconds, model_seconds, frame_rows, model_par, reader_s,
          model_cpus ? model_cpus : "any", other_cpus ? other_cpus : "any");
  printf ("RESULT %se2e_items_per_s=%.1f\n", key, median (e2es, rounds));
  printf ("RESULT %smodel_items_per_s=%.1f\n", key, median (models, rounds));
  printf ("RESULT %se2e_over_model=%.3f\n", key, median (ratios, rounds));
  printf ("RESULT %se2e_over_model_rounds=%s\n", key, list->str);
  printf ("RESULT %se2e_continuous_items_per_s=%.1f\n", key, bench_result_value (e2e, "items_per_s"));
  printf ("RESULT %se2e_p99_ms=%.3f\n", key, bench_result_value (e2e, "p99_ms"));
  printf ("RESULT %se2e_errors=%.0f\n", key, bench_result_value (e2e, "errors"));
  rc = din || model_api_rounds_n == 0 ||
               model_api_rounds (sedp, data_dir, model_api_rounds_n, json_seconds, median)
           ? 0 : 1;
out:
  if (server > 0) {
    kill (server, SIGTERM);
    waitpid (server, NULL, 0);
  }
  g_unlink (pl);
  g_rmdir (tmp);
  return rc;
}
