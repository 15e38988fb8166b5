/* sedp — the serving protocol (core/proto/sedp.proto): decoding PredictRequest (in the SDK:
 * <sedp/protocol.h>) and encoding PredictResponse from a completed request. */
#pragma once

#include <sedp/protocol.h>

#include "../runtime/pipeline.h"

G_BEGIN_DECLS

/**
 * sedp_protocol_encode_response:
 * @request: a completed request (its result is set)
 * @outputs: (nullable): the float32 item columns whose values make each item's scores, in
 *   order (one per head); %NULL or empty: every float32 item column except escore
 * @model_version: (nullable): copied into model_version
 * @top_k: when > 0, the indexes of the best @top_k scored or cached items by their first score
 * @format: SEDP_PROTOCOL_PROTOBUF or SEDP_PROTOCOL_JSON
 *
 * Returns: (transfer full): a sedp.serving.PredictResponse, serialized or as JSON text.
 */
SEDP_API GBytes *sedp_protocol_encode_response (SedpRequest *request, const char *const *outputs,
                                                const char *model_version, guint top_k,
                                                SedpProtocolFormat format);

G_END_DECLS
