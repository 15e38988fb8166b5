/* sedp model split — takes a model's embedding tables (float initializers read by Gather with
 * graph-input ids) out into cubes keyed by the signatures of (slot, id), and writes the rest as
 * a dense model whose inputs are the pooled embeddings, or, for a lookup that is not pooled (a
 * behaviour sequence), the looked-up embeddings seq_ID [batch, L, dim]. A table read through
 * several id inputs goes in once, under the slot of the first. One cube holds one dim: the
 * lookups are grouped into cubes, each of one dim and with at most one table per slot; a model
 * with one group gets its cube at DIR, a model with several gets DIR/dD (DIR/d8, DIR/d1, and
 * DIR/d8b for a second table of dim 8 on the same ids …), all with the same hash key. See
 * docs/storage.md. */
#define _GNU_SOURCE
#include "cmd-model-split.h"

#include "cli.h"

#include "../cube/cube-format.h"
#include "../cube/cube.h"
#include "../nn/model.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUB "model split"

/* The shape of the value the rest of the graph reads, next to the pooled input [batch, dim]. */
typedef enum {
  FORM_2D,       /* [batch, dim]: read as it is */
  FORM_KEEPDIMS, /* [batch, 1, dim]: pooled with keepdims; an Unsqueeze restores it */
  FORM_SQUEEZED, /* [batch]: a dim-1 lookup squeezed and pooled without keepdims; a Squeeze */
} Form;

/* One lookup taken out of the model: a Gather of a table by an id input, with its pooling. Its
 * table goes into a cube, the lookup and pooling become the graph input @pooled. */
typedef struct {
  guint input;               /* the id input's index among the graph inputs */
  guint slot;                /* K: the number among the id inputs of the first that reads the
                              * table (its rows' slot in the cube) */
  const SedpNnTensor *table; /* float [rows, dim] */
  guint dim;
  gboolean mean;             /* ReduceMean, or ReduceSum then Div by the id count */
  gboolean seq;              /* not pooled: the Gather's [batch, L, dim] is the value */
  const char *value;         /* the pooled value the rest of the graph reads */
  Form form;
  guint group;               /* its cube: an index into the groups */
  char *pooled;              /* the dense model's input: pooled_K, or pooled_dD_K; seq_ID, or
                              * seq_dD_ID for a sequence */
} Lookup;

/* One cube: lookups of one dim, at most one table per slot. */
typedef struct {
  guint dim;
  guint seq;        /* its number among the groups of its dim */
  char *name;       /* "d8", "d8b"; NULL when the split makes one cube */
  char *dir;        /* its final folder */
  char *prefix;     /* cube_accessor's output_prefix */
  char *seq_prefix; /* and sequence_prefix */
  GArray *members;  /* guint: lookups, in the order found */
  guint n_tables;   /* the distinct tables of the members */
  guint64 rows;     /* theirs */
} Group;

static void
lookup_clear (gpointer p)
{
  g_free (((Lookup *) p)->pooled);
}

static void
group_clear (gpointer p)
{
  Group *g = p;
  g_free (g->name);
  g_free (g->dir);
  g_free (g->prefix);
  g_free (g->seq_prefix);
  if (g->members)
    g_array_unref (g->members);
}

static gboolean G_GNUC_PRINTF (2, 3)
split_fail (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_propagate_error (error,
                     g_error_new_valist (SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED, fmt, ap));
  va_end (ap);
  return FALSE;
}

/* ---- the graph ---- */

/* The node producing @name, or -1. */
static int
producer (const SedpNnModel *m, const char *name)
{
  for (guint k = 0; k < m->n_nodes; k++)
    for (guint o = 0; o < m->nodes[k].n_outputs; o++)
      if (strcmp (m->nodes[k].outputs[o], name) == 0)
        return (int) k;
  return -1;
}

/* The nodes reading @name. */
static GArray *
consumers (const SedpNnModel *m, const char *name)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint k = 0; k < m->n_nodes; k++)
    for (guint i = 0; i < m->nodes[k].n_inputs; i++)
      if (strcmp (m->nodes[k].inputs[i], name) == 0) {
        g_array_append_val (a, k);
        break;
      }
  return a;
}

static gboolean
is_output (const SedpNnModel *m, const char *name)
{
  for (guint k = 0; k < m->n_outputs; k++)
    if (strcmp (m->outputs[k].name, name) == 0)
      return TRUE;
  return FALSE;
}

/* Whether @name is a value of @m: an input, an initializer or a node's output. */
static gboolean
has_value (const SedpNnModel *m, const char *name)
{
  return sedp_nn_model_find_input (m, name) >= 0 || producer (m, name) >= 0 ||
         sedp_nn_model_get_initializer (m, name) != NULL;
}

/* The integers of a constant: an int64/int32 initializer or the output of a Constant node.
 * Returns the count (at most @max), or -1 when @name is not such a constant. */
