/* shedder — drops the least promising candidates of each request under load, before the
 * expensive stages (docs/load-shedding.md). Request scope, after an item-scope stage so that it
 * gets the gathered items: per request it orders the candidates by escore, decides the share
 * to keep by its policy (dnn: the pruning DNN on the request's features and the control share as
 * its quota; control: the share of the candidates arriving that the stages after it can
 * process, less what drains a backlog; fixed; none) and sheds the rest (status "shed"). */
#include <sedp/sedp.h>

#include "shed-math.h"

#include <math.h>
#include <string.h>

typedef enum { POLICY_NONE, POLICY_FIXED, POLICY_CONTROL, POLICY_DNN } Policy;

/* Without target_ms, a request should be done by this share of its deadline budget. */
#define DEFAULT_TARGET_SHARE 0.6
/* A pruning model's keep of this or more keeps every candidate: its label at quota 1 (no load)
 * is 1, and a small model's error there (it gave 0.992–0.996 on the CTR example) would shed a
 * candidate or two of every request when nothing needs shedding. */
#define DNN_KEEP_ALL 0.99

typedef struct {
  SedpStageContext *ctx;
  Policy policy;
  char *escore;
  double fixed_keep;
  guint min_keep;
  double max_cutoff;
  double target_us;            /* 0: DEFAULT_TARGET_SHARE of each request's budget */
  gboolean dnn_by_quota;       /* dnn_level = quota: the model's keeps scaled to the quota */
  SedpNnModel *model;          /* dnn only */
  SedpNnPlan **plans;          /* one per worker */
  gint prev_cutoff_ppm;        /* atomic: the last decision, in millionths */
  GMutex lock;                 /* guards arrived and balance */
  ShedWindow arrived;          /* the candidates that reached the stage, over the load window */
  ShedBalance balance;         /* dnn: the recent quotas and model keeps */
  SedpCounter *requests, *shed_items, *bad_escores, *fallbacks;
  SedpHistogram *cutoff_ratio;
} Shedder;

static const double cutoff_bounds[] = {0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95};

static Policy
policy_from_string (const char *s)
{
  return strcmp (s, "dnn") == 0 ? POLICY_DNN : strcmp (s, "fixed") == 0 ? POLICY_FIXED
       : strcmp (s, "none") == 0 ? POLICY_NONE : POLICY_CONTROL;
}

/* ---- the pruning model ---- */

/* The model must take one float input [N, SHED_N_FEATURES] and give a float output of one
 * value per row ([N, 1] or [N]). */
static gboolean
check_model_shape (Shedder *s, const char *path, GError **error)
{
  const char *stage = sedp_stage_context_get_name (s->ctx);
  SedpNnTensor in = {0}, out = {0};
  if (sedp_nn_model_get_n_inputs (s->model) != 1 || sedp_nn_model_get_n_outputs (s->model) < 1) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "stage '%s': pruning model %s has %u inputs and %u outputs; it must have one "
                 "input (the %d features) and one output (the keep fraction)", stage, path,
                 sedp_nn_model_get_n_inputs (s->model), sedp_nn_model_get_n_outputs (s->model),
                 SHED_N_FEATURES);
    return FALSE;
  }
  sedp_nn_model_get_input_info (s->model, 0, &in);
  sedp_nn_model_get_output_info (s->model, 0, &out);
  gboolean in_ok = in.dtype == SEDP_NN_FLOAT && in.rank == 2 && in.dims[1] == SHED_N_FEATURES;
  gboolean out_ok = out.dtype == SEDP_NN_FLOAT && (out.rank == 1 || (out.rank == 2 && out.dims[1] == 1));
  if (in_ok && out_ok)
    return TRUE;
  const SedpNnTensor *bad = in_ok ? &out : &in;
  g_autofree char *shape = bad->rank >= 0 ? sedp_nn_shape_to_string (bad->rank, bad->dims)
                                          : g_strdup ("unknown");
  g_autofree char *want = in_ok ? g_strdup ("[N, 1]") : g_strdup_printf ("[N, %d]", SHED_N_FEATURES);
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
               "stage '%s': pruning model %s: %s '%s' is %s %s; it must be float %s (train the "
               "model with `sedp shed train`)", stage, path, in_ok ? "output" : "input",
               bad->name, sedp_nn_dtype_name (bad->dtype), shape, want);
  return FALSE;
}

