/*
 * Op tests of the quant family (GX_OPS_QUANT in ops/op.h): hand-computed
 * cases (most from the ONNX node tests), the rounding and saturation edges,
 * and the errors infer gives. Every kernel run is repeated with nth = 3 and
 * must give the same bytes as nth = 1.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "ops/cpu/requant.h"
#include "ops/qgemm.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define I8V(shape, ...)                                                       \
    ot_view(GX_I8, ot_copy((int8_t[]){__VA_ARGS__}, sizeof((int8_t[]){__VA_ARGS__})), shape)
#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
#define U8V(shape, ...)                                                       \
    ot_view(GX_U8, ot_copy((uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})), shape)

/* The shape argument pair of a scalar. */
#define SCALAR 0, (const int64_t *)NULL

static void s_assert_same(gx_op op, const gx_view *got, const gx_view *want, const char *what)
{
    ck_assert_msg(got->dtype == want->dtype, "%s: dtype %s, want %s (%s)", gx_op_name(op),
                  gx_dtype_name(got->dtype), gx_dtype_name(want->dtype), what);
    ot_check_shape(got, want->ndim, want->shape);
    const size_t es = gx_dtype_size(want->dtype);
    for (int64_t i = 0; i < want->numel; i++)
        ck_assert_msg(memcmp((const char *)got->data + i * (int64_t)es,
                             (const char *)want->data + i * (int64_t)es, es) == 0,
                      "%s: element %lld of %lld differs (%s)", gx_op_name(op), (long long)i,
                      (long long)want->numel, what);
}

/* Runs op with nth = 1 and 3 and expects exactly the n_out outputs want. */
static void s_expect_n(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                       const gx_view *want)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[4];
    char err[ERRLEN];
    for (int nth = 1; nth <= 3; nth += 2) {
        int rc = ot_run_n(op, node, n_in, in, nth, av, n_out, out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
        for (int o = 0; o < n_out; o++)
            s_assert_same(op, &out[o], &want[o], nth == 1 ? "nth=1" : "nth=3");
    }
}

static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want)
{
    s_expect_n(op, node, n_in, in, 1, &want);
}

/* An omitted optional input. */
static gx_view s_none(void)
{
    return (gx_view){.ndim = -1};
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

START_TEST(test_quantize)
{
    /* test_quantizelinear */
    gx_view in[3] = {F32V(SHAPE(6), 0, 2, 3, 1000, -254, -1000), F32V(SCALAR, 2),
                     U8V(SCALAR, 128)};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 3, in, U8V(SHAPE(6), 128, 129, 130, 255, 1, 0));
    /* ties go to even; int8 saturates at both ends */
    gx_view i8[3] = {F32V(SHAPE(6), 0.5f, 1.5f, 2.5f, -2.5f, 300, -300), F32V(SHAPE(1), 1),
                     I8V(SHAPE(1), 0)};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 3, i8, I8V(SHAPE(6), 0, 2, 2, -2, 127, -128));
    /* no zero point: uint8 with 0 */
    gx_view nozp[2] = {F32V(SHAPE(3), -1, 1, 7), F32V(SCALAR, 0.5f)};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 2, nozp, U8V(SHAPE(3), 0, 2, 14));
    /* per axis (test_quantizelinear_axis, first two channels), and axis 0 */
    gx_view ax[3] = {F32V(SHAPE(1, 2, 1, 2), -162, 10, -76, 0), F32V(SHAPE(2), 2, 4),
                     U8V(SHAPE(2), 84, 24)};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 3, ax, U8V(SHAPE(1, 2, 1, 2), 3, 89, 5, 24));
    gx_view ax0[3] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(2), 1, 2), I8V(SHAPE(2), 0, -1)};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("axis", 0)), 3, ax0, I8V(SHAPE(2, 2), 1, 2, 1, 1));
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("axis", -2)), 3, ax0,
             I8V(SHAPE(2, 2), 1, 2, 1, 1));
}
END_TEST

START_TEST(test_dequantize)
{
    gx_view in[3] = {U8V(SHAPE(4), 0, 3, 128, 255), F32V(SCALAR, 2), U8V(SCALAR, 128)};
    s_expect(GX_OP_DEQUANTIZE_LINEAR, NODE(), 3, in, F32V(SHAPE(4), -256, -250, 0, 254));
    gx_view i32[2] = {I32V(SHAPE(3), -100000, 0, 7), F32V(SCALAR, 0.5f)};
    s_expect(GX_OP_DEQUANTIZE_LINEAR, NODE(), 2, i32, F32V(SHAPE(3), -50000, 0, 3.5f));
    gx_view ax[3] = {I8V(SHAPE(2, 2), -128, 127, 0, 1), F32V(SHAPE(2), 1, 2),
                     I8V(SHAPE(2), 0, 1)};
    s_expect(GX_OP_DEQUANTIZE_LINEAR, NODE(A_INT("axis", 0)), 3, ax,
             F32V(SHAPE(2, 2), -128, 127, -2, 0));
    s_expect(GX_OP_DEQUANTIZE_LINEAR, NODE(), 3, ax, F32V(SHAPE(2, 2), -128, 252, 0, 0));
}
END_TEST

/* Runs longer than a vector (77 elements: two blocks of 32 and a tail of
 * 13, four of 16 and a tail), uint8 and int8, against the formula element
 * by element, with each ISA's kernels: values around half-integers of
 * x / s, NaN, and both ends saturating. */
START_TEST(test_quantize_runs)
{
    enum { N = 77 };
    float *x = ot_alloc(N * sizeof *x);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - 38) * 0.75f + (i % 3 ? 0.125f : 0.0f);
    x[5] = NAN, x[6] = 1e9f, x[7] = -1e9f, x[70] = NAN, x[75] = 1e9f, x[76] = -1e9f;
    const float sc = 0.25f;
    char isa[32];
    snprintf(isa, sizeof isa, "%s", gx_cpu_gemm_isa());
    for (int r = 0; gx_cpu_gemm_isa_name(r / 2); r++) { /* ISA r / 2, signed when r is odd */
        ck_assert(gx_cpu_gemm_isa_set(gx_cpu_gemm_isa_name(r / 2)));
        const int sgn = r % 2;
        const gx_dtype dt = sgn ? GX_I8 : GX_U8;
        const int32_t z = sgn ? -3 : 100;
        const float lo = sgn ? -128.0f : 0.0f, hi = sgn ? 127.0f : 255.0f;
        void *q = ot_alloc(N), *zp = ot_alloc(1);
        float *dq = ot_alloc(N * sizeof *dq);
        if (sgn)
            *(int8_t *)zp = (int8_t)z;
        else
            *(uint8_t *)zp = (uint8_t)z;
        for (int i = 0; i < N; i++) {
            float v = rintf(x[i] / sc) + (float)z;
            v = v > lo ? (v < hi ? v : hi) : lo;
            if (sgn)
                ((int8_t *)q)[i] = (int8_t)v;
            else
                ((uint8_t *)q)[i] = (uint8_t)v;
            dq[i] = (v - (float)z) * sc;
        }
        gx_view in[3] = {ot_view(GX_F32, x, SHAPE(N)), F32V(SCALAR, sc),
                         ot_view(dt, zp, SCALAR)};
        s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 3, in, ot_view(dt, q, SHAPE(N)));
        gx_view din[3] = {ot_view(dt, q, SHAPE(N)), F32V(SCALAR, sc), ot_view(dt, zp, SCALAR)};
        s_expect(GX_OP_DEQUANTIZE_LINEAR, NODE(), 3, din, ot_view(GX_F32, dq, SHAPE(N)));
    }
    ck_assert(gx_cpu_gemm_isa_set(isa));
}
END_TEST

START_TEST(test_quantize_errors)
{
    gx_view bad_scale[3] = {F32V(SHAPE(2, 3), 0, 0, 0, 0, 0, 0), F32V(SHAPE(2), 1, 1),
                            U8V(SHAPE(2), 0, 0)};
    ot_expect_error(GX_OP_QUANTIZE_LINEAR, NODE(), 3, bad_scale, GX_ESHAPE,
                    "QuantizeLinear: scale is [2] but input [2,3] has 3 at axis 1");
    ot_expect_error(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("axis", 2)), 3, bad_scale, GX_ESHAPE,
                    NULL);
    gx_view bad_zp[3] = {F32V(SHAPE(2), 0, 0), F32V(SCALAR, 1), U8V(SHAPE(2), 0, 0)};
    ot_expect_error(GX_OP_QUANTIZE_LINEAR, NODE(), 3, bad_zp, GX_ESHAPE,
                    "QuantizeLinear: zero point is [2] but scale is []");
    gx_view i32zp[3] = {F32V(SHAPE(2), 0, 0), F32V(SCALAR, 1), I32V(SCALAR, 0)};
    ot_expect_error(GX_OP_QUANTIZE_LINEAR, NODE(), 3, i32zp, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("block_size", 2)), 3, bad_zp,
                    GX_EUNSUPPORTED, "QuantizeLinear: block_size 2 (only 0 is supported)");
    gx_view mixed[3] = {U8V(SHAPE(2), 0, 0), F32V(SCALAR, 1), I8V(SCALAR, 0)};
    ot_expect_error(GX_OP_DEQUANTIZE_LINEAR, NODE(), 3, mixed, GX_EDTYPE,
                    "DequantizeLinear: zero point is int8 but x is uint8");
    gx_view f[2] = {F32V(SHAPE(2), 0, 0), F32V(SCALAR, 1)};
    ot_expect_error(GX_OP_DEQUANTIZE_LINEAR, NODE(), 2, f, GX_EDTYPE, NULL);
    gx_view none[3] = {F32V(SHAPE(2), 0, 0), F32V(SCALAR, 1), s_none()};
    s_expect(GX_OP_QUANTIZE_LINEAR, NODE(), 3, none, U8V(SHAPE(2), 0, 0));
}
END_TEST

