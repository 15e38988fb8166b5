/* sedp — hot reload of a served pipeline's model (docs/model-lifecycle.md): versions as
 * refcounted pipeline instances, the loader thread (check → instantiate → warm up), the swap in
 * the main context, rollback, the probation guards and the repository watcher. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "reload.h"

#include "../dsl/spec.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---- instances ---- */

static char *
describe_versions (const GPtrArray *models)
{
  if (models == NULL || models->len == 0)
    return NULL;
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < models->len; i++) {
    const SedpGraphModel *m = models->pdata[i];
    g_string_append_printf (out, "%s%s:%" G_GINT64_FORMAT, i ? "," : "", m->name, m->version);
  }
  return g_string_free (out, FALSE);
}

/* Makes the started @pipeline (taken) an instance. */
static Instance *
instance_wrap (SedpServer *server, Served *s, SedpPipeline *pipeline)
{
  Instance *inst = g_new0 (Instance, 1);
  inst->refs = 1;
  inst->server = server;
  inst->served = s;
  inst->pipeline = pipeline;
  inst->models = sedp_pipeline_get_graph (pipeline)->models;
  inst->model_version = describe_versions (inst->models);
  inst->loaded_at = g_date_time_new_now_utc ();
  inst->latencies = g_array_sized_new (FALSE, FALSE, sizeof (guint32), INSTANCE_LATENCIES);
  return inst;
}

/* Starts @pipeline (taken) and makes it an instance. */
static Instance *
instance_start (SedpServer *server, Served *s, SedpPipeline *pipeline, GError **error)
{
  if (!sedp_pipeline_start (pipeline, error)) {
    sedp_pipeline_free (pipeline);
    return NULL;
  }
  return instance_wrap (server, s, pipeline);
}

Instance *
instance_new (SedpServer *server, Served *s, SedpGraph *graph, GError **error)
{
  SedpPipeline *pipeline = sedp_pipeline_new (graph, error);
  return pipeline ? instance_start (server, s, pipeline, error) : NULL;
}

Instance *
instance_ref (Instance *inst)
{
  inst->refs++;
  return inst;
}

/* Stops and frees @inst's pipeline (which no request holds). Any thread. */
static void
instance_destroy (Instance *inst)
{
  sedp_pipeline_stop (inst->pipeline);
  sedp_pipeline_free (inst->pipeline);
  g_date_time_unref (inst->loaded_at);
  g_array_unref (inst->latencies);
  g_free (inst->model_version);
  g_free (inst);
}

void
instance_free_now (Instance *inst)
{
  g_warn_if_fail (inst->refs <= 1);
  instance_destroy (inst);
}

typedef struct {
  SedpServer *server;
  Served *served;
} Retired;

static gboolean
retired (gpointer data)
{
  Retired *r = data;
  r->server->n_retiring--;
  g_atomic_int_dec_and_test (&r->served->retiring);
  g_free (r);
  return G_SOURCE_REMOVE;
}

static gpointer
retire_thread (gpointer data)
{
  Instance *inst = data;
  Retired *r = g_new (Retired, 1);
  *r = (Retired) {inst->server, inst->served};
  instance_destroy (inst);
#ifdef __GLIBC__
  /* A whole version was freed: its pages go back to the system now, not at the next periodic
   * release (sedp serve --heap-release-interval), so that memory does not ratchet up with
   * reloads. */
  malloc_trim (0);
#endif
  g_main_context_invoke (r->server->context, retired, r);
  return NULL;
}

void
instance_unref (Instance *inst)
{
  if (--inst->refs > 0)
    return;
  inst->server->n_retiring++;
  g_atomic_int_inc (&inst->served->retiring);
  g_thread_unref (g_thread_new ("sedp-retire", retire_thread, inst));
}

void
instance_count (Instance *inst, gboolean failed, gint64 latency_us)
{
  inst->requests++;
  inst->failed += failed;
  guint32 v = (guint32) CLAMP (latency_us, 0, G_MAXUINT32);
  if (inst->latencies->len < INSTANCE_LATENCIES)
    g_array_append_val (inst->latencies, v);
  else
    g_array_index (inst->latencies, guint32, inst->latency_next) = v;
  inst->latency_next = (inst->latency_next + 1) % INSTANCE_LATENCIES;
}

