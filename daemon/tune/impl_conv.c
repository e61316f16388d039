/*
 * The Conv side of the registry: which Conv steps are tuned (a float32
 * Conv whose x and y the layout pass left in the plain layout: NCHW and
 * its 1-D and 3-D kin; the blocked layouts' kernels are the layout pass's
 * choice, docs/tune.md), their signature, gexec's own candidate (the
 * plain-layout kernel, "conv.plain", the default) and the measurement's
 * inputs: fixed pseudo-random x, W and bias of the real shapes and a
 * float64 reference of up to GXD_TUNE_CHECK_ROWS output planes (one
 * output channel of one image each).
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/tune/tune_internal.h"
#include "core/internal.h"
#include "ops/backend.h"
#include "ops/conv.h"
#include "ops/schema.h"

/* ---- signatures ---- */

static bool s_sig_of(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                     const gx_view *y, gxd_tune_sig *sig, char *why, size_t whylen)
{
    (void)op;
    const gx_view *x = &in[0], *w = &in[1];
    if (n_in < 2 || x->dtype != GX_F32 || w->dtype != GX_F32 || y->dtype != GX_F32) {
        snprintf(why, whylen, "not a float32 Conv");
        return false;
    }
    if (x->layout != GX_LAYOUT_PLAIN || y->layout != GX_LAYOUT_PLAIN) {
        snprintf(why, whylen, "x or y in a blocked layout (the layout pass's kernels)");
        return false;
    }
    if (x->ndim < 3 || x->ndim > 5 || w->ndim != x->ndim || y->ndim != x->ndim) {
        snprintf(why, whylen, "not 1, 2 or 3 spatial dims");
        return false;
    }
    gx_win win;
    if (gx_win_init(&win, attr, "Conv", x, w->shape + 2, false, false, NULL, 0) != GX_OK) {
        snprintf(why, whylen, "a geometry the kernel refuses");
        return false;
    }
    memset(sig, 0, sizeof *sig);
    sig->op = GX_OP_CONV;
    sig->a_ndim = x->ndim;
    memcpy(sig->a_shape, x->shape, sizeof x->shape[0] * (size_t)x->ndim);
    memcpy(sig->conv.w_shape, w->shape, sizeof w->shape[0] * (size_t)w->ndim);
    sig->c_ndim = -1;
    sig->conv.nsp = win.nsp;
    sig->conv.group = attr[GX_CONV_GROUP].i;
    for (int d = 0; d < win.nsp; d++) {
        sig->conv.stride[d] = win.stride[d];
        sig->conv.dil[d] = win.dil[d];
        sig->conv.pad_lo[d] = win.pad_lo[d];
        sig->conv.pad_hi[d] = win.pad_hi[d];
        sig->conv.out[d] = win.out[d];
    }
    sig->conv.bias = n_in > 2 && in[2].ndim >= 0;
    /* rows: (image, output channel) planes; a row: the output positions;
     * k: the products summed per element */
    sig->m = x->shape[0] * w->shape[0];
    sig->n = win.out_size;
    sig->k = w->shape[1] * win.k_size;
    if (sig->m <= 0 || sig->n <= 0 || sig->k <= 0) {
        snprintf(why, whylen, "an empty Conv");
        return false;
    }
    return true;
}

static void s_ints_str(const int64_t *v, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o + 1 < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)v[i]);
        o = w > 0 && (size_t)w < len - o ? o + (size_t)w : len - 1;
    }
}

/* The geometry part, shared by the signature and its family. */
static void s_geom_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    const int nsp = s->conv.nsp;
    char w[80], st[32], dl[32], pl[32], ph[32];
    gx_shape_str(nsp + 2, s->conv.w_shape, w, sizeof w);
    s_ints_str(s->conv.stride, nsp, st, sizeof st);
    s_ints_str(s->conv.dil, nsp, dl, sizeof dl);
    s_ints_str(s->conv.pad_lo, nsp, pl, sizeof pl);
    s_ints_str(s->conv.pad_hi, nsp, ph, sizeof ph);
    snprintf(buf, len, "w%s group=%lld strides=%s dilations=%s pads=%s/%s%s", w,
             (long long)s->conv.group, st, dl, pl, ph, s->conv.bias ? " bias" : "");
}

