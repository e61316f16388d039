/* Status codes, dtypes, shapes and tensors. */
#include <string.h>

#include "core/internal.h"
#include "tests/testutil.h"

START_TEST(test_status_names_round_trip)
{
#define CHECK_ONE(name, value, msg)                                           \
    ck_assert_str_eq(gx_status_name(value), "GX_" #name);                     \
    ck_assert_int_eq(gx_status_from_name("GX_" #name), value);                \
    ck_assert_str_eq(gx_strerror(value), msg);
    GX_STATUS_LIST(CHECK_ONE)
#undef CHECK_ONE
    ck_assert_str_eq(gx_status_name(-9999), "GX_EUNKNOWN");
    ck_assert_int_eq(gx_status_from_name("nonsense"), GX_EINTERNAL);
    ck_assert_int_eq(gx_status_from_name(NULL), GX_EINTERNAL);
}
END_TEST

START_TEST(test_dtypes)
{
    gx_dtype dt;
    ck_assert_int_eq(gx_dtype_parse("float32", &dt), GX_OK);
    ck_assert_int_eq(dt, GX_F32);
    ck_assert_int_eq(gx_dtype_parse("i64", &dt), GX_OK);
    ck_assert_int_eq(dt, GX_I64);
    ck_assert_int_eq(gx_dtype_parse("float99", &dt), GX_EDTYPE);
    for (int i = 0; i < GX_DTYPE_COUNT; i++) {
        ck_assert_int_eq(gx_dtype_parse(gx_dtype_name((gx_dtype)i), &dt), GX_OK);
        ck_assert_int_eq(dt, i);
        ck_assert_uint_gt(gx_dtype_size((gx_dtype)i), 0);
    }
    ck_assert_ptr_null(gx_dtype_name(GX_DTYPE_COUNT));
    ck_assert_uint_eq(gx_dtype_size(GX_DTYPE_COUNT), 0);
}
END_TEST

START_TEST(test_shapes_overflow)
{
    int64_t ok[3] = {2, 3, 4}, huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40}, neg[1] = {-1};
    size_t n;
    ck_assert_int_eq(gx_shape_numel(3, ok, INT64_MAX), 24);
    ck_assert_int_eq(gx_shape_numel(2, huge, INT64_MAX), -1);
    ck_assert_int_eq(gx_shape_numel(1, neg, INT64_MAX), -1);
    ck_assert(gx_shape_nbytes(GX_F32, 3, ok, &n) && n == 96);
    ck_assert(!gx_shape_nbytes(GX_F32, 2, huge, &n));
    ck_assert_ptr_null(gx_tensor_new(GX_F32, 2, huge));
    ck_assert_ptr_null(gx_tensor_new(GX_F32, GX_MAX_DIMS + 1, ok));
    char buf[64];
    ck_assert_str_eq(gx_shape_str(3, ok, buf, sizeof buf), "[2,3,4]");
    ck_assert_str_eq(gx_shape_str(0, ok, buf, sizeof buf), "[]");
}
END_TEST

START_TEST(test_tensor_lifetime)
{
    int64_t shape[2] = {2, 3};
    float data[6] = {1, 2, 3, 4, 5, 6};
    gx_tensor *t = gx_tensor_new_copy(GX_F32, 2, shape, data, sizeof data);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gx_tensor_numel(t), 6);
    ck_assert_uint_eq((uintptr_t)gx_tensor_data(t) % GX_ALIGN, 0);
    ck_assert_mem_eq(gx_tensor_cdata(t), data, sizeof data);
    ck_assert_ptr_null(gx_tensor_new_copy(GX_F32, 2, shape, data, 5)); /* size mismatch */
    gx_tensor_destroy(&t);
    ck_assert_ptr_null(t);
    gx_tensor_destroy(&t); /* NULL is fine */
    gx_tensor *scalar = gx_tensor_new(GX_I64, 0, NULL);
    ck_assert_ptr_nonnull(scalar);
    ck_assert_int_eq(gx_tensor_numel(scalar), 1);
    gx_tensor_destroy(&scalar);
}
END_TEST

START_TEST(test_graph_builder)
{
    gx_graph *g = gx_graph_new("g");
    int64_t s[2] = {1, 4};
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, s), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "", GX_F32, 2, s), GX_EINVAL);
    gx_node *n = gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(n->name, "node0");
    ck_assert_int_eq(gx_node_set_int(n, "a", 1), GX_OK);
    ck_assert_int_eq(gx_node_set_float(n, "a", 1.0), GX_EATTR); /* twice */
    ck_assert_int_eq(gx_node_set_ints(n, "empty", NULL, 0), GX_OK);
    ck_assert_ptr_null(gx_graph_add_node(g, "", NULL, 0, NULL, 0, NULL));
    ck_assert_ptr_null(gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){""}));
    gx_tensor *t = gx_tensor_new(GX_F32, 2, s);
    ck_assert_int_eq(gx_graph_add_const(g, "", &t), GX_EINVAL);
    ck_assert_ptr_null(t); /* ownership moved even on failure */
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_uint_eq(gx_graph_node_count(g), 1);
    ck_assert_str_eq(gx_graph_input_name(g, 0), "x");
    ck_assert_ptr_null(gx_graph_input_name(g, 1));
    gx_graph_destroy(&g);
    ck_assert_ptr_null(g);
}
END_TEST

Suite *status_suite(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_status_names_round_trip);
    tcase_add_test(tc, test_dtypes);
    tcase_add_test(tc, test_shapes_overflow);
    tcase_add_test(tc, test_tensor_lifetime);
    tcase_add_test(tc, test_graph_builder);
    suite_add_tcase(s, tc);
    return s;
}
