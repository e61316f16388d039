/*
 * The fuse pass (daemon/compile/fuse.c) and the fused kernel
 * (ops/cpu/fused.c): which groups form and why neighbours stay out, the
 * memory the intermediate values no longer take, and the property that
 * makes fusion safe: a fused plan gives the very bytes the unfused plan
 * gives (compiler.fuse: false), for every split of the steps into shares.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/compile/passes.h"
#include "daemon/exec/exec.h"
#include "core/internal.h"
#include "ops/gemm.h"
#include "tests/testutil.h"

/* (the rewrite pass off: it would fold the per-channel bias Adds these
 * graphs give the fuse pass into the Conv; tests/check_rewrite.c) */
static const gxd_compile_limits s_lim = {.max_nodes = 10000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20, .no_rewrite = true};
static const gxd_compile_limits s_lim_off = {.max_nodes = 10000,
                                             .max_tensor_bytes = 64ll << 20,
                                             .max_arena_bytes = 256ll << 20, .no_fuse = true,
                                             .no_rewrite = true};

static unsigned s_seed = 12345;

static unsigned s_rand(void)
{
    return (unsigned)rand_r(&s_seed);
}

/* Adds node op(ins) -> out named name; returns it. */
static gx_node *s_node(gx_graph *g, const char *op, const char *name, int n_in,
                       const char *const *in, const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, name, n_in, in, 1, &out);
    ck_assert_msg(n != NULL, "cannot add node %s (%s)", name ? name : "?", op);
    return n;
}

#define NODE(g, op, name, out, ...)                                           \
    s_node(g, op, name, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
           (const char *[]){__VA_ARGS__}, out)

static void s_input(gx_graph *g, const char *name, gx_dtype dt, int ndim, const int64_t *shape)
{
    ck_assert_int_eq(gx_graph_add_input(g, name, dt, ndim, shape), GX_OK);
}

/* A float32 constant of the given shape with small random values. */
static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    ck_assert_ptr_nonnull(t);
    float *d = gx_tensor_data(t);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)((int)(s_rand() % 400) - 200) / 128.0f;
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* Views of the graph's inputs with random data (freed by s_free_inputs). */
static gx_view *s_inputs(const gx_graph *g, const int64_t shapes[][GX_MAX_DIMS],
                         const int *ndims, const gx_dtype *dts, size_t n)
{
    (void)g;
    gx_view *v = calloc(n + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++) {
        v[i].dtype = dts[i];
        v[i].ndim = ndims[i];
        v[i].numel = 1;
        for (int d = 0; d < ndims[i]; d++)
            v[i].numel *= v[i].shape[d] = shapes[i][d];
        size_t es = gx_dtype_size(dts[i]);
        v[i].data = gx_aligned_alloc((size_t)v[i].numel * es + 1);
        ck_assert_ptr_nonnull(v[i].data);
        for (int64_t k = 0; k < v[i].numel; k++) {
            double x = (double)((int)(s_rand() % 2000) - 1000) / 256.0;
            const int r = (int)(s_rand() % 2001) - 1000;
            if (dts[i] == GX_F64)
                ((double *)v[i].data)[k] = x;
            else if (dts[i] == GX_I32)
                ((int32_t *)v[i].data)[k] = r * 4099;
            else if (dts[i] == GX_I64)
                ((int64_t *)v[i].data)[k] = (int64_t)r * ((int64_t)1 << 40);
            else if (dts[i] == GX_BOOL)
                ((unsigned char *)v[i].data)[k] = r > 0;
            else
                ((float *)v[i].data)[k] = (float)x;
        }
    }
    return v;
}

static void s_free_inputs(gx_view *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].data);
    free(v);
}

/* Outputs of one run: copies of each graph output's bytes. */
typedef struct s_outs {
    size_t n;
    void *data[64];
    size_t nbytes[64];
} s_outs;

static void s_outs_free(s_outs *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->data[i]);
    o->n = 0;
}

/* Runs p step by step, each step as nth shares run one after another (as
 * a team of nth workers would split it). */
static s_outs s_run(const gxd_plan *p, const gx_view *in, int nth)
{
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    ck_assert_ptr_nonnull(arena);
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
    for (size_t s = 0; s < p->n_steps; s++) {
        gx_coop co = {0}; /* the shares run one after another */
        for (int ith = 0; ith < nth; ith++)
            ck_assert_int_eq(gxd_exec_step_share(&f, s, ith, nth, &co), GX_OK);
    }
    s_outs o = {.n = p->n_outputs};
    ck_assert_uint_le(o.n, 64);
    for (size_t i = 0; i < o.n; i++) {
        const gx_view *v = gxd_frame_output(&f, i);
        o.nbytes[i] = (size_t)v->numel * gx_dtype_size(v->dtype);
        o.data[i] = malloc(o.nbytes[i] + 1);
        ck_assert_ptr_nonnull(o.data[i]);
        memcpy(o.data[i], v->data, o.nbytes[i]);
    }
    gxd_frame_fini(&f);
    free(arena);
    return o;
}

static void s_assert_same(const s_outs *a, const s_outs *b, const char *what)
{
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        ck_assert_uint_eq(a->nbytes[i], b->nbytes[i]);
        ck_assert_msg(memcmp(a->data[i], b->data[i], a->nbytes[i]) == 0,
                      "%s: output %zu differs", what, i);
    }
}

/* Does p have a MatMul or Gemm, alone or as the head of a group? */
static bool s_has_product(const gxd_plan *p)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->op == GX_OP_MATMUL || s->op == GX_OP_GEMM || (s->fused && s->fused->has_head))
            return true;
    }
    return false;
}

static gxd_plan *s_compile(const gx_graph *g, const gx_view *in, const gxd_compile_limits *lim)
{
    gxd_plan *p = NULL;
    char err[512];
    int rc = gxd_compile(g, in, lim, &p, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "compile: %s", err);
    return p;
}

/* Compiles g with and without fusion and checks the fused plan gives the
 * unfused plan's bytes with 1, 3 and 7 shares per step. Returns the fused
 * plan (caller destroys it); *arena_off gets the unfused arena's size. */
static gxd_plan *s_check_same(const gx_graph *g, const gx_view *in, size_t *arena_off)
{
    gxd_plan *on = s_compile(g, in, &s_lim), *off = s_compile(g, in, &s_lim_off);
    ck_assert_uint_eq(off->n_fuse_groups, 0);
    ck_assert_str_eq(off->fuse_why, "off (compiler.fuse: false)");
    ck_assert_str_eq(on->fuse_why, "");
    /* (against the same shares unfused: a MatMul's row blocks may round
     * differently, docs/modes.md; elementwise ops give the same bytes for
     * any number of shares, which the first comparison checks) */
    s_outs want1 = s_run(off, in, 1);
    static const int nths[] = {1, 3, 7};
    for (size_t k = 0; k < sizeof nths / sizeof nths[0]; k++) {
        s_outs got = s_run(on, in, nths[k]), want = s_run(off, in, nths[k]);
        char what[64];
        snprintf(what, sizeof what, "fused, %d shares", nths[k]);
        s_assert_same(&got, &want, what);
        if (!s_has_product(on))
            s_assert_same(&got, &want1, what);
        s_outs_free(&got);
        s_outs_free(&want);
    }
    /* the other passes judge the fused plan as they judged the unfused one
     * (the arena may grow a little: a fused step's inputs stay live until
     * it runs, where the group's first step could read them earlier) */
    ck_assert_int_eq(on->batch, off->batch);
    ck_assert_int_eq(on->dag_ok, off->dag_ok);
    if (arena_off)
        *arena_off = off->arena_bytes;
    s_outs_free(&want1);
    gxd_plan_destroy(&off);
    return on;
}

