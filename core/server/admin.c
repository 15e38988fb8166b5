/* sedp — the admin API (reload, rollback; a bearer token compared in constant time), the
 * models' status (GET /v1/models/NAME) and their /metrics families. docs/model-lifecycle.md. */
#include "admin.h"

#include "reload.h"

#include <sodium.h>
#include <string.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

#define ADMIN_PREFIX "/v1/admin/models/"
#define MODELS_PREFIX "/v1/models/"

/* ---- the token ---- */

char *
admin_read_token (const char *path, GError **error)
{
  GStatBuf st;
  if (g_stat (path, &st) == 0 && (st.st_mode & 077) != 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "%s: the admin token file is readable or writable by others (mode %03o): "
                 "chmod 600 %s", path, (unsigned) (st.st_mode & 0777), path);
    return NULL;
  }
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  char *nl = strchr (text, '\n');
  if (nl)
    *nl = '\0';
  g_strstrip (text);
  gsize n = strlen (text);
  char *token = NULL;
  if (n < ADMIN_TOKEN_MIN_CHARS)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "%s: the admin token has %zu characters, fewer than %u: write a longer one "
                 "(e.g. 32 random hex digits) on its first line", path, n, ADMIN_TOKEN_MIN_CHARS);
  else
    token = g_strdup (text);
  sodium_memzero (text, n);
  return token;
}

/* Whether @msg carries the server's token: both are hashed first, so that the comparison
 * takes the same time whatever their lengths and contents. */
static gboolean
authorized (SedpServer *server, SoupServerMessage *msg)
{
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  const char *auth = soup_message_headers_get_one (h, "Authorization");
  if (auth == NULL || g_ascii_strncasecmp (auth, "Bearer ", 7) != 0)
    return FALSE;
  const char *given = auth + 7;
  guint8 a[crypto_generichash_BYTES], b[crypto_generichash_BYTES];
  crypto_generichash (a, sizeof a, (const guint8 *) given, strlen (given), NULL, 0);
  crypto_generichash (b, sizeof b, (const guint8 *) server->admin_token,
                      strlen (server->admin_token), NULL, 0);
  return sodium_memcmp (a, b, sizeof a) == 0;
}

/* ---- finding a model ---- */

/* The served pipeline reloading model @name (the one named @pipeline when given), or NULL. */
static Served *
find_model (SedpServer *server, const char *name, const char *pipeline)
{
  for (guint i = 0; i < server->served->len; i++) {
    Served *s = server->served->pdata[i];
    if (s->reloader && strcmp (s->reloader->model, name) == 0 &&
        (pipeline == NULL || strcmp (s->name, pipeline) == 0))
      return s;
  }
  return NULL;
}

/* ---- reload and rollback ---- */

typedef struct {
  SoupServerMessage *msg;  /* referenced, paused */
  Served *served;
  gint64 previous;
} AdminCall;

static const char *
result_name (SedpReloadResult r)
{
  static const char *const names[] = {"failed", "unchanged", "loaded", "rolled_back"};
  return names[r];
}

/* The HTTP status of a failed reload (docs/model-lifecycle.md#the-admin-api). */
static guint
failure_status (const GError *error)
{
  if (error->domain == SEDP_BUNDLE_ERROR)
    return error->code == SEDP_BUNDLE_ERROR_NO_VERSION ? SOUP_STATUS_NOT_FOUND
                                                       : SOUP_STATUS_UNPROCESSABLE_ENTITY;
  if (error->domain == SEDP_RELOAD_ERROR)
    return error->code == SEDP_RELOAD_ERROR_BUSY     ? SOUP_STATUS_CONFLICT
           : error->code == SEDP_RELOAD_ERROR_INPUTS ? SOUP_STATUS_UNPROCESSABLE_ENTITY
                                                     : SOUP_STATUS_INTERNAL_SERVER_ERROR;
  return SOUP_STATUS_INTERNAL_SERVER_ERROR;
}

