/* sedp — OpenCL platforms and devices (docs/opencl.md §2.1, §7): enumeration, the `spec` that
 * picks a device, the device record with its context, and the registry of open devices, so that
 * a process opens each device once. */
#include "ocl-private.h"

#include <string.h>

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

/* One device as enumeration found it. */
typedef struct {
  cl_platform_id platform;
  cl_device_id id;
  char *name; /* "PLATFORM: DEVICE" */
} OclEntry;

static void
entry_free (gpointer p)
{
  OclEntry *e = p;
  g_free (e->name);
  g_free (e);
}

static GMutex registry_lock;
static GHashTable *registry; /* cl_device_id → SedpNnDevice * (not referenced) */

/* ---- queries ---- */

/* A string parameter of a platform (@device NULL) or a device, whitespace stripped. */
static char *
info_string (cl_platform_id platform, cl_device_id device, cl_uint param)
{
  size_t size = 0;
  cl_int rc = device ? clGetDeviceInfo (device, param, 0, NULL, &size)
                     : clGetPlatformInfo (platform, param, 0, NULL, &size);
  if (rc != CL_SUCCESS || size == 0)
    return g_strdup ("?");
  char *s = g_malloc0 (size + 1);
  rc = device ? clGetDeviceInfo (device, param, size, s, NULL)
              : clGetPlatformInfo (platform, param, size, s, NULL);
  if (rc != CL_SUCCESS)
    s[0] = '\0';
  return g_strstrip (s);
}

static cl_ulong
info_ulong (cl_device_id device, cl_uint param)
{
  cl_ulong v = 0;
  return clGetDeviceInfo (device, param, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static const char *
type_name (cl_device_type type)
{
  if (type & CL_DEVICE_TYPE_GPU)
    return "GPU";
  if (type & CL_DEVICE_TYPE_CPU)
    return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR)
    return "ACCELERATOR";
  return "CUSTOM";
}

/* ---- enumeration ---- */

static void
no_platform (cl_int rc, GError **error)
{
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "no OpenCL platform (clGetPlatformIDs: %s): install an ICD such as "
               "pocl-opencl-icd or the GPU vendor's, or set engine = cpu",
               rc == CL_SUCCESS ? "0 platforms" : nn_ocl_error_name (rc));
}

/* Appends @platform's devices to @all; records the platform's name in @empty when it has none. */
static void
add_platform (GPtrArray *all, cl_platform_id platform, GString *empty, cl_int *last_rc)
{
  g_autofree char *pname = info_string (platform, NULL, CL_PLATFORM_NAME);
  cl_uint n = 0;
  cl_int rc = clGetDeviceIDs (platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (rc != CL_SUCCESS || n == 0) {
    g_string_append_printf (empty, "%s'%s'", empty->len ? ", " : "", pname);
    *last_rc = rc;
    return;
  }
  g_autofree cl_device_id *ids = g_new0 (cl_device_id, n);
  if (clGetDeviceIDs (platform, CL_DEVICE_TYPE_ALL, n, ids, NULL) != CL_SUCCESS)
    n = 0;
  for (cl_uint i = 0; i < n; i++) {
    OclEntry *e = g_new0 (OclEntry, 1);
    g_autofree char *dname = info_string (NULL, ids[i], CL_DEVICE_NAME);
    e->platform = platform;
    e->id = ids[i];
    e->name = g_strdup_printf ("%s: %s", pname, dname);
    g_ptr_array_add (all, e);
  }
}

/* Every device of every platform, in the ICD loader's order (OclEntry). */
static GPtrArray *
enumerate (GError **error)
{
  cl_uint n = 0;
  cl_int rc = clGetPlatformIDs (0, NULL, &n);
  g_autofree cl_platform_id *platforms = g_new0 (cl_platform_id, MAX (n, 1));
  if (rc == CL_SUCCESS && n > 0)
    rc = clGetPlatformIDs (n, platforms, NULL);
  if (rc != CL_SUCCESS || n == 0) {
    no_platform (rc, error);
    return NULL;
  }
  GPtrArray *all = g_ptr_array_new_with_free_func (entry_free);
  g_autoptr (GString) empty = g_string_new (NULL);
  cl_int last_rc = CL_SUCCESS;
  for (cl_uint i = 0; i < n; i++)
    add_platform (all, platforms[i], empty, &last_rc);
  if (all->len > 0)
    return all;
  g_ptr_array_unref (all);
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "no OpenCL device on platform%s %s (clGetDeviceIDs: %s); 'sedp model devices' "
               "lists what sedp sees",
               n > 1 ? "s" : "", empty->str,
               last_rc == CL_SUCCESS ? "0 devices" : nn_ocl_error_name (last_rc));
  return NULL;
}