/* The group entry of the step named by its last node, or NULL. */
static const gxd_fuse_group *s_group(const gxd_plan *p, const char *last)
{
    for (size_t i = 0; i < p->n_fuse_groups; i++) {
        const gxd_fuse_group *e = &p->fuse_groups[i];
        if (!strcmp(e->nodes[e->n_nodes - 1], last))
            return e;
    }
    return NULL;
}

static void s_assert_nodes(const gxd_fuse_group *e, const char *const *names, size_t n)
{
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->n_nodes, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(e->nodes[i], names[i]);
}

#define NAMES(...)                                                            \
    (const char *[]){__VA_ARGS__}, sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)

/* ---- groups ---- */

START_TEST(test_chain)
{
    /* x[3, 1000] -> +c -> *y -> Relu -> Exp -> Tanh: one step */
    gx_graph *g = gx_graph_new("chain");
    const int64_t sh[] = {3, 1000};
    s_input(g, "x", GX_F32, 2, sh);
    s_input(g, "y", GX_F32, 2, sh);
    s_const(g, "c", 0, NULL);
    NODE(g, "Add", "A", "a", "x", "c");
    NODE(g, "Mul", "B", "b", "a", "y");
    NODE(g, "Relu", "C", "cc", "b");
    NODE(g, "Exp", "D", "d", "cc");
    NODE(g, "Tanh", "E", "e", "d");
    ck_assert_int_eq(gx_graph_add_output(g, "e"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{3, 1000}, {3, 1000}},
                           (const int[]){2, 2}, (const gx_dtype[]){GX_F32, GX_F32}, 2);
    size_t arena_off = 0;
    gxd_plan *p = s_check_same(g, in, &arena_off);
    ck_assert_uint_eq(p->n_steps, 1);
    ck_assert_ptr_nonnull(p->steps[0].fused);
    ck_assert_int_eq(p->steps[0].fused->n_ops, 5);
    ck_assert_int_eq(p->steps[0].n_in, 3); /* x, c, y */
    ck_assert_str_eq(p->steps[0].node->name, "E");
    s_assert_nodes(s_group(p, "E"), NAMES("A", "B", "C", "D", "E"));
    ck_assert_int_eq(p->fuse_groups[0].step, 0);
    ck_assert_int_eq(p->fuse_groups[0].ops[1], GX_OP_MUL);
    ck_assert_str_eq(p->fuse_groups[0].why, "");
    /* four intermediate values leave the arena: only x, y and e remain */
    ck_assert_uint_eq(p->fused_values, 4);
    const size_t one = (3000 * sizeof(float) + GX_ALIGN - 1) / GX_ALIGN * GX_ALIGN;
    ck_assert_uint_eq(p->arena_bytes, 3 * one);
    ck_assert_uint_eq(p->naive_bytes, p->arena_bytes); /* unfused: 7 values */
    ck_assert_uint_eq(arena_off, p->arena_bytes); /* a chain reuses buffers anyway */
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind == GXD_VALUE_FUSED) {
            ck_assert_int_eq(p->values[v].def, 0);
            ck_assert_int_eq(p->values[v].buffer, -1);
        }
    gxd_plan_destroy(&p);
    s_free_inputs(in, 2);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_tree_and_broadcast)
{
    /* x[4, 5, 300]; d = Sigmoid((x + row) - (x * col)) * 0.5, with
     * row [300], col [5, 1], a scalar: one step of 5 ops reading x once */
    gx_graph *g = gx_graph_new("tree");
    s_input(g, "x", GX_F32, 3, (const int64_t[]){4, 5, 300});
    s_const(g, "row", 1, (const int64_t[]){300});
    s_const(g, "col", 2, (const int64_t[]){5, 1});
    s_const(g, "half", 0, NULL);
    NODE(g, "Add", "A", "a", "x", "row");
    NODE(g, "Mul", "B", "b", "x", "col");
    NODE(g, "Sub", "C", "c", "a", "b");
    NODE(g, "Sigmoid", "D", "d", "c");
    NODE(g, "Mul", "E", "e", "d", "half");
    ck_assert_int_eq(gx_graph_add_output(g, "e"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{4, 5, 300}}, (const int[]){3},
                           (const gx_dtype[]){GX_F32}, 1);
    size_t arena_off = 0;
    gxd_plan *p = s_check_same(g, in, &arena_off);
    ck_assert_uint_eq(p->n_steps, 1);
    s_assert_nodes(s_group(p, "E"), NAMES("A", "B", "C", "D", "E"));
    ck_assert_int_eq(p->steps[0].n_in, 4); /* x, row, col, half: x only once */
    ck_assert_int_eq(p->batch, 4); /* the broadcasting rule holds for the group */
    ck_assert_uint_eq(p->arena_bytes, 2 * 4 * 5 * 300 * sizeof(float));
    ck_assert_uint_gt(arena_off, p->arena_bytes);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_other_reader)
{
    /* a = Exp(x) is read by B and C: it stays a value of its own */
    gx_graph *g = gx_graph_new("reader");
    s_input(g, "x", GX_F32, 1, (const int64_t[]){2000});
    NODE(g, "Exp", "A", "a", "x");
    NODE(g, "Relu", "B", "b", "a");
    NODE(g, "Neg", "C", "c", "a");
    NODE(g, "Abs", "D", "d", "c");
    ck_assert_int_eq(gx_graph_add_output(g, "b"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "d"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{2000}}, (const int[]){1},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_plan *p = s_check_same(g, in, NULL);
    ck_assert_uint_eq(p->n_steps, 3); /* A, B, C+D */
    s_assert_nodes(s_group(p, "D"), NAMES("C", "D"));
    ck_assert_str_eq(s_group(p, "D")->why, "node 'A' (Exp): its output has another reader");
    s_assert_nodes(s_group(p, "B"), NAMES("B"));
    ck_assert_str_eq(s_group(p, "B")->why, "node 'A' (Exp): its output has another reader");
    ck_assert_uint_eq(p->fused_values, 1);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_reason_once)
{
    /* a feeds B and C, both in G's group: the reason is given once. E's
     * [4] becomes F's [1, 4] (as many elements, another shape): not fused */
    gx_graph *g = gx_graph_new("once");
    s_input(g, "x", GX_F32, 1, (const int64_t[]){4});
    s_const(g, "w", 2, (const int64_t[]){1, 4});
    gx_tensor *shape = gx_tensor_new(GX_I64, 1, (const int64_t[]){1});
    ck_assert_ptr_nonnull(shape);
    *(int64_t *)gx_tensor_data(shape) = 4;
    ck_assert_int_eq(gx_graph_add_const(g, "shape", &shape), GX_OK);
    NODE(g, "Exp", "A", "a", "x");
    NODE(g, "Relu", "B", "b", "a");
    NODE(g, "Neg", "C", "c", "a");
    NODE(g, "Add", "D", "d", "b", "c");
    NODE(g, "Exp", "E", "e", "x");
    NODE(g, "Add", "F", "f", "e", "w");
    NODE(g, "Reshape", "R", "r", "f", "shape");
    NODE(g, "Add", "G", "gg", "d", "r");
    ck_assert_int_eq(gx_graph_add_output(g, "gg"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{4}}, (const int[]){1},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_plan *p = s_check_same(g, in, NULL);
    s_assert_nodes(s_group(p, "G"), NAMES("B", "C", "D", "G"));
    ck_assert_str_eq(s_group(p, "G")->why, "node 'R' (Reshape): not elementwise; "
                                           "node 'A' (Exp): its output has another reader");
    s_assert_nodes(s_group(p, "F"), NAMES("F"));
    ck_assert_str_eq(s_group(p, "F")->why, "node 'E' (Exp): its output has another shape");
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_graph_output)
{
    gx_graph *g = gx_graph_new("output");
    s_input(g, "x", GX_F32, 1, (const int64_t[]){100});
    NODE(g, "Exp", "A", "a", "x");
    NODE(g, "Relu", "B", "b", "a");
    ck_assert_int_eq(gx_graph_add_output(g, "a"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "b"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{100}}, (const int[]){1},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_plan *p = s_check_same(g, in, NULL);
    ck_assert_uint_eq(p->n_steps, 2);
    ck_assert_uint_eq(p->n_fuse_groups, 1);
    ck_assert_str_eq(s_group(p, "B")->why, "node 'A' (Exp): its output is a graph output");
    ck_assert_uint_eq(p->fused_values, 0);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_dtype_and_not_elementwise)
{
    /* Pow(xd float64, Exp(xf) float32): the exponent's producer has
     * another dtype; Relu(MatMul(...)) then Sigmoid: MatMul heads them */
    gx_graph *g = gx_graph_new("dtype");
    s_input(g, "xd", GX_F64, 2, (const int64_t[]){8, 16});
    s_input(g, "xf", GX_F32, 2, (const int64_t[]){8, 16});
    s_const(g, "W", 2, (const int64_t[]){16, 16});
    NODE(g, "Exp", "A", "a", "xf");
    NODE(g, "Pow", "P", "p", "xd", "a");
    NODE(g, "Neg", "Q", "q", "p");
    NODE(g, "MatMul", "M", "m", "xf", "W");
    NODE(g, "Relu", "R", "r", "m");
    NODE(g, "Sigmoid", "S", "s", "r");
    ck_assert_int_eq(gx_graph_add_output(g, "q"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "s"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{8, 16}, {8, 16}},
                           (const int[]){2, 2}, (const gx_dtype[]){GX_F64, GX_F32}, 2);
    gxd_plan *p = s_check_same(g, in, NULL);
    s_assert_nodes(s_group(p, "Q"), NAMES("P", "Q"));
    ck_assert_str_eq(s_group(p, "Q")->why, "node 'A' (Exp): dtype float32, not float64");
    s_assert_nodes(s_group(p, "S"), NAMES("M", "R", "S")); /* an epilogue group */
    ck_assert_str_eq(s_group(p, "S")->why, "");
    ck_assert_uint_eq(p->n_steps, 3); /* A, P+Q, M+R+S */
    gxd_plan_destroy(&p);
    s_free_inputs(in, 2);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_cast_joins)
{
    /* int32, int64 and bool inputs cast to float32 inside one
     * group (several tiles: the int64 input's elements are 8 bytes); a Cast of a float32 temporary to float64 joins the float64
     * group after it, its producer (float32) stays out */
    gx_graph *g = gx_graph_new("cast");
    s_input(g, "xi", GX_I32, 2, (const int64_t[]){8, 1001});
    s_input(g, "xb", GX_BOOL, 2, (const int64_t[]){8, 1001});
    s_input(g, "xl", GX_I64, 2, (const int64_t[]){8, 1001});
    s_input(g, "xf", GX_F32, 2, (const int64_t[]){8, 1001});
    s_const(g, "s", 1, (const int64_t[]){1001});
    gx_node_set_int(NODE(g, "Cast", "C", "c", "xi"), "to", 1);
    NODE(g, "Mul", "M", "m", "c", "s");
    gx_node_set_int(NODE(g, "Cast", "CB", "cb", "xb"), "to", 1);
    NODE(g, "Add", "A", "a", "m", "cb");
    gx_node_set_int(NODE(g, "Cast", "CL", "cl", "xl"), "to", 1);
    NODE(g, "Sub", "S", "d", "a", "cl");
    NODE(g, "Relu", "R", "r", "d");
    NODE(g, "Exp", "E", "e", "xf");
    gx_node_set_int(NODE(g, "Cast", "CD", "cd", "e"), "to", 11);
    NODE(g, "Neg", "N", "n", "cd");
    ck_assert_int_eq(gx_graph_add_output(g, "r"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "n"), GX_OK);
    gx_view *in = s_inputs(g,
                           (const int64_t[][GX_MAX_DIMS]){{8, 1001}, {8, 1001}, {8, 1001},
                                                          {8, 1001}},
                           (const int[]){2, 2, 2, 2},
                           (const gx_dtype[]){GX_I32, GX_BOOL, GX_I64, GX_F32}, 4);
    gxd_plan *p = s_check_same(g, in, NULL);
    s_assert_nodes(s_group(p, "R"), NAMES("C", "CB", "CL", "M", "A", "S", "R"));
    s_assert_nodes(s_group(p, "N"), NAMES("CD", "N"));
    ck_assert_str_eq(s_group(p, "N")->why, "node 'E' (Exp): dtype float32, not float64");
    ck_assert_uint_eq(p->n_steps, 3); /* the float32 group, E, CD+N */
    gxd_plan_destroy(&p);
    s_free_inputs(in, 4);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_small_operand_broadcast)
{
    /* a = Exp(v[64]) broadcast into x[32, 64]: computing it per element
     * of the output would repeat it 32 times, so it stays a step */
    gx_graph *g = gx_graph_new("small");
    s_input(g, "x", GX_F32, 2, (const int64_t[]){32, 64});
    s_input(g, "v", GX_F32, 1, (const int64_t[]){64});
    NODE(g, "Exp", "A", "a", "v");
    NODE(g, "Add", "B", "b", "x", "a");
    NODE(g, "Relu", "C", "c", "b");
    ck_assert_int_eq(gx_graph_add_output(g, "c"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{32, 64}, {64}},
                           (const int[]){2, 1}, (const gx_dtype[]){GX_F32, GX_F32}, 2);
    gxd_plan *p = s_check_same(g, in, NULL);
    s_assert_nodes(s_group(p, "C"), NAMES("B", "C"));
    ck_assert_str_eq(s_group(p, "C")->why,
                     "node 'A' (Exp): its output broadcasts to the bigger operand");
    gxd_plan_destroy(&p);
    s_free_inputs(in, 2);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- epilogues: MatMul / Gemm heads ---- */

START_TEST(test_epilogue_matmul)
{
    /* y = Relu(x[6, 40] @ W[40, 1030] + b[1030]): one step; the batch of 6
     * still splits (MatMul's rule for the head, broadcasting for the rest) */
    gx_graph *g = gx_graph_new("mlp");
    s_input(g, "x", GX_F32, 2, (const int64_t[]){6, 40});
    s_const(g, "W", 2, (const int64_t[]){40, 1030});
    s_const(g, "b", 1, (const int64_t[]){1030});
    NODE(g, "MatMul", "M", "m", "x", "W");
    NODE(g, "Add", "A", "a", "m", "b");
    NODE(g, "Relu", "R", "r", "a");
    ck_assert_int_eq(gx_graph_add_output(g, "r"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{6, 40}}, (const int[]){2},
                           (const gx_dtype[]){GX_F32}, 1);
    size_t arena_off = 0;
    gxd_plan *p = s_check_same(g, in, &arena_off);
    ck_assert_uint_eq(p->n_steps, 1);
    ck_assert(p->steps[0].fused->has_head);
    s_assert_nodes(s_group(p, "R"), NAMES("M", "A", "R"));
    ck_assert_int_eq(p->fuse_groups[0].ops[0], GX_OP_MATMUL);
    ck_assert_int_eq(p->batch, 6);
    ck_assert_uint_eq(p->fused_values, 2);
    ck_assert_uint_gt(arena_off, p->arena_bytes);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_epilogue_batched_and_gemm)
{
    /* a batched MatMul [2, 5, 16] @ [16, 24] + bias, Tanh; a Gemm with C
     * and transB, then Sigmoid and Clip; a MatMul whose product is also
     * read elsewhere stays a step of its own */
    gx_graph *g = gx_graph_new("heads");
    s_input(g, "x", GX_F32, 3, (const int64_t[]){2, 5, 16});
    s_input(g, "a", GX_F32, 2, (const int64_t[]){7, 16});
    s_const(g, "W", 2, (const int64_t[]){16, 24});
    s_const(g, "Bt", 2, (const int64_t[]){24, 16});
    s_const(g, "bias", 1, (const int64_t[]){24});
    s_const(g, "C", 2, (const int64_t[]){1, 24});
    s_const(g, "lo", 0, NULL);
    s_const(g, "hi", 0, NULL);
    NODE(g, "MatMul", "M", "m", "x", "W");
    NODE(g, "Add", "A", "ma", "m", "bias");
    NODE(g, "Tanh", "T", "t", "ma");
    gx_node *gm = NODE(g, "Gemm", "G", "gm", "a", "Bt", "C");
    gx_node_set_int(gm, "transB", 1);
    gx_node_set_float(gm, "alpha", 0.5);
    NODE(g, "Sigmoid", "S", "s", "gm");
    NODE(g, "Clip", "K", "k", "s", "lo", "hi");
    NODE(g, "MatMul", "N", "n", "a", "W");
    NODE(g, "Relu", "R", "r", "n");
    NODE(g, "Neg", "Q", "q", "n");
    NODE(g, "MatMul", "P", "pp", "a", "W"); /* read by the group's last op */
    NODE(g, "Elu", "U", "u", "pp");
    ck_assert_int_eq(gx_graph_add_output(g, "u"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "t"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "k"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "r"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "q"), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{2, 5, 16}, {7, 16}},
                           (const int[]){3, 2}, (const gx_dtype[]){GX_F32, GX_F32}, 2);
    gxd_plan *p = s_check_same(g, in, NULL);
    s_assert_nodes(s_group(p, "T"), NAMES("M", "A", "T"));
    s_assert_nodes(s_group(p, "K"), NAMES("G", "S", "K"));
    s_assert_nodes(s_group(p, "R"), NAMES("R"));
    ck_assert_str_eq(s_group(p, "R")->why, "node 'N' (MatMul): its output has another reader");
    s_assert_nodes(s_group(p, "U"), NAMES("P", "U"));
    ck_assert_uint_eq(p->n_steps, 6); /* M+A+T, G+S+K, N, R, Q, P+U */
    gxd_plan_destroy(&p);
    s_free_inputs(in, 2);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- random graphs ---- */

/* A random graph of elementwise ops over inputs x, y [B, R, C] with
 * constants that broadcast ([C], [R, 1], [1, C], scalars), some values
 * read twice and some intermediate values also graph outputs; where C is
 * small, some MatMuls by a [C, C] constant (heads of epilogue groups). */
static gx_graph *s_random_graph(int n, int64_t B, int64_t R, int64_t C)
{
    static const char *const unary[] = {"Relu", "Exp", "Tanh", "Sigmoid", "Neg", "Abs", "Erf",
                                        "Softplus", "Sin", "Floor", "LeakyRelu", "Clip", "Gelu",
                                        "HardSwish", "Softsign"};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow",
                                         "PRelu"};
    gx_graph *g = gx_graph_new("random");
    s_input(g, "x", GX_F32, 3, (const int64_t[]){B, R, C});
    s_input(g, "y", GX_F32, 3, (const int64_t[]){B, R, C});
    s_const(g, "col", 2, (const int64_t[]){R, 1});
    s_const(g, "row", 1, (const int64_t[]){C});
    s_const(g, "r1c", 2, (const int64_t[]){1, C});
    s_const(g, "k", 0, NULL);
    s_const(g, "two", 0, NULL);
    s_const(g, "lo", 0, NULL);
    s_const(g, "hi", 0, NULL);
    if (C <= 96)
        s_const(g, "Wcc", 2, (const int64_t[]){C, C});
    static char names[64][8];
    const char *vals[80] = {"x", "y"};
    int nv = 2;
    static const char *const small[] = {"col", "row", "r1c", "k", "x", "y"};
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        /* mostly the latest values: chains, with some trees */
        const char *a = vals[nv - 1 - (int)(s_rand() % (nv < 3 ? nv : 3))];
        const char *b = s_rand() % 2 ? small[s_rand() % 6] : vals[s_rand() % nv];
        char nname[16];
        snprintf(nname, sizeof nname, "N%d", i);
        unsigned kind = s_rand() % 10;
        if (kind < 5) {
            const char *op = unary[s_rand() % (sizeof unary / sizeof unary[0])];
            gx_node *nd;
            if (!strcmp(op, "Clip")) /* sometimes without a lower bound */
                nd = NODE(g, op, nname, names[i], a, s_rand() % 2 ? "lo" : "", "hi");
            else
                nd = NODE(g, op, nname, names[i], a);
            if (!strcmp(op, "LeakyRelu"))
                gx_node_set_float(nd, "alpha", 0.125);
        } else if (kind < 9) {
            const char *op = binary[s_rand() % (sizeof binary / sizeof binary[0])];
            if (!strcmp(op, "Pow"))
                NODE(g, op, nname, names[i], a, s_rand() % 2 ? "two" : "k");
            else if (!strcmp(op, "PRelu"))
                NODE(g, op, nname, names[i], a, "row");
            else if (s_rand() % 2)
                NODE(g, op, nname, names[i], a, b);
            else
                NODE(g, op, nname, names[i], b, a);
        } else if (C <= 96) {
            NODE(g, "MatMul", nname, names[i], a, "Wcc");
        } else {
            NODE(g, s_rand() % 2 ? "Sum" : "Mean", nname, names[i], a, b, vals[s_rand() % nv]);
        }
        vals[nv++] = names[i];
        if (s_rand() % 8 == 0)
            ck_assert_int_eq(gx_graph_add_output(g, names[i]), GX_OK);
    }
    ck_assert_int_eq(gx_graph_add_output(g, vals[nv - 1]), GX_OK);
    return g;
}

START_TEST(test_random_graphs_same_bytes)
{
    s_seed = 1000u + (unsigned)_i;
    const int64_t B = 1 + s_rand() % 3, R = 1 + s_rand() % 9;
    const int64_t C = s_rand() % 2 ? 1 + s_rand() % 96 : 1 + s_rand() % 700;
    gx_graph *g = s_random_graph(4 + (int)(s_rand() % 20), B, R, C);
    size_t n_in = 2;
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{B, R, C}, {B, R, C}},
                           (const int[]){3, 3}, (const gx_dtype[]){GX_F32, GX_F32}, n_in);
    gxd_plan *p = s_check_same(g, in, NULL);
    for (size_t i = 0; i < p->n_fuse_groups; i++) {
        const gxd_fuse_group *e = &p->fuse_groups[i];
        ck_assert_int_ge(e->step, 0);
        ck_assert_int_lt(e->step, (int)p->n_steps);
        ck_assert_str_eq(p->steps[e->step].node->name, e->nodes[e->n_nodes - 1]);
        ck_assert((e->n_nodes > 1) == (p->steps[e->step].fused != NULL));
    }
    gxd_plan_destroy(&p);
    s_free_inputs(in, n_in);
    gx_graph_destroy(&g);
}
END_TEST

