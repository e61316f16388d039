/*
 * End to end: a real gexecd on a temporary socket, driven through libgexec
 * and gexec-submit.
 */
#include <errno.h>
#include <grp.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/json.h"
#include "tests/testutil.h"

/* y = x * 2 + 1 on [1, n] */
static gx_graph *s_affine_graph(int64_t n)
{
    gx_graph *g = gx_graph_new("affine");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, n});
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

static gx_tensor *s_fill(int64_t n, float base)
{
    gx_tensor *t = gx_tensor_new(GX_F32, 2, (int64_t[]){1, n});
    float *p = gx_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        p[i] = base + (float)i;
    return t;
}

static void s_check_affine(const gx_result *r, int64_t n, float base)
{
    ck_assert_uint_eq(gx_result_output_count(r), 1);
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_numel(y), n);
    const float *p = gx_tensor_cdata(y);
    for (int64_t i = 0; i < n; i++)
        ck_assert_float_eq(p[i], (base + (float)i) * 2.0f + 1.0f);
}

typedef struct slow_job {
    gx_graph *g;
    gx_tensor *x;
    gx_request *rq;
} slow_job;

static void s_slow_init(slow_job *s, int k)
{
    s->g = gxt_slow_graph(k);
    s->x = gx_tensor_new(GX_F32, 2, (int64_t[]){GXT_SLOW_N, GXT_SLOW_N});
    s->rq = gx_request_new();
    gx_request_set_graph(s->rq, s->g);
    gx_request_add_input(s->rq, "x", s->x);
}

static void s_slow_fini(slow_job *s)
{
    gx_request_destroy(&s->rq);
    gx_tensor_destroy(&s->x);
    gx_graph_destroy(&s->g);
}

/* An example from examples/: NAME.yaml and its input x, NAME_input.npy.
 * The caller destroys both. */
typedef struct example {
    gx_graph *g;
    gx_tensor *x;
} example;

static example s_example(const char *name)
{
    char path[256], err[512];
    example e = {NULL, NULL};
    snprintf(path, sizeof path, "examples/%s.yaml", name);
    ck_assert_msg(gx_graph_load_yaml(gxt_srcpath(path), &e.g, err, sizeof err) == GX_OK, "%s", err);
    snprintf(path, sizeof path, "examples/%s_input.npy", name);
    ck_assert_msg(gx_npy_load(gxt_srcpath(path), &e.x, err, sizeof err) == GX_OK, "%s", err);
    return e;
}

/* The transports a small job of gx_client_run takes (a loop test's _i):
 * the shared-memory ring (libgexec's default on an ipc socket) and the
 * socket. */
#define S_TRANSPORTS 2
static const char *const s_transport[S_TRANSPORTS] = {"ring", "socket"};

/* Load the example and run it by id (the ring takes graphs by id only)
 * through a new client, over transport t (the ring's counter in STATS
 * says which carried it); the result is the caller's. */
static gx_result *s_run_example(const gxt_daemon *d, const example *e, int t)
{
    gx_client *c = gxt_client(d);
    gx_client_set_ring(c, t == 0);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, e->g, &id), GX_OK);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", e->x);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_msg(gxt_stat(c, "ring.jobs") == (t == 0), "the %s did not carry the job",
                  s_transport[t]);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return r;
}

static void s_example_fini(example *e)
{
    gx_tensor_destroy(&e->x);
    gx_graph_destroy(&e->g);
}

/* The mlp example against its reference, over each transport. */
START_TEST(test_mlp_example_matches_reference)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    example e = s_example("mlp");

    /* reference: softmax(relu(x @ w1 + b1) @ w2 + b2), from the graph's constants */
    const float *w1 = NULL, *b1 = NULL, *w2 = NULL, *b2 = NULL;
    for (size_t i = 0; i < e.g->n_consts; i++) {
        const float *p = e.g->consts[i].t->data;
        const char *n = e.g->consts[i].name;
        if (!strcmp(n, "w1")) w1 = p;
        if (!strcmp(n, "b1")) b1 = p;
        if (!strcmp(n, "w2")) w2 = p;
        if (!strcmp(n, "b2")) b2 = p;
    }
    ck_assert(w1 && b1 && w2 && b2);
    const float *xp = gx_tensor_cdata(e.x);
    float h[5], z[3], want[3], zmax = -INFINITY, sum = 0;
    for (int j = 0; j < 5; j++) {
        h[j] = b1[j];
        for (int k = 0; k < 4; k++)
            h[j] += xp[k] * w1[k * 5 + j];
        h[j] = h[j] > 0 ? h[j] : 0;
    }
    for (int j = 0; j < 3; j++) {
        z[j] = b2[j];
        for (int k = 0; k < 5; k++)
            z[j] += h[k] * w2[k * 3 + j];
        zmax = fmaxf(zmax, z[j]);
    }
    for (int j = 0; j < 3; j++)
        sum += want[j] = expf(z[j] - zmax);
    for (int j = 0; j < 3; j++)
        want[j] /= sum;

    gx_result *r = s_run_example(&d, &e, _i);
    ck_assert_str_eq(gx_result_output_name(r, 0), "y");
    ck_assert(gxt_allclose(gx_tensor_cdata(gx_result_output(r, 0)), want, 3, 1e-5f, 1e-6f));
    const gx_run_info *info = gx_result_info(r);
    ck_assert_str_eq(info->mode, "seq");
    ck_assert_str_eq(info->device, "cpu");
    ck_assert_int_eq(info->workers, 1);
    ck_assert_int_ge(info->queue_us, 0);
    ck_assert_int_ge(info->compute_us, 0);
    ck_assert_str_ne(info->reason, "");
    gx_result_destroy(&r);
    s_example_fini(&e);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The broadcast example, over each transport. */
