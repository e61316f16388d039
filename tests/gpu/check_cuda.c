/*
 * The CUDA backend on a real GPU (run by tests/gpu/run.sh on a machine with
 * one, and by make check, where it skips with 77 when there is none).
 * Each case compiles a small graph twice in-process, once preferring cuda
 * (partition.min_nodes 1) and once on the CPU only, runs both with the
 * sequential executor, checks that the nodes ran on cuda and that the
 * outputs agree within 1e-4 relative (and, for fused cases, that the
 * plan has a fused step on cuda), and prints PASS or FAIL; the cases
 * without cuDNN run again over float16 tensors ("f16" lines: 8e-3, the
 * CPU rounding each op's output to float16, a fused group on the GPU only
 * its last); the MLP and
 * the convnet also run 5 times over one arena and stream as CUDA Graphs
 * (scheduler.device_graphs), each run checked and the graph counters
 * showing recordings and replays; then MatMul 1024^3 to 8192^3 through a
 * plan against cuBLAS alone (float32, TF32, float16), a 200-op elementwise chain with the fuse
 * pass on and off and, fuse off, as one CUDA Graph per job against one
 * launch per op, and a small-batch MLP with graphs on and off.
 *
 *   tests/gpu/check_cuda            the cases and the timing
 *   tests/gpu/check_cuda --npy-close A.npy B.npy   (run.sh) exit 0 if close
 */
#include <config.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gexec/io.h>

#include "daemon/arenas.h"
#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"

#define S_TOL 1e-4
#define S_TOL_F16 8e-3

/* The dtype of the cases' tensors (s_input, s_const, s_scalar): float32,
 * then float16 for the second pass. */
static gx_dtype s_dt = GX_F32;
/* In the float16 pass: may the cuda plan compute steps in float32 (the
 * widen pass: cuDNN's ops)? Then every step but the copies must run on
 * cuda, the widen pass's Casts included; else none may be widened. */
static bool s_may_widen;

static double s_tol(void)
{
    return s_dt == GX_F16 ? S_TOL_F16 : S_TOL;
}

/* Element i of a float32 or float16 view, as a float. */
static float s_at(const gx_view *v, int64_t i)
{
    return (float)gx_cpu_load_f64(v->data, v->dtype, i);
}

static int s_pass, s_fail;

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic values in [-1, 1) (positive ones for Log and Sqrt). */
static void s_fill(float *p, int64_t n, unsigned seed, bool positive)
{
    uint32_t x = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        float v = (float)(x >> 8) / (float)(1u << 24) * 2.f - 1.f;
        p[i] = positive ? fabsf(v) + 0.05f : v;
    }
}

/* n deterministic values of s_dt into p (s_fill's, rounded to float16). */
static void s_fill_dt(void *p, int64_t n, unsigned seed, bool positive)
{
    if (s_dt != GX_F16) {
        s_fill(p, n, seed, positive);
        return;
    }
    float *f = malloc((size_t)n * sizeof *f + 1);
    s_fill(f, n, seed, positive);
    for (int64_t i = 0; i < n; i++)
        ((uint16_t *)p)[i] = gx_f32_to_f16(f[i]);
    free(f);
}

static gx_tensor *s_const(gx_graph *g, const char *name, int nd, const int64_t *shape,
                          unsigned seed)
{
    gx_tensor *t = gx_tensor_new(s_dt, nd, shape);
    s_fill_dt(gx_tensor_data(t), gx_tensor_numel(t), seed, false);
    gx_graph_add_const(g, name, &t);
    return NULL;
}

/* A constant of n positive values of s_dt (a variance). */
static void s_positive(gx_graph *g, const char *name, int64_t n, unsigned seed)
{
    gx_tensor *t = gx_tensor_new(s_dt, 1, &n);
    s_fill_dt(gx_tensor_data(t), n, seed, true);
    gx_graph_add_const(g, name, &t);
}

/* A scalar constant v of s_dt. */
static void s_scalar(gx_graph *g, const char *name, float v)
{
    uint16_t h = gx_f32_to_f16(v);
    gx_tensor *t = s_dt == GX_F16 ? gx_tensor_new_copy(GX_F16, 0, NULL, &h, sizeof h)
                                  : gx_tensor_new_copy(GX_F32, 0, NULL, &v, sizeof v);
    gx_graph_add_const(g, name, &t);
}

typedef struct s_case {
    const char *name;
    gx_graph *g;
    int n_in;
    gx_view in[3];
    void *data[3];
    const char *on_cuda[8]; /* nodes that must run on cuda */
    int want_fused;         /* fused steps the cuda plan must have on cuda */
    int graph_runs;         /* also run the cuda plan this many times over one
                             * arena and stream: each run must match, and its
                             * runs of kernels be replayed as CUDA Graphs */
} s_case;

static void s_input(s_case *c, const char *name, int nd, const int64_t *shape, bool positive)
{
    gx_graph_add_input(c->g, name, s_dt, nd, shape);
    gx_view *v = &c->in[c->n_in];
    *v = (gx_view){.dtype = s_dt, .ndim = nd, .numel = 1};
    for (int i = 0; i < nd; i++)
        v->numel *= v->shape[i] = shape[i];
    c->data[c->n_in] = malloc((size_t)v->numel * gx_dtype_size(s_dt));
    s_fill_dt(c->data[c->n_in], v->numel, 7u + (unsigned)c->n_in, positive);
    v->data = c->data[c->n_in++];
}

static gx_node *s_node(gx_graph *g, const char *op, const char *name, int n, const char *a,
                       const char *b, const char *cc, const char *out)
{
    const char *in[3] = {a, b, cc};
    return gx_graph_add_node(g, op, name, (size_t)n, in, 1, (const char *[]){out});
}

static gxd_compile_limits s_lim(const gxd_partition_opts *o)
{
    return (gxd_compile_limits){.max_nodes = 10000, .max_tensor_bytes = 1ll << 31,
                                .max_arena_bytes = 8ll << 30, .part = o};
}

static int s_compile(s_case *c, const gx_backend *first, gxd_plan **p, char *err, size_t len)
{
    gxd_partition_opts o = {.min_nodes = 1, .no_cost_check = true}; /* tiny graphs too */
    if (first)
        o.backends[o.n_backends++] = first;
    o.backends[o.n_backends++] = gx_backend_cpu();
    gxd_compile_limits lim = s_lim(&o);
    return gxd_compile(c->g, c->in, &lim, p, err, len);
}

/* Does p run a kernel (not a copy) on a device without host memory? */
static bool s_kernels_off_host(const gxd_plan *p)
{
    for (size_t i = 0; i < p->n_steps; i++)
        if (!p->steps[i].copy && !p->steps[i].folded &&
            !p->devices[p->steps[i].device]->host_memory)
            return true;
    return false;
}

/* Runs p; out gets a malloc'd copy of output 0 as n floats. A plan with
 * kernels on the GPU must report their device time. */
