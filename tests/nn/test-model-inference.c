/* sedp nn tests: the model_inference stage in running pipelines — scores equal a direct plan
 * run and an independent reference, several frames per call, broadcast columns, instances and
 * selection, column mapping, per-event and per-row errors, create errors. */
#define _GNU_SOURCE
#include "nn-test.h"
#include "../runtime/runtime-helpers.h"

#include "graph/graph.h"
#include "nn/synth.h"
#include "runtime/pipeline.h"

#include <glib/gstdio.h>
#include <sched.h>

/* ---- the test model ----
 * user [N, 4] float, item [N, 3] float, ids [N, 2] int64
 *   es    = ReduceSum (Gather (emb [10, 3], ids), axes 1)          → emb_sum [N, 3]
 *   x     = Concat (user, item, es)                                 [N, 10]
 *   h     = Relu (Gemm (x, W1 [10, 8], b1))                         [N, 8]
 *   ctr   = Sigmoid (Gemm (h, W2 [8, 1], b2))                       → ctr [N, 1]
 */
#define V 10
#define E 3
#define H 8

typedef struct {
  float emb[V * E];
  float W1[10 * H], b1[H];
  float W2[H], b2[1];
} Params;

static Params params;
static char *tmp_dir;
static char *model_path;       /* the model above */
static char *fixed_model_path; /* the same with a fixed batch of 1 */

static void
params_init (void)
{
  GRand *rng = g_rand_new_with_seed (4242);
  for (guint i = 0; i < G_N_ELEMENTS (params.emb); i++)
    params.emb[i] = (float) g_rand_double_range (rng, -1, 1);
  for (guint i = 0; i < G_N_ELEMENTS (params.W1); i++)
    params.W1[i] = (float) g_rand_double_range (rng, -0.7, 0.7);
  for (guint i = 0; i < H; i++)
    params.b1[i] = (float) g_rand_double_range (rng, -0.3, 0.3);
  for (guint i = 0; i < H; i++)
    params.W2[i] = (float) g_rand_double_range (rng, -1, 1);
  params.b2[0] = 0.1f;
  g_rand_free (rng);
}

static SedpNnModel *
build_model (gint64 batch_dim)
{
  SedpNnModel *m = tb_new (13);
  tb_input (m, "user", SEDP_NN_FLOAT, 2, I64 (batch_dim, 4));
  tb_input (m, "item", SEDP_NN_FLOAT, 2, I64 (batch_dim, 3));
  tb_input (m, "ids", SEDP_NN_INT64, 2, I64 (batch_dim, 2));
  INIT_F (m, "emb", params.emb, V, E);
  INIT_F (m, "W1", params.W1, 10, H);
  INIT_F (m, "b1", params.b1, H);
  INIT_F (m, "W2", params.W2, H, 1);
  INIT_F (m, "b2", params.b2, 1);
  INTS (m, "ax1", 1);
  tb_node (m, "Gather", "lookup", "emb,ids", "e");
  SedpNnNode *n = tb_node (m, "ReduceSum", "pool", "e,ax1", "emb_sum");
  tb_attr_i (n, "keepdims", 0);
  n = tb_node (m, "Concat", "cat", "user,item,emb_sum", "x");
  tb_attr_i (n, "axis", 1);
  tb_node (m, "Gemm", "fc1", "x,W1,b1", "h0");
  tb_node (m, "Relu", "relu", "h0", "h");
  tb_node (m, "Gemm", "fc2", "h,W2,b2", "logit");
  tb_node (m, "Sigmoid", "sigmoid", "logit", "ctr");
  tb_output (m, "ctr", SEDP_NN_FLOAT, 2, I64 (batch_dim, 1));
  tb_output (m, "emb_sum", SEDP_NN_FLOAT, 2, I64 (batch_dim, E));
  return m;
}

/* Independent reference of one row. */
static void
model_ref (const float *user, const float *item, const gint64 *ids, double *ctr, double *es)
{
  double x[10];
  for (int k = 0; k < 4; k++)
    x[k] = user[k];
  for (int k = 0; k < 3; k++)
    x[4 + k] = item[k];
  for (int d = 0; d < E; d++) {
    double s = 0;
    for (int j = 0; j < 2; j++)
      s += params.emb[(ids[j] < 0 ? ids[j] + V : ids[j]) * E + d];
    x[7 + d] = es[d] = s;
  }
  double logit = params.b2[0];
  for (int j = 0; j < H; j++) {
    double h = params.b1[j];
    for (int k = 0; k < 10; k++)
      h += x[k] * params.W1[k * H + j];
    logit += MAX (h, 0) * params.W2[j];
  }
  *ctr = 1.0 / (1.0 + exp (-logit));
}

/* ---- requests ---- */

static float
user_feat (guint seq, guint k)
{
  return (float) sin (seq * 1.7 + k * 0.9);
}

static float
item_feat (guint seq, guint i, guint k)
{
  return (float) cos (seq * 0.31 + i * 1.3 + k * 0.7);
}

static gint64
item_id (guint seq, guint i, guint k)
{
  return (gint64) ((seq * 7 + i * 3 + k * 5) % V);
}

typedef enum { IDS_INT64, IDS_UINT64, IDS_IDLIST } IdsKind;

