/* bench/run tenants — routing and multi-model pipelines (docs/routing.md, docs/benchmarks.md):
 *
 * (a) multi: three models (dlrm, dcn, mmoe) in one pipeline after one shared feature and lookup
 *     path (pipelines/multi-model.pipeline) against three separate pipelines, one model each
 *     with its own features and lookups, served by three `sedp serve` processes on the same
 *     cores and sent the same requests (each request to all three, at the same rate). For each
 *     arrangement, the highest open-loop rate whose p99 stays within --slo-p99-ms and whose
 *     errors stay under 1 % (every server's, for the separate one) is searched, in interleaved
 *     rounds; multi_over_separate is the median of the rounds' ratios.
 * (b) ab: the A/B split of pipelines/ab.pipeline's router (arms control:90, treatment:10) over
 *     --users distinct user ids, through `sedp run` in one process and again in a new one (a
 *     restart): each arm's share against its weight, and the share of users in the same arm.
 * (c) isolation: tenants a and b on one pipeline (a router by the request's tenant before the
 *     shared features; each tenant its own model), tenant a with branch_max_rate = Q. Tenant b
 *     sends at --b-load of the pipeline's capacity; a is silent (b alone), sends at Q (what its
 *     quota lets it take) or floods at 3 × Q, in phases taken in turn; isolation_p99_ratio is
 *     b's p99 over the flooded phases' answers pooled over its p99 alone (likewise pooled),
 *     isolation_p99_ratio_over_at_quota over its p99 beside a at its quota; b's errors counted.
 *
 * Prints RESULT lines on stdout, progress on stderr. */
#include "bench-process.h"
#include "load/loadgen.h"
#include "redis-harness.h"

#include <math.h>
#include <stdlib.h>


static double probe_seconds = 5, slo_p99_ms = 100, b_load = 0.5, quota_share = 0.1;
static gint rounds = 3, users = 100000, items = 300, phases = 24;
static gdouble phase_seconds = 15;
/* (a) with --cube redis: the lookups of every pipeline go to this redis-server (the cube pushed
 * as ctr_example) instead of the cube in memory. */
static char *redis_url;
static int redis_pid;

/* ---- pipelines ---- */

/* @file of the source tree's pipelines/ with the CTR example's data folder moved to @data, as
 * a key file to edit. */
static GKeyFile *
pipeline_load (const char *src, const char *file, const char *data)
{
  g_autofree char *path = g_build_filename (src, "pipelines", file, NULL), *text = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (path, &text, NULL, &error)) {
    fprintf (stderr, "tenants: %s\n", error->message);
    return NULL;
  }
  g_auto (GStrv) parts = g_strsplit (text, "../examples/ctr/data", -1);
  g_autofree char *fixed = g_strjoinv (data, parts);
  GKeyFile *kf = g_key_file_new ();
  if (!g_key_file_load_from_data (kf, fixed, (gsize) -1, G_KEY_FILE_KEEP_COMMENTS, &error)) {
    fprintf (stderr, "tenants: %s: %s\n", path, error->message);
    g_key_file_free (kf);
    return NULL;
  }
  return kf;
}

/* Writes @kf as @dir/@name.pipeline with [pipeline] name = @name (its lookup from Redis when
 * redis_url is set); returns the path. */
static char *
pipeline_save (GKeyFile *kf, const char *dir, const char *name)
{
  g_key_file_set_string (kf, "pipeline", "name", name);
  if (redis_url) {
    g_key_file_set_string (kf, "stage lookup", "backend", "redis");
    g_key_file_set_string (kf, "stage lookup", "redis", redis_url);
    g_key_file_set_string (kf, "stage lookup", "name", "ctr_example");
    g_key_file_remove_key (kf, "stage lookup", "cube", NULL);
    /* Waiting on the network, not computing: four workers keep several lookups in flight. */
    g_key_file_set_integer (kf, "stage lookup", "parallelism", 4);
  }
  g_autofree char *file = g_strdup_printf ("%s.pipeline", name);
  char *path = g_build_filename (dir, file, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_key_file_save_to_file (kf, path, &error)) {
    fprintf (stderr, "tenants: %s\n", error->message);
    g_clear_pointer (&path, g_free);
  }
  return path;
}

