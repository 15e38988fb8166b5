/* sedp — the MLP's insides, shared by its forward pass, its trainer, its ONNX export and the
 * tests (the gradient check). Not installed. */
#pragma once

#include "mlp.h"

G_BEGIN_DECLS

/* The layers: layer l (0 ≤ l < n_layers) maps sizes[l] values to sizes[l + 1]; its weights
 * are params[w_off[l] …] as a row-major [sizes[l], sizes[l + 1]] matrix (ONNX Gemm's B with
 * transB 0), its biases params[b_off[l] …]. The forward pass keeps every layer's values at
 * act[a_off[l] …] (layer 0: the inputs), n_units in all. */
struct _SedpMlp {
  guint n_layers; /* hidden layers + 1 */
  guint sizes[SEDP_MLP_MAX_HIDDEN + 2];
  gsize w_off[SEDP_MLP_MAX_HIDDEN + 1];
  gsize b_off[SEDP_MLP_MAX_HIDDEN + 1];
  gsize a_off[SEDP_MLP_MAX_HIDDEN + 2];
  gsize n_units;
  guint max_width;
  gsize n_params;
  double *params;
};

/* The forward pass of the row @x (D floats): fills @act (n_units doubles) with every layer's
 * values after its activation. Returns the output. */
double sedp_mlp_forward_row (const SedpMlp *m, const float *x, double *act);

/**
 * sedp_mlp_loss_grad:
 * @rows: (nullable) (array length=n): the rows of @x and @y to use; NULL for rows 0 … @n − 1
 * @grad: (out caller-allocates): n_parameters doubles, the gradient in params' layout
 *
 * The mean squared error over the @n (≥ 1) rows and its gradient with respect to every
 * parameter, by backpropagation. Exported for the tests' finite-difference check.
 */
SEDP_API double sedp_mlp_loss_grad (const SedpMlp *m, const float *x, const float *y,
                                    const guint *rows, guint n, double *grad);

/* The parameters of @m in the layout above (n_parameters of them), to read or change (the
 * tests' finite differences). */
SEDP_API double *sedp_mlp_get_params (SedpMlp *m);

G_END_DECLS
