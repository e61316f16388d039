/*
 * The pools on the CPU: MaxPool (with its optional indices), AveragePool,
 * LpPool, their global forms, and MaxUnpool. A thread's share is a range of
 * output elements (global pools: of channels). A window is walked as runs
 * along its last spatial dim, over the taps that land inside x (infer made
 * sure there is at least one).
 *
 * Every loop is stamped out per dtype from one macro: T is the stored
 * type, V the type values are compared or summed in, LD / ST convert.
 */
#include <math.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"

/* Output positions are taken a line at a time (a run along the last
 * spatial dim), S_CHUNK of them at once: their accumulators stay in
 * registers or L1 while the window's rows stream past, and along the last
 * dim consecutive positions read consecutive (or strided) elements. */
#define S_CHUNK 64

/* The part of an output line's windows outside the last dim: the rows of x
 * they read. */
typedef struct s_rows {
    int64_t first;            /* offset in the channel of the first valid row */
    int64_t n[GX_WIN_MAX];    /* valid taps per dim */
    int64_t step[GX_WIN_MAX]; /* offset between taps per dim */
    int64_t runs;             /* rows: product of n */
    int64_t taps;             /* == runs */
    int64_t padded;           /* taps inside the padded x (count_include_pad) */
} s_rows;

static int64_t s_padded(const gx_win *w, int d, int64_t o)
{
    /* taps in [-pad_lo, in + pad_hi): the window minus what ceil_mode added
     * past the end padding */
    const int64_t start = o * w->stride[d] - w->pad_lo[d], dil = w->dil[d];
    const int64_t end = w->in[d] + w->pad_hi[d];
    const int64_t p1 = start >= end ? 0 : dil == 1 ? end - start : (end - start + dil - 1) / dil;
    return p1 < w->k[d] ? p1 : w->k[d];
}

static void s_rows_init(const gx_win *w, int64_t line, s_rows *a)
{
    const int last = w->nsp - 1;
    int64_t stride = w->in[last];
    a->first = 0;
    a->runs = 1;
    a->padded = 1;
    for (int d = last - 1; d >= 0; d--) {
        /* line < the lines of a channel: the outermost dim needs no division */
        const int64_t o = d > 0 ? line % w->out[d] : line;
        line = d > 0 ? line / w->out[d] : 0;
        int64_t j0, j1;
        gx_win_taps(w, d, o, &j0, &j1);
        a->first += (o * w->stride[d] - w->pad_lo[d] + j0 * w->dil[d]) * stride;
        a->n[d] = j1 - j0;
        a->step[d] = w->dil[d] * stride;
        a->runs *= j1 - j0;
        a->padded *= s_padded(w, d, o);
        stride *= w->in[d];
    }
    a->taps = a->runs;
}

/* Offset in the channel of row r. */
static inline int64_t s_row(const s_rows *a, int nsp, int64_t r)
{
    int64_t off = a->first;
    for (int d = nsp - 2; d >= 0; d--) {
        off += r % a->n[d] * a->step[d];
        r /= a->n[d];
    }
    return off;
}

/* A row-major spatial offset rewritten column-major (storage_order 1). */
static int64_t s_colmajor(const gx_win *w, int64_t off)
{
    int64_t idx[GX_WIN_MAX], cm = 0, stride = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        idx[d] = off % w->in[d];
        off /= w->in[d];
    }
    for (int d = 0; d < w->nsp; d++) {
        cm += idx[d] * stride;
        stride *= w->in[d];
    }
    return cm;
}

/* Walks output elements [lo, hi) as chunks of lines: for each it sets ch
 * (the image-channel), line, the chunk [o0, o1) and the rows r, then runs
 * the statements that follow the three arguments. */
#define S_FOR_CHUNKS(w, lo, hi, ...)                                         \
    do {                                                                      \
        const int64_t ow_ = (w)->out[(w)->nsp - 1];                           \
        for (int64_t e_ = (lo); e_ < (hi);) {                                 \
            const int64_t ch = e_ / (w)->out_size, pos_ = e_ % (w)->out_size; \
            const int64_t line = pos_ / ow_, o0 = pos_ % ow_;                 \
            int64_t o1 = o0 + S_CHUNK < ow_ ? o0 + S_CHUNK : ow_;             \
            o1 = o1 - o0 < (hi) - e_ ? o1 : o0 + ((hi) - e_);                 \
            s_rows r;                                                         \
            s_rows_init((w), line, &r);                                       \
            __VA_ARGS__                                                       \
            e_ += o1 - o0;                                                    \
        }                                                                     \
    } while (0)

#define S_ID(v) (v)

