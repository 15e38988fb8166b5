/* sedp — request logs: length-delimited protobuf PredictRequests and PredictRequest JSON lines,
 * turned into requests that carry their message as the payload (decoded by data_reader). */
#include "request-log.h"

#include "peek.h"
#include "row-builder.h"
#include "request-file.h"
#include "wire.h"
#include "sedp.pb-c.h"

#include <json-glib/json-glib.h>
#include <sedp/protocol.h>
#include <stdlib.h>
#include <string.h>


void
sedp_request_log_append (GByteArray *log, const guint8 *message, gsize size)
{
  wire_put_varint (log, size);
  if (size)
    g_byte_array_append (log, message, (guint) size);
}

struct _SedpRequestLog {
  char *name;
  GBufferedInputStream *in;
  guint64 size;     /* 0: unknown */
  guint64 offset;   /* bytes read */
  guint n_records;  /* records read without error */
  gboolean failed;  /* an error was reported: stay there */
};

SedpRequestLog *
sedp_request_log_new (GInputStream *stream, const char *name, goffset size)
{
  g_return_val_if_fail (G_IS_INPUT_STREAM (stream), NULL);
  SedpRequestLog *log = g_new0 (SedpRequestLog, 1);
  log->name = g_strdup (name ? name : "request log");
  log->in = G_IS_BUFFERED_INPUT_STREAM (stream)
                ? g_object_ref (G_BUFFERED_INPUT_STREAM (stream))
                : G_BUFFERED_INPUT_STREAM (g_buffered_input_stream_new (stream));
  log->size = size > 0 ? (guint64) size : 0;
  return log;
}

guint64
sedp_request_log_get_offset (SedpRequestLog *log)
{
  return log->offset;
}

guint
sedp_request_log_get_n_records (SedpRequestLog *log)
{
  return log->n_records;
}

void
sedp_request_log_free (SedpRequestLog *log)
{
  if (log == NULL)
    return;
  g_object_unref (log->in);
  g_free (log->name);
  g_free (log);
}

/* Sets an error about record @record that starts at byte @start and returns NULL. */
static SedpRequest *G_GNUC_PRINTF (6, 7)
corrupt (SedpRequestLog *log, GError **error, int code, guint record, guint64 start,
         const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, SEDP_IO_ERROR, code, "%s: record %u (byte %" G_GUINT64_FORMAT "): %s",
               log->name, record, start, what);
  log->failed = TRUE;
  return NULL;
}

/* A valid UTF-8 copy of @s (ids are written into JSON results). */
static char *
utf8_copy (const char *s, gsize len)
{
  return g_utf8_validate (s, (gssize) len, NULL) ? g_strndup (s, len)
                                                 : g_utf8_make_valid (s, (gssize) len);
}

SedpRequest *
sedp_request_log_next (SedpRequestLog *log, GError **error)
{
  if (log->failed)
    return NULL;
  guint record = log->n_records + 1;
  guint64 start = log->offset;

  /* The length: a varint of at most 10 bytes. */
  guint64 len = 0;
  guint shift = 0, n_bytes = 0;
  for (int r = 0; r != 1;) {
    g_autoptr (GError) local = NULL;
    int b = g_buffered_input_stream_read_byte (log->in, NULL, &local);
    if (b < 0) {
      if (local)
        return corrupt (log, error, SEDP_IO_ERROR_READ, record, start, "read error: %s",
                        local->message);
      if (n_bytes == 0) {
        if (log->n_records > 0)
          return NULL; /* the end, between records */
        log->failed = TRUE;
        g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                     "%s: an empty request log (no records)", log->name);
        return NULL;
      }
      return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                      "truncated length: the file ends inside the record's length varint "
                      "(after %u bytes)", n_bytes);
    }
    log->offset++;
    n_bytes++;
    r = wire_varint_feed (&len, &shift, (guint8) b);
    if (r == -2)
      return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                      "malformed length: the varint is larger than 2^64");
    if (r == -1)
      return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                      "malformed length: the varint is longer than 10 bytes");
  }
  if (len == 0)
    return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                    "an empty record (length 0): a PredictRequest needs items");
  if (log->size && len > log->size - MIN (log->offset, log->size))
    return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                    "the length %" G_GUINT64_FORMAT " runs past the end of the file (%"
                    G_GUINT64_FORMAT " bytes left): truncated or not a request log",
                    len, log->size - MIN (log->offset, log->size));
  if (len > SEDP_REQUEST_LOG_MAX_RECORD)
    return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                    "the length %" G_GUINT64_FORMAT " is over the limit of %" G_GUINT64_FORMAT
                    " bytes: not a request log?", len, SEDP_REQUEST_LOG_MAX_RECORD);

  /* The message. */
  guint8 *buf = g_malloc ((gsize) len);
  gsize got = 0;
  g_autoptr (GError) local = NULL;
  if (!g_input_stream_read_all (G_INPUT_STREAM (log->in), buf, (gsize) len, &got, NULL, &local)) {
    g_free (buf);
    return corrupt (log, error, SEDP_IO_ERROR_READ, record, start, "read error: %s",
                    local->message);
  }
  log->offset += got;
  if (got < len) {
    g_free (buf);
    return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                    "truncated message: the length says %" G_GUINT64_FORMAT
                    " bytes, the file ends after %" G_GSIZE_FORMAT, len, got);
  }
  Sedp__Serving__PredictRequest *m = sedp__serving__predict_request__unpack (NULL, (size_t) len, buf);
  if (m == NULL) {
    g_free (buf);
    return corrupt (log, error, SEDP_IO_ERROR_INVALID, record, start,
                    "not a valid protobuf PredictRequest (%" G_GUINT64_FORMAT " bytes)", len);
  }
  g_autofree char *id = m->request_id && *m->request_id
                            ? utf8_copy (m->request_id, strlen (m->request_id))
                            : g_strdup_printf ("%s#%u", log->name, record);
  guint deadline_ms = m->deadline_ms;
  sedp__serving__predict_request__free_unpacked (m, NULL);

  SedpRequest *request = sedp_request_new (id, 0);
  g_autoptr (GBytes) payload = g_bytes_new_take (buf, (gsize) len);
  sedp_request_set_payload (request, payload, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF);
  if (deadline_ms >= 1 && deadline_ms <= SEDP_PROTOCOL_MAX_DEADLINE_MS)
    sedp_request_set_timeout (request, (gint64) deadline_ms * 1000);
  log->n_records++;
  return request;
}

