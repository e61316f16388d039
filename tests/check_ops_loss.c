/*
 * Op tests of the loss family (GX_OPS_LOSS in ops/op.h): hand values, a
 * naive reference in double precision (the ONNX reference's steps: gathered
 * weights zeroed at ignore_index, mean = weighted sum / sum of weights) over
 * shapes, dtypes, weights, ignore_index and reductions, and the errors infer
 * gives. Every run is repeated as nth = 3 shares, which must match nth = 1.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "tests/optest.h"
#include "tests/testutil.h"

#define S_TV(dt, ctype, ...)                                                  \
    ot_view(dt, ot_copy((ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__})),
#define F64V(shape, ...) S_TV(GX_F64, double, __VA_ARGS__) shape)
#define I64V(shape, ...) S_TV(GX_I64, int64_t, __VA_ARGS__) shape)
#define I32V(shape, ...) S_TV(GX_I32, int32_t, __VA_ARGS__) shape)
#define NONE ((gx_view){.ndim = -1})
#define SCALAR_F32(v) ot_view(GX_F32, ot_copy(&(float){v}, 4), 0, NULL)
#define SCALAR_F64(v) ot_view(GX_F64, ot_copy(&(double){v}, 8), 0, NULL)
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* Element i of a float32, float64, int32 or int64 view. */
static double s_get(const gx_view *v, int64_t i)
{
    if (v->dtype == GX_F32)
        return ((const float *)v->data)[i];
    if (v->dtype == GX_F64)
        return ((const double *)v->data)[i];
    if (v->dtype == GX_I32)
        return ((const int32_t *)v->data)[i];
    ck_assert_int_eq(v->dtype, GX_I64);
    return (double)((const int64_t *)v->data)[i];
}

static void s_set(const gx_view *v, int64_t i, double x)
{
    if (v->dtype == GX_F32)
        ((float *)v->data)[i] = (float)x;
    else if (v->dtype == GX_F64)
        ((double *)v->data)[i] = x;
    else if (v->dtype == GX_I32)
        ((int32_t *)v->data)[i] = (int32_t)x;
    else
        ((int64_t *)v->data)[i] = (int64_t)x;
}

static gx_view s_alloc(gx_dtype dt, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return ot_view(dt, ot_alloc((size_t)n * gx_dtype_size(dt)), ndim, shape);
}

/* Whether got matches want (same dtype, shape, values within tol relative
 * to 1 + |want|; NaN matches NaN). */
static bool s_close(const gx_view *got, const gx_view *want, double tol)
{
    if (got->dtype != want->dtype || got->ndim != want->ndim || got->numel != want->numel)
        return false;
    for (int d = 0; d < got->ndim; d++)
        if (got->shape[d] != want->shape[d])
            return false;
    for (int64_t i = 0; i < got->numel; i++) {
        double a = s_get(got, i), b = s_get(want, i);
        if (isnan(a) && isnan(b))
            continue;
        if (!(fabs(a - b) <= tol * (1 + fabs(b))))
            return false;
    }
    return true;
}

/* Runs op with nth = 1 and 3; each of the n_out outputs must match want. */
static void s_expect_n(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                       const gx_view *want, double tol)
{
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out[2];
        char err[ERRLEN];
        int rc = ot_run_n(op, node, n_in, in, nth, av, n_out, out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
        for (int o = 0; o < n_out; o++)
            ck_assert_msg(s_close(&out[o], &want[o], tol), "%s nth=%d: output %d differs",
                          gx_op_name(op), nth, o);
    }
}

/* ---- hand values ---- */

/* x [2, 3], labels {2, 0}: losses -x[0][2] = -3 and -x[1][0] = -4. */
START_TEST(test_nllloss_hand)
{
    gx_view x = F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    gx_view t = I64V(SHAPE(2), 2, 0);
    gx_view w = F32V(SHAPE(3), 0.5f, 1, 2);
    s_expect_n(GX_OP_NLLLOSS, NODE(A_STR("reduction", "none")), 2, (gx_view[]){x, t}, 1,
               (gx_view[]){F32V(SHAPE(2), -3, -4)}, 0);
    s_expect_n(GX_OP_NLLLOSS, NODE(A_STR("reduction", "sum")), 2, (gx_view[]){x, t}, 1,
               (gx_view[]){SCALAR_F32(-7)}, 0);
    s_expect_n(GX_OP_NLLLOSS, NULL, 2, (gx_view[]){x, t}, 1,
               (gx_view[]){SCALAR_F32(-3.5f)}, 0);
    /* weights 2 and 0.5: (-6 - 2) / 2.5 */
    s_expect_n(GX_OP_NLLLOSS, NULL, 3, (gx_view[]){x, t, w}, 1,
               (gx_view[]){SCALAR_F32(-3.2f)}, 1e-6);
    s_expect_n(GX_OP_NLLLOSS, NODE(A_STR("reduction", "none")), 3, (gx_view[]){x, t, w}, 1,
               (gx_view[]){F32V(SHAPE(2), -6, -2)}, 0);
    /* ignoring label 0 drops the second sample from the sum and the count */
    s_expect_n(GX_OP_NLLLOSS, NODE(A_INT("ignore_index", 0)), 3, (gx_view[]){x, t, w}, 1,
               (gx_view[]){SCALAR_F32(-3)}, 0);
    s_expect_n(GX_OP_NLLLOSS, NODE(A_INT("ignore_index", 0), A_STR("reduction", "none")), 2,
               (gx_view[]){x, I32V(SHAPE(2), 2, 0)}, 1, (gx_view[]){F32V(SHAPE(2), -3, 0)}, 0);
    /* an ignore_index outside [0, C) is allowed as a label */
    s_expect_n(GX_OP_NLLLOSS, NODE(A_INT("ignore_index", -1), A_STR("reduction", "sum")), 2,
               (gx_view[]){x, I64V(SHAPE(2), -1, 1)}, 1, (gx_view[]){SCALAR_F32(-5)}, 0);
}
END_TEST

