/*
 * Op tests of the signal family (GX_OPS_SIGNAL in ops/op.h): hand-computed
 * windows, transforms and mel matrix, the transforms against a naive
 * reference (every twiddle from its own cos/sin) on random data for each
 * attribute variant, and the errors infer gives. ot_expect runs each kernel
 * with nth = 1 and 3.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "tests/optest.h"
#include "tests/testutil.h"

#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)

/* The shape argument pair of a scalar. */
#define SCALAR 0, (const int64_t *)NULL

/* An omitted optional input. */
#define OMITTED ((gx_view){.ndim = -1})

static int s_infer(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(op, node, av, err, ERRLEN), GX_OK);
    memset(out, 0, sizeof *out);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = ERRLEN};
    return gx_op_schema_get(op)->infer(&ic);
}

static gx_view s_unknown(gx_view v)
{
    v.data = NULL;
    return v;
}

/* ---- windows ---- */

START_TEST(test_windows)
{
    ot_expect(GX_OP_HANN_WINDOW, NULL, 1, (gx_view[]){I32V(SCALAR, 4)},
              F32V(SHAPE(4), 0, 0.5f, 1, 0.5f), 1e-6f, 1e-6f);
    ot_expect(GX_OP_HANN_WINDOW, NODE(A_INT("periodic", 0)), 1, (gx_view[]){I64V(SCALAR, 5)},
              F32V(SHAPE(5), 0, 0.5f, 1, 0.5f, 0), 1e-6f, 1e-6f);
    ot_expect(GX_OP_HAMMING_WINDOW, NULL, 1, (gx_view[]){I64V(SHAPE(1), 4)},
              F32V(SHAPE(4), 4.0f / 46, 25.0f / 46, 1, 25.0f / 46), 1e-6f, 1e-6f);
    ot_expect(GX_OP_HAMMING_WINDOW, NODE(A_INT("periodic", 0)), 1,
              (gx_view[]){I32V(SCALAR, 3)}, F32V(SHAPE(3), 4.0f / 46, 1, 4.0f / 46), 1e-6f,
              1e-6f);
    ot_expect(GX_OP_BLACKMAN_WINDOW, NULL, 1, (gx_view[]){I32V(SCALAR, 4)},
              F32V(SHAPE(4), 0, 0.34f, 1, 0.34f), 1e-6f, 1e-6f);
    ot_expect(GX_OP_BLACKMAN_WINDOW, NODE(A_INT("periodic", 0)), 1,
              (gx_view[]){I32V(SCALAR, 5)}, F32V(SHAPE(5), 0, 0.34f, 1, 0.34f, 0), 1e-6f, 1e-6f);

    /* size 0: an empty window */
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    gx_view y;
    ck_assert_int_eq(ot_run(GX_OP_HANN_WINDOW, NULL, 1, (gx_view[]){I32V(SCALAR, 0)}, 1, av, &y,
                            err),
                     GX_OK);
    ot_check_shape(&y, 1, (int64_t[]){0});

    /* output_datatype 11: double */
    ck_assert_int_eq(ot_run(GX_OP_HANN_WINDOW, NODE(A_INT("output_datatype", 11)), 1,
                            (gx_view[]){I32V(SCALAR, 4)}, 3, av, &y, err),
                     GX_OK);
    ck_assert_int_eq(y.dtype, GX_F64);
    const double want[] = {0, 0.5, 1, 0.5};
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(((const double *)y.data)[i], want[i], 1e-15);
}
END_TEST

