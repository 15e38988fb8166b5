/* stamp — a test stage that writes what it saw into columns, so that tests can check which
 * request, item, batch and frame every row went through:
 *   <tag>_req   int64  a hash of the request id
 *   <tag>_item  int64  the row's item index (request frames: -1)
 *   <tag>_batch int64  events in the process call
 *   <tag>_rows  int64  rows of the frame
 * It can sleep a random time per call (delay_us), make the items of a source from the payload
 * (make_items: the payload is the item count in decimal), and pass request-scope data on
 * (set_data) or check it (check_data), and write the load it read (load: <tag>_inflight,
 * <tag>_items_inflight, <tag>_downstream_p99_us, <tag>_downstream_capacity, <tag>_entry_capacity,
 * <tag>_remaining_us). With `branches` it is a router (docs/routing.md): `route = id` routes each
 * event to the branches named after the last ':' of its request id, '+'-separated ("r7:a+b";
 * "r7:" routes nowhere); `route = frame` routes item frame J to branch J mod the branch count. */
#include <sedp/sedp.h>

#include <stdlib.h>
#include <string.h>

typedef struct {
  char *tag;
  gint64 delay_us;
  gboolean fixed_delay;
  gboolean make_items;
  gboolean set_data;
  gboolean check_data;
  gboolean load;
  char **branches;
  gboolean route_frame;
  SedpStageContext *ctx;
} Stamp;

static gint64
hash_id (const char *id)
{
  return (gint64) (g_str_hash (id) & 0x7fffffff);
}

static gpointer
stamp_create (SedpStageContext *ctx, GError **error)
{
  Stamp *s = g_new0 (Stamp, 1);
  const char *tag = sedp_stage_context_get_string (ctx, "tag");
  s->tag = g_strdup (tag && *tag ? tag : sedp_stage_context_get_name (ctx));
  s->delay_us = sedp_stage_context_get_int (ctx, "delay_us");
  s->fixed_delay = sedp_stage_context_get_bool (ctx, "fixed_delay");
  s->make_items = sedp_stage_context_get_bool (ctx, "make_items");
  s->set_data = sedp_stage_context_get_bool (ctx, "set_data");
  s->check_data = sedp_stage_context_get_bool (ctx, "check_data");
  s->load = sedp_stage_context_get_bool (ctx, "load");
  const char *const *branches = sedp_stage_context_get_strv (ctx, "branches");
  s->branches = branches && branches[0] ? g_strdupv ((char **) branches) : NULL;
  s->route_frame = g_strcmp0 (sedp_stage_context_get_string (ctx, "route"), "frame") == 0;
  s->ctx = ctx;
  return s;
}

static void
stamp_column (SedpFrame *f, const char *tag, const char *what, gint64 (*value) (SedpFrame *, guint, gpointer),
              gpointer data)
{
  g_autofree char *name = g_strdup_printf ("%s_%s", tag, what);
  gint64 *v = sedp_column_int64_data (sedp_frame_add_column (f, name, SEDP_COLUMN_INT64, 1));
  for (guint r = 0; r < sedp_frame_get_n_rows (f); r++)
    v[r] = value (f, r, data);
}

static gint64
v_const (SedpFrame *f, guint r, gpointer data)
{
  return *(gint64 *) data;
}

static gint64
v_item (SedpFrame *f, guint r, gpointer data)
{
  return *(gboolean *) data ? -1 : (gint64) sedp_frame_get_item_index (f, r);
}

static void
stamp_load (Stamp *s, SedpFrame *f, SedpRequest *req)
{
  SedpLoadSnapshot l;
  sedp_stage_context_read_load (s->ctx, &l);
  gint64 v[] = {l.requests_in_flight, l.items_in_flight, (gint64) l.downstream_p99_us,
                l.downstream_capacity, l.entry_capacity, sedp_request_get_remaining_us (req)};
  const char *what[] = {"inflight", "items_inflight", "downstream_p99_us", "downstream_capacity",
                        "entry_capacity", "remaining_us"};
  for (guint k = 0; k < G_N_ELEMENTS (v); k++)
    stamp_column (f, s->tag, what[k], v_const, &v[k]);
}

static char **
stamp_branches (const SedpStageContext *ctx, GError **error)
{
  const char *const *branches = sedp_stage_context_get_strv (ctx, "branches");
  return branches && branches[0] ? g_strdupv ((char **) branches) : NULL;
}

