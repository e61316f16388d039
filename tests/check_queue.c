/* The job queue: order, bounds, removal, deadlines, close. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/queue.h"
#include "gexec/client.h"
#include "gexec/graph.h"
#include "tests/testutil.h"

static gxd_job *s_job(const char *client, uint64_t id, int prio, size_t bytes, int64_t deadline)
{
    gxd_job *j = gxd_job_new(GXD_JOB_RUN, client, strlen(client), id);
    ck_assert_ptr_nonnull(j);
    j->priority = prio;
    j->bytes = bytes;
    j->deadline_us = deadline;
    return j;
}

static void s_free_list(gxd_job *l)
{
    while (l) {
        gxd_job *n = l->next;
        gxd_job_destroy(&l);
        l = n;
    }
}

START_TEST(test_priority_then_fifo)
{
    gxd_queue q;
    char err[256];
    ck_assert_int_eq(gxd_queue_init(&q, 100, 1 << 20), GX_OK);
    int prios[] = {0, 5, 0, -3, 5, 0};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(gxd_queue_push(&q, s_job("c", (uint64_t)i, prios[i], 1, 0), err, sizeof err), GX_OK);
    uint64_t want[] = {1, 4, 0, 2, 5, 3};
    for (int i = 0; i < 6; i++) {
        gxd_job *j = gxd_queue_pop(&q);
        ck_assert_uint_eq(j->id, want[i]);
        gxd_job_destroy(&j);
    }
    ck_assert_uint_eq(gxd_queue_len(&q), 0);
    ck_assert_uint_eq(q.bytes, 0);
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

/* A job a worker popped (gxd_queue_pop_or) is held until it releases it:
 * a cancel in between (the job neither queued nor yet the worker's
 * current) reaches it; after the release the queue no longer knows it. */
START_TEST(test_popped_job_held_until_released)
{
    gxd_queue q;
    char err[256];
    ck_assert_int_eq(gxd_queue_init(&q, 10, 1 << 20), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_job("c", 7, 0, 1, 0), err, sizeof err), GX_OK);
    bool woken;
    gxd_job *j = gxd_queue_pop_or(&q, NULL, NULL, &woken);
    ck_assert_ptr_nonnull(j);
    ck_assert_ptr_null(gxd_queue_remove(&q, "c", 1, 7)); /* not queued */
    ck_assert(!atomic_load(&j->cancel));
    ck_assert(gxd_queue_cancel_held(&q, "c", 1, 7));
    ck_assert(atomic_load(&j->cancel));
    ck_assert_int_eq(gxd_queue_cancel_held_client(&q, "c", 1), 0); /* already set */
    gxd_queue_release(&q, j);
    ck_assert(!gxd_queue_cancel_held(&q, "c", 1, 7));
    gxd_job_destroy(&j);
    /* gxd_queue_pop (no worker) holds nothing */
    ck_assert_int_eq(gxd_queue_push(&q, s_job("c", 8, 0, 1, 0), err, sizeof err), GX_OK);
    j = gxd_queue_pop(&q);
    ck_assert(!gxd_queue_cancel_held(&q, "c", 1, 8));
    gxd_job_destroy(&j);
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

START_TEST(test_bounds)
{
    gxd_queue q;
    char err[256];
    gxd_queue_init(&q, 2, 100);
    ck_assert_int_eq(gxd_queue_push(&q, s_job("c", 1, 0, 10, 0), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_job("c", 2, 0, 10, 0), err, sizeof err), GX_OK);
    gxd_job *j = s_job("c", 3, 0, 10, 0);
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_EQUEUEFULL);
    ck_assert_ptr_nonnull(strstr(err, "max_jobs"));
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);

    gxd_queue_init(&q, 10, 100);
    ck_assert_int_eq(gxd_queue_push(&q, s_job("c", 1, 0, 60, 0), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_OK);
    j = s_job("c", 4, 0, 31, 0);
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_EQUEUEFULL);
    ck_assert_ptr_nonnull(strstr(err, "max_bytes"));
    gxd_job_destroy(&j);
    s_free_list(gxd_queue_close(&q));
    j = s_job("c", 5, 0, 1, 0);
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_ESHUTDOWN);
    gxd_job_destroy(&j);
    gxd_queue_fini(&q);
}
END_TEST

