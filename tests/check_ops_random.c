/*
 * Op tests of the random family (GX_OPS_RANDOM in ops/op.h). With a seed
 * every draw is a fixed function of the seed and the element, so these
 * tests are deterministic: the statistics below (means, spreads,
 * frequencies over 10^5 draws, each bound several standard errors wide)
 * hold or fail the same way on every run. They check each op's range and
 * distribution, that nth = 1, 3 and 7 shares give the same bytes
 * (ot_check_threads), that a seed repeats and another seed or none does
 * not, the dtypes, and the errors infer gives. check_modes.c runs them
 * through gexecd (never folded, the same in every mode).
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define N_DRAWS 100000

/* Runs op (no input, or x) with node's attributes: one output. */
static gx_view s_out(gx_op op, const gx_node *node, int n_in, const gx_view *in)
{
    gx_view y;
    ot_check_threads(op, node, n_in, in, 1, &y);
    return y;
}

static double s_at(const gx_view *v, int64_t i)
{
    return gx_cpu_load_f64(v->data, v->dtype, i);
}

/* Mean and standard deviation of v's elements. */
static void s_stats(const gx_view *v, double *mean, double *sd)
{
    double s = 0, ss = 0;
    for (int64_t i = 0; i < v->numel; i++)
        s += s_at(v, i);
    *mean = s / (double)v->numel;
    for (int64_t i = 0; i < v->numel; i++)
        ss += (s_at(v, i) - *mean) * (s_at(v, i) - *mean);
    *sd = sqrt(ss / (double)(v->numel - 1));
}

static bool s_same(const gx_view *a, const gx_view *b)
{
    return a->numel == b->numel && a->dtype == b->dtype &&
           memcmp(a->data, b->data, (size_t)a->numel * gx_dtype_size(a->dtype)) == 0;
}

/* Over [-2, 3): mean 0.5, sd 5 / sqrt(12); float16 too, where a draw close
 * to high must not round up to it. */
START_TEST(test_uniform)
{
    const int64_t shape[] = {N_DRAWS};
    gx_view y = s_out(GX_OP_RANDOM_UNIFORM,
                      NODE(A_INTS("shape", N_DRAWS), A_FLOAT("low", -2), A_FLOAT("high", 3),
                           A_FLOAT("seed", 7)),
                      0, NULL);
    ck_assert_int_eq(y.dtype, GX_F32);
    ot_check_shape(&y, 1, shape);
    double lo = INFINITY, hi = -INFINITY, mean, sd;
    for (int64_t i = 0; i < y.numel; i++) {
        lo = fmin(lo, s_at(&y, i));
        hi = fmax(hi, s_at(&y, i));
    }
    ck_assert_msg(lo >= -2 && lo < -1.99 && hi < 3 && hi > 2.99, "range [%g, %g]", lo, hi);
    s_stats(&y, &mean, &sd);
    ck_assert_msg(fabs(mean - 0.5) < 0.03, "mean %g", mean);
    ck_assert_msg(fabs(sd - 5 / sqrt(12)) < 0.03, "sd %g", sd);
    /* float16 over [0, 1): about 1 draw in 4096 rounds to 1.0 */
    gx_view h = s_out(GX_OP_RANDOM_UNIFORM,
                      NODE(A_INTS("shape", 100, 1000), A_INT("dtype", 10), A_FLOAT("seed", 1)),
                      0, NULL);
    ck_assert_int_eq(h.dtype, GX_F16);
    int top = 0;
    for (int64_t i = 0; i < h.numel; i++) {
        ck_assert_msg(s_at(&h, i) >= 0 && s_at(&h, i) < 1, "float16 draw %g", s_at(&h, i));
        top += s_at(&h, i) == gx_f16_to_f32(0x3bff); /* the largest float16 below 1 */
    }
    ck_assert_int_gt(top, 5);
}
END_TEST

/* mean 10, scale 2 in float64; float32 and bfloat16 of the same seed agree
 * with it within their rounding. */
