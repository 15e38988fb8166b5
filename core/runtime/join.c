/* sedp — fan-in: matching events of one request by frame, broadcasting request-scope results
 * into item frames, and gathering item frames for request-scope stages.
 *
 * The join state of a stage lives in the request (one slot per stage), so it needs no global
 * table and disappears with the request, whatever way the request ends. */
#include "runtime-private.h"

struct _JoinSlot {
  guint n_req;             /* request-scope inputs */
  guint n_item;            /* item-scope inputs */
  guint n_frames;
  guint req_arrived;
  SedpFrame **req_frames;  /* [n_req] */
  SedpFrame *merged;       /* the merged request-scope input, once all arrived */
  SedpFrame *broadcast;    /* the same, flagged broadcast (item-scope stages) */
  SedpFrame **items;       /* [n_frames × n_item]; NULL entries are tombstones */
  guint16 *item_arrived;   /* [n_frames] */
  guint8 *emitted;         /* [n_frames] */
  guint gathered;          /* item events arrived (request-scope stages) */
  gboolean done;           /* request-scope stages: emitted */
};

void
sedp_join_slot_free (JoinSlot *s)
{
  if (s == NULL)
    return;
  for (guint i = 0; i < s->n_req; i++)
    if (s->req_frames[i])
      sedp_frame_unref (s->req_frames[i]);
  for (guint i = 0; i < s->n_frames * s->n_item; i++)
    if (s->items[i])
      sedp_frame_unref (s->items[i]);
  if (s->merged)
    sedp_frame_unref (s->merged);
  if (s->broadcast)
    sedp_frame_unref (s->broadcast);
  g_free (s->req_frames);
  g_free (s->items);
  g_free (s->item_arrived);
  g_free (s->emitted);
  g_free (s);
}

static JoinSlot *
slot_get (SedpRequest *r, Stage *stage)
{
  guint idx = stage->node->index;
  if (r->joins[idx])
    return r->joins[idx];
  JoinSlot *s = g_new0 (JoinSlot, 1);
  s->n_req = stage->n_req_inputs;
  s->n_item = stage->n_item_inputs;
  s->n_frames = r->n_frames;
  s->req_frames = g_new0 (SedpFrame *, MAX (s->n_req, 1));
  s->items = g_new0 (SedpFrame *, MAX ((gsize) s->n_frames * s->n_item, 1));
  s->item_arrived = g_new0 (guint16, MAX (s->n_frames, 1));
  s->emitted = g_new0 (guint8, MAX (s->n_frames, 1));
  r->joins[idx] = s;
  return s;
}

/* Joins item frames of the same frame index from several branches: rows are matched by item,
 * so that rows shed in one branch are left out. NULL when no row is left. */
static SedpFrame *
merge_item_frames (SedpFrame *const *frames, guint n)
{
  SedpFrame *out = sedp_frame_copy_shallow (frames[0]);
  for (guint k = 1; k < n; k++) {
    if (sedp_frame_same_items (out, frames[k])) {
      sedp_frame_merge_columns (out, frames[k]);
    } else {
      SedpFrame *a = sedp_frame_intersect_items (out, frames[k]);
      SedpFrame *b = sedp_frame_intersect_items (frames[k], a);
      sedp_frame_merge_columns (a, b);
      sedp_frame_unref (b);
      sedp_frame_unref (out);
      out = a;
    }
  }
  return out;
}

static SedpFrame *
merge_request_frames (SedpFrame *const *frames, guint n)
{
  SedpFrame *out = sedp_frame_copy_shallow (frames[0]);
  for (guint k = 1; k < n; k++)
    sedp_frame_merge_columns (out, frames[k]);
  return out;
}

static void
emit (GPtrArray **out, SedpRequest *r, int frame_index, SedpFrame *frame)
{
  if (*out == NULL)
    *out = g_ptr_array_new ();
  g_ptr_array_add (*out, sedp_event_new (r, frame_index, frame));
}

