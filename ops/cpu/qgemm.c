/*
 * Integer products over weights packed once per plan (ops/qgemm.h):
 * MatMulInteger, QLinearMatMul and QLinearConv (group 1, 2-D) whose B (W)
 * is a constant int8 or uint8 tensor.
 *
 * Arithmetic: every product's exact int32 sum of (a - a_zp)(b - b_zp),
 * whatever the ISA, share or order, so the bits are the reference
 * kernels' (ops/cpu/quant.c, ops/cpu/matmul.c). The sums are taken as
 * sum(a' b') - b_zp' sum(a') - a_zp' sum(b') + K a_zp' b_zp' with a' = a
 * as uint8 (int8 A flipped by 128, its zero point with it) and b' = b as
 * int8 (uint8 B flipped by 128): the form AVX512-VNNI's vpdpbusd takes,
 * four uint8 x int8 products added into each int32 lane (AVX2 widens both
 * to int16 for vpmaddwd: s_dots_avx2).
 *
 * Packed B (gx_cpu_qgemm_pack): the int32 column sums of b' (N rounded up
 * to 16, zeros past N), then panels of 16 columns, each K4 = ceil(K / 4)
 * quads of [16 columns][4 k] int8 (zeros past K and N); a QLinearConv's
 * then also W's direct form (s_direct_bytes) and, where the CPU has
 * AVX2, its panels again as int16 pairs (the wide form, s_wide_bytes); a
 * product's, where the CPU has AVX2, then the narrow form
 * (s_narrow_bytes): the pairs of k a panel took out so that the rest fit
 * vpmaddubsw (s_pack_narrow), added back after the dots (s_block_dots).
 *
 * A is copied eight rows at a time into a buffer of K4 * 4 bytes a row
 * (flipped to uint8, zeros past K); a QLinearConv's rows are its im2col
 * rows (taps outside x read x_zp, which adds nothing), in the order of
 * W's [C, kh, kw], except for a QLinearConv on VNNI, which runs
 * directly from a second packed form of W (s_qconv_direct). Shares: a product's are (block of rows, pair of
 * panels), so a few rows (a batch-1 layer) still split; a QLinearConv's
 * are blocks of rows (output positions).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/cpu/qwide.h"
#include "ops/cpu/requant.h"
#include "ops/gemm.h"
#include "ops/qgemm.h"
#include "ops/schema.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S_VNNI_OK 1
#define S_TVNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define S_TAVX2 __attribute__((target("avx2")))
#endif

#define S_P 16 /* columns of a panel */
#define S_R 8  /* rows of A a block takes */
#define S_MB 8 /* output channels a block of the direct QLinearConv takes */
/* Output channels of a conv whose K (C kh kw) is above GX_QGEMM_MAX_K at
 * most: its sums gather over chunks of channels in S_R x S_MAXM int32. */
#define S_MAXM 2048
/* K of a conv at most (channels in chunks): d = sum of K products of at
 * most 255 x 128 stays an exact int32. */
#define S_MAXK_CONV 65536

/* ---- what the packed kernels take ---- */

/* Is op a convolution (W [M, C, kh, kw]: K = C kh kw, N = M)? */
static bool s_conv(gx_op op)
{
    return op == GX_OP_QLINEAR_CONV || op == GX_OP_CONVINTEGER;
}

/* K and N of op's product with B (or W) b. */
static void s_kn(gx_op op, const gx_view *b, int64_t *k, int64_t *n)
{
    if (s_conv(op)) {
        *n = b->shape[0];
        *k = b->numel / (b->shape[0] ? b->shape[0] : 1);
    } else {
        *k = b->shape[0];
        *n = b->shape[1];
    }
}

/* A conv's K in chunks of whole channels, each at most GX_QGEMM_MAX_K
 * (one chunk, all of K, for the products and for most convs): channels
 * per chunk, and chunks. */
static int64_t s_chunk_c(gx_op op, const gx_view *b, int64_t *chunks)
{
    int64_t k, n;
    s_kn(op, b, &k, &n);
    const int64_t c = s_conv(op) && b->ndim == 4 ? b->shape[1] : 1;
    const int64_t taps = c ? k / c : 0;
    int64_t cc = c;
    if (s_conv(op) && k > GX_QGEMM_MAX_K && taps > 0)
        cc = GX_QGEMM_MAX_K / taps;
    *chunks = cc > 0 ? (c + cc - 1) / cc : 0;
    return cc;
}

/* Quads of chunk ch (of cc channels of c, taps each): its K rounded up to
 * 4. */
static int64_t s_chunk_k4(int64_t c, int64_t cc, int64_t taps, int64_t ch)
{
    const int64_t c1 = (ch + 1) * cc < c ? (ch + 1) * cc : c;
    return ((c1 - ch * cc) * taps + 3) / 4;
}

static bool s_byte_type(gx_dtype t)
{
    return t == GX_I8 || t == GX_U8;
}

int gx_cpu_qgemm_b_input(gx_op op)
{
    return op == GX_OP_MATMUL_INTEGER || op == GX_OP_CONVINTEGER ? 1 : 3;
}

/* Is optional input i of in present, with at most max elements? */
static bool s_small(const gx_view *in, int n_in, int i, int64_t max)
{
    return i >= n_in || in[i].ndim < 0 || in[i].numel <= max;
}

bool gx_cpu_qgemm_packable(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                           const gx_view *y, bool b_const, char *why, size_t whylen)
{
    const int ib = gx_cpu_qgemm_b_input(op);
    const char *name = gx_op_name(op);
    if (op != GX_OP_MATMUL_INTEGER && op != GX_OP_QLINEAR_MATMUL && !s_conv(op)) {
        snprintf(why, whylen, "%s: no packed integer kernel", name);
        return false;
    }
    if (n_in <= ib || !b_const || !in[ib].data) {
        snprintf(why, whylen, "%s: B is not a constant", name);
        return false;
    }
    const gx_view *a = &in[0], *b = &in[ib];
    if (!s_byte_type(a->dtype) || !s_byte_type(b->dtype)) {
        snprintf(why, whylen, "%s: operands are not int8 or uint8", name);
        return false;
    }
    int64_t k, n;
    if (s_conv(op)) {
        const int group = op == GX_OP_QLINEAR_CONV ? GX_QLINEARCONV_GROUP : GX_CONV_GROUP;
        if (a->ndim != 4 || b->ndim != 4 || attr[group].i != 1) {
            snprintf(why, whylen, "%s: only 2-D convolutions of group 1", name);
            return false;
        }
    } else if (b->ndim != 2 || a->ndim < 2) {
        snprintf(why, whylen, "%s: B is not a matrix", name);
        return false;
    }
    s_kn(op, b, &k, &n);
    const int64_t max_k = s_conv(op) ? S_MAXK_CONV : GX_QGEMM_MAX_K;
    if (k < 1 || n < 1 || k > max_k || (s_conv(op) && k / b->shape[1] > GX_QGEMM_MAX_K)) {
        snprintf(why, whylen, "%s: K of %lld (1 to %lld)", name, (long long)k,
                 (long long)max_k);
        return false;
    }
    if (k > GX_QGEMM_MAX_K && n > S_MAXM) {
        snprintf(why, whylen, "%s: %lld output channels with K of %lld (at most %d above %d)",
                 name, (long long)n, (long long)k, S_MAXM, GX_QGEMM_MAX_K);
        return false;
    }
    /* the reference kernels' parameters: per tensor, B's zero point also
     * per column (MatMulInteger), W's scale and zero point per channel */
    bool ok;
    if (op == GX_OP_MATMUL_INTEGER || op == GX_OP_CONVINTEGER)
        ok = s_small(in, n_in, 2, 1) && s_small(in, n_in, 3, n);
    else if (op == GX_OP_QLINEAR_MATMUL)
        ok = in[4].numel == 1 && in[5].numel == 1 && in[2].numel == 1;
    else
        ok = in[2].numel == 1 && in[4].numel <= n && in[5].numel <= n;
    if (!ok) {
        snprintf(why, whylen, "%s: scales or zero points of a shape the packed kernel lacks",
                 name);
        return false;
    }
    (void)y;
    return true;
}

/* Bytes of the GEMM form (column sums, then each chunk's panels). */
static size_t s_gemm_bytes(gx_op op, const gx_view *b)
{
    int64_t k, n, chunks;
    s_kn(op, b, &k, &n);
    const int64_t cc = s_chunk_c(op, b, &chunks), c = s_conv(op) ? b->shape[1] : 1;
    const int64_t np = (n + S_P - 1) / S_P * S_P;
    int64_t k4 = chunks == 1 ? (k + 3) / 4 : 0;
    for (int64_t ch = 0; chunks > 1 && ch < chunks; ch++)
        k4 += s_chunk_k4(c, cc, k / c, ch);
    return (size_t)(np * 4 + np * k4 * 4);
}

/* Bytes of a conv's direct form (S_MB blocks of output channels, each
 * [C4][taps][S_MB][4] int8); 0 for the products. */
static size_t s_direct_bytes(gx_op op, const gx_view *w)
{
    if (!s_conv(op))
        return 0;
    const int64_t mb = (w->shape[0] + S_MB - 1) / S_MB, c4 = (w->shape[1] + 3) / 4;
    return (size_t)(mb * c4 * (w->numel / (w->shape[0] * w->shape[1])) * S_MB * 4);
}

/* Are the AVX2 forms packed (the wide and the narrow one, which AVX2's
 * dots read)? Where the CPU has AVX2. */
