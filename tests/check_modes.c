/*
 * Parallel modes end to end, against a real gexecd: every fixed mode and
 * auto give the sequential executor's bytes on a small CNN, parallel
 * branches and a large MatMul; the reply names the mode that ran; and many
 * clients submitting jobs in random modes at once all get exactly one
 * correct reply each (replicas never share an arena: a shared one would
 * mix two jobs' values).
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gexec/client.h"
#include "gexec/graph.h"
#include "gexec/tensor.h"
#include "tests/testutil.h"

static unsigned s_seed = 12345;

static float s_randf(void)
{
    s_seed = s_seed * 1103515245u + 12345u;
    return (float)((s_seed >> 9) % 2001) / 1000.0f - 1.0f;
}

static gx_tensor *s_rand_tensor(int ndim, const int64_t *shape, float scale)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    ck_assert_ptr_nonnull(t);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        d[i] = s_randf() * scale;
    return t;
}

static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape, float scale)
{
    gx_tensor *t = s_rand_tensor(ndim, shape, scale);
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, 1, &out);
    ck_assert_ptr_nonnull(n);
    return n;
}

#define IN(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                (const char *[]) { __VA_ARGS__ }

/* x [B,3,16,16] -> Conv 3->8 3x3 pad 1 -> BatchNormalization -> Relu ->
 * MaxPool 2 -> Conv 8->8 3x3 -> Relu -> GlobalAveragePool -> Flatten ->
 * Gemm 8->4 -> Softmax */
