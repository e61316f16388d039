/*
 * Elementwise CPU kernels, float32. Each op is one expression; the macros
 * below turn it into row loops simple enough for gcc to vectorise, and the
 * shared drivers split the output's elements across threads and feed the
 * rows (broadcasting through gx_nditer for the binary ops).
 */
#include "ops/cpu/cpu.h"
#include "ops/cpu/vmath.h"

/* y[0..n) = f(a, b) for one run; a and/or b may be a single repeated value
 * (the _vs / _sv variants), never both unless n == 1. */
typedef void (*s_binary_row)(int64_t n, float *restrict y, const float *restrict a,
                             const float *restrict b);

/* Drives a binary op over this thread's share of the output. vv: both
 * operands advance along a run; vs: b is one value; sv: a is one value.
 * Same-shape and scalar operands collapse into a single run; a row
 * broadcast ([2,3] + [3]) gives contiguous runs of the row length. */
static void s_binary(const gx_kargs *k, s_binary_row vv, s_binary_row vs, s_binary_row sv)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t sa[GX_MAX_DIMS], sb[GX_MAX_DIMS];
    gx_bcast_strides(y->ndim, a->ndim, a->shape, sa);
    gx_bcast_strides(y->ndim, b->ndim, b->shape, sb);
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 2, (const int64_t *const[]){sa, sb});
    s_binary_row row = it.step[0] && it.step[1] ? vv
                       : it.step[0]             ? vs
                       : it.step[1]             ? sv
                                                : vv; /* one element */
    gx_nditer_seek(&it, lo, hi);
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r))
        row(r.n, py + r.y, pa + r.off[0], pb + r.off[1]);
}

/* The three row loops of a binary op whose element is EXPR of x (from a)
 * and z (from b), and its kernel gx_cpu_<E>. */
#define GX_BINARY_KERNEL(E, EXPR)                                             \
    static void s_##E##_vv(int64_t n, float *restrict y, const float *restrict a, \
                           const float *restrict b)                           \
    {                                                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            const float x = a[i], z = b[i];                                   \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }                                                                         \
    static void s_##E##_vs(int64_t n, float *restrict y, const float *restrict a, \
                           const float *restrict b)                           \
    {                                                                         \
        const float z = b[0];                                                 \
        for (int64_t i = 0; i < n; i++) {                                     \
            const float x = a[i];                                             \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }                                                                         \
    static void s_##E##_sv(int64_t n, float *restrict y, const float *restrict a, \
                           const float *restrict b)                           \
    {                                                                         \
        const float x = a[0];                                                 \
        for (int64_t i = 0; i < n; i++) {                                     \
            const float z = b[i];                                             \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }                                                                         \
    void gx_cpu_##E(const gx_kargs *k) { s_binary(k, s_##E##_vv, s_##E##_vs, s_##E##_sv); }

GX_BINARY_KERNEL(ADD, x + z)
GX_BINARY_KERNEL(SUB, x - z)
GX_BINARY_KERNEL(MUL, x * z)
GX_BINARY_KERNEL(DIV, x / z)

/* The row loop of a unary op whose element is EXPR of v, and its kernel
 * gx_cpu_<E>: input and output have one shape, so a share is one run. */
#define GX_UNARY_KERNEL(E, EXPR)                                              \
    static void s_##E##_row(int64_t n, float *restrict y, const float *restrict x) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            const float v = x[i];                                             \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }                                                                         \
    void gx_cpu_##E(const gx_kargs *k)                                        \
    {                                                                         \
        int64_t lo, hi;                                                       \
        gx_cpu_share(k, k->out[0].numel, GX_CPU_LINE, &lo, &hi);              \
        if (lo < hi)                                                          \
            s_##E##_row(hi - lo, (float *)k->out[0].data + lo,                \
                        (const float *)k->in[0].data + lo);                   \
    }

GX_UNARY_KERNEL(RELU, v < 0.0f ? 0.0f : v) /* NaN stays NaN */
GX_UNARY_KERNEL(SIGMOID, gx_v_sigmoidf(v))
GX_UNARY_KERNEL(TANH, gx_v_tanhf(v))
GX_UNARY_KERNEL(EXP, gx_v_expf(v))
