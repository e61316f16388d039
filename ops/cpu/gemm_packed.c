/*
 * MatMul and Gemm (float32) over a B packed at compile time (ops/gemm.h),
 * and the same kernels over a plain row-major B (gx_cpu_gemm_rows).
 *
 * The work: for each block of GX_GEMM_ROW_BLOCK rows of A, for each pair
 * of 16-column panels of B, for each block of K (all of it while the
 * panels fit in L1: s_k_block), for each group of MR rows, a
 * register-blocked micro kernel runs the block's K loop: MR × 32
 * accumulators, one broadcast of A[i][k] and two panel loads per k, the
 * sums added to y after the first block. A lone row (batch-1 inference) is
 * a matrix-vector product that streams B once, four panels at a time. A
 * thread's share is whole rows, or with few rows panels of every row
 * (gx_cpu_gemm_packed_share).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/gemm.h"

#define S_P GX_GEMM_PANEL

/* y[i][j] for MR rows and up to 2 panels: the sum over k of a[i][k] *
 * panel[k][j], then y = alpha * sum (+ beta * y when beta != 0). Row k of
 * a panel is at b + k * ldbk (16 when packed, N for a plain row-major B),
 * the second panel pstride floats after the first. ncols: the columns of y
 * from the first panel's first (the rest is padding). */
typedef void (*s_micro_fn)(int64_t kk, const float *a, int64_t lda, const float *b,
                           int64_t ldbk, int64_t pstride, float *y, int64_t ldy, int64_t ncols,
                           float alpha, float beta);

/* The ISA's kernels by rows (1..mr) and panels (1..np); wide, if any,
 * takes one row and wide_np panels (more independent sums: a lone row,
 * matrix-vector, is otherwise bound by the latency of its few chains). */
typedef struct s_isa {
    const char *name;
    int mr, np;
    s_micro_fn fn[8][2];
    s_micro_fn wide;
    int wide_np;
} s_isa;

/* ---- AVX-512: up to 8 rows × 2 panels (16 accumulators) ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#define S_X86 1

#define S_T512 __attribute__((target("avx512f")))
#define S_T256 __attribute__((target("avx2,fma")))

static inline S_T512 __attribute__((always_inline)) void
s_micro512(const int mr, const int np, int64_t kk, const float *a, int64_t lda, const float *b,
           int64_t ldbk, int64_t pstride, float *y, int64_t ldy, int64_t ncols, float alpha,
           float beta)
{
    __m512 acc[8][4];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int p = 0; p < np; p++)
            acc[i][p] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kk; k++) {
        __m512 bv[4];
#pragma GCC unroll 4
        for (int p = 0; p < np; p++)
            bv[p] = _mm512_loadu_ps(b + p * pstride + k * ldbk);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            const __m512 av = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 4
            for (int p = 0; p < np; p++)
                acc[i][p] = _mm512_fmadd_ps(av, bv[p], acc[i][p]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 4
    for (int p = 0; p < np; p++) {
        const int64_t left = ncols - p * S_P;
        const __mmask16 m = left >= S_P ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            float *yp = y + i * ldy + p * S_P;
            __m512 v = alpha == 1.0f ? acc[i][p] : _mm512_mul_ps(acc[i][p], va);
            if (beta != 0.0f)
                v = _mm512_add_ps(v, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, yp)));
            _mm512_mask_storeu_ps(yp, m, v);
        }
    }
}

/* ---- AVX2 + FMA: up to 6 rows × 1 panel (two 8-lane halves: 12), or
 * one row × 4 panels (8) ---- */

