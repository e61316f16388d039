/*
 * Schemas of the conv family (GX_OPS_CONV in ops/op.h): Conv, ConvInteger,
 * ConvTranspose, the windowed pools MaxPool / AveragePool / LpPool, the
 * global pools, MaxUnpool, Col2Im (opset 18) and DeformConv (19), plus the
 * window geometry (ops/conv.h) that their kernels share. Shapes follow the
 * formulas of the ONNX operator specification; attribute values are
 * bounded so that no size computed from them overflows.
 */
#include <limits.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/conv.h"

/* Largest kernel size, stride, dilation or pad accepted: with it, a dilated
 * kernel extent and a padded dim fit easily in int64. */
#define S_ATTR_MAX INT32_MAX

/* Output positions (over images and groups) that keep a Conv's threads
 * busy splitting by columns alone, and the fewest output channels worth a
 * product of their own (gx_conv_row_blocks). */
#define S_SPLIT_COLS 1024
#define S_SPLIT_ROWS 128

/* Scratch budget of one Conv or ConvTranspose node, in floats (64 MiB). */
#define S_SCRATCH_FLOATS (INT64_C(16) << 20)

#define S_WIN_ATTRS                                                           \
    [GX_WIN_AUTO_PAD] = {.name = "auto_pad", .type = GX_ATTR_STRING, .def_s = "NOTSET"},      \
    [GX_WIN_DILATIONS] = {.name = "dilations", .type = GX_ATTR_INTS},                        \
    [GX_WIN_KERNEL_SHAPE] = {.name = "kernel_shape", .type = GX_ATTR_INTS},                  \
    [GX_WIN_PADS] = {.name = "pads", .type = GX_ATTR_INTS},                                  \
    [GX_WIN_STRIDES] = {.name = "strides", .type = GX_ATTR_INTS}

typedef enum s_autopad { S_NOTSET, S_SAME_UPPER, S_SAME_LOWER, S_VALID } s_autopad;

static int s_autopad_parse(const gx_attrval *attr, const char *op, s_autopad *ap, char *err,
                           size_t errlen)
{
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    const char *s = attr[GX_WIN_AUTO_PAD].s ? attr[GX_WIN_AUTO_PAD].s : "NOTSET";
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *ap = (s_autopad)i;
            return GX_OK;
        }
    }
    return gx_errf(err, errlen, GX_EATTR,
                   "%s: auto_pad is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", op,
                   s);
}

/* Reads an INTS attribute of n values in [lo, S_ATTR_MAX] into out, or def
 * everywhere when it is not set. */
static int s_ints(const gx_attrval *a, const char *op, const char *name, int n, int64_t lo,
                  int64_t def, int64_t *out, char *err, size_t errlen)
{
    if (!a->set) {
        for (int i = 0; i < n; i++)
            out[i] = def;
        return GX_OK;
    }
    if (a->n != (size_t)n)
        return gx_errf(err, errlen, GX_EATTR, "%s: %s has %zu values, expected %d", op, name,
                       a->n, n);
    for (int i = 0; i < n; i++) {
        if (a->ints[i] < lo || a->ints[i] > S_ATTR_MAX)
            return gx_errf(err, errlen, GX_EATTR, "%s: %s[%d] is %lld, expected %lld..%d", op,
                           name, i, (long long)a->ints[i], (long long)lo, S_ATTR_MAX);
        out[i] = a->ints[i];
    }
    return GX_OK;
}

/* Floor division (C's rounds toward zero): ConvTranspose splits negative
 * total paddings the way the ONNX reference does. */