START_TEST(test_normal)
{
    gx_view y = s_out(GX_OP_RANDOM_NORMAL,
                      NODE(A_INTS("shape", 50, N_DRAWS / 50), A_INT("dtype", 11),
                           A_FLOAT("mean", 10), A_FLOAT("scale", 2), A_FLOAT("seed", 3)),
                      0, NULL);
    ck_assert_int_eq(y.dtype, GX_F64);
    double mean, sd;
    s_stats(&y, &mean, &sd);
    ck_assert_msg(fabs(mean - 10) < 0.03 && fabs(sd - 2) < 0.03, "mean %g sd %g", mean, sd);
    int64_t far = 0; /* beyond 3 sd: 0.27% */
    for (int64_t i = 0; i < y.numel; i++)
        far += fabs(s_at(&y, i) - 10) > 6;
    ck_assert_msg(far > 150 && far < 400, "%lld draws beyond 3 sd", (long long)far);
    gx_view f = s_out(GX_OP_RANDOM_NORMAL,
                      NODE(A_INTS("shape", 50, N_DRAWS / 50), A_FLOAT("mean", 10),
                           A_FLOAT("scale", 2), A_FLOAT("seed", 3)),
                      0, NULL);
    gx_view b = s_out(GX_OP_RANDOM_NORMAL,
                      NODE(A_INTS("shape", 50, N_DRAWS / 50), A_INT("dtype", 16),
                           A_FLOAT("mean", 10), A_FLOAT("scale", 2), A_FLOAT("seed", 3)),
                      0, NULL);
    ck_assert_int_eq(f.dtype, GX_F32);
    ck_assert_int_eq(b.dtype, GX_BF16);
    for (int64_t i = 0; i < y.numel; i++) {
        ck_assert(fabs(s_at(&f, i) - s_at(&y, i)) <= 1e-6 * fabs(s_at(&y, i)));
        ck_assert(fabs(s_at(&b, i) - s_at(&y, i)) <= 0x1p-8 * fabs(s_at(&y, i)));
    }
}
END_TEST

/* A seed repeats its draws; another seed, or none, does not; two unseeded
 * runs differ. */
START_TEST(test_seeds)
{
    gx_view a = s_out(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 64), A_FLOAT("seed", 5)), 0,
                      NULL);
    gx_view b = s_out(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 64), A_FLOAT("seed", 5)), 0,
                      NULL);
    gx_view c = s_out(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 64), A_FLOAT("seed", 6)), 0,
                      NULL);
    ck_assert(s_same(&a, &b));
    ck_assert(!s_same(&a, &c));
    gx_view u[2];
    for (int r = 0; r < 2; r++) {
        char err[ERRLEN];
        gx_attrval av[GX_MAX_ATTRS];
        ck_assert_int_eq(
            ot_run(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 64)), 0, NULL, 1, av, &u[r], err),
            GX_OK);
        ck_assert(!s_same(&u[r], &a));
        for (int64_t i = 0; i < 64; i++)
            ck_assert(s_at(&u[r], i) >= 0 && s_at(&u[r], i) < 1);
    }
    ck_assert(!s_same(&u[0], &u[1]));
}
END_TEST

/* The *Like forms: the input's shape, its dtype or the attribute's. */
START_TEST(test_like)
{
    gx_view x = ot_rand(GX_F64, SHAPE(3, 4, 5));
    gx_view y = s_out(GX_OP_RANDOM_UNIFORM_LIKE,
                      NODE(A_FLOAT("low", 5), A_FLOAT("high", 6), A_FLOAT("seed", 1)), 1, &x);
    ck_assert_int_eq(y.dtype, GX_F64);
    ot_check_shape(&y, 3, x.shape);
    for (int64_t i = 0; i < y.numel; i++)
        ck_assert(s_at(&y, i) >= 5 && s_at(&y, i) < 6);
    gx_view n = ot_rand(GX_I32, SHAPE(2, 7));
    gx_view z = s_out(GX_OP_RANDOM_NORMAL_LIKE, NODE(A_INT("dtype", 1), A_FLOAT("seed", 1)), 1,
                      &n);
    ck_assert_int_eq(z.dtype, GX_F32);
    ot_check_shape(&z, 2, n.shape);
    ot_expect_error(GX_OP_RANDOM_NORMAL_LIKE, NULL, 1, &n, GX_EDTYPE,
                    "RandomNormalLike: the output would be int32; a float dtype is needed (the "
                    "dtype attribute, or a float input)");
}
END_TEST

