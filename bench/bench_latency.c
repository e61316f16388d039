/*
 * Latency and throughput of gexecd as a client sees them. Prints one line per
 * figure and asserts nothing (bench/README.md explains each figure).
 *
 *     make -C build bench/bench_latency && build/bench/bench_latency
 *     build/bench/bench_latency --socket ipc:///run/gexec/gexecd.sock
 *
 * Without --socket it starts its own gexecd (../daemon/gexecd next to this
 * program's folder, or $GEXECD) on a temporary ipc socket and stops it at the
 * end. Figures:
 *   (a) RUN round trip of a tiny graph (Relu on float32 [1,16]) by graph id,
 *       sequential from one client: p50, p99, mean, and the daemon's share;
 *   (b) PING round trip: p50, p99;
 *   (c) jobs/s of the tiny graph from 1, 2, 4, 8 client threads (one
 *       gx_client each, synchronous), and from one client keeping 32 jobs
 *       in flight with gx_client_submit / gx_job_wait;
 *   (d) a 1024x1024x1024 MatMul through the daemon: GFLOP/s as the client
 *       sees it (round trip, 8 MiB over the socket) and from compute_us.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gexec/gexec.h>

#include "bench/benchutil.h"

typedef struct s_opts {
    const char *socket; /* NULL: start a daemon */
    int runs;           /* (a) sequential RUNs */
    int pings;          /* (b) */
    double seconds;     /* (c) per configuration */
    int matmul_runs;    /* (d) */
} s_opts;

static void s_die(const char *what, int rc, gx_client *c)
{
    fprintf(stderr, "bench_latency: %s: %s: %s\n", what, gx_status_name(rc),
            c ? gx_client_last_error(c) : gx_strerror(rc));
    exit(1);
}

/* ---- output ---- */

static void s_row(const char *name, double value, const char *unit, const char *note)
{
    printf("%-44s %12.2f  %-8s %s\n", name, value, unit, note ? note : "");
    fflush(stdout);
}

static double s_mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0;
}

/* ---- graphs and requests ---- */

static gx_graph *s_tiny_graph(void)
{
    gx_graph *g = gx_graph_new("bench-relu");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 16});
    gx_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_tensor *s_tiny_input(void)
{
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 16});
    float *p = gx_tensor_data(x);
    for (int i = 0; i < 16; i++)
        p[i] = (float)(i - 8);
    return x;
}

/* One RUN by id; returns its status, fills *info when given. */
static int s_run_once(gx_client *c, const gx_request *rq, gx_run_info *info)
{
    gx_result *r = NULL;
    int rc = gx_client_run(c, rq, &r);
    if (rc == GX_OK && info)
        *info = *gx_result_info(r);
    gx_result_destroy(&r);
    return rc;
}

/* warmup untimed RUNs, then n timed ones: wall[i] is the round trip in us,
 * info[i] what the daemon reported. Dies on a failed RUN. */
static void s_time_runs(gx_client *c, const gx_request *rq, const char *what, int warmup,
                        size_t n, double *wall, gx_run_info *info)
{
    int rc;
    for (int i = 0; i < warmup; i++)
        if ((rc = s_run_once(c, rq, NULL)) < 0)
            s_die(what, rc, c);
    for (size_t i = 0; i < n; i++) {
        double t0 = gxb_now_us();
        if ((rc = s_run_once(c, rq, &info[i])) < 0)
            s_die(what, rc, c);
        wall[i] = gxb_now_us() - t0;
    }
}

/* ---- (a) and (b) ---- */

static void s_bench_latency(const s_opts *o, gx_client *c, const gx_graph_id *id)
{
    gx_tensor *x = s_tiny_input();
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    size_t n = (size_t)o->runs;
    double *t = calloc(n, sizeof *t), *daemon_us = calloc(n, sizeof *daemon_us);
    gx_run_info *info = calloc(n, sizeof *info);
    int rc;
    s_time_runs(c, rq, "RUN", 200, n, t, info);
    for (size_t i = 0; i < n; i++)
        daemon_us[i] = (double)(info[i].queue_us + info[i].compute_us);
    free(info);
    double mean = s_mean(t, n), dmean = s_mean(daemon_us, n);
    gxb_sort(t, n);
    char note[64];
    snprintf(note, sizeof note, "%zu sequential RUNs", n);
    s_row("(a) RUN round trip p50, Relu [1,16] by id", gxb_pct(t, n, 50), "us", note);
    s_row("(a) RUN round trip p99", gxb_pct(t, n, 99), "us", NULL);
    s_row("(a) RUN round trip mean", mean, "us", NULL);
    s_row("(a) of which in the daemon's queue+compute", dmean, "us", "mean queue_us+compute_us");
    free(t);
    free(daemon_us);

    n = (size_t)o->pings;
    t = calloc(n, sizeof *t);
    for (int i = 0; i < 200; i++)
        gx_client_ping(c);
    for (size_t i = 0; i < n; i++) {
        double t0 = gxb_now_us();
        if ((rc = gx_client_ping(c)) < 0)
            s_die("PING", rc, c);
        t[i] = gxb_now_us() - t0;
    }
    gxb_sort(t, n);
    snprintf(note, sizeof note, "%zu PINGs", n);
    s_row("(b) PING round trip p50", gxb_pct(t, n, 50), "us", note);
    s_row("(b) PING round trip p99", gxb_pct(t, n, 99), "us", NULL);
    free(t);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
}

