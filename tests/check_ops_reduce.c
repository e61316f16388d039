/*
 * Op tests of the linalg and reduce families (GX_OPS_LINALG and
 * GX_OPS_REDUCE in ops/op.h): hand values (many from the ONNX examples),
 * naive references in double precision over shapes, axes and dtypes, every
 * attribute variant, and the errors infer gives. Every run is repeated as
 * nth = 3 and 7 shares, which must match nth = 1 and write each output
 * byte exactly once.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/schema.h" /* attribute positions, gx_einsum */
#include "tests/optest.h"
#include "tests/testutil.h"

/* ---- views of any dtype ---- */

#define TV(dt, ctype, shape, ...)                                             \
    ot_view(dt, ot_copy((ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__})), shape)
/* (shape must reach ot_view unexpanded: SHAPE() is two arguments) */
#define S_TV(dt, ctype, ...)                                                  \
    ot_view(dt, ot_copy((ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__})),
#define F64V(shape, ...) S_TV(GX_F64, double, __VA_ARGS__) shape)
#define I64V(shape, ...) S_TV(GX_I64, int64_t, __VA_ARGS__) shape)
#define I32V(shape, ...) S_TV(GX_I32, int32_t, __VA_ARGS__) shape)
#define U8V(shape, ...) S_TV(GX_U8, uint8_t, __VA_ARGS__) shape)
#define I8V(shape, ...) S_TV(GX_I8, int8_t, __VA_ARGS__) shape)
#define SCALAR_F32(v) ot_view(GX_F32, ot_copy(&(float){v}, 4), 0, NULL)
/* An omitted optional input. */
#define NONE ((gx_view){.ndim = -1})

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

static double s_get(const gx_view *v, int64_t i)
{
    switch (v->dtype) {
    case GX_F32:
        return ((const float *)v->data)[i];
    case GX_F64:
        return ((const double *)v->data)[i];
    case GX_I64:
        return (double)((const int64_t *)v->data)[i];
    case GX_I32:
        return ((const int32_t *)v->data)[i];
    case GX_I16:
        return ((const int16_t *)v->data)[i];
    case GX_I8:
        return ((const int8_t *)v->data)[i];
    case GX_U8:
        return ((const uint8_t *)v->data)[i];
    case GX_U16:
        return ((const uint16_t *)v->data)[i];
    case GX_U32:
        return ((const uint32_t *)v->data)[i];
    case GX_U64:
        return (double)((const uint64_t *)v->data)[i];
    case GX_BOOL:
        return ((const uint8_t *)v->data)[i];
    case GX_F16:
    case GX_BF16:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    ck_abort_msg("s_get: dtype %d", (int)v->dtype);
    return 0;
}

static void s_set(const gx_view *v, int64_t i, double x)
{
    switch (v->dtype) {
    case GX_F32:
        ((float *)v->data)[i] = (float)x;
        return;
    case GX_F64:
        ((double *)v->data)[i] = x;
        return;
    case GX_I64:
        ((int64_t *)v->data)[i] = (int64_t)x;
        return;
    case GX_I32:
        ((int32_t *)v->data)[i] = (int32_t)x;
        return;
    case GX_I16:
        ((int16_t *)v->data)[i] = (int16_t)x;
        return;
    case GX_I8:
        ((int8_t *)v->data)[i] = (int8_t)x;
        return;
    case GX_U8:
    case GX_BOOL:
        ((uint8_t *)v->data)[i] = (uint8_t)x;
        return;
    case GX_U16:
        ((uint16_t *)v->data)[i] = (uint16_t)x;
        return;
    case GX_U32:
        ((uint32_t *)v->data)[i] = (uint32_t)x;
        return;
    case GX_U64:
        ((uint64_t *)v->data)[i] = (uint64_t)x;
        return;
    case GX_F16:
    case GX_BF16:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    ck_abort_msg("s_set: dtype %d", (int)v->dtype);
}

static bool s_is_float(gx_dtype dt)
{
    return dt == GX_F32 || dt == GX_F64;
}

/* Random values: floats in [-2, 2), integers in [lo, hi] (clamped to what
 * the dtype holds). */
static gx_view s_rand(gx_dtype dt, int ndim, const int64_t *shape, int lo, int hi)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    v.data = ot_alloc((size_t)v.numel * gx_dtype_size(dt));
    if (!s_is_float(dt) && dt != GX_I8 && dt != GX_I16 && dt != GX_I32 && dt != GX_I64 && lo < 0)
        lo = 0;
    for (int64_t i = 0; i < v.numel; i++) {
        float f = ot_randf();
        s_set(&v, i, s_is_float(dt) ? f : lo + floor((f + 2.0) / 4.0 * (hi - lo + 1)));
    }
    return v;
}
#define RAND(dt, ...) s_rand(dt, SHAPE(__VA_ARGS__), -9, 9)

/* An output view of dtype and shape with zeroed data, for references. */
static gx_view s_like(gx_dtype dt, int ndim, const int64_t *shape)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    v.data = ot_alloc((size_t)v.numel * gx_dtype_size(dt) + 8);
    return v;
}

/* Equal shapes, dtypes and values: floats within rtol and atol (NaN equal
 * to NaN, infinities to themselves), integers exactly. */
static bool s_close(const gx_view *got, const gx_view *want, double rtol, double atol)
{
    if (got->dtype != want->dtype || got->ndim != want->ndim)
        return false;
    for (int d = 0; d < want->ndim; d++) {
        if (got->shape[d] != want->shape[d])
            return false;
    }
    for (int64_t i = 0; i < want->numel; i++) {
        double g = s_get(got, i), w = s_get(want, i);
        bool ok = g == w || (isnan(g) && isnan(w)) ||
                  (s_is_float(want->dtype) && fabs(g - w) <= rtol * fabs(w) + atol);
        if (!ok) {
            fprintf(stderr, "  element %lld of %lld: got %.9g want %.9g\n", (long long)i,
                    (long long)want->numel, g, w);
            return false;
        }
    }
    return true;
}

static bool s_same(const gx_view *got, const gx_view *want, double rtol)
{
    return s_close(got, want, rtol, rtol);
}

/* Exactly want (by value, for literals). */
static bool s_eq(const gx_view *got, gx_view want)
{
    return s_same(got, &want, 0);
}

/* Runs op with nth = 1, 3 and 7: the outputs must agree and the shares
 * tile them. Returns the nth = 1 outputs in out[n_out]. */
static void s_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                  gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    int rc = ot_run_n(op, node, n_in, in, 1, av, n_out, out, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    for (int nth = 3; nth <= 7; nth += 4) {
        gx_view outn[2];
        ck_assert_int_eq(ot_run_n(op, node, n_in, in, nth, av, n_out, outn, err), GX_OK);
        /* BLAS may sum in another order for another number of rows */
        for (int j = 0; j < n_out; j++)
            ck_assert_msg(s_same(&outn[j], &out[j], 1e-5), "%s: nth=%d differs from nth=1",
                          gx_op_name(op), nth);
        ot_check_shares(op, av, n_in, in, n_out, out, nth);
    }
}

/* s_run with one output compared with want. */
static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want)
{
    gx_view out;
    s_run(op, node, n_in, in, 1, &out);
    ck_assert_msg(s_same(&out, &want, 1e-6), "%s: wrong result", gx_op_name(op));
}

/* ---- Reduce*: naive reference ---- */

static const gx_op s_reduce_ops[] = {
    GX_OP_REDUCE_SUM, GX_OP_REDUCE_MEAN,    GX_OP_REDUCE_MAX,     GX_OP_REDUCE_MIN,
    GX_OP_REDUCE_PROD, GX_OP_REDUCE_L1,     GX_OP_REDUCE_L2,      GX_OP_REDUCE_LOG_SUM,
    GX_OP_REDUCE_LOG_SUM_EXP, GX_OP_REDUCE_SUM_SQUARE,
};
#define N_REDUCE_OPS (int)(sizeof s_reduce_ops / sizeof s_reduce_ops[0])

static bool s_int_ok(gx_op op)
{
    return op != GX_OP_REDUCE_L2 && op != GX_OP_REDUCE_LOG_SUM && op != GX_OP_REDUCE_LOG_SUM_EXP;
}

