/*
 * Conv in the NHWC and NCHW16c layouts (ops/layout.h): float32, 2-D,
 * group 1, depthwise (group == C == M), groups of 2, 4 or 8 channels in and
 * out (C == M: each output block reads its own input block, the ResNeXt
 * kind), or groups whose input and output channels are multiples of 16
 * (each output block reads its group's channels only: a run of blocks
 * never crosses a group), constant weights packed once per plan.
 *
 * Packed weights (gx_cpu_conv_pack), the same in both layouts: blocks of
 * 16 output channels (M rounded up, zeros past it), block b holding
 * [kh][kw][C][16] (the GEMM's B [kh * kw * C, M] in 16-column panels,
 * ops/gemm.h); depthwise, [kh][kw][16] per block.
 *
 * Group 1 runs one direct kernel for every layout of x and y. Output rows
 * are walked in runs of R columns by NB blocks of 16 output channels, the
 * R * NB accumulators in registers: every (tap, input channel) broadcasts
 * one x element per column of the run and multiplies it into each block's
 * 16 weights. x is read in NCHW16c or NHWC 16 channels at a time (C a
 * multiple of 16), else one channel at a time: NHWC with any C, or NCHW
 * (gx_cpu_conv_layout_input: an NCHW16c Conv whose C is not a multiple of
 * 16, an NHWC one with an image's few channels), as MLAS's "NCHW to
 * NCHWc" convolution does a network's first layer; there a window 3 taps
 * wide broadcasts each x element once for the 3 columns that read it
 * (s_dk3_512). y's blocks are NCHW16c blocks or 16 channels of an NHWC
 * position (the last one masked when M is not a multiple of 16). A 1x1
 * window with stride 1 and no padding walks each plane as one row. With
 * AVX-512 or AVX2, planes narrower than S_POS_MAX_OW columns run in position
 * runs across rows instead (s_dkp512, s_dk_pos): a row's few columns
 * would make short runs, each reading all the weights of its blocks.
 * Depthwise: 16 channels per vector, runs of R columns, each x vector
 * loaded once per window row when the window is 3 wide (s_dw3_512).
 * Groups of 2, 4 or 8 channels run as depthwise does, each x vector's
 * lanes permuted once per input channel of the group (s_dw512).
 *
 * Arithmetic: an output element is its bias (or 0) plus its products in
 * the order (kh, kw, input channel) (s_dk3_512: kh, channel, kw), window
 * rows in the padding skipped (position runs: read as zeros; whether a
 * Conv runs them depends on its shapes alone). A column whose window reaches into the
 * padding along W (an edge) runs in a checked run that reads zeros there,
 * as NCHW's im2col has them; with one channel per broadcast it runs alone
 * over its own taps instead. Each column is computed the same way
 * whatever run, block group or share it falls in, so every nth gives the
 * same bits. With AVX-512 or AVX2 (the GEMM's ISA, gx_cpu_gemm_isa) each
 * product is fused into its sum (FMA); on the baseline 16-lane vector
 * code (no FMA) rounds each. AVX2 (s_dk256, s_dw256) runs each block as
 * two 8-lane halves, runs of up to 6 columns of one block (12 sums in
 * the 16 ymm registers), position runs of up to 6 (s_dkp256), no
 * s_dk3; a depthwise window 3 or 5 wide at stride 1 or 2 in runs of up
 * to 8 columns of one half (s_dwk256), groups of 2, 4 or 8 channels in
 * runs of up to 6 columns of one half, each lane reading its group's
 * channel as s_dw512's permutes do, through in-lane shuffles or a
 * broadcast load (s_dwg256). As the head of a fused group
 * (gx_cpu_conv_layout_epi) a lone Relu or Clip is applied as each output
 * is stored; other epilogues run on each row
 * (S_EPI_COLS columns of a plane) as soon as it is written.
 *
 * Shares (gx_cpu_conv_layout_rows): NHWC, chunks of S_CHUNK positions, at
 * most GX_CONV_LAYOUT_SHARES shares with work; NCHW16c, output rows (n,
 * m-block, oh). Each share writes one contiguous range of the output.
 * No kernel needs scratch.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/fused.h"
#include "ops/gemm.h"
#include "ops/layout.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S_X86 1
#define S_T512 __attribute__((target("avx512f")))
#endif

#define S_CHUNK 8                  /* NHWC: positions per unit of the share split */
#define S_B GX_LAYOUT_BLOCK        /* channels of a block */
#define S_IMAGE_C 4 /* an NHWC Conv with this many input channels or fewer reads x in NCHW */
#define S_INLINE static inline __attribute__((always_inline))

_Static_assert(GX_GEMM_PANEL == S_B, "a weights block is a GEMM panel");

/* ---- shared geometry ---- */

/* The node's geometry from the kernel's views: logical x, the window from
 * the packed weights' shape [kh, kw, C, Mp], M from the output. */
static void s_geometry(const gx_kargs *k, gx_win *w, int64_t *c, int64_t *m)
{
    const gx_view x = gx_layout_logical(&k->in[0]);
    int64_t d[4];
    gx_win_init(w, k->attr, "Conv", &x, k->in[1].shape, false, false, NULL, 0);
    gx_layout_dims(&k->out[0], d);
    *c = x.shape[1];
    *m = d[1];
}

/* A depthwise conv, or one of groups of 2, 4 or 8 channels in and out
 * (the packed weights' third dim), whose output block reads the input
 * block of its channels only; rather than one of groups of 16 channels or
 * more? */
static bool s_blockwise(const gx_kargs *k)
{
    return k->attr[GX_CONV_GROUP].i > 1 && k->in[1].shape[2] < S_B;
}

/* Is the window a 1x1 with stride 1 and no padding (a plane is a row)? */
static bool s_pointwise(const gx_win *w)
{
    return gx_conv_path_of(w, 1, 1) == GX_CONV_POINTWISE;
}

/* NHWC share split over p positions: [*c0, *c1) chunks of S_CHUNK; shares
 * ith >= GX_CONV_LAYOUT_SHARES get none. */
static void s_nhwc_chunks(int64_t p, int ith, int nth, int64_t *c0, int64_t *c1)
{
    const int64_t chunks = (p + S_CHUNK - 1) / S_CHUNK;
    const int64_t eff = nth < GX_CONV_LAYOUT_SHARES ? nth : GX_CONV_LAYOUT_SHARES;
    if (ith >= eff) {
        *c0 = *c1 = chunks;
        return;
    }
    *c0 = chunks * ith / eff;
    *c1 = chunks * (ith + 1) / eff;
}

void gx_cpu_conv_layout_rows(gx_layout l, const gx_view *y, int ith, int nth, int64_t *lo,
                             int64_t *hi)
{
    int64_t d[4];
    gx_layout_dims(y, d);
    if (l == GX_LAYOUT_NHWC) {
        const int64_t p = d[0] * d[2] * d[3];
        int64_t c0, c1;
        s_nhwc_chunks(p, ith, nth, &c0, &c1);
        *lo = (c0 * S_CHUNK < p ? c0 * S_CHUNK : p) * d[1];
        *hi = (c1 * S_CHUNK < p ? c1 * S_CHUNK : p) * d[1];
        return;
    }
    const gx_kargs share = {.ith = ith, .nth = nth};
    const int64_t row = d[3] * S_B;
    gx_cpu_share(&share, d[0] * (d[1] / S_B) * d[2], 1, lo, hi);
    *lo *= row;
    *hi *= row;
}

/* Do the direct and depthwise kernels run their AVX-512 code (the GEMM's
 * choice of ISA, so that GEXEC_GEMM_ISA and tests pick both)? */
static bool s_wide(void)
{
#ifdef S_X86
    return !strcmp(gx_cpu_gemm_isa(), "avx512");
#else
    return false;
#endif
}

/* Do they run their AVX2 + FMA code instead? */
static bool s_avx2(void)
{
#ifdef S_X86
    return !strcmp(gx_cpu_gemm_isa(), "avx2");
#else
    return false;
#endif
}

/* ---- what a kernel applies as it stores ----
 * A fused Relu or Clip (gx_cpu_conv_layout_epi), with the very
 * expressions of their kernels (ops/cpu/elementwise.c): Relu v < 0 ? 0 :
 * v, Clip t = v < lo ? lo : v, t > hi ? hi : t, NaN staying NaN. */
enum { S_ACT_NONE, S_ACT_RELU, S_ACT_CLIP };

typedef struct s_act {
    int kind; /* S_ACT_* */
    float lo, hi;
} s_act;

/* The rest of a fused group's ops: fn(ctx, lo, hi) on each run of output
 * elements as soon as the kernel has written it (fn NULL: none). */
typedef struct s_epi {
    gx_fused_epi_fn fn;
    void *ctx;
} s_epi;

#define S_EPI_COLS 128 /* a plane walked as one row: columns between epilogue calls */

typedef float s_v16 __attribute__((vector_size(64), aligned(4)));

typedef int32_t s_vi16 __attribute__((vector_size(64)));

#ifdef S_X86
#define S_ACT512(d, v)                                                                             \
    ({                                                                                             \
        __m512 a_ = (v);                                                                           \
        if ((d)->act == S_ACT_RELU) {                                                              \
            const __m512 z_ = _mm512_setzero_ps();                                                 \
            a_ = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a_, z_, _CMP_LT_OQ), a_, z_);             \
        } else if ((d)->act == S_ACT_CLIP) {                                                       \
            const __m512 l_ = _mm512_set1_ps((d)->lo), h_ = _mm512_set1_ps((d)->hi);               \
            a_ = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a_, l_, _CMP_LT_OQ), a_, l_);             \
            a_ = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a_, h_, _CMP_GT_OQ), a_, h_);             \
        }                                                                                          \
        a_;                                                                                        \
    })
#endif

/* The same on 16-lane vectors of the clones (selects by masks). */
#define S_ACTV(d, v)                                                                               \
    ({                                                                                             \
        s_v16 a_ = (v);                                                                            \
        if ((d)->act == S_ACT_RELU) {                                                              \
            const s_vi16 m_ = a_ < 0.0f;                                                           \
            a_ = (s_v16)((s_vi16)a_ & ~m_);                                                        \
        } else if ((d)->act == S_ACT_CLIP) {                                                       \
            const s_vi16 m_ = a_ < (d)->lo;                                                        \
            a_ = (s_v16)(((s_vi16)a_ & ~m_) | ((s_vi16)((s_v16){0} + (d)->lo) & m_));              \
            const s_vi16 n_ = a_ > (d)->hi;                                                        \
            a_ = (s_v16)(((s_vi16)a_ & ~n_) | ((s_vi16)((s_v16){0} + (d)->hi) & n_));              \
        }                                                                                          \
        a_;                                                                                        \
    })

/* ---- the direct kernel ----
 *
 * Strides in floats. x element (channel g * CL + c, row i, column j) of an
 * image is at g * xg + i * xrow + j * xcol + c: NCHW16c (CL 16) xg = H * W *
 * 16, xrow = W * 16, xcol = 16; NHWC (CL 16) xg = 16, xrow = W * C, xcol =
 * C; NCHW (CL 1) xg = H * W, xrow = W, xcol = 1. Output block b, column o
 * of a row at b * ymb + o * ycol from the row's start. */
typedef struct s_dk {
    int64_t C;          /* input channels: a tap's weights are C rows of 16 */
    int64_t G, xg;      /* channel groups of CL channels, and their stride in x */
    int64_t dhx, dwx;   /* x's floats between a window's rows, columns (dilated) */
    int64_t xstep;      /* x's floats between two output columns' windows */
    int64_t kw;         /* taps per window row */
    int64_t iw, sw, dwj; /* x's columns; the window's stride, dilation in them */
    int act;            /* applied to each output as it is stored: S_ACT_* */
    float lo, hi;       /* S_ACT_CLIP's bounds */
    int64_t wmb;        /* weights' floats between output blocks */
    int64_t ymb, ycol;  /* y's floats between output blocks, columns */
    int64_t kh, ih, dhi; /* position runs (s_dkp512): window rows, x's rows, their dilation */
    int64_t xrow, xcol;  /* x's floats between rows, columns */
} s_dk;

/* One run: R columns (the first reading x at xn[off], its tap 0 in x's
 * column j0) by NB blocks of y (at y), window rows [a0, a1) (those inside
 * x) and columns [b0, b1), weights of the first block at w, its bias (or
 * NULL). Checked runs
 * (CHK) hold columns whose windows reach into the padding along W: such a
 * tap reads zeros (x padded with zeros, as NCHW's im2col has it), so a
 * column's arithmetic does not depend on the run it is in. Lanes of the
 * last block past `last` (a count: 16 but for NHWC's last block of an M
 * that is not a multiple of 16) are neither read from the bias nor
 * written. */
