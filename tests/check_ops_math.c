/*
 * Op tests of the math family (GX_OPS_MATH in ops/op.h): every op against a
 * naive reference in double / 64-bit integers, written from the ONNX
 * specification's formulas rather than the kernels' rewrites, for every
 * dtype it takes (and a refusal for every other); each run repeated as nth
 * = 3 and 7 shares, which must give the same bytes and write each byte
 * once; hand values from the specification's examples; the vectorised
 * float32 functions against libm; inference errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

/* ---- dtypes ---- */

#define DT(d) (1u << GX_##d)
#define FLOATS (DT(F32) | DT(F16) | DT(BF16) | DT(F64))
#define SINTS (DT(I8) | DT(I16) | DT(I32) | DT(I64))
#define UINTS (DT(U8) | DT(U16) | DT(U32) | DT(U64))
#define NUMS (FLOATS | SINTS | UINTS)

static bool s_is_float(gx_dtype dt)
{
    return FLOATS >> dt & 1;
}

static bool s_is_unsigned(gx_dtype dt)
{
    return (UINTS | DT(BOOL)) >> dt & 1;
}

/* Element i of v as a double (floats) or as int64 bits (integers:
 * sign-extended, or zero-extended for unsigned). */
static double s_getf(const gx_view *v, int64_t i)
{
    const void *p = v->data;
    if (v->dtype == GX_F32)
        return ((const float *)p)[i];
    if (v->dtype == GX_F16)
        return gx_f16_to_f32(((const uint16_t *)p)[i]);
    if (v->dtype == GX_BF16)
        return gx_bf16_to_f32(((const uint16_t *)p)[i]);
    ck_assert_int_eq(v->dtype, GX_F64);
    return ((const double *)p)[i];
}

static int64_t s_geti(const gx_view *v, int64_t i)
{
    const size_t es = gx_dtype_size(v->dtype);
    uint64_t u = 0;
    ck_assert(!s_is_float(v->dtype));
    memcpy(&u, (const char *)v->data + (size_t)i * es, es); /* little-endian */
    if (!s_is_unsigned(v->dtype) && es < 8 && (u >> (8 * es - 1) & 1))
        u |= ~0ull << (8 * es); /* sign-extend */
    return (int64_t)u;
}

/* Stores x rounded to v's float dtype / the low bits of x into v's integer
 * dtype. */
static void s_setf(gx_view *v, int64_t i, double x)
{
    void *p = v->data;
    if (v->dtype == GX_F32)
        ((float *)p)[i] = (float)x;
    else if (v->dtype == GX_F16)
        ((uint16_t *)p)[i] = gx_f32_to_f16((float)x);
    else if (v->dtype == GX_BF16)
        ((uint16_t *)p)[i] = gx_f32_to_bf16((float)x);
    else if (v->dtype == GX_F64)
        ((double *)p)[i] = x;
    else
        ck_abort_msg("s_setf of %s", gx_dtype_name(v->dtype));
}

static void s_seti(gx_view *v, int64_t i, uint64_t x)
{
    const size_t es = gx_dtype_size(v->dtype);
    ck_assert(!s_is_float(v->dtype));
    memcpy((char *)v->data + (size_t)i * es, &x, es); /* little-endian: the low bytes */
}

/* A view of dt with values uniform in [lo, hi) (integers: truncated;
 * 0.5 steps for the half-way cases of float16 and Round). */
static gx_view s_randv(gx_dtype dt, double lo, double hi, int nd, const int64_t *shape)
{
    gx_view v = ot_view(dt, NULL, nd, shape);
    v.data = ot_alloc((size_t)v.numel * gx_dtype_size(dt));
    for (int64_t i = 0; i < v.numel; i++) {
        const double x = lo + (hi - lo) * (ot_randf() + 2.0) / 4.0;
        if (s_is_float(dt))
            s_setf(&v, i, x);
        else
            s_seti(&v, i, (uint64_t)(int64_t)x);
    }
    return v;
}

/* A scalar (rank 0) of dt holding x. */
static gx_view s_scalar(gx_dtype dt, double x)
{
    gx_view v = ot_view(dt, ot_alloc(8), 0, NULL);
    if (s_is_float(dt))
        s_setf(&v, 0, x);
    else
        s_seti(&v, 0, (uint64_t)(int64_t)x);
    return v;
}

/* ---- the reference ---- */

/* Flat index into in (numpy-broadcast to y's shape) of y's element i. */
static int64_t s_src(const gx_view *y, const gx_view *in, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int d = y->ndim - 1, di = in->ndim - 1; di >= 0; d--, di--) {
        const int64_t idx = i % y->shape[d];
        i /= y->shape[d];
        off += (in->shape[di] == 1 ? 0 : idx) * stride;
        stride *= in->shape[di];
    }
    return off;
}

static double s_attr(const gx_attrval *av, int i)
{
    return av[i].f;
}

/* The float ops on double arguments x[0..n), as the specification writes
 * them (ifs, not a switch: the op list grows with other families). */
static double s_ref_float(gx_op op, const gx_attrval *av, int n, const double *x)
{
    const double v = x[0], z = n > 1 ? x[1] : 0;
    if (op == GX_OP_ADD)
        return v + z;
    if (op == GX_OP_SUB)
        return v - z;
    if (op == GX_OP_MUL)
        return v * z;
    if (op == GX_OP_DIV)
        return v / z;
    if (op == GX_OP_POW)
        return pow(v, z);
    if (op == GX_OP_MOD)
        return fmod(v, z);
    if (op == GX_OP_PRELU)
        return v < 0 ? z * v : v;
    if (op == GX_OP_MIN || op == GX_OP_MAX) {
        double m = v;
        for (int i = 1; i < n; i++)
            m = isnan(m) || isnan(x[i]) ? NAN : op == GX_OP_MIN ? fmin(m, x[i]) : fmax(m, x[i]);
        return m;
    }
    if (op == GX_OP_SUM || op == GX_OP_MEAN) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += x[i];
        return op == GX_OP_SUM ? s : s / n;
    }
    if (op == GX_OP_CLIP) {
        const double lo = n > 1 && !isnan(x[1]) ? x[1] : -INFINITY;
        const double hi = n > 2 && !isnan(x[2]) ? x[2] : INFINITY;
        return isnan(v) ? v : fmin(fmax(v, lo), hi);
    }
    if (op == GX_OP_SELU) {
        const double a = s_attr(av, GX_SELU_ALPHA), g = s_attr(av, GX_SELU_GAMMA);
        return v > 0 ? g * v : g * a * expm1(v); /* alpha e^x - alpha */
    }
    if (op == GX_OP_CELU) {
        const double a = s_attr(av, GX_CELU_ALPHA);
        return fmax(0, v) + fmin(0, a * expm1(v / a));
    }
    if (op == GX_OP_HARDSIGMOID)
        return fmax(0, fmin(1, s_attr(av, GX_HARDSIGMOID_ALPHA) * v +
                                   s_attr(av, GX_HARDSIGMOID_BETA)));
    if (op == GX_OP_SHRINK) {
        const double b = s_attr(av, GX_SHRINK_BIAS), l = s_attr(av, GX_SHRINK_LAMBD);
        return v < -l ? v + b : v > l ? v - b : 0;
    }
    if (op == GX_OP_GELU) {
        if (strcmp(av[GX_GELU_APPROXIMATE].s, "tanh") == 0)
            return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        return 0.5 * v * erfc(-v / sqrt(2)); /* 1 + erf(x / sqrt 2), without cancelling */
    }
    const struct {
        gx_op op;
        double y;
    } unary[] = {
        {GX_OP_RELU, v < 0 ? 0 : v},
        {GX_OP_SIGMOID, 1 / (1 + exp(-v))},
        {GX_OP_TANH, tanh(v)},
        {GX_OP_EXP, exp(v)},
        {GX_OP_NEG, -v},
        {GX_OP_ABS, fabs(v)},
        {GX_OP_SIGN, v > 0 ? 1 : v < 0 ? -1 : v},
        {GX_OP_SQRT, sqrt(v)},
        {GX_OP_RECIPROCAL, 1 / v},
        {GX_OP_LOG, log(v)},
        {GX_OP_ERF, erf(v)},
        {GX_OP_FLOOR, floor(v)},
        {GX_OP_CEIL, ceil(v)},
        {GX_OP_ROUND, nearbyint(v)},
        {GX_OP_LEAKYRELU, v < 0 ? s_attr(av, GX_LEAKYRELU_ALPHA) * v : v},
        {GX_OP_ELU, v < 0 ? s_attr(av, GX_ELU_ALPHA) * expm1(v) : v}, /* e^x - 1 */
        {GX_OP_HARDSWISH, v * fmax(0, fmin(1, v / 6 + 0.5))},
        {GX_OP_SOFTPLUS, v > 0 ? v + log1p(exp(-v)) : log1p(exp(v))}, /* ln(e^x + 1) */
        {GX_OP_SOFTSIGN, v / (1 + fabs(v))},
        {GX_OP_THRESHOLDEDRELU, v > s_attr(av, GX_THRESHOLDEDRELU_ALPHA) ? v : 0},
        {GX_OP_SIN, sin(v)},
        {GX_OP_COS, cos(v)},
        {GX_OP_TAN, tan(v)},
        {GX_OP_ASIN, asin(v)},
        {GX_OP_ACOS, acos(v)},
        {GX_OP_ATAN, atan(v)},
        {GX_OP_SINH, sinh(v)},
        {GX_OP_COSH, cosh(v)},
        {GX_OP_ASINH, asinh(v)},
        {GX_OP_ACOSH, acosh(v)},
        {GX_OP_ATANH, atanh(v)},
    };
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        if (unary[i].op == op)
            return unary[i].y;
    }
    ck_abort_msg("no float reference for %s", gx_op_name(op));
    return 0;
}

