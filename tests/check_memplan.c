/* Memory planning (pass 8, memplan) and the compiler passes around it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "tests/testutil.h"

/* No two values whose lifetimes overlap may overlap in memory. */
static void s_assert_disjoint(const gxd_value *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++) {
            if (v[i].kind == GXD_VALUE_CONST || v[k].kind == GXD_VALUE_CONST || !v[i].nbytes ||
                !v[k].nbytes)
                continue;
            bool live = v[i].def <= v[k].last_use && v[k].def <= v[i].last_use;
            bool mem = v[i].offset < v[k].offset + v[k].nbytes &&
                       v[k].offset < v[i].offset + v[i].nbytes;
            ck_assert_msg(!(live && mem), "values %zu [%d,%d]@%zu+%zu and %zu [%d,%d]@%zu+%zu overlap",
                          i, v[i].def, v[i].last_use, v[i].offset, v[i].nbytes, k, v[k].def,
                          v[k].last_use, v[k].offset, v[k].nbytes);
        }
}

START_TEST(test_chain_reuses)
{
    gxd_value v[10];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 10; i++) {
        v[i].kind = i == 0 ? GXD_VALUE_INPUT : GXD_VALUE_TEMP;
        v[i].def = i - 1;
        v[i].last_use = i; /* read by the next step */
        v[i].nbytes = 1000;
    }
    size_t nb = 0;
    size_t peak = gxd_memplan_assign(v, 10, 0, &nb);
    ck_assert_uint_eq(nb, 10);
    s_assert_disjoint(v, 10);
    ck_assert_uint_eq(peak, 2 * 1024); /* two live at a time, 64-aligned */
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(v[i].offset % GX_ALIGN, 0);
}
END_TEST

START_TEST(test_random_lifetimes)
{
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 60);
        gxd_value *v = calloc(n, sizeof *v);
        size_t naive = 0;
        for (size_t i = 0; i < n; i++) {
            v[i].kind = rand_r(&seed) % 8 == 0 ? GXD_VALUE_CONST : GXD_VALUE_TEMP;
            v[i].def = (int)(rand_r(&seed) % 40) - 1;
            v[i].last_use = v[i].def + (int)(rand_r(&seed) % 10);
            v[i].nbytes = (size_t)(rand_r(&seed) % 5000);
            if (v[i].kind != GXD_VALUE_CONST)
                naive += (v[i].nbytes + GX_ALIGN - 1) / GX_ALIGN * GX_ALIGN;
        }
        size_t nb = 0;
        size_t peak = gxd_memplan_assign(v, n, 0, &nb);
        s_assert_disjoint(v, n);
        ck_assert_uint_le(peak, naive);
        free(v);
    }
}
END_TEST

/* x -> Relu a -> Exp b -> ... a chain of k unary ops on [64,64] */
static gx_graph *s_chain(int k)
{
    gx_graph *g = gx_graph_new("chain");
    int64_t s[2] = {64, 64};
    gx_graph_add_input(g, "x", GX_F32, 2, s);
    char prev[32] = "x", cur[32];
    for (int i = 0; i < k; i++) {
        snprintf(cur, sizeof cur, "v%d", i);
        gx_graph_add_node(g, i % 2 ? "Relu" : "Tanh", NULL, 1, (const char *[]){prev}, 1,
                          (const char *[]){cur});
        memcpy(prev, cur, sizeof prev);
    }
    gx_graph_add_output(g, prev);
    return g;
}

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 1 << 30,
                                           .max_arena_bytes = INT64_C(1) << 32};

