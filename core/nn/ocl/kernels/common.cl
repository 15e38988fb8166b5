/* What every kernel file shares (docs/opencl.md §3, §8): no contraction of a·b + c into an FMA
 * (the CPU engine does not contract either), and the float functions of the CPU engine's
 * Activation enum (core/nn/exec/params.h; the codes are checked there at compile time). */
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
