/*
 * gexecd's parallel execution modes compared (issue 5's benchmark): each case
 * runs with every fixed mode (GX_MODE_LIST: seq, intra, inter, replica,
 * inter+intra, inter+replica) and with auto, in one run, and is printed as one
 * table with ratios to seq and to the best fixed mode. Asserts nothing.
 *
 *     make -C build bench/bench_modes && build/bench/bench_modes
 *     build/bench/bench_modes --quick --cases a,c
 *     build/bench/bench_modes --socket ipc:///run/gexec/gexecd.sock
 *
 * Without --socket it starts its own gexecd ($GEXECD, else ../daemon/gexecd
 * next to this program) on a temporary ipc socket and stops it at the end.
 * Cases (bench/README.md says more):
 *   a  a chain of 200 tiny elementwise ops on float32 [1,64], one client
 *      keeping 64 jobs in flight: jobs/s;
 *   b  8 independent Gemm [64,256]x[256,256] + Relu branches, concatenated,
 *      one job in flight: median latency and jobs/s;
 *   c  one MatMul [1024,1024]x[1024,1024]: median latency and GFLOP/s;
 *   d  a small CNN on [32,3,32,32]: median latency and images/s;
 *   e  4 client processes (fork), each keeping 16 jobs of case a in flight:
 *      total jobs/s.
 * A mode the daemon refuses (GX_EUNSUPPORTED) is printed as "refused" in its
 * row. Modes are measured round-robin within a case (rep 1 of every mode,
 * then rep 2, ...) so that the machine's drift hits them alike.
 *
 * Options: --quick, --socket EP, --cpus LIST, --cases a,b,... (--help).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gexec/gexec.h>

#include "bench/benchutil.h"

#define S_PROCS 4        /* case e: client processes */
#define S_PROC_DEPTH 16  /* case e: jobs in flight per process */
#define S_CHAIN_DEPTH 64 /* case a: jobs in flight */
#define S_WAIT_MS 60000  /* longest wait for one reply */

typedef struct s_opts {
    const char *socket; /* NULL: start a daemon */
    const char *cpus;   /* --cpus for the daemon started here */
    bool quick;
    char cases[8]; /* letters to run, in order */
} s_opts;

static void s_die(const char *what, int rc, gx_client *c)
{
    fprintf(stderr, "bench_modes: %s: %s: %s\n", what, gx_status_name(rc),
            c ? gx_client_last_error(c) : gx_strerror(rc));
    exit(1);
}

/* ---- fixed-seed random constants ---- */

/* xorshift64*: the same constants on every run and machine. */
static uint64_t s_rng_state;

static void s_rng_seed(uint64_t seed)
{
    s_rng_state = seed ? seed : 1;
}

/* Uniform in [lo, hi). */
static float s_rng_uniform(float lo, float hi)
{
    s_rng_state ^= s_rng_state >> 12;
    s_rng_state ^= s_rng_state << 25;
    s_rng_state ^= s_rng_state >> 27;
    uint64_t r = s_rng_state * 0x2545F4914F6CDD1DULL;
    return lo + (hi - lo) * (float)((double)(r >> 40) / (double)(1ULL << 24));
}

/* A float32 tensor of the given shape filled uniformly in [lo, hi). */
static gx_tensor *s_rand_tensor(int ndim, const int64_t *shape, float lo, float hi)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    if (!t) {
        fprintf(stderr, "bench_modes: out of memory\n");
        exit(1);
    }
    float *p = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        p[i] = s_rng_uniform(lo, hi);
    return t;
}

/* Add constant `name` to g, filled as s_rand_tensor. */
static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape, float lo,
                    float hi)
{
    gx_tensor *t = s_rand_tensor(ndim, shape, lo, hi);
    if (gx_graph_add_const(g, name, &t) < 0) {
        fprintf(stderr, "bench_modes: constant %s refused by the graph builder\n", name);
        exit(1);
    }
}

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, 1, (const char *[]){out});
    if (!n) {
        fprintf(stderr, "bench_modes: graph builder refused a %s node\n", op);
        exit(1);
    }
    return n;
}

/* ---- the cases' graphs and inputs (each graph has one input "x") ---- */

#define S_CHAIN_LEN 200

/* a, e: x [1,64] -> (Add c, Mul k, Relu, Tanh) x 50 -> y */
static gx_graph *s_graph_chain(void)
{
    gx_graph *g = gx_graph_new("bench-modes-chain");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 64});
    char prev[32] = "x", cur[32], cname[32];
    for (int i = 0; i < S_CHAIN_LEN; i++) {
        snprintf(cur, sizeof cur, i == S_CHAIN_LEN - 1 ? "y" : "v%d", i);
        switch (i % 4) {
        case 0:
        case 1:
            snprintf(cname, sizeof cname, "c%d", i);
            if (i % 4 == 0)
                s_const(g, cname, 1, (int64_t[]){64}, -0.5f, 0.5f);
            else
                s_const(g, cname, 1, (int64_t[]){64}, 0.8f, 1.25f);
            s_node(g, i % 4 == 0 ? "Add" : "Mul", 2, (const char *[]){prev, cname}, cur);
            break;
        case 2:
            s_node(g, "Relu", 1, (const char *[]){prev}, cur);
            break;
        default:
            s_node(g, "Tanh", 1, (const char *[]){prev}, cur);
            break;
        }
        snprintf(prev, sizeof prev, "%s", cur);
    }
    gx_graph_add_output(g, "y");
    return g;
}

