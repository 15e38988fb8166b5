/* sedp — elementwise steps on the device (docs/opencl.md §3.2): the broadcast family (Add … Div,
 * the comparisons, And/Or/Xor, Mod, Pow, PRelu, Where) through kernels/broadcast.cl with the
 * cheapest walk that describes the step's broadcast (flat, blocks, or the general N-d walk), the
 * variadic Sum/Max/Min/Mean as n − 1 accumulating launches in the CPU's order, and the
 * one-operand steps (unary functions, activations with attributes, Clip, Not, IsNaN/IsInf, Cast)
 * through kernels/elementwise.cl. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

/* The kernels switch on these codes (kernels/broadcast.cl, elementwise.cl). */
G_STATIC_ASSERT (NN_ELEM_ADD == 0 && NN_ELEM_DIV == 3 && NN_ELEM_EQUAL == 4);
G_STATIC_ASSERT (NN_ELEM_GREATER_OR_EQUAL == 8 && NN_ELEM_AND == 9 && NN_ELEM_XOR == 11);
G_STATIC_ASSERT (NN_ELEM_FMOD == 12 && NN_ELEM_MOD == 13 && NN_ELEM_POW == 14);
G_STATIC_ASSERT (NN_ELEM_POW_HALF == 16 && NN_ELEM_PRELU == 17 && NN_ELEM_WHERE == 18);
G_STATIC_ASSERT (NN_ELEM_MAX == 19 && NN_ELEM_MIN == 20);
G_STATIC_ASSERT (PACT_SOFTPLUS == 0 && PACT_CELU == 4 && PACT_THRESHOLDED_RELU == 7);
G_STATIC_ASSERT (SEDP_NN_FLOAT == 1 && SEDP_NN_UINT8 == 2 && SEDP_NN_INT8 == 3);
G_STATIC_ASSERT (SEDP_NN_INT32 == 6 && SEDP_NN_INT64 == 7 && SEDP_NN_BOOL == 9);
G_STATIC_ASSERT (SEDP_NN_DOUBLE == 11 && SEDP_NN_MAX_RANK == 8);

/* The walks of kernels/broadcast.cl. */
enum { LAYOUT_FLAT, LAYOUT_BLOCK, LAYOUT_ND };

/* unary_f's division (Mean's 1/n step): y = x / alpha. */
#define UNARY_DIV 100

/* A broadcast walk as the kernels take it: the layout and, per operand, its long8. */
typedef struct {
  int layout;
  gint64 w[NN_BCAST_MAX_IN][SEDP_NN_MAX_RANK];
} Walk;

/* Whether operand @k of @b is one contiguous block of the output's axes l..r−1 (broadcast over
 * the axes before and after): its element of output element i is then (i / q) % p, q the
 * product of the dims after the block, p of the block's. A full operand gives q 1, p 0 (no
 * modulo); a scalar q 1, p 1. Axes of length 1 do not count. */
static gboolean
block_of (const Broadcast *b, int k, gint64 *q, gint64 *p)
{
  gint64 after = 1, size = 1;
  gboolean in_block = FALSE, ended = FALSE;
  *q = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    gint64 dim = b->dims[d], stride = b->strides[k][d];
    if (dim != 1 && stride != 0) {
      if (ended || stride != size)
        return FALSE;
      if (!in_block)
        *q = after;
      in_block = TRUE;
      size *= dim;
    } else if (dim != 1 && in_block) {
      ended = TRUE;
    }
    after *= dim;
  }
  *p = *q == 1 && size == b->numel ? 0 : size;
  return TRUE;
}

/* The cheapest walk of the first @n operands of @b. */
static void
walk_of (const Broadcast *b, guint n, Walk *w)
{
  memset (w, 0, sizeof *w);
  gboolean blocks = TRUE, flat = TRUE;
  for (guint k = 0; k < n; k++) {
    gint64 q, p;
    if (!block_of (b, (int) k, &q, &p)) {
      blocks = FALSE;
      break;
    }
    w->w[k][0] = q;
    w->w[k][1] = p;
    flat = flat && q == 1 && p == 0;
  }
  w->layout = !blocks ? LAYOUT_ND : flat ? LAYOUT_FLAT : LAYOUT_BLOCK;
  if (blocks)
    return;
  for (guint k = 0; k < n; k++)
    memcpy (w->w[k], b->strides[k], sizeof w->w[k]);
}

/* Appends kernel @name computing value @y = op (@a, @b) over the walk @bc. */
static gboolean
add_bcast2 (OclPlan *o, const Step *s, const char *name, NnElemOp op, const Broadcast *bc, int a,
            int b, int y, GError **error)
{
  Walk w;
  walk_of (bc, 2, &w);
  return nn_ocl_add_kernel (o, s, name, (guint64) bc->numel, error, "vvvuiii888", a, b, y,
                            (guint64) bc->numel, (int) op, w.layout, bc->rank, bc->dims, w.w[0],
                            w.w[1]);
}

