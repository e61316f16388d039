/* Schemas of the loss family (GX_OPS_LOSS in ops/op.h):
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12-13), on
 * float32 and float64 scores with int32 or int64 labels. Both read scores
 * [N, C, d1..dk], labels [N, d1..dk] and an optional weight [C]; the loss is
 * [N, d1..dk] with reduction "none", else a scalar. */
#include <string.h>

#include "ops/schema.h"

static const gx_attr_spec s_loss_attrs[] = {
    [GX_LOSS_IGNORE_INDEX] = {.name = "ignore_index", .type = GX_ATTR_INT},
    [GX_LOSS_REDUCTION] = {.name = "reduction", .type = GX_ATTR_STRING, .def_s = "mean"},
};
_Static_assert(sizeof s_loss_attrs / sizeof s_loss_attrs[0] == GX_LOSS_NATTRS, "loss attrs");

#define S_FLOATS (GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64))
#define S_LABELS (GX_DT_BIT(GX_I32) | GX_DT_BIT(GX_I64))

static int s_infer_loss(gx_infer *ic, const char *op)
{
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, op, 0, S_FLOATS)) < 0 ||
        (rc = gx_infer_need_dtypes(ic, op, 1, S_LABELS)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *t = &ic->in[1];
    char sx[GX_SHAPE_STRLEN], st[GX_SHAPE_STRLEN];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C, ...] needed", op,
                             x->ndim);
    bool ok = t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
    for (int d = 1; ok && d < t->ndim; d++)
        ok = t->shape[d] == x->shape[d + 1];
    if (!ok)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: target of shape %s does not match input %s", op,
                             gx_shape_str(t->ndim, t->shape, st, sizeof st),
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    if (ic->n_in > 2 && ic->in[2].ndim >= 0) {
        const gx_view *w = &ic->in[2];
        if (w->dtype != x->dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: weight is %s, input is %s", op,
                                 gx_dtype_name(w->dtype), gx_dtype_name(x->dtype));
        if (w->ndim != 1 || w->shape[0] != x->shape[1])
            return gx_infer_errf(ic, GX_ESHAPE, "%s: weight has shape %s, expected [%lld]", op,
                                 gx_shape_str(w->ndim, w->shape, st, sizeof st),
                                 (long long)x->shape[1]);
    }
    const char *red = ic->attr[GX_LOSS_REDUCTION].s;
    bool none = strcmp(red, "none") == 0;
    if (!none && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: reduction \"%s\" is not none, sum or mean", op,
                             red);
    gx_view_set(&ic->out[0], x->dtype, none ? t->ndim : 0, t->shape);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

static int s_infer_nllloss(gx_infer *ic)
{
    return s_infer_loss(ic, "NegativeLogLikelihoodLoss");
}

static int s_infer_sceloss(gx_infer *ic)
{
    return s_infer_loss(ic, "SoftmaxCrossEntropyLoss");
}

/* a gather, multiply and add per label */
static gx_cost s_cost_nllloss(const gx_infer *ic)
{
    return (gx_cost){.flops = 3.0 * (double)gx_view_numel(&ic->in[1]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* a log-softmax over the classes (max, subtract, exp ~10, add, log), then
 * the gather of the negative log-likelihood */
static gx_cost s_cost_sceloss(const gx_infer *ic)
{
    return (gx_cost){.flops = 14.0 * (double)gx_view_numel(&ic->in[0]) +
                              3.0 * (double)gx_view_numel(&ic->in[1]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* The sum and mean reductions add up the whole batch. */
const gx_op_schema gx_schema_NLLLOSS = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_loss_attrs, .n_attrs = GX_LOSS_NATTRS, .flags = GX_OPF_BATCH_COUPLED,
    .infer = s_infer_nllloss, .cost = s_cost_nllloss,
};

const gx_op_schema gx_schema_SCELOSS = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 2,
    .attrs = s_loss_attrs, .n_attrs = GX_LOSS_NATTRS, .flags = GX_OPF_BATCH_COUPLED,
    .infer = s_infer_sceloss, .cost = s_cost_sceloss,
};
