/*
 * The CUDA backend's cuDNN kernels (float32, NCHW; HAVE_CUDNN builds):
 * Conv 1-D and 2-D (any group count, symmetric pads, strides, dilations,
 * the bias added after), MaxPool and AveragePool 1-D and 2-D (no indices,
 * no dilations), GlobalAveragePool and GlobalMaxPool, and
 * BatchNormalization in inference (spatial). A 1-D op runs as 2-D with a
 * height of 1. The rules (rules.c) claim exactly these instances.
 *
 * Each queue has its own cuDNN handle, bound to its stream and made at
 * the first cuDNN kernel on it, and a workspace grown on demand. Conv's
 * algorithm is chosen once per geometry (cuDNN's heuristics, FMA math
 * only, so that float32 stays float32: no TF32) and cached. Descriptors
 * are small host objects made and released per call. cuDNN 9 marks this
 * API deprecated (in favour of its graph API) but keeps it.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cuda/internal.h"
#include "ops/schema.h"

/* The handle of q, made at first use; NULL with the failure on q. */
static cudnnHandle_t s_handle(gx_cuda_queue *q)
{
    if (q->dnn)
        return q->dnn;
    cudnnStatus_t st = cudnnCreate(&q->dnn);
    if (st != CUDNN_STATUS_SUCCESS) {
        q->dnn = NULL;
        gx_cuda_fail(q, "cuDNN: cannot create a handle: %s", cudnnGetErrorString(st));
        return NULL;
    }
    cudnnSetStream(q->dnn, q->stream);
    return q->dnn;
}

/* At least bytes of workspace on q (NULL for 0 bytes); false with the
 * failure on q. */
static bool s_workspace(gx_cuda_queue *q, size_t bytes)
{
    if (bytes <= q->ws_bytes)
        return true;
    if (q->ws) { /* the stream may still read it */
        cudaStreamSynchronize(q->stream);
        cudaFree(q->ws);
    }
    q->ws = NULL;
    q->ws_bytes = 0;
    q->ws_gen = gx_cuda_serial();
    cudaError_t e = cudaMalloc(&q->ws, bytes);
    if (e != cudaSuccess) {
        q->ws = NULL;
        gx_cuda_fail(q, "cuDNN workspace of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return false;
    }
    q->ws_bytes = bytes;
    return true;
}

void gx_cuda_dnn_fini(gx_cuda_queue *q)
{
    if (q->dnn)
        cudnnDestroy(q->dnn);
    if (q->ws)
        cudaFree(q->ws);
    q->dnn = NULL;
    q->ws = NULL;
    q->ws_bytes = 0;
    q->ws_gen = gx_cuda_serial();
}

static bool s_ok(gx_cuda_queue *q, cudnnStatus_t st, const char *what)
{
    if (st != CUDNN_STATUS_SUCCESS)
        gx_cuda_fail(q, "cuDNN %s: %s", what, cudnnGetErrorString(st));
    return st == CUDNN_STATUS_SUCCESS;
}

/* x [N, C, spatial...] as 4-D NCHW: rank 3 as [N, C, 1, L], rank 4 as
 * is, else (flat) [N, C, product of the rest, 1]. */
static void s_nchw(const gx_view *v, int dims[4])
{
    dims[0] = (int)v->shape[0];
    dims[1] = v->ndim > 1 ? (int)v->shape[1] : 1;
    if (v->ndim == 3) {
        dims[2] = 1;
        dims[3] = (int)v->shape[2];
    } else if (v->ndim == 4) {
        dims[2] = (int)v->shape[2];
        dims[3] = (int)v->shape[3];
    } else {
        int64_t rest = 1;
        for (int d = 2; d < v->ndim; d++)
            rest *= v->shape[d];
        dims[2] = (int)rest;
        dims[3] = 1;
    }
}

static bool s_tensor(gx_cuda_queue *q, cudnnTensorDescriptor_t *t, const int d[4])
{
    if (!s_ok(q, cudnnCreateTensorDescriptor(t), "tensor descriptor"))
        return false;
    return s_ok(q,
                cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d[0], d[1],
                                           d[2], d[3]),
                "tensor shape");
}

/* The window of a 1-D or 2-D op as 2-D: height first (1 for 1-D). */
typedef struct s_win2 {
    int k[2], pad[2], stride[2], dil[2];
} s_win2;

static s_win2 s_win2_of(const gx_win *w)
{
    s_win2 r = {{1, 1}, {0, 0}, {1, 1}, {1, 1}};
    for (int d = 0; d < w->nsp && d < 2; d++) {
        const int j = w->nsp == 1 ? 1 : d;
        r.k[j] = (int)w->k[d];
        r.pad[j] = (int)w->pad_lo[d];
        r.stride[j] = (int)w->stride[d];
        r.dil[j] = (int)w->dil[d];
    }
    return r;
}

/* ---- Conv -------------------------------------------------------------- */

/* The algorithm chosen per geometry. */
typedef struct s_algo_key {
    int x[4], w[4], y[4], group, tf32;
    s_win2 win;
} s_algo_key;