/* p 0 never, 1 always, 0.25 a quarter of the time; bool, int64 and float
 * outputs. */
START_TEST(test_bernoulli)
{
    gx_view p = ot_rand(GX_F32, SHAPE(N_DRAWS));
    float *pf = p.data;
    for (int64_t i = 0; i < p.numel; i++)
        pf[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : 0.25f;
    const int dts[] = {9, 7, -1};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        gx_view y = s_out(GX_OP_BERNOULLI,
                          dts[d] < 0 ? NODE(A_FLOAT("seed", 2))
                                     : NODE(A_INT("dtype", dts[d]), A_FLOAT("seed", 2)),
                          1, &p);
        gx_dtype want = dts[d] == 9 ? GX_BOOL : dts[d] == 7 ? GX_I64 : GX_F32;
        ck_assert_int_eq(y.dtype, want);
        int64_t ones = 0, quarter = 0;
        for (int64_t i = 0; i < y.numel; i++) {
            double v = want == GX_BOOL  ? ((const uint8_t *)y.data)[i]
                       : want == GX_I64 ? (double)((const int64_t *)y.data)[i]
                                        : s_at(&y, i);
            ck_assert(v == 0 || v == 1);
            ck_assert(i % 3 != 0 || v == 0);
            ck_assert(i % 3 != 1 || v == 1);
            ones += v == 1;
            quarter += i % 3 == 2 && v == 1;
        }
        const double frac = (double)quarter / (double)(N_DRAWS / 3);
        ck_assert_msg(fabs(frac - 0.25) < 0.015, "p 0.25 gave %g", frac);
        ck_assert_int_gt(ones, quarter);
    }
}
END_TEST

/* Row 0 has one possible class; row 1 is log(0.2, 0.3, 0.5) + 7 (the
 * logits need not be normalised). */
START_TEST(test_multinomial)
{
    gx_view x = F32V(SHAPE(2, 3), 0, -INFINITY, -INFINITY, logf(0.2f) + 7, logf(0.3f) + 7,
                     logf(0.5f) + 7);
    gx_view y = s_out(GX_OP_MULTINOMIAL,
                      NODE(A_INT("sample_size", N_DRAWS / 2), A_INT("dtype", 7),
                           A_FLOAT("seed", 4)),
                      1, &x);
    ck_assert_int_eq(y.dtype, GX_I64);
    ot_check_shape(&y, SHAPE(2, N_DRAWS / 2));
    const int64_t *v = y.data;
    int64_t count[3] = {0};
    for (int64_t s = 0; s < N_DRAWS / 2; s++) {
        ck_assert_int_eq(v[s], 0);
        int64_t c = v[N_DRAWS / 2 + s];
        ck_assert(c >= 0 && c < 3);
        count[c]++;
    }
    const double want[3] = {0.2, 0.3, 0.5};
    for (int c = 0; c < 3; c++)
        ck_assert_msg(fabs((double)count[c] / (N_DRAWS / 2) - want[c]) < 0.015, "class %d: %lld",
                      c, (long long)count[c]);
    gx_view i32 = s_out(GX_OP_MULTINOMIAL, NODE(A_FLOAT("seed", 4)), 1, &x);
    ck_assert_int_eq(i32.dtype, GX_I32);
    ot_check_shape(&i32, SHAPE(2, 1));
}
END_TEST

/* Dropout in training: ratio 0.25 keeps three quarters, scaled by 4/3,
 * and the mask says which; the ratio from the input (opset 12+) or the
 * attribute (before); float16 data. */
