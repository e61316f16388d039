/* Schemas of the ops that move bytes (any dtype): Reshape, Flatten,
 * Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, the gathers and
 * scatters, Expand, Tile, Shape, Size, Constant, ConstantOfShape, Identity,
 * ReverseSequence and TensorScatter (opset 24).
 *
 * Index inputs (Gather's indices...) are not value inputs: the plan must
 * not be keyed on them. When their value happens to be known (a constant,
 * or any input at run time) infer refuses out-of-range indices; otherwise
 * the kernels stay in bounds on their own (see ops/cpu/gather.c). */
#include <string.h>

#include "ops/batch.h"
#include "ops/schema_shape.h"

/* ---- helpers ---- */

static const char *s_dtname(gx_dtype dt)
{
    const char *n = gx_dtype_name(dt);
    return n ? n : "unknown dtype";
}

static bool s_has(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* Moving bytes: read the output's worth and write it once. */
static gx_cost s_cost_move(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = 2.0 * gx_view_bytes(&ic->out[0])};
}

/* Gathers and scatters also read their indices. */
static gx_cost s_cost_io(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = gx_infer_io_bytes(ic)};
}

/* Input i (required) is a 1-D vector of int64, or also of int32 when
 * allow_i32; what names it in messages. */
static int s_need_vec(gx_infer *ic, const char *op, int i, const char *what, bool allow_i32)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    const gx_view *v = &ic->in[i];
    if (v->dtype != GX_I64 && !(allow_i32 && v->dtype == GX_I32))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s input is %s, expected int64%s", op, what,
                             s_dtname(v->dtype), allow_i32 ? " or int32" : "");
    if (v->ndim != 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s input has rank %d, expected 1", op, what,
                             v->ndim);
    return GX_OK;
}

/* Input i is an index tensor: int64, or int32 too when allow_i32. */
static int s_need_index(gx_infer *ic, const char *op, int i, bool allow_i32)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    gx_dtype dt = ic->in[i].dtype;
    if (dt != GX_I64 && !(allow_i32 && dt == GX_I32))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: indices are %s, expected int64%s", op,
                             s_dtname(dt), allow_i32 ? " or int32" : "");
    return GX_OK;
}

/* Normalises n axes for rank into out (rank entries at most), refusing
 * out-of-range and repeated ones. */
static int s_axes(gx_infer *ic, const char *op, size_t n, const int64_t *axes, int rank, int *out)
{
    bool seen[GX_MAX_DIMS] = {false};
    for (size_t i = 0; i < n; i++) {
        int a;
        if (!gx_axis_norm(axes[i], rank, &a))
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                                 (long long)axes[i], rank);
        if (seen[a])
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is repeated", op,
                                 (long long)axes[i]);
        seen[a] = true;
        out[i] = a;
    }
    return GX_OK;
}

/* Axes from the attribute (opsets before 13) or from input 1 (opset 13):
 * *n == -1 when neither is given. GX_INFER_DYNAMIC when the input's value
 * is not known yet. */
static int s_axes_arg(gx_infer *ic, const char *op, const gx_attrval *attr, int64_t *n,
                      const int64_t **axes)
{
    if (s_has(ic, 1)) {
        int rc;
        if (attr->set)
            return gx_infer_errf(ic, GX_EATTR, "%s: axes given both as attribute and as input",
                                 op);
        /* one axis as a scalar, as ONNX Runtime takes it (exporters' Loop bodies) */
        const bool scalar = ic->in[1].ndim == 0 && ic->in[1].dtype == GX_I64;
        if (!scalar && (rc = s_need_vec(ic, op, 1, "axes", false)) < 0)
            return rc;
        if (!(*axes = gx_infer_value(ic, 1)))
            return GX_INFER_DYNAMIC;
        *n = scalar ? 1 : ic->in[1].shape[0];
    } else {
        *n = attr->set ? (int64_t)attr->n : -1;
        *axes = attr->ints;
    }
    return GX_OK;
}

/* Checks each of the n known indices idx[i] (stride apart in the index
 * tensor v from first) lies in [-dim, dim). */
static int s_check_indices(gx_infer *ic, const char *op, const gx_view *v, int64_t first,
                           int64_t n, int64_t stride, int64_t dim)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t j = gx_index_at(v, first + i * stride);
        if (j < -dim || j >= dim)
            return gx_infer_errf(ic, GX_EINVAL, "%s: index %lld is out of range for a dim of %lld",
                                 op, (long long)j, (long long)dim);
    }
    return GX_OK;
}

/* The axes of a Squeeze or Unsqueeze for a batch rule, from input 1 (its
 * value must be known) or the attribute: *n == -1 when neither is given.
 * False when they cannot be read. */
static bool s_batch_axes(const gx_batch_ctx *bc, const gx_attrval *attr, int64_t *n,
                         const int64_t **axes)
{
    if (bc->n_in > 1 && bc->in[1].ndim >= 0) {
        const gx_view *a = &bc->in[1];
        if (attr->set || !a->data || a->dtype != GX_I64 || a->ndim != 1)
            return false;
        *n = a->shape[0];
        *axes = a->data;
        return true;
    }
    *n = attr->set ? (int64_t)attr->n : -1;
    *axes = attr->ints;
    return true;
}

/* None of the n axes is axis 0 of a tensor of rank. */
static bool s_batch_axes_not0(int64_t n, const int64_t *axes, int rank)
{
    for (int64_t i = 0; i < n; i++) {
        int a;
        if (!gx_axis_norm(axes[i], rank, &a) || a == 0)
            return false;
    }
    return true;
}

/* ---- Reshape ---- */

static const gx_attr_spec s_reshape_attrs[] = {
    [GX_RESHAPE_ALLOWZERO] = {.name = "allowzero", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_reshape_attrs / sizeof s_reshape_attrs[0] == GX_RESHAPE_NATTRS,
               "Reshape attrs");

/* Reshape: the target comes from the int64 1-D input `shape`; a 0 copies
 * the input dim at the same index (a literal 0 with allowzero=1), one -1 is
 * inferred from the element count. */
static int s_infer_reshape(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "Reshape", 0)) < 0 ||
        (rc = s_need_vec(ic, "Reshape", 1, "shape", false)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *s = &ic->in[1];
    if (s->shape[0] > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "Reshape: target has %lld dims (max %d)",
                             (long long)s->shape[0], GX_MAX_DIMS);
    const int64_t *t = gx_infer_value(ic, 1);
    if (!t)
        return GX_INFER_DYNAMIC;
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

/* Each sample keeps its own rows when the target's dim 0 follows the
 * batch for every slice of it: 0 (copy the input's, without allowzero) or
 * -1 with every other dim fixed, and axis 0 comes out the input's. A
 * literal size (the batch size of this job) would not shrink with a slice. */
static bool s_batch_reshape(const gx_batch_ctx *bc)
{
    const gx_view *s = &bc->in[1];
    if (!gx_batch_samplewise(bc) || !s->data || s->dtype != GX_I64 || s->ndim != 1 ||
        s->shape[0] < 1)
        return false;
    const int64_t t0 = ((const int64_t *)s->data)[0];
    return (t0 == 0 && bc->attr[GX_RESHAPE_ALLOWZERO].i == 0) || t0 == -1;
}

const gx_op_schema gx_schema_RESHAPE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_reshape_attrs, .n_attrs = GX_RESHAPE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_reshape,
    .cost = s_cost_move, .batch = s_batch_reshape,
};