START_TEST(test_window_errors)
{
    ot_expect_error(GX_OP_HANN_WINDOW, NULL, 1, (gx_view[]){F32V(SCALAR, 4)}, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_HAMMING_WINDOW, NULL, 1, (gx_view[]){I32V(SHAPE(2), 4, 4)},
                    GX_ESHAPE, "HammingWindow: size (input 0) has shape [2], expected a scalar");
    ot_expect_error(GX_OP_BLACKMAN_WINDOW, NULL, 1, (gx_view[]){I64V(SCALAR, -1)}, GX_ESHAPE,
                    "BlackmanWindow: size -1 is negative");
    ot_expect_error(GX_OP_HANN_WINDOW, NODE(A_INT("periodic", 2)), 1,
                    (gx_view[]){I64V(SCALAR, 4)}, GX_EATTR,
                    "HannWindow: periodic=2, expected 0 or 1");
    ot_expect_error(GX_OP_HANN_WINDOW, NODE(A_INT("output_datatype", 7)), 1,
                    (gx_view[]){I64V(SCALAR, 4)}, GX_EDTYPE,
                    "HannWindow: output_datatype=7 is not supported (1 float or 11 double)");
    gx_view out;
    ck_assert_int_eq(s_infer(GX_OP_HANN_WINDOW, NULL, 1, (gx_view[]){s_unknown(I64V(SCALAR, 4))},
                             &out),
                     GX_INFER_DYNAMIC);
    ck_assert_int_eq(out.dtype, GX_F32);
}
END_TEST

/* ---- DFT, STFT: naive reference ---- */

/* y[b] (b < n_out, pairs ys floats apart) = scale * sum over j < n_use of
 * w[j] x[j] e^(sign 2 pi i j b / len), each twiddle from its own cos/sin. */
static void s_ref_line(const float *x, int64_t xs, int64_t channels, int64_t n_use,
                       const float *w, int64_t len, int64_t n_out, bool inverse, float *y,
                       int64_t ys)
{
    for (int64_t b = 0; b < n_out; b++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < n_use; j++) {
            const double t = (inverse ? 2 : -2) * M_PI * (double)((j * b) % len) / (double)len;
            const double g = w ? w[j] : 1;
            const double xr = g * x[j * xs], xi = channels == 2 ? g * x[j * xs + 1] : 0;
            re += xr * cos(t) - xi * sin(t);
            im += xr * sin(t) + xi * cos(t);
        }
        const double scale = inverse ? 1.0 / (double)len : 1;
        y[b * ys] = (float)(re * scale);
        y[b * ys + 1] = (float)(im * scale);
    }
}

/* DFT of x (shape [outer, n, inner, channels]) along axis 1 against the
 * reference; len 0: no dft_length input. */
static void s_check_dft(int64_t outer, int64_t n, int64_t inner, int64_t channels, int64_t len,
                        bool inverse, bool onesided)
{
    gx_view x = RANDV(outer, n, inner, channels);
    const int64_t l = len ? len : n, n_out = onesided ? l / 2 + 1 : l;
    float *want = ot_alloc((size_t)(outer * n_out * inner * 2) * sizeof(float));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            s_ref_line((const float *)x.data + (o * n * inner + i) * channels, inner * channels,
                       channels, n < l ? n : l, NULL, l, n_out, inverse,
                       want + (o * n_out * inner + i) * 2, inner * 2);
    const gx_node *node = NODE(A_INT("axis", 1), A_INT("inverse", inverse),
                               A_INT("onesided", onesided));
    gx_view in[2] = {x, I64V(SCALAR, len)};
    ot_expect(GX_OP_DFT, node, len ? 2 : 1, in,
              ot_view(GX_F32, want, SHAPE(outer, n_out, inner, 2)), 1e-4f, 1e-4f);
}

START_TEST(test_dft_hand)
{
    /* [1, 2, 3, 4] -> [10, -2 + 2i, -2, -2 - 2i] */
    gx_view x = F32V(SHAPE(1, 4, 1), 1, 2, 3, 4);
    ot_expect(GX_OP_DFT, NULL, 1, &x, F32V(SHAPE(1, 4, 2), 10, 0, -2, 2, -2, 0, -2, -2), 1e-6f,
              1e-5f);
    ot_expect(GX_OP_DFT, NODE(A_INT("onesided", 1)), 1, &x,
              F32V(SHAPE(1, 3, 2), 10, 0, -2, 2, -2, 0), 1e-6f, 1e-5f);
    /* and back */
    gx_view y = F32V(SHAPE(1, 4, 2), 10, 0, -2, 2, -2, 0, -2, -2);
    ot_expect(GX_OP_DFT, NODE(A_INT("inverse", 1)), 1, &y,
              F32V(SHAPE(1, 4, 2), 1, 0, 2, 0, 3, 0, 4, 0), 1e-6f, 1e-5f);
    /* axis -2 of a rank-3 input is axis 1; dft_length as int32 */
    ot_expect(GX_OP_DFT, NODE(A_INT("axis", -2)), 2, (gx_view[]){x, I32V(SCALAR, 2)},
              F32V(SHAPE(1, 2, 2), 3, 0, -1, 0), 1e-6f, 1e-5f);
}
END_TEST

