/*
 * The ai.onnx.ml ops (ops/schema_ml.c, ops/cpu/ml.c), each on 1 and 3
 * shares against values worked by hand: LabelEncoder in each opset's form
 * and each key and value type, Scaler, Normalizer, Binarizer, Imputer,
 * ArrayFeatureExtractor, OneHotEncoder, FeatureVectorizer, LinearRegressor and LinearClassifier with their
 * post transforms and binary forms, the tree ensembles (nodes listed out of
 * order, every aggregate, missing values, the binary classifier's ONNX
 * Runtime scores), and the attribute errors. test_vs_ort runs the models
 * of tests/data/ml (make_models.py there) through the importer, compiler
 * and executor and through ONNX Runtime (dlopen'ed as bench/bench_ort.c
 * does: $GEXEC_ORT_LIB, else bench/ort.sh's folder build/ort) on the same
 * inputs, and compares every output; it says so and passes when ONNX
 * Runtime is not there.
 */
#include <check.h>
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})
#define A_FLOATS(key, ...)                                                    \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOATS,                 \
               .floats = (double[]){__VA_ARGS__},                             \
               .n = sizeof((double[]){__VA_ARGS__}) / sizeof(double)})
#define A_TENSOR(key, dt, ctype, ...)                                                         \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_TENSOR,                                 \
               .t = ot_keep(gx_tensor_new_copy(                                                \
                   dt, 1, (int64_t[]){sizeof((ctype[]){__VA_ARGS__}) / sizeof(ctype)},        \
                   (ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__})))})
#define A_F32T(key, ...) A_TENSOR(key, GX_F32, float, __VA_ARGS__)
#define A_F64T(key, ...) A_TENSOR(key, GX_F64, double, __VA_ARGS__)
#define A_U8T(key, ...) A_TENSOR(key, GX_U8, uint8_t, __VA_ARGS__)
#define F64V(shape, ...)                                                      \
    ot_view(GX_F64, ot_copy((double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__})), shape)
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)



/* Runs op on 1 and 3 shares into out[0..n_out). */
static void s_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth, int n_out,
                  gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    int rc = ot_run_n(op, node, n_in, in, nth, av, n_out, out, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
}

static void s_check_strs(const gx_view *v, int64_t n, const char *const *want)
{
    ck_assert_int_eq(v->dtype, GX_STRING);
    ck_assert_int_eq(v->numel, n);
    for (int64_t i = 0; i < n; i++) {
        const gx_strrec *r = ((const gx_strrec *const *)v->data)[i];
        ck_assert_msg(gx_str_len(r) == strlen(want[i]) &&
                          memcmp(gx_str_bytes(r), want[i], gx_str_len(r)) == 0,
                      "element %lld: \"%s\", expected \"%s\"", (long long)i, gx_str_bytes(r),
                      want[i]);
    }
}

static void s_check_i64(const gx_view *v, int64_t n, const int64_t *want)
{
    ck_assert_int_eq(v->dtype, GX_I64);
    ck_assert_int_eq(v->numel, n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(((const int64_t *)v->data)[i] == want[i], "element %lld: %lld, expected %lld",
                      (long long)i, (long long)((const int64_t *)v->data)[i], (long long)want[i]);
}

static void s_check_f32(const gx_view *v, int64_t n, const float *want, float tol)
{
    ck_assert_int_eq(v->dtype, GX_F32);
    ck_assert_int_eq(v->numel, n);
    for (int64_t i = 0; i < n; i++) {
        const float g = ((const float *)v->data)[i];
        ck_assert_msg(fabsf(g - want[i]) <= tol || (isnan(g) && isnan(want[i])),
                      "element %lld: %g, expected %g", (long long)i, g, want[i]);
    }
}

/* base with over's attributes in place of those of the same names (and
 * the others of over added): one attribute changed for an error case. */
static const gx_node *s_with(const gx_node *base, const gx_node *over)
{
    gx_node *n = ot_alloc(sizeof *n);
    gx_attr *a = ot_alloc((base->n_attr + over->n_attr) * sizeof *a);
    size_t m = 0;
    for (size_t i = 0; i < base->n_attr; i++)
        a[m++] = base->attr[i];
    for (size_t j = 0; j < over->n_attr; j++) {
        size_t i = 0;
        while (i < base->n_attr && strcmp(a[i].name, over->attr[j].name) != 0)
            i++;
        a[i < base->n_attr ? i : m++] = over->attr[j];
    }
    n->attr = a;
    n->n_attr = m;
    return n;
}
#define WITH(base, ...) s_with(base, NODE(__VA_ARGS__))

static void s_check_f64(const gx_view *v, int64_t n, const double *want, double tol)
{
    ck_assert_int_eq(v->dtype, GX_F64);
    ck_assert_int_eq(v->numel, n);
    for (int64_t i = 0; i < n; i++) {
        const double g = ((const double *)v->data)[i];
        ck_assert_msg(fabs(g - want[i]) <= tol, "element %lld: %.17g, expected %.17g",
                      (long long)i, g, want[i]);
    }
}

#define CHECK_F64(op, node, n_in, in, tol, ...)                                               \
    for (int nth = 1; nth <= 3; nth += 2) {                                                   \
        gx_view o_[2];                                                                        \
        s_run(op, node, n_in, in, nth, 1, o_);                                                \
        s_check_f64(&o_[0], sizeof((double[]){__VA_ARGS__}) / 8, (double[]){__VA_ARGS__}, tol); \
    }
#define CHECK_STRS(op, node, n_in, in, ...)                                                   \
    for (int nth = 1; nth <= 3; nth += 2) {                                                   \
        gx_view o_[2];                                                                        \
        s_run(op, node, n_in, in, nth, 1, o_);                                                \
        s_check_strs(&o_[0], NSTR(__VA_ARGS__), STRS(__VA_ARGS__));                           \
    }
#define CHECK_I64(op, node, n_in, in, ...)                                                    \
    for (int nth = 1; nth <= 3; nth += 2) {                                                   \
        gx_view o_[2];                                                                        \
        s_run(op, node, n_in, in, nth, 1, o_);                                                \
        s_check_i64(&o_[0], sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__});  \
    }
#define CHECK_F32(op, node, n_in, in, tol, ...)                                               \
    for (int nth = 1; nth <= 3; nth += 2) {                                                   \
        gx_view o_[2];                                                                        \
        s_run(op, node, n_in, in, nth, 1, o_);                                                \
        s_check_f32(&o_[0], sizeof((float[]){__VA_ARGS__}) / 4, (float[]){__VA_ARGS__}, tol); \
    }

