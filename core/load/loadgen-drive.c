/* sedp — sending a run's requests: the closed loop's clients (each sends its next request when
 * the previous one completed, retrying a refused one after 1 ms) and the open loop's arrivals (a
 * timerfd armed at each scheduled send, so that sends are not late by the main loop's
 * millisecond timeouts); see loadgen-private.h. */
#include "loadgen-private.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* At most this many arrivals are sent per wake-up, so that completions are not starved when the
 * generator has fallen behind. */
#define MAX_SENDS_PER_WAKEUP 256

static void client_retry_later (LoadRun *run);

/* Sends the next workload request, due at @scheduled_us. */
static void
issue (LoadRun *run, gint64 scheduled_us)
{
  LoadSend *s = g_new0 (LoadSend, 1);
  s->run = run;
  s->index = run->next++ % sedp_workload_get_n_requests (run->gen->workload);
  s->scheduled_us = scheduled_us;
  sedp_loadgen_results_count_arrival (run->results);
  sedp_loadgen_results_count_sent (run->results, g_get_monotonic_time () - scheduled_us);
  run->in_flight++;
  if (run->gen->transport->send (s))
    return;
  run->in_flight--;
  g_free (s);
  if (run->config.mode == SEDP_LOADGEN_CLOSED)
    client_retry_later (run);
}

void
sedp_loadgen_send_completed (LoadSend *s)
{
  LoadRun *run = s->run;
  g_free (s);
  run->in_flight--;
  if (run->config.mode != SEDP_LOADGEN_CLOSED)
    return;
  gint64 now = g_get_monotonic_time ();
  if (now < run->end)
    issue (run, now);
}

gboolean
sedp_loadgen_drive_done (LoadRun *run)
{
  if (run->config.mode == SEDP_LOADGEN_CLOSED)
    return run->in_flight == 0 && run->retrying == 0;
  return run->sending_over && run->in_flight == 0;
}

/* ---- closed loop ---- */

static gboolean
on_client_retry (gpointer data)
{
  LoadRun *run = data;
  gint64 now = g_get_monotonic_time ();
  run->retrying--;
  if (now < run->end)
    issue (run, now);
  return G_SOURCE_REMOVE;
}

/* A client whose request was refused at once tries again in 1 ms (while the run lasts). */
static void
client_retry_later (LoadRun *run)
{
  if (g_get_monotonic_time () >= run->end)
    return;
  run->retrying++;
  GSource *src = g_timeout_source_new (1);
  g_source_set_callback (src, on_client_retry, run, NULL);
  g_source_attach (src, run->context);
  g_source_unref (src);
}

static void
closed_start (LoadRun *run)
{
  run->sending_over = TRUE; /* no schedule: the clients stop by themselves */
  for (guint i = 0; i < run->config.concurrency; i++)
    issue (run, g_get_monotonic_time ());
}

/* ---- open loop ---- */

static void
timer_arm (LoadRun *run, gint64 at_us)
{
  struct itimerspec its;
  memset (&its, 0, sizeof its);
  at_us = MAX (at_us, 1); /* 0 would disarm it */
  its.it_value.tv_sec = at_us / G_USEC_PER_SEC;
  its.it_value.tv_nsec = (at_us % G_USEC_PER_SEC) * 1000;
  timerfd_settime (run->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* An arrival due at @at_us: sent, or counted unsent when max_in_flight requests are in flight. */
static void
arrive (LoadRun *run, gint64 at_us)
{
  if (run->in_flight < run->config.max_in_flight) {
    issue (run, at_us);
    return;
  }
  g_autofree char *why = g_strdup_printf (
    "not sent: %u requests were already in flight (the most, max_in_flight, is %u); raise it "
    "or lower the rate",
    run->in_flight, run->config.max_in_flight);
  sedp_loadgen_results_count_arrival (run->results);
  sedp_loadgen_results_record_failure (run->results, SEDP_LOADGEN_FAILURE_UNSENT, NULL, why);
}

/* The timer fired: sends every arrival due by now (late ones as soon as possible), re-arms. */
static gboolean
on_timer (gint fd, GIOCondition condition, gpointer data)
{
  LoadRun *run = data;
  guint64 expirations;
  (void) condition;
  if (read (fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
    g_warning ("load generator: reading its timer: %s", g_strerror (errno));
  gint64 now = g_get_monotonic_time ();
  for (guint n = 0; run->next_at <= now && run->next_at < run->end; n++) {
    if (n == MAX_SENDS_PER_WAKEUP) {
      timer_arm (run, now);
      return G_SOURCE_CONTINUE;
    }
    arrive (run, run->next_at);
    run->next_at = sedp_arrivals_next (run->arrivals);
  }
  if (run->next_at >= run->end && now >= run->end) {
    run->sending_over = TRUE;
    return G_SOURCE_REMOVE;
  }
  timer_arm (run, MIN (run->next_at, run->end));
  return G_SOURCE_CONTINUE;
}

static gboolean
open_start (LoadRun *run, GError **error)
{
  run->timer_fd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (run->timer_fd < 0) {
    g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_SYSTEM,
                 "the open loop's timer: timerfd_create: %s", g_strerror (errno));
    return FALSE;
  }
  run->arrivals = sedp_arrivals_new (run->config.rate, run->config.seed, run->t0);
  run->next_at = sedp_arrivals_next (run->arrivals);
  run->timer = g_unix_fd_source_new (run->timer_fd, G_IO_IN);
  g_source_set_callback (run->timer, G_SOURCE_FUNC (on_timer), run, NULL);
  g_source_attach (run->timer, run->context);
  timer_arm (run, MIN (run->next_at, run->end));
  return TRUE;
}

gboolean
sedp_loadgen_drive_start (LoadRun *run, GError **error)
{
  if (run->config.mode == SEDP_LOADGEN_OPEN)
    return open_start (run, error);
  closed_start (run);
  return TRUE;
}

void
sedp_loadgen_drive_stop (LoadRun *run)
{
  if (run->timer)
    g_source_destroy (run->timer);
  g_clear_pointer (&run->timer, g_source_unref);
  if (run->timer_fd >= 0)
    close (run->timer_fd);
  run->timer_fd = -1;
  g_clear_pointer (&run->arrivals, sedp_arrivals_free);
}