/* The kernel of a two-operand broadcast step, by its operation and operand types; NULL for a
 * combination the CPU engine does not make. */
static const char *
bcast_kernel (const BroadcastParams *p)
{
  SedpNnDType a = p->in_dtype[0], b = p->in_dtype[1];
  switch (p->op) {
  case NN_ELEM_EQUAL: case NN_ELEM_LESS: case NN_ELEM_GREATER: case NN_ELEM_LESS_OR_EQUAL:
  case NN_ELEM_GREATER_OR_EQUAL:
    return a == SEDP_NN_FLOAT ? "cmp_f" : a == SEDP_NN_INT64 ? "cmp_l" : a == SEDP_NN_INT32 ? "cmp_i"
           : a == SEDP_NN_BOOL && p->op == NN_ELEM_EQUAL ? "bin_b" : NULL;
  case NN_ELEM_AND: case NN_ELEM_OR: case NN_ELEM_XOR:
    return "bin_b";
  case NN_ELEM_POW:
    return b == SEDP_NN_FLOAT ? "bin_f" : b == SEDP_NN_INT64 ? "pow_fl" : b == SEDP_NN_INT32 ? "pow_fi"
                                                                                              : NULL;
  case NN_ELEM_POW2: case NN_ELEM_POW_HALF: case NN_ELEM_PRELU:
    return "bin_f";
  case NN_ELEM_WHERE:
    return NULL;
  default: /* arithmetic, Mod, Max, Min */
    return a == SEDP_NN_FLOAT ? "bin_f" : a == SEDP_NN_INT64 ? "bin_l" : NULL;
  }
}

static gboolean
lower_where (OclPlan *o, const Step *s, const BroadcastParams *p, GError **error)
{
  gsize esize = sedp_nn_dtype_size (p->out_dtype);
  const char *name = esize == 1 ? "where_1" : esize == 4 ? "where_4" : esize == 8 ? "where_8" : NULL;
  if (name == NULL) {
    nn_ocl_add_host (o, s); /* not made by the CPU engine (Where takes sizes 1, 4 and 8) */
    return TRUE;
  }
  Walk w;
  walk_of (&p->b, 3, &w);
  return nn_ocl_add_kernel (o, s, name, (guint64) p->b.numel, error, "vvvvuii8888", s->in[0],
                            s->in[1], s->in[2], s->out[0], (guint64) p->b.numel, w.layout,
                            p->b.rank, p->b.dims, w.w[0], w.w[1], w.w[2]);
}

gboolean
nn_ocl_lower_broadcast (OclPlan *o, const Step *s, GError **error)
{
  const BroadcastParams *p = s->params;
  if (p->b.numel == 0)
    return TRUE;
  if (p->op == NN_ELEM_WHERE)
    return lower_where (o, s, p, error);
  const char *name = bcast_kernel (p);
  if (name == NULL) {
    nn_ocl_add_host (o, s);
    return TRUE;
  }
  /* x · x and sqrt never read the exponent (which may be an int64 constant): x twice */
  gboolean no_b = p->op == NN_ELEM_POW2 || p->op == NN_ELEM_POW_HALF;
  Broadcast bc = p->b;
  if (no_b)
    memcpy (bc.strides[1], bc.strides[0], sizeof bc.strides[1]);
  return add_bcast2 (o, s, name, p->op, &bc, s->in[0], no_b ? s->in[0] : s->in[1], s->out[0],
                     error);
}

/* Whether values @a and @b are the same bytes on the device. */
static gboolean
same_place (OclPlan *o, int a, int b, gboolean *same, GError **error)
{
  OclRef ra, rb;
  if (!nn_ocl_ref (o, a, &ra, error) || !nn_ocl_ref (o, b, &rb, error))
    return FALSE;
  *same = ra.mem == rb.mem && ra.offset == rb.offset;
  return TRUE;
}

/* y = x, elementwise copy of @n floats or int64s. */
static gboolean
add_copy (OclPlan *o, const Step *s, gboolean f, int x, int y, gint64 n, GError **error)
{
  gboolean same;
  if (!same_place (o, x, y, &same, error))
    return FALSE;
  if (same)
    return TRUE;
  if (f)
    return nn_ocl_add_kernel (o, s, "unary_f", (guint64) n, error, "vvuif", x, y, (guint64) n,
                              (int) ACT_NONE, 0.0);
  return nn_ocl_add_kernel (o, s, "unary_l", (guint64) n, error, "vvui", x, y, (guint64) n,
                           (int) ACT_NONE);
}

