/* sedp — synthetic recommendation models, shaped as PyTorch's ONNX exporter writes them. */
#pragma once

#include "model.h"

G_BEGIN_DECLS

#define SEDP_NN_SYNTH_MAX_LAYERS 8

/**
 * SedpNnSynthOptions:
 * Sizes of a synthetic model. Fill with sedp_nn_synth_options_init() and change what you need.
 *
 * Every model has a float input `dense` [batch, n_dense] and one int64 input `slot_K`
 * [batch, ids_per_slot] per sparse slot (K = 0 … slots-1); the batch dimension is named "batch".
 * Embedding tables are float initializers `emb_K` [rows, dim].
 */
typedef struct {
  guint slots;          /* sparse slots, one embedding table each */
  guint dim;            /* embedding dimension */
  guint rows;           /* rows per embedding table */
  guint ids_per_slot;   /* ids per row and slot (multi-hot length, fixed) */
  guint n_dense;        /* dense features */
  guint n_hidden;       /* the deep MLP (top MLP in dlrm): hidden layer sizes */
  guint hidden[SEDP_NN_SYNTH_MAX_LAYERS];
  guint n_bottom;       /* dlrm: bottom MLP hidden sizes (its last layer outputs dim) */
  guint bottom[SEDP_NN_SYNTH_MAX_LAYERS];
  guint cross_layers;   /* dcn: cross layers */
  guint experts;        /* mmoe: experts */
  guint n_expert_hidden; /* mmoe: expert MLP sizes (the last is the expert output) */
  guint expert_hidden[SEDP_NN_SYNTH_MAX_LAYERS];
  guint tower;          /* mmoe, ple: hidden size of each task tower */
  /* wdl, dcnv2, dssm, esmm, ple (synth-multi.c); n_hidden / hidden are wdl's and dcnv2's deep
   * MLP, dssm's towers (both), esmm's CTR and CVR towers (each). */
  guint crosses;        /* wdl: hashed cross features, inputs `cross_K` int64 [batch, 1], each
                         * looked up in a 1-wide table `cross_emb_K` [rows, 1] */
  guint cross_rank;     /* dcnv2: rank r of the low-rank cross layers (U_l [d, r], V_l [d, r]);
                         * cross_layers is their number */
  guint levels;         /* ple: extraction levels */
  guint task_experts;   /* ple: experts per task and level (expert_hidden are their sizes) */
  guint shared_experts; /* ple: shared experts per level */
  /* din, dien, bst (synth-seq.c) */
  guint seq_len;        /* din, dien, bst: length of the behaviour sequence `hist` */
  guint n_att_hidden;   /* din, dien: hidden sizes of the attention (activation unit) MLP */
  guint att_hidden[SEDP_NN_SYNTH_MAX_LAYERS];
  guint heads;          /* bst: attention heads (must divide dim) */
  guint ffn;            /* bst: hidden size of the transformer's feed-forward layer */
  gint64 opset;         /* 11 … 21; 17 by default */
} SedpNnSynthOptions;

/* The architectures: "mlp", "dlrm", "dcn", "deepfm", "mmoe", "wdl", "dcnv2", "dssm", "esmm",
 * "ple", "din", "dien", "bst"; NULL-terminated. The sequence models (din, dien, bst) also read
 * `item` int64 [batch, 1] and `hist` int64 [batch, seq_len] (0 = padding), both indexing
 * `emb_item` [rows, dim]. */
SEDP_API const char *const *sedp_nn_synth_archs (void);

/* Fills @opts with a preset: "small" (fast tests: a few slots, dim 8, 100 rows, hidden 32-16) or
 * "realistic" (26 slots, dim 32, 10000 rows, 13 dense, hidden 512-256-128; mmoe 4 experts
 * 256-128; wdl 8 crosses; dcnv2 rank 64; ple 2 levels of 2 + 2 + 2 experts 256-128). @arch may
 * be NULL; some presets differ per architecture (realistic wdl: hidden 1024-512-256; esmm:
 * 360-200-80; din, dien and bst: 2 or 4 slots, seq_len 10 or 50 (bst 20), the MLPs of their
 * papers). FALSE for an unknown preset. */
SEDP_API gboolean sedp_nn_synth_options_init (SedpNnSynthOptions *opts, const char *preset,
                                              const char *arch);

/* A new model of architecture @arch with weights drawn from @seed (same arch, seed and options:
 * the same model, bit for bit). @opts NULL means the small preset. Errors: INVALID for an unknown
 * architecture or options out of range. */
SEDP_API SedpNnModel *sedp_nn_synth (const char *arch, guint64 seed,
                                     const SedpNnSynthOptions *opts, GError **error);

/* The same with the embedding tables (every initializer read by Gather: emb_K, emb_item,
 * wide_emb_K, fo_emb_K, cross_emb_K) drawn from @seed and every other weight from @dense_seed:
 * models of one @seed and other dense seeds have the same tables, as a retrained dense model over
 * unchanged embeddings. sedp_nn_synth (arch, seed, …) is sedp_nn_synth_seeds (arch, seed, seed,
 * …). */
SEDP_API SedpNnModel *sedp_nn_synth_seeds (const char *arch, guint64 seed, guint64 dense_seed,
                                           const SedpNnSynthOptions *opts, GError **error);

G_END_DECLS