START_TEST(test_label_encoder)
{
    /* opset 2: strings -> int64 with a default */
    gx_view s = SV(SHAPE(3), "b", "zz", "a");
    CHECK_I64(GX_OP_LABEL_ENCODER,
              NODE(A_STRS("keys_strings", "a", "b"), A_INTS("values_int64s", 10, 20),
                   A_INT("default_int64", 42)),
              1, &s, 20, 42, 10);
    /* int64 -> strings, the default default "_Unused" */
    gx_view i = I64V(SHAPE(2, 2), 2, 5, 1, 2);
    CHECK_STRS(GX_OP_LABEL_ENCODER,
               NODE(A_INTS("keys_int64s", 1, 2), A_STRS("values_strings", "x", "y")), 1, &i,
               "y", "_Unused", "x", "y");
    /* floats: NaN is a key like any other; the default -0.0 */
    gx_view f = F32V(SHAPE(3), NAN, 0.5f, 3);
    CHECK_F32(GX_OP_LABEL_ENCODER,
              NODE(A_FLOATS("keys_floats", 0.5, NAN), A_FLOATS("values_floats", 1, 2)), 1, &f, 0,
              2, 1, -0.0f);
    /* opset 1: classes_strings, both ways */
    CHECK_I64(GX_OP_LABEL_ENCODER, NODE(A_STRS("classes_strings", "a", "b", "zz")), 1, &s, 1, 2,
              0);
    gx_view j = I64V(SHAPE(2), 1, 7);
    CHECK_STRS(GX_OP_LABEL_ENCODER,
               NODE(A_STRS("classes_strings", "a", "b"), A_STR("default_string", "?")), 1, &j,
               "b", "?");
    /* opset 4: tensors */
    gx_tensor *keys = ot_keep(gx_tensor_new_copy(GX_I64, 1, (int64_t[]){2}, (int64_t[]){3, 4}, 16));
    gx_view k = I64V(SHAPE(2), 4, 0);
    CHECK_STRS(GX_OP_LABEL_ENCODER,
               NODE(((gx_attr){.name = "keys_tensor", .type = GX_ATTR_TENSOR, .t = keys}),
                    ((gx_attr){.name = "values_tensor", .type = GX_ATTR_TENSOR,
                               .t = ot_keep(gx_tensor_new_strings(1, (int64_t[]){2},
                                                                 STRS("t", "f"), NULL))}),
                    ((gx_attr){.name = "default_tensor", .type = GX_ATTR_TENSOR,
                               .t = ot_keep(gx_tensor_new_strings(1, (int64_t[]){1}, STRS("none"),
                                                                 NULL))})),
               1, &k, "f", "none");
    /* errors */
    ot_expect_error(GX_OP_LABEL_ENCODER,
                    NODE(A_INTS("keys_int64s", 1, 2), A_STRS("values_strings", "x")), 1, &i,
                    GX_EATTR, "LabelEncoder: 2 keys but 1 values");
    ot_expect_error(GX_OP_LABEL_ENCODER,
                    NODE(A_STRS("keys_strings", "a"), A_INTS("values_int64s", 1)), 1, &i,
                    GX_EDTYPE, "LabelEncoder: input is int64 but the keys are string");
    ot_expect_error(GX_OP_LABEL_ENCODER, NODE(A_INTS("keys_int64s", 1)), 1, &i, GX_EATTR, NULL);
}
END_TEST

START_TEST(test_preprocess)
{
    gx_view x = F32V(SHAPE(2, 2), 1, 2, 3, 4);
    CHECK_F32(GX_OP_SCALER, NODE(A_FLOATS("offset", 1, 0), A_FLOATS("scale", 2, 0.5)), 1, &x, 0,
              0, 1, 4, 2);
    gx_view xi = I64V(SHAPE(3), 1, 2, 3);
    CHECK_F32(GX_OP_SCALER, NODE(A_FLOATS("offset", 1), A_FLOATS("scale", 3)), 1, &xi, 0, 0, 3,
              6);
    ot_expect_error(GX_OP_SCALER, NODE(A_FLOATS("offset", 1, 2, 3), A_FLOATS("scale", 1)), 1, &x,
                    GX_EATTR, "Scaler: offset has 3 values and scale 1; 1 or 2 (the columns) each");

    gx_view m = F32V(SHAPE(2, 3), 1, 2, 4, -1, -2, 0);
    CHECK_F32(GX_OP_NORMALIZER, NODE(), 1, &m, 1e-6f, 0.25f, 0.5f, 1, -1, -2, 0);
    CHECK_F32(GX_OP_NORMALIZER, NODE(A_STR("norm", "L1")), 1, &m, 1e-6f, 1 / 7.0f, 2 / 7.0f,
              4 / 7.0f, -1 / 3.0f, -2 / 3.0f, 0);
    gx_view l2 = F32V(SHAPE(1, 2), 3, 4);
    CHECK_F32(GX_OP_NORMALIZER, NODE(A_STR("norm", "L2")), 1, &l2, 1e-6f, 0.6f, 0.8f);
    ot_expect_error(GX_OP_NORMALIZER, NODE(A_STR("norm", "L3")), 1, &l2, GX_EATTR,
                    "Normalizer: norm \"L3\" is not MAX, L1 or L2");

    gx_view b = F32V(SHAPE(4), 1, 2, 1.5f, -3);
    CHECK_F32(GX_OP_BINARIZER, NODE(A_FLOAT("threshold", 1.5)), 1, &b, 0, 0, 1, 0, 0);
    gx_view bi = I64V(SHAPE(3), -1, 0, 7);
    CHECK_I64(GX_OP_BINARIZER, NODE(), 1, &bi, 0, 0, 1);

    gx_view im = F32V(SHAPE(2, 2), NAN, 1, 2, NAN);
    CHECK_F32(GX_OP_IMPUTER,
              NODE(A_FLOATS("imputed_value_floats", 7, 8), A_FLOAT("replaced_value_float", NAN)),
              1, &im, 0, 7, 1, 2, 8);
    gx_view ii = I64V(SHAPE(1, 3), -1, 5, -1);
    CHECK_I64(GX_OP_IMPUTER,
              NODE(A_INTS("imputed_value_int64s", 0), A_INT("replaced_value_int64", -1)), 1, &ii,
              0, 5, 0);
    ot_expect_error(GX_OP_IMPUTER, NODE(A_FLOATS("imputed_value_floats", 1, 2, 3)), 1, &im,
                    GX_EATTR, NULL);

    gx_view oh = I64V(SHAPE(2, 2), 1, 7, 5, 3);
    CHECK_F32(GX_OP_ONE_HOT_ENCODER, NODE(A_INTS("cats_int64s", 3, 1, 7)), 1, &oh, 0, 0, 1, 0,
              0, 0, 1, 0, 0, 0, 1, 0, 0);
    gx_view ohf = F32V(SHAPE(2), 1.9f, 3);
    CHECK_F32(GX_OP_ONE_HOT_ENCODER, NODE(A_INTS("cats_int64s", 3, 1)), 1, &ohf, 0, 0, 1, 1, 0);
    gx_view ohs = SV(SHAPE(2), "g", "b");
    CHECK_F32(GX_OP_ONE_HOT_ENCODER, NODE(A_STRS("cats_strings", "r", "g")), 1, &ohs, 0, 0, 1, 0,
              0);
    ot_expect_error(GX_OP_ONE_HOT_ENCODER, NODE(A_STRS("cats_strings", "r", "g"), A_INT("zeros", 0)),
                    1, &ohs, GX_EINVAL, "OneHotEncoder: element 1 is no category (zeros = 0)");
    ot_expect_error(GX_OP_ONE_HOT_ENCODER, NODE(A_INTS("cats_int64s", 1)), 1, &ohs, GX_EATTR,
                    "OneHotEncoder: string input needs categories in cats_strings");

    gx_view fv[2] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), I64V(SHAPE(2, 3), 5, 6, 7, 8, 9, 10)};
    CHECK_F32(GX_OP_FEATURE_VECTORIZER, NODE(A_INTS("inputdimensions", 3, 2)), 2, fv, 0, 1, 2, 0,
              5, 6, 3, 4, 0, 8, 9);
    ot_expect_error(GX_OP_FEATURE_VECTORIZER, NODE(A_INTS("inputdimensions", 3)), 2, fv, GX_EATTR,
                    "FeatureVectorizer: 1 inputdimensions for 2 inputs");

    gx_view afe[2] = {F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6), I64V(SHAPE(2), 2, 0)};
    CHECK_F32(GX_OP_ARRAY_FEATURE_EXTRACTOR, NODE(), 2, afe, 0, 3, 1, 6, 4);
    gx_view afs[2] = {SV(SHAPE(3), "a", "b", "c"), I64V(SHAPE(1), 1)};
    CHECK_STRS(GX_OP_ARRAY_FEATURE_EXTRACTOR, NODE(), 2, afs, "b");
    gx_view one;
    s_run(GX_OP_ARRAY_FEATURE_EXTRACTOR, NODE(), 2, afs, 1, 1, &one);
    ot_check_shape(&one, SHAPE(1, 1)); /* [C] gives [1, |Y|] */
    gx_view bad[2] = {afe[0], I64V(SHAPE(1), 3)};
    ot_expect_error(GX_OP_ARRAY_FEATURE_EXTRACTOR, NODE(), 2, bad, GX_EINVAL,
                    "ArrayFeatureExtractor: index 3 is out of range [0, 3)");
}
END_TEST