static void
stamp_route (Stamp *s, SedpEvent *ev, const char *rid)
{
  guint n = g_strv_length (s->branches);
  if (s->route_frame) {
    sedp_event_route (ev, (guint) MAX (sedp_event_get_frame_index (ev), 0) % n);
    return;
  }
  const char *colon = strrchr (rid, ':');
  g_auto (GStrv) names = g_strsplit (colon ? colon + 1 : "", "+", -1);
  for (guint k = 0; names[k]; k++)
    for (guint b = 0; b < n; b++)
      if (strcmp (names[k], s->branches[b]) == 0)
        sedp_event_route (ev, b);
}

static gboolean
stamp_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
               GError **error)
{
  Stamp *s = instance;
  if (s->delay_us > 0)
    g_usleep (s->fixed_delay ? (gulong) s->delay_us
                             : (gulong) g_random_int_range (0, (gint32) s->delay_us + 1));
  for (guint e = 0; e < n_events; e++) {
    SedpEvent *ev = events[e];
    SedpRequest *req = sedp_event_get_request (ev);
    SedpFrame *f = sedp_event_get_frame (ev);
    const char *rid = sedp_request_get_id (req);
    if (s->make_items) {
      gsize size = 0;
      const guint8 *payload = sedp_request_get_payload (req, &size, NULL);
      g_autofree char *text = g_strndup ((const char *) payload, size);
      guint n = (guint) strtoul (text ? text : "0", NULL, 10);
      SedpFrame *items = sedp_frame_new (n);
      gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
      for (guint i = 0; i < n; i++)
        ids[i] = 1000 + i;
      sedp_event_set_items (ev, items);
    }
    if (s->set_data)
      sedp_request_set_data (req, "stamp.rid", g_strdup (rid), g_free);
    if (s->check_data) {
      const char *seen = sedp_request_get_data (req, "stamp.rid");
      if (g_strcmp0 (seen, rid) != 0) {
        GError *err = g_error_new (SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                                   "request data is '%s', expected '%s'", seen ? seen : "(none)", rid);
        sedp_event_fail (ev, err);
        g_error_free (err);
        continue;
      }
    }
    gboolean is_request = sedp_event_get_frame_index (ev) == SEDP_FRAME_INDEX_REQUEST &&
                          !sedp_frame_get_column (f, "item_id");
    gint64 h = hash_id (rid), batch = n_events, rows = sedp_frame_get_n_rows (f);
    stamp_column (f, s->tag, "req", v_const, &h);
    stamp_column (f, s->tag, "item", v_item, &is_request);
    stamp_column (f, s->tag, "batch", v_const, &batch);
    stamp_column (f, s->tag, "rows", v_const, &rows);
    if (s->load)
      stamp_load (s, f, req);
    if (s->branches)
      stamp_route (s, ev, rid);
  }
  return TRUE;
}

static void
stamp_destroy (gpointer instance)
{
  Stamp *s = instance;
  g_free (s->tag);
  g_strfreev (s->branches);
  g_free (s);
}

static const SedpOptionSpec stamp_options[] = {
  SEDP_OPTION_STRING_SPEC ("tag", NULL, "Column prefix (default: the stage name)"),
  SEDP_OPTION_INT_SPEC ("delay_us", "0", 0, 1000000, "Random delay per call, up to this"),
  SEDP_OPTION_BOOL_SPEC ("fixed_delay", "false", "Sleep delay_us exactly, not a random part of it"),
  SEDP_OPTION_BOOL_SPEC ("make_items", "false", "Make N items from a payload holding N"),
  SEDP_OPTION_BOOL_SPEC ("set_data", "false", "Attach the request id as request data"),
  SEDP_OPTION_BOOL_SPEC ("check_data", "false", "Fail events whose request data is not their id"),
  SEDP_OPTION_BOOL_SPEC ("load", "false", "Write the load snapshot read in process"),
  SEDP_OPTION_LIST_SPEC ("branches", NULL, "A router's branches (none: not a router)"),
  SEDP_OPTION_ENUM_SPEC ("route", "id", "id|frame", "Route by the request id's suffix or by frame"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "stamp", .version = "1.0", .description = "Test stage that stamps rows",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = stamp_options,
                   .create = stamp_create, .process = stamp_process, .destroy = stamp_destroy,
                   .branches = stamp_branches);
