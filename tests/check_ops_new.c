/*
 * Op tests of the ops added from ONNX opsets 18-24 (and LpNormalization,
 * opset 1): Mish, Swish, BitwiseAnd/Or/Xor/Not, LpNormalization,
 * GroupNormalization, CenterCropPad, Col2Im, RotaryEmbedding, AffineGrid,
 * TensorScatter and DeformConv. Hand-computed values (many
 * from the examples of the ONNX node tests), naive float64 references
 * written from the ONNX reference implementation's formulas, the errors
 * infer gives, and every kernel split into 3 and 7 shares that must match
 * one share bit for bit and write each output byte exactly once.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h" /* f16 conversions for the references */
#include "tests/optest.h"
#include "tests/testutil.h"

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
#define U8V(shape, ...)                                                       \
    ot_view(GX_U8, ot_copy((uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})), shape)
#define I8V(shape, ...)                                                       \
    ot_view(GX_I8, ot_copy((int8_t[]){__VA_ARGS__}, sizeof((int8_t[]){__VA_ARGS__})), shape)
#define U16V(shape, ...)                                                      \
    ot_view(GX_U16, ot_copy((uint16_t[]){__VA_ARGS__}, sizeof((uint16_t[]){__VA_ARGS__})), shape)
#define F64V(shape, ...)                                                      \
    ot_view(GX_F64, ot_copy((double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__})), shape)

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* ot_check_threads with one output of any dtype, equal to want bit for bit. */
static void s_check_exact(gx_op op, const gx_node *node, int n_in, const gx_view *in,
                          gx_view want)
{
    gx_view out;
    ot_check_threads(op, node, n_in, in, 1, &out);
    ot_check_shape(&out, want.ndim, want.shape);
    ck_assert_int_eq(out.dtype, want.dtype);
    ck_assert_msg(memcmp(out.data, want.data, ot_nbytes(&want)) == 0, "%s: values",
                  gx_op_name(op));
}

/* ---- Mish, Swish ---- */

static double s_mish_ref(double x)
{
    return x * tanh(log1p(exp(x)));
}

static double s_swish_ref(double x, double alpha)
{
    return x / (1.0 + exp(-alpha * x));
}

START_TEST(test_mish)
{
    /* the ONNX node test's formula on a few hand-picked points, extremes
     * included: softplus(x) ~ x above 20, ~ e^x far below 0 */
    gx_view x = F32V(SHAPE(2, 5), -100, -20, -3, -1, -0.5f, 0, 0.5f, 1, 3, 100);
    gx_view want = ot_like_f32(&x);
    for (int64_t i = 0; i < x.numel; i++)
        ((float *)want.data)[i] = (float)s_mish_ref(((float *)x.data)[i]);
    ot_check_f32(GX_OP_MISH, NULL, 1, &x, &want, 2e-6f, 1e-7f);
    /* mish(1) = tanh(ln(1 + e)) = 0.86509838... */
    ck_assert_float_eq_tol(((float *)want.data)[7], 0.8650984f, 1e-6f);
    gx_view r = RANDV(3, 7, 131);
    want = ot_like_f32(&r);
    for (int64_t i = 0; i < r.numel; i++)
        ((float *)want.data)[i] = (float)s_mish_ref(((float *)r.data)[i]);
    ot_check_f32(GX_OP_MISH, NULL, 1, &r, &want, 2e-6f, 1e-7f);
    /* float64 and float16 */
    gx_view d = F64V(SHAPE(4), -2, -0.25, 0.75, 4);
    gx_view out;
    ot_check_threads(GX_OP_MISH, NULL, 1, &d, 1, &out);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(((double *)out.data)[i], s_mish_ref(((double *)d.data)[i]),
                                1e-15);
    uint16_t h[3] = {gx_f32_to_f16(-1.5f), gx_f32_to_f16(0.25f), gx_f32_to_f16(2.0f)};
    gx_view hv = ot_view(GX_F16, ot_copy(h, sizeof h), SHAPE(3));
    ot_check_threads(GX_OP_MISH, NULL, 1, &hv, 1, &out);
    ck_assert_int_eq(out.dtype, GX_F16);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(((uint16_t *)out.data)[i],
                         gx_f32_to_f16((float)s_mish_ref(gx_f16_to_f32(h[i]))));
    gx_view iv = I32V(SHAPE(2), 1, 2);
    ot_expect_error(GX_OP_MISH, NULL, 1, &iv, GX_EDTYPE,
                    "Mish: int32 not supported (float32, float16, bfloat16, float64)");
}
END_TEST

START_TEST(test_swish)
{
    /* the ONNX node test: x = [3, 4, 5], alpha = 1 */
    gx_view x = F32V(SHAPE(3), 3, 4, 5);
    ot_expect(GX_OP_SWISH, NULL, 1, &x, F32V(SHAPE(3), 2.8577223f, 3.9280552f, 4.9665356f),
              1e-6f, 0);
    gx_view r = RANDV(5, 301);
    for (int a = 0; a < 3; a++) {
        const double alpha = a == 0 ? 1.0 : a == 1 ? 0.5 : -1.75;
        gx_view want = ot_like_f32(&r);
        for (int64_t i = 0; i < r.numel; i++)
            ((float *)want.data)[i] = (float)s_swish_ref(((float *)r.data)[i], alpha);
        ot_check_f32(GX_OP_SWISH, a ? NODE(A_FLOAT("alpha", alpha)) : NULL, 1, &r, &want, 2e-6f,
                    1e-7f);
    }
    /* large |x|: sigmoid saturates without NaN */
    gx_view big = F32V(SHAPE(4), -200, -90, 90, 200);
    ot_expect(GX_OP_SWISH, NULL, 1, &big, F32V(SHAPE(4), -0.0f, -0.0f, 90, 200), 0, 1e-30f);
    gx_view d = F64V(SHAPE(3), -1, 0.5, 2);
    gx_view out;
    ot_check_threads(GX_OP_SWISH, NODE(A_FLOAT("alpha", 2.0)), 1, &d, 1, &out);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(((double *)out.data)[i], s_swish_ref(((double *)d.data)[i], 2.0),
                                1e-15);
    gx_view u = U8V(SHAPE(1), 1);
    ot_expect_error(GX_OP_SWISH, NULL, 1, &u, GX_EDTYPE,
                    "Swish: uint8 not supported (float32, float16, bfloat16, float64)");
    ot_expect_error(GX_OP_SWISH, NODE(A_INT("beta", 1)), 1, &x, GX_EATTR,
                    "Swish: unknown attribute 'beta'");
}
END_TEST

/* ---- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot ---- */

START_TEST(test_bitwise_hand)
{
    /* the ONNX node tests' kind of values, by hand */
    gx_view a = I32V(SHAPE(4), 0x0F0F, -1, 12, INT32_MIN), b = I32V(SHAPE(4), 0x00FF, 5, 10, -1);
    s_check_exact(GX_OP_BITWISE_AND, NULL, 2, (gx_view[]){a, b},
                  I32V(SHAPE(4), 0x000F, 5, 8, INT32_MIN));
    s_check_exact(GX_OP_BITWISE_OR, NULL, 2, (gx_view[]){a, b},
                  I32V(SHAPE(4), 0x0FFF, -1, 14, -1));
    s_check_exact(GX_OP_BITWISE_XOR, NULL, 2, (gx_view[]){a, b},
                  I32V(SHAPE(4), 0x0FF0, -6, 6, INT32_MAX));
    s_check_exact(GX_OP_BITWISE_NOT, NULL, 1, &a,
                  I32V(SHAPE(4), ~0x0F0F, 0, -13, INT32_MAX));
    gx_view u = U8V(SHAPE(2, 2), 0x00, 0xFF, 0xA5, 0x3C), us = U8V(SHAPE(1), 0x0F);
    s_check_exact(GX_OP_BITWISE_AND, NULL, 2, (gx_view[]){u, us},
                  U8V(SHAPE(2, 2), 0x00, 0x0F, 0x05, 0x0C));
    s_check_exact(GX_OP_BITWISE_XOR, NULL, 2, (gx_view[]){us, u},
                  U8V(SHAPE(2, 2), 0x0F, 0xF0, 0xAA, 0x33));
    s_check_exact(GX_OP_BITWISE_NOT, NULL, 1, &u, U8V(SHAPE(2, 2), 0xFF, 0x00, 0x5A, 0xC3));
    gx_view i8 = I8V(SHAPE(3), -128, 0, 127);
    s_check_exact(GX_OP_BITWISE_NOT, NULL, 1, &i8, I8V(SHAPE(3), 127, -1, -128));
    gx_view w = U16V(SHAPE(2), 0xFFFF, 0x1234), ws = U16V(SHAPE(2, 1), 0xF0F0, 0x0001);
    s_check_exact(GX_OP_BITWISE_OR, NULL, 2, (gx_view[]){w, ws},
                  U16V(SHAPE(2, 2), 0xFFFF, 0xF2F4, 0xFFFF, 0x1235));
}
END_TEST

/* Random bytes of every integer dtype, broadcast [3, 1, 37] with [5, 37]
 * and [1]: the result equals the operation on each element's bits. */
