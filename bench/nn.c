/* bench/run nn — the dense engine against ONNX Runtime, and against OpenBLAS sgemm peak.
 *
 * For every synthetic architecture (`sedp model synth --preset realistic`), batch 1, 64, 256 and
 * 1024, threads 1 and 2: rows/s of `sedp model bench` (T threads, each running its own plan) and of
 * ONNX Runtime (tools/ort/ort-bench.js, onnxruntime-node: interOpNumThreads = 1, all graph
 * optimizations, sequential execution) on the same model file. ORT uses T threads both ways —
 * one session with intraOpNumThreads = T, and T single-threaded sessions in T processes at once
 * — and is credited with the better. The runs alternate so that all see the same machine
 * noise; each keeps its best run. Also single-threaded OpenBLAS sgemm peak
 * (square matrices, best of several), measured in this process before and after the models,
 * and sedp's GFLOP/s as a share of it.
 *
 * RESULT lines: <arch>_b<B>_t<T>_over_ort (sedp rows/s over ORT rows/s),
 * <arch>_b<B>_t<T>_sedp_rows_per_s, <arch>_b<B>_t<T>_ort_rows_per_s (and for T > 1 the two ways:
 * _ort_intra_rows_per_s, _ort_parallel_rows_per_s), min_over_ort_b64plus,
 * sgemm_peak_gflops, <arch>_b256_t1_gflops, <arch>_b256_t1_peak_share (mlp_b256_t1_peak_share:
 * the largest MLP), ort_call_overhead_us, attention_archs_min_over_ort (din and bst at batch ≥ 64)
 * and, for those, <arch>_b256_t1_unfused_rows_per_s and <arch>_fusion_gain (sedp with the
 * attention fusion off, SEDP_NN_NO_FUSE_ATTENTION=1, in the same alternation).
 * docs/conformance.md, "Benchmark method".
 *
 * Options: --seconds S (each timed run, default 1), --reps N (runs of each engine per
 * configuration, default 3), --arch A (repeatable), --keep DIR (keep the models there).
 * SEDP_BENCH_QUICK=1: one 0.3 s run each. Needs Node.js and onnxruntime-node
 * (tools/ort/ensure-deps.sh installs it into a cache folder). */
#include <cblas.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const all_archs[] = {"mlp",  "dlrm", "dcn", "deepfm", "mmoe", "wdl", "dcnv2",
                                        "dssm", "esmm", "ple", "din",    "dien", "bst",  NULL};
/* The architectures whose attention the plan fuses (their own target). */
static const char *const attention_archs[] = {"din", "bst", NULL};
static const int batches[] = {1, 64, 256, 1024};
static const int thread_counts[] = {1, 2};

static char *sedp_bin;
static char *tools_dir;
static char **child_env;

