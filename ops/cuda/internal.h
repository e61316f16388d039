/*
 * Shared by the CUDA backend's files (HAVE_CUDA builds only): the device,
 * a worker's queue, the NVRTC kernel cache.
 */
#ifndef GX_OPS_CUDA_INTERNAL_H
#define GX_OPS_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif

#include "ops/cuda/cuda.h"

/* cuBLAS's entry points, loaded when a GPU is opened (gx_cuda_blas_load):
 * linked, libcublas and libcublasLt run initialisers at every process's
 * start that take about a second and 200 MiB, GPU or not. */
typedef struct gx_cublas_api {
    typeof(&cublasCreate_v2) create;
    typeof(&cublasDestroy_v2) destroy;
    typeof(&cublasSetStream_v2) set_stream;
    typeof(&cublasSetMathMode) set_math_mode;
    typeof(&cublasSgemm_v2) sgemm;
    typeof(&cublasSgemmStridedBatched) sgemm_strided_batched;
    typeof(&cublasGemmEx) gemm_ex;
    typeof(&cublasGemmStridedBatchedEx) gemm_strided_batched_ex;
    typeof(&cublasGetStatusString) status_string;
} gx_cublas_api;
extern gx_cublas_api gx_cublas; /* set by gx_cuda_blas_load (cuda.h) */

/* A worker's queue (gx_kargs.queue): its stream, a cuBLAS handle bound to
 * it, and the first error a kernel met on it (reported, then cleared, by
 * the next copy or queue_sync). The threads of one job (inter-op) share
 * it: its kernels, copies and syncs take turns (mu), as a cuBLAS handle
 * needs; the stream keeps them in the order they were issued. */
typedef struct gx_cuda_queue {
    pthread_mutex_t mu;
    cudaStream_t stream;
    cublasHandle_t blas;
    int err;           /* GX_OK or the first error */
    char msg[200];
    uint64_t id;       /* unique per queue made: a recorded graph names the
                        * queue whose cuBLAS and cuDNN state it uses */
    uint64_t ws_gen;   /* changes whenever ws is replaced (graphs recorded
                        * before then read the old one: record again) */
#ifdef HAVE_CUDNN
    cudnnHandle_t dnn; /* made at the first cuDNN kernel on the queue */
    void *ws;          /* cuDNN's workspace, grown on demand (cudaMalloc) */
    size_t ws_bytes;
#endif
} gx_cuda_queue;

/* A fresh value for a queue's id or ws_gen (never 0). */
uint64_t gx_cuda_serial(void);

/* May MatMul, Gemm and Conv use TF32 (gx_cuda_configure)? */
bool gx_cuda_tf32(void);

/* Records a failure on q (the first one sticks). */
void gx_cuda_fail(gx_cuda_queue *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The device's index; cudaSetDevice on the calling thread. */
int gx_cuda_bind(void);
/* The queue of a kernel call, held until gx_cuda_done: k->queue, else the
 * device's fallback on the legacy stream (a caller without queues; the
 * fallback is synchronised after each kernel). */
gx_cuda_queue *gx_cuda_queue_of(const gx_kargs *k);
/* Releases the queue; synchronises the fallback after a kernel that ran on it. */
void gx_cuda_done(const gx_kargs *k, gx_cuda_queue *q);

/* The kernel `name` of CUDA C source src, compiled with NVRTC for this GPU
 * at first use and cached by the source's hash; NULL with the reason
 * recorded on q. */
const void *gx_cuda_jit(gx_cuda_queue *q, const char *src, const char *name);
/* What a generated kernel's source starts with for tensors of dt (float32
 * or float16): their storage type T, LD(x) (an element as a float) and
 * ST(v) (a float rounded to T). Sources compute in float over these. */
const char *gx_cuda_prelude(gx_dtype dt);
/* Launches fn over n elements (grid-stride loops), or grid x block. */
void gx_cuda_launch(gx_cuda_queue *q, const void *fn, unsigned grid, unsigned block, void **args);
unsigned gx_cuda_grid(int64_t n);

#ifdef HAVE_CUDNN
/* The cuDNN kernel of op (dnn.c: Conv, pools, BatchNormalization), NULL
 * where it has none. */
gx_kernel_fn gx_cuda_dnn_kernel(gx_op op);
/* Releases q's cuDNN handle and workspace (the queue is going away). */
void gx_cuda_dnn_fini(gx_cuda_queue *q);
#endif

/* The expression of a generated unary kernel of op: CUDA C over v (the
 * element), a (LeakyRelu's alpha), lov and hiv (Clip's bounds); NULL for
 * an op without one. */
const char *gx_cuda_unary_expr(gx_op op, const gx_attrval *attr);
/* The operator of a generated binary kernel ("+"), NULL for other ops. */
const char *gx_cuda_binary_sym(gx_op op);
/* The backend's fused slot (fused.c): the group as one generated kernel. */
struct gx_fused;
void gx_cuda_fused(const gx_backend *b, const struct gx_fused *f, const gx_kargs *k);

/* The kernel of op (kernels.c), NULL where it has none. */
gx_kernel_fn gx_cuda_kernel(gx_op op);
/* Compile now (gx_cuda_jit) the code a step's kernel generates, for its
 * attributes and views in k (data may be NULL): op's kernel, or the fused
 * group f's; errors on q. Nothing runs. */
void gx_cuda_kernel_ready(gx_cuda_queue *q, gx_op op, const gx_kargs *k);
void gx_cuda_fused_ready(gx_cuda_queue *q, const struct gx_fused *f, const gx_kargs *k);
/* Runs a small product and an elementwise kernel and checks them; GX_OK or
 * an error with why. cuBLAS must be loaded (open loads it first). */
int gx_cuda_selfcheck(char *why, size_t len);

#endif
