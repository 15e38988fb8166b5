/* sedp — the per-device store of constants (docs/opencl.md §4): initializers and values a plan
 * folded, uploaded once per device and shared by every plan, instance and worker on it; an
 * initializer is found by its address, a plan-made value by the SHA-256 of its bytes. */
#include "ocl-private.h"

#include <string.h>

static char *
weight_key (gconstpointer host, gsize bytes, gboolean stable)
{
  if (stable)
    return g_strdup_printf ("p:%p:%zu", host, bytes);
  g_autofree char *digest = g_compute_checksum_for_data (G_CHECKSUM_SHA256, host, bytes);
  return g_strdup_printf ("d:%s:%zu", digest, bytes);
}

static void
weight_free (OclWeight *w)
{
  if (w->mem)
    clReleaseMemObject (w->mem);
  g_free (w->key);
  g_free (w);
}

/* A new weight for @host, uploaded (under the device's lock). */
static OclWeight *
weight_upload (SedpNnDevice *d, gconstpointer host, gsize bytes, const char *what, GError **error)
{
  if (bytes > d->max_alloc) {
    g_autofree char *have = nn_ocl_size (bytes);
    g_autofree char *max = nn_ocl_size (d->max_alloc);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "%s needs %s in one buffer, OpenCL device %s allows %s per buffer "
                 "(CL_DEVICE_MAX_MEM_ALLOC_SIZE): use engine = cpu for this model", what, have,
                 d->label, max);
    return NULL;
  }
  cl_int rc = CL_SUCCESS;
  cl_mem_flags flags = CL_MEM_READ_ONLY | (bytes ? CL_MEM_COPY_HOST_PTR : 0);
  /* The buffer is at least 64 bytes and CL_MEM_COPY_HOST_PTR reads all of it: a smaller
   * constant is copied from a zero-padded block. */
  guint8 small[64] = {0};
  if (bytes > 0 && bytes < sizeof small)
    host = memcpy (small, host, bytes);
  cl_mem mem = clCreateBuffer (d->context, flags, MAX (bytes, 64), bytes ? (void *) host : NULL, &rc);
  if (mem == NULL || rc != CL_SUCCESS) {
    g_autofree char *w = g_strdup_printf ("uploading %s (%zu bytes)", what, bytes);
    nn_ocl_set_error (error, d, w, rc);
    return NULL;
  }
  OclWeight *wt = g_new0 (OclWeight, 1);
  wt->mem = mem;
  wt->bytes = bytes;
  return wt;
}

OclWeight *
nn_ocl_weight_acquire (SedpNnDevice *d, gconstpointer host, gsize bytes, gboolean stable,
                       const char *what, GError **error)
{
  char *key = weight_key (host, bytes, stable);
  g_mutex_lock (&d->lock);
  if (d->weights == NULL)
    d->weights = g_hash_table_new (g_str_hash, g_str_equal);
  OclWeight *w = g_hash_table_lookup (d->weights, key);
  if (w == NULL && (w = weight_upload (d, host, bytes, what, error))) {
    w->key = g_steal_pointer (&key);
    g_hash_table_insert (d->weights, w->key, w);
    d->weight_bytes += bytes;
  }
  if (w)
    w->refs++;
  g_mutex_unlock (&d->lock);
  g_free (key);
  return w;
}

void
nn_ocl_weight_release (SedpNnDevice *d, OclWeight *w)
{
  if (w == NULL)
    return;
  g_mutex_lock (&d->lock);
  gboolean last = --w->refs == 0;
  if (last) {
    g_hash_table_remove (d->weights, w->key);
    d->weight_bytes -= w->bytes;
  }
  g_mutex_unlock (&d->lock);
  if (last)
    weight_free (w);
}

void
nn_ocl_weights_clear (SedpNnDevice *d)
{
  g_clear_pointer (&d->weights, g_hash_table_unref);
}

void
sedp_nn_device_get_memory (SedpNnDevice *device, guint64 *weights, guint64 *arenas)
{
  g_return_if_fail (device != NULL);
  g_mutex_lock (&device->lock);
  *weights = device->weight_bytes;
  *arenas = device->arena_bytes;
  g_mutex_unlock (&device->lock);
}
