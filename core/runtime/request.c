/* sedp — requests: context for plugins, item bookkeeping, completion and results. */
#include "runtime-private.h"

#include <string.h>

const char *
sedp_status_to_string (SedpStatus status)
{
  static const char *const names[] = {"ok", "partial", "failed", "timeout", "overloaded", "cancelled"};
  return status <= SEDP_STATUS_CANCELLED ? names[status] : "invalid";
}

const char *
sedp_item_status_to_string (SedpItemStatus status)
{
  static const char *const names[] = {"pending", "scored", "dropped", "failed", "cached", "shed"};
  return status <= SEDP_ITEM_SHED ? names[status] : "invalid";
}

SedpRequest *
sedp_request_new (const char *id, gint64 deadline)
{
  SedpRequest *r = g_new0 (SedpRequest, 1);
  r->ref_count = 1;
  r->id = g_strdup (id ? id : "");
  r->deadline = deadline;
  r->heap_pos = -1;
  g_mutex_init (&r->lock);
  return r;
}

void
sedp_request_set_timeout (SedpRequest *r, gint64 timeout_us)
{
  g_return_if_fail (r != NULL && timeout_us >= 0);
  r->timeout_us = timeout_us;
  r->deadline = 0;
}

void
sedp_request_set_start (SedpRequest *r, gint64 start_us)
{
  g_return_if_fail (r != NULL && start_us >= 0);
  r->started_at = start_us;
}

void
sedp_request_set_frames (SedpRequest *r, SedpFrame *request_frame, SedpFrame *items)
{
  g_return_if_fail (r != NULL);
  if (r->request_frame)
    sedp_frame_unref (r->request_frame);
  if (r->items)
    sedp_frame_unref (r->items);
  r->request_frame = request_frame;
  r->items = items;
}

void
sedp_request_set_payload (SedpRequest *r, GBytes *payload, const char *content_type)
{
  g_return_if_fail (r != NULL);
  g_clear_pointer (&r->payload, g_bytes_unref);
  g_free (r->content_type);
  r->payload = payload ? g_bytes_ref (payload) : NULL;
  r->content_type = g_strdup (content_type);
}

SedpRequest *
sedp_request_ref (SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, NULL);
  g_atomic_int_inc (&r->ref_count);
  return r;
}

/* Frees what a request holds while it runs (frames of the joins and the cut items). */
static void
release_runtime_state (SedpRequest *r)
{
  if (r->joins && r->pipeline) {
    for (guint i = 0; i < r->pipeline->n_stages; i++)
      sedp_join_slot_free (r->joins[i]);
  }
  g_clear_pointer (&r->joins, g_free);
  if (r->item_frames) {
    for (guint j = 0; j < r->n_frames; j++)
      sedp_frame_unref (r->item_frames[j]);
    g_clear_pointer (&r->item_frames, g_free);
  }
}

void
sedp_request_unref (SedpRequest *r)
{
  if (r == NULL || !g_atomic_int_dec_and_test (&r->ref_count))
    return;
  release_runtime_state (r);
  SedpResult *res = &r->result;
  g_free (res->message);
  g_clear_error (&res->error);
  g_free (res->item_status);
  if (res->item_message) {
    for (guint i = 0; i < res->n_items; i++)
      g_free (res->item_message[i]);
    g_free (res->item_message);
  }
  if (res->frames)
    g_ptr_array_unref (res->frames);
  if (res->routes)
    g_ptr_array_unref (res->routes);
  g_free (res->item_frame);
  g_free (res->item_row);
  if (res->request_frame)
    sedp_frame_unref (res->request_frame);
  if (r->data)
    g_hash_table_unref (r->data);
  if (r->request_frame)
    sedp_frame_unref (r->request_frame);
  if (r->items)
    sedp_frame_unref (r->items);
  if (r->payload)
    g_bytes_unref (r->payload);
  g_free (r->content_type);
  g_free (r->id);
  g_mutex_clear (&r->lock);
  g_free (r);
}

/* ---- the SDK's view ---- */

const char *
sedp_request_get_id (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, NULL);
  return r->id;
}

gint64
sedp_request_get_deadline (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, 0);
  return r->deadline;
}

