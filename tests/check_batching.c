/*
 * Dynamic batching (daemon/batcher.h) against a real gexecd with one
 * worker: a slow job holds the worker while batch-1 jobs queue behind it
 * (STATS' queue_length says when they all are), then the slow job is
 * cancelled and the worker takes the queued jobs together. No assert
 * depends on timing: every wait is on a reply or on STATS.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gexec/client.h"
#include "gexec/graph.h"
#include "tests/testutil.h"

/* Deterministic pseudo-random floats in [-1, 1). */
static void s_fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
    }
}

static void s_const(gx_graph *g, const char *name, int ndim, const int64_t *shape, uint32_t seed)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    s_fill(gx_tensor_data(t), (size_t)gx_tensor_numel(t), seed);
    gx_graph_add_const(g, name, &t);
}

/* An MLP, x[N,64] -> 128 -> Relu -> 10 (the jobs send N = 1). */
static gx_graph *s_mlp(void)
{
    gx_graph *g = gx_graph_new("mlp");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 64});
    s_const(g, "w1", 2, (int64_t[]){64, 128}, 1);
    s_const(g, "b1", 1, (int64_t[]){128}, 2);
    s_const(g, "w2", 2, (int64_t[]){128, 10}, 3);
    s_const(g, "b2", 1, (int64_t[]){10}, 4);
    gx_graph_add_node(g, "MatMul", NULL, 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"h"});
    gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"h", "b1"}, 1, (const char *[]){"hb"});
    gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"hb"}, 1, (const char *[]){"a"});
    gx_graph_add_node(g, "MatMul", NULL, 2, (const char *[]){"a", "w2"}, 1, (const char *[]){"o"});
    gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"o", "b2"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* A small CNN, x[N,3,16,16] -> Conv 8x3x3 -> Relu -> Conv 8x3x3 ->
 * GlobalAveragePool (the jobs send N = 1). */
static gx_graph *s_cnn(void)
{
    gx_graph *g = gx_graph_new("cnn");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){-1, 3, 16, 16});
    s_const(g, "w1", 4, (int64_t[]){8, 3, 3, 3}, 5);
    s_const(g, "b1", 1, (int64_t[]){8}, 6);
    s_const(g, "w2", 4, (int64_t[]){8, 8, 3, 3}, 7);
    const int64_t pads[4] = {1, 1, 1, 1};
    gx_node *n = gx_graph_add_node(g, "Conv", NULL, 3, (const char *[]){"x", "w1", "b1"}, 1,
                                   (const char *[]){"c1"});
    gx_node_set_ints(n, "pads", pads, 4);
    gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"c1"}, 1, (const char *[]){"r1"});
    n = gx_graph_add_node(g, "Conv", NULL, 2, (const char *[]){"r1", "w2"}, 1,
                          (const char *[]){"c2"});
    gx_node_set_ints(n, "pads", pads, 4);
    gx_graph_add_node(g, "GlobalAveragePool", NULL, 1, (const char *[]){"c2"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* One client thread: its own connection, one batch-1 job, waited for. */
typedef struct member {
    const gxt_daemon *d;
    const gx_graph *g;
    gx_tensor *x;
    int priority;
    int64_t deadline_ms;
    gx_result *r;
    int rc;
} member;

static void *s_member_main(void *arg)
{
    member *m = arg;
    gx_client *c = gxt_client(m->d);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, m->g);
    gx_request_add_input(rq, "x", m->x);
    gx_request_set_priority(rq, m->priority);
    if (m->deadline_ms)
        gx_request_set_deadline_ms(rq, m->deadline_ms);
    gx_job *j = NULL;
    m->rc = gx_client_submit(c, rq, &j);
    if (m->rc == GX_OK)
        m->rc = gx_job_wait(j, 120000, &m->r);
    gx_job_destroy(&j);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return NULL;
}

/* Input i of a batch-1 job of g (its first input's shape). */
static gx_tensor *s_input(const gx_graph *g, int64_t ndim, const int64_t *shape, uint32_t i)
{
    (void)g;
    gx_tensor *x = gx_tensor_new(GX_F32, (int)ndim, shape);
    s_fill(gx_tensor_data(x), (size_t)gx_tensor_numel(x), 100 + i);
    return x;
}

/* y of g for x, run alone (nothing queued: never batched). */
static gx_result *s_alone(gx_client *c, const gx_graph *g, const gx_tensor *x)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_int_eq(gx_result_info(r)->batched, 1);
    gx_request_destroy(&rq);
    return r;
}

