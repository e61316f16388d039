/*
 * Conv, ConvTranspose, ConvInteger and QLinearConv on the CPU.
 *
 * Conv (float32) takes one of four paths (gx_conv_path_of): a 1x1 window
 * with stride 1 and no padding multiplies W straight into x; a depthwise
 * conv runs directly, tap by tap along output lines; a 1-D conv with
 * stride 1 and at most 32 taps runs, with AVX-512 or AVX2, a direct
 * kernel with output positions in the lanes (s_conv_1d); everything else builds
 * im2col columns in the scratch, each tile of output positions its own
 * [channels x taps, tile] matrix small enough for L2, and multiplies W by
 * it with the GEMM's kernels (gx_cpu_gemm_rows, B read in place; a tile
 * too large for them goes to cblas_sgemm). A thread's share is a range of tiles of output positions over (image,
 * group, block of output channels, tile), so threads never write the same
 * columns, and each product has the same shape whatever the split;
 * the blocks (gx_conv_row_blocks) are usually one per group, more when
 * there are few positions, each with its own copy of the columns.
 * gx_cpu_conv_epi runs the same share and hands each run of output
 * elements it has just finished to an epilogue (a fused group's ops).
 *
 * The scratch has a tile-sized region per unit of a pass of several images
 * (gx_conv_col_floats, gx_conv_pass_images); a thread builds all its
 * tiles in the region of its first unit, which stays in its cache, and
 * the threads need no barrier. ConvTranspose does the same with W^T x per
 * (image, group, block of output channels) followed by col2im into each
 * channel.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/cpu/requant.h"
#include "ops/fused.h"
#include "ops/gemm.h"

/* y[m, n] (row stride ldy) = op(a) b + beta * y; with k == 0 the product is
 * empty and y becomes beta * y. */
static void s_sgemm(bool ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *y, int64_t ldy)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++)
                y[i * ldy + j] = beta == 0.0f ? 0.0f : beta * y[i * ldy + j];
        }
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, (int)m, (int)n,
                (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, y, (int)ldy);
}

/* ---- walking output lines ----
 * A line is a run of output positions along the last spatial dim with all
 * other out coordinates fixed; line numbers count those other coordinates
 * row-major. */

/* Splits tap number t of the window into its per-dim taps j. */
static void s_tap(const gx_win *w, int64_t t, int64_t *j)
{
    for (int d = w->nsp - 1; d >= 0; d--) {
        j[d] = t % w->k[d];
        t /= w->k[d];
    }
}

/* Offset within one channel of x (dims in..., row-major) of the row that
 * output line `line` (< the lines of a channel) reads with taps j (all dims
 * but the last), or -1 when that row lies in the padding. The outermost
 * dim needs no division, so 2-D convs need none at all. */
static int64_t s_row(const gx_win *w, int64_t line, const int64_t *j)
{
    const int last = w->nsp - 1;
    int64_t off = 0, stride = w->in[last];
    for (int d = last - 1; d >= 0; d--) {
        const int64_t o = d > 0 ? line % w->out[d] : line;
        line = d > 0 ? line / w->out[d] : 0;
        const int64_t i = o * w->stride[d] - w->pad_lo[d] + j[d] * w->dil[d];
        if (i < 0 || i >= w->in[d])
            return -1;
        off += i * stride;
        stride *= w->in[d];
    }
    return off;
}

/* Columns [p0, p1) of the im2col matrix of one (image, group), as a
 * matrix of their own: row r = (channel, tap) holds at column p - p0 (p
 * an output position) the x element that the tap reads there, or 0 in the
 * padding. Rows are p1 - p0 long. */
static void s_im2col(const gx_win *w, int64_t cg, const float *x, int64_t p0, int64_t p1,
                     float *col)
{
    const int last = w->nsp - 1;
    const int64_t ow = w->out[last], s = w->stride[last];
    const int64_t l0 = p0 / ow, l1 = (p1 + ow - 1) / ow; /* the lines touched */
    int64_t j[GX_WIN_MAX];
    for (int64_t r = 0; r < cg * w->k_size; r++) {
        s_tap(w, r % w->k_size, j);
        const float *xc = x + r / w->k_size * w->in_size;
        float *row = col + r * (p1 - p0);
        int64_t c0, fa, fb; /* where a whole line reads x */
        gx_win_inner(w, j[last], 0, ow, &c0, &fa, &fb);
        for (int64_t line = l0; line < l1; line++) {
            const int64_t o0 = line == l0 ? p0 - l0 * ow : 0;
            const int64_t o1 = line == l1 - 1 ? p1 - line * ow : ow;
            const int64_t off = s_row(w, line, j);
            int64_t a = fa > o0 ? fa : o0, b = fb < o1 ? fb : o1;
            if (off < 0 || b < a)
                a = b = o1;
            /* column o of the line is element o - o0 of dst */
            float *restrict dst = row + (line * ow + o0 - p0);
            const float *restrict src = xc + (off < 0 ? 0 : off); /* its row; index c0 + o * s */
            for (int64_t o = o0; o < a; o++)
                dst[o - o0] = 0.0f;
            if (s == 1) {
                for (int64_t o = a; o < b; o++)
                    dst[o - o0] = src[c0 + o];
            } else {
                for (int64_t o = a; o < b; o++)
                    dst[o - o0] = src[c0 + o * s];
            }
            for (int64_t o = b; o < o1; o++)
                dst[o - o0] = 0.0f;
        }
    }
}

/* Rows [0, m) of y (row stride ldy), columns [0, n): the bias of each row,
 * or nothing when there is none (the product then overwrites y). */
static void s_bias_rows(const float *bias, int64_t m, int64_t n, float *y, int64_t ldy)
{
    for (int64_t i = 0; bias && i < m; i++) {
        const float v = bias[i];
        float *restrict row = y + i * ldy;
        for (int64_t p = 0; p < n; p++)
            row[p] = v;
    }
}

/* ---- Conv ---- */

typedef struct s_conv {
    gx_win w;
    int64_t n, c, m, g, cg, mg;
    const float *x, *wt, *bias;
    float *y;
    gx_fused_epi_fn epi; /* called on each run of y finished, or NULL */
    void *epi_ctx;
} s_conv;

/* Output channels [m0, m1) of group gi and columns [p0, p1) of image i:
 * im2col into col (the tile's [cgk, p1 - p0] columns) unless the conv is
 * pointwise, then one product. */
