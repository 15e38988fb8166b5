/* sedp — request files for offline scoring: JSON Lines in, JSON Lines out. */
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

/** SedpRequestReader: reads a JSON Lines request file one request at a time. */
typedef struct _SedpRequestReader SedpRequestReader;

/* Opens @path ("-" for standard input). */
SEDP_API SedpRequestReader *sedp_request_reader_open (const char *path, GError **error);

/* The next request; NULL at the end (no error) or on a bad line (error names file and line).
 * Blank lines and lines starting with '#' are skipped. */
SEDP_API SedpRequest *sedp_request_reader_next (SedpRequestReader *reader, GError **error);

/* Fraction of the file read so far (0..1; 0 when unknown, e.g. a pipe). */
SEDP_API double sedp_request_reader_progress (SedpRequestReader *reader);

SEDP_API void sedp_request_reader_close (SedpRequestReader *reader);

G_END_DECLS
