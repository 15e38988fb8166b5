/* sedp — the request context shared by all frames of one request. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpRequest:
 * The context of one request: its id, deadline, optional raw payload and request-scope data
 * that stages may attach for later stages. Every event of a request points to the same context.
 * Plugins borrow it for the duration of `process`.
 *
 * Threading: all functions here are thread-safe.
 */
typedef struct _SedpRequest SedpRequest;

/** sedp_request_get_id: Returns: (transfer none): the request's id (never %NULL). */
SEDP_API const char *sedp_request_get_id (const SedpRequest *request);

/**
 * sedp_request_get_deadline:
 * Returns: the deadline on the g_get_monotonic_time() clock, in microseconds.
 */
SEDP_API gint64 sedp_request_get_deadline (const SedpRequest *request);

/**
 * sedp_request_get_remaining_us:
 * Returns: microseconds left until the deadline (negative once it passed).
 */
SEDP_API gint64 sedp_request_get_remaining_us (const SedpRequest *request);

/**
 * sedp_request_get_elapsed_us:
 * Returns: microseconds since the request's clock started (for `sedp serve`, when the server
 * accepted its connection; else its submission): how long it has waited and run so far. The
 * deadline budget it started with is this plus sedp_request_get_remaining_us(). Since ABI 1.1.
 */
SEDP_API gint64 sedp_request_get_elapsed_us (const SedpRequest *request);

/**
 * sedp_request_get_n_items:
 * Returns: the number of candidate items of the request (0 before the source stage ran).
 */
SEDP_API guint sedp_request_get_n_items (const SedpRequest *request);

/**
 * sedp_request_get_payload:
 * @size: (out) (optional): the payload's size in bytes
 * @content_type: (out) (optional) (transfer none): its media type, or %NULL
 *
 * The raw bytes the request arrived with, for a source stage that decodes them.
 *
 * Returns: (transfer none) (nullable): the payload, or %NULL when the request came decoded.
 */
SEDP_API const guint8 *sedp_request_get_payload (const SedpRequest *request, gsize *size,
                                                 const char **content_type);

/**
 * sedp_request_get_top_k:
 *
 * How many best items the client asked for (PredictRequest.top_k), a field of the request: the
 * source stage that decodes it sets it (data_reader), a stage that ranks items reads it (the
 * responder), and the server's encoder lists that many best items. Thread-safe.
 *
 * Returns: the count, 0 when the client asked for none.
 */
SEDP_API guint sedp_request_get_top_k (const SedpRequest *request);

/**
 * sedp_request_set_top_k:
 * @top_k: the client's count (0: none)
 *
 * Sets the request's top_k; a source stage calls it before its `process` returns. Thread-safe
 * (an atomic store); since ABI 1.3.
 */
SEDP_API void sedp_request_set_top_k (SedpRequest *request, guint top_k);

/**
 * sedp_request_set_data:
 * @key: the name (copied); a stage should prefix it with its plugin name
 * @data: (transfer full) (nullable): the value; %NULL removes the key
 * @destroy: (nullable): frees @data when replaced or when the request ends
 *
 * Attaches request-scope data for later stages of the same request.
 */
SEDP_API void sedp_request_set_data (SedpRequest *request, const char *key, gpointer data,
                                     GDestroyNotify destroy);

/**
 * sedp_request_get_data:
 * Returns: (transfer none) (nullable): the value set under @key, or %NULL.
 */
SEDP_API gpointer sedp_request_get_data (SedpRequest *request, const char *key);

G_END_DECLS