START_TEST(test_broadcast_example)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    example e = s_example("broadcast");
    gx_result *r = s_run_example(&d, &e, _i);
    const float want[6] = {11, 22, 33, -7, -12.5f, -18};
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_ndim(y), 2);
    ck_assert_int_eq(gx_tensor_shape(y)[0], 2);
    ck_assert_int_eq(gx_tensor_shape(y)[1], 3);
    ck_assert(gxt_allclose(gx_tensor_cdata(y), want, 6, 0, 0));
    gx_result_destroy(&r);
    s_example_fini(&e);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_load_shares_one_plan)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *a = gxt_client(&d), *b = gxt_client(&d);
    gx_graph *g1 = s_affine_graph(8), *g2 = s_affine_graph(8), *g3 = s_affine_graph(9);
    gx_graph_id i1, i2, i3;
    ck_assert_int_eq(gx_client_load(a, g1, &i1), GX_OK);
    ck_assert_int_eq(gx_client_load(b, g2, &i2), GX_OK);
    ck_assert_int_eq(gx_client_load(b, g3, &i3), GX_OK);
    ck_assert_str_eq(i1.hex, i2.hex);
    ck_assert_str_ne(i1.hex, i3.hex);
    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(a, &json), GX_OK);
    ck_assert_ptr_nonnull(strstr(json, "\"graphs_loaded\":2"));
    free(json);

    /* run by id, asking for the output by name */
    gx_tensor *x = s_fill(8, 3.0f);
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &i1);
    gx_request_add_input(rq, "x", x);
    gx_request_add_output(rq, "y");
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(b, rq, &r), GX_OK);
    s_check_affine(r, 8, 3.0f);
    ck_assert_int_eq(gx_result_info(r)->compile_us, 0); /* compiled at LOAD */
    gx_tensor *taken = gx_result_take_output(r, 0);
    ck_assert_ptr_nonnull(taken);
    ck_assert_ptr_null(gx_result_output(r, 0));
    gx_tensor_destroy(&taken);
    gx_result_destroy(&r);

    /* unknown id, unknown output, missing input, wrong shape */
    gx_graph_id bogus;
    memset(bogus.hex, 'a', 64);
    bogus.hex[64] = '\0';
    gx_request *bad = gx_request_new();
    gx_request_set_graph_id(bad, &bogus);
    gx_request_add_input(bad, "x", x);
    ck_assert_int_eq(gx_client_run(a, bad, &r), GX_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "not loaded"));
    gx_result_destroy(&r);
    gx_request_destroy(&bad);

    bad = gx_request_new();
    gx_request_set_graph_id(bad, &i1);
    gx_request_add_input(bad, "x", x);
    gx_request_add_output(bad, "t");
    ck_assert_int_eq(gx_client_run(a, bad, &r), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "not an output"));
    gx_result_destroy(&r);
    gx_request_destroy(&bad);

    bad = gx_request_new();
    gx_request_set_graph_id(bad, &i1);
    ck_assert_int_eq(gx_client_run(a, bad, &r), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "missing input 'x'"));
    gx_result_destroy(&r);
    gx_request_destroy(&bad);

    gx_tensor *x9 = s_fill(9, 0.0f);
    bad = gx_request_new();
    gx_request_set_graph_id(bad, &i1);
    gx_request_add_input(bad, "x", x9);
    ck_assert_int_eq(gx_client_run(a, bad, &r), GX_ESHAPE);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "input 'x'"));
    gx_result_destroy(&r);
    gx_request_destroy(&bad);

    gx_tensor_destroy(&x9);
    gx_tensor_destroy(&x);
    gx_request_destroy(&rq);
    gx_graph_destroy(&g1);
    gx_graph_destroy(&g2);
    gx_graph_destroy(&g3);
    gx_client_destroy(&a);
    gx_client_destroy(&b);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

#define N_THREADS 4
#define N_JOBS 60
#define IN_FLIGHT 8

typedef struct thread_arg {
    const gxt_daemon *d;
    const gx_graph_id *id;
    int index;
    int ok;
} thread_arg;

/* One client per thread, IN_FLIGHT async jobs at a time, distinct inputs. */
static void *s_client_thread(void *p)
{
    thread_arg *a = p;
    char err[256];
    gx_client *c = gx_client_new(a->d->endpoint, err, sizeof err);
    if (!c)
        return NULL;
    gx_tensor *x[N_JOBS];
    gx_request *rq[N_JOBS];
    gx_job *job[N_JOBS] = {0};
    for (int i = 0; i < N_JOBS; i++) {
        x[i] = s_fill(32, (float)(a->index * 1000 + i));
        rq[i] = gx_request_new();
        gx_request_set_graph_id(rq[i], a->id);
        gx_request_add_input(rq[i], "x", x[i]);
    }
    int next = 0, done = 0;
    while (done < N_JOBS) {
        while (next < N_JOBS && next - done < IN_FLIGHT)
            if (gx_client_submit(c, rq[next], &job[next]) == GX_OK)
                next++;
        gx_result *r = NULL;
        if (gx_job_wait(job[done], 30000, &r) == GX_OK) {
            const float *y = gx_tensor_cdata(gx_result_output(r, 0));
            bool good = true;
            for (int k = 0; k < 32; k++)
                good = good && y[k] == ((float)(a->index * 1000 + done) + (float)k) * 2.0f + 1.0f;
            a->ok += good;
        }
        gx_result_destroy(&r);
        gx_job_destroy(&job[done]);
        done++;
    }
    for (int i = 0; i < N_JOBS; i++) {
        gx_request_destroy(&rq[i]);
        gx_tensor_destroy(&x[i]);
    }
    gx_client_destroy(&c);
    return NULL;
}

/* LOAD the affine graph on its own connection; returns its id. */
static gx_graph_id s_load_affine(const gxt_daemon *d)
{
    gx_client *c = gxt_client(d);
    gx_graph *g = s_affine_graph(32);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    return id;
}

