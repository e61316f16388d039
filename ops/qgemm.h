/*
 * Integer products over weights packed once per plan (seed 004's "library
 * data", as ops/gemm.h for float32): a MatMulInteger, QLinearMatMul or
 * QLinearConv (2-D, group 1) whose B (W) is a constant int8 or uint8
 * tensor runs from a copy of it the prepare pass packs (through the
 * device's qgemm_pack slot, ops/backend.h), four uint8 x int8 products
 * into each int32 lane (AVX512-VNNI where the CPU has it), with the exact
 * sums of the reference kernels: the same bits on every ISA and split.
 * The packed value keeps B's view (dtype, logical shape).
 */
#ifndef GX_OPS_QGEMM_H
#define GX_OPS_QGEMM_H

#include "ops/op.h"

/* Most K (a row's products) the packed kernels take. */
#define GX_QGEMM_MAX_K 8192

/* The input the packed form replaces: B of MatMulInteger (1), of
 * QLinearMatMul and W of QLinearConv (3). */
int gx_cpu_qgemm_b_input(gx_op op);

/* Can the step (op, its resolved attributes, its n_in inputs as inferred,
 * output y) run from its B packed? false with why otherwise. */
bool gx_cpu_qgemm_packable(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                           const gx_view *y, bool b_const, char *why, size_t whylen);

/* Bytes of b packed, and the packing (dst GX_ALIGN-aligned). */
size_t gx_cpu_qgemm_packed_bytes(gx_op op, const gx_view *b);
void gx_cpu_qgemm_pack(gx_op op, const gx_view *b, void *dst);

/* The kernel that reads the packed B, and its implementation's name
 * ("qgemm.avx512vnni", "qgemm.avx2", "qgemm.baseline"). */
gx_kernel_fn gx_cpu_qgemm_kernel(gx_op op);
const char *gx_cpu_qgemm_impl(void);

/* The wide form of a packed B (packed: the packed value, which keeps B's
 * view): its panels as int16, each quad of a panel's [16 columns][4 k]
 * bytes as [2 pairs of k][16 columns][2 k] int16 at the same index (the
 * quad at pb + o is at pw + o), which AVX2's dot products read; NULL
 * where it is not packed: CPUs without AVX2, and MatMulInteger's and
 * QLinearMatMul's B (few rows read it once: the int8 panels, half the
 * bytes, are faster there; they have a narrow form instead, which only
 * their kernel reads, ops/cpu/qgemm.c). */
const int16_t *gx_cpu_qgemm_wide(gx_op op, const gx_view *packed);

/* c[r * ldc + j - p0 * 16] = the int32 dot products of rows r < rows
 * (at most 8, each k4 groups of 4 uint8 at a + r * lda, zeros past K) by
 * the columns j of packed B's panels [p0, p1) (pb: past the column
 * sums; pw: the wide form at the same panel, gx_cpu_qgemm_wide), on the
 * ISA the packed kernels use: VNNI, AVX2 (from pw where it is not NULL)
 * or plain loops; the same integers on each. */
typedef void (*gx_qgemm_dots_fn)(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                 const int8_t *pb, const int16_t *pw, int64_t p0, int64_t p1,
                                 int32_t *c, int64_t ldc);
gx_qgemm_dots_fn gx_cpu_qgemm_dots(void);

#endif