/* A long chain: groups stop at GX_FUSED_MAX_OPS and still match. */
START_TEST(test_long_chain)
{
    gx_graph *g = gx_graph_new("long");
    s_input(g, "x", GX_F32, 1, (const int64_t[]){5000});
    s_const(g, "k", 0, NULL);
    char names[100][8];
    const char *prev = "x";
    for (int i = 0; i < 100; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        if (i % 2)
            NODE(g, "Tanh", names[i] + 1, names[i], prev);
        else
            NODE(g, "Add", names[i] + 1, names[i], prev, "k");
        prev = names[i];
    }
    ck_assert_int_eq(gx_graph_add_output(g, prev), GX_OK);
    gx_view *in = s_inputs(g, (const int64_t[][GX_MAX_DIMS]){{5000}}, (const int[]){1},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_plan *p = s_check_same(g, in, NULL);
    ck_assert_uint_eq(p->n_steps, (100 + GX_FUSED_MAX_OPS - 1) / GX_FUSED_MAX_OPS);
    ck_assert_ptr_nonnull(strstr(p->fuse_groups[p->n_fuse_groups - 1].why, "the group is full"));
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&g);
}
END_TEST

/* A random float32 Conv (in the layout the layout pass gives it) with an
 * epilogue: Add of a bias per channel ([1, M, 1, 1] or [M, 1, 1]), then
 * Relu, or Clip, or a residual Add of another input followed by Relu;
 * groups, strides, pads and dilations at random, so each of Conv's paths
 * (im2col, pointwise, depthwise; the direct kernels of NHWC and NCHW16c)
 * and passes over several images run. One step besides the layout pass's
 * reorders, the very bytes of the unfused plan for 1, 3 and 7 shares;
 * explain lists it. */
