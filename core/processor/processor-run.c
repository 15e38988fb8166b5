/* sedp — libsedp_processor.so: requests through the pipeline: decode all, submit all, wait,
 * encode all (docs/compat.md, "libsedp_processor.so"). */
#include "processor-private.h"

#include <string.h>

/* The completions a call waits for. */
typedef struct {
  GMutex lock;
  GCond cond;
  guint pending;
} Waiter;

static void
on_done (SedpRequest *request, gpointer data)
{
  Waiter *w = data;
  g_mutex_lock (&w->lock);
  w->pending--;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
}

/* Waits until fewer than @below requests are pending (0: none). */
static void
wait_below (Waiter *w, guint below)
{
  g_mutex_lock (&w->lock);
  while (w->pending > 0 && w->pending >= MAX (below, 1))
    g_cond_wait (&w->cond, &w->lock);
  g_mutex_unlock (&w->lock);
}

/* Decodes and checks one request (its signature_name, when set, must be the model's). */
static gboolean
decode_one (Processor *p, const guint8 *body, gsize size, SedpModelApiRequest *out,
            GError **error)
{
  return sedp_model_api_decode (SEDP_MODEL_API_DEEPREC, body, size, p->signature, NULL, out,
                                error);
}

/* Submits @decoded's items (taken) as a request without payload, which the source stage
 * passes through. A full entry queue is waited out while this call has requests in flight. */
static SedpRequest *
submit_one (Processor *p, SedpModelApiRequest *decoded, Waiter *w, GError **error)
{
  g_autofree char *id = g_strdup_printf ("processor-%" G_GUINT64_FORMAT,
                                         (guint64) (guint) g_atomic_int_add (&p->next_id, 1));
  SedpRequest *request = sedp_request_new (id, 0);
  sedp_request_set_frames (request, NULL, g_steal_pointer (&decoded->items));
  for (;;) {
    g_mutex_lock (&w->lock);
    w->pending++;
    guint pending = w->pending;
    g_mutex_unlock (&w->lock);
    SedpStatus st = sedp_pipeline_submit (p->pipeline, request, on_done, w);
    if (st == SEDP_STATUS_OK)
      return request;
    g_mutex_lock (&w->lock);
    w->pending--;
    g_mutex_unlock (&w->lock);
    if (st != SEDP_STATUS_OVERLOADED || pending == 1) {
      g_set_error (error, SEDP_RUNTIME_ERROR, SEDP_RUNTIME_ERROR_CREATE_FAILED,
                   "the pipeline refused the request (%s)%s", sedp_status_to_string (st),
                   st == SEDP_STATUS_OVERLOADED ? ": its entry queue is full; retry later" : "");
      sedp_request_unref (request);
      return NULL;
    }
    wait_below (w, pending - 1);
  }
}

/* The first failed item's message, for a result that is not OK. */
static const char *
result_message (const SedpResult *res)
{
  const char *m = sedp_result_get_message (res);
  for (guint i = 0; m == NULL && i < sedp_result_get_n_items (res); i++)
    if (sedp_result_get_item_status (res, i) == SEDP_ITEM_FAILED)
      m = sedp_result_get_item_message (res, i);
  return m ? m : "no message";
}

static GBytes *
encode_one (Processor *p, const SedpModelApiRequest *decoded, SedpRequest *request,
            GError **error)
{
  const SedpResult *res = sedp_request_get_result (request);
  SedpStatus st = sedp_result_get_status (res);
  if (st != SEDP_STATUS_OK) {
    g_set_error (error, SEDP_RUNTIME_ERROR, SEDP_RUNTIME_ERROR_CREATE_FAILED,
                 "the pipeline's answer is %s: %s", sedp_status_to_string (st),
                 result_message (res));
    return NULL;
  }
  return sedp_model_api_encode_result (SEDP_MODEL_API_DEEPREC, decoded, res, p->signature, error);
}

static gboolean
fail_at (guint i, guint n, GError **error)
{
  if (n > 1)
    g_prefix_error (error, "request %u of %u: ", i + 1, n);
  return FALSE;
}

gboolean
processor_run (Processor *p, const guint8 *const *bodies, const gsize *sizes, guint n,
               GBytes **answers, GError **error)
{
  SedpModelApiRequest *decoded = g_new0 (SedpModelApiRequest, n);
  SedpRequest **requests = g_new0 (SedpRequest *, n);
  Waiter w = {.pending = 0};
  g_mutex_init (&w.lock);
  g_cond_init (&w.cond);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < n; i++)
    ok = decode_one (p, bodies[i], sizes[i], &decoded[i], error) || fail_at (i, n, error);
  for (guint i = 0; ok && i < n; i++)
    ok = (requests[i] = submit_one (p, &decoded[i], &w, error)) != NULL || fail_at (i, n, error);
  wait_below (&w, 0);
  for (guint i = 0; ok && i < n; i++)
    ok = (answers[i] = encode_one (p, &decoded[i], requests[i], error)) != NULL ||
         fail_at (i, n, error);
  for (guint i = 0; i < n; i++) {
    if (!ok && answers[i])
      g_clear_pointer (&answers[i], g_bytes_unref);
    if (requests[i])
      sedp_request_unref (requests[i]);
    sedp_model_api_request_clear (&decoded[i]);
  }
  g_mutex_clear (&w.lock);
  g_cond_clear (&w.cond);
  g_free (requests);
  g_free (decoded);
  return ok;
}

gboolean
processor_warmup (Processor *p, const char *path, GError **error)
{
  g_autofree char *body = NULL;
  gsize size = 0;
  g_autoptr (GError) io = NULL;
  if (!g_file_get_contents (path, &body, &size, &io)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                 "model_config: warmup_file_name %s: %s", path, io->message);
    return FALSE;
  }
  const guint8 *bodies[1] = {(const guint8 *) body};
  GBytes *answer = NULL;
  if (!processor_run (p, bodies, &size, 1, &answer, error)) {
    g_prefix_error (error, "model_config: warmup_file_name %s (one serialized PredictRequest): ",
                    path);
    return FALSE;
  }
  g_bytes_unref (answer);
  return TRUE;
}