static void s_conv_block(const s_conv *cv, bool pointwise, int64_t i, int64_t gi, int64_t m0,
                         int64_t m1, int64_t p0, int64_t p1, float *col)
{
    const int64_t P = cv->w.out_size, cgk = cv->cg * cv->w.k_size;
    const float *xg = cv->x + (i * cv->c + gi * cv->cg) * cv->w.in_size;
    float *yg = cv->y + (i * cv->m + gi * cv->mg + m0) * P + p0;
    const float *b = cv->bias ? cv->bias + gi * cv->mg + m0 : NULL;
    const float *xb = xg + p0; /* the product's B: x itself, or the tile's columns */
    int64_t ldb = P;
    if (!pointwise) {
        s_im2col(&cv->w, cv->cg, xg, p0, p1, col);
        xb = col;
        ldb = p1 - p0;
    }
    s_bias_rows(b, m1 - m0, p1 - p0, yg, P);
    if (!pointwise && (p1 - p0) * cgk <= GX_GEMM_PLAIN_MAX_B)
        /* the tile's columns are in L2: the GEMM's own kernels read them in place */
        gx_cpu_gemm_rows(m1 - m0, p1 - p0, cgk, cv->wt + (gi * cv->mg + m0) * cgk, cgk, xb, ldb,
                         yg, P, b != NULL);
    else
        s_sgemm(false, m1 - m0, p1 - p0, cgk, cv->wt + (gi * cv->mg + m0) * cgk, cgk, xb, ldb,
                b ? 1.0f : 0.0f, yg, P);
    if (!cv->epi)
        return;
    const int64_t c0 = i * cv->m + gi * cv->mg; /* the block's first channel of y */
    if (p0 == 0 && p1 == P) { /* whole channels: one run */
        cv->epi(cv->epi_ctx, (c0 + m0) * P, (c0 + m1) * P);
    } else {
        for (int64_t ch = c0 + m0; ch < c0 + m1; ch++)
            cv->epi(cv->epi_ctx, ch * P + p0, ch * P + p1);
    }
}

/* Depthwise: output channel oc reads input channel oc / mg only. The
 * thread's share is a range of output lines over (image, channel, line);
 * the lines it has of one channel take the taps one at a time, each tap
 * adding its weight times a row of x to every line. */
static void s_conv_depthwise(const gx_kargs *k, const s_conv *cv)
{
    const gx_win *w = &cv->w;
    const int last = w->nsp - 1;
    const int64_t ow = w->out[last], s = w->stride[last];
    const int64_t lines = ow > 0 ? w->out_size / ow : 0;
    int64_t lo, hi, j[GX_WIN_MAX];
    gx_cpu_share(k, cv->n * cv->m * lines, 1, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t ch = u / lines, oc = ch % cv->m, l0 = u % lines;
        const int64_t l1 = lines - l0 < hi - u ? lines : l0 + (hi - u);
        const float *xc = cv->x + (ch / cv->m * cv->c + oc / cv->mg) * w->in_size;
        const float *wc = cv->wt + oc * w->k_size;
        float *yc = cv->y + ch * w->out_size;
        const float bv = cv->bias ? cv->bias[oc] : 0.0f;
        for (int64_t q = l0 * ow; q < l1 * ow; q++)
            yc[q] = bv;
        for (int64_t t = 0; t < w->k_size; t++) {
            s_tap(w, t, j);
            int64_t c0, a, b;
            gx_win_inner(w, j[last], 0, ow, &c0, &a, &b);
            const float wv = wc[t];
            for (int64_t line = l0; line < l1; line++) {
                const int64_t off = s_row(w, line, j);
                if (off < 0)
                    continue;
                const float *restrict src = xc + off; /* its row; index c0 + o * s */
                float *restrict y = yc + line * ow;
                if (s == 1) {
                    for (int64_t o = a; o < b; o++)
                        y[o] += wv * src[c0 + o];
                } else {
                    for (int64_t o = a; o < b; o++)
                        y[o] += wv * src[c0 + o * s];
                }
            }
        }
        if (cv->epi)
            cv->epi(cv->epi_ctx, ch * w->out_size + l0 * ow, ch * w->out_size + l1 * ow);
        u += l1 - l0;
    }
}

/* ---- 1-D, stride 1, AVX-512 or AVX2: positions in the lanes ----
 * A run is MR output channels of one group by V vectors of consecutive
 * output positions, MR * V sums in registers; for each input channel and
 * tap, the run's positions read consecutive x elements (stride 1), loaded
 * V vectors at once, each multiplied by MR broadcast weights, straight
 * from x and W in their ONNX layouts (no im2col, no packing). An output
 * element is its bias (or 0) plus its products in the order (input
 * channel, tap), a tap in the padding reading a zero (masked loads), so
 * it is computed the same way whatever the run, tile, share or vector
 * width it falls in. conv1d_run.h is the run, included once per width:
 * AVX-512, 6 channels x 4 vectors of 16 (24 sums, 4 x vectors and a
 * broadcast in the 32 zmm registers); AVX2 + FMA, 4 channels x 3 vectors
 * of 8 (12 sums, 3 x vectors and a broadcast in the 16 ymm registers). */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S_C1 1
#define S_T512 __attribute__((target("avx512f")))
#define S_T256 __attribute__((target("avx2,fma")))
#endif

#define S_C1_MR 6      /* output channels in a run at most, any width */
#define S_C1_KMAX 32   /* taps at most */
#define S_C1_TILE 256  /* positions of a unit of the share split at most */

typedef void (*s_c1_fn)(const float *x, int64_t L, int64_t cg, int64_t k, int64_t dil,
                        int64_t pad, const float *w, int64_t ldw, const float *bias, int64_t p0,
                        int64_t n, float *y, int64_t P, bool more);

/* A width's kernel: its runs' shape and functions. */
typedef struct s_c1_isa {
    int64_t mr;             /* output channels of a run at most */
    int64_t run;            /* positions of a run */
    int64_t cb;             /* input channels of a pass over a tile */
    s_c1_fn fn[2][S_C1_MR]; /* [checked][MR - 1] */
} s_c1_isa;

#ifdef S_C1
#define S_C1_RUN s_c1_512
#define S_C1_ATTR S_T512
#define s_cv __m512
#define s_cm __mmask16
#define S_CL 16
#define S_CV 4
#define S_CMR 6
#define S_CSET1(f) _mm512_set1_ps(f)
#define S_CZERO() _mm512_setzero_ps()
#define S_CLOAD(p) _mm512_loadu_ps(p)
#define S_CSTORE(p, v) _mm512_storeu_ps((p), (v))
#define S_CFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define S_CMASK(lo, hi) ((__mmask16)(((1u << (hi)) - 1) & ~((1u << (lo)) - 1)))
#define S_CLOADM(m, p) _mm512_maskz_loadu_ps((m), (p))
#define S_CSTOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#include "ops/cpu/conv1d_run.h"

#define S_C1_RUN s_c1_256
#define S_C1_ATTR S_T256
#define s_cv __m256
#define s_cm __m256i
#define S_CL 8
#define S_CV 3
#define S_CMR 4
#define S_CSET1(f) _mm256_set1_ps(f)
#define S_CZERO() _mm256_setzero_ps()
#define S_CLOAD(p) _mm256_loadu_ps(p)
#define S_CSTORE(p, v) _mm256_storeu_ps((p), (v))
#define S_CFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define S_CMASK(lo, hi)                                                                            \
    _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), s_c1_lane),                      \
                        _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), s_c1_lane))
#define S_CLOADM(m, p) _mm256_maskload_ps((p), (m))
#define S_CSTOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define s_c1_lane _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
#include "ops/cpu/conv1d_run.h"
#undef s_c1_lane

