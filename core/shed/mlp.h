/* sedp — a small multi-layer perceptron for the load shedder's pruning model (issue 16; see
 * docs/load-shedding.md, "Training"): tanh hidden layers and a sigmoid output, trained in C with
 * Adam on squared error, written as ONNX (Gemm, Tanh, Sigmoid) for sedp's engine. */
#pragma once

#include <glib.h>
#include <sedp/macros.h>

#include "nn/model.h"

G_BEGIN_DECLS

/** SEDP_MLP_MAX_HIDDEN: the most hidden layers an MLP may have. */
#define SEDP_MLP_MAX_HIDDEN 8
/** SEDP_MLP_MAX_WIDTH: the widest layer (inputs included) an MLP may have. */
#define SEDP_MLP_MAX_WIDTH 4096

/** SEDP_MLP_ERROR: errors of training an MLP on bad data or options. Codes are #SedpMlpError. */
#define SEDP_MLP_ERROR (sedp_mlp_error_quark ())
SEDP_API GQuark sedp_mlp_error_quark (void);

typedef enum {
  SEDP_MLP_ERROR_EMPTY,      /* no rows to train on */
  SEDP_MLP_ERROR_NOT_FINITE, /* a NaN or an infinity among the inputs or the targets */
  SEDP_MLP_ERROR_RANGE,      /* a target outside [0, 1] */
  SEDP_MLP_ERROR_OPTIONS,    /* an option out of range (epochs, batch size, learning rate) */
} SedpMlpError;

/**
 * SedpMlp:
 * A fully connected network: D inputs, hidden layers with tanh, one output through a sigmoid,
 * so that every prediction lies in (0, 1). Its parameters are kept and computed with in double
 * precision; the ONNX export rounds them to float. Not synchronized: sedp_mlp_predict() and the
 * other const functions may run in several threads at once, sedp_mlp_train() needs the MLP to
 * itself.
 */
typedef struct _SedpMlp SedpMlp;

/**
 * sedp_mlp_new:
 * @n_inputs: the input width D, 1 to %SEDP_MLP_MAX_WIDTH
 * @hidden: (array length=n_hidden): the hidden layers' widths, each 1 to %SEDP_MLP_MAX_WIDTH
 *   (copied); may be NULL when @n_hidden is 0 (a logistic regression)
 * @n_hidden: 0 to %SEDP_MLP_MAX_HIDDEN
 * @seed: the seed of the initialization (the same seed gives the same weights)
 *
 * Weights drawn Xavier/Glorot-uniform, U(−a, a) with a = √(6 / (fan_in + fan_out)), from a GRand
 * seeded with @seed; biases zero. Out-of-range sizes are programming errors (a critical, NULL).
 *
 * Returns: (transfer full): a new MLP; free with sedp_mlp_free().
 */
SEDP_API SedpMlp *sedp_mlp_new (guint n_inputs, const guint *hidden, guint n_hidden, guint64 seed);

/** sedp_mlp_free: Frees @m and its parameters; NULL is ignored. */
SEDP_API void sedp_mlp_free (SedpMlp *m);

/** sedp_mlp_get_n_inputs: Returns: the input width D of @m. */
SEDP_API guint sedp_mlp_get_n_inputs (const SedpMlp *m);

/** sedp_mlp_n_parameters: Returns: the number of weights and biases of @m. */
SEDP_API gsize sedp_mlp_n_parameters (const SedpMlp *m);

/**
 * sedp_mlp_predict:
 * @x: (array): @n_rows rows of D floats, row-major
 * @out: (array) (out caller-allocates): @n_rows predictions, each in [0, 1]
 *
 * The network's output for every row, computed in double precision and rounded to float.
 * Non-finite inputs give non-finite or meaningless outputs (no check is made here).
 * Thread-safe for a shared @m.
 */
SEDP_API void sedp_mlp_predict (const SedpMlp *m, const float *x, guint n_rows, float *out);

/**
 * sedp_mlp_loss:
 * Returns: the mean over @n_rows rows of (prediction − @y)², in double precision; 0 when
 * @n_rows is 0. Thread-safe for a shared @m.
 */
SEDP_API double sedp_mlp_loss (const SedpMlp *m, const float *x, const float *y, guint n_rows);

