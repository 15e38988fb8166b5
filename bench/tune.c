/* bench/run tune — `sedp tune` on the CTR example (docs/tuning.md#the-benchmark):
 * 1. prepares the CTR example (realistic preset, 64 requests of 300 items) once, under
 *    build-bench/e2e-data/ (shared with e2e, soak and refusal);
 * 2. the default configuration is bench/ctr-default.pipeline, a copy of pipelines/ctr.pipeline
 *    as it stood when this benchmark was written, its data paths pointed at step 1's copy;
 * 3. its capacity C in process: the highest open-loop rate whose p99 (from the scheduled send)
 *    stays within --slo-p99-ms (default 100) with under 1 % errors; the tune's rate is
 *    --load × C (default 0.7);
 * 4. `sedp tune` at that rate, --budget-evals N (default 40) candidates of --measure-s each,
 *    with CMA-ES (population) and with random search, --seeds S seeds each (default 3), the two
 *    methods alternating; each tune's result is its chosen candidate's CPU per request over its
 *    baseline's, both re-measured at the tune's end (1 when nothing beat the baseline); CMA-ES
 *    wins a seed when its ratio is lower than random search's with the same seed; the first
 *    CMA-ES tune's wall time is the whole tune's;
 * 5. the default and the CMA-ES tune of the lowest ratio in --rounds interleaved rounds (default 5;
 *    the order alternates), each a fresh pipeline measured as a candidate is (warm-up, then
 *    --round-s seconds at the tune's rate): the median of the rounds' CPU ratios, and each
 *    side's worst p99;
 * 6. both capacities again, interleaved (default, tuned, default, tuned): the ratio of the means.
 * RESULT keys: tune_default_capacity_rps, tune_rate_rps, tune_slo_p99_ms,
 * tune_{cmaes,random}_seed{N}_cpu_ratio, cmaes_wins_over_random (K/S), tune_wall_s,
 * tuned_cpu_over_default, tune_{default,tuned}_p99_ms, tune_{default,tuned}_capacity_rps,
 * tuned_capacity_over_default. */
#include "bench-common.h"
#include "bench-process.h"
#include "load/workload.h"
#include "tune/evaluate.h"

#include <json-glib/json-glib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *sedp, *src, *data, *tmp;
  char *default_path, *default_text, *requests;
  double slo_ms, load, measure_s, warmup_s, round_s, probe_s, rate;
  gint budget, seeds, rounds;
  char *compare; /* --compare: a tuned pipeline to compare, no tunes run */
  SedpRegistry *registry;
  SedpWorkload *workload;
} Bench;

/* ---- the example and the default configuration ---- */

/* Step 2: bench/ctr-default.pipeline with its data paths at @b->data, written to the tmp dir. */
static gboolean
write_default (Bench *b)
{
  g_autofree char *src = g_build_filename (b->src, "bench", "ctr-default.pipeline", NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (src, &text, NULL, &error)) {
    fprintf (stderr, "tune: %s\n", error->message);
    return FALSE;
  }
  g_auto (GStrv) parts = g_strsplit (text, "../examples/ctr/data", -1);
  b->default_text = g_strjoinv (b->data, parts);
  b->default_path = g_build_filename (b->tmp, "default.pipeline", NULL);
  b->requests = g_build_filename (b->data, "requests.jsonl", NULL);
  return g_file_set_contents (b->default_path, b->default_text, -1, NULL);
}

/* ---- measures in process ---- */

static void
measure_init (const Bench *b, SedpTuneMeasure *m, double rate, double seconds)
{
  sedp_tune_measure_init (m, b->registry, b->workload);
  m->rate = rate;
  m->warmup_s = b->warmup_s;
  m->duration_s = seconds;
}

