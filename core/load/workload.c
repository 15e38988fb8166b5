/* sedp — the load generator's workload: requests read from JSON Lines, encoded once (see
 * workload.h). */
#include "workload.h"
#include "../io/predict-pb.h"

#include <sedp/protocol.h>
#include <string.h>

typedef struct {
  GBytes *body;
  guint n_items;
} WorkloadRequest;

struct _SedpWorkload {
  gint ref;
  SedpWorkloadEncoding encoding;
  GArray *requests; /* WorkloadRequest */
};

static const char *const default_request =
  "{\"user\": {\"id\": 42, \"features\": {\"age\": {\"int_value\": 31}}}, \"items\": ["
  "{\"id\": 1, \"features\": {\"ctr\": 0.5}}, {\"id\": 2, \"features\": {\"ctr\": 0.25}}, "
  "{\"id\": 3, \"features\": {\"ctr\": 0.125}}, {\"id\": 4, \"features\": {\"ctr\": 0.75}}, "
  "{\"id\": 5, \"features\": {\"ctr\": 0.5}}, {\"id\": 6, \"features\": {\"ctr\": 0.25}}, "
  "{\"id\": 7, \"features\": {\"ctr\": 0.125}}, {\"id\": 8, \"features\": {\"ctr\": 0.75}}]}";

static void
workload_request_clear (gpointer p)
{
  g_bytes_unref (((WorkloadRequest *) p)->body);
}

SedpWorkload *
sedp_workload_new (SedpWorkloadEncoding encoding)
{
  SedpWorkload *w = g_new0 (SedpWorkload, 1);
  w->ref = 1;
  w->encoding = encoding;
  w->requests = g_array_new (FALSE, TRUE, sizeof (WorkloadRequest));
  g_array_set_clear_func (w->requests, workload_request_clear);
  return w;
}

SedpWorkload *
sedp_workload_ref (SedpWorkload *w)
{
  g_atomic_int_inc (&w->ref);
  return w;
}

void
sedp_workload_unref (SedpWorkload *w)
{
  if (w == NULL || !g_atomic_int_dec_and_test (&w->ref))
    return;
  g_array_unref (w->requests);
  g_free (w);
}

/* The JSON object of @line; NULL with an error naming @where. */
static JsonNode *
parse_request (const char *line, const char *where, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) e = NULL;
  if (!json_parser_load_from_data (parser, line, -1, &e)) {
    g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD,
                 "%s: invalid JSON: %s (write one PredictRequest object per line)", where,
                 e->message);
    return NULL;
  }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD,
                 "%s: a request must be a JSON object ({\"user\": …, \"items\": […]}), not %s", where,
                 root ? json_node_type_name (root) : "nothing");
    return NULL;
  }
  return json_node_ref (root);
}

gboolean
sedp_workload_add_json (SedpWorkload *w, const char *line, const char *where, GError **error)
{
  g_return_val_if_fail (w != NULL && line != NULL, FALSE);
  g_autoptr (JsonNode) root = parse_request (line, where, error);
  if (root == NULL)
    return FALSE;
  JsonObject *o = json_node_get_object (root);
  JsonNode *items = json_object_get_member (o, "items");
  WorkloadRequest r = {0};
  r.n_items = items && JSON_NODE_HOLDS_ARRAY (items) ? json_array_get_length (json_node_get_array (items)) : 0;
  if (w->encoding == SEDP_WORKLOAD_JSON) {
    r.body = g_bytes_new (line, strlen (line));
  } else {
    g_autoptr (GError) e = NULL;
    r.body = sedp_predict_pb_encode (o, &e);
    if (r.body == NULL) {
      g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD, "%s: %s", where, e->message);
      return FALSE;
    }
  }
  g_array_append_val (w->requests, r);
  return TRUE;
}

/* Adds every request line of @text (from @path); empty and '#' lines are skipped. */
static gboolean
add_lines (SedpWorkload *w, char *text, const char *path, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_strstrip (lines[i]);
    if (lines[i][0] == '\0' || lines[i][0] == '#')
      continue;
    g_autofree char *where = g_strdup_printf ("%s:%u", path, i + 1);
    if (!sedp_workload_add_json (w, lines[i], where, error))
      return FALSE;
  }
  if (w->requests->len > 0)
    return TRUE;
  g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD,
               "%s: no requests (every line is empty or a # comment); write one PredictRequest "
               "as JSON per line",
               path);
  return FALSE;
}

SedpWorkload *
sedp_workload_load (const char *path, SedpWorkloadEncoding encoding, GError **error)
{
  g_autoptr (SedpWorkload) w = sedp_workload_new (encoding);
  g_autofree char *text = NULL;
  if (path == NULL)
    return sedp_workload_add_json (w, default_request, "the built-in request", error)
             ? g_steal_pointer (&w)
             : NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  return add_lines (w, text, path, error) ? g_steal_pointer (&w) : NULL;
}

guint
sedp_workload_get_n_requests (const SedpWorkload *w)
{
  return w->requests->len;
}

SedpWorkloadEncoding
sedp_workload_get_encoding (const SedpWorkload *w)
{
  return w->encoding;
}

const char *
sedp_workload_get_content_type (const SedpWorkload *w)
{
  return w->encoding == SEDP_WORKLOAD_PROTOBUF ? SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF
                                               : SEDP_PROTOCOL_CONTENT_TYPE_JSON;
}

GBytes *
sedp_workload_get_body (const SedpWorkload *w, guint index, guint *n_items)
{
  g_return_val_if_fail (index < w->requests->len, NULL);
  const WorkloadRequest *r = &g_array_index (w->requests, WorkloadRequest, index);
  if (n_items)
    *n_items = r->n_items;
  return r->body;
}
