/*
 * What the compiler resolves at compile time and what it leaves to run time:
 * constant folding, keyed inputs, dynamic steps, and control flow (If, Loop
 * and Scan with captured outer values, nested subgraphs), compiled with gxd_compile
 * and run through a frame as a worker does; then once through a real gexecd,
 * so subgraphs also cross the wire.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "daemon/job.h"
#include "core/internal.h"
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


/* One job: compile g for inputs, run it, copy output 0 into out (n
 * floats, its shape into shape). Returns the status; err says why. */
typedef struct s_result {
    int rc;
    char err[1024];
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    float y[64];
    gxd_plan *plan; /* kept for inspection; the caller destroys it */
} s_result;

static s_result s_run(const gx_graph *g, const gx_view *inputs)
{
    s_result r = {0};
    r.rc = gxd_compile(g, inputs, &s_lim, &r.plan, r.err, sizeof r.err);
    if (r.rc < 0)
        return r;
    void *arena = gx_aligned_alloc(r.plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    r.rc = gxd_frame_init(&f, r.plan, arena, inputs, &s_lim, &stop, r.err, sizeof r.err);
    if (r.rc == GX_OK)
        r.rc = gxd_exec_seq(&f);
    if (r.rc == GX_OK) {
        const gx_view *v = gxd_frame_output(&f, 0);
        ck_assert_int_le(v->numel, 64);
        ck_assert_int_eq(v->dtype, GX_F32);
        r.ndim = v->ndim;
        memcpy(r.shape, v->shape, sizeof r.shape);
        memcpy(r.y, v->data, (size_t)v->numel * sizeof(float));
    }
    gxd_frame_fini(&f);
    free(arena);
    return r;
}

static gx_view s_view(gx_dtype dt, int ndim, const int64_t *shape, void *data)
{
    gx_view v = {.dtype = dt, .ndim = ndim, .data = data};
    if (ndim)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    v.numel = gx_shape_numel(ndim, shape, INT64_MAX);
    return v;
}

static size_t s_count_steps(const gxd_plan *p, bool folded, bool dynamic)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n += p->steps[i].folded == folded && p->steps[i].dynamic == dynamic;
    return n;
}

/* y = Reshape(x, shape): shape a graph input. */
static gx_graph *s_reshape_graph(void)
{
    gx_graph *g = gx_graph_new("reshape");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){6}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "shape", GX_I64, 1, (int64_t[]){2}), GX_OK);
    s_node(g, "Reshape", NAMES("x", "shape"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

START_TEST(test_keyed_input)
{
    gx_graph *g = s_reshape_graph();
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape23[2] = {2, 3}, shape32[2] = {3, -1};
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){6}, x),
                     s_view(GX_I64, 1, (int64_t[]){2}, shape23)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.ndim, 2);
    ck_assert_int_eq(r.shape[0], 2);
    ck_assert_int_eq(r.shape[1], 3);
    ck_assert(r.plan->values[r.plan->inputs[1]].keyed);
    ck_assert(!r.plan->values[r.plan->inputs[0]].keyed);
    ck_assert_int_eq(r.plan->n_dynamic, 0);
    ck_assert(gxd_plan_matches(r.plan, in));
    /* another value of the keyed input is another plan */
    in[1].data = shape32;
    ck_assert(!gxd_plan_matches(r.plan, in));
    gxd_plan_destroy(&r.plan);
    r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.shape[0], 3);
    ck_assert_int_eq(r.shape[1], 2);
    ck_assert(gxt_allclose(r.y, x, 6, 0, 0));
    gxd_plan_destroy(&r.plan);
    gx_graph_destroy(&g);
}
END_TEST

/* Compiled before any job (LOAD): the key is unknown, so the Reshape runs
 * dynamically, and the plan says it must not be cached. */
START_TEST(test_dynamic_step)
{
    gx_graph *g = s_reshape_graph();
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {-1, 2}, bad[2] = {4, 2};
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){6}, x),
                     s_view(GX_I64, 1, (int64_t[]){2}, NULL)};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_OK);
    ck_assert(p->needs_keys);
    ck_assert_int_eq(p->n_dynamic, 1);
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    in[1].data = shape;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_OK);
    const gx_view *y = gxd_frame_output(&f, 0);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 3);
    ck_assert(gxt_allclose(y->data, x, 6, 0, 0));
    gxd_frame_fini(&f);
    /* a shape that does not fit fails at run time, naming the node */
    in[1].data = bad;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_ESHAPE);
    ck_assert_msg(strstr(err, "(Reshape)") != NULL, "%s", err);
    gxd_frame_fini(&f);
    free(arena);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* y = Reshape(x, Concat(a, b)) with a, b constants: the Concat is folded,
 * so the Reshape is static. */
