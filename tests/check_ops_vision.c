/* Op tests of the vision family (GX_OPS_VISION in ops/op.h): hand-computed
 * values for each mode, padding and coordinate variant, the ONNX bicubic
 * case, batch and channel indexing, and the errors infer gives. ot_expect
 * runs every kernel as 1 and 3 shares. */
#include <check.h>

#include "ops/op.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)

/* ---- GridSample ---- */

START_TEST(test_gridsample_modes)
{
    /* a 2 x 2 image [[1, 2], [3, 4]]; grid points are (x, y) in [-1, 1] */
    gx_view x = F32V(SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    gx_view in[2] = {x, F32V(SHAPE(1, 1, 4, 2), -1, -1, 1, 1, 0, 0, 1, -1)};
    /* align_corners: the grid's corners are the pixel centres */
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_INT("align_corners", 1)), 2, in,
              F32V(SHAPE(1, 1, 1, 4), 1, 4, 2.5f, 2), 1e-6f, 1e-6f);
    /* otherwise the corners are the image's corners: (-1, -1) is pixel
     * (-0.5, -0.5), a quarter of pixel 0 and three zeros */
    ot_expect(GX_OP_GRIDSAMPLE, NODE(), 2, in, F32V(SHAPE(1, 1, 1, 4), 0.25f, 1, 2.5f, 0.5f),
              1e-6f, 1e-6f);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "linear")), 2, in,
              F32V(SHAPE(1, 1, 1, 4), 0.25f, 1, 2.5f, 0.5f), 1e-6f, 1e-6f);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("padding_mode", "border")), 2, in,
              F32V(SHAPE(1, 1, 1, 4), 1, 4, 2.5f, 2), 1e-6f, 1e-6f);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("padding_mode", "reflection")), 2, in,
              F32V(SHAPE(1, 1, 1, 4), 1, 4, 2.5f, 2), 1e-6f, 1e-6f);

    /* far outside: x = 2 is pixel 2.5 */
    gx_view far[2] = {x, F32V(SHAPE(1, 1, 2, 2), 2, 0, -7, 0)};
    ot_expect(GX_OP_GRIDSAMPLE, NODE(), 2, far, F32V(SHAPE(1, 1, 1, 2), 0, 0), 0, 0);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("padding_mode", "border")), 2, far,
              F32V(SHAPE(1, 1, 1, 2), 3, 2), 1e-6f, 1e-6f);
    /* 2.5 mirrors at 1.5 to 0.5; -7 is pixel -6.5, three ranges of 2 below
     * -0.5: mirrored an odd number of times, to 1.5 */
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("padding_mode", "reflection")), 2, far,
              F32V(SHAPE(1, 1, 1, 2), 2.5f, 3), 1e-6f, 1e-6f);

    /* nearest rounds halves to even: pixel (0.6, -0.1) -> (1, 0); pixel
     * (0.5, 0.5) -> (0, 0); (1.5, 1.5) -> (2, 2), a zero */
    gx_view nr[2] = {x, F32V(SHAPE(1, 1, 3, 2), 0.1f, -0.6f, 0, 0, 1, 1)};
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "nearest")), 2, nr,
              F32V(SHAPE(1, 1, 1, 3), 2, 1, 0), 0, 0);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "nearest"), A_STR("padding_mode", "border")),
              2, nr, F32V(SHAPE(1, 1, 1, 3), 2, 1, 4), 0, 0);
}
END_TEST

START_TEST(test_gridsample_bicubic)
{
    /* the ONNX node test test_gridsample_bicubic */
    gx_view in[2] = {F32V(SHAPE(1, 1, 3, 2), 0, 1, 2, 3, 4, 5),
                     F32V(SHAPE(1, 2, 4, 2), -1, -1, -0.5f, -0.5f, -0.2f, -0.2f, 0, 0, 0, 0,
                          -0.2f, -0.2f, 0.5f, 0.5f, 1, 1)};
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "bicubic")), 2, in,
              F32V(SHAPE(1, 1, 2, 4), -0.1406f, 0.3828f, 1.7556f, 2.9688f, 2.9688f, 1.7556f,
                   5.1445f, 1.3906f),
              0, 1e-4f);
    /* bicubic through exact pixel centres reproduces the pixels */
    gx_view px[2] = {F32V(SHAPE(1, 1, 3, 2), 0, 1, 2, 3, 4, 5),
                     F32V(SHAPE(1, 1, 3, 2), -1, -1, 1, 0, -1, 1)};
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "cubic"), A_INT("align_corners", 1)), 2, px,
              F32V(SHAPE(1, 1, 1, 3), 0, 3, 4), 0, 1e-5f);
}
END_TEST

