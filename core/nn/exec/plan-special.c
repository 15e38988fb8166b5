/* sedp — plans specialised on parameters given at run time.
 *
 * Some nodes need a value when the plan is compiled: Reshape's shape, Slice's starts, Squeeze's
 * axes, Clip's bounds, BatchNormalization's statistics. Exporters make them initializers, but a
 * graph may take them as inputs (ONNX's own node tests do). Such a plan is a shell: its inputs are
 * bound, and each run looks up, by the parameters' bytes, the plan compiled with those values as
 * constants, compiling it on a miss. The last SPECIAL_MAX_PLANS plans are kept. */
#include "ops.h"

/* A graph input is a parameter only up to this many elements: a parameter is part of the plan's
 * identity, hashed and compared on every run. */
#define SPECIAL_MAX_ELEMENTS 65536
/* Specialised plans kept per shell (least recently used dropped first). */
#define SPECIAL_MAX_PLANS 16

struct _Special {
  GArray *params;    /* graph input indexes (guint) the plans are specialised on */
  GHashTable *plans; /* GBytes (the parameters' bytes, in params order) → Plan (both owned) */
  GQueue lru;        /* the keys, most recently used first (borrowed from plans) */
  Plan *last;        /* the plan of the last run (owned by plans), or NULL */
};

static void
plan_destroy (gpointer plan)
{
  sedp_nn_plan_free (plan);
}

void
nn_special_free (Special *sp)
{
  if (sp == NULL)
    return;
  g_queue_clear (&sp->lru);
  g_hash_table_unref (sp->plans);
  g_array_unref (sp->params);
  g_free (sp);
}

/* Adds the graph inputs of @wanted that are not yet parameters; FALSE with @error when one is
 * too large to be one. @grew tells whether any was added. */
static gboolean
add_params (const Plan *shell, Special *sp, GArray *wanted, gboolean *grew, GError **error)
{
  *grew = FALSE;
  for (guint i = 0; i < wanted->len; i++) {
    guint idx = g_array_index (wanted, guint, i);
    gboolean known = FALSE;
    for (guint k = 0; k < sp->params->len && !known; k++)
      known = g_array_index (sp->params, guint, k) == idx;
    if (known)
      continue;
    const SedpNnTensor *t = &shell->input_info[idx];
    gint64 numel = nn_numel (t->rank, t->dims);
    if (numel > SPECIAL_MAX_ELEMENTS) {
      g_autofree char *shape = sedp_nn_shape_to_string (t->rank, t->dims);
      g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_UNSUPPORTED,
                   "graph input %u ('%s', %s %s) is read where a constant is needed, and is too "
                   "large to specialise the plan on (%" G_GINT64_FORMAT " elements, at most %d): "
                   "make it an initializer",
                   idx, t->name, sedp_nn_dtype_name (t->dtype), shape, numel, SPECIAL_MAX_ELEMENTS);
      return FALSE;
    }
    g_array_append_val (sp->params, idx);
    *grew = TRUE;
  }
  return TRUE;
}

gboolean
nn_special_attach (Plan *shell, GArray *wanted, GError **error)
{
  Special *sp = g_new0 (Special, 1);
  sp->params = g_array_new (FALSE, FALSE, sizeof (guint));
  sp->plans = g_hash_table_new_full ((GHashFunc) g_bytes_hash, (GEqualFunc) g_bytes_equal,
                                     (GDestroyNotify) g_bytes_unref, plan_destroy);
  g_queue_init (&sp->lru);
  gboolean grew;
  if (!add_params (shell, sp, wanted, &grew, error)) {
    nn_special_free (sp);
    return FALSE;
  }
  shell->special = sp;
  /* Until the first run the outputs are as the graph declares them (-1: not known yet). */
  const SedpNnModel *m = shell->model;
  shell->output_info = g_new0 (SedpNnTensor, MAX (m->n_outputs, 1));
  for (guint i = 0; i < m->n_outputs; i++) {
    SedpNnTensor *t = &shell->output_info[i];
    t->name = m->outputs[i].name;
    t->dtype = m->outputs[i].dtype;
    t->rank = MAX (m->outputs[i].rank, 0);
    for (int k = 0; k < t->rank; k++)
      t->dims[k] = m->outputs[i].dims[k];
  }
  return TRUE;
}

/* The parameters' bytes, in params order: the key of their plan. */
static GBytes *
params_key (const Plan *shell, const SedpNnTensor *inputs)
{
  const Special *sp = shell->special;
  GByteArray *key = g_byte_array_new ();
  for (guint k = 0; k < sp->params->len; k++) {
    const SedpNnTensor *t = &inputs[g_array_index (sp->params, guint, k)];
    g_byte_array_append (key, t->data, (guint) (nn_numel (t->rank, t->dims) * sedp_nn_dtype_size (t->dtype)));
  }
  return g_byte_array_free_to_bytes (key);
}