START_TEST(test_folding)
{
    gx_graph *g = gx_graph_new("fold");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){6}), GX_OK);
    gxt_const(g, "a", GX_I64, 1, (int64_t[]){1}, (int64_t[]){3});
    gxt_const(g, "b", GX_I64, 1, (int64_t[]){1}, (int64_t[]){2});
    gx_node_set_int(s_node(g, "Concat", NAMES("a", "b"), NAMES("shape")), "axis", 0);
    s_node(g, "Reshape", NAMES("x", "shape"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    float x[6] = {1, 2, 3, 4, 5, 6};
    gx_view in[1] = {s_view(GX_F32, 1, (int64_t[]){6}, x)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(s_count_steps(r.plan, true, false), 1);
    ck_assert_int_eq(s_count_steps(r.plan, false, false), 1);
    ck_assert_int_eq(r.shape[0], 3);
    ck_assert_int_eq(r.shape[1], 2);
    gxd_plan_destroy(&r.plan);
    gx_graph_destroy(&g);
}
END_TEST

/* y = If(c) then Add(x, x) else Concat(x, x): the branches capture x and
 * give different shapes. */
static gx_graph *s_if_graph(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "Add", NAMES("x", "x"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    gx_node_set_int(s_node(els, "Concat", NAMES("x", "x"), NAMES("e")), "axis", 0);
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);
    gx_graph *g = gx_graph_new("if");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    gx_node *n = s_node(g, "If", NAMES("c"), NAMES("y"));
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

START_TEST(test_if)
{
    gx_graph *g = s_if_graph();
    float x[3] = {1, 2, 3};
    uint8_t c = 1;
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){3}, x), s_view(GX_BOOL, 0, NULL, &c)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.shape[0], 3);
    ck_assert(gxt_allclose(r.y, (float[]){2, 4, 6}, 3, 0, 0));
    gxd_plan_destroy(&r.plan);
    c = 0;
    r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.shape[0], 6);
    ck_assert(gxt_allclose(r.y, (float[]){1, 2, 3, 1, 2, 3}, 6, 0, 0));
    gxd_plan_destroy(&r.plan);
    gx_graph_destroy(&g);
}
END_TEST

/* a_0 = x, a_i = a_(i-1) + x (so (i + 1) x) for i < S_N_CAPTURED; y = If(c)
 * then a_0 + ... + a_(S_N_CAPTURED-1) else a_(S_N_CAPTURED-1): the then
 * branch captures more values than an op has inputs (GX_MAX_OP_INPUTS), as
 * exported models whose branches hold whole networks do. */
#define S_N_CAPTURED 100
_Static_assert(S_N_CAPTURED > GX_MAX_OP_INPUTS, "more captures than an op's inputs");

START_TEST(test_if_many_captures)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    gx_graph *g = gx_graph_new("captures");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    char a[32], prev[32], t[32], tprev[32];
    snprintf(a, sizeof a, "a0");
    s_node(g, "Identity", NAMES("x"), NAMES(a));
    snprintf(tprev, sizeof tprev, "a0");
    for (int i = 1; i < S_N_CAPTURED; i++) {
        snprintf(prev, sizeof prev, "a%d", i - 1);
        snprintf(a, sizeof a, "a%d", i);
        s_node(g, "Add", NAMES(prev, "x"), NAMES(a));
        snprintf(t, sizeof t, "t%d", i);
        s_node(then, "Add", NAMES(tprev, a), NAMES(t));
        snprintf(tprev, sizeof tprev, "%s", t);
    }
    ck_assert_int_eq(gx_graph_add_output(then, tprev), GX_OK);
    s_node(els, "Identity", NAMES(a), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);
    gx_node *n = s_node(g, "If", NAMES("c"), NAMES("y"));
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);

    float x[3] = {1, 2, 3};
    const float k[2] = {S_N_CAPTURED, S_N_CAPTURED * (S_N_CAPTURED + 1) / 2};
    for (uint8_t c = 0; c < 2; c++) {
        gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){3}, x), s_view(GX_BOOL, 0, NULL, &c)};
        s_result r = s_run(g, in);
        ck_assert_msg(r.rc == GX_OK, "%s", r.err);
        ck_assert(gxt_allclose(r.y, (float[]){k[c], 2 * k[c], 3 * k[c]}, 3, 0, 0));
        gxd_plan_destroy(&r.plan);
    }
    gx_graph_destroy(&g);
}
END_TEST

