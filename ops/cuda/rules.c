/*
 * What the CUDA backend claims (seed 000's device library rules): exactly
 * the ops and instances its kernels in ops/cuda/ run, float32 only. A
 * build without the CUDA toolkit declares the same table with no kernels
 * (gx_backend_runnable: "declared only"), so explain and the partition
 * tests see one truth.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "ops/cuda/cuda.h"
#include "ops/schema.h"

/* Writes the reason and returns false. */
__attribute__((format(printf, 3, 4))) static bool s_why(char *why, size_t len, const char *fmt,
                                                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return false;
}

/* cuBLAS strided batched GEMM: operands of rank 2 or more whose batch
 * dimensions are equal, or one of them a plain matrix (stride 0). */
static bool s_matmul(const gx_rule_ctx *rc, char *why, size_t len)
{
    const gx_view *a = &rc->in[0], *b = &rc->in[1];
    if (a->ndim < 2 || b->ndim < 2)
        return s_why(why, len, "operands of rank %d and %d: cuBLAS needs rank 2 or more", a->ndim,
                     b->ndim);
    if (a->ndim == 2 || b->ndim == 2)
        return true;
    bool same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim - 2; i++)
        same = a->shape[i] == b->shape[i];
    if (!same)
        return s_why(why, len, "batch dimensions of A and B differ: only a 2-D operand broadcasts");
    return true;
}

/* The generated binary kernel: numpy broadcasting up to rank 6. */
static bool s_binary(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->out[0].ndim > 6)
        return s_why(why, len, "output of rank %d: the broadcasting kernel takes rank 6 at most",
                     rc->out[0].ndim);
    return true;
}

/* The generated softmax: over the last axis only. */
static bool s_softmax(const gx_rule_ctx *rc, char *why, size_t len)
{
    int64_t axis = rc->attr[GX_SOFTMAX_AXIS].i, nd = rc->in[0].ndim;
    if (nd < 1 || (axis != -1 && axis != nd - 1))
        return s_why(why, len, "axis %lld is not the last axis (%lld)", (long long)axis,
                     (long long)(nd - 1));
    return true;
}

#define S_GEN(op, fn) {GX_OP_##op, GX_DT(F32), 0, fn, "NVRTC"}
#define S_COPY(op, free) {GX_OP_##op, GX_DT(F32), free, NULL, "cudart"}

const gx_op_rule gx_cuda_rules[GX_CUDA_N_RULES] = {
    {GX_OP_MATMUL, GX_DT(F32), 0, s_matmul, "cuBLAS"},
    {GX_OP_GEMM, GX_DT(F32), 0, NULL, "cuBLAS"},
    S_GEN(RELU, NULL), S_GEN(SIGMOID, NULL), S_GEN(TANH, NULL), S_GEN(EXP, NULL),
    S_GEN(LOG, NULL), S_GEN(SQRT, NULL), S_GEN(NEG, NULL), S_GEN(ABS, NULL), S_GEN(ERF, NULL),
    S_GEN(GELU, NULL), S_GEN(LEAKYRELU, NULL), S_GEN(CLIP, NULL),
    S_GEN(ADD, s_binary), S_GEN(SUB, s_binary), S_GEN(MUL, s_binary), S_GEN(DIV, s_binary),
    S_GEN(SOFTMAX, s_softmax),
    /* the same bytes under another shape: a copy on the device (the shape
     * and axes inputs may be int64) */
    S_COPY(IDENTITY, 0), S_COPY(RESHAPE, 1u << 1), S_COPY(FLATTEN, 0), S_COPY(SQUEEZE, 1u << 1),
    S_COPY(UNSQUEEZE, 1u << 1),
};
_Static_assert(sizeof gx_cuda_rules / sizeof gx_cuda_rules[0] == GX_CUDA_N_RULES, "CUDA rules");

#ifndef HAVE_CUDA
static const gx_backend s_cuda = {.name = "cuda", .rules = gx_cuda_rules,
                                  .n_rules = GX_CUDA_N_RULES};

const gx_backend *gx_backend_cuda(void)
{
    return &s_cuda;
}

int gx_cuda_configure(int device, double mem_fraction)
{
    (void)device, (void)mem_fraction;
    return GX_OK;
}
#endif