/* "0: P: D, 1: P: D" */
static char *
names_of (GPtrArray *all, const guint *which, guint n_which)
{
  GString *s = g_string_new (NULL);
  for (guint k = 0; k < (which ? n_which : all->len); k++) {
    guint i = which ? which[k] : k;
    const OclEntry *e = all->pdata[i];
    g_string_append_printf (s, "%s%u: %s", k ? ", " : "", i, e->name);
  }
  return g_string_free (s, FALSE);
}

/* ---- the spec ---- */

static gboolean
resolve_index (GPtrArray *all, const char *spec, guint *index, GError **error)
{
  guint64 v = 0;
  if (g_ascii_string_to_unsigned (spec, 10, 0, G_MAXUINT, &v, NULL) && v < all->len) {
    *index = (guint) v;
    return TRUE;
  }
  g_autofree char *names = names_of (all, NULL, 0);
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "device = %s: out of range, there %s %u OpenCL device%s (%s)", spec,
               all->len == 1 ? "is" : "are", all->len, all->len == 1 ? "" : "s", names);
  return FALSE;
}

static gboolean
resolve_name (GPtrArray *all, const char *spec, guint *index, GError **error)
{
  g_autofree char *needle = g_utf8_casefold (spec, -1);
  g_autofree guint *hits = g_new0 (guint, all->len);
  guint n_hits = 0;
  for (guint i = 0; i < all->len; i++) {
    g_autofree char *hay = g_utf8_casefold (((OclEntry *) all->pdata[i])->name, -1);
    if (strstr (hay, needle))
      hits[n_hits++] = i;
  }
  if (n_hits == 1) {
    *index = hits[0];
    return TRUE;
  }
  g_autofree char *names = n_hits ? names_of (all, hits, n_hits) : names_of (all, NULL, 0);
  if (n_hits == 0)
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "device = %s: no OpenCL device matches (devices: %s)", spec, names);
  else
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "device = %s: matches %u devices (%s): give an index or a longer name", spec,
                 n_hits, names);
  return FALSE;
}

/* NULL or "": 0; digits: an index; anything else: a name. */
static gboolean
resolve (GPtrArray *all, const char *spec, guint *index, GError **error)
{
  if (spec == NULL || spec[0] == '\0') {
    *index = 0;
    return TRUE;
  }
  gboolean digits = TRUE;
  for (const char *c = spec; *c; c++)
    digits = digits && g_ascii_isdigit (*c);
  return digits ? resolve_index (all, spec, index, error) : resolve_name (all, spec, index, error);
}

/* ---- the device record ---- */

static void
device_free (SedpNnDevice *d)
{
  nn_ocl_streams_clear (d);
  nn_ocl_weights_clear (d);
  nn_ocl_program_clear (d);
  g_mutex_clear (&d->lock);
  g_mutex_clear (&d->blas_lock);
  g_mutex_clear (&d->auto_lock);
  if (d->context)
    clReleaseContext (d->context);
  g_free (d->label);
  g_free (d->name);
  g_free (d->lost);
  g_free (d);
}