/* y (shape set) = op over the dims in mask of x, in double (exact for the
 * small integers used here). */
static void s_ref_reduce(gx_op op, const gx_view *x, const bool *mask, const gx_view *y)
{
    const int64_t n = y->numel;
    double *acc = ot_alloc((size_t)n * sizeof(double) + 8);
    double *mx = ot_alloc((size_t)n * sizeof(double) + 8);
    int64_t *cnt = ot_alloc((size_t)n * sizeof(int64_t) + 8);
    for (int64_t o = 0; o < n; o++) {
        acc[o] = op == GX_OP_REDUCE_PROD  ? 1
                 : op == GX_OP_REDUCE_MAX ? -INFINITY
                 : op == GX_OP_REDUCE_MIN ? INFINITY
                                          : 0;
        mx[o] = -INFINITY;
    }
    int64_t idx[GX_MAX_DIMS];
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t rest = i, o = 0, scale = 1;
            for (int d = x->ndim - 1; d >= 0; d--) {
                idx[d] = rest % x->shape[d];
                rest /= x->shape[d];
            }
            for (int d = x->ndim - 1; d >= 0; d--) {
                if (!mask[d]) {
                    o += idx[d] * scale;
                    scale *= x->shape[d];
                }
            }
            const double v = s_get(x, i);
            if (pass == 0) {
                mx[o] = fmax(mx[o], v);
                continue;
            }
            cnt[o]++;
            if (op == GX_OP_REDUCE_PROD)
                acc[o] *= v;
            else if (op == GX_OP_REDUCE_MAX)
                acc[o] = fmax(acc[o], v);
            else if (op == GX_OP_REDUCE_MIN)
                acc[o] = fmin(acc[o], v);
            else if (op == GX_OP_REDUCE_L1)
                acc[o] += fabs(v);
            else if (op == GX_OP_REDUCE_L2 || op == GX_OP_REDUCE_SUM_SQUARE)
                acc[o] += v * v;
            else if (op == GX_OP_REDUCE_LOG_SUM_EXP)
                acc[o] += exp(v - mx[o]);
            else
                acc[o] += v;
        }
    }
    for (int64_t o = 0; o < n; o++) {
        double r = acc[o];
        if (op == GX_OP_REDUCE_MEAN)
            r = s_is_float(y->dtype) ? r / (double)cnt[o] : trunc(r / (double)cnt[o]);
        else if (op == GX_OP_REDUCE_L2)
            r = sqrt(r);
        else if (op == GX_OP_REDUCE_LOG_SUM)
            r = log(r);
        else if (op == GX_OP_REDUCE_LOG_SUM_EXP)
            r = cnt[o] ? mx[o] + log(r) : -INFINITY;
        s_set(y, o, r);
    }
}

/* Runs op on x over axes (n_axes of them; as the attribute, or as input 1
 * when as_input) and compares with the reference. */
static void s_check_reduce(gx_op op, const gx_view *x, int n_axes, const int64_t *axes,
                           bool keepdims, bool noop, bool as_input)
{
    gx_attr attrs[3];
    int na = 0;
    attrs[na++] = A_INT("keepdims", keepdims);
    attrs[na++] = A_INT("noop_with_empty_axes", noop);
    if (!as_input && n_axes > 0)
        attrs[na++] = (gx_attr){.name = "axes", .type = GX_ATTR_INTS, .ints = (int64_t *)axes,
                                .n = (size_t)n_axes};
    gx_node node = {.n_attr = (size_t)na, .attr = attrs};
    gx_view in[2] = {*x, NONE};
    if (as_input)
        in[1] = ot_view(GX_I64, n_axes ? ot_copy(axes, (size_t)n_axes * 8) : ot_alloc(8), 1,
                        (int64_t[]){n_axes});
    gx_view out;
    s_run(op, &node, as_input ? 2 : 1, in, 1, &out);
    bool mask[GX_MAX_DIMS] = {false};
    for (int i = 0; i < n_axes; i++)
        mask[axes[i] < 0 ? axes[i] + x->ndim : axes[i]] = true;
    int64_t shape[GX_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (n_axes == 0 && !noop)
            mask[d] = true;
        if (!mask[d])
            shape[nd++] = x->shape[d];
        else if (keepdims)
            shape[nd++] = 1;
    }
    gx_view ref = s_like(x->dtype, nd, shape);
    s_ref_reduce(op, x, mask, &ref);
    /* float32 accumulates in float32: sums that cancel need an atol */
    ck_assert_msg(s_close(&out, &ref, x->dtype == GX_F32 ? 2e-5 : 1e-12,
                          x->dtype == GX_F32 ? 1e-4 : 1e-12),
                  "%s %s over %d axes (first %lld) keepdims=%d noop=%d", gx_op_name(op),
                  gx_dtype_name(x->dtype), n_axes, n_axes ? (long long)axes[0] : 0LL, keepdims,
                  noop);
}

/* ---- Reduce* tests ---- */

