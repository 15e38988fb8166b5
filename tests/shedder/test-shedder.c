/* sedp tests — the shedder: its arithmetic against hand-computed cases (order, features, keep
 * count, the controller's answer to a load step), then the stage in running pipelines (fixed,
 * none, a pruning model built here, bad models, NaN escores, requests of 0 and 1 candidates). */
#include "runtime-helpers.h"
#include "nn/model.h"
#include "shed/labels.h"
#include "shed/train.h"

#include "../../plugins/shedder/shed-math.h"

#include <glib/gstdio.h>
#include <math.h>
#include <unistd.h>

/* ---- arithmetic ---- */

static void
test_order (void)
{
  const float e[] = {0.2f, NAN, 0.9f, 0.2f, INFINITY, 0.5f, -1.0f};
  guint order[7];
  CU_ASSERT_EQUAL (shed_order (e, 7, order), 2);
  const guint want[] = {2, 5, 0, 3, 6, 1, 4}; /* ties and non-finite ones in item order */
  for (guint i = 0; i < 7; i++)
    CU_ASSERT_EQUAL (order[i], want[i]);
  CU_ASSERT_EQUAL (shed_order (NULL, 3, order), 0);
  CU_ASSERT (order[0] == 0 && order[1] == 1 && order[2] == 2);
}

static void
test_features (void)
{
  const float e[] = {1.0f, 3.0f, NAN, 2.0f};
  ShedEscoreStats st;
  shed_escore_stats (e, 4, &st);
  CU_ASSERT_EQUAL (st.n_finite, 3);
  CU_ASSERT_DOUBLE_EQUAL (st.mean, 2.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (st.var, 2.0 / 3.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (st.max, 3.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (st.min, 1.0, 1e-12);
  ShedContext c = {.quota = 1.5, .prev_cutoff = 0.25, .queue = 0.5, .budget_s = 0.4};
  float f[SHED_N_FEATURES];
  shed_features (&c, &st, 255, f);
  const float want[SHED_N_FEATURES] = {1.0f, 0.25f, 0.5f, 2.0f, 2.0f / 3.0f, 3.0f, 1.0f, 0.5f, 0.4f};
  for (guint i = 0; i < SHED_N_FEATURES; i++)
    CU_ASSERT_DOUBLE_EQUAL (f[i], want[i], 1e-6);
  shed_escore_stats (NULL, 4, &st);
  CU_ASSERT (st.n_finite == 0 && st.mean == 0 && st.max == 0);
}

static void
test_keep_count (void)
{
  CU_ASSERT_EQUAL (shed_keep_count (0.5, 10, 0, 0.9), 5);
  CU_ASSERT_EQUAL (shed_keep_count (0.31, 10, 0, 0.9), 4);   /* ceil */
  CU_ASSERT_EQUAL (shed_keep_count (0.3, 10, 0, 0.9), 3);    /* 0.3 × 10 is 3, not 4 */
  CU_ASSERT_EQUAL (shed_keep_count (0.3f, 10, 0, 0.9), 3);   /* nor is a float32 0.3 */
  CU_ASSERT_EQUAL (shed_keep_count (0.0, 10, 0, 0.9), 1);    /* max_cutoff keeps 10 % */
  CU_ASSERT_EQUAL (shed_keep_count (0.0, 10, 0, 1.0), 0);
  CU_ASSERT_EQUAL (shed_keep_count (0.1, 500, 10, 0.95), 50);
  CU_ASSERT_EQUAL (shed_keep_count (0.01, 500, 10, 0.95), 25); /* 5 % of 500 */
  CU_ASSERT_EQUAL (shed_keep_count (0.01, 500, 30, 0.95), 30); /* min_keep */
  CU_ASSERT_EQUAL (shed_keep_count (0.5, 8, 10, 0.9), 8);      /* min_keep past n */
  CU_ASSERT_EQUAL (shed_keep_count (NAN, 8, 0, 0.9), 8);
  CU_ASSERT_EQUAL (shed_keep_count (7.0, 8, 0, 0.9), 8);
}

/* The control policy's share by hand: 1000 items/s, requests of 100, 100 ms to go. */
static void
test_fit_share (void)
{
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (100, 1000, 100, 0, 100000), 1.0, 1e-12);  /* empty */
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (150, 1000, 100, 0, 100000), 0.5, 1e-12);  /* 50 ahead */
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (175, 1000, 100, 20000, 100000), 0.05, 1e-9); /* 80 ms left */
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (400, 1000, 100, 0, 100000), 0.0, 1e-12);  /* too late */
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (100, 1000, 100, 200000, 100000), 0.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (shed_fit_share (5000, 0, 100, 0, 100000), 1.0, 1e-12);    /* no rate yet */
}

/* The control share by hand: target 1 s, so a backlog of 0.5 s is let build. */
static void
test_control_share (void)
{
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.5, 1, 1000, 2000), 0.5, 1e-12);  /* 2× */
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.7, 1, 1000, 2000), 0.4, 1e-12);  /* drain it */
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.1, 1, 1000, 1000), 1.0, 1e-12);  /* room */
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.6, 1, 1000, 1000), 0.9, 1e-12);  /* 1×, late */
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (1.5, 1, 1000, 2000), 0.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.5, 1, 0, 2000), 1.0, 1e-12);     /* no rate */
  CU_ASSERT_DOUBLE_EQUAL (shed_control_share (0.5, 1, 1000, 0), 1.0, 1e-12);
}