static void
admin_done (SedpReloadResult result, gint64 version, const GError *error, double load_s,
            double warmup_s, gint64 swap_us, gpointer data)
{
  AdminCall *c = data;
  soup_server_message_unpause (c->msg);
  if (result == SEDP_RELOAD_FAILED)
    server_respond_error (c->msg, failure_status (error), error->message);
  else {
    g_autoptr (JsonBuilder) b = json_builder_new ();
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "model");
    json_builder_add_string_value (b, c->served->reloader->model);
    json_builder_set_member_name (b, "pipeline");
    json_builder_add_string_value (b, c->served->name);
    json_builder_set_member_name (b, "version");
    json_builder_add_int_value (b, version);
    json_builder_set_member_name (b, "previous");
    json_builder_add_int_value (b, c->previous);
    json_builder_set_member_name (b, "result");
    json_builder_add_string_value (b, result_name (result));
    gboolean swapped = result != SEDP_RELOAD_UNCHANGED;
    json_builder_set_member_name (b, "load_ms");
    json_builder_add_double_value (b, swapped ? load_s * 1e3 : 0);
    json_builder_set_member_name (b, "warmup_ms");
    json_builder_add_double_value (b, swapped ? warmup_s * 1e3 : 0);
    json_builder_set_member_name (b, "swap_us");
    json_builder_add_int_value (b, swapped ? swap_us : 0);
    json_builder_end_object (b);
    server_respond_json (c->msg, SOUP_STATUS_OK, b);
  }
  g_object_unref (c->msg);
  g_free (c);
}

/* ?version=V, or 0 when absent; -1 (answered 400) when malformed. */
static gint64
query_version (SoupServerMessage *msg, GHashTable *query)
{
  const char *text = query ? g_hash_table_lookup (query, "version") : NULL;
  if (text == NULL)
    return 0;
  g_autoptr (GError) error = NULL;
  gint64 v = sedp_bundle_version_parse (text, &error);
  if (v <= 0) {
    server_respond_error (msg, SOUP_STATUS_BAD_REQUEST, error->message);
    return -1;
  }
  return v;
}

static void
admin_reload (SedpServer *server, SoupServerMessage *msg, Served *s, gboolean rollback,
              GHashTable *query)
{
  gint64 want = query_version (msg, query);
  if (want < 0)
    return;
  if (rollback && want == 0 && (want = s->reloader->previous) == 0) {
    g_autofree char *m = g_strdup_printf ("model '%s': no previous version to roll back to "
                                          "(name one: ?version=V)", s->reloader->model);
    server_respond_error (msg, SOUP_STATUS_CONFLICT, m);
    return;
  }
  AdminCall *c = g_new0 (AdminCall, 1);
  c->msg = g_object_ref (msg);
  c->served = s;
  c->previous = reloader_serving (s->reloader)->version;
  g_autoptr (GError) error = NULL;
  soup_server_message_pause (msg);
  if (!reload_start (server, s, want, rollback, "admin", admin_done, c, &error)) {
    soup_server_message_unpause (msg);
    server_respond_error (msg, failure_status (error), error->message);
    g_object_unref (c->msg);
    g_free (c);
  }
}

/* POST /v1/admin/models/NAME:reload|:rollback[?version=V][&pipeline=P] */
static void
handle_admin (SedpServer *server, SoupServerMessage *msg, const char *rest, GHashTable *query)
{
  if (!authorized (server, msg)) {
    soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                  "WWW-Authenticate", "Bearer realm=\"sedp-admin\"");
    server_respond_error (msg, SOUP_STATUS_UNAUTHORIZED,
                          "the admin API needs the server's token: Authorization: Bearer TOKEN");
    return;
  }
  const char *colon = strrchr (rest, ':');
  gboolean reload = colon && strcmp (colon, ":reload") == 0;
  if (colon == NULL || (!reload && strcmp (colon, ":rollback") != 0)) {
    g_autofree char *m = g_strdup_printf ("no such endpoint: %s%s (expected %sNAME:reload or "
                                          ":rollback)", ADMIN_PREFIX, rest, ADMIN_PREFIX);
    server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
    return;
  }
  if (strcmp (soup_server_message_get_method (msg), SOUP_METHOD_POST) != 0) {
    server_method_not_allowed (msg, "POST");
    return;
  }
  g_autofree char *name = g_strndup (rest, (gsize) (colon - rest));
  Served *s = find_model (server, name, query ? g_hash_table_lookup (query, "pipeline") : NULL);
  if (s == NULL) {
    g_autofree char *m = g_strdup_printf ("no served pipeline has a [model %s] group", name);
    server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
    return;
  }
  admin_reload (server, msg, s, !reload, query);
}

/* ---- GET /v1/models/NAME ---- */