START_TEST(test_reduce_hand)
{
    /* the ONNX examples: [3,2,2] = 1..12 */
    gx_view x = F32V(SHAPE(3, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    gx_view axes1 = I64V(SHAPE(1), 1);
    s_expect(GX_OP_REDUCE_SUM, NULL, 2, (gx_view[]){x, axes1},
             F32V(SHAPE(3, 1, 2), 4, 6, 12, 14, 20, 22));
    s_expect(GX_OP_REDUCE_SUM, NODE(A_INT("keepdims", 0)), 2, (gx_view[]){x, axes1},
             F32V(SHAPE(3, 2), 4, 6, 12, 14, 20, 22));
    /* axes as an empty input: all dims, or none with noop_with_empty_axes */
    gx_view none = ot_view(GX_I64, ot_alloc(8), SHAPE(0));
    s_expect(GX_OP_REDUCE_SUM, NULL, 2, (gx_view[]){x, none}, F32V(SHAPE(1, 1, 1), 78));
    s_expect(GX_OP_REDUCE_SUM, NODE(A_INT("noop_with_empty_axes", 1)), 2, (gx_view[]){x, none},
             x);
    s_expect(GX_OP_REDUCE_SUM, NODE(A_INT("keepdims", 0)), 1, &x,
             ot_view(GX_F32, ot_copy(&(float){78}, 4), 0, NULL));
    s_expect(GX_OP_REDUCE_MEAN, NODE(A_INTS("axes", 1)), 1, &x,
             F32V(SHAPE(3, 1, 2), 2, 3, 6, 7, 10, 11));
    s_expect(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", -2), A_INT("keepdims", 0)), 1, &x,
             F32V(SHAPE(3, 2), 3, 4, 7, 8, 11, 12));
    s_expect(GX_OP_REDUCE_MIN, NODE(A_INTS("axes", 0, 2)), 1, &x, F32V(SHAPE(1, 2, 1), 1, 3));
    s_expect(GX_OP_REDUCE_PROD, NODE(A_INTS("axes", 1)), 1, &x,
             F32V(SHAPE(3, 1, 2), 3, 8, 35, 48, 99, 120));
    s_expect(GX_OP_REDUCE_SUM_SQUARE, NODE(A_INTS("axes", 2)), 1, &x,
             F32V(SHAPE(3, 2, 1), 5, 25, 61, 113, 181, 265));
    s_expect(GX_OP_REDUCE_L1, NODE(A_INTS("axes", 1)), 1,
             (gx_view[]){F32V(SHAPE(2, 2), -1, 2, -3, -4)}, F32V(SHAPE(2, 1), 3, 7));
    s_expect(GX_OP_REDUCE_L2, NODE(A_INTS("axes", -1)), 1,
             (gx_view[]){F32V(SHAPE(2, 2), 3, -4, 0, 0)}, F32V(SHAPE(2, 1), 5, 0));
    s_expect(GX_OP_REDUCE_LOG_SUM, NODE(A_INTS("axes", 1)), 1,
             (gx_view[]){F32V(SHAPE(1, 3), 1, 2, 4)}, F32V(SHAPE(1, 1), 1.9459101f));
    /* LogSumExp stays finite where exp overflows, and an all -inf row is
     * -inf, not NaN */
    s_expect(GX_OP_REDUCE_LOG_SUM_EXP, NODE(A_INTS("axes", 1)), 1,
             (gx_view[]){F64V(SHAPE(2, 2), 1000, 1000, -INFINITY, -INFINITY)},
             F64V(SHAPE(2, 1), 1000 + M_LN2, -INFINITY));
    s_expect(GX_OP_REDUCE_LOG_SUM_EXP, NODE(A_INTS("axes", 0)), 1,
             (gx_view[]){F32V(SHAPE(2, 2), 1000, INFINITY, 1000, 1)},
             F32V(SHAPE(1, 2), 1000 + (float)M_LN2, INFINITY));
}
END_TEST

START_TEST(test_reduce_nan_and_empty)
{
    /* NaN wins max and min */
    gx_view x = F32V(SHAPE(2, 3), 1, NAN, 3, 4, 5, 6);
    s_expect(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", 1)), 1, &x, F32V(SHAPE(2, 1), NAN, 6));
    s_expect(GX_OP_REDUCE_MIN, NODE(A_INTS("axes", 1)), 1, &x, F32V(SHAPE(2, 1), NAN, 4));
    gx_view big = RANDV(5, 40);
    ((float *)big.data)[3 * 40 + 17] = NAN;
    gx_view out;
    s_run(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", 1)), 1, &big, 1, &out);
    ck_assert(isnan(((float *)out.data)[3]) && !isnan(((float *)out.data)[2]));
    /* reducing an empty dim gives each op's identity (an empty input may
     * have no data) */
    gx_view e = ot_view(GX_F32, NULL, SHAPE(2, 0, 3));
    static const float want[N_REDUCE_OPS] = {0, NAN, -INFINITY, INFINITY, 1, 0, 0,
                                             -INFINITY, -INFINITY, 0};
    for (int o = 0; o < N_REDUCE_OPS; o++) {
        const float w = want[o];
        s_expect(s_reduce_ops[o], NODE(A_INTS("axes", 1), A_INT("keepdims", 0)), 1, &e,
                 F32V(SHAPE(2, 3), w, w, w, w, w, w));
    }
    /* an empty output */
    s_expect(GX_OP_REDUCE_SUM, NODE(A_INTS("axes", 0)), 1, &e,
             ot_view(GX_F32, ot_alloc(4), SHAPE(1, 0, 3)));
    gx_view ei = ot_view(GX_I32, ot_alloc(4), SHAPE(0, 2));
    s_expect(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", 0)), 1, &ei, I32V(SHAPE(1, 2), INT32_MIN, INT32_MIN));
    s_expect(GX_OP_REDUCE_MEAN, NODE(A_INTS("axes", 0)), 1, &ei, I32V(SHAPE(1, 2), 0, 0));
}
END_TEST

START_TEST(test_reduce_ints)
{
    gx_view x = I32V(SHAPE(2, 3), 1, -2, 3, -4, 5, -7);
    s_expect(GX_OP_REDUCE_SUM, NODE(A_INTS("axes", 1)), 1, &x, I32V(SHAPE(2, 1), 2, -6));
    s_expect(GX_OP_REDUCE_MEAN, NODE(A_INTS("axes", 1)), 1, &x, I32V(SHAPE(2, 1), 0, -2));
    s_expect(GX_OP_REDUCE_PROD, NODE(A_INTS("axes", 0)), 1, &x, I32V(SHAPE(1, 3), -4, -10, -21));
    s_expect(GX_OP_REDUCE_L1, NODE(A_INTS("axes", 1)), 1, &x, I32V(SHAPE(2, 1), 6, 16));
    s_expect(GX_OP_REDUCE_SUM_SQUARE, NODE(A_INTS("axes", 1)), 1, &x, I32V(SHAPE(2, 1), 14, 90));
    s_expect(GX_OP_REDUCE_MAX, NODE(), 1, &x, I32V(SHAPE(1, 1), 5));
    s_expect(GX_OP_REDUCE_MIN, NODE(), 1, &x, I32V(SHAPE(1, 1), -7));
    /* the shape arithmetic exported models do: ReduceProd of an int64 shape */
    s_expect(GX_OP_REDUCE_PROD, NODE(A_INT("keepdims", 0)), 1,
             (gx_view[]){I64V(SHAPE(3), 2, 3, 4)}, ot_view(GX_I64, ot_copy(&(int64_t){24}, 8), 0, NULL));
    /* wrapping like the narrow type: INT32_MAX + 1 */
    s_expect(GX_OP_REDUCE_SUM, NODE(), 1, (gx_view[]){I32V(SHAPE(2), INT32_MAX, 1)},
             I32V(SHAPE(1), INT32_MIN));
    gx_view u = TV(GX_U64, uint64_t, SHAPE(3), UINT64_MAX, 5, 7);
    s_expect(GX_OP_REDUCE_MIN, NODE(), 1, &u, TV(GX_U64, uint64_t, SHAPE(1), 5));
    s_expect(GX_OP_REDUCE_MAX, NODE(), 1, &u, TV(GX_U64, uint64_t, SHAPE(1), UINT64_MAX));
}
END_TEST

/* Every op, dtype and layout against the reference: axes sets that leave
 * the innermost dim kept (columns walk) or reduced (rows walk), several
 * blocks, size-1 dims, rows longer than the lanes and wider than S_COLS. */
START_TEST(test_reduce_ref)
{
    static const gx_dtype dts[] = {GX_F32, GX_F64, GX_I32, GX_I64, GX_U32, GX_U64};
    static const int64_t shapes[][5] = {
        {3, 3, 4, 5}, {4, 2, 1, 7, 33}, {2, 300, 3}, {1, 37}, {3, 1, 2, 1}, {3, 3, 2, 5},
    };
    static const int64_t axsets[][4] = {
        {0}, {1, 0}, {1, -1}, {2, 0, 2}, {1, 1}, {2, 1, 0}, {3, 0, 1, 2}, {2, -1, 0},
    };
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (size_t a = 0; a < sizeof axsets / sizeof axsets[0]; a++) {
                const int64_t rank = shapes[s][0];
                bool fits = true, seen[GX_MAX_DIMS] = {false};
                for (int i = 1; fits && i <= axsets[a][0]; i++) {
                    const int64_t ax = axsets[a][i];
                    fits = ax < rank && ax >= -rank && !seen[ax < 0 ? ax + rank : ax];
                    seen[fits ? (ax < 0 ? ax + rank : ax) : 0] = true;
                }
                for (int o = 0; o < N_REDUCE_OPS && fits; o++) {
                    gx_op op = s_reduce_ops[o];
                    if (!s_is_float(dts[t]) && !s_int_ok(op))
                        continue;
                    /* products of hundreds of values overflow: keep them short */
                    if (op == GX_OP_REDUCE_PROD && !s_is_float(dts[t]) && s == 2)
                        continue;
                    ot_free_all(); /* the harness holds a few hundred blocks */
                    gx_view x = s_rand(dts[t], (int)shapes[s][0], &shapes[s][1], -3, 3);
                    if (op == GX_OP_REDUCE_LOG_SUM) { /* positive sums */
                        for (int64_t i = 0; i < x.numel; i++)
                            s_set(&x, i, fabs(s_get(&x, i)) + 0.5);
                    }
                    const bool keep = (a + o) % 2 == 0;
                    s_check_reduce(op, &x, (int)axsets[a][0], &axsets[a][1], keep, false,
                                   (a + o) % 3 == 0);
                }
            }
        }
    }
    /* no axes: all dims, or none (noop: each element alone, mapped) */
    for (int o = 0; o < N_REDUCE_OPS; o++) {
        ot_free_all();
        gx_view x = RANDV(3, 4, 5);
        for (int64_t i = 0; s_reduce_ops[o] == GX_OP_REDUCE_LOG_SUM && i < x.numel; i++)
            ((float *)x.data)[i] = fabsf(((float *)x.data)[i]) + 0.5f;
        s_check_reduce(s_reduce_ops[o], &x, 0, NULL, true, false, false);
        s_check_reduce(s_reduce_ops[o], &x, 0, NULL, false, false, true);
        s_check_reduce(s_reduce_ops[o], &x, 0, NULL, true, true, true);
    }
}
END_TEST

START_TEST(test_reduce_errors)
{
    gx_view x = RANDV(2, 3);
    ot_expect_error(GX_OP_REDUCE_SUM, NODE(A_INTS("axes", 2)), 1, &x, GX_EATTR,
                    "ReduceSum: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_REDUCE_MEAN, NULL, 2, (gx_view[]){x, I64V(SHAPE(2), 1, -1)}, GX_EATTR,
                    "ReduceMean: axis -1 is given twice");
    ot_expect_error(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", 0)), 2, (gx_view[]){x, I64V(SHAPE(1), 1)},
                    GX_EATTR, "ReduceMax: axes given both as attribute and as input 1");
    ot_expect_error(GX_OP_REDUCE_MIN, NULL, 2, (gx_view[]){x, I32V(SHAPE(1), 1)}, GX_EDTYPE,
                    "ReduceMin: axes input is int32, expected int64");
    ot_expect_error(GX_OP_REDUCE_PROD, NULL, 2, (gx_view[]){x, I64V(SHAPE(1, 1), 1)}, GX_ESHAPE,
                    "ReduceProd: axes input has rank 2, expected 1");
    ot_expect_error(GX_OP_REDUCE_L2, NULL, 1, (gx_view[]){RAND(GX_I32, 2)}, GX_EDTYPE,
                    "ReduceL2: input 0 is int32; supported: float32, float64");
    ot_expect_error(GX_OP_REDUCE_SUM, NULL, 1, (gx_view[]){RAND(GX_I8, 2)}, GX_EDTYPE,
                    "ReduceSum: input 0 is int8; supported: float32, float64, int64, int32, "
                    "uint32, uint64");
    ot_expect_error(GX_OP_REDUCE_SUM, NULL, 1,
                    (gx_view[]){ot_view(GX_F16, ot_alloc(4), SHAPE(2))}, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_REDUCE_SUM, NODE(A_INT("axis", 0)), 1, &x, GX_EATTR,
                    "ReduceSum: unknown attribute 'axis'");
    /* axes not known yet: the compiler retries at run time */
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_REDUCE_SUM, NULL, av, err, sizeof err), GX_OK);
    gx_view in[2] = {x, ot_view(GX_I64, NULL, SHAPE(1))}, out;
    gx_infer ic = {.attr = av, .n_in = 2, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_REDUCE_SUM)->infer(&ic), GX_INFER_DYNAMIC);
    ck_assert(gx_op_schema_get(GX_OP_REDUCE_SUM)->value_inputs & (1u << 1));
}
END_TEST