static int
const_ints (const SedpNnModel *m, const char *name, gint64 *out, int max)
{
  const SedpNnTensor *t = sedp_nn_model_get_initializer (m, name);
  if (t == NULL) {
    int p = producer (m, name);
    if (p < 0 || strcmp (m->nodes[p].op_type, "Constant") != 0)
      return -1;
    const SedpNnAttr *a = sedp_nn_node_attr (&m->nodes[p], "value");
    if (a && a->type == SEDP_NN_ATTR_TENSOR)
      t = a->t;
    else if ((a = sedp_nn_node_attr (&m->nodes[p], "value_ints")) && a->type == SEDP_NN_ATTR_INTS) {
      for (guint k = 0; k < a->n_ints && (int) k < max; k++)
        out[k] = a->ints[k];
      return a->n_ints <= (guint) max ? (int) a->n_ints : -1;
    } else if ((a = sedp_nn_node_attr (&m->nodes[p], "value_int")) && a->type == SEDP_NN_ATTR_INT) {
      out[0] = a->i;
      return 1;
    }
  }
  if (t == NULL || t->data == NULL || (t->dtype != SEDP_NN_INT64 && t->dtype != SEDP_NN_INT32))
    return -1;
  gint64 n = sedp_nn_tensor_numel (t);
  if (n > max)
    return -1;
  for (gint64 k = 0; k < n; k++)
    out[k] = t->dtype == SEDP_NN_INT64 ? ((const gint64 *) t->data)[k]
                                       : ((const gint32 *) t->data)[k];
  return (int) n;
}

/* Whether node @n (a reduction or a Squeeze) works on one axis, @axis of a tensor of rank @rank:
 * its `axes` attribute or its constant axes input. */
static gboolean
on_one_axis (const SedpNnModel *m, const SedpNnNode *n, int rank, int axis)
{
  gint64 axes[4];
  int count = -1;
  const SedpNnAttr *a = sedp_nn_node_attr (n, "axes");
  if (a && a->type == SEDP_NN_ATTR_INTS) {
    count = (int) a->n_ints;
    if (count == 1)
      axes[0] = a->ints[0];
  } else if (n->n_inputs >= 2 && *n->inputs[1]) {
    count = const_ints (m, n->inputs[1], axes, 4);
  }
  return count == 1 && (axes[0] == axis || axes[0] == axis - rank);
}

/* The one node reading @name as its first input, or NULL (several readers, another input, or
 * @name is also a graph output); @why says which. */
static const SedpNnNode *
only_reader (const SedpNnModel *m, const char *name, char **why)
{
  if (is_output (m, name)) {
    *why = g_strdup ("is a graph output");
    return NULL;
  }
  g_autoptr (GArray) cons = consumers (m, name);
  if (cons->len != 1) {
    *why = cons->len == 0 ? g_strdup ("is not read") : g_strdup_printf ("is read by %u nodes",
                                                                        cons->len);
    return NULL;
  }
  const SedpNnNode *n = &m->nodes[g_array_index (cons, guint, 0)];
  if (strcmp (n->inputs[0], name) != 0) {
    *why = g_strdup_printf ("is read by %s '%s' as a second operand", n->op_type,
                            n->name ? n->name : "?");
    return NULL;
  }
  return n;
}

/* ReduceSum's output @sum divided by the number of ids: Div (sum, Cast (Gather (Shape (ids),
 * 1))), as PyTorch exports `emb(ids).sum(1) / ids.size(1)`. Returns the Div node or -1. */
static int
div_by_count (const SedpNnModel *m, const char *sum, const char *ids)
{
  if (is_output (m, sum))
    return -1;
  g_autoptr (GArray) cons = consumers (m, sum);
  if (cons->len != 1)
    return -1;
  guint d = g_array_index (cons, guint, 0);
  const SedpNnNode *div = &m->nodes[d];
  if (strcmp (div->op_type, "Div") != 0 || div->n_inputs != 2 || strcmp (div->inputs[0], sum) != 0)
    return -1;
  int c = producer (m, div->inputs[1]);
  if (c < 0 || strcmp (m->nodes[c].op_type, "Cast") != 0)
    return -1;
  const SedpNnAttr *to = sedp_nn_node_attr (&m->nodes[c], "to");
  if (to == NULL || to->i != SEDP_NN_FLOAT)
    return -1;
  int g = producer (m, m->nodes[c].inputs[0]);
  if (g < 0 || strcmp (m->nodes[g].op_type, "Gather") != 0 || m->nodes[g].n_inputs != 2)
    return -1;
  const SedpNnAttr *axis = sedp_nn_node_attr (&m->nodes[g], "axis");
  gint64 idx[2] = {0, 0};
  if ((axis && axis->i != 0) || const_ints (m, m->nodes[g].inputs[1], idx, 1) != 1 || idx[0] != 1)
    return -1;
  int sh = producer (m, m->nodes[g].inputs[0]);
  if (sh < 0 || strcmp (m->nodes[sh].op_type, "Shape") != 0 ||
      strcmp (m->nodes[sh].inputs[0], ids) != 0 || m->nodes[sh].n_attrs != 0)
    return -1;
  return (int) d;
}

/* The table of Gather node @n when it is a lookup of @ids: a float [rows, dim] initializer read
 * on axis 0 with @ids as the indices; else NULL. */
static const SedpNnTensor *
lookup_table (const SedpNnModel *m, const SedpNnNode *n, const char *ids)
{
  if (strcmp (n->op_type, "Gather") != 0 || n->n_inputs != 2 || strcmp (n->inputs[1], ids) != 0)
    return NULL;
  const SedpNnTensor *t = sedp_nn_model_get_initializer (m, n->inputs[0]);
  const SedpNnAttr *axis = sedp_nn_node_attr (n, "axis");
  if (t == NULL || t->dtype != SEDP_NN_FLOAT || t->rank != 2 || (axis && axis->i != 0))
    return NULL;
  return t;
}

