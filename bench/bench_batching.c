/*
 * Dynamic batching (issue 16): throughput of 8 client processes, each
 * sending batch-1 jobs of one graph one at a time, against a gexecd that
 * merges queued jobs (scheduler.batch_max 8, its default) and one that
 * does not (batch_max 1), in one run. Two graphs with a free batch axis: an
 * MLP (x[-1,256], three 256x256 layers) and a small CNN (x[-1,3,32,32],
 * two 3x3 convs, pools, a 32->10 Gemm). Prints jobs/s, the mean number of
 * jobs a reply says its job ran with, and the ratio. Asserts nothing.
 *
 *     make -C build bench/bench_batching && build/bench/bench_batching
 *     build/bench/bench_batching --seconds 5
 *
 * Each daemon is started here ($GEXECD, else ../daemon/gexecd next to this
 * program) on a temporary ipc socket with a config file written here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gexec/gexec.h>

#include "bench/benchutil.h"

#define S_PROG "bench_batching"
#define S_PROCS 8

/* ---- the graphs ---- */

static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    if (!t)
        gxb_die(S_PROG, name, "out of memory");
    float *p = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    if (gx_graph_add_const(g, name, &t) < 0)
        gxb_die(S_PROG, name, "cannot add the constant");
}

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, 1, (const char *[]){out});
    if (!n)
        gxb_die(S_PROG, op, "cannot add the node");
    return n;
}

#define IN(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                (const char *[]) { __VA_ARGS__ }

/* x[-1,256] -> 3 x (MatMul 256x256, Add, Relu) */
static gx_graph *s_mlp(void)
{
    gx_graph *g = gx_graph_new("bench-batching-mlp");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 256});
    const char *h = "x";
    static const char *const w[3] = {"w0", "w1", "w2"}, *const b[3] = {"b0", "b1", "b2"};
    static const char *const m[3] = {"m0", "m1", "m2"}, *const a[3] = {"a0", "a1", "a2"};
    static const char *const r[3] = {"r0", "r1", "y"};
    for (int l = 0; l < 3; l++) {
        s_const(g, w[l], 2, (int64_t[]){256, 256});
        s_const(g, b[l], 1, (int64_t[]){256});
        s_node(g, "MatMul", IN(h, w[l]), m[l]);
        s_node(g, "Add", IN(m[l], b[l]), a[l]);
        s_node(g, "Relu", IN(a[l]), r[l]);
        h = r[l];
    }
    gx_graph_add_output(g, "y");
    return g;
}

/* x[-1,3,32,32] -> Conv 3->16 + Relu -> MaxPool 2 -> Conv 16->32 + Relu ->
 * GlobalAveragePool -> Flatten -> Gemm 32->10 */
static gx_graph *s_cnn(void)
{
    gx_graph *g = gx_graph_new("bench-batching-cnn");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){-1, 3, 32, 32});
    s_const(g, "k1", 4, (int64_t[]){16, 3, 3, 3});
    s_const(g, "k2", 4, (int64_t[]){32, 16, 3, 3});
    s_const(g, "wf", 2, (int64_t[]){32, 10});
    s_const(g, "bf", 1, (int64_t[]){10});
    const int64_t pads[4] = {1, 1, 1, 1}, two[2] = {2, 2};
    gx_node_set_ints(s_node(g, "Conv", IN("x", "k1"), "c1"), "pads", pads, 4);
    s_node(g, "Relu", IN("c1"), "r1");
    gx_node *p = s_node(g, "MaxPool", IN("r1"), "p1");
    gx_node_set_ints(p, "kernel_shape", two, 2);
    gx_node_set_ints(p, "strides", two, 2);
    gx_node_set_ints(s_node(g, "Conv", IN("p1", "k2"), "c2"), "pads", pads, 4);
    s_node(g, "Relu", IN("c2"), "r2");
    s_node(g, "GlobalAveragePool", IN("r2"), "gp");
    s_node(g, "Flatten", IN("gp"), "f");
    s_node(g, "Gemm", IN("f", "wf", "bf"), "y");
    gx_graph_add_output(g, "y");
    return g;
}

/* ---- the client processes ---- */

typedef struct s_report {
    long jobs, batched; /* jobs answered; the sum of their replies' batched */
    int rc;
    char msg[160];
} s_report;

/* A client process: waits for the graph id, then runs batch-1 jobs one at a
 * time until end_us; reports and exits. Forked before the parent has a
 * ZeroMQ context. */
