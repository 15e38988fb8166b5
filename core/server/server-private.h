/* sedp — the HTTP front end's shared state: the served pipelines, their versions (instances)
 * and the helpers server.c (predictions, warm-up, endpoints), reload.c (hot reload, rollback,
 * probation, the repository watcher) and admin.c (the admin API, model status) share.
 *
 * Threads: everything here is read and written in the server's main context, except where a
 * field says otherwise. The loader thread (reload.c) only reads a Served's immutable fields
 * (name, path, spec_text, warmup records) and builds a new Instance it hands to the main context. */
#pragma once

#include "server.h"

#include "../graph/models.h"
#include "../io/warmup.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

typedef struct _Served Served;
typedef struct _Reloader Reloader;

/**
 * Instance:
 * One version of a served pipeline: a started pipeline instance, created from one binding of its
 * [model NAME] groups. Requests admitted to it hold a reference until their response is
 * delivered; the Served holds one while it is current. The last unref stops and frees the
 * pipeline in a thread of its own (instance_unref()). Created by the loader thread or
 * sedp_server_add_pipeline(); refcounted in the main context only.
 */
typedef struct {
  guint refs;
  SedpServer *server;
  Served *served;
  SedpPipeline *pipeline;
  const GPtrArray *models;  /* SedpGraphModel*: the pipeline graph's (never empty for reloads) */
  char *model_version;      /* "NAME:V[,NAME:V]" for responses; NULL without [model] groups */
  GDateTime *loaded_at;     /* when it was created */
  /* Probation counters, from the swap on (main context). */
  guint64 requests;
  guint64 failed;
  GArray *latencies;        /* guint32 µs of the last INSTANCE_LATENCIES requests, a ring */
  guint latency_next;
} Instance;

/* How many latencies an instance keeps for its p99 (the probation guard's). */
#define INSTANCE_LATENCIES 2048

/** The state of one served model's versions (reload.c); read by admin.c. */
struct _Reloader {
  Served *served;
  GMainContext *context;   /* the server's: its timeouts run there */
  char *model;             /* the [model NAME] reloads act on: the pipeline's first */
  char *repository;
  gint64 pinned;           /* 0: latest */
  gboolean keyed;          /* the group names a public_key */
  guint poll_interval_s;
  guint probation_s;
  double max_error_rate;   /* 1: off */
  double max_p99_over_previous; /* 0: off */
  double warmup_pause;     /* pause after each warm-up request, in multiples of its time */
  gint64 previous;         /* the version served before the current one (0: none) */
  GDateTime *previous_loaded_at;
  GArray *rejected;        /* gint64: versions rolled back, not loaded again by the watcher */
  gboolean loading;
  char *last_error;
  guint64 n_loaded, n_unchanged, n_failed, n_rollbacks_admin, n_rollbacks_guard;
  gint64 swap_us_max;
  gint64 swap_us_last;
  double load_s_last;
  GFileMonitor *monitor;   /* signals in the thread-default context of sedp_server_add_pipeline() */
  guint scan_source;       /* a pending scan (debounced monitor events), or 0 */
  guint poll_source;
  /* Probation of the current version, after a swap. */
  gint64 probation_until;  /* monotonic µs; 0: none */
  double previous_p99_us;  /* the previous version's p99 at the swap (0: unknown) */
  guint probation_source;
};

struct _Served {
  char *name;
  char *path;
  char *spec_text;         /* the pipeline file as read when added: every version is made from it */
  SedpRegistry *registry;  /* borrowed: outlives the server */
  Instance *current;       /* the version serving; one reference */
  char **outputs;          /* the pipeline's outputs (NULL-terminated, maybe empty) */
  /* Warm-up (docs/serving.md#warm-up): the records of [pipeline] warmup, sent one at a time,
   * warmup_repeat times over, before the pipeline is ready. */
  GPtrArray *warmup;       /* SedpWarmupRecord*, or NULL without warmup */
  char *warmup_file;
  guint warmup_repeat;
  guint warmup_total;      /* records × repeat */
  guint warmup_sent;
  guint warmup_completed;
  guint warmup_timed_out;
  gint64 warmup_start;     /* monotonic µs; 0 before it started */
  gint64 warmup_end;       /* 0 until it ended */
  gboolean ready;          /* loaded, started and warmed up */
  Reloader *reloader;      /* NULL for a pipeline without [model] groups */
  gint retiring;           /* instances of this pipeline released and not yet freed (atomic: the
                            * loader thread waits for 0) */
};

struct _SedpServer {
  SoupServer *soup;
  GMainContext *context;
  gsize max_body;
  GPtrArray *served;       /* Served*, in the order added */
  gboolean draining;
  gint drained;            /* set by the drain thread once every pipeline stopped */
  guint n_open;            /* predict messages paused or being written */
  guint64 next_id;
  guint port;
  GSocketService *service; /* accepts the connections (see on_incoming); NULL before listening */
  /* Warm-up */
  guint n_warming;         /* warm-up requests submitted and not delivered back */
  gboolean warmup_failed;
  SedpServerWarmupDone warmup_done;
  gpointer warmup_done_data;
  GError *warmup_error;    /* what the done callback gets */
  GSource *warmup_idle;    /* calls it */
  /* Versions (reload.c, admin.c) */
  char *admin_token;       /* NULL: the admin API answers 404 */
  guint n_retiring;        /* instances released and not yet freed, over every pipeline */
  guint n_loading;         /* loader threads running */
  GMutex load_lock;        /* one load at a time (the registry's path lookups are not shared) */
};

/* ---- server.c ---- */
void server_respond_error (SoupServerMessage *msg, guint status, const char *message);
/* The HTTP status of a FAILED request's error (sedp_result_get_error()): 400 for the protocol's
 * errors (SEDP_PROTOCOL_ERROR, the client's fault), 500 for any other or none. */
guint server_status_of_error (const GError *error);
void server_respond_json (SoupServerMessage *msg, guint status, JsonBuilder *b);
void server_method_not_allowed (SoupServerMessage *msg, const char *allow);
/* A warm-up request from record @r, the @n-th sent (its id when the record has none). */
SedpRequest *server_warmup_request (const SedpWarmupRecord *r, guint n);

/* ---- reload.c ---- */
/* A new instance of @s's pipeline from @graph (taken), started; NULL with @error. */
Instance *instance_new (SedpServer *server, Served *s, SedpGraph *graph, GError **error);
Instance *instance_ref (Instance *inst);
/* Stops and frees @inst now (the server is being freed: no request holds it). */
void instance_free_now (Instance *inst);
/* Drops a reference; the last one retires the instance (stopped and freed in a thread). */
void instance_unref (Instance *inst);
/* Counts a delivered request of @inst for its probation (@failed: FAILED, or answered 5xx). */
void instance_count (Instance *inst, gboolean failed, gint64 latency_us);
/* Sets up @s's reloader when its pipeline has [model] groups (after s->current is set). */
void reloader_new (SedpServer *server, Served *s);
void reloader_free (Reloader *r);
/* Waits (iterating the main context) until no loader runs and no instance is retiring. */
void reload_wait_idle (SedpServer *server);


G_END_DECLS