START_TEST(test_gridsample_batch)
{
    /* N = 2, C = 2: each batch's grid samples its own image, every channel */
    gx_view in[2] = {F32V(SHAPE(2, 2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                          15),
                     F32V(SHAPE(2, 1, 2, 2), -1, -1, 1, 1, 1, -1, -1, 1)};
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_INT("align_corners", 1)), 2, in,
              F32V(SHAPE(2, 2, 1, 2), 0, 3, 4, 7, 9, 10, 13, 14), 0, 0);
    ot_expect(GX_OP_GRIDSAMPLE, NODE(A_INT("align_corners", 1), A_STR("mode", "nearest")), 2, in,
              F32V(SHAPE(2, 2, 1, 2), 0, 3, 4, 7, 9, 10, 13, 14), 0, 0);
}
END_TEST

START_TEST(test_gridsample_errors)
{
    gx_view ok[2] = {RANDV(1, 2, 3, 3), RANDV(1, 2, 2, 2)};
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(A_STR("mode", "area")), 2, ok, GX_EATTR,
                    "GridSample: mode \"area\" is not bilinear, nearest or bicubic");
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(A_STR("padding_mode", "wrap")), 2, ok, GX_EATTR,
                    NULL);
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(A_INT("align_corners", 2)), 2, ok, GX_EATTR, NULL);
    gx_view r5[2] = {RANDV(1, 2, 3, 3, 3), RANDV(1, 2, 2, 2, 3)};
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(), 2, r5, GX_EUNSUPPORTED, NULL);
    gx_view bad_n[2] = {RANDV(2, 2, 3, 3), RANDV(1, 2, 2, 2)};
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(), 2, bad_n, GX_ESHAPE, NULL);
    gx_view bad_last[2] = {RANDV(1, 2, 3, 3), RANDV(1, 2, 2, 3)};
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(), 2, bad_last, GX_ESHAPE, NULL);
    gx_view f64[2] = {ot_rand(GX_F64, SHAPE(1, 2, 3, 3)), RANDV(1, 2, 2, 2)};
    ot_expect_error(GX_OP_GRIDSAMPLE, NODE(), 2, f64, GX_EDTYPE, NULL);
}
END_TEST

/* ---- RoiAlign ---- */

