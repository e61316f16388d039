/*
 * Compile time vs artifact load time (seed 004, docs/artifact.md): for an
 * MLP, a small CNN and a deep residual CNN of 600+ nodes (Conv, Batch-
 * Normalization, Relu, Add blocks, built here), the median of several
 * compiles (gxd_compile, every pass), of writing the plan's artifact and of
 * reading it back (gxd_artifact_read: what a restarted gexecd does instead
 * of compiling), and the artifact's size.
 *
 * Then the restart, through a real gexecd: a daemon serves the graph once
 * (a RUN carrying it), is killed with SIGKILL and started again, and the
 * first job of the new daemon is timed at the client (send to result:
 * graph decode and verify, plan, run), with the artifact cache on (the
 * plan is read from the file the first daemon wrote) and off (compiled
 * again), side by side; the median of five restarts each, the mode the
 * daemon chooses (auto) and replica (the whole plan's and every slice's
 * plan; needs a batch: the graph's input then has 8 rows).
 *
 *   bench/bench_artifact [blocks]    (default 100 residual blocks)
 *
 * And, alone: the disk bytes, the first-job latency and the memory after
 * a restart of new input signatures of one model (a symbolic batch),
 * with the constants shared and written off the job's path, against one
 * file per signature written in the job (s_bench_sigs):
 *
 *   bench/bench_artifact sigs [signatures=8]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "daemon/compile/artifact.h"
#include "daemon/models.h"
#include "gexec/client.h"
#include "core/internal.h"
#include "core/wire.h"

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

/* x [batch, 16, 32, 32] -> blocks of (Conv-BN-Relu-Conv-BN) + x -> Relu,
 * then GlobalAveragePool, Flatten, Gemm: 6 nodes a block. */
static gx_graph *s_resnet(int blocks, int64_t batch)
{
    gx_graph *g = gx_graph_new("resnet");
    const int C = 16;
    gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){batch, C, 32, 32});
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
    gxb_sort(tc, N);
    gxb_sort(tw, N);
    gxb_sort(tr, N);
    printf("%-10s %6zu nodes %6zu steps  compile %9.0f us  write %8.0f us  load %8.0f us  "
           "(%.1fx)  artifact %zu bytes\n",
           name, g->n_nodes, steps, tc[N / 2], tw[N / 2], tr[N / 2], tc[N / 2] / tr[N / 2], len);
    gx_graph_destroy(&g);
}

/* ---- restart: the first job of a gexecd killed and started again ---- */

/* What the client saw of one job: send to result, and the reply's times. */
typedef struct s_job {
    double us, compile_us, compute_us;
    int replicas;
} s_job;

/* One RUN of g (inline, x as its input, in mode) on d. */
static s_job s_first_job(const gxb_daemon *d, const gx_graph *g, const gx_tensor *x, gx_mode mode)
{
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    if (!c)
        gxb_die("bench_artifact", "restart", err);
    gx_client_set_timeout(c, 600000);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, g->inputs[0].name, x);
    gx_request_set_mode(rq, mode);
    gx_result *r = NULL;
    double t0 = gxb_now_us();
    if (gx_client_run(c, rq, &r) < 0)
        gxb_die("bench_artifact", "restart", gx_client_last_error(c));
    s_job j = {.us = gxb_now_us() - t0,
               .compile_us = (double)gx_result_info(r)->compile_us,
               .compute_us = (double)gx_result_info(r)->compute_us,
               .replicas = gx_result_info(r)->replicas};
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return j;
}

/* A gexecd (config conf: the artifact cache on; NULL: off) serves g once,
 * is killed with SIGKILL and started again: its first job. */
static s_job s_restart(const gx_graph *g, const gx_tensor *x, gx_mode mode, const char *conf)
{
    const char *args[] = {"-c", conf, NULL};
    gxb_daemon d;
    gxb_daemon_start(&d, "bench_artifact", conf ? args : NULL);
    s_first_job(&d, g, x, mode);
    gxb_daemon_kill(&d);
    gxb_daemon_start(&d, "bench_artifact", conf ? args : NULL);
    s_job j = s_first_job(&d, g, x, mode);
    gxb_daemon_stop(&d);
    return j;
}

/* The medians of n jobs' times, one line. */
static void s_print_jobs(const char *what, s_job *j, int n)
{
    double us[8], cu[8], cp[8];
    for (int i = 0; i < n && i < 8; i++)
        us[i] = j[i].us, cu[i] = j[i].compile_us, cp[i] = j[i].compute_us;
    gxb_sort(us, (size_t)n);
    gxb_sort(cu, (size_t)n);
    gxb_sort(cp, (size_t)n);
    printf("  %-16s first job %8.1f ms  (compile %6.1f ms, compute %6.1f ms, replicas %d)\n",
           what, us[n / 2] / 1000, cu[n / 2] / 1000, cp[n / 2] / 1000, j[0].replicas);
}

