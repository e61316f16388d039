/*
 * QLinearConv in NHWC bytes (ops/layout.h): the layout pass's kernel for a
 * 2-D QLinearConv whose x and y it keeps channels-last, as ONNX Runtime
 * runs quantized MobileNets. Two shapes have a kernel:
 *
 *   - 1x1, group 1, no padding (any stride): a GEMM of x's pixels (rows
 *     of C bytes) by W, whose qgemm packed form (ops/qgemm.h: column sums,
 *     16-column panels of 4-byte groups) the prepare pass made once; the
 *     dot products are qgemm's (AVX512-VNNI where the CPU has it), and
 *     each row's M sums are requantized 16 channels at a time straight
 *     into y's pixel;
 *   - depthwise (group = C = M, at most S_DW_TAPS taps): 16 channels a
 *     vector, 8 output columns of a row in registers, each input column of
 *     a tap row converted once to float (x - x_zp) and multiplied into
 *     the outputs that read it; for 3-wide windows (MobileNets' 3x3,
 *     stride 1 or 2) each input row once for all the output rows that
 *     read it, into a ring of the window's rows (s_dw_rows512). The float
 *     sums are exact integers (every product and partial sum below 2^24),
 *     as in ops/cpu/conv.c. Where the CPU has AVX512-VNNI and W - w_zp
 *     fits int8, the ring holds each window row's three input bytes as
 *     one 4-byte group instead, summed by vpdpbusd in int32
 *     (s_dw_rows_vnni).
 *
 * Arithmetic: the reference kernels' exact int32 sums, requantized as
 * they do (rint of the sum times x_scale w_scale / y_scale, the product
 * in double, plus y_zp, saturated): the same bytes on every ISA and
 * split. With AVX2 and FMA (no AVX-512, or the GEMM's ISA set to
 * "avx2") both take 8 channels a vector: the 1x1 sums 4 pixels by 16
 * channels in registers from W's wide form (s_pw_run256; int16 pairs,
 * exact), the depthwise 3-wide windows run through a float ring as
 * s_dw_rows512 (s_dw_rows256). Elsewhere plain loops; the layout pass
 * offers this layout only where the vector kernels run
 * (gx_cpu_qconv_layout).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/qwide.h"
#include "ops/cpu/requant.h"
#include "ops/conv.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "ops/qgemm.h"
#include "ops/schema.h"

#define S_P 16          /* columns of a qgemm panel */
#define S_R 8           /* rows of x a block takes */
#define S_MAXM 4096     /* output channels the kernels take (per-channel tables on the stack) */
#define S_DW_TAPS 256   /* taps of a depthwise window: float sums stay exact */
#define S_DW_FLOATS 16384 /* taps x channels of a depthwise W as float (64 KiB) */
#define S_OB 8          /* output columns a depthwise block keeps in registers */
#define S_DW_COLS 40    /* input columns a block's tap row reads, at most */

/* Does the CPU have the AVX-512 kernels' F, BW, VL, DQ? */
static bool s_v512(void)
{
#ifdef GX_REQUANT_AVX512
    return gx_requant_avx512() && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

/* The kernels that run: by the GEMM's ISA (gx_cpu_gemm_isa, which tests
 * set to run each path on one CPU): AVX-512's (16 channels a vector) for
 * "avx512" on a CPU with them, AVX2 + FMA's (8 a vector) for "avx2" or
 * an AVX-512 CPU without BW, VL or DQ, plain loops for "baseline". */
typedef enum { S_PLAIN, S_V256, S_V512 } s_isa;

static s_isa s_isa_of(void)
{
    const char *isa = gx_cpu_gemm_isa();
    if (!strcmp(isa, "baseline"))
        return S_PLAIN;
    if (!strcmp(isa, "avx512") && s_v512())
        return S_V512;
#ifdef GX_REQUANT_AVX2
    if (gx_requant_avx2())
        return S_V256;
#endif
    return S_PLAIN;
}

/* ---- geometry ---- */

typedef struct s_geom {
    int64_t n, c, h, w, m, oh, ow; /* logical */
    gx_win win;
    bool dw;
} s_geom;

/* The node's geometry from its physical views (x NHWC, W logical). */
static void s_geom_of(const gx_kargs *k, s_geom *g)
{
    const gx_view *x = &k->in[0], *wt = &k->in[3];
    const gx_view xl = gx_layout_logical(x);
    gx_win_init(&g->win, k->attr, "QLinearConv", &xl, wt->shape + 2, false, false, NULL, 0);
    g->n = xl.shape[0], g->c = xl.shape[1], g->h = xl.shape[2], g->w = xl.shape[3];
    g->m = wt->shape[0], g->oh = g->win.out[0], g->ow = g->win.out[1];
    g->dw = k->attr[GX_QLINEARCONV_GROUP].i > 1;
}

/* Zero point i of the node (element e of a per-channel one) in its own
 * dtype's value; 0 when absent. */
static int32_t s_zp(const gx_kargs *k, int i, int64_t e)
{
    if (k->n_in <= i || k->in[i].ndim < 0 || k->in[i].numel == 0)
        return 0;
    const gx_view *z = &k->in[i];
    const int64_t at = z->numel > 1 ? e : 0;
    return z->dtype == GX_I8 ? ((const int8_t *)z->data)[at] : ((const uint8_t *)z->data)[at];
}

/* Per output channel: e = sum + cm - bz * sa (sa: the row's sum of x',
 * read only when some bz is not 0), then rint(e * scale) + yz saturated. */
typedef struct s_rq {
    double scale[S_MAXM], cm[S_MAXM], bz[S_MAXM];
    int32_t cmi[S_MAXM], bzi[S_MAXM]; /* cm and bz as int32, when small or f24 */
    float scalef[S_MAXM], cmf[S_MAXM];   /* scale and cm as floats, when f24 */
    double lo, hi; /* the bounds less yz */
    int32_t yz;
    bool any_bz, s8;
    bool small; /* every e fits int32 and every e * scale is below 2^30 */
    bool f24;   /* every |e| below 2^24: requantized in float (gx_requant16f) */
} s_rq;

/* rq for k's node: kk products per sum; xz: x's zero point as the sums
 * take it; sb: W's packed column sums (NULL: depthwise, whose sums are of
 * x - x_zp already); wflip: W is uint8 (its packed form moved by 128);
 * dmax, samax: bounds of |sum| and of a pixel's x' sum. */
static void s_rq_of(const gx_kargs *k, int64_t m, int64_t kk, int32_t xz, const int32_t *sb,
                    bool wflip, double dmax, double samax, s_rq *rq)
{
    const int32_t *bias = k->n_in > 8 && k->in[8].ndim >= 0 ? k->in[8].data : NULL;
    const float xs = *(const float *)k->in[1].data, ys = *(const float *)k->in[6].data;
    const float *ws = k->in[4].data;
    rq->s8 = k->out[0].dtype == GX_I8;
    rq->yz = s_zp(k, 7, 0);
    rq->lo = (rq->s8 ? -128.0 : 0.0) - rq->yz;
    rq->hi = (rq->s8 ? 127.0 : 255.0) - rq->yz;
    rq->any_bz = false;
    rq->small = true;
    rq->f24 = true;
    for (int64_t j = 0; j < m; j++) {
        const double bz = sb ? s_zp(k, 5, j) - (wflip ? 128 : 0) : 0;
        rq->bz[j] = bz;
        rq->any_bz |= bz != 0;
        rq->cm[j] = (sb ? -(double)xz * sb[j] + (double)kk * xz * bz : 0) + (bias ? bias[j] : 0);
        /* the scale as the reference kernels': in float, then double */
        rq->scalef[j] = xs * ws[k->in[4].numel > 1 ? j : 0] / ys;
        rq->scale[j] = (double)rq->scalef[j];
        /* then rint(e * scale) is exact in int32 and saturates after it
         * (NaN or infinite scales fail the test) */
        const double e = dmax + fabs(rq->cm[j]) + fabs(bz) * samax;
        rq->small &= e < 0x1p31 && e * fabs(rq->scale[j]) < 0x1p30;
        /* or every e a float exactly, whatever the scale */
        rq->f24 &= e < 0x1p24;
        rq->cmi[j] = fabs(rq->cm[j]) < 0x1p31 ? (int32_t)rq->cm[j] : 0;
        rq->cmf[j] = (float)rq->cm[j];
        rq->bzi[j] = (int32_t)bz;
    }
}

/* Channels [j0, j0 + n) of a pixel: sums d, the pixel's x' sum sa, into y. */
static void s_put(const s_rq *rq, int64_t j0, int n, const int32_t *d, int32_t sa, void *y)
{
    for (int i = 0; i < n; i++) {
        const int64_t j = j0 + i;
        double v = rint(((double)d[i] + rq->cm[j] - rq->bz[j] * sa) * rq->scale[j]);
        v = !(v >= rq->lo) ? rq->lo : v > rq->hi ? rq->hi : v; /* NaN: lo */
        const int32_t q = (int32_t)v + rq->yz;
        if (rq->s8)
            ((int8_t *)y)[i] = (int8_t)q;
        else
            ((uint8_t *)y)[i] = (uint8_t)q;
    }
}

#ifdef GX_REQUANT_AVX512
#define S_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/* s_put for 16 channels (the first n stored) in AVX-512. */
S_T512 static inline __attribute__((always_inline)) void
s_put16(const s_rq *rq, int64_t j0, int n, __m512i d, int32_t sa,
                                  void *y)
{
    const __mmask16 mk = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    const __mmask8 m0 = (__mmask8)mk, m1 = (__mmask8)(mk >> 8);
    if (rq->f24) { /* e in int32, then requantized in float */
        __m512i v = _mm512_add_epi32(d, _mm512_maskz_loadu_epi32(mk, rq->cmi + j0));
        if (rq->any_bz)
            v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(mk, rq->bzi + j0),
                                                       _mm512_set1_epi32(sa)));
        const __m512i q = _mm512_add_epi32(
            gx_requant16f(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(mk, rq->scalef + j0),
                          _mm512_set1_ps((float)rq->lo), _mm512_set1_ps((float)rq->hi)),
            _mm512_set1_epi32(rq->yz));
        _mm_mask_storeu_epi8(y, mk, _mm512_cvtepi32_epi8(q));
        return;
    }
    if (rq->small) { /* e in int32, rounded, then saturated in int32 */
        __m512i v = _mm512_add_epi32(d, _mm512_maskz_loadu_epi32(mk, rq->cmi + j0));
        if (rq->any_bz)
            v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(mk, rq->bzi + j0),
                                                       _mm512_set1_epi32(sa)));
        const __m512d s0 = _mm512_maskz_loadu_pd(m0, rq->scale + j0);
        const __m512d s1 = _mm512_maskz_loadu_pd(m1, rq->scale + j0 + 8);
        const __m256i r0 = _mm512_cvt_roundpd_epi32(
            _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(v)), s0),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256i r1 = _mm512_cvt_roundpd_epi32(
            _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1)), s1),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
        q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32((int32_t)rq->lo)),
                             _mm512_set1_epi32((int32_t)rq->hi));
        q = _mm512_add_epi32(q, _mm512_set1_epi32(rq->yz));
        _mm_mask_storeu_epi8(y, mk, _mm512_cvtepi32_epi8(q));
        return;
    }
    const __m512d lo = _mm512_set1_pd(rq->lo), hi = _mm512_set1_pd(rq->hi);
    __m512d e[2];
    gx_requant_halves(d, &e[0], &e[1]);
    __m256i r[2];
    for (int h = 0; h < 2; h++) {
        const __mmask8 mh = h ? m1 : m0;
        const double *cm = rq->cm + j0 + 8 * h, *sc = rq->scale + j0 + 8 * h;
        __m512d v = _mm512_add_pd(e[h], _mm512_maskz_loadu_pd(mh, cm));
        if (rq->any_bz)
            v = _mm512_fnmadd_pd(_mm512_maskz_loadu_pd(mh, rq->bz + j0 + 8 * h),
                                 _mm512_set1_pd((double)sa), v);
        v = _mm512_mul_pd(v, _mm512_maskz_loadu_pd(mh, sc));
        v = _mm512_min_pd(_mm512_max_pd(v, lo), hi); /* max first: NaN gives lo */
        r[h] = _mm512_cvt_roundpd_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    const __m512i q = _mm512_add_epi32(_mm512_inserti64x4(_mm512_castsi256_si512(r[0]), r[1], 1),
                                       _mm512_set1_epi32(rq->yz));
    _mm_mask_storeu_epi8(y, mk, _mm512_cvtepi32_epi8(q));
}

