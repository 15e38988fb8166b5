/* sedp — the evaluator of `sedp tune` (see evaluate.h): a candidate pipeline started from its
 * text, driven in process by the load generator in an open loop, and its CPU time, latency and
 * errors measured; and the check, before a tune, that the unmodified pipeline answers every
 * request of the workload. */
#define _GNU_SOURCE /* RUSAGE_THREAD */

#include "evaluate.h"
#include "../dsl/keys.h"
#include "../load/capacity.h"
#include "../runtime/metrics.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>

/* The most requests the workload check keeps in flight. */
#define CHECK_IN_FLIGHT 64
/* The most repeats of one candidate. */
#define MAX_REPEATS 100

G_DEFINE_QUARK (sedp-tune-eval-error-quark, sedp_tune_eval_error)

/* ---- settings ---- */

void
sedp_tune_measure_init (SedpTuneMeasure *m, SedpRegistry *registry, SedpWorkload *workload)
{
  g_return_if_fail (m != NULL);
  *m = (SedpTuneMeasure) {.registry = registry, .workload = workload, .rate = 100,
                          .warmup_s = 1, .duration_s = 5, .seed = 1,
                          .max_in_flight = SEDP_LOADGEN_DEFAULT_MAX_IN_FLIGHT};
}

static char *
settings_why (const SedpTuneMeasure *m)
{
  if (m->registry == NULL || m->workload == NULL)
    return g_strdup_printf ("no %s: set it with sedp_tune_measure_init()",
                            m->registry == NULL ? "registry" : "workload");
  if (!(m->rate > 0 && m->rate <= 1e6))
    return g_strdup_printf ("rate %g: must be more than 0 and at most 1000000 requests per second",
                            m->rate);
  if (!(m->warmup_s >= 0 && m->warmup_s <= 3600))
    return g_strdup_printf ("warmup_s %g: must be from 0 to 3600 seconds", m->warmup_s);
  if (!(m->duration_s > 0 && m->duration_s <= 86400))
    return g_strdup_printf ("duration_s %g: must be more than 0 and at most 86400 seconds",
                            m->duration_s);
  if (m->max_in_flight < 1 || m->max_in_flight > 1000000)
    return g_strdup_printf ("max_in_flight %u: must be from 1 to 1000000", m->max_in_flight);
  return NULL;
}

gboolean
sedp_tune_measure_check (const SedpTuneMeasure *m, GError **error)
{
  g_return_val_if_fail (m != NULL, FALSE);
  g_autofree char *why = settings_why (m);
  if (why == NULL)
    return TRUE;
  g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_SETTINGS,
               "cannot measure candidates: %s", why);
  return FALSE;
}

/* ---- results ---- */

void
sedp_tune_result_clear (SedpTuneResult *r)
{
  g_return_if_fail (r != NULL);
  g_free (r->reason);
  g_free (r->first_error);
  memset (r, 0, sizeof *r);
}

void
sedp_tune_repeated_clear (SedpTuneRepeated *out)
{
  g_return_if_fail (out != NULL);
  for (guint i = 0; i < out->n_repeats; i++)
    sedp_tune_result_clear (&out->results[i]);
  g_free (out->results);
  g_free (out->reason);
  memset (out, 0, sizeof *out);
}

/* ---- a candidate, started ---- */

/* The workload's requests travel as payloads, which only data_reader decodes. */
static gboolean
check_source (const SedpGraph *graph, const char *path, GError **error)
{
  const SedpGraphNode *source = &graph->nodes[graph->source];
  if (strcmp (source->plugin->name, "data_reader") == 0)
    return TRUE;
  g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_BASELINE,
               "%s: the source stage '%s' is plugin '%s', but the tuner sends the workload's "
               "PredictRequests as payloads, which only plugin 'data_reader' decodes (make a "
               "data_reader stage the source)", path, source->spec->name, source->plugin->name);
  return FALSE;
}

/* Parses, compiles, creates and starts the pipeline of @text, with its requests' deadline
 * @deadline_ms when not 0 (else as written); NULL with @error on the way. */