START_TEST(test_many_clients_every_job_answered_once)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    /* Client processes first: fork before this process has threads (a
     * child of a threaded parent may inherit a held allocator lock). */
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            gx_graph_id id = s_load_affine(&d);
            thread_arg a = {&d, &id, 100 + i, 0};
            s_client_thread(&a);
            _exit(a.ok == N_JOBS ? 0 : 1);
        }
    }
    /* then threads in this process; the same graph gets the same id */
    gx_graph_id id = s_load_affine(&d);
    pthread_t th[N_THREADS];
    thread_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (thread_arg){&d, &id, i, 0};
        pthread_create(&th[i], NULL, s_client_thread, &args[i]);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].ok, N_JOBS);
    }
    for (int i = 0; i < 3; i++) {
        int st;
        waitpid(kids[i], &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    gx_client *c = gxt_client(&d);
    char *json = NULL;
    char want[64];
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    snprintf(want, sizeof want, "\"runs_ok\":%d", (N_THREADS + 3) * N_JOBS);
    ck_assert_msg(strstr(json, want) != NULL, "%s", json);
    ck_assert_ptr_nonnull(strstr(json, "\"runs_failed\":0"));
    ck_assert_ptr_nonnull(strstr(json, "\"graphs_loaded\":1"));
    /* every job ran on the CPU, the only device here (then its memory) */
    snprintf(want, sizeof want, "\"cpu\":{\"jobs\":%d,", (N_THREADS + 3) * N_JOBS);
    ck_assert_msg(strstr(json, want) != NULL, "%s", json);
    free(json);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_cancel_queued_and_running)
{
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"--cpus", "0", NULL}); /* one worker */
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    gxt_endless en; /* runs until cancelled or its deadline */
    gxt_endless_init(&en);
    gx_job *a = NULL, *b = NULL;
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_submit(c, en.rq, &a), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");
    ck_assert_int_eq(gx_client_submit(c, en.rq, &b), GX_OK);
    /* B is queued behind A: cancelling it answers it at once */
    ck_assert_int_eq(gx_job_cancel(b), GX_OK);
    ck_assert_int_eq(gx_job_wait(b, 10000, &r), GX_ECANCELLED);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "queued"));
    gx_result_destroy(&r);
    /* A is running: it stops at its next step */
    ck_assert_int_eq(gx_job_cancel(a), GX_OK);
    ck_assert_int_eq(gx_job_wait(a, 60000, &r), GX_ECANCELLED);
    gx_result_destroy(&r);
    /* a job whose reply came cannot be cancelled any more */
    ck_assert_int_eq(gx_job_cancel(a), GX_EINVAL);
    gx_job_destroy(&a);
    gx_job_destroy(&b);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gxt_endless_fini(&en);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_deadline_and_queue_full)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "# two queued jobs at most\nqueue:\n  max_jobs: 2\n",
                          (const char *[]){"--cpus", "0", NULL});
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    gxt_endless en; /* runs until cancelled or its deadline */
    gxt_endless_init(&en);
    gx_job *a = NULL, *b = NULL, *e = NULL, *full = NULL;
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_submit(c, en.rq, &a), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");

    /* deadline: B waits behind A and expires while queued */
    gx_tensor *x = s_fill(4, 0);
    gx_graph *g = s_affine_graph(4);
    gx_request *quick = gx_request_new();
    gx_request_set_graph(quick, g);
    gx_request_add_input(quick, "x", x);
    gx_request_set_deadline_ms(quick, 50);
    ck_assert_int_eq(gx_client_submit(c, quick, &b), GX_OK);
    ck_assert_int_eq(gx_job_wait(b, 20000, &r), GX_ETIMEDOUT);
    ck_assert_ptr_nonnull(gx_result_info(r));
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "deadline"));
    gx_result_destroy(&r);

    /* queue full: two fit, the third is refused at once */
    gx_request_set_deadline_ms(quick, 0);
    gx_job *q1 = NULL, *q2 = NULL;
    ck_assert_int_eq(gx_client_submit(c, quick, &q1), GX_OK);
    ck_assert_int_eq(gx_client_submit(c, quick, &q2), GX_OK);
    ck_assert_int_eq(gx_client_submit(c, quick, &full), GX_OK);
    ck_assert_int_eq(gx_job_wait(full, 20000, &r), GX_EQUEUEFULL);
    ck_assert_ptr_nonnull(strstr(gx_result_message(r), "max_jobs"));
    gx_result_destroy(&r);

    /* the daemon still answers; cancel A so the queued ones run */
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gx_job_cancel(a);
    ck_assert_int_eq(gx_job_wait(a, 60000, NULL), GX_ECANCELLED);
    ck_assert_int_eq(gx_job_wait(q1, 60000, &r), GX_OK);
    s_check_affine(r, 4, 0);
    gx_result_destroy(&r);
    ck_assert_int_eq(gx_job_wait(q2, 60000, NULL), GX_OK);
    /* a deadline also stops a job that is already running */
    gx_job *late = NULL;
    gx_request_set_deadline_ms(en.rq, 300);
    ck_assert_int_eq(gx_client_submit(c, en.rq, &late), GX_OK);
    ck_assert_int_eq(gx_job_wait(late, 60000, &r), GX_ETIMEDOUT);
    ck_assert_msg(strstr(gx_result_message(r), "deadline expired") != NULL, "%s", gx_result_message(r));
    gx_result_destroy(&r);
    gx_job_destroy(&late);
    ck_assert_int_eq(gx_client_submit(c, quick, &e), GX_OK);
    ck_assert_int_eq(gx_job_wait(e, 60000, NULL), GX_OK);
    gx_job_destroy(&a);
    gx_job_destroy(&b);
    gx_job_destroy(&e);
    gx_job_destroy(&q1);
    gx_job_destroy(&q2);
    gx_job_destroy(&full);
    gx_request_destroy(&quick);
    gx_graph_destroy(&g);
    gx_tensor_destroy(&x);
    gxt_endless_fini(&en);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A clean stop (SIGTERM) removes the daemon's ipc socket file. */
START_TEST(test_clean_stop_removes_socket)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    ck_assert(strncmp(d.endpoint, "ipc://", 6) == 0);
    const char *path = d.endpoint + 6;
    ck_assert_int_eq(access(path, F_OK), 0);
    kill(d.pid, SIGTERM);
    int st = 0;
    ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
    d.pid = 0;
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_msg(access(path, F_OK) != 0, "%s is still there", path);
    gxt_daemon_stop(&d); /* removes its folder */
}
END_TEST

/* A client that may not use the daemon's socket is told so, not asked
 * whether gexecd runs (run as root: the client is a child that drops to
 * nobody; as anyone else there is no one to drop to, and it says so). */