static int s_run(const gxd_plan *p, const gx_view *in, float **out, int64_t *n, char *err,
                 size_t len)
{
    gxd_compile_limits lim = s_lim(NULL);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    gxd_frame f;
    int rc = gxd_frame_init_ex(&f, p, arena, false, in, &lim, &stop, err, len);
    if (rc == GX_OK) {
        if ((rc = gxd_exec_seq(&f)) == GX_OK) {
            const gx_view *v = gxd_frame_output(&f, 0);
            *n = v->numel;
            *out = malloc((size_t)v->numel * sizeof(float) + 1);
            for (int64_t i = 0; i < v->numel; i++)
                (*out)[i] = s_at(v, i);
            if ((f.device_ns > 0) != s_kernels_off_host(p))
                rc = gx_errf(err, len, GX_EINTERNAL, "device time %lld ns for a plan %s kernels "
                             "on the GPU", (long long)f.device_ns,
                             s_kernels_off_host(p) ? "with" : "without");
        }
        gxd_frame_fini(&f);
    }
    free(arena);
    return rc;
}

/* Runs p (graphs on) `runs` times over one arena and queue per device,
 * as a daemon's worker does, comparing each run's output 0 with the CPU's
 * (want, n floats); then the graph counters must show every run of
 * kernels recorded once (run 2) and replayed from then on. false with
 * why. */
static bool s_graph_runs(const gxd_plan *p, const gx_view *in, int runs, const float *want,
                         int64_t n, char *why, size_t len)
{
    gxd_compile_limits lim = s_lim(NULL);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_devmem dm = {0};
    bool ok = true;
    char err[512] = "";
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    for (size_t d = 1; d < p->n_devices && ok; d++) {
        const gx_backend *b = p->devices[d];
        if (b->host_memory)
            continue;
        if (!(dm.arena[d] = b->alloc(b, p->dev_arena_bytes[d])) ||
            (b->queue_new && !(dm.queue[d] = b->queue_new(b)))) {
            snprintf(why, len, "graph runs: no arena or queue on %s", b->name);
            ok = false;
        }
    }
    const gxd_graph_stats was = gxd_plan_graph_stats(p); /* s_check's run may count */
    for (int r = 1; r <= runs && ok; r++) {
        gxd_frame f;
        int rc = gxd_frame_init_dev(&f, p, arena, &dm, false, in, &lim, &stop, err, sizeof err);
        if (rc == GX_OK && (rc = gxd_exec_seq(&f)) == GX_OK) {
            const gx_view *v = gxd_frame_output(&f, 0);
            for (int64_t i = 0; i < n && ok; i++)
                if (v->numel != n || !(fabs((double)s_at(v, i) - want[i]) <=
                                       s_tol() * fmax(1.0, fabs((double)want[i])))) {
                    snprintf(why, len, "graph run %d: element %lld: cuda %.9g, cpu %.9g", r,
                             (long long)i, v->numel == n ? s_at(v, i) : NAN, want[i]);
                    ok = false;
                }
        }
        if (rc < 0) {
            snprintf(why, len, "graph run %d: %s", r, err);
            ok = false;
        }
        gxd_frame_fini(&f);
    }
    gxd_graph_stats st = gxd_plan_graph_stats(p);
    st.captures -= was.captures;
    st.replays -= was.replays;
    /* the first run over these may be recorded already when s_check's run
     * had the same arena and (pooled) stream: runs 3 on are replays anyway */
    if (ok && (st.failed || st.captures < 1 || st.replays < runs - 2)) {
        snprintf(why, len,
                 "graph counters after %d runs: %lld recorded, %lld replays, %lld failed "
                 "(stderr says why), %lld stale, %lld left out",
                 runs, (long long)st.captures, (long long)st.replays, (long long)st.failed,
                 (long long)st.stale, (long long)st.full);
        ok = false;
    }
    if (ok)
        snprintf(why, len, "%d runs: %lld graphs recorded, %lld replays (%lld stale), all match",
                 runs, (long long)st.captures, (long long)st.replays, (long long)st.stale);
    for (size_t d = 1; d < p->n_devices; d++) {
        const gx_backend *b = p->devices[d];
        if (dm.queue[d]) {
            b->queue_sync(b, dm.queue[d]);
            b->queue_free(b, dm.queue[d]);
        }
        if (dm.arena[d])
            b->free(b, dm.arena[d]);
    }
    free(arena);
    return ok;
}

static const char *s_device_of(const gxd_plan *p, const char *node)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!s->copy && s->node && s->node->name && strcmp(s->node->name, node) == 0)
            return p->devices[s->device]->name;
    }
    for (size_t g = 0; g < p->n_fuse_groups; g++) /* a member of a fused step */
        for (size_t j = 0; j < p->fuse_groups[g].n_nodes; j++)
            if (p->fuse_groups[g].nodes[j] && strcmp(p->fuse_groups[g].nodes[j], node) == 0)
                return p->devices[p->steps[p->fuse_groups[g].step].device]->name;
    return "(no step)";
}

static void s_check(s_case *c)
{
    gx_graph_add_output(c->g, "y");
    char err[512] = "", why[600] = "";
    gxd_plan *pg = NULL, *pc = NULL;
    float *yg = NULL, *yc = NULL;
    int64_t ng = 0, nc = 0;
    bool ok = false;
    if (s_compile(c, gx_backend_cuda(), &pg, err, sizeof err) < 0) {
        snprintf(why, sizeof why, "compile (cuda): %s", err);
        goto out;
    }
    if (s_compile(c, NULL, &pc, err, sizeof err) < 0) {
        snprintf(why, sizeof why, "compile (cpu): %s", err);
        goto out;
    }
    for (int i = 0; i < 8 && c->on_cuda[i]; i++)
        if (strcmp(s_device_of(pg, c->on_cuda[i]), "cuda") != 0) {
            snprintf(why, sizeof why, "node %s ran on %s, not cuda", c->on_cuda[i],
                     s_device_of(pg, c->on_cuda[i]));
            goto out;
        }
    for (size_t i = 0; s_dt == GX_F16 && i < pg->n_steps; i++) {
        const gxd_step *st = &pg->steps[i];
        if (st->wide && !s_may_widen) { /* cuda runs every op of these in float16 */
            snprintf(why, sizeof why, "step of node %s computes in float32 (widened)",
                     st->node->name);
            goto out;
        }
        if (s_may_widen && !st->copy && !st->folded &&
            strcmp(pg->devices[st->device]->name, "cuda") != 0) {
            snprintf(why, sizeof why, "step of node %s (%s) runs on %s", st->node->name,
                     st->node->op, pg->devices[st->device]->name);
            goto out;
        }
    }
    int fused = 0;
    for (size_t i = 0; i < pg->n_steps; i++)
        fused += pg->steps[i].fused && strcmp(pg->devices[pg->steps[i].device]->name, "cuda") == 0;
    if (fused < c->want_fused) {
        snprintf(why, sizeof why, "%d fused steps on cuda, %d expected", fused, c->want_fused);
        goto out;
    }
    if (s_run(pg, c->in, &yg, &ng, err, sizeof err) < 0) {
        snprintf(why, sizeof why, "run (cuda): %s", err);
        goto out;
    }
    if (s_run(pc, c->in, &yc, &nc, err, sizeof err) < 0) {
        snprintf(why, sizeof why, "run (cpu): %s", err);
        goto out;
    }
    if (ng != nc) {
        snprintf(why, sizeof why, "%lld outputs on cuda, %lld on cpu", (long long)ng,
                 (long long)nc);
        goto out;
    }
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < ng; i++) {
        double d = fabs((double)yg[i] - yc[i]) / fmax(1.0, fabs((double)yc[i]));
        if (!(d <= worst)) { /* NaN counts as worst */
            worst = isnan(d) ? INFINITY : d;
            at = i;
        }
    }
    if (!(worst <= s_tol())) {
        snprintf(why, sizeof why, "element %lld: cuda %.9g, cpu %.9g (relative error %.3g)",
                 (long long)at, yg[at], yc[at], worst);
        goto out;
    }
    snprintf(why, sizeof why, "%lld values, max relative error %.2g", (long long)ng, worst);
    ok = true;
    if (c->graph_runs) {
        char gw[400];
        ok = s_graph_runs(pg, c->in, c->graph_runs, yc, nc, gw, sizeof gw);
        size_t wl = strlen(why);
        snprintf(why + wl, sizeof why - wl, "; %s", gw);
    }