/* X(dtype suffix, T, V, LD, ST) */
#define S_FLOAT_TYPES(X)                                                      \
    X(F32, float, float, S_ID, S_ID)                                          \
    X(F64, double, double, S_ID, S_ID)                                        \
    X(F16, uint16_t, float, gx_f16_to_f32, gx_f32_to_f16)

#define S_MAXPOOL_TYPES(X)                                                    \
    S_FLOAT_TYPES(X)                                                          \
    X(I8, int8_t, int, S_ID, (int8_t))                                        \
    X(U8, uint8_t, int, S_ID, (uint8_t))

/* ---- windowed pools ---- */

/* MaxPool over output elements [lo, hi): each window starts from its first
 * valid tap and the first largest tap in row-major order wins (NaN only
 * when it comes first); ind, when given, gets its flat index in x. */
#define S_MAXPOOL(E, T, V, LD, ST)                                            \
    static void s_maxpool_##E(const gx_win *w, const void *xv, void *yv, int64_t *ind,      \
                              bool colmajor, int64_t lo, int64_t hi)          \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        const int last = w->nsp - 1;                                          \
        const int64_t s = w->stride[last], ow = w->out[last];                 \
        V best[S_CHUNK];                                                      \
        int64_t at[S_CHUNK];                                                  \
        S_FOR_CHUNKS(w, lo, hi, {                                             \
            const T *xc = x + ch * w->in_size;                                \
            for (int64_t o = o0; o < o1; o++) {                               \
                int64_t j0, j1;                                               \
                gx_win_taps(w, last, o, &j0, &j1);                            \
                at[o - o0] = r.first + o * s - w->pad_lo[last] + j0 * w->dil[last]; \
                best[o - o0] = LD(xc[at[o - o0]]);                            \
            }                                                                 \
            for (int64_t ri = 0; ri < r.runs; ri++) {                         \
                const int64_t roff = s_row(&r, w->nsp, ri);                   \
                for (int64_t t = 0; t < w->k[last]; t++) {                    \
                    int64_t c0, a, b;                                         \
                    gx_win_inner(w, t, o0, o1, &c0, &a, &b);                  \
                    /* i = o - o0 indexes the chunk; src[q + i * s] is x's */ \
                    const T *src = xc + roff;                                 \
                    const int64_t i0 = a - o0, i1 = b - o0, q = c0 + o0 * s;  \
                    if (!ind && s == 1) {                                     \
                        for (int64_t i = i0; i < i1; i++)                     \
                            best[i] = LD(src[q + i]) > best[i] ? LD(src[q + i]) : best[i]; \
                        continue;                                             \
                    }                                                         \
                    if (!ind) {                                               \
                        for (int64_t i = i0; i < i1; i++)                     \
                            best[i] = LD(src[q + i * s]) > best[i] ? LD(src[q + i * s]) : best[i]; \
                        continue;                                             \
                    }                                                         \
                    for (int64_t i = i0; i < i1; i++) {                       \
                        const V v = LD(src[q + i * s]);                       \
                        if (v > best[i]) {                                    \
                            best[i] = v;                                      \
                            at[i] = roff + q + i * s;                         \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
            T *yl = y + ch * w->out_size + line * ow;                         \
            for (int64_t o = o0; o < o1; o++)                                 \
                yl[o] = ST(best[o - o0]);                                     \
            for (int64_t o = o0; ind && o < o1; o++)                          \
                ind[ch * w->out_size + line * ow + o] =                       \
                    ch * w->in_size + (colmajor ? s_colmajor(w, at[o - o0]) : at[o - o0]); \
        });                                                                   \
    }
S_MAXPOOL_TYPES(S_MAXPOOL)

/* |v|^p and its inverse, exact for the usual p = 1 and 2. */
static inline double s_pow_abs(double v, int p)
{
    return p == 1 ? fabs(v) : p == 2 ? v * v : pow(fabs(v), p);
}

static inline double s_root(double v, int p)
{
    return p == 1 ? v : p == 2 ? sqrt(v) : pow(v, 1.0 / p);
}

/* AveragePool (lp == 0) or LpPool (lp == p) over output elements [lo, hi):
 * a sum over the window, then its mean or root. */
#define S_SUMPOOL(E, T, V, LD, ST)                                            \
    static void s_sumpool_##E(const gx_win *w, const void *xv, void *yv, bool include_pad, \
                              int lp, int64_t lo, int64_t hi)                 \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        const int last = w->nsp - 1;                                          \
        const int64_t s = w->stride[last], ow = w->out[last];                 \
        V sum[S_CHUNK];                                                       \
        S_FOR_CHUNKS(w, lo, hi, {                                             \
            const T *xc = x + ch * w->in_size;                                \
            for (int64_t o = 0; o < o1 - o0; o++)                             \
                sum[o] = 0;                                                   \
            for (int64_t ri = 0; ri < r.runs; ri++) {                         \
                const int64_t roff = s_row(&r, w->nsp, ri);                   \
                for (int64_t t = 0; t < w->k[last]; t++) {                    \
                    int64_t c0, a, b;                                         \
                    gx_win_inner(w, t, o0, o1, &c0, &a, &b);                  \
                    /* i = o - o0 indexes the chunk; src[q + i * s] is x's */ \
                    const T *src = xc + roff;                                 \
                    const int64_t i0 = a - o0, i1 = b - o0, q = c0 + o0 * s;  \
                    if (lp == 0 && s == 1) {                                  \
                        for (int64_t i = i0; i < i1; i++)                     \
                            sum[i] += LD(src[q + i]);                         \
                    } else if (lp == 0) {                                     \
                        for (int64_t i = i0; i < i1; i++)                     \
                            sum[i] += LD(src[q + i * s]);                     \
                    } else {                                                  \
                        for (int64_t i = i0; i < i1; i++)                     \
                            sum[i] += (V)s_pow_abs(LD(src[q + i * s]), lp);   \
                    }                                                         \
                }                                                             \
            }                                                                 \
            T *yl = y + ch * w->out_size + line * ow;                         \
            for (int64_t o = o0; o < o1; o++) {                               \
                int64_t j0, j1;                                               \
                gx_win_taps(w, last, o, &j0, &j1);                            \
                const int64_t n = include_pad ? r.padded * s_padded(w, last, o) \
                                              : r.taps * (j1 - j0);           \
                yl[o] = lp == 0 ? ST(sum[o - o0] / (V)n)                      \
                                : ST((V)s_root(sum[o - o0], lp));             \
            }                                                                 \
        });                                                                   \
    }
S_FLOAT_TYPES(S_SUMPOOL)

void gx_cpu_MAXPOOL(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t *ind = k->n_out > 1 && k->out[1].ndim >= 0 ? k->out[1].data : NULL;
    const bool colmajor = k->attr[GX_MAXPOOL_STORAGE_ORDER].i != 0;
    gx_win w;
    gx_win_init(&w, k->attr, "MaxPool", x, NULL, k->attr[GX_MAXPOOL_CEIL_MODE].i != 0, true,
                NULL, 0);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    switch (x->dtype) {
#define S_CASE(E, T, V, LD, ST)                                               \
    case GX_##E:                                                              \
        s_maxpool_##E(&w, x->data, y->data, ind, colmajor, lo, hi);           \
        break;
        S_MAXPOOL_TYPES(S_CASE)
#undef S_CASE
    case GX_BF16:
    case GX_I64:
    case GX_I32:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break; /* refused by infer */
    }
}

/* AveragePool and LpPool: a sum over the window, then its mean or root. */
static void s_sumpool(const gx_kargs *k, const char *op, int ceil_attr, bool include_pad, int lp)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    gx_win w;
    gx_win_init(&w, k->attr, op, x, NULL, k->attr[ceil_attr].i != 0, true, NULL, 0);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    switch (x->dtype) {
#define S_CASE(E, T, V, LD, ST)                                               \
    case GX_##E:                                                              \
        s_sumpool_##E(&w, x->data, y->data, include_pad, lp, lo, hi);         \
        break;
        S_FLOAT_TYPES(S_CASE)
#undef S_CASE
    case GX_BF16:
    case GX_I64:
    case GX_I32:
    case GX_I8:
    case GX_U8:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break; /* refused by infer */
    }
}