static inline S_T256 __attribute__((always_inline)) void
s_micro256(const int mr, const int np, int64_t kk, const float *a, int64_t lda, const float *b,
           int64_t ldbk, int64_t pstride, float *y, int64_t ldy, int64_t ncols, float alpha,
           float beta)
{
    /* alpha and beta through memory: held in registers across the K loop
     * (GCC keeps them in two of the 16 ymm), 6 rows' 12 sums, two panel
     * halves and a broadcast no longer fit, and one sum went to the stack
     * and back every k (64x512x512: 38 GFLOP/s) */
    volatile float ab[2] = {alpha, beta};
    __m256 acc[6][4][2];
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int p = 0; p < np; p++)
            acc[i][p][0] = acc[i][p][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kk; k++) {
        __m256 b0[4], b1[4];
#pragma GCC unroll 4
        for (int p = 0; p < np; p++) {
            b0[p] = _mm256_loadu_ps(b + p * pstride + k * ldbk);
            b1[p] = _mm256_loadu_ps(b + p * pstride + k * ldbk + 8);
        }
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            const __m256 av = _mm256_broadcast_ss(a + i * lda + k);
#pragma GCC unroll 4
            for (int p = 0; p < np; p++) {
                acc[i][p][0] = _mm256_fmadd_ps(av, b0[p], acc[i][p][0]);
                acc[i][p][1] = _mm256_fmadd_ps(av, b1[p], acc[i][p][1]);
            }
        }
    }
    const float al = ab[0], be = ab[1];
    const __m256 va = _mm256_set1_ps(al), vb = _mm256_set1_ps(be);
#pragma GCC unroll 4
    for (int p = 0; p < np; p++) {
        const int64_t left = ncols - p * S_P, n = left < S_P ? left : S_P;
#pragma GCC unroll 6
        for (int i = 0; i < mr; i++) {
            float *yp = y + i * ldy + p * S_P;
            __m256 v0 = al == 1.0f ? acc[i][p][0] : _mm256_mul_ps(acc[i][p][0], va);
            __m256 v1 = al == 1.0f ? acc[i][p][1] : _mm256_mul_ps(acc[i][p][1], va);
            if (n == S_P) {
                if (be != 0.0f) {
                    v0 = _mm256_add_ps(v0, _mm256_mul_ps(vb, _mm256_loadu_ps(yp)));
                    v1 = _mm256_add_ps(v1, _mm256_mul_ps(vb, _mm256_loadu_ps(yp + 8)));
                }
                _mm256_storeu_ps(yp, v0);
                _mm256_storeu_ps(yp + 8, v1);
                continue;
            }
            float tmp[S_P];
            _mm256_storeu_ps(tmp, v0);
            _mm256_storeu_ps(tmp + 8, v1);
            for (int64_t j = 0; j < n; j++)
                yp[j] = be != 0.0f ? tmp[j] + be * yp[j] : tmp[j];
        }
    }
}

#define S_K512(MR, NP)                                                        \
    static S_T512 void s_k512_##MR##_##NP(int64_t kk, const float *a, int64_t lda, \
                                          const float *b, int64_t lk, int64_t ps, float *y, \
                                          int64_t ldy, int64_t nc, float al, float be) \
    {                                                                         \
        s_micro512(MR, NP, kk, a, lda, b, lk, ps, y, ldy, nc, al, be);        \
    }
#define S_K512_ROW(MR) S_K512(MR, 1) S_K512(MR, 2)
S_K512_ROW(1)
S_K512_ROW(2)
S_K512_ROW(3)
S_K512_ROW(4)
S_K512_ROW(5)
S_K512_ROW(6)
S_K512_ROW(7)
S_K512_ROW(8)
S_K512(1, 4)

#define S_K256(MR, NP)                                                        \
    static S_T256 void s_k256_##MR##_##NP(int64_t kk, const float *a, int64_t lda, \
                                          const float *b, int64_t lk, int64_t ps, float *y, \
                                          int64_t ldy, int64_t nc, float al, float be) \
    {                                                                         \
        s_micro256(MR, NP, kk, a, lda, b, lk, ps, y, ldy, nc, al, be);        \
    }
S_K256(1, 1)
S_K256(2, 1)
S_K256(3, 1)
S_K256(4, 1)
S_K256(5, 1)
S_K256(6, 1)
S_K256(1, 4)

static const s_isa s_avx512 = {
    "avx512", 8, 2,
    {{s_k512_1_1, s_k512_1_2}, {s_k512_2_1, s_k512_2_2}, {s_k512_3_1, s_k512_3_2},
     {s_k512_4_1, s_k512_4_2}, {s_k512_5_1, s_k512_5_2}, {s_k512_6_1, s_k512_6_2},
     {s_k512_7_1, s_k512_7_2}, {s_k512_8_1, s_k512_8_2}},
    s_k512_1_4, 4};
