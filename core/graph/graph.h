/* sedp — the compiled stage graph: plugins resolved, options validated, DAG checked. */
#pragma once

#include "../dsl/options.h"
#include "../dsl/spec.h"
#include "../loader/registry.h"
#include "models.h"

G_BEGIN_DECLS

/** SedpGraphNode: one stage of a compiled pipeline. */
typedef struct {
  guint index;
  const SedpStageSpec *spec;       /* borrowed from the graph's spec */
  const SedpPluginInfo *plugin;    /* borrowed from the registry */
  SedpOptionValues *options;
  SedpScope scope;
  guint n_inputs;
  guint *inputs;                   /* node indexes, in `after` order */
  guint n_outputs;
  guint *outputs;                  /* node indexes */
  guint *output_slots;             /* the input slot of this node at each output */
  /* Routing (routes.c, docs/routing.md). */
  char **input_labels;             /* per input: the BRANCH of `after = STAGE:BRANCH`, or NULL
                                    * (n_inputs entries, NULL among them: not a strv) */
  int *input_branch;               /* per input: that branch's index at the input, or -1 */
  guint8 *input_routed;            /* per input: a labelled edge lies before it (may be skipped) */
  guint n_routed_inputs;
  int *output_branch;              /* per output: the branch of this router it takes, or -1 */
  char **branches;                 /* a router's branch names (NULL-terminated), else NULL */
  guint n_branches;
  const char **route_names;        /* per branch: "STAGE:BRANCH", interned */
  guint *quota_inflight;           /* per branch: branch_max_inflight (0: none) */
  double *quota_rate;              /* per branch: branch_max_rate in requests/s (0: none) */
} SedpGraphNode;

/** SedpGraph: the checked DAG of a pipeline. */
typedef struct {
  SedpPipelineSpec *spec;          /* owned */
  guint n_nodes;
  SedpGraphNode *nodes;
  guint *topo;                     /* node indexes in topological order; topo[0] is the source */
  guint source;
  guint n_sinks;
  guint *sinks;
  GPtrArray *models;               /* SedpGraphModel*: the versions of the [model NAME] groups
                                    * the stages were created from (empty without any) */
} SedpGraph;

/* Resolves every stage's plugin in @registry, validates its options and checks the graph:
 * unknown stage in `after`, no source, stages unreachable from the source, no sink, cycles,
 * a source that is not request scope. Takes ownership of @spec (also on error). */
SEDP_API SedpGraph *sedp_graph_compile (SedpPipelineSpec *spec, SedpRegistry *registry,
                                        GError **error);

/* sedp_graph_compile() binding the [model NAME] groups first (sedp_graph_bind_models(), with
 * @versions, nullable): the stages' "@NAME" path options name the bound bundles' parts. */
SEDP_API SedpGraph *sedp_graph_compile_versions (SedpPipelineSpec *spec, SedpRegistry *registry,
                                                 GHashTable *versions, GError **error);

SEDP_API void sedp_graph_free (SedpGraph *graph);

/* Routes (routes.c, docs/routing.md), called by sedp_graph_compile() once every node has its
 * plugin and options: asks each router for its branches, resolves `after = STAGE:BRANCH`,
 * checks that every branch is taken, reads the branch quotas and marks the inputs that may
 * be skipped. FALSE with @error (SEDP_DSL_ERROR_BRANCH, naming file, line, group and key). */
gboolean sedp_graph_resolve_routes (SedpGraph *graph, GError **error);

/* Checks every column a stage declares it needs (`needs`) against those its earlier stages
 * declare they write (`writes`). FALSE with @error (SEDP_DSL_ERROR_COLUMN). */
gboolean sedp_graph_check_columns (const SedpGraph *graph, GError **error);

/* The columns the stages declare they write (`writes`), in topological order, each once; a stage
 * that cannot say adds none. Returns: (transfer full): a NULL-terminated list, maybe empty. */
SEDP_API char **sedp_graph_declared_writes (const SedpGraph *graph);

/* A readable summary of the compiled graph (stages in topological order). */
SEDP_API void sedp_graph_describe (const SedpGraph *graph, GString *out);

/* The graph in Graphviz dot. */
SEDP_API void sedp_graph_write_dot (const SedpGraph *graph, GString *out);

/* Loads, parses and compiles a pipeline file in one step. */
SEDP_API SedpGraph *sedp_graph_load (const char *path, SedpRegistry *registry, GError **error);

/* sedp_graph_load() with sedp_graph_compile_versions(). */
SEDP_API SedpGraph *sedp_graph_load_versions (const char *path, SedpRegistry *registry,
                                              GHashTable *versions, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpGraph, sedp_graph_free)

G_END_DECLS