/* The same bytes in a's and b's first output? */
static bool s_same(const gx_result *a, const gx_result *b)
{
    const gx_tensor *ta = gx_result_output(a, 0), *tb = gx_result_output(b, 0);
    return gx_tensor_numel(ta) == gx_tensor_numel(tb) &&
           memcmp(gx_tensor_cdata(ta), gx_tensor_cdata(tb),
                  (size_t)gx_tensor_numel(ta) * sizeof(float)) == 0;
}

#define N_MEMBERS 6

/* N_MEMBERS client threads queue a batch-1 job of g each behind the slow
 * job; then the worker takes them as one batch: each answered once, with
 * the bytes of its job run alone, batched = N_MEMBERS. */
static void s_check_merge(const gx_graph *g, int ndim, const int64_t *shape)
{
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"--cpus", "0", NULL}); /* one worker */
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    member m[N_MEMBERS];
    gx_result *ref[N_MEMBERS];
    pthread_t th[N_MEMBERS];
    for (int i = 0; i < N_MEMBERS; i++) {
        m[i] = (member){.d = &d, .g = g, .x = s_input(g, ndim, shape, (uint32_t)i)};
        ref[i] = s_alone(c, g, m[i].x);
    }
    gxt_hold h;
    gxt_hold_start(&h, c, watch);
    for (int i = 0; i < N_MEMBERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_member_main, &m[i]), 0);
    char want[64];
    snprintf(want, sizeof want, "\"queue_length\":%d", N_MEMBERS);
    gxt_wait_stats(watch, want);
    gxt_hold_release(&h);
    for (int i = 0; i < N_MEMBERS; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_msg(m[i].rc == GX_OK, "member %d: %s", i,
                      m[i].r ? gx_result_message(m[i].r) : "no reply");
        const gx_run_info *info = gx_result_info(m[i].r);
        ck_assert_msg(info->batched == N_MEMBERS, "member %d batched %d: %s", i, info->batched,
                      info->reason);
        ck_assert_msg(s_same(m[i].r, ref[i]), "member %d: not the bytes of its job alone", i);
        gx_result_destroy(&m[i].r);
        gx_result_destroy(&ref[i]);
        gx_tensor_destroy(&m[i].x);
    }
    ck_assert_int_eq(gxt_stat(watch, "batches"), 1);
    ck_assert_int_eq(gxt_stat(watch, "batched_jobs"), N_MEMBERS);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}

START_TEST(test_merge_mlp)
{
    gx_graph *g = s_mlp();
    s_check_merge(g, 2, (int64_t[]){1, 64});
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_merge_cnn)
{
    gx_graph *g = s_cnn();
    s_check_merge(g, 4, (int64_t[]){1, 3, 16, 16});
    gx_graph_destroy(&g);
}
END_TEST

/* Priorities and deadlines: behind the slow job, 3 jobs of priority 0
 * (one with a deadline far off), 1 of priority 5, 1 of priority 0 whose
 * deadline passes while it waits, 1 of another shape (its own error), 1
 * cancelled while queued. The priority-5 job runs alone and first; the
 * three others of priority 0 form one batch; the expired, the cancelled
 * and the bad one get their own errors; every job is answered once. */