START_TEST(test_bitwise_reference)
{
    static const gx_dtype dts[] = {GX_I8, GX_I16, GX_I32, GX_I64, GX_U8, GX_U16, GX_U32, GX_U64};
    static const gx_op ops[] = {GX_OP_BITWISE_AND, GX_OP_BITWISE_OR, GX_OP_BITWISE_XOR};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        const gx_dtype dt = dts[t];
        const size_t es = gx_dtype_size(dt);
        gx_view a = ot_rand(dt, SHAPE(3, 1, 37)), b = ot_rand(dt, SHAPE(5, 37)),
                s = ot_rand(dt, SHAPE(1));
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            for (int form = 0; form < 2; form++) {
                const gx_view *bv = form ? &s : &b;
                gx_view want = ot_view(dt, ot_alloc(15 * 37 * es), 3,
                                       form ? (int64_t[]){3, 1, 37} : (int64_t[]){3, 5, 37});
                for (int64_t i = 0; i < want.numel; i++) {
                    int64_t idx[3];
                    ot_unravel(i, 3, want.shape, idx);
                    const int64_t ia = ot_bcast_off(3, idx, a.ndim, a.shape);
                    const int64_t ib = ot_bcast_off(3, idx, bv->ndim, bv->shape);
                    const unsigned char *pa = (const unsigned char *)a.data + ia * (int64_t)es;
                    const unsigned char *pb = (const unsigned char *)bv->data + ib * (int64_t)es;
                    unsigned char *py = (unsigned char *)want.data + i * (int64_t)es;
                    for (size_t k = 0; k < es; k++)
                        py[k] = ops[o] == GX_OP_BITWISE_AND  ? pa[k] & pb[k]
                                : ops[o] == GX_OP_BITWISE_OR ? pa[k] | pb[k]
                                                             : pa[k] ^ pb[k];
                }
                s_check_exact(ops[o], NULL, 2, (gx_view[]){a, *bv}, want);
            }
        }
        gx_view big = ot_rand(dt, SHAPE(4, 301));
        gx_view want = ot_view(dt, ot_alloc(ot_nbytes(&big)), big.ndim, big.shape);
        for (size_t k = 0; k < ot_nbytes(&big); k++)
            ((unsigned char *)want.data)[k] = (unsigned char)~((unsigned char *)big.data)[k];
        s_check_exact(GX_OP_BITWISE_NOT, NULL, 1, &big, want);
    }
}
END_TEST

START_TEST(test_bitwise_errors)
{
    gx_view f = RANDV(2), i = I32V(SHAPE(2), 1, 2), i64 = I64V(SHAPE(2), 1, 2),
            bl = ot_view(GX_BOOL, ot_copy((uint8_t[]){1, 0}, 2), SHAPE(2)),
            i3 = I32V(SHAPE(3), 1, 2, 3);
    ot_expect_error(GX_OP_BITWISE_AND, NULL, 2, (gx_view[]){f, f}, GX_EDTYPE,
                    "BitwiseAnd: input 0 is float32, expected int8, int16, int32, int64, uint8, "
                    "uint16, uint32 or uint64");
    ot_expect_error(GX_OP_BITWISE_OR, NULL, 2, (gx_view[]){i, i64}, GX_EDTYPE,
                    "BitwiseOr: inputs 0 and 1 are int32 and int64, expected one dtype");
    ot_expect_error(GX_OP_BITWISE_XOR, NULL, 2, (gx_view[]){i, i3}, GX_ESHAPE, NULL);
    ot_expect_error(GX_OP_BITWISE_NOT, NULL, 1, &bl, GX_EDTYPE,
                    "BitwiseNot: input 0 is bool, expected int8, int16, int32, int64, uint8, "
                    "uint16, uint32 or uint64");
}
END_TEST

/* ---- LpNormalization ---- */

/* The ONNX reference's x / (sum x^p)^(1/p) along axis, with |x| for p = 1
 * (the L1 norm; the reference's np.power(x, 1) omits it). */
static void s_ref_lpnorm(const gx_view *x, int axis, int p, gx_view *y)
{
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t outer = x->numel / (n * inner);
    const float *px = x->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) {
                const double v = px[(o * n + j) * inner + c];
                s += p == 1 ? fabs(v) : v * v;
            }
            const double norm = p == 1 ? s : sqrt(s);
            for (int64_t j = 0; j < n; j++) {
                const int64_t i = (o * n + j) * inner + c;
                ((float *)y->data)[i] = (float)(px[i] / norm);
            }
        }
    }
}

START_TEST(test_lpnorm)
{
    /* by hand: the 3-4-5 triangle, and an L1 row */
    gx_view x = F32V(SHAPE(2, 2), 3, 4, 1, -3);
    ot_expect(GX_OP_LPNORM, NULL, 1, &x, F32V(SHAPE(2, 2), 0.6f, 0.8f, 0.31622777f, -0.9486833f),
              1e-6f, 0);
    ot_expect(GX_OP_LPNORM, NODE(A_INT("p", 1)), 1, &x,
              F32V(SHAPE(2, 2), 3.0f / 7, 4.0f / 7, 0.25f, -0.75f), 1e-6f, 0);
    ot_expect(GX_OP_LPNORM, NODE(A_INT("axis", 0)), 1, &x,
              F32V(SHAPE(2, 2), 0.9486833f, 0.8f, 0.31622777f, -0.6f), 1e-6f, 0);
    /* a zero vector: 0 / 0 */
    gx_view z = F32V(SHAPE(1, 2), 0, 0);
    gx_view out;
    ot_check_threads(GX_OP_LPNORM, NULL, 1, &z, 1, &out);
    ck_assert(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
    gx_view r = RANDV(3, 5, 37), row = RANDV(2, 5000);
    for (int p = 1; p <= 2; p++) {
        for (int axis = -3; axis < 3; axis++) {
            gx_view want = ot_like_f32(&r);
            s_ref_lpnorm(&r, axis < 0 ? axis + 3 : axis, p, &want);
            ot_check_f32(GX_OP_LPNORM, NODE(A_INT("axis", axis), A_INT("p", p)), 1, &r, &want,
                        2e-6f, 1e-7f);
        }
        gx_view want = ot_like_f32(&row);
        s_ref_lpnorm(&row, 1, p, &want);
        ot_check_f32(GX_OP_LPNORM, NODE(A_INT("p", p)), 1, &row, &want, 2e-6f, 1e-7f);
    }
    gx_view i = I64V(SHAPE(2), 1, 2), sc = F32V(SHAPE(1), 1);
    sc.ndim = 0;
    ot_expect_error(GX_OP_LPNORM, NODE(A_INT("p", 3)), 1, &x, GX_EATTR,
                    "LpNormalization: p is 3; the specification allows 1 or 2");
    ot_expect_error(GX_OP_LPNORM, NODE(A_INT("axis", 2)), 1, &x, GX_EATTR,
                    "LpNormalization: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_LPNORM, NULL, 1, &i, GX_EDTYPE,
                    "LpNormalization: int64 not supported (float32 only)");
    ot_expect_error(GX_OP_LPNORM, NULL, 1, &sc, GX_ESHAPE,
                    "LpNormalization: input is a scalar; rank >= 1 needed");
}
END_TEST

/* ---- GroupNormalization ---- */

/* The ONNX reference: X as [N, G, C/G * D...], normalised per (n, g) with
 * the population variance, then scale and bias per channel (or, for
 * opset 18's [G] ones, per group). */
static void s_ref_groupnorm(const gx_view *x, int64_t g, const float *scale, const float *bias,
                            bool per_group, double eps, gx_view *y)
{
    const int64_t c = x->shape[1], n = x->shape[0], cnt = x->numel / (n * g), sp = cnt / (c / g);
    const float *px = x->data;
    for (int64_t i = 0; i < n * g; i++) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < cnt; j++)
            m += px[i * cnt + j];
        m /= (double)cnt;
        for (int64_t j = 0; j < cnt; j++)
            v += (px[i * cnt + j] - m) * (px[i * cnt + j] - m);
        v /= (double)cnt;
        for (int64_t j = 0; j < cnt; j++) {
            const int64_t ch = i % g * (c / g) + j / sp, p = per_group ? i % g : ch;
            ((float *)y->data)[i * cnt + j] =
                (float)((px[i * cnt + j] - m) / sqrt(v + eps) * scale[p] + bias[p]);
        }
    }
}

