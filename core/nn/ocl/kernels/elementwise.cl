/* Elementwise kernels of one operand, same shape in and out (docs/opencl.md §3.2): the unary
 * functions (Activation codes of core/nn/exec/params.h), Neg and Abs of int64, the activations
 * with attributes (ParamAct codes), Clip, Not, IsNaN/IsInf and Cast. One work-item per element,
 * the global size rounded up to the kernel's fixed local size (hence the `i >= n` guard), every
 * operand a buffer plus an element offset. Each computes what the CPU engine's loop computes
 * (core/nn/exec/ops-math.c, ops-act.c, ops-logic.c). */

/* unary_f's extra code beyond the Activation enum: y = x / alpha (Mean's division by n). */
#define NN_UNARY_DIV 100

/* y[i] = act (x[i]) (nn_act), or x[i] / alpha for NN_UNARY_DIV; act 0 (none) copies. */
__kernel void
unary_f (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n, int act,
         float alpha)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float v = x[x_off + i];
  y[y_off + i] = act == NN_UNARY_DIV ? v / alpha : nn_act (v, act, alpha);
}

/* int64: Neg and Abs wrap at LONG_MIN as two's complement does; any other act copies. */
__kernel void
unary_l (__global const long *x, ulong x_off, __global long *y, ulong y_off, ulong n, int act)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long v = x[x_off + i];
  long neg = (long) (0 - (ulong) v);
  y[y_off + i] = act == NN_ACT_NEG ? neg : act == NN_ACT_ABS && v < 0 ? neg : v;
}

/* The ParamAct codes of core/nn/exec/params.h. */
#define NN_PACT_SOFTPLUS 0
#define NN_PACT_SOFTSIGN 1
#define NN_PACT_ELU 2
#define NN_PACT_SELU 3
#define NN_PACT_CELU 4
#define NN_PACT_HARD_SIGMOID 5
#define NN_PACT_HARD_SWISH 6
#define NN_PACT_THRESHOLDED_RELU 7

/* max (0, min (1, alpha·x + beta)); NaN stays NaN. alpha·x + beta rounded once (fma), as the CPU
 * engine's optimised build computes it (GCC contracts its loop into an FMA in the AVX2 and
 * AVX-512 clones; at -O0 it rounds twice): the two differ near x = −beta/alpha, where the sum
 * cancels, by half an ulp of alpha·x. */
inline float
nn_hard_sigmoid (float x, float a, float b)
{
  float v = fma (a, x, b);
  return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

inline float
nn_param_act (float v, int act, float a, float b)
{
  switch (act) {
  case NN_PACT_SOFTPLUS: return v > 0.0f ? v + log1p (exp (-v)) : log1p (exp (v));
  case NN_PACT_SOFTSIGN: return v / (1.0f + fabs (v));
  case NN_PACT_ELU: return v < 0.0f ? a * expm1 (v) : v;
  case NN_PACT_SELU: return v <= 0.0f ? b * a * expm1 (v) : b * v;
  case NN_PACT_CELU: return v > 0.0f ? v : a * expm1 (v / a);
  case NN_PACT_HARD_SIGMOID: return nn_hard_sigmoid (v, a, b);
  case NN_PACT_HARD_SWISH: return v * nn_hard_sigmoid (v, a, b);
  default: return v > a ? v : 0.0f; /* ThresholdedRelu */
  }
}

/* Softplus … ThresholdedRelu with their attributes (alpha; beta is HardSigmoid's beta and
 * Selu's gamma). */
__kernel void
param_act (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n, int act,
           float alpha, float beta)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  y[y_off + i] = nn_param_act (x[x_off + i], act, alpha, beta);
}

/* Clip to [lo, hi] (±∞ when absent); NaN passes through. */
__kernel void
clip (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n, float lo,
      float hi)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float v = x[x_off + i];
  y[y_off + i] = v < lo ? lo : (v > hi ? hi : v);
}

/* Not of bool. */
__kernel void
logic_not (__global const uchar *x, ulong x_off, __global uchar *y, ulong y_off, ulong n)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  y[y_off + i] = !x[x_off + i];
}

/* IsNaN (@is_nan), else IsInf with detect_positive (@pos) and detect_negative (@neg). */
__kernel void
logic_is (__global const float *x, ulong x_off, __global uchar *y, ulong y_off, ulong n,
          int is_nan, int pos, int neg)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float v = x[x_off + i];
  y[y_off + i] = is_nan ? isnan (v) != 0 : (pos && v == INFINITY) || (neg && v == -INFINITY);
}

/* ---- Cast: one kernel per source type, the target (a SedpNnDType code) chosen by `to`; the
 * output buffer is typed by the target inside, its offset in the target's elements ---- */

#define NN_DT_FLOAT 1
#define NN_DT_UINT8 2
#define NN_DT_INT8 3
#define NN_DT_INT32 6
#define NN_DT_INT64 7
#define NN_DT_BOOL 9
#define NN_DT_DOUBLE 11

/* A float's integer value as the CPU's load_as_int computes it: truncated toward 0, 0 for NaN
 * and ±∞; beyond the int64 range LONG_MIN, as x86's cvttsd2si gives (C leaves it undefined). */
#define NN_TO_LONG_FP(v) \
  (!isfinite (v) ? 0L : (v) >= 0x1p63f || (v) < -0x1p63f ? LONG_MIN : convert_long_rtz (v))
#define NN_TO_LONG_INT(v) ((long) (v))

#ifdef NN_HAVE_FP64
#define NN_CAST_TO_DOUBLE(v) \
  case NN_DT_DOUBLE: ((__global double *) y)[y_off + i] = (double) (v); break;
#else
#define NN_CAST_TO_DOUBLE(v)
#endif

/* y[i] = (to) x[i]: float by one rounding (to nearest even), integers through int64 (narrowed
 * by two's complement wrap-around), bool x != 0 (NaN is true). */
#define NN_CAST(NAME, T, TO_LONG)                                                                 \
  __kernel void NAME (__global const T *x, ulong x_off, __global uchar *y, ulong y_off, ulong n,  \
                      int to)                                                                     \
  {                                                                                               \
    size_t i = get_global_id (0);                                                                 \
    if (i >= n)                                                                                   \
      return;                                                                                     \
    T v = x[x_off + i];                                                                           \
    switch (to) {                                                                                 \
    case NN_DT_FLOAT: ((__global float *) y)[y_off + i] = (float) v; break;                       \
    NN_CAST_TO_DOUBLE (v)                                                                         \
    case NN_DT_INT64: ((__global long *) y)[y_off + i] = TO_LONG (v); break;                      \
    case NN_DT_INT32: ((__global int *) y)[y_off + i] = (int) TO_LONG (v); break;                 \
    case NN_DT_INT8: ((__global char *) y)[y_off + i] = (char) TO_LONG (v); break;                \
    case NN_DT_UINT8: y[y_off + i] = (uchar) TO_LONG (v); break;                                  \
    default: y[y_off + i] = v != 0; break; /* bool */                                             \
    }                                                                                             \
  }

NN_CAST (cast_f, float, NN_TO_LONG_FP)
NN_CAST (cast_l, long, NN_TO_LONG_INT)
NN_CAST (cast_i, int, NN_TO_LONG_INT)
NN_CAST (cast_c, char, NN_TO_LONG_INT)
NN_CAST (cast_uc, uchar, NN_TO_LONG_INT)
#ifdef NN_HAVE_FP64
NN_CAST (cast_d, double, NN_TO_LONG_FP)
#endif