START_TEST(test_socket_permission_reported)
{
    if (getuid() != 0) {
        fprintf(stderr, "test_socket_permission_reported: not root, nothing checked\n");
        return;
    }
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    ck_assert_int_eq(chmod(d.endpoint + 6, 0600), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        char err[256];
        gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
        if (!c)
            _exit(3);
        gx_client_set_timeout(c, 300);
        int rc = gx_client_ping(c);
        bool ok = rc != GX_OK && strstr(gx_client_last_error(c), "Permission denied") &&
                  !strstr(gx_client_last_error(c), "is gexecd running");
        if (!ok)
            fprintf(stderr, "client said: %s\n", gx_client_last_error(c));
        gx_client_destroy(&c);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* ---- sockets no one else can impersonate (issue 18 item 2) ---- */

static const char *s_gexecd_bin(void)
{
    static char path[4096];
    const char *bin = getenv("GEXECD");
    if (bin)
        return bin;
    snprintf(path, sizeof path, "%s/daemon/gexecd", GX_TEST_BUILDDIR);
    return path;
}

/* gexecd on endpoint (NULL: its default) as uid (0: as is, else also that
 * gid, without XDG_RUNTIME_DIR and GEXEC_SOCKET) in the background. */
static pid_t s_spawn_gexecd(const char *endpoint, uid_t uid)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (uid && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
            _exit(126);
        if (uid) {
            unsetenv("XDG_RUNTIME_DIR");
            unsetenv("GEXEC_SOCKET");
        }
        const char *argv[] = {s_gexecd_bin(), "--foreground", "--log-level", "error", "--profile-dir",
                              "", endpoint ? "--socket" : NULL, endpoint, NULL};
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Whether a client (as uid when not 0) gets a PONG from endpoint within
 * about 30 s, the daemon pid still alive; false at once when the client is
 * refused (why gets the reason). */
static bool s_ping_as(const char *endpoint, uid_t uid, pid_t daemon, char *why, size_t whylen)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (uid && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
            _exit(126);
        char err[768] = "";
        gx_client *c = NULL;
#define S_ALIVE(pid) (kill(pid, 0) == 0 || errno == EPERM) /* EPERM: not nobody's yet */
        /* the daemon makes its directory as it starts: wait for that
         * while it lives (a dead one: one try) */
        for (int i = 0; !(c = gx_client_new(endpoint, err, sizeof err)); i++) {
            if (!strstr(err, "No such file") || i == 149 || !S_ALIVE(daemon))
                break;
            nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        }
        int rc = GX_ECONNECT;
        if (c) {
            gx_client_set_timeout(c, 200);
            for (int i = 0; i < 150 && rc != GX_OK && S_ALIVE(daemon); i++)
                rc = gx_client_ping(c);
#undef S_ALIVE
            snprintf(err, sizeof err, "%s", gx_client_last_error(c));
            gx_client_destroy(&c);
        }
        ssize_t n = write(fds[1], err, strlen(err));
        (void)n;
        _exit(rc == GX_OK ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], why, whylen - 1);
    why[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int s_stop(pid_t pid, int sig)
{
    int st = 0;
    kill(pid, sig);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A second gexecd on a socket a daemon answers on refuses to start and
 * leaves it working; after a SIGKILL the file left behind is stale and the
 * next daemon takes it over; a file that is not a socket is left alone. */
START_TEST(test_socket_live_and_stale)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char out[4096], why[768];
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --foreground --profile-dir '' --socket %s 2>&1",
                            s_gexecd_bin(), d.endpoint), 0);
    ck_assert_msg(strstr(out, "another gexecd is already serving") != NULL, "%s", out);
    ck_assert_msg(s_ping_as(d.endpoint, 0, d.pid, why, sizeof why), "%s", why);
    s_stop(d.pid, SIGKILL);
    d.pid = 0;
    ck_assert_int_eq(access(d.endpoint + 6, F_OK), 0); /* stale: no one answers there */
    pid_t again = s_spawn_gexecd(d.endpoint, 0);
    ck_assert_msg(s_ping_as(d.endpoint, 0, again, why, sizeof why), "%s", why);
    ck_assert_int_eq(s_stop(again, SIGTERM), 0);
    FILE *f = fopen(d.endpoint + 6, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --foreground --profile-dir '' --socket %s 2>&1",
                            s_gexecd_bin(), d.endpoint), 0);
    ck_assert_msg(strstr(out, "exists and is not a socket") != NULL, "%s", out);
    ck_assert_int_eq(access(d.endpoint + 6, F_OK), 0);
    gxt_daemon_stop(&d);
}
END_TEST

/* The default socket of a user without XDG_RUNTIME_DIR is in
 * $TMPDIR/gexec-<uid>, which gexecd makes 0700 and refuses to use when
 * someone else owns it, it is open to others or a symlink. A client refuses
 * another user's socket, a directory others may write to, and a missing
 * socket in a shared sticky one. Needs root: the second user is nobody.
 * TMPDIR is a fresh sticky directory of this test (as /tmp is), so two runs
 * at once do not share /tmp/gexec-65534. */
START_TEST(test_socket_private_dir)
{
    if (getuid() != 0) {
        fprintf(stderr, "test_socket_private_dir: not root, nothing checked\n");
        return;
    }
    const uid_t nobody = 65534;
    char *base = gxt_tmpdir(), pdir[512];
    ck_assert_int_eq(chmod(base, 01777), 0); /* shared and sticky, as /tmp */
    snprintf(pdir, sizeof pdir, "%s/gexec-65534", base);
    char out[4096], why[768], cmd[8192];
    snprintf(cmd, sizeof cmd,
             "setpriv --reuid=65534 --regid=65534 --clear-groups env -u XDG_RUNTIME_DIR "
             "-u GEXEC_SOCKET TMPDIR=%s %s --foreground --profile-dir '' 2>&1", base,
             s_gexecd_bin());
    /* owned by someone else (root) */
    ck_assert_int_eq(mkdir(pdir, 0700), 0);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s", cmd), 0);
    ck_assert_msg(strstr(out, "must be owned by this user (uid 65534) with mode 0700; it is owned by uid 0")
                  != NULL, "%s", out);
    /* the user's, but open to others */
    ck_assert_int_eq(chown(pdir, nobody, nobody), 0);
    ck_assert_int_eq(chmod(pdir, 0755), 0);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s", cmd), 0);
    ck_assert_msg(strstr(out, "with mode 0755") != NULL, "%s", out);
    ck_assert_int_eq(rmdir(pdir), 0);
    /* a symlink to a directory of the right kind */
    char *real = gxt_tmpdir();
    ck_assert_int_eq(chown(real, nobody, nobody), 0);
    ck_assert_int_eq(symlink(real, pdir), 0);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s", cmd), 0);
    ck_assert_msg(strstr(out, "is a symbolic link") != NULL, "%s", out);
    ck_assert_int_eq(unlink(pdir), 0);
    /* absent: made 0700 and served; nobody's client reaches it, root's
     * refuses a socket nobody owns */
    char *was = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    ck_assert_int_eq(setenv("TMPDIR", base, 1), 0); /* for the child */
    pid_t pid = s_spawn_gexecd(NULL, nobody);
    ck_assert_int_eq(was ? setenv("TMPDIR", was, 1) : unsetenv("TMPDIR"), 0);
    free(was);
    char ep[600];
    snprintf(ep, sizeof ep, "ipc://%s/gexecd.sock", pdir);
    ck_assert_msg(s_ping_as(ep, nobody, pid, why, sizeof why), "%s", why);
    struct stat sb;
    ck_assert_int_eq(lstat(pdir, &sb), 0);
    ck_assert(S_ISDIR(sb.st_mode) && sb.st_uid == nobody && (sb.st_mode & 07777) == 0700);
    ck_assert_int_eq(lstat(ep + 6, &sb), 0);
    ck_assert(S_ISSOCK(sb.st_mode) && (sb.st_mode & 0777) == 0660);
    ck_assert(!s_ping_as(ep, 0, pid, why, sizeof why));
    ck_assert_msg(strstr(why, "is owned by uid 65534") && strstr(why, "refusing to connect"), "%s", why);
    /* the socket itself nobody's, in a directory root trusts */
    ck_assert_int_eq(chown(pdir, 0, 0), 0);
    ck_assert(!s_ping_as(ep, 0, pid, why, sizeof why));
    ck_assert_msg(strstr(why, "gexecd.sock is owned by uid 65534"), "%s", why);
    /* a directory anyone may write to */
    ck_assert_int_eq(chmod(pdir, 0777), 0);
    ck_assert(!s_ping_as(ep, 0, pid, why, sizeof why));
    ck_assert_msg(strstr(why, "is writable by other users (mode 0777)"), "%s", why);
    ck_assert_int_eq(chown(pdir, nobody, nobody), 0);
    ck_assert_int_eq(chmod(pdir, 0700), 0);
    ck_assert_int_eq(s_stop(pid, SIGTERM), 0);
    /* a missing socket in a shared sticky directory */
    ck_assert_int_eq(chown(pdir, 0, 0), 0);
    ck_assert_int_eq(chmod(pdir, 01777), 0);
    ck_assert(!s_ping_as(ep, 0, pid, why, sizeof why)); /* pid: stopped, so one try */
    ck_assert_msg(strstr(why, "shared directory"), "%s", why);
    gxt_rmtree(base);
    free(base);
    gxt_rmtree(real);
    free(real);
}
END_TEST

/* y = x + w with w a constant of n floats (tag makes graphs differ). */
static gx_graph *s_const_graph(int64_t n, float tag)
{
    gx_graph *g = gx_graph_new("budget");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){n});
    gx_tensor *w = gx_tensor_new(GX_F32, 1, (int64_t[]){n});
    float *pw = gx_tensor_data(w);
    for (int64_t i = 0; i < n; i++)
        pw[i] = tag;
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"x", "w"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static int s_run_id(gx_client *c, const gx_graph_id *id, int64_t n, gx_result **r)
{
    gx_tensor *x = gx_tensor_new(GX_F32, 1, (int64_t[]){n});
    memset(gx_tensor_data(x), 0, (size_t)n * sizeof(float));
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    int rc = gx_client_run(c, rq, r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    return rc == GX_OK ? gx_result_status(*r) : rc;
}

/* limits.max_memory_bytes: graphs beyond it push out the least recently
 * used idle ones; a graph, or a plan with its graph, larger than the whole
 * budget is refused with an error naming it. Budget 2 MiB; each graph of
 * 100,000 floats holds about 400 KB, and its plan about 800 KB more (an
 * arena for x and y). */
START_TEST(test_memory_budget)
{
    char *dir = gxt_tmpdir(), conf[4200];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    /* one client loads them all: its own bound is beyond the budget */
    /* no profiles, so no artifacts: each plan is compiled here */
    fputs("limits:\n  max_memory_bytes: 2M\n  client_memory_bytes: 1G\nprofile:\n  dir: \"\"\n", f);
    fclose(f);
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"-c", conf, NULL});
    gx_client *c = gxt_client(&d);
    const int64_t n = 100000;
    gx_graph_id ids[3];
    gx_result *r = NULL;
    for (int i = 0; i < 3; i++) {
        gx_graph *g = s_const_graph(n, (float)i + 1);
        ck_assert_msg(gx_client_load(c, g, &ids[i]) == GX_OK, "%s", gx_client_last_error(c));
        gx_graph_destroy(&g);
        ck_assert_int_eq(s_run_id(c, &ids[i], n, &r), GX_OK);
        ck_assert_float_eq(((const float *)gx_tensor_cdata(gx_result_output(r, 0)))[7], (float)i + 1);
        gx_result_destroy(&r);
    }
    /* 3 x 1.2 MB > 2 MiB: the first (least recently used) went, the last stays */
    ck_assert_int_eq(s_run_id(c, &ids[0], n, &r), GX_ENOTFOUND);
    gx_result_destroy(&r);
    ck_assert_int_eq(s_run_id(c, &ids[2], n, &r), GX_OK);
    gx_result_destroy(&r);
    /* a graph larger than the budget */
    gx_graph *big = s_const_graph(600000, 9.0f);
    gx_graph_id bid;
    ck_assert_int_eq(gx_client_load(c, big, &bid), GX_ELIMIT);
    ck_assert_msg(strstr(gx_client_last_error(c), "limits.max_memory_bytes is 2097152"), "%s",
                  gx_client_last_error(c));
    gx_graph_destroy(&big);
    /* a small graph whose plan (its arena) does not fit */
    gx_graph *wide = gx_graph_new("wide");
    gx_graph_add_input(wide, "x", GX_F32, 1, (int64_t[]){400000});
    gx_graph_add_node(wide, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"h"});
    gx_graph_add_node(wide, "Neg", NULL, 1, (const char *[]){"h"}, 1, (const char *[]){"y"});
    gx_graph_add_output(wide, "y");
    gx_graph_id wid; /* LOAD compiles the plan for the declared shapes */
    ck_assert_int_eq(gx_client_load(c, wide, &wid), GX_ELIMIT);
    /* refused once the memory planner knew its arena, before one was made */
    ck_assert_msg(strstr(gx_client_last_error(c), "by the end of pass 'memplan'") &&
                      strstr(gx_client_last_error(c), "limits.max_memory_bytes (2097152) less "),
                  "%s", gx_client_last_error(c));
    gx_graph_destroy(&wide);
    /* a plan made at run time (a new input shape) counts against the
     * budget the same way: refused before it is built, the small one runs */
    gx_graph *dyn = gx_graph_new("dyn");
    gx_graph_add_input(dyn, "x", GX_F32, 1, (int64_t[]){-1});
    gx_graph_add_node(dyn, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"h"});
    gx_graph_add_node(dyn, "Neg", NULL, 1, (const char *[]){"h"}, 1, (const char *[]){"y"});
    gx_graph_add_output(dyn, "y");
    gx_graph_id did;
    ck_assert_msg(gx_client_load(c, dyn, &did) == GX_OK, "%s", gx_client_last_error(c));
    gx_graph_destroy(&dyn);
    ck_assert_int_eq(s_run_id(c, &did, 16, &r), GX_OK);
    gx_result_destroy(&r);
    ck_assert_int_eq(s_run_id(c, &did, 400000, &r), GX_ELIMIT);
    ck_assert_msg(strstr(gx_result_message(r), "by the end of pass 'memplan'") &&
                      strstr(gx_result_message(r), "limits.max_memory_bytes (2097152) less "),
                  "%s", gx_result_message(r));
    gx_result_destroy(&r);
    ck_assert_int_eq(s_run_id(c, &did, 32, &r), GX_OK);
    gx_result_destroy(&r);
    /* and the daemon still serves */
    ck_assert_int_eq(s_run_id(c, &ids[2], n, &r), GX_OK);
    gx_result_destroy(&r);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* The reply's tensors are written by the steps straight into the reply's
 * buffers where they can be: every way an output can come back must still
 * give the right values. y = Relu(x) (a step's output), x itself (an
 * input given back), y asked for twice, in seq and cut into replicas
 * along the batch. */
