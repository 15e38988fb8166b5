/* sedp — training the shedder's MLP: backpropagation written out by hand, mini-batch Adam on
 * the squared error of the sigmoid output, and the checks of the data and the options. */
#include "mlp-private.h"

#include <math.h>
#include <string.h>

#define ADAM_BETA1 0.9
#define ADAM_BETA2 0.999
#define ADAM_EPS 1e-8

/* The buffers of one row's passes: every layer's values, and the deltas of two adjacent layers
 * (the widest layer's size each). */
typedef struct {
  double *act;
  double *delta;
  double *prev;
} Scratch;

static void
scratch_init (Scratch *s, const SedpMlp *m)
{
  s->act = g_new (double, m->n_units);
  s->delta = g_new (double, m->max_width);
  s->prev = g_new (double, m->max_width);
}

static void
scratch_clear (Scratch *s)
{
  g_free (s->act);
  g_free (s->delta);
  g_free (s->prev);
}

/* Adds layer @l's gradient to @grad, given its input values @in and the delta of its
 * pre-activation outputs: ∂/∂W[k][j] = in[k]·delta[j], ∂/∂b[j] = delta[j]. */
static void
layer_grad (const SedpMlp *m, guint l, const double *in, const double *delta, double *grad)
{
  guint n_in = m->sizes[l], n_out = m->sizes[l + 1];
  double *gw = grad + m->w_off[l], *gb = grad + m->b_off[l];
  for (guint k = 0; k < n_in; k++) {
    double *gwk = gw + (gsize) k * n_out;
    for (guint j = 0; j < n_out; j++)
      gwk[j] += in[k] * delta[j];
  }
  for (guint j = 0; j < n_out; j++)
    gb[j] += delta[j];
}

/* The delta of the pre-activation values of layer @l's input @in (the tanh outputs of layer
 * l − 1): prev[k] = (Σ_j W[k][j]·delta[j])·(1 − in[k]²). */
static void
layer_back (const SedpMlp *m, guint l, const double *in, const double *delta, double *prev)
{
  guint n_in = m->sizes[l], n_out = m->sizes[l + 1];
  const double *w = m->params + m->w_off[l];
  for (guint k = 0; k < n_in; k++) {
    const double *wk = w + (gsize) k * n_out;
    double s = 0;
    for (guint j = 0; j < n_out; j++)
      s += wk[j] * delta[j];
    prev[k] = s * (1.0 - in[k] * in[k]);
  }
}

/* Adds the gradient of @scale·(p − @y)² to @grad, for the row whose forward pass left its
 * values in @s->act (p its output). The sigmoid's derivative is p·(1 − p). */
static void
backward_row (const SedpMlp *m, Scratch *s, double y, double scale, double *grad)
{
  double p = s->act[m->a_off[m->n_layers]];
  double *delta = s->delta, *prev = s->prev;
  delta[0] = 2.0 * scale * (p - y) * p * (1.0 - p);
  for (guint l = m->n_layers; l-- > 0;) {
    const double *in = s->act + m->a_off[l];
    layer_grad (m, l, in, delta, grad);
    if (l == 0)
      break;
    layer_back (m, l, in, delta, prev);
    double *t = delta;
    delta = prev;
    prev = t;
  }
}

/* The mean squared error over the @n rows (@rows, or 0 … n − 1 when NULL) and its gradient,
 * written to @grad. */
static double
batch_loss_grad (const SedpMlp *m, Scratch *s, const float *x, const float *y,
                 const guint *rows, guint n, double *grad)
{
  memset (grad, 0, m->n_params * sizeof (double));
  double sum = 0;
  for (guint i = 0; i < n; i++) {
    guint r = rows ? rows[i] : i;
    double d = sedp_mlp_forward_row (m, x + (gsize) r * m->sizes[0], s->act) - y[r];
    sum += d * d;
    backward_row (m, s, y[r], 1.0 / n, grad);
  }
  return sum / n;
}

double
sedp_mlp_loss_grad (const SedpMlp *m, const float *x, const float *y, const guint *rows,
                    guint n, double *grad)
{
  g_return_val_if_fail (m != NULL && x != NULL && y != NULL && grad != NULL && n > 0, 0);
  Scratch s;
  scratch_init (&s, m);
  double loss = batch_loss_grad (m, &s, x, y, rows, n, grad);
  scratch_clear (&s);
  return loss;
}