/* The models of the multi-model pipeline one at a time, as the CTR example serves its own
 * (pipelines/ctr.pipeline, its tuned configuration: two model workers): dense model, outputs,
 * the lookup's pooling (mmoe averages its embeddings, dlrm and dcn sum them). */
static const struct {
  const char *name, *dense, *outputs, *pooling;
} single[] = {
  {"dlrm", "dense.onnx", "prob=score", "sum"},
  {"dcn", "dense-dcn.onnx", "prob=score", "sum"},
  {"mmoe", "dense-mmoe.onnx", "ctr=score, cvr=cvr", "mean"},
};

/* pipelines/ctr.pipeline serving model @keep of single[] alone, with its own features and
 * lookups. */
static char *
separate_pipeline (const char *src, const char *data, const char *dir, guint keep)
{
  g_autoptr (GKeyFile) kf = pipeline_load (src, "ctr.pipeline", data);
  if (kf == NULL)
    return NULL;
  g_autofree char *dense = g_build_filename (data, single[keep].dense, NULL);
  g_key_file_set_string (kf, "stage model", "model", dense);
  g_key_file_set_string (kf, "stage model", "outputs", single[keep].outputs);
  g_key_file_set_string (kf, "stage lookup", "pooling", single[keep].pooling);
  g_autofree char *name = g_strdup_printf ("separate-%s", single[keep].name);
  return pipeline_save (kf, dir, name);
}

/* ---- load ---- */

typedef struct {
  const char *url;
  SedpWorkload *workload;
  double rate;
  double seconds;
  guint64 seed;
  SedpLoadgenResults *results;
  GError *error;
} Load;

static gpointer
load_thread (gpointer data)
{
  Load *l = data;
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_http (l->url, l->workload, &l->error);
  if (gen == NULL)
    return NULL;
  SedpLoadgenConfig c;
  sedp_loadgen_config_init (&c);
  c.mode = SEDP_LOADGEN_OPEN;
  c.rate = l->rate;
  c.duration_s = l->seconds;
  c.seed = l->seed;
  c.http_timeout_s = 10;
  l->results = sedp_loadgen_run (gen, &c, &l->error);
  return NULL;
}

/* Runs the @n loads at once, each in its own thread; FALSE when one could not run. */
static gboolean
run_loads (Load *loads, guint n)
{
  GThread *t[8];
  for (guint i = 0; i < n; i++) {
    g_clear_pointer (&loads[i].results, sedp_loadgen_results_free);
    g_clear_error (&loads[i].error);
    t[i] = g_thread_new ("load", load_thread, &loads[i]);
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < n; i++) {
    g_thread_join (t[i]);
    if (loads[i].results == NULL) {
      fprintf (stderr, "tenants: load on %s: %s\n", loads[i].url,
               loads[i].error ? loads[i].error->message : "no results");
      ok = FALSE;
    }
  }
  return ok;
}

static double
p99_ms (const Load *l)
{
  return sedp_loadgen_results_get_latency_ms (l->results, 0.99);
}

/* Every load kept the SLO: p99 within it, errors under 1 %, something answered. */
static gboolean
loads_pass (const Load *loads, guint n, double *worst_p99)
{
  gboolean pass = TRUE;
  *worst_p99 = 0;
  for (guint i = 0; i < n; i++) {
    const SedpLoadgenResults *r = loads[i].results;
    *worst_p99 = MAX (*worst_p99, p99_ms (&loads[i]));
    pass = pass && sedp_loadgen_results_get_counts (r)->ok > 0 &&
           sedp_loadgen_results_get_error_share (r) < 0.01 && p99_ms (&loads[i]) <= slo_p99_ms;
  }
  return pass;
}

/* The highest rate (requests/s, each load at it) at which every load passes: doubling or
 * halving from @start until a pass and a failure are seen, then bisecting to 5 %. */