static bool s_avx2_forms(void)
{
#ifdef S_VNNI_OK
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

/* Bytes of the wide form: a convolution's GEMM panels (every chunk's) as
 * int16, each quad's [16 columns][4 k] bytes as [2 pairs of k][16
 * columns][2 k], vpmaddwd's operands; 0 where it is not packed (and for
 * the products: s_dots_avx2). */
static size_t s_wide_bytes(gx_op op, const gx_view *b)
{
    int64_t k, n;
    s_kn(op, b, &k, &n);
    const int64_t np = (n + S_P - 1) / S_P * S_P;
    return s_conv(op) && s_avx2_forms() ? 2 * (s_gemm_bytes(op, b) - (size_t)np * 4) : 0;
}

const int16_t *gx_cpu_qgemm_wide(gx_op op, const gx_view *packed)
{
    if (!s_wide_bytes(op, packed))
        return NULL;
    return (const int16_t *)((const char *)packed->data + s_gemm_bytes(op, packed) +
                             s_direct_bytes(op, packed));
}

/* A pair of a product's b' (column j, k and k + 1) that vpmaddubsw's
 * int16 sum could saturate on (|b0| + |b1| > 128): the narrow form takes
 * it out of its panel (zeros there) and s_matmul adds it back after the
 * dots. */
typedef struct {
    int32_t k;     /* the pair's first k (even) */
    uint8_t j;     /* its column in the panel */
    int8_t b0, b1; /* b'[k][j], b'[k + 1][j] */
    uint8_t pad;
} s_fix;

/* Pairs a panel of k4 quads (32 k4 pairs) may have taken out at most:
 * past it the panel stays whole (weights of a full int8 range) and runs
 * AVX2's widening dots. A trained layer's weights, quantized by their
 * largest magnitude, have about 5 such pairs in ten thousand. */
static int64_t s_fix_cap(int64_t k4)
{
    return (k4 + 3) / 4;
}

/* Bytes of a product's narrow form (where the CPU has AVX2): a count per
 * panel of the pairs it has taken out (-1: none, the panel is whole),
 * then s_fix_cap fixes per panel; 0 for the convs. */
static size_t s_narrow_bytes(gx_op op, const gx_view *b)
{
    if (s_conv(op) || !s_avx2_forms())
        return 0;
    int64_t k, n;
    s_kn(op, b, &k, &n);
    const int64_t panels = (n + S_P - 1) / S_P;
    return (size_t)panels * (sizeof(int32_t) + (size_t)s_fix_cap((k + 3) / 4) * sizeof(s_fix));
}

/* The narrow form's counts (NULL where it is not packed); panel p's
 * fixes are at s_fixes. */
static const int32_t *s_narrow(gx_op op, const gx_view *packed)
{
    if (!s_narrow_bytes(op, packed))
        return NULL;
    return (const int32_t *)((const char *)packed->data + s_gemm_bytes(op, packed));
}

static const s_fix *s_fixes(const int32_t *counts, int64_t panels, int64_t k4, int64_t p)
{
    return (const s_fix *)(counts + panels) + p * s_fix_cap(k4);
}

size_t gx_cpu_qgemm_packed_bytes(gx_op op, const gx_view *b)
{
    return s_gemm_bytes(op, b) + s_direct_bytes(op, b) + s_wide_bytes(op, b) +
           s_narrow_bytes(op, b);
}

/* Takes out of each of the panels (k4 quads each) the pairs vpmaddubsw
 * could saturate on, into the narrow form at counts, where they are at
 * most s_fix_cap; a panel with more stays whole (count -1). */
static void s_pack_narrow(int8_t *pb, int64_t panels, int64_t k4, int32_t *counts)
{
    for (int64_t p = 0; p < panels; p++) {
        int8_t *w = pb + p * k4 * 64;
        s_fix *f = (s_fix *)(counts + panels) + p * s_fix_cap(k4);
        int64_t nf = 0;
        for (int64_t o = 0; o < k4 * 64; o += 2)
            nf += abs(w[o]) + abs(w[o + 1]) > 128;
        counts[p] = nf <= s_fix_cap(k4) ? (int32_t)nf : -1;
        for (int64_t o = 0; counts[p] > 0 && o < k4 * 64; o += 2)
            if (abs(w[o]) + abs(w[o + 1]) > 128) { /* quad o / 64, column o % 64 / 4 */
                *f++ = (s_fix){.k = (int32_t)(o / 64 * 4 + o % 4), .j = (uint8_t)(o % 64 / 4),
                               .b0 = w[o], .b1 = w[o + 1]};
                w[o] = w[o + 1] = 0;
            }
    }
}

/* b'[k][j]: element (k, j) of the product's B as int8. */
static int8_t s_b(gx_op op, const gx_view *b, int64_t k, int64_t n, int64_t kk, int64_t j)
{
    const int64_t e = s_conv(op) ? j * k + kk : kk * n + j;
    const uint8_t v = ((const uint8_t *)b->data)[e];
    return (int8_t)(b->dtype == GX_U8 ? v ^ 0x80 : v);
}

void gx_cpu_qgemm_pack(gx_op op, const gx_view *b, void *dst)
{
    int64_t k, n, chunks;
    s_kn(op, b, &k, &n);
    const int64_t cc = s_chunk_c(op, b, &chunks), cin = s_conv(op) ? b->shape[1] : 1;
    const int64_t np = (n + S_P - 1) / S_P * S_P, kc = chunks == 1 ? k : cc * (k / cin);
    int32_t *sums = dst;
    int8_t *panels = (int8_t *)(sums + np);
    memset(dst, 0, gx_cpu_qgemm_packed_bytes(op, b));
    for (int64_t ch = 0, at = 0; ch < chunks; ch++) { /* at: the chunk's first k */
        const int64_t k4 = chunks == 1 ? (k + 3) / 4 : s_chunk_k4(cin, cc, k / cin, ch);
        const int64_t end = at + kc < k ? at + kc : k;
        for (int64_t j = 0; j < n; j++) {
            int8_t *col = panels + j / S_P * k4 * 64 + j % S_P * 4;
            for (int64_t kk = at; kk < end; kk++) {
                const int8_t v = s_b(op, b, k, n, kk, j);
                col[(kk - at) / 4 * 64 + (kk - at) % 4] = v;
                sums[j] += v;
            }
        }
        panels += np * k4 * 4;
        at = end;
    }
    if (s_wide_bytes(op, b)) { /* quad by quad: (column j, k t) to pair t / 2's column j */
        const int8_t *from = (const int8_t *)(sums + np);
        int16_t *wide = (int16_t *)((char *)dst + s_gemm_bytes(op, b) + s_direct_bytes(op, b));
        for (size_t o = 0; o < (size_t)(panels - from); o += 64)
            for (int j = 0; j < S_P; j++)
                for (int t = 0; t < 4; t++)
                    wide[o + t / 2 * 32 + j * 2 + t % 2] = from[o + j * 4 + t];
    }
    if (s_narrow_bytes(op, b)) /* a product: one chunk */
        s_pack_narrow((int8_t *)(sums + np), np / S_P, (k + 3) / 4,
                      (int32_t *)((char *)dst + s_gemm_bytes(op, b)));
    if (!s_conv(op))
        return;
    /* the direct form: element (m, c, tap) at [m / S_MB][c / 4][tap][m % S_MB][c % 4] */
    int8_t *direct = (int8_t *)dst + s_gemm_bytes(op, b);
    const int64_t c = b->shape[1], c4 = (c + 3) / 4, taps = k / (c ? c : 1);
    for (int64_t j = 0; j < n; j++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t t = 0; t < taps; t++)
                direct[(((j / S_MB) * c4 + ci / 4) * taps + t) * S_MB * 4 + j % S_MB * 4 + ci % 4] =
                    s_b(op, b, k, n, ci * taps + t, j);
}

/* ---- the dot products ---- */

/* c[r * ldc + j - p0 * 16] = sum over k of a[r][k] b'[k][j] for rows r <
 * rows (at most S_R, each of k4 quads at a + r * lda) and the columns j of
 * panels [p0, p1). */
typedef gx_qgemm_dots_fn s_dots_fn;

GX_CPU_CLONES static void s_dots(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                 const int8_t *pb, const int16_t *pw, int64_t p0, int64_t p1,
                                 int32_t *c, int64_t ldc)
{
    (void)pw;
    for (int r = 0; r < rows; r++)
        for (int64_t p = p0; p < p1; p++) {
            int32_t acc[S_P] = {0};
            const int8_t *w = pb + p * k4 * 64;
            const uint8_t *ar = a + r * lda;
            for (int64_t q = 0; q < k4; q++)
                for (int j = 0; j < S_P; j++)
                    for (int t = 0; t < 4; t++)
                        acc[j] += ar[q * 4 + t] * w[q * 64 + j * 4 + t];
            memcpy(c + r * ldc + (p - p0) * S_P, acc, sizeof acc);
        }
}

#ifdef S_VNNI_OK
/* Two panels (w0 and w1, or w0 alone) by R rows (at most S_R): 2 R int32 accumulators
 * in registers (R a constant once inlined), each quad of k a broadcast of
 * 4 bytes of a row times a panel's 64 bytes. */
S_TVNNI static inline __attribute__((always_inline)) void
s_vnni_rows(const uint8_t *a, int64_t lda, const int R, int64_t k4, const int8_t *w0,
            const int8_t *w1, bool two, int32_t *c, int64_t ldc)
{
    /* named accumulators: an array of them would live on the stack */
    __m512i x0 = _mm512_setzero_si512(), y0 = x0, x1 = x0, y1 = x0, x2 = x0, y2 = x0, x3 = x0,
            y3 = x0, x4 = x0, y4 = x0, x5 = x0, y5 = x0, x6 = x0, y6 = x0, x7 = x0, y7 = x0;
#define S_ROW(r, x, y)                                                                             \
    do {                                                                                           \
        if (R > (r)) {                                                                             \
            int32_t quad;                                                                          \
            memcpy(&quad, a + (r) * lda + q * 4, sizeof quad);                                     \
            const __m512i av = _mm512_set1_epi32(quad);                                            \
            x = _mm512_dpbusd_epi32(x, av, b0);                                                    \
            y = _mm512_dpbusd_epi32(y, av, b1);                                                    \
        }                                                                                          \
    } while (0)
    for (int64_t q = 0; q < k4; q++) {
        const __m512i b0 = _mm512_loadu_si512(w0 + q * 64);
        const __m512i b1 = _mm512_loadu_si512(w1 + q * 64);
        S_ROW(0, x0, y0);
        S_ROW(1, x1, y1);
        S_ROW(2, x2, y2);
        S_ROW(3, x3, y3);
        S_ROW(4, x4, y4);
        S_ROW(5, x5, y5);
        S_ROW(6, x6, y6);
        S_ROW(7, x7, y7);
    }
#undef S_ROW
    const __m512i xs[S_R] = {x0, x1, x2, x3, x4, x5, x6, x7};
    const __m512i ys[S_R] = {y0, y1, y2, y3, y4, y5, y6, y7};
    for (int r = 0; r < R; r++) {
        _mm512_storeu_si512(c + r * ldc, xs[r]);
        if (two)
            _mm512_storeu_si512(c + r * ldc + S_P, ys[r]);
    }
}

S_TVNNI static void s_dots_vnni(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                const int8_t *pb, const int16_t *pw, int64_t p0, int64_t p1,
                                int32_t *c, int64_t ldc)
{
    (void)pw;
    for (int64_t p = p0; p < p1; p += 2) {
        const bool two = p + 1 < p1;
        const int8_t *w0 = pb + p * k4 * 64, *w1 = two ? w0 + k4 * 64 : w0;
        int32_t *cp = c + (p - p0) * S_P;
        switch (rows) {
#define S_CASE(n)                                                                                  \
    case n:                                                                                        \
        s_vnni_rows(a, lda, n, k4, w0, w1, two, cp, ldc);                                          \
        break;
            S_CASE(8)
            S_CASE(7)
            S_CASE(6)
            S_CASE(5)
            S_CASE(4)
            S_CASE(3)
            S_CASE(2)
#undef S_CASE
        default:
            s_vnni_rows(a, lda, 1, k4, w0, w1, two, cp, ldc);
            break;
        }
    }
}

/* AVX2 has no uint8 x int8 product that is exact (vpmaddubsw saturates
 * its int16 pair sums, unless |b0| + |b1| <= 128: s_dots_narrow, for the
 * panels of a product's narrow form), so the dots take both as int16 and vpmaddwd: a
 * pair of int16 products summed into an int32, exact (at most 2 x 255 x
 * 128). A's rows are widened per call, S_KC quads at a time, into a
 * buffer. B is read one of two ways:
 *   - a convolution's from the pack's wide form (pw: W's panels widened
 *     once; widening them in each call cost a third of the time, as a
 *     conv's many rows make it compute-bound): a pair of k of a panel is
 *     two vectors of 8 columns, times a row's pair broadcast, so 4 rows
 *     by 16 columns are 8 sums in registers, in column order;
 *   - a product's (few rows, its B streamed once a job: the int16 form
 *     would double the bytes read) from the int8 panels (pw NULL): a
 *     panel's quad is four 16-byte groups of 4 columns x 4 k, each
 *     widened to a ymm whose int32 lanes are (column, k 0-1) and
 *     (column, k 2-3) pair sums against a row's quad broadcast, added
 *     together at the end (hadd).
 * The int32 sums wrap as s_dots' do, so the bits are the same. */
#define S_KC 256 /* quads of A widened at a time: S_R x 2 KiB */
#define S_WR GX_QWIDE_R /* rows of a register tile */

/* xs[r] for R rows (a constant once inlined, at most S_R) over nq quads
 * of aw (R rows, each nq * 4 int16) and 4 columns of a panel (w: their
 * first quad): each column's (k 0-1) and (k 2-3) pair sums. */
S_TAVX2 static inline __attribute__((always_inline)) void
s_avx2_quarter(const int16_t *aw, int64_t nq, const int R, const int8_t *w, __m256i *xs)
{
    /* named accumulators: an array of them would live on the stack */
    __m256i x0 = _mm256_setzero_si256(), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0,
            x7 = x0;
#define S_ROW(r, x)                                                                                \
    do {                                                                                           \
        if (R > (r)) {                                                                             \
            int64_t a4;                                                                            \
            memcpy(&a4, aw + ((r) * nq + q) * 4, sizeof a4);                                       \
            x = _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_set1_epi64x(a4), b));                \
        }                                                                                          \
    } while (0)
    for (int64_t q = 0; q < nq; q++) {
        const __m256i b = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + q * 64)));
        S_ROW(0, x0);
        S_ROW(1, x1);
        S_ROW(2, x2);
        S_ROW(3, x3);
        S_ROW(4, x4);
        S_ROW(5, x5);
        S_ROW(6, x6);
        S_ROW(7, x7);
    }