START_TEST(test_outputs_every_way)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = gx_graph_new("outs");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){4, 8});
    gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "x");
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){4, 8});
    float *px = gx_tensor_data(x);
    for (int i = 0; i < 32; i++)
        px[i] = (float)(i % 7) - 3.0f;
    static const gx_mode modes[] = {GX_MODE_SEQ, GX_MODE_REPLICA};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        gx_request *rq = gx_request_new();
        gx_request_set_graph(rq, g);
        gx_request_add_input(rq, "x", x);
        gx_request_add_output(rq, "y");
        gx_request_add_output(rq, "x");
        gx_request_add_output(rq, "y");
        gx_request_set_mode(rq, modes[m]);
        gx_result *r = NULL;
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
        ck_assert_int_eq(gx_result_status(r), GX_OK);
        ck_assert_uint_eq(gx_result_output_count(r), 3);
        for (size_t i = 0; i < 3; i++) {
            const gx_tensor *t = gx_result_output(r, i);
            ck_assert_int_eq(gx_tensor_numel(t), 32);
            const float *p = gx_tensor_cdata(t);
            for (int e = 0; e < 32; e++)
                ck_assert_float_eq(p[e], i == 1 ? px[e] : (px[e] > 0 ? px[e] : 0.0f));
        }
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
    }
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The CPU's memory_bytes in STATS: what limits.max_memory_bytes counts. */
static double s_cpu_bytes(gx_client *c)
{
    char *json = NULL, err[256];
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    gx_json *j = gx_json_parse(json, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    double v = gx_json_num(gx_json_path(j, "devices.cpu.memory_bytes"), -1);
    ck_assert_msg(v >= 0, "%s", json);
    gx_json_destroy(&j);
    free(json);
    return v;
}

/* Slice plans made at run time for replicas count for their model (with
 * the plan they slice) once, and go with it: memory_bytes grows with the
 * first split run, not with the second, and is 0 after the UNLOAD. */
START_TEST(test_replica_slices_counted)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = gx_graph_new("slices");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){8, 256});
    gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){8, 256});
    memset(gx_tensor_data(x), 0, 8 * 256 * sizeof(float));
    /* a seq job; replica jobs until one ran in slices (a replica job runs
     * whole when no helper is free at that moment: no timing assumed);
     * then one more, which compiles nothing new */
    double bytes[3];
    static const gx_mode modes[] = {GX_MODE_SEQ, GX_MODE_REPLICA, GX_MODE_REPLICA};
    for (int m = 0; m < 3; m++) {
        int replicas = 0;
        for (int tries = 0; tries < 10000 && (m == 1 ? replicas < 2 : tries == 0); tries++) {
            gx_request *rq = gx_request_new();
            gx_request_set_graph_id(rq, &id);
            gx_request_add_input(rq, "x", x);
            gx_request_set_mode(rq, modes[m]);
            gx_result *r = NULL;
            ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
            ck_assert_msg(gx_result_status(r) == GX_OK, "%s", gx_result_message(r));
            replicas = gx_result_info(r)->replicas;
            gx_result_destroy(&r);
            gx_request_destroy(&rq);
        }
        if (m == 1)
            ck_assert_int_gt(replicas, 1);
        bytes[m] = s_cpu_bytes(c);
    }
    ck_assert_msg(bytes[1] > bytes[0] && bytes[2] == bytes[1], "%.0f %.0f %.0f", bytes[0],
                  bytes[1], bytes[2]);
    ck_assert_int_eq(gx_client_unload(c, id.hex), GX_OK);
    /* the artifact writer holds the plans it has still to write (after the
     * replies): the model's memory is 0 once it has none left */
    while (gxt_stat(c, "artifacts.queued") != 0)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    ck_assert_double_eq(s_cpu_bytes(c), 0);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* gx_request_add_input_data: the caller's buffer, checked against its dtype
 * and shape, read by every submit. */