START_TEST(test_remove_and_expire)
{
    gxd_queue q;
    char err[256];
    gxd_queue_init(&q, 100, 1 << 20);
    gxd_queue_push(&q, s_job("alice", 1, 0, 1, 0), err, sizeof err);
    gxd_queue_push(&q, s_job("bob", 1, 0, 1, 500), err, sizeof err);
    gxd_queue_push(&q, s_job("alice", 2, 1, 1, 100), err, sizeof err);
    gxd_queue_push(&q, s_job("alice", 3, 2, 1, 0), err, sizeof err);
    ck_assert_ptr_null(gxd_queue_remove(&q, "carol", 5, 1));
    ck_assert_ptr_null(gxd_queue_remove(&q, "alice", 5, 9));
    gxd_job *j = gxd_queue_remove(&q, "bob", 3, 1);
    ck_assert_ptr_nonnull(j);
    ck_assert_uint_eq(j->id, 1);
    gxd_job_destroy(&j);
    ck_assert_int_eq(gxd_queue_next_deadline(&q), 100);
    ck_assert_ptr_null(gxd_queue_expire(&q, 99));
    gxd_job *ex = gxd_queue_expire(&q, 100);
    ck_assert_ptr_nonnull(ex);
    ck_assert_uint_eq(ex->id, 2);
    ck_assert_ptr_null(ex->next);
    s_free_list(ex);
    ck_assert_int_eq(gxd_queue_next_deadline(&q), 0);
    ck_assert_uint_eq(gxd_queue_len(&q), 2);
    j = gxd_queue_pop(&q); /* priority 2 first */
    ck_assert_uint_eq(j->id, 3);
    gxd_job_destroy(&j);
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

START_TEST(test_clients_take_turns)
{
    gxd_queue q;
    char err[256];
    gxd_queue_init(&q, 100, 1 << 20);
    for (uint64_t i = 1; i <= 5; i++) /* a bulk client queues five */
        gxd_queue_push(&q, s_job("bulk", i, 0, 1, 0), err, sizeof err);
    gxd_queue_push(&q, s_job("small", 1, 0, 1, 0), err, sizeof err);
    gxd_queue_push(&q, s_job("small", 2, 0, 1, 0), err, sizeof err);
    gxd_queue_push(&q, s_job("urgent", 1, 9, 1, 0), err, sizeof err);
    const char *who[] = {"urgent", "bulk", "small", "bulk", "small", "bulk", "bulk", "bulk"};
    uint64_t id[] = {1, 1, 1, 2, 2, 3, 4, 5};
    for (int i = 0; i < 8; i++) {
        gxd_job *j = gxd_queue_pop(&q);
        ck_assert_msg(j->identity_len == strlen(who[i]) && memcmp(j->identity, who[i], j->identity_len) == 0,
                      "pop %d: got %.*s", i, (int)j->identity_len, (const char *)j->identity);
        ck_assert_uint_eq(j->id, id[i]);
        gxd_job_destroy(&j);
    }
    ck_assert_uint_eq(q.n_clients, 0); /* idle clients are forgotten */
    /* a newcomer behind a backlog takes the next turn, not the last place */
    for (uint64_t i = 1; i <= 4; i++)
        gxd_queue_push(&q, s_job("bulk", i, 0, 1, 0), err, sizeof err);
    gxd_job *j = gxd_queue_pop(&q);
    gxd_job_destroy(&j);
    gxd_queue_push(&q, s_job("new", 1, 0, 1, 0), err, sizeof err);
    uint64_t order[] = {2, 0, 3, 4}; /* 0: the newcomer */
    for (int i = 0; i < 4; i++) {
        j = gxd_queue_pop(&q);
        ck_assert_uint_eq(j->identity_len, order[i] ? 4 : 3);
        if (order[i])
            ck_assert_uint_eq(j->id, order[i]);
        gxd_job_destroy(&j);
    }
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

/* A job of client from the given uid (none: uid < 0). */
static gxd_job *s_uid_job(const char *client, uint64_t id, long uid)
{
    gxd_job *j = s_job(client, id, 0, 1, 0);
    j->has_uid = uid >= 0;
    j->uid = uid >= 0 ? (uid_t)uid : 0;
    return j;
}

/* limits.uid_jobs: the connections of one uid share the bound (a second
 * connection is no way around it), another uid and the unidentified (tcp)
 * are not held by it; a pop makes room again. */
START_TEST(test_uid_bound)
{
    gxd_queue q;
    char err[256];
    gxd_queue_init(&q, 100, 1 << 20);
    gxd_queue_set_client_max(&q, 2);
    gxd_queue_set_uid_max(&q, 3);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("a", 1, 1000), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("a", 2, 1000), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("b", 1, 1000), err, sizeof err), GX_OK);
    gxd_job *j = s_uid_job("b", 2, 1000); /* b has 1 of 2, but uid 1000 has 3 of 3 */
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_ELIMIT);
    ck_assert_msg(strstr(err, "uid 1000 has 3 jobs queued") && strstr(err, "limits.uid_jobs"),
                  "%s", err);
    gxd_job_destroy(&j);
    j = s_uid_job("a", 3, 1000); /* the client's own bound speaks first */
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(err, "limits.client_jobs"));
    gxd_job_destroy(&j);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("c", 1, 1001), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("tcp", 1, -1), err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("tcp2", 1, -1), err, sizeof err), GX_OK);
    j = gxd_queue_pop(&q);
    gxd_job_destroy(&j);
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("b", 3, 1000), err, sizeof err), GX_OK);
    gxd_queue_set_uid_max(&q, 0); /* off: only the client's bound */
    ck_assert_int_eq(gxd_queue_push(&q, s_uid_job("d", 1, 1000), err, sizeof err), GX_OK);
    s_free_list(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

/* A Relu job on x[1,4] from c (the caller waits for and destroys it). */
static gx_job *s_submit(gx_client *c, const gx_graph *g, const gx_tensor *x)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_job *j = NULL;
    ck_assert_int_eq(gx_client_submit(c, rq, &j), GX_OK);
    gx_request_destroy(&rq);
    return j;
}

