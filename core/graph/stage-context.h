/* sedp — the stage context's fields (SedpStageContext in sdk/sedp/stage.h): what a stage knows
 * about itself, filled from its graph node. The runtime makes one per running stage; the graph
 * makes a short-lived one to ask a plugin's `branches`, `writes` and `needs` (routes.c). */
#pragma once

#include "../dsl/options.h"
#include "../runtime/metrics.h"

struct _SedpStageContext {
  char *name;
  SedpScope scope;
  guint parallelism;
  guint batch;
  const SedpOptionValues *options;
  SedpMetrics *metrics;        /* NULL in the graph's checks: no metric may be registered */
};
