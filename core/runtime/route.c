/* sedp — routing in the runtime (docs/routing.md): a router's events go down the branches its
 * `process` chose; the outputs of branches not taken get a skip, carried at once through the
 * stages that only an untaken branch reaches; request-scope routers admit a request into a
 * branch against its quotas and record the branch in the result. */
#include "runtime-private.h"

#include <string.h>

struct _BranchState {
  gint inflight;               /* atomic: requests routed here and not completed */
  guint max_inflight;          /* 0: no limit */
  double max_rate;             /* requests/s, 0: no limit */
  GMutex lock;                 /* guards the token bucket */
  double tokens;
  gint64 refilled_at;
  SedpCounter *m_routed;
  SedpCounter *m_refused;
  SedpHistogram *m_latency;
};

static const double branch_latency_bounds_us[] = {100, 200, 500, 1000, 2000, 5000, 10000, 20000,
                                                  50000, 100000, 200000, 500000, 1000000};

static double
read_inflight (gconstpointer data)
{
  return g_atomic_int_get (&((const BranchState *) data)->inflight);
}

void
sedp_route_init_stage (SedpPipeline *p, Stage *s)
{
  const SedpGraphNode *node = s->node;
  s->n_branches = node->n_branches;
  if (node->n_branches == 0)
    return;
  s->branches = g_new0 (BranchState, node->n_branches);
  for (guint b = 0; b < node->n_branches; b++) {
    BranchState *bs = &s->branches[b];
    g_mutex_init (&bs->lock);
    bs->max_inflight = node->quota_inflight ? node->quota_inflight[b] : 0;
    bs->max_rate = node->quota_rate ? node->quota_rate[b] : 0;
    bs->tokens = MAX (1.0, bs->max_rate / 10);
    bs->refilled_at = g_get_monotonic_time ();
    /* "STAGE/BRANCH": exported with the labels stage and branch (metrics.c). */
    g_autofree char *label = g_strdup_printf ("%s/%s", node->spec->name, node->branches[b]);
    bs->m_routed = sedp_metrics_counter (p->metrics, label, "branch_requests_total",
                                         "Events routed to the branch");
    bs->m_refused = sedp_metrics_counter (p->metrics, label, "branch_refused_total",
                                          "Requests refused by the branch's quota");
    bs->m_latency = sedp_metrics_histogram (p->metrics, label, "branch_request_latency_us",
                                            "Latency of the requests that took the branch (seconds)",
                                            branch_latency_bounds_us,
                                            G_N_ELEMENTS (branch_latency_bounds_us));
    sedp_metrics_gauge (p->metrics, label, "branch_inflight",
                        "Requests routed to the branch and not completed", read_inflight, bs);
  }
}

void
sedp_route_clear_stage (Stage *s)
{
  for (guint b = 0; b < s->n_branches; b++)
    g_mutex_clear (&s->branches[b].lock);
  g_clear_pointer (&s->branches, g_free);
  s->n_branches = 0;
}

/* One token of the branch's rate bucket (0.1 s of its rate, at least 1), if there is one. */
static gboolean
take_token (BranchState *bs)
{
  if (bs->max_rate <= 0)
    return TRUE;
  gint64 now = g_get_monotonic_time ();
  double burst = MAX (1.0, bs->max_rate / 10);
  g_mutex_lock (&bs->lock);
  bs->tokens = MIN (burst, bs->tokens + (double) (now - bs->refilled_at) * bs->max_rate / 1e6);
  bs->refilled_at = now;
  gboolean ok = bs->tokens >= 1.0;
  if (ok)
    bs->tokens -= 1.0;
  g_mutex_unlock (&bs->lock);
  return ok;
}

/* Admits the request into branch @b: FALSE with @why when a quota refuses it. */
static gboolean
admit (BranchState *bs, GString *why)
{
  if (bs->max_inflight > 0) {
    guint now = (guint) g_atomic_int_add (&bs->inflight, 1) + 1;
    if (now > bs->max_inflight) {
      g_atomic_int_add (&bs->inflight, -1);
      g_string_printf (why, "in flight %u of %u", bs->max_inflight, bs->max_inflight);
      return FALSE;
    }
  } else {
    g_atomic_int_inc (&bs->inflight);
  }
  if (!take_token (bs)) {
    g_atomic_int_add (&bs->inflight, -1);
    g_string_printf (why, "rate %g/s", bs->max_rate);
    return FALSE;
  }
  return TRUE;
}

/* Request scope: the request enters every branch it was routed to, or none (a quota refused
 * it: the request completes OVERLOADED). Records the holds and the routes in the request. */
