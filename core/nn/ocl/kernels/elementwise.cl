/* Elementwise kernels on flat float buffers: one work-item per output element, the global size
 * rounded up to the kernel's fixed local size (hence the `i >= n` guard), every operand a buffer
 * plus an element offset (docs/opencl.md §3). The operation codes are OCL_BIN_* and OCL_UNARY_*
 * of core/nn/ocl/ocl-private.h. */
#pragma OPENCL FP_CONTRACT OFF

#define OCL_BIN_ADD 0
#define OCL_BIN_SUB 1
#define OCL_BIN_MUL 2
#define OCL_BIN_DIV 3

#define OCL_UNARY_RELU 0
#define OCL_UNARY_LEAKY_RELU 1
#define OCL_UNARY_NEG 2
#define OCL_UNARY_ABS 3

/* y[i] = a[i] op b[i], same shapes. */
__kernel void
bin_flat_f (__global const float *a, ulong a_off, __global const float *b, ulong b_off,
            __global float *y, ulong y_off, ulong n, int op)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float x = a[a_off + i], z = b[b_off + i], r;
  switch (op) {
  case OCL_BIN_ADD: r = x + z; break;
  case OCL_BIN_SUB: r = x - z; break;
  case OCL_BIN_MUL: r = x * z; break;
  default: r = x / z; break;
  }
  y[y_off + i] = r;
}

/* y[i] = act(x[i]), as the CPU engine's nn_map_activation (Relu: x > 0 ? x : 0; LeakyRelu:
 * x >= 0 ? x : alpha·x). */
__kernel void
unary_f (__global const float *x, ulong x_off, __global float *y, ulong y_off, ulong n, int act,
         float alpha)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  float v = x[x_off + i], r;
  switch (act) {
  case OCL_UNARY_RELU: r = v > 0.0f ? v : 0.0f; break;
  case OCL_UNARY_LEAKY_RELU: r = v >= 0.0f ? v : v * alpha; break;
  case OCL_UNARY_NEG: r = -v; break;
  default: r = fabs (v); break;
  }
  y[y_off + i] = r;
}