static G_NORETURN void
die (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("bench nn: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  exit (1);
}

/* ---- where things are ---- */

/* The build root (this program is BUILD/bench/sedp-bench-nn) and the source root (from meson's
 * introspection file BUILD/meson-info/meson-info.json). SEDP_BIN and SEDP_SOURCE_ROOT
 * override. */
static void
find_paths (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", &error);
  if (exe == NULL)
    die ("cannot find this program's path: %s", error->message);
  g_autofree char *bench_dir = g_path_get_dirname (exe);
  g_autofree char *build = g_path_get_dirname (bench_dir);

  const char *env_bin = g_getenv ("SEDP_BIN");
  sedp_bin = env_bin ? g_strdup (env_bin) : g_build_filename (build, "core", "sedp", NULL);
  if (!g_file_test (sedp_bin, G_FILE_TEST_IS_EXECUTABLE))
    die ("%s is not an executable (set SEDP_BIN)", sedp_bin);

  char *source = g_strdup (g_getenv ("SEDP_SOURCE_ROOT"));
  if (source == NULL) {
    g_autofree char *info = g_build_filename (build, "meson-info", "meson-info.json", NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    if (!json_parser_load_from_file (parser, info, &error))
      die ("cannot read %s: %s (set SEDP_SOURCE_ROOT)", info, error->message);
    JsonObject *root = json_node_get_object (json_parser_get_root (parser));
    JsonObject *dirs = root ? json_object_get_object_member (root, "directories") : NULL;
    if (dirs == NULL || !json_object_has_member (dirs, "source"))
      die ("%s has no directories.source (set SEDP_SOURCE_ROOT)", info);
    source = g_strdup (json_object_get_string_member (dirs, "source"));
  }
  tools_dir = g_build_filename (source, "tools", "ort", NULL);
  g_free (source);
}

/* ---- child processes ---- */

/* Runs @argv; returns its stdout, or dies with its stderr's tail. */
static char *
run_env (char **argv, const char *what, char **env)
{
  g_autoptr (GError) error = NULL;
  char *out = NULL, *err = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, argv, env, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &error))
    die ("%s: %s", what, error->message);
  if (!g_spawn_check_wait_status (status, NULL)) {
    fprintf (stderr, "%s", err ? err : "");
    g_autofree char *cmd = g_strjoinv (" ", argv);
    die ("%s failed: %s", what, cmd);
  }
  g_free (err);
  return out;
}

static char *
run (char **argv, const char *what)
{
  return run_env (argv, what, child_env);
}

/* The value of "RESULT @key=" (or "@key=" at a line start) in @text, or NAN. */
static double
result_value (const char *text, const char *key)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (char **l = lines; *l; l++) {
    const char *p = *l;
    if (g_str_has_prefix (p, "RESULT "))
      p += 7;
    size_t n = strlen (key);
    if (strncmp (p, key, n) == 0 && p[n] == '=')
      return g_ascii_strtod (p + n + 1, NULL);
  }
  return NAN;
}

/* sedp model bench's rows/s (and GFLOP/s); @unfused: with the attention fusion off. */
static double
sedp_rows_per_s (const char *model, int batch, int threads, double seconds, double *gflops,
                 gboolean unfused)
{
  g_autofree char *b = g_strdup_printf ("%d", batch), *t = g_strdup_printf ("%d", threads);
  char s[32];
  g_ascii_formatd (s, sizeof s, "%.2f", seconds);
  char *argv[] = {sedp_bin, "model", "bench", (char *) model, "--batch", b, "--threads", t,
                  "--seconds", s, NULL};
  g_auto (GStrv) env = g_environ_setenv (g_strdupv (child_env), "SEDP_NN_NO_FUSE_ATTENTION", "1", TRUE);
  g_autofree char *out = run_env (argv, "sedp model bench", unfused ? env : child_env);
  double v = result_value (out, "rows_per_s");
  *gflops = result_value (out, "gflops");
  if (isnan (v))
    die ("sedp model bench printed no rows_per_s:\n%s", out);
  return v;
}

/* ORT's rows/s with @threads threads: one session with intraOpNumThreads = @threads, or
 * (@parallel) @threads processes of one single-threaded session each. */
static double
ort_rows_per_s (const char *model, int batch, int threads, gboolean parallel, double seconds)
{
  g_autofree char *script = g_build_filename (tools_dir, "ort-bench.js", NULL);
  g_autofree char *b = g_strdup_printf ("%d", batch), *t = g_strdup_printf ("%d", threads);
  char s[32], w[32];
  g_ascii_formatd (s, sizeof s, "%.2f", seconds);
  g_ascii_formatd (w, sizeof w, "%.2f", MIN (0.5, seconds / 2));
  char *argv[] = {"node", script, (char *) model, "--batch", b, "--threads", t, "--seconds", s,
                  "--warmup", w, parallel ? "--parallel" : NULL, NULL};
  g_autofree char *out = run (argv, "ort-bench.js");
  double v = result_value (out, "rows_per_s");
  if (isnan (v))
    die ("ort-bench.js printed no rows_per_s:\n%s", out);
  return v;
}