out:
    printf("%s %s%-28s %s\n", ok ? "PASS" : "FAIL", s_dt == GX_F16 ? "f16 " : "", c->name,
           why);
    fflush(stdout);
    ok ? s_pass++ : s_fail++;
    free(yg);
    free(yc);
    gxd_plan_destroy(&pg);
    gxd_plan_destroy(&pc);
    gx_graph_destroy(&c->g);
    for (int i = 0; i < c->n_in; i++)
        free(c->data[i]);
}

static s_case s_new(const char *name)
{
    return (s_case){.name = name, .g = gx_graph_new(name)};
}

/* ---- the cases ---------------------------------------------------------- */

static void s_matmul2d(void)
{
    s_case c = s_new("MatMul 2-D 67x129x33");
    s_input(&c, "a", 2, (int64_t[]){67, 129}, false);
    s_const(c.g, "w", 2, (int64_t[]){129, 33}, 3);
    s_node(c.g, "MatMul", "mm", 2, "a", "w", NULL, "y");
    c.on_cuda[0] = "mm";
    s_check(&c);
}

static void s_matmul_batched(void)
{
    s_case c = s_new("MatMul batched 3x5 x 2-D B");
    s_input(&c, "a", 4, (int64_t[]){3, 5, 17, 40}, false);
    s_const(c.g, "w", 2, (int64_t[]){40, 24}, 4);
    s_node(c.g, "MatMul", "mm", 2, "a", "w", NULL, "y");
    c.on_cuda[0] = "mm";
    s_check(&c);

    c = s_new("MatMul batched A and B");
    s_input(&c, "a", 3, (int64_t[]){6, 19, 31}, false);
    s_input(&c, "b", 3, (int64_t[]){6, 31, 23}, false);
    s_node(c.g, "MatMul", "mm", 2, "a", "b", NULL, "y");
    c.on_cuda[0] = "mm";
    s_check(&c);
}

static void s_gemm(int ta, int tb, int cdims, double alpha, double beta)
{
    char name[64];
    snprintf(name, sizeof name, "Gemm tA%d tB%d C%dd a%g b%g", ta, tb, cdims, alpha, beta);
    s_case c = s_new(name);
    const int64_t m = 37, k = 53, n = 29;
    s_input(&c, "a", 2, ta ? (int64_t[]){k, m} : (int64_t[]){m, k}, false);
    s_const(c.g, "b", 2, tb ? (int64_t[]){n, k} : (int64_t[]){k, n}, 5);
    if (cdims == 1)
        s_const(c.g, "c", 1, (int64_t[]){n}, 6);
    else if (cdims == 2)
        s_const(c.g, "c", 2, (int64_t[]){m, 1}, 6);
    gx_node *nd = s_node(c.g, "Gemm", "gemm", cdims ? 3 : 2, "a", "b", "c", "y");
    gx_node_set_int(nd, "transA", ta);
    gx_node_set_int(nd, "transB", tb);
    gx_node_set_float(nd, "alpha", alpha);
    gx_node_set_float(nd, "beta", beta);
    c.on_cuda[0] = "gemm";
    s_check(&c);
}

static void s_unary(const char *op, bool positive, const char *attr, double v)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", op, attr ? " " : "", attr ? attr : "");
    s_case c = s_new(name);
    s_input(&c, "x", 3, (int64_t[]){4, 33, 65}, positive);
    gx_node *nd = s_node(c.g, op, "u", 1, "x", NULL, NULL, "y");
    if (attr && strcmp(attr, "tanh") == 0)
        gx_node_set_string(nd, "approximate", "tanh");
    else if (attr)
        gx_node_set_float(nd, attr, v);
    if (strcmp(op, "Identity") != 0) /* the rewrite pass may drop it */
        c.on_cuda[0] = "u";
    s_check(&c);
}

static void s_clip_inputs(void)
{
    s_case c = s_new("Clip min/max inputs");
    s_input(&c, "x", 2, (int64_t[]){31, 70}, false);
    s_scalar(c.g, "lo", -0.25f);
    s_scalar(c.g, "hi", 0.5f);
    s_node(c.g, "Clip", "u", 3, "x", "lo", "hi", "y");
    c.on_cuda[0] = "u";
    s_check(&c);
}

static void s_binary(const char *op, int nb, const int64_t *bshape)
{
    char name[64];
    snprintf(name, sizeof name, "%s %s", op, nb == 3 ? "same shape" : "broadcast");
    s_case c = s_new(name);
    s_input(&c, "a", 3, (int64_t[]){5, 12, 37}, false);
    s_input(&c, "b", nb, bshape, strcmp(op, "Div") == 0);
    s_node(c.g, op, "bin", 2, "a", "b", NULL, "y");
    c.on_cuda[0] = "bin";
    s_check(&c);
}

static void s_softmax(void)
{
    s_case c = s_new("Softmax last axis 1000");
    s_input(&c, "x", 2, (int64_t[]){33, 1000}, false);
    gx_node *nd = s_node(c.g, "Softmax", "sm", 1, "x", NULL, NULL, "y");
    gx_node_set_int(nd, "axis", -1);
    c.on_cuda[0] = "sm";
    s_check(&c);
}

static void s_reshape(void)
{
    s_case c = s_new("Relu-Reshape-Neg");
    s_input(&c, "x", 2, (int64_t[]){8, 30}, false);
    gx_tensor *sh = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){3}, (int64_t[]){4, 2, 30},
                                       3 * sizeof(int64_t));
    gx_graph_add_const(c.g, "shape", &sh);
    s_node(c.g, "Relu", "r", 1, "x", NULL, NULL, "r1");
    s_node(c.g, "Reshape", "rs", 2, "r1", "shape", NULL, "r2");
    s_node(c.g, "Neg", "n", 1, "r2", NULL, NULL, "y");
    c.on_cuda[0] = "r";
    c.on_cuda[1] = "n";
    s_check(&c);
}

/* The MLP of s_mlp with a batch of `batch` rows, output "y". */
static void s_mlp_graph(s_case *c, int64_t batch)
{
    s_input(c, "x", 2, (int64_t[]){batch, 256}, false);
    s_const(c->g, "w1", 2, (int64_t[]){256, 512}, 11);
    s_const(c->g, "b1", 1, (int64_t[]){512}, 12);
    s_const(c->g, "w2", 2, (int64_t[]){512, 10}, 13);
    s_node(c->g, "MatMul", "fc1", 2, "x", "w1", NULL, "h");
    s_node(c->g, "Add", "bias1", 2, "h", "b1", NULL, "hb");
    s_node(c->g, "Relu", "act", 1, "hb", NULL, NULL, "a");
    s_node(c->g, "MatMul", "fc2", 2, "a", "w2", NULL, "z");
    gx_node *nd = s_node(c->g, "Softmax", "sm", 1, "z", NULL, NULL, "y");
    gx_node_set_int(nd, "axis", -1);
}