static int64_t s_floordiv2(int64_t v)
{
    return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* GX_OK when the product of the window's output dims fits. */
static int s_win_sizes(gx_win *w, const char *op, char *err, size_t errlen)
{
    w->in_size = gx_shape_numel(w->nsp, w->in, INT64_MAX);
    w->k_size = gx_shape_numel(w->nsp, w->k, INT64_MAX);
    w->out_size = gx_shape_numel(w->nsp, w->out, INT64_MAX);
    if (w->in_size < 0 || w->k_size < 0 || w->out_size < 0)
        return gx_errf(err, errlen, GX_ELIMIT, "%s: the spatial sizes overflow", op);
    return GX_OK;
}

/* The rank, kernel, strides, dilations and auto_pad of a window op; pads
 * only where auto_pad is NOTSET (elsewhere they must be absent or zero). */
static int s_win_common(gx_win *w, const gx_attrval *attr, const char *op, const gx_view *x,
                        const int64_t *kshape, s_autopad *ap, char *err, size_t errlen)
{
    int rc;
    char sx[GX_SHAPE_STRLEN];
    memset(w, 0, sizeof *w);
    if (x->ndim < 3)
        return gx_errf(err, errlen, GX_ESHAPE,
                       "%s: X is %s; rank >= 3 needed ([N, C, spatial...])", op,
                       gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    const int nsp = w->nsp = x->ndim - 2;
    int64_t pads[2 * GX_WIN_MAX];
    if ((rc = s_autopad_parse(attr, op, ap, err, errlen)) < 0 ||
        (rc = s_ints(&attr[GX_WIN_STRIDES], op, "strides", nsp, 1, 1, w->stride, err, errlen)) <
            0 ||
        (rc = s_ints(&attr[GX_WIN_DILATIONS], op, "dilations", nsp, 1, 1, w->dil, err,
                     errlen)) < 0 ||
        (rc = s_ints(&attr[GX_WIN_PADS], op, "pads", 2 * nsp, 0, 0, pads, err, errlen)) < 0 ||
        (rc = s_ints(&attr[GX_WIN_KERNEL_SHAPE], op, "kernel_shape", nsp, 1, 1, w->k, err,
                     errlen)) < 0)
        return rc;
    if (!kshape && !attr[GX_WIN_KERNEL_SHAPE].set)
        return gx_errf(err, errlen, GX_EATTR, "%s: attribute 'kernel_shape' is required", op);
    for (int d = 0; kshape && d < nsp; d++) {
        if (kshape[d] < 1 || kshape[d] > S_ATTR_MAX)
            return gx_errf(err, errlen, GX_ESHAPE, "%s: kernel dim %d is %lld, expected 1..%d",
                           op, d, (long long)kshape[d], S_ATTR_MAX);
        if (attr[GX_WIN_KERNEL_SHAPE].set && w->k[d] != kshape[d])
            return gx_errf(err, errlen, GX_EATTR,
                           "%s: kernel_shape[%d] is %lld but the weights have %lld", op, d,
                           (long long)w->k[d], (long long)kshape[d]);
        w->k[d] = kshape[d];
    }
    for (int i = 0; i < 2 * nsp; i++) {
        if (*ap != S_NOTSET && pads[i] != 0)
            return gx_errf(err, errlen, GX_EATTR, "%s: pads and auto_pad=%s are exclusive", op,
                           attr[GX_WIN_AUTO_PAD].s);
    }
    for (int d = 0; d < nsp; d++) {
        w->pad_lo[d] = pads[d];
        w->pad_hi[d] = pads[nsp + d];
    }
    return GX_OK;
}

int gx_win_init(gx_win *w, const gx_attrval *attr, const char *op, const gx_view *x,
                const int64_t *kshape, bool ceil_mode, bool pool, char *err, size_t errlen)
{
    s_autopad ap;
    int rc = s_win_common(w, attr, op, x, kshape, &ap, err, errlen);
    if (rc < 0)
        return rc;
    for (int d = 0; d < w->nsp; d++) {
        const int64_t in = w->in[d] = x->shape[2 + d], s = w->stride[d];
        const int64_t dk = (w->k[d] - 1) * w->dil[d] + 1;
        if (ap == S_SAME_UPPER || ap == S_SAME_LOWER) {
            /* auto_pad ignores ceil_mode: the output is ceil(in / stride) */
            const int64_t out = w->out[d] = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            total = total < 0 ? 0 : total;
            w->pad_lo[d] = ap == S_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_hi[d] = total - w->pad_lo[d];
            continue;
        }
        const int64_t span = in + w->pad_lo[d] + w->pad_hi[d] - dk;
        if (span < 0)
            return gx_errf(err, errlen, GX_ESHAPE,
                           "%s: spatial dim %d of X is %lld, padded %lld, smaller than the "
                           "kernel's extent %lld",
                           op, d, (long long)in, (long long)(span + dk), (long long)dk);
        if (ceil_mode && ap == S_NOTSET) {
            w->out[d] = (span + s - 1) / s + 1;
            /* a last window that would start in the end padding is dropped */
            if ((w->out[d] - 1) * s >= in + w->pad_lo[d])
                w->out[d]--;
        } else {
            w->out[d] = span / s + 1;
        }
    }
    for (int d = 0; pool && d < w->nsp; d++) {
        for (int64_t o = 0; o < w->out[d]; o++) {
            int64_t j0, j1;
            gx_win_taps(w, d, o, &j0, &j1);
            if (j0 >= j1)
                return gx_errf(err, errlen, GX_EATTR,
                               "%s: window %lld of spatial dim %d lies entirely in the padding",
                               op, (long long)o, d);
        }
    }
    return s_win_sizes(w, op, err, errlen);
}

int gx_win_init_transpose(gx_win *w, const gx_attrval *attr, const gx_view *x, const gx_view *wt,
                          char *err, size_t errlen)
{
    const char *op = "ConvTranspose";
    s_autopad ap;
    int rc = s_win_common(w, attr, op, x, wt->shape + 2, &ap, err, errlen);
    if (rc < 0)
        return rc;
    const int nsp = w->nsp;
    int64_t opad[GX_WIN_MAX], oshape[GX_WIN_MAX];
    if ((rc = s_ints(&attr[GX_CONVTRANSPOSE_OUTPUT_PADDING], op, "output_padding", nsp, 0, 0,
                     opad, err, errlen)) < 0)
        return rc;
    /* output_shape may also name N and C, as some exporters write it */
    const gx_attrval *os = &attr[GX_CONVTRANSPOSE_OUTPUT_SHAPE];
    if (os->set) {
        if (os->n != (size_t)nsp && os->n != (size_t)nsp + 2)
            return gx_errf(err, errlen, GX_EATTR,
                           "%s: output_shape has %zu values, expected %d or %d", op, os->n, nsp,
                           nsp + 2);
        for (int d = 0; d < nsp; d++) {
            oshape[d] = os->ints[os->n - (size_t)nsp + (size_t)d];
            if (oshape[d] < 0 || oshape[d] > S_ATTR_MAX)
                return gx_errf(err, errlen, GX_EATTR, "%s: output_shape value %lld is invalid",
                               op, (long long)oshape[d]);
        }
    }
    for (int d = 0; d < nsp; d++) {
        const int64_t xin = x->shape[2 + d], s = w->stride[d];
        const int64_t dk = (w->k[d] - 1) * w->dil[d] + 1;
        if (opad[d] >= s && opad[d] >= w->dil[d])
            return gx_errf(err, errlen, GX_EATTR,
                           "%s: output_padding[%d] is %lld, not below the stride %lld or the "
                           "dilation %lld",
                           op, d, (long long)opad[d], (long long)s, (long long)w->dil[d]);
        if (xin > S_ATTR_MAX)
            return gx_errf(err, errlen, GX_ELIMIT, "%s: spatial dim %d of X is too large", op,
                           d);
        /* the extent of the full (unpadded) result */
        const int64_t full = s * (xin > 0 ? xin - 1 : 0) + opad[d] + dk;
        int64_t y;
        if (os->set || ap == S_SAME_UPPER || ap == S_SAME_LOWER) {
            /* output_shape (or in * stride) fixes y; the padding follows and
             * any explicit pads are not used, as in onnxruntime */
            y = os->set ? oshape[d] : xin * s;
            const int64_t total = full - y;
            if (ap == S_SAME_UPPER) {
                w->pad_lo[d] = s_floordiv2(total);
                w->pad_hi[d] = total - w->pad_lo[d];
            } else {
                w->pad_hi[d] = s_floordiv2(total);
                w->pad_lo[d] = total - w->pad_hi[d];
            }
        } else {
            y = full - w->pad_lo[d] - w->pad_hi[d];
            if (y < 0)
                return gx_errf(err, errlen, GX_ESHAPE,
                               "%s: the pads of spatial dim %d exceed its extent %lld", op, d,
                               (long long)full);
        }
        w->in[d] = y;
        w->out[d] = xin;
    }
    return s_win_sizes(w, op, err, errlen);
}

gx_conv_path gx_conv_path_of(const gx_win *w, int64_t channels, int64_t group)
{
    if (group > 1 && channels == group)
        return GX_CONV_DEPTHWISE;
    bool unit = w->k_size == 1;
    for (int d = 0; d < w->nsp; d++)
        unit &= w->stride[d] == 1 && w->pad_lo[d] == 0 && w->pad_hi[d] == 0;
    return unit ? GX_CONV_POINTWISE : GX_CONV_IM2COL;
}

int64_t gx_conv_row_blocks(int64_t n, int64_t group, int64_t mg, int64_t p)
{
    const int64_t cols = n * group * p;
    if (cols >= S_SPLIT_COLS || cols == 0 || mg < 2 * S_SPLIT_ROWS)
        return 1;
    const int64_t want = (S_SPLIT_COLS + cols - 1) / cols, most = mg / S_SPLIT_ROWS;
    return want < most ? want : most;
}

/* Floats of a tile's columns at most (384 KiB). */
#define S_TILE_FLOATS (96 << 10)

int64_t gx_conv_tile(int64_t p, int64_t cgk)
{
    int64_t t = (p / 4 + 15) / 16 * 16;
    const int64_t fit = S_TILE_FLOATS / (cgk > 0 ? cgk : 1) / 16 * 16;
    t = t < fit ? t : fit;
    return t < 64 ? 64 : t > 1024 ? 1024 : t;
}

int64_t gx_conv_col_floats(int64_t ng, int64_t p, int64_t cgk)
{
    const int64_t t = gx_conv_tile(p, cgk);
    return ng * ((p + t - 1) / t) * t * cgk;
}

int64_t gx_conv_pass_images(int64_t n, int64_t per_image)
{
    if (n <= 1 || per_image <= 0)
        return 1;
    int64_t b = S_SCRATCH_FLOATS / per_image;
    return b < 1 ? 1 : b > n ? n : b;
}

/* ---- shared checks ---- */

/* GX_EDTYPE unless input i has one of the n dtypes in ok. */
static int s_need_dtype(gx_infer *ic, const char *op, int i, int n, const gx_dtype *ok,
                        const char *which)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    for (int j = 0; j < n; j++) {
        if (ic->in[i].dtype == ok[j])
            return GX_OK;
    }
    const char *dn = gx_dtype_name(ic->in[i].dtype);
    return gx_infer_errf(ic, GX_EDTYPE, "%s: input %d is %s, not supported (%s)", op, i,
                         dn ? dn : "unknown dtype", which);
}

static bool s_has(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* Sets output i to [n, c, sp...] of dtype dt; GX_ELIMIT if its size
 * overflows. */
static int s_set_out(gx_infer *ic, const char *op, int i, gx_dtype dt, int64_t n, int64_t c,
                     int nsp, const int64_t *sp)
{
    int64_t shape[GX_MAX_DIMS] = {n, c};
    memcpy(shape + 2, sp, (size_t)nsp * sizeof *sp);
    size_t nbytes;
    if (!gx_shape_nbytes(dt, nsp + 2, shape, &nbytes))
        return gx_infer_errf(ic, GX_ELIMIT, "%s: output is too large", op);
    gx_view_set(&ic->out[i], dt, nsp + 2, shape);
    return GX_OK;
}

/* GX_EUNSUPPORTED when a dim given to BLAS exceeds its int. */
static int s_blas_dims(gx_infer *ic, const char *op, int n, const int64_t *dims)
{
    for (int i = 0; i < n; i++) {
        if (dims[i] > INT_MAX)
            return gx_infer_errf(ic, GX_EUNSUPPORTED,
                                 "%s: dimension %lld exceeds the BLAS limit %d", op,
                                 (long long)dims[i], INT_MAX);
    }
    return GX_OK;
}

/* x [N, C, ...] and weights w [M, C / group, k...] (ConvTranspose: [C, M /
 * group, k...]): ranks agree, group divides C and the weights' channel
 * counts match. */
static int s_check_weights(gx_infer *ic, const char *op, int64_t group, bool transpose)
{
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    char sx[GX_SHAPE_STRLEN], sw[GX_SHAPE_STRLEN];
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    gx_shape_str(wt->ndim, wt->shape, sw, sizeof sw);
    if (x->ndim < 3 || wt->ndim != x->ndim)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: X is %s and W is %s; both need the same rank >= 3", op, sx,
                             sw);
    if (group < 1 || group > S_ATTR_MAX)
        return gx_infer_errf(ic, GX_EATTR, "%s: group is %lld, expected >= 1", op,
                             (long long)group);
    const int64_t c = x->shape[1];
    if (c % group != 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X has %lld channels, not a multiple of group %lld",
                             op, (long long)c, (long long)group);
    if (transpose ? wt->shape[0] != c : wt->shape[1] * group != c || wt->shape[0] % group != 0)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: W is %s but X is %s with group %lld (W must be %s)", op, sw,
                             sx, (long long)group,
                             transpose ? "[C, M / group, k...]"
                                       : "[M, C / group, k...] with M a multiple of group");
    return GX_OK;
}