/* gxd_subplans_each: counts the plans, and those with a prepared
 * constant. */
static void s_count_prepared(void *arg, const char *attr, const gxd_plan *p)
{
    (void)attr;
    int *n = arg;
    n[0]++;
    n[1] += p->n_prepared > 0;
}

/* y = If(c) then MatMul(x, W) else x, x [1, 64], W [64, 64] a constant of the outer
 * graph: the branch's plan takes W as a constant (packed once for its
 * MatMul), as the outer plan would, not as an input it is handed. */
START_TEST(test_if_captured_constants)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "MatMul", NAMES("x", "W"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    s_node(els, "Identity", NAMES("x"), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);
    gx_graph *g = gx_graph_new("captured_const");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 64}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    float w[64 * 64], x[64];
    for (int i = 0; i < 64 * 64; i++)
        w[i] = (float)(i % 7) - 3;
    for (int i = 0; i < 64; i++)
        x[i] = (float)(i % 5) * 0.5f;
    gx_tensor *wt = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){64, 64}, w, sizeof w);
    ck_assert_int_eq(gx_graph_add_const(g, "W", &wt), GX_OK);
    gx_node *n = s_node(g, "If", NAMES("c"), NAMES("y"));
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);

    uint8_t c = 1;
    gx_view in[2] = {s_view(GX_F32, 2, (int64_t[]){1, 64}, x), s_view(GX_BOOL, 0, NULL, &c)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    float want[64]; /* x W */
    for (int j = 0; j < 64; j++) {
        want[j] = 0;
        for (int k = 0; k < 64; k++)
            want[j] += x[k] * w[k * 64 + j];
    }
    ck_assert(gxt_allclose(r.y, want, 64, 1e-5f, 1e-5f));
    int counts[2] = {0, 0};
    for (size_t i = 0; i < r.plan->n_steps; i++)
        if (r.plan->steps[i].op == GX_OP_IF)
            ck_assert(gxd_subplans_each(r.plan->steps[i].sub, false, s_count_prepared, counts));
    ck_assert_int_eq(counts[0], 1);
    ck_assert_msg(counts[1] == 1, "the branch's MatMul did not read W packed");
    gxd_plan_destroy(&r.plan);
    gx_graph_destroy(&g);
}
END_TEST

/* Loop(M, cond, v0) with body (i, c, v) -> (c, v + x, v + x): x is
 * captured from the outer graph; the scan output stacks every v. An If in
 * the body (always true) checks nested capture. */
static gx_graph *s_loop_graph(bool with_m)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "Add", NAMES("v", "x"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    s_node(els, "Sub", NAMES("v", "x"), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);

    gx_graph *body = gx_graph_new("body");
    ck_assert_int_eq(gx_graph_add_input(body, "i", GX_I64, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(body, "c", GX_BOOL, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(body, "v", GX_F32, 1, (int64_t[]){2}), GX_OK);
    s_node(body, "Identity", NAMES("c"), NAMES("c_out"));
    gx_node *n = s_node(body, "If", NAMES("c"), NAMES("v_out"));
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    s_node(body, "Identity", NAMES("v_out"), NAMES("scan"));
    ck_assert_int_eq(gx_graph_add_output(body, "c_out"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(body, "v_out"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(body, "scan"), GX_OK);

    gx_graph *g = gx_graph_new("loop");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "cond", GX_BOOL, 0, NULL), GX_OK);
    gxt_const(g, "v0", GX_F32, 1, (int64_t[]){2}, (float[]){10, 20});
    gxt_const(g, "m", GX_I64, 0, NULL, (int64_t[]){3});
    n = s_node(g, "Loop", NAMES(with_m ? "m" : "", "cond", "v0"), NAMES("v_final", "scans"));
    ck_assert_int_eq(gx_node_set_graph(n, "body", &body), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "scans"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "v_final"), GX_OK);
    return g;
}

START_TEST(test_loop)
{
    gx_graph *g = s_loop_graph(true);
    float x[2] = {1, 2};
    uint8_t c = 1;
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){2}, x), s_view(GX_BOOL, 0, NULL, &c)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.ndim, 2);
    ck_assert_int_eq(r.shape[0], 3);
    ck_assert_int_eq(r.shape[1], 2);
    ck_assert(gxt_allclose(r.y, (float[]){11, 22, 12, 24, 13, 26}, 6, 0, 0));
    gxd_plan_destroy(&r.plan);

    /* cond false from the start: no iteration; the scan output's inner
     * shape is unknown (the body does not declare it): [0] */
    c = 0;
    r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.ndim, 1);
    ck_assert_int_eq(r.shape[0], 0);
    gxd_plan_destroy(&r.plan);
    gx_graph_destroy(&g);
}
END_TEST

