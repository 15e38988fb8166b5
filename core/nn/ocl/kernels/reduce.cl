/* Reductions and the lane kernels (docs/opencl.md §3.2): the ten Reduce operators (float; int64
 * ReduceMax/Min), ArgMax/ArgMin, TopK and CumSum, each computing what the CPU kernels of
 * core/nn/exec/ops-tensor.c and ops-index.c compute, in their order. A work-item per output
 * element (reductions) or per lane (the rest). The operation codes are the CPU engine's ReduceOp
 * (core/nn/exec/params.h; checked in core/nn/ocl/lower-reduce.c). */

#define NN_RED_SUM 0
#define NN_RED_MEAN 1
#define NN_RED_MAX 2
#define NN_RED_MIN 3
#define NN_RED_PROD 4
#define NN_RED_L2 5
#define NN_RED_SUM_SQUARE 6
#define NN_RED_LOG_SUM_EXP 7
#define NN_RED_L1 8
#define NN_RED_LOG_SUM 9

/* What the CPU accumulates in double: double where the device has it, else float. */
#ifdef NN_HAVE_FP64
typedef double nn_wide;
#else
typedef float nn_wide;
#endif

/* The value of a reduction over nothing: 0 for sums, ±∞ for Max/Min, 1 for Prod. */
inline float
nn_red_identity (int op)
{
  return op == NN_RED_MAX || op == NN_RED_LOG_SUM_EXP ? -INFINITY
         : op == NN_RED_MIN                          ? INFINITY
         : op == NN_RED_PROD                         ? 1.0f
                                                     : 0.0f;
}

/* a ⊕ x, as the CPU's reduce_combine (Max and Min propagate NaN), in float and in nn_wide. */
#define NN_RED_COMBINE(T)                                                                          \
  inline T nn_red_combine_##T (int op, T a, T x)                                                   \
  {                                                                                                \
    switch (op) {                                                                                  \
    case NN_RED_MAX:                                                                               \
    case NN_RED_LOG_SUM_EXP: return x > a || x != x ? x : a;                                       \
    case NN_RED_MIN: return x < a || x != x ? x : a;                                               \
    case NN_RED_PROD: return a * x;                                                                \
    case NN_RED_L2:                                                                                \
    case NN_RED_SUM_SQUARE: return a + x * x;                                                      \
    case NN_RED_L1: return a + fabs (x);                                                           \
    default: return a + x;                                                                         \
    }                                                                                              \
  }

NN_RED_COMBINE (float)
#ifdef NN_HAVE_FP64
NN_RED_COMBINE (double)
#define nn_red_combine_wide nn_red_combine_double
#else
#define nn_red_combine_wide nn_red_combine_float
#endif

/* The output from the wide accumulator (the CPU's reduce_final): Mean's division, L2's root,
 * LogSum's logarithm. */
inline float
nn_red_final (int op, nn_wide acc, long divisor)
{
  return (float) (op == NN_RED_MEAN      ? acc / (nn_wide) divisor
                  : op == NN_RED_L2      ? sqrt (acc)
                  : op == NN_RED_LOG_SUM ? log (acc)
                                         : acc);
}

/* log Σ exp(x - m) + m over a lane whose maximum m is finite (the second pass of LogSumExp). */
inline nn_wide
nn_red_lse (__global const float *x, long n, long stride, nn_wide m)
{
  nn_wide s = 0;
  for (long r = 0; r < n; r++)
    s += exp ((nn_wide) x[r * stride] - m);
  return m + log (s);
}

/* One lane of @n elements @stride apart, accumulated in nn_wide (the CPU's reduce_lane). */
inline float
nn_red_lane_wide (int op, __global const float *x, long n, long stride, long divisor)
{
  nn_wide acc = (nn_wide) nn_red_identity (op);
  for (long r = 0; r < n; r++)
    acc = nn_red_combine_wide (op, acc, (nn_wide) x[r * stride]);
  if (op == NN_RED_LOG_SUM_EXP && isfinite (acc))
    acc = nn_red_lse (x, n, stride, acc);
  return nn_red_final (op, acc, divisor);
}

/* One lane accumulated in float, finished as the CPU's reduce_finish (the [outer, red, inner]
 * case with inner > 1, which the CPU sums row by row in float). */