static gx_tensor *s_input_chain(void)
{
    return s_rand_tensor(2, (int64_t[]){1, 64}, -1.0f, 1.0f);
}

#define S_BRANCHES 8

/* b: x [64,256] -> 8 x (Gemm(x, w_i, b_i) -> Relu) -> Concat(axis 1) -> y [64,2048] */
static gx_graph *s_graph_branches(void)
{
    gx_graph *g = gx_graph_new("bench-modes-branches");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){64, 256});
    char outs[S_BRANCHES][16];
    const char *cat_in[S_BRANCHES];
    for (int i = 0; i < S_BRANCHES; i++) {
        char w[16], b[16], h[16];
        snprintf(w, sizeof w, "w%d", i);
        snprintf(b, sizeof b, "b%d", i);
        snprintf(h, sizeof h, "h%d", i);
        snprintf(outs[i], sizeof outs[i], "r%d", i);
        s_const(g, w, 2, (int64_t[]){256, 256}, -0.0625f, 0.0625f);
        s_const(g, b, 1, (int64_t[]){256}, -0.1f, 0.1f);
        s_node(g, "Gemm", 3, (const char *[]){"x", w, b}, h);
        s_node(g, "Relu", 1, (const char *[]){h}, outs[i]);
        cat_in[i] = outs[i];
    }
    gx_node_set_int(s_node(g, "Concat", S_BRANCHES, cat_in, "y"), "axis", 1);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_tensor *s_input_branches(void)
{
    return s_rand_tensor(2, (int64_t[]){64, 256}, -1.0f, 1.0f);
}

#define S_MM 1024

/* c: y = MatMul(x [1024,1024], w [1024,1024]) */
static gx_graph *s_graph_matmul(void)
{
    gx_graph *g = gx_graph_new("bench-modes-matmul");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){S_MM, S_MM});
    s_const(g, "w", 2, (int64_t[]){S_MM, S_MM}, -0.03125f, 0.03125f);
    s_node(g, "MatMul", 2, (const char *[]){"x", "w"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

static gx_tensor *s_input_matmul(void)
{
    return s_rand_tensor(2, (int64_t[]){S_MM, S_MM}, -1.0f, 1.0f);
}

#define S_CNN_BATCH 32

/* A 3x3 convolution with padding 1, its weights and bias. */
static void s_conv3x3(gx_graph *g, const char *in, const char *w, const char *b, int64_t cin,
                      int64_t cout, const char *out)
{
    float s = 1.0f / sqrtf((float)(cin * 9));
    s_const(g, w, 4, (int64_t[]){cout, cin, 3, 3}, -s, s);
    s_const(g, b, 1, (int64_t[]){cout}, -0.1f, 0.1f);
    gx_node *n = s_node(g, "Conv", 3, (const char *[]){in, w, b}, out);
    gx_node_set_ints(n, "kernel_shape", (int64_t[]){3, 3}, 2);
    gx_node_set_ints(n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
}

/* d: x [32,3,32,32] -> Conv 3->16 -> Relu -> MaxPool 2x2 -> Conv 16->32 -> Relu
 *    -> GlobalAveragePool -> Flatten -> Gemm 32->10 -> y [32,10] */
static gx_graph *s_graph_cnn(void)
{
    gx_graph *g = gx_graph_new("bench-modes-cnn");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){S_CNN_BATCH, 3, 32, 32});
    s_conv3x3(g, "x", "w1", "b1", 3, 16, "c1");
    s_node(g, "Relu", 1, (const char *[]){"c1"}, "r1");
    gx_node *mp = s_node(g, "MaxPool", 1, (const char *[]){"r1"}, "p1");
    gx_node_set_ints(mp, "kernel_shape", (int64_t[]){2, 2}, 2);
    gx_node_set_ints(mp, "strides", (int64_t[]){2, 2}, 2);
    s_conv3x3(g, "p1", "w2", "b2", 16, 32, "c2");
    s_node(g, "Relu", 1, (const char *[]){"c2"}, "r2");
    s_node(g, "GlobalAveragePool", 1, (const char *[]){"r2"}, "gap");
    gx_node_set_int(s_node(g, "Flatten", 1, (const char *[]){"gap"}, "flat"), "axis", 1);
    s_const(g, "wfc", 2, (int64_t[]){32, 10}, -0.17f, 0.17f);
    s_const(g, "bfc", 1, (int64_t[]){10}, -0.1f, 0.1f);
    s_node(g, "Gemm", 3, (const char *[]){"flat", "wfc", "bfc"}, "y");
    gx_graph_add_output(g, "y");
    return g;
}

static gx_tensor *s_input_cnn(void)
{
    return s_rand_tensor(4, (int64_t[]){S_CNN_BATCH, 3, 32, 32}, 0.0f, 1.0f);
}

/* ---- the cases ---- */

typedef enum s_kind {
    S_PIPELINE, /* one client, `depth` jobs in flight: jobs/s */
    S_LATENCY,  /* one job at a time: median round trip */
    S_PROCESSES /* S_PROCS forked clients, S_PROC_DEPTH in flight each: total jobs/s */
} s_kind;

typedef struct s_case {
    char key;
    const char *name; /* short, for the table */
    s_kind kind;
    gx_graph *(*graph)(void);
    gx_tensor *(*input)(void);
    double flop;   /* per job, for GFLOP/s (0: not shown) */
    int images;    /* per job, for images/s (0: not shown) */
    /* sizes, default and --quick */
    int reps[2];    /* repetitions of each mode, round-robin */
    int runs[2];    /* S_LATENCY: most timed runs per rep */
    double secs[2]; /* longest rep */
    int warmup[2];  /* untimed jobs per mode before the first rep */
} s_case;

static const s_case s_cases[] = {
    {'a', "chain200 x64", S_PIPELINE, s_graph_chain, s_input_chain, 0, 0,
     {10, 2}, {0, 0}, {0.25, 0.05}, {500, 100}},
    {'b', "8 branches", S_LATENCY, s_graph_branches, s_input_branches,
     S_BRANCHES * 2.0 * 64 * 256 * 256, 0, {10, 2}, {30, 5}, {0.1, 0.05}, {10, 2}},
    {'c', "matmul 1024", S_LATENCY, s_graph_matmul, s_input_matmul,
     2.0 * S_MM * S_MM * S_MM, 0, {10, 1}, {3, 3}, {0.3, 0.2}, {2, 1}},
    {'d', "cnn b32", S_LATENCY, s_graph_cnn, s_input_cnn, 0, S_CNN_BATCH,
     {10, 2}, {12, 3}, {0.1, 0.05}, {5, 1}},
    {'e', "4 procs chain", S_PROCESSES, s_graph_chain, s_input_chain, 0, 0,
     {10, 2}, {0, 0}, {0.25, 0.1}, {500, 100}},
};
#define S_NCASES (sizeof s_cases / sizeof s_cases[0])

/* ---- what the daemon reported: how jobs ran ---- */

typedef struct s_choice {
    char mode[16];
    int workers, replicas;
    long n;
} s_choice;

/* Distinct (mode, workers, replicas) the replies named, with counts. */
typedef struct s_tally {
    s_choice c[8];
    int n;
    long other;        /* beyond the 8 kept */
    double compute_us; /* sum of the replies' compute_us */
    long replies;
} s_tally;

static void s_tally_add(s_tally *t, const char *mode, int workers, int replicas, long n)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->c[i].mode, mode) == 0 && t->c[i].workers == workers &&
            t->c[i].replicas == replicas) {
            t->c[i].n += n;
            return;
        }
    if (t->n == (int)(sizeof t->c / sizeof t->c[0])) {
        t->other += n;
        return;
    }
    s_choice *c = &t->c[t->n++];
    snprintf(c->mode, sizeof c->mode, "%s", mode);
    c->workers = workers;
    c->replicas = replicas;
    c->n = n;
}

