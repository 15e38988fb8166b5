/* sedp — Einsum: the equations PyTorch's and tf2onnx's exports write for attention and bilinear
 * layers, lowered at plan time to MatMul's kernels; any other equation is refused. */
#include "ops.h"

#include <ctype.h>

/* The forms, with letters renamed in order of first appearance ("bhqd,bhkd->bhqk" is
 * "abcd,abed->abce"): B read transposed, or one dot product per row. */
static const struct {
  const char *canon;
  const char *example;
  gboolean trans_b, row_dot;
} einsum_forms[] = {
  {"abc,acd->abd", "bij,bjk->bik", FALSE, FALSE},      /* batched product */
  {"abcd,abed->abce", "bhqd,bhkd->bhqk", TRUE, FALSE}, /* attention scores Q·Kᵀ */
  {"abcd,abde->abce", "bhqk,bhkd->bhqd", FALSE, FALSE}, /* attention-weighted values */
  {"ab,ab->a", "bd,bd->b", TRUE, TRUE},                /* a dot product per row */
  {"ab,bc->ac", "bi,ij->bj", FALSE, FALSE},            /* bilinear and linear layers */
};

/* @eq without spaces and with its letters renamed a, b, … in order of first appearance; NULL
 * when it has other characters than letters, ',' and "->" (an ellipsis) or over 26 letters. */
static char *
einsum_canon (const char *eq)
{
  char map[256] = {0}, next = 'a';
  GString *out = g_string_new (NULL);
  for (const char *p = eq; *p; p++) {
    guchar ch = (guchar) *p;
    if (isspace (ch))
      continue;
    if (isalpha (ch)) {
      if (!map[ch] && next > 'z')
        break;
      if (!map[ch])
        map[ch] = next++;
      g_string_append_c (out, map[ch]);
    } else if (ch == ',' || (ch == '-' && p[1] == '>') || (ch == '>' && p > eq && p[-1] == '-')) {
      g_string_append_c (out, (char) ch);
    } else {
      g_string_free (out, TRUE);
      return NULL;
    }
  }
  return g_string_free (out, FALSE);
}

/* The row of einsum_forms for the node's equation and inputs, or -1 with an error naming it. */
static int
einsum_form (OpCtx *c, GError **error)
{
  const SedpNnAttr *a = sedp_nn_node_attr (c->node, "equation");
  const char *eq = a && a->type == SEDP_NN_ATTR_STRING && a->s ? a->s : "";
  g_autofree char *canon = einsum_canon (eq);
  for (guint k = 0; canon && c->step->n_in == 2 && k < G_N_ELEMENTS (einsum_forms); k++)
    if (strcmp (canon, einsum_forms[k].canon) == 0)
      return (int) k;
  g_autoptr (GString) forms = g_string_new (NULL);
  for (guint k = 0; k < G_N_ELEMENTS (einsum_forms); k++)
    g_string_append_printf (forms, "%s%s", k ? ", " : "", einsum_forms[k].example);
  nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                 "equation '%s' with %u inputs: the engine runs two-input %s (any letters)", eq,
                 c->step->n_in, forms->str);
  return -1;
}

/* Input @k has the rank of its term in the canonical equation. */
static gboolean
einsum_rank (OpCtx *c, const char *canon, guint k, GError **error)
{
  const char *term = canon;
  for (guint i = 0; i < k; i++)
    term = strchr (term, ',') + 1;
  int rank = (int) strcspn (term, ",-");
  Value *v = op_in (c, k);
  if (v->rank == rank)
    return TRUE;
  nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "input %u has rank %d, its term %d letters",
                 k, v->rank, rank);
  return FALSE;
}

gboolean
nn_prepare_einsum (OpCtx *c, GError **error)
{
  int f = einsum_form (c, error);
  if (f < 0)
    return FALSE;
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  if (a->dtype != SEDP_NN_FLOAT || b->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "inputs of types %s and %s: takes float", sedp_nn_dtype_name (a->dtype),
                   sedp_nn_dtype_name (b->dtype));
    return FALSE;
  }
  const char *canon = einsum_forms[f].canon;
  if (!einsum_rank (c, canon, 0, error) || !einsum_rank (c, canon, 1, error))
    return FALSE;
  if (!einsum_forms[f].row_dot)
    return nn_prepare_matmul_as (c, a->rank, a->dims, b->rank, b->dims, einsum_forms[f].trans_b,
                                 error);
  /* bd,bd->b: [b, 1, d] · [b, 1, d]ᵀ, a batch of 1 × 1 products */
  if (a->dims[0] != b->dims[0] || a->dims[1] != b->dims[1]) {
    g_autofree char *sa = sedp_nn_shape_to_string (a->rank, a->dims);
    g_autofree char *sb = sedp_nn_shape_to_string (b->rank, b->dims);
    nn_node_error (error, SEDP_NN_ERROR_SHAPE, c->node, "the inputs' shapes differ: %s and %s", sa,
                   sb);
    return FALSE;
  }
  gint64 d3[3] = {a->dims[0], 1, a->dims[1]};
  if (!nn_prepare_matmul_as (c, 3, d3, 3, d3, TRUE, error))
    return FALSE;
  nn_set_shape (op_out (c, 0), SEDP_NN_FLOAT, 1, a->dims);
  return TRUE;
}
