/*
 * Sequence and optional values (daemon/exec/values.c): each op against
 * hand-computed values, compiled with gxd_compile and run through a frame
 * as a worker does; a sequence graph input and output; the errors a bad
 * value gets; then a sequence and a none through a real gexecd and back.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "tests/testutil.h"

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       size_t n_out, const char *const *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, n_out, out);
    ck_assert_ptr_nonnull(n);
    return n;
}

static void s_const_i64(gx_graph *g, const char *name, int64_t v)
{
    gx_tensor *t = gx_tensor_new_copy(GX_I64, 0, NULL, &v, sizeof v);
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* Compiles g for inputs and runs it; out[k] become copies of its outputs
 * (gx_tensor, any kind; the caller destroys them). The status, err why. */
static int s_run(const gx_graph *g, const gx_view *inputs, gx_tensor **out, char *err,
                 size_t errlen)
{
    gxd_plan *plan = NULL;
    int rc = gxd_compile(g, inputs, &s_lim, &plan, err, errlen);
    if (rc < 0)
        return rc;
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    rc = gxd_frame_init(&f, plan, arena, inputs, &s_lim, &stop, err, errlen);
    if (rc == GX_OK)
        rc = gxd_exec_seq(&f);
    for (size_t k = 0; rc == GX_OK && k < plan->n_outputs; k++) {
        const gx_view *v = gxd_frame_output(&f, k);
        if (v->kind == GX_KIND_SEQUENCE)
            out[k] = gx_tensor_clone(v->data);
        else if (v->kind == GX_KIND_NONE)
            out[k] = gx_none_new();
        else
            out[k] = gx_tensor_new_copy(v->dtype, v->ndim, v->shape, v->data,
                                        (size_t)v->numel * gx_dtype_size(v->dtype));
        ck_assert_ptr_nonnull(out[k]);
    }
    gxd_frame_fini(&f);
    free(arena);
    gxd_plan_destroy(&plan);
    return rc;
}

static gx_view s_view(gx_dtype dt, int ndim, const int64_t *shape, void *data)
{
    gx_view v = {.dtype = dt, .ndim = ndim, .data = data};
    if (ndim)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    v.numel = gx_shape_numel(ndim, shape, INT64_MAX);
    return v;
}

static void s_expect_f32(const gx_tensor *t, int ndim, const int64_t *shape, const float *want)
{
    ck_assert_int_eq(t->kind, GX_KIND_TENSOR);
    ck_assert_int_eq(t->dtype, GX_F32);
    ck_assert_int_eq(t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_int_eq(t->shape[d], shape[d]);
    ck_assert(gxt_allclose(t->data, want, (size_t)t->numel, 0, 0));
}

/* x [2,3] = 1..6: SplitToSequence along axis 1 (three [2,1] columns),
 * SequenceLength, SequenceAt(-1), ConcatFromSequence back along axis 1
 * and stacked along a new axis 0. */
START_TEST(test_split_concat)
{
    gx_graph *g = gx_graph_new("split");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 3}), GX_OK);
    s_const_i64(g, "last", -1);
    gx_node_set_int(s_node(g, "SplitToSequence", NAMES("x"), NAMES("s")), "axis", 1);
    s_node(g, "SequenceLength", NAMES("s"), NAMES("n"));
    s_node(g, "SequenceAt", NAMES("s", "last"), NAMES("c"));
    gx_node_set_int(s_node(g, "ConcatFromSequence", NAMES("s"), NAMES("y")), "axis", 1);
    gx_node *st = s_node(g, "ConcatFromSequence", NAMES("s"), NAMES("z"));
    gx_node_set_int(st, "axis", 0);
    gx_node_set_int(st, "new_axis", 1);
    s_node(g, "Neg", NAMES("c"), NAMES("nc")); /* a kernel after a sequence op: dynamic */
    const char *outs[] = {"n", "nc", "y", "z", "s"};
    for (size_t i = 0; i < 5; i++)
        gx_graph_add_output(g, outs[i]);
    float x[6] = {1, 2, 3, 4, 5, 6};
    gx_view in[1] = {s_view(GX_F32, 2, (int64_t[]){2, 3}, x)};
    gx_tensor *out[5] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(out[0]->dtype, GX_I64);
    ck_assert_int_eq(*(int64_t *)out[0]->data, 3);
    s_expect_f32(out[1], 2, (int64_t[]){2, 1}, (float[]){-3, -6});
    s_expect_f32(out[2], 2, (int64_t[]){2, 3}, x);
    s_expect_f32(out[3], 3, (int64_t[]){3, 2, 1}, (float[]){1, 4, 2, 5, 3, 6});
    ck_assert_int_eq(out[4]->kind, GX_KIND_SEQUENCE);
    ck_assert_uint_eq(gx_sequence_length(out[4]), 3);
    s_expect_f32(gx_sequence_item(out[4], 1), 2, (int64_t[]){2, 1}, (float[]){2, 5});
    for (size_t i = 0; i < 5; i++)
        gx_tensor_destroy(&out[i]);
    gx_graph_destroy(&g);
}
END_TEST