static gboolean
enter_branches (Stage *s, SedpEvent *ev)
{
  SedpRequest *r = ev->request;
  guint64 routes = ev->routes;
  g_autoptr (GString) why = g_string_new (NULL);
  for (guint b = 0; b < s->n_branches; b++) {
    if (!(routes & (G_GUINT64_CONSTANT (1) << b)))
      continue;
    if (!admit (&s->branches[b], why)) {
      for (guint a = 0; a < b; a++)
        if (routes & (G_GUINT64_CONSTANT (1) << a))
          g_atomic_int_add (&s->branches[a].inflight, -1);
      sedp_counter_add (s->branches[b].m_refused, 1);
      g_autofree char *msg = g_strdup_printf ("stage '%s': branch '%s' is over its quota (%s)",
                                              s->ctx.name, s->node->branches[b], why->str);
      sedp_request_complete (r, SEDP_STATUS_OVERLOADED, msg);
      return FALSE;
    }
  }
  g_mutex_lock (&r->lock);
  if (r->done) { /* completed meanwhile (deadline): it holds nothing */
    g_mutex_unlock (&r->lock);
    for (guint b = 0; b < s->n_branches; b++)
      if (routes & (G_GUINT64_CONSTANT (1) << b))
        g_atomic_int_add (&s->branches[b].inflight, -1);
    return FALSE;
  }
  for (guint b = 0; b < s->n_branches; b++)
    if (routes & (G_GUINT64_CONSTANT (1) << b)) {
      if (r->holds == NULL)
        r->holds = g_ptr_array_new ();
      g_ptr_array_add (r->holds, &s->branches[b]);
      if (r->result.routes == NULL)
        r->result.routes = g_ptr_array_new ();
      g_ptr_array_add (r->result.routes, (gpointer) s->node->route_names[b]);
    }
  g_mutex_unlock (&r->lock);
  return TRUE;
}

void
sedp_route_release (SedpRequest *r, gint64 latency_us)
{
  if (r->holds == NULL)
    return;
  for (guint i = 0; i < r->holds->len; i++) {
    BranchState *bs = r->holds->pdata[i];
    sedp_histogram_observe (bs->m_latency, (double) latency_us);
    g_atomic_int_add (&bs->inflight, -1);
  }
  g_clear_pointer (&r->holds, g_ptr_array_unref);
}

/* A skip for input @slot of a stage: the branch before it was not taken. */
static SedpEvent *
skip_event (SedpRequest *r, int frame_index, guint slot)
{
  SedpEvent *ev = sedp_event_new (r, frame_index, NULL);
  ev->skip = TRUE;
  ev->slot = slot;
  return ev;
}

/* A skip reached @stage and the stage is not taken: its outputs get skips, a sink counts it. */
void
sedp_route_pass_skip (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *ev)
{
  const SedpGraphNode *node = stage->node;
  if (stage->is_sink) {
    g_mutex_lock (&ev->request->lock);
    ev->request->skipped = TRUE;
    g_mutex_unlock (&ev->request->lock);
    sedp_request_collect (ev->request, NULL);
  }
  for (guint k = 0; k < node->n_outputs; k++)
    sedp_runtime_deliver (p, x, &p->stages[node->outputs[k]],
                          skip_event (ev->request, ev->frame_index, node->output_slots[k]));
  sedp_event_free (ev);
}

gboolean
sedp_route_forward (SedpPipeline *p, Stage *s, SedpEvent *ev, SyncExec *x)
{
  const SedpGraphNode *node = s->node;
  guint64 all = s->n_branches == 64 ? G_MAXUINT64 : (G_GUINT64_CONSTANT (1) << s->n_branches) - 1;
  if (ev->routes & ~all) {
    g_critical ("stage '%s' routed an event to a branch it does not have (it has %u)",
                s->ctx.name, s->n_branches);
    ev->routes &= all;
  }
  for (guint b = 0; b < s->n_branches; b++)
    if (ev->routes & (G_GUINT64_CONSTANT (1) << b))
      sedp_counter_add (s->branches[b].m_routed, 1);
  if (ev->frame_index == SEDP_FRAME_INDEX_REQUEST && !enter_branches (s, ev)) {
    sedp_event_free (ev);
    return FALSE;
  }
  for (guint k = 0; k < node->n_outputs; k++) {
    int b = node->output_branch[k];
    Stage *to = &p->stages[node->outputs[k]];
    if (b >= 0 && !(ev->routes & (G_GUINT64_CONSTANT (1) << b))) {
      sedp_runtime_deliver (p, x, to, skip_event (ev->request, ev->frame_index, node->output_slots[k]));
      continue;
    }
    SedpEvent *next = sedp_event_new (ev->request, ev->frame_index, sedp_frame_ref (ev->frame));
    next->slot = node->output_slots[k];
    sedp_runtime_deliver (p, x, to, next);
  }
  sedp_event_free (ev);
  return TRUE;
}
