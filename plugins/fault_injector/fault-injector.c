/* fault_injector — fails, sheds or degrades chosen rows and requests, to test error isolation,
 * shedding, error reporting and what counts degraded answers (sedp tune). */
#include <sedp/sedp.h>

#include <string.h>

typedef struct {
  GHashTable *fail_items;    /* item index + 1 */
  GHashTable *drop_items;
  GHashTable *answer_items;
  GHashTable *degrade_items; /* passed on unchanged, counted as degraded */
  GHashTable *fail_requests; /* request ids */
  GHashTable *drop_requests;
  gboolean fail_batch;
  char *message;
  SedpCounter *injected, *degraded;
} FaultInjector;

static GHashTable *
index_set (const char *const *list, GError **error, const char *option)
{
  GHashTable *set = g_hash_table_new (NULL, NULL);
  for (guint i = 0; list && list[i]; i++) {
    guint64 v;
    if (!g_ascii_string_to_unsigned (list[i], 10, 0, G_MAXUINT32 - 1, &v, NULL)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "%s: '%s' is not an item index", option, list[i]);
      g_hash_table_unref (set);
      return NULL;
    }
    g_hash_table_add (set, GUINT_TO_POINTER ((guint) v + 1));
  }
  return set;
}

static GHashTable *
string_set (const char *const *list)
{
  GHashTable *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; list && list[i]; i++)
    g_hash_table_add (set, g_strdup (list[i]));
  return set;
}

static void
fault_destroy (gpointer instance)
{
  FaultInjector *f = instance;
  g_clear_pointer (&f->fail_items, g_hash_table_unref);
  g_clear_pointer (&f->drop_items, g_hash_table_unref);
  g_clear_pointer (&f->answer_items, g_hash_table_unref);
  g_clear_pointer (&f->degrade_items, g_hash_table_unref);
  g_clear_pointer (&f->fail_requests, g_hash_table_unref);
  g_clear_pointer (&f->drop_requests, g_hash_table_unref);
  g_free (f->message);
  g_free (f);
}

static gpointer
fault_create (SedpStageContext *ctx, GError **error)
{
  if (sedp_stage_context_get_bool (ctx, "fail_create")) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "fail_create is set: refusing to start");
    return NULL;
  }
  FaultInjector *f = g_new0 (FaultInjector, 1);
  f->fail_items = index_set (sedp_stage_context_get_strv (ctx, "fail_items"), error, "fail_items");
  f->drop_items = f->fail_items ? index_set (sedp_stage_context_get_strv (ctx, "drop_items"), error, "drop_items") : NULL;
  f->answer_items = f->drop_items ? index_set (sedp_stage_context_get_strv (ctx, "answer_items"), error, "answer_items") : NULL;
  f->degrade_items = f->answer_items ? index_set (sedp_stage_context_get_strv (ctx, "degrade_items"), error, "degrade_items") : NULL;
  if (f->degrade_items == NULL) {
    fault_destroy (f);
    return NULL;
  }
  f->fail_requests = string_set (sedp_stage_context_get_strv (ctx, "fail_requests"));
  f->drop_requests = string_set (sedp_stage_context_get_strv (ctx, "drop_requests"));
  f->fail_batch = sedp_stage_context_get_bool (ctx, "fail_batch");
  f->message = g_strdup (sedp_stage_context_get_string (ctx, "message"));
  f->injected = sedp_stage_context_add_counter (ctx, "faults_injected_total", "Rows or events failed, shed or degraded on purpose");
  f->degraded = sedp_stage_context_add_degraded_counter (ctx, "faults_degraded_rows_total", "Rows answered as if with stand-in values, on purpose");
  return f;
}

static gboolean
fault_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
               GError **error)
{
  FaultInjector *f = instance;
  for (guint e = 0; e < n_events; e++) {
    SedpEvent *ev = events[e];
    const char *rid = sedp_request_get_id (sedp_event_get_request (ev));
    if (g_hash_table_contains (f->fail_requests, rid)) {
      sedp_counter_add (f->injected, 1);
      if (f->fail_batch) {
        /* Fail the whole call: the runtime must retry the others alone. */
        g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL, "%s (request %s)",
                     f->message, rid);
        return FALSE;
      }
      GError *err = g_error_new (SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INTERNAL, "%s (request %s)",
                                 f->message, rid);
      sedp_event_fail (ev, err);
      g_error_free (err);
      continue;
    }
    if (g_hash_table_contains (f->drop_requests, rid)) {
      sedp_counter_add (f->injected, 1);
      sedp_event_drop (ev);
      continue;
    }
    SedpFrame *frame = sedp_event_get_frame (ev);
    if (!sedp_frame_has_item_rows (frame))
      continue;
    for (guint r = 0; r < sedp_frame_get_n_rows (frame); r++) {
      gpointer key = GUINT_TO_POINTER (sedp_frame_get_item_index (frame, r) + 1);
      if (g_hash_table_contains (f->fail_items, key)) {
        sedp_frame_fail_row (frame, r, f->message);
        sedp_counter_add (f->injected, 1);
      } else if (g_hash_table_contains (f->drop_items, key)) {
        sedp_frame_drop_row (frame, r);
        sedp_counter_add (f->injected, 1);
      } else if (g_hash_table_contains (f->answer_items, key)) {
        sedp_frame_answer_row (frame, r);
        sedp_counter_add (f->injected, 1);
      } else if (g_hash_table_contains (f->degrade_items, key)) {
        sedp_counter_add (f->degraded, 1);
        sedp_counter_add (f->injected, 1);
      }
    }
  }
  return TRUE;
}

static const SedpOptionSpec fault_options[] = {
  SEDP_OPTION_LIST_SPEC ("fail_items", NULL, "Item indexes whose rows fail"),
  SEDP_OPTION_LIST_SPEC ("drop_items", NULL, "Item indexes whose rows are shed"),
  SEDP_OPTION_LIST_SPEC ("answer_items", NULL, "Item indexes whose rows are answered early (as from a cache)"),
  SEDP_OPTION_LIST_SPEC ("degrade_items", NULL, "Item indexes whose rows pass unchanged but are counted as degraded answers (faults_degraded_rows_total), as a lookup answered with default values is"),
  SEDP_OPTION_LIST_SPEC ("fail_requests", NULL, "Request ids whose events fail"),
  SEDP_OPTION_LIST_SPEC ("drop_requests", NULL, "Request ids whose events are shed"),
  SEDP_OPTION_BOOL_SPEC ("fail_batch", "false", "Fail the whole process call (not just the event) when it holds a failing request"),
  SEDP_OPTION_STRING_SPEC ("message", "injected failure", "Error message of injected failures"),
  SEDP_OPTION_BOOL_SPEC ("fail_create", "false", "Fail when the stage is created"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "fault_injector", .version = SEDP_VERSION,
                   .description = "Fails or sheds chosen rows and requests (for tests)",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = fault_options,
                   .create = fault_create, .process = fault_process, .destroy = fault_destroy);
