/* Schemas of the reduce family (GX_OPS_REDUCE in ops/op.h): the ten
 * Reduce* ops (axes as attribute or, from ReduceSum 13 and all of opset 18
 * on, as input 1), ArgMax / ArgMin and TopK (k as input 1, or the opset-1
 * attribute). */
#include <string.h>

#include "ops/batch.h"
#include "ops/schema.h"

#define S_FLOATS (GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64))
#define S_WIDE_INTS                                                           \
    (GX_DT_BIT(GX_I32) | GX_DT_BIT(GX_I64) | GX_DT_BIT(GX_U32) | GX_DT_BIT(GX_U64))
#define S_ALL_INTS                                                            \
    (S_WIDE_INTS | GX_DT_BIT(GX_I8) | GX_DT_BIT(GX_U8) | GX_DT_BIT(GX_I16) | GX_DT_BIT(GX_U16))

static bool s_present(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* ---- Reduce* ---- */

static const gx_attr_spec s_reduce_attrs[] = {
    [GX_REDUCE_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
    [GX_REDUCE_KEEPDIMS] = {.name = "keepdims", .type = GX_ATTR_INT, .def_i = 1},
    [GX_REDUCE_NOOP_WITH_EMPTY_AXES] = {.name = "noop_with_empty_axes", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_reduce_attrs / sizeof s_reduce_attrs[0] == GX_REDUCE_NATTRS,
               "Reduce attrs");

int gx_reduce_mask(const char *op, const gx_attrval *attr, int n_in, const gx_view *in,
                   bool mask[GX_MAX_DIMS], char *err, size_t errlen)
{
    const int rank = in[0].ndim;
    const int64_t *axes = attr[GX_REDUCE_AXES].ints;
    size_t n = attr[GX_REDUCE_AXES].n;
    if (n_in > 1 && in[1].ndim >= 0) {
        const gx_view *a = &in[1];
        if (attr[GX_REDUCE_AXES].set)
            return gx_errf(err, errlen, GX_EATTR,
                           "%s: axes given both as attribute and as input 1", op);
        if (a->dtype != GX_I64) {
            const char *dn = gx_dtype_name(a->dtype);
            return gx_errf(err, errlen, GX_EDTYPE, "%s: axes input is %s, expected int64", op,
                           dn ? dn : "an unknown dtype");
        }
        if (a->ndim != 1)
            return gx_errf(err, errlen, GX_ESHAPE, "%s: axes input has rank %d, expected 1", op,
                           a->ndim);
        axes = a->data;
        n = (size_t)a->shape[0];
    }
    bool all = n == 0 && attr[GX_REDUCE_NOOP_WITH_EMPTY_AXES].i == 0;
    for (int d = 0; d < GX_MAX_DIMS; d++)
        mask[d] = all && d < rank;
    for (size_t i = 0; i < n; i++) {
        int d;
        if (!gx_axis_norm(axes[i], rank, &d))
            return gx_errf(err, errlen, GX_EATTR, "%s: axis %lld is out of range for rank %d",
                           op, (long long)axes[i], rank);
        if (mask[d])
            return gx_errf(err, errlen, GX_EATTR, "%s: axis %lld is given twice", op,
                           (long long)axes[i]);
        mask[d] = true;
    }
    return GX_OK;
}

/* Output: the input's shape, each reduced dim 1 (keepdims) or dropped. */
static int s_infer_reduce(gx_infer *ic, gx_op op, unsigned dtypes)
{
    const char *name = gx_op_name(op);
    int rc = gx_infer_need_dtypes(ic, name, 0, dtypes);
    if (rc < 0)
        return rc;
    if (s_present(ic, 1) && !gx_infer_value(ic, 1) && !ic->attr[GX_REDUCE_AXES].set &&
        ic->in[1].dtype == GX_I64 && ic->in[1].ndim == 1)
        return GX_INFER_DYNAMIC;
    const gx_view *x = &ic->in[0];
    bool mask[GX_MAX_DIMS];
    if ((rc = gx_reduce_mask(name, ic->attr, ic->n_in, ic->in, mask, ic->err, ic->errlen)) < 0)
        return rc;
    const bool keep = ic->attr[GX_REDUCE_KEEPDIMS].i != 0;
    int nd = 0;
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d])
            shape[nd++] = x->shape[d];
        else if (keep)
            shape[nd++] = 1;
    }
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

/* One pass over the input (two for LogSumExp, counted in flops). */
static gx_cost s_cost_reduce(const gx_infer *ic, double flops_per_elem)
{
    return (gx_cost){.flops = flops_per_elem * (double)gx_view_numel(&ic->in[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* Separable when the reduced dims leave axis 0 alone; the axes (attribute
 * or input 1) must be known. */
static bool s_batch_reduce(const gx_batch_ctx *bc)
{
    bool mask[GX_MAX_DIMS];
    if (!gx_batch_samplewise(bc) || (bc->n_in > 1 && bc->in[1].ndim >= 0 && !bc->in[1].data))
        return false;
    return gx_reduce_mask("Reduce", bc->attr, bc->n_in, bc->in, mask, NULL, 0) == GX_OK &&
           !mask[0];
}

#define GX_REDUCE_SCHEMA(E, DTYPES, FLOPS)                                    \
    static int s_infer_##E(gx_infer *ic) { return s_infer_reduce(ic, GX_OP_##E, DTYPES); } \
    static gx_cost s_cost_##E(const gx_infer *ic) { return s_cost_reduce(ic, FLOPS); } \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,                 \
        .attrs = s_reduce_attrs, .n_attrs = GX_REDUCE_NATTRS,                 \
        .value_inputs = 1u << 1, .infer = s_infer_##E, .cost = s_cost_##E,    \
        .batch = s_batch_reduce,                                              \
    };

GX_REDUCE_SCHEMA(REDUCE_SUM, S_FLOATS | S_WIDE_INTS, 1)
GX_REDUCE_SCHEMA(REDUCE_MEAN, S_FLOATS | S_WIDE_INTS, 1)
GX_REDUCE_SCHEMA(REDUCE_MAX, S_FLOATS | S_WIDE_INTS, 1)
GX_REDUCE_SCHEMA(REDUCE_MIN, S_FLOATS | S_WIDE_INTS, 1)
GX_REDUCE_SCHEMA(REDUCE_PROD, S_FLOATS | S_WIDE_INTS, 1)
GX_REDUCE_SCHEMA(REDUCE_L1, S_FLOATS | S_WIDE_INTS, 2)
GX_REDUCE_SCHEMA(REDUCE_SUM_SQUARE, S_FLOATS | S_WIDE_INTS, 2)
GX_REDUCE_SCHEMA(REDUCE_L2, S_FLOATS, 2)
GX_REDUCE_SCHEMA(REDUCE_LOG_SUM, S_FLOATS, 1)
GX_REDUCE_SCHEMA(REDUCE_LOG_SUM_EXP, S_FLOATS, 13)

/* ---- ArgMax / ArgMin ---- */

static const gx_attr_spec s_arg_attrs[] = {
    [GX_ARG_AXIS] = {.name = "axis", .type = GX_ATTR_INT},
    [GX_ARG_KEEPDIMS] = {.name = "keepdims", .type = GX_ATTR_INT, .def_i = 1},
    [GX_ARG_SELECT_LAST_INDEX] = {.name = "select_last_index", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_arg_attrs / sizeof s_arg_attrs[0] == GX_ARG_NATTRS, "ArgMax attrs");

/* int64 indices along axis; the axis becomes 1 (keepdims) or goes. An
 * empty axis has no answer. */
static int s_infer_arg(gx_infer *ic, gx_op op)
{
    const char *name = gx_op_name(op);
    int rc = gx_infer_need_dtypes(ic, name, 0, S_FLOATS | S_ALL_INTS);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (!gx_axis_norm(ic->attr[GX_ARG_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", name,
                             (long long)ic->attr[GX_ARG_AXIS].i, x->ndim);
    if (x->shape[axis] == 0) {
        char sx[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: axis %d of %s is empty", name, axis,
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    int64_t shape[GX_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis)
            shape[nd++] = x->shape[d];
        else if (ic->attr[GX_ARG_KEEPDIMS].i != 0)
            shape[nd++] = 1;
    }
    gx_view_set(&ic->out[0], GX_I64, nd, shape);
    return GX_OK;
}

static gx_cost s_cost_arg(const gx_infer *ic)
{
    return s_cost_reduce(ic, 1);
}

static int s_infer_argmax(gx_infer *ic)
{
    return s_infer_arg(ic, GX_OP_ARGMAX);
}

static int s_infer_argmin(gx_infer *ic)
{
    return s_infer_arg(ic, GX_OP_ARGMIN);
}

static bool s_batch_arg(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_ARG_AXIS);
}

const gx_op_schema gx_schema_ARGMAX = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_arg_attrs, .n_attrs = GX_ARG_NATTRS,
    .infer = s_infer_argmax, .cost = s_cost_arg, .batch = s_batch_arg,
};

const gx_op_schema gx_schema_ARGMIN = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_arg_attrs, .n_attrs = GX_ARG_NATTRS,
    .infer = s_infer_argmin, .cost = s_cost_arg, .batch = s_batch_arg,
};

/* ---- TopK ---- */

static const gx_attr_spec s_topk_attrs[] = {
    [GX_TOPK_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
    [GX_TOPK_LARGEST] = {.name = "largest", .type = GX_ATTR_INT, .def_i = 1},
    [GX_TOPK_SORTED] = {.name = "sorted", .type = GX_ATTR_INT, .def_i = 1},
    [GX_TOPK_K] = {.name = "k", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_topk_attrs / sizeof s_topk_attrs[0] == GX_TOPK_NATTRS, "TopK attrs");

/* Values (X's dtype) and int64 indices, both X's shape with axis cut to k;
 * 0 <= k <= the axis' size. */
static int s_infer_topk(gx_infer *ic)
{
    int rc = gx_infer_need_dtypes(ic, "TopK", 0, S_FLOATS | S_ALL_INTS);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t k;
    if (s_present(ic, 1)) {
        const gx_view *kv = &ic->in[1];
        char sk[GX_SHAPE_STRLEN];
        if (ic->attr[GX_TOPK_K].set)
            return gx_infer_errf(ic, GX_EATTR, "TopK: k given both as attribute and as input 1");
        if (kv->dtype != GX_I64) {
            const char *dn = gx_dtype_name(kv->dtype);
            return gx_infer_errf(ic, GX_EDTYPE, "TopK: k is %s, expected int64",
                                 dn ? dn : "an unknown dtype");
        }
        if (kv->ndim > 1 || gx_view_numel(kv) != 1)
            return gx_infer_errf(ic, GX_ESHAPE, "TopK: k has shape %s, expected [1]",
                                 gx_shape_str(kv->ndim, kv->shape, sk, sizeof sk));
        const int64_t *kp = gx_infer_value(ic, 1);
        if (!kp)
            return GX_INFER_DYNAMIC;
        k = kp[0];
    } else if (ic->attr[GX_TOPK_K].set) {
        k = ic->attr[GX_TOPK_K].i;
    } else {
        return gx_infer_errf(ic, GX_EATTR, "TopK: k is required (input 1 or attribute)");
    }
    int axis;
    if (!gx_axis_norm(ic->attr[GX_TOPK_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "TopK: axis %lld is out of range for rank %d",
                             (long long)ic->attr[GX_TOPK_AXIS].i, x->ndim);
    if (k < 0 || k > x->shape[axis]) {
        char sx[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "TopK: k = %lld is out of range for axis %d of %s",
                             (long long)k, axis, gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = k;
    gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    gx_view_set(&ic->out[1], GX_I64, x->ndim, shape);
    return GX_OK;
}

/* A heap of k per slice: about n log2(k) comparisons per slice. */
static gx_cost s_cost_topk(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0], *y = &ic->out[0];
    int axis = 0;
    gx_axis_norm(ic->attr[GX_TOPK_AXIS].i, x->ndim, &axis);
    double k = y->ndim > 0 ? (double)y->shape[axis] : 1.0, lg = 1;
    while (k > 1) {
        k /= 2;
        lg++;
    }
    return (gx_cost){.flops = lg * (double)gx_view_numel(x), .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_TOPK = {
    .min_in = 1, .max_in = 2, .min_out = 2, .max_out = 2,
    .attrs = s_topk_attrs, .n_attrs = GX_TOPK_NATTRS,
    .value_inputs = 1u << 1, .infer = s_infer_topk, .cost = s_cost_topk,
};
