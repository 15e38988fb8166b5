/* sedp — the SDK's device functions in a build without OpenCL (meson did not find OpenCL and
 * CLBlast, or -Dopencl=disabled): opening or listing devices fails with the fix in the message. */
#include <sedp/engine.h>

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
