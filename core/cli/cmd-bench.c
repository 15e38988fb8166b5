/* sedp bench — load on a served pipeline (over HTTP) or a pipeline file (in process): a closed
 * loop, an open loop at a rate, a staircase of rates, or a capacity search under a p99 SLO. A
 * command line over the load generator of core/load; see docs/load-testing.md. */
#include "cli.h"
#include "../load/capacity.h"
#include "../load/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* The most rates of a staircase. */
#define MAX_STEPS 100

typedef enum { BENCH_CLOSED, BENCH_OPEN, BENCH_STEPS, BENCH_CAPACITY } BenchMode;

/* The options; a numeric option left at its sentinel (-1, NAN) was not given. */
typedef struct {
  char *cpus, *requests_path, *format, *rate_steps;
  gint concurrency, max_in_flight;
  gdouble duration, rate, slo_p99_ms;
  gint64 seed;
  gboolean find_capacity, quiet;
  BenchMode mode;
  GArray *steps; /* double: the staircase's rates */
  SedpWorkloadEncoding encoding;
} BenchOptions;

static void
bench_options_clear (BenchOptions *o)
{
  g_free (o->cpus);
  g_free (o->requests_path);
  g_free (o->format);
  g_free (o->rate_steps);
  g_clear_pointer (&o->steps, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (BenchOptions, bench_options_clear)

/* Prints "sedp bench: MESSAGE" (formatted) and returns FALSE. */
G_GNUC_PRINTF (1, 2) static gboolean
bench_error (const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *m = g_strdup_vprintf (format, ap);
  va_end (ap);
  sedp_cli_error ("bench", m);
  return FALSE;
}

/* ---- options ---- */

static gboolean
parse_options (BenchOptions *o, int *argc, char ***argv)
{
  const GOptionEntry entries[] = {
    {"cpus", 0, 0, G_OPTION_ARG_STRING, &o->cpus, "Run the load generator on these CPUs only (e.g. 0 or 0,2-3)", "LIST"},
    {"concurrency", 'c', 0, G_OPTION_ARG_INT, &o->concurrency, "Closed loop: clients, each with one request in flight (default 1; with --find-capacity: the estimate's clients, default 8)", "C"},
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &o->duration, "Seconds to keep sending (default 10); per step of --rate-steps and per probe of --find-capacity", "S"},
    {"rate", 0, 0, G_OPTION_ARG_DOUBLE, &o->rate, "Open loop: Poisson arrivals of R requests per second, latency from each request's scheduled send (with --find-capacity: the first rate probed)", "R"},
    {"rate-steps", 0, 0, G_OPTION_ARG_STRING, &o->rate_steps, "Open loop, a staircase: each rate for --duration seconds, a RESULT block per step (keys prefixed stepI_)", "R1,R2,…"},
    {"find-capacity", 0, 0, G_OPTION_ARG_NONE, &o->find_capacity, "Search the highest open-loop rate whose p99 stays within --slo-p99-ms and whose errors stay under 1 %", NULL},
    {"slo-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &o->slo_p99_ms, "With --find-capacity: the p99 latency to keep, in milliseconds", "S"},
    {"max-in-flight", 0, 0, G_OPTION_ARG_INT, &o->max_in_flight, "Open loop: the most requests in flight; one due beyond it is not sent and counts as an error (default 4096)", "N"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Open loop: the seed of the arrival times (default 1)", "N"},
    {"requests", 'r', 0, G_OPTION_ARG_FILENAME, &o->requests_path, "JSON Lines file of predict requests (the JSON of POST …:predict), sent in turn and cycled (default: one built-in request of 8 items)", "FILE"},
    {"format", 'f', 0, G_OPTION_ARG_STRING, &o->format, "Payload encoding: json (default) or protobuf (sedp's PredictRequest), or the model API's tfs (TF Serving REST JSON) or deeprec (DeepRec protobuf), one instance per item: use a /v1/models/NAME:predict URL", "json|protobuf|tfs|deeprec"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "No progress on stderr", NULL},
    G_OPTION_ENTRY_NULL,
  };
  return sedp_cli_parse (
    "bench", "URL|PIPELINE [--concurrency C | --rate R | --rate-steps R1,R2,… | --find-capacity --slo-p99-ms S]",
    "Load on URL, http://HOST:PORT/v1/pipelines/NAME:predict of a running sedp serve, or on a "
    "PIPELINE file driven in process. Closed loop (default): C clients each send a request, wait "
    "for the answer and send the next, for S seconds. Open loop (--rate): requests sent at Poisson "
    "arrivals of R per second whatever the answers, each latency counted from its scheduled send. "
    "Prints progress on stderr and RESULT lines on stdout: requests_per_s, items_per_s, p50_ms "
    "p90_ms p99_ms p999_ms, errors, … (see docs/load-testing.md).",
    entries, argc, argv);
}

/* --rate-steps: rates more than 0, separated by commas. */
static gboolean
parse_steps (BenchOptions *o)
{
  g_auto (GStrv) items = g_strsplit (o->rate_steps, ",", -1);
  o->steps = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint i = 0; items[i]; i++) {
    char *item = g_strstrip (items[i]), *end = NULL;
    double r = g_ascii_strtod (item, &end);
    if (*item == '\0' || *end != '\0' || !(r > 0 && r <= 1e6))
      return bench_error ("--rate-steps '%s': item %u ('%s') is not a rate (a number of requests per "
                          "second, more than 0 and at most 1000000); separate the rates with commas, "
                          "e.g. --rate-steps 100,200,400",
                          o->rate_steps, i + 1, item);
    g_array_append_val (o->steps, r);
  }
  if (o->steps->len <= MAX_STEPS)
    return TRUE;
  return bench_error ("--rate-steps: %u rates, at most %d (split the staircase into runs)",
                      o->steps->len, MAX_STEPS);
}

static gboolean
check_ranges (const BenchOptions *o)
{
  if (o->concurrency != -1 && (o->concurrency < 1 || o->concurrency > 100000))
    return bench_error ("--concurrency %d: must be from 1 to 100000", o->concurrency);
  if (!(o->duration > 0 && o->duration <= 86400))
    return bench_error ("--duration %g: must be more than 0 and at most 86400 seconds", o->duration);
  if (!isnan (o->rate) && !(o->rate > 0 && o->rate <= 1e6))
    return bench_error ("--rate %g: the rate must be more than 0 and at most 1000000 requests per "
                        "second, e.g. --rate 200",
                        o->rate);
  if (o->max_in_flight != -1 && (o->max_in_flight < 1 || o->max_in_flight > 1000000))
    return bench_error ("--max-in-flight %d: must be from 1 to 1000000", o->max_in_flight);
  if (o->seed < -1)
    return bench_error ("--seed %" G_GINT64_FORMAT ": must be 0 or more", o->seed);
  if (!isnan (o->slo_p99_ms) && !(o->slo_p99_ms > 0))
    return bench_error ("--slo-p99-ms %g: must be more than 0 milliseconds, e.g. --slo-p99-ms 50", o->slo_p99_ms);
  return TRUE;
}

/* The options that do not go together, and the mode they make. */
static gboolean
resolve_mode (BenchOptions *o)
{
  gboolean rate = !isnan (o->rate), steps = o->rate_steps != NULL;
  if (rate && steps)
    return bench_error ("--rate %g and --rate-steps %s do not go together: give one rate, or a staircase", o->rate, o->rate_steps);
  if (steps && o->find_capacity)
    return bench_error ("--rate-steps and --find-capacity do not go together: the search picks its own rates (start it from a rate with --rate R)");
  if (o->find_capacity && isnan (o->slo_p99_ms))
    return bench_error ("--find-capacity needs --slo-p99-ms S: the p99 latency, in milliseconds, that the capacity must keep (e.g. --slo-p99-ms 50)");
  if (!o->find_capacity && !isnan (o->slo_p99_ms))
    return bench_error ("--slo-p99-ms %g only applies with --find-capacity (add it, or drop --slo-p99-ms)", o->slo_p99_ms);
  if ((rate || steps) && !o->find_capacity && o->concurrency != -1)
    return bench_error ("--concurrency %d and --%s do not go together: --concurrency sets the clients of a closed loop, while --%s makes the load an open loop (arrivals at a rate, whatever the answers); bound its requests in flight with --max-in-flight N instead",
                        o->concurrency, rate ? "rate" : "rate-steps", rate ? "rate" : "rate-steps");
  o->mode = o->find_capacity ? BENCH_CAPACITY : steps ? BENCH_STEPS : rate ? BENCH_OPEN : BENCH_CLOSED;
  if (o->mode == BENCH_CLOSED && (o->max_in_flight != -1 || o->seed != -1))
    return bench_error ("--%s only applies to an open loop (--rate, --rate-steps or --find-capacity); the closed loop's bound is --concurrency",
                        o->max_in_flight != -1 ? "max-in-flight" : "seed");
  return !steps || parse_steps (o);
}

static gboolean
check_options (BenchOptions *o, int argc)
{
  if (argc != 2)
    return bench_error ("expected one URL or PIPELINE, got %d arguments (see --help)", argc - 1);
  if (!check_ranges (o) || !resolve_mode (o) || !sedp_cli_apply_cpus ("bench", o->cpus))
    return FALSE;
  static const char *const formats[] = {"json", "protobuf", "tfs", "deeprec", NULL};
  if (o->format && !g_strv_contains (formats, o->format))
    return bench_error ("--format '%s': must be json, protobuf, tfs or deeprec", o->format);
  o->encoding = SEDP_WORKLOAD_JSON;
  for (guint i = 0; o->format && formats[i]; i++)
    if (strcmp (o->format, formats[i]) == 0)
      o->encoding = (SedpWorkloadEncoding) i;
  return TRUE;
}

static void
make_config (const BenchOptions *o, SedpLoadgenConfig *c)
{
  sedp_loadgen_config_init (c);
  c->mode = o->mode == BENCH_CLOSED ? SEDP_LOADGEN_CLOSED : SEDP_LOADGEN_OPEN;
  c->duration_s = o->duration;
  if (o->concurrency != -1)
    c->concurrency = (guint) o->concurrency;
  else if (o->mode == BENCH_CAPACITY)
    c->concurrency = 8;
  c->rate = isnan (o->rate) ? 0 : o->rate;
  if (o->max_in_flight != -1)
    c->max_in_flight = (guint) o->max_in_flight;
  if (o->seed != -1)
    c->seed = (guint64) o->seed;
}

/* ---- the target ---- */

/* Each HTTP request in flight may hold a connection: the descriptor limit is raised to match. */
static void
raise_fd_limit (guint connections, gboolean quiet)
{
  struct rlimit rl;
  rlim_t needed = (rlim_t) connections + 64;
  if (getrlimit (RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= needed)
    return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? needed : MIN (needed, rl.rlim_max);
  if (setrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= needed)
    return;
  if (!quiet)
    fprintf (stderr, "sedp bench: %u connections need %lu file descriptors, but this process may "
             "open %lu (ulimit -n): requests beyond that fail as transport errors (raise ulimit -n "
             "or lower --max-in-flight)\n",
             connections, (unsigned long) needed, (unsigned long) rl.rlim_cur);
}

/* The pipeline of @path, started, and the registry of its plugins (which must outlive it). */
typedef struct {
  SedpRegistry *registry;
  SedpPipeline *pipeline;
} BenchPipeline;

static void
bench_pipeline_clear (BenchPipeline *b)
{
  g_clear_pointer (&b->pipeline, sedp_pipeline_free);
  g_clear_pointer (&b->registry, sedp_registry_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (BenchPipeline, bench_pipeline_clear)

/* Loads and starts the pipeline of file @path into @b; FALSE after printing why. */
static gboolean
start_pipeline (const char *path, BenchPipeline *b)
{
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) dirs = sedp_registry_default_path ();
  b->registry = sedp_registry_new ((const char *const *) dirs);
  SedpGraph *graph = sedp_graph_load (path, b->registry, &error);
  b->pipeline = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (b->pipeline && sedp_pipeline_start (b->pipeline, &error))
    return TRUE;
  return bench_error ("%s", error->message);
}

/* The generator for @target: a URL, or a pipeline file started into @b. NULL after printing why,
 * with *@rc the exit status. */
static SedpLoadgen *
make_generator (const char *target, SedpWorkload *w, const SedpLoadgenConfig *c,
                const BenchOptions *o, BenchPipeline *b, int *rc)
{
  g_autoptr (GError) error = NULL;
  if (g_str_has_prefix (target, "http://") || g_str_has_prefix (target, "https://")) {
    SedpLoadgen *gen = sedp_loadgen_new_http (target, w, &error);
    *rc = 2;
    if (gen == NULL)
      bench_error ("%s", error->message);
    else
      raise_fd_limit (c->mode == SEDP_LOADGEN_OPEN ? c->max_in_flight : c->concurrency, o->quiet);
    return gen;
  }
  *rc = 2;
  if (o->encoding == SEDP_WORKLOAD_TFS || o->encoding == SEDP_WORKLOAD_DEEPREC) {
    bench_error ("--format %s is the model API's (docs/compat.md): load a running sedp serve "
                 "at http://HOST:PORT/v1/models/NAME:predict, not the pipeline file %s",
                 o->format, target);
    return NULL;
  }
  *rc = 1;
  return start_pipeline (target, b) ? sedp_loadgen_new_pipeline (b->pipeline, w) : NULL;
}

/* ---- progress and results ---- */

typedef struct {
  guint64 last_ok, last_items;
} BenchProgress;

static void
on_progress (const SedpLoadgenProgress *p, gpointer data)
{
  BenchProgress *b = data;
  fprintf (stderr, "sedp bench: %5.1f s  %" G_GUINT64_FORMAT " requests (%" G_GUINT64_FORMAT
           "/s, %" G_GUINT64_FORMAT " items/s)  %" G_GUINT64_FORMAT " errors  %u in flight\n",
           p->elapsed_s, p->ok, p->ok - b->last_ok, p->items - b->last_items, p->errors, p->in_flight);
  b->last_ok = p->ok;
  b->last_items = p->items;
}

static void
print_done (const SedpLoadgenResults *r, gboolean quiet)
{
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (r);
  const char *first = sedp_loadgen_results_get_first_error (r);
  if (!quiet)
    fprintf (stderr, "sedp bench: %5.1f s  %" G_GUINT64_FORMAT " requests  %" G_GUINT64_FORMAT
             " errors  (done)\n", c->wall_s, c->ok, sedp_loadgen_results_get_errors (r));
  if (first)
    fprintf (stderr, "sedp bench: first error: %s\n", first);
}

static void
print_results (const SedpLoadgenResults *r, const char *prefix)
{
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_loadgen_results_format (r, prefix, out);
  fputs (out->str, stdout);
  fflush (stdout);
}

/* ---- the modes ---- */

static int
run_once (SedpLoadgen *gen, const SedpLoadgenConfig *c, const BenchOptions *o, const char *prefix)
{
  g_autoptr (GError) error = NULL;
  BenchProgress progress = {0};
  SedpLoadgenConfig cfg = *c;
  cfg.progress = o->quiet ? NULL : on_progress;
  cfg.progress_data = &progress;
  g_autoptr (SedpLoadgenResults) r = sedp_loadgen_run (gen, &cfg, &error);
  if (r == NULL) {
    bench_error ("%s", error->message);
    return 1;
  }
  print_done (r, o->quiet);
  print_results (r, prefix);
  return 0;
}

static void
print_open_header (const SedpLoadgenConfig *c)
{
  printf ("RESULT seed=%" G_GUINT64_FORMAT " max_in_flight=%u\n", c->seed, c->max_in_flight);
}

static int
run_steps (SedpLoadgen *gen, const SedpLoadgenConfig *c, const BenchOptions *o)
{
  printf ("RESULT steps=%u\n", o->steps->len);
  print_open_header (c);
  for (guint i = 0; i < o->steps->len; i++) {
    SedpLoadgenConfig step = *c;
    step.rate = g_array_index (o->steps, double, i);
    g_autofree char *prefix = g_strdup_printf ("step%u_", i + 1);
    if (!o->quiet)
      fprintf (stderr, "sedp bench: step %u of %u: %g requests/s for %g s\n", i + 1,
               o->steps->len, step.rate, step.duration_s);
    int rc = run_once (gen, &step, o, prefix);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static void
on_probe (guint probe, double rate, const SedpLoadgenResults *r, gboolean pass, gpointer data)
{
  (void) data;
  fprintf (stderr, "sedp bench: probe %u: %.1f requests/s (offered %.1f): p99 %.3f ms, %.2f %% errors: %s\n",
           probe, rate, sedp_loadgen_results_get_offered_rps (r), sedp_loadgen_results_get_latency_ms (r, 0.99),
           100 * sedp_loadgen_results_get_error_share (r),
           pass ? "within the SLO" : "over the SLO");
}

static void
print_capacity (const SedpLoadgenCapacity *cap, const SedpLoadgenSearch *s)
{
  printf ("RESULT slo_p99_ms=%g capacity_probes=%u capacity_estimate_rps=%.1f capacity_lowest_failing_rps=%.1f\n",
          s->slo_p99_ms, cap->probes, cap->estimate_rps, cap->lowest_failing_rps);
  printf ("RESULT capacity_rps=%.1f\n", cap->capacity_rps);
  if (cap->results)
    print_results (cap->results, "capacity_");
  fflush (stdout);
}

static int
run_capacity (SedpLoadgen *gen, const SedpLoadgenConfig *c, const BenchOptions *o)
{
  SedpLoadgenSearch s;
  sedp_loadgen_search_init (&s);
  s.slo_p99_ms = o->slo_p99_ms;
  s.start_rate = isnan (o->rate) ? 0 : o->rate;
  s.probe = o->quiet ? NULL : on_probe;
  if (!o->quiet && s.start_rate == 0)
    fprintf (stderr, "sedp bench: estimating the capacity with a closed loop of %u clients for %g s\n",
             c->concurrency, c->duration_s);
  print_open_header (c);
  g_autoptr (GError) error = NULL;
  SedpLoadgenCapacity cap;
  gboolean ok = sedp_loadgen_find_capacity (gen, c, &s, &cap, &error);
  print_capacity (&cap, &s);
  sedp_loadgen_capacity_clear (&cap);
  if (!ok)
    bench_error ("%s", error->message);
  return ok ? 0 : 1;
}

static int
run_mode (SedpLoadgen *gen, const SedpLoadgenConfig *c, const BenchOptions *o)
{
  switch (o->mode) {
  case BENCH_STEPS:
    return run_steps (gen, c, o);
  case BENCH_CAPACITY:
    return run_capacity (gen, c, o);
  case BENCH_OPEN:
    print_open_header (c);
    return run_once (gen, c, o, "");
  default:
    return run_once (gen, c, o, "");
  }
}

int
sedp_cmd_bench (int argc, char **argv)
{
  g_auto (BenchOptions) o = {.concurrency = -1, .max_in_flight = -1, .duration = 10,
                             .rate = NAN, .slo_p99_ms = NAN, .seed = -1};
  if (!parse_options (&o, &argc, &argv) || !check_options (&o, argc))
    return 2;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (o.requests_path, o.encoding, &error);
  if (w == NULL) {
    bench_error ("%s", error->message);
    return g_error_matches (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD) ? 2 : 1;
  }
  SedpLoadgenConfig c;
  make_config (&o, &c);
  g_auto (BenchPipeline) pipeline = {0};
  int rc;
  SedpLoadgen *gen = make_generator (argv[1], w, &c, &o, &pipeline, &rc);
  if (gen)
    rc = run_mode (gen, &c, &o);
  sedp_loadgen_free (gen);
  return rc;
}