/* ---- Flatten ---- */

static const gx_attr_spec s_flatten_attrs[] = {
    [GX_FLATTEN_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_flatten_attrs / sizeof s_flatten_attrs[0] == GX_FLATTEN_NATTRS,
               "Flatten attrs");

/* Flatten: [prod(dims before axis), prod(dims from axis)]; axis in
 * [-rank, rank]. */
static int s_infer_flatten(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Flatten", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t axis = ic->attr[GX_FLATTEN_AXIS].i;
    if (axis < -(int64_t)x->ndim || axis > x->ndim)
        return gx_infer_errf(ic, GX_EATTR, "Flatten: axis %lld is out of range for rank %d",
                             (long long)axis, x->ndim);
    int a = (int)(axis < 0 ? axis + x->ndim : axis);
    int64_t shape[2] = {gx_shape_numel(a, x->shape, INT64_MAX),
                        gx_shape_numel(x->ndim - a, x->shape + a, INT64_MAX)};
    gx_view_set(&ic->out[0], x->dtype, 2, shape);
    return GX_OK;
}

/* [N, rest...] -> [N, prod(rest)] when axis is 1, or later dims of 1. */
static bool s_batch_flatten(const gx_batch_ctx *bc)
{
    const int rank = bc->in[0].ndim;
    const int64_t axis = bc->attr[GX_FLATTEN_AXIS].i;
    return gx_batch_samplewise(bc) && (axis < 0 ? axis + rank : axis) >= 1;
}

const gx_op_schema gx_schema_FLATTEN = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_flatten_attrs, .n_attrs = GX_FLATTEN_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_flatten, .cost = s_cost_move,
    .batch = s_batch_flatten,
};

/* ---- Squeeze, Unsqueeze ---- */

static const gx_attr_spec s_squeeze_attrs[] = {
    [GX_SQUEEZE_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_squeeze_attrs / sizeof s_squeeze_attrs[0] == GX_SQUEEZE_NATTRS,
               "Squeeze attrs");

/* Squeeze: drops the listed dims, which must be 1; without axes every dim
 * of size 1. */
static int s_infer_squeeze(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Squeeze", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t n;
    const int64_t *axes;
    if ((rc = s_axes_arg(ic, "Squeeze", &ic->attr[GX_SQUEEZE_AXES], &n, &axes)) != GX_OK)
        return rc;
    bool drop[GX_MAX_DIMS] = {false};
    if (n < 0) {
        for (int d = 0; d < x->ndim; d++)
            drop[d] = x->shape[d] == 1;
    } else {
        int ax[GX_MAX_DIMS];
        if ((rc = s_axes(ic, "Squeeze", (size_t)n, axes, x->ndim, ax)) < 0)
            return rc;
        for (int64_t i = 0; i < n; i++) {
            if (x->shape[ax[i]] != 1)
                return gx_infer_errf(ic, GX_ESHAPE, "Squeeze: dim %d has size %lld, not 1",
                                     ax[i], (long long)x->shape[ax[i]]);
            drop[ax[i]] = true;
        }
    }
    int64_t shape[GX_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!drop[d])
            shape[nd++] = x->shape[d];
    }
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

/* Squeeze needs its axes, none of them 0: without axes a slice of one
 * sample would lose its axis 0 too. */
static bool s_batch_squeeze(const gx_batch_ctx *bc)
{
    int64_t n;
    const int64_t *axes;
    return gx_batch_samplewise(bc) && s_batch_axes(bc, &bc->attr[GX_SQUEEZE_AXES], &n, &axes) &&
           n >= 0 && s_batch_axes_not0(n, axes, bc->in[0].ndim);
}

const gx_op_schema gx_schema_SQUEEZE = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_squeeze_attrs, .n_attrs = GX_SQUEEZE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_squeeze,
    .cost = s_cost_move, .batch = s_batch_squeeze,
};

static const gx_attr_spec s_unsqueeze_attrs[] = {
    [GX_UNSQUEEZE_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_unsqueeze_attrs / sizeof s_unsqueeze_attrs[0] == GX_UNSQUEEZE_NATTRS,
               "Unsqueeze attrs");

/* Unsqueeze: inserts dims of size 1 at the listed positions of the output
 * (axes count in the output's rank, in any order). */
static int s_infer_unsqueeze(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Unsqueeze", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t n;
    const int64_t *axes;
    if ((rc = s_axes_arg(ic, "Unsqueeze", &ic->attr[GX_UNSQUEEZE_AXES], &n, &axes)) != GX_OK)
        return rc;
    if (n < 0)
        return gx_infer_errf(ic, GX_EATTR, "Unsqueeze: axes are required (input 1, or the "
                                           "attribute before opset 13)");
    if (x->ndim + n > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "Unsqueeze: output would have rank %lld (max %d)",
                             (long long)(x->ndim + n), GX_MAX_DIMS);
    const int nd = x->ndim + (int)n;
    int ax[GX_MAX_DIMS];
    if ((rc = s_axes(ic, "Unsqueeze", (size_t)n, axes, nd, ax)) < 0)
        return rc;
    bool one[GX_MAX_DIMS] = {false};
    for (int64_t i = 0; i < n; i++)
        one[ax[i]] = true;
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0, j = 0; d < nd; d++)
        shape[d] = one[d] ? 1 : x->shape[j++];
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

/* No new dim in front of the batch's (axes count in the output's rank). */
static bool s_batch_unsqueeze(const gx_batch_ctx *bc)
{
    int64_t n;
    const int64_t *axes;
    return gx_batch_samplewise(bc) &&
           s_batch_axes(bc, &bc->attr[GX_UNSQUEEZE_AXES], &n, &axes) && n >= 0 &&
           s_batch_axes_not0(n, axes, bc->out[0].ndim);
}

const gx_op_schema gx_schema_UNSQUEEZE = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_unsqueeze_attrs, .n_attrs = GX_UNSQUEEZE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_unsqueeze,
    .cost = s_cost_move, .batch = s_batch_unsqueeze,
};

/* ---- Transpose ---- */

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

/* Axis 0 stays in front: perm[0] == 0 (the default reversal only keeps
 * it for rank 1). */
static bool s_batch_transpose(const gx_batch_ctx *bc)
{
    const gx_attrval *p = &bc->attr[GX_TRANSPOSE_PERM];
    if (!gx_batch_samplewise(bc))
        return false;
    return p->set ? p->n == (size_t)bc->in[0].ndim && p->ints[0] == 0 : bc->in[0].ndim == 1;
}

const gx_op_schema gx_schema_TRANSPOSE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_transpose_attrs, .n_attrs = GX_TRANSPOSE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_transpose, .cost = s_cost_move,
    .batch = s_batch_transpose,
};