START_TEST(test_groupnorm)
{
    /* by hand: one sample, 2 groups of 2 channels of 2 values */
    gx_view x = F32V(SHAPE(1, 4, 2), 1, 2, 3, 4, 10, 10, 10, 30);
    gx_view sc = F32V(SHAPE(4), 1, 2, 1, 1), b = F32V(SHAPE(4), 0, 0, 1, -1);
    /* group 0: mean 2.5, var 1.25; group 1: mean 15, var 75 */
    const double s0 = sqrt(1.25 + 1e-5), s1 = sqrt(75 + 1e-5);
    ot_expect(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), 3, (gx_view[]){x, sc, b},
              F32V(SHAPE(1, 4, 2), (float)(-1.5 / s0), (float)(-0.5 / s0), (float)(1.0 / s0),
                   (float)(3.0 / s0), (float)(-5 / s1 + 1), (float)(-5 / s1 + 1),
                   (float)(-5 / s1 - 1), (float)(15 / s1 - 1)),
              1e-6f, 1e-7f);
    /* random, per channel (opset 21) and per group (opset 18), epsilon */
    gx_view r = RANDV(3, 6, 5, 7);
    for (int64_t g = 1; g <= 6; g++) {
        if (6 % g)
            continue;
        gx_view scc = RANDV(6), bc = RANDV(6), scg = ot_rand(GX_F32, 1, (int64_t[]){g}),
                bg = ot_rand(GX_F32, 1, (int64_t[]){g});
        gx_view want = ot_like_f32(&r);
        s_ref_groupnorm(&r, g, scc.data, bc.data, false, 1e-5, &want);
        ot_check_f32(GX_OP_GROUPNORM, NODE(A_INT("num_groups", g)), 3, (gx_view[]){r, scc, bc},
                    &want, 2e-5f, 2e-6f);
        s_ref_groupnorm(&r, g, scg.data, bg.data, g != 6, 1e-2, &want);
        ot_check_f32(GX_OP_GROUPNORM,
                    NODE(A_INT("num_groups", g), A_FLOAT("epsilon", 1e-2), A_INT("stash_type", 1)),
                    3, (gx_view[]){r, scg, bg}, &want, 2e-5f, 2e-6f);
    }
    /* rank 2: one value per channel */
    gx_view r2 = RANDV(4, 6), s6 = RANDV(6), b6 = RANDV(6);
    gx_view want = ot_like_f32(&r2);
    s_ref_groupnorm(&r2, 3, s6.data, b6.data, false, 1e-5, &want);
    ot_check_f32(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 3)), 3, (gx_view[]){r2, s6, b6}, &want,
                2e-5f, 2e-6f);
    /* errors */
    gx_view s3 = RANDV(3), s4 = RANDV(4), s2 = RANDV(2), i = I64V(SHAPE(1, 4), 1, 2, 3, 4);
    gx_view in[3] = {x, sc, b};
    ot_expect_error(GX_OP_GROUPNORM, NULL, 3, in, GX_EATTR,
                    "GroupNormalization: attribute 'num_groups' is required");
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 3)), 3, in, GX_EATTR,
                    "GroupNormalization: num_groups 3 does not divide the 4 channels");
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 0)), 3, in, GX_EATTR,
                    "GroupNormalization: num_groups is 0; it must be positive");
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2), A_INT("stash_type", 10)), 3,
                    in, GX_EUNSUPPORTED,
                    "GroupNormalization: stash_type 10 not supported (1 = float32 or 11 = "
                    "float64)");
    in[1] = s3;
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), 3, in, GX_ESHAPE,
                    "GroupNormalization: scale has shape [3], expected [4] (per channel, opset "
                    "21) or [2] (per group, opset 18)");
    in[1] = s2;
    in[2] = s4;
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), 3, in, GX_ESHAPE,
                    "GroupNormalization: scale has 2 values but bias 4");
    in[0] = i;
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), 3, in, GX_EDTYPE,
                    "GroupNormalization: int64 not supported (float32 only)");
    in[0] = s4;
    ot_expect_error(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), 3, in, GX_ESHAPE,
                    "GroupNormalization: X has rank 1; [N, C, ...] needed");
}
END_TEST

/* ---- CenterCropPad ---- */

/* The ONNX reference: along each dim, the input's slice [cs, cs + len)
 * lands at [ps, ps + len) of a zeroed output, where a crop by d starts cs
 * at d // 2 and a pad by d starts ps at d // 2. Walks the input. */
static gx_view s_ref_ccp(const gx_view *x, int nd, const int64_t *oshape)
{
    const size_t es = gx_dtype_size(x->dtype);
    gx_view y = ot_view(x->dtype, NULL, nd, oshape);
    y.data = ot_alloc((size_t)y.numel * es + 1);
    int64_t cs[GX_MAX_DIMS], ps[GX_MAX_DIMS], len[GX_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        const int64_t in = x->shape[d], out = oshape[d];
        cs[d] = in > out ? (in - out) / 2 : 0;
        ps[d] = out > in ? (out - in) / 2 : 0;
        len[d] = in < out ? in : out;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t idx[GX_MAX_DIMS], oidx[GX_MAX_DIMS];
        ot_unravel(i, nd, x->shape, idx);
        bool in = true;
        for (int d = 0; d < nd; d++) {
            in = in && idx[d] >= cs[d] && idx[d] < cs[d] + len[d];
            oidx[d] = idx[d] - cs[d] + ps[d];
        }
        if (!in)
            continue;
        int64_t o = 0;
        for (int d = 0; d < nd; d++)
            o = o * oshape[d] + oidx[d];
        memcpy((char *)y.data + o * (int64_t)es, (const char *)x->data + i * (int64_t)es, es);
    }
    return y;
}

START_TEST(test_center_crop_pad)
{
    /* the ONNX node tests: crop, pad, crop_and_pad, axes_chw, axes_hwc,
     * negative_axes_hwc; checked against the reference and, for the
     * first, by the slices the test writes out */
    gx_view x = RANDV(20, 10, 3), y;
    gx_view sh = I64V(SHAPE(3), 10, 7, 3);
    ot_check_threads(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){x, sh}, 1, &y);
    ot_check_shape(&y, SHAPE(10, 7, 3));
    for (int64_t i = 0; i < 10; i++)
        for (int64_t j = 0; j < 7; j++)
            for (int64_t c = 0; c < 3; c++)
                ck_assert(((float *)y.data)[(i * 7 + j) * 3 + c] ==
                          ((float *)x.data)[((i + 5) * 10 + j + 1) * 3 + c]);
    static const struct {
        int64_t in[3], out[3], axes[3];
        int n_axes;
    } cases[] = {
        {{10, 7, 3}, {20, 10, 3}, {0}, 0},      /* pad */
        {{20, 8, 3}, {10, 10, 3}, {0}, 0},      /* crop_and_pad */
        {{3, 20, 8}, {3, 10, 9}, {1, 2}, 2},    /* axes_chw */
        {{20, 8, 3}, {10, 9, 3}, {0, 1}, 2},    /* axes_hwc */
        {{20, 8, 3}, {10, 9, 3}, {-3, -2}, 2},  /* negative_axes_hwc */
        {{5, 1, 4}, {5, 2, 7}, {2, 1}, 2},      /* axes out of order, odd differences */
        {{2, 9, 9}, {2, 0, 4}, {1, 2}, 2},      /* an empty output */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_view in = ot_rand(GX_F32, 3, cases[c].in);
        int64_t target[3];
        int n = cases[c].n_axes ? cases[c].n_axes : 3;
        for (int i = 0; i < n; i++) {
            int64_t d = cases[c].n_axes ? cases[c].axes[i] : i;
            target[i] = cases[c].out[d < 0 ? d + 3 : d];
        }
        gx_view tv = ot_view(GX_I64, ot_copy(target, (size_t)n * sizeof target[0]), 1,
                             (int64_t[]){n});
        gx_attr axes = {.name = (char *)"axes", .type = GX_ATTR_INTS,
                        .ints = (int64_t *)cases[c].axes, .n = (size_t)cases[c].n_axes};
        gx_node node = {.n_attr = cases[c].n_axes ? 1 : 0, .attr = &axes};
        s_check_exact(GX_OP_CENTER_CROP_PAD, &node, 2, (gx_view[]){in, tv},
                      s_ref_ccp(&in, 3, cases[c].out));
    }
    /* any dtype: int32 shape, uint8 and int64 data, rank 1 */
    gx_view u = U8V(SHAPE(5), 1, 2, 3, 4, 5);
    s_check_exact(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){u, I32V(SHAPE(1), 2)},
                  U8V(SHAPE(2), 2, 3));
    s_check_exact(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){u, I32V(SHAPE(1), 8)},
                  U8V(SHAPE(8), 0, 1, 2, 3, 4, 5, 0, 0));
    gx_view l = I64V(SHAPE(2, 2), 1, 2, 3, 4);
    s_check_exact(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){l, I64V(SHAPE(2), 3, 1)},
                  I64V(SHAPE(3, 1), 1, 3, 0));
    /* errors */
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){x, I64V(SHAPE(2), 1, 2)},
                    GX_ESHAPE, "CenterCropPad: shape has shape [2], expected [3] (one per axis)");
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){x, F32V(SHAPE(3), 1, 2, 3)},
                    GX_EDTYPE, "CenterCropPad: shape is float32, expected int32 or int64");
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NULL, 2, (gx_view[]){x, I64V(SHAPE(3), 1, -2, 3)},
                    GX_ESHAPE, "CenterCropPad: target size -2 of axis 1 is negative");
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NODE(A_INTS("axes", 0, 3)), 2,
                    (gx_view[]){x, I64V(SHAPE(2), 1, 2)}, GX_EATTR,
                    "CenterCropPad: axis 3 is out of range for rank 3");
    ot_expect_error(GX_OP_CENTER_CROP_PAD, NODE(A_INTS("axes", 1, -2)), 2,
                    (gx_view[]){x, I64V(SHAPE(2), 1, 2)}, GX_EATTR,
                    "CenterCropPad: axis -2 is given twice");
}
END_TEST