#endif

#ifdef GX_REQUANT_AVX2
#define S_T256 __attribute__((target("avx2,fma")))

/* The mask of gx_mask8 for lanes [4 h, 4 h + 4) as 4 doubles'. */
S_T256 static inline __attribute__((always_inline)) __m256i s_mask4d(__m256i mk, int h)
{
    return _mm256_cvtepi32_epi64(h ? _mm256_extracti128_si256(mk, 1) : _mm256_castsi256_si128(mk));
}

/* 8 int32 bytes (each in [-128, 255]: the low byte is the value in
 * either dtype) into y's first n (1 to 8) bytes. */
S_T256 static inline __attribute__((always_inline)) void s_store8(void *y, int n, __m256i q)
{
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i b = _mm_shuffle_epi8(
        w, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1));
    if (n >= 8) {
        _mm_storel_epi64((__m128i *)y, b);
        return;
    }
    uint8_t t[16];
    _mm_storeu_si128((__m128i *)t, b);
    memcpy(y, t, (size_t)n);
}

/* 4 vectors of 8 int32 bytes (as s_store8's: u8 in [0, 255], else in
 * [-128, 127]) into the 8-byte pixels at y, y + m, y + 2m, y + 3m. */
S_T256 static inline __attribute__((always_inline)) void
s_store8x4(__m256i q0, __m256i q1, __m256i q2, __m256i q3, bool s8, uint8_t *y, int64_t m)
{
    const __m256i a = _mm256_packs_epi32(q0, q1), b = _mm256_packs_epi32(q2, q3);
    /* 128-bit lane L, 4-byte group G: channels 4L..4L+3 of q(G) */
    const __m256i p = s8 ? _mm256_packs_epi16(a, b) : _mm256_packus_epi16(a, b);
    const __m256i o = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m128i lo = _mm256_castsi256_si128(o), hi = _mm256_extracti128_si256(o, 1);
    _mm_storel_epi64((__m128i *)y, lo); /* movq: any alignment */
    _mm_storel_epi64((__m128i *)(y + m), _mm_unpackhi_epi64(lo, lo));
    _mm_storel_epi64((__m128i *)(y + 2 * m), hi);
    _mm_storel_epi64((__m128i *)(y + 3 * m), _mm_unpackhi_epi64(hi, hi));
}

/* s_put for 8 channels (the first n stored) in AVX2: s_put16's three
 * forms (float for f24, int32 sums and double products for small, else
 * all in double). */
S_T256 static inline __attribute__((always_inline)) void
s_put8(const s_rq *rq, int64_t j0, int n, __m256i d, int32_t sa, void *y)
{
    const __m256i mk = gx_mask8(n), yz = _mm256_set1_epi32(rq->yz);
    if (rq->f24 || rq->small) { /* e in int32 */
        __m256i v = _mm256_add_epi32(d, _mm256_maskload_epi32(rq->cmi + j0, mk));
        if (rq->any_bz)
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_maskload_epi32(rq->bzi + j0, mk),
                                                       _mm256_set1_epi32(sa)));
        __m256i q;
        if (rq->f24) {
            q = gx_requant8f(_mm256_cvtepi32_ps(v), _mm256_maskload_ps(rq->scalef + j0, mk),
                             _mm256_set1_ps((float)rq->lo), _mm256_set1_ps((float)rq->hi));
        } else {
            q = gx_requant8d(v, _mm256_maskload_pd(rq->scale + j0, s_mask4d(mk, 0)),
                             _mm256_maskload_pd(rq->scale + j0 + 4, s_mask4d(mk, 1)));
            q = _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32((int32_t)rq->lo)),
                                 _mm256_set1_epi32((int32_t)rq->hi));
        }
        s_store8(y, n, _mm256_add_epi32(q, yz));
        return;
    }
    const __m256d lo = _mm256_set1_pd(rq->lo), hi = _mm256_set1_pd(rq->hi);
    __m128i r[2];
    for (int h = 0; h < 2; h++) {
        const __m256i mh = s_mask4d(mk, h);
        const __m128i dh = h ? _mm256_extracti128_si256(d, 1) : _mm256_castsi256_si128(d);
        __m256d v =
            _mm256_add_pd(_mm256_cvtepi32_pd(dh), _mm256_maskload_pd(rq->cm + j0 + 4 * h, mh));
        if (rq->any_bz) /* bz sa is exact: a double product of small integers */
            v = _mm256_sub_pd(v, _mm256_mul_pd(_mm256_maskload_pd(rq->bz + j0 + 4 * h, mh),
                                               _mm256_set1_pd((double)sa)));
        v = _mm256_mul_pd(v, _mm256_maskload_pd(rq->scale + j0 + 4 * h, mh));
        v = _mm256_min_pd(_mm256_max_pd(v, lo), hi); /* max first: NaN gives lo */
        r[h] = _mm256_cvtpd_epi32(
            _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    s_store8(y, n, _mm256_add_epi32(_mm256_set_m128i(r[1], r[0]), yz));
}
#endif

/* ---- 1x1: a GEMM over pixels ---- */

#ifdef GX_REQUANT_AVX512
/* The sums c (rows of 2 panels) of nr pixels' channels [j0, j1) into y's
 * pixels from yb (m channels each). */
S_T512 static void s_pw_put512(const s_rq *rq, int nr, int64_t j0, int64_t j1, int64_t m,
                               const int32_t *c, const int32_t *sa, uint8_t *yb)
{
    if (!rq->small && !rq->f24) {
        for (int r = 0; r < nr; r++)
            for (int64_t j = j0; j < j1; j += 16)
                s_put16(rq, j, (int)(j1 - j < 16 ? j1 - j : 16),
                        _mm512_loadu_si512(c + r * S_P * 2 + (j - j0)), sa[r], yb + r * m + j);
        return;
    }
    const __m512i lo = _mm512_set1_epi32((int32_t)rq->lo), hi = _mm512_set1_epi32((int32_t)rq->hi);
    const __m512i yz = _mm512_set1_epi32(rq->yz);
    if (rq->f24) { /* e in int32, then requantized in float */
        const __m512 lof = _mm512_set1_ps((float)rq->lo), hif = _mm512_set1_ps((float)rq->hi);
        for (int64_t j = j0; j < j1; j += 16) {
            const int n = (int)(j1 - j < 16 ? j1 - j : 16);
            const __mmask16 mk = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
            const __m512i cm = _mm512_maskz_loadu_epi32(mk, rq->cmi + j);
            const __m512i bz = _mm512_maskz_loadu_epi32(mk, rq->bzi + j);
            const __m512 sc = _mm512_maskz_loadu_ps(mk, rq->scalef + j);
            for (int r = 0; r < nr; r++) {
                __m512i v = _mm512_add_epi32(_mm512_loadu_si512(c + r * S_P * 2 + (j - j0)), cm);
                if (rq->any_bz)
                    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(bz, _mm512_set1_epi32(sa[r])));
                const __m512i q = _mm512_add_epi32(
                    gx_requant16f(_mm512_cvtepi32_ps(v), sc, lof, hif), yz);
                _mm_mask_storeu_epi8(yb + r * m + j, mk, _mm512_cvtepi32_epi8(q));
            }
        }
        return;
    }
    /* s_put16's int32 path, each channel's parameters loaded once */
    for (int64_t j = j0; j < j1; j += 16) {
        const int n = (int)(j1 - j < 16 ? j1 - j : 16);
        const __mmask16 mk = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
        const __m512i cm = _mm512_maskz_loadu_epi32(mk, rq->cmi + j);
        const __m512i bz = _mm512_maskz_loadu_epi32(mk, rq->bzi + j);
        const __m512d s0 = _mm512_maskz_loadu_pd((__mmask8)mk, rq->scale + j);
        const __m512d s1 = _mm512_maskz_loadu_pd((__mmask8)(mk >> 8), rq->scale + j + 8);
        for (int r = 0; r < nr; r++) {
            __m512i v = _mm512_add_epi32(_mm512_loadu_si512(c + r * S_P * 2 + (j - j0)), cm);
            if (rq->any_bz)
                v = _mm512_sub_epi32(v, _mm512_mullo_epi32(bz, _mm512_set1_epi32(sa[r])));
            const __m256i r0 = _mm512_cvt_roundpd_epi32(
                _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(v)), s0),
                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const __m256i r1 = _mm512_cvt_roundpd_epi32(
                _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1)), s1),
                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), yz);
            _mm_mask_storeu_epi8(yb + r * m + j, mk, _mm512_cvtepi32_epi8(q));
        }
    }
}
#endif

