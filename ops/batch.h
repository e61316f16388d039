/*
 * Batch rules shared by the schemas (ops/batch.c): the patterns most ops'
 * `batch` slot (gx_batch_ctx in ops/op.h) reduces to. Each returns true
 * only when it can prove that every output sample depends on the same
 * sample of the batched inputs and nothing else batched; it checks ranks
 * and shapes itself, so a schema may use it as is. Internal to the op
 * library.
 */
#ifndef GX_OPS_BATCH_H
#define GX_OPS_BATCH_H

#include "ops/op.h"

/* Input i is present (not an omitted optional input) and batched. */
bool gx_batch_in(const gx_batch_ctx *bc, int i);

/* The sample-wise pattern (Conv, pools, normalisations per sample,
 * Identity...): input 0 is batched with rank >= 1, no other input is
 * batched, and every present output has axis 0 of input 0's size. Sets
 * every present output batched. */
bool gx_batch_samplewise(const gx_batch_ctx *bc);

/* gx_batch_samplewise, plus the op's work runs along one axis, the INT
 * attribute attr[axis_attr] (negative counts from input 0's rank), which
 * must not be 0: Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin,
 * LayerNormalization, Split. */
bool gx_batch_axis_not0(const gx_batch_ctx *bc, int axis_attr);

/* Concat along attr[axis_attr] != 0: every input must be batched (an
 * unbatched one would put its own rows beside each sample's). */
bool gx_batch_concat(const gx_batch_ctx *bc, int axis_attr);

/* The product of A (input ia) and B (input ib) in MatMul's batching:
 * the batch may be A's rows (A [N, K] times an unbatched B of rank <= 2)
 * or the leading broadcast dim of the output, carried by A, B or both at
 * the output's rank >= 3; an unbatched operand of that rank must have dim
 * 0 of 1. Anything else (a batched B [N, P] contracts over the batch)
 * mixes. Every other input (zero points, scales) must be unbatched, and
 * those of per_row (bit i: input i) hold one value when a 2-D A's rows are
 * the batch (one per row would go with the samples). */
bool gx_batch_matmul(const gx_batch_ctx *bc, int ia, int ib, uint32_t per_row);

/* numpy broadcasting of elementwise ops (GX_OPF_ELEMENTWISE): a batched
 * input has the output's rank (its axis 0 is the output's axis 0); an
 * unbatched input of the output's rank has dim 0 of 1, a lower rank
 * broadcasts over axis 0 anyway. Output 0 is batched. */
bool gx_batch_broadcast(const gx_batch_ctx *bc);

#endif
