/*
 * Schemas of the training family (GX_OPS_TRAINING in ops/op.h): the
 * optimizer steps of ONNX's ai.onnx.preview.training domain, opset 1.
 * Each takes the learning rate R and the update count T (scalars), then n
 * tensors to optimise and, per state, n more: Adagrad (X, G, H) -> (X_new,
 * H_new), Adam (X, G, V, H) -> (X_new, V_new, H_new), Momentum (X, G, V)
 * -> (X_new, V_new). The j-th state tensor of group i has the shape of X_i;
 * everything is float32 or float64 (R and the tensors one dtype), T int64.
 */
#include <string.h>

#include "ops/schema.h"

static const gx_attr_spec s_adagrad_attrs[] = {
    [GX_ADAGRAD_DECAY_FACTOR] = {.name = "decay_factor", .type = GX_ATTR_FLOAT, .def_f = 0},
    [GX_ADAGRAD_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-6},
    [GX_ADAGRAD_NORM_COEFFICIENT] = {.name = "norm_coefficient", .type = GX_ATTR_FLOAT,
                                     .def_f = 0},
};
_Static_assert(sizeof s_adagrad_attrs / sizeof s_adagrad_attrs[0] == GX_ADAGRAD_NATTRS,
               "Adagrad attrs");

static const gx_attr_spec s_adam_attrs[] = {
    [GX_ADAM_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 0.9},
    [GX_ADAM_BETA] = {.name = "beta", .type = GX_ATTR_FLOAT, .def_f = 0.999},
    [GX_ADAM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-6},
    [GX_ADAM_NORM_COEFFICIENT] = {.name = "norm_coefficient", .type = GX_ATTR_FLOAT, .def_f = 0},
    [GX_ADAM_NORM_COEFFICIENT_POST] = {.name = "norm_coefficient_post", .type = GX_ATTR_FLOAT,
                                       .def_f = 0},
};
_Static_assert(sizeof s_adam_attrs / sizeof s_adam_attrs[0] == GX_ADAM_NATTRS, "Adam attrs");

static const gx_attr_spec s_momentum_attrs[] = {
    [GX_MOMENTUM_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .required = true},
    [GX_MOMENTUM_BETA] = {.name = "beta", .type = GX_ATTR_FLOAT, .required = true},
    [GX_MOMENTUM_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .required = true},
    [GX_MOMENTUM_NORM_COEFFICIENT] = {.name = "norm_coefficient", .type = GX_ATTR_FLOAT,
                                      .required = true},
};
_Static_assert(sizeof s_momentum_attrs / sizeof s_momentum_attrs[0] == GX_MOMENTUM_NATTRS,
               "Momentum attrs");

/* Checks op's inputs (R, T, then per groups of n tensors: X, G and the
 * states) and outputs (per - 1 groups: X and the states) and sets the
 * outputs' shapes. */
static int s_infer_step(gx_infer *ic, const char *op, int per)
{
    const gx_view *r = &ic->in[0], *t = &ic->in[1];
    int n = (ic->n_in - 2) / per;
    if (n < 1 || ic->n_in != 2 + n * per)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: %d inputs; R, T and %d tensors per optimised tensor needed", op,
                             ic->n_in, per);
    for (int i = 0; i < ic->n_in; i++)
        if (ic->in[i].ndim < 0)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: input %d is missing", op, i);
    if (r->dtype != GX_F32 && r->dtype != GX_F64)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: R is %s; float32 or float64 needed", op,
                             gx_dtype_name(r->dtype));
    if (t->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: T is %s; int64 needed", op,
                             gx_dtype_name(t->dtype));
    if (r->numel != 1 || t->numel != 1 || r->ndim > 1 || t->ndim > 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: R and T must be scalars", op);
    char sx[GX_SHAPE_STRLEN], sy[GX_SHAPE_STRLEN];
    for (int i = 0; i < n; i++) {
        const gx_view *x = &ic->in[2 + i];
        for (int j = 0; j < per; j++) {
            const gx_view *y = &ic->in[2 + j * n + i];
            if (y->dtype != r->dtype)
                return gx_infer_errf(ic, GX_EDTYPE, "%s: input %d is %s, R is %s", op,
                                     2 + j * n + i, gx_dtype_name(y->dtype),
                                     gx_dtype_name(r->dtype));
            if (y->ndim != x->ndim || memcmp(y->shape, x->shape, sizeof(int64_t) * x->ndim))
                return gx_infer_errf(ic, GX_ESHAPE, "%s: input %d has shape %s, X%d has %s", op,
                                     2 + j * n + i, gx_shape_str(y->ndim, y->shape, sy, sizeof sy),
                                     i + 1, gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
        }
    }
    if (ic->n_out != n * (per - 1))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %d outputs for %d optimised tensors; %d needed",
                             op, ic->n_out, n, n * (per - 1));
    for (int i = 0; i < n; i++) {
        const gx_view *x = &ic->in[2 + i];
        for (int j = 0; j < per - 1; j++)
            gx_view_set(&ic->out[j * n + i], x->dtype, x->ndim, x->shape);
    }
    return GX_OK;
}

static int s_infer_adagrad(gx_infer *ic)
{
    return s_infer_step(ic, "Adagrad", 3);
}

static int s_infer_adam(gx_infer *ic)
{
    return s_infer_step(ic, "Adam", 4);
}

static int s_infer_momentum(gx_infer *ic)
{
    const char *mode = ic->attr[GX_MOMENTUM_MODE].s;
    if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
        return gx_infer_errf(ic, GX_EATTR, "Momentum: mode \"%s\" is not standard or nesterov",
                             mode);
    return s_infer_step(ic, "Momentum", 3);
}

/* about a dozen operations per element of the optimised tensors */
static gx_cost s_cost_step(const gx_infer *ic)
{
    double n = 0;
    for (int i = 0; i < ic->n_out; i++)
        n += (double)gx_view_numel(&ic->out[i]);
    return (gx_cost){.flops = 12.0 * n, .bytes = gx_infer_io_bytes(ic)};
}

/* The updates are elementwise but the tensors are whole parameters, not
 * batches: the default rule (mixes samples) keeps them whole. */
#define S_STEP_SCHEMA(e, per, at, nat, inf)                                                  \
    const gx_op_schema gx_schema_##e = {                                                     \
        .min_in = 2 + per, .max_in = GX_MAX_OP_INPUTS, .min_out = 1,                         \
        .max_out = GX_MAX_OP_INPUTS, .attrs = at, .n_attrs = nat, .infer = inf,             \
        .cost = s_cost_step,                                                                 \
    }

S_STEP_SCHEMA(ADAGRAD, 3, s_adagrad_attrs, GX_ADAGRAD_NATTRS, s_infer_adagrad);
S_STEP_SCHEMA(ADAM, 4, s_adam_attrs, GX_ADAM_NATTRS, s_infer_adam);
S_STEP_SCHEMA(MOMENTUM, 3, s_momentum_attrs, GX_MOMENTUM_NATTRS, s_infer_momentum);
