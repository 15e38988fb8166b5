/* data_reader — the request-scope source stage of a serving pipeline: decodes the request's
 * payload (sedp.serving.PredictRequest, protobuf or JSON; see docs/protocol.md) into the
 * request frame (user_id, user features) and the items (item_id, escore, item features).
 * The client's top_k becomes the request's (sedp_request_set_top_k()); its deadline_ms was read by
 * whoever submitted the request (the server's peek), which set the request's deadline. Requests
 * submitted already decoded (no payload, as `sedp run` does) pass through. */
#include <sedp/sedp.h>

#include <string.h>

typedef struct {
  SedpProtocolFormat format;
  SedpProtocolLimits limits;
  SedpCounter *decoded;
  SedpCounter *invalid;
  SedpCounter *over_limit;
} DataReader;

/* The limits of docs/limits.md; their defaults are the SDK's SEDP_PROTOCOL_DEFAULT_MAX_*. */
static const SedpOptionSpec data_reader_options[] = {
  SEDP_OPTION_ENUM_SPEC ("format", "auto", "auto|protobuf|json",
                         "the payload's encoding; auto follows its content type"),
  SEDP_OPTION_INT_SPEC ("max_items", "10000", 1, 10000000,
                        "the most candidate items one request may have"),
  SEDP_OPTION_INT_SPEC ("max_depth", "64", 1, 100000,
                        "the deepest JSON nesting a request may have (a PredictRequest needs 7)"),
  SEDP_OPTION_INT_SPEC ("max_features", "1024", 1, 1000000,
                        "the most distinct features over a request's items (and over its user)"),
  SEDP_OPTION_INT_SPEC ("max_values", "65536", 1, 100000000,
                        "the most values one list feature (ids or floats) may hold"),
  SEDP_OPTION_INT_SPEC ("max_string_bytes", "65536", 1, 1073741824,
                        "the longest string (feature name, string value, request_id), in bytes"),
  SEDP_OPTION_INT_SPEC ("max_decoded_bytes", "134217728", 1024, 1099511627776.0,
                        "the most memory decoding one request may hold, in bytes"),
  SEDP_OPTION_END,
};

static gpointer
data_reader_create (SedpStageContext *ctx, GError **error)
{
  DataReader *d = g_new0 (DataReader, 1);
  const char *format = sedp_stage_context_get_string (ctx, "format");
  d->format = strcmp (format, "protobuf") == 0 ? SEDP_PROTOCOL_PROTOBUF
              : strcmp (format, "json") == 0   ? SEDP_PROTOCOL_JSON
                                               : SEDP_PROTOCOL_AUTO;
  d->limits.max_items = (guint) sedp_stage_context_get_int (ctx, "max_items");
  d->limits.max_depth = (guint) sedp_stage_context_get_int (ctx, "max_depth");
  d->limits.max_features = (guint) sedp_stage_context_get_int (ctx, "max_features");
  d->limits.max_values = (guint) sedp_stage_context_get_int (ctx, "max_values");
  d->limits.max_string_bytes = (gsize) sedp_stage_context_get_int (ctx, "max_string_bytes");
  d->limits.max_decoded_bytes = (gsize) sedp_stage_context_get_int (ctx, "max_decoded_bytes");
  d->decoded = sedp_stage_context_add_counter (ctx, "data_reader_requests_total",
                                               "requests decoded from a payload");
  d->invalid = sedp_stage_context_add_counter (ctx, "data_reader_invalid_total",
                                               "payloads that could not be decoded");
  d->over_limit = sedp_stage_context_add_counter (ctx, "data_reader_over_limit_total",
                                                  "payloads refused for passing a limit "
                                                  "(also counted as invalid)");
  return d;
}

static gboolean
data_reader_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                     GError **error)
{
  DataReader *d = instance;
  for (guint e = 0; e < n_events; e++) {
    SedpRequest *request = sedp_event_get_request (events[e]);
    gsize size = 0;
    const char *content_type = NULL;
    const guint8 *payload = sedp_request_get_payload (request, &size, &content_type);
    if (payload == NULL)
      continue; /* decoded already: the frames pass through */
    SedpProtocolRequest decoded;
    g_autoptr (GError) local = NULL;
    if (!sedp_protocol_decode_request_limited (payload, size, content_type, d->format, &d->limits,
                                               sedp_event_get_frame (events[e]), &decoded,
                                               &local)) {
      sedp_counter_add (d->invalid, 1);
      if (g_error_matches (local, SEDP_PROTOCOL_ERROR, SEDP_PROTOCOL_ERROR_LIMIT))
        sedp_counter_add (d->over_limit, 1);
      sedp_event_fail (events[e], local);
      continue;
    }
    sedp_counter_add (d->decoded, 1);
    sedp_request_set_top_k (request, decoded.top_k); /* for the responder and the server */
    sedp_event_set_items (events[e], g_steal_pointer (&decoded.items));
    sedp_protocol_request_clear (&decoded);
  }
  return TRUE;
}

static void
data_reader_destroy (gpointer instance)
{
  g_free (instance);
}

SEDP_STAGE_DEFINE (.name = "data_reader", .version = "1.0",
                   .description = "decodes PredictRequest payloads (protobuf or JSON) into frames",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = data_reader_options,
                   .create = data_reader_create, .process = data_reader_process,
                   .destroy = data_reader_destroy);