/* The integer ops on int64 arguments (unsigned ones zero-extended), in
 * uint64 where they wrap; the caller keeps the low bits. */
static uint64_t s_ref_int(gx_op op, const gx_attrval *av, bool uns, int n, const int64_t *x)
{
    const int64_t v = x[0], z = n > 1 ? x[1] : 0;
    const uint64_t uv = (uint64_t)v, uz = (uint64_t)z;
#define LT(a, b) (uns ? (uint64_t)(a) < (uint64_t)(b) : (a) < (b))
    if (op == GX_OP_ADD)
        return uv + uz;
    if (op == GX_OP_SUB)
        return uv - uz;
    if (op == GX_OP_MUL)
        return uv * uz;
    if ((op == GX_OP_DIV || op == GX_OP_MOD) && z == 0)
        return 0;
    if (op == GX_OP_DIV)
        return uns ? uv / uz : z == -1 ? 0 - uv : (uint64_t)(v / z);
    if (op == GX_OP_MOD) {
        if (uns)
            return uv % uz;
        const int64_t r = z == -1 ? 0 : v % z;
        if (av[GX_MOD_FMOD].i || r == 0 || (r < 0) == (z < 0))
            return (uint64_t)r;
        return (uint64_t)r + uz;
    }
    if (op == GX_OP_POW) {
        if (z < 0)
            return v == 1 ? 1 : v == -1 ? (z % 2 ? (uint64_t)-1 : 1) : 0;
        uint64_t r = 1;
        for (int64_t i = 0; i < z; i++)
            r *= uv;
        return r;
    }
    if (op == GX_OP_PRELU)
        return !uns && v < 0 ? uz * uv : uv;
    if (op == GX_OP_MIN || op == GX_OP_MAX) {
        int64_t m = v;
        for (int i = 1; i < n; i++)
            m = (op == GX_OP_MIN) == LT(x[i], m) ? x[i] : m;
        return (uint64_t)m;
    }
    if (op == GX_OP_CLIP) {
        int64_t r = v;
        if (n > 1 && LT(r, x[1]))
            r = x[1];
        if (n > 2 && LT(x[2], r))
            r = x[2];
        return (uint64_t)r;
    }
    if (op == GX_OP_RELU)
        return v < 0 ? 0 : uv;
    if (op == GX_OP_NEG)
        return 0 - uv;
    if (op == GX_OP_ABS)
        return !uns && v < 0 ? 0 - uv : uv;
    if (op == GX_OP_SIGN)
        return uns ? v != 0 : (uint64_t)((v > 0) - (v < 0));
#undef LT
    ck_abort_msg("no integer reference for %s", gx_op_name(op));
    return 0;
}

/* ref (shape and dtype set, data allocated) = op(in), elementwise with
 * broadcasting. An omitted Clip bound reads as NaN / is left out. */
static void s_reference(gx_op op, const gx_attrval *av, int n_in, const gx_view *in, gx_view *ref)
{
    for (int64_t i = 0; i < ref->numel; i++) {
        double xf[GX_MAX_OP_INPUTS] = {0};
        int64_t xi[GX_MAX_OP_INPUTS] = {0};
        for (int j = 0; j < n_in; j++) {
            if (in[j].ndim < 0) { /* Clip without min: no lower bound */
                xf[j] = NAN;
                xi[j] = s_is_unsigned(in[0].dtype) ? 0 : INT64_MIN;
                continue;
            }
            const int64_t s = s_src(ref, &in[j], i);
            if (s_is_float(in[j].dtype)) {
                xf[j] = s_getf(&in[j], s);
                xi[j] = 0;
            } else {
                xi[j] = s_geti(&in[j], s);
                xf[j] = s_is_unsigned(in[j].dtype) ? (double)(uint64_t)xi[j] : (double)xi[j];
            }
        }
        if (op == GX_OP_POW && !s_is_float(ref->dtype) && s_is_float(in[1].dtype)) {
            s_seti(ref, i, (uint64_t)(int64_t)trunc(pow(xf[0], xf[1]))); /* int ^ float */
        } else if (s_is_float(ref->dtype)) {
            s_setf(ref, i, s_ref_float(op, av, n_in, xf));
        } else {
            s_seti(ref, i, s_ref_int(op, av, s_is_unsigned(ref->dtype), n_in, xi));
        }
    }
}

/* Tolerances for the output dtype, given the relative ones for float32
 * and float64 (0: exact) and the absolute one for float32: float16 and
 * bfloat16 round a float32 result, so an inexact op may be one of their
 * ulps off, and absolute errors scale with the dtype's epsilon. */
static void s_tol_for(gx_dtype dt, double rtol32, double rtol64, double atol32, double *rtol,
                      double *atol)
{
    *rtol = *atol = 0; /* integers: exact */
    if (dt == GX_F32) {
        *rtol = rtol32;
        *atol = atol32;
    } else if (dt == GX_F64) {
        *rtol = rtol64;
        *atol = atol32 * 0x1p-29;
    } else if (dt == GX_F16) {
        *rtol = rtol32 > 0 ? fmax(rtol32, 0x1p-10) : 0;
        *atol = atol32 * 0x1p13;
    } else if (dt == GX_BF16) {
        *rtol = rtol32 > 0 ? fmax(rtol32, 0x1p-7) : 0;
        *atol = atol32 * 0x1p16;
    }
}