void gx_cpu_AVERAGEPOOL(const gx_kargs *k)
{
    s_sumpool(k, "AveragePool", GX_AVERAGEPOOL_CEIL_MODE,
              k->attr[GX_AVERAGEPOOL_COUNT_INCLUDE_PAD].i != 0, 0);
}

void gx_cpu_LPPOOL(const gx_kargs *k)
{
    s_sumpool(k, "LpPool", GX_LPPOOL_CEIL_MODE, false, (int)k->attr[GX_LPPOOL_P].i);
}

/* ---- global pools ---- */

enum { S_GMAX, S_GAVG, S_GLP };

/* Channels [lo, hi) of n contiguous elements each: their max, mean or
 * p-norm (kind), one value per channel. S_LANES independent partial
 * results let the loops vectorise without reassociating a single sum. */
#define S_LANES 8
#define S_GLOBAL(E, T, V, LD, ST)                                             \
    static void s_global_##E(const void *xv, void *yv, int64_t n, int kind, int lp, int64_t lo, \
                             int64_t hi)                                      \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        for (int64_t c = lo; c < hi; c++) {                                   \
            const T *xc = x + c * n;                                          \
            V part[S_LANES];                                                  \
            for (int l = 0; l < S_LANES; l++)                                 \
                part[l] = kind == S_GMAX && n > 0 ? LD(xc[0]) : 0;            \
            int64_t i = 0;                                                    \
            if (kind == S_GMAX) {                                             \
                for (; i + S_LANES <= n; i += S_LANES) {                      \
                    for (int l = 0; l < S_LANES; l++) {                       \
                        const V v = LD(xc[i + l]);                            \
                        part[l] = v > part[l] ? v : part[l];                  \
                    }                                                         \
                }                                                             \
                for (; i < n; i++)                                            \
                    part[0] = LD(xc[i]) > part[0] ? LD(xc[i]) : part[0];      \
                for (int l = 1; l < S_LANES; l++)                             \
                    part[0] = part[l] > part[0] ? part[l] : part[0];          \
            } else if (kind == S_GAVG) {                                      \
                for (; i + S_LANES <= n; i += S_LANES) {                      \
                    for (int l = 0; l < S_LANES; l++)                         \
                        part[l] += LD(xc[i + l]);                             \
                }                                                             \
                for (; i < n; i++)                                            \
                    part[0] += LD(xc[i]);                                     \
                for (int l = 1; l < S_LANES; l++)                             \
                    part[0] += part[l];                                       \
                part[0] /= (V)n;                                              \
            } else {                                                          \
                for (; i < n; i++)                                            \
                    part[0] += (V)s_pow_abs(LD(xc[i]), lp);                   \
                part[0] = (V)s_root(part[0], lp);                             \
            }                                                                 \
            y[c] = ST(part[0]);                                               \
        }                                                                     \
    }