static void s_bench_restart(const char *name, gx_graph *g, gx_mode mode)
{
    enum { N = 5 };
    char dir[] = "/tmp/gexec-bench-art-XXXXXX", conf[64], cmd[128];
    if (!mkdtemp(dir))
        gxb_die("bench_artifact", "mkdtemp", "failed");
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *f = fopen(conf, "w");
    if (!f || fprintf(f, "artifacts:\n  dir: %s/artifacts\n", dir) < 0 || fclose(f) != 0)
        gxb_die("bench_artifact", conf, "cannot write");
    gx_tensor *x = gx_tensor_new(g->inputs[0].dtype, g->inputs[0].ndim, g->inputs[0].shape);
    float *px = gx_tensor_data(x);
    for (int64_t i = 0; i < gx_tensor_numel(x); i++)
        px[i] = (float)(i % 17) / 17.0f;
    s_job with[N], without[N];
    for (int i = 0; i < N; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s/artifacts", dir); /* each restart from scratch */
        if (system(cmd) != 0)
            gxb_die("bench_artifact", cmd, "failed");
        with[i] = s_restart(g, x, mode, conf);
        without[i] = s_restart(g, x, mode, NULL);
    }
    printf("%s, %zu nodes, mode %s, [%lld,...] input: after SIGKILL and a restart "
           "(median of %d)\n",
           name, g->n_nodes, gx_mode_name(mode), (long long)g->inputs[0].shape[0], N);
    s_print_jobs("with artifacts", with, N);
    s_print_jobs("without", without, N);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        gxb_die("bench_artifact", cmd, "failed");
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
}

/* ---- signatures: one model, new input shapes (docs/artifact.md) ---- */

/* x [B, 512] (B symbolic) -> MatMul 512x1024 + Relu -> MatMul 1024x2048 +
 * Relu -> MatMul 2048x512: 14 MB of packed weights, the same for every B,
 * as a text recogniser's for every line width. */