static int
compare_u32 (const void *a, const void *b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

double
instance_p99_us (const Instance *inst)
{
  guint n = inst->latencies->len;
  if (n == 0)
    return 0;
  g_autofree guint32 *v = g_memdup2 (inst->latencies->data, n * sizeof (guint32));
  qsort (v, n, sizeof (guint32), compare_u32);
  return v[MIN (n - 1, (guint) (0.99 * n))];
}

/* ---- the loader thread ---- */

/* One reload in progress: what was asked, and what the loader thread made of it. */
typedef struct {
  SedpServer *server;
  Served *served;
  Reloader *r;
  gint64 want;              /* the version asked for; 0: the policy's */
  gboolean rollback;        /* a lower version allowed */
  const char *reason;       /* "watch", "admin", "guard" */
  Instance *old;            /* the version serving when it started (a reference) */
  SedpReloadDone done;
  gpointer done_data;
  /* Results */
  SedpReloadResult result;
  gint64 version;
  Instance *fresh;
  GError *error;
  gint64 t0;                /* monotonic µs when the loader thread started */
  double load_s, warmup_s;
} Job;

static gboolean
warm_one (Served *s, SedpPipeline *pipeline, const SedpWarmupRecord *rec, guint n, GError **error)
{
  SedpRequest *request = server_warmup_request (rec, n);
  SedpStatus st = sedp_pipeline_run (pipeline, request);
  if (st == SEDP_STATUS_OK) {
    const SedpResult *res = sedp_request_get_result (request);
    st = sedp_result_get_status (res);
    if (st != SEDP_STATUS_OK && st != SEDP_STATUS_PARTIAL && st != SEDP_STATUS_TIMEOUT) {
      const char *m = sedp_result_get_message (res);
      g_set_error (error, SEDP_RELOAD_ERROR, SEDP_RELOAD_ERROR_WARMUP,
                   "%s:%u: warm-up request of the new version failed (%s): %s", s->warmup_file,
                   rec->line, sedp_status_to_string (st), m ? m : "no message");
    }
  } else
    g_set_error (error, SEDP_RELOAD_ERROR, SEDP_RELOAD_ERROR_WARMUP,
                 "%s:%u: warm-up request refused by the new version (%s)", s->warmup_file,
                 rec->line, sedp_status_to_string (st));
  sedp_request_unref (request);
  return error == NULL || *error == NULL;
}

/* Sends @s's warm-up requests through @pipeline, one at a time; each must end OK, PARTIAL or
 * TIMEOUT. After each, waits @pause times as long as it took: even at SCHED_IDLE, a core kept
 * busy delays the wake-ups of the serving threads (docs/model-lifecycle.md, "Warm-up pause"). */
static gboolean
warm_instance (Served *s, SedpPipeline *pipeline, double pause, GError **error)
{
  for (guint n = 0; s->warmup && n < s->warmup_total; n++) {
    GError *local = NULL;
    gint64 t0 = g_get_monotonic_time ();
    if (!warm_one (s, pipeline, s->warmup->pdata[n % s->warmup->len], n + 1, &local)) {
      g_propagate_error (error, local);
      return FALSE;
    }
    if (pause > 0)
      g_usleep ((gulong) ((double) (g_get_monotonic_time () - t0) * pause));
  }
  return TRUE;
}

/* The old and new model's inputs, as their manifests record them, must be the same. */
static gboolean
inputs_fit (const SedpGraphModel *old, const SedpGraphModel *new_, GError **error)
{
  const GPtrArray *a = old->manifest->inputs, *b = new_->manifest->inputs;
  for (guint i = 0; i < MAX (a->len, b->len); i++) {
    const SedpBundleTensor *x = i < a->len ? a->pdata[i] : NULL;
    const SedpBundleTensor *y = i < b->len ? b->pdata[i] : NULL;
    gboolean same = x && y && strcmp (x->name, y->name) == 0 && strcmp (x->dtype, y->dtype) == 0 &&
                    x->rank == y->rank &&
                    memcmp (x->shape, y->shape, x->rank * sizeof (gint64)) == 0;
    if (!same) {
      g_set_error (error, SEDP_RELOAD_ERROR, SEDP_RELOAD_ERROR_INPUTS,
                   "%s/%s: the model's input %u ('%s') differs from version %" G_GINT64_FORMAT
                   "'s ('%s'): a new version must take the inputs the pipeline gives (%s)",
                   new_->dir, new_->manifest->model, i, y ? y->name : "none", old->version,
                   x ? x->name : "none", "same names, types and shapes");
      return FALSE;
    }
  }
  return TRUE;
}

/* The versions of @old's models, with @model's replaced by @version. */
static GHashTable *
versions_with (const Instance *old, const char *model, gint64 version)
{
  GHashTable *v = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; i < old->models->len; i++) {
    const SedpGraphModel *m = old->models->pdata[i];
    gint64 *x = g_new (gint64, 1);
    *x = strcmp (m->name, model) == 0 ? version : m->version;
    g_hash_table_insert (v, g_strdup (m->name), x);
  }
  return v;
}

