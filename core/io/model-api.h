/* sedp — the model API's wire formats (docs/compat.md): TF Serving's REST JSON and DeepRec
 * Processor's protobuf. Both carry named arrays whose first dimension is the batch; sedp reads
 * each array as an item column (one row per batch element) and answers with item columns as
 * arrays. A signature says which array fills which column, with what type and width, and which
 * columns are answered under which names and shapes.
 *
 * Thread-safety: every function here is reentrant; a signature is read-only once built and may be
 * shared by any number of threads. */
#pragma once

#include <sedp/protocol.h>

#include "../dsl/spec.h"
#include "../runtime/pipeline.h"

G_BEGIN_DECLS

/**
 * SedpModelApiFormat:
 * @SEDP_MODEL_API_TFS_JSON: TF Serving's REST predict JSON (`instances` or `inputs`), answered with
 *   `predictions` (row format) or `outputs` (columnar format), errors as `{"error": "…"}`.
 * @SEDP_MODEL_API_DEEPREC: DeepRec Processor's `tensorflow.eas.PredictRequest` /
 *   `PredictResponse` protobuf.
 */
typedef enum {
  SEDP_MODEL_API_TFS_JSON,
  SEDP_MODEL_API_DEEPREC,
} SedpModelApiFormat;

/**
 * SedpModelApiTensor:
 * @name: the array's name in requests and answers
 * @column: the item column it fills (inputs) or is read from (outputs)
 * @type: the column type: SEDP_COLUMN_FLOAT32, SEDP_COLUMN_INT64 or SEDP_COLUMN_STRING; 0: for an
 *   input, from the request (DeepRec's dtype; a JSON number is float32, a JSON string or b64 value
 *   a string); for an output, the column's own type in the result
 * @width: values per row (the product of the dimensions after the batch); 0: from the request,
 *   equal for every row
 * @dims: (nullable): the dimensions after the batch, for answers (outputs); %NULL: `[width]`, or a
 *   scalar per row when @width is 1
 * @n_dims: the number of @dims
 *
 * One named array of a signature. All strings are owned by the signature.
 */
typedef struct {
  char *name;
  char *column;
  SedpColumnType type;
  guint width;
  gint64 *dims;
  guint n_dims;
} SedpModelApiTensor;

/**
 * SedpModelApiSignature:
 * @name: the signature's name (TF Serving's and DeepRec's `signature_name`; "serving_default")
 * @inputs: (element-type SedpModelApiTensor): the arrays a request must carry, in order
 * @outputs: (element-type SedpModelApiTensor): the arrays an answer carries, in order; empty: every
 *   float32 item column of the result except escore, each under its own name
 * @open_inputs: when TRUE, arrays not in @inputs are accepted too, each into the column of its own
 *   name with its type and width from the request (a pipeline without a declared signature)
 *
 * What a served model or pipeline takes and answers. Built with sedp_model_api_signature_new()
 * and the add functions, then read-only; freed with sedp_model_api_signature_free().
 */
typedef struct {
  char *name;
  GArray *inputs;
  GArray *outputs;
  gboolean open_inputs;
} SedpModelApiSignature;

SEDP_API SedpModelApiSignature *sedp_model_api_signature_new (const char *name);
SEDP_API void sedp_model_api_signature_free (SedpModelApiSignature *signature);
/* Copies @tensor (its strings and dims) into the signature's inputs or outputs. */
SEDP_API void sedp_model_api_signature_add_input (SedpModelApiSignature *signature,
                                                  const SedpModelApiTensor *tensor);
SEDP_API void sedp_model_api_signature_add_output (SedpModelApiSignature *signature,
                                                   const SedpModelApiTensor *tensor);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpModelApiSignature, sedp_model_api_signature_free)

/**
 * sedp_model_api_signature_add_spec:
 * @output: FALSE: @spec declares an input; TRUE: an output
 * @spec: one entry of a pipeline's `[signature NAME]` `inputs` or `outputs` list
 *   (docs/compat.md): `ARRAY[=COLUMN][:float32|int64|string][[D1,D2,…]]`, e.g.
 *   `dense=dense_features:float32[13]`, `prob=score[1]`, `query:string`. COLUMN defaults to ARRAY,
 *   the type to float32, the dims to `[]` (one value per row); width = the product of the dims.
 *
 * Returns: %TRUE, or %FALSE with @error (SEDP_PROTOCOL_ERROR_INVALID) naming the entry and what is
 *   wrong in it (an empty name, an unknown type, a dimension that is not a positive integer, an
 *   array named twice).
 */
SEDP_API gboolean sedp_model_api_signature_add_spec (SedpModelApiSignature *signature,
                                                     gboolean output, const char *spec,
                                                     GError **error);

/**
 * sedp_model_api_signature_for_model:
 * @model_path: an ONNX model file
 *
 * The signature of a bare model ("serving_default"): one input per graph input (initializers
 * excluded), named and filling the column of its own name, float32 or int64 as the model's
 * element type, the width and dims after the batch dimension; one output per graph output
 * with its dims after the batch.
 *
 * Returns: (transfer full): the signature, or %NULL with @error (the model loader's).
 */
SEDP_API SedpModelApiSignature *sedp_model_api_signature_for_model (const char *model_path,
                                                                    GError **error);

