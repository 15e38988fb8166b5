/* sedp — the model API of `sedp serve` (docs/compat.md): TF Serving's REST routes
 * (`/v1/models/NAME[/versions/V|/labels/L]:predict`, the status and metadata GETs) and DeepRec's
 * protobuf on the same predict route, for bare models (`--model NAME=FILE.onnx`) and pipelines.
 * The wire formats are the protocol module's (core/io/model-api.h); this file routes, checks the
 * version, and turns a decoded request into a runtime request and its result into an answer.
 * Main context only. */
#include "model-api.h"

#include "admin.h"
#include "reload.h"

#include <string.h>

#define MODELS_PREFIX "/v1/models/"

/* What the route names after /v1/models/. */
typedef struct {
  char *name;
  char *version; /* (nullable) /versions/V */
  char *label;   /* (nullable) /labels/L */
  char *verb;    /* (nullable) "predict" (":predict") or "metadata" ("/metadata") */
} Route;

static void
route_clear (Route *r)
{
  g_free (r->name);
  g_free (r->version);
  g_free (r->label);
  g_free (r->verb);
}

/* NAME[/versions/V|/labels/L][:predict|/metadata]; FALSE for anything else. */
static gboolean
route_parse (const char *rest, Route *r)
{
  memset (r, 0, sizeof *r);
  g_autofree char *s = g_strdup (rest);
  char *colon = strrchr (s, ':');
  if (colon) {
    r->verb = g_strdup (colon + 1);
    *colon = '\0';
  }
  g_auto (GStrv) parts = g_strsplit (s, "/", -1);
  guint n = g_strv_length (parts);
  /* …/metadata after NAME, NAME/versions/V or NAME/labels/L (TF Serving's GetModelMetadata) */
  if ((n == 2 || n == 4) && colon == NULL && strcmp (parts[n - 1], "metadata") == 0) {
    r->verb = g_strdup ("metadata");
    n--;
  }
  if (n == 0 || *parts[0] == '\0' || (n != 1 && n != 3) ||
      (n == 3 && strcmp (parts[1], "versions") != 0 && strcmp (parts[1], "labels") != 0) ||
      (n == 3 && *parts[2] == '\0') || (r->verb && strcmp (r->verb, "predict") != 0 &&
                                        strcmp (r->verb, "metadata") != 0))
    return FALSE;
  r->name = g_strdup (parts[0]);
  if (n == 3)
    *(parts[1][0] == 'v' ? &r->version : &r->label) = g_strdup (parts[2]);
  return TRUE;
}

/* The version a served model or pipeline answers as: its [model] group's serving version, else 1. */
static gint64
served_version (const Served *s)
{
  return s->reloader ? reloader_serving (s->reloader)->version : 1;
}

/* ---- predict ---- */

struct _ModelApiCall {
  SedpModelApiFormat format;
  SedpModelApiRequest decoded;
  const SedpModelApiSignature *signature; /* the served's */
};

void
model_api_call_free (ModelApiCall *call)
{
  if (call == NULL)
    return;
  sedp_model_api_request_clear (&call->decoded);
  g_free (call);
}

static void
respond_body (SoupServerMessage *msg, guint status, SedpModelApiFormat format, GBytes *body)
{
  gsize size;
  const char *data = g_bytes_get_data (body, &size);
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg,
                                    format == SEDP_MODEL_API_TFS_JSON
                                        ? "application/json"
                                        : format == SEDP_MODEL_API_DEEPREC
                                              ? SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF
                                              : "text/plain; charset=utf-8",
                                    SOUP_MEMORY_COPY, data, size);
}

/* An error in the route's own format: TF Serving's {"error": …}, DeepRec's text. */
static void
respond_api_error (SoupServerMessage *msg, guint status, SedpModelApiFormat format,
                   const char *message)
{
  g_autoptr (GBytes) body = sedp_model_api_encode_error (format, message);
  soup_server_message_set_status (msg, status, NULL);
  gsize size;
  const char *data = g_bytes_get_data (body, &size);
  soup_server_message_set_response (msg,
                                    format == SEDP_MODEL_API_TFS_JSON ? "application/json"
                                                                      : "text/plain; charset=utf-8",
                                    SOUP_MEMORY_COPY, data, size);
}

