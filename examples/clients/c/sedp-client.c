/* sedp-client — a C client of `sedp serve` (docs/serving.md): builds a PredictRequest with the
 * protobuf-c code generated from core/proto/sedp.proto, posts it with libsoup 3 to
 * /v1/pipelines/NAME:predict as application/x-protobuf, decodes the PredictResponse and prints
 * each item's status and scores, then the top-K list.
 *
 *   sedp-client --url http://127.0.0.1:8080 --pipeline ctr --user 42 --feature age=31 \
 *               --top-k 2 100 101:0.8 102
 *
 * Items are ID or ID:ESCORE (the recall score); a user feature NAME=VALUE is an int_value when
 * VALUE is an integer, a float_value when it is another number, else a string_value. Output, one
 * record a line (scores with 9 significant digits: the float32 exactly):
 *
 *   request_id http-1
 *   status OK
 *   item 100 SCORED 0.0591234863
 *   best 101 0.546112776
 *
 * An answer other than 200 prints `sedp-client: HTTP STATUS: MESSAGE` (the server's message) on
 * standard error and exits 1; a 504 prints its partial response first. */
#include "sedp.pb-c.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *url;
  char *pipeline;
  char *request_id;
  gint64 user_id;
  gint top_k;
  gint deadline_ms;
  gint timeout_s;
  char **features; /* NAME=VALUE */
  char **items;    /* ID[:ESCORE] */
} Options;

/* Every block the request points to, freed together once it is packed. */
typedef struct {
  Sedp__Serving__PredictRequest req;
  Sedp__Serving__User user;
  GPtrArray *blocks;
} Request;

static gpointer
request_alloc (Request *r, gsize size)
{
  gpointer p = g_malloc0 (size);
  g_ptr_array_add (r->blocks, p);
  return p;
}

/* "ID[:ESCORE]" → @item. */
static gboolean
parse_item (const char *arg, Sedp__Serving__Item *item, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (arg, ":", 2);
  guint64 id;
  if (!g_ascii_string_to_unsigned (parts[0], 10, 0, G_MAXUINT64, &id, error)) {
    g_prefix_error (error, "item '%s': the id: ", arg);
    return FALSE;
  }
  item->id = id;
  if (parts[1] == NULL)
    return TRUE;
  char *end;
  double escore = g_ascii_strtod (parts[1], &end);
  if (*parts[1] == '\0' || *end != '\0' || !isfinite (escore)) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "item '%s': the escore '%s' is not a number (write ID or ID:ESCORE, e.g. 101:0.8)",
                 arg, parts[1]);
    return FALSE;
  }
  item->escore_present_case = SEDP__SERVING__ITEM__ESCORE_PRESENT_ESCORE;
  item->escore = (float) escore;
  return TRUE;
}

/* VALUE typed as the JSON Lines reader types a bare value: integer, other number, string. */
static void
set_feature_value (Sedp__Serving__Feature *f, char *value)
{
  gint64 i;
  char *end;
  if (g_ascii_string_to_signed (value, 10, G_MININT64, G_MAXINT64, &i, NULL)) {
    f->value_case = SEDP__SERVING__FEATURE__VALUE_INT_VALUE;
    f->int_value = i;
    return;
  }
  double d = g_ascii_strtod (value, &end);
  if (*value != '\0' && *end == '\0' && isfinite (d)) {
    f->value_case = SEDP__SERVING__FEATURE__VALUE_FLOAT_VALUE;
    f->float_value = (float) d;
    return;
  }
  f->value_case = SEDP__SERVING__FEATURE__VALUE_STRING_VALUE;
  f->string_value = value;
}

/* "NAME=VALUE" (@arg is modified: the '=' becomes the key's end) → a user feature entry. */
static gboolean
add_user_feature (Request *r, char *arg, GError **error)
{
  char *eq = strchr (arg, '=');
  if (eq == NULL || eq == arg) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "--feature '%s': expected NAME=VALUE (e.g. --feature age=31)", arg);
    return FALSE;
  }
  *eq = '\0';
  Sedp__Serving__User__FeaturesEntry *e = request_alloc (r, sizeof *e);
  sedp__serving__user__features_entry__init (e);
  e->key = arg;
  e->value = request_alloc (r, sizeof *e->value);
  sedp__serving__feature__init (e->value);
  set_feature_value (e->value, eq + 1);
  r->user.features[r->user.n_features++] = e;
  return TRUE;
}