typedef struct {
  guint n_items;
  gboolean user_per_item;   /* user features as an item column instead of a broadcast one */
  const char *item_column;  /* default "item"; NULL: leave the column out */
  guint item_width;         /* default 3 */
  IdsKind ids;
  int bad_idlist_item;      /* IDS_IDLIST: this item gets 3 ids (-1: none) */
} ReqSpec;

static SedpRequest *
make_req (guint seq, const ReqSpec *spec)
{
  char id[16];
  g_snprintf (id, sizeof id, "r%u", seq);
  SedpRequest *r = sedp_request_new (id, 0);
  guint n = spec->n_items;
  SedpFrame *user = sedp_frame_new (1);
  SedpFrame *items = sedp_frame_new (n);
  if (spec->user_per_item) {
    float *u = sedp_column_float32_data (sedp_frame_add_column (items, "user", SEDP_COLUMN_FLOAT32, 4));
    for (guint i = 0; i < n; i++)
      for (guint k = 0; k < 4; k++)
        u[i * 4 + k] = user_feat (seq, k);
  } else {
    float *u = sedp_column_float32_data (sedp_frame_add_column (user, "user", SEDP_COLUMN_FLOAT32, 4));
    for (guint k = 0; k < 4; k++)
      u[k] = user_feat (seq, k);
  }
  if (spec->item_column) {
    guint w = spec->item_width ? spec->item_width : 3;
    float *it = sedp_column_float32_data (sedp_frame_add_column (items, spec->item_column, SEDP_COLUMN_FLOAT32, w));
    for (guint i = 0; i < n; i++)
      for (guint k = 0; k < w; k++)
        it[i * w + k] = item_feat (seq, i, k);
  }
  switch (spec->ids) {
  case IDS_INT64: {
    gint64 *v = sedp_column_int64_data (sedp_frame_add_column (items, "ids", SEDP_COLUMN_INT64, 2));
    for (guint i = 0; i < n; i++)
      for (guint k = 0; k < 2; k++)
        v[i * 2 + k] = item_id (seq, i, k);
    break;
  }
  case IDS_UINT64: {
    guint64 *v = sedp_column_uint64_data (sedp_frame_add_column (items, "ids", SEDP_COLUMN_UINT64, 2));
    for (guint i = 0; i < n; i++)
      for (guint k = 0; k < 2; k++)
        v[i * 2 + k] = (guint64) item_id (seq, i, k);
    break;
  }
  case IDS_IDLIST: {
    guint total = 2 * n + (spec->bad_idlist_item >= 0 ? 1 : 0);
    guint32 *offsets = NULL;
    guint64 *v = sedp_column_idlist_data (sedp_frame_add_idlist (items, "ids", total), &offsets);
    guint pos = 0;
    for (guint i = 0; i < n; i++) {
      offsets[i] = pos;
      guint cnt = (int) i == spec->bad_idlist_item ? 3 : 2;
      for (guint k = 0; k < cnt; k++)
        v[pos++] = (guint64) item_id (seq, i, k % 2);
    }
    offsets[n] = pos;
    break;
  }
  }
  sedp_request_set_frames (r, user, items);
  return r;
}

/* ---- pipelines ---- */

/* A pipeline (not started) from text, or NULL with @error. */
static SedpPipeline *
new_pipeline (const char *text, GError **error)
{
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), error) : NULL;
  return graph ? sedp_pipeline_new (graph, error) : NULL;
}

/* src (request scope) → dnn (model_inference) with @extra keys; parallelism 2, batch 8 and
 * batch_timeout_us 3000 unless @extra sets them. */
static char *
pipeline_text (const char *model, const char *extra)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s, "[pipeline]\nframe_rows = 4\ndeadline_ms = 120000\n"
                      "[stage src]\nplugin = passthrough\nscope = request\n"
                      "[stage dnn]\nplugin = model_inference\nafter = src\nmodel = %s\n",
                   model);
  const char *defaults[] = {"parallelism = 2\n", "batch = 8\n", "batch_timeout_us = 3000\n"};
  for (guint k = 0; k < G_N_ELEMENTS (defaults); k++) {
    g_autofree char *key = g_strndup (defaults[k], strcspn (defaults[k], " "));
    g_autofree char *line_start = g_strconcat (key, " =", NULL);
    g_autofree char *line = g_strconcat ("\n", line_start, NULL);
    gboolean set = extra && (g_str_has_prefix (extra, line_start) || strstr (extra, line));
    if (!set)
      g_string_append (s, defaults[k]);
  }
  g_string_append (s, extra ? extra : "");
  /* The suite's second run (nn-ocl-model-inference) runs every case on the OpenCL engine. */
  if (g_strcmp0 (g_getenv ("SEDP_TEST_ENGINE"), "opencl") == 0 &&
      !(extra && strstr (extra, "engine =")))
    g_string_append (s, "engine = opencl\n");
  return g_string_free (s, FALSE);
}