/* ---- ArgMax / ArgMin ---- */

/* Index of the max (min) of x along axis, numpy-style (first or last of
 * equal values; the first NaN wins). */
static void s_ref_arg(bool is_max, bool last, int axis, const gx_view *x, const gx_view *y)
{
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t outer = gx_shape_numel(axis, x->shape, INT64_MAX);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            int64_t best = 0;
            for (int64_t j = 1; j < n; j++) {
                double v = s_get(x, (o * n + j) * inner + c), b = s_get(x, (o * n + best) * inner + c);
                if (isnan(b))
                    break;
                if (isnan(v) || (is_max ? v > b : v < b) || (last && v == b))
                    best = j;
            }
            ((int64_t *)y->data)[o * inner + c] = best;
        }
    }
}

START_TEST(test_argmax_hand)
{
    /* the ONNX examples */
    gx_view x = F32V(SHAPE(2, 2), 2, 2, 3, 10);
    s_expect(GX_OP_ARGMAX, NULL, 1, &x, I64V(SHAPE(1, 2), 1, 1));
    s_expect(GX_OP_ARGMAX, NODE(A_INT("axis", 1)), 1, &x, I64V(SHAPE(2, 1), 0, 1));
    s_expect(GX_OP_ARGMAX, NODE(A_INT("axis", 1), A_INT("select_last_index", 1)), 1, &x,
             I64V(SHAPE(2, 1), 1, 1));
    s_expect(GX_OP_ARGMAX, NODE(A_INT("axis", -1), A_INT("keepdims", 0)), 1, &x,
             I64V(SHAPE(2), 0, 1));
    s_expect(GX_OP_ARGMIN, NODE(A_INT("axis", 1)), 1, &x, I64V(SHAPE(2, 1), 0, 0));
    s_expect(GX_OP_ARGMIN, NODE(A_INT("axis", 1), A_INT("select_last_index", 1)), 1, &x,
             I64V(SHAPE(2, 1), 1, 0));
    s_expect(GX_OP_ARGMIN, NODE(A_INT("keepdims", 0)), 1, &x, I64V(SHAPE(2), 0, 0));
    /* NaN: the first one wins either way */
    gx_view nx = F32V(SHAPE(5), 1, NAN, 7, NAN, -1);
    s_expect(GX_OP_ARGMAX, NULL, 1, &nx, I64V(SHAPE(1), 1));
    s_expect(GX_OP_ARGMIN, NULL, 1, &nx, I64V(SHAPE(1), 1));
    s_expect(GX_OP_ARGMAX, NODE(A_INT("select_last_index", 1)), 1, &nx, I64V(SHAPE(1), 3));
    /* integers */
    s_expect(GX_OP_ARGMIN, NULL, 1, (gx_view[]){U8V(SHAPE(4), 9, 0, 200, 0)}, I64V(SHAPE(1), 1));
    s_expect(GX_OP_ARGMAX, NODE(A_INT("keepdims", 0)), 1, (gx_view[]){I8V(SHAPE(3), -5, -1, -1)},
             ot_view(GX_I64, ot_copy(&(int64_t){1}, 8), 0, NULL));
}
END_TEST

START_TEST(test_argmax_ref)
{
    static const gx_dtype dts[] = {GX_F32, GX_F64, GX_I8, GX_U8, GX_I16, GX_U16,
                                   GX_I32, GX_I64, GX_U32, GX_U64};
    static const int64_t shapes[][4] = {{3, 4, 5, 6}, {2, 300, 7}, {1, 41}, {3, 2, 1, 600}};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (int axis = 0; axis < shapes[s][0]; axis++) {
                for (int mode = 0; mode < 4; mode++) {
                    ot_free_all();
                    gx_view x = s_rand(dts[t], (int)shapes[s][0], &shapes[s][1], -3, 3);
                    const bool is_max = mode < 2, last = mode % 2;
                    gx_op op = is_max ? GX_OP_ARGMAX : GX_OP_ARGMIN;
                    gx_view out;
                    s_run(op, NODE(A_INT("axis", axis - (mode == 1 ? x.ndim : 0)),
                                   A_INT("select_last_index", last)),
                          1, &x, 1, &out);
                    gx_view ref = s_like(GX_I64, out.ndim, out.shape);
                    s_ref_arg(is_max, last, axis, &x, &ref);
                    ck_assert_msg(s_same(&out, &ref, 0), "%s %s axis %d last %d", gx_op_name(op),
                                  gx_dtype_name(dts[t]), axis, last);
                }
            }
        }
    }
}
END_TEST

START_TEST(test_argmax_errors)
{
    ot_expect_error(GX_OP_ARGMAX, NODE(A_INT("axis", 2)), 1, (gx_view[]){RANDV(2, 3)}, GX_EATTR,
                    "ArgMax: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_ARGMIN, NODE(A_INT("axis", 1)), 1,
                    (gx_view[]){ot_view(GX_F32, ot_alloc(4), SHAPE(2, 0))}, GX_ESHAPE,
                    "ArgMin: axis 1 of [2,0] is empty");
    ot_expect_error(GX_OP_ARGMIN, NULL, 1, (gx_view[]){ot_view(GX_BOOL, ot_alloc(4), SHAPE(2))},
                    GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_ARGMAX, NULL, 1, (gx_view[]){SCALAR_F32(1)}, GX_EATTR,
                    "ArgMax: axis 0 is out of range for rank 0");
}
END_TEST

/* ---- TopK ---- */

