/*
 * The background re-plan (daemon/models.h): plans held by the jobs that run
 * them (gxd_plan_ref), compiled with the model's profile, swapped by the
 * re-planner thread when the stale question says so while jobs hold the old
 * plan, the old plan's counters folded into the profile when it is freed,
 * one compile at a time per plan, errors keeping the old plan, and a real
 * gexecd checking every 10 ms while answering a stream of jobs.
 *
 * The layout pass's real question (gxd_plan_layout_stale) says "stale" only
 * when the profile changes a layout decision; these tests put their own in
 * the registry (gxd_models.replan.stale) and, to watch the compiles,
 * their own compiler (gxd_models.compile) that calls gxd_compile.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "daemon/job.h"
#include "daemon/models.h"
#include "daemon/profile.h"
#include "gexec/client.h"
#include "tests/testutil.h"

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

#define S_N 32 /* elements of the input [4, 8] */

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

/* y = (x + 1) * 2, x [N, 8] */
static gx_graph *s_graph(void)
{
    gx_graph *g = gx_graph_new("replan");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 8}), GX_OK);
    gxt_const(g, "one", GX_F32, 0, NULL, (float[]){1});
    gxt_const(g, "two", GX_F32, 0, NULL, (float[]){2});
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Add", "add", NAMES("x", "one"), NAMES("t")));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Mul", "mul", NAMES("t", "two"), NAMES("y")));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static gx_view s_view(float *x)
{
    gx_view v = {.dtype = GX_F32, .ndim = 2, .shape = {4, 8}, .numel = S_N, .data = x};
    return v;
}

/* One job on plan: x filled from seed, y checked. */
static void s_exec(gxd_plan *plan, float seed)
{
    char err[512];
    float x[S_N];
    for (int i = 0; i < S_N; i++)
        x[i] = seed + (float)i;
    gx_view in[1] = {s_view(x)};
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, plan, arena, in, &s_lim, &stop, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
    const gx_view *y = gxd_frame_output(&f, 0);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->numel, S_N);
    for (int i = 0; i < S_N; i++)
        ck_assert_float_eq(((const float *)y->data)[i], (x[i] + 1) * 2);
    gxd_frame_fini(&f);
    free(arena);
}

/* A job's plan from the model, as the workers get it. */
static gxd_plan *s_plan(gxd_model *mdl)
{
    char err[512];
    float x[S_N] = {0};
    gx_view in[1] = {s_view(x)};
    gxd_plan *p = NULL;
    int64_t us;
    ck_assert_msg(gxd_model_plan(mdl, in, &s_lim, &p, &us, err, sizeof err) == GX_OK, "%s", err);
    return p;
}

static int64_t s_jobs(gxd_model *mdl)
{
    gxd_profile *p = gxd_model_profile(mdl, false);
    ck_assert_ptr_nonnull(p);
    int64_t n = p->jobs;
    gxd_profile_destroy(&p);
    return n;
}

/* ---- the injected question and compiler ---------------------------------- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stale;             /* answers "stale" left; < 0: always */
    int asked;
    int compiles;          /* calls of s_compile */
    int in_compile, most_at_once;
    bool hold;             /* s_compile waits while set */
    bool fail;             /* s_compile fails */
    bool had_profile;      /* the last compile's lim->profile was set */
    int64_t profile_jobs;  /* its jobs */
} s_t = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void s_reset(int stale)
{
    pthread_mutex_lock(&s_t.mu);
    s_t.stale = stale;
    s_t.asked = s_t.compiles = s_t.in_compile = s_t.most_at_once = 0;
    s_t.hold = s_t.fail = s_t.had_profile = false;
    s_t.profile_jobs = -1;
    pthread_mutex_unlock(&s_t.mu);
}

static bool s_stale(const gxd_plan *p, const struct gxd_profile *prof, char *why, size_t len)
{
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(prof);
    pthread_mutex_lock(&s_t.mu);
    s_t.asked++;
    bool yes = s_t.stale != 0;
    if (s_t.stale > 0)
        s_t.stale--;
    pthread_mutex_unlock(&s_t.mu);
    if (yes)
        snprintf(why, len, "test: told so after %lld jobs", (long long)prof->jobs);
    return yes;
}