/* What the loader makes at idle priority: the new version's stopped pipeline. */
typedef struct {
  Job *job;
  gint64 version;
  gboolean background;      /* start the workers here, at SCHED_IDLE, for the warm-up */
  SedpPipeline *pipeline;   /* started when @background */
  GError *error;
} Prepare;

/* Checks the bundle and creates the stages (the model loaded, the cubes opened or shared). */
static SedpPipeline *
prepare_pipeline (Job *j, gint64 version, GError **error)
{
  Served *s = j->served;
  g_autoptr (GHashTable) versions = versions_with (j->old, j->r->model, version);
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (s->spec_text, strlen (s->spec_text), s->path,
                                                     error);
  SedpGraph *graph = spec ? sedp_graph_compile_versions (spec, s->registry, versions, error) : NULL;
  if (graph == NULL)
    return NULL;
  if (!inputs_fit (sedp_graph_models_find (j->old->models, j->r->model),
                   sedp_graph_models_find (graph->models, j->r->model), error)) {
    sedp_graph_free (graph);
    return NULL;
  }
  return sedp_pipeline_new (graph, error);
}

/* A thread of its own at SCHED_IDLE: reading, hashing and loading a version takes whole seconds
 * of CPU that the serving threads need more. (The pipeline's workers are started afterwards,
 * from the loader thread, so that they do not inherit the idle policy.) */
static gpointer
prepare_thread (gpointer data)
{
  Prepare *p = data;
  struct sched_param param = {0};
  if (sched_setscheduler (0, SCHED_IDLE, &param) != 0)
    g_debug ("reload: SCHED_IDLE refused (%s): loading at normal priority", g_strerror (errno));
  p->pipeline = prepare_pipeline (p->job, p->version, &p->error);
  if (p->pipeline && p->background && !sedp_pipeline_start (p->pipeline, &p->error))
    g_clear_pointer (&p->pipeline, sedp_pipeline_free);
  return NULL;
}

static gpointer
probe_thread (gpointer data)
{
  struct sched_param param = {0};
  gboolean ok = sched_setscheduler (0, SCHED_IDLE, &param) == 0 &&
                sched_setscheduler (0, SCHED_OTHER, &param) == 0;
  return GINT_TO_POINTER (ok);
}

/* Whether a thread may leave SCHED_IDLE here (CAP_SYS_NICE, or an RLIMIT_NICE of 20): then a
 * new version is warmed up at idle priority and moved back to normal before its swap. */
static gboolean
can_leave_idle (void)
{
  static gsize once = 0;
  static gboolean ok;
  if (g_once_init_enter (&once)) {
    ok = GPOINTER_TO_INT (g_thread_join (g_thread_new ("sedp-probe", probe_thread, NULL)));
    if (!ok)
      g_message ("reload: a thread cannot leave SCHED_IDLE here (no CAP_SYS_NICE, RLIMIT_NICE "
                 "below 20): new versions are warmed up at normal priority");
    g_once_init_leave (&once, 1);
  }
  return ok;
}

/* The new version's instance, checked, started and warmed up — at idle priority where the
 * system lets its workers come back to normal priority for the swap. */
static Instance *
load_version (Job *j, gint64 version, GError **error)
{
  Prepare p = {j, version, can_leave_idle (), NULL, NULL};
  g_thread_join (g_thread_new ("sedp-reload-prep", prepare_thread, &p));
  if (p.pipeline == NULL) {
    g_propagate_error (error, p.error);
    return NULL;
  }
  Instance *inst = p.background ? instance_wrap (j->server, j->served, p.pipeline)
                                : instance_start (j->server, j->served, p.pipeline, error);
  if (inst == NULL)
    return NULL;
  j->load_s = (double) (g_get_monotonic_time () - j->t0) / 1e6;
  gint64 t0 = g_get_monotonic_time ();
  if (!warm_instance (j->served, inst->pipeline, j->r->warmup_pause, error) ||
      (p.background && !sedp_pipeline_set_idle (inst->pipeline, FALSE, error))) {
    instance_destroy (inst);
    return NULL;
  }
  j->warmup_s = (double) (g_get_monotonic_time () - t0) / 1e6;
  return inst;
}

