/* Schemas of the math family (GX_OPS_MATH): elementwise arithmetic and
 * activations with ONNX semantics. The binary and variadic ops broadcast
 * their inputs numpy-style (multidirectionally); PRelu broadcasts its slope
 * to X only. Outputs take the (first) input's dtype. Which dtypes each op
 * takes is one mask here; ops/cpu/elementwise.c has a kernel for each. */
#include <stdio.h>
#include <string.h>

#include "ops/schema.h"

/* Sets of dtypes, one bit per gx_dtype. */
#define S_DT(d) (1u << GX_##d)
#define S_FLOAT (S_DT(F32) | S_DT(F16) | S_DT(BF16) | S_DT(F64))
#define S_SINT (S_DT(I8) | S_DT(I16) | S_DT(I32) | S_DT(I64))
#define S_UINT (S_DT(U8) | S_DT(U16) | S_DT(U32) | S_DT(U64))
#define S_NUM (S_FLOAT | S_SINT | S_UINT)
#define S_POW_BASE (S_FLOAT | S_DT(I32) | S_DT(I64)) /* Pow's T (opset 15) */

static const char *s_dtname(gx_dtype dt)
{
    const char *n = gx_dtype_name(dt);
    return n ? n : "unknown dtype";
}

/* GX_OK when input i is present and its dtype is in mask; else GX_ESHAPE
 * or GX_EDTYPE with the accepted dtypes listed. */
static int s_need_dtype(gx_infer *ic, const char *op, int i, unsigned mask)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    const gx_dtype dt = ic->in[i].dtype;
    if ((unsigned)dt < GX_DTYPE_COUNT && (mask >> dt & 1))
        return GX_OK;
    char list[192];
    size_t len = 0;
    list[0] = '\0';
    for (int d = 0; d < GX_DTYPE_COUNT && len < sizeof list; d++) {
        if (mask >> d & 1)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                    s_dtname((gx_dtype)d));
    }
    return gx_infer_errf(ic, GX_EDTYPE, "%s: %s not supported (%s)", op, s_dtname(dt), list);
}

/* One input of dtypes mask, same shape and dtype out. */
static int s_infer_unary(gx_infer *ic, gx_op op, unsigned mask)
{
    int rc = s_need_dtype(ic, gx_op_name(op), 0, mask);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

/* Broadcasts the shapes of inputs first..n_in-1 into shape; GX_ESHAPE when
 * one does not fit what the ones before it gave. */
static int s_broadcast_inputs(gx_infer *ic, const char *op, int first, int *nd, int64_t *shape)
{
    *nd = ic->in[first].ndim;
    memcpy(shape, ic->in[first].shape, sizeof ic->in[first].shape);
    for (int i = first + 1; i < ic->n_in; i++) {
        const gx_view *v = &ic->in[i];
        int64_t prev[GX_MAX_DIMS];
        const int nprev = *nd;
        memcpy(prev, shape, sizeof prev);
        if (!gx_broadcast_shape(nprev, prev, v->ndim, v->shape, nd, shape)) {
            char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "%s: shapes %s and %s are not broadcastable", op,
                                 gx_shape_str(nprev, prev, sa, sizeof sa),
                                 gx_shape_str(v->ndim, v->shape, sb, sizeof sb));
        }
    }
    return GX_OK;
}

/* Binary and variadic ops: every input present, of one dtype in mask; the
 * output is their broadcast. */