/* The k best of each slice by sorting (value, index) pairs: larger
 * (smaller) values first, NaN above all, lower index first on ties. */
static const gx_view *s_sort_x;
static int64_t s_sort_base, s_sort_inner;
static bool s_sort_largest;

static int s_cmp_pair(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    double va = s_get(s_sort_x, s_sort_base + a * s_sort_inner);
    double vb = s_get(s_sort_x, s_sort_base + b * s_sort_inner);
    if (isnan(va) || isnan(vb)) {
        if (isnan(va) != isnan(vb))
            return (isnan(va) == s_sort_largest) ? -1 : 1;
    } else if (va != vb) {
        return (va > vb) == s_sort_largest ? -1 : 1;
    }
    return a < b ? -1 : 1;
}

static void s_ref_topk(const gx_view *x, int axis, int64_t k, bool largest, const gx_view *v,
                       const gx_view *idx)
{
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t outer = gx_shape_numel(axis, x->shape, INT64_MAX);
    int64_t *order = ot_alloc((size_t)n * 8 + 8);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            for (int64_t i = 0; i < n; i++)
                order[i] = i;
            s_sort_x = x;
            s_sort_base = o * n * inner + c;
            s_sort_inner = inner;
            s_sort_largest = largest;
            qsort(order, (size_t)n, sizeof *order, s_cmp_pair);
            for (int64_t j = 0; j < k; j++) {
                const int64_t at = (o * k + j) * inner + c;
                s_set(v, at, s_get(x, s_sort_base + order[j] * inner));
                ((int64_t *)idx->data)[at] = order[j];
            }
        }
    }
}

START_TEST(test_topk_hand)
{
    /* the ONNX example: 0..11 as [3,4], k = 3 */
    gx_view x = F32V(SHAPE(3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    gx_view out[2];
    s_run(GX_OP_TOPK, NODE(A_INT("axis", 1)), 2, (gx_view[]){x, I64V(SHAPE(1), 3)}, 2, out);
    ck_assert(s_eq(&out[0], F32V(SHAPE(3, 3), 3, 2, 1, 7, 6, 5, 11, 10, 9)));
    ck_assert(s_eq(&out[1], I64V(SHAPE(3, 3), 3, 2, 1, 3, 2, 1, 3, 2, 1)));
    s_run(GX_OP_TOPK, NODE(A_INT("largest", 0)), 2, (gx_view[]){x, I64V(SHAPE(1), 2)}, 2, out);
    ck_assert(s_eq(&out[0], F32V(SHAPE(3, 2), 0, 1, 4, 5, 8, 9)));
    ck_assert(s_eq(&out[1], I64V(SHAPE(3, 2), 0, 1, 0, 1, 0, 1)));
    /* ties go to the lower index; axis 0 (strided slices); opset-1 attribute k */
    gx_view t = F32V(SHAPE(4, 2), 1, 5, 3, 5, 3, 5, 2, 4);
    s_run(GX_OP_TOPK, NODE(A_INT("axis", 0), A_INT("k", 3)), 1, &t, 2, out);
    ck_assert(s_eq(&out[0], F32V(SHAPE(3, 2), 3, 5, 3, 5, 2, 5)));
    ck_assert(s_eq(&out[1], I64V(SHAPE(3, 2), 1, 0, 2, 1, 3, 2)));
    /* k = 0 and k = n; sorted=0 is accepted (and sorted anyway) */
    s_run(GX_OP_TOPK, NULL, 2, (gx_view[]){x, I64V(SHAPE(1), 0)}, 2, out);
    ot_check_shape(&out[0], SHAPE(3, 0));
    s_run(GX_OP_TOPK, NODE(A_INT("axis", 0)), 2,
          (gx_view[]){ot_view(GX_F32, NULL, SHAPE(0, 5)), I64V(SHAPE(1), 0)}, 2, out);
    ot_check_shape(&out[1], SHAPE(0, 5));
    s_run(GX_OP_TOPK, NODE(A_INT("sorted", 0), A_INT("largest", 0)), 2,
          (gx_view[]){F32V(SHAPE(4), 3, NAN, -1, 2), I64V(SHAPE(1), 4)}, 2, out);
    ck_assert(s_eq(&out[0], F32V(SHAPE(4), -1, 2, 3, NAN)));
    ck_assert(s_eq(&out[1], I64V(SHAPE(4), 2, 3, 0, 1)));
}
END_TEST

START_TEST(test_topk_ref)
{
    static const gx_dtype dts[] = {GX_F32, GX_F64, GX_I32, GX_U8, GX_I64};
    static const int64_t shapes[][4] = {{2, 5, 100}, {3, 7, 3, 9}, {1, 1000}};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (int axis = 0; axis < shapes[s][0]; axis++) {
                const int64_t n = shapes[s][1 + axis];
                /* (k 10 of 1000: float32 rows pass over blocks, ops/cpu/reduce.c) */
                const int64_t ks[] = {1, n / 3, n, n >= 40 ? 10 : 1};
                for (int ki = 0; ki < 4; ki++) {
                    for (int largest = 0; largest < 2; largest++) {
                        ot_free_all();
                        gx_view x = s_rand(dts[t], (int)shapes[s][0], &shapes[s][1], -4, 4);
                        float *xf = x.data;
                        if (x.dtype == GX_F32 && ki == 3) /* whole numbers: many ties */
                            for (int64_t e = 0; e < x.numel; e++)
                                xf[e] = rintf(xf[e]);
                        if (x.dtype == GX_F32 && x.numel >= 1000) /* NaN above everything */
                            xf[777] = xf[500] = NAN;
                        gx_view out[2];
                        s_run(GX_OP_TOPK, NODE(A_INT("axis", axis), A_INT("largest", largest)), 2,
                              (gx_view[]){x, I64V(SHAPE(1), ks[ki])}, 2, out);
                        gx_view rv = s_like(x.dtype, out[0].ndim, out[0].shape);
                        gx_view ri = s_like(GX_I64, out[1].ndim, out[1].shape);
                        s_ref_topk(&x, axis, ks[ki], largest, &rv, &ri);
                        ck_assert_msg(s_same(&out[0], &rv, 0) && s_same(&out[1], &ri, 0),
                                      "TopK %s axis %d k %lld largest %d", gx_dtype_name(x.dtype),
                                      axis, (long long)ks[ki], largest);
                    }
                }
            }
        }
    }
}
END_TEST

START_TEST(test_topk_errors)
{
    gx_view x = RANDV(3, 4);
    gx_view in[2] = {x, I64V(SHAPE(1), 5)};
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[2];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NULL, 2, in, 1, av, 2, out, err), GX_ESHAPE);
    ck_assert_str_eq(err, "TopK: k = 5 is out of range for axis 1 of [3,4]");
    in[1] = I64V(SHAPE(1), -1);
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NULL, 2, in, 1, av, 2, out, err), GX_ESHAPE);
    in[1] = I64V(SHAPE(2), 1, 2);
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NULL, 2, in, 1, av, 2, out, err), GX_ESHAPE);
    ck_assert_str_eq(err, "TopK: k has shape [2], expected [1]");
    in[1] = I32V(SHAPE(1), 1);
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NULL, 2, in, 1, av, 2, out, err), GX_EDTYPE);
    ck_assert_str_eq(err, "TopK: k is int32, expected int64");
    in[1] = I64V(SHAPE(1), 1);
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NODE(A_INT("k", 1)), 2, in, 1, av, 2, out, err),
                     GX_EATTR);
    ck_assert_str_eq(err, "TopK: k given both as attribute and as input 1");
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NULL, 1, in, 1, av, 2, out, err), GX_EATTR);
    ck_assert_str_eq(err, "TopK: k is required (input 1 or attribute)");
    ck_assert_int_eq(ot_run_n(GX_OP_TOPK, NODE(A_INT("axis", -3)), 2, in, 1, av, 2, out, err),
                     GX_EATTR);
    ck_assert_str_eq(err, "TopK: axis -3 is out of range for rank 2");
    /* k not known yet */
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_TOPK, NULL, av, err, sizeof err), GX_OK);
    gx_view dyn[2] = {x, ot_view(GX_I64, NULL, SHAPE(1))};
    gx_infer ic = {.attr = av, .n_in = 2, .in = dyn, .n_out = 2, .out = out, .err = err,
                   .errlen = sizeof err};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_TOPK)->infer(&ic), GX_INFER_DYNAMIC);
}
END_TEST

