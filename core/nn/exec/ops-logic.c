/* sedp — comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), logic (Not, And, Or,
 * Xor) and Where, with numpy broadcasting; the float predicates IsNaN and IsInf. bool is one
 * byte, 0 or 1; any non-zero byte read is true. */
#include "ops.h"

#include <math.h>

/* ---- comparisons: float, int64, int32 (and bool for Equal) in, bool out ---- */

#define OP_EQ(x, y) ((x) == (y))
#define OP_LT(x, y) ((x) < (y))
#define OP_GT(x, y) ((x) > (y))
#define OP_LE(x, y) ((x) <= (y))
#define OP_GE(x, y) ((x) >= (y))
#define OP_BEQ(x, y) (!(x) == !(y))

BIN_LOOP (eq_float, float, float, guint8, OP_EQ)
BIN_LOOP (lt_float, float, float, guint8, OP_LT)
BIN_LOOP (gt_float, float, float, guint8, OP_GT)
BIN_LOOP (le_float, float, float, guint8, OP_LE)
BIN_LOOP (ge_float, float, float, guint8, OP_GE)
BIN_LOOP (eq_int64, gint64, gint64, guint8, OP_EQ)
BIN_LOOP (lt_int64, gint64, gint64, guint8, OP_LT)
BIN_LOOP (gt_int64, gint64, gint64, guint8, OP_GT)
BIN_LOOP (le_int64, gint64, gint64, guint8, OP_LE)
BIN_LOOP (ge_int64, gint64, gint64, guint8, OP_GE)
BIN_LOOP (eq_int32, gint32, gint32, guint8, OP_EQ)
BIN_LOOP (lt_int32, gint32, gint32, guint8, OP_LT)
BIN_LOOP (gt_int32, gint32, gint32, guint8, OP_GT)
BIN_LOOP (le_int32, gint32, gint32, guint8, OP_LE)
BIN_LOOP (ge_int32, gint32, gint32, guint8, OP_GE)
BIN_LOOP (eq_bool, guint8, guint8, guint8, OP_BEQ)

/* The comparisons: the loop for float, int64, int32 and bool inputs (NULL: the type is refused). */
static const struct {
  const char *op;
  BroadcastFn f32, i64, i32, b8;
  NnElemOp elem;
} compare_ops[] = {
  {"Equal", eq_float, eq_int64, eq_int32, eq_bool, NN_ELEM_EQUAL},
  {"Less", lt_float, lt_int64, lt_int32, NULL, NN_ELEM_LESS},
  {"Greater", gt_float, gt_int64, gt_int32, NULL, NN_ELEM_GREATER},
  {"LessOrEqual", le_float, le_int64, le_int32, NULL, NN_ELEM_LESS_OR_EQUAL},
  {"GreaterOrEqual", ge_float, ge_int64, ge_int32, NULL, NN_ELEM_GREATER_OR_EQUAL},
};

gboolean
nn_prepare_compare (OpCtx *c, GError **error)
{
  Value *a = op_in (c, 0), *b = op_in (c, 1);
  guint k = NN_OP_ROW (c, compare_ops);
  BroadcastFn fn = a->dtype != b->dtype         ? NULL
                   : a->dtype == SEDP_NN_FLOAT  ? compare_ops[k].f32
                   : a->dtype == SEDP_NN_INT64  ? compare_ops[k].i64
                   : a->dtype == SEDP_NN_INT32  ? compare_ops[k].i32
                   : a->dtype == SEDP_NN_BOOL   ? compare_ops[k].b8
                                                : NULL;
  if (fn == NULL) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "inputs of types %s and %s: takes two float, int64 or int32%s inputs",
                   sedp_nn_dtype_name (a->dtype), sedp_nn_dtype_name (b->dtype),
                   compare_ops[k].b8 ? " (or bool)" : "");
    return FALSE;
  }
  return nn_prepare_broadcast (c, 2, fn, SEDP_NN_BOOL, compare_ops[k].elem, "compare", error);
}

/* ---- logic on bool ---- */

#define OP_AND(x, y) ((x) && (y))
#define OP_OR(x, y) ((x) || (y))
#define OP_XOR(x, y) (!(x) != !(y))

BIN_LOOP (and_bool, guint8, guint8, guint8, OP_AND)
BIN_LOOP (or_bool, guint8, guint8, guint8, OP_OR)
BIN_LOOP (xor_bool, guint8, guint8, guint8, OP_XOR)

/* Checks that the first @n inputs are bool. */
static gboolean
inputs_bool (OpCtx *c, guint n, GError **error)
{
  for (guint k = 0; k < n; k++)
    if (op_in (c, k)->dtype != SEDP_NN_BOOL) {
      nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "input %u is %s: takes bool", k,
                     sedp_nn_dtype_name (op_in (c, k)->dtype));
      return FALSE;
    }
  return TRUE;
}

gboolean
nn_prepare_logic (OpCtx *c, GError **error)
{
  if (!inputs_bool (c, 2, error))
    return FALSE;
  const char *op = c->node->op_type;
  NnElemOp e = strcmp (op, "And") == 0  ? NN_ELEM_AND
               : strcmp (op, "Or") == 0 ? NN_ELEM_OR
                                        : NN_ELEM_XOR;
  BroadcastFn fn = e == NN_ELEM_AND ? and_bool : e == NN_ELEM_OR ? or_bool : xor_bool;
  return nn_prepare_broadcast (c, 2, fn, SEDP_NN_BOOL, e, "logic", error);
}