#ifdef GX_REQUANT_AVX2
/* Channels [j, j + n) (n at most 8) of R rows' sums d (R a constant once
 * inlined) into the pixels from y on, m bytes apart: s_put8's three forms,
 * each channel's parameters loaded once for the R rows. A loop per form:
 * one loop choosing the form in each row measured 15% slower on the 1x1
 * 24 -> 144 (gcc did not take the choice out of it). */
S_T256 static inline __attribute__((always_inline)) void
s_pw_rows8(const s_rq *rq, int64_t j, int n, const __m256i *d, const int R, const int32_t *sa,
           uint8_t *y, int64_t m)
{
    if (!rq->small && !rq->f24) {
        for (int r = 0; r < R; r++)
            s_put8(rq, j, n, d[r], sa[r], y + r * m);
        return;
    }
    const __m256i mk = gx_mask8(n);
    const __m256i cm = _mm256_maskload_epi32(rq->cmi + j, mk);
    const __m256i yz = _mm256_set1_epi32(rq->yz);
    const __m256i bz = rq->any_bz ? _mm256_maskload_epi32(rq->bzi + j, mk) : _mm256_setzero_si256();
    if (rq->f24) {
        const __m256 sc = _mm256_maskload_ps(rq->scalef + j, mk);
        const __m256 lof = _mm256_set1_ps((float)rq->lo), hif = _mm256_set1_ps((float)rq->hi);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m256i v = _mm256_add_epi32(d[r], cm);
            if (rq->any_bz)
                v = _mm256_sub_epi32(v, _mm256_mullo_epi32(bz, _mm256_set1_epi32(sa[r])));
            s_store8(y + r * m, n,
                     _mm256_add_epi32(gx_requant8f(_mm256_cvtepi32_ps(v), sc, lof, hif), yz));
        }
        return;
    }
    const __m256d s0 = _mm256_maskload_pd(rq->scale + j, s_mask4d(mk, 0));
    const __m256d s1 = _mm256_maskload_pd(rq->scale + j + 4, s_mask4d(mk, 1));
    const __m256i lo = _mm256_set1_epi32((int32_t)rq->lo), hi = _mm256_set1_epi32((int32_t)rq->hi);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        __m256i v = _mm256_add_epi32(d[r], cm);
        if (rq->any_bz)
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(bz, _mm256_set1_epi32(sa[r])));
        s_store8(y + r * m, n,
                 _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(gx_requant8d(v, s0, s1), lo), hi),
                                  yz));
    }
}

/* s_pw_put512 in AVX2, 8 channels at a time. */
S_T256 static void s_pw_put256(const s_rq *rq, int nr, int64_t j0, int64_t j1, int64_t m,
                               const int32_t *c, const int32_t *sa, uint8_t *yb)
{
    for (int64_t j = j0; j < j1; j += 8) {
        const int n = (int)(j1 - j < 8 ? j1 - j : 8);
        __m256i d[S_R];
        for (int r = 0; r < nr; r++)
            d[r] = _mm256_loadu_si256((const __m256i *)(c + r * S_P * 2 + (j - j0)));
        s_pw_rows8(rq, j, n, d, nr, sa, yb + j, m);
    }
}

/* ---- 1x1 in AVX2, the sums in registers ----
 *
 * Where C (in quads) is at most S_PW_K: S_PW_R pixels' bytes widened once
 * to int16 (int8 x moved by 128 first, as qgemm's rows), then per panel
 * of 16 output channels their sums over those pixels in 8 registers (W's
 * wide form, ops/qgemm.h: a pair of k of 16 columns is two vectors, times
 * a pixel's pair broadcast, vpmaddwd: exact), requantized from the
 * registers. The same int32 sums as qgemm's dots, so the same bytes; no
 * buffer of sums, and one pixel's widening serves every output channel. */
#define S_PW_R GX_QWIDE_R /* pixels a tile takes */
#define S_PW_K 2048 /* C, rounded up to quads, at most */

/* Output channels [j, j + 16) (w: their panel's wide form, k4 quads; the
 * first n stored) of R pixels (aw: k4 quads of int16 each) into y's
 * pixels. */
S_T256 static inline __attribute__((always_inline)) void
s_pw_tile256(const int16_t *aw, int64_t k4, const int R, const int16_t *w, const s_rq *rq,
             int64_t j, int n, const int32_t *sa, uint8_t *y, int64_t m)
{
    __m256i ls[S_PW_R], hs[S_PW_R];
    gx_qwide_tile(aw, k4 * 4, k4, R, w, ls, hs);
    s_pw_rows8(rq, j, n < 8 ? n : 8, ls, R, sa, y, m);
    if (n > 8)
        s_pw_rows8(rq, j + 8, n - 8, hs, R, sa, y + 8, m);
}

/* Pixels [p0, p1) of y (rows of the GEMM) from x's bytes, W's wide form
 * at pw (k4 quads a panel). */
S_T256 static void s_pw_run256(const s_geom *g, const uint8_t *x, bool xflip, const int16_t *pw,
                               int64_t k4, const s_rq *rq, int64_t p0, int64_t p1, uint8_t *y)
{
    const int64_t c = g->c, m = g->m, sh = g->win.stride[0], sw = g->win.stride[1];
    int16_t aw[S_PW_R * S_PW_K];
    for (int64_t r0 = p0; r0 < p1; r0 += S_PW_R) {
        const int nr = (int)(p1 - r0 < S_PW_R ? p1 - r0 : S_PW_R);
        int32_t sa[S_PW_R] = {0};
        for (int r = 0; r < nr; r++) {
            const int64_t p = r0 + r, n = p / (g->oh * g->ow), o = p % (g->oh * g->ow);
            const uint8_t *src =
                x + ((n * g->h + o / g->ow * sh) * g->w + o % g->ow * sw) * c;
            int16_t *dst = aw + r * k4 * 4;
            const __m128i flip = _mm_set1_epi8(xflip ? (char)0x80 : 0);
            int64_t i = 0;
            for (; i + 16 <= c; i += 16)
                _mm256_storeu_si256((__m256i *)(dst + i),
                                    _mm256_cvtepu8_epi16(_mm_xor_si128(
                                        _mm_loadu_si128((const __m128i *)(src + i)), flip)));
            for (; i < c; i++)
                dst[i] = (uint8_t)(src[i] ^ (xflip ? 0x80 : 0));
            for (; i < k4 * 4; i++)
                dst[i] = 0;
            if (rq->any_bz)
                for (i = 0; i < c; i++)
                    sa[r] += dst[i];
        }
        uint8_t *yb = y + r0 * m;
        for (int64_t j = 0; j < m; j += S_P) {
            const int n = (int)(m - j < S_P ? m - j : S_P);
            const int16_t *w = pw + j / S_P * k4 * 64;
            switch (nr) {
#define S_CASE(R)                                                                                  \
    case R:                                                                                        \
        s_pw_tile256(aw, k4, R, w, rq, j, n, sa, yb + j, m);                                       \
        break;
                S_CASE(4)
                S_CASE(3)
                S_CASE(2)
#undef S_CASE
            default:
                s_pw_tile256(aw, k4, 1, w, rq, j, n, sa, yb + j, m);
                break;
            }
        }
    }
}
#endif