static void s_expect_close(gx_op op, const gx_view *got, const gx_view *want, double rtol,
                           double atol)
{
    ck_assert_int_eq(got->dtype, want->dtype);
    ot_check_shape(got, want->ndim, want->shape);
    if (!s_is_float(got->dtype)) {
        const size_t es = gx_dtype_size(got->dtype);
        for (int64_t i = 0; i < got->numel; i++)
            ck_assert_msg(memcmp((char *)got->data + i * (int64_t)es,
                                 (char *)want->data + i * (int64_t)es, es) == 0,
                          "%s %s: element %lld is %lld, want %lld", gx_op_name(op),
                          gx_dtype_name(got->dtype), (long long)i, (long long)s_geti(got, i),
                          (long long)s_geti(want, i));
        return;
    }
    for (int64_t i = 0; i < got->numel; i++) {
        const double g = s_getf(got, i), w = s_getf(want, i);
        ck_assert_msg(g == w || (isnan(g) && isnan(w)) || fabs(g - w) <= atol + rtol * fabs(w),
                      "%s %s: element %lld is %.9g, want %.9g (rtol %g, atol %g)", gx_op_name(op),
                      gx_dtype_name(got->dtype), (long long)i, g, w, rtol, atol);
    }
}

/* Runs op with nth = 1 against the reference (tolerances as for
 * s_tol_for), then with nth = 3 and 7, which must give the same bytes
 * and tile the output. Returns the output. */
static gx_view s_check(gx_op op, const gx_node *node, int n_in, const gx_view *in, double rtol32,
                       double rtol64, double atol32)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y, ref, yn;
    char err[ERRLEN];
    int rc = ot_run(op, node, n_in, in, 1, av, &y, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    ref = y;
    ref.data = ot_alloc((size_t)y.numel * gx_dtype_size(y.dtype));
    s_reference(op, av, n_in, in, &ref);
    double rtol, atol;
    s_tol_for(y.dtype, rtol32, rtol64, atol32, &rtol, &atol);
    s_expect_close(op, &y, &ref, rtol, atol);
    for (int nth = 3; nth <= 7; nth += 4) {
        ck_assert_int_eq(ot_run(op, node, n_in, in, nth, av, &yn, err), GX_OK);
        ck_assert_msg(memcmp(yn.data, y.data, (size_t)y.numel * gx_dtype_size(y.dtype)) == 0,
                      "%s %s: nth=%d differs from nth=1", gx_op_name(op),
                      gx_dtype_name(y.dtype), nth);
        ot_check_shares(op, av, n_in, in, 1, &y, nth);
    }
    return y;
}

/* ---- every op, every dtype ---- */

typedef enum { UNARY, BINARY, VARIADIC, PRELU, CLIP } s_kind;

typedef struct s_case {
    gx_op op;
    const gx_node *node;
    s_kind kind;
    unsigned dtypes;   /* the dtypes it takes; the others are refused */
    double lo, hi;     /* input values */
    double rtol, rtol64, atol;
} s_case;

static const s_case s_cases[] = {
    {GX_OP_ADD, NULL, BINARY, NUMS, -50, 50, 0, 0, 0},
    {GX_OP_SUB, NULL, BINARY, NUMS, -50, 50, 0, 0, 0},
    {GX_OP_MUL, NULL, BINARY, NUMS, -50, 50, 0, 0, 0},
    {GX_OP_DIV, NULL, BINARY, NUMS, -9, 9, 0, 0, 0},
    {GX_OP_MOD, NULL, BINARY, SINTS | UINTS, -9, 9, 0, 0, 0},
    {GX_OP_PRELU, NULL, PRELU, NUMS, -9, 9, 0, 0, 0},
    {GX_OP_MIN, NULL, VARIADIC, NUMS, -50, 50, 0, 0, 0},
    {GX_OP_MAX, NULL, VARIADIC, NUMS, -50, 50, 0, 0, 0},
    {GX_OP_SUM, NULL, VARIADIC, FLOATS, -50, 50, 1e-6, 0, 3e-5},
    {GX_OP_MEAN, NULL, VARIADIC, FLOATS, -50, 50, 1e-6, 1e-15, 3e-5},
    {GX_OP_CLIP, NULL, CLIP, NUMS, -5, 5, 0, 0, 0},
    {GX_OP_RELU, NULL, UNARY, FLOATS | SINTS, -9, 9, 0, 0, 0},
    {GX_OP_NEG, NULL, UNARY, FLOATS | SINTS, -9, 9, 0, 0, 0},
    {GX_OP_ABS, NULL, UNARY, NUMS, -9, 9, 0, 0, 0},
    {GX_OP_SIGN, NULL, UNARY, NUMS, -9, 9, 0, 0, 0},
    {GX_OP_SIGMOID, NULL, UNARY, FLOATS, -20, 20, 3e-7, 1e-15, 0},
    {GX_OP_TANH, NULL, UNARY, FLOATS, -10, 10, 3e-7, 0, 0},
    {GX_OP_EXP, NULL, UNARY, FLOATS, -20, 20, 3e-7, 0, 0},
    {GX_OP_SQRT, NULL, UNARY, FLOATS, 0, 100, 0, 0, 0},
    {GX_OP_RECIPROCAL, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_LOG, NULL, UNARY, FLOATS, 1e-3, 100, 3e-7, 0, 0},
    {GX_OP_ERF, NULL, UNARY, FLOATS, -5, 5, 5e-6, 0, 0},
    {GX_OP_FLOOR, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_CEIL, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_ROUND, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_SIN, NULL, UNARY, FLOATS, -20, 20, 1e-6, 0, 1e-7},
    {GX_OP_COS, NULL, UNARY, FLOATS, -20, 20, 1e-6, 0, 1e-7},
    {GX_OP_TAN, NULL, UNARY, FLOATS, -20, 20, 1e-6, 0, 1e-7},
    {GX_OP_ASIN, NULL, UNARY, FLOATS, -0.999, 0.999, 3e-7, 0, 0},
    {GX_OP_ACOS, NULL, UNARY, FLOATS, -0.999, 0.999, 3e-7, 0, 0},
    {GX_OP_ATAN, NULL, UNARY, FLOATS, -9, 9, 3e-7, 0, 0},
    {GX_OP_SINH, NULL, UNARY, FLOATS, -9, 9, 3e-7, 0, 0},
    {GX_OP_COSH, NULL, UNARY, FLOATS, -9, 9, 3e-7, 0, 0},
    {GX_OP_ASINH, NULL, UNARY, FLOATS, -9, 9, 3e-7, 0, 0},
    {GX_OP_ACOSH, NULL, UNARY, FLOATS, 1, 9, 3e-7, 0, 0},
    {GX_OP_ATANH, NULL, UNARY, FLOATS, -0.999, 0.999, 3e-7, 0, 0},
    {GX_OP_SOFTPLUS, NULL, UNARY, FLOATS, -20, 20, 1e-6, 1e-10, 0},
    {GX_OP_SOFTSIGN, NULL, UNARY, FLOATS, -9, 9, 2e-7, 0, 0},
    {GX_OP_HARDSWISH, NULL, UNARY, FLOATS, -5, 5, 3e-7, 1e-15, 1e-6},
    {GX_OP_LEAKYRELU, NULL, UNARY, FLOATS, -9, 9, 2e-7, 0, 0},
    {GX_OP_ELU, NULL, UNARY, FLOATS, -9, 9, 3e-7, 1e-15, 0},
    {GX_OP_SELU, NULL, UNARY, FLOATS, -9, 9, 3e-7, 1e-15, 0},
    {GX_OP_CELU, NULL, UNARY, FLOATS, -9, 9, 3e-7, 1e-15, 0},
    {GX_OP_HARDSIGMOID, NULL, UNARY, FLOATS, -5, 5, 3e-7, 1e-15, 1e-7},
    {GX_OP_THRESHOLDEDRELU, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_SHRINK, NULL, UNARY, FLOATS, -9, 9, 0, 0, 0},
    {GX_OP_GELU, NULL, UNARY, FLOATS, -9, 9, 2e-5, 1e-14, 1e-7},
};