/* No trip count and a condition that stays true: only cancellation (or the
 * deadline) ends it, between two iterations. */
START_TEST(test_loop_cancel)
{
    gx_graph *g = s_loop_graph(false);
    float x[2] = {0, 0};
    uint8_t c = 1;
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){2}, x), s_view(GX_BOOL, 0, NULL, &c)};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_OK);
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, gxd_now_us() + 50000};
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_ETIMEDOUT);
    gxd_frame_fini(&f);
    free(arena);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* Scan(initial, x): the body adds each row of x to the running sum and
 * also emits it, as in ONNX's test_scan9_sum. */
static gx_graph *s_scan_graph(void)
{
    gx_graph *body = gx_graph_new("body");
    ck_assert_int_eq(gx_graph_add_input(body, "sum_in", GX_F32, 1, (int64_t[]){2}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(body, "next", GX_F32, 1, (int64_t[]){2}), GX_OK);
    s_node(body, "Add", NAMES("sum_in", "next"), NAMES("sum_out"));
    s_node(body, "Identity", NAMES("sum_out"), NAMES("scan_out"));
    ck_assert_int_eq(gx_graph_add_output(body, "sum_out"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(body, "scan_out"), GX_OK);
    gx_graph *g = gx_graph_new("scan");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){3, 2}), GX_OK);
    gxt_const(g, "initial", GX_F32, 1, (int64_t[]){2}, (float[]){0, 0});
    gx_node *n = s_node(g, "Scan", NAMES("initial", "x"), NAMES("y", "z"));
    ck_assert_int_eq(gx_node_set_int(n, "num_scan_inputs", 1), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "body", &body), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "z"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

START_TEST(test_scan)
{
    gx_graph *g = s_scan_graph();
    float x[6] = {1, 2, 3, 4, 5, 6};
    gx_view in[1] = {s_view(GX_F32, 2, (int64_t[]){3, 2}, x)};
    s_result r = s_run(g, in);
    ck_assert_msg(r.rc == GX_OK, "%s", r.err);
    ck_assert_int_eq(r.ndim, 2);
    ck_assert_int_eq(r.shape[0], 3);
    ck_assert(gxt_allclose(r.y, (float[]){1, 2, 4, 6, 9, 12}, 6, 0, 0));
    gxd_plan_destroy(&r.plan);

    /* other axes or directions are refused, naming the attribute */
    gx_node_set_ints(g->nodes[0], "scan_input_directions", (int64_t[]){1}, 1);
    char err[512];
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_EUNSUPPORTED);
    ck_assert_msg(strstr(err, "scan_input_directions") != NULL, "%s", err);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_errors)
{
    char err[1024];
    /* a subgraph using a name nobody defines */
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "Relu", NAMES("nowhere"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    s_node(els, "Relu", NAMES("x"), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);
    gx_graph *g = gx_graph_new("bad");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    gx_node *n = gx_graph_add_node(g, "If", "branchy", NAMES("c"), NAMES("y"));
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EGRAPH);
    ck_assert_msg(strstr(err, "'branchy'") && strstr(err, "'nowhere'"), "%s", err);
    gx_graph_destroy(&g);

    /* an unknown op inside a branch is refused by verify (at LOAD) */
    then = gx_graph_new("then");
    els = gx_graph_new("else");
    s_node(then, "Frobnicate", NAMES("x"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    s_node(els, "Relu", NAMES("x"), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);
    g = gx_graph_new("bad");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    n = gx_graph_add_node(g, "If", "branchy", NAMES("c"), NAMES("y"));
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    ck_assert_int_eq(gxd_verify(g, &s_lim, err, sizeof err), GX_EOP);
    ck_assert_msg(strstr(err, "then_branch") && strstr(err, "Frobnicate"), "%s", err);
    gx_graph_destroy(&g);

    /* every refused node is named in one error */
    g = gx_graph_new("refused");
    ck_assert_int_eq(gx_graph_add_input(g, "b", GX_BOOL, 1, (int64_t[]){3}), GX_OK);
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Sigmoid", "first", NAMES("b"), NAMES("y1")));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Sigmoid", "second", NAMES("b"), NAMES("y2")));
    gx_graph_add_output(g, "y1");
    gx_graph_add_output(g, "y2");
    gx_view bin[1] = {s_view(GX_BOOL, 1, (int64_t[]){3}, NULL)};
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_compile(g, bin, &s_lim, &p, err, sizeof err), GX_EDTYPE);
    ck_assert_msg(strstr(err, "2 unsupported nodes") && strstr(err, "'first'") &&
                      strstr(err, "'second'"),
                  "%s", err);
    gx_graph_destroy(&g);

    /* If's condition must be one bool */
    g = s_if_graph();
    float x[3] = {1, 2, 3};
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){3}, x), s_view(GX_F32, 1, (int64_t[]){3}, x)};
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_ESHAPE);
    g->inputs[1].dtype = GX_F32; /* declared so; then the op refuses it */
    g->inputs[1].ndim = 1;
    g->inputs[1].shape[0] = 3;
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_EDTYPE);
    ck_assert_msg(strstr(err, "cond must be bool") != NULL, "%s", err);
    gx_graph_destroy(&g);
}
END_TEST