static int s_compile(const gx_graph *g, const gx_view *inputs, const gxd_compile_limits *lim,
                     gxd_plan **out, char *err, size_t errlen)
{
    pthread_mutex_lock(&s_t.mu);
    s_t.compiles++;
    if (++s_t.in_compile > s_t.most_at_once)
        s_t.most_at_once = s_t.in_compile;
    s_t.had_profile = lim->profile != NULL;
    s_t.profile_jobs = lim->profile ? lim->profile->jobs : -1;
    pthread_cond_broadcast(&s_t.cv); /* a test waits for the compile to start */
    while (s_t.hold)
        pthread_cond_wait(&s_t.cv, &s_t.mu);
    bool fail = s_t.fail;
    pthread_mutex_unlock(&s_t.mu);
    int rc = fail ? gx_errf(err, errlen, GX_EINTERNAL, "injected compile failure")
                  : gxd_compile(g, inputs, lim, out, err, errlen);
    pthread_mutex_lock(&s_t.mu);
    s_t.in_compile--;
    pthread_cond_broadcast(&s_t.cv);
    pthread_mutex_unlock(&s_t.mu);
    return rc;
}

/* A registry with the injected question and compiler, the re-planner
 * started with min_jobs, and one model of s_graph. */
static gxd_model *s_setup(gxd_models *m, int64_t min_jobs)
{
    gxd_models_init(m, 4);
    m->replan.stale = s_stale;
    m->compile = s_compile;
    ck_assert_int_eq(gxd_models_replan_start(m, &s_lim, min_jobs), GX_OK);
    gx_graph *g = s_graph();
    gxd_model *mdl = NULL;
    ck_assert_int_eq(gxd_models_add(m, &g, &mdl, NULL, 0), GX_OK);
    return mdl;
}

static void s_check_now(gxd_models *m)
{
    gxd_models_replan_tick(m);
    gxd_models_replan_wait(m);
}

/* ---- tests ----------------------------------------------------------------- */

/* A plan lives until its last holder lets go. */
START_TEST(test_plan_refs)
{
    char err[512];
    float x[S_N] = {0};
    gx_view in[1] = {s_view(x)};
    gx_graph *g = s_graph();
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_OK);
    ck_assert_int_eq(atomic_load(&p->refs), 0);
    gxd_plan *q = gxd_plan_ref(p);
    ck_assert_ptr_eq(q, p);
    ck_assert_int_eq(atomic_load(&p->refs), 1);
    gxd_plan_release(&p);
    ck_assert_ptr_null(p);
    s_exec(q, 3); /* still valid for the other holder (ASan would say otherwise) */
    gxd_plan_release(&q); /* the last: freed (LeakSanitizer checks) */
    ck_assert_ptr_null(q);
    gxd_plan_release(&q); /* NULL is fine */
    gx_graph_destroy(&g);
}
END_TEST

/* The job path compiles with the model's profile: the base (a restart's
 * file) from the first compile on, plus the live counters of its plans;
 * without any count, no profile (every node runs once). */