START_TEST(test_epilogue_conv)
{
    const int it = _i;
    s_seed = 777u + 31u * (unsigned)it;
    const int64_t n = 1 + s_rand() % 3, g = it % 4 == 3 ? 2 + s_rand() % 3 : 1 + s_rand() % 2;
    const int64_t cg = it % 4 == 3 ? 1 : 1 + s_rand() % 4, c = g * cg;
    const int64_t m = it % 4 == 3 ? c * (1 + s_rand() % 2) : g * (1 + s_rand() % 5);
    const int64_t k = it % 4 == 1 ? 1 : 1 + s_rand() % 3;
    const int64_t st = it % 4 == 1 ? 1 : 1 + s_rand() % 2, pad = it % 4 == 1 ? 0 : s_rand() % 2;
    const int64_t dil = k > 1 ? 1 + s_rand() % 2 : 1;
    const int64_t h = (k - 1) * dil + 1 + s_rand() % 9, w = (k - 1) * dil + 1 + s_rand() % 40;
    const int64_t oh = (h + 2 * pad - (k - 1) * dil - 1) / st + 1;
    const int64_t ow = (w + 2 * pad - (k - 1) * dil - 1) / st + 1;
    const int tail = it % 3; /* 0: bias, Relu; 1: bias, Clip; 2: bias, residual Add, Relu */
    gx_graph *gr = gx_graph_new("conv_epilogue");
    s_input(gr, "x", GX_F32, 4, (const int64_t[]){n, c, h, w});
    s_input(gr, "r", GX_F32, 4, (const int64_t[]){n, m, oh, ow});
    s_const(gr, "W", 4, (const int64_t[]){m, cg, k, k});
    if (it % 2)
        s_const(gr, "b", 4, (const int64_t[]){1, m, 1, 1});
    else
        s_const(gr, "b", 3, (const int64_t[]){m, 1, 1});
    s_const(gr, "cb", 1, (const int64_t[]){m});
    s_const(gr, "lo", 0, NULL);
    s_const(gr, "hi", 0, NULL);
    gx_node *cv = it % 5 == 4 ? NODE(gr, "Conv", "C", "cv", "x", "W", "cb")
                              : NODE(gr, "Conv", "C", "cv", "x", "W");
    ck_assert_int_eq(gx_node_set_int(cv, "group", g), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(cv, "kernel_shape", (int64_t[]){k, k}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(cv, "strides", (int64_t[]){st, st}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(cv, "dilations", (int64_t[]){dil, dil}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(cv, "pads", (int64_t[]){pad, pad, pad, pad}, 4), GX_OK);
    NODE(gr, "Add", "A", "a", "cv", "b");
    const char *last = "R";
    if (tail == 0) {
        NODE(gr, "Relu", "R", "y", "a");
    } else if (tail == 1) {
        NODE(gr, "Clip", "K", "y", "a", "lo", "hi");
        last = "K";
    } else {
        NODE(gr, "Add", "S", "s", "a", "r");
        NODE(gr, "Relu", "R", "y", "s");
    }
    ck_assert_int_eq(gx_graph_add_output(gr, "y"), GX_OK);
    gx_view *in = s_inputs(gr,
                           (const int64_t[][GX_MAX_DIMS]){{n, c, h, w}, {n, m, oh, ow}},
                           (const int[]){4, 4}, (const gx_dtype[]){GX_F32, GX_F32}, 2);
    gxd_plan *p = s_check_same(gr, in, NULL);
    size_t at = p->n_steps, steps = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        if (!p->steps[i].reorder)
            at = i, steps++;
    ck_assert_uint_eq(steps, 1);
    ck_assert(p->steps[at].fused->has_head);
    ck_assert_int_eq(p->steps[at].fused->head.op, GX_OP_CONV);
    if (tail == 2)
        s_assert_nodes(s_group(p, last), NAMES("C", "A", "S", "R"));
    else
        s_assert_nodes(s_group(p, last), NAMES("C", "A", last));
    ck_assert_int_eq(s_group(p, last)->ops[0], GX_OP_CONV);
    char *js = gxd_plan_explain_json(p, gr);
    ck_assert_ptr_nonnull(js);
    ck_assert_msg(strstr(js, tail == 2 ? "\"nodes\":[\"C\",\"A\",\"S\",\"R\"],\"ops\":[\"Conv\","
                                       : "\"ops\":[\"Conv\",\"Add\","),
                  "explain lacks the Conv group: %.400s", strstr(js, "\"fusion\"") ? strstr(js, "\"fusion\"") : js);
    free(js);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 2);
    gx_graph_destroy(&gr);
}
END_TEST

/* The GEMM's ISAs, which also choose the register runs' vector width
 * (16 floats with AVX-512, 8 otherwise) and the 1-D Conv's kernel; those
 * this CPU lacks are skipped. */
static const char *const s_isas[] = {"avx512", "avx2", "baseline"};

/* A 1-D Conv (stride 1, dilation 2, pads, its bias input) heading Relu,
 * or a residual Add and Relu, on each GEMM ISA: ops/cpu/conv.c's 1-D
 * kernel with AVX-512 and AVX2 (80 input channels: AVX2 sums them in
 * passes of 32 over a tile, and the epilogue must run once, after the
 * last), im2col on the baseline; 300 positions, more than a tile and a
 * partial run. One step, the very bytes of the unfused plan for 1, 3 and
 * 7 shares. */
START_TEST(test_epilogue_conv_1d)
{
    char was[32];
    snprintf(was, sizeof was, "%s", gx_cpu_gemm_isa());
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    const int64_t n = 2, c = 80, m = 10, l = 300;
    for (int tail = 0; tail < 2; tail++) {
        gx_graph *gr = gx_graph_new("conv_1d_epilogue");
        s_input(gr, "x", GX_F32, 3, (const int64_t[]){n, c, l});
        s_input(gr, "r", GX_F32, 3, (const int64_t[]){n, m, l});
        s_const(gr, "W", 3, (const int64_t[]){m, c, 3});
        s_const(gr, "cb", 1, (const int64_t[]){m});
        gx_node *cv = NODE(gr, "Conv", "C", "cv", "x", "W", "cb");
        ck_assert_int_eq(gx_node_set_ints(cv, "kernel_shape", (int64_t[]){3}, 1), GX_OK);
        ck_assert_int_eq(gx_node_set_ints(cv, "dilations", (int64_t[]){2}, 1), GX_OK);
        ck_assert_int_eq(gx_node_set_ints(cv, "pads", (int64_t[]){2, 2}, 2), GX_OK);
        if (tail == 0) {
            NODE(gr, "Relu", "R", "y", "cv");
        } else {
            NODE(gr, "Add", "S", "s", "cv", "r");
            NODE(gr, "Relu", "R", "y", "s");
        }
        ck_assert_int_eq(gx_graph_add_output(gr, "y"), GX_OK);
        gx_view *in = s_inputs(gr, (const int64_t[][GX_MAX_DIMS]){{n, c, l}, {n, m, l}},
                               (const int[]){3, 3}, (const gx_dtype[]){GX_F32, GX_F32}, 2);
        gxd_plan *p = s_check_same(gr, in, NULL);
        ck_assert_uint_eq(p->n_steps, 1);
        ck_assert(p->steps[0].fused->has_head);
        ck_assert_int_eq(p->steps[0].fused->head.op, GX_OP_CONV);
        gxd_plan_destroy(&p);
        s_free_inputs(in, 2);
        gx_graph_destroy(&gr);
    }
    ck_assert(gx_cpu_gemm_isa_set(was));
}
END_TEST

/* The fuse pass on the steps of an unfused plan of y = Relu(Conv(x) + b)
 * whose Conv step runs kernel k with its input in layout lay (as the
 * layout pass may leave it): the op at the head of the group it forms for
 * node R. */
static gx_op s_conv_head_after(gx_kernel_fn k, gx_layout lay)
{
    gx_graph *gr = gx_graph_new("conv_layout");
    s_input(gr, "x", GX_F32, 4, (const int64_t[]){1, 16, 6, 6});
    s_const(gr, "W", 4, (const int64_t[]){16, 16, 3, 3});
    s_const(gr, "b", 3, (const int64_t[]){16, 1, 1});
    NODE(gr, "Conv", "C", "cv", "x", "W");
    NODE(gr, "Add", "A", "a", "cv", "b");
    NODE(gr, "Relu", "R", "y", "a");
    ck_assert_int_eq(gx_graph_add_output(gr, "y"), GX_OK);
    gx_view *in = s_inputs(gr, (const int64_t[][GX_MAX_DIMS]){{1, 16, 6, 6}}, (const int[]){4},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_compile_limits plain = s_lim_off; /* the test sets the layout itself */
    plain.no_layout = true;
    gxd_plan *p = s_compile(gr, in, &plain);
    ck_assert_uint_eq(p->n_steps, 3);
    ck_assert_int_eq(p->steps[0].op, GX_OP_CONV);
    p->steps[0].kernel = k;
    p->values[p->steps[0].in[0]].view.layout = lay;
    char err[256];
    gxd_cstate st = {.g = gr, .lim = &s_lim, .inputs = in, .plan = p, .err = err,
                     .errlen = sizeof err};
    ck_assert_int_eq(gxd_pass_fuse(&st), GX_OK);
    const gxd_fuse_group *e = s_group(p, "R");
    ck_assert_ptr_nonnull(e);
    const gx_op head = e->ops[0];
    if (head == GX_OP_CONV)
        ck_assert_ptr_eq(p->steps[p->n_steps - 1].fused->head.kernel, k);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&gr);
    return head;
}

/* A Conv the layout pass moved to another layout or kernel heads no
 * group (its epilogue would walk the wrong elements); the plain one
 * does, with the step's kernel. */
START_TEST(test_epilogue_conv_layout)
{
    ck_assert_int_eq(s_conv_head_after(gx_cpu_kernel(GX_OP_CONV), GX_LAYOUT_PLAIN), GX_OP_CONV);
    ck_assert_int_eq(s_conv_head_after(gx_cpu_kernel(GX_OP_CONVTRANSPOSE), GX_LAYOUT_PLAIN),
                     GX_OP_ADD);
    ck_assert_int_eq(s_conv_head_after(gx_cpu_kernel(GX_OP_CONV), GX_LAYOUT_NHWC), GX_OP_ADD);
}
END_TEST

/* A Conv whose product another step reads, or that is a graph output,
 * stays a step of its own; a ConvTranspose is no head. */
START_TEST(test_epilogue_conv_not_head)
{
    gx_graph *gr = gx_graph_new("conv_alone");
    s_input(gr, "x", GX_F32, 4, (const int64_t[]){1, 3, 8, 8});
    s_const(gr, "W", 4, (const int64_t[]){4, 3, 3, 3});
    s_const(gr, "Wt", 4, (const int64_t[]){3, 4, 3, 3});
    NODE(gr, "Conv", "C", "cv", "x", "W");
    NODE(gr, "Relu", "R", "r", "cv");
    NODE(gr, "Neg", "N", "q", "cv");
    NODE(gr, "ConvTranspose", "T", "t", "x", "Wt");
    NODE(gr, "Relu", "U", "u", "t");
    ck_assert_int_eq(gx_graph_add_output(gr, "r"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(gr, "q"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(gr, "u"), GX_OK);
    gx_view *in = s_inputs(gr, (const int64_t[][GX_MAX_DIMS]){{1, 3, 8, 8}}, (const int[]){4},
                           (const gx_dtype[]){GX_F32}, 1);
    gxd_plan *p = s_check_same(gr, in, NULL);
    for (size_t i = 0; i < p->n_steps; i++)
        ck_assert(!p->steps[i].fused);
    ck_assert_uint_eq(p->n_steps, 5);
    gxd_plan_destroy(&p);
    s_free_inputs(in, 1);
    gx_graph_destroy(&gr);
}
END_TEST

/* ---- the kernel on its own ---- */

START_TEST(test_kernel_shares)
{
    /* y = Relu(a * b + c), b broadcast along rows, c a scalar, through
     * gx_cpu_fused directly; against the ops' kernels one by one */
    enum { R = 7, C = 1031 };
    float *a = gx_aligned_alloc(R * C * sizeof(float)), *b = gx_aligned_alloc(C * sizeof(float));
    float *y = gx_aligned_alloc(R * C * sizeof(float));
    float *t = gx_aligned_alloc(R * C * sizeof(float));
    float c = 0.25f;
    for (int i = 0; i < R * C; i++)
        a[i] = (float)((int)(s_rand() % 1000) - 500) / 100.0f;
    for (int i = 0; i < C; i++)
        b[i] = (float)((int)(s_rand() % 1000) - 500) / 100.0f;
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 2, .shape = {R, C}, .numel = R * C, .data = a},
                     {.dtype = GX_F32, .ndim = 1, .shape = {C}, .numel = C, .data = b},
                     {.dtype = GX_F32, .ndim = 0, .numel = 1, .data = &c}};
    gx_view vy = {.dtype = GX_F32, .ndim = 2, .shape = {R, C}, .numel = R * C, .data = y};
    gx_view vt = vy;
    vt.data = t;
    gx_fused *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    *f = (gx_fused){.n_in = 3, .n_ops = 3, .n_tmp = 2, .dtype = GX_F32};
    f->op[0] = (gx_fused_op){.op = GX_OP_MUL, .kernel = gx_cpu_kernel(GX_OP_MUL), .n_in = 2,
                             .in = {0, 1}, .out = 0};
    f->op[1] = (gx_fused_op){.op = GX_OP_ADD, .kernel = gx_cpu_kernel(GX_OP_ADD), .n_in = 2,
                             .in = {GX_FUSED_TMP(0), 2}, .out = 1};
    f->op[2] = (gx_fused_op){.op = GX_OP_RELU, .kernel = gx_cpu_kernel(GX_OP_RELU), .n_in = 1,
                             .in = {GX_FUSED_TMP(1)}, .out = -1};
    /* reference: the kernels over whole tensors */
    gx_kargs k1 = {.n_in = 2, .in = in, .n_out = 1, .out = &vt, .nth = 1};
    gx_cpu_kernel(GX_OP_MUL)(&k1);
    gx_view tin[2] = {vt, in[2]};
    gx_view vr = vt;
    float *r = gx_aligned_alloc(R * C * sizeof(float));
    vr.data = r;
    gx_kargs k2 = {.n_in = 2, .in = tin, .n_out = 1, .out = &vr, .nth = 1};
    gx_cpu_kernel(GX_OP_ADD)(&k2);
    gx_kargs k3 = {.n_in = 1, .in = &vr, .n_out = 1, .out = &vt, .nth = 1};
    gx_cpu_kernel(GX_OP_RELU)(&k3);
    for (int nth = 1; nth <= 9; nth += 4) {
        memset(y, 0xff, R * C * sizeof(float));
        for (int ith = 0; ith < nth; ith++)
            gx_cpu_fused(f, in, &vy, NULL, ith, nth);
        ck_assert_msg(memcmp(y, t, R * C * sizeof(float)) == 0, "%d shares differ", nth);
    }
    free(f), free(a), free(b), free(y), free(t), free(r);
}
END_TEST

/* One op of a chain for s_check_chain: operands 0: a, 1: b, 2: the
 * scalar, -1: the op before's output. */
typedef struct s_cop {
    gx_op op;
    int n_in, in0, in1;
} s_cop;

/* s_check_chain with the scalar sc. */
static void s_check_chain_sc(const s_cop *prog, int n_ops, float sc)
{
    enum { N = 3 * 2048 + 205 }; /* the last tile: a strip, 4 vectors, 13 more */
    static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f,
                                    -1e-40f, 1.0f, -1.0f, 3.5f, -2.25f};
    const unsigned ns = (unsigned)(sizeof special / sizeof special[0]);
    float *a = gx_aligned_alloc(N * sizeof(float)), *b = gx_aligned_alloc(N * sizeof(float));
    float *y = gx_aligned_alloc(N * sizeof(float)), *ref[GX_FUSED_MAX_OPS];
    ck_assert(a && b && y && n_ops <= GX_FUSED_MAX_OPS);
    for (int i = 0; i < N; i++) {
        a[i] = s_rand() % 3 ? (float)((int)(s_rand() % 1000) - 500) / 64.0f
                            : special[s_rand() % ns];
        b[i] = s_rand() % 3 ? (float)((int)(s_rand() % 1000) - 500) / 64.0f
                            : special[s_rand() % ns];
    }
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = a},
                     {.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = b},
                     {.dtype = GX_F32, .ndim = 0, .numel = 1, .data = &sc}};
    gx_fused *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    f->n_in = 3, f->n_ops = n_ops, f->n_tmp = 2, f->dtype = GX_F32;
    for (int o = 0; o < n_ops; o++) {
        ref[o] = gx_aligned_alloc(N * sizeof(float));
        ck_assert_ptr_nonnull(ref[o]);
        gx_fused_op *e = &f->op[o];
        e->op = prog[o].op;
        e->kernel = gx_cpu_kernel(prog[o].op);
        e->n_in = prog[o].n_in;
        const int src[2] = {prog[o].in0, prog[o].in1};
        gx_view v[2];
        for (int k = 0; k < e->n_in; k++) {
            e->in[k] = src[k] >= 0 ? src[k] : GX_FUSED_TMP((o - 1) % 2);
            v[k] = src[k] >= 0 ? in[src[k]] : (gx_view){.dtype = GX_F32, .ndim = 1,
                                                         .shape = {N}, .numel = N,
                                                         .data = ref[o - 1]};
        }
        e->out = o == n_ops - 1 ? -1 : o % 2;
        gx_view vo = {.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = ref[o]};
        gx_kargs ka = {.n_in = e->n_in, .in = v, .n_out = 1, .out = &vo, .nth = 1};
        e->kernel(&ka);
    }
    for (int nth = 1; nth <= 7; nth += 2) {
        memset(y, 0xff, N * sizeof(float));
        for (int ith = 0; ith < nth; ith++)
            gx_cpu_fused(f, in, &(gx_view){.dtype = GX_F32, .ndim = 1, .shape = {N},
                                           .numel = N, .data = y},
                         NULL, ith, nth);
        ck_assert_msg(memcmp(y, ref[n_ops - 1], N * sizeof(float)) == 0,
                      "%s after %s: %d shares differ", gx_op_name(prog[n_ops - 1].op),
                      gx_op_name(prog[0].op), nth);
    }
    for (int o = 0; o < n_ops; o++)
        free(ref[o]);
    free(f), free(a), free(b), free(y);
}