#undef S_ROW
    xs[0] = x0, xs[1] = x1, xs[2] = x2, xs[3] = x3, xs[4] = x4, xs[5] = x5, xs[6] = x6, xs[7] = x7;
}

/* Columns [4 h, 4 h + 8) of a panel (w: its first quad) by R rows into c
 * (add: onto what c holds). */
S_TAVX2 static inline __attribute__((always_inline)) void
s_avx2_rows(const int16_t *aw, int64_t nq, const int R, const int8_t *w, int h, int32_t *c,
            int64_t ldc, bool add)
{
    __m256i lo[S_R], hi[S_R];
    s_avx2_quarter(aw, nq, R, w + h * 16, lo);
    s_avx2_quarter(aw, nq, R, w + h * 16 + 16, hi);
    for (int r = 0; r < R; r++) {
        /* lanes [0 1 4 5 | 2 3 6 7] of the 8 columns, then in order */
        __m256i v = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[r], hi[r]), 0xD8);
        if (add)
            v = _mm256_add_epi32(v, _mm256_loadu_si256((const __m256i *)(c + r * ldc)));
        _mm256_storeu_si256((__m256i *)(c + r * ldc), v);
    }
}

/* The 16 columns of a panel (w: its wide form's first quad) by R rows (a
 * constant once inlined, at most S_WR) over nq quads of aw (R rows, each
 * nq * 4 int16) into c (add: onto what c holds). */
S_TAVX2 static inline __attribute__((always_inline)) void
s_wide_rows(const int16_t *aw, int64_t nq, const int R, const int16_t *w, int32_t *c,
            int64_t ldc, bool add)
{
    __m256i ls[S_WR], hs[S_WR];
    gx_qwide_tile(aw, nq * 4, nq, R, w, ls, hs);
    for (int r = 0; r < R; r++) {
        __m256i *cl = (__m256i *)(c + r * ldc), *ch = (__m256i *)(c + r * ldc + 8);
        _mm256_storeu_si256(cl, add ? _mm256_add_epi32(ls[r], _mm256_loadu_si256(cl)) : ls[r]);
        _mm256_storeu_si256(ch, add ? _mm256_add_epi32(hs[r], _mm256_loadu_si256(ch)) : hs[r]);
    }
}

/* Quads [q0, q0 + nq) of A's rows (rows of them, lda bytes apart) as
 * int16, each row nq * 4 of them in aw. */
S_TAVX2 static inline __attribute__((always_inline)) void
s_widen_rows(const uint8_t *a, int64_t lda, int rows, int64_t q0, int64_t nq, int16_t *aw)
{
    const int64_t n = nq * 4;
    for (int r = 0; r < rows; r++) {
        const uint8_t *src = a + r * lda + q0 * 4;
        int16_t *dst = aw + r * n;
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256((__m256i *)(dst + i),
                                _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
        for (; i < n; i++)
            dst[i] = src[i];
    }
}

/* s_dots_avx2 from the wide form. */
S_TAVX2 static void s_dots_wide(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                const int16_t *pw, int64_t p0, int64_t p1, int32_t *c,
                                int64_t ldc)
{
    int16_t aw[S_R * S_KC * 4] __attribute__((aligned(64)));
    for (int64_t q0 = 0; q0 < k4; q0 += S_KC) {
        const int64_t nq = k4 - q0 < S_KC ? k4 - q0 : S_KC;
        s_widen_rows(a, lda, rows, q0, nq, aw);
        for (int64_t p = p0; p < p1; p++)
            for (int r0 = 0; r0 < rows; r0 += S_WR) {
                const int16_t *w = pw + p * k4 * 64 + q0 * 64, *ar = aw + r0 * nq * 4;
                int32_t *cp = c + r0 * ldc + (p - p0) * S_P;
                switch (rows - r0) {
                case 1: s_wide_rows(ar, nq, 1, w, cp, ldc, q0 > 0); break;
                case 2: s_wide_rows(ar, nq, 2, w, cp, ldc, q0 > 0); break;
                case 3: s_wide_rows(ar, nq, 3, w, cp, ldc, q0 > 0); break;
                default: s_wide_rows(ar, nq, 4, w, cp, ldc, q0 > 0); break;
                }
            }
    }
}

S_TAVX2 static void s_dots_avx2(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                const int8_t *pb, const int16_t *pw, int64_t p0, int64_t p1,
                                int32_t *c, int64_t ldc)
{
    if (pw) {
        s_dots_wide(a, lda, rows, k4, pw, p0, p1, c, ldc);
        return;
    }
    int16_t aw[S_R * S_KC * 4] __attribute__((aligned(64)));
    for (int64_t q0 = 0; q0 < k4; q0 += S_KC) {
        const int64_t nq = k4 - q0 < S_KC ? k4 - q0 : S_KC;
        s_widen_rows(a, lda, rows, q0, nq, aw);
        for (int64_t p = p0; p < p1; p++)
            for (int h = 0; h < 4; h += 2) {
                const int8_t *w = pb + p * k4 * 64 + q0 * 64;
                int32_t *cp = c + (p - p0) * S_P + h * 4;
                switch (rows) {
#define S_CASE(n)                                                                                  \
    case n:                                                                                        \
        s_avx2_rows(aw, nq, n, w, h, cp, ldc, q0 > 0);                                             \
        break;
                    S_CASE(8)
                    S_CASE(7)
                    S_CASE(6)
                    S_CASE(5)
                    S_CASE(4)
                    S_CASE(3)
                    S_CASE(2)
#undef S_CASE
                default:
                    s_avx2_rows(aw, nq, 1, w, h, cp, ldc, q0 > 0);
                    break;
                }
            }
    }
}

/* The 16 columns of a narrow panel (w: its first quad, every pair of k
 * of it |b0| + |b1| <= 128) by R rows (a constant once inlined, at most
 * S_WR) of a (lda apart) over k4 quads into c: vpmaddubsw's int16 pair
 * sums (at most 255 x 128, exact), vpmaddwd by 1 into the int32 quad
 * sums; half the multiplications of the widening dots. */
S_TAVX2 static inline __attribute__((always_inline)) void
s_narrow_rows(const uint8_t *a, int64_t lda, const int R, int64_t k4, const int8_t *w,
              int32_t *c, int64_t ldc)
{
    const __m256i one = _mm256_set1_epi16(1);
    /* named accumulators: an array of them would live on the stack */
    __m256i l0 = _mm256_setzero_si256(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0,
            h3 = l0;
#define S_ROW(r, l, h)                                                                             \
    do {                                                                                           \
        if (R > (r)) {                                                                             \
            int32_t a4;                                                                            \
            memcpy(&a4, a + (r) * lda + q * 4, sizeof a4);                                         \
            const __m256i av = _mm256_set1_epi32(a4);                                              \
            l = _mm256_add_epi32(l, _mm256_madd_epi16(_mm256_maddubs_epi16(av, bl), one));         \
            h = _mm256_add_epi32(h, _mm256_madd_epi16(_mm256_maddubs_epi16(av, bh), one));         \
        }                                                                                          \
    } while (0)
    for (int64_t q = 0; q < k4; q++) { /* columns 0-7, then 8-15, 4 k each */
        const __m256i bl = _mm256_loadu_si256((const __m256i *)(w + q * 64));
        const __m256i bh = _mm256_loadu_si256((const __m256i *)(w + q * 64 + 32));
        S_ROW(0, l0, h0);
        S_ROW(1, l1, h1);
        S_ROW(2, l2, h2);
        S_ROW(3, l3, h3);
    }
#undef S_ROW
    const __m256i ls[S_WR] = {l0, l1, l2, l3}, hs[S_WR] = {h0, h1, h2, h3};
    for (int r = 0; r < R; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * ldc), ls[r]);
        _mm256_storeu_si256((__m256i *)(c + r * ldc + 8), hs[r]);
    }
}