/* The PredictRequest of @o, serialized; NULL with @error on a malformed argument. */
static GBytes *
build_request (Options *o, GError **error)
{
  Request r = {.blocks = g_ptr_array_new_with_free_func (g_free)};
  sedp__serving__predict_request__init (&r.req);
  sedp__serving__user__init (&r.user);
  r.req.request_id = o->request_id ? o->request_id : (char *) "";
  r.req.top_k = (uint32_t) o->top_k;
  r.req.deadline_ms = (uint32_t) o->deadline_ms;
  r.user.id = (uint64_t) o->user_id;
  r.req.user = &r.user;
  guint n_features = o->features ? g_strv_length (o->features) : 0;
  r.user.features = request_alloc (&r, (n_features + 1) * sizeof *r.user.features);
  for (guint i = 0; i < n_features; i++)
    if (!add_user_feature (&r, o->features[i], error))
      goto fail;
  r.req.n_items = g_strv_length (o->items);
  r.req.items = request_alloc (&r, r.req.n_items * sizeof *r.req.items);
  for (gsize i = 0; i < r.req.n_items; i++) {
    r.req.items[i] = request_alloc (&r, sizeof *r.req.items[i]);
    sedp__serving__item__init (r.req.items[i]);
    if (!parse_item (o->items[i], r.req.items[i], error))
      goto fail;
  }
  gsize len = sedp__serving__predict_request__get_packed_size (&r.req);
  guint8 *buf = g_malloc (len ? len : 1);
  sedp__serving__predict_request__pack (&r.req, buf);
  g_ptr_array_unref (r.blocks);
  return g_bytes_new_take (buf, len);
fail:
  g_ptr_array_unref (r.blocks);
  return NULL;
}

/* The message of an error body, `{"error": {"code": N, "message": "…"}}`, else the body. */
static char *
error_message (GBytes *body)
{
  gsize len;
  const char *data = g_bytes_get_data (body, &len);
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (len > 0 && json_parser_load_from_data (parser, data, (gssize) len, NULL)) {
    JsonNode *root = json_parser_get_root (parser);
    JsonObject *o = JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
    JsonNode *e = o ? json_object_get_member (o, "error") : NULL;
    if (e && JSON_NODE_HOLDS_OBJECT (e)
        && json_object_has_member (json_node_get_object (e), "message"))
      return g_strdup (json_object_get_string_member (json_node_get_object (e), "message"));
  }
  return g_strndup (data ? data : "", len);
}

/* Posts @body; the response body, its HTTP status and content type (no parameters). */
static GBytes *
post (const Options *o, GBytes *body, guint *status, char **content_type, GError **error)
{
  g_autofree char *name = g_uri_escape_string (o->pipeline, NULL, FALSE);
  const char *slash = g_str_has_suffix (o->url, "/") ? "" : "/";
  g_autofree char *url = g_strdup_printf ("%s%sv1/pipelines/%s:predict", o->url, slash, name);
  g_autoptr (SoupMessage) msg = soup_message_new ("POST", url);
  if (msg == NULL) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "--url '%s': not an http:// URL (e.g. http://127.0.0.1:8080)", o->url);
    return NULL;
  }
  soup_message_set_request_body_from_bytes (msg, "application/x-protobuf", body);
  g_autoptr (SoupSession) session = soup_session_new_with_options ("timeout", (guint) o->timeout_s,
                                                                   NULL);
  GBytes *answer = soup_session_send_and_read (session, msg, NULL, error);
  if (answer == NULL) {
    g_prefix_error (error, "POST %s: ", url);
    return NULL;
  }
  *status = soup_message_get_status (msg);
  const char *ctype = soup_message_headers_get_content_type (soup_message_get_response_headers (msg),
                                                             NULL);
  *content_type = g_strdup (ctype ? ctype : "");
  return answer;
}

static const char *
enum_name (const ProtobufCEnumDescriptor *d, int value)
{
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value (d, value);
  return v ? v->name : "UNKNOWN";
}

static void
print_scores (const Sedp__Serving__ItemResult *it)
{
  for (gsize k = 0; k < it->n_scores; k++)
    printf ("%s%.9g", k ? "," : " ", (double) it->scores[k]);
}