/* ---- DynamicQuantizeLinear ---- */

START_TEST(test_dynamic_quantize)
{
    /* test_dynamicquantizelinear */
    gx_view x = F32V(SHAPE(6), 0, 2, -3, -2.5f, 1.34f, 0.5f);
    gx_view want[3] = {U8V(SHAPE(6), 153, 255, 0, 26, 221, 179), F32V(SCALAR, 5.0f / 255.0f),
                       U8V(SCALAR, 153)};
    s_expect_n(GX_OP_DYNAMIC_QUANTIZE_LINEAR, NODE(), 1, &x, 3, want);
    /* only positive values: the range still starts at 0 */
    gx_view pos = F32V(SHAPE(3), 1, 2, 255);
    gx_view wpos[3] = {U8V(SHAPE(3), 1, 2, 255), F32V(SCALAR, 1), U8V(SCALAR, 0)};
    s_expect_n(GX_OP_DYNAMIC_QUANTIZE_LINEAR, NODE(), 1, &pos, 3, wpos);
    /* all zeros: scale 0 and nothing divides by it */
    gx_view zero = F32V(SHAPE(2), 0, 0);
    gx_view wzero[3] = {U8V(SHAPE(2), 0, 0), F32V(SCALAR, 0), U8V(SCALAR, 0)};
    s_expect_n(GX_OP_DYNAMIC_QUANTIZE_LINEAR, NODE(), 1, &zero, 3, wzero);
    /* 16 lanes at a time and a tail, the extremes anywhere: against the
     * formula element by element (scale 511 / 255: every step exact) */
    for (int at = 0; at < 37; at += 12) {
        float *v = ot_alloc(37 * sizeof *v);
        uint8_t *q = ot_alloc(37);
        for (int i = 0; i < 37; i++)
            v[i] = (float)(i % 7) - 3.0f;
        v[at] = -255.5f, v[36 - at] = 255.5f;
        const float scale = 511.0f / 255.0f, zp = rintf(255.5f / scale);
        for (int i = 0; i < 37; i++)
            q[i] = (uint8_t)fminf(fmaxf(rintf(v[i] / scale) + zp, 0.0f), 255.0f);
        gx_view xv = ot_view(GX_F32, v, SHAPE(37));
        gx_view wv[3] = {ot_view(GX_U8, q, SHAPE(37)), F32V(SCALAR, scale),
                         U8V(SCALAR, (uint8_t)zp)};
        s_expect_n(GX_OP_DYNAMIC_QUANTIZE_LINEAR, NODE(), 1, &xv, 3, wv);
    }
    /* three outputs: infer by hand (ot_expect_error asks for one) */
    gx_view u8 = U8V(SHAPE(1), 0), out[3];
    char err[ERRLEN];
    gx_infer ic = {.n_in = 1, .in = &u8, .n_out = 3, .out = out, .err = err, .errlen = ERRLEN};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_DYNAMIC_QUANTIZE_LINEAR)->infer(&ic), GX_EDTYPE);
    ck_assert_str_eq(err, "DynamicQuantizeLinear: input 0 is uint8; supported: float32");
}
END_TEST

/* ---- QLinearMatMul ---- */

START_TEST(test_qlinear_matmul)
{
    /* test_qlinearmatmul_2D, and batched as in _3D (b broadcast) */
    gx_view in[8] = {U8V(SHAPE(2, 4), 208, 236, 0, 238, 3, 214, 255, 29),
                     F32V(SHAPE(1), 0.0066f),
                     U8V(SHAPE(1), 113),
                     U8V(SHAPE(4, 3), 152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247),
                     F32V(SHAPE(1), 0.00705f),
                     U8V(SHAPE(1), 114),
                     F32V(SHAPE(1), 0.0107f),
                     U8V(SHAPE(1), 118)};
    s_expect(GX_OP_QLINEAR_MATMUL, NODE(), 8, in, U8V(SHAPE(2, 3), 168, 115, 255, 1, 66, 151));
    in[0] = U8V(SHAPE(2, 2, 4), 208, 236, 0, 238, 3, 214, 255, 29, 208, 236, 0, 238, 3, 214,
                255, 29);
    s_expect(GX_OP_QLINEAR_MATMUL, NODE(), 8, in,
             U8V(SHAPE(2, 2, 3), 168, 115, 255, 1, 66, 151, 168, 115, 255, 1, 66, 151));
    /* int8 everywhere: (a - 1)(b + 1) summed, times 0.5, plus -3, saturated */
    gx_view i8[8] = {I8V(SHAPE(1, 2), 3, -1),   F32V(SCALAR, 1), I8V(SCALAR, 1),
                     I8V(SHAPE(2, 2), 1, 100, 0, -1), F32V(SCALAR, 0.5f), I8V(SCALAR, -1),
                     F32V(SCALAR, 1),           I8V(SCALAR, -3)};
    /* row: (2, -2) x [[2, 101], [1, 0]] = (2, 202) -> 1 + -3, 101 - 3 */
    s_expect(GX_OP_QLINEAR_MATMUL, NODE(), 8, i8, I8V(SHAPE(1, 2), -2, 98));
    i8[1] = F32V(SCALAR, 4);
    s_expect(GX_OP_QLINEAR_MATMUL, NODE(), 8, i8, I8V(SHAPE(1, 2), 1, 127));
}
END_TEST

START_TEST(test_qlinear_matmul_errors)
{
    gx_view in[8] = {U8V(SHAPE(1, 2), 0, 0), F32V(SCALAR, 1), U8V(SCALAR, 0),
                     U8V(SHAPE(3, 1), 0, 0, 0), F32V(SCALAR, 1), U8V(SCALAR, 0),
                     F32V(SCALAR, 1), U8V(SCALAR, 0)};
    ot_expect_error(GX_OP_QLINEAR_MATMUL, NODE(), 8, in, GX_ESHAPE,
                    "QLinearMatMul: a is [1,2] but b is [3,1] (K mismatch)");
    in[3] = U8V(SHAPE(2, 1), 0, 0);
    in[2] = I8V(SCALAR, 0);
    ot_expect_error(GX_OP_QLINEAR_MATMUL, NODE(), 8, in, GX_EDTYPE,
                    "QLinearMatMul: a_zero_point is int8 but a is uint8");
    in[2] = U8V(SCALAR, 0);
    in[4] = F32V(SHAPE(2), 1, 1);
    ot_expect_error(GX_OP_QLINEAR_MATMUL, NODE(), 8, in, GX_EUNSUPPORTED,
                    "QLinearMatMul: b_scale is [2]; only per-tensor (one element) is supported");
    in[4] = F32V(SCALAR, 1);
    in[0] = U8V(SHAPE(2), 0, 0);
    ot_expect_error(GX_OP_QLINEAR_MATMUL, NODE(), 8, in, GX_EUNSUPPORTED, NULL);
}
END_TEST

/* ---- QLinearConv ---- */

/* QLinearConv of random x [2, c, xh, xw] and w [6, c / group, kh, 2]
 * (dtype dt) against sums taken here tap by tap (the geometry
 * ConvInteger's infer resolves, which has its own kernel), plus the
 * bias, requantised here. */
