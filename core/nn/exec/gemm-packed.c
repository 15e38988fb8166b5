/* sedp — pre-packed GEMM microkernels (AVX-512: 8×32 tiles; AVX2+FMA: 6×16 tiles).
 *
 * OpenBLAS packs both operands on every call. With the batch sizes of online inference (tens to
 * hundreds of rows) packing the weight matrix costs as much as the multiplication itself, so
 * constant weights are packed once here: panels of NR columns, k-major inside a panel, so the
 * kernel streams one panel while each row of A is broadcast. */
#include "gemm-packed.h"

#include "../tensor.h"

#include <immintrin.h>
#include <string.h>

struct _PackedB {
  const float *source;
  gint64 K, N;
  gboolean trans_b;
  int nr;          /* columns per panel: 16 (AVX-512) or 8 (AVX2) */
  gint64 panels;
  float *data;     /* panels × K × nr, zero-padded past N */
  gint ref_count;
};

static GMutex cache_lock;
static GPtrArray *cache; /* PackedB*, shared by the plans of every model */

typedef enum { ISA_NONE, ISA_AVX2, ISA_AVX512 } Isa;

static Isa
detect_isa (void)
{
  static gsize once;
  static Isa isa;
  if (g_once_init_enter (&once)) {
    __builtin_cpu_init ();
    /* SEDP_NN_NO_PACKED is NnCompileOptions.no_pack: callers do not ask when it is set. */
    if (__builtin_cpu_supports ("avx512f"))
      isa = ISA_AVX512;
    else if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
      isa = ISA_AVX2;
    else
      isa = ISA_NONE;
    g_once_init_leave (&once, 1);
  }
  return isa;
}

static void
pack (PackedB *pb, const float *b)
{
  gint64 K = pb->K, N = pb->N;
  int nr = pb->nr;
  for (gint64 p = 0; p < pb->panels; p++) {
    float *dst = pb->data + p * K * nr;
    for (gint64 k = 0; k < K; k++)
      for (int j = 0; j < nr; j++) {
        gint64 n = p * nr + j;
        dst[k * nr + j] = n < N ? (pb->trans_b ? b[n * K + k] : b[k * N + n]) : 0.0f;
      }
  }
}

PackedB *
nn_packed_b_acquire (const float *b, gint64 K, gint64 N, gboolean trans_b)
{
  Isa isa = detect_isa ();
  if (isa == ISA_NONE || K <= 0 || N <= 0)
    return NULL;
  g_mutex_lock (&cache_lock);
  if (cache == NULL)
    cache = g_ptr_array_new ();
  for (guint i = 0; i < cache->len; i++) {
    PackedB *pb = cache->pdata[i];
    if (pb->source == b && pb->K == K && pb->N == N && pb->trans_b == trans_b) {
      pb->ref_count++;
      g_mutex_unlock (&cache_lock);
      return pb;
    }
  }
  PackedB *pb = g_new0 (PackedB, 1);
  pb->source = b;
  pb->K = K;
  pb->N = N;
  pb->trans_b = trans_b;
  pb->nr = isa == ISA_AVX512 ? 16 : 8;
  pb->panels = (N + pb->nr - 1) / pb->nr;
  /* An odd number of panels gets one more zero panel: the kernels take two at a time. */
  gint64 alloc_panels = pb->panels + (pb->panels & 1);
  pb->data = sedp_nn_alloc_zeroed ((gsize) (alloc_panels * K * pb->nr) * sizeof (float));
  pb->ref_count = 1;
  pack (pb, b);
  g_ptr_array_add (cache, pb);
  g_mutex_unlock (&cache_lock);
  return pb;
}

void
nn_packed_b_release (PackedB *pb)
{
  if (pb == NULL)
    return;
  g_mutex_lock (&cache_lock);
  if (--pb->ref_count == 0) {
    g_ptr_array_remove_fast (cache, pb);
    g_aligned_free (pb->data);
    g_free (pb);
    if (cache->len == 0)
      g_clear_pointer (&cache, g_ptr_array_unref);
  }
  g_mutex_unlock (&cache_lock);
}

/* ---- AVX-512: 8 rows × 32 columns (two panels of 16) per tile ---- */

#define MR512 8