/* ---- Concat, Split ---- */

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
        if (x->dtype != x0->dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "Concat: input %d is %s but input 0 is %s", i,
                                 s_dtname(x->dtype), s_dtname(x0->dtype));
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

static bool s_batch_concat(const gx_batch_ctx *bc)
{
    return gx_batch_concat(bc, GX_CONCAT_AXIS);
}

const gx_op_schema gx_schema_CONCAT = {
    .min_in = 1, .max_in = GX_MAX_OP_INPUTS, .min_out = 1, .max_out = 1,
    .attrs = s_concat_attrs, .n_attrs = GX_CONCAT_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_concat, .cost = s_cost_move,
    .batch = s_batch_concat,
};

static const gx_attr_spec s_split_attrs[] = {
    [GX_SPLIT_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
    [GX_SPLIT_SPLIT] = {.name = "split", .type = GX_ATTR_INTS},
    [GX_SPLIT_NUM_OUTPUTS] = {.name = "num_outputs", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_split_attrs / sizeof s_split_attrs[0] == GX_SPLIT_NATTRS, "Split attrs");

/* Split: the sizes along axis come from `split` (input 1 from opset 13, the
 * attribute before), one per output, summing to the dim; without it the
 * dim is cut into num_outputs (opset 18) or as many chunks as outputs, of
 * ceil(dim / n) each, the last one smaller when it does not divide. */
static int s_infer_split(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Split", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    const gx_attrval *sa = &ic->attr[GX_SPLIT_SPLIT], *na = &ic->attr[GX_SPLIT_NUM_OUTPUTS];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Split: input is a scalar; rank >= 1 needed");
    if (!gx_axis_norm(ic->attr[GX_SPLIT_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "Split: axis %lld is out of range for rank %d",
                             (long long)ic->attr[GX_SPLIT_AXIS].i, x->ndim);
    const int64_t dim = x->shape[axis];
    const int64_t *split = NULL;
    int64_t n = ic->n_out;
    if (s_has(ic, 1)) {
        if (sa->set)
            return gx_infer_errf(ic, GX_EATTR, "Split: split given both as attribute and as input");
        if ((rc = s_need_vec(ic, "Split", 1, "split", false)) < 0)
            return rc;
        if (!(split = gx_infer_value(ic, 1)))
            return GX_INFER_DYNAMIC;
        n = ic->in[1].shape[0];
    } else if (sa->set) {
        split = sa->ints;
        n = (int64_t)sa->n;
    }
    if (split && na->set)
        return gx_infer_errf(ic, GX_EATTR, "Split: split and num_outputs are exclusive");
    if (na->set)
        n = na->i;
    if (n != ic->n_out)
        return gx_infer_errf(ic, GX_EATTR, "Split: %s %lld parts but the node has %d outputs",
                             split ? "split has" : "num_outputs asks for", (long long)n,
                             ic->n_out);
    const int64_t chunk = (dim + n - 1) / n;
    if (!split && chunk * (n - 1) > dim)
        return gx_infer_errf(ic, GX_ESHAPE, "Split: a dim of %lld does not cut into %lld chunks",
                             (long long)dim, (long long)n);
    int64_t sum = 0;
    for (int i = 0; i < ic->n_out; i++) {
        const int64_t len = split ? split[i] : i < n - 1 ? chunk : dim - chunk * (n - 1);
        if (len < 0)
            return gx_infer_errf(ic, GX_EATTR, "Split: split[%d] is %lld", i, (long long)len);
        if (len > dim - sum)
            return gx_infer_errf(ic, GX_EATTR, "Split: split sums past the dim of %lld",
                                 (long long)dim);
        sum += len;
        int64_t shape[GX_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        shape[axis] = len;
        gx_view_set(&ic->out[i], x->dtype, x->ndim, shape);
    }
    if (sum != dim)
        return gx_infer_errf(ic, GX_EATTR, "Split: split sums to %lld, not the dim of %lld",
                             (long long)sum, (long long)dim);
    return GX_OK;
}

static gx_cost s_cost_split(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = 2.0 * gx_view_bytes(&ic->in[0])};
}

static bool s_batch_split(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_SPLIT_AXIS);
}

const gx_op_schema gx_schema_SPLIT = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = GX_MAX_OP_INPUTS,
    .attrs = s_split_attrs, .n_attrs = GX_SPLIT_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_split,
    .cost = s_cost_split, .batch = s_batch_split,
};

/* ---- Slice ---- */

static const gx_attr_spec s_slice_attrs[] = {
    [GX_SLICE_STARTS] = {.name = "starts", .type = GX_ATTR_INTS},
    [GX_SLICE_ENDS] = {.name = "ends", .type = GX_ATTR_INTS},
    [GX_SLICE_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_slice_attrs / sizeof s_slice_attrs[0] == GX_SLICE_NATTRS, "Slice attrs");

static int64_t s_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Reads Slice's arguments into starts, ends, axes and steps (n each, n <=
 * rank): the opset-1 attributes or inputs 1..4. */
static int s_slice_args(gx_infer *ic, int64_t *n, int64_t *starts, int64_t *ends, int64_t *axes,
                        int64_t *steps)
{
    const gx_attrval *a = ic->attr;
    const int rank = ic->in[0].ndim;
    int rc;
    if (a[GX_SLICE_STARTS].set || a[GX_SLICE_ENDS].set || a[GX_SLICE_AXES].set) {
        if (ic->n_in > 1)
            return gx_infer_errf(ic, GX_EATTR,
                                 "Slice: starts/ends given both as attributes and as inputs");
        *n = (int64_t)a[GX_SLICE_STARTS].n;
        if (!a[GX_SLICE_STARTS].set || !a[GX_SLICE_ENDS].set || a[GX_SLICE_ENDS].n != (size_t)*n ||
            (a[GX_SLICE_AXES].set && a[GX_SLICE_AXES].n != (size_t)*n))
            return gx_infer_errf(ic, GX_EATTR,
                                 "Slice: attributes starts, ends (and axes) must have one length");
        if (*n > rank)
            return gx_infer_errf(ic, GX_EATTR, "Slice: %lld starts for rank %d", (long long)*n,
                                 rank);
        for (int64_t j = 0; j < *n; j++) {
            starts[j] = a[GX_SLICE_STARTS].ints[j];
            ends[j] = a[GX_SLICE_ENDS].ints[j];
            axes[j] = a[GX_SLICE_AXES].set ? a[GX_SLICE_AXES].ints[j] : j;
            steps[j] = 1;
        }
        return GX_OK;
    }
    static const char *const what[] = {NULL, "starts", "ends", "axes", "steps"};
    if (!s_has(ic, 1) || !s_has(ic, 2))
        return gx_infer_errf(ic, GX_ESHAPE, "Slice: inputs starts and ends are required");
    for (int i = 1; i <= 4; i++) {
        if (!s_has(ic, i))
            continue;
        if ((rc = s_need_vec(ic, "Slice", i, what[i], true)) < 0)
            return rc;
        if (ic->in[i].shape[0] != ic->in[1].shape[0])
            return gx_infer_errf(ic, GX_ESHAPE, "Slice: %s has %lld entries but starts has %lld",
                                 what[i], (long long)ic->in[i].shape[0],
                                 (long long)ic->in[1].shape[0]);
    }
    *n = ic->in[1].shape[0];
    if (*n > rank)
        return gx_infer_errf(ic, GX_ESHAPE, "Slice: %lld starts for rank %d", (long long)*n, rank);
    for (int i = 1; i <= 4; i++) {
        if (s_has(ic, i) && !gx_infer_value(ic, i))
            return GX_INFER_DYNAMIC;
    }
    for (int64_t j = 0; j < *n; j++) {
        starts[j] = gx_index_at(&ic->in[1], j);
        ends[j] = gx_index_at(&ic->in[2], j);
        axes[j] = s_has(ic, 3) ? gx_index_at(&ic->in[3], j) : j;
        steps[j] = s_has(ic, 4) ? gx_index_at(&ic->in[4], j) : 1;
    }
    return GX_OK;
}

int gx_slice_resolve(gx_infer *ic, gx_slice_plan *p)
{
    const gx_view *x = &ic->in[0];
    int64_t n = 0, starts[GX_MAX_DIMS], ends[GX_MAX_DIMS], axes[GX_MAX_DIMS], steps[GX_MAX_DIMS];
    int ax[GX_MAX_DIMS], rc;
    if ((rc = s_slice_args(ic, &n, starts, ends, axes, steps)) != GX_OK)
        return rc;
    if ((rc = s_axes(ic, "Slice", (size_t)n, axes, x->ndim, ax)) < 0)
        return rc;
    for (int d = 0; d < x->ndim; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->count[d] = x->shape[d];
    }
    for (int64_t j = 0; j < n; j++) {
        const int d = ax[j];
        const int64_t dim = x->shape[d], step = steps[j];
        int64_t s = starts[j], e = ends[j], count;
        if (step == 0)
            return gx_infer_errf(ic, GX_EINVAL, "Slice: step of axis %d is 0", d);
        s = s < 0 ? s + dim : s;
        e = e < 0 ? e + dim : e;
        if (step > 0) {
            s = s_clamp(s, 0, dim);
            e = s_clamp(e, 0, dim);
            count = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            /* -INT64_MIN overflows; any step that long takes one element */
            const int64_t mag = step == INT64_MIN ? INT64_MAX : -step;
            s = s_clamp(s, -1, dim - 1);
            e = s_clamp(e, -1, dim - 1);
            count = s > e ? (s - e - 1) / mag + 1 : 0;
        }
        p->start[d] = count > 0 ? s : 0;
        p->step[d] = step;
        p->count[d] = count;
    }
    return GX_OK;
}

/* Slice: per axis, elements start, start + step, ... before end, with
 * starts and ends clamped into the dim (see gx_slice_resolve). */
static int s_infer_slice(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Slice", 0);
    if (rc < 0)
        return rc;
    gx_slice_plan p;
    if ((rc = gx_slice_resolve(ic, &p)) != GX_OK)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[0].ndim, p.count);
    return GX_OK;
}

