/* sedp serve — the process's heap: glibc's malloc thresholds, and free pages given back after a
 * burst (docs/serving.md#memory). */
#include "cli.h"

#include <gio/gio.h>

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
 * the CTR example's heap under load, one arena locked at a time: in a worker thread, so that
 * the main loop goes on accepting and answering meanwhile. */
static void
heap_release_in_thread (GTask *task, gpointer source G_GNUC_UNUSED, gpointer data G_GNUC_UNUSED,
                        GCancellable *cancellable G_GNUC_UNUSED)
{
#ifdef __GLIBC__
  malloc_trim (0);
#endif
  g_task_return_boolean (task, TRUE);
}

static void
heap_release_done (GObject *source G_GNUC_UNUSED, GAsyncResult *result, gpointer data)
{
  gboolean *running = data;
  *running = FALSE;
  g_task_propagate_boolean (G_TASK (result), NULL);
}

/* At most one release at a time: a slow one is not queued behind. */
static gboolean
heap_release (gpointer data)
{
  static gboolean running;
  if (running)
    return G_SOURCE_CONTINUE;
  running = TRUE;
  g_autoptr (GTask) task = g_task_new (NULL, NULL, heap_release_done, &running);
  g_task_run_in_thread (task, heap_release_in_thread);
  return G_SOURCE_CONTINUE;
}

guint
sedp_serve_heap_watch (guint interval_s)
{
  if (interval_s == 0)
    return 0;
  return g_timeout_add_seconds (interval_s, heap_release, NULL);
}