static void s_mlp(void)
{
    s_case c = s_new("MLP MatMul-Add-Relu-MatMul-Softmax");
    s_input(&c, "x", 2, (int64_t[]){64, 256}, false);
    s_const(c.g, "w1", 2, (int64_t[]){256, 512}, 11);
    s_const(c.g, "b1", 1, (int64_t[]){512}, 12);
    s_const(c.g, "w2", 2, (int64_t[]){512, 10}, 13);
    s_node(c.g, "MatMul", "fc1", 2, "x", "w1", NULL, "h");
    s_node(c.g, "Add", "bias1", 2, "h", "b1", NULL, "hb");
    s_node(c.g, "Relu", "act", 1, "hb", NULL, NULL, "a");
    s_node(c.g, "MatMul", "fc2", 2, "a", "w2", NULL, "z");
    gx_node *nd = s_node(c.g, "Softmax", "sm", 1, "z", NULL, NULL, "y");
    gx_node_set_int(nd, "axis", -1);
    c.on_cuda[0] = "fc1";
    c.on_cuda[1] = "bias1";
    c.on_cuda[2] = "act";
    c.on_cuda[3] = "fc2";
    c.on_cuda[4] = "sm";
    s_check(&c);
    /* again, run 5 times as CUDA Graphs */
    c = s_new("MLP as CUDA Graphs, 5 runs");
    s_mlp_graph(&c, 64);
    c.graph_runs = 5;
    s_check(&c);
}

/* ---- fused groups ------------------------------------------------------- */

/* Add -> Relu -> Mul -> Sigmoid as one fused step on cuda: a same-shape
 * input, a broadcast row and a scalar. */
static void s_fused_chain(void)
{
    s_case c = s_new("fused Add-Relu-Mul-Sigmoid");
    s_input(&c, "x", 3, (int64_t[]){4, 33, 65}, false);
    s_input(&c, "b", 3, (int64_t[]){4, 33, 65}, false);
    s_const(c.g, "row", 2, (int64_t[]){1, 65}, 51);
    s_scalar(c.g, "two", 2.5f);
    s_node(c.g, "Add", "add", 2, "x", "b", NULL, "t1");
    s_node(c.g, "Relu", "relu", 1, "t1", NULL, NULL, "t2");
    s_node(c.g, "Mul", "mul", 2, "t2", "row", NULL, "t3");
    s_node(c.g, "Sub", "sub", 2, "t3", "two", NULL, "t4");
    gx_node *n = s_node(c.g, "LeakyRelu", "lrelu", 1, "t4", NULL, NULL, "t5");
    gx_node_set_float(n, "alpha", 0.1);
    s_node(c.g, "Sigmoid", "sig", 1, "t5", NULL, NULL, "y");
    c.want_fused = 1;
    s_check(&c);

    c = s_new("fused Clip-Tanh after MatMul");
    s_input(&c, "x", 2, (int64_t[]){64, 96}, false);
    s_const(c.g, "w", 2, (int64_t[]){96, 80}, 52);
    s_node(c.g, "MatMul", "mm", 2, "x", "w", NULL, "t1");
    n = s_node(c.g, "Clip", "clip", 1, "t1", NULL, NULL, "t2");
    gx_node_set_float(n, "min", -0.5);
    gx_node_set_float(n, "max", 0.75);
    s_node(c.g, "Tanh", "tanh", 1, "t2", NULL, NULL, "t3");
    s_node(c.g, "Neg", "neg", 1, "t3", NULL, NULL, "y");
    c.on_cuda[0] = "mm";
    c.want_fused = 1;
    s_check(&c);
}

/* The plan pass compiles the code a plan's kernels generate (NVRTC)
 * before any job: compiling a graph with a group and ops no case before
 * it used adds kernels to the cache, its first run adds none. Runs first. */
static void s_ready_at_compile(void)
{
    s_case c = s_new("kernels compiled with the plan");
    s_input(&c, "x", 2, (int64_t[]){37, 41}, false);
    s_input(&c, "b", 1, (int64_t[]){41}, false);
    s_node(c.g, "Div", "div", 2, "x", "b", NULL, "t1");
    s_node(c.g, "Erf", "erf", 1, "t1", NULL, NULL, "t2");
    s_node(c.g, "Abs", "abs", 1, "t2", NULL, NULL, "t3");
    s_node(c.g, "Softmax", "sm", 1, "t3", NULL, NULL, "y");
    gx_graph_add_output(c.g, "y");
    char err[512] = "", why[300];
    gxd_plan *p = NULL;
    float *y = NULL;
    int64_t n = 0;
    const size_t before = gx_cuda_jit_count();
    bool ok = s_compile(&c, gx_backend_cuda(), &p, err, sizeof err) == GX_OK;
    const size_t compiled = gx_cuda_jit_count();
    ok = ok && s_run(p, c.in, &y, &n, err, sizeof err) == GX_OK;
    const size_t ran = gx_cuda_jit_count();
    snprintf(why, sizeof why, "%s%zu kernels compiled with the plan, %zu at its first run", err,
             compiled - before, ran - compiled);
    ok = ok && compiled > before && ran == compiled;
    printf("%s %-28s %s\n", ok ? "PASS" : "FAIL", c.name, why);
    ok ? s_pass++ : s_fail++;
    free(y);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&c.g);
    for (int i = 0; i < c.n_in; i++)
        free(c.data[i]);
}

/* ---- Transpose, Concat, Reduce ----------------------------------------- */

static void s_transpose(const char *name, int nd, const int64_t *shape, const int64_t *perm)
{
    s_case c = s_new(name);
    s_input(&c, "x", nd, shape, false);
    gx_node *n = s_node(c.g, "Transpose", "tr", 1, "x", NULL, NULL, "y");
    if (perm)
        gx_node_set_ints(n, "perm", perm, (size_t)nd);
    c.on_cuda[0] = "tr";
    s_check(&c);
}

static void s_concat(void)
{
    s_case c = s_new("Concat axis 1 of 3");
    s_input(&c, "a", 3, (int64_t[]){4, 5, 7}, false);
    s_input(&c, "b", 3, (int64_t[]){4, 2, 7}, false);
    s_input(&c, "d", 3, (int64_t[]){4, 9, 7}, false);
    gx_node *n = s_node(c.g, "Concat", "cat", 3, "a", "b", "d", "y");
    gx_node_set_int(n, "axis", 1);
    c.on_cuda[0] = "cat";
    s_check(&c);

    c = s_new("Relu-Concat axis -1");
    s_input(&c, "a", 2, (int64_t[]){6, 3}, false);
    s_input(&c, "b", 2, (int64_t[]){6, 11}, false);
    s_node(c.g, "Relu", "r", 1, "a", NULL, NULL, "ra");
    n = s_node(c.g, "Concat", "cat", 2, "ra", "b", NULL, "y");
    gx_node_set_int(n, "axis", -1);
    c.on_cuda[0] = "cat";
    c.on_cuda[1] = "r";
    s_check(&c);
}