/* s_dots_avx2 for narrow panels (the narrow form, s_pack_narrow). */
S_TAVX2 static void s_dots_narrow(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                  const int8_t *pb, const int16_t *pw, int64_t p0, int64_t p1,
                                  int32_t *c, int64_t ldc)
{
    (void)pw;
    for (int64_t p = p0; p < p1; p++)
        for (int r0 = 0; r0 < rows; r0 += S_WR) {
            const uint8_t *ar = a + r0 * lda;
            const int8_t *w = pb + p * k4 * 64;
            int32_t *cp = c + r0 * ldc + (p - p0) * S_P;
            switch (rows - r0) {
            case 1: s_narrow_rows(ar, lda, 1, k4, w, cp, ldc); break;
            case 2: s_narrow_rows(ar, lda, 2, k4, w, cp, ldc); break;
            case 3: s_narrow_rows(ar, lda, 3, k4, w, cp, ldc); break;
            default: s_narrow_rows(ar, lda, 4, k4, w, cp, ldc); break;
            }
        }
}
#endif

/* The dots for narrow panels, given those for the others: AVX2's
 * vpmaddubsw form where the AVX2 dots run, else the same dots (exact on
 * any panel). */
static s_dots_fn s_dots_narrow_pick(s_dots_fn dots)
{
#ifdef S_VNNI_OK
    if (dots == s_dots_avx2)
        return s_dots_narrow;
#endif
    return dots;
}

/* The dot products for the ISA the GEMM uses (GEXEC_GEMM_ISA picks it for
 * tests too): VNNI where the CPU has it and the GEMM runs AVX-512, else
 * AVX2 unless the GEMM runs the baseline. Every path gives the same
 * integers. */
static s_dots_fn s_dots_pick(void)
{
#ifdef S_VNNI_OK
    if (!strcmp(gx_cpu_gemm_isa(), "avx512") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return s_dots_vnni;
    if (strcmp(gx_cpu_gemm_isa(), "baseline") && __builtin_cpu_supports("avx2"))
        return s_dots_avx2;
#endif
    return s_dots;
}

gx_qgemm_dots_fn gx_cpu_qgemm_dots(void)
{
    return s_dots_pick();
}

const char *gx_cpu_qgemm_impl(void)
{
    const s_dots_fn f = s_dots_pick();
#ifdef S_VNNI_OK
    if (f == s_dots_vnni)
        return "qgemm.avx512vnni";
    if (f == s_dots_avx2)
        return "qgemm.avx2";
#endif
    (void)f;
    return "qgemm.baseline";
}

/* ---- the rows ---- */

/* Row r of a block: K values as uint8 (flip: int8 input) and zeros to
 * K4 * 4; returns their sum. */
static int32_t s_row_u8(const uint8_t *src, int64_t k, int64_t k4, bool flip, uint8_t *dst)
{
    int32_t s = 0;
    for (int64_t i = 0; i < k; i++) {
        dst[i] = flip ? src[i] ^ 0x80 : src[i];
        s += dst[i];
    }
    memset(dst + k, 0, (size_t)(k4 * 4 - k));
    return s;
}

/* Zero point i of in (element e of a per-row or per-column one) as an
 * int32 of its own dtype; 0 when absent. */
static int32_t s_zp(const gx_kargs *k, int i, int64_t e)
{
    if (k->n_in <= i || k->in[i].ndim < 0 || k->in[i].numel == 0)
        return 0;
    const gx_view *z = &k->in[i];
    const int64_t at = z->numel > 1 ? e : 0;
    return z->dtype == GX_I8 ? ((const int8_t *)z->data)[at] : ((const uint8_t *)z->data)[at];
}

/* The exact sums of (a - az)(b - bz) from the dot products d of a' and
 * b', the row's sum sa of a', and the column sums sb of b': az and bz in
 * their dtypes' values, moved as a' and b' were. */
static inline int64_t s_exact(int32_t d, int32_t sa, int32_t sb, int32_t az, int32_t bz,
                              int64_t k)
{
    return (int64_t)d - (int64_t)bz * sa - (int64_t)az * sb + k * az * bz;
}

/* s_exact as the int32 MatMulInteger and ConvInteger write: the same sum
 * modulo 2^32, in wrapping unsigned arithmetic. */
static inline int32_t s_exact32(int32_t d, int32_t sa, int32_t sb, int32_t az, int32_t bz,
                                int32_t k)
{
    return (int32_t)((uint32_t)d - (uint32_t)bz * (uint32_t)sa - (uint32_t)az * (uint32_t)sb +
                     (uint32_t)k * (uint32_t)az * (uint32_t)bz);
}

/* s_exact32 for n columns of a row (vectorised). */
GX_CPU_CLONES static void s_exact_row(int64_t n, const int32_t *restrict d, int32_t sa,
                                      int32_t az, const int32_t *restrict bz,
                                      const int32_t *restrict sb, int32_t k, int32_t *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = s_exact32(d[i], sa, sb[i], az, bz[i], k);
}

/* n sums requantized into y from element e on, stride apart: acc * scale
 * (the product in double, as the ONNX reference's numpy does) rounded
 * half to even, plus yz, saturated to y's dtype (NaN: its lowest, as the
 * reference kernels). */
GX_CPU_CLONES static void s_requant(int n, const double *restrict acc, const float *restrict scale,
                                    float yz, float lo, float hi, float *restrict v)
{
    for (int i = 0; i < n; i++) {
        const float q = (float)rint(acc[i] * scale[i]) + yz;
        v[i] = !(q >= lo) ? lo : q > hi ? hi : q;
    }
}

static void s_store_q(const gx_view *y, int64_t e, int64_t stride, int n, const double *acc,
                      const float *scale, float yz)
{
    const bool s8 = y->dtype == GX_I8;
    float v[S_P * 2];
    s_requant(n, acc, scale, yz, s8 ? -128.0f : 0.0f, s8 ? 127.0f : 255.0f, v);
    if (s8)
        for (int i = 0; i < n; i++)
            ((int8_t *)y->data)[e + i * stride] = (int8_t)v[i];
    else
        for (int i = 0; i < n; i++)
            ((uint8_t *)y->data)[e + i * stride] = (uint8_t)v[i];
}

/* ---- MatMulInteger and QLinearMatMul ---- */

/* Adds the nf pairs a narrow panel took out (f) back onto c's rows (nr
 * of them, ldc apart; a: their uint8 rows, lda apart), in the wrapping
 * int32 the dots sum in. A pair outside the rows or the panel (only a
 * damaged plan's) is left out: the kernel reads no byte past them. */
static void s_add_fixes(const s_fix *f, int32_t nf, const uint8_t *a, int64_t lda, int nr,
                        int32_t *c, int64_t ldc)
{
    for (int32_t i = 0; i < nf; i++)
        for (int r = 0; r < nr && f[i].k >= 0 && f[i].k + 1 < lda && f[i].j < S_P; r++) {
            const uint8_t *ar = a + r * lda + f[i].k;
            int32_t *cr = c + r * ldc + f[i].j;
            *cr = (int32_t)((uint32_t)*cr + (uint32_t)(ar[0] * f[i].b0 + ar[1] * f[i].b1));
        }
}

/* Is panel p narrow (counts: the narrow form's, or NULL)? A count past
 * the cap (only a damaged plan's) reads as whole. */
static bool s_is_narrow(const int32_t *counts, int64_t k4, int64_t p)
{
    return counts && counts[p] >= 0 && counts[p] <= s_fix_cap(k4);
}

/* The dots of a block's nr rows (abuf, k4 quads each) by panels [p, p1)
 * into c (S_P * 2 a row), runs of narrow panels (counts: the narrow form's,
 * or NULL) by narrow's dots and their fixes added back. */
static void s_block_dots(s_dots_fn dots, s_dots_fn narrow, const uint8_t *abuf, int nr,
                         int64_t k4, const int8_t *pb, const int16_t *pw, const int32_t *counts,
                         int64_t panels, int64_t p, int64_t p1, int32_t *c)
{
    for (int64_t q = p, e; q < p1; q = e) {
        const bool nar = s_is_narrow(counts, k4, q);
        for (e = q + 1; e < p1 && s_is_narrow(counts, k4, e) == nar; e++)
            ;
        (nar ? narrow : dots)(abuf, k4 * 4, nr, k4, pb, pw, q, e, c + (q - p) * S_P, S_P * 2);
        for (int64_t i = q; nar && i < e; i++)
            s_add_fixes(s_fixes(counts, panels, k4, i), counts[i], abuf, k4 * 4, nr,
                        c + (i - p) * S_P, S_P * 2);
    }
}

static void s_matmul(const gx_kargs *k, bool requant)
{
    const int ib = requant ? 3 : 1, iaz = 2, ibz = requant ? 5 : 3;
    const gx_view *a = &k->in[0], *b = &k->in[ib], *y = &k->out[0];
    const int64_t kk = b->shape[0], n = b->shape[1], m = a->shape[a->ndim - 2];
    const int64_t np = (n + S_P - 1) / S_P * S_P, k4 = (kk + 3) / 4, rows = a->numel / kk;
    const int32_t *sb = b->data;
    const int8_t *pb = (const int8_t *)(sb + np);
    const gx_op op = requant ? GX_OP_QLINEAR_MATMUL : GX_OP_MATMUL_INTEGER;
    const int16_t *pw = gx_cpu_qgemm_wide(op, b);
    const int32_t *counts = s_narrow(op, b);
    const bool aflip = a->dtype == GX_I8, bflip = b->dtype == GX_U8;
    const s_dots_fn dots = s_dots_pick(), narrow = s_dots_narrow_pick(dots);
    float scale = 0, yz = 0;
    if (requant) {
        scale = *(const float *)k->in[1].data * *(const float *)k->in[4].data /
                *(const float *)k->in[6].data;
        yz = (float)s_zp(k, 7, 0);
    }
    /* units: (block of rows, pair of panels), so that a few rows (a
     * batch-1 layer) still split over the shares by columns */
    const int64_t pairs = (np / S_P + 1) / 2, units = (rows + S_R - 1) / S_R * pairs;
    int64_t lo, hi;
    gx_cpu_share(k, units, 1, &lo, &hi);
    uint8_t abuf[S_R * GX_QGEMM_MAX_K + 64];
    int32_t c[S_R * S_P * 2];
    int32_t sa[S_R], az[S_R];
    for (int64_t u = lo; u < hi; u++) {
        const int64_t blk = u / pairs, r0 = blk * S_R;
        const int nr = (int)(rows - r0 < S_R ? rows - r0 : S_R);
        for (int r = 0; r < nr && (u == lo || u % pairs == 0); r++) { /* the block's rows */
            sa[r] = s_row_u8((const uint8_t *)a->data + (r0 + r) * kk, kk, k4, aflip,
                             abuf + r * k4 * 4);
            /* (a per-row a_zero_point is MatMulInteger's, one per row of A's matrix) */
            az[r] = s_zp(k, iaz, (r0 + r) % m) + (aflip ? 128 : 0);
        }
        const int64_t p = u % pairs * 2, p1 = p + 2 < np / S_P ? p + 2 : np / S_P;
        const int64_t j0 = p * S_P, j1 = p1 * S_P < n ? p1 * S_P : n;
        int32_t bz[S_P * 2];
        float scales[S_P * 2];
        for (int64_t j = j0; j < j1; j++) {
            bz[j - j0] = s_zp(k, ibz, j) - (bflip ? 128 : 0);
            scales[j - j0] = scale;
        }
        s_block_dots(dots, narrow, abuf, nr, k4, pb, pw, counts, np / S_P, p, p1, c);
        for (int r = 0; r < nr; r++) {
            const int64_t row = r0 + r;
            const int32_t *cr = c + r * S_P * 2;
            if (requant) {
                double acc[S_P * 2];
                for (int64_t j = j0; j < j1; j++)
                    acc[j - j0] =
                        (double)s_exact(cr[j - j0], sa[r], sb[j], az[r], bz[j - j0], kk);
                s_store_q(y, row * n + j0, 1, (int)(j1 - j0), acc, scales, yz);
            } else {
                s_exact_row(j1 - j0, cr, sa[r], az[r], bz, sb + j0, (int32_t)kk,
                            (int32_t *)y->data + row * n + j0);
            }
        }
    }
}

static void s_matmul_integer(const gx_kargs *k)
{
    s_matmul(k, false);
}

static void s_qlinear_matmul(const gx_kargs *k)
{
    s_matmul(k, true);
}

/* ---- QLinearConv ---- */

/* Sum of n bytes (vectorised). */
GX_CPU_CLONES static int32_t s_sum_u8(const uint8_t *restrict p, int64_t n)
{
    int32_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += p[i];
    return s;
}

/* The taps of one window row: KW bytes of x's row (flipped when flip),
 * pad where a tap is outside [0, IW); in: all of them inside. */
static inline __attribute__((always_inline)) void
s_taps(uint8_t *restrict dst, const uint8_t *restrict row, int64_t iw0, int64_t kw, int64_t dw,
       int64_t iw_n, bool in, bool flip, uint8_t pad)
{
    const uint8_t fx = flip ? 0x80 : 0;
    if (in && kw == 3 && dw == 1) { /* most windows */
        dst[0] = row[iw0] ^ fx, dst[1] = row[iw0 + 1] ^ fx, dst[2] = row[iw0 + 2] ^ fx;
        return;
    }
    if (in) {
        for (int64_t j = 0; j < kw; j++)
            dst[j] = row[iw0 + j * dw] ^ fx;
        return;
    }
    for (int64_t j = 0; j < kw; j++) {
        const int64_t iw = iw0 + j * dw;
        dst[j] = iw >= 0 && iw < iw_n ? (uint8_t)(row[iw] ^ fx) : pad;
    }
}

/* The rows of S_R consecutive positions of a 1x1 window (stride 1, no
 * padding): channel i's byte of row r from src[i * plane + r], for nc
 * channels, flipped when flip; rows ld apart in dst. Eight channels at a
 * time are an 8x8 byte transpose. */
static void s_cols8(const uint8_t *src, int64_t plane, int64_t nc, bool flip, uint8_t *dst,
                    int64_t ld)
{
    int64_t i = 0;
#ifdef S_VNNI_OK
    const __m128i fx = _mm_set1_epi8(flip ? (char)0x80 : 0);
    for (; i + 8 <= nc; i += 8) {
        __m128i v[8];
        for (int j = 0; j < 8; j++)
            v[j] = _mm_loadl_epi64((const __m128i *)(src + (i + j) * plane));
        const __m128i a0 = _mm_unpacklo_epi8(v[0], v[1]), a1 = _mm_unpacklo_epi8(v[2], v[3]);
        const __m128i a2 = _mm_unpacklo_epi8(v[4], v[5]), a3 = _mm_unpacklo_epi8(v[6], v[7]);
        const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
        const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
        const __m128i e[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2),
                              _mm_unpacklo_epi32(b1, b3), _mm_unpackhi_epi32(b1, b3)};
        for (int r = 0; r < 4; r++) { /* rows 2 r and 2 r + 1 */
            const __m128i t = _mm_xor_si128(e[r], fx);
            _mm_storel_epi64((__m128i *)(dst + 2 * r * ld + i), t);
            _mm_storel_epi64((__m128i *)(dst + (2 * r + 1) * ld + i), _mm_unpackhi_epi64(t, t));
        }
    }
#endif
    for (; i < nc; i++)
        for (int r = 0; r < S_R; r++)
            dst[r * ld + i] = src[i * plane + r] ^ (flip ? 0x80 : 0);
}