/* Axis 0 must come out whole for every slice of the batch: start 0, step
 * 1 and all of it (then the end is past the batch, and past any slice). */
static bool s_batch_slice(const gx_batch_ctx *bc)
{
    char err[160];
    gx_infer ic = {.attr = bc->attr, .n_in = bc->n_in, .in = bc->in, .err = err,
                   .errlen = sizeof err};
    gx_slice_plan p;
    return gx_batch_samplewise(bc) && gx_slice_resolve(&ic, &p) == GX_OK && p.start[0] == 0 &&
           p.step[0] == 1 && p.count[0] == bc->in[0].shape[0];
}

const gx_op_schema gx_schema_SLICE = {
    .min_in = 1, .max_in = 5, .min_out = 1, .max_out = 1,
    .attrs = s_slice_attrs, .n_attrs = GX_SLICE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 0x1eu, .infer = s_infer_slice,
    .cost = s_cost_move, .batch = s_batch_slice,
};

/* ---- Gather, GatherElements, GatherND ---- */

static const gx_attr_spec s_gather_attrs[] = {
    [GX_GATHER_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_gather_attrs / sizeof s_gather_attrs[0] == GX_GATHER_NATTRS,
               "Gather attrs");

/* Gather: data[..., indices[j...], ...] along axis; the output's shape is
 * data's with the axis dim replaced by the indices' shape. */
static int s_infer_gather(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "Gather", 0)) < 0 || (rc = s_need_index(ic, "Gather", 1, true)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Gather: data is a scalar; rank >= 1 needed");
    if (!gx_axis_norm(ic->attr[GX_GATHER_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "Gather: axis %lld is out of range for rank %d",
                             (long long)ic->attr[GX_GATHER_AXIS].i, x->ndim);
    const int nd = x->ndim - 1 + ind->ndim;
    if (nd > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "Gather: output would have rank %d (max %d)", nd,
                             GX_MAX_DIMS);
    if (ind->data &&
        (rc = s_check_indices(ic, "Gather", ind, 0, ind->numel, 1, x->shape[axis])) < 0)
        return rc;
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)axis * sizeof shape[0]);
    memcpy(shape + axis, ind->shape, (size_t)ind->ndim * sizeof shape[0]);
    memcpy(shape + axis + ind->ndim, x->shape + axis + 1,
           (size_t)(x->ndim - axis - 1) * sizeof shape[0]);
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

/* Batched data with unbatched indices along an axis other than 0: each
 * sample picks the same entries of its own. Unbatched data (a table) with
 * batched indices along axis 0: each sample looks up its own rows (an
 * embedding), and the output's axis 0 is the indices'. */
static bool s_batch_gather(const gx_batch_ctx *bc)
{
    const gx_view *x = &bc->in[0], *ind = &bc->in[1], *y = &bc->out[0];
    int axis;
    if (bc->n_in != 2 || x->ndim < 1 || y->ndim < 1 ||
        !gx_axis_norm(bc->attr[GX_GATHER_AXIS].i, x->ndim, &axis))
        return false;
    if (gx_batch_in(bc, 0))
        return axis != 0 && gx_batch_samplewise(bc);
    if (axis != 0 || ind->ndim < 1 || y->shape[0] != ind->shape[0])
        return false;
    bc->out_batched[0] = true;
    return true;
}

const gx_op_schema gx_schema_GATHER = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_gather_attrs, .n_attrs = GX_GATHER_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_gather, .cost = s_cost_io,
    .batch = s_batch_gather,
};

/* Checks the (data, indices) pair of GatherElements / ScatterElements:
 * same rank, indices no larger than data off the axis, known indices in
 * range. Sets *axis. */