/* The capacity of the pipeline @text (at @path), searched from @start req/s; 0 on failure. */
static double
capacity (const Bench *b, const char *text, const char *path, double start)
{
  SedpTuneMeasure m;
  measure_init (b, &m, start, b->probe_s);
  g_auto (SedpTuneResult) r = {0};
  g_autoptr (GError) error = NULL;
  if (!sedp_tune_find_capacity (&m, text, path, b->slo_ms, &r, &error) || !r.feasible) {
    fprintf (stderr, "tune: capacity of %s: %s\n", path, error ? error->message : r.reason);
    return 0;
  }
  fprintf (stderr, "tune: capacity of %s: %.1f req/s (p99 %.1f ms)%s%s\n", path, r.capacity_rps,
           r.p99_ms, r.first_error ? ": " : "", r.first_error ? r.first_error : "");
  return r.capacity_rps;
}

/* One round's measure of @text at the tune's rate; FALSE when it did not run. */
static gboolean
cpu_round (const Bench *b, const char *text, const char *path, SedpTuneResult *r)
{
  SedpTuneMeasure m;
  measure_init (b, &m, b->rate, b->round_s);
  g_autoptr (GError) error = NULL;
  double probe0 = bench_speed_probe_us ();
  if (!sedp_tune_evaluate (&m, text, path, r, &error) || !r->feasible) {
    fprintf (stderr, "tune: %s: %s\n", path, error ? error->message : r->reason);
    return FALSE;
  }
  double probe1 = bench_speed_probe_us ();
  fprintf (stderr, "tune: %s: cpu %.3f ms/req, p99 %.1f ms, %.4f errors (speed probe %.0f, %.0f us)\n",
           path, 1e3 * r->cpu_s_per_request, r->p99_ms, r->error_share, probe0, probe1);
  return TRUE;
}

/* ---- tunes (the command, as a user runs it) ---- */

typedef struct {
  double ratio;  /* the chosen candidate's re-measured CPU per request over its baseline's */
  double wall_s; /* the whole command */
  char *output;  /* the tuned pipeline */
} TuneRun;

/* The chosen candidate's ratio from the report at @path; -1 when unreadable. */
static double
report_ratio (const char *path)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  if (!json_parser_load_from_file (p, path, NULL))
    return -1;
  JsonObject *o = json_node_get_object (json_parser_get_root (p));
  JsonObject *c = o ? json_object_get_object_member (o, "chosen") : NULL;
  if (c == NULL || !json_object_get_boolean_member (c, "improved"))
    return c ? 1.0 : -1;
  double tuned = json_object_get_double_member (c, "median_cpu_s_per_request");
  double base = json_object_get_double_member (c, "baseline_median_cpu_s_per_request");
  return base > 0 ? tuned / base : -1;
}

/* `sedp tune` on the default configuration with @method and @seed. */
static gboolean
run_tune (const Bench *b, const char *method, guint seed, TuneRun *out)
{
  g_autofree char *rate = g_strdup_printf ("%.1f", b->rate);
  g_autofree char *slo = g_strdup_printf ("%g", b->slo_ms);
  g_autofree char *budget = g_strdup_printf ("%d", b->budget);
  g_autofree char *seed_s = g_strdup_printf ("%u", seed);
  g_autofree char *measure = g_strdup_printf ("%g", b->measure_s);
  g_autofree char *warmup = g_strdup_printf ("%g", b->warmup_s);
  g_autofree char *name = g_strdup_printf ("%s-%u", method, seed);
  out->output = g_strdup_printf ("%s/%s.pipeline", b->tmp, name);
  g_autofree char *report = g_strdup_printf ("%s/%s.json", b->tmp, name);
  char *argv[] = {b->sedp, "tune", b->default_path, "--requests", b->requests, "--rate", rate,
                  "--slo-p99-ms", slo, "--budget-evals", budget, "--seed", seed_s, "--method",
                  (char *) method, "--measure-s", measure, "--warmup-s", warmup, "-o", out->output,
                  "--report", report, "--quiet", NULL};
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *table = bench_run_capture (argv);
  out->wall_s = (g_get_monotonic_time () - t0) / 1e6;
  if (table == NULL)
    return FALSE;
  fputs (table, stderr);
  out->ratio = report_ratio (report);
  fprintf (stderr, "tune: %s seed %u: %.3f of its baseline's CPU per request, %.0f s\n", method,
           seed, out->ratio, out->wall_s);
  return out->ratio > 0;
}