/* Optional bias input i: 1-D of m values, dtype dt. */
static int s_check_bias(gx_infer *ic, const char *op, int i, int64_t m, gx_dtype dt)
{
    if (!s_has(ic, i))
        return GX_OK;
    const gx_view *b = &ic->in[i];
    if (b->dtype != dt)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: B is %s, expected %s like X", op,
                             gx_dtype_name(b->dtype) ? gx_dtype_name(b->dtype) : "unknown",
                             gx_dtype_name(dt));
    if (b->ndim != 1 || b->shape[0] != m) {
        char sb[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: B is %s, expected [%lld]", op,
                             gx_shape_str(b->ndim, b->shape, sb, sizeof sb), (long long)m);
    }
    return GX_OK;
}

static gx_cost s_cost_io(const gx_infer *ic, double flops)
{
    return (gx_cost){.flops = flops, .bytes = gx_infer_io_bytes(ic)};
}

/* ---- Conv ---- */

static const gx_attr_spec s_conv_attrs[] = {
    S_WIN_ATTRS,
    [GX_CONV_GROUP] = {.name = "group", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_conv_attrs / sizeof s_conv_attrs[0] == GX_CONV_NATTRS, "Conv attrs");

/* Conv: X [N, C, in...] * W [M, C / group, k...] (+ B [M]) -> [N, M, out...],
 * float32. */
static int s_infer_conv(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_f32(ic, "Conv", 0)) < 0 || (rc = gx_infer_need_f32(ic, "Conv", 1)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    const int64_t group = ic->attr[GX_CONV_GROUP].i;
    if ((rc = s_check_weights(ic, "Conv", group, false)) < 0 ||
        (rc = s_check_bias(ic, "Conv", 2, wt->shape[0], GX_F32)) < 0)
        return rc;
    gx_win w;
    if ((rc = gx_win_init(&w, ic->attr, "Conv", x, wt->shape + 2, false, false, ic->err,
                          ic->errlen)) < 0)
        return rc;
    const int64_t cgk = wt->shape[1] * w.k_size;
    if ((rc = s_blas_dims(ic, "Conv", 4, (int64_t[]){wt->shape[0], cgk, w.out_size, w.in_size})) <
        0)
        return rc;
    if (gx_shape_numel(3, (int64_t[]){x->shape[1], w.k_size, w.out_size}, INT64_MAX / 4) < 0)
        return gx_infer_errf(ic, GX_ELIMIT, "Conv: the im2col buffer is too large");
    return s_set_out(ic, "Conv", 0, GX_F32, x->shape[0], wt->shape[0], w.nsp, w.out);
}

/* 2 flops per multiply-add of every output with its C / group * k window,
 * plus the bias. */
static gx_cost s_cost_conv(const gx_infer *ic)
{
    const gx_view *wt = &ic->in[1];
    double window = (double)gx_view_numel(wt) / (double)(wt->shape[0] > 0 ? wt->shape[0] : 1);
    double y = (double)gx_view_numel(&ic->out[0]);
    return s_cost_io(ic, 2.0 * window * y + (s_has(ic, 2) ? y : 0.0));
}

/* The im2col buffers (one per group and row block) of as many images as
 * gx_conv_pass_images allows. */
static size_t s_scratch_conv(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    gx_win w;
    gx_win_init(&w, ic->attr, "Conv", x, ic->in[1].shape + 2, false, false, NULL, 0);
    const int64_t g = ic->attr[GX_CONV_GROUP].i, mg = ic->in[1].shape[0] / g;
    if (gx_conv_path_of(&w, x->shape[1], g) != GX_CONV_IM2COL)
        return 0;
    const int64_t per_image = gx_conv_col_floats(
        g * gx_conv_row_blocks(x->shape[0], g, mg, w.out_size), w.out_size,
        x->shape[1] / g * w.k_size);
    return (size_t)(gx_conv_pass_images(x->shape[0], per_image) * per_image) * sizeof(float);
}

const gx_op_schema gx_schema_CONV = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_conv_attrs, .n_attrs = GX_CONV_NATTRS,
    .infer = s_infer_conv, .cost = s_cost_conv, .scratch = s_scratch_conv,
    .batch = gx_batch_samplewise,
};

