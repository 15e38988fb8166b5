/* sedp — the trace of sampled requests: a bounded in-memory buffer of complete events, written
 * as Chrome's Trace Event Format at the end (docs/observability.md). */
#include "trace.h"

#include "runtime-private.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A queue-wait lane's thread id: the worker's plus this (kernel thread ids stay under 2^22). */
#define QUEUE_LANE (1 << 23)
#define CHUNK_EVENTS 65536

enum { KIND_QUEUE = 0, KIND_PROCESS = 1 };

typedef struct {
  gint64 ts, dur;
  const char *request_id;  /* in the trace's string chunk */
  const char *stage;       /* likewise */
  const char *pipeline;    /* likewise */
  gint tid;
  guint32 rows, batch;
  guint8 kind;
} Record;

struct _SedpTrace {
  char *path;
  guint every;
  guint max_events;
  gint64 origin;           /* ts 0 */
  guint64 seq;             /* atomic: requests submitted */
  guint64 sampled;         /* atomic */
  GMutex lock;             /* guards everything below */
  GPtrArray *chunks;       /* Record[CHUNK_EVENTS] each */
  guint64 n_events;
  guint64 dropped;
  GStringChunk *strings;
  GHashTable *lanes;       /* tid → lane name (in strings) */
};

static SedpTrace *default_trace;

SedpTrace *
sedp_trace_new (const char *path, guint sample_every, guint max_events)
{
  g_return_val_if_fail (path != NULL, NULL);
  SedpTrace *t = g_new0 (SedpTrace, 1);
  t->path = g_strdup (path);
  t->every = MAX (sample_every, 1);
  t->max_events = MAX (max_events, 1);
  t->origin = g_get_monotonic_time ();
  g_mutex_init (&t->lock);
  t->chunks = g_ptr_array_new_with_free_func (g_free);
  t->strings = g_string_chunk_new (4096);
  t->lanes = g_hash_table_new (g_direct_hash, g_direct_equal);
  return t;
}

void
sedp_trace_free (SedpTrace *t)
{
  if (t == NULL)
    return;
  if (default_trace == t)
    default_trace = NULL;
  g_ptr_array_unref (t->chunks);
  g_string_chunk_free (t->strings);
  g_hash_table_unref (t->lanes);
  g_mutex_clear (&t->lock);
  g_free (t->path);
  g_free (t);
}

void
sedp_trace_set_default (SedpTrace *t)
{
  default_trace = t;
}

SedpTrace *
sedp_trace_get_default (void)
{
  return default_trace;
}

gboolean
sedp_trace_sample (SedpTrace *t)
{
  guint64 n = __atomic_fetch_add (&t->seq, 1, __ATOMIC_RELAXED);
  if (n % t->every != 0)
    return FALSE;
  __atomic_add_fetch (&t->sampled, 1, __ATOMIC_RELAXED);
  return TRUE;
}

/* The next free record, or NULL when the bound is reached (counted). Under the lock. */
static Record *
next_record (SedpTrace *t)
{
  if (t->n_events >= t->max_events) {
    t->dropped++;
    return NULL;
  }
  guint64 k = t->n_events % CHUNK_EVENTS;
  if (k == 0)
    g_ptr_array_add (t->chunks, g_new (Record, CHUNK_EVENTS));
  Record *r = (Record *) t->chunks->pdata[t->chunks->len - 1] + k;
  t->n_events++;
  return r;
}

/* Names the lanes of @b's worker (its process calls, its queue waits) the first time. */
static void
name_lanes (SedpTrace *t, const SedpTraceBatch *b)
{
  if (g_hash_table_contains (t->lanes, GINT_TO_POINTER (b->tid)))
    return;
  g_autofree char *name = g_strdup_printf ("%s/%s #%u", b->pipeline, b->sync ? "sync" : b->stage,
                                           b->worker);
  g_autofree char *queue = g_strdup_printf ("%s queue", name);
  g_hash_table_insert (t->lanes, GINT_TO_POINTER (b->tid), g_string_chunk_insert (t->strings, name));
  g_hash_table_insert (t->lanes, GINT_TO_POINTER (b->tid + QUEUE_LANE),
                       g_string_chunk_insert (t->strings, queue));
}

static void
record_event (SedpTrace *t, const SedpTraceBatch *b, SedpEvent *ev, guint n)
{
  SedpRequest *rq = ev->request;
  gint64 enqueued = ev->enqueued_at ? ev->enqueued_at : rq->submitted_at;
  const char *id = g_string_chunk_insert_const (t->strings, rq->id ? rq->id : "");
  const char *stage = g_string_chunk_insert_const (t->strings, b->stage);
  const char *pipeline = g_string_chunk_insert_const (t->strings, b->pipeline);
  guint32 rows = ev->frame ? sedp_frame_get_n_rows (ev->frame) : 0;
  Record *q = next_record (t);
  if (q)
    *q = (Record) {enqueued - t->origin, MAX (b->picked - enqueued, 0), id, stage, pipeline,
                   b->tid + QUEUE_LANE, rows, n, KIND_QUEUE};
  Record *p = next_record (t);
  if (p)
    *p = (Record) {b->t0 - t->origin, MAX (b->t1 - b->t0, 0), id, stage, pipeline, b->tid, rows,
                   n, KIND_PROCESS};
}