static void s_sig_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    char x[80], g[320];
    gx_shape_str(s->a_ndim, s->a_shape, x, sizeof x);
    s_geom_str(s, g, sizeof g);
    snprintf(buf, len, "Conv f32 x%s %s plain", x, g);
}

/* The family: the same conv at any batch size (x without N). */
static void s_family_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    char x[80], g[320];
    gx_shape_str(s->a_ndim - 1, s->a_shape + 1, x, sizeof x);
    s_geom_str(s, g, sizeof g);
    snprintf(buf, len, "Conv f32 x[N,%s %s plain", x + 1, g);
}

static double s_madds(const gxd_tune_sig *s)
{
    return (double)s->m * (double)s->n * (double)s->k;
}

/* ---- attributes and views from a signature ---- */

/* Conv's attributes for sig (ints: storage for the lists). */
static void s_attrs(const gxd_tune_sig *s, gx_attrval *attr, int64_t ints[4][GX_MAX_DIMS])
{
    const int nsp = s->conv.nsp;
    for (int i = 0; i < GX_MAX_ATTRS; i++)
        attr[i] = (gx_attrval){0};
    for (int d = 0; d < nsp; d++) {
        ints[0][d] = s->conv.stride[d];
        ints[1][d] = s->conv.dil[d];
        ints[2][d] = s->conv.pad_lo[d];
        ints[2][nsp + d] = s->conv.pad_hi[d];
    }
    attr[GX_WIN_STRIDES] = (gx_attrval){.set = true, .ints = ints[0], .n = (size_t)nsp};
    attr[GX_WIN_DILATIONS] = (gx_attrval){.set = true, .ints = ints[1], .n = (size_t)nsp};
    attr[GX_WIN_PADS] = (gx_attrval){.set = true, .ints = ints[2], .n = 2 * (size_t)nsp};
    attr[GX_CONV_GROUP] = (gx_attrval){.set = true, .i = s->conv.group};
}

/* x, W, the bias (or none) and y of sig, without data. */
static void s_views(const gxd_tune_sig *s, gx_view *in, gx_view *y)
{
    const int nd = s->a_ndim;
    in[0] = (gx_view){.dtype = GX_F32, .ndim = nd};
    memcpy(in[0].shape, s->a_shape, sizeof s->a_shape[0] * (size_t)nd);
    in[0].numel = gx_shape_numel(nd, in[0].shape, INT64_MAX);
    in[1] = (gx_view){.dtype = GX_F32, .ndim = nd};
    memcpy(in[1].shape, s->conv.w_shape, sizeof s->a_shape[0] * (size_t)nd);
    in[1].numel = gx_shape_numel(nd, in[1].shape, INT64_MAX);
    in[2] = (gx_view){.dtype = GX_F32, .ndim = -1};
    if (s->conv.bias) {
        in[2].ndim = 1;
        in[2].shape[0] = in[2].numel = s->conv.w_shape[0];
    }
    *y = (gx_view){.dtype = GX_F32, .ndim = nd};
    y->shape[0] = s->a_shape[0];
    y->shape[1] = s->conv.w_shape[0];
    for (int d = 0; d < s->conv.nsp; d++)
        y->shape[2 + d] = s->conv.out[d];
    y->numel = gx_shape_numel(nd, y->shape, INT64_MAX);
}

/* ---- gexec's candidate ---- */

/* The Conv schema's scratch (its path's im2col buffers). */
static int64_t s_plain_scratch(const gxd_tune_sig *s)
{
    gx_attrval attr[GX_MAX_ATTRS];
    int64_t ints[4][GX_MAX_DIMS];
    gx_view in[3], y;
    s_attrs(s, attr, ints);
    s_views(s, in, &y);
    const gx_infer ic = {.attr = attr, .n_in = s->conv.bias ? 3 : 2, .in = in, .n_out = 1,
                         .out = &y};
    return (int64_t)gx_op_schema_get(GX_OP_CONV)->scratch(&ic);
}

gxd_tune_impl gxd_tune_conv_builtin(void)
{
    return (gxd_tune_impl){.name = "conv.plain", .version = 1, .source = "gexec",
                           .conv = gx_backend_cpu()->kernel(GX_OP_CONV),
                           .scratch = s_plain_scratch};
}

/* ---- measuring ---- */