/* Matches the pooling of lookup @l (Gather node @g of ids @in) and marks the nodes it replaces
 * in @removed. */
static gboolean
match_pooling (const SedpNnModel *m, const SedpNnValueInfo *in, const SedpNnNode *g, Lookup *l,
               gboolean *removed, GError **error)
{
  if (in->rank == 1) {
    /* One id per row: the looked-up row is the value. */
    l->value = g->outputs[0];
    l->form = FORM_2D;
    removed[g - m->nodes] = TRUE;
    return TRUE;
  }
  if (in->rank != 2)
    return split_fail (error, "input '%s' has rank %d; split takes ids of rank 1 [batch] or 2 "
                       "[batch, ids]", in->name, in->rank);
  /* [batch, L, dim] → (a dim-1 lookup: Squeeze the last axis → [batch, L]) → ReduceSum or
   * ReduceMean over axis 1 (→ Div by the id count). */
  g_autofree char *why = NULL;
  const char *v = g->outputs[0];
  int rank = 3;
  if (!is_output (m, v)) {
    g_autoptr (GArray) cons = consumers (m, v);
    if (cons->len == 0)
      return split_fail (error, "the lookup of input '%s' in table '%s' (Gather '%s') is not "
                         "read", in->name, l->table->name, g->name ? g->name : "?");
  }
  const SedpNnNode *r = only_reader (m, v, &why), *squeeze = NULL;
  if (r && strcmp (r->op_type, "Squeeze") == 0 && l->dim == 1 && on_one_axis (m, r, 3, 2)) {
    squeeze = r;
    v = r->outputs[0];
    rank = 2;
    r = only_reader (m, v, &why);
  }
  gboolean is_sum = r && strcmp (r->op_type, "ReduceSum") == 0;
  gboolean is_mean = r && strcmp (r->op_type, "ReduceMean") == 0;
  if (r && !is_sum && !is_mean)
    why = g_strdup_printf ("is read by %s '%s'", r->op_type, r->name ? r->name : "?");
  else if (r && !on_one_axis (m, r, rank, 1))
    why = g_strdup_printf ("is pooled by %s '%s' over other axes than the ids' (axis 1)",
                           r->op_type, r->name ? r->name : "?");
  if (why) {
    /* Not pooled: the looked-up [batch, L, dim] itself becomes the input seq_ID. */
    if (in->dims[1] < 1)
      return split_fail (error, "the lookup of input '%s' in table '%s' (Gather '%s') is not "
                         "pooled (it %s%s), and the ids have no fixed length: an unpooled "
                         "lookup needs ids [batch, L] with L fixed", in->name, l->table->name,
                         g->name ? g->name : "?", squeeze ? "after a Squeeze " : "", why);
    l->seq = TRUE;
    l->value = g->outputs[0];
    l->form = FORM_2D;
    removed[g - m->nodes] = TRUE;
    return TRUE;
  }
  const SedpNnAttr *kd = sedp_nn_node_attr (r, "keepdims");
  gboolean keepdims = kd == NULL || kd->i != 0;
  if (squeeze)
    l->form = keepdims ? FORM_2D : FORM_SQUEEZED;
  else
    l->form = keepdims ? FORM_KEEPDIMS : FORM_2D;
  l->mean = is_mean;
  l->value = r->outputs[0];
  removed[g - m->nodes] = TRUE;
  if (squeeze)
    removed[squeeze - m->nodes] = TRUE;
  removed[r - m->nodes] = TRUE;
  int div = is_sum ? div_by_count (m, r->outputs[0], in->name) : -1;
  if (div >= 0) {
    l->mean = TRUE;
    l->value = m->nodes[div].outputs[0];
    removed[div] = TRUE;
  }
  return TRUE;
}

/* Finds the lookups: every Gather of a float [rows, dim] initializer on axis 0 whose indices are
 * an int64/int32 graph input, pooled by ReduceSum/ReduceMean over the ids (rank-2 ids), or not
 * at all (rank-1 ids: one id per row; rank-2 ids: a sequence). A table's slot is that of the
 * first id input reading it. Marks the nodes removed in @removed. */
static gboolean
find_lookups (const SedpNnModel *m, GArray *lookups, gboolean *removed, GError **error)
{
  guint slot = 0;
  g_autoptr (GHashTable) owner = g_hash_table_new (NULL, NULL); /* table → its slot + 1 */
  for (guint i = 0; i < m->n_inputs; i++) {
    const SedpNnValueInfo *in = &m->inputs[i];
    if (in->dtype != SEDP_NN_INT64 && in->dtype != SEDP_NN_INT32)
      continue;
    g_autoptr (GArray) cons = consumers (m, in->name);
    gboolean any = FALSE;
    for (guint c = 0; c < cons->len; c++) {
      const SedpNnNode *g = &m->nodes[g_array_index (cons, guint, c)];
      const SedpNnTensor *t = lookup_table (m, g, in->name);
      if (t == NULL)
        continue;
      if (t->dims[1] < 1 || t->dims[1] > CUBE_MAX_DIM)
        return split_fail (error, "table '%s' has dim %" G_GINT64_FORMAT " (a cube holds 1 to %d)",
                           t->name, t->dims[1], CUBE_MAX_DIM);
      guint owned = GPOINTER_TO_UINT (g_hash_table_lookup (owner, t));
      if (owned == 0)
        g_hash_table_insert (owner, (gpointer) t, GUINT_TO_POINTER (slot + 1));
      Lookup l = {.input = i, .slot = owned ? owned - 1 : slot, .table = t,
                  .dim = (guint) t->dims[1]};
      if (!match_pooling (m, in, g, &l, removed, error))
        return FALSE;
      g_array_append_val (lookups, l);
      any = TRUE;
    }
    slot += any;
  }
  if (lookups->len == 0)
    return split_fail (error, "no embedding lookups to split: no int64 or int32 graph input "
                       "indexes a float [rows, dim] initializer through Gather on axis 0");
  return TRUE;
}

