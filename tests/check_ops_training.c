/*
 * Op tests of the training family (GX_OPS_TRAINING in ops/op.h): Adagrad,
 * Adam and Momentum on hand values whose results are exact in binary
 * floating point, on two tensors at once, with every output written by
 * exactly one share of nth = 3 and 7 (ot_check_threads), and the errors
 * infer gives. The ONNX node tests (test_adagrad*, test_adam*,
 * test_momentum*, test_nesterov_momentum) check them against the reference.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "tests/optest.h"
#include "tests/testutil.h"

#define I64S(v) ot_view(GX_I64, ot_copy(&(int64_t){v}, 8), 0, NULL)
#define F32S(v) ot_view(GX_F32, ot_copy(&(float){v}, 4), 0, NULL)
#define F64S(v) ot_view(GX_F64, ot_copy(&(double){v}, 8), 0, NULL)
#define F64V(shape, ...)                                                      \
    ot_view(GX_F64, ot_copy((double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__})), shape)
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* Runs op and compares its n_out outputs (float32 or float64) exactly. */
static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                     const gx_view *want)
{
    gx_view out[4];
    ot_check_threads(op, node, n_in, in, n_out, out);
    for (int o = 0; o < n_out; o++) {
        ck_assert_int_eq(out[o].dtype, want[o].dtype);
        ot_check_shape(&out[o], want[o].ndim, want[o].shape);
        ck_assert_msg(memcmp(out[o].data, want[o].data, ot_nbytes(&want[o])) == 0,
                      "%s: output %d differs", gx_op_name(op), o);
    }
}

/* H + G^2 = 16, X - R G / 4 (epsilon 0, not the default 1e-6); with
 * decay_factor 1 at T = 1, R halves. */
START_TEST(test_adagrad_hand)
{
    gx_view x = F32V(SHAPE(2), 3, -1), g = F32V(SHAPE(2), 3, 2), h = F32V(SHAPE(2), 7, 0);
    s_expect(GX_OP_ADAGRAD, NODE(A_FLOAT("epsilon", 0)), 5,
             (gx_view[]){F32S(1), I64S(0), x, g, h}, 2,
             (gx_view[]){F32V(SHAPE(2), 2.25f, -2), F32V(SHAPE(2), 16, 4)});
    s_expect(GX_OP_ADAGRAD, NODE(A_FLOAT("decay_factor", 1), A_FLOAT("epsilon", 0)), 5,
             (gx_view[]){F32S(1), I64S(1), x, g, h}, 2,
             (gx_view[]){F32V(SHAPE(2), 2.625f, -1.5f), F32V(SHAPE(2), 16, 4)});
    /* norm_coefficient adds 0.5 X to the gradient: G' = 4.5, H' = 27.25 */
    s_expect(GX_OP_ADAGRAD, NODE(A_FLOAT("norm_coefficient", 0.5), A_FLOAT("epsilon", 0)), 5,
             (gx_view[]){F64S(1), I64S(0), F64V(SHAPE(1), 3), F64V(SHAPE(1), 3),
                         F64V(SHAPE(1), 7)},
             2, (gx_view[]){F64V(SHAPE(1), 3 - 4.5 / sqrt(27.25)), F64V(SHAPE(1), 27.25)});
}
END_TEST

/* alpha 0.5, beta 0.75: V = 0.5 G, H = 0.25 G^2 from zero states; at T = 1
 * the bias correction is sqrt(0.25) / 0.5 = 1. */
START_TEST(test_adam_hand)
{
    gx_node *n = NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.75), A_FLOAT("epsilon", 0));
    gx_view x = F32V(SHAPE(3), 3, 1, 1), g = F32V(SHAPE(3), 2, 4, -4),
            z = F32V(SHAPE(3), 0, 0, 0);
    for (int64_t t = 0; t <= 1; t++)
        s_expect(GX_OP_ADAM, n, 6, (gx_view[]){F32S(1), I64S(t), x, g, z, z}, 3,
                 (gx_view[]){F32V(SHAPE(3), 2, 0, 2), F32V(SHAPE(3), 1, 2, -2),
                             F32V(SHAPE(3), 1, 4, 4)});
    /* norm_coefficient_post scales the new X */
    s_expect(GX_OP_ADAM,
             NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.75), A_FLOAT("epsilon", 0),
                  A_FLOAT("norm_coefficient_post", 0.5)),
             6, (gx_view[]){F32S(1), I64S(0), x, g, z, z}, 3,
             (gx_view[]){F32V(SHAPE(3), 1, 0, 1), F32V(SHAPE(3), 1, 2, -2),
                         F32V(SHAPE(3), 1, 4, 4)});
}
END_TEST