static SedpPipeline *
start_pipeline (SedpRegistry *registry, const char *text, const char *path, guint deadline_ms,
                GError **error)
{
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), path, error);
  if (spec && deadline_ms)
    spec->deadline_ms = deadline_ms;
  SedpGraph *graph = spec ? sedp_graph_compile (spec, registry, error) : NULL;
  if (graph && !check_source (graph, path, error))
    g_clear_pointer (&graph, sedp_graph_free);
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, error) : NULL;
  if (p && !sedp_pipeline_start (p, error))
    g_clear_pointer (&p, sedp_pipeline_free);
  return p;
}

/* ---- CPU time ---- */

typedef struct {
  double process_s; /* every thread of the process, RUSAGE_SELF */
  double thread_s;  /* the calling thread (the load generator's), RUSAGE_THREAD */
} CpuTimes;

static double
rusage_seconds (const struct rusage *ru)
{
  return (double) ru->ru_utime.tv_sec + (double) ru->ru_utime.tv_usec / 1e6
         + (double) ru->ru_stime.tv_sec + (double) ru->ru_stime.tv_usec / 1e6;
}

static gboolean
cpu_times_read (CpuTimes *t, GError **error)
{
  struct rusage self, thread;
  if (getrusage (RUSAGE_SELF, &self) == 0 && getrusage (RUSAGE_THREAD, &thread) == 0) {
    t->process_s = rusage_seconds (&self);
    t->thread_s = rusage_seconds (&thread);
    return TRUE;
  }
  int e = errno;
  g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_SYSTEM,
               "cannot measure a candidate's CPU time: getrusage: %s (the kernel must support "
               "RUSAGE_THREAD, Linux 2.6.26 or later)", g_strerror (e));
  return FALSE;
}

/* ---- measuring ---- */

static void
open_loop (const SedpTuneMeasure *m, double duration_s, SedpLoadgenConfig *c)
{
  sedp_loadgen_config_init (c);
  c->mode = SEDP_LOADGEN_OPEN;
  c->rate = m->rate;
  c->duration_s = duration_s;
  c->seed = m->seed;
  c->max_in_flight = m->max_in_flight;
}

/* Fills @r from a measured run and the CPU times around it. */
static void
fill_result (SedpTuneResult *r, const SedpLoadgenResults *res, const CpuTimes *before,
             const CpuTimes *after)
{
  const SedpLoadgenCounts *c = sedp_loadgen_results_get_counts (res);
  r->loadgen_cpu_s = after->thread_s - before->thread_s;
  r->cpu_s = MAX (0.0, after->process_s - before->process_s - r->loadgen_cpu_s);
  r->arrivals = c->arrivals;
  r->answered = c->ok;
  r->errors = sedp_loadgen_results_get_errors (res);
  r->error_share = sedp_loadgen_results_get_error_share (res);
  r->measured_s = c->wall_s;
  r->answered_per_s = sedp_loadgen_results_get_requests_per_s (res);
  r->cpu_s_per_request = c->ok > 0 ? r->cpu_s / (double) c->ok : INFINITY;
  r->p50_ms = sedp_loadgen_results_get_latency_ms (res, 0.5);
  r->p99_ms = sedp_loadgen_results_get_latency_ms (res, 0.99);
  r->first_error = g_strdup (sedp_loadgen_results_get_first_error (res));
}

/* The sum of @p's degraded counters now (sedp_stage_context_add_degraded_counter()). */
static guint64
degraded_now (SedpPipeline *p)
{
  return sedp_metrics_get_degraded (sedp_pipeline_get_metrics (p));
}

/* The measured window of @p: the CPU time read right around the run, on the run's thread. */
static gboolean
measure_window (const SedpTuneMeasure *m, SedpPipeline *p, SedpLoadgen *gen, SedpTuneResult *r,
                GError **error)
{
  SedpLoadgenConfig c;
  CpuTimes before, after;
  open_loop (m, m->duration_s, &c);
  guint64 degraded = degraded_now (p);
  if (!cpu_times_read (&before, error))
    return FALSE;
  g_autoptr (SedpLoadgenResults) res = sedp_loadgen_run (gen, &c, error);
  if (res == NULL || !cpu_times_read (&after, error))
    return FALSE;
  fill_result (r, res, &before, &after);
  r->degraded = degraded_now (p) - degraded;
  return TRUE;
}

