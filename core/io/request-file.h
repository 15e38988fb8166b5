/* sedp — request files for offline scoring: JSON Lines (or PredictRequest logs, request-log.h) in,
 * JSON Lines out. */
#pragma once

#include "../runtime/pipeline.h"

G_BEGIN_DECLS

/** SEDP_IO_ERROR: errors reading request files. Codes are #SedpIoError. */
#define SEDP_IO_ERROR (sedp_io_error_quark ())
SEDP_API GQuark sedp_io_error_quark (void);

typedef enum {
  SEDP_IO_ERROR_OPEN,
  SEDP_IO_ERROR_READ,
  SEDP_IO_ERROR_INVALID,
} SedpIoError;

/**
 * sedp_request_from_json:
 * @text: one request as a JSON object:
 *   {"id": "r1", "deadline_ms": 50, "user": {FEATURE: VALUE, …}, "items": [{FEATURE: VALUE, …}, …]}
 *   where VALUE is an integer (int64 column), a number (float32), an array of integers (idlist),
 *   an array of numbers (float32 vector, same length in every item), a string, or a boolean.
 * @where: names the input in messages ("requests.jsonl:12")
 *
 * Returns: (transfer full): a request with a request frame (user features, one row) and items,
 * or %NULL with an error naming @where and the field.
 */
SEDP_API SedpRequest *sedp_request_from_json (const char *text, gssize length, const char *where,
                                              GError **error);

/* A frame of @n_rows rows from @rows (JSON objects of features by name), typed by the rules of
 * sedp_request_from_json(); messages name "@where: @what[ROW].FEATURE". Shared with the serving
 * protocol's decoder (protocol.c). */
typedef struct _JsonObject JsonObject;
SEDP_API SedpFrame *sedp_frame_from_json_objects (JsonObject **rows, guint n_rows, const char *where,
                                                  const char *what, GError **error);

/* Appends the result of a completed request as one JSON object (no newline). @outputs names the
 * columns to write per item; NULL or empty: every float32 column. */
SEDP_API void sedp_result_write_json (SedpRequest *request, const char *const *outputs,
                                      GString *out);

/**
 * SedpRequestFormat:
 * @SEDP_REQUEST_FORMAT_AUTO: decided from the file: a `.pb` name, or a first byte that is none of
 *   '{', '#', white space or a UTF-8 byte order mark: %SEDP_REQUEST_FORMAT_PB; otherwise JSON
 *   lines, %SEDP_REQUEST_FORMAT_PREDICT_JSONL when the first request is a PredictRequest
 *   (sedp_request_json_is_predict()), else %SEDP_REQUEST_FORMAT_JSONL. A `.jsonl`, `.json` or
 *   `.ndjson` name is always JSON lines.
 * @SEDP_REQUEST_FORMAT_JSONL: `sedp run`'s JSON Lines requests (features by name), decoded here.
 * @SEDP_REQUEST_FORMAT_PREDICT_JSONL: PredictRequest JSON, one per line (the bodies of
 *   POST …:predict), submitted as payloads for the pipeline's data_reader.
 * @SEDP_REQUEST_FORMAT_PB: a protobuf request log (core/io/request-log.h), submitted as payloads.
 *
 * The formats a request file of `sedp run` may have (docs/request-files.md).
 */
typedef enum {
  SEDP_REQUEST_FORMAT_AUTO,
  SEDP_REQUEST_FORMAT_JSONL,
  SEDP_REQUEST_FORMAT_PREDICT_JSONL,
  SEDP_REQUEST_FORMAT_PB,
} SedpRequestFormat;

/** sedp_request_format_to_string: "auto", "jsonl", "predict-jsonl" or "pb". */
SEDP_API const char *sedp_request_format_to_string (SedpRequestFormat format);

/** sedp_request_format_from_string: Parses the names of sedp_request_format_to_string(). */
SEDP_API gboolean sedp_request_format_from_string (const char *name, SedpRequestFormat *format);

/** SedpRequestReader: reads a request file one request at a time. */
typedef struct _SedpRequestReader SedpRequestReader;

/* Opens @path ("-" for standard input) as a JSON Lines request file. */
SEDP_API SedpRequestReader *sedp_request_reader_open (const char *path, GError **error);

/**
 * sedp_request_reader_open_format:
 * @path: the file, "-" for standard input
 * @format: its format, or %SEDP_REQUEST_FORMAT_AUTO
 *
 * Opens a request file of any format (with AUTO, peeks at its first byte, also on a pipe).
 *
 * Returns: (transfer full) (nullable): the reader, or %NULL with @error set.
 */
SEDP_API SedpRequestReader *sedp_request_reader_open_format (const char *path,
                                                             SedpRequestFormat format,
                                                             GError **error);

/* The next request; NULL at the end (no error) or on a bad line or record (error names file and
 * line, or file, record and byte offset). In JSON lines, blank lines and lines starting with '#'
 * are skipped. Requests of PredictRequest formats carry their message as payload. */
SEDP_API SedpRequest *sedp_request_reader_next (SedpRequestReader *reader, GError **error);

/* The format being read: AUTO while a JSON lines file has not shown its first request. */
SEDP_API SedpRequestFormat sedp_request_reader_get_format (SedpRequestReader *reader);

/* Fraction of the file read so far (0..1; 0 when unknown, e.g. a pipe). */
SEDP_API double sedp_request_reader_progress (SedpRequestReader *reader);

SEDP_API void sedp_request_reader_close (SedpRequestReader *reader);

G_END_DECLS