static gint
group_order (gconstpointer a, gconstpointer b)
{
  const Group *x = a, *y = b;
  if (x->dim != y->dim)
    return x->dim > y->dim ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Whether member @k of @gr is the first of the group to read its table. */
static gboolean
first_of_table (const Group *gr, GArray *lookups, guint k)
{
  const Lookup *l = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
  for (guint j = 0; j < k; j++)
    if (g_array_index (lookups, Lookup, g_array_index (gr->members, guint, j)).table == l->table)
      return FALSE;
  return TRUE;
}

/* Whether lookup @l may join @gr: its table alone holds its slot in the cube (another table of
 * that slot, read by the same ids, needs another cube), and its output is new (pooled_K: one
 * pooled lookup per slot; seq_ID: one sequence per id input). */
static gboolean
group_fits (const Group *gr, GArray *lookups, const Lookup *l)
{
  for (guint k = 0; k < gr->members->len; k++) {
    const Lookup *o = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
    if (o->slot == l->slot && (o->table != l->table || (!o->seq && !l->seq)))
      return FALSE;
    if (o->seq && l->seq && o->input == l->input)
      return FALSE;
  }
  return TRUE;
}

/* Groups the lookups into cubes: one dim each, at most one table per slot (a second table of the
 * same dim on the same ids goes into a second cube of that dim). Ordered by dim, largest first;
 * named, with the folders and input names. */
static GArray *
group_lookups (GArray *lookups, const char *cube_dir, const SedpNnModel *m)
{
  GArray *groups = g_array_new (FALSE, TRUE, sizeof (Group));
  g_array_set_clear_func (groups, group_clear);
  for (guint k = 0; k < lookups->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, k);
    guint g, seq = 0;
    for (g = 0; g < groups->len; g++) {
      Group *gr = &g_array_index (groups, Group, g);
      if (gr->dim != l->dim)
        continue;
      seq++;
      if (group_fits (gr, lookups, l))
        break;
    }
    if (g == groups->len) {
      Group gr = {.dim = l->dim, .seq = seq, .members = g_array_new (FALSE, FALSE, sizeof (guint))};
      g_array_append_val (groups, gr);
    }
    Group *gr = &g_array_index (groups, Group, g);
    g_array_append_val (gr->members, k);
    if (first_of_table (gr, lookups, gr->members->len - 1)) {
      gr->n_tables++;
      gr->rows += (guint64) l->table->dims[0];
    }
  }
  g_array_sort (groups, group_order);
  for (guint g = 0; g < groups->len; g++) {
    Group *gr = &g_array_index (groups, Group, g);
    if (groups->len == 1) {
      gr->dir = g_strdup (cube_dir);
      gr->prefix = g_strdup ("pooled_");
      gr->seq_prefix = g_strdup ("seq_");
    } else {
      /* d8, then d8b, d8c … for more tables of dim 8 on the same ids. */
      gr->name = gr->seq == 0    ? g_strdup_printf ("d%u", gr->dim)
                 : gr->seq < 26 ? g_strdup_printf ("d%u%c", gr->dim, 'a' + gr->seq)
                                : g_strdup_printf ("d%uz%u", gr->dim, gr->seq + 1);
      gr->dir = g_build_filename (cube_dir, gr->name, NULL);
      gr->prefix = g_strdup_printf ("pooled_%s_", gr->name);
      gr->seq_prefix = g_strdup_printf ("seq_%s_", gr->name);
    }
    for (guint k = 0; k < gr->members->len; k++) {
      Lookup *l = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
      l->group = g;
      l->pooled = l->seq ? g_strconcat (gr->seq_prefix, m->inputs[l->input].name, NULL)
                         : g_strdup_printf ("%s%u", gr->prefix, l->slot);
    }
  }
  return groups;
}

/* ---- the dense model ---- */

/* @op (Unsqueeze or Squeeze) of axis 1: @pooled → @value. */
static void
add_axis_node (SedpNnModel *d, const char *op, const char *pooled, const char *value)
{
  const char *in[3] = {pooled, NULL, NULL};
  const char *out[2] = {value, NULL};
  gint64 one = 1;
  if (d->opset >= 13) {
    g_autofree char *axes = g_strdup_printf ("%s_axes", pooled);
    gint64 n1 = 1;
    SedpNnTensor *t = sedp_nn_tensor_new (axes, SEDP_NN_INT64, 1, &n1);
    *(gint64 *) t->data = one;
    sedp_nn_model_add_initializer (d, t);
    in[1] = t->name;
    sedp_nn_model_add_node (d, op, pooled, in, out);
  } else {
    SedpNnNode *n = sedp_nn_model_add_node (d, op, pooled, in, out);
    sedp_nn_node_set_attr_ints (n, "axes", 1, &one);
  }
}

/* The dense model: @m without the tables, lookups and pooling of @lookups, whose pooled values
 * become inputs [batch, dim] and sequences inputs [batch, L, dim] (an id input's in the order of
 * the cubes, at its place, after the id input itself where other nodes still read it); nodes
 * and initializers left unused are dropped. Steals nodes and initializers from @m. */