static void s_qlinearconv_ref_hw(gx_dtype dt, const gx_node *node, int64_t c, int64_t group,
                                 int64_t kh, int64_t xh, int64_t xw)
{
    const bool i8 = dt == GX_I8;
    gx_view x = ot_rand(dt, SHAPE(2, c, xh, xw)), wt = ot_rand(dt, SHAPE(6, c / group, kh, 2));
    gx_view xz = i8 ? I8V(SCALAR, -3) : U8V(SCALAR, 120);
    gx_view wz = i8 ? I8V(SHAPE(6), 0, 1, -1, 2, 5, -7) : U8V(SHAPE(6), 128, 127, 0, 255, 3, 9);
    gx_view ws = F32V(SHAPE(6), 0.01f, 0.02f, 0.005f, 0.03f, 0.001f, 0.04f);
    gx_view b = I32V(SHAPE(6), 100, -200, 0, 5000, -7, 1);
    const float xs = 0.05f, ys = 0.9f;
    gx_view in[9] = {x, F32V(SCALAR, xs), xz, wt, ws, wz, F32V(SCALAR, ys),
                     i8 ? I8V(SCALAR, 4) : U8V(SCALAR, 100), b};
    gx_attrval av[GX_MAX_ATTRS];
    gx_view acc;
    char err[ERRLEN];
    gx_view ci[4] = {x, wt, xz, wz};
    ck_assert_msg(ot_run(GX_OP_CONVINTEGER, node, 4, ci, 1, av, &acc, err) == GX_OK, "%s", err);
    gx_win w;
    ck_assert_int_eq(gx_win_init(&w, av, "ConvInteger", &x, wt.shape + 2, false, false, err, ERRLEN),
                     GX_OK);
    gx_view want = ot_view(dt, ot_alloc((size_t)acc.numel), acc.ndim, acc.shape);
    const int64_t per_m = acc.numel / acc.shape[0] / 6, cg = c / group;
    for (int64_t e = 0; e < acc.numel; e++) {
        const int64_t m = e / per_m % 6, n = e / per_m / 6;
        const int64_t oh = e % per_m / w.out[1], ow = e % per_m % w.out[1];
        int64_t s64 = 0;
        for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t i = 0; i < w.k[0]; i++)
                for (int64_t j = 0; j < w.k[1]; j++) {
                    const int64_t ih = oh * w.stride[0] - w.pad_lo[0] + i * w.dil[0];
                    const int64_t iw = ow * w.stride[1] - w.pad_lo[1] + j * w.dil[1];
                    if (ih < 0 || ih >= xh || iw < 0 || iw >= xw)
                        continue;
                    const int64_t xi = ((n * c + m / (6 / group) * cg + ic) * xh + ih) * xw + iw;
                    const int64_t wi = ((m * cg + ic) * w.k[0] + i) * w.k[1] + j;
                    const int32_t xv = i8 ? ((const int8_t *)x.data)[xi] - -3
                                          : ((const uint8_t *)x.data)[xi] - 120;
                    const int32_t wv = i8 ? ((const int8_t *)wt.data)[wi] -
                                                ((const int8_t *)wz.data)[m]
                                          : ((const uint8_t *)wt.data)[wi] -
                                                ((const uint8_t *)wz.data)[m];
                    s64 += (int64_t)xv * wv;
                }
        ck_assert_int_eq(s64, ((const int32_t *)acc.data)[e]); /* ConvInteger agrees */
        const int64_t sum = s64 + ((const int32_t *)b.data)[m];
        const float scale = xs * ((const float *)ws.data)[m] / ys;
        double v = rint((double)sum * scale) + (i8 ? 4 : 100);
        const double lo = i8 ? -128 : 0, hi = i8 ? 127 : 255;
        v = v < lo ? lo : v > hi ? hi : v;
        if (i8)
            ((int8_t *)want.data)[e] = (int8_t)v;
        else
            ((uint8_t *)want.data)[e] = (uint8_t)v;
    }
    s_expect(GX_OP_QLINEAR_CONV, node, 9, in, want);
}

/* s_qlinearconv_ref_hw with x [2, c, 5, 6]. */
static void s_qlinearconv_ref(gx_dtype dt, const gx_node *node, int64_t c, int64_t group,
                              int64_t kh)
{
    s_qlinearconv_ref_hw(dt, node, c, group, kh, 5, 6);
}

static void s_qlinearconv_cases(void)
{
    /* test_qlinearconv's first row: a 1x1 kernel */
    gx_view in[8] = {U8V(SHAPE(1, 1, 1, 3), 255, 174, 162), F32V(SCALAR, 0.003692047f),
                     U8V(SCALAR, 132), U8V(SHAPE(1, 1, 1, 1), 0), F32V(SHAPE(1), 0.00172795f),
                     U8V(SHAPE(1), 255), F32V(SCALAR, 0.0016268126f), U8V(SCALAR, 123)};
    s_expect(GX_OP_QLINEAR_CONV, NODE(), 8, in, U8V(SHAPE(1, 1, 1, 3), 0, 81, 93));
    s_qlinearconv_ref(GX_U8, NODE(A_INTS("pads", 1, 0, 2, 1), A_INTS("strides", 2, 1)), 4, 1, 3);
    s_qlinearconv_ref(GX_U8, NODE(A_INTS("dilations", 2, 2), A_INT("group", 2)), 4, 2, 3);
    s_qlinearconv_ref(GX_I8, NODE((gx_attr){.name = (char *)"auto_pad", .type = GX_ATTR_STRING,
                                            .s = (char *)"SAME_UPPER"}),
                      4, 1, 3);
    /* depthwise (quantized MobileNets), with a channel multiplier of 2 and
     * of 1 (planes at a time), strides 2, 1 and (1, 3), padding,
     * dilation, both dtypes */
    for (int i8 = 0; i8 < 2; i8++) {
        const gx_dtype dt = i8 ? GX_I8 : GX_U8;
        s_qlinearconv_ref(dt,
                          NODE(A_INTS("pads", 1, 1, 1, 0), A_INTS("strides", 2, 2),
                               A_INT("group", 3)),
                          3, 3, 3);
        s_qlinearconv_ref(dt,
                          NODE(A_INTS("pads", 1, 1, 1, 0), A_INTS("strides", 2, 2),
                               A_INT("group", 6)),
                          6, 6, 3);
        s_qlinearconv_ref(dt, NODE(A_INTS("pads", 1, 1, 1, 1), A_INT("group", 6)), 6, 6, 3);
        s_qlinearconv_ref(dt,
                          NODE(A_INTS("pads", 0, 2, 1, 0), A_INTS("strides", 1, 3),
                               A_INTS("dilations", 2, 2), A_INT("group", 6)),
                          6, 6, 2);
        /* rows wide enough for 16 columns at a time, strides 1 and 2 */
        s_qlinearconv_ref_hw(dt, NODE(A_INTS("pads", 1, 1, 1, 1), A_INT("group", 6)), 6, 6, 3,
                             7, 41);
        s_qlinearconv_ref_hw(dt,
                             NODE(A_INTS("pads", 1, 1, 1, 0), A_INTS("strides", 2, 2),
                                  A_INT("group", 6)),
                             6, 6, 3, 7, 75);
    }
}

/* On each ISA the GEMM may use (the depthwise rows have an AVX2 kernel
 * of their own: ops/cpu/conv.c). */
START_TEST(test_qlinearconv)
{
    char isa[32];
    snprintf(isa, sizeof isa, "%s", gx_cpu_gemm_isa());
    for (int i = 0; gx_cpu_gemm_isa_name(i); i++) {
        ck_assert(gx_cpu_gemm_isa_set(gx_cpu_gemm_isa_name(i)));
        s_qlinearconv_cases();
        ot_free_all();
    }
    ck_assert(gx_cpu_gemm_isa_set(isa));
}
END_TEST

START_TEST(test_qlinearconv_errors)
{
    gx_view in[9] = {U8V(SHAPE(1, 2, 1, 1), 0, 0), F32V(SCALAR, 1), U8V(SCALAR, 0),
                     U8V(SHAPE(1, 1, 1, 1), 0),    F32V(SCALAR, 1), U8V(SCALAR, 0),
                     F32V(SCALAR, 1),              U8V(SCALAR, 0),  I32V(SHAPE(1), 0)};
    ot_expect_error(GX_OP_QLINEAR_CONV, NODE(), 9, in, GX_ESHAPE,
                    "QLinearConv: x is [1,2,1,1], w is [1,1,1,1] and group 1; expected [N, C, "
                    "...] and [M, C / group, ...] of one rank >= 3, M a multiple of group");
    in[0] = U8V(SHAPE(1, 1, 1, 1), 0);
    in[4] = F32V(SHAPE(2), 1, 1);
    ot_expect_error(GX_OP_QLINEAR_CONV, NODE(), 9, in, GX_ESHAPE,
                    "QLinearConv: w_scale is float32 [2]; expected one element or one per "
                    "output channel");
    in[4] = F32V(SCALAR, 1);
    in[8] = F32V(SHAPE(1), 0);
    ot_expect_error(GX_OP_QLINEAR_CONV, NODE(), 9, in, GX_EDTYPE,
                    "QLinearConv: B is float32 [1]; expected int32 [M]");
    in[8] = I32V(SHAPE(1), 0);
    in[5] = I8V(SCALAR, 0);
    ot_expect_error(GX_OP_QLINEAR_CONV, NODE(), 9, in, GX_EDTYPE,
                    "QLinearConv: w_zero_point is int8 but w is uint8");
    in[5] = U8V(SCALAR, 0);
    ot_expect_error(GX_OP_QLINEAR_CONV, NODE(A_INTS("strides", 0, 1)), 9, in, GX_EATTR, NULL);
    s_expect(GX_OP_QLINEAR_CONV, NODE(), 9, in, U8V(SHAPE(1, 1, 1, 1), 0));
}
END_TEST

/* ---- Unique ---- */

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)