static int s_check_elements(gx_infer *ic, const char *op, int64_t axis_attr, int *axis)
{
    int rc;
    if ((rc = gx_infer_need(ic, op, 0)) < 0 || (rc = s_need_index(ic, op, 1, true)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1];
    char sx[GX_SHAPE_STRLEN], si[GX_SHAPE_STRLEN];
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: data is a scalar; rank >= 1 needed", op);
    if (!gx_axis_norm(axis_attr, x->ndim, axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)axis_attr, x->ndim);
    bool ok = ind->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = d == *axis || ind->shape[d] <= x->shape[d];
    if (!ok)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: indices %s do not fit data %s (same rank, no larger off "
                             "axis %d)",
                             op, gx_shape_str(ind->ndim, ind->shape, si, sizeof si),
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx), *axis);
    if (ind->data && (rc = s_check_indices(ic, op, ind, 0, ind->numel, 1, x->shape[*axis])) < 0)
        return rc;
    return GX_OK;
}

static const gx_attr_spec s_gather_elements_attrs[] = {
    [GX_GATHER_ELEMENTS_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_gather_elements_attrs / sizeof s_gather_elements_attrs[0] ==
                   GX_GATHER_ELEMENTS_NATTRS,
               "GatherElements attrs");

/* GatherElements: out[i] = data[i with the axis coordinate replaced by
 * indices[i]]; the output has the indices' shape. */
static int s_infer_gather_elements(gx_infer *ic)
{
    int axis, rc;
    if ((rc = s_check_elements(ic, "GatherElements", ic->attr[GX_GATHER_ELEMENTS_AXIS].i,
                               &axis)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[1].ndim, ic->in[1].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_GATHER_ELEMENTS = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_gather_elements_attrs, .n_attrs = GX_GATHER_ELEMENTS_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_gather_elements, .cost = s_cost_io,
};

/* Checks the (data, indices) pair of GatherND / ScatterND with b batch
 * dims: k = indices.shape[-1] in [1, rank - b], known index tuples in
 * range. Sets *k. */
static int s_check_nd(gx_infer *ic, const char *op, int64_t b, int *k)
{
    int rc;
    if ((rc = gx_infer_need(ic, op, 0)) < 0 || (rc = s_need_index(ic, op, 1, true)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1];
    char sx[GX_SHAPE_STRLEN], si[GX_SHAPE_STRLEN];
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    gx_shape_str(ind->ndim, ind->shape, si, sizeof si);
    if (x->ndim < 1 || ind->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: data %s and indices %s need rank >= 1", op, sx,
                             si);
    if (b < 0 || b >= x->ndim || b >= ind->ndim)
        return gx_infer_errf(ic, GX_EATTR, "%s: batch_dims %lld must be below both ranks (%d, %d)",
                             op, (long long)b, x->ndim, ind->ndim);
    for (int d = 0; d < b; d++) {
        if (x->shape[d] != ind->shape[d])
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: the %lld batch dims of data %s and indices %s differ", op,
                                 (long long)b, sx, si);
    }
    const int64_t kk = ind->shape[ind->ndim - 1];
    if (kk < 1 || kk > x->ndim - b)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: indices %s index %lld dims of data %s (1 to %lld allowed)", op,
                             si, (long long)kk, sx, (long long)(x->ndim - b));
    *k = (int)kk;
    if (ind->data) {
        for (int j = 0; j < *k; j++) {
            if ((rc = s_check_indices(ic, op, ind, j, ind->numel / kk, kk,
                                      x->shape[b + j])) < 0)
                return rc;
        }
    }
    return GX_OK;
}

static const gx_attr_spec s_gather_nd_attrs[] = {
    [GX_GATHER_ND_BATCH_DIMS] = {.name = "batch_dims", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_gather_nd_attrs / sizeof s_gather_nd_attrs[0] == GX_GATHER_ND_NATTRS,
               "GatherND attrs");

/* GatherND: each index tuple (the last dim of indices) picks a slice of
 * data within its batch; out shape = indices.shape[:-1] + data.shape[b+k:]. */
static int s_infer_gather_nd(gx_infer *ic)
{
    const int64_t b = ic->attr[GX_GATHER_ND_BATCH_DIMS].i;
    int k, rc;
    if ((rc = s_check_nd(ic, "GatherND", b, &k)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1];
    const int tail = x->ndim - (int)b - k, nd = ind->ndim - 1 + tail;
    if (nd > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "GatherND: output would have rank %d (max %d)", nd,
                             GX_MAX_DIMS);
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, ind->shape, (size_t)(ind->ndim - 1) * sizeof shape[0]);
    memcpy(shape + ind->ndim - 1, x->shape + b + k, (size_t)tail * sizeof shape[0]);
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_GATHER_ND = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_gather_nd_attrs, .n_attrs = GX_GATHER_ND_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_gather_nd, .cost = s_cost_io,
};

/* ---- ScatterElements, ScatterND, Scatter ---- */

bool gx_scatter_red_parse(const char *s, gx_scatter_red *red)
{
    static const char *const names[] = {
        [GX_SCATTER_NONE] = "none", [GX_SCATTER_ADD] = "add", [GX_SCATTER_MUL] = "mul",
        [GX_SCATTER_MAX] = "max",   [GX_SCATTER_MIN] = "min",
    };
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *red = (gx_scatter_red)i;
            return true;
        }
    }
    return false;
}

/* The reduction attribute and updates' dtype: a reduction needs numbers. */
static int s_check_reduction(gx_infer *ic, const char *op, const char *reduction)
{
    gx_scatter_red red;
    if (!gx_scatter_red_parse(reduction, &red))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: reduction '%s' is not one of none, add, mul, max, min", op,
                             reduction ? reduction : "");
    const gx_view *x = &ic->in[0], *u = &ic->in[2];
    if (u->dtype != x->dtype)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: updates are %s but data is %s", op,
                             s_dtname(u->dtype), s_dtname(x->dtype));
    if (red != GX_SCATTER_NONE && (x->dtype == GX_BOOL || x->dtype == GX_STRING))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: reduction '%s' is not supported for %s", op,
                             reduction, s_dtname(x->dtype));
    return GX_OK;
}