/* ---- MatMul / Gemm / MatMulInteger ---- */

/* Element (i, j) of matrix bi of a numpy matmul of a and b, with a's
 * entries minus za and b's minus zb (per row / column when their numel is
 * above 1; NULL: 0). */
static double s_ref_dot(const gx_view *a, const gx_view *b, const gx_view *y, int64_t flat,
                        const gx_view *za, const gx_view *zb)
{
    const int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1, kk = a->shape[a->ndim - 1];
    const int64_t n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    const int64_t j = b->ndim > 1 ? flat % n : 0;
    const int64_t i = a->ndim > 1 ? (flat / (b->ndim > 1 ? n : 1)) % m : 0;
    int64_t bi = flat / ((a->ndim > 1 ? m : 1) * (b->ndim > 1 ? n : 1));
    const int nbd = y->ndim - (a->ndim > 1) - (b->ndim > 1);
    int64_t ma = 0, mb = 0, sa = 1, sb = 1;
    for (int d = nbd - 1; d >= 0; d--) {
        const int64_t id = bi % y->shape[d];
        bi /= y->shape[d];
        const int da = d - nbd + (a->ndim - 2), db = d - nbd + (b->ndim - 2);
        if (da >= 0) {
            ma += (a->shape[da] == 1 ? 0 : id) * sa;
            sa *= a->shape[da];
        }
        if (db >= 0) {
            mb += (b->shape[db] == 1 ? 0 : id) * sb;
            sb *= b->shape[db];
        }
    }
    double s = 0;
    for (int64_t l = 0; l < kk; l++) {
        double x = s_get(a, (ma * m + i) * kk + l), z = s_get(b, (mb * kk + l) * n + j);
        if (za)
            x -= s_get(za, za->numel > 1 ? ma * m + i : 0);
        if (zb)
            z -= s_get(zb, zb->numel > 1 ? mb * n + j : 0);
        s += x * z;
    }
    return s;
}

START_TEST(test_matmul_dtypes)
{
    static const gx_dtype dts[] = {GX_F32, GX_F64, GX_I32, GX_I64, GX_U32, GX_U64};
    static const int64_t cases[][2][5] = {
        {{2, 3, 4}, {2, 4, 5}},       {{1, 7}, {1, 7}},         {{3, 2, 3, 4}, {2, 4, 5}},
        {{4, 2, 1, 3, 4}, {3, 3, 4, 2}}, {{2, 5, 3}, {1, 3}},       {{1, 4}, {3, 2, 4, 3}},
        {{3, 2, 0, 4}, {2, 4, 5}},    {{2, 3, 0}, {2, 0, 2}},
    };
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            ot_free_all();
            gx_view in[2];
            for (int i = 0; i < 2; i++)
                in[i] = s_rand(dts[t], (int)cases[c][i][0], &cases[c][i][1], -5, 5);
            gx_view out;
            s_run(GX_OP_MATMUL, NULL, 2, in, 1, &out);
            ck_assert_int_eq(out.dtype, dts[t]);
            gx_view ref = s_like(dts[t], out.ndim, out.shape);
            for (int64_t e = 0; e < out.numel; e++) {
                double v = s_ref_dot(&in[0], &in[1], &out, e, NULL, NULL);
                s_set(&ref, e, dts[t] == GX_U32 ? (double)(uint32_t)(int64_t)v
                               : dts[t] == GX_U64 ? (double)(uint64_t)(int64_t)v
                                                  : v);
            }
            ck_assert_msg(s_same(&out, &ref, 1e-5), "MatMul %s case %zu", gx_dtype_name(dts[t]),
                          c);
        }
    }
}
END_TEST

START_TEST(test_gemm_dtypes)
{
    /* [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]], + C [100, 200] */
    gx_view a = F64V(SHAPE(2, 2), 1, 2, 3, 4), b = F64V(SHAPE(2, 2), 5, 6, 7, 8);
    s_expect(GX_OP_GEMM, NULL, 3, (gx_view[]){a, b, F64V(SHAPE(2), 100, 200)},
             F64V(SHAPE(2, 2), 119, 222, 143, 250));
    s_expect(GX_OP_GEMM, NODE(A_INT("transA", 1), A_FLOAT("alpha", 2), A_FLOAT("beta", -1)), 3,
             (gx_view[]){a, b, F64V(SHAPE(2), 100, 200)}, F64V(SHAPE(2, 2), -48, -140, -24, -112));
    gx_view ia = I32V(SHAPE(2, 2), 1, 2, 3, 4), ib = I32V(SHAPE(2, 2), 5, 6, 7, 8);
    s_expect(GX_OP_GEMM, NULL, 2, (gx_view[]){ia, ib}, I32V(SHAPE(2, 2), 19, 22, 43, 50));
    s_expect(GX_OP_GEMM, NODE(A_INT("transB", 1), A_FLOAT("beta", 2)), 3,
             (gx_view[]){ia, ib, I32V(SHAPE(2, 1), 1, -1)}, I32V(SHAPE(2, 2), 19, 25, 37, 51));
    s_expect(GX_OP_GEMM, NODE(A_INT("transA", 1), A_INT("transB", 1), A_FLOAT("alpha", -1)), 3,
             (gx_view[]){TV(GX_I64, int64_t, SHAPE(2, 2), 1, 2, 3, 4),
                         TV(GX_I64, int64_t, SHAPE(2, 2), 5, 6, 7, 8),
                         TV(GX_I64, int64_t, SHAPE(1), 1000)},
             TV(GX_I64, int64_t, SHAPE(2, 2), 1000 - 23, 1000 - 31, 1000 - 34, 1000 - 46));
    /* K == 0: beta * C, and A and B may have no data */
    s_expect(GX_OP_GEMM, NODE(A_INT("transA", 1), A_FLOAT("beta", 2)), 3,
             (gx_view[]){ot_view(GX_F32, NULL, SHAPE(0, 2)), ot_view(GX_F32, NULL, SHAPE(0, 3)),
                         F32V(SHAPE(3), 1, 2, 3)},
             F32V(SHAPE(2, 3), 2, 4, 6, 2, 4, 6));
    /* threads over more rows */
    gx_view out;
    s_run(GX_OP_GEMM, NODE(A_FLOAT("beta", 3)), 3,
          (gx_view[]){RAND(GX_U64, 17, 5), RAND(GX_U64, 5, 9), RAND(GX_U64, 17, 1)}, 1, &out);
    s_run(GX_OP_GEMM, NODE(A_INT("transA", 1)), 2,
          (gx_view[]){RAND(GX_F64, 5, 17), RAND(GX_F64, 5, 9)}, 1, &out);
    ot_check_shape(&out, SHAPE(17, 9));
}
END_TEST

