/* sedp — tensors of the dense engine (declared in the SDK's engine header). */
#pragma once

#include <sedp/engine.h>

G_BEGIN_DECLS

/* Zeroed memory for tensor data, 64-byte aligned; blocks of 2 MiB or more are aligned to 2 MiB
 * and asked for transparent huge pages first, so that random lookups into large embedding tables
 * and weights miss the TLB less. Never NULL; free with g_aligned_free(). */
gpointer sedp_nn_alloc_zeroed (gsize bytes);

G_END_DECLS
