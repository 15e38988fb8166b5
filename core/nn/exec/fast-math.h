/* sedp — sigmoid, tanh and exp for the hot loops: branch-free polynomials that GCC vectorizes
 * (libm's expf and tanhf, one call per element, took 70 % of a GRU and most of a Tanh MLP).
 * Within 2 ulp of the exact values over the float range. */
#pragma once

#include <glib.h>
#include <string.h>

/* Loops over these functions are vectorized with GCC's dynamic cost model: the default of -O2
 * (very cheap) leaves loops with selects or a remainder scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#define NN_VECTORIZE __attribute__ ((optimize ("vect-cost-model=dynamic")))
#else
#define NN_VECTORIZE
#endif

/* e^x for x in float range, branch-free (vectorizable): Cephes' expf polynomial on
 * x − n·ln 2, scaled by 2^n through the exponent bits. x above 88 gives e^88; below −87, 0:
 * e^−87 is 1.6e-38, a hair above the smallest normal float, and anything scaled down from there
 * (a softmax's masked weights divided by their sum) would be a denormal, which costs the CPU a
 * microcode assist per operation (a masked attention ran at half speed). */
static inline __attribute__ ((always_inline)) float
nn_fast_exp (float x)
{
  gboolean under = x < -87.0f;
  /* Clamped so that NaN becomes -87 (both comparisons false): n is then a finite integer, whose
   * conversion below is defined (a NaN's is undefined: UBSan's float-cast-overflow); the NaN is
   * given back at the end. */
  float c = x > 88.0f ? 88.0f : x;
  c = c > -87.0f ? c : -87.0f;
  float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(c / ln 2) */
  float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  guint32 bits = (guint32) ((gint32) n + 127) << 23; /* n in [-126, 127] */
  float scale;
  memcpy (&scale, &bits, sizeof scale);
  return x != x ? x : under ? 0.0f : p * scale;
}

/* 1 / (1 + e^−x). */
static inline __attribute__ ((always_inline)) float
nn_fast_sigmoid (float x)
{
  return 1.0f / (1.0f + nn_fast_exp (-x));
}

/* tanh: Cephes' odd polynomial below |x| 0.625, 1 − 2 / (e^2|x| + 1) above, with x's sign. */
static inline __attribute__ ((always_inline)) float
nn_fast_tanh (float x)
{
  float a = x < 0 ? -x : x, z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  float big = 1.0f - 2.0f / (nn_fast_exp (2.0f * a) + 1.0f);
  return a < 0.625f ? small : x < 0 ? -big : big;
}
