/* Elementwise kernels over a numpy broadcast (docs/opencl.md §3.2): Add … Div, the comparisons,
 * And/Or/Xor, Mod, Pow, PRelu, Where and the steps of a variadic Sum/Max/Min/Mean. One kernel per
 * operand type class, the operation chosen by `int op` (an NnElemOp of core/nn/exec/params.h,
 * checked in lower-elementwise.c), one work-item per output element. Where each operand's element
 * of output element i is, by `int layout`:
 *   NN_LAYOUT_FLAT  every operand has the output's shape: element i;
 *   NN_LAYOUT_BLOCK operand k is broadcast over leading and trailing axes only (a scalar, a row, a
 *                   column, a block): element (i / q) % p, with (q, p) in components 0 and 1 of
 *                   its long8 (p 0: no modulo);
 *   NN_LAYOUT_ND    the general walk: i split by `dims` (rank axes), the operand's element
 *                   Σ idx[d] · strides[d] from its long8 of strides (0 along broadcast axes).
 * Each result is computed as the CPU engine's loops do (core/nn/exec/ops-math.c, ops-logic.c,
 * ops-act.c), including NaN, ±∞, −0 and the int64 cases. */

#define NN_ELEM_ADD 0
#define NN_ELEM_SUB 1
#define NN_ELEM_MUL 2
#define NN_ELEM_DIV 3
#define NN_ELEM_EQUAL 4
#define NN_ELEM_LESS 5
#define NN_ELEM_GREATER 6
#define NN_ELEM_LESS_OR_EQUAL 7
#define NN_ELEM_GREATER_OR_EQUAL 8
#define NN_ELEM_AND 9
#define NN_ELEM_OR 10
#define NN_ELEM_XOR 11
#define NN_ELEM_FMOD 12
#define NN_ELEM_MOD 13
#define NN_ELEM_POW 14
#define NN_ELEM_POW2 15
#define NN_ELEM_POW_HALF 16
#define NN_ELEM_PRELU 17
#define NN_ELEM_WHERE 18
#define NN_ELEM_MAX 19
#define NN_ELEM_MIN 20

#define NN_LAYOUT_FLAT 0
#define NN_LAYOUT_BLOCK 1
#define NN_LAYOUT_ND 2

/* Operand element of output element @i in the BLOCK layout. */
inline ulong
nn_block_off (ulong i, long8 w)
{
  ulong o = w.s0 > 1 ? i / (ulong) w.s0 : i;
  return w.s1 > 0 ? o % (ulong) w.s1 : o;
}

/* The elements of the first @n (2 or 3) operands for output element @i (see the layouts above). */
inline void
nn_walk (ulong i, int layout, int rank, long8 dims, long8 w0, long8 w1, long8 w2, int n, ulong *o)
{
  if (layout == NN_LAYOUT_FLAT) {
    o[0] = o[1] = o[2] = i;
    return;
  }
  if (layout == NN_LAYOUT_BLOCK) {
    o[0] = nn_block_off (i, w0);
    o[1] = nn_block_off (i, w1);
    o[2] = n > 2 ? nn_block_off (i, w2) : 0;
    return;
  }
  long d[8], s0[8], s1[8], s2[8];
  vstore8 (dims, 0, d);
  vstore8 (w0, 0, s0);
  vstore8 (w1, 0, s1);
  vstore8 (w2, 0, s2);
  ulong r = i, a = 0, b = 0, c = 0;
  for (int k = rank - 1; k >= 0; k--) {
    ulong idx = r % (ulong) d[k];
    r /= (ulong) d[k];
    a += idx * (ulong) s0[k];
    b += idx * (ulong) s1[k];
    c += idx * (ulong) s2[k];
  }
  o[0] = a, o[1] = b, o[2] = n > 2 ? c : 0;
}

/* ---- the operations, per type class ---- */

inline float
nn_pow_f (float x, float y)
{
#ifdef NN_HAVE_FP64
  return (float) pow ((double) x, (double) y); /* the CPU's: in double, rounded once */
#else
  return pow (x, y);
#endif
}

/* float ∘ float → float. */
inline float
nn_bin_f (float x, float y, int op)
{
  switch (op) {
  case NN_ELEM_ADD: return x + y;
  case NN_ELEM_SUB: return x - y;
  case NN_ELEM_MUL: return x * y;
  case NN_ELEM_DIV: return x / y;
  case NN_ELEM_FMOD: return fmod (x, y);
  case NN_ELEM_POW: return nn_pow_f (x, y);
  case NN_ELEM_POW2: return x * x;
  /* pow (x, 0.5): +∞ for −∞ and +0 for −0, where sqrt gives NaN and −0 */
  case NN_ELEM_POW_HALF: return x == -INFINITY ? INFINITY : sqrt (x) + 0.0f;
  case NN_ELEM_PRELU: return x < 0.0f ? x * y : x;
  case NN_ELEM_MAX: return x >= y || isnan (x) ? x : y; /* NaN wins, as numpy */
  case NN_ELEM_MIN: return x <= y || isnan (x) ? x : y;
  default: return x;
  }
}

/* −x with two's complement wrap-around at LONG_MIN. */
inline long
nn_neg_l (long x)
{
  return (long) (0 - (ulong) x);
}

