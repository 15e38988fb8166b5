/* sedp — GEMM with weights packed once: the constant B of Gemm/MatMul is laid out in panels of
 * columns at plan time and shared by every plan of the model (one packed copy per weight). */
#pragma once

#include <glib.h>

typedef struct _PackedB PackedB;

/* The packed form of B ([K, N], or [N, K] when @trans_b) for the best kernel this CPU runs, or
 * NULL when no packed kernel fits the CPU. Shared and reference counted: packing happens once
 * per weight matrix, whatever the number of plans. Thread-safe. */
PackedB *nn_packed_b_acquire (const float *b, gint64 K, gint64 N, gboolean trans_b);
void nn_packed_b_release (PackedB *pb);

/* C[M, N] = alpha * A[M, K] · B + bias, where bias is NULL, a scalar (@bias_kind 1) or a row of
 * N values (@bias_kind 2), scaled by @beta. */
void nn_gemm_packed (const float *a, gint64 M, const PackedB *pb, float *c, float alpha,
                     const float *bias, int bias_kind, float beta);