static const s_isa s_avx2 = {
    "avx2", 6, 1,
    {{s_k256_1_1}, {s_k256_2_1}, {s_k256_3_1}, {s_k256_4_1}, {s_k256_5_1}, {s_k256_6_1}},
    s_k256_1_4, 4};
#endif

/* ---- baseline: 4 rows × 1 panel, plain C (no FMA: -ffp-contract=off) ---- */

static inline __attribute__((always_inline)) void
s_micro_c(const int mr, int64_t kk, const float *a, int64_t lda, const float *b, int64_t ldbk,
          float *y, int64_t ldy, int64_t ncols, float alpha, float beta)
{
    float acc[4][S_P] = {{0}};
    for (int64_t k = 0; k < kk; k++)
        for (int i = 0; i < mr; i++) {
            const float av = a[i * lda + k];
            for (int j = 0; j < S_P; j++)
                acc[i][j] += av * b[k * ldbk + j];
        }
    const int64_t n = ncols < S_P ? ncols : S_P;
    for (int i = 0; i < mr; i++)
        for (int64_t j = 0; j < n; j++) {
            float v = alpha == 1.0f ? acc[i][j] : acc[i][j] * alpha;
            y[i * ldy + j] = beta != 0.0f ? v + beta * y[i * ldy + j] : v;
        }
}

#define S_KC(MR)                                                              \
    static void s_kc_##MR(int64_t kk, const float *a, int64_t lda, const float *b, int64_t lk, \
                          int64_t ps, float *y, int64_t ldy, int64_t nc, float al, float be) \
    {                                                                         \
        s_micro_c(MR, kk, a, lda, b, lk, y, ldy, nc, al, be);                 \
    }
S_KC(1)
S_KC(2)
S_KC(3)
S_KC(4)

static const s_isa s_base = {"baseline", 4, 1, {{s_kc_1}, {s_kc_2}, {s_kc_3}, {s_kc_4}}, NULL, 0};

/* The kernels this CPU can run, widest first. */
static const s_isa *s_supported(int i)
{
    const s_isa *all[3] = {NULL, NULL, &s_base};
#ifdef S_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        all[0] = &s_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        all[1] = &s_avx2;
#endif
    return all[i];
}

static _Atomic(const s_isa *) s_the_isa;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void s_init(void)
{
    const char *want = getenv("GEXEC_GEMM_ISA");
    if (!want || !gx_cpu_gemm_isa_set(want))
        for (int i = 0; i < 3 && !atomic_load(&s_the_isa); i++)
            atomic_store(&s_the_isa, s_supported(i));
}

static const s_isa *s_isa_get(void)
{
    pthread_once(&s_once, s_init);
    return atomic_load_explicit(&s_the_isa, memory_order_relaxed);
}

const char *gx_cpu_gemm_isa(void)
{
    return s_isa_get()->name;
}

bool gx_cpu_gemm_isa_set(const char *name)
{
    for (int i = 0; i < 3; i++) {
        const s_isa *isa = s_supported(i);
        if (isa && !strcmp(isa->name, name)) {
            atomic_store(&s_the_isa, isa);
            return true;
        }
    }
    return false;
}

/* The K rows of B a micro kernel reads per call: all of them while np
 * panels of K rows fit in L1 (48 KiB), else even blocks of at most 32 KiB
 * of panels, which the block's row groups then read from L1 instead of
 * L2. Depends on K alone, so every split of the rows computes the same
 * sums (each block's partial sum is added to y in K order). */
static int64_t s_k_block(int64_t kk, int np)
{
    const int64_t fit = 48 * 1024 / (np * S_P * (int64_t)sizeof(float));
    const int64_t max = 32 * 1024 / (np * S_P * (int64_t)sizeof(float));
    if (kk <= fit)
        return kk > 0 ? kk : 1;
    const int64_t blocks = (kk + max - 1) / max;
    return (kk + blocks - 1) / blocks;
}

/* Rows [r0, r1) × panels [p0, p1) of y (row stride ldy, n columns) =
 * alpha * a (rows of kk floats, stride lda) · B (+ beta * y), B's panel p
 * at b + p * pstride with its row k ldbk floats further (ops/gemm.h's
 * packed form: pstride kk * 16, ldbk 16; a row-major B [kk, ldbk]: pstride
 * 16, whose panels must then all be whole). */
