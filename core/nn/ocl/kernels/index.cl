/* Index operators (docs/opencl.md §3.2, §7): Gather, the embedding bag (Gather + ReduceSum/Mean,
 * fused), GatherElements, OneHot, Trilu. Data of any element type as in copy.cl (cp_elem). A
 * kernel that reads indices never reads out of bounds: a bad index sets its step's status word
 * (`st[st_off]`, in the plan's arena, zeroed at each run's start) and the work-item reads
 * nothing; the host then re-runs the inputs on the CPU plan for the CPU engine's message. */

/* Element @i of an int64 (@idx64) or int32 index tensor. */
inline long
ix_load (__global const uchar *ix, ulong i, int idx64)
{
  return idx64 ? ((__global const long *) ix)[i] : (long) ((__global const int *) ix)[i];
}

/* @k wrapped into [0, len) when negative; -1 (and the status word set) when out of range. */
inline long
ix_wrap (long k, long len, __global uint *st, ulong st_off)
{
  if (k < 0)
    k += len;
  if (k < 0 || k >= len) {
    st[st_off] = 1u;
    return -1;
  }
  return k;
}

/* Gather (params.h's GatherParams): X as [outer, axis_len, inner], y[(o, j, c)] =
 * x[(o, idx[j], c)]. One work-item per output element; @n = outer · n_idx · max (inner, 1), so
 * that the indices are checked even when inner is 0 (as the CPU does). */
__kernel void
gather (__global const uchar *x, ulong x_off, __global const uchar *ix, ulong ix_off,
        __global uchar *y, ulong y_off, __global uint *st, ulong st_off, ulong n, long axis_len,
        long inner, long n_idx, int esize, int idx64)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long in1 = max (inner, 1L), c = (long) i % in1, t = (long) i / in1;
  long j = t % n_idx, o = t / n_idx;
  long k = ix_wrap (ix_load (ix, ix_off + (ulong) j, idx64), axis_len, st, st_off);
  if (k < 0 || inner == 0)
    return;
  cp_elem (y, y_off + (ulong) ((o * n_idx + j) * inner + c), x,
           x_off + (ulong) ((o * axis_len + k) * inner + c), esize);
}

/* The embedding bag (EmbeddingBagParams): y[b, d] = Σ_j table[ids[b, j], d] over the bag's ids in
 * order, in float from 0, then · @scale when @scaled (the mean): the CPU's additions in the CPU's
 * order, so the same bits. One work-item per (bag, column); @n = bags · max (dim, 1). */
__kernel void
embedding_bag (__global const float *table, ulong t_off, __global const long *ids, ulong ids_off,
               __global float *y, ulong y_off, __global uint *st, ulong st_off, ulong n, long rows,
               long dim, long per_bag, float scale, int scaled)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long dim1 = max (dim, 1L), b = (long) i / dim1, d = (long) i % dim1;
  float acc = 0.0f;
  for (long j = 0; j < per_bag; j++) {
    long k = ix_wrap (ids[ids_off + (ulong) (b * per_bag + j)], rows, st, st_off);
    if (k < 0)
      return;
    if (dim > 0)
      acc += table[t_off + (ulong) (k * dim + d)];
  }
  if (dim > 0)
    y[y_off + (ulong) (b * dim + d)] = scaled ? acc * scale : acc;
}

/* GatherElements (GatherElementsParams): output element @i at index (i₀ … i_{r−1}) of the
 * indices' shape @dims reads data at Σ i_d · strides[d] (0 on the axis) + idx[i] · axis_stride. */
__kernel void
gather_elements (__global const uchar *x, ulong x_off, __global const uchar *ix, ulong ix_off,
                 __global uchar *y, ulong y_off, __global uint *st, ulong st_off, ulong n, int rank,
                 long8 dims, long8 strides, long axis_len, long axis_stride, int esize, int idx64)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long k = ix_wrap (ix_load (ix, ix_off + i, idx64), axis_len, st, st_off);
  if (k < 0)
    return;
  long src = cp_source (i, rank, dims, strides, k * axis_stride);
  cp_elem (y, y_off + i, x, x_off + (ulong) src, esize);
}

/* The SedpNnDType codes OneHot's indices may have (sdk/sedp/engine.h). */
#define IX_FLOAT 1
#define IX_UINT8 2
#define IX_INT8 3
#define IX_INT32 6
#define IX_INT64 7
#define IX_BOOL 9
#define IX_DOUBLE 11

/* OneHot's index @i as the position it selects in [0, depth), or -1: the CPU converts the value
 * to double, truncates it to an integer (a non-finite value selects nothing) and wraps a
 * negative one. A float or double of magnitude 2³² or more selects nothing (depth ≤ 2³⁰); below
 * that its truncation is exact, and the integer rule follows. */
inline long
ix_onehot (__global const uchar *ix, ulong i, int idtype, long depth)
{
  long k;
  if (idtype == IX_FLOAT) {
    float v = ((__global const float *) ix)[i];
    if (!(fabs (v) < 4294967296.0f))
      return -1;
    k = (long) v;
#ifdef NN_HAVE_FP64
  } else if (idtype == IX_DOUBLE) { /* lowered only on fp64 devices */
    double v = ((__global const double *) ix)[i];
    if (!(fabs (v) < 4294967296.0))
      return -1;
    k = (long) v;
#endif
  } else if (idtype == IX_INT64) {
    k = ((__global const long *) ix)[i];
  } else if (idtype == IX_INT32) {
    k = ((__global const int *) ix)[i];
  } else if (idtype == IX_INT8) {
    k = ((__global const char *) ix)[i];
  } else {
    k = ix[i]; /* uint8, bool */
  }
  if (k < 0)
    k += depth;
  return k >= 0 && k < depth ? k : -1;
}

/* OneHot (OneHotParams): the output as [outer, depth, inner]; element (o, d, c) is @on when the
 * index at (o, c) selects d, else @off (the values' bytes in the low bytes of a ulong). */
__kernel void
onehot (__global const uchar *ix, ulong ix_off, __global uchar *y, ulong y_off, ulong n,
        long depth, long inner, int idtype, ulong on, ulong off, int esize)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long c = (long) i % inner, t = (long) i / inner, d = t % depth, o = t / depth;
  ulong v = ix_onehot (ix, ix_off + (ulong) (o * inner + c), idtype, depth) == d ? on : off;
  if (esize == 8)
    ((__global ulong *) y)[y_off + i] = v;
  else if (esize == 4)
    ((__global uint *) y)[y_off + i] = (uint) v;
  else
    y[y_off + i] = (uchar) v;
}

/* Trilu (TriluParams): per matrix of [rows, cols], element (r, j) kept when j − r ≥ k (upper) or
 * j − r ≤ k (lower), else zero (all bits 0 in every element type). */
__kernel void
trilu (__global const uchar *x, ulong x_off, __global uchar *y, ulong y_off, ulong n, long rows,
       long cols, long k, int upper, int esize)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long j = (long) i % cols, r = ((long) i / cols) % rows;
  if (upper ? j - r >= k : j - r <= k) {
    cp_elem (y, y_off + i, x, x_off + i, esize);
  } else if (esize == 8) {
    ((__global ulong *) y)[y_off + i] = 0;
  } else if (esize == 4) {
    ((__global uint *) y)[y_off + i] = 0;
  } else {
    y[y_off + i] = 0;
  }
}