static void s_tally_info(s_tally *t, const gx_run_info *i)
{
    s_tally_add(t, i->mode, i->workers, i->replicas, 1);
    t->compute_us += (double)i->compute_us;
    t->replies++;
}

static void s_tally_merge(s_tally *t, const s_tally *u)
{
    for (int i = 0; i < u->n; i++)
        s_tally_add(t, u->c[i].mode, u->c[i].workers, u->c[i].replicas, u->c[i].n);
    t->other += u->other;
    t->compute_us += u->compute_us;
    t->replies += u->replies;
}

/* "inter w2 r1", the most frequent choice, with its share when not all. */
static void s_tally_str(const s_tally *t, char *buf, size_t len)
{
    long total = t->other, best = -1;
    int k = 0;
    for (int i = 0; i < t->n; i++) {
        total += t->c[i].n;
        if (t->c[i].n > best) {
            best = t->c[i].n;
            k = i;
        }
    }
    if (t->n == 0) {
        snprintf(buf, len, "-");
        return;
    }
    const s_choice *c = &t->c[k];
    int w = snprintf(buf, len, "%s w%d r%d", c->mode, c->workers, c->replicas);
    if (best < total && w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, " (%.0f%% of %ld)", 100.0 * (double)best / (double)total,
                 total);
}

/* ---- one (case, mode) cell ---- */

typedef struct s_cell {
    gx_mode mode;
    int rc;        /* GX_OK, or why the mode has no figure */
    char msg[200]; /* the daemon's message when rc < 0 */
    /* S_LATENCY: every timed round trip and the daemon's compute_us */
    double *wall, *comp;
    size_t n_wall;
    double wall_sum;
    /* S_PIPELINE / S_PROCESSES: jobs/s of each rep */
    double rate[16];
    int n_rate;
    s_tally tally;
    gx_run_info last; /* the latest reply this process received */
    bool have_last;
    /* the first output against seq's (the reference: seq's own) */
    bool checked, identical, is_ref;
    double maxdiff;
    /* derived once measured: higher is better */
    double score;
} s_cell;

