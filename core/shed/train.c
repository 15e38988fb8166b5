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
  *opt = (SedpShedTrainOptions) {.top_k = 10, .levels = 10, .copies = 4, .pool = 16, .epochs = 300, .seed = 1};
}

void
sedp_shed_train_report_clear (SedpShedTrainReport *r)
{
  g_free (r->levels);
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

/* Level @l of the report: labels, the model's decisions, fixed at the model's share; shares are
 * of all the candidates (what the pipeline saves), recall the mean over requests. */
static void
evaluate_level (const Samples *s, const SedpShedWorkload *w, const SedpMlp *m,
                const SedpShedTrainOptions *opt, guint l, SedpShedLevel *out)
{
  guint n = w->requests->len;
  guint64 all = 0, kept_label = 0, kept_model = 0;
  out->quota = quota_of (opt, l);
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    float f[SHED_N_FEATURES], keep;
    sample_features (q, out->quota, w->deadline_ms / 1000.0, NULL, f);
    sedp_mlp_predict (m, f, 1, &keep);
    guint kl = shed_keep_count (s->labels[l][i], q->n, w->min_keep, w->max_cutoff);
    guint km = shed_keep_count (keep, q->n, w->min_keep, w->max_cutoff);
    all += q->n;
    kept_label += kl;
    kept_model += km;
    out->label_recall += sedp_shed_curve_recall (&s->curves[i], kl) / n;
    out->model_recall += sedp_shed_curve_recall (&s->curves[i], km) / n;
  }
  out->label_keep = all ? (double) kept_label / all : 1.0;
  out->model_keep = all ? (double) kept_model / all : 1.0;
  for (guint i = 0; i < n; i++) {
    const SedpShedRequest *q = g_ptr_array_index (w->requests, i);
    guint kf = shed_keep_count (out->model_keep, q->n, w->min_keep, w->max_cutoff);
    out->fixed_recall += sedp_shed_curve_recall (&s->curves[i], kf) / n;
  }
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
  sedp_mlp_train_report_clear (&tr);
  samples_clear (&s, w->requests->len, opt->levels);
  return ok ? sedp_mlp_to_onnx (m, "features", "keep") : NULL;
}

void
sedp_shed_train_report_print (const SedpShedTrainReport *r, GString *out)
{
  g_string_append_printf (out, "%u requests, %u samples, %u parameters; loss %.5f before, %.5f after\n",
                          r->n_requests, r->n_samples, r->n_parameters, r->initial_loss,
                          r->final_loss);
  g_string_append (out, "quota  label_keep label_recall  model_keep model_recall  fixed_recall\n");
  for (guint l = 0; l < r->n_levels; l++) {
    const SedpShedLevel *v = &r->levels[l];
    g_string_append_printf (out, "%5.2f  %10.3f %12.3f  %10.3f %12.3f  %12.3f\n", v->quota,
                            v->label_keep, v->label_recall, v->model_keep, v->model_recall,
                            v->fixed_recall);
  }
}
