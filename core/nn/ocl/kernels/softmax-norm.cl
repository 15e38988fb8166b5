/* Softmax and normalisation (docs/opencl.md §3.2): Softmax, LogSoftmax and Hardmax along one
 * axis (a work-item per lane), LayerNormalization (a work-item per row), BatchNormalization's
 * per-channel affine map (a work-item per element), computing what core/nn/exec/ops-math.c and
 * ops-norm.c compute. Sums the CPU takes in double are taken in double where the device has it
 * (NN_HAVE_FP64), else compensated in float. The kind codes are the CPU's SoftmaxKind. */

#define NN_SOFTMAX_PLAIN 0
#define NN_SOFTMAX_LOG 1
#define NN_SOFTMAX_HARD 2

/* A running sum of floats: double where the device has it, else Kahan-compensated float. */
#ifdef NN_HAVE_FP64
typedef double nn_sum_t;
#define NN_SUM_ADD(s, c, v) ((s) += (v))
#else
typedef float nn_sum_t;
#define NN_SUM_ADD(s, c, v)                                                                        \
  do {                                                                                             \
    float y_ = (v) - (c), t_ = (s) + y_;                                                           \
    (c) = (t_ - (s)) - y_;                                                                         \
    (s) = t_;                                                                                      \
  } while (0)
#endif

/* One lane of @len elements @inner apart per (outer, inner) index: y = softmax (x) (the CPU's
 * softmax_lane and nn_softmax_row: the maximum, e = exp (x - max), their sum, e · (1 / sum)),
 * log-softmax (x - max - log Σ exp (x - max)) or hardmax (1 at the first maximum). A NaN or an
 * infinite maximum makes every output of the lane NaN, as on the CPU. */
__kernel void
softmax_lane (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong lanes,
              long len, long inner, int kind)
{
  size_t i = get_global_id (0);
  if (i >= lanes)
    return;
  long start = (long) i / inner * len * inner + (long) i % inner;
  __global const float *px = x + x_off + start;
  __global float *py = y + y_off + start;
  if (kind == NN_SOFTMAX_HARD) {
    long best = 0;
    for (long k = 0; k < len; k++) {
      py[k * inner] = 0.0f;
      if (px[k * inner] > px[best * inner])
        best = k;
    }
    if (len > 0)
      py[best * inner] = 1.0f;
    return;
  }
  float m = -INFINITY;
  for (long k = 0; k < len; k++)
    m = px[k * inner] > m ? px[k * inner] : m;
  /* (NaN is skipped here; it makes the sum NaN, so every output NaN, as on the CPU.) */
  nn_sum_t sum = 0, comp = 0;
  if (kind == NN_SOFTMAX_LOG) {
    for (long k = 0; k < len; k++)
      NN_SUM_ADD (sum, comp, exp ((nn_sum_t) px[k * inner] - (nn_sum_t) m));
    nn_sum_t lse = (nn_sum_t) m + log (sum);
    for (long k = 0; k < len; k++)
      py[k * inner] = (float) ((nn_sum_t) px[k * inner] - lse);
    return;
  }
  for (long k = 0; k < len; k++) {
    float e = exp (px[k * inner] - m);
    py[k * inner] = e;
    NN_SUM_ADD (sum, comp, (nn_sum_t) e);
  }
  float inv = (float) ((nn_sum_t) 1 / sum);
  for (long k = 0; k < len; k++)
    py[k * inner] = py[k * inner] * inv;
}

/* The offset of entry @j of a row-major index space (@rank axes of @dims) whose axes are
 * @strides apart in the source: LayerNorm's Scale and B expanded to [cols] as the CPU's
 * nn_strided_copy does (rank 1, dims {cols}, strides {1}: the operand itself). */
inline long
nn_norm_offset (long j, int rank, long8 dims, long8 strides)
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

#ifdef NN_HAVE_FP64
typedef double nn_norm_t;
#else
typedef float nn_norm_t;
#endif

/* Σ (x[k] - shift)^p (p = 1, or 2 with @square) over a row in the CPU's row_moment order: 8
 * interleaved partial sums, then the tail into the first, combined pairwise. */
inline nn_norm_t
nn_row_moment (__global const float *x, long n, nn_norm_t shift, int square)
{
  nn_norm_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; l++) {
      nn_norm_t d = (nn_norm_t) x[k + l] - shift;
      acc[l] += square ? d * d : d;
    }
  for (; k < n; k++) {
    nn_norm_t d = (nn_norm_t) x[k] - shift;
    acc[0] += square ? d * d : d;
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* LayerNormalization over X as [rows, cols], a work-item per row: the mean, the mean of squared
 * deviations, inv = 1 / sqrt (var + epsilon), y = (float) ((x - mean) · inv) · scale + bias;
 * Mean and InvStdDev written when @has_mean, @has_inv. Scale and B read through their strided
 * walks (s_*, b_*); B only when @has_bias. */
__kernel void
layer_norm_row (__global const float *x, ulong x_off, __global const float *scale, ulong s_off,
                __global const float *bias, ulong b_off, __global float *y, ulong y_off,
                __global float *mean_out, ulong m_off, __global float *inv_out, ulong i_off,
                ulong rows, long cols, float epsilon, int has_bias, int has_mean, int has_inv,
                int s_rank, long8 s_dims, long8 s_strides, int b_rank, long8 b_dims,
                long8 b_strides)
{
  size_t r = get_global_id (0);
  if (r >= rows)
    return;
  __global const float *px = x + x_off + (long) r * cols;
  __global float *py = y + y_off + (long) r * cols;
  nn_norm_t mean = nn_row_moment (px, cols, 0, 0) / (nn_norm_t) cols;
  nn_norm_t var = nn_row_moment (px, cols, mean, 1) / (nn_norm_t) cols;
  nn_norm_t inv = (nn_norm_t) 1 / sqrt (var + (nn_norm_t) epsilon);
  for (long k = 0; k < cols; k++) {
    float s = scale[s_off + nn_norm_offset (k, s_rank, s_dims, s_strides)];
    float b = has_bias ? bias[b_off + nn_norm_offset (k, b_rank, b_dims, b_strides)] : 0.0f;
    py[k] = (float) (((nn_norm_t) px[k] - mean) * inv) * s + b;
  }
  if (has_mean)
    mean_out[m_off + r] = (float) mean;
  if (has_inv)
    inv_out[i_off + r] = (float) inv;
}

/* BatchNormalization (inference) as the CPU folds it: y = x · a[c] + b[c], c = (i / inner) %
 * channels; @ab holds a[channels] then b[channels] (a table the lowering uploaded). */
__kernel void
channel_affine (__global const float *x, ulong x_off, __global float *y, ulong y_off,
                __global const float *ab, ulong n, long channels, long inner)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  long c = (long) i / inner % channels;
  y[y_off + i] = x[x_off + i] * ab[c] + ab[channels + c];
}