/* ---- ConvInteger ---- */

/* ConvInteger: (X - x_zero_point) * (W - w_zero_point) in int32, X and W
 * uint8 or int8; x_zero_point is a scalar of X's dtype, w_zero_point a
 * scalar or one per output channel, of W's dtype. Padding is x_zero_point,
 * so it adds nothing. */
static int s_infer_convinteger(gx_infer *ic)
{
    static const gx_dtype q[] = {GX_U8, GX_I8};
    const char *op = "ConvInteger";
    int rc;
    if ((rc = s_need_dtype(ic, op, 0, 2, q, "uint8 or int8")) < 0 ||
        (rc = s_need_dtype(ic, op, 1, 2, q, "uint8 or int8")) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    const int64_t group = ic->attr[GX_CONV_GROUP].i;
    if ((rc = s_check_weights(ic, op, group, false)) < 0)
        return rc;
    for (int i = 2; i < 4; i++) {
        if (!s_has(ic, i))
            continue;
        const gx_view *zp = &ic->in[i], *of = &ic->in[i - 2];
        if (zp->dtype != of->dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: %s_zero_point is %s but %s is %s", op,
                                 i == 2 ? "x" : "w", gx_dtype_name(zp->dtype),
                                 i == 2 ? "X" : "W", gx_dtype_name(of->dtype));
        bool ok = zp->numel == 1 && zp->ndim <= 1;
        if (i == 3)
            ok |= zp->ndim == 1 && zp->shape[0] == wt->shape[0];
        if (!ok) {
            char sz[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "%s: %s_zero_point is %s, expected a scalar%s",
                                 op, i == 2 ? "x" : "w",
                                 gx_shape_str(zp->ndim, zp->shape, sz, sizeof sz),
                                 i == 2 ? "" : " or one value per output channel");
        }
    }
    gx_win w;
    if ((rc = gx_win_init(&w, ic->attr, op, x, wt->shape + 2, false, false, ic->err,
                          ic->errlen)) < 0)
        return rc;
    return s_set_out(ic, op, 0, GX_I32, x->shape[0], wt->shape[0], w.nsp, w.out);
}

const gx_op_schema gx_schema_CONVINTEGER = {
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .attrs = s_conv_attrs, .n_attrs = GX_CONV_NATTRS,
    .infer = s_infer_convinteger, .cost = s_cost_conv, .batch = gx_batch_samplewise,
};

/* ---- ConvTranspose ---- */

static const gx_attr_spec s_convtranspose_attrs[] = {
    S_WIN_ATTRS,
    [GX_CONVTRANSPOSE_GROUP] = {.name = "group", .type = GX_ATTR_INT, .def_i = 1},
    [GX_CONVTRANSPOSE_OUTPUT_PADDING] = {.name = "output_padding", .type = GX_ATTR_INTS},
    [GX_CONVTRANSPOSE_OUTPUT_SHAPE] = {.name = "output_shape", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_convtranspose_attrs / sizeof s_convtranspose_attrs[0] ==
                   GX_CONVTRANSPOSE_NATTRS,
               "ConvTranspose attrs");

/* ConvTranspose: X [N, C, in...] with W [C, M / group, k...] (+ B [M]) ->
 * [N, M, out...], float32; see gx_win_init_transpose for out. */
static int s_infer_convtranspose(gx_infer *ic)
{
    const char *op = "ConvTranspose";
    int rc;
    if ((rc = gx_infer_need_f32(ic, op, 0)) < 0 || (rc = gx_infer_need_f32(ic, op, 1)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    const int64_t group = ic->attr[GX_CONVTRANSPOSE_GROUP].i;
    if ((rc = s_check_weights(ic, op, group, true)) < 0)
        return rc;
    const int64_t m = wt->shape[1] * group;
    if ((rc = s_check_bias(ic, op, 2, m, GX_F32)) < 0)
        return rc;
    gx_win w;
    if ((rc = gx_win_init_transpose(&w, ic->attr, x, wt, ic->err, ic->errlen)) < 0)
        return rc;
    const int64_t mk = wt->shape[1] * w.k_size;
    if ((rc = s_blas_dims(ic, op, 3, (int64_t[]){mk, x->shape[1], w.out_size})) < 0)
        return rc;
    if (gx_shape_numel(3, (int64_t[]){m, w.k_size, w.out_size}, INT64_MAX / 4) < 0)
        return gx_infer_errf(ic, GX_ELIMIT, "%s: the column buffer is too large", op);
    return s_set_out(ic, op, 0, GX_F32, x->shape[0], m, w.nsp, w.in);
}

static gx_cost s_cost_convtranspose(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0], *wt = &ic->in[1];
    double per_x = (double)gx_view_numel(wt) / (double)(wt->shape[0] > 0 ? wt->shape[0] : 1);
    return s_cost_io(ic, 2.0 * per_x * (double)gx_view_numel(x) +
                             (s_has(ic, 2) ? (double)gx_view_numel(&ic->out[0]) : 0.0));
}

/* Each image's product W^T X before col2im: M * k values per x position. */
static size_t s_scratch_convtranspose(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0], *y = &ic->out[0];
    gx_win w;
    gx_win_init_transpose(&w, ic->attr, x, &ic->in[1], NULL, 0);
    const int64_t per_image = y->shape[1] * w.k_size * w.out_size;
    return (size_t)(gx_conv_pass_images(x->shape[0], per_image) * per_image) * sizeof(float);
}

const gx_op_schema gx_schema_CONVTRANSPOSE = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_convtranspose_attrs, .n_attrs = GX_CONVTRANSPOSE_NATTRS,
    .infer = s_infer_convtranspose, .cost = s_cost_convtranspose,
    .scratch = s_scratch_convtranspose, .batch = gx_batch_samplewise,
};

/* ---- windowed pools ---- */

static const gx_dtype s_float_types[] = {GX_F32, GX_F64, GX_F16};
#define S_FLOAT_NAMES "float32, float64 or float16"

static int s_bool_attr(gx_infer *ic, const char *op, const char *name, int64_t v)
{
    if (v != 0 && v != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: %s is %lld, expected 0 or 1", op, name,
                             (long long)v);
    return GX_OK;
}

/* A pool of x (dtypes ok) with ceil_mode: Y [N, C, out...] of x's dtype. */
static int s_infer_pool(gx_infer *ic, const char *op, int n_ok, const gx_dtype *ok,
                        const char *ok_names, int ceil_attr)
{
    int rc;
    if ((rc = s_need_dtype(ic, op, 0, n_ok, ok, ok_names)) < 0 ||
        (rc = s_bool_attr(ic, op, "ceil_mode", ic->attr[ceil_attr].i)) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    gx_win w;
    if ((rc = gx_win_init(&w, ic->attr, op, x, NULL, ic->attr[ceil_attr].i != 0, true, ic->err,
                          ic->errlen)) < 0)
        return rc;
    return s_set_out(ic, op, 0, x->dtype, x->shape[0], x->shape[1], w.nsp, w.out);
}

/* One visit of each tap of each window. */
static gx_cost s_cost_pool(const gx_infer *ic)
{
    const gx_attrval *ks = &ic->attr[GX_WIN_KERNEL_SHAPE];
    double window = 1;
    for (size_t i = 0; i < ks->n; i++)
        window *= (double)ks->ints[i];
    return s_cost_io(ic, window * (double)gx_view_numel(&ic->out[0]));
}

static const gx_attr_spec s_maxpool_attrs[] = {
    S_WIN_ATTRS,
    [GX_MAXPOOL_CEIL_MODE] = {.name = "ceil_mode", .type = GX_ATTR_INT, .def_i = 0},
    [GX_MAXPOOL_STORAGE_ORDER] = {.name = "storage_order", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_maxpool_attrs / sizeof s_maxpool_attrs[0] == GX_MAXPOOL_NATTRS,
               "MaxPool attrs");

/* MaxPool: the largest element of each window (padding never wins); the
 * optional second output holds its flat index into X, the spatial part in
 * row-major order or, with storage_order 1, column-major. */
static int s_infer_maxpool(gx_infer *ic)
{
    static const gx_dtype ok[] = {GX_F32, GX_F64, GX_F16, GX_I8, GX_U8};
    int rc = s_infer_pool(ic, "MaxPool", 5, ok, "float32, float64, float16, int8 or uint8",
                          GX_MAXPOOL_CEIL_MODE);
    if (rc < 0 ||
        (rc = s_bool_attr(ic, "MaxPool", "storage_order",
                          ic->attr[GX_MAXPOOL_STORAGE_ORDER].i)) < 0)
        return rc;
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_I64, ic->out[0].ndim, ic->out[0].shape);
    return GX_OK;
}

/* Indices are flat offsets into the whole X, the batch axis included: a
 * slice's would count from its own first sample. */
static bool s_batch_maxpool(const gx_batch_ctx *bc)
{
    return !(bc->n_out > 1 && bc->out[1].ndim >= 0) && gx_batch_samplewise(bc);
}

const gx_op_schema gx_schema_MAXPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2,
    .attrs = s_maxpool_attrs, .n_attrs = GX_MAXPOOL_NATTRS,
    .infer = s_infer_maxpool, .cost = s_cost_pool, .batch = s_batch_maxpool,
};

static const gx_attr_spec s_averagepool_attrs[] = {
    S_WIN_ATTRS,
    [GX_AVERAGEPOOL_CEIL_MODE] = {.name = "ceil_mode", .type = GX_ATTR_INT, .def_i = 0},
    [GX_AVERAGEPOOL_COUNT_INCLUDE_PAD] = {.name = "count_include_pad", .type = GX_ATTR_INT,
                                          .def_i = 0},
};
_Static_assert(sizeof s_averagepool_attrs / sizeof s_averagepool_attrs[0] ==
                   GX_AVERAGEPOOL_NATTRS,
               "AveragePool attrs");

/* AveragePool: the mean of each window's elements of X, or with
 * count_include_pad of all its taps inside the padded X (taps that only
 * ceil_mode added beyond the padding never count). */
static int s_infer_averagepool(gx_infer *ic)
{
    int rc = s_infer_pool(ic, "AveragePool", 3, s_float_types, S_FLOAT_NAMES,
                          GX_AVERAGEPOOL_CEIL_MODE);
    if (rc < 0)
        return rc;
    return s_bool_attr(ic, "AveragePool", "count_include_pad",
                       ic->attr[GX_AVERAGEPOOL_COUNT_INCLUDE_PAD].i);
}

const gx_op_schema gx_schema_AVERAGEPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_averagepool_attrs, .n_attrs = GX_AVERAGEPOOL_NATTRS,
    .infer = s_infer_averagepool, .cost = s_cost_pool, .batch = gx_batch_samplewise,
};