/* Answers 404 unless the route's version or label names what @s serves. */
static gboolean
check_version (SoupServerMessage *msg, const Served *s, const Route *r)
{
  if (r->label) {
    g_autofree char *m = g_strdup_printf ("model '%s' has no version labelled '%s' (sedp serves one "
                                          "version of a model and defines no labels: use "
                                          "/v1/models/%s or /versions/%" G_GINT64_FORMAT ")",
                                          s->name, r->label, s->name, served_version (s));
    respond_api_error (msg, SOUP_STATUS_NOT_FOUND, SEDP_MODEL_API_TFS_JSON, m);
    return FALSE;
  }
  if (r->version == NULL)
    return TRUE;
  char *end = NULL;
  gint64 v = g_ascii_strtoll (r->version, &end, 10);
  if (*end == '\0' && v == served_version (s))
    return TRUE;
  g_autofree char *m = g_strdup_printf ("version '%s' of model '%s' is not served (it serves "
                                        "version %" G_GINT64_FORMAT ")", r->version, s->name,
                                        served_version (s));
  respond_api_error (msg, SOUP_STATUS_NOT_FOUND, SEDP_MODEL_API_TFS_JSON, m);
  return FALSE;
}

gboolean
model_api_format_of (const char *content_type, SedpModelApiFormat *format)
{
  if (content_type && g_ascii_strcasecmp (content_type, SEDP_PROTOCOL_CONTENT_TYPE_JSON) == 0)
    *format = SEDP_MODEL_API_TFS_JSON;
  else if (content_type &&
           (g_ascii_strcasecmp (content_type, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF) == 0 ||
            g_ascii_strcasecmp (content_type, "application/protobuf") == 0 ||
            g_ascii_strcasecmp (content_type, "application/octet-stream") == 0))
    *format = SEDP_MODEL_API_DEEPREC;
  else
    return FALSE;
  return TRUE;
}

SedpRequest *
model_api_request (SoupServerMessage *msg, const Served *served, SedpModelApiFormat format,
                   GBytes *body, guint64 serial, ModelApiCall **call_out)
{
  ModelApiCall *call = g_new0 (ModelApiCall, 1);
  call->format = format;
  call->signature = served->signature;
  gsize size;
  const guint8 *data = g_bytes_get_data (body, &size);
  g_autoptr (GError) error = NULL;
  if (!sedp_model_api_decode (format, data, size, served->signature, NULL, &call->decoded,
                              &error)) {
    respond_api_error (msg, SOUP_STATUS_BAD_REQUEST, format, error->message);
    model_api_call_free (call);
    return NULL;
  }
  g_autofree char *id = g_strdup_printf ("%s-%" G_GUINT64_FORMAT,
                                         format == SEDP_MODEL_API_TFS_JSON ? "tfs" : "deeprec",
                                         serial);
  SedpRequest *request = sedp_request_new (id, 0);
  sedp_request_set_frames (request, sedp_frame_new (1), sedp_frame_ref (call->decoded.items));
  *call_out = call;
  return request;
}

gboolean
model_api_deliver (SoupServerMessage *msg, const SedpResult *res, const ModelApiCall *call)
{
  SedpStatus status = sedp_result_get_status (res);
  const char *message = sedp_result_get_message (res);
  if (status != SEDP_STATUS_OK) {
    guint code = status == SEDP_STATUS_TIMEOUT      ? SOUP_STATUS_GATEWAY_TIMEOUT
                 : status == SEDP_STATUS_OVERLOADED ? SOUP_STATUS_SERVICE_UNAVAILABLE
                 : status == SEDP_STATUS_FAILED     ? server_status_of_error (sedp_result_get_error (res))
                                                    : SOUP_STATUS_INTERNAL_SERVER_ERROR;
    g_autofree char *text = g_strdup_printf ("%s: %s", sedp_status_to_string (status),
                                             message ? message : "no message");
    respond_api_error (msg, code, call->format, text);
    return code >= 500;
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body =
      sedp_model_api_encode_result (call->format, &call->decoded, res, call->signature, &error);
  if (body == NULL) {
    respond_api_error (msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, call->format, error->message);
    return TRUE;
  }
  respond_body (msg, SOUP_STATUS_OK, call->format, body);
  return FALSE;
}

/* ---- status and metadata ---- */

/* GET /v1/models/NAME[/versions/V]: TF Serving's GetModelStatus; a pipeline with [model] groups
 * adds its lifecycle (admin.c's "pipelines" member, docs/model-lifecycle.md). */
static void
handle_status (SoupServerMessage *msg, const Served *s)
{
  const char *state = s->ready ? "AVAILABLE" : "LOADING";
  g_autoptr (GBytes) body = sedp_model_api_encode_status (s->name, (guint64) served_version (s),
                                                          state);
  respond_body (msg, SOUP_STATUS_OK, SEDP_MODEL_API_TFS_JSON, body);
}

static void
add_tensors (JsonBuilder *b, const char *member, const GArray *tensors)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  for (guint i = 0; i < tensors->len; i++) {
    const SedpModelApiTensor *t = &g_array_index (tensors, SedpModelApiTensor, i);
    json_builder_set_member_name (b, t->name);
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "dtype");
    json_builder_add_string_value (b, t->type == SEDP_COLUMN_INT64    ? "DT_INT64"
                                      : t->type == SEDP_COLUMN_STRING ? "DT_STRING"
                                      : t->type == 0                  ? "DT_INVALID"
                                                                      : "DT_FLOAT");
    json_builder_set_member_name (b, "tensor_shape");
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "dim");
    json_builder_begin_array (b);
    for (int d = -1; d < (int) t->n_dims; d++) {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "size");
      g_autofree char *size = g_strdup_printf ("%" G_GINT64_FORMAT, d < 0 ? -1 : t->dims[d]);
      json_builder_add_string_value (b, size);
      json_builder_end_object (b);
    }
    json_builder_end_array (b);
    json_builder_end_object (b);
    json_builder_set_member_name (b, "name");
    json_builder_add_string_value (b, t->column);
    json_builder_end_object (b);
  }
  json_builder_end_object (b);
}