static double
search_rate (Load *loads, guint n, double start, const char *what)
{
  double lo = 0, hi = 0, rate = start;
  for (guint probe = 0; probe < 14; probe++) {
    for (guint i = 0; i < n; i++)
      loads[i].rate = rate;
    if (!run_loads (loads, n))
      return 0;
    double worst;
    gboolean pass = loads_pass (loads, n, &worst);
    fprintf (stderr, "tenants: %s: %.1f req/s: p99 %.1f ms (worst of %u), %s\n", what, rate, worst,
             n, pass ? "pass" : "fail");
    if (pass)
      lo = rate;
    else
      hi = rate;
    if (lo > 0 && hi > 0 && (hi - lo) / hi <= 0.05)
      break;
    rate = lo == 0 ? rate / 2 : hi == 0 ? rate * 2 : (lo + hi) / 2;
    if (rate < 1)
      break;
  }
  return lo;
}

static double
median (double *v, guint n)
{
  return bench_quantile (v, n, 0.5);
}

/* ---- where the CPU goes ---- */

/* CPU seconds of the threads of process @pid whose name starts with @prefix (a stage's workers
 * are "sedp-" and the stage's name cut to 10 characters). */
static double
threads_cpu (int pid, const char *prefix)
{
  g_autofree char *dir = g_strdup_printf ("/proc/%d/task", pid);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  double sum = 0;
  const char *tid;
  while (d && (tid = g_dir_read_name (d))) {
    g_autofree char *path = g_strdup_printf ("%s/%s/stat", dir, tid), *text = NULL;
    if (!g_file_get_contents (path, &text, NULL, NULL))
      continue;
    const char *open = strchr (text, '('), *close = strrchr (text, ')');
    unsigned long utime = 0, stime = 0;
    if (open == NULL || close == NULL || strncmp (open + 1, prefix, strlen (prefix)) != 0 ||
        sscanf (close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
      continue;
    sum += (double) (utime + stime) / (double) sysconf (_SC_CLK_TCK);
  }
  return sum;
}

/* CPU of servers @s[0..n) (each sent @loads[i] at @rate) per request answered by all: the
 * processes' CPU in *@cpu_ms, that of their model stages' workers in *@model_ms. The workers of
 * the stages named model* are threads "sedp-model…". */
static gboolean
measure_cpu (BenchServer *s, Load *loads, guint n, double rate, double *cpu_ms, double *model_ms)
{
  double cpu0[8], m0[8], cpu = 0, model = 0;
  double redis0 = redis_pid ? bench_process_cpu (redis_pid) : 0;
  for (guint i = 0; i < n; i++) {
    m0[i] = threads_cpu (s[i].pid, "sedp-model");
    cpu0[i] = bench_process_cpu (s[i].pid);
    loads[i].rate = rate;
  }
  if (!run_loads (loads, n))
    return FALSE;
  guint64 answered = G_MAXUINT64;
  for (guint i = 0; i < n; i++) {
    model += threads_cpu (s[i].pid, "sedp-model") - m0[i];
    cpu += bench_process_cpu (s[i].pid) - cpu0[i];
    answered = MIN (answered, sedp_loadgen_results_get_counts (loads[i].results)->ok);
  }
  if (answered == 0)
    return FALSE;
  cpu += redis_pid ? bench_process_cpu (redis_pid) - redis0 : 0; /* the lookups' server */
  *cpu_ms = cpu * 1e3 / (double) answered;
  *model_ms = model * 1e3 / (double) answered;
  return TRUE;
}

/* ---- (a) three models in one pipeline against three pipelines ---- */

static gboolean
part_multi (const char *sedp, const char *src, const char *data, const char *dir,
            SedpWorkload *workload, const char *key)
{
  g_autoptr (GKeyFile) kf = pipeline_load (src, "multi-model.pipeline", data);
  g_autofree char *multi = kf ? pipeline_save (kf, dir, "multi") : NULL;
  char *separate[G_N_ELEMENTS (single)];
  for (guint m = 0; m < G_N_ELEMENTS (single); m++)
    separate[m] = separate_pipeline (src, data, dir, m);
  if (multi == NULL || !separate[0] || !separate[1] || !separate[2])
    return FALSE;
  double ratio[64], multi_rps[64], sep_rps[64];
  double multi_cpu[64], multi_model[64], sep_cpu[64], sep_model[64], bound[64], cpu_ratio[64];
  double start_multi = 40, start_sep = 0;
  gboolean ok = TRUE;
  for (gint r = 0; r < rounds && ok; r++) {
    BenchServer s[3];
    Load loads[3] = {{0}};
    ok = bench_server_start (&s[0], sedp, multi, "multi", NULL);
    if (!ok)
      break;
    loads[0] = (Load){.url = s[0].url, .workload = workload, .seconds = probe_seconds, .seed = 1 + r};
    multi_rps[r] = search_rate (loads, 1, start_multi, "multi");
    /* CPU per request, both arrangements at the same rate that both sustain. */
    double cpu_rate = 0.5 * multi_rps[r];
    if (multi_rps[r] > 0 &&
        !measure_cpu (s, loads, 1, cpu_rate, &multi_cpu[r], &multi_model[r]))
      multi_cpu[r] = multi_model[r] = 0;
    bench_server_stop (&s[0]);
    g_clear_pointer (&loads[0].results, sedp_loadgen_results_free);
    guint started = 0;
    for (; started < 3 && ok; started++) {
      g_autofree char *name = g_strdup_printf ("separate-%s", single[started].name);
      ok = bench_server_start (&s[started], sedp, separate[started], name, NULL);
      loads[started] = (Load){.url = s[started].url, .workload = workload,
                              .seconds = probe_seconds, .seed = 1 + r};
    }
    if (ok)
      sep_rps[r] = search_rate (loads, 3, start_sep > 0 ? start_sep : 40, "separate");
    if (ok && !measure_cpu (s, loads, 3, cpu_rate, &sep_cpu[r], &sep_model[r]))
      sep_cpu[r] = sep_model[r] = 0;
    for (guint i = 0; i < started; i++) {
      bench_server_stop (&s[i]);
      g_clear_pointer (&loads[i].results, sedp_loadgen_results_free);
    }
    ok = ok && multi_rps[r] > 0 && sep_rps[r] > 0;
    if (!ok)
      break;
    ratio[r] = multi_rps[r] / sep_rps[r];
    /* What sharing can give at most: the multi pipeline's work outside the models (S) done
     * three times, the models' (M) once: (3 S + M) / (S + M). */
    double shared = multi_cpu[r] - multi_model[r];
    bound[r] = multi_cpu[r] > 0 ? (3 * shared + multi_model[r]) / multi_cpu[r] : 0;
    cpu_ratio[r] = multi_cpu[r] > 0 ? sep_cpu[r] / multi_cpu[r] : 0;
    fprintf (stderr, "tenants: round %d: multi %.1f req/s, separate %.1f req/s, ratio %.3f; CPU per "
             "request: multi %.2f ms (models %.2f), separate %.2f ms (models %.2f); bound %.3f\n",
             r + 1, multi_rps[r], sep_rps[r], ratio[r], multi_cpu[r], multi_model[r], sep_cpu[r],
             sep_model[r], bound[r]);
    start_multi = multi_rps[r];
    start_sep = sep_rps[r];
  }
  for (guint m = 0; m < G_N_ELEMENTS (single); m++)
    g_free (separate[m]);
  if (!ok)
    return FALSE;
  g_autoptr (GString) list = g_string_new (NULL);
  for (gint r = 0; r < rounds; r++)
    g_string_append_printf (list, "%s%.3f", r ? "," : "", ratio[r]);
  printf ("RESULT %smulti_slo_p99_ms=%g probe_s=%g rounds=%d items=%d\n", key, slo_p99_ms,
          probe_seconds, rounds, items);
  printf ("RESULT %smulti_rps=%.1f\n", key, median (multi_rps, rounds));
  printf ("RESULT %sseparate_rps=%.1f\n", key, median (sep_rps, rounds));
  printf ("RESULT %smulti_over_separate=%.3f\n", key, median (ratio, rounds));
  printf ("RESULT %smulti_over_separate_rounds=%s\n", key, list->str);
  printf ("RESULT %smulti_cpu_ms_per_request=%.2f %smulti_model_cpu_ms_per_request=%.2f\n", key,
          median (multi_cpu, rounds), key, median (multi_model, rounds));
  printf ("RESULT %sseparate_cpu_ms_per_request=%.2f %sseparate_model_cpu_ms_per_request=%.2f\n", key,
          median (sep_cpu, rounds), key, median (sep_model, rounds));
  printf ("RESULT %sseparate_over_multi_cpu=%.3f\n", key, median (cpu_ratio, rounds));
  printf ("RESULT %smulti_over_separate_bound=%.3f\n", key, median (bound, rounds));
  return TRUE;
}

/* (a) again with every lookup from a redis-server on loopback (the cube pushed once): the
 * parameter store of a deployment whose embeddings do not fit one machine. */
static gboolean
part_multi_redis (const char *sedp, const char *src, const char *data, const char *dir,
                  SedpWorkload *workload)
{
  g_autoptr (GError) error = NULL;
  RedisServer *redis = redis_server_new (FALSE, &error);
  if (redis == NULL) {
    fprintf (stderr, "tenants: %s\n", error->message);
    return FALSE;
  }
  redis_url = redis_server_url (redis);
  redis_pid = redis->pid;
  g_autofree char *cube = g_build_filename (data, "cube", NULL);
  char *argv[] = {(char *) sedp, "cube", "push", cube, "--redis", redis_url, "--name", "ctr_example", NULL};
  g_autofree char *pushed = bench_run_capture (argv);
  gboolean ok = pushed && part_multi (sedp, src, data, dir, workload, "redis_");
  g_clear_pointer (&redis_url, g_free);
  redis_pid = 0;
  redis_server_free (redis);
  return ok;
}

/* ---- (b) the A/B split, and again after a restart ---- */

/* `sedp run` of @pipeline over @requests: user id → arm (the branch of the "ab:" route). */
static GHashTable *
run_split (const char *sedp, const char *pipeline, const char *requests, const char *out)
{
  char *argv[] = {(char *) sedp, "run", (char *) pipeline, "--requests", (char *) requests,
                  "--out", (char *) out, NULL};
  g_autofree char *stdout_text = bench_run_capture (argv);
  g_autofree char *text = NULL;
  if (stdout_text == NULL || !g_file_get_contents (out, &text, NULL, NULL))
    return NULL;
  GHashTable *arms = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *id = strstr (lines[i], "\"id\":\""), *route = strstr (lines[i], "\"ab:");
    if (id == NULL || route == NULL)
      continue;
    id += 6;
    route += 4;
    g_hash_table_insert (arms, g_strndup (id, strcspn (id, "\"")),
                         g_strndup (route, strcspn (route, "\"")));
  }
  return arms;
}

static gboolean
part_ab (const char *sedp, const char *src, const char *dir)
{
  g_autofree char *requests = g_build_filename (dir, "users.jsonl", NULL);
  GString *text = g_string_new (NULL);
  for (gint u = 0; u < users; u++) /* user ids spread as a service's are: not 0, 1, 2, … */
    g_string_append_printf (text, "{\"id\":\"u%d\",\"user\":{\"user_id\":%" G_GUINT64_FORMAT "},"
                                  "\"items\":[{\"item_id\":1}]}\n",
                            u, (guint64) 1000003 * (guint64) u + 17);
  gboolean written = g_file_set_contents (requests, text->str, (gssize) text->len, NULL);
  g_string_free (text, TRUE);
  g_autofree char *pipeline = g_build_filename (src, "bench", "ab-split.pipeline", NULL);
  g_autofree char *out1 = g_build_filename (dir, "split-1.jsonl", NULL);
  g_autofree char *out2 = g_build_filename (dir, "split-2.jsonl", NULL);
  g_autoptr (GHashTable) first = written ? run_split (sedp, pipeline, requests, out1) : NULL;
  g_autoptr (GHashTable) second = first ? run_split (sedp, pipeline, requests, out2) : NULL;
  if (second == NULL || g_hash_table_size (first) != (guint) users) {
    fprintf (stderr, "tenants: the split runs did not route every user (%u of %d)\n",
             first ? g_hash_table_size (first) : 0, users);
    return FALSE;
  }
  guint control = 0, same = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, first);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    control += strcmp (v, "control") == 0;
    same += g_strcmp0 (v, g_hash_table_lookup (second, k)) == 0;
  }
  double share_c = 100.0 * control / users, share_t = 100.0 - share_c;
  double err = MAX (fabs (share_c - 90), fabs (share_t - 10));
  printf ("RESULT ab_users=%d ab_control_share_pct=%.3f ab_treatment_share_pct=%.3f\n", users,
          share_c, share_t);
  printf ("RESULT ab_max_share_error_pp=%.3f\n", err);
  printf ("RESULT ab_sticky=%.6g\n", (double) same / users);
  return TRUE;
}

