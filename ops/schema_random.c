/*
 * Schemas of the random family (GX_OPS_RANDOM in ops/op.h): RandomUniform
 * and RandomNormal (shape from an attribute), their *Like forms (shape from
 * the input), Bernoulli and Multinomial. None is ever folded
 * (GX_OPF_NO_FOLD): each run of the step draws (ops/cpu/random.c says how,
 * and what a seed makes deterministic). The float outputs are float16,
 * bfloat16, float32 or float64; dtype attributes are ONNX type codes.
 */
#include <math.h>

#include "ops/schema.h"

#define S_FLOATS                                                                             \
    (GX_DT_BIT(GX_F16) | GX_DT_BIT(GX_BF16) | GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64))

/* The output dtype: the dtype attribute's (an ONNX code), else def; it must
 * be in set. */
static int s_out_dtype(gx_infer *ic, const char *op, const gx_attrval *a, gx_dtype def,
                       unsigned set, const char *expected, gx_dtype *dt)
{
    *dt = def;
    if (a->set && !gx_onnx_dtype(a->i, dt))
        return gx_infer_errf(ic, GX_EATTR, "%s: dtype=%lld is not a dtype gexec has", op,
                             (long long)a->i);
    if ((unsigned)*dt >= GX_DTYPE_COUNT || !(set & GX_DT_BIT(*dt)))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: the output would be %s; %s", op,
                             gx_dtype_name(*dt) ? gx_dtype_name(*dt) : "no dtype", expected);
    return GX_OK;
}

/* Both distributions' parameters must be finite (a scale may be 0). */
static int s_check_params(gx_infer *ic, const char *op, const char *a, const char *b)
{
    double pa = ic->attr[GX_RANDOM_A].f, pb = ic->attr[GX_RANDOM_B].f;
    if (!isfinite(pa) || !isfinite(pb))
        return gx_infer_errf(ic, GX_EATTR, "%s: %s=%g and %s=%g must be finite", op, a, pa, b,
                             pb);
    return GX_OK;
}

/* ---- RandomUniform, RandomNormal: the shape attribute ---- */

#define S_RANDOM_ATTRS(a, da, b, db)                                                         \
    [GX_RANDOM_DTYPE] = {.name = "dtype", .type = GX_ATTR_INT, .def_i = 1},                  \
    [GX_RANDOM_A] = {.name = a, .type = GX_ATTR_FLOAT, .def_f = da},                         \
    [GX_RANDOM_B] = {.name = b, .type = GX_ATTR_FLOAT, .def_f = db},                         \
    [GX_RANDOM_SEED] = {.name = "seed", .type = GX_ATTR_FLOAT}

static const gx_attr_spec s_uniform_attrs[] = {
    S_RANDOM_ATTRS("low", 0.0, "high", 1.0),
    [GX_RANDOM_SHAPE] = {.name = "shape", .type = GX_ATTR_INTS, .required = true},
};
static const gx_attr_spec s_normal_attrs[] = {
    S_RANDOM_ATTRS("mean", 0.0, "scale", 1.0),
    [GX_RANDOM_SHAPE] = {.name = "shape", .type = GX_ATTR_INTS, .required = true},
};
static const gx_attr_spec s_uniform_like_attrs[] = {S_RANDOM_ATTRS("low", 0.0, "high", 1.0)};
static const gx_attr_spec s_normal_like_attrs[] = {S_RANDOM_ATTRS("mean", 0.0, "scale", 1.0)};
_Static_assert(sizeof s_uniform_attrs / sizeof s_uniform_attrs[0] == GX_RANDOM_NATTRS &&
                   sizeof s_normal_attrs / sizeof s_normal_attrs[0] == GX_RANDOM_NATTRS &&
                   sizeof s_uniform_like_attrs / sizeof s_uniform_like_attrs[0] ==
                       GX_RANDOM_LIKE_NATTRS &&
                   sizeof s_normal_like_attrs / sizeof s_normal_like_attrs[0] ==
                       GX_RANDOM_LIKE_NATTRS,
               "Random* attrs");

/* op's parameters (a, b) and output: of shape the attribute's (like < 0)
 * or input 0's, of the dtype attribute's (default float32, or the input's
 * with like). */