START_TEST(test_compiled_plan)
{
    gx_graph *g = s_chain(20);
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {64, 64}};
    gxd_plan *p = NULL;
    char err[256];
    gxd_compile_limits lim = s_lim;
    lim.no_fuse = true; /* one step per node: the fuse pass has tests of its own */
    ck_assert_int_eq(gxd_compile(g, &in, &lim, &p, err, sizeof err), GX_OK);
    ck_assert_uint_eq(p->n_steps, 20);
    ck_assert_uint_eq(p->naive_bytes, 21 * 64 * 64 * 4);
    ck_assert_uint_lt(p->arena_bytes, p->naive_bytes);
    ck_assert_uint_eq(p->arena_bytes, 2 * 64 * 64 * 4);
    s_assert_disjoint(p->values, p->n_values);
    /* the output stays live to the end */
    ck_assert_int_eq(p->values[p->outputs[0]].last_use, (int)p->n_steps);
    gxd_plan_destroy(&p);
    ck_assert_ptr_null(p);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_verify_errors)
{
    char err[256];
    gx_graph *g = gx_graph_new("cyc");
    int64_t s[1] = {4};
    gx_graph_add_input(g, "x", GX_F32, 1, s);
    gx_graph_add_node(g, "Add", "a", 2, (const char *[]){"x", "c"}, 1, (const char *[]){"b"});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"b"}, 1, (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(err, "cycle"));
    gx_graph_destroy(&g);

    g = gx_graph_new("unknown");
    gx_graph_add_input(g, "x", GX_F32, 1, s);
    gx_graph_add_node(g, "Frobnicate", "f1", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_node(g, "Bogus", "f2", 1, (const char *[]){"y"}, 1, (const char *[]){"z"});
    gx_graph_add_output(g, "z");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EOP);
    ck_assert_ptr_nonnull(strstr(err, "Frobnicate"));
    ck_assert_ptr_nonnull(strstr(err, "Bogus")); /* every unknown op is named */
    gx_graph_destroy(&g);

    g = gx_graph_new("dup");
    gx_graph_add_input(g, "x", GX_F32, 1, s);
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"x"});
    gx_graph_add_output(g, "x");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(err, "already defined"));
    gx_graph_destroy(&g);

    g = gx_graph_new("undef");
    gx_graph_add_input(g, "x", GX_F32, 1, s);
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"nope"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(err, "'nope' is not defined"));
    gx_graph_destroy(&g);

    g = gx_graph_new("arity");
    gx_graph_add_input(g, "x", GX_F32, 1, s);
    gx_graph_add_node(g, "Relu", "r", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(err, "inputs"));
    gx_graph_destroy(&g);

    g = s_chain(3);
    gxd_compile_limits small = {.max_nodes = 2, .max_tensor_bytes = 1 << 30,
                                .max_arena_bytes = 1 << 30};
    ck_assert_int_eq(gxd_verify(g, &small, err, sizeof err), GX_ELIMIT);
    gx_graph_destroy(&g);
}
END_TEST

/* limits.max_compile_ms: a compile past the bound stops after the pass
 * that ended beyond it, naming the bound and the pass. A bound of 1 µs
 * for 2000 nodes, which no pass walks in less (the direction a slow
 * machine only makes surer); without a bound the same graph compiles. */
START_TEST(test_compile_time_bound)
{
    gx_graph *g = s_chain(2000);
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {64, 64}};
    gxd_plan *p = NULL;
    char err[256];
    gxd_compile_limits lim = s_lim;
    lim.max_nodes = 10000;
    lim.max_compile_us = 1;
    ck_assert_int_eq(gxd_compile(g, &in, &lim, &p, err, sizeof err), GX_ELIMIT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err, "more than limits.max_compile_ms (0)") && strstr(err, "pass 'verify'"),
                  "%s", err);
    lim.max_compile_us = 0;
    ck_assert_msg(gxd_compile(g, &in, &lim, &p, err, sizeof err) == GX_OK, "%s", err);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_infer_errors)
{
    char err[256];
    gxd_plan *p = NULL;
    gx_graph *g = s_chain(2);
    gx_view bad = {.dtype = GX_F32, .ndim = 2, .shape = {64, 65}};
    ck_assert_int_eq(gxd_compile(g, &bad, &s_lim, &p, err, sizeof err), GX_ESHAPE);
    ck_assert_ptr_nonnull(strstr(err, "input 'x'"));
    ck_assert_ptr_null(p);
    gx_view ok = {.dtype = GX_F32, .ndim = 2, .shape = {64, 64}};
    gxd_compile_limits tiny_arena = {.max_nodes = 100, .max_tensor_bytes = 1 << 30,
                                     .max_arena_bytes = 1000};
    ck_assert_int_eq(gxd_compile(g, &ok, &tiny_arena, &p, err, sizeof err), GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(err, "arena"));
    gx_graph_destroy(&g);

    g = gx_graph_new("mm");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){2, 3});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){4, 5});
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"a", "b"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 2, .shape = {2, 3}},
                     {.dtype = GX_F32, .ndim = 2, .shape = {4, 5}}};
    ck_assert_int_lt(gxd_compile(g, in, &s_lim, &p, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "node 'mm'"));
    gx_graph_destroy(&g);
}
END_TEST

Suite *memplan_suite(void)
{
    Suite *s = suite_create("memplan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, test_chain_reuses);
    tcase_add_test(tc, test_random_lifetimes);
    tcase_add_test(tc, test_compiled_plan);
    tcase_add_test(tc, test_verify_errors);
    tcase_add_test(tc, test_infer_errors);
    tcase_add_test(tc, test_compile_time_bound);
    suite_add_tcase(s, tc);
    return s;
}