typedef void (*s_dk_fn)(const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                        int64_t b0, int64_t b1, int64_t j0, const float *w, const float *bias,
                        int last, float *y);

/* What a checked run's taps in the padding read. */
static const float s_zeros[S_B] __attribute__((aligned(64)));

/* x pointers of the R columns of a run at tap (a, b), and a mask of the
 * offsets of channel groups for each: all ones, or none for a column in
 * the padding, whose pointer is then to zeros. */
#define S_TAP_PTRS(CHK, R, d, xn, off, a, b, j0, xr, msk)                                          \
    do {                                                                                           \
        const int64_t o_ = (off) + (a) * (d)->dhx + (b) * (d)->dwx;                                \
        const int64_t j_ = (j0) + (b) * (d)->dwj;                                                  \
        _Pragma("GCC unroll 12") for (int r = 0; r < (R); r++) {                                   \
            const bool in_ = !(CHK) || (uint64_t)(j_ + r * (d)->sw) < (uint64_t)(d)->iw;           \
            (xr)[r] = in_ ? (xn) + (o_ + r * (d)->xstep) : s_zeros;                                \
            (msk)[r] = in_ ? ~(int64_t)0 : 0;                                                      \
        }                                                                                          \
    } while (0)

/* Channel c of group offset go of column r (CHK: through its mask). */
#define S_XAT(CHK, xr, msk, r, go, c) ((xr)[r][((CHK) ? ((go) & (msk)[r]) : (go)) + (c)])

#ifdef S_X86
/* AVX-512: R <= 12 columns for NB <= 2 blocks, 8 for 3, 6 for 4. */
S_INLINE S_T512 void s_dk512(const int CL, const int NB, const int R, const bool CHK,
                             const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                             int64_t b0, int64_t b1, int64_t j0, const float *w,
                             const float *bias, int last, float *y)
{
    const __mmask16 lm = (__mmask16)((1u << last) - 1);
    __m512 acc[4][12]; /* [NB][R]: fixed sizes, so that they live in registers */
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + j * S_B) : _mm512_setzero_ps();
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            acc[j][r] = b;
    }
    const int64_t wmb = d->wmb;
    for (int64_t a = a0; a < a1; a++) {
        for (int64_t b = b0; b < b1; b++) {
            const float *wg = w + (a * d->kw + b) * d->C * S_B;
            const float *xr[12];
            int64_t msk[12];
            S_TAP_PTRS(CHK, R, d, xn, off, a, b, j0, xr, msk);
            for (int64_t g = 0, go = 0; g < d->G; g++, go += d->xg) {
#pragma GCC unroll 4
                for (int c = 0; c < CL; c++) {
                    __m512 wv[4];
#pragma GCC unroll 4
                    for (int j = 0; j < NB; j++)
                        wv[j] = _mm512_loadu_ps(wg + j * wmb + c * S_B);
#pragma GCC unroll 12
                    for (int r = 0; r < R; r++) {
                        const __m512 xb = _mm512_set1_ps(S_XAT(CHK, xr, msk, r, go, c));
#pragma GCC unroll 4
                        for (int j = 0; j < NB; j++)
                            acc[j][r] = _mm512_fmadd_ps(xb, wv[j], acc[j][r]);
                    }
                }
                wg += CL * S_B;
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(y + j * d->ymb + r * d->ycol, m, S_ACT512(d, acc[j][r]));
    }
}

#define S_DK512(CHK, CL, NB, R)                                                                    \
    static S_T512 void s_dk512_##CHK##_##CL##_##NB##_##R(                                          \
        const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t b0,           \
        int64_t b1, int64_t j0, const float *w, const float *bias, int last, float *y)             \
    {                                                                                              \
        s_dk512(CL, NB, R, CHK, d, xn, off, a0, a1, b0, b1, j0, w, bias, last, y);                 \
    }
#define S_R6(M, K, CL, NB)                                                                         \
    M(K, CL, NB, 1) M(K, CL, NB, 2) M(K, CL, NB, 3) M(K, CL, NB, 4) M(K, CL, NB, 5) M(K, CL, NB, 6)
#define S_R8(M, K, CL, NB) S_R6(M, K, CL, NB) M(K, CL, NB, 7) M(K, CL, NB, 8)
#define S_R12(M, K, CL, NB)                                                                        \
    S_R8(M, K, CL, NB) M(K, CL, NB, 9) M(K, CL, NB, 10) M(K, CL, NB, 11) M(K, CL, NB, 12)
#define S_DK512_CL(K, CL)                                                                          \
    S_R12(S_DK512, K, CL, 1) S_R12(S_DK512, K, CL, 2) S_R8(S_DK512, K, CL, 3)                      \
        S_R6(S_DK512, K, CL, 4)
S_DK512_CL(0, 1)
S_DK512_CL(0, 16)
S_DK512_CL(1, 1)
S_DK512_CL(1, 16)

#define S_FN(K, CL, NB, R) s_dk512_##K##_##CL##_##NB##_##R,
#define S_ROW(K, CL, NB, RS) {RS(S_FN, K, CL, NB)}
#define S_TAB(K, CL)                                                                               \
    {S_ROW(K, CL, 1, S_R12), S_ROW(K, CL, 2, S_R12), S_ROW(K, CL, 3, S_R8),                        \
     S_ROW(K, CL, 4, S_R6)}
/* [checked][CL 1 or 16][NB - 1][R - 1] */
static const s_dk_fn s_dk512_tab[2][2][4][12] = {{S_TAB(0, 1), S_TAB(0, 16)},
                                                  {S_TAB(1, 1), S_TAB(1, 16)}};

/* x in NCHW (one channel per broadcast, columns adjacent), a window 3
 * taps wide, undilated, stride S (1 or 2) along W, every tap of the run
 * inside x: per window row and channel each x column the run reads is
 * broadcast once and multiplied into the (up to 3) columns whose taps
 * read it, each column summing its products in the order (kh, channel,
 * kw). The interior columns of such a Conv always run here (its edge
 * columns alone, s_dk_cols), so a column's arithmetic does not depend on
 * its run. R <= 12 columns for NB 1, 8 for 2, 6 for 3, 4 for 4. */
S_INLINE S_T512 void s_dk3_512(const int NB, const int R, const int S, const s_dk *d,
                               const float *xn, int64_t off, int64_t a0, int64_t a1,
                               const float *w, const float *bias, int last, float *y)
{
    const __mmask16 lm = (__mmask16)((1u << last) - 1);
    __m512 acc[4][12];
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + j * S_B) : _mm512_setzero_ps();
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            acc[j][r] = b;
    }
    const int64_t C = d->C, wmb = d->wmb;
    for (int64_t a = a0; a < a1; a++) {
        const float *wa = w + a * 3 * C * S_B;
        for (int64_t g = 0; g < C; g++, wa += S_B) {
            const float *xa = xn + (off + a * d->dhx + g * d->xg);
            __m512 wv[4][3];
#pragma GCC unroll 4
            for (int j = 0; j < NB; j++)
#pragma GCC unroll 3
                for (int t = 0; t < 3; t++)
                    wv[j][t] = _mm512_loadu_ps(wa + j * wmb + t * C * S_B);
#pragma GCC unroll 26
            for (int q = 0; q < (R - 1) * S + 3; q++) {
                const __m512 xb = _mm512_set1_ps(xa[q]);
#pragma GCC unroll 3
                for (int t = 2; t >= 0; t--) {
                    const int r = (q - t) / S;
                    if (q - t >= 0 && (q - t) % S == 0 && r < R)
#pragma GCC unroll 4
                        for (int j = 0; j < NB; j++)
                            acc[j][r] = _mm512_fmadd_ps(xb, wv[j][t], acc[j][r]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(y + j * d->ymb + r * d->ycol, m, S_ACT512(d, acc[j][r]));
    }
}

typedef void (*s_dk3_fn)(const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                         const float *w, const float *bias, int last, float *y);
#define S_DK3(S, NB, R)                                                                            \
    static S_T512 void s_dk3_##S##_##NB##_##R(const s_dk *d, const float *xn, int64_t off,        \
                                              int64_t a0, int64_t a1, const float *w,              \
                                              const float *bias, int last, float *y)               \
    {                                                                                              \
        s_dk3_512(NB, R, S, d, xn, off, a0, a1, w, bias, last, y);                                 \
    }
#define S_DK3_R4(S, NB) S_DK3(S, NB, 1) S_DK3(S, NB, 2) S_DK3(S, NB, 3) S_DK3(S, NB, 4)
#define S_DK3_R6(S, NB) S_DK3_R4(S, NB) S_DK3(S, NB, 5) S_DK3(S, NB, 6)
#define S_DK3_R8(S, NB) S_DK3_R6(S, NB) S_DK3(S, NB, 7) S_DK3(S, NB, 8)
#define S_DK3_R12(S, NB)                                                                           \
    S_DK3_R8(S, NB) S_DK3(S, NB, 9) S_DK3(S, NB, 10) S_DK3(S, NB, 11) S_DK3(S, NB, 12)
#define S_DK3_S(S) S_DK3_R12(S, 1) S_DK3_R8(S, 2) S_DK3_R6(S, 3) S_DK3_R4(S, 4)
S_DK3_S(1)
S_DK3_S(2)
#define S_DK3_F(S, NB, R) s_dk3_##S##_##NB##_##R,
#define S_DK3_ROW4(S, NB) S_DK3_F(S, NB, 1) S_DK3_F(S, NB, 2) S_DK3_F(S, NB, 3) S_DK3_F(S, NB, 4)
#define S_DK3_ROW6(S, NB) S_DK3_ROW4(S, NB) S_DK3_F(S, NB, 5) S_DK3_F(S, NB, 6)
#define S_DK3_ROW8(S, NB) S_DK3_ROW6(S, NB) S_DK3_F(S, NB, 7) S_DK3_F(S, NB, 8)
#define S_DK3_ROW12(S, NB)                                                                         \
    S_DK3_ROW8(S, NB) S_DK3_F(S, NB, 9) S_DK3_F(S, NB, 10) S_DK3_F(S, NB, 11) S_DK3_F(S, NB, 12)
#define S_DK3_TAB(S)                                                                               \
    {{S_DK3_ROW12(S, 1)}, {S_DK3_ROW8(S, 2)}, {S_DK3_ROW6(S, 3)}, {S_DK3_ROW4(S, 4)}}
/* [S - 1][NB - 1][R - 1] */
static const s_dk3_fn s_dk3_tab[2][4][12] = {S_DK3_TAB(1), S_DK3_TAB(2)};

/* A run of R output positions that may span rows (small planes, where a
 * row alone makes short runs that read the weights too often): position
 * r's window starts at x's row pi[r] and column pj[r] (either may lie in
 * the padding); y's position r at y + r * ycol. Every tap of the window
 * is summed, in the order (kh, kw, input channel) as s_dk512's, a tap in
 * the padding (rows included) reading zeros, so a position's arithmetic
 * depends on neither the run nor the share. R <= 12 for NB <= 2, 8 for
 * 3, 6 for 4. */
S_INLINE S_T512 void s_dkp512(const int CL, const int NB, const int R, const s_dk *d,
                              const float *xn, const int64_t *pi, const int64_t *pj,
                              const float *w, const float *bias, int last, float *y)
{
    const __mmask16 lm = (__mmask16)((1u << last) - 1);
    __m512 acc[4][12];
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + j * S_B) : _mm512_setzero_ps();
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            acc[j][r] = b;
    }
    const int64_t wmb = d->wmb;
    const float *wg = w;
    for (int64_t a = 0; a < d->kh; a++) {
        for (int64_t b = 0; b < d->kw; b++) {
            const float *xr[12];
            int64_t msk[12];
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                const int64_t i = pi[r] + a * d->dhi, j = pj[r] + b * d->dwj;
                const bool in = (uint64_t)i < (uint64_t)d->ih && (uint64_t)j < (uint64_t)d->iw;
                xr[r] = in ? xn + (i * d->xrow + j * d->xcol) : s_zeros;
                msk[r] = in ? ~(int64_t)0 : 0;
            }
            for (int64_t g = 0, go = 0; g < d->G; g++, go += d->xg) {
#pragma GCC unroll 16
                for (int c = 0; c < CL; c++) {
                    __m512 wv[4];
#pragma GCC unroll 4
                    for (int j = 0; j < NB; j++)
                        wv[j] = _mm512_loadu_ps(wg + j * wmb + c * S_B);
#pragma GCC unroll 12
                    for (int r = 0; r < R; r++) {
                        const __m512 xb = _mm512_set1_ps(S_XAT(1, xr, msk, r, go, c));
#pragma GCC unroll 4
                        for (int j = 0; j < NB; j++)
                            acc[j][r] = _mm512_fmadd_ps(xb, wv[j], acc[j][r]);
                    }
                }
                wg += CL * S_B;
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; j++) {
        const __mmask16 m = j == NB - 1 ? lm : (__mmask16)0xffff;
#pragma GCC unroll 12
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(y + j * d->ymb + r * d->ycol, m, S_ACT512(d, acc[j][r]));
    }
}

typedef void (*s_dkp_fn)(const s_dk *d, const float *xn, const int64_t *pi, const int64_t *pj,
                         const float *w, const float *bias, int last, float *y);
#define S_DKP(CL, NB, R)                                                                           \
    static S_T512 void s_dkp512_##CL##_##NB##_##R(const s_dk *d, const float *xn,               \
                                                  const int64_t *pi, const int64_t *pj,            \
                                                  const float *w, const float *bias, int last,     \
                                                  float *y)                                        \
    {                                                                                              \
        s_dkp512(CL, NB, R, d, xn, pi, pj, w, bias, last, y);                                      \
    }