/* ---- Col2Im ---- */

/* The ONNX reference's naive col2im: for each kernel offset and block,
 * the image index is block * stride - pad_begin + offset * dilation. */
static gx_view s_ref_col2im(const gx_view *x, int n, const int64_t *image, const int64_t *block,
                            const int64_t *dil, const int64_t *pads, const int64_t *stride)
{
    int64_t kprod = 1, cols[GX_MAX_DIMS], L = 1, plane = 1;
    for (int d = 0; d < n; d++) {
        kprod *= block[d];
        const int64_t extent = dil[d] * (block[d] - 1) + 1;
        cols[d] = (image[d] + pads[d] + pads[n + d] - extent) / stride[d] + 1;
        L *= cols[d];
        plane *= image[d];
    }
    const int64_t C = x->shape[1] / kprod, N = x->shape[0];
    int64_t oshape[GX_MAX_DIMS] = {N, C};
    memcpy(oshape + 2, image, (size_t)n * sizeof *image);
    gx_view y = ot_view(GX_F32, ot_alloc((size_t)(N * C * plane) * sizeof(float)), n + 2, oshape);
    double *acc = ot_alloc((size_t)(N * C * plane) * sizeof(double));
    for (int64_t nc = 0; nc < N * C; nc++) {
        for (int64_t k = 0; k < kprod; k++) {
            int64_t off[GX_MAX_DIMS];
            ot_unravel(k, n, block, off);
            for (int64_t b = 0; b < L; b++) {
                int64_t bi[GX_MAX_DIMS], o = 0;
                ot_unravel(b, n, cols, bi);
                bool out = false;
                for (int d = 0; d < n; d++) {
                    const int64_t im = bi[d] * stride[d] - pads[d] + off[d] * dil[d];
                    out = out || im < 0 || im >= image[d];
                    o = o * image[d] + im;
                }
                if (!out)
                    acc[nc * plane + o] += ((float *)x->data)[(nc * kprod + k) * L + b];
            }
        }
    }
    for (int64_t i = 0; i < y.numel; i++)
        ((float *)y.data)[i] = (float)acc[i];
    return y;
}

START_TEST(test_col2im)
{
    /* the ONNX node test "col2im": 1x5 blocks, one per image row */
    gx_view x = F32V(SHAPE(1, 5, 5), 1, 6, 11, 16, 21, 2, 7, 12, 17, 22, 3, 8, 13, 18, 23, 4, 9,
                     14, 19, 24, 5, 10, 15, 20, 25);
    float seq[25];
    for (int i = 0; i < 25; i++)
        seq[i] = (float)(i + 1);
    gx_view want = ot_view(GX_F32, ot_copy(seq, sizeof seq), SHAPE(1, 1, 5, 5));
    ot_check_f32(GX_OP_COL2IM, NULL, 3, (gx_view[]){x, I64V(SHAPE(2), 5, 5), I64V(SHAPE(2), 1, 5)},
                &want, 0, 0);
    /* col2im_pads: 1x5 blocks over [5, 5] padded by 1 all round: blocks
     * of a row overlap */
    static const struct {
        int n;
        int64_t N, C, image[3], block[3], dil[3], pads[6], stride[3];
    } cases[] = {
        {2, 1, 1, {5, 5}, {1, 5}, {1, 1}, {0, 1, 0, 1}, {1, 1}},  /* col2im_pads */
        {2, 1, 1, {6, 6}, {2, 2}, {1, 5}, {0, 0, 0, 0}, {1, 1}},  /* col2im_dilations */
        {2, 1, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {2, 2}},  /* col2im_strides */
        {3, 1, 1, {3, 4, 5}, {1, 1, 5}, {1, 1, 1}, {0}, {1, 1, 1}}, /* col2im_5d */
        {2, 2, 3, {7, 6}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 3}},
        {1, 3, 2, {17}, {4}, {3}, {2, 5}, {2}},
        {2, 2, 2, {3, 3}, {3, 3}, {1, 1}, {4, 4, 4, 4}, {1, 1}}, /* blocks wholly in the pads */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int n = cases[c].n;
        int64_t kprod = 1, L = 1, dil[3], pads[6], stride[3];
        for (int d = 0; d < n; d++) {
            dil[d] = cases[c].dil[d];
            stride[d] = cases[c].stride[d];
            pads[d] = cases[c].pads[d];
            pads[n + d] = cases[c].pads[n + d];
            kprod *= cases[c].block[d];
            L *= (cases[c].image[d] + pads[d] + pads[n + d] -
                  (dil[d] * (cases[c].block[d] - 1) + 1)) / stride[d] + 1;
        }
        gx_view in = ot_rand(GX_F32, 3, (int64_t[]){cases[c].N, cases[c].C * kprod, L});
        gx_view ref = s_ref_col2im(&in, n, cases[c].image, cases[c].block, dil, pads, stride);
        gx_attr attrs[3] = {
            {.name = (char *)"dilations", .type = GX_ATTR_INTS, .ints = dil, .n = (size_t)n},
            {.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = pads, .n = (size_t)(2 * n)},
            {.name = (char *)"strides", .type = GX_ATTR_INTS, .ints = stride, .n = (size_t)n},
        };
        gx_node node = {.n_attr = 3, .attr = attrs};
        gx_view iv = ot_view(GX_I64, ot_copy(cases[c].image, (size_t)n * sizeof(int64_t)), 1,
                             (int64_t[]){n});
        gx_view bv = ot_view(GX_I64, ot_copy(cases[c].block, (size_t)n * sizeof(int64_t)), 1,
                             (int64_t[]){n});
        ot_check_f32(GX_OP_COL2IM, &node, 3, (gx_view[]){in, iv, bv}, &ref, 1e-6f, 1e-6f);
    }
    /* errors */
    gx_view im = I64V(SHAPE(2), 5, 5), bl = I64V(SHAPE(2), 1, 5);
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){RANDV(1, 6, 5), im, bl}, GX_ESHAPE,
                    "Col2Im: input dim 1 (6) is not a multiple of prod(block_shape) = 5");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){RANDV(1, 5, 4), im, bl}, GX_ESHAPE,
                    "Col2Im: input dim 2 is 4, but the image holds 5 blocks");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){RANDV(5, 5), im, bl}, GX_ESHAPE,
                    "Col2Im: input has rank 2; [N, C * prod(block_shape), L] needed");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){x, im, I64V(SHAPE(2), 1, 6)}, GX_ESHAPE,
                    "Col2Im: dim 1: the block (extent 6) does not fit the padded image (5)");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){x, im, I64V(SHAPE(2), 0, 5)}, GX_ESHAPE,
                    "Col2Im: block_shape[0] is 0, expected 1..2147483647");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){x, im, I64V(SHAPE(3), 1, 1, 5)},
                    GX_ESHAPE, "Col2Im: block_shape has shape [3], expected [2]");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){x, I32V(SHAPE(2), 5, 5), bl}, GX_EDTYPE,
                    "Col2Im: image_shape is int32, expected int64");
    ot_expect_error(GX_OP_COL2IM, NODE(A_INTS("strides", 1)), 3, (gx_view[]){x, im, bl},
                    GX_EATTR, "Col2Im: strides has 1 values, expected 2");
    ot_expect_error(GX_OP_COL2IM, NODE(A_INTS("pads", 0, 0, -1, 0)), 3, (gx_view[]){x, im, bl},
                    GX_EATTR, "Col2Im: pads[2] is -1, expected 0..2147483647");
    ot_expect_error(GX_OP_COL2IM, NULL, 3, (gx_view[]){I64V(SHAPE(1, 1, 1), 1), im, bl},
                    GX_EDTYPE, "Col2Im: input 0 is int64, not supported (float32 only)");
}
END_TEST

/* ---- RotaryEmbedding ---- */

/* The ONNX reference on X seen as [batch, seq, heads, head_size]: x1, x2
 * the halves (or even and odd values) of the first dim values of a head,
 * real = cos x1 - sin x2 and imag = sin x1 + cos x2, in float32 as numpy
 * computes them on float32 arrays. */
static gx_view s_ref_rotary(const gx_view *x, const float *cosc, const float *sinc,
                            const int64_t *pos, int64_t heads, int64_t dim, bool interleaved)
{
    const bool four = x->ndim == 4;
    const int64_t B = x->shape[0], S = x->shape[four ? 2 : 1];
    const int64_t hd = four ? x->shape[3] : x->shape[2] / heads, half = dim / 2;
    gx_view y = ot_like_f32(x);
    const float *px = x->data;
    float *py = y.data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < heads; h++) {
                const int64_t base = four ? ((b * heads + h) * S + s) * hd
                                          : ((b * S + s) * heads + h) * hd;
                const int64_t row = pos ? pos[b * S + s] : b * S + s;
                for (int64_t i = 0; i < hd; i++)
                    py[base + i] = px[base + i];
                for (int64_t i = 0; i < half; i++) {
                    const int64_t i1 = interleaved ? 2 * i : i;
                    const int64_t i2 = interleaved ? 2 * i + 1 : half + i;
                    const float c = cosc[row * half + i], sn = sinc[row * half + i];
                    const float x1 = px[base + i1], x2 = px[base + i2];
                    const float a = c * x1, bb = sn * x2, cc = sn * x1, d = c * x2;
                    py[base + i1] = a - bb;
                    py[base + i2] = cc + d;
                }
            }
    return y;
}

