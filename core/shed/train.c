/* sedp — `sedp shed train`: samples, fit and evaluation (see train.h). */
#include "train.h"

#include "labels.h"
#include "mlp.h"

#include "../../plugins/shedder/shed-math.h"

#include <math.h>

static const guint hidden[] = {16, 8};

void
sedp_shed_train_options_init (SedpShedTrainOptions *opt)
{
  *opt = (SedpShedTrainOptions) {.top_k = 10, .levels = 10, .copies = 4, .pool = 16, .epochs = 300,
                                 .seed = 1, .validation = NULL};
}

void
sedp_shed_train_report_clear (SedpShedTrainReport *r)
{
  g_free (r->levels);
  g_free (r->validation);
  *r = (SedpShedTrainReport) {0};
}

static double
quota_of (const SedpShedTrainOptions *opt, guint level)
{
  return 1.0 - (double) level / opt->levels;
}

/* Features of request @q at @quota; the ones the labels do not depend on drawn from @rand
 * (NULL: their typical values), each over its whole range and independently of the quota, so
 * that the model learns to ignore them, and meets no value it never saw (a request late under
 * load has little budget left). (The previous cutoff was once drawn near 1 − quota: the
 * model then read it as a second quota, and live, where it is the last request's cutoff and
 * varies from request to request, it added that variation to every decision.) */
static void
sample_features (const SedpShedRequest *q, double quota, double deadline_s, GRand *rand, float *out)
{
  ShedEscoreStats st;
  shed_escore_stats (q->escore, q->n, &st);
  ShedContext c = {
    .quota = quota,
    .prev_cutoff = rand ? g_rand_double (rand) : 1.0 - quota,
    .queue = rand ? g_rand_double (rand) : 0.0,
    .budget_s = deadline_s * (rand ? g_rand_double (rand) : 0.65),
  };
  shed_features (&c, &st, q->n, out);
}

typedef struct {
  GArray *x;      /* float, SHED_N_FEATURES per sample */
  GArray *y;      /* float */
  SedpShedCurve *curves;
  double **labels; /* per level, per request */
} Samples;

static gint
by_count (gconstpointer a, gconstpointer b, gpointer data)
{
  const SedpShedCurve *curves = data;
  guint x = *(const guint *) a, y = *(const guint *) b;
  guint nx = curves[x].n, ny = curves[y].n;
  return nx != ny ? (nx < ny ? -1 : 1) : (x < y ? -1 : x > y);
}

/* Each request's curve pooled with its @pool nearest in candidate count (a window of the
 * requests ordered by count, itself included). */
static SedpShedCurve *
pool_curves (const SedpShedCurve *curves, guint n, guint pool)
{
  g_autofree guint *order = g_new (guint, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    order[i] = i;
  g_qsort_with_data (order, (gint) n, sizeof (guint), by_count, (gpointer) curves);
  pool = CLAMP (pool, 1, MAX (n, 1));
  SedpShedCurve *out = g_new0 (SedpShedCurve, MAX (n, 1));
  for (guint r = 0; r < n; r++) {
    guint first = r >= pool / 2 ? r - pool / 2 : 0;
    first = MIN (first, n - pool);
    sedp_shed_curve_pool (curves, order + first, pool, curves[order[r]].n, &out[order[r]]);
  }
  return out;
}

static void
samples_build (Samples *s, const SedpShedWorkload *w, const SedpShedTrainOptions *opt)
{
  guint n = w->requests->len;
  s->x = g_array_new (FALSE, FALSE, sizeof (float));
  s->y = g_array_new (FALSE, FALSE, sizeof (float));
  s->curves = g_new0 (SedpShedCurve, n);
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    sedp_shed_curve_init (&s->curves[i], q->escore, q->score, q->n, opt->top_k);
  }
  SedpShedCurve *pooled = pool_curves (s->curves, n, opt->pool);
  g_autoptr (GRand) rand = g_rand_new_with_seed ((guint32) opt->seed);
  s->labels = g_new0 (double *, opt->levels);
  for (guint l = 0; l < opt->levels; l++) {
    s->labels[l] = g_new (double, n);
    sedp_shed_labels (pooled, n, quota_of (opt, l), w->min_keep, w->max_cutoff, s->labels[l]);
    for (guint i = 0; i < n; i++)
      for (guint k = 0; k < opt->copies; k++) {
        float f[SHED_N_FEATURES], y = (float) s->labels[l][i];
        sample_features (g_ptr_array_index (w->requests, i), quota_of (opt, l),
                         w->deadline_ms / 1000.0, rand, f);
        g_array_append_vals (s->x, f, SHED_N_FEATURES);
        g_array_append_val (s->y, y);
      }
  }
  for (guint i = 0; i < n; i++)
    sedp_shed_curve_clear (&pooled[i]);
  g_free (pooled);
}

