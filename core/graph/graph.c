/* sedp — compiling a pipeline spec into a checked DAG of stages. */
#include "graph.h"
#include "../util/cpus.h"

#include <string.h>

static int
find_stage (const SedpPipelineSpec *spec, const char *name)
{
  for (guint i = 0; i < spec->stages->len; i++)
    if (strcmp (((SedpStageSpec *) spec->stages->pdata[i])->name, name) == 0)
      return (int) i;
  return -1;
}

void
sedp_graph_free (SedpGraph *g)
{
  if (g == NULL)
    return;
  for (guint i = 0; i < g->n_nodes; i++) {
    sedp_option_values_free (g->nodes[i].options);
    g_free (g->nodes[i].inputs);
    g_free (g->nodes[i].outputs);
    g_free (g->nodes[i].output_slots);
    for (guint k = 0; g->nodes[i].input_labels && k < g->nodes[i].n_inputs; k++)
      g_free (g->nodes[i].input_labels[k]); /* NULL where unlabelled: not a strv */
    g_free (g->nodes[i].input_labels);
    g_free (g->nodes[i].input_branch);
    g_free (g->nodes[i].input_routed);
    g_free (g->nodes[i].output_branch);
    g_strfreev (g->nodes[i].branches);
    g_free (g->nodes[i].route_names);
    g_free (g->nodes[i].quota_inflight);
    g_free (g->nodes[i].quota_rate);
  }
  g_free (g->nodes);
  g_free (g->topo);
  g_free (g->sinks);
  if (g->models)
    g_ptr_array_unref (g->models);
  sedp_pipeline_spec_free (g->spec);
  g_free (g);
}

/* Depth-first search for a cycle; on finding one, writes it as "a -> b -> a" into @path. */
static gboolean
find_cycle (SedpGraph *g, guint v, guint8 *color, GArray *stack, GString *path)
{
  color[v] = 1;
  g_array_append_val (stack, v);
  for (guint k = 0; k < g->nodes[v].n_outputs; k++) {
    guint w = g->nodes[v].outputs[k];
    if (color[w] == 1) {
      guint start = 0;
      while (g_array_index (stack, guint, start) != w)
        start++;
      for (guint s = start; s < stack->len; s++)
        g_string_append_printf (path, "%s -> ", g->nodes[g_array_index (stack, guint, s)].spec->name);
      g_string_append (path, g->nodes[w].spec->name);
      return TRUE;
    }
    if (color[w] == 0 && find_cycle (g, w, color, stack, path))
      return TRUE;
  }
  color[v] = 2;
  g_array_set_size (stack, stack->len - 1);
  return FALSE;
}

SedpGraph *
sedp_graph_compile (SedpPipelineSpec *spec, SedpRegistry *registry, GError **error)
{
  return sedp_graph_compile_versions (spec, registry, NULL, error);
}

