/* sedp — the lowering of each CPU kernel (docs/opencl.md §3): one function per NnKernelId that
 * has a device form; the others run on the host (the fallback of §3.3) until theirs lands. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

/* The kernels' Activation codes (kernels/common.cl) are the CPU engine's. */
G_STATIC_ASSERT (ACT_RELU == 1 && ACT_SIGMOID == 2 && ACT_TANH == 3 && ACT_LEAKY_RELU == 4);
G_STATIC_ASSERT (ACT_ERF == 11 && ACT_SIGN == 14 && ACT_ROUND == 17);

OclLowerFn
nn_ocl_lowering (guint kernel_id)
{
  static const OclLowerFn table[NN_KERNEL_N] = {
    [NN_KERNEL_GEMM] = nn_ocl_lower_gemm,
    [NN_KERNEL_MATMUL_BATCHED] = nn_ocl_lower_matmul_batched,
    [NN_KERNEL_GRU] = nn_ocl_lower_gru,
    [NN_KERNEL_REDUCE] = nn_ocl_lower_reduce,
    [NN_KERNEL_SOFTMAX] = nn_ocl_lower_softmax,
    [NN_KERNEL_LAYERNORM] = nn_ocl_lower_layernorm,
    [NN_KERNEL_BATCHNORM] = nn_ocl_lower_batchnorm,
    [NN_KERNEL_ARG] = nn_ocl_lower_arg,
    [NN_KERNEL_TOPK] = nn_ocl_lower_topk,
    [NN_KERNEL_CUMSUM] = nn_ocl_lower_cumsum,
    [NN_KERNEL_STRIDED_COPY] = nn_ocl_lower_strided_copy,
    [NN_KERNEL_TILE] = nn_ocl_lower_strided_copy,
    [NN_KERNEL_CONCAT] = nn_ocl_lower_concat,
    [NN_KERNEL_SPLIT] = nn_ocl_lower_split,
    [NN_KERNEL_GATHER] = nn_ocl_lower_gather,
    [NN_KERNEL_GATHER_ELEMENTS] = nn_ocl_lower_gather_elements,
    [NN_KERNEL_EMBEDDING_BAG] = nn_ocl_lower_embedding_bag,
    [NN_KERNEL_ONEHOT] = nn_ocl_lower_onehot,
    [NN_KERNEL_TRILU] = nn_ocl_lower_trilu,
    [NN_KERNEL_BINARY] = nn_ocl_lower_broadcast,
    [NN_KERNEL_COMPARE] = nn_ocl_lower_broadcast,
    [NN_KERNEL_LOGIC] = nn_ocl_lower_broadcast,
    [NN_KERNEL_MOD] = nn_ocl_lower_broadcast,
    [NN_KERNEL_POW] = nn_ocl_lower_broadcast,
    [NN_KERNEL_PRELU] = nn_ocl_lower_broadcast,
    [NN_KERNEL_WHERE] = nn_ocl_lower_broadcast,
    [NN_KERNEL_VARIADIC] = nn_ocl_lower_variadic,
    [NN_KERNEL_UNARY] = nn_ocl_lower_unary,
    [NN_KERNEL_PARAM_ACT] = nn_ocl_lower_param_act,
    [NN_KERNEL_CLIP] = nn_ocl_lower_clip,
    [NN_KERNEL_CAST] = nn_ocl_lower_cast,
    [NN_KERNEL_NOT] = nn_ocl_lower_not,
    [NN_KERNEL_IS] = nn_ocl_lower_is,
  };
  return kernel_id < NN_KERNEL_N ? table[kernel_id] : NULL;
}