/* The JSON object of @text, or NULL (with @local set when it is not JSON, or nests deeper than
 * the protocol's limit: json-glib's parser descends recursively). */
static JsonParser *
parse_object (const char *text, gsize length, JsonObject **obj, GError **local)
{
  JsonParser *parser = json_parser_new_immutable ();
  *obj = NULL;
  if (!sedp_json_check_nesting (text, length, SEDP_PROTOCOL_DEFAULT_MAX_DEPTH, local) ||
      !json_parser_load_from_data (parser, text, (gssize) length, local))
    return parser;
  JsonNode *root = json_parser_get_root (parser);
  if (root && JSON_NODE_HOLDS_OBJECT (root))
    *obj = json_node_get_object (root);
  return parser;
}

SedpRequest *
sedp_request_from_predict_json (const char *text, gsize length, const char *where, GError **error)
{
  g_autoptr (GError) local = NULL;
  JsonObject *obj;
  g_autoptr (JsonParser) parser G_GNUC_UNUSED = parse_object (text, length, &obj, &local);
  if (local) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID, "%s: %s%s", where,
                 local->domain == JSON_PARSER_ERROR ? "invalid JSON: " : "", local->message);
    return NULL;
  }
  if (obj == NULL) {
    g_set_error (error, SEDP_IO_ERROR, SEDP_IO_ERROR_INVALID,
                 "%s: a request must be a JSON object", where);
    return NULL;
  }
  const char *id = where;
  JsonNode *idn = json_object_get_member (obj, "request_id");
  if (idn && JSON_NODE_HOLDS_VALUE (idn) && json_node_get_value_type (idn) == G_TYPE_STRING &&
      *json_node_get_string (idn))
    id = json_node_get_string (idn);
  /* deadline_ms: a number, or (proto3 JSON) a string of digits; the decoder checks the rest. */
  double ms = 0;
  JsonNode *dn = json_object_get_member (obj, "deadline_ms");
  if (dn && JSON_NODE_HOLDS_VALUE (dn)) {
    GType t = json_node_get_value_type (dn);
    if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE)
      ms = json_node_get_double (dn);
    else if (t == G_TYPE_STRING) {
      const char *s = json_node_get_string (dn);
      char *end = NULL;
      guint64 v = g_ascii_strtoull (s, &end, 10);
      ms = *s && end && *end == '\0' ? (double) v : 0;
    }
  }
  SedpRequest *request = sedp_request_new (id, 0);
  g_autoptr (GBytes) payload = g_bytes_new (text, length);
  sedp_request_set_payload (request, payload, SEDP_PROTOCOL_CONTENT_TYPE_JSON);
  if (ms >= 1 && ms <= SEDP_PROTOCOL_MAX_DEADLINE_MS && ms == (double) (guint) ms)
    sedp_request_set_timeout (request, (gint64) ms * 1000);
  return request;
}

static gboolean
has_features_object (JsonNode *n)
{
  if (n == NULL || !JSON_NODE_HOLDS_OBJECT (n))
    return FALSE;
  JsonNode *f = json_object_get_member (json_node_get_object (n), "features");
  return f && JSON_NODE_HOLDS_OBJECT (f);
}

gboolean
sedp_request_json_is_predict (const char *text, gsize length)
{
  g_autoptr (GError) local = NULL;
  JsonObject *obj;
  g_autoptr (JsonParser) parser G_GNUC_UNUSED = parse_object (text, length, &obj, &local);
  if (obj == NULL)
    return FALSE;
  if (json_object_has_member (obj, "request_id") || json_object_has_member (obj, "top_k"))
    return TRUE;
  if (has_features_object (json_object_get_member (obj, "user")))
    return TRUE;
  JsonNode *items = json_object_get_member (obj, "items");
  if (items && JSON_NODE_HOLDS_ARRAY (items)) {
    JsonArray *a = json_node_get_array (items);
    for (guint i = 0; i < json_array_get_length (a); i++)
      if (has_features_object (json_array_get_element (a, i)))
        return TRUE;
  }
  return FALSE;
}