/* Warm-up (when asked for), then the measured window, on the started pipeline @p. */
static gboolean
drive (const SedpTuneMeasure *m, SedpPipeline *p, double slo_p99_ms, SedpTuneResult *r,
       GError **error)
{
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_pipeline (p, m->workload);
  if (m->warmup_s > 0) {
    SedpLoadgenConfig c;
    open_loop (m, m->warmup_s, &c);
    g_autoptr (SedpLoadgenResults) warm = sedp_loadgen_run (gen, &c, error);
    if (warm == NULL)
      return FALSE;
  }
  return measure_window (m, p, gen, r, error);
}

/* How a started candidate is driven: drive() or search_capacity(); @slo_p99_ms for the latter. */
typedef gboolean (*DriveFunc) (const SedpTuneMeasure *m, SedpPipeline *p, double slo_p99_ms,
                               SedpTuneResult *r, GError **error);

/* Builds and starts @text, drives it with @fn and stops it: the two evaluations' frame. */
static gboolean
run_candidate (const SedpTuneMeasure *m, const char *text, const char *path, DriveFunc fn,
               double slo_p99_ms, SedpTuneResult *result, GError **error)
{
  memset (result, 0, sizeof *result);
  if (!sedp_tune_measure_check (m, error))
    return FALSE;
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GError) why = NULL;
  SedpPipeline *p = start_pipeline (m->registry, text, path, 0, &why);
  gboolean ok = TRUE;
  if (p == NULL)
    result->reason = g_strdup (why->message);
  else {
    result->feasible = TRUE;
    result->threads = sedp_pipeline_get_n_threads (p);
    ok = fn (m, p, slo_p99_ms, result, error);
    sedp_pipeline_free (p);
  }
  result->wall_s = (double) (g_get_monotonic_time () - t0) / 1e6;
  if (!ok)
    sedp_tune_result_clear (result);
  return ok;
}

gboolean
sedp_tune_evaluate (const SedpTuneMeasure *m, const char *text, const char *path,
                    SedpTuneResult *result, GError **error)
{
  g_return_val_if_fail (m != NULL && text != NULL && path != NULL && result != NULL, FALSE);
  return run_candidate (m, text, path, drive, 0, result, error);
}

/* ---- capacity ---- */

/* What the capacity search's hooks see: the pipeline and its degraded sum after the last
 * probe. */
typedef struct {
  SedpPipeline *p;
  guint64 degraded;
} ProbeWatch;

char *
sedp_tune_degraded_reason (guint64 rose)
{
  return g_strdup_printf ("the pipeline's degraded counters rose by %" G_GUINT64_FORMAT
                          " (answers given with stand-ins, such as lookups answered with default "
                          "values or candidates shed under load)", rose);
}

/* The search's accept hook: a probe during which answers were degraded does not pass. */
static char *
accept_undegraded (const SedpLoadgenResults *results, gpointer data)
{
  ProbeWatch *w = data;
  guint64 rose = degraded_now (w->p) - w->degraded;
  return rose ? sedp_tune_degraded_reason (rose) : NULL;
}

/* The search's probe hook: the degraded sum is taken after every probe. */
static void
probe_done (guint probe, double rate, const SedpLoadgenResults *results, gboolean pass,
            gpointer data)
{
  ProbeWatch *w = data;
  w->degraded = degraded_now (w->p);
}

