/* Schemas of the quant family (GX_OPS_QUANT in ops/op.h): linear
 * (de)quantisation per tensor or per axis, DynamicQuantizeLinear and
 * QLinearMatMul. Scales are float32; quantised values are uint8 / int8
 * (and int32 for DequantizeLinear's input). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/conv.h"
#include "ops/schema.h"

#define S_BYTES (GX_DT_BIT(GX_U8) | GX_DT_BIT(GX_I8))

static bool s_present(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* Scale si (and zero point zi when present) of x: a scalar or one-element
 * 1-D tensor (per tensor), or a 1-D tensor of x's dim at axis (per axis).
 * The zero point (input zi, when present) has as many elements. */
static int s_check_scale(gx_infer *ic, const char *op, int xi, int si, int zi, int64_t axis)
{
    const gx_view *x = &ic->in[xi], *s = &ic->in[si];
    int rc = gx_infer_need_dtypes(ic, op, si, GX_DT_BIT(GX_F32));
    if (rc < 0)
        return rc;
    char ss[GX_SHAPE_STRLEN], sx[GX_SHAPE_STRLEN];
    gx_shape_str(s->ndim, s->shape, ss, sizeof ss);
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    if (s->ndim > 1 || (s->ndim == 1 && s->shape[0] != 1)) {
        int ax;
        if (s->ndim != 1 || !gx_axis_norm(axis, x->ndim, &ax))
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: scale is %s and axis %lld for input %s; expected a "
                                 "scalar or a 1-D tensor of the axis' size",
                                 op, ss, (long long)axis, sx);
        if (s->shape[0] != x->shape[ax])
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: scale is %s but input %s has %lld at axis %lld", op, ss,
                                 sx, (long long)x->shape[ax], (long long)axis);
    }
    if (zi >= 0 && s_present(ic, zi)) {
        const gx_view *z = &ic->in[zi];
        if (gx_view_numel(z) != gx_view_numel(s) || z->ndim > 1) {
            char sz[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "%s: zero point is %s but scale is %s", op,
                                 gx_shape_str(z->ndim, z->shape, sz, sizeof sz), ss);
        }
    }
    return GX_OK;
}

static gx_cost s_cost_elementwise(const gx_infer *ic)
{
    return (gx_cost){.flops = 3.0 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* Elementwise with an unbatched scale and zero point, unless they run per
 * axis along the batch's axis 0 (one scale per sample). attr[axis_attr] is
 * the op's axis attribute. */
static bool s_batch_quant(const gx_batch_ctx *bc, int axis_attr)
{
    const gx_view *s = &bc->in[1];
    int axis;
    if (!gx_batch_samplewise(bc) || s->ndim > 1)
        return false;
    if (s->ndim == 1 && s->shape[0] != 1 &&
        (!gx_axis_norm(bc->attr[axis_attr].i, bc->in[0].ndim, &axis) || axis == 0))
        return false;
    return true;
}

/* ---- QuantizeLinear ---- */

static const gx_attr_spec s_quantize_attrs[] = {
    [GX_QUANTIZE_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 1},
    [GX_QUANTIZE_SATURATE] = {.name = "saturate", .type = GX_ATTR_INT, .def_i = 1},
    [GX_QUANTIZE_BLOCK_SIZE] = {.name = "block_size", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_quantize_attrs / sizeof s_quantize_attrs[0] == GX_QUANTIZE_NATTRS,
               "QuantizeLinear attrs");

/* y = saturate(round_half_even(x / scale) + zero_point); y has the zero
 * point's dtype, uint8 without one. (saturate only concerns float8.) */
static int s_infer_quantize(gx_infer *ic)
{
    const char *op = "QuantizeLinear";
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, op, 0, GX_DT_BIT(GX_F32))) < 0 ||
        (s_present(ic, 2) && (rc = gx_infer_need_dtypes(ic, op, 2, S_BYTES)) < 0))
        return rc;
    if (ic->attr[GX_QUANTIZE_BLOCK_SIZE].i != 0)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: block_size %lld (only 0 is supported)",
                             op, (long long)ic->attr[GX_QUANTIZE_BLOCK_SIZE].i);
    if ((rc = s_check_scale(ic, op, 0, 1, 2, ic->attr[GX_QUANTIZE_AXIS].i)) < 0)
        return rc;
    gx_dtype dt = s_present(ic, 2) ? ic->in[2].dtype : GX_U8;
    gx_view_set(&ic->out[0], dt, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

static bool s_batch_quantize(const gx_batch_ctx *bc)
{
    return s_batch_quant(bc, GX_QUANTIZE_AXIS);
}

const gx_op_schema gx_schema_QUANTIZE_LINEAR = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_quantize_attrs, .n_attrs = GX_QUANTIZE_NATTRS,
    .flags = GX_OPF_ELEMENTWISE,
    .infer = s_infer_quantize, .cost = s_cost_elementwise, .batch = s_batch_quantize,
};