/* The inputs of case c in dtype dt: unary [3,37]; binary [3,1,5] and
 * [4,1]; variadic [2,3,1], [3,4], [1]; PRelu [3,4,5] and [4,1]; Clip
 * [3,37] and the scalars lo/2, hi/3. Returns the input count. */
static int s_case_inputs(const s_case *c, gx_dtype dt, gx_view *in)
{
    const bool uns = s_is_unsigned(dt);
    const double lo = uns ? 0 : c->lo, hi = uns ? c->hi - c->lo : c->hi;
    switch (c->kind) {
    case UNARY:
        in[0] = s_randv(dt, lo, hi, SHAPE(3, 37));
        return 1;
    case BINARY:
        in[0] = s_randv(dt, lo, hi, SHAPE(3, 1, 5));
        in[1] = s_randv(dt, lo, hi, SHAPE(4, 1));
        return 2;
    case VARIADIC:
        in[0] = s_randv(dt, lo, hi, SHAPE(2, 3, 1));
        in[1] = s_randv(dt, lo, hi, SHAPE(3, 4));
        in[2] = s_randv(dt, lo, hi, SHAPE(1));
        return 3;
    case PRELU:
        in[0] = s_randv(dt, lo, hi, SHAPE(3, 4, 5));
        in[1] = s_randv(dt, lo, hi, SHAPE(4, 1));
        return 2;
    case CLIP:
        in[0] = s_randv(dt, lo, hi, SHAPE(3, 37));
        in[1] = s_scalar(dt, uns ? 2 : lo / 2);
        in[2] = s_scalar(dt, uns ? 6 : hi / 3);
        return 3;
    }
    return 0;
}

START_TEST(test_dtypes)
{
    const gx_dtype all[] = {GX_F32, GX_F16, GX_BF16, GX_F64, GX_I64, GX_I32, GX_I8,
                            GX_U8,  GX_BOOL, GX_I16, GX_U16, GX_U32, GX_U64};
    for (size_t ci = 0; ci < sizeof s_cases / sizeof s_cases[0]; ci++) {
        const s_case *c = &s_cases[ci];
        for (size_t di = 0; di < sizeof all / sizeof all[0]; di++) {
            gx_view in[3];
            const int n = s_case_inputs(c, all[di], in);
            if (c->dtypes >> all[di] & 1)
                s_check(c->op, c->node, n, in, c->rtol, c->rtol64, c->atol);
            else /* Mod refuses floats by its fmod attribute */
                ot_expect_error(c->op, c->node, n, in,
                                c->op == GX_OP_MOD && s_is_float(all[di]) ? GX_EATTR : GX_EDTYPE,
                                NULL);
            ot_free_all(); /* test memory is a fixed number of blocks */
        }
    }
}
END_TEST

/* Every pair of base and exponent dtypes; bases of the other dtypes are
 * refused. */
START_TEST(test_pow_dtypes)
{
    const gx_dtype all[] = {GX_F32, GX_F16, GX_BF16, GX_F64, GX_I64, GX_I32, GX_I8,
                            GX_U8,  GX_BOOL, GX_I16, GX_U16, GX_U32, GX_U64};
    const unsigned bases = FLOATS | DT(I32) | DT(I64);
    for (size_t b = 0; b < sizeof all / sizeof all[0]; b++) {
        for (size_t e = 0; e < sizeof all / sizeof all[0]; e++) {
            gx_view in[2] = {s_randv(all[b], 1, 5, SHAPE(3, 1, 5)),
                             s_randv(all[e], 0, 6, SHAPE(4, 1))};
            if (!(bases >> all[b] & 1) || all[e] == GX_BOOL)
                ot_expect_error(GX_OP_POW, NULL, 2, in, GX_EDTYPE, NULL);
            else /* libm's powf, or pow in double, against pow */
                s_check(GX_OP_POW, NULL, 2, in, 2e-7, 0, 0);
            ot_free_all();
        }
    }
    /* float32 ^ float32 with negative bases and exponents; the exponent-2
     * path */
    s_check(GX_OP_POW, NULL, 2,
            (gx_view[]){s_randv(GX_F32, -3, 3, SHAPE(4, 9)), s_randv(GX_F32, -3, 3, SHAPE(9))},
            2e-7, 0, 0);
    s_check(GX_OP_POW, NULL, 2, (gx_view[]){s_randv(GX_F32, -3, 3, SHAPE(4, 9)), s_scalar(GX_F32, 2)},
            0, 0, 0);
    s_check(GX_OP_POW, NULL, 2, (gx_view[]){s_scalar(GX_F32, 2), s_randv(GX_F32, -3, 3, SHAPE(9))},
            2e-7, 0, 0);
    /* integer ^ integer with negative exponents and wrapping results */
    s_check(GX_OP_POW, NULL, 2,
            (gx_view[]){s_randv(GX_I64, -9, 9, SHAPE(50)), s_randv(GX_I32, -3, 40, SHAPE(50))}, 0,
            0, 0);
}
END_TEST

/* Mod's other fmod, Gelu's other approximation, non-default attributes,
 * integers over their whole range (wrapping, INT_MIN / -1), more shapes. */