/* Reduce over the trailing axes given (as the opset 18 axes input). */
static void s_reduce(const char *op, int keepdims, int n_axes, const int64_t *axes)
{
    char name[64];
    snprintf(name, sizeof name, "%s %d trailing axes keep%d", op, n_axes, keepdims);
    s_case c = s_new(name);
    s_input(&c, "x", 3, (int64_t[]){6, 7, 300}, false);
    gx_tensor *ax = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){n_axes}, axes,
                                       (size_t)n_axes * sizeof(int64_t));
    gx_graph_add_const(c.g, "axes", &ax);
    gx_node *n = s_node(c.g, op, "red", 2, "x", "axes", NULL, "y");
    gx_node_set_int(n, "keepdims", keepdims);
    c.on_cuda[0] = "red";
    s_check(&c);
}

/* ---- cuDNN -------------------------------------------------------------- */

#ifdef HAVE_CUDNN
static void s_ints(gx_node *nd, const char *name, int n, int64_t a, int64_t b)
{
    int64_t v[4] = {a, b, a, b};
    gx_node_set_ints(nd, name, v, (size_t)n);
}

/* Conv of x [2, c, 17, 19] (rank 4) or [2, c, 50] (rank 3) with m
 * filters in `group` groups, kernel k, pads p, stride st, dilation dl. */
static void s_conv(const char *name, int rank, int64_t c, int64_t m, int64_t group, int64_t k,
                   int64_t p, int64_t st, int64_t dl, bool bias)
{
    s_case cs = s_new(name);
    if (rank == 4) {
        s_input(&cs, "x", 4, (int64_t[]){2, c, 17, 19}, false);
        s_const(cs.g, "w", 4, (int64_t[]){m, c / group, k, k}, 21);
    } else {
        s_input(&cs, "x", 3, (int64_t[]){2, c, 50}, false);
        s_const(cs.g, "w", 3, (int64_t[]){m, c / group, k}, 21);
    }
    if (bias)
        s_const(cs.g, "b", 1, (int64_t[]){m}, 22);
    gx_node *nd = s_node(cs.g, "Conv", "conv", bias ? 3 : 2, "x", "w", "b", "y");
    const int sp = rank - 2;
    s_ints(nd, "pads", 2 * sp, p, p);
    s_ints(nd, "strides", sp, st, st);
    s_ints(nd, "dilations", sp, dl, dl);
    gx_node_set_int(nd, "group", group);
    cs.on_cuda[0] = "conv";
    s_check(&cs);
}

static void s_pool(const char *name, const char *op, int rank, int64_t k, int64_t p, int64_t st,
                   int count_include_pad)
{
    s_case cs = s_new(name);
    if (rank == 4)
        s_input(&cs, "x", 4, (int64_t[]){2, 5, 17, 19}, false);
    else
        s_input(&cs, "x", 3, (int64_t[]){2, 5, 50}, false);
    gx_node *nd = s_node(cs.g, op, "pool", 1, "x", NULL, NULL, "y");
    const int sp = rank - 2;
    s_ints(nd, "kernel_shape", sp, k, k);
    s_ints(nd, "pads", 2 * sp, p, p);
    s_ints(nd, "strides", sp, st, st);
    if (count_include_pad >= 0)
        gx_node_set_int(nd, "count_include_pad", count_include_pad);
    cs.on_cuda[0] = "pool";
    s_check(&cs);
}

static void s_global(const char *op, int rank)
{
    char name[64];
    snprintf(name, sizeof name, "%s rank %d", op, rank);
    s_case cs = s_new(name);
    if (rank == 4)
        s_input(&cs, "x", 4, (int64_t[]){2, 16, 7, 9}, false);
    else
        s_input(&cs, "x", 3, (int64_t[]){2, 16, 63}, false);
    s_node(cs.g, op, "pool", 1, "x", NULL, NULL, "y");
    cs.on_cuda[0] = "pool";
    s_check(&cs);
}

static void s_batchnorm(int rank)
{
    char name[64];
    snprintf(name, sizeof name, "BatchNormalization rank %d", rank);
    s_case cs = s_new(name);
    if (rank == 4)
        s_input(&cs, "x", 4, (int64_t[]){2, 16, 9, 11}, false);
    else
        s_input(&cs, "x", 2, (int64_t[]){40, 16}, false);
    s_const(cs.g, "scale", 1, (int64_t[]){16}, 31);
    s_const(cs.g, "bias", 1, (int64_t[]){16}, 32);
    s_const(cs.g, "mean", 1, (int64_t[]){16}, 33);
    s_positive(cs.g, "var", 16, 34);
    gx_node *nd = gx_graph_add_node(cs.g, "BatchNormalization", "bn", 5,
                                    (const char *[]){"x", "scale", "bias", "mean", "var"}, 1,
                                    (const char *[]){"y"});
    gx_node_set_float(nd, "epsilon", 1e-3);
    cs.on_cuda[0] = "bn";
    s_check(&cs);
}

/* Conv-BN-Relu-MaxPool-Conv-GlobalAveragePool-Flatten-Gemm. */
static void s_convnet(const char *name, int graph_runs)
{
    s_case cs = s_new(name);
    s_input(&cs, "x", 4, (int64_t[]){4, 3, 32, 32}, false);
    s_const(cs.g, "w1", 4, (int64_t[]){16, 3, 3, 3}, 41);
    s_const(cs.g, "b1", 1, (int64_t[]){16}, 42);
    s_const(cs.g, "scale", 1, (int64_t[]){16}, 43);
    s_const(cs.g, "bias", 1, (int64_t[]){16}, 44);
    s_const(cs.g, "mean", 1, (int64_t[]){16}, 45);
    s_positive(cs.g, "var", 16, 46);
    s_const(cs.g, "w2", 4, (int64_t[]){32, 16, 3, 3}, 47);
    s_const(cs.g, "wf", 2, (int64_t[]){32, 10}, 48);
    gx_node *nd = s_node(cs.g, "Conv", "conv1", 3, "x", "w1", "b1", "c1");
    s_ints(nd, "pads", 4, 1, 1);
    gx_graph_add_node(cs.g, "BatchNormalization", "bn", 5,
                      (const char *[]){"c1", "scale", "bias", "mean", "var"}, 1,
                      (const char *[]){"n1"});
    s_node(cs.g, "Relu", "relu", 1, "n1", NULL, NULL, "r1");
    nd = s_node(cs.g, "MaxPool", "pool", 1, "r1", NULL, NULL, "p1");
    s_ints(nd, "kernel_shape", 2, 2, 2);
    s_ints(nd, "strides", 2, 2, 2);
    nd = s_node(cs.g, "Conv", "conv2", 2, "p1", "w2", NULL, "c2");
    s_ints(nd, "pads", 4, 1, 1);
    s_ints(nd, "strides", 2, 2, 2);
    s_node(cs.g, "GlobalAveragePool", "gap", 1, "c2", NULL, NULL, "g");
    s_node(cs.g, "Flatten", "flat", 1, "g", NULL, NULL, "f");
    s_node(cs.g, "Gemm", "fc", 2, "f", "wf", NULL, "y");
    /* the rewrite pass folds bn into conv1 (its weights and bias) */
    const char *on[] = {"conv1", "relu", "pool", "conv2", "gap", "fc"};
    for (int i = 0; i < 6; i++)
        cs.on_cuda[i] = on[i];
    cs.graph_runs = graph_runs;
    s_check(&cs);
}

