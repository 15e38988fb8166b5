/* sedp — a compiled plan lowered to an OpenCL device (docs/opencl.md §2.2, §4): the device arena
 * at the CPU plan's offsets plus one slot per graph input, each value's place on the device, the
 * commands, and a run: upload the inputs, enqueue the commands on a stream, download the outputs.
 * A step without a device lowering runs its CPU kernel on copies read back (the host fallback). */
#include "ocl-private.h"

#include "../exec/plan-private.h"

#include <stdarg.h>

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

void
nn_ocl_node_error (GError **error, const OclPlan *o, const Step *s, const char *what, cl_int code)
{
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "OpenCL device %s: node '%s' (%s): %s: %s (%d)", o->device->label,
               s->node->name ? s->node->name : "", s->node->op_type, what,
               nn_ocl_error_name (code), code);
}

/* ---- values on the device ---- */

gboolean
nn_ocl_ref (OclPlan *o, int v, OclRef *ref, GError **error)
{
  Plan *p = o->cpu;
  int r = nn_alias_root (p, v);
  if (o->refs[r].mem == NULL) {
    const Value *root = &p->values[r];
    if (root->kind == VALUE_TEMP) {
      o->refs[r] = (OclRef){o->arena, root->offset};
    } else if (root->kind == VALUE_INPUT) {
      o->refs[r] = (OclRef){o->arena, o->input_offset[root->input_index]};
    } else {
      gsize bytes = (gsize) root->numel * sedp_nn_dtype_size (root->dtype);
      g_autofree char *what = g_strdup_printf ("value '%s'", root->name);
      o->weights[r] = nn_ocl_weight_acquire (o->device, root->data, bytes, !root->owned_data,
                                             what, error);
      if (o->weights[r] == NULL)
        return FALSE;
      o->refs[r] = (OclRef){o->weights[r]->mem, 0};
    }
  }
  *ref = o->refs[r];
  return TRUE;
}

gboolean
nn_ocl_upload (OclPlan *o, gconstpointer data, gsize bytes, const char *what, cl_mem *mem,
               GError **error)
{
  OclWeight *w = nn_ocl_weight_acquire (o->device, data, bytes, FALSE, what, error);
  if (w == NULL)
    return FALSE;
  g_ptr_array_add (o->uploads, w);
  *mem = w->mem;
  return TRUE;
}

/* ---- commands ---- */

static gboolean
bind_arg (OclPlan *o, OclCmd *c, cl_uint *index, char kind, va_list *ap, GError **error)
{
  cl_kernel k = c->kernel;
  cl_int rc = CL_SUCCESS;
  switch (kind) {
  case 'v': {
    int v = va_arg (*ap, int);
    OclRef ref;
    if (!nn_ocl_ref (o, v, &ref, error))
      return FALSE;
    cl_ulong off = ref.offset / sedp_nn_dtype_size (o->cpu->values[v].dtype);
    rc = clSetKernelArg (k, (*index)++, sizeof (cl_mem), &ref.mem);
    if (rc == CL_SUCCESS)
      rc = clSetKernelArg (k, (*index)++, sizeof off, &off);
    break;
  }
  case 'u': {
    cl_ulong x = va_arg (*ap, guint64);
    rc = clSetKernelArg (k, (*index)++, sizeof x, &x);
    break;
  }
  case 'l': {
    cl_long x = va_arg (*ap, gint64);
    rc = clSetKernelArg (k, (*index)++, sizeof x, &x);
    break;
  }
  case 'i': {
    cl_int x = va_arg (*ap, int);
    rc = clSetKernelArg (k, (*index)++, sizeof x, &x);
    break;
  }
  case 'f': {
    cl_float x = (cl_float) va_arg (*ap, double);
    rc = clSetKernelArg (k, (*index)++, sizeof x, &x);
    break;
  }
  case 'm': {
    cl_mem x = va_arg (*ap, cl_mem);
    rc = clSetKernelArg (k, (*index)++, sizeof x, &x);
    break;
  }
  case 'r': {
    const OclRef *ref = va_arg (*ap, const OclRef *);
    cl_ulong off = ref->offset / (guint64) va_arg (*ap, int);
    rc = clSetKernelArg (k, (*index)++, sizeof (cl_mem), &ref->mem);
    if (rc == CL_SUCCESS)
      rc = clSetKernelArg (k, (*index)++, sizeof off, &off);
    break;
  }
  default: { /* '8' */
    const gint64 *x = va_arg (*ap, const gint64 *);
    cl_long8 l;
    for (int i = 0; i < 8; i++)
      l.s[i] = x[i];
    rc = clSetKernelArg (k, (*index)++, sizeof l, &l);
  }
  }
  if (rc != CL_SUCCESS)
    nn_ocl_node_error (error, o, c->step, c->what, rc);
  return rc == CL_SUCCESS;
}

