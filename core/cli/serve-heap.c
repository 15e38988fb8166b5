/* sedp serve — the process's heap: glibc's malloc thresholds, and free pages given back after a
 * burst (docs/serving.md#memory). */
#include "cli.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

/* glibc's malloc keeps a heap at its high-water mark: it raises its mmap threshold (up to
 * 32 MiB) and its trim threshold (twice that) each time it frees a large mapped block, after
 * which the memory of a burst (a Redis outage queued 14 requests of about 1 MB each where 2 were
 * in flight) stays resident for the life of the process. Fixed thresholds keep blocks of
 * 256 KiB and more mapped (given back when freed) and return a heap's free top beyond 1 MiB.
 * A GLIBC_TUNABLES in the environment is the user's choice and is left alone. */
void
sedp_serve_heap_tune (void)
{
#ifdef __GLIBC__
  if (g_getenv ("GLIBC_TUNABLES") != NULL)
    return;
  mallopt (M_MMAP_THRESHOLD, 256 * 1024);
  mallopt (M_TRIM_THRESHOLD, 1024 * 1024);
#endif
}

/* A free chunk below a heap's top is never given back by free(): after a burst, the pages of
 * the requests that piled up stay resident, scattered between live blocks (the soak: 22 MB in
 * use, 40 MB held, after a Redis outage). malloc_trim(0) returns every whole free page of every
 * arena (madvise MADV_DONTNEED; a page used again costs one page fault). It takes 2 to 7 ms on
 * the CTR example's heap under load, one arena locked at a time: in a thread of its own, started
 * with the server (a thread started later would itself grow RssAnon by its stack and arena),
 * so that the main loop goes on accepting and answering meanwhile. */
struct _SedpServeHeapWatch {
  GThread *thread;
  GMutex lock;
  GCond cond;
  gint64 interval_us;
  gboolean stop;
};

static gpointer
heap_watch_run (gpointer data)
{
  SedpServeHeapWatch *w = data;
  g_mutex_lock (&w->lock);
  while (!w->stop) {
    gint64 until = g_get_monotonic_time () + w->interval_us;
    while (!w->stop && g_cond_wait_until (&w->cond, &w->lock, until))
      ;
    if (w->stop)
      break;
    g_mutex_unlock (&w->lock);
#ifdef __GLIBC__
    malloc_trim (0);
#endif
    g_mutex_lock (&w->lock);
  }
  g_mutex_unlock (&w->lock);
  return NULL;
}

SedpServeHeapWatch *
sedp_serve_heap_watch_start (guint interval_s)
{
  if (interval_s == 0)
    return NULL;
  SedpServeHeapWatch *w = g_new0 (SedpServeHeapWatch, 1);
  g_mutex_init (&w->lock);
  g_cond_init (&w->cond);
  w->interval_us = (gint64) interval_s * G_USEC_PER_SEC;
  w->thread = g_thread_new ("heap-release", heap_watch_run, w);
  return w;
}

void
sedp_serve_heap_watch_stop (SedpServeHeapWatch *w)
{
  if (w == NULL)
    return;
  g_mutex_lock (&w->lock);
  w->stop = TRUE;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
  g_thread_join (w->thread);
  g_cond_clear (&w->cond);
  g_mutex_clear (&w->lock);
  g_free (w);
}
