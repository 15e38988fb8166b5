/* sedp — routed graphs (docs/routing.md): a router's branches from its plugin, `after =
 * STAGE:BRANCH` resolved to branch indexes, which inputs may be skipped, branch quotas, and the
 * columns stages declare they need against those earlier stages declare they write. */
#include "graph.h"
#include "stage-context.h"

#include <stdlib.h>
#include <string.h>

/* A context for asking a plugin about its options at check time (no metrics: none may be
 * registered). */
static SedpStageContext
check_context (const SedpGraphNode *node)
{
  return (SedpStageContext){.name = node->spec->name, .scope = node->scope,
                            .parallelism = node->spec->parallelism, .batch = node->spec->batch,
                            .options = node->options};
}

static gboolean
valid_branch_name (const char *s)
{
  gsize n = strlen (s);
  if (n == 0 || n > 64)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_islower (s[i]) && !g_ascii_isdigit (s[i]) && s[i] != '_')
      return FALSE;
  return TRUE;
}

/* The plugin's `branches`, checked (none: the stage is not a router). */
static gboolean
load_branches (const SedpGraph *g, SedpGraphNode *node, GError **error)
{
  const SedpStageDescriptor *d = node->plugin->desc;
  if (d->branches == NULL)
    return TRUE;
  SedpStageContext ctx = check_context (node);
  GError *local = NULL;
  char **names = d->branches (&ctx, &local);
  if (names == NULL && local == NULL)
    return TRUE; /* this configuration routes nothing */
  if (names == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH, "%s:%u: [stage %s]: %s",
                 g->spec->path, node->spec->line, node->spec->name,
                 local->message);
    g_error_free (local);
    return FALSE;
  }
  node->branches = names;
  node->n_branches = g_strv_length (names);
  const char *bad = NULL;
  for (guint b = 0; b < node->n_branches && !bad; b++) {
    if (!valid_branch_name (names[b]) || g_strv_contains ((const char *const *) names + b + 1, names[b]))
      bad = names[b];
  }
  if (node->n_branches == 0 || node->n_branches > SEDP_MAX_BRANCHES || bad) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                 "%s:%u: [stage %s]: plugin %s declared %u branches%s%s%s (1 to %u distinct names "
                 "of [a-z0-9_], 1 to 64 characters): a bug in the plugin",
                 g->spec->path, node->spec->line, node->spec->name, node->plugin->name,
                 node->n_branches, bad ? ", among them '" : "", bad ? bad : "", bad ? "'" : "",
                 SEDP_MAX_BRANCHES);
    return FALSE;
  }
  node->route_names = g_new0 (const char *, node->n_branches);
  for (guint b = 0; b < node->n_branches; b++) {
    g_autofree char *full = g_strdup_printf ("%s:%s", node->spec->name, names[b]);
    node->route_names[b] = g_intern_string (full);
  }
  return TRUE;
}

static int
branch_index (const SedpGraphNode *router, const char *name)
{
  for (guint b = 0; b < router->n_branches; b++)
    if (strcmp (router->branches[b], name) == 0)
      return (int) b;
  return -1;
}

/* Input @k of @node names a branch of its producer: resolve it and label the producer's edge. */
static gboolean
resolve_input (SedpGraph *g, SedpGraphNode *node, guint k, GError **error)
{
  SedpGraphNode *from = &g->nodes[node->inputs[k]];
  const char *label = node->input_labels[k];
  guint line = sedp_stage_spec_key_line (node->spec, "after");
  if (from->branches == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                 "%s:%u: [stage %s] after: stage '%s' has no branches (plugin %s is not a "
                 "router); write 'after = %s'",
                 g->spec->path, line, node->spec->name, from->spec->name, from->plugin->name,
                 from->spec->name);
    return FALSE;
  }
  int b = branch_index (from, label);
  if (b < 0) {
    g_autofree char *list = g_strjoinv (", ", from->branches);
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                 "%s:%u: [stage %s] after: stage '%s' has no branch '%s' (its branches: %s)",
                 g->spec->path, line, node->spec->name, from->spec->name, label, list);
    return FALSE;
  }
  node->input_branch[k] = b;
  for (guint o = 0; o < from->n_outputs; o++)
    if (from->outputs[o] == node->index && from->output_slots[o] == k)
      from->output_branch[o] = b;
  return TRUE;
}