gboolean
nn_ocl_add_kernel (OclPlan *o, const Step *s, const char *name, guint64 n, GError **error,
                   const char *fmt, ...)
{
  OclCmd c = {.kind = OCL_CMD_KERNEL, .step = s, .what = name};
  c.kernel = nn_ocl_kernel_new (o->device, name, &c.local, error);
  if (c.kernel == NULL)
    return FALSE;
  c.global = nn_ocl_global_size (MAX (n, 1), c.local);
  va_list ap;
  va_start (ap, fmt);
  cl_uint index = 0;
  gboolean ok = TRUE;
  for (const char *f = fmt; ok && *f; f++)
    ok = bind_arg (o, &c, &index, *f, &ap, error);
  va_end (ap);
  if (!ok) {
    clReleaseKernel (c.kernel);
    return FALSE;
  }
  g_array_append_val (o->cmds, c);
  return TRUE;
}

guint64
nn_ocl_status_word (OclPlan *o, const Step *s)
{
  o->n_status++;
  return o->status_offset / sizeof (guint32) + (guint64) (s - (const Step *) o->cpu->steps->data);
}

void
nn_ocl_add_host (OclPlan *o, const Step *s)
{
  OclCmd c = {.kind = OCL_CMD_HOST, .step = s, .what = "host"};
  g_array_append_val (o->cmds, c);
  o->n_host++;
}

static void
cmd_clear (OclCmd *c)
{
  if (c->kernel)
    clReleaseKernel (c->kernel);
  g_free (c->gemm.a_offs);
  g_free (c->gemm.b_offs);
  g_free (c->gemm.c_offs);
  g_free (c->gemm.alphas);
  g_free (c->gemm.betas);
}

/* ---- lowering ---- */

/* The arena: the CPU plan's temps, then one slot per graph input, then a status word per step. */
static gboolean
make_arena (OclPlan *o, GError **error)
{
  Plan *p = o->cpu;
  SedpNnDevice *d = o->device;
  gsize size = ALIGN_UP (p->arena_size, 64);
  o->input_offset = g_new0 (guint64, MAX (p->n_inputs, 1));
  for (guint i = 0; i < p->n_inputs; i++) {
    o->input_offset[i] = size;
    size += ALIGN_UP (sedp_nn_tensor_nbytes (&p->input_info[i]), 64);
  }
  o->status_offset = size;
  size += ALIGN_UP (sizeof (guint32) * p->steps->len, 64);
  o->arena_bytes = MAX (size, 64);
  if (o->arena_bytes > d->max_alloc) {
    g_autofree char *have = nn_ocl_size (o->arena_bytes);
    g_autofree char *max = nn_ocl_size (d->max_alloc);
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "at batch %" G_GINT64_FORMAT " the intermediate values need %s in one buffer, "
                 "OpenCL device %s allows %s per buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE): lower "
                 "max_batch_rows", p->batch, have, d->label, max);
    return FALSE;
  }
  cl_int rc = CL_SUCCESS;
  o->arena = clCreateBuffer (d->context, CL_MEM_READ_WRITE, o->arena_bytes, NULL, &rc);
  if (o->arena == NULL || rc != CL_SUCCESS) {
    g_autofree char *what = g_strdup_printf ("allocating %zu bytes of intermediate values at batch %"
                                             G_GINT64_FORMAT, o->arena_bytes, p->batch);
    nn_ocl_set_error (error, d, what, rc);
    return FALSE;
  }
  g_mutex_lock (&d->lock);
  d->arena_bytes += o->arena_bytes;
  g_mutex_unlock (&d->lock);
  return TRUE;
}

/* The host buffer outputs are downloaded into (docs/opencl.md §4): allocated by the driver
 * (CL_MEM_ALLOC_HOST_PTR: page-locked on a discrete GPU, so downloads are DMA transfers that run
 * while the device computes), mapped once and kept mapped until the plan is freed. */
static gboolean
make_host_out (OclPlan *o, gsize size, GError **error)
{
  SedpNnDevice *d = o->device;
  cl_int rc = CL_SUCCESS;
  cl_command_queue q = nn_ocl_setup_queue (d, error);
  if (q == NULL)
    return FALSE;
  o->host_out_mem = clCreateBuffer (d->context, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, size,
                                    NULL, &rc);
  if (o->host_out_mem && rc == CL_SUCCESS)
    o->host_out = clEnqueueMapBuffer (q, o->host_out_mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      size, 0, NULL, NULL, &rc);
  if (o->host_out == NULL || rc != CL_SUCCESS) {
    g_autofree char *what = g_strdup_printf ("allocating %zu bytes of host memory for the outputs",
                                             size);
    nn_ocl_set_error (error, d, what, rc == CL_SUCCESS ? CL_MEM_OBJECT_ALLOCATION_FAILURE : rc);
    o->host_out = NULL;
    return FALSE;
  }
  return TRUE;
}