static const gx_attr_spec s_lppool_attrs[] = {
    S_WIN_ATTRS,
    [GX_LPPOOL_CEIL_MODE] = {.name = "ceil_mode", .type = GX_ATTR_INT, .def_i = 0},
    [GX_LPPOOL_P] = {.name = "p", .type = GX_ATTR_INT, .def_i = 2},
};
_Static_assert(sizeof s_lppool_attrs / sizeof s_lppool_attrs[0] == GX_LPPOOL_NATTRS,
               "LpPool attrs");

static int s_check_p(gx_infer *ic, const char *op, int64_t p)
{
    if (p < 1 || p > 64)
        return gx_infer_errf(ic, GX_EATTR, "%s: p is %lld, expected 1..64", op, (long long)p);
    return GX_OK;
}

/* LpPool: (sum over each window of |x|^p)^(1/p); padding adds nothing. */
static int s_infer_lppool(gx_infer *ic)
{
    int rc = s_check_p(ic, "LpPool", ic->attr[GX_LPPOOL_P].i);
    if (rc < 0)
        return rc;
    return s_infer_pool(ic, "LpPool", 3, s_float_types, S_FLOAT_NAMES, GX_LPPOOL_CEIL_MODE);
}

const gx_op_schema gx_schema_LPPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_lppool_attrs, .n_attrs = GX_LPPOOL_NATTRS,
    .infer = s_infer_lppool, .cost = s_cost_pool, .batch = gx_batch_samplewise,
};

/* ---- global pools ---- */