gint64
sedp_request_get_remaining_us (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, 0);
  return r->deadline - g_get_monotonic_time ();
}

guint
sedp_request_get_n_items (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, 0);
  return g_atomic_int_get (&r->started) ? r->n_items : 0;
}

const guint8 *
sedp_request_get_payload (const SedpRequest *r, gsize *size, const char **content_type)
{
  g_return_val_if_fail (r != NULL, NULL);
  if (content_type)
    *content_type = r->content_type;
  if (r->payload == NULL) {
    if (size)
      *size = 0;
    return NULL;
  }
  return g_bytes_get_data (r->payload, size);
}

typedef struct {
  gpointer data;
  GDestroyNotify destroy;
} DataEntry;

static void
data_entry_free (DataEntry *e)
{
  if (e->destroy && e->data)
    e->destroy (e->data);
  g_free (e);
}

void
sedp_request_set_data (SedpRequest *r, const char *key, gpointer data, GDestroyNotify destroy)
{
  g_return_if_fail (r != NULL && key != NULL);
  g_mutex_lock (&r->lock);
  if (r->data == NULL)
    r->data = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) data_entry_free);
  if (data == NULL) {
    g_hash_table_remove (r->data, key);
  } else {
    DataEntry *e = g_new (DataEntry, 1);
    e->data = data;
    e->destroy = destroy;
    g_hash_table_replace (r->data, g_strdup (key), e);
  }
  g_mutex_unlock (&r->lock);
}

gpointer
sedp_request_get_data (SedpRequest *r, const char *key)
{
  g_return_val_if_fail (r != NULL && key != NULL, NULL);
  g_mutex_lock (&r->lock);
  DataEntry *e = r->data ? g_hash_table_lookup (r->data, key) : NULL;
  gpointer v = e ? e->data : NULL;
  g_mutex_unlock (&r->lock);
  return v;
}

/* ---- results ---- */

const SedpResult *
sedp_request_get_result (SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, NULL);
  return g_atomic_int_get (&r->done) == 2 ? &r->result : NULL;
}

SedpStatus
sedp_result_get_status (const SedpResult *res)
{
  return res->status;
}

guint
sedp_request_get_top_k (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, 0);
  return (guint) g_atomic_int_get ((const gint *) &r->top_k);
}

void
sedp_request_set_top_k (SedpRequest *r, guint top_k)
{
  g_return_if_fail (r != NULL);
  g_atomic_int_set ((gint *) &r->top_k, (gint) top_k);
}

const GError *
sedp_result_get_error (const SedpResult *res)
{
  g_return_val_if_fail (res != NULL, NULL);
  return res->error;
}

const char *
sedp_result_get_message (const SedpResult *res)
{
  return res->message;
}

guint
sedp_result_get_n_items (const SedpResult *res)
{
  return res->n_items;
}

SedpItemStatus
sedp_result_get_item_status (const SedpResult *res, guint item)
{
  g_return_val_if_fail (item < res->n_items, SEDP_ITEM_PENDING);
  return (SedpItemStatus) res->item_status[item];
}

const char *
sedp_result_get_item_message (const SedpResult *res, guint item)
{
  g_return_val_if_fail (item < res->n_items, NULL);
  return res->item_message ? res->item_message[item] : NULL;
}

const SedpFrame *
sedp_result_get_item_frame (const SedpResult *res, guint item, guint *row)
{
  g_return_val_if_fail (item < res->n_items, NULL);
  if (res->item_frame == NULL || res->item_frame[item] == NULL)
    return NULL;
  if (row)
    *row = res->item_row[item];
  return res->item_frame[item];
}

const SedpFrame *
sedp_result_get_request_frame (const SedpResult *res)
{
  return res->request_frame;
}

gint64
sedp_request_get_elapsed_us (const SedpRequest *r)
{
  g_return_val_if_fail (r != NULL, 0);
  return r->started_at ? g_get_monotonic_time () - r->started_at : 0;
}

guint
sedp_result_get_n_shed (const SedpResult *res)
{
  guint n = 0;
  for (guint i = 0; i < res->n_items; i++)
    n += res->item_status[i] == SEDP_ITEM_SHED;
  return n;
}

