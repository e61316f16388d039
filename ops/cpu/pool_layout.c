/*
 * Pools, BatchNormalization and InstanceNormalization in the NHWC and
 * NCHW16c layouts
 * (ops/layout.h), float32, rank 4.
 *
 * Both layouts are seen the same way: P planes of H x W pixels, each pixel
 * L contiguous channels (NHWC: P = N, L = C; NCHW16c: P = N * C / 16,
 * L = 16). A kernel walks pixels and vectorises across the L channels of
 * one, 16 lanes at a time.
 *
 * Every result is the same bits as the plain kernel's (ops/cpu/pool.c,
 * ops/cpu/norm.c): each output element sees the same operations in the
 * same order. MaxPool starts from the window's first valid tap and keeps
 * v > best ? v : best over the valid taps, rows outer; AveragePool sums
 * the valid taps from 0 in that order and divides by the tap count (or
 * the padded count); the global pools keep 8 partial results per channel
 * (element i of a channel's H * W goes to partial i % 8, the tail past the
 * last multiple of 8 to partial 0), then fold them in order;
 * BatchNormalization computes (x - mean) * a + B with
 * a = (float)(scale / sqrt(var + eps)) in double.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"
#include "ops/cpu/rowsum.h"
#include "ops/layout.h"

#define S_VEC 8    /* lanes per inner loop */
#define S_PARTS 8  /* the global pools' partial results (S_LANES in pool.c) */
#define S_BN_MAX 256 /* channels whose BatchNormalization factors are on the stack */

/* The planes, pixels per plane and lanes per pixel of a physical view. */
typedef struct s_geo {
    int64_t P, L;
    int64_t d[4]; /* logical N, C, H, W */
} s_geo;

static s_geo s_geo_of(const gx_view *v)
{
    s_geo g;
    gx_layout_dims(v, g.d);
    if (v->layout == GX_LAYOUT_NCHW16C) {
        g.P = g.d[0] * (g.d[1] / GX_LAYOUT_BLOCK);
        g.L = GX_LAYOUT_BLOCK;
    } else {
        g.P = g.d[0];
        g.L = g.d[1];
    }
    return g;
}

/* ---- MaxPool, AveragePool ---- */

/* Taps of padded coordinates inside x plus its padding (not what ceil_mode
 * added past it): pool.c's s_padded. */
static int64_t s_padded(const gx_win *w, int d, int64_t o)
{
    const int64_t start = o * w->stride[d] - w->pad_lo[d], dil = w->dil[d];
    const int64_t end = w->in[d] + w->pad_hi[d];
    const int64_t p1 = start >= end ? 0 : dil == 1 ? end - start : (end - start + dil - 1) / dil;
    return p1 < w->k[d] ? p1 : w->k[d];
}

/* S_VEC lanes as one value (GCC vector extensions): one AVX2 register,
 * half an AVX-512 one, or two SSE ones in the baseline clone. 16 lanes
 * ran 5 times slower on AVX2: gcc lowers the compares of a vector wider
 * than the CPU's registers lane by lane into scalar code. */
typedef float s_vf __attribute__((vector_size(S_VEC * sizeof(float))));
typedef int32_t s_vi __attribute__((vector_size(S_VEC * sizeof(float))));

/* The helpers of a cloned loop: inlined into each clone, so they are
 * compiled for its instruction set. */
#define S_INLINE static inline __attribute__((always_inline))

/* Loads, stores and t > acc ? t : acc per lane (MAXPS's rule, as the
 * plain kernels have it), as macros: a function passing these vectors by
 * value would change its ABI between the clones (-Wpsabi). */
#define S_LD(p)                                                               \
    ({                                                                        \
        s_vf l_;                                                              \
        memcpy(&l_, (p), sizeof l_);                                          \
        l_;                                                                   \
    })
#define S_ST(p, v)                                                            \
    do {                                                                      \
        const s_vf v_ = (v);                                                  \
        memcpy((p), &v_, sizeof v_);                                          \
    } while (0)
#define S_MAX(t, acc)                                                         \
    ({                                                                        \
        const s_vf t_ = (t), a_ = (acc);                                      \
        const s_vi m_ = t_ > a_;                                              \
        (s_vf)(((s_vi)t_ & m_) | ((s_vi)a_ & ~m_));                           \
    })

