/* sedp — the protobuf wire bits the load generator needs, kept in the protocol module with the
 * other wire formats: a PredictRequest given as JSON encoded as a serialized
 * sedp.serving.PredictRequest, and the status of a serialized PredictResponse (docs/protocol.md).
 * Internal to libsedp. */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The serialized PredictRequest of @request (its JSON form, as POST …:predict takes it); NULL
 * with @error (SEDP_LOADGEN_ERROR_WORKLOAD, naming the feature) for a value the message cannot
 * hold. Pure function: thread-safe. */
GBytes *sedp_predict_pb_encode (JsonObject *request, GError **error);

/* PredictResponse.status (field 2) of the serialized response @p of @n bytes: 0 (OK) when
 * absent; -1 when the bytes are not a protobuf message. Pure function: thread-safe. */
int sedp_predict_pb_response_status (const guint8 *p, gsize n);

G_END_DECLS