START_TEST(test_input_from_caller_buffer)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_affine_graph(4);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    float x[4] = {1, 2, 3, 4};
    int64_t shape[2] = {1, 4}, deep[GX_MAX_DIMS + 1] = {1, 4, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_F32, 2, shape, x, sizeof x - 4), GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_F64, 2, shape, x, sizeof x), GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_DTYPE_COUNT, 2, shape, x, sizeof x), GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_F32, GX_MAX_DIMS + 1, deep, x, sizeof x),
                     GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_F32, 2, shape, NULL, sizeof x), GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "", GX_F32, 2, shape, x, sizeof x), GX_EINVAL);
    ck_assert_int_eq(gx_request_add_input_data(rq, "x", GX_F32, 2, shape, x, sizeof x), GX_OK);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    s_check_affine(r, 4, 1.0f);
    gx_result_destroy(&r);
    for (int i = 0; i < 4; i++)
        x[i] = 10.0f + (float)i;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    s_check_affine(r, 4, 10.0f);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A daemon on one worker with shutdown_grace_ms set to grace. */
static void s_daemon_grace(gxt_daemon *d, int grace)
{
    char yaml[64];
    snprintf(yaml, sizeof yaml, "shutdown_grace_ms: %d\n", grace);
    gxt_daemon_start_yaml(d, yaml, (const char *[]){"--cpus", "0", NULL});
}

/* SIGTERM: a running job finishes (the grace period is long), queued jobs
 * are answered GX_ESHUTDOWN, a running job past the grace period is
 * cancelled, and the daemon exits 0. No step depends on timing: the
 * finished job was running when the signal came (workers_busy), and the
 * queued ones sit behind a job that cannot end by itself. */
START_TEST(test_sigterm_answers_every_job)
{
    gxt_daemon d;
    s_daemon_grace(&d, 3600000);
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    slow_job s;
    s_slow_init(&s, 10);
    gx_job *job = NULL;
    ck_assert_int_eq(gx_client_submit(c, s.rq, &job), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");
    kill(d.pid, SIGTERM);
    ck_assert_int_eq(gx_job_wait(job, 600000, NULL), GX_OK); /* the running job finished */
    gx_job_destroy(&job);
    s_slow_fini(&s);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0); /* exit status 0 */

    s_daemon_grace(&d, 0);
    c = gxt_client(&d);
    watch = gxt_client(&d);
    gxt_endless en;
    gxt_endless_init(&en);
    gx_job *jobs[4];
    ck_assert_int_eq(gx_client_submit(c, en.rq, &jobs[0]), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");
    for (int i = 1; i < 4; i++)
        ck_assert_int_eq(gx_client_submit(c, en.rq, &jobs[i]), GX_OK);
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* all four are in */
    kill(d.pid, SIGTERM);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_job_wait(jobs[0], 600000, &r), GX_ECANCELLED); /* grace 0: cancelled */
    gx_result_destroy(&r);
    for (int i = 1; i < 4; i++) /* the queued ones were told */
        ck_assert_int_eq(gx_job_wait(jobs[i], 600000, NULL), GX_ESHUTDOWN);
    for (int i = 0; i < 4; i++)
        gx_job_destroy(&jobs[i]);
    gxt_endless_fini(&en);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A client that disconnects: its queued jobs are dropped, its running one
 * is cancelled at its next step, STATS counts both, and the one worker is
 * free for other clients. Synchronised on STATS, no sleep decides: the
 * running job is one that cannot end by itself. */
START_TEST(test_disconnect_drops_jobs)
{
    gxt_daemon d;
    s_daemon_grace(&d, 0); /* one worker */
    gx_client *c = gxt_client(&d), *watch = gxt_client(&d);
    gxt_endless en;
    gxt_endless_init(&en);
    gx_job *jobs[4];
    ck_assert_int_eq(gx_client_submit(c, en.rq, &jobs[0]), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");
    for (int i = 1; i < 4; i++)
        ck_assert_int_eq(gx_client_submit(c, en.rq, &jobs[i]), GX_OK);
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* all four are in */
    gxt_wait_stats(watch, "\"queue_length\":3");
    gx_client_destroy(&c); /* goes away without waiting for its jobs */
    for (int i = 0; i < 4; i++)
        gx_job_destroy(&jobs[i]);
    gxt_wait_stats(watch, "\"disconnected_dropped\":3");
    gxt_wait_stats(watch, "\"disconnected_cancelled\":1");
    gxt_wait_stats(watch, "\"workers_busy\":0");
    gxt_wait_stats(watch, "\"queue_length\":0");

    /* the worker serves the next client */
    gx_graph *a = s_affine_graph(4);
    gx_tensor *ax = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){1, 4}, (float[]){1, 2, 3, 4}, 16);
    gx_request *arq = gx_request_new();
    gx_request_set_graph(arq, a);
    gx_request_add_input(arq, "x", ax);
    gx_result *r = NULL;
    ck_assert_msg(gx_client_run(watch, arq, &r) == GX_OK, "%s", gx_client_last_error(watch));
    ck_assert(gxt_allclose(gx_tensor_cdata(gx_result_output(r, 0)), (float[]){3, 5, 7, 9}, 4, 0,
                           0));
    gx_result_destroy(&r);
    gx_request_destroy(&arq);
    gx_tensor_destroy(&ax);
    gx_graph_destroy(&a);
    gxt_endless_fini(&en);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A client that hangs (SIGSTOP) with a job running answers no heartbeat:
 * after client_heartbeat_ms x 3 gexecd disconnects it and cancels the
 * job. Synchronised on waitpid and STATS: however slow the machine, the
 * stopped client cannot answer. */
START_TEST(test_hung_client_is_dropped)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "client_heartbeat_ms: 50\n", (const char *[]){"--cpus", "0", NULL});
    /* The client process first, forked while this process has no other
     * thread (no client of its own yet): a child of a threaded parent
     * inherits the locks the other threads held at the fork, and under
     * ASan one is the allocator's, so the child's ZeroMQ thread could
     * block for good before its connection's handshake (its job and PING
     * never reach gexecd). ThreadSanitizer runs a thread of its own. */