START_TEST(test_unique)
{
    /* test_unique_not_sorted_without_axis, then sorted */
    gx_view x = F32V(SHAPE(6), 2, 1, 1, 3, 4, 3);
    gx_view unsorted[4] = {F32V(SHAPE(4), 2, 1, 3, 4), I64V(SHAPE(4), 0, 1, 3, 4),
                           I64V(SHAPE(6), 0, 1, 1, 2, 3, 2), I64V(SHAPE(4), 1, 2, 2, 1)};
    s_expect_n(GX_OP_UNIQUE, NODE(A_INT("sorted", 0)), 1, &x, 4, unsorted);
    gx_view sorted[4] = {F32V(SHAPE(4), 1, 2, 3, 4), I64V(SHAPE(4), 1, 0, 3, 4),
                         I64V(SHAPE(6), 1, 0, 0, 2, 3, 2), I64V(SHAPE(4), 2, 1, 2, 1)};
    s_expect_n(GX_OP_UNIQUE, NODE(), 1, &x, 4, sorted);
    s_expect(GX_OP_UNIQUE, NODE(), 1, &x, sorted[0]);
    /* test_unique_sorted_with_axis_3d (axis 1 and -2); int64 along axis 0 */
    gx_view x3 = F32V(SHAPE(2, 4, 2), 1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1);
    gx_view w3[4] = {F32V(SHAPE(2, 3, 2), 0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1),
                     I64V(SHAPE(3), 1, 0, 2), I64V(SHAPE(4), 1, 0, 2, 0),
                     I64V(SHAPE(3), 2, 1, 1)};
    s_expect_n(GX_OP_UNIQUE, NODE(A_INT("axis", 1)), 1, &x3, 4, w3);
    s_expect_n(GX_OP_UNIQUE, NODE(A_INT("axis", -2)), 1, &x3, 4, w3);
    gx_view xi = I64V(SHAPE(3, 2), 5, 1, 5, 0, 5, 1);
    gx_view wi[4] = {I64V(SHAPE(2, 2), 5, 1, 5, 0), I64V(SHAPE(2), 0, 1),
                     I64V(SHAPE(3), 0, 1, 0), I64V(SHAPE(2), 2, 1)};
    s_expect_n(GX_OP_UNIQUE, NODE(A_INT("axis", 0), A_INT("sorted", 0)), 1, &xi, 4, wi);
    /* NaN sorts last and equals NaN */
    gx_view xn = F32V(SHAPE(4), __builtin_nanf(""), 1, __builtin_nanf(""), -1);
    gx_view wn[2] = {F32V(SHAPE(3), -1, 1, __builtin_nanf("")), I64V(SHAPE(3), 3, 1, 0)};
    s_expect_n(GX_OP_UNIQUE, NODE(), 1, &xn, 2, wn);
}
END_TEST

START_TEST(test_unique_errors)
{
    gx_view x = F32V(SHAPE(2, 2), 1, 2, 3, 4);
    ot_expect_error(GX_OP_UNIQUE, NODE(A_INT("axis", 2)), 1, &x, GX_EATTR,
                    "Unique: axis 2 is out of range for rank 2");
    gx_view b = ot_view(GX_BOOL, ot_copy((uint8_t[]){1}, 1), SHAPE(1));
    ot_expect_error(GX_OP_UNIQUE, NODE(), 1, &b, GX_EDTYPE, NULL);
    /* the output shape waits for x's value */
    gx_view out;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_UNIQUE, NODE(), av, err, ERRLEN), GX_OK);
    x.data = NULL;
    gx_infer ic = {.attr = av, .n_in = 1, .in = &x, .n_out = 1, .out = &out, .err = err,
                   .errlen = ERRLEN};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_UNIQUE)->infer(&ic), GX_INFER_DYNAMIC);
}
END_TEST

/* ---- NonMaxSuppression ---- */

/* test_nonmaxsuppression_suppress_by_IOU's boxes (corner form), six in
 * one batch, and its scores for one class */
#define S_NMS_BOXES                                                           \
    F32V(SHAPE(1, 6, 4), 0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, \
         1, 11.1f, 0, 100, 1, 101)
#define S_NMS_SCORES F32V(SHAPE(1, 1, 6), 0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f)

START_TEST(test_nms)
{
    gx_view in[5] = {S_NMS_BOXES, S_NMS_SCORES, I64V(SHAPE(1), 3), F32V(SHAPE(1), 0.5f),
                     F32V(SHAPE(1), 0)};
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, I64V(SHAPE(3, 3), 0, 0, 3, 0, 0, 0, 0, 0, 5));
    /* limit 2; score threshold 0.4 drops box 5 */
    in[2] = I64V(SHAPE(1), 2);
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, I64V(SHAPE(2, 3), 0, 0, 3, 0, 0, 0));
    in[2] = I64V(SCALAR, 10);
    in[4] = F32V(SCALAR, 0.4f);
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, I64V(SHAPE(2, 3), 0, 0, 3, 0, 0, 0));
    /* no score threshold, iou 0 by default: only disjoint boxes survive */
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 3, in, I64V(SHAPE(3, 3), 0, 0, 3, 0, 0, 0, 0, 0, 5));
    /* no limit: nothing is selected */
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 2, in, I64V(SHAPE(0, 3), 0));
    /* center form (test_nonmaxsuppression_center_point_box_format), and
     * flipped corners give the same selection */
    gx_view c[5] = {F32V(SHAPE(1, 6, 4), 0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 0.4f, 1, 1,
                         0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1),
                    S_NMS_SCORES, I64V(SHAPE(1), 3), F32V(SHAPE(1), 0.5f), F32V(SHAPE(1), 0)};
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(A_INT("center_point_box", 1)), 5, c,
             I64V(SHAPE(3, 3), 0, 0, 3, 0, 0, 0, 0, 0, 5));
    c[0] = F32V(SHAPE(1, 6, 4), 1, 1, 0, 0, 0, 0.1f, 1, 1.1f, 0, 0.9f, 1, -0.1f, 0, 10, 1, 11,
                1, 10.1f, 0, 11.1f, 1, 101, 0, 100);
    s_expect(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, c, I64V(SHAPE(3, 3), 0, 0, 3, 0, 0, 0, 0, 0, 5));
}
END_TEST

START_TEST(test_nms_errors)
{
    gx_view in[5] = {S_NMS_BOXES, F32V(SHAPE(1, 1, 5), 0, 0, 0, 0, 0), I64V(SHAPE(1), 3),
                     F32V(SHAPE(2), 0.5f, 0.5f), F32V(SHAPE(1), 0)};
    ot_expect_error(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, GX_ESHAPE,
                    "NonMaxSuppression: boxes are [1,6,4] and scores [1,1,5]; expected [B,N,4] "
                    "and [B,C,N]");
    in[1] = S_NMS_SCORES;
    ot_expect_error(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, GX_ESHAPE,
                    "NonMaxSuppression: iou_threshold is [2]; expected one element");
    in[3] = F32V(SHAPE(1), 0.5f);
    in[2] = I32V(SHAPE(1), 3);
    ot_expect_error(GX_OP_NON_MAX_SUPPRESSION, NODE(), 5, in, GX_EDTYPE, NULL);
    in[2] = I64V(SHAPE(1), 3);
    ot_expect_error(GX_OP_NON_MAX_SUPPRESSION, NODE(A_INT("center_point_box", 2)), 5, in,
                    GX_EATTR, "NonMaxSuppression: center_point_box 2 (expected 0 or 1)");
    /* an unknown value leaves the count to run time */
    gx_view out;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_NON_MAX_SUPPRESSION, NODE(), av, err, ERRLEN),
                     GX_OK);
    in[2].data = NULL;
    gx_infer ic = {.attr = av, .n_in = 5, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = ERRLEN};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_NON_MAX_SUPPRESSION)->infer(&ic), GX_INFER_DYNAMIC);
}
END_TEST

/* ---- requantization in float (ops/cpu/requant.h) ---- */

/* 16 sums e requantized in float by one of requant.h's forms into got. */
typedef void (*s_requantf_fn)(const int32_t *e, float scale, float lo, float hi, int32_t *got);

#ifdef GX_REQUANT_AVX512
__attribute__((target("avx512f"))) static void s_requant16f_run(const int32_t *e, float scale,
                                                               float lo, float hi, int32_t *got)
{
    _mm512_storeu_si512(got, gx_requant16f(_mm512_cvtepi32_ps(_mm512_loadu_si512(e)),
                                           _mm512_set1_ps(scale), _mm512_set1_ps(lo),
                                           _mm512_set1_ps(hi)));
}
#endif

#ifdef GX_REQUANT_AVX2
/* gx_requant8f, twice */
__attribute__((target("avx2,fma"))) static void s_requant8f_run(const int32_t *e, float scale,
                                                               float lo, float hi, int32_t *got)
{
    for (int h = 0; h < 16; h += 8)
        _mm256_storeu_si256(
            (__m256i *)(got + h),
            gx_requant8f(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(e + h))),
                         _mm256_set1_ps(scale), _mm256_set1_ps(lo), _mm256_set1_ps(hi)));
}

/* fn on the 16 sums from e0 (step apart) against the double product's
 * rint; counts in *ties the lanes whose float product was a half-integer
 * while the exact one was not (the fix-up's cases). */
