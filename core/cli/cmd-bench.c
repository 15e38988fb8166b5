/* sedp bench — closed-loop load generator for a served pipeline (over HTTP) or a pipeline file
 * (in process). See docs/load-testing.md. */
#include "cli.h"

#include <sedp/protocol.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- protobuf encoding of a PredictRequest given as JSON (core/proto/sedp.proto) ---- */

static void
pb_varint (GByteArray *b, guint64 v)
{
  guint8 buf[10];
  guint n = 0;
  do {
    buf[n++] = (guint8) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  g_byte_array_append (b, buf, n);
}

static void
pb_tag (GByteArray *b, guint field, guint wire)
{
  pb_varint (b, ((guint64) field << 3) | wire);
}

static void
pb_bytes (GByteArray *b, guint field, const guint8 *data, gsize len)
{
  pb_tag (b, field, 2);
  pb_varint (b, len);
  g_byte_array_append (b, data, (guint) len);
}

static void
pb_sub (GByteArray *b, guint field, GByteArray *sub)
{
  pb_bytes (b, field, sub->data, sub->len);
  g_byte_array_unref (sub);
}

static void
pb_float (GByteArray *b, float f)
{
  guint32 u;
  memcpy (&u, &f, 4);
  guint8 le[4] = {u & 0xff, (u >> 8) & 0xff, (u >> 16) & 0xff, (u >> 24) & 0xff};
  g_byte_array_append (b, le, 4);
}

static gboolean
json_int (JsonNode *n, guint64 *out)
{
  if (n == NULL || JSON_NODE_TYPE (n) != JSON_NODE_VALUE)
    return FALSE;
  GType t = json_node_get_value_type (n);
  if (t == G_TYPE_INT64) {
    *out = (guint64) json_node_get_int (n);
    return TRUE;
  }
  if (t == G_TYPE_STRING) {
    const char *s = json_node_get_string (n);
    char *end = NULL;
    if (*s == '-') {
      gint64 v = g_ascii_strtoll (s, &end, 10);
      *out = (guint64) v;
    } else
      *out = g_ascii_strtoull (s, &end, 10);
    return *s && end && *end == '\0';
  }
  return FALSE;
}

static gboolean
json_is_int (JsonNode *n)
{
  return n && JSON_NODE_TYPE (n) == JSON_NODE_VALUE && json_node_get_value_type (n) == G_TYPE_INT64;
}

static double
json_num (JsonNode *n)
{
  if (JSON_NODE_TYPE (n) != JSON_NODE_VALUE)
    return 0;
  GType t = json_node_get_value_type (n);
  if (t == G_TYPE_INT64)
    return (double) json_node_get_int (n);
  if (t == G_TYPE_DOUBLE)
    return json_node_get_double (n);
  if (t == G_TYPE_STRING)
    return g_ascii_strtod (json_node_get_string (n), NULL);
  return 0;
}

static void
pb_ids (GByteArray *feat, JsonArray *a)
{
  GByteArray *list = g_byte_array_new (), *packed = g_byte_array_new ();
  for (guint i = 0; i < json_array_get_length (a); i++) {
    guint64 v = 0;
    json_int (json_array_get_element (a, i), &v);
    pb_varint (packed, v);
  }
  if (packed->len)
    pb_bytes (list, 1, packed->data, packed->len);
  g_byte_array_unref (packed);
  pb_sub (feat, 4, list);
}

static void
pb_floats (GByteArray *feat, JsonArray *a)
{
  GByteArray *list = g_byte_array_new (), *packed = g_byte_array_new ();
  for (guint i = 0; i < json_array_get_length (a); i++)
    pb_float (packed, (float) json_num (json_array_get_element (a, i)));
  if (packed->len)
    pb_bytes (list, 1, packed->data, packed->len);
  g_byte_array_unref (packed);
  pb_sub (feat, 5, list);
}

/* A Feature message from its JSON form (object with one oneof member, or a bare value). */
static GByteArray *
pb_feature (JsonNode *n, GError **error, const char *name)
{
  GByteArray *f = g_byte_array_new ();
  if (JSON_NODE_HOLDS_OBJECT (n)) {
    JsonObject *o = json_node_get_object (n);
    JsonNode *v;
    guint64 u;
    if ((v = json_object_get_member (o, "int_value")) && json_int (v, &u)) {
      pb_tag (f, 1, 0);
      pb_varint (f, u);
    } else if ((v = json_object_get_member (o, "float_value"))) {
      pb_tag (f, 2, 5);
      pb_float (f, (float) json_num (v));
    } else if ((v = json_object_get_member (o, "string_value")) && JSON_NODE_HOLDS_VALUE (v)) {
      const char *s = json_node_get_string (v);
      pb_bytes (f, 3, (const guint8 *) (s ? s : ""), s ? strlen (s) : 0);
    } else if ((v = json_object_get_member (o, "ids"))) {
      if (JSON_NODE_HOLDS_OBJECT (v))
        v = json_object_get_member (json_node_get_object (v), "ids");
      if (v == NULL || !JSON_NODE_HOLDS_ARRAY (v))
        goto bad;
      pb_ids (f, json_node_get_array (v));
    } else if ((v = json_object_get_member (o, "floats"))) {
      if (JSON_NODE_HOLDS_OBJECT (v))
        v = json_object_get_member (json_node_get_object (v), "values");
      if (v == NULL || !JSON_NODE_HOLDS_ARRAY (v))
        goto bad;
      pb_floats (f, json_node_get_array (v));
    } else
      goto bad;
    return f;
  }
  if (JSON_NODE_HOLDS_ARRAY (n)) {
    JsonArray *a = json_node_get_array (n);
    gboolean ints = TRUE;
    for (guint i = 0; i < json_array_get_length (a); i++)
      if (!json_is_int (json_array_get_element (a, i)))
        ints = FALSE;
    if (ints)
      pb_ids (f, a);
    else
      pb_floats (f, a);
    return f;
  }
  if (JSON_NODE_HOLDS_VALUE (n)) {
    GType t = json_node_get_value_type (n);
    if (t == G_TYPE_INT64) {
      pb_tag (f, 1, 0);
      pb_varint (f, (guint64) json_node_get_int (n));
    } else if (t == G_TYPE_DOUBLE) {
      pb_tag (f, 2, 5);
      pb_float (f, (float) json_node_get_double (n));
    } else if (t == G_TYPE_STRING) {
      const char *s = json_node_get_string (n);
      pb_bytes (f, 3, (const guint8 *) s, strlen (s));
    } else
      goto bad;
    return f;
  }
bad:
  g_byte_array_unref (f);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "feature '%s': unsupported value", name);
  return NULL;
}