static void s_pointwise(const gx_kargs *k, const s_geom *g)
{
    const gx_view *x = &k->in[0], *wt = &k->in[3], *y = &k->out[0];
    const int64_t c = g->c, m = g->m, np = (m + S_P - 1) / S_P * S_P, k4 = (c + 3) / 4;
    const int64_t rows = g->n * g->oh * g->ow, sh = g->win.stride[0], sw = g->win.stride[1];
    const int32_t *sb = wt->data;
    const int8_t *pb = (const int8_t *)(sb + np);
    const int16_t *pw = gx_cpu_qgemm_wide(GX_OP_QLINEAR_CONV, wt);
    const bool xflip = x->dtype == GX_I8, wflip = wt->dtype == GX_U8;
    const int32_t xz = s_zp(k, 2, 0) + (xflip ? 128 : 0);
    s_rq rq;
    s_rq_of(k, m, c, xz, sb, wflip, (double)c * 255 * 128, (double)c * 255, &rq);
    const s_isa isa = s_isa_of();
    int64_t lo, hi;
    gx_cpu_share(k, (rows + S_R - 1) / S_R, 1, &lo, &hi);
#ifdef GX_REQUANT_AVX2
    if (isa == S_V256 && pw && k4 * 4 <= S_PW_K) {
        s_pw_run256(g, x->data, xflip, pw, k4, &rq, lo * S_R, hi * S_R < rows ? hi * S_R : rows,
                    y->data);
        return;
    }
#endif
    uint8_t abuf[S_R * GX_QGEMM_MAX_K + 64];
    int32_t cbuf[S_R * S_P * 2];
    const gx_qgemm_dots_fn dots = gx_cpu_qgemm_dots();
    /* rows of x read in place: uint8, whole groups of 4, every pixel, no
     * row sums needed */
    const bool direct = !xflip && c % 4 == 0 && sh == 1 && sw == 1 && !rq.any_bz;
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t r0 = blk * S_R;
        const int nr = (int)(rows - r0 < S_R ? rows - r0 : S_R);
        int32_t sa[S_R] = {0};
        const uint8_t *a = abuf;
        int64_t lda = k4 * 4;
        if (direct) { /* the pixels' rows as they are */
            a = (const uint8_t *)x->data + r0 * c, lda = c;
        } else {
            for (int r = 0; r < nr; r++) {
                const int64_t p = r0 + r, n = p / (g->oh * g->ow), o = p % (g->oh * g->ow);
                const int64_t ih = o / g->ow * sh, iw = o % g->ow * sw;
                const uint8_t *src =
                    (const uint8_t *)x->data + ((n * g->h + ih) * g->w + iw) * c;
                uint8_t *dst = abuf + r * k4 * 4;
                int32_t t = 0;
                for (int64_t i = 0; i < c; i++) {
                    dst[i] = xflip ? src[i] ^ 0x80 : src[i];
                    t += dst[i];
                }
                memset(dst + c, 0, (size_t)(k4 * 4 - c));
                sa[r] = t;
            }
        }
        for (int64_t p = 0; p < np / S_P; p += 2) {
            const int64_t p1 = p + 2 < np / S_P ? p + 2 : np / S_P;
            const int64_t j0 = p * S_P, j1 = p1 * S_P < m ? p1 * S_P : m;
            dots(a, lda, nr, k4, pb, pw, p, p1, cbuf, S_P * 2);
            uint8_t *yb = (uint8_t *)y->data + r0 * m;
#ifdef GX_REQUANT_AVX512
            if (isa == S_V512) {
                s_pw_put512(&rq, nr, j0, j1, m, cbuf, sa, yb);
                continue;
            }
#endif
#ifdef GX_REQUANT_AVX2
            if (isa == S_V256) {
                s_pw_put256(&rq, nr, j0, j1, m, cbuf, sa, yb);
                continue;
            }
#endif
            for (int r = 0; r < nr; r++)
                for (int64_t j = j0; j < j1; j += 16)
                    s_put(&rq, j, (int)(j1 - j < 16 ? j1 - j : 16), cbuf + r * S_P * 2 + (j - j0),
                          sa[r], yb + r * m + j);
        }
    }
}

/* ---- depthwise ---- */

/* W - w_zp as float, [taps][C rounded up to 16] (zeros past C), from
 * W's qgemm packed form (element (tap t, channel j) in panel j / 16). */
static void s_dw_weights(const gx_kargs *k, const s_geom *g, float *wf, int64_t cp)
{
    const gx_view *wt = &k->in[3];
    const int64_t taps = g->win.k_size, np = (g->m + S_P - 1) / S_P * S_P, k4 = (taps + 3) / 4;
    const int8_t *pb = (const int8_t *)((const int32_t *)wt->data + np);
    const int32_t flip = wt->dtype == GX_U8 ? 128 : 0;
    for (int64_t t = 0; t < taps; t++)
        for (int64_t j = 0; j < cp; j++)
            wf[t * cp + j] =
                j < g->m ? (float)(pb[j / S_P * k4 * 64 + t / 4 * 64 + j % S_P * 4 + t % 4] -
                                   (s_zp(k, 5, j) - flip))
                         : 0.0f;
}

#ifdef GX_REQUANT_AVX512
/* Does every W - w_zp of wf (taps x cp) fit int8? */
static bool s_w8_fits(const float *wf, int64_t taps, int64_t cp)
{
    for (int64_t i = 0; i < taps * cp; i++)
        if (wf[i] < -128.0f || wf[i] > 127.0f)
            return false;
    return true;
}
#endif

/* Output row (n, oh), channels [c0, c0 + nc), columns [ow0, ow0 + nb),
 * exact sums into acc[nb][16] (plain loops). */
static void s_dw_block(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz, const float *wf,
                       int64_t cp, int64_t n, int64_t oh, int64_t c0, int nc, int64_t ow0, int nb,
                       int32_t *acc)
{
    const gx_win *w = &g->win;
    memset(acc, 0, (size_t)nb * 16 * sizeof *acc);
    for (int64_t kh = 0; kh < w->k[0]; kh++) {
        const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
        if (ih < 0 || ih >= g->h)
            continue;
        for (int64_t kw = 0; kw < w->k[1]; kw++) {
            const float *wv = wf + (kh * w->k[1] + kw) * cp + c0;
            for (int o = 0; o < nb; o++) {
                const int64_t iw = (ow0 + o) * w->stride[1] - w->pad_lo[1] + kw * w->dil[1];
                if (iw < 0 || iw >= g->w)
                    continue;
                const uint8_t *px = x + ((n * g->h + ih) * g->w + iw) * g->c + c0;
                for (int i = 0; i < nc; i++) {
                    const int32_t v = sgn ? (int8_t)px[i] : px[i];
                    acc[o * 16 + i] += (v - xz) * (int32_t)wv[i];
                }
            }
        }
    }
}

#ifdef GX_REQUANT_AVX512
/* s_dw_block in AVX-512: each input column a tap row reads converted
 * once, S_OB accumulators of 16 channels. Requantizes into y's row. */
S_T512 static void s_dw_block512(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz,
                                 const float *wf, int64_t cp, int64_t n, int64_t oh, int64_t c0,
                                 int nc, int64_t ow0, int nb, const s_rq *rq, uint8_t *yrow)
{
    const gx_win *w = &g->win;
    const int64_t sw = w->stride[1], dw = w->dil[1];
    const int64_t cols = (nb - 1) * sw + (w->k[1] - 1) * dw + 1;
    const int64_t iw0 = ow0 * sw - w->pad_lo[1];
    const __mmask16 mk = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
    const __m512i zv = _mm512_set1_epi32(xz);
    __m512 acc[S_OB];
    for (int o = 0; o < S_OB; o++)
        acc[o] = _mm512_setzero_ps();
    __m512 xc[S_DW_COLS];
    for (int64_t kh = 0; kh < w->k[0]; kh++) {
        const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
        if (ih < 0 || ih >= g->h)
            continue;
        const uint8_t *row = x + ((n * g->h + ih) * g->w) * g->c + c0;
        for (int64_t i = 0; i < cols; i++) {
            const int64_t iw = iw0 + i;
            if (iw < 0 || iw >= g->w) {
                xc[i] = _mm512_setzero_ps();
                continue;
            }
            const __m128i b = _mm_maskz_loadu_epi8(mk, row + iw * g->c);
            const __m512i v = sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
            xc[i] = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zv));
        }
        for (int64_t kw = 0; kw < w->k[1]; kw++) {
            const __m512 wv = _mm512_loadu_ps(wf + (kh * w->k[1] + kw) * cp + c0);
            for (int o = 0; o < nb; o++)
                acc[o] = _mm512_fmadd_ps(xc[o * sw + kw * dw], wv, acc[o]);
        }
    }
    for (int o = 0; o < nb; o++)
        s_put16(rq, c0, nc, _mm512_cvtps_epi32(acc[o]), 0, yrow + (ow0 + o) * g->m + c0);
}
#endif

#ifdef GX_REQUANT_AVX512
/* 16 channels of x at column iw of row as float. */
S_T512 static inline __attribute__((always_inline)) __m512 s_dw_x(const uint8_t *row, int64_t iw,
                                                                   int64_t c, __mmask16 mk,
                                                                   bool sgn)
{
    const __m128i b = _mm_maskz_loadu_epi8(mk, row + iw * c);
    return _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}

/* The sums of x w' (x_zp in the padding) of S_OB outputs, with the
 * window's width KW, stride SW and dilation DW constants once inlined:
 * the input columns and the sums stay in registers. Exact: every
 * product and partial sum an integer below 2^24. */
