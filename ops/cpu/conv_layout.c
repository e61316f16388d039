/*
 * Conv in the NHWC and NCHW16c layouts (ops/layout.h): float32, 2-D,
 * group 1 or depthwise (group == C == M), constant weights packed once per
 * plan. Depthwise runs directly in both layouts, vectorised over channels
 * (contiguous in NHWC, the 16 of a block in NCHW16c), without scratch.
 *
 * NHWC: the output is a matrix [positions (n, oh, ow), M]. Positions are
 * taken in tiles; a tile's im2col rows (one per position, kh * kw * C
 * floats: for each tap the C channels of x it reads, contiguous in NHWC, or
 * zeros in the padding) go to the share's slot of the scratch, and the
 * packed product (ops/gemm.h) against the weights, packed as B [kh * kw *
 * C, M] in 16-column panels (M rounded up), writes the tile's output rows
 * directly. A 1x1 window with stride 1 and no padding reads x's
 * rows as they are: no im2col, no scratch.
 *
 * NCHW16c: a direct convolution. An output row (n, m-block, oh) is walked
 * in runs of R columns, each run keeping R accumulators of 16 output
 * channels; every (input channel, tap) broadcasts one x element per column
 * and adds it times the 16 weights of the packed block [M/16][C/16][kh][kw]
 * [16 c][16 m]. Every output element sums its products in the same order
 * (input block, kh, kw, channel; taps in the padding skipped) whatever R
 * and the ISA are, so the results are the same bits on every path and for
 * every nth.
 *
 * Shares (gx_cpu_conv_layout_rows): NHWC, chunks of S_CHUNK positions, at
 * most GX_CONV_LAYOUT_SHARES shares with work; NCHW16c, output rows (n,
 * m-block, oh). Each share writes one contiguous range of the output.
 */
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/gemm.h"
#include "ops/layout.h"

#define S_CHUNK 256                   /* NHWC: positions per unit of the share split */
#define S_SLOT_BYTES (1024 * 1024)    /* NHWC: im2col of a tile, at most (unless one row is more) */
#define S_B GX_LAYOUT_BLOCK /* channels of a block */

/* ---- shared geometry ---- */

/* The node's geometry from the kernel's physical views: logical x, the
 * window from the packed weights' shape (which keeps kh, kw). */
static void s_geometry(gx_layout l, const gx_kargs *k, gx_win *w, int64_t *c, int64_t *m)
{
    const gx_view x = gx_layout_logical(&k->in[0]);
    const int64_t *ps = k->in[1].shape;
    const bool nhwc = l == GX_LAYOUT_NHWC;
    const int64_t ks[2] = {nhwc ? ps[0] : ps[2], nhwc ? ps[1] : ps[3]};
    gx_win_init(w, k->attr, "Conv", &x, ks, false, false, NULL, 0);
    *c = x.shape[1];
    *m = nhwc ? k->out[0].shape[3] : ps[0] * S_B; /* NHWC: M may be padded in the weights */
}

/* Is the window a 1x1 with stride 1 and no padding (x's rows are im2col's)? */
static bool s_pointwise(const gx_win *w)
{
    return gx_conv_path_of(w, 1, 1) == GX_CONV_POINTWISE;
}

/* NHWC positions per tile: a power of two <= S_CHUNK whose im2col rows of
 * kc floats fit S_SLOT_BYTES (at least 1); S_CHUNK when there is no im2col.
 * Tiles start at multiples of it, and so does every share's range, so the
 * tiles (and their products) are the same for every nth. */