#define S_ALGO_MAX 256
static pthread_mutex_t s_algo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    s_algo_key key;
    cudnnConvolutionFwdAlgo_t algo;
} s_algo[S_ALGO_MAX];
static size_t s_n_algo;

/* cuDNN's fastest FMA-math algorithm for the geometry by its heuristics
 * (cached), implicit GEMM when it offers none. */
static cudnnConvolutionFwdAlgo_t s_algo_for(cudnnHandle_t h, const s_algo_key *key,
                                            cudnnTensorDescriptor_t xd,
                                            cudnnFilterDescriptor_t wd,
                                            cudnnConvolutionDescriptor_t cd,
                                            cudnnTensorDescriptor_t yd)
{
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    pthread_mutex_lock(&s_algo_mu);
    for (size_t i = 0; i < s_n_algo; i++)
        if (memcmp(&s_algo[i].key, key, sizeof *key) == 0) {
            algo = s_algo[i].algo;
            pthread_mutex_unlock(&s_algo_mu);
            return algo;
        }
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    if (cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                               perf) == CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS &&
                (gx_cuda_tf32() || perf[i].mathType == CUDNN_FMA_MATH)) {
                algo = perf[i].algo;
                break;
            }
    if (s_n_algo < S_ALGO_MAX) {
        s_algo[s_n_algo].key = *key;
        s_algo[s_n_algo++].algo = algo;
    }
    pthread_mutex_unlock(&s_algo_mu);
    return algo;
}

static void s_k_conv(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const gx_view *b = k->n_in > 2 && k->in[2].ndim >= 0 && k->in[2].data ? &k->in[2] : NULL;
    cudnnHandle_t h = s_handle(q);
    cudnnTensorDescriptor_t xd = NULL, yd = NULL, bd = NULL;
    cudnnFilterDescriptor_t wd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    if (!h || y->numel == 0)
        goto out;
    gx_win g;
    gx_win_init(&g, k->attr, "Conv", x, w->shape + 2, false, false, NULL, 0);
    s_algo_key key;
    memset(&key, 0, sizeof key);
    s_nchw(x, key.x);
    s_nchw(w, key.w);
    s_nchw(y, key.y);
    key.group = (int)k->attr[GX_CONV_GROUP].i;
    key.tf32 = gx_cuda_tf32();
    key.win = s_win2_of(&g);
    if (!s_tensor(q, &xd, key.x) || !s_tensor(q, &yd, key.y) ||
        !s_ok(q, cudnnCreateFilterDescriptor(&wd), "filter descriptor") ||
        !s_ok(q,
              cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, key.w[0],
                                         key.w[1], key.w[2], key.w[3]),
              "filter shape") ||
        !s_ok(q, cudnnCreateConvolutionDescriptor(&cd), "convolution descriptor") ||
        !s_ok(q,
              cudnnSetConvolution2dDescriptor(cd, key.win.pad[0], key.win.pad[1],
                                              key.win.stride[0], key.win.stride[1],
                                              key.win.dil[0], key.win.dil[1],
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "convolution geometry") ||
        !s_ok(q, cudnnSetConvolutionGroupCount(cd, key.group), "group count") ||
        !s_ok(q,
              cudnnSetConvolutionMathType(cd, gx_cuda_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
              "math type"))
        goto out;
    const cudnnConvolutionFwdAlgo_t algo = s_algo_for(h, &key, xd, wd, cd, yd);
    size_t ws = 0;
    if (!s_ok(q, cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &ws),
              "workspace size") ||
        !s_workspace(q, ws))
        goto out;
    const float one = 1.f, zero = 0.f;
    const int bdims[4] = {1, key.y[1], 1, 1};
    if (b && !s_tensor(q, &bd, bdims))
        goto out;
    if (b && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
        /* the bias in the convolution's kernel: one launch, not two (cuDNN
         * takes an identity activation with this algorithm only) */
        cudnnActivationDescriptor_t ad = NULL;
        if (s_ok(q, cudnnCreateActivationDescriptor(&ad), "activation descriptor") &&
            s_ok(q,
                 cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY,
                                              CUDNN_NOT_PROPAGATE_NAN, 0.0),
                 "identity activation"))
            s_ok(q,
                 cudnnConvolutionBiasActivationForward(h, &one, xd, x->data, wd, w->data, cd,
                                                       algo, q->ws, ws, &zero, yd, y->data, bd,
                                                       b->data, ad, yd, y->data),
                 "convolution with its bias");
        if (ad)
            cudnnDestroyActivationDescriptor(ad);
        goto out;
    }
    if (!s_ok(q,
              cudnnConvolutionForward(h, &one, xd, x->data, wd, w->data, cd, algo, q->ws, ws,
                                      &zero, yd, y->data),
              "convolution"))
        goto out;
    if (b)
        s_ok(q, cudnnAddTensor(h, &one, bd, b->data, &one, yd, y->data), "bias");
out:
    if (bd)
        cudnnDestroyTensorDescriptor(bd);
    if (cd)
        cudnnDestroyConvolutionDescriptor(cd);
    if (wd)
        cudnnDestroyFilterDescriptor(wd);
    if (yd)
        cudnnDestroyTensorDescriptor(yd);
    if (xd)
        cudnnDestroyTensorDescriptor(xd);
    gx_cuda_done(k, q);
}