static SedpNnModel *
split_dense (SedpNnModel *m, GArray *lookups, guint n_groups, gboolean *removed, GError **error)
{
  for (guint k = 0; k < lookups->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, k);
    g_autofree char *axes = g_strdup_printf ("%s_axes", l->pooled);
    if (has_value (m, l->pooled) || (!l->seq && has_value (m, axes))) {
      split_fail (error, "the model already has a value named '%s'",
                  has_value (m, l->pooled) ? l->pooled : axes);
      return NULL;
    }
  }
  /* What the rest of the graph reads instead of each pooled value. */
  g_autoptr (GHashTable) rename = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < lookups->len; k++) {
    Lookup *l = &g_array_index (lookups, Lookup, k);
    if (l->form == FORM_2D)
      g_hash_table_insert (rename, (gpointer) l->value, l->pooled);
  }
  /* Liveness from the graph outputs. */
  g_autoptr (GHashTable) used = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < m->n_outputs; k++)
    g_hash_table_add (used, m->outputs[k].name);
  g_autofree gboolean *live = g_new0 (gboolean, MAX (m->n_nodes, 1));
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    for (guint k = 0; k < m->n_nodes; k++) {
      if (removed[k] || live[k])
        continue;
      const SedpNnNode *n = &m->nodes[k];
      gboolean needed = FALSE;
      for (guint o = 0; o < n->n_outputs && !needed; o++)
        needed = g_hash_table_contains (used, n->outputs[o]);
      if (!needed)
        continue;
      live[k] = changed = TRUE;
      for (guint i = 0; i < n->n_inputs; i++)
        g_hash_table_add (used, n->inputs[i]);
    }
  }
  /* An id input that other nodes read (a sequence's padding mask) or that is a graph output is
   * kept. */
  g_autofree gboolean *keep = g_new0 (gboolean, MAX (m->n_inputs, 1));
  for (guint k = 0; k < lookups->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, k);
    const char *ids = m->inputs[l->input].name;
    keep[l->input] = g_hash_table_contains (used, ids) || is_output (m, ids);
  }

  SedpNnModel *d = sedp_nn_model_new (m->opset, m->producer);
  d->ir_version = m->ir_version;
  d->graph_name = g_strdup (m->graph_name);
  for (guint i = 0; i < m->n_inputs; i++) {
    const SedpNnValueInfo *in = &m->inputs[i];
    gboolean split = FALSE;
    if (keep[i])
      sedp_nn_model_add_input (d, in->name, in->dtype, in->rank, in->dims,
                               (const char *const *) in->dim_params);
    for (guint g = 0; g < n_groups; g++)
      for (guint k = 0; k < lookups->len; k++) {
        const Lookup *l = &g_array_index (lookups, Lookup, k);
        if (l->input != i || l->group != g)
          continue;
        if (l->seq) {
          gint64 dims[3] = {in->dims[0], in->dims[1], l->dim};
          const char *params[3] = {in->dim_params[0], NULL, NULL};
          sedp_nn_model_add_input (d, l->pooled, SEDP_NN_FLOAT, 3, dims, params);
        } else {
          gint64 dims[2] = {in->dims[0], l->dim};
          const char *params[2] = {in->dim_params[0], NULL};
          sedp_nn_model_add_input (d, l->pooled, SEDP_NN_FLOAT, 2, dims, params);
        }
        split = TRUE;
      }
    if (!split)
      sedp_nn_model_add_input (d, in->name, in->dtype, in->rank, in->dims,
                               (const char *const *) in->dim_params);
  }
  for (guint k = 0; k < m->n_outputs; k++) {
    const SedpNnValueInfo *o = &m->outputs[k];
    sedp_nn_model_add_output (d, o->name, o->dtype, o->rank, o->dims,
                              (const char *const *) o->dim_params);
  }
  for (guint k = 0; k < m->n_initializers; k++)
    if (m->initializers[k] && g_hash_table_contains (used, m->initializers[k]->name)) {
      sedp_nn_model_add_initializer (d, m->initializers[k]);
      m->initializers[k] = NULL;
    }
  guint n_live = 0;
  for (guint k = 0; k < m->n_nodes; k++)
    n_live += live[k];
  d->nodes = g_new0 (SedpNnNode, MAX (n_live, 1));
  for (guint k = 0; k < m->n_nodes; k++) {
    if (!live[k])
      continue;
    SedpNnNode *n = &d->nodes[d->n_nodes++];
    *n = m->nodes[k];
    memset (&m->nodes[k], 0, sizeof m->nodes[k]);
    for (guint i = 0; i < n->n_inputs; i++) {
      const char *to = g_hash_table_lookup (rename, n->inputs[i]);
      if (to) {
        g_free (n->inputs[i]);
        n->inputs[i] = g_strdup (to);
      }
    }
  }
  /* Pooled values of another shape, or read as graph outputs. */
  for (guint k = 0; k < lookups->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, k);
    if (l->form == FORM_KEEPDIMS) {
      add_axis_node (d, "Unsqueeze", l->pooled, l->value);
    } else if (l->form == FORM_SQUEEZED) {
      add_axis_node (d, "Squeeze", l->pooled, l->value);
    } else if (is_output (m, l->value)) {
      const char *in[2] = {l->pooled, NULL}, *out[2] = {l->value, NULL};
      sedp_nn_model_add_node (d, "Identity", l->pooled, in, out);
    }
  }
  return d;
}