inline float
nn_red_lane_float (int op, __global const float *x, long n, long stride, long divisor)
{
  float acc = nn_red_identity (op);
  for (long r = 0; r < n; r++)
    acc = nn_red_combine_float (op, acc, x[r * stride]);
  switch (op) {
  case NN_RED_MEAN: return (float) ((nn_wide) acc / (nn_wide) divisor);
  case NN_RED_L2: return sqrt (acc);
  case NN_RED_LOG_SUM: return log (acc);
  case NN_RED_LOG_SUM_EXP: return isfinite (acc) ? (float) nn_red_lse (x, n, stride, acc) : acc;
  default: return acc;
  }
}

/* The contiguous case [outer, red, inner] → [outer, inner]: output i reduces the @red elements
 * @inner apart from (i / inner) · red · inner + i % inner. @wide: accumulate in double (the CPU
 * does when inner is 1), else in float. */
__kernel void
reduce_inner (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n,
              long red, long inner, int op, int wide, long divisor)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long o = (long) i / inner, k = (long) i % inner;
  __global const float *px = x + x_off + o * red * inner + k;
  y[y_off + i] = wide ? nn_red_lane_wide (op, px, red, inner, divisor)
                      : nn_red_lane_float (op, px, red, inner, divisor);
}

/* The input offset of entry @j of a row-major index space of @rank axes (@dims) whose axes are
 * @strides apart in the input. */
inline long
nn_red_offset (long j, int rank, long8 dims, long8 strides)
{
  long d[8], s[8], off = 0;
  vstore8 (dims, 0, d);
  vstore8 (strides, 0, s);
  for (int a = rank - 1; a >= 0; a--) {
    off += (j % d[a]) * s[a];
    j /= d[a];
  }
  return off;
}

/* The general case: output i is the kept axes' index (@kdims, input strides @kstrides) and
 * reduces the @nred elements of the reduced axes (@rdims, @rstrides) in row-major order, the
 * CPU's order, accumulated in double. */
__kernel void
reduce_nd (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n,
           int krank, long8 kdims, long8 kstrides, int rrank, long8 rdims, long8 rstrides,
           long nred, int op, long divisor)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  __global const float *px = x + x_off + nn_red_offset ((long) i, krank, kdims, kstrides);
  nn_wide acc = (nn_wide) nn_red_identity (op);
  for (long r = 0; r < nred; r++)
    acc = nn_red_combine_wide (op, acc, (nn_wide) px[nn_red_offset (r, rrank, rdims, rstrides)]);
  if (op == NN_RED_LOG_SUM_EXP && isfinite (acc)) {
    nn_wide s = 0;
    for (long r = 0; r < nred; r++)
      s += exp ((nn_wide) px[nn_red_offset (r, rrank, rdims, rstrides)] - acc);
    acc += log (s);
  }
  y[y_off + i] = nn_red_final (op, acc, divisor);
}

/* int64 ReduceMax (@max) or ReduceMin over the general layout; over nothing, the type's
 * minimum (Max) or maximum (Min). */
__kernel void
reduce_nd_l (__global const long *x, ulong x_off, __global long *y, ulong y_off, ulong n,
             int krank, long8 kdims, long8 kstrides, int rrank, long8 rdims, long8 rstrides,
             long nred, int max)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  __global const long *px = x + x_off + nn_red_offset ((long) i, krank, kdims, kstrides);
  long acc = max ? LONG_MIN : LONG_MAX;
  for (long r = 0; r < nred; r++) {
    long v = px[nn_red_offset (r, rrank, rdims, rstrides)];
    acc = max ? (acc > v ? acc : v) : (acc < v ? acc : v);
  }
  y[y_off + i] = acc;
}

/* ---- lanes: X as [outer, len, inner], lane i starts at (i / inner) · len · inner + i % inner,
 * its elements inner apart ---- */

inline long
nn_lane_start (size_t i, long len, long inner)
{
  return (long) i / inner * len * inner + (long) i % inner;
}

/* ArgMax (@max) or ArgMin: the index of the first extreme (the last with @last); NaN is the
 * extreme of both, as the CPU's arg_better_f. y is [outer, inner]. */
__kernel void
arg_lane_f (__global const float *x, ulong x_off, __global long *y, ulong y_off, ulong lanes,
            long len, long inner, int max, int last)
{
  size_t i = get_global_id (0);
  if (i >= lanes)
    return;
  __global const float *px = x + x_off + nn_lane_start (i, len, inner);
  long best = 0;
  for (long k = 1; k < len; k++) {
    float v = px[k * inner], b = px[best * inner];
    bool better = last ? (max ? v >= b : v <= b) || isnan (v)
                       : (max ? v > b : v < b) || (isnan (v) && !isnan (b));
    if (better)
      best = k;
  }
  y[y_off + i] = best;
}