gboolean
nn_ocl_lower_variadic (OclPlan *o, const Step *s, GError **error)
{
  const VariadicParams *p = s->params;
  const Value *y = &o->cpu->values[s->out[0]];
  if (y->numel == 0)
    return TRUE;
  gboolean f = y->dtype == SEDP_NN_FLOAT;
  if (y->dtype != SEDP_NN_FLOAT && y->dtype != SEDP_NN_INT64) {
    nn_ocl_add_host (o, s); /* not made by the CPU engine (float, or int64 Max/Min) */
    return TRUE;
  }
  if (p->n == 1 && !add_copy (o, s, f, s->in[0], s->out[0], y->numel, error))
    return FALSE;
  for (guint k = 1; k < p->n; k++)
    if (!add_bcast2 (o, s, f ? "bin_f" : "bin_l", p->op, &p->walks[k - 1],
                     k == 1 ? s->in[0] : s->out[0], s->in[k], s->out[0], error))
      return FALSE;
  if (!p->mean)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "unary_f", (guint64) y->numel, error, "vvuif", s->out[0],
                            s->out[0], (guint64) y->numel, UNARY_DIV, (double) (float) p->n);
}

gboolean
nn_ocl_lower_unary (OclPlan *o, const Step *s, GError **error)
{
  const UnaryParams *p = s->params;
  if (p->n == 0)
    return TRUE;
  if (p->int64)
    return nn_ocl_add_kernel (o, s, "unary_l", (guint64) p->n, error, "vvui", s->in[0], s->out[0],
                              (guint64) p->n, (int) p->act);
  return nn_ocl_add_kernel (o, s, "unary_f", (guint64) p->n, error, "vvuif", s->in[0], s->out[0],
                            (guint64) p->n, (int) p->act, (double) p->alpha);
}

gboolean
nn_ocl_lower_param_act (OclPlan *o, const Step *s, GError **error)
{
  const ParamActParams *p = s->params;
  if (p->n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "param_act", (guint64) p->n, error, "vvuiff", s->in[0],
                            s->out[0], (guint64) p->n, (int) p->act, (double) p->alpha,
                            (double) p->beta);
}

gboolean
nn_ocl_lower_clip (OclPlan *o, const Step *s, GError **error)
{
  const ClipParams *p = s->params;
  if (p->n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "clip", (guint64) p->n, error, "vvuff", s->in[0], s->out[0],
                            (guint64) p->n, (double) p->lo, (double) p->hi);
}

/* The SEDP_NN_ERROR_DEVICE error of a step that needs double on a device without cl_khr_fp64
 * (docs/opencl.md §7). */
static void
fp64_error (GError **error, const OclPlan *o, const Step *s)
{
  const SedpNnNode *n = s->node;
  const char *name = n->name && *n->name ? n->name : "";
  for (guint k = 0; !*name && k < n->n_outputs; k++)
    name = n->outputs[k]; /* unnamed: its first output, as the CPU engine's messages */
  g_set_error (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE,
               "node '%s' (%s): double needs cl_khr_fp64, which OpenCL device %s lacks; use "
               "engine = cpu", name, n->op_type, o->device->label);
}

/* cast_* by the source type; NULL for a type without a kernel. */
static const char *
cast_kernel (SedpNnDType from)
{
  switch (from) {
  case SEDP_NN_FLOAT: return "cast_f";
  case SEDP_NN_DOUBLE: return "cast_d";
  case SEDP_NN_INT64: return "cast_l";
  case SEDP_NN_INT32: return "cast_i";
  case SEDP_NN_INT8: return "cast_c";
  case SEDP_NN_UINT8: case SEDP_NN_BOOL: return "cast_uc";
  default: return NULL;
  }
}

gboolean
nn_ocl_lower_cast (OclPlan *o, const Step *s, GError **error)
{
  const CastParams *p = s->params;
  if ((p->from == SEDP_NN_DOUBLE || p->to == SEDP_NN_DOUBLE) && !o->device->fp64) {
    fp64_error (error, o, s);
    return FALSE;
  }
  if (p->n == 0)
    return TRUE;
  const char *name = cast_kernel (p->from);
  if (name == NULL || cast_kernel (p->to) == NULL) {
    nn_ocl_add_host (o, s); /* not made by the CPU engine (its types are these seven) */
    return TRUE;
  }
  return nn_ocl_add_kernel (o, s, name, (guint64) p->n, error, "vvui", s->in[0], s->out[0],
                            (guint64) p->n, (int) p->to);
}

gboolean
nn_ocl_lower_not (OclPlan *o, const Step *s, GError **error)
{
  gint64 n = o->cpu->values[s->out[0]].numel;
  if (n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "logic_not", (guint64) n, error, "vvu", s->in[0], s->out[0],
                            (guint64) n);
}

gboolean
nn_ocl_lower_is (OclPlan *o, const Step *s, GError **error)
{
  const IsParams *p = s->params;
  gint64 n = o->cpu->values[s->out[0]].numel;
  if (n == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "logic_is", (guint64) n, error, "vvuiii", s->in[0], s->out[0],
                            (guint64) n, (int) p->nan, (int) p->pos, (int) p->neg);
}