static void
add_time (JsonBuilder *b, const char *member, GDateTime *t)
{
  json_builder_set_member_name (b, member);
  if (t == NULL) {
    json_builder_add_null_value (b);
    return;
  }
  g_autofree char *text = g_date_time_format (t, "%Y-%m-%dT%H:%M:%SZ");
  json_builder_add_string_value (b, text);
}

static void
add_version (JsonBuilder *b, const Reloader *r, gint64 version, const char *state, GDateTime *at,
             const SedpGraphModel *m)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "version");
  json_builder_add_int_value (b, version);
  json_builder_set_member_name (b, "state");
  json_builder_add_string_value (b, state);
  add_time (b, "loaded_at", at);
  json_builder_set_member_name (b, "signature");
  json_builder_add_string_value (b, r->keyed ? "verified" : "unchecked");
  if (m) {
    json_builder_set_member_name (b, "created");
    json_builder_add_string_value (b, m->manifest->created ? m->manifest->created : "");
    json_builder_set_member_name (b, "bundle");
    json_builder_add_string_value (b, m->dir);
  }
  json_builder_end_object (b);
}

static void
add_model (JsonBuilder *b, const Served *s)
{
  const Reloader *r = s->reloader;
  const SedpGraphModel *m = reloader_serving (r);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, r->model);
  json_builder_set_member_name (b, "pipeline");
  json_builder_add_string_value (b, s->name);
  json_builder_set_member_name (b, "repository");
  json_builder_add_string_value (b, r->repository);
  json_builder_set_member_name (b, "policy");
  g_autofree char *pinned = g_strdup_printf ("pinned %" G_GINT64_FORMAT, r->pinned);
  json_builder_add_string_value (b, r->pinned ? pinned : "latest");
  json_builder_set_member_name (b, "state");
  json_builder_add_string_value (b, s->ready ? "available" : "loading");
  json_builder_set_member_name (b, "reloading");
  json_builder_add_boolean_value (b, r->loading);
  json_builder_set_member_name (b, "probation");
  json_builder_add_boolean_value (b, r->probation_until > 0);
  json_builder_set_member_name (b, "versions");
  json_builder_begin_array (b);
  add_version (b, r, m->version, "serving", s->current->loaded_at, m);
  if (r->previous)
    add_version (b, r, r->previous, "previous", r->previous_loaded_at, NULL);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "rejected");
  json_builder_begin_array (b);
  for (guint i = 0; i < r->rejected->len; i++)
    json_builder_add_int_value (b, g_array_index (r->rejected, gint64, i));
  json_builder_end_array (b);
  json_builder_set_member_name (b, "last_error");
  if (r->last_error)
    json_builder_add_string_value (b, r->last_error);
  else
    json_builder_add_null_value (b);
  json_builder_end_object (b);
}

/* TF Serving's GetModelStatus member (docs/compat.md), beside sedp's own: the serving version of
 * each pipeline with a [model NAME] group (AVAILABLE, or LOADING while it warms up). */
static void
add_tfs_status (JsonBuilder *b, SedpServer *server, const char *name)
{
  json_builder_set_member_name (b, "model_version_status");
  json_builder_begin_array (b);
  for (guint i = 0; i < server->served->len; i++) {
    const Served *s = server->served->pdata[i];
    if (s->reloader == NULL || strcmp (s->reloader->model, name) != 0)
      continue;
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "version");
    g_autofree char *v = g_strdup_printf ("%" G_GINT64_FORMAT, reloader_serving (s->reloader)->version);
    json_builder_add_string_value (b, v);
    json_builder_set_member_name (b, "state");
    json_builder_add_string_value (b, s->ready ? "AVAILABLE" : "LOADING");
    json_builder_set_member_name (b, "status");
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "error_code");
    json_builder_add_string_value (b, "OK");
    json_builder_set_member_name (b, "error_message");
    json_builder_add_string_value (b, "");
    json_builder_end_object (b);
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
}

static void
handle_model_status (SedpServer *server, SoupServerMessage *msg, const char *name)
{
  const char *method = soup_server_message_get_method (msg);
  if (strcmp (method, SOUP_METHOD_GET) != 0 && strcmp (method, SOUP_METHOD_HEAD) != 0) {
    server_method_not_allowed (msg, "GET, HEAD");
    return;
  }
  g_autoptr (JsonBuilder) b = json_builder_new ();
  guint n = 0;
  for (guint i = 0; i < server->served->len; i++) {
    const Served *s = server->served->pdata[i];
    if (s->reloader == NULL || strcmp (s->reloader->model, name) != 0)
      continue;
    if (n++ == 0) {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "pipelines");
      json_builder_begin_array (b);
    }
    add_model (b, s);
  }
  if (n == 0) {
    g_autofree char *m = g_strdup_printf ("no served pipeline has a [model %s] group", name);
    server_respond_error (msg, SOUP_STATUS_NOT_FOUND, m);
    return;
  }
  json_builder_end_array (b);
  add_tfs_status (b, server, name);
  json_builder_end_object (b);
  server_respond_json (msg, SOUP_STATUS_OK, b);
}

