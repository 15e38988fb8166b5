/* sedp benchmarks — building pipelines from text, generating requests, measuring latency. */
#pragma once

#include "graph/graph.h"
#include "runtime/pipeline.h"

#include "bench-stats.h"

#include <stdio.h>
#include <stdlib.h>

/* Compiles and starts a pipeline from pipeline-file text; exits with a message on error. */
static inline SedpPipeline *
bench_pipeline (const char *text)
{
  g_auto (GStrv) path = sedp_registry_default_path ();
  static SedpRegistry *registry;
  if (registry == NULL)
    registry = sedp_registry_new ((const char *const *) path);
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "bench.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, registry, &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p == NULL || !sedp_pipeline_start (p, &error)) {
    fprintf (stderr, "bench: %s\n", error->message);
    exit (1);
  }
  return p;
}

/* A request of @n_items items with an int64 item_id column and a user_id request column. */
static inline SedpRequest *
bench_request (guint64 seq, guint n_items, gint64 deadline)
{
  char id[32];
  g_snprintf (id, sizeof id, "r%" G_GUINT64_FORMAT, seq);
  SedpRequest *r = sedp_request_new (id, deadline);
  SedpFrame *user = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (user, "user_id", SEDP_COLUMN_INT64, 1))[0] = (gint64) seq;
  SedpFrame *items = sedp_frame_new (n_items);
  gint64 *ids = sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
  for (guint i = 0; i < n_items; i++)
    ids[i] = (gint64) (seq * 1000 + i);
  sedp_request_set_frames (r, user, items);
  return r;
}