static void s_product(const s_isa *isa, int64_t r0, int64_t r1, int64_t p0, int64_t p1,
                      int64_t kk, int64_t n, const float *a, int64_t lda, const float *b,
                      int64_t ldbk, int64_t pstride, float *y, int64_t ldy, float alpha,
                      float beta)
{
    const int64_t kc = s_k_block(kk, isa->np);
    if (r1 - r0 == 1 && isa->wide) { /* a lone row: wide_np panels at a time */
        int64_t p = p0;
        for (; p + isa->wide_np <= p1; p += isa->wide_np)
            for (int64_t k0 = 0; k0 < kk; k0 += kc) /* the same sums as below */
                isa->wide(kk - k0 < kc ? kk - k0 : kc, a + r0 * lda + k0, lda,
                          b + p * pstride + k0 * ldbk, ldbk, pstride, y + r0 * ldy + p * S_P,
                          ldy, n - p * S_P, alpha, k0 ? 1.0f : beta);
        p0 = p; /* the rest as below */
    }
    for (int64_t rb = r0; rb < r1; rb += GX_GEMM_ROW_BLOCK) {
        const int64_t re = rb + GX_GEMM_ROW_BLOCK < r1 ? rb + GX_GEMM_ROW_BLOCK : r1;
        for (int64_t p = p0; p < p1; p += isa->np) {
            const int np = p + isa->np <= p1 ? isa->np : (int)(p1 - p);
            for (int64_t k0 = 0; k0 < kk; k0 += kc) {
                const int64_t kn = kk - k0 < kc ? kk - k0 : kc;
                const float *bp = b + p * pstride + k0 * ldbk;
                const float be = k0 ? 1.0f : beta; /* later blocks add to the first's sums */
                for (int64_t r = rb; r < re; r += isa->mr) {
                    const int mr = r + isa->mr <= re ? isa->mr : (int)(re - r);
                    isa->fn[mr - 1][np - 1](kn, a + r * lda + k0, lda, bp, ldbk, pstride,
                                            y + r * ldy + p * S_P, ldy, n - p * S_P, alpha, be);
                }
            }
        }
    }
}

/* The packed form's product (ops/gemm.h). */
static void s_packed_product(const s_isa *isa, int64_t r0, int64_t r1, int64_t p0, int64_t p1,
                             int64_t kk, int64_t n, const float *a, int64_t lda, const float *bp,
                             float *y, int64_t ldy, float alpha, float beta)
{
    s_product(isa, r0, r1, p0, p1, kk, n, a, lda, bp, S_P, kk * S_P, y, ldy, alpha, beta);
}

/* Rows of B the panel of gx_cpu_gemm_rows's last columns takes at a time
 * (on the stack). */
#define S_TAIL_K 256

void gx_cpu_gemm_rows(int64_t rows, int64_t n, int64_t kk, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *y, int64_t ldy, bool accumulate)
{
    const int64_t whole = n / S_P, tail = n - whole * S_P;
    if (rows <= 0 || n <= 0)
        return;
    const s_isa *isa = s_isa_get();
    s_product(isa, 0, rows, 0, whole, kk, n, a, lda, b, ldb, S_P, y, ldy, 1.0f,
              accumulate ? 1.0f : 0.0f);
    if (tail && kk == 0 && !accumulate)
        for (int64_t i = 0; i < rows; i++)
            memset(y + i * ldy + whole * S_P, 0, (size_t)tail * sizeof *y);
    /* the columns past the last whole panel (all of them for a conv of a
     * few output positions): copied into a panel padded with zeros,
     * S_TAIL_K rows at a time, through the same kernels */
    float panel[S_TAIL_K * S_P] __attribute__((aligned(64)));
    for (int64_t k0 = 0; tail && k0 < kk; k0 += S_TAIL_K) {
        const int64_t kn = kk - k0 < S_TAIL_K ? kk - k0 : S_TAIL_K;
        for (int64_t k = 0; k < kn; k++) {
            memcpy(panel + k * S_P, b + (k0 + k) * ldb + whole * S_P, (size_t)tail * sizeof *b);
            memset(panel + k * S_P + tail, 0, (size_t)(S_P - tail) * sizeof *panel);
        }
        s_product(isa, 0, rows, 0, 1, kn, tail, a + k0, lda, panel, S_P, S_P, y + whole * S_P,
                  ldy, 1.0f, k0 || accumulate ? 1.0f : 0.0f);
    }
}

