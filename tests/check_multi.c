/*
 * A client of several daemons (docs/cluster.md): two gexecd on one machine
 * (two ipc sockets) serve one client; its jobs spread over both, a graph
 * loaded once runs on both (LOADed again where a RUN answers not found),
 * and a daemon killed with jobs of the client queued loses none of them:
 * each gets one answer, from the survivor. Synchronised on STATS and on
 * a job that cannot end by itself, never on sleeps.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

/* y = x * 2 + 1 on [1, 4] */
static gx_graph *s_affine(void)
{
    gx_graph *g = gx_graph_new("affine");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *two = gx_tensor_new(GX_F32, 0, NULL), *one = gx_tensor_new(GX_F32, 1, (int64_t[]){1});
    *(float *)gx_tensor_data(two) = 2.0f;
    *(float *)gx_tensor_data(one) = 1.0f;
    gx_graph_add_const(g, "two", &two);
    gx_graph_add_const(g, "one", &one);
    gx_graph_add_node(g, "Mul", "mul", 2, (const char *[]){"x", "two"}, 1, (const char *[]){"t"});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"t", "one"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_client *s_client(const char *endpoint)
{
    char err[512];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    return c;
}

static void s_wait_stat(gx_client *c, const char *key, long want)
{
    while (gxt_stat(c, key) != want)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
}

static void s_check_y(const gx_result *r, float base)
{
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_ptr_nonnull(y);
    const float *p = gx_tensor_cdata(y);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(p[i], (base + (float)i) * 2.0f + 1.0f);
}

/* One graph loaded once through the client runs on both daemons (the
 * second gets it when its RUN answers not found); synchronous runs
 * alternate, submitted jobs split evenly, and each daemon's STATS counts
 * its share. The endpoint list comes from GEXEC_SOCKET, comma-separated. */
START_TEST(test_spread_and_reload)
{
    gxt_daemon a, b;
    gxt_daemon_start(&a, NULL);
    gxt_daemon_start(&b, NULL);
    char list[1100];
    snprintf(list, sizeof list, "%s,%s", a.endpoint, b.endpoint);
    setenv("GEXEC_SOCKET", list, 1);
    gx_client *c = s_client(NULL);
    unsetenv("GEXEC_SOCKET");
    gx_graph *g = s_affine();
    gx_graph_id id;
    ck_assert_msg(gx_client_load(c, g, &id) == GX_OK, "%s", gx_client_last_error(c));
    gx_graph_destroy(&g); /* the client keeps what it needs */
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, (float[]){1, 2, 3, 4}, 16);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", x);
    enum { N = 10 };
    int on_a = 0, on_b = 0;
    for (int i = 0; i < N; i++) {
        gx_result *r = NULL;
        ck_assert_msg(gx_client_run(c, rq, &r) == GX_OK, "%s", gx_client_last_error(c));
        s_check_y(r, 1);
        const char *ep = gx_result_info(r)->endpoint;
        on_a += strcmp(ep, a.endpoint) == 0;
        on_b += strcmp(ep, b.endpoint) == 0;
        gx_result_destroy(&r);
    }
    ck_assert_int_eq(on_a, N / 2);
    ck_assert_int_eq(on_b, N / 2);
    /* submitted together: the least loaded first; the request (and its
     * input) may go before the replies come */
    gx_job *jobs[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    on_a = on_b = 0;
    for (int i = 0; i < N; i++) {
        gx_result *r = NULL;
        ck_assert_msg(gx_job_wait(jobs[i], -1, &r) == GX_OK, "%s", gx_client_last_error(c));
        s_check_y(r, 1);
        on_a += strcmp(gx_result_info(r)->endpoint, a.endpoint) == 0;
        on_b += strcmp(gx_result_info(r)->endpoint, b.endpoint) == 0;
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[i]);
    }
    /* a job may end before the next is sent: the idler daemon may take
     * more, but the second job goes to the other */
    ck_assert_int_ge(on_a, 1);
    ck_assert_int_ge(on_b, 1);
    ck_assert_int_eq(on_a + on_b, N);
    ck_assert_uint_eq(gx_client_stray_replies(c), 0);
    gx_client *ca = s_client(a.endpoint), *cb = s_client(b.endpoint);
    ck_assert_int_eq(gxt_stat(ca, "runs_ok"), N / 2 + on_a);
    ck_assert_int_eq(gxt_stat(cb, "runs_ok"), N / 2 + on_b);
    ck_assert_int_eq(gxt_stat(ca, "loads") + gxt_stat(cb, "loads"), 2); /* once each */
    /* UNLOAD goes to both */
    ck_assert_int_eq(gx_client_unload(c, id.hex), GX_OK);
    char *json = NULL;
    ck_assert_int_eq(gx_client_list(ca, &json), GX_OK);
    ck_assert_str_eq(json, "[]");
    free(json);
    ck_assert_int_eq(gx_client_list(cb, &json), GX_OK);
    ck_assert_str_eq(json, "[]");
    free(json);
    gx_client_destroy(&ca);
    gx_client_destroy(&cb);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&a), 0);
    ck_assert_int_eq(gxt_daemon_stop(&b), 0);
}
END_TEST