/* A global pool of x [N, C, spatial...] (rank >= 2): [N, C, 1...]. */
static int s_infer_global(gx_infer *ic, const char *op)
{
    int rc = s_need_dtype(ic, op, 0, 3, s_float_types, S_FLOAT_NAMES);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2) {
        char sx[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X is %s; rank >= 2 needed ([N, C, ...])", op,
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = d < 2 ? x->shape[d] : 1;
    gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    return GX_OK;
}

static int s_infer_globalmaxpool(gx_infer *ic)
{
    return s_infer_global(ic, "GlobalMaxPool");
}

static int s_infer_globalaveragepool(gx_infer *ic)
{
    return s_infer_global(ic, "GlobalAveragePool");
}

static const gx_attr_spec s_globallppool_attrs[] = {
    [GX_GLOBALLPPOOL_P] = {.name = "p", .type = GX_ATTR_INT, .def_i = 2},
};
_Static_assert(sizeof s_globallppool_attrs / sizeof s_globallppool_attrs[0] ==
                   GX_GLOBALLPPOOL_NATTRS,
               "GlobalLpPool attrs");

static int s_infer_globallppool(gx_infer *ic)
{
    int rc = s_check_p(ic, "GlobalLpPool", ic->attr[GX_GLOBALLPPOOL_P].i);
    return rc < 0 ? rc : s_infer_global(ic, "GlobalLpPool");
}

static gx_cost s_cost_global(const gx_infer *ic)
{
    return s_cost_io(ic, (double)gx_view_numel(&ic->in[0]));
}

const gx_op_schema gx_schema_GLOBALMAXPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = s_infer_globalmaxpool, .cost = s_cost_global, .batch = gx_batch_samplewise,
};

const gx_op_schema gx_schema_GLOBALAVERAGEPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = s_infer_globalaveragepool, .cost = s_cost_global,
    .batch = gx_batch_samplewise,
};

const gx_op_schema gx_schema_GLOBALLPPOOL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_globallppool_attrs, .n_attrs = GX_GLOBALLPPOOL_NATTRS,
    .infer = s_infer_globallppool, .cost = s_cost_global, .batch = gx_batch_samplewise,
};

/* ---- MaxUnpool ---- */

static const gx_attr_spec s_maxunpool_attrs[] = {
    [GX_MAXUNPOOL_KERNEL_SHAPE] = {.name = "kernel_shape", .type = GX_ATTR_INTS,
                                   .required = true},
    [GX_MAXUNPOOL_PADS] = {.name = "pads", .type = GX_ATTR_INTS},
    [GX_MAXUNPOOL_STRIDES] = {.name = "strides", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_maxunpool_attrs / sizeof s_maxunpool_attrs[0] == GX_MAXUNPOOL_NATTRS,
               "MaxUnpool attrs");

void gx_maxunpool_dims(const gx_attrval *attr, const gx_view *x, int64_t *dims)
{
    const int nsp = x->ndim - 2;
    const gx_attrval *k = &attr[GX_MAXUNPOOL_KERNEL_SHAPE], *s = &attr[GX_MAXUNPOOL_STRIDES];
    const gx_attrval *p = &attr[GX_MAXUNPOOL_PADS];
    for (int d = 0; d < nsp; d++) {
        const int64_t in = x->shape[2 + d];
        dims[d] = (in > 0 ? in - 1 : 0) * (s->set ? s->ints[d] : 1) + k->ints[d] -
                  (p->set ? p->ints[d] + p->ints[nsp + d] : 0);
    }
}

/* MaxUnpool: X [N, C, in...] and its MaxPool indices I (int64, X's shape)
 * -> zeros but Y.flat[I[i]] = X[i], for Y [N, C, (in - 1) * stride + k -
 * pads...]; the optional int64 input output_shape (a value input) may make
 * Y larger, with the extra zeros at the end of each dim (as the ONNX node
 * test with output_shape expects). */
static int s_infer_maxunpool(gx_infer *ic)
{
    const char *op = "MaxUnpool";
    static const gx_dtype i64[] = {GX_I64};
    int rc;
    if ((rc = s_need_dtype(ic, op, 0, 3, s_float_types, S_FLOAT_NAMES)) < 0 ||
        (rc = s_need_dtype(ic, op, 1, 1, i64, "int64")) < 0 ||
        (s_has(ic, 2) && (rc = s_need_dtype(ic, op, 2, 1, i64, "int64")) < 0))
        return rc;
    const gx_view *x = &ic->in[0], *ix = &ic->in[1];
    char sx[GX_SHAPE_STRLEN], si[GX_SHAPE_STRLEN];
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    if (x->ndim < 3)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X is %s; rank >= 3 needed ([N, C, spatial...])",
                             op, sx);
    if (ix->ndim != x->ndim || memcmp(ix->shape, x->shape, (size_t)x->ndim * sizeof *x->shape))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: I is %s, expected X's shape %s", op,
                             gx_shape_str(ix->ndim, ix->shape, si, sizeof si), sx);
    const int nsp = x->ndim - 2;
    int64_t k[GX_WIN_MAX], s[GX_WIN_MAX], pads[2 * GX_WIN_MAX], out[GX_WIN_MAX];
    if ((rc = s_ints(&ic->attr[GX_MAXUNPOOL_KERNEL_SHAPE], op, "kernel_shape", nsp, 1, 1, k,
                     ic->err, ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_MAXUNPOOL_STRIDES], op, "strides", nsp, 1, 1, s, ic->err,
                     ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_MAXUNPOOL_PADS], op, "pads", 2 * nsp, 0, 0, pads, ic->err,
                     ic->errlen)) < 0)
        return rc;
    for (int d = 0; d < nsp; d++) {
        if (x->shape[2 + d] > S_ATTR_MAX)
            return gx_infer_errf(ic, GX_ELIMIT, "%s: spatial dim %d of X is too large", op, d);
    }
    gx_maxunpool_dims(ic->attr, x, out);
    for (int d = 0; d < nsp; d++) {
        if (out[d] < 0)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: the pads of spatial dim %d exceed its extent",
                                 op, d);
    }
    if (s_has(ic, 2)) {
        const gx_view *os = &ic->in[2];
        if (os->ndim != 1 || os->shape[0] != x->ndim)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: output_shape is %s, expected [%d] (one value per dim of X)",
                                 op, gx_shape_str(os->ndim, os->shape, si, sizeof si), x->ndim);
        const int64_t *v = gx_infer_value(ic, 2);
        if (!v)
            return GX_INFER_DYNAMIC;
        char so[GX_SHAPE_STRLEN];
        gx_shape_str(x->ndim, v, so, sizeof so);
        if (v[0] != x->shape[0] || v[1] != x->shape[1])
            return gx_infer_errf(ic, GX_ESHAPE, "%s: output_shape is %s but X is %s (N and C must "
                                 "match)", op, so, sx);
        for (int d = 0; d < nsp; d++) {
            if (v[2 + d] < out[d] || v[2 + d] > S_ATTR_MAX)
                return gx_infer_errf(ic, GX_ESHAPE,
                                     "%s: output_shape is %s, smaller than the unpooled shape "
                                     "in spatial dim %d (%lld)",
                                     op, so, d, (long long)out[d]);
        }
        memcpy(out, v + 2, (size_t)nsp * sizeof *out);
    }
    return s_set_out(ic, op, 0, x->dtype, x->shape[0], x->shape[1], nsp, out);
}