/* split given as lengths {1, 2} and as a chunk size 2 (pieces 2 and 1),
 * keepdims 0 without split */
START_TEST(test_split_lengths)
{
    gx_graph *g = gx_graph_new("lengths");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){3}), GX_OK);
    gx_tensor *lens = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){2}, (int64_t[]){1, 2}, 16);
    ck_assert_int_eq(gx_graph_add_const(g, "lens", &lens), GX_OK);
    s_const_i64(g, "two", 2);
    s_node(g, "SplitToSequence", NAMES("x", "lens"), NAMES("a"));
    s_node(g, "SplitToSequence", NAMES("x", "two"), NAMES("b"));
    gx_node_set_int(s_node(g, "SplitToSequence", NAMES("x"), NAMES("c")), "keepdims", 0);
    gx_graph_add_output(g, "a");
    gx_graph_add_output(g, "b");
    gx_graph_add_output(g, "c");
    float x[3] = {7, 8, 9};
    gx_view in[1] = {s_view(GX_F32, 1, (int64_t[]){3}, x)};
    gx_tensor *out[3] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(gx_sequence_length(out[0]), 2);
    s_expect_f32(gx_sequence_item(out[0], 0), 1, (int64_t[]){1}, (float[]){7});
    s_expect_f32(gx_sequence_item(out[0], 1), 1, (int64_t[]){2}, (float[]){8, 9});
    ck_assert_uint_eq(gx_sequence_length(out[1]), 2);
    s_expect_f32(gx_sequence_item(out[1], 0), 1, (int64_t[]){2}, (float[]){7, 8});
    s_expect_f32(gx_sequence_item(out[1], 1), 1, (int64_t[]){1}, (float[]){9});
    ck_assert_uint_eq(gx_sequence_length(out[2]), 3);
    s_expect_f32(gx_sequence_item(out[2], 2), 0, NULL, (float[]){9});
    for (size_t i = 0; i < 3; i++)
        gx_tensor_destroy(&out[i]);
    gx_graph_destroy(&g);
}
END_TEST

/* SequenceConstruct(a, b), SequenceInsert of c at 0 -> [c, a, b],
 * SequenceErase(1) -> [c, b], SequenceEmpty + SequenceInsert at the end */
START_TEST(test_insert_erase)
{
    gx_graph *g = gx_graph_new("edit");
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gx_graph_add_input(g, names[i], GX_F32, 1, (int64_t[]){i + 1}), GX_OK);
    s_const_i64(g, "zero", 0);
    s_const_i64(g, "one", 1);
    s_node(g, "SequenceConstruct", NAMES("a", "b"), NAMES("s"));
    s_node(g, "SequenceInsert", NAMES("s", "c", "zero"), NAMES("t"));
    s_node(g, "SequenceErase", NAMES("t", "one"), NAMES("u"));
    s_node(g, "SequenceEmpty", 0, NULL, NAMES("e"));
    s_node(g, "SequenceInsert", NAMES("e", "b"), NAMES("v"));
    gx_graph_add_output(g, "u");
    gx_graph_add_output(g, "v");
    float a[1] = {1}, b[2] = {2, 3}, c[3] = {4, 5, 6};
    gx_view in[3] = {s_view(GX_F32, 1, (int64_t[]){1}, a), s_view(GX_F32, 1, (int64_t[]){2}, b),
                     s_view(GX_F32, 1, (int64_t[]){3}, c)};
    gx_tensor *out[2] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(gx_sequence_length(out[0]), 2);
    s_expect_f32(gx_sequence_item(out[0], 0), 1, (int64_t[]){3}, c);
    s_expect_f32(gx_sequence_item(out[0], 1), 1, (int64_t[]){2}, b);
    ck_assert_uint_eq(gx_sequence_length(out[1]), 1);
    s_expect_f32(gx_sequence_item(out[1], 0), 1, (int64_t[]){2}, b);
    gx_tensor_destroy(&out[0]);
    gx_tensor_destroy(&out[1]);

    /* position 5 of a sequence of 2: a clear error at run time */
    g->consts[1].t->data = memcpy(g->consts[1].t->data, &(int64_t){5}, 8);
    ck_assert_int_eq(s_run(g, in, out, err, sizeof err), GX_EINVAL);
    ck_assert_msg(strstr(err, "SequenceErase") && strstr(err, "position 5 is out of range"), "%s",
                  err);
    gx_graph_destroy(&g);
}
END_TEST