static void
run_job (Job *j)
{
  const Reloader *r = j->r;
  const SedpGraphModel *serving = sedp_graph_models_find (j->old->models, r->model);
  g_autofree char *dir = NULL;
  j->t0 = g_get_monotonic_time ();
  gint64 v = sedp_bundle_repository_resolve (r->repository, r->model, j->want ? j->want : r->pinned,
                                             &dir, &j->error);
  if (v <= 0)
    return;
  j->version = v;
  if (v == serving->version) {
    j->result = SEDP_RELOAD_UNCHANGED;
    return;
  }
  if (!sedp_bundle_check_upgrade (r->model, serving->version, v, j->rollback, &j->error))
    return;
  j->fresh = load_version (j, v, &j->error);
  if (j->fresh)
    j->result = j->rollback ? SEDP_RELOAD_ROLLED_BACK : SEDP_RELOAD_LOADED;
}

static gboolean job_finish (gpointer data);

static gpointer
load_thread (gpointer data)
{
  Job *j = data;
  /* At most two versions resident: the one released last drains (its requests end within
   * their deadline) before another one is made. */
  while (g_atomic_int_get (&j->served->retiring) > 0)
    g_usleep (1000);
  g_mutex_lock (&j->server->load_lock);
  run_job (j);
  g_mutex_unlock (&j->server->load_lock);
  g_main_context_invoke (j->server->context, job_finish, j);
  return NULL;
}

/* ---- the swap (main context) ---- */

static void probation_start (Reloader *r, double previous_p99_us);

/* Makes @fresh the current version of @s; returns the swap's duration in µs. */
static gint64
swap (Served *s, Instance *fresh)
{
  gint64 t0 = g_get_monotonic_time ();
  Instance *old = s->current;
  s->current = fresh;
  instance_unref (old);
  return g_get_monotonic_time () - t0;
}

static void
job_record (Job *j)
{
  Reloader *r = j->r;
  g_clear_pointer (&r->last_error, g_free);
  if (j->result == SEDP_RELOAD_FAILED) {
    r->n_failed++;
    r->last_error = g_strdup (j->error->message);
    g_warning ("reload of model '%s' (pipeline '%s', %s) failed: %s", r->model, j->served->name,
               j->reason, j->error->message);
    return;
  }
  if (j->result == SEDP_RELOAD_UNCHANGED) {
    r->n_unchanged++;
    return;
  }
  const SedpGraphModel *was = sedp_graph_models_find (j->old->models, r->model);
  if (j->rollback) {
    g_array_append_val (r->rejected, was->version);
    if (strcmp (j->reason, "guard") == 0)
      r->n_rollbacks_guard++;
    else
      r->n_rollbacks_admin++;
  } else
    r->n_loaded++;
  r->previous = was->version;
  g_clear_pointer (&r->previous_loaded_at, g_date_time_unref);
  r->previous_loaded_at = g_date_time_ref (j->old->loaded_at);
  r->load_s_last = j->load_s;
}

static gboolean
job_finish (gpointer data)
{
  Job *j = data;
  Reloader *r = j->r;
  j->server->n_loading--;
  r->loading = FALSE;
  if (j->fresh) {
    double old_p99 = instance_p99_us (j->old);
    gint64 us = swap (j->served, g_steal_pointer (&j->fresh));
    r->swap_us_last = us;
    r->swap_us_max = MAX (r->swap_us_max, us);
    if (!j->rollback)
      probation_start (r, old_p99);
    else
      r->probation_until = 0;
    g_message ("model '%s' (pipeline '%s'): version %" G_GINT64_FORMAT " serving (%s; load %.3f s, "
               "warm-up %.3f s, swap %" G_GINT64_FORMAT " µs)", r->model, j->served->name,
               j->version, j->reason, j->load_s, j->warmup_s, us);
  }
  job_record (j);
  if (j->done)
    j->done (j->result, j->version, j->error, j->load_s, j->warmup_s, r->swap_us_last, j->done_data);
  instance_unref (j->old);
  g_clear_error (&j->error);
  g_free (j);
  return G_SOURCE_REMOVE;
}