/* Loads the model and a plan of batch 1 per worker; a model file that does not exist leaves
 * the policy `control` (with a warning), any other problem is an error. */
static gboolean
load_model (Shedder *s, GError **error)
{
  const char *path = sedp_stage_context_get_string (s->ctx, "model");
  const char *stage = sedp_stage_context_get_name (s->ctx);
  if (path == NULL || !g_file_test (path, G_FILE_TEST_EXISTS)) {
    g_warning ("stage '%s': policy dnn without a pruning model (%s%s): the control policy sheds "
               "instead (train one with `sedp shed train`)", stage, path ? "no file " : "option "
               "'model' not set", path ? path : "");
    s->policy = POLICY_CONTROL;
    return TRUE;
  }
  s->model = sedp_nn_model_load (path, error);
  if (s->model == NULL || !check_model_shape (s, path, error))
    return FALSE;
  guint workers = sedp_stage_context_get_parallelism (s->ctx);
  s->plans = g_new0 (SedpNnPlan *, workers);
  for (guint w = 0; w < workers; w++)
    if ((s->plans[w] = sedp_nn_plan_new (s->model, 1, error)) == NULL) {
      g_prefix_error (error, "stage '%s': pruning model %s: ", stage, path);
      return FALSE;
    }
  return TRUE;
}

/* The model's keep fraction for one request, or NAN when it failed. */
static double
model_keep (Shedder *s, guint worker, const float *features)
{
  SedpNnPlan *plan = s->plans[worker];
  SedpNnTensor in = *sedp_nn_plan_get_input (plan, 0);
  in.data = (gpointer) features;
  guint n_out = sedp_nn_plan_get_n_outputs (plan);
  SedpNnTensor *out = g_newa (SedpNnTensor, n_out);
  g_autoptr (GError) error = NULL;
  if (!sedp_nn_plan_run (plan, 1, &in, n_out, out, &error)) {
    g_debug ("stage '%s': the pruning model failed: %s", sedp_stage_context_get_name (s->ctx),
             error->message);
    return NAN;
  }
  double keep = ((const float *) out[0].data)[0];
  return !isfinite (keep) ? NAN : keep >= DNN_KEEP_ALL ? 1.0 : keep;
}

/* ---- the decision ---- */

/* The `control` policy's share for a request of @n candidates (shed_control_share): from the
 * backlog, the service rate and the candidates arriving. The backlog is the work in flight
 * drained at the service rate, which is the items finished per second when that is more (a busy
 * pipeline's throughput is its capacity), else what the stages after this one can process on
 * one core (at light load the throughput is only the demand); the candidates arriving are those
 * that reached this stage over the same window as the item rate (so that at light load the two
 * move together). So the requests of a moment lose about the same
 * share (recall falls faster the more is cut, so cutting a few deeply loses more of the top K).
 * A request that would still be late, because the share that fits its target behind the work
 * in flight (shed_fit_share: target_ms, else 60 % of its deadline budget) is under half of it,
 * is cut to that. */
static double
control_keep (Shedder *s, SedpRequest *req, guint n)
{
  SedpLoadSnapshot load;
  sedp_stage_context_read_load (s->ctx, &load);
  double elapsed = (double) sedp_request_get_elapsed_us (req);
  double remaining = (double) sedp_request_get_remaining_us (req);
  double target = s->target_us > 0 ? s->target_us : DEFAULT_TARGET_SHARE * (elapsed + remaining);
  double rate = MAX (load.item_rate, load.downstream_item_capacity);
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&s->lock);
  gint64 slice_us = MAX ((gint64) (load.window_s * 1e6 / SHED_WINDOW_SLICES), 1);
  shed_window_add (&s->arrived, now, slice_us, n);
  double offered = load.window_s > 0 ? shed_window_sum (&s->arrived, now, slice_us) / load.window_s
                                     : 0.0;
  g_mutex_unlock (&s->lock);
  double drain_s = rate > 0 ? load.items_in_flight / rate : 0.0;
  double share = shed_control_share (drain_s, target / 1e6, rate, offered);
  double fit = shed_fit_share (load.items_in_flight, rate, n, elapsed, target);
  return fit < 0.5 * share ? fit : share; /* a late request: cut to fit */
}