static void
device_query (SedpNnDevice *d)
{
  d->type = info_ulong (d->id, CL_DEVICE_TYPE);
  d->global_mem = info_ulong (d->id, CL_DEVICE_GLOBAL_MEM_SIZE);
  d->max_alloc = info_ulong (d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  cl_uint align_bits = 0;
  clGetDeviceInfo (d->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  d->base_align = align_bits / 8;
  cl_bool unified = CL_FALSE;
  clGetDeviceInfo (d->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
  d->unified_memory = unified == CL_TRUE;
  cl_device_fp_config fp64 = 0;
  clGetDeviceInfo (d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
  d->fp64 = fp64 != 0;
  d->max_work_group = 1;
  clGetDeviceInfo (d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_work_group,
                   &d->max_work_group, NULL);
}

/* Whether @d's streams are three queues (docs/opencl.md §5.1): on every device type but CPU,
 * unless SEDP_OPENCL_OVERLAP is 0 or 1; another value is an error. */
static gboolean
overlap_choose (SedpNnDevice *d, GError **error)
{
  const char *env = g_getenv ("SEDP_OPENCL_OVERLAP");
  d->overlap = (d->type & CL_DEVICE_TYPE_CPU) == 0;
  if (env == NULL || *env == '\0')
    return TRUE;
  if (strcmp (env, "0") != 0 && strcmp (env, "1") != 0) {
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "OpenCL device %s: the environment variable SEDP_OPENCL_OVERLAP is '%s'; set it to "
                 "1 (three queues per stream), 0 (one) or unset it (three on all but CPU devices)",
                 d->label, env);
    return FALSE;
  }
  d->overlap = env[0] == '1';
  return TRUE;
}

/* A new device record for @e: context, properties, our program. */
static SedpNnDevice *
device_new (const OclEntry *e, guint index, GError **error)
{
  SedpNnDevice *d = g_new0 (SedpNnDevice, 1);
  d->ref_count = 1;
  d->active = 1;
  g_mutex_init (&d->lock);
  g_mutex_init (&d->blas_lock);
  g_mutex_init (&d->auto_lock);
  d->index = index;
  d->name = g_strdup (e->name);
  d->label = g_strdup_printf ("%u (%s)", index, e->name);
  d->platform = e->platform;
  d->id = e->id;
  device_query (d);
  if (!overlap_choose (d, error)) {
    device_free (d);
    return NULL;
  }
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties) e->platform, 0};
  cl_int rc = CL_SUCCESS;
  d->context = clCreateContext (props, 1, &d->id, NULL, NULL, &rc);
  if (d->context == NULL || rc != CL_SUCCESS) {
    nn_ocl_set_error (error, d, "clCreateContext", rc);
    device_free (d);
    return NULL;
  }
  if (!nn_ocl_program_build (d, error)) {
    device_free (d);
    return NULL;
  }
  return d;
}

/* ---- the SDK ---- */

SedpNnDevice *
sedp_nn_device_open (const char *spec, GError **error)
{
  g_autoptr (GPtrArray) all = enumerate (error);
  guint index = 0;
  if (all == NULL || !resolve (all, spec, &index, error))
    return NULL;
  const OclEntry *e = all->pdata[index];
  g_mutex_lock (&registry_lock);
  if (registry == NULL)
    registry = g_hash_table_new (NULL, NULL);
  SedpNnDevice *d = g_hash_table_lookup (registry, e->id);
  if (d)
    g_atomic_int_inc (&d->ref_count);
  else if ((d = device_new (e, index, error)))
    g_hash_table_insert (registry, d->id, d);
  g_mutex_unlock (&registry_lock);
  return d;
}

SedpNnDevice *
sedp_nn_device_ref (SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  g_atomic_int_inc (&device->ref_count);
  return device;
}

void
sedp_nn_device_unref (SedpNnDevice *device)
{
  if (device == NULL)
    return;
  /* Under the registry's lock, so that an open cannot take the device being closed. */
  g_mutex_lock (&registry_lock);
  gboolean last = g_atomic_int_dec_and_test (&device->ref_count);
  if (last)
    g_hash_table_remove (registry, device->id);
  if (last && g_hash_table_size (registry) == 0)
    g_clear_pointer (&registry, g_hash_table_unref);
  g_mutex_unlock (&registry_lock);
  if (last)
    device_free (device);
}

const char *
sedp_nn_device_get_label (const SedpNnDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return device->label;
}

/* "0  P: D  CPU  4.5 GiB  OpenCL C 1.2 PoCL" */
static char *
list_line (guint index, const OclEntry *e)
{
  cl_device_type type = info_ulong (e->id, CL_DEVICE_TYPE);
  g_autofree char *mem = g_format_size_full (info_ulong (e->id, CL_DEVICE_GLOBAL_MEM_SIZE),
                                             G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *version = info_string (NULL, e->id, CL_DEVICE_OPENCL_C_VERSION);
  return g_strdup_printf ("%u  %s  %s  %s  %s", index, e->name, type_name (type), mem, version);
}

char **
sedp_nn_device_list (GError **error)
{
  g_autoptr (GPtrArray) all = enumerate (error);
  if (all == NULL)
    return NULL;
  GPtrArray *lines = g_ptr_array_new ();
  for (guint i = 0; i < all->len; i++)
    g_ptr_array_add (lines, list_line (i, all->pdata[i]));
  g_ptr_array_add (lines, NULL);
  return (char **) g_ptr_array_free (lines, FALSE);
}

guint
nn_ocl_test_n_open (void)
{
  g_mutex_lock (&registry_lock);
  guint n = registry ? g_hash_table_size (registry) : 0;
  g_mutex_unlock (&registry_lock);
  return n;
}
