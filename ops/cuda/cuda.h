/*
 * The CUDA backend (ops/backend.h) of one GPU: cudaMalloc'd arenas, copies
 * and kernels on a stream per worker, cuBLAS for MatMul and Gemm, kernels
 * generated as CUDA C and compiled with NVRTC with the plan for the
 * elementwise ops, Softmax, Transpose, trailing reductions and fused
 * groups, cuDNN for Conv, pools and BatchNormalization (where configure
 * found it). What it claims is its rules table (rules.c);
 * gx_backend_cuda() is its table, declared only in a build
 * without the CUDA toolkit and not usable until gx_cuda_open found a GPU.
 *
 *   gx_cuda_configure(0, 0.9, false);        // before open: GPU 0, 90 % of its memory, no TF32
 *   const gx_backend *b = gx_backend_cuda();
 *   if (b->open && b->open(b, note, sizeof note) == GX_OK)
 *       gx_backend_register(...)             // not needed: cuda is built in
 */
#ifndef GX_OPS_CUDA_H
#define GX_OPS_CUDA_H

#include "ops/backend.h"

/* The rules of what the kernels run (rules.c; static storage); the cuDNN
 * rows only in a build with cuDNN (config.h's HAVE_CUDNN). */
#define GX_CUDA_N_BASE_RULES 29
#ifdef HAVE_CUDNN
#define GX_CUDA_N_DNN_RULES 6
#else
#define GX_CUDA_N_DNN_RULES 0
#endif
#define GX_CUDA_N_RULES (GX_CUDA_N_BASE_RULES + GX_CUDA_N_DNN_RULES)
extern const gx_op_rule gx_cuda_rules[GX_CUDA_N_RULES];

/* Which GPU open readies, the fraction of its memory (0 < f <= 1) arenas
 * may take, and whether MatMul, Gemm and Conv may use TF32 tensor cores
 * (inputs rounded to 10 mantissa bits, float32 sums: several times faster
 * on large products, further from float32's results); call before open.
 * GX_OK or GX_EINVAL. */
int gx_cuda_configure(int device, double mem_fraction, bool tf32);

/* Loads cuBLAS (dlopen, once; open does it when it finds the GPU: linked,
 * cuBLAS's initialisers cost every process about a second and 200 MiB at
 * start, GPU or not). GX_OK, or GX_EUNSUPPORTED with why (builds with
 * CUDA only). */
int gx_cuda_blas_load(char *why, size_t len);

/* Kernels NVRTC has compiled so far (its cache's entries; builds with
 * CUDA only). */
size_t gx_cuda_jit_count(void);

#endif