#if defined(__SANITIZE_THREAD__)
    ck_assert_int_le(gxt_threads(), 2);
#else
    ck_assert_int_eq(gxt_threads(), 1);
#endif
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* the client: an endless job in, then it hangs */
        char err[256];
        gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
        gxt_endless en;
        gxt_endless_init(&en);
        gx_job *job = NULL;
        if (!c || gx_client_submit(c, en.rq, &job) != GX_OK || gx_client_ping(c) != GX_OK)
            _exit(1);
        raise(SIGSTOP);
        _exit(2); /* not reached: the test kills it */
    }
    gx_client *watch = gxt_client(&d);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, WUNTRACED), pid);
    ck_assert_msg(WIFSTOPPED(st), "the client failed before it hung (status %d)", st);
    gxt_wait_stats(watch, "\"disconnected_cancelled\":1");
    gxt_wait_stats(watch, "\"workers_busy\":0");
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_gexec_submit_cli)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char *dir = gxt_tmpdir(), out[8192], path[512], mlp[512], input[512];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    snprintf(mlp, sizeof mlp, "%s", gxt_srcpath("examples/mlp.yaml"));
    snprintf(input, sizeof input, "%s", gxt_srcpath("examples/mlp_input.npy"));
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --socket %s ping", bin, d.endpoint), 0);
    ck_assert_ptr_nonnull(strstr(out, "pong"));
    int rc = gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s -o %s/out --repeat 20 2>&1", bin,
                  d.endpoint, mlp, input,
                  dir);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "ran: mode=")); /* auto: whatever measured times say */
    ck_assert_ptr_nonnull(strstr(out, "p50="));
    ck_assert_ptr_nonnull(strstr(out, "p99="));
    snprintf(path, sizeof path, "%s/out/y.npy", dir);
    gx_tensor *y = NULL;
    char err[256];
    ck_assert_msg(gx_npy_load(path, &y, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(gx_tensor_numel(y), 3);
    const float *p = gx_tensor_cdata(y);
    ck_assert_float_eq_tol(p[0] + p[1] + p[2], 1.0f, 1e-5f); /* softmax */
    gx_tensor_destroy(&y);

    /* a requested mode, reported by name (auto's choice follows measured
     * times, which a sanitizer's clock changes) */
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s --mode seq --json", bin,
                          d.endpoint, mlp, input),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "\"mode\":\"seq\""));
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --socket %s stats --json", bin, d.endpoint), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"runs_ok\":"));

    /* failures: one line, non-zero exit */
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s --output nope 2>&1", bin,
                          d.endpoint, mlp,
                          input),
                     0);
    ck_assert_msg(strstr(out, "GX_EGRAPH") && strstr(out, "'nope'"), "%s", out);
    ck_assert_ptr_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --socket %s run /nonexistent.yaml 2>&1", bin, d.endpoint), 0);
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --socket %s run %s 2>&1", bin, d.endpoint,
                          mlp),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "missing input 'x'"));
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --socket ipc://%s/none.sock --timeout 300 ping 2>&1",
                          bin, dir),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "no reply"));
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s frobnicate 2>&1", bin), 0);

    gxt_rmtree(dir);
    free(dir);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* Every RUN reply says how the job ran and why: the mode used (never
 * auto), its workers and replicas, a reason, and the policy's estimates
 * (seq's at least, none for auto). A requested fixed mode either runs in
 * that mode, with correct results, or is refused with GX_EUNSUPPORTED. */
START_TEST(test_run_info_reports_mode_choice)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_affine_graph(64);
    gx_tensor *x = s_fill(64, -5.0f);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;

    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    s_check_affine(r, 64, -5.0f);
    const gx_run_info *info = gx_result_info(r);
    gx_mode used;
    ck_assert_msg(gx_mode_parse(info->mode, &used) == GX_OK && used != GX_MODE_AUTO,
                  "mode '%s'", info->mode);
    ck_assert_int_ge(info->workers, 1);
    ck_assert_int_ge(info->replicas, 1);
    ck_assert_str_ne(info->reason, "");
    ck_assert_msg(info->est_us[GX_MODE_SEQ] >= 0, "no estimate for seq (%g)", info->est_us[GX_MODE_SEQ]);
    ck_assert_msg(info->est_us[used] >= 0, "no estimate for the mode chosen, %s", info->mode);
    ck_assert(info->est_us[GX_MODE_AUTO] < 0);
    gx_result_destroy(&r);

    for (int m = GX_MODE_SEQ; m < GX_MODE_COUNT; m++) {
        ck_assert_int_eq(gx_request_set_mode(rq, (gx_mode)m), GX_OK);
        int rc = gx_client_run(c, rq, &r);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(rc == GX_OK, "mode %s: %s", gx_mode_name((gx_mode)m), gx_result_message(r));
        s_check_affine(r, 64, -5.0f);
        info = gx_result_info(r);
        /* the requested mode ran; inter+replica on one copy is inter */
        ck_assert_str_eq(info->mode, gx_mode_name(m == GX_MODE_INTER_REPLICA && info->replicas == 1
                                                      ? GX_MODE_INTER
                                                      : (gx_mode)m));
        ck_assert_int_ge(info->workers, 1);
        ck_assert_int_ge(info->replicas, 1);
        ck_assert_str_ne(info->reason, "");
        ck_assert(info->est_us[GX_MODE_SEQ] >= 0); /* reported when a mode is requested too */
        gx_result_destroy(&r);
    }

    /* refused before it was queued: no run map, the defaults */
    gx_request *bad = gx_request_new();
    gx_request_set_graph(bad, g);
    ck_assert_int_eq(gx_client_run(c, bad, &r), GX_EGRAPH);
    ck_assert_int_eq(gx_result_info(r)->replicas, 1);
    for (int m = 0; m < GX_MODE_COUNT; m++)
        ck_assert(gx_result_info(r)->est_us[m] < 0);
    gx_result_destroy(&r);
    gx_request_destroy(&bad);

    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* gexec-submit run --explain-mode prints the mode used, its workers,
 * replicas and reason, and the estimates (the chosen mode marked), also in
 * --json; --mode accepts every mode and names them all on a bad one. */
START_TEST(test_gexec_submit_explain_mode)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char out[8192], mlp[512], input[512];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    snprintf(mlp, sizeof mlp, "%s", gxt_srcpath("examples/mlp.yaml"));
    snprintf(input, sizeof input, "%s", gxt_srcpath("examples/mlp_input.npy"));

    int rc = gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s --explain-mode 2>&1", bin,
                    d.endpoint, mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "(requested auto)") && strstr(out, "why: ") &&
                      strstr(out, " replica") && strstr(out, " worker"),
                  "%s", out);
    ck_assert_msg(strstr(out, "estimates (") != NULL, "no estimates table: %s", out);
    for (int m = GX_MODE_SEQ; m < GX_MODE_COUNT; m++) /* one row a mode */
        ck_assert_msg(strstr(out, gx_mode_name((gx_mode)m)) != NULL, "no %s: %s",
                      gx_mode_name((gx_mode)m), out);
    ck_assert_msg(strstr(out, "<- chosen") != NULL, "%s", out);

    rc = gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s --mode seq --explain-mode --json 2>&1",
                bin, d.endpoint, mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"requested_mode\":\"seq\",\"mode\":\"seq\"") &&
                      strstr(out, "\"replicas\":1") && strstr(out, "\"estimates\":{\"seq\":"),
                  "%s", out);

    /* a bad mode: one line listing every mode, before anything is sent */
    rc = gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s --mode warp 2>&1", bin, d.endpoint,
                mlp, input);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "unknown mode 'warp'") != NULL, "%s", out);
    for (int m = 0; m < GX_MODE_COUNT; m++)
        ck_assert_msg(strstr(out, gx_mode_name((gx_mode)m)) != NULL, "no %s: %s",
                      gx_mode_name((gx_mode)m), out);
    ck_assert_ptr_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --help", bin), 0);
    ck_assert_msg(strstr(out, "inter+replica") && strstr(out, "--explain-mode"), "%s", out);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_daemon_start_errors)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char out[8192];
    const char *bin = GX_TEST_BUILDDIR "/daemon/gexecd";
    /* a second daemon on the same socket refuses to steal it */
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --foreground --socket %s 2>&1", bin, d.endpoint), 0);
    ck_assert_ptr_nonnull(strstr(out, "another gexecd"));
    gx_client *c = gxt_client(&d);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gx_client_destroy(&c);

    /* a bad config is refused with file:line:column */
    char *dir = gxt_tmpdir(), conf[512];
    snprintf(conf, sizeof conf, "%s/bad.yaml", dir);
    FILE *f = fopen(conf, "w");
    fputs("queue:\n  max_jobs: lots\n", f);
    fclose(f);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --foreground --config %s --socket ipc://%s/s 2>&1", bin,
                          conf, dir),
                     2);
    ck_assert_msg(strstr(out, "bad.yaml:2:") != NULL, "%s", out);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --foreground --cpus 0-x --socket ipc://%s/s 2>&1", bin, dir), 2);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --print-config", bin), 0);
    ck_assert_ptr_nonnull(strstr(out, "max_jobs"));
    gxt_rmtree(dir);
    free(dir);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The whole of a file (NUL-terminated; "" when it cannot be read). */