#define S_C1F(W, MR, CHK)                                                                          \
    static S_T##W void s_c1_##W##_##MR##_##CHK(const float *x, int64_t L, int64_t cg, int64_t k,  \
                                               int64_t dil, int64_t pad, const float *w,          \
                                               int64_t ldw, const float *bias, int64_t p0,        \
                                               int64_t n, float *y, int64_t P, bool more)         \
    {                                                                                              \
        s_c1_##W(MR, CHK, x, L, cg, k, dil, pad, w, ldw, bias, p0, n, y, P, more);                 \
    }
#define S_C1F_MR(W, MR) S_C1F(W, MR, 0) S_C1F(W, MR, 1)
#define S_C1F_4(W) S_C1F_MR(W, 1) S_C1F_MR(W, 2) S_C1F_MR(W, 3) S_C1F_MR(W, 4)
S_C1F_4(512)
S_C1F_MR(512, 5)
S_C1F_MR(512, 6)
S_C1F_4(256)
#define S_C1_FN4(W, CHK)                                                                           \
    s_c1_##W##_1_##CHK, s_c1_##W##_2_##CHK, s_c1_##W##_3_##CHK, s_c1_##W##_4_##CHK

/* AVX-512: as AVX2 (below; not measured on an AVX-512 machine, whose L1
 * of 48 KiB holds a pass's stretch of x too) */
static const s_c1_isa s_c1_isa512 = {6, 4 * 16, 24,
                                      {{S_C1_FN4(512, 0), s_c1_512_5_0, s_c1_512_6_0},
                                       {S_C1_FN4(512, 1), s_c1_512_5_1, s_c1_512_6_1}}};
/* AVX2: 24 input channels a pass, so that a tile's stretch of x (24 rows
 * of S_C1_TILE positions and the window's reach, 24 KiB at most for 8
 * taps' dilation) stays in L1 while each run of output channels sweeps
 * it (W's rows of the run are a few hundred bytes). bench_ort's conv1d
 * on one Zen 3 core: 99-101 ms when every run of positions read all of
 * W's pass (48 KiB: in L2) per output-channel run, 86-95 after, with 16,
 * 24 or 32 channels a pass (24: 88-89; the VM's noise is as large as the
 * differences between them). x's rows are L floats apart, for L = 16000
 * a multiple of 512 bytes, so long passes also fall into few L1 sets. */
static const s_c1_isa s_c1_isa256 = {4, 3 * 8, 24, {{S_C1_FN4(256, 0)}, {S_C1_FN4(256, 1)}}};
#endif

/* The 1-D kernel for the conv on this CPU's GEMM ISA (gx_cpu_gemm_isa;
 * tests set it to take each), or NULL when the conv does not run on it. */
static const s_c1_isa *s_c1_of(const s_conv *cv)
{
#ifdef S_C1
    const gx_win *w = &cv->w;
    if (w->nsp != 1 || w->stride[0] != 1 || w->k[0] > S_C1_KMAX || cv->cg == 0)
        return NULL;
    const char *isa = gx_cpu_gemm_isa();
    return !strcmp(isa, "avx512") ? &s_c1_isa512 : !strcmp(isa, "avx2") ? &s_c1_isa256 : NULL;
#else
    (void)cv;
    return NULL;
#endif
}

/* The 1-D kernel's share: units (image, group, tile of positions: the
 * runs in S_C1_TILE); in a tile, for each pass over the input channels
 * (is->cb of them), for each run of output channels every run of
 * positions (the pass's stretch of x stays in L1, and the run's rows of
 * W); then the epilogue per channel, once the last pass has run. is:
 * s_c1_of's answer. */
static void s_conv_1d(const gx_kargs *k, const s_conv *cv, const s_c1_isa *is)
{
    const gx_win *w = &cv->w;
    const int64_t L = w->in[0], P = w->out[0], kk = w->k[0], dil = w->dil[0], pad = w->pad_lo[0];
    const int64_t run = is->run, tile = S_C1_TILE / run * run;
    const int64_t tiles = (P + tile - 1) / tile, ldw = cv->cg * kk;
    const int64_t groups_m = (cv->mg + is->mr - 1) / is->mr;
    const int64_t cb = is->cb;
    int64_t lo, hi;
    gx_cpu_share(k, cv->n * cv->g * tiles, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t seg = u / tiles, t0 = u % tiles * tile;
        const int64_t t1 = P - t0 < tile ? P : t0 + tile;
        const int64_t i = seg / cv->g, gi = seg % cv->g;
        const float *xg = cv->x + (i * cv->c + gi * cv->cg) * L;
        const float *wg = cv->wt + gi * cv->mg * ldw;
        const float *bg = cv->bias ? cv->bias + gi * cv->mg : NULL;
        float *yg = cv->y + (i * cv->m + gi * cv->mg) * P;
        for (int64_t c0 = 0; c0 < cv->cg; c0 += cb) {
            const int64_t cn = cv->cg - c0 < cb ? cv->cg - c0 : cb;
            for (int64_t r = 0; r < groups_m; r++) {
                const int64_t m0 = cv->mg * r / groups_m, m1 = cv->mg * (r + 1) / groups_m;
                for (int64_t p0 = t0; p0 < t1; p0 += run) {
                    const int64_t n = t1 - p0 < run ? t1 - p0 : run;
                    /* every tap of positions [p0, p0 + n) inside x? */
                    const bool chk =
                        n < run || p0 - pad < 0 || p0 + run - 1 - pad + (kk - 1) * dil >= L;
                    is->fn[chk][m1 - m0 - 1](xg + c0 * L, L, cn, kk, dil, pad,
                                             wg + m0 * ldw + c0 * kk, ldw, bg ? bg + m0 : NULL,
                                             p0, n, yg + m0 * P, P, c0 > 0);
                }
            }
        }
        for (int64_t ch = 0; cv->epi && ch < cv->mg; ch++) {
            const int64_t at = (i * cv->m + gi * cv->mg + ch) * P;
            cv->epi(cv->epi_ctx, at + t0, at + t1);
        }
    }
}

void gx_cpu_CONV(const gx_kargs *k)
{
    gx_cpu_conv_epi(k, NULL, NULL);
}