/* ---- (c) a flooded tenant ---- */

/* The CTR requests with user feature tenant = @tenant. */
static SedpWorkload *
tenant_workload (const char *requests, const char *tenant)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (requests, &text, NULL, NULL))
    return NULL;
  SedpWorkload *w = sedp_workload_new (SEDP_WORKLOAD_PROTOBUF);
  g_autofree char *feature = g_strdup_printf ("\"features\":{\"tenant\":{\"string_value\":\"%s\"},",
                                              tenant);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *f = strstr (lines[i], "\"features\":{");
    if (f == NULL)
      continue;
    g_autofree char *line = g_strdup_printf ("%.*s%s%s", (int) (f - lines[i]), lines[i], feature,
                                             f + strlen ("\"features\":{"));
    g_autoptr (GError) error = NULL;
    if (!sedp_workload_add_json (w, line, "tenant request", &error)) {
      fprintf (stderr, "tenants: %s\n", error->message);
      sedp_workload_unref (w);
      return NULL;
    }
  }
  return w;
}

/* Two tenants on pipelines/ctr.pipeline: a router by the request's tenant right after the
 * reader, the features after it, the dlrm for tenant a and the dcn for tenant b after the shared
 * lookup, tenant a's rate quota @quota. */
static char *
tenants_pipeline (const char *src, const char *data, const char *dir, double quota)
{
  g_autoptr (GKeyFile) kf = pipeline_load (src, "ctr.pipeline", data);
  if (kf == NULL)
    return NULL;
  g_key_file_set_string (kf, "stage user_features", "after", "tenant");
  g_key_file_set_string (kf, "stage item_features", "after", "tenant");
  g_key_file_set_string (kf, "stage tenant", "plugin", "ab_router");
  g_key_file_set_string (kf, "stage tenant", "after", "reader");
  g_key_file_set_string (kf, "stage tenant", "key", "tenant");
  g_key_file_set_string (kf, "stage tenant", "by", "value");
  g_key_file_set_string (kf, "stage tenant", "arms", "a:50, b:50");
  g_autofree char *rate = g_strdup_printf ("a:%.1f", quota);
  g_key_file_set_string (kf, "stage tenant", "branch_max_rate", rate);
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "stage model", NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++) {
    g_autofree char *v = g_key_file_get_value (kf, "stage model", keys[i], NULL);
    g_key_file_set_value (kf, "stage model_b", keys[i], v);
  }
  g_autofree char *dcn = g_build_filename (data, "dense-dcn.onnx", NULL);
  g_key_file_set_string (kf, "stage model", "after", "lookup, tenant:a");
  g_key_file_set_string (kf, "stage model_b", "after", "lookup, tenant:b");
  g_key_file_set_string (kf, "stage model_b", "model", dcn);
  g_key_file_set_string (kf, "stage respond", "after", "model, model_b");
  g_key_file_remove_key (kf, "pipeline", "warmup", NULL); /* its requests have no tenant */
  return pipeline_save (kf, dir, "tenants");
}