static char *s_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(buf);
    if (f) {
        size_t n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

/* Has process pid (not a child of ours) exited? Gone, or a zombie its new
 * parent has not reaped yet. */
static bool s_gone(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return !paren || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X';
}

/* logrotate: a detached gexecd writes to log_file; once the file is moved
 * away, SIGHUP makes it open the path again, so the reload's lines are in
 * a new file and the moved one keeps what came before. */
START_TEST(test_log_file_reopen)
{
    char *dir = gxt_tmpdir(), conf[512], log[512], moved[520], ep[512], out[8192], err[256];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    snprintf(log, sizeof log, "%s/gexecd.log", dir);
    snprintf(moved, sizeof moved, "%s.1", log);
    snprintf(ep, sizeof ep, "ipc://%s/s", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "log_file: %s\nprofile:\n  dir: \"\"\n", log);
    fclose(f);
    /* detached: the parent exits 0 once the daemon serves */
    ck_assert_msg(gxt_sh(out, sizeof out, "%s -c %s --socket %s 2>&1", s_gexecd_bin(), conf, ep) == 0,
                  "%s", out);
    gx_client *c = gx_client_new(ep, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    char *before = s_slurp(log);
    const char *at = strstr(before, "gexecd[");
    ck_assert_msg(at != NULL, "log: %s", before);
    pid_t pid = (pid_t)atoi(at + strlen("gexecd["));
    ck_assert_int_gt(pid, 1);
    ck_assert_int_eq(rename(log, moved), 0);
    ck_assert_int_eq(kill(pid, SIGHUP), 0);
    gxt_wait_stats(c, "\"config_reloads\":1");
    char *now = s_slurp(log), *old = s_slurp(moved);
    ck_assert_msg(strstr(now, "SIGHUP: reading") && strstr(now, "reload done"), "new log: %s", now);
    ck_assert_msg(!strstr(old, "SIGHUP") && strstr(old, "gexecd["), "moved log: %s", old);
    gx_client_destroy(&c);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    while (!s_gone(pid)) /* not our child: wait until it is gone */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    free(before);
    free(now);
    free(old);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_tcp_endpoint_defaults_to_loopback)
{
    char given[64], ep[64];
    int port = 20000 + (int)(getpid() % 20000);
    snprintf(given, sizeof given, "tcp://:%d", port);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"--tcp", given, NULL});
    char err[256];
    gx_client *c = gx_client_new(ep, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 5000);
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *e2e_suite(void)
{
    Suite *s = suite_create("e2e");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_mlp_example_matches_reference, 0, S_TRANSPORTS);
    tcase_add_loop_test(tc, test_broadcast_example, 0, S_TRANSPORTS);
    tcase_add_test(tc, test_load_shares_one_plan);
    tcase_add_test(tc, test_many_clients_every_job_answered_once);
    tcase_add_test(tc, test_cancel_queued_and_running);
    tcase_add_test(tc, test_deadline_and_queue_full);
    tcase_add_test(tc, test_sigterm_answers_every_job);
    tcase_add_test(tc, test_disconnect_drops_jobs);
    tcase_add_test(tc, test_hung_client_is_dropped);
    tcase_add_test(tc, test_outputs_every_way);
    tcase_add_test(tc, test_input_from_caller_buffer);
    tcase_add_test(tc, test_clean_stop_removes_socket);
    tcase_add_test(tc, test_socket_permission_reported);
    tcase_add_test(tc, test_socket_live_and_stale);
    tcase_add_test(tc, test_socket_private_dir);
    tcase_add_test(tc, test_memory_budget);
    tcase_add_test(tc, test_log_file_reopen);
    tcase_add_test(tc, test_replica_slices_counted);
    tcase_add_test(tc, test_gexec_submit_cli);
    tcase_add_test(tc, test_run_info_reports_mode_choice);
    tcase_add_test(tc, test_gexec_submit_explain_mode);
    tcase_add_test(tc, test_daemon_start_errors);
    tcase_add_test(tc, test_tcp_endpoint_defaults_to_loopback);
    suite_add_tcase(s, tc);
    return s;
}
