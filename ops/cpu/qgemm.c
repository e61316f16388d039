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
 * four uint8 x int8 products added into each int32 lane.
 *
 * Packed B (gx_cpu_qgemm_pack): the int32 column sums of b' (N rounded up
 * to 16, zeros past N), then panels of 16 columns, each K4 = ceil(K / 4)
 * quads of [16 columns][4 k] int8 (zeros past K and N).
 *
 * A is copied eight rows at a time into a buffer of K4 * 4 bytes a row
 * (flipped to uint8, zeros past K); a QLinearConv's rows are its im2col
 * rows (taps outside x read x_zp, which adds nothing), in the order of
 * W's [C, kh, kw]. Shares: a product's are (block of rows, pair of
 * panels), so a few rows (a batch-1 layer) still split; a QLinearConv's
 * are blocks of rows (output positions).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/gemm.h"
#include "ops/qgemm.h"
#include "ops/schema.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S_VNNI_OK 1
#define S_TVNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif

#define S_P 16 /* columns of a panel */
#define S_R 8  /* rows of A a block takes */

/* ---- what the packed kernels take ---- */

/* K and N of op's product with B (or W) b. */
static void s_kn(gx_op op, const gx_view *b, int64_t *k, int64_t *n)
{
    if (op == GX_OP_QLINEAR_CONV) {
        *n = b->shape[0];
        *k = b->numel / (b->shape[0] ? b->shape[0] : 1);
    } else {
        *k = b->shape[0];
        *n = b->shape[1];
    }
}

static bool s_byte_type(gx_dtype t)
{
    return t == GX_I8 || t == GX_U8;
}

