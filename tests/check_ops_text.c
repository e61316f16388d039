/*
 * Op tests of the text family (GX_OPS_TEXT in ops/op.h): TfIdfVectorizer
 * on hand-counted n-grams (skips, 1-D and 2-D input, int32 and int64, the
 * three modes with and without weights), rows split among threads
 * (ot_check_threads), and the errors infer gives. The ONNX node tests
 * (test_tfidfvectorizer_*) check it against the reference.
 */
#include <check.h>
#include <string.h>

#include "tests/optest.h"
#include "tests/testutil.h"

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})
#define A_FLOATS(key, ...)                                                    \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOATS,                 \
               .floats = (double[]){__VA_ARGS__},                             \
               .n = sizeof((double[]){__VA_ARGS__}) / sizeof(double)})

/* The pool: 1-grams 1 and 3 (columns 0 and 1), the 2-gram (1, 2) (column
 * 2); grams of 1 to 2 tokens, skips up to skip. */
#define S_TFIDF(mode, skip, ...)                                              \
    NODE(A_INT("min_gram_length", 1), A_INT("max_gram_length", 2),            \
         A_INT("max_skip_count", skip), A_STR("mode", mode),                  \
         A_INTS("ngram_counts", 0, 2), A_INTS("ngram_indexes", 0, 1, 2),      \
         A_INTS("pool_int64s", 1, 3, 1, 2), ##__VA_ARGS__)

static void s_expect(const gx_node *node, gx_view x, gx_view want)
{
    gx_view out[1];
    ot_check_threads(GX_OP_TFIDF_VECTORIZER, node, 1, &x, 1, out);
    ck_assert_int_eq(out[0].dtype, GX_F32);
    ot_check_shape(&out[0], want.ndim, want.shape);
    ck_assert(ot_close(out[0].data, want.data, want.numel, 0, 0));
}

START_TEST(test_tfidf_hand)
{
    /* 1 twice, 3 once, (1, 2) twice; at skip 1 the pairs 2 apart add none */
    s_expect(S_TFIDF("TF", 0), I64V(SHAPE(5), 1, 2, 3, 1, 2), F32V(SHAPE(3), 2, 1, 2));
    s_expect(S_TFIDF("TF", 1), I64V(SHAPE(5), 1, 2, 3, 1, 2), F32V(SHAPE(3), 2, 1, 2));
    /* (1, 2) only across a skip of 1; 1-grams are counted once */
    s_expect(S_TFIDF("TF", 0), I64V(SHAPE(3), 1, 5, 2), F32V(SHAPE(3), 1, 0, 0));
    s_expect(S_TFIDF("TF", 1), I64V(SHAPE(3), 1, 5, 2), F32V(SHAPE(3), 1, 0, 1));
    s_expect(S_TFIDF("TF", 3), I32V(SHAPE(2, 2), 1, 2, 3, 3), F32V(SHAPE(2, 3), 1, 0, 1, 0, 2, 0));
    /* the modes */
    s_expect(S_TFIDF("IDF", 0), I64V(SHAPE(5), 1, 2, 3, 1, 2), F32V(SHAPE(3), 1, 1, 1));
    s_expect(S_TFIDF("IDF", 0, A_FLOATS("weights", 0.5, 0.25, 2)), I64V(SHAPE(3), 1, 1, 7),
             F32V(SHAPE(3), 0.5f, 0, 0));
    s_expect(S_TFIDF("TFIDF", 0, A_FLOATS("weights", 0.5, 0.25, 2)),
             I64V(SHAPE(5), 1, 2, 3, 1, 2), F32V(SHAPE(3), 1, 0.25f, 4));
    /* only 2-grams */
    s_expect(NODE(A_INT("min_gram_length", 2), A_INT("max_gram_length", 2),
                  A_INT("max_skip_count", 0), A_STR("mode", "TF"), A_INTS("ngram_counts", 0, 2),
                  A_INTS("ngram_indexes", 0, 1, 2), A_INTS("pool_int64s", 1, 3, 1, 2)),
             I64V(SHAPE(5), 1, 2, 3, 1, 2), F32V(SHAPE(3), 0, 0, 2));
}
END_TEST

START_TEST(test_tfidf_threads)
{
    int64_t tok[40 * 9];
    for (int i = 0; i < 40 * 9; i++)
        tok[i] = (i * 7) % 5;
    gx_view x = ot_view(GX_I64, ot_copy(tok, sizeof tok), SHAPE(40, 9));
    gx_view out[1];
    ot_check_threads(GX_OP_TFIDF_VECTORIZER, S_TFIDF("TF", 2), 1, &x, 1, out);
    ot_check_shape(&out[0], SHAPE(40, 3));
}
END_TEST

START_TEST(test_tfidf_errors)
{
    gx_view x = I64V(SHAPE(3), 1, 2, 3);
    ot_expect_error(GX_OP_TFIDF_VECTORIZER, S_TFIDF("BM25", 0), 1, &x, GX_EATTR,
                    "TfIdfVectorizer: mode \"BM25\" is not TF, IDF or TFIDF");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER, S_TFIDF("TF", 0), 1, (gx_view[]){F32V(SHAPE(1), 1)},
                    GX_EDTYPE,
                    "TfIdfVectorizer: input is float32; int32 or int64 token ids (the pool is "
                    "pool_int64s) needed");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER, S_TFIDF("IDF", 0, A_FLOATS("weights", 1)), 1, &x,
                    GX_EATTR, "TfIdfVectorizer: 1 weights for 3 output columns");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER,
                    NODE(A_INT("min_gram_length", 1), A_INT("max_gram_length", 2),
                         A_INT("max_skip_count", 0), A_STR("mode", "TF"),
                         A_INTS("ngram_counts", 0, 3), A_INTS("ngram_indexes", 0, 1),
                         A_INTS("pool_int64s", 1, 3, 1, 2)),
                    1, &x, GX_EATTR,
                    "TfIdfVectorizer: ngram_counts[1] = 3 does not start a whole number of "
                    "2-grams within the pool of 4");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER,
                    NODE(A_INT("min_gram_length", 1), A_INT("max_gram_length", 2),
                         A_INT("max_skip_count", 0), A_STR("mode", "TF"),
                         A_INTS("ngram_counts", 0, 2), A_INTS("ngram_indexes", 0, 1),
                         A_INTS("pool_int64s", 1, 3, 1, 2)),
                    1, &x, GX_EATTR, "TfIdfVectorizer: 2 ngram_indexes for the pool's 3 n-grams");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER,
                    NODE(A_INT("min_gram_length", 3), A_INT("max_gram_length", 2),
                         A_INT("max_skip_count", 0), A_STR("mode", "TF"),
                         A_INTS("ngram_counts", 0), A_INTS("ngram_indexes", 0),
                         A_INTS("pool_int64s", 1)),
                    1, &x, GX_EATTR, NULL);
}
END_TEST

