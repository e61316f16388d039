/*
 * The layout pass (seed 001), passes on vs off, side by side in one run,
 * through the in-process executor on one thread (best of RUNS runs):
 *
 *   1. a small CNN (Conv, Relu, MaxPool, BatchNormalization, a residual
 *      Add, GlobalAveragePool, Gemm) at batch 1 and 8: every value NCHW
 *      (compiler.layout: false) against the layouts the pass chose;
 *   2. z = Conv(x), then If(c): the then branch pools z (which prefers
 *      NHWC), the else branch takes a Softmax over its channels (NCHW); run
 *      with c true 90% of the time, then 10%: plans compiled without a
 *      profile, with the profile of that workload, and with the profile of
 *      the other workload (the wrong one), each timed on the workload.
 *
 * Prints each plan's layouts and reorders, the times and ratios, and
 * whether results agree; asserts nothing.
 *
 *     bench/bench_layout
 */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "daemon/compile/compile.h"
#include "daemon/compile/layout.h"
#include "daemon/exec/exec.h"
#include "daemon/profile.h"
#include "ops/layout.h"

#define RUNS 30

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 1ll << 30,
                                         .max_arena_bytes = 1ll << 32};

/* Seconds of CLOCK_MONOTONIC. */
static void s_die(const char *what, const char *err)
{
    gxb_die("bench_layout", what, err);
}

static uint64_t s_rng = 88172645463325252ull;

static float s_rand(void)
{
    s_rng ^= s_rng << 13, s_rng ^= s_rng >> 7, s_rng ^= s_rng << 17;
    return (float)(s_rng % 2001) / 1000.0f - 1.0f;
}

static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape, float scale)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    if (!t)
        s_die("const", "out of memory");
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        d[i] = s_rand() * scale;
    if (gx_graph_add_const(g, name, &t) < 0)
        s_die("const", name);
}

static gx_node *s_node(gx_graph *g, const char *op, const char *name, size_t n_in,
                       const char *const *in, const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, name, n_in, in, 1, &out);
    if (!n)
        s_die("node", name ? name : op);
    return n;
}

/* y = Conv(x, W [m, c, k, k], b) with padding k / 2. */
static void s_conv(gx_graph *g, const char *name, const char *x, int64_t c, int64_t m, int64_t k,
                   const char *y)
{
    char w[64], b[64];
    snprintf(w, sizeof w, "%s.w", name);
    snprintf(b, sizeof b, "%s.b", name);
    s_const(g, w, 4, (const int64_t[]){m, c, k, k}, 1.0f / (float)(c * k * k));
    s_const(g, b, 1, (const int64_t[]){m}, 0.1f);
    gx_node *n = s_node(g, "Conv", name, 3, (const char *[]){x, w, b}, y);
    const int64_t p = k / 2;
    gx_node_set_ints(n, "pads", (const int64_t[]){p, p, p, p}, 4);
}

static void s_pool(gx_graph *g, const char *op, const char *name, const char *x, int64_t k,
                   int64_t s, const char *y)
{
    gx_node *n = s_node(g, op, name, 1, (const char *[]){x}, y);
    gx_node_set_ints(n, "kernel_shape", (const int64_t[]){k, k}, 2);
    gx_node_set_ints(n, "strides", (const int64_t[]){s, s}, 2);
    if (s == 1)
        gx_node_set_ints(n, "pads", (const int64_t[]){k / 2, k / 2, k / 2, k / 2}, 4);
}