static gboolean
pb_features (GByteArray *msg, guint field, JsonNode *n, GError **error)
{
  if (n == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (n)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "features must be an object");
    return FALSE;
  }
  JsonObject *o = json_node_get_object (n);
  g_autoptr (GList) names = json_object_get_members (o);
  for (GList *l = names; l; l = l->next) {
    const char *name = l->data;
    GByteArray *feat = pb_feature (json_object_get_member (o, name), error, name);
    if (feat == NULL)
      return FALSE;
    GByteArray *entry = g_byte_array_new ();
    pb_bytes (entry, 1, (const guint8 *) name, strlen (name));
    pb_sub (entry, 2, feat);
    pb_sub (msg, field, entry);
  }
  return TRUE;
}

static GBytes *
encode_protobuf (JsonObject *req, GError **error)
{
  GByteArray *m = g_byte_array_new ();
  JsonNode *v;
  guint64 u;
  if ((v = json_object_get_member (req, "request_id")) && JSON_NODE_HOLDS_VALUE (v)) {
    const char *s = json_node_get_string (v);
    if (s)
      pb_bytes (m, 1, (const guint8 *) s, strlen (s));
  }
  if ((v = json_object_get_member (req, "user")) && JSON_NODE_HOLDS_OBJECT (v)) {
    JsonObject *uo = json_node_get_object (v);
    GByteArray *user = g_byte_array_new ();
    if (json_int (json_object_get_member (uo, "id"), &u)) {
      pb_tag (user, 1, 0);
      pb_varint (user, u);
    }
    if (!pb_features (user, 2, json_object_get_member (uo, "features"), error)) {
      g_byte_array_unref (user);
      g_byte_array_unref (m);
      return NULL;
    }
    pb_sub (m, 2, user);
  }
  if ((v = json_object_get_member (req, "items")) && JSON_NODE_HOLDS_ARRAY (v)) {
    JsonArray *a = json_node_get_array (v);
    for (guint i = 0; i < json_array_get_length (a); i++) {
      JsonNode *in = json_array_get_element (a, i);
      if (!JSON_NODE_HOLDS_OBJECT (in))
        continue;
      JsonObject *io = json_node_get_object (in);
      GByteArray *item = g_byte_array_new ();
      if (json_int (json_object_get_member (io, "id"), &u)) {
        pb_tag (item, 1, 0);
        pb_varint (item, u);
      }
      if (!pb_features (item, 2, json_object_get_member (io, "features"), error)) {
        g_byte_array_unref (item);
        g_byte_array_unref (m);
        return NULL;
      }
      JsonNode *e = json_object_get_member (io, "escore");
      if (e) {
        pb_tag (item, 3, 5);
        pb_float (item, (float) json_num (e));
      }
      pb_sub (m, 3, item);
    }
  }
  if (json_int (json_object_get_member (req, "deadline_ms"), &u) && u) {
    pb_tag (m, 4, 0);
    pb_varint (m, u);
  }
  if (json_int (json_object_get_member (req, "top_k"), &u) && u) {
    pb_tag (m, 5, 0);
    pb_varint (m, u);
  }
  return g_byte_array_free_to_bytes (m);
}