/* The offered load's window by hand: slices of 100 ms, 20 of them. */
static void
test_window (void)
{
  ShedWindow w = {0};
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 0, 100000), 0, 1e-12);
  shed_window_add (&w, 0, 100000, 300);
  shed_window_add (&w, 50000, 100000, 200);       /* the same slice */
  shed_window_add (&w, 1050000, 100000, 100);     /* slice 10 */
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 1050000, 100000), 600, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 1999999, 100000), 600, 1e-12); /* slice 19 */
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 2000000, 100000), 100, 1e-12); /* slice 0 left */
  shed_window_add (&w, 2010000, 100000, 50);      /* slice 20 reuses slice 0's place */
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 2010000, 100000), 150, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (shed_window_sum (&w, 5000000, 100000), 0, 1e-12);   /* all past */
}

/* A load step in a simulated pipeline (1000 items/s, requests of 100 at the entry, a FIFO of
 * items, the throughput measured over the last 2 s; the decision as in the stage: the control
 * share, or the request's fit when that is under half of it): at half the capacity nothing is
 * shed; at twice it, half of every request is, steadily after 3 s (the backlog builds to half
 * the target first), and no request waits past 0.6 of its 1 s target. */
static void
test_control_step (void)
{
  const double rate = 1000, target_us = 1e6;
  double in_flight = 0, shed_before = 0, kept_after = 0, worst_us = 0, lo = 1, hi = 0;
  double done[2000] = {0}, done_2s = 0; /* items finished in each of the last 2000 ms */
  guint n_after = 0;
  for (guint ms = 0; ms < 10000; ms++) {
    guint every = ms < 4000 ? 200 : 50; /* 5 requests/s = 0.5×, then 20/s = 2× */
    double service = MAX (done_2s / 2, rate);
    if (ms % every == 0) {
      double share = shed_control_share (in_flight / service, 1, service, 100e3 / every);
      double fit = shed_fit_share (in_flight + 100, service, 100, 0, target_us);
      guint keep = shed_keep_count (fit < 0.5 * share ? fit : share, 100, 0, 1.0);
      worst_us = MAX (worst_us, (in_flight + keep) / rate * 1e6);
      in_flight += keep;
      if (ms < 4000)
        shed_before += 100 - keep;
      else if (ms >= 7000) {
        kept_after += keep;
        n_after++;
        lo = MIN (lo, keep / 100.0);
        hi = MAX (hi, keep / 100.0);
      }
    }
    double d = MIN (in_flight, rate / 1000);
    in_flight -= d;
    done_2s += d - done[ms % 2000];
    done[ms % 2000] = d;
  }
  CU_ASSERT_DOUBLE_EQUAL (shed_before, 0, 1e-9);
  CU_ASSERT (fabs (kept_after / n_after / 100 - 0.5) <= 0.02);
  CU_ASSERT (hi - lo <= 0.03); /* steady */
  CU_ASSERT (worst_us <= 0.6 * target_us);
}

/* ---- training labels ---- */

/* A curve of @n candidates in escore order 0, 1, …, whose full top 2 are @a (best) and @b. */
static void
curve_top2 (SedpShedCurve *c, guint n, guint a, guint b)
{
  g_autofree float *e = g_new (float, n), *sc = g_new0 (float, n);
  for (guint i = 0; i < n; i++)
    e[i] = (float) (n - i);
  sc[a] = 2;
  sc[b] = 1;
  sedp_shed_curve_init (c, e, sc, n, 2);
}