#define S_DKP_M(K, CL, NB, R) S_DKP(CL, NB, R)
#define S_DKP_CL(CL)                                                                               \
    S_R12(S_DKP_M, 0, CL, 1) S_R12(S_DKP_M, 0, CL, 2) S_R8(S_DKP_M, 0, CL, 3)                     \
        S_R6(S_DKP_M, 0, CL, 4)
S_DKP_CL(1)
S_DKP_CL(16)
#define S_DKP_FN(K, CL, NB, R) s_dkp512_##CL##_##NB##_##R,
#define S_DKP_ROW(CL, NB, RS) {RS(S_DKP_FN, 0, CL, NB)}
#define S_DKP_TAB(CL)                                                                              \
    {S_DKP_ROW(CL, 1, S_R12), S_DKP_ROW(CL, 2, S_R12), S_DKP_ROW(CL, 3, S_R8),                     \
     S_DKP_ROW(CL, 4, S_R6)}
/* [CL 1 or 16][NB - 1][R - 1] */
static const s_dkp_fn s_dkp512_tab[2][4][12] = {S_DKP_TAB(1), S_DKP_TAB(16)};
#endif

#ifdef S_X86
/* ---- AVX2 + FMA (gx_cpu_gemm_isa "avx2") ----
 * A block of 16 channels is two 8-lane halves; a run holds 2 * NB * R
 * sums in the 16 ymm registers: R <= 6 columns of one block, or 3 of
 * two. Products fused into their sums in the same order as s_dk512's. */
#define S_T256 __attribute__((target("avx2,fma")))

/* S_ACT512 on 8 lanes. */
#define S_ACT256(d, v)                                                                             \
    ({                                                                                             \
        __m256 a_ = (v);                                                                           \
        if ((d)->act == S_ACT_RELU) {                                                              \
            const __m256 z_ = _mm256_setzero_ps();                                                 \
            a_ = _mm256_blendv_ps(a_, z_, _mm256_cmp_ps(a_, z_, _CMP_LT_OQ));                      \
        } else if ((d)->act == S_ACT_CLIP) {                                                       \
            const __m256 l_ = _mm256_set1_ps((d)->lo), h_ = _mm256_set1_ps((d)->hi);               \
            a_ = _mm256_blendv_ps(a_, l_, _mm256_cmp_ps(a_, l_, _CMP_LT_OQ));                      \
            a_ = _mm256_blendv_ps(a_, h_, _mm256_cmp_ps(a_, h_, _CMP_GT_OQ));                      \
        }                                                                                          \
        a_;                                                                                        \
    })

/* v with d's activation, stored at p: the lanes of mask m alone when part
 * (the last block of an M or C that is not a multiple of 16). */
#define S_PUT256(d, p, v, part, m)                                                                 \
    do {                                                                                           \
        const __m256 v_ = S_ACT256(d, v);                                                          \
        if (part)                                                                                  \
            _mm256_maskstore_ps((p), (m), v_);                                                     \
        else                                                                                       \
            _mm256_storeu_ps((p), v_);                                                             \
    } while (0)

/* Half h of a run's blocks at p (block h / 2 at p + (h / 2) * stride):
 * masked (lane mask m) in the last block when it is partial. */
#define S_LD256(p, h, stride, part, m)                                                             \
    ((part) ? _mm256_maskload_ps((p) + ((h) >> 1) * (stride) + ((h) & 1) * 8, (m))                 \
            : _mm256_loadu_ps((p) + ((h) >> 1) * (stride) + ((h) & 1) * 8))

S_INLINE S_T256 void s_dk256(const int CL, const int NB, const int R, const bool CHK,
                             const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                             int64_t b0, int64_t b1, int64_t j0, const float *w,
                             const float *bias, int last, float *y)
{
    const __m256i ml = gx_mask8(last), mh = gx_mask8(last - 8);
    __m256 acc[4][6]; /* [2 * NB][R] */
#pragma GCC unroll 4
    for (int h = 0; h < 2 * NB; h++) {
        const bool part = h >= 2 * NB - 2 && last < S_B;
        const __m256 b =
            bias ? S_LD256(bias, h, S_B, part, h & 1 ? mh : ml) : _mm256_setzero_ps();
#pragma GCC unroll 6
        for (int r = 0; r < R; r++)
            acc[h][r] = b;
    }
    const int64_t wmb = d->wmb;
    for (int64_t a = a0; a < a1; a++) {
        for (int64_t b = b0; b < b1; b++) {
            const float *wg = w + (a * d->kw + b) * d->C * S_B;
            const float *xr[12];
            int64_t msk[12];
            S_TAP_PTRS(CHK, R, d, xn, off, a, b, j0, xr, msk);
            for (int64_t g = 0, go = 0; g < d->G; g++, go += d->xg) {
#pragma GCC unroll 4
                for (int c = 0; c < CL; c++) {
                    __m256 wv[4];
#pragma GCC unroll 4
                    for (int h = 0; h < 2 * NB; h++)
                        wv[h] = S_LD256(wg + c * S_B, h, wmb, false, ml);
#pragma GCC unroll 6
                    for (int r = 0; r < R; r++) {
                        const __m256 xb = _mm256_set1_ps(S_XAT(CHK, xr, msk, r, go, c));
#pragma GCC unroll 4
                        for (int h = 0; h < 2 * NB; h++)
                            acc[h][r] = _mm256_fmadd_ps(xb, wv[h], acc[h][r]);
                    }
                }
                wg += CL * S_B;
            }
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < 2 * NB; h++) {
        const bool part = h >= 2 * NB - 2 && last < S_B;
        float *yh = y + (h >> 1) * d->ymb + (h & 1) * 8;
#pragma GCC unroll 6
        for (int r = 0; r < R; r++)
            S_PUT256(d, yh + r * d->ycol, acc[h][r], part, h & 1 ? mh : ml);
    }
}

#define S_DK256(CHK, CL, NB, R)                                                                    \
    static S_T256 void s_dk256_##CHK##_##CL##_##NB##_##R(                                          \
        const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t b0,           \
        int64_t b1, int64_t j0, const float *w, const float *bias, int last, float *y)             \
    {                                                                                              \
        s_dk256(CL, NB, R, CHK, d, xn, off, a0, a1, b0, b1, j0, w, bias, last, y);                 \
    }
#define S_R3(M, K, CL, NB) M(K, CL, NB, 1) M(K, CL, NB, 2) M(K, CL, NB, 3)
#define S_DK256_CL(K, CL) S_R6(S_DK256, K, CL, 1) S_R3(S_DK256, K, CL, 2)
S_DK256_CL(0, 1)
S_DK256_CL(0, 16)
S_DK256_CL(1, 1)
S_DK256_CL(1, 16)
#define S_FN256(K, CL, NB, R) s_dk256_##K##_##CL##_##NB##_##R,
#define S_TAB256(K, CL) {{S_R6(S_FN256, K, CL, 1)}, {S_R3(S_FN256, K, CL, 2)}}
/* [checked][CL 1 or 16][NB - 1][R - 1] */
static const s_dk_fn s_dk256_tab[2][2][2][6] = {{S_TAB256(0, 1), S_TAB256(0, 16)},
                                                 {S_TAB256(1, 1), S_TAB256(1, 16)}};

/* s_dkp512 on AVX2: a run of R <= 6 positions of one block that may
 * span rows, every tap summed in s_dk256's order, taps in the padding
 * (rows included) reading zeros. */
S_INLINE S_T256 void s_dkp256(const int CL, const int R, const s_dk *d, const float *xn,
                              const int64_t *pi, const int64_t *pj, const float *w,
                              const float *bias, int last, float *y)
{
    const __m256i ml = gx_mask8(last), mh = gx_mask8(last - 8);
    const bool part = last < S_B;
    __m256 acc[2][6];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256 b = bias ? S_LD256(bias, h, S_B, part, h ? mh : ml) : _mm256_setzero_ps();
#pragma GCC unroll 6
        for (int r = 0; r < R; r++)
            acc[h][r] = b;
    }
    const float *wg = w;
    for (int64_t a = 0; a < d->kh; a++) {
        for (int64_t b = 0; b < d->kw; b++) {
            const float *xr[12];
            int64_t msk[12];
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const int64_t i = pi[r] + a * d->dhi, j = pj[r] + b * d->dwj;
                const bool in = (uint64_t)i < (uint64_t)d->ih && (uint64_t)j < (uint64_t)d->iw;
                xr[r] = in ? xn + (i * d->xrow + j * d->xcol) : s_zeros;
                msk[r] = in ? ~(int64_t)0 : 0;
            }
            for (int64_t g = 0, go = 0; g < d->G; g++, go += d->xg) {
#pragma GCC unroll 4
                for (int c = 0; c < CL; c++) {
                    const __m256 w_lo = _mm256_loadu_ps(wg + c * S_B);
                    const __m256 w_hi = _mm256_loadu_ps(wg + c * S_B + 8);
#pragma GCC unroll 6
                    for (int r = 0; r < R; r++) {
                        const __m256 xb = _mm256_set1_ps(S_XAT(1, xr, msk, r, go, c));
                        acc[0][r] = _mm256_fmadd_ps(xb, w_lo, acc[0][r]);
                        acc[1][r] = _mm256_fmadd_ps(xb, w_hi, acc[1][r]);
                    }
                }
                wg += CL * S_B;
            }
        }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
#pragma GCC unroll 6
        for (int r = 0; r < R; r++)
            S_PUT256(d, y + r * d->ycol + h * 8, acc[h][r], part, h ? mh : ml);
    }
}

#define S_DKP256(K, CL, NB, R)                                                                     \
    static S_T256 void s_dkp256_##CL##_##R(const s_dk *d, const float *xn, const int64_t *pi,     \
                                           const int64_t *pj, const float *w, const float *bias,  \
                                           int last, float *y)                                     \
    {                                                                                              \
        s_dkp256(CL, R, d, xn, pi, pj, w, bias, last, y);                                          \
    }
S_R6(S_DKP256, 0, 1, 1)
S_R6(S_DKP256, 0, 16, 1)
#define S_DKP256_FN(K, CL, NB, R) s_dkp256_##CL##_##R,
/* [CL 1 or 16][R - 1] */
static const s_dkp_fn s_dkp256_tab[2][6] = {{S_R6(S_DKP256_FN, 0, 1, 1)},
                                            {S_R6(S_DKP256_FN, 0, 16, 1)}};
#endif

/* Most columns of a run of NB blocks (index NB - 1), AVX2. */
static const int s_rmax256[2] = {6, 3};
#ifndef S_NB256
#define S_NB256 1 /* blocks a run takes at once */
#endif

/* Most columns of a run of NB blocks (index NB - 1): AVX-512, baseline. */
static const int s_rmax512[4] = {12, 12, 8, 6};
static const int s_rmax_k3[4] = {12, 8, 6, 4}; /* s_dk3_512 */
#define S_RMAX_BASE 8

/* Without AVX-512: one block, R in {1, 2, 4, 8}, no FMA (the clones'
 * widest vectors). */

