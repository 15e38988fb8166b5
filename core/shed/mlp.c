/* sedp — the shedder's small MLP: its layers, its initialization and its forward pass. */
#include "mlp-private.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (sedp-mlp-error-quark, sedp_mlp_error)

/* The offsets of every layer's weights, biases and values (see struct _SedpMlp). */
static void
layout (SedpMlp *m)
{
  gsize p = 0, a = 0;
  m->max_width = 0;
  for (guint l = 0; l < m->n_layers; l++) {
    m->w_off[l] = p;
    p += (gsize) m->sizes[l] * m->sizes[l + 1];
    m->b_off[l] = p;
    p += m->sizes[l + 1];
  }
  for (guint l = 0; l <= m->n_layers; l++) {
    m->a_off[l] = a;
    a += m->sizes[l];
    m->max_width = MAX (m->max_width, m->sizes[l]);
  }
  m->n_params = p;
  m->n_units = a;
}

/* Xavier/Glorot-uniform weights for layer @l: U(−a, a), a = √(6 / (fan_in + fan_out)). The
 * biases stay zero. */
static void
init_layer (SedpMlp *m, guint l, GRand *rand)
{
  guint in = m->sizes[l], out = m->sizes[l + 1];
  double a = sqrt (6.0 / (in + out));
  double *w = m->params + m->w_off[l];
  for (gsize k = 0; k < (gsize) in * out; k++)
    w[k] = g_rand_double_range (rand, -a, a);
}

static gboolean
sizes_ok (guint n_inputs, const guint *hidden, guint n_hidden)
{
  if (n_inputs == 0 || n_inputs > SEDP_MLP_MAX_WIDTH || n_hidden > SEDP_MLP_MAX_HIDDEN)
    return FALSE;
  if (n_hidden > 0 && hidden == NULL)
    return FALSE;
  for (guint l = 0; l < n_hidden; l++)
    if (hidden[l] == 0 || hidden[l] > SEDP_MLP_MAX_WIDTH)
      return FALSE;
  return TRUE;
}

SedpMlp *
sedp_mlp_new (guint n_inputs, const guint *hidden, guint n_hidden, guint64 seed)
{
  g_return_val_if_fail (sizes_ok (n_inputs, hidden, n_hidden), NULL);
  SedpMlp *m = g_new0 (SedpMlp, 1);
  m->n_layers = n_hidden + 1;
  m->sizes[0] = n_inputs;
  for (guint l = 0; l < n_hidden; l++)
    m->sizes[l + 1] = hidden[l];
  m->sizes[m->n_layers] = 1;
  layout (m);
  m->params = g_new0 (double, m->n_params);
  const guint32 words[2] = {(guint32) seed, (guint32) (seed >> 32)};
  GRand *rand = g_rand_new_with_seed_array (words, 2);
  for (guint l = 0; l < m->n_layers; l++)
    init_layer (m, l, rand);
  g_rand_free (rand);
  return m;
}

void
sedp_mlp_free (SedpMlp *m)
{
  if (m == NULL)
    return;
  g_free (m->params);
  g_free (m);
}

guint
sedp_mlp_get_n_inputs (const SedpMlp *m)
{
  g_return_val_if_fail (m != NULL, 0);
  return m->sizes[0];
}

gsize
sedp_mlp_n_parameters (const SedpMlp *m)
{
  g_return_val_if_fail (m != NULL, 0);
  return m->n_params;
}

double *
sedp_mlp_get_params (SedpMlp *m)
{
  return m->params;
}

/* 1 / (1 + e^−z), without overflow for large |z|. */
static double
sigmoid (double z)
{
  if (z >= 0)
    return 1.0 / (1.0 + exp (-z));
  double e = exp (z);
  return e / (1.0 + e);
}

/* Layer @l on @in: @out = act(in · W + b), tanh for hidden layers, the sigmoid for the last. */
static void
layer_forward (const SedpMlp *m, guint l, const double *in, double *out)
{
  guint n_in = m->sizes[l], n_out = m->sizes[l + 1];
  const double *w = m->params + m->w_off[l], *b = m->params + m->b_off[l];
  memcpy (out, b, n_out * sizeof (double));
  for (guint k = 0; k < n_in; k++) {
    const double xk = in[k], *wk = w + (gsize) k * n_out;
    for (guint j = 0; j < n_out; j++)
      out[j] += xk * wk[j];
  }
  gboolean last = l + 1 == m->n_layers;
  for (guint j = 0; j < n_out; j++)
    out[j] = last ? sigmoid (out[j]) : tanh (out[j]);
}

double
sedp_mlp_forward_row (const SedpMlp *m, const float *x, double *act)
{
  for (guint k = 0; k < m->sizes[0]; k++)
    act[k] = x[k];
  for (guint l = 0; l < m->n_layers; l++)
    layer_forward (m, l, act + m->a_off[l], act + m->a_off[l + 1]);
  return act[m->a_off[m->n_layers]];
}

void
sedp_mlp_predict (const SedpMlp *m, const float *x, guint n_rows, float *out)
{
  g_return_if_fail (m != NULL);
  g_return_if_fail (n_rows == 0 || (x != NULL && out != NULL));
  double *act = g_new (double, m->n_units);
  for (guint i = 0; i < n_rows; i++)
    out[i] = (float) sedp_mlp_forward_row (m, x + (gsize) i * m->sizes[0], act);
  g_free (act);
}

double
sedp_mlp_loss (const SedpMlp *m, const float *x, const float *y, guint n_rows)
{
  g_return_val_if_fail (m != NULL, 0);
  g_return_val_if_fail (n_rows == 0 || (x != NULL && y != NULL), 0);
  if (n_rows == 0)
    return 0;
  double *act = g_new (double, m->n_units), sum = 0;
  for (guint i = 0; i < n_rows; i++) {
    double d = sedp_mlp_forward_row (m, x + (gsize) i * m->sizes[0], act) - y[i];
    sum += d * d;
  }
  g_free (act);
  return sum / n_rows;
}