static void s_requantf_check(s_requantf_fn fn, int32_t e0, int32_t step, float scale, float lo,
                             float hi, long *ties)
{
    int32_t e[16], got[16];
    for (int i = 0; i < 16; i++)
        e[i] = e0 + i * step;
    fn(e, scale, lo, hi, got);
    for (int i = 0; i < 16; i++) {
        const double x = (double)e[i] * (double)scale, r = rint(x);
        const double want = !(r >= lo) ? lo : r > hi ? hi : r;
        const float p = (float)e[i] * scale;
        *ties += fabsf(p - rintf(p)) == 0.5f && (double)p != x;
        ck_assert_msg(got[i] == (int32_t)want, "e %d scale %a: %d, want %g", e[i],
                      (double)scale, got[i], want);
    }
}

/* Every sum below 2^24 of a sweep, against scales near the halves and
 * thirds that put float products on half-integers, tiny and huge ones,
 * 0, infinity and NaN: the double product's bytes, and some fix-ups run. */
static void s_requantf_sweep(s_requantf_fn fn)
{
    const float base[] = {0.5f, 0.25f, 1.5f, 1.0f / 3, 0.1f, 0.0123f, 3e-6f, 6.0f / 255 / 7.0f};
    long ties = 0;
    for (size_t b = 0; b < sizeof base / sizeof *base; b++)
        for (int u = -2; u <= 2; u++) {
            float s = base[b];
            for (int i = 0; i < (u < 0 ? -u : u); i++)
                s = nextafterf(s, u < 0 ? 0.0f : 1.0f);
            /* every sum up to 2^13, then sums to 2^24 strided */
            for (int32_t e = -8192; e < 8192; e += 16)
                s_requantf_check(fn, e, 1, s, -128.0f - 7, 127.0f - 7, &ties);
            for (int32_t e = -(1 << 24) + 1; e + 15 * 4099 < (1 << 24); e += 16 * 4099 * 5)
                s_requantf_check(fn, e, 4099, s, -0x1p22f, 0x1p22f, &ties);
            for (int32_t e = -(1 << 20); e < (1 << 20); e += 16 * 37 * 5)
                s_requantf_check(fn, e, 37, s, -0x1p22f, 0x1p22f, &ties);
        }
    ck_assert_msg(ties > 0, "no float product fell on a half-integer");
    long none = 0;
    const float odd[] = {0.0f, 1e-30f, 1e30f, INFINITY, -INFINITY, NAN, -0.5f};
    for (size_t o = 0; o < sizeof odd / sizeof *odd; o++)
        for (int32_t e = -4096; e < 4096; e += 16 * 7)
            s_requantf_check(fn, e, 7, odd[o], -128.0f, 127.0f, &none);
}
#endif

/* gx_requant16f (AVX-512) through s_requantf_sweep. */
START_TEST(test_requant16f)
{
#ifdef GX_REQUANT_AVX512
    if (!gx_requant_avx512()) {
        fprintf(stderr, "test_requant16f: skipped, no AVX-512 on this CPU\n");
        return;
    }
    s_requantf_sweep(s_requant16f_run);
#else
    fprintf(stderr, "test_requant16f: skipped, no AVX-512 build\n");
#endif
}
END_TEST

/* gx_requant8f (AVX2 + FMA) through s_requantf_sweep. */
START_TEST(test_requant8f)
{
#ifdef GX_REQUANT_AVX2
    if (!gx_requant_avx2()) {
        fprintf(stderr, "test_requant8f: skipped, no AVX2 and FMA on this CPU\n");
        return;
    }
    s_requantf_sweep(s_requant8f_run);
#else
    fprintf(stderr, "test_requant8f: skipped, no x86-64 build\n");
#endif
}
END_TEST

/* ---- the packed integer kernels (ops/qgemm.h) ---- */

static unsigned s_seed = 7;

/* A tensor of dtype t (int8, uint8, float32 in (0, 0.05], int32 in
 * +-2000) with random values. */
static gx_view s_rand_of(gx_dtype t, int ndim, const int64_t *shape)
{
    gx_view v = ot_view(t, NULL, ndim, shape);
    v.data = ot_alloc((size_t)(v.numel > 0 ? v.numel : 1) * gx_dtype_size(t));
    for (int64_t i = 0; i < v.numel; i++) {
        s_seed = s_seed * 1103515245u + 12345u;
        const unsigned r = s_seed >> 8;
        if (t == GX_F32)
            ((float *)v.data)[i] = (float)(r % 1000 + 1) / 20000.0f;
        else if (t == GX_I32)
            ((int32_t *)v.data)[i] = (int32_t)(r % 4001) - 2000;
        else
            ((uint8_t *)v.data)[i] = (uint8_t)r;
    }
    return v;
}

/* op on in through its reference kernel and through the packed one (B,
 * input gx_cpu_qgemm_b_input, packed; nth 1 and 3 shares): the same bytes. */
static void s_packed_same(gx_op op, const gx_node *node, int n_in, gx_view *in, const char *what)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view ref;
    char err[ERRLEN];
    ck_assert_msg(ot_run(op, node, n_in, in, 1, av, &ref, err) == GX_OK, "%s: %s", what, err);
    char why[128];
    ck_assert_msg(gx_cpu_qgemm_packable(op, av, n_in, in, &ref, true, why, sizeof why), "%s: %s",
                  what, why);
    const int ib = gx_cpu_qgemm_b_input(op);
    void *packed = ot_alloc(gx_cpu_qgemm_packed_bytes(op, &in[ib]));
    gx_cpu_qgemm_pack(op, &in[ib], packed);
    gx_view pin[9];
    memcpy(pin, in, sizeof *in * (size_t)n_in);
    pin[ib].data = packed;
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view y = ref;
        y.data = ot_alloc((size_t)ref.numel * gx_dtype_size(ref.dtype));
        memset(y.data, 0xA5, (size_t)ref.numel * gx_dtype_size(ref.dtype));
        for (int ith = 0; ith < nth; ith++) {
            const gx_kargs k = {.attr = av, .n_in = n_in, .in = pin, .n_out = 1, .out = &y,
                                .ith = ith, .nth = nth};
            gx_cpu_qgemm_kernel(op)(&k);
        }
        s_assert_same(op, &y, &ref, what);
    }
}

static const gx_dtype s_bytes[2] = {GX_U8, GX_I8};

/* A byte of test_qgemm_dots' A (isb: of B) for fill 0 to 4: 255 by
 * -128, 0 by random, 255 by 127, random by -128, random by random. */
static uint8_t s_dots_byte(int fill, bool isb)
{
    static const int as[5] = {255, 0, 255, -1, -1}, bs[5] = {0x80, -1, 127, 0x80, -1};
    const int v = (isb ? bs : as)[fill];
    s_seed = s_seed * 1103515245u + 12345u;
    return v < 0 ? (uint8_t)(s_seed >> 8) : (uint8_t)v;
}

/* The dot products (gx_cpu_qgemm_dots) of each ISA against sums taken
 * here: rows 1 to 8, K not a multiple of 4 (zeros past it, as packed)
 * nor of 16, more quads than the AVX2 kernel widens at a time, windows
 * of the panels, rows further apart than K, and the extreme bytes
 * (s_dots_byte). */
START_TEST(test_qgemm_dots)
{
    enum { P = 16, NP = 5 }; /* columns of a panel, panels */
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    static const int64_t ks[] = {1, 3, 4, 7, 17, 30, 64, 1023, 1025, 2050};
    const char *was = gx_cpu_gemm_isa();
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        const gx_qgemm_dots_fn dots = gx_cpu_qgemm_dots();
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (int fill = 0; fill < 5; fill++) {
                const int64_t kk = ks[ki], k4 = (kk + 3) / 4, lda = k4 * 4 + 12;
                uint8_t *a = ot_alloc((size_t)(8 * lda));
                int8_t *pb = ot_alloc((size_t)(NP * k4 * 64));
                int16_t *pw = ot_alloc(sizeof *pw * (size_t)(NP * k4 * 64));
                int32_t *want = ot_alloc(sizeof *want * 8 * NP * P);
                int32_t *c = ot_alloc(sizeof *c * 8 * (NP * P + 3));
                memset(a, 0xEE, (size_t)(8 * lda)); /* past K4 * 4: never read */
                memset(pb, 0, (size_t)(NP * k4 * 64));
                for (int r = 0; r < 8; r++)
                    for (int64_t i = 0; i < k4 * 4; i++)
                        a[r * lda + i] = i < kk ? s_dots_byte(fill, false) : 0;
                for (int64_t j = 0; j < NP * P; j++)
                    for (int64_t i = 0; i < kk; i++)
                        pb[j / P * k4 * 64 + i / 4 * 64 + j % P * 4 + i % 4] =
                            (int8_t)s_dots_byte(fill, true);
                for (int64_t o = 0; o < NP * k4 * 64; o += 64) /* the wide form (ops/qgemm.h) */
                    for (int j = 0; j < P; j++)
                        for (int t = 0; t < 4; t++)
                            pw[o + t / 2 * 32 + j * 2 + t % 2] = pb[o + j * 4 + t];
                for (int r = 0; r < 8; r++)
                    for (int64_t j = 0; j < NP * P; j++) {
                        int64_t sum = 0;
                        for (int64_t i = 0; i < kk; i++)
                            sum += a[r * lda + i] *
                                   pb[j / P * k4 * 64 + i / 4 * 64 + j % P * 4 + i % 4];
                        want[r * NP * P + j] = (int32_t)sum;
                    }
                for (int rw = 2; rw <= 17; rw++) /* rows 1 to 8, each from pw and from pb alone */
                    for (int64_t p0 = 0, rows = rw / 2, wide = rw % 2; p0 < NP; p0 += 2) {
                        const int64_t p1 = p0 + 1 + rows % 3 < NP ? p0 + 1 + rows % 3 : NP;
                        const int64_t ldc = (p1 - p0) * P + 3;
                        memset(c, 0x5A, sizeof *c * (size_t)(rows * ldc));
                        dots(a, lda, (int)rows, k4, pb, wide ? pw : NULL, p0, p1, c, ldc);
                        for (int r = 0; r < rows; r++)
                            for (int64_t j = p0 * P; j < p1 * P; j++)
                                ck_assert_msg(c[r * ldc + j - p0 * P] == want[r * NP * P + j],
                                              "%s (%s%s): K %lld, fill %d, rows %d, panels "
                                              "[%lld, %lld): row %d column %lld is %d, want %d",
                                              isas[is], gx_cpu_qgemm_impl(),
                                              wide ? ", wide" : "", (long long)kk, fill,
                                              (int)rows, (long long)p0, (long long)p1, r,
                                              (long long)j, c[r * ldc + j - p0 * P],
                                              want[r * NP * P + j]);
                    }
                ot_free_all();
            }
    }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