static void
samples_clear (Samples *s, guint n_requests, guint levels)
{
  for (guint i = 0; i < n_requests; i++)
    sedp_shed_curve_clear (&s->curves[i]);
  for (guint l = 0; l < levels; l++)
    g_free (s->labels[l]);
  g_free (s->labels);
  g_free (s->curves);
  g_array_unref (s->x);
  g_array_unref (s->y);
}

/* The model's keep for request @q at @quota, its features at their typical values. */
static float
model_keep (const SedpMlp *m, const SedpShedWorkload *w, const SedpShedRequest *q, double quota)
{
  float f[SHED_N_FEATURES], keep;
  sample_features (q, quota, w->deadline_ms / 1000.0, NULL, f);
  sedp_mlp_predict (m, f, 1, &keep);
  return keep;
}

/* Mean recall@K over @w's requests (@curves) of `fixed` keeping @share of each. */
static double
fixed_recall (const SedpShedWorkload *w, const SedpShedCurve *curves, double share)
{
  guint n = w->requests->len;
  double recall = 0;
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    recall += sedp_shed_curve_recall (&curves[i], shed_keep_count (share, q->n, w->min_keep,
                                                                   w->max_cutoff)) / n;
  }
  return recall;
}

/* The model alone (its keeps as they are) at @out->quota, and `fixed` at its share. */
static void
evaluate_model (const SedpShedWorkload *w, const SedpShedCurve *curves, const SedpMlp *m,
                SedpShedLevel *out)
{
  guint n = w->requests->len;
  guint64 all = 0, kept = 0;
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    guint k = shed_keep_count (model_keep (m, w, q, out->quota), q->n, w->min_keep, w->max_cutoff);
    all += q->n;
    kept += k;
    out->model_recall += sedp_shed_curve_recall (&curves[i], k) / n;
  }
  out->model_keep = all ? (double) kept / all : 1.0;
  out->fixed_recall = fixed_recall (w, curves, out->model_keep);
}

/* As served (`dnn_level = quota`): the requests in file order through the stage's balance at
 * @out->quota, and `fixed` at the share kept. */
static void
evaluate_served (const SedpShedWorkload *w, const SedpShedCurve *curves, const SedpMlp *m,
                 SedpShedLevel *out)
{
  guint n = w->requests->len;
  guint64 all = 0, kept = 0;
  g_autofree ShedBalance *b = g_new0 (ShedBalance, 1);
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    double floor = shed_floor_share (q->n, w->min_keep, w->max_cutoff);
    double level = shed_balance_level (b, out->quota, q->n, floor);
    double keep = shed_balance_keep (b, out->quota, model_keep (m, w, q, level), q->n, floor);
    guint k = shed_keep_count (keep, q->n, w->min_keep, w->max_cutoff);
    all += q->n;
    kept += k;
    out->served_recall += sedp_shed_curve_recall (&curves[i], k) / n;
  }
  out->served_keep = all ? (double) kept / all : 1.0;
  out->served_fixed_recall = fixed_recall (w, curves, out->served_keep);
}

/* Level @l of the report on the training requests: labels, the model, as served. */
static void
evaluate_level (const Samples *s, const SedpShedWorkload *w, const SedpMlp *m,
                const SedpShedTrainOptions *opt, guint l, SedpShedLevel *out)
{
  guint n = w->requests->len;
  guint64 all = 0, kept = 0;
  out->quota = quota_of (opt, l);
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    guint k = shed_keep_count (s->labels[l][i], q->n, w->min_keep, w->max_cutoff);
    all += q->n;
    kept += k;
    out->label_recall += sedp_shed_curve_recall (&s->curves[i], k) / n;
  }
  out->label_keep = all ? (double) kept / all : 1.0;
  evaluate_model (w, s->curves, m, out);
  evaluate_served (w, s->curves, m, out);
}