/* PredictResponse.status (field 2) of a serialized response; -1 when unreadable. */
static int
pb_response_status (const guint8 *p, gsize n)
{
  gsize i = 0;
  int status = 0; /* proto3: absent = OK */
  while (i < n) {
    guint64 key = 0, v = 0;
    for (int s = 0; i < n; s += 7) {
      key |= (guint64) (p[i] & 0x7f) << s;
      if (!(p[i++] & 0x80))
        break;
      if (s > 63)
        return -1;
    }
    guint wire = key & 7;
    if (wire == 0 || wire == 2) {
      for (int s = 0; i < n; s += 7) {
        v |= (guint64) (p[i] & 0x7f) << s;
        if (!(p[i++] & 0x80))
          break;
        if (s > 63)
          return -1;
      }
      if (wire == 2) {
        if (v > n - i)
          return -1;
        i += v;
      } else if ((key >> 3) == 2)
        status = (int) v;
    } else if (wire == 5)
      i += 4;
    else if (wire == 1)
      i += 8;
    else
      return -1;
  }
  return i == n ? status : -1;
}

/* ---- the requests ---- */

typedef struct {
  GBytes *body;    /* what is sent (JSON text or protobuf) */
  JsonNode *json;  /* the parsed request (in-process mode) */
  guint n_items;
} BenchRequest;

static void
bench_request_clear (gpointer p)
{
  BenchRequest *r = p;
  g_bytes_unref (r->body);
  if (r->json)
    json_node_unref (r->json);
}

static const char *default_request =
  "{\"user\": {\"id\": 42, \"features\": {\"age\": {\"int_value\": 31}}}, \"items\": ["
  "{\"id\": 1, \"features\": {\"ctr\": 0.5}}, {\"id\": 2, \"features\": {\"ctr\": 0.25}}, "
  "{\"id\": 3, \"features\": {\"ctr\": 0.125}}, {\"id\": 4, \"features\": {\"ctr\": 0.75}}, "
  "{\"id\": 5, \"features\": {\"ctr\": 0.5}}, {\"id\": 6, \"features\": {\"ctr\": 0.25}}, "
  "{\"id\": 7, \"features\": {\"ctr\": 0.125}}, {\"id\": 8, \"features\": {\"ctr\": 0.75}}]}";