void gx_cpu_gemm_packed_rows(int64_t rows, int64_t n, int64_t kk, const float *a, int64_t lda,
                             const float *bp, float *y, int64_t ldy, bool accumulate)
{
    if (rows > 0 && n > 0)
        s_packed_product(s_isa_get(), 0, rows, 0, (n + S_P - 1) / S_P, kk, n, a, lda, bp, y, ldy,
                         1.0f,
                         accumulate ? 1.0f : 0.0f);
}

/* ---- the compiler's side ---- */

bool gx_cpu_gemm_packable(gx_op op, const gx_attrval *attr, const gx_view *a, const gx_view *b,
                          const gx_view *y, bool b_const, char *why, size_t whylen)
{
    const char *no = NULL;
    if (op != GX_OP_MATMUL && op != GX_OP_GEMM)
        no = "not a MatMul or Gemm";
    else if (a->dtype != GX_F32 || b->dtype != GX_F32 || y->dtype != GX_F32)
        no = "not float32";
    else if (!b_const)
        no = "B is not a constant";
    else if (b->ndim != 2)
        no = "B is not a matrix";
    else if (op == GX_OP_GEMM && attr[GX_GEMM_TRANSA].i != 0)
        no = "A is transposed";
    else if (a->ndim < 1 || b->numel == 0)
        no = "empty";
    if (no)
        snprintf(why, whylen, "%s", no);
    return no == NULL;
}

/* K and N of the product b takes part in. */
static void s_kn(gx_op op, const gx_attrval *attr, const gx_view *b, int64_t *kk, int64_t *n)
{
    const bool tb = op == GX_OP_GEMM && attr[GX_GEMM_TRANSB].i != 0;
    *kk = b->shape[tb ? 1 : 0];
    *n = b->shape[tb ? 0 : 1];
}

size_t gx_cpu_gemm_packed_floats(gx_op op, const gx_attrval *attr, const gx_view *b)
{
    int64_t kk, n;
    s_kn(op, attr, b, &kk, &n);
    return (size_t)((n + S_P - 1) / S_P * kk * S_P);
}

void gx_cpu_gemm_pack(gx_op op, const gx_attrval *attr, const gx_view *b, float *dst)
{
    const bool tb = op == GX_OP_GEMM && attr[GX_GEMM_TRANSB].i != 0;
    int64_t kk, n;
    s_kn(op, attr, b, &kk, &n);
    const float *src = b->data;
    const int64_t panels = (n + S_P - 1) / S_P;
    for (int64_t p = 0; p < panels; p++)
        for (int64_t k = 0; k < kk; k++)
            for (int64_t j = 0; j < S_P; j++) {
                const int64_t c = p * S_P + j;
                dst[(p * kk + k) * S_P + j] = c >= n ? 0.0f : tb ? src[c * kk + k] : src[k * n + c];
            }
}

/* ---- the kernels ---- */

void gx_cpu_gemm_packed_share(const gx_kargs *k, const gx_view *y, gx_gemm_block *b)
{
    const int64_t n = y->ndim >= 1 ? y->shape[y->ndim - 1] : 1;
    const int64_t rows = n > 0 ? y->numel / n : 0, panels = (n + S_P - 1) / S_P;
    *b = (gx_gemm_block){.n = n, .c1 = n};
    if (k->nth > 1 && rows < GX_GEMM_SPLIT_ROWS * k->nth && panels >= k->nth) {
        /* few rows: each thread takes some panels of every row, so B is
         * read once in all rather than once per thread */
        int64_t p0, p1;
        gx_cpu_share(k, panels, 1, &p0, &p1);
        b->r1 = p0 < p1 ? rows : 0;
        b->c0 = p0 * S_P < n ? p0 * S_P : n;
        b->c1 = p1 * S_P < n ? p1 * S_P : n;
        return;
    }
    gx_cpu_share(k, rows, 1, &b->r0, &b->r1);
}