/* The pool of S_TFIDF as strings: "one", "three", then ("one", "two"). */
#define S_TFIDF_STR(mode, skip)                                               \
    NODE(A_INT("min_gram_length", 1), A_INT("max_gram_length", 2),            \
         A_INT("max_skip_count", skip), A_STR("mode", mode),                  \
         A_INTS("ngram_counts", 0, 2), A_INTS("ngram_indexes", 0, 1, 2),      \
         ((gx_attr){.name = (char *)"pool_strings", .type = GX_ATTR_TENSOR, .t = pool}))

START_TEST(test_tfidf_strings)
{
    gx_tensor *pool = gx_tensor_new_strings(1, (int64_t[]){4},
                                            (const char *[]){"one", "three", "one", "two"}, NULL);
    gx_tensor *tok = gx_tensor_new_strings(
        2, (int64_t[]){2, 5}, (const char *[]){"one", "two", "three", "one", "two", /* row 0 */
                                               "one", "x", "two", "thre", "three"},
        NULL);
    gx_view x = ot_view(GX_STRING, gx_tensor_data(tok), 2, (int64_t[]){2, 5});
    /* the same counts as the token ids of test_tfidf_hand */
    s_expect(S_TFIDF_STR("TF", 0), x, F32V(SHAPE(2, 3), 2, 1, 2, 1, 1, 0));
    s_expect(S_TFIDF_STR("TF", 1), x, F32V(SHAPE(2, 3), 2, 1, 2, 1, 1, 1));
    gx_view out[1];
    ot_check_threads(GX_OP_TFIDF_VECTORIZER, S_TFIDF_STR("TF", 2), 1, &x, 1, out);
    /* string tokens need the string pool, and the other way round */
    ot_expect_error(GX_OP_TFIDF_VECTORIZER, S_TFIDF("TF", 0), 1, &x, GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_TFIDF_VECTORIZER, S_TFIDF_STR("TF", 0), 1,
                    (gx_view[]){I64V(SHAPE(2), 1, 2)}, GX_EDTYPE,
                    "TfIdfVectorizer: input is int64; string tokens (the pool is pool_strings) "
                    "needed");
    ot_expect_error(GX_OP_TFIDF_VECTORIZER,
                    S_TFIDF("TF", 0, ((gx_attr){.name = (char *)"pool_strings",
                                                 .type = GX_ATTR_TENSOR, .t = pool})),
                    1, &x, GX_EATTR,
                    "TfIdfVectorizer: exactly one of pool_int64s and pool_strings needed");
    gx_tensor_destroy(&tok);
    gx_tensor_destroy(&pool);
}
END_TEST

Suite *ops_text_suite(void)
{
    Suite *s = suite_create("ops_text");
    TCase *tc = tcase_create("text");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_tfidf_hand);
    tcase_add_test(tc, test_tfidf_threads);
    tcase_add_test(tc, test_tfidf_strings);
    tcase_add_test(tc, test_tfidf_errors);
    suite_add_tcase(s, tc);
    return s;
}