static void s_dnn_cases(void)
{
    s_conv("Conv 3x3 pad1 bias", 4, 8, 16, 1, 3, 1, 1, 1, true);
    s_conv("Conv 3x3 stride2 dil2 pad2", 4, 8, 16, 1, 3, 2, 2, 2, false);
    s_conv("Conv 1x1", 4, 8, 24, 1, 1, 0, 1, 1, true);
    s_conv("Conv depthwise 3x3", 4, 8, 8, 8, 3, 1, 1, 1, true);
    s_conv("Conv groups 2", 4, 8, 12, 2, 3, 1, 1, 1, true);
    s_conv("Conv 1-D k5 stride2 pad2", 3, 4, 6, 1, 5, 2, 2, 1, true);
    s_pool("MaxPool 3x3 s2 pad1", "MaxPool", 4, 3, 1, 2, -1);
    s_pool("MaxPool 2x2 s2", "MaxPool", 4, 2, 0, 2, -1);
    s_pool("MaxPool 1-D k3 s1", "MaxPool", 3, 3, 1, 1, -1);
    s_pool("AveragePool 3x3 s2 pad1 excl", "AveragePool", 4, 3, 1, 2, 0);
    s_pool("AveragePool 3x3 s2 pad1 incl", "AveragePool", 4, 3, 1, 2, 1);
    s_pool("AveragePool 1-D k4 s2", "AveragePool", 3, 4, 0, 2, 0);
    s_global("GlobalAveragePool", 4);
    s_global("GlobalMaxPool", 4);
    s_global("GlobalAveragePool", 3);
    s_batchnorm(4);
    s_batchnorm(2);
    s_convnet("convnet Conv-BN-Relu-Pool-Conv-GAP-Gemm", 0);
    s_convnet("convnet as CUDA Graphs, 5 runs", 5);
}
#endif

/* ---- timing ------------------------------------------------------------- */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* MatMul n^3: the plan (input copied in, output copied out) vs cuBLAS
 * alone on device buffers and cuBLAS plus the same two copies, in float32,
 * with TF32 (gpu_tf32) on both sides, or over float16 tensors (GemmEx,
 * float accumulation, on both sides). A TF32 or float16 run's output is
 * compared with the float32 run's before it (*ref: float32's output). */
typedef enum { S_F32, S_TF32, S_F16 } s_kind;

static void s_time_matmul(int64_t n, int reps, s_kind kind, float **ref)
{
    static const char *const kname[] = {"f32", "TF32", "f16"};
    gx_cuda_configure(0, 0.9, kind == S_TF32);
    s_dt = kind == S_F16 ? GX_F16 : GX_F32;
    s_case c = s_new("time");
    s_input(&c, "a", 2, (int64_t[]){n, n}, false);
    s_const(c.g, "w", 2, (int64_t[]){n, n}, 3);
    s_node(c.g, "MatMul", "mm", 2, "a", "w", NULL, "y");
    gx_graph_add_output(c.g, "y");
    char err[512];
    gxd_plan *p = NULL;
    if (s_compile(&c, gx_backend_cuda(), &p, err, sizeof err) < 0) {
        printf("TIME MatMul %lld^3 %s: compile: %s\n", (long long)n, kname[kind], err);
        goto out;
    }
    gxd_compile_limits lim = s_lim(NULL);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    /* a worker's arenas (daemon/arenas.c): the host arena pinned */
    gxd_arenas a;
    gxd_arenas_init(&a);
    void *arena = gxd_arenas_get(&a, 0, p->arena_bytes);
    gxd_devmem dm;
    gxd_frame f;
    double t[32];
    if (!arena || gxd_arenas_devmem(&a, 0, p, false, &dm, err, sizeof err) < 0 ||
        gxd_frame_init_dev(&f, p, arena, &dm, false, c.in, &lim, &stop, err, sizeof err) < 0) {
        printf("TIME MatMul %lld^3 %s: frame: %s\n", (long long)n, kname[kind], err);
        gxd_arenas_fini(&a);
        goto out;
    }
    const bool pinned = a.pinned[0] != NULL;
    int rc = GX_OK;
    for (int r = -1; r < reps && rc == GX_OK; r++) { /* -1: warm-up */
        double t0 = s_now();
        rc = gxd_exec_seq(&f);
        if (r >= 0)
            t[r] = s_now() - t0;
    }
    double diff = 0;
    if (rc == GX_OK) {
        const gx_view *y = gxd_frame_output(&f, 0);
        for (int64_t i = 0; *ref && i < n * n; i++)
            diff = fmax(diff, fabs((double)s_at(y, i) - (*ref)[i]) /
                                  fmax(1.0, fabs((double)(*ref)[i])));
        if (kind == S_F32) {
            free(*ref);
            if ((*ref = malloc((size_t)(n * n) * sizeof(float))))
                memcpy(*ref, y->data, (size_t)(n * n) * sizeof(float));
        }
    }
    gxd_frame_fini(&f);
    gxd_arenas_fini(&a);
    if (rc < 0) {
        printf("TIME MatMul %lld^3 %s: run: %s\n", (long long)n, kname[kind], err);
        goto out;
    }
    qsort(t, (size_t)reps, sizeof t[0], s_cmp_double);
    const double plan = t[reps / 2];

    /* cuBLAS alone */
    const size_t bytes = (size_t)(n * n) * gx_dtype_size(s_dt);
    void *da, *db, *dy;
    cublasHandle_t h;
    cudaStream_t st;
    cudaStreamCreate(&st);
    cublasCreate(&h);
    cublasSetStream(h, st);
    cublasSetMathMode(h, kind == S_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    cudaMalloc(&da, bytes);
    cudaMalloc(&db, bytes);
    cudaMalloc(&dy, bytes);
    cudaMemcpy(da, c.data[0], bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, c.data[0], bytes, cudaMemcpyHostToDevice);
    void *host = NULL; /* the output's copy: pinned as the plan's host arena is */
    if (cudaHostAlloc(&host, bytes, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        host = NULL;
    }
    const float one = 1, zero = 0;
    const int ni = (int)n;
    double tk[32], tc[32];
    for (int r = -1; r < reps; r++) {
        for (int copies = 0; copies < 2; copies++) {
            double t0 = s_now();
            if (copies)
                cudaMemcpyAsync(da, c.data[0], bytes, cudaMemcpyHostToDevice, st);
            if (kind == S_F16)
                cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, db, CUDA_R_16F, ni,
                             da, CUDA_R_16F, ni, &zero, dy, CUDA_R_16F, ni, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
            else
                cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, db, ni, da, ni, &zero,
                            dy, ni);
            if (copies)
                cudaMemcpyAsync(host, dy, bytes, cudaMemcpyDeviceToHost, st);
            cudaStreamSynchronize(st);
            if (r >= 0)
                (copies ? tc : tk)[r] = s_now() - t0;
        }
    }
    cudaError_t e = cudaGetLastError();
    qsort(tk, (size_t)reps, sizeof tk[0], s_cmp_double);
    qsort(tc, (size_t)reps, sizeof tc[0], s_cmp_double);
    const double flop = 2.0 * (double)n * (double)n * (double)n;
    printf("TIME MatMul %lld^3 %s (median of %d): plan %.3f ms (%.1f TFLOP/s, copies "
           "included; host arena %s) | cuBLAS alone %.3f ms (%.1f TFLOP/s) -> plan at %.0f%% of "
           "cuBLAS | "
           "cuBLAS + the same copies %.3f ms -> plan at %.0f%%%s%s\n",
           (long long)n, kname[kind], reps, plan * 1e3, flop / plan * 1e-12,
           pinned ? "pinned" : "pageable", tk[reps / 2] * 1e3,
           flop / tk[reps / 2] * 1e-12, 100.0 * tk[reps / 2] / plan, tc[reps / 2] * 1e3,
           100.0 * tc[reps / 2] / plan, e != cudaSuccess ? "; CUDA error: " : "",
           e != cudaSuccess ? cudaGetErrorString(e) : "");
    if (kind != S_F32)
        printf("TIME MatMul %lld^3 %s: largest relative difference from the float32 plan's "
               "output %.2g\n", (long long)n, kname[kind], diff);
    cudaFreeHost(host);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dy);
    cublasDestroy(h);
    cudaStreamDestroy(st);
out:
    fflush(stdout);
    gx_cuda_configure(0, 0.9, false);
    s_dt = GX_F32;
    gxd_plan_destroy(&p);
    gx_graph_destroy(&c.g);
    free(c.data[0]);
}