START_TEST(test_rotary_embedding)
{
    /* by hand: one head of 4, position 0 */
    gx_view x = F32V(SHAPE(1, 1, 1, 4), 1, 2, 3, 4);
    gx_view c = F32V(SHAPE(1, 2), 0.5f, 0), sn = F32V(SHAPE(1, 2), 0.25f, 1);
    gx_view p0 = I64V(SHAPE(1, 1), 0);
    ot_expect(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, sn, p0},
              F32V(SHAPE(1, 1, 1, 4), -0.25f, -4, 1.75f, 2), 0, 0);
    ot_expect(GX_OP_ROTARY_EMBEDDING, NODE(A_INT("interleaved", 1)), 4, (gx_view[]){x, c, sn, p0},
              F32V(SHAPE(1, 1, 1, 4), 0, 1.25f, -4, 3), 0, 0);
    /* partial rotation: only the first 2 of 4 rotate */
    gx_view c1 = F32V(SHAPE(1, 1), 0), s1 = F32V(SHAPE(1, 1), 1);
    ot_expect(GX_OP_ROTARY_EMBEDDING, NODE(A_INT("rotary_embedding_dim", 2)), 4,
              (gx_view[]){x, c1, s1, p0}, F32V(SHAPE(1, 1, 1, 4), -2, 1, 3, 4), 0, 0);
    /* random: 4-D and 3-D, with and without position ids, both layouts,
     * full and partial rotation (the ONNX node tests' variants) */
    const int64_t B = 2, S = 3, H = 4, D = 8;
    for (int three = 0; three < 2; three++) {
        gx_view xr = three ? RANDV(B, S, H * D) : RANDV(B, H, S, D);
        for (int il = 0; il < 2; il++) {
            for (int64_t dim = 4; dim <= D; dim += 4) {
                gx_view pc = ot_rand(GX_F32, 2, (int64_t[]){11, dim / 2}),
                        ps = ot_rand(GX_F32, 2, (int64_t[]){11, dim / 2});
                gx_view pos = I64V(SHAPE(2, 3), 10, 0, 3, 7, 7, 1);
                gx_view bc = ot_rand(GX_F32, 3, (int64_t[]){B, S, dim / 2}),
                        bs = ot_rand(GX_F32, 3, (int64_t[]){B, S, dim / 2});
                gx_attr attrs[3] = {A_INT("interleaved", il), A_INT("num_heads", H),
                                    A_INT("rotary_embedding_dim", dim == D && il ? 0 : dim)};
                gx_node node = {.n_attr = 3, .attr = attrs};
                gx_view want = s_ref_rotary(&xr, pc.data, ps.data, pos.data, H, dim, il);
                ot_check_f32(GX_OP_ROTARY_EMBEDDING, &node, 4, (gx_view[]){xr, pc, ps, pos}, &want,
                            0, 0);
                want = s_ref_rotary(&xr, bc.data, bs.data, NULL, H, dim, il);
                ot_check_f32(GX_OP_ROTARY_EMBEDDING, &node, 3, (gx_view[]){xr, bc, bs}, &want, 0,
                            0);
            }
        }
    }
    /* errors */
    gx_view x3 = RANDV(1, 1, 8), cs2 = RANDV(1, 2);
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x3, cs2, cs2, p0}, GX_EATTR,
                    "RotaryEmbedding: a 3-D X needs num_heads > 0 (got 0)");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NODE(A_INT("num_heads", 3)), 4,
                    (gx_view[]){x3, cs2, cs2, p0}, GX_ESHAPE,
                    "RotaryEmbedding: hidden size 8 is not a multiple of num_heads 3");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NODE(A_INT("rotary_embedding_dim", 3)), 4,
                    (gx_view[]){x, c, sn, p0}, GX_EATTR,
                    "RotaryEmbedding: rotary_embedding_dim 3 must be even and at most the head "
                    "size 4");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, s1, p0}, GX_ESHAPE,
                    "RotaryEmbedding: cos_cache [1,2] and sin_cache [1,1] differ");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, sn, I64V(SHAPE(1, 1), 1)},
                    GX_ESHAPE, "RotaryEmbedding: position id 1 is outside the cache [0, 1)");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, sn, I32V(SHAPE(1, 1), 0)},
                    GX_EDTYPE, "RotaryEmbedding: position_ids is int32, expected int64");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, sn, I64V(SHAPE(1, 2), 0, 0)},
                    GX_ESHAPE, "RotaryEmbedding: position_ids has shape [1,2], expected [1, 1]");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 3, (gx_view[]){x, c, sn}, GX_ESHAPE,
                    "RotaryEmbedding: without position_ids, cos_cache has shape [1,2], expected "
                    "[1, 1, 2]");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4,
                    (gx_view[]){x, RANDV(1, 1, 2), RANDV(1, 1, 2), p0}, GX_ESHAPE,
                    "RotaryEmbedding: with position_ids, cos_cache has shape [1,1,2], expected "
                    "[max_position_id + 1, 2]");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NODE(A_INT("interleaved", 2)), 4,
                    (gx_view[]){x, c, sn, p0}, GX_EATTR,
                    "RotaryEmbedding: interleaved is 2, expected 0 or 1");
    ot_expect_error(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){RANDV(4), c, sn, p0}, GX_ESHAPE,
                    "RotaryEmbedding: X has shape [4]; [batch, num_heads, seq, head_size] or "
                    "[batch, seq, hidden] needed");
    /* a position id the infer did not see stays in bounds: zeros */
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_ROTARY_EMBEDDING, NULL, 4, (gx_view[]){x, c, sn, p0}, 1, av,
                            &out, err), GX_OK);
    ((int64_t *)p0.data)[0] = 5;
    const gx_kargs ka = {.attr = av, .n_in = 4, .in = (gx_view[]){x, c, sn, p0}, .n_out = 1,
                         .out = &out, .nth = 1};
    gx_cpu_kernel(GX_OP_ROTARY_EMBEDDING)(&ka);
    for (int i = 0; i < 4; i++)
        ck_assert(((float *)out.data)[i] == 0.0f);
}
END_TEST

/* ---- AffineGrid ---- */

/* The grid points as PyTorch's affine_grid (which the ONNX op follows)
 * defines them: linspace(-1, 1, n), scaled by (n - 1) / n without
 * align_corners, i.e. (2i + 1 - n) / n. */
static double s_ref_lin(int64_t i, int64_t n, bool align)
{
    if (!align)
        return (double)(2 * i + 1 - n) / (double)n;
    return n == 1 ? -1.0 : -1.0 + 2.0 * (double)i / (double)(n - 1);
}

