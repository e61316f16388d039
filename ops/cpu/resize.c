/*
 * Resize and Upsample on the CPU. Each output index along each dim maps to
 * an input coordinate (the coordinate transformation, in float64 and in
 * the ONNX reference's order of operations, so nearest rounding ties break
 * the same way) and from it to taps: 1 input index for nearest, 2 for
 * linear, 4 for cubic, with weights, edge indices clamped. An output
 * element is the sum over the product of every dim's taps.
 *
 * The output is walked in rows along its last dim. A share is an element
 * range; the last dim's taps are worked out once per chunk of columns,
 * the other dims' when their index changes, where taps of weight 0 (dims
 * not resized) drop out. Nearest moves elements of any dtype without
 * arithmetic, and copies a row it has just made when the next reads the
 * same row of x (an upsampled dim); linear and cubic are float32, and
 * interpolate each row of x they read along the last dim once for the
 * rows of output that read it (s_hcache), which then blend such rows.
 * A linear resize of the last two dims alone takes ONNX Runtime's
 * bilinear arithmetic instead (s_bilinear_rows, below), bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/layout.h"
#include "ops/nn.h"

/* Columns whose taps are held at once (on the stack). */
#define S_CHUNK 256
#define S_MAXTAPS 4

typedef struct s_taps {
    int n;
    bool outside; /* tf_crop_and_resize beyond the input: the extrapolation value */
    int64_t i[S_MAXTAPS];
    float w[S_MAXTAPS];
} s_taps;

/* Input coordinate of output index xi along dim d. The reference's output
 * width is scale * in as a float, which differs from the integer size when
 * scales are given (align_corners and friends see it). */
static double s_coord(const gx_resize *r, int d, int64_t xi, bool *outside)
{
    const double x = (double)xi, in = (double)r->in[d], s = r->scale[d];
    const double out = s * in;
    *outside = false;
    switch (r->coord) {
    case GX_COORD_HALF_PIXEL:
        return (x + 0.5) / s - 0.5;
    case GX_COORD_HALF_PIXEL_SYMMETRIC: {
        const double adjustment = (double)r->out[d] / out, center = in / 2;
        return center * (1 - adjustment) + (x + 0.5) / s - 0.5;
    }
    case GX_COORD_PYTORCH_HALF_PIXEL:
        return out == 1 ? -0.5 : (x + 0.5) / s - 0.5;
    case GX_COORD_ALIGN_CORNERS:
        return out == 1 ? 0 : x * (in - 1) / (out - 1);
    case GX_COORD_ASYMMETRIC:
        return x / s;
    case GX_COORD_TF_HALF_PIXEL_FOR_NN:
        return (x + 0.5) / s;
    case GX_COORD_TF_CROP_AND_RESIZE: {
        const double lo = r->roi_lo[d], hi = r->roi_hi[d];
        double v = out == 1 ? (hi - lo) * (in - 1) / 2 : x * (hi - lo) * (in - 1) / (out - 1);
        v += lo * (in - 1);
        *outside = !(v >= 0 && v <= in - 1);
        return v;
    }
    }
    return 0;
}

/* The nearest input index to coordinate v: ties and fractions as
 * nearest_mode says (an integral v is itself). */
static int64_t s_nearest(const gx_resize *r, int d, double v)
{
    if (r->nearest == GX_NEAREST_SIMPLE)
        return r->scale[d] < 1 ? (int64_t)ceil(v) : (int64_t)floor(v);
    const double f = floor(v), ratio = v - f;
    if (ratio == 0)
        return (int64_t)f;
    switch (r->nearest) {
    case GX_NEAREST_ROUND_PREFER_FLOOR:
        return (int64_t)f + (ratio > 0.5);
    case GX_NEAREST_ROUND_PREFER_CEIL:
        return (int64_t)f + (ratio >= 0.5);
    case GX_NEAREST_FLOOR:
        return (int64_t)f;
    case GX_NEAREST_CEIL:
    case GX_NEAREST_SIMPLE:
        break;
    }
    return (int64_t)f + 1;
}