/* Daemons a and b (one worker each) are each kept busy by another
 * client's endless job, so the client's jobs wait in their queues, half
 * in each (both report the same load); b is then killed (SIGKILL) and a's
 * worker released: every job is answered once, correctly, by a, also
 * those submitted after the kill. */
START_TEST(test_failover)
{
    gxt_daemon a, b;
    const char *one[] = {"--cpus", "0", NULL};
    gxt_daemon_start_yaml(&a, NULL, one);
    gxt_daemon_start_yaml(&b, "shutdown_grace_ms: 0\n", one);
    gx_client *hog_a = s_client(a.endpoint), *watch_a = s_client(a.endpoint);
    gx_client *hog_b = s_client(b.endpoint), *watch = s_client(b.endpoint);
    gxt_hold hold_a, hold_b;
    gxt_hold_start(&hold_a, hog_a, watch_a);
    gxt_hold_start(&hold_b, hog_b, watch);

    const char *eps[] = {a.endpoint, b.endpoint};
    char err[512];
    gx_client *c = gx_client_new_multi(eps, 2, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* both report one busy worker */
    gx_graph *g = s_affine();
    enum { N = 40 };
    gx_tensor *x[N];
    gx_request *rq[N];
    gx_job *jobs[N];
    for (int i = 0; i < N; i++) {
        float v[4] = {(float)i, (float)i + 1, (float)i + 2, (float)i + 3};
        x[i] = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, v, sizeof v);
        rq[i] = gx_request_new();
        gx_request_set_graph(rq[i], g);
        gx_request_add_input(rq[i], "x", x[i]);
    }
    for (int i = 0; i < N / 2; i++)
        ck_assert_int_eq(gx_client_submit(c, rq[i], &jobs[i]), GX_OK);
    /* half of them wait in b's queue behind the endless job */
    s_wait_stat(watch, "queue_length", N / 4);
    s_wait_stat(watch_a, "queue_length", N / 4);

    kill(b.pid, SIGKILL);
    int st = 0;
    ck_assert_int_eq(waitpid(b.pid, &st, 0), b.pid);
    b.pid = 0;
    for (int i = N / 2; i < N; i++) /* during and after the loss */
        ck_assert_int_eq(gx_client_submit(c, rq[i], &jobs[i]), GX_OK);
    gxt_hold_release(&hold_a);
    for (int i = 0; i < N; i++) {
        gx_result *r = NULL;
        int rc = gx_job_wait(jobs[i], -1, &r);
        ck_assert_msg(rc == GX_OK, "job %d: %s", i, gx_client_last_error(c));
        s_check_y(r, (float)i);
        ck_assert_str_eq(gx_result_info(r)->endpoint, a.endpoint);
        gx_result_destroy(&r);
        ck_assert_int_eq(gx_job_wait(jobs[i], 0, &r), GX_EINVAL); /* answered once */
        gx_job_destroy(&jobs[i]);
    }
    ck_assert_uint_eq(gx_client_stray_replies(c), 0);
    gx_client *ca = s_client(a.endpoint);
    ck_assert_int_eq(gxt_stat(ca, "runs_ok"), N);
    gx_client_destroy(&ca);

    for (int i = 0; i < N; i++) {
        gx_request_destroy(&rq[i]);
        gx_tensor_destroy(&x[i]);
    }
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gx_job_destroy(&hold_b.job); /* its daemon is gone */
    gxt_endless_fini(&hold_b.e);
    gx_client_destroy(&hog_a);
    gx_client_destroy(&hog_b);
    gx_client_destroy(&watch_a);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&a), 0);
    gxt_daemon_stop(&b); /* its directory */
}
END_TEST