static SedpPipeline *
start (const char *model, const char *extra)
{
  g_autofree char *text = pipeline_text (model, extra);
  g_autoptr (GError) error = NULL;
  SedpPipeline *p = new_pipeline (text, &error);
  if (p)
    sedp_pipeline_start (p, &error);
  if (error)
    fprintf (stderr, "\n  pipeline error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  return p;
}

/* Submits requests seq 0..n-1 made from specs[seq] and waits for all. */
static void
run_requests (SedpPipeline *p, Collector *c, guint n, const ReqSpec *specs)
{
  for (guint i = 0; i < n; i++) {
    SedpRequest *r = make_req (i, &specs[i]);
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (c, n, 60), n);
}

static guint
seq_of (SedpRequest *r)
{
  return (guint) g_ascii_strtoull (sedp_request_get_id (r) + 1, NULL, 10);
}

static const float *
floats_at (const SedpFrame *f, const char *name, guint row, guint width)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32 ||
      sedp_column_get_width (c) != width)
    return NULL;
  return sedp_column_get_float32 (c) + (gsize) (sedp_column_is_broadcast (c) ? 0 : row) * width;
}

static gboolean
near (double got, double want, double rtol)
{
  return fabs (got - want) <= rtol * MAX (fabs (want), 1e-3);
}

/* Scores of request @seq with the model run directly on all its items at once. */
static void
direct_scores (SedpNnModel *m, guint seq, guint n, float *ctr, float *es)
{
  g_autofree float *user = g_new (float, n * 4), *item = g_new (float, n * 3);
  g_autofree gint64 *ids = g_new (gint64, n * 2);
  for (guint i = 0; i < n; i++) {
    for (guint k = 0; k < 4; k++)
      user[i * 4 + k] = user_feat (seq, k);
    for (guint k = 0; k < 3; k++)
      item[i * 3 + k] = item_feat (seq, i, k);
    for (guint k = 0; k < 2; k++)
      ids[i * 2 + k] = item_id (seq, i, k);
  }
  SedpNnPlan *plan = sedp_nn_plan_new (m, n, NULL);
  g_assert (plan);
  SedpNnTensor in[3] = {TT (SEDP_NN_FLOAT, user, n, 4), TT (SEDP_NN_FLOAT, item, n, 3),
                        TT (SEDP_NN_INT64, ids, n, 2)};
  SedpNnTensor out[2];
  g_assert (sedp_nn_plan_run (plan, 3, in, 2, out, NULL));
  memcpy (ctr, out[0].data, sizeof (float) * n);
  memcpy (es, out[1].data, sizeof (float) * n * E);
  sedp_nn_plan_free (plan);
}

/* Checks every item of every completed request against the direct run and the reference. Items
 * listed in @failed_item (per seq, -1: none) must have failed instead. Returns the bad items. */
static guint
check_scores (Collector *c, const ReqSpec *specs, const char *ctr_col, const char *es_col,
              const int *failed_item)
{
  g_autoptr (SedpNnModel) m = sedp_nn_model_load (model_path, NULL);
  g_assert (m);
  guint bad = 0;
  for (guint k = 0; k < c->done->len; k++) {
    SedpRequest *r = c->done->pdata[k];
    guint seq = seq_of (r);
    const SedpResult *res = sedp_request_get_result (r);
    guint n = specs[seq].n_items;
    int fail_i = failed_item ? failed_item[seq] : -1;
    SedpStatus want_status = fail_i < 0 ? SEDP_STATUS_OK : n == 1 ? SEDP_STATUS_FAILED : SEDP_STATUS_PARTIAL;
    if (sedp_result_get_status (res) != want_status) {
      fprintf (stderr, "\n  request r%u: status %s (%s)", seq,
               sedp_status_to_string (sedp_result_get_status (res)),
               sedp_result_get_message (res) ? sedp_result_get_message (res) : "");
      bad++;
    }
    CU_ASSERT_EQUAL (sedp_result_get_n_items (res), n);
    g_autofree float *dctr = g_new (float, n), *des = g_new (float, n * E);
    direct_scores (m, seq, n, dctr, des);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      if ((int) i == fail_i) {
        if (sedp_result_get_item_status (res, i) != SEDP_ITEM_FAILED)
          bad++;
        continue;
      }
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      if (f == NULL || sedp_result_get_item_status (res, i) != SEDP_ITEM_SCORED) {
        bad++;
        continue;
      }
      const float *ctr = floats_at (f, ctr_col, row, 1);
      const float *es = es_col ? floats_at (f, es_col, row, E) : NULL;
      float user[4], item[3];
      gint64 ids[2];
      for (guint q = 0; q < 4; q++)
        user[q] = user_feat (seq, q);
      for (guint q = 0; q < 3; q++)
        item[q] = item_feat (seq, i, q);
      for (guint q = 0; q < 2; q++)
        ids[q] = item_id (seq, i, q);
      double rctr, res_[E];
      model_ref (user, item, ids, &rctr, res_);
      gboolean ok = ctr && near (ctr[0], rctr, 1e-5) && near (ctr[0], dctr[i], 1e-5);
      if (es_col)
        for (int d = 0; d < E && ok; d++)
          ok = es && near (es[d], res_[d], 1e-5) && near (es[d], des[i * E + d], 1e-5);
      if (!ok) {
        if (bad < 5)
          fprintf (stderr, "\n  r%u item %u: ctr %g, want %g (direct %g)", seq, i,
                   ctr ? ctr[0] : NAN, rctr, dctr[i]);
        bad++;
      }
    }
  }
  return bad;
}

static guint64
counter_value (SedpPipeline *p, const char *name)
{
  return sedp_counter_get (sedp_metrics_counter (sedp_pipeline_get_metrics (p), "dnn", name, NULL));
}