/* alpha 0.5, beta 0.25 (1 at T = 0): V = 0.5 V + beta G; standard X - R V,
 * Nesterov X - R (G + alpha V). */
START_TEST(test_momentum_hand)
{
    gx_view x = F32V(SHAPE(1), 1), g = F32V(SHAPE(1), 4), v = F32V(SHAPE(1), 2);
#define S_MOM(mode)                                                           \
    NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.25), A_STR("mode", mode),   \
         A_FLOAT("norm_coefficient", 0))
    s_expect(GX_OP_MOMENTUM, S_MOM("standard"), 5, (gx_view[]){F32S(2), I64S(1), x, g, v}, 2,
             (gx_view[]){F32V(SHAPE(1), -3), F32V(SHAPE(1), 2)});
    s_expect(GX_OP_MOMENTUM, S_MOM("standard"), 5, (gx_view[]){F32S(2), I64S(0), x, g, v}, 2,
             (gx_view[]){F32V(SHAPE(1), -9), F32V(SHAPE(1), 5)});
    s_expect(GX_OP_MOMENTUM, S_MOM("nesterov"), 5, (gx_view[]){F32S(2), I64S(1), x, g, v}, 2,
             (gx_view[]){F32V(SHAPE(1), -9), F32V(SHAPE(1), 2)});
    /* two tensors in one step: X1, X2, G1, G2, V1, V2 -> X1', X2', V1', V2' */
    s_expect(GX_OP_MOMENTUM, S_MOM("standard"), 8,
             (gx_view[]){F32S(2), I64S(1), x, F32V(SHAPE(2), 0, 1), g, F32V(SHAPE(2), 8, 0), v,
                         F32V(SHAPE(2), 0, 4)},
             4,
             (gx_view[]){F32V(SHAPE(1), -3), F32V(SHAPE(2), -4, -3), F32V(SHAPE(1), 2),
                         F32V(SHAPE(2), 2, 2)});
}
END_TEST

/* A large tensor: every element written by one share. */
START_TEST(test_training_threads)
{
    gx_view x = RANDV(1000), g = RANDV(1000), v = RANDV(1000), h = ot_like_f32(&x);
    gx_view out[4];
    ot_check_threads(GX_OP_ADAM, NULL, 6, (gx_view[]){F32S(0.1f), I64S(3), x, g, v, h}, 3, out);
    ot_check_threads(GX_OP_ADAGRAD, NULL, 5, (gx_view[]){F32S(0.1f), I64S(3), x, g, h}, 2, out);
}
END_TEST

START_TEST(test_training_errors)
{
    gx_view x = F32V(SHAPE(2), 1, 2), g = F32V(SHAPE(2), 1, 2), h = F32V(SHAPE(2), 1, 2);
    gx_view one = F32V(SHAPE(1), 1);
    ot_expect_error(GX_OP_MOMENTUM,
                    NODE(A_FLOAT("alpha", 0.5), A_FLOAT("beta", 0.25), A_STR("mode", "heavy"),
                         A_FLOAT("norm_coefficient", 0)),
                    5, (gx_view[]){F32S(1), I64S(0), x, g, h}, GX_EATTR,
                    "Momentum: mode \"heavy\" is not standard or nesterov");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 6, (gx_view[]){F32S(1), I64S(0), x, g, h, h}, GX_ESHAPE,
                    "Adagrad: 6 inputs; R, T and 3 tensors per optimised tensor needed");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 5, (gx_view[]){F32S(1), F32S(0), x, g, h}, GX_EDTYPE,
                    "Adagrad: T is float32; int64 needed");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 5, (gx_view[]){I64S(1), I64S(0), x, g, h}, GX_EDTYPE,
                    "Adagrad: R is int64; float32 or float64 needed");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 5, (gx_view[]){x, I64S(0), x, g, h}, GX_ESHAPE,
                    "Adagrad: R and T must be scalars");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 5, (gx_view[]){F32S(1), I64S(0), x, g, one}, GX_ESHAPE,
                    "Adagrad: input 4 has shape [1], X1 has [2]");
    ot_expect_error(GX_OP_ADAGRAD, NULL, 5,
                    (gx_view[]){F64S(1), I64S(0), F64V(SHAPE(2), 1, 2), g, h}, GX_EDTYPE,
                    "Adagrad: input 3 is float32, R is float64");
}
END_TEST

Suite *ops_training_suite(void)
{
    Suite *s = suite_create("ops_training");
    TCase *tc = tcase_create("training");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_adagrad_hand);
    tcase_add_test(tc, test_adam_hand);
    tcase_add_test(tc, test_momentum_hand);
    tcase_add_test(tc, test_training_threads);
    tcase_add_test(tc, test_training_errors);
    suite_add_tcase(s, tc);
    return s;
}