/* Taps of output index xo along dim d. */
static void s_taps_at(const gx_resize *r, int d, int64_t xo, s_taps *t)
{
    const int64_t in = r->in[d];
    const double v = s_coord(r, d, xo, &t->outside);
    if (t->outside) { /* no taps; index 0 keeps the nearest gather in bounds */
        t->n = 0;
        t->i[0] = 0;
        return;
    }
    if (r->mode == GX_INTERP_NEAREST) {
        const int64_t i = s_nearest(r, d, v);
        t->n = 1;
        t->i[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
        t->w[0] = 1;
        return;
    }
    /* the left neighbour f and ratio in (0, 1]: an integral v takes the
     * neighbours to its left with weight 0 on the first, as the
     * reference does */
    const double f = ceil(v) - 1, ratio = v - f;
    double w[S_MAXTAPS];
    int64_t first;
    if (r->mode == GX_INTERP_LINEAR) {
        t->n = 2;
        first = (int64_t)f;
        w[0] = 1 - ratio;
        w[1] = ratio;
    } else {
        const double A = r->cubic_a, u = 1 - ratio;
        t->n = 4;
        first = (int64_t)f - 1;
        w[0] = ((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A;
        w[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
        w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
        w[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
    }
    if (r->exclude_outside) {
        double sum = 0;
        for (int j = 0; j < t->n; j++) {
            if (first + j < 0 || first + j >= in)
                w[j] = 0;
            sum += w[j];
        }
        for (int j = 0; j < t->n && sum != 0; j++)
            w[j] /= sum;
    }
    for (int j = 0; j < t->n; j++) {
        const int64_t i = first + j;
        t->i[j] = i < 0 ? 0 : i >= in ? in - 1 : i;
        t->w[j] = (float)w[j];
    }
}

/* The taps of the dims before the last for the rows a share walks in
 * order: each dim's are worked out again only when its index changes. */
typedef struct s_rows {
    int64_t at[GX_MAX_DIMS]; /* the index whose taps tap[] holds, -1: none */
    s_taps tap[GX_MAX_DIMS]; /* with taps of weight 0 dropped */
    bool outside[GX_MAX_DIMS];
} s_rows;

static void s_rows_init(s_rows *rs)
{
    for (int d = 0; d < GX_MAX_DIMS; d++)
        rs->at[d] = -1;
}

/* One row's worth of the dims before the last: their taps with weight 0
 * dropped, in rt. Returns false when the row lies outside
 * (tf_crop_and_resize). */
static bool s_row_taps(const gx_resize *r, int64_t row, s_rows *rs, s_taps *rt)
{
    bool inside = true;
    for (int d = r->ndim - 2; d >= 0; d--) {
        const int64_t idx = row % r->out[d];
        row /= r->out[d];
        if (rs->at[d] != idx) {
            s_taps t;
            s_taps_at(r, d, idx, &t);
            rs->at[d] = idx;
            rs->outside[d] = t.outside;
            rs->tap[d].n = 0;
            for (int j = 0; j < t.n; j++) {
                if (t.w[j] != 0) {
                    rs->tap[d].i[rs->tap[d].n] = t.i[j];
                    rs->tap[d].w[rs->tap[d].n++] = t.w[j];
                }
            }
        }
        inside &= !rs->outside[d];
        rt[d] = rs->tap[d];
    }
    return inside;
}

/* y[c] = x[base + idx[c]] for c in [a, b), elements of es bytes. */
static void s_gather_row(size_t es, void *y, const void *x, int64_t base, const int64_t *idx,
                         int64_t a, int64_t b)
{
#define S_GATHER(T)                                                           \
    do {                                                                      \
        T *restrict y_ = y;                                                   \
        const T *restrict x_ = (const T *)x + base;                           \
        for (int64_t c = a; c < b; c++)                                       \
            y_[c] = x_[idx[c]];                                               \
    } while (0)
    switch (es) {
    case 1:
        S_GATHER(uint8_t);
        break;
    case 2:
        S_GATHER(uint16_t);
        break;
    case 4:
        S_GATHER(uint32_t);
        break;
    default:
        S_GATHER(uint64_t);
        break;
    }
#undef S_GATHER
}

/* h[c] = the sum of the column taps of x + base, for c in [a, b)
 * (float32): one row of x interpolated along the last dim. */
static void s_interp_row(float *restrict h, const float *restrict x, const s_taps *col, int64_t a,
                         int64_t b)
{
    for (int64_t c = a; c < b; c++) {
        const s_taps *t = &col[c];
        float v = 0;
        for (int j = 0; j < t->n; j++)
            v += t->w[j] * x[t->i[j]];
        h[c] = v;
    }
}

/* y[c] (=, or += when add) w * h[c] for c in [a, b). */
GX_CPU_CLONES static void s_blend_row(float *restrict y, const float *restrict h, int64_t a,
                                      int64_t b, float w, bool add)
{
    if (add)
        for (int64_t c = a; c < b; c++)
            y[c] += w * h[c];
    else
        for (int64_t c = a; c < b; c++)
            y[c] = w * h[c];
}

/* Rows of x interpolated along the last dim (columns [a, b) of the
 * current chunk), kept while the rows of the output that read them are
 * made: upsampling by s along a row dim reads each row of x for about s
 * rows of output (and 2 or 4 times as a tap), which then only blend. */
#define S_HROWS 4
typedef struct s_hcache {
    int64_t base[S_HROWS], a[S_HROWS], b[S_HROWS];
    int next;
    float h[S_HROWS][S_CHUNK];
} s_hcache;

static void s_hcache_reset(s_hcache *hc)
{
    for (int i = 0; i < S_HROWS; i++)
        hc->base[i] = -1;
    hc->next = 0;
}

/* Row x + base interpolated, columns [a, b): from the cache or made into
 * its oldest slot. */
static const float *s_hrow(s_hcache *hc, const float *x, int64_t base, const s_taps *col,
                           int64_t a, int64_t b)
{
    for (int i = 0; i < S_HROWS; i++)
        if (hc->base[i] == base && hc->a[i] == a && hc->b[i] == b)
            return hc->h[i];
    const int i = hc->next;
    hc->next = (i + 1) % S_HROWS;
    s_interp_row(hc->h[i], x + base, col, a, b);
    hc->base[i] = base, hc->a[i] = a, hc->b[i] = b;
    return hc->h[i];
}

/* The row of x the last nearest-mode row gathered, and where it put
 * columns [a, b) of it: a row that gathers the same (an upsampled dim)
 * copies them. */
typedef struct s_prev {
    int64_t base, a, b;
    const char *y;
} s_prev;

/* Columns [a, b) of output row `row`, given the column taps col (indexed
 * by column, already offset by the chunk's start; idx: their first taps'
 * indices). */
static void s_resize_row(const gx_resize *r, const gx_view *x, const int64_t *xs, void *yrow,
                         int64_t row, const s_taps *col, const int64_t *idx, s_rows *rs,
                         s_prev *prev, s_hcache *hc, int64_t a, int64_t b)
{
    const int L = r->ndim - 1;
    s_taps rt[GX_MAX_DIMS];
    float *fy = yrow;
    if (!s_row_taps(r, row, rs, rt)) {
        for (int64_t c = a; c < b; c++)
            fy[c] = r->extrapolation;
        prev->y = NULL;
        return;
    }
    if (r->mode == GX_INTERP_NEAREST) {
        int64_t base = 0;
        for (int d = 0; d < L; d++)
            base += rt[d].i[0] * xs[d];
        const size_t es = gx_dtype_size(x->dtype);
        if (prev->y && prev->base == base && prev->a == a && prev->b == b)
            memcpy((char *)yrow + (size_t)a * es, prev->y + (size_t)a * es,
                   (size_t)(b - a) * es);
        else
            s_gather_row(es, yrow, x->data, base, idx, a, b);
        *prev = (s_prev){base, a, b, yrow};
    } else {
        /* every combination of the row dims' taps, odometer-style */
        int at[GX_MAX_DIMS] = {0};
        for (bool first = true;; first = false) {
            int64_t base = 0;
            float w = 1;
            for (int d = 0; d < L; d++) {
                base += rt[d].i[at[d]] * xs[d];
                w *= rt[d].w[at[d]];
            }
            s_blend_row(fy, s_hrow(hc, x->data, base, col, a, b), a, b, w, !first);
            int d = L - 1;
            while (d >= 0 && ++at[d] == rt[d].n)
                at[d--] = 0;
            if (d < 0)
                break;
        }
    }
    for (int64_t c = a; c < b; c++)
        if (col[c].outside)
            fy[c] = r->extrapolation;
}

/* ---- 2-D linear, as ONNX Runtime's bilinear kernel ----
 * A linear Resize or Upsample of the last two dims of a float32 tensor
 * (images in NCHW, or a matrix) is computed as ONNX Runtime computes it,
 * bit for bit: each output element from its four neighbours, coordinates
 * in float32, weights dx * dy, summed in one order. The separable walk
 * below rounds in another order, a few ulps away; a quantized model
 * requantizes such values, and one ulp there can move a level (ISNet's
 * masks then differed from ONNX Runtime's by 17%). */

/* One dim's two neighbours of an output index and their weights. */
typedef struct s_bl {
    int64_t i1, i2;
    float d1, d2; /* d1: the distance to i1 (i2's weight), d2: to i2 */
} s_bl;

/* The input coordinate of output index o along dim d in float32, as
 * ONNX Runtime's (the output length, as the reference's, scale * in). */
static float s_coordf(const gx_resize *r, int d, int64_t o)
{
    const float x = (float)o, s = (float)r->scale[d];
    const float in = (float)r->in[d], out = (float)(r->scale[d] * (double)r->in[d]);
    switch (r->coord) {
    case GX_COORD_PYTORCH_HALF_PIXEL:
        return out > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case GX_COORD_ALIGN_CORNERS:
        return out == 1 ? 0.0f : x * (in - 1) / (out - 1);
    case GX_COORD_ASYMMETRIC:
        return x / s;
    case GX_COORD_HALF_PIXEL:
    case GX_COORD_HALF_PIXEL_SYMMETRIC: /* (not taken: s_bilinear_fits) */
    case GX_COORD_TF_HALF_PIXEL_FOR_NN:
    case GX_COORD_TF_CROP_AND_RESIZE:
        break;
    }
    return (x + 0.5f) / s - 0.5f;
}

static s_bl s_bl_at(const gx_resize *r, int d, int64_t o)
{
    const int64_t in = r->in[d];
    float v = r->scale[d] == 1 ? (float)o : s_coordf(r, d, o);
    const float top = (float)(in - 1);
    v = v < top ? v : top;
    v = v > 0.0f ? v : 0.0f;
    s_bl b;
    b.i1 = (int64_t)v < in - 1 ? (int64_t)v : in - 1;
    b.i2 = b.i1 + 1 < in - 1 ? b.i1 + 1 : in - 1;
    b.d1 = fabsf(v - (float)b.i1);
    b.d2 = fabsf(v - (float)b.i2);
    if (b.i1 == b.i2)
        b.d1 = b.d2 = 0.5f;
    return b;
}

/* Does r resize the last two dims of a float32 x only, linearly, with a
 * coordinate transformation where ONNX Runtime's bilinear kernel agrees
 * with the ONNX reference (it does not for tf_half_pixel_for_nn, whose
 * linear form the reference's tests check)? */
static bool s_bilinear_fits(const gx_resize *r, const gx_view *x)
{
    if (r->mode != GX_INTERP_LINEAR || x->dtype != GX_F32 || r->ndim < 2 ||
        r->coord == GX_COORD_TF_CROP_AND_RESIZE || r->coord == GX_COORD_HALF_PIXEL_SYMMETRIC ||
        r->coord == GX_COORD_TF_HALF_PIXEL_FOR_NN)
        return false;
    for (int d = 0; d < r->ndim - 2; d++)
        if (r->in[d] != r->out[d] || r->scale[d] != 1)
            return false;
    return true;
}

/* Rows [lo, hi) of the output (planes x OH rows of OW), columns a chunk
 * at a time. */
GX_CPU_CLONES static void s_bilinear_rows(const gx_resize *r, const float *restrict x,
                                          float *restrict y, int64_t lo, int64_t hi)
{
    const int H = r->ndim - 2, W = r->ndim - 1;
    const int64_t IH = r->in[H], IW = r->in[W], OH = r->out[H], OW = r->out[W];
    s_bl col[S_CHUNK];
    for (int64_t c0 = 0; c0 < OW; c0 += S_CHUNK) {
        const int64_t n = OW - c0 < S_CHUNK ? OW - c0 : S_CHUNK;
        for (int64_t c = 0; c < n; c++)
            col[c] = s_bl_at(r, W, c0 + c);
        for (int64_t row = lo; row < hi; row++) {
            const s_bl b = s_bl_at(r, H, row % OH);
            const float *x1 = x + (row / OH * IH + b.i1) * IW, *x2 = x + (row / OH * IH + b.i2) * IW;
            float *yr = y + row * OW + c0;
            for (int64_t c = 0; c < n; c++) {
                const s_bl a = col[c];
                yr[c] = a.d2 * b.d2 * x1[a.i1] + a.d1 * b.d2 * x1[a.i2] + a.d2 * b.d1 * x2[a.i1] +
                        a.d1 * b.d1 * x2[a.i2];
            }
        }
    }
}

static void s_resize(const gx_kargs *k, gx_op op)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    gx_resize r;
    char err[256];
    /* infer accepted these inputs, so this cannot fail */
    gx_resize_setup(&(gx_infer){.attr = k->attr, .n_in = k->n_in, .in = k->in, .err = err,
                                .errlen = sizeof err},
                    op, &r);
    if (y->numel == 0)
        return;
    if (s_bilinear_fits(&r, x)) {
        int64_t lo, hi;
        gx_cpu_share(k, y->numel / r.out[r.ndim - 1], 1, &lo, &hi);
        s_bilinear_rows(&r, x->data, y->data, lo, hi);
        return;
    }
    const int L = r.ndim - 1;
    const int64_t W = r.out[L];
    const size_t es = gx_dtype_size(x->dtype);
    int64_t xs[GX_MAX_DIMS];
    for (int64_t d = L, s = 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->shape[d];
    }
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, 64 / (int64_t)es, &lo, &hi); /* on cache lines */
    if (lo >= hi)
        return;
    const int64_t r0 = lo / W, r1 = (hi - 1) / W + 1;
    s_taps col[S_CHUNK];
    int64_t idx[S_CHUNK];
    s_rows rs;
    s_rows_init(&rs);
    s_hcache hc;
    for (int64_t c0 = 0; c0 < W; c0 += S_CHUNK) {
        const int64_t c1 = W - c0 < S_CHUNK ? W : c0 + S_CHUNK;
        bool have_taps = false;
        s_prev prev = {0};
        s_hcache_reset(&hc);
        for (int64_t row = r0; row < r1; row++) {
            /* this share's part of the chunk in this row */
            const int64_t a = lo - row * W > c0 ? lo - row * W : c0;
            const int64_t b = hi - row * W < c1 ? hi - row * W : c1;
            if (a >= b)
                continue;
            if (!have_taps) {
                for (int64_t c = c0; c < c1; c++) {
                    s_taps_at(&r, L, c, &col[c - c0]);
                    idx[c - c0] = col[c - c0].i[0];
                }
                have_taps = true;
            }
            s_resize_row(&r, x, xs, (char *)y->data + (size_t)(row * W + c0) * es, row, col,
                         idx, &rs, &prev, &hc, a - c0, b - c0);
        }
    }
}

void gx_cpu_RESIZE(const gx_kargs *k)
{
    s_resize(k, GX_OP_RESIZE);
}

void gx_cpu_UPSAMPLE(const gx_kargs *k)
{
    s_resize(k, GX_OP_UPSAMPLE);
}

/* ---- NHWC (the layout pass's kernel) ---- */

/* Output columns whose input columns are worked out once per call. */
#define S_NHWC_COLS 4096

/* The plan of x in NHWC (k->in[0] physical) as gx_resize sees it. */
static void s_nhwc_setup(const gx_kargs *k, gx_resize *r)
{
    gx_view in[GX_MAX_OP_INPUTS];
    char err[256];
    for (int i = 0; i < k->n_in && i < GX_MAX_OP_INPUTS; i++)
        in[i] = k->in[i];
    in[0] = gx_layout_logical(&k->in[0]);
    gx_resize_setup(&(gx_infer){.attr = k->attr, .n_in = k->n_in, .in = in, .err = err,
                                .errlen = sizeof err},
                    GX_OP_RESIZE, r);
}

/* Pixels [lo, hi) of y [N, OH, OW, C]: each the C floats of its nearest
 * input pixel. */
static void s_resize_nhwc(const gx_kargs *k)
{
    gx_resize r;
    s_nhwc_setup(k, &r);
    const int64_t C = r.out[1], OH = r.out[2], OW = r.out[3], IH = r.in[2], IW = r.in[3];
    const size_t bytes = (size_t)C * gx_dtype_size(k->in[0].dtype);
    const char *x = k->in[0].data;
    char *y = k->out[0].data;
    int64_t lo, hi, cols[S_NHWC_COLS];
    gx_cpu_share(k, r.out[0] * OH * OW, 1, &lo, &hi);
    const bool table = OW <= S_NHWC_COLS;
    s_taps t;
    for (int64_t c = 0; table && c < OW; c++) {
        s_taps_at(&r, 3, c, &t);
        cols[c] = t.i[0];
    }
    int64_t row = -1, iy = 0;
    for (int64_t p = lo; p < hi; p++) {
        const int64_t n = p / (OH * OW), oy = p / OW % OH, ox = p % OW;
        if (p / OW != row) {
            row = p / OW;
            s_taps_at(&r, 2, oy, &t);
            iy = t.i[0];
        }
        int64_t ix;
        if (table) {
            ix = cols[ox];
        } else {
            s_taps_at(&r, 3, ox, &t);
            ix = t.i[0];
        }
        memcpy(y + (size_t)p * bytes, x + (size_t)((n * IH + iy) * IW + ix) * bytes, bytes);
    }
}

gx_kernel_fn gx_cpu_resize_layout(gx_layout l, const gx_infer *ic, char *why, size_t len)
{
    const char *ln = gx_layout_name(l);
    if (l != GX_LAYOUT_NHWC) {
        snprintf(why, len, "%s: no Resize kernel (nhwc only)", ln);
        return NULL;
    }
    const gx_view *x = &ic->in[0];
    gx_resize r;
    char err[256];
    gx_infer c = *ic;
    c.err = err, c.errlen = sizeof err;
    if (x->ndim != 4 || x->dtype != GX_F32 || gx_resize_setup(&c, GX_OP_RESIZE, &r) != GX_OK) {
        snprintf(why, len, "%s: Resize of a %d-D input, or scales not known when planned", ln,
                 x->ndim);
        return NULL;
    }
    if (r.mode != GX_INTERP_NEAREST || r.coord == GX_COORD_TF_CROP_AND_RESIZE) {
        snprintf(why, len, "%s: Resize other than nearest", ln);
        return NULL;
    }
    /* N and C must map to themselves */
    for (int d = 0; d < 2; d++) {
        bool same = r.out[d] == r.in[d];
        for (int64_t i = 0; same && i < r.in[d]; i++) {
            s_taps t;
            s_taps_at(&r, d, i, &t);
            same = !t.outside && t.i[0] == i;
        }
        if (!same) {
            snprintf(why, len, "%s: Resize of the batch or channel dim", ln);
            return NULL;
        }
    }
    return s_resize_nhwc;
}

gx_kernel_fn gx_cpu_resize_layout_fn(void)
{
    return s_resize_nhwc;
}