/* The share of a product of y = a · packed (n columns). */
static void s_run(const gx_kargs *k, const s_isa *isa, float alpha, float beta)
{
    const gx_view *a = &k->in[0], *bp = &k->in[1], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1];
    gx_gemm_block b;
    gx_cpu_gemm_packed_share(k, y, &b);
    if (b.r0 < b.r1 && b.c0 < b.c1)
        s_packed_product(isa, b.r0, b.r1, b.c0 / S_P, (b.c1 + S_P - 1) / S_P, kk, b.n, a->data, kk,
                         bp->data, y->data, b.n, alpha, beta);
}

/* MatMul: A [..., M, K] (or [K]) by the packed B [K, N]: every leading
 * dim of A is just more rows. */
static void s_matmul_packed_on(const gx_kargs *k, const s_isa *isa)
{
    const gx_view *y = &k->out[0];
    const int64_t n = y->shape[y->ndim - 1];
    if (n == 0 || y->numel == 0)
        return;
    s_run(k, isa, 1.0f, 0.0f);
}

/* Gemm: Y = alpha * A B + beta * C; this share's part of Y receives C
 * (broadcast) first, then the product adds onto it. With beta == 0 C is
 * not read. */
static void s_gemm_packed_on(const gx_kargs *k, const s_isa *isa)
{
    const gx_view *y = &k->out[0];
    const gx_view *c = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    const float alpha = (float)k->attr[GX_GEMM_ALPHA].f, beta = (float)k->attr[GX_GEMM_BETA].f;
    const int64_t m = y->shape[0], n = y->shape[1];
    if (m == 0 || n == 0)
        return;
    float cbeta = 0.0f;
    if (c && beta != 0.0f) {
        int64_t cs[2];
        gx_gemm_block b;
        gx_cpu_gemm_packed_share(k, y, &b);
        gx_bcast_strides(2, c->ndim, c->shape, cs);
        const float *pc = c->data;
        float *py = y->data;
        for (int64_t i = b.r0; i < b.r1; i++) {
            const float *crow = pc + i * cs[0];
            float *yrow = py + i * n;
            if (cs[1]) /* a row of C: contiguous */
                memcpy(yrow + b.c0, crow + b.c0, (size_t)(b.c1 - b.c0) * sizeof *yrow);
            else
                for (int64_t j = b.c0; j < b.c1; j++)
                    yrow[j] = crow[0];
        }
        cbeta = beta;
    }
    s_run(k, isa, alpha, cbeta);
}

/* The kernels: on the ISA in use, and on each ISA (daemon/tune's
 * candidates). */
#define S_PACKED_ON(NAME, ISA)                                                \
    static void s_matmul_packed##NAME(const gx_kargs *k)                      \
    {                                                                         \
        s_matmul_packed_on(k, ISA);                                           \
    }                                                                         \
    static void s_gemm_packed##NAME(const gx_kargs *k)                        \
    {                                                                         \
        s_gemm_packed_on(k, ISA);                                             \
    }
S_PACKED_ON(, s_isa_get())
S_PACKED_ON(_baseline, &s_base)
#ifdef S_X86
S_PACKED_ON(_avx512, &s_avx512)
S_PACKED_ON(_avx2, &s_avx2)
#endif

static const struct {
    const s_isa *isa;
    gx_kernel_fn matmul, gemm;
} s_by_isa[] = {
#ifdef S_X86
    {&s_avx512, s_matmul_packed_avx512, s_gemm_packed_avx512},
    {&s_avx2, s_matmul_packed_avx2, s_gemm_packed_avx2},
#endif
    {&s_base, s_matmul_packed_baseline, s_gemm_packed_baseline},
};

gx_kernel_fn gx_cpu_gemm_packed_kernel(gx_op op)
{
    return op == GX_OP_GEMM ? s_gemm_packed : op == GX_OP_MATMUL ? s_matmul_packed : NULL;
}

const char *gx_cpu_gemm_isa_name(int i)
{
    for (int j = 0, seen = 0; j < 3; j++) {
        const s_isa *isa = s_supported(j);
        if (isa && seen++ == i)
            return isa->name;
    }
    return NULL;
}