static void
test_recall_curve (void)
{
  SedpShedCurve c;
  const float e[] = {0.9f, NAN, 0.7f, 0.6f, 0.5f, 0.4f}, sc[] = {0.1f, 0.5f, 0.2f, 0.3f, 0.8f, 0.0f};
  sedp_shed_curve_init (&c, e, sc, 6, 2); /* top 2: items 4 and 1; escore order 0 2 3 4 5 1 */
  CU_ASSERT (c.k == 2 && c.pos[0] == 3 && c.pos[1] == 5);
  CU_ASSERT_DOUBLE_EQUAL (sedp_shed_curve_recall (&c, 3), 0.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (sedp_shed_curve_recall (&c, 4), 0.5, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (sedp_shed_curve_recall (&c, 6), 1.0, 1e-12);
  CU_ASSERT_EQUAL (sedp_shed_curve_min_keep (&c, 0.0), 0);
  CU_ASSERT_EQUAL (sedp_shed_curve_min_keep (&c, 0.5), 4);
  CU_ASSERT_EQUAL (sedp_shed_curve_min_keep (&c, 0.6), 6);
  sedp_shed_curve_clear (&c);
}

/* Two requests of 10: the first's top 2 at escore positions 0 and 9 (hard), the second's at 1
 * and 2 (easy). At a price λ per share, the first keeps 10 (recall 1) below λ = 5/9, 1 (recall
 * 1/2) below 5, then nothing; the second keeps 3 (recall 1) below 10/3, then nothing. Mean
 * shares: 0.65 below 5/9, 0.2 below 10/3, 0.05 below 5, then 0. */
static void
test_labels (void)
{
  SedpShedCurve c[2];
  curve_top2 (&c[0], 10, 0, 9);
  curve_top2 (&c[1], 10, 1, 2);
  double l[2];
  sedp_shed_labels (c, 2, 0.4, 0, 1.0, l); /* between 0.2 and 0.65, weight 4/9 */
  CU_ASSERT_DOUBLE_EQUAL (l[0], 0.5, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (l[1], 0.3, 1e-9);
  sedp_shed_labels (c, 2, 0.8, 0, 1.0, l); /* between 0.65 and everything, weight 3/7 */
  CU_ASSERT_DOUBLE_EQUAL (l[0], 1.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (l[1], 0.6, 1e-9);
  sedp_shed_labels (c, 2, 1.0, 0, 1.0, l);
  CU_ASSERT (l[0] == 1.0 && l[1] == 1.0);
  sedp_shed_labels (c, 2, 0.05, 0, 1.0, l); /* the plateau below λ = 5 */
  CU_ASSERT_DOUBLE_EQUAL (l[0], 0.1, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (l[1], 0.0, 1e-9);
  sedp_shed_labels (c, 2, 0.1, 2, 0.9, l); /* under the floors (2 of 10): the floors */
  CU_ASSERT_DOUBLE_EQUAL (l[0], 0.2, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (l[1], 0.2, 1e-9);
  sedp_shed_curve_clear (&c[0]);
  sedp_shed_curve_clear (&c[1]);
}

/* Item price: a request of 10 whose top 2 lead its escore order, one of 30 whose top 2 are
 * first and last. The long one's second hit costs 29 more candidates: between λ = 0.345 and 10
 * (per candidate, in units of the mean count 20) the short keeps 2 and the long 1 (3 of 40
 * kept); below, 2 and 30 (32 of 40). Half of all the candidates mixes the two with weight
 * 0.425 / 0.725: the long request keeps 1/30 + w × 29/30 = 0.6 of its own, 18 candidates. */
static void
test_labels_item_price (void)
{
  SedpShedCurve c[2];
  curve_top2 (&c[0], 10, 0, 1);
  curve_top2 (&c[1], 30, 0, 29);
  double l[2];
  sedp_shed_labels (c, 2, 0.5, 0, 1.0, l);
  CU_ASSERT_DOUBLE_EQUAL (l[0], 0.2, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (l[1], 0.6, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL ((l[0] * 10 + l[1] * 30) / 40, 0.5, 1e-9);
  sedp_shed_curve_clear (&c[0]);
  sedp_shed_curve_clear (&c[1]);
}

/* A pooled curve: each member's positions at the same share of the pooled count. */
static void
test_curve_pool (void)
{
  SedpShedCurve c[3], p;
  curve_top2 (&c[0], 10, 0, 9);
  curve_top2 (&c[1], 20, 2, 3);
  c[2] = (SedpShedCurve) {0}; /* no candidates: adds nothing */
  const guint members[] = {0, 1, 2};
  sedp_shed_curve_pool (c, members, 3, 10, &p);
  CU_ASSERT_FATAL (p.n == 10 && p.k == 4);
  CU_ASSERT (p.pos[0] == 0 && p.pos[1] == 1 && p.pos[2] == 1 && p.pos[3] == 9);
  CU_ASSERT_DOUBLE_EQUAL (sedp_shed_curve_recall (&p, 2), 0.75, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (sedp_shed_curve_recall (&p, 10), 1.0, 1e-12);
  sedp_shed_curve_clear (&p);
  sedp_shed_curve_clear (&c[0]);
  sedp_shed_curve_clear (&c[1]);
}

/* ---- training ---- */

/* A pipeline whose "model" is log1p of the items' `truth`: the full scores are known here. */
static const char *train_pipeline =
    "[pipeline]\ndeadline_ms = 30000\n"
    "[stage reader]\nplugin = passthrough\nscope = request\n"
    "[stage cands]\nplugin = passthrough\nafter = reader\n"
    "[stage shed]\nplugin = shedder\nafter = cands\npolicy = fixed\nfixed_keep = 0.1\n"
    "min_keep = 3\nmax_cutoff = 0.8\n"
    "[stage model]\nplugin = feature_processor\nafter = shed\nlog1p = score=truth\n";

/* Writes @text to a temporary file; returns its path. */
static char *
temp_file (const char *name, const char *text)
{
  char *path = NULL;
  int fd = g_file_open_tmp (name, &path, NULL);
  close (fd);
  g_file_set_contents (path, text, -1, NULL);
  return path;
}

/* Requests (sedp run's JSON Lines) of 20 items: truth = i; escore = i in request 0 (perfect),
 * 19 − i in request 1 (reversed), i with items 0 and 1 swapped in request 2. */
static char *
train_requests (void)
{
  g_autoptr (GString) t = g_string_new (NULL);
  for (guint q = 0; q < 3; q++) {
    g_string_append_printf (t, "{\"id\": \"t%u\", \"items\": [", q);
    for (guint i = 0; i < 20; i++) {
      guint e = q == 1 ? 19 - i : q == 2 && i < 2 ? 1 - i : i;
      g_string_append_printf (t, "%s{\"item_id\": %u, \"truth\": %u.0, \"escore\": %u.0}",
                              i ? ", " : "", i, i, e);
    }
    g_string_append (t, "]}\n");
  }
  return temp_file ("shed-requests-XXXXXX.jsonl", t->str);
}

/* The workload run unshed (the fixed policy of the file would keep 2 of 20), its floors read
 * from the shedder; the labels' mean is the quota; the model runs in the engine. */
static void
test_train (void)
{
  g_autofree char *pl = temp_file ("shed-XXXXXX.pipeline", train_pipeline);
  g_autofree char *rq = train_requests ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpShedWorkload) w = sedp_shed_collect (pl, rq, SEDP_REQUEST_FORMAT_AUTO, "score",
                                                      "escore", &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (w);
  CU_ASSERT_EQUAL (w->requests->len, 3);
  CU_ASSERT (w->min_keep == 3 && fabs (w->max_cutoff - 0.8) < 1e-12 && w->deadline_ms == 30000);
  for (guint q = 0; q < w->requests->len; q++) {
    const SedpShedRequest *r = g_ptr_array_index (w->requests, q);
    CU_ASSERT_EQUAL (r->n, 20); /* nothing shed */
    CU_ASSERT_EQUAL (r->index, q); /* in the file's order, whatever order they ended in */
    CU_ASSERT_DOUBLE_EQUAL (r->score[7], log1p (7.0), 1e-5);
  }
  SedpShedTrainOptions opt;
  sedp_shed_train_options_init (&opt);
  opt.top_k = 2;
  opt.levels = 4;
  opt.epochs = 30;
  SedpShedTrainReport rep;
  g_autoptr (SedpNnModel) m = sedp_shed_train (w, &opt, &rep, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT (rep.n_requests == 3 && rep.n_samples == 3 * 4 * 4 && rep.n_parameters == 305);
  CU_ASSERT (rep.final_loss < rep.initial_loss);
  /* Quota 1: all kept, full recall. Request 1 (reversed) needs everything for its top 2, so
   * at 0.75 the other two keep what is left over the floors. */
  CU_ASSERT_DOUBLE_EQUAL (rep.levels[0].label_keep, 1.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (rep.levels[0].label_recall, 1.0, 1e-9);
  for (guint l = 1; l < rep.n_levels; l++)
    CU_ASSERT (fabs (rep.levels[l].label_keep - rep.levels[l].quota) <= 0.05 + 1e-9);
  /* As served, the quota is kept (within a request's rounding: 1 candidate of 20 each). */
  for (guint l = 1; l < rep.n_levels; l++)
    CU_ASSERT (fabs (rep.levels[l].served_keep - rep.levels[l].quota) <= 0.05 + 1e-9);
  CU_ASSERT_PTR_NULL (rep.validation);
  /* The model is one the engine compiles. */
  SedpNnPlan *plan = sedp_nn_plan_new (m, 4, &error);
  CU_ASSERT_PTR_NOT_NULL (plan);
  sedp_nn_plan_free (plan);
  /* Held out: the same requests again, so the same figures as the training levels' (the same
   * seed trains the same model). */
  opt.validation = w;
  SedpShedTrainReport rep2;
  g_autoptr (SedpNnModel) m2 = sedp_shed_train (w, &opt, &rep2, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (rep2.validation);
  CU_ASSERT_EQUAL (rep2.n_validation, 3);
  for (guint l = 0; l < rep2.n_levels; l++) {
    const SedpShedLevel *v = &rep2.validation[l], *t = &rep.levels[l];
    CU_ASSERT_DOUBLE_EQUAL (v->quota, t->quota, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL (v->model_recall, t->model_recall, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL (v->served_keep, t->served_keep, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL (v->served_fixed_recall, t->served_fixed_recall, 1e-12);
    CU_ASSERT_EQUAL (v->label_keep, 0); /* no labels held out */
  }
  g_autoptr (GString) text = g_string_new (NULL);
  sedp_shed_train_report_print (&rep2, text);
  CU_ASSERT_PTR_NOT_NULL (strstr (text->str, "held out: 3 requests"));
  sedp_shed_train_report_clear (&rep2);
  sedp_shed_train_report_clear (&rep);
  g_unlink (pl);
  g_unlink (rq);
}

/* An empty or missing workload, or results without the escore: errors, naming what. */
static void
test_train_bad_workloads (void)
{
  g_autofree char *pl = temp_file ("shed-XXXXXX.pipeline", train_pipeline);
  g_autofree char *empty = temp_file ("shed-empty-XXXXXX.jsonl", "");
  g_autofree char *one = temp_file ("shed-one-XXXXXX.jsonl",
                                    "{\"id\": \"a\", \"items\": [{\"item_id\": 1, \"truth\": 1.0, \"escore\": 1.0}]}\n");
  g_autofree char *noes = temp_file ("shed-noes-XXXXXX.jsonl",
                                     "{\"id\": \"b\", \"items\": [{\"item_id\": 1, \"truth\": 1.0}, {\"item_id\": 2, \"truth\": 2.0}]}\n");
  GError *e = NULL;
  CU_ASSERT_PTR_NULL (sedp_shed_collect (pl, empty, SEDP_REQUEST_FORMAT_AUTO, "score", "escore", &e));
  SEDP_ASSERT_ERROR (e, SEDP_SHED_ERROR, "no request of two or more candidates");
  g_clear_error (&e);
  CU_ASSERT_PTR_NULL (sedp_shed_collect (pl, one, SEDP_REQUEST_FORMAT_AUTO, "score", "escore", &e));
  SEDP_ASSERT_ERROR (e, SEDP_SHED_ERROR, "1 requests had fewer");
  g_clear_error (&e);
  CU_ASSERT_PTR_NULL (sedp_shed_collect (pl, noes, SEDP_REQUEST_FORMAT_AUTO, "score", "escore", &e));
  SEDP_ASSERT_ERROR (e, SEDP_SHED_ERROR, "request 'b'", "no float32 column 'escore'");
  g_clear_error (&e);
  CU_ASSERT_PTR_NULL (sedp_shed_collect (pl, "/nonexistent/requests.jsonl", SEDP_REQUEST_FORMAT_AUTO,
                                         "score", "escore", &e));
  CU_ASSERT_PTR_NOT_NULL (e);
  g_clear_error (&e);
  g_unlink (pl);
  g_unlink (empty);
  g_unlink (one);
  g_unlink (noes);
}

/* ---- the stage in a pipeline ---- */

static const char *pipeline_head =
    "[pipeline]\ndeadline_ms = 30000\nframe_rows = 4\n"
    "[stage reader]\nplugin = passthrough\nscope = request\n"
    "[stage cands]\nplugin = passthrough\nafter = reader\n"
    "[stage shed]\nplugin = shedder\nafter = cands\n";
static const char *pipeline_tail = "[stage final]\nplugin = passthrough\nafter = shed\n";

/* A request of @n items with escores @e (NULL: no escore column). */
static SedpRequest *
shed_request (const char *id, guint n, const float *e)
{
  SedpRequest *r = make_request (id, 1, n, 0);
  if (e) {
    SedpFrame *items = sedp_frame_new (n);
    gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
    float *es = sedp_column_float32_data (sedp_frame_add_column (items, "escore", SEDP_COLUMN_FLOAT32, 1));
    for (guint i = 0; i < n; i++) {
      ids[i] = 1000 + i;
      es[i] = e[i];
    }
    sedp_request_set_frames (r, NULL, items);
  }
  return r;
}

/* Runs one request through a shedder with the options @opts; returns its result (the request
 * stays referenced by the collector). */
static const SedpResult *
run_one (Collector *c, SedpPipeline **pp, const char *opts, guint n, const float *e)
{
  g_autofree char *text = g_strconcat (pipeline_head, opts, pipeline_tail, NULL);
  *pp = start_pipeline (text);
  SedpRequest *r = shed_request ("r", n, e);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (*pp, r, collector_done, c), SEDP_STATUS_OK);
  sedp_request_unref (r);
  CU_ASSERT_EQUAL_FATAL (collector_wait (c, c->done->len + 1, 10), c->done->len);
  return sedp_request_get_result (c->done->pdata[c->done->len - 1]);
}

static void
test_fixed_sheds_lowest (void)
{
  const float e[] = {0.3f, 0.9f, NAN, 0.1f, 0.8f, 0.5f, 0.7f, 0.2f, 0.6f, 0.4f};
  Collector c;
  collector_init (&c);
  SedpPipeline *p;
  const SedpResult *res = run_one (&c, &p, "policy = fixed\nfixed_keep = 0.5\nmin_keep = 2\n", 10, e);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  for (guint i = 0; i < 10; i++) {
    gboolean kept = i == 1 || i == 4 || i == 6 || i == 8 || i == 5; /* the five best escores */
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), kept ? SEDP_ITEM_SCORED : SEDP_ITEM_SHED);
  }
  CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), 5);
  SedpMetrics *m = sedp_pipeline_get_metrics (p);
  CU_ASSERT_EQUAL (sedp_counter_get (sedp_metrics_counter (m, "shed", "shedder_shed_items_total", NULL)), 5);
  CU_ASSERT_EQUAL (sedp_counter_get (sedp_metrics_counter (m, "shed", "shedder_bad_escores_total", NULL)), 1);
  /* The five kept left frames of 4 items as {1}, {4 5 6}, {8}: cut again in order, they make
   * two frames, {1 4 5 6} and {8}, for the stage after. */
  CU_ASSERT_EQUAL (sedp_counter_get (sedp_metrics_counter (m, "final", "stage_events_total", NULL)), 2);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* When a stage after the shedder joins its items, frame by frame, with items that did not pass
 * through it, the kept items go back to the frames they came from, and every one is scored. */
static void
test_shed_rows_joined_by_frame (void)
{
  const float e[] = {0.3f, 0.9f, 0.0f, 0.1f, 0.8f, 0.5f, 0.7f, 0.2f, 0.6f, 0.4f};
  g_autofree char *text = g_strconcat (pipeline_head, "policy = fixed\nfixed_keep = 0.5\nmin_keep = 2\n",
                                       "[stage final]\nplugin = passthrough\nafter = shed\n"
                                       "[stage side]\nplugin = passthrough\nafter = cands\n"
                                       "[stage both]\nplugin = passthrough\nafter = final, side\n",
                                       NULL);
  Collector c;
  collector_init (&c);
  SedpPipeline *p = start_pipeline (text);
  SedpRequest *r = shed_request ("r", 10, e);
  CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, &c), SEDP_STATUS_OK);
  sedp_request_unref (r);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, 1, 10), 1);
  const SedpResult *res = sedp_request_get_result (c.done->pdata[0]);
  CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
  for (guint i = 0; i < 10; i++) {
    gboolean kept = i == 1 || i == 4 || i == 6 || i == 8 || i == 5;
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), kept ? SEDP_ITEM_SCORED : SEDP_ITEM_SHED);
  }
  SedpMetrics *m = sedp_pipeline_get_metrics (p);
  CU_ASSERT_EQUAL (sedp_counter_get (sedp_metrics_counter (m, "final", "stage_events_total", NULL)), 3);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* Without an escore column the candidates keep their order: the last ones go; none sheds
 * nothing; 0 and 1 candidates pass untouched. */
static void
test_no_escore_none_and_tiny (void)
{
  Collector c;
  collector_init (&c);
  SedpPipeline *p;
  const SedpResult *res = run_one (&c, &p, "policy = fixed\nfixed_keep = 0.25\nmin_keep = 0\n", 8, NULL);
  for (guint i = 0; i < 8; i++)
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i), i < 2 ? SEDP_ITEM_SCORED : SEDP_ITEM_SHED);
  sedp_pipeline_free (p);
  const float e[] = {0.5f, 0.1f, 0.9f};
  res = run_one (&c, &p, "policy = none\n", 3, e);
  CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), 0);
  sedp_pipeline_free (p);
  res = run_one (&c, &p, "policy = fixed\nfixed_keep = 0\nmin_keep = 0\nmax_cutoff = 1\n", 1, e);
  CU_ASSERT_EQUAL (sedp_result_get_item_status (res, 0), SEDP_ITEM_SCORED);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A pruning model: Gemm of the features with weights @w (SHED_N_FEATURES) and bias @b, then
 * Sigmoid when @sigmoid; input width @width. Written to a temporary file, returned. */
static char *
write_model (const float *w, float b, gboolean sigmoid, gint64 width)
{
  SedpNnModel *m = sedp_nn_model_new (13, "test-shedder");
  const char *dim[] = {"N", NULL};
  gint64 in_dims[] = {-1, width}, out_dims[] = {-1, 1}, w_dims[] = {width, 1}, b_dims[] = {1};
  sedp_nn_model_add_input (m, "features", SEDP_NN_FLOAT, 2, in_dims, dim);
  sedp_nn_model_add_output (m, "keep", SEDP_NN_FLOAT, 2, out_dims, dim);
  SedpNnTensor *wt = sedp_nn_tensor_new ("w", SEDP_NN_FLOAT, 2, w_dims);
  for (gint64 i = 0; i < width; i++)
    ((float *) wt->data)[i] = i < SHED_N_FEATURES ? w[i] : 0;
  SedpNnTensor *bt = sedp_nn_tensor_new ("b", SEDP_NN_FLOAT, 1, b_dims);
  ((float *) bt->data)[0] = b;
  sedp_nn_model_add_initializer (m, wt);
  sedp_nn_model_add_initializer (m, bt);
  const char *gin[] = {"features", "w", "b", NULL}, *gout[] = {sigmoid ? "z" : "keep", NULL};
  sedp_nn_model_add_node (m, "Gemm", "fc", gin, gout);
  if (sigmoid) {
    const char *sin[] = {"z", NULL}, *sout[] = {"keep", NULL};
    sedp_nn_model_add_node (m, "Sigmoid", "out", sin, sout);
  }
  char *path = NULL;
  int fd = g_file_open_tmp ("shedder-XXXXXX.onnx", &path, NULL);
  close (fd);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE (sedp_nn_model_save (m, path, &error));
  sedp_nn_model_unref (m);
  return path;
}

/* The model's output is the keep fraction: a constant 0.3 keeps 3 of 10; one that reads the
 * escore max (0.9 here) through the features keeps 9; 0.99 and more keeps all. */
static void
test_dnn_policy (void)
{
  const float e[] = {0.3f, 0.9f, 0.0f, 0.1f, 0.8f, 0.5f, 0.7f, 0.2f, 0.6f, 0.4f};
  float w[SHED_N_FEATURES] = {0};
  g_autofree char *constant = write_model (w, 0.3f, FALSE, SHED_N_FEATURES);
  w[SHED_F_ESCORE_MAX] = 1.0f;
  g_autofree char *by_max = write_model (w, 0.0f, FALSE, SHED_N_FEATURES);
  Collector c;
  collector_init (&c);
  SedpPipeline *p;
  g_autofree char *o1 = g_strdup_printf ("policy = dnn\ndnn_level = model\nmodel = %s\nmin_keep = 0\n", constant);
  const SedpResult *res = run_one (&c, &p, o1, 10, e);
  CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), 7);
  for (guint i = 0; i < 10; i++) /* kept: 0.9, 0.8, 0.7 */
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, i),
                     i == 1 || i == 4 || i == 6 ? SEDP_ITEM_SCORED : SEDP_ITEM_SHED);
  sedp_pipeline_free (p);
  g_autofree char *o2 = g_strdup_printf ("policy = dnn\ndnn_level = model\nmodel = %s\nmin_keep = 0\n", by_max);
  res = run_one (&c, &p, o2, 10, e);
  CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), 1);
  CU_ASSERT_EQUAL (sedp_result_get_item_status (res, 2), SEDP_ITEM_SHED);
  sedp_pipeline_free (p);
  /* A keep of 0.99 or more keeps everything (the model's error at quota 1); under it, it sheds:
   * 0.995 of 1000 would shed 5, 0.985 sheds 15. */
  const float keeps[] = {0.995f, 0.985f};
  const guint shed[] = {0, 15};
  for (guint k = 0; k < G_N_ELEMENTS (keeps); k++) {
    g_autofree char *near = write_model ((float[SHED_N_FEATURES]) {0}, keeps[k], FALSE, SHED_N_FEATURES);
    g_autofree char *o3 = g_strdup_printf ("policy = dnn\ndnn_level = model\nmodel = %s\nmin_keep = 0\n", near);
    res = run_one (&c, &p, o3, 1000, NULL);
    CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), shed[k]);
    sedp_pipeline_free (p);
    g_unlink (near);
  }
  /* dnn_level = quota (the default): the quota is 1 (nothing measured, nothing need be shed),
   * so the model's 0.3 is scaled to keeping all. */
  g_autofree char *o4 = g_strdup_printf ("policy = dnn\nmodel = %s\nmin_keep = 0\n", constant);
  res = run_one (&c, &p, o4, 10, e);
  CU_ASSERT_EQUAL (sedp_result_get_n_shed (res), 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
  g_unlink (constant);
  g_unlink (by_max);
}