START_TEST(test_linear)
{
    gx_view x = F32V(SHAPE(2, 2), 1, 1, 0, 2);
    CHECK_F32(GX_OP_LINEAR_REGRESSOR,
              NODE(A_FLOATS("coefficients", 1, 2, 3, 4), A_FLOATS("intercepts", 0.5, -1),
                   A_INT("targets", 2)),
              1, &x, 1e-6f, 3.5f, 6, 4.5f, 7);
    /* SOFTMAX over the targets of a row */
    const float e0 = 1 / (1 + expf(2.5f)), e1 = 1 / (1 + expf(2.5f));
    CHECK_F32(GX_OP_LINEAR_REGRESSOR,
              NODE(A_FLOATS("coefficients", 1, 2, 3, 4), A_FLOATS("intercepts", 0.5, -1),
                   A_INT("targets", 2), A_STR("post_transform", "SOFTMAX")),
              1, &x, 1e-6f, e0, 1 - e0, e1, 1 - e1);
    /* one target: only PROBIT applies (ONNX Runtime); probit(0.8413) ~ 1 */
    gx_view p = F32V(SHAPE(1, 1), 0.8413f);
    CHECK_F32(GX_OP_LINEAR_REGRESSOR,
              NODE(A_FLOATS("coefficients", 1), A_STR("post_transform", "PROBIT")), 1, &p, 5e-3f,
              1.0f);
    CHECK_F32(GX_OP_LINEAR_REGRESSOR,
              NODE(A_FLOATS("coefficients", 1), A_STR("post_transform", "LOGISTIC")), 1, &p, 0,
              0.8413f);
    ot_expect_error(GX_OP_LINEAR_REGRESSOR, NODE(A_FLOATS("coefficients", 1, 2, 3)), 1, &x,
                    GX_EATTR, NULL);

    /* three classes: the best score's label, SOFTMAX scores */
    gx_view c = F32V(SHAPE(3, 2), 2, 1, 0, 3, -5, -5);
    const gx_node *cls = NODE(A_FLOATS("coefficients", 1, 0, 0, 1, -1, -1),
                              A_FLOATS("intercepts", 0, 0, 0), A_INTS("classlabels_ints", 10, 20, 30),
                              A_STR("post_transform", "SOFTMAX"));
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_LINEAR_CLASSIFIER, cls, 1, &c, nth, 2, o);
        s_check_i64(&o[0], 3, (int64_t[]){10, 20, 30});
        const float sc[9] = {2, 1, -3, 0, 3, -3, -5, -5, 10};
        float want[9];
        for (int r = 0; r < 3; r++) {
            float z = 0;
            for (int q = 0; q < 3; q++)
                z += expf(sc[r * 3 + q]);
            for (int q = 0; q < 3; q++)
                want[r * 3 + q] = expf(sc[r * 3 + q]) / z;
        }
        s_check_f32(&o[1], 9, want, 1e-6f);
    }
    /* binary: one score, its sign picks the label; scores [1 - s, s] */
    gx_view bx = F32V(SHAPE(2, 2), 2, 1, 0, 1);
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_LINEAR_CLASSIFIER,
              NODE(A_FLOATS("coefficients", 1, -1), A_FLOATS("intercepts", 0),
                   A_STRS("classlabels_strings", "neg", "pos")),
              1, &bx, nth, 2, o);
        s_check_strs(&o[0], 2, STRS("pos", "neg"));
        ot_check_shape(&o[1], SHAPE(2, 2));
        s_check_f32(&o[1], 4, (float[]){0, 1, 2, -1}, 0);
    }
    ot_expect_error(GX_OP_LINEAR_CLASSIFIER,
                    NODE(A_FLOATS("coefficients", 1, 0, 0, 1), A_FLOATS("intercepts", 0, 0),
                         A_INTS("classlabels_ints", 1, 2, 3)),
                    1, &bx, GX_EATTR, "LinearClassifier: 2 classes but 3 class labels");
    ot_expect_error(GX_OP_LINEAR_CLASSIFIER,
                    NODE(A_FLOATS("coefficients", 1, 0), A_FLOATS("intercepts", 0),
                         A_STR("post_transform", "CUBE")),
                    1, &bx, GX_EATTR, NULL);
}
END_TEST

/* Two trees, listed tree 1 first and each out of node order:
 *   tree 0: x0 <= 0.5 ? 1 : 2 (node 0 sends NaN to the true side)
 *   tree 1: x1 < 0 ? 10 : 20 */
#define S_TREES                                                                          \
    A_INTS("nodes_treeids", 1, 1, 1, 0, 0, 0), A_INTS("nodes_nodeids", 2, 0, 1, 1, 0, 2), \
        A_INTS("nodes_featureids", 0, 1, 0, 0, 0, 0),                                     \
        A_FLOATS("nodes_values", 0, 0, 0, 0, 0.5, 0),                                     \
        A_STRS("nodes_modes", "LEAF", "BRANCH_LT", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF"), \
        A_INTS("nodes_truenodeids", 0, 1, 0, 0, 1, 0),                                    \
        A_INTS("nodes_falsenodeids", 0, 2, 0, 0, 2, 0),                                   \
        A_INTS("nodes_missing_value_tracks_true", 0, 0, 0, 0, 1, 0)

START_TEST(test_tree_regressor)
{
    gx_view x = F32V(SHAPE(4, 2), 0, 1, 1, -1, NAN, 5, 0.5f, 0);
#define REG(agg, ...)                                                                         \
    NODE(S_TREES, A_INTS("target_treeids", 0, 0, 1, 1), A_INTS("target_nodeids", 1, 2, 1, 2), \
         A_INTS("target_ids", 0, 0, 0, 0), A_FLOATS("target_weights", 1, 2, 10, 20),          \
         A_FLOATS("base_values", 100), A_STR("aggregate_function", agg), ##__VA_ARGS__)
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("SUM"), 1, &x, 0, 121, 112, 121, 121);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("AVERAGE"), 1, &x, 0, 110.5f, 106, 110.5f, 110.5f);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("MIN"), 1, &x, 0, 101, 102, 101, 101);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("MAX"), 1, &x, 0, 120, 110, 120, 120);
    /* two targets: tree 1 votes for target 1, SOFTMAX mixes them */
    const gx_node *two = NODE(S_TREES, A_INTS("target_treeids", 0, 0, 1, 1),
                              A_INTS("target_nodeids", 1, 2, 1, 2), A_INTS("target_ids", 0, 0, 1, 1),
                              A_FLOATS("target_weights", 1, 2, 1, 3), A_INT("n_targets", 2),
                              A_STR("post_transform", "SOFTMAX"));
    const float a = 1 / (1 + expf(2)), b = 1 / (1 + expf(-1));
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, two, 1, &x, 1e-6f, a, 1 - a, b, 1 - b, a, 1 - a, a, 1 - a);
    ot_expect_error(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("MEDIAN"), 1, &x, GX_EATTR, NULL);
    gx_view narrow = F32V(SHAPE(1, 1), 0);
    ot_expect_error(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("SUM"), 1, &narrow, GX_EATTR,
                    "TreeEnsembleRegressor: node 1 tests feature 1; the input has 1 columns");
    ot_expect_error(GX_OP_TREE_ENSEMBLE_REGRESSOR,
                    NODE(A_INTS("nodes_treeids", 0), A_INTS("nodes_nodeids", 0),
                         A_INTS("nodes_featureids", 0), A_FLOATS("nodes_values", 0),
                         A_STRS("nodes_modes", "BRANCH_LEQ"), A_INTS("nodes_truenodeids", 1),
                         A_INTS("nodes_falsenodeids", 0)),
                    1, &x, GX_EATTR, "TreeEnsembleRegressor: node 0 branches to a node tree 0 lacks");