START_TEST(test_compile_uses_profile)
{
    gxd_models m;
    s_reset(0);
    gxd_models_init(&m, 4);
    m.compile = s_compile;
    gx_graph *g = s_graph();
    gxd_model *mdl = NULL;
    ck_assert_int_eq(gxd_models_add(&m, &g, &mdl, NULL, 0), GX_OK);
    gxd_plan *p = s_plan(mdl);
    ck_assert_int_eq(s_t.compiles, 1);
    ck_assert(!s_t.had_profile); /* nothing ran, no file */
    gxd_plan_release(&p);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);

    /* as if loaded from a file: 7 jobs ran "add" and "mul" */
    s_reset(0);
    gxd_models_init(&m, 4);
    m.compile = s_compile;
    g = s_graph();
    ck_assert_int_eq(gxd_models_add(&m, &g, &mdl, NULL, 0), GX_OK);
    ck_assert_ptr_null(mdl->profile);
    mdl->profile = gxd_profile_new(mdl->id.hex);
    mdl->profile->jobs = 7;
    ck_assert_int_eq(gxd_profile_add(mdl->profile, "add", 7, 1000), GX_OK);
    ck_assert_int_eq(gxd_profile_add(mdl->profile, "mul", 7, 1000), GX_OK);
    gxd_profile_finish(mdl->profile);
    p = s_plan(mdl);
    ck_assert(s_t.had_profile);
    ck_assert_int_eq(s_t.profile_jobs, 7);
    for (int i = 0; i < 3; i++)
        s_exec(p, (float)i);
    /* another signature: base plus the 3 jobs of the first plan */
    char err[512];
    float x[2 * 8] = {0};
    gx_view in[1] = {{.dtype = GX_F32, .ndim = 2, .shape = {2, 8}, .numel = 16, .data = x}};
    gxd_plan *q = NULL;
    int64_t us;
    ck_assert_msg(gxd_model_plan(mdl, in, &s_lim, &q, &us, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_ptr_ne(q, p);
    ck_assert_int_eq(s_t.compiles, 2);
    ck_assert_int_eq(s_t.profile_jobs, 10);
    ck_assert_int_eq(s_jobs(mdl), 10);
    gxd_plan_release(&q);
    gxd_plan_release(&p);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
}
END_TEST

/* The re-planner swaps a stale plan while a job holds the old one: the old
 * one stays valid until released, later lookups get the new one, compiled
 * with the profile of the jobs so far, and no job's count is lost. */
START_TEST(test_swap_while_running)
{
    gxd_models m;
    s_reset(1);
    gxd_model *mdl = s_setup(&m, 3);
    gxd_plan *old = s_plan(mdl); /* a "running job" holds it */
    ck_assert_int_eq(s_t.compiles, 1);
    s_exec(old, 1);
    s_exec(old, 2);
    s_check_now(&m); /* 2 jobs < 3: not even asked */
    ck_assert_int_eq(s_t.asked, 0);
    ck_assert_int_eq(atomic_load(&m.replan.checks), 0);
    s_exec(old, 3);
    s_check_now(&m);
    ck_assert_int_eq(s_t.asked, 1);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 1);
    ck_assert_int_eq(s_t.compiles, 2);
    ck_assert(s_t.had_profile);
    ck_assert_int_eq(s_t.profile_jobs, 3);
    ck_assert_uint_eq(mdl->n_plans, 1);
    ck_assert_uint_eq(mdl->n_retired, 1);

    gxd_plan *fresh = s_plan(mdl);
    ck_assert_ptr_ne(fresh, old);
    ck_assert_int_eq(s_t.compiles, 2); /* a cache hit */
    s_exec(old, 4); /* the job still runs the old plan */
    s_exec(fresh, 5);
    ck_assert_int_eq(s_jobs(mdl), 5); /* old 4 + new 1 */
    ck_assert_uint_eq(mdl->n_retired, 1);
    gxd_plan_release(&old); /* the job finishes: the next fold frees it */
    ck_assert_int_eq(s_jobs(mdl), 5);
    ck_assert_uint_eq(mdl->n_retired, 0);
    ck_assert_ptr_nonnull(mdl->profile);
    ck_assert_int_eq(mdl->profile->jobs, 4); /* folded into the base */
    ck_assert_int_eq(gxd_profile_find(mdl->profile, "add")->runs, 4);

    /* the question said "stale" once: later checks keep the plan */
    for (int i = 0; i < 3; i++)
        s_exec(fresh, 6);
    s_check_now(&m);
    ck_assert_int_eq(s_t.asked, 2);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 1);
    gxd_plan *again = s_plan(mdl);
    ck_assert_ptr_eq(again, fresh);
    gxd_plan_release(&again);
    gxd_plan_release(&fresh);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
}
END_TEST

/* While a re-plan compiles, jobs are served the old plan without waiting,
 * ticks do not queue the model again, and no second compile starts. */