S_T512 static inline __attribute__((always_inline)) void
s_dw_tile(const s_geom *g, const uint8_t *x, bool sgn, __m512 zf, const float *wf, int64_t cp,
          int64_t n, int64_t oh, int64_t c0, __mmask16 mk, int64_t ow0, const int KW,
          const int SW, const int DW, __m512 *out)
{
    const gx_win *w = &g->win;
    enum { S_MAXC = (S_OB - 1) * 2 + 2 * 1 + 1 };
    const int cols = (S_OB - 1) * SW + (KW - 1) * DW + 1;
    const int64_t iw0 = ow0 * SW - w->pad_lo[1];
    const bool inside = iw0 >= 0 && iw0 + cols <= g->w;
    __m512 acc[S_OB];
#pragma GCC unroll 8
    for (int o = 0; o < S_OB; o++)
        acc[o] = _mm512_setzero_ps();
    for (int64_t kh = 0; kh < w->k[0]; kh++) {
        const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
        const bool row_in = ih >= 0 && ih < g->h;
        const uint8_t *row = x + ((n * g->h + (row_in ? ih : 0)) * g->w) * g->c + c0;
        __m512 xc[S_MAXC];
#pragma GCC unroll 24
        for (int i = 0; i < cols; i++)
            xc[i] = row_in && (inside || (iw0 + i >= 0 && iw0 + i < g->w))
                        ? s_dw_x(row, iw0 + i, g->c, mk, sgn)
                        : zf;
        const float *wk = wf + kh * KW * cp + c0;
#pragma GCC unroll 8
        for (int kw = 0; kw < KW; kw++) {
            const __m512 wv = _mm512_loadu_ps(wk + kw * cp);
#pragma GCC unroll 8
            for (int o = 0; o < S_OB; o++)
                acc[o] = _mm512_fmadd_ps(xc[o * SW + kw * DW], wv, acc[o]);
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < S_OB; o++)
        out[o] = acc[o];
}

/* The 3-wide windows of stride 1 or 2 (MobileNets' depthwise 3x3), S_OB
 * outputs: true when it took them. */
S_T512 static bool s_dw_fast(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz,
                             const float *wf, const float *wsum, int64_t cp, int64_t n,
                             int64_t oh, int64_t c0, int nc, int64_t ow0, const s_rq *rq,
                             uint8_t *yrow)
{
    const gx_win *w = &g->win;
    if (w->k[1] != 3 || w->dil[1] != 1 || (w->stride[1] != 1 && w->stride[1] != 2))
        return false;
    const __mmask16 mk = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
    const __m512 zf = _mm512_set1_ps((float)xz);
    __m512 acc[S_OB];
    if (w->stride[1] == 1)
        s_dw_tile(g, x, sgn, zf, wf, cp, n, oh, c0, mk, ow0, 3, 1, 1, acc);
    else
        s_dw_tile(g, x, sgn, zf, wf, cp, n, oh, c0, mk, ow0, 3, 2, 1, acc);
    /* sum (x - x_zp) w' = sum x w' - x_zp sum w' */
    const __m512 zs = _mm512_mul_ps(zf, _mm512_loadu_ps(wsum + c0));
    for (int o = 0; o < S_OB; o++)
        acc[o] = _mm512_sub_ps(acc[o], zs);
    if (rq->f24) { /* + cm in float too: every partial sum an integer below 2^24 */
        const __m512 cmf = _mm512_maskz_loadu_ps(mk, rq->cmf + c0);
        const __m512 sc = _mm512_maskz_loadu_ps(mk, rq->scalef + c0);
        const __m512 lof = _mm512_set1_ps((float)rq->lo), hif = _mm512_set1_ps((float)rq->hi);
        const __m512i yz = _mm512_set1_epi32(rq->yz);
        for (int o = 0; o < S_OB; o++) {
            const __m512i q = _mm512_add_epi32(
                gx_requant16f(_mm512_add_ps(acc[o], cmf), sc, lof, hif), yz);
            _mm_mask_storeu_epi8(yrow + (ow0 + o) * g->m + c0, mk, _mm512_cvtepi32_epi8(q));
        }
        return true;
    }
    if (!rq->small) {
        for (int o = 0; o < S_OB; o++)
            s_put16(rq, c0, nc, _mm512_cvtps_epi32(acc[o]), 0, yrow + (ow0 + o) * g->m + c0);
        return true;
    }
    /* s_put16's int32 path, the channels' parameters loaded once */
    const __m512i cm = _mm512_maskz_loadu_epi32(mk, rq->cmi + c0);
    const __m512d s0 = _mm512_maskz_loadu_pd((__mmask8)mk, rq->scale + c0);
    const __m512d s1 = _mm512_maskz_loadu_pd((__mmask8)(mk >> 8), rq->scale + c0 + 8);
    const __m512i lo = _mm512_set1_epi32((int32_t)rq->lo), hi = _mm512_set1_epi32((int32_t)rq->hi);
    const __m512i yz = _mm512_set1_epi32(rq->yz);
    for (int o = 0; o < S_OB; o++) {
        const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(acc[o]), cm);
        const __m256i r0 = _mm512_cvt_roundpd_epi32(
            _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(v)), s0),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256i r1 = _mm512_cvt_roundpd_epi32(
            _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1)), s1),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
        q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), yz);
        _mm_mask_storeu_epi8(yrow + (ow0 + o) * g->m + c0, mk, _mm512_cvtepi32_epi8(q));
    }
    return true;
}
#endif

#ifdef GX_REQUANT_AVX512
/* ---- depthwise 3-wide windows over rows converted once ----
 *
 * Each input row a block of 16 channels reads is converted once to float
 * (x - x_zp: zeros in the padding) into a ring of the window's rows, and
 * every output row that reads it takes it from there: per output the
 * kernel loads floats instead of converting bytes three times (once per
 * output row of a 3-high window). Exact as s_dw_tile: every product and
 * partial sum is an integer below 2^24 (the sums start at cm when rq->f24
 * says the whole sum stays below it). */

#define S_DW_RING 12288 /* floats of the ring: 48 KiB on the stack */
#define S_DW_BAND 8     /* output rows a pass over the channel blocks takes */

/* The ring's geometry for g in vectors of lanes channels, or false when
 * its windows or rows do not fit it (3 wide, stride 1 or 2, no column
 * dilation). */
static bool s_ring_fits(const s_geom *g, int lanes, int64_t *span, int64_t *wp)
{
    const gx_win *w = &g->win;
    if (w->k[1] != 3 || w->dil[1] != 1 || (w->stride[1] != 1 && w->stride[1] != 2))
        return false;
    *span = (w->k[0] - 1) * w->dil[0] + 1;
    /* columns the last (whole) tile of a row reads */
    *wp = ((g->ow + S_OB - 1) / S_OB * S_OB - 1) * w->stride[1] + 3;
    return *span * *wp * lanes <= S_DW_RING;
}

/* Row ih of image n, channels [c0, c0 + 16) masked by mk, as wp columns
 * of 16 floats x - xz from column -pl on (zeros outside x). */
S_T512 static void s_ring_fill(const s_geom *g, const uint8_t *x, bool sgn, __m512i zv,
                               int64_t n, int64_t ih, int64_t c0, __mmask16 mk, int64_t pl,
                               int64_t wp, float *dst)
{
    const uint8_t *row = x + (n * g->h + ih) * g->w * g->c + c0;
    int64_t i = 0;
    for (; i < pl && i < wp; i++)
        _mm512_storeu_ps(dst + i * 16, _mm512_setzero_ps());
    for (; i < pl + g->w && i < wp; i++) {
        const __m128i b = _mm_maskz_loadu_epi8(mk, row + (i - pl) * g->c);
        const __m512i v = sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_storeu_ps(dst + i * 16, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zv)));
    }
    for (; i < wp; i++)
        _mm512_storeu_ps(dst + i * 16, _mm512_setzero_ps());
}

/* S_OB sums from acc's values on: the nr rows (columns from col0, stride
 * SW a constant once inlined) times their taps' weights wk[r][kw * cp]. */
S_T512 static inline __attribute__((always_inline)) void
s_ring_tile(const float *const *rows, const float *const *wk, int nr, int64_t cp, int64_t col0,
            const int SW, __m512 *acc)
{
    enum { S_MAXC = (S_OB - 1) * 2 + 3 };
    const int cols = (S_OB - 1) * SW + 3;
    for (int r = 0; r < nr; r++) {
        const float *src = rows[r] + col0 * 16;
        __m512 xc[S_MAXC];
#pragma GCC unroll 24
        for (int i = 0; i < cols; i++)
            xc[i] = _mm512_loadu_ps(src + i * 16);
#pragma GCC unroll 3
        for (int kw = 0; kw < 3; kw++) {
            const __m512 wv = _mm512_loadu_ps(wk[r] + kw * cp);
#pragma GCC unroll 8
            for (int o = 0; o < S_OB; o++)
                acc[o] = _mm512_fmadd_ps(xc[o * SW + kw], wv, acc[o]);
        }
    }
}

/* Output rows [lo, hi) (n * oh + row) of a depthwise QLinearConv whose
 * window s_ring_fits, in bands of S_DW_BAND rows, each channel block by
 * channel block: a band converts its first span - stride input rows
 * again, but its x and y rows stay in cache across the blocks (a pass of
 * each block over all the share's rows would fetch them once a block). */