/**
 * sedp_model_api_signature_for_pipeline:
 * @spec: a parsed pipeline
 *
 * The signature a pipeline file declares in its `[signature NAME]` group (docs/compat.md), or,
 * without one, an open signature named "serving_default" answering the pipeline's float32 item
 * `outputs` columns (every float32 item column when it has no `outputs`). Implemented by the
 * lead in core/io/model-api-pipeline.c.
 *
 * Returns: (transfer full): the signature, or %NULL with @error naming the file, the group and
 *   the entry.
 */
SEDP_API SedpModelApiSignature *sedp_model_api_signature_for_pipeline (const SedpPipelineSpec *spec,
                                                                       GError **error);

/**
 * SedpModelApiRequest:
 * @signature_name: (nullable): the signature the client named (%NULL: none named)
 * @columnar: TF Serving: the request used `inputs` (answered with `outputs`), not `instances`
 *   (answered with `predictions`); DeepRec: always FALSE
 * @output_filter: (nullable) (array zero-terminated=1): DeepRec's `output_filter`, the output names
 *   to answer (%NULL or empty: every output of the signature)
 * @items: (transfer full): one row per batch element, one column per input array
 * @n_rows: the batch size (the rows of @items)
 *
 * A decoded model-API request; freed with sedp_model_api_request_clear().
 */
typedef struct {
  char *signature_name;
  gboolean columnar;
  char **output_filter;
  SedpFrame *items;
  guint n_rows;
} SedpModelApiRequest;

/**
 * sedp_model_api_decode:
 * @format: the wire format
 * @data: the body
 * @size: its size
 * @signature: what the model takes
 * @limits: (nullable): the request limits of docs/limits.md (%NULL: the defaults); max_items bounds
 *   the batch, max_values the values of one array, max_depth the JSON nesting
 * @out: (out caller-allocates): the decoded request
 *
 * Decodes and checks a request against @signature: every input present, each array's first
 * dimension the same batch size (≥ 1), widths and types as declared, no unknown array (unless
 * open_inputs), b64 values decoded (TF Serving `{"b64": "…"}`, into a string column as bytes).
 *
 * Returns: %TRUE, or %FALSE with @error: SEDP_PROTOCOL_ERROR_INVALID or _LIMIT, the message starting
 *   "invalid request: " and naming the field (e.g. `invalid request: inputs.dense: row 3 has 12
 *   values, the signature's width is 13`).
 */
SEDP_API gboolean sedp_model_api_decode (SedpModelApiFormat format, const guint8 *data, gsize size,
                                         const SedpModelApiSignature *signature,
                                         const SedpProtocolLimits *limits, SedpModelApiRequest *out,
                                         GError **error);

SEDP_API void sedp_model_api_request_clear (SedpModelApiRequest *request);

/**
 * sedp_model_api_encode_result:
 * @format: the wire format
 * @decoded: the request as decoded (its columnar flag, output filter, n_rows)
 * @result: the completed request's result; every item's row is read from its sink frame
 * @signature: what the model answers (its outputs' columns, names and dims)
 *
 * Encodes the answer: TF Serving `{"predictions": …}` (one entry per row; an object of outputs
 * when there are several, else the bare value) or `{"outputs": …}` (columnar); DeepRec's
 * PredictResponse with one ArrayProto (DT_FLOAT, shape [n_rows, dims…]) per output.
 *
 * Returns: (transfer full): the body, or %NULL with @error when an output column is missing or of a
 *   type that cannot be answered (the message names the output and the column), or an item did
 *   not complete (names its status).
 */
SEDP_API GBytes *sedp_model_api_encode_result (SedpModelApiFormat format,
                                               const SedpModelApiRequest *decoded,
                                               const SedpResult *result,
                                               const SedpModelApiSignature *signature,
                                               GError **error);

/**
 * sedp_model_api_encode_error:
 *
 * Returns: (transfer full): TF Serving's `{"error": "MESSAGE"}`; for DeepRec the message as plain
 *   text (DeepRec's Processor answers errors as text with a non-200 code).
 */
SEDP_API GBytes *sedp_model_api_encode_error (SedpModelApiFormat format, const char *message);

/**
 * sedp_model_api_encode_status:
 * @name: the model's name
 * @version: its version (0 when not versioned)
 * @state: "AVAILABLE", "LOADING" (warming up) or "UNLOADING"
 *
 * Returns: (transfer full): TF Serving's GetModelStatus JSON:
 *   `{"model_version_status": [{"version": "V", "state": "…", "status": {"error_code": "OK",
 *   "error_message": ""}}]}`.
 */
SEDP_API GBytes *sedp_model_api_encode_status (const char *name, guint64 version, const char *state);

/**
 * sedp_model_api_encode_deeprec_request:
 *
 * Encodes a DeepRec PredictRequest from @items (float32, int64 and string columns, in frame
 * order), for the load generator, the benchmark and tests.
 *
 * Returns: (transfer full): the serialized message.
 */
SEDP_API GBytes *sedp_model_api_encode_deeprec_request (const char *signature_name,
                                                        const SedpFrame *items,
                                                        const char *const *output_filter);

G_END_DECLS
