/* Schemas of the ops that only move bytes (GX_OPF_SHAPE_ONLY, any dtype):
 * Reshape, Transpose, Concat and Identity. */
#include <string.h>

#include "ops/schema.h"

/* Moving bytes: read the output's worth and write it once. */
static gx_cost s_cost_move(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = 2.0 * gx_view_bytes(&ic->out[0])};
}

static const gx_attr_spec s_reshape_attrs[] = {
    [GX_RESHAPE_ALLOWZERO] = {.name = "allowzero", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_reshape_attrs / sizeof s_reshape_attrs[0] == GX_RESHAPE_NATTRS,
               "Reshape attrs");

/* Reshape: the target comes from the constant int64 1-D input `shape`; a 0
 * copies the input dim at the same index (a literal 0 with allowzero=1), one
 * -1 is inferred from the element count. */
static int s_infer_reshape(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "Reshape", 0)) < 0 || (rc = gx_infer_need(ic, "Reshape", 1)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *s = &ic->in[1];
    if (s->dtype != GX_I64) {
        const char *dn = gx_dtype_name(s->dtype);
        return gx_infer_errf(ic, GX_EDTYPE, "Reshape: shape input is %s, expected int64",
                             dn ? dn : "unknown dtype");
    }
    if (s->ndim != 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Reshape: shape input has rank %d, expected 1",
                             s->ndim);
    if (!gx_infer_value(ic, 1))
        return GX_INFER_DYNAMIC;
    if (s->shape[0] > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "Reshape: target has %lld dims (max %d)",
                             (long long)s->shape[0], GX_MAX_DIMS);
    const int64_t *t = s->data;
    int len = (int)s->shape[0];
    bool allowzero = ic->attr[GX_RESHAPE_ALLOWZERO].i != 0, has_zero = false;
    int minus_one = -1;
    int64_t shape[GX_MAX_DIMS];
    char st[GX_SHAPE_STRLEN], sx[GX_SHAPE_STRLEN];
    gx_shape_str(len, t, st, sizeof st);
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    for (int i = 0; i < len; i++) {
        if (t[i] == -1) {
            if (minus_one >= 0)
                return gx_infer_errf(ic, GX_ESHAPE, "Reshape: shape %s has more than one -1", st);
            minus_one = i;
            shape[i] = 1;
        } else if (t[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                return gx_infer_errf(ic, GX_ESHAPE,
                                     "Reshape: shape %s copies dim %d (0) but the input %s has "
                                     "rank %d",
                                     st, i, sx, x->ndim);
            shape[i] = x->shape[i];
        } else if (t[i] < 0) {
            return gx_infer_errf(ic, GX_ESHAPE, "Reshape: shape %s has invalid dim %lld", st,
                                 (long long)t[i]);
        } else {
            has_zero |= t[i] == 0;
            shape[i] = t[i];
        }
    }
    if (allowzero && has_zero && minus_one >= 0)
        return gx_infer_errf(ic, GX_ESHAPE, "Reshape: shape %s has both 0 and -1 with allowzero=1",
                             st);
    int64_t n_in = gx_view_numel(x);
    int64_t known = gx_shape_numel(len, shape, INT64_MAX);
    if (minus_one >= 0 && known > 0 && n_in % known == 0)
        shape[minus_one] = n_in / known;
    else if (minus_one >= 0 || known != n_in)
        return gx_infer_errf(ic, GX_ESHAPE, "Reshape: cannot reshape %s (%lld elements) into %s",
                             sx, (long long)n_in, st);
    gx_view_set(&ic->out[0], x->dtype, len, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_RESHAPE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_reshape_attrs, .n_attrs = GX_RESHAPE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .value_inputs = 1u << 1, .infer = s_infer_reshape,
    .cost = s_cost_move,
};

static const gx_attr_spec s_transpose_attrs[] = {
    [GX_TRANSPOSE_PERM] = {.name = "perm", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_transpose_attrs / sizeof s_transpose_attrs[0] == GX_TRANSPOSE_NATTRS,
               "Transpose attrs");

/* Transpose: out.shape[i] = in.shape[perm[i]]; perm defaults to reversing. */
static int s_infer_transpose(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Transpose", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    const gx_attrval *p = &ic->attr[GX_TRANSPOSE_PERM];
    int64_t shape[GX_MAX_DIMS];
    if (p->set) {
        char sp[GX_SHAPE_STRLEN], sx[GX_SHAPE_STRLEN];
        gx_shape_str((int)(p->n < GX_MAX_DIMS ? p->n : GX_MAX_DIMS), p->ints, sp, sizeof sp);
        if (p->n != (size_t)x->ndim)
            return gx_infer_errf(ic, GX_EATTR,
                                 "Transpose: perm %s has %zu entries but the input %s has rank %d",
                                 sp, p->n, gx_shape_str(x->ndim, x->shape, sx, sizeof sx), x->ndim);
        bool seen[GX_MAX_DIMS] = {false};
        for (int i = 0; i < x->ndim; i++) {
            int64_t v = p->ints[i];
            if (v < 0 || v >= x->ndim || seen[v])
                return gx_infer_errf(ic, GX_EATTR,
                                     "Transpose: perm %s is not a permutation of 0..%d", sp,
                                     x->ndim - 1);
            seen[v] = true;
            shape[i] = x->shape[v];
        }
    } else {
        for (int i = 0; i < x->ndim; i++)
            shape[i] = x->shape[x->ndim - 1 - i];
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_TRANSPOSE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_transpose_attrs, .n_attrs = GX_TRANSPOSE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_transpose, .cost = s_cost_move,
};

static const gx_attr_spec s_concat_attrs[] = {
    [GX_CONCAT_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .required = true},
};
_Static_assert(sizeof s_concat_attrs / sizeof s_concat_attrs[0] == GX_CONCAT_NATTRS,
               "Concat attrs");

/* Concat: inputs of one dtype and rank, equal in every dim but axis. */
static int s_infer_concat(gx_infer *ic)
{
    int rc;
    if (ic->n_in < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Concat: needs at least one input");
    for (int i = 0; i < ic->n_in; i++) {
        if ((rc = gx_infer_need(ic, "Concat", i)) < 0)
            return rc;
    }
    const gx_view *x0 = &ic->in[0];
    int axis;
    if (x0->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Concat: input 0 is a scalar; rank >= 1 needed");
    if (!gx_axis_norm(ic->attr[GX_CONCAT_AXIS].i, x0->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "Concat: axis %lld is out of range for rank %d",
                             (long long)ic->attr[GX_CONCAT_AXIS].i, x0->ndim);
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x0->shape, sizeof shape);
    for (int i = 1; i < ic->n_in; i++) {
        const gx_view *x = &ic->in[i];
        char s0[GX_SHAPE_STRLEN], si[GX_SHAPE_STRLEN];
        if (x->dtype != x0->dtype) {
            const char *d0 = gx_dtype_name(x0->dtype), *di = gx_dtype_name(x->dtype);
            return gx_infer_errf(ic, GX_EDTYPE, "Concat: input %d is %s but input 0 is %s", i,
                                 di ? di : "unknown", d0 ? d0 : "unknown");
        }
        bool ok = x->ndim == x0->ndim;
        for (int d = 0; ok && d < x0->ndim; d++)
            ok = d == axis || x->shape[d] == x0->shape[d];
        if (!ok)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "Concat: input %d is %s but input 0 is %s; all dims but axis %d "
                                 "must match",
                                 i, gx_shape_str(x->ndim, x->shape, si, sizeof si),
                                 gx_shape_str(x0->ndim, x0->shape, s0, sizeof s0), axis);
        shape[axis] += x->shape[axis];
    }
    gx_view_set(&ic->out[0], x0->dtype, x0->ndim, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_CONCAT = {
    .min_in = 1, .max_in = GX_MAX_OP_INPUTS, .min_out = 1, .max_out = 1,
    .attrs = s_concat_attrs, .n_attrs = GX_CONCAT_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_concat, .cost = s_cost_move,
};

static int s_infer_identity(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Identity", 0);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_IDENTITY = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_identity, .cost = s_cost_move,
};