START_TEST(test_matmul_integer)
{
    /* the ONNX example */
    gx_view a = U8V(SHAPE(4, 3), 11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0);
    gx_view b = U8V(SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
    s_expect(GX_OP_MATMUL_INTEGER, NULL, 4, (gx_view[]){a, b, U8V(SHAPE(1), 12), U8V(SHAPE(1), 0)},
             I32V(SHAPE(4, 2), -38, -83, -44, -98, -50, -113, -56, -128));
    /* no zero points; a scalar and per-row / per-column ones */
    s_expect(GX_OP_MATMUL_INTEGER, NULL, 2, (gx_view[]){a, b},
             I32V(SHAPE(4, 2), 34, 97, 28, 82, 22, 67, 16, 52));
    s_expect(GX_OP_MATMUL_INTEGER, NULL, 4,
             (gx_view[]){a, b, NONE, TV(GX_U8, uint8_t, SHAPE(2), 1, 4)},
             I32V(SHAPE(4, 2), 34 - 21, 97 - 84, 28 - 18, 82 - 72, 22 - 15, 67 - 60, 16 - 12,
                  52 - 48));
    static const int64_t cases[][2][5] = {
        {{2, 5, 7}, {2, 7, 3}}, {{3, 2, 3, 4}, {2, 4, 5}}, {{1, 6}, {2, 6, 33}}, {{2, 9, 3}, {1, 3}},
    };
    for (int dts = 0; dts < 4; dts++) {
        const gx_dtype ta = dts & 1 ? GX_I8 : GX_U8, tb = dts & 2 ? GX_I8 : GX_U8;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            for (int zp = 0; zp < 3; zp++) {
                ot_free_all();
                gx_view x = s_rand(ta, (int)cases[c][0][0], &cases[c][0][1], -128, 255);
                gx_view w = s_rand(tb, (int)cases[c][1][0], &cases[c][1][1], -128, 255);
                gx_view in[4] = {x, w, NONE, NONE};
                if (zp == 1) {
                    in[2] = s_rand(ta, SHAPE(1), -128, 255);
                    in[3] = s_rand(tb, 0, NULL, -128, 255);
                } else if (zp == 2 && x.ndim >= 2 && w.ndim >= 2) {
                    int64_t zs[GX_MAX_DIMS];
                    memcpy(zs, x.shape, sizeof zs);
                    zs[x.ndim - 1] = 1;
                    in[2] = s_rand(ta, x.ndim, zs, -128, 255);
                    memcpy(zs, w.shape, sizeof zs);
                    zs[w.ndim - 2] = 1;
                    in[3] = s_rand(tb, w.ndim, zs, -128, 255);
                }
                gx_view out;
                s_run(GX_OP_MATMUL_INTEGER, NULL, 4, in, 1, &out);
                gx_view ref = s_like(GX_I32, out.ndim, out.shape);
                for (int64_t e = 0; e < out.numel; e++)
                    s_set(&ref, e,
                          s_ref_dot(&x, &w, &out, e, in[2].ndim >= 0 ? &in[2] : NULL,
                                    in[3].ndim >= 0 ? &in[3] : NULL));
                ck_assert_msg(s_same(&out, &ref, 0), "MatMulInteger case %zu dtypes %d zp %d",
                              c, dts, zp);
            }
        }
    }
}
END_TEST

START_TEST(test_linalg_mm_errors)
{
    gx_view a = RANDV(2, 3);
    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){RAND(GX_I8, 2, 3), RAND(GX_I8, 3, 2)},
                    GX_EDTYPE,
                    "MatMul: input 0 is int8; supported: float32, float64, int64, int32, uint32, "
                    "uint64");
    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){a, RAND(GX_F64, 3, 2)}, GX_EDTYPE,
                    "MatMul: B is float64 but A is float32");
    ot_expect_error(GX_OP_GEMM, NULL, 3, (gx_view[]){a, RANDV(3, 2), RAND(GX_I64, 2)}, GX_EDTYPE,
                    "Gemm: C is int64 but A is float32");
    ot_expect_error(GX_OP_GEMM, NODE(A_FLOAT("alpha", 0.5)), 2,
                    (gx_view[]){RAND(GX_I32, 2, 3), RAND(GX_I32, 3, 2)}, GX_EUNSUPPORTED,
                    "Gemm: alpha 0.5 and beta 1 on int32; integer dtypes need integer alpha and "
                    "beta");
    gx_view u = RAND(GX_U8, 4, 3), w = RAND(GX_U8, 3, 2);
    ot_expect_error(GX_OP_MATMUL_INTEGER, NULL, 2, (gx_view[]){a, w}, GX_EDTYPE,
                    "MatMulInteger: input 0 is float32; supported: int8, uint8");
    ot_expect_error(GX_OP_MATMUL_INTEGER, NULL, 3, (gx_view[]){u, w, RAND(GX_I8, 1)}, GX_EDTYPE,
                    "MatMulInteger: a_zero_point is int8 but A is uint8");
    ot_expect_error(GX_OP_MATMUL_INTEGER, NULL, 3, (gx_view[]){u, w, RAND(GX_U8, 3)}, GX_ESHAPE,
                    "MatMulInteger: a_zero_point is [3]; for A [4,3] it must be a scalar, a "
                    "vector of 4 or A with its K dim 1");
    ot_expect_error(GX_OP_MATMUL_INTEGER, NULL, 4, (gx_view[]){u, w, NONE, RAND(GX_U8, 2, 2)},
                    GX_ESHAPE, NULL);
    ot_expect_error(GX_OP_MATMUL_INTEGER, NULL, 2, (gx_view[]){u, RAND(GX_U8, 4, 2)}, GX_ESHAPE,
                    "MatMulInteger: A is [4,3] but B is [4,2] (K mismatch)");
}
END_TEST

/* ---- Einsum ---- */

START_TEST(test_einsum_hand)
{
    gx_view a = F64V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ij->ji")), 1, &a,
             F64V(SHAPE(3, 2), 1, 4, 2, 5, 3, 6));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ba")), 1, &a,
             F64V(SHAPE(3, 2), 1, 4, 2, 5, 3, 6));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ij->i")), 1, &a, F64V(SHAPE(2), 6, 15));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ij->")), 1, &a,
             ot_view(GX_F64, ot_copy(&(double){21}, 8), 0, NULL));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "i j")), 1, &a, a);
    gx_view v = F32V(SHAPE(3), 1, 2, 3), w = F32V(SHAPE(3), 4, 5, 6);
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "i,i")), 2, (gx_view[]){v, w}, SCALAR_F32(32));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "i,j->ij")), 2,
             (gx_view[]){F32V(SHAPE(2), 1, 2), w}, F32V(SHAPE(2, 3), 4, 5, 6, 8, 10, 12));
    gx_view sq = I64V(SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ii")), 1, &sq,
             ot_view(GX_I64, ot_copy(&(int64_t){15}, 8), 0, NULL));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ii->i")), 1, &sq, I64V(SHAPE(3), 1, 5, 9));
    /* the ONNX batch diagonal: "...ii ->...i" */
    gx_view bd = F64V(SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "...ii ->...i")), 1, &bd,
             F64V(SHAPE(2, 2), 1, 4, 5, 8));
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "i...->...")), 1, &a, F64V(SHAPE(3), 5, 7, 9));
    /* three operands, a label in all of them */
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "i,i,i->")), 3, (gx_view[]){v, v, w},
             SCALAR_F32(4 + 20 + 54));
}
END_TEST

/* float32 products in any label order (the batch-of-products path, with
 * rows past one block and labels in every group) against the general
 * loop's float64 sums of the same values. */