/* The failure of a RUN as the row prints it. r may be NULL. */
static void s_fail(s_cell *cell, int rc, const gx_result *r, gx_client *c)
{
    cell->rc = rc;
    const char *m = r && *gx_result_message(r) ? gx_result_message(r) : gx_client_last_error(c);
    snprintf(cell->msg, sizeof cell->msg, "%s", m && *m ? m : gx_strerror(rc));
}

/* One synchronous RUN; on success *info and *compute_us are filled and the
 * result is returned in *out when out is given (caller destroys). */
static int s_run(gx_client *c, const gx_request *rq, s_cell *cell, gx_result **out)
{
    gx_result *r = NULL;
    int rc = gx_client_run(c, rq, &r);
    if (rc < 0) {
        s_fail(cell, rc, r, c);
        gx_result_destroy(&r);
        return rc;
    }
    cell->last = *gx_result_info(r);
    cell->have_last = true;
    if (out)
        *out = r;
    else
        gx_result_destroy(&r);
    return GX_OK;
}

/* Compare output 0 of r with the reference (seq's), or make it the
 * reference when there is none yet. */
static void s_check(s_cell *cell, const gx_result *r, gx_tensor **ref)
{
    const gx_tensor *y = gx_result_output(r, 0);
    if (!y || gx_tensor_dtype(y) != GX_F32)
        return;
    if (!*ref) {
        *ref = gx_tensor_new_copy(GX_F32, gx_tensor_ndim(y), gx_tensor_shape(y),
                                  gx_tensor_cdata(y), gx_tensor_nbytes(y));
        cell->is_ref = *ref != NULL;
        return;
    }
    cell->checked = true;
    if (gx_tensor_numel(y) != gx_tensor_numel(*ref)) {
        cell->identical = false;
        cell->maxdiff = INFINITY;
        return;
    }
    const float *a = gx_tensor_cdata(y), *b = gx_tensor_cdata(*ref);
    cell->identical = memcmp(a, b, gx_tensor_nbytes(y)) == 0;
    for (int64_t i = 0; i < gx_tensor_numel(y); i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > cell->maxdiff || isnan(d))
            cell->maxdiff = isnan(d) ? INFINITY : d;
    }
}

/* Keep `depth` jobs of rq in flight until max_jobs replies have come or
 * end_us has passed. *done: replies counted, *secs: the time they took;
 * replies after end_us are waited for but not counted. GX_OK, or the first
 * failure (with cell->rc / msg set; a reply not come within S_WAIT_MS is
 * one). */
static int s_pipeline(gx_client *c, const gx_request *rq, int depth, long max_jobs, double end_us,
                      s_tally *tally, s_cell *cell, long *done, double *secs)
{
    gx_job **ring = calloc((size_t)depth, sizeof *ring);
    long submitted = 0, received = 0;
    int rc = GX_OK;
    double t0 = gxb_now_us();
    for (int i = 0; i < depth && submitted < max_jobs && rc == GX_OK; i++, submitted++)
        if ((rc = gx_client_submit(c, rq, &ring[i])) < 0)
            s_fail(cell, rc, NULL, c);
    for (int k = 0; rc == GX_OK && received < submitted; k = (k + 1) % depth) {
        if (!ring[k])
            continue;
        gx_result *r = NULL;
        if ((rc = gx_job_wait(ring[k], S_WAIT_MS, &r)) < 0) {
            s_fail(cell, rc, r, c);
            gx_result_destroy(&r);
            break;
        }
        s_tally_info(tally, gx_result_info(r));
        cell->last = *gx_result_info(r);
        cell->have_last = true;
        gx_result_destroy(&r);
        gx_job_destroy(&ring[k]);
        received++;
        if (gxb_now_us() >= end_us)
            break;
        if (submitted < max_jobs) {
            if ((rc = gx_client_submit(c, rq, &ring[k])) < 0)
                s_fail(cell, rc, NULL, c);
            submitted++;
        }
    }
    *secs = (gxb_now_us() - t0) * 1e-6;
    *done = received;
    /* what is still in flight, uncounted: waited for, so that the next
     * measurement starts on an idle daemon; after a failure (a reply that
     * never came, say) only forgotten */
    for (int i = 0; i < depth; i++) {
        if (!ring[i])
            continue;
        gx_result *r = NULL;
        if (rc == GX_OK)
            gx_job_wait(ring[i], S_WAIT_MS, &r);
        gx_result_destroy(&r);
        gx_job_destroy(&ring[i]);
    }
    free(ring);
    return rc;
}

/* ---- case e: client processes ---- */

/* Parent -> child: run `mode` until end_us; mode < 0: exit. */
typedef struct s_cmd {
    int mode;
    double end_us;
} s_cmd;

/* Child -> parent, after each command (and once, rc only, when ready). */
typedef struct s_report {
    int rc;
    long jobs;
    s_tally tally;
    char msg[200];
} s_report;

typedef struct s_proc {
    pid_t pid;
    int cmd_fd, report_fd; /* parent's ends */
} s_proc;

/* A forked client process: its own gx_client (the parent's ZeroMQ context
 * is never touched here), one request per mode, then commands until told to
 * exit. Never returns. */
