/*
 * DeformConv (opset 19) on the CPU, float32, 2-D: a convolution whose
 * taps sample X at their grid position plus a learned offset, bilinearly
 * with zeros outside the image (GridSample with align_corners=1 and zero
 * padding, as the ONNX reference samples), each tap scaled by its mask.
 * Direct loops, sums in double: a share is a range of (image, output
 * channel, output row) rows; every output element is summed by one thread
 * in one fixed order (input channel, then tap).
 */
#include <math.h>

#include "ops/conv.h"
#include "ops/cpu/cpu.h"

/* X's plane (h x w) at the real position (y, x): the four neighbours'
 * bilinear weights, those outside the plane reading 0. */
static double s_bilinear(const float *plane, int64_t h, int64_t w, double y, double x)
{
    if (!(y > -1.0 && y < (double)h && x > -1.0 && x < (double)w))
        return 0.0; /* also NaN */
    const double fy = floor(y), fx = floor(x);
    const int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
    const double ly = y - fy, lx = x - fx;
    double v = 0.0;
    for (int a = 0; a < 2; a++) {
        const int64_t yy = y0 + a;
        if (yy < 0 || yy >= h)
            continue;
        const double wy = a ? ly : 1.0 - ly;
        for (int b = 0; b < 2; b++) {
            const int64_t xx = x0 + b;
            if (xx >= 0 && xx < w)
                v += wy * (b ? lx : 1.0 - lx) * plane[yy * w + xx];
        }
    }
    return v;
}

void gx_cpu_DEFORMCONV(const gx_kargs *k)
{
    char err[160];
    gx_infer ic = {.attr = k->attr, .n_in = k->n_in, .in = k->in, .err = err,
                   .errlen = sizeof err};
    gx_deformconv g;
    if (gx_deformconv_setup(&ic, &g) != GX_OK)
        return; /* checked by infer */
    const float *x = k->in[0].data, *wt = k->in[1].data, *off = k->in[2].data;
    const float *bias = g.has_b ? k->in[3].data : NULL, *mask = g.has_mask ? k->in[4].data : NULL;
    float *y = k->out[0].data;
    const int64_t icg = g.c / g.group, ocg = g.m / g.group, cpo = g.c / g.og;
    const int64_t taps = g.kh * g.kw, plane = g.h * g.w, oplane = g.oh * g.ow;
    int64_t lo, hi;
    gx_cpu_share(k, g.n * g.m * g.oh, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t n = r / (g.m * g.oh), oc = r / g.oh % g.m, i = r % g.oh;
        const int64_t grp = oc / ocg;
        for (int64_t j = 0; j < g.ow; j++) {
            double acc = bias ? bias[oc] : 0.0;
            for (int64_t cc = 0; cc < icg; cc++) {
                const int64_t ch = grp * icg + cc, ogi = ch / cpo;
                const float *xp = x + (n * g.c + ch) * plane;
                const float *wr = wt + (oc * icg + cc) * taps;
                for (int64_t t = 0; t < taps; t++) {
                    const int64_t ki = t / g.kw, kj = t % g.kw;
                    /* offset [n, og, kh, kw, 2, oh, ow]: dy, then dx */
                    const int64_t ob = ((n * g.og + ogi) * taps + t) * 2 * oplane + i * g.ow + j;
                    const double py = (double)(i * g.sh - g.ph + ki * g.dh) + off[ob];
                    const double px = (double)(j * g.sw - g.pw + kj * g.dw) + off[ob + oplane];
                    double v = s_bilinear(xp, g.h, g.w, py, px) * wr[t];
                    if (mask)
                        v *= mask[((n * g.og + ogi) * taps + t) * oplane + i * g.ow + j];
                    acc += v;
                }
            }
            y[r * g.ow + j] = (float)acc;
        }
    }
}