/* dnn_level = quota by hand: the model's keeps scaled by one factor so that the recent requests
 * keep, after their floors and the cap at 1, what their quotas allow. */
static void
test_balance_keep (void)
{
  ShedBalance b = {0};
  /* One request: its quota. */
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&b, 0.5, 0.8, 100, 0.1), 0.5, 1e-9);
  /* A quota of 1 keeps all and leaves the ring. */
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&b, 1.0, 0.1, 100, 0.1), 1.0, 1e-12);
  CU_ASSERT_EQUAL (b.count, 1);
  /* Requests of 100 and 300 candidates whose model keeps 0.6 and 0.2 under a quota of 0.12
   * (48 of 400 candidates), floors 0.1: the 300 are held at their floor (30), so r = 0.3 (the
   * 100 would keep 18); scaled without the floors (r = 48 / 120) they would keep 24 + 30 = 54.
   * Another 100 at 0.6: 60 allowed of 500, 120 r + 30 = 60, r = 0.25. */
  ShedBalance floors = {0};
  shed_balance_keep (&floors, 0.12, 0.6, 100, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&floors, 0.12, 0.2, 300, 0.1), 0.1, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&floors, 0.12, 0.6, 100, 0.1), 0.15, 1e-6);
  /* Two requests of 100 under a quota of 0.9 whose model keeps 1 and 0.5: 180 allowed, the
   * first is whole at 100, so the second keeps 0.8 (r = 1.6; scaled without the cap, 0.6). */
  ShedBalance cap = {0};
  shed_balance_keep (&cap, 0.9, 1.0, 100, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&cap, 0.9, 0.5, 100, 0.1), 0.8, 1e-6);
  /* A quota under the floor counts as the floor (what control keeps): two requests of 100 at
   * quota 0 with floor 0.1 and model keeps 0.6 and 0.2 both keep 0.1. */
  ShedBalance low = {0};
  shed_balance_keep (&low, 0.0, 0.6, 100, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_keep (&low, 0.0, 0.2, 100, 0.1), 0.1, 1e-9);
  /* Only the last SHED_BALANCE_REQUESTS count: after many requests at quota 0.5 and model 0.25,
   * the old ones (quota 0.1, model 0.8) are gone and the keep is 0.5. */
  ShedBalance ring = {0};
  for (guint i = 0; i < 10; i++)
    shed_balance_keep (&ring, 0.1, 0.8, 100, 0.1);
  double k = 0;
  for (guint i = 0; i < SHED_BALANCE_REQUESTS; i++)
    k = shed_balance_keep (&ring, 0.5, 0.25, 100, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (k, 0.5, 1e-6);
  CU_ASSERT_EQUAL (ring.count, SHED_BALANCE_REQUESTS);
}

