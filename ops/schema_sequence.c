/*
 * Schemas of the sequence and optional ops (GX_OPS_SEQUENCE in ops/op.h).
 * Their values are not tensors in an arena (a sequence is a list of tensors
 * of any shapes, an optional may be none), so every one of them runs at run
 * time: infer checks the attributes and what it can of the inputs and
 * answers GX_INFER_DYNAMIC, and the executor (daemon/exec/values.c) runs
 * them, checking the values themselves. Compiler passes see dynamic steps
 * run by the executor on the host (docs/graph-format.md, "Sequences and
 * optional values").
 */
#include "ops/schema.h"

static gx_cost s_cost_none(const gx_infer *ic)
{
    return (gx_cost){0, 0};
}

/* Input i, if present and known to be a tensor, is an integer scalar. */
static int s_need_index(gx_infer *ic, const char *op, int i, const char *what)
{
    const gx_view *v = &ic->in[i];
    if (i >= ic->n_in || v->ndim < 0 || v->kind != GX_KIND_TENSOR)
        return GX_OK;
    if (v->dtype != GX_I64 && v->dtype != GX_I32)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s must be int64 or int32, got %s", op, what,
                             gx_dtype_name(v->dtype));
    if (v->ndim > 1 || (v->ndim == 1 && v->shape[0] != 1))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s must be a scalar", op, what);
    return GX_OK;
}

static int s_infer_dynamic(gx_infer *ic)
{
    return GX_INFER_DYNAMIC;
}

#define S_SEQ_SCHEMA(e, lo, hi, nout, at, nat, inf)                                          \
    const gx_op_schema gx_schema_##e = {                                                     \
        .min_in = lo, .max_in = hi, .min_out = nout, .max_out = nout, .attrs = at,           \
        .n_attrs = nat, .flags = GX_OPF_CONTROL | GX_OPF_NO_FOLD, .infer = inf,              \
        .cost = s_cost_none,                                                                 \
    }