int gx_cpu_qgemm_b_input(gx_op op)
{
    return op == GX_OP_MATMUL_INTEGER ? 1 : 3;
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
    if (op != GX_OP_MATMUL_INTEGER && op != GX_OP_QLINEAR_MATMUL && op != GX_OP_QLINEAR_CONV) {
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
    if (op == GX_OP_QLINEAR_CONV) {
        if (a->ndim != 4 || b->ndim != 4 || attr[GX_QLINEARCONV_GROUP].i != 1) {
            snprintf(why, whylen, "%s: only 2-D convolutions of group 1", name);
            return false;
        }
    } else if (b->ndim != 2 || a->ndim < 2) {
        snprintf(why, whylen, "%s: B is not a matrix", name);
        return false;
    }
    s_kn(op, b, &k, &n);
    if (k < 1 || n < 1 || k > GX_QGEMM_MAX_K) {
        snprintf(why, whylen, "%s: K of %lld (1 to %d)", name, (long long)k, GX_QGEMM_MAX_K);
        return false;
    }
    /* the reference kernels' parameters: per tensor, B's zero point also
     * per column (MatMulInteger), W's scale and zero point per channel */
    bool ok;
    if (op == GX_OP_MATMUL_INTEGER)
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

size_t gx_cpu_qgemm_packed_bytes(gx_op op, const gx_view *b)
{
    int64_t k, n;
    s_kn(op, b, &k, &n);
    const int64_t np = (n + S_P - 1) / S_P * S_P, k4 = (k + 3) / 4;
    return (size_t)(np * 4 + np * k4 * 4);
}

/* b'[k][j]: element (k, j) of the product's B as int8. */
static int8_t s_b(gx_op op, const gx_view *b, int64_t k, int64_t n, int64_t kk, int64_t j)
{
    const int64_t e = op == GX_OP_QLINEAR_CONV ? j * k + kk : kk * n + j;
    const uint8_t v = ((const uint8_t *)b->data)[e];
    return (int8_t)(b->dtype == GX_U8 ? v ^ 0x80 : v);
}

void gx_cpu_qgemm_pack(gx_op op, const gx_view *b, void *dst)
{
    int64_t k, n;
    s_kn(op, b, &k, &n);
    const int64_t np = (n + S_P - 1) / S_P * S_P, k4 = (k + 3) / 4;
    int32_t *sums = dst;
    int8_t *panels = (int8_t *)(sums + np);
    memset(dst, 0, gx_cpu_qgemm_packed_bytes(op, b));
    for (int64_t j = 0; j < n; j++) {
        int8_t *col = panels + j / S_P * k4 * 64 + j % S_P * 4;
        for (int64_t kk = 0; kk < k; kk++) {
            const int8_t v = s_b(op, b, k, n, kk, j);
            col[kk / 4 * 64 + kk % 4] = v;
            sums[j] += v;
        }
    }
}

/* ---- the dot products ---- */

/* c[r * ldc + j - p0 * 16] = sum over k of a[r][k] b'[k][j] for rows r <
 * rows (at most S_R, each of k4 quads at a + r * lda) and the columns j of
 * panels [p0, p1). */
typedef void (*s_dots_fn)(const uint8_t *a, int64_t lda, int rows, int64_t k4, const int8_t *pb,
                          int64_t p0, int64_t p1, int32_t *c, int64_t ldc);

GX_CPU_CLONES static void s_dots(const uint8_t *a, int64_t lda, int rows, int64_t k4,
                                 const int8_t *pb, int64_t p0, int64_t p1, int32_t *c,
                                 int64_t ldc)
{
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
                                const int8_t *pb, int64_t p0, int64_t p1, int32_t *c,
                                int64_t ldc)
{
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
#endif

/* The dot products for the ISA the GEMM uses (GEXEC_GEMM_ISA picks it for
 * tests too): VNNI where the CPU has it and the GEMM runs AVX-512. Every
 * path gives the same integers. */
static s_dots_fn s_dots_pick(void)
{
#ifdef S_VNNI_OK
    if (!strcmp(gx_cpu_gemm_isa(), "avx512") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512bw"))
        return s_dots_vnni;
#endif
    return s_dots;
}

const char *gx_cpu_qgemm_impl(void)
{
    return s_dots_pick() == s_dots ? "qgemm.baseline" : "qgemm.avx512vnni";
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

static void s_matmul(const gx_kargs *k, bool requant)
{
    const int ib = requant ? 3 : 1, iaz = 2, ibz = requant ? 5 : 3;
    const gx_view *a = &k->in[0], *b = &k->in[ib], *y = &k->out[0];
    const int64_t kk = b->shape[0], n = b->shape[1], m = a->shape[a->ndim - 2];
    const int64_t np = (n + S_P - 1) / S_P * S_P, k4 = (kk + 3) / 4, rows = a->numel / kk;
    const int32_t *sb = b->data;
    const int8_t *pb = (const int8_t *)(sb + np);
    const bool aflip = a->dtype == GX_I8, bflip = b->dtype == GX_U8;
    const s_dots_fn dots = s_dots_pick();
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
        dots(abuf, k4 * 4, nr, k4, pb, p, p1, c, S_P * 2);
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
                for (int64_t j = j0; j < j1; j++)
                    ((int32_t *)y->data)[row * n + j] =
                        (int32_t)s_exact(cr[j - j0], sa[r], sb[j], az[r], bz[j - j0], kk);
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

/* The im2col rows of nr output positions from r0 (over images of pos
 * positions, C planes of IH x IW each at x): K = C * kh * kw bytes each,
 * as uint8, x_zp' where a tap is outside, zeros to k4 * 4, each row k4 * 4
 * bytes after the last in dst; their sums in sa. The walk takes each
 * window row (channel, kernel row) once for all nr rows. */
static void s_im2col(const gx_win *w, const uint8_t *x, int64_t c, int64_t pos, int64_t r0,
                     int nr, bool flip, uint8_t pad, int64_t k4, uint8_t *dst, int32_t *sa)
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
    for (int64_t ci = 0; ci < c; ci++)
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

static void s_qlinear_conv(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *wt = &k->in[3], *y = &k->out[0];
    gx_win w;
    gx_win_init(&w, k->attr, "QLinearConv", x, wt->shape + 2, false, false, NULL, 0);
    const int64_t c = x->shape[1], m = wt->shape[0], kk = c * w.k_size;
    const int64_t np = (m + S_P - 1) / S_P * S_P, k4 = (kk + 3) / 4;
    const int64_t pos = w.out_size, rows = x->shape[0] * pos;
    const int32_t *sb = wt->data;
    const int8_t *pb = (const int8_t *)(sb + np);
    const bool xflip = x->dtype == GX_I8, wflip = wt->dtype == GX_U8;
    const int32_t xz = s_zp(k, 2, 0) + (xflip ? 128 : 0); /* x_zp' */
    const float xs = *(const float *)k->in[1].data, ys = *(const float *)k->in[6].data;
    const float yz = (float)s_zp(k, 7, 0);
    const int32_t *bias = k->n_in > 8 && k->in[8].ndim >= 0 ? k->in[8].data : NULL;
    const s_dots_fn dots = s_dots_pick();
    int64_t lo, hi;
    gx_cpu_share(k, (rows + S_R - 1) / S_R, 1, &lo, &hi);
    uint8_t abuf[S_R * GX_QGEMM_MAX_K + 64];
    int32_t cbuf[S_R * S_P * 2];
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t r0 = blk * S_R;
        const int nr = (int)(rows - r0 < S_R ? rows - r0 : S_R);
        int32_t sa[S_R];
        s_im2col(&w, x->data, c, pos, r0, nr, xflip, (uint8_t)xz, k4, abuf, sa);
        for (int64_t p = 0; p < np / S_P; p += 2) {
            const int64_t p1 = p + 2 < np / S_P ? p + 2 : np / S_P;
            const int64_t j0 = p * S_P, j1 = p1 * S_P < m ? p1 * S_P : m;
            int32_t wz[S_P * 2];
            float scale[S_P * 2];
            for (int64_t j = j0; j < j1; j++) {
                wz[j - j0] = s_zp(k, 5, j) - (wflip ? 128 : 0);
                const float ws = ((const float *)k->in[4].data)[k->in[4].numel > 1 ? j : 0];
                scale[j - j0] = xs * ws / ys;
            }
            dots(abuf, k4 * 4, nr, k4, pb, p, p1, cbuf, S_P * 2);
            for (int r = 0; r < nr; r++) {
                const int64_t n = (r0 + r) / pos, o = (r0 + r) % pos;
                const int32_t *cr = cbuf + r * S_P * 2;
                double acc[S_P * 2];
                for (int64_t j = j0; j < j1; j++)
                    acc[j - j0] = (double)(s_exact(cr[j - j0], sa[r], sb[j], xz, wz[j - j0], kk) +
                                           (bias ? bias[j] : 0));
                s_store_q(y, (n * m + j0) * pos + o, pos, (int)(j1 - j0), acc, scale, yz);
            }
        }
    }
}

gx_kernel_fn gx_cpu_qgemm_kernel(gx_op op)
{
    return op == GX_OP_MATMUL_INTEGER   ? s_matmul_integer
           : op == GX_OP_QLINEAR_MATMUL ? s_qlinear_matmul
           : op == GX_OP_QLINEAR_CONV   ? s_qlinear_conv
                                        : NULL;
}