static gboolean
add_request (GArray *reqs, const char *line, gboolean protobuf, const char *where, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) e = NULL;
  if (!json_parser_load_from_data (parser, line, -1, &e)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: invalid JSON: %s", where, e->message);
    return FALSE;
  }
  JsonNode *root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: a request must be a JSON object", where);
    return FALSE;
  }
  BenchRequest r = {0};
  JsonNode *items = json_object_get_member (json_node_get_object (root), "items");
  r.n_items = items && JSON_NODE_HOLDS_ARRAY (items) ? json_array_get_length (json_node_get_array (items)) : 0;
  if (protobuf) {
    r.body = encode_protobuf (json_node_get_object (root), &e);
    if (r.body == NULL) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: %s", where, e->message);
      return FALSE;
    }
  } else
    r.body = g_bytes_new (line, strlen (line));
  r.json = json_node_ref (root);
  g_array_append_val (reqs, r);
  return TRUE;
}

static GArray *
load_requests (const char *path, gboolean protobuf, GError **error)
{
  GArray *reqs = g_array_new (FALSE, TRUE, sizeof (BenchRequest));
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  g_array_set_clear_func (reqs, bench_request_clear);
  if (path == NULL) {
    if (!add_request (reqs, default_request, protobuf, "built-in request", error))
      goto fail;
    return reqs;
  }
  if (!g_file_get_contents (path, &text, NULL, error))
    goto fail;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_strstrip (lines[i]);
    if (lines[i][0] == '\0' || lines[i][0] == '#')
      continue;
    g_autofree char *where = g_strdup_printf ("%s:%u", path, i + 1);
    if (!add_request (reqs, lines[i], protobuf, where, error))
      goto fail;
  }
  if (reqs->len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: no requests", path);
    goto fail;
  }
  return reqs;
fail:
  g_array_unref (reqs);
  return NULL;
}

/* ---- the load loop ---- */

typedef struct Bench Bench;

typedef struct {
  Bench *b;
  guint index;
  gint64 started;
  SoupMessage *msg;
} Client;

struct Bench {
  GArray *reqs;
  guint next;
  gboolean protobuf, quiet;
  gint64 t0, end;
  guint active;
  GMainLoop *loop;
  /* totals */
  GArray *lat_ms; /* double, one per completed request */
  guint64 ok, errors, items;
  guint64 last_ok, last_items;
  char *first_error;
  /* HTTP */
  SoupSession *session;
  char *url;
  /* in process */
  SedpPipeline *pipeline;
  GAsyncQueue *done;
};

static void
record (Bench *b, Client *c, gboolean ok, const char *why)
{
  double ms = (double) (g_get_monotonic_time () - c->started) / 1000.0;
  if (ok) {
    b->ok++;
    b->items += g_array_index (b->reqs, BenchRequest, c->index).n_items;
    g_array_append_val (b->lat_ms, ms);
  } else {
    b->errors++;
    if (b->first_error == NULL)
      b->first_error = g_strdup (why);
  }
}

static void http_send (Client *c);