/* The im2col rows of nr output positions from r0 (over images of pos
 * positions, C planes of IH x IW each at x) over channels [c0, c1): K =
 * (c1 - c0) kh kw bytes each, as uint8, x_zp' where a tap is outside,
 * zeros to k4 * 4, each row k4 * 4 bytes after the last in dst; their sums
 * in sa. The walk takes each window row (channel, kernel row) once for
 * all nr rows. */
static void s_im2col(const gx_win *w, const uint8_t *x, int64_t c, int64_t c0, int64_t c1,
                     int64_t pos, int64_t r0, int nr, bool flip, uint8_t pad, int64_t k4,
                     uint8_t *dst, int32_t *sa)
{
    const int64_t IH = w->in[0], IW = w->in[1], KH = w->k[0], KW = w->k[1], ld = k4 * 4;
    const int64_t dw = w->dil[1];
    const uint8_t *xn[S_R];
    int64_t ih0[S_R], iw0[S_R];
    bool in[S_R];
    for (int r = 0; r < nr; r++) {
        const int64_t n = (r0 + r) / pos, o = (r0 + r) % pos;
        xn[r] = x + n * c * IH * IW;
        ih0[r] = o / w->out[1] * w->stride[0] - w->pad_lo[0];
        iw0[r] = o % w->out[1] * w->stride[1] - w->pad_lo[1];
        in[r] = iw0[r] >= 0 && iw0[r] + (KW - 1) * dw < IW;
    }
    int64_t at = 0;
    /* a 1x1 window's rows: each channel's 8 positions are consecutive */
    const bool cols8 = KH == 1 && KW == 1 && w->stride[0] == 1 && w->stride[1] == 1 &&
                       w->out[0] == IH && w->out[1] == IW && nr == S_R && r0 % pos + S_R <= pos;
    if (cols8) {
        s_cols8(xn[0] + c0 * IH * IW + r0 % pos, IH * IW, c1 - c0, flip, dst, ld);
        at = c1 - c0;
    }
    for (int64_t ci = c0; ci < c1 && !cols8; ci++)
        for (int64_t i = 0; i < KH; i++, at += KW)
            for (int r = 0; r < nr; r++) {
                const int64_t ih = ih0[r] + i * w->dil[0];
                uint8_t *d = dst + r * ld + at;
                const uint8_t *row = xn[r] + (ci * IH + ih) * IW;
                if (ih < 0 || ih >= IH)
                    memset(d, pad, (size_t)KW);
                else if (flip)
                    s_taps(d, row, iw0[r], KW, dw, IW, in[r], true, pad);
                else
                    s_taps(d, row, iw0[r], KW, dw, IW, in[r], false, pad);
            }
    for (int r = 0; r < nr; r++) {
        memset(dst + r * ld + at, 0, (size_t)(ld - at));
        sa[r] = s_sum_u8(dst + r * ld, at);
    }
}

/* ---- QLinearConv, direct (AVX512-VNNI) ----
 *
 * A band of output rows of one image at a time, without im2col: x's rows
 * the band reads are copied once into planes of four channels
 * interleaved ([C4][phase][position][4] uint8, x_zp' in the padding).
 * With strides sh, sw the padded input is split into sh * sw phases
 * (padded row i goes to row i / sh of phase row i % sh, column j to
 * column j / sw of phase column j % sw), each row Wq = OW + (KW - 1) *
 * dw / sw wide; stride 1 has one phase, the padded rows themselves.
 * Output position p = r * Wq + ow of the band (ow < OW real, the rest of
 * each row scratch) then reads tap (kh, kw) of its window in phase (kh dh
 * % sh, kw dw % sw) at position p + (kh dh / sh) Wq + kw dw / sw: sixteen
 * consecutive positions are one 64-byte load per channel quad and tap,
 * multiplied by a broadcast quad of W's direct form. Registers: 2 x 16
 * positions by S_MB channels. The exact sums and the requantizing are
 * the GEMM path's (exact for these integers). Rows too wide for a band
 * of one row in S_DBYTES (ISNet's 512-1024 wide ones) are cut into tiles
 * of TW output columns, each a band of its own whose planes start at
 * the tile's first column (Wq = TW + (KW - 1) dw / sw). */

#define S_DPOS 2048             /* plane positions of a band at most */
#define S_DBYTES (64 * 1024)    /* interleaved bytes of a band at most */
#define S_DTAPS 64              /* window taps at most */

#ifdef S_VNNI_OK
typedef struct s_dgeom {
    int64_t c, c4, m, taps, kw, dh, dw, sh, sw, nph, wq, ow, oh, band, plane, cqs, vpos;
    int64_t tw, tiles; /* output columns of a tile (ow: whole rows), and tiles a row */
} s_dgeom;

/* A phase's positions with br output rows: the rows' positions rounded up
 * to 32, then what the last window reads past them. */
static int64_t s_dplane(const s_dgeom *g, int64_t br, int64_t *vpos)
{
    *vpos = (br * g->wq + 31) / 32 * 32;
    return *vpos + (g->taps / g->kw - 1) * g->dh / g->sh * g->wq + (g->kw - 1) * g->dw / g->sw;
}

/* Geometry of the direct path for w and nth shares: whole rows where a
 * band of one row fits, else tiles of columns (a multiple of 16 wide);
 * false when it does not apply (not even 16 columns fit: channels too
 * many). */