START_TEST(test_roialign_values)
{
    /* a 4 x 4 image 0..15; RoIs are (x1, y1, x2, y2) */
    gx_view x = F32V(SHAPE(1, 1, 4, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    gx_view in[3] = {x, F32V(SHAPE(1, 4), 0, 0, 3, 3), I64V(SHAPE(1), 0)};
    /* half_pixel shifts the RoI by -0.5: one sample at pixel (1, 1) */
    ot_expect(GX_OP_ROIALIGN, NODE(A_INT("sampling_ratio", 1)), 3, in,
              F32V(SHAPE(1, 1, 1, 1), 5), 0, 1e-6f);
    /* output_half_pixel: the sample at (1.5, 1.5) mixes 5, 6, 9 and 10 */
    ot_expect(GX_OP_ROIALIGN,
              NODE(A_INT("sampling_ratio", 1),
                   A_STR("coordinate_transformation_mode", "output_half_pixel")),
              3, in, F32V(SHAPE(1, 1, 1, 1), 7.5f), 0, 1e-6f);

    gx_view in2[3] = {x, F32V(SHAPE(1, 4), 0, 0, 2, 2), I64V(SHAPE(1), 0)};
    ot_expect(GX_OP_ROIALIGN,
              NODE(A_INT("sampling_ratio", 1), A_INT("output_height", 2), A_INT("output_width", 2),
                   A_STR("coordinate_transformation_mode", "output_half_pixel")),
              3, in2, F32V(SHAPE(1, 1, 2, 2), 2.5f, 3.5f, 6.5f, 7.5f), 0, 1e-6f);
    /* an adaptive grid: a 2 x 2 bin gets 2 x 2 samples */
    ot_expect(GX_OP_ROIALIGN, NODE(A_STR("coordinate_transformation_mode", "output_half_pixel")),
              3, in2, F32V(SHAPE(1, 1, 1, 1), 5), 0, 1e-6f);
    /* max: the largest weighted tap, 0.25 * 10 at the sample (1.5, 1.5) */
    ot_expect(GX_OP_ROIALIGN,
              NODE(A_STR("mode", "max"), A_INT("sampling_ratio", 2),
                   A_STR("coordinate_transformation_mode", "output_half_pixel")),
              3, in2, F32V(SHAPE(1, 1, 1, 1), 2.5f), 0, 1e-6f);
    /* spatial_scale maps RoI coordinates onto the feature map */
    gx_view in3[3] = {x, F32V(SHAPE(1, 4), 0, 0, 6, 6), I64V(SHAPE(1), 0)};
    ot_expect(GX_OP_ROIALIGN,
              NODE(A_INT("sampling_ratio", 1), A_FLOAT("spatial_scale", 0.5),
                   A_STR("coordinate_transformation_mode", "output_half_pixel")),
              3, in3, F32V(SHAPE(1, 1, 1, 1), 7.5f), 0, 1e-6f);
    /* samples beyond the image read zeros */
    gx_view out[3] = {x, F32V(SHAPE(1, 4), 10, 10, 12, 12), I64V(SHAPE(1), 0)};
    ot_expect(GX_OP_ROIALIGN, NODE(), 3, out, F32V(SHAPE(1, 1, 1, 1), 0), 0, 0);
}
END_TEST

START_TEST(test_roialign_batch)
{
    /* N = 2, C = 2 (plane k holds 16 k + 0..15); three RoIs on both images */
    float img[64];
    for (int i = 0; i < 64; i++)
        img[i] = (float)i;
    gx_view in[3] = {ot_view(GX_F32, ot_copy(img, sizeof img), SHAPE(2, 2, 4, 4)),
                     F32V(SHAPE(3, 4), 0, 0, 3, 3, 0, 0, 3, 3, 1, 1, 4, 4),
                     I64V(SHAPE(3), 1, 0, 1)};
    ot_expect(GX_OP_ROIALIGN, NODE(A_INT("sampling_ratio", 1)), 3, in,
              F32V(SHAPE(3, 2, 1, 1), 37, 53, 5, 21, 42, 58), 0, 1e-5f);
}
END_TEST

START_TEST(test_roialign_errors)
{
    gx_view x = RANDV(2, 3, 4, 4);
    gx_view ok[3] = {x, RANDV(2, 4), I64V(SHAPE(2), 0, 1)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(A_STR("mode", "min")), 3, ok, GX_EATTR,
                    "RoiAlign: mode \"min\" is not avg or max");
    ot_expect_error(GX_OP_ROIALIGN, NODE(A_STR("coordinate_transformation_mode", "asymmetric")),
                    3, ok, GX_EATTR, NULL);
    ot_expect_error(GX_OP_ROIALIGN, NODE(A_INT("output_height", 0)), 3, ok, GX_EATTR, NULL);
    ot_expect_error(GX_OP_ROIALIGN, NODE(A_INT("sampling_ratio", -1)), 3, ok, GX_EATTR, NULL);
    gx_view big[3] = {x, RANDV(2, 4), I64V(SHAPE(2), 0, 2)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, big, GX_EINVAL,
                    "RoiAlign: batch index 2 is out of range for a batch of 2");
    gx_view r3[3] = {RANDV(3, 4, 4), RANDV(2, 4), I64V(SHAPE(2), 0, 1)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, r3, GX_ESHAPE, NULL);
    gx_view rois5[3] = {x, RANDV(2, 5), I64V(SHAPE(2), 0, 1)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, rois5, GX_ESHAPE, NULL);
    gx_view count[3] = {x, RANDV(2, 4), I64V(SHAPE(1), 0)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, count, GX_ESHAPE, NULL);
    gx_view i32[3] = {x, RANDV(2, 4), ot_view(GX_I32, ot_alloc(8), SHAPE(2))};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, i32, GX_EDTYPE, NULL);
    gx_view f64[3] = {ot_rand(GX_F64, SHAPE(2, 3, 4, 4)), RANDV(2, 4), I64V(SHAPE(2), 0, 1)};
    ot_expect_error(GX_OP_ROIALIGN, NODE(), 3, f64, GX_EDTYPE, NULL);
}
END_TEST

/* ---- MaxRoiPool ---- */

START_TEST(test_maxroipool_values)
{
    /* a 4 x 4 image 0..15; RoIs are (batch, x1, y1, x2, y2), corners
     * inclusive */
    gx_view x = F32V(SHAPE(1, 1, 4, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    gx_view in[2] = {x, F32V(SHAPE(2, 5), 0, 0, 0, 3, 3, 0, 1, 1, 2, 2)};
    ot_expect(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 2, 2)), 2, in,
              F32V(SHAPE(2, 1, 2, 2), 5, 7, 13, 15, 5, 6, 9, 10), 0, 0);
    /* bins of 2/3 pixel overlap: rows {0}, {0, 1}, {1} */
    gx_view small[2] = {x, F32V(SHAPE(1, 5), 0, 0, 0, 1, 1)};
    ot_expect(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 3, 3)), 2, small,
              F32V(SHAPE(1, 1, 3, 3), 0, 1, 1, 4, 5, 5, 4, 5, 5), 0, 0);
    /* spatial_scale: (2.4, 2.4) * 0.5 rounds to pixel (1, 1) */
    gx_view sc[2] = {x, F32V(SHAPE(1, 5), 0, 0, 0, 2.4f, 2.4f)};
    ot_expect(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1), A_FLOAT("spatial_scale", 0.5)),
              2, sc, F32V(SHAPE(1, 1, 1, 1), 5), 0, 0);
    /* a RoI beyond the image has empty bins: 0 */
    gx_view out[2] = {x, F32V(SHAPE(1, 5), 0, 10, 10, 12, 12)};
    ot_expect(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 2)), 2, out,
              F32V(SHAPE(1, 1, 1, 2), 0, 0), 0, 0);
}
END_TEST