S_T512 static void s_dw_rows512(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz,
                                const float *wf, int64_t cp, const s_rq *rq, int64_t lo,
                                int64_t hi, int64_t span, int64_t wp, uint8_t *y)
{
    const gx_win *w = &g->win;
    const int64_t sw = w->stride[1], pl = w->pad_lo[1];
    const __m512i zv = _mm512_set1_epi32(xz);
    float ring[S_DW_RING];
    int64_t tag[S_DW_TAPS]; /* the row (n * h + ih) each slot holds, or -1 */
    /* bands of S_DW_BAND output rows, channel block by channel block: the
     * band's x and y rows stay in cache across the blocks */
    for (int64_t b0 = lo; b0 < hi; b0 += S_DW_BAND)
    for (int64_t c0 = 0; c0 < g->c; c0 += 16) {
        const int nc = (int)(g->c - c0 < 16 ? g->c - c0 : 16);
        const __mmask16 mk = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
        for (int64_t s = 0; s < span; s++)
            tag[s] = -1;
        const __m512 init = rq->f24 ? _mm512_maskz_loadu_ps(mk, rq->cmf + c0) : _mm512_setzero_ps();
        const __m512 sc = _mm512_maskz_loadu_ps(mk, rq->scalef + c0);
        const __m512 lof = _mm512_set1_ps((float)rq->lo), hif = _mm512_set1_ps((float)rq->hi);
        const __m512i yz = _mm512_set1_epi32(rq->yz);
        for (int64_t u = b0; u < hi && u < b0 + S_DW_BAND; u++) {
            const int64_t n = u / g->oh, oh = u % g->oh;
            const float *rows[S_DW_TAPS], *wk[S_DW_TAPS];
            int nr = 0;
            for (int64_t kh = 0; kh < w->k[0]; kh++) {
                const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
                if (ih < 0 || ih >= g->h)
                    continue; /* zeros: adds nothing */
                const int64_t slot = ih % span;
                float *dst = ring + slot * wp * 16;
                if (tag[slot] != n * g->h + ih) {
                    s_ring_fill(g, x, sgn, zv, n, ih, c0, mk, pl, wp, dst);
                    tag[slot] = n * g->h + ih;
                }
                rows[nr] = dst;
                wk[nr++] = wf + kh * 3 * cp + c0;
            }
            uint8_t *yrow = y + u * g->ow * g->m + c0;
            for (int64_t ow0 = 0; ow0 < g->ow; ow0 += S_OB) {
                const int nb = (int)(g->ow - ow0 < S_OB ? g->ow - ow0 : S_OB);
                __m512 acc[S_OB];
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    acc[o] = init;
                if (sw == 1)
                    s_ring_tile(rows, wk, nr, cp, ow0, 1, acc);
                else
                    s_ring_tile(rows, wk, nr, cp, ow0 * 2, 2, acc);
                if (!rq->f24) { /* sums of (x - xz) w' as int32: s_put16 adds cm */
                    for (int o = 0; o < nb; o++)
                        s_put16(rq, c0, nc, _mm512_cvtps_epi32(acc[o]), 0,
                                yrow + (ow0 + o) * g->m);
                    continue;
                }
                for (int o = 0; o < nb; o++) {
                    const __m512i q = _mm512_add_epi32(gx_requant16f(acc[o], sc, lof, hif), yz);
                    _mm_mask_storeu_epi8(yrow + (ow0 + o) * g->m, mk, _mm512_cvtepi32_epi8(q));
                }
            }
        }
    }
}
#endif

#ifdef GX_REQUANT_AVX512
/* ---- depthwise 3-wide windows in int8 dot products (AVX512-VNNI) ----
 *
 * Where W - w_zp fits int8 (int8 weights of zero point 0, as quantizers
 * write them; uint8 ones of zero point 128), a window row's three taps
 * are one 4-byte group: each input row a block of 16 channels reads
 * becomes, once, per output column o its window's bytes (x[o s - pl],
 * x[o s - pl + 1], x[o s - pl + 2], 0) per channel (x_zp in the padding,
 * int8 x moved by 128 to uint8), and one vpdpbusd adds a window row's
 * three products into each channel's int32 sum: 3 instructions per
 * output of a 3x3 window for s_dw_rows512's 9 FMAs, and no float
 * conversion of the input. Rows outside x read x_zp's bytes. The sums
 * are exact: sum x w' - x_zp sum w' = sum (x - x_zp) w' in int32. */

#define S_TVNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

/* Does the VNNI kernel run (the GEMM's ISA AVX-512 and the CPU VNNI)? */
static bool s_dw_vnni_ok(void)
{
    return !strcmp(gx_cpu_gemm_isa(), "avx512") && __builtin_cpu_supports("avx512vnni");
}

/* Column iw (inside x) of row (16 channels masked by mk) as 16 int32
 * bytes, moved by 128 when flip. */
S_TVNNI static inline __attribute__((always_inline)) __m512i
s_q4_load(const s_geom *g, const uint8_t *row, int64_t iw, __mmask16 mk, bool flip)
{
    const __m128i b = _mm_maskz_loadu_epi8(mk, row + iw * g->c);
    return _mm512_cvtepu8_epi32(flip ? _mm_xor_si128(b, _mm_set1_epi8((char)0x80)) : b);
}

/* s_q4_load of any column: x_zp's bytes (zv) outside x. */
S_TVNNI static inline __attribute__((always_inline)) __m512i
s_q4_col(const s_geom *g, const uint8_t *row, int64_t iw, __mmask16 mk, bool flip, __m512i zv)
{
    return iw < 0 || iw >= g->w ? zv : s_q4_load(g, row, iw, mk, flip);
}

/* The group of a window's three columns z0, z1, z2. */
S_TVNNI static inline __attribute__((always_inline)) __m512i s_q4(__m512i z0, __m512i z1,
                                                                   __m512i z2)
{
    return _mm512_ternarylogic_epi32(z0, _mm512_slli_epi32(z1, 8), _mm512_slli_epi32(z2, 16),
                                     0xFE);
}

/* s_q4_fill with flip and the stride constants once inlined. */
S_TVNNI static inline __attribute__((always_inline)) void
s_q4_fill_k(const s_geom *g, const uint8_t *row, bool flip, __m512i zv, __mmask16 mk, int64_t pl,
            const int SW, int64_t owr, int32_t *dst)
{
    int64_t o = 0;
    if (SW == 1) {
        __m512i z0 = s_q4_col(g, row, -pl, mk, flip, zv);
        __m512i z1 = s_q4_col(g, row, 1 - pl, mk, flip, zv);
        /* outputs whose third column lies inside x: no test per column */
        int64_t in0 = pl - 2 > 0 ? pl - 2 : 0, in1 = g->w + pl - 2 < owr ? g->w + pl - 2 : owr;
        in0 = in0 < owr ? in0 : owr;
        for (; o < in0; o++) {
            const __m512i z2 = s_q4_col(g, row, o + 2 - pl, mk, flip, zv);
            _mm512_storeu_si512(dst + o * 16, s_q4(z0, z1, z2));
            z0 = z1, z1 = z2;
        }
        for (; o < in1; o++) {
            const __m512i z2 = s_q4_load(g, row, o + 2 - pl, mk, flip);
            _mm512_storeu_si512(dst + o * 16, s_q4(z0, z1, z2));
            z0 = z1, z1 = z2;
        }
        for (; o < owr; o++) {
            const __m512i z2 = s_q4_col(g, row, o + 2 - pl, mk, flip, zv);
            _mm512_storeu_si512(dst + o * 16, s_q4(z0, z1, z2));
            z0 = z1, z1 = z2;
        }
        return;
    }
    for (; o < owr; o++) {
        const int64_t iw = o * SW - pl;
        _mm512_storeu_si512(dst + o * 16, s_q4(s_q4_col(g, row, iw, mk, flip, zv),
                                               s_q4_col(g, row, iw + 1, mk, flip, zv),
                                               s_q4_col(g, row, iw + 2, mk, flip, zv)));
    }
}

/* Row ih of image n, channels [c0, c0 + 16) masked by mk, as the groups
 * of the owr output columns' windows (stride sw, 1 or 2, from column
 * -pl); xz: x_zp's byte as uint8, flip: x is int8 (moved by 128). */
S_TVNNI static void s_q4_fill(const s_geom *g, const uint8_t *x, bool flip, uint8_t xz,
                              int64_t n, int64_t ih, int64_t c0, __mmask16 mk, int64_t pl,
                              int64_t sw, int64_t owr, int32_t *dst)
{
    const uint8_t *row = x + (n * g->h + ih) * g->w * g->c + c0;
    const __m512i zv = _mm512_set1_epi32(xz);
    if (sw == 1 && flip)
        s_q4_fill_k(g, row, true, zv, mk, pl, 1, owr, dst);
    else if (sw == 1)
        s_q4_fill_k(g, row, false, zv, mk, pl, 1, owr, dst);
    else if (flip)
        s_q4_fill_k(g, row, true, zv, mk, pl, 2, owr, dst);
    else
        s_q4_fill_k(g, row, false, zv, mk, pl, 2, owr, dst);
}

/* 4 vectors of 16 int32 bytes (u8: in [0, 255]; else [-128, 127]) into
 * the 16-byte pixels at y, y + m, y + 2m, y + 3m (mk: the channels). */
S_TVNNI static inline __attribute__((always_inline)) void
s_store4(__m512i q0, __m512i q1, __m512i q2, __m512i q3, bool s8, __mmask16 mk, uint8_t *y,
         int64_t m)
{
    const __m512i a = _mm512_packs_epi32(q0, q1), b = _mm512_packs_epi32(q2, q3);
    __m512i p = s8 ? _mm512_packs_epi16(a, b) : _mm512_packus_epi16(a, b);
    /* lane L: channels 4L..4L+3 of q0, q1, q2, q3: to q0's 16, q1's, ... */
    p = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), p);
    _mm_mask_storeu_epi8(y, mk, _mm512_castsi512_si128(p));
    _mm_mask_storeu_epi8(y + m, mk, _mm512_extracti32x4_epi32(p, 1));
    _mm_mask_storeu_epi8(y + 2 * m, mk, _mm512_extracti32x4_epi32(p, 2));
    _mm_mask_storeu_epi8(y + 3 * m, mk, _mm512_extracti32x4_epi32(p, 3));
}

/* Output rows [lo, hi) (n * oh + row) of a depthwise QLinearConv whose
 * window s_ring_fits and whose wf (W - w_zp) fits int8, as s_dw_rows512
 * (bands of S_DW_BAND rows, channel block by channel block). */