#undef REG
}
END_TEST

START_TEST(test_tree_classifier)
{
    /* three classes: tree 0's leaves vote */
    gx_view x = F32V(SHAPE(2, 2), 0, 1, 1, -1);
    const gx_node *three = NODE(S_TREES, A_INTS("class_treeids", 0, 0, 0),
                                A_INTS("class_nodeids", 1, 2, 2), A_INTS("class_ids", 0, 1, 2),
                                A_FLOATS("class_weights", 1, 0.7, 0.3),
                                A_INTS("classlabels_int64s", 5, 6, 7));
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_TREE_ENSEMBLE_CLASSIFIER, three, 1, &x, nth, 2, o);
        s_check_i64(&o[0], 2, (int64_t[]){5, 6});
        s_check_f32(&o[1], 6, (float[]){1, 0, 0, 0, 0.7f, 0.3f}, 1e-7f);
    }
    /* binary with the weights of one class, all positive: the label from
     * 0.5, scores [1 - p, p] even with LOGISTIC (as ONNX Runtime) */
    const gx_node *bin = NODE(S_TREES, A_INTS("class_treeids", 0, 0),
                              A_INTS("class_nodeids", 1, 2), A_INTS("class_ids", 0, 0),
                              A_FLOATS("class_weights", 0.2, 0.9),
                              A_STRS("classlabels_strings", "no", "yes"),
                              A_STR("post_transform", "LOGISTIC"));
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_TREE_ENSEMBLE_CLASSIFIER, bin, 1, &x, nth, 2, o);
        s_check_strs(&o[0], 2, STRS("no", "yes"));
        s_check_f32(&o[1], 4, (float[]){0.8f, 0.2f, 0.1f, 0.9f}, 1e-6f);
    }
    /* negative weights: the label from the sign, LOGISTIC of both */
    const gx_node *neg = NODE(S_TREES, A_INTS("class_treeids", 0, 0),
                              A_INTS("class_nodeids", 1, 2), A_INTS("class_ids", 0, 0),
                              A_FLOATS("class_weights", -1, 2), A_INTS("classlabels_int64s", 0, 1),
                              A_STR("post_transform", "LOGISTIC"));
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_TREE_ENSEMBLE_CLASSIFIER, neg, 1, &x, nth, 2, o);
        s_check_i64(&o[0], 2, (int64_t[]){0, 1});
        const float l1 = 1 / (1 + expf(-1)), l2 = 1 / (1 + expf(-2));
        s_check_f32(&o[1], 4, (float[]){l1, 1 - l1, 1 - l2, l2}, 1e-6f);
    }
    ot_expect_error(GX_OP_TREE_ENSEMBLE_CLASSIFIER,
                    NODE(S_TREES, A_INTS("class_treeids", 0), A_INTS("class_nodeids", 1),
                         A_INTS("class_ids", 3), A_FLOATS("class_weights", 1),
                         A_INTS("classlabels_int64s", 0, 1)),
                    1, &x, GX_EATTR, "TreeEnsembleClassifier: leaf weight 0 is for output 3 of 2");
}
END_TEST

/* TreeEnsemble (opset 5): two trees over interior nodes 0-2 and leaves 0-4,
 *   tree at 0: x0 in {1, 3} ? (x1 <= 0.5, NaN true ? leaf 1 : leaf 2) : leaf 0
 *   tree at 2: x0 > 2 ? leaf 3 : leaf 4
 * leaves 0, 3, 4 weigh target 0 (10, 100, 200), 1 and 2 target 1 (1, 2). */
#define S_TREES5(dt, ctype, ...)                                                              \
    A_INTS("nodes_featureids", 0, 1, 0), A_U8T("nodes_modes", 6, 0, 3),                       \
        A_TENSOR("nodes_splits", dt, ctype, 0, 0.5, 2), A_INTS("nodes_truenodeids", 1, 1, 3), \
        A_INTS("nodes_trueleafs", 0, 1, 1), A_INTS("nodes_falsenodeids", 0, 2, 4),            \
        A_INTS("nodes_falseleafs", 1, 1, 1), A_INTS("nodes_missing_value_tracks_true", 0, 1, 0), \
        A_TENSOR("membership_values", dt, ctype, 1, 3, NAN), A_INTS("tree_roots", 0, 2),      \
        A_INTS("leaf_targetids", 0, 1, 1, 0, 0),                                              \
        A_TENSOR("leaf_weights", dt, ctype, 10, 1, 2, 100, 200), A_INT("n_targets", 2),       \
        ##__VA_ARGS__

