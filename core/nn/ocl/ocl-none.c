/* sedp — the SDK's device functions in a build without OpenCL (meson did not find OpenCL and
 * CLBlast, or -Dopencl=disabled): opening or listing devices fails with the fix in the message. */
#include "../exec/plan-private.h"

static void
without_opencl (GError **error)
{
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "sedp was built without OpenCL (install ocl-icd-opencl-dev, opencl-headers and "
               "libclblast-dev, and run meson setup again)");
}

SedpNnDevice *
sedp_nn_device_open (const char *spec, GError **error)
{
  without_opencl (error);
  return NULL;
}

/* No device can exist in this build: the functions below only check their argument. */
SedpNnDevice *
sedp_nn_device_ref (SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return device;
}

void
sedp_nn_device_unref (SedpNnDevice *device)
{
}

const char *
sedp_nn_device_get_label (const SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return NULL;
}

char **
sedp_nn_device_list (GError **error)
{
  without_opencl (error);
  return NULL;
}

gboolean
sedp_nn_device_set_streams (SedpNnDevice *device, guint streams, GError **error)
{
  without_opencl (error);
  return FALSE;
}

guint
sedp_nn_device_get_streams (const SedpNnDevice *device)
{
  return 0;
}

guint
sedp_nn_device_get_queues_per_stream (const SedpNnDevice *device)
{
  return 0;
}

/* Never called: no plan can have a device in this build. */
gboolean
nn_ocl_plan_lower (Plan *p, SedpNnDevice *device, GError **error)
{
  without_opencl (error);
  return FALSE;
}

gboolean
nn_ocl_plan_run (Plan *p, const SedpNnTensor *inputs, guint n_outputs, SedpNnTensor *outputs,
                 GError **error)
{
  without_opencl (error);
  return FALSE;
}

void
nn_ocl_plan_free (struct _OclPlan *o)
{
}

void
nn_ocl_plan_describe (const Plan *p, GString *out)
{
}

void
sedp_nn_device_get_memory (SedpNnDevice *device, guint64 *weights, guint64 *arenas)
{
  *weights = *arenas = 0;
}

gboolean
sedp_nn_device_set_streams_auto (SedpNnDevice *device, SedpNnModel *model, gint64 batch,
                                 guint concurrency, guint profile_ms, GError **error)
{
  without_opencl (error);
  return FALSE;
}

guint
sedp_nn_device_get_stream_changes (SedpNnDevice *device)
{
  return 0;
}
