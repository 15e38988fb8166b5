/* The GEMM epilogue (docs/opencl.md §3.2): after CLBlast's y = alpha · op(A) op(B), the bias of
 * a Gemm and the fused activation, in one pass: y = act ((zero ? 0 : y) + beta · bias[k]), k by
 * the bias's broadcast (0 none, 1 scalar, 2 row [N], 3 column [M], 4 full [M, N]). @zero: K = 0,
 * no product was computed. */
__kernel void
gemm_epilogue (__global float *y, ulong y_off, __global const float *bias, ulong bias_off, ulong n,
               ulong N, int bias_kind, int act, float beta, float alpha, int zero)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float v = zero ? 0.0f : y[y_off + i];
  if (bias_kind > 0) {
    ulong k = bias_kind == 1 ? 0 : bias_kind == 2 ? i % N : bias_kind == 3 ? i / N : i;
    v = v + beta * bias[bias_off + k];
  }
  y[y_off + i] = nn_act (v, act, alpha);
}