/* The chain prog[0..n_ops) through gx_cpu_fused, for 1, 3, 5 and 7
 * shares, against the ops' kernels one by one on whole tensors: a and b
 * of N elements (tiles of 2048, then 205: a strip, vectors, a ragged end;
 * random, a third of them NaN, infinities, signed zeros,
 * subnormals), the scalar -0 and then a NaN. */
static void s_check_chain(const s_cop *prog, int n_ops)
{
    s_check_chain_sc(prog, n_ops, -0.0f);
    const uint32_t bits = 0x7fc00123u;
    float nan;
    memcpy(&nan, &bits, sizeof nan);
    s_check_chain_sc(prog, n_ops, nan);
}

/* Every op the fused kernel runs in registers (Add, Sub, Mul, Div, Max,
 * Min, Relu, Neg, Abs; Sigmoid, Tanh, Exp, Erf through a buffer), first in
 * a run or after another op, with the run's value as either input and a
 * tensor or a scalar as the other: the bits of the ops' kernels one by
 * one, in each vector width. */
START_TEST(test_kernel_register_runs)
{
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    static const gx_op bins[] = {GX_OP_ADD, GX_OP_SUB, GX_OP_MUL,
                                 GX_OP_DIV, GX_OP_MAX, GX_OP_MIN};
    static const gx_op uns[] = {GX_OP_RELU,    GX_OP_NEG,  GX_OP_ABS, GX_OP_SIGMOID,
                                GX_OP_TANH,    GX_OP_EXP,  GX_OP_ERF, GX_OP_ROUND_F16};
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        const gx_op op = bins[i];
        for (int other = 1; other <= 2; other++) { /* after another op, at either input */
            s_check_chain((const s_cop[]){{GX_OP_NEG, 1, 0, 0}, {op, 2, -1, other}}, 2);
            s_check_chain((const s_cop[]){{GX_OP_NEG, 1, 0, 0}, {op, 2, other, -1}}, 2);
        }
        /* first: tensor and tensor, scalar and tensor, tensor and scalar */
        s_check_chain((const s_cop[]){{op, 2, 0, 1}, {GX_OP_NEG, 1, -1, 0}}, 2);
        s_check_chain((const s_cop[]){{op, 2, 2, 0}, {GX_OP_ABS, 1, -1, 0}}, 2);
        s_check_chain((const s_cop[]){{op, 2, 0, 2}, {GX_OP_RELU, 1, -1, 0}}, 2);
    }
    for (size_t i = 0; i < sizeof uns / sizeof uns[0]; i++) {
        s_check_chain((const s_cop[]){{GX_OP_SUB, 2, 0, 1}, {uns[i], 1, -1, 0}}, 2);
        s_check_chain((const s_cop[]){{uns[i], 1, 1, 0}, {GX_OP_MUL, 2, -1, 0}}, 2);
    }
    /* a long run through them all */
    s_check_chain((const s_cop[]){{GX_OP_SUB, 2, 2, 0},   {GX_OP_MAX, 2, 1, -1},
                                  {GX_OP_DIV, 2, -1, 1},  {GX_OP_MIN, 2, 2, -1},
                                  {GX_OP_RELU, 1, -1, 0}, {GX_OP_MUL, 2, 0, -1},
                                  {GX_OP_NEG, 1, -1, 0},  {GX_OP_ADD, 2, -1, 2},
                                  {GX_OP_ABS, 1, -1, 0},  {GX_OP_MAX, 2, -1, 0},
                                  {GX_OP_MIN, 2, -1, 1},  {GX_OP_SUB, 2, 1, -1},
                                  {GX_OP_DIV, 2, 2, -1}},
                  13);
}
END_TEST