START_TEST(test_dft_ref)
{
    for (int channels = 1; channels <= 2; channels++) {
        s_check_dft(2, 7, 3, channels, 0, false, false);
        s_check_dft(2, 7, 3, channels, 0, true, false);
        s_check_dft(1, 8, 1, channels, 0, false, true);
        s_check_dft(3, 5, 2, channels, 9, false, false); /* zero padding */
        s_check_dft(3, 6, 2, channels, 4, true, false);  /* cut */
        s_check_dft(2, 9, 1, channels, 9, false, true);
    }
    /* axis 0 and a long line */
    gx_view x = RANDV(64, 2);
    float *want = ot_alloc(64 * 2 * sizeof(float));
    s_ref_line(x.data, 2, 2, 64, NULL, 64, 64, false, want, 2);
    ot_expect(GX_OP_DFT, NODE(A_INT("axis", 0)), 1, &x, ot_view(GX_F32, want, SHAPE(64, 2)),
              1e-4f, 1e-4f);
}
END_TEST

START_TEST(test_dft_errors)
{
    gx_view x = RANDV(2, 4, 1);
    ot_expect_error(GX_OP_DFT, NULL, 1, (gx_view[]){RANDV(2, 4, 3)}, GX_ESHAPE,
                    "DFT: input shape [2,4,3], expected [..., 1 or 2]");
    ot_expect_error(GX_OP_DFT, NULL, 1, (gx_view[]){ot_rand(GX_F64, SHAPE(2, 4, 1))}, GX_EDTYPE,
                    NULL);
    ot_expect_error(GX_OP_DFT, NODE(A_INT("axis", 2)), 1, &x, GX_EATTR,
                    "DFT: axis 2 is out of range for rank 3");
    ot_expect_error(GX_OP_DFT, NODE(A_INT("axis", -4)), 1, &x, GX_EATTR,
                    "DFT: axis -4 is out of range for rank 3");
    ot_expect_error(GX_OP_DFT, NODE(A_INT("inverse", 2)), 1, &x, GX_EATTR,
                    "DFT: inverse=2 and onesided=0, expected 0 or 1");
    ot_expect_error(GX_OP_DFT, NODE(A_INT("inverse", 1), A_INT("onesided", 1)), 1, &x,
                    GX_EUNSUPPORTED, "DFT: onesided inverse is not supported");
    ot_expect_error(GX_OP_DFT, NULL, 2, (gx_view[]){x, I64V(SCALAR, 0)}, GX_ESHAPE,
                    "DFT: dft_length 0, expected >= 1");
    ot_expect_error(GX_OP_DFT, NULL, 2, (gx_view[]){x, F32V(SCALAR, 4)}, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_DFT, NULL, 1, (gx_view[]){RANDV(2, 0, 1)}, GX_ESHAPE,
                    "DFT: signal length 0, expected >= 1");
    gx_view out;
    ck_assert_int_eq(s_infer(GX_OP_DFT, NULL, 2, (gx_view[]){x, s_unknown(I64V(SCALAR, 4))}, &out),
                     GX_INFER_DYNAMIC);
    /* an omitted dft_length is no value to wait for */
    ck_assert_int_eq(s_infer(GX_OP_DFT, NULL, 2, (gx_view[]){x, OMITTED}, &out), GX_OK);
    ot_check_shape(&out, 3, (int64_t[]){2, 4, 2});
}
END_TEST

/* STFT of x [batch, samples, channels] against the reference; len 0: no
 * frame_length input (the window's length). */
