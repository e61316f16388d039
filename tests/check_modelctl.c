/*
 * Model control against a real gexecd: LOAD under a name, RUN by name,
 * LIST, and UNLOAD while jobs of the graph are queued (none of them fails)
 * and with a large graph (its memory goes back: the daemon's RSS drops).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "core/json.h"
#include "tests/testutil.h"

/* One worker, no re-planner (it would hold graphs now and then), no tuning. */
static void s_start(gxt_daemon *d, char **dir)
{
    char conf[512];
    *dir = gxt_tmpdir();
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", *dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fputs("compiler:\n  replan: false\nprofile:\n  dir: \"\"\ntune:\n  mode: \"off\"\n", f);
    fclose(f);
    gxt_daemon_start(d, (const char *const[]){"-c", conf, "--cpus", "0", NULL});
}

static void s_stop(gxt_daemon *d, char **dir)
{
    ck_assert_int_eq(gxt_daemon_stop(d), 0);
    gxt_rmtree(*dir);
    free(*dir);
    *dir = NULL;
}

/* y = x * 3 on [1, 4] */
static gx_graph *s_triple(void)
{
    gx_graph *g = gx_graph_new("triple");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *k = gx_tensor_new(GX_F32, 0, NULL);
    *(float *)gx_tensor_data(k) = 3.0f;
    gx_graph_add_const(g, "k", &k);
    gx_graph_add_node(g, "Mul", "mul", 2, (const char *[]){"x", "k"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* The LIST entry of graph id (NULL when absent); j is the parsed list. */
static const gx_json *s_entry(const gx_json *j, const char *id)
{
    for (size_t i = 0; i < gx_json_len(j); i++)
        if (strcmp(gx_json_str(gx_json_get(gx_json_at(j, i), "graph_id"), ""), id) == 0)
            return gx_json_at(j, i);
    return NULL;
}

static gx_json *s_list(gx_client *c)
{
    char *json = NULL, err[128];
    ck_assert_int_eq(gx_client_list(c, &json), GX_OK);
    gx_json *j = gx_json_parse(json, err, sizeof err);
    ck_assert_msg(j && j->type == GX_JSON_ARR, "%s: %s", err, json);
    free(json);
    return j;
}

START_TEST(test_unload_under_queued_jobs)
{
    gxt_daemon d;
    char *dir;
    s_start(&d, &dir);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_triple();
    gx_graph_id id, other;
    ck_assert_int_eq(gx_client_load_named(c, g, "triple", &id), GX_OK);
    ck_assert_int_eq(gx_client_load_named(c, g, "bad name!", &other), GX_EPROTO);

    gx_json *j = s_list(c);
    const gx_json *e = s_entry(j, id.hex);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(gx_json_str(gx_json_get(e, "name"), ""), "triple");
    ck_assert_uint_eq(gx_json_len(gx_json_get(e, "inputs")), 1);
    ck_assert_str_eq(gx_json_str(gx_json_at(gx_json_get(e, "inputs"), 0), ""), "x");
    ck_assert_str_eq(gx_json_str(gx_json_at(gx_json_get(e, "outputs"), 0), ""), "y");
    gx_json_destroy(&j);

    /* the one worker is held by a job that runs until cancelled */
    gxt_hold h;
    gxt_hold_start(&h, c, c);

    /* five jobs of the graph, by name, wait behind it */
    enum { N = 5 };
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    for (int i = 0; i < 4; i++)
        ((float *)gx_tensor_data(x))[i] = (float)i;
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph_name(rq, "triple"), GX_OK);
    gx_request_add_input(rq, "x", x);
    gx_job *jobs[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(gx_client_submit(c, rq, &jobs[i]), GX_OK);
    j = s_list(c);
    e = s_entry(j, id.hex);
    ck_assert_ptr_nonnull(e);
    ck_assert_double_eq(gx_json_num(gx_json_get(e, "jobs"), -1), N);
    gx_json_destroy(&j);

    ck_assert_int_eq(gx_client_unload(c, "triple"), GX_OK);
    j = s_list(c);
    ck_assert_ptr_null(s_entry(j, id.hex));
    gx_json_destroy(&j);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_ENOTFOUND); /* by name: gone */
    gx_result_destroy(&r);
    ck_assert_int_eq(gx_client_unload(c, id.hex), GX_ENOTFOUND);

    /* the queued jobs run to their results once the worker is free */
    gxt_hold_release(&h);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(gx_job_wait(jobs[i], 30000, &r), GX_OK);
        const float *y = gx_tensor_cdata(gx_result_output(r, 0));
        for (int k = 0; k < 4; k++)
            ck_assert_float_eq(y[k], 3.0f * (float)k);
        gx_result_destroy(&r);
        gx_job_destroy(&jobs[i]);
    }
    /* loaded again, it runs by name again */
    ck_assert_int_eq(gx_client_load_named(c, g, "triple", &other), GX_OK);
    ck_assert_str_eq(other.hex, id.hex);
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    gx_result_destroy(&r);

    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    s_stop(&d, &dir);
}
END_TEST

/* VmRSS of pid in KiB. */
static long s_rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

START_TEST(test_unload_returns_memory)
{
    gxt_daemon d;
    char *dir;
    s_start(&d, &dir);
    gx_client *c = gxt_client(&d);
    /* y = Gather(w, i): a 128 MiB constant, one float out */
    enum { K = 32 * 1024 * 1024 };
    gx_graph *g = gx_graph_new("big");
    gx_graph_add_input(g, "i", GX_I64, 1, (int64_t[]){1});
    gx_tensor *w = gx_tensor_new(GX_F32, 1, (int64_t[]){K});
    float *p = gx_tensor_data(w);
    for (int64_t k = 0; k < K; k++)
        p[k] = (float)(k % 1000);
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_node(g, "Gather", "g", 2, (const char *[]){"w", "i"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load_named(c, g, "big", &id), GX_OK);
    gx_graph_destroy(&g);
    gx_tensor *i = gx_tensor_new(GX_I64, 1, (int64_t[]){1});
    *(int64_t *)gx_tensor_data(i) = 1234;
    gx_request *rq = gx_request_new();
    gx_request_set_graph_name(rq, "big");
    gx_request_add_input(rq, "i", i);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_float_eq(*(const float *)gx_tensor_cdata(gx_result_output(r, 0)), 234.0f);
    gx_result_destroy(&r);

    long before = s_rss_kib(d.pid);
    ck_assert_int_eq(gx_client_unload(c, "big"), GX_OK);
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* the UNLOAD is done */
    long after = s_rss_kib(d.pid);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (a sanitizer's allocator keeps freed memory in quarantine) */
    ck_assert_msg(before - after >= 100 * 1024, "RSS %ld KiB before UNLOAD, %ld KiB after", before, after);
#else
    (void)before;
    (void)after;
#endif
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_ENOTFOUND);
    gx_result_destroy(&r);

    gx_request_destroy(&rq);
    gx_tensor_destroy(&i);
    gx_client_destroy(&c);
    s_stop(&d, &dir);
}
END_TEST

Suite *modelctl_suite(void)
{
    Suite *s = suite_create("modelctl");
    TCase *tc = tcase_create("modelctl");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_unload_under_queued_jobs);
    tcase_add_test(tc, test_unload_returns_memory);
    suite_add_tcase(s, tc);
    return s;
}