static void s_child(const char *endpoint, const gx_graph_id *id, int cmd_fd, int report_fd)
{
    s_report rep = {0};
    char err[256];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    gx_tensor *x = s_input_chain();
    gx_request *rq[GX_MODE_COUNT] = {0};
    if (!c) {
        rep.rc = GX_ECONNECT;
        snprintf(rep.msg, sizeof rep.msg, "%.150s", err);
    } else {
        gx_client_set_timeout(c, S_WAIT_MS);
        rep.rc = gx_client_ping(c);
        if (rep.rc < 0)
            snprintf(rep.msg, sizeof rep.msg, "%s", gx_client_last_error(c));
    }
    for (int m = 0; m < GX_MODE_COUNT; m++) {
        rq[m] = gx_request_new();
        gx_request_set_graph_id(rq[m], id);
        gx_request_add_input(rq[m], "x", x);
        gx_request_set_mode(rq[m], (gx_mode)m);
    }
    gxb_write_all(report_fd, &rep, sizeof rep);
    s_cmd cmd;
    while (rep.rc == GX_OK && gxb_read_all(cmd_fd, &cmd, sizeof cmd) && cmd.mode >= 0 &&
           cmd.mode < GX_MODE_COUNT) {
        s_cell cell = {0};
        double secs;
        memset(&rep, 0, sizeof rep);
        rep.rc = s_pipeline(c, rq[cmd.mode], S_PROC_DEPTH, LONG_MAX, cmd.end_us, &rep.tally, &cell,
                            &rep.jobs, &secs);
        if (rep.rc < 0)
            snprintf(rep.msg, sizeof rep.msg, "%s", cell.msg);
        if (!gxb_write_all(report_fd, &rep, sizeof rep))
            break;
    }
    for (int m = 0; m < GX_MODE_COUNT; m++)
        gx_request_destroy(&rq[m]);
    gx_tensor_destroy(&x);
    gx_client_destroy(&c);
    _exit(0);
}

/* Start S_PROCS children; false (with a message on stderr) if one fails. */
static bool s_procs_start(s_proc *p, const char *endpoint, const gx_graph_id *id)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < S_PROCS; i++) {
        int cmd[2], rep[2];
        if (pipe(cmd) < 0 || pipe(rep) < 0) {
            fprintf(stderr, "bench_modes: pipe: %s\n", strerror(errno));
            return false;
        }
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "bench_modes: fork: %s\n", strerror(errno));
            return false;
        }
        if (pid == 0) {
            close(cmd[1]);
            close(rep[0]);
            for (int j = 0; j < i; j++) {
                close(p[j].cmd_fd);
                close(p[j].report_fd);
            }
            s_child(endpoint, id, cmd[0], rep[1]);
        }
        close(cmd[0]);
        close(rep[1]);
        p[i] = (s_proc){pid, cmd[1], rep[0]};
    }
    for (int i = 0; i < S_PROCS; i++) {
        s_report r;
        if (!gxb_read_all(p[i].report_fd, &r, sizeof r) || r.rc < 0) {
            fprintf(stderr, "bench_modes: client process %d: %s\n", i,
                    r.rc < 0 ? r.msg : "exited");
            return false;
        }
    }
    return true;
}

static void s_procs_stop(s_proc *p)
{
    for (int i = 0; i < S_PROCS; i++) {
        if (p[i].pid <= 0)
            continue;
        s_cmd quit = {-1, 0};
        gxb_write_all(p[i].cmd_fd, &quit, sizeof quit);
        close(p[i].cmd_fd);
        close(p[i].report_fd);
        int st;
        waitpid(p[i].pid, &st, 0);
        p[i].pid = 0;
    }
}

/* One window of `secs` seconds: every child runs mode m; total jobs/s. */
static void s_procs_rep(s_proc *p, s_cell *cell, double secs)
{
    double t0 = gxb_now_us();
    s_cmd cmd = {(int)cell->mode, t0 + secs * 1e6};
    for (int i = 0; i < S_PROCS; i++)
        gxb_write_all(p[i].cmd_fd, &cmd, sizeof cmd);
    long jobs = 0;
    for (int i = 0; i < S_PROCS; i++) {
        s_report r;
        if (!gxb_read_all(p[i].report_fd, &r, sizeof r)) {
            cell->rc = GX_EIO;
            snprintf(cell->msg, sizeof cell->msg, "client process %d exited", i);
            continue;
        }
        if (r.rc < 0 && cell->rc == GX_OK) {
            cell->rc = r.rc;
            snprintf(cell->msg, sizeof cell->msg, "%s", r.msg);
        }
        jobs += r.jobs;
        s_tally_merge(&cell->tally, &r.tally);
    }
    double elapsed = (cmd.end_us - t0) * 1e-6;
    if (cell->rc == GX_OK && cell->n_rate < (int)(sizeof cell->rate / sizeof cell->rate[0]))
        cell->rate[cell->n_rate++] = (double)jobs / elapsed;
}

/* ---- running a case ---- */

static const gx_mode s_order[] = {GX_MODE_SEQ,         GX_MODE_INTRA,        GX_MODE_INTER,
                                  GX_MODE_REPLICA,     GX_MODE_INTER_INTRA,  GX_MODE_INTER_REPLICA,
                                  GX_MODE_AUTO};