START_TEST(test_affine_grid)
{
    /* by hand: the identity over H = 2, W = 3 */
    gx_view id = F32V(SHAPE(1, 2, 3), 1, 0, 0, 0, 1, 0);
    gx_view size = I64V(SHAPE(4), 1, 5, 2, 3);
    ot_expect(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, size},
              F32V(SHAPE(1, 2, 3, 2), -2.0f / 3, -0.5f, 0, -0.5f, 2.0f / 3, -0.5f, -2.0f / 3, 0.5f,
                   0, 0.5f, 2.0f / 3, 0.5f),
              1e-7f, 0);
    ot_expect(GX_OP_AFFINE_GRID, NODE(A_INT("align_corners", 1)), 2, (gx_view[]){id, size},
              F32V(SHAPE(1, 2, 3, 2), -1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1), 0, 0);
    /* scale, flip and shift: (2x + 0.5, -y) */
    gx_view th = F32V(SHAPE(1, 2, 3), 2, 0, 0.5f, 0, -1, 0);
    ot_expect(GX_OP_AFFINE_GRID, NODE(A_INT("align_corners", 1)), 2, (gx_view[]){th, size},
              F32V(SHAPE(1, 2, 3, 2), -1.5f, 1, 0.5f, 1, 2.5f, 1, -1.5f, -1, 0.5f, -1, 2.5f, -1),
              0, 0);
    /* random thetas, 2-D and 3-D, both align_corners (the node tests'
     * variants), a dim of one point */
    static const int64_t sizes[][5] = {
        {2, 3, 5, 7}, {3, 1, 1, 4}, {2, 2, 3, 4, 5}, {1, 1, 1, 2, 3}};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int nd = sizes[c][4] ? 5 : 4, sd = nd - 2;
        gx_view theta = ot_rand(GX_F32, 3, (int64_t[]){sizes[c][0], sd, sd + 1});
        gx_view sz = ot_view(GX_I64, ot_copy(sizes[c], (size_t)nd * sizeof(int64_t)), 1,
                             (int64_t[]){nd});
        for (int align = 0; align < 2; align++) {
            int64_t oshape[5] = {sizes[c][0]};
            for (int d = 0; d < sd; d++)
                oshape[1 + d] = sizes[c][2 + d];
            oshape[1 + sd] = sd;
            gx_view want = ot_view(GX_F32, NULL, sd + 2, oshape);
            want.data = ot_alloc((size_t)want.numel * sizeof(float));
            for (int64_t i = 0; i < want.numel / sd; i++) {
                int64_t idx[4];
                ot_unravel(i, sd + 1, oshape, idx);
                double pt[4] = {0, 0, 0, 1};
                for (int d = 0; d < sd; d++) /* x along the last dim, then y, z */
                    pt[d] = s_ref_lin(idx[sd - d], oshape[sd - d], align);
                pt[sd] = 1;
                const float *t = (const float *)theta.data + idx[0] * sd * (sd + 1);
                for (int r = 0; r < sd; r++) {
                    double v = 0;
                    for (int j = 0; j <= sd; j++)
                        v += (double)t[r * (sd + 1) + j] * pt[j];
                    ((float *)want.data)[i * sd + r] = (float)v;
                }
            }
            ot_check_f32(GX_OP_AFFINE_GRID, NODE(A_INT("align_corners", align)), 2,
                        (gx_view[]){theta, sz}, &want, 1e-6f, 1e-6f);
        }
    }
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, I64V(SHAPE(3), 1, 1, 2)},
                    GX_ESHAPE, "AffineGrid: size has shape [3], expected [4] (N, C, H, W) or [5] "
                    "(N, C, D, H, W)");
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, I64V(SHAPE(5), 1, 1, 2, 2, 2)},
                    GX_ESHAPE, "AffineGrid: theta has shape [1,2,3], expected [N, 3, 4] for a "
                    "size of 5 values");
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, I64V(SHAPE(4), 2, 1, 2, 2)},
                    GX_ESHAPE, "AffineGrid: size[0] is 2 but theta holds 1 matrices");
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, I64V(SHAPE(4), 1, 1, 0, 2)},
                    GX_ESHAPE, "AffineGrid: size[2] is 0; spatial sizes must be positive");
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){id, I32V(SHAPE(4), 1, 1, 2, 2)},
                    GX_EDTYPE, "AffineGrid: size is int32, expected int64");
    ot_expect_error(GX_OP_AFFINE_GRID, NODE(A_INT("align_corners", 2)), 2,
                    (gx_view[]){id, size}, GX_EATTR,
                    "AffineGrid: align_corners is 2, expected 0 or 1");
    ot_expect_error(GX_OP_AFFINE_GRID, NULL, 2, (gx_view[]){I64V(SHAPE(1, 2, 3), 1, 0, 0, 0, 1, 0),
                    size}, GX_EDTYPE, "AffineGrid: int64 not supported (float32 only)");
}
END_TEST

/* ---- TensorScatter ---- */

/* The specification's pseudocode: a copy of past_cache, then for every
 * prefix index before axis and sequence index s of update, the update's
 * row written at write_indices[batch] + s (mod max_sequence_length in
 * circular mode). */
static gx_view s_ref_tensor_scatter(const gx_view *past, const gx_view *up, const int64_t *w,
                                    int axis, bool circular)
{
    const size_t es = gx_dtype_size(past->dtype);
    gx_view y = ot_view(past->dtype, ot_copy(past->data, ot_nbytes(past) + 1), past->ndim,
                        past->shape);
    const int64_t inner = gx_shape_numel(past->ndim - axis - 1, past->shape + axis + 1, INT64_MAX);
    const int64_t outer = gx_shape_numel(axis, past->shape, INT64_MAX);
    const int64_t per_b = outer / past->shape[0], max = past->shape[axis], len = up->shape[axis];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t sq = 0; sq < len; sq++) {
            int64_t at = (w ? w[o / per_b] : 0) + sq;
            if (circular)
                at = ((at % max) + max) % max;
            memcpy((char *)y.data + (size_t)((o * max + at) * inner) * es,
                   (const char *)up->data + (size_t)((o * len + sq) * inner) * es,
                   (size_t)inner * es);
        }
    }
    return y;
}

START_TEST(test_tensor_scatter)
{
    /* by hand: a cache of 2 samples x 4 positions of 1 value */
    gx_view past = F32V(SHAPE(2, 4, 1), 1, 2, 3, 4, 5, 6, 7, 8);
    gx_view up = F32V(SHAPE(2, 2, 1), 10, 11, 20, 21);
    gx_view w = I64V(SHAPE(2), 1, 2);
    ot_expect(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, w},
              F32V(SHAPE(2, 4, 1), 1, 10, 11, 4, 5, 6, 20, 21), 0, 0);
    ot_expect(GX_OP_TENSOR_SCATTER, NULL, 2, (gx_view[]){past, up},
              F32V(SHAPE(2, 4, 1), 10, 11, 3, 4, 20, 21, 7, 8), 0, 0);
    gx_view w3 = I64V(SHAPE(2), 3, 6);
    ot_expect(GX_OP_TENSOR_SCATTER, NODE(A_STR("mode", "circular")), 3,
              (gx_view[]){past, up, w3}, F32V(SHAPE(2, 4, 1), 11, 2, 3, 10, 5, 6, 20, 21), 0, 0);
    /* random: the node tests' [batch, heads, seq, head] caches along -2,
     * other axes, circular wrap, negative circular indices, other dtypes */
    static const struct {
        gx_dtype dt;
        int64_t past[4], len;
        int axis;
        bool circular;
        int64_t w[3];
    } cases[] = {
        {GX_F32, {2, 3, 5, 4}, 2, 2, false, {0, 3}},
        {GX_F32, {2, 3, 5, 4}, 5, 2, false, {0, 0}},
        {GX_F32, {2, 3, 5, 4}, 3, 2, true, {4, 2}},
        {GX_F16, {3, 6, 2, 2}, 4, 1, true, {-1, 5, 11}},
        {GX_I8, {3, 2, 2, 7}, 3, 3, false, {4, 1, 0}},
        {GX_I64, {2, 4, 3, 1}, 1, 1, true, {3, 7}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t us[4];
        memcpy(us, cases[c].past, sizeof us);
        us[cases[c].axis] = cases[c].len;
        gx_view pv = ot_rand(cases[c].dt, 4, cases[c].past), uv = ot_rand(cases[c].dt, 4, us);
        gx_view wv = ot_view(GX_I64, ot_copy(cases[c].w, (size_t)cases[c].past[0] * 8), 1,
                             cases[c].past);
        gx_attr attrs[2] = {A_INT("axis", cases[c].axis - (c % 2 ? 4 : 0)),
                            A_STR("mode", cases[c].circular ? "circular" : "linear")};
        gx_node node = {.n_attr = 2, .attr = attrs};
        s_check_exact(GX_OP_TENSOR_SCATTER, &node, 3, (gx_view[]){pv, uv, wv},
                      s_ref_tensor_scatter(&pv, &uv, cases[c].w, cases[c].axis,
                                           cases[c].circular));
        s_check_exact(GX_OP_TENSOR_SCATTER, &node, 2, (gx_view[]){pv, uv},
                      s_ref_tensor_scatter(&pv, &uv, NULL, cases[c].axis, cases[c].circular));
    }
    /* errors */
    ot_expect_error(GX_OP_TENSOR_SCATTER, NODE(A_STR("mode", "ring")), 2, (gx_view[]){past, up},
                    GX_EATTR, "TensorScatter: mode 'ring' is not linear or circular");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NODE(A_INT("axis", 0)), 2, (gx_view[]){past, up},
                    GX_EATTR, "TensorScatter: axis 0 is not a dim of rank 3 other than the batch "
                    "(0)");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 2, (gx_view[]){past, RANDV(2, 5, 1)}, GX_ESHAPE,
                    "TensorScatter: update [2,5,1] does not fit past_cache [2,4,1] (equal dims "
                    "but for axis 1, no longer there)");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 2, (gx_view[]){past, RANDV(2, 2, 2)}, GX_ESHAPE,
                    NULL);
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 2,
                    (gx_view[]){past, I64V(SHAPE(2, 2, 1), 1, 2, 3, 4)}, GX_EDTYPE,
                    "TensorScatter: update is int64 but past_cache is float32");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, I64V(SHAPE(2), 1, 3)},
                    GX_ESHAPE, "TensorScatter: write index 3 of sample 1 puts the update past the "
                    "cache's end");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, I64V(SHAPE(2), -1, 0)},
                    GX_ESHAPE, "TensorScatter: write index -1 of sample 0 is negative");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, I32V(SHAPE(2), 0, 0)},
                    GX_EDTYPE, "TensorScatter: write_indices is int32, expected int64");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, I64V(SHAPE(1), 0)},
                    GX_ESHAPE, "TensorScatter: write_indices has shape [1], expected [2]");
    ot_expect_error(GX_OP_TENSOR_SCATTER, NULL, 2, (gx_view[]){RANDV(4), RANDV(2)}, GX_ESHAPE,
                    "TensorScatter: past_cache has rank 1; [batch, ..., max_sequence_length, ...] "
                    "needed");
    /* an index infer did not see: the rows past the end are dropped */
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN];
    gx_view wl = I64V(SHAPE(2), 0, 0);
    ck_assert_int_eq(ot_run(GX_OP_TENSOR_SCATTER, NULL, 3, (gx_view[]){past, up, wl}, 1, av, &out,
                            err), GX_OK);
    ((int64_t *)wl.data)[0] = 3;
    ((int64_t *)wl.data)[1] = -1;
    const gx_kargs ka = {.attr = av, .n_in = 3, .in = (gx_view[]){past, up, wl}, .n_out = 1,
                         .out = &out, .nth = 1};
    gx_cpu_kernel(GX_OP_TENSOR_SCATTER)(&ka);
    const float want[8] = {1, 2, 3, 10, 5, 6, 7, 8};
    ck_assert(memcmp(out.data, want, sizeof want) == 0);
}
END_TEST

