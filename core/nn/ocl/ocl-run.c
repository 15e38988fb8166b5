/* sedp — a run of a lowered plan (docs/opencl.md §4, §5.1): the inputs uploaded to their arena
 * slots, the commands enqueued in order on the stream's compute queue (in-order: no events
 * between them), the outputs downloaded, and the caller woken when the last download is done.
 * On a stream of three queues, a marker and a barrier chain upload → compute → download. A host
 * command reads its step's inputs back into the CPU plan's arena, runs the CPU kernel and writes
 * its outputs to the device. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

static gint test_fail_code; /* nn_ocl_test_fail_next_run (atomic) */

void
nn_ocl_test_fail_next_run (cl_int code)
{
  g_atomic_int_set (&test_fail_code, code);
}

gboolean
nn_ocl_mark_lost (SedpNnDevice *d, cl_int code, const char *why)
{
  if (code != CL_DEVICE_NOT_AVAILABLE && code != CL_OUT_OF_RESOURCES &&
      code != CL_OUT_OF_HOST_MEMORY && code != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    return FALSE;
  g_autoptr (GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *when = g_date_time_format (now, "%H:%M:%S");
  g_mutex_lock (&d->lock);
  if (d->lost == NULL)
    d->lost = g_strdup_printf ("since %s: %s: %s (%d)", when, why, nn_ocl_error_name (code), code);
  g_mutex_unlock (&d->lock);
  return TRUE;
}

gboolean
nn_ocl_check_lost (SedpNnDevice *d, GError **error)
{
  g_mutex_lock (&d->lock);
  if (d->lost)
    g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
                 "OpenCL device %s is lost (%s); reload the stage to reopen it", d->label, d->lost);
  gboolean lost = d->lost != NULL;
  g_mutex_unlock (&d->lock);
  return lost;
}

/* Reads the bytes of device value @v (a TEMP root) into the CPU plan's arena. */
static cl_int
read_back (OclPlan *o, cl_command_queue q, int v)
{
  Plan *p = o->cpu;
  const Value *root = &p->values[nn_alias_root (p, v)];
  if (root->kind != VALUE_TEMP)
    return CL_SUCCESS; /* a constant or a graph input: the host has it */
  gsize bytes = (gsize) root->numel * sedp_nn_dtype_size (root->dtype);
  if (bytes == 0)
    return CL_SUCCESS;
  return clEnqueueReadBuffer (q, o->arena, CL_TRUE, root->offset, bytes, p->arena + root->offset, 0,
                              NULL, NULL);
}

static cl_int
write_out (OclPlan *o, cl_command_queue q, int v)
{
  Plan *p = o->cpu;
  const Value *val = &p->values[v];
  gsize bytes = (gsize) val->numel * sedp_nn_dtype_size (val->dtype);
  if (val->kind != VALUE_TEMP || bytes == 0)
    return CL_SUCCESS;
  return clEnqueueWriteBuffer (q, o->arena, CL_TRUE, val->offset, bytes, p->arena + val->offset, 0,
                               NULL, NULL);
}

/* The host fallback (opencl.md §3.3): a synchronisation point of the run. */
static gboolean
run_host (OclPlan *o, const OclCmd *c, cl_command_queue q, GError **error)
{
  const Step *s = c->step;
  cl_int rc = CL_SUCCESS;
  for (guint k = 0; k < s->n_in && rc == CL_SUCCESS; k++)
    if (s->in[k] >= 0)
      rc = read_back (o, q, s->in[k]);
  if (rc != CL_SUCCESS) {
    nn_ocl_node_error (error, o, s, "reading its inputs back to the host", rc);
    return FALSE;
  }
  if (!s->fn (o->cpu, s, o->cpu->ptrs, error))
    return FALSE;
  for (guint k = 0; k < s->n_out && rc == CL_SUCCESS; k++)
    if (s->out[k] >= 0)
      rc = write_out (o, q, s->out[k]);
  if (rc != CL_SUCCESS)
    nn_ocl_node_error (error, o, s, "writing its outputs to the device", rc);
  return rc == CL_SUCCESS;
}

static gboolean
run_cmd (OclPlan *o, const OclCmd *c, cl_command_queue q, GError **error)
{
  cl_int rc;
  switch (c->kind) {
  case OCL_CMD_HOST:
    return run_host (o, c, q, error);
  case OCL_CMD_KERNEL:
    rc = clEnqueueNDRangeKernel (q, c->kernel, 1, NULL, &c->global, &c->local, 0, NULL, NULL);
    break;
  default:
    rc = nn_ocl_gemm_enqueue (o, c, q);
  }
  if (rc != CL_SUCCESS)
    nn_ocl_node_error (error, o, c->step, c->what, rc);
  return rc == CL_SUCCESS;
}

static cl_int
upload_inputs (OclPlan *o, cl_command_queue q, const SedpNnTensor *inputs)
{
  Plan *p = o->cpu;
  cl_int rc = CL_SUCCESS;
  for (guint i = 0; i < p->n_inputs && rc == CL_SUCCESS; i++) {
    gsize bytes = sedp_nn_tensor_nbytes (&inputs[i]);
    if (p->values[p->input_values[i]].kind == VALUE_INPUT && bytes > 0)
      rc = clEnqueueWriteBuffer (q, o->arena, CL_FALSE, o->input_offset[i], bytes, inputs[i].data, 0,
                                 NULL, NULL);
  }
  return rc;
}

/* ---- the status words of index-reading steps (docs/opencl.md §7) ---- */

static gsize
status_bytes (const OclPlan *o)
{
  return o->n_status ? sizeof (guint32) * o->cpu->steps->len : 0;
}

/* Zeroes the words before the run's first command. */
static cl_int
status_clear (OclPlan *o, cl_command_queue q)
{
  const cl_uint zero = 0;
  if (status_bytes (o) == 0)
    return CL_SUCCESS;
  return clEnqueueFillBuffer (q, o->arena, &zero, sizeof zero, o->status_offset, status_bytes (o),
                              0, NULL, NULL);
}

/* A step set its word: the same inputs (bound in the CPU plan's ptrs) run on the CPU plan, whose
 * error, the CPU engine's message, is the run's; if the CPU finds nothing, the device is
 * suspect. Always FALSE. */
static gboolean
status_error (OclPlan *o, const Step *bad, GError **error)
{
  Plan *p = o->cpu;
  for (guint s = 0; s < p->steps->len; s++) {
    const Step *st = &g_array_index (p->steps, Step, s);
    if (!st->fn (p, st, p->ptrs, error))
      return FALSE;
  }
  nn_node_error (error, SEDP_NN_ERROR_DEVICE, bad->node,
                 "OpenCL device %s reported an index out of range that the CPU engine did not find; "
                 "the device may be faulty", o->device->label);
  return FALSE;
}

/* TRUE when no step set its word (downloaded into host_status); else status_error. */
static gboolean
status_check (OclPlan *o, GError **error)
{
  for (guint s = 0; status_bytes (o) > 0 && s < o->cpu->steps->len; s++)
    if (o->host_status[s] != 0)
      return status_error (o, &g_array_index (o->cpu->steps, Step, s), error);
  return TRUE;
}

/* The events that chain a run's queues on a stream with overlap (docs/opencl.md §5.1); all NULL
 * on a stream of one queue but @done. */
typedef struct {
  cl_event up;      /* the last upload */
  cl_event compute; /* the last compute command */
  cl_event done;    /* the last download */
} RunEvents;

/* Ends a stage of the run on queue @from: a marker (its event in *@ev) that queue @to waits for
 * before its next command; both flushed so the device starts @from's commands. Nothing when
 * the two are one in-order queue. */
static cl_int
chain (cl_command_queue from, cl_command_queue to, cl_event *ev)
{
  if (from == to)
    return CL_SUCCESS;
  cl_int rc = clEnqueueMarkerWithWaitList (from, 0, NULL, ev);
  if (rc == CL_SUCCESS)
    rc = clFlush (from);
  if (rc == CL_SUCCESS)
    rc = clEnqueueBarrierWithWaitList (to, 1, ev, NULL);
  return rc;
}

/* The worst execution status of @ev (CL_COMPLETE for NULL), which it releases. */
static cl_int
event_status (cl_event ev, cl_int worst)
{
  cl_int status = CL_COMPLETE;
  if (ev == NULL)
    return worst;
  clGetEventInfo (ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  clReleaseEvent (ev);
  return status < worst ? status : worst;
}

/* Releases the run's events; the worst of their execution statuses (CL_COMPLETE for none). */
static cl_int
events_release (RunEvents *ev)
{
  cl_int worst = event_status (ev->up, CL_COMPLETE);
  worst = event_status (ev->done, event_status (ev->compute, worst));
  *ev = (RunEvents){0};
  return worst;
}

/* Enqueues a download of each graph output into host_out on @q. */
static cl_int
download_values (OclPlan *o, cl_command_queue q)
{
  Plan *p = o->cpu;
  cl_int rc = CL_SUCCESS;
  for (guint i = 0; i < p->n_outputs && rc == CL_SUCCESS; i++) {
    if (o->out_offset[i] == G_MAXSIZE)
      continue;
    const Value *root = &p->values[nn_alias_root (p, p->output_values[i])];
    gsize bytes = (gsize) root->numel * sedp_nn_dtype_size (root->dtype);
    OclRef ref = o->refs[nn_alias_root (p, p->output_values[i])];
    if (ref.mem == NULL) /* an output no command read: its place is still known */
      ref = (OclRef){o->arena, root->kind == VALUE_TEMP ? root->offset
                                                        : o->input_offset[root->input_index]};
    if (bytes > 0)
      rc = clEnqueueReadBuffer (q, ref.mem, CL_FALSE, ref.offset, bytes, o->host_out + o->out_offset[i],
                                0, NULL, NULL);
  }
  return rc;
}

/* Chains the compute queue to the downloads (the status words, then the outputs), enqueues a
 * marker after them and waits for it; the worst status of the run's events. */
static cl_int
download_outputs (OclPlan *o, const OclStream *s, RunEvents *ev)
{
  cl_int rc = chain (s->queue, s->down, &ev->compute);
  if (rc == CL_SUCCESS && status_bytes (o) > 0)
    rc = clEnqueueReadBuffer (s->down, o->arena, CL_FALSE, o->status_offset, status_bytes (o),
                              o->host_status, 0, NULL, NULL);
  if (rc == CL_SUCCESS)
    rc = download_values (o, s->down);
  if (rc == CL_SUCCESS)
    rc = clEnqueueMarkerWithWaitList (s->down, 0, NULL, &ev->done);
  if (rc == CL_SUCCESS)
    rc = clFlush (s->down);
  if (rc == CL_SUCCESS)
    rc = clWaitForEvents (1, &ev->done);
  cl_int status = events_release (ev);
  cl_int injected = g_atomic_int_and (&test_fail_code, 0);
  if (injected)
    status = injected;
  return rc != CL_SUCCESS ? rc : status < 0 ? status : CL_SUCCESS;
}

/* After a failed run: waits for whatever of it is still queued (nothing of it may still read the
 * caller's inputs or write the plan's buffers) and releases its events. */
static void
run_abandon (const OclStream *s, RunEvents *ev)
{
  clFinish (s->up);
  clFinish (s->queue);
  clFinish (s->down);
  events_release (ev);
}

static void
fill_outputs (OclPlan *o, guint n_outputs, SedpNnTensor *outputs)
{
  Plan *p = o->cpu;
  for (guint i = 0; i < MIN (n_outputs, p->n_outputs); i++) {
    outputs[i] = p->output_info[i];
    outputs[i].data = o->out_offset[i] == G_MAXSIZE
                          ? p->ptrs[nn_alias_root (p, p->output_values[i])]
                          : o->host_out + o->out_offset[i];
  }
}

/* Enqueues the uploads of @inputs and the compute commands; FALSE with an error. */
static gboolean
run_enqueue (OclPlan *o, const OclStream *stream, const SedpNnTensor *inputs, RunEvents *ev,
             GError **error)
{
  cl_int rc = upload_inputs (o, stream->up, inputs);
  if (rc == CL_SUCCESS)
    rc = status_clear (o, stream->up);
  if (rc == CL_SUCCESS)
    rc = chain (stream->up, stream->queue, &ev->up);
  if (rc != CL_SUCCESS) {
    nn_ocl_set_error (error, o->device, "uploading the inputs", rc);
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < o->cmds->len; i++)
    ok = run_cmd (o, &g_array_index (o->cmds, OclCmd, i), stream->queue, error);
  return ok;
}

gboolean
nn_ocl_plan_run (Plan *p, const SedpNnTensor *inputs, guint n_outputs, SedpNnTensor *outputs,
                 GError **error)
{
  OclPlan *o = p->ocl;
  if (nn_ocl_check_lost (o->device, error))
    return FALSE;
  guint concurrency = 1;
  OclStream *stream = nn_ocl_stream_pick (o->device, &concurrency, error);
  if (stream == NULL)
    return FALSE;
  RunEvents ev = {0};
  nn_plan_bind_inputs (p, inputs); /* what host commands read */
  gboolean ok = run_enqueue (o, stream, inputs, &ev, error);
  cl_int rc;
  if (ok && (rc = download_outputs (o, stream, &ev)) != CL_SUCCESS) {
    g_autofree char *what = g_strdup_printf ("a run of model '%s' at batch %" G_GINT64_FORMAT
                                             " failed", p->model->graph_name ? p->model->graph_name : "",
                                             p->batch);
    nn_ocl_mark_lost (o->device, rc, what);
    nn_ocl_set_error (error, o->device, what, rc);
    ok = FALSE;
  }
  if (!ok)
    run_abandon (stream, &ev);
  nn_ocl_stream_done (o->device, stream, ok ? (guint64) p->batch : 0, concurrency);
  ok = ok && status_check (o, error);
  if (ok)
    fill_outputs (o, n_outputs, outputs);
  return ok;
}