/* Optional(x) has an element, Optional() does not; OptionalGetElement
 * gives x back and refuses none */
START_TEST(test_optional)
{
    gx_graph *g = gx_graph_new("opt");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2}), GX_OK);
    s_node(g, "Optional", NAMES("x"), NAMES("o"));
    s_node(g, "Optional", 0, NULL, NAMES("none"));
    s_node(g, "OptionalHasElement", NAMES("o"), NAMES("h1"));
    s_node(g, "OptionalHasElement", NAMES("none"), NAMES("h2"));
    s_node(g, "OptionalGetElement", NAMES("o"), NAMES("y"));
    gx_graph_add_output(g, "h1");
    gx_graph_add_output(g, "h2");
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "none");
    float x[2] = {1.5f, -2};
    gx_view in[1] = {s_view(GX_F32, 1, (int64_t[]){2}, x)};
    gx_tensor *out[4] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(out[0]->dtype, GX_BOOL);
    ck_assert_int_eq(*(uint8_t *)out[0]->data, 1);
    ck_assert_int_eq(*(uint8_t *)out[1]->data, 0);
    s_expect_f32(out[2], 1, (int64_t[]){2}, x);
    ck_assert_int_eq(out[3]->kind, GX_KIND_NONE);
    for (size_t i = 0; i < 4; i++)
        gx_tensor_destroy(&out[i]);
    gx_graph_destroy(&g);

    g = gx_graph_new("get_none");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2}), GX_OK);
    s_node(g, "Optional", 0, NULL, NAMES("none"));
    s_node(g, "OptionalGetElement", NAMES("none"), NAMES("y"));
    s_node(g, "Add", NAMES("y", "x"), NAMES("z"));
    gx_graph_add_output(g, "z");
    ck_assert_int_eq(s_run(g, in, out, err, sizeof err), GX_EINVAL);
    ck_assert_msg(strstr(err, "has no element"), "%s", err);
    gx_graph_destroy(&g);
}
END_TEST

/* A sequence graph input through Identity to a kernel that refuses it */
START_TEST(test_sequence_input)
{
    gx_graph *g = gx_graph_new("seqin");
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_F32, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_set_decl_kind(g, true, "s", GX_KIND_SEQUENCE, false), GX_OK);
    s_node(g, "Identity", NAMES("s"), NAMES("t"));
    s_node(g, "SequenceLength", NAMES("t"), NAMES("n"));
    gx_graph_add_output(g, "t");
    gx_graph_add_output(g, "n");
    gx_tensor *seq = gx_sequence_new(GX_F32);
    gx_tensor *it = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){2}, (float[]){1, 2}, 8);
    ck_assert_int_eq(gx_sequence_append(seq, &it), GX_OK);
    gx_view in[1] = {{.dtype = GX_F32, .kind = GX_KIND_SEQUENCE, .data = seq}};
    gx_tensor *out[2] = {0};
    char err[512];
    ck_assert_msg(s_run(g, in, out, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(gx_sequence_length(out[0]), 1);
    s_expect_f32(gx_sequence_item(out[0], 0), 1, (int64_t[]){2}, (float[]){1, 2});
    ck_assert_int_eq(*(int64_t *)out[1]->data, 1);
    gx_tensor_destroy(&out[0]);
    gx_tensor_destroy(&out[1]);

    /* a tensor where the graph declares a sequence */
    float x[2] = {0};
    gx_view t[1] = {s_view(GX_F32, 1, (int64_t[]){2}, x)};
    ck_assert_int_eq(s_run(g, t, out, err, sizeof err), GX_EDTYPE);
    ck_assert_msg(strstr(err, "expected a sequence, got a tensor"), "%s", err);
    gx_graph_destroy(&g);

    /* a sequence reaching an op that takes tensors */
    g = gx_graph_new("seqrelu");
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_F32, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_set_decl_kind(g, true, "s", GX_KIND_SEQUENCE, false), GX_OK);
    s_node(g, "Relu", NAMES("s"), NAMES("y"));
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(s_run(g, in, out, err, sizeof err), GX_EDTYPE);
    ck_assert_msg(strstr(err, "(Relu): input 0 is a sequence"), "%s", err);
    gx_graph_destroy(&g);
    gx_tensor_destroy(&seq);
}
END_TEST

