/*
 * The fuse pass on 1<<20-element float32 chains of 5 elementwise ops,
 * y = F(Relu((x + c) * w) - c) with F = Neg (cheap: the chain is bound by
 * memory) and F = Tanh (bound by Tanh's arithmetic), fused and unfused
 * (compiler.fuse: false), on one thread: the best time of a few runs and
 * the rate of the chain's minimum traffic (x and w read once, y written
 * once) against a plain memcpy of as many bytes on the same machine; and
 * a MatMul with a bias and Relu epilogue, fused and unfused; a 200-op
 * chain on [1, 64] (where the per-step overhead is all there is); a CNN
 * layer, Conv 3x3 32->32 channels on 32x32, pad 1, with a bias Add and
 * Relu (a Conv epilogue), fused and unfused. Asserts nothing.
 *
 *     bench/bench_fuse
 */
#include <cblas.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"

#define N (1 << 20)
#define RUNS 20

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 1ll << 30,
                                         .max_arena_bytes = 1ll << 32};

/* Seconds of CLOCK_MONOTONIC. */
static void s_die(const char *what, const char *err)
{
    gxb_die("bench_fuse", what, err);
}

/* x, w [N] inputs, c a scalar constant:
 * a = x + c; b = a * w; r = Relu(b); d = r - c; y = last(d) */
static gx_graph *s_graph(const char *last)
{
    gx_graph *g = gx_graph_new("chain5");
    const int64_t n = N;
    gx_tensor *c = gx_tensor_new(GX_F32, 0, NULL);
    if (!g || !c)
        s_die("graph", "out of memory");
    *(float *)gx_tensor_data(c) = 0.25f;
    gx_graph_add_input(g, "x", GX_F32, 1, &n);
    gx_graph_add_input(g, "w", GX_F32, 1, &n);
    gx_graph_add_const(g, "c", &c);
    static const char *const ops[5][4] = {{"Add", "a", "x", "c"},
                                          {"Mul", "b", "a", "w"},
                                          {"Relu", "r", "b", NULL},
                                          {"Sub", "d", "r", "c"},
                                          {NULL, "y", "d", NULL}};
    for (int i = 0; i < 5; i++) {
        const char *in[2] = {ops[i][2], ops[i][3]};
        if (!gx_graph_add_node(g, ops[i][0] ? ops[i][0] : last, NULL, in[1] ? 2 : 1, in, 1,
                               &ops[i][1]))
            s_die("graph", "cannot add a node");
    }
    gx_graph_add_output(g, "y");
    return g;
}

/* Best seconds of RUNS runs of plan p (each step whole, on this thread);
 * the inputs are copied into the arena before each run, untimed (the
 * arena's memory for them may be reused by later values). */
static double s_time_n(const gxd_plan *p, const gx_view *in, float *check, size_t n_check,
                       int runs)
{
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    if (!arena)
        s_die("arena", "out of memory");
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        gxd_frame f;
        if (gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err) < 0)
            s_die("frame", err);
        double t0 = gxb_now_s();
        for (size_t s = 0; s < p->n_steps; s++)
            gxd_exec_step(&f, s);
        double t = gxb_now_s() - t0;
        best = t < best ? t : best;
        if (r == runs - 1)
            memcpy(check, gxd_frame_output(&f, 0)->data, n_check * sizeof(float));
        gxd_frame_fini(&f);
    }
    free(arena);
    return best;
}

static double s_time(const gxd_plan *p, const gx_view *in, float *check, size_t n_check)
{
    return s_time_n(p, in, check, n_check, RUNS);
}

/* Compiles g fused and unfused (compiler.fuse: false). */
static void s_compile2(const gx_graph *g, const gx_view *in, gxd_plan **on, gxd_plan **off)
{
    char err[512];
    gxd_compile_limits off_lim = s_lim;
    off_lim.no_fuse = true;
    if (gxd_compile(g, in, &s_lim, on, err, sizeof err) < 0 ||
        gxd_compile(g, in, &off_lim, off, err, sizeof err) < 0)
        s_die("compile", err);
}