static bool s_dgeom_init(const gx_win *w, const gx_view *x, const gx_view *wt, int nth,
                         s_dgeom *g)
{
    if (w->nsp != 2 || w->k_size > S_DTAPS)
        return false;
    *g = (s_dgeom){.c = x->shape[1], .c4 = (x->shape[1] + 3) / 4, .m = wt->shape[0],
                   .taps = w->k_size, .kw = w->k[1], .dh = w->dil[0], .dw = w->dil[1],
                   .sh = w->stride[0], .sw = w->stride[1], .ow = w->out[1], .oh = w->out[0]};
    g->nph = g->sh * g->sw;
    const int64_t xw = (g->kw - 1) * g->dw / g->sw; /* columns a row reads past its outputs */
    g->tw = g->ow, g->tiles = 1;
    g->wq = g->tw + xw;
    const int64_t per = g->c4 * 4 * g->nph; /* bytes per phase position */
    const int64_t cap = S_DBYTES / per < S_DPOS / g->nph ? S_DBYTES / per : S_DPOS / g->nph;
    if (s_dplane(g, 1, &g->vpos) > cap) { /* the widest tile whose band of one row fits */
        const int64_t xh = (g->taps / g->kw - 1) * g->dh / g->sh;
        g->tw = ((cap - xw - 31) / (xh + 1) - xw) / 16 * 16;
        if (g->tw < 16)
            return false;
        g->wq = g->tw + xw;
        g->tiles = (g->ow + g->tw - 1) / g->tw;
    }
    /* the tallest band that fits, then, with several shares, lower for
     * about 2 bands (of whole tiles) a share (shorter bands waste more
     * positions) */
    int64_t br = 0;
    while (br < g->oh && s_dplane(g, br + 1, &g->vpos) <= cap)
        br++;
    if (br < 1)
        return false;
    int64_t want = nth > 1 ? (2 * (int64_t)nth + x->shape[0] - 1) / x->shape[0] : 1;
    want = (want + g->tiles - 1) / g->tiles;
    const int64_t even = (g->oh + want - 1) / want;
    g->band = even < br ? even : br;
    g->plane = s_dplane(g, g->band, &g->vpos);
    g->cqs = g->nph * g->plane;
    return true;
}

/* The interleaved planes of the band of output rows [oh0, oh0 + br) of
 * image xn (C planes of IH x IW), its tile of output columns from ow0,
 * every phase, and in s (unless NULL) the sum of the real channels at
 * each phase position (a dot product with ones). 16
 * positions at a time: with stride 1 along W a masked load of each of
 * the four channels' rows (x_zp' where a tap is outside x, zeros past C),
 * else gathered byte by byte, interleaved by bytes. */
S_TVNNI static void s_dplanes(const s_dgeom *g, const gx_win *w, const uint8_t *xn, int64_t oh0,
                              int64_t ow0, bool flip, uint8_t pad, uint8_t *restrict pl,
                              int32_t *restrict s)
{
    const int64_t IH = w->in[0], IW = w->in[1], lo = w->pad_lo[1];
    const __m128i padv = _mm_set1_epi8((char)pad), fx = _mm_set1_epi8(flip ? (char)0x80 : 0);
    const __m512i ones = _mm512_set1_epi8(1);
    const int64_t rows = (g->plane + g->wq - 1) / g->wq;
    for (int64_t cq = 0; cq < g->c4; cq++)
        for (int64_t ph = 0; ph < g->nph; ph++) {
            const int64_t pr = ph / g->sw, pc = ph % g->sw;
            uint8_t *plq = pl + (cq * g->cqs + ph * g->plane) * 4;
            int32_t *sq = s ? s + ph * g->plane : NULL;
            for (int64_t r = 0; r < rows; r++) {
                const int64_t ih = oh0 * g->sh - w->pad_lo[0] + r * g->sh + pr, p0 = r * g->wq;
                const int64_t n = p0 + g->wq <= g->plane ? g->wq : g->plane - p0;
                const uint8_t *row[4];
                for (int c = 0; c < 4; c++)
                    row[c] = cq * 4 + c < g->c && ih >= 0 && ih < IH
                                 ? xn + ((cq * 4 + c) * IH + ih) * IW
                                 : NULL;
                for (int64_t j0 = 0; j0 < n; j0 += 16) {
                    /* x's column of position j0 */
                    const int64_t iw0 = (ow0 + j0) * g->sw + pc - lo;
                    /* positions i in [i0, i1) read a column of x: 0 <= iw0 + i sw < IW */
                    int64_t i0 = iw0 >= 0 ? 0 : (g->sw - 1 - iw0) / g->sw;
                    int64_t i1 = IW - iw0 <= 0 ? 0 : (IW - iw0 + g->sw - 1) / g->sw;
                    i0 = i0 < 16 ? i0 : 16, i1 = i1 < 16 ? i1 : 16;
                    const __mmask16 in =
                        i0 < i1 ? (__mmask16)(((1u << i1) - 1) & ~((1u << i0) - 1)) : 0;
                    __m128i v[4];
                    for (int c = 0; c < 4; c++) {
                        if (row[c] && in == 0xFFFF && g->sw == 1) { /* inside x: plain */
                            v[c] = _mm_loadu_si128((const __m128i *)(row[c] + iw0));
                            v[c] = flip ? _mm_xor_si128(v[c], fx) : v[c];
                        } else if (!row[c]) {
                            v[c] = cq * 4 + c < g->c ? padv : _mm_setzero_si128();
                        } else if (g->sw == 1) {
                            v[c] = _mm_mask_blend_epi8(
                                in, padv,
                                _mm_xor_si128(_mm_maskz_loadu_epi8(in, row[c] + iw0), fx));
                        } else {
                            uint8_t b[16];
                            for (int i = 0; i < 16; i++)
                                b[i] = in >> i & 1 ? (uint8_t)(row[c][iw0 + i * g->sw] ^
                                                               (flip ? 0x80 : 0))
                                                   : pad;
                            v[c] = _mm_loadu_si128((const __m128i *)b);
                        }
                    }
                    const __m128i a = _mm_unpacklo_epi8(v[0], v[1]),
                                  ah = _mm_unpackhi_epi8(v[0], v[1]);
                    const __m128i b = _mm_unpacklo_epi8(v[2], v[3]),
                                  bh = _mm_unpackhi_epi8(v[2], v[3]);
                    __m512i q = _mm512_castsi128_si512(_mm_unpacklo_epi16(a, b));
                    q = _mm512_inserti32x4(q, _mm_unpackhi_epi16(a, b), 1);
                    q = _mm512_inserti32x4(q, _mm_unpacklo_epi16(ah, bh), 2);
                    q = _mm512_inserti32x4(q, _mm_unpackhi_epi16(ah, bh), 3);
                    const __mmask16 own =
                        n - j0 >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j0)) - 1);
                    _mm512_mask_storeu_epi32(plq + (p0 + j0) * 4, own, q);
                    if (!s)
                        continue;
                    const __m512i sum =
                        cq ? _mm512_maskz_loadu_epi32(own, sq + p0 + j0) : _mm512_setzero_si512();
                    _mm512_mask_storeu_epi32(sq + p0 + j0, own, _mm512_dpbusd_epi32(sum, q, ones));
                }
            }
        }
}

/* Output channels [mb * S_MB, + S_MB) at the band's 32 positions from p:
 * the int32 dot products of their windows into d[S_MB][32]. */
S_TVNNI static void s_dblock(const s_dgeom *g, const uint8_t *pl, const int8_t *wd,
                             const int64_t *off, int64_t p, int32_t *d)
{
    __m512i a0 = _mm512_setzero_si512(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0,
            b3 = a0, a4 = a0, b4 = a0, a5 = a0, b5 = a0, a6 = a0, b6 = a0, a7 = a0, b7 = a0;
    for (int64_t cq = 0; cq < g->c4; cq++) {
        const uint8_t *base = pl + (cq * g->cqs + p) * 4;
        const int8_t *wq = wd + cq * g->taps * S_MB * 4;
        for (int64_t t = 0; t < g->taps; t++) {
            const __m512i x0 = _mm512_loadu_si512(base + off[t] * 4);
            const __m512i x1 = _mm512_loadu_si512(base + off[t] * 4 + 64);
            const int32_t *wt = (const int32_t *)(wq + t * S_MB * 4);
#define S_CH(i, a, b)                                                                              \
    do {                                                                                           \
        const __m512i wv = _mm512_set1_epi32(wt[i]);                                               \
        a = _mm512_dpbusd_epi32(a, x0, wv);                                                        \
        b = _mm512_dpbusd_epi32(b, x1, wv);                                                        \
    } while (0)
            S_CH(0, a0, b0);
            S_CH(1, a1, b1);
            S_CH(2, a2, b2);
            S_CH(3, a3, b3);
            S_CH(4, a4, b4);
            S_CH(5, a5, b5);
            S_CH(6, a6, b6);
            S_CH(7, a7, b7);
#undef S_CH
        }
    }
    const __m512i as[S_MB] = {a0, a1, a2, a3, a4, a5, a6, a7};
    const __m512i bs[S_MB] = {b0, b1, b2, b3, b4, b5, b6, b7};
    for (int i = 0; i < S_MB; i++) {
        _mm512_storeu_si512(d + i * 32, as[i]);
        _mm512_storeu_si512(d + i * 32 + 16, bs[i]);
    }
}

/* How an output channel's sums d become bytes: e = d - bz sa + cm (sa:
 * the window's sum of x), then rint(e * scale) + yz saturated to [lo, hi]
 * (NaN: lo). e is computed in int32 when it surely fits (small: every
 * |d| + |bz sa| + |cm| below 2^31), else in double; both are exact. */
typedef struct s_drq {
    double bz, cm, scale, lo, hi; /* lo, hi: the bounds less yz */
    float scalef;                 /* scale as the float it is */
    int32_t yz;
    bool small;
    bool f24; /* small, and every |e| below 2^24: requantized in float (gx_requant16f) */
} s_drq;

/* Output channel j's s_drq: x_zp' xz, W's packed column sums sb, kk
 * products per sum; a ConvInteger's (no requant: bz and cm only, in
 * wrapping int32 as its sums are). */
static s_drq s_drq_of(const gx_kargs *k, bool requant, int64_t j, int32_t xz, bool wflip,
                      const int32_t *sb, int64_t kk, float xs, float ys, float yz, double lo,
                      double hi)
{
    if (!requant) {
        const int32_t bz = s_zp(k, 3, j) - (wflip ? 128 : 0);
        return (s_drq){.bz = bz,
                       .cm = (int32_t)((uint32_t)kk * (uint32_t)xz * (uint32_t)bz -
                                       (uint32_t)xz * (uint32_t)sb[j]),
                       .small = true};
    }
    const int32_t *bias = k->n_in > 8 && k->in[8].ndim >= 0 ? k->in[8].data : NULL;
    const float *ws = k->in[4].data;
    const double bz = s_zp(k, 5, j) - (wflip ? 128 : 0);
    const double cm = -(double)xz * sb[j] + (double)kk * xz * bz + (bias ? bias[j] : 0);
    /* the scale as the GEMM path's: in float, then double */
    const float scale = xs * ws[k->in[4].numel > 1 ? j : 0] / ys;
    const double e = (double)kk * 255 * (128 + fabs(bz)) + fabs(cm);
    return (s_drq){.bz = bz, .cm = cm, .yz = (int32_t)yz, .scale = (double)scale,
                   .scalef = scale, .lo = lo - yz, .hi = hi - yz, .small = e < 0x1p31,
                   .f24 = e < 0x1p24};
}

/* 16 sums d of a channel (sa: their windows' sums of x), requantized as
 * q says, as 16 int32 (rounded half to even by the conversion). */
S_TVNNI static inline __m512i s_drequant(const int32_t *d, const int32_t *sa, const s_drq *q)
{
    __m512d e[2];
    if (q->small) {
        __m512i v = _mm512_add_epi32(_mm512_loadu_si512(d), _mm512_set1_epi32((int32_t)q->cm));
        if (q->bz != 0)
            v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(sa),
                                                       _mm512_set1_epi32((int32_t)q->bz)));
        if (q->f24)
            return _mm512_add_epi32(gx_requant16f(_mm512_cvtepi32_ps(v),
                                                  _mm512_set1_ps(q->scalef),
                                                  _mm512_set1_ps((float)q->lo),
                                                  _mm512_set1_ps((float)q->hi)),
                                    _mm512_set1_epi32(q->yz));
        gx_requant_halves(v, &e[0], &e[1]);
    } else {
        for (int h = 0; h < 2; h++) {
            const __m256i dv = _mm256_loadu_si256((const __m256i *)(d + 8 * h));
            const __m256i sv = _mm256_loadu_si256((const __m256i *)(sa + 8 * h));
            e[h] = _mm512_add_pd(_mm512_cvtepi32_pd(dv), _mm512_set1_pd(q->cm));
            e[h] = _mm512_fnmadd_pd(_mm512_set1_pd(q->bz), _mm512_cvtepi32_pd(sv), e[h]);
        }
    }
    return gx_requant16(e[0], e[1], q->scale, q->lo, q->hi, q->yz);
}

