/* Data movement (docs/opencl.md §3.2): strided copies (Transpose, Slice, Expand, Tile) and the
 * row copies of Concat and Split. Values of any element type travel as bytes: every buffer is a
 * `__global uchar *` with an offset in elements of @esize (1, 4 or 8 bytes), and an element is
 * moved as one uchar, uint or ulong (the arena's and the weights' offsets are aligned for it);
 * cp_elem and cp_source are in common.cl (index.cl uses them too). */

/* out[i] = src[base + Σ idx[d] · strides[d]] over @n output elements (Transpose, Slice, Expand,
 * Tile: the CPU engine's nn_strided_copy). */
__kernel void
strided_copy (__global const uchar *x, ulong x_off, __global uchar *y, ulong y_off, ulong n,
              int rank, long8 dims, long8 strides, long base, int esize)
{
  size_t i = get_global_id (0);
  if (i >= n)
    return;
  cp_elem (y, y_off + i, x, x_off + (ulong) cp_source (i, rank, dims, strides, base), esize);
}

/* @rows rows of @len elements: y[r · y_pitch + y_at + c] = x[r · x_pitch + x_at + c]. One input
 * of a Concat (x_pitch = len, y_pitch = the output's total, y_at = the input's place) or one
 * output of a Split (the other way round). */
__kernel void
copy_rows (__global const uchar *x, ulong x_off, __global uchar *y, ulong y_off, ulong rows,
           ulong len, ulong x_pitch, ulong x_at, ulong y_pitch, ulong y_at, int esize)
{
  size_t i = get_global_id (0);
  if (i >= rows * len)
    return;
  ulong r = i / len, c = i % len;
  cp_elem (y, y_off + r * y_pitch + y_at + c, x, x_off + r * x_pitch + x_at + c, esize);
}
