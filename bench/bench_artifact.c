/*
 * Compile time vs artifact load time (seed 004, docs/artifact.md): for an
 * MLP, a small CNN and a deep residual CNN of 600+ nodes (Conv, Batch-
 * Normalization, Relu, Add blocks, built here), the median of several
 * compiles (gxd_compile, every pass), of writing the plan's artifact and of
 * reading it back (gxd_artifact_read: what a restarted gexecd does instead
 * of compiling), and the artifact's size.
 *
 *   bench/bench_artifact [blocks]    (default 100 residual blocks)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "daemon/compile/artifact.h"
#include "gexec/client.h"
#include "libclient/internal.h"
#include "libclient/wire.h"

static const gxd_compile_limits s_lim = {.max_nodes = 100000, .max_tensor_bytes = 1ll << 30,
                                         .max_arena_bytes = 4ll << 30};

static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape, float scale)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        d[i] = scale * (float)((i * 7919) % 201 - 100) / 100.0f;
    gx_graph_add_const(g, name, &t);
}

static void s_node(gx_graph *g, const char *op, size_t n, const char *const *in, const char *out)
{
    gx_node *nd = gx_graph_add_node(g, op, NULL, n, in, 1, &out);
    if (nd && !strcmp(op, "Conv"))
        gx_node_set_ints(nd, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
}

/* x [1, 16, 32, 32] -> blocks of (Conv-BN-Relu-Conv-BN) + x -> Relu, then
 * GlobalAveragePool, Flatten, Gemm: 6 nodes a block. */
static gx_graph *s_resnet(int blocks)
{
    gx_graph *g = gx_graph_new("resnet");
    const int C = 16;
    gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){1, C, 32, 32});
    char prev[32] = "x";
    for (int b = 0; b < blocks; b++) {
        char n[16][32];
        for (int k = 0; k < 16; k++)
            snprintf(n[k], sizeof n[k], "b%d_%d", b, k);
        for (int c = 0; c < 2; c++) {
            s_const(g, n[c * 5], 4, (const int64_t[]){C, C, 3, 3}, 0.1f);
            for (int k = 1; k <= 4; k++)
                s_const(g, n[c * 5 + k], 1, (const int64_t[]){C}, k == 4 ? 1.0f : 0.1f);
        }
        s_node(g, "Conv", 2, (const char *[]){prev, n[0]}, n[10]);
        s_node(g, "BatchNormalization", 5, (const char *[]){n[10], n[1], n[2], n[3], n[4]}, n[11]);
        s_node(g, "Relu", 1, (const char *[]){n[11]}, n[12]);
        s_node(g, "Conv", 2, (const char *[]){n[12], n[5]}, n[13]);
        s_node(g, "BatchNormalization", 5, (const char *[]){n[13], n[6], n[7], n[8], n[9]}, n[14]);
        s_node(g, "Add", 2, (const char *[]){n[14], prev}, n[15]);
        char out[32];
        snprintf(out, sizeof out, "b%d_out", b);
        s_node(g, "Relu", 1, (const char *[]){n[15]}, out);
        snprintf(prev, sizeof prev, "%s", out);
    }
    s_const(g, "wf", 2, (const int64_t[]){C, 10}, 0.3f);
    s_node(g, "GlobalAveragePool", 1, (const char *[]){prev}, "gp");
    s_node(g, "Flatten", 1, (const char *[]){"gp"}, "f");
    s_node(g, "MatMul", 2, (const char *[]){"f", "wf"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_mlp(void)
{
    gx_graph *g = gx_graph_new("mlp");
    gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){32, 512});
    s_const(g, "w1", 2, (const int64_t[]){512, 1024}, 0.05f);
    s_const(g, "w2", 2, (const int64_t[]){1024, 1024}, 0.05f);
    s_const(g, "w3", 2, (const int64_t[]){1024, 10}, 0.05f);
    s_node(g, "MatMul", 2, (const char *[]){"x", "w1"}, "m1");
    s_node(g, "Relu", 1, (const char *[]){"m1"}, "r1");
    s_node(g, "MatMul", 2, (const char *[]){"r1", "w2"}, "m2");
    s_node(g, "Relu", 1, (const char *[]){"m2"}, "r2");
    s_node(g, "MatMul", 2, (const char *[]){"r2", "w3"}, "m3");
    s_node(g, "Softmax", 1, (const char *[]){"m3"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

static int s_cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void s_bench(const char *name, gx_graph *g)
{
    enum { N = 5 };
    gx_graph_id id;
    gx_wire_graph_id(g, &id);
    gx_view in = {.dtype = g->inputs[0].dtype, .ndim = g->inputs[0].ndim};
    in.numel = 1;
    for (int d = 0; d < in.ndim; d++)
        in.numel *= in.shape[d] = g->inputs[0].shape[d];
    double tc[N], tw[N], tr[N];
    char err[512];
    size_t len = 0, steps = 0;
    if (gxd_verify(g, &s_lim, err, sizeof err) < 0)
        gxb_die("bench_artifact", name, err);
    for (int i = 0; i < N; i++) {
        gxd_plan *p = NULL, *q = NULL;
        void *buf = NULL;
        double t0 = gxb_now_us();
        if (gxd_compile(g, &in, &s_lim, &p, err, sizeof err) < 0)
            gxb_die("bench_artifact", name, err);
        double t1 = gxb_now_us();
        if (gxd_artifact_write(p, g, id.hex, &buf, &len, err, sizeof err) < 0)
            gxb_die("bench_artifact", name, err);
        double t2 = gxb_now_us();
        if (gxd_artifact_read(buf, len, g, id.hex, &s_lim, &q, err, sizeof err) < 0)
            gxb_die("bench_artifact", name, err);
        double t3 = gxb_now_us();
        tc[i] = t1 - t0, tw[i] = t2 - t1, tr[i] = t3 - t2;
        steps = q->n_steps;
        gxd_plan_destroy(&p);
        gxd_plan_destroy(&q);
        free(buf);
    }
    qsort(tc, N, sizeof *tc, s_cmp);
    qsort(tw, N, sizeof *tw, s_cmp);
    qsort(tr, N, sizeof *tr, s_cmp);
    printf("%-10s %6zu nodes %6zu steps  compile %9.0f us  write %8.0f us  load %8.0f us  "
           "(%.1fx)  artifact %zu bytes\n",
           name, g->n_nodes, steps, tc[N / 2], tw[N / 2], tr[N / 2], tc[N / 2] / tr[N / 2], len);
    gx_graph_destroy(&g);
}

int main(int argc, char **argv)
{
    const int blocks = argc > 1 ? atoi(argv[1]) : 100;
    printf("bench_artifact: median of 5, one thread\n");
    s_bench("mlp", s_mlp());
    s_bench("resnet-4", s_resnet(4));
    s_bench("resnet", s_resnet(blocks > 0 ? blocks : 100));
    return 0;
}