/* Daemon b (one worker) runs another client's endless job with three more
 * of that client's jobs queued; a, with two workers, is idle. After a
 * PING (every daemon answers it, with its load) the client's jobs all go
 * to a, although b comes first in its list: it weighs the daemons by the
 * load they report, not by its own jobs alone. Once b is idle again the
 * jobs spread over both. */
START_TEST(test_load_figures)
{
    gxt_daemon a, b;
    gxt_daemon_start_yaml(&a, NULL, (const char *[]){"--cpus", "0-1", NULL});
    gxt_daemon_start_yaml(&b, NULL, (const char *[]){"--cpus", "0", NULL});
    gx_client *other = s_client(b.endpoint), *watch = s_client(b.endpoint);
    gxt_hold hold;
    gxt_hold_start(&hold, other, watch);
    gx_graph *g = s_affine();
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, (float[]){1, 2, 3, 4}, 16);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_job *queued[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gx_client_submit(other, rq, &queued[i]), GX_OK);
    s_wait_stat(watch, "queue_length", 3);

    const char *eps[] = {b.endpoint, a.endpoint};
    char err[512];
    gx_client *c = gx_client_new_multi(eps, 2, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* both answer, with their load */
    enum { N = 6 };
    gx_job *jobs[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
    for (int i = 0; i < N; i++) {
        gx_result *r = NULL;
        ck_assert_msg(gx_job_wait(jobs[i], 60000, &r) == GX_OK, "job %d: %s", i,
                      gx_client_last_error(c));
        s_check_y(r, 1);
        ck_assert_str_eq(gx_result_info(r)->endpoint, a.endpoint);
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[i]);
    }

    gxt_hold_release(&hold); /* b runs the queued jobs, then idles */
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(gx_job_wait(queued[i], -1, NULL), GX_OK);
        gx_job_destroy(&queued[i]);
    }
    s_wait_stat(watch, "workers_busy", 0);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    int on_a = 0, on_b = 0;
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
    for (int i = 0; i < 2; i++) {
        gx_result *r = NULL;
        ck_assert_int_eq(gx_job_wait(jobs[i], 60000, &r), GX_OK);
        on_a += strcmp(gx_result_info(r)->endpoint, a.endpoint) == 0;
        on_b += strcmp(gx_result_info(r)->endpoint, b.endpoint) == 0;
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[i]);
    }
    ck_assert_int_eq(on_a, 1);
    ck_assert_int_eq(on_b, 1);
    ck_assert_uint_eq(gx_client_stray_replies(c), 0);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gx_client_destroy(&other);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&a), 0);
    ck_assert_int_eq(gxt_daemon_stop(&b), 0);
}
END_TEST

/* Daemon b is stopped (SIGSTOP: its connection stays, nothing answers).
 * A job the client sent there fails over to a within gx_job_wait, once b
 * left the client's PING unanswered for the liveness interval, and later
 * jobs avoid b. */