gboolean
reload_start (SedpServer *server, Served *s, gint64 want, gboolean rollback, const char *reason,
              SedpReloadDone done, gpointer done_data, GError **error)
{
  Reloader *r = s->reloader;
  if (server->draining) {
    g_set_error (error, SEDP_RELOAD_ERROR, SEDP_RELOAD_ERROR_BUSY, "the server is shutting down");
    return FALSE;
  }
  if (r->loading) {
    g_set_error (error, SEDP_RELOAD_ERROR, SEDP_RELOAD_ERROR_BUSY,
                 "model '%s' of pipeline '%s': a reload is in progress; try again when it ended",
                 r->model, s->name);
    return FALSE;
  }
  Job *j = g_new0 (Job, 1);
  *j = (Job) {server, s, r, want, rollback, reason, instance_ref (s->current), done, done_data};
  j->result = SEDP_RELOAD_FAILED;
  r->loading = TRUE;
  server->n_loading++;
  g_thread_unref (g_thread_new ("sedp-reload", load_thread, j));
  return TRUE;
}

/* A timeout in the server's main context; returns its id there. */
static guint
add_timeout (Reloader *r, guint ms, GSourceFunc fn)
{
  GSource *t = g_timeout_source_new (ms);
  g_source_set_callback (t, fn, r, NULL);
  guint id = g_source_attach (t, r->context);
  g_source_unref (t);
  return id;
}

static void
remove_source (Reloader *r, guint *id)
{
  if (*id) {
    GSource *src = g_main_context_find_source_by_id (r->context, *id);
    if (src)
      g_source_destroy (src);
  }
  *id = 0;
}

/* ---- probation ---- */

static void
probation_stop (Reloader *r)
{
  r->probation_until = 0;
  remove_source (r, &r->probation_source);
}

/* Why the current version breaks a guard, or NULL. */
static char *
guard_broken (const Reloader *r, const Instance *inst)
{
  if (inst->requests < RELOAD_PROBATION_MIN_REQUESTS)
    return NULL;
  double rate = (double) inst->failed / (double) inst->requests;
  if (r->max_error_rate < 1 && rate > r->max_error_rate)
    return g_strdup_printf ("%.3f of its requests failed (max_error_rate = %g)", rate,
                            r->max_error_rate);
  double p99 = instance_p99_us (inst);
  if (r->max_p99_over_previous > 0 && r->previous_p99_us > 0 &&
      p99 > r->max_p99_over_previous * r->previous_p99_us)
    return g_strdup_printf ("its p99 %.0f µs is over %g × the previous version's %.0f µs "
                            "(max_p99_over_previous)", p99, r->max_p99_over_previous,
                            r->previous_p99_us);
  return NULL;
}

static gboolean
probation_tick (gpointer data)
{
  Reloader *r = data;
  Served *s = r->served;
  g_autofree char *why = guard_broken (r, s->current);
  if (why && r->previous > 0 && !r->loading) {
    const SedpGraphModel *m = reloader_serving (r);
    g_warning ("model '%s' (pipeline '%s'): version %" G_GINT64_FORMAT " on probation: %s; "
               "rolling back to version %" G_GINT64_FORMAT, r->model, s->name, m->version, why,
               r->previous);
    if (reload_start (s->current->server, s, r->previous, TRUE, "guard", NULL, NULL, NULL)) {
      r->probation_source = 0;
      r->probation_until = 0;
      return G_SOURCE_REMOVE;
    }
  }
  if (g_get_monotonic_time () < r->probation_until)
    return G_SOURCE_CONTINUE;
  r->probation_source = 0;
  r->probation_until = 0;
  return G_SOURCE_REMOVE;
}

static void
probation_start (Reloader *r, double previous_p99_us)
{
  probation_stop (r);
  if (r->probation_s == 0 || (r->max_error_rate >= 1 && r->max_p99_over_previous <= 0))
    return;
  r->previous_p99_us = previous_p99_us;
  r->probation_until = g_get_monotonic_time () + (gint64) r->probation_s * G_USEC_PER_SEC;
  r->probation_source = add_timeout (r, RELOAD_PROBATION_TICK_MS, probation_tick);
}

const SedpGraphModel *
reloader_serving (const Reloader *r)
{
  return sedp_graph_models_find (r->served->current->models, r->model);
}

/* ---- the watcher ---- */