/* The capacity search on the started pipeline @p, after the warm-up. */
static gboolean
search_capacity (const SedpTuneMeasure *m, SedpPipeline *p, double slo_p99_ms,
                 SedpTuneResult *r, GError **error)
{
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_pipeline (p, m->workload);
  SedpLoadgenConfig c;
  if (m->warmup_s > 0) {
    open_loop (m, m->warmup_s, &c);
    g_autoptr (SedpLoadgenResults) warm = sedp_loadgen_run (gen, &c, error);
    if (warm == NULL)
      return FALSE;
  }
  open_loop (m, m->duration_s, &c);
  SedpLoadgenSearch search;
  sedp_loadgen_search_init (&search);
  search.slo_p99_ms = slo_p99_ms;
  search.start_rate = m->rate;
  search.max_probes = 12;
  ProbeWatch watch = {.p = p, .degraded = degraded_now (p)};
  search.accept = accept_undegraded;
  search.probe = probe_done;
  search.accept_data = search.probe_data = &watch;
  SedpLoadgenCapacity cap = {0};
  g_autoptr (GError) none = NULL;
  gboolean ok = sedp_loadgen_find_capacity (gen, &c, &search, &cap, &none);
  if (!ok && !g_error_matches (none, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_NO_CAPACITY)) {
    g_propagate_error (error, g_steal_pointer (&none));
    sedp_loadgen_capacity_clear (&cap);
    return FALSE;
  }
  CpuTimes zero = {0};
  if (cap.results)
    fill_result (r, cap.results, &zero, &zero);
  r->cpu_s = r->loadgen_cpu_s = r->cpu_s_per_request = NAN;
  r->capacity_rps = ok ? cap.capacity_rps : 0;
  if (!ok)
    r->first_error = g_strdup (none->message);
  sedp_loadgen_capacity_clear (&cap);
  return TRUE;
}

gboolean
sedp_tune_find_capacity (const SedpTuneMeasure *m, const char *text, const char *path,
                         double slo_p99_ms, SedpTuneResult *result, GError **error)
{
  g_return_val_if_fail (m != NULL && text != NULL && path != NULL && result != NULL, FALSE);
  if (!(slo_p99_ms > 0)) {
    memset (result, 0, sizeof *result);
    g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_SETTINGS,
                 "cannot search the capacity of %s: the p99 SLO is %g ms; it must be more "
                 "than 0", path, slo_p99_ms);
    return FALSE;
  }
  return run_candidate (m, text, path, search_capacity, slo_p99_ms, result, error);
}

/* ---- repeats ---- */

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The median of @v's @n values (the mean of the middle two for an even count; NaN for none);
 * sorts @v. */
static double
median (double *v, guint n)
{
  if (n == 0)
    return NAN;
  qsort (v, n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median CPU per request and capacity, the worst p99 and error share of @out's (feasible)
 * repeats. */
static void
summarize (SedpTuneRepeated *out)
{
  guint n = out->n_repeats;
  g_autofree double *cpu = g_new (double, n + 1), *capacity = g_new (double, n + 1);
  for (guint i = 0; i < n; i++) {
    const SedpTuneResult *r = &out->results[i];
    cpu[i] = r->cpu_s_per_request;
    capacity[i] = r->capacity_rps;
    out->worst_p99_ms = MAX (out->worst_p99_ms, r->p99_ms);
    out->worst_error_share = MAX (out->worst_error_share, r->error_share);
    out->worst_degraded = MAX (out->worst_degraded, r->degraded);
  }
  out->median_cpu_s_per_request = median (cpu, n);
  out->median_capacity_rps = median (capacity, n);
}

/* Checks @rounds; FALSE with @error naming @path when a field is out of range. */
static gboolean
check_rounds (const SedpTuneRounds *rounds, const char *path, GError **error)
{
  if (!(rounds->capacity_slo_p99_ms >= 0)) {
    g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_SETTINGS,
                 "cannot measure candidate %s: capacity_slo_p99_ms %g: must be 0 (no capacity "
                 "search) or more", path, rounds->capacity_slo_p99_ms);
    return FALSE;
  }
  if (rounds->repeats >= 1 && rounds->repeats <= MAX_REPEATS)
    return TRUE;
  g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_SETTINGS,
               "cannot measure candidate %s: repeats %u: must be from 1 to %d", path,
               rounds->repeats, MAX_REPEATS);
  return FALSE;
}

/* One more repeat of @text into @out (room for it allocated), unless @out is already
 * infeasible: sedp_tune_evaluate(), or sedp_tune_find_capacity() as @rounds asks; FALSE with
 * @error when the measure fails. */