/* Step 4: the two methods, seed by seed; @best gets the CMA-ES tune of the lowest ratio (its
 * output owned; the first on a tie), and the first CMA-ES tune's wall time is printed. */
static gboolean
compare_methods (const Bench *b, TuneRun *best)
{
  guint wins = 0;
  double first_wall_s = 0;
  for (gint s = 1; s <= b->seeds; s++) {
    TuneRun cma = {0}, rnd = {0};
    gboolean cma_first = s % 2 == 1, ok;
    ok = run_tune (b, cma_first ? "population" : "random", (guint) s, cma_first ? &cma : &rnd) &&
         run_tune (b, cma_first ? "random" : "population", (guint) s, cma_first ? &rnd : &cma);
    printf ("RESULT tune_cmaes_seed%d_cpu_ratio=%.4f\n", s, cma.ratio);
    printf ("RESULT tune_random_seed%d_cpu_ratio=%.4f\n", s, rnd.ratio);
    fflush (stdout);
    wins += ok && cma.ratio < rnd.ratio;
    g_free (rnd.output);
    first_wall_s = s == 1 ? cma.wall_s : first_wall_s;
    if (s == 1 || (ok && cma.ratio < best->ratio)) {
      g_free (best->output);
      *best = cma;
    } else
      g_free (cma.output);
    if (!ok)
      return FALSE;
  }
  printf ("RESULT cmaes_wins_over_random=%u/%d\n", wins, b->seeds);
  printf ("RESULT tune_wall_s=%.0f\n", first_wall_s);
  fprintf (stderr, "tune: the tuned pipeline compared below: %s (%.3f in its tune)\n", best->output,
           best->ratio);
  return TRUE;
}

/* ---- the tuned configuration against the default ---- */

/* Step 5: interleaved rounds of CPU per request at the tune's rate. */
static gboolean
compare_cpu (const Bench *b, const char *tuned_text, const char *tuned_path)
{
  g_autofree double *ratio = g_new (double, b->rounds);
  double p99[2] = {0, 0};
  for (gint i = 0; i < b->rounds; i++) {
    g_auto (SedpTuneResult) d = {0};
    g_auto (SedpTuneResult) t = {0};
    gboolean ok = i % 2 ? cpu_round (b, tuned_text, tuned_path, &t) &&
                            cpu_round (b, b->default_text, b->default_path, &d)
                        : cpu_round (b, b->default_text, b->default_path, &d) &&
                            cpu_round (b, tuned_text, tuned_path, &t);
    if (!ok)
      return FALSE;
    ratio[i] = t.cpu_s_per_request / d.cpu_s_per_request;
    p99[0] = MAX (p99[0], d.p99_ms);
    p99[1] = MAX (p99[1], t.p99_ms);
  }
  printf ("RESULT tuned_cpu_over_default=%.4f\n", bench_quantile (ratio, (guint) b->rounds, 0.5));
  printf ("RESULT tune_default_p99_ms=%.1f\n", p99[0]);
  printf ("RESULT tune_tuned_p99_ms=%.1f\n", p99[1]);
  fflush (stdout);
  return TRUE;
}

/* Step 6: the capacities, interleaved, twice each. */
static void
compare_capacity (const Bench *b, const char *tuned_text, const char *tuned_path, double c0)
{
  double d = 0, t = 0;
  for (guint i = 0; i < 2; i++) {
    d += capacity (b, b->default_text, b->default_path, c0);
    t += capacity (b, tuned_text, tuned_path, c0);
  }
  printf ("RESULT tune_default_capacity_again_rps=%.1f\n", d / 2);
  printf ("RESULT tune_tuned_capacity_rps=%.1f\n", t / 2);
  printf ("RESULT tuned_capacity_over_default=%.4f\n", d > 0 ? t / d : 0);
}

/* ---- main ---- */

