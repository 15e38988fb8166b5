/* sedp — runtime internals shared by the runtime's files. */
#pragma once

#include "window.h"

#include "channel.h"
#include "../graph/stage-context.h"
#include "frame-private.h"
#include "pipeline.h"

typedef struct _Stage Stage;
typedef struct _JoinSlot JoinSlot;
typedef struct _SyncExec SyncExec;
typedef struct _LoadCache LoadCache;
typedef struct _BranchState BranchState;

/* Frame kinds: a request frame (one row for the request) or a frame of item rows. */
enum { FRAME_KIND_REQUEST = 0, FRAME_KIND_ITEMS = 1 };

struct _SedpResult {
  SedpStatus status;
  char *message;
  GError *error;           /* (nullable) a FAILED request's cause: the failing stage's error */
  guint n_items;
  guint8 *item_status;     /* SedpItemStatus per item */
  char **item_message;     /* (nullable) per item */
  GPtrArray *frames;       /* sink frames (refs) */
  SedpFrame **item_frame;  /* per item: the sink frame holding it (borrowed from frames) */
  guint *item_row;
  SedpFrame *request_frame;
  gint64 latency_us;
  GPtrArray *routes;       /* (nullable) "STAGE:BRANCH" taken at request-scope routers (interned) */
};

struct _SedpRequest {
  gint ref_count;
  char *id;
  gint64 deadline;             /* absolute; 0 until submission when relative */
  gint64 timeout_us;           /* relative deadline, applied at submission (0: none) */
  gint64 submitted_at;
  gint64 started_at;           /* the clock's start: sedp_request_set_start(), else submission */
  GBytes *payload;
  char *content_type;
  SedpFrame *request_frame;    /* as submitted */
  SedpFrame *items;            /* as submitted, or set by the source */
  guint top_k;                 /* atomic: the client's top_k (0: none) */

  GMutex lock;                 /* guards everything below and the join slots */
  GHashTable *data;            /* request-scope plugin data */
  SedpPipeline *pipeline;      /* while in flight */
  SedpRequestDone done_cb;
  gpointer done_data;
  gint done;                   /* atomic: 1 once completed */
  gint started;                /* the source ran: items cut, pending set */
  guint n_items;
  guint live_items;            /* items not finished yet (counted in the pipeline's items_inflight) */
  guint n_frames;
  SedpFrame **item_frames;     /* the items cut into frames */
  guint pending;               /* sink arrivals still expected */
  JoinSlot **joins;            /* per stage, lazily */
  SedpResult result;
  gint heap_pos;               /* position in the deadline heap, -1 when not there */
  GPtrArray *holds;            /* (nullable) BranchState*: the branches it was admitted to */
  gboolean skipped;            /* a skip reached a sink: items may have reached none */
};

struct _SedpEvent {
  SedpRequest *request;        /* ref */
  int frame_index;
  SedpFrame *frame;            /* ref; NULL for a tombstone (the frame died upstream) */
  GError *error;
  gboolean dropped;
  SedpFrame *items;            /* set by the source stage */
  guint slot;                  /* input slot at the receiving stage */
  gint64 enqueued_at;          /* when it was put on the receiving stage's queue */
  guint64 routes;              /* a router's process: the branches taken (sedp_event_route) */
  gboolean skip;               /* a branch not taken: no frame, carried without a queue */
};


struct _Stage {
  SedpPipeline *pipeline;
  const SedpGraphNode *node;
  const SedpStageDescriptor *desc;
  gpointer instance;
  SedpStageContext ctx;
  SedpChannel *channel;        /* staged mode */
  GThread **threads;
  gint *tids;              /* each worker's kernel thread id, set by the worker when it starts */
  guint n_threads;
  gboolean direct;             /* one input of the same scope: no join needed */
  guint n_req_inputs;
  guint n_item_inputs;
  guint8 *slot_is_item;        /* per input slot: the producer runs at item scope */
  guint *slot_pos;             /* per input slot: position among inputs of its scope */
  gboolean is_sink;
  gboolean is_source;
  gboolean compact_scatter;    /* a gathered input is cut into full frames (sedp_join_compacts) */
  GPatternSpec **drop;         /* NULL-terminated (or NULL): [stage] drop_columns, compiled */
  SedpCounter *m_events;
  SedpCounter *m_expired;
  SedpCounter *m_failed;
  SedpCounter *m_dropped;
  SedpHistogram *m_batch;
  SedpHistogram *m_latency;
  SedpLatencyWindow *residence; /* per event: from its enqueue to the end of process (load.c) */
  SedpLatencyWindow *rows_done; /* rows of the events processed (a count: sums, not values) */
  SedpLatencyWindow *busy_us;   /* microseconds spent in process (a count, likewise) */
  guint8 *downstream;          /* per node: 1 when it comes after this stage */
  LoadCache *load;             /* the last load snapshot read by this stage */
  BranchState *branches;       /* a router's branches (route.c), n_branches of them */
  guint n_branches;
};

typedef struct _DeadlineQueue DeadlineQueue;