/* One chain, fused and unfused: a line each. */
static void s_chain(const char *last, const gx_view *in, double copy_gbs, float *y_on,
                    float *y_off)
{
    char err[512];
    gx_graph *g = s_graph(last);
    gxd_compile_limits off_lim = s_lim;
    off_lim.no_fuse = true;
    gxd_plan *on = NULL, *off = NULL;
    if (gxd_compile(g, in, &s_lim, &on, err, sizeof err) < 0 ||
        gxd_compile(g, in, &off_lim, &off, err, sizeof err) < 0)
        s_die("compile", err);
    const double bytes = 3.0 * N * sizeof(float);
    double t_on = s_time(on, in, y_on, N), t_off = s_time(off, in, y_off, N);
    char name[32];
    snprintf(name, sizeof name, "%s,fused", last);
    printf("%-14s %6zu %10.2f %10.1f %12.2f %9.0f%%\n", name, on->n_steps,
           (double)on->arena_bytes / 1e6, t_on * 1e6, bytes / t_on / 1e9,
           100.0 * (bytes / t_on / 1e9) / copy_gbs);
    snprintf(name, sizeof name, "%s,unfused", last);
    printf("%-14s %6zu %10.2f %10.1f %12.2f %9.0f%%\n", name, off->n_steps,
           (double)off->arena_bytes / 1e6, t_off * 1e6, bytes / t_off / 1e9,
           100.0 * (bytes / t_off / 1e9) / copy_gbs);
    if (memcmp(y_on, y_off, N * sizeof(float)))
        printf("# %s: fused and unfused outputs DIFFER\n", last);
    gxd_plan_destroy(&on);
    gxd_plan_destroy(&off);
    gx_graph_destroy(&g);
}

/* y = Relu(x[256, 512] @ W[512, 1024] + b[1024]): MatMul with a bias and
 * activation epilogue, fused (one step) and unfused (three), one thread. */
static void s_mlp(void)
{
    enum { M = 256, K = 512, NN = 1024 };
    char err[512];
    gx_graph *g = gx_graph_new("mlp");
    gx_tensor *w = gx_tensor_new(GX_F32, 2, (const int64_t[]){K, NN});
    gx_tensor *b = gx_tensor_new(GX_F32, 1, (const int64_t[]){NN});
    float *x = gx_aligned_alloc((size_t)M * K * sizeof *x);
    float *y_on = malloc((size_t)M * NN * sizeof *y_on);
    float *y_off = malloc((size_t)M * NN * sizeof *y_off);
    if (!g || !w || !b || !x || !y_on || !y_off)
        s_die("mlp", "out of memory");
    for (int64_t i = 0; i < (int64_t)K * NN; i++)
        ((float *)gx_tensor_data(w))[i] = (float)(i * 7919 % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < NN; i++)
        ((float *)gx_tensor_data(b))[i] = (float)(i % 17) / 17.0f - 0.5f;
    for (int64_t i = 0; i < (int64_t)M * K; i++)
        x[i] = (float)(i * 104729 % 1000) / 1000.0f - 0.5f;
    gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){M, K});
    gx_graph_add_const(g, "W", &w);
    gx_graph_add_const(g, "b", &b);
    gx_graph_add_node(g, "MatMul", "M", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"m"});
    gx_graph_add_node(g, "Add", "A", 2, (const char *[]){"m", "b"}, 1, (const char *[]){"a"});
    gx_graph_add_node(g, "Relu", "R", 1, (const char *[]){"a"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    const gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {M, K}, .numel = M * K, .data = x};
    gxd_compile_limits off_lim = s_lim;
    off_lim.no_fuse = true;
    gxd_plan *on = NULL, *off = NULL;
    if (gxd_compile(g, &in, &s_lim, &on, err, sizeof err) < 0 ||
        gxd_compile(g, &in, &off_lim, &off, err, sizeof err) < 0)
        s_die("compile", err);
    double t_on = s_time(on, &in, y_on, (size_t)M * NN);
    double t_off = s_time(off, &in, y_off, (size_t)M * NN);
    const double flop = 2.0 * M * K * NN;
    printf("# MatMul [%d,%d] x [%d,%d] + bias, Relu (an epilogue), 1 thread, best of %d\n", M, K,
           K, NN, RUNS);
    printf("%-14s %6s %10s %10s %12s\n", "plan", "steps", "arena_MB", "time_us", "GFLOP/s");
    printf("%-14s %6zu %10.2f %10.1f %12.2f\n", "mlp,fused", on->n_steps,
           (double)on->arena_bytes / 1e6, t_on * 1e6, flop / t_on / 1e9);
    printf("%-14s %6zu %10.2f %10.1f %12.2f\n", "mlp,unfused", off->n_steps,
           (double)off->arena_bytes / 1e6, t_off * 1e6, flop / t_off / 1e9);
    if (memcmp(y_on, y_off, (size_t)M * NN * sizeof *y_on))
        printf("# mlp: fused and unfused outputs DIFFER\n");
    gxd_plan_destroy(&on);
    gxd_plan_destroy(&off);
    gx_graph_destroy(&g);
    free(x), free(y_on), free(y_off);
}