/* One output pixel's window for lanes [0, n) (n <= S_VEC) at x (the
 * plane's pixel (ih0, iw0) plus the first lane): max or sum over the
 * nh x nw valid taps, spaced sh and sw elements apart. */
S_INLINE void s_window(const float *restrict x, float *restrict y, int64_t n, int64_t nh,
                       int64_t nw, int64_t sh, int64_t sw, bool max, float div)
{
    if (n == S_VEC) {
        s_vf acc = max ? S_LD(x) : (s_vf){0};
        for (int64_t a = 0; a < nh; a++) {
            const float *restrict row = x + a * sh;
            if (max) {
                for (int64_t b = 0; b < nw; b++)
                    acc = S_MAX(S_LD(row + b * sw), acc);
            } else {
                for (int64_t b = 0; b < nw; b++)
                    acc += S_LD(row + b * sw);
            }
        }
        S_ST(y, max ? acc : acc / div);
        return;
    }
    float acc[S_VEC];
    for (int64_t i = 0; i < n; i++)
        acc[i] = max ? x[i] : 0;
    for (int64_t a = 0; a < nh; a++) {
        for (int64_t b = 0; b < nw; b++) {
            const float *restrict t = x + a * sh + b * sw;
            for (int64_t i = 0; i < n; i++)
                acc[i] = max ? (t[i] > acc[i] ? t[i] : acc[i]) : acc[i] + t[i];
        }
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = max ? acc[i] : acc[i] / div;
}

/* Pixels [o1, o2) of an output row whose windows all hold kw taps along
 * W (none in the padding) and nh rows: s_window with the window's sizes
 * known (KH, KW > 0: nh == KH, kw == KW), L a multiple of S_VEC. */
S_INLINE void s_pool_inside(const int KH, const int KW, const gx_win *w, const float *xr,
                            float *yr, int64_t L, int64_t o1, int64_t o2, int64_t nh, int64_t sh,
                            int64_t sw, bool max, float div)
{
    const int64_t kw = KW ? KW : w->k[1], step = w->stride[1] * L;
    const float *xp = xr + (o1 * w->stride[1] - w->pad_lo[1]) * L;
    for (int64_t o = o1; o < o2; o++, xp += step)
        for (int64_t c = 0; c < L; c += S_VEC)
            s_window(xp + c, yr + o * L + c, S_VEC, KH ? KH : nh, kw, sh, sw, max, div);
}

/* Output pixels [lo, hi) of planes of the window w: max (or average, with
 * include_pad for count_include_pad), a row of the output at a time; the
 * columns whose windows lie inside x along W (all of them where L is a
 * multiple of S_VEC) by s_pool_inside, 2 or 3 wide and high at full
 * speed. */
S_INLINE void s_pool_rows(const gx_win *w, const s_geo *g, const float *x, float *y, bool max,
                          bool include_pad, int64_t lo, int64_t hi)
{
    const int64_t oh = w->out[0], ow = w->out[1], H = w->in[0], W = w->in[1], L = g->L;
    const int64_t sh = w->dil[0] * W * L, sw = w->dil[1] * L;
    /* the columns whose windows hold all kw taps inside x */
    const int64_t last = W - 1 + w->pad_lo[1] - (w->k[1] - 1) * w->dil[1];
    int64_t ci_lo = (w->pad_lo[1] + w->stride[1] - 1) / w->stride[1];
    int64_t ci_hi = last < 0 ? 0 : last / w->stride[1] + 1;
    ci_lo = L % S_VEC || ci_lo > ow ? ow : ci_lo;
    ci_hi = ci_hi > ow ? ow : ci_hi < ci_lo ? ci_lo : ci_hi;
    for (int64_t e = lo; e < hi;) {
        const int64_t row = e / ow, p = row / oh, o0 = row % oh;
        const int64_t end = (row + 1) * ow < hi ? (row + 1) * ow : hi;
        int64_t h0, h1;
        gx_win_taps(w, 0, o0, &h0, &h1);
        const int64_t ih = o0 * w->stride[0] - w->pad_lo[0] + h0 * w->dil[0];
        const int64_t ph = include_pad ? s_padded(w, 0, o0) : 0;
        const float *xr = x + (p * H + ih) * W * L;
        const int64_t a = e - row * ow, b = end - row * ow; /* this row's columns [a, b) */
        const int64_t i1 = a > ci_lo ? a : ci_lo, i2 = b < ci_hi ? b : ci_hi;
        if (i1 < i2) { /* the inside columns, then the rest below */
            const int64_t nh = h1 - h0, kw = w->k[1];
            const float div = (float)(include_pad ? ph * kw : nh * kw);
            float *yr = y + row * ow * L;
            if (nh == 2 && kw == 2)
                s_pool_inside(2, 2, w, xr, yr, L, i1, i2, nh, sh, sw, max, div);
            else if (nh == 3 && kw == 3)
                s_pool_inside(3, 3, w, xr, yr, L, i1, i2, nh, sh, sw, max, div);
            else
                s_pool_inside(0, 0, w, xr, yr, L, i1, i2, nh, sh, sw, max, div);
        }
        for (int64_t o1 = a; e < end; e++, o1++) {
            if (o1 == i1 && i1 < i2) { /* done above */
                e += i2 - i1 - 1;
                o1 += i2 - i1 - 1;
                continue;
            }
            int64_t w0, w1;
            gx_win_taps(w, 1, o1, &w0, &w1);
            const int64_t iw = o1 * w->stride[1] - w->pad_lo[1] + w0 * w->dil[1];
            const int64_t n = include_pad ? ph * s_padded(w, 1, o1) : (h1 - h0) * (w1 - w0);
            const float *xp = xr + iw * L;
            float *yp = y + e * L;
            for (int64_t c = 0; c < L; c += S_VEC)
                s_window(xp + c, yp + c, L - c < S_VEC ? L - c : S_VEC, h1 - h0, w1 - w0, sh,
                         sw, max, (float)n);
        }
    }
}

GX_CPU_CLONES
static void s_pool(const gx_win *w, const s_geo *g, const float *x, float *y, bool max,
                   bool include_pad, int64_t lo, int64_t hi)
{
    if (max) /* a constant in each copy: no test inside the taps' loops */
        s_pool_rows(w, g, x, y, true, false, lo, hi);
    else
        s_pool_rows(w, g, x, y, false, include_pad, lo, hi);
}

static void s_pool_kernel(const gx_kargs *k, bool max, int ceil_attr, bool include_pad)
{
    const gx_view x = gx_layout_logical(&k->in[0]);
    const s_geo g = s_geo_of(&k->in[0]);
    gx_win w;
    gx_win_init(&w, k->attr, max ? "MaxPool" : "AveragePool", &x, NULL,
                k->attr[ceil_attr].i != 0, true, NULL, 0);
    int64_t lo, hi;
    gx_cpu_share(k, g.P * w.out_size, 1, &lo, &hi);
    s_pool(&w, &g, k->in[0].data, k->out[0].data, max, include_pad, lo, hi);
}

static void s_maxpool(const gx_kargs *k)
{
    s_pool_kernel(k, true, GX_MAXPOOL_CEIL_MODE, false);
}

static void s_averagepool(const gx_kargs *k)
{
    s_pool_kernel(k, false, GX_AVERAGEPOOL_CEIL_MODE,
                  k->attr[GX_AVERAGEPOOL_COUNT_INCLUDE_PAD].i != 0);
}

/* ---- GlobalMaxPool, GlobalAveragePool ---- */

/* Lanes [0, n) of a plane's S pixels (L lanes apart) into y: S_PARTS
 * partial results per lane as in pool.c's s_global. */
S_INLINE void s_global_lanes(const float *restrict x, float *restrict y, int64_t S, int64_t L,
                             int64_t n, bool max)
{
    if (n == S_VEC) {
        s_vf part[S_PARTS];
        for (int l = 0; l < S_PARTS; l++)
            part[l] = max ? S_LD(x) : (s_vf){0};
        int64_t s = 0;
        for (; s + S_PARTS <= S; s += S_PARTS) {
            for (int l = 0; l < S_PARTS; l++)
                part[l] = max ? S_MAX(S_LD(x + (s + l) * L), part[l])
                              : part[l] + S_LD(x + (s + l) * L);
        }
        for (; s < S; s++)
            part[0] = max ? S_MAX(S_LD(x + s * L), part[0]) : part[0] + S_LD(x + s * L);
        for (int l = 1; l < S_PARTS; l++)
            part[0] = max ? S_MAX(part[l], part[0]) : part[0] + part[l];
        S_ST(y, max ? part[0] : part[0] / (float)S);
        return;
    }
    float part[S_PARTS][S_VEC];
    for (int l = 0; l < S_PARTS; l++)
        for (int64_t i = 0; i < n; i++)
            part[l][i] = max ? x[i] : 0;
    int64_t s = 0;
    for (; s + S_PARTS <= S; s += S_PARTS) {
        for (int l = 0; l < S_PARTS; l++) {
            const float *restrict t = x + (s + l) * L;
            for (int64_t i = 0; i < n; i++)
                part[l][i] = max ? (t[i] > part[l][i] ? t[i] : part[l][i]) : part[l][i] + t[i];
        }
    }
    for (; s < S; s++) {
        const float *restrict t = x + s * L;
        for (int64_t i = 0; i < n; i++)
            part[0][i] = max ? (t[i] > part[0][i] ? t[i] : part[0][i]) : part[0][i] + t[i];
    }
    for (int l = 1; l < S_PARTS; l++)
        for (int64_t i = 0; i < n; i++)
            part[0][i] = max ? (part[l][i] > part[0][i] ? part[l][i] : part[0][i])
                             : part[0][i] + part[l][i];
    for (int64_t i = 0; i < n; i++)
        y[i] = max ? part[0][i] : part[0][i] / (float)S;
}

/* Units [lo, hi) of (plane, S_VEC lanes). */
GX_CPU_CLONES
static void s_global(const s_geo *g, const float *x, float *y, bool max, int64_t lo, int64_t hi)
{
    const int64_t S = g->d[2] * g->d[3], L = g->L, per = (L + S_VEC - 1) / S_VEC;
    for (int64_t u = lo; u < hi; u++) {
        const int64_t p = u / per, c = u % per * S_VEC;
        const float *xp = x + p * S * L + c;
        float *yp = y + p * L + c;
        if (L - c >= S_VEC && max)
            s_global_lanes(xp, yp, S, L, S_VEC, true);
        else if (L - c >= S_VEC)
            s_global_lanes(xp, yp, S, L, S_VEC, false);
        else
            s_global_lanes(xp, yp, S, L, L - c, max);
    }
}

static void s_global_kernel(const gx_kargs *k, bool max)
{
    const s_geo g = s_geo_of(&k->in[0]);
    int64_t lo, hi;
    gx_cpu_share(k, g.P * ((g.L + S_VEC - 1) / S_VEC), 1, &lo, &hi);
    s_global(&g, k->in[0].data, k->out[0].data, max, lo, hi);
}

static void s_globalmaxpool(const gx_kargs *k)
{
    s_global_kernel(k, true);
}

static void s_globalaveragepool(const gx_kargs *k)
{
    s_global_kernel(k, false);
}

/* ---- BatchNormalization (inference) ---- */

/* Pixels [lo, hi) of the planes: y = (x - m) * a + b per channel, the
 * factors of S_BN_MAX channels at a time. */
GX_CPU_CLONES
static void s_batchnorm(const s_geo *g, const float *scale, const float *bias, const float *mean,
                        const float *var, double eps, const float *x, float *y, int64_t lo,
                        int64_t hi)
{
    const int64_t S = g->d[2] * g->d[3], L = g->L, blocks = g->d[1] / L;
    float fa[S_BN_MAX], fm[S_BN_MAX], fb[S_BN_MAX];
    for (int64_t e = lo; e < hi;) {
        const int64_t p = e / S, end = (p + 1) * S < hi ? (p + 1) * S : hi;
        const int64_t c0 = p % blocks * L; /* logical channel of lane 0 */
        for (int64_t l0 = 0; l0 < L; l0 += S_BN_MAX) {
            const int64_t n = L - l0 < S_BN_MAX ? L - l0 : S_BN_MAX;
            for (int64_t i = 0; i < n; i++) {
                const int64_t c = c0 + l0 + i;
                fa[i] = (float)(scale[c] / sqrt(var[c] + eps));
                fm[i] = mean[c];
                fb[i] = bias[c];
            }
            for (int64_t s = e; s < end; s++) {
                const float *restrict xr = x + s * L + l0;
                float *restrict yr = y + s * L + l0;
                int64_t i = 0;
                for (; i + S_VEC <= n; i += S_VEC)
                    S_ST(yr + i, (S_LD(xr + i) - S_LD(fm + i)) * S_LD(fa + i) + S_LD(fb + i));
                for (; i < n; i++)
                    yr[i] = (xr[i] - fm[i]) * fa[i] + fb[i];
            }
        }
        e = end;
    }
}

static void s_batchnorm_kernel(const gx_kargs *k)
{
    const s_geo g = s_geo_of(&k->in[0]);
    int64_t lo, hi;
    gx_cpu_share(k, g.P * g.d[2] * g.d[3], 1, &lo, &hi);
    s_batchnorm(&g, k->in[1].data, k->in[2].data, k->in[3].data, k->in[4].data,
                k->attr[GX_BATCHNORM_EPSILON].f, k->in[0].data, k->out[0].data, lo, hi);
}

/* ---- InstanceNormalization ----
 * The plain kernel's statistics (ops/cpu/rowsum.h) per channel: blocks of
 * GX_ROWSUM_BLOCK pixels, element i of a block into float partial i % 16
 * (the tail into partial 0), the partials added in double in order, block
 * after block; the mean, then the squares of x - (float)mean alike. Here
 * the 16 partials of each of 16 channels are 16 vectors. */

/* Per lane (channel) of n <= S_VEC at x (S pixels, L apart): the sum of
 * x, or of (x - m)^2 when sq, in rowsum.h's order, into out[n]. */
S_INLINE void s_in_sums(const float *restrict x, int64_t S, int64_t L, int64_t n, bool sq,
                        const float *restrict m, double *restrict out)
{
    for (int64_t l = 0; l < n; l++)
        out[l] = 0;
    s_vf mv = {0};
    if (sq)
        memcpy(&mv, m, (size_t)n * sizeof *m);
    for (int64_t b = 0; b < S; b += GX_ROWSUM_BLOCK) {
        const int64_t cnt = S - b < GX_ROWSUM_BLOCK ? S - b : GX_ROWSUM_BLOCK;
        s_vf acc[GX_ROWSUM_LANES];
        memset(acc, 0, sizeof acc);
        int64_t i = 0;
        for (; i + GX_ROWSUM_LANES <= cnt; i += GX_ROWSUM_LANES)
            for (int j = 0; j < GX_ROWSUM_LANES; j++) {
                s_vf v = {0};
                memcpy(&v, x + (b + i + j) * L, (size_t)n * sizeof(float));
                if (sq) {
                    v = v - mv;
                    acc[j] += v * v;
                } else {
                    acc[j] += v;
                }
            }
        for (; i < cnt; i++) {
            s_vf v = {0};
            memcpy(&v, x + (b + i) * L, (size_t)n * sizeof(float));
            if (sq) {
                v = v - mv;
                acc[0] += v * v;
            } else {
                acc[0] += v;
            }
        }
        for (int j = 0; j < GX_ROWSUM_LANES; j++)
            for (int64_t l = 0; l < n; l++)
                out[l] += acc[j][l];
    }
}

/* Units (plane, 16 lanes): the lanes' statistics, then y = (x - mean) * a
 * + b with a = (float)(scale / sqrt(var + eps)) as the plain kernel. */
GX_CPU_CLONES static void s_instnorm(const s_geo *g, const float *scale, const float *bias,
                                     double eps, const float *x, float *y, int64_t lo, int64_t hi)
{
    const int64_t S = g->d[2] * g->d[3], L = g->L, per = (L + S_VEC - 1) / S_VEC;
    const int64_t blocks = g->d[1] / L;
    for (int64_t u = lo; u < hi; u++) {
        const int64_t p = u / per, l0 = u % per * S_VEC;
        const int64_t n = L - l0 < S_VEC ? L - l0 : S_VEC, c0 = p % blocks * L + l0;
        const float *xp = x + p * S * L + l0;
        float *yp = y + p * S * L + l0;
        double sum[S_VEC], sq[S_VEC];
        float m[S_VEC] = {0}, fa[S_VEC] = {0}, fb[S_VEC] = {0};
        s_in_sums(xp, S, L, n, false, m, sum);
        for (int64_t l = 0; l < n; l++)
            m[l] = (float)(sum[l] / (double)S);
        s_in_sums(xp, S, L, n, true, m, sq);
        for (int64_t l = 0; l < n; l++) {
            const double var = sq[l] / (double)S;
            fa[l] = (float)(scale[c0 + l] / sqrt(var + eps));
            fb[l] = bias[c0 + l];
        }
        s_vf mv, av, bv;
        memcpy(&mv, m, sizeof mv);
        memcpy(&av, fa, sizeof av);
        memcpy(&bv, fb, sizeof bv);
        for (int64_t s = 0; s < S; s++) {
            if (n == S_VEC) {
                S_ST(yp + s * L, (S_LD(xp + s * L) - mv) * av + bv);
            } else {
                for (int64_t l = 0; l < n; l++)
                    yp[s * L + l] = (xp[s * L + l] - m[l]) * fa[l] + fb[l];
            }
        }
    }
}

static void s_instnorm_kernel(const gx_kargs *k)
{
    const s_geo g = s_geo_of(&k->in[0]);
    int64_t lo, hi;
    gx_cpu_share(k, g.P * ((g.L + S_VEC - 1) / S_VEC), 1, &lo, &hi);
    s_instnorm(&g, k->in[1].data, k->in[2].data, k->attr[GX_INSTANCENORM_EPSILON].f,
               k->in[0].data, k->out[0].data, lo, hi);
}

/* ---- which kernel ---- */

gx_kernel_fn gx_cpu_pool_layout(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                size_t len)
{
    const char *ln = gx_layout_name(l), *on = gx_op_name(op);
    if (l != GX_LAYOUT_NHWC && l != GX_LAYOUT_NCHW16C) {
        snprintf(why, len, "%s: no %s kernel (pool_layout has nhwc and nchw16c)", ln, on);
        return NULL;
    }
    const gx_view *x = &ic->in[0];
    if (x->dtype != GX_F32 || x->ndim != 4) {
        snprintf(why, len, "%s: %s of a %d-D %s input (only 4-D float32)", ln, on, x->ndim,
                 gx_dtype_name(x->dtype));
        return NULL;
    }
    if (!gx_layout_fits(l, x)) {
        snprintf(why, len, "%s: %s with %lld channels (not a multiple of %d)", ln, on,
                 (long long)x->shape[1], GX_LAYOUT_BLOCK);
        return NULL;
    }
    if (op == GX_OP_MAXPOOL) {
        if (ic->n_out > 1 && ic->out[1].ndim >= 0) {
            snprintf(why, len, "%s: MaxPool with the Indices output", ln);
            return NULL;
        }
        return s_maxpool;
    }
    if (op == GX_OP_AVERAGEPOOL)
        return s_averagepool;
    if (op == GX_OP_GLOBALMAXPOOL)
        return s_globalmaxpool;
    if (op == GX_OP_GLOBALAVERAGEPOOL)
        return s_globalaveragepool;
    if (op == GX_OP_INSTANCENORM) {
        for (int i = 1; i <= 2; i++) {
            if (i >= ic->n_in || ic->in[i].dtype != GX_F32 || ic->in[i].numel != x->shape[1]) {
                snprintf(why, len, "%s: InstanceNormalization's input %d is not float32 [C]", ln,
                         i);
                return NULL;
            }
        }
        return s_instnorm_kernel;
    }
    if (op != GX_OP_BATCHNORM) {
        snprintf(why, len, "%s: no %s kernel", ln, on);
        return NULL;
    }
    if (ic->attr[GX_BATCHNORM_TRAINING_MODE].i != 0) {
        snprintf(why, len, "%s: BatchNormalization in training mode", ln);
        return NULL;
    }
    for (int i = 1; i < ic->n_out; i++) {
        if (ic->out[i].ndim >= 0) {
            snprintf(why, len, "%s: BatchNormalization with output %d", ln, i);
            return NULL;
        }
    }
    for (int i = 1; i <= 4; i++) {
        if (i >= ic->n_in || ic->in[i].dtype != GX_F32 || ic->in[i].numel != x->shape[1]) {
            snprintf(why, len, "%s: BatchNormalization's input %d is not float32 [C]", ln, i);
            return NULL;
        }
    }
    return s_batchnorm_kernel;
}

gx_kernel_fn gx_cpu_pool_layout_fn(gx_op op)
{
    return op == GX_OP_MAXPOOL             ? s_maxpool
           : op == GX_OP_AVERAGEPOOL       ? s_averagepool
           : op == GX_OP_GLOBALMAXPOOL     ? s_globalmaxpool
           : op == GX_OP_GLOBALAVERAGEPOOL ? s_globalaveragepool
           : op == GX_OP_BATCHNORM         ? s_batchnorm_kernel
           : op == GX_OP_INSTANCENORM      ? s_instnorm_kernel
                                           : NULL;
}