void
sedp_trace_record_batch (SedpTrace *t, const SedpTraceBatch *b, SedpEvent **events, guint n)
{
  gboolean locked = FALSE;
  for (guint i = 0; i < n; i++) {
    if (!events[i]->request->traced)
      continue;
    if (!locked) {
      g_mutex_lock (&t->lock);
      name_lanes (t, b);
      locked = TRUE;
    }
    record_event (t, b, events[i], n);
  }
  if (locked)
    g_mutex_unlock (&t->lock);
}

guint64
sedp_trace_get_n_events (SedpTrace *t)
{
  g_mutex_lock (&t->lock);
  guint64 n = t->n_events;
  g_mutex_unlock (&t->lock);
  return n;
}

guint64
sedp_trace_get_dropped (SedpTrace *t)
{
  g_mutex_lock (&t->lock);
  guint64 n = t->dropped;
  g_mutex_unlock (&t->lock);
  return n;
}

guint64
sedp_trace_get_n_sampled (SedpTrace *t)
{
  return __atomic_load_n (&t->sampled, __ATOMIC_RELAXED);
}

const char *
sedp_trace_get_path (SedpTrace *t)
{
  return t->path;
}

/* ---- the JSON ---- */

static void
write_string (FILE *f, const char *s)
{
  fputc ('"', f);
  for (const guchar *c = (const guchar *) s; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf (f, "\\%c", *c);
    else if (*c < 0x20)
      fprintf (f, "\\u%04x", *c);
    else
      fputc (*c, f);
  }
  fputc ('"', f);
}

static gint
compare_record (gconstpointer a, gconstpointer b)
{
  const Record *x = *(Record *const *) a, *y = *(Record *const *) b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void
write_lanes (SedpTrace *t, FILE *f, int pid)
{
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, t->lanes);
  while (g_hash_table_iter_next (&it, &key, &value)) {
    fprintf (f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                "\"args\": {\"name\": ", pid, GPOINTER_TO_INT (key));
    write_string (f, value);
    fputs ("}}", f);
  }
}

static void
write_record (FILE *f, const Record *r, int pid)
{
  fprintf (f, ",\n{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d, "
              "\"ts\": %" G_GINT64_FORMAT ", \"dur\": %" G_GINT64_FORMAT ", \"args\": {\"request_id\": ",
           r->kind == KIND_QUEUE ? "queue wait" : "process", r->kind == KIND_QUEUE ? "queue" : "process",
           pid, r->tid, r->ts, r->dur);
  write_string (f, r->request_id);
  fputs (", \"pipeline\": ", f);
  write_string (f, r->pipeline);
  fputs (", \"stage\": ", f);
  write_string (f, r->stage);
  fprintf (f, ", \"rows\": %u, \"batch\": %u}}", r->rows, r->batch);
}

gboolean
sedp_trace_write (SedpTrace *t, GError **error)
{
  g_return_val_if_fail (t != NULL, FALSE);
  FILE *f = fopen (t->path, "w");
  if (f == NULL) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: cannot write the trace: %s",
                 t->path, g_strerror (e));
    return FALSE;
  }
  g_mutex_lock (&t->lock);
  g_autoptr (GPtrArray) order = g_ptr_array_sized_new ((guint) t->n_events);
  for (guint64 i = 0; i < t->n_events; i++)
    g_ptr_array_add (order, (Record *) t->chunks->pdata[i / CHUNK_EVENTS] + i % CHUNK_EVENTS);
  g_ptr_array_sort (order, compare_record);
  int pid = (int) getpid ();
  fprintf (f, "{\"traceEvents\": [\n{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, "
              "\"tid\": 0, \"args\": {\"name\": \"sedp\"}}", pid);
  write_lanes (t, f, pid);
  for (guint i = 0; i < order->len; i++)
    write_record (f, order->pdata[i], pid);
  fprintf (f, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"sample_every\": %u, "
              "\"sampled_requests\": %" G_GUINT64_FORMAT ", \"dropped_events\": %" G_GUINT64_FORMAT
              ", \"max_events\": %u}}\n",
           t->every, sedp_trace_get_n_sampled (t), t->dropped, t->max_events);
  g_mutex_unlock (&t->lock);
  gboolean bad = ferror (f) != 0;
  int e = bad ? EIO : 0;
  if (fclose (f) != 0 && !bad) {
    bad = TRUE;
    e = errno;
  }
  if (bad)
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: cannot write the trace: %s",
                 t->path, g_strerror (e));
  return !bad;
}