/* The pruning DNN's keep fraction — with dnn_level = quota asked at the recent requests' level
 * (shed_balance_level) and scaled so that they keep what their quotas allow
 * (shed_balance_keep) — or the quota (the control policy's share) when the model fails. */
static double
dnn_keep (Shedder *s, SedpRequest *req, const float *escore, guint n, guint worker, double quota)
{
  ShedEscoreStats stats;
  shed_escore_stats (escore, n, &stats);
  double floor = shed_floor_share (n, s->min_keep, s->max_cutoff);
  double level = quota;
  if (s->dnn_by_quota && quota < 1.0) {
    g_mutex_lock (&s->lock);
    level = shed_balance_level (&s->balance, quota, n, floor);
    g_mutex_unlock (&s->lock);
  }
  ShedContext c = {
    .quota = level,
    .prev_cutoff = g_atomic_int_get (&s->prev_cutoff_ppm) / 1e6,
    .queue = (double) worker / sedp_stage_context_get_parallelism (s->ctx),
    .budget_s = MAX (0.0, sedp_request_get_remaining_us (req) / 1e6),
  };
  float features[SHED_N_FEATURES];
  shed_features (&c, &stats, n, features);
  double keep = model_keep (s, worker, features);
  if (isnan (keep)) {
    sedp_counter_add (s->fallbacks, 1);
    return quota;
  }
  if (!s->dnn_by_quota)
    return keep;
  g_mutex_lock (&s->lock);
  keep = shed_balance_keep (&s->balance, quota, keep, n, floor);
  g_mutex_unlock (&s->lock);
  return keep;
}

/* The share of the @n candidates to keep, by the stage's policy. */
static double
decide_keep (Shedder *s, SedpRequest *req, const float *escore, guint n, guint worker)
{
  switch (s->policy) {
  case POLICY_NONE:
    return 1.0;
  case POLICY_FIXED:
    return s->fixed_keep;
  case POLICY_CONTROL:
    return control_keep (s, req, n);
  default:
    return dnn_keep (s, req, escore, n, worker, control_keep (s, req, n));
  }
}

/* The escores of the gathered frame @f, or NULL when it has no usable escore column (then the
 * candidates keep their order). */
static const float *
escores_of (Shedder *s, const SedpFrame *f)
{
  const SedpColumn *c = sedp_frame_get_column (f, s->escore);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32 ||
      sedp_column_get_width (c) != 1 || sedp_column_is_broadcast (c))
    return NULL;
  return sedp_column_get_float32 (c);
}

static void
shed_request (Shedder *s, SedpEvent *ev, guint worker)
{
  SedpFrame *f = sedp_event_get_frame (ev);
  guint n = sedp_frame_get_n_rows (f);
  if (!sedp_frame_has_item_rows (f) || n <= 1)
    return; /* nothing to choose from */
  SedpRequest *req = sedp_event_get_request (ev);
  const float *escore = escores_of (s, f);
  guint keep = shed_keep_count (decide_keep (s, req, escore, n, worker), n, s->min_keep,
                                s->max_cutoff);
  g_autofree guint *order = g_new (guint, n);
  sedp_counter_add (s->bad_escores, shed_order (escore, n, order));
  for (guint i = keep; i < n; i++)
    sedp_frame_shed_row (f, order[i]);
  double cutoff = (double) (n - keep) / n;
  g_atomic_int_set (&s->prev_cutoff_ppm, (gint) (cutoff * 1e6));
  sedp_counter_add (s->requests, 1);
  sedp_counter_add (s->shed_items, n - keep);
  sedp_histogram_observe (s->cutoff_ratio, cutoff);
}

/* ---- the stage ---- */

static void
shedder_destroy (gpointer instance)
{
  Shedder *s = instance;
  for (guint w = 0; s->plans && w < sedp_stage_context_get_parallelism (s->ctx); w++)
    sedp_nn_plan_free (s->plans[w]);
  g_free (s->plans);
  if (s->model)
    sedp_nn_model_unref (s->model);
  g_mutex_clear (&s->lock);
  g_free (s->escore);
  g_free (s);
}