/* The levels on the held-out requests @v (no labels). */
static SedpShedLevel *
evaluate_validation (const SedpShedWorkload *v, const SedpMlp *m, const SedpShedTrainOptions *opt)
{
  guint n = v->requests->len;
  SedpShedCurve *curves = g_new0 (SedpShedCurve, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (v->requests, i);
    sedp_shed_curve_init (&curves[i], q->escore, q->score, q->n, opt->top_k);
  }
  SedpShedLevel *out = g_new0 (SedpShedLevel, opt->levels);
  for (guint l = 0; l < opt->levels; l++) {
    out[l].quota = quota_of (opt, l);
    evaluate_model (v, curves, m, &out[l]);
    evaluate_served (v, curves, m, &out[l]);
  }
  for (guint i = 0; i < n; i++)
    sedp_shed_curve_clear (&curves[i]);
  g_free (curves);
  return out;
}

SedpNnModel *
sedp_shed_train (const SedpShedWorkload *w, const SedpShedTrainOptions *opt,
                 SedpShedTrainReport *report, GError **error)
{
  Samples s = {0};
  samples_build (&s, w, opt);
  g_autoptr (SedpMlp) m = sedp_mlp_new (SHED_N_FEATURES, hidden, G_N_ELEMENTS (hidden), opt->seed);
  SedpMlpTrainOptions to;
  sedp_mlp_train_options_init (&to);
  to.epochs = opt->epochs;
  to.seed = opt->seed;
  to.final_learning_rate = to.learning_rate / 10; /* falls along half a cosine: a closer fit */
  SedpMlpTrainReport tr = {0};
  gboolean ok = sedp_mlp_train (m, (const float *) s.x->data, (const float *) s.y->data, s.y->len,
                                &to, &tr, error);
  *report = (SedpShedTrainReport) {
    .initial_loss = tr.initial_loss, .final_loss = tr.last_loss,
    .n_requests = w->requests->len, .n_samples = s.y->len,
    .n_parameters = (guint) sedp_mlp_n_parameters (m), .n_levels = opt->levels,
    .levels = g_new0 (SedpShedLevel, opt->levels),
  };
  for (guint l = 0; ok && l < opt->levels; l++)
    evaluate_level (&s, w, m, opt, l, &report->levels[l]);
  if (ok && opt->validation) {
    report->validation = evaluate_validation (opt->validation, m, opt);
    report->n_validation = opt->validation->requests->len;
  }
  sedp_mlp_train_report_clear (&tr);
  samples_clear (&s, w->requests->len, opt->levels);
  return ok ? sedp_mlp_to_onnx (m, "features", "keep") : NULL;
}

/* One table of levels: with the labels' columns when @labels. */
static void
print_levels (const SedpShedLevel *levels, guint n, gboolean labels, GString *out)
{
  g_string_append_printf (out, "quota %s model_keep model_recall fixed_recall  served_keep "
                          "served_recall fixed_recall\n",
                          labels ? " label_keep label_recall " : "");
  for (guint l = 0; l < n; l++) {
    const SedpShedLevel *v = &levels[l];
    g_string_append_printf (out, "%5.2f ", v->quota);
    if (labels)
      g_string_append_printf (out, " %10.3f %12.3f ", v->label_keep, v->label_recall);
    g_string_append_printf (out, " %10.3f %12.3f %12.3f  %11.3f %13.3f %12.3f\n", v->model_keep,
                            v->model_recall, v->fixed_recall, v->served_keep, v->served_recall,
                            v->served_fixed_recall);
  }
}

void
sedp_shed_train_report_print (const SedpShedTrainReport *r, GString *out)
{
  g_string_append_printf (out, "%u requests, %u samples, %u parameters; loss %.5f before, %.5f after\n",
                          r->n_requests, r->n_samples, r->n_parameters, r->initial_loss,
                          r->final_loss);
  print_levels (r->levels, r->n_levels, TRUE, out);
  if (r->validation) {
    g_string_append_printf (out, "held out: %u requests\n", r->n_validation);
    print_levels (r->validation, r->n_levels, FALSE, out);
  }
}
