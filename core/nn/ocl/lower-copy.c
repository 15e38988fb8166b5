/* sedp — data movement on the device (docs/opencl.md §3.2): Transpose, Slice, Expand and Tile
 * through the strided_copy kernel (the CPU's CopyParams: Tile is X viewed with stride 0 on each
 * repeat), Concat and Split through copy_rows, one launch per input or output (kernels/copy.cl).
 * Any element type: kernels move elements of 1, 4 or 8 bytes. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

G_STATIC_ASSERT (SEDP_NN_MAX_RANK == 8); /* shapes and strides travel as long8 */

gboolean
nn_ocl_lower_strided_copy (OclPlan *o, const Step *s, GError **error)
{
  const CopyParams *p = s->params;
  if (p->numel == 0)
    return TRUE;
  gint64 dims[8], strides[8];
  for (int d = 0; d < 8; d++) {
    dims[d] = d < p->rank ? p->dims[d] : 1;
    strides[d] = d < p->rank ? p->strides[d] : 0;
  }
  return nn_ocl_add_kernel (o, s, "strided_copy", (guint64) p->numel, error, "vvui88li", s->in[0],
                            s->out[0], (guint64) p->numel, p->rank, dims, strides, p->base,
                            (int) p->esize);
}

/* One copy_rows launch: @rows rows of @len elements from (@x, @x_pitch, @x_at) to (@y, @y_pitch,
 * @y_at); nothing when empty. */
static gboolean
copy_rows (OclPlan *o, const Step *s, int x, int y, gint64 rows, gint64 len, gint64 x_pitch,
           gint64 x_at, gint64 y_pitch, gint64 y_at, gsize esize, GError **error)
{
  if (rows == 0 || len == 0)
    return TRUE;
  return nn_ocl_add_kernel (o, s, "copy_rows", (guint64) (rows * len), error, "vvuuuuuui", x, y,
                            (guint64) rows, (guint64) len, (guint64) x_pitch, (guint64) x_at,
                            (guint64) y_pitch, (guint64) y_at, (int) esize);
}

gboolean
nn_ocl_lower_concat (OclPlan *o, const Step *s, GError **error)
{
  const ConcatParams *p = s->params;
  gint64 at = 0;
  for (guint k = 0; k < p->n; k++) {
    if (!copy_rows (o, s, s->in[k], s->out[0], p->outer, p->chunk[k], p->chunk[k], 0, p->total, at,
                    p->esize, error))
      return FALSE;
    at += p->chunk[k];
  }
  return TRUE;
}

gboolean
nn_ocl_lower_split (OclPlan *o, const Step *s, GError **error)
{
  const SplitParams *p = s->params;
  gint64 at = 0;
  for (guint k = 0; k < p->n; k++) {
    if (s->out[k] >= 0 && !copy_rows (o, s, s->in[0], s->out[k], p->outer, p->chunk[k], p->total,
                                      at, p->chunk[k], 0, p->esize, error))
      return FALSE;
    at += p->chunk[k];
  }
  return TRUE;
}
