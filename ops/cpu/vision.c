/* CPU kernels of the vision family (GX_OPS_VISION in ops/op.h): GridSample,
 * RoiAlign, MaxRoiPool and AffineGrid, following the ONNX reference implementations (which follow
 * onnxruntime's) step by step, coordinates in double. */
#include <float.h>
#include <math.h>

#include "ops/cpu/cpu.h"

/* ---- GridSample ---- */

typedef enum { S_NEAREST, S_LINEAR, S_CUBIC } s_interp;
typedef enum { S_ZEROS, S_BORDER, S_REFLECTION } s_padding;

/* The taps of one spatial dim: pixel indices (-1: a zero) and weights. */
typedef struct s_taps {
    int n;
    int64_t idx[4];
    double w[4];
} s_taps;

/* Mirrors x into [lo, hi] (the reference's _gs_reflect; the final clamp
 * absorbs rounding for far coordinates). */
static double s_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0)
        return lo;
    if (x < lo || x > hi) {
        double dx = x < lo ? lo - x : x - hi;
        double n = floor(dx / rng), r = dx - n * rng;
        bool even = fmod(n, 2.0) == 0;
        x = (x < lo) == even ? lo + r : hi - r;
    }
    return x < lo ? lo : x > hi ? hi : x;
}

/* Index of pixel i of a dim of d after padding, or -1 for a zero. */
static int64_t s_pixel(int64_t i, int64_t d, s_padding pad, double lo, double hi)
{
    if (d < 1)
        return -1;
    switch (pad) {
    case S_ZEROS:
        return i >= 0 && i < d ? i : -1;
    case S_BORDER:
        return i < 0 ? 0 : i >= d ? d - 1 : i;
    case S_REFLECTION:
        return (int64_t)s_reflect((double)i, lo, hi);
    }
    return -1;
}