START_TEST(test_one_compile_at_a_time)
{
    gxd_models m;
    s_reset(-1);
    gxd_model *mdl = s_setup(&m, 1);
    gxd_plan *old = s_plan(mdl);
    s_exec(old, 1);
    pthread_mutex_lock(&s_t.mu);
    s_t.hold = true;
    pthread_mutex_unlock(&s_t.mu);
    gxd_models_replan_tick(&m);
    pthread_mutex_lock(&s_t.mu);
    while (s_t.in_compile == 0)
        pthread_cond_wait(&s_t.cv, &s_t.mu);
    pthread_mutex_unlock(&s_t.mu);
    for (int i = 0; i < 5; i++) {
        gxd_models_replan_tick(&m);
        gxd_plan *p = s_plan(mdl); /* not blocked by the compile */
        ck_assert_ptr_eq(p, old);
        s_exec(p, (float)i);
        gxd_plan_release(&p);
    }
    ck_assert_int_eq(s_t.compiles, 2);
    pthread_mutex_lock(&s_t.mu);
    s_t.hold = false;
    pthread_cond_broadcast(&s_t.cv);
    pthread_mutex_unlock(&s_t.mu);
    gxd_models_replan_wait(&m);
    ck_assert_int_eq(s_t.compiles, 2);
    ck_assert_int_eq(s_t.most_at_once, 1);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 1);
    gxd_plan *fresh = s_plan(mdl);
    ck_assert_ptr_ne(fresh, old);
    gxd_plan_release(&fresh);
    gxd_plan_release(&old);
    ck_assert_int_eq(s_jobs(mdl), 6);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
}
END_TEST

/* A failed compile is counted, and the old plan keeps serving. */
START_TEST(test_error_keeps_plan)
{
    gxd_models m;
    s_reset(-1);
    gxd_model *mdl = s_setup(&m, 1);
    gxd_plan *old = s_plan(mdl);
    s_exec(old, 1);
    s_t.fail = true;
    s_check_now(&m);
    ck_assert_int_eq(s_t.compiles, 2);
    ck_assert_int_eq(atomic_load(&m.replan.failures), 1);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 0);
    ck_assert_uint_eq(mdl->n_retired, 0);
    gxd_plan *p = s_plan(mdl);
    ck_assert_ptr_eq(p, old);
    s_exec(p, 2);
    gxd_plan_release(&p);
    /* the next check, after more jobs, tries again and succeeds */
    s_t.fail = false;
    s_check_now(&m);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 1);
    gxd_plan_release(&old);
    ck_assert_int_eq(s_jobs(mdl), 2);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
}
END_TEST

/* Shutdown while a re-plan compiles and the model is dropped from the
 * registry's user: the compile finishes first, nothing leaks. */
static void *s_unhold_later(void *arg)
{
    (void)arg;
    usleep(50 * 1000);
    pthread_mutex_lock(&s_t.mu);
    s_t.hold = false;
    pthread_cond_broadcast(&s_t.cv);
    pthread_mutex_unlock(&s_t.mu);
    return NULL;
}

START_TEST(test_fini_while_busy)
{
    gxd_models m;
    s_reset(-1);
    gxd_model *mdl = s_setup(&m, 1);
    gxd_plan *p = s_plan(mdl);
    s_exec(p, 1);
    gxd_plan_release(&p);
    gxd_model_release(&mdl);
    pthread_mutex_lock(&s_t.mu);
    s_t.hold = true;
    pthread_mutex_unlock(&s_t.mu);
    gxd_models_replan_tick(&m);
    pthread_mutex_lock(&s_t.mu);
    while (s_t.in_compile == 0)
        pthread_cond_wait(&s_t.cv, &s_t.mu);
    pthread_mutex_unlock(&s_t.mu);
    gxd_models_replan_tick(&m); /* already queued: nothing */
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, s_unhold_later, NULL), 0);
    gxd_models_fini(&m); /* waits for the compile */
    pthread_join(th, NULL);
    ck_assert(!m.replan.started);
    ck_assert_int_eq(s_t.in_compile, 0);
    ck_assert_int_eq(atomic_load(&m.replan.replans), 1);
}
END_TEST

/* Workers run jobs on 4 threads while the re-planner swaps the plan as
 * often as it can: every job's result is right, and every job is counted
 * once in the profile (no retired plan's counts lost). */
typedef struct s_worker {
    gxd_model *mdl;
    int jobs;
} s_worker;

static void *s_worker_main(void *arg)
{
    s_worker *w = arg;
    for (int i = 0; i < w->jobs; i++) {
        gxd_plan *p = s_plan(w->mdl);
        s_exec(p, (float)i);
        if (i % 7 == 0)
            usleep(200); /* hold the plan a while */
        gxd_plan_release(&p);
    }
    return NULL;
}