START_TEST(test_variants)
{
    const gx_node *fmod1 = NODE(A_INT("fmod", 1));
    const gx_dtype all[] = {GX_F32, GX_F16, GX_BF16, GX_F64, GX_I64, GX_I32, GX_I8,
                            GX_U8,  GX_I16, GX_U16,  GX_U32, GX_U64};
    for (size_t di = 0; di < sizeof all / sizeof all[0]; di++) {
        gx_view in[2] = {s_randv(all[di], s_is_unsigned(all[di]) ? 0 : -20, 20, SHAPE(3, 1, 5)),
                         s_randv(all[di], s_is_unsigned(all[di]) ? 0 : -7, 7, SHAPE(4, 1))};
        s_check(GX_OP_MOD, fmod1, 2, in, 0, 0, 0);
        ot_free_all();
    }
    /* random bit patterns: every integer value, overflow included */
    const gx_op wrap[] = {GX_OP_ADD, GX_OP_SUB, GX_OP_MUL, GX_OP_DIV, GX_OP_MOD,
                          GX_OP_MIN, GX_OP_MAX, GX_OP_PRELU};
    for (size_t di = 4; di < sizeof all / sizeof all[0]; di++) {
        for (size_t o = 0; o < sizeof wrap / sizeof wrap[0]; o++) {
            gx_view in[2] = {ot_rand(all[di], SHAPE(7, 9)), ot_rand(all[di], SHAPE(9))};
            s_check(wrap[o], NULL, 2, in, 0, 0, 0);
            if (wrap[o] == GX_OP_MOD)
                s_check(wrap[o], fmod1, 2, in, 0, 0, 0);
        }
        gx_view x = ot_rand(all[di], SHAPE(77));
        s_check(GX_OP_ABS, NULL, 1, &x, 0, 0, 0);
        s_check(GX_OP_SIGN, NULL, 1, &x, 0, 0, 0);
        if (!s_is_unsigned(all[di])) {
            s_check(GX_OP_NEG, NULL, 1, &x, 0, 0, 0);
            s_check(GX_OP_RELU, NULL, 1, &x, 0, 0, 0);
        }
        ot_free_all();
    }
    gx_view x = s_randv(GX_F32, -9, 9, SHAPE(5, 31));
    s_check(GX_OP_GELU, NODE((gx_attr){.name = "approximate", .type = GX_ATTR_STRING,
                                       .s = "tanh"}),
            1, &x, 2e-6, 0, 1e-7);
    s_check(GX_OP_GELU, NODE((gx_attr){.name = "approximate", .type = GX_ATTR_STRING,
                                       .s = "none"}),
            1, &x, 5e-6, 0, 1e-7);
    s_check(GX_OP_LEAKYRELU, NODE(A_FLOAT("alpha", -1.5)), 1, &x, 2e-7, 0, 0);
    s_check(GX_OP_ELU, NODE(A_FLOAT("alpha", 2.5)), 1, &x, 3e-7, 0, 0);
    s_check(GX_OP_SELU, NODE(A_FLOAT("alpha", 2), A_FLOAT("gamma", 3)), 1, &x, 3e-7, 0, 0);
    s_check(GX_OP_CELU, NODE(A_FLOAT("alpha", 2)), 1, &x, 3e-7, 0, 0);
    s_check(GX_OP_CELU, NODE(A_FLOAT("alpha", -0.5)), 1, &x, 3e-7, 0, 0);
    s_check(GX_OP_HARDSIGMOID, NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.25)), 1, &x, 3e-7,
            0, 1e-7);
    s_check(GX_OP_THRESHOLDEDRELU, NODE(A_FLOAT("alpha", 2.0)), 1, &x, 0, 0, 0);
    s_check(GX_OP_SHRINK, NODE(A_FLOAT("bias", 1.5), A_FLOAT("lambd", 3.0)), 1, &x, 0, 0, 0);
    /* variadic: one input, many inputs, every input broadcast */
    const gx_op nary[] = {GX_OP_MIN, GX_OP_MAX, GX_OP_SUM, GX_OP_MEAN};
    for (size_t o = 0; o < sizeof nary / sizeof nary[0]; o++) {
        s_check(nary[o], NULL, 1, &x, 0, 0, 0);
        gx_view many[9];
        for (int i = 0; i < 9; i++)
            many[i] = i % 3 ? s_randv(GX_F32, -9, 9, 2, (int64_t[]){i % 2 ? 5 : 1, 7})
                            : s_randv(GX_F32, -9, 9, 1, (int64_t[]){i % 2 ? 7 : 1});
        s_check(nary[o], NULL, 9, many, 1e-6, 0, 5e-5); /* float32 partial sums up to 81 */
        s_check(nary[o], NULL, 2,
                (gx_view[]){s_randv(GX_F32, -9, 9, SHAPE(4, 1)), s_randv(GX_F32, -9, 9, SHAPE(3))},
                1e-6, 0, 0);
    }
    /* Clip: one bound, attributes (opset 6), min > max */
    gx_view none = {.ndim = -1};
    s_check(GX_OP_CLIP, NULL, 2, (gx_view[]){x, s_scalar(GX_F32, -1)}, 0, 0, 0);
    s_check(GX_OP_CLIP, NULL, 3, (gx_view[]){x, none, s_scalar(GX_F32, 1)}, 0, 0, 0);
    s_check(GX_OP_CLIP, NULL, 3, (gx_view[]){x, s_scalar(GX_F32, 2), s_scalar(GX_F32, 1)}, 0, 0,
            0);
    s_check(GX_OP_CLIP, NULL, 1, &x, 0, 0, 0);
    gx_view i8 = ot_rand(GX_I8, SHAPE(40));
    s_check(GX_OP_CLIP, NULL, 3, (gx_view[]){i8, none, s_scalar(GX_I8, 3)}, 0, 0, 0);
    s_check(GX_OP_CLIP, NULL, 2, (gx_view[]){ot_rand(GX_U64, SHAPE(40)), s_scalar(GX_U64, 7)}, 0,
            0, 0);
    ot_expect(GX_OP_CLIP, NODE(A_FLOAT("min", -1), A_FLOAT("max", 0.5)), 1,
              (gx_view[]){F32V(SHAPE(5), -3, -0.5, 0, 0.5, 2)}, F32V(SHAPE(5), -1, -0.5, 0, 0.5, 0.5),
              0, 0);
    ot_expect(GX_OP_CLIP, NODE(A_FLOAT("max", 0.25)), 1,
              (gx_view[]){F32V(SHAPE(3), -3, 0, 2)}, F32V(SHAPE(3), -3, 0, 0.25), 0, 0);
    gx_view f16 = s_randv(GX_F16, -4, 4, SHAPE(20));
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y;
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_CLIP, NODE(A_FLOAT("min", -1)), 1, &f16, 1, av, &y, err), GX_OK);
    for (int64_t i = 0; i < y.numel; i++)
        ck_assert(s_getf(&y, i) == fmax(s_getf(&f16, i), -1));
}
END_TEST

/* ---- hand values (most from the specification's examples) ---- */

static gx_view s_i64v(int n, const int64_t *v)
{
    return ot_view(GX_I64, ot_copy(v, (size_t)n * sizeof *v), 1, (int64_t[]){n});
}

static void s_expect_i64(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n,
                         const int64_t *want)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y;
    char err[ERRLEN];
    ck_assert_msg(ot_run(op, node, n_in, in, 1, av, &y, err) == GX_OK, "%s: %s", gx_op_name(op),
                  err);
    ck_assert_int_eq(y.numel, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(s_geti(&y, i) == want[i], "%s: element %d is %lld, want %lld",
                      gx_op_name(op), i, (long long)s_geti(&y, i), (long long)want[i]);
}

#define I64S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

