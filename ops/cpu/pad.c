/*
 * Pad on the CPU, any dtype: negative pads crop first, then each dim is
 * padded from what is left, with a constant or by edge, reflect or wrap.
 * The output is walked in rows along its last dim: a row whose outer
 * indices fall in constant padding is all constant, else it is the
 * source row's middle (one memcpy) between two padded ends. A share is an
 * element range of the output on cache-line boundaries. CenterCropPad
 * (opset 18) at the end.
 */
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/nn.h"

#define S_LINE_BYTES 64

/* Source index along dim d for output index o, or -1 for the constant. */
static int64_t s_src(const gx_pad *p, int64_t in, int d, int64_t o)
{
    const int64_t b = p->begin[d], e = p->end[d];
    const int64_t lead = b > 0 ? b : 0, s0 = b < 0 ? -b : 0;
    const int64_t m = in - s0 - (e < 0 ? -e : 0);
    int64_t j = o - lead;
    if (j >= 0 && j < m)
        return s0 + j;
    switch (p->mode) {
    case GX_PAD_CONSTANT:
        return -1;
    case GX_PAD_EDGE:
        return s0 + (j < 0 ? 0 : m - 1);
    case GX_PAD_REFLECT: {
        if (m == 1)
            return s0;
        const int64_t period = 2 * (m - 1);
        j %= period;
        j = j < 0 ? j + period : j;
        return s0 + (j >= m ? period - j : j);
    }
    case GX_PAD_WRAP:
        j %= m;
        return s0 + (j < 0 ? j + m : j);
    }
    return -1;
}

/* n copies of the es-byte value at y. */
static void s_fill(size_t es, void *y, int64_t n, const unsigned char *value)
{
#define S_FILL(T)                                                             \
    do {                                                                      \
        T v_, *restrict y_ = y;                                               \
        memcpy(&v_, value, sizeof v_);                                        \
        for (int64_t i = 0; i < n; i++)                                       \
            y_[i] = v_;                                                       \
    } while (0)
    switch (es) {
    case 1:
        S_FILL(uint8_t);
        break;
    case 2:
        S_FILL(uint16_t);
        break;
    case 4:
        S_FILL(uint32_t);
        break;
    default:
        S_FILL(uint64_t);
        break;
    }
#undef S_FILL
}

/* Padded output columns [a, b) of a row whose source row starts at src. */
static void s_pad_ends(const gx_pad *p, int64_t in, char *y, const char *src, size_t es,
                       int64_t a, int64_t b)
{
    if (p->mode == GX_PAD_CONSTANT && a < b) {
        s_fill(es, y + (size_t)a * es, b - a, p->value);
        return;
    }
    for (int64_t c = a; c < b; c++)
        memcpy(y + (size_t)c * es, src + (size_t)s_src(p, in, p->ndim - 1, c) * es, es);
}

/* Output columns [a, b) of a row whose source row starts at src (NULL:
 * the row is constant): the last dim's padded ends around one copy. */
static void s_pad_cols(const gx_pad *p, int64_t in, char *y, const char *src, size_t es,
                       int64_t a, int64_t b)
{
    const int L = p->ndim - 1;
    if (!src) {
        s_fill(es, y + (size_t)a * es, b - a, p->value);
        return;
    }
    const int64_t lead = p->begin[L] > 0 ? p->begin[L] : 0;
    const int64_t s0 = p->begin[L] < 0 ? -p->begin[L] : 0;
    const int64_t m = in - s0 - (p->end[L] < 0 ? -p->end[L] : 0);
    const int64_t mid0 = a > lead ? a : lead, mid1 = b < lead + m ? b : lead + m;
    if (mid0 < mid1) {
        memcpy(y + (size_t)mid0 * es, src + (size_t)(s0 + mid0 - lead) * es,
               (size_t)(mid1 - mid0) * es);
        s_pad_ends(p, in, y, src, es, a, mid0);
        s_pad_ends(p, in, y, src, es, mid1, b);
    } else {
        s_pad_ends(p, in, y, src, es, a, b);
    }
}

void gx_cpu_PAD(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    gx_pad p;
    char err[256];
    /* infer accepted these inputs, so this cannot fail */
    gx_pad_setup(&(gx_infer){.attr = k->attr, .n_in = k->n_in, .in = k->in, .err = err,
                             .errlen = sizeof err},
                 &p);
    const size_t es = gx_dtype_size(x->dtype);
    if (y->numel == 0)
        return;
    if (y->ndim == 0) { /* a scalar: nothing to pad */
        if (k->ith == 0)
            memcpy(y->data, x->data, es);
        return;
    }
    const int L = y->ndim - 1;
    const int64_t W = y->shape[L];
    int64_t xs[GX_MAX_DIMS];
    for (int64_t d = L, s = 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->shape[d];
    }
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / (int64_t)es, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t row = u / W, a = u % W, b = hi - row * W < W ? hi - row * W : W;
        const char *src = x->data;
        int64_t rest = row;
        for (int d = L - 1; d >= 0 && src; d--) {
            const int64_t s = s_src(&p, x->shape[d], d, rest % y->shape[d]);
            rest /= y->shape[d];
            src = s < 0 ? NULL : src + (size_t)(s * xs[d]) * es;
        }
        s_pad_cols(&p, x->shape[L], (char *)y->data + (size_t)(row * W) * es, src, es, a, b);
        u = row * W + b;
    }
}

/* ---- CenterCropPad ---- */

/* Each dim of the output centres the input's: a smaller output starts
 * (in - out) / 2 into the input (crop), a larger one places the input
 * (out - in) / 2 into itself and zeroes the rest (pad); the halves round
 * down, as in the ONNX reference. The output is walked in rows along its
 * last dim, a share being a range of rows; zero bytes are 0 in every
 * dtype. */
void gx_cpu_CENTER_CROP_PAD(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int nd = y->ndim;
    const size_t es = gx_dtype_size(y->dtype);
    int64_t delta[GX_MAX_DIMS], xstride[GX_MAX_DIMS];
    int64_t st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        const int64_t in = x->shape[d], out = y->shape[d];
        delta[d] = in >= out ? (in - out) / 2 : -((out - in) / 2); /* source = dest + delta */
        xstride[d] = st;
        st *= in;
    }
    const int64_t w = nd ? y->shape[nd - 1] : 1;
    if (w == 0 || y->numel == 0)
        return;
    const int64_t rows = y->numel / w;
    /* the last dim's columns [c0, c1) have a source */
    int64_t c0 = 0, c1 = w;
    if (nd) {
        const int64_t dl = delta[nd - 1], in = x->shape[nd - 1];
        c0 = dl < 0 ? -dl : 0;
        c1 = in - dl < w ? in - dl : w;
        if (c1 < c0)
            c1 = c0;
    }
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        char *yr = (char *)y->data + (size_t)(r * w) * es;
        int64_t src = 0, rem = r;
        bool inside = true;
        for (int d = nd - 2; d >= 0; d--) {
            const int64_t o = rem % y->shape[d], i = o + delta[d];
            rem /= y->shape[d];
            inside = inside && i >= 0 && i < x->shape[d];
            src += i * xstride[d];
        }
        if (!inside || c1 == c0) {
            memset(yr, 0, (size_t)w * es);
            continue;
        }
        if (nd)
            src += c0 + delta[nd - 1];
        memset(yr, 0, (size_t)c0 * es);
        memcpy(yr + (size_t)c0 * es, (const char *)x->data + (size_t)src * es,
               (size_t)(c1 - c0) * es);
        memset(yr + (size_t)c1 * es, 0, (size_t)(w - c1) * es);
    }
}