/* ---- DequantizeLinear ---- */

static const gx_attr_spec s_dequantize_attrs[] = {
    [GX_DEQUANTIZE_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 1},
    [GX_DEQUANTIZE_BLOCK_SIZE] = {.name = "block_size", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_dequantize_attrs / sizeof s_dequantize_attrs[0] ==
                   GX_DEQUANTIZE_NATTRS,
               "DequantizeLinear attrs");

/* y = (x - zero_point) * scale in float32; the zero point has x's dtype. */
static int s_infer_dequantize(gx_infer *ic)
{
    const char *op = "DequantizeLinear";
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, op, 0, S_BYTES | GX_DT_BIT(GX_I32))) < 0)
        return rc;
    if (s_present(ic, 2) && ic->in[2].dtype != ic->in[0].dtype) {
        const char *dz = gx_dtype_name(ic->in[2].dtype);
        return gx_infer_errf(ic, GX_EDTYPE, "%s: zero point is %s but x is %s", op,
                             dz ? dz : "an unknown dtype", gx_dtype_name(ic->in[0].dtype));
    }
    if (ic->attr[GX_DEQUANTIZE_BLOCK_SIZE].i != 0)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: block_size %lld (only 0 is supported)",
                             op, (long long)ic->attr[GX_DEQUANTIZE_BLOCK_SIZE].i);
    if ((rc = s_check_scale(ic, op, 0, 1, 2, ic->attr[GX_DEQUANTIZE_AXIS].i)) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

static bool s_batch_dequantize(const gx_batch_ctx *bc)
{
    return s_batch_quant(bc, GX_DEQUANTIZE_AXIS);
}

const gx_op_schema gx_schema_DEQUANTIZE_LINEAR = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_dequantize_attrs, .n_attrs = GX_DEQUANTIZE_NATTRS,
    .flags = GX_OPF_ELEMENTWISE,
    .infer = s_infer_dequantize, .cost = s_cost_elementwise, .batch = s_batch_dequantize,
};

/* ---- DynamicQuantizeLinear ---- */

/* x float32 -> y uint8 of x's shape, scalar float32 scale, scalar uint8
 * zero point. */
static int s_infer_dynamic_quantize(gx_infer *ic)
{
    int rc = gx_infer_need_dtypes(ic, "DynamicQuantizeLinear", 0, GX_DT_BIT(GX_F32));
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_U8, ic->in[0].ndim, ic->in[0].shape);
    gx_view_set(&ic->out[1], GX_F32, 0, NULL);
    gx_view_set(&ic->out[2], GX_U8, 0, NULL);
    return GX_OK;
}

