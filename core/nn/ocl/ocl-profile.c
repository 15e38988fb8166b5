/* sedp — `streams = auto`'s start profile (docs/opencl.md §5.3): @concurrency threads, each with
 * its own plan on zero inputs, run for a fixed time with each candidate stream count; the auto
 * controller learns the best count for that concurrency and then follows the live traffic. */
#include "ocl-private.h"

#include "ocl-auto.h"

typedef struct {
  SedpNnPlan *plan;
  GPtrArray *zeros;          /* SedpNnTensor * */
  SedpNnTensor *in, *out;
  gint64 deadline;           /* µs, monotonic: set before each candidate */
  guint64 runs;
  GError *error;
} Prober;

static gboolean
prober_init (Prober *p, SedpNnModel *model, gint64 batch, SedpNnDevice *d, GError **error)
{
  p->plan = sedp_nn_plan_new_on (model, batch, d, error);
  if (p->plan == NULL)
    return FALSE;
  guint n_in = sedp_nn_plan_get_n_inputs (p->plan);
  p->zeros = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  p->in = g_new0 (SedpNnTensor, MAX (n_in, 1));
  p->out = g_new0 (SedpNnTensor, MAX (sedp_nn_plan_get_n_outputs (p->plan), 1));
  for (guint i = 0; i < n_in; i++) {
    const SedpNnTensor *t = sedp_nn_plan_get_input (p->plan, i);
    SedpNnTensor *z = sedp_nn_tensor_new (t->name, t->dtype, t->rank, t->dims);
    g_ptr_array_add (p->zeros, z);
    p->in[i] = *z;
  }
  return TRUE;
}

static void
prober_clear (Prober *p)
{
  sedp_nn_plan_free (p->plan);
  if (p->zeros)
    g_ptr_array_unref (p->zeros);
  g_free (p->in);
  g_free (p->out);
  g_clear_error (&p->error);
}

static gboolean
prober_run (Prober *p)
{
  return sedp_nn_plan_run (p->plan, sedp_nn_plan_get_n_inputs (p->plan), p->in,
                           sedp_nn_plan_get_n_outputs (p->plan), p->out, &p->error);
}

/* One discarded run, then runs until the deadline. */
static gpointer
prober_thread (gpointer data)
{
  Prober *p = data;
  p->runs = 0;
  if (!prober_run (p))
    return NULL;
  while (g_get_monotonic_time () < p->deadline && prober_run (p))
    p->runs++;
  return NULL;
}

/* Rows per second of @n probers with the device's current stream count. */
static double
measure (Prober *p, guint n, gint64 batch, guint profile_ms, GError **error)
{
  GThread *th[64];
  gint64 t0 = g_get_monotonic_time ();
  for (guint i = 0; i < n; i++) {
    p[i].deadline = t0 + (gint64) profile_ms * 1000;
    th[i] = g_thread_new ("ocl-profile", prober_thread, &p[i]);
  }
  guint64 runs = 0;
  for (guint i = 0; i < n; i++) {
    g_thread_join (th[i]);
    runs += p[i].runs;
  }
  double elapsed = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  for (guint i = 0; i < n; i++)
    if (p[i].error) {
      g_propagate_error (error, g_steal_pointer (&p[i].error));
      return -1;
    }
  return (double) runs * (double) batch / MAX (elapsed, 1e-6);
}

gboolean
sedp_nn_device_set_streams_auto (SedpNnDevice *device, SedpNnModel *model, gint64 batch,
                                 guint concurrency, guint profile_ms, GError **error)
{
  g_return_val_if_fail (device != NULL && model != NULL, FALSE);
  concurrency = CLAMP (concurrency, 1, 64);
  NnAuto *autoc = nn_auto_new (MIN (concurrency, 4), concurrency);
  if (profile_ms == 0) {
    nn_ocl_set_auto (device, autoc);
    return TRUE;
  }
  Prober p[64] = {0};
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < concurrency; i++)
    ok = prober_init (&p[i], model, batch, device, error);
  double rates[NN_AUTO_N_CANDIDATES];
  for (guint k = 0; ok && k < NN_AUTO_N_CANDIDATES; k++) {
    nn_ocl_set_auto (device, NULL);
    g_atomic_int_set (&device->active, (gint) nn_auto_candidates[k]);
    ok = (rates[k] = measure (p, concurrency, batch, profile_ms, error)) >= 0;
  }
  for (guint i = 0; i < concurrency; i++)
    prober_clear (&p[i]);
  if (!ok) {
    nn_auto_free (autoc);
    return FALSE;
  }
  nn_auto_learn (autoc, concurrency, rates, g_get_monotonic_time ());
  nn_ocl_set_auto (device, autoc);
  return TRUE;
}