static gx_graph *s_cnn(int64_t batch)
{
    gx_graph *g = gx_graph_new("cnn");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){batch, 3, 16, 16}),
                     GX_OK);
    s_const(g, "w1", 4, (const int64_t[]){8, 3, 3, 3}, 0.5f);
    s_const(g, "b1", 1, (const int64_t[]){8}, 0.1f);
    s_const(g, "scale", 1, (const int64_t[]){8}, 1.0f);
    s_const(g, "bias", 1, (const int64_t[]){8}, 0.1f);
    s_const(g, "mean", 1, (const int64_t[]){8}, 0.1f);
    gx_tensor *var = gx_tensor_new(GX_F32, 1, (const int64_t[]){8});
    for (int i = 0; i < 8; i++)
        ((float *)gx_tensor_data(var))[i] = 0.5f + 0.1f * (float)i;
    ck_assert_int_eq(gx_graph_add_const(g, "var", &var), GX_OK);
    s_const(g, "w2", 4, (const int64_t[]){8, 8, 3, 3}, 0.3f);
    s_const(g, "wf", 2, (const int64_t[]){8, 4}, 0.5f);
    s_const(g, "bf", 1, (const int64_t[]){4}, 0.1f);
    gx_node *c1 = s_node(g, "Conv", IN("x", "w1", "b1"), "c1");
    ck_assert_int_eq(gx_node_set_ints(c1, "pads", (const int64_t[]){1, 1, 1, 1}, 4), GX_OK);
    s_node(g, "BatchNormalization", IN("c1", "scale", "bias", "mean", "var"), "n1");
    s_node(g, "Relu", IN("n1"), "r1");
    gx_node *mp = s_node(g, "MaxPool", IN("r1"), "p1");
    ck_assert_int_eq(gx_node_set_ints(mp, "kernel_shape", (const int64_t[]){2, 2}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(mp, "strides", (const int64_t[]){2, 2}, 2), GX_OK);
    s_node(g, "Conv", IN("p1", "w2"), "c2");
    s_node(g, "Relu", IN("c2"), "r2");
    s_node(g, "GlobalAveragePool", IN("r2"), "gp");
    s_node(g, "Flatten", IN("gp"), "f");
    s_node(g, "Gemm", IN("f", "wf", "bf"), "logits");
    s_node(g, "Softmax", IN("logits"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* 6 branches Relu(x @ W_i) concatenated along axis 1; x [32, 64] */
static gx_graph *s_branches(void)
{
    gx_graph *g = gx_graph_new("branches");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){32, 64}), GX_OK);
    const char *cat[6];
    static char names[6][3][8];
    for (int i = 0; i < 6; i++) {
        snprintf(names[i][0], 8, "w%d", i);
        snprintf(names[i][1], 8, "m%d", i);
        snprintf(names[i][2], 8, "r%d", i);
        s_const(g, names[i][0], 2, (const int64_t[]){64, 64}, 0.2f);
        s_node(g, "MatMul", IN("x", names[i][0]), names[i][1]);
        s_node(g, "Relu", IN(names[i][1]), names[i][2]);
        cat[i] = names[i][2];
    }
    gx_node *c = s_node(g, "Concat", 6, cat, "y");
    ck_assert_int_eq(gx_node_set_int(c, "axis", 1), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* y = Tanh(a @ b), [300, 256] x [256, 200]: rows to share */
static gx_graph *s_matmul(void)
{
    gx_graph *g = gx_graph_new("matmul");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){300, 256}), GX_OK);
    s_const(g, "b", 2, (const int64_t[]){256, 200}, 0.1f);
    s_node(g, "MatMul", IN("x", "b"), "m");
    s_node(g, "Tanh", IN("m"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static gx_client *s_client(const gxt_daemon *d)
{
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    return c;
}

static gx_request *s_request(const gx_graph_id *id, const gx_tensor *x, gx_mode mode)
{
    gx_request *rq = gx_request_new();
    ck_assert_ptr_nonnull(rq);
    ck_assert_int_eq(gx_request_set_graph_id(rq, id), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "x", x), GX_OK);
    ck_assert_int_eq(gx_request_set_mode(rq, mode), GX_OK);
    return rq;
}

/* Output 0 of one job in mode; the caller destroys the result. */
static gx_result *s_run(gx_client *c, const gx_graph_id *id, const gx_tensor *x, gx_mode mode)
{
    gx_request *rq = s_request(id, x, mode);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_msg(gx_result_status(r) == GX_OK, "mode %s: %s", gx_mode_name(mode),
                  gx_result_message(r));
    gx_request_destroy(&rq);
    return r;
}

/* Workers of the daemon (its STATS). */
static int s_workers(gx_client *c)
{
    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    const char *w = strstr(json, "\"workers\":");
    ck_assert_ptr_nonnull(w);
    int n = atoi(w + strlen("\"workers\":"));
    free(json);
    return n;
}

static bool s_same(const gx_result *a, const gx_result *b)
{
    const gx_tensor *x = gx_result_output(a, 0), *y = gx_result_output(b, 0);
    return gx_tensor_nbytes(x) == gx_tensor_nbytes(y) &&
           memcmp(gx_tensor_cdata(x), gx_tensor_cdata(y), gx_tensor_nbytes(x)) == 0;
}

START_TEST(every_mode_matches_seq)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d);
    gx_graph *graphs[3] = {s_cnn(8), s_branches(), s_matmul()};
    const char *names[3] = {"cnn", "branches", "matmul"};
    const int workers = s_workers(c);
    const int64_t xs[3][4] = {{8, 3, 16, 16}, {32, 64}, {300, 256}};
    const int nd[3] = {4, 2, 2};
    for (int gi = 0; gi < 3; gi++) {
        gx_graph_id id;
        ck_assert_int_eq(gx_client_load(c, graphs[gi], &id), GX_OK);
        gx_tensor *x = s_rand_tensor(nd[gi], xs[gi], 1.0f);
        gx_result *ref = s_run(c, &id, x, GX_MODE_SEQ);
        bool split = false;
        ck_assert_str_eq(gx_result_info(ref)->mode, "seq");
        /* twice each: the second run uses measured step times */
        for (int rep = 0; rep < 2; rep++)
            for (int m = 0; m < GX_MODE_COUNT; m++) {
                gx_result *r = s_run(c, &id, x, (gx_mode)m);
                const gx_run_info *info = gx_result_info(r);
                ck_assert_msg(s_same(r, ref), "graph %s, mode %s: outputs differ from seq",
                              names[gi], gx_mode_name((gx_mode)m));
                gx_mode want = m == GX_MODE_INTER_REPLICA && info->replicas == 1
                                   ? GX_MODE_INTER /* one copy of the graph: inter */
                                   : (gx_mode)m;
                if (m != GX_MODE_AUTO) /* a requested mode is honoured */
                    ck_assert_msg(strcmp(info->mode, gx_mode_name(want)) == 0,
                                  "graph %s: asked for %s, ran %s: %s", names[gi],
                                  gx_mode_name(want), info->mode, info->reason);
                ck_assert_int_ge(info->workers, 1);
                ck_assert_int_le(info->workers, workers);
                ck_assert(info->reason[0] != '\0');
                if (gi == 0 && m == GX_MODE_REPLICA && info->replicas >= 2)
                    split = true;
                gx_result_destroy(&r);
            }
        /* the CNN keeps samples apart: a requested replica splits its batch
         * of 8 over the workers that are idle when the job starts (a helper
         * of the previous job may still be on its way back: try a few) */
        for (int t = 0; gi == 0 && workers >= 2 && !split && t < 50; t++) {
            gx_result *r = s_run(c, &id, x, GX_MODE_REPLICA);
            split = gx_result_info(r)->replicas >= 2;
            ck_assert(s_same(r, ref));
            gx_result_destroy(&r);
        }
        if (gi == 0 && workers >= 2)
            ck_assert_msg(split, "a requested replica never split the CNN's batch");
        gx_result_destroy(&ref);
        gx_tensor_destroy(&x);
        gx_graph_destroy(&graphs[gi]);
    }
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* An int64 constant of n values. */
static void s_ints(gx_graph *g, const char *name, int64_t n, const int64_t *v)
{
    gx_tensor *t = gx_tensor_new(GX_I64, 1, (const int64_t[]){n});
    ck_assert_ptr_nonnull(t);
    memcpy(gx_tensor_data(t), v, (size_t)n * sizeof *v);
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* Attention over x [4,6,8] in 2 heads as converters export it, with the
 * batch of 4 in the Reshapes' shapes. The compiler's rewrites turn it into
 * an Attention step without those Reshapes, so the plan's batch analysis
 * lets a job be cut; a slice's plan cannot be compiled (its Reshapes, read
 * before the rewrites, name 4 samples). The job runs whole, with the
 * reason; later jobs of the plan are not cut. */