/* ---- DeformConv ---- */

/* Bilinear sampling written as the tent sum over every pixel:
 * X[y, x] max(0, 1 - |y - py|) max(0, 1 - |x - px|), pixels outside the
 * image being absent (zeros). */
static double s_ref_tent(const float *plane, int64_t h, int64_t w, double py, double px)
{
    double v = 0;
    for (int64_t yy = 0; yy < h; yy++)
        for (int64_t xx = 0; xx < w; xx++) {
            const double a = 1 - fabs((double)yy - py), b = 1 - fabs((double)xx - px);
            if (a > 0 && b > 0)
                v += a * b * plane[yy * w + xx];
        }
    return v;
}

/* The ONNX reference's loops: output (n, oc, i, j) = B[oc] + the sum over
 * the group's input channels and the taps of W * mask * X sampled at the
 * tap's grid position plus its offset (offset group of the channel). */
static gx_view s_ref_deformconv(const gx_view *x, const gx_view *w, const gx_view *off,
                                const float *b, const float *mask, int64_t group, int64_t og,
                                const int64_t *str, const int64_t *pads, const int64_t *dil)
{
    const int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int64_t M = w->shape[0], kh = w->shape[2], kw = w->shape[3];
    const int64_t oh = off->shape[2], ow = off->shape[3];
    gx_view y = ot_view(GX_F32, ot_alloc((size_t)(N * M * oh * ow) * sizeof(float)), 4,
                        (int64_t[]){N, M, oh, ow});
    const float *px = x->data, *pw = w->data, *po = off->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double acc = b ? b[m] : 0;
                    for (int64_t c = 0; c < C; c++) {
                        if (c / (C / group) != m / (M / group))
                            continue;
                        const int64_t g = c / (C / og);
                        for (int64_t ki = 0; ki < kh; ki++)
                            for (int64_t kj = 0; kj < kw; kj++) {
                                const int64_t tap = (g * kh + ki) * kw + kj;
                                const int64_t at = (n * og * kh * kw * 2 + 2 * tap) * oh * ow;
                                const double dy = po[at + i * ow + j];
                                const double dx = po[at + oh * ow + i * ow + j];
                                const double v = s_ref_tent(
                                    px + (n * C + c) * H * W, H, W,
                                    (double)(i * str[0] - pads[0] + ki * dil[0]) + dy,
                                    (double)(j * str[1] - pads[1] + kj * dil[1]) + dx);
                                const double mk =
                                    mask ? mask[((n * og * kh * kw + tap) * oh + i) * ow + j] : 1;
                                const int64_t wc = m * (C / group) + c % (C / group);
                                acc += v * mk * pw[(wc * kh + ki) * kw + kj];
                            }
                    }
                    ((float *)y.data)[((n * M + m) * oh + i) * ow + j] = (float)acc;
                }
    return y;
}

START_TEST(test_deformconv)
{
    /* the ONNX node tests, values as they give them */
    float x9[9];
    for (int i = 0; i < 9; i++)
        x9[i] = (float)i;
    gx_view x = ot_view(GX_F32, ot_copy(x9, sizeof x9), SHAPE(1, 1, 3, 3));
    gx_view w = F32V(SHAPE(1, 1, 2, 2), 1, 1, 1, 1);
    gx_view offp = ot_view(GX_F32, ot_alloc(8 * 16 * sizeof(float)), SHAPE(1, 8, 4, 4));
    ((float *)offp.data)[0] = 0.5f;
    ((float *)offp.data)[5 * 16 + 1 * 4 + 2] = -0.1f;
    ot_expect(GX_OP_DEFORMCONV, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("pads", 1, 1, 1, 1)), 3,
              (gx_view[]){x, w, offp},
              F32V(SHAPE(1, 1, 4, 4), 0, 1, 3, 2, 3, 8, 11.9f, 7, 9, 20, 24, 13, 6, 13, 15, 8),
              1e-6f, 1e-6f);
    gx_view off = ot_view(GX_F32, ot_alloc(8 * 4 * sizeof(float)), SHAPE(1, 8, 2, 2));
    ((float *)off.data)[0] = 0.5f;
    ((float *)off.data)[5 * 4 + 1] = -0.1f;
    ot_expect(GX_OP_DEFORMCONV, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("pads", 0, 0, 0, 0)), 3,
              (gx_view[]){x, w, off}, F32V(SHAPE(1, 1, 2, 2), 9.5f, 11.9f, 20, 24), 1e-6f, 1e-6f);
    gx_view mask = F32V(SHAPE(1, 4, 2, 2), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.2f, 1, 1, 1, 1);
    ot_expect(GX_OP_DEFORMCONV, NODE(A_INTS("kernel_shape", 2, 2)), 5,
              (gx_view[]){x, w, off, F32V(SHAPE(1), 1), mask},
              F32V(SHAPE(1, 1, 2, 2), 10.5f, 12.9f, 21, 19.4f), 1e-6f, 1e-6f);
    float x18[18];
    for (int i = 0; i < 9; i++) {
        x18[i] = (float)i;
        x18[9 + i] = (float)(8 - i);
    }
    gx_view x2 = ot_view(GX_F32, ot_copy(x18, sizeof x18), SHAPE(1, 2, 3, 3));
    gx_view w2 = F32V(SHAPE(1, 2, 2, 2), 1, 1, 1, 1, 1, 1, 1, 1);
    gx_view off2 = ot_view(GX_F32, ot_alloc(16 * 4 * sizeof(float)), SHAPE(1, 16, 2, 2));
    ((float *)off2.data)[0] = 0.5f;
    ((float *)off2.data)[13 * 4 + 1] = -0.1f;
    ot_expect(GX_OP_DEFORMCONV, NODE(A_INT("offset_group", 2)), 3, (gx_view[]){x2, w2, off2},
              F32V(SHAPE(1, 1, 2, 2), 33.5f, 32.1f, 32, 32), 1e-6f, 1e-6f);
    /* random: groups, offset groups, strides, dilations, pads, B, mask,
     * offsets reaching past the image */
    static const struct {
        int64_t n, c, h, w, m, kh, kw, group, og, str[2], pads[4], dil[2];
    } cases[] = {
        {2, 4, 7, 6, 6, 3, 2, 2, 2, {1, 2}, {1, 0, 2, 1}, {2, 1}},
        {1, 3, 5, 5, 2, 3, 3, 1, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},
        {3, 2, 4, 9, 4, 1, 3, 2, 1, {1, 1}, {0, 2, 0, 0}, {1, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t eh = (cases[c].kh - 1) * cases[c].dil[0] + 1;
        const int64_t ew = (cases[c].kw - 1) * cases[c].dil[1] + 1;
        const int64_t *pd = cases[c].pads;
        const int64_t oh = (cases[c].h + pd[0] + pd[2] - eh) / cases[c].str[0] + 1;
        const int64_t ow = (cases[c].w + pd[1] + pd[3] - ew) / cases[c].str[1] + 1;
        const int64_t taps = cases[c].og * cases[c].kh * cases[c].kw;
        gx_view xr =
            ot_rand(GX_F32, 4, (int64_t[]){cases[c].n, cases[c].c, cases[c].h, cases[c].w});
        gx_view wr = ot_rand(GX_F32, 4, (int64_t[]){cases[c].m, cases[c].c / cases[c].group,
                                                   cases[c].kh, cases[c].kw});
        gx_view ofr = ot_rand(GX_F32, 4, (int64_t[]){cases[c].n, 2 * taps, oh, ow});
        gx_view br = ot_rand(GX_F32, 1, (int64_t[]){cases[c].m});
        gx_view mr = ot_rand(GX_F32, 4, (int64_t[]){cases[c].n, taps, oh, ow});
        gx_attr attrs[6] = {
            {.name = (char *)"strides", .type = GX_ATTR_INTS, .ints = (int64_t *)cases[c].str,
             .n = 2},
            {.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = (int64_t *)cases[c].pads,
             .n = 4},
            {.name = (char *)"dilations", .type = GX_ATTR_INTS, .ints = (int64_t *)cases[c].dil,
             .n = 2},
            A_INT("group", cases[c].group),
            A_INT("offset_group", cases[c].og),
            A_INTS("kernel_shape", cases[c].kh, cases[c].kw),
        };
        gx_node node = {.n_attr = 6, .attr = attrs};
        gx_view want = s_ref_deformconv(&xr, &wr, &ofr, br.data, mr.data, cases[c].group,
                                        cases[c].og, cases[c].str, cases[c].pads, cases[c].dil);
        ot_check_f32(GX_OP_DEFORMCONV, &node, 5, (gx_view[]){xr, wr, ofr, br, mr}, &want, 1e-5f,
                    1e-5f);
        want = s_ref_deformconv(&xr, &wr, &ofr, NULL, NULL, cases[c].group, cases[c].og,
                                cases[c].str, cases[c].pads, cases[c].dil);
        ot_check_f32(GX_OP_DEFORMCONV, &node, 3, (gx_view[]){xr, wr, ofr}, &want, 1e-5f, 1e-5f);
    }
    /* errors */
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 3, (gx_view[]){x, w, offp}, GX_ESHAPE,
                    "DeformConv: offset has shape [1,8,4,4], expected [1,8,2,2]");
    ot_expect_error(GX_OP_DEFORMCONV, NODE(A_INTS("kernel_shape", 3, 3)), 3, (gx_view[]){x, w, off},
                    GX_EATTR, "DeformConv: kernel_shape does not match W's [2, 2]");
    ot_expect_error(GX_OP_DEFORMCONV, NODE(A_INT("group", 2)), 3, (gx_view[]){x, w, off},
                    GX_ESHAPE, "DeformConv: group 2 does not fit X's 1 channels, W's 1 input "
                    "channels and 1 output channels");
    ot_expect_error(GX_OP_DEFORMCONV, NODE(A_INT("offset_group", 2)), 3, (gx_view[]){x, w, off},
                    GX_EATTR, "DeformConv: offset_group 2 does not divide the 1 channels");
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 3, (gx_view[]){RANDV(1, 1, 3, 3, 3), w, off},
                    GX_EUNSUPPORTED,
                    "DeformConv: X has rank 5; only 2-D images [N, C, H, W] are supported");
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 4, (gx_view[]){x, w, off, RANDV(2)}, GX_ESHAPE,
                    "DeformConv: B has shape [2], expected [1]");
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 5, (gx_view[]){x, w, off, RANDV(1), RANDV(1, 4, 2)},
                    GX_ESHAPE, "DeformConv: mask has shape [1,4,2], expected [1,4,2,2]");
    ot_expect_error(GX_OP_DEFORMCONV, NODE(A_INTS("strides", 0, 1)), 3, (gx_view[]){x, w, off},
                    GX_EATTR, "DeformConv: strides[0] is 0, expected 1..2147483647");
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 3, (gx_view[]){x, RANDV(1, 1, 4, 4), off}, GX_ESHAPE,
                    "DeformConv: the kernel (extent 4 x 4) does not fit the padded image");
    ot_expect_error(GX_OP_DEFORMCONV, NULL, 3,
                    (gx_view[]){I64V(SHAPE(1, 1, 1, 1), 1), w, off}, GX_EDTYPE,
                    "DeformConv: input 0 is int64, not supported (float32 only)");
}
END_TEST