Suite *fuse_suite(void)
{
    Suite *s = suite_create("fuse");
    TCase *tc = tcase_create("groups");
    tcase_add_test(tc, test_chain);
    tcase_add_test(tc, test_tree_and_broadcast);
    tcase_add_test(tc, test_other_reader);
    tcase_add_test(tc, test_reason_once);
    tcase_add_test(tc, test_graph_output);
    tcase_add_test(tc, test_dtype_and_not_elementwise);
    tcase_add_test(tc, test_cast_joins);
    tcase_add_test(tc, test_small_operand_broadcast);
    tcase_add_test(tc, test_long_chain);
    tcase_add_test(tc, test_epilogue_matmul);
    tcase_add_test(tc, test_epilogue_batched_and_gemm);
    tcase_add_test(tc, test_epilogue_conv_not_head);
    tcase_add_test(tc, test_epilogue_conv_layout);
    suite_add_tcase(s, tc);
    tc = tcase_create("conv_epilogue");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_epilogue_conv, 0, 24);
    tcase_add_loop_test(tc, test_epilogue_conv_1d, 0, (int)(sizeof s_isas / sizeof *s_isas));
    suite_add_tcase(s, tc);
    tc = tcase_create("same_bytes");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_random_graphs_same_bytes, 0, 60);
    tcase_add_test(tc, test_kernel_shares);
    tcase_add_loop_test(tc, test_kernel_register_runs, 0, (int)(sizeof s_isas / sizeof *s_isas));
    suite_add_tcase(s, tc);
    return s;
}