void gx_cpu_conv_epi(const gx_kargs *k, gx_fused_epi_fn epi, void *ctx)
{
    const gx_view *x = &k->in[0], *wt = &k->in[1], *y = &k->out[0];
    s_conv cv = {.n = x->shape[0], .c = x->shape[1], .m = wt->shape[0],
                 .g = k->attr[GX_CONV_GROUP].i, .x = x->data, .wt = wt->data,
                 .bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL,
                 .y = y->data, .epi = epi, .epi_ctx = ctx};
    gx_win_init(&cv.w, k->attr, "Conv", x, wt->shape + 2, false, false, NULL, 0);
    cv.cg = cv.c / cv.g;
    cv.mg = cv.m / cv.g;
    const gx_conv_path path = gx_conv_path_of(&cv.w, cv.c, cv.g);
    if (path == GX_CONV_DEPTHWISE) {
        s_conv_depthwise(k, &cv);
        return;
    }
    const s_c1_isa *c1 = path == GX_CONV_IM2COL ? s_c1_of(&cv) : NULL;
    if (c1) {
        s_conv_1d(k, &cv, c1);
        return;
    }
    /* units: (image of the pass, group, row block, tile of positions); the
     * tiles depend on the shapes alone, so every product has the same
     * shape, and the same bits, whatever the split (a BLAS may sum a
     * product of another N differently) */
    const int64_t P = cv.w.out_size, rb = gx_conv_row_blocks(cv.n, cv.g, cv.mg, P);
    const int64_t cgk = cv.cg * cv.w.k_size, T = gx_conv_tile(P, cgk);
    const int64_t tiles = P > 0 ? (P + T - 1) / T : 0;
    const bool pointwise = path == GX_CONV_POINTWISE;
    const int64_t pass =
        pointwise ? cv.n : gx_conv_pass_images(cv.n, gx_conv_col_floats(cv.g * rb, P, cgk));
    int64_t lo, hi;
    gx_cpu_share(k, pass * cv.g * rb * tiles, 1, &lo, &hi);
    /* every tile of the share in the region of its first unit */
    float *col = pointwise ? NULL : (float *)k->scratch + lo * T * cgk;
    for (int64_t i0 = 0; i0 < cv.n; i0 += pass) {
        for (int64_t u = lo; u < hi; u++) {
            const int64_t seg = u / tiles, p0 = u % tiles * T;
            const int64_t p1 = P - p0 < T ? P : p0 + T;
            const int64_t b = seg / (cv.g * rb), gi = seg / rb % cv.g, r = seg % rb;
            if (i0 + b >= cv.n)
                break;
            s_conv_block(&cv, pointwise, i0 + b, gi, cv.mg * r / rb, cv.mg * (r + 1) / rb, p0, p1,
                         col);
        }
    }
}

/* ---- ConvTranspose ---- */

/* Adds the column matrix col [k_size, P_x] of one output channel into y
 * (that channel, already holding its bias): x position o and tap t add to
 * y position o * stride - pad_lo + t * dil, when it exists. */
static void s_col2im(const gx_win *w, const float *col, float *y)
{
    const int last = w->nsp - 1;
    const int64_t ow = w->out[last], s = w->stride[last];
    const int64_t lines = ow > 0 ? w->out_size / ow : 0;
    int64_t j[GX_WIN_MAX];
    for (int64_t t = 0; t < w->k_size; t++) {
        s_tap(w, t, j);
        for (int64_t line = 0; line < lines; line++) {
            const int64_t off = s_row(w, line, j);
            if (off < 0)
                continue;
            int64_t c0, a, b;
            gx_win_inner(w, j[last], 0, ow, &c0, &a, &b);
            const float *restrict src = col + t * w->out_size + line * ow;
            float *restrict dst = y + off; /* its row; index c0 + o * s */
            if (s == 1) {
                for (int64_t o = a; o < b; o++)
                    dst[c0 + o] += src[o];
            } else {
                for (int64_t o = a; o < b; o++)
                    dst[c0 + o * s] += src[o];
            }
        }
    }
}

/* Output channels of a ConvTranspose unit: a group's mg in up to four
 * even blocks (by shape alone, so every split runs the same products),
 * each one product W^T x for all its channels: x is packed once per
 * block, not once per channel. */
static int64_t s_ct_blocks(int64_t mg)
{
    return mg < 4 ? mg : 4;
}

/* The thread's share is a range of (image, group, block of output
 * channels) units of a pass; a unit multiplies its channels' slice of
 * W^T with the image's x of the group into its own scratch rows (the
 * channels' rows one after the other, as they lie in the scratch), then
 * scatters each channel's into y. */
void gx_cpu_CONVTRANSPOSE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *wt = &k->in[1], *y = &k->out[0];
    const float *bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL;
    gx_win w;
    gx_win_init_transpose(&w, k->attr, x, wt, NULL, 0);
    const int64_t n = x->shape[0], c = x->shape[1], m = y->shape[1];
    const int64_t g = k->attr[GX_CONVTRANSPOSE_GROUP].i, cg = c / g, mg = m / g;
    const int64_t px = w.out_size, unit = w.k_size * px, nb = s_ct_blocks(mg);
    const int64_t pass = gx_conv_pass_images(n, m * unit);
    const float *px_data = x->data, *pw = wt->data;
    float *py = y->data;
    int64_t lo, hi;
    if (nb == 0)
        return;
    gx_cpu_share(k, pass * g * nb, 1, &lo, &hi);
    for (int64_t i0 = 0; i0 < n; i0 += pass) {
        for (int64_t u = lo; u < hi && i0 + u / (g * nb) < n; u++) {
            const int64_t b = u / (g * nb), gi = u / nb % g, bl = u % nb;
            const int64_t mm0 = mg * bl / nb, mm1 = mg * (bl + 1) / nb, oc0 = gi * mg + mm0;
            float *col = (float *)k->scratch + (b * m + oc0) * unit;
            s_sgemm(true, (mm1 - mm0) * w.k_size, px, cg,
                    pw + gi * cg * mg * w.k_size + mm0 * w.k_size, mg * w.k_size,
                    px_data + ((i0 + b) * c + gi * cg) * px, px, 0.0f, col, px);
            for (int64_t oc = oc0; oc < oc0 + mm1 - mm0; oc++) {
                float *yc = py + ((i0 + b) * m + oc) * w.in_size;
                const float bv = bias ? bias[oc] : 0.0f;
                for (int64_t q = 0; q < w.in_size; q++)
                    yc[q] = bv;
                s_col2im(&w, col + (oc - oc0) * unit, yc);
            }
        }
    }
}

/* ---- ConvInteger and QLinearConv ----
 * Both sum exact int32 products along output lines (s_qline); a
 * QLinearConv requantizes each line, and a depthwise one takes a plane at
 * a time (s_qlinear_dw). QLinearConvs of group 1 with constant weights
 * run on ops/cpu/qgemm.c instead. */

/* Element i of an int8 (sign) or uint8 buffer. */
static inline int32_t s_q8(const void *p, bool sign, int64_t i)
{
    return sign ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* acc[o] += wv (x[o * s] - xz) for o in [a, b), x uint8 or int8: each
 * product fits int32, the sum wraps like the int32 it is. */
#define S_QTAP(T)                                                                                  \
    GX_CPU_CLONES static void s_qtap_##T(int32_t *restrict acc, const T *restrict x, int64_t a,   \
                                         int64_t b, int64_t s, int32_t wv, int32_t xz)            \
    {                                                                                              \
        if (s == 1)                                                                                \
            for (int64_t o = a; o < b; o++)                                                        \
                acc[o] = (int32_t)((uint32_t)acc[o] + (uint32_t)(wv * ((int32_t)x[o] - xz)));    \
        else                                                                                       \
            for (int64_t o = a; o < b; o++)                                                        \
                acc[o] =                                                                           \
                    (int32_t)((uint32_t)acc[o] + (uint32_t)(wv * ((int32_t)x[o * s] - xz)));     \
    }
