/*
 * Float32 products over weights packed once per plan (seed 004's "library
 * data"): a MatMul or Gemm whose B is a constant matrix runs from a copy of
 * B the compiler packs when it builds the plan (daemon/compile/prepare.c),
 * so no job packs it again, and the kernel streams it from memory in the
 * order it reads it. The kernels are register-blocked AVX-512, AVX2+FMA or
 * baseline x86-64 loops picked once at run time; each output element is one
 * dot product in K order, so the bits do not depend on how the rows or
 * columns are split between threads (or replicas) on a given CPU.
 *
 *     if (gx_cpu_gemm_packable(op, attr, &a, &b, &y, true, why, sizeof why)) {
 *         float *packed = malloc(gx_cpu_gemm_packed_floats(op, attr, &b) * sizeof(float));
 *         gx_cpu_gemm_pack(op, attr, &b, packed);
 *         step->kernel = gx_cpu_gemm_packed_kernel(op);     // reads in[1] packed
 *     }
 *
 * Packed B: panels of GX_GEMM_PANEL columns, panel p holding columns
 * [p * 16, p * 16 + 16) of B (as the product reads it: B, or Bᵀ for Gemm's
 * transB) as K rows of 16 floats, zero past N. The value keeps B's view
 * (dtype, logical shape), so every analysis of the plan sees B; only its
 * data and size differ. The kernels take K from A and N from Y.
 */
#ifndef GX_OPS_GEMM_H
#define GX_OPS_GEMM_H

#include "ops/backend.h"
#include "ops/op.h"

#define GX_GEMM_PANEL 16

/* Rows of A a block of the product takes: A's block is read again for
 * each pair of panels, from L2, while the panels stream from L3 once per
 * block. bench/bench_gemm measures the packed kernels against OpenBLAS
 * (docs/kernels.md). */
#define GX_GEMM_ROW_BLOCK 128

/* Can step (op MatMul or Gemm with these attributes, inputs a and b and
 * output y, shapes inferred) run from b packed? b must be a constant 2-D
 * float32 matrix and a float32 (Gemm: not transposed); false with why ("B
 * is not a constant") otherwise. The answer never depends on A's rows, so
 * a plan and the plans of its batch slices (replicas) run the same kernel
 * and give the same bits. */
bool gx_cpu_gemm_packable(gx_op op, const gx_attrval *attr, const gx_view *a, const gx_view *b,
                          const gx_view *y, bool b_const, char *why, size_t whylen);

/* Floats of b packed: P * K * 16. */
size_t gx_cpu_gemm_packed_floats(gx_op op, const gx_attrval *attr, const gx_view *b);

/* Packs b into dst (gx_cpu_gemm_packed_floats of them). */
void gx_cpu_gemm_pack(gx_op op, const gx_attrval *attr, const gx_view *b, float *dst);

/* The kernel that reads in[1] packed, for MatMul or Gemm. */
gx_kernel_fn gx_cpu_gemm_packed_kernel(gx_op op);

/* The packed kernel for op on the ISA called isa ("avx512", "avx2",
 * "baseline"), whatever gx_cpu_gemm_isa_set chose; NULL when this CPU
 * lacks it. The tune registry's candidates (daemon/tune) are these. */
gx_kernel_fn gx_cpu_gemm_packed_kernel_isa(gx_op op, const char *isa);

/* The name of the i-th ISA this CPU has kernels for, widest first (i from
 * 0); NULL past the last. */
const char *gx_cpu_gemm_isa_name(int i);

/* Is fn one of the packed kernels (any ISA)? (Their shares differ: see below.) */
bool gx_cpu_gemm_is_packed(gx_kernel_fn fn);

/* The block of y (as rows of its last dim, n columns) that share ith of
 * k->nth of a packed kernel writes: rows [r0, r1) × columns [c0, c1).
 * Whole rows, or with few rows (batch-1 inference: fewer than
 * GX_GEMM_SPLIT_ROWS per thread) a range of panels of every row, so the
 * threads still split the work and B is read once. Every element is
 * computed the same way whatever the split. */
typedef struct gx_gemm_block {
    int64_t r0, r1, c0, c1, n;
} gx_gemm_block;
#define GX_GEMM_SPLIT_ROWS 8
void gx_cpu_gemm_packed_share(const gx_kargs *k, const gx_view *y, gx_gemm_block *b);

/* The product itself, for kernels that build A on the fly (a Conv's
 * im2col rows): y[rows, n] (row stride ldy) = a[rows, kk] (row stride lda)
 * · bp, B packed as above with n columns (panel p at bp + p * kk * 16);
 * with accumulate, y += instead of y =. Rows only, on this thread. */
void gx_cpu_gemm_packed_rows(int64_t rows, int64_t n, int64_t kk, const float *a, int64_t lda,
                             const float *bp, float *y, int64_t ldy, bool accumulate);

/* The same kernels over a B that is not packed (a MatMul of two values,
 * such as attention's Q·Kᵀ): y[rows, n] = a[rows, kk] · b[kk, n], b
 * row-major with row stride ldb, read in place (each panel's k-th row is
 * 16 contiguous floats); columns past the last whole panel in plain C.
 * With accumulate, y += instead of y =. Worth it while B stays in cache
 * (GX_GEMM_PLAIN_MAX_B). */
void gx_cpu_gemm_rows(int64_t rows, int64_t n, int64_t kk, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *y, int64_t ldy, bool accumulate);

/* The tune registry's MatMul candidates besides the packed kernels
 * (daemon/tune/, through the CPU table's gemm_tune): float32 y = a · b,
 * B as it is, a share of A's rows each, through gx_cpu_gemm_rows
 * (plain_b) or OpenBLAS's cblas_sgemm (blas). */
void gx_cpu_matmul_plain_b(const gx_kargs *k);
void gx_cpu_matmul_blas(const gx_kargs *k);

/* Largest B (K × N floats) gx_cpu_gemm_rows is used for by the MatMul
 * kernel; a bigger one goes to the BLAS (bench/bench_gemm). Like
 * packability, the choice depends on B alone, never on A's rows. */
#define GX_GEMM_PLAIN_MAX_B (256 * 1024)

/* Which kernels run here: "avx512", "avx2" or "baseline": the widest the
 * CPU has, or GEXEC_GEMM_ISA's choice from the environment when the CPU
 * has it. */
const char *gx_cpu_gemm_isa(void);

/* gx_gemm_product_fn: ops/backend.h. */

/* Does fn compute right on this CPU? One product of fixed pseudo-random
 * data against a double reference (1e-4 relative); false with why (naming
 * `what`) when not, or when the check cannot allocate. gexecd checks the
 * kernels it chose (these, and the BLAS) this way at start. */
bool gx_cpu_gemm_verify(const char *what, gx_gemm_product_fn fn, void *ctx, int64_t rows,
                        int64_t kk, int64_t cols, char *why, size_t whylen);

/* Do the kernels in use compute right on this CPU? A product of odd sizes
 * through the packed and the plain-B paths (gx_cpu_gemm_verify); false
 * with why when not (gexecd then falls back to "baseline"). */
bool gx_cpu_gemm_selfcheck(char *why, size_t whylen);

/* Use the kernels called name from now on (tests compare them); false,
 * and nothing changes, when the CPU lacks them or there are none by that
 * name. A packed B serves every ISA. */
bool gx_cpu_gemm_isa_set(const char *name);

#endif