/* limits.uid_jobs against a daemon: the daemon takes the uid from each ipc
 * connection, so two connections of this test's user share the bound
 * while the one worker is held; the refusal names the limit, the queued
 * jobs all run, and the connection that was refused is served after. */
START_TEST(test_uid_jobs_daemon)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "limits:\n  client_jobs: 2\n  uid_jobs: 3\n",
                          (const char *[]){"--cpus", "0", NULL});
    gx_client *hold = gxt_client(&d), *watch = gxt_client(&d);
    gx_client *c1 = gxt_client(&d), *c2 = gxt_client(&d);
    gx_graph *g = gx_graph_new("relu");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    float *xp = gx_tensor_data(x);
    for (int i = 0; i < 4; i++)
        xp[i] = (float)i - 2.0f;
    gxt_hold h;
    gxt_hold_start(&h, hold, watch); /* the hold is the worker's: not queued */
    gx_job *j[4];
    j[0] = s_submit(c1, g, x);
    j[1] = s_submit(c1, g, x);
    gxt_wait_stats(watch, "\"queue_length\":2");
    j[2] = s_submit(c2, g, x);
    gxt_wait_stats(watch, "\"queue_length\":3");
    j[3] = s_submit(c2, g, x); /* c2 has 1 of its 2, the uid 3 of 3 */
    gx_result *r = NULL;
    ck_assert_int_eq(gx_job_wait(j[3], 60000, &r), GX_ELIMIT);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(strstr(gx_result_message(r), "limits.uid_jobs"), "%s", gx_result_message(r));
    gx_result_destroy(&r);
    gx_job_destroy(&j[3]);
    gxt_hold_release(&h);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(gx_job_wait(j[i], 60000, &r), GX_OK);
        ck_assert_float_eq(((const float *)gx_tensor_cdata(gx_result_output(r, 0)))[3], 1.0f);
        gx_result_destroy(&r);
        gx_job_destroy(&j[i]);
    }
    j[3] = s_submit(c2, g, x); /* room again */
    ck_assert_int_eq(gx_job_wait(j[3], 60000, NULL), GX_OK);
    gx_job_destroy(&j[3]);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c1);
    gx_client_destroy(&c2);
    gx_client_destroy(&hold);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

static void *s_popper(void *arg)
{
    return gxd_queue_pop(arg);
}

START_TEST(test_close_wakes_poppers)
{
    gxd_queue q;
    gxd_queue_init(&q, 10, 100);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, s_popper, &q);
    s_free_list(gxd_queue_close(&q));
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    gxd_queue_fini(&q);
}
END_TEST

static int s_sleeping(gxd_queue *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->sleeping;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* A job whose graph last ran on a team of two wakes two sleeping poppers:
 * one takes it, the other spins (for the team call to come) instead of
 * sleeping again. */
START_TEST(test_push_wakes_team)
{
    gxd_queue q;
    gxd_queue_init(&q, 10, 100);
    gxd_queue_set_spin(&q, 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, s_popper, &q);
    while (s_sleeping(&q) < 2)
        sched_yield();
    gxd_queue_set_spin(&q, 3600ll * 1000 * 1000); /* longer than any run of the test */
    gxd_job *j = s_job("a", 1, 0, 1, 0);
    j->team = 2;
    char err[256];
    ck_assert_int_eq(gxd_queue_push(&q, j, err, sizeof err), GX_OK);
    while (atomic_load(&q.spinning) < 1) /* never, if the second popper slept on */
        sched_yield();
    ck_assert_int_eq(s_sleeping(&q), 0);
    s_free_list(gxd_queue_close(&q)); /* ends the spin */
    void *r[2];
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &r[i]);
    ck_assert(r[0] == j ? r[1] == NULL : r[0] == NULL && r[1] == j);
    gxd_job_destroy(&j);
    gxd_queue_fini(&q);
}
END_TEST

Suite *queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("queue");
    tcase_add_test(tc, test_priority_then_fifo);
    tcase_add_test(tc, test_popped_job_held_until_released);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_remove_and_expire);
    tcase_add_test(tc, test_clients_take_turns);
    tcase_add_test(tc, test_uid_bound);
    tcase_add_test(tc, test_close_wakes_poppers);
    tcase_add_test(tc, test_push_wakes_team);
    suite_add_tcase(s, tc);
    TCase *td = tcase_create("daemon");
    tcase_set_timeout(td, 120);
    tcase_add_test(td, test_uid_jobs_daemon);
    suite_add_tcase(s, td);
    return s;
}