START_TEST(test_priority_deadline_bad_cancel)
{
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"--cpus", "0", NULL});
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    gx_graph *g = s_mlp();
    const int64_t shape[2] = {1, 64}, bad_shape[2] = {1, 63};
    enum { N = 7 };
    member m[N];
    pthread_t th[N];
    gx_result *ref[3];
    for (int i = 0; i < N; i++)
        m[i] = (member){.d = &d, .g = g, .x = s_input(g, 2, i == 5 ? bad_shape : shape, (uint32_t)i)};
    for (int i = 0; i < 3; i++)
        ref[i] = s_alone(c, g, m[i].x);
    m[2].deadline_ms = 600000;
    m[3].priority = 5;
    m[4].deadline_ms = 50;
    gxt_hold h;
    gxt_hold_start(&h, c, watch);
    /* the priority-5 job queued after the others (so that, run first, it
     * waited less than they did whatever the threads' timing) */
    for (int i = 0; i < 6; i++)
        if (i != 3 && i != 4)
            ck_assert_int_eq(pthread_create(&th[i], NULL, s_member_main, &m[i]), 0);
    gxt_wait_stats(watch, "\"queue_length\":4");
    ck_assert_int_eq(pthread_create(&th[3], NULL, s_member_main, &m[3]), 0);
    gxt_wait_stats(watch, "\"queue_length\":5");
    ck_assert_int_eq(pthread_create(&th[4], NULL, s_member_main, &m[4]), 0);
    gxt_wait_stats(watch, "\"expired\":1"); /* m[4], swept from the queue */
    /* m[6]: cancelled while queued */
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", m[6].x);
    gx_job *cj = NULL;
    ck_assert_int_eq(gx_client_submit(c, rq, &cj), GX_OK);
    gxt_wait_stats(watch, "\"queue_length\":6");
    ck_assert_int_eq(gx_job_cancel(cj), GX_OK);
    ck_assert_int_eq(gx_job_wait(cj, 60000, NULL), GX_ECANCELLED);
    gx_job_destroy(&cj);
    gx_request_destroy(&rq);
    gxt_hold_release(&h);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(m[i].rc == GX_OK, "member %d: %s", i,
                      m[i].r ? gx_result_message(m[i].r) : "no reply");
        ck_assert_msg(gx_result_info(m[i].r)->batched == 3, "member %d batched %d: %s", i,
                      gx_result_info(m[i].r)->batched, gx_result_info(m[i].r)->reason);
        ck_assert(s_same(m[i].r, ref[i]));
        gx_result_destroy(&ref[i]);
    }
    ck_assert_int_eq(m[3].rc, GX_OK);
    ck_assert_int_eq(gx_result_info(m[3].r)->batched, 1);
    /* the priority-5 job, queued last, ran first: it waited less than the
     * batch */
    ck_assert_int_le(gx_result_info(m[3].r)->queue_us, gx_result_info(m[0].r)->queue_us);
    ck_assert_int_eq(m[4].rc, GX_ETIMEDOUT);
    ck_assert_int_ne(m[5].rc, GX_OK);
    ck_assert_ptr_nonnull(m[5].r);
    ck_assert_msg(strstr(gx_result_message(m[5].r), "'x'") != NULL, "%s",
                  gx_result_message(m[5].r));
    for (int i = 0; i < N; i++) {
        gx_result_destroy(&m[i].r);
        gx_tensor_destroy(&m[i].x);
    }
    ck_assert_int_eq(gxt_stat(watch, "batches"), 1);
    ck_assert_int_eq(gxt_stat(watch, "batched_jobs"), 3);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* scheduler.batch_max: 1 turns batching off: the same queued jobs each run
 * alone. */
START_TEST(test_off)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "scheduler:\n  batch_max: 1\n", (const char *[]){"--cpus", "0", NULL});
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    gx_graph *g = s_mlp();
    member m[4];
    pthread_t th[4];
    gxt_hold h;
    gxt_hold_start(&h, c, watch);
    for (int i = 0; i < 4; i++) {
        m[i] = (member){.d = &d, .g = g, .x = s_input(g, 2, (int64_t[]){1, 64}, (uint32_t)i)};
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_member_main, &m[i]), 0);
    }
    gxt_wait_stats(watch, "\"queue_length\":4");
    gxt_hold_release(&h);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(m[i].rc, GX_OK);
        ck_assert_int_eq(gx_result_info(m[i].r)->batched, 1);
        gx_result_destroy(&m[i].r);
        gx_tensor_destroy(&m[i].x);
    }
    ck_assert_int_eq(gxt_stat(watch, "batches"), 0);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *batching_suite(void)
{
    Suite *s = suite_create("batching");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_merge_mlp);
    tcase_add_test(tc, test_merge_cnn);
    tcase_add_test(tc, test_priority_deadline_bad_cancel);
    tcase_add_test(tc, test_off);
    suite_add_tcase(s, tc);
    return s;
}