/* The median time per job of c's graph (output "y") as one plan on cuda,
 * the fuse pass and the CUDA Graphs of the sequential executor on or off,
 * over one frame (one arena and stream, as a daemon's worker: input and
 * output copies included), after two warm-up jobs (NVRTC; with graphs
 * on: the first job goes kernel by kernel, the second records); -1 with
 * err on failure. *dev: the median of the jobs' device time (the
 * kernels on the GPU, copies excluded: gxd_frame.device_ns). Prints a
 * TIME line. */
static double s_time_plan(s_case *c, const char *what, bool no_fuse, bool no_graphs,
                          bool no_time, int reps, double *dev, char *err, size_t len)
{
    gxd_partition_opts o = {.min_nodes = 1, .no_cost_check = true};
    o.backends[o.n_backends++] = gx_backend_cuda();
    o.backends[o.n_backends++] = gx_backend_cpu();
    gxd_compile_limits lim = s_lim(&o);
    lim.no_fuse = no_fuse;
    gxd_plan *p = NULL;
    double best = -1;
    *dev = -1;
    if (reps > 64)
        reps = 64;
    if (gxd_compile(c->g, c->in, &lim, &p, err, len) == GX_OK) {
        atomic_bool cancel = false;
        gxd_exec_stop stop = {&cancel, 0};
        void *arena = gx_aligned_alloc(p->arena_bytes + 1);
        gxd_compile_limits rl = s_lim(NULL);
        rl.no_graphs = no_graphs;
        rl.no_device_time = no_time;
        gxd_frame f;
        double t[64], td[64];
        if (gxd_frame_init_ex(&f, p, arena, false, c->in, &rl, &stop, err, len) == GX_OK) {
            int rc = GX_OK;
            for (int r = -2; r < reps && rc == GX_OK; r++) {
                double t0 = s_now();
                rc = gxd_exec_seq(&f);
                if (r >= 0) {
                    t[r] = s_now() - t0;
                    td[r] = (double)f.device_ns * 1e-9;
                }
            }
            gxd_frame_fini(&f);
            if (rc == GX_OK) {
                qsort(t, (size_t)reps, sizeof t[0], s_cmp_double);
                qsort(td, (size_t)reps, sizeof td[0], s_cmp_double);
                best = t[reps / 2];
                *dev = td[reps / 2];
            } else {
                snprintf(err, len, "run failed: %s", gx_status_name(rc));
            }
        }
        free(arena);
        size_t fused = 0, kern = 0;
        for (size_t i = 0; i < p->n_steps; i++)
            if (!p->steps[i].copy && p->devices[p->steps[i].device] == gx_backend_cuda()) {
                kern++;
                fused += p->steps[i].fused != NULL;
            }
        const gxd_graph_stats st = gxd_plan_graph_stats(p);
        printf("TIME %s, fuse %s, graphs %s%s: %zu steps on cuda (%zu fused), %lld graphs "
               "recorded, %lld replays, %lld failed%s",
               what, no_fuse ? "off" : "on", no_graphs ? "off" : "on",
               no_time ? ", no device time" : "", kern, fused,
               (long long)st.captures, (long long)st.replays, (long long)st.failed,
               best >= 0 ? "" : "\n");
        if (best >= 0)
            printf(": %.3f ms per job, %.1f us of it on the GPU (medians of %d)\n", best * 1e3,
                   *dev * 1e6, reps);
    }
    gxd_plan_destroy(&p);
    return best;
}

/* A 200-op elementwise chain (Add a constant, Relu, Mul by a constant, in
 * turn) over 2^20 floats. */
static s_case s_chain_case(void)
{
    s_case c = s_new("chain");
    const int64_t n = 1 << 20;
    s_input(&c, "x", 1, (int64_t[]){n}, false);
    s_scalar(c.g, "a", 0.01f);
    s_scalar(c.g, "m", 0.99f);
    char prev[16] = "x", cur[16], nm[16];
    for (int i = 0; i < 200; i++) {
        snprintf(cur, sizeof cur, i == 199 ? "y" : "t%d", i);
        snprintf(nm, sizeof nm, "op%d", i);
        if (i % 3 == 0)
            s_node(c.g, "Add", nm, 2, prev, "a", NULL, cur);
        else if (i % 3 == 1)
            s_node(c.g, "Relu", nm, 1, prev, NULL, NULL, cur);
        else
            s_node(c.g, "Mul", nm, 2, prev, "m", NULL, cur);
        snprintf(prev, sizeof prev, "%s", cur);
    }
    gx_graph_add_output(c.g, "y");
    return c;
}

static void s_case_free(s_case *c)
{
    gx_graph_destroy(&c->g);
    for (int i = 0; i < c->n_in; i++)
        free(c->data[i]);
}

/* The chain with the fuse pass on and off (one launch per op), and with
 * fuse off, as one CUDA Graph per job against one launch per op; wall
 * time per job (copies of 4 MiB in and out included) and the GPU's time
 * (the kernels alone); a small-batch MLP with graphs on and off. */