static gboolean
repeat_once (const SedpTuneMeasure *m, const char *text, const char *path,
             const SedpTuneRounds *rounds, SedpTuneRepeated *out, GError **error)
{
  if (!out->feasible)
    return TRUE;
  SedpTuneResult *r = &out->results[out->n_repeats];
  double slo = rounds->capacity_slo_p99_ms;
  if (slo > 0 ? !sedp_tune_find_capacity (m, text, path, slo, r, error)
              : !sedp_tune_evaluate (m, text, path, r, error))
    return FALSE;
  out->n_repeats++;
  out->feasible = r->feasible;
  if (!out->feasible)
    out->reason = g_strdup (r->reason);
  return TRUE;
}

/* The rounds' measures in order, until done or @rounds->before says stop; FALSE with @error
 * when a measure fails. */
static gboolean
run_rounds (const SedpTuneMeasure *m, const char *const *texts, guint n, const char *path,
            const SedpTuneRounds *rounds, SedpTuneRepeated *outs, GError **error)
{
  for (guint round = 0; round < rounds->repeats; round++)
    for (guint k = 0; k < n; k++) {
      guint i = (k + round) % n; /* each round starts one further along */
      if (!outs[i].feasible)
        continue;
      if (rounds->before && !rounds->before (i, round, rounds->user_data))
        return TRUE;
      if (!repeat_once (m, texts[i], path, rounds, &outs[i], error))
        return FALSE;
    }
  return TRUE;
}

void
sedp_tune_rounds_init (SedpTuneRounds *rounds, guint repeats)
{
  g_return_if_fail (rounds != NULL);
  *rounds = (SedpTuneRounds) {.repeats = repeats};
}

gboolean
sedp_tune_measure_rounds (const SedpTuneMeasure *m, const char *const *texts, guint n,
                          const char *path, const SedpTuneRounds *rounds,
                          SedpTuneRepeated *outs, GError **error)
{
  g_return_val_if_fail (m && texts && path && rounds && outs, FALSE);
  memset (outs, 0, n * sizeof *outs);
  if (!check_rounds (rounds, path, error))
    return FALSE;
  for (guint i = 0; i < n; i++) {
    outs[i].results = g_new0 (SedpTuneResult, rounds->repeats);
    outs[i].feasible = TRUE;
  }
  if (!run_rounds (m, texts, n, path, rounds, outs, error)) {
    for (guint j = 0; j < n; j++)
      sedp_tune_repeated_clear (&outs[j]);
    return FALSE;
  }
  for (guint i = 0; i < n; i++)
    if (outs[i].feasible)
      summarize (&outs[i]);
  return TRUE;
}

gboolean
sedp_tune_evaluate_rounds (const SedpTuneMeasure *m, const char *const *texts, guint n,
                           const char *path, guint repeats, SedpTuneRepeated *outs,
                           GError **error)
{
  SedpTuneRounds rounds;
  sedp_tune_rounds_init (&rounds, repeats);
  return sedp_tune_measure_rounds (m, texts, n, path, &rounds, outs, error);
}

gboolean
sedp_tune_evaluate_repeat (const SedpTuneMeasure *m, const char *text, const char *path,
                           guint repeats, SedpTuneRepeated *out, GError **error)
{
  g_return_val_if_fail (m != NULL && text != NULL && path != NULL && out != NULL, FALSE);
  const char *texts[] = {text};
  return sedp_tune_evaluate_rounds (m, texts, 1, path, repeats, out, error);
}

/* ---- the workload check ---- */

/* The workload's requests, submitted to a pipeline; completions come back through @done. */
typedef struct {
  SedpPipeline *pipeline;
  SedpWorkload *workload;
  guint n;
  SedpRequest **requests; /* n of them, referenced */
  GAsyncQueue *done;      /* completed requests (not referenced) */
  guint in_flight;
} WorkloadCheck;

static void
on_checked (SedpRequest *request, gpointer data)
{
  g_async_queue_push (data, request);
}