START_TEST(failed_split_runs_whole)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d);
    if (s_workers(c) < 2) { /* nothing to split over */
        gx_client_destroy(&c);
        ck_assert_int_eq(gxt_daemon_stop(&d), 0);
        return;
    }
    gx_graph *g = gx_graph_new("baked_batch");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 3, (const int64_t[]){4, 6, 8}), GX_OK);
    s_ints(g, "heads", 4, (const int64_t[]){4, 6, 2, 4});
    s_ints(g, "merged", 3, (const int64_t[]){4, 6, 8});
    gx_tensor *two = gx_tensor_new(GX_F32, 0, NULL);
    *(float *)gx_tensor_data(two) = 2.0f;
    ck_assert_int_eq(gx_graph_add_const(g, "two", &two), GX_OK);
    const char *proj[3] = {"q", "k", "v"}, *w[3] = {"wq", "wk", "wv"};
    const char *split[3] = {"qr", "kr", "vr"}, *heads[3] = {"qh", "kt", "vh"};
    static const int64_t perm[3][4] = {{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
    for (int i = 0; i < 3; i++) {
        s_const(g, w[i], 2, (const int64_t[]){8, 8}, 0.5f);
        s_node(g, "MatMul", IN("x", w[i]), proj[i]);
        s_node(g, "Reshape", IN(proj[i], "heads"), split[i]);
        gx_node *t = s_node(g, "Transpose", IN(split[i]), heads[i]);
        ck_assert_int_eq(gx_node_set_ints(t, "perm", perm[i], 4), GX_OK);
    }
    s_node(g, "MatMul", IN("qh", "kt"), "qk");
    s_node(g, "Div", IN("qk", "two"), "scaled");
    gx_node *sm = s_node(g, "Softmax", IN("scaled"), "p");
    ck_assert_int_eq(gx_node_set_int(sm, "axis", -1), GX_OK);
    s_node(g, "MatMul", IN("p", "vh"), "o");
    gx_node *t = s_node(g, "Transpose", IN("o"), "ot");
    ck_assert_int_eq(gx_node_set_ints(t, "perm", perm[0], 4), GX_OK);
    s_node(g, "Reshape", IN("ot", "merged"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = s_rand_tensor(3, (const int64_t[]){4, 6, 8}, 1.0f);
    gx_result *ref = s_run(c, &id, x, GX_MODE_SEQ);
    /* a requested replica tries the split once two workers are idle */
    bool failed = false;
    for (int i = 0; i < 50 && !failed; i++) {
        gx_result *r = s_run(c, &id, x, GX_MODE_REPLICA);
        const gx_run_info *info = gx_result_info(r);
        ck_assert(s_same(r, ref));
        ck_assert_int_eq(info->replicas, 1);
        failed = strstr(info->reason, "batch split failed") != NULL;
        if (failed)
            ck_assert_str_eq(info->mode, "seq");
        gx_result_destroy(&r);
    }
    ck_assert_msg(failed, "a requested replica never tried to split the batch");
    /* now auto never tries again */
    for (int i = 0; i < 5; i++) {
        gx_result *r = s_run(c, &id, x, GX_MODE_AUTO);
        const gx_run_info *info = gx_result_info(r);
        ck_assert(s_same(r, ref));
        ck_assert_int_eq(info->replicas, 1);
        ck_assert_msg(!strstr(info->reason, "split failed") && !strstr(info->reason, "batch 4"),
                      "%s", info->reason);
        gx_result_destroy(&r);
    }
    gx_result_destroy(&ref);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* ---- many clients, random modes ---- */

#define INPUTS 4
#define THREADS 4
#define JOBS 40
#define INFLIGHT 6

typedef struct s_load {
    const gxt_daemon *d;
    const gx_graph_id *id;
    gx_tensor *const *x;
    gx_result *const *ref;
    unsigned seed;
    int answered, wrong;
} s_load;

static void *s_load_main(void *arg)
{
    s_load *l = arg;
    gx_client *c = s_client(l->d);
    gx_job *jobs[INFLIGHT] = {0};
    int which[INFLIGHT];
    for (int n = 0; n < JOBS + INFLIGHT; n++) {
        int slot = n % INFLIGHT;
        if (jobs[slot]) {
            gx_result *r = NULL;
            if (gx_job_wait(jobs[slot], 60000, &r) == GX_OK) {
                l->answered++;
                l->wrong += gx_result_status(r) != GX_OK || !s_same(r, l->ref[which[slot]]);
            }
            gx_result_destroy(&r);
            gx_job_destroy(&jobs[slot]);
        }
        if (n >= JOBS)
            continue;
        l->seed = l->seed * 1103515245u + 12345u;
        which[slot] = (int)((l->seed >> 8) % INPUTS);
        gx_mode mode = (gx_mode)((l->seed >> 16) % GX_MODE_COUNT);
        gx_request *rq = s_request(l->id, l->x[which[slot]], mode);
        if (gx_client_submit(c, rq, &jobs[slot]) != GX_OK)
            l->wrong++;
        gx_request_destroy(&rq);
    }
    gx_client_destroy(&c);
    return NULL;
}

START_TEST(concurrent_clients_random_modes)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d);
    gx_graph *g = s_cnn(6);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x[INPUTS];
    gx_result *ref[INPUTS];
    for (int i = 0; i < INPUTS; i++) {
        x[i] = s_rand_tensor(4, (const int64_t[]){6, 3, 16, 16}, 1.0f);
        ref[i] = s_run(c, &id, x[i], GX_MODE_SEQ);
    }
    s_load l[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        l[t] = (s_load){.d = &d, .id = &id, .x = x, .ref = ref, .seed = 77u + (unsigned)t};
        ck_assert_int_eq(pthread_create(&th[t], NULL, s_load_main, &l[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        ck_assert_int_eq(l[t].answered, JOBS);
        ck_assert_int_eq(l[t].wrong, 0);
    }
    for (int i = 0; i < INPUTS; i++) {
        gx_result_destroy(&ref[i]);
        gx_tensor_destroy(&x[i]);
    }
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* Two chains of k MatMul + Tanh on [256, 256], added: heavy steps to split,
 * two branches to run side by side; a few ms per job. */
static gx_graph *s_slow(int k)
{
    gx_graph *g = gx_graph_new("slow");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){256, 256}), GX_OK);
    s_const(g, "w", 2, (const int64_t[]){256, 256}, 0.05f);
    char prev[2][16] = {"x", "x"}, m[16], t[16];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < k; i++) {
            snprintf(m, sizeof m, "m%d_%d", b, i);
            snprintf(t, sizeof t, "t%d_%d", b, i);
            s_node(g, "MatMul", IN(prev[b], "w"), m);
            s_node(g, "Tanh", IN(m), t);
            snprintf(prev[b], sizeof prev[b], "%s", t);
        }
    s_node(g, "Add", IN(prev[0], prev[1]), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* Two branches, each a Loop without end (its condition passed on) whose
 * body is MatMul + Tanh on [256, 256], added: heavy steps on two branches,
 * and a job that runs until it is cancelled however loaded the machine.
 * Inputs x and c (bool scalar, true). */
static gx_graph *s_endless_branches(void)
{
    gx_graph *g = gx_graph_new("endless_branches");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){256, 256}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
    for (int b = 0; b < 2; b++) {
        gx_graph *body = gx_graph_new("body");
        ck_assert_int_eq(gx_graph_add_input(body, "i", GX_I64, 0, NULL), GX_OK);
        ck_assert_int_eq(gx_graph_add_input(body, "c", GX_BOOL, 0, NULL), GX_OK);
        ck_assert_int_eq(gx_graph_add_input(body, "v", GX_F32, 2, (const int64_t[]){256, 256}),
                         GX_OK);
        s_const(body, "w", 2, (const int64_t[]){256, 256}, 0.05f);
        s_node(body, "Identity", IN("c"), "c_out");
        s_node(body, "MatMul", IN("v", "w"), "m");
        s_node(body, "Tanh", IN("m"), "v_out");
        ck_assert_int_eq(gx_graph_add_output(body, "c_out"), GX_OK);
        ck_assert_int_eq(gx_graph_add_output(body, "v_out"), GX_OK);
        gx_node *n = s_node(g, "Loop", IN("", "c", "x"), b ? "y1" : "y0");
        ck_assert_int_eq(gx_node_set_graph(n, "body", &body), GX_OK);
    }
    s_node(g, "Add", IN("y0", "y1"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

START_TEST(cancel_and_shutdown_in_parallel_modes)
{
    static const gx_mode modes[] = {GX_MODE_INTRA, GX_MODE_INTER, GX_MODE_INTER_INTRA,
                                    GX_MODE_REPLICA, GX_MODE_INTER_REPLICA, GX_MODE_AUTO};
    const int n = (int)(sizeof modes / sizeof modes[0]);
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d), *watch = s_client(&d);
    gx_graph *g = s_slow(60), *long_g = s_endless_branches();
    gx_graph_id id, long_id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    ck_assert_int_eq(gx_client_load(c, long_g, &long_id), GX_OK);
    gx_tensor *x = s_rand_tensor(2, (const int64_t[]){256, 256}, 1.0f);
    gx_tensor *on = gx_tensor_new(GX_BOOL, 0, NULL);
    *(uint8_t *)gx_tensor_data(on) = 1;

    /* a job in each parallel mode stops when cancelled (running: its
     * members stop claiming steps); it never ends by itself, so the cancel
     * always finds it */
    for (int i = 0; i < n; i++) {
        gx_request *rq = s_request(&long_id, x, modes[i]);
        ck_assert_int_eq(gx_request_add_input(rq, "c", on), GX_OK);
        gx_job *job = NULL;
        gx_result *r = NULL;
        ck_assert_int_eq(gx_client_submit(c, rq, &job), GX_OK);
        while (gxt_stat(watch, "workers_busy") < 1) /* it runs (the Check timeout bounds it) */
            nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        ck_assert_int_eq(gx_job_cancel(job), GX_OK);
        int rc = gx_job_wait(job, 60000, &r);
        ck_assert_msg(rc == GX_ECANCELLED, "mode %s: %s", gx_mode_name(modes[i]),
                      gx_result_message(r));
        gx_result_destroy(&r);
        gx_job_destroy(&job);
        gx_request_destroy(&rq);
    }

    /* SIGTERM with jobs running and queued in every mode: each is answered
     * once (done, or told the daemon is shutting down) and gexecd exits 0 */
    gx_job *jobs[12];
    for (int i = 0; i < 12; i++) {
        gx_request *rq = s_request(&id, x, modes[i % n]);
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
        gx_request_destroy(&rq);
    }
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* all are in */
    kill(d.pid, SIGTERM);
    for (int i = 0; i < 12; i++) {
        int rc = gx_job_wait(jobs[i], 60000, NULL);
        ck_assert_msg(rc == GX_OK || rc == GX_ESHUTDOWN || rc == GX_ECANCELLED, "job %d: %s", i,
                      gx_strerror(rc));
        gx_job_destroy(&jobs[i]);
    }
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&on);
    gx_graph_destroy(&g);
    gx_graph_destroy(&long_g);
    gx_client_destroy(&watch);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* What a plan's jobs measured corrects the policy's estimates of later
 * jobs (daemon/policy.h): the first job has nothing to go by, the next
 * one's reason shows seq's measured/model ratio. */
START_TEST(measured_modes_in_reason)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d);
    gx_graph *g = s_matmul();
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = s_rand_tensor(2, (const int64_t[]){300, 256}, 1.0f);
    gx_result *r = s_run(c, &id, x, GX_MODE_SEQ);
    const gx_run_info *info = gx_result_info(r);
    ck_assert_msg(strstr(info->reason, "measured") == NULL, "%s", info->reason);
    gx_result_destroy(&r);
    r = s_run(c, &id, x, GX_MODE_AUTO);
    info = gx_result_info(r);
    ck_assert_msg(strstr(info->reason, "measured/model seq ") != NULL, "%s", info->reason);
    gx_result_destroy(&r);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* x [8,64] -> y = x + RandomNormalLike(x, seed 3) and u =
 * RandomUniform([8,64]) without a seed: y is the same in every mode and
 * every run (the draws are a function of the seed and the element), u
 * differs from run to run (never folded into a constant) and stays in
 * [0, 1). */
START_TEST(random_ops_in_every_mode)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_client(&d);
    gx_graph *g = gx_graph_new("random");
    const int64_t shape[2] = {8, 64};
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, shape), GX_OK);
    ck_assert_int_eq(gx_node_set_float(s_node(g, "RandomNormalLike", IN("x"), "n"), "seed", 3),
                     GX_OK);
    s_node(g, "Add", IN("x", "n"), "y");
    ck_assert_int_eq(gx_node_set_ints(s_node(g, "RandomUniform", 0, NULL, "u"), "shape", shape, 2),
                     GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "u"), GX_OK);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = s_rand_tensor(2, shape, 1.0f);
    gx_result *ref = s_run(c, &id, x, GX_MODE_SEQ);
    const gx_tensor *u0 = gx_result_output(ref, 1);
    const float *xv = gx_tensor_cdata(x), *yv = gx_tensor_cdata(gx_result_output(ref, 0));
    int moved = 0;
    for (int i = 0; i < 8 * 64; i++)
        moved += yv[i] != xv[i];
    ck_assert_int_gt(moved, 8 * 64 - 4);
    for (int rep = 0; rep < 2; rep++)
        for (int m = 0; m < GX_MODE_COUNT; m++) {
            gx_result *r = s_run(c, &id, x, (gx_mode)m);
            ck_assert_msg(s_same(r, ref), "mode %s: the seeded output differs from seq's",
                          gx_mode_name((gx_mode)m));
            const gx_tensor *u = gx_result_output(r, 1);
            ck_assert_msg(memcmp(gx_tensor_cdata(u), gx_tensor_cdata(u0),
                                 gx_tensor_nbytes(u)) != 0,
                          "mode %s: the unseeded output repeats", gx_mode_name((gx_mode)m));
            const float *uv = gx_tensor_cdata(u);
            for (int i = 0; i < 8 * 64; i++)
                ck_assert(uv[i] >= 0 && uv[i] < 1);
            gx_result_destroy(&r);
        }
    gx_result_destroy(&ref);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *modes_suite(void)
{
    Suite *s = suite_create("modes");
    TCase *tc = tcase_create("modes");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, every_mode_matches_seq);
    tcase_add_test(tc, failed_split_runs_whole);
    tcase_add_test(tc, concurrent_clients_random_modes);
    tcase_add_test(tc, cancel_and_shutdown_in_parallel_modes);
    tcase_add_test(tc, measured_modes_in_reason);
    tcase_add_test(tc, random_ops_in_every_mode);
    suite_add_tcase(s, tc);
    return s;
}
