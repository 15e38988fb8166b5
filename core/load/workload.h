/* sedp — a workload for the load generator: the requests it sends, read from a JSON Lines file of
 * PredictRequests and encoded once, up front, as JSON text or protobuf (docs/load-testing.md). */
#pragma once

#include "error.h"

G_BEGIN_DECLS

/**
 * SedpWorkloadEncoding:
 * @SEDP_WORKLOAD_JSON: each request is sent as its line of JSON, as it is
 *   (`Content-Type: application/json`).
 * @SEDP_WORKLOAD_PROTOBUF: each request is encoded once into a serialized
 *   sedp.serving.PredictRequest (`application/x-protobuf`).
 * @SEDP_WORKLOAD_TFS: each request's items are encoded once into a TF Serving REST request of the
 *   model API (`{"instances": [...]}`, one instance per item, its features as named inputs;
 *   `application/json`; docs/compat.md).
 * @SEDP_WORKLOAD_DEEPREC: the same as DeepRec's PredictRequest (`application/x-protobuf`).
 */
typedef enum {
  SEDP_WORKLOAD_JSON,
  SEDP_WORKLOAD_PROTOBUF,
  SEDP_WORKLOAD_TFS,
  SEDP_WORKLOAD_DEEPREC,
} SedpWorkloadEncoding;

/**
 * SedpWorkload:
 * An ordered list of encoded requests (bodies and their item counts), sent in turn and cycled.
 * Reference-counted (atomically). Building it (sedp_workload_add_json()) is not thread-safe;
 * once built it is read-only and may be shared by threads and generators.
 */
typedef struct _SedpWorkload SedpWorkload;

/* An empty workload of @encoding. Returns: (transfer full). */
SEDP_API SedpWorkload *sedp_workload_new (SedpWorkloadEncoding encoding);

/**
 * sedp_workload_add_json:
 * @line: one PredictRequest as a JSON object (what POST …:predict takes, docs/protocol.md)
 * @where: names the request in messages ("requests.jsonl:12")
 *
 * Parses @line, counts its `items` and appends its body in the workload's encoding.
 * Returns: %FALSE with @error (%SEDP_LOADGEN_ERROR_WORKLOAD, "@where: …") when @line is not a
 * JSON object or has a feature value protobuf cannot hold; the workload is then unchanged.
 */
SEDP_API gboolean sedp_workload_add_json (SedpWorkload *workload, const char *line,
                                          const char *where, GError **error);

/**
 * sedp_workload_load:
 * @path: (nullable): a JSON Lines file, one PredictRequest per line (empty and `#` lines are
 *   skipped); %NULL for one built-in request of 8 items
 *
 * Returns: (transfer full): the workload, or %NULL with @error: a #GFileError when @path cannot
 * be read, %SEDP_LOADGEN_ERROR_WORKLOAD naming FILE:LINE for a bad request or a file without any.
 */
SEDP_API SedpWorkload *sedp_workload_load (const char *path, SedpWorkloadEncoding encoding,
                                           GError **error);

SEDP_API SedpWorkload *sedp_workload_ref (SedpWorkload *workload);
SEDP_API void sedp_workload_unref (SedpWorkload *workload);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpWorkload, sedp_workload_unref)

SEDP_API guint sedp_workload_get_n_requests (const SedpWorkload *workload);
SEDP_API SedpWorkloadEncoding sedp_workload_get_encoding (const SedpWorkload *workload);
/* "application/json" or "application/x-protobuf", after the encoding. */
SEDP_API const char *sedp_workload_get_content_type (const SedpWorkload *workload);

/**
 * sedp_workload_get_body:
 * @index: below sedp_workload_get_n_requests()
 * @n_items: (out) (optional): the request's candidate items
 *
 * Returns: (transfer none): the encoded body of request @index, valid as long as the workload.
 */
SEDP_API GBytes *sedp_workload_get_body (const SedpWorkload *workload, guint index, guint *n_items);

G_END_DECLS