/* 16 lanes of b to elements at y (bytes, or int32 when i32) under mask m. */
S_TVNNI static inline void s_dstore(void *y, bool i32, __mmask16 m, __m512i b)
{
    if (i32)
        _mm512_mask_storeu_epi32(y, m, b);
    else
        _mm_mask_storeu_epi8(y, m, _mm512_cvtepi32_epi8(b));
}

/* Positions [p, p + 16) of a band (b, as int32; position p is column c of
 * the band's row r) that are output elements (column below vw, the
 * tile's output columns) into the channel's rows from yb (the band's
 * first row at the tile's first column, rows ow apart; bytes, or int32
 * when i32), n positions in the band in all. */
S_TVNNI static inline void s_dput(const s_dgeom *g, __m512i b, int64_t p, int64_t r, int64_t c,
                                  int64_t n, int64_t vw, void *yb, bool i32)
{
    const size_t es = i32 ? 4 : 1;
    const int64_t end = p + 16 < n ? p + 16 : n;
    if (g->wq == g->ow && vw == g->ow) { /* whole rows, none past the outputs: contiguous */
        s_dstore((char *)yb + (size_t)p * es, i32, (__mmask16)((1u << (end - p)) - 1), b);
        return;
    }
    for (int64_t q = p; q < end;) {
        if (c >= vw) { /* past the row's last output: the next row */
            q += g->wq - c, r++, c = 0;
            continue;
        }
        const int64_t len = vw - c < end - q ? vw - c : end - q;
        /* lanes [q - p, q - p + len) to columns c.. of row r */
        const __mmask16 m = (__mmask16)(((1u << len) - 1) << (q - p));
        s_dstore((char *)yb + (size_t)(r * g->ow + c - (q - p)) * es, i32, m, b);
        q += len, c += len;
    }
}

/* A ConvInteger's 16 sums d (sa: their windows' sums of x) as q says, in
 * wrapping int32: d - bz sa + cm. */
S_TVNNI static inline __m512i s_dexact(const int32_t *d, const int32_t *sa, const s_drq *q)
{
    __m512i v = _mm512_add_epi32(_mm512_loadu_si512(d), _mm512_set1_epi32((int32_t)q->cm));
    if (q->bz != 0)
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(sa),
                                                   _mm512_set1_epi32((int32_t)q->bz)));
    return v;
}

/* The direct path: QLinearConv's requantized bytes (requant), or
 * ConvInteger's exact int32 sums. */
S_TVNNI static void s_qconv_direct(const gx_kargs *k, bool requant, const gx_win *w,
                                   const s_dgeom *g, const int8_t *wd, const int32_t *sb,
                                   int32_t xz, bool xflip, bool wflip, float xs, float ys, float yz)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const bool s8 = y->dtype == GX_I8;
    const size_t es = requant ? 1 : 4;
    const double lo = s8 ? -128.0 : 0.0, hi = s8 ? 127.0 : 255.0;
    const int64_t bands = (g->oh + g->band - 1) / g->band, kk = g->c * g->taps;
    const int64_t in_img = g->c * w->in[0] * w->in[1], out_img = g->m * g->oh * g->ow;
    /* the windows' sums of x are read only by a channel whose W zero
     * point is not 0 or whose sums take the double path */
    bool need_sa = false;
    for (int64_t j = 0; j < g->m && !need_sa; j++) {
        const s_drq q = s_drq_of(k, requant, j, xz, wflip, sb, kk, xs, ys, yz, lo, hi);
        need_sa = q.bz != 0 || !q.small;
    }
    int64_t off[S_DTAPS], ulo, uhi;
    for (int64_t t = 0; t < g->taps; t++) {
        const int64_t i = t / g->kw * g->dh, j = t % g->kw * g->dw; /* in padded x */
        off[t] = (i % g->sh * g->sw + j % g->sw) * g->plane + i / g->sh * g->wq + j / g->sw;
    }
    gx_cpu_share(k, x->shape[0] * bands * g->tiles, 1, &ulo, &uhi);
    uint8_t pl[S_DBYTES] __attribute__((aligned(64)));
    int32_t ssum[S_DPOS], sa[S_DPOS], d[S_MB * 32];
    for (int64_t u = ulo; u < uhi; u++) {
        const int64_t n = u / (bands * g->tiles), oh0 = u / g->tiles % bands * g->band;
        const int64_t br = g->oh - oh0 < g->band ? g->oh - oh0 : g->band;
        const int64_t ow0 = u % g->tiles * g->tw, vw = g->ow - ow0 < g->tw ? g->ow - ow0 : g->tw;
        s_dplanes(g, w, (const uint8_t *)x->data + n * in_img, oh0, ow0, xflip, (uint8_t)xz, pl,
                  need_sa ? ssum : NULL);
        for (int64_t p = 0; p < g->vpos && need_sa; p++) {
            int32_t t = 0;
            for (int64_t i = 0; i < g->taps; i++)
                t += ssum[p + off[i]];
            sa[p] = t;
        }
        for (int64_t mb = 0; mb * S_MB < g->m; mb++) {
            const int8_t *wb = wd + mb * g->c4 * g->taps * S_MB * 4;
            const int nm = (int)(g->m - mb * S_MB < S_MB ? g->m - mb * S_MB : S_MB);
            s_drq rq[S_MB];
            for (int i = 0; i < nm; i++)
                rq[i] = s_drq_of(k, requant, mb * S_MB + i, xz, wflip, sb, kk, xs, ys, yz, lo,
                                 hi);
            /* position p is column c of the band's row r */
            for (int64_t p = 0, r = 0, c = 0; p < g->vpos; p += 32) {
                s_dblock(g, pl, wb, off, p, d);
                for (int h = 0; h < 32; h += 16) {
                    if (p + h < br * g->wq)
                        for (int i = 0; i < nm; i++)
                            s_dput(g,
                                   requant ? s_drequant(d + i * 32 + h, sa + p + h, &rq[i])
                                           : s_dexact(d + i * 32 + h, sa + p + h, &rq[i]),
                                   p + h, r, c, br * g->wq, vw,
                                   (char *)y->data +
                                       (size_t)(n * out_img + (mb * S_MB + i) * g->oh * g->ow +
                                                oh0 * g->ow + ow0) *
                                           es,
                                   !requant);
                    for (c += 16; c >= g->wq; c -= g->wq)
                        r++;
                }
            }
        }
    }
}
#endif

/* A 2-D conv of group 1 from W packed, by im2col rows and the GEMM's dot
 * products, chunk by chunk of K (s_chunk_c), the sums gathered in sums:
 * QLinearConv's requantized bytes (requant), or ConvInteger's exact int32
 * sums (wrapping, as its reference kernel). */
#ifdef S_VNNI_OK
/* K of a conv at most whose exact sums (|a - a_zp| |b - b_zp| <= 255 x
 * 255 each) are int32: s_conv_put8 takes them modulo 2^32. */
#define S_PUT8_MAXK (INT32_MAX / (255 * 255))

/* What s_conv_put8 writes for columns [j0, j0 + n) of a block's 8 rows:
 * their sums' corrections (s_exact) and requantization (s_requant). */
typedef struct s_put8 {
    const int32_t *sa, *sb, *wz, *bias; /* sb, wz, bias (or NULL): from column j0 */
    const float *scale;
    int32_t xz, kk;
    float yz, lo, hi;
    bool requant;
} s_put8;

/* s_conv_gemm's output for a block of S_R rows at consecutive positions
 * of one image (c: their dot products, S_P * 2 a row) and n columns, at
 * y + e (ConvInteger: int32) for the first, column j pos elements on:
 * the rows' sums of a column are a vector, transposed from c eight
 * columns at a time, so each column's 8 outputs are one store. The same
 * arithmetic as s_exact32 and s_exact (exact in int32 for K up to
 * S_PUT8_MAXK, so the same double, plus the bias) and s_requant: the
 * product in double rounded half to even (rint's default mode), as float
 * plus yz, NaN to lo by vmaxps' order, then clamped. */