/* ---- the cubes ---- */

/* Removes @path: a file, or a folder of files and folders of files (a cube, or a folder of
 * cubes). */
static void
remove_tree (const char *path, int depth)
{
  GDir *d = depth > 0 ? g_dir_open (path, 0, NULL) : NULL;
  if (d == NULL) {
    if (g_unlink (path) != 0)
      g_rmdir (path);
    return;
  }
  const char *name;
  while ((name = g_dir_read_name (d)) != NULL) {
    g_autofree char *child = g_build_filename (path, name, NULL);
    if (g_file_test (child, G_FILE_TEST_IS_DIR) && !g_file_test (child, G_FILE_TEST_IS_SYMLINK))
      remove_tree (child, depth - 1);
    else
      g_unlink (child);
  }
  g_dir_close (d);
  g_rmdir (path);
}

/* Writes the cube of @gr into @dir. */
static gboolean
build_cube (const Group *gr, GArray *lookups, const char *dir, const char *name,
            const guint8 *key, guint64 block_size, GError **error)
{
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, name, gr->dim, key, block_size, error);
  if (b == NULL)
    return FALSE;
  for (guint k = 0; k < gr->members->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
    if (!first_of_table (gr, lookups, k))
      continue; /* a table read through several id inputs goes in once, under its slot */
    const float *data = l->table->data;
    for (gint64 r = 0; r < l->table->dims[0]; r++) {
      if (sedp_cli_interrupted) {
        sedp_cube_builder_abort (b);
        g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO,
                     "interrupted (signal %d); nothing was written", (int) sedp_cli_interrupted);
        return FALSE;
      }
      GError *e = NULL;
      if (!sedp_cube_builder_add (b, sedp_signature (key, l->slot, (guint64) r),
                                  data + (gsize) r * gr->dim, &e)) {
        g_set_error (error, e->domain, e->code, "table '%s' row %" G_GINT64_FORMAT ": %s",
                     l->table->name, r, e->message);
        g_error_free (e);
        sedp_cube_builder_abort (b);
        return FALSE;
      }
    }
  }
  return sedp_cube_builder_finish (b, error);
}

/* Renames @from to @to, never over an existing @to. */
static gboolean
rename_noreplace (const char *from, const char *to, GError **error)
{
  int r = renameat2 (AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
    if (g_file_test (to, G_FILE_TEST_EXISTS))
      errno = EEXIST, r = -1;
    else
      r = rename (from, to);
  }
  if (r != 0) {
    int e = errno;
    if (e == EEXIST || e == ENOTEMPTY)
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "%s already exists (a cube "
                   "is never overwritten: remove it first, or split into another folder)", to);
    else
      g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "cannot rename %s to %s: %s",
                   from, to, g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

/* Writes every cube: one at @cube_dir, or several into a temporary folder renamed to @cube_dir
 * once all are complete. On error nothing is left. */
static gboolean
build_cubes (GArray *groups, GArray *lookups, const char *cube_dir, const char *name,
             const guint8 *key, guint64 block_size, GError **error)
{
  g_autofree char *base = g_path_get_basename (cube_dir);
  if (name == NULL)
    name = base;
  if (groups->len == 1)
    return build_cube (&g_array_index (groups, Group, 0), lookups, cube_dir, name, key,
                       block_size, error);
  if (g_file_test (cube_dir, G_FILE_TEST_EXISTS) || g_file_test (cube_dir, G_FILE_TEST_IS_SYMLINK)) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID, "%s already exists (a cube is "
                 "never overwritten: remove it first, or split into another folder)", cube_dir);
    return FALSE;
  }
  g_autofree char *tmp = g_strdup_printf ("%s.tmp-XXXXXX", cube_dir);
  if (g_mkdtemp_full (tmp, 0755) == NULL) {
    int e = errno;
    g_autofree char *parent = g_path_get_dirname (cube_dir);
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_IO, "cannot create a folder next to %s "
                 "(in %s): %s", cube_dir, parent, g_strerror (e));
    return FALSE;
  }
  for (guint g = 0; g < groups->len; g++) {
    const Group *gr = &g_array_index (groups, Group, g);
    g_autofree char *dir = g_build_filename (tmp, gr->name, NULL);
    g_autofree char *cube_name = g_strdup_printf ("%s.%s", name, gr->name);
    if (!build_cube (gr, lookups, dir, cube_name, key, block_size, error)) {
      remove_tree (tmp, 2);
      return FALSE;
    }
  }
  if (!rename_noreplace (tmp, cube_dir, error)) {
    remove_tree (tmp, 2);
    return FALSE;
  }
  g_autofree char *parent = g_path_get_dirname (cube_dir);
  int fd = open (parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync (fd);
    close (fd);
  }
  return TRUE;
}

/* ---- the command ---- */

/* "a, b, c" of the pooled members' id inputs ("K=a, …" when a position is not its slot) and
 * poolings, "K=a, K=b" of the sequences, and the tables (each once). */
