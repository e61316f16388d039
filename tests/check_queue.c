/* The job queue: order, bounds, removal, deadlines, close. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/queue.h"
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

Suite *queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("queue");
    tcase_add_test(tc, test_priority_then_fifo);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_remove_and_expire);
    tcase_add_test(tc, test_clients_take_turns);
    tcase_add_test(tc, test_close_wakes_poppers);
    suite_add_tcase(s, tc);
    return s;
}