SedpGraph *
sedp_graph_compile_versions (SedpPipelineSpec *spec, SedpRegistry *registry, GHashTable *versions,
                             GError **error)
{
  g_autoptr (SedpGraph) g = g_new0 (SedpGraph, 1);
  g->spec = spec;
  g_autoptr (GHashTable) parts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g->models = sedp_graph_bind_models (spec, versions, parts, error);
  if (g->models == NULL)
    return NULL;
  const char *path = spec->path;
  guint n = spec->stages->len;

  if (n == 0) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_NO_SINK,
                 "%s: no sink: the pipeline has no [stage NAME] groups", path);
    return NULL;
  }
  g->n_nodes = n;
  g->nodes = g_new0 (SedpGraphNode, n);

  /* Edges. */
  for (guint i = 0; i < n; i++) {
    SedpGraphNode *node = &g->nodes[i];
    node->index = i;
    node->spec = spec->stages->pdata[i];
    node->n_inputs = g_strv_length (node->spec->after);
    node->inputs = g_new0 (guint, MAX (node->n_inputs, 1));
    node->input_labels = g_new0 (char *, node->n_inputs + 1);
    for (guint k = 0; k < node->n_inputs; k++) {
      const char *colon = strchr (node->spec->after[k], ':');
      g_autofree char *dep = g_strndup (node->spec->after[k],
                                        colon ? (gsize) (colon - node->spec->after[k]) : strlen (node->spec->after[k]));
      node->input_labels[k] = colon ? g_strdup (colon + 1) : NULL;
      int j = find_stage (spec, dep);
      if (j < 0) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNKNOWN_STAGE,
                     "%s:%u: [stage %s] after: unknown stage '%s'", path,
                     sedp_stage_spec_key_line (node->spec, "after"), node->spec->name, dep);
        return NULL;
      }
      for (guint q = 0; q < k; q++)
        if (node->inputs[q] == (guint) j && g_strcmp0 (node->input_labels[q], node->input_labels[k]) == 0) {
          g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_DUPLICATE,
                       "%s:%u: [stage %s] after: stage '%s' listed twice", path,
                       sedp_stage_spec_key_line (node->spec, "after"), node->spec->name,
                       node->spec->after[k]);
          return NULL;
        }
      node->inputs[k] = (guint) j;
    }
  }
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < g->nodes[i].n_inputs; k++)
      g->nodes[g->nodes[i].inputs[k]].n_outputs++;
  for (guint i = 0; i < n; i++) {
    g->nodes[i].outputs = g_new0 (guint, MAX (g->nodes[i].n_outputs, 1));
    g->nodes[i].output_slots = g_new0 (guint, MAX (g->nodes[i].n_outputs, 1));
    g->nodes[i].n_outputs = 0;
  }
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < g->nodes[i].n_inputs; k++) {
      SedpGraphNode *from = &g->nodes[g->nodes[i].inputs[k]];
      from->output_slots[from->n_outputs] = k;
      from->outputs[from->n_outputs++] = i;
    }

  /* Source: the first stage without `after`; any other such stage cannot be reached. */
  int source = -1;
  for (guint i = 0; i < n; i++) {
    if (g->nodes[i].n_inputs > 0)
      continue;
    if (source < 0) {
      source = (int) i;
      continue;
    }
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNREACHABLE,
                 "%s:%u: [stage %s]: unreachable from the source stage '%s' (it has no 'after'; "
                 "only the source may omit it)",
                 path, g->nodes[i].spec->line, g->nodes[i].spec->name, g->nodes[source].spec->name);
    return NULL;
  }
  if (source < 0) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_NO_SOURCE,
                 "%s: no source: every stage has 'after', so requests have no entry stage", path);
    return NULL;
  }
  g->source = (guint) source;

  /* Cycles. */
  {
    g_autofree guint8 *color = g_new0 (guint8, n);
    g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (guint));
    g_autoptr (GString) cycle = g_string_new (NULL);
    for (guint i = 0; i < n; i++)
      if (color[i] == 0 && find_cycle (g, i, color, stack, cycle)) {
        guint first = 0;
        const char *head = cycle->str;
        int j = -1;
        g_autofree char *first_name = g_strndup (head, strcspn (head, " "));
        j = find_stage (spec, first_name);
        if (j >= 0)
          first = sedp_stage_spec_key_line (g->nodes[j].spec, "after");
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_CYCLE,
                     "%s:%u: [stage %s] after: cycle %s", path, first, first_name, cycle->str);
        return NULL;
      }
  }

  /* Reachability from the source (stages fed only by a cycle are caught above). */
  {
    g_autofree guint8 *seen = g_new0 (guint8, n);
    g_autofree guint *queue = g_new (guint, n);
    guint qh = 0, qt = 0;
    queue[qt++] = g->source;
    seen[g->source] = 1;
    while (qh < qt) {
      guint v = queue[qh++];
      for (guint k = 0; k < g->nodes[v].n_outputs; k++) {
        guint w = g->nodes[v].outputs[k];
        if (!seen[w]) {
          seen[w] = 1;
          queue[qt++] = w;
        }
      }
    }
    for (guint i = 0; i < n; i++)
      if (!seen[i]) {
        g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_UNREACHABLE,
                     "%s:%u: [stage %s]: unreachable from the source stage '%s'", path,
                     g->nodes[i].spec->line, g->nodes[i].spec->name, g->nodes[g->source].spec->name);
        return NULL;
      }
  }

  /* Topological order (Kahn), sinks. */
  {
    g_autofree guint *indeg = g_new0 (guint, n);
    for (guint i = 0; i < n; i++)
      indeg[i] = g->nodes[i].n_inputs;
    g->topo = g_new (guint, n);
    guint qh = 0, qt = 0;
    g->topo[qt++] = g->source;
    while (qh < qt) {
      guint v = g->topo[qh++];
      for (guint k = 0; k < g->nodes[v].n_outputs; k++) {
        guint w = g->nodes[v].outputs[k];
        if (--indeg[w] == 0)
          g->topo[qt++] = w;
      }
    }
    g_assert (qt == n);
    g->sinks = g_new0 (guint, n);
    for (guint i = 0; i < n; i++)
      if (g->nodes[i].n_outputs == 0)
        g->sinks[g->n_sinks++] = i;
    if (g->n_sinks == 0) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_NO_SINK, "%s: no sink stage", path);
      return NULL;
    }
  }

  /* Plugins, scopes and options, in file order. */
  for (guint i = 0; i < n; i++) {
    SedpGraphNode *node = &g->nodes[i];
    g_autoptr (GError) local = NULL;
    node->plugin = sedp_registry_lookup (registry, node->spec->plugin, spec->dir, &local);
    if (node->plugin == NULL) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_PLUGIN, "%s:%u: [stage %s] plugin: %s",
                   path, sedp_stage_spec_key_line (node->spec, "plugin"), node->spec->name,
                   local->message);
      return NULL;
    }
    node->scope = node->spec->scope ? node->spec->scope : node->plugin->desc->scope;
    if (i == g->source && node->scope != SEDP_SCOPE_REQUEST) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_SCOPE,
                   "%s:%u: [stage %s] scope: the source stage runs once per request; set scope = "
                   "request",
                   path, sedp_stage_spec_key_line (node->spec, "scope"), node->spec->name);
      return NULL;
    }
    node->options = sedp_option_values_parse (node->plugin->desc->options, node->spec, path,
                                              spec->dir, parts, error);
    if (node->options == NULL)
      return NULL;
  }
  if (!sedp_graph_resolve_routes (g, error) || !sedp_graph_check_columns (g, error))
    return NULL;
  return g_steal_pointer (&g);
}