START_TEST(test_dropout)
{
    gx_view x = ot_rand(GX_F32, SHAPE(N_DRAWS));
    const bool t = true;
    const float r = 0.25f;
    gx_view in[3] = {x, ot_view(GX_F32, ot_copy(&r, 4), 0, NULL),
                     ot_view(GX_BOOL, ot_copy(&t, 1), 0, NULL)};
    gx_view out[2];
    ot_check_threads(GX_OP_DROPOUT, NODE(A_INT("seed", 11)), 3, in, 2, out);
    const float *xv = x.data, *yv = out[0].data;
    const bool *mask = out[1].data;
    int64_t kept = 0;
    for (int64_t i = 0; i < x.numel; i++) {
        ck_assert(mask[i] ? yv[i] == (float)(xv[i] * (1.0 / 0.75)) : yv[i] == 0);
        kept += mask[i];
    }
    ck_assert_msg(fabs((double)kept / N_DRAWS - 0.75) < 0.01, "kept %lld", (long long)kept);
    gx_view again[2];
    ot_check_threads(GX_OP_DROPOUT, NODE(A_INT("seed", 11)), 3, in, 2, again);
    ck_assert(s_same(&out[0], &again[0]) && s_same(&out[1], &again[1]));
    /* the opset-10 form: the ratio attribute, no ratio input */
    in[1] = (gx_view){.ndim = -1};
    gx_view h = ot_rand(GX_F16, SHAPE(1000));
    for (int64_t i = 0; i < h.numel; i++) /* finite values, not random bytes */
        ((uint16_t *)h.data)[i] = gx_f32_to_f16(ot_randf());
    in[0] = h;
    gx_view y = s_out(GX_OP_DROPOUT, NODE(A_FLOAT("ratio", 0.5), A_INT("seed", 1)), 3, in);
    ck_assert_int_eq(y.dtype, GX_F16);
    int64_t zeros = 0;
    for (int64_t i = 0; i < y.numel; i++) {
        const double v = s_at(&y, i), xi = s_at(&h, i);
        ck_assert(v == 0 || v == (double)gx_f16_to_f32(gx_f32_to_f16((float)(xi * 2))));
        zeros += v == 0 && xi != 0;
    }
    ck_assert_msg(zeros > 400 && zeros < 600, "%lld of 1000 dropped", (long long)zeros);
}
END_TEST

START_TEST(test_random_errors)
{
    ot_expect_error(GX_OP_RANDOM_UNIFORM, NULL, 0, NULL, GX_EATTR, NULL);
    ot_expect_error(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 2, -1)), 0, NULL, GX_EATTR,
                    "RandomUniform: shape[1] is -1");
    ot_expect_error(GX_OP_RANDOM_NORMAL, NODE(A_INTS("shape", 2), A_INT("dtype", 6)), 0, NULL,
                    GX_EDTYPE, "RandomNormal: the output would be int32; a float dtype is needed");
    ot_expect_error(GX_OP_RANDOM_NORMAL, NODE(A_INTS("shape", 2), A_INT("dtype", 99)), 0, NULL,
                    GX_EATTR, "RandomNormal: dtype=99 is not a dtype gexec has");
    ot_expect_error(GX_OP_RANDOM_UNIFORM, NODE(A_INTS("shape", 2), A_FLOAT("high", INFINITY)), 0,
                    NULL, GX_EATTR, "RandomUniform: low=0 and high=inf must be finite");
    gx_view x = RANDV(2, 3);
    ot_expect_error(GX_OP_MULTINOMIAL, NULL, 1, (gx_view[]){RANDV(6)}, GX_ESHAPE,
                    "Multinomial: input has rank 1; [batch, classes] with at least one class is "
                    "needed");
    ot_expect_error(GX_OP_MULTINOMIAL, NODE(A_INT("sample_size", 0)), 1, &x, GX_EATTR,
                    "Multinomial: sample_size=0; at least 1");
    ot_expect_error(GX_OP_MULTINOMIAL, NODE(A_INT("dtype", 1)), 1, &x, GX_EDTYPE,
                    "Multinomial: the output would be float32; int32 (dtype 6) or int64 (7) is "
                    "needed");
    ot_expect_error(GX_OP_BERNOULLI, NULL, 1, (gx_view[]){ot_rand(GX_I64, SHAPE(2))}, GX_EDTYPE,
                    NULL);
}
END_TEST

Suite *ops_random_suite(void)
{
    Suite *s = suite_create("ops_random");
    TCase *tc = tcase_create("random");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_uniform);
    tcase_add_test(tc, test_normal);
    tcase_add_test(tc, test_seeds);
    tcase_add_test(tc, test_like);
    tcase_add_test(tc, test_bernoulli);
    tcase_add_test(tc, test_multinomial);
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_random_errors);
    suite_add_tcase(s, tc);
    return s;
}