/* ---- (c) ---- */

typedef struct s_worker {
    const char *endpoint;
    const gx_graph_id *id;
    double seconds;
    pthread_barrier_t *start;
    long jobs;
    int rc;
    char err[256];
} s_worker;

static void *s_worker_main(void *arg)
{
    s_worker *w = arg;
    gx_client *c = gx_client_new(w->endpoint, w->err, sizeof w->err);
    gx_tensor *x = s_tiny_input();
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, w->id);
    gx_request_add_input(rq, "x", x);
    w->rc = c ? GX_OK : GX_ECONNECT;
    for (int i = 0; i < 50 && w->rc == GX_OK; i++)
        w->rc = s_run_once(c, rq, NULL);
    pthread_barrier_wait(w->start);
    double end = gxb_now_us() + w->seconds * 1e6;
    while (w->rc == GX_OK && gxb_now_us() < end) {
        w->rc = s_run_once(c, rq, NULL);
        w->jobs += w->rc == GX_OK;
    }
    if (w->rc < 0 && c)
        snprintf(w->err, sizeof w->err, "%s", gx_client_last_error(c));
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_client_destroy(&c);
    return NULL;
}

static void s_bench_threads(const s_opts *o, const char *endpoint, const gx_graph_id *id,
                            int nthreads)
{
    s_worker w[8];
    pthread_t th[8];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        w[i] = (s_worker){.endpoint = endpoint, .id = id, .seconds = o->seconds, .start = &start};
        pthread_create(&th[i], NULL, s_worker_main, &w[i]);
    }
    pthread_barrier_wait(&start);
    double t0 = gxb_now_us();
    long jobs = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        if (w[i].rc < 0) {
            fprintf(stderr, "bench_latency: thread %d: %s: %s\n", i, gx_status_name(w[i].rc),
                    w[i].err);
            exit(1);
        }
        jobs += w[i].jobs;
    }
    double secs = (gxb_now_us() - t0) * 1e-6;
    pthread_barrier_destroy(&start);
    char name[64], note[64];
    snprintf(name, sizeof name, "(c) throughput, %d client thread%s", nthreads,
             nthreads == 1 ? "" : "s");
    snprintf(note, sizeof note, "%ld jobs in %.2f s", jobs, secs);
    s_row(name, (double)jobs / secs, "jobs/s", note);
}

/* One client keeping `depth` jobs in flight: wait for the oldest, submit a
 * new one, for o->seconds. */
static void s_bench_async(const s_opts *o, gx_client *c, const gx_graph_id *id, int depth)
{
    gx_tensor *x = s_tiny_input();
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    gx_job **ring = calloc((size_t)depth, sizeof *ring);
    long done = 0;
    int rc;
    for (int i = 0; i < depth; i++)
        if ((rc = gx_client_submit(c, rq, &ring[i])) < 0)
            s_die("submit", rc, c);
    double t0 = gxb_now_us(), end = t0 + o->seconds * 1e6;
    for (int k = 0;; k = (k + 1) % depth) {
        gx_result *r = NULL;
        if ((rc = gx_job_wait(ring[k], 60000, &r)) < 0)
            s_die("job", rc, c);
        gx_result_destroy(&r);
        gx_job_destroy(&ring[k]);
        done++;
        if (gxb_now_us() >= end)
            break;
        if ((rc = gx_client_submit(c, rq, &ring[k])) < 0)
            s_die("submit", rc, c);
    }
    double secs = (gxb_now_us() - t0) * 1e-6;
    /* drain what is still in flight (not counted) */
    for (int i = 0; i < depth; i++) {
        if (!ring[i])
            continue;
        gx_result *r = NULL;
        gx_job_wait(ring[i], 60000, &r);
        gx_result_destroy(&r);
        gx_job_destroy(&ring[i]);
    }
    char name[64], note[64];
    snprintf(name, sizeof name, "(c) throughput, 1 client, %d in flight", depth);
    snprintf(note, sizeof note, "%ld jobs in %.2f s", done, secs);
    s_row(name, (double)done / secs, "jobs/s", note);
    free(ring);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
}

/* ---- (d) ---- */