static gboolean
part_isolation (const char *sedp, const char *src, const char *data, const char *dir)
{
  g_autofree char *requests = g_build_filename (data, "requests.jsonl", NULL);
  SedpWorkload *wa = tenant_workload (requests, "a"), *wb = tenant_workload (requests, "b");
  gboolean ok = wa && wb;
  /* The capacity of tenant b alone on this pipeline, with a generous quota for a. */
  g_autofree char *probe_pl = ok ? tenants_pipeline (src, data, dir, 1e6) : NULL;
  BenchServer s;
  double capacity = 0;
  if (probe_pl && bench_server_start (&s, sedp, probe_pl, "tenants", NULL)) {
    Load l = {.url = s.url, .workload = wb, .seconds = probe_seconds, .seed = 7};
    capacity = search_rate (&l, 1, 40, "tenant b alone");
    g_clear_pointer (&l.results, sedp_loadgen_results_free);
    bench_server_stop (&s);
  }
  double quota = quota_share * capacity;
  g_autofree char *pl = capacity > 0 ? tenants_pipeline (src, data, dir, quota) : NULL;
  ok = pl && bench_server_start (&s, sedp, pl, "tenants", NULL);
  /* Phases in turn: b alone; a at its quota (what the quota lets it take); a at 3x its quota. */
  enum { ALONE, AT_QUOTA, FLOODED, KINDS };
  static const char *const kind_name[] = {"b alone", "a at its quota", "a floods"};
  double p99s[KINDS][64], a_ok_rps[64];
  guint n[KINDS] = {0};
  GArray *pool[KINDS];
  for (guint k = 0; k < KINDS; k++)
    pool[k] = g_array_new (FALSE, FALSE, sizeof (double));
  guint64 b_errors = 0, b_requests = 0;
  for (gint ph = 0; ok && ph < phases; ph++) {
    guint kind = (guint) ph % KINDS;
    Load loads[2] = {{.url = s.url, .workload = wb, .rate = b_load * capacity,
                      .seconds = phase_seconds, .seed = 11 + ph},
                     {.url = s.url, .workload = wa, .rate = (kind == FLOODED ? 3 : 1) * quota,
                      .seconds = phase_seconds, .seed = 101 + ph}};
    ok = run_loads (loads, kind == ALONE ? 1 : 2);
    if (!ok)
      break;
    double p99 = p99_ms (&loads[0]);
    guint n_lat = 0;
    const gint64 *lat = sedp_loadgen_results_get_latencies_us (loads[0].results, &n_lat);
    for (guint i = 0; i < n_lat; i++) {
      double ms = (double) lat[i] / 1e3;
      g_array_append_val (pool[kind], ms);
    }
    b_errors += sedp_loadgen_results_get_errors (loads[0].results);
    b_requests += sedp_loadgen_results_get_counts (loads[0].results)->arrivals;
    if (kind == FLOODED)
      a_ok_rps[n[FLOODED]] = sedp_loadgen_results_get_requests_per_s (loads[1].results);
    p99s[kind][n[kind]++] = p99;
    fprintf (stderr, "tenants: phase %d (%s): b p99 %.1f ms, b errors %" G_GUINT64_FORMAT "\n",
             ph + 1, kind_name[kind], p99, sedp_loadgen_results_get_errors (loads[0].results));
    for (guint i = 0; i < 2; i++)
      g_clear_pointer (&loads[i].results, sedp_loadgen_results_free);
  }
  if (pl && s.pid)
    bench_server_stop (&s);
  if (wa)
    sedp_workload_unref (wa);
  if (wb)
    sedp_workload_unref (wb);
  double pooled[KINDS];
  for (guint k = 0; k < KINDS; k++) {
    ok = ok && n[k] > 0;
    pooled[k] = bench_quantile_rank ((double *) pool[k]->data, pool[k]->len, 0.99);
    g_array_unref (pool[k]);
  }
  if (!ok)
    return FALSE;
  printf ("RESULT isolation_capacity_rps=%.1f isolation_b_rps=%.1f isolation_a_quota_rps=%.1f "
          "isolation_a_offered_rps=%.1f\n", capacity, b_load * capacity, quota, 3 * quota);
  printf ("RESULT isolation_a_answered_rps=%.1f\n", median (a_ok_rps, n[FLOODED]));
  printf ("RESULT isolation_b_p99_alone_ms=%.2f isolation_b_p99_a_at_quota_ms=%.2f "
          "isolation_b_p99_flooded_ms=%.2f\n", pooled[ALONE], pooled[AT_QUOTA], pooled[FLOODED]);
  printf ("RESULT isolation_p99_ratio=%.3f\n", pooled[FLOODED] / pooled[ALONE]);
  printf ("RESULT isolation_p99_ratio_over_at_quota=%.3f\n", pooled[FLOODED] / pooled[AT_QUOTA]);
  printf ("RESULT isolation_p99_ratio_phase_medians=%.3f\n",
          median (p99s[FLOODED], n[FLOODED]) / median (p99s[ALONE], n[ALONE]));
  printf ("RESULT isolation_b_errors=%" G_GUINT64_FORMAT " isolation_b_requests=%" G_GUINT64_FORMAT "\n",
          b_errors, b_requests);
  return TRUE;
}