S_TVNNI static void s_dw_rows_vnni(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz,
                                   const float *wf, int64_t cp, const s_rq *rq, int64_t lo,
                                   int64_t hi, int64_t span, uint8_t *y)
{
    const gx_win *w = &g->win;
    const int64_t sw = w->stride[1], pl = w->pad_lo[1], kh_n = w->k[0];
    const int64_t owr = (g->ow + S_OB - 1) / S_OB * S_OB;
    const uint8_t xzb = (uint8_t)(sgn ? xz + 128 : xz); /* x_zp as the bytes take it */
    int32_t ring[S_DW_RING], pad[S_OB * 16]; /* a row outside x: every column alike */
    int32_t wq[S_DW_FLOATS / 3], zs[S_MAXM];
    int64_t tag[S_DW_TAPS];
    /* each window row's three weights a 4-byte group; zs: x_zp sum w' */
    for (int64_t j = 0; j < cp; j++) {
        int32_t t = 0;
        for (int64_t kh = 0; kh < kh_n; kh++) {
            uint32_t b = 0;
            for (int kw = 0; kw < 3; kw++) {
                const int32_t v = (int32_t)wf[(kh * 3 + kw) * cp + j];
                b |= (uint32_t)(uint8_t)(int8_t)v << (8 * kw);
                t += v;
            }
            wq[kh * cp + j] = (int32_t)b;
        }
        zs[j] = t * xzb;
    }
    memset(pad, xzb, sizeof pad);
    for (int64_t b0 = lo; b0 < hi; b0 += S_DW_BAND)
    for (int64_t c0 = 0; c0 < g->c; c0 += 16) {
        const int nc = (int)(g->c - c0 < 16 ? g->c - c0 : 16);
        const __mmask16 mk = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
        for (int64_t s = 0; s < span; s++)
            tag[s] = -1;
        /* the sums start at cm - x_zp sum w' (f24: cm as int32 exact) */
        const __m512i zsv = _mm512_loadu_si512(zs + c0);
        const __m512i init =
            _mm512_sub_epi32(rq->f24 ? _mm512_maskz_loadu_epi32(mk, rq->cmi + c0)
                                     : _mm512_setzero_si512(),
                             zsv);
        const __m512 sc = _mm512_maskz_loadu_ps(mk, rq->scalef + c0);
        const __m512 lof = _mm512_set1_ps((float)rq->lo), hif = _mm512_set1_ps((float)rq->hi);
        const __m512i yz = _mm512_set1_epi32(rq->yz);
        for (int64_t u = b0; u < hi && u < b0 + S_DW_BAND; u++) {
            const int64_t n = u / g->oh, oh = u % g->oh;
            const int32_t *rows[S_DW_TAPS];
            __m512i wv[S_DW_TAPS / 3];
            for (int64_t kh = 0; kh < kh_n; kh++) {
                const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
                wv[kh] = _mm512_loadu_si512(wq + kh * cp + c0);
                if (ih < 0 || ih >= g->h) {
                    rows[kh] = pad;
                    continue;
                }
                const int64_t slot = ih % span;
                int32_t *dst = ring + slot * owr * 16;
                if (tag[slot] != n * g->h + ih) {
                    s_q4_fill(g, x, sgn, xzb, n, ih, c0, mk, pl, sw, owr, dst);
                    tag[slot] = n * g->h + ih;
                }
                rows[kh] = dst;
            }
            uint8_t *yrow = y + u * g->ow * g->m + c0;
            for (int64_t ow0 = 0; ow0 < g->ow; ow0 += S_OB) {
                const int nb = (int)(g->ow - ow0 < S_OB ? g->ow - ow0 : S_OB);
                __m512i acc[S_OB];
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    acc[o] = init;
                for (int64_t kh = 0; kh < kh_n; kh++) {
                    const int32_t *src = rows[kh] == pad ? pad : rows[kh] + ow0 * 16;
#pragma GCC unroll 8
                    for (int o = 0; o < S_OB; o++)
                        acc[o] = _mm512_dpbusd_epi32(acc[o], _mm512_loadu_si512(src + o * 16),
                                                     wv[kh]);
                }
                if (!rq->f24) { /* sums of (x - xz) w' as int32: s_put16 adds cm */
#pragma GCC unroll 8
                    for (int o = 0; o < S_OB; o++) /* constant indices: acc in registers */
                        if (o < nb)
                            s_put16(rq, c0, nc, acc[o], 0, yrow + (ow0 + o) * g->m);
                    continue;
                }
                __m512i q[S_OB];
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    q[o] = _mm512_add_epi32(gx_requant16f(_mm512_cvtepi32_ps(acc[o]), sc, lof, hif),
                                            yz);
                if (nb == S_OB) {
                    s_store4(q[0], q[1], q[2], q[3], rq->s8, mk, yrow + ow0 * g->m, g->m);
                    s_store4(q[4], q[5], q[6], q[7], rq->s8, mk, yrow + (ow0 + 4) * g->m, g->m);
                    continue;
                }
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    if (o < nb)
                        _mm_mask_storeu_epi8(yrow + (ow0 + o) * g->m, mk,
                                             _mm512_cvtepi32_epi8(q[o]));
            }
        }
    }
}
#endif

#ifdef GX_REQUANT_AVX2
/* ---- depthwise 3-wide windows over rows converted once, in AVX2 ----
 *
 * s_dw_rows512 with 8 channels a vector: the ring holds columns of 8
 * floats x - x_zp, and a tile's 8 outputs take their input columns as
 * FMA memory operands (8 sums and a weight in registers: AVX2 has 16 of
 * them). Exact as s_dw_rows512. */

/* Channels [0, nc) (1 to 8) of the pixel at px as 8 int32 (zeros past
 * nc), widened as signed bytes when sgn. */
S_T256 static inline __attribute__((always_inline)) __m256i s_px8(const uint8_t *px, int nc,
                                                                   bool sgn)
{
    __m128i b;
    if (nc >= 8) {
        b = _mm_loadl_epi64((const __m128i *)px);
    } else {
        uint8_t t[16] = {0};
        memcpy(t, px, (size_t)nc);
        b = _mm_loadu_si128((const __m128i *)t);
    }
    return sgn ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

/* s_ring_fill for 8 channels [c0, c0 + nc); SGN and WHOLE (nc = 8)
 * constants once inlined. */
S_T256 static inline __attribute__((always_inline)) void
s_ring_fill8(const uint8_t *row, int64_t c, const bool SGN, const bool WHOLE, int nc, __m256i zv,
             int64_t pl, int64_t w, int64_t wp, float *dst)
{
    int64_t i = 0;
    for (; i < pl && i < wp; i++)
        _mm256_storeu_ps(dst + i * 8, _mm256_setzero_ps());
    for (; i < pl + w && i < wp; i++) {
        const uint8_t *px = row + (i - pl) * c;
        const __m256i v = WHOLE ? (SGN ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)px))
                                       : _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)px)))
                                : s_px8(px, nc, SGN);
        _mm256_storeu_ps(dst + i * 8, _mm256_cvtepi32_ps(_mm256_sub_epi32(v, zv)));
    }
    for (; i < wp; i++)
        _mm256_storeu_ps(dst + i * 8, _mm256_setzero_ps());
}

S_T256 static void s_ring_fill256(const s_geom *g, const uint8_t *x, bool sgn, __m256i zv,
                                  int64_t n, int64_t ih, int64_t c0, int nc, int64_t pl,
                                  int64_t wp, float *dst)
{
    const uint8_t *row = x + (n * g->h + ih) * g->w * g->c + c0;
    if (nc == 8 && sgn)
        s_ring_fill8(row, g->c, true, true, 8, zv, pl, g->w, wp, dst);
    else if (nc == 8)
        s_ring_fill8(row, g->c, false, true, 8, zv, pl, g->w, wp, dst);
    else
        s_ring_fill8(row, g->c, sgn, false, nc, zv, pl, g->w, wp, dst);
}

/* s_ring_tile for 8 channels. */
S_T256 static inline __attribute__((always_inline)) void
s_ring_tile256(const float *const *rows, const float *const *wk, int nr, int64_t cp,
               int64_t col0, const int SW, __m256 *acc)
{
    for (int r = 0; r < nr; r++) {
        const float *src = rows[r] + col0 * 8;
#pragma GCC unroll 3
        for (int kw = 0; kw < 3; kw++) {
            const __m256 wv = _mm256_loadu_ps(wk[r] + kw * cp);
#pragma GCC unroll 8
            for (int o = 0; o < S_OB; o++)
                acc[o] = _mm256_fmadd_ps(_mm256_loadu_ps(src + (o * SW + kw) * 8), wv, acc[o]);
        }
    }
}

/* s_dw_rows512 for 8 channels a vector (the ring's geometry from
 * s_ring_fits for 8 lanes). */
