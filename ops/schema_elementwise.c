/* Schemas of the elementwise ops: Add Sub Mul Div (numpy broadcasting of two
 * float32 inputs) and Relu Sigmoid Tanh Exp (one float32 input). */
#include "ops/schema.h"

/* Binary: both inputs float32, output shape the numpy broadcast of theirs. */
static int s_infer_binary(gx_infer *ic, gx_op op)
{
    const char *name = gx_op_name(op);
    int rc;
    if ((rc = gx_infer_need_f32(ic, name, 0)) < 0 || (rc = gx_infer_need_f32(ic, name, 1)) < 0)
        return rc;
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if (!gx_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) {
        char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: shapes %s and %s are not broadcastable", name,
                             gx_shape_str(a->ndim, a->shape, sa, sizeof sa),
                             gx_shape_str(b->ndim, b->shape, sb, sizeof sb));
    }
    gx_view_set(&ic->out[0], GX_F32, nd, shape);
    return GX_OK;
}

/* Unary: float32 in, same shape out. */
static int s_infer_unary(gx_infer *ic, gx_op op)
{
    int rc = gx_infer_need_f32(ic, gx_op_name(op), 0);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

/* flops_per_elem: a rough count per output element (exp and friends are a
 * range reduction plus a polynomial, about 10). */
static gx_cost s_cost_elementwise(const gx_infer *ic, double flops_per_elem)
{
    return (gx_cost){.flops = (double)gx_view_numel(&ic->out[0]) * flops_per_elem,
                     .bytes = gx_infer_io_bytes(ic)};
}

#define GX_BINARY_SCHEMA(E)                                                   \
    static int s_infer_##E(gx_infer *ic) { return s_infer_binary(ic, GX_OP_##E); } \
    static gx_cost s_cost_##E(const gx_infer *ic) { return s_cost_elementwise(ic, 1); } \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                 \
        .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_##E, .cost = s_cost_##E, \
    };

#define GX_UNARY_SCHEMA(E, flops)                                             \
    static int s_infer_##E(gx_infer *ic) { return s_infer_unary(ic, GX_OP_##E); } \
    static gx_cost s_cost_##E(const gx_infer *ic) { return s_cost_elementwise(ic, flops); } \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                 \
        .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_##E, .cost = s_cost_##E, \
    };

GX_BINARY_SCHEMA(ADD)
GX_BINARY_SCHEMA(SUB)
GX_BINARY_SCHEMA(MUL)
GX_BINARY_SCHEMA(DIV)
GX_UNARY_SCHEMA(RELU, 1)
GX_UNARY_SCHEMA(SIGMOID, 12)
GX_UNARY_SCHEMA(TANH, 14)
GX_UNARY_SCHEMA(EXP, 10)