static gx_cost s_cost_maxunpool(const gx_infer *ic)
{
    return s_cost_io(ic, 0);
}

const gx_op_schema gx_schema_MAXUNPOOL = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_maxunpool_attrs, .n_attrs = GX_MAXUNPOOL_NATTRS,
    .value_inputs = 1u << 2,
    .infer = s_infer_maxunpool, .cost = s_cost_maxunpool,
};

/* ---- Col2Im (opset 18) ---- */

static const gx_attr_spec s_col2im_attrs[] = {
    [GX_COL2IM_DILATIONS] = {.name = "dilations", .type = GX_ATTR_INTS},
    [GX_COL2IM_PADS] = {.name = "pads", .type = GX_ATTR_INTS},
    [GX_COL2IM_STRIDES] = {.name = "strides", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_col2im_attrs / sizeof s_col2im_attrs[0] == GX_COL2IM_NATTRS,
               "Col2Im attrs");

/* Input 1 or 2 (image_shape, block_shape): 1-D int64 of n values >= 1,
 * whose value must be known; GX_INFER_DYNAMIC while it is not. */
static int s_col2im_shape_input(gx_infer *ic, int i, const char *what, int n, int64_t *out)
{
    const gx_view *v = &ic->in[i];
    if (v->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "Col2Im: %s is %s, expected int64", what,
                             gx_dtype_name(v->dtype) ? gx_dtype_name(v->dtype) : "unknown dtype");
    if (v->ndim != 1 || v->shape[0] != n) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "Col2Im: %s has shape %s, expected [%d]", what,
                             gx_shape_str(v->ndim, v->shape, s, sizeof s), n);
    }
    const int64_t *p = gx_infer_value(ic, i);
    if (!p)
        return GX_INFER_DYNAMIC;
    for (int d = 0; d < n; d++) {
        if (p[d] < 1 || p[d] > S_ATTR_MAX)
            return gx_infer_errf(ic, GX_ESHAPE, "Col2Im: %s[%d] is %lld, expected 1..%d", what,
                                 d, (long long)p[d], S_ATTR_MAX);
        out[d] = p[d];
    }
    return GX_OK;
}

int gx_col2im_setup(gx_infer *ic, gx_col2im *g)
{
    const char *op = "Col2Im";
    static const gx_dtype ok[] = {GX_F32};
    int rc;
    if ((rc = s_need_dtype(ic, op, 0, 1, ok, "float32 only")) < 0 ||
        (rc = gx_infer_need(ic, op, 1)) < 0 || (rc = gx_infer_need(ic, op, 2)) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim != 3)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C * prod(block_shape), L] "
                             "needed", op, x->ndim);
    if (ic->in[1].ndim != 1 || ic->in[1].shape[0] < 1 ||
        ic->in[1].shape[0] > GX_MAX_DIMS - 2) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: image_shape has shape %s, expected [1..%d]", op,
                             gx_shape_str(ic->in[1].ndim, ic->in[1].shape, s, sizeof s),
                             GX_MAX_DIMS - 2);
    }
    const int n = (int)ic->in[1].shape[0];
    *g = (gx_col2im){.n = n};
    if ((rc = s_col2im_shape_input(ic, 1, "image_shape", n, g->image)) != GX_OK ||
        (rc = s_col2im_shape_input(ic, 2, "block_shape", n, g->block)) != GX_OK ||
        (rc = s_ints(&ic->attr[GX_COL2IM_DILATIONS], op, "dilations", n, 1, 1, g->dil, ic->err,
                     ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_COL2IM_PADS], op, "pads", 2 * n, 0, 0, g->pads, ic->err,
                     ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_COL2IM_STRIDES], op, "strides", n, 1, 1, g->stride, ic->err,
                     ic->errlen)) < 0)
        return rc;
    g->kprod = 1;
    g->nblocks = 1;
    for (int d = 0; d < n; d++) {
        g->kprod *= g->block[d];
        if (g->kprod > S_ATTR_MAX)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: block_shape is too large", op);
        const int64_t extent = g->dil[d] * (g->block[d] - 1) + 1;
        const int64_t room = g->image[d] + g->pads[d] + g->pads[n + d] - extent;
        if (room < 0)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: dim %d: the block (extent %lld) does not fit the padded "
                                 "image (%lld)", op, d, (long long)extent,
                                 (long long)(g->image[d] + g->pads[d] + g->pads[n + d]));
        g->cols[d] = room / g->stride[d] + 1;
        g->nblocks *= g->cols[d];
        if (g->nblocks > S_ATTR_MAX)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: too many blocks", op);
    }
    if (x->shape[1] % g->kprod != 0)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: input dim 1 (%lld) is not a multiple of prod(block_shape) = %lld",
                             op, (long long)x->shape[1], (long long)g->kprod);
    if (x->shape[2] != g->nblocks)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: input dim 2 is %lld, but the image holds %lld blocks", op,
                             (long long)x->shape[2], (long long)g->nblocks);
    g->channels = x->shape[1] / g->kprod;
    return GX_OK;
}

static int s_infer_col2im(gx_infer *ic)
{
    gx_col2im g;
    int rc = gx_col2im_setup(ic, &g);
    if (rc != GX_OK)
        return rc;
    int64_t shape[GX_MAX_DIMS] = {ic->in[0].shape[0], g.channels};
    memcpy(shape + 2, g.image, (size_t)g.n * sizeof shape[0]);
    if (gx_shape_numel(g.n + 2, shape, INT64_MAX / 8) < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "Col2Im: the output is too large");
    gx_view_set(&ic->out[0], GX_F32, g.n + 2, shape);
    return GX_OK;
}

/* one add per input element, plus zeroing the output */
static gx_cost s_cost_col2im(const gx_infer *ic)
{
    return s_cost_io(ic, (double)gx_view_numel(&ic->in[0]));
}

const gx_op_schema gx_schema_COL2IM = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_col2im_attrs, .n_attrs = GX_COL2IM_NATTRS, .value_inputs = 1u << 1 | 1u << 2,
    .infer = s_infer_col2im, .cost = s_cost_col2im, .batch = gx_batch_samplewise,
};

/* ---- DeformConv (opset 19) ---- */

