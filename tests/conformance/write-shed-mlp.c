/* sedp tests — writes the shedder's MLP (core/shed/mlp.h) as an ONNX file for the ONNX Runtime
 * check (meson test conformance-shed-mlp): 9 → 16 → 8 → 1, trained for a few epochs on a seeded
 * synthetic set so that the weights are not the initial ones.
 *
 * Usage: write-shed-mlp OUT.onnx */
#include "shed/mlp.h"

#include <math.h>
#include <stdio.h>

#define D 9
#define ROWS 256

/* @x: ROWS rows of D inputs uniform in [0, 1); @y: a smooth function of them in (0, 1). */
static void
make_set (float *x, float *y)
{
  GRand *r = g_rand_new_with_seed (16);
  for (guint i = 0; i < ROWS; i++) {
    for (guint k = 0; k < D; k++)
      x[i * D + k] = (float) g_rand_double (r);
    double z = 3.0 * sin (G_PI * x[i * D]) - 1.5 * x[i * D + 3] - 1.0;
    y[i] = (float) (1.0 / (1.0 + exp (-z)));
  }
  g_rand_free (r);
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s OUT.onnx\n", argv[0]);
    return 2;
  }
  static float x[ROWS * D], y[ROWS];
  make_set (x, y);
  const guint hidden[] = {16, 8};
  g_autoptr (SedpMlp) m = sedp_mlp_new (D, hidden, G_N_ELEMENTS (hidden), 16);
  SedpMlpTrainOptions opt;
  sedp_mlp_train_options_init (&opt);
  opt.epochs = 10;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = NULL;
  if (sedp_mlp_train (m, x, y, ROWS, &opt, NULL, &error))
    model = sedp_mlp_to_onnx (m, "features", "keep");
  if (model == NULL || !sedp_nn_model_save (model, argv[1], &error)) {
    fprintf (stderr, "write-shed-mlp: %s\n", error->message);
    return 1;
  }
  return 0;
}