__attribute__ ((target ("avx512f"))) static void
tile_avx512 (const float *a, gint64 lda, const float *p0, const float *p1, gint64 K, float *c,
             gint64 ldc, int rows, int cols, float alpha, const float *bias_row, float bias_scalar,
             gboolean accumulate)
{
  __m512 acc0[MR512], acc1[MR512];
#pragma GCC unroll 8
  for (int r = 0; r < MR512; r++) {
    acc0[r] = _mm512_setzero_ps ();
    acc1[r] = _mm512_setzero_ps ();
  }
  for (gint64 k = 0; k < K; k++) {
    __m512 b0 = _mm512_load_ps (p0 + k * 16), b1 = _mm512_load_ps (p1 + k * 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR512; r++) {
      __m512 av = _mm512_set1_ps (a[r * lda + k]);
      acc0[r] = _mm512_fmadd_ps (av, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps (av, b1, acc1[r]);
    }
  }
  __m512 va = _mm512_set1_ps (alpha), bias0, bias1;
  __mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16) ((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16) ((1u << (cols - 16)) - 1);
  if (accumulate) {
    for (int r = 0; r < rows; r++) {
      bias0 = _mm512_maskz_loadu_ps (m0, c + r * ldc);
      _mm512_mask_storeu_ps (c + r * ldc, m0, _mm512_fmadd_ps (acc0[r], va, bias0));
      if (m1) {
        bias1 = _mm512_maskz_loadu_ps (m1, c + r * ldc + 16);
        _mm512_mask_storeu_ps (c + r * ldc + 16, m1, _mm512_fmadd_ps (acc1[r], va, bias1));
      }
    }
    return;
  }
  if (bias_row) {
    bias0 = _mm512_maskz_loadu_ps (m0, bias_row);
    bias1 = _mm512_maskz_loadu_ps (m1, bias_row + 16);
  } else {
    bias0 = bias1 = _mm512_set1_ps (bias_scalar);
  }
  for (int r = 0; r < rows; r++) {
    _mm512_mask_storeu_ps (c + r * ldc, m0, _mm512_fmadd_ps (acc0[r], va, bias0));
    if (m1)
      _mm512_mask_storeu_ps (c + r * ldc + 16, m1, _mm512_fmadd_ps (acc1[r], va, bias1));
  }
}

/* ---- AVX2 + FMA: 6 rows × 16 columns (two panels of 8) per tile ---- */

#define MR256 6

__attribute__ ((target ("avx2,fma"))) static void
tile_avx2 (const float *a, gint64 lda, const float *p0, const float *p1, gint64 K, float *c,
           gint64 ldc, int rows, int cols, float alpha, const float *bias_row, float bias_scalar,
           gboolean accumulate)
{
  __m256 acc0[MR256], acc1[MR256];
#pragma GCC unroll 6
  for (int r = 0; r < MR256; r++) {
    acc0[r] = _mm256_setzero_ps ();
    acc1[r] = _mm256_setzero_ps ();
  }
  for (gint64 k = 0; k < K; k++) {
    __m256 b0 = _mm256_load_ps (p0 + k * 8), b1 = _mm256_load_ps (p1 + k * 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR256; r++) {
      __m256 av = _mm256_broadcast_ss (a + r * lda + k);
      acc0[r] = _mm256_fmadd_ps (av, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps (av, b1, acc1[r]);
    }
  }
  /* The accumulators leave their registers only here, each by a constant index: indexing them
   * by the runtime row count made GCC keep them in memory, storing all twelve on every step of
   * the k loop (a quarter of the FMA peak on an AVX2 machine). */
  float out[MR256][16];
#pragma GCC unroll 6
  for (int r = 0; r < MR256; r++) {
    _mm256_storeu_ps (out[r], acc0[r]);
    _mm256_storeu_ps (out[r] + 8, acc1[r]);
  }
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < cols; j++)
      c[r * ldc + j] = out[r][j] * alpha + (accumulate ? c[r * ldc + j] : bias_row ? bias_row[j] : bias_scalar);
}

/* Depth of a K block: a block of two panels (KC × 2 × NR floats) stays in L1/L2 while every
 * row tile of A streams past it. */
#define KC 256

void
nn_gemm_packed (const float *a, gint64 M, const PackedB *pb, float *c, float alpha,
                const float *bias, int bias_kind, float beta)
{
  gint64 K = pb->K, N = pb->N;
  int nr = pb->nr, mr = nr == 16 ? MR512 : MR256, ncols = 2 * nr;
  g_autofree float *scaled = NULL;
  float bias_scalar = 0.0f;
  const float *bias_row = NULL;
  if (bias && bias_kind == 1) {
    bias_scalar = beta * bias[0];
  } else if (bias && bias_kind == 2) {
    if (beta != 1.0f) {
      scaled = g_new (float, N);
      for (gint64 n = 0; n < N; n++)
        scaled[n] = beta * bias[n];
      bias_row = scaled;
    } else {
      bias_row = bias;
    }
  }
  /* Rows past M in the last tile read a zero-padded copy of A. */
  gint64 full = M / mr * mr;
  g_autofree float *pad = M > full ? g_new0 (float, (gsize) mr * K) : NULL;
  if (pad)
    memcpy (pad, a + full * K, (gsize) (M - full) * K * sizeof (float));
  for (gint64 k0 = 0; k0 < K; k0 += KC) {
    gint64 kc = MIN (KC, K - k0);
    gboolean accumulate = k0 > 0;
    for (gint64 p = 0; p < pb->panels; p += 2) {
      const float *p0 = pb->data + (p * K + k0) * nr, *p1 = pb->data + ((p + 1) * K + k0) * nr;
      gint64 n0 = p * nr;
      int cols = (int) MIN (ncols, N - n0);
      const float *br = bias_row ? bias_row + n0 : NULL;
      for (gint64 m0 = 0; m0 < M; m0 += mr) {
        int rows = (int) MIN (mr, M - m0);
        const float *pa = (rows < mr ? pad : a + m0 * K) + k0;
        float *pc = c + m0 * N + n0;
        if (nr == 16)
          tile_avx512 (pa, K, p0, p1, kc, pc, N, rows, cols, alpha, br, bias_scalar, accumulate);
        else
          tile_avx2 (pa, K, p0, p1, kc, pc, N, rows, cols, alpha, br, bias_scalar, accumulate);
      }
    }
  }
}