/* On each ISA the GEMM may use (AVX-512 with VNNI where the CPU has it,
 * AVX2, and the baseline loops), every dtype pairing, zero points absent,
 * scalar and per column, K not a multiple of 4 and N of 16. */
START_TEST(test_packed_matmul_integer)
{
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 17}, {8, 768, 40}, {5, 33, 16}, {9, 7, 33}};
    const char *was = gx_cpu_gemm_isa();
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
                    for (int zp = 0; zp < 3; zp++) {
                        const int64_t m = shapes[si][0], kk = shapes[si][1], n = shapes[si][2];
                        gx_view in[4];
                        in[0] = s_rand_of(s_bytes[ta], 3, (const int64_t[]){2, m, kk});
                        in[1] = s_rand_of(s_bytes[tb], 2, (const int64_t[]){kk, n});
                        in[2] = s_rand_of(s_bytes[ta], SCALAR);
                        in[3] = zp == 2 ? s_rand_of(s_bytes[tb], 1, (const int64_t[]){n})
                                        : s_rand_of(s_bytes[tb], SCALAR);
                        char what[96];
                        snprintf(what, sizeof what, "%s, %s x %s, %lldx%lldx%lld, zp %d",
                                 isas[is], gx_dtype_name(s_bytes[ta]), gx_dtype_name(s_bytes[tb]),
                                 (long long)m, (long long)kk, (long long)n, zp);
                        s_packed_same(GX_OP_MATMUL_INTEGER, &(gx_node){0}, zp ? 4 : 2, in, what);
                    }
        ot_free_all();
    }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

/* B's byte for b' = v (ops/cpu/qgemm.c: uint8 B flipped by 128). */
static uint8_t s_b_byte(gx_dtype t, int v)
{
    return (uint8_t)(t == GX_U8 ? (v + 128) : v);
}

/* MatMulInteger and QLinearMatMul whose B has pairs of k that
 * vpmaddubsw's int16 sums could saturate on (|b0| + |b1| > 128) in every
 * measure: none (weights of 7 bits), a few (a trained layer's, which the
 * narrow form takes out and adds back), the bounds (128 kept, 129 taken
 * out), and too many (a panel of the whole int8 range, which stays
 * whole); A's rows at 255 where saturation would show. */
START_TEST(test_packed_narrow)
{
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    static const int64_t shapes[][3] = {{9, 768, 56}, {3, 1030, 40}, {1, 7, 17}, {8, 33, 16}};
    static const int bounds[][2] = {{64, 64}, {-128, 0}, {127, 1}, {-128, 1}, {-128, -128},
                                    {127, 127}, {-64, -65}, {100, -28}};
    const char *was = gx_cpu_gemm_isa();
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
                    const int64_t m = shapes[si][0], kk = shapes[si][1], n = shapes[si][2];
                    gx_view in[8];
                    in[0] = s_rand_of(s_bytes[ta], 2, (const int64_t[]){m, kk});
                    in[1] = s_rand_of(GX_F32, SCALAR);
                    in[2] = s_rand_of(s_bytes[ta], SCALAR);
                    in[3] = s_rand_of(s_bytes[tb], 2, (const int64_t[]){kk, n});
                    in[4] = s_rand_of(GX_F32, SCALAR);
                    in[5] = s_rand_of(s_bytes[tb], SCALAR);
                    in[6] = s_rand_of(GX_F32, SCALAR);
                    in[7] = s_rand_of(s_bytes[1 - ta], SCALAR);
                    for (int64_t i = 0; i < kk; i++) /* row 0: a' = 255 */
                        ((uint8_t *)in[0].data)[i] = ta ? 0x7F : 0xFF;
                    uint8_t *b = in[3].data;
                    for (int64_t i = 0; i < kk * n; i++) {
                        const int64_t k = i / n, j = i % n;
                        if (j / 16 == 2) /* panel 2: the whole int8 range */
                            continue;
                        s_seed = s_seed * 1103515245u + 12345u;
                        const unsigned r = s_seed >> 8;
                        int v = (int)(r % 81) - 40; /* 7 bits and less */
                        if (j / 16 == 1 && r % 97 == 0) /* panel 1: a few large ones */
                            v = r % 2 ? 127 : -128;
                        if (j / 16 == 3 && (k / 2 + 5 * j) % 128 == 0) /* panel 3: the bounds */
                            v = bounds[(k / 256 + j) % 8][k % 2];
                        b[i] = s_b_byte(s_bytes[tb], v);
                    }
                    char what[96];
                    snprintf(what, sizeof what, "%s, %s x %s, %lldx%lldx%lld", isas[is],
                             gx_dtype_name(s_bytes[ta]), gx_dtype_name(s_bytes[tb]),
                             (long long)m, (long long)kk, (long long)n);
                    s_packed_same(GX_OP_MATMUL_INTEGER, &(gx_node){0}, 4,
                                  (gx_view[]){in[0], in[3], in[2], in[5]}, what);
                    s_packed_same(GX_OP_QLINEAR_MATMUL, &(gx_node){0}, 8, in, what);
                    ot_free_all();
                }
    }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

START_TEST(test_packed_qlinear)
{
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    const char *was = gx_cpu_gemm_isa();
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                char what[96];
                /* QLinearMatMul [7, 45] x [45, 21] into the other dtype */
                gx_view in[9];
                in[0] = s_rand_of(s_bytes[ta], 2, (const int64_t[]){7, 45});
                in[1] = s_rand_of(GX_F32, SCALAR);
                in[2] = s_rand_of(s_bytes[ta], SCALAR);
                in[3] = s_rand_of(s_bytes[tb], 2, (const int64_t[]){45, 21});
                in[4] = s_rand_of(GX_F32, SCALAR);
                in[5] = s_rand_of(s_bytes[tb], SCALAR);
                in[6] = s_rand_of(GX_F32, SCALAR);
                in[7] = s_rand_of(s_bytes[1 - ta], SCALAR);
                snprintf(what, sizeof what, "%s, QLinearMatMul %s x %s", isas[is],
                         gx_dtype_name(s_bytes[ta]), gx_dtype_name(s_bytes[tb]));
                s_packed_same(GX_OP_QLINEAR_MATMUL, &(gx_node){0}, 8, in, what);
                /* QLinearConv: 3x3 pad 1, and 3x3 stride 2 dilation 2, per-channel
                 * weights' scale and zero point, with and without a bias */
                for (int c = 0; c < 2; c++) {
                    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2}, dil[2] = {2, 2};
                    gx_attr at[3] = {
                        {.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = (int64_t *)pads,
                         .n = 4},
                        {.name = (char *)"strides", .type = GX_ATTR_INTS,
                         .ints = (int64_t *)strides, .n = 2},
                        {.name = (char *)"dilations", .type = GX_ATTR_INTS,
                         .ints = (int64_t *)dil, .n = 2}};
                    const gx_node node = {.n_attr = c ? 3 : 1, .attr = at};
                    in[0] = s_rand_of(s_bytes[ta], 4, (const int64_t[]){2, 5, 9, 11});
                    in[3] = s_rand_of(s_bytes[tb], 4, (const int64_t[]){19, 5, 3, 3});
                    in[4] = s_rand_of(GX_F32, 1, (const int64_t[]){19});
                    in[5] = c ? s_rand_of(s_bytes[tb], 1, (const int64_t[]){19})
                              : s_rand_of(s_bytes[tb], SCALAR);
                    in[8] = s_rand_of(GX_I32, 1, (const int64_t[]){19});
                    snprintf(what, sizeof what, "%s, QLinearConv %s x %s, case %d", isas[is],
                             gx_dtype_name(s_bytes[ta]), gx_dtype_name(s_bytes[tb]), c);
                    s_packed_same(GX_OP_QLINEAR_CONV, &node, c ? 9 : 8, in, what);
                }
            }
        ot_free_all();
    }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