gint64
sedp_result_get_latency_us (const SedpResult *res)
{
  return res->latency_us;
}

/* ---- runtime bookkeeping ---- */

void
sedp_request_begin (SedpRequest *r, SedpPipeline *p, SedpRequestDone done, gpointer data)
{
  r->pipeline = p;
  r->done_cb = done;
  r->done_data = data;
  r->submitted_at = g_get_monotonic_time ();
  if (r->started_at == 0 || r->started_at > r->submitted_at)
    r->started_at = r->submitted_at;
  if (r->deadline == 0)
    r->deadline = r->started_at + (r->timeout_us > 0 ? r->timeout_us : p->deadline_us);
  r->joins = g_new0 (JoinSlot *, p->n_stages);
  r->result.frames = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_frame_unref);
}

gboolean
sedp_request_is_done (SedpRequest *r)
{
  return g_atomic_int_get (&r->done) != 0;
}

/* @n items of @r finished (any way): they leave the pipeline's count of items in flight. Under
 * r->lock. */
static void
items_left (SedpRequest *r, guint n)
{
  n = MIN (n, r->live_items);
  r->live_items -= n;
  if (n && r->pipeline)
    g_atomic_int_add (&r->pipeline->items_inflight, -(gint) n);
}

/* Sets @item's status (and message); returns 1 when it was pending (it left the items in flight,
 * which the caller counts with items_left() once per frame), else 0. */
static guint
set_item (SedpRequest *r, guint item, SedpItemStatus status, const char *message)
{
  SedpResult *res = &r->result;
  if (item >= res->n_items || res->item_status[item] == SEDP_ITEM_FAILED ||
      res->item_status[item] == SEDP_ITEM_DROPPED || res->item_status[item] == SEDP_ITEM_SHED)
    return 0;
  guint left = res->item_status[item] == SEDP_ITEM_PENDING;
  res->item_status[item] = (guint8) status;
  if (message) {
    if (res->item_message == NULL)
      res->item_message = g_new0 (char *, res->n_items);
    g_free (res->item_message[item]);
    res->item_message[item] = g_strdup (message);
  }
  return left;
}

void
sedp_request_start_items (SedpRequest *r, SedpFrame *items, guint frame_rows,
                          guint expected_per_frame, guint expected_once)
{
  guint n = sedp_frame_get_n_rows (items);
  guint n_frames = (n + frame_rows - 1) / frame_rows;
  SedpFrame **cut = g_new0 (SedpFrame *, MAX (n_frames, 1));
  for (guint j = 0; j < n_frames; j++) {
    guint start = j * frame_rows;
    cut[j] = n_frames == 1 && items->item_index == NULL && items->item_base == 0
                 ? sedp_frame_copy_shallow (items)
                 : sedp_frame_slice (items, start, MIN (frame_rows, n - start));
    sedp_frame_set_kind (cut[j], FRAME_KIND_ITEMS);
  }
  g_mutex_lock (&r->lock);
  if (!r->done) { /* counted until they finish (items_left) or the request does (finish) */
    g_atomic_int_add (&r->pipeline->items_inflight, (gint) n);
    r->live_items = n;
  }
  r->n_items = n;
  r->n_frames = n_frames;
  r->item_frames = cut;
  r->result.n_items = n;
  r->result.item_status = g_new0 (guint8, MAX (n, 1));
  r->result.item_frame = g_new0 (SedpFrame *, MAX (n, 1));
  r->result.item_row = g_new0 (guint, MAX (n, 1));
  r->pending = expected_per_frame * n_frames + expected_once;
  g_atomic_int_set (&r->started, 1);
  g_mutex_unlock (&r->lock);
}