START_TEST(test_tree_ensemble5)
{
    gx_view x = F32V(SHAPE(4, 2), 1, 0, 3, NAN, 2, 5, 3, 1);
    const gx_node *base = NODE(S_TREES5(GX_F32, float));
#define T5(agg, ...) WITH(base, A_INT("aggregate_function", agg), ##__VA_ARGS__)
    CHECK_F32(GX_OP_TREE_ENSEMBLE, T5(1), 1, &x, 0, 200, 1, 100, 1, 210, 0, 100, 2);
    CHECK_F32(GX_OP_TREE_ENSEMBLE, T5(0), 1, &x, 0, 100, 0.5f, 50, 0.5f, 105, 0, 50, 1);
    CHECK_F32(GX_OP_TREE_ENSEMBLE, T5(2), 1, &x, 0, 200, 1, 100, 1, 10, 0, 100, 2);
    CHECK_F32(GX_OP_TREE_ENSEMBLE, T5(3), 1, &x, 0, 200, 1, 100, 1, 200, 0, 100, 2);
    const float a = 1 / (1 + expf(199)), b = 1 / (1 + expf(99)), c = 1 / (1 + expf(210));
    CHECK_F32(GX_OP_TREE_ENSEMBLE, T5(1, A_INT("post_transform", 2)), 1, &x, 1e-7f, 1 - a, a,
              1 - b, b, 1 - c, c, 1 - expf(-98), expf(-98));
    /* float64 throughout: thresholds and weights of the input's dtype */
    gx_view xd = F64V(SHAPE(4, 2), 1, 0, 3, NAN, 2, 5, 3, 1);
    CHECK_F64(GX_OP_TREE_ENSEMBLE,
              NODE(S_TREES5(GX_F64, double, A_INT("aggregate_function", 1))), 1, &xd, 0, 200, 1,
              100, 1, 210, 0, 100, 2);
    /* ONNX Runtime: a root whose true and false ids are equal is the leaf
     * of the root's own index (leaf 1 here, not leaf 0) */
    gx_view x1 = F32V(SHAPE(2, 1), -5, 5);
    CHECK_F32(GX_OP_TREE_ENSEMBLE,
              NODE(A_INTS("nodes_featureids", 0, 0), A_U8T("nodes_modes", 0, 0),
                   A_F32T("nodes_splits", 0, 0), A_INTS("nodes_truenodeids", 0, 0),
                   A_INTS("nodes_trueleafs", 1, 1), A_INTS("nodes_falsenodeids", 1, 0),
                   A_INTS("nodes_falseleafs", 1, 1), A_INTS("tree_roots", 1),
                   A_INTS("leaf_targetids", 0, 0), A_F32T("leaf_weights", 5, 7),
                   A_INT("n_targets", 1)),
              1, &x1, 0, 7, 7);
    /* a cycle (node 0's true child is node 0) stops after as many steps
     * as there are nodes, at a node without weights */
    CHECK_F32(GX_OP_TREE_ENSEMBLE,
              NODE(A_INTS("nodes_featureids", 0), A_U8T("nodes_modes", 0), A_F32T("nodes_splits", 0),
                   A_INTS("nodes_truenodeids", 0), A_INTS("nodes_trueleafs", 0),
                   A_INTS("nodes_falsenodeids", 1), A_INTS("nodes_falseleafs", 1),
                   A_INTS("tree_roots", 0), A_INTS("leaf_targetids", 0, 0),
                   A_F32T("leaf_weights", 5, 6), A_INT("n_targets", 1)),
              1, &x1, 0, 0, 6);
    /* hostile attributes: refused at load, each with its reason */
    ot_expect_error(GX_OP_TREE_ENSEMBLE, WITH(base, A_INT("n_targets", 1)), 1,
                    &x, GX_EATTR, "TreeEnsemble: leaf 1 is for target 1 of 1");
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_INTS("nodes_truenodeids", 1, 1, 9)), 1, &x,
                    GX_EATTR, "TreeEnsemble: node 2 has a child out of range (3 interior nodes, "
                              "5 leaves; the *leafs flags 0 or 1)");
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_INTS("nodes_trueleafs", 0, 2, 1)), 1, &x,
                    GX_EATTR, NULL);
    ot_expect_error(GX_OP_TREE_ENSEMBLE, WITH(base, A_U8T("nodes_modes", 6, 7, 3)),
                    1, &x, GX_EATTR, "TreeEnsemble: node 1 has mode 7 (0-6)");
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_F32T("membership_values", NAN, 1)), 1, &x,
                    GX_EATTR, "TreeEnsemble: node 0 is BRANCH_MEMBER but its set in "
                              "membership_values is empty or missing");
    ot_expect_error(GX_OP_TREE_ENSEMBLE, NODE(S_TREES5(GX_F64, double)), 1, &x, GX_EATTR,
                    "TreeEnsemble: nodes_splits, leaf_weights and membership_values must be 1-D "
                    "float32 like the input");
    ot_expect_error(GX_OP_TREE_ENSEMBLE, WITH(base, A_INTS("tree_roots", 0, 3)),
                    1, &x, GX_EATTR, "TreeEnsemble: tree_roots[1] is 3; 3 interior nodes, 5 leaves");
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_INTS("nodes_falsenodeids", 0, 2)), 1, &x,
                    GX_EATTR, NULL);
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_INTS("nodes_featureids", 0, 1, 2)), 1, &x,
                    GX_EATTR, "TreeEnsemble: node 2 tests feature 2; the input has 2 columns");
    ot_expect_error(GX_OP_TREE_ENSEMBLE,
                    WITH(base, A_INT("aggregate_function", 4)), 1, &x,
                    GX_EATTR, NULL);
    ot_expect_error(GX_OP_TREE_ENSEMBLE, WITH(base, A_INT("n_targets", 0)), 1,
                    &x, GX_EATTR, "TreeEnsemble: n_targets 0 (1 or more needed)");
    gx_view xi = I64V(SHAPE(1, 2), 1, 2);
    ot_expect_error(GX_OP_TREE_ENSEMBLE, T5(1), 1, &xi, GX_EDTYPE, NULL);
#undef T5
}
END_TEST

/* Opset 3's float64 thresholds, weights and base values (*_as_tensor):
 * 0.1 as float64 is below 0.1f, so x = 0.1f goes right where a float32
 * threshold sends it left. */
START_TEST(test_tree_as_tensor)
{
    gx_view x = F32V(SHAPE(2, 1), 0.1f, 0.0f);
#define S_T3(vals)                                                                           \
    A_INTS("nodes_treeids", 0, 0, 0), A_INTS("nodes_nodeids", 0, 1, 2),                      \
        A_INTS("nodes_featureids", 0, 0, 0), vals,                                           \
        A_STRS("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF"), A_INTS("nodes_truenodeids", 1, 0, 0), \
        A_INTS("nodes_falsenodeids", 2, 0, 0), A_INTS("target_treeids", 0, 0),               \
        A_INTS("target_nodeids", 1, 2), A_INTS("target_ids", 0, 0)
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR,
              NODE(S_T3(A_F64T("nodes_values_as_tensor", 0.1, 0, 0)),
                   A_F64T("target_weights_as_tensor", 1, 2), A_F64T("base_values_as_tensor", 0.5)),
              1, &x, 0, 2.5f, 1.5f);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR,
              NODE(S_T3(A_FLOATS("nodes_values", 0.1, 0, 0)), A_FLOATS("target_weights", 1, 2),
                   A_FLOATS("base_values", 0.5)),
              1, &x, 0, 1.5f, 1.5f);
    ot_expect_error(GX_OP_TREE_ENSEMBLE_REGRESSOR,
                    NODE(S_T3(A_F64T("nodes_values_as_tensor", 0.1, 0)),
                         A_FLOATS("target_weights", 1, 2)),
                    1, &x, GX_EATTR, NULL);
    ot_expect_error(GX_OP_TREE_ENSEMBLE_REGRESSOR,
                    NODE(S_T3(A_FLOATS("nodes_values", 0.1, 0, 0)),
                         A_TENSOR("target_weights_as_tensor", GX_I64, int64_t, 1, 2)),
                    1, &x, GX_EATTR,
                    "TreeEnsembleRegressor: the *_as_tensor attributes must be 1-D float64 or "
                    "float32 tensors");
#undef S_T3
}
END_TEST

START_TEST(test_svm)
{
    gx_view x = F32V(SHAPE(2, 2), 2, 1, 0, 3);
    /* regressors: liblinear (x . c + rho), RBF, one class */
    CHECK_F32(GX_OP_SVM_REGRESSOR,
              NODE(A_FLOATS("coefficients", 1, 2), A_FLOATS("rho", 0.5)), 1, &x, 0, 4.5f, 6.5f);
    const float k1 = expf(-0.5f * 5), k2 = expf(-0.5f * 9);
    const gx_node *rbf = NODE(A_STR("kernel_type", "RBF"), A_FLOATS("kernel_params", 0.5, 0, 0),
                              A_INT("n_supports", 1), A_FLOATS("support_vectors", 0, 0),
                              A_FLOATS("coefficients", 2), A_FLOATS("rho", -0.1));
    CHECK_F32(GX_OP_SVM_REGRESSOR, rbf, 1, &x, 1e-7f, 2 * k1 - 0.1f, 2 * k2 - 0.1f);
    CHECK_F32(GX_OP_SVM_REGRESSOR,
              NODE(A_STR("kernel_type", "POLY"), A_FLOATS("kernel_params", 0.5, 1, 2),
                   A_INT("n_supports", 1), A_FLOATS("support_vectors", 1, 1),
                   A_FLOATS("coefficients", 1), A_FLOATS("rho", 0), A_INT("one_class", 1)),
              1, &x, 0, 1, 1);
    /* liblinear classifier: every class's score takes rho[0] */
    const gx_node *lin = NODE(A_FLOATS("coefficients", 1, 0, 0, 1, -1, -1), A_FLOATS("rho", 0.5),
                              A_INTS("classlabels_ints", 7, 8, 9),
                              A_FLOATS("kernel_params", 0, 0, 0));
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_SVM_CLASSIFIER, lin, 1, &x, nth, 2, o);
        s_check_i64(&o[0], 2, (int64_t[]){7, 8});
        s_check_f32(&o[1], 6, (float[]){2.5f, 1.5f, -2.5f, 0.5f, 3.5f, -2.5f}, 0);
    }
    /* libsvm, two classes of one vector each, LINEAR kernel: the pair's
     * score 1 . k0 - 1 . k1; a positive one votes for the first class;
     * scores [-s, s] (ONNX Runtime) */