static int s_infer_scatter_elements_axis(gx_infer *ic, const char *op, int64_t axis_attr,
                                         const char *reduction)
{
    int axis, rc;
    if ((rc = s_check_elements(ic, op, axis_attr, &axis)) < 0 ||
        (rc = gx_infer_need(ic, op, 2)) < 0 || (rc = s_check_reduction(ic, op, reduction)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1], *u = &ic->in[2];
    bool same = u->ndim == ind->ndim;
    for (int d = 0; same && d < u->ndim; d++)
        same = u->shape[d] == ind->shape[d];
    if (!same) {
        char si[GX_SHAPE_STRLEN], su[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: updates %s and indices %s differ in shape", op,
                             gx_shape_str(u->ndim, u->shape, su, sizeof su),
                             gx_shape_str(ind->ndim, ind->shape, si, sizeof si));
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

static const gx_attr_spec s_scatter_elements_attrs[] = {
    [GX_SCATTER_ELEMENTS_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
    [GX_SCATTER_ELEMENTS_REDUCTION] = {.name = "reduction", .type = GX_ATTR_STRING,
                                       .def_s = "none"},
};
_Static_assert(sizeof s_scatter_elements_attrs / sizeof s_scatter_elements_attrs[0] ==
                   GX_SCATTER_ELEMENTS_NATTRS,
               "ScatterElements attrs");

/* ScatterElements: a copy of data where out[i with axis coordinate
 * indices[j]] = updates[j] (or combined by reduction), in order. */
static int s_infer_scatter_elements(gx_infer *ic)
{
    return s_infer_scatter_elements_axis(ic, "ScatterElements",
                                         ic->attr[GX_SCATTER_ELEMENTS_AXIS].i,
                                         ic->attr[GX_SCATTER_ELEMENTS_REDUCTION].s);
}

const gx_op_schema gx_schema_SCATTER_ELEMENTS = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_scatter_elements_attrs, .n_attrs = GX_SCATTER_ELEMENTS_NATTRS,
    .flags = GX_OPF_STRINGS, .infer = s_infer_scatter_elements, .cost = s_cost_io,
};

static const gx_attr_spec s_scatter_attrs[] = {
    [GX_SCATTER_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_scatter_attrs / sizeof s_scatter_attrs[0] == GX_SCATTER_NATTRS,
               "Scatter attrs");

/* Scatter (deprecated in opset 11): ScatterElements without reduction. */
static int s_infer_scatter(gx_infer *ic)
{
    return s_infer_scatter_elements_axis(ic, "Scatter", ic->attr[GX_SCATTER_AXIS].i, "none");
}

const gx_op_schema gx_schema_SCATTER = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_scatter_attrs, .n_attrs = GX_SCATTER_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_scatter, .cost = s_cost_io,
};

static const gx_attr_spec s_scatter_nd_attrs[] = {
    [GX_SCATTER_ND_REDUCTION] = {.name = "reduction", .type = GX_ATTR_STRING, .def_s = "none"},
};
_Static_assert(sizeof s_scatter_nd_attrs / sizeof s_scatter_nd_attrs[0] == GX_SCATTER_ND_NATTRS,
               "ScatterND attrs");

/* ScatterND: a copy of data where each index tuple's slice is replaced by
 * (or combined with) its slice of updates, whose shape must be
 * indices.shape[:-1] + data.shape[k:]. */
static int s_infer_scatter_nd(gx_infer *ic)
{
    int k, rc;
    if ((rc = s_check_nd(ic, "ScatterND", 0, &k)) < 0 ||
        (rc = gx_infer_need(ic, "ScatterND", 2)) < 0 ||
        (rc = s_check_reduction(ic, "ScatterND", ic->attr[GX_SCATTER_ND_REDUCTION].s)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *ind = &ic->in[1], *u = &ic->in[2];
    const int nd = ind->ndim - 1 + x->ndim - k;
    bool ok = u->ndim == nd;
    for (int d = 0; ok && d < nd; d++)
        ok = u->shape[d] == (d < ind->ndim - 1 ? ind->shape[d] : x->shape[k + d - (ind->ndim - 1)]);
    if (!ok) {
        char sx[GX_SHAPE_STRLEN], si[GX_SHAPE_STRLEN], su[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "ScatterND: updates %s do not match indices %s and data %s",
                             gx_shape_str(u->ndim, u->shape, su, sizeof su),
                             gx_shape_str(ind->ndim, ind->shape, si, sizeof si),
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_SCATTER_ND = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_scatter_nd_attrs, .n_attrs = GX_SCATTER_ND_NATTRS,
    .flags = GX_OPF_STRINGS, .infer = s_infer_scatter_nd, .cost = s_cost_io,
};

/* ---- Expand, Tile ---- */

/* Expand: data broadcast (both ways, numpy rules) with the int64 1-D input
 * `shape`. */
static int s_infer_expand(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "Expand", 0)) < 0 ||
        (rc = s_need_vec(ic, "Expand", 1, "shape", false)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *s = &ic->in[1];
    if (s->shape[0] > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "Expand: shape has %lld dims (max %d)",
                             (long long)s->shape[0], GX_MAX_DIMS);
    const int64_t *t = gx_infer_value(ic, 1);
    if (!t)
        return GX_INFER_DYNAMIC;
    const int len = (int)s->shape[0];
    char sx[GX_SHAPE_STRLEN], st[GX_SHAPE_STRLEN];
    gx_shape_str(x->ndim, x->shape, sx, sizeof sx);
    gx_shape_str(len, t, st, sizeof st);
    for (int i = 0; i < len; i++) {
        if (t[i] < 0)
            return gx_infer_errf(ic, GX_ESHAPE, "Expand: shape %s has a negative dim", st);
    }
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if (!gx_broadcast_shape(x->ndim, x->shape, len, t, &nd, shape))
        return gx_infer_errf(ic, GX_ESHAPE, "Expand: data %s does not broadcast with shape %s",
                             sx, st);
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

/* Axis 0 of the data stays the output's, and the target shape, if it
 * reaches axis 0, says 1 there (a literal batch size would not shrink). */
static bool s_batch_expand(const gx_batch_ctx *bc)
{
    const gx_view *x = &bc->in[0], *s = &bc->in[1];
    if (!gx_batch_samplewise(bc) || !s->data || s->dtype != GX_I64 || s->ndim != 1 ||
        x->ndim != bc->out[0].ndim)
        return false;
    return s->shape[0] < x->ndim || ((const int64_t *)s->data)[0] == 1;
}

const gx_op_schema gx_schema_EXPAND = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_expand,
    .cost = s_cost_move, .batch = s_batch_expand,
};

/* Tile: dim d repeated repeats[d] times (the int64 1-D input, one entry
 * per dim, each >= 0). */
static int s_infer_tile(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "Tile", 0)) < 0 ||
        (rc = s_need_vec(ic, "Tile", 1, "repeats", false)) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (ic->in[1].shape[0] != x->ndim)
        return gx_infer_errf(ic, GX_ESHAPE, "Tile: repeats has %lld entries for rank %d",
                             (long long)ic->in[1].shape[0], x->ndim);
    const int64_t *rep = gx_infer_value(ic, 1);
    if (!rep)
        return GX_INFER_DYNAMIC;
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        if (rep[d] < 0)
            return gx_infer_errf(ic, GX_EINVAL, "Tile: repeats[%d] is %lld", d,
                                 (long long)rep[d]);
        if (rep[d] > 0 && x->shape[d] > INT64_MAX / rep[d])
            return gx_infer_errf(ic, GX_ELIMIT, "Tile: dim %d overflows", d);
        shape[d] = x->shape[d] * rep[d];
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    return GX_OK;
}

/* Not repeated along axis 0. */
static bool s_batch_tile(const gx_batch_ctx *bc)
{
    const gx_view *r = &bc->in[1];
    return gx_batch_samplewise(bc) && r->data && r->dtype == GX_I64 && r->ndim == 1 &&
           r->shape[0] >= 1 && ((const int64_t *)r->data)[0] == 1;
}

const gx_op_schema gx_schema_TILE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .value_inputs = 1u << 1, .infer = s_infer_tile,
    .cost = s_cost_move, .batch = s_batch_tile,
};

/* ---- Shape, Size ---- */

static const gx_attr_spec s_shape_attrs[] = {
    [GX_SHAPE_START] = {.name = "start", .type = GX_ATTR_INT, .def_i = 0},
    [GX_SHAPE_END] = {.name = "end", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_shape_attrs / sizeof s_shape_attrs[0] == GX_SHAPE_NATTRS, "Shape attrs");

static int s_infer_shape(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Shape", 0);
    if (rc < 0)
        return rc;
    int64_t lo, hi;
    gx_shape_range(ic->attr, ic->in[0].ndim, &lo, &hi);
    gx_view_set(&ic->out[0], GX_I64, 1, (int64_t[]){hi - lo});
    return GX_OK;
}

/* Shape and Size read no data: their cost is the output alone. */
static gx_cost s_cost_out(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = gx_view_bytes(&ic->out[0])};
}

/* Dims from 1 on are the same for every slice: the output does not depend
 * on the batch (it stays unbatched). Dim 0 is the batch size itself. */
static bool s_batch_shape(const gx_batch_ctx *bc)
{
    int64_t lo, hi;
    if (!gx_batch_in(bc, 0))
        return false;
    gx_shape_range(bc->attr, bc->in[0].ndim, &lo, &hi);
    return lo >= 1;
}

const gx_op_schema gx_schema_SHAPE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_shape_attrs, .n_attrs = GX_SHAPE_NATTRS,
    .flags = GX_OPF_READS_SHAPES | GX_OPF_STRINGS, .infer = s_infer_shape, .cost = s_cost_out,
    .batch = s_batch_shape,
};

static int s_infer_size(gx_infer *ic)
{
    int rc = gx_infer_need(ic, "Size", 0);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_I64, 0, NULL);
    return GX_OK;
}

const gx_op_schema gx_schema_SIZE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_READS_SHAPES | GX_OPF_STRINGS, .infer = s_infer_size, .cost = s_cost_out,
};