void
sedp_request_record_rows (SedpRequest *r, const SedpFrame *frame, const char *stage)
{
  g_mutex_lock (&r->lock);
  guint left = 0;
  for (guint row = 0; row < frame->n_rows; row++) {
    SedpRowState st = sedp_frame_get_row_state (frame, row);
    if (st == SEDP_ROW_LIVE || st == SEDP_ROW_ANSWERED)
      continue; /* answered rows are recorded with their columns (sedp_request_record_answered) */
    guint item = sedp_frame_get_item_index (frame, row);
    if (st == SEDP_ROW_DROPPED || st == SEDP_ROW_SHED) {
      left += set_item (r, item, st == SEDP_ROW_SHED ? SEDP_ITEM_SHED : SEDP_ITEM_DROPPED, NULL);
    } else {
      g_autofree char *msg =
          g_strdup_printf ("stage '%s': %s", stage, sedp_frame_get_row_message (frame, row));
      left += set_item (r, item, SEDP_ITEM_FAILED, msg);
    }
  }
  items_left (r, left);
  g_mutex_unlock (&r->lock);
}

void
sedp_request_record_answered (SedpRequest *r, SedpFrame *frame)
{
  g_mutex_lock (&r->lock);
  SedpResult *res = &r->result;
  if (r->done || res->frames == NULL) {
    g_mutex_unlock (&r->lock);
    sedp_frame_unref (frame);
    return;
  }
  guint left = 0;
  for (guint row = 0; row < frame->n_rows; row++) {
    guint item = sedp_frame_get_item_index (frame, row);
    if (item >= res->n_items || res->item_status[item] != SEDP_ITEM_PENDING)
      continue;
    res->item_status[item] = SEDP_ITEM_CACHED;
    left++;
    res->item_frame[item] = frame;
    res->item_row[item] = row;
  }
  items_left (r, left);
  g_ptr_array_add (res->frames, frame);
  g_mutex_unlock (&r->lock);
}

void
sedp_request_record_frame (SedpRequest *r, const SedpFrame *frame, SedpItemStatus status,
                           const char *message)
{
  g_mutex_lock (&r->lock);
  guint left = 0;
  for (guint row = 0; row < frame->n_rows; row++)
    left += set_item (r, sedp_frame_get_item_index (frame, row), status, message);
  items_left (r, left);
  g_mutex_unlock (&r->lock);
}

/* Overall status from the item statuses (called with the lock held). */
/* Every sink has seen each frame or its skip and an item is still pending: the branches its
 * request took reached no sink on its path (docs/routing.md). Under the request's lock. */
static void
drop_unrouted (SedpRequest *r)
{
  SedpResult *res = &r->result;
  if (!r->skipped)
    return; /* items of a pipeline without item-scope sinks stay pending, as ever */
  for (guint i = 0; i < res->n_items; i++)
    if (res->item_status[i] == SEDP_ITEM_PENDING) {
      res->item_status[i] = SEDP_ITEM_DROPPED;
      if (res->item_message == NULL)
        res->item_message = g_new0 (char *, res->n_items);
      g_free (res->item_message[i]);
      res->item_message[i] = g_strdup ("no branch it took reached a sink");
    }
}

static SedpStatus
status_from_items (SedpRequest *r, char **message)
{
  SedpResult *res = &r->result;
  guint failed = 0, first = 0;
  for (guint i = 0; i < res->n_items; i++)
    if (res->item_status[i] == SEDP_ITEM_FAILED && failed++ == 0)
      first = i;
  if (failed == 0)
    return SEDP_STATUS_OK;
  *message = g_strdup_printf ("%u of %u items failed; first: %s", failed, res->n_items,
                              res->item_message && res->item_message[first] ? res->item_message[first]
                                                                            : "failed");
  return failed == res->n_items ? SEDP_STATUS_FAILED : SEDP_STATUS_PARTIAL;
}