static double
stat_value (SedpPipeline *p, const char *name)
{
  g_autoptr (GString) out = g_string_new (NULL);
  sedp_pipeline_collect_stats (p, out);
  g_autofree char *needle = g_strdup_printf ("dnn %s ", name);
  const char *at = strstr (out->str, needle);
  return at ? g_ascii_strtod (at + strlen (needle), NULL) : -1;
}

static ReqSpec *
default_specs (guint n)
{
  ReqSpec *s = g_new0 (ReqSpec, n);
  for (guint i = 0; i < n; i++)
    s[i] = (ReqSpec){.n_items = 1 + (i * 5) % 13, .item_column = "item", .bad_idlist_item = -1};
  return s;
}

static guint
total_items (const ReqSpec *s, guint n)
{
  guint t = 0;
  for (guint i = 0; i < n; i++)
    t += s[i].n_items;
  return t;
}

/* ---- tests ---- */

/* Many requests, several frames per call, broadcast and per-item user columns mixed. */
static void
test_scores (void)
{
  const guint n = g_getenv ("SEDP_VALGRIND") ? 12 : 40;
  g_autofree ReqSpec *specs = default_specs (n);
  for (guint i = 0; i < n; i++)
    specs[i].user_per_item = i % 3 == 1;
  SedpPipeline *p = start (model_path, NULL);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  guint64 rows = counter_value (p, "rows_scored_total"), runs = counter_value (p, "engine_runs_total");
  CU_ASSERT_EQUAL (rows, total_items (specs, n));
  CU_ASSERT (runs >= 1 && runs <= rows);
  CU_ASSERT (stat_value (p, "plans_cached") >= 1);
  CU_ASSERT_EQUAL (stat_value (p, "instances"), 1);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* Frames of one call are concatenated into one run: with a single worker and large batches,
 * fewer runs than frames. */
static void
test_frames_concatenated (void)
{
  const guint n = 16;
  g_autofree ReqSpec *specs = default_specs (n);
  for (guint i = 0; i < n; i++)
    specs[i].n_items = 8; /* two frames of 4 each */
  SedpPipeline *p = start (model_path, "batch_timeout_us = 200000\n");
  /* parallelism 2 in the template; the batch of 8 events still fills up */
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  guint64 runs = counter_value (p, "engine_runs_total");
  CU_ASSERT_EQUAL (counter_value (p, "rows_scored_total"), n * 8);
  CU_ASSERT (runs < n * 2); /* fewer runs than frames */
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* max_batch_rows cuts the concatenated rows (and frames) into several runs. */
static void
test_max_batch_rows (void)
{
  const guint n = 10;
  g_autofree ReqSpec *specs = default_specs (n);
  SedpPipeline *p = start (model_path, "max_batch_rows = 3\n");
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  guint total = total_items (specs, n);
  CU_ASSERT_EQUAL (counter_value (p, "rows_scored_total"), total);
  CU_ASSERT (counter_value (p, "engine_runs_total") >= (total + 2) / 3);
  CU_ASSERT (stat_value (p, "plans_cached") <= 2 * 3); /* row counts 1, 2, 3 per worker */
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* row_granule pads runs to multiples of 4 rows: the same scores, fewer distinct plans. */
static void
test_row_granule (void)
{
  const guint n = 12;
  g_autofree ReqSpec *specs = default_specs (n);
  SedpPipeline *p = start (model_path, "row_granule = 4\nmax_batch_rows = 10\nparallelism = 1\n");
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  CU_ASSERT_EQUAL (counter_value (p, "rows_scored_total"), total_items (specs, n));
  CU_ASSERT (counter_value (p, "plans_compiled_total") <= 3); /* 4, 8 and 12 rows */
  CU_ASSERT (stat_value (p, "plans_cached") <= 3);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
instances_case (const char *select)
{
  const guint n = g_getenv ("SEDP_VALGRIND") ? 12 : 30;
  g_autofree ReqSpec *specs = default_specs (n);
  g_autofree char *extra = g_strdup_printf ("instances = 3\nselect = %s\nbatch = 1\n", select);
  SedpPipeline *p = start (model_path, extra);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  CU_ASSERT_EQUAL (stat_value (p, "instances"), 3);
  double used = 0, runs = 0;
  for (guint k = 0; k < 3; k++) {
    g_autofree char *name = g_strdup_printf ("instance_%u_runs", k);
    double v = stat_value (p, name);
    runs += v;
    used += v > 0;
  }
  CU_ASSERT_EQUAL (runs, (double) counter_value (p, "engine_runs_total"));
  CU_ASSERT (used >= 2); /* the runs are spread over the instances */
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static void
test_instances_rr (void)
{
  instances_case ("rr");
}

static void
test_instances_mod (void)
{
  instances_case ("mod");
}

/* Column mapping: inputs = item=item_feat; outputs = ctr=score (emb_sum not written). */
static void
test_mapping (void)
{
  const guint n = 6;
  g_autofree ReqSpec *specs = default_specs (n);
  for (guint i = 0; i < n; i++)
    specs[i].item_column = "item_feat";
  SedpPipeline *p = start (model_path, "inputs = item=item_feat\noutputs = ctr=score\n");
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "score", NULL, NULL), 0);
  for (guint k = 0; k < c.done->len; k++) {
    guint row;
    const SedpFrame *f = sedp_result_get_item_frame (sedp_request_get_result (c.done->pdata[k]), 0, &row);
    CU_ASSERT (f && sedp_frame_get_column (f, "emb_sum") == NULL && sedp_frame_get_column (f, "ctr") == NULL);
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* drop_inputs = true: the scores are the same and the frames leave without the input columns
 * (the item's and the user's, broadcast or per item). */
static void
test_drop_inputs (void)
{
  const guint n = 9;
  g_autofree ReqSpec *specs = default_specs (n);
  for (guint i = 0; i < n; i++) {
    specs[i].item_column = "item_feat";
    specs[i].user_per_item = i % 2 == 1;
  }
  SedpPipeline *p = start (model_path, "inputs = item=item_feat\noutputs = ctr=score\ndrop_inputs = true\n");
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "score", NULL, NULL), 0);
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CU_ASSERT_PTR_NOT_NULL_FATAL (f);
      CU_ASSERT_PTR_NOT_NULL (sedp_frame_get_column (f, "score"));
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "item_feat"));
      CU_ASSERT_PTR_NULL (sedp_frame_get_column (f, "user"));
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* uint64 and idlist id columns feed the int64 input. */
static void
test_id_columns (void)
{
  const guint n = 8;
  g_autofree ReqSpec *specs = default_specs (n);
  for (guint i = 0; i < n; i++)
    specs[i].ids = i % 2 ? IDS_UINT64 : IDS_IDLIST;
  SedpPipeline *p = start (model_path, NULL);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

static gboolean
any_item_message_has (SedpRequest *r, const char *a, const char *b)
{
  const SedpResult *res = sedp_request_get_result (r);
  for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
    const char *msg = sedp_result_get_item_message (res, i);
    if (msg && strstr (msg, a) && (!b || strstr (msg, b)))
      return TRUE;
  }
  fprintf (stderr, "\n  no item message of %s has '%s'%s%s (request message: %s)",
           sedp_request_get_id (r), a, b ? " and " : "", b ? b : "",
           sedp_result_get_message (res) ? sedp_result_get_message (res) : "none");
  return FALSE;
}

/* A missing column, a column of the wrong width and a wrong type fail only their requests. */
static void
test_column_errors (void)
{
  const guint n = 9;
  g_autofree ReqSpec *specs = default_specs (n);
  specs[2].item_column = NULL;      /* missing */
  specs[5].item_width = 4;          /* wrong width */
  specs[7].item_column = "other";   /* missing too, the column is elsewhere */
  SedpPipeline *p = start (model_path, "batch = 16\nbatch_timeout_us = 20000\n");
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    guint seq = seq_of (r);
    SedpStatus st = sedp_result_get_status (sedp_request_get_result (r));
    if (seq == 2 || seq == 5 || seq == 7) {
      CU_ASSERT_EQUAL (st, SEDP_STATUS_FAILED);
      if (seq == 5) {
        CU_ASSERT (any_item_message_has (r, "'item'", "width 4"));
      } else {
        CU_ASSERT (any_item_message_has (r, "column 'item'", "missing"));
      }
      CU_ASSERT (any_item_message_has (r, "model input 'item'", NULL));
      CU_ASSERT (any_item_message_has (r, "dnn", NULL));
    } else {
      CU_ASSERT_EQUAL (st, SEDP_STATUS_OK);
    }
  }
  /* the good requests are scored right */
  GPtrArray *good = g_ptr_array_new ();
  for (guint k = 0; k < c.done->len; k++) {
    guint seq = seq_of (c.done->pdata[k]);
    if (seq != 2 && seq != 5 && seq != 7)
      g_ptr_array_add (good, c.done->pdata[k]);
  }
  Collector g = {.done = good};
  CU_ASSERT_EQUAL (check_scores (&g, specs, "ctr", "emb_sum", NULL), 0);
  g_ptr_array_unref (good);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* Wrong type: a float model input fed from an int64 column. */
static void
test_column_type_error (void)
{
  SedpPipeline *p = start (model_path, "inputs = item=ids\n");
  Collector c;
  collector_init (&c);
  ReqSpec spec = {.n_items = 3, .item_column = "item", .bad_idlist_item = -1};
  run_requests (p, &c, 1, &spec);
  SedpRequest *r = c.done->pdata[0];
  CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (r)), SEDP_STATUS_FAILED);
  CU_ASSERT (any_item_message_has (r, "column 'ids'", "int64"));
  CU_ASSERT (any_item_message_has (r, "model input 'item'", "float32"));
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* An idlist row with the wrong number of ids fails that row only. */
static void
test_idlist_row_error (void)
{
  const guint n = 5;
  g_autofree ReqSpec *specs = default_specs (n);
  int failed[5] = {-1, -1, -1, -1, -1};
  for (guint i = 0; i < n; i++) {
    specs[i].ids = IDS_IDLIST;
    specs[i].n_items = 6;
  }
  specs[1].bad_idlist_item = 4;
  specs[3].bad_idlist_item = 0;
  failed[1] = 4;
  failed[3] = 0;
  SedpPipeline *p = start (model_path, NULL);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", failed), 0);
  for (guint k = 0; k < c.done->len; k++)
    if (seq_of (c.done->pdata[k]) == 1)
      CU_ASSERT (any_item_message_has (c.done->pdata[k], "3 ids", "expected 2"));
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* An id out of the embedding table fails the requests that have it, not the others of the
 * engine run. */
static void
test_engine_error_isolated (void)
{
  SedpPipeline *p = start (model_path, "parallelism = 1\nbatch = 16\nbatch_timeout_us = 50000\n");
  Collector c;
  collector_init (&c);
  const guint n = 6;
  for (guint i = 0; i < n; i++) {
    ReqSpec spec = {.n_items = 3, .item_column = "item", .bad_idlist_item = -1};
    SedpRequest *r = make_req (i, &spec);
    if (i == 2) {
      /* replace the ids of this request with one out of range */
      SedpFrame *items = sedp_frame_new (3);
      gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "ids", SEDP_COLUMN_INT64, 2));
      float *it = sedp_column_float32_data (sedp_frame_add_column (items, "item", SEDP_COLUMN_FLOAT32, 3));
      for (guint q = 0; q < 9; q++)
        it[q] = 0.5f;
      for (guint q = 0; q < 6; q++)
        ids[q] = q == 3 ? 1000 : 1;
      SedpFrame *user = sedp_frame_new (1);
      sedp_frame_add_column (user, "user", SEDP_COLUMN_FLOAT32, 4);
      sedp_request_set_frames (r, user, items);
    }
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 60), n);
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    SedpStatus st = sedp_result_get_status (sedp_request_get_result (r));
    if (seq_of (r) == 2) {
      CU_ASSERT_EQUAL (st, SEDP_STATUS_FAILED);
      CU_ASSERT (any_item_message_has (r, "lookup", NULL)); /* the node */
    } else {
      CU_ASSERT_EQUAL (st, SEDP_STATUS_OK);
    }
  }
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A model with a fixed batch of 1 runs row by row. */
static void
test_fixed_batch_model (void)
{
  const guint n = 5;
  g_autofree ReqSpec *specs = default_specs (n);
  SedpPipeline *p = start (fixed_model_path, NULL);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  guint total = total_items (specs, n);
  CU_ASSERT_EQUAL (counter_value (p, "engine_runs_total"), total);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A synthetic recommendation model (sedp_nn_synth "mlp"): the stage gives the direct run's
 * scores. */
static void
test_synth_mlp (void)
{
  g_autoptr (GError) error = NULL;
  SedpNnSynthOptions opts;
  CU_ASSERT_TRUE_FATAL (sedp_nn_synth_options_init (&opts, "small", "mlp"));
  g_autoptr (SedpNnModel) m = sedp_nn_synth ("mlp", 7, &opts, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  g_autofree char *path = g_build_filename (tmp_dir, "mlp.onnx", NULL);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path, &error));
  g_autofree char *extra = g_strdup_printf ("outputs = %s=score\n", m->outputs[0].name);
  SedpPipeline *p = start (path, extra);
  Collector c;
  collector_init (&c);
  const guint n = 10, per = 7;
  GRand *rng = g_rand_new_with_seed (99);
  /* the inputs of all items of all requests, row-major per input */
  const guint n_in = m->n_inputs;
  g_autofree guint *width = g_new (guint, n_in);
  for (guint i = 0; i < n_in; i++) {
    width[i] = 1;
    for (int k = 1; k < m->inputs[i].rank; k++)
      width[i] *= (guint) m->inputs[i].dims[k];
  }
  GPtrArray *data = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < n_in; i++) {
    gsize cnt = (gsize) n * per * width[i];
    if (m->inputs[i].dtype == SEDP_NN_FLOAT)
      g_ptr_array_add (data, rand_floats (rng, cnt, -1, 1));
    else {
      gint64 *v = g_new (gint64, cnt);
      for (gsize q = 0; q < cnt; q++)
        v[q] = g_rand_int_range (rng, 0, (gint32) opts.rows);
      g_ptr_array_add (data, v);
    }
  }
  for (guint s = 0; s < n; s++) {
    char id[16];
    g_snprintf (id, sizeof id, "r%u", s);
    SedpRequest *r = sedp_request_new (id, 0);
    SedpFrame *items = sedp_frame_new (per);
    for (guint i = 0; i < n_in; i++) {
      gboolean f = m->inputs[i].dtype == SEDP_NN_FLOAT;
      SedpColumn *col = sedp_frame_add_column (items, m->inputs[i].name,
                                               f ? SEDP_COLUMN_FLOAT32 : SEDP_COLUMN_INT64, width[i]);
      gsize bytes = (f ? sizeof (float) : sizeof (gint64)) * per * width[i];
      memcpy (f ? (gpointer) sedp_column_float32_data (col) : (gpointer) sedp_column_int64_data (col),
              (guint8 *) data->pdata[i] + bytes * s, bytes);
    }
    sedp_request_set_frames (r, NULL, items);
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n, 60), n);
  /* direct: all n × per rows in one plan */
  SedpNnPlan *plan = sedp_nn_plan_new (m, n * per, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  g_autofree SedpNnTensor *in = g_new0 (SedpNnTensor, n_in);
  for (guint i = 0; i < n_in; i++)
    in[i] = *sedp_nn_plan_get_input (plan, i), in[i].data = data->pdata[i];
  g_autofree SedpNnTensor *out = g_new0 (SedpNnTensor, m->n_outputs);
  CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (plan, n_in, in, m->n_outputs, out, &error));
  guint w0 = 1;
  for (int k = 1; k < out[0].rank; k++)
    w0 *= (guint) out[0].dims[k];
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    guint s = seq_of (r);
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      const float *got = f ? floats_at (f, "score", row, w0) : NULL;
      const float *want = (const float *) out[0].data + (gsize) (s * per + i) * w0;
      for (guint q = 0; q < w0; q++)
        if (!got || !near (got[q], want[q], 1e-5))
          bad++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_nn_plan_free (plan);
  g_ptr_array_unref (data);
  g_rand_free (rng);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* Pinning workers to an available CPU works; a CPU that is not there is a create error. */