START_TEST(test_maxroipool_batch)
{
    /* N = 2, C = 2 of negative values (plane k holds -1 - 16 k - 0..15) */
    float img[64];
    for (int i = 0; i < 64; i++)
        img[i] = -1.0f - (float)i;
    gx_view in[2] = {ot_view(GX_F32, ot_copy(img, sizeof img), SHAPE(2, 2, 4, 4)),
                     F32V(SHAPE(2, 5), 1, 1, 1, 2, 2, 0, 0, 0, 3, 3)};
    ot_expect(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1)), 2, in,
              F32V(SHAPE(2, 2, 1, 1), -38, -54, -1, -17), 0, 0);
}
END_TEST

START_TEST(test_maxroipool_errors)
{
    gx_view x = RANDV(2, 3, 4, 4);
    gx_view ok[2] = {x, F32V(SHAPE(1, 5), 1, 0, 0, 1, 1)};
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(), 2, ok, GX_EATTR, NULL);
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 2)), 2, ok, GX_EATTR,
                    "MaxRoiPool: pooled_shape must be two positive ints [height, width]");
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 0, 2)), 2, ok, GX_EATTR, NULL);
    gx_view big[2] = {x, F32V(SHAPE(1, 5), 2, 0, 0, 1, 1)};
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1)), 2, big, GX_EINVAL,
                    "MaxRoiPool: batch index 2 is out of range for a batch of 2");
    gx_view rois4[2] = {x, RANDV(1, 4)};
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1)), 2, rois4, GX_ESHAPE,
                    NULL);
    gx_view r3[2] = {RANDV(3, 4, 4), F32V(SHAPE(1, 5), 0, 0, 0, 1, 1)};
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1)), 2, r3, GX_ESHAPE, NULL);
    gx_view f64[2] = {ot_rand(GX_F64, SHAPE(2, 3, 4, 4)), F32V(SHAPE(1, 5), 0, 0, 0, 1, 1)};
    ot_expect_error(GX_OP_MAXROIPOOL, NODE(A_INTS("pooled_shape", 1, 1)), 2, f64, GX_EDTYPE,
                    NULL);
}
END_TEST

Suite *ops_vision_suite(void)
{
    Suite *s = suite_create("ops_vision");
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_gridsample_modes);
    tcase_add_test(tc, test_gridsample_bicubic);
    tcase_add_test(tc, test_gridsample_batch);
    tcase_add_test(tc, test_gridsample_errors);
    tcase_add_test(tc, test_roialign_values);
    tcase_add_test(tc, test_roialign_batch);
    tcase_add_test(tc, test_roialign_errors);
    tcase_add_test(tc, test_maxroipool_values);
    tcase_add_test(tc, test_maxroipool_batch);
    tcase_add_test(tc, test_maxroipool_errors);
    suite_add_tcase(s, tc);
    return s;
}