/* Equal scores: log_prob is -log(C) everywhere, and so is the loss. */
START_TEST(test_sceloss_hand)
{
    gx_view x = F64V(SHAPE(2, 4), 1, 1, 1, 1, 3, 3, 3, 3);
    gx_view t = I64V(SHAPE(2), 3, 1);
    const double l4 = log(4.0);
    s_expect_n(GX_OP_SCELOSS, NULL, 2, (gx_view[]){x, t}, 2,
               (gx_view[]){SCALAR_F64(l4),
                           F64V(SHAPE(2, 4), -l4, -l4, -l4, -l4, -l4, -l4, -l4, -l4)},
               1e-12);
    /* scores {0, ln 3}: softmax {1/4, 3/4} */
    gx_view x2 = F32V(SHAPE(1, 2), 0, (float)log(3.0));
    s_expect_n(GX_OP_SCELOSS, NODE(A_STR("reduction", "none")), 2,
               (gx_view[]){x2, I32V(SHAPE(1), 0)}, 2,
               (gx_view[]){F32V(SHAPE(1), (float)log(4.0)),
                           F32V(SHAPE(1, 2), (float)-log(4.0), (float)log(0.75))},
               1e-6);
}
END_TEST

/* ---- naive reference ---- */

/* The ONNX reference over x [N, C, D...] (shape[]), labels drawn from
 * [0, C) with about a quarter set to ignore (when ii), optional weight. */
static void s_case(gx_op op, gx_dtype dt, gx_dtype lt, int ndim, const int64_t *shape,
                   bool weighted, bool ii, const char *red, bool log_prob)
{
    const int64_t n = shape[0], c = shape[1];
    int64_t d = 1;
    for (int i = 2; i < ndim; i++)
        d *= shape[i];
    int64_t tshape[GX_MAX_DIMS];
    tshape[0] = n;
    for (int i = 2; i < ndim; i++)
        tshape[i - 1] = shape[i];
    const int64_t ignore = c > 2 ? 1 : -3;
    gx_view x = s_alloc(dt, ndim, shape), t = s_alloc(lt, ndim - 1, tshape);
    gx_view w = weighted ? s_alloc(dt, 1, shape + 1) : NONE;
    for (int64_t i = 0; i < x.numel; i++)
        s_set(&x, i, 3 * ot_randf());
    for (int64_t i = 0; i < t.numel; i++) {
        int64_t lab = (int64_t)((ot_randf() + 2) / 4 * (float)c) % c;
        s_set(&t, i, ii && ot_randf() < -1 ? ignore : lab);
    }
    for (int64_t i = 0; weighted && i < c; i++)
        s_set(&w, i, ot_randf() + 2.5);

    gx_view lp = s_alloc(dt, ndim, shape);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) {
            double mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < c; j++)
                mx = fmax(mx, s_get(&x, (i * c + j) * d + k));
            for (int64_t j = 0; j < c; j++)
                s += exp(s_get(&x, (i * c + j) * d + k) - mx);
            for (int64_t j = 0; j < c; j++)
                s_set(&lp, (i * c + j) * d + k, log(exp(s_get(&x, (i * c + j) * d + k) - mx) / s));
        }
    const gx_view *src = op == GX_OP_SCELOSS ? &lp : &x;
    const bool none = strcmp(red, "none") == 0;
    gx_view loss = s_alloc(dt, none ? ndim - 1 : 0, tshape);
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) {
            int64_t lab = (int64_t)s_get(&t, i * d + k);
            double gw = ii && lab == ignore ? 0 : weighted ? s_get(&w, lab) : 1;
            double l = gw == 0 ? 0 : -s_get(src, (i * c + lab) * d + k) * gw;
            if (none)
                s_set(&loss, i * d + k, l);
            sum += l;
            wsum += gw;
        }
    if (!none)
        s_set(&loss, 0, strcmp(red, "mean") == 0 ? sum / wsum : sum);

    gx_attr attrs[2] = {A_STR("reduction", red), A_INT("ignore_index", ignore)};
    gx_node node = {.n_attr = ii ? 2 : 1, .attr = attrs};
    s_expect_n(op, &node, weighted ? 3 : 2, (gx_view[]){x, t, w}, log_prob ? 2 : 1,
               (gx_view[]){loss, lp}, dt == GX_F32 ? 2e-5 : 1e-12);
    ot_free_all(); /* the harness holds a bounded number of blocks */
}