static void
register_metrics (Shedder *s)
{
  SedpStageContext *ctx = s->ctx;
  s->requests = sedp_stage_context_add_counter (ctx, "shedder_requests_total",
                                                "requests of two or more candidates decided on");
  /* Shedding under load (control, dnn) is a degraded answer; a fixed share is the design. */
  gboolean by_load = s->policy == POLICY_CONTROL || s->policy == POLICY_DNN;
  s->shed_items = (by_load ? sedp_stage_context_add_degraded_counter
                           : sedp_stage_context_add_counter) (ctx, "shedder_shed_items_total",
                                                              "candidates shed");
  s->bad_escores = sedp_stage_context_add_counter (ctx, "shedder_bad_escores_total",
                                                   "NaN or infinite escores (ordered last)");
  s->fallbacks = sedp_stage_context_add_counter (ctx, "shedder_fallbacks_total",
                                                 "requests the pruning model failed on (the "
                                                 "control policy decided)");
  s->cutoff_ratio = sedp_stage_context_add_histogram (ctx, "shedder_cutoff_ratio",
                                                      "share of a request's candidates shed",
                                                      cutoff_bounds, G_N_ELEMENTS (cutoff_bounds));
}

static gpointer
shedder_create (SedpStageContext *ctx, GError **error)
{
  Shedder *s = g_new0 (Shedder, 1);
  s->ctx = ctx;
  g_mutex_init (&s->lock);
  s->policy = policy_from_string (sedp_stage_context_get_string (ctx, "policy"));
  s->escore = g_strdup (sedp_stage_context_get_string (ctx, "escore"));
  s->fixed_keep = sedp_stage_context_get_double (ctx, "fixed_keep");
  s->min_keep = (guint) sedp_stage_context_get_int (ctx, "min_keep");
  s->max_cutoff = sedp_stage_context_get_double (ctx, "max_cutoff");
  s->target_us = sedp_stage_context_get_double (ctx, "target_ms") * 1000;
  s->dnn_by_quota = strcmp (sedp_stage_context_get_string (ctx, "dnn_level"), "quota") == 0;
  register_metrics (s);
  if (s->policy == POLICY_DNN && !load_model (s, error)) {
    shedder_destroy (s);
    return NULL;
  }
  return s;
}

static gboolean
shedder_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                 GError **error)
{
  for (guint e = 0; e < n_events; e++)
    shed_request (instance, events[e], worker);
  return TRUE;
}

static const SedpOptionSpec shedder_options[] = {
  SEDP_OPTION_ENUM_SPEC ("policy", "control", "dnn|control|fixed|none",
                         "how the share kept is chosen: the pruning DNN, the share of the arriving "
                         "candidates that the stages after the shedder can process, a fixed share, "
                         "or nothing shed"),
  SEDP_OPTION_PATH_SPEC ("model", NULL, FALSE,
                         "the pruning DNN (ONNX, from `sedp shed train`), for policy dnn"),
  SEDP_OPTION_STRING_SPEC ("escore", "escore",
                           "the float32 column the candidates are ordered by (best first)"),
  SEDP_OPTION_DOUBLE_SPEC ("fixed_keep", "1", 0, 1, "the share kept by policy fixed"),
  SEDP_OPTION_INT_SPEC ("min_keep", "10", 0, 100000000,
                        "never fewer candidates kept (at least the responder's top K)"),
  SEDP_OPTION_DOUBLE_SPEC ("max_cutoff", "0.9", 0, 1, "never a larger share shed"),
  SEDP_OPTION_DOUBLE_SPEC ("target_ms", "0", 0, 3600000,
                           "when a request should be done, from its start (0: at 60 % of its "
                           "deadline budget)"),
  SEDP_OPTION_ENUM_SPEC ("dnn_level", "quota", "quota|model",
                         "what sets how much policy dnn keeps in all: the quota (the control "
                         "share; the model spreads it over the requests) or the model's keeps "
                         "as they are"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "shedder", .version = SEDP_VERSION,
                   .description = "sheds the least promising candidates of each request under load",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = shedder_options,
                   .create = shedder_create, .process = shedder_process,
                   .destroy = shedder_destroy);
