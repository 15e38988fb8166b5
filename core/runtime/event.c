/* sedp — events: one frame of one request on its way between stages. */
#include "runtime-private.h"

SedpEvent *
sedp_event_new (SedpRequest *request, int frame_index, SedpFrame *frame)
{
  SedpEvent *ev = g_new0 (SedpEvent, 1);
  ev->request = sedp_request_ref (request);
  ev->frame_index = frame_index;
  ev->frame = frame;
  return ev;
}

void
sedp_event_free (SedpEvent *ev)
{
  if (ev == NULL)
    return;
  if (ev->frame)
    sedp_frame_unref (ev->frame);
  if (ev->items)
    sedp_frame_unref (ev->items);
  g_clear_error (&ev->error);
  sedp_request_unref (ev->request);
  g_free (ev);
}

SedpFrame *
sedp_event_get_frame (SedpEvent *ev)
{
  g_return_val_if_fail (ev != NULL, NULL);
  return ev->frame;
}

SedpRequest *
sedp_event_get_request (SedpEvent *ev)
{
  g_return_val_if_fail (ev != NULL, NULL);
  return ev->request;
}

int
sedp_event_get_frame_index (const SedpEvent *ev)
{
  g_return_val_if_fail (ev != NULL, 0);
  return ev->frame_index;
}

void
sedp_event_fail (SedpEvent *ev, const GError *error)
{
  g_return_if_fail (ev != NULL && error != NULL);
  if (ev->error == NULL)
    ev->error = g_error_copy (error);
}

void
sedp_event_drop (SedpEvent *ev)
{
  g_return_if_fail (ev != NULL);
  ev->dropped = TRUE;
}

void
sedp_event_set_items (SedpEvent *ev, SedpFrame *items)
{
  g_return_if_fail (ev != NULL && items != NULL);
  if (ev->frame_index != SEDP_FRAME_INDEX_REQUEST) {
    g_critical ("sedp_event_set_items: only the source stage (request scope) may set items");
    sedp_frame_unref (items);
    return;
  }
  if (ev->items)
    sedp_frame_unref (ev->items);
  ev->items = items;
}

void
sedp_event_route (SedpEvent *ev, guint branch)
{
  g_return_if_fail (ev != NULL);
  if (branch >= SEDP_MAX_BRANCHES) {
    g_critical ("sedp_event_route: branch %u out of range (at most %u branches)", branch,
                SEDP_MAX_BRANCHES);
    return;
  }
  ev->routes |= G_GUINT64_CONSTANT (1) << branch;
}

guint64
sedp_event_get_routes (const SedpEvent *ev)
{
  g_return_val_if_fail (ev != NULL, 0);
  return ev->routes;
}