START_TEST(test_silent_daemon)
{
    gxt_daemon a, b;
    gxt_daemon_start(&a, NULL);
    gxt_daemon_start(&b, NULL);
    ck_assert_int_eq(kill(b.pid, SIGSTOP), 0);
    const char *eps[] = {a.endpoint, b.endpoint};
    char err[512];
    gx_client *c = gx_client_new_multi(eps, 2, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    /* a live daemon answers PING within this even under a sanitizer on a
     * loaded machine (ThreadSanitizer's a took longer than 1.5 s, and was
     * taken as gone too): Check's CK_TIMEOUT_MULTIPLIER stretches it */
    const char *mul = getenv("CK_TIMEOUT_MULTIPLIER");
    gx_client_set_liveness(c, 1500 * (mul && atoi(mul) > 1 ? atoi(mul) : 1));
    gx_graph *g = s_affine();
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, (float[]){1, 2, 3, 4}, 16);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    /* the first to a, the second to b (no load figure from it yet, ties in
     * turn), the third by load */
    enum { N = 3 };
    gx_job *jobs[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
    for (int i = 0; i < N; i++) {
        gx_result *r = NULL;
        ck_assert_msg(gx_job_wait(jobs[i], -1, &r) == GX_OK, "job %d: %s", i,
                      gx_client_last_error(c));
        s_check_y(r, 1);
        ck_assert_str_eq(gx_result_info(r)->endpoint, a.endpoint);
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[i]);
    }
    /* b stays silent: the next jobs go to a at once */
    for (int i = 0; i < 2; i++) {
        gx_result *r = NULL;
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
        ck_assert_str_eq(gx_result_info(r)->endpoint, a.endpoint);
        gx_result_destroy(&r);
    }
    ck_assert_uint_eq(gx_client_stray_replies(c), 0);
    gx_client_destroy(&c);
    kill(b.pid, SIGKILL);
    int st = 0;
    ck_assert_int_eq(waitpid(b.pid, &st, 0), b.pid);
    b.pid = 0;
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    ck_assert_int_eq(gxt_daemon_stop(&a), 0);
    gxt_daemon_stop(&b); /* its directory */
}
END_TEST

/* Every daemon gone: the job fails with the last error, GX_ECONNECT. */
START_TEST(test_all_gone)
{
    gxt_daemon a;
    gxt_daemon_start(&a, NULL);
    char *dir = gxt_tmpdir(), list[2048];
    snprintf(list, sizeof list, "%s, ipc://%s/none.sock", a.endpoint, dir);
    gx_client *c = s_client(list);
    gx_client_set_timeout(c, 2000);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c, NULL), GX_EINVAL);
    /* a server key per endpoint, or the count is wrong */
    char err[512];
    ck_assert_ptr_null(gx_client_new_curve(list, "a,b,c", NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "3 server keys") != NULL, "%s", err);
    const char *none[1] = {NULL};
    ck_assert_ptr_null(gx_client_new_multi(none, 0, err, sizeof err));
    gx_graph *g = s_affine();
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, (float[]){1, 2, 3, 4}, 16);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    kill(a.pid, SIGKILL);
    int st = 0;
    ck_assert_int_eq(waitpid(a.pid, &st, 0), a.pid);
    a.pid = 0;
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_ECONNECT);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(gx_client_last_error(c), "none.sock") ||
                      strstr(gx_client_last_error(c), a.endpoint),
                  "%s", gx_client_last_error(c));
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gxt_daemon_stop(&a); /* its directory */
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *multi_suite(void)
{
    Suite *s = suite_create("multi");
    TCase *tc = tcase_create("multi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_spread_and_reload);
    tcase_add_test(tc, test_failover);
    tcase_add_test(tc, test_all_gone);
    tcase_add_test(tc, test_load_figures);
    tcase_add_test(tc, test_silent_daemon);
    suite_add_tcase(s, tc);
    return s;
}
