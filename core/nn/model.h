/* sedp — ONNX models in memory: the intermediate representation the engine compiles from. */
#pragma once

#include "tensor.h"

G_BEGIN_DECLS

/** SedpNnAttrType: the kinds of node attributes, numbered as ONNX's AttributeProto.AttributeType. */
typedef enum {
  SEDP_NN_ATTR_UNDEFINED = 0,
  SEDP_NN_ATTR_FLOAT = 1,
  SEDP_NN_ATTR_INT = 2,
  SEDP_NN_ATTR_STRING = 3,
  SEDP_NN_ATTR_TENSOR = 4,
  SEDP_NN_ATTR_FLOATS = 6,
  SEDP_NN_ATTR_INTS = 7,
  SEDP_NN_ATTR_STRINGS = 8,
} SedpNnAttrType;

/** SedpNnAttr: one node attribute. */
typedef struct {
  char *name;
  SedpNnAttrType type;
  float f;
  gint64 i;
  char *s;
  SedpNnTensor *t;
  guint n_floats;
  float *floats;
  guint n_ints;
  gint64 *ints;
  guint n_strings;
  char **strings;
} SedpNnAttr;

/** SedpNnNode: one operator application. Empty input names ("") mark omitted optional inputs. */
typedef struct {
  char *name;
  char *op_type;
  char *domain;     /* "" for the default ONNX domain */
  guint n_inputs;
  char **inputs;
  guint n_outputs;
  char **outputs;
  guint n_attrs;
  SedpNnAttr *attrs;
} SedpNnNode;

/**
 * SedpNnValueInfo:
 * A graph input or output: name, element type and shape; a dimension is either fixed (dims[k] ≥ 0)
 * or symbolic (dims[k] = -1, dim_params[k] its name such as "batch", or NULL if unnamed).
 */
typedef struct {
  char *name;
  SedpNnDType dtype;
  int rank;           /* -1 when the shape is unknown */
  gint64 dims[SEDP_NN_MAX_RANK];
  char *dim_params[SEDP_NN_MAX_RANK];
} SedpNnValueInfo;

/**
 * SedpNnModel:
 * A loaded model, immutable after loading and shared by every plan and stage instance that runs
 * it (one copy of the weights). Graph inputs exclude initializers.
 */
struct _SedpNnModel {
  gint64 ir_version;
  gint64 opset;            /* of the default ("" or "ai.onnx") domain */
  char *producer;
  char *graph_name;
  guint n_inputs;
  SedpNnValueInfo *inputs;
  guint n_outputs;
  SedpNnValueInfo *outputs;
  guint n_initializers;
  SedpNnTensor **initializers;
  guint n_nodes;
  SedpNnNode *nodes;       /* as in the file (not necessarily sorted) */
  gint ref_count;
};



/* Writes @model as an ONNX file (ModelProto), initializers as raw_data. */
SEDP_API gboolean sedp_nn_model_save (const SedpNnModel *model, const char *path, GError **error);



/* An empty model to build (synth, split): ir_version 8, opset @opset. */
SEDP_API SedpNnModel *sedp_nn_model_new (gint64 opset, const char *producer);

/* Reads / writes one serialized TensorProto (the .pb files of ONNX's backend test data). */
SEDP_API SedpNnTensor *sedp_nn_tensor_load (const char *path, GError **error);
SEDP_API gboolean sedp_nn_tensor_save (const SedpNnTensor *tensor, const char *path, GError **error);

/* The attribute @name of @node, or NULL. */
SEDP_API const SedpNnAttr *sedp_nn_node_attr (const SedpNnNode *node, const char *name);

/* The initializer named @name, or NULL. */
SEDP_API const SedpNnTensor *sedp_nn_model_get_initializer (const SedpNnModel *model,
                                                           const char *name);
/* The index of the graph input named @name, or -1. */
SEDP_API int sedp_nn_model_find_input (const SedpNnModel *model, const char *name);

/* Building a model (synth, tests, tools). Strings are copied. The arrays of a model grow as
 * things are added: a pointer returned by an add function stays valid until the next call that
 * adds the same kind of thing (input, output, node, attribute of that node). */

/* A graph input / output; @dims[k] = -1 is a symbolic dimension named @dim_params[k]
 * (@dim_params may be NULL, or hold NULL for unnamed ones); @rank = -1 for an unknown shape. */
SEDP_API SedpNnValueInfo *sedp_nn_model_add_input (SedpNnModel *model, const char *name,
                                                   SedpNnDType dtype, int rank, const gint64 *dims,
                                                   const char *const *dim_params);
SEDP_API SedpNnValueInfo *sedp_nn_model_add_output (SedpNnModel *model, const char *name,
                                                    SedpNnDType dtype, int rank,
                                                    const gint64 *dims,
                                                    const char *const *dim_params);
/* Takes ownership of @tensor, which must have a name and data. */
SEDP_API void sedp_nn_model_add_initializer (SedpNnModel *model, SedpNnTensor *tensor);
/* A node of the default domain; @inputs and @outputs are NULL-terminated ("" for an omitted
 * optional input); @name may be NULL. */
SEDP_API SedpNnNode *sedp_nn_model_add_node (SedpNnModel *model, const char *op_type,
                                             const char *name, const char *const *inputs,
                                             const char *const *outputs);
/* Set (add or replace) an attribute of @node. */
SEDP_API void sedp_nn_node_set_attr_int (SedpNnNode *node, const char *name, gint64 value);
SEDP_API void sedp_nn_node_set_attr_float (SedpNnNode *node, const char *name, float value);
SEDP_API void sedp_nn_node_set_attr_string (SedpNnNode *node, const char *name,
                                            const char *value);
SEDP_API void sedp_nn_node_set_attr_ints (SedpNnNode *node, const char *name, guint n,
                                          const gint64 *values);
SEDP_API void sedp_nn_node_set_attr_floats (SedpNnNode *node, const char *name, guint n,
                                            const float *values);
/* Takes ownership of @tensor. */
SEDP_API void sedp_nn_node_set_attr_tensor (SedpNnNode *node, const char *name,
                                            SedpNnTensor *tensor);


G_END_DECLS