START_TEST(test_loss_reference)
{
    static const char *const reds[] = {"none", "sum", "mean"};
    static const int64_t shapes[][5] = {{4, 3}, {3, 5, 7}, {2, 4, 3, 5}, {1, 2, 2, 1, 3}};
    static const int ndims[] = {2, 3, 4, 5};
    for (int op = 0; op < 2; op++)
        for (int s = 0; s < 4; s++)
            for (int r = 0; r < 3; r++)
                for (int v = 0; v < 8; v++)
                    s_case(op ? GX_OP_SCELOSS : GX_OP_NLLLOSS, v & 1 ? GX_F64 : GX_F32,
                           v & 2 ? GX_I32 : GX_I64, ndims[s], shapes[s], v & 4, (v + s) & 1,
                           reds[r], op && (v & 2));
}
END_TEST

/* A label outside [0, C) that is not ignored cannot be refused by infer
 * (labels are data): its loss is NaN. */
START_TEST(test_loss_bad_label)
{
    gx_view x = F32V(SHAPE(2, 2), 1, 2, 3, 4);
    gx_view t = I64V(SHAPE(2), 5, 0);
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[1];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_NLLLOSS, NODE(A_STR("reduction", "none")), 2,
                              (gx_view[]){x, t}, 1, av, 1, out, err),
                     GX_OK);
    ck_assert(isnan(((float *)out[0].data)[0]));
    ck_assert_float_eq(((float *)out[0].data)[1], -3);
    ck_assert_int_eq(ot_run_n(GX_OP_SCELOSS, NULL, 2, (gx_view[]){x, t}, 3, av, 1, out, err),
                     GX_OK);
    ck_assert(isnan(((float *)out[0].data)[0]));
}
END_TEST

START_TEST(test_loss_errors)
{
    gx_view x = RANDV(2, 3), t = I64V(SHAPE(2), 0, 1);
    ot_expect_error(GX_OP_NLLLOSS, NULL, 2, (gx_view[]){RANDV(3), I64V(SHAPE(1), 0)}, GX_ESHAPE,
                    "NegativeLogLikelihoodLoss: input has rank 1; [N, C, ...] needed");
    ot_expect_error(GX_OP_NLLLOSS, NULL, 2, (gx_view[]){x, I64V(SHAPE(3), 0, 1, 2)}, GX_ESHAPE,
                    "NegativeLogLikelihoodLoss: target of shape [3] does not match input "
                    "[2,3]");
    ot_expect_error(GX_OP_SCELOSS, NULL, 2, (gx_view[]){RANDV(2, 3, 4), I64V(SHAPE(2, 3), 0)},
                    GX_ESHAPE,
                    "SoftmaxCrossEntropyLoss: target of shape [2,3] does not match input "
                    "[2,3,4]");
    ot_expect_error(GX_OP_SCELOSS, NULL, 3, (gx_view[]){x, t, RANDV(2)}, GX_ESHAPE,
                    "SoftmaxCrossEntropyLoss: weight has shape [2], expected [3]");
    ot_expect_error(GX_OP_SCELOSS, NULL, 3, (gx_view[]){x, t, F64V(SHAPE(3), 1, 1, 1)},
                    GX_EDTYPE, "SoftmaxCrossEntropyLoss: weight is float64, input is float32");
    ot_expect_error(GX_OP_NLLLOSS, NULL, 2, (gx_view[]){x, F32V(SHAPE(2), 0, 1)}, GX_EDTYPE,
                    "NegativeLogLikelihoodLoss: input 1 is float32; supported: int64, int32");
    ot_expect_error(GX_OP_NLLLOSS, NULL, 2, (gx_view[]){I64V(SHAPE(2, 1), 0, 1), t}, GX_EDTYPE,
                    NULL);
    ot_expect_error(GX_OP_SCELOSS, NODE(A_STR("reduction", "max")), 2, (gx_view[]){x, t},
                    GX_EATTR,
                    "SoftmaxCrossEntropyLoss: reduction \"max\" is not none, sum or mean");
    ot_expect_error(GX_OP_NLLLOSS, NODE(A_FLOAT("ignore_index", 1.5)), 2, (gx_view[]){x, t},
                    GX_EATTR, NULL);
}
END_TEST

Suite *ops_loss_suite(void)
{
    Suite *s = suite_create("ops_loss");
    TCase *tc = tcase_create("loss");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_nllloss_hand);
    tcase_add_test(tc, test_sceloss_hand);
    tcase_add_test(tc, test_loss_reference);
    tcase_add_test(tc, test_loss_bad_label);
    tcase_add_test(tc, test_loss_errors);
    suite_add_tcase(s, tc);
    return s;
}
