/* sedp runtime tests — starting pipelines from text and collecting completed requests. */
#pragma once

#include "test-common.h"

#include "graph/graph.h"
#include "runtime/pipeline.h"

#include <string.h>

static SedpRegistry *test_registry;

static inline SedpRegistry *
runtime_registry (void)
{
  if (test_registry == NULL) {
    const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, SEDP_TEST_BUILDDIR "/runtime", NULL};
    test_registry = sedp_registry_new (dirs);
  }
  return test_registry;
}

/* A pipeline from text, started; fails the test (fatally) on errors. */
static inline SedpPipeline *
start_pipeline (const char *text)
{
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p)
    sedp_pipeline_start (p, &error);
  if (error)
    fprintf (stderr, "\n  pipeline error: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  return p;
}

/* Collects completed requests (referenced) from the runtime's threads. */
typedef struct {
  GMutex lock;
  GCond cond;
  GPtrArray *done;
} Collector;

static inline void
collector_init (Collector *c)
{
  g_mutex_init (&c->lock);
  g_cond_init (&c->cond);
  c->done = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_request_unref);
}

static inline void
collector_clear (Collector *c)
{
  g_ptr_array_unref (c->done);
  g_mutex_clear (&c->lock);
  g_cond_clear (&c->cond);
}

static inline void
collector_done (SedpRequest *r, gpointer data)
{
  Collector *c = data;
  g_mutex_lock (&c->lock);
  g_ptr_array_add (c->done, sedp_request_ref (r));
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
}

/* Waits until @n requests completed (at most @seconds); returns how many did. */
static inline guint
collector_wait (Collector *c, guint n, double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * 1e6);
  if (g_getenv ("SEDP_VALGRIND"))
    end += (gint64) (seconds * 20e6);
  g_mutex_lock (&c->lock);
  while (c->done->len < n)
    if (!g_cond_wait_until (&c->cond, &c->lock, end))
      break;
  guint got = c->done->len;
  g_mutex_unlock (&c->lock);
  return got;
}

/* A request with a user frame (user_id) and @n_items items (item_id = seq * 1000 + i). */
static inline SedpRequest *
make_request (const char *id, guint seq, guint n_items, gint64 deadline)
{
  SedpRequest *r = sedp_request_new (id, deadline);
  SedpFrame *user = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (user, "user_id", SEDP_COLUMN_INT64, 1))[0] = seq;
  SedpFrame *items = sedp_frame_new (n_items);
  gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
  for (guint i = 0; i < n_items; i++)
    ids[i] = (gint64) seq * 1000 + i;
  sedp_request_set_frames (r, user, items);
  return r;
}

/* The int64 value of column @name at @row (row 0 for broadcast columns); G_MININT64 when the
 * column is missing. */
static inline gint64
int_at (const SedpFrame *f, const char *name, guint row)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_INT64)
    return G_MININT64;
  return sedp_column_get_int64 (c)[sedp_column_is_broadcast (c) ? 0 : row];
}

static inline gint64
id_hash (const char *id)
{
  return (gint64) (g_str_hash (id) & 0x7fffffff);
}

/* Submits requests "r0" … "r{n-1}" (user_id = i) with @n_items[i] items each, or @items each
 * when @n_items is NULL. Returns how many were accepted. */
static inline guint
submit_numbered (SedpPipeline *p, Collector *c, guint n, const guint *n_items, guint items)
{
  guint accepted = 0;
  for (guint i = 0; i < n; i++) {
    char id[16];
    g_snprintf (id, sizeof id, "r%u", i);
    SedpRequest *r = make_request (id, i, n_items ? n_items[i] : items, 0);
    accepted += sedp_pipeline_submit (p, r, collector_done, c) == SEDP_STATUS_OK;
    sedp_request_unref (r);
  }
  return accepted;
}

/* 1, 2, …, n: a different number of items per request. */
static inline guint *
ascending_counts (guint n)
{
  guint *v = g_new (guint, n);
  for (guint i = 0; i < n; i++)
    v[i] = 1 + i;
  return v;
}
