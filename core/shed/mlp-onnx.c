/* sedp — the shedder's MLP as an ONNX model (Gemm, Tanh, Sigmoid), for sedp's engine and ONNX
 * Runtime alike. */
#include "mlp-private.h"

#include <string.h>

/* The initializer @name of @rank @dims holding @n parameters rounded to float. */
static SedpNnTensor *
float_tensor (const char *name, int rank, const gint64 *dims, const double *values, gsize n)
{
  SedpNnTensor *t = sedp_nn_tensor_new (name, SEDP_NN_FLOAT, rank, dims);
  float *data = t->data;
  for (gsize i = 0; i < n; i++)
    data[i] = (float) values[i];
  return t;
}

/* Layer @l of @m: the initializers mlp.wL [in, out] and mlp.bL [out], a Gemm (transB 0) from
 * @in to mlp.zL, then a Tanh to mlp.hL, or for the last layer a Sigmoid to @last_out. Returns
 * the name of the layer's output (newly allocated). */
static char *
add_layer (SedpNnModel *model, const SedpMlp *m, guint l, const char *in, const char *last_out)
{
  guint n_in = m->sizes[l], n_out = m->sizes[l + 1];
  g_autofree char *w = g_strdup_printf ("mlp.w%u", l), *b = g_strdup_printf ("mlp.b%u", l);
  g_autofree char *z = g_strdup_printf ("mlp.z%u", l), *gemm = g_strdup_printf ("mlp.fc%u", l);
  g_autofree char *act = g_strdup_printf ("mlp.act%u", l);
  const gint64 w_dims[] = {n_in, n_out}, b_dims[] = {n_out};
  sedp_nn_model_add_initializer (model, float_tensor (w, 2, w_dims, m->params + m->w_off[l],
                                                      (gsize) n_in * n_out));
  sedp_nn_model_add_initializer (model, float_tensor (b, 1, b_dims, m->params + m->b_off[l],
                                                      n_out));
  const char *gin[] = {in, w, b, NULL}, *gout[] = {z, NULL};
  SedpNnNode *node = sedp_nn_model_add_node (model, "Gemm", gemm, gin, gout);
  sedp_nn_node_set_attr_int (node, "transB", 0);
  gboolean last = l + 1 == m->n_layers;
  char *out = last ? g_strdup (last_out) : g_strdup_printf ("mlp.h%u", l);
  const char *ain[] = {z, NULL}, *aout[] = {out, NULL};
  sedp_nn_model_add_node (model, last ? "Sigmoid" : "Tanh", act, ain, aout);
  return out;
}

SedpNnModel *
sedp_mlp_to_onnx (const SedpMlp *m, const char *input_name, const char *output_name)
{
  g_return_val_if_fail (m != NULL && input_name != NULL && output_name != NULL, NULL);
  g_return_val_if_fail (*input_name && *output_name && strcmp (input_name, output_name) != 0,
                        NULL);
  g_return_val_if_fail (!g_str_has_prefix (input_name, "mlp."), NULL);
  g_return_val_if_fail (!g_str_has_prefix (output_name, "mlp."), NULL);
  SedpNnModel *model = sedp_nn_model_new (13, "sedp shed train");
  model->graph_name = g_strdup ("shed_mlp");
  const char *batch[] = {"N", NULL};
  const gint64 in_dims[] = {-1, m->sizes[0]}, out_dims[] = {-1, 1};
  sedp_nn_model_add_input (model, input_name, SEDP_NN_FLOAT, 2, in_dims, batch);
  sedp_nn_model_add_output (model, output_name, SEDP_NN_FLOAT, 2, out_dims, batch);
  char *prev = g_strdup (input_name);
  for (guint l = 0; l < m->n_layers; l++) {
    char *next = add_layer (model, m, l, prev, output_name);
    g_free (prev);
    prev = next;
  }
  g_free (prev);
  return model;
}