/* The If graph through a real daemon: the subgraphs cross the wire (and
 * hash into the graph id) like any attribute. */
START_TEST(test_daemon)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char err[256];
    gx_client *cl = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(cl);
    gx_graph *g = s_if_graph();
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(cl, g, &id), GX_OK);
    for (int c = 0; c < 2; c++) {
        gx_tensor *x = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){3}, (float[]){1, 2, 3}, 12);
        gx_tensor *ct = gx_tensor_new_copy(GX_BOOL, 0, NULL, &(uint8_t){(uint8_t)c}, 1);
        gx_request *rq = gx_request_new();
        gx_request_set_graph_id(rq, &id);
        gx_request_add_input(rq, "x", x);
        gx_request_add_input(rq, "c", ct);
        gx_result *r = NULL;
        ck_assert_msg(gx_client_run(cl, rq, &r) == GX_OK, "%s", gx_client_last_error(cl));
        const gx_tensor *y = gx_result_output(r, 0);
        ck_assert_int_eq(gx_tensor_numel(y), c ? 3 : 6);
        ck_assert(gxt_allclose(gx_tensor_cdata(y),
                               c ? (float[]){2, 4, 6} : (float[]){1, 2, 3, 1, 2, 3},
                               (size_t)gx_tensor_numel(y), 0, 0));
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
        gx_tensor_destroy(&x);
        gx_tensor_destroy(&ct);
    }
    gx_graph_destroy(&g);

    /* an error inside a subgraph, at run time, is the job's error */
    g = s_loop_graph(true);
    g->inputs[0].shape[0] = 3; /* x [3] + v [2] inside the body's If */
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){3}, (float[]){1, 2, 3}, 12);
    gx_tensor *ct = gx_tensor_new_copy(GX_BOOL, 0, NULL, &(uint8_t){1}, 1);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "cond", ct);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(cl, rq, &r), GX_ESHAPE);
    ck_assert_msg(strstr(gx_client_last_error(cl), "subgraph 'body'") &&
                      strstr(gx_client_last_error(cl), "not broadcastable"),
                  "%s", gx_client_last_error(cl));
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&ct);
    gx_graph_destroy(&g);
    gx_client_destroy(&cl);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *control_suite(void)
{
    Suite *s = suite_create("control");
    TCase *tc = tcase_create("compile");
    tcase_add_test(tc, test_keyed_input);
    tcase_add_test(tc, test_dynamic_step);
    tcase_add_test(tc, test_folding);
    tcase_add_test(tc, test_if);
    tcase_add_test(tc, test_if_many_captures);
    tcase_add_test(tc, test_if_captured_constants);
    tcase_add_test(tc, test_loop);
    tcase_add_test(tc, test_loop_cancel);
    tcase_add_test(tc, test_scan);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("daemon");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_daemon);
    suite_add_tcase(s, tc);
    return s;
}