__kernel void
arg_lane_l (__global const long *x, ulong x_off, __global long *y, ulong y_off, ulong lanes,
            long len, long inner, int max, int last)
{
  size_t i = get_global_id (0);
  if (i >= lanes)
    return;
  __global const long *px = x + x_off + nn_lane_start (i, len, inner);
  long best = 0;
  for (long k = 1; k < len; k++) {
    long v = px[k * inner], b = px[best * inner];
    if (last ? (max ? v >= b : v <= b) : (max ? v > b : v < b))
      best = k;
  }
  y[y_off + i] = best;
}

/* Whether u (at a larger index) goes before v in TopK's order: by value, largest or smallest
 * first, NaN after every number; equal values (and two NaN) keep the smaller index first. */
inline bool
nn_topk_before_f (float u, float v, int largest)
{
  if (isnan (u) != isnan (v))
    return isnan (v);
  return !isnan (u) && u != v && (largest ? u > v : u < v);
}

inline bool
nn_topk_before_l (long u, long v, int largest)
{
  return u != v && (largest ? u > v : u < v);
}

/* TopK of one lane by insertion into its k outputs (y and yi are [outer, k, inner]): the CPU's
 * sorted order (kernel_topk). O(len · k) per lane in the worst case. */
#define NN_TOPK_LANE(NAME, T, BEFORE)                                                              \
  __kernel void NAME (__global const T *x, ulong x_off, __global T *y, ulong y_off,                \
                      __global long *yi, ulong yi_off, ulong lanes, long len, long inner, long k,  \
                      int largest)                                                                 \
  {                                                                                                \
    size_t i = get_global_id (0);                                                                  \
    if (i >= lanes)                                                                                \
      return;                                                                                      \
    __global const T *px = x + x_off + nn_lane_start (i, len, inner);                              \
    long out = (long) i / inner * k * inner + (long) i % inner;                                    \
    __global T *py = y + y_off + out;                                                              \
    __global long *pi = yi + yi_off + out;                                                         \
    long filled = 0;                                                                               \
    for (long j = 0; j < len; j++) {                                                               \
      T u = px[j * inner];                                                                         \
      long pos = filled;                                                                           \
      while (pos > 0 && BEFORE (u, py[(pos - 1) * inner], largest))                                \
        pos--;                                                                                     \
      if (pos >= k)                                                                                \
        continue;                                                                                  \
      for (long q = min (filled, k - 1); q > pos; q--) {                                           \
        py[q * inner] = py[(q - 1) * inner];                                                       \
        pi[q * inner] = pi[(q - 1) * inner];                                                       \
      }                                                                                            \
      py[pos * inner] = u;                                                                         \
      pi[pos * inner] = j;                                                                         \
      filled = min (filled + 1, k);                                                                \
    }                                                                                              \
  }

NN_TOPK_LANE (topk_lane_f, float, nn_topk_before_f)
NN_TOPK_LANE (topk_lane_l, long, nn_topk_before_l)

/* CumSum of one lane, forward or @reverse, inclusive or @exclusive, in the CPU's order and
 * type (float or int64). y may be x. */
#define NN_CUMSUM_LANE(NAME, T, A)                                                                 \
  __kernel void NAME (__global const T *x, ulong x_off, __global T *y, ulong y_off, ulong lanes,   \
                      long len, long inner, int exclusive, int reverse)                            \
  {                                                                                                \
    size_t i = get_global_id (0);                                                                  \
    if (i >= lanes)                                                                                \
      return;                                                                                      \
    long start = nn_lane_start (i, len, inner);                                                    \
    A acc = 0;                                                                                     \
    for (long n = 0; n < len; n++) {                                                               \
      long at = start + (reverse ? len - 1 - n : n) * inner;                                       \
      A v = (A) x[x_off + at];                                                                     \
      y[y_off + at] = (T) (exclusive ? acc : acc + v);                                             \
      acc += v;                                                                                    \
    }                                                                                              \
  }

NN_CUMSUM_LANE (cumsum_lane_f, float, float)
NN_CUMSUM_LANE (cumsum_lane_l, long, ulong) /* int64 sums wrap, as the CPU's */