static void
test_pin_cpus (void)
{
  cpu_set_t set;
  CPU_ZERO (&set);
  g_assert (sched_getaffinity (0, sizeof set, &set) == 0);
  int cpu = 0;
  while (!CPU_ISSET (cpu, &set))
    cpu++;
  g_autofree char *extra = g_strdup_printf ("pin_cpus = %d\n", cpu);
  const guint n = 4;
  g_autofree ReqSpec *specs = default_specs (n);
  SedpPipeline *p = start (model_path, extra);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  sedp_pipeline_free (p);
  collector_clear (&c);

  int missing = CPU_SETSIZE - 1;
  while (missing > 0 && CPU_ISSET (missing, &set))
    missing--;
  g_autofree char *bad = g_strdup_printf ("pin_cpus = %d\n", missing);
  g_autofree char *text = pipeline_text (model_path, bad);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (new_pipeline (text, &error));
  CU_ASSERT_PTR_NOT_NULL (error);
  CU_ASSERT (error && strstr (error->message, "pin_cpus"));
  g_clear_error (&error);
  g_autofree char *text2 = pipeline_text (model_path, "pin_cpus = zero\n");
  CU_ASSERT_PTR_NULL (new_pipeline (text2, &error));
  CU_ASSERT (error && strstr (error->message, "zero"));
}

