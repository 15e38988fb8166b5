/* sedp — the device's streams (docs/opencl.md §5): in-order command queues created on first use
 * (one per stream, or three with overlap: §5.1), a run assigned to the active stream with the
 * fewest runs in flight, the active count set by sedp_nn_device_set_streams. */
#include "ocl-private.h"

#include "ocl-auto.h"

static cl_command_queue
queue_new (SedpNnDevice *d, GError **error)
{
  cl_int rc = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue (d->context, d->id, 0, &rc);
  if (q == NULL || rc != CL_SUCCESS) {
    nn_ocl_set_error (error, d, "clCreateCommandQueue", rc == CL_SUCCESS ? CL_OUT_OF_RESOURCES : rc);
    return NULL;
  }
  return q;
}

/* Makes stream @s's queues (under the device's lock): one, or three with overlap. */
static gboolean
stream_make (SedpNnDevice *d, OclStream *s, GError **error)
{
  cl_command_queue q = queue_new (d, error), up = q, down = q;
  if (q && d->overlap) {
    up = queue_new (d, error);
    down = up ? queue_new (d, error) : NULL;
  }
  if (q == NULL || up == NULL || down == NULL) {
    if (up && up != q)
      clReleaseCommandQueue (up);
    if (q)
      clReleaseCommandQueue (q);
    return FALSE;
  }
  s->up = up;
  s->down = down;
  g_atomic_pointer_set (&s->queue, q);
  return TRUE;
}

/* Creates stream @k's queues if it has none yet; its compute queue, or NULL with an error. */
static cl_command_queue
stream_queue (SedpNnDevice *d, guint k, GError **error)
{
  cl_command_queue q = g_atomic_pointer_get (&d->streams[k].queue);
  if (q)
    return q;
  g_mutex_lock (&d->lock);
  if (d->streams[k].queue == NULL)
    stream_make (d, &d->streams[k], error);
  q = d->streams[k].queue;
  g_mutex_unlock (&d->lock);
  return q;
}

OclStream *
nn_ocl_stream_pick (SedpNnDevice *d, guint *concurrency, GError **error)
{
  guint active = (guint) g_atomic_int_get (&d->active);
  guint start = (guint) g_atomic_int_add (&d->rr, 1) % active, best = start;
  gint best_load = G_MAXINT;
  for (guint i = 0; i < active; i++) {
    guint k = (start + i) % active;
    gint load = g_atomic_int_get (&d->streams[k].in_flight);
    if (load < best_load) {
      best_load = load;
      best = k;
    }
  }
  if (stream_queue (d, best, error) == NULL)
    return NULL;
  g_atomic_int_inc (&d->streams[best].in_flight);
  *concurrency = (guint) g_atomic_int_add (&d->in_flight, 1) + 1;
  return &d->streams[best];
}

void
nn_ocl_stream_done (SedpNnDevice *d, OclStream *s, guint64 rows, guint concurrency)
{
  g_atomic_int_add (&s->in_flight, -1);
  g_atomic_int_add (&d->in_flight, -1);
  if (g_atomic_pointer_get (&d->autoc) == NULL)
    return;
  g_mutex_lock (&d->auto_lock);
  if (d->autoc) {
    guint streams = nn_auto_observe (d->autoc, g_get_monotonic_time (), concurrency, rows);
    g_atomic_int_set (&d->active, (gint) streams);
  }
  g_mutex_unlock (&d->auto_lock);
}

/* Installs @autoc (NULL: fixed counts) and frees the previous controller. */
void
nn_ocl_set_auto (SedpNnDevice *d, struct _NnAuto *autoc)
{
  g_mutex_lock (&d->auto_lock);
  struct _NnAuto *old = d->autoc;
  g_atomic_pointer_set (&d->autoc, autoc);
  if (autoc)
    g_atomic_int_set (&d->active, (gint) nn_auto_streams (autoc));
  g_mutex_unlock (&d->auto_lock);
  nn_auto_free (old);
}

cl_command_queue
nn_ocl_setup_queue (SedpNnDevice *d, GError **error)
{
  return stream_queue (d, 0, error);
}

void
nn_ocl_streams_clear (SedpNnDevice *d)
{
  nn_ocl_set_auto (d, NULL);
  for (guint k = 0; k < SEDP_NN_MAX_STREAMS; k++) {
    OclStream *s = &d->streams[k];
    if (s->queue == NULL)
      continue;
    if (s->up != s->queue) {
      clReleaseCommandQueue (s->up);
      clReleaseCommandQueue (s->down);
    }
    clReleaseCommandQueue (s->queue);
    *s = (OclStream){0};
  }
}

guint
sedp_nn_device_get_queues_per_stream (const SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, 0);
  return device->overlap ? 3 : 1;
}

gboolean
sedp_nn_device_set_streams (SedpNnDevice *device, guint streams, GError **error)
{
  g_return_val_if_fail (device != NULL, FALSE);
  if (streams < 1 || streams > SEDP_NN_MAX_STREAMS) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_INPUT,
                 "streams: %u is not 1 to %d (OpenCL device %s)", streams, SEDP_NN_MAX_STREAMS,
                 device->label);
    return FALSE;
  }
  nn_ocl_set_auto (device, NULL);
  g_atomic_int_set (&device->active, (gint) streams);
  return TRUE;
}

guint
sedp_nn_device_get_streams (const SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, 0);
  return (guint) g_atomic_int_get ((gint *) &device->active);
}

guint
sedp_nn_device_get_stream_changes (SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, 0);
  g_mutex_lock (&device->auto_lock);
  guint n = device->autoc ? nn_auto_changes (device->autoc) : 0;
  g_mutex_unlock (&device->auto_lock);
  return n;
}