#define S_NMODES (sizeof s_order / sizeof s_order[0])
_Static_assert(S_NMODES == GX_MODE_COUNT, "every mode of GX_MODE_LIST is benchmarked");

/* Warm-up of one mode: one RUN checked against seq's output (and refused
 * modes found), then untimed jobs. */
static void s_warmup(const s_case *cs, int q, gx_client *c, const gx_request *rq, s_cell *cell,
                     gx_tensor **ref)
{
    gx_result *r = NULL;
    if (s_run(c, rq, cell, &r) < 0)
        return;
    s_check(cell, r, ref);
    gx_result_destroy(&r);
    if (cs->kind == S_LATENCY) {
        for (int i = 1; i < cs->warmup[q] && cell->rc == GX_OK; i++)
            s_run(c, rq, cell, NULL);
    } else {
        s_tally scratch = {0};
        long done;
        double secs;
        s_pipeline(c, rq, S_CHAIN_DEPTH, cs->warmup[q], INFINITY, &scratch, cell, &done, &secs);
    }
}

/* One timed rep of a mode in its case. */
static void s_rep(const s_case *cs, int q, gx_client *c, const gx_request *rq, s_cell *cell,
                  s_proc *procs)
{
    switch (cs->kind) {
    case S_LATENCY: {
        double end = gxb_now_us() + cs->secs[q] * 1e6;
        /* at least one run per rep, however slow the mode */
        for (int i = 0; i < cs->runs[q] && cell->rc == GX_OK && (i == 0 || gxb_now_us() < end);
             i++) {
            gx_result *r = NULL;
            double t0 = gxb_now_us();
            if (s_run(c, rq, cell, &r) < 0)
                return;
            double t = gxb_now_us() - t0;
            const gx_run_info *info = gx_result_info(r);
            cell->wall[cell->n_wall] = t;
            cell->comp[cell->n_wall++] = (double)info->compute_us;
            cell->wall_sum += t;
            s_tally_info(&cell->tally, info);
            gx_result_destroy(&r);
        }
        return;
    }
    case S_PIPELINE: {
        long done;
        double secs;
        if (s_pipeline(c, rq, S_CHAIN_DEPTH, LONG_MAX, gxb_now_us() + cs->secs[q] * 1e6,
                       &cell->tally, cell, &done, &secs) == GX_OK &&
            cell->n_rate < (int)(sizeof cell->rate / sizeof cell->rate[0]))
            cell->rate[cell->n_rate++] = (double)done / secs;
        return;
    }
    case S_PROCESSES:
        s_procs_rep(procs, cell, cs->secs[q]);
        return;
    }
}

/* Figures of a measured cell; score: higher is better (jobs/s or 1/latency). */
static void s_figures(const s_case *cs, s_cell *cell, char *fig, size_t len)
{
    if (cs->kind == S_LATENCY) {
        double med = gxb_median(cell->wall, cell->n_wall);
        double cmed = gxb_median(cell->comp, cell->n_wall);
        double jps = cell->wall_sum > 0 ? (double)cell->n_wall / (cell->wall_sum * 1e-6) : 0;
        cell->score = med > 0 ? 1e6 / med : 0;
        char extra[48] = "";
        if (cs->flop > 0)
            snprintf(extra, sizeof extra, " %7.1f GFLOP/s", med > 0 ? cs->flop / med * 1e-3 : 0);
        if (cs->images > 0)
            snprintf(extra, sizeof extra, " %7.0f img/s", (double)cs->images * jps);
        snprintf(fig, len, "%8.3f ms %7.1f jobs/s%s (daemon %.3f ms)", med * 1e-3, jps, extra,
                 cmed * 1e-3);
    } else {
        double med = gxb_median(cell->rate, (size_t)cell->n_rate);
        const s_tally *t = &cell->tally;
        cell->score = med;
        snprintf(fig, len, "%8.0f jobs/s (daemon %.1f us/job)", med,
                 t->replies ? t->compute_us / (double)t->replies : 0);
    }
}

/* The first output against seq's: "=" bit-identical, else the largest
 * absolute difference; "ref" for the reference itself. */
static void s_check_str(const s_cell *cell, char *buf, size_t len)
{
    if (cell->is_ref)
        snprintf(buf, len, "ref");
    else if (!cell->checked)
        snprintf(buf, len, "-");
    else if (cell->identical)
        snprintf(buf, len, "=");
    else
        snprintf(buf, len, "%.1e", cell->maxdiff);
}

#define S_ROW_FMT "%-16s %-14s %-62s %6s %6s %8s  %s\n"

/* What a case's summary line needs. */
typedef struct s_summary {
    char key;
    const char *name;
    bool have_auto, have_best;
    double auto_vs_best, best_vs_seq;
    gx_mode best;
    bool have_info;
    gx_run_info auto_info; /* auto's latest reply */
} s_summary;

