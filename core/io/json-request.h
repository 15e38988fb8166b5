/* sedp — PredictRequest as JSON (docs/protocol.md), decoded in one streaming pass (json-scan.h) straight
 * into the rows of a RowBuilder, with every SedpProtocolLimits enforced as the text is read. */
#pragma once

#include "row-builder.h"

G_BEGIN_DECLS

/* Decodes the JSON PredictRequest of @size bytes at @data: its fields into @out, its items into
 * out->items, the user's columns merged into @request_frame (when given). @store holds the
 * decode's values and limits (the caller clears it after). FALSE with @error
 * (SEDP_PROTOCOL_ERROR) naming the field or the limit; @out may then hold part of the request. */
gboolean sedp_json_decode_request (const guint8 *data, gsize size, RowStore *store,
                                   SedpFrame *request_frame, SedpProtocolRequest *out,
                                   GError **error);

G_END_DECLS