NN_HOT static gboolean
kernel_not (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const guint8 *x = ptrs[s->in[0]];
  guint8 *y = ptrs[s->out[0]];
  gint64 n = plan->values[s->out[0]].numel;
  for (gint64 i = 0; i < n; i++)
    y[i] = !x[i];
  return TRUE;
}

gboolean
nn_prepare_not (OpCtx *c, GError **error)
{
  if (!inputs_bool (c, 1, error))
    return FALSE;
  Value *x = op_in (c, 0);
  nn_set_shape (op_out (c, 0), SEDP_NN_BOOL, x->rank, x->dims);
  c->step->fn = kernel_not;
  c->step->id = NN_KERNEL_NOT;
  c->step->kernel = "not";
  c->step->flops = (double) x->numel;
  return TRUE;
}

/* ---- IsNaN, IsInf: float in, bool out ---- */

NN_HOT static gboolean
kernel_is (const Plan *plan, const Step *s, gpointer const *ptrs, GError **error)
{
  const IsParams *p = s->params;
  const float *x = ptrs[s->in[0]];
  guint8 *y = ptrs[s->out[0]];
  gint64 n = plan->values[s->out[0]].numel;
  for (gint64 i = 0; i < n; i++)
    y[i] = p->nan ? x[i] != x[i] : (p->pos && x[i] == INFINITY) || (p->neg && x[i] == -INFINITY);
  return TRUE;
}

gboolean
nn_prepare_is (OpCtx *c, GError **error)
{
  Value *x = op_in (c, 0);
  if (x->dtype != SEDP_NN_FLOAT) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node, "input of type %s: takes float",
                   sedp_nn_dtype_name (x->dtype));
    return FALSE;
  }
  IsParams *p = g_new0 (IsParams, 1);
  c->step->params = p;
  p->nan = strcmp (c->node->op_type, "IsNaN") == 0;
  p->neg = nn_attr_int (c->node, "detect_negative", 1) != 0;
  p->pos = nn_attr_int (c->node, "detect_positive", 1) != 0;
  nn_set_shape (op_out (c, 0), SEDP_NN_BOOL, x->rank, x->dims);
  c->step->fn = kernel_is;
  c->step->id = NN_KERNEL_IS;
  c->step->kernel = p->nan ? "isnan" : "isinf";
  c->step->flops = (double) x->numel;
  return TRUE;
}

/* ---- Where (condition, X, Y): three-way broadcasting, any element type ---- */

/* Y = C ? X : Y for elements of type T (chosen by size: it only moves bytes). Operands' strides
 * along the last axis are 0 or 1. */
#define WHERE_LOOP(T)                                                                            \
  NN_HOT static void where_##T (const Broadcast *p, gconstpointer vc, gconstpointer vx,          \
                                gconstpointer vy, gpointer vout)                                 \
  {                                                                                              \
    gint64 inner = NN_BCAST_INNER (p), outer = inner ? p->numel / inner : 0;                     \
    gint64 ic = NN_BCAST_ISTRIDE (p, 0), ix = NN_BCAST_ISTRIDE (p, 1), iy = NN_BCAST_ISTRIDE (p, 2); \
    gint64 idx[SEDP_NN_MAX_RANK] = {0}, off[3] = {0};                                            \
    for (gint64 o = 0; o < outer; o++) {                                                         \
      const guint8 *pc = (const guint8 *) vc + off[0];                                           \
      const T *px = (const T *) vx + off[1], *py = (const T *) vy + off[2];                      \
      T *po = (T *) vout + o * inner;                                                            \
      for (gint64 i = 0; i < inner; i++)                                                         \
        po[i] = pc[i * ic] ? px[i * ix] : py[i * iy];                                            \
      nn_broadcast_next_row (p, 3, idx, off);                                                    \
    }                                                                                            \
  }

WHERE_LOOP (guint8)
WHERE_LOOP (guint32)
WHERE_LOOP (guint64)

gboolean
nn_prepare_where (OpCtx *c, GError **error)
{
  Value *cond = op_in (c, 0), *x = op_in (c, 1), *y = op_in (c, 2);
  gsize esize = sedp_nn_dtype_size (x->dtype);
  if (cond->dtype != SEDP_NN_BOOL || x->dtype != y->dtype || (esize != 1 && esize != 4 && esize != 8)) {
    nn_node_error (error, SEDP_NN_ERROR_UNSUPPORTED, c->node,
                   "condition of type %s, X %s, Y %s: takes a bool condition and X and Y of one type",
                   sedp_nn_dtype_name (cond->dtype), sedp_nn_dtype_name (x->dtype),
                   sedp_nn_dtype_name (y->dtype));
    return FALSE;
  }
  BroadcastFn fn = esize == 1 ? where_guint8 : esize == 4 ? where_guint32 : where_guint64;
  return nn_prepare_broadcast (c, 3, fn, x->dtype, NN_ELEM_WHERE, "where", error);
}