static void s_run_case(const s_case *cs, bool quick, gx_client *c, const char *endpoint,
                       s_summary *sum)
{
    int q = quick ? 1 : 0;
    s_rng_seed(0x5eed0000u + (uint64_t)cs->key);
    gx_graph *g = cs->graph();
    gx_tensor *x = cs->input();
    gx_graph_id id;
    int rc = gx_client_load(c, g, &id);
    gx_graph_destroy(&g);
    if (rc < 0)
        s_die("LOAD", rc, c);

    s_cell cells[S_NMODES];
    gx_request *rq[S_NMODES];
    size_t max_wall = (size_t)(cs->reps[q] * cs->runs[q]);
    for (size_t i = 0; i < S_NMODES; i++) {
        cells[i] = (s_cell){.mode = s_order[i], .rc = GX_OK};
        if (cs->kind == S_LATENCY) {
            cells[i].wall = calloc(max_wall, sizeof(double));
            cells[i].comp = calloc(max_wall, sizeof(double));
        }
        rq[i] = gx_request_new();
        gx_request_set_graph_id(rq[i], &id);
        gx_request_add_input(rq[i], "x", x);
        gx_request_set_mode(rq[i], s_order[i]);
    }
    fprintf(stderr, "bench_modes: case %c (%s): warming up; reps:", cs->key, cs->name);
    gx_tensor *ref = NULL;
    for (size_t i = 0; i < S_NMODES; i++)
        s_warmup(cs, q, c, rq[i], &cells[i], &ref);

    s_proc procs[S_PROCS] = {0};
    if (cs->kind == S_PROCESSES && !s_procs_start(procs, endpoint, &id))
        for (size_t i = 0; i < S_NMODES; i++)
            if (cells[i].rc == GX_OK) {
                cells[i].rc = GX_EIO;
                snprintf(cells[i].msg, sizeof cells[i].msg, "client processes did not start");
            }
    /* round-robin, each rep starting one mode later, so that no mode
     * always follows the same one */
    for (int rep = 0; rep < cs->reps[q]; rep++) {
        fprintf(stderr, " %d", rep + 1);
        for (size_t j = 0; j < S_NMODES; j++) {
            size_t i = (j + (size_t)rep) % S_NMODES;
            if (cells[i].rc == GX_OK)
                s_rep(cs, q, c, rq[i], &cells[i], procs);
        }
    }
    fprintf(stderr, "\n");
    s_procs_stop(procs);

    /* figures, then ratios to seq and to the best fixed mode */
    char fig[S_NMODES][128];
    const s_cell *seq = NULL, *best = NULL;
    for (size_t i = 0; i < S_NMODES; i++) {
        if (cells[i].rc < 0)
            continue;
        s_figures(cs, &cells[i], fig[i], sizeof fig[i]);
        if (cells[i].mode == GX_MODE_SEQ)
            seq = &cells[i];
        if (cells[i].mode != GX_MODE_AUTO && (!best || cells[i].score > best->score))
            best = &cells[i];
    }
    char label[40];
    snprintf(label, sizeof label, "%c %s", cs->key, cs->name);
    for (size_t i = 0; i < S_NMODES; i++) {
        const s_cell *cl = &cells[i];
        const char *mode = gx_mode_name(cl->mode);
        if (cl->rc < 0) {
            printf("%-16s %-14s %s: %s\n", label, mode,
                   cl->rc == GX_EUNSUPPORTED ? "refused" : gx_status_name(cl->rc), cl->msg);
            continue;
        }
        char vs_seq[16] = "-", vs_best[16] = "-", chk[16], ran[64];
        if (seq && seq->score > 0)
            snprintf(vs_seq, sizeof vs_seq, "%.2f", cl->score / seq->score);
        if (best && best->score > 0)
            snprintf(vs_best, sizeof vs_best, "%.2f", cl->score / best->score);
        s_check_str(cl, chk, sizeof chk);
        s_tally_str(&cl->tally, ran, sizeof ran);
        printf(S_ROW_FMT, label, mode, fig[i], vs_seq, vs_best, chk, ran);
    }
    fflush(stdout);

    *sum = (s_summary){.key = cs->key, .name = cs->name};
    const s_cell *au = &cells[S_NMODES - 1];
    if (best && best->score > 0) {
        sum->have_best = true;
        sum->best = best->mode;
        sum->best_vs_seq = seq && seq->score > 0 ? best->score / seq->score : 0;
        if (au->rc == GX_OK) {
            sum->have_auto = true;
            sum->auto_vs_best = au->score / best->score;
        }
    }
    sum->have_info = au->rc == GX_OK && au->have_last;
    sum->auto_info = au->last;
    for (size_t i = 0; i < S_NMODES; i++) {
        free(cells[i].wall);
        free(cells[i].comp);
        gx_request_destroy(&rq[i]);
    }
    gx_tensor_destroy(&ref);
    gx_tensor_destroy(&x);
}

/* "c auto: seq w1 r1: <reason>; estimates: seq 1.2 ms, intra n/a, ..." */
static void s_print_choice(const s_summary *s)
{
    const gx_run_info *in = &s->auto_info;
    printf("%c auto: %s w%d r%d: %s; estimates:", s->key, in->mode, in->workers, in->replicas,
           in->reason);
    bool any = false;
    for (int m = 0; m < GX_MODE_COUNT; m++)
        any |= in->est_us[m] != 0;
    if (!any) {
        printf(" none reported\n");
        return;
    }
    for (int m = 0; m < GX_MODE_COUNT; m++) {
        if (m == GX_MODE_AUTO)
            continue;
        if (in->est_us[m] < 0)
            printf(" %s n/a", gx_mode_name((gx_mode)m));
        else
            printf(" %s %.3f ms", gx_mode_name((gx_mode)m), in->est_us[m] * 1e-3);
        printf(m + 1 < GX_MODE_COUNT ? "," : "\n");
    }
}

