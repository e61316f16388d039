/*
 * Layouts of 4-D tensors (ops/layout.h): shapes, reorders, operands of
 * elementwise ops, and which CPU kernel runs an op in a layout.
 */
#include <stdio.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/layout.h"

const char *gx_layout_name(gx_layout l)
{
    switch (l) {
    case GX_LAYOUT_PLAIN: return "nchw";
    case GX_LAYOUT_NHWC: return "nhwc";
    case GX_LAYOUT_NCHW16C: return "nchw16c";
    case GX_LAYOUT_COUNT: break;
    }
    return "?";
}

bool gx_layout_fits(gx_layout l, const gx_view *x)
{
    if (l == GX_LAYOUT_PLAIN)
        return true;
    if (x->ndim != 4 || x->layout != GX_LAYOUT_PLAIN)
        return false;
    /* bytes (quantized activations) in NHWC only: QLinearConv's layout */
    if (x->dtype == GX_U8 || x->dtype == GX_I8)
        return l == GX_LAYOUT_NHWC;
    if (x->dtype != GX_F32)
        return false;
    return l != GX_LAYOUT_NCHW16C || (x->shape[1] > 0 && x->shape[1] % GX_LAYOUT_BLOCK == 0);
}

gx_view gx_layout_physical(gx_layout l, const gx_view *x)
{
    gx_view v = *x;
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    switch (l) {
    case GX_LAYOUT_PLAIN: break;
    case GX_LAYOUT_NHWC:
        v.shape[1] = h;
        v.shape[2] = w;
        v.shape[3] = c;
        break;
    case GX_LAYOUT_NCHW16C:
        v.ndim = 5;
        v.shape[0] = n;
        v.shape[1] = c / GX_LAYOUT_BLOCK;
        v.shape[2] = h;
        v.shape[3] = w;
        v.shape[4] = GX_LAYOUT_BLOCK;
        break;
    case GX_LAYOUT_COUNT: break;
    }
    v.layout = l;
    return v;
}

void gx_layout_dims(const gx_view *v, int64_t d[4])
{
    const int64_t *s = v->shape;
    switch (v->layout) {
    case GX_LAYOUT_NHWC:
        d[0] = s[0], d[1] = s[3], d[2] = s[1], d[3] = s[2];
        return;
    case GX_LAYOUT_NCHW16C:
        d[0] = s[0], d[1] = s[1] * s[4], d[2] = s[2], d[3] = s[3];
        return;
    case GX_LAYOUT_PLAIN:
    case GX_LAYOUT_COUNT: break;
    }
    d[0] = s[0], d[1] = s[1], d[2] = s[2], d[3] = s[3];
}

gx_view gx_layout_logical(const gx_view *v)
{
    gx_view x = *v;
    if (v->layout != GX_LAYOUT_PLAIN) {
        x.ndim = 4;
        gx_layout_dims(v, x.shape);
        x.layout = GX_LAYOUT_PLAIN;
    }
    return x;
}

/* A reorder is a batch of transposes: m matrices of r x k items (an item
 * is ib bytes: one element, or a 16-channel block of them), matrix i at
 * byte i * mstride in both x and y, item (a, b) at (a * k + b) in x and
 * (b * r + a) in y. Shares are tiles of S_TILE x S_TILE items, so both
 * sides of a tile stay in L1 and every thread gets work even when one
 * side of the matrices is small. */
#define S_TILE 16

typedef struct s_tr {
    int64_t m, r, k;
    size_t ib, mstride;
} s_tr;

/* Items of the tile rows [a0, a1) x columns [b0, b1), stamped per item
 * size (T) so the copies are plain loads and stores. */
#define S_TILE_COPY(name, T)                                                  \
    GX_CPU_CLONES                                                             \
    static void name(const T *restrict x, T *restrict y, int64_t r, int64_t k, int64_t a0,   \
                     int64_t a1, int64_t b0, int64_t b1)                      \
    {                                                                         \
        if (a1 - a0 == S_TILE && b1 - b0 == S_TILE) {                         \
            for (int64_t b = 0; b < S_TILE; b++)                              \
                for (int64_t a = 0; a < S_TILE; a++)                          \
                    y[(b0 + b) * r + a0 + a] = x[(a0 + a) * k + b0 + b];      \
            return;                                                           \
        }                                                                     \
        for (int64_t b = b0; b < b1; b++)                                     \
            for (int64_t a = a0; a < a1; a++)                                 \
                y[b * r + a] = x[a * k + b];                                  \
    }