/* A sequence and a none in, a sequence and a none out, through gexecd */
START_TEST(test_daemon)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char err[256];
    gx_client *cl = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(cl);
    gx_graph *g = gx_graph_new("e2e");
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_I32, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_set_decl_kind(g, true, "s", GX_KIND_SEQUENCE, false), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "o", GX_F32, 1, (int64_t[]){1}), GX_OK);
    ck_assert_int_eq(gx_graph_set_decl_kind(g, true, "o", GX_KIND_TENSOR, true), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_I32, 1, (int64_t[]){3}), GX_OK);
    s_node(g, "SequenceInsert", NAMES("s", "x"), NAMES("t"));
    s_node(g, "OptionalHasElement", NAMES("o"), NAMES("h"));
    s_node(g, "Identity", NAMES("o"), NAMES("p"));
    gx_graph_add_output(g, "t");
    gx_graph_add_output(g, "h");
    gx_graph_add_output(g, "p");
    gx_graph_id id;
    ck_assert_msg(gx_client_load(cl, g, &id) == GX_OK, "%s", gx_client_last_error(cl));
    gx_tensor *s = gx_sequence_new(GX_I32), *none = gx_none_new();
    gx_tensor *it = gx_tensor_new_copy(GX_I32, 0, NULL, (int32_t[]){42}, 4);
    ck_assert_int_eq(gx_sequence_append(s, &it), GX_OK);
    gx_tensor *x = gx_tensor_new_copy(GX_I32, 1, (int64_t[]){3}, (int32_t[]){1, 2, 3}, 12);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "s", s);
    gx_request_add_input(rq, "o", none);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    ck_assert_msg(gx_client_run(cl, rq, &r) == GX_OK, "%s", gx_client_last_error(cl));
    const gx_tensor *t = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_kind(t), GX_KIND_SEQUENCE);
    ck_assert_uint_eq(gx_sequence_length(t), 2);
    ck_assert_int_eq(*(const int32_t *)gx_tensor_cdata(gx_sequence_item(t, 0)), 42);
    ck_assert_int_eq(gx_tensor_ndim(gx_sequence_item(t, 1)), 1);
    ck_assert_int_eq(((const int32_t *)gx_tensor_cdata(gx_sequence_item(t, 1)))[2], 3);
    ck_assert_int_eq(*(const uint8_t *)gx_tensor_cdata(gx_result_output(r, 1)), 0);
    ck_assert_int_eq(gx_tensor_kind(gx_result_output(r, 2)), GX_KIND_NONE);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);

    /* a tensor where a sequence is declared: the job's error, the daemon serves on */
    rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "s", x);
    gx_request_add_input(rq, "o", none);
    gx_request_add_input(rq, "x", x);
    ck_assert_int_eq(gx_client_run(cl, rq, &r), GX_EDTYPE);
    ck_assert_msg(strstr(gx_client_last_error(cl), "expected a sequence"), "%s",
                  gx_client_last_error(cl));
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    ck_assert_int_eq(gx_client_ping(cl), GX_OK);
    gx_tensor_destroy(&s);
    gx_tensor_destroy(&none);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&cl);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *sequence_suite(void)
{
    Suite *s = suite_create("sequence");
    TCase *tc = tcase_create("ops");
    tcase_add_test(tc, test_split_concat);
    tcase_add_test(tc, test_split_lengths);
    tcase_add_test(tc, test_insert_erase);
    tcase_add_test(tc, test_optional);
    tcase_add_test(tc, test_sequence_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("daemon");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_daemon);
    suite_add_tcase(s, tc);
    return s;
}