/* ---- OpenBLAS sgemm peak ---- */

/* Best single-threaded sgemm GFLOP/s over square sizes, each repeated for about @seconds. */
static double
sgemm_peak (double seconds)
{
  static const int sizes[] = {1024, 1536, 2048};
  openblas_set_num_threads (1);
  double best = 0;
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++) {
    int n = sizes[k];
    gsize count = (gsize) n * n;
    float *a = g_malloc (count * sizeof (float)), *b = g_malloc (count * sizeof (float)),
          *c = g_malloc0 (count * sizeof (float));
    for (gsize i = 0; i < count; i++) {
      a[i] = (float) ((i * 7919) % 1000) / 1000.0f - 0.5f;
      b[i] = (float) ((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    double flops = 2.0 * n * n * (double) n;
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    gint64 start = g_get_monotonic_time ();
    for (int rep = 0; rep < 3 || (g_get_monotonic_time () - start) < seconds * 1e6; rep++) {
      gint64 t0 = g_get_monotonic_time ();
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
      double dt = (double) (g_get_monotonic_time () - t0) / 1e6;
      best = MAX (best, flops / dt / 1e9);
      if (rep > 50)
        break;
    }
    g_free (a);
    g_free (b);
    g_free (c);
  }
  return best;
}

/* ---- main ---- */

static gboolean
is_attention (const char *arch)
{
  return g_strv_contains (attention_archs, arch);
}

typedef struct {
  double sedp, sedp_gflops;
  double sedp_unfused;            /* attention archs, batch 256, 1 thread: the fusion off */
  double ort_intra, ort_parallel; /* best rows/s of each way ORT uses the threads */
  double ort;                     /* the better of the two */
} Measure;

/* Debian 12's OpenBLAS (0.3.21) does not know CPUs newer than itself (Emerald Rapids, model
 * 207, among them) and falls back to its Prescott (SSE3) kernels, a quarter of its speed on such
 * a CPU: the sgemm peak is OpenBLAS's own only with the kernels it would choose if it knew the
 * CPU. OPENBLAS_CORETYPE is read when the library loads, so the benchmark runs itself again with
 * it set (the sedp processes it starts inherit it). docs/models.md, "OpenBLAS on new CPUs". */
static void
blas_best_kernels (char **argv)
{
  if (g_getenv ("OPENBLAS_CORETYPE") || strcmp (openblas_get_corename (), "Prescott") != 0)
    return;
  __builtin_cpu_init ();
  const char *core = __builtin_cpu_supports ("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports ("avx2")  ? "Haswell"
                                                        : NULL;
  if (core == NULL)
    return;
  fprintf (stderr, "OpenBLAS chose its Prescott kernels on a CPU with %s: running again with "
           "OPENBLAS_CORETYPE=%s\n", strcmp (core, "SkylakeX") == 0 ? "AVX-512" : "AVX2", core);
  g_setenv ("OPENBLAS_CORETYPE", core, TRUE);
  execv ("/proc/self/exe", argv);
  die ("cannot run itself again: %s", g_strerror (errno));
}

int
main (int argc, char **argv)
{
  double seconds = 1.0;
  int reps = 3;
  char **archs_opt = NULL;
  char *keep = NULL;
  blas_best_kernels (argv);
  GOptionEntry entries[] = {
    {"seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "seconds of each timed run (default 1)", "S"},
    {"reps", 0, 0, G_OPTION_ARG_INT, &reps, "runs of each engine per configuration (default 3)", "N"},
    {"arch", 0, 0, G_OPTION_ARG_STRING_ARRAY, &archs_opt, "architecture (repeatable; default all)", "A"},
    {"keep", 0, 0, G_OPTION_ARG_FILENAME, &keep, "write the models into DIR and keep them", "DIR"},
    {NULL},
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— sedp's engine against ONNX Runtime");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("%s", error->message);
  if (g_strcmp0 (g_getenv ("SEDP_BENCH_QUICK"), "1") == 0) {
    seconds = 0.3;
    reps = 1;
  }
  if (reps < 1 || seconds <= 0)
    die ("--reps and --seconds must be positive");
  const char *const *archs = archs_opt ? (const char *const *) archs_opt : all_archs;

  find_paths ();

  /* onnxruntime-node: tools/ort/node_modules or the cache folder, on NODE_PATH. */
  child_env = g_get_environ ();
  {
    g_autofree char *script = g_build_filename (tools_dir, "ensure-deps.sh", NULL);
    char *argv_deps[] = {script, NULL};
    char *out = NULL;
    int status = 0;
    if (!g_spawn_sync (NULL, argv_deps, child_env, 0, NULL, NULL, &out, NULL, &status, &error) ||
        !g_spawn_check_wait_status (status, NULL))
      die ("ONNX Runtime is not available (tools/ort/ensure-deps.sh failed; it needs Node.js, npm "
           "and the npm registry or a filled cache)");
    g_strstrip (out);
    const char *old = g_environ_getenv (child_env, "NODE_PATH");
    g_autofree char *np = old && *old ? g_strconcat (out, ":", old, NULL) : g_strdup (out);
    child_env = g_environ_setenv (child_env, "NODE_PATH", np, TRUE);
    fprintf (stderr, "onnxruntime-node from %s\n", out);
    g_free (out);
  }

  g_autofree char *work = NULL;
  if (keep) {
    g_mkdir_with_parents (keep, 0755);
    work = g_strdup (keep);
  } else {
    work = g_dir_make_tmp ("sedp-bench-nn-XXXXXX", &error);
    if (work == NULL)
      die ("%s", error->message);
  }

  fprintf (stderr, "sgemm peak (OpenBLAS %s, 1 thread) …\n", openblas_get_corename ());
  double peak = sgemm_peak (g_strcmp0 (g_getenv ("SEDP_BENCH_QUICK"), "1") == 0 ? 0.3 : 1.5);
  fprintf (stderr, "  %.1f GFLOP/s\n", peak);

  {
    g_autofree char *script = g_build_filename (tools_dir, "ort-bench.js", NULL);
    char *argv_oh[] = {"node", script, "--overhead", "--seconds", "0.5", NULL};
    g_autofree char *out = run (argv_oh, "ort-bench.js --overhead");
    double oh = result_value (out, "call_overhead_us");
    printf ("RESULT ort_call_overhead_us=%.2f\n", oh);
  }

  guint n_archs = g_strv_length ((char **) archs);
  Measure *m = g_new0 (Measure, n_archs * G_N_ELEMENTS (batches) * G_N_ELEMENTS (thread_counts));
  double min_ratio = INFINITY, min_attention = INFINITY;
  for (guint ai = 0; ai < n_archs; ai++) {
    const char *arch = archs[ai];
    g_autofree char *model = g_strdup_printf ("%s/%s-realistic.onnx", work, arch);
    {
      char *argv_s[] = {sedp_bin, "model", "synth", "--arch", (char *) arch, "--seed", "1",
                        "--preset", "realistic", "-o", model, NULL};
      g_free (run (argv_s, "sedp model synth"));
    }
    for (guint bi = 0; bi < G_N_ELEMENTS (batches); bi++) {
      for (guint ti = 0; ti < G_N_ELEMENTS (thread_counts); ti++) {
        int batch = batches[bi], threads = thread_counts[ti];
        Measure *x = &m[(ai * G_N_ELEMENTS (batches) + bi) * G_N_ELEMENTS (thread_counts) + ti];
        /* Alternate the engines (and, with 2 threads, ORT's two ways of using them); the
         * order rotates between reps and configurations so that none always runs first after
         * a model switch. */
        gboolean fusion = is_attention (arch) && batch == 256 && threads == 1;
        int n_turns = threads > 1 || fusion ? 3 : 2;
        for (int r = 0; r < reps; r++) {
          for (int e = 0; e < n_turns; e++) {
            int turn = (e + r + bi + ti) % n_turns;
            if (turn == 0) {
              double gf = 0;
              double v = sedp_rows_per_s (model, batch, threads, seconds, &gf, FALSE);
              if (v > x->sedp) {
                x->sedp = v;
                x->sedp_gflops = gf;
              }
            } else if (turn == 2 && fusion) {
              double gf = 0;
              x->sedp_unfused = MAX (x->sedp_unfused,
                                     sedp_rows_per_s (model, batch, threads, seconds, &gf, TRUE));
            } else if (turn == 1) {
              x->ort_intra = MAX (x->ort_intra, ort_rows_per_s (model, batch, threads, FALSE, seconds));
            } else {
              x->ort_parallel = MAX (x->ort_parallel, ort_rows_per_s (model, batch, threads, TRUE, seconds));
            }
          }
        }
        x->ort = MAX (x->ort_intra, x->ort_parallel);
        double ratio = x->sedp / x->ort;
        if (batch >= 64)
          min_ratio = MIN (min_ratio, ratio);
        if (batch >= 64 && is_attention (arch))
          min_attention = MIN (min_attention, ratio);
        if (fusion) {
          printf ("RESULT %s_b256_t1_unfused_rows_per_s=%.0f\n", arch, x->sedp_unfused);
          printf ("RESULT %s_fusion_gain=%.3f\n", arch, x->sedp / x->sedp_unfused);
        }
        fprintf (stderr, "%-7s batch %3d threads %d: sedp %9.0f rows/s (%5.1f GFLOP/s), ort %9.0f rows/s "
                         "(intra-op %.0f, parallel %.0f), sedp/ort %.3f\n", arch, batch, threads, x->sedp,
                 x->sedp_gflops, x->ort, x->ort_intra, x->ort_parallel, ratio);
        printf ("RESULT %s_b%d_t%d_sedp_rows_per_s=%.0f\n", arch, batch, threads, x->sedp);
        printf ("RESULT %s_b%d_t%d_ort_rows_per_s=%.0f\n", arch, batch, threads, x->ort);
        if (threads > 1) {
          printf ("RESULT %s_b%d_t%d_ort_intra_rows_per_s=%.0f\n", arch, batch, threads, x->ort_intra);
          printf ("RESULT %s_b%d_t%d_ort_parallel_rows_per_s=%.0f\n", arch, batch, threads, x->ort_parallel);
        }
        printf ("RESULT %s_b%d_t%d_over_ort=%.3f\n", arch, batch, threads, ratio);
        fflush (stdout);
      }
    }
    if (!keep)
      g_unlink (model);
  }

  fprintf (stderr, "sgemm peak again …\n");
  double peak2 = sgemm_peak (g_strcmp0 (g_getenv ("SEDP_BENCH_QUICK"), "1") == 0 ? 0.3 : 1.5);
  fprintf (stderr, "  %.1f GFLOP/s\n", peak2);
  peak = MAX (peak, peak2);
  printf ("RESULT sgemm_peak_gflops=%.1f\n", peak);
  for (guint ai = 0; ai < n_archs; ai++) {
    /* batch 256 (index 2), threads 1 (index 0) */
    Measure *x = &m[(ai * G_N_ELEMENTS (batches) + 2) * G_N_ELEMENTS (thread_counts) + 0];
    printf ("RESULT %s_b256_t1_gflops=%.1f\n", archs[ai], x->sedp_gflops);
    printf ("RESULT %s_b256_t1_peak_share=%.3f\n", archs[ai], x->sedp_gflops / peak);
  }
  printf ("RESULT min_over_ort_b64plus=%.3f\n", min_ratio);
  if (isfinite (min_attention))
    printf ("RESULT attention_archs_min_over_ort=%.3f\n", min_attention);
  if (!keep)
    g_rmdir (work);
  g_free (m);
  return 0;
}
