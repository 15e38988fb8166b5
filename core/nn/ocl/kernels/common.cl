/* What every kernel file shares (docs/opencl.md §3, §8): no contraction of a·b + c into an FMA
 * (GCC contracts a few of the CPU engine's vectorised loops, HardSigmoid's: the tests bound those
 * by their terms), the float functions of the CPU engine's Activation enum
 * (core/nn/exec/params.h; the codes are checked there at compile time), and the element copies
 * of copy.cl and index.cl. Every other file uses only what is defined here. */
#pragma OPENCL FP_CONTRACT OFF

#define NN_ACT_NONE 0
#define NN_ACT_RELU 1
#define NN_ACT_SIGMOID 2
#define NN_ACT_TANH 3
#define NN_ACT_LEAKY_RELU 4
#define NN_ACT_EXP 5
#define NN_ACT_LOG 6
#define NN_ACT_SQRT 7
#define NN_ACT_NEG 8
#define NN_ACT_ABS 9
#define NN_ACT_RECIPROCAL 10
#define NN_ACT_ERF 11
#define NN_ACT_FLOOR 12
#define NN_ACT_CEIL 13
#define NN_ACT_SIGN 14
#define NN_ACT_SIN 15
#define NN_ACT_COS 16
#define NN_ACT_ROUND 17

/* act (x) as the CPU engine's nn_map_activation computes it (Sigmoid and Tanh within a few ulp of
 * its vectorised functions; Erf in double where the device has it, as the CPU). */
inline float
nn_act (float x, int act, float alpha)
{
  switch (act) {
  case NN_ACT_RELU: return x > 0.0f ? x : 0.0f;
  case NN_ACT_SIGMOID: return 1.0f / (1.0f + exp (-x));
  case NN_ACT_TANH: return tanh (x);
  case NN_ACT_LEAKY_RELU: return x >= 0.0f ? x : x * alpha;
  case NN_ACT_EXP: return exp (x);
  case NN_ACT_LOG: return log (x);
  case NN_ACT_SQRT: return sqrt (x);
  case NN_ACT_NEG: return -x;
  case NN_ACT_ABS: return fabs (x);
  case NN_ACT_RECIPROCAL: return 1.0f / x;
#ifdef NN_HAVE_FP64
  case NN_ACT_ERF: return (float) erf ((double) x);
#else
  case NN_ACT_ERF: return erf (x);
#endif
  case NN_ACT_FLOOR: return floor (x);
  case NN_ACT_CEIL: return ceil (x);
  case NN_ACT_SIGN: return isnan (x) ? x : x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
  case NN_ACT_SIN: return sin (x);
  case NN_ACT_COS: return cos (x);
  case NN_ACT_ROUND: return rint (x);
  default: return x;
  }
}

/* ---- element copies (copy.cl, index.cl) ---- */

/* y[yi] = x[xi], elements of @esize bytes. */
inline void
cp_elem (__global uchar *y, ulong yi, __global const uchar *x, ulong xi, int esize)
{
  if (esize == 8)
    ((__global ulong *) y)[yi] = ((__global const ulong *) x)[xi];
  else if (esize == 4)
    ((__global uint *) y)[yi] = ((__global const uint *) x)[xi];
  else
    y[yi] = x[xi];
}

/* The source element of output element @i of a strided copy (params.h's CopyParams): @i split
 * over @dims (row-major), src = base + Σ idx[d] · strides[d]; strides may be 0 (Expand, Tile's
 * repeats) or negative (Slice with a negative step). */
inline long
cp_source (ulong i, int rank, long8 dims, long8 strides, long base)
{
  long d[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
  long st[8] = {strides.s0, strides.s1, strides.s2, strides.s3,
                strides.s4, strides.s5, strides.s6, strides.s7};
  long src = base, rest = (long) i;
  for (int k = rank - 1; k >= 0; k--) {
    src += (rest % d[k]) * st[k];
    rest /= d[k];
  }
  return src;
}
