/* sedp — `sedp shed train`: the pruning DNN fitted to a workload's labels, and its report
 * (docs/load-shedding.md#training). */
#pragma once

#include "collect.h"
#include "nn/model.h"

G_BEGIN_DECLS

/**
 * SedpShedTrainOptions:
 * @top_k: the K of recall@K (the responder's top K)
 * @levels: load levels: quotas 1, 1 − 1/levels, …, 1/levels
 * @copies: samples per request and level, each with its own draw of the features the labels do
 *   not depend on (queue id, deadline budget, jitter of the previous cutoff), so that the model
 *   learns to ignore them
 * @pool: the labels' neighbourhood: each request is labelled from the mean recall curve of the
 *   @pool requests nearest to it in candidate count (itself included), what a shedder that sees
 *   only the request's features can expect of it; 1 labels each request from its own curve
 *   (the answer, which the features cannot predict)
 * @epochs: Adam's epochs
 * @seed: seeds the features' draws, the initial weights and the shuffling
 * @validation: (nullable): held-out requests (not trained on, borrowed) that the report also
 *   evaluates the model on, as it is served (#SedpShedTrainReport.validation)
 */
typedef struct {
  guint top_k;
  guint levels;
  guint copies;
  guint pool;
  guint epochs;
  guint64 seed;
  const SedpShedWorkload *validation;
} SedpShedTrainOptions;

/* 10, 10, 4, 16, 300, 1, no validation. */
SEDP_API void sedp_shed_train_options_init (SedpShedTrainOptions *opt);

/**
 * SedpShedLevel:
 * One load level of the report: the share of all the candidates kept (what the pipeline
 * saves) and the mean recall@K over the requests: of the labels, of the trained model alone
 * (`dnn_level = model`), of `fixed` keeping the model's share, and as served (`dnn_level =
 * quota`: the model's keeps scaled over the last requests in file order so that they keep the
 * quota, shed_balance_keep()) with `fixed` keeping the share served. Held-out requests have no
 * labels (0).
 */
typedef struct {
  double quota;
  double label_keep, label_recall;
  double model_keep, model_recall;
  double fixed_recall;
  double served_keep, served_recall, served_fixed_recall;
} SedpShedLevel;

/** SedpShedTrainReport: the loss before and after training, the sizes, the levels on the
 * training requests and, when the options gave held-out ones, on those (@validation, NULL
 * otherwise). */
typedef struct {
  double initial_loss, final_loss;
  guint n_requests, n_samples, n_parameters, n_validation;
  guint n_levels;
  SedpShedLevel *levels;
  SedpShedLevel *validation;
} SedpShedTrainReport;

SEDP_API void sedp_shed_train_report_clear (SedpShedTrainReport *report);

/* The report as text: a line of sizes and losses, then a table of the levels. */
SEDP_API void sedp_shed_train_report_print (const SedpShedTrainReport *report, GString *out);

/**
 * sedp_shed_train:
 * Builds the samples (the shedder's features, plugins/shedder/shed-math.h; the labels of
 * sedp_shed_labels()), fits the
 * MLP (features → 16 → 8 → 1, tanh, sigmoid) and evaluates it per level.
 *
 * Returns: (transfer full) (nullable): the ONNX model (input "features" [N, F], output "keep"
 * [N, 1]); NULL with @error when training failed.
 */
SEDP_API SedpNnModel *sedp_shed_train (const SedpShedWorkload *workload,
                                       const SedpShedTrainOptions *opt,
                                       SedpShedTrainReport *report, GError **error);

G_END_DECLS