/* ---- schema properties ---- */

/* Value inputs, the dynamic answer while they are unknown, batch rules. */
START_TEST(test_schema)
{
    ck_assert(gx_op_schema_get(GX_OP_CENTER_CROP_PAD)->value_inputs == 1u << 1);
    ck_assert(gx_op_schema_get(GX_OP_COL2IM)->value_inputs == (1u << 1 | 1u << 2));
    char err[ERRLEN] = "";
    gx_attrval av[GX_MAX_ATTRS];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_COL2IM, NULL, av, err, sizeof err), GX_OK);
    gx_view in[3] = {RANDV(1, 5, 5), I64V(SHAPE(2), 5, 5), I64V(SHAPE(2), 1, 5)}, out[1];
    in[1].data = NULL;
    gx_infer ic = {.attr = av, .n_in = 3, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = sizeof err};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_COL2IM)->infer(&ic), GX_INFER_DYNAMIC);
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_CENTER_CROP_PAD, NULL, av, err, sizeof err), GX_OK);
    in[0] = RANDV(4, 3);
    in[1] = I64V(SHAPE(2), 2, 2);
    in[1].data = NULL;
    ic.n_in = 2;
    ck_assert_int_eq(gx_op_schema_get(GX_OP_CENTER_CROP_PAD)->infer(&ic), GX_INFER_DYNAMIC);
    /* batch rules: the normalisations keep samples apart; CenterCropPad
     * only when axis 0 keeps its size */
    bool batched[3] = {true, false, false}, ob[1];
    gx_view gn[3] = {RANDV(2, 4, 3), RANDV(4), RANDV(4)}, gout = RANDV(2, 4, 3);
    gx_attrval gav[GX_MAX_ATTRS];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_GROUPNORM, NODE(A_INT("num_groups", 2)), gav, err,
                                         sizeof err), GX_OK);
    gx_batch_ctx bc = {.attr = gav, .n_in = 3, .in = gn, .in_batched = batched, .n_out = 1,
                       .out = &gout, .out_batched = ob};
    ck_assert(gx_op_batch_separable(GX_OP_GROUPNORM, &bc));
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_LPNORM, NODE(A_INT("axis", 0)), gav, err,
                                         sizeof err), GX_OK);
    bc.n_in = 1;
    ck_assert(!gx_op_batch_separable(GX_OP_LPNORM, &bc));
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_LPNORM, NULL, gav, err, sizeof err), GX_OK);
    ck_assert(gx_op_batch_separable(GX_OP_LPNORM, &bc));
    gx_view cc[2] = {RANDV(2, 4, 3), I64V(SHAPE(3), 2, 2, 2)}, cout = RANDV(2, 2, 2);
    bc = (gx_batch_ctx){.attr = av, .n_in = 2, .in = cc, .in_batched = batched, .n_out = 1,
                        .out = &cout, .out_batched = ob};
    ck_assert(gx_op_batch_separable(GX_OP_CENTER_CROP_PAD, &bc));
    cout = RANDV(1, 2, 2);
    ck_assert(!gx_op_batch_separable(GX_OP_CENTER_CROP_PAD, &bc));
    gx_view ci[3] = {RANDV(2, 5, 5), I64V(SHAPE(2), 5, 5), I64V(SHAPE(2), 1, 5)},
            co = RANDV(2, 1, 5, 5);
    bc = (gx_batch_ctx){.attr = av, .n_in = 3, .in = ci, .in_batched = batched, .n_out = 1,
                        .out = &co, .out_batched = ob};
    ck_assert(gx_op_batch_separable(GX_OP_COL2IM, &bc));
    /* RotaryEmbedding: with position_ids, they are batched and the caches
     * not; without, the caches are batched */
    gx_view rx[4] = {RANDV(2, 4, 3, 8), RANDV(10, 4), RANDV(10, 4),
                     I64V(SHAPE(2, 3), 0, 1, 2, 3, 4, 5)};
    gx_view ro = RANDV(2, 4, 3, 8);
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_ROTARY_EMBEDDING, NULL, gav, err, sizeof err),
                     GX_OK);
    bool rb[4] = {true, false, false, true};
    bc = (gx_batch_ctx){.attr = gav, .n_in = 4, .in = rx, .in_batched = rb, .n_out = 1,
                        .out = &ro, .out_batched = ob};
    ck_assert(gx_op_batch_separable(GX_OP_ROTARY_EMBEDDING, &bc));
    rb[1] = true;
    ck_assert(!gx_op_batch_separable(GX_OP_ROTARY_EMBEDDING, &bc));
    rx[1] = RANDV(2, 3, 4);
    rx[2] = RANDV(2, 3, 4);
    bc.n_in = 3;
    rb[2] = true;
    ck_assert(gx_op_batch_separable(GX_OP_ROTARY_EMBEDDING, &bc));
    rb[2] = false;
    ck_assert(!gx_op_batch_separable(GX_OP_ROTARY_EMBEDDING, &bc));
    /* the elementwise ones follow broadcasting */
    ck_assert(gx_op_schema_get(GX_OP_MISH)->flags & GX_OPF_ELEMENTWISE);
    ck_assert(gx_op_schema_get(GX_OP_BITWISE_NOT)->flags & GX_OPF_ELEMENTWISE);
}
END_TEST

Suite *ops_new_suite(void)
{
    Suite *s = suite_create("ops_new");
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mish);
    tcase_add_test(tc, test_swish);
    tcase_add_test(tc, test_bitwise_hand);
    tcase_add_test(tc, test_bitwise_reference);
    tcase_add_test(tc, test_bitwise_errors);
    tcase_add_test(tc, test_lpnorm);
    tcase_add_test(tc, test_groupnorm);
    tcase_add_test(tc, test_center_crop_pad);
    tcase_add_test(tc, test_col2im);
    tcase_add_test(tc, test_rotary_embedding);
    tcase_add_test(tc, test_affine_grid);
    tcase_add_test(tc, test_tensor_scatter);
    tcase_add_test(tc, test_deformconv);
    tcase_add_test(tc, test_schema);
    suite_add_tcase(s, tc);
    return s;
}
