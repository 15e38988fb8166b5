/* data_reader — the request-scope source stage of a serving pipeline: decodes the request's
 * payload (sedp.serving.PredictRequest, protobuf or JSON; see docs/protocol.md) into the
 * request frame (user_id, user features) and the items (item_id, escore, item features).
 * The client's top_k and deadline_ms are attached as request data ("data_reader.top_k",
 * "data_reader.deadline_ms", GUINT_TO_POINTER; 0 when not asked). Requests submitted already
 * decoded (no payload, as `sedp run` does) pass through. */
#include <sedp/sedp.h>

#include <string.h>

typedef struct {
  SedpProtocolFormat format;
  guint max_items;
  SedpCounter *decoded;
  SedpCounter *invalid;
} DataReader;

static const SedpOptionSpec data_reader_options[] = {
  SEDP_OPTION_ENUM_SPEC ("format", "auto", "auto|protobuf|json",
                         "the payload's encoding; auto follows its content type"),
  SEDP_OPTION_INT_SPEC ("max_items", "10000", 1, 10000000,
                        "the most candidate items one request may have"),
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
  d->max_items = (guint) sedp_stage_context_get_int (ctx, "max_items");
  d->decoded = sedp_stage_context_add_counter (ctx, "data_reader_requests_total",
                                               "requests decoded from a payload");
  d->invalid = sedp_stage_context_add_counter (ctx, "data_reader_invalid_total",
                                               "payloads that could not be decoded");
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
    if (!sedp_protocol_decode_request (payload, size, content_type, d->format, d->max_items,
                                       sedp_event_get_frame (events[e]), &decoded, &local)) {
      sedp_counter_add (d->invalid, 1);
      sedp_event_fail (events[e], local);
      continue;
    }
    sedp_counter_add (d->decoded, 1);
    /* For later stages (the responder): what the client asked for. */
    sedp_request_set_data (request, "data_reader.top_k", GUINT_TO_POINTER (decoded.top_k), NULL);
    sedp_request_set_data (request, "data_reader.deadline_ms", GUINT_TO_POINTER (decoded.deadline_ms),
                           NULL);
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