static void s_check_stft(int64_t batch, int64_t samples, int64_t channels, int64_t step,
                         int64_t win_len, int64_t len, bool onesided)
{
    gx_view x = RANDV(batch, samples, channels);
    gx_view w = win_len ? RANDV(win_len) : OMITTED;
    const int64_t l = len ? len : win_len, frames = (samples - l) / step + 1,
                  bins = onesided ? l / 2 + 1 : l;
    float *want = ot_alloc((size_t)(batch * frames * bins * 2) * sizeof(float));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++)
            s_ref_line((const float *)x.data + (b * samples + f * step) * channels, channels,
                       channels, l, win_len ? w.data : NULL, l, bins, false,
                       want + (b * frames + f) * bins * 2, 2);
    gx_view in[4] = {x, I64V(SCALAR, step), w, len ? I64V(SCALAR, len) : OMITTED};
    ot_expect(GX_OP_STFT, NODE(A_INT("onesided", onesided)), len ? 4 : 3, in,
              ot_view(GX_F32, want, SHAPE(batch, frames, bins, 2)), 1e-4f, 1e-4f);
}

START_TEST(test_stft)
{
    s_check_stft(1, 32, 1, 4, 8, 0, true);
    s_check_stft(2, 30, 1, 3, 0, 8, true);
    s_check_stft(2, 30, 2, 5, 7, 7, false);
    s_check_stft(1, 16, 1, 16, 0, 16, false); /* one frame */
    /* a hand case: frames [1, 2] and [2, 3], no window, both bins */
    gx_view in[4] = {F32V(SHAPE(1, 3, 1), 1, 2, 3), I32V(SCALAR, 1), OMITTED, I32V(SCALAR, 2)};
    ot_expect(GX_OP_STFT, NULL, 4, in, F32V(SHAPE(1, 2, 2, 2), 3, 0, -1, 0, 5, 0, -1, 0), 1e-6f,
              1e-6f);
}
END_TEST

START_TEST(test_stft_errors)
{
    gx_view x = RANDV(1, 16, 1), step = I64V(SCALAR, 4), w = RANDV(8);
    ot_expect_error(GX_OP_STFT, NULL, 2, (gx_view[]){x, step}, GX_ESHAPE,
                    "STFT: needs a window or a frame_length");
    ot_expect_error(GX_OP_STFT, NULL, 3, (gx_view[]){RANDV(16, 1), step, w}, GX_ESHAPE,
                    "STFT: signal shape [16,1], expected [batch, length, 1 or 2]");
    ot_expect_error(GX_OP_STFT, NULL, 3, (gx_view[]){x, I64V(SCALAR, 0), w}, GX_ESHAPE,
                    "STFT: frame_step 0, expected >= 1");
    ot_expect_error(GX_OP_STFT, NULL, 4, (gx_view[]){x, step, w, I64V(SCALAR, 6)}, GX_ESHAPE,
                    "STFT: window has 8 elements, frame_length 6");
    ot_expect_error(GX_OP_STFT, NULL, 4, (gx_view[]){x, step, OMITTED, I64V(SCALAR, 17)},
                    GX_ESHAPE, "STFT: frame_length 17, expected 1 to the signal length 16");
    ot_expect_error(GX_OP_STFT, NULL, 3, (gx_view[]){x, step, RANDV(2, 4)}, GX_ESHAPE,
                    "STFT: window has rank 2, expected 1");
    ot_expect_error(GX_OP_STFT, NODE(A_INT("onesided", 3)), 3, (gx_view[]){x, step, w},
                    GX_EATTR, "STFT: onesided=3, expected 0 or 1");
    ot_expect_error(GX_OP_STFT, NULL, 3, (gx_view[]){x, F32V(SCALAR, 4), w}, GX_EDTYPE, NULL);
    gx_view out;
    ck_assert_int_eq(s_infer(GX_OP_STFT, NULL, 3, (gx_view[]){x, s_unknown(step), w}, &out),
                     GX_INFER_DYNAMIC);
}
END_TEST

/* ---- MelWeightMatrix ---- */