S_QTAP(uint8_t)
S_QTAP(int8_t)
#undef S_QTAP

/* An integer conv's geometry and operands (ConvInteger, QLinearConv). */
typedef struct s_qconv {
    gx_win w;
    const gx_view *x, *wt;
    int64_t c, cg, mg;
    int32_t xzp;
} s_qconv;

/* Columns [o0, o1) of output line `line` of channel oc of image i, into
 * acc[0, o1 - o0): the int32 (wrapping) sum over the group's channels and
 * the taps of (w - wzp)(x - xzp); padding (x's zero point) adds nothing,
 * nor does a tap whose weight is the zero point. */
static void s_qline(const s_qconv *q, int64_t i, int64_t oc, int64_t line, int32_t wzp,
                    int64_t o0, int64_t o1, int32_t *acc)
{
    const gx_win *w = &q->w;
    const int last = w->nsp - 1;
    const int64_t s = w->stride[last], ks = w->k_size;
    const bool xs = q->x->dtype == GX_I8, ws = q->wt->dtype == GX_I8;
    int64_t j[GX_WIN_MAX];
    memset(acc, 0, (size_t)(o1 - o0) * sizeof *acc);
    for (int64_t r = 0; r < q->cg * ks; r++) {
        const int64_t t = r % ks, ic = oc / q->mg * q->cg + r / ks;
        const int32_t wv = s_q8(q->wt->data, ws, oc * q->cg * ks + r) - wzp;
        s_tap(w, t, j);
        const int64_t off = s_row(w, line, j);
        if (off < 0 || wv == 0)
            continue;
        int64_t c0, a, b;
        gx_win_inner(w, j[last], o0, o1, &c0, &a, &b);
        if (a >= b)
            continue;
        /* columns [a, b): x from column a's element, acc from a - o0 */
        const int64_t base = (i * q->c + ic) * w->in_size + off + c0 + a * s;
        if (xs)
            s_qtap_int8_t(acc + (a - o0), (const int8_t *)q->x->data + base, 0, b - a, s, wv,
                          q->xzp);
        else
            s_qtap_uint8_t(acc + (a - o0), (const uint8_t *)q->x->data + base, 0, b - a, s, wv,
                           q->xzp);
    }
}

/* Direct, in int32: the share is a range of output lines over (image,
 * output channel, line); zero points are subtracted as values are read. */
void gx_cpu_CONVINTEGER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *wt = &k->in[1], *y = &k->out[0];
    const gx_view *xz = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    const gx_view *wz = k->n_in > 3 && k->in[3].ndim >= 0 ? &k->in[3] : NULL;
    s_qconv q = {.x = x, .wt = wt, .c = x->shape[1]};
    gx_win_init(&q.w, k->attr, "ConvInteger", x, wt->shape + 2, false, false, NULL, 0);
    const int64_t m = wt->shape[0], g = k->attr[GX_CONV_GROUP].i;
    q.cg = q.c / g, q.mg = m / g;
    q.xzp = xz ? s_q8(xz->data, xz->dtype == GX_I8, 0) : 0;
    const int64_t ow = q.w.out[q.w.nsp - 1], lines = ow > 0 ? q.w.out_size / ow : 0;
    int64_t lo, hi;
    gx_cpu_share(k, x->shape[0] * m * lines, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t line = u % lines, ch = u / lines, oc = ch % m;
        const int32_t wzp = !wz ? 0 : s_q8(wz->data, wz->dtype == GX_I8, wz->numel > 1 ? oc : 0);
        s_qline(&q, ch / m, oc, line, wzp, 0, ow,
                (int32_t *)y->data + ch * q.w.out_size + line * ow);
    }
}

/* Columns of a QLinearConv line taken at once (on the stack). */
#define S_QCOLS 1024
/* Taps of a QLinearConv output whose sums surely fit int32: 255 * 255
 * each. Wider windows take the int64 loop. */
#define S_QTAPS_INT32 (INT32_MAX / (255 * 255))

/* y[o] = (acc[o] + bias) * scale (the product in double, as the ONNX
 * reference's numpy does) rounded half to even, plus yz, saturated to
 * [lo, hi] (NaN: lo), for o < n; uint8 or int8 y. Clamping to [lo - yz,
 * hi - yz] before rounding is the same (integer bounds), and keeps the
 * rounding a plain add and subtract of 1.5 * 2^52 (half to even, as rint
 * in the default rounding mode), so the loop vectorises; with AVX-512,
 * 16 at a time (ops/cpu/requant.h). */
#ifdef GX_REQUANT_AVX512
__attribute__((target("avx512f"))) static void s_qstore_512(int64_t n, const int32_t *acc,
                                                             double bias, double scale,
                                                             int32_t yz, int32_t lo, int32_t hi,
                                                             void *y)
{
    const __m512d b = _mm512_set1_pd(bias);
    for (int64_t o = 0; o < n; o += 16) {
        const __mmask16 m = n - o >= 16 ? 0xFFFF : (__mmask16)((1u << (n - o)) - 1);
        __m512d e0, e1;
        gx_requant_halves(_mm512_maskz_loadu_epi32(m, acc + o), &e0, &e1);
        const __m512i r = gx_requant16(_mm512_add_pd(e0, b), _mm512_add_pd(e1, b), scale,
                                       lo - yz, hi - yz, yz);
        _mm512_mask_cvtepi32_storeu_epi8((char *)y + o, m, r);
    }
}
#endif

#define S_QSTORE(T)                                                                                \
    GX_CPU_CLONES static void s_qstore_plain_##T(int64_t n, const int32_t *restrict acc,          \
                                                 double bias, float scale, int32_t yz,            \
                                                 int32_t lo, int32_t hi, T *restrict y)           \
    {                                                                                              \
        const double dlo = lo - yz, dhi = hi - yz, magic = 0x1.8p52;                               \
        for (int64_t o = 0; o < n; o++) {                                                          \
            double v = ((double)acc[o] + bias) * scale;                                            \
            v = v > dlo ? (v < dhi ? v : dhi) : dlo;                                               \
            y[o] = (T)((int32_t)((v + magic) - magic) + yz);                                       \
        }                                                                                          \
    }
S_QSTORE(uint8_t)
S_QSTORE(int8_t)
#undef S_QSTORE

#ifdef GX_REQUANT_AVX512
/* s_qstore_plain 8 at a time in AVX2 (the same operations, vmaxpd's
 * order taking NaN to the low bound); returns the first not done (fewer
 * than 8 left). GCC's AVX2 clone of the plain loop takes 32 at a time and
 * the rest one by one: 24 of a 56-wide line. */