gboolean
admin_handle (SedpServer *server, SoupServerMessage *msg, const char *path, GHashTable *query)
{
  if (g_str_has_prefix (path, MODELS_PREFIX) && strchr (path + strlen (MODELS_PREFIX), '/') == NULL &&
      strchr (path + strlen (MODELS_PREFIX), ':') == NULL) {
    handle_model_status (server, msg, path + strlen (MODELS_PREFIX));
    return TRUE;
  }
  /* Without a token the admin API does not exist: the caller answers 404. */
  if (server->admin_token == NULL || !g_str_has_prefix (path, ADMIN_PREFIX))
    return FALSE;
  handle_admin (server, msg, path + strlen (ADMIN_PREFIX), query);
  return TRUE;
}

/* ---- /metrics ---- */

typedef void (*SampleFunc) (GString *out, const char *family, const char *labels, const Reloader *r);

static void
family (SedpServer *server, GString *out, const char *name, const char *type, const char *help,
        SampleFunc sample)
{
  gboolean any = FALSE;
  for (guint i = 0; i < server->served->len; i++) {
    const Served *s = server->served->pdata[i];
    if (s->reloader == NULL)
      continue;
    if (!any)
      g_string_append_printf (out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    any = TRUE;
    g_autofree char *labels = g_strdup_printf ("pipeline=\"%s\",model=\"%s\"", s->name,
                                               s->reloader->model);
    sample (out, name, labels, s->reloader);
  }
}

static void
sample_version (GString *out, const char *f, const char *labels, const Reloader *r)
{
  g_string_append_printf (out, "%s{%s} %" G_GINT64_FORMAT "\n", f, labels,
                          reloader_serving (r)->version);
}

static void
sample_reloads (GString *out, const char *f, const char *labels, const Reloader *r)
{
  g_string_append_printf (out, "%s{%s,result=\"loaded\"} %" G_GUINT64_FORMAT "\n", f, labels, r->n_loaded);
  g_string_append_printf (out, "%s{%s,result=\"unchanged\"} %" G_GUINT64_FORMAT "\n", f, labels, r->n_unchanged);
  g_string_append_printf (out, "%s{%s,result=\"failed\"} %" G_GUINT64_FORMAT "\n", f, labels, r->n_failed);
}

static void
sample_rollbacks (GString *out, const char *f, const char *labels, const Reloader *r)
{
  g_string_append_printf (out, "%s{%s,reason=\"admin\"} %" G_GUINT64_FORMAT "\n", f, labels, r->n_rollbacks_admin);
  g_string_append_printf (out, "%s{%s,reason=\"guard\"} %" G_GUINT64_FORMAT "\n", f, labels, r->n_rollbacks_guard);
}

static void
sample_swap (GString *out, const char *f, const char *labels, const Reloader *r)
{
  g_string_append_printf (out, "%s{%s} %.6f\n", f, labels, (double) r->swap_us_max / 1e6);
}

static void
sample_load (GString *out, const char *f, const char *labels, const Reloader *r)
{
  g_string_append_printf (out, "%s{%s} %g\n", f, labels, r->load_s_last);
}

void
admin_write_metrics (SedpServer *server, GString *out)
{
  family (server, out, "sedp_model_version", "gauge", "The version of the model serving",
          sample_version);
  family (server, out, "sedp_model_reloads_total", "counter",
          "Reloads of the model by result (rollbacks not included)", sample_reloads);
  family (server, out, "sedp_model_rollbacks_total", "counter",
          "Rollbacks of the model, asked for (admin) or by a probation guard", sample_rollbacks);
  family (server, out, "sedp_model_swap_seconds_max", "gauge",
          "The longest swap of a version into service, seconds", sample_swap);
  family (server, out, "sedp_model_load_seconds_last", "gauge",
          "Seconds the last version took to load, before its warm-up", sample_load);
}