/* y = a 200-op chain on x[1, 64]: (+c, *c, Relu, -c, Neg) forty times;
 * fused (groups of GX_FUSED_MAX_OPS) and unfused, one thread: the best of
 * many runs, microseconds per run and runs per second. */
static void s_long_chain(void)
{
    enum { LEN = 200, W = 64, REPS = 2000 };
    static const char *const ops[5] = {"Add", "Mul", "Relu", "Sub", "Neg"};
    gx_graph *g = gx_graph_new("chain200");
    gx_tensor *c = gx_tensor_new(GX_F32, 0, NULL);
    float *x = gx_aligned_alloc(W * sizeof *x), *y_on = malloc(W * sizeof *y_on);
    float *y_off = malloc(W * sizeof *y_off);
    if (!g || !c || !x || !y_on || !y_off)
        s_die("chain200", "out of memory");
    *(float *)gx_tensor_data(c) = 0.75f;
    for (int i = 0; i < W; i++)
        x[i] = (float)(i % 13) / 6.0f - 1.0f;
    gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){1, W});
    gx_graph_add_const(g, "c", &c);
    char prev[16] = "x", out[16];
    for (int i = 0; i < LEN; i++) {
        snprintf(out, sizeof out, i == LEN - 1 ? "y" : "v%d", i);
        const char *in[2] = {prev, "c"}, *o = out;
        const int k = i % 5, n_in = k == 2 || k == 4 ? 1 : 2;
        if (!gx_graph_add_node(g, ops[k], NULL, n_in, in, 1, &o))
            s_die("chain200", "cannot add a node");
        memcpy(prev, out, sizeof prev);
    }
    gx_graph_add_output(g, "y");
    const gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {1, W}, .numel = W, .data = x};
    gxd_plan *on = NULL, *off = NULL;
    s_compile2(g, &in, &on, &off);
    double t_on = s_time_n(on, &in, y_on, W, REPS), t_off = s_time_n(off, &in, y_off, W, REPS);
    printf("# %d-op elementwise chain on [1,%d] float32, 1 thread, best of %d\n", LEN, W, REPS);
    printf("%-14s %6s %10s %12s %10s\n", "plan", "steps", "time_us", "runs/s", "speedup");
    printf("%-14s %6zu %10.2f %12.0f %9.2fx\n", "chain200,fused", on->n_steps, t_on * 1e6,
           1.0 / t_on, t_off / t_on);
    printf("%-14s %6zu %10.2f %12.0f %9.2fx\n", "chain200,unfus", off->n_steps, t_off * 1e6,
           1.0 / t_off, 1.0);
    if (memcmp(y_on, y_off, W * sizeof *y_on))
        printf("# chain200: fused and unfused outputs DIFFER\n");
    gxd_plan_destroy(&on);
    gxd_plan_destroy(&off);
    gx_graph_destroy(&g);
    free(x), free(y_on), free(y_off);
}

/* y = Relu(Conv3x3(x[1, 32, 32, 32], W[32, 32, 3, 3], pad 1) + b[1, 32, 1, 1]):
 * Conv with a bias and activation epilogue, fused (one step) and unfused
 * (three), one thread. */
