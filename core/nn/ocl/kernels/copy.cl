/* Data movement (docs/opencl.md §3.2): strided copies (Transpose, Slice, Expand, Tile) and the
 * row copies of Concat and Split. Values of any element type travel as bytes: every buffer is a
 * `__global uchar *` with an offset in elements of @esize (1, 4 or 8 bytes), and an element is
 * moved as one uchar, uint or ulong (the arena's and the weights' offsets are aligned for it). */

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