static void s_time_chain(void)
{
    char err[512] = "";
    s_case c = s_chain_case();
    const char *ch = "chain of 200 ops, 2^20 floats";
    static const struct {
        bool no_fuse, no_graphs;
        const char *name;
    } cfg[] = {{true, true, "one launch per op"},
               {true, false, "one CUDA Graph of 200 kernels"},
               {false, true, "fused, one launch per group"},
               {false, false, "fused, one CUDA Graph"}};
    double wall[4], dev[4];
    for (int i = 0; i < 4; i++)
        if ((wall[i] = s_time_plan(&c, ch, cfg[i].no_fuse, cfg[i].no_graphs, false, 20, &dev[i],
                                   err, sizeof err)) < 0)
            printf("TIME chain (%s): %s\n", cfg[i].name, err);
    for (int i = 1; i < 4; i++)
        if (wall[0] > 0 && wall[i] > 0 && dev[i] > 0)
            printf("TIME chain of 200 ops, %s vs one launch per op: GPU time %.1fx less (%.1f vs "
                   "%.1f us), per job %.1fx faster (copies included)\n",
                   cfg[i].name, dev[0] / dev[i], dev[i] * 1e6, dev[0] * 1e6, wall[0] / wall[i]);
    s_case_free(&c);
    for (int64_t batch = 1; batch <= 16; batch *= 16) {
        char what[64];
        snprintf(what, sizeof what, "MLP 256-512-10, batch %lld", (long long)batch);
        c = s_new("mlp");
        s_mlp_graph(&c, batch);
        gx_graph_add_output(c.g, "y");
        double d0, d1, d2;
        double g0 = s_time_plan(&c, what, false, true, false, 50, &d0, err, sizeof err);
        if (g0 < 0)
            printf("TIME %s (graphs off): %s\n", what, err);
        double g1 = s_time_plan(&c, what, false, false, false, 50, &d1, err, sizeof err);
        if (g1 < 0)
            printf("TIME %s (graphs on): %s\n", what, err);
        if (g0 > 0 && g1 > 0)
            printf("TIME %s: graphs on %.2fx faster per job\n", what, g0 / g1);
        double g2 = s_time_plan(&c, what, false, false, true, 50, &d2, err, sizeof err);
        if (g1 > 0 && g2 > 0)
            printf("TIME %s, graphs on: measuring device time costs %.1f us per job\n", what,
                   (g1 - g2) * 1e6);
        s_case_free(&c);
    }
    fflush(stdout);
}

/* The model's own Casts between float16 and float32 run on cuda. */
static void s_casts(void)
{
    s_case c = s_new("Cast f16-f32-Sigmoid-f16");
    s_input(&c, "x", 2, (int64_t[]){33, 65}, false);
    gx_node *n = s_node(c.g, "Cast", "up", 1, "x", NULL, NULL, "x32");
    gx_node_set_int(n, "to", 1); /* FLOAT */
    s_node(c.g, "Sigmoid", "sig", 1, "x32", NULL, NULL, "s");
    n = s_node(c.g, "Cast", "down", 1, "s", NULL, NULL, "y");
    gx_node_set_int(n, "to", 10); /* FLOAT16 */
    c.on_cuda[0] = "up";
    c.on_cuda[1] = "down";
    s_check(&c);
}

/* The cases of the kernels besides cuDNN's, over s_dt's tensors. */
static void s_cases(void)
{
    s_matmul2d();
    s_matmul_batched();
    s_gemm(0, 0, 0, 1, 1);
    s_gemm(0, 1, 1, 1, 1);
    s_gemm(1, 0, 2, 0.5, 2);
    s_gemm(1, 1, 1, 1.5, 0.25);
    const char *plain[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf",
                           "Gelu", "Identity"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        s_unary(plain[i], false, NULL, 0);
    s_unary("Log", true, NULL, 0);
    s_unary("Sqrt", true, NULL, 0);
    s_unary("Gelu", false, "tanh", 0);
    s_unary("LeakyRelu", false, "alpha", 0.2);
    s_clip_inputs();
    const char *bin[] = {"Add", "Sub", "Mul", "Div"};
    for (size_t i = 0; i < 4; i++) {
        s_binary(bin[i], 3, (int64_t[]){5, 12, 37});
        s_binary(bin[i], 2, (int64_t[]){12, 1});
    }
    s_binary("Add", 1, (int64_t[]){37});
    s_softmax();
    s_reshape();
    s_mlp();
    s_fused_chain();
    s_transpose("Transpose 2-D default perm", 2, (int64_t[]){37, 53}, NULL);
    s_transpose("Transpose 4-D 0231", 4, (int64_t[]){2, 3, 17, 19}, (int64_t[]){0, 2, 3, 1});
    s_transpose("Transpose 6-D 531420", 6, (int64_t[]){2, 3, 4, 5, 3, 2},
                (int64_t[]){5, 3, 1, 4, 2, 0});
    s_concat();
    s_reduce("ReduceSum", 1, 1, (int64_t[]){-1});
    s_reduce("ReduceMean", 0, 2, (int64_t[]){1, 2});
    s_reduce("ReduceMean", 1, 1, (int64_t[]){2});
}

/* --npy-close A B: same shape and every value within S_TOL relative. */
static int s_npy_close(const char *a, const char *b)
{
    gx_tensor *ta = NULL, *tb = NULL;
    char err[256];
    if (gx_npy_load(a, &ta, err, sizeof err) < 0 || gx_npy_load(b, &tb, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = 0;
    if (gx_tensor_dtype(ta) != GX_F32 || gx_tensor_dtype(tb) != GX_F32 ||
        gx_tensor_numel(ta) != gx_tensor_numel(tb)) {
        fprintf(stderr, "%s and %s differ in dtype or size\n", a, b);
        rc = 1;
    }
    const float *x = gx_tensor_data(ta), *y = gx_tensor_data(tb);
    for (int64_t i = 0; !rc && i < gx_tensor_numel(ta); i++)
        if (!(fabs((double)x[i] - y[i]) <= S_TOL * fmax(1.0, fabs((double)y[i])))) {
            fprintf(stderr, "%s[%lld] = %.9g but %s has %.9g\n", a, (long long)i, x[i], b, y[i]);
            rc = 1;
        }
    gx_tensor_destroy(&ta);
    gx_tensor_destroy(&tb);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--npy-close") == 0)
        return s_npy_close(argv[2], argv[3]);
    const gx_backend *cuda = gx_backend_cuda();
    char note[512] = "";
    gx_cuda_configure(0, 0.9, false);
    if (cuda->open(cuda, note, sizeof note) < 0) {
        printf("SKIP check_cuda: %s\n", note);
        return 77;
    }
    printf("cuda: %s\n", note);
    s_ready_at_compile();
    s_cases();
#ifdef HAVE_CUDNN
    s_dnn_cases();
#endif
    s_dt = GX_F16; /* again over float16 */
    s_cases();
#ifdef HAVE_CUDNN
    /* cuDNN's ops run float32 only: widened, on the GPU with their Casts
     * (not the pools: the CPU has float16 pools, so they stay on it) */
    s_may_widen = true;
    s_conv("Conv 3x3 pad1 bias", 4, 8, 16, 1, 3, 1, 1, 1, true);
    s_conv("Conv depthwise 3x3", 4, 8, 8, 8, 3, 1, 1, 1, true);
    s_batchnorm(4);
    s_convnet("convnet Conv-BN-Relu-Pool-Conv-GAP-Gemm", 0);
    s_may_widen = false;
#endif
    s_casts();
    s_dt = GX_F32;
    printf("%d passed, %d failed\n", s_pass, s_fail);
    fflush(stdout);
    if (argc < 2 || strcmp(argv[1], "--no-timing") != 0) {
        for (int64_t n = 1024; n <= 8192; n *= 2) {
            float *ref = NULL;
            for (s_kind k = S_F32; k <= S_F16; k++)
                s_time_matmul(n, n >= 8192 ? 5 : 10, k, &ref);
            free(ref);
        }
        s_time_chain();
    }
    return s_fail ? 1 : 0;
}