/* Item-scope stage: frame @j is complete; builds its event (tombstone if a branch lost it). */
static void
emit_item (GPtrArray **out, SedpRequest *r, JoinSlot *s, guint j)
{
  s->emitted[j] = 1;
  SedpFrame *frame = NULL;
  if (s->n_item == 0) {
    frame = sedp_frame_copy_shallow (r->item_frames[j]);
  } else {
    SedpFrame **row = s->items + (gsize) j * s->n_item;
    gboolean dead = FALSE;
    for (guint k = 0; k < s->n_item; k++)
      dead = dead || row[k] == NULL;
    if (!dead) {
      frame = merge_item_frames (row, s->n_item);
      if (frame->n_rows == 0)
        g_clear_pointer (&frame, sedp_frame_unref);
    }
    for (guint k = 0; k < s->n_item; k++)
      g_clear_pointer (&row[k], sedp_frame_unref);
  }
  if (frame && s->broadcast)
    sedp_frame_add_broadcast (frame, s->broadcast);
  emit (out, r, (int) j, frame);
}

/* Request-scope stage: all inputs are in; gathers item frames and adds request columns. */
static void
emit_gathered (GPtrArray **out, SedpRequest *r, JoinSlot *s)
{
  s->done = TRUE;
  SedpFrame *frame;
  if (s->n_item == 0) {
    frame = s->merged;
    s->merged = NULL;
  } else {
    SedpFrame *per_input[s->n_item];
    for (guint k = 0; k < s->n_item; k++) {
      g_autoptr (GPtrArray) live = g_ptr_array_new ();
      for (guint j = 0; j < s->n_frames; j++)
        if (s->items[(gsize) j * s->n_item + k])
          g_ptr_array_add (live, s->items[(gsize) j * s->n_item + k]);
      per_input[k] = sedp_frame_concat ((SedpFrame *const *) live->pdata, live->len);
    }
    frame = merge_item_frames (per_input, s->n_item);
    for (guint k = 0; k < s->n_item; k++)
      sedp_frame_unref (per_input[k]);
    if (s->merged)
      sedp_frame_add_broadcast (frame, s->merged);
  }
  emit (out, r, SEDP_FRAME_INDEX_REQUEST, frame);
}

GPtrArray *
sedp_join_accept (SedpPipeline *p, Stage *stage, SedpEvent *ev)
{
  (void) p;
  SedpRequest *r = ev->request;
  GPtrArray *out = NULL;
  g_mutex_lock (&r->lock);
  if (r->done || r->joins == NULL) {
    g_mutex_unlock (&r->lock);
    sedp_event_free (ev);
    return NULL;
  }
  JoinSlot *s = slot_get (r, stage);
  guint pos = stage->slot_pos[ev->slot];
  gboolean from_item = stage->slot_is_item[ev->slot];
  gboolean to_item = stage->node->scope == SEDP_SCOPE_ITEM;

  if (!from_item) {
    s->req_frames[pos] = ev->frame;
    ev->frame = NULL;
    if (++s->req_arrived == s->n_req) {
      s->merged = merge_request_frames (s->req_frames, s->n_req);
      if (to_item) {
        s->broadcast = sedp_frame_to_broadcast (s->merged);
        for (guint j = 0; j < s->n_frames; j++)
          if (!s->emitted[j] && s->item_arrived[j] == s->n_item)
            emit_item (&out, r, s, j);
      } else if (s->gathered == s->n_frames * s->n_item) {
        emit_gathered (&out, r, s);
      }
    }
  } else {
    guint j = (guint) ev->frame_index;
    if (j < s->n_frames) {
      s->items[(gsize) j * s->n_item + pos] = ev->frame;
      ev->frame = NULL;
      s->item_arrived[j]++;
      s->gathered++;
      gboolean req_ready = s->req_arrived == s->n_req;
      if (to_item) {
        if (req_ready && s->item_arrived[j] == s->n_item)
          emit_item (&out, r, s, j);
      } else if (req_ready && s->gathered == s->n_frames * s->n_item) {
        emit_gathered (&out, r, s);
      }
    }
  }
  g_mutex_unlock (&r->lock);
  sedp_event_free (ev);
  return out;
}
