/* Schema of Softmax, opset-13 semantics: softmax along the single axis
 * `axis` (default -1) of a float32 tensor of rank >= 1. */
#include "ops/schema.h"

static const gx_attr_spec s_softmax_attrs[] = {
    [GX_SOFTMAX_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
};
_Static_assert(sizeof s_softmax_attrs / sizeof s_softmax_attrs[0] == GX_SOFTMAX_NATTRS,
               "Softmax attrs");

static int s_infer_softmax(gx_infer *ic)
{
    int rc = gx_infer_need_f32(ic, "Softmax", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Softmax: input is a scalar; rank >= 1 needed");
    if (!gx_axis_norm(ic->attr[GX_SOFTMAX_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "Softmax: axis %lld is out of range for rank %d",
                             (long long)ic->attr[GX_SOFTMAX_AXIS].i, x->ndim);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* max, subtract, exp (~10), sum, scale */
static gx_cost s_cost_softmax(const gx_infer *ic)
{
    return (gx_cost){.flops = 14.0 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_SOFTMAX = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_softmax_attrs, .n_attrs = GX_SOFTMAX_NATTRS,
    .infer = s_infer_softmax, .cost = s_cost_softmax,
};