int
main (int argc, char **argv)
{
  g_set_prgname ("tenants");
  g_autofree char *part = NULL, *cube_opt = NULL;
  const GOptionEntry entries[] = {
    {"part", 0, 0, G_OPTION_ARG_STRING, &part, "Only this part: multi, ab or isolation", "P"},
    {"cube", 0, 0, G_OPTION_ARG_STRING, &cube_opt,
     "(a) Where the lookups go: local (the cube in memory), redis (a redis-server on loopback) or "
     "both (default)", "local|redis|both"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "(a) Rounds of the two searches (default 3)", "N"},
    {"probe-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &probe_seconds, "Seconds per probe (default 5)", "S"},
    {"slo-p99-ms", 0, 0, G_OPTION_ARG_DOUBLE, &slo_p99_ms, "The p99 to keep (default 100)", "MS"},
    {"items", 0, 0, G_OPTION_ARG_INT, &items, "Items per request (default 300)", "M"},
    {"users", 0, 0, G_OPTION_ARG_INT, &users, "(b) User ids split (default 100000)", "N"},
    {"b-load", 0, 0, G_OPTION_ARG_DOUBLE, &b_load, "(c) Tenant b's rate, a share of capacity (default 0.5)", "X"},
    {"quota-share", 0, 0, G_OPTION_ARG_DOUBLE, &quota_share, "(c) Tenant a's quota, a share of capacity (default 0.1)", "X"},
    {"phases", 0, 0, G_OPTION_ARG_INT, &phases, "(c) Phases, the three kinds in turn (default 24)", "N"},
    {"phase-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &phase_seconds, "(c) Seconds per phase (default 15)", "S"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("— multi-model and routed pipelines");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || rounds < 1 || rounds > 64 ||
      phases < 3 || phases > 64 || users < 1 || items < 1) {
    fprintf (stderr, "tenants: %s\n", error ? error->message : "an option is out of range");
    return 2;
  }
  const char *cube_mode = cube_opt ? cube_opt : "both";
  if (strcmp (cube_mode, "local") != 0 && strcmp (cube_mode, "redis") != 0 &&
      strcmp (cube_mode, "both") != 0) {
    fprintf (stderr, "tenants: --cube: local, redis or both, not '%s'\n", cube_mode);
    return 2;
  }
  g_autofree char *build = NULL, *src = NULL, *sedp = NULL, *data = NULL;
  bench_paths (&build, &src, &sedp, &data);
  g_autofree char *tmp = g_dir_make_tmp ("sedp-tenants-XXXXXX", &error);
  if (tmp == NULL || !bench_prepare_multi (src, data, (guint) items)) {
    fprintf (stderr, "tenants: %s\n", error ? error->message : "the example could not be prepared");
    return 1;
  }
  g_autoptr (SedpWorkload) workload = NULL;
  g_autofree char *requests = g_build_filename (data, "requests.jsonl", NULL);
  workload = sedp_workload_load (requests, SEDP_WORKLOAD_PROTOBUF, &error);
  if (workload == NULL) {
    fprintf (stderr, "tenants: %s\n", error->message);
    return 1;
  }
  gboolean ok = TRUE;
  if (ok && (part == NULL || strcmp (part, "ab") == 0))
    ok = part_ab (sedp, src, tmp);
  if (ok && (part == NULL || strcmp (part, "multi") == 0) && strcmp (cube_mode, "redis") != 0)
    ok = part_multi (sedp, src, data, tmp, workload, "");
  if (ok && (part == NULL || strcmp (part, "multi") == 0) && strcmp (cube_mode, "local") != 0)
    ok = part_multi_redis (sedp, src, data, tmp, workload);
  if (ok && (part == NULL || strcmp (part, "isolation") == 0))
    ok = part_isolation (sedp, src, data, tmp);
  bench_remove_tree (tmp);
  return ok ? 0 : 1;
}
