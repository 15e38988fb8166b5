/* sedp — a strict, one-pass JSON scanner for request bodies held whole in memory (RFC 8259),
 * SAX-style: it calls back per token, builds nothing and keeps no recursion (a byte per open
 * container), so that a request decodes straight into columns and a decoder can stop at any
 * token. The one JSON tokenizer of the request decoders: sedp's PredictRequest (json-request.c)
 * and TF Serving's (tfs-json.c). It replaced yajl, whose per-byte lexer states cost twice as
 * much on a body of numbers (docs/protocol.md).
 *
 * What it accepts is exactly JSON: one value (surrounded by blanks), objects whose keys are
 * strings, no trailing commas, numbers of JSON's grammar (no NaN, Infinity, leading zeros, '+'),
 * strings of valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) without raw
 * control characters, escapes of JSON's set with \u pairs for characters above U+FFFF (a lone
 * surrogate is refused), and the literals true, false and null.
 *
 * Callbacks get numbers as their text, strings and keys unescaped (a pointer into the body when
 * the string has no escape, else into a buffer valid until the callback returns).
 * A callback returning 0 stops the scan. The scanner has no limits of its own beyond the body:
 * its nesting stack grows with the input, so callers bound nesting in their start callbacks.
 * Reentrant; one call holds no state after it returns. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpJsonCallbacks:
 *
 * Called per token in document order; a NULL member is skipped. Each returns non-zero to go on,
 * 0 to stop the scan. Numbers come as their text (@len bytes, not NUL-terminated), strings and
 * keys unescaped (UTF-8, @len bytes, possibly holding NUL from a \u0000 escape).
 */
typedef struct {
  int (*on_null) (void *ctx);
  int (*on_boolean) (void *ctx, int value);
  int (*on_number) (void *ctx, const char *text, size_t len);
  int (*on_string) (void *ctx, const unsigned char *text, size_t len);
  int (*on_start_map) (void *ctx);
  int (*on_map_key) (void *ctx, const unsigned char *key, size_t len);
  int (*on_end_map) (void *ctx);
  int (*on_start_array) (void *ctx);
  int (*on_end_array) (void *ctx);
} SedpJsonCallbacks;

/* Why a scan stopped. */
typedef enum {
  SEDP_JSON_SCAN_OK,
  SEDP_JSON_SCAN_CANCELLED, /* a callback returned 0 */
  SEDP_JSON_SCAN_INVALID,   /* not JSON: see the message and the offset */
} SedpJsonScanStatus;

/**
 * sedp_json_scan:
 * @data: the text
 * @size: its size in bytes
 * @callbacks: called in document order (a NULL callback is skipped)
 * @ctx: passed to every callback
 * @why: (out) (optional): for SEDP_JSON_SCAN_INVALID, a static description ("unexpected
 *   character", "invalid UTF-8 in a string", …)
 * @offset: (out) (optional): for SEDP_JSON_SCAN_INVALID, the byte where the text stops being
 *   JSON; for SEDP_JSON_SCAN_CANCELLED, the byte after the value whose callback stopped it
 *
 * Returns: how the scan ended.
 */
SEDP_API SedpJsonScanStatus sedp_json_scan (const guint8 *data, gsize size,
                                            const SedpJsonCallbacks *callbacks, void *ctx,
                                            const char **why, gsize *offset);

/**
 * sedp_json_scan_request:
 * @error: the decoder's error: a callback that stops the scan sets it first
 *
 * sedp_json_scan() for a request decoder: a text that is not JSON sets *@error, unless a callback
 * already did, to SEDP_PROTOCOL_ERROR_INVALID "invalid JSON: WHY (at byte N of M)".
 *
 * Returns: %TRUE when the whole text was scanned and *@error is unset.
 */
SEDP_API gboolean sedp_json_scan_request (const guint8 *data, gsize size,
                                          const SedpJsonCallbacks *callbacks, void *ctx,
                                          GError **error);

/* Appends @s to @out as a JSON string: invalid UTF-8 replaced (U+FFFD), '"', '\\' and control
 * characters escaped. */
SEDP_API void sedp_json_append_string (GString *out, const char *s);

G_END_DECLS
