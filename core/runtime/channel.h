/* sedp — bounded multi-producer multi-consumer channel of pointers. */
#pragma once

#include <glib.h>

/**
 * SedpChannel:
 * A bounded FIFO ring of pointers shared by every inbound edge of a stage and drained by the
 * stage's workers. Producers block when it is full (backpressure) or fail with try_push;
 * consumers spin briefly, then sleep, when it is empty. Closing wakes everybody: pushes fail and
 * pops return what is left, then 0.
 */
typedef struct _SedpChannel SedpChannel;

SedpChannel *sedp_channel_new (guint capacity, guint spin_us);
void sedp_channel_free (SedpChannel *channel);

/* Appends @item, waiting while the channel is full. FALSE when the channel is closed. */
gboolean sedp_channel_push (SedpChannel *channel, gpointer item);

/* Appends @item if there is room. FALSE when full or closed. */
gboolean sedp_channel_try_push (SedpChannel *channel, gpointer item);

/* Takes up to @max items into @out. Waits for the first one; then, when @linger_us > 0, waits
 * up to @linger_us from that moment for more, until @max are there. Returns the number taken; 0
 * once the channel is closed and empty. */
guint sedp_channel_pop_batch (SedpChannel *channel, gpointer *out, guint max, gint64 linger_us);

/* Items waiting. */
guint sedp_channel_length (SedpChannel *channel);

guint sedp_channel_capacity (SedpChannel *channel);

/* No more pushes; wakes waiting consumers and producers. */
void sedp_channel_close (SedpChannel *channel);