/* The truncated remainder with the CPU's OP_IREM guards (0 for y 0 or −1). */
inline long
nn_irem (long x, long y)
{
  return y == 0 || y == -1 ? 0 : x % y;
}

/* long ∘ long → long: Div by 0 is 0, Mod floored (the divisor's sign), fmod truncated. */
inline long
nn_bin_l (long x, long y, int op)
{
  switch (op) {
  case NN_ELEM_ADD: return (long) ((ulong) x + (ulong) y);
  case NN_ELEM_SUB: return (long) ((ulong) x - (ulong) y);
  case NN_ELEM_MUL: return (long) ((ulong) x * (ulong) y);
  case NN_ELEM_DIV: return y == 0 ? 0 : y == -1 ? nn_neg_l (x) : x / y;
  case NN_ELEM_FMOD: return nn_irem (x, y);
  case NN_ELEM_MOD: {
    long r = nn_irem (x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
  }
  case NN_ELEM_MAX: return x >= y ? x : y;
  case NN_ELEM_MIN: return x <= y ? x : y;
  default: return x;
  }
}

#define NN_COMPARE(x, y, op)                                                                      \
  ((op) == NN_ELEM_EQUAL ? (x) == (y)                                                             \
   : (op) == NN_ELEM_LESS ? (x) < (y)                                                             \
   : (op) == NN_ELEM_GREATER ? (x) > (y)                                                          \
   : (op) == NN_ELEM_LESS_OR_EQUAL ? (x) <= (y)                                                   \
   : (x) >= (y))

inline uchar
nn_cmp_f (float x, float y, int op)
{
  return NN_COMPARE (x, y, op) ? 1 : 0;
}

inline uchar
nn_cmp_l (long x, long y, int op)
{
  return NN_COMPARE (x, y, op) ? 1 : 0;
}

inline uchar
nn_cmp_i (int x, int y, int op)
{
  return NN_COMPARE (x, y, op) ? 1 : 0;
}

/* bool ∘ bool → bool (any non-zero byte is true). */
inline uchar
nn_bin_b (uchar x, uchar y, int op)
{
  switch (op) {
  case NN_ELEM_AND: return x && y;
  case NN_ELEM_OR: return x || y;
  case NN_ELEM_XOR: return !x != !y;
  default: return !x == !y; /* Equal */
  }
}

/* float ∘ integer exponent → float: the exponent converted to double, as the CPU. */
inline float
nn_pow_fl (float x, long y, int op)
{
#ifdef NN_HAVE_FP64
  return (float) pow ((double) x, (double) y);
#else
  return pow (x, (float) y);
#endif
}

inline float
nn_pow_fi (float x, int y, int op)
{
  return nn_pow_fl (x, (long) y, op);
}

/* y[i] = FN (a[·], b[·], op) over the walk. */
#define NN_BCAST2(NAME, TA, TB, TY, FN)                                                           \
  __kernel void NAME (__global const TA *a, ulong a_off, __global const TB *b, ulong b_off,       \
                      __global TY *y, ulong y_off, ulong n, int op, int layout, int rank,         \
                      long8 dims, long8 wa, long8 wb)                                             \
  {                                                                                               \
    size_t i = get_global_id (0);                                                                 \
    if (i >= n)                                                                                   \
      return;                                                                                     \
    ulong o[3];                                                                                   \
    nn_walk (i, layout, rank, dims, wa, wb, wb, 2, o);                                            \
    y[y_off + i] = FN (a[a_off + o[0]], b[b_off + o[1]], op);                                     \
  }

NN_BCAST2 (bin_f, float, float, float, nn_bin_f)
NN_BCAST2 (bin_l, long, long, long, nn_bin_l)
NN_BCAST2 (cmp_f, float, float, uchar, nn_cmp_f)
NN_BCAST2 (cmp_l, long, long, uchar, nn_cmp_l)
NN_BCAST2 (cmp_i, int, int, uchar, nn_cmp_i)
NN_BCAST2 (bin_b, uchar, uchar, uchar, nn_bin_b)
NN_BCAST2 (pow_fl, float, long, float, nn_pow_fl)
NN_BCAST2 (pow_fi, float, int, float, nn_pow_fi)

/* Where: out[i] = c[·] ? x[·] : y[·], elements moved as bytes of their size (1, 4 or 8). */
#define NN_WHERE(NAME, T)                                                                         \
  __kernel void NAME (__global const uchar *c, ulong c_off, __global const T *x, ulong x_off,     \
                      __global const T *y, ulong y_off, __global T *out, ulong out_off, ulong n,  \
                      int layout, int rank, long8 dims, long8 wc, long8 wx, long8 wy)             \
  {                                                                                               \
    size_t i = get_global_id (0);                                                                 \
    if (i >= n)                                                                                   \
      return;                                                                                     \
    ulong o[3];                                                                                   \
    nn_walk (i, layout, rank, dims, wc, wx, wy, 3, o);                                            \
    out[out_off + i] = c[c_off + o[0]] ? x[x_off + o[1]] : y[y_off + o[2]];                       \
  }

NN_WHERE (where_1, uchar)
NN_WHERE (where_4, uint)
NN_WHERE (where_8, ulong)