/* Every branch of every router is taken by some stage (else its requests would reach no sink). */
static gboolean
check_branches_taken (const SedpGraph *g, const SedpGraphNode *router, GError **error)
{
  for (guint b = 0; b < router->n_branches; b++) {
    gboolean taken = FALSE;
    for (guint o = 0; o < router->n_outputs && !taken; o++)
      taken = router->output_branch[o] == (int) b;
    if (!taken) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                   "%s:%u: [stage %s]: branch '%s' reaches no sink: no stage has 'after = %s:%s'",
                   g->spec->path, router->spec->line, router->spec->name, router->branches[b],
                   router->spec->name, router->branches[b]);
      return FALSE;
    }
  }
  return TRUE;
}

/* One `BRANCH:VALUE` item of a quota key into the node's table. */
static gboolean
parse_quota_item (const SedpGraph *g, SedpGraphNode *node, const char *key, const char *item,
                  GError **error)
{
  guint line = sedp_stage_spec_key_line (node->spec, key);
  const char *colon = strchr (item, ':');
  g_autofree char *name = g_strndup (item, colon ? (gsize) (colon - item) : strlen (item));
  int b = branch_index (node, name);
  char *end = NULL;
  double v = colon ? g_ascii_strtod (colon + 1, &end) : -1;
  gboolean integer = strcmp (key, "branch_max_inflight") == 0;
  if (b < 0) {
    g_autofree char *list = g_strjoinv (", ", node->branches);
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                 "%s:%u: [stage %s] %s: no branch '%s' (its branches: %s)", g->spec->path, line,
                 node->spec->name, key, name, list);
    return FALSE;
  }
  if (!colon || end == colon + 1 || *end || !(v > 0) || v > 1e9 || (integer && v != (guint) v)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [stage %s] %s: '%s' is not BRANCH:%s (a %s above 0)", g->spec->path,
                 line, node->spec->name, key, item, integer ? "N" : "RATE",
                 integer ? "whole number" : "number of requests per second");
    return FALSE;
  }
  if (integer)
    node->quota_inflight[b] = (guint) v;
  else
    node->quota_rate[b] = v;
  return TRUE;
}

static gboolean
parse_quotas (const SedpGraph *g, SedpGraphNode *node, GError **error)
{
  char **inflight = node->spec->branch_max_inflight, **rate = node->spec->branch_max_rate;
  gboolean any = (inflight && inflight[0]) || (rate && rate[0]);
  if (!any)
    return TRUE;
  const char *key = inflight && inflight[0] ? "branch_max_inflight" : "branch_max_rate";
  if (node->branches == NULL || node->scope != SEDP_SCOPE_REQUEST) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_BRANCH,
                 "%s:%u: [stage %s] %s: quotas need a router at request scope (this stage %s)",
                 g->spec->path, sedp_stage_spec_key_line (node->spec, key), node->spec->name, key,
                 node->branches == NULL ? "has no branches" : "runs at item scope");
    return FALSE;
  }
  node->quota_inflight = g_new0 (guint, node->n_branches);
  node->quota_rate = g_new0 (double, node->n_branches);
  for (guint i = 0; inflight && inflight[i]; i++)
    if (!parse_quota_item (g, node, "branch_max_inflight", inflight[i], error))
      return FALSE;
  for (guint i = 0; rate && rate[i]; i++)
    if (!parse_quota_item (g, node, "branch_max_rate", rate[i], error))
      return FALSE;
  return TRUE;
}

/* Which inputs may carry a skip: a labelled edge, or a producer with such an input. */
static void
mark_routed (SedpGraph *g)
{
  for (guint t = 0; t < g->n_nodes; t++) {
    SedpGraphNode *node = &g->nodes[g->topo[t]];
    for (guint k = 0; k < node->n_inputs; k++) {
      const SedpGraphNode *from = &g->nodes[node->inputs[k]];
      node->input_routed[k] = node->input_branch[k] >= 0 || from->n_routed_inputs > 0;
      node->n_routed_inputs += node->input_routed[k];
    }
  }
}

gboolean
sedp_graph_resolve_routes (SedpGraph *g, GError **error)
{
  for (guint i = 0; i < g->n_nodes; i++) {
    SedpGraphNode *node = &g->nodes[i];
    node->input_branch = g_new (int, MAX (node->n_inputs, 1));
    node->input_routed = g_new0 (guint8, MAX (node->n_inputs, 1));
    node->output_branch = g_new (int, MAX (node->n_outputs, 1));
    for (guint k = 0; k < node->n_inputs; k++)
      node->input_branch[k] = -1;
    for (guint o = 0; o < node->n_outputs; o++)
      node->output_branch[o] = -1;
    if (!load_branches (g, node, error))
      return FALSE;
  }
  for (guint i = 0; i < g->n_nodes; i++)
    for (guint k = 0; k < g->nodes[i].n_inputs; k++)
      if (g->nodes[i].input_labels[k] && !resolve_input (g, &g->nodes[i], k, error))
        return FALSE;
  for (guint i = 0; i < g->n_nodes; i++)
    if (!check_branches_taken (g, &g->nodes[i], error) || !parse_quotas (g, &g->nodes[i], error))
      return FALSE;
  mark_routed (g);
  return TRUE;
}