/* The direct QLinearConv against the reference: bands of rows (a tall
 * image, several shares), asymmetric pads, dilation, 1x1 windows,
 * channels not a multiple of 4 and output channels not of 8, many input
 * channels (short bands), strides (phases of the input: 2 x 2, 2 x 1,
 * 1 x 3 with dilation, a 1x1 downsampling), and rows too wide for a band
 * of one row (tiles of columns, the last a part one). */
START_TEST(test_packed_qlinearconv_direct)
{
    static const struct {
        int64_t x[4], w[4], pads[4], dil[2], st[2];
    } cases[] = {
        {{1, 3, 61, 23}, {11, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}},
        {{2, 6, 13, 17}, {9, 6, 3, 5}, {0, 2, 1, 0}, {2, 1}, {1, 1}},
        {{1, 37, 12, 9}, {19, 37, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}},
        {{1, 800, 12, 10}, {8, 800, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}},
        {{3, 4, 5, 40}, {16, 4, 2, 2}, {0, 0, 0, 0}, {1, 3}, {1, 1}},
        {{1, 5, 23, 19}, {13, 5, 3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}},
        {{2, 8, 14, 15}, {8, 8, 3, 3}, {1, 0, 0, 2}, {1, 1}, {2, 1}},
        {{1, 7, 9, 31}, {10, 7, 3, 3}, {2, 1, 2, 1}, {2, 2}, {1, 3}},
        {{1, 64, 16, 16}, {32, 64, 1, 1}, {0, 0, 0, 0}, {1, 1}, {2, 2}},
        /* rows too wide for a band: tiles of columns (stride 1, 2, a dilation) */
        {{1, 16, 5, 700}, {8, 16, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}},
        {{1, 64, 6, 300}, {5, 64, 3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}},
        {{2, 40, 4, 400}, {9, 40, 3, 3}, {2, 2, 2, 2}, {2, 2}, {1, 1}},
    };
    const char *was = gx_cpu_gemm_isa();
    if (!gx_cpu_gemm_isa_set("avx512"))
        return; /* the baseline path is test_packed_qlinear's */
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int ta = 0; ta < 2; ta++) {
            gx_attr at[3] = {
                {.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = (int64_t *)cases[ci].pads,
                 .n = 4},
                {.name = (char *)"dilations", .type = GX_ATTR_INTS,
                 .ints = (int64_t *)cases[ci].dil, .n = 2},
                {.name = (char *)"strides", .type = GX_ATTR_INTS,
                 .ints = (int64_t *)cases[ci].st, .n = 2}};
            const gx_node node = {.n_attr = 3, .attr = at};
            const int64_t m = cases[ci].w[0];
            gx_view in[9];
            in[0] = s_rand_of(s_bytes[ta], 4, cases[ci].x);
            in[1] = s_rand_of(GX_F32, SCALAR);
            in[2] = s_rand_of(s_bytes[ta], SCALAR);
            in[3] = s_rand_of(s_bytes[1 - ta], 4, cases[ci].w);
            in[4] = s_rand_of(GX_F32, 1, (const int64_t[]){m});
            in[5] = s_rand_of(s_bytes[1 - ta], 1, (const int64_t[]){m});
            in[6] = s_rand_of(GX_F32, SCALAR);
            in[7] = s_rand_of(s_bytes[ta], SCALAR);
            in[8] = s_rand_of(GX_I32, 1, (const int64_t[]){m});
            char what[96];
            snprintf(what, sizeof what, "direct QLinearConv case %zu, x %s", ci,
                     gx_dtype_name(s_bytes[ta]));
            s_packed_same(GX_OP_QLINEAR_CONV, &node, 9, in, what);
            ot_free_all();
        }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

/* ConvInteger from W packed against its reference kernel, on each ISA:
 * every dtype pairing, zero points absent, scalar and per output channel
 * (W's), pads, dilations, strides, 1x1 windows, channels not a multiple
 * of 4 and output channels not of 16, rows too wide for the direct
 * path's band (tiles of columns), and a K above GX_QGEMM_MAX_K (in
 * chunks of channels; a QLinearConv too). */
START_TEST(test_packed_conv_integer)
{
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    static const struct {
        int64_t x[4], w[4], pads[4], dil[2], st[2];
    } cases[] = {
        {{1, 3, 17, 23}, {11, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}},
        {{2, 6, 13, 17}, {9, 6, 3, 5}, {0, 2, 1, 0}, {2, 1}, {1, 1}},
        {{1, 37, 12, 9}, {19, 37, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}},
        {{1, 7, 9, 31}, {33, 7, 3, 3}, {2, 1, 2, 1}, {2, 2}, {1, 3}},
        {{1, 5, 3, 1100}, {7, 5, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}}, /* tiles of columns */
        {{1, 1843, 4, 5}, {20, 1843, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}},
    };
    _Static_assert(1843 * 9 > 2 * GX_QGEMM_MAX_K, "three chunks, the last a part one");
    const char *was = gx_cpu_gemm_isa();
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
            for (int t = 0; t < 4; t++)
                for (int zp = 0; zp < 3; zp++) {
                    ot_free_all(); /* the last case's tensors */
                    gx_attr at[3] = {{.name = (char *)"pads", .type = GX_ATTR_INTS,
                                      .ints = (int64_t *)cases[ci].pads, .n = 4},
                                     {.name = (char *)"dilations", .type = GX_ATTR_INTS,
                                      .ints = (int64_t *)cases[ci].dil, .n = 2},
                                     {.name = (char *)"strides", .type = GX_ATTR_INTS,
                                      .ints = (int64_t *)cases[ci].st, .n = 2}};
                    const gx_node node = {.n_attr = 3, .attr = at};
                    const gx_dtype tx = s_bytes[t & 1], tw = s_bytes[t >> 1];
                    gx_view in[4];
                    in[0] = s_rand_of(tx, 4, cases[ci].x);
                    in[1] = s_rand_of(tw, 4, cases[ci].w);
                    in[2] = s_rand_of(tx, SCALAR);
                    in[3] = zp == 2 ? s_rand_of(tw, 1, (const int64_t[]){cases[ci].w[0]})
                                    : s_rand_of(tw, SCALAR);
                    char what[96];
                    snprintf(what, sizeof what, "%s, ConvInteger case %zu, %s x %s, zp %d",
                             isas[is], ci, gx_dtype_name(tx), gx_dtype_name(tw), zp);
                    s_packed_same(GX_OP_CONVINTEGER, &node, zp ? 4 : 2, in, what);
                }
        /* the last case as a QLinearConv: W per channel, a bias */
        const size_t last = sizeof cases / sizeof *cases - 1;
        const int64_t m = cases[last].w[0];
        gx_attr at = {.name = (char *)"pads", .type = GX_ATTR_INTS,
                      .ints = (int64_t *)cases[last].pads, .n = 4};
        gx_view in[9] = {s_rand_of(GX_U8, 4, cases[last].x), s_rand_of(GX_F32, SCALAR),
                         s_rand_of(GX_U8, SCALAR), s_rand_of(GX_I8, 4, cases[last].w),
                         s_rand_of(GX_F32, 1, (const int64_t[]){m}),
                         s_rand_of(GX_I8, 1, (const int64_t[]){m}), s_rand_of(GX_F32, SCALAR),
                         s_rand_of(GX_U8, SCALAR), s_rand_of(GX_I32, 1, (const int64_t[]){m})};
        s_packed_same(GX_OP_QLINEAR_CONV, &(gx_node){.n_attr = 1, .attr = &at}, 9, in,
                      isas[is]);
        ot_free_all();
    }
    gx_cpu_gemm_isa_set(was);
}
END_TEST

/* The NHWC kernels (ops/cpu/qconv_layout.c, gx_cpu_qconv_layout) against
 * the reference on x and y reordered to NHWC: 1x1 (strides, channels not
 * a multiple of 4 or 16, x's rows read in place, C past what AVX2's
 * tiles take) and depthwise (padding,
 * stride 2, dilation, odd channel counts, rows converted once into a ring
 * or too wide for it), u8 and i8 activations and weights, zero points not
 * 0, per-tensor and per-channel scales, requantized sums in and past int32,
 * 1 and 3 shares, on AVX-512 (the depthwise ring in int8 dot products
 * where the CPU has VNNI and W - w_zp fits int8: w8 sets W's zero point
 * to 0 for int8 W, 128 for uint8; else in float), AVX2 + FMA ("avx2",
 * on an AVX-512 CPU too: 8 channels a vector, the depthwise ring in
 * float) and the plain loops. */