static void
print_response (const Sedp__Serving__PredictResponse *m)
{
  printf ("request_id %s\nstatus %s\n", m->request_id,
          enum_name (&sedp__serving__predict_response__status__descriptor, m->status));
  if (*m->message)
    printf ("message %s\n", m->message);
  if (*m->model_version)
    printf ("model_version %s\n", m->model_version);
  for (gsize i = 0; i < m->n_items; i++) {
    const Sedp__Serving__ItemResult *it = m->items[i];
    printf ("item %" G_GUINT64_FORMAT " %s", (guint64) it->id,
            enum_name (&sedp__serving__item_result__status__descriptor, it->status));
    print_scores (it);
    if (*it->message)
      printf (" (%s)", it->message);
    printf ("\n");
  }
  for (gsize k = 0; k < m->n_top_k; k++) {
    if (m->top_k[k] >= m->n_items)
      continue; /* not an index of items: nothing to print */
    printf ("best %" G_GUINT64_FORMAT, (guint64) m->items[m->top_k[k]]->id);
    print_scores (m->items[m->top_k[k]]);
    printf ("\n");
  }
  for (gsize k = 0; k < m->n_routes; k++)
    printf ("route %s\n", m->routes[k]);
}

/* Prints the answer; the exit status: 0 for a 200, else 1. */
static int
report (guint status, const char *content_type, GBytes *answer)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (answer, &len);
  if ((status == 200 || status == 504) && strcmp (content_type, "application/x-protobuf") == 0) {
    Sedp__Serving__PredictResponse *m = sedp__serving__predict_response__unpack (NULL, len, data);
    if (m == NULL) {
      fprintf (stderr, "sedp-client: HTTP %u: the body (%" G_GSIZE_FORMAT " bytes) is not a "
               "PredictResponse\n", status, len);
      return 1;
    }
    print_response (m);
    if (status != 200)
      fprintf (stderr, "sedp-client: HTTP %u: %s\n", status, m->message);
    sedp__serving__predict_response__free_unpacked (m, NULL);
    return status == 200 ? 0 : 1;
  }
  g_autofree char *message = error_message (answer);
  fprintf (stderr, "sedp-client: HTTP %u: %s\n", status, message);
  return 1;
}

static gboolean
parse_options (int *argc, char ***argv, Options *o, GError **error)
{
  GOptionEntry entries[] = {
      {"url", 'u', 0, G_OPTION_ARG_STRING, &o->url, "the server (default http://127.0.0.1:8080)", "URL"},
      {"pipeline", 'p', 0, G_OPTION_ARG_STRING, &o->pipeline, "the pipeline's name", "NAME"},
      {"user", 0, 0, G_OPTION_ARG_INT64, &o->user_id, "the user's id", "ID"},
      {"feature", 'f', 0, G_OPTION_ARG_STRING_ARRAY, &o->features, "a user feature", "NAME=VALUE"},
      {"top-k", 'k', 0, G_OPTION_ARG_INT, &o->top_k, "the top-K list's length (0: none)", "K"},
      {"deadline-ms", 0, 0, G_OPTION_ARG_INT, &o->deadline_ms, "the request's deadline", "MS"},
      {"request-id", 0, 0, G_OPTION_ARG_STRING, &o->request_id, "the request's id", "ID"},
      {"timeout", 0, 0, G_OPTION_ARG_INT, &o->timeout_s, "HTTP timeout (default 10)", "SECONDS"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->items, NULL, "ID[:ESCORE]…"},
      {NULL}};
  g_autoptr (GOptionContext) ctx = g_option_context_new ("ITEM… — score items with sedp serve");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, error))
    return FALSE;
  if (o->pipeline == NULL || o->items == NULL || o->user_id < 0 || o->top_k < 0
      || o->deadline_ms < 0 || o->timeout_s < 0) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "expected --pipeline NAME and at least one item (ID or ID:ESCORE); --user, "
                 "--top-k, --deadline-ms and --timeout are not negative (see --help)");
    return FALSE;
  }
  return TRUE;
}

static void
options_clear (Options *o)
{
  g_free (o->url);
  g_free (o->pipeline);
  g_free (o->request_id);
  g_strfreev (o->features);
  g_strfreev (o->items);
}

/* Parses, builds, posts and prints; the exit status, with @error set when nothing was answered. */
static int
run (int argc, char **argv, Options *o, GError **error)
{
  if (!parse_options (&argc, &argv, o, error))
    return 1;
  if (o->url == NULL)
    o->url = g_strdup ("http://127.0.0.1:8080");
  g_autoptr (GBytes) body = build_request (o, error);
  if (body == NULL)
    return 1;
  guint status = 0;
  g_autofree char *content_type = NULL;
  g_autoptr (GBytes) answer = post (o, body, &status, &content_type, error);
  return answer ? report (status, content_type, answer) : 1;
}

int
main (int argc, char **argv)
{
  Options o = {.timeout_s = 10};
  g_autoptr (GError) error = NULL;
  int rc = run (argc, argv, &o, &error);
  if (error)
    fprintf (stderr, "sedp-client: %s\n", error->message);
  options_clear (&o);
  return rc;
}