/* The pipeline does not start: the error names the stage and @needle. */
static void
expect_create_error (const char *model, const char *extra, const char *needle, const char *needle2)
{
  g_autofree char *text = pipeline_text (model, extra);
  g_autoptr (GError) error = NULL;
  SedpPipeline *p = new_pipeline (text, &error);
  CU_ASSERT_PTR_NULL (p);
  if (p)
    sedp_pipeline_free (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  gboolean ok = strstr (error->message, needle) && (!needle2 || strstr (error->message, needle2)) &&
                strstr (error->message, "dnn");
  if (!ok)
    fprintf (stderr, "\n  create error '%s' lacks '%s'/'%s'\n", error->message, needle,
             needle2 ? needle2 : "");
  CU_ASSERT (ok);
}

static void
test_create_errors (void)
{
  /* no such file */
  g_autofree char *nowhere = g_build_filename (tmp_dir, "nowhere.onnx", NULL);
  expect_create_error (nowhere, NULL, "nowhere.onnx", NULL);

  /* not a model */
  g_autofree char *junk = g_build_filename (tmp_dir, "junk.onnx", NULL);
  g_file_set_contents (junk, "this is not a protobuf \xff\xff\xff\xff", -1, NULL);
  expect_create_error (junk, NULL, "junk.onnx", NULL);

  /* unsupported operators */
  SedpNnModel *m = tb_new (13);
  tb_input (m, "x", SEDP_NN_FLOAT, 2, I64 (-1, 2));
  tb_node (m, "FancyOp", "f", "x", "y");
  tb_node (m, "OtherOp", "g", "y", "z");
  tb_output (m, "z", SEDP_NN_FLOAT, -1, NULL);
  g_autofree char *unsup = g_build_filename (tmp_dir, "unsupported.onnx", NULL);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, unsup, NULL));
  sedp_nn_model_unref (m);
  expect_create_error (unsup, NULL, "FancyOp", "OtherOp");

  /* mappings naming what the model does not have */
  expect_create_error (model_path, "inputs = itme=item\n", "itme", "user, item, ids");
  expect_create_error (model_path, "outputs = score=ctr\n", "score", "ctr, emb_sum");
  expect_create_error (model_path, "outputs = ctr=x, emb_sum=x\n", "'x'", NULL);
  expect_create_error (model_path, "inputs = =item\n", "inputs", NULL);

  /* an output that is not per row */
  m = tb_new (13);
  tb_input (m, "x", SEDP_NN_FLOAT, 2, I64 (-1, 2));
  SedpNnNode *n = tb_node (m, "ReduceSum", "all", "x", "total");
  tb_attr_i (n, "keepdims", 0);
  tb_output (m, "total", SEDP_NN_FLOAT, -1, NULL);
  g_autofree char *scalar = g_build_filename (tmp_dir, "scalar.onnx", NULL);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, scalar, NULL));
  sedp_nn_model_unref (m);
  expect_create_error (scalar, NULL, "total", "batch");

  /* a graph input read where a constant is needed: plans specialised at run time are not fed */
  m = tb_new (13);
  tb_input (m, "x", SEDP_NN_FLOAT, 2, I64 (-1, 2));
  tb_input (m, "lo", SEDP_NN_FLOAT, 2, I64 (-1, 1));
  tb_node (m, "ReduceSum", "first", "lo", "lo1");
  tb_node (m, "Clip", "clip", "x,lo1", "y");
  tb_output (m, "y", SEDP_NN_FLOAT, -1, NULL);
  g_autofree char *param = g_build_filename (tmp_dir, "param.onnx", NULL);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, param, NULL));
  sedp_nn_model_unref (m);
  expect_create_error (param, "inputs = x=item, lo=item\n", "'lo'", "initializer");
}