START_TEST(test_stress)
{
    gxd_models m;
    s_reset(-1);
    gxd_model *mdl = s_setup(&m, 1);
    enum { NW = 4, JOBS = 300 };
    pthread_t th[NW];
    s_worker w[NW];
    for (int i = 0; i < NW; i++) {
        w[i] = (s_worker){mdl, JOBS};
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_worker_main, &w[i]), 0);
    }
    for (int k = 0; k < 200; k++) {
        gxd_models_replan_tick(&m);
        usleep(1000);
    }
    for (int i = 0; i < NW; i++)
        pthread_join(th[i], NULL);
    gxd_models_replan_wait(&m);
    ck_assert_int_gt(atomic_load(&m.replan.replans), 1);
    ck_assert_int_eq(atomic_load(&m.replan.failures), 0);
    ck_assert_int_eq(s_jobs(mdl), NW * JOBS);
    ck_assert_uint_eq(mdl->n_retired, 0); /* nobody holds an old plan any more */
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
}
END_TEST

/* A real gexecd checking its graphs every 10 ms after every job: a stream
 * of pipelined jobs from 3 clients is answered exactly once each, with the
 * right result; it shuts down cleanly. */
typedef struct s_client {
    const char *endpoint;
    const gx_graph *g;
    int base, ok;
} s_client;

static void *s_client_main(void *arg)
{
    s_client *c = arg;
    enum { JOBS = 120, INFLIGHT = 8 };
    char err[256];
    gx_client *cl = gx_client_new(c->endpoint, err, sizeof err);
    if (!cl)
        return NULL;
    gx_job *jobs[JOBS] = {0};
    for (int i = 0; i < JOBS + INFLIGHT; i++) {
        if (i < JOBS) {
            float x[S_N];
            for (int k = 0; k < S_N; k++)
                x[k] = (float)(c->base + i * S_N + k);
            gx_tensor *t = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){4, 8}, x, sizeof x);
            gx_request *rq = gx_request_new();
            gx_request_set_graph(rq, c->g);
            gx_request_add_input(rq, "x", t);
            if (gx_client_submit(cl, rq, &jobs[i]) != GX_OK)
                jobs[i] = NULL;
            gx_request_destroy(&rq);
            gx_tensor_destroy(&t);
        }
        int w = i - INFLIGHT;
        if (w < 0 || !jobs[w])
            continue;
        gx_result *r = NULL;
        if (gx_job_wait(jobs[w], 30000, &r) == GX_OK && gx_result_output_count(r) == 1) {
            const float *y = gx_tensor_cdata(gx_result_output(r, 0));
            bool right = true;
            for (int k = 0; k < S_N; k++)
                right = right && y[k] == ((float)(c->base + w * S_N + k) + 1) * 2;
            c->ok += right;
        }
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[w]);
    }
    gx_client_destroy(&cl);
    return NULL;
}

START_TEST(test_daemon)
{
    char *dir = gxt_tmpdir(), conf[4200];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "profile:\n  dir: \"%s/profiles\"\n"
               "compiler:\n  replan: true\n  replan_ms: 10\n  replan_min_jobs: 1\n",
            dir);
    fclose(f);
    const char *args[] = {"-c", conf, NULL};
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    gx_graph *g = s_graph();
    enum { NC = 3 };
    s_client c[NC];
    pthread_t th[NC];
    for (int i = 0; i < NC; i++) {
        c[i] = (s_client){d.endpoint, g, i * 100000, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_client_main, &c[i]), 0);
    }
    for (int i = 0; i < NC; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(c[i].ok, 120);
    }
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *replan_suite(void)
{
    Suite *s = suite_create("replan");
    TCase *tc = tcase_create("replan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_plan_refs);
    tcase_add_test(tc, test_compile_uses_profile);
    tcase_add_test(tc, test_swap_while_running);
    tcase_add_test(tc, test_one_compile_at_a_time);
    tcase_add_test(tc, test_error_keeps_plan);
    tcase_add_test(tc, test_fini_while_busy);
    tcase_add_test(tc, test_stress);
    tcase_add_test(tc, test_daemon);
    suite_add_tcase(s, tc);
    return s;
}
