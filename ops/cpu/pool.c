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

/* The valid taps of one output position's window. */
typedef struct s_at {
    int64_t first;           /* offset in the channel of the first valid tap */
    int64_t n[GX_WIN_MAX];   /* valid taps per dim */
    int64_t step[GX_WIN_MAX]; /* offset between taps per dim */
    int64_t runs;            /* runs along the last dim: product of n but the last */
    int64_t taps;            /* valid taps in all */
    int64_t padded;          /* taps inside the padded x (count_include_pad) */
} s_at;

static void s_at_init(const gx_win *w, int64_t pos, s_at *a)
{
    int64_t stride = 1;
    a->first = 0;
    a->runs = 1;
    a->taps = 1;
    a->padded = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        const int64_t o = pos % w->out[d], dil = w->dil[d];
        pos /= w->out[d];
        int64_t j0, j1;
        gx_win_taps(w, d, o, &j0, &j1);
        const int64_t start = o * w->stride[d] - w->pad_lo[d];
        a->first += (start + j0 * dil) * stride;
        a->n[d] = j1 - j0;
        a->step[d] = dil * stride;
        a->taps *= j1 - j0;
        if (d < w->nsp - 1)
            a->runs *= j1 - j0;
        /* taps in [-pad_lo, in + pad_hi): the window minus what ceil_mode
         * added past the end padding */
        const int64_t end = w->in[d] + w->pad_hi[d];
        const int64_t p1 = start < end ? (end - start + dil - 1) / dil : 0;
        a->padded *= p1 < w->k[d] ? p1 : w->k[d];
        stride *= w->in[d];
    }
}

/* Offset in the channel of the first tap of run r. */
static inline int64_t s_at_run(const s_at *a, int nsp, int64_t r)
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

/* MaxPool over output elements [lo, hi): the first largest tap wins (NaN
 * only when it comes first); ind, when given, gets its flat index in x. */
#define S_MAXPOOL(E, T, V, LD, ST)                                            \
    static void s_maxpool_##E(const gx_win *w, const void *xv, void *yv, int64_t *ind,      \
                              bool colmajor, int64_t lo, int64_t hi)          \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        const int64_t last = w->nsp - 1;                                      \
        for (int64_t e = lo; e < hi; e++) {                                   \
            s_at a;                                                           \
            s_at_init(w, e % w->out_size, &a);                                \
            const T *xc = x + e / w->out_size * w->in_size;                   \
            V best = LD(xc[a.first]);                                         \
            int64_t at = a.first;                                             \
            for (int64_t r = 0; r < a.runs; r++) {                            \
                const int64_t off = s_at_run(&a, w->nsp, r);                  \
                for (int64_t t = 0; t < a.n[last]; t++) {                     \
                    const V v = LD(xc[off + t * a.step[last]]);               \
                    if (v > best) {                                           \
                        best = v;                                             \
                        at = off + t * a.step[last];                          \
                    }                                                         \
                }                                                             \
            }                                                                 \
            y[e] = ST(best);                                                  \
            if (ind)                                                          \
                ind[e] = e / w->out_size * w->in_size + (colmajor ? s_colmajor(w, at) : at); \
        }                                                                     \
    }
S_MAXPOOL_TYPES(S_MAXPOOL)

/* AveragePool (lp == 0) or LpPool (lp == p) over output elements [lo, hi). */
#define S_SUMPOOL(E, T, V, LD, ST)                                            \
    static void s_sumpool_##E(const gx_win *w, const void *xv, void *yv, bool include_pad, \
                              int lp, int64_t lo, int64_t hi)                 \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        const int64_t last = w->nsp - 1;                                      \
        for (int64_t e = lo; e < hi; e++) {                                   \
            s_at a;                                                           \
            s_at_init(w, e % w->out_size, &a);                                \
            const T *xc = x + e / w->out_size * w->in_size;                   \
            V sum = 0;                                                        \
            for (int64_t r = 0; r < a.runs; r++) {                            \
                const T *px = xc + s_at_run(&a, w->nsp, r);                   \
                if (lp == 0) {                                                \
                    for (int64_t t = 0; t < a.n[last]; t++)                   \
                        sum += LD(px[t * a.step[last]]);                      \
                } else {                                                      \
                    for (int64_t t = 0; t < a.n[last]; t++)                   \
                        sum += (V)s_pow_abs(LD(px[t * a.step[last]]), lp);    \
                }                                                             \
            }                                                                 \
            if (lp == 0)                                                      \
                y[e] = ST(sum / (V)(include_pad ? a.padded : a.taps));        \
            else                                                              \
                y[e] = ST((V)s_root(sum, lp));                                \
        }                                                                     \
    }

/* |v|^p and its inverse, exact for the usual p = 1 and 2. */
static inline double s_pow_abs(double v, int p)
{
    return p == 1 ? fabs(v) : p == 2 ? v * v : pow(fabs(v), p);
}

static inline double s_root(double v, int p)
{
    return p == 1 ? v : p == 2 ? sqrt(v) : pow(v, 1.0 / p);
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
 * p-norm (kind), one value per channel. */
#define S_GLOBAL(E, T, V, LD, ST)                                             \
    static void s_global_##E(const void *xv, void *yv, int64_t n, int kind, int lp, int64_t lo, \
                             int64_t hi)                                      \
    {                                                                         \
        const T *x = xv;                                                      \
        T *y = yv;                                                            \
        for (int64_t c = lo; c < hi; c++) {                                   \
            const T *xc = x + c * n;                                          \
            V acc = kind == S_GMAX && n > 0 ? LD(xc[0]) : 0;                  \
            if (kind == S_GMAX) {                                             \
                for (int64_t i = 1; i < n; i++) {                             \
                    const V v = LD(xc[i]);                                    \
                    acc = v > acc ? v : acc;                                  \
                }                                                             \
            } else if (kind == S_GAVG) {                                      \
                for (int64_t i = 0; i < n; i++)                               \
                    acc += LD(xc[i]);                                         \
                acc /= (V)n;                                                  \
            } else {                                                          \
                for (int64_t i = 0; i < n; i++)                               \
                    acc += (V)s_pow_abs(LD(xc[i]), lp);                       \
                acc = (V)s_root(acc, lp);                                     \
            }                                                                 \
            y[c] = ST(acc);                                                   \
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