static int s_infer_nary(gx_infer *ic, gx_op op, unsigned mask)
{
    const char *name = gx_op_name(op);
    int rc;
    for (int i = 0; i < ic->n_in; i++) {
        if ((rc = s_need_dtype(ic, name, i, mask)) < 0)
            return rc;
        if (ic->in[i].dtype != ic->in[0].dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: input %d is %s but input 0 is %s", name, i,
                                 s_dtname(ic->in[i].dtype), s_dtname(ic->in[0].dtype));
    }
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if ((rc = s_broadcast_inputs(ic, name, 0, &nd, shape)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, nd, shape);
    return GX_OK;
}

/* Pow: the base's dtype (T) and the exponent's (T1) may differ; the output
 * is T. */
static int s_infer_pow(gx_infer *ic)
{
    int rc, nd;
    int64_t shape[GX_MAX_DIMS];
    if ((rc = s_need_dtype(ic, "Pow", 0, S_POW_BASE)) < 0 ||
        (rc = s_need_dtype(ic, "Pow", 1, S_NUM)) < 0 ||
        (rc = s_broadcast_inputs(ic, "Pow", 0, &nd, shape)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, nd, shape);
    return GX_OK;
}

/* Mod: fmod=1 is C's fmod / %, sign of the dividend; fmod=0 is Python's %,
 * sign of the divisor, defined for integers only. */
static int s_infer_mod(gx_infer *ic)
{
    const int64_t fmod = ic->attr[GX_MOD_FMOD].i;
    int rc = s_infer_nary(ic, GX_OP_MOD, S_NUM);
    if (rc < 0)
        return rc;
    if (fmod != 0 && fmod != 1)
        return gx_infer_errf(ic, GX_EATTR, "Mod: fmod must be 0 or 1, got %lld", (long long)fmod);
    if (fmod == 0 && (S_FLOAT >> ic->in[0].dtype & 1))
        return gx_infer_errf(ic, GX_EATTR, "Mod: %s inputs need fmod=1 (fmod=0 is for integers)",
                             s_dtname(ic->in[0].dtype));
    return GX_OK;
}

/* PRelu: slope broadcasts to X (unidirectionally); the output is X's shape. */
static int s_infer_prelu(gx_infer *ic)
{
    int rc = s_infer_nary(ic, GX_OP_PRELU, S_NUM);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0], *y = &ic->out[0];
    if (y->ndim != x->ndim || memcmp(y->shape, x->shape, (size_t)x->ndim * sizeof x->shape[0])) {
        char sx[GX_SHAPE_STRLEN], ss[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "PRelu: slope %s is not unidirectionally broadcastable to X %s",
                             gx_shape_str(ic->in[1].ndim, ic->in[1].shape, ss, sizeof ss),
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    return GX_OK;
}

static const gx_attr_spec s_mod_attrs[] = {
    [GX_MOD_FMOD] = {.name = "fmod", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_mod_attrs / sizeof s_mod_attrs[0] == GX_MOD_NATTRS, "Mod attrs");

/* Clip: opset 11+ takes min and max as optional scalar inputs of X's dtype,
 * opset 6 as float attributes; a bound given neither way is no bound. */
static const gx_attr_spec s_clip_attrs[] = {
    [GX_CLIP_MIN] = {.name = "min", .type = GX_ATTR_FLOAT},
    [GX_CLIP_MAX] = {.name = "max", .type = GX_ATTR_FLOAT},
};
_Static_assert(sizeof s_clip_attrs / sizeof s_clip_attrs[0] == GX_CLIP_NATTRS, "Clip attrs");

static int s_infer_clip(gx_infer *ic)
{
    int rc = s_infer_unary(ic, GX_OP_CLIP, S_NUM);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    for (int i = 1; i <= 2; i++) {
        const char *what = i == 1 ? "min" : "max";
        const bool attr = ic->attr[i == 1 ? GX_CLIP_MIN : GX_CLIP_MAX].set;
        const bool input = i < ic->n_in && ic->in[i].ndim >= 0;
        if (attr && input)
            return gx_infer_errf(ic, GX_EATTR, "Clip: %s is given both as attribute and as input",
                                 what);
        if (attr && !(S_FLOAT >> x->dtype & 1))
            return gx_infer_errf(ic, GX_EDTYPE,
                                 "Clip: the %s attribute (opset 6) needs a float input, not %s; "
                                 "give %s as input 1",
                                 what, s_dtname(x->dtype), what);
        if (!input)
            continue;
        const gx_view *b = &ic->in[i];
        if (b->dtype != x->dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "Clip: %s is %s but the input is %s", what,
                                 s_dtname(b->dtype), s_dtname(x->dtype));
        if (gx_view_numel(b) != 1) {
            char sb[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "Clip: %s must be a scalar, got %s", what,
                                 gx_shape_str(b->ndim, b->shape, sb, sizeof sb));
        }
    }
    return GX_OK;
}

/* The activations' attributes, defaults as in the ONNX specification. */
static const gx_attr_spec s_leakyrelu_attrs[] = {
    [GX_LEAKYRELU_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 0.01},
};
_Static_assert(sizeof s_leakyrelu_attrs / sizeof s_leakyrelu_attrs[0] == GX_LEAKYRELU_NATTRS,
               "LeakyRelu attrs");

static const gx_attr_spec s_elu_attrs[] = {
    [GX_ELU_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.0},
};
_Static_assert(sizeof s_elu_attrs / sizeof s_elu_attrs[0] == GX_ELU_NATTRS, "Elu attrs");

static const gx_attr_spec s_selu_attrs[] = {
    [GX_SELU_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.67326319217681884765625},
    [GX_SELU_GAMMA] = {.name = "gamma", .type = GX_ATTR_FLOAT, .def_f = 1.05070102214813232421875},
};
_Static_assert(sizeof s_selu_attrs / sizeof s_selu_attrs[0] == GX_SELU_NATTRS, "Selu attrs");

static const gx_attr_spec s_celu_attrs[] = {
    [GX_CELU_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.0},
};
_Static_assert(sizeof s_celu_attrs / sizeof s_celu_attrs[0] == GX_CELU_NATTRS, "Celu attrs");

static const gx_attr_spec s_hardsigmoid_attrs[] = {
    [GX_HARDSIGMOID_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 0.2},
    [GX_HARDSIGMOID_BETA] = {.name = "beta", .type = GX_ATTR_FLOAT, .def_f = 0.5},
};
_Static_assert(sizeof s_hardsigmoid_attrs / sizeof s_hardsigmoid_attrs[0] ==
                   GX_HARDSIGMOID_NATTRS,
               "HardSigmoid attrs");

static const gx_attr_spec s_thresholdedrelu_attrs[] = {
    [GX_THRESHOLDEDRELU_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.0},
};
_Static_assert(sizeof s_thresholdedrelu_attrs / sizeof s_thresholdedrelu_attrs[0] ==
                   GX_THRESHOLDEDRELU_NATTRS,
               "ThresholdedRelu attrs");

static const gx_attr_spec s_shrink_attrs[] = {
    [GX_SHRINK_BIAS] = {.name = "bias", .type = GX_ATTR_FLOAT, .def_f = 0.0},
    [GX_SHRINK_LAMBD] = {.name = "lambd", .type = GX_ATTR_FLOAT, .def_f = 0.5},
};
_Static_assert(sizeof s_shrink_attrs / sizeof s_shrink_attrs[0] == GX_SHRINK_NATTRS,
               "Shrink attrs");

static const gx_attr_spec s_gelu_attrs[] = {
    [GX_GELU_APPROXIMATE] = {.name = "approximate", .type = GX_ATTR_STRING, .def_s = "none"},
};
_Static_assert(sizeof s_gelu_attrs / sizeof s_gelu_attrs[0] == GX_GELU_NATTRS, "Gelu attrs");

static const gx_attr_spec s_swish_attrs[] = {
    [GX_SWISH_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.0},
};
_Static_assert(sizeof s_swish_attrs / sizeof s_swish_attrs[0] == GX_SWISH_NATTRS, "Swish attrs");

/* Celu divides by alpha. */
static int s_infer_celu(gx_infer *ic)
{
    if (ic->attr[GX_CELU_ALPHA].f == 0.0)
        return gx_infer_errf(ic, GX_EATTR, "Celu: alpha must not be 0");
    return s_infer_unary(ic, GX_OP_CELU, S_FLOAT);
}

static int s_infer_gelu(gx_infer *ic)
{
    const char *a = ic->attr[GX_GELU_APPROXIMATE].s;
    if (!a || (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0))
        return gx_infer_errf(ic, GX_EATTR, "Gelu: approximate is '%s', expected 'none' or 'tanh'",
                             a ? a : "");
    return s_infer_unary(ic, GX_OP_GELU, S_FLOAT);
}

/* flops_per_elem: a rough count per output element and per input beyond
 * the first (exp and friends are a range reduction plus a polynomial,
 * about 10; libm's inverse trigonometric functions about 30). */
static gx_cost s_cost_elementwise(const gx_infer *ic, double flops_per_elem)
{
    const int steps = ic->n_in > 1 ? ic->n_in - 1 : 1;
    return (gx_cost){.flops = (double)gx_view_numel(&ic->out[0]) * flops_per_elem * steps,
                     .bytes = gx_infer_io_bytes(ic)};
}

/* The schema object of op E: inputs MIN_IN..MAX_IN, attributes ATTRS
 * (NATTRS of them), inference INFER. */
#define S_SCHEMA(E, MIN_IN, MAX_IN, ATTRS, NATTRS, INFER, FLOPS)              \
    static gx_cost s_cost_##E(const gx_infer *ic) { return s_cost_elementwise(ic, FLOPS); } \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = MIN_IN, .max_in = MAX_IN, .min_out = 1, .max_out = 1,       \
        .attrs = ATTRS, .n_attrs = NATTRS, .flags = GX_OPF_ELEMENTWISE,       \
        .infer = INFER, .cost = s_cost_##E,                                   \
    };

/* One input of the dtypes DTS; attribute-less ops pass NULL, 0. */
#define S_UNARY(E, DTS, FLOPS, ATTRS, NATTRS)                                 \
    static int s_infer_##E(gx_infer *ic) { return s_infer_unary(ic, GX_OP_##E, DTS); } \
    S_SCHEMA(E, 1, 1, ATTRS, NATTRS, s_infer_##E, FLOPS)

/* MIN_IN..MAX_IN inputs of one dtype in DTS, broadcast together. */
#define S_NARY(E, MIN_IN, MAX_IN, DTS, FLOPS)                                 \
    static int s_infer_##E(gx_infer *ic) { return s_infer_nary(ic, GX_OP_##E, DTS); } \
    S_SCHEMA(E, MIN_IN, MAX_IN, NULL, 0, s_infer_##E, FLOPS)

S_NARY(ADD, 2, 2, S_NUM, 1)
S_NARY(SUB, 2, 2, S_NUM, 1)
S_NARY(MUL, 2, 2, S_NUM, 1)
S_NARY(DIV, 2, 2, S_NUM, 1)
S_NARY(MIN, 1, GX_MAX_OP_INPUTS, S_NUM, 1)
S_NARY(MAX, 1, GX_MAX_OP_INPUTS, S_NUM, 1)
S_NARY(SUM, 1, GX_MAX_OP_INPUTS, S_FLOAT, 1)
S_NARY(MEAN, 1, GX_MAX_OP_INPUTS, S_FLOAT, 1)
S_SCHEMA(POW, 2, 2, NULL, 0, s_infer_pow, 20)
S_SCHEMA(MOD, 2, 2, s_mod_attrs, GX_MOD_NATTRS, s_infer_mod, 4)
S_SCHEMA(PRELU, 2, 2, NULL, 0, s_infer_prelu, 2)
S_SCHEMA(CLIP, 1, 3, s_clip_attrs, GX_CLIP_NATTRS, s_infer_clip, 2)

S_UNARY(RELU, S_FLOAT | S_SINT, 1, NULL, 0)
S_UNARY(NEG, S_FLOAT | S_SINT, 1, NULL, 0)
S_UNARY(ABS, S_NUM, 1, NULL, 0)
S_UNARY(SIGN, S_NUM, 2, NULL, 0)
S_UNARY(SIGMOID, S_FLOAT, 12, NULL, 0)
S_UNARY(TANH, S_FLOAT, 14, NULL, 0)
S_UNARY(EXP, S_FLOAT, 10, NULL, 0)
S_UNARY(SQRT, S_FLOAT, 4, NULL, 0)
S_UNARY(RECIPROCAL, S_FLOAT, 1, NULL, 0)
S_UNARY(LOG, S_FLOAT, 14, NULL, 0)
S_UNARY(ERF, S_FLOAT, 20, NULL, 0)
S_UNARY(FLOOR, S_FLOAT, 5, NULL, 0)
S_UNARY(CEIL, S_FLOAT, 5, NULL, 0)
S_UNARY(ROUND, S_FLOAT, 4, NULL, 0)
S_UNARY(HARDSWISH, S_FLOAT, 5, NULL, 0)
S_UNARY(MISH, S_FLOAT, 40, NULL, 0)
S_UNARY(SWISH, S_FLOAT, 13, s_swish_attrs, GX_SWISH_NATTRS)
/* gexec's own: float32 rounded to the nearest float16 (ties to even,
 * overflow to infinity, NaN to float16's quiet NaN), kept in float32; the
 * widen pass puts it where a float16 graph's Casts round (docs/onnx.md) */
S_UNARY(ROUND_F16, S_DT(F32), 2, NULL, 0)
S_UNARY(SOFTPLUS, S_FLOAT, 28, NULL, 0)
S_UNARY(SOFTSIGN, S_FLOAT, 3, NULL, 0)
S_UNARY(SIN, S_FLOAT, 20, NULL, 0)
S_UNARY(COS, S_FLOAT, 20, NULL, 0)
S_UNARY(TAN, S_FLOAT, 24, NULL, 0)
S_UNARY(ASIN, S_FLOAT, 30, NULL, 0)
S_UNARY(ACOS, S_FLOAT, 30, NULL, 0)
S_UNARY(ATAN, S_FLOAT, 30, NULL, 0)
S_UNARY(SINH, S_FLOAT, 30, NULL, 0)
S_UNARY(COSH, S_FLOAT, 30, NULL, 0)
S_UNARY(ASINH, S_FLOAT, 30, NULL, 0)
S_UNARY(ACOSH, S_FLOAT, 30, NULL, 0)
S_UNARY(ATANH, S_FLOAT, 30, NULL, 0)
S_UNARY(LEAKYRELU, S_FLOAT, 2, s_leakyrelu_attrs, GX_LEAKYRELU_NATTRS)
S_UNARY(ELU, S_FLOAT, 12, s_elu_attrs, GX_ELU_NATTRS)
S_UNARY(SELU, S_FLOAT, 13, s_selu_attrs, GX_SELU_NATTRS)
S_UNARY(HARDSIGMOID, S_FLOAT, 4, s_hardsigmoid_attrs, GX_HARDSIGMOID_NATTRS)
S_UNARY(THRESHOLDEDRELU, S_FLOAT, 1, s_thresholdedrelu_attrs, GX_THRESHOLDEDRELU_NATTRS)
S_UNARY(SHRINK, S_FLOAT, 3, s_shrink_attrs, GX_SHRINK_NATTRS)
S_SCHEMA(CELU, 1, 1, s_celu_attrs, GX_CELU_NATTRS, s_infer_celu, 13)
S_SCHEMA(GELU, 1, 1, s_gelu_attrs, GX_GELU_NATTRS, s_infer_gelu, 30)