/* The level the model is asked at: the recent requests' allowed share, candidate-weighted,
 * this one in the oldest's place. */
static void
test_balance_level (void)
{
  ShedBalance b = {0};
  /* Empty: the request's own quota (or its floor when higher). */
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_level (&b, 0.3, 100, 0.1), 0.3, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_level (&b, 0.05, 100, 0.1), 0.1, 1e-12);
  /* After 100 candidates at quota 0.2 and 300 at 0.4, a request of 100 at 0.6:
   * (20 + 120 + 60) / 500 = 0.4, whatever its own quota jitters to. */
  shed_balance_keep (&b, 0.2, 0.5, 100, 0.1);
  shed_balance_keep (&b, 0.4, 0.5, 300, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_level (&b, 0.6, 100, 0.1), 0.4, 1e-12);
  CU_ASSERT_EQUAL (b.count, 2); /* not changed */
  /* A full ring: the oldest (100 at 0.9) makes way. 49 × 100 at 0.3 after it; a request of 100
   * at 0.5: (49 × 30 + 50) / 5000 = 0.304. */
  ShedBalance full = {0};
  shed_balance_keep (&full, 0.9, 0.5, 100, 0.1);
  for (guint i = 1; i < SHED_BALANCE_REQUESTS; i++)
    shed_balance_keep (&full, 0.3, 0.5, 100, 0.1);
  CU_ASSERT_DOUBLE_EQUAL (shed_balance_level (&full, 0.5, 100, 0.1), 0.304, 1e-12);
}

