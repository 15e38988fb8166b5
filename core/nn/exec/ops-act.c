/* sedp — the activations with parameters, beyond ops-math.c's unary functions: PRelu (a slope
 * tensor broadcast to X), Softplus, Softsign, Elu, Selu, Celu, HardSigmoid, HardSwish,
 * ThresholdedRelu. Float only. */
#include "ops.h"

#include <math.h>

/* ---- PRelu: y = x < 0 ? slope · x : x, slope broadcast unidirectionally to X ---- */

#define OP_PRELU(x, s) ((x) < 0.0f ? (x) * (s) : (x))

BIN_LOOP (prelu_float, float, float, float, OP_PRELU)

gboolean
nn_prepare_prelu (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0), *slope = op_in (c, 1);
  if (x->dtype != SEDP_NN_FLOAT || slope->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "X of type %s and slope of type %s: takes float", sedp_nn_dtype_name (x->dtype),
                   sedp_nn_dtype_name (slope->dtype));
    return FALSE;
  }
  if (!nn_prepare_broadcast (c, 2, prelu_float, SEDP_NN_FLOAT, NN_ELEM_PRELU, "prelu", error))
    return FALSE;
  Value *y = op_out (c, 0);
  gboolean same = y->rank == x->rank;
  for (int i = 0; same && i < x->rank; i++)
    same = y->dims[i] == x->dims[i];
  if (!same) {
    g_autofree char *a = sedp_nn_shape_to_string (x->rank, x->dims);
    g_autofree char *b = sedp_nn_shape_to_string (slope->rank, slope->dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node,
                   "slope of shape %s does not broadcast to X of shape %s", b, a);
    return FALSE;
  }
  return TRUE;
}

/* ---- the elementwise activations with attributes ---- */

/* The operators, their attributes' names and defaults (NULL: no such attribute). */
static const struct {
  const char *op;
  ParamAct act;
  const char *alpha_name, *beta_name;
  float alpha, beta;
} param_acts[] = {
  {"Softplus", PACT_SOFTPLUS, NULL, NULL, 0, 0},
  {"Softsign", PACT_SOFTSIGN, NULL, NULL, 0, 0},
  {"Elu", PACT_ELU, "alpha", NULL, 1.0f, 0},
  {"Selu", PACT_SELU, "alpha", "gamma", 1.67326319217681884765625f, 1.05070102214813232421875f},
  {"Celu", PACT_CELU, "alpha", NULL, 1.0f, 0},
  {"HardSigmoid", PACT_HARD_SIGMOID, "alpha", "beta", 0.2f, 0.5f},
  {"HardSwish", PACT_HARD_SWISH, NULL, NULL, 1.0f / 6.0f, 0.5f},
  {"ThresholdedRelu", PACT_THRESHOLDED_RELU, "alpha", NULL, 1.0f, 0},
};

/* log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0. */
static inline float
softplus (float x)
{
  return x > 0.0f ? x + log1pf (expf (-x)) : log1pf (expf (x));
}

/* max(0, min(1, alpha·x + beta)); NaN stays NaN. */
static inline float
hard_sigmoid (float x, float alpha, float beta)
{
  float v = alpha * x + beta;
  return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

NN_HOT static void
map_param_act (const ParamActParams *p, const float *x, float *y)
{
  float a = p->alpha, b = p->beta;
  for (gint64 i = 0; i < p->n; i++) {
    float v = x[i];
    switch (p->act) {
    case PACT_SOFTPLUS: y[i] = softplus (v); break;
    case PACT_SOFTSIGN: y[i] = v / (1.0f + fabsf (v)); break;
    case PACT_ELU: y[i] = v < 0.0f ? a * expm1f (v) : v; break;
    case PACT_SELU: y[i] = v <= 0.0f ? b * a * expm1f (v) : b * v; break;
    case PACT_CELU: y[i] = v > 0.0f ? v : a * expm1f (v / a); break; /* NaN stays NaN */
    case PACT_HARD_SIGMOID: y[i] = hard_sigmoid (v, a, b); break;
    case PACT_HARD_SWISH: y[i] = v * hard_sigmoid (v, a, b); break;
    case PACT_THRESHOLDED_RELU: y[i] = v > a ? v : 0.0f; break;
    }
  }
}

static gboolean
kernel_param_act (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  map_param_act (s->params, ptrs[s->in[0]], ptrs[s->out[0]]);
  return TRUE;
}

gboolean
nn_prepare_param_act (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  guint k = NN_OP_ROW (c, param_acts);
  if (x->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "input of type %s: takes float",
                   sedp_nn_dtype_name (x->dtype));
    return FALSE;
  }
  ParamActParams *p = g_new0 (ParamActParams, 1);
  c->step->params = p;
  p->act = param_acts[k].act;
  p->alpha = param_acts[k].alpha_name
                 ? nn_attr_float (c->node, param_acts[k].alpha_name, param_acts[k].alpha)
                 : param_acts[k].alpha;
  p->beta = param_acts[k].beta_name
                ? nn_attr_float (c->node, param_acts[k].beta_name, param_acts[k].beta)
                : param_acts[k].beta;
  p->n = x->numel;
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, x->rank, x->dims);
  c->step->fn = kernel_param_act;
  c->step->id = NN_KERNEL_PARAM_ACT;
  c->step->kernel = param_acts[k].op;
  c->step->flops = (double) p->n;
  return TRUE;
}