/* engine = opencl's options (run by nn-ocl-model-inference only: they need a device). */
static void
test_engine_options (void)
{
  expect_create_error (model_path, "engine = opencl\ndevice = 99\n", "device = 99: out of range",
                       "OpenCL device");
  expect_create_error (model_path, "engine = opencl\ndevice = no such device\n",
                       "device = no such device: no OpenCL device matches", NULL);
  expect_create_error (model_path, "engine = opencl\nstreams = 9\n", "streams: '9' is not 1 to 8 or auto",
                       NULL);
  expect_create_error (model_path, "engine = opencl\nstreams = many\n",
                       "streams: 'many' is not 1 to 8 or auto", NULL);
  expect_create_error (model_path, "engine = gpu\n", "engine", "gpu");
  /* device and streams under engine = cpu: a warning, and the stage runs. */
  SedpPipeline *p = start (model_path, "engine = cpu\nstreams = 2\n");
  sedp_pipeline_free (p);
  /* Several streams: the scores of the first test again. */
  p = start (model_path, "engine = opencl\nstreams = 3\nparallelism = 3\n");
  const guint n = 24;
  g_autofree ReqSpec *specs = default_specs (n);
  Collector c;
  collector_init (&c);
  run_requests (p, &c, n, specs);
  CU_ASSERT_EQUAL (check_scores (&c, specs, "ctr", "emb_sum", NULL), 0);
  CU_ASSERT_EQUAL (stat_value (p, "device_streams"), 3);
  CU_ASSERT (stat_value (p, "device_weight_bytes") > 0);
  CU_ASSERT (stat_value (p, "device_arena_bytes") > 0);
  collector_clear (&c);
  sedp_pipeline_free (p);
  /* auto without a profile starts at min(parallelism, 4) streams. */
  p = start (model_path, "engine = opencl\nstreams = auto\nstreams_profile_ms = 0\n");
  CU_ASSERT_EQUAL (stat_value (p, "device_streams"), 2);
  sedp_pipeline_free (p);
  expect_create_error (model_path, "engine = opencl\nstreams_profile_ms = 3000\n",
                       "streams_profile_ms", "3000");
}