gx_kernel_fn gx_cpu_gemm_packed_kernel_isa(gx_op op, const char *name)
{
    for (size_t i = 0; i < sizeof s_by_isa / sizeof s_by_isa[0]; i++) {
        const s_isa *isa = s_by_isa[i].isa;
        bool has = false;
        for (int j = 0; j < 3 && !has; j++)
            has = s_supported(j) == isa;
        if (has && !strcmp(isa->name, name))
            return op == GX_OP_GEMM     ? s_by_isa[i].gemm
                   : op == GX_OP_MATMUL ? s_by_isa[i].matmul
                                        : NULL;
    }
    return NULL;
}

bool gx_cpu_gemm_is_packed(gx_kernel_fn fn)
{
    if (fn && (fn == s_gemm_packed || fn == s_matmul_packed))
        return true;
    for (size_t i = 0; fn && i < sizeof s_by_isa / sizeof s_by_isa[0]; i++)
        if (fn == s_by_isa[i].matmul || fn == s_by_isa[i].gemm)
            return true;
    return false;
}

bool gx_cpu_gemm_verify(const char *what, gx_gemm_product_fn fn, void *ctx, int64_t rows,
                        int64_t kk, int64_t cols, char *why, size_t whylen)
{
    float *a = malloc(sizeof *a * (size_t)(rows * kk + 1));
    float *b = malloc(sizeof *b * (size_t)(kk * cols + 1));
    float *y = malloc(sizeof *y * (size_t)(rows * cols + 1));
    bool ok = a && b && y;
    if (!ok)
        snprintf(why, whylen, "%s: out of memory for the check", what);
    uint32_t s = 2463534242u;
    for (int64_t i = 0; ok && i < rows * kk; i++)
        a[i] = (float)((s = s * 1664525u + 1013904223u) >> 9) / 8388608.0f - 0.5f;
    for (int64_t i = 0; ok && i < kk * cols; i++)
        b[i] = (float)((s = s * 1664525u + 1013904223u) >> 9) / 8388608.0f - 0.5f;
    if (ok)
        fn(ctx, rows, kk, cols, a, b, y);
    for (int64_t i = 0; ok && i < rows; i++)
        for (int64_t j = 0; ok && j < cols; j++) {
            double r = 0;
            for (int64_t l = 0; l < kk; l++)
                r += (double)a[i * kk + l] * b[l * cols + j];
            const double d = y[i * cols + j] - r, tol = 1e-4 * (1.0 + (r < 0 ? -r : r));
            if (!(d <= tol && -d <= tol)) { /* NaN fails too */
                snprintf(why, whylen, "%s computed %g instead of %g at [%lld,%lld]", what,
                         (double)y[i * cols + j], r, (long long)i, (long long)j);
                ok = false;
            }
        }
    free(a), free(b), free(y);
    return ok;
}

static void s_check_packed(void *ctx, int64_t rows, int64_t kk, int64_t cols, const float *a,
                           const float *b, float *y)
{
    const gx_view vb = {.dtype = GX_F32, .ndim = 2, .shape = {kk, cols}, .numel = kk * cols,
                        .data = (void *)b};
    float *bp = malloc(gx_cpu_gemm_packed_floats(GX_OP_MATMUL, NULL, &vb) * sizeof *bp);
    if (!bp) {
        memset(y, 0xff, sizeof *y * (size_t)(rows * cols)); /* NaN: the check fails */
        return;
    }
    gx_cpu_gemm_pack(GX_OP_MATMUL, NULL, &vb, bp);
    gx_cpu_gemm_packed_rows(rows, cols, kk, a, kk, bp, y, cols, false);
    free(bp);
}

static void s_check_plain(void *ctx, int64_t rows, int64_t kk, int64_t cols, const float *a,
                          const float *b, float *y)
{
    gx_cpu_gemm_rows(rows, cols, kk, a, kk, b, cols, y, cols, false);
}

bool gx_cpu_gemm_selfcheck(char *why, size_t whylen)
{
    char packed[64], plain[64];
    snprintf(packed, sizeof packed, "the %s packed kernel", s_isa_get()->name);
    snprintf(plain, sizeof plain, "the %s plain-B kernel", s_isa_get()->name);
    return gx_cpu_gemm_verify(packed, s_check_packed, NULL, 13, 37, 45, why, whylen) &&
           gx_cpu_gemm_verify(plain, s_check_plain, NULL, 13, 37, 45, why, whylen);
}