static void
finish (SedpRequest *r, SedpStatus status, char *message)
{
  SedpPipeline *p = r->pipeline;
  SedpResult *res = &r->result;
  if (!r->started && r->items) {
    /* Ended before the source ran (deadline, failure): every item is reported, as pending. */
    res->n_items = sedp_frame_get_n_rows (r->items);
    res->item_status = g_new0 (guint8, MAX (res->n_items, 1));
  }
  res->status = status;
  res->message = message;
  res->latency_us = g_get_monotonic_time () - r->started_at;
  sedp_route_release (r, res->latency_us);
  if (res->routes)
    g_ptr_array_add (res->routes, NULL);
  guint finished = 0; /* scored or cached: the work the pipeline did */
  for (guint i = 0; i < res->n_items && res->item_status; i++)
    finished += res->item_status[i] == SEDP_ITEM_SCORED || res->item_status[i] == SEDP_ITEM_CACHED;
  items_left (r, r->live_items);
  release_runtime_state (r);
  g_mutex_unlock (&r->lock);

  sedp_deadline_queue_remove (p->deadlines, r);
  sedp_counter_add (p->m_requests, 1);
  if (status == SEDP_STATUS_TIMEOUT)
    sedp_counter_add (p->m_timeouts, 1);
  sedp_histogram_observe (p->m_request_latency, (double) res->latency_us);
  sedp_latency_window_observe (p->recent_latency, res->latency_us, r->started_at + res->latency_us);
  sedp_latency_window_observe_n (p->recent_items, 0, finished, r->started_at + res->latency_us);
  g_atomic_int_set (&r->done, 2);
  if (r->done_cb)
    r->done_cb (r, r->done_data);
  g_mutex_lock (&p->lock);
  if (g_atomic_int_dec_and_test ((gint *) &p->inflight))
    g_cond_broadcast (&p->drained);
  g_mutex_unlock (&p->lock);
  sedp_request_unref (r); /* the pipeline's reference */
}

void
sedp_request_complete (SedpRequest *r, SedpStatus status, const char *message)
{
  g_mutex_lock (&r->lock);
  if (r->done) {
    g_mutex_unlock (&r->lock);
    return;
  }
  g_atomic_int_set (&r->done, 1);
  char *msg = g_strdup (message);
  if (status == SEDP_STATUS_TIMEOUT && msg == NULL) {
    guint finished = 0;
    for (guint i = 0; i < r->result.n_items; i++)
      finished += r->result.item_status[i] != SEDP_ITEM_PENDING;
    msg = g_strdup_printf ("deadline of %" G_GINT64_FORMAT " ms passed with %u of %u items finished",
                           (r->deadline - r->started_at) / 1000, finished, r->result.n_items);
  }
  finish (r, status, msg);
}

void
sedp_request_fail (SedpRequest *r, const char *stage, const GError *error)
{
  g_mutex_lock (&r->lock);
  if (r->done) {
    g_mutex_unlock (&r->lock);
    return;
  }
  g_atomic_int_set (&r->done, 1);
  r->result.error = g_error_new (error->domain, error->code, "stage '%s': %s", stage,
                                 error->message);
  finish (r, SEDP_STATUS_FAILED, g_strdup (r->result.error->message));
}

void
sedp_request_collect (SedpRequest *r, SedpFrame *frame)
{
  g_mutex_lock (&r->lock);
  if (r->done) {
    g_mutex_unlock (&r->lock);
    if (frame)
      sedp_frame_unref (frame);
    return;
  }
  SedpResult *res = &r->result;
  if (frame) {
    if (sedp_frame_get_kind (frame) == FRAME_KIND_ITEMS) {
      guint left = 0;
      for (guint row = 0; row < frame->n_rows; row++) {
        guint item = sedp_frame_get_item_index (frame, row);
        if (item >= res->n_items)
          continue;
        if (res->item_status[item] == SEDP_ITEM_PENDING) {
          res->item_status[item] = SEDP_ITEM_SCORED;
          left++;
        }
        res->item_frame[item] = frame;
        res->item_row[item] = row;
      }
      items_left (r, left);
      g_ptr_array_add (res->frames, frame);
    } else {
      if (res->request_frame)
        sedp_frame_unref (res->request_frame);
      res->request_frame = frame;
    }
  }
  if (r->pending > 0)
    r->pending--;
  if (r->pending == 0) {
    g_atomic_int_set (&r->done, 1);
    drop_unrouted (r);
    char *msg = NULL;
    SedpStatus st = status_from_items (r, &msg);
    finish (r, st, msg);
    return;
  }
  g_mutex_unlock (&r->lock);
}

const char *const *
sedp_result_get_routes (const SedpResult *res)
{
  g_return_val_if_fail (res != NULL, NULL);
  static const char *const none[] = {NULL};
  if (res->routes == NULL)
    return none;
  return (const char *const *) res->routes->pdata; /* NULL-terminated by finish() */
}