/* Compiles the plan for these inputs' parameter values. A compile that finds more graph inputs
 * it needs the values of adds them and starts again (the cached plans, keyed without them, are
 * dropped). */
static Plan *
special_compile (Plan *shell, const SedpNnTensor *inputs, GError **error)
{
  Special *sp = shell->special;
  g_autofree gconstpointer *param_data = g_new0 (gconstpointer, MAX (shell->n_inputs, 1));
  for (;;) {
    for (guint k = 0; k < sp->params->len; k++) {
      guint idx = g_array_index (sp->params, guint, k);
      param_data[idx] = inputs[idx].data;
    }
    g_autoptr (GArray) wanted = g_array_new (FALSE, FALSE, sizeof (guint));
    g_autoptr (GError) local = NULL;
    Plan *p = nn_plan_compile (shell->model, shell->batch, &shell->options, param_data, wanted,
                               &local);
    if (p != NULL && shell->device) {
      p->device = sedp_nn_device_ref (shell->device);
      if (!nn_ocl_plan_lower (p, shell->device, error)) {
        sedp_nn_plan_free ((SedpNnPlan *) p);
        return NULL;
      }
    }
    if (p != NULL)
      return p;
    gboolean grew = FALSE;
    if (wanted->len == 0 || !add_params (shell, sp, wanted, &grew, error) || !grew) {
      if (error && *error == NULL)
        g_propagate_error (error, g_steal_pointer (&local));
      return NULL;
    }
    g_queue_clear (&sp->lru);
    g_hash_table_remove_all (sp->plans);
    sp->last = NULL;
  }
}

/* The plan for these inputs: cached, or compiled and cached. */
static Plan *
special_lookup (Plan *shell, const SedpNnTensor *inputs, GError **error)
{
  Special *sp = shell->special;
  g_autoptr (GBytes) key = params_key (shell, inputs);
  GBytes *stored = NULL;
  Plan *p = NULL;
  if (g_hash_table_lookup_extended (sp->plans, key, (gpointer *) &stored, (gpointer *) &p)) {
    g_queue_remove (&sp->lru, stored);
    g_queue_push_head (&sp->lru, stored);
    return p;
  }
  p = special_compile (shell, inputs, error);
  if (p == NULL)
    return NULL;
  g_bytes_unref (key);
  key = params_key (shell, inputs); /* the parameters may have grown while compiling */
  if (g_queue_get_length (&sp->lru) >= SPECIAL_MAX_PLANS) {
    GBytes *old = g_queue_pop_tail (&sp->lru);
    if (sp->last == g_hash_table_lookup (sp->plans, old))
      sp->last = NULL;
    g_hash_table_remove (sp->plans, old);
  }
  GBytes *owned = g_bytes_ref (key);
  g_hash_table_insert (sp->plans, owned, p);
  g_queue_push_head (&sp->lru, owned);
  return p;
}

gboolean
nn_special_run (Plan *shell, guint n_inputs, const SedpNnTensor *inputs, guint n_outputs,
                SedpNnTensor *outputs, GError **error)
{
  if (!nn_plan_check_inputs (shell, n_inputs, inputs, error))
    return FALSE;
  Plan *p = special_lookup (shell, inputs, error);
  if (p == NULL)
    return FALSE;
  shell->special->last = p;
  memcpy (shell->output_info, p->output_info, sizeof (SedpNnTensor) * shell->n_outputs);
  return sedp_nn_plan_run ((SedpNnPlan *) p, n_inputs, inputs, n_outputs, outputs, error);
}

const Plan *
nn_special_current (const Plan *p)
{
  return p->special && p->special->last ? p->special->last : p;
}

void
nn_special_describe (const Plan *p, GString *out)
{
  if (p->special == NULL)
    return;
  g_string_append (out, "plan: specialised at run time on the values of");
  for (guint k = 0; k < p->special->params->len; k++) {
    guint idx = g_array_index (p->special->params, guint, k);
    g_string_append_printf (out, "%s '%s'", k ? "," : "", p->input_info[idx].name);
  }
  g_string_append_printf (out, " (%u plans compiled and kept)\n", g_hash_table_size (p->special->plans));
}

gboolean
sedp_nn_plan_input_is_parameter (const SedpNnPlan *plan, guint index)
{
  const Plan *p = (const Plan *) plan;
  g_return_val_if_fail (p != NULL && index < p->n_inputs, FALSE);
  for (guint k = 0; p->special && k < p->special->params->len; k++)
    if (g_array_index (p->special->params, guint, k) == index)
      return TRUE;
  return FALSE;
}