/**
 * SedpMlpTrainOptions:
 * @epochs: passes over the data, at least 1
 * @batch_size: rows per Adam step, at least 1 (more than the rows: one batch of all of them)
 * @learning_rate: Adam's step size at the first epoch, finite and positive (e.g. 0.01)
 * @final_learning_rate: the step size at the last epoch, finite and positive: the rate falls
 *   from @learning_rate to it along half a cosine over the epochs (equal to @learning_rate: a
 *   constant rate). A falling rate lets the last epochs settle in the minimum that a constant
 *   one keeps stepping around.
 * @seed: the seed of the GRand that shuffles the rows before every epoch
 * @record_losses: whether the report keeps every epoch's loss (#SedpMlpTrainReport.losses)
 *
 * Adam's other constants are fixed: β1 0.9, β2 0.999, ε 1e-8.
 */
typedef struct {
  guint epochs;
  guint batch_size;
  double learning_rate;
  double final_learning_rate;
  guint64 seed;
  gboolean record_losses;
} SedpMlpTrainOptions;

/** sedp_mlp_train_options_init: Fills @opt with the defaults: 200 epochs, batches of 32, a
 * constant learning rate of 0.01, seed 1, no loss history. */
SEDP_API void sedp_mlp_train_options_init (SedpMlpTrainOptions *opt);

/**
 * SedpMlpTrainReport:
 * What a training run did. Every loss is sedp_mlp_loss() over all the rows, with the weights of
 * that moment. Free what it holds with sedp_mlp_train_report_clear().
 */
typedef struct {
  double initial_loss; /* before the first epoch */
  double first_loss;   /* after the first epoch */
  double last_loss;    /* after the last epoch */
  guint n_epochs;
  guint64 n_steps;     /* Adam steps (mini-batches) taken */
  GArray *losses;      /* (element-type double) after every epoch; NULL unless asked for */
} SedpMlpTrainReport;

/** sedp_mlp_train_report_clear: Frees the loss history of @report and zeroes it. */
SEDP_API void sedp_mlp_train_report_clear (SedpMlpTrainReport *report);

/**
 * sedp_mlp_train:
 * @x: (array): @n_rows rows of D floats, row-major
 * @y: (array): @n_rows targets, each in [0, 1]
 * @opt: (nullable): the options; NULL for the defaults of sedp_mlp_train_options_init()
 * @report: (out caller-allocates) (optional): what the run did; clear it after
 *
 * Fits @m to @y by mini-batch Adam on the mean squared error of the sigmoid output, the rows
 * shuffled before every epoch by a GRand seeded with @opt->seed; the gradients are computed by
 * hand-written backpropagation in double precision. Deterministic for given data, MLP and
 * options. Errors (%SEDP_MLP_ERROR), found before @m is touched: EMPTY (0 rows), NOT_FINITE (a
 * NaN or infinity in @x or @y, naming the first), RANGE (a target outside [0, 1], naming the
 * first), OPTIONS. @m must not be used by other threads during the call.
 *
 * Returns: %FALSE with @error set on bad data or options.
 */
SEDP_API gboolean sedp_mlp_train (SedpMlp *m, const float *x, const float *y, guint n_rows,
                                  const SedpMlpTrainOptions *opt, SedpMlpTrainReport *report,
                                  GError **error);

/**
 * sedp_mlp_to_onnx:
 * @input_name: the graph input, float [N, D] with N a symbolic batch dimension
 * @output_name: the graph output, float [N, 1]
 *
 * @m as an ONNX model (opset 13, producer "sedp shed train"): per layer a Gemm (weights
 * initializer "mlp.wL" of [in, out], transB 0; bias "mlp.bL" of [out]) and a Tanh, the last a
 * Sigmoid. Parameters are rounded to float. The names must differ from each other and from the
 * model's own, which all begin with "mlp.". Save it with sedp_nn_model_save(). Thread-safe for a
 * shared @m.
 *
 * Returns: (transfer full): the model; free with sedp_nn_model_unref().
 */
SEDP_API SedpNnModel *sedp_mlp_to_onnx (const SedpMlp *m, const char *input_name,
                                        const char *output_name);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpMlp, sedp_mlp_free)

G_END_DECLS