static int64_t s_tile(const gx_win *w, int64_t kc)
{
    if (s_pointwise(w))
        return S_CHUNK;
    int64_t t = S_CHUNK;
    while (t > 1 && t * kc * (int64_t)sizeof(float) > S_SLOT_BYTES)
        t /= 2;
    return t;
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

/* ---- NHWC: im2col tiles and sgemm ---- */

/* im2col rows of positions [p0, p1) (over n, oh, ow) of x [N, H, W, C]:
 * row q = (kh, kw, c) taps, kc = kh * kw * C floats each. */
/* n floats from src to dst: a loop for the few floats of a small C (a
 * call to memcpy costs more than the copy), memcpy above. */
static inline void s_copy(float *restrict dst, const float *restrict src, int64_t n)
{
    if (n > 32) {
        memcpy(dst, src, (size_t)n * sizeof *dst);
        return;
    }
    for (int64_t e = 0; e < n; e++)
        dst[e] = src[e];
}

static void s_im2col_nhwc(const gx_win *w, int64_t c, const float *x, int64_t p0, int64_t p1,
                          float *col)
{
    const int64_t oh = w->out[0], ow = w->out[1], ih = w->in[0], iw = w->in[1];
    const int64_t kc = w->k_size * c, kw = w->k[1];
    for (int64_t p = p0; p < p1; p++) {
        const int64_t n = p / (oh * ow), y0 = p / ow % oh, x0 = p % ow;
        float *row = col + (p - p0) * kc;
        const int64_t j0 = x0 * w->stride[1] - w->pad_lo[1];
        /* a window row inside x along W with dilation 1: kw * C contiguous floats */
        const bool whole = w->dil[1] == 1 && j0 >= 0 && j0 + kw <= iw;
        for (int64_t a = 0; a < w->k[0]; a++) {
            const int64_t i = y0 * w->stride[0] - w->pad_lo[0] + a * w->dil[0];
            if (i < 0 || i >= ih) {
                memset(row, 0, (size_t)(kw * c) * sizeof *row);
                row += kw * c;
                continue;
            }
            const float *xr = x + (n * ih + i) * iw * c;
            if (whole) {
                s_copy(row, xr + j0 * c, kw * c);
                row += kw * c;
                continue;
            }
            for (int64_t b = 0; b < kw; b++, row += c) {
                const int64_t j = j0 + b * w->dil[1];
                if (j < 0 || j >= iw)
                    memset(row, 0, (size_t)c * sizeof *row);
                else
                    s_copy(row, xr + j * c, c);
            }
        }
    }
}

/* Depthwise (group == C == M): each position's M channels add their taps'
 * x channels times the taps' weights [kh, kw, 1, M], taps in order. */
GX_CPU_CLONES static void s_dw_nhwc(const gx_win *w, int64_t m, const float *x, const float *wp,
                                    const float *bias, float *y, int64_t lo, int64_t hi)
{
    const int64_t oh = w->out[0], ow = w->out[1], ih = w->in[0], iw = w->in[1];
    for (int64_t p = lo; p < hi; p++) {
        const int64_t n = p / (oh * ow), y0 = p / ow % oh, x0 = p % ow;
        float *restrict yp = y + p * m;
        for (int64_t c = 0; c < m; c++)
            yp[c] = bias ? bias[c] : 0.0f;
        for (int64_t a = 0; a < w->k[0]; a++) {
            const int64_t i = y0 * w->stride[0] - w->pad_lo[0] + a * w->dil[0];
            if (i < 0 || i >= ih)
                continue;
            for (int64_t b = 0; b < w->k[1]; b++) {
                const int64_t j = x0 * w->stride[1] - w->pad_lo[1] + b * w->dil[1];
                if (j < 0 || j >= iw)
                    continue;
                const float *restrict xp = x + ((n * ih + i) * iw + j) * m;
                const float *restrict wt = wp + (a * w->k[1] + b) * m;
                for (int64_t c = 0; c < m; c++)
                    yp[c] += xp[c] * wt[c];
            }
        }
    }
}

/* Share: positions [c0 * S_CHUNK, c1 * S_CHUNK) in tiles; im2col into the
 * share's slot (slot < min(chunks, GX_CONV_LAYOUT_SHARES): its own index,
 * or its first chunk when there are fewer chunks than shares, which no
 * other share with work has). */
static void s_conv_nhwc(const gx_kargs *k)
{
    gx_win w;
    int64_t c, m;
    s_geometry(GX_LAYOUT_NHWC, k, &w, &c, &m);
    const float *x = k->in[0].data, *wp = k->in[1].data;
    const float *bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL;
    float *y = k->out[0].data;
    const int64_t p = k->out[0].shape[0] * w.out_size, kc = w.k_size * c;
    const int64_t chunks = (p + S_CHUNK - 1) / S_CHUNK;
    const int64_t eff = k->nth < GX_CONV_LAYOUT_SHARES ? k->nth : GX_CONV_LAYOUT_SHARES;
    int64_t c0, c1;
    s_nhwc_chunks(p, k->ith, k->nth, &c0, &c1);
    const int64_t lo = c0 * S_CHUNK, hi = c1 * S_CHUNK < p ? c1 * S_CHUNK : p;
    if (k->attr[GX_CONV_GROUP].i > 1) {
        s_dw_nhwc(&w, m, x, wp, bias, y, lo, hi);
        return;
    }
    const bool pw = s_pointwise(&w);
    const int64_t t = s_tile(&w, kc);
    const int64_t slot = chunks >= eff ? k->ith : c0;
    float *col = pw || lo >= hi ? NULL : (float *)k->scratch + slot * t * kc;
    for (int64_t p0 = lo; p0 < hi; p0 += t) {
        const int64_t p1 = p0 + t < hi ? p0 + t : hi, rows = p1 - p0;
        float *yt = y + p0 * m;
        for (int64_t r = 0; bias && r < rows; r++)
            memcpy(yt + r * m, bias, (size_t)m * sizeof *yt);
        const float *a = x + p0 * c;
        if (!pw) {
            s_im2col_nhwc(&w, c, x, p0, p1, col);
            a = col;
        }
        if (kc == 0) {
            if (!bias)
                memset(yt, 0, (size_t)(rows * m) * sizeof *yt);
            continue;
        }
        gx_cpu_gemm_packed_rows(rows, m, kc, a, kc, wp, yt, m, bias != NULL);
    }
}

/* ---- NCHW16c: direct ---- */

typedef float s_v16 __attribute__((vector_size(64), aligned(4)));

typedef struct s_c16 {
    gx_win w;
    int64_t cb, mb;     /* input and output channel blocks */
    bool depthwise;     /* group == C == M: block mb reads input block mb only */
    const float *x, *wp, *bias;
    float *y;
} s_c16;

/* One run of R output columns [o0, o0 + R) of output row (image n, block
 * mb, line oh) into yr (the row's start). Taps whose x column lies in the
 * padding for some columns of the run take the checked loop. */
#define S_RUN(R)                                                                                   \
    static inline __attribute__((always_inline)) void s_run##R(const s_c16 *cv, int64_t n,         \
                                                               int64_t mb, int64_t oh,             \
                                                               int64_t o0, float *yr)              \
    {                                                                                              \
        const gx_win *w = &cv->w;                                                                  \
        const int64_t ih = w->in[0], iw = w->in[1], kh = w->k[0], kw = w->k[1];                    \
        const int64_t s16 = w->stride[1] * S_B;                                                    \
        s_v16 acc[R];                                                                              \
        s_v16 b0 = {0};                                                                            \
        if (cv->bias)                                                                              \
            memcpy(&b0, cv->bias + mb * S_B, sizeof b0);                                           \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) acc[r] = b0;                          \
        for (int64_t cb = 0; cb < cv->cb; cb++) {                                                  \
            for (int64_t a = 0; a < kh; a++) {                                                     \
                const int64_t i = oh * w->stride[0] - w->pad_lo[0] + a * w->dil[0];                \
                if (i < 0 || i >= ih)                                                              \
                    continue;                                                                      \
                const float *xr = cv->x + ((n * cv->cb + cb) * ih + i) * iw * S_B;                 \
                const float *wk = cv->wp + ((mb * cv->cb + cb) * kh + a) * kw * S_B * S_B;         \
                for (int64_t b = 0; b < kw; b++) {                                                 \
                    const int64_t j0 = o0 * w->stride[1] - w->pad_lo[1] + b * w->dil[1];           \
                    const float *xo = xr + j0 * S_B;                                               \
                    const float *wt = wk + b * S_B * S_B;                                          \
                    if (j0 >= 0 && j0 + (R - 1) * w->stride[1] < iw) {                             \
                        for (int c = 0; c < S_B; c++) {                                            \
                            s_v16 wv;                                                              \
                            memcpy(&wv, wt + c * S_B, sizeof wv);                                  \
                            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                   \
                                acc[r] += xo[r * s16 + c] * wv;                                    \
                        }                                                                          \
                    } else {                                                                       \
                        for (int c = 0; c < S_B; c++) {                                            \
                            s_v16 wv;                                                              \
                            memcpy(&wv, wt + c * S_B, sizeof wv);                                  \
                            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                 \
                                const int64_t j = j0 + r * w->stride[1];                           \
                                if (j >= 0 && j < iw)                                              \
                                    acc[r] += xo[r * s16 + c] * wv;                                \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                       \
            memcpy(yr + (o0 + r) * S_B, &acc[r], sizeof acc[r]);                                   \
    }

S_RUN(8)
S_RUN(4)
S_RUN(2)
S_RUN(1)

/* Depthwise, output row (n, mb, oh): each column's 16 channels add their
 * taps' 16 x channels times the taps' weights [kh, kw, 16], taps in
 * order. */
static inline __attribute__((always_inline)) void s_dw_row(const s_c16 *cv, int64_t n,
                                                           int64_t mb, int64_t oh, float *yr)
{
    const gx_win *w = &cv->w;
    const int64_t ih = w->in[0], iw = w->in[1], kh = w->k[0], kw = w->k[1];
    const float *xn = cv->x + (n * cv->cb + mb) * ih * iw * S_B, *wm = cv->wp + mb * kh * kw * S_B;
    s_v16 b0 = {0};
    if (cv->bias)
        memcpy(&b0, cv->bias + mb * S_B, sizeof b0);
    for (int64_t o = 0; o < w->out[1]; o++) {
        s_v16 acc = b0;
        for (int64_t a = 0; a < kh; a++) {
            const int64_t i = oh * w->stride[0] - w->pad_lo[0] + a * w->dil[0];
            if (i < 0 || i >= ih)
                continue;
            for (int64_t b = 0; b < kw; b++) {
                const int64_t j = o * w->stride[1] - w->pad_lo[1] + b * w->dil[1];
                if (j < 0 || j >= iw)
                    continue;
                s_v16 xv, wv;
                memcpy(&xv, xn + (i * iw + j) * S_B, sizeof xv);
                memcpy(&wv, wm + (a * kw + b) * S_B, sizeof wv);
                acc += xv * wv;
            }
        }
        memcpy(yr + o * S_B, &acc, sizeof acc);
    }
}

/* Does the CPU run the AVX-512 clone (room for 8 accumulators of 16)? */
static bool s_wide(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

/* Output rows [r0, r1) over (n, mb, oh). */
GX_CPU_CLONES static void s_rows16(const s_c16 *cv, int64_t r0, int64_t r1, bool wide)
{
    const int64_t oh = cv->w.out[0], ow = cv->w.out[1];
    for (int64_t r = r0; r < r1; r++) {
        const int64_t n = r / (cv->mb * oh), mb = r / oh % cv->mb, h = r % oh;
        float *yr = cv->y + r * ow * S_B;
        if (cv->depthwise) {
            s_dw_row(cv, n, mb, h, yr);
            continue;
        }
        int64_t o = 0;
        if (wide) {
            for (; o + 8 <= ow; o += 8)
                s_run8(cv, n, mb, h, o, yr);
        }
        for (; o + 4 <= ow; o += 4)
            s_run4(cv, n, mb, h, o, yr);
        for (; o + 2 <= ow; o += 2)
            s_run2(cv, n, mb, h, o, yr);
        for (; o < ow; o++)
            s_run1(cv, n, mb, h, o, yr);
    }
}

static void s_conv_16c(const gx_kargs *k)
{
    s_c16 cv = {.x = k->in[0].data, .wp = k->in[1].data,
                .bias = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL,
                .y = k->out[0].data};
    int64_t c, m, lo, hi;
    s_geometry(GX_LAYOUT_NCHW16C, k, &cv.w, &c, &m);
    cv.cb = c / S_B;
    cv.mb = m / S_B;
    cv.depthwise = k->attr[GX_CONV_GROUP].i > 1;
    gx_cpu_share(k, k->out[0].shape[0] * cv.mb * cv.w.out[0], 1, &lo, &hi);
    s_rows16(&cv, lo, hi, s_wide());
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
    const int64_t g = ic->attr[GX_CONV_GROUP].i;
    if (g != 1 && !(g == x->shape[1] && g == wt->shape[0])) {
        snprintf(why, len, "%s: Conv with group %lld (only group 1, or depthwise: group == C == M)",
                 name, (long long)g);
        return NULL;
    }
    if (!wt->data) {
        snprintf(why, len, "%s: Conv weights are not a constant (they are packed at compile time)",
                 name);
        return NULL;
    }
    if (l == GX_LAYOUT_NCHW16C && (x->shape[1] % S_B || wt->shape[0] % S_B)) {
        snprintf(why, len, "%s: Conv with %lld input and %lld output channels (both must be "
                 "multiples of %d)", name, (long long)x->shape[1], (long long)wt->shape[0], S_B);
        return NULL;
    }
    return l == GX_LAYOUT_NHWC ? s_conv_nhwc : s_conv_16c;
}

size_t gx_cpu_conv_layout_scratch(gx_layout l, const gx_infer *ic)
{
    if (l != GX_LAYOUT_NHWC)
        return 0;
    const gx_view *x = &ic->in[0];
    gx_win w;
    gx_win_init(&w, ic->attr, "Conv", x, ic->in[1].shape + 2, false, false, NULL, 0);
    if (s_pointwise(&w) || ic->attr[GX_CONV_GROUP].i > 1)
        return 0;
    const int64_t kc = w.k_size * x->shape[1], p = x->shape[0] * w.out_size;
    const int64_t chunks = (p + S_CHUNK - 1) / S_CHUNK;
    const int64_t slots = chunks < GX_CONV_LAYOUT_SHARES ? chunks : GX_CONV_LAYOUT_SHARES;
    return (size_t)(slots * s_tile(&w, kc) * kc) * sizeof(float);
}

void gx_cpu_conv_pack_shape(gx_layout l, const gx_attrval *attr, const gx_view *w,
                            gx_view *packed)
{
    const int64_t m = w->shape[0], c = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    const bool dw = attr[GX_CONV_GROUP].i > 1;
    *packed = *w;
    packed->data = NULL;
    if (l == GX_LAYOUT_NHWC) { /* group 1: M rounded up to whole panels */
        const int64_t mp = dw ? m : (m + GX_GEMM_PANEL - 1) / GX_GEMM_PANEL * GX_GEMM_PANEL;
        packed->ndim = 4;
        memcpy(packed->shape, (int64_t[]){kh, kw, c, mp}, 4 * sizeof(int64_t));
        packed->numel = kh * kw * c * mp;
        return;
    } else {
        packed->ndim = 6;
        memcpy(packed->shape, (int64_t[]){m / S_B, dw ? 1 : c / S_B, kh, kw, dw ? 1 : S_B, S_B},
               6 * sizeof(int64_t));
    }
    packed->numel = w->numel;
}

void gx_cpu_conv_pack(gx_layout l, const gx_attrval *attr, const gx_view *w,
                      const gx_view *packed)
{
    const int64_t m = w->shape[0], c = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    const float *src = w->data;
    float *dst = packed->data;
    if (attr[GX_CONV_GROUP].i > 1) { /* depthwise, c == 1: [kh, kw, M] or [M/16, kh, kw, 16] */
        for (int64_t o = 0; o < m; o++)
            for (int64_t t = 0; t < kh * kw; t++)
                dst[l == GX_LAYOUT_NHWC ? t * m + o : (o / S_B * kh * kw + t) * S_B + o % S_B] =
                    src[o * kh * kw + t];
        return;
    }
    const int64_t kc = kh * kw * c, P = GX_GEMM_PANEL;
    if (l == GX_LAYOUT_NHWC) /* the padding of the last panel */
        memset(dst, 0, (size_t)((m + P - 1) / P * P * kc) * sizeof *dst);
    for (int64_t o = 0; o < m; o++) {
        for (int64_t i = 0; i < c; i++) {
            for (int64_t a = 0; a < kh; a++) {
                for (int64_t b = 0; b < kw; b++) {
                    const float v = src[((o * c + i) * kh + a) * kw + b];
                    if (l == GX_LAYOUT_NHWC) /* B [kc, M] in panels (ops/gemm.h) */
                        dst[(o / P * kc + (a * kw + b) * c + i) * P + o % P] = v;
                    else
                        dst[((((o / S_B * (c / S_B) + i / S_B) * kh + a) * kw + b) * S_B +
                             i % S_B) * S_B + o % S_B] = v;
                }
            }
        }
    }
}