SedpGraph *
sedp_graph_load (const char *path, SedpRegistry *registry, GError **error)
{
  SedpPipelineSpec *spec = sedp_pipeline_spec_load (path, error);
  if (spec == NULL)
    return NULL;
  return sedp_graph_compile (spec, registry, error);
}

SedpGraph *
sedp_graph_load_versions (const char *path, SedpRegistry *registry, GHashTable *versions,
                          GError **error)
{
  SedpPipelineSpec *spec = sedp_pipeline_spec_load (path, error);
  if (spec == NULL)
    return NULL;
  return sedp_graph_compile_versions (spec, registry, versions, error);
}

static const char *
scope_name (SedpScope s)
{
  return s == SEDP_SCOPE_REQUEST ? "request" : "item";
}

void
sedp_graph_describe (const SedpGraph *g, GString *out)
{
  const SedpPipelineSpec *spec = g->spec;
  g_string_append_printf (out, "pipeline %s (%s): mode=%s deadline_ms=%u frame_rows=%u stages=%u",
                          spec->name, spec->path, spec->mode == SEDP_MODE_SYNC ? "sync" : "staged",
                          spec->deadline_ms, spec->frame_rows, g->n_nodes);
  if (spec->n_cpus > 0) {
    g_autofree char *cpus = sedp_cpu_list_to_string (spec->cpus, spec->n_cpus);
    g_string_append_printf (out, " cpus=%s", cpus);
  }
  g_string_append_c (out, '\n');
  for (guint i = 0; g->models && i < g->models->len; i++) {
    const SedpGraphModel *m = g->models->pdata[i];
    g_string_append_printf (out, "  model %s: version %" G_GINT64_FORMAT " (%s), signature %s\n",
                            m->name, m->version, m->dir, m->signature_checked ? "verified" : "unchecked");
  }
  for (guint t = 0; t < g->n_nodes; t++) {
    const SedpGraphNode *node = &g->nodes[g->topo[t]];
    g_string_append_printf (out, "  %-16s plugin=%s scope=%s parallelism=%u batch=%u "
                                 "batch_timeout_us=%u queue_capacity=%u",
                            node->spec->name, node->plugin->name, scope_name (node->scope),
                            node->spec->parallelism, node->spec->batch,
                            node->spec->batch_timeout_us, node->spec->queue_capacity);
    if (node->n_inputs == 0)
      g_string_append (out, " [source]");
    else {
      g_string_append (out, " after=");
      for (guint k = 0; k < node->n_inputs; k++)
        g_string_append_printf (out, "%s%s%s%s", k ? "," : "", g->nodes[node->inputs[k]].spec->name,
                                node->input_labels[k] ? ":" : "",
                                node->input_labels[k] ? node->input_labels[k] : "");
      if (node->n_inputs > 1)
        g_string_append (out, " [join]");
    }
    if (node->spec->n_cpus > 0) {
      g_autofree char *cpus = sedp_cpu_list_to_string (node->spec->cpus, node->spec->n_cpus);
      g_string_append_printf (out, " cpus=%s", cpus);
    }
    if (node->spec->drop_columns && node->spec->drop_columns[0]) {
      g_autofree char *drop = g_strjoinv (",", node->spec->drop_columns);
      g_string_append_printf (out, " drop_columns=%s", drop);
    }
    if (node->branches) {
      g_autofree char *list = g_strjoinv (",", node->branches);
      g_string_append_printf (out, " branches=%s", list);
    }
    if (node->n_outputs == 0)
      g_string_append (out, " [sink]");
    g_string_append_c (out, '\n');
  }
}