static void
on_http_done (GObject *source, GAsyncResult *res, gpointer data)
{
  Client *c = data;
  Bench *b = c->b;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);
  if (body == NULL) {
    record (b, c, FALSE, error->message);
  } else {
    guint code = soup_message_get_status (c->msg);
    gsize n;
    const guint8 *p = g_bytes_get_data (body, &n);
    if (code != 200) {
      g_autofree char *why = g_strdup_printf ("HTTP %u: %.*s", code, (int) MIN (n, 200), (const char *) p);
      record (b, c, FALSE, why);
    } else if (b->protobuf) {
      int st = pb_response_status (p, n);
      g_autofree char *why = g_strdup_printf ("response status %d", st);
      record (b, c, st == 0, why);
    } else {
      /* JSON: "status": "OK" near the start */
      gboolean ok = g_strstr_len ((const char *) p, (gssize) MIN (n, 512), "\"status\": \"OK\"") ||
                    g_strstr_len ((const char *) p, (gssize) MIN (n, 512), "\"status\":\"OK\"");
      g_autofree char *why = g_strdup_printf ("response not OK: %.*s", (int) MIN (n, 200), (const char *) p);
      record (b, c, ok, why);
    }
  }
  g_clear_object (&c->msg);
  if (g_get_monotonic_time () < b->end)
    http_send (c);
  else if (--b->active == 0)
    g_main_loop_quit (b->loop);
}

static void
http_send (Client *c)
{
  Bench *b = c->b;
  c->index = b->next++ % b->reqs->len;
  BenchRequest *r = &g_array_index (b->reqs, BenchRequest, c->index);
  c->msg = soup_message_new ("POST", b->url);
  soup_message_set_request_body_from_bytes (
    c->msg, b->protobuf ? SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF : SEDP_PROTOCOL_CONTENT_TYPE_JSON, r->body);
  c->started = g_get_monotonic_time ();
  soup_session_send_and_read_async (b->session, c->msg, G_PRIORITY_DEFAULT, NULL, on_http_done, c);
}

static void
print_progress (Bench *b, gboolean final)
{
  double t = (double) (g_get_monotonic_time () - b->t0) / 1e6;
  fprintf (stderr, "sedp bench: %5.1f s  %" G_GUINT64_FORMAT " requests (%" G_GUINT64_FORMAT
           "/s, %" G_GUINT64_FORMAT " items/s)  %" G_GUINT64_FORMAT " errors%s\n",
           t, b->ok, b->ok - b->last_ok, b->items - b->last_items, b->errors, final ? "  (done)" : "");
  b->last_ok = b->ok;
  b->last_items = b->items;
}

static gboolean
on_tick (gpointer data)
{
  print_progress (data, FALSE);
  return G_SOURCE_CONTINUE;
}

/* In process: the runtime calls back from its threads; the main thread does the bookkeeping. */
static void
on_pipeline_done (SedpRequest *request, gpointer data)
{
  Client *c = data;
  (void) request;
  g_async_queue_push (c->b->done, c);
}

static SedpRequest *
make_request (Bench *b, Client *c, guint64 serial)
{
  c->index = b->next++ % b->reqs->len;
  BenchRequest *r = &g_array_index (b->reqs, BenchRequest, c->index);
  g_autofree char *id = g_strdup_printf ("bench-%" G_GUINT64_FORMAT, serial);
  SedpRequest *req = sedp_request_new (id, 0);
  sedp_request_set_payload (req, r->body,
                            b->protobuf ? SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF : SEDP_PROTOCOL_CONTENT_TYPE_JSON);
  return req;
}