/* The error a pipeline with these shedder options fails to start with. */
static GError *
start_error (const char *opts)
{
  g_autofree char *text = g_strconcat (pipeline_head, opts, pipeline_tail, NULL);
  GError *error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p)
    sedp_pipeline_free (p);
  return error;
}

/* A model of the wrong width or output, or not a model: an error at start naming the stage and
 * the tensor; a missing file: the control policy instead, with a warning; a bad option value:
 * the schema's error. */
static void
test_bad_models_and_options (void)
{
  float w[SHED_N_FEATURES] = {0};
  g_autofree char *narrow = write_model (w, 0.5f, FALSE, 5);
  g_autofree char *o = g_strdup_printf ("policy = dnn\nmodel = %s\n", narrow);
  g_autoptr (GError) e1 = start_error (o);
  SEDP_ASSERT_ERROR (e1, SEDP_RUNTIME_ERROR, "[stage shed]", "input 'features'", "[-1, 5]", "[N, 9]");
  g_autofree char *junk = NULL;
  int fd = g_file_open_tmp ("shedder-XXXXXX.onnx", &junk, NULL);
  CU_ASSERT_EQUAL (write (fd, "not a model", 11), 11);
  close (fd);
  g_autofree char *o2 = g_strdup_printf ("policy = dnn\nmodel = %s\n", junk);
  g_autoptr (GError) e2 = start_error (o2);
  CU_ASSERT_PTR_NOT_NULL (e2);
  g_autoptr (GError) e3 = start_error ("policy = dnn\nmodel = /nonexistent/shedder.onnx\n");
  CU_ASSERT_PTR_NULL (e3);
  g_autoptr (GError) e4 = start_error ("policy = smart\n");
  SEDP_ASSERT_ERROR (e4, SEDP_DSL_ERROR, "policy", "smart");
  g_autoptr (GError) e5 = start_error ("fixed_keep = 1.5\n");
  SEDP_ASSERT_ERROR (e5, SEDP_DSL_ERROR, "fixed_keep");
  g_unlink (narrow);
  g_unlink (junk);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("shedder", NULL, NULL);
  CU_add_test (s, "candidates ordered by escore, NaN last", test_order);
  CU_add_test (s, "features by hand", test_features);
  CU_add_test (s, "keep count and its floors", test_keep_count);
  CU_add_test (s, "the control policy's share by hand", test_fit_share);
  CU_add_test (s, "the control policy's share by hand", test_control_share);
  CU_add_test (s, "the control policy's answer to a load step", test_control_step);
  CU_add_test (s, "the offered load's window", test_window);
  CU_add_test (s, "recall curve", test_recall_curve);
  CU_add_test (s, "training labels by hand", test_labels);
  CU_add_test (s, "labels priced per candidate kept", test_labels_item_price);
  CU_add_test (s, "a pooled recall curve", test_curve_pool);
  CU_add_test (s, "training on a known workload", test_train);
  CU_add_test (s, "training refuses bad workloads", test_train_bad_workloads);
  CU_add_test (s, "fixed sheds the lowest escores", test_fixed_sheds_lowest);
  CU_add_test (s, "kept items joined frame by frame", test_shed_rows_joined_by_frame);
  CU_add_test (s, "no escore, none, and tiny requests", test_no_escore_none_and_tiny);
  CU_add_test (s, "the pruning model decides", test_dnn_policy);
  CU_add_test (s, "the pruning model spreads the quota", test_balance_keep);
  CU_add_test (s, "the pruning model is asked at the recent level", test_balance_level);
  CU_add_test (s, "bad models and options", test_bad_models_and_options);
  return sedp_test_run ();
}