static void
describe_group (const Group *gr, GArray *lookups, const SedpNnModel *m, GString *slots,
                GString *pools, GString *seqs, GString *tables)
{
  gboolean numbered = FALSE;
  guint n_pooled = 0;
  for (guint k = 0; k < gr->members->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
    if (!l->seq)
      numbered |= l->slot != n_pooled++;
  }
  guint p = 0, q = 0, t = 0;
  for (guint k = 0; k < gr->members->len; k++) {
    const Lookup *l = &g_array_index (lookups, Lookup, g_array_index (gr->members, guint, k));
    if (first_of_table (gr, lookups, k))
      g_string_append_printf (tables, "%s%s", t++ ? ", " : "", l->table->name);
    if (l->seq) {
      g_string_append_printf (seqs, "%s%u=%s", q++ ? ", " : "", l->slot,
                              m->inputs[l->input].name);
      continue;
    }
    const char *sep = p++ ? ", " : "";
    if (numbered)
      g_string_append_printf (slots, "%s%u=%s", sep, l->slot, m->inputs[l->input].name);
    else
      g_string_append_printf (slots, "%s%s", sep, m->inputs[l->input].name);
    g_string_append_printf (pools, "%s%s", sep, l->mean ? "mean" : "sum");
  }
}

int
sedp_cmd_model_split (int argc, char **argv)
{
  g_autofree char *dense_path = NULL, *cube_arg = NULL, *hex = NULL, *name = NULL;
  g_autofree char *block_text = NULL;
  const GOptionEntry entries[] = {
    {"dense", 0, 0, G_OPTION_ARG_FILENAME, &dense_path, "The dense model to write", "OUT.onnx"},
    {"cube", 0, 0, G_OPTION_ARG_FILENAME, &cube_arg,
     "The cube to create (must not exist); a folder of cubes DIR/dD when the tables have "
     "several dims", "DIR"},
    {"hash-key", 0, 0, G_OPTION_ARG_STRING, &hex,
     "The cubes' signature key, 32 hex digits (default: random)", "HEX"},
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name,
     "The cube's name (default: the folder's name; NAME.dD for each of several cubes)", "NAME"},
    {"block-size", 0, 0, G_OPTION_ARG_STRING, &block_text,
     "Bytes per value block file of the cube (default 1 GiB)", "BYTES"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse (SUB, "MODEL.onnx --dense OUT.onnx --cube DIR",
                       "Splits a model into cubes of its embedding tables and a dense model. "
                       "Every int64 input slot_K that indexes float [rows, dim] initializers "
                       "through Gather (axis 0), pooled by ReduceSum or ReduceMean over its ids "
                       "(or by ReduceSum then a division by the id count), gives its tables to "
                       "the cubes: row r under the signature of (K, r), K counting those inputs "
                       "from 0 in graph-input order. The dense model reads the pooled "
                       "embeddings instead, as float inputs pooled_K [batch, dim]; a lookup of "
                       "ids [batch, L] that is not pooled (a behaviour sequence) becomes the "
                       "float input seq_ID [batch, L, dim] (ID the id input, kept where other "
                       "nodes read it); a table read through several id inputs goes in once, "
                       "under the slot of the first; every other node is kept. Tables of one dim make one cube, DIR; tables of several "
                       "dims (or two of one dim on the same ids) make one cube per dim, DIR/d8, "
                       "DIR/d1 …, with the same hash key, and inputs pooled_d8_K, pooled_d1_K …. "
                       "The last lines are the options of the cube_accessor stages (one per "
                       "cube) that compute the pooled inputs at serving time.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error (SUB, "expected one MODEL.onnx (see --help)");
    return 2;
  }
  if (dense_path == NULL || cube_arg == NULL || *cube_arg == '\0' || *dense_path == '\0') {
    sedp_cli_error (SUB, "missing --dense OUT.onnx or --cube DIR");
    return 2;
  }
  /* "cube/" is the folder "cube". */
  g_autofree char *cube_dir = g_strdup (cube_arg);
  for (gsize n = strlen (cube_dir); n > 1 && cube_dir[n - 1] == '/'; n--)
    cube_dir[n - 1] = '\0';
  if (g_file_test (cube_dir, G_FILE_TEST_EXISTS) || g_file_test (cube_dir, G_FILE_TEST_IS_SYMLINK)) {
    g_autofree char *msg = g_strdup_printf ("%s already exists (a cube is never overwritten: "
                                            "remove it first, or split into another folder)",
                                            cube_dir);
    sedp_cli_error (SUB, msg);
    return 1;
  }
  guint8 key[SEDP_CUBE_HASH_KEY_BYTES];
  if (hex) {
    if (!cube_unhex (hex, key, sizeof key)) {
      g_autofree char *msg = g_strdup_printf ("--hash-key wants %d hex digits, not '%s'",
                                              2 * SEDP_CUBE_HASH_KEY_BYTES, hex);
      sedp_cli_error (SUB, msg);
      return 2;
    }
  } else {
    if (sodium_init () < 0) {
      sedp_cli_error (SUB, "no source of randomness for a hash key (give --hash-key)");
      return 1;
    }
    randombytes_buf (key, sizeof key);
  }
  guint64 block_size = 0;
  if (block_text && !g_ascii_string_to_unsigned (block_text, 10, 1, G_MAXUINT64, &block_size,
                                                 NULL)) {
    sedp_cli_error (SUB, "--block-size wants a number of bytes");
    return 2;
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = sedp_nn_model_load (argv[1], &error);
  if (model == NULL) {
    sedp_cli_error (SUB, error->message);
    return 1;
  }

  /* Everything is checked before anything is written. */
  g_autoptr (GArray) lookups = g_array_new (FALSE, TRUE, sizeof (Lookup));
  g_array_set_clear_func (lookups, lookup_clear);
  g_autofree gboolean *removed = g_new0 (gboolean, MAX (model->n_nodes, 1));
  if (!find_lookups (model, lookups, removed, &error)) {
    g_autofree char *msg = g_strdup_printf ("%s: %s", argv[1], error->message);
    sedp_cli_error (SUB, msg);
    return 1;
  }
  g_autoptr (GArray) groups = group_lookups (lookups, cube_dir, model);
  /* The summary, before the dense model steals from @model (the tables stay alive: those the
   * dense model keeps are moved into it, the others stay in @model). */
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) options = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GString) all_tables = g_string_new (NULL), dims = g_string_new (NULL);
  guint64 rows_total = 0;
  guint n_tables = 0;
  char khex[2 * SEDP_CUBE_HASH_KEY_BYTES + 1];
  cube_hex (key, sizeof key, khex);
  for (guint g = 0; g < groups->len; g++) {
    const Group *gr = &g_array_index (groups, Group, g);
    g_autoptr (GString) slots = g_string_new (NULL), pools = g_string_new (NULL);
    g_autoptr (GString) seqs = g_string_new (NULL), tables = g_string_new (NULL);
    describe_group (gr, lookups, model, slots, pools, seqs, tables);
    rows_total += gr->rows;
    n_tables += gr->n_tables;
    g_string_append_printf (all_tables, "%s%s", g ? ", " : "", tables->str);
    g_string_append_printf (dims, "%s%u", g ? ", " : "", gr->dim);
    if (groups->len > 1)
      g_ptr_array_add (lines, g_strdup_printf ("cube:   %s (hash key %s): %u tables (%s), %"
                                               G_GUINT64_FORMAT " rows of dim %u", gr->dir, khex,
                                               gr->n_tables, tables->str, gr->rows, gr->dim));
    GString *o = g_string_new (NULL);
    g_string_append_printf (o, "cube_accessor options: cube = %s", gr->dir);
    if (slots->len)
      g_string_append_printf (o, "; slots = %s; pooling = %s", slots->str, pools->str);
    if (seqs->len)
      g_string_append_printf (o, "; sequences = %s", seqs->str);
    g_string_append (o, "; hash_slot_ids = true");
    if (groups->len > 1 && slots->len)
      g_string_append_printf (o, "; output_prefix = %s", gr->prefix);
    if (groups->len > 1 && seqs->len)
      g_string_append_printf (o, "; sequence_prefix = %s", gr->seq_prefix);
    g_ptr_array_add (options, g_string_free (o, FALSE));
  }
  g_autoptr (SedpNnModel) dense = split_dense (model, lookups, groups->len, removed, &error);
  if (dense == NULL) {
    g_autofree char *msg = g_strdup_printf ("%s: %s", argv[1], error->message);
    sedp_cli_error (SUB, msg);
    return 1;
  }

  /* The dense model next to its place, then the cubes, then the dense model renamed. */
  sedp_cli_catch_signals (TRUE);
  g_autofree char *dense_dir = g_path_get_dirname (dense_path);
  g_mkdir_with_parents (dense_dir, 0755); /* a failure shows as the mkstemp's below */
  g_autofree char *tmp = g_strdup_printf ("%s.tmp-XXXXXX", dense_path);
  int fd = g_mkstemp (tmp);
  if (fd < 0) {
    int e = errno;
    g_autofree char *msg = g_strdup_printf ("cannot write next to %s: %s", dense_path,
                                            g_strerror (e));
    sedp_cli_error (SUB, msg);
    sedp_cli_catch_signals (FALSE);
    return 1;
  }
  close (fd);
  gboolean ok = sedp_nn_model_save (dense, tmp, &error) &&
                build_cubes (groups, lookups, cube_dir, name, key, block_size, &error);
  sedp_cli_catch_signals (FALSE);
  if (!ok) {
    sedp_cli_error (SUB, error->message);
    g_unlink (tmp);
    return sedp_cli_interrupted ? 130 : 1;
  }
  if (g_rename (tmp, dense_path) != 0) {
    int e = errno;
    g_autofree char *msg = g_strdup_printf ("cannot rename %s to %s: %s (nothing was written)",
                                            tmp, dense_path, g_strerror (e));
    sedp_cli_error (SUB, msg);
    g_unlink (tmp);
    remove_tree (cube_dir, 2);
    return 1;
  }

  if (groups->len == 1) {
    const Group *gr = &g_array_index (groups, Group, 0);
    printf ("split %s: %u tables (%s), %" G_GUINT64_FORMAT " rows of dim %u\n", argv[1],
            n_tables, all_tables->str, rows_total, gr->dim);
    printf ("cube:   %s (hash key %s)\n", cube_dir, khex);
  } else {
    printf ("split %s: %u tables (%s), %" G_GUINT64_FORMAT " rows, into %u cubes of dims %s\n",
            argv[1], n_tables, all_tables->str, rows_total, groups->len, dims->str);
    for (guint k = 0; k < lines->len; k++)
      printf ("%s\n", (const char *) lines->pdata[k]);
  }
  printf ("dense:  %s (%u inputs, %u nodes, %" G_GINT64_FORMAT " parameters)\n", dense_path,
          dense->n_inputs, dense->n_nodes, sedp_nn_model_get_n_parameters (dense));
  for (guint k = 0; k < options->len; k++)
    printf ("%s\n", (const char *) options->pdata[k]);
  return 0;
}