static int s_infer_random(gx_infer *ic, const char *op, const char *a, const char *b, bool like)
{
    int rc;
    if ((rc = s_check_params(ic, op, a, b)) < 0)
        return rc;
    if (!like) {
        const gx_attrval *sh = &ic->attr[GX_RANDOM_SHAPE];
        if (sh->n > GX_MAX_DIMS)
            return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: shape has %zu dims; at most %d", op,
                                 sh->n, GX_MAX_DIMS);
        for (size_t i = 0; i < sh->n; i++)
            if (sh->ints[i] < 0)
                return gx_infer_errf(ic, GX_EATTR, "%s: shape[%zu] is %lld", op, i,
                                     (long long)sh->ints[i]);
        gx_dtype dt;
        if ((rc = s_out_dtype(ic, op, &ic->attr[GX_RANDOM_DTYPE], GX_F32, S_FLOATS,
                              "a float dtype is needed", &dt)) < 0)
            return rc;
        gx_view_set(&ic->out[0], dt, (int)sh->n, sh->ints);
        return GX_OK;
    }
    if ((rc = gx_infer_need(ic, op, 0)) < 0)
        return rc;
    gx_dtype dt;
    if ((rc = s_out_dtype(ic, op, &ic->attr[GX_RANDOM_DTYPE], ic->in[0].dtype, S_FLOATS,
                          "a float dtype is needed (the dtype attribute, or a float input)",
                          &dt)) < 0)
        return rc;
    gx_view_set(&ic->out[0], dt, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

static int s_infer_uniform(gx_infer *ic)
{
    return s_infer_random(ic, "RandomUniform", "low", "high", false);
}

static int s_infer_normal(gx_infer *ic)
{
    return s_infer_random(ic, "RandomNormal", "mean", "scale", false);
}

static int s_infer_uniform_like(gx_infer *ic)
{
    return s_infer_random(ic, "RandomUniformLike", "low", "high", true);
}

static int s_infer_normal_like(gx_infer *ic)
{
    return s_infer_random(ic, "RandomNormalLike", "mean", "scale", true);
}

/* A few operations per element drawn, the output written (a *Like's input
 * is only looked at for its shape). */
static gx_cost s_cost_draw(const gx_infer *ic)
{
    return (gx_cost){.flops = 20.0 * (double)ic->out[0].numel,
                     .bytes = gx_view_bytes(&ic->out[0])};
}

const gx_op_schema gx_schema_RANDOM_UNIFORM = {
    .min_in = 0, .max_in = 0, .min_out = 1, .max_out = 1,
    .attrs = s_uniform_attrs, .n_attrs = GX_RANDOM_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_uniform, .cost = s_cost_draw,
};

const gx_op_schema gx_schema_RANDOM_NORMAL = {
    .min_in = 0, .max_in = 0, .min_out = 1, .max_out = 1,
    .attrs = s_normal_attrs, .n_attrs = GX_RANDOM_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_normal, .cost = s_cost_draw,
};

const gx_op_schema gx_schema_RANDOM_UNIFORM_LIKE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_uniform_like_attrs, .n_attrs = GX_RANDOM_LIKE_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_uniform_like, .cost = s_cost_draw,
};

const gx_op_schema gx_schema_RANDOM_NORMAL_LIKE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_normal_like_attrs, .n_attrs = GX_RANDOM_LIKE_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_normal_like, .cost = s_cost_draw,
};

/* ---- Bernoulli ---- */

static const gx_attr_spec s_bernoulli_attrs[] = {
    [GX_BERNOULLI_DTYPE] = {.name = "dtype", .type = GX_ATTR_INT},
    [GX_BERNOULLI_SEED] = {.name = "seed", .type = GX_ATTR_FLOAT},
};
_Static_assert(sizeof s_bernoulli_attrs / sizeof s_bernoulli_attrs[0] == GX_BERNOULLI_NATTRS,
               "Bernoulli attrs");

/* Bernoulli: 1 with the input's probability, else 0, per element, in the
 * dtype attribute's type (any number or bool) or the input's. */
static int s_infer_bernoulli(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, "Bernoulli", 0, S_FLOATS)) < 0)
        return rc;
    const unsigned plain = (1u << GX_DTYPE_COUNT) - 1 - GX_DT_BIT(GX_STRING);
    gx_dtype dt;
    if ((rc = s_out_dtype(ic, "Bernoulli", &ic->attr[GX_BERNOULLI_DTYPE], ic->in[0].dtype, plain,
                          "a number or bool dtype is needed", &dt)) < 0)
        return rc;
    gx_view_set(&ic->out[0], dt, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_BERNOULLI = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_bernoulli_attrs, .n_attrs = GX_BERNOULLI_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_bernoulli, .cost = s_cost_draw,
};

/* ---- Multinomial ---- */

static const gx_attr_spec s_multinomial_attrs[] = {
    [GX_MULTINOMIAL_DTYPE] = {.name = "dtype", .type = GX_ATTR_INT, .def_i = 6},
    [GX_MULTINOMIAL_SAMPLE_SIZE] = {.name = "sample_size", .type = GX_ATTR_INT, .def_i = 1},
    [GX_MULTINOMIAL_SEED] = {.name = "seed", .type = GX_ATTR_FLOAT},
};
_Static_assert(sizeof s_multinomial_attrs / sizeof s_multinomial_attrs[0] ==
                   GX_MULTINOMIAL_NATTRS,
               "Multinomial attrs");

/* Multinomial: input [batch, classes] of unnormalised log-probabilities;
 * output [batch, sample_size] class indices, int32 (dtype 6) or int64 (7). */
static int s_infer_multinomial(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, "Multinomial", 0, S_FLOATS)) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim != 2 || x->shape[1] < 1)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "Multinomial: input has rank %d; [batch, classes] with at least "
                             "one class is needed",
                             x->ndim);
    const int64_t n = ic->attr[GX_MULTINOMIAL_SAMPLE_SIZE].i;
    if (n < 1)
        return gx_infer_errf(ic, GX_EATTR, "Multinomial: sample_size=%lld; at least 1",
                             (long long)n);
    gx_dtype dt;
    if ((rc = s_out_dtype(ic, "Multinomial", &ic->attr[GX_MULTINOMIAL_DTYPE], GX_I32,
                          GX_DT_BIT(GX_I32) | GX_DT_BIT(GX_I64),
                          "int32 (dtype 6) or int64 (7) is needed", &dt)) < 0)
        return rc;
    gx_view_set(&ic->out[0], dt, 2, (int64_t[]){x->shape[0], n});
    return GX_OK;
}

/* Each sample walks its row's classes; each row is read once for its sum. */
static gx_cost s_cost_multinomial(const gx_infer *ic)
{
    const double classes = (double)ic->in[0].shape[1];
    return (gx_cost){.flops = (double)ic->out[0].numel * classes * 2.0 +
                              (double)ic->in[0].numel * 20.0,
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_MULTINOMIAL = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_multinomial_attrs, .n_attrs = GX_MULTINOMIAL_NATTRS,
    .flags = GX_OPF_NO_FOLD, .infer = s_infer_multinomial, .cost = s_cost_multinomial,
};