static void
free_host_out (OclPlan *o)
{
  cl_command_queue q = o->host_out ? nn_ocl_setup_queue (o->device, NULL) : NULL;
  cl_event ev = NULL;
  if (q && clEnqueueUnmapMemObject (q, o->host_out_mem, o->host_out, 0, NULL, &ev) == CL_SUCCESS) {
    clWaitForEvents (1, &ev);
    clReleaseEvent (ev);
  }
  if (o->host_out_mem)
    clReleaseMemObject (o->host_out_mem);
}

/* Where each graph output is downloaded: TEMP and INPUT roots get a place in host_out. */
static gboolean
place_outputs (OclPlan *o, GError **error)
{
  Plan *p = o->cpu;
  gsize size = 0;
  o->out_offset = g_new0 (gsize, MAX (p->n_outputs, 1));
  for (guint i = 0; i < p->n_outputs; i++) {
    const Value *root = &p->values[nn_alias_root (p, p->output_values[i])];
    o->out_offset[i] = G_MAXSIZE;
    if (root->kind == VALUE_CONST)
      continue; /* on the host already */
    o->out_offset[i] = size;
    size += ALIGN_UP ((gsize) root->numel * sedp_nn_dtype_size (root->dtype), 64);
  }
  return make_host_out (o, MAX (size, 64), error);
}

/* CLBlast's temporary buffer: the largest any GEMM command needs. */
static gboolean
make_gemm_temp (OclPlan *o, GError **error)
{
  gsize bytes = 0;
  for (guint i = 0; i < o->cmds->len; i++)
    bytes = MAX (bytes, g_array_index (o->cmds, OclCmd, i).gemm.temp_bytes);
  if (bytes == 0)
    return TRUE;
  cl_int rc = CL_SUCCESS;
  o->gemm_temp = clCreateBuffer (o->device->context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
  if (o->gemm_temp == NULL || rc != CL_SUCCESS) {
    nn_ocl_set_error (error, o->device, "allocating CLBlast's temporary buffer", rc);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_ocl_plan_lower (Plan *p, SedpNnDevice *device, GError **error)
{
  OclPlan *o = g_new0 (OclPlan, 1);
  o->device = device;
  o->cpu = p;
  o->refs = g_new0 (OclRef, MAX (p->n_values, 1));
  o->weights = g_new0 (OclWeight *, MAX (p->n_values, 1));
  o->cmds = g_array_new (FALSE, TRUE, sizeof (OclCmd));
  o->uploads = g_ptr_array_new ();
  o->host_status = g_new0 (guint32, MAX (p->steps->len, 1));
  p->ocl = o;
  if (!make_arena (o, error))
    return FALSE;
  for (guint s = 0; s < p->steps->len; s++) {
    const Step *st = &g_array_index (p->steps, Step, s);
    if (st->n_out == 0)
      continue; /* folded into another step */
    OclLowerFn lower = nn_ocl_lowering (st->id);
    if (lower == NULL)
      nn_ocl_add_host (o, st);
    else if (!lower (o, st, error))
      return FALSE;
  }
  return place_outputs (o, error) && make_gemm_temp (o, error);
}

void
nn_ocl_plan_free (OclPlan *o)
{
  if (o == NULL)
    return;
  for (guint i = 0; i < o->cmds->len; i++)
    cmd_clear (&g_array_index (o->cmds, OclCmd, i));
  g_array_unref (o->cmds);
  for (guint v = 0; v < o->cpu->n_values; v++)
    nn_ocl_weight_release (o->device, o->weights[v]);
  for (guint i = 0; i < o->uploads->len; i++)
    nn_ocl_weight_release (o->device, o->uploads->pdata[i]);
  g_ptr_array_unref (o->uploads);
  if (o->arena) {
    g_mutex_lock (&o->device->lock);
    o->device->arena_bytes -= o->arena_bytes;
    g_mutex_unlock (&o->device->lock);
    clReleaseMemObject (o->arena);
  }
  if (o->gemm_temp)
    clReleaseMemObject (o->gemm_temp);
  g_free (o->refs);
  g_free (o->weights);
  g_free (o->input_offset);
  g_free (o->out_offset);
  free_host_out (o);
  g_free (o->host_status);
  g_free (o);
}

void
nn_ocl_plan_describe (const Plan *p, GString *out)
{
  const OclPlan *o = p->ocl;
  g_string_append_printf (out, "device: OpenCL %s, %u commands (%u on the host), device arena %zu "
                          "bytes\n", o->device->label, o->cmds->len, o->n_host, o->arena_bytes);
  for (guint i = 0; i < o->cmds->len; i++) {
    const OclCmd *c = &g_array_index (o->cmds, OclCmd, i);
    const SedpNnNode *n = c->step->node;
    g_string_append_printf (out, "  %3u %-24s %s\n", i, c->what,
                            n->name && *n->name ? n->name : n->op_type);
  }
}