/* ---- columns: `needs` against `writes` ---- */

char **
sedp_graph_declared_writes (const SedpGraph *g)
{
  GPtrArray *out = g_ptr_array_new ();
  for (guint i = 0; i < g->n_nodes; i++) {
    const SedpGraphNode *n = &g->nodes[g->topo[i]];
    if (n->plugin->desc->writes == NULL)
      continue;
    SedpStageContext ctx = check_context (n);
    g_auto (GStrv) cols = n->plugin->desc->writes (&ctx, NULL);
    for (guint k = 0; cols && cols[k]; k++)
      if (!g_ptr_array_find_with_equal_func (out, cols[k], g_str_equal, NULL))
        g_ptr_array_add (out, g_strdup (cols[k]));
  }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

/* The nodes before @node (its ancestors), in @before. */
static void
mark_ancestors (const SedpGraph *g, guint node, guint8 *before)
{
  for (guint k = 0; k < g->nodes[node].n_inputs; k++) {
    guint in = g->nodes[node].inputs[k];
    if (!before[in]) {
      before[in] = 1;
      mark_ancestors (g, in, before);
    }
  }
}

/* Whether an ancestor of a stage (@before) declares it writes @column, in *@found; the
 * declared columns go to @known ("stage: col, col; …"), stages that cannot say to @unknown.
 * FALSE with @error when a plugin's `writes` fails. */
static gboolean
written_before (const SedpGraph *g, const guint8 *before, const char *column, gboolean *found,
                GString *known, GString *unknown, GError **error)
{
  *found = FALSE;
  for (guint i = 0; i < g->n_nodes; i++) {
    const SedpGraphNode *n = &g->nodes[i];
    if (!before[i] || n->plugin->desc->writes == NULL)
      continue;
    SedpStageContext ctx = check_context (n);
    GError *local = NULL;
    g_auto (GStrv) cols = n->plugin->desc->writes (&ctx, &local);
    if (local) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_COLUMN, "%s:%u: [stage %s]: %s",
                   g->spec->path, n->spec->line, n->spec->name, local->message);
      g_error_free (local);
      return FALSE;
    }
    if (cols == NULL) {
      g_string_append_printf (unknown, "%s'%s'", unknown->len ? ", " : "", n->spec->name);
      continue;
    }
    g_autofree char *list = g_strjoinv (", ", cols);
    g_string_append_printf (known, "%s%s: %s", known->len ? "; " : "", n->spec->name, list);
    *found = *found || g_strv_contains ((const char *const *) cols, column);
  }
  return TRUE;
}

static gboolean
check_needs (const SedpGraph *g, const SedpGraphNode *node, GError **error)
{
  SedpStageContext ctx = check_context (node);
  GError *local = NULL;
  g_auto (GStrv) needs = node->plugin->desc->needs (&ctx, &local);
  if (local || needs == NULL) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_COLUMN, "%s:%u: [stage %s]: %s",
                 g->spec->path, node->spec->line, node->spec->name,
                 local ? local->message : "the plugin gave no list of needed columns");
    g_clear_error (&local);
    return FALSE;
  }
  g_autofree guint8 *before = g_new0 (guint8, g->n_nodes);
  mark_ancestors (g, node->index, before);
  for (guint i = 0; needs[i]; i++) {
    const char *eq = strchr (needs[i], '=');
    const char *column = eq ? eq + 1 : needs[i];
    g_autofree char *key = g_strndup (needs[i], eq ? (gsize) (eq - needs[i]) : 0);
    g_autoptr (GString) known = g_string_new (NULL), unknown = g_string_new (NULL);
    gboolean found;
    if (!written_before (g, before, column, &found, known, unknown, error))
      return FALSE;
    if (found)
      continue;
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_COLUMN,
                 "%s:%u: [stage %s] %s: '%s' is written by no stage before '%s' (%s%s%s%s%s)",
                 g->spec->path, sedp_stage_spec_key_line (node->spec, key), node->spec->name,
                 key, column, node->spec->name,
                 known->len ? "stages before it write: " : "no stage before it declares what it writes",
                 known->str, unknown->len ? "; columns not known before start: " : "",
                 unknown->str, unknown->len ? " (set their outputs)" : "");
    return FALSE;
  }
  return TRUE;
}

gboolean
sedp_graph_check_columns (const SedpGraph *g, GError **error)
{
  for (guint i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].plugin->desc->needs && !check_needs (g, &g->nodes[i], error))
      return FALSE;
  return TRUE;
}