static void s_cubic_coeffs(double t, double c[4])
{
    const double a = -0.75;
    t = fabs(t);
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    c[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
    c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    c[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
    c[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

/* The taps for normalised coordinate g along a dim of d pixels. */
static void s_grid_taps(float g, int64_t d, bool align, s_interp interp, s_padding pad,
                        s_taps *t)
{
    double lo = align ? 0.0 : -0.5, hi = align ? (double)d - 1 : (double)d - 0.5;
    double x = align ? ((double)g + 1) / 2 * (double)(d - 1) : (((double)g + 1) * (double)d - 1) / 2;
    if (isnan(x)) { /* a NaN coordinate gives a NaN */
        *t = (s_taps){.n = 1, .idx = {d > 0 ? 0 : -1}, .w = {NAN}};
        return;
    }
    if (interp == S_NEAREST)
        x = nearbyint(x); /* numpy's rint: halves to even */
    if (x < lo || x > hi) {
        if (pad == S_BORDER)
            x = x < 0 ? 0 : x > (double)d - 1 ? (double)d - 1 : x;
        else if (pad == S_REFLECTION)
            x = s_reflect(x, lo, hi);
    }
    /* Far outside (only with zeros padding) every tap is a zero; keep the
     * integer conversions below in range. */
    if (x < -8)
        x = -8;
    if (x > (double)d + 8)
        x = (double)d + 8;
    int64_t x0 = (int64_t)floor(x);
    switch (interp) {
    case S_NEAREST:
        t->n = 1;
        t->idx[0] = s_pixel((int64_t)x, d, pad, lo, hi);
        t->w[0] = 1;
        break;
    case S_LINEAR:
        t->n = 2;
        t->idx[0] = s_pixel(x0, d, pad, lo, hi);
        t->idx[1] = s_pixel(x0 + 1, d, pad, lo, hi);
        t->w[0] = (double)(x0 + 1) - x;
        t->w[1] = x - (double)x0;
        break;
    case S_CUBIC:
        t->n = 4;
        s_cubic_coeffs(x - (double)x0, t->w);
        for (int i = 0; i < 4; i++)
            t->idx[i] = s_pixel(x0 - 1 + i, d, pad, lo, hi);
        break;
    }
}

/* Shares are output positions (n, h_out, w_out); each computes its taps
 * once and applies them to every channel. */
void gx_cpu_GRIDSAMPLE(const gx_kargs *k)
{
    const gx_view *xv = &k->in[0], *y = &k->out[0];
    const float *x = xv->data, *grid = k->in[1].data;
    float *out = y->data;
    const char *mode = k->attr[GX_GRIDSAMPLE_MODE].s;
    const char *padm = k->attr[GX_GRIDSAMPLE_PADDING_MODE].s;
    s_interp interp = strcmp(mode, "nearest") == 0 ? S_NEAREST
                      : strstr(mode, "cubic")      ? S_CUBIC
                                                   : S_LINEAR;
    s_padding pad = strcmp(padm, "border") == 0       ? S_BORDER
                    : strcmp(padm, "reflection") == 0 ? S_REFLECTION
                                                      : S_ZEROS;
    bool align = k->attr[GX_GRIDSAMPLE_ALIGN_CORNERS].i != 0;
    int64_t C = xv->shape[1], H = xv->shape[2], W = xv->shape[3];
    int64_t hw_out = y->shape[2] * y->shape[3];
    int64_t lo, hi;
    gx_cpu_share(k, y->shape[0] * hw_out, 1, &lo, &hi);
    for (int64_t p = lo; p < hi; p++) {
        int64_t n = p / hw_out, q = p % hw_out;
        s_taps tx, ty;
        s_grid_taps(grid[2 * p], W, align, interp, pad, &tx);
        s_grid_taps(grid[2 * p + 1], H, align, interp, pad, &ty);
        for (int64_t c = 0; c < C; c++) {
            const float *plane = x + (n * C + c) * H * W;
            double acc = 0;
            for (int i = 0; i < ty.n; i++) {
                double row = 0;
                for (int j = 0; j < tx.n; j++)
                    if (ty.idx[i] >= 0 && tx.idx[j] >= 0)
                        row += tx.w[j] * plane[ty.idx[i] * W + tx.idx[j]];
                acc += ty.w[i] * row;
            }
            out[(n * C + c) * hw_out + q] = (float)acc;
        }
    }
}

/* ---- RoiAlign ---- */

/* Bilinear sample of an H x W plane at (y, x) the way onnxruntime's
 * pre_calc does it: NaN-free, clamped at the edges, 0 far outside. Writes
 * the four taps' offsets and weights. */
static void s_roi_taps(double y, double x, int64_t H, int64_t W, int64_t pos[4], double w[4])
{
    if (!(y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W) || H < 1 || W < 1) {
        for (int i = 0; i < 4; i++)
            pos[i] = 0, w[i] = 0;
        return;
    }
    if (y <= 0)
        y = 0;
    if (x <= 0)
        x = 0;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= H - 1) {
        yh = yl = H - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= W - 1) {
        xh = xl = W - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
    w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
}

/* Shares are (RoI, channel) planes. A batch index out of range (possible
 * only when infer could not see it) or an empty image gives zeros. Max mode takes
 * the largest weighted tap, as the reference and onnxruntime do. */
void gx_cpu_ROIALIGN(const gx_kargs *k)
{
    const gx_view *xv = &k->in[0], *y = &k->out[0];
    const float *x = xv->data, *rois = k->in[1].data;
    const int64_t *batch = k->in[2].data;
    float *out = y->data;
    const gx_attrval *a = k->attr;
    bool half_pixel = strcmp(a[GX_ROIALIGN_COORD_MODE].s, "half_pixel") == 0;
    bool max_mode = strcmp(a[GX_ROIALIGN_MODE].s, "max") == 0;
    int64_t ratio = a[GX_ROIALIGN_SAMPLING_RATIO].i;
    double scale = a[GX_ROIALIGN_SPATIAL_SCALE].f, offset = half_pixel ? 0.5 : 0.0;
    int64_t N = xv->shape[0], C = xv->shape[1], H = xv->shape[2], W = xv->shape[3];
    int64_t OH = y->shape[2], OW = y->shape[3];
    int64_t lo, hi;
    gx_cpu_share(k, y->shape[0] * C, 1, &lo, &hi);
    for (int64_t p = lo; p < hi; p++) {
        int64_t r = p / C, c = p % C, b = batch[r];
        float *o = out + p * OH * OW;
        if (b < 0 || b >= N || H * W == 0) {
            memset(o, 0, (size_t)(OH * OW) * sizeof *o);
            continue;
        }
        const float *plane = x + (b * C + c) * H * W;
        const float *roi = rois + 4 * r;
        double x0 = roi[0] * scale - offset, y0 = roi[1] * scale - offset;
        double rw = roi[2] * scale - offset - x0, rh = roi[3] * scale - offset - y0;
        if (!half_pixel) { /* the legacy mode forces malformed RoIs to 1 x 1 */
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)OH, bw = rw / (double)OW;
        /* an adaptive grid, bounded so that a huge RoI cannot stall */
        int64_t gh = ratio > 0 ? ratio : (int64_t)fmin(fmax(ceil(bh), 0), 1 << 16);
        int64_t gw = ratio > 0 ? ratio : (int64_t)fmin(fmax(ceil(bw), 0), 1 << 16);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t ph = 0; ph < OH; ph++)
            for (int64_t pw = 0; pw < OW; pw++) {
                double acc = 0;
                bool first = true;
                for (int64_t iy = 0; iy < gh; iy++) {
                    double sy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                    for (int64_t ix = 0; ix < gw; ix++) {
                        double sx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                        int64_t pos[4];
                        double w[4];
                        s_roi_taps(sy, sx, H, W, pos, w);
                        if (max_mode) {
                            double v = w[0] * plane[pos[0]];
                            for (int i = 1; i < 4; i++)
                                v = fmax(v, w[i] * plane[pos[i]]);
                            acc = first ? v : fmax(acc, v);
                            first = false;
                        } else {
                            for (int i = 0; i < 4; i++)
                                acc += w[i] * plane[pos[i]];
                        }
                    }
                }
                o[ph * OW + pw] = (float)(max_mode ? acc : acc / count);
            }
    }
}

/* ---- MaxRoiPool ---- */

/* Clamps v into [0, d] (bin edges, in pixels); NaN is 0. */
static int64_t s_edge(double v, int64_t d)
{
    return !(v > 0) ? 0 : v >= (double)d ? d : (int64_t)v;
}

/* Shares are (RoI, channel) planes. RoI corners are rounded to pixels
 * (halves away from zero), the RoI spans corner to corner inclusive, and
 * each bin is the max of its pixels, 0 when it is empty (Caffe's and
 * onnxruntime's RoI pooling). */
void gx_cpu_MAXROIPOOL(const gx_kargs *k)
{
    const gx_view *xv = &k->in[0], *y = &k->out[0];
    const float *x = xv->data, *rois = k->in[1].data;
    float *out = y->data;
    double scale = k->attr[GX_MAXROIPOOL_SPATIAL_SCALE].f;
    int64_t N = xv->shape[0], C = xv->shape[1], H = xv->shape[2], W = xv->shape[3];
    int64_t PH = y->shape[2], PW = y->shape[3];
    int64_t lo, hi;
    gx_cpu_share(k, y->shape[0] * C, 1, &lo, &hi);
    for (int64_t p = lo; p < hi; p++) {
        int64_t r = p / C, c = p % C;
        const float *roi = rois + 5 * r;
        float *o = out + p * PH * PW;
        if (!(roi[0] >= 0 && roi[0] < (float)N)) {
            memset(o, 0, (size_t)(PH * PW) * sizeof *o);
            continue;
        }
        const float *plane = x + ((int64_t)roi[0] * C + c) * H * W;
        double x0 = round(roi[1] * scale), y0 = round(roi[2] * scale);
        double x1 = round(roi[3] * scale), y1 = round(roi[4] * scale);
        double bh = fmax(y1 - y0 + 1, 1) / (double)PH, bw = fmax(x1 - x0 + 1, 1) / (double)PW;
        for (int64_t ph = 0; ph < PH; ph++) {
            int64_t hs = s_edge(floor((double)ph * bh) + y0, H);
            int64_t he = s_edge(ceil((double)(ph + 1) * bh) + y0, H);
            for (int64_t pw = 0; pw < PW; pw++) {
                int64_t ws = s_edge(floor((double)pw * bw) + x0, W);
                int64_t we = s_edge(ceil((double)(pw + 1) * bw) + x0, W);
                float m = he > hs && we > ws ? -FLT_MAX : 0;
                for (int64_t h = hs; h < he; h++)
                    for (int64_t w = ws; w < we; w++)
                        m = fmaxf(m, plane[h * W + w]);
                o[ph * PW + pw] = m;
            }
        }
    }
}

/* ---- AffineGrid ---- */

/* The normalised coordinate of index i of a dim of n points: evenly from
 * -1 to 1 with align_corners (-1 for a single point), else the pixel
 * centres -1 + (2i + 1) / n; written as one division each, so that the
 * middle point is exactly 0. */
static double s_affine_coord(int64_t i, int64_t n, bool align)
{
    if (align)
        return n > 1 ? (double)(2 * i - (n - 1)) / (double)(n - 1) : -1.0;
    return (double)(2 * i + 1 - n) / (double)n;
}

/* grid[n, (d,) h, w] = theta[n] (x_w, y_h, (z_d,) 1), in double; a share
 * is a range of rows of the grid's W points. */
void gx_cpu_AFFINE_GRID(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const int sd = y->ndim - 2;
    const bool align = k->attr[GX_AFFINE_GRID_ALIGN_CORNERS].i != 0;
    const int64_t W = y->shape[sd], H = y->shape[sd - 1], D = sd == 3 ? y->shape[1] : 1;
    const int64_t rows = y->shape[0] * D * H;
    const float *theta = k->in[0].data;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t n = r / (D * H), h = r % H, d = r / H % D;
        const float *t = theta + n * sd * (sd + 1);
        const double yc = s_affine_coord(h, H, align);
        const double zc = sd == 3 ? s_affine_coord(d, D, align) : 0.0;
        float *out = (float *)y->data + r * W * sd;
        for (int64_t w = 0; w < W; w++) {
            const double xc = s_affine_coord(w, W, align);
            for (int i = 0; i < sd; i++) {
                const float *ti = t + i * (sd + 1);
                double v = (double)ti[0] * xc + (double)ti[1] * yc;
                v = sd == 3 ? v + (double)ti[2] * zc + (double)ti[3] : v + (double)ti[2];
                out[w * sd + i] = (float)v;
            }
        }
    }
}