S_FLOAT_TYPES(S_GLOBAL)

static void s_global(const gx_kargs *k, int kind, int lp)
{
    const gx_view *x = &k->in[0];
    const int64_t ch = x->shape[0] * x->shape[1], n = ch > 0 ? x->numel / ch : 0;
    int64_t lo, hi;
    gx_cpu_share(k, ch, GX_CPU_LINE, &lo, &hi);
    switch (x->dtype) {
#define S_CASE(E, T, V, LD, ST)                                               \
    case GX_##E:                                                              \
        s_global_##E(x->data, k->out[0].data, n, kind, lp, lo, hi);           \
        break;
        S_FLOAT_TYPES(S_CASE)
#undef S_CASE
    case GX_BF16:
    case GX_I64:
    case GX_I32:
    case GX_I8:
    case GX_U8:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break; /* refused by infer */
    }
}

void gx_cpu_GLOBALMAXPOOL(const gx_kargs *k)
{
    s_global(k, S_GMAX, 0);
}

void gx_cpu_GLOBALAVERAGEPOOL(const gx_kargs *k)
{
    s_global(k, S_GAVG, 0);
}

void gx_cpu_GLOBALLPPOOL(const gx_kargs *k)
{
    s_global(k, S_GLP, (int)k->attr[GX_GLOBALLPPOOL_P].i);
}

/* ---- MaxUnpool ---- */

/* The thread's share is a range of y's elements: it zeroes them, then
 * scans all of x and places the values whose index falls in its range, in
 * order (so a repeated index keeps the last value, as in onnxruntime). An
 * index addresses the unpooled shape (gx_maxunpool_dims), which y may
 * extend at the end of each dim; indices outside it are skipped. Values are
 * moved as bytes: an all-zero pattern is 0 in every float type. */
void gx_cpu_MAXUNPOOL(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    const size_t es = gx_dtype_size(x->dtype);
    const int nsp = x->ndim - 2;
    int64_t dims[GX_WIN_MAX];
    gx_maxunpool_dims(k->attr, x, dims);
    const int64_t plane = gx_shape_numel(nsp, dims, INT64_MAX);
    const int64_t yplane = gx_shape_numel(nsp, y->shape + 2, INT64_MAX);
    const int64_t limit = x->shape[0] * x->shape[1] * plane;
    const int64_t *ind = ix->data;
    const char *px = x->data;
    char *py = y->data;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    if (lo >= hi)
        return;
    memset(py + lo * (int64_t)es, 0, (size_t)(hi - lo) * es);
    for (int64_t i = 0; i < x->numel; i++) {
        if (ind[i] < 0 || ind[i] >= limit)
            continue;
        int64_t r = ind[i] % plane, at = 0, stride = 1;
        for (int d = nsp - 1; d >= 0; d--) {
            at += r % dims[d] * stride;
            r /= dims[d];
            stride *= y->shape[2 + d];
        }
        at += ind[i] / plane * yplane;
        if (at >= lo && at < hi)
            memcpy(py + at * (int64_t)es, px + i * (int64_t)es, es);
    }
}