/* x [n, 3, 32, 32] -> 10 classes */
static gx_graph *s_cnn(int64_t n)
{
    gx_graph *g = gx_graph_new("cnn");
    gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){n, 3, 32, 32});
    s_conv(g, "conv1", "x", 3, 16, 3, "c1");
    s_node(g, "Relu", "relu1", 1, (const char *[]){"c1"}, "r1");
    s_pool(g, "MaxPool", "pool1", "r1", 2, 2, "p1");
    s_conv(g, "conv2", "p1", 16, 32, 3, "c2");
    s_node(g, "Relu", "relu2", 1, (const char *[]){"c2"}, "r2");
    s_pool(g, "MaxPool", "pool2", "r2", 2, 2, "p2");
    s_conv(g, "conv3", "p2", 32, 32, 3, "c3");
    const char *bn[] = {"bn.s", "bn.b", "bn.m", "bn.v"};
    for (int i = 0; i < 4; i++)
        s_const(g, bn[i], 1, (const int64_t[]){32}, 0.5f);
    float *v = gx_tensor_data(g->consts[g->n_consts - 1].t);
    for (int i = 0; i < 32; i++)
        v[i] = 1.0f + fabsf(v[i]);
    s_node(g, "BatchNormalization", "bn", 5, (const char *[]){"c3", "bn.s", "bn.b", "bn.m", "bn.v"},
           "n3");
    s_node(g, "Relu", "relu3", 1, (const char *[]){"n3"}, "r3");
    s_node(g, "Add", "residual", 2, (const char *[]){"r3", "p2"}, "a3");
    s_pool(g, "AveragePool", "pool3", "a3", 3, 1, "q3");
    s_node(g, "GlobalAveragePool", "gap", 1, (const char *[]){"q3"}, "gp");
    s_node(g, "Flatten", "flat", 1, (const char *[]){"gp"}, "f");
    s_const(g, "fc.w", 2, (const int64_t[]){32, 10}, 0.2f);
    s_const(g, "fc.b", 1, (const int64_t[]){10}, 0.1f);
    s_node(g, "Gemm", "fc", 3, (const char *[]){"f", "fc.w", "fc.b"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

/* z = Conv1x1(x [1, 8, 32, 32]) to 64 channels; y = If(c) then
 * MaxPool(MaxPool(z)) (fastest in NHWC) else Softmax(z) over the channels
 * (NCHW only). Where z lies decides where one reorder of z runs: before
 * the If (always) or in the branch that needs it (with its probability). */
static gx_graph *s_if(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_pool(then, "MaxPool", "tp1", "z", 3, 1, "t1");
    s_pool(then, "MaxPool", "tp2", "t1", 3, 1, "t");
    gx_graph_add_output(then, "t");
    gx_node_set_int(s_node(els, "Softmax", "soft", 1, (const char *[]){"z"}, "e"), "axis", 1);
    gx_graph_add_output(els, "e");
    gx_graph *g = gx_graph_new("if");
    gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){1, 8, 32, 32});
    gx_graph_add_input(g, "c", GX_BOOL, 0, NULL);
    s_conv(g, "pre", "x", 8, 64, 1, "z");
    gx_node *n = gx_graph_add_node(g, "If", "if", 1, (const char *[]){"c"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    return g;
}

/* Seconds per job of plan p over `jobs` (inputs per job), best of RUNS
 * passes over them; output 0 of the last job into check. */
static double s_time(const gxd_plan *p, const gx_view *const *jobs, size_t n_jobs, float *check,
                     size_t n_check)
{
    char err[512];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    if (!arena)
        s_die("arena", "out of memory");
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t = 0;
        for (size_t j = 0; j < n_jobs; j++) {
            gxd_frame f;
            if (gxd_frame_init(&f, p, arena, jobs[j], &s_lim, &stop, err, sizeof err) < 0)
                s_die("frame", err);
            double t0 = gxb_now_s();
            if (gxd_exec_seq(&f) < 0)
                s_die("run", err);
            t += gxb_now_s() - t0;
            if (j == n_jobs - 1 && check)
                memcpy(check, gxd_frame_output(&f, 0)->data, n_check * sizeof *check);
            gxd_frame_fini(&f);
        }
        best = t < best ? t : best;
    }
    free(arena);
    return best / (double)n_jobs;
}

/* "conv1 nchw16c, pool1 nhwc, ..., 2 reorders" */
static void s_describe(const gxd_plan *p, char *buf, size_t len)
{
    const gxd_layout_rec *r = p->layout;
    size_t at = 0;
    if (!r || r->why[0]) {
        snprintf(buf, len, "all nchw (%s)", r ? r->why : "?");
        return;
    }
    for (size_t o = 0; o < r->n_ops && at < len; o++)
        if (r->ops[o].free)
            at += (size_t)snprintf(buf + at, len - at, "%s %s, ", r->ops[o].node,
                                   gx_layout_name((gx_layout)r->ops[o].chosen));
    if (at < len)
        snprintf(buf + at, len - at, "%zu reorders", r->n_reorders);
}

static float s_maxdiff(const float *a, const float *b, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

static void s_bench_cnn(int64_t n)
{
    char err[512], d1[512], d2[512];
    gx_graph *g = s_cnn(n);
    const int64_t numel = n * 3 * 32 * 32;
    float *x = gx_aligned_alloc((size_t)numel * sizeof *x);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand();
    const gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {n, 3, 32, 32}, .numel = numel,
                        .data = x};
    const gx_view *jobs[1] = {&in};
    gxd_compile_limits off = s_lim;
    off.no_layout = true;
    gxd_plan *p_on = NULL, *p_off = NULL;
    if (gxd_compile(g, &in, &s_lim, &p_on, err, sizeof err) < 0 ||
        gxd_compile(g, &in, &off, &p_off, err, sizeof err) < 0)
        s_die("compile", err);
    float y_on[80], y_off[80];
    const double t_off = s_time(p_off, jobs, 1, y_off, (size_t)n * 10);
    const double t_on = s_time(p_on, jobs, 1, y_on, (size_t)n * 10);
    s_describe(p_off, d1, sizeof d1);
    s_describe(p_on, d2, sizeof d2);
    printf("cnn batch %-3lld  nchw   %9.1f us   %s\n", (long long)n, t_off * 1e6, d1);
    printf("cnn batch %-3lld  chosen %9.1f us   %s\n", (long long)n, t_on * 1e6, d2);
    printf("cnn batch %-3lld  nchw / chosen = %.2fx  (expected by the pass: %.1f / %.1f us); "
           "max |diff| %.2g\n",
           (long long)n, t_off / t_on, p_on->layout->plain_total, p_on->layout->total,
           (double)s_maxdiff(y_on, y_off, (size_t)n * 10));
    gxd_plan_destroy(&p_on);
    gxd_plan_destroy(&p_off);
    gx_graph_destroy(&g);
    free(x);
}

/* A profile of 1000 jobs where the If took its then branch `then` times. */
static gxd_profile *s_if_profile(const gx_graph *g, int64_t then)
{
    gxd_profile *p = gxd_profile_new("00");
    if (!p)
        s_die("profile", "out of memory");
    p->jobs = 1000;
    gxd_profile_add(p, "pre", 1000, 0);
    gxd_profile_add(p, "if", 1000, 0);
    const gx_node *n = g->nodes[1];
    for (size_t a = 0; a < n->n_attr; a++) {
        const gx_graph *sub = n->attr[a].g;
        const bool is_then = strcmp(n->attr[a].name, "then_branch") == 0;
        for (size_t k = 0; sub && k < sub->n_nodes; k++) {
            char path[256];
            snprintf(path, sizeof path, "if/%s/%s", n->attr[a].name, sub->nodes[k]->name);
            gxd_profile_add(p, path, is_then ? then : 1000 - then, 0);
        }
    }
    gxd_profile_finish(p);
    return p;
}

static void s_bench_if(void)
{
    char err[512], desc[512];
    gx_graph *g = s_if();
    const int64_t numel = 8 * 32 * 32;
    float *x = gx_aligned_alloc((size_t)numel * sizeof *x);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand();
    uint8_t yes = 1, no = 0;
    gx_view in_t[2] = {{.dtype = GX_F32, .ndim = 4, .shape = {1, 8, 32, 32}, .numel = numel,
                        .data = x},
                       {.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &yes}};
    gx_view in_e[2] = {in_t[0], {.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &no}};
    gxd_profile *prof[2] = {s_if_profile(g, 900), s_if_profile(g, 100)};
    const char *name[2] = {"then 90%", "then 10%"};
    printf("\n# z = Conv1x1(x [1,8,32,32]) to 64 channels; If(c) then MaxPool(MaxPool(z)) "
           "else Softmax(z, axis 1); per job on the workload\n");
    for (int w = 0; w < 2; w++) {
        /* the workload: 10 jobs, 9 or 1 of them taking the then branch */
        const gx_view *jobs[10];
        for (int j = 0; j < 10; j++)
            jobs[j] = (w == 0 ? j < 9 : j < 1) ? in_t : in_e;
        const struct {
            const char *what;
            const gxd_profile *prof;
            bool off;
        } plans[4] = {{"nchw", NULL, true},
                      {"no profile", NULL, false},
                      {"its profile", prof[w], false},
                      {"other profile", prof[1 - w], false}};
        double t[4];
        for (int k = 0; k < 4; k++) {
            gxd_compile_limits lim = s_lim;
            lim.no_layout = plans[k].off;
            lim.profile = plans[k].prof;
            gxd_plan *p = NULL;
            if (gxd_compile(g, in_t, &lim, &p, err, sizeof err) < 0)
                s_die("compile", err);
            t[k] = s_time(p, jobs, 10, NULL, 0);
            s_describe(p, desc, sizeof desc);
            printf("%-9s %-14s %8.1f us   %s\n", name[w], plans[k].what, t[k] * 1e6, desc);
            gxd_plan_destroy(&p);
        }
        printf("%-9s nchw / its profile = %.2fx, no profile / its profile = %.2fx, other / its "
               "= %.2fx\n",
               name[w], t[0] / t[2], t[1] / t[2], t[3] / t[2]);
    }
    gxd_profile_destroy(&prof[0]);
    gxd_profile_destroy(&prof[1]);
    gx_graph_destroy(&g);
    free(x);
}

int main(void)
{
    openblas_set_num_threads(1); /* as gexecd's workers run it */
    printf("# the layout pass on and off, 1 thread, best of %d; AVX-512: %s\n", RUNS,
           __builtin_cpu_supports("avx512f") ? "yes" : "no");
    s_bench_cnn(1);
    s_bench_cnn(8);
    s_bench_if();
    return 0;
}
