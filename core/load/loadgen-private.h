/* sedp — the load generator's insides, shared by its files (internal to core/load):
 * loadgen.c (the API, a run's set-up and end), loadgen-drive.c (sending: closed-loop clients,
 * open-loop arrivals, completions), loadgen-http.c and loadgen-pipeline.c (the two transports).
 * Everything here runs on the thread of sedp_loadgen_run() unless said otherwise. */
#pragma once

#include "arrivals.h"
#include "loadgen.h"
#include "results-private.h"

#include <sys/socket.h>

G_BEGIN_DECLS

typedef struct _LoadRun LoadRun;

/* One request on its way, from its send to its completion. */
typedef struct {
  LoadRun *run;
  guint index;          /* in the workload */
  gint64 scheduled_us;  /* when it was due: its latency counts from here */
  gint64 done_us;       /* in process: when the runtime completed it */
  SedpRequest *request; /* in process */
} LoadSend;

/* A way to reach the target. send() returns FALSE when the target refused @s at once (the
 * transport recorded the failure; the caller frees @s); otherwise the transport records the
 * outcome later and calls sedp_loadgen_send_completed(). */
typedef struct {
  gboolean (*start) (LoadRun *run, GError **error);
  gboolean (*send) (LoadSend *s);
  void (*stop) (LoadRun *run);
} LoadTransport;

extern const LoadTransport sedp_loadgen_http_transport;
extern const LoadTransport sedp_loadgen_pipeline_transport;

struct _SedpLoadgen {
  SedpWorkload *workload;
  const LoadTransport *transport;
  GUri *uri;              /* HTTP */
  SedpPipeline *pipeline; /* in process (borrowed) */
};

struct _LoadRun {
  SedpLoadgen *gen;
  SedpLoadgenConfig config;
  SedpLoadgenResults *results;
  GMainContext *context;
  gint64 t0, end;       /* the start, the end of sending (monotonic µs) */
  guint next;           /* the next workload request */
  guint64 serial;       /* requests made (in process: their ids) */
  guint in_flight;      /* sent, not completed */
  guint retrying;       /* closed loop: clients waiting to retry a refused request */
  gboolean sending_over;
  /* open loop */
  SedpArrivals *arrivals;
  gint64 next_at;       /* the next arrival */
  int timer_fd;         /* a timerfd armed at the next arrival; -1 when none */
  GSource *timer;
  GSource *tick;        /* progress */
  /* HTTP (loadgen-http.c), set by its start() */
  struct sockaddr_storage http_addr; /* the target, resolved once per run */
  socklen_t http_addr_len;           /* 0 when it could not be resolved */
  char *http_unresolved;             /* then why: every request fails with it */
  char *http_where;                  /* "HOST:PORT", for messages */
  char *http_head;                   /* the request head, up to the Content-Length value */
  gsize http_head_len;
  GQueue http_conns;                 /* the open connections: answering, or closing */
  /* in process: completions handed over from the runtime's threads */
  GAsyncQueue *done;
  GSource *done_source;
};

/* Starts sending: the closed loop's clients, or the open loop's timer (SEDP_LOADGEN_ERROR_SYSTEM
 * when the system has none). */
gboolean sedp_loadgen_drive_start (LoadRun *run, GError **error);
/* Removes the timer; after the run. */
void sedp_loadgen_drive_stop (LoadRun *run);
/* Whether the run is over: sending over, nothing in flight or waiting. */
gboolean sedp_loadgen_drive_done (LoadRun *run);

/* The transport's report that @s completed (its outcome recorded): frees @s; a closed-loop
 * client sends its next request while the run lasts. */
void sedp_loadgen_send_completed (LoadSend *s);

G_END_DECLS
