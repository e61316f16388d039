/*
 * Inside the CPU backend: the kernel declarations that ops/cpu/kernels.c
 * lists, how a kernel finds its share of the work, and the one strided
 * iterator that broadcasting and transposing kernels walk.
 *
 *     int64_t lo, hi;
 *     gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);   // my elements
 *     gx_nditer it;
 *     gx_nditer_init(&it, y->ndim, y->shape, 2, strides); // broadcast strides
 *     gx_nditer_seek(&it, lo, hi);
 *     gx_nditer_run r;
 *     while (gx_nditer_next(&it, &r))
 *         row(r.n, y + r.y, a + r.off[0], b + r.off[1]);  // inner stride it.step[i]
 */
#ifndef GX_OPS_CPU_H
#define GX_OPS_CPU_H

#include <string.h>

#include "ops/schema.h"

/* gx_cpu_ADD ..., one per op with a kernel, in ops/cpu/<family>.c. */
#define GX_CPU_KERNEL_DECL(e, name) void gx_cpu_##e(const gx_kargs *k);
GX_KERNEL_OP_LIST(GX_CPU_KERNEL_DECL)
#undef GX_CPU_KERNEL_DECL

/* The kernels per memory layout (ops/layout.h) by what they run, for the
 * name table (ops/cpu/names.c): a Conv's in layout l (nhwc, nchw16c; else
 * NULL), a pool's or BatchNormalization's in either blocked layout (NULL
 * for other ops), Resize's in nhwc, Concat's in either. */
gx_kernel_fn gx_cpu_conv_layout_fn(gx_layout l);
gx_kernel_fn gx_cpu_pool_layout_fn(gx_op op);
gx_kernel_fn gx_cpu_resize_layout_fn(void);
gx_kernel_fn gx_cpu_concat_layout_fn(void);

/* IEEE binary16 and bfloat16 <-> float32 (round to nearest even; NaN stays
 * NaN). */
static inline float gx_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man) { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t gx_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN */
        return sign | 0x7e00;
    if (ax >= 0x477ff000u) /* rounds to >= 65520: inf */
        return sign | 0x7c00;
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or 0 */
        if (ax < 0x33000000u)
            return sign;
        uint32_t e = ax >> 23, man = (ax & 0x7fffff) | 0x800000;
        int shift = (int)(126 - e); /* 14..24 */
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t r = ax + 0xfff + ((ax >> 13) & 1); /* round to nearest even */
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

/* f rounded to the nearest float16 and back: gx_f16_to_f32(gx_f32_to_f16(f))
 * bit for bit (NaN becomes the quiet NaN 0x7fc00000 with f's sign), without
 * branches so that loops over it vectorize: the normal range rounds the
 * mantissa to 10 bits in the integer bits; below float16's smallest normal
 * the float addition of 0.5 rounds to a multiple of 2^-24 (ties to even),
 * which float16's subnormals are. */
static inline float gx_f32_round_f16(float f)
{
    uint32_t x, s, r;
    memcpy(&x, &f, sizeof x);
    const uint32_t ax = x & 0x7fffffffu;
    float a;
    memcpy(&a, &ax, sizeof a);
    const float sub = (a + 0.5f) - 0.5f;
    memcpy(&s, &sub, sizeof s);
    r = (ax + 0xfffu + ((ax >> 13) & 1u)) & 0xffffe000u;
    r = ax < 0x38800000u ? s : r;
    r = ax >= 0x477ff000u ? 0x7f800000u : r;
    r = ax > 0x7f800000u ? 0x7fc00000u : r;
    r |= x & 0x80000000u;
    memcpy(&f, &r, sizeof f);
    return f;
}

static inline float gx_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t gx_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* On a hot loop: compiled for AVX-512, AVX2 and the x86-64 baseline; the
 * loader picks the widest the CPU has, so one binary runs everywhere and
 * uses what it finds (the build has no -march). The results are the same
 * bits on every path: the build never contracts a * b + c into an FMA
 * (-ffp-contract=off in Makefile.am). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) /* TSan's runtime is not up when ifuncs resolve */
#define GX_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* The same without AVX-512: for code with a variant of its own there */
#define GX_CPU_CLONES_256 __attribute__((target_clones("avx2", "default")))
#else
#define GX_CPU_CLONES
#define GX_CPU_CLONES_256
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

/* Lanes [0, n) of 8 int32 set (n <= 0: none; n >= 8: all): AVX2's mask
 * of a partial vector's loads and stores. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) __m256i
gx_mask8(int64_t n)
{
    const int32_t m = n < 0 ? 0 : n > 8 ? 8 : (int32_t)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

/* Floats in a 64-byte cache line: element shares are multiples of this so
 * that two threads never write the same line. */
#define GX_CPU_LINE 16

/* Share ith of nth of n work units: [*lo, *hi), balanced, boundaries on
 * multiples of align (except the end, n); shares of all ith tile [0, n). */
void gx_cpu_share(const gx_kargs *k, int64_t n, int64_t align, int64_t *lo, int64_t *hi);

/* A cooperating share (gx_coop) waits until done reaches n: the units
 * claimed before its own are running on other shares; spins, yielding
 * now and then. */
void gx_cpu_coop_wait(_Atomic int64_t *done, int64_t n);

/* Element i of p, of any dtype but string, as a double (bool: 0 or 1;
 * ops/cpu/elementwise.c). */
double gx_cpu_load_f64(const void *p, gx_dtype dt, int64_t i);

/* Dropout in training with a non-zero ratio (ops/cpu/random.c). */
void gx_cpu_dropout_draw(const gx_kargs *k);

/* Element strides of a contiguous tensor of shape in[0..nin) seen from an
 * output of rank nout >= nin it broadcasts to (dims aligned from the right):
 * strides[0..nout) is 0 where the input's dim is 1 or missing. */
void gx_bcast_strides(int nout, int nin, const int64_t *in, int64_t *strides);

#define GX_NDITER_MAX_IN 3

/* Walks a contiguous output of some shape in runs along its innermost dim,
 * tracking where each input (given by element strides per output dim) is.
 * Output dims of size 1 are dropped and dims contiguous in every operand
 * are merged, so same-shape and scalar-broadcast operands become one run. */
typedef struct gx_nditer {
    int ndim, n_in;
    int64_t shape[GX_MAX_DIMS];
    int64_t stride[GX_NDITER_MAX_IN][GX_MAX_DIMS];
    int64_t step[GX_NDITER_MAX_IN]; /* stride of each input along a run */
    int64_t pos, end;
    int64_t idx[GX_MAX_DIMS];
    int64_t off[GX_NDITER_MAX_IN];
} gx_nditer;

/* One run: n output elements from element y, input i from element off[i]
 * advancing by the iterator's step[i]. */
typedef struct gx_nditer_run {
    int64_t y, n;
    int64_t off[GX_NDITER_MAX_IN];
} gx_nditer_run;

/* strides[i] points at ndim strides of input i (n_in <= GX_NDITER_MAX_IN). */
void gx_nditer_init(gx_nditer *it, int ndim, const int64_t *shape, int n_in,
                    const int64_t *const *strides);
/* Restricts the walk to output elements [lo, hi). */
void gx_nditer_seek(gx_nditer *it, int64_t lo, int64_t hi);
/* The next run, or false when [lo, hi) is done. */
bool gx_nditer_next(gx_nditer *it, gx_nditer_run *r);

#endif