/* Waits for one completion, at most @timeout_us (-1: without limit). */
static void
check_wait (WorkloadCheck *w, gint64 timeout_us)
{
  gpointer done = timeout_us < 0 ? g_async_queue_pop (w->done)
                                 : g_async_queue_timeout_pop (w->done, (guint64) timeout_us);
  if (done)
    w->in_flight--;
}

/* Submits request @i (retrying while the source stage is full); FALSE when refused otherwise. */
static gboolean
check_submit (WorkloadCheck *w, guint i)
{
  g_autofree char *id = g_strdup_printf ("tune-check-%u", i);
  w->requests[i] = sedp_request_new (id, 0);
  sedp_request_set_payload (w->requests[i], sedp_workload_get_body (w->workload, i, NULL),
                            sedp_workload_get_content_type (w->workload));
  for (;;) {
    while (w->in_flight >= CHECK_IN_FLIGHT)
      check_wait (w, -1);
    SedpStatus st = sedp_pipeline_submit (w->pipeline, w->requests[i], on_checked, w->done);
    if (st == SEDP_STATUS_OK) {
      w->in_flight++;
      return TRUE;
    }
    if (st != SEDP_STATUS_OVERLOADED)
      return FALSE;
    check_wait (w, 1000);
  }
}

/* The first request not answered OK, named; TRUE when there is none. */
static gboolean
check_statuses (const WorkloadCheck *w, const char *path, GError **error)
{
  for (guint i = 0; i < w->n; i++) {
    const SedpResult *res = w->requests[i] ? sedp_request_get_result (w->requests[i]) : NULL;
    SedpStatus st = res ? sedp_result_get_status (res) : SEDP_STATUS_CANCELLED;
    if (st == SEDP_STATUS_OK)
      continue;
    const char *m = res ? sedp_result_get_message (res) : "refused at submission";
    g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_WORKLOAD,
                 "workload request %u of %u (counting from 1, blank and '#' lines skipped): the "
                 "unmodified pipeline %s answers '%s', expected 'ok': %s (fix the request or the "
                 "pipeline before tuning: every candidate would fail it)",
                 i + 1, w->n, path, sedp_status_to_string (st), m ? m : "no message");
    return FALSE;
  }
  return TRUE;
}

/* Every request submitted in order and waited for; then their statuses checked. */
static gboolean
check_run (WorkloadCheck *w, const char *path, GError **error)
{
  for (guint i = 0; i < w->n; i++)
    if (!check_submit (w, i))
      break;
  while (w->in_flight > 0)
    check_wait (w, -1);
  return check_statuses (w, path, error);
}

gboolean
sedp_tune_check_workload (SedpRegistry *registry, SedpWorkload *workload, const char *text,
                          const char *path, GError **error)
{
  g_return_val_if_fail (registry && workload && text && path, FALSE);
  g_autoptr (GError) why = NULL;
  /* The check asks whether each request can be answered, not how fast: 64 queue at once on a
   * cold pipeline, and the first of the CTR example's once timed out at its 500 ms. The longest
   * deadline a pipeline file allows (an hour) applies instead. */
  guint no_deadline = (guint) sedp_dsl_runtime_key (SEDP_DSL_GROUP_PIPELINE, "deadline_ms")->max;
  SedpPipeline *p = start_pipeline (registry, text, path, no_deadline, &why);
  if (p == NULL) {
    g_set_error (error, SEDP_TUNE_EVAL_ERROR, SEDP_TUNE_EVAL_ERROR_BASELINE,
                 "cannot tune %s: the unmodified pipeline does not start: %s (fix it first; "
                 "`sedp check %s` shows what is wrong)", path, why->message, path);
    return FALSE;
  }
  WorkloadCheck w = {.pipeline = p, .workload = workload, .done = g_async_queue_new ()};
  w.n = sedp_workload_get_n_requests (workload);
  w.requests = g_new0 (SedpRequest *, w.n);
  gboolean ok = check_run (&w, path, error);
  sedp_pipeline_free (p);
  for (guint i = 0; i < w.n; i++)
    g_clear_pointer (&w.requests[i], sedp_request_unref);
  g_free (w.requests);
  g_async_queue_unref (w.done);
  return ok;
}