static const gx_attr_spec s_deformconv_attrs[] = {
    [GX_DEFORMCONV_DILATIONS] = {.name = "dilations", .type = GX_ATTR_INTS},
    [GX_DEFORMCONV_GROUP] = {.name = "group", .type = GX_ATTR_INT, .def_i = 1},
    [GX_DEFORMCONV_KERNEL_SHAPE] = {.name = "kernel_shape", .type = GX_ATTR_INTS},
    [GX_DEFORMCONV_OFFSET_GROUP] = {.name = "offset_group", .type = GX_ATTR_INT, .def_i = 1},
    [GX_DEFORMCONV_PADS] = {.name = "pads", .type = GX_ATTR_INTS},
    [GX_DEFORMCONV_STRIDES] = {.name = "strides", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_deformconv_attrs / sizeof s_deformconv_attrs[0] == GX_DEFORMCONV_NATTRS,
               "DeformConv attrs");

/* Input i is float32 of the given rank-4 shape (B: [oc]). */
static int s_deform_need(gx_infer *ic, int i, const char *what, int n, const int64_t *want)
{
    static const gx_dtype ok[] = {GX_F32};
    int rc = s_need_dtype(ic, "DeformConv", i, 1, ok, "float32 only");
    if (rc < 0)
        return rc;
    const gx_view *v = &ic->in[i];
    if (v->ndim != n || memcmp(v->shape, want, (size_t)n * sizeof want[0]) != 0) {
        char sv[GX_SHAPE_STRLEN], sw[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "DeformConv: %s has shape %s, expected %s", what,
                             gx_shape_str(v->ndim, v->shape, sv, sizeof sv),
                             gx_shape_str(n, want, sw, sizeof sw));
    }
    return GX_OK;
}

int gx_deformconv_setup(gx_infer *ic, gx_deformconv *g)
{
    const char *op = "DeformConv";
    static const gx_dtype ok[] = {GX_F32};
    int rc;
    if ((rc = s_need_dtype(ic, op, 0, 1, ok, "float32 only")) < 0 ||
        (rc = s_need_dtype(ic, op, 1, 1, ok, "float32 only")) < 0 ||
        (rc = gx_infer_need(ic, op, 2)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *w = &ic->in[1];
    if (x->ndim != 4)
        return gx_infer_errf(ic, x->ndim > 4 ? GX_EUNSUPPORTED : GX_ESHAPE,
                             "%s: X has rank %d; only 2-D images [N, C, H, W] are supported", op,
                             x->ndim);
    if (w->ndim != 4)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: W has rank %d; [M, C / group, kH, kW] needed",
                             op, w->ndim);
    *g = (gx_deformconv){.n = x->shape[0], .c = x->shape[1], .h = x->shape[2], .w = x->shape[3],
                         .m = w->shape[0], .kh = w->shape[2], .kw = w->shape[3],
                         .group = ic->attr[GX_DEFORMCONV_GROUP].i,
                         .og = ic->attr[GX_DEFORMCONV_OFFSET_GROUP].i};
    const gx_attrval *ks = &ic->attr[GX_DEFORMCONV_KERNEL_SHAPE];
    if (ks->set && (ks->n != 2 || ks->ints[0] != g->kh || ks->ints[1] != g->kw))
        return gx_infer_errf(ic, GX_EATTR, "%s: kernel_shape does not match W's [%lld, %lld]", op,
                             (long long)g->kh, (long long)g->kw);
    if (g->group < 1 || g->group > S_ATTR_MAX || g->c != w->shape[1] * g->group ||
        g->m % g->group != 0)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: group %lld does not fit X's %lld channels, W's %lld input "
                             "channels and %lld output channels",
                             op, (long long)g->group, (long long)g->c, (long long)w->shape[1],
                             (long long)g->m);
    if (g->og < 1 || g->og > S_ATTR_MAX || g->c % g->og != 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: offset_group %lld does not divide the %lld "
                             "channels", op, (long long)g->og, (long long)g->c);
    int64_t dil[2], pads[4], str[2];
    if ((rc = s_ints(&ic->attr[GX_DEFORMCONV_DILATIONS], op, "dilations", 2, 1, 1, dil, ic->err,
                     ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_DEFORMCONV_PADS], op, "pads", 4, 0, 0, pads, ic->err,
                     ic->errlen)) < 0 ||
        (rc = s_ints(&ic->attr[GX_DEFORMCONV_STRIDES], op, "strides", 2, 1, 1, str, ic->err,
                     ic->errlen)) < 0)
        return rc;
    g->dh = dil[0];
    g->dw = dil[1];
    g->ph = pads[0];
    g->pw = pads[1];
    g->sh = str[0];
    g->sw = str[1];
    const int64_t eh = (g->kh - 1) * g->dh + 1, ew = (g->kw - 1) * g->dw + 1;
    const int64_t rh = g->h + pads[0] + pads[2] - eh, rw = g->w + pads[1] + pads[3] - ew;
    if (g->kh < 1 || g->kw < 1 || rh < 0 || rw < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the kernel (extent %lld x %lld) does not fit "
                             "the padded image", op, (long long)eh, (long long)ew);
    g->oh = rh / g->sh + 1;
    g->ow = rw / g->sw + 1;
    const int64_t taps = g->og * g->kh * g->kw;
    if (taps > S_ATTR_MAX)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the kernel is too large", op);
    if ((rc = s_deform_need(ic, 2, "offset", 4, (int64_t[]){g->n, 2 * taps, g->oh, g->ow})) < 0)
        return rc;
    g->has_b = s_has(ic, 3);
    g->has_mask = s_has(ic, 4);
    if ((g->has_b && (rc = s_deform_need(ic, 3, "B", 1, (int64_t[]){g->m})) < 0) ||
        (g->has_mask &&
         (rc = s_deform_need(ic, 4, "mask", 4, (int64_t[]){g->n, taps, g->oh, g->ow})) < 0))
        return rc;
    return GX_OK;
}

static int s_infer_deformconv(gx_infer *ic)
{
    gx_deformconv g;
    int rc = gx_deformconv_setup(ic, &g);
    if (rc != GX_OK)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, 4, (int64_t[]){g.n, g.m, g.oh, g.ow});
    return GX_OK;
}

/* per output element: C / group input channels times kH kW taps, each a
 * bilinear sample (4 loads, about 10 flops) and a multiply-add */
static gx_cost s_cost_deformconv(const gx_infer *ic)
{
    const gx_view *w = &ic->in[1];
    return s_cost_io(ic, (double)gx_view_numel(&ic->out[0]) * (double)w->shape[1] *
                             (double)w->shape[2] * (double)w->shape[3] * 12.0);
}

/* X, offset and mask carry the batch; W and B must not. */
static bool s_batch_deformconv(const gx_batch_ctx *bc)
{
    if (!gx_batch_in(bc, 0) || !gx_batch_in(bc, 2) || gx_batch_in(bc, 1) ||
        (bc->n_in > 3 && gx_batch_in(bc, 3)) ||
        (bc->n_in > 4 && bc->in[4].ndim >= 0 && !gx_batch_in(bc, 4)))
        return false;
    bc->out_batched[0] = true;
    return true;
}

const gx_op_schema gx_schema_DEFORMCONV = {
    .min_in = 3, .max_in = 5, .min_out = 1, .max_out = 1,
    .attrs = s_deformconv_attrs, .n_attrs = GX_DEFORMCONV_NATTRS,
    .infer = s_infer_deformconv, .cost = s_cost_deformconv, .batch = s_batch_deformconv,
};