START_TEST(test_qlinearconv_nhwc)
{
    static const struct {
        int64_t x[4], w[4], pads[4], dil[2], st[2], group;
    } cases[] = {
        {{1, 24, 7, 9}, {37, 24, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1},
        {{2, 5, 6, 11}, {19, 5, 1, 1}, {0, 0, 0, 0}, {1, 1}, {2, 3}, 1},
        /* more channels than AVX2's pixels widened in registers take */
        {{1, 2101, 3, 2}, {11, 2101, 1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1},
        {{1, 33, 9, 13}, {33, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 33},
        {{2, 16, 10, 19}, {16, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}, 16},
        {{1, 7, 12, 21}, {7, 1, 5, 3}, {2, 0, 1, 2}, {1, 2}, {1, 2}, 7},
        /* rows converted once: a 5-high window of dilated rows, stride 2 */
        {{2, 20, 11, 14}, {20, 1, 5, 3}, {2, 1, 2, 0}, {2, 1}, {2, 1}, 20},
        /* rows too wide for the ring (converted per window) */
        {{1, 17, 4, 300}, {17, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 17},
        /* stride 2 padded at the end only (TF's SAME), odd width */
        {{1, 24, 9, 15}, {24, 1, 3, 3}, {0, 0, 1, 1}, {1, 1}, {2, 2}, 24},
        /* whole tiles of 8 columns, padding left and right */
        {{1, 40, 6, 16}, {40, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 40},
    };
    static const char *const isas[] = {"avx512", "avx2", "baseline"};
    const char *was = gx_cpu_gemm_isa();
    int ran = 0;
    for (int is = 0; is < 3; is++) {
        if (!gx_cpu_gemm_isa_set(isas[is]))
            continue;
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
            for (int ta = 0; ta < 2; ta++)
                for (int vw = 0; vw < 8; vw++) {
                    const int v = vw % 4, w8 = vw / 4;
                    /* v 0: per tensor, 1: per channel; 2 and 3: per channel
                     * with biases that put the sums past 2^24 (requantized
                     * in double from int32 sums: 2, whose products stay
                     * below 2^30, and 3, one of whose does not) */
                    const int pc = v > 0, big = v > 1 ? v - 1 : 0;
                    ot_free_all(); /* the last case's tensors */
                    gx_attr at[4] = {
                        {.name = (char *)"pads", .type = GX_ATTR_INTS,
                         .ints = (int64_t *)cases[ci].pads, .n = 4},
                        {.name = (char *)"dilations", .type = GX_ATTR_INTS,
                         .ints = (int64_t *)cases[ci].dil, .n = 2},
                        {.name = (char *)"strides", .type = GX_ATTR_INTS,
                         .ints = (int64_t *)cases[ci].st, .n = 2},
                        {.name = (char *)"group", .type = GX_ATTR_INT, .i = cases[ci].group}};
                    const gx_node node = {.n_attr = 4, .attr = at};
                    const int64_t m = cases[ci].w[0];
                    gx_view in[9];
                    in[0] = s_rand_of(s_bytes[ta], 4, cases[ci].x);
                    in[1] = s_rand_of(GX_F32, SCALAR);
                    in[2] = s_rand_of(s_bytes[ta], SCALAR);
                    in[3] = s_rand_of(s_bytes[(ta + pc) % 2], 4, cases[ci].w);
                    in[4] = pc ? s_rand_of(GX_F32, 1, (const int64_t[]){m})
                               : s_rand_of(GX_F32, SCALAR);
                    in[5] = pc ? s_rand_of(s_bytes[(ta + pc) % 2], 1, (const int64_t[]){m})
                               : s_rand_of(s_bytes[(ta + pc) % 2], SCALAR);
                    if (ta == 0) /* W's zero point 0: int8 W then needs no x sums */
                        memset(in[5].data, 0, (size_t)in[5].numel);
                    if (w8) /* W - w_zp in int8's range */
                        memset(in[5].data, in[3].dtype == GX_U8 ? 128 : 0, (size_t)in[5].numel);
                    in[6] = s_rand_of(GX_F32, SCALAR);
                    if (ta && pc) /* a tiny y_scale: products past int32, saturation */
                        *(float *)in[6].data = 1e-7f;
                    in[7] = s_rand_of(s_bytes[1 - ta], SCALAR);
                    in[8] = s_rand_of(GX_I32, 1, (const int64_t[]){m});
                    /* big: sums about +-2^25 whose products (y_scale 200)
                     * land inside y's range, so that each channel's
                     * parameters show; big 2 puts channel 0's product past
                     * 2^30 (its W scale 1e4, its bias 2^29 more), which
                     * sends the whole node to the double form */
                    for (int64_t j = 0; j < m && big; j++) {
                        int32_t *b = in[8].data;
                        b[j] += (j % 2 ? -1 : 1) * (1 << 25) + (big == 2 && !j ? 1 << 29 : 0);
                    }
                    if (big) {
                        *(float *)in[6].data = 200.0f;
                        if (big == 2)
                            ((float *)in[4].data)[0] = 1e4f;
                    }
                    char what[128], err[ERRLEN], why[128];
                    snprintf(what, sizeof what,
                             "%s, NHWC QLinearConv case %zu, x %s, pc %d, big %d, w8 %d", isas[is],
                             ci, gx_dtype_name(s_bytes[ta]), pc, big, w8);
                    gx_attrval av[GX_MAX_ATTRS];
                    gx_view ref;
                    ck_assert_msg(ot_run(GX_OP_QLINEAR_CONV, &node, 9, in, 1, av, &ref, err) ==
                                      GX_OK,
                                  "%s: %s", what, err);
                    /* the pointwise kernel needs VNNI to be offered: take
                     * it as gx_cpu_qconv_layout gives it on this CPU */
                    const gx_infer ic = {.attr = av, .n_in = 9, .in = in, .n_out = 1, .out = &ref};
                    gx_kernel_fn fn = gx_cpu_qconv_layout(GX_LAYOUT_NHWC, &ic, why, sizeof why);
                    if (!fn)
                        continue;
                    ran++;
                    gx_view pin[9];
                    memcpy(pin, in, sizeof pin);
                    pin[0] = gx_layout_physical(GX_LAYOUT_NHWC, &in[0]);
                    pin[0].data = ot_alloc((size_t)in[0].numel);
                    gx_layout_reorder(&in[0], &pin[0], 0, 1);
                    pin[3].data = ot_alloc(gx_cpu_qgemm_packed_bytes(GX_OP_QLINEAR_CONV, &in[3]));
                    gx_cpu_qgemm_pack(GX_OP_QLINEAR_CONV, &in[3], pin[3].data);
                    for (int nth = 1; nth <= 3; nth += 2) {
                        gx_view y = gx_layout_physical(GX_LAYOUT_NHWC, &ref);
                        y.data = ot_alloc((size_t)ref.numel);
                        memset(y.data, 0xA5, (size_t)ref.numel);
                        for (int ith = 0; ith < nth; ith++) {
                            const gx_kargs k = {.attr = av, .n_in = 9, .in = pin, .n_out = 1,
                                                .out = &y, .ith = ith, .nth = nth};
                            fn(&k);
                        }
                        gx_view back = ref;
                        back.data = ot_alloc((size_t)ref.numel);
                        gx_layout_reorder(&y, &back, 0, 1);
                        s_assert_same(GX_OP_QLINEAR_CONV, &back, &ref, what);
                    }
                }
        ot_free_all();
    }
    gx_cpu_gemm_isa_set(was);
    if (!ran)
        fprintf(stderr, "test_qlinearconv_nhwc: skipped, no AVX2 or AVX-512 on this CPU\n");
}
END_TEST

Suite *ops_quant_suite(void)
{
    Suite *s = suite_create("ops_quant");
    TCase *tc = tcase_create("quant");
    tcase_set_timeout(tc, 60); /* the packed kernels' sweeps, on a busy machine */
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_quantize);
    tcase_add_test(tc, test_dequantize);
    tcase_add_test(tc, test_quantize_runs);
    tcase_add_test(tc, test_quantize_errors);
    tcase_add_test(tc, test_dynamic_quantize);
    tcase_add_test(tc, test_qlinear_matmul);
    tcase_add_test(tc, test_qlinear_matmul_errors);
    tcase_add_test(tc, test_qlinearconv);
    tcase_add_test(tc, test_qlinearconv_errors);
    tcase_add_test(tc, test_requant16f);
    tcase_add_test(tc, test_requant8f);
    tcase_add_test(tc, test_qgemm_dots);
    tcase_add_test(tc, test_packed_matmul_integer);
    tcase_add_test(tc, test_packed_qlinear);
    tcase_add_test(tc, test_packed_narrow);
    tcase_add_test(tc, test_packed_qlinearconv_direct);
    tcase_add_test(tc, test_packed_conv_integer);
    tcase_add_test(tc, test_qlinearconv_nhwc);
    tcase_add_test(tc, test_unique);
    tcase_add_test(tc, test_unique_errors);
    tcase_add_test(tc, test_nms);
    tcase_add_test(tc, test_nms_errors);
    suite_add_tcase(s, tc);
    return s;
}