/* 1-byte items (quantized activations): 16 x 16 blocks transposed in
 * registers by four rounds of byte interleaves in place, rows a and a + d
 * for d = 8, 4, 2, 1 (SSE2, every x86-64), the rest item by item. */
static void s_tile8(const uint8_t *restrict x, uint8_t *restrict y, int64_t r, int64_t k,
                    int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t a = a0;
#ifdef __SSE2__
    for (; a + 16 <= a1; a += 16) {
        int64_t b = b0;
        for (; b + 16 <= b1; b += 16) {
            __m128i v[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                v[i] = _mm_loadu_si128((const __m128i *)(x + (a + i) * k + b));
#pragma GCC unroll 4
            for (int d = 8; d > 0; d /= 2)
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++)
                    if (!(i & d)) {
                        const __m128i lo = _mm_unpacklo_epi8(v[i], v[i + d]);
                        v[i + d] = _mm_unpackhi_epi8(v[i], v[i + d]);
                        v[i] = lo;
                    }
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                _mm_storeu_si128((__m128i *)(y + (b + i) * r + a), v[i]);
        }
        for (; b < b1; b++)
            for (int64_t i = a; i < a + 16; i++)
                y[b * r + i] = x[i * k + b];
    }
#endif
    for (int64_t b = b0; b < b1 && a < a1; b++)
        for (int64_t i = a; i < a1; i++)
            y[b * r + i] = x[i * k + b];
}
S_TILE_COPY(s_tile16, uint16_t)
S_TILE_COPY(s_tile64, uint64_t)

/* 4-byte items: full tiles as four 8 x 8 register transposes (unpack,
 * pair shuffle, 128-bit halves: the usual AVX pattern, which the other
 * clones lower to their own shuffles), the rest item by item. */
typedef uint32_t s_v8 __attribute__((vector_size(8 * sizeof(uint32_t))));
#define S_SHUF(a, b, ...) __builtin_shuffle((a), (b), (s_v8){__VA_ARGS__})

