/*
 * What the CUDA backend claims (seed 000's device library rules): exactly
 * the ops and instances its kernels in ops/cuda/ run: float32 and float16
 * (cuBLAS's GemmEx, the generated kernels' float16 storage, copies), but
 * cuDNN's ops float32 only. A
 * build without the CUDA toolkit declares the same table with no kernels
 * (gx_backend_runnable: "declared only"), so explain and the partition
 * tests see one truth.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "ops/conv.h"
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

/* The generated transpose: rank 6 at most. */
static bool s_transpose(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->in[0].ndim > 6)
        return s_why(why, len, "input of rank %d: the kernel takes rank 6 at most",
                     rc->in[0].ndim);
    return true;
}

/* The generated row reduction: the reduced dims (of more than one
 * element) after every kept one, so that each output is a run of the
 * input; the axes known at compile time. */
static bool s_reduce(const gx_rule_ctx *rc, char *why, size_t len)
{
    const gx_view *x = &rc->in[0];
    if (rc->n_in > 1 && rc->in[1].ndim >= 0 && !rc->in[1].data)
        return s_why(why, len, "axes known only at run time");
    if (x->numel == 0)
        return s_why(why, len, "an empty input");
    bool mask[GX_MAX_DIMS];
    char err[160];
    if (gx_reduce_mask(gx_op_name(rc->op), rc->attr, rc->n_in, rc->in, mask, err, sizeof err) < 0)
        return s_why(why, len, "%s", err);
    bool reduced = false;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1)
            continue;
        if (mask[d])
            reduced = true;
        else if (reduced)
            return s_why(why, len, "dim %d is kept after a reduced one: trailing axes only", d);
    }
    return true;
}

#ifdef HAVE_CUDNN
/* cuDNN's legacy API (ops/cuda/dnn.c): NCHW of rank 3 (as 2-D, height 1)
 * or 4, padding the same at both ends of each dim. */
static bool s_window(const gx_rule_ctx *rc, const char *op, const int64_t *kshape,
                     bool ceil_mode, bool pool, gx_win *w, char *why, size_t len)
{
    const int nd = rc->in[0].ndim;
    if (nd != 3 && nd != 4)
        return s_why(why, len, "input of rank %d: cuDNN's kernels take 1-D and 2-D windows", nd);
    char err[160];
    if (gx_win_init(w, rc->attr, op, &rc->in[0], kshape, ceil_mode, pool, err, sizeof err) < 0)
        return s_why(why, len, "%s", err);
    for (int d = 0; d < w->nsp; d++)
        if (w->pad_lo[d] != w->pad_hi[d])
            return s_why(why, len, "pads %lld and %lld of dim %d differ: cuDNN pads symmetrically",
                         (long long)w->pad_lo[d], (long long)w->pad_hi[d], d);
    for (int i = 0; i < rc->in[0].ndim; i++)
        if (rc->in[0].shape[i] > INT32_MAX)
            return s_why(why, len, "a dim over 2^31");
    return true;
}

static bool s_conv(const gx_rule_ctx *rc, char *why, size_t len)
{
    gx_win w;
    if (rc->in[1].ndim != rc->in[0].ndim)
        return s_why(why, len, "weights of rank %d for an input of rank %d", rc->in[1].ndim,
                     rc->in[0].ndim);
    return s_window(rc, "Conv", rc->in[1].shape + 2, false, false, &w, why, len);
}

/* cuDNN sizes a pool's output rounding down and has no dilated pools: ceil_mode
 * only where it changes nothing. */
static bool s_pool(const gx_rule_ctx *rc, const char *op, bool ceil_mode, char *why, size_t len)
{
    gx_win w;
    if (!s_window(rc, op, NULL, false, true, &w, why, len))
        return false;
    for (int d = 0; d < w.nsp; d++) {
        if (w.dil[d] != 1)
            return s_why(why, len, "dilation %lld: cuDNN's pools have none",
                         (long long)w.dil[d]);
        if (w.out[d] != rc->out[0].shape[2 + d])
            return s_why(why, len, "ceil_mode gives %lld outputs along dim %d, cuDNN %lld",
                         (long long)rc->out[0].shape[2 + d], d, (long long)w.out[d]);
        if (w.pad_lo[d] >= w.k[d])
            return s_why(why, len, "padding %lld not below the window %lld",
                         (long long)w.pad_lo[d], (long long)w.k[d]);
    }
    (void)ceil_mode;
    if (rc->n_out > 1 && rc->out[1].ndim >= 0)
        return s_why(why, len, "the Indices output: cuDNN's pools give none");
    return true;
}

static bool s_maxpool(const gx_rule_ctx *rc, char *why, size_t len)
{
    return s_pool(rc, "MaxPool", rc->attr[GX_MAXPOOL_CEIL_MODE].i != 0, why, len);
}

static bool s_averagepool(const gx_rule_ctx *rc, char *why, size_t len)
{
    return s_pool(rc, "AveragePool", rc->attr[GX_AVERAGEPOOL_CEIL_MODE].i != 0, why, len);
}