static void s_bench_matmul(const s_opts *o, gx_client *c)
{
    const int64_t n = 1024;
    const double flop = 2.0 * (double)n * (double)n * (double)n;
    gx_tensor *a = gx_tensor_new(GX_F32, 2, (int64_t[]){n, n});
    gx_tensor *w = gx_tensor_new(GX_F32, 2, (int64_t[]){n, n});
    float *pa = gx_tensor_data(a), *pw = gx_tensor_data(w);
    for (int64_t i = 0; i < n * n; i++) {
        pa[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        pw[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    gx_graph *g = gx_graph_new("bench-matmul");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){n, n});
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"a", "w"}, 1, (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    gx_graph_id id;
    int rc = gx_client_load(c, g, &id);
    if (rc < 0)
        s_die("LOAD matmul", rc, c);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "a", a);
    size_t runs = (size_t)o->matmul_runs;
    double *wall = calloc(runs, sizeof *wall), *comp = calloc(runs, sizeof *comp);
    gx_run_info *info = calloc(runs, sizeof *info);
    s_time_runs(c, rq, "RUN matmul", 2, runs, wall, info);
    for (size_t i = 0; i < runs; i++)
        comp[i] = (double)info[i].compute_us;
    free(info);
    gxb_sort(wall, runs);
    gxb_sort(comp, runs);
    double wmed = gxb_pct(wall, runs, 50), cmed = gxb_pct(comp, runs, 50);
    char note[96];
    snprintf(note, sizeof note, "median of %zu RUNs: %.1f ms round trip", runs, wmed / 1e3);
    s_row("(d) MatMul 1024^3 GFLOP/s, client round trip", flop / wmed * 1e-3, "GFLOP/s", note);
    snprintf(note, sizeof note, "median of %zu RUNs: %.1f ms compute_us", runs, cmed / 1e3);
    s_row("(d) MatMul 1024^3 GFLOP/s, daemon compute_us", cmed > 0 ? flop / cmed * 1e-3 : 0,
          "GFLOP/s", note);
    free(wall);
    free(comp);
    gx_request_destroy(&rq);
    gx_graph_destroy(&g);
    gx_tensor_destroy(&a);
}

/* ---- main ---- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: bench_latency [--socket EP] [--runs N] [--pings N] [--seconds S]\n"
            "                     [--matmul-runs N] [--quick]\n"
            "  --socket EP       measure the gexecd at EP (default: start one on a temporary\n"
            "                    ipc socket: $GEXECD or ../daemon/gexecd next to this program)\n"
            "  --runs N          sequential RUNs for the latency figures (5000)\n"
            "  --pings N         PINGs (5000)\n"
            "  --seconds S       duration of each throughput figure (2)\n"
            "  --matmul-runs N   timed 1024^3 MatMul RUNs (10)\n"
            "  --quick           --runs 1000 --pings 1000 --seconds 0.5 --matmul-runs 3\n");
}

static bool s_parse(int argc, char **argv, s_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o->runs = o->pings = 1000;
            o->seconds = 0.5;
            o->matmul_runs = 3;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            s_usage(stdout);
            exit(0);
        }
        if (!v)
            return false;
        i++;
        if (strcmp(a, "--socket") == 0)
            o->socket = v;
        else if (strcmp(a, "--runs") == 0 && (o->runs = atoi(v)) > 0)
            ;
        else if (strcmp(a, "--pings") == 0 && (o->pings = atoi(v)) > 0)
            ;
        else if (strcmp(a, "--seconds") == 0 && (o->seconds = atof(v)) > 0)
            ;
        else if (strcmp(a, "--matmul-runs") == 0 && (o->matmul_runs = atoi(v)) > 0)
            ;
        else
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    s_opts o = {NULL, 5000, 5000, 2.0, 10};
    if (!s_parse(argc, argv, &o)) {
        s_usage(stderr);
        return 2;
    }
    gxb_daemon d = {0};
    const char *endpoint = o.socket;
    if (!endpoint) {
        gxb_daemon_start(&d, "bench_latency", NULL);
        endpoint = d.endpoint;
    }
    char err[256];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench_latency: %s\n", err);
        return 1;
    }
    gxb_stats st;
    int rc = gxb_stats_read(c, &st);
    if (rc < 0)
        s_die("STATS", rc, c);
    printf("# gexecd %s at %s (%s), %s workers; %s\n", st.version, endpoint,
           o.socket ? "given" : "started here", st.workers, st.topology);
    printf("%-44s %12s  %-8s %s\n", "# figure", "value", "unit", "note");

    gx_graph *g = s_tiny_graph();
    gx_graph_id id;
    if ((rc = gx_client_load(c, g, &id)) < 0)
        s_die("LOAD", rc, c);
    gx_graph_destroy(&g);

    s_bench_latency(&o, c, &id);
    const int threads[] = {1, 2, 4, 8};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
        s_bench_threads(&o, endpoint, &id, threads[i]);
    s_bench_async(&o, c, &id, 32);
    s_bench_matmul(&o, c);

    gx_client_destroy(&c);
    if (!o.socket)
        gxb_daemon_stop(&d);
    return 0;
}