static gboolean
is_rejected (const Reloader *r, gint64 v)
{
  for (guint i = 0; i < r->rejected->len; i++)
    if (g_array_index (r->rejected, gint64, i) == v)
      return TRUE;
  return FALSE;
}

/* Starts a reload when the policy's version is newer than the serving one and not rejected. */
static void
scan (Reloader *r)
{
  Served *s = r->served;
  if (r->loading || s->current->server->draining || !s->ready)
    return;
  g_autofree char *dir = NULL;
  g_autoptr (GError) error = NULL;
  gint64 v = sedp_bundle_repository_resolve (r->repository, r->model, r->pinned, &dir, &error);
  const SedpGraphModel *m = reloader_serving (r);
  if (v <= m->version || is_rejected (r, v))
    return;
  reload_start (s->current->server, s, 0, FALSE, "watch", NULL, NULL, NULL);
}

static gboolean
scan_now (gpointer data)
{
  Reloader *r = data;
  r->scan_source = 0;
  scan (r);
  return G_SOURCE_REMOVE;
}

static gboolean
poll_tick (gpointer data)
{
  scan (data);
  return G_SOURCE_CONTINUE;
}

/* A change in the model's folder: a scan shortly after (a burst of events makes one scan). */
static void
on_changed (GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event,
            gpointer data)
{
  Reloader *r = data;
  if (event != G_FILE_MONITOR_EVENT_CREATED && event != G_FILE_MONITOR_EVENT_MOVED_IN &&
      event != G_FILE_MONITOR_EVENT_RENAMED && event != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT)
    return;
  if (r->scan_source == 0)
    r->scan_source = add_timeout (r, RELOAD_SCAN_DELAY_MS, scan_now);
}

static void
watch (Reloader *r)
{
  g_autofree char *dir = g_build_filename (r->repository, r->model, NULL);
  g_autoptr (GFile) folder = g_file_new_for_path (dir);
  g_autoptr (GError) error = NULL;
  r->monitor = g_file_monitor_directory (folder, G_FILE_MONITOR_WATCH_MOVES, NULL, &error);
  if (r->monitor)
    g_signal_connect (r->monitor, "changed", G_CALLBACK (on_changed), r);
  else
    g_message ("model '%s': %s cannot be monitored (%s): polling every %u s", r->model, dir,
               error->message, r->poll_interval_s);
  r->poll_source = add_timeout (r, r->poll_interval_s * 1000u, poll_tick);
}

/* ---- set-up ---- */

void
reloader_new (SedpServer *server, Served *s)
{
  const SedpPipelineSpec *spec = sedp_pipeline_get_graph (s->current->pipeline)->spec;
  if (spec->models == NULL || spec->models->len == 0)
    return;
  const SedpModelSpec *ms = spec->models->pdata[0];
  Reloader *r = g_new0 (Reloader, 1);
  r->served = s;
  r->context = server->context;
  r->model = g_strdup (ms->name);
  r->repository = g_strdup (ms->repository);
  r->pinned = ms->pinned;
  r->keyed = ms->public_key != NULL;
  r->poll_interval_s = MAX (ms->poll_interval_s, 1);
  r->probation_s = ms->probation_s;
  r->max_error_rate = ms->max_error_rate;
  r->max_p99_over_previous = ms->max_p99_over_previous;
  r->warmup_pause = ms->warmup_pause;
  r->rejected = g_array_new (FALSE, FALSE, sizeof (gint64));
  s->reloader = r;
  watch (r);
}

void
reloader_free (Reloader *r)
{
  if (r == NULL)
    return;
  reloader_stop (r);
  if (r->monitor) {
    g_signal_handlers_disconnect_by_data (r->monitor, r);
    g_file_monitor_cancel (r->monitor);
    g_object_unref (r->monitor);
  }
  g_clear_pointer (&r->previous_loaded_at, g_date_time_unref);
  g_array_unref (r->rejected);
  g_free (r->last_error);
  g_free (r->model);
  g_free (r->repository);
  g_free (r);
}

/* Stops watching and probation: no reload starts after this (the server is draining). */
void
reloader_stop (Reloader *r)
{
  probation_stop (r);
  remove_source (r, &r->scan_source);
  remove_source (r, &r->poll_source);
}

void
reload_wait_idle (SedpServer *server)
{
  while (server->n_loading > 0 || server->n_retiring > 0)
    g_main_context_iteration (server->context, TRUE);
}

G_DEFINE_QUARK (sedp-reload-error-quark, sedp_reload_error)
