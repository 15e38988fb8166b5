/* sedp — OpenCL error codes by name, for messages ("clBuildProgram: CL_BUILD_PROGRAM_FAILURE").
 */
#include "ocl-private.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

#define E(code) {code, #code}

static const struct {
  cl_int code;
  const char *name;
} names[] = {
  E (CL_SUCCESS),
  E (CL_DEVICE_NOT_FOUND),
  E (CL_DEVICE_NOT_AVAILABLE),
  E (CL_COMPILER_NOT_AVAILABLE),
  E (CL_MEM_OBJECT_ALLOCATION_FAILURE),
  E (CL_OUT_OF_RESOURCES),
  E (CL_OUT_OF_HOST_MEMORY),
  E (CL_PROFILING_INFO_NOT_AVAILABLE),
  E (CL_MEM_COPY_OVERLAP),
  E (CL_IMAGE_FORMAT_MISMATCH),
  E (CL_IMAGE_FORMAT_NOT_SUPPORTED),
  E (CL_BUILD_PROGRAM_FAILURE),
  E (CL_MAP_FAILURE),
  E (CL_MISALIGNED_SUB_BUFFER_OFFSET),
  E (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
  E (CL_COMPILE_PROGRAM_FAILURE),
  E (CL_LINKER_NOT_AVAILABLE),
  E (CL_LINK_PROGRAM_FAILURE),
  E (CL_DEVICE_PARTITION_FAILED),
  E (CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
  E (CL_INVALID_VALUE),
  E (CL_INVALID_DEVICE_TYPE),
  E (CL_INVALID_PLATFORM),
  E (CL_INVALID_DEVICE),
  E (CL_INVALID_CONTEXT),
  E (CL_INVALID_QUEUE_PROPERTIES),
  E (CL_INVALID_COMMAND_QUEUE),
  E (CL_INVALID_HOST_PTR),
  E (CL_INVALID_MEM_OBJECT),
  E (CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
  E (CL_INVALID_IMAGE_SIZE),
  E (CL_INVALID_SAMPLER),
  E (CL_INVALID_BINARY),
  E (CL_INVALID_BUILD_OPTIONS),
  E (CL_INVALID_PROGRAM),
  E (CL_INVALID_PROGRAM_EXECUTABLE),
  E (CL_INVALID_KERNEL_NAME),
  E (CL_INVALID_KERNEL_DEFINITION),
  E (CL_INVALID_KERNEL),
  E (CL_INVALID_ARG_INDEX),
  E (CL_INVALID_ARG_VALUE),
  E (CL_INVALID_ARG_SIZE),
  E (CL_INVALID_KERNEL_ARGS),
  E (CL_INVALID_WORK_DIMENSION),
  E (CL_INVALID_WORK_GROUP_SIZE),
  E (CL_INVALID_WORK_ITEM_SIZE),
  E (CL_INVALID_GLOBAL_OFFSET),
  E (CL_INVALID_EVENT_WAIT_LIST),
  E (CL_INVALID_EVENT),
  E (CL_INVALID_OPERATION),
  E (CL_INVALID_GL_OBJECT),
  E (CL_INVALID_BUFFER_SIZE),
  E (CL_INVALID_MIP_LEVEL),
  E (CL_INVALID_GLOBAL_WORK_SIZE),
  E (CL_INVALID_PROPERTY),
  E (CL_INVALID_IMAGE_DESCRIPTOR),
  E (CL_INVALID_COMPILER_OPTIONS),
  E (CL_INVALID_LINKER_OPTIONS),
  E (CL_INVALID_DEVICE_PARTITION_COUNT),
  E (CL_PLATFORM_NOT_FOUND_KHR),
};

const char *
nn_ocl_error_name (cl_int code)
{
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (names[i].code == code)
      return names[i].name;
  return "an unknown OpenCL error";
}

void
nn_ocl_set_error (GError **error, const SedpNnDevice *d, const char *what, cl_int code)
{
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE, "OpenCL device %s: %s: %s (%d)",
               d->label, what, nn_ocl_error_name (code), (int) code);
}

char *
nn_ocl_size (guint64 bytes)
{
  g_autofree char *s = g_format_size_full (bytes, G_FORMAT_SIZE_IEC_UNITS);
  GString *out = g_string_new (s);
  g_string_replace (out, "\u00a0", " ", 0); /* GLib puts a no-break space before the unit */
  return g_string_free (out, FALSE);
}