START_TEST(test_hand)
{
    /* Mod: the sign of the divisor (fmod=0) or of the dividend (fmod=1) */
    gx_view a = s_i64v(I64S(-4, 7, 5, 4, -7, 8)), b = s_i64v(I64S(2, -3, 8, -2, 3, 5));
    s_expect_i64(GX_OP_MOD, NULL, 2, (gx_view[]){a, b}, I64S(0, -2, 5, 0, 2, 3));
    s_expect_i64(GX_OP_MOD, NODE(A_INT("fmod", 1)), 2, (gx_view[]){a, b},
                 I64S(0, 1, 5, 0, -1, 3));
    ot_expect(GX_OP_MOD, NODE(A_INT("fmod", 1)), 2,
              (gx_view[]){F32V(SHAPE(6), -4.3, 7.2, 5.0, 4.3, -7.2, 8.0),
                          F32V(SHAPE(6), 2.1, -3.4, 8.0, -2.1, 3.4, 5.0)},
              F32V(SHAPE(6), -0.1, 0.4, 5.0, 0.1, -0.4, 3.0), 1e-5, 1e-6);
    /* integer Div truncates; by 0 gives 0 */
    s_expect_i64(GX_OP_DIV, NULL, 2, (gx_view[]){s_i64v(I64S(7, -7, 7, -7, 5, INT64_MIN)),
                                                 s_i64v(I64S(2, 2, -2, -2, 0, -1))},
                 I64S(3, -3, -3, 3, 0, INT64_MIN));
    /* Pow: mixed dtypes, the output is the base's */
    s_expect_i64(GX_OP_POW, NULL, 2,
                 (gx_view[]){s_i64v(I64S(1, 2, 3, -2, 2)), F32V(SHAPE(5), 4, 5, 6, 3, 0.5)},
                 I64S(1, 32, 729, -8, 1));
    /* integer bases with float exponents: truncated, saturated, NaN gives 0 */
    s_expect_i64(GX_OP_POW, NULL, 2,
                 (gx_view[]){s_i64v(I64S(10, -10, -8, 7)), F32V(SHAPE(4), 30, 31, 0.5, -1)},
                 I64S(INT64_MAX, INT64_MIN, 0, 0));
    int32_t b32[] = {10, -10, 3};
    s_expect_i64(GX_OP_POW, NULL, 2,
                 (gx_view[]){ot_view(GX_I32, ot_copy(b32, sizeof b32), SHAPE(3)),
                             F32V(SHAPE(3), 10, 11, 2.5)},
                 I64S(INT32_MAX, INT32_MIN, 15));
    ot_expect(GX_OP_POW, NULL, 2, (gx_view[]){F32V(SHAPE(3), 1, 2, 3), s_i64v(I64S(4, 5, 6))},
              F32V(SHAPE(3), 1, 32, 729), 0, 0);
    ot_expect(GX_OP_POW, NULL, 2, (gx_view[]){F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6), F32V(SHAPE(3), 1, 2, 3)},
              F32V(SHAPE(2, 3), 1, 4, 27, 4, 25, 216), 0, 0);
    ot_expect(GX_OP_POW, NULL, 2, (gx_view[]){F32V(SHAPE(3), -2, 0, 3), s_scalar(GX_F32, 2)},
              F32V(SHAPE(3), 4, 0, 9), 0, 0);
    /* Round: half to even */
    ot_expect(GX_OP_ROUND, NULL, 1,
              (gx_view[]){F32V(SHAPE(15), 0.1, 0.5, 0.9, 1.2, 1.5, 1.8, 2.3, 2.5, 2.7, -1.1, -1.5,
                               -1.9, -2.2, -2.5, -2.8)},
              F32V(SHAPE(15), 0, 0, 1, 1, 2, 2, 2, 2, 3, -1, -2, -2, -2, -2, -3), 0, 0);
    gx_view big = F32V(SHAPE(6), 8388609, -16777216, 1e30, INFINITY, -2, NAN);
    ot_expect(GX_OP_ROUND, NULL, 1, &big, big, 0, 0);
    ot_expect(GX_OP_FLOOR, NULL, 1, (gx_view[]){F32V(SHAPE(4), -1.5, 1.2, 2, -0.0)},
              F32V(SHAPE(4), -2, 1, 2, -0.0), 0, 0);
    ot_expect(GX_OP_CEIL, NULL, 1, (gx_view[]){F32V(SHAPE(4), -1.5, 1.2, 2, -0.5)},
              F32V(SHAPE(4), -1, 2, 2, -0.0), 0, 0);
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y;
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_CEIL, NULL, 1, (gx_view[]){F32V(SHAPE(1), -0.5)}, 1, av, &y, err),
                     GX_OK);
    ck_assert(signbit(((float *)y.data)[0])); /* ceil(-0.5) is -0 */
    /* Sign, Abs, Neg, Relu; NaN stays */
    gx_view s = F32V(SHAPE(6), -3, -0.0, 0, 2, NAN, -INFINITY);
    ot_expect(GX_OP_SIGN, NULL, 1, &s, F32V(SHAPE(6), -1, 0, 0, 1, NAN, -1), 0, 0);
    ot_expect(GX_OP_ABS, NULL, 1, &s, F32V(SHAPE(6), 3, 0, 0, 2, NAN, INFINITY), 0, 0);
    ot_expect(GX_OP_NEG, NULL, 1, &s, F32V(SHAPE(6), 3, 0, -0.0, -2, NAN, INFINITY), 0, 0);
    ot_expect(GX_OP_RELU, NULL, 1, &s, F32V(SHAPE(6), 0, -0.0, 0, 2, NAN, 0), 0, 0);
    /* Min / Max: NaN in any input gives NaN, as numpy's minimum */
    gx_view m[3] = {F32V(SHAPE(4), 1, NAN, 3, 4), F32V(SHAPE(4), 2, 1, NAN, 0),
                    F32V(SHAPE(4), 0, 5, 6, -1)};
    ot_expect(GX_OP_MIN, NULL, 3, m, F32V(SHAPE(4), 0, NAN, NAN, -1), 0, 0);
    ot_expect(GX_OP_MAX, NULL, 3, m, F32V(SHAPE(4), 2, NAN, NAN, 4), 0, 0);
    ot_expect(GX_OP_MEAN, NULL, 3,
              (gx_view[]){F32V(SHAPE(3), 3, 0, 2), F32V(SHAPE(3), 1, 3, 4), F32V(SHAPE(3), 2, 6, 6)},
              F32V(SHAPE(3), 2, 3, 4), 0, 0);
    ot_expect(GX_OP_SUM, NULL, 3,
              (gx_view[]){F32V(SHAPE(3), 3, 0, 2), F32V(SHAPE(3), 1, 3, 4), F32V(SHAPE(3), 2, 6, 6)},
              F32V(SHAPE(3), 6, 9, 12), 0, 0);
    /* Clip: NaN stays, min > max gives max */
    ot_expect(GX_OP_CLIP, NULL, 3,
              (gx_view[]){F32V(SHAPE(4), -2, 0, 2, NAN), s_scalar(GX_F32, -1), s_scalar(GX_F32, 1)},
              F32V(SHAPE(4), -1, 0, 1, NAN), 0, 0);
    ot_expect(GX_OP_CLIP, NULL, 3,
              (gx_view[]){F32V(SHAPE(3), -2, 0, 2), s_scalar(GX_F32, 1), s_scalar(GX_F32, -1)},
              F32V(SHAPE(3), -1, -1, -1), 0, 0);
    /* PRelu: slope broadcast along the last dims */
    ot_expect(GX_OP_PRELU, NULL, 2, (gx_view[]){F32V(SHAPE(2, 2), -1, 2, -3, 4), F32V(SHAPE(2), 0.5, 3)},
              F32V(SHAPE(2, 2), -0.5, 2, -1.5, 4), 0, 0);
    /* activations */
    gx_view x = F32V(SHAPE(3), -1, 0, 1);
    ot_expect(GX_OP_LEAKYRELU, NODE(A_FLOAT("alpha", 0.1)), 1, &x, F32V(SHAPE(3), -0.1, 0, 1),
              1e-7, 0);
    ot_expect(GX_OP_ELU, NODE(A_FLOAT("alpha", 2)), 1, &x, F32V(SHAPE(3), -1.2642411, 0, 1), 1e-6,
              0);
    ot_expect(GX_OP_SELU, NODE(A_FLOAT("alpha", 2), A_FLOAT("gamma", 3)), 1, &x,
              F32V(SHAPE(3), -3.79272335, 0, 3), 1e-6, 0);
    ot_expect(GX_OP_HARDSIGMOID, NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.6)), 1, &x,
              F32V(SHAPE(3), 0.1, 0.6, 1), 1e-6, 0);
    ot_expect(GX_OP_THRESHOLDEDRELU, NODE(A_FLOAT("alpha", 0.5)), 1,
              (gx_view[]){F32V(SHAPE(5), -2, 0.5, 1, 0.4, 2.2)}, F32V(SHAPE(5), 0, 0, 1, 0, 2.2), 0,
              0);
    gx_view sh = F32V(SHAPE(5), -2, -1, 0, 1, 2);
    ot_expect(GX_OP_SHRINK, NODE(A_FLOAT("lambd", 1.5)), 1, &sh, F32V(SHAPE(5), -2, 0, 0, 0, 2),
              0, 0);
    ot_expect(GX_OP_SHRINK, NODE(A_FLOAT("lambd", 1.5), A_FLOAT("bias", 1.5)), 1, &sh,
              F32V(SHAPE(5), -0.5, 0, 0, 0, 0.5), 0, 0);
    ot_expect(GX_OP_SOFTPLUS, NULL, 1, &x, F32V(SHAPE(3), 0.31326169, 0.69314718, 1.31326169),
              1e-6, 0);
    ot_expect(GX_OP_SOFTSIGN, NULL, 1, &x, F32V(SHAPE(3), -0.5, 0, 0.5), 0, 0);
    ot_expect(GX_OP_HARDSWISH, NULL, 1, (gx_view[]){F32V(SHAPE(4), -4, -1, 1, 4)},
              F32V(SHAPE(4), 0, -1.0f / 3, 2.0f / 3, 4), 1e-6, 0);
    ot_expect(GX_OP_GELU, NULL, 1, &x, F32V(SHAPE(3), -0.15865525, 0, 0.84134475), 1e-6, 0);
    ot_expect(GX_OP_CELU, NODE(A_FLOAT("alpha", 2)), 1, &x, F32V(SHAPE(3), -0.78693868, 0, 1),
              1e-6, 0);
    ot_expect(GX_OP_ERF, NULL, 1, (gx_view[]){F32V(SHAPE(4), 0, 0.5, -1, 10)},
              F32V(SHAPE(4), 0, 0.52049988, -0.84270079, 1), 1e-6, 0);
    ot_expect(GX_OP_RECIPROCAL, NULL, 1, (gx_view[]){F32V(SHAPE(3), -4, 2, 0)},
              F32V(SHAPE(3), -0.25, 0.5, INFINITY), 0, 0);
    ot_expect(GX_OP_LOG, NULL, 1, (gx_view[]){F32V(SHAPE(5), 1, 10, 0, -1, INFINITY)},
              F32V(SHAPE(5), 0, 2.30258509, -INFINITY, NAN, INFINITY), 1e-7, 0);
    ot_expect(GX_OP_SQRT, NULL, 1, (gx_view[]){F32V(SHAPE(3), 1, 4, 9)}, F32V(SHAPE(3), 1, 2, 3), 0,
              0);
    /* unsigned 8-bit arithmetic wraps */
    uint8_t u1[] = {250, 3, 7}, u2[] = {10, 5, 2};
    gx_view u[2] = {ot_view(GX_U8, ot_copy(u1, 3), SHAPE(3)), ot_view(GX_U8, ot_copy(u2, 3), SHAPE(3))};
    const struct { gx_op op; uint8_t want[3]; } uw[] = {
        {GX_OP_ADD, {4, 8, 9}}, {GX_OP_SUB, {240, 254, 5}}, {GX_OP_MUL, {196, 15, 14}},
        {GX_OP_DIV, {25, 0, 3}}, {GX_OP_MOD, {0, 3, 1}},
    };
    for (size_t i = 0; i < sizeof uw / sizeof uw[0]; i++) {
        ck_assert_int_eq(ot_run(uw[i].op, NULL, 2, u, 1, av, &y, err), GX_OK);
        ck_assert_msg(memcmp(y.data, uw[i].want, 3) == 0, "%s", gx_op_name(uw[i].op));
    }
}
END_TEST