START_TEST(test_mel)
{
    /* the ONNX node test test_melweightmatrix */
    gx_view in[5] = {I32V(SCALAR, 8), I32V(SCALAR, 16), I32V(SCALAR, 8192), F32V(SCALAR, 0),
                     F32V(SCALAR, 4096)};
    float want[9 * 8] = {0};
    const int ones[][2] = {{0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}};
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++)
        want[ones[i][0] * 8 + ones[i][1]] = 1;
    ot_expect(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, in, ot_view(GX_F32, want, SHAPE(9, 8)), 0, 0);

    /* triangles with ramps: 2 bins over 0..4000 Hz of a 32-point DFT at
     * 8000 Hz; points at bins 0, 1, 4, 9 (ONNX spaces num_mel_bins + 2
     * points over num_mel_bins + 2 steps, so the last is below the top) */
    gx_view in2[5] = {I64V(SCALAR, 2), I64V(SCALAR, 32), I64V(SCALAR, 8000),
                      ot_view(GX_F64, ot_copy((double[]){0}, 8), SCALAR),
                      ot_view(GX_F64, ot_copy((double[]){4000}, 8), SCALAR)};
    float want2[17 * 2] = {0};
    for (int r = 0; r <= 1; r++)
        want2[r * 2] = (float)r;
    for (int r = 1; r < 4; r++)
        want2[r * 2] = (4 - r) / 3.0f;
    for (int r = 1; r <= 4; r++)
        want2[r * 2 + 1] = (r - 1) / 3.0f;
    for (int r = 4; r < 9; r++)
        want2[r * 2 + 1] = (9 - r) / 5.0f;
    ot_expect(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, in2, ot_view(GX_F32, want2, SHAPE(17, 2)), 1e-6f,
              1e-6f);
}
END_TEST

START_TEST(test_mel_errors)
{
    gx_view in[5] = {I32V(SCALAR, 8), I32V(SCALAR, 16), I32V(SCALAR, 8192), F32V(SCALAR, 0),
                     F32V(SCALAR, 4096)};
    ot_expect_error(GX_OP_MEL_WEIGHT_MATRIX, NODE(A_INT("output_datatype", 6)), 5, in, GX_EDTYPE,
                    "MelWeightMatrix: output_datatype=6 is not supported (1 float or 11 double)");
    gx_view bad[5];
    memcpy(bad, in, sizeof bad);
    bad[0] = I32V(SCALAR, 0);
    ot_expect_error(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, bad, GX_ESHAPE,
                    "MelWeightMatrix: num_mel_bins 0, dft_length 16, sample_rate 8192, "
                    "expected >= 1");
    memcpy(bad, in, sizeof bad);
    bad[4] = F32V(SCALAR, 5000);
    ot_expect_error(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, bad, GX_ESHAPE,
                    "MelWeightMatrix: edges 0 to 5000 Hz, expected 0 <= lower <= upper <= 4096 "
                    "(half the sample rate)");
    memcpy(bad, in, sizeof bad);
    bad[3] = I32V(SCALAR, 0);
    ot_expect_error(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, bad, GX_EDTYPE, NULL);
    memcpy(bad, in, sizeof bad);
    bad[1] = s_unknown(bad[1]);
    gx_view out;
    ck_assert_int_eq(s_infer(GX_OP_MEL_WEIGHT_MATRIX, NULL, 5, bad, &out), GX_INFER_DYNAMIC);
}
END_TEST

Suite *ops_signal_suite(void)
{
    Suite *s = suite_create("ops_signal");
    TCase *tc = tcase_create("signal");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_windows);
    tcase_add_test(tc, test_window_errors);
    tcase_add_test(tc, test_dft_hand);
    tcase_add_test(tc, test_dft_ref);
    tcase_add_test(tc, test_dft_errors);
    tcase_add_test(tc, test_stft);
    tcase_add_test(tc, test_stft_errors);
    tcase_add_test(tc, test_mel);
    tcase_add_test(tc, test_mel_errors);
    suite_add_tcase(s, tc);
    return s;
}
