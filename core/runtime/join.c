/* sedp — fan-in: matching events of one request by frame, broadcasting request-scope results
 * into item frames, gathering item frames for request-scope stages, and scattering a gathered
 * frame back into item frames.
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
  SedpFrame *merged;       /* the request-scope inputs that hold the request row, merged */
  SedpFrame *broadcast;    /* the same, flagged broadcast (item-scope stages) */
  SedpFrame *gathered;     /* request-scope inputs that hold item rows (a gather upstream) */
  guint *scatter_start;    /* [n_frames + 1]: gathered rows of frame j are scatter_rows[start..] */
  guint32 *scatter_rows;
  SedpFrame **items;       /* [n_frames × n_item]; NULL entries are tombstones */
  guint16 *item_arrived;   /* [n_frames] */
  guint8 *emitted;         /* [n_frames] */
  guint gathered_events;   /* item events arrived (request-scope stages) */
  /* Routing (docs/routing.md): inputs not taken hold no frame and are not tombstones. */
  guint n_routed;          /* the stage's inputs that may be skipped */
  guint req_skipped;       /* request-scope inputs skipped */
  guint8 *item_skip;       /* [n_frames × n_item]: that input of that frame was skipped */
  guint *skipped_frames;   /* [n_item]: frames of each item input skipped */
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
  g_clear_pointer (&s->merged, sedp_frame_unref);
  g_clear_pointer (&s->broadcast, sedp_frame_unref);
  g_clear_pointer (&s->gathered, sedp_frame_unref);
  g_free (s->scatter_start);
  g_free (s->scatter_rows);
  g_free (s->req_frames);
  g_free (s->items);
  g_free (s->item_arrived);
  g_free (s->emitted);
  g_free (s->item_skip);
  g_free (s->skipped_frames);
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
  s->n_routed = stage->node->n_routed_inputs;
  if (s->n_routed > 0) {
    s->item_skip = g_new0 (guint8, MAX ((gsize) s->n_frames * s->n_item, 1));
    s->skipped_frames = g_new0 (guint, MAX (s->n_item, 1));
  }
  r->joins[idx] = s;
  return s;
}

/* Joins frames of item rows from several branches: rows are matched by item, so that rows shed
 * in one branch are left out. */
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

/* Whether node @n of @g gets item rows from a stage before it (an item stage, or a request
 * stage after one: a gather). */
static gboolean
carries_items (const SedpGraph *g, guint n, guint8 *memo)
{
  if (memo[n])
    return memo[n] == 2;
  gboolean items = FALSE;
  for (guint k = 0; k < g->nodes[n].n_inputs && !items; k++) {
    guint in = g->nodes[n].inputs[k];
    items = g->nodes[in].scope == SEDP_SCOPE_ITEM || carries_items (g, in, memo);
  }
  memo[n] = items ? 2 : 1;
  return items;
}

gboolean
sedp_join_compacts (const SedpGraph *g, guint node)
{
  const SedpGraphNode *self = &g->nodes[node];
  if (self->scope != SEDP_SCOPE_ITEM)
    return FALSE;
  for (guint k = 0; k < self->n_inputs; k++)
    if (g->nodes[self->inputs[k]].scope == SEDP_SCOPE_ITEM)
      return FALSE; /* its frames are matched with an item input's */
  g_autofree guint8 *after = g_new0 (guint8, g->n_nodes), *memo = g_new0 (guint8, g->n_nodes);
  after[node] = 1;
  for (guint t = 0; t < g->n_nodes; t++) { /* topological: inputs before outputs */
    const SedpGraphNode *d = &g->nodes[g->topo[t]];
    for (guint k = 0; k < d->n_inputs && !after[d->index]; k++)
      after[d->index] = after[d->inputs[k]];
  }
  for (guint t = 0; t < g->n_nodes; t++) {
    const SedpGraphNode *d = &g->nodes[g->topo[t]];
    if (!after[d->index] || d->index == node || d->scope != SEDP_SCOPE_ITEM)
      continue;
    for (guint k = 0; k < d->n_inputs; k++)
      if (!after[d->inputs[k]] && carries_items (g, d->inputs[k], memo))
        return FALSE; /* matched, frame by frame, with rows cut the usual way */
  }
  return TRUE;
}

/* All request-scope inputs are in: merges those holding the request row, and those holding item
 * rows (gathered upstream), which item-scope stages get back cut by frame: into the frames they
 * came from, or, with @compact, into full frames in order (the last ones then empty). */