/* ---- main ---- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: bench_modes [--socket EP] [--cpus LIST] [--cases a,b,...] [--quick]\n"
            "  --socket EP    measure the gexecd at EP (default: start one on a temporary\n"
            "                 ipc socket: $GEXECD or ../daemon/gexecd next to this program)\n"
            "  --cpus LIST    the started gexecd's --cpus (e.g. 0 or 0-3; default all)\n"
            "  --cases LIST   which cases to run, of a,b,c,d,e (default all)\n"
            "  --quick        short runs for smoke testing (figures are rough)\n");
}

static bool s_parse(int argc, char **argv, s_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o->quick = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            s_usage(stdout);
            exit(0);
        }
        if (!v)
            return false;
        i++;
        if (strcmp(a, "--socket") == 0) {
            o->socket = v;
        } else if (strcmp(a, "--cpus") == 0) {
            o->cpus = v;
        } else if (strcmp(a, "--cases") == 0) {
            size_t n = 0;
            for (const char *p = v; *p; p++) {
                if (*p == ',')
                    continue;
                if (*p < 'a' || *p >= 'a' + (int)S_NCASES || strchr(o->cases, *p) ||
                    n + 1 >= sizeof o->cases) {
                    fprintf(stderr, "bench_modes: --cases: '%c' is not one of a-%c (or repeated)\n",
                            *p, 'a' + (int)S_NCASES - 1);
                    return false;
                }
                o->cases[n++] = *p;
                o->cases[n] = '\0';
            }
            if (n == 0)
                return false;
        } else {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    s_opts o = {0};
    if (!s_parse(argc, argv, &o)) {
        s_usage(stderr);
        return 2;
    }
    if (!o.cases[0])
        for (size_t i = 0; i < S_NCASES; i++)
            o.cases[i] = s_cases[i].key;
    if (o.socket && o.cpus) {
        fprintf(stderr, "bench_modes: --cpus applies to a daemon started here, not with --socket\n");
        return 2;
    }
    gxb_daemon d = {0};
    const char *endpoint = o.socket;
    if (!endpoint) {
        const char *cpus_args[] = {"--cpus", o.cpus, NULL};
        gxb_daemon_start(&d, "bench_modes", o.cpus ? cpus_args : NULL);
        endpoint = d.endpoint;
    }
    char err[256];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    if (!c) {
        fprintf(stderr, "bench_modes: %s\n", err);
        return 1;
    }
    gx_client_set_timeout(c, 5000); /* a daemon that is there answers STATS at once */
    gxb_stats st;
    int rc = gxb_stats_read(c, &st);
    if (rc < 0)
        s_die("STATS", rc, c);
    gx_client_set_timeout(c, S_WAIT_MS);
    printf("# gexecd %s at %s (%s%s%s), %s workers; %s; this host: %ld CPUs online%s\n",
           st.version, endpoint, o.socket ? "given" : "started here", o.cpus ? ", --cpus " : "",
           o.cpus ? o.cpus : "", st.workers, st.topology, sysconf(_SC_NPROCESSORS_ONLN),
           o.quick ? "; --quick (rough figures)" : "");
    printf("# x seq, x best: speed relative to seq and to the best fixed mode (> 1 is faster;\n"
           "#   latency cases compare median round trips); check: first output vs seq's\n"
           "#   (ref: seq itself; = bit-identical, else max |diff|); ran as: mode, workers, replicas the daemon "
           "reported\n");
    printf(S_ROW_FMT, "# case", "mode", "figure", "x seq", "x best", "check", "ran as");
    fflush(stdout);

    s_summary sums[S_NCASES];
    size_t n_sums = 0;
    for (const char *k = o.cases; *k; k++)
        s_run_case(&s_cases[*k - 'a'], o.quick, c, endpoint, &sums[n_sums++]);

    printf("\n");
    for (size_t i = 0; i < n_sums; i++) {
        const s_summary *s = &sums[i];
        if (!s->have_best)
            printf("%c %s: no fixed mode gave a figure\n", s->key, s->name);
        else if (!s->have_auto)
            printf("%c %s: auto gave no figure; best fixed mode %s at %.2fx seq\n", s->key,
                   s->name, gx_mode_name(s->best), s->best_vs_seq);
        else
            printf("%c %s: auto reaches %.1f%% of the best fixed mode (%s, %.2fx seq) "
                   "(goal >= 95%%)\n",
                   s->key, s->name, 100.0 * s->auto_vs_best, gx_mode_name(s->best),
                   s->best_vs_seq);
    }
    printf("\n# auto's latest choice per case, as the daemon explained it\n");
    for (size_t i = 0; i < n_sums; i++)
        if (sums[i].have_info)
            s_print_choice(&sums[i]);

    gx_client_destroy(&c);
    if (!o.socket)
        gxb_daemon_stop(&d);
    return 0;
}
