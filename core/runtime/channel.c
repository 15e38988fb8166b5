/* sedp — bounded MPMC channel: a ring under one mutex, with spin-then-sleep consumers. */
#include "channel.h"

#include <sched.h>

struct _SedpChannel {
  GMutex lock;
  GCond not_empty;
  GCond not_full;
  gpointer *ring;
  guint capacity;
  guint head;             /* next to pop */
  gint count;             /* items in the ring; read without the lock while spinning */
  guint sleeping_consumers;
  guint sleeping_producers;
  gint closed;
  guint spin_us;
};

SedpChannel *
sedp_channel_new (guint capacity, guint spin_us)
{
  SedpChannel *ch = g_new0 (SedpChannel, 1);
  g_mutex_init (&ch->lock);
  g_cond_init (&ch->not_empty);
  g_cond_init (&ch->not_full);
  ch->capacity = MAX (capacity, 1);
  ch->ring = g_new0 (gpointer, ch->capacity);
  ch->spin_us = spin_us;
  return ch;
}

void
sedp_channel_free (SedpChannel *ch)
{
  if (ch == NULL)
    return;
  g_mutex_clear (&ch->lock);
  g_cond_clear (&ch->not_empty);
  g_cond_clear (&ch->not_full);
  g_free (ch->ring);
  g_free (ch);
}

static void
enqueue_locked (SedpChannel *ch, gpointer item)
{
  ch->ring[(ch->head + (guint) ch->count) % ch->capacity] = item;
  g_atomic_int_inc (&ch->count);
  if (ch->sleeping_consumers > 0)
    g_cond_signal (&ch->not_empty);
}

gboolean
sedp_channel_push (SedpChannel *ch, gpointer item)
{
  g_mutex_lock (&ch->lock);
  while ((guint) ch->count == ch->capacity && !ch->closed) {
    ch->sleeping_producers++;
    g_cond_wait (&ch->not_full, &ch->lock);
    ch->sleeping_producers--;
  }
  if (ch->closed) {
    g_mutex_unlock (&ch->lock);
    return FALSE;
  }
  enqueue_locked (ch, item);
  g_mutex_unlock (&ch->lock);
  return TRUE;
}

gboolean
sedp_channel_try_push (SedpChannel *ch, gpointer item)
{
  g_mutex_lock (&ch->lock);
  gboolean ok = !ch->closed && (guint) ch->count < ch->capacity;
  if (ok)
    enqueue_locked (ch, item);
  g_mutex_unlock (&ch->lock);
  return ok;
}

static guint
dequeue_locked (SedpChannel *ch, gpointer *out, guint max)
{
  guint n = MIN (max, (guint) ch->count);
  for (guint i = 0; i < n; i++) {
    out[i] = ch->ring[ch->head];
    ch->head = (ch->head + 1) % ch->capacity;
  }
  g_atomic_int_add (&ch->count, -(gint) n);
  if (n > 0 && ch->sleeping_producers > 0)
    g_cond_broadcast (&ch->not_full);
  return n;
}

/* Busy-waits up to spin_us for an item, yielding the CPU between polls so that spinning
 * consumers never starve the thread that would produce. */
static void
spin_for_item (SedpChannel *ch)
{
  if (ch->spin_us == 0)
    return;
  gint64 until = g_get_monotonic_time () + ch->spin_us;
  for (guint i = 0;; i++) {
    if (g_atomic_int_get (&ch->count) > 0 || g_atomic_int_get (&ch->closed))
      return;
    if ((i & 15) == 15 && g_get_monotonic_time () >= until)
      return;
    sched_yield ();
  }
}

guint
sedp_channel_pop_batch (SedpChannel *ch, gpointer *out, guint max, gint64 linger_us)
{
  if (g_atomic_int_get (&ch->count) == 0)
    spin_for_item (ch);
  g_mutex_lock (&ch->lock);
  while (ch->count == 0 && !ch->closed) {
    ch->sleeping_consumers++;
    g_cond_wait (&ch->not_empty, &ch->lock);
    ch->sleeping_consumers--;
  }
  guint n = dequeue_locked (ch, out, max);
  if (n > 0 && n < max && linger_us > 0) {
    gint64 end = g_get_monotonic_time () + linger_us;
    while (n < max && !ch->closed) {
      if (ch->count == 0) {
        ch->sleeping_consumers++;
        gboolean woke = g_cond_wait_until (&ch->not_empty, &ch->lock, end);
        ch->sleeping_consumers--;
        if (!woke && ch->count == 0)
          break;
      }
      n += dequeue_locked (ch, out + n, max - n);
    }
  }
  /* Pass the wake-up on if items are left for another sleeping consumer. */
  if (ch->count > 0 && ch->sleeping_consumers > 0)
    g_cond_signal (&ch->not_empty);
  g_mutex_unlock (&ch->lock);
  return n;
}

guint
sedp_channel_length (SedpChannel *ch)
{
  return (guint) g_atomic_int_get (&ch->count);
}

guint
sedp_channel_capacity (SedpChannel *ch)
{
  return ch->capacity;
}

void
sedp_channel_close (SedpChannel *ch)
{
  g_mutex_lock (&ch->lock);
  ch->closed = TRUE;
  g_cond_broadcast (&ch->not_empty);
  g_cond_broadcast (&ch->not_full);
  g_mutex_unlock (&ch->lock);
}