static bool s_global(const gx_rule_ctx *rc, char *why, size_t len)
{
    int64_t rest = 1;
    for (int d = 2; d < rc->in[0].ndim; d++)
        rest *= rc->in[0].shape[d];
    if (rc->in[0].ndim < 3 || rest > INT32_MAX || rc->in[0].shape[0] > INT32_MAX ||
        rc->in[0].shape[1] > INT32_MAX)
        return s_why(why, len, "input of rank %d: cuDNN's global pool takes rank 3 or more",
                     rc->in[0].ndim);
    return true;
}

/* cudnnBatchNormalizationForwardInference: one output, per-channel
 * statistics of shape [C]. */
static bool s_batchnorm(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->attr[GX_BATCHNORM_TRAINING_MODE].i != 0)
        return s_why(why, len, "training_mode: cuDNN runs inference only here");
    for (int i = 1; i < rc->n_out; i++)
        if (rc->out[i].ndim >= 0)
            return s_why(why, len, "output %d (running statistics)", i);
    if (rc->in[0].ndim < 2)
        return s_why(why, len, "input of rank %d", rc->in[0].ndim);
    int64_t rest = 1;
    for (int d = 2; d < rc->in[0].ndim; d++)
        rest *= rc->in[0].shape[d];
    if (rest > INT32_MAX || rc->in[0].shape[0] > INT32_MAX)
        return s_why(why, len, "a dim over 2^31");
    for (int i = 1; i < 5 && i < rc->n_in; i++)
        if (rc->in[i].ndim != 1 || rc->in[i].shape[0] != rc->in[0].shape[1])
            return s_why(why, len, "input %d is not of shape [C]", i);
    return true;
}
#endif

#define S_GEN(op, fn) {GX_OP_##op, GX_DT_FLOAT, 0, fn, "NVRTC"}
#define S_COPY(op, free) {GX_OP_##op, GX_DT_FLOAT, free, NULL, "cudart"}

const gx_op_rule gx_cuda_rules[GX_CUDA_N_RULES] = {
    {GX_OP_MATMUL, GX_DT_FLOAT, 0, s_matmul, "cuBLAS"},
    {GX_OP_GEMM, GX_DT_FLOAT, 0, NULL, "cuBLAS"},
    S_GEN(RELU, NULL), S_GEN(SIGMOID, NULL), S_GEN(TANH, NULL), S_GEN(EXP, NULL),
    S_GEN(LOG, NULL), S_GEN(SQRT, NULL), S_GEN(NEG, NULL), S_GEN(ABS, NULL), S_GEN(ERF, NULL),
    S_GEN(GELU, NULL), S_GEN(LEAKYRELU, NULL), S_GEN(CLIP, NULL),
    S_GEN(ADD, s_binary), S_GEN(SUB, s_binary), S_GEN(MUL, s_binary), S_GEN(DIV, s_binary),
    S_GEN(SOFTMAX, s_softmax),
    /* the same bytes under another shape: a copy on the device (the shape
     * and axes inputs may be int64) */
    S_COPY(IDENTITY, 0), S_COPY(RESHAPE, 1u << 1), S_COPY(FLATTEN, 0), S_COPY(SQUEEZE, 1u << 1),
    S_COPY(UNSQUEEZE, 1u << 1),
    S_GEN(TRANSPOSE, s_transpose),
    {GX_OP_CONCAT, GX_DT_FLOAT, 0, NULL, "cudart"},
    /* float32 <-> float16 (the widen pass's Casts around what cuDNN runs
     * in float32 only) */
    {GX_OP_CAST, GX_DT_FLOAT, 0, NULL, "NVRTC"},
    {GX_OP_REDUCE_SUM, GX_DT_FLOAT, 1u << 1, s_reduce, "NVRTC"},
    {GX_OP_REDUCE_MEAN, GX_DT_FLOAT, 1u << 1, s_reduce, "NVRTC"},
#ifdef HAVE_CUDNN
    {GX_OP_CONV, GX_DT(F32), 0, s_conv, "cuDNN"},
    {GX_OP_MAXPOOL, GX_DT(F32), 0, s_maxpool, "cuDNN"},
    {GX_OP_AVERAGEPOOL, GX_DT(F32), 0, s_averagepool, "cuDNN"},
    {GX_OP_GLOBALMAXPOOL, GX_DT(F32), 0, s_global, "cuDNN"},
    {GX_OP_GLOBALAVERAGEPOOL, GX_DT(F32), 0, s_global, "cuDNN"},
    {GX_OP_BATCHNORM, GX_DT(F32), 0, s_batchnorm, "cuDNN"},
#endif
};
_Static_assert(sizeof gx_cuda_rules / sizeof gx_cuda_rules[0] == GX_CUDA_N_RULES, "CUDA rules");

#ifndef HAVE_CUDA
static const gx_backend s_cuda = {.name = "cuda", .rules = gx_cuda_rules,
                                  .n_rules = GX_CUDA_N_RULES};

const gx_backend *gx_backend_cuda(void)
{
    return &s_cuda;
}

int gx_cuda_configure(int device, double mem_fraction, bool tf32)
{
    (void)device, (void)mem_fraction, (void)tf32;
    return GX_OK;
}
#endif