static void s_cnn(void)
{
    enum { C = 32, M = 32, H = 32, K = 3, REPS = 200 };
    gx_graph *g = gx_graph_new("cnn");
    gx_tensor *w = gx_tensor_new(GX_F32, 4, (const int64_t[]){M, C, K, K});
    gx_tensor *b = gx_tensor_new(GX_F32, 4, (const int64_t[]){1, M, 1, 1});
    const size_t ny = (size_t)M * H * H;
    float *x = gx_aligned_alloc((size_t)C * H * H * sizeof *x);
    float *y_on = malloc(ny * sizeof *y_on), *y_off = malloc(ny * sizeof *y_off);
    if (!g || !w || !b || !x || !y_on || !y_off)
        s_die("cnn", "out of memory");
    for (int64_t i = 0; i < (int64_t)M * C * K * K; i++)
        ((float *)gx_tensor_data(w))[i] = (float)(i * 7919 % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < M; i++)
        ((float *)gx_tensor_data(b))[i] = (float)(i % 17) / 17.0f - 0.5f;
    for (int64_t i = 0; i < (int64_t)C * H * H; i++)
        x[i] = (float)(i * 104729 % 1000) / 1000.0f - 0.5f;
    gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){1, C, H, H});
    gx_graph_add_const(g, "W", &w);
    gx_graph_add_const(g, "b", &b);
    gx_node *cv = gx_graph_add_node(g, "Conv", "C", 2, (const char *[]){"x", "W"}, 1,
                                    (const char *[]){"cv"});
    if (!cv)
        s_die("cnn", "cannot add a node");
    gx_node_set_ints(cv, "kernel_shape", (const int64_t[]){K, K}, 2);
    gx_node_set_ints(cv, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    gx_graph_add_node(g, "Add", "A", 2, (const char *[]){"cv", "b"}, 1, (const char *[]){"a"});
    gx_graph_add_node(g, "Relu", "R", 1, (const char *[]){"a"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    const gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, C, H, H},
                        .numel = C * H * H, .data = x};
    gxd_plan *on = NULL, *off = NULL;
    s_compile2(g, &in, &on, &off);
    double t_on = s_time_n(on, &in, y_on, ny, REPS), t_off = s_time_n(off, &in, y_off, ny, REPS);
    const double flop = 2.0 * M * C * K * K * H * H;
    printf("# Conv 3x3 %d->%d on %dx%d, pad 1, + bias, Relu (an epilogue), 1 thread, best of"
           " %d\n", C, M, H, H, REPS);
    printf("%-14s %6s %10s %10s %12s %10s\n", "plan", "steps", "arena_MB", "time_us", "GFLOP/s",
           "speedup");
    printf("%-14s %6zu %10.3f %10.1f %12.2f %9.2fx\n", "cnn,fused", on->n_steps,
           (double)on->arena_bytes / 1e6, t_on * 1e6, flop / t_on / 1e9, t_off / t_on);
    printf("%-14s %6zu %10.3f %10.1f %12.2f %9.2fx\n", "cnn,unfused", off->n_steps,
           (double)off->arena_bytes / 1e6, t_off * 1e6, flop / t_off / 1e9, 1.0);
    if (memcmp(y_on, y_off, ny * sizeof *y_on))
        printf("# cnn: fused and unfused outputs DIFFER\n");
    gxd_plan_destroy(&on);
    gxd_plan_destroy(&off);
    gx_graph_destroy(&g);
    free(x), free(y_on), free(y_off);
}

int main(void)
{
    openblas_set_num_threads(1); /* as gexecd's workers run it */
    float *x = gx_aligned_alloc(N * sizeof *x), *w = gx_aligned_alloc(N * sizeof *w);
    float *y_on = malloc(N * sizeof *y_on), *y_off = malloc(N * sizeof *y_off);
    float *dst = gx_aligned_alloc(3 * (size_t)N / 2 * sizeof *dst);
    float *src = gx_aligned_alloc(3 * (size_t)N / 2 * sizeof *src);
    if (!x || !w || !y_on || !y_off || !dst || !src)
        s_die("buffers", "out of memory");
    for (int i = 0; i < N; i++) {
        x[i] = (float)((int64_t)i * 7919 % 2000) / 500.0f - 2.0f;
        w[i] = (float)((int64_t)i * 104729 % 1000) / 500.0f - 1.0f;
    }
    memset(src, 1, 3 * (size_t)N / 2 * sizeof *src);
    memset(dst, 0, 3 * (size_t)N / 2 * sizeof *dst);
    const gx_view in[2] = {{.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = x},
                           {.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = w}};

    /* a memcpy with the chain's traffic: 1.5 N floats read and written */
    const double bytes = 3.0 * N * sizeof(float);
    double t_copy = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = gxb_now_s();
        memcpy(dst, src, 3 * (size_t)N / 2 * sizeof *dst);
        double t = gxb_now_s() - t0;
        t_copy = t < t_copy ? t : t_copy;
    }
    const double copy_gbs = bytes / t_copy / 1e9;
    printf("# 5-op elementwise chains on %d float32: y = F(Relu((x + c) * w) - c), 1 thread,"
           " best of %d\n", N, RUNS);
    printf("# minimum traffic %.1f MB (x, w read once, y written once)\n", bytes / 1e6);
    printf("%-14s %6s %10s %10s %12s %10s\n", "plan", "steps", "arena_MB", "time_us",
           "GB/s_min", "vs_memcpy");
    printf("%-14s %6s %10s %10.1f %12.2f %9.0f%%\n", "memcpy", "-", "-", t_copy * 1e6, copy_gbs,
           100.0);
    s_chain("Neg", in, copy_gbs, y_on, y_off);
    s_chain("Tanh", in, copy_gbs, y_on, y_off);
    s_mlp();
    s_long_chain();
    s_cnn();
    free(x), free(w), free(y_on), free(y_off), free(dst), free(src);
    return 0;
}