static gboolean
parse_options (Bench *b, int argc, char **argv)
{
  *b = (Bench) {.slo_ms = 100, .load = 0.7, .measure_s = 2, .warmup_s = 1, .round_s = 5,
                .probe_s = 3, .budget = 40, .seeds = 3, .rounds = 5};
  GOptionEntry entries[] = {
    {"slo-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &b->slo_ms, "The p99 SLO, ms (default 100)", "MS"},
    {"load", 0, 0, G_OPTION_ARG_DOUBLE, &b->load, "The tune's rate as a share of the default's capacity (default 0.7)", "F"},
    {"budget-evals", 0, 0, G_OPTION_ARG_INT, &b->budget, "Candidates per tune (default 40)", "N"},
    {"seeds", 0, 0, G_OPTION_ARG_INT, &b->seeds, "Tunes per method (default 3)", "N"},
    {"measure-s", 0, 0, G_OPTION_ARG_DOUBLE, &b->measure_s, "Each candidate's measured seconds (default 2)", "S"},
    {"warmup-s", 0, 0, G_OPTION_ARG_DOUBLE, &b->warmup_s, "Each measure's warm-up seconds (default 1)", "S"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &b->rounds, "Interleaved rounds, tuned against default (default 5)", "N"},
    {"round-s", 0, 0, G_OPTION_ARG_DOUBLE, &b->round_s, "Seconds per round's measure (default 5)", "S"},
    {"probe-s", 0, 0, G_OPTION_ARG_DOUBLE, &b->probe_s, "Seconds per capacity probe (default 3)", "S"},
    {"compare", 0, 0, G_OPTION_ARG_FILENAME, &b->compare, "Run no tune: compare this pipeline (its data paths as the default's after step 2) with the default, steps 5 and 6", "FILE"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— sedp tune on the CTR example");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || b->budget < 1 || b->seeds < 1 ||
      b->rounds < 1 || !(b->load > 0) || !(b->slo_ms > 0)) {
    fprintf (stderr, "tune: %s\n", error ? error->message : "bad option value");
    return FALSE;
  }
  if (g_getenv ("SEDP_BENCH_QUICK"))
    b->budget = 4, b->seeds = 1, b->rounds = 2, b->measure_s = 0.5, b->warmup_s = 0.3,
    b->round_s = 1, b->probe_s = 1;
  return TRUE;
}

/* Steps 1-2 and the in-process registry and workload. */
static gboolean
setup (Bench *b)
{
  g_autofree char *build = NULL;
  bench_paths (&build, &b->src, &b->sedp, &b->data);
  g_autoptr (GError) error = NULL;
  b->tmp = g_dir_make_tmp ("sedp-tune-XXXXXX", &error);
  if (b->tmp == NULL || !bench_prepare_ctr (b->src, b->data, 300) || !write_default (b))
    return FALSE;
  g_auto (GStrv) path = sedp_registry_default_path ();
  b->registry = sedp_registry_new ((const char *const *) path);
  b->workload = sedp_workload_load (b->requests, SEDP_WORKLOAD_JSON, &error);
  if (b->workload == NULL)
    fprintf (stderr, "tune: %s\n", error->message);
  return b->workload != NULL;
}

int
main (int argc, char **argv)
{
  Bench b;
  if (!parse_options (&b, argc, argv))
    return 2;
  if (!setup (&b))
    return 1;
  double c = capacity (&b, b.default_text, b.default_path, 100);
  if (c <= 0)
    return 1;
  b.rate = b.load * c;
  printf ("RESULT tune_default_capacity_rps=%.1f\nRESULT tune_rate_rps=%.1f\n"
          "RESULT tune_slo_p99_ms=%g\n", c, b.rate, b.slo_ms);
  fflush (stdout);
  TuneRun first = {.output = g_strdup (b.compare), .ratio = 1};
  if (b.compare == NULL && !compare_methods (&b, &first))
    return 1;
  g_autofree char *tuned = NULL;
  if (!g_file_get_contents (first.output, &tuned, NULL, NULL) ||
      !compare_cpu (&b, tuned, first.output))
    return 1;
  compare_capacity (&b, tuned, first.output, c);
  g_free (first.output);
  /* the tmp dir (pipelines, reports, journals) is left for the reader: its path is on stderr */
  fprintf (stderr, "tune: the tunes' pipelines and reports are in %s\n", b.tmp);
  return 0;
}