S_TAVX2 static void s_conv_put8(const int32_t *c, int n, const s_put8 *q, void *y, int64_t e,
                                int64_t pos)
{
    const __m256i sa = _mm256_loadu_si256((const __m256i *)q->sa);
    const __m256 yz = _mm256_set1_ps(q->yz), lo = _mm256_set1_ps(q->lo),
                 hi = _mm256_set1_ps(q->hi);
    /* byte 0 of each int32, in each 128-bit lane */
    const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1);
    for (int g = 0; g < n; g += 8) {
        __m256i r[S_R], t[S_R];
        for (int i = 0; i < S_R; i++)
            r[i] = _mm256_loadu_si256((const __m256i *)(c + i * S_P * 2 + g));
        for (int i = 0; i < S_R; i += 4) { /* rows i..i+3: columns (k, k + 4) in t[i + k] */
            const __m256i a0 = _mm256_unpacklo_epi32(r[i], r[i + 1]);
            const __m256i a1 = _mm256_unpackhi_epi32(r[i], r[i + 1]);
            const __m256i a2 = _mm256_unpacklo_epi32(r[i + 2], r[i + 3]);
            const __m256i a3 = _mm256_unpackhi_epi32(r[i + 2], r[i + 3]);
            t[i] = _mm256_unpacklo_epi64(a0, a2);
            t[i + 1] = _mm256_unpackhi_epi64(a0, a2);
            t[i + 2] = _mm256_unpacklo_epi64(a1, a3);
            t[i + 3] = _mm256_unpackhi_epi64(a1, a3);
        }
        for (int k = 0; k < 8 && g + k < n; k++) {
            const int j = g + k;
            const __m256i d = k < 4 ? _mm256_permute2x128_si256(t[k], t[k + 4], 0x20)
                                    : _mm256_permute2x128_si256(t[k - 4], t[k], 0x31);
            const uint32_t cst = (uint32_t)q->kk * (uint32_t)q->xz * (uint32_t)q->wz[j] -
                                 (uint32_t)q->xz * (uint32_t)q->sb[j];
            const __m256i ex = _mm256_add_epi32(
                _mm256_sub_epi32(d, _mm256_mullo_epi32(_mm256_set1_epi32(q->wz[j]), sa)),
                _mm256_set1_epi32((int32_t)cst));
            if (!q->requant) {
                _mm256_storeu_si256((__m256i *)((int32_t *)y + e + j * pos), ex);
                continue;
            }
            const __m256d b = _mm256_set1_pd(q->bias ? q->bias[j] : 0);
            const __m256d sc = _mm256_set1_pd(q->scale[j]);
            const int rm = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
            const __m256d v0 = _mm256_round_pd(
                _mm256_mul_pd(_mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(ex)), b), sc),
                rm);
            const __m256d v1 = _mm256_round_pd(
                _mm256_mul_pd(_mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(ex, 1)), b),
                              sc),
                rm);
            __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(v1), _mm256_cvtpd_ps(v0));
            v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, yz), lo), hi);
            const __m256i bytes = _mm256_shuffle_epi8(_mm256_cvttps_epi32(v), low);
            const __m128i b8 = _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes),
                                                  _mm256_extracti128_si256(bytes, 1));
            _mm_storel_epi64((__m128i *)((uint8_t *)y + e + j * pos), b8);
        }
    }
}
#endif

static void s_conv_gemm(const gx_kargs *k, const gx_win *w, bool requant)
{
    const int iw = requant ? 3 : 1, iwz = requant ? 5 : 3;
    const gx_view *x = &k->in[0], *wt = &k->in[iw], *y = &k->out[0];
    const gx_op op = requant ? GX_OP_QLINEAR_CONV : GX_OP_CONVINTEGER;
    const int64_t c = x->shape[1], m = wt->shape[0], kk = c * w->k_size;
    const int64_t np = (m + S_P - 1) / S_P * S_P;
    const int64_t pos = w->out_size, rows = x->shape[0] * pos;
    int64_t chunks;
    const int64_t cc = s_chunk_c(op, wt, &chunks);
    const int32_t *sb = wt->data;
    const bool xflip = x->dtype == GX_I8, wflip = wt->dtype == GX_U8;
    const int32_t xz = s_zp(k, 2, 0) + (xflip ? 128 : 0); /* x_zp' */
    const float xs = requant ? *(const float *)k->in[1].data : 0;
    const float ys = requant ? *(const float *)k->in[6].data : 1;
    const float yz = requant ? (float)s_zp(k, 7, 0) : 0;
    const int32_t *bias = requant && k->n_in > 8 && k->in[8].ndim >= 0 ? k->in[8].data : NULL;
    const s_dots_fn dots = s_dots_pick();
#ifdef S_VNNI_OK
    const bool avx2 = dots == s_dots_avx2;
#endif
    int64_t lo, hi;
    gx_cpu_share(k, (rows + S_R - 1) / S_R, 1, &lo, &hi);
    uint8_t abuf[S_R * GX_QGEMM_MAX_K + 64];
    int32_t cbuf[S_R * S_P * 2];
    /* a single chunk's sums are its dot products (cbuf); more gather here */
    int32_t sums[chunks > 1 ? S_R * S_MAXM : 1];
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t r0 = blk * S_R;
        const int nr = (int)(rows - r0 < S_R ? rows - r0 : S_R);
        int32_t sa[S_R] = {0};
        const int8_t *pb = (const int8_t *)(sb + np);
        const int16_t *pw = gx_cpu_qgemm_wide(op, wt); /* from pb's panel on, as pb */
        for (int64_t ch = 0; ch < chunks - 1; ch++) { /* all chunks but the last into sums */
            const int64_t k4 = s_chunk_k4(c, cc, w->k_size, ch);
            int32_t sc[S_R];
            s_im2col(w, x->data, c, ch * cc, (ch + 1) * cc, pos, r0, nr, xflip, (uint8_t)xz, k4,
                     abuf, sc);
            for (int64_t p = 0; p < np / S_P; p += 2) {
                const int64_t p1 = p + 2 < np / S_P ? p + 2 : np / S_P;
                dots(abuf, k4 * 4, nr, k4, pb, pw, p, p1, cbuf, S_P * 2);
                for (int r = 0; r < nr; r++)
                    for (int64_t j = p * S_P; j < p1 * S_P && j < m; j++)
                        sums[r * m + j] = (int32_t)((ch ? (uint32_t)sums[r * m + j] : 0u) +
                                                    (uint32_t)cbuf[r * S_P * 2 + j - p * S_P]);
            }
            for (int r = 0; r < nr; r++)
                sa[r] += sc[r];
            pb += np * k4 * 4;
            pw = pw ? pw + np * k4 * 4 : NULL;
        }
        const int64_t clast = (chunks - 1) * cc;
        const int64_t k4 = chunks == 1 ? (kk + 3) / 4 : s_chunk_k4(c, cc, w->k_size, chunks - 1);
        int32_t sc[S_R];
        s_im2col(w, x->data, c, clast, c, pos, r0, nr, xflip, (uint8_t)xz, k4, abuf, sc);
        for (int r = 0; r < nr; r++)
            sa[r] += sc[r];
#ifdef S_VNNI_OK
        /* a whole block in one image: AVX2 stores a column's 8 outputs at once */
        const bool put8 = avx2 && nr == S_R && r0 % pos + S_R <= pos &&
                          (!requant || kk <= S_PUT8_MAXK);
#endif
        for (int64_t p = 0; p < np / S_P; p += 2) {
            const int64_t p1 = p + 2 < np / S_P ? p + 2 : np / S_P;
            const int64_t j0 = p * S_P, j1 = p1 * S_P < m ? p1 * S_P : m;
            int32_t wz[S_P * 2];
            float scale[S_P * 2];
            for (int64_t j = j0; j < j1; j++) {
                wz[j - j0] = s_zp(k, iwz, j) - (wflip ? 128 : 0);
                if (requant) {
                    const float ws = ((const float *)k->in[4].data)[k->in[4].numel > 1 ? j : 0];
                    scale[j - j0] = xs * ws / ys;
                }
            }
            dots(abuf, k4 * 4, nr, k4, pb, pw, p, p1, cbuf, S_P * 2);
            for (int r = 0; r < nr && chunks > 1; r++)
                for (int64_t j = j0; j < j1; j++)
                    cbuf[r * S_P * 2 + j - j0] = (int32_t)((uint32_t)cbuf[r * S_P * 2 + j - j0] +
                                                           (uint32_t)sums[r * m + j]);
#ifdef S_VNNI_OK
            if (put8) {
                const s_put8 q = {.sa = sa, .sb = sb + j0, .wz = wz, .bias = bias ? bias + j0 : NULL,
                                  .scale = scale, .xz = xz, .kk = (int32_t)kk, .yz = yz,
                                  .lo = y->dtype == GX_I8 ? -128.0f : 0.0f,
                                  .hi = y->dtype == GX_I8 ? 127.0f : 255.0f, .requant = requant};
                s_conv_put8(cbuf, (int)(j1 - j0), &q, y->data,
                            (r0 / pos * m + j0) * pos + r0 % pos, pos);
                continue;
            }
#endif
            for (int r = 0; r < nr; r++) {
                const int64_t n = (r0 + r) / pos, o = (r0 + r) % pos;
                int32_t *cr = cbuf + r * S_P * 2;
                if (!requant) {
                    int32_t *yo = (int32_t *)y->data + (n * m + j0) * pos + o;
                    for (int64_t j = j0; j < j1; j++)
                        yo[(j - j0) * pos] =
                            s_exact32(cr[j - j0], sa[r], sb[j], xz, wz[j - j0], (int32_t)kk);
                    continue;
                }
                double acc[S_P * 2];
                for (int64_t j = j0; j < j1; j++)
                    acc[j - j0] = (double)(s_exact(cr[j - j0], sa[r], sb[j], xz, wz[j - j0], kk) +
                                           (bias ? bias[j] : 0));
                s_store_q(y, (n * m + j0) * pos + o, pos, (int)(j1 - j0), acc, scale, yz);
            }
        }
    }
}

/* A 2-D conv of group 1 from W packed: the direct path where the CPU has
 * VNNI and a band fits, else im2col rows; QLinearConv's bytes (requant)
 * or ConvInteger's int32 sums. */
static void s_qconv(const gx_kargs *k, bool requant)
{
    const gx_view *x = &k->in[0], *wt = &k->in[requant ? 3 : 1];
    const char *op = requant ? "QLinearConv" : "ConvInteger";
    gx_win w;
    gx_win_init(&w, k->attr, op, x, wt->shape + 2, false, false, NULL, 0);
#ifdef S_VNNI_OK
    s_dgeom g;
    if (s_dots_pick() == s_dots_vnni && s_dgeom_init(&w, x, wt, k->nth, &g)) {
        const bool xflip = x->dtype == GX_I8;
        const gx_op o = requant ? GX_OP_QLINEAR_CONV : GX_OP_CONVINTEGER;
        s_qconv_direct(k, requant, &w, &g, (const int8_t *)wt->data + s_gemm_bytes(o, wt),
                       wt->data, s_zp(k, 2, 0) + (xflip ? 128 : 0), xflip, wt->dtype == GX_U8,
                       requant ? *(const float *)k->in[1].data : 0,
                       requant ? *(const float *)k->in[6].data : 1,
                       requant ? (float)s_zp(k, 7, 0) : 0);
        return;
    }
#endif
    s_conv_gemm(k, &w, requant);
}

static void s_qlinear_conv(const gx_kargs *k)
{
    s_qconv(k, true);
}

static void s_conv_integer(const gx_kargs *k)
{
    s_qconv(k, false);
}

gx_kernel_fn gx_cpu_qgemm_kernel(gx_op op)
{
    return op == GX_OP_MATMUL_INTEGER   ? s_matmul_integer
           : op == GX_OP_QLINEAR_MATMUL ? s_qlinear_matmul
           : op == GX_OP_QLINEAR_CONV   ? s_qlinear_conv
           : op == GX_OP_CONVINTEGER   ? s_conv_integer
                                        : NULL;
}