/* ---- Constant, ConstantOfShape ---- */

static const gx_attr_spec s_constant_attrs[] = {
    [GX_CONSTANT_VALUE] = {.name = "value", .type = GX_ATTR_TENSOR},
    [GX_CONSTANT_VALUE_FLOAT] = {.name = "value_float", .type = GX_ATTR_FLOAT},
    [GX_CONSTANT_VALUE_FLOATS] = {.name = "value_floats", .type = GX_ATTR_FLOATS},
    [GX_CONSTANT_VALUE_INT] = {.name = "value_int", .type = GX_ATTR_INT},
    [GX_CONSTANT_VALUE_INTS] = {.name = "value_ints", .type = GX_ATTR_INTS},
    [GX_CONSTANT_VALUE_STRING] = {.name = "value_string", .type = GX_ATTR_STRING},
};
_Static_assert(sizeof s_constant_attrs / sizeof s_constant_attrs[0] == GX_CONSTANT_NATTRS,
               "Constant attrs");

/* Constant: exactly one value attribute. value_float(s) give float32,
 * value_int(s) int64; a tensor keeps its dtype and shape. Strings have no
 * dtype here. */
static int s_infer_constant(gx_infer *ic)
{
    const gx_attrval *a = ic->attr;
    int n_set = 0;
    for (int i = 0; i < GX_CONSTANT_NATTRS; i++)
        n_set += a[i].set;
    if (a[GX_CONSTANT_VALUE_STRING].set)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "Constant: string values are not supported");
    if (n_set != 1)
        return gx_infer_errf(ic, GX_EATTR,
                             "Constant: needs exactly one of value, value_float, value_floats, "
                             "value_int, value_ints (got %d)",
                             n_set);
    if (a[GX_CONSTANT_VALUE].set) {
        const gx_tensor *t = a[GX_CONSTANT_VALUE].t;
        if (!t)
            return gx_infer_errf(ic, GX_EATTR, "Constant: value has no tensor");
        gx_view_set(&ic->out[0], t->dtype, t->ndim, t->shape);
    } else if (a[GX_CONSTANT_VALUE_FLOAT].set) {
        gx_view_set(&ic->out[0], GX_F32, 0, NULL);
    } else if (a[GX_CONSTANT_VALUE_INT].set) {
        gx_view_set(&ic->out[0], GX_I64, 0, NULL);
    } else if (a[GX_CONSTANT_VALUE_FLOATS].set) {
        gx_view_set(&ic->out[0], GX_F32, 1, (int64_t[]){(int64_t)a[GX_CONSTANT_VALUE_FLOATS].n});
    } else {
        gx_view_set(&ic->out[0], GX_I64, 1, (int64_t[]){(int64_t)a[GX_CONSTANT_VALUE_INTS].n});
    }
    return GX_OK;
}

const gx_op_schema gx_schema_CONSTANT = {
    .min_in = 0, .max_in = 0, .min_out = 1, .max_out = 1,
    .attrs = s_constant_attrs, .n_attrs = GX_CONSTANT_NATTRS,
    .flags = GX_OPF_STRINGS, .infer = s_infer_constant, .cost = s_cost_out,
};

static const gx_attr_spec s_constant_of_shape_attrs[] = {
    [GX_CONSTANT_OF_SHAPE_VALUE] = {.name = "value", .type = GX_ATTR_TENSOR},
};
_Static_assert(sizeof s_constant_of_shape_attrs / sizeof s_constant_of_shape_attrs[0] ==
                   GX_CONSTANT_OF_SHAPE_NATTRS,
               "ConstantOfShape attrs");

/* ConstantOfShape: a tensor of the shape given by the int64 1-D input,
 * filled with the one element of `value` (default float32 0), of its dtype. */
static int s_infer_constant_of_shape(gx_infer *ic)
{
    int rc = s_need_vec(ic, "ConstantOfShape", 0, "shape", false);
    if (rc < 0)
        return rc;
    const gx_tensor *t = ic->attr[GX_CONSTANT_OF_SHAPE_VALUE].t;
    if (ic->attr[GX_CONSTANT_OF_SHAPE_VALUE].set && (!t || t->numel != 1))
        return gx_infer_errf(ic, GX_EATTR, "ConstantOfShape: value must hold one element");
    const int64_t len = ic->in[0].shape[0];
    if (len > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "ConstantOfShape: shape has %lld dims (max %d)",
                             (long long)len, GX_MAX_DIMS);
    const int64_t *s = gx_infer_value(ic, 0);
    if (!s)
        return GX_INFER_DYNAMIC;
    for (int64_t i = 0; i < len; i++) {
        if (s[i] < 0)
            return gx_infer_errf(ic, GX_ESHAPE, "ConstantOfShape: dim %lld is %lld",
                                 (long long)i, (long long)s[i]);
    }
    gx_view_set(&ic->out[0], t ? t->dtype : GX_F32, (int)len, s);
    return GX_OK;
}

const gx_op_schema gx_schema_CONSTANT_OF_SHAPE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_constant_of_shape_attrs, .n_attrs = GX_CONSTANT_OF_SHAPE_NATTRS,
    .flags = GX_OPF_STRINGS, .value_inputs = 1u << 0, .infer = s_infer_constant_of_shape,
    .cost = s_cost_out,
};