static void
merge_request_inputs (JoinSlot *s, guint frame_rows, gboolean compact)
{
  SedpFrame *plain[s->n_req], *items[s->n_req];
  guint n_plain = 0, n_items = 0;
  for (guint k = 0; k < s->n_req; k++) {
    if (s->req_frames[k] == NULL)
      continue; /* skipped: its branch was not taken */
    if (sedp_frame_get_kind (s->req_frames[k]) == FRAME_KIND_ITEMS)
      items[n_items++] = s->req_frames[k];
    else
      plain[n_plain++] = s->req_frames[k];
  }
  if (n_plain)
    s->merged = merge_request_frames (plain, n_plain);
  if (n_items == 0)
    return;
  s->gathered = merge_item_frames (items, n_items);
  guint n = sedp_frame_get_n_rows (s->gathered);
  s->scatter_start = g_new0 (guint, s->n_frames + 1);
  s->scatter_rows = g_new (guint32, MAX (n, 1));
  if (compact) {
    for (guint j = 0; j < s->n_frames; j++)
      s->scatter_start[j + 1] = MIN (n, (j + 1) * frame_rows);
    for (guint row = 0; row < n; row++)
      s->scatter_rows[row] = row;
    return;
  }
  /* Rows by frame: counting sort on item / frame_rows. */
  for (guint row = 0; row < n; row++) {
    guint j = sedp_frame_get_item_index (s->gathered, row) / frame_rows;
    if (j < s->n_frames)
      s->scatter_start[j + 1]++;
  }
  for (guint j = 0; j < s->n_frames; j++)
    s->scatter_start[j + 1] += s->scatter_start[j];
  g_autofree guint *fill = g_memdup2 (s->scatter_start, sizeof (guint) * s->n_frames);
  for (guint row = 0; row < n; row++) {
    guint j = sedp_frame_get_item_index (s->gathered, row) / frame_rows;
    if (j < s->n_frames)
      s->scatter_rows[fill[j]++] = row;
  }
}

static void
emit (GPtrArray **out, SedpRequest *r, int frame_index, SedpFrame *frame)
{
  if (*out == NULL)
    *out = g_ptr_array_new ();
  g_ptr_array_add (*out, sedp_event_new (r, frame_index, frame));
}

/* Item-scope stage: frame @j is complete; builds its event (a tombstone when no row is left). */
/* A skip event, for a stage none of whose routed inputs was taken. */
static void
emit_skip (GPtrArray **out, SedpRequest *r, int frame_index)
{
  emit (out, r, frame_index, NULL);
  SedpEvent *ev = (*out)->pdata[(*out)->len - 1];
  ev->skip = TRUE;
}

/* Whether every routed input of frame @j (G_MAXUINT: of the gathered request) was skipped. */
static gboolean
all_routed_skipped (const JoinSlot *s, guint j)
{
  if (s->n_routed == 0)
    return FALSE;
  guint skipped = s->req_skipped;
  for (guint k = 0; k < s->n_item; k++)
    skipped += j == G_MAXUINT ? s->skipped_frames[k] == s->n_frames
                              : s->item_skip[(gsize) j * s->n_item + k];
  return skipped == s->n_routed;
}

static void
emit_item (GPtrArray **out, SedpRequest *r, JoinSlot *s, guint j)
{
  s->emitted[j] = 1;
  if (all_routed_skipped (s, j)) {
    SedpFrame **row = s->items + (gsize) j * s->n_item;
    for (guint k = 0; k < s->n_item; k++)
      g_clear_pointer (&row[k], sedp_frame_unref);
    emit_skip (out, r, (int) j);
    return;
  }
  SedpFrame *parts[s->n_item + 1];
  guint n_parts = 0;
  gboolean dead = FALSE;
  if (s->gathered) {
    guint start = s->scatter_start[j], n = s->scatter_start[j + 1] - start;
    parts[n_parts++] = sedp_frame_select_rows (s->gathered, s->scatter_rows + start, n);
    dead = n == 0;
  }
  SedpFrame **row = s->items + (gsize) j * s->n_item;
  for (guint k = 0; k < s->n_item; k++) {
    if (row[k])
      parts[n_parts++] = row[k];
    else if (!s->item_skip || !s->item_skip[(gsize) j * s->n_item + k])
      dead = TRUE; /* a tombstone (a skipped input is merely absent) */
    row[k] = NULL;
  }
  SedpFrame *frame = NULL;
  if (n_parts == 0 && !dead)
    frame = sedp_frame_copy_shallow (r->item_frames[j]); /* request-scope inputs only */
  else if (!dead)
    frame = merge_item_frames (parts, n_parts);
  for (guint k = 0; k < n_parts; k++)
    sedp_frame_unref (parts[k]);
  if (frame && sedp_frame_get_n_rows (frame) == 0)
    g_clear_pointer (&frame, sedp_frame_unref);
  if (frame && s->broadcast)
    sedp_frame_add_broadcast (frame, s->broadcast);
  emit (out, r, (int) j, frame);
}