struct _SedpPipeline {
  SedpGraph *graph;
  guint n_stages;
  Stage *stages;
  SedpMetrics *metrics;
  SedpMode mode;
  gint64 deadline_us;
  guint frame_rows;
  gint accepting;
  gint started;
  gint stopped;
  GMutex lock;
  GCond drained;
  guint inflight;              /* atomic; changed under lock (drained waits on it) */
  gint items_inflight;         /* atomic: items of the requests in flight not finished yet */
  DeadlineQueue *deadlines;
  /* sync mode */
  SedpChannel *entry;
  GThread **sync_threads;
  gint *sync_tids;         /* as Stage.tids */
  guint n_sync_threads;
  SedpCounter *m_requests;
  SedpCounter *m_overloaded;
  SedpCounter *m_timeouts;
  SedpHistogram *m_request_latency;
  SedpLatencyWindow *recent_latency;  /* completed requests, the last 2 s */
  SedpLatencyWindow *recent_arrivals; /* submissions (counted, value 0), the same window */
  SedpLatencyWindow *recent_items;    /* items finished scored or cached, the same window */
};

/* The recent past the load signals look at: 20 slices of 100 ms. */
#define SEDP_RECENT_SLICES 20
#define SEDP_RECENT_SLICE_US 100000
/* The downstream residence (a control signal): the last 5 of those slices, 0.5 s. */
#define SEDP_FAST_SLICES 5

/* Load signals (load.c): a stage's window and snapshot cache, the figures the gauges read. */
void sedp_load_init_stage (SedpPipeline *p, Stage *s);
void sedp_load_clear_stage (Stage *s);
void sedp_load_register_gauges (SedpPipeline *p);
guint sedp_load_queued (const Stage *s);
guint sedp_load_capacity (const Stage *s);

/* Routing (route.c, docs/routing.md). */
void sedp_route_init_stage (SedpPipeline *p, Stage *s);
void sedp_route_clear_stage (Stage *s);
/* A router's live event leaves it: down the branches it took, skips down the others; a
 * request-scope router first admits the request to its branches (FALSE: a quota refused it,
 * the request completed OVERLOADED). Takes ownership of @event. */
gboolean sedp_route_forward (SedpPipeline *p, Stage *s, SedpEvent *event, SyncExec *x);
/* A skip that @stage does not take: its outputs get skips, a sink counts it. Takes @event. */
void sedp_route_pass_skip (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *event);
/* At completion: the request leaves the branches it held (in flight, latency per branch). */
void sedp_route_release (SedpRequest *r, gint64 latency_us);

/* Per-request join state of one stage (join.c). */
void sedp_join_slot_free (JoinSlot *slot);

/* Whether item stage @node of @graph may cut the item rows it gets gathered (from a
 * request-scope stage, after a shedder, say) into full frames in order, rather than back into
 * the frames they came from: when no item stage from @node on joins them, frame by frame, with
 * item rows that did not pass through @node. Then the rows a gathered stage shed leave full
 * frames behind them, not a few rows in each (and the batched engine runs fewer, fuller calls). */
gboolean sedp_join_compacts (const SedpGraph *graph, guint node);

/* Hands @event to @stage's input @event->slot: straight into its channel when no join is
 * needed, else through the join (which may emit zero or more merged events). @x is the sync
 * executor, or NULL in staged mode. Takes ownership of @event. */
void sedp_runtime_deliver (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *event);

/* Puts a ready event on @stage's queue (channel, or the sync executor's list). */
void sedp_runtime_enqueue (SedpPipeline *p, SyncExec *x, Stage *stage, SedpEvent *event);

/* Join logic: returns the events that became ready (GPtrArray of SedpEvent*), or NULL. */
GPtrArray *sedp_join_accept (SedpPipeline *p, Stage *stage, SedpEvent *event);

SedpEvent *sedp_event_new (SedpRequest *request, int frame_index, SedpFrame *frame);
void sedp_event_free (SedpEvent *event);

/* Completion (request.c). */
void sedp_request_begin (SedpRequest *r, SedpPipeline *p, SedpRequestDone done, gpointer data);
void sedp_request_complete (SedpRequest *r, SedpStatus status, const char *message);
/* Completes @r FAILED because stage @stage failed its request-scope event with @error: the
 * result's message is "stage 'STAGE': MESSAGE" and its error a copy of @error (domain and code
 * kept, the message prefixed alike). */
void sedp_request_fail (SedpRequest *r, const char *stage, const GError *error);
/* Records a sink arrival (frame NULL for a tombstone); completes the request on the last. */
void sedp_request_collect (SedpRequest *r, SedpFrame *frame);
/* Marks items of @frame (rows that are not live) with their state and message. */
void sedp_request_record_rows (SedpRequest *r, const SedpFrame *frame, const char *stage);
/* Records the rows of @frame (all answered early) as the items' results, status CACHED; takes
 * ownership of @frame. */
void sedp_request_record_answered (SedpRequest *r, SedpFrame *frame);
/* Marks every item of @frame failed (or dropped when @message is NULL). */
void sedp_request_record_frame (SedpRequest *r, const SedpFrame *frame, SedpItemStatus status,
                                const char *message);
/* Cuts the items into frames and sets how many sink arrivals complete the request. */
void sedp_request_start_items (SedpRequest *r, SedpFrame *items, guint frame_rows,
                               guint expected_per_frame, guint expected_once);
gboolean sedp_request_is_done (SedpRequest *r);

/* Deadlines (deadline.c). */
DeadlineQueue *sedp_deadline_queue_new (void);
void sedp_deadline_queue_free (DeadlineQueue *q);
/* Where the timer thread writes its kernel thread id (0 until it runs): sedp_pipeline_set_idle(). */
gint *sedp_deadline_queue_tid (DeadlineQueue *q);
void sedp_deadline_queue_add (DeadlineQueue *q, SedpRequest *r);
void sedp_deadline_queue_remove (DeadlineQueue *q, SedpRequest *r);