START_TEST(test_einsum_products)
{
    static const struct {
        const char *eq;
        int64_t a[5], b[5];
    } cases[] = {
        {"bhid,bhjd->bhij", {4, 2, 3, 70, 8}, {4, 2, 3, 20, 8}},
        {"bhij,bhjd->bhid", {4, 2, 3, 70, 20}, {4, 2, 3, 20, 8}},
        {"ik,jk->ij", {2, 130, 9}, {2, 17, 9}},
        {"kai,kjb->ajbi", {3, 5, 3, 4}, {3, 5, 6, 2}},
        {"abc,cd->dba", {3, 4, 3, 5}, {2, 5, 6}},
        {"i,j->ji", {1, 7}, {1, 5}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_view in[2] = {ot_rand(GX_F32, (int)cases[c].a[0], &cases[c].a[1]),
                         ot_rand(GX_F32, (int)cases[c].b[0], &cases[c].b[1])};
        gx_view in64[2];
        for (int i = 0; i < 2; i++) {
            in64[i] = s_like(GX_F64, in[i].ndim, in[i].shape);
            for (int64_t e = 0; e < in[i].numel; e++)
                s_set(&in64[i], e, s_get(&in[i], e));
        }
        gx_view got, want;
        s_run(GX_OP_EINSUM, NODE(A_STR("equation", cases[c].eq)), 2, in, 1, &got);
        s_run(GX_OP_EINSUM, NODE(A_STR("equation", cases[c].eq)), 2, in64, 1, &want);
        ck_assert_int_eq(got.numel, want.numel);
        for (int64_t e = 0; e < want.numel; e++)
            ck_assert_msg(fabs(s_get(&got, e) - s_get(&want, e)) <=
                              1e-5 * (1 + fabs(s_get(&want, e))),
                          "Einsum %s: element %lld", cases[c].eq, (long long)e);
    }
}
END_TEST

/* Einsum against MatMul, including "..." batch dims that broadcast. */
START_TEST(test_einsum_matmul)
{
    static const struct {
        const char *eq;
        int64_t a[5], b[5];
    } cases[] = {
        {"bij, bjk -> bik", {3, 5, 2, 3}, {3, 5, 3, 4}},
        {"ij,jk", {2, 7, 9}, {2, 9, 4}},
        {"...ij,...jk->...ik", {4, 2, 1, 3, 4}, {3, 5, 4, 2}},
        {"...ij,jk->...ik", {2, 3, 4}, {2, 4, 6}},
        {"ij,...jk->...ik", {2, 3, 4}, {3, 2, 4, 6}},
        {"Ab,bC", {2, 40, 30}, {2, 30, 20}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_view in[2] = {ot_rand(GX_F32, (int)cases[c].a[0], &cases[c].a[1]),
                         ot_rand(GX_F32, (int)cases[c].b[0], &cases[c].b[1])};
        gx_view got, want;
        s_run(GX_OP_EINSUM, NODE(A_STR("equation", cases[c].eq)), 2, in, 1, &got);
        s_run(GX_OP_MATMUL, NULL, 2, in, 1, &want);
        ck_assert_msg(s_same(&got, &want, 1e-5), "Einsum %s", cases[c].eq);
    }
    /* integers: a batch of dot products */
    gx_view x = I32V(SHAPE(2, 3), 1, 2, 3, -1, -2, -3), y = I32V(SHAPE(2, 3), 1, 1, 1, 2, 2, 2);
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "bi,bi->b")), 2, (gx_view[]){x, y},
             I32V(SHAPE(2), 6, -12));
    /* summed dim of size 0 */
    s_expect(GX_OP_EINSUM, NODE(A_STR("equation", "ij,jk->ik")), 2,
             (gx_view[]){ot_view(GX_F32, ot_alloc(4), SHAPE(2, 0)),
                         ot_view(GX_F32, ot_alloc(4), SHAPE(0, 2))},
             F32V(SHAPE(2, 2), 0, 0, 0, 0));
}
END_TEST

START_TEST(test_einsum_errors)
{
    gx_view a = RANDV(2, 3), b = RANDV(4, 5);
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij,jk")), 2, (gx_view[]){a, b},
                    GX_ESHAPE, "Einsum: label 'j' has sizes 3 and 4");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij")), 2, (gx_view[]){a, b}, GX_EATTR,
                    "Einsum: equation has 1 operands but 2 inputs");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij,jk,kl")), 2, (gx_view[]){a, b},
                    GX_EATTR, "Einsum: equation has more operands than the 2 inputs");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "i1")), 1, &a, GX_EATTR,
                    "Einsum: operand 0 has the invalid character '1'");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ijk")), 1, &a, GX_ESHAPE,
                    "Einsum: operand 0 has 3 labels but rank 2");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "i..")), 1, &a, GX_EATTR,
                    "Einsum: operand 0 has a '.' that is not one \"...\"");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "...i->i")), 1, &a, GX_EATTR,
                    "Einsum: the operands have \"...\" dims but the output has no \"...\"");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij->k")), 1, &a, GX_EATTR,
                    "Einsum: output label 'k' is in no operand");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij->ii")), 1, &a, GX_EATTR,
                    "Einsum: output label 'i' is repeated");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "ij->i->j")), 1, &a, GX_EATTR,
                    "Einsum: equation has more than one output");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "...i,...i")), 2,
                    (gx_view[]){RANDV(2, 3), RANDV(3, 3)}, GX_ESHAPE,
                    "Einsum: \"...\" dims of the operands do not broadcast (2 and 3)");
    ot_expect_error(GX_OP_EINSUM, NODE(A_STR("equation", "i,i")), 2,
                    (gx_view[]){RANDV(3), RAND(GX_F64, 3)}, GX_EDTYPE,
                    "Einsum: an operand is float64 but operand 0 is float32");
    ot_expect_error(GX_OP_EINSUM, NULL, 1, &a, GX_EATTR, "Einsum: attribute 'equation' is required");
}
END_TEST

/* ---- Det ---- */

/* Determinant by cofactor expansion (small matrices). */
static double s_ref_det(const double *a, int n)
{
    if (n == 0)
        return 1;
    if (n == 1)
        return a[0];
    double sub[64], s = 0;
    for (int c = 0; c < n; c++) {
        int k = 0;
        for (int i = 1; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (j != c)
                    sub[k++] = a[i * n + j];
            }
        }
        s += (c % 2 ? -1 : 1) * a[c] * s_ref_det(sub, n - 1);
    }
    return s;
}

START_TEST(test_det)
{
    s_expect(GX_OP_DET, NULL, 1, (gx_view[]){F32V(SHAPE(2, 2), 1, 2, 3, 4)}, SCALAR_F32(-2));
    s_expect(GX_OP_DET, NULL, 1,
             (gx_view[]){F64V(SHAPE(2, 3, 3), 0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 0, 1, 1, 1)},
             F64V(SHAPE(2), -1, 6));
    /* singular: exactly 0 */
    s_expect(GX_OP_DET, NULL, 1, (gx_view[]){F32V(SHAPE(2, 2), 1, 2, 2, 4)}, SCALAR_F32(0));
    s_expect(GX_OP_DET, NULL, 1, (gx_view[]){ot_view(GX_F32, ot_alloc(4), SHAPE(3, 0, 0))},
             F32V(SHAPE(3), 1, 1, 1));
    for (int n = 1; n <= 5; n++) {
        gx_view x = s_rand(GX_F64, SHAPE(7, n, n), 0, 0), out;
        s_run(GX_OP_DET, NULL, 1, &x, 1, &out);
        for (int b = 0; b < 7; b++) {
            double want = s_ref_det((const double *)x.data + b * n * n, n);
            double got = ((const double *)out.data)[b];
            ck_assert_msg(fabs(got - want) <= 1e-12 * (1 + fabs(want)), "Det n=%d: %g vs %g", n,
                          got, want);
        }
    }
    ot_expect_error(GX_OP_DET, NULL, 1, (gx_view[]){RANDV(2, 3)}, GX_ESHAPE,
                    "Det: X is [2,3]; expected [..., M, M]");
    ot_expect_error(GX_OP_DET, NULL, 1, (gx_view[]){RANDV(3)}, GX_ESHAPE,
                    "Det: X is [3]; expected [..., M, M]");
    ot_expect_error(GX_OP_DET, NULL, 1, (gx_view[]){RAND(GX_I32, 2, 2)}, GX_EDTYPE,
                    "Det: input 0 is int32; supported: float32, float64");
}
END_TEST

Suite *ops_reduce_suite(void)
{
    Suite *s = suite_create("ops_reduce");
    TCase *tc = tcase_create("reduce");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reduce_hand);
    tcase_add_test(tc, test_reduce_nan_and_empty);
    tcase_add_test(tc, test_reduce_ints);
    tcase_add_test(tc, test_reduce_ref);
    tcase_add_test(tc, test_reduce_errors);
    tcase_add_test(tc, test_argmax_hand);
    tcase_add_test(tc, test_argmax_ref);
    tcase_add_test(tc, test_argmax_errors);
    tcase_add_test(tc, test_topk_hand);
    tcase_add_test(tc, test_topk_ref);
    tcase_add_test(tc, test_topk_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("linalg");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_matmul_dtypes);
    tcase_add_test(tc, test_gemm_dtypes);
    tcase_add_test(tc, test_matmul_integer);
    tcase_add_test(tc, test_linalg_mm_errors);
    tcase_add_test(tc, test_einsum_hand);
    tcase_add_test(tc, test_einsum_matmul);
    tcase_add_test(tc, test_einsum_products);
    tcase_add_test(tc, test_einsum_errors);
    tcase_add_test(tc, test_det);
    suite_add_tcase(s, tc);
    return s;
}