S_T256 static void s_dw_rows256(const s_geom *g, const uint8_t *x, bool sgn, int32_t xz,
                                const float *wf, int64_t cp, const s_rq *rq, int64_t lo,
                                int64_t hi, int64_t span, int64_t wp, uint8_t *y)
{
    const gx_win *w = &g->win;
    const int64_t sw = w->stride[1], pl = w->pad_lo[1], m = g->m;
    const __m256i zv = _mm256_set1_epi32(xz);
    float ring[S_DW_RING];
    int64_t tag[S_DW_TAPS]; /* the row (n * h + ih) each slot holds, or -1 */
    for (int64_t b0 = lo; b0 < hi; b0 += S_DW_BAND)
    for (int64_t c0 = 0; c0 < g->c; c0 += 8) {
        const int nc = (int)(g->c - c0 < 8 ? g->c - c0 : 8);
        const __m256i mk = gx_mask8(nc);
        for (int64_t s = 0; s < span; s++)
            tag[s] = -1;
        const __m256 init =
            rq->f24 ? _mm256_maskload_ps(rq->cmf + c0, mk) : _mm256_setzero_ps();
        const __m256 sc = _mm256_maskload_ps(rq->scalef + c0, mk);
        const __m256 lof = _mm256_set1_ps((float)rq->lo), hif = _mm256_set1_ps((float)rq->hi);
        const __m256i yz = _mm256_set1_epi32(rq->yz);
        for (int64_t u = b0; u < hi && u < b0 + S_DW_BAND; u++) {
            const int64_t n = u / g->oh, oh = u % g->oh;
            const float *rows[S_DW_TAPS], *wk[S_DW_TAPS];
            int nr = 0;
            for (int64_t kh = 0; kh < w->k[0]; kh++) {
                const int64_t ih = oh * w->stride[0] - w->pad_lo[0] + kh * w->dil[0];
                if (ih < 0 || ih >= g->h)
                    continue; /* zeros: adds nothing */
                const int64_t slot = ih % span;
                float *dst = ring + slot * wp * 8;
                if (tag[slot] != n * g->h + ih) {
                    s_ring_fill256(g, x, sgn, zv, n, ih, c0, nc, pl, wp, dst);
                    tag[slot] = n * g->h + ih;
                }
                rows[nr] = dst;
                wk[nr++] = wf + kh * 3 * cp + c0;
            }
            uint8_t *yrow = y + u * g->ow * m + c0;
            for (int64_t ow0 = 0; ow0 < g->ow; ow0 += S_OB) {
                const int nb = (int)(g->ow - ow0 < S_OB ? g->ow - ow0 : S_OB);
                __m256 acc[S_OB];
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    acc[o] = init;
                if (sw == 1)
                    s_ring_tile256(rows, wk, nr, cp, ow0, 1, acc);
                else
                    s_ring_tile256(rows, wk, nr, cp, ow0 * 2, 2, acc);
                uint8_t *yo = yrow + ow0 * m;
                if (!rq->f24) { /* sums of (x - xz) w' as int32: s_put8 adds cm */
                    for (int o = 0; o < nb; o++)
                        s_put8(rq, c0, nc, _mm256_cvtps_epi32(acc[o]), 0, yo + o * m);
                    continue;
                }
                __m256i q[S_OB];
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++)
                    q[o] = _mm256_add_epi32(gx_requant8f(acc[o], sc, lof, hif), yz);
                if (nb == S_OB && nc == 8) {
                    s_store8x4(q[0], q[1], q[2], q[3], rq->s8, yo, m);
                    s_store8x4(q[4], q[5], q[6], q[7], rq->s8, yo + 4 * m, m);
                    continue;
                }
#pragma GCC unroll 8
                for (int o = 0; o < S_OB; o++) /* constant indices: q in registers */
                    if (o < nb)
                        s_store8(yo + o * m, nc, q[o]);
            }
        }
    }
}
#endif

static void s_depthwise(const gx_kargs *k, const s_geom *g)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const bool sgn = x->dtype == GX_I8;
    const int32_t xz = s_zp(k, 2, 0);
    const int64_t cp = (g->c + 15) / 16 * 16;
    float wf[S_DW_FLOATS], wsum[S_MAXM] = {0}; /* cp <= S_MAXM (gx_cpu_qconv_layout) */
    s_dw_weights(k, g, wf, cp);
    for (int64_t t = 0; t < g->win.k_size; t++) /* exact: integers below 2^24 */
        for (int64_t j = 0; j < cp; j++)
            wsum[j] += wf[t * cp + j];
    s_rq rq;
    s_rq_of(k, g->m, g->win.k_size, xz, NULL, false, (double)g->win.k_size * 255 * 255, 0, &rq);
    const s_isa isa = s_isa_of();
#ifdef GX_REQUANT_AVX512
    const int64_t cols = (S_OB - 1) * g->win.stride[1] + (g->win.k[1] - 1) * g->win.dil[1] + 1;
    const bool v512 = isa == S_V512 && cols <= S_DW_COLS;
#endif
    int64_t lo, hi;
    gx_cpu_share(k, g->n * g->oh, 1, &lo, &hi);
#ifdef GX_REQUANT_AVX2
    int64_t span, wp;
    if (isa == S_V256 && s_ring_fits(g, 8, &span, &wp)) {
        s_dw_rows256(g, x->data, sgn, xz, wf, cp, &rq, lo, hi, span, wp, y->data);
        return;
    }
#endif
#ifdef GX_REQUANT_AVX512
    if (v512 && s_ring_fits(g, 16, &span, &wp)) {
        if (s_dw_vnni_ok() && s_w8_fits(wf, g->win.k_size, cp)) {
            s_dw_rows_vnni(g, x->data, sgn, xz, wf, cp, &rq, lo, hi, span, y->data);
            return;
        }
        s_dw_rows512(g, x->data, sgn, xz, wf, cp, &rq, lo, hi, span, wp, y->data);
        return;
    }
#endif
    int32_t acc[S_OB * 16];
    for (int64_t u = lo; u < hi; u++) {
        const int64_t n = u / g->oh, oh = u % g->oh;
        uint8_t *yrow = (uint8_t *)y->data + u * g->ow * g->m;
        for (int64_t c0 = 0; c0 < g->c; c0 += 16) {
            const int nc = (int)(g->c - c0 < 16 ? g->c - c0 : 16);
            for (int64_t ow0 = 0; ow0 < g->ow; ow0 += S_OB) {
                const int nb = (int)(g->ow - ow0 < S_OB ? g->ow - ow0 : S_OB);
#ifdef GX_REQUANT_AVX512
                if (v512 && nb == S_OB &&
                    s_dw_fast(g, x->data, sgn, xz, wf, wsum, cp, n, oh, c0, nc, ow0, &rq, yrow))
                    continue;
                if (v512) {
                    s_dw_block512(g, x->data, sgn, xz, wf, cp, n, oh, c0, nc, ow0, nb, &rq, yrow);
                    continue;
                }
#endif
                s_dw_block(g, x->data, sgn, xz, wf, cp, n, oh, c0, nc, ow0, nb, acc);
                for (int o = 0; o < nb; o++)
                    s_put(&rq, c0, nc, acc + o * 16, 0, yrow + (ow0 + o) * g->m + c0);
            }
        }
    }
}

static void s_qconv_nhwc(const gx_kargs *k)
{
    s_geom g;
    s_geom_of(k, &g);
    if (g.dw)
        s_depthwise(k, &g);
    else
        s_pointwise(k, &g);
}

/* ---- what the layout pass may choose ---- */

gx_kernel_fn gx_cpu_qconv_layout(gx_layout l, const gx_infer *ic, char *why, size_t len)
{
    const gx_view *x = &ic->in[0], *w = ic->n_in > 3 ? &ic->in[3] : NULL;
    if (l != GX_LAYOUT_NHWC) {
        snprintf(why, len, "%s: QLinearConv runs in NHWC only", gx_layout_name(l));
        return NULL;
    }
    if (!w || x->ndim != 4 || w->ndim != 4 || !w->data || ic->n_in < 8) {
        snprintf(why, len, "nhwc: QLinearConv of 2-D windows with constant weights only");
        return NULL;
    }
    if ((x->dtype != GX_U8 && x->dtype != GX_I8) || (w->dtype != GX_U8 && w->dtype != GX_I8) ||
        ic->in[1].numel != 1 || ic->in[6].numel != 1 || ic->in[2].numel != 1 ||
        ic->in[7].numel != 1 || ic->in[4].numel > w->shape[0] || ic->in[5].numel > w->shape[0]) {
        snprintf(why, len, "nhwc: QLinearConv with scales or zero points of another shape");
        return NULL;
    }
    const int64_t c = x->shape[1], m = w->shape[0], group = ic->attr[GX_QLINEARCONV_GROUP].i;
    gx_win win;
    if (gx_win_init(&win, ic->attr, "QLinearConv", x, w->shape + 2, false, false, NULL, 0) < 0) {
        snprintf(why, len, "nhwc: QLinearConv of a window it cannot take");
        return NULL;
    }
    const bool nopad = !win.pad_lo[0] && !win.pad_lo[1] && !win.pad_hi[0] && !win.pad_hi[1];
    const bool pointwise = group == 1 && w->shape[2] == 1 && w->shape[3] == 1 && nopad &&
                           c <= GX_QGEMM_MAX_K;
    const bool dw = group == c && m == c && w->shape[1] == 1 && c > 1 &&
                    w->shape[2] * w->shape[3] <= S_DW_TAPS &&
                    w->shape[2] * w->shape[3] * ((c + 15) / 16 * 16) <= S_DW_FLOATS;
    if ((!pointwise && !dw) || m > S_MAXM) {
        snprintf(why, len, "nhwc: QLinearConv other than 1x1 (no padding) or depthwise");
        return NULL;
    }
    const s_isa isa = s_isa_of();
    if (isa == S_V512 && (!pointwise || !strcmp(gx_cpu_qgemm_impl(), "qgemm.avx512vnni")))
        return s_qconv_nhwc;
#ifdef GX_REQUANT_AVX2
    if (isa == S_V256) {
        s_geom g = {.win = win, .ow = win.out[1]};
        int64_t span, wp;
        if (pointwise ? strcmp(gx_cpu_qgemm_impl(), "qgemm.baseline") != 0
                      : s_ring_fits(&g, 8, &span, &wp))
            return s_qconv_nhwc;
    }
#endif
    snprintf(why, len,
             "nhwc: QLinearConv's vector kernels need AVX-512%s, or AVX2 and FMA%s",
             pointwise ? " VNNI" : "", pointwise ? "" : " for 3-wide windows of stride 1 or 2");
    return NULL;
}

gx_kernel_fn gx_cpu_qconv_layout_fn(void)
{
    return s_qconv_nhwc;
}