S_INLINE void s_dkv(const int CL, const int R, const bool CHK, const s_dk *d, const float *xn,
                    int64_t off, int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t j0,
                    const float *w, const float *bias, int last, float *y)
{
    s_v16 acc[8], bv = {0};
    if (bias)
        memcpy(&bv, bias, (size_t)last * sizeof(float));
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = bv;
    for (int64_t a = a0; a < a1; a++) {
        for (int64_t b = b0; b < b1; b++) {
            const float *wg = w + (a * d->kw + b) * d->C * S_B;
            const float *xr[12];
            int64_t msk[12];
            S_TAP_PTRS(CHK, R, d, xn, off, a, b, j0, xr, msk);
            for (int64_t g = 0, go = 0; g < d->G; g++, go += d->xg) {
                for (int c = 0; c < CL; c++) {
                    s_v16 wv;
                    memcpy(&wv, wg + c * S_B, sizeof wv);
#pragma GCC unroll 8
                    for (int r = 0; r < R; r++)
                        acc[r] += S_XAT(CHK, xr, msk, r, go, c) * wv;
                }
                wg += CL * S_B;
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const s_v16 v = S_ACTV(d, acc[r]);
        memcpy(y + r * d->ycol, &v, (size_t)last * sizeof(float));
    }
}

#define S_DKV(CHK, CL, R)                                                                          \
    GX_CPU_CLONES static void s_dkv_##CHK##_##CL##_##R(                                            \
        const s_dk *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t b0,           \
        int64_t b1, int64_t j0, const float *w, const float *bias, int last, float *y)             \
    {                                                                                              \
        s_dkv(CL, R, CHK, d, xn, off, a0, a1, b0, b1, j0, w, bias, last, y);                       \
    }
#define S_DKV_R(CHK, CL) S_DKV(CHK, CL, 1) S_DKV(CHK, CL, 2) S_DKV(CHK, CL, 4) S_DKV(CHK, CL, 8)
S_DKV_R(0, 1)
S_DKV_R(0, 16)
S_DKV_R(1, 1)
S_DKV_R(1, 16)
#define S_DKV_ROW(CHK, CL)                                                                         \
    {s_dkv_##CHK##_##CL##_1, s_dkv_##CHK##_##CL##_2, s_dkv_##CHK##_##CL##_4, s_dkv_##CHK##_##CL##_8}
/* [checked][CL 1 or 16][log2 R] */
static const s_dk_fn s_dkv_tab[2][2][4] = {{S_DKV_ROW(0, 1), S_DKV_ROW(0, 16)},
                                           {S_DKV_ROW(1, 1), S_DKV_ROW(1, 16)}};

/* A node's direct convolution: geometry, strides, data. */
typedef struct s_cv {
    gx_win w;          /* 1x1 stride-1 unpadded windows: a plane as one row */
    s_dk d;
    int cl;            /* 0: CL 1 (x in NCHW), 1: CL 16 */
    bool k3;           /* inside columns by s_dk3_512 (AVX-512) */
    bool pos;          /* runs of positions across rows (s_dkp512, s_dkp256): small planes */
    bool wide;         /* AVX-512 */
    bool avx2;         /* AVX2 + FMA (s_dk256) */
    int64_t mb, last;  /* output blocks; lanes of the last one */
    int64_t gblk, gx;  /* output blocks per channel group (all at group 1), x's floats
                        * between the groups' first input channels */
    int64_t ci_lo, ci_hi; /* output columns whose windows lie inside x along W */
    int64_t x_img, xrow, xcol, y_img, yrow;
    const float *x, *wp, *bias;
    float *y;
} s_cv;

/* The blocks a run takes at once out of rem: up to 4, 3 + 3 rather than
 * 4 + 2; 1 without AVX-512. */
static int s_nb(const s_cv *cv, int64_t rem)
{
    if (cv->avx2)
        return rem >= 2 && S_NB256 == 2 ? 2 : 1;
    if (!cv->wide)
        return 1;
    return rem <= 4 ? (int)rem : rem <= 6 ? 3 : 4;
}

/* Weights a run of blocks may read, in bytes, in position runs: they
 * stay in L2 (1 MiB and more on AVX-512 cores) for all the runs of a
 * stretch of positions. */
#define S_POS_WBYTES (640 * 1024)
/* Planes whose rows are narrower than this run in position runs. */
#define S_POS_MAX_OW 12

/* The blocks a position run takes at once out of rem: as s_nb, fewer
 * while their weights are more than S_POS_WBYTES. */
static int s_nb_pos(const s_cv *cv, int64_t rem)
{
    int nb = s_nb(cv, rem);
    while (nb > 2 && nb * cv->d.wmb * (int64_t)sizeof(float) > S_POS_WBYTES)
        nb = 2; /* 2 blocks run 12 positions (24 sums), fewer would not fill the registers */
    return nb;
}

static int64_t s_run_len(bool wide, int64_t rmax, int64_t left);

/* Positions [q0, q1) of image n's plane (row-major over (oh, ow)), blocks
 * [m0, m1), in runs that span rows (cv->pos); for each run of blocks all
 * its runs of positions, so that the blocks' weights stay in L2. */
static void s_dk_pos(const s_cv *cv, int64_t n, int64_t q0, int64_t q1, int64_t m0, int64_t m1)
{
#ifdef S_X86
    const gx_win *w = &cv->w;
    const s_dk *d = &cv->d;
    const int64_t OW = w->out[1];
    const float *xi = cv->x + n * cv->x_img;
    for (int64_t mb = m0; mb < m1;) {
        const int64_t g = mb / cv->gblk, gend = (g + 1) * cv->gblk < m1 ? (g + 1) * cv->gblk : m1;
        const float *xn = xi + g * cv->gx;
        const int nb = s_nb_pos(cv, gend - mb);
        const float *wm = cv->wp + mb * d->wmb, *bias = cv->bias ? cv->bias + mb * S_B : NULL;
        const int last = mb + nb == cv->mb ? (int)cv->last : S_B;
        float *ym = cv->y + n * cv->y_img + mb * d->ymb;
        for (int64_t q = q0; q < q1;) {
            const int64_t len =
                s_run_len(true, cv->avx2 ? s_rmax256[nb - 1] : s_rmax512[nb - 1], q1 - q);
            int64_t pi[12], pj[12];
            for (int64_t r = 0; r < len; r++) {
                pi[r] = (q + r) / OW * w->stride[0] - w->pad_lo[0];
                pj[r] = (q + r) % OW * w->stride[1] - w->pad_lo[1];
            }
            if (cv->avx2)
                s_dkp256_tab[cv->cl][len - 1](d, xn, pi, pj, wm, bias, last, ym + q * d->ycol);
            else
                s_dkp512_tab[cv->cl][nb - 1][len - 1](d, xn, pi, pj, wm, bias, last,
                                                      ym + q * d->ycol);
            q += len;
        }
        mb += nb;
    }
#else
    (void)cv, (void)n, (void)q0, (void)q1, (void)m0, (void)m1;
#endif
}

/* One run of r columns of nb blocks (r within the ISA's sizes). */
static void s_dk_run(const s_cv *cv, bool chk, int nb, int64_t r, const float *xn, int64_t off,
                     int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t j0, const float *w,
                     const float *bias, int last, float *y)
{
#ifdef S_X86
    if (cv->wide) {
        s_dk512_tab[chk][cv->cl][nb - 1][r - 1](&cv->d, xn, off, a0, a1, b0, b1, j0, w, bias,
                                                 last, y);
        return;
    }
    if (cv->avx2) {
        s_dk256_tab[chk][cv->cl][nb - 1][r - 1](&cv->d, xn, off, a0, a1, b0, b1, j0, w, bias,
                                                 last, y);
        return;
    }
#endif
    const int lg = r == 8 ? 3 : r == 4 ? 2 : r == 2 ? 1 : 0;
    s_dkv_tab[chk][cv->cl][lg](&cv->d, xn, off, a0, a1, b0, b1, j0, w, bias, last, y);
}

/* The next run's length out of `left` columns: AVX-512 runs as even as
 * its longest (rmax) allow; else 8, 4, 2, 1. */
static int64_t s_run_len(bool wide, int64_t rmax, int64_t left)
{
    if (wide) {
        const int64_t runs = (left + rmax - 1) / rmax;
        return (left + runs - 1) / runs;
    }
    return left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
}

/* Columns [o0, o1) of output row oh of image n, blocks [m0, m1). A
 * column whose window reaches into the padding along W (an edge column)
 * is in a checked run; with one channel per broadcast (CL 1), where a
 * checked run costs more than the latency of a column on its own, it runs
 * alone over its own taps instead. Either way a column is always computed
 * the same way, whatever run it falls in. */
static void s_dk_cols(const s_cv *cv, int64_t n, int64_t oh, int64_t o0, int64_t o1, int64_t m0,
                      int64_t m1)
{
    const gx_win *w = &cv->w;
    const s_dk *d = &cv->d;
    const int64_t sw = w->stride[1], pw = w->pad_lo[1];
    if (cv->pos) {
        s_dk_pos(cv, n, oh * w->out[1] + o0, oh * w->out[1] + o1, m0, m1);
        return;
    }
    int64_t a0, a1;
    gx_win_taps(w, 0, oh, &a0, &a1);
    const float *xi = cv->x + n * cv->x_img;
    const int64_t row = (oh * w->stride[0] - w->pad_lo[0]) * cv->xrow;
    for (int64_t mb = m0; mb < m1;) {
        /* the blocks of a run lie in one group: x from its first channel */
        const int64_t g = mb / cv->gblk, gend = (g + 1) * cv->gblk < m1 ? (g + 1) * cv->gblk : m1;
        const float *xn = xi + g * cv->gx;
        const int nb = s_nb(cv, gend - mb);
        const float *wm = cv->wp + mb * d->wmb, *bias = cv->bias ? cv->bias + mb * S_B : NULL;
        const int last = mb + nb == cv->mb ? (int)cv->last : S_B;
        float *yr = cv->y + n * cv->y_img + oh * cv->yrow + mb * d->ymb;
        for (int64_t o = o0; o < o1;) {
            const int64_t j0 = o * sw - pw, off = row + j0 * cv->xcol;
            const int64_t lo = cv->ci_lo, hi = cv->ci_hi > lo ? cv->ci_hi : lo;
            if (cv->cl == 0 && (o < lo || o >= hi)) { /* an edge column alone: its own taps */
                int64_t b0, b1;
                gx_win_taps(w, 1, o, &b0, &b1);
                s_dk_run(cv, false, nb, 1, xn, off, a0, a1, b0, b1, j0, wm, bias, last,
                         yr + o * d->ycol);
                o++;
                continue;
            }
            const int64_t rmax = cv->k3     ? s_rmax_k3[nb - 1]
                                 : cv->avx2 ? s_rmax256[nb - 1]
                                            : s_rmax512[nb - 1];
            const int64_t end = cv->cl == 0 && o1 > hi ? hi : o1;
            const int64_t len = s_run_len(cv->wide || cv->avx2, rmax, end - o);
#ifdef S_X86
            if (cv->k3) {
                s_dk3_tab[sw - 1][nb - 1][len - 1](d, xn, off, a0, a1, wm, bias, last,
                                                   yr + o * d->ycol);
                o += len;
                continue;
            }
#endif
            s_dk_run(cv, o < lo || o + len > hi, nb, len, xn, off, a0, a1, 0, w->k[1], j0, wm,
                     bias, last, yr + o * d->ycol);
            o += len;
        }
        mb += nb;
    }
}

/* a / b rounded up, for any sign of a (b > 0). */
static int64_t s_cdiv(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* The columns [*lo, *hi) of ow whose windows (k taps dil apart, from o *
 * s - pad) lie inside [0, in). */
static void s_inside(int64_t in, int64_t ow, int64_t k, int64_t s, int64_t dil, int64_t pad,
                     int64_t *lo, int64_t *hi)
{
    const int64_t last = in - 1 + pad - (k - 1) * dil; /* o * s may reach this */
    int64_t a = s_cdiv(pad, s), b = last < 0 ? 0 : last / s + 1;
    a = a < ow ? a : ow;
    b = b < ow ? b : ow;
    *lo = a;
    *hi = b < a ? a : b;
}

/* The direct convolution of kernel call k: x in k->in[0]'s layout (NCHW,
 * NHWC or NCHW16c), y in NHWC or NCHW16c. A 1x1 window with stride 1 and
 * no padding sees each plane as one row (flat). */
static void s_cv_init(s_cv *cv, const gx_kargs *k, const s_act *act, bool *flat)
{
    int64_t c, m;
    gx_win *w = &cv->w;
    s_geometry(k, w, &c, &m);
    *flat = s_pointwise(w);
    if (*flat) {
        w->in[1] *= w->in[0];
        w->out[1] *= w->out[0];
        w->in[0] = w->out[0] = 1;
    }
    const int64_t IH = w->in[0], IW = w->in[1], OH = w->out[0], OW = w->out[1];
    const gx_layout lx = k->in[0].layout;
    cv->wide = s_wide();
    cv->avx2 = s_avx2();
    cv->mb = (m + S_B - 1) / S_B;
    cv->last = m - (cv->mb - 1) * S_B;
    cv->x = k->in[0].data;
    cv->wp = k->in[1].data;
    cv->bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL;
    cv->y = k->out[0].data;
    cv->cl = lx != GX_LAYOUT_PLAIN && c % S_B == 0;
    cv->x_img = c * IH * IW;
    /* groups (of input and output channels multiples of 16): a block reads
     * its group's cg channels, from the group's first */
    const int64_t groups = k->attr[GX_CONV_GROUP].i, cg = c / groups;
    cv->gblk = groups > 1 ? m / groups / S_B : cv->mb;
    s_dk *d = &cv->d;
    d->C = cg;
    d->G = cv->cl ? cg / S_B : cg;
    if (lx == GX_LAYOUT_NHWC) {
        d->xg = cv->cl ? S_B : 1, cv->xrow = IW * c, cv->xcol = c;
    } else if (lx == GX_LAYOUT_NCHW16C) {
        d->xg = IH * IW * S_B, cv->xrow = IW * S_B, cv->xcol = S_B;
    } else {
        d->xg = IH * IW, cv->xrow = IW, cv->xcol = 1;
    }
    d->dhx = w->dil[0] * cv->xrow;
    d->dwx = w->dil[1] * cv->xcol;
    d->xstep = w->stride[1] * cv->xcol;
    d->kw = w->k[1];
    d->iw = IW, d->sw = w->stride[1], d->dwj = w->dil[1];
    d->act = act->kind, d->lo = act->lo, d->hi = act->hi;
    d->wmb = w->k_size * cg * S_B;
    cv->gx = groups > 1 ? (lx == GX_LAYOUT_NHWC ? cg : cg / S_B * d->xg) : 0;
    cv->y_img = m * OH * OW;
    if (k->out[0].layout == GX_LAYOUT_NHWC) {
        d->ymb = S_B, d->ycol = m, cv->yrow = OW * m;
    } else {
        d->ymb = OH * OW * S_B, d->ycol = S_B, cv->yrow = OW * S_B;
    }
    s_inside(IW, OW, w->k[1], w->stride[1], w->dil[1], w->pad_lo[1], &cv->ci_lo, &cv->ci_hi);
    cv->k3 = cv->wide && lx == GX_LAYOUT_PLAIN && w->k[1] == 3 && w->dil[1] == 1 &&
             (w->stride[1] == 1 || w->stride[1] == 2);
    d->kh = w->k[0], d->ih = IH, d->dhi = w->dil[0];
    d->xrow = cv->xrow, d->xcol = cv->xcol;
    /* rows too short for full runs: a run of 12 positions reads the
     * weights once where a row's runs would read them twice or more */
    cv->pos = (cv->wide || cv->avx2) && !*flat && !cv->k3 && OW < S_POS_MAX_OW;
}

/* NCHW16c, output rows [r0, r1) over (n, block, oh): for each image and
 * group of blocks run together, row by row, the group's blocks that the
 * share has in that row (all of them but in its first and last planes);
 * flat, the rows of a plane with the same blocks as one, S_EPI_COLS
 * columns at a time. The epilogue after each. */
static void s_dk_rows16(const s_cv *cv, bool flat, int64_t OH, int64_t OW, int64_t r0,
                        int64_t r1, const s_epi *epi)
{
    const int64_t MB = cv->mb, plane = MB * OH;
    for (int64_t n = r0 / plane; n * plane < r1; n++) {
        for (int64_t g0 = 0; g0 < MB;) {
            const int64_t g1 = g0 + s_nb(cv, MB - g0);
            for (int64_t oh = 0; oh < OH;) {
                /* blocks mb with (n * MB + mb) * OH + oh in [r0, r1) */
                int64_t a = s_cdiv(r0 - oh, OH) - n * MB, b = s_cdiv(r1 - oh, OH) - n * MB;
                a = a > g0 ? a : g0;
                b = b < g1 ? b : g1;
                int64_t end = oh + 1;
                while (flat && end < OH) {
                    const int64_t a2 = s_cdiv(r0 - end, OH) - n * MB;
                    const int64_t b2 = s_cdiv(r1 - end, OH) - n * MB;
                    if ((a2 > g0 ? a2 : g0) != a || (b2 < g1 ? b2 : g1) != b)
                        break;
                    end++;
                }
                /* columns [c0, c1) of row oh, or of the plane when flat */
                const int64_t c0 = flat ? oh * OW : 0, c1 = flat ? end * OW : OW;
                for (int64_t c = c0; c < c1 && a < b;) {
                    const int64_t ce = flat && c1 - c > S_EPI_COLS ? c + S_EPI_COLS : c1;
                    s_dk_cols(cv, n, flat ? 0 : oh, c, ce, a, b);
                    for (int64_t mb = a; mb < b && epi->fn; mb++) {
                        const int64_t at = ((n * MB + mb) * OH + (flat ? 0 : oh)) * OW;
                        epi->fn(epi->ctx, (at + c) * S_B, (at + ce) * S_B);
                    }
                    c = ce;
                }
                oh = end;
            }
            g0 = g1;
        }
    }
}

/* NHWC, output positions [p0, p1) over (n, oh, ow), every block; the
 * epilogue after each row's part. */
static void s_dk_positions(const s_cv *cv, int64_t p0, int64_t p1, int64_t m, const s_epi *epi)
{
    const int64_t OH = cv->w.out[0], OW = cv->w.out[1];
    for (int64_t p = p0; p < p1 && cv->pos;) { /* S_EPI_COLS positions of a plane at a time */
        const int64_t n = p / (OH * OW), q = p - n * OH * OW;
        int64_t end = (n + 1) * OH * OW < p1 ? (n + 1) * OH * OW : p1;
        end = end - p > S_EPI_COLS ? p + S_EPI_COLS : end;
        s_dk_pos(cv, n, q, q + (end - p), 0, cv->mb);
        if (epi->fn)
            epi->fn(epi->ctx, p * m, end * m);
        p = end;
    }
    for (int64_t p = p0; p < p1 && !cv->pos;) { /* a row, or S_EPI_COLS columns of one */
        const int64_t line = p / OW, o = p % OW;
        int64_t end = (line + 1) * OW < p1 ? (line + 1) * OW : p1;
        end = end - p > S_EPI_COLS ? p + S_EPI_COLS : end;
        s_dk_cols(cv, line / OH, line % OH, o, o + (end - p), 0, cv->mb);
        if (epi->fn)
            epi->fn(epi->ctx, p * m, end * m);
        p = end;
    }
}

/* ---- depthwise ---- */

/* x element (channel b * 16 + c, row i, column j) of an image at b * xblk
 * + i * xrow + j * xcol + c; output block b, column o of a row at b * ymb
 * + o * ycol from the row's start. */
typedef struct s_dw {
    gx_win w;
    bool wide;
    bool avx2;            /* AVX2 + FMA (s_dw256, s_dwk256, s_dwg256) */
    int cg;               /* channels per group: 1 (depthwise), 2, 4 or 8 */
    int64_t wblk;         /* floats of a block's packed weights */
    int64_t nblk, last;   /* channel blocks, lanes of the last */
    int64_t ci_lo, ci_hi; /* output columns whose windows lie inside x along W */
    int64_t x_img, xblk, xrow, xcol, y_img, ymb, yrow, ycol;
    int64_t dhx, dwx, xstep, kw, iw, sw, dwj, ksz;
    bool k3; /* 3 taps wide, undilated, stride 1 or 2 along W (s_dw3_512) */
    int k256; /* AVX2, depthwise, 3 or 5 taps wide, undilated, stride 1 or 2 along W: that
               * width (s_dwk256); else 0 */
    int act; /* as in s_dk */
    float lo, hi;
    const float *x, *wp, *bias;
    float *y;
} s_dw;

/* One run of R columns of one block: like s_dk_fn, weights [kh][kw][16]. */
typedef void (*s_dw_fn)(const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                        int64_t j0, const float *w, const float *bias, int last, float *y);

/* x's 16 lanes of column q of a run's window row at o_ (its x column
 * j_ + q), or zeros in the padding. */
#define S_DW_X(CHK, d, xn, o_, j_, q)                                                              \
    (!(CHK) || (uint64_t)((j_) + (q)) < (uint64_t)(d)->iw ? (xn) + ((o_) + (q) * (d)->xcol)     \
                                                           : s_zeros)
/* x's 16 lanes that column r of a run reads at a tap (o_: the tap's offset
 * for the run's column 0, j_: its x column), or zeros in the padding. */
#define S_DW_XR(CHK, d, xn, o_, j_, r)                                                             \
    (!(CHK) || (uint64_t)((j_) + (r) * (d)->sw) < (uint64_t)(d)->iw                                \
         ? (xn) + ((o_) + (r) * (d)->xstep)                                                        \
         : s_zeros)

#ifdef S_X86
/* AVX-512, blocks [0, nb) of a run (xn, w, bias, y at the first; FULL:
 * 16 lanes each, else one block of `last` lanes), groups of CG channels
 * in and out (1: depthwise; 2, 4, 8). Any window: per tap and column one
 * load of x; with CG > 1 its lanes moved to the output lanes that read
 * them, once per input channel of the group (lane l reads lane
 * l - l % CG + ic; weights [kh][kw][CG][16]); products in the order
 * (kh, kw, ic). */
S_INLINE S_T512 void s_dw512(const int R, const int CG, const bool CHK, const bool FULL,
                             const s_dw *d, const float *x0, int64_t off, int64_t a0, int64_t a1,
                             int64_t j0, const float *w0, const float *bias0, int last,
                             int64_t nb, float *y0)
{
    const __mmask16 m = FULL ? (__mmask16)0xffff : (__mmask16)((1u << last) - 1);
    const __m512i base = _mm512_and_si512(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32(~(CG - 1)));
    __m512i idx[8];
#pragma GCC unroll 8
    for (int ic = 0; ic < CG; ic++)
        idx[ic] = _mm512_add_epi32(base, _mm512_set1_epi32(ic));
    for (int64_t blk = 0; blk < nb; blk++) {
        const float *xn = x0 + blk * d->xblk, *w = w0 + blk * d->wblk;
        const float *bias = bias0 ? bias0 + blk * S_B : NULL;
        float *y = y0 + blk * d->ymb;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias) : _mm512_setzero_ps();
        __m512 acc[8];
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            acc[r] = b;
        for (int64_t a = a0; a < a1; a++) {
            for (int64_t t = 0; t < d->kw; t++) {
                const float *wt = w + (a * d->kw + t) * CG * S_B;
                __m512 wv[8];
#pragma GCC unroll 8
                for (int ic = 0; ic < CG; ic++)
                    wv[ic] = _mm512_loadu_ps(wt + ic * S_B);
                const int64_t o = off + a * d->dhx + t * d->dwx, j = j0 + t * d->dwj;
#pragma GCC unroll 8
                for (int r = 0; r < R; r++) {
                    const float *p = S_DW_XR(CHK, d, xn, o, j, r);
                    const __m512 xv = FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
#pragma GCC unroll 8
                    for (int ic = 0; ic < CG; ic++)
                        acc[r] = _mm512_fmadd_ps(CG == 1 ? xv : _mm512_permutexvar_ps(idx[ic], xv),
                                                 wv[ic], acc[r]);
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(y + r * d->ycol, m, S_ACT512(d, acc[r]));
    }
}

/* The same for a window 3 taps wide, undilated, stride S (1 or 2) along
 * W: each window row loads x's (R - 1) * S + 3 columns once and adds each
 * into the (up to 3) columns of the run whose taps read it, in tap order
 * per column, as s_dw512 does. */
S_INLINE S_T512 void s_dw3_512(const int R, const int S, const bool CHK, const bool FULL,
                               const s_dw *d, const float *x0, int64_t off, int64_t a0,
                               int64_t a1, int64_t j0, const float *wt, const float *bias0,
                               int last, int64_t nb, float *y0)
{
    const __mmask16 m = FULL ? (__mmask16)0xffff : (__mmask16)((1u << last) - 1);
    for (int64_t blk = 0; blk < nb; blk++) {
        const float *xn = x0 + blk * d->xblk, *w = wt + blk * d->wblk;
        const float *bias = bias0 ? bias0 + blk * S_B : NULL;
        float *y = y0 + blk * d->ymb;
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias) : _mm512_setzero_ps();
        __m512 acc[8];
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            acc[r] = b;
        for (int64_t a = a0; a < a1; a++) {
            const __m512 w0 = _mm512_loadu_ps(w + (a * 3 + 0) * S_B);
            const __m512 w1 = _mm512_loadu_ps(w + (a * 3 + 1) * S_B);
            const __m512 w2 = _mm512_loadu_ps(w + (a * 3 + 2) * S_B);
            const int64_t o = off + a * d->dhx;
#pragma GCC unroll 20
            for (int q = 0; q < (R - 1) * S + 3; q++) {
                const float *p = S_DW_X(CHK, d, xn, o, j0, q);
                const __m512 xv = FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
                /* column r reads q at tap q - r * S: taps 2, 1, 0 as q grows */
#pragma GCC unroll 3
                for (int t = 2; t >= 0; t--) {
                    const int r = (q - t) / S;
                    if (q - t >= 0 && (q - t) % S == 0 && r < R)
                        acc[r] = _mm512_fmadd_ps(xv, t == 0 ? w0 : t == 1 ? w1 : w2, acc[r]);
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            _mm512_mask_storeu_ps(y + r * d->ycol, m, S_ACT512(d, acc[r]));
    }
}

typedef void (*s_dwb_fn)(const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1,
                         int64_t j0, const float *w, const float *bias, int last, int64_t nb,
                         float *y);

/* Kinds of run: 0 any window (depthwise), 1 and 2 3 wide with stride 1
 * and 2 (depthwise, s_dw3_512), 3, 4 and 5 groups of 2, 4 and 8 channels. */
#define S_DW512(KIND, CHK, FULL, R)                                                                \
    static S_T512 void s_dw512_##KIND##_##CHK##_##FULL##_##R(                                      \
        const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t j0,           \
        const float *w, const float *bias, int last, int64_t nb, float *y)                         \
    {                                                                                              \
        if (KIND == 1 || KIND == 2)                                                                \
            s_dw3_512(R, KIND, CHK, FULL, d, xn, off, a0, a1, j0, w, bias, last, nb, y);           \
        else                                                                                       \
            s_dw512(R, KIND == 3 ? 2 : KIND == 4 ? 4 : KIND == 5 ? 8 : 1, CHK, FULL, d, xn, off,   \
                    a0, a1, j0, w, bias, last, nb, y);                                             \
    }
#define S_DW512_R(KIND, CHK, FULL)                                                                 \
    S_DW512(KIND, CHK, FULL, 1) S_DW512(KIND, CHK, FULL, 2) S_DW512(KIND, CHK, FULL, 3)            \
    S_DW512(KIND, CHK, FULL, 4) S_DW512(KIND, CHK, FULL, 5) S_DW512(KIND, CHK, FULL, 6)            \
    S_DW512(KIND, CHK, FULL, 7) S_DW512(KIND, CHK, FULL, 8)
#define S_DW512_K(KIND)                                                                            \
    S_DW512_R(KIND, 0, 0) S_DW512_R(KIND, 0, 1) S_DW512_R(KIND, 1, 0) S_DW512_R(KIND, 1, 1)
S_DW512_K(0)
S_DW512_K(1)
S_DW512_K(2)
S_DW512_K(3)
S_DW512_K(4)
S_DW512_K(5)
#define S_DW512_ROW(KIND, CHK, FULL)                                                               \
    {s_dw512_##KIND##_##CHK##_##FULL##_1, s_dw512_##KIND##_##CHK##_##FULL##_2,                     \
     s_dw512_##KIND##_##CHK##_##FULL##_3, s_dw512_##KIND##_##CHK##_##FULL##_4,                     \
     s_dw512_##KIND##_##CHK##_##FULL##_5, s_dw512_##KIND##_##CHK##_##FULL##_6,                     \
     s_dw512_##KIND##_##CHK##_##FULL##_7, s_dw512_##KIND##_##CHK##_##FULL##_8}
#define S_DW512_TAB(KIND)                                                                          \
    {{S_DW512_ROW(KIND, 0, 0), S_DW512_ROW(KIND, 0, 1)},                                           \
     {S_DW512_ROW(KIND, 1, 0), S_DW512_ROW(KIND, 1, 1)}}
/* [kind][checked][full][R - 1] */
static const s_dwb_fn s_dw512_tab[6][2][2][8] = {S_DW512_TAB(0), S_DW512_TAB(1), S_DW512_TAB(2),
                                                  S_DW512_TAB(3), S_DW512_TAB(4), S_DW512_TAB(5)};
#endif
#define S_DW_RMAX 8

#ifdef S_X86
/* AVX2 + FMA, depthwise (groups of one channel), any window: blocks
 * [0, nb) of a run as s_dw512, each 16 lanes two halves, R <= 6 columns
 * (12 sums), per tap and column one load of x's two halves; products in
 * tap order. */
S_INLINE S_T256 void s_dw256(const int R, const bool CHK, const bool FULL, const s_dw *d,
                             const float *x0, int64_t off, int64_t a0, int64_t a1, int64_t j0,
                             const float *w0, const float *bias0, int last, int64_t nb,
                             float *y0)
{
    const __m256i ml = gx_mask8(FULL ? S_B : last), mh = gx_mask8((FULL ? S_B : last) - 8);
    for (int64_t blk = 0; blk < nb; blk++) {
        const float *xn = x0 + blk * d->xblk, *w = w0 + blk * d->wblk;
        const float *bias = bias0 ? bias0 + blk * S_B : NULL;
        float *y = y0 + blk * d->ymb;
        __m256 acc[2][6];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256 b =
                bias ? S_LD256(bias, h, 0, !FULL, h ? mh : ml) : _mm256_setzero_ps();
#pragma GCC unroll 6
            for (int r = 0; r < R; r++)
                acc[h][r] = b;
        }
        for (int64_t a = a0; a < a1; a++) {
            for (int64_t t = 0; t < d->kw; t++) {
                const float *wt = w + (a * d->kw + t) * S_B;
                const __m256 w_lo = _mm256_loadu_ps(wt), w_hi = _mm256_loadu_ps(wt + 8);
                const int64_t o = off + a * d->dhx + t * d->dwx, j = j0 + t * d->dwj;
#pragma GCC unroll 6
                for (int r = 0; r < R; r++) {
                    const float *p = S_DW_XR(CHK, d, xn, o, j, r);
                    acc[0][r] = _mm256_fmadd_ps(S_LD256(p, 0, 0, !FULL, ml), w_lo, acc[0][r]);
                    acc[1][r] = _mm256_fmadd_ps(S_LD256(p, 1, 0, !FULL, mh), w_hi, acc[1][r]);
                }
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
#pragma GCC unroll 6
            for (int r = 0; r < R; r++)
                S_PUT256(d, y + r * d->ycol + h * 8, acc[h][r], !FULL, h ? mh : ml);
        }
    }
}

#define S_DW256(CHK, FULL, R)                                                                      \
    static S_T256 void s_dw256_##CHK##_##FULL##_##R(                                               \
        const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t j0,           \
        const float *w, const float *bias, int last, int64_t nb, float *y)                         \
    {                                                                                              \
        s_dw256(R, CHK, FULL, d, xn, off, a0, a1, j0, w, bias, last, nb, y);                       \
    }
#define S_DW256_R(CHK, FULL)                                                                       \
    S_DW256(CHK, FULL, 1) S_DW256(CHK, FULL, 2) S_DW256(CHK, FULL, 3) S_DW256(CHK, FULL, 4)        \
    S_DW256(CHK, FULL, 5) S_DW256(CHK, FULL, 6)
S_DW256_R(0, 0)
S_DW256_R(0, 1)
S_DW256_R(1, 0)
S_DW256_R(1, 1)
#define S_DW256_ROW(CHK, FULL)                                                                     \
    {s_dw256_##CHK##_##FULL##_1, s_dw256_##CHK##_##FULL##_2, s_dw256_##CHK##_##FULL##_3,           \
     s_dw256_##CHK##_##FULL##_4, s_dw256_##CHK##_##FULL##_5, s_dw256_##CHK##_##FULL##_6}
/* [checked][full][R - 1] */
static const s_dwb_fn s_dw256_tab[2][2][6] = {{S_DW256_ROW(0, 0), S_DW256_ROW(0, 1)},
                                              {S_DW256_ROW(1, 0), S_DW256_ROW(1, 1)}};

/* Channel ic of each group of CG lanes of xv (the 8 lanes of x at p) in
 * every lane of that group: within 128-bit lanes for CG 2 and 4
 * (moveldup, movehdup, vpermilps: two a cycle on Zen 3, where vpermps is
 * one, beside the FMAs; one on Intel cores, as vpermps); for CG 8 a
 * broadcast load from p (the load ports, not the shuffle's) where all 8
 * lanes are the tensor's (FULL), else vpermps. The same values
 * as _mm256_permutevar8x32_ps with lane index (lane & ~(CG - 1)) + ic. */
S_INLINE S_T256 __m256 s_gsplat256(const int CG, const bool FULL, __m256 xv, const float *p,
                                   int ic)
{
    if (CG == 2)
        return ic ? _mm256_movehdup_ps(xv) : _mm256_moveldup_ps(xv);
    if (CG == 4)
        switch (ic) { /* vpermilps takes its pattern as an immediate */
        case 0:
            return _mm256_permute_ps(xv, 0x00);
        case 1:
            return _mm256_permute_ps(xv, 0x55);
        case 2:
            return _mm256_permute_ps(xv, 0xaa);
        default:
            return _mm256_permute_ps(xv, 0xff);
        }
    if (FULL)
        return _mm256_broadcast_ss(p + ic);
    return _mm256_permutevar8x32_ps(xv, _mm256_set1_epi32(ic));
}

/* Groups of CG = 2, 4 or 8 channels in and out (C == M) on AVX2:
 * s_dw512's way in 8-lane halves (a group never crosses a half, 8 being a
 * multiple of CG), each half on its own: R <= 6 sums, the tap's CG
 * weights, and per input channel of the group x's lanes spread so that
 * each lane reads its group's channel (s_gsplat256). Products in
 * s_dw512's order (window row, tap, input channel): the same bits. */
S_INLINE S_T256 void s_dwg256(const int CG, const int R, const bool CHK, const bool FULL,
                              const s_dw *d, const float *x0, int64_t off, int64_t a0,
                              int64_t a1, int64_t j0, const float *w0, const float *bias0,
                              int last, int64_t nb, float *y0)
{
    const __m256i ml = gx_mask8(FULL ? S_B : last), mh = gx_mask8((FULL ? S_B : last) - 8);
    for (int64_t blk = 0; blk < nb; blk++) {
        const float *xn = x0 + blk * d->xblk, *w = w0 + blk * d->wblk;
        const float *bias = bias0 ? bias0 + blk * S_B : NULL;
        float *y = y0 + blk * d->ymb;
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i mk = h ? mh : ml;
            const __m256 b = bias ? S_LD256(bias, h, 0, !FULL, mk) : _mm256_setzero_ps();
            __m256 acc[6];
#pragma GCC unroll 6
            for (int r = 0; r < R; r++)
                acc[r] = b;
            for (int64_t a = a0; a < a1; a++) {
                for (int64_t t = 0; t < d->kw; t++) {
                    const float *wt = w + (a * d->kw + t) * CG * S_B + h * 8;
                    __m256 wv[8];
#pragma GCC unroll 8
                    for (int ic = 0; ic < CG; ic++)
                        wv[ic] = _mm256_loadu_ps(wt + ic * S_B);
                    const int64_t o = off + a * d->dhx + t * d->dwx, j = j0 + t * d->dwj;
#pragma GCC unroll 6
                    for (int r = 0; r < R; r++) {
                        const float *p = S_DW_XR(CHK, d, xn, o, j, r);
                        const __m256 xv = S_LD256(p, h, 0, !FULL, mk);
#pragma GCC unroll 8
                        for (int ic = 0; ic < CG; ic++)
                            acc[r] = _mm256_fmadd_ps(s_gsplat256(CG, FULL, xv, p + h * 8, ic),
                                                     wv[ic], acc[r]);
                    }
                }
            }
#pragma GCC unroll 6
            for (int r = 0; r < R; r++)
                S_PUT256(d, y + r * d->ycol + h * 8, acc[r], !FULL, mk);
        }
    }
}

#define S_DWG256(CG, CHK, FULL, R)                                                                 \
    static S_T256 void s_dwg256_##CG##_##CHK##_##FULL##_##R(                                       \
        const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t j0,           \
        const float *w, const float *bias, int last, int64_t nb, float *y)                         \
    {                                                                                              \
        s_dwg256(CG, R, CHK, FULL, d, xn, off, a0, a1, j0, w, bias, last, nb, y);                  \
    }
#define S_DWG256_R(CG, CHK, FULL)                                                                  \
    S_DWG256(CG, CHK, FULL, 1) S_DWG256(CG, CHK, FULL, 2) S_DWG256(CG, CHK, FULL, 3)               \
    S_DWG256(CG, CHK, FULL, 4) S_DWG256(CG, CHK, FULL, 5) S_DWG256(CG, CHK, FULL, 6)
#define S_DWG256_CG(CG)                                                                            \
    S_DWG256_R(CG, 0, 0) S_DWG256_R(CG, 0, 1) S_DWG256_R(CG, 1, 0) S_DWG256_R(CG, 1, 1)
S_DWG256_CG(2)
S_DWG256_CG(4)
S_DWG256_CG(8)
#define S_DWG256_ROW(CG, CHK, FULL)                                                                \
    {s_dwg256_##CG##_##CHK##_##FULL##_1, s_dwg256_##CG##_##CHK##_##FULL##_2,                       \
     s_dwg256_##CG##_##CHK##_##FULL##_3, s_dwg256_##CG##_##CHK##_##FULL##_4,                       \
     s_dwg256_##CG##_##CHK##_##FULL##_5, s_dwg256_##CG##_##CHK##_##FULL##_6}
#define S_DWG256_TAB(CG)                                                                           \
    {{S_DWG256_ROW(CG, 0, 0), S_DWG256_ROW(CG, 0, 1)},                                             \
     {S_DWG256_ROW(CG, 1, 0), S_DWG256_ROW(CG, 1, 1)}}
/* [CG 2, 4, 8][checked][full][R - 1] */
static const s_dwb_fn s_dwg256_tab[3][2][2][6] = {S_DWG256_TAB(2), S_DWG256_TAB(4),
                                                  S_DWG256_TAB(8)};

/* Depthwise on AVX2, a window K = 3 or 5 taps wide, undilated, at stride
 * S = 1 or 2 along W (s_dw3_512's way): R <= 8 columns of one block, each
 * half of its 16 lanes on its own (R sums and the K taps' weights in the
 * 16 ymm registers), x's half of each column loaded once per window row
 * for every column that reads it (K at stride 1, 1 or 2 at stride 2).
 * Products in s_dw256's order (window row, then tap), so the same bits;
 * s_dw256 loads x again per tap and column, and takes 1.2-1.5x as long
 * (docs/kernels.md). */
S_INLINE S_T256 void s_dwk256(const int K, const int S, const int R, const bool CHK,
                              const bool FULL, const s_dw *d, const float *x0, int64_t off,
                              int64_t a0, int64_t a1, int64_t j0, const float *wt,
                              const float *bias0, int last, int64_t nb, float *y0)
{
    const __m256i ml = gx_mask8(FULL ? S_B : last), mh = gx_mask8((FULL ? S_B : last) - 8);
    for (int64_t blk = 0; blk < nb; blk++) {
        const float *xn = x0 + blk * d->xblk, *w = wt + blk * d->wblk;
        const float *bias = bias0 ? bias0 + blk * S_B : NULL;
        float *y = y0 + blk * d->ymb;
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i mk = h ? mh : ml;
            const __m256 b = bias ? S_LD256(bias, h, 0, !FULL, mk) : _mm256_setzero_ps();
            __m256 acc[8], wk[5];
#pragma GCC unroll 8
            for (int r = 0; r < R; r++)
                acc[r] = b;
            for (int64_t a = a0; a < a1; a++) {
#pragma GCC unroll 5
                for (int t = 0; t < K; t++)
                    wk[t] = _mm256_loadu_ps(w + (a * K + t) * S_B + h * 8);
                /* x's columns one after the other (a running pointer: an
                 * offset register per column would spill) */
                const float *px = xn + off + a * d->dhx;
#pragma GCC unroll 20
                for (int q = 0; q < (R - 1) * S + K; q++, px += d->xcol) {
                    const float *p =
                        !CHK || (uint64_t)(j0 + q) < (uint64_t)d->iw ? px : s_zeros;
                    const __m256 xv = S_LD256(p, h, 0, !FULL, mk);
                    /* column r reads q at tap q - r * S: each column's taps in order as q
                     * grows */
#pragma GCC unroll 5
                    for (int t = K - 1; t >= 0; t--)
                        if (q - t >= 0 && (q - t) % S == 0 && (q - t) / S < R)
                            acc[(q - t) / S] = _mm256_fmadd_ps(xv, wk[t], acc[(q - t) / S]);
                }
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; r++)
                S_PUT256(d, y + r * d->ycol + h * 8, acc[r], !FULL, mk);
        }
    }
}

#define S_DWK256(K, S, CHK, FULL, R)                                                               \
    static S_T256 void s_dwk256_##K##_##S##_##CHK##_##FULL##_##R(                                  \
        const s_dw *d, const float *xn, int64_t off, int64_t a0, int64_t a1, int64_t j0,           \
        const float *w, const float *bias, int last, int64_t nb, float *y)                         \
    {                                                                                              \
        s_dwk256(K, S, R, CHK, FULL, d, xn, off, a0, a1, j0, w, bias, last, nb, y);                \
    }
#define S_DWK256_R(K, S, CHK, FULL)                                                                \
    S_DWK256(K, S, CHK, FULL, 1) S_DWK256(K, S, CHK, FULL, 2) S_DWK256(K, S, CHK, FULL, 3)         \
    S_DWK256(K, S, CHK, FULL, 4) S_DWK256(K, S, CHK, FULL, 5) S_DWK256(K, S, CHK, FULL, 6)         \
    S_DWK256(K, S, CHK, FULL, 7) S_DWK256(K, S, CHK, FULL, 8)
#define S_DWK256_K(K, S)                                                                           \
    S_DWK256_R(K, S, 0, 0) S_DWK256_R(K, S, 0, 1) S_DWK256_R(K, S, 1, 0) S_DWK256_R(K, S, 1, 1)
S_DWK256_K(3, 1)
S_DWK256_K(5, 1)
S_DWK256_K(3, 2)
S_DWK256_K(5, 2)
#define S_DWK256_ROW(K, S, CHK, FULL)                                                              \
    {s_dwk256_##K##_##S##_##CHK##_##FULL##_1, s_dwk256_##K##_##S##_##CHK##_##FULL##_2,             \
     s_dwk256_##K##_##S##_##CHK##_##FULL##_3, s_dwk256_##K##_##S##_##CHK##_##FULL##_4,             \
     s_dwk256_##K##_##S##_##CHK##_##FULL##_5, s_dwk256_##K##_##S##_##CHK##_##FULL##_6,             \
     s_dwk256_##K##_##S##_##CHK##_##FULL##_7, s_dwk256_##K##_##S##_##CHK##_##FULL##_8}
#define S_DWK256_TAB(K, S)                                                                         \
    {{S_DWK256_ROW(K, S, 0, 0), S_DWK256_ROW(K, S, 0, 1)},                                         \
     {S_DWK256_ROW(K, S, 1, 0), S_DWK256_ROW(K, S, 1, 1)}}
/* [stride - 1][K == 5][checked][full][R - 1] */
static const s_dwb_fn s_dwk256_tab[2][2][2][2][8] = {{S_DWK256_TAB(3, 1), S_DWK256_TAB(5, 1)},
                                                     {S_DWK256_TAB(3, 2), S_DWK256_TAB(5, 2)}};
#endif
#define S_DW_RMAX256 6

/* 16 lanes at p, the first n of them (the rest 0); a macro: a function
 * returning the vector would change its ABI between the clones (-Wpsabi). */
#define S_LDN(p, n)                                                                                \
    ({                                                                                             \
        s_v16 v_ = {0};                                                                            \
        if ((n) == S_B)                                                                            \
            memcpy(&v_, (p), sizeof v_);                                                           \
        else                                                                                       \
            memcpy(&v_, (p), (size_t)(n) * sizeof(float));                                        \
        v_;                                                                                        \
    })

/* Without AVX-512: one block, R in {1, 2, 4, 8}, taps in order. */
S_INLINE void s_dwv(const int R, const bool CHK, const s_dw *d, const float *xn, int64_t off,
                    int64_t a0, int64_t a1, int64_t j0, const float *w, const float *bias,
                    int last, float *y)
{
    const s_v16 b = bias ? S_LDN(bias, last) : (s_v16){0};
    s_v16 acc[8];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = b;
    if (d->cg > 1) { /* groups: lane l reads lane l - l % cg + ic (s_dw512) */
        s_vi16 idx[8];
        for (int ic = 0; ic < d->cg; ic++)
            for (int l = 0; l < S_B; l++)
                idx[ic][l] = l - l % d->cg + ic;
        for (int64_t a = a0; a < a1; a++) {
            for (int64_t t = 0; t < d->kw; t++) {
                const float *wt = w + (a * d->kw + t) * d->cg * S_B;
                const int64_t o = off + a * d->dhx + t * d->dwx, j = j0 + t * d->dwj;
#pragma GCC unroll 8
                for (int r = 0; r < R; r++) {
                    const s_v16 xv = S_LDN(S_DW_XR(CHK, d, xn, o, j, r), last);
                    for (int ic = 0; ic < d->cg; ic++) {
                        s_v16 wv;
                        memcpy(&wv, wt + ic * S_B, sizeof wv);
                        acc[r] += __builtin_shuffle(xv, idx[ic]) * wv;
                    }
                }
            }
        }
    }
    for (int64_t a = a0; a < a1 && d->cg == 1; a++) {
        for (int64_t t = 0; t < d->kw; t++) {
            s_v16 wv;
            memcpy(&wv, w + (a * d->kw + t) * S_B, sizeof wv);
            const int64_t o = off + a * d->dhx + t * d->dwx, j = j0 + t * d->dwj;
#pragma GCC unroll 8
            for (int r = 0; r < R; r++)
                acc[r] += S_LDN(S_DW_XR(CHK, d, xn, o, j, r), last) * wv;
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        const s_v16 v = S_ACTV(d, acc[r]);
        memcpy(y + r * d->ycol, &v, (size_t)last * sizeof(float));
    }
}

#define S_DWV(CHK, R)                                                                              \
    GX_CPU_CLONES static void s_dwv_##CHK##_##R(const s_dw *d, const float *xn, int64_t off,      \
                                                int64_t a0, int64_t a1, int64_t j0,                \
                                                const float *w, const float *bias, int last,       \
                                                float *y)                                          \
    {                                                                                              \
        s_dwv(R, CHK, d, xn, off, a0, a1, j0, w, bias, last, y);                                   \
    }
S_DWV(0, 1)
S_DWV(0, 2)
S_DWV(0, 4)
S_DWV(0, 8)
S_DWV(1, 1)
S_DWV(1, 2)
S_DWV(1, 4)
S_DWV(1, 8)
/* [checked][log2 R] */
static const s_dw_fn s_dwv_tab[2][4] = {{s_dwv_0_1, s_dwv_0_2, s_dwv_0_4, s_dwv_0_8},
                                        {s_dwv_1_1, s_dwv_1_2, s_dwv_1_4, s_dwv_1_8}};

/* One run of r columns over channel blocks [b0, b1) (the last may be
 * partial); xn, w, bias, y at block b0. */
static void s_dw_run(const s_dw *d, bool chk, int64_t r, int64_t b0, int64_t b1, const float *xn,
                     int64_t off, int64_t a0, int64_t a1, int64_t j0, const float *w,
                     const float *bias, float *y)
{
    const int64_t full = d->last == S_B ? b1 : b1 < d->nblk ? b1 : d->nblk - 1;
#ifdef S_X86
    if (d->wide) {
        const int kind = d->cg > 1 ? 2 + (d->cg == 2 ? 1 : d->cg == 4 ? 2 : 3)
                         : d->k3   ? (int)d->sw
                                   : 0;
        const s_dwb_fn(*tab)[2][8] = s_dw512_tab[kind];
        if (full > b0)
            tab[chk][1][r - 1](d, xn, off, a0, a1, j0, w, bias, S_B, full - b0, y);
        if (full < b1) { /* the partial last block */
            const int64_t e = full - b0;
            tab[chk][0][r - 1](d, xn + e * d->xblk, off, a0, a1, j0,
                                          w + e * d->wblk, bias ? bias + e * S_B : NULL,
                                          (int)d->last, 1, y + e * d->ymb);
        }
        return;
    }
    if (d->avx2) {
        const s_dwb_fn(*tab)[6] = d->cg > 1 ? s_dwg256_tab[d->cg == 2 ? 0 : d->cg == 4 ? 1 : 2][chk]
                                            : s_dw256_tab[chk];
        const s_dwb_fn(*tabk)[8] =
            d->k256 ? s_dwk256_tab[d->sw - 1][d->k256 == 5][chk] : NULL;
        if (full > b0)
            (tabk ? tabk[1][r - 1] : tab[1][r - 1])(d, xn, off, a0, a1, j0, w, bias, S_B,
                                                     full - b0, y);
        if (full < b1) {
            const int64_t e = full - b0;
            (tabk ? tabk[0][r - 1] : tab[0][r - 1])(d, xn + e * d->xblk, off, a0, a1, j0,
                                                     w + e * d->wblk, bias ? bias + e * S_B : NULL,
                                                     (int)d->last, 1, y + e * d->ymb);
        }
        return;
    }
#endif
    const s_dw_fn f = s_dwv_tab[chk][r == 8 ? 3 : r == 4 ? 2 : r == 2 ? 1 : 0];
    for (int64_t b = b0; b < b1; b++) {
        const int64_t e = b - b0;
        f(d, xn + e * d->xblk, off, a0, a1, j0, w + e * d->wblk,
          bias ? bias + e * S_B : NULL, b == d->nblk - 1 ? (int)d->last : S_B, y + e * d->ymb);
    }
}

/* Columns [o0, o1) of output row oh of image n, channel blocks [b0, b1). */
static void s_dw_cols(const s_dw *d, int64_t n, int64_t oh, int64_t o0, int64_t o1, int64_t b0,
                      int64_t b1)
{
    const gx_win *w = &d->w;
    const int64_t sw = w->stride[1], pw = w->pad_lo[1];
    int64_t a0, a1;
    gx_win_taps(w, 0, oh, &a0, &a1);
    const float *xn = d->x + n * d->x_img + b0 * d->xblk;
    const float *wb = d->wp + b0 * d->wblk;
    const float *bias = d->bias ? d->bias + b0 * S_B : NULL;
    float *yr = d->y + n * d->y_img + oh * d->yrow + b0 * d->ymb;
    const int64_t row = (oh * w->stride[0] - w->pad_lo[0]) * d->xrow;
    for (int64_t o = o0; o < o1;) {
        const int64_t len =
            s_run_len(d->wide || d->avx2, d->avx2 && !d->k256 ? S_DW_RMAX256 : S_DW_RMAX, o1 - o);
        const int64_t j0 = o * sw - pw;
        s_dw_run(d, o < d->ci_lo || o + len > d->ci_hi, len, b0, b1, xn, row + j0 * d->xcol, a0,
                 a1, j0, wb, bias, yr + o * d->ycol);
        o += len;
    }
}

static void s_dw_init(s_dw *d, const gx_kargs *k, const s_act *act)
{
    int64_t c, m;
    gx_win *w = &d->w;
    s_geometry(k, w, &c, &m);
    const int64_t IH = w->in[0], IW = w->in[1], OH = w->out[0], OW = w->out[1];
    d->wide = s_wide();
    d->nblk = (c + S_B - 1) / S_B;
    d->last = c - (d->nblk - 1) * S_B;
    d->x = k->in[0].data;
    d->wp = k->in[1].data;
    d->bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL;
    d->y = k->out[0].data;
    d->x_img = c * IH * IW;
    d->y_img = c * OH * OW;
    if (k->in[0].layout == GX_LAYOUT_NHWC) {
        d->xblk = S_B, d->xrow = IW * c, d->xcol = c;
        d->ymb = S_B, d->yrow = OW * c, d->ycol = c;
    } else {
        d->xblk = IH * IW * S_B, d->xrow = IW * S_B, d->xcol = S_B;
        d->ymb = OH * OW * S_B, d->yrow = OW * S_B, d->ycol = S_B;
    }
    d->dhx = w->dil[0] * d->xrow;
    d->dwx = w->dil[1] * d->xcol;
    d->xstep = w->stride[1] * d->xcol;
    d->kw = w->k[1];
    d->iw = IW, d->sw = w->stride[1], d->dwj = w->dil[1], d->ksz = w->k_size;
    d->cg = (int)k->in[1].shape[2];
    d->wblk = d->ksz * d->cg * S_B;
    d->avx2 = s_avx2();
    d->k3 = d->cg == 1 && w->k[1] == 3 && w->dil[1] == 1 && (w->stride[1] == 1 || w->stride[1] == 2);
    d->k256 = d->avx2 && d->cg == 1 && (w->stride[1] == 1 || w->stride[1] == 2) &&
                      w->dil[1] == 1 &&
                      (w->k[1] == 3 || w->k[1] == 5)
                  ? (int)w->k[1]
                  : 0;
    d->act = act->kind, d->lo = act->lo, d->hi = act->hi;
    s_inside(IW, OW, w->k[1], w->stride[1], w->dil[1], w->pad_lo[1], &d->ci_lo, &d->ci_hi);
}

/* ---- the kernels ---- */

/* NHWC: positions [c0 * S_CHUNK, c1 * S_CHUNK); x in NHWC, or NCHW for a
 * first conv (gx_cpu_conv_layout_input). */
static void s_nhwc(const gx_kargs *k, const s_act *act, const s_epi *epi)
{
    int64_t d[4], c0, c1;
    gx_layout_dims(&k->out[0], d);
    const int64_t p = d[0] * d[2] * d[3];
    s_nhwc_chunks(p, k->ith, k->nth, &c0, &c1);
    const int64_t lo = c0 * S_CHUNK, hi = c1 * S_CHUNK < p ? c1 * S_CHUNK : p;
    if (lo >= hi)
        return;
    if (s_blockwise(k)) {
        s_dw dw;
        s_dw_init(&dw, k, act);
        const int64_t OH = d[2], OW = d[3];
        for (int64_t q = lo; q < hi;) {
            const int64_t line = q / OW, o = q % OW;
            const int64_t end = (line + 1) * OW < hi ? (line + 1) * OW : hi;
            s_dw_cols(&dw, line / OH, line % OH, o, o + (end - q), 0, dw.nblk);
            if (epi->fn)
                epi->fn(epi->ctx, q * d[1], end * d[1]);
            q = end;
        }
        return;
    }
    s_cv cv;
    bool flat;
    s_cv_init(&cv, k, act, &flat);
    s_dk_positions(&cv, lo, hi, d[1], epi);
}

/* NCHW16c: output rows (n, m-block, oh); x in NCHW16c, or NCHW when C is
 * not a multiple of 16. */
static void s_16c(const gx_kargs *k, const s_act *act, const s_epi *epi)
{
    int64_t d[4], r0, r1;
    gx_layout_dims(&k->out[0], d);
    gx_cpu_share(k, d[0] * (d[1] / S_B) * d[2], 1, &r0, &r1);
    if (r0 >= r1)
        return;
    if (s_blockwise(k)) {
        s_dw dw;
        s_dw_init(&dw, k, act);
        const int64_t OH = d[2], MB = d[1] / S_B, row = d[3] * S_B;
        for (int64_t r = r0; r < r1; r++) {
            s_dw_cols(&dw, r / (MB * OH), r % OH, 0, d[3], r / OH % MB, r / OH % MB + 1);
            if (epi->fn)
                epi->fn(epi->ctx, r * row, (r + 1) * row);
        }
        return;
    }
    s_cv cv;
    bool flat;
    s_cv_init(&cv, k, act, &flat);
    s_dk_rows16(&cv, flat || cv.pos, d[2], d[3], r0, r1, epi);
}

static void s_conv_nhwc(const gx_kargs *k)
{
    s_nhwc(k, &(s_act){S_ACT_NONE, 0, 0}, &(s_epi){NULL, NULL});
}

static void s_conv_16c(const gx_kargs *k)
{
    s_16c(k, &(s_act){S_ACT_NONE, 0, 0}, &(s_epi){NULL, NULL});
}

/* A fused group's ops that the kernels apply as they store: a Relu or a
 * Clip (float32 scalar bounds, or attributes, or none) of the head's
 * product, the group's only op. */
static bool s_act_of(const gx_fused *f, const gx_view *in, s_act *act)
{
    const gx_fused_op *op = &f->op[0];
    if (f->n_ops != 1 || f->dtype != GX_F32 || op->out != -1 || op->n_in < 1 ||
        op->in[0] != f->n_in)
        return false;
    if (op->op == GX_OP_RELU && op->n_in == 1) {
        *act = (s_act){S_ACT_RELU, 0, 0};
        return true;
    }
    if (op->op != GX_OP_CLIP || op->n_in > 3)
        return false;
    float b[2] = {-INFINITY, INFINITY};
    for (int i = 0; i < 2; i++) {
        const int c = i + 1 < op->n_in ? op->in[i + 1] : GX_FUSED_NONE;
        const gx_attrval *av = &op->attr[i == 0 ? GX_CLIP_MIN : GX_CLIP_MAX];
        if (c != GX_FUSED_NONE) {
            if (c < 0 || c >= f->n_in || in[c].dtype != GX_F32 || in[c].numel != 1)
                return false;
            b[i] = *(const float *)in[c].data;
        } else if (av->set) {
            b[i] = (float)av->f;
        }
    }
    *act = (s_act){S_ACT_CLIP, b[0], b[1]};
    return true;
}

void gx_cpu_conv_layout_epi(gx_layout l, const gx_kargs *k, const gx_fused *f, const gx_view *in,
                            gx_fused_epi_fn epi, void *ctx)
{
    s_act act = {S_ACT_NONE, 0, 0};
    const s_epi e = {f && s_act_of(f, in, &act) ? NULL : epi, ctx};
    if (l == GX_LAYOUT_NHWC)
        s_nhwc(k, &act, &e);
    else
        s_16c(k, &act, &e);
}

/* ---- the layout pass's entry points ---- */

gx_kernel_fn gx_cpu_conv_layout(gx_layout l, const gx_infer *ic, char *why, size_t len)
{
    const char *name = gx_layout_name(l);
    if (l != GX_LAYOUT_NHWC && l != GX_LAYOUT_NCHW16C) {
        snprintf(why, len, "%s: no Conv kernel", name);
        return NULL;
    }
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    if (x->dtype != GX_F32 || x->ndim != 4) {
        snprintf(why, len, "%s: Conv needs a float32 2-D input (rank 4)", name);
        return NULL;
    }
    const int64_t g = ic->attr[GX_CONV_GROUP].i, cg = x->shape[1] / g;
    const bool small = x->shape[1] == wt->shape[0] && (cg == 1 || cg == 2 || cg == 4 || cg == 8);
    if (g != 1 && !small && !(cg % S_B == 0 && wt->shape[0] / g % S_B == 0)) {
        snprintf(why, len,
                 "%s: Conv with group %lld (only group 1, groups of 1, 2, 4 or 8 channels in "
                 "and out (depthwise: 1), or of channels in and out multiples of %d)",
                 name, (long long)g, S_B);
        return NULL;
    }
    if (!wt->data) {
        snprintf(why, len, "%s: Conv weights are not a constant (they are packed at compile time)",
                 name);
        return NULL;
    }
    if (l == GX_LAYOUT_NCHW16C && (wt->shape[0] % S_B || (g > 1 && x->shape[1] % S_B))) {
        snprintf(why, len, "%s: Conv with %lld output channels (not a multiple of %d)", name,
                 (long long)wt->shape[0], S_B);
        return NULL;
    }
    return l == GX_LAYOUT_NHWC ? s_conv_nhwc : s_conv_16c;
}

gx_kernel_fn gx_cpu_conv_layout_fn(gx_layout l)
{
    return l == GX_LAYOUT_NHWC ? s_conv_nhwc : l == GX_LAYOUT_NCHW16C ? s_conv_16c : NULL;
}

gx_layout gx_cpu_conv_layout_input(gx_layout l, const gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    if (ic->attr[GX_CONV_GROUP].i != 1 || x->ndim != 4)
        return l;
    if ((l == GX_LAYOUT_NCHW16C && x->shape[1] % S_B) ||
        (l == GX_LAYOUT_NHWC && x->shape[1] <= S_IMAGE_C))
        return GX_LAYOUT_PLAIN;
    return l;
}

size_t gx_cpu_conv_layout_scratch(gx_layout l, const gx_infer *ic)
{
    (void)l, (void)ic;
    return 0;
}

void gx_cpu_conv_pack_shape(gx_layout l, const gx_attrval *attr, const gx_view *w,
                            gx_view *packed)
{
    (void)l;
    const int64_t m = w->shape[0], c = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    const int64_t mp = (m + S_B - 1) / S_B * S_B;
    (void)attr;
    *packed = *w;
    packed->data = NULL;
    packed->ndim = 4;
    memcpy(packed->shape, (int64_t[]){kh, kw, c, mp}, 4 * sizeof(int64_t));
    packed->numel = kh * kw * c * mp;
}

void gx_cpu_conv_pack(gx_layout l, const gx_attrval *attr, const gx_view *w,
                      const gx_view *packed)
{
    (void)l, (void)attr;
    const int64_t m = w->shape[0], c = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    const int64_t kc = kh * kw * c;
    const float *src = w->data;
    float *dst = packed->data;
    /* block o / 16: [kh][kw][c][16]; c is 1 for a depthwise conv */
    memset(dst, 0, (size_t)packed->numel * sizeof *dst);
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < c; i++)
            for (int64_t a = 0; a < kh; a++)
                for (int64_t b = 0; b < kw; b++)
                    dst[(o / S_B * kc + (a * kw + b) * c + i) * S_B + o % S_B] =
                        src[((o * c + i) * kh + a) * kw + b];
}