/* ---- main ---- */

static int
setup (void)
{
  params_init ();
  tmp_dir = g_dir_make_tmp ("sedp-mi-XXXXXX", NULL);
  g_assert (tmp_dir);
  model_path = g_build_filename (tmp_dir, "model.onnx", NULL);
  fixed_model_path = g_build_filename (tmp_dir, "model-b1.onnx", NULL);
  g_autoptr (GError) error = NULL;
  SedpNnModel *m = build_model (-1);
  gboolean ok = sedp_nn_model_save (m, model_path, &error);
  sedp_nn_model_unref (m);
  m = build_model (1);
  ok = ok && sedp_nn_model_save (m, fixed_model_path, &error);
  sedp_nn_model_unref (m);
  if (!ok)
    fprintf (stderr, "cannot write the test models: %s\n", error ? error->message : "?");
  return ok ? 0 : 1;
}

static int
teardown (void)
{
  GDir *d = g_dir_open (tmp_dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d))) {
    g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
    g_unlink (path);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (tmp_dir);
  g_free (tmp_dir);
  g_free (model_path);
  g_free (fixed_model_path);
  if (test_registry)
    sedp_registry_free (test_registry);
  return 0;
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("model_inference", setup, teardown);
  /* The OpenCL run under valgrind (PoCL is slow there) keeps the cases that reach the device's
   * own paths: scores, engine errors, create errors and the engine's options. */
  gboolean ocl = g_strcmp0 (g_getenv ("SEDP_TEST_ENGINE"), "opencl") == 0;
  gboolean short_run = ocl && g_getenv ("SEDP_VALGRIND") != NULL;
  struct {
    const char *name;
    CU_TestFunc fn;
    gboolean in_short_run;
  } tests[] = {
    {"scores (broadcast and item user columns)", test_scores, TRUE},
    {"frames concatenated", test_frames_concatenated, FALSE},
    {"max_batch_rows", test_max_batch_rows, FALSE},
    {"row_granule", test_row_granule, FALSE},
    {"instances rr", test_instances_rr, FALSE},
    {"instances mod", test_instances_mod, FALSE},
    {"column mapping", test_mapping, FALSE},
    {"drop_inputs removes the input columns", test_drop_inputs, FALSE},
    {"uint64 and idlist ids", test_id_columns, FALSE},
    {"missing and wrong-width columns", test_column_errors, FALSE},
    {"wrong column type", test_column_type_error, FALSE},
    {"idlist row errors", test_idlist_row_error, FALSE},
    {"engine errors isolated", test_engine_error_isolated, TRUE},
    {"fixed batch model", test_fixed_batch_model, FALSE},
    {"synth mlp", test_synth_mlp, FALSE},
    {"pin_cpus", test_pin_cpus, FALSE},
    {"create errors", test_create_errors, TRUE},
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (!short_run || tests[i].in_short_run)
      CU_add_test (s, tests[i].name, tests[i].fn);
  if (ocl)
    CU_add_test (s, "engine = opencl: device and streams", test_engine_options);
  return sedp_test_run ();
}
