/* sedp — what the server reads of a request before submitting it (its request_id and
 * deadline_ms, which the runtime needs at submission), and the nesting check that guards every
 * JSON text parsed into a tree (json-glib's parser descends recursively). Neither decodes the
 * request: they scan its bytes once, in order, without recursion. */
#pragma once

#include <sedp/protocol.h>

G_BEGIN_DECLS

/* What a peek found. */
typedef struct {
  guint deadline_ms; /* 0: none, or invalid (data_reader reports it) */
  char *request_id;  /* (nullable) (owned): a top-level request_id of 1 to 256 bytes of text */
} SedpProtocolPeek;

/* Reads the top-level request_id and deadline_ms of a PredictRequest (@format: PROTOBUF or JSON)
 * without decoding it: protobuf by its top-level fields, JSON by a scan that tracks only strings
 * and nesting (a request_id with escapes is left out). Malformed input ends the peek, silently:
 * the decoder reports it. The caller owns peek->request_id. */
SEDP_API void sedp_protocol_peek (const guint8 *data, gsize size, SedpProtocolFormat format,
                                  SedpProtocolPeek *peek);

/* FALSE, with @error (SEDP_PROTOCOL_ERROR_LIMIT, naming max_depth), when the JSON @text nests
 * objects and arrays deeper than @max_depth; stops at the first byte past it. Text that is not
 * JSON passes: the parser reports it. */
SEDP_API gboolean sedp_json_check_nesting (const char *text, gsize size, guint max_depth, GError **error);

G_END_DECLS