/* A min/max pass and a quantising pass over x. */
static gx_cost s_cost_dynamic_quantize(const gx_infer *ic)
{
    return (gx_cost){.flops = 5.0 * (double)gx_view_numel(&ic->in[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_DYNAMIC_QUANTIZE_LINEAR = {
    .min_in = 1, .max_in = 1, .min_out = 3, .max_out = 3,
    .infer = s_infer_dynamic_quantize, .cost = s_cost_dynamic_quantize,
};

/* ---- QLinearMatMul ---- */

/* Inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
 * y_zero_point; a and b of rank >= 2 with broadcast batch dims as MatMul.
 * Every scale and zero point is per tensor (one element); the zero points
 * have their operand's dtype, y that of y_zero_point. */
static int s_infer_qlinear_matmul(gx_infer *ic)
{
    const char *op = "QLinearMatMul";
    static const char *const names[8] = {"a", "a_scale", "a_zero_point", "b",
                                         "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
    int rc;
    for (int i = 0; i < 8; i++) {
        const bool scale = i == 1 || i == 4 || i == 6;
        if ((rc = gx_infer_need_dtypes(ic, op, i, scale ? GX_DT_BIT(GX_F32) : S_BYTES)) < 0)
            return rc;
        if (i == 2 || i == 5) {
            if (ic->in[i].dtype != ic->in[i - 2].dtype)
                return gx_infer_errf(ic, GX_EDTYPE, "%s: %s is %s but %s is %s", op, names[i],
                                     gx_dtype_name(ic->in[i].dtype), names[i - 2],
                                     gx_dtype_name(ic->in[i - 2].dtype));
        }
        if (i != 0 && i != 3 && (gx_view_numel(&ic->in[i]) != 1 || ic->in[i].ndim > 1)) {
            char s[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_EUNSUPPORTED,
                                 "%s: %s is %s; only per-tensor (one element) is supported", op,
                                 names[i], gx_shape_str(ic->in[i].ndim, ic->in[i].shape, s,
                                                        sizeof s));
        }
    }
    const gx_view *a = &ic->in[0], *b = &ic->in[3];
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    gx_shape_str(a->ndim, a->shape, sa, sizeof sa);
    gx_shape_str(b->ndim, b->shape, sb, sizeof sb);
    if (a->ndim < 2 || b->ndim < 2)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: a is %s and b is %s; both need rank >= 2",
                             op, sa, sb);
    if (a->shape[a->ndim - 1] != b->shape[b->ndim - 2])
        return gx_infer_errf(ic, GX_ESHAPE, "%s: a is %s but b is %s (K mismatch)", op, sa, sb);
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if (!gx_broadcast_shape(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nd, shape) ||
        nd + 2 > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: batch dims of a %s and b %s do not broadcast",
                             op, sa, sb);
    shape[nd++] = a->shape[a->ndim - 2];
    shape[nd++] = b->shape[b->ndim - 1];
    gx_view_set(&ic->out[0], ic->in[7].dtype, nd, shape);
    return GX_OK;
}

static gx_cost s_cost_qlinear_matmul(const gx_infer *ic)
{
    const gx_view *a = &ic->in[0];
    return (gx_cost){.flops = 2.0 * (double)a->shape[a->ndim - 1] *
                              (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* MatMul's rule on a and b; a_scale and a_zero_point per row of a
 * batched 2-D a mix. */
static bool s_batch_qlinear_matmul(const gx_batch_ctx *bc)
{
    return gx_batch_matmul(bc, 0, 3, 1u << 1 | 1u << 2);
}

const gx_op_schema gx_schema_QLINEAR_MATMUL = {
    .min_in = 8, .max_in = 8, .min_out = 1, .max_out = 1,
    .infer = s_infer_qlinear_matmul, .cost = s_cost_qlinear_matmul,
    .batch = s_batch_qlinear_matmul,
};

/* ---- QLinearConv ---- */

static const gx_attr_spec s_qlinearconv_attrs[] = {
    [GX_WIN_AUTO_PAD] = {.name = "auto_pad", .type = GX_ATTR_STRING, .def_s = "NOTSET"},
    [GX_WIN_DILATIONS] = {.name = "dilations", .type = GX_ATTR_INTS},
    [GX_WIN_KERNEL_SHAPE] = {.name = "kernel_shape", .type = GX_ATTR_INTS},
    [GX_WIN_PADS] = {.name = "pads", .type = GX_ATTR_INTS},
    [GX_WIN_STRIDES] = {.name = "strides", .type = GX_ATTR_INTS},
    [GX_QLINEARCONV_GROUP] = {.name = "group", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_qlinearconv_attrs / sizeof s_qlinearconv_attrs[0] ==
                   GX_QLINEARCONV_NATTRS,
               "QLinearConv attrs");

/* Inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
 * y_zero_point and the optional int32 bias B [M]: x [N, C, in...] and w
 * [M, C / group, k...] uint8 or int8; w's scale and zero point per tensor
 * or per output channel, the others per tensor. y [N, M, out...] has
 * y_zero_point's dtype. */
static int s_infer_qlinearconv(gx_infer *ic)
{
    const char *op = "QLinearConv";
    static const char *const names[8] = {"x", "x_scale", "x_zero_point", "w",
                                         "w_scale", "w_zero_point", "y_scale", "y_zero_point"};
    int rc;
    for (int i = 0; i < 8; i++) {
        const bool scale = i == 1 || i == 4 || i == 6;
        if ((rc = gx_infer_need_dtypes(ic, op, i, scale ? GX_DT_BIT(GX_F32) : S_BYTES)) < 0)
            return rc;
    }
    const gx_view *x = &ic->in[0], *wt = &ic->in[3];
    for (int i = 2; i <= 5; i += 3) {
        if (ic->in[i].dtype != ic->in[i - 2].dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: %s is %s but %s is %s", op, names[i],
                                 gx_dtype_name(ic->in[i].dtype), names[i - 2],
                                 gx_dtype_name(ic->in[i - 2].dtype));
    }
    char sx[GX_SHAPE_STRLEN], sw[GX_SHAPE_STRLEN];
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    gx_shape_str(wt->ndim, wt->shape, sw, sizeof sw);
    const int64_t group = ic->attr[GX_QLINEARCONV_GROUP].i;
    if (x->ndim < 3 || wt->ndim != x->ndim || group < 1 || wt->shape[0] % group != 0 ||
        wt->shape[1] * group != x->shape[1])
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: x is %s, w is %s and group %lld; expected [N, C, ...] and "
                             "[M, C / group, ...] of one rank >= 3, M a multiple of group",
                             op, sx, sw, (long long)group);
    const int64_t m = wt->shape[0];
    for (int i = 1; i < 9; i++) {
        if (i == 3 || (i == 8 && !s_present(ic, 8)))
            continue;
        const gx_view *v = &ic->in[i];
        const bool per_m = i == 4 || i == 5 || i == 8;
        bool ok = v->ndim <= 1 && (gx_view_numel(v) == 1 || (per_m && v->shape[0] == m));
        if (i == 8)
            ok = v->ndim == 1 && v->shape[0] == m && v->dtype == GX_I32;
        if (!ok) {
            char s[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, i == 8 && v->dtype != GX_I32 ? GX_EDTYPE : GX_ESHAPE,
                                 "%s: %s is %s %s; expected %s", op, i == 8 ? "B" : names[i],
                                 gx_dtype_name(v->dtype),
                                 gx_shape_str(v->ndim, v->shape, s, sizeof s),
                                 i == 8   ? "int32 [M]"
                                 : per_m ? "one element or one per output channel"
                                         : "one element");
        }
    }
    gx_win w;
    if ((rc = gx_win_init(&w, ic->attr, op, x, wt->shape + 2, false, false, ic->err,
                          ic->errlen)) < 0)
        return rc;
    int64_t shape[GX_MAX_DIMS] = {x->shape[0], m};
    memcpy(shape + 2, w.out, (size_t)w.nsp * sizeof *shape);
    gx_view_set(&ic->out[0], ic->in[7].dtype, x->ndim, shape);
    return GX_OK;
}

static gx_cost s_cost_qlinearconv(const gx_infer *ic)
{
    const gx_view *wt = &ic->in[3];
    return (gx_cost){.flops = 2.0 * (double)(gx_view_numel(wt) / wt->shape[0]) *
                              (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_QLINEAR_CONV = {
    .min_in = 8, .max_in = 9, .min_out = 1, .max_out = 1,
    .attrs = s_qlinearconv_attrs, .n_attrs = GX_QLINEARCONV_NATTRS,
    .infer = s_infer_qlinearconv, .cost = s_cost_qlinearconv, .batch = gx_batch_samplewise,
};

/* ---- Unique ---- */

static const gx_attr_spec s_unique_attrs[] = {
    [GX_UNIQUE_AXIS] = {.name = "axis", .type = GX_ATTR_INT},
    [GX_UNIQUE_SORTED] = {.name = "sorted", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_unique_attrs / sizeof s_unique_attrs[0] == GX_UNIQUE_NATTRS,
               "Unique attrs");

#define S_UNIQUE_DTYPES                                                       \
    (GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64) | GX_DT_BIT(GX_I64) | GX_DT_BIT(GX_I32) |           \
     GX_DT_BIT(GX_I8) | GX_DT_BIT(GX_U8))

/* Order of elements i and j of x: -1, 0 or 1; NaN sorts after every number
 * and equals NaN (as numpy's unique). */
static int s_elem_cmp(const gx_view *x, int64_t i, int64_t j)
{
#define S_CMP(T)                                                              \
    do {                                                                      \
        const T a = ((const T *)x->data)[i], b = ((const T *)x->data)[j];     \
        if (a < b)                                                            \
            return -1;                                                        \
        if (a > b)                                                            \
            return 1;                                                         \
        if (a == b)                                                           \
            return 0;                                                         \
        return (a != a) - (b != b); /* a NaN is the greater */                \
    } while (0)
    switch (x->dtype) {
    case GX_F32: S_CMP(float);
    case GX_F64: S_CMP(double);
    case GX_I64: S_CMP(int64_t);
    case GX_I32: S_CMP(int32_t);
    case GX_I8: S_CMP(int8_t);
    case GX_U8: S_CMP(uint8_t);
    case GX_F16: case GX_BF16: case GX_I16: case GX_U16: case GX_U32: case GX_U64:
    case GX_BOOL: case GX_STRING: case GX_DTYPE_COUNT:
        break;
    }
#undef S_CMP
    return 0;
}

/* x as [outer, n, inner] for Unique's slices. */
typedef struct s_slices {
    const gx_view *x;
    int64_t outer, n, inner;
} s_slices;

static s_slices s_unique_slices(const gx_view *x, bool flatten, int axis)
{
    s_slices s = {.x = x, .outer = 1, .n = flatten ? x->numel : x->shape[axis], .inner = 1};
    for (int d = 0; !flatten && d < x->ndim; d++) {
        if (d < axis)
            s.outer *= x->shape[d];
        else if (d > axis)
            s.inner *= x->shape[d];
    }
    return s;
}

static int s_slice_cmp(const s_slices *s, int64_t i, int64_t j)
{
    for (int64_t o = 0; o < s->outer; o++) {
        const int64_t base = o * s->n * s->inner;
        for (int64_t e = 0; e < s->inner; e++) {
            int c = s_elem_cmp(s->x, base + i * s->inner + e, base + j * s->inner + e);
            if (c)
                return c;
        }
    }
    return 0;
}

/* Stable bottom-up merge sort of p[0..n) by slice order, tmp[n] as buffer. */
static void s_sort_slices(const s_slices *s, int64_t *p, int64_t *tmp)
{
    const int64_t n = s->n;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = s_slice_cmp(s, p[b], p[a]) < 0 ? p[b++] : p[a++];
            while (a < mid)
                tmp[o++] = p[a++];
            while (b < hi)
                tmp[o++] = p[b++];
        }
        memcpy(p, tmp, (size_t)n * sizeof *p);
    }
}

int64_t gx_unique_run(const gx_view *x, bool flatten, int axis, bool sorted, int64_t *work)
{
    const s_slices s = s_unique_slices(x, flatten, axis);
    const int64_t n = s.n;
    int64_t *first = work, *count = work + n, *inverse = work + 2 * n;
    int64_t *perm = work + 3 * n, *tmp = work + 4 * n, *group = work + 5 * n;
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    s_sort_slices(&s, perm, tmp);
    /* groups of equal slices in sorted order: tmp[g] its first index (the
     * sort is stable), inverse[g] its count for now */
    int64_t u = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k == 0 || s_slice_cmp(&s, perm[k - 1], perm[k]) != 0) {
            tmp[u] = perm[k];
            inverse[u++] = 0;
        }
        group[perm[k]] = u - 1;
        inverse[u - 1]++;
    }
    /* perm[g]: the output position of group g */
    int64_t next = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t g = group[i];
        if (sorted)
            perm[g] = g;
        else if (tmp[g] == i)
            perm[g] = next++;
    }
    for (int64_t g = 0; g < u; g++) {
        first[perm[g]] = tmp[g];
        count[perm[g]] = inverse[g];
    }
    for (int64_t i = 0; i < n; i++)
        inverse[i] = perm[group[i]];
    return u;
}

/* Y: x with the axis dim (flattened: the elements) cut to the unique
 * count, which needs x's value; indices and counts [u], inverse_indices
 * [n], all int64. */
static int s_infer_unique(gx_infer *ic)
{
    const char *op = "Unique";
    int rc = gx_infer_need_dtypes(ic, op, 0, S_UNIQUE_DTYPES);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    const bool flatten = !ic->attr[GX_UNIQUE_AXIS].set;
    int axis = 0;
    if (!flatten && !gx_axis_norm(ic->attr[GX_UNIQUE_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)ic->attr[GX_UNIQUE_AXIS].i, x->ndim);
    const void *data = gx_infer_value(ic, 0);
    if (!data)
        return GX_INFER_DYNAMIC;
    gx_view xv = *x;
    xv.numel = gx_view_numel(x);
    const int64_t n = flatten ? xv.numel : x->shape[axis];
    int64_t *work = malloc((size_t)(n ? n : 1) * 6 * sizeof *work);
    if (!work)
        return gx_infer_errf(ic, GX_ENOMEM, "%s: out of memory for %lld slices", op,
                             (long long)n);
    const int64_t u = gx_unique_run(&xv, flatten, axis, ic->attr[GX_UNIQUE_SORTED].i != 0, work);
    free(work);
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (flatten)
        gx_view_set(&ic->out[0], x->dtype, 1, &u);
    else {
        shape[axis] = u;
        gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    }
    for (int o = 1; o < ic->n_out; o++)
        gx_view_set(&ic->out[o], GX_I64, 1, o == 2 ? &n : &u);
    return GX_OK;
}

/* A sort of the slices: about n log n slice comparisons. */
static gx_cost s_cost_unique(const gx_infer *ic)
{
    const double n = (double)gx_view_numel(&ic->in[0]);
    return (gx_cost){.flops = n * (n > 1 ? log2(n) : 1.0), .bytes = gx_infer_io_bytes(ic)};
}

static size_t s_scratch_unique(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    int axis = 0;
    const bool flatten = !ic->attr[GX_UNIQUE_AXIS].set;
    if (!flatten)
        gx_axis_norm(ic->attr[GX_UNIQUE_AXIS].i, x->ndim, &axis);
    const int64_t n = flatten ? gx_view_numel(x) : x->shape[axis];
    return (size_t)n * 6 * sizeof(int64_t);
}

const gx_op_schema gx_schema_UNIQUE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 4,
    .attrs = s_unique_attrs, .n_attrs = GX_UNIQUE_NATTRS,
    .value_inputs = 1u << 0,
    .infer = s_infer_unique, .cost = s_cost_unique, .scratch = s_scratch_unique,
};

/* ---- NonMaxSuppression ---- */

static const gx_attr_spec s_nms_attrs[] = {
    [GX_NMS_CENTER_POINT_BOX] = {.name = "center_point_box", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_nms_attrs / sizeof s_nms_attrs[0] == GX_NMS_NATTRS,
               "NonMaxSuppression attrs");

/* Box b as corners x1 <= x2, y1 <= y2 (corner boxes [y1, x1, y2, x2] may
 * come in either order; center boxes are [xc, yc, w, h]). */
static void s_box(const float *b, bool center, float c[4])
{
    if (center) {
        c[0] = b[0] - b[2] / 2, c[2] = b[0] + b[2] / 2;
        c[1] = b[1] - b[3] / 2, c[3] = b[1] + b[3] / 2;
    } else {
        c[0] = fminf(b[1], b[3]), c[2] = fmaxf(b[1], b[3]);
        c[1] = fminf(b[0], b[2]), c[3] = fmaxf(b[0], b[2]);
    }
}

/* IoU of a and b above threshold; boxes of no area never suppress. */
static bool s_suppresses(const float *a, const float *b, bool center, float threshold)
{
    float p[4], q[4];
    s_box(a, center, p);
    s_box(b, center, q);
    const float iw = fminf(p[2], q[2]) - fmaxf(p[0], q[0]);
    const float ih = fminf(p[3], q[3]) - fmaxf(p[1], q[1]);
    if (iw <= 0 || ih <= 0)
        return false;
    const float inter = iw * ih;
    const float area_p = (p[2] - p[0]) * (p[3] - p[1]), area_q = (q[2] - q[0]) * (q[3] - q[1]);
    const float uni = area_p + area_q - inter;
    if (area_p <= 0 || area_q <= 0 || uni <= 0)
        return false;
    return inter / uni > threshold;
}

/* Stable merge sort of idx[0..n) by score, highest first (ties keep the
 * lower index first). */
static void s_sort_scores(const float *score, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = score[idx[b]] > score[idx[a]] ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

int64_t gx_nms_run(int n_in, const gx_view *in, bool center, int64_t *out, int64_t *work)
{
    const gx_view *boxes = &in[0], *scores = &in[1];
    const int64_t nb = scores->shape[0], nc = scores->shape[1], n = scores->shape[2];
    const bool has[5] = {true, true, n_in > 2 && in[2].ndim >= 0, n_in > 3 && in[3].ndim >= 0,
                         n_in > 4 && in[4].ndim >= 0};
    const int64_t max_out = has[2] ? *(const int64_t *)in[2].data : 0;
    const float iou = has[3] ? *(const float *)in[3].data : 0.0f;
    int64_t *cand = work, *tmp = work + n, *sel = work + 2 * n, total = 0;
    for (int64_t b = 0; b < nb; b++) {
        const float *bx = (const float *)boxes->data + b * n * 4;
        for (int64_t c = 0; max_out > 0 && c < nc; c++) {
            const float *sc = (const float *)scores->data + (b * nc + c) * n;
            int64_t nn = 0, ns = 0;
            for (int64_t i = 0; i < n; i++) {
                if (!has[4] || sc[i] > *(const float *)in[4].data)
                    cand[nn++] = i;
            }
            s_sort_scores(sc, cand, tmp, nn);
            for (int64_t k = 0; k < nn && ns < max_out; k++) {
                bool keep = true;
                for (int64_t s = 0; keep && s < ns; s++)
                    keep = !s_suppresses(bx + cand[k] * 4, bx + sel[s] * 4, center, iou);
                if (!keep)
                    continue;
                sel[ns++] = cand[k];
                if (out) {
                    out[total * 3] = b;
                    out[total * 3 + 1] = c;
                    out[total * 3 + 2] = cand[k];
                }
                total++;
            }
        }
    }
    return total;
}

/* boxes [B, N, 4] and scores [B, C, N] float32; max_output_boxes_per_class
 * (int64), iou_threshold and score_threshold (float32) optional, one
 * element each. selected_indices [count, 3] int64; the count needs every
 * input's value. */
static int s_infer_nms(gx_infer *ic)
{
    const char *op = "NonMaxSuppression";
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, op, 0, GX_DT_BIT(GX_F32))) < 0 ||
        (rc = gx_infer_need_dtypes(ic, op, 1, GX_DT_BIT(GX_F32))) < 0)
        return rc;
    const gx_view *bx = &ic->in[0], *sc = &ic->in[1];
    if (bx->ndim != 3 || bx->shape[2] != 4 || sc->ndim != 3 || sc->shape[0] != bx->shape[0] ||
        sc->shape[2] != bx->shape[1]) {
        char sb[GX_SHAPE_STRLEN], ss[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: boxes are %s and scores %s; expected [B,N,4] and [B,C,N]", op,
                             gx_shape_str(bx->ndim, bx->shape, sb, sizeof sb),
                             gx_shape_str(sc->ndim, sc->shape, ss, sizeof ss));
    }
    static const char *const names[5] = {NULL, NULL, "max_output_boxes_per_class",
                                         "iou_threshold", "score_threshold"};
    for (int i = 2; i < 5; i++) {
        if (!s_present(ic, i))
            continue;
        if ((rc = gx_infer_need_dtypes(ic, op, i, GX_DT_BIT(i == 2 ? GX_I64 : GX_F32))) < 0)
            return rc;
        if (gx_view_numel(&ic->in[i]) != 1 || ic->in[i].ndim > 1) {
            char s[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "%s: %s is %s; expected one element", op,
                                 names[i],
                                 gx_shape_str(ic->in[i].ndim, ic->in[i].shape, s, sizeof s));
        }
    }
    const int64_t center = ic->attr[GX_NMS_CENTER_POINT_BOX].i;
    if (center != 0 && center != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: center_point_box %lld (expected 0 or 1)", op,
                             (long long)center);
    for (int i = 0; i < 5; i++) {
        if ((i < 2 || s_present(ic, i)) && !gx_infer_value(ic, i))
            return GX_INFER_DYNAMIC;
    }
    gx_view in[5];
    for (int i = 0; i < 5; i++) {
        in[i] = i < ic->n_in ? ic->in[i] : (gx_view){.ndim = -1};
    }
    const int64_t n = bx->shape[1];
    int64_t *work = malloc((size_t)(n ? n : 1) * 3 * sizeof *work);
    if (!work)
        return gx_infer_errf(ic, GX_ENOMEM, "%s: out of memory for %lld boxes", op,
                             (long long)n);
    const int64_t count = gx_nms_run(5, in, center != 0, NULL, work);
    free(work);
    gx_view_set(&ic->out[0], GX_I64, 2, (int64_t[]){count, 3});
    return GX_OK;
}

/* Every class compares each candidate with those already selected. */
static gx_cost s_cost_nms(const gx_infer *ic)
{
    const double n = (double)ic->in[1].shape[2];
    return (gx_cost){.flops = (double)gx_view_numel(&ic->in[1]) * (n > 1 ? log2(n) : 1.0) +
                              10.0 * (double)gx_view_numel(&ic->out[0]) * n,
                     .bytes = gx_infer_io_bytes(ic)};
}

static size_t s_scratch_nms(const gx_infer *ic)
{
    return (size_t)ic->in[0].shape[1] * 3 * sizeof(int64_t);
}

const gx_op_schema gx_schema_NON_MAX_SUPPRESSION = {
    .min_in = 2, .max_in = 5, .min_out = 1, .max_out = 1,
    .attrs = s_nms_attrs, .n_attrs = GX_NMS_NATTRS,
    .value_inputs = 0x1f,
    .infer = s_infer_nms, .cost = s_cost_nms, .scratch = s_scratch_nms,
};