static const gx_attr_spec s_empty_attrs[] = {
    [GX_SEQUENCE_EMPTY_DTYPE] = {.name = "dtype", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_empty_attrs / sizeof s_empty_attrs[0] == GX_SEQUENCE_EMPTY_NATTRS,
               "SequenceEmpty attrs");

/* SequenceEmpty() -> an empty sequence of dtype (ONNX code, default float) */
static int s_infer_empty(gx_infer *ic)
{
    gx_dtype dt;
    if (!gx_onnx_dtype(ic->attr[GX_SEQUENCE_EMPTY_DTYPE].i, &dt))
        return gx_infer_errf(ic, GX_EDTYPE, "SequenceEmpty: dtype %lld is not a type gexec has",
                             (long long)ic->attr[GX_SEQUENCE_EMPTY_DTYPE].i);
    return GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(SEQUENCE_EMPTY, 0, 0, 1, s_empty_attrs, GX_SEQUENCE_EMPTY_NATTRS, s_infer_empty);

/* SequenceConstruct(t...) -> the sequence of the tensors t (one dtype) */
S_SEQ_SCHEMA(SEQUENCE_CONSTRUCT, 1, GX_MAX_OP_INPUTS, 1, NULL, 0, s_infer_dynamic);

/* SequenceInsert(s, t, position?) -> s with t at position (default: at
 * the end); position in [-n, n] */
static int s_infer_insert(gx_infer *ic)
{
    int rc = s_need_index(ic, "SequenceInsert", 2, "position");
    return rc < 0 ? rc : GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(SEQUENCE_INSERT, 2, 3, 1, NULL, 0, s_infer_insert);

/* SequenceAt(s, position) -> a copy of item position, in [-n, n-1] */
static int s_infer_at(gx_infer *ic)
{
    int rc = s_need_index(ic, "SequenceAt", 1, "position");
    return rc < 0 ? rc : GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(SEQUENCE_AT, 2, 2, 1, NULL, 0, s_infer_at);

/* SequenceErase(s, position?) -> s without item position (default: the
 * last) */
static int s_infer_erase(gx_infer *ic)
{
    int rc = s_need_index(ic, "SequenceErase", 1, "position");
    return rc < 0 ? rc : GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(SEQUENCE_ERASE, 1, 2, 1, NULL, 0, s_infer_erase);

/* SequenceLength(s) -> int64 scalar */
S_SEQ_SCHEMA(SEQUENCE_LENGTH, 1, 1, 1, NULL, 0, s_infer_dynamic);

static const gx_attr_spec s_split_attrs[] = {
    [GX_SPLIT_TO_SEQUENCE_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 0},
    [GX_SPLIT_TO_SEQUENCE_KEEPDIMS] = {.name = "keepdims", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_split_attrs / sizeof s_split_attrs[0] == GX_SPLIT_TO_SEQUENCE_NATTRS,
               "SplitToSequence attrs");

/* SplitToSequence(x, split?) -> the pieces of x along axis: split a scalar
 * (pieces of that length, the last shorter), a 1-D list of lengths, or
 * none (pieces of 1, without the axis unless keepdims) */
static int s_infer_split(gx_infer *ic)
{
    const gx_view *x = &ic->in[0], *sp = ic->n_in > 1 ? &ic->in[1] : NULL;
    int64_t axis = ic->attr[GX_SPLIT_TO_SEQUENCE_AXIS].i;
    if (x->ndim >= 0 && x->kind == GX_KIND_TENSOR && (axis < -x->ndim || axis >= x->ndim))
        return gx_infer_errf(ic, GX_EATTR, "SplitToSequence: axis %lld is out of range for rank %d",
                             (long long)axis, x->ndim);
    if (sp && sp->ndim >= 0 && sp->kind == GX_KIND_TENSOR &&
        ((sp->dtype != GX_I64 && sp->dtype != GX_I32) || sp->ndim > 1))
        return gx_infer_errf(ic, GX_EDTYPE,
                             "SplitToSequence: split must be an int64 or int32 scalar or 1-D tensor");
    return GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(SPLIT_TO_SEQUENCE, 1, 2, 1, s_split_attrs, GX_SPLIT_TO_SEQUENCE_NATTRS,
             s_infer_split);

static const gx_attr_spec s_concat_attrs[] = {
    [GX_CONCAT_FROM_SEQUENCE_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .required = true},
    [GX_CONCAT_FROM_SEQUENCE_NEW_AXIS] = {.name = "new_axis", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_concat_attrs / sizeof s_concat_attrs[0] == GX_CONCAT_FROM_SEQUENCE_NATTRS,
               "ConcatFromSequence attrs");

/* ConcatFromSequence(s) -> the items joined along axis (stacked along a
 * new axis with new_axis 1) */
static int s_infer_concat(gx_infer *ic)
{
    int64_t na = ic->attr[GX_CONCAT_FROM_SEQUENCE_NEW_AXIS].i;
    if (na != 0 && na != 1)
        return gx_infer_errf(ic, GX_EATTR, "ConcatFromSequence: new_axis must be 0 or 1, got %lld",
                             (long long)na);
    return GX_INFER_DYNAMIC;
}
S_SEQ_SCHEMA(CONCAT_FROM_SEQUENCE, 1, 1, 1, s_concat_attrs, GX_CONCAT_FROM_SEQUENCE_NATTRS,
             s_infer_concat);

static const gx_attr_spec s_map_attrs[] = {
    [GX_SEQUENCE_MAP_BODY] = {.name = "body", .type = GX_ATTR_GRAPH, .required = true},
};
_Static_assert(sizeof s_map_attrs / sizeof s_map_attrs[0] == GX_SEQUENCE_MAP_NATTRS,
               "SequenceMap attrs");

/* SequenceMap(s, more...) -> sequences: body runs once per item of s, on
 * that item and the same item of every other sequence input (tensor inputs
 * whole); its outputs, one item per run, make the output sequences */
static int s_infer_map(gx_infer *ic)
{
    const gx_graph *body = ic->attr[GX_SEQUENCE_MAP_BODY].g;
    if ((int)body->n_inputs != ic->n_in || (int)body->n_outputs != ic->n_out)
        return gx_infer_errf(ic, GX_EGRAPH,
                             "SequenceMap: the body must take one input per node input (%d) and return one output per node output (%d); it takes %zu and returns %zu",
                             ic->n_in, ic->n_out, body->n_inputs, body->n_outputs);
    return GX_INFER_DYNAMIC;
}
const gx_op_schema gx_schema_SEQUENCE_MAP = {
    .min_in = 1, .max_in = GX_MAX_OP_INPUTS, .min_out = 1, .max_out = GX_MAX_OP_INPUTS,
    .attrs = s_map_attrs, .n_attrs = GX_SEQUENCE_MAP_NATTRS,
    .flags = GX_OPF_CONTROL | GX_OPF_NO_FOLD, .infer = s_infer_map, .cost = s_cost_none,
};

/* Optional(x?) -> x as an optional value; none without x. The type
 * attribute only declares what a none would hold: the importer drops it. */
S_SEQ_SCHEMA(OPTIONAL, 0, 1, 1, NULL, 0, s_infer_dynamic);

/* OptionalHasElement(x?) -> bool scalar: x is present and not none */
S_SEQ_SCHEMA(OPTIONAL_HAS_ELEMENT, 0, 1, 1, NULL, 0, s_infer_dynamic);

/* OptionalGetElement(x) -> the element of x (x itself if it is not an
 * optional); an error on none */
S_SEQ_SCHEMA(OPTIONAL_GET_ELEMENT, 1, 1, 1, NULL, 0, s_infer_dynamic);