static int s_bench_init(gxd_tune_bench *bn)
{
    const gxd_tune_sig *s = &bn->sig;
    s_attrs(s, bn->attr, bn->ints);
    s_views(s, bn->in, &bn->vy);
    bn->n_in = s->conv.bias ? 3 : 2;
    bn->a = gx_aligned_alloc(sizeof(float) * (size_t)(bn->in[0].numel + 1));
    bn->b = gx_aligned_alloc(sizeof(float) * (size_t)(bn->in[1].numel + 1));
    bn->c = gx_aligned_alloc(sizeof(float) * (size_t)(s->conv.w_shape[0] + 1));
    bn->y = gx_aligned_alloc(sizeof(float) * (size_t)(bn->vy.numel + 1));
    if (!bn->a || !bn->b || !bn->c || !bn->y)
        return GX_ENOMEM;
    gxd_tune_fill(bn->a, bn->in[0].numel, 1);
    gxd_tune_fill(bn->b, bn->in[1].numel, 2);
    gxd_tune_fill(bn->c, s->conv.w_shape[0], 3);
    bn->in[0].data = bn->a;
    bn->in[1].data = bn->b;
    bn->in[2].data = s->conv.bias ? bn->c : NULL;
    bn->vy.data = bn->y;
    /* the reference of up to GXD_TUNE_CHECK_ROWS planes spread over y */
    const int64_t planes = s->m, np = s->n, nsp = s->conv.nsp;
    const int64_t N = s->a_shape[0], C = s->a_shape[1], M = s->conv.w_shape[0];
    const int64_t G = s->conv.group, cg = C / G, mg = M / G;
    int64_t ksz = 1, insz = 1;
    for (int d = 0; d < nsp; d++) {
        ksz *= s->conv.w_shape[2 + d];
        insz *= s->a_shape[2 + d];
    }
    (void)N;
    bn->row_len = np;
    bn->terms = cg * ksz;
    bn->n_check = planes < GXD_TUNE_CHECK_ROWS ? (int)planes : GXD_TUNE_CHECK_ROWS;
    bn->ref = malloc(sizeof *bn->ref * (size_t)(bn->n_check * np + 1));
    bn->mag = malloc(sizeof *bn->mag * (size_t)(bn->n_check * np + 1));
    if (!bn->ref || !bn->mag)
        return GX_ENOMEM;
    for (int r = 0; r < bn->n_check; r++) {
        const int64_t pl = bn->n_check > 1 ? (int64_t)r * (planes - 1) / (bn->n_check - 1) : 0;
        const int64_t n = pl / M, oc = pl % M, g = oc / mg;
        bn->rows[r] = pl;
        for (int64_t o = 0; o < np; o++) {
            int64_t od[3] = {0, 0, 0}, rem = o;
            for (int d = (int)nsp - 1; d >= 0; d--) {
                od[d] = rem % s->conv.out[d];
                rem /= s->conv.out[d];
            }
            double sum = s->conv.bias ? (double)bn->c[oc] : 0.0;
            double mag = fabs(sum);
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t t = 0; t < ksz; t++) {
                    int64_t td[3] = {0, 0, 0}, tr = t, off = 0;
                    bool inside = true;
                    for (int d = (int)nsp - 1; d >= 0; d--) {
                        td[d] = tr % s->conv.w_shape[2 + d];
                        tr /= s->conv.w_shape[2 + d];
                    }
                    for (int d = 0; d < nsp; d++) {
                        const int64_t i = od[d] * s->conv.stride[d] - s->conv.pad_lo[d] +
                                          td[d] * s->conv.dil[d];
                        inside = inside && i >= 0 && i < s->a_shape[2 + d];
                        off = off * s->a_shape[2 + d] + i;
                    }
                    if (!inside)
                        continue;
                    const double xv = bn->a[(n * C + g * cg + ci) * insz + off];
                    const double wv = bn->b[(oc * cg + ci) * ksz + t];
                    sum += xv * wv;
                    mag += fabs(xv * wv);
                }
            bn->ref[r * np + o] = sum;
            bn->mag[r * np + o] = mag;
        }
    }
    return GX_OK;
}

const gxd_tune_op gxd_tune_op_conv = {.op = GX_OP_CONV,
                                      .sig_of = s_sig_of,
                                      .sig_str = s_sig_str,
                                      .family_str = s_family_str,
                                      .madds = s_madds,
                                      .bench_init = s_bench_init,
                                      .whole = true};