__attribute__((target("avx2"))) static int64_t s_qstore_avx2(int64_t n, const int32_t *acc,
                                                              double bias, float scale,
                                                              int32_t yz, int32_t lo, int32_t hi,
                                                              bool s8, void *y)
{
    const __m256d b = _mm256_set1_pd(bias), sc = _mm256_set1_pd(scale),
                  dlo = _mm256_set1_pd(lo - yz), dhi = _mm256_set1_pd(hi - yz),
                  magic = _mm256_set1_pd(0x1.8p52);
    const __m128i z = _mm_set1_epi32(yz);
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        __m128i h[2];
        for (int i = 0; i < 2; i++) {
            __m256d v = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(acc + o + 4 * i)));
            v = _mm256_mul_pd(_mm256_add_pd(v, b), sc);
            v = _mm256_min_pd(_mm256_max_pd(v, dlo), dhi);
            v = _mm256_sub_pd(_mm256_add_pd(v, magic), magic);
            h[i] = _mm_add_epi32(_mm256_cvttpd_epi32(v), z);
        }
        const __m128i w = _mm_packs_epi32(h[0], h[1]);
        _mm_storel_epi64((__m128i *)((char *)y + o),
                         s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
    }
    return o;
}
#endif

static void s_qstore(int64_t n, const int32_t *acc, double bias, float scale, int32_t yz,
                     int32_t lo, int32_t hi, bool s8, void *y)
{
#ifdef GX_REQUANT_AVX512
    if (!strcmp(gx_cpu_gemm_isa(), "avx2")) { /* (tests set the ISA to take each path) */
        const int64_t o = s_qstore_avx2(n, acc, bias, scale, yz, lo, hi, s8, y);
        n -= o, acc += o, y = (char *)y + o;
    } else if (gx_requant_avx512()) {
        s_qstore_512(n, acc, bias, scale, yz, lo, hi, y);
        return;
    }
#endif
    if (s8)
        s_qstore_plain_int8_t(n, acc, bias, scale, yz, lo, hi, y);
    else
        s_qstore_plain_uint8_t(n, acc, bias, scale, yz, lo, hi, y);
}

/* One QLinearConv output, the int64 way: a window too wide for int32 sums. */
static int64_t s_qlinear_wide(const s_qconv *q, int64_t n, int64_t m, int64_t o, int32_t wzp)
{
    const gx_win *w = &q->w;
    const bool xs = q->x->dtype == GX_I8, ws = q->wt->dtype == GX_I8;
    int64_t od[GX_WIN_MAX], acc = 0;
    for (int d = w->nsp - 1; d >= 0; d--) {
        od[d] = o % w->out[d];
        o /= w->out[d];
    }
    for (int64_t c = 0; c < q->cg; c++) {
        const int64_t ci = m / q->mg * q->cg + c;
        const int64_t xbase = (n * q->c + ci) * w->in_size, wbase = (m * q->cg + c) * w->k_size;
        for (int64_t t = 0; t < w->k_size; t++) {
            int64_t xi = 0, mul = 1, tr = t;
            bool inside = true;
            for (int d = w->nsp - 1; d >= 0; d--) {
                const int64_t j = tr % w->k[d];
                tr /= w->k[d];
                const int64_t p = od[d] * w->stride[d] - w->pad_lo[d] + j * w->dil[d];
                inside &= p >= 0 && p < w->in[d];
                xi += p * mul;
                mul *= w->in[d];
            }
            if (inside)
                acc += (int64_t)(s_q8(q->x->data, xs, xbase + xi) - q->xzp) *
                       (s_q8(q->wt->data, ws, wbase + t) - wzp);
        }
    }
    return acc;
}

/* Depthwise 2-D (each output channel reads its own input channel), a
 * plane at a time: x - x_zp as float in a padded copy of the plane, its
 * columns split by phase modulo the stride (so each tap reads an output
 * row's elements one after the other), then every output row sums its
 * taps 16 columns at a time and is requantized. The float sums are exact:
 * every product and partial sum is an integer below 2^24 (255 * 255 per
 * tap, at most S_DW_TAPS taps). The copy is on the stack: planes larger
 * than S_DW_ELEMS take the line path. */
#define S_DW_ELEMS (40 << 10)
#define S_DW_TAPS 256
#define S_DW_V 16 /* columns a vector of sums takes */

typedef float s_dwv __attribute__((vector_size(S_DW_V * sizeof(float)), aligned(4)));
typedef int32_t s_dwi __attribute__((vector_size(S_DW_V * sizeof(int32_t)), aligned(4)));

typedef struct s_dw {
    int64_t rows, sw, wq, ow16; /* padded rows, column phases, phase width, ow rounded up */
} s_dw;

static bool s_dw_fits(const gx_win *w, s_dw *d)
{
    if (w->nsp != 2 || w->k_size > S_DW_TAPS)
        return false;
    d->rows = w->pad_lo[0] + w->in[0] + w->pad_hi[0];
    d->sw = w->stride[1];
    /* the phase width: every column an output row's taps read */
    d->wq = w->out[1] + (w->k[1] - 1) * w->dil[1] / d->sw + 1;
    d->ow16 = (w->out[1] + S_DW_V - 1) / S_DW_V * S_DW_V;
    /* the last row's vectors read up to ow16 - ow columns past it */
    return d->rows * d->sw * d->wq + d->ow16 <= S_DW_ELEMS;
}

/* out[q] = in[q * sw] - xz for q in [qa, qb): a plain loop (a constant
 * stride vectorises), and with AVX-512 (BW, VL) 16 bytes at a time for
 * strides 1 and 2 (every other byte of 16 words, the last word's high
 * byte not read). */
#define S_DW_RUN(T)                                                                                \
    GX_CPU_CLONES static void s_dw_run_##T(const T *restrict in, int64_t sw, int32_t xz,          \
                                           int64_t qa, int64_t qb, float *restrict out)           \
    {                                                                                              \
        if (sw == 1)                                                                               \
            for (int64_t q = qa; q < qb; q++)                                                      \
                out[q] = (float)((int32_t)in[q] - xz);                                             \
        else if (sw == 2)                                                                          \
            for (int64_t q = qa; q < qb; q++)                                                      \
                out[q] = (float)((int32_t)in[q * 2] - xz);                                         \
        else                                                                                       \
            for (int64_t q = qa; q < qb; q++)                                                      \
                out[q] = (float)((int32_t)in[q * sw] - xz);                                        \
    }
S_DW_RUN(uint8_t)
S_DW_RUN(int8_t)
#undef S_DW_RUN

#ifdef GX_REQUANT_AVX512
__attribute__((target("avx512f,avx512bw,avx512vl"))) static int64_t
s_dw_run_512(const void *in, int64_t sw, bool sgn, int32_t xz, int64_t qa, int64_t qb,
             float *out)
{
    const __m512i zv = _mm512_set1_epi32(xz);
    int64_t q = qa;
    for (; q + 16 <= qb; q += 16) {
        __m512i v;
        if (sw == 1) {
            const __m128i b = _mm_loadu_si128((const __m128i *)((const char *)in + q));
            v = sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        } else {
            const __m512i w =
                _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi8(0x7FFFFFFF, (const char *)in + 2 * q));
            v = sgn ? _mm512_srai_epi32(_mm512_slli_epi32(w, 24), 24)
                    : _mm512_and_si512(w, _mm512_set1_epi32(0xFF));
        }
        _mm512_storeu_ps(out + q, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zv)));
    }
    return q; /* the first not done */
}
#endif