#define S_SVC2(...)                                                                           \
    WITH(NODE(A_INTS("vectors_per_class", 1, 1), A_FLOATS("support_vectors", 1, 0, 0, 1),     \
              A_FLOATS("coefficients", 1, -1), A_FLOATS("rho", 0),                            \
              A_FLOATS("kernel_params", 0, 0, 0), A_STRS("classlabels_strings", "lo", "hi")), \
         ##__VA_ARGS__)
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_view o[2];
        s_run(GX_OP_SVM_CLASSIFIER, S_SVC2(), 1, &x, nth, 2, o);
        s_check_strs(&o[0], 2, STRS("lo", "hi"));
        s_check_f32(&o[1], 4, (float[]){-1, 1, 3, -3}, 0);
        /* Platt scaling: p = 1 - logistic(s a + b), the coupling of two
         * classes gives [p, 1 - p] (to its tolerance) */
        s_run(GX_OP_SVM_CLASSIFIER, S_SVC2(A_FLOATS("prob_a", -1), A_FLOATS("prob_b", 0)), 1, &x,
              nth, 2, o);
        const float p1 = 1 / (1 + expf(-1)), p2 = 1 / (1 + expf(3));
        s_check_f32(&o[1], 4, (float[]){p1, 1 - p1, p2, 1 - p2}, 2e-3f);
    }
    /* hostile attributes */
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_INTS("vectors_per_class", 1, 2)), 1, &x,
                    GX_EATTR, NULL);
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_INTS("vectors_per_class", 1, -1)), 1, &x,
                    GX_EATTR, "SVMClassifier: vectors_per_class[1] is -1");
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_FLOATS("prob_a", -1)), 1, &x, GX_EATTR,
                    "SVMClassifier: 1 prob_a but 0 prob_b");
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_STR("kernel_type", "CUBIC")), 1, &x, GX_EATTR,
                    "SVMClassifier: kernel_type \"CUBIC\" is not LINEAR, POLY, RBF or SIGMOID");
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_FLOATS("kernel_params", 1, 2)), 1, &x,
                    GX_EATTR, "SVMClassifier: 2 kernel_params; none or 3 (gamma, coef0, degree)");
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_STRS("classlabels_strings", "one")), 1, &x,
                    GX_EATTR, NULL);
    ot_expect_error(GX_OP_SVM_CLASSIFIER, S_SVC2(A_FLOATS("coefficients", 1)), 1, &x, GX_EATTR,
                    NULL);
    ot_expect_error(GX_OP_SVM_REGRESSOR,
                    NODE(A_INT("n_supports", 3), A_FLOATS("support_vectors", 1, 0),
                         A_FLOATS("coefficients", 1), A_FLOATS("rho", 0)),
                    1, &x, GX_EATTR, NULL);
    ot_expect_error(GX_OP_SVM_REGRESSOR, NODE(A_FLOATS("coefficients", 1, 2, 3), A_FLOATS("rho", 0)),
                    1, &x, GX_EATTR, NULL);
#undef S_SVC2
}
END_TEST

START_TEST(test_category_mapper)
{
    gx_view s = SV(SHAPE(3), "a", "zz", "b");
    const gx_node *m = NODE(A_STRS("cats_strings", "a", "b", "a"), A_INTS("cats_int64s", 1, 2, 3));
    CHECK_I64(GX_OP_CATEGORY_MAPPER, m, 1, &s, 3, -1, 2); /* the last "a" wins */
    gx_view i = I64V(SHAPE(2, 2), 2, 9, 3, 1);
    CHECK_STRS(GX_OP_CATEGORY_MAPPER, m, 1, &i, "b", "_Unused", "a", "a");
    CHECK_STRS(GX_OP_CATEGORY_MAPPER,
               NODE(A_STRS("cats_strings", "a", "b"), A_INTS("cats_int64s", 1, 2),
                    A_STR("default_string", "?")),
               1, &i, "b", "?", "?", "a");
    ot_expect_error(GX_OP_CATEGORY_MAPPER,
                    NODE(A_STRS("cats_strings", "a", "b"), A_INTS("cats_int64s", 1)), 1, &s,
                    GX_EATTR,
                    "CategoryMapper: cats_strings and cats_int64s must be lists of the same "
                    "length (2 and 1 given)");
    gx_view f = F32V(SHAPE(1), 1);
    ot_expect_error(GX_OP_CATEGORY_MAPPER, m, 1, &f, GX_EDTYPE, NULL);
}
END_TEST

/* ---- against ONNX Runtime ---- */

/* OrtApi slots, by index (onnxruntime_c_api.h; bench/bench_ort.c lists
 * them all): only those called here are typed. */
typedef struct s_ort_api {
    void *p0[2];
    const char *(*GetErrorMessage)(const void *st); /* 2 */
    void *(*CreateEnv)(int level, const char *id, void **env); /* 3 */
    void *p4[4];
    void *(*CreateSessionFromArray)(const void *env, const void *data, size_t len,
                                    const void *opts, void **out); /* 8 */
    void *(*Run)(void *sess, const void *ro, const char *const *in_names,
                 const void *const *ins, size_t n_in, const char *const *out_names, size_t n_out,
                 void **outs); /* 9 */
    void *(*CreateSessionOptions)(void **out); /* 10 */
    void *p11[37];
    void *(*CreateTensorAsOrtValue)(void *alloc, const int64_t *shape, size_t nd, int type,
                                    void **out); /* 48 */
    void *(*CreateTensorWithDataAsOrtValue)(const void *mem, void *data, size_t len,
                                            const int64_t *shape, size_t nd, int type,
                                            void **out); /* 49 */
    void *p50;
    void *(*GetTensorMutableData)(void *v, void **out);            /* 51 */
    void *(*FillStringTensor)(void *v, const char *const *s, size_t n); /* 52 */
    void *(*GetStringTensorDataLength)(const void *v, size_t *len); /* 53 */
    void *(*GetStringTensorContent)(const void *v, void *s, size_t len, size_t *offs,
                                    size_t n); /* 54 */
    void *p55[5];
    void *(*GetTensorElementType)(const void *info, int *out); /* 60 */
    void *(*GetDimensionsCount)(const void *info, size_t *out); /* 61 */
    void *(*GetDimensions)(const void *info, int64_t *dims, size_t n); /* 62 */
    void *p63[2];
    void *(*GetTensorTypeAndShape)(const void *v, void **out); /* 65 */
    void *p66[3];
    void *(*CreateCpuMemoryInfo)(int type, int mem, void **out); /* 69 */
    void *p70[8];
    void *(*GetAllocatorWithDefaultOptions)(void **out); /* 78 */
    void *p79[13];
    void (*ReleaseEnv)(void *p);          /* 92 */
    void (*ReleaseStatus)(void *p);       /* 93 */
    void (*ReleaseMemoryInfo)(void *p);   /* 94 */
    void (*ReleaseSession)(void *p);      /* 95 */
    void (*ReleaseValue)(void *p);        /* 96 */
    void *p97[2];
    void (*ReleaseTensorTypeAndShapeInfo)(void *p); /* 99 */
    void (*ReleaseSessionOptions)(void *p);         /* 100 */
} s_ort_api;
_Static_assert(offsetof(s_ort_api, CreateTensorAsOrtValue) == 48 * sizeof(void *), "slot 48");
_Static_assert(offsetof(s_ort_api, GetTensorElementType) == 60 * sizeof(void *), "slot 60");
_Static_assert(offsetof(s_ort_api, GetAllocatorWithDefaultOptions) == 78 * sizeof(void *),
               "slot 78");