/* The item frames of frame @j of every input merged (NULL: a tombstone among them, or nothing). */
static SedpFrame *
gather_frame (JoinSlot *s, guint j)
{
  SedpFrame *parts[s->n_item + 1];
  guint n_parts = 0;
  for (guint k = 0; k < s->n_item; k++) {
    SedpFrame *f = s->items[(gsize) j * s->n_item + k];
    if (f)
      parts[n_parts++] = f;
    else if (!s->item_skip || !s->item_skip[(gsize) j * s->n_item + k])
      return NULL; /* a tombstone: the frame's items were reported by the branch that lost them */
  }
  if (n_parts == 0)
    return NULL;
  return n_parts == 1 ? sedp_frame_ref (parts[0]) : merge_item_frames (parts, n_parts);
}

/* Request-scope stage: all inputs are in; gathers item frames (each frame's inputs merged, the
 * frames concatenated in item order) and adds request columns. */
static void
emit_gathered (GPtrArray **out, SedpRequest *r, JoinSlot *s)
{
  if (all_routed_skipped (s, G_MAXUINT)) {
    emit_skip (out, r, SEDP_FRAME_INDEX_REQUEST);
    return;
  }
  SedpFrame *parts[2];
  guint n_parts = 0;
  if (s->n_item > 0) {
    g_autoptr (GPtrArray) live = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_frame_unref);
    for (guint j = 0; j < s->n_frames; j++) {
      SedpFrame *f = gather_frame (s, j);
      if (f)
        g_ptr_array_add (live, f);
    }
    parts[n_parts++] = sedp_frame_concat ((SedpFrame *const *) live->pdata, live->len);
  }
  if (s->gathered)
    parts[n_parts++] = sedp_frame_ref (s->gathered);
  SedpFrame *frame;
  if (n_parts == 0) {
    frame = g_steal_pointer (&s->merged);
  } else {
    frame = merge_item_frames (parts, n_parts);
    for (guint k = 0; k < n_parts; k++)
      sedp_frame_unref (parts[k]);
    if (s->merged)
      sedp_frame_add_broadcast (frame, s->merged);
  }
  emit (out, r, SEDP_FRAME_INDEX_REQUEST, frame);
}

GPtrArray *
sedp_join_accept (SedpPipeline *p, Stage *stage, SedpEvent *ev)
{
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
  guint item_events = s->n_frames * s->n_item;

  if (!from_item) {
    s->req_frames[pos] = g_steal_pointer (&ev->frame);
    s->req_skipped += ev->skip;
    if (++s->req_arrived == s->n_req) {
      merge_request_inputs (s, p->frame_rows, stage->compact_scatter);
      if (to_item) {
        if (s->merged)
          s->broadcast = sedp_frame_to_broadcast (s->merged);
        for (guint j = 0; j < s->n_frames; j++)
          if (!s->emitted[j] && s->item_arrived[j] == s->n_item)
            emit_item (&out, r, s, j);
      } else if (s->gathered_events == item_events) {
        emit_gathered (&out, r, s);
      }
    }
  } else {
    guint j = (guint) ev->frame_index;
    if (j < s->n_frames) {
      s->items[(gsize) j * s->n_item + pos] = g_steal_pointer (&ev->frame);
      if (ev->skip) {
        s->item_skip[(gsize) j * s->n_item + pos] = 1;
        s->skipped_frames[pos]++;
      }
      s->item_arrived[j]++;
      s->gathered_events++;
      gboolean req_ready = s->req_arrived == s->n_req;
      if (to_item) {
        if (req_ready && s->item_arrived[j] == s->n_item)
          emit_item (&out, r, s, j);
      } else if (req_ready && s->gathered_events == item_events) {
        emit_gathered (&out, r, s);
      }
    }
  }
  g_mutex_unlock (&r->lock);
  sedp_event_free (ev);
  return out;
}