static void s_child(const char *endpoint, int go_fd, int report_fd, const int64_t *shape,
                    int ndim)
{
    s_report rep = {0};
    struct {
        gx_graph_id id;
        double end_us;
    } go;
    if (!gxb_read_all(go_fd, &go, sizeof go))
        _exit(0);
    char err[256];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    gx_tensor *x = gx_tensor_new(GX_F32, ndim, shape);
    gx_request *rq = gx_request_new();
    if (!c || !x || !rq) {
        rep.rc = GX_ECONNECT;
        snprintf(rep.msg, sizeof rep.msg, "%.150s", c ? "out of memory" : err);
    } else {
        memset(gx_tensor_data(x), 0, gx_tensor_nbytes(x));
        gx_request_set_graph_id(rq, &go.id);
        gx_request_add_input(rq, "x", x);
        while (gxb_now_us() < go.end_us) {
            gx_result *r = NULL;
            rep.rc = gx_client_run(c, rq, &r);
            if (rep.rc < 0) {
                snprintf(rep.msg, sizeof rep.msg, "%.150s",
                         r ? gx_result_message(r) : gx_client_last_error(c));
                gx_result_destroy(&r);
                break;
            }
            rep.jobs++;
            rep.batched += gx_result_info(r)->batched;
            gx_result_destroy(&r);
        }
    }
    gxb_write_all(report_fd, &rep, sizeof rep);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_client_destroy(&c);
    _exit(0);
}

/* One measurement: a daemon with batch_max, S_PROCS clients for seconds;
 * jobs/s and the mean batched per job. */
static void s_measure(gx_graph *(*make)(void), const int64_t *shape, int ndim, int batch_max,
                      double seconds, double *rate, double *mean_batched)
{
    char cfg[] = "/tmp/bench-batching-XXXXXX";
    int fd = mkstemp(cfg);
    if (fd < 0)
        gxb_die(S_PROG, "config", strerror(errno));
    char text[128];
    const int len = snprintf(text, sizeof text, "scheduler:\n  batch_max: %d\n", batch_max);
    gxb_write_all(fd, text, (size_t)len);
    close(fd);
    gxb_daemon d = {0};
    gxb_daemon_start(&d, S_PROG, (const char *const[]){"-c", cfg, NULL});
    int go[S_PROCS][2], rep[S_PROCS][2];
    pid_t pid[S_PROCS];
    fflush(stdout);
    for (int i = 0; i < S_PROCS; i++) {
        if (pipe(go[i]) < 0 || pipe(rep[i]) < 0 || (pid[i] = fork()) < 0)
            gxb_die(S_PROG, "client processes", strerror(errno));
        if (pid[i] == 0) {
            close(go[i][1]);
            close(rep[i][0]);
            s_child(d.endpoint, go[i][0], rep[i][1], shape, ndim);
        }
        close(go[i][0]);
        close(rep[i][1]);
    }
    char err[256];
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    if (!c)
        gxb_die(S_PROG, d.endpoint, err);
    gx_graph *g = make();
    struct {
        gx_graph_id id;
        double end_us;
    } msg;
    if (gx_client_load(c, g, &msg.id) < 0)
        gxb_die(S_PROG, "LOAD", gx_client_last_error(c));
    msg.end_us = gxb_now_us() + seconds * 1e6;
    const double t0 = gxb_now_us();
    for (int i = 0; i < S_PROCS; i++)
        gxb_write_all(go[i][1], &msg, sizeof msg);
    long jobs = 0, batched = 0;
    for (int i = 0; i < S_PROCS; i++) {
        s_report r = {0};
        if (!gxb_read_all(rep[i][0], &r, sizeof r) || r.rc < 0)
            gxb_die(S_PROG, "client process", r.rc < 0 ? r.msg : "exited");
        jobs += r.jobs;
        batched += r.batched;
        close(go[i][1]);
        close(rep[i][0]);
        waitpid(pid[i], NULL, 0);
    }
    const double t = (gxb_now_us() - t0) * 1e-6;
    *rate = (double)jobs / t;
    *mean_batched = jobs ? (double)batched / (double)jobs : 0;
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gxb_daemon_stop(&d);
    unlink(cfg);
}

int main(int argc, char **argv)
{
    double seconds = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc && (seconds = atof(argv[++i])) > 0)
            continue;
        fprintf(stderr, "usage: bench_batching [--seconds S]\n");
        return 2;
    }
    static const struct {
        const char *name;
        gx_graph *(*make)(void);
        int ndim;
        int64_t shape[4];
    } models[] = {{"mlp", s_mlp, 2, {1, 256}}, {"cnn", s_cnn, 4, {1, 3, 32, 32}}};
    printf("# %d client processes, each sending batch-1 jobs one at a time, %.1f s per row; "
           "batched: the mean number of jobs a job ran with\n",
           S_PROCS, seconds);
    printf("# model   jobs/s (batch_max 1)  jobs/s (batch_max 8)  batched  ratio\n");
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        double r1, b1, r8, b8;
        s_measure(models[m].make, models[m].shape, models[m].ndim, 1, seconds, &r1, &b1);
        s_measure(models[m].make, models[m].shape, models[m].ndim, 8, seconds, &r8, &b8);
        printf("%-8s %21.0f %21.0f %8.2f %6.2f\n", models[m].name, r1, r8, b8, r8 / r1);
        fflush(stdout);
    }
    return 0;
}
