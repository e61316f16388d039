/*
 * Layouts of 4-D tensors (ops/layout.h): shapes, reorders, operands of
 * elementwise ops, and which CPU kernel runs an op in a layout.
 */
#include <stdio.h>
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
    if (x->dtype != GX_F32 || x->ndim != 4 || x->layout != GX_LAYOUT_PLAIN)
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

/* Where channel c of the (n, h) slice of a tensor with logical dims d lies
 * in layout l, relative to the slice's base, and the stride along w. */
static int64_t s_chan(gx_layout l, const int64_t d[4], int64_t c)
{
    switch (l) {
    case GX_LAYOUT_NHWC: return c;
    case GX_LAYOUT_NCHW16C:
        return c / GX_LAYOUT_BLOCK * d[2] * d[3] * GX_LAYOUT_BLOCK + c % GX_LAYOUT_BLOCK;
    case GX_LAYOUT_PLAIN:
    case GX_LAYOUT_COUNT: break;
    }
    return c * d[2] * d[3];
}

static int64_t s_wstride(gx_layout l, const int64_t d[4])
{
    return l == GX_LAYOUT_NHWC ? d[1] : l == GX_LAYOUT_NCHW16C ? GX_LAYOUT_BLOCK : 1;
}

/* Offset of slice (n, h) in layout l. */
static int64_t s_slice(gx_layout l, const int64_t d[4], int64_t n, int64_t h)
{
    const int64_t img = n * d[1] * d[2] * d[3];
    return img + h * d[3] * (l == GX_LAYOUT_PLAIN ? 1 : l == GX_LAYOUT_NHWC ? d[1] : GX_LAYOUT_BLOCK);
}

void gx_layout_reorder(const gx_view *x, const gx_view *y, int ith, int nth)
{
    int64_t d[4];
    gx_layout_dims(x, d);
    const size_t es = gx_dtype_size(x->dtype);
    const gx_kargs share = {.ith = ith, .nth = nth};
    int64_t lo, hi; /* (n, h) slices */
    gx_cpu_share(&share, d[0] * d[2], 1, &lo, &hi);
    const int64_t sx = s_wstride(x->layout, d), sy = s_wstride(y->layout, d);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t n = r / d[2], h = r % d[2];
        const int64_t bx = s_slice(x->layout, d, n, h), by = s_slice(y->layout, d, n, h);
        for (int64_t c = 0; c < d[1]; c++) {
            const int64_t ox = bx + s_chan(x->layout, d, c), oy = by + s_chan(y->layout, d, c);
            if (es == 4) {
                const float *restrict src = (const float *)x->data + ox;
                float *restrict dst = (float *)y->data + oy;
                for (int64_t w = 0; w < d[3]; w++)
                    dst[w * sy] = src[w * sx];
            } else {
                for (int64_t w = 0; w < d[3]; w++)
                    memcpy((char *)y->data + (size_t)(oy + w * sy) * es,
                           (const char *)x->data + (size_t)(ox + w * sx) * es, es);
            }
        }
    }
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

gx_kernel_fn gx_cpu_layout_kernel(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                  size_t len)
{
    if (l == GX_LAYOUT_PLAIN)
        return gx_cpu_kernel(op);
    if (op == GX_OP_CONV)
        return gx_cpu_conv_layout(l, ic, why, len);
    if (op == GX_OP_MAXPOOL || op == GX_OP_AVERAGEPOOL || op == GX_OP_GLOBALAVERAGEPOOL ||
        op == GX_OP_GLOBALMAXPOOL || op == GX_OP_BATCHNORM)
        return gx_cpu_pool_layout(op, l, ic, why, len);
    snprintf(why, len, "%s: %s has no kernel for it", gx_layout_name(l), gx_op_name(op));
    return NULL;
}

double gx_cpu_layout_factor(gx_op op, gx_layout l, const gx_infer *ic)
{
    (void)ic;
    if (l == GX_LAYOUT_PLAIN)
        return 1.0;
    const bool wide = __builtin_cpu_supports("avx512f");
    if (op == GX_OP_CONV)
        return l == GX_LAYOUT_NHWC ? 0.9 : wide ? 0.7 : 1.1;
    if (op == GX_OP_MAXPOOL || op == GX_OP_AVERAGEPOOL || op == GX_OP_GLOBALAVERAGEPOOL ||
        op == GX_OP_GLOBALMAXPOOL)
        return l == GX_LAYOUT_NHWC ? 0.8 : 0.6;
    return 1.0;
}
