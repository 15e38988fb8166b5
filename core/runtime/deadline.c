/* sedp — the deadline queue: a binary heap of in-flight requests and one timer thread that
 * completes each request with a timeout status when its deadline passes first. */
#include "runtime-private.h"

#include <sys/syscall.h>
#include <unistd.h>

struct _DeadlineQueue {
  GMutex lock;
  GCond changed;
  GPtrArray *heap; /* SedpRequest* (referenced), ordered by deadline */
  gboolean running;
  GThread *thread;
  gint tid;        /* the timer thread's kernel id, once it runs */
};

gint *
sedp_deadline_queue_tid (DeadlineQueue *q)
{
  return &q->tid;
}

static gboolean
earlier (SedpRequest *a, SedpRequest *b)
{
  return a->deadline < b->deadline;
}

static void
heap_set (DeadlineQueue *q, guint i, SedpRequest *r)
{
  q->heap->pdata[i] = r;
  r->heap_pos = (gint) i;
}

static void
sift_up (DeadlineQueue *q, guint i)
{
  SedpRequest *r = q->heap->pdata[i];
  while (i > 0) {
    guint parent = (i - 1) / 2;
    SedpRequest *pr = q->heap->pdata[parent];
    if (!earlier (r, pr))
      break;
    heap_set (q, i, pr);
    i = parent;
  }
  heap_set (q, i, r);
}

static void
sift_down (DeadlineQueue *q, guint i)
{
  guint n = q->heap->len;
  SedpRequest *r = q->heap->pdata[i];
  for (;;) {
    guint l = 2 * i + 1, best = i;
    SedpRequest *b = r;
    if (l < n && earlier (q->heap->pdata[l], b)) {
      best = l;
      b = q->heap->pdata[l];
    }
    if (l + 1 < n && earlier (q->heap->pdata[l + 1], b)) {
      best = l + 1;
      b = q->heap->pdata[l + 1];
    }
    if (best == i)
      break;
    heap_set (q, i, b);
    i = best;
  }
  heap_set (q, i, r);
}

/* Removes the entry at @i (lock held); returns the request, whose reference passes to the
 * caller. */
static SedpRequest *
heap_remove_at (DeadlineQueue *q, guint i)
{
  SedpRequest *r = q->heap->pdata[i];
  SedpRequest *last = g_ptr_array_steal_index (q->heap, q->heap->len - 1);
  if (last != r) {
    heap_set (q, i, last);
    sift_down (q, i);
    sift_up (q, (guint) last->heap_pos);
  }
  r->heap_pos = -1;
  return r;
}

static gpointer
timer_thread (gpointer data)
{
  DeadlineQueue *q = data;
  g_atomic_int_set (&q->tid, (gint) syscall (SYS_gettid));
  g_mutex_lock (&q->lock);
  while (q->running) {
    if (q->heap->len == 0) {
      g_cond_wait (&q->changed, &q->lock);
      continue;
    }
    SedpRequest *top = q->heap->pdata[0];
    gint64 now = g_get_monotonic_time ();
    if (top->deadline > now) {
      g_cond_wait_until (&q->changed, &q->lock, top->deadline);
      continue;
    }
    SedpRequest *r = heap_remove_at (q, 0);
    g_mutex_unlock (&q->lock);
    sedp_request_complete (r, SEDP_STATUS_TIMEOUT, NULL);
    sedp_request_unref (r);
    g_mutex_lock (&q->lock);
  }
  g_mutex_unlock (&q->lock);
  return NULL;
}

DeadlineQueue *
sedp_deadline_queue_new (void)
{
  DeadlineQueue *q = g_new0 (DeadlineQueue, 1);
  g_mutex_init (&q->lock);
  g_cond_init (&q->changed);
  q->heap = g_ptr_array_new ();
  q->running = TRUE;
  q->thread = g_thread_new ("sedp-deadlines", timer_thread, q);
  return q;
}

void
sedp_deadline_queue_free (DeadlineQueue *q)
{
  if (q == NULL)
    return;
  g_mutex_lock (&q->lock);
  q->running = FALSE;
  g_cond_signal (&q->changed);
  g_mutex_unlock (&q->lock);
  g_thread_join (q->thread);
  while (q->heap->len > 0)
    sedp_request_unref (heap_remove_at (q, q->heap->len - 1));
  g_ptr_array_unref (q->heap);
  g_mutex_clear (&q->lock);
  g_cond_clear (&q->changed);
  g_free (q);
}

void
sedp_deadline_queue_add (DeadlineQueue *q, SedpRequest *r)
{
  g_mutex_lock (&q->lock);
  g_ptr_array_add (q->heap, sedp_request_ref (r));
  sift_up (q, q->heap->len - 1);
  if (r->heap_pos == 0)
    g_cond_signal (&q->changed);
  g_mutex_unlock (&q->lock);
}

void
sedp_deadline_queue_remove (DeadlineQueue *q, SedpRequest *r)
{
  g_mutex_lock (&q->lock);
  SedpRequest *removed = NULL;
  if (r->heap_pos >= 0)
    removed = heap_remove_at (q, (guint) r->heap_pos);
  g_mutex_unlock (&q->lock);
  if (removed)
    sedp_request_unref (removed);
}
