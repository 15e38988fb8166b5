/* sedp — tensors of the dense engine: element types, shapes, data. */
#include "tensor.h"

#include <string.h>
#include <sys/mman.h>

#define TENSOR_ALIGN 64

gsize
sedp_nn_dtype_size (SedpNnDType dtype)
{
  switch (dtype) {
  case SEDP_NN_FLOAT:
  case SEDP_NN_INT32:
    return 4;
  case SEDP_NN_UINT8:
  case SEDP_NN_INT8:
  case SEDP_NN_BOOL:
    return 1;
  case SEDP_NN_INT64:
  case SEDP_NN_DOUBLE:
    return 8;
  case SEDP_NN_UNDEFINED:
  default:
    return 0;
  }
}

const char *
sedp_nn_dtype_name (SedpNnDType dtype)
{
  switch (dtype) {
  case SEDP_NN_UNDEFINED:
    return "undefined";
  case SEDP_NN_FLOAT:
    return "float";
  case SEDP_NN_UINT8:
    return "uint8";
  case SEDP_NN_INT8:
    return "int8";
  case SEDP_NN_INT32:
    return "int32";
  case SEDP_NN_INT64:
    return "int64";
  case SEDP_NN_BOOL:
    return "bool";
  case SEDP_NN_DOUBLE:
    return "double";
  default:
    break;
  }
  /* ONNX's other element types, by their TensorProto.DataType numbers. */
  switch ((int) dtype) {
  case 4:
    return "uint16";
  case 5:
    return "int16";
  case 8:
    return "string";
  case 10:
    return "float16";
  case 12:
    return "uint32";
  case 13:
    return "uint64";
  case 14:
    return "complex64";
  case 15:
    return "complex128";
  case 16:
    return "bfloat16";
  default:
    break;
  }
  static GPrivate buf_key = G_PRIVATE_INIT (g_free);
  char *buf = g_private_get (&buf_key);
  if (buf == NULL) {
    buf = g_malloc (32);
    g_private_set (&buf_key, buf);
  }
  g_snprintf (buf, 32, "type %d", (int) dtype);
  return buf;
}

gint64
sedp_nn_tensor_numel (const SedpNnTensor *t)
{
  gint64 n = 1;
  for (int k = 0; k < t->rank; k++)
    n *= t->dims[k];
  return n;
}

SedpNnTensor *
sedp_nn_tensor_new (const char *name, SedpNnDType dtype, int rank, const gint64 *dims)
{
  g_return_val_if_fail (rank >= 0 && rank <= SEDP_NN_MAX_RANK, NULL);
  g_return_val_if_fail (rank == 0 || dims != NULL, NULL);
  SedpNnTensor *t = g_new0 (SedpNnTensor, 1);
  t->name = g_strdup (name);
  t->dtype = dtype;
  t->rank = rank;
  gsize bytes = sedp_nn_dtype_size (dtype);
  for (int k = 0; k < rank; k++) {
    g_return_val_if_fail (dims[k] >= 0, (sedp_nn_tensor_free (t), NULL));
    t->dims[k] = dims[k];
    if (dims[k] != 0 && bytes > G_MAXSIZE / (guint64) dims[k])
      g_error ("sedp_nn_tensor_new: tensor %s of %s is too large", name ? name : "(unnamed)",
               sedp_nn_dtype_name (dtype));
    bytes *= (gsize) dims[k];
  }
  /* Never NULL, even for empty tensors: a NULL data pointer means "no data" to callers. */
  t->data = sedp_nn_alloc_zeroed (bytes);
  return t;
}

#define HUGE_PAGE ((gsize) 2 << 20)

gpointer
sedp_nn_alloc_zeroed (gsize bytes)
{
  if (bytes < HUGE_PAGE) {
    gsize blocks = (bytes + TENSOR_ALIGN - 1) / TENSOR_ALIGN;
    return g_aligned_alloc0 (blocks ? blocks : 1, TENSOR_ALIGN, TENSOR_ALIGN);
  }
  gsize pages = (bytes + HUGE_PAGE - 1) / HUGE_PAGE;
  gpointer p = g_aligned_alloc (pages, HUGE_PAGE, HUGE_PAGE);
#ifdef MADV_HUGEPAGE
  /* Before the first touch, so that the kernel can back it with huge pages (a hint only). */
  madvise (p, pages * HUGE_PAGE, MADV_HUGEPAGE);
#endif
  memset (p, 0, pages * HUGE_PAGE);
  return p;
}

SedpNnTensor *
sedp_nn_tensor_dup (const SedpNnTensor *t)
{
  SedpNnTensor *c = sedp_nn_tensor_new (t->name, t->dtype, t->rank, t->dims);
  if (t->data)
    memcpy (c->data, t->data, sedp_nn_tensor_nbytes (t));
  return c;
}

gsize
sedp_nn_tensor_nbytes (const SedpNnTensor *t)
{
  return (gsize) sedp_nn_tensor_numel (t) * sedp_nn_dtype_size (t->dtype);
}

void
sedp_nn_tensor_free (SedpNnTensor *t)
{
  if (t == NULL)
    return;
  g_free (t->name);
  g_aligned_free (t->data);
  g_free (t);
}

char *
sedp_nn_shape_to_string (int rank, const gint64 *dims)
{
  GString *s = g_string_new ("[");
  for (int k = 0; k < rank; k++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, k ? ", " : "", dims[k]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}