_Static_assert(offsetof(s_ort_api, ReleaseEnv) == 92 * sizeof(void *), "slot 92");
_Static_assert(offsetof(s_ort_api, ReleaseSessionOptions) == 100 * sizeof(void *), "slot 100");

enum { S_ORT_FLOAT = 1, S_ORT_INT64 = 7, S_ORT_STRING = 8, S_ORT_DOUBLE = 11 };

static const s_ort_api *s_ort;
static void *s_ort_env, *s_ort_mem;

static void s_ort_ok(void *st, const char *what)
{
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", s_ort->GetErrorMessage(st));
        s_ort->ReleaseStatus(st);
        ck_abort_msg("ONNX Runtime: %s: %s", what, msg);
    }
}

/* ONNX Runtime loaded (once), or NULL with why set. */
static const s_ort_api *s_ort_load(char *why, size_t len)
{
    if (s_ort)
        return s_ort;
    char path[4096] = "";
    const char *env = getenv("GEXEC_ORT_LIB");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        glob_t gl;
        if (glob(GX_TEST_SRCDIR "/build/ort/node_modules/onnxruntime-node/bin/napi-v*/linux/"
#if defined(__aarch64__)
                                "arm64"
#else
                                "x64"
#endif
                                "/libonnxruntime.so.1",
                 0, NULL, &gl) == 0) {
            snprintf(path, sizeof path, "%s", gl.gl_pathv[0]);
            globfree(&gl);
        }
    }
    if (!*path) {
        snprintf(why, len, "not found (set GEXEC_ORT_LIB or run bench/ort.sh)");
        return NULL;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(why, len, "dlopen: %s", dlerror());
        return NULL;
    }
    typedef struct {
        const void *(*GetApi)(uint32_t v);
        const char *(*GetVersionString)(void);
    } base_t;
    const base_t *(*get_base)(void);
    *(void **)&get_base = dlsym(dl, "OrtGetApiBase");
    const base_t *b = get_base ? get_base() : NULL;
    const s_ort_api *api = b ? b->GetApi(22) : NULL;
    if (!api) {
        snprintf(why, len, "%s serves no API version 22", path);
        return NULL; /* the library stays loaded */
    }
    s_ort = api;
    s_ort_ok(api->CreateEnv(3, "check_ml", &s_ort_env), "CreateEnv");
    s_ort_ok(api->CreateCpuMemoryInfo(1, 0, &s_ort_mem), "CreateCpuMemoryInfo");
    printf("ml: ONNX Runtime %s from %s\n", b->GetVersionString(), path);
    return api;
}

/* The input named by the model file: *_s string [5], *_i int64 [5], else
 * [8, 4] (*_d float64, else float32) with zeros (the Imputer's) and values
 * on both sides of the trees' thresholds. */
static const char *const s_strs_in[5] = {"a", "b", "zz", "c", "a"};
static const int64_t s_ints_in[5] = {0, 1, 5, 2, -1};

static gx_tensor *s_model_input(const char *file)
{
    const char *end = strrchr(file, '.');
    if (end - file > 2 && memcmp(end - 2, "_s", 2) == 0)
        return gx_tensor_new_strings(1, (int64_t[]){5}, s_strs_in, NULL);
    if (end - file > 2 && memcmp(end - 2, "_i", 2) == 0)
        return gx_tensor_new_copy(GX_I64, 1, (int64_t[]){5}, s_ints_in, sizeof s_ints_in);
    float x[32];
    double xd[32];
    for (int i = 0; i < 32; i++)
        xd[i] = x[i] = (float)((i * 37 % 23) - 11) / 8.0f;
    if (end - file > 2 && memcmp(end - 2, "_d", 2) == 0)
        return gx_tensor_new_copy(GX_F64, 2, (int64_t[]){8, 4}, xd, sizeof xd);
    return gx_tensor_new_copy(GX_F32, 2, (int64_t[]){8, 4}, x, sizeof x);
}

/* The graph run in this process (compile, one frame); outputs copied into
 * out[] (strings too: their records are copied with the tensor). */
static void s_gexec_run(const gx_graph *g, const gx_tensor *x, gx_tensor **out)
{
    char err[512];
    const gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 1 << 26,
                                    .max_arena_bytes = 256ll << 20};
    gx_view in = ot_view(gx_tensor_dtype(x), (void *)gx_tensor_cdata(x), gx_tensor_ndim(x),
                         gx_tensor_shape(x));
    gxd_plan *plan = NULL;
    int rc = gxd_compile(g, &in, &lim, &plan, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "compile %s: %s", g->name, err);
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    rc = gxd_frame_init(&f, plan, arena, &in, &lim, &stop, err, sizeof err);
    if (rc == GX_OK)
        rc = gxd_exec_seq(&f);
    ck_assert_msg(rc == GX_OK, "run %s: %s", g->name, err);
    for (size_t k = 0; k < plan->n_outputs; k++) {
        const gx_view *v = gxd_frame_output(&f, k);
        if (v->dtype == GX_STRING) {
            const char *s[64];
            size_t n[64];
            ck_assert_int_le(v->numel, 64);
            for (int64_t i = 0; i < v->numel; i++) {
                const gx_strrec *r = ((const gx_strrec *const *)v->data)[i];
                s[i] = gx_str_bytes(r), n[i] = gx_str_len(r);
            }
            out[k] = gx_tensor_new_strings(v->ndim, v->shape, s, n);
        } else {
            out[k] = gx_tensor_new_copy(v->dtype, v->ndim, v->shape, v->data,
                                        (size_t)v->numel * gx_dtype_size(v->dtype));
        }
        ck_assert_ptr_nonnull(out[k]);
    }
    gxd_frame_fini(&f);
    free(arena);
    gxd_plan_destroy(&plan);
}