static gx_graph *s_wide(void)
{
    gx_graph *g = gx_graph_new("wide");
    gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){-1, 512});
    s_const(g, "w1", 2, (const int64_t[]){512, 1024}, 0.05f);
    s_const(g, "w2", 2, (const int64_t[]){1024, 2048}, 0.05f);
    s_const(g, "w3", 2, (const int64_t[]){2048, 512}, 0.05f);
    s_node(g, "MatMul", 2, (const char *[]){"x", "w1"}, "m1");
    s_node(g, "Relu", 1, (const char *[]){"m1"}, "r1");
    s_node(g, "MatMul", 2, (const char *[]){"r1", "w2"}, "m2");
    s_node(g, "Relu", 1, (const char *[]){"m2"}, "r2");
    s_node(g, "MatMul", 2, (const char *[]){"r2", "w3"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

/* The bytes and files in dir. */
static void s_du(const char *dir, double *bytes, int *files)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "find %s -type f -name '*.gx?' -printf '%%s\\n' 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    *bytes = 0;
    *files = 0;
    double b;
    while (p && fscanf(p, "%lf", &b) == 1)
        *bytes += b, (*files)++;
    if (p)
        pclose(p);
}

/* n signatures (B = 1..n) of s_wide through a model registry with the
 * artifact cache (gxd_model_plan: what a job asks when its shape is new),
 * in process. The job's path now: the compile and a post to the writer.
 * Before: the compile, then the one-file artifact written in the job
 * (gxd_artifact_write and a save, as the daemon did), timed right after
 * the same compile. Then the bytes on disk, one file per signature
 * (before) against plan files and one constants file (after), and a
 * restart: each signature's plan read back (after: through the graph's
 * table; before: gxd_artifact_read of the one-file artifact, a copy of
 * the weights per plan) and the memory the plans hold. */
static void s_bench_sigs(int n)
{
    enum { MAXN = 64 };
    char dir[] = "/tmp/gexec-bench-sig-XXXXXX", adir[64], bdir[64], cmd[128], err[512];
    if (!mkdtemp(dir) || n > MAXN)
        gxb_die("bench_artifact", "sigs", "mkdtemp failed or too many signatures");
    snprintf(adir, sizeof adir, "%s/after", dir);
    snprintf(bdir, sizeof bdir, "%s/before", dir);
    gxd_models m;
    gxd_models_init(&m, 8);
    if (gxd_models_set_artifacts(&m, adir, 1024, 4ll << 30, NULL) < 0)
        gxb_die("bench_artifact", "sigs", "no cache");
    gxd_artifacts *before = gxd_artifacts_new(bdir, 1024, 4ll << 30, NULL);
    gx_graph *g = s_wide();
    gx_graph_id id;
    gx_wire_graph_id(g, &id);
    gxd_model *mdl = NULL;
    if (gxd_models_add(&m, &g, &mdl, err, sizeof err) < 0 ||
        gxd_model_verify(mdl, &s_lim, err, sizeof err) < 0)
        gxb_die("bench_artifact", "sigs", err);
    double now[MAXN], was[MAXN], one[MAXN];
    gx_view in[MAXN];
    for (int b = 1; b <= n; b++) {
        in[b - 1] = (gx_view){.dtype = GX_F32, .ndim = 2, .shape = {b, 512}, .numel = b * 512};
        gxd_plan *p = NULL;
        int64_t cu = 0;
        double t0 = gxb_now_us();
        if (gxd_model_plan(mdl, &in[b - 1], &s_lim, &p, &cu, err, sizeof err) < 0)
            gxb_die("bench_artifact", "sigs", err);
        double t1 = gxb_now_us();
        void *buf = NULL;
        size_t len = 0;
        char key[128];
        if (gxd_artifact_write(p, mdl->graph, id.hex, &buf, &len, err, sizeof err) < 0)
            gxb_die("bench_artifact", "sigs", err);
        gxd_artifact_key(id.hex, &in[b - 1], NULL, 1, &s_lim, key, sizeof key);
        if (gxd_artifacts_save(before, key, buf, len) < 0)
            gxb_die("bench_artifact", "sigs", "write failed");
        double t2 = gxb_now_us();
        now[b - 1] = (t1 - t0) / 1000;
        was[b - 1] = (t2 - t0) / 1000;
        one[b - 1] = (t2 - t1) / 1000;
        free(buf);
        gxd_plan_release(&p);
    }
    gxd_artifacts_flush(m.artifacts);
    double ab, bb;
    int af, bf;
    s_du(adir, &ab, &af);
    s_du(bdir, &bb, &bf);
    gxb_sort(now, (size_t)n);
    gxb_sort(was, (size_t)n);
    gxb_sort(one, (size_t)n);
    printf("signatures: a 5-node MLP of 14 MB packed weights, x [B, 512], B = 1..%d\n", n);
    printf("  first job of a new signature (the job's compile and artifact): before median "
           "%.1f ms (%.1f-%.1f), after %.1f ms (%.1f-%.1f); the write the job no longer waits "
           "for: %.1f ms (%.1f-%.1f)\n",
           was[n / 2], was[0], was[n - 1], now[n / 2], now[0], now[n - 1], one[n / 2], one[0],
           one[n - 1]);
    printf("  disk: before %.1f MB in %d files, after %.1f MB in %d files\n", bb / 1e6, bf,
           ab / 1e6, af);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
    /* the restart: a new registry on the same directory */
    gxd_models_init(&m, 8);
    gxd_models_set_artifacts(&m, adir, 1024, 4ll << 30, NULL);
    g = s_wide();
    if (gxd_models_add(&m, &g, &mdl, err, sizeof err) < 0 ||
        gxd_model_verify(mdl, &s_lim, err, sizeof err) < 0)
        gxb_die("bench_artifact", "sigs", err);
    double rd_now = 0, rd_was = 0, mem_was = 0;
    for (int b = 1; b <= n; b++) {
        gxd_plan *p = NULL;
        int64_t cu = 0;
        double t0 = gxb_now_us();
        if (gxd_model_plan(mdl, &in[b - 1], &s_lim, &p, &cu, err, sizeof err) < 0 || cu != 0 ||
            !p->from_artifact)
            gxb_die("bench_artifact", "sigs", "not read from the artifact");
        rd_now += gxb_now_us() - t0;
        gxd_plan_release(&p);
        char key[128];
        void *buf = NULL;
        size_t len = 0;
        gxd_artifact_key(id.hex, &in[b - 1], NULL, 1, &s_lim, key, sizeof key);
        t0 = gxb_now_us();
        if (gxd_artifacts_load(before, key, &buf, &len) < 0 ||
            gxd_artifact_read(buf, len, mdl->graph, id.hex, &s_lim, &p, err, sizeof err) < 0)
            gxb_die("bench_artifact", "sigs", err);
        rd_was += gxb_now_us() - t0;
        mem_was += (double)gxd_plan_mem_bytes(p);
        free(buf);
        gxd_plan_destroy(&p);
    }
    printf("  restart, every signature read back: before %.1f ms, %.1f MB held by the plans; "
           "after %.1f ms, %.1f MB held by the model (graph and plans)\n",
           rd_was / 1000, mem_was / 1e6, rd_now / 1000,
           (double)atomic_load(&mdl->bytes) / 1e6);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
    gxd_artifacts_destroy(&before);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        gxb_die("bench_artifact", cmd, "failed");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "sigs")) {
        s_bench_sigs(argc > 2 && atoi(argv[2]) > 2 ? atoi(argv[2]) : 8);
        return 0;
    }
    const int blocks = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 100;
    printf("bench_artifact: median of 5, one thread\n");
    s_bench("mlp", s_mlp());
    s_bench("resnet-4", s_resnet(4, 1));
    s_bench("resnet", s_resnet(blocks, 1));
    s_bench_restart("resnet", s_resnet(blocks, 1), GX_MODE_AUTO);
    s_bench_restart("resnet-b8", s_resnet(blocks, 8), GX_MODE_REPLICA);
    return 0;
}