static void
run_in_process (Bench *b, Client *clients, guint n)
{
  SedpRequest **inflight = g_new0 (SedpRequest *, n);
  guint64 serial = 0;
  gint64 next_tick = b->t0 + G_USEC_PER_SEC;
  guint active = 0;
  for (guint i = 0; i < n; i++) {
    for (;;) {
      inflight[i] = make_request (b, &clients[i], serial++);
      clients[i].started = g_get_monotonic_time ();
      SedpStatus s = sedp_pipeline_submit (b->pipeline, inflight[i], on_pipeline_done, &clients[i]);
      if (s == SEDP_STATUS_OK)
        break;
      record (b, &clients[i], FALSE, sedp_status_to_string (s));
      g_clear_pointer (&inflight[i], sedp_request_unref);
      g_usleep (1000);
      if (g_get_monotonic_time () >= b->end)
        break;
    }
    if (inflight[i])
      active++;
  }
  while (active > 0) {
    Client *c = g_async_queue_timeout_pop (b->done, 100000);
    gint64 now = g_get_monotonic_time ();
    if (now >= next_tick) {
      if (!b->quiet)
        print_progress (b, FALSE);
      next_tick += G_USEC_PER_SEC;
    }
    if (c == NULL)
      continue;
    guint i = (guint) (c - clients);
    const SedpResult *res = sedp_request_get_result (inflight[i]);
    SedpStatus st = sedp_result_get_status (res);
    g_autofree char *why = g_strdup_printf ("%s: %s", sedp_status_to_string (st),
                                            sedp_result_get_message (res) ? sedp_result_get_message (res) : "");
    record (b, c, st == SEDP_STATUS_OK, why);
    g_clear_pointer (&inflight[i], sedp_request_unref);
    active--;
    while (g_get_monotonic_time () < b->end) {
      inflight[i] = make_request (b, c, serial++);
      c->started = g_get_monotonic_time ();
      SedpStatus s = sedp_pipeline_submit (b->pipeline, inflight[i], on_pipeline_done, c);
      if (s == SEDP_STATUS_OK) {
        active++;
        break;
      }
      record (b, c, FALSE, sedp_status_to_string (s));
      g_clear_pointer (&inflight[i], sedp_request_unref);
      g_usleep (1000);
    }
  }
  g_free (inflight);
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
percentile (GArray *sorted, double q)
{
  if (sorted->len == 0)
    return 0;
  guint k = (guint) ceil (q * sorted->len);
  k = k == 0 ? 0 : k - 1;
  if (k >= sorted->len)
    k = sorted->len - 1;
  return g_array_index (sorted, double, k);
}

int
sedp_cmd_bench (int argc, char **argv)
{
  gint concurrency = 1;
  gdouble duration = 10;
  char *requests_path = NULL, *format = NULL;
  gboolean quiet = FALSE;
  g_autofree char *cpus = NULL;
  const GOptionEntry entries[] = {
    {"cpus", 0, 0, G_OPTION_ARG_STRING, &cpus,
     "Run the load generator on these CPUs only (e.g. 0 or 0,2-3)", "LIST"},
    {"concurrency", 'c', 0, G_OPTION_ARG_INT, &concurrency,
     "Clients, each with one request in flight (default 1)", "C"},
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &duration,
     "Seconds to keep sending (default 10)", "S"},
    {"requests", 'r', 0, G_OPTION_ARG_FILENAME, &requests_path,
     "JSON Lines file of predict requests (the JSON of POST …:predict), sent in turn and cycled "
     "(default: one built-in request of 8 items)", "FILE"},
    {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
     "Payload encoding: json (default) or protobuf", "json|protobuf"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("bench", "URL|PIPELINE [--concurrency C] [--duration S] [--requests FILE]",
                       "Closed-loop load: C clients each send a request, wait for the answer and send "
                       "the next, for S seconds. URL is http://HOST:PORT/v1/pipelines/NAME:predict "
                       "of a running sedp serve; a PIPELINE file is loaded and driven in process. "
                       "Prints progress on stderr once a second and, at the end, RESULT lines: "
                       "requests_per_s, items_per_s, p50_ms p90_ms p99_ms p999_ms, errors "
                       "(see docs/load-testing.md).",
                       entries, &argc, &argv))
    return 2;
  g_autofree char *rp = requests_path, *fmt = format;
  if (argc != 2) {
    sedp_cli_error ("bench", "expected one URL or PIPELINE (see --help)");
    return 2;
  }
  if (concurrency < 1 || concurrency > 100000) {
    sedp_cli_error ("bench", "--concurrency must be from 1 to 100000");
    return 2;
  }
  if (!(duration > 0 && duration <= 86400)) {
    sedp_cli_error ("bench", "--duration must be more than 0 and at most 86400 seconds");
    return 2;
  }
  if (!sedp_cli_apply_cpus ("bench", cpus))
    return 2;
  gboolean protobuf = FALSE;
  if (fmt && strcmp (fmt, "protobuf") == 0)
    protobuf = TRUE;
  else if (fmt && strcmp (fmt, "json") != 0) {
    sedp_cli_error ("bench", "--format must be json or protobuf");
    return 2;
  }
  const char *target = argv[1];
  gboolean http = g_str_has_prefix (target, "http://") || g_str_has_prefix (target, "https://");
  g_autoptr (GError) error = NULL;
  if (http) {
    g_autoptr (GUri) uri = g_uri_parse (target, G_URI_FLAGS_NONE, &error);
    if (uri == NULL) {
      g_autofree char *m = g_strdup_printf ("bad URL '%s': %s", target, error->message);
      sedp_cli_error ("bench", m);
      return 2;
    }
  }
  GArray *reqs = load_requests (rp, protobuf, &error);
  if (reqs == NULL) {
    sedp_cli_error ("bench", error->message);
    return 1;
  }

  Bench b = {0};
  b.reqs = reqs;
  b.protobuf = protobuf;
  b.quiet = quiet;
  b.lat_ms = g_array_new (FALSE, FALSE, sizeof (double));
  Client *clients = g_new0 (Client, concurrency);
  for (gint i = 0; i < concurrency; i++)
    clients[i].b = &b;
  int rc = 0;

  if (http) {
    b.url = g_strdup (target);
    b.session = soup_session_new_with_options ("max-conns", concurrency + 8, "max-conns-per-host",
                                               concurrency + 8, "timeout", 60, NULL);
    b.loop = g_main_loop_new (NULL, FALSE);
    b.t0 = g_get_monotonic_time ();
    b.end = b.t0 + (gint64) (duration * G_USEC_PER_SEC);
    b.active = (guint) concurrency;
    for (gint i = 0; i < concurrency; i++)
      http_send (&clients[i]);
    guint tick = quiet ? 0 : g_timeout_add_seconds (1, on_tick, &b);
    g_main_loop_run (b.loop);
    if (tick)
      g_source_remove (tick);
    g_main_loop_unref (b.loop);
    g_object_unref (b.session);
    g_free (b.url);
  } else {
    g_auto (GStrv) path = sedp_registry_default_path ();
    g_autoptr (SedpRegistry) registry = sedp_registry_new ((const char *const *) path);
    SedpGraph *graph = sedp_graph_load (target, registry, &error);
    if (graph)
      b.pipeline = sedp_pipeline_new (graph, &error);
    if (b.pipeline == NULL || !sedp_pipeline_start (b.pipeline, &error)) {
      sedp_cli_error ("bench", error->message);
      if (b.pipeline)
        sedp_pipeline_free (b.pipeline);
      rc = 1;
      goto out;
    }
    b.done = g_async_queue_new ();
    b.t0 = g_get_monotonic_time ();
    b.end = b.t0 + (gint64) (duration * G_USEC_PER_SEC);
    run_in_process (&b, clients, (guint) concurrency);
    sedp_pipeline_stop (b.pipeline);
    sedp_pipeline_free (b.pipeline);
    g_async_queue_unref (b.done);
  }

  {
    double secs = (double) (g_get_monotonic_time () - b.t0) / 1e6;
    if (!quiet)
      print_progress (&b, TRUE);
    if (b.first_error)
      fprintf (stderr, "sedp bench: first error: %s\n", b.first_error);
    g_array_sort (b.lat_ms, cmp_double);
    printf ("RESULT requests_per_s=%.1f\n", (double) b.ok / secs);
    printf ("RESULT items_per_s=%.1f\n", (double) b.items / secs);
    printf ("RESULT p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f\n", percentile (b.lat_ms, 0.5),
            percentile (b.lat_ms, 0.9), percentile (b.lat_ms, 0.99), percentile (b.lat_ms, 0.999));
    printf ("RESULT errors=%" G_GUINT64_FORMAT "\n", b.errors);
    fflush (stdout);
  }
out:
  g_free (b.first_error);
  g_array_unref (b.lat_ms);
  g_array_unref (reqs);
  g_free (clients);
  return rc;
}