/* Adam's state: the moments' running means, the step count, the gradient of the step. */
typedef struct {
  double *m1, *m2, *grad;
  guint64 t;
  double lr;
} Adam;

/* One Adam step on @params with the gradient in @a->grad, the moments bias-corrected. */
static void
adam_step (Adam *a, double *params, gsize n)
{
  a->t++;
  double c1 = 1.0 - pow (ADAM_BETA1, (double) a->t), c2 = 1.0 - pow (ADAM_BETA2, (double) a->t);
  for (gsize i = 0; i < n; i++) {
    double g = a->grad[i];
    a->m1[i] = ADAM_BETA1 * a->m1[i] + (1.0 - ADAM_BETA1) * g;
    a->m2[i] = ADAM_BETA2 * a->m2[i] + (1.0 - ADAM_BETA2) * g * g;
    params[i] -= a->lr * (a->m1[i] / c1) / (sqrt (a->m2[i] / c2) + ADAM_EPS);
  }
}

/* A training run's state: the row order, its shuffling GRand, Adam, the scratch buffers. */
typedef struct {
  guint *order;
  guint batch;
  GRand *rand;
  Adam adam;
  Scratch scratch;
} Trainer;

static void
trainer_init (Trainer *t, const SedpMlp *m, const SedpMlpTrainOptions *opt, guint n_rows)
{
  t->order = g_new (guint, n_rows);
  for (guint i = 0; i < n_rows; i++)
    t->order[i] = i;
  t->batch = MIN (opt->batch_size, n_rows);
  const guint32 words[2] = {(guint32) opt->seed, (guint32) (opt->seed >> 32)};
  t->rand = g_rand_new_with_seed_array (words, 2);
  t->adam = (Adam) {.m1 = g_new0 (double, m->n_params), .m2 = g_new0 (double, m->n_params),
                    .grad = g_new0 (double, m->n_params), .lr = opt->learning_rate};
  scratch_init (&t->scratch, m);
}

static void
trainer_clear (Trainer *t)
{
  g_free (t->order);
  g_rand_free (t->rand);
  g_free (t->adam.m1);
  g_free (t->adam.m2);
  g_free (t->adam.grad);
  scratch_clear (&t->scratch);
}

/* Fisher–Yates over @n rows, j uniform in [0, i] from @rand. */
static void
shuffle (guint *order, guint n, GRand *rand)
{
  for (guint i = n; i > 1; i--) {
    guint j = MIN ((guint) (g_rand_double (rand) * i), i - 1);
    guint v = order[i - 1];
    order[i - 1] = order[j];
    order[j] = v;
  }
}

/* One epoch: the rows shuffled, then one Adam step per mini-batch. */
static void
run_epoch (SedpMlp *m, Trainer *t, const float *x, const float *y, guint n_rows)
{
  shuffle (t->order, n_rows, t->rand);
  for (guint start = 0; start < n_rows; start += t->batch) {
    guint n = MIN (t->batch, n_rows - start);
    batch_loss_grad (m, &t->scratch, x, y, t->order + start, n, t->adam.grad);
    adam_step (&t->adam, m->params, m->n_params);
  }
}

void
sedp_mlp_train_options_init (SedpMlpTrainOptions *opt)
{
  g_return_if_fail (opt != NULL);
  *opt = (SedpMlpTrainOptions) {.epochs = 200, .batch_size = 32, .learning_rate = 0.01,
                                .final_learning_rate = 0.01, .seed = 1, .record_losses = FALSE};
}

void
sedp_mlp_train_report_clear (SedpMlpTrainReport *report)
{
  g_return_if_fail (report != NULL);
  if (report->losses)
    g_array_unref (report->losses);
  memset (report, 0, sizeof *report);
}

static gboolean
check_options (const SedpMlpTrainOptions *opt, GError **error)
{
  if (opt->epochs == 0 || opt->batch_size == 0) {
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_OPTIONS,
                 "cannot train the MLP: epochs = %u, batch_size = %u; both must be at least 1",
                 opt->epochs, opt->batch_size);
    return FALSE;
  }
  if (!isfinite (opt->learning_rate) || opt->learning_rate <= 0) {
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_OPTIONS,
                 "cannot train the MLP: learning_rate = %g; it must be a finite number above 0 "
                 "(e.g. 0.01)", opt->learning_rate);
    return FALSE;
  }
  if (!isfinite (opt->final_learning_rate) || opt->final_learning_rate <= 0) {
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_OPTIONS,
                 "cannot train the MLP: final_learning_rate = %g; it must be a finite number "
                 "above 0 (the learning rate itself for a constant rate)",
                 opt->final_learning_rate);
    return FALSE;
  }
  return TRUE;
}