/* ONNX Runtime's output v against gexec's t. */
static void s_compare(const char *model, const char *name, void *v, const gx_tensor *t)
{
    void *info;
    int type;
    size_t nd;
    int64_t dims[8], numel = 1;
    s_ort_ok(s_ort->GetTensorTypeAndShape(v, &info), "GetTensorTypeAndShape");
    s_ort_ok(s_ort->GetTensorElementType(info, &type), "GetTensorElementType");
    s_ort_ok(s_ort->GetDimensionsCount(info, &nd), "GetDimensionsCount");
    ck_assert_uint_le(nd, 8);
    s_ort_ok(s_ort->GetDimensions(info, dims, nd), "GetDimensions");
    s_ort->ReleaseTensorTypeAndShapeInfo(info);
    for (size_t d = 0; d < nd; d++)
        numel *= dims[d];
    ck_assert_msg((int)nd == gx_tensor_ndim(t) && numel == gx_tensor_numel(t),
                  "%s %s: ONNX Runtime gives rank %zu, %lld elements; gexec rank %d, %lld",
                  model, name, nd, (long long)numel, gx_tensor_ndim(t),
                  (long long)gx_tensor_numel(t));
    if (type == S_ORT_STRING) {
        ck_assert_int_eq(gx_tensor_dtype(t), GX_STRING);
        size_t len, offs[64];
        s_ort_ok(s_ort->GetStringTensorDataLength(v, &len), "GetStringTensorDataLength");
        char *buf = malloc(len + 1);
        s_ort_ok(s_ort->GetStringTensorContent(v, buf, len, offs, (size_t)numel),
                 "GetStringTensorContent");
        for (int64_t i = 0; i < numel; i++) {
            size_t n, end = i + 1 < numel ? offs[i + 1] : len;
            const char *g = gx_tensor_string(t, i, &n);
            ck_assert_msg(n == end - offs[i] && memcmp(g, buf + offs[i], n) == 0,
                          "%s %s[%lld]: gexec \"%s\", ONNX Runtime \"%.*s\"", model, name,
                          (long long)i, g, (int)(end - offs[i]), buf + offs[i]);
        }
        free(buf);
        return;
    }
    void *data;
    s_ort_ok(s_ort->GetTensorMutableData(v, &data), "GetTensorMutableData");
    if (type == S_ORT_INT64) {
        ck_assert_int_eq(gx_tensor_dtype(t), GX_I64);
        for (int64_t i = 0; i < numel; i++)
            ck_assert_msg(((int64_t *)data)[i] == ((const int64_t *)gx_tensor_cdata(t))[i],
                          "%s %s[%lld]: gexec %lld, ONNX Runtime %lld", model, name,
                          (long long)i, (long long)((const int64_t *)gx_tensor_cdata(t))[i],
                          (long long)((int64_t *)data)[i]);
        return;
    }
    if (type == S_ORT_DOUBLE) {
        /* float64 throughout: equal to 1e-12; ONNX Runtime's transformed
         * scores are float32 values (computed in float32): float32 values
         * too, equal as float32 */
        ck_assert_int_eq(gx_tensor_dtype(t), GX_F64);
        for (int64_t i = 0; i < numel; i++) {
            const double a = ((const double *)gx_tensor_cdata(t))[i], b = ((double *)data)[i];
            const bool f32 = (double)(float)b == b;
            const double tol = f32 ? 1e-5 : 1e-12;
            ck_assert_msg(!f32 || (double)(float)a == a,
                          "%s %s[%lld]: gexec %.17g is no float32 value like ONNX Runtime's", model,
                          name, (long long)i, a);
            ck_assert_msg(fabs(a - b) <= tol + tol * fabs(b),
                          "%s %s[%lld]: gexec %.17g, ONNX Runtime %.17g", model, name,
                          (long long)i, a, b);
        }
        return;
    }
    ck_assert_int_eq(type, S_ORT_FLOAT);
    ck_assert_int_eq(gx_tensor_dtype(t), GX_F32);
    for (int64_t i = 0; i < numel; i++) {
        const float a = ((const float *)gx_tensor_cdata(t))[i], b = ((float *)data)[i];
        ck_assert_msg(fabsf(a - b) <= 1e-5f + 1e-5f * fabsf(b), "%s %s[%lld]: gexec %.9g, ONNX "
                      "Runtime %.9g", model, name, (long long)i, a, b);
    }
}

START_TEST(test_vs_ort)
{
    char why[600];
    if (!s_ort_load(why, sizeof why)) {
        printf("ml: ONNX Runtime: %s; the comparison is skipped\n", why);
        return;
    }
    glob_t gl;
    ck_assert_int_eq(glob(GX_TEST_SRCDIR "/tests/data/ml/*.onnx", 0, NULL, &gl), 0);
    int outputs = 0;
    for (size_t m = 0; m < gl.gl_pathc; m++) {
        const char *file = gl.gl_pathv[m], *base = strrchr(file, '/') + 1;
        FILE *fp = fopen(file, "rb");
        ck_assert_ptr_nonnull(fp);
        static char bytes[1 << 18];
        size_t len = fread(bytes, 1, sizeof bytes, fp);
        fclose(fp);
        ck_assert_uint_lt(len, sizeof bytes);
        gx_graph *g = NULL;
        char err[1024];
        ck_assert_msg(gx_graph_parse_onnx(bytes, len, NULL, &g, err, sizeof err) == GX_OK, "%s: %s",
                      base, err);
        gx_tensor *x = s_model_input(base), *mine[4] = {0};
        ck_assert_ptr_nonnull(x);
        s_gexec_run(g, x, mine);

        void *sess = NULL, *so = NULL, *xin = NULL, *outs[4] = {0};
        s_ort_ok(s_ort->CreateSessionOptions(&so), "CreateSessionOptions");
        s_ort_ok(s_ort->CreateSessionFromArray(s_ort_env, bytes, len, so, &sess), base);
        s_ort->ReleaseSessionOptions(so);
        if (gx_tensor_dtype(x) == GX_STRING) {
            void *alloc;
            s_ort_ok(s_ort->GetAllocatorWithDefaultOptions(&alloc), "allocator");
            s_ort_ok(s_ort->CreateTensorAsOrtValue(alloc, gx_tensor_shape(x), 1, S_ORT_STRING,
                                                   &xin),
                     "CreateTensorAsOrtValue");
            s_ort_ok(s_ort->FillStringTensor(xin, s_strs_in, 5), "FillStringTensor");
        } else {
            s_ort_ok(s_ort->CreateTensorWithDataAsOrtValue(
                         s_ort_mem, (void *)gx_tensor_cdata(x),
                         (size_t)gx_tensor_numel(x) * gx_dtype_size(gx_tensor_dtype(x)),
                         gx_tensor_shape(x), (size_t)gx_tensor_ndim(x),
                         gx_tensor_dtype(x) == GX_I64   ? S_ORT_INT64
                         : gx_tensor_dtype(x) == GX_F64 ? S_ORT_DOUBLE
                                                        : S_ORT_FLOAT,
                         &xin),
                     "CreateTensorWithDataAsOrtValue");
        }
        const char *in_name = g->inputs[0].name, *out_names[4];
        ck_assert_uint_le(g->n_outputs, 4);
        for (size_t k = 0; k < g->n_outputs; k++)
            out_names[k] = g->outputs[k].name;
        s_ort_ok(s_ort->Run(sess, NULL, &in_name, (const void *const *)&xin, 1, out_names,
                            g->n_outputs, outs),
                 base);
        for (size_t k = 0; k < g->n_outputs; k++) {
            s_compare(base, out_names[k], outs[k], mine[k]);
            s_ort->ReleaseValue(outs[k]);
            gx_tensor_destroy(&mine[k]);
            outputs++;
        }
        s_ort->ReleaseValue(xin);
        s_ort->ReleaseSession(sess);
        gx_tensor_destroy(&x);
        gx_graph_destroy(&g);
    }
    printf("ml: %zu models, %d outputs equal to ONNX Runtime's\n", gl.gl_pathc, outputs);
    ck_assert_uint_ge(gl.gl_pathc, 1);
    globfree(&gl);
}
END_TEST

Suite *ml_suite(void)
{
    Suite *s = suite_create("ml");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_label_encoder);
    tcase_add_test(tc, test_preprocess);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_tree_regressor);
    tcase_add_test(tc, test_tree_classifier);
    tcase_add_test(tc, test_tree_ensemble5);
    tcase_add_test(tc, test_tree_as_tensor);
    tcase_add_test(tc, test_svm);
    tcase_add_test(tc, test_category_mapper);
    tcase_add_test(tc, test_vs_ort);
    suite_add_tcase(s, tc);
    return s;
}