/* Row ih of a plane of x (IW elements) into the padded copy: padded
 * column c = iw + pl goes to phase c % sw, element c / sw of its row
 * (dst: the row in phase 0; phases plane elements apart). */
static void s_dw_fill(const void *x, bool sgn, int64_t IW, int64_t pl, const s_dw *d,
                      int64_t plane, int32_t xz, float *restrict dst)
{
    for (int64_t ph = 0; ph < d->sw; ph++) {
        /* q with 0 <= q * sw + ph - pl < IW, q < wq */
        int64_t qa = pl > ph ? (pl - ph + d->sw - 1) / d->sw : 0;
        int64_t qb = IW - 1 + pl - ph >= 0 ? (IW - 1 + pl - ph) / d->sw + 1 : 0;
        qb = qb < d->wq ? qb : d->wq;
        const char *in = (const char *)x + ph - pl; /* in[q * sw]: x's column q * sw + ph - pl */
        float *out = dst + ph * plane;
#ifdef GX_REQUANT_AVX512
        if (d->sw <= 2 && qa < qb && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl"))
            qa = s_dw_run_512(in, d->sw, sgn, xz, qa, qb, out);
#endif
        if (sgn)
            s_dw_run_int8_t((const int8_t *)in, d->sw, xz, qa, qb, out);
        else
            s_dw_run_uint8_t((const uint8_t *)in, d->sw, xz, qa, qb, out);
    }
}

/* acc[o] = sum over taps t of wv[t] * x[off[t] + o], for o < n (a
 * multiple of S_DW_V), as int32 (the float sums are exact integers). */
GX_CPU_CLONES static void s_dw_row_any(int64_t n, int taps, const float *restrict wv,
                                       const int64_t *restrict off, const float *restrict x,
                                       int32_t *restrict acc)
{
    for (int64_t o = 0; o < n; o += S_DW_V) {
        s_dwv s = {0};
        for (int t = 0; t < taps; t++)
            s += wv[t] * *(const s_dwv *)(x + off[t] + o);
        *(s_dwi *)(acc + o) = __builtin_convertvector(s, s_dwi);
    }
}

#ifdef GX_REQUANT_AVX512
/* s_dw_row_any in two ymm of 8 sums: GCC's AVX2 clone of s_dw_row_any keeps
 * its 64-byte vector on the stack, moved a quadword at a time. The same
 * products and sums, in the same order. */
__attribute__((target("avx2"))) static void s_dw_row_avx2(int64_t n, int taps,
                                                           const float *restrict wv,
                                                           const int64_t *restrict off,
                                                           const float *restrict x,
                                                           int32_t *restrict acc)
{
    for (int64_t o = 0; o < n; o += S_DW_V) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (int t = 0; t < taps; t++) {
            const __m256 wt = _mm256_set1_ps(wv[t]);
            const float *xt = x + off[t] + o;
            s0 = _mm256_add_ps(s0, _mm256_mul_ps(wt, _mm256_loadu_ps(xt)));
            s1 = _mm256_add_ps(s1, _mm256_mul_ps(wt, _mm256_loadu_ps(xt + 8)));
        }
        _mm256_storeu_si256((__m256i *)(acc + o), _mm256_cvttps_epi32(s0));
        _mm256_storeu_si256((__m256i *)(acc + o + 8), _mm256_cvttps_epi32(s1));
    }
}
#endif

/* s_dw_row_any, or s_dw_row_avx2 where the GEMM runs AVX2
 * (gx_cpu_gemm_isa; tests set it to take each path): the same sums. */
typedef void (*s_dw_row_fn)(int64_t n, int taps, const float *restrict wv,
                            const int64_t *restrict off, const float *restrict x,
                            int32_t *restrict acc);

static s_dw_row_fn s_dw_row_pick(void)
{
#ifdef GX_REQUANT_AVX512
    if (!strcmp(gx_cpu_gemm_isa(), "avx2"))
        return s_dw_row_avx2;
#endif
    return s_dw_row_any;
}

/* What a QLinearConv's output channel is requantized with, and where its
 * sums go (y: the element offsets of s_qout_put count from there). */
typedef struct s_qout {
    double bias;
    float scale;
    int32_t yz, lo, hi;
    void *y;
    bool s8;
} s_qout;

/* o for output channel oc of k's QLinearConv (x_scale xs, y_scale ys). */
static void s_qout_channel(s_qout *o, const gx_kargs *k, int64_t oc, float xs, float ys)
{
    const int32_t *bias = k->n_in > 8 && k->in[8].ndim >= 0 ? k->in[8].data : NULL;
    const float *wsc = k->in[4].data;
    o->bias = bias ? bias[oc] : 0;
    o->scale = xs * wsc[k->in[4].numel > 1 ? oc : 0] / ys;
}

/* n sums of acc into y + e, requantized as o says. */
static void s_qout_put(const s_qout *o, int64_t n, const int32_t *acc, int64_t e)
{
    s_qstore(n, acc, o->bias, o->scale, o->yz, o->lo, o->hi, o->s8, (char *)o->y + e);
}

/* Plane ch of image n into o->y: the padded copy, then each output row's
 * sums (acc: d->ow16 of them) requantized. */
static void s_qlinear_dw(const s_qconv *q, const s_dw *d, int64_t n, int64_t ch, int32_t wzp,
                         int32_t *restrict acc, float *restrict xp, const s_qout *o)
{
    const gx_win *w = &q->w;
    const bool xs = q->x->dtype == GX_I8;
    const int64_t IH = w->in[0], IW = w->in[1], plane = d->rows * d->wq;
    /* xp[ph][r][c]: padded column c * sw + ph of padded row r */
    memset(xp, 0, (size_t)(d->sw * plane + d->ow16) * sizeof *xp);
    const int64_t base = (n * q->c + ch) * w->in_size;
    for (int64_t ih = 0; ih < IH; ih++) {
        float *dst = xp + (ih + w->pad_lo[0]) * d->wq;
        s_dw_fill((const char *)q->x->data + base + ih * IW, xs, IW, w->pad_lo[1], d, plane,
                  q->xzp, dst);
    }
    /* the taps' weights and their offsets from an output row's first
     * element in the copy (row 0 of its phase) */
    float wv[S_DW_TAPS];
    int64_t off[S_DW_TAPS];
    int taps = 0;
    for (int64_t kh = 0; kh < w->k[0]; kh++)
        for (int64_t kw = 0; kw < w->k[1]; kw++) {
            const int64_t col = kw * w->dil[1];
            const int32_t v =
                s_q8(q->wt->data, q->wt->dtype == GX_I8, ch * w->k_size + kh * w->k[1] + kw) - wzp;
            if (v) {
                wv[taps] = (float)v;
                off[taps++] = col % d->sw * plane + kh * w->dil[0] * d->wq + col / d->sw;
            }
        }
    const int64_t ow = w->out[1];
    const s_dw_row_fn dw_row = s_dw_row_pick();
    for (int64_t oh = 0; oh < w->out[0]; oh++) {
        dw_row(d->ow16, taps, wv, off, xp + oh * w->stride[0] * d->wq, acc);
        s_qout_put(o, ow, acc, oh * ow);
    }
}

