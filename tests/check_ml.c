/*
 * The ai.onnx.ml ops (ops/schema_ml.c, ops/cpu/ml.c), each on 1 and 3
 * shares against values worked by hand: LabelEncoder in each opset's form
 * and each key and value type, Scaler, Normalizer, Binarizer, Imputer,
 * ArrayFeatureExtractor, LinearRegressor and LinearClassifier with their
 * post transforms and binary forms, the tree ensembles (nodes listed out of
 * order, every aggregate, missing values, the binary classifier's ONNX
 * Runtime scores), and the attribute errors.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define STRS(...) ((const char *const[]){__VA_ARGS__})
#define NSTR(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})
#define A_FLOATS(key, ...)                                                    \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOATS,                 \
               .floats = (double[]){__VA_ARGS__},                             \
               .n = sizeof((double[]){__VA_ARGS__}) / sizeof(double)})
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)

static gx_tensor *s_keep[64];
static int s_nkeep;

static void s_teardown(void)
{
    while (s_nkeep > 0)
        gx_tensor_destroy(&s_keep[--s_nkeep]);
    ot_free_all();
}

static gx_tensor *s_kept(gx_tensor *t)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_int_lt(s_nkeep, 64);
    return s_keep[s_nkeep++] = t;
}

/* A STRINGS attribute (a 1-D string tensor). */
#define A_STRS(key, ...)                                                      \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_TENSOR,                 \
               .t = s_kept(gx_tensor_new_strings(1, (int64_t[]){NSTR(__VA_ARGS__)},    \
                                                 STRS(__VA_ARGS__), NULL))})
#define SV(shape, ...) s_sv(shape, STRS(__VA_ARGS__))

static gx_view s_sv(int ndim, const int64_t *shape, const char *const *strs)
{
    gx_tensor *t = s_kept(gx_tensor_new_strings(ndim, shape, strs, NULL));
    return ot_view(GX_STRING, t->data, ndim, shape);
}

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
    gx_tensor *keys = s_kept(gx_tensor_new_copy(GX_I64, 1, (int64_t[]){2}, (int64_t[]){3, 4}, 16));
    gx_view k = I64V(SHAPE(2), 4, 0);
    CHECK_STRS(GX_OP_LABEL_ENCODER,
               NODE(((gx_attr){.name = "keys_tensor", .type = GX_ATTR_TENSOR, .t = keys}),
                    ((gx_attr){.name = "values_tensor", .type = GX_ATTR_TENSOR,
                               .t = s_kept(gx_tensor_new_strings(1, (int64_t[]){2},
                                                                 STRS("t", "f"), NULL))}),
                    ((gx_attr){.name = "default_tensor", .type = GX_ATTR_TENSOR,
                               .t = s_kept(gx_tensor_new_strings(1, (int64_t[]){1}, STRS("none"),
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
    gx_view x = F32V(SHAPE(3, 2), 0, 1, 1, -1, NAN, 5);
#define REG(agg, ...)                                                                         \
    NODE(S_TREES, A_INTS("target_treeids", 0, 0, 1, 1), A_INTS("target_nodeids", 1, 2, 1, 2), \
         A_INTS("target_ids", 0, 0, 0, 0), A_FLOATS("target_weights", 1, 2, 10, 20),          \
         A_FLOATS("base_values", 100), A_STR("aggregate_function", agg), ##__VA_ARGS__)
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("SUM"), 1, &x, 0, 121, 112, 121);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("AVERAGE"), 1, &x, 0, 110.5f, 106, 110.5f);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("MIN"), 1, &x, 0, 101, 102, 101);
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, REG("MAX"), 1, &x, 0, 120, 110, 120);
    /* two targets: tree 1 votes for target 1, SOFTMAX mixes them */
    const gx_node *two = NODE(S_TREES, A_INTS("target_treeids", 0, 0, 1, 1),
                              A_INTS("target_nodeids", 1, 2, 1, 2), A_INTS("target_ids", 0, 0, 1, 1),
                              A_FLOATS("target_weights", 1, 2, 1, 3), A_INT("n_targets", 2),
                              A_STR("post_transform", "SOFTMAX"));
    const float a = 1 / (1 + expf(2)), b = 1 / (1 + expf(-1));
    CHECK_F32(GX_OP_TREE_ENSEMBLE_REGRESSOR, two, 1, &x, 1e-6f, a, 1 - a, b, 1 - b, a, 1 - a);
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

Suite *ml_suite(void)
{
    Suite *s = suite_create("ml");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, s_teardown);
    tcase_add_test(tc, test_label_encoder);
    tcase_add_test(tc, test_preprocess);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_tree_regressor);
    tcase_add_test(tc, test_tree_classifier);
    suite_add_tcase(s, tc);
    return s;
}
