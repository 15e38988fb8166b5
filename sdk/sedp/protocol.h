/* sedp — the serving protocol's request decoder (PredictRequest, protobuf or JSON), for source
 * stages such as data_reader. The messages are described in docs/protocol.md. */
#pragma once

#include <sedp/frame.h>
#include <sedp/macros.h>

G_BEGIN_DECLS

/** SEDP_PROTOCOL_ERROR: errors decoding a request; codes are #SedpProtocolError. */
#define SEDP_PROTOCOL_ERROR (sedp_protocol_error_quark ())
SEDP_API GQuark sedp_protocol_error_quark (void);

/**
 * SedpProtocolError:
 * @SEDP_PROTOCOL_ERROR_INVALID: the payload is malformed; the message starts with
 *   "invalid request: " and names the field.
 * @SEDP_PROTOCOL_ERROR_CONTENT_TYPE: the content type is neither protobuf nor JSON.
 * @SEDP_PROTOCOL_ERROR_LIMIT: the payload passes one of the #SedpProtocolLimits; the message
 *   starts with "invalid request: " and names the limit (as data_reader's option) and its value.
 */
typedef enum {
  SEDP_PROTOCOL_ERROR_INVALID,
  SEDP_PROTOCOL_ERROR_CONTENT_TYPE,
  SEDP_PROTOCOL_ERROR_LIMIT,
} SedpProtocolError;

/**
 * SedpProtocolFormat:
 * @SEDP_PROTOCOL_AUTO: from the content type (application/x-protobuf, application/json); without
 *   one, JSON when the payload starts with '{', else protobuf.
 * @SEDP_PROTOCOL_PROTOBUF: a serialized sedp.serving.PredictRequest.
 * @SEDP_PROTOCOL_JSON: the same message as JSON text (snake_case field names).
 */
typedef enum {
  SEDP_PROTOCOL_AUTO = 0,
  SEDP_PROTOCOL_PROTOBUF,
  SEDP_PROTOCOL_JSON,
} SedpProtocolFormat;

/** The content types of the two encodings. */
#define SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF "application/x-protobuf"
#define SEDP_PROTOCOL_CONTENT_TYPE_JSON "application/json"
/** The default limit on the number of items of one request. */
#define SEDP_PROTOCOL_DEFAULT_MAX_ITEMS 10000
/** The default limit on JSON nesting (a PredictRequest needs 7 levels at most). */
#define SEDP_PROTOCOL_DEFAULT_MAX_DEPTH 64
/** The default limit on the distinct features of a request's items (and of its user). */
#define SEDP_PROTOCOL_DEFAULT_MAX_FEATURES 1024
/** The default limit on the values of one list feature (ids or floats). */
#define SEDP_PROTOCOL_DEFAULT_MAX_VALUES 65536
/** The default limit on the bytes of one string: a feature name, a string value, request_id. */
#define SEDP_PROTOCOL_DEFAULT_MAX_STRING_BYTES 65536
/** The default limit on the memory one decode may hold (values, text, row slots), in bytes. */
#define SEDP_PROTOCOL_DEFAULT_MAX_DECODED_BYTES (128u * 1024u * 1024u)

/**
 * SedpProtocolLimits:
 * @max_items: the most items a request may have
 * @max_depth: the deepest JSON nesting (objects and arrays) a request may have; checked as the
 *   text is read, before anything deeper is looked at
 * @max_features: the most distinct features over a request's items, and over its user
 * @max_values: the most values one list feature (ids or floats) may hold
 * @max_string_bytes: the longest string (a feature name, a string value, request_id), in bytes
 * @max_decoded_bytes: the most memory the decode of one request may hold, in bytes (its ids and
 *   floats, its text, and one slot per row and feature)
 *
 * Bounds on what one request may make the decoder do; each refusal is a
 * %SEDP_PROTOCOL_ERROR_LIMIT naming the field. A field of 0 means its default
 * (SEDP_PROTOCOL_DEFAULT_MAX_*). docs/limits.md lists them with the server's own (the body size).
 */
typedef struct {
  guint max_items;
  guint max_depth;
  guint max_features;
  guint max_values;
  gsize max_string_bytes;
  gsize max_decoded_bytes;
} SedpProtocolLimits;

/**
 * SedpProtocolRequest:
 * @request_id: (nullable): the request's id (owned)
 * @deadline_ms: the deadline the client asked for (0: none)
 * @top_k: how many best items the client asked for (0: none)
 * @items: (transfer full): one row per item: item_id (int64), escore (float32, when any item has
 *   one), then the item features
 *
 * A decoded request, freed with sedp_protocol_request_clear().
 */
typedef struct {
  char *request_id;
  guint deadline_ms;
  guint top_k;
  SedpFrame *items;
} SedpProtocolRequest;

/**
 * sedp_protocol_decode_request:
 * @data: the payload
 * @size: its size
 * @content_type: (nullable): the payload's media type, used with %SEDP_PROTOCOL_AUTO
 * @format: the encoding
 * @max_items: the most items a request may have (0: SEDP_PROTOCOL_DEFAULT_MAX_ITEMS)
 * @request_frame: (nullable): a writable one-row frame that receives user_id (int64) and the
 *   user features
 * @out: (out caller-allocates): the decoded request
 *
 * Returns: %TRUE, or %FALSE with @error set (SEDP_PROTOCOL_ERROR) naming the field.
 */
SEDP_API gboolean sedp_protocol_decode_request (const guint8 *data, gsize size,
                                                const char *content_type,
                                                SedpProtocolFormat format, guint max_items,
                                                SedpFrame *request_frame,
                                                SedpProtocolRequest *out, GError **error);

/**
 * sedp_protocol_decode_request_limited:
 * @limits: (nullable): the limits (%NULL, or a field of 0: the defaults)
 *
 * As sedp_protocol_decode_request(), with every limit of #SedpProtocolLimits. Thread-safe: decodes
 * share nothing. JSON is read in one streaming pass straight into columns; protobuf in place.
 *
 * Returns: %TRUE, or %FALSE with @error set (SEDP_PROTOCOL_ERROR) naming the field or the limit.
 */
SEDP_API gboolean sedp_protocol_decode_request_limited (const guint8 *data, gsize size,
                                                        const char *content_type,
                                                        SedpProtocolFormat format,
                                                        const SedpProtocolLimits *limits,
                                                        SedpFrame *request_frame,
                                                        SedpProtocolRequest *out, GError **error);

/** sedp_protocol_request_clear: Frees what @request holds (not @request itself). */
SEDP_API void sedp_protocol_request_clear (SedpProtocolRequest *request);

G_END_DECLS