void
sedp_graph_write_dot (const SedpGraph *g, GString *out)
{
  g_string_append_printf (out, "digraph \"%s\" {\n  rankdir=LR;\n  node [shape=box, fontname=\"sans\"];\n",
                          g->spec->name);
  for (guint i = 0; i < g->n_nodes; i++) {
    const SedpGraphNode *node = &g->nodes[i];
    g_string_append_printf (out,
                            "  \"%s\" [label=\"%s\\n%s · %s\\nparallelism %u · batch %u\"%s];\n",
                            node->spec->name, node->spec->name, node->plugin->name,
                            scope_name (node->scope), node->spec->parallelism, node->spec->batch,
                            node->scope == SEDP_SCOPE_REQUEST ? ", style=rounded" : "");
  }
  for (guint i = 0; i < g->n_nodes; i++)
    for (guint k = 0; k < g->nodes[i].n_outputs; k++) {
      const SedpGraphNode *from = &g->nodes[i];
      int b = from->output_branch ? from->output_branch[k] : -1;
      g_string_append_printf (out, "  \"%s\" -> \"%s\"", from->spec->name,
                              g->nodes[from->outputs[k]].spec->name);
      if (b >= 0)
        g_string_append_printf (out, " [label=\"%s\", style=dashed]", from->branches[b]);
      g_string_append (out, ";\n");
    }
  g_string_append (out, "}\n");
}