/* GET /v1/models/NAME/metadata: TF Serving's GetModelMetadata, the signature as a SignatureDef
 * (the batch dimension -1; an open signature lists the inputs it declares, none). */
static void
handle_metadata (SoupServerMessage *msg, const Served *s)
{
  const SedpModelApiSignature *sig = s->signature;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "model_spec");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, s->name);
  json_builder_set_member_name (b, "signature_name");
  json_builder_add_string_value (b, "");
  json_builder_set_member_name (b, "version");
  g_autofree char *version = g_strdup_printf ("%" G_GINT64_FORMAT, served_version (s));
  json_builder_add_string_value (b, version);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "metadata");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "signature_def");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "signature_def");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, sig->name);
  json_builder_begin_object (b);
  add_tensors (b, "inputs", sig->inputs);
  add_tensors (b, "outputs", sig->outputs);
  json_builder_set_member_name (b, "method_name");
  json_builder_add_string_value (b, "tensorflow/serving/predict");
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  server_respond_json (msg, SOUP_STATUS_OK, b);
}

/* ---- routing ---- */

gboolean
model_api_handle (SedpServer *server, SoupServerMessage *msg, const char *path)
{
  if (!g_str_has_prefix (path, MODELS_PREFIX))
    return FALSE;
  Route r;
  gboolean parsed = route_parse (path + strlen (MODELS_PREFIX), &r);
  Served *s = parsed ? server_find_served (server, r.name) : NULL;
  if (s == NULL) {
    gboolean bare_get = parsed && r.verb == NULL && r.version == NULL && r.label == NULL;
    route_clear (&r);
    /* GET /v1/models/NAME of a [model NAME] group that names no served model: admin.c's. */
    return bare_get ? FALSE : (model_api_not_found (msg, path), TRUE);
  }
  const char *method = soup_server_message_get_method (msg);
  gboolean predict = g_strcmp0 (r.verb, "predict") == 0;
  if (predict ? strcmp (method, SOUP_METHOD_POST) != 0
              : strcmp (method, SOUP_METHOD_GET) != 0 && strcmp (method, SOUP_METHOD_HEAD) != 0)
    server_method_not_allowed (msg, predict ? "POST" : "GET, HEAD");
  else if (check_version (msg, s, &r)) {
    if (predict)
      server_handle_predict (server, msg, s, TRUE);
    else if (r.verb)
      handle_metadata (msg, s);
    else
      handle_status (msg, s);
  }
  route_clear (&r);
  return TRUE;
}

void
model_api_not_found (SoupServerMessage *msg, const char *path)
{
  g_autofree char *m = g_strdup_printf (
      "no such endpoint: %s (expected /v1/models/NAME[/versions/V]:predict, /v1/models/NAME, "
      "/v1/models/NAME/metadata, NAME a served model or pipeline)", path);
  respond_api_error (msg, SOUP_STATUS_NOT_FOUND, SEDP_MODEL_API_TFS_JSON, m);
}