/* ---- the vectorised float32 functions against libm ---- */

START_TEST(test_vs_libm)
{
    const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f,
                             -1e-40f, 1e-7f, -1e-4f, 0.4999f, 0.5f, 0.5001f, -0.5f, 1.5f, 2.5f,
                             -2.5f, 9.0f, 17.5f, -17.5f, 79.9f, 80.1f, 88.7f, 88.8f, -87.3f,
                             -87.4f, -103.0f, 1e10f, -1e10f, 8191.9f, 8192.1f, -8193.0f,
                             1.5707964f, 3.1415927f, 8388607.5f, 8388609.0f};
    const int64_t n = 40000, ns = sizeof special / sizeof special[0];
    gx_view x = ot_view(GX_F32, ot_alloc((size_t)(n + ns) * sizeof(float)), SHAPE(n + ns));
    float *px = x.data;
    for (int64_t i = 0; i < n; i++)
        px[i] = -100.0f + 200.0f * (float)i / (float)n;
    memcpy(px + n, special, sizeof special);
    gx_view pos = ot_view(GX_F32, ot_alloc((size_t)n * sizeof(float)), SHAPE(n));
    for (int64_t i = 0; i < n; i++) /* 1e-44 .. 1e38: subnormals too */
        ((float *)pos.data)[i] = expf(-101.0f + 188.0f * (float)i / (float)n);
    /* rtol / atol: the functions' accuracy (see vmath.h); atol covers
     * results that the kernels flush to 0 where libm is subnormal, and sin
     * and cos near their zeros */
    const struct {
        gx_op op;
        const gx_view *in;
        double rtol, atol;
    } c[] = {
        {GX_OP_LOG, &x, 3e-7, 0},         {GX_OP_LOG, &pos, 3e-7, 0},
        {GX_OP_ERF, &x, 5e-6, 1.2e-38},         {GX_OP_GELU, &x, 2e-5, 1e-37},
        {GX_OP_ELU, &x, 3e-7, 0},         {GX_OP_SOFTPLUS, &x, 3e-7, 1.2e-38},
        {GX_OP_FLOOR, &x, 0, 0},          {GX_OP_CEIL, &x, 0, 0},
        {GX_OP_ROUND, &x, 0, 0},          {GX_OP_SIN, &x, 2e-6, 1e-7},
        {GX_OP_COS, &x, 2e-6, 1e-7},      {GX_OP_TAN, &x, 2e-6, 1e-7},
        {GX_OP_SQRT, &pos, 0, 0},         {GX_OP_RECIPROCAL, &x, 0, 0},
        {GX_OP_SIGMOID, &x, 3e-7, 1.2e-38},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view y, ref;
        char err[ERRLEN];
        ck_assert_int_eq(ot_run(c[i].op, NULL, 1, c[i].in, 3, av, &y, err), GX_OK);
        ref = y;
        ref.data = ot_alloc((size_t)y.numel * sizeof(float));
        s_reference(c[i].op, av, 1, c[i].in, &ref);
        s_expect_close(c[i].op, &y, &ref, c[i].rtol, c[i].atol);
    }
    /* sin, cos and tan far beyond GX_V_TRIG_MAX come from libm */
    gx_view far = F32V(SHAPE(4), 1e6, -3e7, 1e30, 123456.7);
    const gx_op trig[] = {GX_OP_SIN, GX_OP_COS, GX_OP_TAN};
    for (size_t i = 0; i < 3; i++) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view y;
        char err[ERRLEN];
        ck_assert_int_eq(ot_run(trig[i], NULL, 1, &far, 1, av, &y, err), GX_OK);
        for (int j = 0; j < 4; j++) {
            const float v = ((float *)far.data)[j];
            const float want = i == 0 ? sinf(v) : i == 1 ? cosf(v) : tanf(v);
            ck_assert_msg(((float *)y.data)[j] == want, "%s(%g)", gx_op_name(trig[i]), v);
        }
    }
}
END_TEST

/* ---- every math op split across threads, sizes ending mid-row ---- */