/* Direct, as ConvInteger (lines of int32 sums), each line requantized:
 * exact sums of (x - x_zp)(w - w_zp[m]) plus B[m], scaled by x_scale *
 * w_scale[m] / y_scale (float32, then the product in double), rounded
 * half to even, plus y_zp, saturated. The share is a range of output
 * lines over (image, output channel, line). Constant weights of group 1
 * take the packed kernels instead (ops/cpu/qgemm.c). */
void gx_cpu_QLINEAR_CONV(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *wt = &k->in[3], *y = &k->out[0];
    s_qconv q = {.x = x, .wt = wt, .c = x->shape[1]};
    gx_win_init(&q.w, k->attr, "QLinearConv", x, wt->shape + 2, false, false, NULL, 0);
    const int64_t m = wt->shape[0];
    q.cg = wt->shape[1], q.mg = m / k->attr[GX_QLINEARCONV_GROUP].i;
    q.xzp = s_q8(k->in[2].data, k->in[2].dtype == GX_I8, 0);
    const gx_view *wz = k->n_in > 5 && k->in[5].ndim >= 0 ? &k->in[5] : NULL;
    const float xs = *(const float *)k->in[1].data, ys = *(const float *)k->in[6].data;
    const int32_t yz =
        k->n_in > 7 && k->in[7].ndim >= 0 ? s_q8(k->in[7].data, k->in[7].dtype == GX_I8, 0) : 0;
    const bool s8 = y->dtype == GX_I8, wide = q.cg * q.w.k_size > S_QTAPS_INT32;
    const int64_t ow = q.w.out[q.w.nsp - 1], lines = ow > 0 ? q.w.out_size / ow : 0;
    int64_t lo, hi;
    s_dw dw;
    int32_t acc[S_QCOLS];
    s_qout o = {.yz = yz, .lo = s8 ? -128 : 0, .hi = s8 ? 127 : 255, .s8 = s8, .y = y->data};
    if (q.cg == 1 && q.mg == 1 && !wide && ow <= S_QCOLS && s_dw_fits(&q.w, &dw)) {
        float xp[S_DW_ELEMS];
        gx_cpu_share(k, x->shape[0] * m, 1, &lo, &hi);
        for (int64_t u = lo; u < hi; u++) {
            const int64_t oc = u % m;
            const int32_t wzp =
                !wz ? 0 : s_q8(wz->data, wz->dtype == GX_I8, wz->numel > 1 ? oc : 0);
            s_qout_channel(&o, k, oc, xs, ys);
            o.y = (char *)y->data + u * q.w.out_size; /* the channel's plane */
            s_qlinear_dw(&q, &dw, u / m, oc, wzp, acc, xp, &o);
        }
        return;
    }
    gx_cpu_share(k, x->shape[0] * m * lines, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t line = u % lines, ch = u / lines, oc = ch % m;
        const int32_t wzp = !wz ? 0 : s_q8(wz->data, wz->dtype == GX_I8, wz->numel > 1 ? oc : 0);
        const int64_t e0 = ch * q.w.out_size + line * ow;
        s_qout_channel(&o, k, oc, xs, ys);
        for (int64_t o0 = 0; o0 < ow; o0 += S_QCOLS) {
            const int64_t o1 = ow - o0 < S_QCOLS ? ow : o0 + S_QCOLS;
            if (wide) /* exact in int64, element by element */
                for (int64_t c = o0; c < o1; c++) {
                    const int64_t v = s_qlinear_wide(&q, ch / m, oc, line * ow + c, wzp);
                    const double f = rint(((double)v + o.bias) * o.scale) + yz;
                    const double r = f > o.lo ? (f < o.hi ? f : o.hi) : o.lo;
                    if (s8)
                        ((int8_t *)y->data)[e0 + c] = (int8_t)r;
                    else
                        ((uint8_t *)y->data)[e0 + c] = (uint8_t)r;
                }
            else {
                s_qline(&q, ch / m, oc, line, wzp, o0, o1, acc);
                s_qout_put(&o, o1 - o0, acc, e0 + o0);
            }
        }
    }
}

/* ---- Col2Im ---- */

/* Sums each column of the input into the image position its block and
 * kernel offset address (gx_col2im): a share is a range of (image,
 * channel) planes, each zeroed and then accumulated in one fixed order,
 * kernel offset by offset and block by block, the last dim's blocks as a
 * run clipped to the image beforehand. */
void gx_cpu_COL2IM(const gx_kargs *k)
{
    char err[160];
    gx_infer ic = {.attr = k->attr, .n_in = k->n_in, .in = k->in, .err = err,
                   .errlen = sizeof err};
    gx_col2im g;
    if (gx_col2im_setup(&ic, &g) != GX_OK)
        return; /* checked by infer */
    const int n = g.n, last = n - 1;
    const int64_t planes = k->out[0].shape[0] * g.channels;
    const int64_t plane = gx_shape_numel(n, g.image, INT64_MAX);
    const int64_t runs = g.nblocks / g.cols[last];
    const int64_t s = g.stride[last], p = g.pads[last], img = g.image[last];
    int64_t lo, hi;
    gx_cpu_share(k, planes, 1, &lo, &hi);
    for (int64_t pi = lo; pi < hi; pi++) {
        float *restrict y = (float *)k->out[0].data + pi * plane;
        const float *col = (const float *)k->in[0].data + pi * g.kprod * g.nblocks;
        memset(y, 0, (size_t)plane * sizeof *y);
        for (int64_t ki = 0; ki < g.kprod; ki++) {
            int64_t kd[GX_MAX_DIMS], rem = ki;
            for (int d = last; d >= 0; d--) {
                kd[d] = rem % g.block[d];
                rem /= g.block[d];
            }
            /* blocks b along the last dim land at b * s - p + kd * dil */
            const int64_t shift = kd[last] * g.dil[last] - p;
            int64_t b0 = shift >= 0 ? 0 : (-shift + s - 1) / s;
            int64_t b1 = img - 1 - shift < 0 ? 0 : (img - 1 - shift) / s + 1;
            if (b1 > g.cols[last])
                b1 = g.cols[last];
            for (int64_t ri = 0; ri < runs && b0 < b1; ri++) {
                /* the outer dims' block index and image offset */
                int64_t off = 0, stride = img, rr = ri;
                bool inside = true;
                for (int d = last - 1; d >= 0; d--) {
                    const int64_t bd = rr % g.cols[d];
                    rr /= g.cols[d];
                    const int64_t im = bd * g.stride[d] - g.pads[d] + kd[d] * g.dil[d];
                    inside = inside && im >= 0 && im < g.image[d];
                    off += im * stride;
                    stride *= g.image[d];
                }
                if (!inside)
                    continue;
                const float *restrict c = col + ki * g.nblocks + ri * g.cols[last];
                const int64_t at = off + shift; /* + b * s >= 0 for b >= b0 */
                for (int64_t b = b0; b < b1; b++)
                    y[at + b * s] += c[b];
            }
        }
    }
}
