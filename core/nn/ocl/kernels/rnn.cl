/* GRU on the device (docs/opencl.md §3.2, core/nn/ocl/lower-rnn.c): the GEMMs are CLBlast's;
 * these kernels do what core/nn/exec/ops-rnn.c does between them, per (row, hidden unit). Every
 * time step of the sequence is enqueued; a row whose sequence has ended at step i (i ≥ its length)
 * is left alone, as the CPU leaves it. Scratch layout as the CPU's: lens [B] as long, then X·Wᵀ
 * [seq · B, 3H], h [B, H], hr [B, 3H], rh [B, H], hn [B, H]. */

/* The time index row b reads at step i, or -1 when its sequence has ended. */
inline long
gru_time (long i, long len, int rev)
{
  return i >= len ? -1 : rev ? len - 1 - i : i;
}

inline float
gru_gate (float v, float clip, int act)
{
  if (clip > 0.0f)
    v = v < -clip ? -clip : v > clip ? clip : v;
  return nn_act (v, act, 0.0f);
}

/* Time t of batch row b in X·Wᵀ ([seq, B, 3H], or [B, seq, 3H] with layout 1). */
inline __global const float *
gru_xw (__global const float *xw, ulong b, ulong B, ulong H, long seq, long t, int layout)
{
  return xw + (layout ? b * seq + t : t * B + b) * 3 * H;
}

/* The step's end for (b, j) = k: h ← (1 − z) ⊙ n + z ⊙ h, and Y at (t, d, b) when has_y. */
inline void
gru_update (__global float *h, __global float *y, ulong k, ulong b, ulong j, ulong B, ulong H,
            long seq, long t, int layout, int dirs, int d, int has_y, float z, float n)
{
  float hv = (1.0f - z) * n + z * h[k];
  h[k] = hv;
  if (has_y)
    y[(layout ? (b * seq + t) * dirs + d : (t * dirs + d) * B + b) * H + j] = hv;
}

/* lens[b] from sequence_lens (kind 0: none, all seq; 1: int32; 2: int64), checked against
 * [0, seq]: a bad one sets the status word and reads as 0. */
__kernel void
gru_lens (__global long *lens, ulong lens_off, __global const int *l32, ulong l32_off,
          __global const long *l64, ulong l64_off, __global uint *status, ulong word, ulong B,
          long seq, int kind)
{
  size_t b = get_global_id (0);
  if (b >= B)
    return;
  long v = kind == 0 ? seq : kind == 1 ? (long) l32[l32_off + b] : l64[l64_off + b];
  if (v < 0 || v > seq) {
    status[word] = 1u;
    v = 0;
  }
  lens[lens_off + b] = v;
}

/* h = initial_h's rows of direction d, or 0; the same kernel zeroes a region (has_h0 0). */
__kernel void
gru_h0 (__global float *h, ulong h_off, __global const float *h0, ulong h0_off, ulong n, ulong H,
        ulong B, int has_h0, int layout, int dirs, int d)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  ulong b = i / H, j = i % H;
  ulong row = layout ? b * dirs + d : d * B + b;
  h[h_off + i] = has_h0 ? h0[h0_off + row * H + j] : 0.0f;
}

/* One step with linear_before_reset = 1: hr = h·Rᵀ [B, 3H] (CLBlast), then per (b, j) the gates
 * with X·Wᵀ + biases and Rb_h, h updated, Y written at (t, d, b). */
__kernel void
gru_step_lbr (__global const float *xw, ulong xw_off, __global const float *hr, ulong hr_off,
              __global float *h, ulong h_off, __global float *y, ulong y_off,
              __global const long *lens, ulong lens_off, __global const float *bh, ulong bh_off,
              ulong B, ulong H, long seq, long i, int rev, int layout, int dirs, int d, int has_y,
              float clip, int f, int g)
{
  size_t k = get_global_id (0);
  if (k >= B * H)
    return;
  ulong b = k / H, j = k % H;
  long t = gru_time (i, lens[lens_off + b], rev);
  if (t < 0)
    return;
  __global const float *x = gru_xw (xw + xw_off, b, B, H, seq, t, layout);
  __global const float *r = hr + hr_off + b * 3 * H;
  float z = gru_gate (r[j] + x[j], clip, f);
  float rg = gru_gate (r[H + j] + x[H + j], clip, f);
  float hn = r[2 * H + j] + bh[bh_off + 2 * H + j];
  float n = gru_gate (x[2 * H + j] + rg * hn, clip, g);
  gru_update (h + h_off, y + y_off, k, b, j, B, H, seq, t, layout, dirs, d, has_y, z, n);
}

/* linear_before_reset = 0, first half: hr = h·R_zrᵀ [B, 2H] (CLBlast); z and r gated in place,
 * rh = r ⊙ h. */
__kernel void
gru_step_zr (__global const float *xw, ulong xw_off, __global float *hr, ulong hr_off,
             __global const float *h, ulong h_off, __global float *rh, ulong rh_off,
             __global const long *lens, ulong lens_off, ulong B, ulong H, long seq, long i, int rev,
             int layout, float clip, int f)
{
  size_t k = get_global_id (0);
  if (k >= B * H)
    return;
  ulong b = k / H, j = k % H;
  long t = gru_time (i, lens[lens_off + b], rev);
  if (t < 0)
    return;
  __global const float *x = gru_xw (xw + xw_off, b, B, H, seq, t, layout);
  __global float *zr = hr + hr_off + b * 2 * H;
  float z = gru_gate (zr[j] + x[j], clip, f);
  float r = gru_gate (zr[H + j] + x[H + j], clip, f);
  zr[j] = z;
  zr[H + j] = r;
  rh[rh_off + k] = r * h[h_off + k];
}

/* Second half: hn = rh·R_hᵀ [B, H] (CLBlast); the candidate and h; Y written. */
__kernel void
gru_step_h (__global const float *xw, ulong xw_off, __global const float *hr, ulong hr_off,
            __global float *h, ulong h_off, __global const float *hn, ulong hn_off,
            __global float *y, ulong y_off, __global const long *lens, ulong lens_off, ulong B,
            ulong H, long seq, long i, int rev, int layout, int dirs, int d, int has_y, float clip,
            int g)
{
  size_t k = get_global_id (0);
  if (k >= B * H)
    return;
  ulong b = k / H, j = k % H;
  long t = gru_time (i, lens[lens_off + b], rev);
  if (t < 0)
    return;
  __global const float *x = gru_xw (xw + xw_off, b, B, H, seq, t, layout);
  float z = hr[hr_off + b * 2 * H + j];
  float n = gru_gate (hn[hn_off + k] + x[2 * H + j], clip, g);
  gru_update (h + h_off, y + y_off, k, b, j, B, H, seq, t, layout, dirs, d, has_y, z, n);
}

/* Y_h of direction d: h after each row's last step; 0 for a row of length 0 (as ONNX Runtime). */
__kernel void
gru_yh (__global const float *h, ulong h_off, __global float *yh, ulong yh_off,
        __global const long *lens, ulong lens_off, ulong B, ulong H, int layout, int dirs, int d)
{
  size_t k = get_global_id (0);
  if (k >= B * H)
    return;
  ulong b = k / H, j = k % H;
  ulong row = layout ? b * dirs + d : d * B + b;
  yh[yh_off + row * H + j] = lens[lens_off + b] > 0 ? h[h_off + k] : 0.0f;
}