START_TEST(test_threads)
{
    for (size_t ci = 0; ci < sizeof s_cases / sizeof s_cases[0]; ci++) {
        const s_case *c = &s_cases[ci];
        switch (c->kind) {
        case UNARY:
            s_check(c->op, c->node, 1, (gx_view[]){s_randv(GX_F32, c->lo, c->hi, SHAPE(13, 77))},
                    c->rtol, 0, c->atol);
            break;
        case BINARY:
        case VARIADIC: {
            const gx_dtype dt = c->dtypes >> GX_I32 & 1 ? GX_I32 : GX_F32;
            s_check(c->op, c->node, 2,
                    (gx_view[]){s_randv(dt, 1, 50, SHAPE(3, 37, 41)), s_randv(dt, 1, 50, SHAPE(41))},
                    c->rtol, 0, c->atol);
            s_check(c->op, c->node, 2,
                    (gx_view[]){s_randv(dt, 1, 50, SHAPE(5, 1, 7)),
                                s_randv(dt, 1, 50, SHAPE(1, 9, 1))},
                    c->rtol, 0, c->atol);
            if (!(c->dtypes >> GX_F64 & 1)) /* Mod (fmod=0) */
                s_check(c->op, c->node, 2,
                        (gx_view[]){s_randv(GX_I64, -50, 50, SHAPE(1001)),
                                    s_randv(GX_I64, -50, 50, SHAPE(1001))},
                        0, 0, 0);
            else if (c->kind == VARIADIC && c->op != GX_OP_SUM && c->op != GX_OP_MEAN)
                s_check(c->op, c->node, 3,
                        (gx_view[]){s_randv(GX_U8, 1, 50, SHAPE(1001)),
                                    s_randv(GX_U8, 1, 50, SHAPE(1001)),
                                    s_randv(GX_U8, 1, 50, SHAPE(1))},
                        0, 0, 0);
            else
                s_check(c->op, c->node, 2,
                        (gx_view[]){s_randv(GX_F64, 1, 50, SHAPE(1001)),
                                    s_randv(GX_F64, 1, 50, SHAPE(1001))},
                        c->rtol, 1e-15, c->atol);
            break;
        }
        case PRELU:
            s_check(c->op, c->node, 2,
                    (gx_view[]){s_randv(GX_F32, -9, 9, SHAPE(3, 37, 41)),
                                s_randv(GX_F32, -9, 9, SHAPE(37, 1))},
                    0, 0, 0);
            break;
        case CLIP:
            s_check(c->op, c->node, 3,
                    (gx_view[]){s_randv(GX_F16, -9, 9, SHAPE(3, 37, 41)), s_scalar(GX_F16, -2),
                                s_scalar(GX_F16, 3)},
                    0, 0, 0);
            break;
        }
        ot_free_all();
    }
    s_check(GX_OP_POW, NULL, 2,
            (gx_view[]){s_randv(GX_F32, 0, 3, SHAPE(3, 37, 41)), s_randv(GX_F32, -2, 2, SHAPE(41))},
            2e-7, 0, 0);
    s_check(GX_OP_POW, NULL, 2,
            (gx_view[]){s_randv(GX_I64, 0, 3, SHAPE(3, 37, 41)), s_randv(GX_U8, 0, 9, SHAPE(41))},
            0, 0, 0);
    s_check(GX_OP_MOD, NODE(A_INT("fmod", 1)), 2,
            (gx_view[]){s_randv(GX_F32, -9, 9, SHAPE(3, 37, 41)), s_randv(GX_F32, 1, 9, SHAPE(41))},
            0, 0, 0);
}
END_TEST

/* ---- inference errors ---- */

START_TEST(test_errors)
{
    gx_view f23 = RANDV(2, 3), b23 = ot_rand(GX_BOOL, SHAPE(2, 3)), i23 = ot_rand(GX_I32, SHAPE(2, 3));
    gx_view u23 = ot_rand(GX_U8, SHAPE(2, 3)), none = {.ndim = -1};
    ot_expect_error(GX_OP_ADD, NULL, 2, (gx_view[]){b23, b23}, GX_EDTYPE,
                    "Add: bool not supported (float32, float16, bfloat16, float64, int64, int32, "
                    "int8, uint8, int16, uint16, uint32, uint64)");
    ot_expect_error(GX_OP_SUB, NULL, 2, (gx_view[]){f23, i23}, GX_EDTYPE,
                    "Sub: input 1 is int32 but input 0 is float32");
    ot_expect_error(GX_OP_MAX, NULL, 3, (gx_view[]){f23, RANDV(3), RANDV(2, 1, 4)}, GX_ESHAPE,
                    "Max: shapes [2,3] and [2,1,4] are not broadcastable");
    ot_expect_error(GX_OP_SUM, NULL, 2, (gx_view[]){i23, i23}, GX_EDTYPE,
                    "Sum: int32 not supported (float32, float16, bfloat16, float64)");
    ot_expect_error(GX_OP_MEAN, NULL, 2, (gx_view[]){f23, none}, GX_ESHAPE,
                    "Mean: input 1 is required");
    ot_expect_error(GX_OP_NEG, NULL, 1, &u23, GX_EDTYPE,
                    "Neg: uint8 not supported (float32, float16, bfloat16, float64, int64, int32, "
                    "int8, int16)");
    ot_expect_error(GX_OP_RELU, NULL, 1, &u23, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_LOG, NULL, 1, &i23, GX_EDTYPE,
                    "Log: int32 not supported (float32, float16, bfloat16, float64)");
    /* Pow */
    ot_expect_error(GX_OP_POW, NULL, 2, (gx_view[]){u23, f23}, GX_EDTYPE,
                    "Pow: uint8 not supported (float32, float16, bfloat16, float64, int64, int32)");
    ot_expect_error(GX_OP_POW, NULL, 2, (gx_view[]){f23, b23}, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_POW, NULL, 2, (gx_view[]){f23, RANDV(2)}, GX_ESHAPE,
                    "Pow: shapes [2,3] and [2] are not broadcastable");
    /* Mod */
    ot_expect_error(GX_OP_MOD, NULL, 2, (gx_view[]){f23, f23}, GX_EATTR,
                    "Mod: float32 inputs need fmod=1 (fmod=0 is for integers)");
    ot_expect_error(GX_OP_MOD, NODE(A_INT("fmod", 2)), 2, (gx_view[]){i23, i23}, GX_EATTR,
                    "Mod: fmod must be 0 or 1, got 2");
    /* PRelu */
    ot_expect_error(GX_OP_PRELU, NULL, 2, (gx_view[]){RANDV(3), f23}, GX_ESHAPE,
                    "PRelu: slope [2,3] is not unidirectionally broadcastable to X [3]");
    ot_expect_error(GX_OP_PRELU, NULL, 2, (gx_view[]){f23, RANDV(2)}, GX_ESHAPE,
                    "PRelu: shapes [2,3] and [2] are not broadcastable");
    /* Clip */
    ot_expect_error(GX_OP_CLIP, NULL, 2, (gx_view[]){f23, RANDV(2)}, GX_ESHAPE,
                    "Clip: min must be a scalar, got [2]");
    ot_expect_error(GX_OP_CLIP, NULL, 3, (gx_view[]){f23, none, s_scalar(GX_F64, 1)}, GX_EDTYPE,
                    "Clip: max is float64 but the input is float32");
    ot_expect_error(GX_OP_CLIP, NODE(A_FLOAT("min", 0)), 2, (gx_view[]){f23, s_scalar(GX_F32, 0)},
                    GX_EATTR, "Clip: min is given both as attribute and as input");
    ot_expect_error(GX_OP_CLIP, NODE(A_FLOAT("max", 0)), 1, &i23, GX_EDTYPE,
                    "Clip: the max attribute (opset 6) needs a float input, not int32; give max "
                    "as input 1");
    ot_expect_error(GX_OP_CLIP, NULL, 1, &b23, GX_EDTYPE, NULL);
    /* attributes */
    ot_expect_error(GX_OP_CELU, NODE(A_FLOAT("alpha", 0)), 1, &f23, GX_EATTR,
                    "Celu: alpha must not be 0");
    ot_expect_error(GX_OP_GELU,
                    NODE((gx_attr){.name = "approximate", .type = GX_ATTR_STRING, .s = "fast"}),
                    1, &f23, GX_EATTR, "Gelu: approximate is 'fast', expected 'none' or 'tanh'");
    ot_expect_error(GX_OP_ELU, NODE(A_INT("consumed_inputs", 1)), 1, &f23, GX_EATTR,
                    "Elu: unknown attribute 'consumed_inputs'");
    ot_expect_error(GX_OP_LEAKYRELU, NODE(A_INTS("alpha", 1)), 1, &f23, GX_EATTR,
                    "LeakyRelu: attribute 'alpha' is ints, expected float");
}
END_TEST

Suite *ops_math_suite(void)
{
    Suite *s = suite_create("ops_math");
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_dtypes);
    tcase_add_test(tc, test_pow_dtypes);
    tcase_add_test(tc, test_variants);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_vs_libm);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}
