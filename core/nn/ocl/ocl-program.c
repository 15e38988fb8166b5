/* sedp — the engine's OpenCL program (docs/opencl.md §6): our kernels' source (the .cl files of
 * kernels/, embedded at build time), built once per device with fixed options, the build log in
 * errors, and each kernel's fixed local size. */
#include "ocl-private.h"

#include <string.h>

/* The first bytes of a build log that an error carries. */
#define LOG_MAX 2048

static char *extra_source; /* nn_ocl_test_set_extra_source */

void
nn_ocl_test_set_extra_source (const char *source)
{
  g_free (extra_source);
  extra_source = g_strdup (source);
}

/* The build log of @program on @d, at most LOG_MAX bytes of valid UTF-8, stripped. */
static char *
build_log (SedpNnDevice *d, cl_program program)
{
  size_t size = 0;
  if (clGetProgramBuildInfo (program, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) != CL_SUCCESS ||
      size == 0)
    return g_strdup ("(no build log)");
  g_autofree char *log = g_malloc0 (size + 1);
  clGetProgramBuildInfo (program, d->id, CL_PROGRAM_BUILD_LOG, size, log, NULL);
  char *cut = g_utf8_make_valid (log, MIN (strlen (log), LOG_MAX));
  return g_strstrip (cut);
}

/* Its preferred work-group size multiple × 8, capped by what the kernel and the device allow. */
static size_t
fixed_local_size (SedpNnDevice *d, cl_kernel kernel)
{
  size_t multiple = 1, kernel_max = d->max_work_group;
  clGetKernelWorkGroupInfo (kernel, d->id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                            sizeof multiple, &multiple, NULL);
  clGetKernelWorkGroupInfo (kernel, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_max,
                            &kernel_max, NULL);
  size_t local = MIN (MAX (multiple, 1) * 8, MIN (kernel_max, d->max_work_group));
  return MAX (local, 1);
}

/* Fills d->local_sizes from the built program. */
static gboolean
record_kernels (SedpNnDevice *d, GError **error)
{
  cl_uint n = 0;
  cl_int rc = clCreateKernelsInProgram (d->program, 0, NULL, &n);
  g_autofree cl_kernel *kernels = g_new0 (cl_kernel, MAX (n, 1));
  if (rc == CL_SUCCESS)
    rc = clCreateKernelsInProgram (d->program, n, kernels, NULL);
  if (rc != CL_SUCCESS) {
    nn_ocl_set_error (error, d, "clCreateKernelsInProgram", rc);
    return FALSE;
  }
  d->local_sizes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (cl_uint i = 0; i < n; i++) {
    char name[256] = "";
    clGetKernelInfo (kernels[i], CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
    g_hash_table_insert (d->local_sizes, g_strdup (name),
                         GSIZE_TO_POINTER (fixed_local_size (d, kernels[i])));
    clReleaseKernel (kernels[i]);
  }
  return TRUE;
}

gboolean
nn_ocl_program_build (SedpNnDevice *d, GError **error)
{
  const char *sources[2] = {nn_ocl_kernels_source, extra_source};
  cl_int rc = CL_SUCCESS;
  d->program = clCreateProgramWithSource (d->context, extra_source ? 2 : 1, sources, NULL, &rc);
  if (d->program == NULL || rc != CL_SUCCESS) {
    nn_ocl_set_error (error, d, "clCreateProgramWithSource", rc);
    return FALSE;
  }
  const char *options = d->fp64 ? "-cl-std=CL1.2 -DNN_HAVE_FP64" : "-cl-std=CL1.2";
  rc = clBuildProgram (d->program, 1, &d->id, options, NULL, NULL);
  if (rc != CL_SUCCESS) {
    g_autofree char *log = build_log (d, d->program);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "OpenCL device %s: the engine's kernels do not build (clBuildProgram: %s): %s",
                 d->label, nn_ocl_error_name (rc), log);
    return FALSE;
  }
  return record_kernels (d, error);
}

void
nn_ocl_program_clear (SedpNnDevice *d)
{
  g_clear_pointer (&d->local_sizes, g_hash_table_unref);
  if (d->program)
    clReleaseProgram (d->program);
  d->program = NULL;
}

cl_kernel
nn_ocl_kernel_new (SedpNnDevice *d, const char *name, size_t *local_size, GError **error)
{
  gpointer local = NULL;
  if (!g_hash_table_lookup_extended (d->local_sizes, name, NULL, &local)) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "OpenCL device %s: the engine's program has no kernel '%s'", d->label, name);
    return NULL;
  }
  cl_int rc = CL_SUCCESS;
  cl_kernel k = clCreateKernel (d->program, name, &rc);
  if (k == NULL || rc != CL_SUCCESS) {
    nn_ocl_set_error (error, d, "clCreateKernel", rc);
    return NULL;
  }
  *local_size = GPOINTER_TO_SIZE (local);
  return k;
}

size_t
nn_ocl_global_size (size_t n, size_t local_size)
{
  return (n + local_size - 1) / local_size * local_size;
}
