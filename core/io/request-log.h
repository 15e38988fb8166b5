/* sedp — request logs for `sedp run`: files of sedp.serving.PredictRequest messages, each
 * preceded by its length as a protobuf varint (the length-delimited stream form), and
 * PredictRequest JSON lines. Their requests are not decoded here: each becomes a request that
 * carries the message as its payload, as `sedp serve` submits it, for the pipeline's data_reader
 * stage to decode. The format is described in docs/request-files.md. */
#pragma once

#include "../runtime/pipeline.h"

#include <gio/gio.h>

G_BEGIN_DECLS

/** SEDP_REQUEST_LOG_MAX_RECORD: the largest record a protobuf request log may hold (64 MiB). */
#define SEDP_REQUEST_LOG_MAX_RECORD ((guint64) 64 << 20)

/**
 * sedp_request_log_append:
 * @log: the log being written
 * @message: a serialized PredictRequest
 * @size: its size in bytes
 *
 * Appends one record to @log: @size as a protobuf varint, then @message.
 */
SEDP_API void sedp_request_log_append (GByteArray *log, const guint8 *message, gsize size);

/** SedpRequestLog: reads a protobuf request log one record at a time. */
typedef struct _SedpRequestLog SedpRequestLog;

/**
 * sedp_request_log_new:
 * @stream: where the log is read from (referenced; read from its current position)
 * @name: names the log in messages and in default request ids (the file's path)
 * @size: the number of bytes left in @stream when known, else 0; with it a record whose length
 *   runs past the end is refused before it is read, and progress can be told
 *
 * Returns: (transfer full): a reader; free it with sedp_request_log_free().
 */
SEDP_API SedpRequestLog *sedp_request_log_new (GInputStream *stream, const char *name, goffset size);

/**
 * sedp_request_log_next:
 * @log: the reader
 * @error: a #SEDP_IO_ERROR
 *
 * Reads the next record and checks that it holds a PredictRequest (protobuf-c decodes it).
 * The request it returns carries the record as its payload, content type
 * `application/x-protobuf`; its id is the message's request_id, or "NAME#N" for record N
 * (counted from 1) when that is empty; its timeout is deadline_ms when that is 1 – 3600000.
 *
 * A corrupt log (a length cut off by the end of the file, a length of 0, past the end of the
 * file or over %SEDP_REQUEST_LOG_MAX_RECORD, a message cut short or that does not decode) and a
 * log without records are errors (%SEDP_IO_ERROR_INVALID), named "NAME: record N (byte OFFSET):
 * …", OFFSET being where the record's length starts. After an error the reader stays at it.
 *
 * Returns: (transfer full) (nullable): the next request; %NULL at the end (@error not set) or
 * with @error set.
 */
SEDP_API SedpRequest *sedp_request_log_next (SedpRequestLog *log, GError **error);

/**
 * sedp_request_log_get_offset:
 * @log: the reader
 *
 * Returns: the number of bytes read so far.
 */
SEDP_API guint64 sedp_request_log_get_offset (SedpRequestLog *log);

/**
 * sedp_request_log_get_n_records:
 * @log: the reader
 *
 * Returns: the number of records read so far without error.
 */
SEDP_API guint sedp_request_log_get_n_records (SedpRequestLog *log);

/** sedp_request_log_free: Frees @log (%NULL is ignored) and drops its reference to the stream. */
SEDP_API void sedp_request_log_free (SedpRequestLog *log);

/**
 * sedp_request_from_predict_json:
 * @text: one PredictRequest as JSON (the body POST …:predict takes)
 * @length: its length in bytes
 * @where: names the input in messages and is the default id ("requests.jsonl:12")
 * @error: a #SEDP_IO_ERROR
 *
 * Checks that @text is a JSON object and makes a request that carries it as its payload,
 * content type `application/json`; the id is its request_id (a non-empty string), else @where;
 * the timeout its deadline_ms when that is 1 – 3600000. Everything else is for the pipeline's
 * decoder (data_reader) to check, as in serving.
 *
 * Returns: (transfer full) (nullable): the request, or %NULL with @error set ("@where: invalid
 * JSON: …", "@where: a request must be a JSON object").
 */
SEDP_API SedpRequest *sedp_request_from_predict_json (const char *text, gsize length,
                                                      const char *where, GError **error);

/**
 * sedp_request_json_is_predict:
 * @text: one request as JSON
 * @length: its length in bytes
 *
 * Tells a PredictRequest JSON line from a `sedp run` JSON Lines request: %TRUE when @text is a
 * JSON object with a top-level `request_id` or `top_k`, or whose `user` or an item has a
 * `features` member that is an object (a JSON Lines request cannot have one). %FALSE otherwise,
 * invalid JSON included.
 */
SEDP_API gboolean sedp_request_json_is_predict (const char *text, gsize length);

G_END_DECLS
