/* sedp — tensors of the dense engine: element types, shapes, data. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_NN_MAX_RANK: the highest tensor rank the engine handles. */
#define SEDP_NN_MAX_RANK 8

/**
 * SedpNnDType:
 * Element types, numbered as ONNX's TensorProto.DataType. The engine computes in FLOAT and uses
 * INT64 for shapes and indexes; INT32 and BOOL appear in models and are converted by Cast.
 */
typedef enum {
  SEDP_NN_UNDEFINED = 0,
  SEDP_NN_FLOAT = 1,
  SEDP_NN_UINT8 = 2,
  SEDP_NN_INT8 = 3,
  SEDP_NN_INT32 = 6,
  SEDP_NN_INT64 = 7,
  SEDP_NN_BOOL = 9,
  SEDP_NN_DOUBLE = 11,
} SedpNnDType;

/* Bytes per element (0 for unsupported types). */
SEDP_API gsize sedp_nn_dtype_size (SedpNnDType dtype);
/* "float", "int64", … ("type N" for others, in a static buffer per thread). */
SEDP_API const char *sedp_nn_dtype_name (SedpNnDType dtype);

/**
 * SedpNnTensor:
 * A tensor: type, shape and data. Whether @data is owned depends on where the tensor lives
 * (initializers own theirs; plan inputs and outputs borrow).
 */
typedef struct {
  char *name;
  SedpNnDType dtype;
  int rank;
  gint64 dims[SEDP_NN_MAX_RANK];
  gpointer data;
} SedpNnTensor;

/* Product of the dims (1 for rank 0). */
SEDP_API gint64 sedp_nn_tensor_numel (const SedpNnTensor *t);

/* A new tensor owning zeroed data (64-byte aligned); free with sedp_nn_tensor_free(). */
SEDP_API SedpNnTensor *sedp_nn_tensor_new (const char *name, SedpNnDType dtype, int rank,
                                           const gint64 *dims);
SEDP_API void sedp_nn_tensor_free (SedpNnTensor *t);
/* A deep copy of @t (name, shape, data) in a new aligned buffer. */
SEDP_API SedpNnTensor *sedp_nn_tensor_dup (const SedpNnTensor *t);
/* numel × element size. */
SEDP_API gsize sedp_nn_tensor_nbytes (const SedpNnTensor *t);

/* "[64, 128]". */
SEDP_API char *sedp_nn_shape_to_string (int rank, const gint64 *dims);

G_END_DECLS