/* Row @i: finite inputs, a finite target in [0, 1]. */
static gboolean
check_row (const float *xi, guint d, float yi, guint i, GError **error)
{
  for (guint k = 0; k < d; k++)
    if (!isfinite (xi[k])) {
      g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_NOT_FINITE,
                   "cannot train the MLP: input %u of row %u is %g; inputs must be finite "
                   "numbers (drop the row or replace the value)", k, i, xi[k]);
      return FALSE;
    }
  if (!isfinite (yi))
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_NOT_FINITE,
                 "cannot train the MLP: the target of row %u is %g; targets must be finite "
                 "numbers in [0, 1] (drop the row)", i, yi);
  else if (yi < 0 || yi > 1)
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_RANGE,
                 "cannot train the MLP: the target of row %u is %g, outside [0, 1]; the output "
                 "is a sigmoid, so targets must be fractions (clip or rescale them)", i, yi);
  return isfinite (yi) && yi >= 0 && yi <= 1;
}

static gboolean
check_data (const SedpMlp *m, const float *x, const float *y, guint n_rows, GError **error)
{
  if (n_rows == 0) {
    g_set_error (error, SEDP_MLP_ERROR, SEDP_MLP_ERROR_EMPTY,
                 "cannot train the MLP: no rows (n_rows = 0); training needs at least one row "
                 "of %u inputs and its target", m->sizes[0]);
    return FALSE;
  }
  for (guint i = 0; i < n_rows; i++)
    if (!check_row (x + (gsize) i * m->sizes[0], m->sizes[0], y[i], i, error))
      return FALSE;
  return TRUE;
}

/* The learning rate of epoch @e of @opt->epochs: half a cosine from the first rate to the
 * final one. */
static double
epoch_rate (const SedpMlpTrainOptions *opt, guint e)
{
  double f = opt->epochs > 1 ? (double) e / (opt->epochs - 1) : 0;
  return opt->final_learning_rate +
         0.5 * (opt->learning_rate - opt->final_learning_rate) * (1 + cos (G_PI * f));
}

/* The epochs of a run, each followed by the loss over all rows into @r. */
static void
train_epochs (SedpMlp *m, Trainer *t, const float *x, const float *y, guint n_rows,
              const SedpMlpTrainOptions *opt, SedpMlpTrainReport *r)
{
  guint epochs = opt->epochs;
  for (guint e = 0; e < epochs; e++) {
    t->adam.lr = epoch_rate (opt, e);
    run_epoch (m, t, x, y, n_rows);
    double loss = sedp_mlp_loss (m, x, y, n_rows);
    if (e == 0)
      r->first_loss = loss;
    r->last_loss = loss;
    if (r->losses)
      g_array_append_val (r->losses, loss);
  }
  r->n_epochs = epochs;
  r->n_steps = t->adam.t;
}

gboolean
sedp_mlp_train (SedpMlp *m, const float *x, const float *y, guint n_rows,
                const SedpMlpTrainOptions *opt, SedpMlpTrainReport *report, GError **error)
{
  g_return_val_if_fail (m != NULL, FALSE);
  g_return_val_if_fail (n_rows == 0 || (x != NULL && y != NULL), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  SedpMlpTrainOptions defaults;
  if (opt == NULL) {
    sedp_mlp_train_options_init (&defaults);
    opt = &defaults;
  }
  if (report)
    memset (report, 0, sizeof *report);
  if (!check_options (opt, error) || !check_data (m, x, y, n_rows, error))
    return FALSE;
  SedpMlpTrainReport r = {.initial_loss = sedp_mlp_loss (m, x, y, n_rows)};
  if (opt->record_losses)
    r.losses = g_array_sized_new (FALSE, FALSE, sizeof (double), opt->epochs);
  Trainer t;
  trainer_init (&t, m, opt, n_rows);
  train_epochs (m, &t, x, y, n_rows, opt, &r);
  trainer_clear (&t);
  if (report)
    *report = r;
  else if (r.losses)
    g_array_unref (r.losses);
  return TRUE;
}