/* ---- Identity, ReverseSequence ---- */

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
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_identity, .cost = s_cost_move,
    .batch = gx_batch_samplewise,
};

static const gx_attr_spec s_reverse_sequence_attrs[] = {
    [GX_REVERSE_SEQUENCE_BATCH_AXIS] = {.name = "batch_axis", .type = GX_ATTR_INT, .def_i = 1},
    [GX_REVERSE_SEQUENCE_TIME_AXIS] = {.name = "time_axis", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_reverse_sequence_attrs / sizeof s_reverse_sequence_attrs[0] ==
                   GX_REVERSE_SEQUENCE_NATTRS,
               "ReverseSequence attrs");

/* ReverseSequence: for batch entry b, the first sequence_lens[b] steps
 * along time_axis are reversed; batch_axis and time_axis are 0 and 1. */
static int s_infer_reverse_sequence(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need(ic, "ReverseSequence", 0)) < 0 ||
        (rc = s_need_vec(ic, "ReverseSequence", 1, "sequence_lens", false)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *lens = &ic->in[1];
    const int64_t ba = ic->attr[GX_REVERSE_SEQUENCE_BATCH_AXIS].i;
    const int64_t ta = ic->attr[GX_REVERSE_SEQUENCE_TIME_AXIS].i;
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "ReverseSequence: input has rank %d; 2 or more needed",
                             x->ndim);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
        return gx_infer_errf(ic, GX_EATTR,
                             "ReverseSequence: batch_axis %lld and time_axis %lld must be 0 and "
                             "1 in some order",
                             (long long)ba, (long long)ta);
    if (lens->shape[0] != x->shape[ba])
        return gx_infer_errf(ic, GX_ESHAPE,
                             "ReverseSequence: sequence_lens has %lld entries for a batch of %lld",
                             (long long)lens->shape[0], (long long)x->shape[ba]);
    for (int64_t b = 0; lens->data && b < lens->shape[0]; b++) {
        const int64_t len = ((const int64_t *)lens->data)[b];
        if (len < 0 || len > x->shape[ta])
            return gx_infer_errf(ic, GX_EINVAL,
                                 "ReverseSequence: sequence_lens[%lld] = %lld is outside [0, %lld]",
                                 (long long)b, (long long)len, (long long)x->shape[ta]);
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_REVERSE_SEQUENCE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_reverse_sequence_attrs, .n_attrs = GX_REVERSE_SEQUENCE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS, .infer = s_infer_reverse_sequence,
    .cost = s_cost_io,
};

/* ---- TensorScatter (opset 24) ---- */

static const gx_attr_spec s_tensor_scatter_attrs[] = {
    [GX_TENSOR_SCATTER_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -2},
    [GX_TENSOR_SCATTER_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "linear"},
};
_Static_assert(sizeof s_tensor_scatter_attrs / sizeof s_tensor_scatter_attrs[0] ==
                   GX_TENSOR_SCATTER_NATTRS,
               "TensorScatter attrs");

/* present_cache = past_cache with, for each sample b, update's rows along
 * axis (not 0, the batch) written from position write_indices[b] (0 when
 * absent), modulo the cache's length in circular mode (Python's modulo,
 * as the reference's). Any dtype; update matches past_cache but for its
 * shorter axis. Linear write indices are checked whenever their values are
 * known (the rows must fit); the kernel drops rows that would land outside
 * the cache. */
static int s_infer_tensor_scatter(gx_infer *ic)
{
    const char *op = "TensorScatter";
    int rc, axis;
    if ((rc = gx_infer_need(ic, op, 0)) < 0 || (rc = gx_infer_need(ic, op, 1)) < 0)
        return rc;
    const gx_view *past = &ic->in[0], *up = &ic->in[1];
    const char *mode = ic->attr[GX_TENSOR_SCATTER_MODE].s;
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    if (!mode || (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0))
        return gx_infer_errf(ic, GX_EATTR, "%s: mode '%s' is not linear or circular", op,
                             mode ? mode : "");
    if (up->dtype != past->dtype)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: update is %s but past_cache is %s", op,
                             s_dtname(up->dtype), s_dtname(past->dtype));
    if (past->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: past_cache has rank %d; [batch, ..., "
                             "max_sequence_length, ...] needed", op, past->ndim);
    if (!gx_axis_norm(ic->attr[GX_TENSOR_SCATTER_AXIS].i, past->ndim, &axis) || axis == 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is not a dim of rank %d other than the "
                             "batch (0)", op, (long long)ic->attr[GX_TENSOR_SCATTER_AXIS].i,
                             past->ndim);
    bool ok = up->ndim == past->ndim;
    for (int d = 0; ok && d < past->ndim; d++)
        ok = d == axis ? up->shape[d] <= past->shape[d] : up->shape[d] == past->shape[d];
    if (!ok)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: update %s does not fit past_cache %s (equal "
                             "dims but for axis %d, no longer there)", op,
                             gx_shape_str(up->ndim, up->shape, sa, sizeof sa),
                             gx_shape_str(past->ndim, past->shape, sb, sizeof sb), axis);
    if (ic->n_in > 2 && ic->in[2].ndim >= 0) {
        const gx_view *w = &ic->in[2];
        if (w->dtype != GX_I64)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: write_indices is %s, expected int64", op,
                                 s_dtname(w->dtype));
        if (w->ndim != 1 || w->shape[0] != past->shape[0])
            return gx_infer_errf(ic, GX_ESHAPE, "%s: write_indices has shape %s, expected [%lld]",
                                 op, gx_shape_str(w->ndim, w->shape, sa, sizeof sa),
                                 (long long)past->shape[0]);
        const int64_t *wv = gx_infer_value(ic, 2);
        const bool linear = mode[0] == 'l';
        for (int64_t b = 0; wv && linear && b < w->shape[0]; b++) {
            if (wv[b] < 0 || wv[b] > past->shape[axis] - up->shape[axis])
                return gx_infer_errf(ic, GX_ESHAPE, "%s: write index %lld of sample %lld %s", op,
                                     (long long)wv[b], (long long)b,
                                     wv[b] < 0 ? "is negative"
                                               : "puts the update past the cache's end");
        }
    }
    gx_view_set(&ic->out[0], past->dtype, past->ndim, past->shape);
    return GX_OK;
}

/* Every sample's rows come from its own past_cache, update and write
 * index. */
static bool s_batch_tensor_scatter(const gx_batch_ctx *bc)
{
    const bool has_w = bc->n_in > 2 && bc->in[2].ndim >= 0;
    if (!gx_batch_in(bc, 0) || !gx_batch_in(bc, 1) || (has_w && !gx_batch_in(bc, 2)))
        return false;
    bc->out_batched[0] = true;
    return true;
}

const gx_op_schema gx_schema_TENSOR_SCATTER = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_tensor_scatter_attrs, .n_attrs = GX_TENSOR_SCATTER_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_tensor_scatter, .cost = s_cost_io,
    .batch = s_batch_tensor_scatter,
};