static inline __attribute__((always_inline)) void s_block8(const uint32_t *restrict x,
                                                           uint32_t *restrict y, int64_t lx,
                                                           int64_t ly)
{
    s_v8 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        memcpy(&r[i], x + i * lx, sizeof r[i]);
    for (int i = 0; i < 8; i += 2) {
        t[i] = S_SHUF(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = S_SHUF(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = S_SHUF(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = S_SHUF(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = S_SHUF(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = S_SHUF(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = S_SHUF(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = S_SHUF(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int i = 0; i < 8; i++)
        memcpy(y + i * ly, &r[i], sizeof r[i]);
}

GX_CPU_CLONES
static void s_tile32(const uint32_t *restrict x, uint32_t *restrict y, int64_t r, int64_t k,
                     int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    if (a1 - a0 == S_TILE && b1 - b0 == S_TILE) {
        for (int64_t a = a0; a < a1; a += 8)
            for (int64_t b = b0; b < b1; b += 8)
                s_block8(x + a * k + b, y + b * r + a, k, r);
        return;
    }
    for (int64_t b = b0; b < b1; b++)
        for (int64_t a = a0; a < a1; a++)
            y[b * r + a] = x[a * k + b];
}

typedef struct s_item64 { /* a 16-channel block of float32 */
    uint32_t v[GX_LAYOUT_BLOCK];
} s_item64;
S_TILE_COPY(s_tile512, s_item64)

/* Any other item size: byte copies. */
static void s_tile_bytes(const char *x, char *y, size_t ib, int64_t r, int64_t k, int64_t a0,
                         int64_t a1, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++)
        for (int64_t a = a0; a < a1; a++)
            memcpy(y + (size_t)(b * r + a) * ib, x + (size_t)(a * k + b) * ib, ib);
}

static void s_transpose(const s_tr *t, const char *x, char *y, int ith, int nth)
{
    const int64_t tr = (t->r + S_TILE - 1) / S_TILE, tk = (t->k + S_TILE - 1) / S_TILE;
    const gx_kargs share = {.ith = ith, .nth = nth};
    int64_t lo, hi;
    if (t->ib == 1) { /* bytes: a tile is a few instructions, so a share is whole rows of them */
        gx_cpu_share(&share, t->m * tr, 1, &lo, &hi);
        for (int64_t u = lo; u < hi; u++) {
            const int64_t i = u / tr, a0 = u % tr * S_TILE;
            const int64_t a1 = a0 + S_TILE < t->r ? a0 + S_TILE : t->r;
            s_tile8((const uint8_t *)x + (size_t)i * t->mstride,
                    (uint8_t *)y + (size_t)i * t->mstride, t->r, t->k, a0, a1, 0, t->k);
        }
        return;
    }
    gx_cpu_share(&share, t->m * tr * tk, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t i = u / (tr * tk), a0 = u / tk % tr * S_TILE, b0 = u % tk * S_TILE;
        const int64_t a1 = a0 + S_TILE < t->r ? a0 + S_TILE : t->r;
        const int64_t b1 = b0 + S_TILE < t->k ? b0 + S_TILE : t->k;
        const char *xm = x + (size_t)i * t->mstride;
        char *ym = y + (size_t)i * t->mstride;
        switch (t->ib) {
        case 2: s_tile16((const void *)xm, (void *)ym, t->r, t->k, a0, a1, b0, b1); break;
        case 4: s_tile32((const void *)xm, (void *)ym, t->r, t->k, a0, a1, b0, b1); break;
        case 8: s_tile64((const void *)xm, (void *)ym, t->r, t->k, a0, a1, b0, b1); break;
        case sizeof(s_item64):
            s_tile512((const void *)xm, (void *)ym, t->r, t->k, a0, a1, b0, b1);
            break;
        default: s_tile_bytes(xm, ym, t->ib, t->r, t->k, a0, a1, b0, b1); break;
        }
    }
}

void gx_layout_reorder(const gx_view *x, const gx_view *y, int ith, int nth)
{
    int64_t d[4];
    gx_layout_dims(x, d);
    const size_t es = gx_dtype_size(x->dtype);
    const int64_t n = d[0], c = d[1], hw = d[2] * d[3], cb = c / GX_LAYOUT_BLOCK;
    const gx_layout lx = x->layout, ly = y->layout;
    if (lx == ly) { /* a copy, cut in cache lines */
        const gx_kargs share = {.ith = ith, .nth = nth};
        const int64_t bytes = x->numel * (int64_t)es;
        int64_t lo, hi;
        gx_cpu_share(&share, bytes, 64, &lo, &hi);
        if (lo < hi)
            memcpy((char *)y->data + lo, (const char *)x->data + lo, (size_t)(hi - lo));
        return;
    }
    const size_t image = (size_t)(c * hw) * es, block = GX_LAYOUT_BLOCK * es;
    s_tr t = {.m = n, .ib = es, .mstride = image};
    if (lx == GX_LAYOUT_PLAIN && ly == GX_LAYOUT_NHWC) {
        t.r = c, t.k = hw; /* [C, HW] -> [HW, C] per image */
    } else if (lx == GX_LAYOUT_NHWC && ly == GX_LAYOUT_PLAIN) {
        t.r = hw, t.k = c;
    } else if (lx == GX_LAYOUT_PLAIN && ly == GX_LAYOUT_NCHW16C) {
        /* [16, HW] -> [HW, 16] per block of channels */
        t.m = n * cb, t.r = GX_LAYOUT_BLOCK, t.k = hw, t.mstride = (size_t)hw * block;
    } else if (lx == GX_LAYOUT_NCHW16C && ly == GX_LAYOUT_PLAIN) {
        t.m = n * cb, t.r = hw, t.k = GX_LAYOUT_BLOCK, t.mstride = (size_t)hw * block;
    } else if (lx == GX_LAYOUT_NHWC && ly == GX_LAYOUT_NCHW16C) {
        t.r = hw, t.k = cb, t.ib = block; /* [HW, C/16] -> [C/16, HW] of blocks */
    } else {
        t.r = cb, t.k = hw, t.ib = block; /* 16c -> NHWC */
    }
    s_transpose(&t, x->data, y->data, ith, nth);
}

void gx_cpu_reorder(const gx_kargs *k)
{
    gx_layout_reorder(&k->in[0], &k->out[0], k->ith, k->nth);
}

/* Is c per-channel against [N, C, H, W]: rank <= 4, its dims aligned from
 * the right 1 everywhere but at C, where it has C? */
static bool s_per_channel(const gx_view *c, const int64_t nchw[4])
{
    if (c->ndim < 3 || c->ndim > 4)
        return false;
    for (int i = 0; i < c->ndim; i++) {
        const int d = 4 - c->ndim + i;
        if (c->shape[i] != (d == 1 ? nchw[1] : 1))
            return false;
    }
    return true;
}

static bool s_full(const gx_view *c, const int64_t nchw[4])
{
    return c->ndim == 4 && !memcmp(c->shape, nchw, 4 * sizeof *nchw);
}

bool gx_layout_operand(gx_layout l, const gx_view *c, const int64_t nchw[4], gx_view *out)
{
    if (c->layout != GX_LAYOUT_PLAIN || c->ndim < 0)
        return false;
    gx_view v = *c;
    v.data = NULL;
    if (l == GX_LAYOUT_PLAIN || c->numel == 1) {
        /* as it is */
    } else if (s_full(c, nchw)) {
        v = gx_layout_physical(l, c);
        v.data = NULL;
    } else if (s_per_channel(c, nchw)) {
        v.ndim = l == GX_LAYOUT_NCHW16C ? 5 : 4;
        for (int i = 0; i < v.ndim; i++)
            v.shape[i] = 1;
        if (l == GX_LAYOUT_NHWC) {
            v.shape[3] = nchw[1];
        } else {
            v.shape[1] = nchw[1] / GX_LAYOUT_BLOCK;
            v.shape[4] = GX_LAYOUT_BLOCK;
        }
    } else {
        return false;
    }
    if (out)
        *out = v;
    return true;
}

void gx_layout_operand_fill(gx_layout l, const gx_view *c, const int64_t nchw[4],
                            const gx_view *out)
{
    if (l != GX_LAYOUT_PLAIN && c->numel > 1 && s_full(c, nchw)) {
        gx_layout_reorder(c, out, 0, 1);
        return;
    }
    /* a scalar, or per channel: the channels keep their order in every
     * layout, only the shape changes */
    memcpy(out->data, c->data, (size_t)c->numel * gx_dtype_size(c->dtype));
}

bool gx_layout_sensitive(gx_op op)
{
    return op == GX_OP_CONV || op == GX_OP_MAXPOOL || op == GX_OP_AVERAGEPOOL ||
           op == GX_OP_GLOBALAVERAGEPOOL || op == GX_OP_GLOBALMAXPOOL || op == GX_OP_BATCHNORM ||
           op == GX_OP_INSTANCENORM || op == GX_OP_RESIZE || op == GX_OP_CONCAT ||
           op == GX_OP_QLINEAR_CONV;
}

gx_kernel_fn gx_cpu_layout_kernel(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                  size_t len)
{
    if (l == GX_LAYOUT_PLAIN)
        return gx_cpu_kernel(op);
    if (op == GX_OP_QLINEAR_CONV)
        return gx_cpu_qconv_layout(l, ic, why, len);
    if (op == GX_OP_CONV)
        return gx_cpu_conv_layout(l, ic, why, len);
    if (op == GX_OP_RESIZE)
        return gx_cpu_resize_layout(l, ic, why, len);
    if (op == GX_OP_CONCAT)
        return gx_cpu_concat_layout(l, ic, why, len);
    if (gx_layout_sensitive(op))
        return gx_cpu_pool_layout(op, l, ic, why, len);
    snprintf(why, len, "%s: %s has no kernel for it", gx_layout_name(l), gx_op_name(op));
    return NULL;
}

gx_layout gx_cpu_layout_input(gx_op op, gx_layout l, const gx_infer *ic, int k)
{
    if (op == GX_OP_CONV && k == 0 && l != GX_LAYOUT_PLAIN)
        return gx_cpu_conv_layout_input(l, ic);
    return l;
}

double gx_cpu_layout_factor(gx_op op, gx_layout l, const gx_infer *ic)
{
    if (l == GX_LAYOUT_PLAIN)
        return 1.0;
    const bool nhwc = l == GX_LAYOUT_NHWC;
    /* one AVX-512 core, [1..8, 32..64, 16..32, 16..32] (bench/bench_layout_ops
     * and the pool kernels' timings): windowed pools 7-13x faster in NHWC,
     * 6-10x in NCHW16c; global pools 1.2-3x; BatchNormalization about even */
    if (op == GX_OP_MAXPOOL || op == GX_OP_AVERAGEPOOL)
        return nhwc ? 0.13 : 0.16;
    if (op == GX_OP_GLOBALAVERAGEPOOL || op == GX_OP_GLOBALMAXPOOL)
        return 0.5;
    if (op == GX_OP_BATCHNORM)
        return nhwc ? 0.8 : 0.95;
    if (op == GX_OP_INSTANCENORM) /* three strided passes against three row passes: even */
        return 1.0;
    if (op == GX_OP_CONCAT) /* the same copies, in runs of a pixel's channels in NHWC */
        return nhwc ? 1.1 : 1.0;
    if (op == GX_OP_QLINEAR_CONV && ic->n_in > 3 && ic->in[3].ndim == 4) {
        /* bench/bench_layout_ops q, MobileNetV2's blocks (7x7 to 56x56)
         * on one AVX-512 VNNI core, against the NCHW kernels (qgemm's
         * direct one, ops/cpu/conv.c's depthwise planes): 1x1 widening
         * 0.54-0.66, narrowing 0.28-0.44; depthwise 3x3 0.44-0.48, at
         * stride 2 0.23-0.29. On one Zen 3 core (AVX2 + FMA kernels,
         * 56x56, a shared machine: best of runs) 0.42-0.56, 0.42-0.61,
         * 0.37-0.52 and 0.34-0.36: the same factors serve */
        const gx_view *w = &ic->in[3];
        const bool dw = w->shape[1] == 1 && ic->attr[GX_QLINEARCONV_GROUP].i > 1;
        const gx_attrval *st = &ic->attr[GX_WIN_STRIDES];
        const bool strided = st->n > 0 && st->ints[0] > 1;
        if (dw)
            return strided ? 0.3 : 0.5;
        return w->shape[0] > ic->in[0].shape[1] ? 0.65 : 0.4;
    }
    if (op == GX_OP_RESIZE) /* a memcpy of C floats per pixel against a gather per element */
        return 0.5;
    if (op == GX_OP_CONV && ic->n_in >= 2 && ic->in[1].ndim == 4) {
        /* bench/bench_layout_ops, one AVX-512 core, against NCHW's im2col
         * and sgemm: both layouts run the same direct kernels
         * (ops/cpu/conv_layout.c): 3x3 0.18-0.39 (a first conv, 3
         * channels read in NCHW, 0.22-0.37), 1x1 0.45-0.74, depthwise
         * 0.04-0.11 (NCHW16c a little slower: one block per call). Without
         * AVX-512 they run AVX2 + FMA kernels (one Zen 3 core, against the
         * same im2col + sgemm on AVX2: 3x3 0.34-0.54, a first conv
         * 0.3-0.6, 1x1 0.84-1.24, depthwise 0.07-0.3): about 1.6 times the
         * AVX-512 ratios, which the factor below keeps. */
        const gx_view *w = &ic->in[1];
        const bool dw = w->shape[1] == 1 && ic->in[0].shape[1] == w->shape[0] && w->shape[0] > 1;
        const bool pointwise = w->shape[2] * w->shape[3] == 1;
        const double wide = __builtin_cpu_supports("avx512f") ? 1.0 : 1.6;
        if (dw)
            return (nhwc ? 0.07 : 0.08) * wide;
        if (pointwise)
            return (nhwc ? 0.5 : 0.52) * wide;
        /* groups of 16 or more channels: 0.45-0.68 (3x3, 2 to 8 groups);
         * of 2, 4 or 8 channels on AVX2 (s_dwg256; 3x3, 32 groups, 28x28
         * and 56x56, stride 1 and 2): 0.25-0.43 */
        const int64_t groups = ic->attr[GX_CONV_GROUP].i, cg = w->shape[1];
        if (groups > 1 && wide > 1.0 && (cg == 2 || cg == 4 || cg == 8) &&
            w->shape[0] == ic->in[0].shape[1])
            return 0.35;
        if (groups > 1)
            return 0.6 * wide;
        return 0.3 * wide;
    }
    return 1.0;
}