/* ---- pools ------------------------------------------------------------- */

/* A pool with window win over x as 4-D (x4), writing y as 4-D (y4). */
static void s_pool(const gx_kargs *k, cudnnPoolingMode_t mode, const int x4[4], const int y4[4],
                   const s_win2 *win)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    cudnnHandle_t h = s_handle(q);
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnPoolingDescriptor_t pd = NULL;
    const float one = 1.f, zero = 0.f;
    if (h && k->out[0].numel > 0 && s_tensor(q, &xd, x4) && s_tensor(q, &yd, y4) &&
        s_ok(q, cudnnCreatePoolingDescriptor(&pd), "pooling descriptor") &&
        s_ok(q,
             cudnnSetPooling2dDescriptor(pd, mode, CUDNN_PROPAGATE_NAN, win->k[0], win->k[1],
                                         win->pad[0], win->pad[1], win->stride[0],
                                         win->stride[1]),
             "pooling geometry"))
        s_ok(q, cudnnPoolingForward(h, pd, &one, xd, k->in[0].data, &zero, yd, k->out[0].data),
             "pooling");
    if (pd)
        cudnnDestroyPoolingDescriptor(pd);
    if (yd)
        cudnnDestroyTensorDescriptor(yd);
    if (xd)
        cudnnDestroyTensorDescriptor(xd);
    gx_cuda_done(k, q);
}

static void s_window_pool(const gx_kargs *k, cudnnPoolingMode_t mode, bool ceil_mode)
{
    gx_win g;
    gx_win_init(&g, k->attr, "pool", &k->in[0], NULL, ceil_mode, true, NULL, 0);
    int x4[4], y4[4];
    s_nchw(&k->in[0], x4);
    s_nchw(&k->out[0], y4);
    const s_win2 win = s_win2_of(&g);
    s_pool(k, mode, x4, y4, &win);
}

static void s_k_maxpool(const gx_kargs *k)
{
    s_window_pool(k, CUDNN_POOLING_MAX_DETERMINISTIC, k->attr[GX_MAXPOOL_CEIL_MODE].i != 0);
}

static void s_k_averagepool(const gx_kargs *k)
{
    s_window_pool(k,
                  k->attr[GX_AVERAGEPOOL_COUNT_INCLUDE_PAD].i
                      ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                  k->attr[GX_AVERAGEPOOL_CEIL_MODE].i != 0);
}

/* A global pool: rank 4 with an H x W window, else [N, C, 1, L] with a
 * 1 x L window. */
static void s_global(const gx_kargs *k, cudnnPoolingMode_t mode)
{
    const gx_view *x = &k->in[0];
    int x4[4], y4[4];
    s_nchw(x, x4);
    if (x->ndim != 4) {
        x4[3] = x4[2] * x4[3];
        x4[2] = 1;
    }
    y4[0] = x4[0];
    y4[1] = x4[1];
    y4[2] = y4[3] = 1;
    const s_win2 win = {{x4[2], x4[3]}, {0, 0}, {1, 1}, {1, 1}};
    s_pool(k, mode, x4, y4, &win);
}

static void s_k_globalmaxpool(const gx_kargs *k)
{
    s_global(k, CUDNN_POOLING_MAX_DETERMINISTIC);
}

static void s_k_globalaveragepool(const gx_kargs *k)
{
    s_global(k, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING);
}

/* ---- BatchNormalization (inference) ----------------------------------- */

static void s_k_batchnorm(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    cudnnHandle_t h = s_handle(q);
    cudnnTensorDescriptor_t xd = NULL, sd = NULL;
    int x4[4];
    s_nchw(&k->in[0], x4);
    const int s4[4] = {1, x4[1], 1, 1};
    const float one = 1.f, zero = 0.f;
    if (h && k->out[0].numel > 0 && s_tensor(q, &xd, x4) && s_tensor(q, &sd, s4))
        s_ok(q,
             cudnnBatchNormalizationForwardInference(
                 h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, k->in[0].data, xd, k->out[0].data,
                 sd, k->in[1].data, k->in[2].data, k->in[3].data, k->in[4].data,
                 k->attr[GX_BATCHNORM_EPSILON].f),
             "batch normalization");
    if (sd)
        cudnnDestroyTensorDescriptor(sd);
    if (xd)
        cudnnDestroyTensorDescriptor(xd);
    gx_cuda_done(k, q);
}

gx_kernel_fn gx_cuda_dnn_kernel(gx_op op)
{
    switch ((int)op) {
    case GX_OP_CONV:
        return s_k_conv;
    case GX_OP_MAXPOOL:
        return s_k_maxpool;
    case GX_OP_AVERAGEPOOL:
        return s_k_averagepool;
    case GX_OP_GLOBALMAXPOOL:
        return s_k_globalmaxpool;
    case GX_OP_GLOBALAVERAGEPOOL:
        return s_k_globalaveragepool;
    case GX_OP_BATCHNORM:
        return s_k_batchnorm;
    }
    return NULL;
}
